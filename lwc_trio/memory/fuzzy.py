"""Typo-tolerant fallback over titles and slugs (rapidfuzz), used when lexical search is short.

Matching is per term, not per whole string: every query term is compared with the words of a
document's title (and, for Pages, its slug) that start with the same character, using
`fuzz.ratio`; a document's score is the mean of its best per-term scores. This finds
"kubernets deploymnt" → "Kubernetes Deployment" but not "rust" → "Trust boundaries", which
whole-string partial matching would (typos rarely hit the first letter, and requiring it also
cuts the comparisons to one bucket of the vocabulary).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

import attrs
from rapidfuzz import fuzz, process

from lwc_trio.exceptions import MemoryCancelled
from lwc_trio.memory.tokenize import tokens

__all__ = ["FUZZY_DOC_CUTOFF", "FuzzyIndex", "build_fuzzy_index", "fuzzy_matches"]

# A term shorter than this only matches exactly: one edit in three letters is another word.
MIN_FUZZY_TERM = 4
# fuzz.ratio for one insertion or deletion in a 5-letter word is 88.9, one substitution 80.
TERM_CUTOFF = 80.0
FUZZY_DOC_CUTOFF = 80.0


@attrs.frozen
class FuzzyIndex:
    """Title/slug words of one store revision and the documents that contain each."""

    docs: tuple[tuple[str, str], ...]  # (doc_type, identifier)
    vocab: tuple[str, ...]
    postings: tuple[tuple[int, ...], ...]  # vocab position -> doc positions
    positions: dict[str, int] = attrs.field(eq=False)
    # first character -> (words, their vocab positions)
    buckets: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = attrs.field(eq=False)


def build_fuzzy_index(conn: sqlite3.Connection) -> FuzzyIndex:
    """Read every Page title/slug and Source title (inside the caller's read transaction)."""
    docs: list[tuple[str, str]] = []
    words: dict[str, set[int]] = {}
    rows = conn.execute(
        "SELECT 'page', slug, title || ' ' || slug FROM pages "
        "UNION ALL SELECT 'source', id, title FROM sources ORDER BY 1, 2"
    )
    for doc_type, ident, text in rows:
        position = len(docs)
        docs.append((doc_type, ident))
        for word in tokens(text):
            words.setdefault(word, set()).add(position)
    vocab = tuple(sorted(words))
    grouped: dict[str, list[int]] = {}
    for i, word in enumerate(vocab):
        grouped.setdefault(word[0], []).append(i)
    return FuzzyIndex(
        docs=tuple(docs),
        vocab=vocab,
        postings=tuple(tuple(sorted(words[word])) for word in vocab),
        positions={word: i for i, word in enumerate(vocab)},
        buckets={
            first: (tuple(vocab[i] for i in members), tuple(members))
            for first, members in grouped.items()
        },
    )


def _term_hits(index: FuzzyIndex, term: str) -> list[tuple[int, float]]:
    if len(term) < MIN_FUZZY_TERM:
        exact = index.positions.get(term)
        return [] if exact is None else [(exact, 100.0)]
    words, positions = index.buckets.get(term[0], ((), ()))
    found = process.extract(term, words, scorer=fuzz.ratio, score_cutoff=TERM_CUTOFF, limit=None)
    return [(positions[i], float(score)) for _word, score, i in found]


def fuzzy_matches(
    index: FuzzyIndex,
    terms: Sequence[str],
    *,
    exclude: set[tuple[str, str]],
    limit: int,
    cancelled: threading.Event | None = None,
) -> list[tuple[str, str, float]]:
    """Up to `limit` `(doc_type, identifier, score)` not in `exclude`, best first.

    `score` is 0-100; ties are broken by type then identifier, so the result is deterministic.
    Raises `MemoryCancelled` when `cancelled` is set between terms.
    """
    if not terms or limit <= 0 or not index.docs:
        return []
    best: dict[int, list[float]] = {}
    for i, term in enumerate(terms):
        if cancelled is not None and cancelled.is_set():
            raise MemoryCancelled()
        for position, score in _term_hits(index, term):
            for doc in index.postings[position]:
                scores = best.setdefault(doc, [0.0] * len(terms))
                scores[i] = max(scores[i], score)
    ranked: list[tuple[str, str, float]] = []
    for doc, scores in best.items():
        total = sum(scores) / len(terms)
        key = index.docs[doc]
        if total >= FUZZY_DOC_CUTOFF and key not in exclude:
            ranked.append((key[0], key[1], total))
    ranked.sort(key=lambda item: (-item[2], item[0] != "page", item[1]))
    return ranked[:limit]
