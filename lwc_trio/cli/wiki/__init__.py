"""Wiki commands: init, page, source, search, config, graph, repair, export/import (SPEC §7).

Every write goes through `lwc_trio.memory.index.writer` (validated, one transaction); refusals print
the error on stderr, exit 1, and leave the store unchanged.

One module per group of commands; this one builds their parsers.
"""

from __future__ import annotations

import argparse
from typing import Any

from lwc_trio.cli.options import Bounded, examples
from lwc_trio.cli.wiki.admin import (
    GRAPH_ENABLED,
    config_set,
    config_show,
    graph_build,
    graph_status,
    init_store,
    repair_store,
)
from lwc_trio.cli.wiki.pages import page_import, page_list, page_put, page_remove, page_show
from lwc_trio.cli.wiki.sources import (
    SEARCH_LIMIT_MAX,
    search_stores,
    source_add,
    source_list,
    source_remove,
    source_show,
)
from lwc_trio.cli.wiki.transfer import export_store, import_store
from lwc_trio.memory.format.limits import KIND_MAX, SUMMARY_MAX, TITLE_MAX
from lwc_trio.memory.format.slugs import MAX_SLUG_BYTES
from lwc_trio.memory.index.writer import IMPORT_BATCH

STRICT_HELP = (
    "for a DIR: refuse the whole import when a file is not UTF-8 text (default: skip and list it)"
)

__all__ = ["register"]

DEFAULT_SHOW_CHARS = 20_000
DEFAULT_SEARCH_LIMIT = 8
DEFAULT_KIND = "concept"


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the Wiki subcommands to the `lwc` parser (in the order `--help` lists them)."""
    for add in (_add_init, _add_page, _add_source, _add_search, _add_settings, _add_transfer):
        add(sub, common)


def _add_init(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `init`."""
    init = sub.add_parser(
        "init", parents=[common], help="create a Wiki store in this directory",
        description="Create .lwc/wiki.db in the working directory (or $HOME/.lwc/wiki.db with "
        "--scope global). Inside another Wiki's tree it refuses: commands there already use "
        "that Wiki.",
        epilog=examples("lwc init", "lwc --scope global init"),
    )  # fmt: skip
    init.add_argument(
        "--no-git-exclude", action="store_true",
        help="leave .git/info/exclude alone (default: add .lwc/ to it in a git repository)",
    )  # fmt: skip
    init.add_argument(
        "--nested", action="store_true",
        help="create a separate Wiki here even inside another Wiki's tree (default: refuse)",
    )  # fmt: skip
    init.set_defaults(func=init_store)


def _add_page(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `page put|show|list|remove|import`."""
    page = sub.add_parser(
        "page", parents=[common], help="write and read Wiki pages",
        epilog=examples("lwc page put auth-flow --title 'Auth flow' --file auth.md",
                        "lwc page show auth-flow"),
    )  # fmt: skip
    pages = page.add_subparsers(dest="page_command", metavar="ACTION")
    pages.required = True
    put = pages.add_parser(
        "put", parents=[common], help="create or replace a page",
        description="Write one Page; links ([[slug]]) are extracted from its Markdown body.",
        epilog=examples("lwc page put auth-flow --title 'Auth flow' --file auth.md",
                        "git log -1 --format=%B | lwc page put last-change --title 'Last change' "
                        "--file -"),
    )  # fmt: skip
    put.add_argument(
        "slug", help=f"the page's name, one path segment: no /, no .., at most {MAX_SLUG_BYTES} "
        "bytes",
    )  # fmt: skip
    put.add_argument(
        "--title",
        required=True,
        help=f"the page's title (required; at most {TITLE_MAX} characters)",
    )
    put.add_argument(
        "--kind", default=DEFAULT_KIND,
        help=f"what the page is (at most {KIND_MAX} characters; default: %(default)s)",
    )  # fmt: skip
    put.add_argument(
        "--summary", help=f"a one-line summary (at most {SUMMARY_MAX} characters; default: none)"
    )
    put.add_argument(
        "--file", required=True, metavar="FILE|-",
        help="the Markdown body: a UTF-8 file, or - for stdin (required; at most 64 MiB)",
    )  # fmt: skip
    put.add_argument(
        "--source", action="append", metavar="ID",
        help="a cited source id, repeatable (default: none)",
    )  # fmt: skip
    put.add_argument(
        "--provenance", action="append", metavar="P",
        help="user-provided, agent-observed or hypothesis, repeatable (default: user-provided, "
        "or source-grounded with --source)",
    )  # fmt: skip
    put.set_defaults(func=page_put)
    show = pages.add_parser(
        "show", parents=[common], help="print one page",
        epilog=examples("lwc page show auth-flow", "lwc page show auth-flow --json"),
    )  # fmt: skip
    show.add_argument("slug", help="the page to print")
    show.set_defaults(func=page_show)
    listing = pages.add_parser(
        "list", parents=[common], help="list pages",
        epilog=examples("lwc page list", "lwc --scope all page list"),
    )  # fmt: skip
    listing.set_defaults(func=page_list)
    remove = pages.add_parser(
        "remove",
        parents=[common],
        help="delete a page",
        epilog=examples("lwc page remove old-notes"),
    )
    remove.add_argument("slug", help="the page to delete")
    remove.set_defaults(func=page_remove)
    bulk = pages.add_parser(
        "import", parents=[common], help="import pages from DIR or FILE.jsonl",
        description="Write many Pages, one transaction per batch: Ctrl-C keeps the batches "
        "already written, and running the same command again finishes the rest.",
        epilog=examples("lwc page import notes/", "lwc page import pages.jsonl"),
    )  # fmt: skip
    bulk.add_argument(
        "path", metavar="DIR|FILE.jsonl",
        help="a folder of .md files (front matter optional) or a JSON Lines file of pages",
    )  # fmt: skip
    bulk.add_argument(
        "--batch", type=Bounded(1), default=IMPORT_BATCH,
        help="pages per transaction (at least 1; default: %(default)s)",
    )  # fmt: skip
    bulk.add_argument("--strict", action="store_true", help=STRICT_HELP)
    bulk.set_defaults(func=page_import)


def _add_source(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `source add|list|remove|show`."""
    source = sub.add_parser(
        "source", parents=[common], help="store and read source snapshots",
        epilog=examples("lwc source add docs/design.md", "lwc source list"),
    )  # fmt: skip
    sources = source.add_subparsers(dest="source_command", metavar="ACTION")
    sources.required = True
    add = sources.add_parser(
        "add", parents=[common], help="snapshot a file or directory",
        description="Store immutable UTF-8 snapshots, deduplicated by SHA-256 (at most 64 MiB "
        "each).",
        epilog=examples("lwc source add docs/design.md --title 'Design'", "lwc source add docs/"),
    )  # fmt: skip
    add.add_argument("path", metavar="FILE|DIR", help="a UTF-8 text file, or a folder of them")
    add.add_argument(
        "--title", help="the source's title, for a single FILE (default: its file name)"
    )
    add.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add.set_defaults(func=source_add)
    slist = sources.add_parser(
        "list", parents=[common], help="list stored sources",
        epilog=examples("lwc source list", "lwc source list --json"),
    )  # fmt: skip
    slist.set_defaults(func=source_list)
    drop = sources.add_parser(
        "remove", parents=[common], help="delete a source no page cites",
        epilog=examples("lwc source remove src-1a2b3c4d5e6f"),
    )  # fmt: skip
    drop.add_argument("id", help="the source id (see `lwc source list`)")
    drop.set_defaults(func=source_remove)
    peek = sources.add_parser(
        "show", parents=[common], help="print a window of a source",
        epilog=examples("lwc source show src-1a2b3c4d5e6f",
                        "lwc source show src-1a2b3c4d5e6f --offset-chars 20000"),
    )  # fmt: skip
    peek.add_argument("id", help="the source id (see `lwc source list`)")
    peek.add_argument(
        "--offset-chars", type=Bounded(0), default=0, metavar="N",
        help="characters to skip (at least 0; default: %(default)s)",
    )  # fmt: skip
    peek.add_argument(
        "--max-chars", type=Bounded(1), default=DEFAULT_SHOW_CHARS, metavar="N",
        help="characters to print (at least 1; default: %(default)s)",
    )  # fmt: skip
    peek.set_defaults(func=source_show)


def _add_search(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `search`."""
    search = sub.add_parser(
        "search", parents=[common], help="search the Wiki",
        description="The deterministic search lwc_explore uses: ranked Pages and Sources, "
        "results only.",
        epilog=examples("lwc search login", "lwc search 'token refresh' --limit 3"),
    )  # fmt: skip
    search.add_argument("query", help="words to look for (typos are forgiven)")
    search.add_argument(
        "--limit", type=Bounded(1, SEARCH_LIMIT_MAX), default=DEFAULT_SEARCH_LIMIT, metavar="N",
        help=f"results to print (1–{SEARCH_LIMIT_MAX}; default: %(default)s)",
    )  # fmt: skip
    search.set_defaults(func=search_stores)


def _add_settings(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `config set|show`, `graph build|status` and `repair`."""
    config = sub.add_parser(
        "config", parents=[common], help="store settings",
        epilog=examples("lwc config show", "lwc config set --graph enabled"),
    )  # fmt: skip
    configs = config.add_subparsers(dest="config_command", metavar="ACTION")
    configs.required = True
    setter = configs.add_parser(
        "set", parents=[common], help="change a setting",
        description="Enabling the graph builds it at once and prints LWC's `work` object for "
        "`lwc work watch`.",
        epilog=examples("lwc config set --graph enabled", "lwc config set --graph disabled"),
    )  # fmt: skip
    setter.add_argument(
        "--graph", choices=(*GRAPH_ENABLED, "disabled"),
        help="enabled or disabled (LWC's engine names grafeo and surrealdb mean enabled; "
        "default: leave it as it is)",
    )  # fmt: skip
    setter.set_defaults(func=config_set)
    shower = configs.add_parser(
        "show", parents=[common], help="print the store's settings",
        epilog=examples("lwc config show", "lwc --scope global config show"),
    )  # fmt: skip
    shower.set_defaults(func=config_show)

    graph = sub.add_parser(
        "graph", parents=[common], help="the document graph",
        epilog=examples("lwc graph build", "lwc graph status"),
    )  # fmt: skip
    graphs = graph.add_subparsers(dest="graph_command", metavar="ACTION")
    graphs.required = True
    build = graphs.add_parser(
        "build", parents=[common], help="build the graph projection",
        epilog=examples("lwc graph build"),
    )  # fmt: skip
    build.set_defaults(func=graph_build)
    state = graphs.add_parser(
        "status", parents=[common], help="show graph readiness",
        epilog=examples("lwc graph status", "lwc --scope all graph status"),
    )  # fmt: skip
    state.set_defaults(func=graph_status)

    repair = sub.add_parser(
        "repair", parents=[common], help="recover and re-index a store",
        description="Roll back a crashed write, check integrity, migrate an older format and "
        "rebuild the search index.",
        epilog=examples("lwc repair", "lwc --scope global repair"),
    )  # fmt: skip
    repair.set_defaults(func=repair_store)


def _add_transfer(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `export` and `import`."""
    export = sub.add_parser(
        "export", parents=[common], help="write the Wiki as Markdown files",
        epilog=examples("lwc export wiki-export/"),
    )  # fmt: skip
    export.add_argument("dir", metavar="DIR", help="an empty or earlier-export folder to write")
    export.set_defaults(func=export_store)
    restore = sub.add_parser(
        "import", parents=[common], help="load a Wiki written by export, or an LWC 0.16 store",
        epilog=examples("lwc import wiki-export/", "lwc import --from-lwc ~/old-project"),
    )  # fmt: skip
    restore.add_argument(
        "dir", metavar="DIR", nargs="?",
        help="a folder written by `lwc export` (default: none; give DIR or --from-lwc)",
    )  # fmt: skip
    restore.add_argument(
        "--from-lwc", metavar="PATH",
        help="an LWC 0.16 store (its wiki.db, .lwc folder or project folder), read unmodified "
        "(default: none)",
    )  # fmt: skip
    restore.set_defaults(func=import_store)
