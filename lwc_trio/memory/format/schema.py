"""The store format: DDL, format_version and the schema check readers run first.

A store is one SQLite file. The core tables keep LWC's shape (SPEC §4); the `search_*` tables
are the search index the CLI maintains; `graph_related` is the
document-graph projection written by `lwc graph build`.
"""

from __future__ import annotations

import functools
import re
import sqlite3

from lwc_trio.exceptions import ForeignStoreError, StoreError

__all__ = [
    "DDL",
    "FORMAT_VERSION",
    "LWC_USER_VERSION",
    "RELATED_PER_PAGE",
    "SEARCH_DDL",
    "SEARCH_TABLES",
    "SEGMENTS_BY_TERM_DDL",
    "SEGMENTS_DDL",
    "SQLITE_HEADER",
    "check_header",
    "check_schema",
    "expected_schema",
    "lwc_header_version",
    "parse_count",
    "placeholders",
    "read_format_version",
]

FORMAT_VERSION = 7
"""Bumped whenever the DDL, the analyzer or the meaning of a stored value changes; the
writer brings an older store up to it (`index/migrations.py`)."""

SQLITE_HEADER = b"SQLite format 3\x00"


def placeholders(count: int) -> str:
    """The `?, ?, …` of an `IN (...)` of `count` values."""
    return ",".join("?" * count)


# The search index (format 7) is plain tables the CLI maintains with the analyzer of
# `lwc_trio.memory.text.tokenize` (folded, stemmed terms; CJK characters and pairs):
# - `search_docs`: one row per live Page or Source, with what the ranking needs per candidate
#   already worked out at write time (title and path terms, the generic flag) and its length
#   in terms (a rewrite takes back its frequencies by analyzing the old row's text again).
#   Doc ids are never reused (AUTOINCREMENT): a rewritten or removed document's id is gone;
# - `search_terms`: every term with its document frequency and how many segments it has;
# - `search_segments`: per term, one row per write batch (`seg` is the batch's first doc id)
#   with the batch's postings packed (`postings.py`: per posting the doc id, its count in all
#   fields weighted by `fields.FIELD_WEIGHTS` (what BM25F reads), the document's length,
#   where the term first occurs in the snippet text, -1 when not there; column after column,
#   ids as gaps, mostly 7 bytes a posting) and `heads`, the doc ids whose title or path
#   holds the term (`segments.pack`: little-endian int32s; the fuzzy title fill-up).
#   Postings of documents no longer in `search_docs` are skipped by readers and dropped when
#   a term's segments are merged (`segments.MAX_SEGMENTS`) or by `lwc repair`. The rows
#   are kept in write order (a rowid table) and found by term through
#   `search_segments_by_term`: a batch's rows are appended at the table's end, and only the
#   small index entries land among the older ones (format 5 keyed the rows themselves by
#   term, so a batch rewrote a third of the whole postings table at 100,000 Pages);
# - `search_words`: folded words whose stem differs from the word (typo correction compares
#   what people type with words, not stems);
# - `search_stats`: `docs` and `length` (sum of document lengths) for BM25.
# Format 4 kept each document's distinct terms in `search_docs` and postings as int32
# quadruples: 2.35x the store of an FTS5 table for the same Pages (issue 24). Format 3 kept
# one row per (term, document), ~190 per Page: the B-tree inserts made bulk
# writes 3x slower than format 2. Format 2 used FTS5, whose bm25() floors the IDF of a term in
# half the documents at 1e-6 (SPEC §4 forbids that) and cannot take query term weights.
SEGMENTS_DDL = """CREATE TABLE search_segments (
    term TEXT NOT NULL,
    seg INTEGER NOT NULL,
    postings BLOB NOT NULL,
    heads BLOB NOT NULL
)"""
SEGMENTS_BY_TERM_DDL = "CREATE UNIQUE INDEX search_segments_by_term ON search_segments (term, seg)"
SEARCH_DDL: tuple[str, ...] = (
    """CREATE TABLE search_docs (
    doc_id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_type TEXT NOT NULL,
    ident TEXT NOT NULL,
    title_terms TEXT NOT NULL,
    path_terms TEXT NOT NULL,
    generic INTEGER NOT NULL,
    length INTEGER NOT NULL,
    UNIQUE (doc_type, ident)
)""",
    """CREATE TABLE search_terms (
    term TEXT PRIMARY KEY NOT NULL,
    df INTEGER NOT NULL,
    segs INTEGER NOT NULL
) WITHOUT ROWID""",
    SEGMENTS_DDL,
    SEGMENTS_BY_TERM_DDL,
    """CREATE TABLE search_words (
    word TEXT PRIMARY KEY NOT NULL,
    term TEXT NOT NULL
) WITHOUT ROWID""",
    """CREATE TABLE search_stats (
    key TEXT PRIMARY KEY NOT NULL,
    value INTEGER NOT NULL
) WITHOUT ROWID""",
    # Format 5: the typo index (`typo_index`), every word by length.
    """CREATE TABLE search_fuzzy (
    length INTEGER NOT NULL,
    word TEXT NOT NULL,
    PRIMARY KEY (length, word)
) WITHOUT ROWID""",
)

RELATED_PER_PAGE = 11
"""Rows `graph_related` holds per Page at most: its best related Pages (the graph build's and
the neighbourhood's bound)."""

SEARCH_TABLES = (
    "search_docs", "search_terms", "search_segments", "search_words", "search_stats",
    "search_fuzzy",
)  # fmt: skip
"""The search index's tables: emptied when it is rebuilt (`lwc repair`)."""

DDL: tuple[str, ...] = (
    """CREATE TABLE meta (
    key TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
)""",
    """CREATE TABLE pages (
    slug TEXT PRIMARY KEY NOT NULL,
    title TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'concept',
    summary TEXT,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
)""",
    """CREATE TABLE sources (
    id TEXT PRIMARY KEY NOT NULL,
    content_hash TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    origin TEXT,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL
)""",
    """CREATE TABLE page_sources (
    page_slug TEXT NOT NULL,
    source_id TEXT NOT NULL,
    PRIMARY KEY (page_slug, source_id)
) WITHOUT ROWID""",
    "CREATE INDEX page_sources_by_source ON page_sources (source_id, page_slug)",
    """CREATE TABLE page_provenance (
    page_slug TEXT NOT NULL,
    provenance TEXT NOT NULL,
    PRIMARY KEY (page_slug, provenance)
) WITHOUT ROWID""",
    """CREATE TABLE links (
    from_slug TEXT NOT NULL,
    to_slug TEXT NOT NULL,
    PRIMARY KEY (from_slug, to_slug)
) WITHOUT ROWID""",
    "CREATE INDEX links_by_target ON links (to_slug, from_slug)",
    *SEARCH_DDL,
    """CREATE TABLE graph_related (
    slug TEXT NOT NULL,
    related_slug TEXT NOT NULL,
    score REAL NOT NULL,
    PRIMARY KEY (slug, related_slug)
) WITHOUT ROWID""",
)


# Formats 4 to 6 have no virtual table, hence no shadow tables: every object's SQL is compared.
_SPACE = re.compile(r"\s+")


def _normalize(sql: str | None) -> str | None:
    return None if sql is None else _SPACE.sub(" ", sql).strip()


SchemaRow = tuple[str, str, str, str | None]


def _schema_rows(conn: sqlite3.Connection, limit: int = -1) -> set[SchemaRow]:
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master LIMIT ?", (limit,)
    ).fetchall()
    result: set[SchemaRow] = set()
    for kind, name, table, sql in rows:
        if not all(isinstance(value, str) for value in (kind, name, table)):
            raise StoreError("store_corrupt", "the store's schema table is malformed")
        if not (sql is None or isinstance(sql, str)):
            raise StoreError("store_corrupt", "the store's schema table is malformed")
        # Every object is compared by its complete definition, FTS5's shadow tables too: a
        # generated column or a default expression planted in one would otherwise run.
        result.add((kind, name, table, _normalize(sql)))
    return result


@functools.cache
def expected_schema() -> frozenset[SchemaRow]:
    """The `sqlite_master` rows a current-format store has (built once in memory).

    Built from `DDL` by this process's SQLite, so the FTS5 shadow tables are exactly the
    ones the CLI creates with the same library, and any change to `DDL` is followed.
    """
    conn = sqlite3.connect(":memory:")
    try:
        for statement in DDL:
            conn.execute(statement)
        return frozenset(_schema_rows(conn))
    finally:
        conn.close()


LWC_USER_VERSION = 16
"""The SQLite `user_version` LWC 0.16 writes (its stores are also in WAL mode)."""


def lwc_header_version(head: bytes) -> int | None:
    """`LWC_USER_VERSION` when the 100-byte header `head` is an LWC 0.16 store's, else None.

    LWC 0.16 writes `user_version` 16 and keeps its file in WAL mode (header bytes 18 and 19
    are 2); the lwc CLI never writes WAL, and its own stores keep `user_version` 0. Another
    `user_version` (a user's `PRAGMA user_version = 5` on an lwc store, another tool's file)
    is not taken for LWC: the schema check decides what the file is.
    """
    if len(head) < 100 or not head.startswith(SQLITE_HEADER):
        return None
    version = int.from_bytes(head[60:64], "big")
    if version == LWC_USER_VERSION and head[18] == 2 and head[19] == 2:
        return version
    return None


def check_header(head: bytes) -> None:
    """Refuse a file that is not a rollback-journal SQLite database.

    A WAL-mode file would make even a read-only reader create `-wal`/`-shm` files, so it is
    refused before SQLite ever sees it. Raises `StoreError(store_corrupt)`, or
    `ForeignStoreError` for an LWC 0.16 store (`lwc_header_version`).
    """
    if len(head) < 100 or not head.startswith(SQLITE_HEADER):
        raise StoreError("store_corrupt", "the store is not an SQLite database")
    lwc_version = lwc_header_version(head)
    if lwc_version is not None:
        raise ForeignStoreError(
            f"a Wiki written by LWC (SQLite user_version {lwc_version}); lwc reads its own "
            "format: convert it with `lwc import --from-lwc` (LWC's files are kept unchanged)"
        )
    if head[18] != 1 or head[19] != 1:
        raise StoreError("store_corrupt", "the store is not in rollback-journal mode")


def read_format_version(conn: sqlite3.Connection) -> int:
    """The store's `format_version`, after checking that `meta` is the table we wrote."""
    meta = conn.execute("SELECT type, sql FROM sqlite_master WHERE name = 'meta'").fetchall()
    if len(meta) != 1 or meta[0][0] != "table" or _normalize(meta[0][1]) != _normalize(DDL[0]):
        raise StoreError("store_corrupt", "the store has no valid meta table")
    row = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
    number = None if row is None else parse_count(row[0])
    if number is None:
        raise StoreError("store_corrupt", "the store has no valid format_version")
    return number


def parse_count(raw: object) -> int | None:
    """A `meta` counter: ASCII digits only (`'²'.isdigit()` is true), at most 18 of them."""
    if isinstance(raw, str) and 0 < len(raw) <= 18 and raw.isascii() and raw.isdigit():
        return int(raw)
    return None


def check_schema(conn: sqlite3.Connection) -> None:
    """Refuse a store whose objects differ from the current format in any way.

    A cloned repository can ship a hostile `wiki.db` (views or triggers in place of tables,
    extra objects, a shadow table with a generated column): anything but the exact expected
    schema, every object's normalised SQL included, is `store_corrupt`.
    """
    expected = expected_schema()
    # One row more than a Wiki has is enough to refuse: a hostile schema of millions of
    # objects is never read whole.
    actual = _schema_rows(conn, len(expected) + 1)
    if actual != expected:
        extra = sorted({row[1] for row in actual - expected})
        missing = sorted({row[1] for row in expected - actual})
        detail = ", ".join(
            part
            for part in (
                f"unexpected: {_names(extra)}" if extra else "",
                f"missing or different: {_names(missing)}" if missing else "",
            )
            if part
        )
        raise StoreError("store_corrupt", f"the store's schema is not a Wiki schema ({detail})")


def _names(names: list[str], shown: int = 5) -> str:
    """At most `shown` names of at most 64 characters: a hostile schema names thousands."""
    cut = [name if len(name) <= 64 else name[:63] + "…" for name in names[:shown]]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(cut) + more
