"""The index buffer: one write transaction's postings, frequencies, words and statistics.

Documents add their postings here (`indexing.index_doc`, or a bulk import's analysis
process through `add_part`); `IndexBuffer.flush` writes them once per transaction: the
words (typo index, `search_words`), one segment row per term (`format/segments.py`), the
terms' frequencies, the statistics, and the merges a term past `MAX_SEGMENTS` rows needs
(`merge.py`).
"""

from __future__ import annotations

import itertools
import operator
import sqlite3
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Set
from itertools import compress

from lwc_trio.memory.format import segments
from lwc_trio.memory.format.postings import encode_postings
from lwc_trio.memory.format.typo_index import record_words
from lwc_trio.memory.index.document import TERM_KEY
from lwc_trio.memory.index.parts import VECTOR_POSTINGS, EncodedPart, GroupedBatch, Placed
from lwc_trio.memory.text.tokenize import stem_words

__all__ = ["IndexBuffer"]

_PENDING_KEYS = 100_000
"""Postings whose keys are numbered at once (`IndexBuffer._number`): the keys' strings of
a whole batch would take hundreds of MB."""


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
        index term after `TERM_KEY`."""
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
        words = [key for key in keys if key[0] != TERM_KEY]
        self.words.update(zip(words, stem_words(words), strict=True))
        seen = self.words
        return list(self.keys.values()), [seen[k] if k[0] != TERM_KEY else k[1:] for k in keys]

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
            # Deferred for start-up speed: numpy (~0.1 s) only for a large batch.
            from lwc_trio.memory.index.grouping import buffer_parts

            columns = (self.kids, self.tws, self.firsts)
            return buffer_parts(
                numbers, key_terms, columns, self.doc_keys, self.doc_ids, self.doc_lengths,
                sorted(self.dead),
            )  # fmt: skip
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
        packed = {term: segments.pack(ids) for term, ids in heads.items()}
        grown: list[str] = []
        """The batch's terms with live postings, sorted (b"": every posting of the term is
        dead)."""
        for terms, counts, blobs in parts:
            written = list(compress(terms, blobs))
            if written:
                segments.append(
                    conn, self.first_doc, written, filter(None, blobs),
                    (packed.get(term, b"") for term in written),
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
                    segments.drop_orphans(conn, [term for (term,) in gone])
            grown = list(filter(added.__contains__, changes))
        if grown and crowding:
            last = max(self.doc_ids[-1:] + self.placed_ids[-1:])
            crowded = segments.crowded(conn, grown)
            if crowded:
                # Deferred for start-up speed: a merge needs numpy (~0.1 s), a write that
                # crowds no term does not.
                from lwc_trio.memory.index.merge import merge_segments

                merge_segments(conn, crowded, last + 1)
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
