"""The `lwc` command tree and the run of one command (argparse lives here).

Kept apart from `cli/main.py` so that the entry point itself imports almost nothing:
`lwc serve` installs its start-up signal handling before paying for argparse.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from lwc_trio import __version__
from lwc_trio.cli.output import print_error
from lwc_trio.exceptions import CliError, UsageError

SCOPES = ("project", "global", "all")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one JSON line and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError("invalid_usage", f"{self.prog}: {message}")


def _common() -> argparse.ArgumentParser:
    # Accepted before or after the subcommand; SUPPRESS keeps a value given
    # before the subcommand from being reset by the subparser's default.
    common = _Parser(add_help=False)
    common.add_argument(
        "--scope",
        choices=SCOPES,
        default=argparse.SUPPRESS,
        type=str.lower,
        help="which Wiki store a command acts on (default: project)",
    )
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="machine output on stdout (the default when stdout is not a terminal)",
    )
    return common


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `lwc` command tree (only `serve` when that is the command being run).

    `lwc serve` is started by agent hosts for every session: it skips importing
    the Wiki, CodeGraph and installer commands it will never run.
    """
    common = _common()
    parser = _Parser(prog="lwc", parents=[common], description="LWC memory-and-code MCP server")
    parser.add_argument("--version", action="version", version=f"lwc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    from lwc_trio.cli import serve

    serve.register(sub, common)
    if command != "serve":
        from lwc_trio.cli import agent, cg, explore, wiki

        for module in (wiki, explore, cg, agent):
            module.register(sub, common)
    return parser


def run(argv: list[str], command: str | None) -> int:
    """Parse `argv` and run its command; returns the exit code (errors printed as JSON)."""
    parser = build_parser(command)
    try:
        args = parser.parse_args(argv)
        args.scope = getattr(args, "scope", getattr(args, "default_scope", "project"))
        args.json = getattr(args, "json", False)
        return int(args.func(args))
    except UsageError as exc:
        print_error(exc.code, exc.message)
        return 2
    except CliError as exc:
        print_error(exc.code, exc.message)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # A reader that went away (`lwc page list | head`) is not an error.
        sys.stderr.close()
        return 0
