"""The `search_segments` rows: every statement that writes or reads them, and `heads`' codec.

A row holds one term's postings of one write batch (`seg`: the batch's first doc id): the
`postings` blob (`postings.py`) and `heads`, the doc ids whose title or path holds the term,
packed as little-endian int32s (`pack`, `unpack`). Rows are appended in write order (a
rowid table) and found by term through `search_segments_by_term`. A term with more than
`MAX_SEGMENTS` rows has its newest ones merged by the next write that adds one
(`index/merge.py`), so a query reads at most that many rows per term.

The write side (`index/buffer.py`, `index/merge.py`) and the read side (`query/search.py`,
`query/fuzzy.py`, `format/typo_index.py`) both come here: the table's shape is known in
this one module (and in the DDL, `schema.py`).
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat

from lwc_trio.memory.format.schema import placeholders

__all__ = [
    "MAX_SEGMENTS",
    "RowKey",
    "append",
    "crowded",
    "drop_orphans",
    "heads_sizes",
    "pack",
    "postings",
    "postings_size",
    "read_heads",
    "replace_merged",
    "row_keys",
    "rows_by_rowid",
    "titled",
    "titled_among",
    "unpack",
]

MAX_SEGMENTS = 8
"""A term's segment rows (one per write batch) before a write merges them into one: a query
reads at most this many rows per term, and merging drops the postings of dead documents."""

_LITTLE = sys.byteorder == "little"
_CHUNK = 500
"""Terms in one `IN (...)`."""

RowKey = tuple[str, int, int]
"""A row's term, seg and rowid."""


def pack(values: Iterable[int]) -> bytes:
    """int32s, little-endian (the store is the same file on every machine): `heads`."""
    packed = values if isinstance(values, array) else _ints(values)
    if not _LITTLE:
        packed = array("i", packed)
        packed.byteswap()
    return packed.tobytes()


def _ints(values: Iterable[int]) -> array[int]:
    packed = array("i")
    packed.fromlist(values if isinstance(values, list) else list(values))
    return packed


def unpack(blob: bytes) -> array[int]:
    """The int32s of `pack`; a length that is not a multiple of 4 is a damaged index."""
    if len(blob) % 4:
        raise sqlite3.DatabaseError("the search index holds invalid postings")
    values = array("i")
    values.frombytes(blob)
    if not _LITTLE:
        values.byteswap()
    return values


# ------------------------------------------------------------------------------ write side


def append(
    conn: sqlite3.Connection,
    seg: int,
    terms: Sequence[str],
    blobs: Iterable[bytes],
    term_heads: Iterable[bytes],
) -> None:
    """One row per term of a write batch whose first doc id is `seg` (`blobs` and
    `term_heads` aligned with `terms`)."""
    conn.executemany(
        "INSERT INTO search_segments (term, seg, postings, heads) VALUES (?, ?, ?, ?)",
        zip(terms, repeat(seg, len(terms)), blobs, term_heads, strict=True),
    )


def drop_orphans(conn: sqlite3.Connection, terms: Iterable[str]) -> None:
    """Delete the rows of those of `terms` no longer in `search_terms` (no document left)."""
    conn.executemany(
        "DELETE FROM search_segments WHERE term = ? "
        "AND NOT EXISTS (SELECT 1 FROM search_terms WHERE term = ?)",
        [(term, term) for term in terms],
    )


def crowded(conn: sqlite3.Connection, terms: Sequence[str]) -> list[tuple[str, int]]:
    """Those of `terms` with more than `MAX_SEGMENTS` rows, with their document frequency."""
    found: list[tuple[str, int]] = []
    for start in range(0, len(terms), _CHUNK):
        chunk = terms[start : start + _CHUNK]
        found.extend(
            (str(row[0]), int(row[1]))
            for row in conn.execute(
                f"SELECT term, df FROM search_terms WHERE term IN ({placeholders(len(chunk))}) "
                "AND segs > ?",
                [*chunk, MAX_SEGMENTS],
            )
        )
    return found


def row_keys(conn: sqlite3.Connection, terms: Sequence[str]) -> list[RowKey]:
    """Every row of `terms` (at most `_CHUNK` of them), by term and seg."""
    return conn.execute(
        "SELECT term, seg, rowid FROM search_segments "
        f"WHERE term IN ({placeholders(len(terms))}) ORDER BY term, seg",
        list(terms),
    ).fetchall()


def rows_by_rowid(
    conn: sqlite3.Connection, rowids: Sequence[int]
) -> list[tuple[int, object, object]]:
    """The rowid, postings and heads of the rows `rowids` (ascending) names, by rowid."""
    return conn.execute(
        "SELECT rowid, postings, heads FROM search_segments "
        f"WHERE rowid IN ({placeholders(len(rowids))}) ORDER BY rowid",
        list(rowids),
    ).fetchall()


def replace_merged(conn: sqlite3.Connection, merged: Sequence[tuple[RowKey, bytes, bytes]]) -> None:
    """Write merges: for each term, its first merged row (`RowKey`) with the merged postings
    and heads. The merged row takes that row's place (by rowid: its term and seg stay, so
    the index is not touched) and the newer ones go (by range, one index seek a term); all
    of them go when no document of the term is left (empty postings)."""
    conn.executemany(
        "UPDATE search_segments SET postings = ?, heads = ? WHERE rowid = ?",
        [(blob, head, rowid) for (_t, _s, rowid), blob, head in merged if blob],
    )
    conn.executemany(
        "DELETE FROM search_segments WHERE term = ? AND seg > ?",
        [(term, seg) for (term, seg, _r), blob, _h in merged if blob],
    )
    conn.executemany(
        "DELETE FROM search_segments WHERE term = ? AND seg >= ?",
        [(term, seg) for (term, seg, _r), blob, _h in merged if not blob],
    )


# ------------------------------------------------------------------------------- read side


def postings(conn: sqlite3.Connection, terms: Sequence[str]) -> Iterator[tuple[str, object]]:
    """Each row's term and postings blob (unchecked: `postings.decode_postings` checks it),
    for `terms` (at most `_CHUNK` of them), by term and seg (write order)."""
    for term, blob in conn.execute(
        "SELECT term, postings FROM search_segments "
        f"WHERE term IN ({placeholders(len(terms))}) ORDER BY term, seg",
        list(terms),
    ):
        yield str(term), blob


def postings_size(conn: sqlite3.Connection, terms: Sequence[str]) -> tuple[int, int]:
    """How many rows `terms` (at most `_CHUNK` of them) have, and their postings' bytes in
    all: what SQLite knows without loading a blob."""
    rows, size = conn.execute(
        "SELECT count(*), total(length(postings)) FROM search_segments "
        f"WHERE term IN ({placeholders(len(terms))})",
        list(terms),
    ).fetchone()
    return int(rows), int(size)


def heads_sizes(
    conn: sqlite3.Connection, term: str, limit: int
) -> list[tuple[int, object, object]]:
    """The first `limit` rows of `term`, by seg: each one's rowid, and its `heads`' SQLite
    type and length in bytes (unchecked: a cloned store can hold anything)."""
    return conn.execute(
        "SELECT rowid, typeof(heads), length(heads) FROM search_segments "
        "WHERE term = ? ORDER BY seg LIMIT ?",
        (term, limit),
    ).fetchall()


def read_heads(conn: sqlite3.Connection, rowid: int, count: int) -> array[int]:
    """The first `count` doc ids of row `rowid`'s heads (a blob checked to hold them:
    `heads_sizes`), read through incremental blob I/O: no more of the blob is loaded."""
    with conn.blobopen("search_segments", "heads", rowid, readonly=True) as blob:
        return unpack(blob.read(4 * count))


def titled(conn: sqlite3.Connection) -> Iterator[str]:
    """Every term some document's title or path holds (a row's heads are not empty); a
    value that is not text (a hostile store) is no term."""
    for (term,) in conn.execute(
        "SELECT DISTINCT term FROM search_segments WHERE length(heads) > 0"
    ):
        if isinstance(term, str):
            yield term


def titled_among(conn: sqlite3.Connection, terms: Sequence[str]) -> Iterator[str]:
    """`titled`, among `terms` (at most `_CHUNK` of them)."""
    for (term,) in conn.execute(
        f"SELECT DISTINCT term FROM search_segments WHERE term IN ({placeholders(len(terms))}) "
        "AND length(heads) > 0",
        list(terms),
    ):
        if isinstance(term, str):
            yield term
