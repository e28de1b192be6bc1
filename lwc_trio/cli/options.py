"""What every command's parser shares: the parser class, `--scope`/`--json`, help texts.

A leaf of `cli/`: each command module (`serve`, `explore`, the Wiki commands, ...) builds its
own parsers from these and `cli/parser.py` puts them in one tree, so no command imports the
tree and the tree imports the commands.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, NoReturn

from lwc_trio.cli.output import did_you_mean
from lwc_trio.exceptions import UsageError

__all__ = [
    "DEFAULT_SCOPE",
    "SCOPES",
    "Bounded",
    "CommandParser",
    "common_options",
    "effective_scope",
    "examples",
]

SCOPES = ("project", "global", "all")
DEFAULT_SCOPE = "project"

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)'")


class CommandParser(argparse.ArgumentParser):
    """argparse that reports usage errors through `run` (exit 2) and suggests commands."""

    commands: argparse.Action | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def add_subparsers(self, **kwargs: Any) -> Any:
        action = super().add_subparsers(**kwargs)
        self.commands = action
        return action

    def error(self, message: str) -> NoReturn:
        found = _INVALID_CHOICE.search(message)
        if (
            found is not None
            and self.commands is not None
            and message.startswith(f"argument {self.commands.metavar}")
        ):
            word = found.group(1)
            kind = "command" if self.prog == "lwc" else "action"
            names = list(self.commands.choices or ())
            message = f"unknown {kind} {word!r}{did_you_mean(word, names)}"
        error = UsageError("invalid_usage", f"{self.prog}: {message}")
        error.usage = self.format_usage()  # type: ignore[attr-defined]
        error.prog = self.prog  # type: ignore[attr-defined]
        raise error


def examples(*lines: str) -> str:
    """A command's epilog: its examples, one `$ lwc ...` per line (shown at the end of --help)."""
    return "Examples:\n" + "\n".join(f"  {line}" for line in lines)


class Bounded:
    """An integer argument type with an inclusive range, which its help text names.

    With `enforce=False` the bound is only described (the tool checks it and answers with
    its own `invalid_arguments`, as `lwc explore` must).
    """

    def __init__(self, low: int, high: int | None = None, *, enforce: bool = True) -> None:
        self.low, self.high, self.enforce = low, high, enforce
        self.__name__ = "integer"  # argparse names the type in its "invalid ..." message

    def describe(self) -> str:
        """The bound as the help text shows it: `1–50` or `at least 0`."""
        return f"{self.low}–{self.high}" if self.high is not None else f"at least {self.low}"

    def __call__(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if self.enforce and (value < self.low or (self.high is not None and value > self.high)):
            raise argparse.ArgumentTypeError(f"must be {self.describe()}, got {value}")
        return value


def common_options(
    scope_default: str = DEFAULT_SCOPE, *, ignored: bool = False
) -> argparse.ArgumentParser:
    """`--scope` and `--json`, accepted before or after the subcommand.

    SUPPRESS keeps a value given before the subcommand from being reset by the
    subparser's default; `effective_scope` supplies the default a command uses, the one
    its help names.
    """
    common = CommandParser(add_help=False)
    scope_help = (
        f"which Wiki store: project, global or all (all only for reads; default: {scope_default})"
    )
    json_help = (
        "machine output: JSON results on stdout, JSON errors on stderr (the default "
        "when stdout is not a terminal)"
    )
    if ignored:  # `lwc serve` accepts both, as every command does; --allow-scope decides
        scope_help = "accepted and ignored (use --allow-scope)"
        json_help = "accepted and ignored (the server speaks JSON-RPC)"
    common.add_argument(
        "--scope", choices=SCOPES, default=argparse.SUPPRESS, type=str.lower, help=scope_help
    )
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=json_help)
    return common


def effective_scope(args: argparse.Namespace) -> str:
    """The scope a command acts on: `--scope`, else the command's own default."""
    return str(getattr(args, "scope", getattr(args, "default_scope", DEFAULT_SCOPE)))
