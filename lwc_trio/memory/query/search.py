"""Deterministic "auto" search inside one store's read transaction (SPEC §4 "Search").

1. **BM25F** over the analyzed fields (title, path, summary, body; `fields.FIELD_WEIGHTS`)
   of every document holding any query term: no term is ever dropped. IDF is
   log(1 + (N − n + 0.5)/(n + 0.5)), positive for every term, so a term in most documents of
   a small store still counts. A term repeated in the query weighs more (query term
   frequency). Scored by one SQL statement over `search_postings`.
2. **Typo correction**: a query word no document contains is searched as its nearest
   vocabulary words too (`fuzzy.py`); a document found only through such words is
   `"match": "fuzzy"`.
3. **Adjustments** on the best `CANDIDATE_FACTOR × max(limit, pool)`: a title or path equal
   to (or containing) the whole query pulls a document up; generic pages (index, overview,
   readme, toc, contents) are pushed down unless the query asks for them; a small link-graph
   boost.
   Everything they need was stored at write time (`index/`): no text is analyzed here.
4. A Source cited by a matching `kind=source` Page is hidden (the Page summarizes it).
5. **Title fill-up**: when fewer than `limit` remain, documents whose title or path matches
   the query by `fuzz.ratio` follow, with ranks ≥ 0 (after every lexical hit).
"""

from __future__ import annotations

import bisect
import math
import operator
import sqlite3
import threading
from array import array
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import attrs

from lwc_trio.memory.format import segments as segment_rows
from lwc_trio.memory.format.cache import RevisionCache
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
from lwc_trio.memory.query.scoring import (
    DEFAULT_RANKING,
    SEGMENTS_MAX,
    VECTOR_MIN,
    VECTOR_STORE_MIN,
    Prepared,
    Ranking,
    Scores,
    bm25_scale,
    check_cancelled,
    chunks,
    idf,
    load_postings,
    prepare,
    prepared_postings,
    score,
    too_many_segments,
    vector_for,
)
from lwc_trio.memory.text.fields import GENERIC_TERMS
from lwc_trio.memory.text.tokenize import QueryTerm

__all__ = [
    "CANDIDATE_FACTOR",
    "Hit",
    "floor_scorer",
    "load_degrees",
    "query_weights",
    "search_store",
]

CANDIDATE_FACTOR = 4
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
    for chunk in chunks(wanted):
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
        prepared = prepare(postings, *bm25_scale(docs, length, DEFAULT_RANKING))
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
    for chunk in chunks(list(slugs)):
        for cited in chunks(list(sources)):
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
        raise too_many_segments()
    for rowid, kind, size in rows:
        if kind != "blob" or not isinstance(size, int) or size % 4:
            raise sqlite3.DatabaseError("the search index holds invalid postings")
        take = min(size // 4, most)
        if take <= 0:
            continue
        check_cancelled(cancelled)
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
        check_cancelled(cancelled)
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
            check_cancelled(cancelled)
            for segment in _title_ids(conn, stem, left, cancelled):
                left -= len(segment)
                for doc_id in segment:
                    if ratio > per_word.get(doc_id, -1.0):
                        per_word[doc_id] = ratio
        for doc_id, ratio in per_word.items():
            totals[doc_id] = totals.get(doc_id, 0.0) + ratio
    check_cancelled(cancelled)
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
    pool: int = 0,
) -> list[Hit]:
    """The store's best `limit` hits for `query` (non-empty), best first; with `pool` above
    `limit`, its best `pool` scored hits (what `evidence.rerank` ranks again, from the best
    `CANDIDATE_FACTOR × pool` candidates), title fill-ups still only up to `limit`.

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
        vector_for(VECTOR_MIN)
    phrase = phrase if phrase is not None else " ".join(qt.term for qt in query)
    weighted = _weigh(conn, query, docs, ranking, words, facts, cancelled)
    check_cancelled(cancelled)
    terms = [(term, w, exact) for term, (w, exact) in weighted.items()]
    postings = prepared_postings(
        conn, cache_key, list(weighted), *bm25_scale(docs, length, ranking), cancelled
    )
    scores = score(postings, terms, cancelled)
    check_cancelled(cancelled)
    ranked_most = max(limit, pool)
    # The best CANDIDATE_FACTOR × ranked_most documents still indexed (rewritten and removed
    # ones leave dead postings behind until their terms' segments are merged).
    want = CANDIDATE_FACTOR * ranked_most
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
    # `ranked_most` kept become `Hit`s, and only they need their match label and offset.
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
    del ranked_hits[ranked_most:]
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
        check_cancelled(cancelled)
        seen = {doc_id for _neg, doc_id in scored}
        filled = _filled(conn, vocabulary(), query, limit, seen, pages, hidden, facts, cancelled)
        hits.extend(filled[: limit - len(hits)])
    return hits


def _weigh(
    conn: sqlite3.Connection,
    query: Sequence[QueryTerm],
    docs: int,
    ranking: Ranking,
    words: Callable[[], WordIndex] | None,
    facts: _Facts | None,
    cancelled: threading.Event | None,
) -> dict[str, tuple[float, int]]:
    """Each term searched for `query` with its weight idf × qtf × (k1 + 1), and 1 for the
    query's own terms, 0 for the stems correcting an unknown word (`ranking.correction_weight`
    less). A term asked twice keeps its larger weight."""
    known = _doc_freqs(conn, [qt.term for qt in query], facts)
    weighted: dict[str, tuple[float, int]] = {}
    typos: BoundIndex | None = None
    k1p = ranking.k1 + 1.0
    for qt in query:
        qtf = qt.count if ranking.query_tf else 1
        if qt.term in known:
            weight = idf(docs, known[qt.term]) * qtf * k1p
            previous = weighted.get(qt.term, (0.0, 1))[0]
            weighted[qt.term] = (max(previous, weight), 1)
        elif max_edits(qt.surface) > 0:
            check_cancelled(cancelled)
            typos = typos or (WordIndex() if words is None else words()).bind(conn)
            for stem, df in _corrections(conn, typos, qt.surface, facts):
                weight = idf(docs, df) * qtf * k1p * ranking.correction_weight
                if stem not in weighted:
                    weighted[stem] = (weight, 0)
    return weighted


def _filled(
    conn: sqlite3.Connection,
    vocab: Vocabulary | BoundIndex,
    query: Sequence[QueryTerm],
    limit: int,
    seen: set[int],
    pages: list[str],
    hidden: set[str],
    facts: _Facts | None,
    cancelled: threading.Event | None,
) -> list[Hit]:
    """The title fill-up's hits, best first (`_fill_up`), none of `seen` and no Source that
    a matching `kind=source` Page summarizes (`hidden`, `pages`: the candidates' Pages)."""
    filling = _fill_up(conn, vocab, query, cancelled)
    taken, more = _live(conn, filling, limit + len(seen), seen, facts, cancelled)
    filled = [(doc_id, ratio) for _neg, doc_id, ratio in taken if doc_id not in seen]
    cited = [more[d][1] for d, _r in filled if more[d][0] == "source"]
    if cited:
        # The candidates' Pages (the hits' among them) and the filled ones.
        slugs = [*pages, *(more[d][1] for d, _r in filled if more[d][0] == "page")]
        hidden = hidden | _summarized(conn, slugs, cited)
    extra: list[Hit] = []
    for doc_id, ratio in filled:
        doc_type, ident = more[doc_id][0], more[doc_id][1]
        if doc_type == "source" and ident in hidden:
            continue
        extra.append(Hit(doc_type, ident, round((100.0 - ratio) / 100.0, 6), "fuzzy"))
    extra.sort(key=Hit.sort_key)
    return extra


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
            check_cancelled(cancelled)
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
        check_cancelled(cancelled)
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
    for chunk in chunks(list(slugs)):
        rows = conn.execute(
            "WITH wanted(slug) AS (VALUES " + ", ".join("(?)" for _ in chunk) + ") "
            "SELECT slug, (SELECT COUNT(*) FROM (SELECT 1 FROM links "
            "WHERE to_slug = wanted.slug LIMIT ?)) FROM wanted",
            (*chunk, LINK_CAP + 1),
        )
        degrees.update((slug, int(count)) for slug, count in rows if count)
    return degrees
