"""Many ASCII bodies counted by word at once, with numpy: a bulk import's analysis.

`ascii.ascii_body` takes a few C calls a body; a chunk of a bulk import's Pages is done
here in one pass of numpy operations over all of its bytes, with the same words, counts and
first offsets (a property test compares them body by body). A word is compared as numbers
(`WIDE` bytes as two uint64, `hashed` to one), so that the batch analyzer
(`index/chunks.py`) numbers the words it has seen without making them strings again.

Imported only by a bulk import (numpy costs about 0.1 s to import).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from lwc_trio.memory.text.tokenize import STOP_WORDS

__all__ = ["WIDE", "Bodies", "Halves", "ascii_bodies", "hashed"]

WIDE = 16
"""Characters of a body word `ascii_bodies` compares as numbers (two uint64); a longer word
(rare in prose, hashes and base64 are) also gets a number from a dict."""

Halves = tuple[NDArray[np.uint64], NDArray[np.uint64]]
"""Words as numbers: each one's first 8 bytes (zero-padded, little-endian) and its next 8,
or a number with a low byte of 1 for a word longer than `WIDE`."""


@functools.cache
def _byte_tables() -> tuple[NDArray[np.bool_], NDArray[np.uint8], NDArray[np.uint64]]:
    """Per byte: whether it is an ASCII letter or digit, the byte lowercased; per n ≤ 8, the
    uint64 mask of a word's first n bytes (little-endian)."""
    letters = np.array([chr(c).isalnum() for c in range(128)] + [False] * 128, dtype=bool)
    lower = np.arange(256, dtype=np.uint8)
    lower[ord("A") : ord("Z") + 1] += ord("a") - ord("A")
    masks = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
    return letters, lower, masks


@functools.cache
def _stop_words64() -> NDArray[np.uint64]:
    """`STOP_WORDS` as the first half of `Bodies.halves` (each is shorter than 8 letters)."""
    if max(map(len, STOP_WORDS)) >= 8:
        raise RuntimeError("a stop word of 8 letters or more")
    words = sorted(word.encode("ascii").ljust(8, b"\0") for word in STOP_WORDS)
    return np.frombuffer(b"".join(words), dtype="<u8")


_MIX = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9)


def hashed(halves: Halves) -> NDArray[np.uint64]:
    """A uint64 per word from its two halves: equal words hash equal (different ones may
    too, rarely: a lookup by it checks both halves)."""
    with np.errstate(over="ignore"):
        return (halves[0] ^ (halves[1] * np.uint64(_MIX[0]))) * np.uint64(_MIX[1])


class Bodies(NamedTuple):
    """`ascii_bodies`: the postings of many bodies, body after body."""

    halves: Halves
    """The distinct words of all the bodies, each as its first `WIDE` bytes zero-padded
    and read as two uint64; a longer word's second half is a number."""
    wide: NDArray[np.bool_]
    """Per distinct word, whether it is longer than `WIDE` (`long_words` spells it)."""
    long_words: dict[int, str]
    bounds: list[int]
    """Where each body's postings start (and, last, where they end)."""
    word: NDArray[np.intp]
    """Per posting, its word (an index into the distinct words); then its count, its first
    offset."""
    counts: NDArray[np.intp]
    firsts: NDArray[np.intp]
    totals: list[int]
    """Per body, its non-stop words (`ascii_body`'s total)."""

    def spell(self, at: NDArray[np.intp]) -> list[str]:
        """The distinct words at indexes `at`, as strings."""
        pairs = np.stack([half[at] for half in self.halves], axis=1).astype("<u8")
        spelled: list[str] = pairs.view(f"S{WIDE}").ravel().astype(f"U{WIDE}").tolist()
        if self.long_words:
            for place, index in enumerate(at.tolist()):
                if index in self.long_words:
                    spelled[place] = self.long_words[index]
        return spelled


def ascii_bodies(bodies: Sequence[str]) -> Bodies:
    """`ascii.ascii_body` of many ASCII bodies at once, in numpy: the per-word work of a bulk
    import's analysis, done by C loops over the bytes instead of one Python step a word.

    The bodies are joined with spaces and read as bytes; a word is a run of letters and
    digits. Each word is its first `WIDE` lowercased bytes, zero-padded, read as two uint64
    (a longer one: its first 8 and a number from a dict), and one stable sort by them puts
    each word's occurrences together in text order: the postings of a (word, body) pair are
    a run, whose first element is the first occurrence. A property test compares the
    result with `ascii.ascii_body` body by body. At most 2**16 bodies at once (a chunk's are
    far fewer): they are sorted by number as 16-bit integers."""
    if len(bodies) > 1 << 16:
        raise ValueError(f"{len(bodies)} bodies at once (at most {1 << 16})")
    letters, lower, masks = _byte_tables()
    sizes = np.fromiter(map(len, bodies), dtype=np.int64, count=len(bodies))
    body_starts = np.cumsum(sizes + 1) - (sizes + 1)
    raw = np.frombuffer(" ".join(bodies).encode("ascii"), dtype=np.uint8)
    inside = letters[raw].view(np.int8)
    edges = np.diff(inside, prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    lengths = np.flatnonzero(edges == -1) - starts
    # The text lowercased, read as uint64: a word's first 8 bytes are the end of the element
    # it starts in and the start of the next one (shifted in two steps, so that a shift of 64
    # bits, the word starting an element, gives 0), its next 8 the same one element on.
    rows = (len(raw) + 7) // 8 + 2
    text = np.zeros(8 * rows, dtype=np.uint8)
    text[: len(raw)] = lower[raw]
    words = text.view("<u8")
    row = starts // 8
    low = (starts % 8 * 8).astype(np.uint64)
    high = np.uint64(63) - low
    one = np.uint64(1)
    w0, w1, w2 = words[row], words[row + 1], words[row + 2]
    first = ((w0 >> low) | ((w1 << one) << high)) & masks[np.minimum(lengths, 8)]
    second = ((w1 >> low) | ((w2 << one) << high)) & masks[np.clip(lengths - 8, 0, 8)]
    del w0, w1, w2
    # A word longer than `WIDE` gets, in place of its second 8 bytes, its number in a dict
    # with a low byte of 1, which no word's bytes have (a letter or digit, or 0 past its end).
    long_words: dict[bytes, int] = {}
    wide = np.flatnonzero(lengths > WIDE)
    if len(wide):
        numbered = itertools.count(1)
        second[wide] = [
            (long_words.setdefault(text[at : at + size].tobytes(), next(numbered)) << 8) | 1
            for at, size in zip(starts[wide].tolist(), lengths[wide].tolist(), strict=True)
        ]
    order = np.lexsort((second, first))
    h0, h1 = first[order], second[order]
    fresh = np.ones(len(order), dtype=bool)
    fresh[1:] = (h0[1:] != h0[:-1]) | (h1[1:] != h1[:-1])
    word_of = np.cumsum(fresh) - 1
    body_of = (np.searchsorted(body_starts, starts, side="right") - 1)[order]
    # The distinct words: their bytes, or the dict's word when longer than `WIDE`.
    heads = order[fresh]
    halves = (first[heads], second[heads])
    wide = halves[1] & 0xFF == 1
    spelled_long: dict[int, str] = {}
    if long_words:
        by_number = {number: word.decode("ascii") for word, number in long_words.items()}
        for at in np.flatnonzero(wide).tolist():
            spelled_long[at] = by_number[int(second[heads[at]]) >> 8]
    # Stop words are shorter than 8 letters: one uint64, the second half 0.
    stop = np.isin(halves[0], _stop_words64()) & (halves[1] == 0)
    # Runs of one (word, body); the stop words' dropped, and counted out of the totals.
    run = np.ones(len(order), dtype=bool)
    run[1:] = fresh[1:] | (body_of[1:] != body_of[:-1])
    run_starts = np.flatnonzero(run)
    counts = np.diff(np.append(run_starts, len(order)))
    run_word = word_of[run_starts]
    run_body = body_of[run_starts]
    firsts = starts[order[run_starts]] - body_starts[run_body]
    kept = ~stop[run_word]
    totals = np.bincount(run_body[kept], weights=counts[kept], minlength=len(bodies))
    # Body after body (the runs are by word, then body): one radix pass.
    by_body = np.argsort(run_body[kept].astype(np.uint16), kind="stable")
    posting_body = run_body[kept][by_body]
    bounds = np.searchsorted(posting_body, np.arange(len(bodies) + 1)).tolist()
    return Bodies(
        halves,
        wide,
        spelled_long,
        bounds,
        run_word[kept][by_body],
        counts[kept][by_body],
        firsts[kept][by_body],
        totals.astype(np.int64).tolist(),
    )
