"""`lwc init`, `lwc config set|show`, `lwc graph build|status` and `lwc repair`: the store."""

from __future__ import annotations

import argparse
from typing import Any

from lwc_trio.cli.wiki.console import Progress, handles_errors, open_wiki, out
from lwc_trio.cli.wiki.stores import (
    create_for_scope,
    each_store,
    refuse_lwc_store,
    require_store,
    write_scope,
)
from lwc_trio.cli.work_records import record_work
from lwc_trio.exceptions import UsageError
from lwc_trio.memory.index.writer import Wiki

# LWC 0.16 names its graph engines; lwc has one (SQLite), so either name simply enables it.
GRAPH_ENABLED = ("enabled", "grafeo", "surrealdb")


@handles_errors
def init_store(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    path, created, excluded = create_for_scope(
        scope, git_exclude=not args.no_git_exclude, nested=args.nested
    )
    refuse_lwc_store(path, scope)
    with Wiki(path) as wiki:
        status = wiki.status()
    result = {"scope": scope, "created": created, **status, "gitExclude": excluded}
    return out(
        args,
        result,
        lambda r: f"{'Created' if r['created'] else 'Already initialized:'} {r['path']}",
    )


@handles_errors
def config_set(args: argparse.Namespace) -> int:
    """`--graph enabled` (or LWC's engine names) also builds the graph, as LWC's graph Work
    does, and prints LWC's `work` object for it."""
    scope = write_scope(args)
    if args.graph is None:
        raise UsageError("invalid_usage", "nothing to set; use --graph enabled|disabled")
    enable = args.graph in GRAPH_ENABLED
    store = require_store(scope)
    with open_wiki(store) as wiki:
        changed = wiki.set_graph_enabled(enable)
        result: dict[str, Any] = {"scope": scope, "changed": changed}
        if enable:
            with Progress("Building graph") as progress:
                built = wiki.build_graph(progress)
            status = wiki.status()
            result["work"] = record_work(
                store, kind="graph-project", scope=scope, total=status["pages"],
                result={"builtRevision": built["builtRevision"], "related": built["related"]},
            )  # fmt: skip
        else:
            status = wiki.status()
    result.update(status)
    result["graph"] = {**status["graph"], "setting": args.graph}
    word = "enabled and built" if enable else "disabled"
    return out(args, result, lambda r: f"Document graph {word}")


@handles_errors
def config_show(args: argparse.Namespace) -> int:
    stores = []
    for scope, path in each_store(args):
        with Wiki(path) as wiki:
            status = wiki.status()
        settings = {"graph": "enabled" if status["graph"]["enabled"] else "disabled"}
        stores.append({"scope": scope, "path": status["path"], "settings": settings, **status})
    return out(
        args,
        {"stores": stores},
        lambda r: "\n".join(
            f"{s['scope']} ({s['path']}): graph {s['settings']['graph']} "
            f"({s['graph']['status']}); {s['pages']} pages, {s['sources']} sources"
            for s in r["stores"]
        ),
    )


@handles_errors
def graph_build(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    store = require_store(scope)
    with open_wiki(store) as wiki, Progress("Building graph") as progress:
        built = wiki.build_graph(progress)
    result = {"scope": scope, **built}
    result["work"] = record_work(store, kind="graph-project", scope=scope, total=built["pages"])
    return out(args, result, lambda r: f"Graph ready at content revision {r['builtRevision']}")


@handles_errors
def graph_status(args: argparse.Namespace) -> int:
    stores = []
    for scope, path in each_store(args):
        with Wiki(path) as wiki:
            stores.append({"scope": scope, **wiki.status()})
    return out(
        args,
        {"stores": stores},
        lambda r: "\n".join(f"{s['scope']}: graph {s['graph']['status']}" for s in r["stores"]),
    )


@handles_errors
def repair_store(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    path = require_store(scope)
    journal = path.with_name(path.name + "-journal")
    had_journal = journal.exists() and journal.stat().st_size > 0
    with open_wiki(path) as wiki:  # opening rolls a leftover hot journal back
        repaired = wiki.repair()
    result = {"scope": scope, "journalRolledBack": had_journal, **repaired}
    result["work"] = record_work(
        path, kind="maintenance-reindex", scope=scope, total=repaired["reindexed"]
    )
    return out(args, result, lambda r: f"Store OK; {r['reindexed']} documents reindexed")
