"""The `lwc` command tree and the run of one command (argparse lives here).

Kept apart from `cli/main.py` so that the entry point itself imports almost nothing:
`lwc serve` installs its start-up signal handling before paying for argparse.

The parser is the single source of truth for `--help`, `lwc completion` and the "did you
mean" suggestions for unknown commands: each reads the tree built here. Each command module
builds its own parsers (`register`) from the shared pieces in `cli/options.py`; this module
only imports them, never the other way round.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import NoReturn

from lwc_trio import __version__
from lwc_trio.cli import serve
from lwc_trio.cli.options import CommandParser, common_options, effective_scope, examples
from lwc_trio.cli.output import did_you_mean, print_error, speaks
from lwc_trio.exceptions import CliError, UsageError

_LONG_OPTION = re.compile(r"--[a-z][a-z0-9-]*")


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


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `lwc` command tree (only `serve` when that is the command being run).

    `lwc serve` is started by agent hosts for every session: it skips importing
    the Wiki, CodeGraph and installer commands it will never run.
    """
    common = common_options()
    parser = CommandParser(
        prog="lwc",
        parents=[common],
        description="LWC memory-and-code MCP server: a Wiki for coding agents, and its CLI.",
        epilog=examples("lwc init", "lwc search login"),
    )
    parser.add_argument(
        "--version", action="version", version=f"lwc {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    sub.required = True
    serve.register(sub, common)
    if command != "serve":
        # Deferred for start-up speed: `lwc serve`, which agent hosts start for every
        # session, never pays for the Wiki, CodeGraph and installer commands.
        from lwc_trio.cli import agent, cg, completion, explore, wiki, work

        for module in (wiki, explore, cg, agent, work):
            module.register(sub, common)
        completion.register(sub, common, parser)
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
