"""`lwc export` and `lwc import` (an lwc export, or an LWC 0.16 store with `--from-lwc`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from lwc_trio.cli.output import fail
from lwc_trio.cli.wiki.console import Progress, handles_errors, open_wiki, out, page_counts
from lwc_trio.cli.wiki.stores import create_for_scope, find_store, require_store, write_scope
from lwc_trio.exceptions import UsageError
from lwc_trio.memory.exchange.export import export_wiki, import_wiki
from lwc_trio.memory.exchange.lwc_files import remove_quietly, swap_in
from lwc_trio.memory.exchange.lwc_import import (
    LwcWiki,
    lwc_store_version,
    read_lwc_store,
    resolve_lwc_path,
)
from lwc_trio.memory.index.reads import Imported
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.storage.store import create_store


@handles_errors
def export_store(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    with Wiki(require_store(scope)) as wiki, Progress("Exporting") as progress:
        counts = export_wiki(wiki, Path(args.dir), progress)
    result = {"scope": scope, "dir": str(Path(args.dir).resolve()), **counts}
    return out(args, result, lambda r: f"Exported {r['pages']} pages, {r['sources']} sources")


@handles_errors
def import_store(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    if args.from_lwc is not None:
        if args.dir is not None:
            raise UsageError(
                "invalid_usage", "give either DIR (an lwc export) or --from-lwc PATH, not both"
            )
        return _import_lwc(args, scope, Path(args.from_lwc))
    if args.dir is None:
        raise UsageError(
            "invalid_usage",
            "lwc import needs DIR (an lwc export) or --from-lwc PATH (an LWC store)",
        )
    args.interrupt_note = lambda: "stopped; run the same command again to finish the import"
    with open_wiki(require_store(scope)) as wiki, Progress("Importing") as progress:
        counts = import_wiki(wiki, Path(args.dir), progress)
    result = {"scope": scope, **counts}
    return out(
        args, result, lambda r: f"Imported {r['sources']} new sources; pages: {page_counts(r)}"
    )


def _import_lwc(args: argparse.Namespace, scope: str, given: Path) -> int:
    """`lwc import --from-lwc PATH`: into the Wiki this directory writes to (docs/lwc-compat.md).

    That is the nearest lwc_trio store for `--scope project` (or the global one); with none, one
    is created as `lwc init` would. When that place holds the LWC store itself (LWC and lwc both
    use `.lwc/wiki.db`), the new store is built beside it and swapped in, LWC's files kept.
    """
    source = resolve_lwc_path(given)
    # One transaction (and, for a store converted in place, a swap after it): until it
    # commits, a Ctrl-C leaves both stores as they were.
    args.interrupt_note = lambda: "nothing was written, and the LWC store is unchanged"
    with Progress("Reading LWC store") as progress:
        lwc = read_lwc_store(source, progress)
    ref = find_store(scope)
    if ref is not None and ref.problem is not None:
        raise fail(ref.problem.code, ref.problem.message)
    backup: Path | None = None
    if ref is not None and lwc_store_version(ref.path) is not None:
        if not os.path.samefile(ref.path, source):
            raise fail(
                "unsupported_store_version",
                f"the {scope} Wiki {ref.path} is itself an LWC store; convert it first: "
                f"`lwc import --from-lwc {ref.path}`",
            )
        target = ref.path
        building = target.with_name(f".{target.name}.import-{os.getpid()}")
        remove_quietly(building)
        create_store(building)
        try:
            counts = _write_lwc(building, lwc)
            backup = swap_in(target, building)
        finally:
            remove_quietly(building)
    else:
        target = ref.path if ref is not None else create_for_scope(scope, git_exclude=True)[0]
        counts = _write_lwc(target, lwc)
    args.interrupt_note = lambda: f"the import was written to {target}"
    result = {
        "scope": scope,
        "path": str(target),
        "from": str(source),
        "lwcFormat": lwc.user_version,
        **counts,
        "duplicateSources": lwc.duplicate_sources,
        "citations": lwc.citations,
        "provenance": lwc.provenance,
        "links": lwc.links,
        "linksToMissingPages": lwc.links_to_missing_pages,
        "skipped": lwc.skipped,
        "notImported": lwc.not_imported,
        "lwcStoreKeptAt": str(backup) if backup is not None else None,
    }
    return out(args, result, _human_lwc_import)


def _write_lwc(path: Path, lwc: LwcWiki) -> Imported:
    with open_wiki(path) as wiki, Progress("Importing") as progress:
        return wiki.put_everything(lwc.sources, lwc.pages, progress=progress)


def _human_lwc_import(r: dict[str, Any]) -> str:
    pages, sources = r["pages"], r["sources"]
    lines = [
        f"Imported {r['from']} (LWC format {r['lwcFormat']}) into {r['path']}",
        f"  pages: {page_counts(pages)}",
        f"  sources: {sources['created']} created, {sources['existing']} already stored",
        f"  citations {r['citations']}, provenance {r['provenance']}, links {r['links']}",
    ]
    if r["lwcStoreKeptAt"]:
        lines.append(f"  LWC's own files were moved, unchanged, to {r['lwcStoreKeptAt']}")
    if r["notImported"]:
        rest = ", ".join(f"{table} {n}" for table, n in sorted(r["notImported"].items()))
        lines.append(f"  no lwc equivalent (not imported): {rest}")
    return "\n".join(lines)
