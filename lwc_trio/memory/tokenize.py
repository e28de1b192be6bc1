"""The one tokenizer: query terms and indexed text go through the same rules (SPEC §4).

Lowercase; runs of alphanumeric characters are words; runs of CJK characters become adjacent
bigrams (a lone CJK character stays a unigram); words on a fixed English stop-word list are
dropped. `tokens` keeps repeats (term frequency for the index); `tokenize` dedupes in first-seen
order (query terms). Both are pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["MAX_TERMS", "STOP_WORDS", "is_cjk", "token_spans", "tokenize", "tokens"]

MAX_TERMS = 64
"""A query with more distinct terms than this is refused with `invalid_query`."""

# Han (with extensions A-F and the compatibility block), kana, Hangul and the iteration marks.
# Scripts written without spaces: a run of them becomes overlapping bigrams so that any two-
# character word inside it is findable without a dictionary.
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

# `[^\W_]` is exactly `str.isalnum()`; CJK characters are carved out of words so that they
# always go through the bigram path.
_RUN = re.compile(f"(?P<cjk>[{_CJK_RANGES}]+)|(?P<word>[^\\W_{_CJK_RANGES}]+)")
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")
_WORD = re.compile(r"[^\W_]+")

# Lucene's English stop set plus the question words agents put in front of every query.
# Fixed: changing it changes every index, so it would need a format_version bump.
_LUCENE_STOP = "a an and are as at be but by for if in into is it no not of on or such that the"
_LUCENE_STOP += " their then there these they this to was will with"
_QUESTION_STOP = "how what when where which who why does do did can i me my we our you your"
STOP_WORDS = frozenset(f"{_LUCENE_STOP} {_QUESTION_STOP}".split())


def is_cjk(char: str) -> bool:
    """True for a character the tokenizer treats as CJK (bigram path)."""
    return _CJK_CHAR.fullmatch(char) is not None


def token_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """Yield `(term, start, end)` for every term of `text`, in order, repeats included.

    `start:end` indexes the original `text` (code points), which is what snippets need.
    """
    for match in _RUN.finditer(text):
        start, end = match.span()
        if match.lastgroup == "word":
            term = match.group().lower()
            if term not in STOP_WORDS:
                yield term, start, end
        elif end - start == 1:
            yield match.group(), start, end
        else:
            run = match.group()
            for i in range(len(run) - 1):
                yield run[i : i + 2], start + i, start + i + 2


def tokens(text: str) -> list[str]:
    """All terms of `text` in order, repeats kept (what the search index stores)."""
    if _CJK_CHAR.search(text) is None:
        # The common case, and the write path's hot spot: without CJK every run is a word,
        # so one findall gives the same terms as `token_spans` at a fraction of the cost.
        return [w for w in (m.lower() for m in _WORD.findall(text)) if w not in STOP_WORDS]
    return [term for term, _start, _end in token_spans(text)]


def tokenize(text: str) -> list[str]:
    """Distinct terms of `text` in first-seen order (query terms).

    The caller refuses a query with more than `MAX_TERMS` terms; an empty list means the
    query has nothing searchable (all stop words or punctuation).
    """
    return list(dict.fromkeys(tokens(text)))
