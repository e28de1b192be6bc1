"""Deterministic "auto" search inside one store's read transaction (SPEC §4).

1. BM25 over the pre-tokenized fields, weights title 8, path 6, summary 4, body 1, taking
   4 × limit candidates (FTS5's bm25() is negative: lower is better, like `rank`).
2. Lexical adjustments: a title or path equal to (or containing) the whole query pulls a
   document up; generic pages (index, overview, readme, toc) are pushed down unless the query
   asks for them.
3. A Source cited by a matching `kind=source` Page is hidden (the Page summarizes it).
4. A small link-graph rerank: Pages many others link to move up a little.
5. When fewer than `limit` lexical hits remain, a rapidfuzz pass over titles and slugs adds
   typo-tolerant matches with ranks >= 0, so they always follow every lexical hit.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

import attrs

from lwc_trio.memory.fuzzy import FuzzyIndex, fuzzy_matches
from lwc_trio.memory.tokenize import tokens

__all__ = [
    "BM25_WEIGHTS",
    "CANDIDATE_FACTOR",
    "Hit",
    "fts_query",
    "load_degrees",
    "search_store",
]

BM25_WEIGHTS = (8.0, 6.0, 4.0, 1.0)  # title, path, summary, body
CANDIDATE_FACTOR = 4

TITLE_EXACT, TITLE_PHRASE = 2.0, 1.5
PATH_EXACT, PATH_PHRASE = 1.5, 1.25
GENERIC_PENALTY = 0.5
# Inbound-link boost: 1 + LINK_BOOST * log2(1 + min(degree, LINK_CAP)); at most +20 %.
LINK_BOOST, LINK_CAP = 0.05, 15

_GENERIC_FORMS = frozenset(
    {("index",), ("overview",), ("readme",), ("toc",), ("contents",), ("table", "contents")}
)
_GENERIC_TERMS = frozenset({"index", "overview", "readme", "toc", "contents"})


@attrs.frozen
class Hit:
    """One ranked document of one store."""

    doc_type: str  # "page" | "source"
    identifier: str
    rank: float
    match: str  # "lexical" | "fuzzy"

    def sort_key(self) -> tuple[float, int, str]:
        """Rank, then Pages before Sources, then identifier."""
        return (self.rank, 0 if self.doc_type == "page" else 1, self.identifier)


def fts_query(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the terms, each quoted (terms never contain `"`)."""
    return " OR ".join(f'"{term}"' for term in terms)


def _contains_run(words: Sequence[str], run: Sequence[str]) -> bool:
    n = len(run)
    return any(list(words[i : i + n]) == list(run) for i in range(len(words) - n + 1))


def _adjustment(
    title: str, path: str, name: str, terms: Sequence[str], wants_generic: bool
) -> float:
    """The multiplier for a BM25 score; > 1 pulls a document up (scores are negative)."""
    factor = 1.0
    title_words, path_words = tokens(title), tokens(path)
    if title_words == list(terms):
        factor *= TITLE_EXACT
    elif _contains_run(title_words, terms):
        factor *= TITLE_PHRASE
    if path_words == list(terms):
        factor *= PATH_EXACT
    elif _contains_run(path_words, terms):
        factor *= PATH_PHRASE
    generic = tuple(tokens(name)) in _GENERIC_FORMS or tuple(title_words) in _GENERIC_FORMS
    if generic and not wants_generic:
        factor *= GENERIC_PENALTY
    return factor


def _chunks(items: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _marks(n: int) -> str:
    return ",".join("?" * n)


DOC_COUNTS_LIMIT = 4096
"""Most document counts one store revision remembers (a long session asks many terms)."""


def selective_terms(
    conn: sqlite3.Connection, terms: Sequence[str], doc_counts: dict[str, int] | None = None
) -> list[str]:
    """The terms worth matching on: those in fewer than half of the documents.

    FTS5's BM25 floors the IDF of a term found in at least half of the documents at 1e-6, so
    such a term cannot change the order of documents that match anything rarer, yet matching
    it makes SQLite score nearly every row. When every term is that common, all are kept.
    Counting a term's documents walks only its posting list, a small fraction of scoring it.
    `doc_counts` remembers the counts (key `""` is the total) for one store revision.
    """
    if len(terms) < 2:
        return list(terms)
    memo: dict[str, int] = {} if doc_counts is None else doc_counts

    def count(key: str, sql: str, *params: str) -> int:
        value = memo.get(key)
        if value is None:
            value = int(conn.execute(sql, params).fetchone()[0])
            if len(memo) < DOC_COUNTS_LIMIT:
                memo[key] = value
        return value

    total = count("", "SELECT count(*) FROM search_docs")
    match = "SELECT count(*) FROM search_index WHERE search_index MATCH ?"
    selective = [term for term in terms if 2 * count(term, match, fts_query([term])) < total]
    return selective or list(terms)


def _lexical(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    limit: int,
    doc_counts: dict[str, int] | None = None,
) -> list[tuple[str, str, float]]:
    terms = selective_terms(conn, terms, doc_counts)
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    rows = conn.execute(
        f"SELECT d.doc_type, d.ident, bm25(search_index, {weights}) AS score "
        "FROM search_index JOIN search_docs AS d ON d.doc_id = search_index.rowid "
        "WHERE search_index MATCH ? ORDER BY score, d.doc_type, d.ident LIMIT ?",
        (fts_query(terms), limit),
    ).fetchall()
    return [(str(t), str(i), float(s)) for t, i, s in rows]


def search_store(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    limit: int,
    *,
    degrees: Callable[[Sequence[str]], dict[str, int]],
    fuzzy_index: Callable[[], FuzzyIndex],
    cancelled: threading.Event | None = None,
    doc_counts: dict[str, int] | None = None,
) -> list[Hit]:
    """The store's best `limit` hits for `terms` (non-empty), best first.

    Runs inside the caller's read transaction. `degrees(slugs)` returns the link in-degrees of
    the candidate Pages; `fuzzy_index()` the cached per-revision title index (built lazily:
    most queries never need it); `doc_counts` the per-revision memo `selective_terms` fills.
    """
    candidates = _lexical(conn, terms, CANDIDATE_FACTOR * limit, doc_counts)
    pages = [ident for doc_type, ident, _ in candidates if doc_type == "page"]
    sources = [ident for doc_type, ident, _ in candidates if doc_type == "source"]

    # (type, id) -> (title, path field, name for the generic test, kind)
    described: dict[tuple[str, str], tuple[str, str, str, str | None]] = {}
    for chunk in _chunks(pages):
        for slug, title, kind in conn.execute(
            f"SELECT slug, title, kind FROM pages WHERE slug IN ({_marks(len(chunk))})", chunk
        ):
            described["page", slug] = (title, slug, slug, kind)
    for chunk in _chunks(sources):
        for ident, title, origin in conn.execute(
            f"SELECT id, title, origin FROM sources WHERE id IN ({_marks(len(chunk))})", chunk
        ):
            origin = origin or ""
            described["source", ident] = (title, origin, PurePosixPath(origin).stem, None)

    # A Source summarized by a matching `kind=source` Page is hidden.
    summarizers = [key[1] for key, info in described.items() if info[3] == "source"]
    hidden: set[str] = set()
    for chunk in _chunks(summarizers):
        hidden.update(
            row[0]
            for row in conn.execute(
                f"SELECT source_id FROM page_sources WHERE page_slug IN ({_marks(len(chunk))})",
                chunk,
            )
        )

    wants_generic = any(term in _GENERIC_TERMS for term in terms)
    degree_map = degrees(pages) if pages else {}
    hits: list[Hit] = []
    for doc_type, ident, score in candidates:
        info = described.get((doc_type, ident))
        if info is None or (doc_type == "source" and ident in hidden):
            continue
        title, path, name, _kind = info
        factor = _adjustment(title, path, name, terms, wants_generic)
        if doc_type == "page":
            degree = min(degree_map.get(ident, 0), LINK_CAP)
            factor *= 1.0 + LINK_BOOST * math.log2(1 + degree)
        hits.append(Hit(doc_type, ident, score * factor, "lexical"))
    hits.sort(key=Hit.sort_key)
    hits = hits[:limit]

    if len(hits) < limit:
        seen = {(doc_type, ident) for doc_type, ident, _ in candidates}
        fuzzy = fuzzy_matches(
            fuzzy_index(), terms, exclude=seen, limit=limit - len(hits), cancelled=cancelled
        )
        fuzzy_sources = [ident for doc_type, ident, _ in fuzzy if doc_type == "source"]
        if fuzzy_sources:
            slugs = [h.identifier for h in hits if h.doc_type == "page"]
            slugs += [ident for doc_type, ident, _ in fuzzy if doc_type == "page"]
            hidden |= _summarized(conn, fuzzy_sources, slugs)
        for doc_type, ident, score in fuzzy:
            if doc_type == "source" and ident in hidden:
                continue
            hits.append(Hit(doc_type, ident, round((100.0 - score) / 100.0, 6), "fuzzy"))
    return hits


def _summarized(
    conn: sqlite3.Connection, source_ids: Sequence[str], slugs: Sequence[str]
) -> set[str]:
    """Which of `source_ids` a `kind=source` Page among `slugs` cites."""
    if not slugs:
        return set()
    rows = conn.execute(
        "SELECT ps.source_id FROM page_sources AS ps JOIN pages AS p ON p.slug = ps.page_slug "
        f"WHERE p.kind = 'source' AND ps.page_slug IN ({_marks(len(slugs))}) "
        f"AND ps.source_id IN ({_marks(len(source_ids))})",
        [*slugs, *source_ids],
    )
    return {row[0] for row in rows}


def load_degrees(conn: sqlite3.Connection, slugs: Sequence[str]) -> dict[str, int]:
    """Inbound link count of each of `slugs` (for the rerank).

    Counted for the candidates only, through the `links_by_target` index: a whole-store count
    cost ~60 ms at 50,000 pages on the first query after every write.
    """
    degrees: dict[str, int] = {}
    for chunk in _chunks(list(slugs)):
        rows = conn.execute(
            f"SELECT to_slug, COUNT(*) FROM links WHERE to_slug IN ({_marks(len(chunk))}) "
            "GROUP BY to_slug",
            chunk,
        )
        degrees.update((slug, int(count)) for slug, count in rows)
    return degrees
