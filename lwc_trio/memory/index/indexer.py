"""The search index's write side: what the CLI stores per document (SPEC §4 "Search").

Everything a query would otherwise redo per candidate is worked out here, once per write: the
analyzed title and path (whole-query pull-up), the generic flag (push-down), per-field term
counts and document length (BM25F), and where each term first occurs in the snippet text.
Runs inside the writer's transaction; the reader side is `search.py`.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import operator
import sqlite3
import sys
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from itertools import accumulate, compress, islice, repeat
from pathlib import PurePosixPath
from typing import Any, NamedTuple, Protocol

from lwc_trio.exceptions import StoreError
from lwc_trio.memory.format.postings import (
    MAX_VALUE,
    decode_batch,
    decode_postings,
    encode_batch,
    encode_postings,
)
from lwc_trio.memory.format.schema import placeholders
from lwc_trio.memory.format.typo_index import record_words
from lwc_trio.memory.text.links import extract_links
from lwc_trio.memory.text.tokenize import (
    STOP_WORDS,
    has_cjk,
    index_terms,
    index_words,
    stem_words,
    token_spans,
)

__all__ = [
    "FIELD_WEIGHTS",
    "GENERIC_TERMS",
    "MAX_SEGMENTS",
    "SNIPPET_SCAN",
    "BatchAnalyzer",
    "EncodedPart",
    "Grouped",
    "GroupedBatch",
    "HeldBatch",
    "HeldPostings",
    "IndexBuffer",
    "PageAnalysis",
    "Placed",
    "RankedPostings",
    "ascii_words",
    "group_postings",
    "index_doc",
    "index_placed_page",
    "is_generic",
    "pack",
    "rank_postings",
    "reindex_all",
    "snippet_text",
    "unindex_doc",
    "unpack",
]

FIELD_WEIGHTS = (4, 3, 2, 1)
"""Title, path, summary, body: each occurrence's weight in a posting's count (BM25F).
Part of the format: changing them needs a format_version bump (tuned on Cranfield)."""

SNIPPET_SCAN = 20_000
"""Characters of a document's snippet text searched for the first match (a 64 MiB Source is
never read whole for a query; a match further in gives a snippet from the start)."""

# A document named or titled like this is a table of contents: pushed down unless asked for.
_GENERIC_NAMES = ("index", "overview", "readme", "toc", "contents", "table of contents")
_GENERIC_FORMS = frozenset(tuple(index_terms(name)) for name in _GENERIC_NAMES)
GENERIC_TERMS = frozenset(index_terms(" ".join(_GENERIC_NAMES[:5])))
"""Query terms that ask for generic pages (then they are not pushed down)."""


def is_generic(name: str, title_terms: list[str], name_terms: list[str] | None = None) -> bool:
    """True when the document's name (slug, file stem) or title is a generic one;
    `name_terms` are `index_terms(name)` when the caller has them."""
    named = index_terms(name) if name_terms is None else name_terms
    return tuple(named) in _GENERIC_FORMS or tuple(title_terms) in _GENERIC_FORMS


def _query_form(text: str, terms: list[str]) -> list[str]:
    """`text`'s terms as a query analyzes them, given its index `terms`."""
    if has_cjk(text):
        return [term for term, _w, _s in token_spans(text, query=True)]
    return terms


def snippet_text(body: str, summary: str | None) -> str:
    """The text a Page's snippet is cut from: its body head, or the summary when blank."""
    head = body[:SNIPPET_SCAN]
    return head if head.strip() else (summary or "")


MAX_SEGMENTS = 8
"""A term's segment rows (one per write batch) before a write merges them into one: a query
reads at most this many rows per term, and merging drops the postings of dead documents."""

MAX_DOC_ID = MAX_VALUE
_LITTLE = sys.byteorder == "little"

VECTOR_POSTINGS = 20_000
"""Postings from which a flush or merge encodes with numpy (`postings.encode_batch`, every
term at once); a small write (one `lwc page put`) never imports numpy."""


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


_PENDING_KEYS = 100_000
"""Postings whose keys are numbered at once (`IndexBuffer._number`): the keys' strings of
a whole batch would take hundreds of MB."""

_TERM = "\x00"
"""Marks a buffer key that is an index term already (else it is a body word to stem)."""


EncodedPart = tuple[list[str], list[int], list[bytes]]
"""Some of a batch's terms (sorted; a part's come after the previous part's), each with its
number of documents (the dead ones included: their unindexing subtracted them) and its live
postings' blob (b"": none)."""


class Placed(NamedTuple):
    """The documents of a bulk import's batch written so far: their places among its Pages,
    doc ids and lengths (aligned); and the doc ids taken out again (`IndexBuffer.dead`)."""

    at: array[int]
    ids: array[int]
    lengths: array[int]
    dead: list[int]


class GroupedBatch(Protocol):
    """The postings an analysis process keeps for a batch, grouped by term
    (`HeldPostings.group`, `AnalysisWorker.batch`)."""

    def words(self) -> tuple[list[str], list[str]]:
        """The body words among their keys (those in a posting: not a stop word) and,
        aligned, their stems."""
        ...

    def parts(self, placed: Placed) -> Iterator[EncodedPart]:
        """The postings of the documents written (`placed`), encoded part after part as
        they are read (`encoded_parts`); asked for at once, read after `words`."""
        ...


class IndexBuffer:
    """Postings, frequencies, vocabulary words and statistics of one write transaction.

    They are collected here and written once per transaction (`flush`), not once per
    document: a 5,000-page import writes one segment row per term instead of one row per term
    and page, and updates each term's frequency once. A document adds its postings as whole
    columns, a few C-level calls and no step per term: keyed by its body's words as they
    come (an ASCII body), not stemmed yet, or by index terms (the short fields, other text).
    The flush stems each distinct word of the batch once and groups the postings by term,
    summing the counts of words sharing a stem (`cache`, `caching`) and keeping the earliest
    first offset. A document's postings count towards its terms' frequencies at the flush
    (`df` holds what documents taken out subtract). A bulk import's postings are kept by its
    analysis process instead (`add_part`), which groups and encodes them at the flush, given
    the documents placed (`add_placed`) as their rows were written.
    """

    def __init__(self) -> None:
        self.df: Counter[str] = Counter()
        self.words: dict[str, str] = {}
        """Folded words and their index terms (short fields at once, body words at flush)."""
        self.keys: dict[str, int] = {}
        """Every key of this buffer's postings and its local number: a body word, or an
        index term after `_TERM`."""
        self.numbers = itertools.count()
        self.pending: list[str] = []
        """Keys of the latest postings, not numbered yet (`_number`)."""
        self.kids: array[int] = array("i")
        self.tws: array[int] = array("i")
        self.firsts: array[int] = array("i")
        """Per posting, document after document: local key number, weighted count, first
        offset in the snippet text (−1: not there)."""
        self.doc_ids: array[int] = array("i")
        self.doc_keys: array[int] = array("i")
        self.doc_lengths: array[int] = array("i")
        """Per document: its id, how many postings it added, its length."""
        self.part: GroupedBatch | None = None
        """Groups the postings an analysis process keeps for this batch (`add_part`)."""
        self.placed_at: array[int] = array("i")
        self.placed_ids: array[int] = array("i")
        self.placed_lengths: array[int] = array("i")
        """The `part`'s documents written: their places in it, doc ids and lengths."""
        self.heads: defaultdict[str, list[int]] = defaultdict(list)
        self.dead: set[int] = set()
        """Documents of this buffer (ids ≥ `first_doc`) taken out again before the flush."""
        self.first_doc = 0
        self.docs = 0
        self.length = 0

    def add(self, doc_id: int, length: int, keyed: dict[str, int], firsts: list[int]) -> None:
        """One document's postings: `keyed` weighted counts by key, `firsts` their first
        offsets (aligned)."""
        pending = self.pending
        pending.extend(keyed)
        self.tws.fromlist(list(keyed.values()))
        self.firsts.fromlist(firsts)
        self.doc_ids.append(doc_id)
        self.doc_keys.append(len(keyed))
        self.doc_lengths.append(length)
        if len(pending) >= _PENDING_KEYS:
            self._number()

    def add_placed(self, doc_id: int, length: int, place: int, pairs: list[str]) -> None:
        """One document whose postings an analysis process keeps (`add_part`):
        `place` is its place among them; `pairs` the words and terms its analysis learnt
        (word, term, word, term…)."""
        self.placed_at.append(place)
        self.placed_ids.append(doc_id)
        self.placed_lengths.append(length)
        if pairs:
            self.words.update(zip(pairs[::2], pairs[1::2], strict=True))

    def add_part(self, batch: GroupedBatch) -> None:
        """This batch's postings are kept by an analysis process, which encodes them at the
        flush (`batch`). Those of its Pages not placed (`add_placed`) are not written:
        their postings are left out."""
        if self.part is not None:
            raise RuntimeError("an index buffer got two grouped parts")
        self.part = batch

    def _number(self) -> None:
        """Give the pending keys their numbers: one dictionary step a posting, in C (a key
        seen before keeps its number; the numbers of new ones need not be consecutive)."""
        self.kids.extend(map(self.keys.setdefault, self.pending, self.numbers))
        self.pending = []

    def _reset(self) -> None:
        self.__init__()  # type: ignore[misc]  # the same empty buffer

    def _key_terms(self) -> tuple[list[int], list[str]]:
        """The keys' numbers and, aligned, their index terms (every new body word stemmed
        at once)."""
        self._number()
        keys = list(self.keys)
        words = [key for key in keys if key[0] != _TERM]
        self.words.update(zip(words, stem_words(words), strict=True))
        seen = self.words
        return list(self.keys.values()), [seen[k] if k[0] != _TERM else k[1:] for k in keys]

    def _parts(self) -> Iterator[EncodedPart]:
        """The buffer's postings grouped by term and encoded, part after part; `words` is
        complete once this returns (the new body words stemmed, or the analysis process's
        words added)."""
        if self.part is not None:
            if self.kids:
                raise RuntimeError("an index buffer got postings both grouped and not")
            placed = Placed(self.placed_at, self.placed_ids, self.placed_lengths, sorted(self.dead))
            parts = self.part.parts(placed)  # encoded while the words are written
            self.words.update(zip(*self.part.words(), strict=True))
            return parts
        if not self.doc_ids:
            return iter(())
        numbers, key_terms = self._key_terms()
        if len(self.kids) >= VECTOR_POSTINGS:
            return _parts_numpy(self, numbers, key_terms)
        return iter([self._grouped(numbers, key_terms)])

    def _grouped(self, numbers: list[int], key_terms: list[str]) -> EncodedPart:
        """`_parts` without numpy (a small write): one part."""
        term_of = dict(zip(numbers, key_terms, strict=True))
        by_term: dict[str, dict[int, list[int]]] = {}
        lengths: dict[int, int] = {}
        at = 0
        kids, tws, firsts = self.kids, self.tws, self.firsts
        docs = zip(self.doc_ids, self.doc_keys, self.doc_lengths, strict=True)
        for doc_id, count, length in docs:
            lengths[doc_id] = length
            for i in range(at, at + count):
                entry = by_term.setdefault(term_of[kids[i]], {}).setdefault(doc_id, [0, -1])
                entry[0] += tws[i]
                start = firsts[i]
                if start >= 0 and (entry[1] < 0 or start < entry[1]):
                    entry[1] = start
            at += count
        terms = sorted(by_term)
        counts: list[int] = []
        blobs: list[bytes] = []
        dead = self.dead
        for term in terms:
            postings = by_term[term]
            counts.append(len(postings))
            ids = [doc_id for doc_id in postings if doc_id not in dead]
            blobs.append(
                encode_postings(
                    ids,
                    [postings[d][0] for d in ids],
                    [lengths[d] for d in ids],
                    [postings[d][1] for d in ids],
                )
                if ids
                else b""
            )
        return terms, counts, blobs

    def flush(
        self, conn: sqlite3.Connection, recorded: Set[str] = frozenset(), *, crowding: bool = True
    ) -> list[str]:
        """Write what was collected (inside the same transaction) and start over; the words
        whose typo-index and `search_words` rows it wrote. `recorded` are words an earlier
        transaction of this writer already wrote those rows for (a word's stem never
        changes): they are not written again. `crowding` False says no term can pass
        `MAX_SEGMENTS` segments yet: the terms written are not looked up for a merge.

        The words are written first: an analysis process groups and encodes the postings
        meanwhile, and each part of them is written as it comes."""
        heads: dict[str, list[int]] = self.heads
        dead = self.dead
        df = self.df
        taken_out = len(df)  # terms of documents `unindex_doc` took out
        parts = self._parts()
        words = self.words
        if recorded:
            for word in words.keys() & recorded:
                del words[word]
        record_words(conn, words)
        pairs = sorted(compress(words.items(), map(operator.ne, words, words.values())))
        if pairs:
            conn.executemany("INSERT OR IGNORE INTO search_words (word, term) VALUES (?, ?)", pairs)
        if dead:
            heads = {term: [d for d in ids if d not in dead] for term, ids in heads.items()}
        packed = {term: pack(ids) for term, ids in heads.items()}
        grown: list[str] = []
        """The batch's terms with live postings, sorted (b"": every posting of the term is
        dead)."""
        for terms, counts, blobs in parts:
            written = list(compress(terms, blobs))
            if written:
                conn.executemany(
                    "INSERT INTO search_segments (term, seg, postings, heads) VALUES (?, ?, ?, ?)",
                    zip(
                        written, repeat(self.first_doc, len(written)), filter(None, blobs),
                        map(packed.get, written, repeat(b"")), strict=True,
                    ),
                )  # fmt: skip
            grown.extend(written)
            if taken_out:
                for term, count in zip(terms, counts, strict=True):
                    df[term] += count
            elif terms:
                # With no document taken out, each term of the part is in a document.
                _add_terms(conn, terms, counts, map(bool, blobs))
        if taken_out:
            added = set(grown)
            changes = sorted(term for term in df if df[term] or term in added)
            if changes:
                _add_terms(
                    conn, changes, map(df.__getitem__, changes), map(added.__contains__, changes)
                )
                gone = [(term,) for term in changes if df[term] < 0]
                if gone:
                    conn.executemany("DELETE FROM search_terms WHERE term = ? AND df <= 0", gone)
                    conn.executemany(
                        "DELETE FROM search_segments WHERE term = ? "
                        "AND NOT EXISTS (SELECT 1 FROM search_terms WHERE term = ?)",
                        [(term, term) for (term,) in gone],
                    )
            grown = list(filter(added.__contains__, changes))
        if grown and crowding:
            last = max(self.doc_ids[-1:] + self.placed_ids[-1:])
            _merge_segments(conn, grown, last + 1)
        if self.docs or self.length:
            conn.executemany(
                "INSERT INTO search_stats (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = value + excluded.value",
                [("docs", self.docs), ("length", self.length)],
            )
        self._reset()
        return list(words)


def _add_terms(
    conn: sqlite3.Connection, terms: list[str], counts: Iterable[int], segment: Iterable[bool]
) -> None:
    """Add to `terms`' frequencies (`counts`) and, where `segment`, one segment each."""
    conn.executemany(
        "INSERT INTO search_terms (term, df, segs) VALUES (?, ?, ?) ON CONFLICT (term) "
        "DO UPDATE SET df = df + excluded.df, segs = segs + excluded.segs",
        zip(terms, counts, map(int, segment), strict=True),
    )


def _numpy() -> Any:
    return importlib.import_module("numpy")


ENCODE_CHUNK = 250_000
"""Postings `encode_batch` packs per call at a flush: its temporaries (a dozen int64
arrays of that length) stay small whatever the batch."""


GROUP_BUCKET = 1_000_000
"""Postings sorted by term at a time (`group_postings`): a batch's are grouped a range of
terms after another, so the sort's temporaries (a few arrays of this length) stay small
whatever the batch (a 10,000-Page batch has over 5 million postings)."""


class Grouped(NamedTuple):
    """Postings grouped by (term, document), sorted so, a row per group: documents are told
    by their place among the grouped ones (`at`), so that an analysis process can group
    its Pages' postings before the writer gives them doc ids (in the same order)."""

    terms: list[str]
    """The terms (sorted); `ranks` index them."""
    ranks: Any
    at: Any
    tws: Any
    """The weighted counts of the document's words sharing the term's stem, summed."""
    firsts: Any
    """The earliest first offset in the snippet text (−1: none)."""
    docs: int
    """How many documents were grouped (`at` is below)."""


class RankedPostings(NamedTuple):
    """Postings given document after document, each with its term's rank among `terms`
    (sorted): `rank_postings`, then `group_postings`."""

    terms: list[str]
    ranks: Any
    tws: Any
    firsts: Any
    docs: Any
    """Per posting, its document (int32)."""
    documents: int
    """How many documents there are."""


def rank_postings(
    numbers: Sequence[int],
    key_terms: Sequence[str],
    columns: tuple[Any, Any, Any],
    per_doc: Any,
) -> RankedPostings:
    """`columns` (int32 key numbers, weighted counts, first offsets) of postings given
    document after document, `per_doc` each document's number of postings; `numbers` the
    keys and, aligned, `key_terms` their index terms (several keys, words sharing a stem,
    may have one): each posting's term ranked."""
    np = _numpy()
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
    np = _numpy()
    terms, ranks, tws, firsts, docs, documents = ranked
    if not len(ranks):
        return
    for low, high, _begin, _end in _ranges(np.bincount(ranks, minlength=len(terms)), GROUP_BUCKET):
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


def _parts_numpy(
    buffer: IndexBuffer, numbers: list[int], key_terms: list[str]
) -> Iterator[EncodedPart]:
    """`IndexBuffer._parts` with numpy: the buffer's postings grouped by term (the postings
    of one document's words sharing a stem summed)."""
    np = _numpy()
    doc_ids = np.frombuffer(buffer.doc_ids, np.int32)
    if len(doc_ids) > 1 and not bool((doc_ids[1:] > doc_ids[:-1]).all()):
        raise RuntimeError("an index buffer's documents are not in ascending id order")
    columns = (buffer.kids, buffer.tws, buffer.firsts)
    ranked = rank_postings(numbers, key_terms, columns, buffer.doc_keys)
    lengths = np.frombuffer(buffer.doc_lengths, np.int32)
    return _bucket_parts(group_postings(ranked), doc_ids, lengths, sorted(buffer.dead))


def _bucket_parts(
    buckets: Iterable[Grouped], ids_of: Any, lengths_of: Any, dead: list[int]
) -> Iterator[EncodedPart]:
    """The groups of `buckets` (`group_postings`) encoded (`encoded_parts`), given the doc
    id and length of each of their documents."""
    for grouped in buckets:
        yield from encoded_parts(grouped, ids_of, lengths_of, dead)


def encoded_parts(
    grouped: Grouped, ids_of: Any, lengths_of: Any, dead: list[int]
) -> Iterator[EncodedPart]:
    """`grouped`'s postings encoded, given the doc id (−1: the document was not written, an
    unchanged Page) and the length of the document at each place: parts of about
    `ENCODE_CHUNK` postings, whose temporaries stay small whatever the batch. A term only
    in documents not written is left out."""
    np = _numpy()
    terms = grouped.terms
    ranks, ids, lengths = grouped.ranks, ids_of[grouped.at], lengths_of[grouped.at]
    tws, firsts = grouped.tws, grouped.firsts
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
    for first_term, last, begin, end in _ranges(live, ENCODE_CHUNK):
        blobs = _encode_grouped(
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


def _encode_grouped(counts: Any, ids: Any, tws: Any, dls: Any, firsts: Any) -> list[bytes]:
    """Each term's blob (b"": no posting), given every term's number of postings (`counts`)
    and the postings' columns term after term: `encode_batch` on at most about
    `ENCODE_CHUNK` postings at a time."""
    np = _numpy()
    present = np.flatnonzero(counts)
    sizes = counts[present]
    blobs = [b""] * len(counts)
    for first_term, last, begin, end in _ranges(sizes, ENCODE_CHUNK):
        encoded = encode_batch(
            sizes[first_term:last], ids[begin:end], tws[begin:end], dls[begin:end],
            firsts[begin:end],
        )  # fmt: skip
        for at, blob in zip(present[first_term:last].tolist(), encoded, strict=True):
            blobs[at] = blob
    return blobs


def _ranges(sizes: Any, limit: int) -> Iterator[tuple[int, int, int, int]]:
    """`sizes` (a numpy int array) cut into consecutive ranges of about `limit` in all (at
    least one item each): each range's first and past-last index, and where it begins and
    ends in the running sum of `sizes` (the postings of terms given term after term)."""
    np = _numpy()
    ends = np.cumsum(sizes)
    first = 0
    while first < len(sizes):
        begin = int(ends[first] - sizes[first])
        last = max(int(np.searchsorted(ends, begin + limit, side="right")), first + 1)
        yield first, last, begin, int(ends[last - 1])
        first = last


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


def _merge_firsts(rows: list[Any], end: int) -> list[tuple[str, int, int, int]]:
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
    np = _numpy()
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


def _merge_segments(conn: sqlite3.Connection, terms: list[str], end: int) -> None:
    """Merge the newest segments of each of `terms` that has more than `MAX_SEGMENTS` into
    one (`_merge_firsts` says which), without the postings of documents that are gone; `end`
    is the next document id of the write.

    A bulk write's batches are alike, so its common terms all cross the bound at the same
    write. The crowded terms are taken in term order, as many at a time as `MERGE_CHUNK`
    allows (estimated from their frequencies and rows); their rows are read by rowid,
    ascending (each batch's rows lie together, in term order: reading them term by term
    would jump between batches), then merged: with numpy, every term at once (`_merge_many`),
    when they hold `VECTOR_POSTINGS` or more, else term by term (`_merge_one`). Both write
    the same rows."""
    crowded: list[tuple[str, int]] = []
    for start in range(0, len(terms), 500):
        chunk = terms[start : start + 500]
        crowded.extend(
            (str(row[0]), int(row[1]))
            for row in conn.execute(
                f"SELECT term, df FROM search_terms WHERE term IN ({placeholders(len(chunk))}) "
                "AND segs > ?",
                [*chunk, MAX_SEGMENTS],
            )
        )
    live = _LiveDocs(conn)
    kept: dict[str, int] = {}
    picked: list[tuple[str, int, int]] = []
    starts: list[int] = []  # where each term's rows begin in `picked`
    size = 0
    for start in range(0, len(crowded), 500):
        frequency = dict(crowded[start : start + 500])
        rows = conn.execute(
            "SELECT term, seg, rowid FROM search_segments "
            f"WHERE term IN ({placeholders(len(frequency))}) ORDER BY term, seg",
            list(frequency),
        ).fetchall()
        for term, begin, first, stop in _merge_firsts(rows, end):
            if size >= MERGE_CHUNK:
                _merge_rows(conn, picked, starts, live, kept)
                kept, picked, starts, size = {}, [], [], 0
            kept[term] = first - begin
            starts.append(len(picked))
            picked.extend(rows[first:stop])
            size += max(frequency[term], 1) * _POSTING_BYTES + (stop - first) * _ROW_BYTES
    _merge_rows(conn, picked, starts, live, kept)


def _segment_rows(
    conn: sqlite3.Connection, picked: list[tuple[str, int, int]]
) -> tuple[list[bytes], list[bytes]]:
    """The postings and heads of the rows `picked` (term, seg, rowid) names, in its order,
    read by ascending rowid."""
    np = _numpy()
    rowids = np.fromiter(map(operator.itemgetter(2), picked), dtype=np.int64, count=len(picked))
    order = np.argsort(rowids, kind="stable")
    ascending = rowids[order].tolist()
    found: list[tuple[int, bytes, bytes]] = []
    for start in range(0, len(ascending), 4096):
        chunk = ascending[start : start + 4096]
        found.extend(
            conn.execute(
                "SELECT rowid, postings, heads FROM search_segments "
                f"WHERE rowid IN ({placeholders(len(chunk))}) ORDER BY rowid",
                chunk,
            )
        )
    if list(map(operator.itemgetter(0), found)) != ascending:
        raise sqlite3.DatabaseError("the search index changed while it was merged")
    blobs, heads = (
        list(map(operator.itemgetter(1), found)),
        list(map(operator.itemgetter(2), found)),
    )
    if (set(map(type, blobs)) | set(map(type, heads))) - {bytes}:
        raise sqlite3.DatabaseError("the search index holds invalid postings")
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    at = back.tolist()
    return list(map(blobs.__getitem__, at)), list(map(heads.__getitem__, at))


class _LiveDocs:
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
        self._array: Any = None
        self._table: Any = None

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

    def mask(self, values: Any) -> Any:
        """Which of `values` (a numpy int array) are live, as a boolean array."""
        np = _numpy()
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
        return ids[at] == values


_TABLE_MIN = 1 << 16


def _merge_rows(
    conn: sqlite3.Connection,
    picked: list[tuple[str, int, int]],
    starts: list[int],
    live: _LiveDocs,
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
    # The merged row takes the place of the first one merged (by rowid: its term and seg
    # stay, so the index is not touched); the newer ones go (by range, one index seek a
    # term), and all of them when no document of the term is left.
    firsts = [picked[at] for at in starts]
    conn.executemany(
        "UPDATE search_segments SET postings = ?, heads = ? WHERE rowid = ?",
        [
            (blob, head, rowid)
            for (_t, _s, rowid), (blob, head) in zip(firsts, merged, strict=True)
            if blob
        ],
    )
    conn.executemany(
        "DELETE FROM search_segments WHERE term = ? AND seg > ?",
        [(term, seg) for (term, seg, _r), (blob, _h) in zip(firsts, merged, strict=True) if blob],
    )
    conn.executemany(
        "DELETE FROM search_segments WHERE term = ? AND seg >= ?",
        [
            (term, seg)
            for (term, seg, _r), (blob, _h) in zip(firsts, merged, strict=True)
            if not blob
        ],
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
        kept_heads.extend(d for d in unpack(head_blob) if d in live)
    if any(map(operator.ge, merged[0][:-1], merged[0][1:])):
        raise sqlite3.DatabaseError("the search index holds invalid postings")
    return (encode_postings(*merged) if merged[0] else b""), pack(kept_heads)


def _merge_many(
    blobs: list[bytes], heads: list[bytes], bounds: list[int], live: _LiveDocs
) -> list[tuple[bytes, bytes]]:
    """`_merge_one` for every term at once, with numpy (the rows of term t are
    `bounds[t]:bounds[t + 1]`): the same rows."""
    np = _numpy()
    terms = len(bounds) - 1
    row_term = np.repeat(np.arange(terms), np.diff(np.asarray(bounds, dtype=np.int64)))
    counts, ids, tws, dls, firsts = decode_batch(blobs)
    term_of = np.repeat(row_term, counts)
    keep = live.mask(ids)
    term_of, ids, tws, dls, firsts = (a[keep] for a in (term_of, ids, tws, dls, firsts))
    same_term = term_of[1:] == term_of[:-1]
    if bool((same_term & (ids[1:] <= ids[:-1])).any()):
        raise sqlite3.DatabaseError("the search index holds invalid postings")
    merged = _encode_grouped(np.bincount(term_of, minlength=terms), ids, tws, dls, firsts)
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


def unindex_doc(
    conn: sqlite3.Connection, doc_type: str, ident: str, buffer: IndexBuffer | None = None
) -> None:
    """Take one document out of the index (no-op when absent): its row and frequencies go;
    its postings stay behind, dead, until its terms' segments are merged.

    Call it before the document's `pages` or `sources` row changes: its terms are not stored
    (format 4 kept them, a fifth of the store) but worked out again from that row's text,
    with the same analyzer that indexed it (a format change reindexes every document)."""
    row = conn.execute(
        "SELECT doc_id, length FROM search_docs WHERE doc_type = ? AND ident = ?",
        (doc_type, ident),
    ).fetchone()
    if row is None:
        return
    own = buffer or IndexBuffer()
    doc_id, length = int(row[0]), int(row[1])
    if doc_type == "page":
        text = conn.execute(
            "SELECT slug, title, summary, body FROM pages WHERE slug = ?", (ident,)
        ).fetchone()
        fields = None if text is None else (text[1], text[0], text[2] or "", text[3])
    else:
        text = conn.execute(
            "SELECT title, origin, content FROM sources WHERE id = ?", (ident,)
        ).fetchone()
        fields = None if text is None else (text[0], text[1] or "", "", text[2])
    if fields is None:
        raise StoreError(
            "store_needs_recovery",
            f"the search index holds a {doc_type} that is gone: run `lwc repair`",
        )
    terms = _terms_of(_analyze(fields, "", own.words).keyed)
    conn.execute("DELETE FROM search_docs WHERE doc_id = ?", (doc_id,))
    df = own.df
    for term in terms:
        df[term] = df.get(term, 0) - 1
    if own.first_doc and doc_id >= own.first_doc:
        own.dead.add(doc_id)  # its postings are still in the buffer
    own.docs -= 1
    own.length -= length
    if buffer is None:
        own.flush(conn)


def _first_offsets_spans(text: str) -> dict[str, int]:
    """Where each term first occurs in `text` (code points), from the analyzer's spans."""
    first: dict[str, int] = {}
    for term, _word, start in token_spans(text):
        first.setdefault(term, start)
    return first


# tokenize's ASCII words are the runs of `[^\W_]` (re.ASCII): letters and digits. Every other
# ASCII character becomes a space, one for one, so offsets in the translated text are offsets
# in the original.
_ASCII_SPACED = str.maketrans({c: c if chr(c).isalnum() else 32 for c in range(128)})
_PLUS_ONE = (1).__add__


def ascii_words(text: str) -> tuple[Counter[str], int, dict[str, int]]:
    """For ASCII `text`: its non-stop words' counts (first-seen order), how many there are,
    and where each word first occurs, as `tokenize.plain_words` and the analyzer's spans
    give them (a property test checks): `_ascii_body`'s figures, in reading order."""
    counts, total, firsts = _ascii_body(text)
    first = dict(zip(counts, firsts, strict=True))
    ordered = Counter({word: counts[word] for word in sorted(first, key=first.__getitem__)})
    return ordered, total, first


def _ascii_body(text: str) -> tuple[Counter[str], int, list[int]]:
    """For ASCII `text`: its non-stop words' counts, how many there are, and where each
    word first occurs, aligned with the counts' keys (the write path's hottest function).

    Separators become single spaces and `split(" ")` cuts there: each part (a word, or the
    empty string between two separators) starts one past the end of the previous one, so
    every offset is a running sum of lengths, all in C: no regex, no per-word search. The
    counts and the offsets are both built from the parts in reverse, so both keep their keys
    in the same order (each word's last occurrence, backwards) and the offsets keep each
    word's first one (the last written): no lookup a word to align them."""
    parts = text.lower().translate(_ASCII_SPACED).split(" ")
    starts = list(accumulate(map(_PLUS_ONE, map(len, parts)), initial=0))
    starts.pop()
    backwards = parts[::-1]
    first = dict(zip(backwards, reversed(starts), strict=True))
    counts = Counter(backwards)
    total = len(parts) - counts.pop("", 0)
    first.pop("", None)
    for stop in STOP_WORDS.intersection(counts):
        total -= counts.pop(stop)
        del first[stop]
    return counts, total, list(first.values())


_WIDE = 16
"""Characters of a body word `_ascii_bodies` compares as numbers (two uint64); a longer word
(rare in prose, hashes and base64 are) also gets a number from a dict."""


@functools.cache
def _byte_tables() -> tuple[Any, Any, Any]:
    """Per byte: whether it is an ASCII letter or digit, the byte lowercased; per n ≤ 8, the
    uint64 mask of a word's first n bytes (little-endian)."""
    np = _numpy()
    letters = np.array([chr(c).isalnum() for c in range(128)] + [False] * 128, dtype=bool)
    lower = np.arange(256, dtype=np.uint8)
    lower[ord("A") : ord("Z") + 1] += ord("a") - ord("A")
    masks = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
    return letters, lower, masks


@functools.cache
def _stop_words64() -> Any:
    """`STOP_WORDS` as the first half of `_Bodies.halves` (each is shorter than 8 letters)."""
    if max(map(len, STOP_WORDS)) >= 8:
        raise RuntimeError("a stop word of 8 letters or more")
    words = sorted(word.encode("ascii").ljust(8, b"\0") for word in STOP_WORDS)
    return _numpy().frombuffer(b"".join(words), dtype="<u8")


_MIX = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9)


def _hashed(halves: tuple[Any, Any]) -> Any:
    """A uint64 per word from its two halves: equal words hash equal (different ones may
    too, rarely: a lookup by it checks both halves)."""
    np = _numpy()
    with np.errstate(over="ignore"):
        return (halves[0] ^ (halves[1] * np.uint64(_MIX[0]))) * np.uint64(_MIX[1])


class _Bodies(NamedTuple):
    """`_ascii_bodies`: the postings of many bodies, body after body."""

    halves: tuple[Any, Any]
    """The distinct words of all the bodies, each as its first `_WIDE` bytes zero-padded
    and read as two uint64; a longer word's second half is a number."""
    wide: Any
    """Per distinct word, whether it is longer than `_WIDE` (`long_words` spells it)."""
    long_words: dict[int, str]
    bounds: list[int]
    """Where each body's postings start (and, last, where they end)."""
    word: Any
    """Per posting, its word (an index into `words`); then its count, its first offset."""
    counts: Any
    firsts: Any
    totals: list[int]
    """Per body, its non-stop words (`_ascii_body`'s total)."""

    def spell(self, at: Any) -> list[str]:
        """The distinct words at indexes `at` (a numpy int array), as strings."""
        np = _numpy()
        pairs = np.stack([half[at] for half in self.halves], axis=1).astype("<u8")
        spelled: list[str] = pairs.view(f"S{_WIDE}").ravel().astype(f"U{_WIDE}").tolist()
        if self.long_words:
            for place, index in enumerate(at.tolist()):
                if index in self.long_words:
                    spelled[place] = self.long_words[index]
        return spelled


def _ascii_bodies(bodies: Sequence[str]) -> _Bodies:
    """`_ascii_body` of many ASCII bodies at once, in numpy: the per-word work of a bulk
    import's analysis, done by C loops over the bytes instead of one Python step a word.

    The bodies are joined with spaces and read as bytes; a word is a run of letters and
    digits. Each word is its first `_WIDE` lowercased bytes, zero-padded, read as two uint64
    (a longer one: its first 8 and a number from a dict), and one stable sort by them puts
    each word's occurrences together in text order: the postings of a (word, body) pair are
    a run, whose first element is the first occurrence. A property test compares the
    result with `_ascii_body` body by body. At most 2**16 bodies at once (a chunk's are
    far fewer): they are sorted by number as 16-bit integers."""
    if len(bodies) > 1 << 16:
        raise ValueError(f"{len(bodies)} bodies at once (at most {1 << 16})")
    np = _numpy()
    letters, lower, masks = _byte_tables()
    sizes = np.fromiter(map(len, bodies), dtype=np.int64, count=len(bodies))
    body_starts = np.cumsum(sizes + 1) - (sizes + 1)
    raw = np.frombuffer(" ".join(bodies).encode("ascii"), dtype=np.uint8)
    inside = letters[raw].view(np.int8)
    edges = np.diff(inside, prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    lengths = np.flatnonzero(edges == -1) - starts
    # The text lowercased, read as uint64: a word's first 8 bytes are the end of the element
    # it starts in and the start of the next one (shifted in two steps, so that a shift of 64
    # bits, the word starting an element, gives 0), its next 8 the same one element on.
    rows = (len(raw) + 7) // 8 + 2
    text = np.zeros(8 * rows, dtype=np.uint8)
    text[: len(raw)] = lower[raw]
    words = text.view("<u8")
    row = starts // 8
    low = (starts % 8 * 8).astype(np.uint64)
    high = np.uint64(63) - low
    one = np.uint64(1)
    w0, w1, w2 = words[row], words[row + 1], words[row + 2]
    first = ((w0 >> low) | ((w1 << one) << high)) & masks[np.minimum(lengths, 8)]
    second = ((w1 >> low) | ((w2 << one) << high)) & masks[np.clip(lengths - 8, 0, 8)]
    del w0, w1, w2
    # A word longer than `_WIDE` gets, in place of its second 8 bytes, its number in a dict
    # with a low byte of 1, which no word's bytes have (a letter or digit, or 0 past its end).
    long_words: dict[bytes, int] = {}
    wide = np.flatnonzero(lengths > _WIDE)
    if len(wide):
        numbered = itertools.count(1)
        second[wide] = [
            (long_words.setdefault(text[at : at + size].tobytes(), next(numbered)) << 8) | 1
            for at, size in zip(starts[wide].tolist(), lengths[wide].tolist(), strict=True)
        ]
    order = np.lexsort((second, first))
    h0, h1 = first[order], second[order]
    fresh = np.ones(len(order), dtype=bool)
    fresh[1:] = (h0[1:] != h0[:-1]) | (h1[1:] != h1[:-1])
    word_of = np.cumsum(fresh) - 1
    body_of = (np.searchsorted(body_starts, starts, side="right") - 1)[order]
    # The distinct words: their bytes, or the dict's word when longer than `_WIDE`.
    heads = order[fresh]
    halves = (first[heads], second[heads])
    wide = halves[1] & 0xFF == 1
    spelled_long: dict[int, str] = {}
    if long_words:
        by_number = {number: word.decode("ascii") for word, number in long_words.items()}
        for at in np.flatnonzero(wide).tolist():
            spelled_long[at] = by_number[int(second[heads[at]]) >> 8]
    # Stop words are shorter than 8 letters: one uint64, the second half 0.
    stop = np.isin(halves[0], _stop_words64()) & (halves[1] == 0)
    # Runs of one (word, body); the stop words' dropped, and counted out of the totals.
    run = np.ones(len(order), dtype=bool)
    run[1:] = fresh[1:] | (body_of[1:] != body_of[:-1])
    run_starts = np.flatnonzero(run)
    counts = np.diff(np.append(run_starts, len(order)))
    run_word = word_of[run_starts]
    run_body = body_of[run_starts]
    firsts = starts[order[run_starts]] - body_starts[run_body]
    kept = ~stop[run_word]
    totals = np.bincount(run_body[kept], weights=counts[kept], minlength=len(bodies))
    # Body after body (the runs are by word, then body): one radix pass.
    by_body = np.argsort(run_body[kept].astype(np.uint16), kind="stable")
    posting_body = run_body[kept][by_body]
    bounds = np.searchsorted(posting_body, np.arange(len(bodies) + 1)).tolist()
    return _Bodies(
        halves,
        wide,
        spelled_long,
        bounds,
        run_word[kept][by_body],
        counts[kept][by_body],
        firsts[kept][by_body],
        totals.astype(np.int64).tolist(),
    )


class _Analyzed(NamedTuple):
    keyed: dict[str, int]
    """Weighted counts (`FIELD_WEIGHTS`, BM25F) by buffer key: a body word, or an index term
    after `_TERM` (see `IndexBuffer`); the counts of a term's keys add up to its own."""
    firsts: list[int]
    """Where each key (in `keyed`'s order) first occurs in the snippet text (−1: not there)."""
    length: int
    title_terms: list[str]
    path_terms: list[str]
    heads: set[str]
    """The title's and path's index terms."""
    generic_path: list[str]


class _Short(NamedTuple):
    """The analysis of a document's short fields (title, path, summary)."""

    keyed: dict[str, int]
    """Their terms' weighted counts, keyed by `_TERM` + term, in first-seen order."""
    length: int
    title_terms: list[str]
    path_terms: list[str]
    heads: set[str]
    generic_path: list[str]


def _short_terms(fields: tuple[str, str, str, str], seen: dict[str, str]) -> _Short:
    """Title, path and summary of `fields` analyzed; `seen` learns their words and terms."""
    title, path = fields[0], fields[1]
    short = [index_words(text) for text in fields[:3]]
    # Title and path in the query's form (CJK pairs), for the whole-query comparison; without
    # CJK characters that is exactly their index terms.
    title_terms = _query_form(title, short[0][0])
    path_terms = _query_form(path, short[1][0])
    keyed: dict[str, int] = {}
    for (terms, field_words), weight in zip(short, FIELD_WEIGHTS[:3], strict=True):
        seen.update(zip(field_words, terms, strict=True))
        for term in terms:
            key = _TERM + term
            keyed[key] = keyed.get(key, 0) + weight
    length = sum(len(terms) for terms, _words in short)
    heads = {*short[0][0], *short[1][0]}
    return _Short(keyed, length, title_terms, path_terms, heads, short[1][0])


def _keyed_by_words(body: str, scan: str) -> bool:
    """Whether the body's postings are keyed by its words (`_ascii_body`): an ASCII body that
    is all of the snippet text scanned (or there is none), the bulk of what is written."""
    return body.isascii() and (scan is body or not scan)


def _analyze(fields: tuple[str, str, str, str], snippet: str, seen: dict[str, str]) -> _Analyzed:
    """The analysis of one document (`index_doc`), its body words left unstemmed; `seen`
    learns the short fields' words and terms. An empty `snippet` skips the first offsets."""
    short = _short_terms(fields, seen)
    length = short.length
    body = fields[3]
    scan = snippet[:SNIPPET_SCAN]
    keyed: dict[str, int]
    firsts: list[int]
    if _keyed_by_words(body, scan):
        # The body (the bulk of the work): one split, its words counted and located in C;
        # the flush stems each distinct word of the whole batch once.
        keyed, body_length, firsts = _ascii_body(body)
        if not scan:
            firsts = [-1] * len(keyed)
        length += body_length
    else:
        body_terms, body_words = index_words(body)
        seen.update(zip(body_words, body_terms, strict=True))
        keyed = {_TERM + term: count for term, count in Counter(body_terms).items()}
        length += len(body_terms)
        spans = _first_offsets_spans(scan) if scan else {}
        firsts = [spans.get(key[1:], -1) for key in keyed]
    # BM25F's weighted count: the body's counts plus the short fields', weighted. Their
    # keys are terms, never a body word: new ones come last, not in the snippet text.
    for key, weight in short.keyed.items():
        keyed[key] = keyed.get(key, 0) + weight
    firsts.extend(repeat(-1, len(keyed) - len(firsts)))
    return _Analyzed(
        keyed, firsts, length, short.title_terms, short.path_terms, short.heads,
        short.generic_path,
    )  # fmt: skip


def _terms_of(keys: Iterable[str]) -> set[str]:
    """The index terms behind buffer keys (`_Analyzed.keyed`)."""
    listed = list(keys)
    words = [key for key in listed if key[0] != _TERM]
    return {key[1:] for key in listed if key[0] == _TERM}.union(stem_words(words))


def index_doc(
    conn: sqlite3.Connection,
    doc_type: str,
    ident: str,
    fields: tuple[str, str, str, str],
    *,
    name: str,
    snippet: str,
    buffer: IndexBuffer | None = None,
) -> None:
    """Index one document that is not in the index (`unindex_doc` first, before its row
    changes): `fields` are title, path, summary, body; `name` the slug or the origin's file
    stem (generic test); `snippet` the text its snippets are cut from. Frequencies and
    statistics go to `buffer` (flushed by the caller), else are written."""
    own = buffer or IndexBuffer()
    found = _analyze(fields, snippet, own.words)
    length = found.length
    generic = is_generic(name, found.title_terms, found.generic_path if name == fields[1] else None)
    doc_id = _insert_doc(
        conn, doc_type, ident, found.title_terms, found.path_terms, generic, length
    )
    own.add(doc_id, length, found.keyed, found.firsts)
    _counted(own, doc_id, length, found.heads)
    if buffer is None:
        own.flush(conn)


def _insert_doc(
    conn: sqlite3.Connection,
    doc_type: str,
    ident: str,
    title_terms: list[str],
    path_terms: list[str],
    generic: bool,
    length: int,
) -> int:
    """The document's `search_docs` row; its new doc id."""
    cursor = conn.execute(
        "INSERT INTO search_docs (doc_type, ident, title_terms, path_terms, generic, length) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (doc_type, ident, " ".join(title_terms), " ".join(path_terms), int(generic), length),
    )
    doc_id = cursor.lastrowid
    if doc_id is None or doc_id > MAX_DOC_ID:
        raise StoreError(
            "store_needs_recovery", "the search index ran out of document ids: run `lwc repair`"
        )
    return doc_id


def _counted(own: IndexBuffer, doc_id: int, length: int, heads: Iterable[str]) -> None:
    """A document added to `own`: its title and path terms, the batch's statistics."""
    if not own.first_doc:
        own.first_doc = doc_id
    by_term = own.heads
    for term in heads:
        by_term[term].append(doc_id)
    own.docs += 1
    own.length += length


class PageAnalysis(NamedTuple):
    """What `index_page` works out from a Page's text alone, done by a `BatchAnalyzer`
    (in a bulk import's second process, `memory/index/analysis.py`)."""

    length: int
    title_terms: list[str]
    path_terms: list[str]
    heads: list[str]
    generic: bool
    pairs: list[str]
    """The words and index terms the short fields (and a body not analyzed by keys) taught,
    flat: word, term, word, term…"""
    links: list[str]
    """`links.extract_links` of the body (the Page's own slug left out)."""
    postings: int
    """How many of the chunk's posting columns are this Page's."""


ChunkColumns = tuple["array[int]", "array[int]", "array[int]"]
"""A chunk's postings, Page after Page: key numbers, weighted counts, first offsets."""


class AnalyzedChunk(NamedTuple):
    """`BatchAnalyzer.chunk`'s answer: the Pages' analyses, their postings, and the keys the
    chunk numbered first (with their numbers and index terms)."""

    pages: list[PageAnalysis]
    columns: ChunkColumns
    keys: list[str]
    numbers: array[int]
    terms: list[str]
    words: bytes
    """Per key: 1 when it is a body word (stemmed here), 0 when an index term already."""
    held: int = -1
    """−1: the postings and keys are here. Else they were kept (`held`, `without_postings`)
    and this is the place of the chunk's first Page in its batch."""


class BatchAnalyzer:
    """Analyzes Pages chunk after chunk for one write batch after another, as `index_page`
    would, numbering the postings' keys per batch (`HeldPostings` groups them by term):
    pure work on the Pages' text, no store, so another process can do it."""

    def __init__(self, first: int = 0) -> None:
        self.first = first
        self.keys: dict[str, int] = {}
        self.numbers = itertools.count(first, 2)
        """Even numbers from 0 or odd ones from 1: two analyzers can share a batch (the same
        key under two numbers is one term all the same)."""
        np = _numpy()
        halves = np.zeros(0, dtype=np.uint64)
        self.vocabulary: tuple[Any, Any, Any, Any] = (
            halves, halves, halves, np.zeros(0, dtype=np.int32)
        )  # fmt: skip
        """The body words of `_WIDE` letters or fewer numbered so far in the batch: their
        hashes (`_hashed`, sorted), halves (`_Bodies.halves`) and numbers. A chunk's words
        are looked up at once; only the new ones become strings and dict keys."""

    def _numbered(self, bodies: _Bodies) -> Any:
        """The key number of each of `bodies`' postings: its words numbered once each, not
        once a Page; those the batch numbered before found in `vocabulary`."""
        np = _numpy()
        first, second = bodies.halves
        numbers = np.zeros(len(first), dtype=np.int32)
        used = np.zeros(len(first), dtype=bool)
        used[bodies.word] = True
        short = np.flatnonzero(used & ~bodies.wide)
        hashes = _hashed((first[short], second[short]))
        known_hashes, known_first, known_second, known_numbers = self.vocabulary
        at = np.minimum(np.searchsorted(known_hashes, hashes), max(len(known_hashes) - 1, 0))
        known = np.zeros(len(short), dtype=bool)
        if len(known_hashes):
            known = (
                (known_hashes[at] == hashes)
                & (known_first[at] == first[short])
                & (known_second[at] == second[short])
            )
        numbers[short[known]] = known_numbers[at[known]]
        # The others (and a word whose hash another one has) by their strings.
        by_hash = np.argsort(hashes[~known], kind="stable")
        new = short[~known][by_hash]
        fresh = np.fromiter(
            map(self.keys.setdefault, bodies.spell(new), self.numbers), dtype=np.int32,
            count=len(new),
        )  # fmt: skip
        numbers[new] = fresh
        places = np.searchsorted(known_hashes, hashes[~known][by_hash])
        self.vocabulary = (
            np.insert(known_hashes, places, hashes[~known][by_hash]),
            np.insert(known_first, places, first[new]),
            np.insert(known_second, places, second[new]),
            np.insert(known_numbers, places, fresh),
        )
        wide = np.flatnonzero(used & bodies.wide)
        numbers[wide] = np.fromiter(
            map(self.keys.setdefault, bodies.spell(wide), self.numbers), dtype=np.int32,
            count=len(wide),
        )  # fmt: skip
        return numbers[bodies.word].astype(np.int32)

    def chunk(
        self, pages: list[tuple[str, str, str | None, str]], *, new_batch: bool
    ) -> AnalyzedChunk:
        """Analyze `pages` (slug, title, summary, body); `new_batch` starts a batch's keys."""
        if new_batch:
            self.__init__(self.first)  # type: ignore[misc]  # a batch numbers its keys anew
        keys = self.keys
        known = len(keys)
        counter = self.numbers
        kids: array[int] = array("i")
        tws: array[int] = array("i")
        firsts: array[int] = array("i")
        out: list[PageAnalysis] = []
        scans = [snippet_text(body, summary)[:SNIPPET_SCAN] for _s, _t, summary, body in pages]
        by_words = [
            _keyed_by_words(body, scan)
            for (_s, _t, _m, body), scan in zip(pages, scans, strict=True)
        ]
        bodies = _ascii_bodies(
            [page[3] for page, fast in zip(pages, by_words, strict=True) if fast]
        )
        np = _numpy()
        body_kids = self._numbered(bodies)
        body_tws = bodies.counts.astype(np.int32)
        body_firsts = bodies.firsts.astype(np.int32)
        fast_at = 0
        for (slug, title, summary, body), scan, fast in zip(pages, scans, by_words, strict=True):
            fields = (title, slug, summary or "", body)
            seen: dict[str, str] = {}
            if fast:
                short = _short_terms(fields, seen)
                begin, end = bodies.bounds[fast_at], bodies.bounds[fast_at + 1]
                kids.frombytes(body_kids[begin:end].tobytes())
                tws.frombytes(body_tws[begin:end].tobytes())
                if scan:
                    firsts.frombytes(body_firsts[begin:end].tobytes())
                else:
                    firsts.extend(repeat(-1, end - begin))
                length = short.length + bodies.totals[fast_at]
                fast_at += 1
                keyed, postings = short.keyed, end - begin + len(short.keyed)
                firsts.extend(repeat(-1, len(keyed)))
                found: _Analyzed | _Short = short
            else:
                found = _analyze(fields, scan, seen)  # the snippet text, as far as scanned
                keyed, postings, length = found.keyed, len(found.keyed), found.length
                firsts.fromlist(found.firsts)
            kids.extend(map(keys.setdefault, keyed, counter))
            tws.fromlist(list(keyed.values()))
            out.append(
                PageAnalysis(
                    length,
                    found.title_terms,
                    found.path_terms,
                    list(found.heads),
                    is_generic(slug, found.title_terms, found.generic_path),
                    [item for pair in seen.items() for item in pair],
                    extract_links(body, own_slug=slug),
                    postings,
                )
            )
        new = list(islice(keys.items(), known, None))
        new_keys = [key for key, _number in new]
        flags = bytes(key[0] != _TERM for key in new_keys)
        stems = iter(stem_words(list(compress(new_keys, flags))))
        terms = [
            next(stems) if word else key[1:] for key, word in zip(new_keys, flags, strict=True)
        ]
        numbers: array[int] = array("i", [number for _key, number in new])
        return AnalyzedChunk(out, (kids, tws, firsts), new_keys, numbers, terms, flags)


Held = tuple[int, ChunkColumns, "array[int]", "array[int]", list[str], list[str], bytes]
"""A chunk's postings as `HeldPostings` keeps them: the place of its first Page in the
batch, its columns, each Page's number of postings, and the keys it numbered first (numbers,
index terms, keys, which are body words)."""


def held(chunk: AnalyzedChunk, start: int) -> Held:
    """`chunk`'s postings and keys, its first Page at place `start` in the batch."""
    per_doc: array[int] = array("i", [page.postings for page in chunk.pages])
    return (start, chunk.columns, per_doc, chunk.numbers, chunk.terms, chunk.keys, chunk.words)


def without_postings(chunk: AnalyzedChunk, start: int) -> AnalyzedChunk:
    """`chunk` with its Pages' analyses only, its first Page at place `start` (`held`)."""
    empty: array[int] = array("i")
    return AnalyzedChunk(chunk.pages, (empty, empty, empty), [], empty, [], b"", start)


class HeldPostings:
    """The postings of one write batch's chunks, kept by the analysis process and grouped
    by term when the batch ends (`group`): those of the chunks it analyzed, and those of
    the chunks the writer analyzed itself, sent with the request to group. The writer gets
    them grouped and encoded (`IndexBuffer.add_part`) and never groups postings itself. A
    Page is told by its place in the batch, whichever process analyzed it."""

    def __init__(self) -> None:
        self.chunks: list[Held] = []

    def __len__(self) -> int:
        """The chunks held."""
        return len(self.chunks)

    def hold(self, chunk: Held) -> None:
        self.chunks.append(chunk)

    def group(self) -> HeldBatch:
        """The held postings, to be grouped (`HeldBatch`); then nothing is held."""
        np = _numpy()
        chunks = sorted(self.chunks, key=operator.itemgetter(0))  # in the batch's order
        self.chunks = []
        columns: tuple[array[int], array[int], array[int]] = (array("i"), array("i"), array("i"))
        per_doc: array[int] = array("i")
        places: array[int] = array("i")
        numbers: array[int] = array("i")
        terms: list[str] = []
        keys: list[str] = []
        flags = bytearray()
        for chunk in chunks:
            start, chunk_columns, chunk_per_doc, chunk_numbers = chunk[:4]
            chunk_terms, chunk_keys, chunk_flags = chunk[4:]
            for column, values in zip(columns, chunk_columns, strict=True):
                column.extend(values)
            per_doc.extend(chunk_per_doc)
            places.extend(range(start, start + len(chunk_per_doc)))
            numbers.extend(chunk_numbers)
            terms.extend(chunk_terms)
            keys.extend(chunk_keys)
            flags.extend(chunk_flags)
        if columns[0]:
            used = np.zeros(max(numbers) + 1, dtype=bool)
            used[np.frombuffer(columns[0], np.int32)] = True
            chosen = used[np.frombuffer(numbers, np.int32)]
            if not bool(chosen.all()):
                at = np.flatnonzero(chosen).tolist()
                numbers = array("i", map(numbers.__getitem__, at))
                terms = list(map(terms.__getitem__, at))
                keys = list(map(keys.__getitem__, at))
                flags = bytearray(map(flags.__getitem__, at))
        words = (list(compress(keys, flags)), list(compress(terms, flags)))
        return HeldBatch(words, (numbers, terms, columns, per_doc), places)


class HeldBatch:
    """A `GroupedBatch` in the analysis process: the batch's words are known at once; its
    postings are grouped by `group` (the analysis process calls it as soon as it has sent
    the words, while the writer still writes the batch's last rows), a range of terms at a
    time, and encoded once the documents written are known (`parts`)."""

    def __init__(
        self,
        words: tuple[list[str], list[str]],
        postings: tuple[array[int], list[str], tuple[array[int], array[int], array[int]], Any],
        places: array[int],
    ) -> None:
        self._words = words
        self._postings: Any = postings
        """`rank_postings`' arguments until `group` ran."""
        self._grouped: list[Grouped] | None = None
        self._places = places
        """Each document's place in the batch."""

    def words(self) -> tuple[list[str], list[str]]:
        return self._words

    def group(self) -> None:
        """Group the postings by term (once); the held ones are let go."""
        if self._grouped is None:
            postings, self._postings = self._postings, None
            ranked = rank_postings(*postings)
            del postings  # the key numbers go; the counts and offsets stay in `ranked`
            self._grouped = list(group_postings(ranked))

    def parts(self, placed: Placed) -> Iterator[EncodedPart]:
        if not placed.at:  # no document written (every Page unchanged)
            return iter(())
        self.group()
        grouped, self._grouped = self._grouped, None
        assert grouped is not None
        np = _numpy()
        place_of = np.frombuffer(self._places, np.int32)
        span = int(place_of.max()) + 1 if len(place_of) else 0
        at = np.frombuffer(placed.at, np.int32)
        if int(at.min()) < 0 or int(at.max()) >= span:
            raise RuntimeError("a Page was placed outside its batch")
        ids_of = np.full(span, -1, dtype=np.int32)
        ids_of[at] = np.frombuffer(placed.ids, np.int32)
        lengths_of = np.zeros(span, dtype=np.int32)
        lengths_of[at] = np.frombuffer(placed.lengths, np.int32)
        ids_of, lengths_of = ids_of[place_of], lengths_of[place_of]
        return _bucket_parts(grouped, ids_of, lengths_of, placed.dead)


def index_placed_page(
    conn: sqlite3.Connection, slug: str, analysis: PageAnalysis, place: int, buffer: IndexBuffer
) -> None:
    """`index_page` for a Page a `BatchAnalyzer` analyzed in a bulk import: the analysis
    process holds its postings under its `place` in the batch (`HeldPostings`)."""
    doc_id = _insert_doc(
        conn, "page", slug, analysis.title_terms, analysis.path_terms, analysis.generic,
        analysis.length,
    )  # fmt: skip
    buffer.add_placed(doc_id, analysis.length, place, analysis.pairs)
    _counted(buffer, doc_id, analysis.length, analysis.heads)


def index_page(
    conn: sqlite3.Connection,
    slug: str,
    title: str,
    summary: str | None,
    body: str,
    buffer: IndexBuffer | None = None,
) -> None:
    """Index a Page: path is its slug."""
    index_doc(
        conn, "page", slug, (title, slug, summary or "", body),
        name=slug, snippet=snippet_text(body, summary), buffer=buffer,
    )  # fmt: skip


def index_source(
    conn: sqlite3.Connection,
    ident: str,
    title: str,
    origin: str | None,
    content: str,
    buffer: IndexBuffer | None = None,
) -> None:
    """Index a Source: path is its origin, its name the origin's file stem."""
    origin = origin or ""
    index_doc(
        conn, "source", ident, (title, origin, "", content),
        name=PurePosixPath(origin).stem, snippet=content, buffer=buffer,
    )  # fmt: skip


def reindex_all(conn: sqlite3.Connection) -> int:
    """Rebuild the whole index from `pages` and `sources` (in the caller's transaction);
    document ids start again from 1 and every term has one segment."""
    for table in ("search_docs", "search_terms", "search_segments", "search_words", "search_fuzzy"):
        conn.execute(f"DELETE FROM {table}")
    conn.execute("DELETE FROM search_stats")
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'search_docs'")
    buffer = IndexBuffer()
    count = 0
    for slug, title, summary, body in conn.execute(
        "SELECT slug, title, summary, body FROM pages ORDER BY slug"
    ).fetchall():
        index_page(conn, slug, title, summary, body, buffer)
        count += 1
    for ident, title, origin, content in conn.execute(
        "SELECT id, title, origin, content FROM sources ORDER BY id"
    ).fetchall():
        index_source(conn, ident, title, origin, content, buffer)
        count += 1
    buffer.flush(conn)
    return count
