"""The store format: DDL, format_version, migrations and the schema check readers run first.

A store is one SQLite file. The core tables keep LWC's shape (SPEC §4); `search_docs` and the
FTS5 table `search_index` are the search index the CLI maintains; `graph_related` is the
document-graph projection written by `lwc graph build`.
"""

from __future__ import annotations

import functools
import re
import sqlite3

from lwc_trio.exceptions import StoreError

__all__ = [
    "DDL",
    "FORMAT_VERSION",
    "MIGRATIONS",
    "SQLITE_HEADER",
    "check_header",
    "check_schema",
    "expected_schema",
]

FORMAT_VERSION = 2
"""Bumped whenever the DDL, the tokenizer or the meaning of a stored value changes."""

SQLITE_HEADER = b"SQLite format 3\x00"

# Search text is pre-tokenized by `lwc_trio.memory.tokenize` (terms joined by spaces), so the
# FTS5 `ascii` tokenizer only has to split on spaces: every non-ASCII character is a token
# character for it, which keeps CJK bigrams and accented words intact. `detail=full` (format 2):
# with `detail=column` FTS5 had to score every document holding a term (~11 us each, 16 ms a
# query at 10,000 pages); full position lists cut that to ~1.4 ms for ~7 % more disk.
SEARCH_INDEX_DDL = """CREATE VIRTUAL TABLE search_index USING fts5(
    title, path, summary, body, tokenize = 'ascii', detail = full
)"""

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
    """CREATE TABLE search_docs (
    doc_id INTEGER PRIMARY KEY,
    doc_type TEXT NOT NULL,
    ident TEXT NOT NULL,
    UNIQUE (doc_type, ident)
)""",
    SEARCH_INDEX_DDL,
    """CREATE TABLE graph_related (
    slug TEXT NOT NULL,
    related_slug TEXT NOT NULL,
    score REAL NOT NULL,
    PRIMARY KEY (slug, related_slug)
) WITHOUT ROWID""",
)

# from_version -> statements that bring a store to from_version + 1. Applied by the writer (any
# write command and `lwc repair`) inside one transaction; readers never migrate.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    # 1 -> 2: the search index moves from detail=column to detail=full, same rows and rowids.
    # Rebuilt under its own name (a RENAME would rewrite the stored DDL the schema check reads).
    1: (
        """CREATE TEMP TABLE search_index_copy AS
    SELECT rowid AS doc_rowid, title, path, summary, body FROM search_index""",
        "DROP TABLE search_index",
        SEARCH_INDEX_DDL,
        """INSERT INTO search_index (rowid, title, path, summary, body)
    SELECT doc_rowid, title, path, summary, body FROM search_index_copy""",
        "DROP TABLE search_index_copy",
    ),
}

# FTS5 generates its shadow tables itself; their DDL may differ between SQLite versions, so only
# their presence and type are compared.
_SHADOW_PREFIX = "search_index_"
_SPACE = re.compile(r"\s+")


def _normalize(sql: str | None) -> str | None:
    return None if sql is None else _SPACE.sub(" ", sql).strip()


SchemaRow = tuple[str, str, str, str | None]


def _schema_rows(conn: sqlite3.Connection) -> set[SchemaRow]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    result: set[SchemaRow] = set()
    for kind, name, table, sql in rows:
        if not all(isinstance(value, str) for value in (kind, name, table)):
            raise StoreError("store_corrupt", "the store's schema table is malformed")
        if not (sql is None or isinstance(sql, str)):
            raise StoreError("store_corrupt", "the store's schema table is malformed")
        shadow = name.startswith(_SHADOW_PREFIX)
        result.add((kind, name, table, None if shadow else _normalize(sql)))
    return result


@functools.cache
def expected_schema() -> frozenset[SchemaRow]:
    """The `sqlite_master` rows a current-format store has (built once in memory)."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in DDL:
            conn.execute(statement)
        return frozenset(_schema_rows(conn))
    finally:
        conn.close()


def check_header(head: bytes) -> None:
    """Refuse a file that is not a rollback-journal SQLite database.

    A WAL-mode file would make even a read-only reader create `-wal`/`-shm` files, so it is
    refused before SQLite ever sees it. Raises `StoreError(store_corrupt)`.
    """
    if len(head) < 100 or not head.startswith(SQLITE_HEADER):
        raise StoreError("store_corrupt", "the store is not an SQLite database")
    if head[18] != 1 or head[19] != 1:
        raise StoreError("store_corrupt", "the store is not in rollback-journal mode")


def read_format_version(conn: sqlite3.Connection) -> int:
    """The store's `format_version`, after checking that `meta` is the table we wrote."""
    meta = conn.execute("SELECT type, sql FROM sqlite_master WHERE name = 'meta'").fetchall()
    if len(meta) != 1 or meta[0][0] != "table" or _normalize(meta[0][1]) != _normalize(DDL[0]):
        raise StoreError("store_corrupt", "the store has no valid meta table")
    row = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
    if row is None or not isinstance(row[0], str) or not row[0].isdigit():
        raise StoreError("store_corrupt", "the store has no valid format_version")
    return int(row[0])


def check_schema(conn: sqlite3.Connection) -> None:
    """Refuse a store whose objects differ from the current format in any way.

    A cloned repository can ship a hostile `wiki.db` (views or triggers in place of tables,
    extra objects): anything but the exact expected schema is `store_corrupt`.
    """
    actual = _schema_rows(conn)
    expected = expected_schema()
    if actual != expected:
        extra = sorted(row[1] for row in actual - expected)
        missing = sorted(row[1] for row in expected - actual)
        detail = ", ".join(
            part
            for part in (
                f"unexpected: {', '.join(extra)}" if extra else "",
                f"missing or different: {', '.join(missing)}" if missing else "",
            )
            if part
        )
        raise StoreError("store_corrupt", f"the store's schema is not a Wiki schema ({detail})")
