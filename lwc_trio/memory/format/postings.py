"""The packed postings of one `search_segments` row: encode at write, decode at read.

A blob holds n postings of one term, ascending by doc id:

    n                      uint32
    doc id gaps            n × uint16   (the first gap is the first id itself)
    weighted counts        n × uint8
    document lengths       n × uint16
    first offsets + 1      n × uint16   (0: the term is not in the snippet text)
    escaped values         e × uint32

all little-endian. A value that does not fit its column (or equals the column's largest
value) is stored there as that largest value, the escape, and its real value follows among
the escaped values, column after column and in posting order within a column. Most
postings take 7 bytes (format 4 took 16); any int32 value still round-trips.

Two codecs compute the same bytes: plain Python for the few postings of a small write or of
one query term (a small store never imports numpy), numpy for a bulk write's batch (every
term of it at once) and for large segments. Decoding checks what a cloned repository could
have planted: whole postings, ascending distinct positive doc ids, positive counts, values
within int32.
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from collections.abc import Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Ints: TypeAlias = NDArray[np.integer] | Sequence[int]

__all__ = [
    "MAX_VALUE",
    "Columns",
    "decode_batch",
    "decode_postings",
    "encode_batch",
    "encode_postings",
    "posting_count",
]

MAX_VALUE = 2**31 - 1
"""The largest doc id, count, length or offset a posting holds (int32)."""

Columns = tuple["array[int]", "array[int]", "array[int]", "array[int]"]
"""Postings by column: doc ids (ascending), weighted counts, lengths, first offsets (−1: none)."""

_CODES = ("H", "B", "H", "H")
_WIDTHS = (2, 1, 2, 2)
_ESCAPES = (0xFFFF, 0xFF, 0xFFFF, 0xFFFF)
_ROW = sum(_WIDTHS)
_HEADER = 4
_LITTLE = sys.byteorder == "little"
_MINUS_ONE = (-1).__add__
_PLUS_ONE = (1).__add__


def _invalid() -> sqlite3.DatabaseError:
    return sqlite3.DatabaseError("the search index holds invalid postings")


def _le(values: array[int]) -> bytes:
    if not _LITTLE:  # pragma: no cover - big-endian machines
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _from_le(code: str, data: bytes) -> array[int]:
    values = array(code)
    values.frombytes(data)
    if not _LITTLE:  # pragma: no cover - big-endian machines
        values.byteswap()
    return values


def encode_postings(
    ids: Sequence[int], tws: Sequence[int], dls: Sequence[int], firsts: Sequence[int]
) -> bytes:
    """One term's postings (at least one, ids ascending) as a blob (plain Python)."""
    n = len(ids)
    gaps = [ids[0], *map(int.__sub__, ids[1:], ids[:-1])]
    columns = (gaps, list(tws), list(dls), list(map(_PLUS_ONE, firsts)))
    parts = [n.to_bytes(_HEADER, "little")]
    escaped: list[int] = []
    for values, code, escape in zip(columns, _CODES, _ESCAPES, strict=True):
        if max(values) >= escape:
            escaped.extend(value for value in values if value >= escape)
            values = [min(value, escape) for value in values]
        parts.append(_le(array(code, values)))
    parts.append(_le(array("I", escaped)))
    return b"".join(parts)


def posting_count(blob: object) -> int:
    """How many postings `blob` holds, after checking its size; DatabaseError if damaged."""
    if not isinstance(blob, bytes) or len(blob) < _HEADER + _ROW:
        raise _invalid()
    n = int.from_bytes(blob[:_HEADER], "little")
    rest = len(blob) - _HEADER - _ROW * n
    if n < 1 or rest < 0 or rest % 4:
        raise _invalid()
    return n


def decode_postings(blob: object, *, vectorized: bool = False) -> Columns:
    """The columns of a blob (`vectorized`: with numpy, for large ones); DatabaseError when
    it is damaged. Both ways return the same values and refuse the same blobs."""
    n = posting_count(blob)
    assert isinstance(blob, bytes)  # posting_count checked
    if vectorized:
        return _decode_numpy(blob, n)
    columns: list[Sequence[int]] = []
    start = _HEADER
    for code, width in zip(_CODES, _WIDTHS, strict=True):
        columns.append(_from_le(code, blob[start : start + n * width]))
        start += n * width
    escaped = _from_le("I", blob[start:])
    if escaped:
        used = 0
        for c, escape in enumerate(_ESCAPES):
            column = columns[c]
            if escape in column:
                values = list(column)
                for i, value in enumerate(values):
                    if value == escape:
                        if used == len(escaped):
                            raise _invalid()
                        values[i] = escaped[used]
                        used += 1
                columns[c] = values
        if used != len(escaped):
            raise _invalid()
    elif any(escape in column for column, escape in zip(columns, _ESCAPES, strict=True)):
        raise _invalid()
    gaps, tws, dls, plus_one = columns
    if min(gaps) < 1 or min(tws) < 1:
        raise _invalid()
    try:
        return (
            array("i", accumulate(gaps)),
            array("i", tws),
            array("i", dls),
            array("i", map(_MINUS_ONE, plus_one)),
        )
    except OverflowError:
        raise _invalid() from None


# numpy is imported by the functions that use it, for start-up speed: a small store's
# reads and writes never load it (about 0.1 s).


def _decode_numpy(blob: bytes, n: int) -> Columns:
    import numpy as np

    columns = []
    start = _HEADER
    for width in _WIDTHS:
        dtype = "<u2" if width == 2 else "u1"
        columns.append(np.frombuffer(blob, dtype, n, start).astype(np.int64))
        start += n * width
    escaped = np.frombuffer(blob, "<u4", offset=start).astype(np.int64)
    used = 0
    for column, escape in zip(columns, _ESCAPES, strict=True):
        where = np.flatnonzero(column == escape)
        if len(where):
            if used + len(where) > len(escaped):
                raise _invalid()
            column[where] = escaped[used : used + len(where)]
            used += len(where)
    if used != len(escaped):
        raise _invalid()
    gaps, tws, dls, plus_one = columns
    ids = np.cumsum(gaps)
    if gaps.min() < 1 or tws.min() < 1 or ids[-1] > MAX_VALUE:
        raise _invalid()
    if tws.max() > MAX_VALUE or dls.max() > MAX_VALUE or plus_one.max() > MAX_VALUE:
        raise _invalid()
    out: list[array[int]] = []
    for column in (ids, tws, dls, plus_one - 1):
        values = array("i")
        values.frombytes(column.astype(np.int32).tobytes())
        out.append(values)
    return out[0], out[1], out[2], out[3]


def encode_batch(counts: Ints, ids: Ints, tws: Ints, dls: Ints, firsts: Ints) -> list[bytes]:
    """The blobs of many terms at once (numpy): `counts` are each term's number of postings
    (each ≥ 1), the other arrays the postings of every term one term after the other, ids
    ascending within a term. The same bytes as `encode_postings` term by term."""
    import numpy as np

    counts = np.asarray(counts, dtype=np.int64)
    ids = np.asarray(ids, dtype=np.int64)
    terms = len(counts)
    starts = np.cumsum(counts) - counts
    term_of = np.repeat(np.arange(terms), counts)
    gaps = ids.copy()
    gaps[1:] -= ids[:-1]
    gaps[starts] = ids[starts]
    columns = (
        gaps,
        np.asarray(tws, dtype=np.int64),
        np.asarray(dls, dtype=np.int64),
        np.asarray(firsts, dtype=np.int64) + 1,
    )
    masks = [column >= escape for column, escape in zip(columns, _ESCAPES, strict=True)]
    per_column = [np.bincount(term_of[mask], minlength=terms) for mask in masks]
    escaped = sum(per_column)
    sizes = _HEADER + _ROW * counts + 4 * escaped
    bases = np.cumsum(sizes) - sizes
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    for byte in range(_HEADER):
        out[bases + byte] = (counts >> (8 * byte)) & 0xFF
    within = np.arange(len(ids)) - starts[term_of]
    offset = np.full(terms, _HEADER, dtype=np.int64)
    for column, width, escape in zip(columns, _WIDTHS, _ESCAPES, strict=True):
        low = np.minimum(column, escape)
        where = bases[term_of] + offset[term_of] + width * within
        for byte in range(width):
            out[where + byte] = (low >> (8 * byte)) & 0xFF
        offset += width * counts
    # Escaped values: after the columns, column after column, posting order within each.
    for column, mask, in_column in zip(columns, masks, per_column, strict=True):
        chosen = np.flatnonzero(mask)
        if len(chosen):
            owner = term_of[chosen]
            first_of_term = np.cumsum(in_column) - in_column
            rank = np.arange(len(chosen)) - first_of_term[owner]
            where = bases[owner] + offset[owner] + 4 * rank
            values = column[chosen]
            for byte in range(4):
                out[where + byte] = (values >> (8 * byte)) & 0xFF
        offset += 4 * in_column
    data = out.tobytes()
    ends = (bases + sizes).tolist()
    return [data[b:e] for b, e in zip(bases.tolist(), ends, strict=True)]


Decoded = tuple[
    "NDArray[np.int64]", "NDArray[np.int64]", "NDArray[np.int64]", "NDArray[np.int64]",
    "NDArray[np.int64]",
]  # fmt: skip
"""`decode_batch`'s arrays: postings per blob, doc ids, weighted counts, lengths, first
offsets."""


def decode_batch(blobs: Sequence[bytes]) -> Decoded:
    """The postings of many blobs at once (numpy): each blob's number of postings, then doc
    ids, weighted counts, lengths and first offsets of every blob one after the other (int64
    arrays). The same values as `decode_postings` blob by blob, and the same blobs refused."""
    import numpy as np

    if not set(map(type, blobs)) <= {bytes}:
        raise _invalid()
    sizes = np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs))
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    bases = np.cumsum(sizes) - sizes
    # `posting_count`'s checks, every blob at once.
    if bool((sizes < _HEADER + _ROW).any()):
        raise _invalid()
    counts = np.zeros(len(blobs), dtype=np.int64)
    for byte in range(_HEADER):
        counts |= data[bases + byte].astype(np.int64) << (8 * byte)
    rest = sizes - _HEADER - _ROW * counts
    if bool((counts < 1).any() or (rest < 0).any() or (rest % 4).any()):
        raise _invalid()
    starts = np.cumsum(counts) - counts
    owner = np.repeat(np.arange(len(blobs)), counts)
    within = np.arange(int(counts.sum()), dtype=np.int64) - starts[owner]
    offset = bases + _HEADER
    columns: list[NDArray[np.int64]] = []
    for width in _WIDTHS:
        where = offset[owner] + width * within
        column = data[where].astype(np.int64)
        for byte in range(1, width):
            column |= data[where + byte].astype(np.int64) << (8 * byte)
        columns.append(column)
        offset = offset + width * counts
    # Escaped values follow the columns: column after column, posting order within each.
    escaped = (bases + sizes - offset) // 4
    used = np.zeros(len(blobs), dtype=np.int64)
    for column, escape in zip(columns, _ESCAPES, strict=True):
        chosen = np.flatnonzero(column == escape)
        if len(chosen):
            own = owner[chosen]
            per_blob = np.bincount(own, minlength=len(blobs))
            rank = np.arange(len(chosen)) - (np.cumsum(per_blob) - per_blob)[own] + used[own]
            if bool((rank >= escaped[own]).any()):
                raise _invalid()
            where = offset[own] + 4 * rank
            value = data[where].astype(np.int64)
            for byte in range(1, 4):
                value |= data[where + byte].astype(np.int64) << (8 * byte)
            column[chosen] = value
            used += per_blob
    if bool((used != escaped).any()):
        raise _invalid()
    gaps, tws, dls, plus_one = columns
    if len(gaps) and (int(gaps.min()) < 1 or int(tws.min()) < 1):
        raise _invalid()
    running = np.cumsum(gaps)
    ids = running - (running[starts] - gaps[starts])[owner]
    if len(ids) and max(int(ids.max()), int(tws.max()), int(dls.max()), int(plus_one.max())) > (
        MAX_VALUE
    ):
        raise _invalid()
    return counts, ids, tws, dls, plus_one - 1
