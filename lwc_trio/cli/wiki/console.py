"""What every Wiki command shares at the terminal: error mapping, output and a progress bar."""

from __future__ import annotations

import argparse
import functools
import sqlite3
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lwc_trio.cli.output import emit, fail, notice, wants_json
from lwc_trio.exceptions import WikiError
from lwc_trio.memory.exchange.walk import Skipped
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.storage.store import WRITE_BUSY_TIMEOUT_S

Handler = Callable[[argparse.Namespace], int]


def handles_errors(handler: Handler) -> Handler:
    """Turn memory-plane errors into the CLI's `{"error"}` + exit 1."""

    @functools.wraps(handler)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except WikiError as exc:
            raise fail(exc.code, exc.message) from None
        except sqlite3.Error as exc:
            raise fail("store_corrupt", f"the store could not be used ({exc})") from None

    return wrapper


def out(args: argparse.Namespace, obj: Any, human: Callable[[Any], str]) -> int:
    """Print `obj` as JSON or as `human(obj)` (what `--json` and the terminal ask for); exit 0."""
    emit(obj, as_json=wants_json(args.json), human=human)
    return 0


def skipped_json(skipped: Iterable[Skipped] | None) -> list[dict[str, str]]:
    """A folder import's `skipped` list for its result, sorted by path."""
    return [item.to_json() for item in sorted(skipped or (), key=lambda item: item.path)]


def skipped_lines(result: dict[str, Any]) -> list[str]:
    """The human lines for a folder import's `skipped` list (empty when nothing was skipped)."""
    skipped = result.get("skipped") or []
    if not skipped:
        return []
    lines = [f"Skipped {len(skipped)} (use --strict to refuse instead):"]
    return lines + [f"  {item['path']}: {item['reason']}" for item in skipped]


def page_counts(counts: dict[str, Any]) -> str:
    """How a write's Pages went, as every import command prints it."""
    return (
        f"{counts['created']} created, {counts['updated']} updated, {counts['unchanged']} unchanged"
    )


def open_wiki(path: Path) -> Wiki:
    """The store opened for a write that says so on a terminal when it waits for another
    writer's lock (after `writer.WAIT_NOTICE_S`)."""
    return Wiki(
        path,
        on_wait=lambda: notice(
            f"Waiting for another lwc command to finish writing {path} "
            f"(up to {WRITE_BUSY_TIMEOUT_S:g} s)…"
        ),
    )


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal (`with` ends it)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.active = sys.stderr.isatty()
        self.drawn = False
        self.done = 0
        """What the last call reported done (a bulk write reports after each commit)."""
        self.total = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if not self.active or total <= 0:
            return
        width = 30
        filled = width * done // total
        bar = "#" * filled + "." * (width - filled)
        sys.stderr.write(f"\r{self.label} [{bar}] {done}/{total}")
        sys.stderr.flush()
        self.drawn = True

    def finish(self) -> None:
        """End the bar's line."""
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()
