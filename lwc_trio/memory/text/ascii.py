"""ASCII text counted by word: the write path's hottest step, in a few C-level calls.

Most bodies are ASCII. Their words are what `tokenize` gives them (runs of letters and
digits, lowercased, stop words out), found without a regular expression and without a
Python step a word: every other character becomes a space, one split cuts the words, a
running sum of lengths gives their offsets (`text/bodies.py` does the same for many bodies
at once, with numpy).
"""

from __future__ import annotations

from collections import Counter
from itertools import accumulate

from lwc_trio.memory.text.tokenize import STOP_WORDS

__all__ = ["ascii_body", "ascii_words"]

# tokenize's ASCII words are the runs of `[^\W_]` (re.ASCII): letters and digits. Every other
# ASCII character becomes a space, one for one, so offsets in the translated text are offsets
# in the original.
_ASCII_SPACED = str.maketrans({c: c if chr(c).isalnum() else 32 for c in range(128)})
_PLUS_ONE = (1).__add__


def ascii_words(text: str) -> tuple[Counter[str], int, dict[str, int]]:
    """For ASCII `text`: its non-stop words' counts (first-seen order), how many there are,
    and where each word first occurs, as `tokenize.plain_words` and the analyzer's spans
    give them (a property test checks): `ascii_body`'s figures, in reading order."""
    counts, total, firsts = ascii_body(text)
    first = dict(zip(counts, firsts, strict=True))
    ordered = Counter({word: counts[word] for word in sorted(first, key=first.__getitem__)})
    return ordered, total, first


def ascii_body(text: str) -> tuple[Counter[str], int, list[int]]:
    """For ASCII `text`: its non-stop words' counts, how many there are, and where each
    word first occurs, aligned with the counts' keys (the write path's hottest function).

    Separators become single spaces and `split(" ")` cuts there: each part (a word, or the
    empty string between two separators) starts one past the end of the previous one, so
    every offset is a running sum of lengths, all in C: no regex, no per-word search. The
    counts and the offsets are both built from the parts in reverse, so both keep their keys
    in the same order (each word's last occurrence, backwards) and the offsets keep each
    word's first one (the last written): no lookup a word to align them."""
    parts = text.lower().translate(_ASCII_SPACED).split(" ")
    starts = list(accumulate(map(_PLUS_ONE, map(len, parts)), initial=0))
    starts.pop()
    backwards = parts[::-1]
    first = dict(zip(backwards, reversed(starts), strict=True))
    counts = Counter(backwards)
    total = len(parts) - counts.pop("", 0)
    first.pop("", None)
    for stop in STOP_WORDS.intersection(counts):
        total -= counts.pop(stop)
        del first[stop]
    return counts, total, list(first.values())
