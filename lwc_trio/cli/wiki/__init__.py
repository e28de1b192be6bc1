"""Wiki commands: init, page, source, search, config, graph, repair, export/import (SPEC §7).

Every write goes through `lwc_trio.memory.writer` (validated, one transaction); refusals print
`{"error": {"code", "message"}}` on stderr, exit 1, and leave the store unchanged.

One module per group of commands; this one builds their parsers.
"""

from __future__ import annotations

import argparse
from typing import Any

from lwc_trio.cli.wiki.admin import (
    GRAPH_ENABLED,
    config_set,
    graph_build,
    graph_status,
    init_store,
    repair_store,
)
from lwc_trio.cli.wiki.pages import page_import, page_list, page_put, page_remove, page_show
from lwc_trio.cli.wiki.sources import search_stores, source_add, source_show
from lwc_trio.cli.wiki.transfer import export_store, import_store
from lwc_trio.memory.writer import IMPORT_BATCH

STRICT_HELP = (
    "for a DIR: refuse the whole import when a file is not UTF-8 text (default: skip and list it)"
)

__all__ = ["register"]

DEFAULT_SHOW_CHARS = 20_000


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the Wiki subcommands to the `lwc` parser."""
    init = sub.add_parser("init", parents=[common], help="create a Wiki store")
    init.add_argument("--no-git-exclude", action="store_true", help="leave .git/info/exclude alone")
    init.set_defaults(func=init_store)

    page = sub.add_parser("page", parents=[common], help="write and read Wiki pages")
    pages = page.add_subparsers(dest="page_command", metavar="ACTION")
    pages.required = True
    put = pages.add_parser("put", parents=[common], help="create or replace a page")
    put.add_argument("slug")
    put.add_argument("--title", required=True)
    put.add_argument("--kind", default="concept")
    put.add_argument("--summary")
    put.add_argument("--file", required=True, help="Markdown body file, or - for stdin")
    put.add_argument("--source", action="append", metavar="ID", help="cited source id")
    put.add_argument(
        "--provenance", action="append", metavar="P",
        help="user-provided, agent-observed or hypothesis (source-grounded is implied by --source)",
    )  # fmt: skip
    put.set_defaults(func=page_put)
    show = pages.add_parser("show", parents=[common], help="print one page")
    show.add_argument("slug")
    show.set_defaults(func=page_show)
    listing = pages.add_parser("list", parents=[common], help="list pages")
    listing.set_defaults(func=page_list)
    remove = pages.add_parser("remove", parents=[common], help="delete a page")
    remove.add_argument("slug")
    remove.set_defaults(func=page_remove)
    bulk = pages.add_parser("import", parents=[common], help="import pages from DIR or FILE.jsonl")
    bulk.add_argument("path", metavar="DIR|FILE.jsonl")
    bulk.add_argument("--batch", type=_positive, default=IMPORT_BATCH, help=argparse.SUPPRESS)
    bulk.add_argument("--strict", action="store_true", help=STRICT_HELP)
    bulk.set_defaults(func=page_import)

    source = sub.add_parser("source", parents=[common], help="store and read source snapshots")
    sources = source.add_subparsers(dest="source_command", metavar="ACTION")
    sources.required = True
    add = sources.add_parser("add", parents=[common], help="snapshot a file or directory")
    add.add_argument("path", metavar="FILE|DIR")
    add.add_argument("--title")
    add.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add.set_defaults(func=source_add)
    peek = sources.add_parser("show", parents=[common], help="print a window of a source")
    peek.add_argument("id")
    peek.add_argument("--offset-chars", type=int, default=0)
    peek.add_argument("--max-chars", type=int, default=DEFAULT_SHOW_CHARS)
    peek.set_defaults(func=source_show)

    search = sub.add_parser("search", parents=[common], help="search the Wiki")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=8)
    search.set_defaults(func=search_stores)

    config = sub.add_parser("config", parents=[common], help="store settings")
    configs = config.add_subparsers(dest="config_command", metavar="ACTION")
    configs.required = True
    setter = configs.add_parser("set", parents=[common], help="change a setting")
    setter.add_argument(
        "--graph", choices=(*GRAPH_ENABLED, "disabled"),
        help="enabled or disabled (LWC's engine names grafeo and surrealdb mean enabled)",
    )  # fmt: skip
    setter.set_defaults(func=config_set)

    graph = sub.add_parser("graph", parents=[common], help="the document graph")
    graphs = graph.add_subparsers(dest="graph_command", metavar="ACTION")
    graphs.required = True
    build = graphs.add_parser("build", parents=[common], help="build the graph projection")
    build.set_defaults(func=graph_build)
    state = graphs.add_parser("status", parents=[common], help="show graph readiness")
    state.set_defaults(func=graph_status)

    repair = sub.add_parser("repair", parents=[common], help="recover and re-index a store")
    repair.set_defaults(func=repair_store)

    export = sub.add_parser("export", parents=[common], help="write the Wiki as Markdown files")
    export.add_argument("dir", metavar="DIR")
    export.set_defaults(func=export_store)
    restore = sub.add_parser(
        "import", parents=[common], help="load a Wiki written by export, or an LWC 0.16 store"
    )
    restore.add_argument("dir", metavar="DIR", nargs="?")
    restore.add_argument(
        "--from-lwc", metavar="PATH",
        help="an LWC 0.16 store (its wiki.db, .lwc folder or project folder), read unmodified",
    )  # fmt: skip
    restore.set_defaults(func=import_store)
