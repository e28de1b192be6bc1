"""Merging a term's segment rows: which rows a merge takes, and the merged row without the
postings of dead documents.

A write batch adds one row per term (`format/segments.py`); a write that leaves a term with
more than `MAX_SEGMENTS` rows merges its newest rows into one (`merge_firsts` says which:
a posting is rewritten O(log n) times over n batches) and drops the postings of documents
no longer in `search_docs` (`LiveDocs`). A bulk write crowds most of its terms at once:
they are read by rowid and merged `MERGE_CHUNK` bytes at a time, with numpy for every term
at once (`_merge_many`) or term by term for a small merge (`_merge_one`): the same rows.
Imported only when a merge is due (numpy).
"""

from __future__ import annotations

import itertools
import operator
import sqlite3
from array import array
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from lwc_trio.memory.format import segments
from lwc_trio.memory.format.postings import decode_batch, decode_postings, encode_postings
from lwc_trio.memory.format.segments import MAX_SEGMENTS, RowKey
from lwc_trio.memory.index.grouping import Ints, encode_grouped
from lwc_trio.memory.index.parts import VECTOR_POSTINGS

__all__ = ["MERGE_CHUNK", "LiveDocs", "merge_firsts", "merge_segments"]

MERGE_CHUNK = 8 * 1024 * 1024
"""Bytes of segment rows a merge reads before it writes them back merged (estimated from
the terms' frequencies and rows, `_POSTING_BYTES` a posting and `_ROW_BYTES` a row): a bulk
write crowds most of its terms at once, and their postings together would be the whole
index."""

_POSTING_BYTES = 8
"""A posting's bytes in a segment blob, about (`postings.py`: 7, and escapes)."""
_ROW_BYTES = 256
"""What a segment row costs a merge in memory besides its postings: the Python objects of
its (term, seg, rowid) and (term, seg, postings, heads) tuples, read and merged. Most
crowded terms of a bulk write are rare ones with a few postings a row: counted by their
postings alone, a chunk held a million rows (hundreds of MB) at 40,000 Pages."""


def merge_firsts(rows: list[RowKey], end: int) -> list[tuple[str, int, int, int]]:
    """Which segments of each crowded term a merge takes: `rows` are the terms' (term,
    seg, rowid), by term and seg; per term, the indexes in `rows` of its first row, of the
    first row taken and after its last row. With numpy, every term at once.

    A term's newest segments are taken from the one returned on. At most
    `MAX_SEGMENTS // 2` of the oldest stay, each only when it is larger than every newer one
    together: over n batches a posting is rewritten O(log n) times, not n / `MAX_SEGMENTS`
    times (a merge of every segment rewrote each common term's whole postings every eighth
    batch, so bulk writes slowed down as the Wiki grew). When that would take fewer than two
    of a term's rows (it has fewer than its `segs` says), all of them are taken.

    A segment's size is the span of document ids it covers: up to the next one's seg, the
    newest up to `end` (the next document id of the write). A batch's documents have
    consecutive ids, so a term that is in every batch has postings in proportion to it. It
    comes with the index (term, seg) alone, where the blobs' lengths would cost a table
    read per row."""
    count = len(rows)
    if not count:
        return []
    terms = list(map(operator.itemgetter(0), rows))
    segs = np.fromiter(map(operator.itemgetter(1), rows), dtype=np.int64, count=count)
    fresh = np.ones(count, dtype=bool)
    fresh[1:] = np.fromiter(map(operator.ne, terms[1:], terms[:-1]), dtype=bool, count=count - 1)
    begins = np.flatnonzero(fresh)
    stops = np.append(begins[1:], count)
    lasts = stops - 1
    following = np.empty(count, dtype=np.int64)
    following[:-1] = segs[1:]
    following[lasts] = np.maximum(end, segs[lasts] + 1)
    sizes = following - segs
    before = np.cumsum(sizes) - sizes  # the sizes of the rows before each one
    totals = before[lasts] + sizes[lasts]
    rows_of = stops - begins
    first = np.minimum(MAX_SEGMENTS // 2, rows_of)
    taken = totals - before[np.minimum(begins + first, count - 1)]
    merged = np.where(first < rows_of, taken, 0)  # the sizes from `first` on
    for older in range(MAX_SEGMENTS // 2 - 1, -1, -1):
        size = sizes[np.minimum(begins + older, count - 1)]
        more = (first == older + 1) & (size <= merged)
        merged += np.where(more, size, 0)
        first[more] = older
    first[rows_of - first < 2] = 0
    starts = begins.tolist()
    return list(
        zip(
            map(terms.__getitem__, starts), starts, (begins + first).tolist(), stops.tolist(),
            strict=True,
        )
    )  # fmt: skip


def merge_segments(conn: sqlite3.Connection, crowded: list[tuple[str, int]], end: int) -> None:
    """Merge the newest segments of each `crowded` term (`segments.crowded`: those with more
    than `MAX_SEGMENTS`, with their document frequency) into one (`merge_firsts` says
    which), without the postings of documents that are gone; `end` is the next document id
    of the write.

    A bulk write's batches are alike, so its common terms all cross the bound at the same
    write. The crowded terms are taken in term order, as many at a time as `MERGE_CHUNK`
    allows (estimated from their frequencies and rows); their rows are read by rowid,
    ascending (each batch's rows lie together, in term order: reading them term by term
    would jump between batches), then merged: with numpy, every term at once (`_merge_many`),
    when they hold `VECTOR_POSTINGS` or more, else term by term (`_merge_one`). Both write
    the same rows."""
    live = LiveDocs(conn)
    kept: dict[str, int] = {}
    picked: list[RowKey] = []
    starts: list[int] = []  # where each term's rows begin in `picked`
    size = 0
    for start in range(0, len(crowded), 500):
        frequency = dict(crowded[start : start + 500])
        rows = segments.row_keys(conn, list(frequency))
        for term, begin, first, stop in merge_firsts(rows, end):
            if size >= MERGE_CHUNK:
                _merge_rows(conn, picked, starts, live, kept)
                kept, picked, starts, size = {}, [], [], 0
            kept[term] = first - begin
            starts.append(len(picked))
            picked.extend(rows[first:stop])
            size += max(frequency[term], 1) * _POSTING_BYTES + (stop - first) * _ROW_BYTES
    _merge_rows(conn, picked, starts, live, kept)


def _segment_rows(
    conn: sqlite3.Connection, picked: list[RowKey]
) -> tuple[list[bytes], list[bytes]]:
    """The postings and heads of the rows `picked` (term, seg, rowid) names, in its order,
    read by ascending rowid."""
    rowids = np.fromiter(map(operator.itemgetter(2), picked), dtype=np.int64, count=len(picked))
    order = np.argsort(rowids, kind="stable")
    ascending = rowids[order].tolist()
    found: list[tuple[int, object, object]] = []
    for start in range(0, len(ascending), 4096):
        found.extend(segments.rows_by_rowid(conn, ascending[start : start + 4096]))
    if list(map(operator.itemgetter(0), found)) != ascending:
        raise sqlite3.DatabaseError("the search index changed while it was merged")
    blobs = _blobs(list(map(operator.itemgetter(1), found)))
    heads = _blobs(list(map(operator.itemgetter(2), found)))
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    at = back.tolist()
    return list(map(blobs.__getitem__, at)), list(map(heads.__getitem__, at))


def _blobs(values: list[object]) -> list[bytes]:
    """`values`, each of which must be bytes (a cloned store can hold anything)."""
    blobs = [value for value in values if isinstance(value, bytes)]
    if len(blobs) != len(values):
        raise sqlite3.DatabaseError("the search index holds invalid postings")
    return blobs


class LiveDocs:
    """The ids of the documents in the index, read once per merge: which of some ids are
    live (`mask`), by a table of the id range, or by a binary search when the ids are too
    sparse for one (a store may hold any id up to `MAX_DOC_ID`)."""

    DENSE = 4
    """A table of the id range is used while it is at most this many times the live
    documents (plus `_TABLE_MIN` entries)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._ids: array[int] | None = None
        self._set: set[int] | None = None
        self._array: NDArray[np.int32] | None = None
        self._table: NDArray[np.bool_] | None = None

    def ids(self) -> array[int]:
        if self._ids is None:
            self._ids = array("i", [row[0] for row in self.conn.execute(
                "SELECT doc_id FROM search_docs ORDER BY doc_id"
            )])  # fmt: skip
        return self._ids

    def as_set(self) -> set[int]:
        if self._set is None:
            self._set = set(self.ids())
        return self._set

    def mask(self, values: Ints) -> NDArray[np.bool_]:
        """Which of `values` are live."""
        if self._array is None:
            self._array = np.frombuffer(self.ids(), dtype=np.int32)
            ids = self._array
            if len(ids) and int(ids[-1]) - int(ids[0]) < self.DENSE * len(ids) + _TABLE_MIN:
                self._table = np.zeros(int(ids[-1]) - int(ids[0]) + 1, dtype=bool)
                self._table[ids - ids[0]] = True
        ids = self._array
        if not len(ids):
            return np.zeros(len(values), dtype=bool)
        if self._table is not None:
            at = values - int(ids[0])
            inside = (at >= 0) & (at < len(self._table))
            return inside & self._table[np.where(inside, at, 0)]
        at = np.minimum(np.searchsorted(ids, values), len(ids) - 1)
        found: NDArray[np.bool_] = ids[at] == values
        return found


_TABLE_MIN = 1 << 16


def _merge_rows(
    conn: sqlite3.Connection,
    picked: list[RowKey],
    starts: list[int],
    live: LiveDocs,
    kept: Mapping[str, int],
) -> None:
    """Merge the rows `picked` names (term, seg, rowid: the newest segments of each term
    among them, by term and seg; `starts` where each term's begin; `kept` says how many older
    ones each term keeps)."""
    if not picked:
        return
    blobs, heads = _segment_rows(conn, picked)
    bounds = [*starts, len(picked)]
    # About 7 bytes a posting (`postings.py`): the choice of path, not the result.
    if sum(map(len, blobs)) >= 7 * VECTOR_POSTINGS:
        merged = _merge_many(blobs, heads, bounds, live)
    else:
        merged = [
            _merge_one(blobs[begin:end], heads[begin:end], live.as_set())
            for begin, end in itertools.pairwise(bounds)
        ]
    firsts = [picked[at] for at in starts]
    segments.replace_merged(
        conn, [(first, blob, head) for first, (blob, head) in zip(firsts, merged, strict=True)]
    )
    conn.executemany(
        "UPDATE search_terms SET segs = ? WHERE term = ?",
        [
            (kept[term] + (1 if blob else 0), term)
            for (term, _s, _r), (blob, _h) in zip(firsts, merged, strict=True)
        ],
    )


def _merge_one(blobs: list[bytes], heads: list[bytes], live: set[int]) -> tuple[bytes, bytes]:
    """One term's segments merged (plain Python): postings (b"" when no document of the
    term is left) and heads."""
    kept_heads: list[int] = []
    merged: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
    for blob, head_blob in zip(blobs, heads, strict=True):
        columns = decode_postings(blob)
        keep_at = [i for i, doc_id in enumerate(columns[0]) if doc_id in live]
        for into, column in zip(merged, columns, strict=True):
            into.extend(map(column.__getitem__, keep_at))
        kept_heads.extend(d for d in segments.unpack(head_blob) if d in live)
    if any(map(operator.ge, merged[0][:-1], merged[0][1:])):
        raise sqlite3.DatabaseError("the search index holds invalid postings")
    return (encode_postings(*merged) if merged[0] else b""), segments.pack(kept_heads)


def _merge_many(
    blobs: list[bytes], heads: list[bytes], bounds: list[int], live: LiveDocs
) -> list[tuple[bytes, bytes]]:
    """`_merge_one` for every term at once, with numpy (the rows of term t are
    `bounds[t]:bounds[t + 1]`): the same rows."""
    terms = len(bounds) - 1
    rows_per_term = np.asarray(bounds[1:], dtype=np.int64) - np.asarray(bounds[:-1], dtype=np.int64)
    row_term = np.repeat(np.arange(terms), rows_per_term)
    counts, ids, tws, dls, firsts = decode_batch(blobs)
    term_of = np.repeat(row_term, counts)
    keep = live.mask(ids)
    term_of, ids, tws, dls, firsts = (a[keep] for a in (term_of, ids, tws, dls, firsts))
    same_term = term_of[1:] == term_of[:-1]
    if bool((same_term & (ids[1:] <= ids[:-1])).any()):
        raise sqlite3.DatabaseError("the search index holds invalid postings")
    merged = encode_grouped(np.bincount(term_of, minlength=terms), ids, tws, dls, firsts)
    # Heads: every row's ids in row order, the live ones kept, packed per term.
    head_bytes = np.fromiter(map(len, heads), dtype=np.int64, count=len(heads))
    if bool((head_bytes % 4).any()):
        raise sqlite3.DatabaseError("the search index holds invalid postings")
    head_ids = np.frombuffer(b"".join(heads), dtype="<i4")
    head_term = np.repeat(row_term, head_bytes // 4)
    live_heads = live.mask(head_ids)
    head_ids, head_term = head_ids[live_heads], head_term[live_heads]
    head_ends = np.cumsum(np.bincount(head_term, minlength=terms)).tolist()
    head_data = head_ids.astype("<i4").tobytes()
    return [
        (blob, head_data[4 * begin : 4 * end])
        for blob, begin, end in zip(merged, [0, *head_ends[:-1]], head_ends, strict=True)
    ]
