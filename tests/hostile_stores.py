"""Slow and hostile store shapes of issue 36 (items 4 and 5), planted with SQL into a store
the real writer made: one Page `zebra-note` ("Zebra note"), then one shape added to it.

Each shape is what a cloned `wiki.db` (or a store left by many rewrites) can hold, made as
small as the tests can afford; sizes are the callers'.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
from conftest_memory import new_store, page, put_pages

from lwc_trio.memory.format.postings import encode_batch, encode_postings
from lwc_trio.memory.format.segments import pack

SLUG = "zebra-note"


def zebra_store(root: Path) -> Path:
    """`root/.lwc/wiki.db` holding the one Page `zebra-note`, written by the real writer."""
    db = new_store(root)
    note = page(SLUG, "Zebra note", "zebra stripes and more zebra", provenance=["user-provided"])
    put_pages(db, [note])
    return db


def _write(db: Path, plant: Callable[[sqlite3.Connection], None]) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("BEGIN")
        plant(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()


def dead_postings(db: Path, n: int, segments: int = 1) -> None:
    """`segments` more segments of `zebra`, `n` postings in all, of documents that are gone
    (what rewriting `n` Pages leaves until the term's segments are merged; the writer
    keeps up to 8 segments a term): merely slow."""

    def plant(conn: sqlite3.Connection) -> None:
        (last,) = conn.execute("SELECT max(doc_id) FROM search_docs").fetchone()
        (first_seg,) = conn.execute(
            "SELECT min(seg) FROM search_segments WHERE term = 'zebra'"
        ).fetchone()
        sizes = [n // segments + (i < n % segments) for i in range(segments)]
        ids = np.arange(last + 1_000, last + 1_000 + n, dtype=np.int64)
        ones = np.ones(n, dtype=np.int64)
        blobs = encode_batch(sizes, ids, ones, 3 * ones, -ones)
        conn.executemany(
            "INSERT INTO search_segments (term, seg, postings, heads) VALUES ('zebra', ?, ?, X'')",
            ((first_seg - segments + i, blob) for i, blob in enumerate(blobs)),
        )
        conn.execute("UPDATE search_terms SET segs = segs + ? WHERE term = 'zebra'", (segments,))

    _write(db, plant)


def segment_rows(db: Path, n: int) -> None:
    """`n` more one-posting segment rows of `zebra` (the writer keeps at most 8 a term)."""

    def plant(conn: sqlite3.Connection) -> None:
        (last,) = conn.execute("SELECT max(doc_id) FROM search_docs").fetchone()
        conn.executemany(
            "INSERT INTO search_segments (term, seg, postings, heads) VALUES ('zebra', ?, ?, X'')",
            ((-1 - i, encode_postings([last + 1 + i], [1], [3], [-1])) for i in range(n)),
        )
        conn.execute("UPDATE search_terms SET segs = segs + ? WHERE term = 'zebra'", (n,))

    _write(db, plant)


def provenance_rows(db: Path, n: int) -> None:
    """`n` junk provenance rows on `zebra-note` (a Page has at most four real values)."""

    def plant(conn: sqlite3.Connection) -> None:
        conn.execute(
            "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?) "
            "INSERT INTO page_provenance SELECT ?, printf('junk-%09d', i) FROM k",
            (n, SLUG),
        )

    _write(db, plant)


def title_heads(db: Path, n: int) -> None:
    """`zebra`'s title-or-path doc ids (`heads`): the real one, then `n` that name no
    document (issue 36 item 4: 6,000,000 of them cost 2 GB a call)."""

    def plant(conn: sqlite3.Connection) -> None:
        (last,) = conn.execute("SELECT max(doc_id) FROM search_docs").fetchone()
        (real,) = conn.execute("SELECT doc_id FROM search_docs WHERE ident = ?", (SLUG,)).fetchone()
        heads = pack([real, *range(last + 1, last + 1 + n)])
        conn.execute("UPDATE search_segments SET heads = ? WHERE term = 'zebra'", (heads,))

    _write(db, plant)
