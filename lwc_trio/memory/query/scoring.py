"""BM25F scoring of one query's postings in one store (the search's inner loop, SPEC §4).

Reading a query's terms' segments (`load_postings`: bounded by `POSTINGS_MAX` postings and
`SEGMENTS_MAX` rows a term, cancellation checked before each is decoded), preparing them for
one store revision (`prepare`: each posting's BM25 denominator, kept per revision in
`PREPARED`), and scoring them (`score`: plain Python for a few postings, numpy's `vector.py`
from `VECTOR_MIN`, bit-identical). The constants are the search's (`Ranking`, tuned on
Cranfield); IDF never collapses (`idf`). `search.py` orchestrates a query around this:
corrections, candidates, adjustments, the fill-up.
"""

from __future__ import annotations

import importlib
import math
import sqlite3
import threading
from array import array
from collections.abc import Hashable, Iterator, Sequence
from types import ModuleType
from typing import Protocol

import attrs

from lwc_trio.exceptions import MemoryCancelled, StoreError
from lwc_trio.memory.format import segments as segment_rows
from lwc_trio.memory.format.cache import RevisionCache
from lwc_trio.memory.format.postings import decode_postings, posting_count

__all__ = [
    "DEFAULT_RANKING",
    "POSTINGS_MAX",
    "PREPARED",
    "SEGMENTS_MAX",
    "VECTOR_MIN",
    "VECTOR_STORE_MIN",
    "Prepared",
    "Ranking",
    "Scores",
    "Segment",
    "best_first",
    "bm25_scale",
    "check_cancelled",
    "chunks",
    "idf",
    "import_vector",
    "load_postings",
    "prepare",
    "prepared_postings",
    "score",
    "score_postings",
    "score_prepared",
    "too_many_segments",
    "vector_for",
]

POSTINGS_MAX = 8_000_000
"""Postings one store may score for one query (its terms' segments, dead documents'
postings included): eight times what the commonest term of the million-Page store SPEC §4
names holds, and about what one core scores within the 5 s deadline. Past it the store
answers `memory_timeout` at once, without reading them: every posting costs ~40 bytes while
it is scored, and its decoding, scoring and selection are steps no deadline can stop
midway, each growing with the postings (a cloned store's 1 GB blob would hold a thread
and gigabytes for as long as it took)."""
SEGMENTS_MAX = 64
"""Segment rows read for one term: the writer keeps at most `indexer.MAX_SEGMENTS` (8)
per term, so more is a damaged or hostile index (`store_corrupt`), never read whole (a
term of 300,000 one-posting rows took seconds of a request, issue 36)."""


@attrs.frozen
class Ranking:
    """The ranking's constants; the defaults were tuned on Cranfield (docs/memory.md)."""

    k1: float = 1.8
    b: float = 0.75
    title_exact: float = 2.0
    title_phrase: float = 1.5
    path_exact: float = 1.5
    path_phrase: float = 1.25
    generic_penalty: float = 0.5
    correction_weight: float = 0.8
    query_tf: bool = True


DEFAULT_RANKING = Ranking()


def idf(docs: int, df: int) -> float:
    """BM25's IDF without the collapse: positive for any df ≤ N."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


def chunks(items: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def check_cancelled(cancelled: threading.Event | None) -> None:
    if cancelled is not None and cancelled.is_set():
        raise MemoryCancelled()


Segment = tuple["array[int]", "array[int]", "array[int]", "array[int]"]
"""One segment's postings by column: doc ids (ascending), weighted counts, lengths, firsts."""


def _segment(blob: object) -> Segment:
    """Decode and check one `search_segments.postings` blob (`postings.decode_postings`: a
    cloned repository can ship any bytes)."""
    return decode_postings(blob, vectorized=_loaded_vector(posting_count(blob)) is not None)


def load_postings(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    cancelled: threading.Event | None = None,
    held: int = 0,
) -> dict[str, list[Segment]]:
    """Each of `terms`' segments, in write order (dead documents' postings included),
    `cancelled` checked before each one is decoded. Raises `StoreError` (`memory_timeout`)
    without reading them when they hold more than `POSTINGS_MAX` postings with the `held`
    ones the query has already."""
    wanted = list(dict.fromkeys(terms))
    _check_size(conn, wanted, held)
    found: dict[str, list[Segment]] = {}
    for chunk in chunks(wanted):
        for term, blob in segment_rows.postings(conn, chunk):
            segments = found.setdefault(term, [])
            if len(segments) >= SEGMENTS_MAX:
                raise too_many_segments()
            check_cancelled(cancelled)
            segments.append(_segment(blob))
    return found


def _check_size(conn: sqlite3.Connection, terms: Sequence[str], held: int) -> None:
    """Refuse (`memory_timeout`) a query whose terms hold more than `POSTINGS_MAX` postings,
    before any is read: counted from the blobs' lengths, which SQLite knows without
    loading them (every posting takes at least 7 bytes, a blob 4 more)."""
    most = held
    for chunk in chunks(terms):
        rows, size = segment_rows.postings_size(conn, chunk)
        most += max(size - 4 * rows, 0) // 7
    if most > POSTINGS_MAX:
        raise StoreError(
            "memory_timeout",
            f"this query's terms hold up to {most:,} postings in the store, more than the "
            f"{POSTINGS_MAX:,} one store may score within the memory deadline",
        )


def too_many_segments() -> sqlite3.DatabaseError:
    return sqlite3.DatabaseError(f"a term of the search index has over {SEGMENTS_MAX} segments")


Prepared = tuple["array[int]", "array[int]", "array[float]", "array[int]"]
"""A segment ready to score: doc ids, weighted counts, BM25 denominators
tw + k1 (1 − b) + k1 b dl / avgdl (fixed within one store revision), first offsets."""


VECTOR_MIN = 512
"""Postings from which a query (or a segment being prepared) is scored with numpy
(`vector.py`); fewer cost less in plain Python, and a small store never imports numpy."""

VECTOR_STORE_MIN = 1_000
"""Documents from which a store's first query imports numpy whatever its own postings, so
that the import (about 0.1 s) is part of that first answer, not of a later one."""

VECTOR_LOADED_MIN = 64
"""Postings from which a segment is decoded with numpy once it is imported (`_loaded_vector`)."""

_VECTOR: list[ModuleType | None] = []


def vector_for(postings: int) -> ModuleType | None:
    """`vector.py` for this many postings, imported on first need; None below `VECTOR_MIN`
    (or without numpy: the plain loop computes the same scores)."""
    if postings < VECTOR_MIN:
        return None
    if not _VECTOR:
        try:
            _VECTOR.append(importlib.import_module("lwc_trio.memory.query.vector"))
        except ImportError:  # pragma: no cover - numpy is a dependency
            _VECTOR.append(None)
    return _VECTOR[0]


def import_vector() -> None:
    """Import `vector.py` (numpy) now instead of at the first query that needs it (`lwc
    serve` does it before serving a large store: `cli.serve.preload_memory`)."""
    vector_for(VECTOR_MIN)


def _loaded_vector(postings: int) -> ModuleType | None:
    """`vector_for(postings)`, or from `VECTOR_LOADED_MIN` postings `vector.py` when it is
    imported already: decoding a segment costs numpy a few calls whatever its size, and
    the same checks and denominators."""
    if postings >= VECTOR_LOADED_MIN and _VECTOR:
        return _VECTOR[0]
    return vector_for(postings)


def _denominators(tws: array[int], dls: array[int], k: float, kb: float) -> array[float]:
    vector = _loaded_vector(len(tws))
    if vector is not None:
        dens: array[float] = vector.denominators(tws, dls, k, kb)
        return dens
    return array("d", [tw + k + kb * dl for tw, dl in zip(tws, dls, strict=True)])


def prepare(
    postings: dict[str, list[Segment]],
    k: float,
    kb: float,
    cancelled: threading.Event | None = None,
) -> dict[str, list[Prepared]]:
    """Each segment with its denominators computed for `k`, `kb` (see `score_postings`),
    `cancelled` checked between segments."""
    prepared: dict[str, list[Prepared]] = {}
    for term, segments in postings.items():
        ready: list[Prepared] = []
        prepared[term] = ready
        for ids, tws, dls, firsts in segments:
            check_cancelled(cancelled)
            ready.append((ids, tws, _denominators(tws, dls, k, kb), firsts))
    return prepared


def bm25_scale(docs: int, length: int, ranking: Ranking) -> tuple[float, float]:
    avgdl = max(length / docs, 1.0)
    return ranking.k1 * (1.0 - ranking.b), ranking.k1 * ranking.b / avgdl


def score_postings(
    postings: dict[str, list[Segment]],
    weighted: Sequence[tuple[str, float, int]],
    docs: int,
    length: int,
    ranking: Ranking,
) -> tuple[dict[int, float], set[int] | None]:
    """BM25F over `(term, weight, exact)`: the score of every document holding a term, and
    the documents an exact term matched (None when no correction takes part: all of them).
    `weight` carries IDF × query tf × (k1 + 1); each term adds
    weight × tf / (tf + k1 (1 − b) + k1 b dl / avgdl), terms in the order given."""
    return score_prepared(prepare(postings, *bm25_scale(docs, length, ranking)), weighted)


def score_prepared(
    prepared: dict[str, list[Prepared]], weighted: Sequence[tuple[str, float, int]]
) -> tuple[dict[int, float], set[int] | None]:
    """`score_postings` over segments whose denominators are computed already."""
    scores: dict[int, float] = {}
    corrected = any(not exact for _t, _w, exact in weighted)
    exact_docs: set[int] | None = set() if corrected else None
    for term, w, exact in weighted:
        for ids, tws, dens, _firsts in prepared.get(term, ()):
            if not scores:
                parts = [w * tw / den for tw, den in zip(tws, dens, strict=True)]
                scores = dict(zip(ids, parts, strict=True))
            else:
                get = scores.get
                for doc_id, tw, den in zip(ids, tws, dens, strict=True):
                    scores[doc_id] = get(doc_id, 0.0) + w * tw / den
            if exact_docs is not None and exact:
                exact_docs.update(ids)
    if scores and not math.isfinite(max(scores.values())):
        raise sqlite3.DatabaseError("the search index holds invalid counts")
    return scores, exact_docs


class Scores(Protocol):
    """The scores of every document holding a query term (`score`)."""

    def __len__(self) -> int: ...

    def best(self, n: int) -> list[tuple[float, int]]:
        """`(−score, doc_id)` of the best `n`, best first, ties by doc id."""
        ...

    def ranked(self, start: int, stop: int, chunk: int) -> Iterator[list[tuple[float, int]]]:
        """`best(stop)[start:]` in no particular order, `chunk` at a time, in steps that
        stay short however many documents there are (a full sort of a million tuples held
        the GIL for over a second)."""
        ...

    def is_exact(self, doc_id: int) -> bool:
        """Whether an exact (not corrected) query term matched `doc_id`."""
        ...


@attrs.frozen
class _DictScores:
    """Scores of fewer than `VECTOR_MIN` postings (a short sort)."""

    scores: dict[int, float]
    exact_docs: set[int] | None

    def __len__(self) -> int:
        return len(self.scores)

    def best(self, n: int) -> list[tuple[float, int]]:
        return best_first(self.scores, n)

    def ranked(self, start: int, stop: int, chunk: int) -> Iterator[list[tuple[float, int]]]:
        window = best_first(self.scores, stop)[start:]
        for at in range(0, len(window), chunk):
            yield window[at : at + chunk]

    def is_exact(self, doc_id: int) -> bool:
        return self.exact_docs is None or doc_id in self.exact_docs


def score(
    prepared: dict[str, list[Prepared]],
    weighted: Sequence[tuple[str, float, int]],
    cancelled: threading.Event | None = None,
) -> Scores:
    """`score_prepared`, by numpy (`vector.py`) when the query has `VECTOR_MIN` postings or
    more: the same scores, bit for bit, `cancelled` checked between its steps."""
    terms = [(w, exact, prepared[term]) for term, w, exact in weighted if prepared.get(term)]
    postings = sum(len(segment[0]) for _w, _e, segments in terms for segment in segments)
    vector = vector_for(postings) if terms else None
    if vector is None:
        return _DictScores(*score_prepared(prepared, weighted))
    corrected = any(not exact for _t, _w, exact in weighted)
    scores: Scores = vector.score(terms, postings, corrected, lambda: check_cancelled(cancelled))
    if not vector.VectorScores.finite(scores):
        raise sqlite3.DatabaseError("the search index holds invalid counts")
    return scores


POSTING_BUDGET = 200_000
"""Postings kept decoded per store revision (about 20 bytes each), for `PREPARED` entries."""


class _RevisionPostings:
    """One store revision's prepared segments of the terms queried so far, up to
    `POSTING_BUDGET` postings (terms past it are read again each time)."""

    def __init__(self) -> None:
        self.terms: dict[str, list[Prepared]] = {}
        self.size = 0
        self.lock = threading.Lock()

    def get(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str],
        k: float,
        kb: float,
        cancelled: threading.Event | None = None,
    ) -> dict[str, list[Prepared]]:
        cached = self.terms
        found = {term: cached[term] for term in terms if term in cached}
        missing = [term for term in terms if term not in found]
        if missing:
            held = sum(len(seg[0]) for segments in found.values() for seg in segments)
            loaded = prepare(load_postings(conn, missing, cancelled, held), k, kb, cancelled)
            found.update(loaded)
            with self.lock:
                for term, segments in loaded.items():
                    n = sum(len(seg[0]) for seg in segments)
                    if term not in cached and self.size + n <= POSTING_BUDGET:
                        cached[term] = segments
                        self.size += n
        return found


PREPARED: RevisionCache[_RevisionPostings] = RevisionCache(4)
"""Prepared segments per (store path, store_id, store_revision, k, kb): a write bumps the
revision, so its postings are read afresh by the next query."""


def prepared_postings(
    conn: sqlite3.Connection,
    cache_key: Hashable | None,
    terms: Sequence[str],
    k: float,
    kb: float,
    cancelled: threading.Event | None = None,
) -> dict[str, list[Prepared]]:
    if not terms:
        return {}
    if cache_key is None:
        return prepare(load_postings(conn, terms, cancelled), k, kb, cancelled)
    kept = PREPARED.get_or_build((cache_key, k, kb), _RevisionPostings)
    return kept.get(conn, terms, k, kb, cancelled)


def best_first(scores: dict[int, float], n: int) -> list[tuple[float, int]]:
    """`(−score, doc_id)` of the best `n` documents, best first, ties by doc id."""
    if n >= len(scores):
        return sorted(zip([-score for score in scores.values()], scores, strict=True))
    # The n-th best score, found by a C sort of plain floats; every document scoring as
    # well is a candidate (ties at the cutoff are decided by doc id below).
    cutoff = sorted(scores.values(), reverse=True)[n - 1] if n > 0 else math.inf
    return sorted([(-score, doc) for doc, score in scores.items() if score >= cutoff])[:n]
