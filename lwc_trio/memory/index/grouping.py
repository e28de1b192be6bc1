"""A large write batch's postings grouped by term and encoded, with numpy.

Postings come document after document, each with its key's number (a body word or an index
term: `document.py`); the index stores them term after term. `rank_postings` gives each
posting its term's rank, `group_postings` sorts a range of terms at a time (radix passes,
`GROUP_BUCKET` postings at most) and sums the postings of one document's words sharing a
stem, and `encoded_parts` encodes them (`postings.encode_batch`) part after part
(`ENCODE_CHUNK` postings at most), so the temporaries stay small whatever the batch. Used by
the index buffer from `parts.VECTOR_POSTINGS` postings on and by a bulk import's analysis
process (`held.py`); a small write never imports it (nor numpy).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from lwc_trio.memory.format.postings import encode_batch
from lwc_trio.memory.index.parts import EncodedPart

__all__ = [
    "ENCODE_CHUNK",
    "GROUP_BUCKET",
    "Grouped",
    "RankedPostings",
    "bucket_parts",
    "buffer_parts",
    "encode_grouped",
    "encoded_parts",
    "group_postings",
    "ranges",
    "rank_postings",
]

ENCODE_CHUNK = 250_000
"""Postings `encode_batch` packs per call at a flush: its temporaries (a dozen int64
arrays of that length) stay small whatever the batch."""

GROUP_BUCKET = 1_000_000
"""Postings sorted by term at a time (`group_postings`): a batch's are grouped a range of
terms after another, so the sort's temporaries (a few arrays of this length) stay small
whatever the batch (a 10,000-Page batch has over 5 million postings)."""

Int32s = NDArray[np.int32]
Ints = NDArray[np.integer]
"""Integers of any width: the columns of postings read back (int64) or grouped (int32)."""


class Grouped(NamedTuple):
    """Postings grouped by (term, document), sorted so, a row per group: documents are told
    by their place among the grouped ones (`at`), so that an analysis process can group
    its Pages' postings before the writer gives them doc ids (in the same order)."""

    terms: list[str]
    """The terms (sorted); `ranks` index them."""
    ranks: Int32s
    at: Int32s
    tws: Ints
    """The weighted counts of the document's words sharing the term's stem, summed."""
    firsts: Int32s
    """The earliest first offset in the snippet text (−1: none)."""
    docs: int
    """How many documents were grouped (`at` is below)."""


class RankedPostings(NamedTuple):
    """Postings given document after document, each with its term's rank among `terms`
    (sorted): `rank_postings`, then `group_postings`."""

    terms: list[str]
    ranks: Int32s
    tws: Int32s
    firsts: Int32s
    docs: Int32s
    """Per posting, its document."""
    documents: int
    """How many documents there are."""


Columns = tuple["array[int]", "array[int]", "array[int]"]
"""Postings document after document: key numbers, weighted counts, first offsets (int32)."""


def rank_postings(
    numbers: Sequence[int], key_terms: Sequence[str], columns: Columns, per_doc: array[int]
) -> RankedPostings:
    """`columns` of postings given document after document, `per_doc` each document's
    number of postings; `numbers` the keys and, aligned, `key_terms` their index terms
    (several keys, words sharing a stem, may have one): each posting's term ranked."""
    terms = sorted(set(key_terms))
    kids, tws, firsts = (np.frombuffer(column, np.int32) for column in columns)
    sizes = np.frombuffer(per_doc, np.int32)
    docs = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    if not len(kids):
        return RankedPostings(terms, np.zeros(0, dtype=np.int32), tws, firsts, docs, len(sizes))
    rank_of = dict(zip(terms, range(len(terms)), strict=True))
    key_rank = np.zeros(max(numbers) + 1, dtype=np.int32)
    key_rank[np.asarray(numbers, dtype=np.int64)] = list(map(rank_of.__getitem__, key_terms))
    return RankedPostings(terms, key_rank[kids], tws, firsts, docs, len(sizes))


def group_postings(ranked: RankedPostings) -> Iterator[Grouped]:
    """`ranked` grouped by (term, document), the postings of one document's words sharing
    a stem summed: a range of terms of about `GROUP_BUCKET` postings at a time, in term
    order (each `Grouped`'s terms are its range's, its ranks within it)."""
    terms, ranks, tws, firsts, docs, documents = ranked
    if not len(ranks):
        return
    for low, high, _begin, _end in ranges(np.bincount(ranks, minlength=len(terms)), GROUP_BUCKET):
        # The range's postings, in their order: document after document.
        chosen = None if low == 0 and high == len(terms) else np.flatnonzero(
            (ranks >= low) & (ranks < high)
        )  # fmt: skip
        local = ranks - low if chosen is None else ranks[chosen] - low
        # By (term, document): a stable sort by term alone is enough; by its two 16-bit
        # halves, each a radix sort (one when the range holds fewer than 2**16 terms).
        order = np.argsort((local & 0xFFFF).astype(np.uint16), kind="stable")
        if high - low > 1 << 16:
            order = order[np.argsort((local[order] >> 16).astype(np.uint16), kind="stable")]
        local = local[order]
        at = order if chosen is None else chosen[order]
        del order, chosen
        doc = docs[at]
        fresh = np.empty(len(at), dtype=bool)
        fresh[:1] = True
        np.not_equal(local[1:], local[:-1], out=fresh[1:])
        fresh[1:] |= doc[1:] != doc[:-1]
        starts = np.flatnonzero(fresh)
        del fresh
        g_tws = np.add.reduceat(tws[at], starts)
        # Not in the snippet text (−1) sorts after every offset; the smallest one is the first.
        g_firsts = np.minimum.reduceat(firsts[at].view(np.uint32), starts).view(np.int32)
        yield Grouped(
            terms[low:high],
            local[starts].astype(np.int32),
            doc[starts],
            g_tws,
            g_firsts,
            documents,
        )


def buffer_parts(
    numbers: list[int],
    key_terms: list[str],
    columns: Columns,
    per_doc: array[int],
    doc_ids: array[int],
    doc_lengths: array[int],
    dead: list[int],
) -> Iterator[EncodedPart]:
    """An index buffer's postings (`columns`, `per_doc`: see `rank_postings`) grouped by
    term and encoded, given its documents' ids (ascending) and lengths and the ids of those
    taken out again (`dead`)."""
    ids = np.frombuffer(doc_ids, np.int32)
    if len(ids) > 1 and not bool((ids[1:] > ids[:-1]).all()):
        raise RuntimeError("an index buffer's documents are not in ascending id order")
    ranked = rank_postings(numbers, key_terms, columns, per_doc)
    lengths = np.frombuffer(doc_lengths, np.int32)
    return bucket_parts(group_postings(ranked), ids, lengths, dead)


def bucket_parts(
    buckets: Iterable[Grouped], ids_of: Ints, lengths_of: Ints, dead: list[int]
) -> Iterator[EncodedPart]:
    """The groups of `buckets` (`group_postings`) encoded (`encoded_parts`), given the doc
    id and length of each of their documents."""
    for grouped in buckets:
        yield from encoded_parts(grouped, ids_of, lengths_of, dead)


def encoded_parts(
    grouped: Grouped, ids_of: Ints, lengths_of: Ints, dead: list[int]
) -> Iterator[EncodedPart]:
    """`grouped`'s postings encoded, given the doc id (−1: the document was not written, an
    unchanged Page) and the length of the document at each place: parts of about
    `ENCODE_CHUNK` postings, whose temporaries stay small whatever the batch. A term only
    in documents not written is left out."""
    terms = grouped.terms
    ranks: Ints = grouped.ranks
    ids: Ints = ids_of[grouped.at]
    lengths: Ints = lengths_of[grouped.at]
    tws: Ints = grouped.tws
    firsts: Ints = grouped.firsts
    written = ids >= 0
    if not bool(written.all()):
        ranks, ids, tws, firsts, lengths = (
            column[written] for column in (ranks, ids, tws, firsts, lengths)
        )
    counts = np.bincount(ranks, minlength=len(terms))
    if dead:
        keep = ~np.isin(ids, np.asarray(dead, dtype=np.int32))
        ranks, ids, tws, firsts, lengths = (
            column[keep] for column in (ranks, ids, tws, firsts, lengths)
        )
    live = np.bincount(ranks, minlength=len(terms))
    del ranks
    for first_term, last, begin, end in ranges(live, ENCODE_CHUNK):
        blobs = encode_grouped(
            live[first_term:last], ids[begin:end], tws[begin:end], lengths[begin:end],
            firsts[begin:end],
        )  # fmt: skip
        part_counts = counts[first_term:last]
        kept = (part_counts > 0).tolist()
        yield (
            list(compress(terms[first_term:last], kept)),
            part_counts[part_counts > 0].tolist(),
            list(compress(blobs, kept)),
        )


def encode_grouped(counts: Ints, ids: Ints, tws: Ints, dls: Ints, firsts: Ints) -> list[bytes]:
    """Each term's blob (b"": no posting), given every term's number of postings (`counts`)
    and the postings' columns term after term: `encode_batch` on at most about
    `ENCODE_CHUNK` postings at a time."""
    present = np.flatnonzero(counts)
    sizes = counts[present]
    blobs = [b""] * len(counts)
    for first_term, last, begin, end in ranges(sizes, ENCODE_CHUNK):
        encoded = encode_batch(
            sizes[first_term:last], ids[begin:end], tws[begin:end], dls[begin:end],
            firsts[begin:end],
        )  # fmt: skip
        for at, blob in zip(present[first_term:last].tolist(), encoded, strict=True):
            blobs[at] = blob
    return blobs


def ranges(sizes: Ints, limit: int) -> Iterator[tuple[int, int, int, int]]:
    """`sizes` cut into consecutive ranges of about `limit` in all (at least one item each):
    each range's first and past-last index, and where it begins and ends in the running sum
    of `sizes` (the postings of terms given term after term)."""
    ends = np.cumsum(sizes)
    first = 0
    while first < len(sizes):
        begin = int(ends[first] - sizes[first])
        last = max(int(np.searchsorted(ends, begin + limit, side="right")), first + 1)
        yield first, last, begin, int(ends[last - 1])
        first = last
