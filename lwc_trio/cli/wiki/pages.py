"""`lwc page put|show|list|remove|import`: the Wiki's Pages."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lwc_trio.cli.output import fail
from lwc_trio.cli.wiki.console import Progress, handles_errors, out, page_counts
from lwc_trio.cli.wiki.stores import each_store, first_found, require_store, write_scope
from lwc_trio.memory.transfer import EXPORT_MARKER, parse_jsonl, parse_page_file
from lwc_trio.memory.writer import MAX_TEXT_BYTES, CheckedPages, PageInput, Wiki


def _read_input(name: str) -> bytes:
    """The bytes of `--file` (`-` is stdin), at most 64 MiB + 1 to detect oversize."""
    if name == "-":
        return sys.stdin.buffer.read(MAX_TEXT_BYTES + 1)
    try:
        with open(name, "rb") as handle:
            return handle.read(MAX_TEXT_BYTES + 1)
    except OSError as exc:
        raise fail("invalid_input", f"cannot read {name}: {exc.strerror}") from None


@handles_errors
def page_put(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    data = _read_input(args.file)
    if len(data) > MAX_TEXT_BYTES:
        raise fail("invalid_page", "a page body must be at most 64 MiB")
    try:
        body = data.decode("utf-8")
    except UnicodeDecodeError:
        raise fail("invalid_page", "the page body is not UTF-8") from None
    page = PageInput(
        slug=args.slug,
        title=args.title,
        body=body,
        kind=args.kind,
        summary=args.summary,
        sources=tuple(args.source or ()),
        provenance=tuple(args.provenance or ()),
    )
    path = require_store(scope)
    with Wiki(path) as wiki:
        outcome = wiki.put_page(page)
        revision = wiki.status()["revision"]
    result = {"scope": scope, "slug": page.slug, "result": outcome, "revision": revision}
    return out(args, result, lambda r: f"{r['result'].capitalize()} page {r['slug']}")


@handles_errors
def page_show(args: argparse.Namespace) -> int:
    return out(args, first_found(args, lambda wiki: wiki.get_page(args.slug)), _human_page)


def _human_page(page: dict[str, Any]) -> str:
    head = f"# {page['title']}  ({page['slug']}, {page['kind']}, {page['scope']})"
    meta = []
    if page["summary"]:
        meta.append(f"summary: {page['summary']}")
    if page["sources"]:
        meta.append("sources: " + ", ".join(page["sources"]))
    meta.append("provenance: " + ", ".join(page["provenance"]))
    return "\n".join([head, *meta, "", page["body"]])


@handles_errors
def page_list(args: argparse.Namespace) -> int:
    pages: list[dict[str, Any]] = []
    for scope, path in each_store(args):
        with Wiki(path) as wiki:
            pages += [{"scope": scope, **page} for page in wiki.list_pages()]
    return out(
        args,
        {"pages": pages},
        lambda r: (
            "\n".join(f"{p['slug']}\t{p['title']}\t({p['kind']})" for p in r["pages"])
            or "(no pages)"
        ),
    )


@handles_errors
def page_remove(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    with Wiki(require_store(scope)) as wiki:
        wiki.remove_page(args.slug)
    result = {"scope": scope, "slug": args.slug, "removed": True}
    return out(args, result, lambda r: f"Removed page {r['slug']}")


@handles_errors
def page_import(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    source = Path(args.path)
    if (source / EXPORT_MARKER).is_file():
        raise fail("invalid_input", f"{source} is an lwc export; load it with `lwc import`")
    if source.is_dir():
        files = sorted(p for p in source.rglob("*.md") if p.is_file() and not p.is_symlink())
        pages: list[PageInput] | CheckedPages = [parse_page_file(p) for p in files]
    elif source.is_file():
        pages = parse_jsonl(source)
    else:
        raise fail("invalid_input", f"{source} is neither a directory nor a .jsonl file")
    with Wiki(require_store(scope)) as wiki, Progress("Importing pages") as progress:
        counts = wiki.put_pages(pages, batch=args.batch, progress=progress)
    result = {"scope": scope, **counts}
    return out(args, result, lambda r: f"Imported: {page_counts(r)}")
