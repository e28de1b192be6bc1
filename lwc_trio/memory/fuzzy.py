"""Typo tolerance: a store's vocabulary and the two fuzzy passes of the search (SPEC §4).

1. **Per-term correction.** A query word whose stem no store document contains is compared
   with the store's vocabulary (folded words and stems) by optimal-string-alignment distance
   (an adjacent swap is one edit): at most 1 edit for words of 4–7 characters, 2 from 8 on;
   shorter words are never corrected (one edit in three letters is another word). The
   nearest words win, ties broken by document frequency then spelling, so the choice is
   deterministic; their stems are searched beside the query's own terms.
2. **Title fill-up.** When fewer than maxDocuments were found, every query word is compared
   with the vocabulary by `fuzz.ratio` (≥ 80), and documents whose title or path holds such
   words for most of the query (mean best ratio ≥ 80) fill the list, after every lexical hit.

The vocabulary is read once per store revision, in a thread of its own (`cache.BuildOnce`),
so its cost is paid once however many requests need it, even when the first one times out.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import attrs
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

__all__ = [
    "MAX_CORRECTIONS",
    "MIN_FUZZY_TERM",
    "TITLE_CUTOFF",
    "Vocabulary",
    "build_vocabulary",
    "max_edits",
    "near_words",
    "similar_words",
]

MIN_FUZZY_TERM = 4
TITLE_CUTOFF = 80.0
"""fuzz.ratio for one insertion or deletion in a 5-letter word is 88.9, one substitution 80."""
MAX_CORRECTIONS = 3
"""At most this many vocabulary terms stand in for one unknown query word."""
ONE_EDIT_MAX = 7
"""The longest word corrected with one edit (`max_edits`)."""
MEMO_SIZE = 4096
"""Words whose near and similar words one `Vocabulary` remembers (then it starts over)."""


def max_edits(word: str) -> int:
    """Edits allowed when correcting `word` (0: too short to correct)."""
    n = len(word)
    return 0 if n < MIN_FUZZY_TERM else 1 if n <= 7 else 2


@attrs.frozen(eq=False)
class Vocabulary:
    """Every folded word (and stem) of one store revision, bucketed by length."""

    stems: dict[str, str]  # word -> its stem (a stem maps to itself)
    by_length: dict[int, tuple[str, ...]]  # length -> words, sorted
    titled: dict[int, tuple[str, ...]] = attrs.field(factory=dict)
    """length -> the words whose stem is in some document's title or path, sorted (the
    title fill-up looks only there: other words could not fill anything)."""
    initials: dict[int, dict[str, tuple[str, ...]]] = attrs.field(factory=dict)
    """length -> first character -> those words, sorted, for the lengths one-edit
    corrections looked at so far (`_one_edit`; built from `by_length` on first need)."""
    tails: dict[int, dict[str, tuple[str, ...]]] = attrs.field(factory=dict)
    """length -> word[1:] -> those words, sorted, likewise."""
    memo: dict[tuple[str, str, int], list[Any]] = attrs.field(factory=dict)
    """`near_words` and `similar_words` answers for this revision's vocabulary, up to
    `MEMO_SIZE` words (agents repeat their words; rapidfuzz over the buckets costs ~0.1 ms)."""

    def __len__(self) -> int:
        return len(self.stems)


def build_vocabulary(conn: sqlite3.Connection) -> Vocabulary:
    """Read the vocabulary inside the caller's read transaction."""
    stems: dict[str, str] = {}
    for word, term in conn.execute(
        "SELECT term, term FROM search_terms UNION ALL SELECT word, term FROM search_words"
    ):
        if isinstance(word, str) and isinstance(term, str) and len(word) >= MIN_FUZZY_TERM - 1:
            stems.setdefault(word, term)
    in_titles = {
        row[0]
        for row in conn.execute("SELECT DISTINCT term FROM search_segments WHERE length(heads) > 0")
    }
    return Vocabulary(
        stems,
        _buckets(stems),
        _buckets({word: stem for word, stem in stems.items() if stem in in_titles}),
    )


def _buckets(stems: dict[str, str]) -> dict[int, tuple[str, ...]]:
    buckets: dict[int, list[str]] = {}
    for word in stems:
        buckets.setdefault(len(word), []).append(word)
    return {n: tuple(sorted(words)) for n, words in buckets.items()}


def _remember(vocab: Vocabulary, key: tuple[str, str, int], found: list[Any]) -> None:
    if len(vocab.memo) >= MEMO_SIZE:
        vocab.memo.clear()
    vocab.memo[key] = found


def near_words(vocab: Vocabulary, word: str, edits: int) -> list[tuple[int, str, str]]:
    """`(distance, word, stem)` of vocabulary words within `edits` of `word`, nearest first
    (the list is shared: callers must not change it)."""
    key = ("near", word, edits)
    remembered = vocab.memo.get(key)
    if remembered is not None:
        return remembered
    found: list[tuple[int, str, str]] = []
    if edits == 1 and len(word) <= ONE_EDIT_MAX:
        found = _one_edit(vocab, word)
    else:
        for n in range(len(word) - edits, len(word) + edits + 1):
            words = vocab.by_length.get(n, ())
            for candidate, distance, _i in process.extract(
                word, words, scorer=OSA.distance, score_cutoff=edits, limit=None
            ):
                found.append((int(distance), candidate, vocab.stems[candidate]))
    found.sort()
    _remember(vocab, key, found)
    return found


def _one_edit(vocab: Vocabulary, word: str) -> list[tuple[int, str, str]]:
    """`near_words(vocab, word, 1)` unsorted, from `vocab.initials` and `vocab.tails`.

    A word within one edit (substitution, insertion, deletion or adjacent swap) of `word`
    either starts with the same character, and is in the buckets of that initial, or the
    edit is at the start: the first character substituted (same `word[1:]`), a character
    put before it (its tail is `word`), the first one deleted (`word[1:]`) or the first
    two swapped. Each candidate is measured as the whole-bucket scan measures it."""
    initial, n = word[0], len(word)
    found: list[tuple[int, str, str]] = []
    for length in range(n - 1, n + 2):
        for candidate, distance, _i in process.extract(
            word, _index(vocab.initials, vocab, length, 0).get(initial, ()),
            scorer=OSA.distance, score_cutoff=1, limit=None,
        ):  # fmt: skip
            found.append((int(distance), candidate, vocab.stems[candidate]))
    others = {
        *_index(vocab.tails, vocab, n, 1).get(word[1:], ()),
        *_index(vocab.tails, vocab, n + 1, 1).get(word, ()),
    }
    others.update(w for w in (word[1:], word[1::-1] + word[2:]) if w in vocab.stems)
    for candidate in others:
        if candidate[0] != initial:  # the others were found above
            distance = OSA.distance(word, candidate, score_cutoff=1)
            if distance <= 1:
                found.append((distance, candidate, vocab.stems[candidate]))
    return found


def _index(
    kept: dict[int, dict[str, tuple[str, ...]]], vocab: Vocabulary, length: int, tail: int
) -> dict[str, tuple[str, ...]]:
    """The words of `length` characters by their first character (`tail` 0) or by all but
    it (`tail` 1), built on first need and kept in `kept` (threads may build one twice: the
    same value)."""
    index = kept.get(length)
    if index is None:
        grouped: dict[str, list[str]] = {}
        for word in vocab.by_length.get(length, ()):  # sorted, so each group is too
            grouped.setdefault(word[1:] if tail else word[0], []).append(word)
        index = {key: tuple(words) for key, words in grouped.items()}
        kept[length] = index
    return index


def similar_words(vocab: Vocabulary, word: str) -> list[tuple[float, str, str]]:
    """`(ratio, word, stem)` of the vocabulary words whose stem is in some title or path
    (`Vocabulary.titled`) with `fuzz.ratio` ≥ `TITLE_CUTOFF` (shared: do not change it)."""
    key = ("similar", word, 0)
    remembered = vocab.memo.get(key)
    if remembered is not None:
        return remembered
    if len(word) < MIN_FUZZY_TERM:
        stem = vocab.stems.get(word)
        return [] if stem is None else [(100.0, word, stem)]
    # ratio = 100 (1 - indel / (a + b)) ≥ 80 needs the lengths within a factor of 1.5.
    low, high = (2 * len(word) + 2) // 3, (3 * len(word)) // 2
    found: list[tuple[float, str, str]] = []
    for n in range(low, high + 1):
        for candidate, ratio, _i in process.extract(
            word, vocab.titled.get(n, ()), scorer=fuzz.ratio,
            score_cutoff=TITLE_CUTOFF, limit=None,
        ):  # fmt: skip
            found.append((float(ratio), candidate, vocab.stems[candidate]))
    found.sort(key=lambda item: (-item[0], item[1]))
    _remember(vocab, key, found)
    return found


def best_by_stem(found: Sequence[tuple[float, str, str]]) -> dict[str, float]:
    """The best ratio per stem."""
    best: dict[str, float] = {}
    for ratio, _word, stem in found:
        best[stem] = max(best.get(stem, 0.0), ratio)
    return best
