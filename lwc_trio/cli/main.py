"""The `lwc` entry point: as little as possible before the command runs.

It imports nothing heavy (argparse, typing, the commands) before `lwc serve` has
made SIGINT/SIGTERM quiet: a host may stop a server within milliseconds of
starting it. The command tree lives in `cli/parser.py`.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _command_name(argv: Sequence[str]) -> str | None:
    """The subcommand argv names (skipping global options and --scope's value)."""
    tokens = iter(argv)
    for token in tokens:
        if token == "--scope":
            next(tokens, None)
        elif not token.startswith("-"):
            return token
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run `lwc`; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_name(argv)
    previous = _quiet_signals() if command == "serve" else {}
    try:
        # Deferred for start-up speed: argparse and the commands load after the signals.
        from lwc_trio.cli.parser import run

        return run(argv, command)
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

    def leave(_signum: int, _frame: Any) -> None:
        os._exit(0)

    try:
        return {signum: signal.signal(signum, leave) for signum in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread (an in-process caller): leave signals alone
        return {}


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
