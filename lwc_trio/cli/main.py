"""The `lwc` entry point: global options, subcommand dispatch, error printing."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from lwc_trio import __version__
from lwc_trio.cli.output import print_error
from lwc_trio.exceptions import CliError, UsageError

SCOPES = ("project", "global", "all")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one JSON line and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


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


def _command_name(argv: Sequence[str]) -> str | None:
    """The subcommand argv names (skipping global options and --scope's value)."""
    tokens = iter(argv)
    for token in tokens:
        if token == "--scope":
            next(tokens, None)
        elif not token.startswith("-"):
            return token
    return None


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


def main(argv: Sequence[str] | None = None) -> int:
    """Run `lwc`; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_name(argv)
    previous = _quiet_signals() if command == "serve" else {}
    try:
        return _run(argv, command)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _quiet_signals() -> dict[int, Any]:
    """Until the server handles signals itself, SIGINT/SIGTERM end `lwc serve` with 0.

    A host may stop a server it has only just started (a session closed at once). Nothing
    has been read yet, so nothing is owed an answer, and the CodeGraph child starts
    lazily, so nothing needs reaping: leaving at once, quietly, is the clean end SPEC §1.1
    asks for (Python's defaults would die by the signal, or print a KeyboardInterrupt
    traceback). The server's own receiver replaces these once it is up. Returns the
    handlers to restore.
    """
    if threading.current_thread() is not threading.main_thread():
        return {}

    def leave(_signum: int, _frame: Any) -> None:
        os._exit(0)

    return {signum: signal.signal(signum, leave) for signum in (signal.SIGINT, signal.SIGTERM)}


def _run(argv: list[str], command: str | None) -> int:
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


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
