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

The server reads words from the store's typo index (`typo_index`), group by group, never the
whole vocabulary; a whole `Vocabulary` (`build_vocabulary`) gives the same answers and serves
the quality benchmark and the tests that compare both. Through the typo index, each word's
correction or comparison is charged to the store search's `TypoBudget` (its groups' words,
its candidates, `WORD_COST`) and remembered with that cost for the store revision; once the
budget is spent, the remaining words are left as they are.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Container, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import attrs
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from lwc_trio.memory.format import segments
from lwc_trio.memory.format.typo_index import BoundIndex, K, TypoBudget, V

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "MAX_CORRECTIONS",
    "MIN_FUZZY_TERM",
    "TITLE_CUTOFF",
    "Stems",
    "Vocabulary",
    "build_vocabulary",
    "max_edits",
    "near_words",
    "similar_words",
    "vocabulary_of",
]

_Hit = TypeVar("_Hit", tuple[int, str, str], tuple[float, str, str])
"""A correction: (distance or similarity, word, stem)."""
Memo = dict[tuple[str, str, int], tuple[int, list[Any]]]
"""("near" | "similar", word, edits) -> (what finding it cost, `TypoBudget` words; found)."""

MIN_FUZZY_TERM = 4
TITLE_CUTOFF = 80.0
"""fuzz.ratio for one insertion or deletion in a 5-letter word is 88.9, one substitution 80."""
MAX_CORRECTIONS = 3
"""At most this many vocabulary terms stand in for one unknown query word."""
ONE_EDIT_MAX = 7
"""The longest word corrected with one edit (`max_edits`)."""
MEMO_SIZE = 4096
"""Words whose near and similar words one `Vocabulary` remembers (then it starts over)."""
FILTER_MIN = 4096
"""Buckets of at least this many words are first narrowed by character-set signatures
(`signature`, one numpy pass): every word that could be within the cutoff survives."""
WORD_COST = 65_536
"""What correcting or comparing one query word costs the request's `TypoBudget` besides the
words of its groups: its lookups and calls (~0.5 ms, as much as ~65,000 words of a group's
numpy and rapidfuzz passes on the benchmark machine)."""
SCAN_CHUNK = 8192
"""Words one rapidfuzz call compares at most: a call holds the GIL throughout, and a length
bucket of a million-Page store holds ~500,000 words (~0.7 s in one call); a slice of this
size takes a few milliseconds, so the event loop and the other plane stay prompt (SPEC §4)."""


def max_edits(word: str) -> int:
    """Edits allowed when correcting `word` (0: too short to correct)."""
    n = len(word)
    return 0 if n < MIN_FUZZY_TERM else 1 if n <= 7 else 2


class Stems:
    """word -> its stem (a stem maps to itself), kept in many small dicts keyed by the word's
    length and first character: one dict of a million words would be resized (copied whole,
    holding the GIL) as it grows, a shard only ever copies a few thousand entries."""

    def __init__(self) -> None:
        self.shards: dict[tuple[int, str], dict[str, str]] = {}
        self._size = 0

    def add(self, word: str, stem: str) -> bool:
        """Keep `word`'s first stem; True when `word` is new."""
        key = (len(word), word[:1])
        shard = self.shards.get(key)
        if shard is None:
            shard = self.shards[key] = {}
        elif word in shard:
            return False
        shard[word] = stem
        self._size += 1
        return True

    def get(self, word: str) -> str | None:
        shard = self.shards.get((len(word), word[:1]))
        return None if shard is None else shard.get(word)

    def __getitem__(self, word: str) -> str:
        return self.shards[(len(word), word[:1])][word]

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.get(word) is not None

    def __len__(self) -> int:
        return self._size


@attrs.frozen(eq=False)
class Vocabulary:
    """Every folded word (and stem) of one store revision, bucketed by length."""

    stems: Stems
    by_length: dict[int, tuple[str, ...]]  # length -> words (in the store's term order)
    titled: dict[int, tuple[str, ...]] = attrs.field(factory=dict)
    """length -> the words whose stem is in some document's title or path (the title
    fill-up looks only there: other words could not fill anything)."""
    signatures: dict[Hashable, NDArray[np.uint32]] = attrs.field(factory=dict)
    """A group's key -> `signature` of each of its words, in its order (a numpy array,
    computed by the first scan of a large group: `_narrowed`). Keys: a length (its bucket),
    (length, first character) (that shard of `stems`), ("titled", length)."""
    memo: Memo = attrs.field(factory=dict)
    """`near_words` and `similar_words` answers for this revision's vocabulary, up to
    `MEMO_SIZE` words (agents repeat their words; rapidfuzz over the buckets costs ~0.1 ms)."""

    def __len__(self) -> int:
        return len(self.stems)


def build_vocabulary(conn: sqlite3.Connection) -> Vocabulary:
    """Read the vocabulary inside the caller's read transaction.

    Every step is a short one (SPEC §4: no step holds the GIL for more than ~20 ms): rows are
    taken one by one, the words go into small dicts (`Stems`) and append to per-length
    lists, nothing is sorted (every caller sorts what it finds: the buckets' order never
    shows in a result)."""
    rows = conn.execute(
        "SELECT term, term FROM search_terms UNION ALL SELECT word, term FROM search_words"
    )
    return vocabulary_of(rows, set(segments.titled(conn)))


def signature(word: str) -> int:
    """The set of `word`'s characters as a 32-bit mask (character code mod 32 → bit).

    An edit changes it by at most two bits (a substitution drops one character and adds
    one; an insertion or deletion one; a swap none), so words within `k` OSA edits differ
    in at most `2k` bits, and words within `k` insertions or deletions (what `fuzz.ratio`
    counts) in at most `k`: a filter that never drops a word the cutoff would keep."""
    mask = 0
    for char in word:
        mask |= 1 << (ord(char) & 31)
    return mask


def vocabulary_of(pairs: Iterable[tuple[object, object]], titled: Container[str]) -> Vocabulary:
    """The vocabulary of `(word, stem)` pairs (the first stem of a word wins); `titled`: the
    stems found in some title or path."""
    stems = Stems()
    buckets: dict[int, list[str]] = {}
    in_titles: dict[int, list[str]] = {}
    for word, term in pairs:
        if not (isinstance(word, str) and isinstance(term, str)):
            continue
        n = len(word)
        if n >= MIN_FUZZY_TERM - 1 and stems.add(word, term):
            bucket = buckets.get(n)
            if bucket is None:
                bucket = buckets[n] = []
            bucket.append(word)
            if term in titled:
                title_bucket = in_titles.get(n)
                if title_bucket is None:
                    title_bucket = in_titles[n] = []
                title_bucket.append(word)
    return Vocabulary(stems, _frozen(buckets), _frozen(in_titles))


def _frozen(buckets: dict[int, list[str]]) -> dict[int, tuple[str, ...]]:
    return {n: tuple(words) for n, words in buckets.items()}


class _InMemory:
    """A whole `Vocabulary` seen as `typo_index.BoundIndex` is: the groups `near_words` reads,
    with no budget (the quality benchmark and the tests that compare both ways)."""

    budget: TypoBudget | None = None

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.memo = vocab.memo
        self.buckets = vocab.by_length
        self.signatures = vocab.signatures

    def once(self, table: dict[K, V], key: K, make: Callable[[], V], limit: int | None = None) -> V:
        found = table.get(key)
        if found is None:
            found = make()
            if limit is not None and len(table) >= limit:
                table.clear()
            table[key] = found
        return found

    def shard(self, length: int, initial: str) -> Sequence[str]:
        return tuple(self.vocab.stems.shards.get((length, initial), ()))

    def bucket(self, length: int) -> Sequence[str]:
        return self.buckets.get(length, ())

    def initials_at(self, length: int) -> Sequence[str] | None:
        return [first for n, first in self.vocab.stems.shards if n == length]

    def stems_of(self, words: Iterable[str]) -> dict[str, str]:
        stems = self.vocab.stems
        return {w: stem for w in words if (stem := stems.get(w)) is not None}

    def weight(self, key: Hashable, group: Sequence[str]) -> int:
        return len(group)


class _Source(Protocol):
    memo: Memo
    signatures: dict[Hashable, NDArray[np.uint32]]
    budget: TypoBudget | None

    def once(
        self, table: dict[K, V], key: K, make: Callable[[], V], limit: int | None = None
    ) -> V: ...
    def shard(self, length: int, initial: str) -> Sequence[str]: ...
    def bucket(self, length: int) -> Sequence[str]: ...
    def initials_at(self, length: int) -> Sequence[str] | None: ...
    def stems_of(self, words: Iterable[str]) -> dict[str, str]: ...
    def weight(self, key: Hashable, group: Sequence[str]) -> int: ...


def _source(vocab: Vocabulary | BoundIndex) -> _Source:
    return vocab if isinstance(vocab, BoundIndex) else _InMemory(vocab)


def _charged(
    source: _Source, key: tuple[str, str, int], find: Callable[[], tuple[int, list[_Hit]]]
) -> list[_Hit] | None:
    """What `find()` finds (once per revision: `Memo`), its cost charged to the request's
    budget; None when the budget was spent before (the word is left as it is)."""
    budget = source.budget
    if budget is not None and budget.spent:
        return None
    cost, found = source.once(source.memo, key, find, MEMO_SIZE)
    if budget is not None:
        budget.charge(WORD_COST + cost)
    return found


def near_words(vocab: Vocabulary | BoundIndex, word: str, edits: int) -> list[tuple[int, str, str]]:
    """`(distance, word, stem)` of vocabulary words within `edits` of `word`, nearest first
    (the list is shared: callers must not change it). `vocab` is a whole vocabulary, or the
    store's typo index (`typo_index`), which reads only the groups of words compared and
    charges them to the request's `TypoBudget`: once it is spent, nothing (the word is
    searched as it is)."""
    source = _source(vocab)
    found = _charged(source, ("near", word, edits), lambda: _near(source, word, edits))
    return [] if found is None else found


def _near(source: _Source, word: str, edits: int) -> tuple[int, list[tuple[int, str, str]]]:
    """What `near_words` finds and its cost: the words of every group compared, and the
    candidates looked up."""
    hits: dict[str, int] = {}
    if edits == 1 and len(word) <= ONE_EDIT_MAX:
        cost, hits = _one_edit(source, word)
    else:
        cost = 0
        for n in range(len(word) - edits, len(word) + edits + 1):
            bucket = source.bucket(n)
            cost += source.weight(n, bucket)
            words = _narrowed(source, bucket, n, n, word, 2 * edits)
            for candidate, distance in _scan(word, words, OSA.distance, edits):
                hits[candidate] = int(distance)
    stems = source.stems_of(hits)
    return cost + len(hits), sorted((d, w, stems[w]) for w, d in hits.items() if w in stems)


def _one_edit(source: _Source, word: str) -> tuple[int, dict[str, int]]:
    """The words within one edit of `word` (candidates: the caller keeps the vocabulary's),
    and the words compared to find them.

    A word within one edit (substitution, insertion, deletion or adjacent swap) of `word`
    either starts with the same character, and is in the group of that initial, or the
    edit is at the start: the first character substituted (`c + word[1:]` for an initial
    `c` the store has at that length), one put before it (`c + word`), the first one deleted
    (`word[1:]`) or the first two swapped: exact lookups, no index to build. Each candidate
    is measured as the whole-bucket scan measures it. A length with too many initials to
    enumerate (`typo_index.MAX_INITIALS`) is scanned whole instead."""
    initial, n = word[0], len(word)
    hits: dict[str, int] = {}
    cost = 0
    for length in range(n - 1, n + 2):
        shard = source.shard(length, initial)
        cost += source.weight((length, initial), shard)
        shard = _narrowed(source, shard, (length, initial), length, word, 2)
        for candidate, distance in _scan(word, shard, OSA.distance, 1):
            hits[candidate] = int(distance)
    others = {word[1:], word[1::-1] + word[2:]}
    for length, rest in ((n, word[1:]), (n + 1, word)):
        firsts = source.initials_at(length)
        if firsts is None:
            bucket = source.bucket(length)
            cost += source.weight(length, bucket)
            words = [w for w in bucket if w[:1] != initial]
            for candidate, distance in _scan(word, words, OSA.distance, 1):
                hits[candidate] = int(distance)
        else:
            others.update(first + rest for first in firsts)
    cost += len(others)
    for candidate in others:
        if candidate[:1] != initial and candidate not in hits:  # the others were found above
            distance = OSA.distance(word, candidate, score_cutoff=1)
            if distance <= 1:
                hits[candidate] = distance
    return cost, hits


def _narrowed(
    source: _Source, words: Sequence[str], key: Hashable, n: int, word: str, most: int
) -> Sequence[str]:
    """The `words` (all `n` long: the group `key`) whose signature is within `most` bits of
    `word`'s (the whole group when it is small, or `most` cannot narrow it). The group's
    signatures are computed on first need, by numpy in slices, once per revision
    (`source.once`), and kept as `source.signatures[key]`."""
    if len(words) < FILTER_MIN or most >= 32:
        return words
    from lwc_trio.memory.query import vector  # numpy: imported by large stores only

    def compute() -> NDArray[np.uint32]:
        return vector.signatures(words, n, SCAN_CHUNK * 8)

    sigs = source.once(source.signatures, key, compute)
    if len(sigs) != len(words):  # the group was dropped and read again meanwhile
        sigs = compute()
    return list(map(words.__getitem__, vector.near_signatures(sigs, signature(word), most)))


def _scan(
    word: str, words: Sequence[str], scorer: Callable[..., float], cutoff: float
) -> list[tuple[str, float]]:
    """`(candidate, score)` of `words` within `cutoff` of `word` by `scorer`, in slices of
    `SCAN_CHUNK` (the callers sort what they find, so the slicing cannot show)."""
    found: list[tuple[str, float]] = []
    for start in range(0, len(words), SCAN_CHUNK):
        for candidate, score, _i in process.extract(
            word, words[start : start + SCAN_CHUNK], scorer=scorer,
            score_cutoff=cutoff, limit=None,
        ):  # fmt: skip
            found.append((candidate, score))
    return found


def similar_words(vocab: Vocabulary | BoundIndex, word: str) -> list[tuple[float, str, str]]:
    """`(ratio, word, stem)` of the vocabulary words whose stem is in some title or path
    (`Vocabulary.titled`) with `fuzz.ratio` ≥ `TITLE_CUTOFF` (shared: do not change it).

    `vocab` is a whole vocabulary, or the store's typo index: then only the length groups
    a ratio of `TITLE_CUTOFF` can reach are read (once per store revision, `typo_index`),
    and the stems of the words found, and whether a title or path holds them, are looked up
    (SPEC §4 "Typos": no whole-vocabulary read); all of it is charged to the request's
    `TypoBudget`: once it is spent, nothing."""
    source = _source(vocab)
    found = _charged(source, ("similar", word, 0), lambda: _similar(vocab, source, word))
    return [] if found is None else found


def _similar(
    vocab: Vocabulary | BoundIndex, source: _Source, word: str
) -> tuple[int, list[tuple[float, str, str]]]:
    """What `similar_words` finds and its cost (as `_near`'s)."""
    if len(word) < MIN_FUZZY_TERM:
        stem = _stems_of(vocab, [word]).get(word)
        return 1, [] if stem is None else [(100.0, word, stem)]
    # ratio = 100 (1 - indel / (a + b)) ≥ 80 needs the lengths within a factor of 1.5.
    low, high = (2 * len(word) + 2) // 3, (3 * len(word)) // 2
    found: list[tuple[float, str, str]] = []
    cost = 0
    for n in range(low, high + 1):
        # ratio ≥ 80 means at most 0.2 × (the two lengths) insertions and deletions.
        most = int((100.0 - TITLE_CUTOFF) * (len(word) + n) / 100.0)
        key: Hashable = n if isinstance(vocab, BoundIndex) else ("titled", n)
        group = vocab.bucket(n) if isinstance(vocab, BoundIndex) else vocab.titled.get(n, ())
        words = _narrowed(source, group, key, n, word, most)
        scanned = _scan(word, words, fuzz.ratio, TITLE_CUTOFF)
        stems = _stems_of(vocab, [candidate for candidate, _ratio in scanned])
        cost += source.weight(key, group) + len(scanned)
        if isinstance(vocab, BoundIndex):  # only words a title or path holds can fill
            cost += len(stems)
            titled = vocab.titled(set(stems.values()))
            stems = {w: stem for w, stem in stems.items() if stem in titled}
        for candidate, ratio in scanned:
            if candidate in stems:
                found.append((float(ratio), candidate, stems[candidate]))
    found.sort(key=lambda item: (-item[0], item[1]))
    return cost, found


def _stems_of(vocab: Vocabulary | BoundIndex, words: Sequence[str]) -> dict[str, str]:
    if isinstance(vocab, BoundIndex):
        return vocab.stems_of(words)
    return {w: stem for w in words if (stem := vocab.stems.get(w)) is not None}


def best_by_stem(found: Sequence[tuple[float, str, str]]) -> dict[str, float]:
    """The best ratio per stem."""
    best: dict[str, float] = {}
    for ratio, _word, stem in found:
        best[stem] = max(best.get(stem, 0.0), ratio)
    return best
