"""LWC's `work` verbs: `lwc work watch|status ID` and `lwc work list`.

LWC 0.16 runs its long commands (enabling a graph engine, reindexing) as background Work and
prints a `work` object whose id a script then watches. lwc does that work at once, inside
the command, as all its writes are; it still prints the `work` object, and keeps a small
record of it beside the store (`.lwc/work/ID.json`, the newest `KEEP` only) so that
`lwc work watch ID` reports it done — an LWC user's script runs through unchanged.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

from lwc_trio.cli.output import did_you_mean, fail
from lwc_trio.cli.parser import common_options, examples

WORK_DIR = "work"
KEEP = 32
"""Work records kept per store; older ones are removed when a new one is written."""
_ID = re.compile(r"^[a-z-]+-[0-9a-f]{12}$")


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


def _records(directory: Path) -> list[Path]:
    """The work records in `directory`, newest first."""
    try:
        found = [p for p in directory.iterdir() if p.suffix == ".json" and _ID.match(p.stem)]
    except OSError:
        return []
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True)


def _prune(directory: Path) -> None:
    for old in _records(directory)[KEEP:]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()


def _load(path: Path) -> dict[str, Any]:
    if path.is_symlink() or path.stat().st_size > 64 * 1024:
        raise fail("work_invalid", f"{path} is not a work record")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise fail("work_invalid", f"{path} is not a work record") from None
    if not isinstance(value, dict):
        raise fail("work_invalid", f"{path} is not a work record")
    return value


def _stores(args: argparse.Namespace) -> list[tuple[str, Path]]:
    from lwc_trio.cli.wiki.stores import each_store

    return list(each_store(args))


def _find(args: argparse.Namespace) -> dict[str, Any]:
    known: list[str] = []
    for _scope, store in _stores(args):
        directory = store.parent / WORK_DIR
        if _ID.match(args.id) and (directory / f"{args.id}.json").is_file():
            return _load(directory / f"{args.id}.json")
        known += [p.stem for p in _records(directory)]
    raise fail("work_not_found", f"no work {args.id!r}{did_you_mean(args.id, known)}")


def _human(work: dict[str, Any]) -> str:
    return f"{work['id']}: {work['state']} ({work['completed']} of {work['total']} done)"


def _show(args: argparse.Namespace) -> int:
    from lwc_trio.cli.wiki.console import out

    return out(args, {"work": _find(args)}, lambda r: _human(r["work"]))


def _list(args: argparse.Namespace) -> int:
    from lwc_trio.cli.wiki.console import out

    works = [_load(p) for _scope, store in _stores(args) for p in _records(store.parent / WORK_DIR)]
    works.sort(key=lambda w: -int(w.get("updated_at_unix_ms", 0)))
    return out(args, {"works": works}, lambda r: "\n".join(map(_human, r["works"])) or "(no work)")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `work` to the command tree."""
    work = sub.add_parser(
        "work", parents=[common], help="LWC's work records (lwc's work is done at once)",
        epilog=examples("lwc work watch graph-project-0123456789ab", "lwc work list"),
    )  # fmt: skip
    actions = work.add_subparsers(dest="work_command", metavar="ACTION")
    actions.required = True
    reads_all = common_options("all")
    for name, text in (
        ("watch", "wait for work to finish and print it (it already has)"),
        ("status", "print the state of work"),
    ):
        verb = actions.add_parser(
            name, parents=[reads_all], help=text,
            epilog=examples(f"lwc work {name} graph-project-0123456789ab"),
        )  # fmt: skip
        verb.add_argument("id", metavar="ID", help="the work id a command printed (work.id)")
        verb.set_defaults(func=_show, default_scope="all")
    listing = actions.add_parser(
        "list", parents=[reads_all], help="list recent work, newest first",
        epilog=examples("lwc work list"),
    )  # fmt: skip
    listing.set_defaults(func=_list, default_scope="all")
