"""Opening a store for writing: older formats are brought to this lwc's (`FORMAT_VERSION`).

`MIGRATIONS[n]` holds the steps that bring format `n` to `n + 1`: SQL statements, or
functions run on the writer's connection (a re-index, `indexing.reindex_all`). The writer
(any write command, and `lwc repair`) applies every step it needs in one transaction, so a
crash leaves the old format intact. Readers never migrate: they refuse another format
(`storage/store.begin_read`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from lwc_trio.memory.format.schema import (
    FORMAT_VERSION,
    SEARCH_DDL,
    SEGMENTS_BY_TERM_DDL,
    SEGMENTS_DDL,
    check_schema,
    read_format_version,
)
from lwc_trio.memory.index.indexing import reindex_all
from lwc_trio.memory.storage.store import (
    connect_writer,
    opening_error,
    read_info,
    version_error,
    write_transaction,
)

__all__ = ["MIGRATIONS", "Migration", "open_writer"]

Migration = str | Callable[[sqlite3.Connection], None]

_OLD_SEARCH_TABLES = (
    "search_docs", "search_terms", "search_postings", "search_segments", "search_words",
    "search_stats", "search_fuzzy",
)  # fmt: skip
"""Every search table any format had (format 3's `search_postings` too)."""


def _rebuild_search_index(conn: sqlite3.Connection) -> None:
    reindex_all(conn)


# from_version -> steps that bring a store to from_version + 1.
MIGRATIONS: dict[int, tuple[Migration, ...]] = {
    # 1 -> 2 only changed the FTS5 index's detail level; 2 -> 3 drops that index anyway.
    1: (),
    # 2 -> 3: the FTS5 index gives way to plain tables; 3 -> 4 (always next) replaces them
    # all and re-indexes once.
    2: ("DROP TABLE search_index",),
    # 3 -> 4: one row per term and write batch instead of per term and document; 4 -> 5
    # (always next) drops every search table of format 3 too and rebuilds the index once.
    3: (),
    # 4 -> 5: no terms per document, postings packed small (`postings.py`), and the typo
    # index `search_fuzzy`; every search table is made anew and filled from pages and
    # sources (the analyzer is unchanged, so are the rankings).
    4: (
        *(f"DROP TABLE IF EXISTS {table}" for table in _OLD_SEARCH_TABLES),
        *SEARCH_DDL,
        _rebuild_search_index,
    ),
    # 5 -> 6: `search_segments` becomes a rowid table with an index by term (`schema.py`);
    # its rows are copied as they are, in term order (the old key's, or after 4 -> 5, which
    # made the tables in the current shape, the old index's: never a sort), and the new
    # index is built once at the end.
    5: (
        "ALTER TABLE search_segments RENAME TO search_segments_format5",
        SEGMENTS_DDL,
        "INSERT INTO search_segments (term, seg, postings, heads) "
        "SELECT term, seg, postings, heads FROM search_segments_format5 ORDER BY term, seg",
        "DROP TABLE search_segments_format5",
        SEGMENTS_BY_TERM_DDL,
    ),
    # 6 -> 7: the analyzer keeps every script's combining marks inside its words (a
    # Devanagari vowel sign or virama no longer splits a word: `text/marks.py`), so every
    # Page and Source is indexed again; the tables keep their shape.
    6: (_rebuild_search_index,),
}


def open_writer(path: Path) -> sqlite3.Connection:
    """Open an existing store for writing, migrating an older format. Raises `StoreError`.

    Opening rolls back a leftover hot journal (SQLite does it on first read), which is what
    `lwc repair` relies on.
    """
    conn = connect_writer(path)
    try:
        version = read_format_version(conn)
        if version > FORMAT_VERSION:
            raise version_error(version)
        if version < FORMAT_VERSION:
            _migrate(conn, version)
        check_schema(conn)
        read_info(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise opening_error(exc) from None
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: sqlite3.Connection, version: int) -> None:
    if any(step not in MIGRATIONS for step in range(version, FORMAT_VERSION)):
        raise version_error(version)
    steps = [statement for step in range(version, FORMAT_VERSION) for statement in MIGRATIONS[step]]
    # Only the last re-index is run: each rebuilds the whole index from `pages` and `sources`,
    # so an earlier one's rows would be thrown away (a format-4 store is re-indexed once).
    last = max((i for i, step in enumerate(steps) if step is _rebuild_search_index), default=-1)
    with write_transaction(conn, content=False):
        for index, statement in enumerate(steps):
            if isinstance(statement, str):
                conn.execute(statement)
            elif statement is not _rebuild_search_index or index == last:
                statement(conn)
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'format_version'", (str(FORMAT_VERSION),)
        )
