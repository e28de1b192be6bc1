"""One document analyzed for the index: its postings keyed for the buffer, its short fields.

A document's postings are weighted counts (`fields.FIELD_WEIGHTS`: BM25F) and first offsets
in the snippet text, by **key**: an ASCII body's words as they come, not stemmed yet (the
flush stems each distinct word of a batch once), or index terms marked by `TERM_KEY` (the
short fields, other text). The counts of a term's keys add up to its own.
`index_doc` (`indexing.py`) does this per document; a bulk import's batch analyzer
(`chunks.py`) does the short fields per Page and the bodies chunk by chunk, and sends a
`PageAnalysis` per Page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import repeat
from typing import NamedTuple

from lwc_trio.memory.text.ascii import ascii_body
from lwc_trio.memory.text.fields import FIELD_WEIGHTS, SNIPPET_SCAN, first_offsets, query_form
from lwc_trio.memory.text.tokenize import index_words, stem_words

__all__ = [
    "TERM_KEY",
    "DocumentAnalysis",
    "PageAnalysis",
    "ShortFields",
    "analyze",
    "keyed_by_words",
    "short_terms",
    "terms_of",
]

TERM_KEY = "\x00"
"""Marks a buffer key that is an index term already (else it is a body word to stem)."""


class DocumentAnalysis(NamedTuple):
    """`analyze`'s answer."""

    keyed: dict[str, int]
    """Weighted counts (`FIELD_WEIGHTS`, BM25F) by buffer key: a body word, or an index term
    after `TERM_KEY` (see `IndexBuffer`); the counts of a term's keys add up to its own."""
    firsts: list[int]
    """Where each key (in `keyed`'s order) first occurs in the snippet text (−1: not there)."""
    length: int
    title_terms: list[str]
    path_terms: list[str]
    heads: set[str]
    """The title's and path's index terms."""
    generic_path: list[str]


class ShortFields(NamedTuple):
    """The analysis of a document's short fields (title, path, summary)."""

    keyed: dict[str, int]
    """Their terms' weighted counts, keyed by `TERM_KEY` + term, in first-seen order."""
    length: int
    title_terms: list[str]
    path_terms: list[str]
    heads: set[str]
    generic_path: list[str]


class PageAnalysis(NamedTuple):
    """What `indexing.index_page` works out from a Page's text alone, done by a
    `BatchAnalyzer` (in a bulk import's second process, `analysis.py`)."""

    length: int
    title_terms: list[str]
    path_terms: list[str]
    heads: list[str]
    generic: bool
    pairs: list[str]
    """The words and index terms the short fields (and a body not analyzed by keys) taught,
    flat: word, term, word, term…"""
    links: list[str]
    """`links.extract_links` of the body (the Page's own slug left out)."""
    postings: int
    """How many of the chunk's posting columns are this Page's."""


def short_terms(fields: tuple[str, str, str, str], seen: dict[str, str]) -> ShortFields:
    """Title, path and summary of `fields` analyzed; `seen` learns their words and terms."""
    title, path = fields[0], fields[1]
    short = [index_words(text) for text in fields[:3]]
    # Title and path in the query's form (CJK pairs), for the whole-query comparison; without
    # CJK characters that is exactly their index terms.
    title_terms = query_form(title, short[0][0])
    path_terms = query_form(path, short[1][0])
    keyed: dict[str, int] = {}
    for (terms, field_words), weight in zip(short, FIELD_WEIGHTS[:3], strict=True):
        seen.update(zip(field_words, terms, strict=True))
        for term in terms:
            key = TERM_KEY + term
            keyed[key] = keyed.get(key, 0) + weight
    length = sum(len(terms) for terms, _words in short)
    heads = {*short[0][0], *short[1][0]}
    return ShortFields(keyed, length, title_terms, path_terms, heads, short[1][0])


def keyed_by_words(body: str, scan: str) -> bool:
    """Whether the body's postings are keyed by its words (`ascii_body`): an ASCII body that
    is all of the snippet text scanned (or there is none), the bulk of what is written."""
    return body.isascii() and (scan is body or not scan)


def analyze(
    fields: tuple[str, str, str, str], snippet: str, seen: dict[str, str]
) -> DocumentAnalysis:
    """The analysis of one document (`index_doc`), its body words left unstemmed; `seen`
    learns the short fields' words and terms. An empty `snippet` skips the first offsets."""
    short = short_terms(fields, seen)
    length = short.length
    body = fields[3]
    scan = snippet[:SNIPPET_SCAN]
    keyed: dict[str, int]
    firsts: list[int]
    if keyed_by_words(body, scan):
        # The body (the bulk of the work): one split, its words counted and located in C;
        # the flush stems each distinct word of the whole batch once.
        keyed, body_length, firsts = ascii_body(body)
        if not scan:
            firsts = [-1] * len(keyed)
        length += body_length
    else:
        body_terms, body_words = index_words(body)
        seen.update(zip(body_words, body_terms, strict=True))
        keyed = {TERM_KEY + term: count for term, count in Counter(body_terms).items()}
        length += len(body_terms)
        spans = first_offsets(scan) if scan else {}
        firsts = [spans.get(key[1:], -1) for key in keyed]
    # BM25F's weighted count: the body's counts plus the short fields', weighted. Their
    # keys are terms, never a body word: new ones come last, not in the snippet text.
    for key, weight in short.keyed.items():
        keyed[key] = keyed.get(key, 0) + weight
    firsts.extend(repeat(-1, len(keyed) - len(firsts)))
    return DocumentAnalysis(
        keyed, firsts, length, short.title_terms, short.path_terms, short.heads,
        short.generic_path,
    )  # fmt: skip


def terms_of(keys: Iterable[str]) -> set[str]:
    """The index terms behind buffer keys (`DocumentAnalysis.keyed`)."""
    listed = list(keys)
    words = [key for key in listed if key[0] != TERM_KEY]
    return {key[1:] for key in listed if key[0] == TERM_KEY}.union(stem_words(words))
