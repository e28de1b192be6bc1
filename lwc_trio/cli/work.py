"""LWC's `work` verbs: `lwc work watch|status ID` and `lwc work list`.

lwc does at once, inside the command, what LWC 0.16 runs as background Work, and keeps a
record of it beside the store (`cli/work_records.py`): these verbs read the records, so an
LWC user's script that watches its work runs through unchanged.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lwc_trio.cli.options import common_options, examples
from lwc_trio.cli.output import did_you_mean, fail
from lwc_trio.cli.wiki.console import out
from lwc_trio.cli.wiki.stores import each_store
from lwc_trio.cli.work_records import WORK_DIR, WORK_ID, load_record, records


def _stores(args: argparse.Namespace) -> list[tuple[str, Path]]:
    return list(each_store(args))


def _find(args: argparse.Namespace) -> dict[str, Any]:
    known: list[str] = []
    for _scope, store in _stores(args):
        directory = store.parent / WORK_DIR
        if WORK_ID.match(args.id) and (directory / f"{args.id}.json").is_file():
            return load_record(directory / f"{args.id}.json")
        known += [p.stem for p in records(directory)]
    raise fail("work_not_found", f"no work {args.id!r}{did_you_mean(args.id, known)}")


def _human(work: dict[str, Any]) -> str:
    return f"{work['id']}: {work['state']} ({work['completed']} of {work['total']} done)"


def _show(args: argparse.Namespace) -> int:
    return out(args, {"work": _find(args)}, lambda r: _human(r["work"]))


def _list(args: argparse.Namespace) -> int:
    works = [
        load_record(p) for _scope, store in _stores(args) for p in records(store.parent / WORK_DIR)
    ]
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
