"""The one analyzer: indexed text and queries go through the same rules (SPEC §4 "Search").

A word is a run of alphanumeric characters (with any combining marks inside it). Each word is
lowercased and accent-folded (NFKD, combining marks dropped, a few letters NFKD keeps whole —
ø, ł, đ, æ, œ, ß, þ — spelt out), checked against a fixed English stop-word list, then stemmed
with the English Snowball stemmer (PyStemmer). Runs of CJK characters have no spaces between
words: the index keeps every single character **and** every adjacent pair, so a one-character
query matches; a query uses a run's pairs (or the character itself for a run of one), which
already imply the characters. All functions are pure and deterministic.

`index_terms` is what the writer stores, `query_terms` what a search uses; `token_spans`
gives both kinds with positions in the original text (the writer's snippet offsets).
"""

from __future__ import annotations

import itertools
import operator
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Sequence

import attrs
import Stemmer

from lwc_trio.memory.text.marks import MARKS

__all__ = [
    "MAX_TERMS",
    "STOP_WORDS",
    "QueryTerm",
    "fold",
    "has_cjk",
    "index_terms",
    "index_words",
    "is_cjk",
    "known_stems",
    "parse_query",
    "plain_words",
    "query_terms",
    "stem_words",
    "surely_within_term_limit",
    "token_spans",
    "tokenize",
    "tokens",
    "words_and_runs",
]

MAX_TERMS = 64
"""A query with more distinct terms than this is refused with `invalid_query`."""

# Han (with extensions A-F and the compatibility block), kana, Hangul and the iteration marks.
_CJK_RANGES = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007"  # 々 〆 〇
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # halfwidth Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
# Combining marks belong to the word they follow ("e" + U+0301 is one word, folded to "e";
# a Devanagari vowel sign or virama is part of its word: `marks.py`).

# `[^\W_]` is exactly `str.isalnum()`; CJK characters are carved out of words so that they
# always go through the character path.
_WORD_CLASS = f"(?:[^\\W_{_CJK_RANGES}]|[{MARKS}])"
_RUN = re.compile(f"(?P<cjk>[{_CJK_RANGES}]+)|(?P<word>[^\\W_{_CJK_RANGES}]{_WORD_CLASS}*)")
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")
_WORD = re.compile(f"[^\\W_]{_WORD_CLASS}*")
_ASCII_WORD = re.compile(r"[^\W_]+", re.ASCII)  # the same runs in ASCII text, much faster

# Lucene's English stop set plus the question words agents put in front of every query.
# Fixed: changing it changes every index, so it needs a format_version bump.
_LUCENE_STOP = "a an and are as at be but by for if in into is it no not of on or such that the"
_LUCENE_STOP += " their then there these they this to was will with"
_QUESTION_STOP = "how what when where which who why does do did can i me my we our you your"
STOP_WORDS = frozenset(f"{_LUCENE_STOP} {_QUESTION_STOP}".split())

# Letters NFKD does not decompose, spelt the way English text writes them without accents.
_SPELL_OUT = str.maketrans(
    {"ø": "o", "ł": "l", "đ": "d", "ħ": "h", "ı": "i", "æ": "ae", "œ": "oe", "ß": "ss", "þ": "th"}
)

_local = threading.local()

STEM_CACHE_BYTES = 64 * 2**20
"""What the process's stem cache (`_STEMS`) holds at most, as `_Stems.add` weighs it: a
Wiki's vocabulary is small next to its text (100,000 English words of 8 letters weigh 17
MiB; the 246,000 distinct words of the scale benchmark's 100,000 Pages 41 MiB), so
most words are stemmed once per process. Counted by words instead (500,000), a long session
over many distinct long words kept about 120 MiB of ASCII ones and 200 MiB of Devanagari ones."""
STEM_ENTRY_BYTES = 64
"""A cache entry's share of its dictionary, beyond its two strings, from above (CPython keeps
24 bytes a slot and a few index bytes, and up to three times the slots it uses)."""
_STEM_CACHE_WORD = 64
"""A longer word (no English word, but a hostile Page can be one run of letters) is stemmed
each time instead of kept."""


class _Stems:
    """word -> stem, shared by all threads: dict reads and writes are atomic, and an addition
    takes the lock. Snowball costs about a microsecond a word. Emptied when an addition
    would take it past `STEM_CACHE_BYTES`."""

    __slots__ = ("lock", "stems", "weight")

    def __init__(self) -> None:
        self.stems: dict[str, str] = {}
        self.weight = 0
        self.lock = threading.Lock()

    def clear(self) -> None:
        with self.lock:
            self.stems.clear()
            self.weight = 0

    def add(self, words: list[str], stems: list[str]) -> bool:
        """Keep each of `words`' stem (in `stems`), unless they alone weigh more than the
        cache may: whether they were kept. Weighed from above by their lengths (a string
        takes at most 76 bytes and 4 a character, an ASCII one 49 and 1, and a stem is at
        most a character longer than its word) instead of measuring each string, which
        took a fifth of the time to stem a Page's new words."""
        text = "".join(words)
        if text.isascii():
            added = (2 * 49 + 1 + STEM_ENTRY_BYTES) * len(words) + 2 * len(text)
        else:
            added = (2 * 76 + 4 + STEM_ENTRY_BYTES) * len(words) + 8 * len(text)
        if added > STEM_CACHE_BYTES:
            return False
        with self.lock:
            if self.weight + added > STEM_CACHE_BYTES:
                self.stems.clear()  # the lock is held: not `clear`
                self.weight = 0
            self.stems.update(zip(words, stems, strict=True))
            self.weight += added
        return True


_STEMS = _Stems()


def _stemmer() -> Stemmer.Stemmer:
    # PyStemmer objects are not safe to share between threads: one per thread.
    stemmer: Stemmer.Stemmer | None = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = Stemmer.Stemmer("english", 0)  # no cache of its own: `_STEMS` is one
        _local.stemmer = stemmer
    return stemmer


def stem_words(words: list[str]) -> list[str]:
    """English Snowball stems of already folded words (same length, same order)."""
    cache = _STEMS
    get = cache.stems.get
    stems = list(map(get, words))
    if all(stems):  # every word seen before (no stem is empty): the usual case
        return stems  # type: ignore[return-value]
    missing = [
        word for word in dict.fromkeys(words) if len(word) <= _STEM_CACHE_WORD and not get(word)
    ]
    if missing:
        found = _stemmer().stemWords(missing)
        kept = cache.add(missing, found)
        # The words stemmed before keep their stems from above, should the cache empty.
        get = cache.stems.get if kept else dict(zip(missing, found, strict=True)).get
    return [
        stem or get(word) or _stemmer().stemWord(word)
        for word, stem in zip(words, stems, strict=True)
    ]


def known_stems(words: Sequence[str]) -> list[str]:
    """The stem of each of `words` this process has stemmed before (`stem_words`), else ""
    (no stem is empty): a dictionary look-up each, no Snowball."""
    return list(map(_STEMS.stems.get, words, itertools.repeat("")))


def fold(word: str) -> str:
    """Lowercase and strip accents: `Éclair` → `eclair`, `Straße` → `strasse`."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.lower())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return bare.translate(_SPELL_OUT)


def is_cjk(char: str) -> bool:
    """True for a character the analyzer treats as CJK (character path)."""
    return _CJK_CHAR.fullmatch(char) is not None


def has_cjk(text: str) -> bool:
    """True when `text` holds a character the analyzer treats as CJK."""
    return not text.isascii() and _CJK_CHAR.search(text) is not None


def plain_words(text: str) -> list[str] | None:
    """Folded non-stop words of `text` in order, or None when it has CJK characters."""
    if text.isascii() or _CJK_CHAR.search(text) is None:
        return _words(text)
    return None


def _words(text: str) -> list[str]:
    """Folded non-stop words of text without CJK (the write path's hot spot)."""
    if text.isascii():
        return [w for w in _ASCII_WORD.findall(text.lower()) if w not in STOP_WORDS]
    found = _WORD.findall(text)
    # Each distinct word folded once: a text repeats its words (`fold` is a few Python steps).
    folded = {word: fold(word) for word in set(found)}
    return [w for w in map(folded.__getitem__, found) if w and w not in STOP_WORDS]


def token_spans(text: str, *, query: bool = False) -> Iterator[tuple[str, str, int]]:
    """Yield `(term, surface, start)` for every term of `text` in order, repeats included.

    `surface` is the folded word before stemming (CJK: the term itself); `start` indexes the
    original `text` in code points. `query=True` gives the query form of CJK runs (pairs only).
    """
    pending: list[tuple[str, int]] = []
    for match in _RUN.finditer(text):
        start = match.start()
        if match.lastgroup == "word":
            word = fold(match.group())
            if word and word not in STOP_WORDS:
                pending.append((word, start))
            continue
        if pending:
            yield from _stemmed(pending)
            pending = []
        run = match.group()
        if len(run) == 1:
            yield run, run, start
            continue
        # Each character, then the pair it starts (the query form: the pairs only), built
        # by C iterators: a CJK text has two terms a character.
        chars = run[:-1]
        pairs = list(map(operator.add, chars, run[1:]))
        at = range(start, start + len(chars))
        if query:
            yield from zip(pairs, pairs, at, strict=True)
            continue
        spans = zip(
            zip(chars, chars, at, strict=True), zip(pairs, pairs, at, strict=True), strict=True
        )
        yield from itertools.chain.from_iterable(spans)
        yield run[-1], run[-1], start + len(chars)
    if pending:
        yield from _stemmed(pending)


def _stemmed(pending: list[tuple[str, int]]) -> Iterator[tuple[str, str, int]]:
    stems = stem_words([word for word, _start in pending])
    for (word, start), stem in zip(pending, stems, strict=True):
        yield stem, word, start


def index_terms(text: str) -> list[str]:
    """All index terms of `text` in order, repeats kept (what the search index counts)."""
    if text.isascii() or _CJK_CHAR.search(text) is None:
        return stem_words(_words(text))
    return _in_order(text)[0]


def _in_order(text: str) -> tuple[list[str], list[str]]:
    """`(terms, words)` of a text with CJK characters, as `token_spans` gives them in order
    (without their offsets): a CJK run's characters and pairs made by C iterators."""
    terms: list[str] = []
    words: list[str] = []
    pending: list[str] = []
    for is_run, run in _pieces(text):
        if not is_run:
            pending.append(run)
            continue
        if pending:
            terms += stem_words(pending)
            words += pending
            pending = []
        chars = run[:-1]
        pairs = map(operator.add, chars, run[1:])
        cjk = list(itertools.chain.from_iterable(zip(chars, pairs, strict=True)))
        cjk.append(run[-1])
        terms += cjk
        words += cjk
    if pending:
        terms += stem_words(pending)
        words += pending
    return terms, words


tokens = index_terms


def words_and_runs(text: str) -> tuple[list[str], list[str]]:
    """`(terms, runs)`: the index terms of `text`'s words, in order, and its CJK runs. A
    run's terms are each of its characters and each pair of them (`token_spans`), so a
    caller can count them in the runs themselves without making a string of each (two a
    character): `index_terms(text)` holds these words' terms and those, in another order."""
    if text.isascii() or _CJK_CHAR.search(text) is None:
        return stem_words(_words(text)), []
    words: list[str] = []
    runs: list[str] = []
    for is_run, piece in _pieces(text):
        (runs if is_run else words).append(piece)
    return stem_words(words), runs


def _pieces(text: str) -> Iterator[tuple[bool, str]]:
    """`(is_run, piece)` for each folded non-stop word and each CJK run of `text`, in order."""
    for match in _RUN.finditer(text):
        if match.lastgroup == "word":
            word = fold(match.group())
            if word and word not in STOP_WORDS:
                yield False, word
        else:
            yield True, match.group()


def index_words(text: str) -> tuple[list[str], list[str]]:
    """`(terms, words)` of `text`: index terms and, aligned, the folded words behind them."""
    if text.isascii() or _CJK_CHAR.search(text) is None:
        words = _words(text)
        return stem_words(words), words
    return _in_order(text)


@attrs.frozen
class QueryTerm:
    """One distinct query term: its stem, the first folded word that gave it, its count."""

    term: str
    surface: str
    count: int


def query_terms(text: str) -> list[QueryTerm]:
    """Distinct query terms in first-seen order with their frequency in the query."""
    return parse_query(text)[0]


_PARSED: dict[str, tuple[tuple[QueryTerm, ...], str]] = {}
"""`parse_query` answers by query text (agents ask again), shared by all threads like
`_STEMS`; cleared when it reaches `_PARSED_MAX` queries."""
_PARSED_MAX = 4096
_PARSED_TEXT_MAX = 1000
"""Longer queries are analyzed each time (they would make the memo large)."""


def parse_query(text: str) -> tuple[list[QueryTerm], str]:
    """`(query_terms(text), every term in order joined by spaces)` from one analysis."""
    parsed = _PARSED.get(text)
    if parsed is None:
        parsed = _parse(text)
        if len(text) <= _PARSED_TEXT_MAX:
            if len(_PARSED) >= _PARSED_MAX:
                _PARSED.clear()
            _PARSED[text] = parsed
    return list(parsed[0]), parsed[1]


def _parse(text: str) -> tuple[tuple[QueryTerm, ...], str]:
    words = plain_words(text)
    pairs: Iterable[tuple[str, str]]
    if words is not None:
        # No CJK: the words `token_spans` would find, without its positions.
        pairs = zip(stem_words(words), words, strict=True)
    else:
        pairs = ((term, surface) for term, surface, _start in token_spans(text, query=True))
    counts: dict[str, int] = {}
    surfaces: dict[str, str] = {}
    sequence: list[str] = []
    for term, surface in pairs:
        counts[term] = counts.get(term, 0) + 1
        surfaces.setdefault(term, surface)
        sequence.append(term)
    terms = tuple(QueryTerm(term, surfaces[term], n) for term, n in counts.items())
    return terms, " ".join(sequence)


def surely_within_term_limit(text: str) -> bool:
    """True when `text` cannot have more than `MAX_TERMS` terms, known without stemming:
    ASCII text with no more word runs than the limit (each run is at most one term)."""
    return text.isascii() and len(_ASCII_WORD.findall(text)) <= MAX_TERMS


def tokenize(text: str) -> list[str]:
    """Distinct query terms of `text` in first-seen order.

    The caller refuses a query with more than `MAX_TERMS` terms; an empty list means the
    query has nothing searchable (all stop words or punctuation).
    """
    return list(dict.fromkeys(term for term, _surface, _start in token_spans(text, query=True)))
