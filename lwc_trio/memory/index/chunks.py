"""A bulk import's Pages analyzed chunk after chunk, with numpy: the batch analyzer.

`BatchAnalyzer` works out what `indexing.index_page` would from a chunk of Pages' text
alone (no store): each Page's `PageAnalysis` and the chunk's postings, keyed by numbers the
batch gives its keys (`document.py`: body words and index terms). The bodies are counted all
at once (`text/bodies.py`) and a word the batch numbered before is found by its hash, so a
word is made a string and a dict key once per batch, not once per Page. A bulk import's
analysis process (`analysis.py`) runs it; the writer runs one too, on the chunks it takes
over while the process is busy.
"""

from __future__ import annotations

import itertools
from array import array
from itertools import compress, islice, repeat

import numpy as np
from numpy.typing import NDArray

from lwc_trio.memory.index.document import (
    TERM_KEY,
    DocumentAnalysis,
    PageAnalysis,
    ShortFields,
    analyze,
    keyed_by_words,
    short_terms,
)
from lwc_trio.memory.index.parts import AnalyzedChunk, PageText
from lwc_trio.memory.text.bodies import Bodies, ascii_bodies, hashed
from lwc_trio.memory.text.fields import SNIPPET_SCAN, is_generic, snippet_text
from lwc_trio.memory.text.links import extract_links
from lwc_trio.memory.text.tokenize import stem_words

__all__ = ["BatchAnalyzer"]

Vocabulary = tuple[
    NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64], NDArray[np.int32]
]  # fmt: skip


class BatchAnalyzer:
    """Analyzes Pages chunk after chunk for one write batch after another, as `index_page`
    would, numbering the postings' keys per batch (`HeldPostings` groups them by term):
    pure work on the Pages' text, no store, so another process can do it."""

    def __init__(self, first: int = 0) -> None:
        self.first = first
        self.keys: dict[str, int] = {}
        self.numbers = itertools.count(first, 2)
        """Even numbers from 0 or odd ones from 1: two analyzers can share a batch (the same
        key under two numbers is one term all the same)."""
        halves = np.zeros(0, dtype=np.uint64)
        self.vocabulary: Vocabulary = (
            halves, halves, halves, np.zeros(0, dtype=np.int32)
        )  # fmt: skip
        """The body words of `bodies.WIDE` letters or fewer numbered so far in the batch:
        their hashes (`bodies.hashed`, sorted), halves (`Bodies.halves`) and numbers. A
        chunk's words are looked up at once; only the new ones become strings and dict keys."""

    def _numbered(self, bodies: Bodies) -> NDArray[np.int32]:
        """The key number of each of `bodies`' postings: its words numbered once each, not
        once a Page; those the batch numbered before found in `vocabulary`."""
        first, second = bodies.halves
        numbers = np.zeros(len(first), dtype=np.int32)
        used = np.zeros(len(first), dtype=bool)
        used[bodies.word] = True
        short = np.flatnonzero(used & ~bodies.wide)
        hashes = hashed((first[short], second[short]))
        known_hashes, known_first, known_second, known_numbers = self.vocabulary
        at = np.minimum(np.searchsorted(known_hashes, hashes), max(len(known_hashes) - 1, 0))
        known = np.zeros(len(short), dtype=bool)
        if len(known_hashes):
            known = (
                (known_hashes[at] == hashes)
                & (known_first[at] == first[short])
                & (known_second[at] == second[short])
            )
        numbers[short[known]] = known_numbers[at[known]]
        # The others (and a word whose hash another one has) by their strings.
        by_hash = np.argsort(hashes[~known], kind="stable")
        new = short[~known][by_hash]
        fresh = np.fromiter(
            map(self.keys.setdefault, bodies.spell(new), self.numbers), dtype=np.int32,
            count=len(new),
        )  # fmt: skip
        numbers[new] = fresh
        places = np.searchsorted(known_hashes, hashes[~known][by_hash])
        self.vocabulary = (
            np.insert(known_hashes, places, hashes[~known][by_hash]),
            np.insert(known_first, places, first[new]),
            np.insert(known_second, places, second[new]),
            np.insert(known_numbers, places, fresh),
        )
        wide = np.flatnonzero(used & bodies.wide)
        numbers[wide] = np.fromiter(
            map(self.keys.setdefault, bodies.spell(wide), self.numbers), dtype=np.int32,
            count=len(wide),
        )  # fmt: skip
        return numbers[bodies.word].astype(np.int32)

    def chunk(self, pages: list[PageText], *, new_batch: bool) -> AnalyzedChunk:
        """Analyze `pages` (slug, title, summary, body); `new_batch` starts a batch's keys."""
        if new_batch:
            self.__init__(self.first)  # type: ignore[misc]  # a batch numbers its keys anew
        keys = self.keys
        known = len(keys)
        counter = self.numbers
        kids: array[int] = array("i")
        tws: array[int] = array("i")
        firsts: array[int] = array("i")
        out: list[PageAnalysis] = []
        scans = [snippet_text(body, summary)[:SNIPPET_SCAN] for _s, _t, summary, body in pages]
        by_words = [
            keyed_by_words(body, scan)
            for (_s, _t, _m, body), scan in zip(pages, scans, strict=True)
        ]
        bodies = ascii_bodies([page[3] for page, fast in zip(pages, by_words, strict=True) if fast])
        body_kids = self._numbered(bodies)
        body_tws = bodies.counts.astype(np.int32)
        body_firsts = bodies.firsts.astype(np.int32)
        fast_at = 0
        for (slug, title, summary, body), scan, fast in zip(pages, scans, by_words, strict=True):
            fields = (title, slug, summary or "", body)
            seen: dict[str, str] = {}
            if fast:
                short = short_terms(fields, seen)
                begin, end = bodies.bounds[fast_at], bodies.bounds[fast_at + 1]
                kids.frombytes(body_kids[begin:end].tobytes())
                tws.frombytes(body_tws[begin:end].tobytes())
                if scan:
                    firsts.frombytes(body_firsts[begin:end].tobytes())
                else:
                    firsts.extend(repeat(-1, end - begin))
                length = short.length + bodies.totals[fast_at]
                fast_at += 1
                keyed, postings = short.keyed, end - begin + len(short.keyed)
                firsts.extend(repeat(-1, len(keyed)))
                found: DocumentAnalysis | ShortFields = short
            else:
                found = analyze(fields, scan, seen)  # the snippet text, as far as scanned
                keyed, postings, length = found.keyed, len(found.keyed), found.length
                firsts.fromlist(found.firsts)
            kids.extend(map(keys.setdefault, keyed, counter))
            tws.fromlist(list(keyed.values()))
            out.append(
                PageAnalysis(
                    length,
                    found.title_terms,
                    found.path_terms,
                    list(found.heads),
                    is_generic(slug, found.title_terms, found.generic_path),
                    [item for pair in seen.items() for item in pair],
                    extract_links(body, own_slug=slug),
                    postings,
                )
            )
        new = list(islice(keys.items(), known, None))
        new_keys = [key for key, _number in new]
        flags = bytes(key[0] != TERM_KEY for key in new_keys)
        stems = iter(stem_words(list(compress(new_keys, flags))))
        terms = [
            next(stems) if word else key[1:] for key, word in zip(new_keys, flags, strict=True)
        ]
        numbers: array[int] = array("i", [number for _key, number in new])
        return AnalyzedChunk(out, (kids, tws, firsts), new_keys, numbers, terms, flags)
