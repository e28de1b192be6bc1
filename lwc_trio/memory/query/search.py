"""Deterministic "auto" search inside one store's read transaction (SPEC §4 "Search").

1. **BM25F** over the analyzed fields (title, path, summary, body; `fields.FIELD_WEIGHTS`)
   of every document holding any query term: no term is ever dropped. IDF is
   log(1 + (N − n + 0.5)/(n + 0.5)), positive for every term, so a term in most documents of
   a small store still counts. A term repeated in the query weighs more (query term
   frequency). Scored by one SQL statement over `search_postings`.
2. **Typo correction**: a query word no document contains is searched as its nearest
   vocabulary words too (`fuzzy.py`); a document found only through such words is
   `"match": "fuzzy"`.
3. **Adjustments** on the best `CANDIDATE_FACTOR × limit`: a title or path equal to (or
   containing) the whole query pulls a document up; generic pages (index, overview, readme,
   toc, contents) are pushed down unless the query asks for them; a small link-graph boost.
   Everything they need was stored at write time (`index/`): no text is analyzed here.
4. A Source cited by a matching `kind=source` Page is hidden (the Page summarizes it).
5. **Title fill-up**: when fewer than `limit` remain, documents whose title or path matches
   the query by `fuzz.ratio` follow, with ranks ≥ 0 (after every lexical hit).
"""

from __future__ import annotations

import bisect
import importlib
import math
import operator
import sqlite3
import threading
from array import array
from collections.abc import Callable, Hashable, Iterator, Sequence
from types import ModuleType
from typing import Protocol, TypeVar

import attrs

from lwc_trio.exceptions import MemoryCancelled, StoreError
from lwc_trio.memory.format import segments as segment_rows
from lwc_trio.memory.format.postings import decode_postings, posting_count
from lwc_trio.memory.format.schema import placeholders
from lwc_trio.memory.format.typo_index import BoundIndex, WordIndex
from lwc_trio.memory.query.fuzzy import (
    MAX_CORRECTIONS,
    TITLE_CUTOFF,
    Vocabulary,
    best_by_stem,
    max_edits,
    near_words,
    similar_words,
)
from lwc_trio.memory.storage.cache import RevisionCache
from lwc_trio.memory.text.fields import GENERIC_TERMS
from lwc_trio.memory.text.tokenize import QueryTerm

__all__ = [
    "CANDIDATE_FACTOR",
    "DEFAULT_RANKING",
    "Hit",
    "Ranking",
    "Scores",
    "best_first",
    "floor_scorer",
    "idf",
    "load_degrees",
    "load_postings",
    "prepare",
    "score",
    "score_postings",
    "score_prepared",
    "search_store",
]

CANDIDATE_FACTOR = 4
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
FILL_IDS_MAX = 20_000
"""Title-or-path doc ids (`search_segments.heads`) the title fill-up reads per store and
request, shared out evenly among the query's words, each word's most similar stems first,
each stem's lowest ids first: a store whose heads list millions of ids (issue 36: 6,000,000
cost 2 GB a call) is read up to here, in bounded memory and time (the fill-up sorts what it
read: 20,000 entries sort in a few milliseconds of the GIL), never beyond. A legitimate
fill-up needs far fewer: it runs only when the query's own terms found too few documents."""
# Inbound-link boost: 1 + LINK_BOOST * log2(1 + min(degree, LINK_CAP)); at most +20 %.
LINK_BOOST, LINK_CAP = 0.05, 15


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


@attrs.frozen
class Hit:
    """One ranked document of one store."""

    doc_type: str  # "page" | "source"
    identifier: str
    rank: float
    match: str  # "lexical" | "fuzzy"
    snippet_at: int = -1  # first match in the snippet text, -1 when none

    def sort_key(self) -> tuple[float, int, str]:
        """Rank, then Pages before Sources, then identifier."""
        return (self.rank, 0 if self.doc_type == "page" else 1, self.identifier)


def idf(docs: int, df: int) -> float:
    """BM25's IDF without the collapse: positive for any df ≤ N."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


def _chunks(items: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _check(cancelled: threading.Event | None) -> None:
    if cancelled is not None and cancelled.is_set():
        raise MemoryCancelled()


Description = tuple[str, str, str, str, bool]
"""A document's (doc_type, ident, title terms, path terms, generic), from `search_docs`;
the terms with a space on each side, as `_factor` compares them."""

FACTS_MAX = 50_000
"""Entries of each kind (terms, documents, Pages) one `_Facts` keeps."""


class _Facts:
    """What one store revision's queries have read so far and never changes within it:
    the statistics, terms' document frequencies (0: not in the store), documents'
    descriptions (None: gone) and Pages' link in-degrees. Each kind stops growing at
    `FACTS_MAX` entries (later ones are read each time)."""

    def __init__(self) -> None:
        self.stats: tuple[int, int] | None = None
        self.dfs: dict[str, int] = {}
        self.docs: dict[int, Description | None] = {}
        self.degrees: dict[str, int] = {}


FACTS: RevisionCache[_Facts] = RevisionCache(4)
"""`_Facts` per (store path, store_id, store_revision), like `PREPARED`."""


def _stats(conn: sqlite3.Connection, facts: _Facts | None = None) -> tuple[int, int]:
    if facts is not None and facts.stats is not None:
        return facts.stats
    values = dict(conn.execute("SELECT key, value FROM search_stats").fetchall())
    docs, length = values.get("docs", 0), values.get("length", 0)
    if not (isinstance(docs, int) and isinstance(length, int)) or docs < 0 or length < 0:
        raise sqlite3.DatabaseError("search_stats holds invalid values")
    if facts is not None:
        facts.stats = (docs, length)
    return docs, length


def _doc_freqs(
    conn: sqlite3.Connection, terms: Sequence[str], facts: _Facts | None = None
) -> dict[str, int]:
    """The document frequency of each of `terms` the store holds."""
    found: dict[str, int] = {}
    wanted = list(dict.fromkeys(terms))
    if facts is not None:
        cached = facts.dfs
        found = {term: cached[term] for term in wanted if cached.get(term)}
        wanted = [term for term in wanted if term not in cached]
    for chunk in _chunks(wanted):
        rows = conn.execute(
            f"SELECT term, df FROM search_terms WHERE term IN ({placeholders(len(chunk))})", chunk
        )
        found.update((term, df) for term, df in rows if isinstance(df, int) and df > 0)
    if facts is not None and wanted and len(facts.dfs) < FACTS_MAX:
        facts.dfs.update((term, found.get(term, 0)) for term in wanted)
    return found


def _corrections(
    conn: sqlite3.Connection, vocab: Vocabulary | BoundIndex, word: str, facts: _Facts | None = None
) -> list[tuple[str, int]]:
    """`(stem, df)` standing in for an unknown query word: the nearest words' stems."""
    near = near_words(vocab, word, max_edits(word))
    if not near:
        return []
    dfs = _doc_freqs(conn, [stem for _d, _w, stem in near], facts)
    live = [(d, -dfs[stem], w, stem) for d, w, stem in near if stem in dfs]
    if not live:
        return []
    nearest = min(d for d, _n, _w, _s in live)
    chosen: dict[str, int] = {}
    for d, neg_df, _w, stem in sorted(live):
        if d == nearest and stem not in chosen and len(chosen) < MAX_CORRECTIONS:
            chosen[stem] = -neg_df
    return list(chosen.items())


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
    for chunk in _chunks(wanted):
        for term, blob in segment_rows.postings(conn, chunk):
            segments = found.setdefault(term, [])
            if len(segments) >= SEGMENTS_MAX:
                raise _too_many_segments()
            _check(cancelled)
            segments.append(_segment(blob))
    return found


def _check_size(conn: sqlite3.Connection, terms: Sequence[str], held: int) -> None:
    """Refuse (`memory_timeout`) a query whose terms hold more than `POSTINGS_MAX` postings,
    before any is read: counted from the blobs' lengths, which SQLite knows without
    loading them (every posting takes at least 7 bytes, a blob 4 more)."""
    most = held
    for chunk in _chunks(terms):
        rows, size = segment_rows.postings_size(conn, chunk)
        most += max(size - 4 * rows, 0) // 7
    if most > POSTINGS_MAX:
        raise StoreError(
            "memory_timeout",
            f"this query's terms hold up to {most:,} postings in the store, more than the "
            f"{POSTINGS_MAX:,} one store may score within the memory deadline",
        )


def _too_many_segments() -> sqlite3.DatabaseError:
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


def _vector(postings: int) -> ModuleType | None:
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
    _vector(VECTOR_MIN)


def _loaded_vector(postings: int) -> ModuleType | None:
    """`_vector(postings)`, or from `VECTOR_LOADED_MIN` postings `vector.py` when it is
    imported already: decoding a segment costs numpy a few calls whatever its size, and
    the same checks and denominators."""
    if postings >= VECTOR_LOADED_MIN and _VECTOR:
        return _VECTOR[0]
    return _vector(postings)


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
            _check(cancelled)
            ready.append((ids, tws, _denominators(tws, dls, k, kb), firsts))
    return prepared


def _scale(docs: int, length: int, ranking: Ranking) -> tuple[float, float]:
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
    return score_prepared(prepare(postings, *_scale(docs, length, ranking)), weighted)


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
    vector = _vector(postings) if terms else None
    if vector is None:
        return _DictScores(*score_prepared(prepared, weighted))
    corrected = any(not exact for _t, _w, exact in weighted)
    scores: Scores = vector.score(terms, postings, corrected, lambda: _check(cancelled))
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


def _prepared(
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


def _first_offsets(
    postings: dict[str, list[Prepared]], doc_ids: Sequence[int], terms: Sequence[str]
) -> dict[int, int]:
    """Where the first of `terms` occurs in each document's snippet text (ids are ascending
    within a segment, so each is found by bisection)."""
    best: dict[int, int] = {}
    for term in dict.fromkeys(terms):
        for ids, _tws, _dls, firsts in postings.get(term, ()):
            n = len(ids)
            for doc_id in doc_ids:
                i = bisect.bisect_left(ids, doc_id)
                if i < n and ids[i] == doc_id:
                    first = firsts[i]
                    if first >= 0 and first < best.get(doc_id, first + 1):
                        best[doc_id] = first
    return best


def query_weights(
    conn: sqlite3.Connection, query: Sequence[QueryTerm], docs: int, ranking: Ranking
) -> list[tuple[str, float, int]]:
    """`(term, weight, exact=1)` for the query terms the store holds (no corrections)."""
    known = _doc_freqs(conn, [qt.term for qt in query])
    k1p = ranking.k1 + 1.0
    return [
        (qt.term, idf(docs, known[qt.term]) * (qt.count if ranking.query_tf else 1) * k1p, 1)
        for qt in query
        if qt.term in known
    ]


def floor_scorer(
    conn: sqlite3.Connection, query: Sequence[QueryTerm], limit: int
) -> Callable[[], list[tuple[float, int]]] | None:
    """The scoring a query without typos runs, postings read included (benchmarks time it
    alone; term lookups are done here, untimed); None when no term is known."""
    docs, length = _stats(conn)
    weighted = query_weights(conn, query, docs, DEFAULT_RANKING) if docs else []
    if not weighted:
        return None

    def run() -> list[tuple[float, int]]:
        postings = load_postings(conn, [term for term, _w, _e in weighted])
        prepared = prepare(postings, *_scale(docs, length, DEFAULT_RANKING))
        return score(prepared, weighted).best(limit)

    return run


def _describe(
    conn: sqlite3.Connection, doc_ids: Sequence[int], facts: _Facts | None = None
) -> dict[int, Description]:
    """doc_id -> (doc_type, ident, title terms, path terms, generic) of the live ones."""
    found: dict[int, Description] = {}
    wanted = list(doc_ids)
    if facts is not None:
        cached = facts.docs
        for doc_id in wanted:
            known = cached.get(doc_id)
            if known is not None:
                found[doc_id] = known
        wanted = [doc_id for doc_id in wanted if doc_id not in cached]
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        for doc_id, doc_type, ident, title, path, generic in conn.execute(
            "SELECT doc_id, doc_type, ident, title_terms, path_terms, generic "
            f"FROM search_docs WHERE doc_id IN ({placeholders(len(chunk))})",
            chunk,
        ):
            padded = f" {title} ", f" {path} "
            found[int(doc_id)] = (str(doc_type), str(ident), *padded, bool(generic))
    if facts is not None and wanted and len(facts.docs) < FACTS_MAX:
        facts.docs.update((doc_id, found.get(doc_id)) for doc_id in wanted)
    return found


def _summarized(conn: sqlite3.Connection, slugs: Sequence[str], sources: Sequence[str]) -> set[str]:
    """Those of `sources` cited by the `kind=source` Pages among `slugs`: looked up by
    (Page, Source) pair, so a Page citing millions of Sources costs no more than the
    candidates do."""
    hidden: set[str] = set()
    for chunk in _chunks(list(slugs)):
        for cited in _chunks(list(sources)):
            hidden.update(
                row[0]
                for row in conn.execute(
                    "SELECT ps.source_id FROM page_sources AS ps JOIN pages AS p "
                    "ON p.slug = ps.page_slug WHERE p.kind = 'source' "
                    f"AND ps.page_slug IN ({placeholders(len(chunk))}) "
                    f"AND ps.source_id IN ({placeholders(len(cited))})",
                    [*chunk, *cited],
                )
            )
    return hidden


def _factor(
    title: str, path: str, generic: bool, padded: str, wants_generic: bool, ranking: Ranking
) -> float:
    """The multiplier for a score; > 1 pulls a document up. `title`, `path` and the query's
    `padded` phrase have a space on each side: a title equal to the phrase is equal padded,
    a title containing it as a run of whole terms contains it padded."""
    factor = 1.0
    if padded in title:
        factor *= ranking.title_exact if title == padded else ranking.title_phrase
    if padded in path:
        factor *= ranking.path_exact if path == padded else ranking.path_phrase
    if generic and not wants_generic:
        factor *= ranking.generic_penalty
    return factor


_LINK_FACTORS = tuple(1.0 + LINK_BOOST * math.log2(1 + degree) for degree in range(LINK_CAP + 1))
"""The link boost by in-degree (capped at `LINK_CAP`)."""
_HIT_ORDER = operator.itemgetter(0, 1, 2)


def _title_ids(
    conn: sqlite3.Connection, stem: str, most: int, cancelled: threading.Event | None
) -> list[array[int]]:
    """The first `most` doc ids whose title or path holds `stem` (its `heads`, segment by
    segment in doc-id order), read through incremental blob I/O: no more of a blob than
    that is ever loaded, whatever its size."""
    found: list[array[int]] = []
    rows = segment_rows.heads_sizes(conn, stem, SEGMENTS_MAX + 1)
    if len(rows) > SEGMENTS_MAX:
        raise _too_many_segments()
    for rowid, kind, size in rows:
        if kind != "blob" or not isinstance(size, int) or size % 4:
            raise sqlite3.DatabaseError("the search index holds invalid postings")
        take = min(size // 4, most)
        if take <= 0:
            continue
        _check(cancelled)
        found.append(segment_rows.read_heads(conn, rowid, take))
        most -= take
    return found


def _fill_up(
    conn: sqlite3.Connection,
    vocab: Vocabulary | BoundIndex,
    query: Sequence[QueryTerm],
    cancelled: threading.Event | None,
) -> list[tuple[float, int, float]]:
    """`(−total, doc_id, mean ratio)` of documents whose title or path fuzzily holds every
    query word (the summed best ratio per word reaches `TITLE_CUTOFF` on average), best
    first. At most `FILL_IDS_MAX` title ids are read, shared out among the words."""
    wanted: list[dict[str, float]] = []
    for qt in query:
        _check(cancelled)
        best = best_by_stem(similar_words(vocab, qt.surface))
        best[qt.term] = 100.0
        wanted.append(best)
    share = FILL_IDS_MAX // max(len(wanted), 1)
    totals: dict[int, float] = {}
    for best in wanted:
        per_word: dict[int, float] = {}
        left = share
        # The most similar stems first (the word's own term leads, at 100), so a word whose
        # stems list more ids than its share keeps the best of them.
        for stem, ratio in sorted(best.items(), key=lambda item: (-item[1], item[0])):
            if left <= 0:
                break
            _check(cancelled)
            for segment in _title_ids(conn, stem, left, cancelled):
                left -= len(segment)
                for doc_id in segment:
                    if ratio > per_word.get(doc_id, -1.0):
                        per_word[doc_id] = ratio
        for doc_id, ratio in per_word.items():
            totals[doc_id] = totals.get(doc_id, 0.0) + ratio
    _check(cancelled)
    need = TITLE_CUTOFF * len(query) - 1e-9
    return sorted(
        (-total, doc_id, total / len(query)) for doc_id, total in totals.items() if total >= need
    )


def search_store(
    conn: sqlite3.Connection,
    query: Sequence[QueryTerm],
    limit: int,
    *,
    degrees: Callable[[Sequence[str]], dict[str, int]],
    vocabulary: Callable[[], Vocabulary | BoundIndex],
    cancelled: threading.Event | None = None,
    phrase: str | None = None,
    ranking: Ranking = DEFAULT_RANKING,
    cache_key: Hashable | None = None,
    words: Callable[[], WordIndex] | None = None,
) -> list[Hit]:
    """The store's best `limit` hits for `query` (non-empty), best first.

    Runs inside the caller's read transaction. `degrees(slugs)` returns the link in-degrees
    of candidate Pages; `vocabulary()` the store's vocabulary (built once per revision, only
    when a word is unknown or the list is short); `phrase` the query's terms in order,
    space-joined (default: the distinct terms); `cache_key` names the store revision
    (path, store_id, store_revision) whose decoded postings may be kept (`PREPARED`);
    `words()` the store revision's typo index (`typo_index.WordIndex`, a new one when None):
    unknown words are corrected through it, reading only the words they are compared with.
    """
    facts = None if cache_key is None else FACTS.get_or_build(cache_key, _Facts)
    docs, length = _stats(conn, facts)
    if docs == 0 or not query:
        return []
    if docs >= VECTOR_STORE_MIN:
        _vector(VECTOR_MIN)
    phrase = phrase if phrase is not None else " ".join(qt.term for qt in query)
    known = _doc_freqs(conn, [qt.term for qt in query], facts)
    weighted: dict[str, tuple[float, int]] = {}
    vocab: Vocabulary | BoundIndex | None = None
    typos: BoundIndex | None = None
    k1p = ranking.k1 + 1.0
    for qt in query:
        qtf = qt.count if ranking.query_tf else 1
        if qt.term in known:
            weight = idf(docs, known[qt.term]) * qtf * k1p
            previous = weighted.get(qt.term, (0.0, 1))[0]
            weighted[qt.term] = (max(previous, weight), 1)
        elif max_edits(qt.surface) > 0:
            _check(cancelled)
            typos = typos or (WordIndex() if words is None else words()).bind(conn)
            for stem, df in _corrections(conn, typos, qt.surface, facts):
                weight = idf(docs, df) * qtf * k1p * ranking.correction_weight
                if stem not in weighted:
                    weighted[stem] = (weight, 0)
    _check(cancelled)
    terms = [(term, w, exact) for term, (w, exact) in weighted.items()]
    postings = _prepared(conn, cache_key, list(weighted), *_scale(docs, length, ranking), cancelled)
    scores = score(postings, terms, cancelled)
    _check(cancelled)
    # The best CANDIDATE_FACTOR × limit documents still indexed (rewritten and removed ones
    # leave dead postings behind until their terms' segments are merged).
    want = CANDIDATE_FACTOR * limit
    ranked = scores.best(want)
    scored, described = _live(conn, ranked, want, facts=facts, cancelled=cancelled)
    if len(scored) < want < len(scores):  # dead documents among the best: look further
        scored, described = _live_beyond(conn, scores, want, scored, described, facts, cancelled)
    pages = [info[1] for info in described.values() if info[0] == "page"]
    sources = [info[1] for info in described.values() if info[0] == "source"]
    hidden = _summarized(conn, pages, sources) if sources else set()
    wants_generic = any(qt.term in GENERIC_TERMS for qt in query)
    degree_map = _degrees(degrees, pages, facts) if pages else {}
    # Candidates as plain tuples (rank, Pages first, identifier, doc id, doc type): only the
    # `limit` kept become `Hit`s, and only they need their match label and snippet offset.
    padded = f" {phrase} "
    ranked_hits: list[tuple[float, int, str, int, str]] = []
    for neg, doc_id in scored:
        doc_type, ident, title, path, generic = described[doc_id]
        if doc_type == "page":
            factor = _factor(title, path, generic, padded, wants_generic, ranking)
            factor *= _LINK_FACTORS[min(degree_map.get(ident, 0), LINK_CAP)]
            ranked_hits.append((neg * factor, 0, ident, doc_id, doc_type))
        elif doc_type != "source" or ident not in hidden:
            factor = _factor(title, path, generic, padded, wants_generic, ranking)
            ranked_hits.append((neg * factor, 1, ident, doc_id, doc_type))
    ranked_hits.sort(key=_HIT_ORDER)  # as `Hit.sort_key`; stable, like the sort of Hits
    del ranked_hits[limit:]
    offsets = _first_offsets(postings, [item[3] for item in ranked_hits], list(weighted))
    hits = [
        Hit(
            doc_type,
            ident,
            rank,
            "lexical" if scores.is_exact(doc_id) else "fuzzy",
            offsets.get(doc_id, -1),
        )
        for rank, _order, ident, doc_id, doc_type in ranked_hits
    ]

    if len(hits) < limit:
        _check(cancelled)
        vocab = vocab or vocabulary()
        seen = {doc_id for _neg, doc_id in scored}
        filling = _fill_up(conn, vocab, query, cancelled)
        taken, more = _live(conn, filling, limit + len(seen), seen, facts, cancelled)
        filled = [(doc_id, ratio) for _neg, doc_id, ratio in taken if doc_id not in seen]
        cited = [more[d][1] for d, _r in filled if more[d][0] == "source"]
        if cited:
            # The candidates' Pages (the hits' among them) and the filled ones.
            slugs = [*pages, *(more[d][1] for d, _r in filled if more[d][0] == "page")]
            hidden |= _summarized(conn, slugs, cited)
        extra: list[Hit] = []
        for doc_id, ratio in filled:
            doc_type, ident = more[doc_id][0], more[doc_id][1]
            if doc_type == "source" and ident in hidden:
                continue
            extra.append(Hit(doc_type, ident, round((100.0 - ratio) / 100.0, 6), "fuzzy"))
        extra.sort(key=Hit.sort_key)
        hits.extend(extra[: limit - len(hits)])
    return hits


_Ranked = TypeVar("_Ranked", tuple[float, int], tuple[float, int, float])


def _degrees(
    degrees: Callable[[Sequence[str]], dict[str, int]], pages: Sequence[str], facts: _Facts | None
) -> dict[str, int]:
    """`degrees(pages)`, remembered per revision in `facts` (0 included)."""
    if facts is None:
        return degrees(pages)
    cached = facts.degrees
    missing = [slug for slug in pages if slug not in cached]
    if not missing:
        return {slug: cached[slug] for slug in pages}
    found = degrees(missing)
    answer = {slug: cached[slug] for slug in pages if slug in cached}
    answer.update(found)
    if len(cached) < FACTS_MAX:
        cached.update((slug, found.get(slug, 0)) for slug in missing)
    return answer


LIVE_CHUNK = 500
"""Documents whose liveness one `search_docs` lookup checks while looking past dead ones."""


def _live_beyond(
    conn: sqlite3.Connection,
    scores: Scores,
    want: int,
    taken: list[tuple[float, int]],
    described: dict[int, Description],
    facts: _Facts | None,
    cancelled: threading.Event | None,
) -> tuple[list[tuple[float, int]], dict[int, Description]]:
    """The best `want` documents still in `search_docs`, when the best `want` scored held
    fewer (`taken`, `described`): the next ranks in windows four times as deep each
    (`Scores.ranked`, in no order), looked up `LIVE_CHUNK` at a time, until `want` are
    found; then only those found are sorted. Bounded by what was scored, and by
    `cancelled` between lookups: a store whose best-scored documents are millions of dead
    ones (rewritten Pages whose postings were not merged away yet) is read until its
    deadline share ends, never past it."""
    live = list(taken)
    described = dict(described)
    done = want
    while len(live) < want and done < len(scores):
        stop = min(len(scores), 4 * done)
        for chunk in scores.ranked(done, stop, LIVE_CHUNK):
            _check(cancelled)
            found = _describe(conn, [doc_id for _neg, doc_id in chunk], facts)
            for item in chunk:
                if item[1] in found:
                    live.append(item)
                    described[item[1]] = found[item[1]]
        done = stop
    live.sort()
    del live[want:]
    kept = {doc_id for _neg, doc_id in live}
    return live, {doc_id: info for doc_id, info in described.items() if doc_id in kept}


def _live(
    conn: sqlite3.Connection,
    ranked: Sequence[_Ranked],
    want: int,
    known: set[int] | None = None,
    facts: _Facts | None = None,
    cancelled: threading.Event | None = None,
) -> tuple[list[_Ranked], dict[int, Description]]:
    """The first `want` of `ranked` (doc id second) still in `search_docs` (those in `known`
    are, without a lookup) and the descriptions of the others taken. Bounded by what was
    scored, and by `cancelled` between steps: a store whose best-scored documents are
    millions of dead ones (rewritten Pages whose postings were not merged away yet) is read
    until its deadline share ends, never past it."""
    known = known or set()
    taken: list[_Ranked] = []
    described: dict[int, Description] = {}
    start, step = 0, max(want, 16)
    while len(taken) < want and start < len(ranked):
        _check(cancelled)
        chunk = ranked[start : start + step]
        start += step
        found = _describe(conn, [item[1] for item in chunk if item[1] not in known], facts)
        for item in chunk:
            doc_id = item[1]
            if doc_id in known or doc_id in found:
                taken.append(item)
                if doc_id in found:
                    described[doc_id] = found[doc_id]
                if len(taken) == want:
                    break
        step = min(step * 4, 2000)
    return taken, described


def load_degrees(conn: sqlite3.Connection, slugs: Sequence[str]) -> dict[str, int]:
    """Inbound link count of each of `slugs` (for the rerank), through `links_by_target`,
    counted up to `LINK_CAP` + 1 only: the boost stops at `LINK_CAP`, so a hub's millions of
    in-links are never all read (SPEC §4: links read per Page are bounded at the query)."""
    degrees: dict[str, int] = {}
    for chunk in _chunks(list(slugs)):
        rows = conn.execute(
            "WITH wanted(slug) AS (VALUES " + ", ".join("(?)" for _ in chunk) + ") "
            "SELECT slug, (SELECT COUNT(*) FROM (SELECT 1 FROM links "
            "WHERE to_slug = wanted.slug LIMIT ?)) FROM wanted",
            (*chunk, LINK_CAP + 1),
        )
        degrees.update((slug, int(count)) for slug, count in rows if count)
    return degrees
