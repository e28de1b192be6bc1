"""LWC's work records: what `lwc work watch|status|list` read, kept beside each store.

LWC 0.16 runs its long commands (enabling a graph engine, reindexing) as background Work and
prints a `work` object whose id a script then watches. lwc does that work at once, inside
the command, as all its writes are; it still prints the `work` object, and keeps a small
record of it beside the store (`.lwc/work/ID.json`, the newest `KEEP` only) so that
`lwc work watch ID` reports it done (`cli/work.py`: the verbs).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

from lwc_trio.cli.output import fail

__all__ = ["KEEP", "WORK_DIR", "WORK_ID", "load_record", "record_work", "records"]

WORK_DIR = "work"
KEEP = 32
"""Work records kept per store; older ones are removed when a new one is written."""
WORK_ID = re.compile(r"^[a-z-]+-[0-9a-f]{12}$")


def record_work(
    store: Path, *, kind: str, scope: str, total: int, result: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write the record of work that just finished and return LWC's `work` object for it."""
    now_ms = int(time.time() * 1000)
    work: dict[str, Any] = {
        "id": f"{kind}-{uuid.uuid4().hex[:12]}",
        "kind": kind,
        "scope": scope,
        "database": str(store),
        "state": "succeeded",
        "phase": "done",
        "completed": total,
        "total": total,
        "percent": 100.0,
        "sequence": 1,
        "started_at_unix_ms": now_ms,
        "updated_at_unix_ms": now_ms,
        "cancel_requested": False,
        "message": f"{kind} succeeded",
    }
    if result is not None:
        work["result"] = result
    directory = store.parent / WORK_DIR
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    if directory.is_symlink() or not directory.is_dir():
        raise fail("work_invalid", f"{directory} is not a real directory")
    final = directory / f"{work['id']}.json"
    temporary = directory / f".{work['id']}.tmp"
    temporary.write_text(json.dumps(work, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, final)
    _prune(directory)
    return work


def records(directory: Path) -> list[Path]:
    """The work records in `directory`, newest first."""
    try:
        found = [p for p in directory.iterdir() if p.suffix == ".json" and WORK_ID.match(p.stem)]
    except OSError:
        return []
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True)


def _prune(directory: Path) -> None:
    for old in records(directory)[KEEP:]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()


def load_record(path: Path) -> dict[str, Any]:
    """The work record at `path`. Raises the CLI's `work_invalid` for anything else."""
    if path.is_symlink() or path.stat().st_size > 64 * 1024:
        raise fail("work_invalid", f"{path} is not a work record")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise fail("work_invalid", f"{path} is not a work record") from None
    if not isinstance(value, dict):
        raise fail("work_invalid", f"{path} is not a work record")
    return value
