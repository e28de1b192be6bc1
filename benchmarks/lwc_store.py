"""LWC-shaped stores for the import tests and benchmark, built from LWC's published schema.

Real LWC cannot run here, so these stores are made the way LWC 0.16 makes them (facts from
JanYork/llm-wiki-cli at v0.16.2, `src/store/schema.rs`, `src/store/migrations.rs`): SQLite in
WAL mode, `user_version` 16, `meta` with LWC's keys, the plain tables Pages, Sources, citations,
provenance and links live in, the tables lwc has no equivalent for, and the FTS5 search tables
with `contentless_delete=1`. The stdlib's SQLite (3.40 here) cannot create those, so the stores
are written through `apsw`, whose bundled SQLite is current (a test-extra dependency; lwc itself
reads these stores with the stdlib's sqlite3). Used by tests/test_lwc_*.py and the `lwc-import`
scenario.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import apsw

LWC_VERSION = 16
TOKENIZER = "cjk-bigram@1/bounded-terms"
STAMP = "STRFTIME('%Y-%m-%dT%H:%M:%fZ', 'now')"

SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    content_hash TEXT NOT NULL UNIQUE,
    title TEXT,
    origin TEXT NOT NULL,
    content TEXT NOT NULL,
    structural_navigation INTEGER NOT NULL DEFAULT 0 CHECK(structural_navigation IN (0, 1)),
    created_at TEXT NOT NULL DEFAULT ({STAMP})
);
CREATE TABLE pages(
    slug TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    kind TEXT,
    summary TEXT,
    body TEXT NOT NULL,
    structural_navigation INTEGER NOT NULL DEFAULT 0 CHECK(structural_navigation IN (0, 1)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE page_sources(
    page_slug TEXT NOT NULL,
    source_id INTEGER NOT NULL,
    PRIMARY KEY(page_slug, source_id)
);
CREATE TABLE page_provenance(
    page_slug TEXT NOT NULL,
    provenance TEXT NOT NULL,
    PRIMARY KEY(page_slug, provenance)
);
CREATE TABLE tags(
    name TEXT PRIMARY KEY, autoload INTEGER NOT NULL DEFAULT 0,
    autoload_priority INTEGER NOT NULL DEFAULT 0, autoload_limit INTEGER NOT NULL DEFAULT 10,
    autoload_max_chars INTEGER NOT NULL DEFAULT 50000, reason TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE page_tags(
    tag_name TEXT NOT NULL, page_slug TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0,
    reason TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY(tag_name, page_slug)
);
CREATE TABLE links(
    from_slug TEXT NOT NULL,
    to_slug TEXT NOT NULL,
    PRIMARY KEY(from_slug, to_slug)
);
CREATE TABLE semantic_relations(
    id TEXT PRIMARY KEY, relation_type TEXT NOT NULL, from_identifier TEXT NOT NULL,
    to_identifier TEXT NOT NULL, confidence REAL, provenance TEXT NOT NULL, reason TEXT,
    source_ids_json TEXT NOT NULL DEFAULT '[]', created_at TEXT, updated_at TEXT
);
CREATE TABLE operations(
    id INTEGER PRIMARY KEY AUTOINCREMENT, action TEXT NOT NULL, target TEXT NOT NULL,
    detail_json TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT ({STAMP})
);
CREATE TABLE retrieval_weights(
    target_type TEXT NOT NULL, target_identifier TEXT NOT NULL, provenance TEXT NOT NULL,
    weight INTEGER NOT NULL, reason TEXT NOT NULL, updated_at TEXT NOT NULL DEFAULT ({STAMP}),
    PRIMARY KEY(target_type, target_identifier, provenance)
);
CREATE TABLE retrieval_feedback(
    query_fingerprint TEXT NOT NULL, target_type TEXT NOT NULL, target_identifier TEXT NOT NULL,
    provenance TEXT NOT NULL, signal INTEGER NOT NULL, reason TEXT NOT NULL,
    updated_at TEXT NOT NULL DEFAULT ({STAMP}),
    PRIMARY KEY(query_fingerprint, target_type, target_identifier, provenance)
);
CREATE TABLE changesets(
    id TEXT PRIMARY KEY, name TEXT, status TEXT NOT NULL, base_revision TEXT,
    base_operation_id INTEGER, begin_operation_id INTEGER, pre_commit_checkpoint TEXT,
    post_revision TEXT, created_at TEXT, committed_at TEXT, rolled_back_at TEXT
);
CREATE TABLE memory_events(
    id TEXT PRIMARY KEY, request_id TEXT, fingerprint TEXT, event_type TEXT, context TEXT,
    occurred_at TEXT, recorded_at TEXT, valid_from TEXT, valid_until TEXT,
    pinned INTEGER NOT NULL DEFAULT 0, logical_bytes INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE todo_items(
    id TEXT PRIMARY KEY, request_id TEXT, fingerprint TEXT NOT NULL, title TEXT NOT NULL,
    cue TEXT, detail TEXT, state TEXT NOT NULL, result TEXT, cancel_reason TEXT,
    revision INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    closed_at TEXT, parent_id TEXT, target_at TEXT
);
CREATE TABLE plans(
    id TEXT PRIMARY KEY, request_id TEXT, fingerprint TEXT NOT NULL, title TEXT NOT NULL,
    objective TEXT NOT NULL, done_when TEXT NOT NULL, state TEXT NOT NULL, result TEXT,
    completion_evidence TEXT, done_when_checked INTEGER NOT NULL DEFAULT 0,
    abandoned_reason TEXT, revision INTEGER NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, closed_at TEXT
);
CREATE VIRTUAL TABLE search_fts USING fts5(
    doc_type UNINDEXED, identifier UNINDEXED, title_terms, path_terms, summary_terms,
    body_terms, content='', contentless_delete=1, contentless_unindexed=1
);
CREATE VIRTUAL TABLE todo_fts USING fts5(
    todo_id UNINDEXED, title_terms, tag_terms, cue_terms, detail_terms,
    content='', contentless_delete=1, contentless_unindexed=1
);
"""


@dataclass
class LwcPage:
    """One LWC Page row plus its provenance claims, citations (LWC source ids) and links."""

    slug: object
    title: object
    body: object = "body"
    kind: object = "concept"
    summary: object = None
    created_at: object = "2025-03-01T10:00:00.000Z"
    updated_at: object = "2025-03-02T11:30:00.500Z"
    provenance: Sequence[object] = ()
    sources: Sequence[object] = ()
    links: Sequence[object] = ()


@dataclass
class LwcSource:
    """One LWC Source row (`id` is LWC's integer key)."""

    id: object
    content: object
    title: object = "notes.md"
    origin: object = "docs/notes.md"
    created_at: object = "2025-02-28T09:00:00.000Z"
    content_hash: object = None  # LWC's own hash; sha256 of the content unless given


@dataclass
class LwcExtras:
    """Rows in tables lwc has no equivalent for (counted by the import)."""

    tags: int = 0
    retrieval_weights: int = 0
    todo_items: int = 0
    plans: int = 0
    rows: dict[str, int] = field(default_factory=dict)


def _hash(source: LwcSource, index: int) -> object:
    if source.content_hash is not None:
        return source.content_hash
    if isinstance(source.content, str):
        return hashlib.sha256(source.content.encode("utf-8")).hexdigest()
    return f"hash-{index}"


def open_lwc(path: Path) -> apsw.Connection:
    """A connection to a new LWC-shaped store at `path`: schema, meta, WAL, user_version 16."""
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    conn.execute(SCHEMA)
    meta = {
        "format_version": str(LWC_VERSION),
        "tokenizer": TOKENIZER,
        "store_id": "ab" * 32,
        "store_revision": "cd" * 32,
        "schema": "# Wiki schema",
        "purpose": "# Purpose",
    }
    conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", sorted(meta.items()))
    conn.execute(f"PRAGMA user_version = {LWC_VERSION}")
    conn.execute("COMMIT")
    return conn


def fill(
    conn: apsw.Connection,
    pages: Iterable[LwcPage] = (),
    sources: Iterable[LwcSource] = (),
    extras: LwcExtras | None = None,
) -> None:
    """Insert rows the way LWC stores them, in one transaction."""
    conn.execute("BEGIN")
    for index, source in enumerate(sources):
        conn.execute(
            "INSERT INTO sources(id, content_hash, title, origin, content, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (source.id, _hash(source, index), source.title, source.origin, source.content,
             source.created_at),
        )  # fmt: skip
    for page in pages:
        conn.execute(
            "INSERT INTO pages(slug, title, kind, summary, body, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (page.slug, page.title, page.kind, page.summary, page.body, page.created_at,
             page.updated_at),
        )  # fmt: skip
        for value in page.provenance:
            conn.execute("INSERT INTO page_provenance VALUES (?, ?)", (page.slug, value))
        for ident in page.sources:
            conn.execute("INSERT INTO page_sources VALUES (?, ?)", (page.slug, ident))
        for target in page.links:
            conn.execute("INSERT INTO links VALUES (?, ?)", (page.slug, target))
        conn.execute(
            "INSERT INTO search_fts(doc_type, identifier, title_terms, body_terms) "
            "VALUES ('page', ?, ?, ?)",
            (str(page.slug), str(page.title), str(page.body)[:1000]),
        )
    extras = extras or LwcExtras()
    for number in range(extras.tags):
        conn.execute(
            "INSERT INTO tags(name, reason, updated_at) VALUES (?, 'r', '2025-01-01T00:00:00Z')",
            (f"tag-{number}",),
        )
    for number in range(extras.retrieval_weights):
        conn.execute(
            "INSERT INTO retrieval_weights(target_type, target_identifier, provenance, weight, "
            "reason) VALUES ('page', ?, 'user-provided', 1, 'r')",
            (f"p{number}",),
        )
    for number in range(extras.todo_items):
        conn.execute(
            "INSERT INTO todo_items(id, fingerprint, title, state, revision, created_at, "
            "updated_at) VALUES (?, ?, 't', 'open', 1, 'x', 'x')",
            (f"{number:032d}", "f" * 64),
        )
    for number in range(extras.plans):
        conn.execute(
            "INSERT INTO plans(id, fingerprint, title, objective, done_when, state, revision, "
            "created_at, updated_at) VALUES (?, ?, 't', 'o', 'd', 'active', 1, 'x', 'x')",
            (f"{number:032d}", "f" * 64),
        )
    conn.execute("COMMIT")


def make_lwc_store(
    path: Path,
    pages: Iterable[LwcPage] = (),
    sources: Iterable[LwcSource] = (),
    extras: LwcExtras | None = None,
) -> Path:
    """A closed LWC store at `path` (parents created), everything checkpointed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = open_lwc(path)
    fill(conn, pages, sources, extras)
    conn.close()
    return path


def make_wal_only_store(
    path: Path, pages: Iterable[LwcPage], sources: Iterable[LwcSource] = ()
) -> Path:
    """An LWC store whose rows exist ONLY in its `-wal` file, not yet checkpointed.

    Built in a scratch folder with automatic checkpoints off, then the database and its `-wal`
    are copied out while the writing connection is still open (as when LWC is running).
    """
    scratch = path.parent / ".scratch"
    scratch.mkdir(parents=True)
    conn = open_lwc(scratch / "wiki.db")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    fill(conn, pages, sources)
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal"):
        shutil.copyfile(scratch / f"wiki.db{suffix}", path.with_name(path.name + suffix))
    conn.close()
    shutil.rmtree(scratch)
    return path
