"""`lwc source add|show` and `lwc search`: Sources and the search over both kinds."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path
from typing import Any

from lwc_trio.cli.output import fail, style
from lwc_trio.cli.wiki.console import (
    Progress,
    handles_errors,
    open_wiki,
    out,
    skipped_json,
    skipped_lines,
)
from lwc_trio.cli.wiki.stores import (
    every_row,
    find_store,
    first_found,
    read_scopes,
    require_store,
    suggesting,
    write_scope,
)
from lwc_trio.exceptions import UsageError
from lwc_trio.memory.exchange.transfer import read_source_inputs
from lwc_trio.memory.exchange.walk import Skipped
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.query.engine import merge_rows, query_stores
from lwc_trio.memory.text.tokenize import MAX_TERMS, tokenize

SEARCH_LIMIT_MAX = 50


@handles_errors
def source_add(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    target = Path(args.path)
    if args.title is not None and target.is_dir():
        raise UsageError("invalid_usage", "--title applies to a single FILE, not a directory")
    store = require_store(scope)
    skipped: list[Skipped] | None = None if args.strict else []
    inputs = read_source_inputs(target, root=store.parent.parent, title=args.title, skipped=skipped)
    args.interrupt_note = lambda: "nothing was written (a source add is one transaction)"
    with open_wiki(store) as wiki, Progress("Adding sources") as progress:
        added = wiki.add_sources(inputs, progress=progress if len(inputs) > 1 else None)
    result: dict[str, Any] = {"scope": scope, "sources": added}
    if target.is_dir():
        result["skipped"] = skipped_json(skipped)
    return out(
        args,
        result,
        lambda r: "\n".join(
            [
                f"{s['id']}\t{s['title']}{'' if s['created'] else '  (already stored)'}"
                for s in r["sources"]
            ]
            + skipped_lines(r)
        ),
    )


@handles_errors
def source_show(args: argparse.Namespace) -> int:
    with suggesting(args, "source_not_found", args.id, Wiki.list_sources, "id"):
        found = first_found(
            args,
            lambda wiki: wiki.get_source(
                args.id, offset=args.offset_chars, max_chars=args.max_chars
            ),
        )
    return out(args, found, lambda r: str(r["content"]))


@handles_errors
def source_list(args: argparse.Namespace) -> int:
    return out(
        args,
        {"sources": every_row(args, Wiki.list_sources)},
        lambda r: (
            "\n".join(
                f"{s['id']}\t{s['title']}\t({s['length']:,} characters)" for s in r["sources"]
            )
            or "(no sources)"
        ),
    )


@handles_errors
def source_remove(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    with (
        suggesting(args, "source_not_found", args.id, Wiki.list_sources, "id"),
        open_wiki(require_store(scope)) as wiki,
    ):
        wiki.remove_source(args.id)
    result = {"scope": scope, "id": args.id, "removed": True}
    return out(args, result, lambda r: f"Removed source {r['id']}")


@handles_errors
def search_stores(args: argparse.Namespace) -> int:
    terms = tokenize(args.query)
    if len(terms) > MAX_TERMS:
        raise fail("invalid_query", f"the query has more than {MAX_TERMS} search terms")
    refs = [ref for scope in read_scopes(args) if (ref := find_store(scope)) is not None]
    if not refs:
        require_store(read_scopes(args)[0])
    answers = query_stores(refs, args.query, args.limit, threading.Event())
    if all(answer.error is not None for answer in answers):
        first = answers[0].error
        assert first is not None
        raise fail(first.code, first.message)
    result = {
        "query": args.query,
        "scope": args.scope,
        "stores": [answer.store_json() for answer in answers],
        "results": [row.to_json() for row in merge_rows(answers, args.limit)],
    }
    return out(args, result, _human_results)


def _human_results(result: dict[str, Any]) -> str:
    if not result["results"]:
        return "No results."
    lines = []
    for i, row in enumerate(result["results"], start=1):
        fuzzy = style(" ~fuzzy", "yellow") if row["match"] == "fuzzy" else ""
        ident = style(row["identifier"], "bold", "cyan")
        lines.append(f"{i}. [{row['type']}] {ident} — {row['title']}{fuzzy}")
        lines.append(style(f"   {row['snippet']}", "dim"))
    return "\n".join(lines)
