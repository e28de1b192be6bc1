"""What the Wiki commands read back through the writer's connection, and what its writes
answer, as their JSON shows it.

`lwc page show`, `page list`, `source show`, `source list`, `status` and the export read a
store lwc itself wrote and keeps writing (no reader's bounds: `query/bounds.py` is for the
server, which reads any store). Each record is a plain dict, typed by its keys.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

from lwc_trio.memory.format.slugs import order_provenance
from lwc_trio.memory.storage.store import graph_status, read_info

__all__ = [
    "GraphBuilt",
    "GraphState",
    "Imported",
    "PageListing",
    "PageRecord",
    "Repaired",
    "SourceAdded",
    "SourceListing",
    "SourceRow",
    "SourceWindow",
    "StoreStatus",
    "list_pages",
    "list_sources",
    "page_record",
    "source_rows",
    "source_window",
    "store_status",
]


class PageRecord(TypedDict):
    """A whole Page (`lwc page show`)."""

    slug: str
    title: str
    kind: str
    summary: str | None
    body: str
    sources: list[str]
    provenance: list[str]
    links: list[str]
    createdAt: str
    updatedAt: str


class PageListing(TypedDict):
    """A Page's metadata (`lwc page list`)."""

    slug: str
    title: str
    kind: str
    summary: str | None
    updatedAt: str


class SourceWindow(TypedDict):
    """A window of a Source's text (`lwc source show`)."""

    id: str
    title: str
    origin: str | None
    contentHash: str
    createdAt: str
    length: int
    offset: int
    content: str
    has_more: bool


class SourceListing(TypedDict):
    """A Source's metadata, without its text (`lwc source list`)."""

    id: str
    title: str
    origin: str | None
    length: int
    createdAt: str


SourceRow = tuple[str, str, "str | None", str, str, str]
"""A whole Source: id, title, origin, content hash, creation time, content (the export)."""


class GraphState(TypedDict):
    enabled: bool
    status: str
    builtRevision: int | None


class StoreStatus(TypedDict):
    """Store id, revisions, counts and graph state (`lwc status`)."""

    path: str
    storeId: str
    revision: int
    contentRevision: int
    pages: int
    sources: int
    graph: GraphState


class GraphBuilt(StoreStatus):
    """`lwc graph build`: the status after it, the revision built and the pairs written."""

    builtRevision: int
    related: int


class Repaired(StoreStatus):
    """`lwc repair`: the status after it and how many documents were re-indexed."""

    integrity: str
    reindexed: int


class SourceAdded(TypedDict):
    """A Source `add_sources` was given: its id and title, and whether it was new."""

    id: str
    title: str
    created: bool


class SourceCounts(TypedDict):
    created: int
    existing: int


class Imported(TypedDict):
    """`lwc import --from-lwc`: the Sources and Pages written, by outcome."""

    sources: SourceCounts
    pages: dict[str, int]


def page_record(conn: sqlite3.Connection, slug: str) -> PageRecord | None:
    """The Page `slug` with its Sources, provenance and links; None when there is none."""
    row = conn.execute(
        "SELECT slug, title, kind, summary, body, created_at, updated_at FROM pages WHERE slug = ?",
        (slug,),
    ).fetchone()
    if row is None:
        return None
    sources = [
        r[0]
        for r in conn.execute(
            "SELECT source_id FROM page_sources WHERE page_slug = ? ORDER BY source_id", (slug,)
        )
    ]
    provenance = {
        r[0]
        for r in conn.execute("SELECT provenance FROM page_provenance WHERE page_slug = ?", (slug,))
    }
    links = [
        r[0]
        for r in conn.execute(
            "SELECT to_slug FROM links WHERE from_slug = ? ORDER BY to_slug", (slug,)
        )
    ]
    return {
        "slug": row[0],
        "title": row[1],
        "kind": row[2],
        "summary": row[3],
        "body": row[4],
        "sources": sources,
        "provenance": order_provenance(provenance),
        "links": links,
        "createdAt": row[5],
        "updatedAt": row[6],
    }


def list_pages(conn: sqlite3.Connection) -> list[PageListing]:
    """Every Page's metadata, sorted by slug."""
    rows = conn.execute("SELECT slug, title, kind, summary, updated_at FROM pages ORDER BY slug")
    return [
        {"slug": s, "title": t, "kind": k, "summary": m, "updatedAt": u} for s, t, k, m, u in rows
    ]


def source_window(
    conn: sqlite3.Connection, ident: str, *, offset: int, max_chars: int
) -> SourceWindow | None:
    """`max_chars` of a Source's text from `offset`; None when there is no such Source."""
    row = conn.execute(
        "SELECT id, title, origin, content_hash, created_at, length(content), "
        "substr(content, ?, ?) FROM sources WHERE id = ?",
        (offset + 1, max_chars, ident),
    ).fetchone()
    if row is None:
        return None
    length, content = int(row[5]), row[6] or ""
    return {
        "id": row[0],
        "title": row[1],
        "origin": row[2],
        "contentHash": row[3],
        "createdAt": row[4],
        "length": length,
        "offset": offset,
        "content": content,
        "has_more": offset + len(content) < length,
    }


def list_sources(conn: sqlite3.Connection) -> list[SourceListing]:
    """Every Source's id, title, origin, length and creation time (no content), by id."""
    rows = conn.execute(
        "SELECT id, title, origin, length(content), created_at FROM sources ORDER BY id"
    )
    return [
        {"id": i, "title": t, "origin": o, "length": n, "createdAt": c} for i, t, o, n, c in rows
    ]


def source_rows(conn: sqlite3.Connection) -> Iterator[SourceRow]:
    """Every Source whole, by id."""
    yield from conn.execute(
        "SELECT id, title, origin, content_hash, created_at, content FROM sources ORDER BY id"
    )


def store_status(conn: sqlite3.Connection, path: Path) -> StoreStatus:
    """Store id, revisions, counts and graph state of the store at `path`."""
    info = read_info(conn)
    pages = conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    sources = conn.execute("SELECT COUNT(*) FROM sources").fetchone()[0]
    return {
        "path": str(path),
        "storeId": info.store_id,
        "revision": info.store_revision,
        "contentRevision": info.content_revision,
        "pages": int(pages),
        "sources": int(sources),
        "graph": {
            "enabled": info.graph_enabled,
            "status": graph_status(info),
            "builtRevision": info.graph_built_revision,
        },
    }
