"""The `lwc` command tree and the run of one command (argparse lives here).

Kept apart from `cli/main.py` so that the entry point itself imports almost nothing:
`lwc serve` installs its start-up signal handling before paying for argparse.

The parser is the single source of truth for `--help`, `lwc completion` and the "did you
mean" suggestions for unknown commands: each reads the tree built here.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from lwc_trio import __version__
from lwc_trio.cli.output import did_you_mean, print_error, speaks
from lwc_trio.exceptions import CliError, UsageError

SCOPES = ("project", "global", "all")
DEFAULT_SCOPE = "project"

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)'")
_LONG_OPTION = re.compile(r"--[a-z][a-z0-9-]*")


class _Parser(argparse.ArgumentParser):
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


def _command_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The (sub)parser `argv` reaches: the deepest command named in it."""
    for word in argv:
        commands = getattr(parser, "commands", None)
        choices = getattr(commands, "choices", None) or {}
        if word in choices:
            parser = choices[word]
    return parser


def _unrecognized(parser: argparse.ArgumentParser, argv: list[str], extras: list[str]) -> NoReturn:
    """argparse's "unrecognized arguments", raised by the command they were given to (its
    usage is the one shown), with the closest of that command's options for the first
    mistyped option."""
    command = _command_parser(parser, argv)
    message = f"unrecognized arguments: {' '.join(extras)}"
    option = next((word for word in extras if word.startswith("--")), None)
    if option is not None:
        # The options its usage line shows (argparse has no public list of them).
        known = set(_LONG_OPTION.findall(command.format_usage()))
        message += did_you_mean(option.split("=", 1)[0], known)
    command.error(message)


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
    common = _Parser(add_help=False)
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


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `lwc` command tree (only `serve` when that is the command being run).

    `lwc serve` is started by agent hosts for every session: it skips importing
    the Wiki, CodeGraph and installer commands it will never run.
    """
    common = common_options()
    parser = _Parser(
        prog="lwc",
        parents=[common],
        description="LWC memory-and-code MCP server: a Wiki for coding agents, and its CLI.",
        epilog=examples("lwc init", "lwc search login"),
    )
    parser.add_argument(
        "--version", action="version", version=f"lwc {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    from lwc_trio.cli import serve

    serve.register(sub, common)
    if command != "serve":
        from lwc_trio.cli import agent, cg, completion, explore, wiki, work

        for module in (wiki, explore, cg, agent, work, completion):
            module.register(sub, common)
    return parser


InterruptNote = Callable[[], str]


def run(argv: list[str], command: str | None) -> int:
    """Parse `argv` and run its command; returns the exit code (errors printed on stderr)."""
    explicit_json = "--json" in argv
    parser = build_parser(command)
    if command is None and not {"-h", "--help", "--version"} & set(argv):
        # Bare `lwc`: what it can do, not a JSON error.
        sys.stderr.write(parser.format_help())
        return 2
    args: argparse.Namespace | None = None
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:
            _unrecognized(parser, argv, extras)
        args.scope = effective_scope(args)
        args.json = getattr(args, "json", False)
        return int(args.func(args))
    except UsageError as exc:
        usage = getattr(exc, "usage", None)
        if usage and speaks(explicit_json):
            sys.stderr.write(usage)
        print_error(exc.code, exc.message, explicit_json=explicit_json)
        return 2
    except CliError as exc:
        print_error(exc.code, exc.message, explicit_json=explicit_json)
        return exc.exit_code
    except KeyboardInterrupt:
        note: InterruptNote | None = getattr(args, "interrupt_note", None)
        message = note() if note is not None else "interrupted"
        if speaks(explicit_json):
            sys.stderr.write("\n")
        print_error("interrupted", message, explicit_json=explicit_json)
        return 130
    except BrokenPipeError:
        # A reader that went away (`lwc page list | head`) is not an error.
        sys.stderr.close()
        return 0
