"""A write batch's analyses and postings as they are handed over between its workers.

A bulk import's Pages are analyzed chunk by chunk (`chunks.BatchAnalyzer`: an
`AnalyzedChunk` each) by its analysis process or by the writer; the process keeps every
chunk's postings (`Held`: `held.py`) and the writer keeps the Pages' analyses
(`without_postings`). The postings reach the store as `EncodedPart`s, whoever grouped them:
the index buffer itself (`buffer.py`: in plain Python for a small write, with numpy from
`VECTOR_POSTINGS` on, `grouping.py`) or the analysis process, told which Pages were written
(`Placed`) through a `GroupedBatch` (`held.HeldBatch` in that process,
`analysis.AnalysisWorker.batch` in this one). Nothing here imports numpy.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import NamedTuple, Protocol

from lwc_trio.memory.index.document import PageAnalysis

__all__ = [
    "VECTOR_POSTINGS",
    "AnalyzedChunk",
    "ChunkColumns",
    "EncodedPart",
    "GroupedBatch",
    "Held",
    "PageText",
    "Placed",
    "held",
    "without_postings",
]

VECTOR_POSTINGS = 20_000
"""Postings from which a flush or merge encodes with numpy (`postings.encode_batch`, every
term at once); a small write (one `lwc page put`) never imports numpy."""

EncodedPart = tuple[list[str], list[int], list[bytes]]
"""Some of a batch's terms (sorted; a part's come after the previous part's), each with its
number of documents (the dead ones included: their unindexing subtracted them) and its live
postings' blob (b"": none)."""


class Placed(NamedTuple):
    """The documents of a bulk import's batch written so far: their places among its Pages,
    doc ids and lengths (aligned); and the doc ids taken out again (`IndexBuffer.dead`)."""

    at: array[int]
    ids: array[int]
    lengths: array[int]
    dead: list[int]


class GroupedBatch(Protocol):
    """The postings an analysis process keeps for a batch, grouped by term
    (`HeldPostings.group`, `AnalysisWorker.batch`)."""

    def words(self) -> tuple[list[str], list[str]]:
        """The body words among their keys (those in a posting: not a stop word) and,
        aligned, their stems."""
        ...

    def parts(self, placed: Placed) -> Iterator[EncodedPart]:
        """The postings of the documents written (`placed`), encoded part after part as
        they are read (`grouping.encoded_parts`); asked for at once, read after `words`."""
        ...


PageText = tuple[str, str, "str | None", str]
"""A Page's slug, title, summary and body, as a batch's analysis reads it."""

ChunkColumns = tuple["array[int]", "array[int]", "array[int]"]
"""A chunk's postings, Page after Page: key numbers, weighted counts, first offsets."""


class AnalyzedChunk(NamedTuple):
    """`BatchAnalyzer.chunk`'s answer: the Pages' analyses, their postings, and the keys the
    chunk numbered first (with their numbers and index terms)."""

    pages: list[PageAnalysis]
    columns: ChunkColumns
    keys: list[str]
    numbers: array[int]
    terms: list[str]
    words: bytes
    """Per key: 1 when it is a body word (stemmed here), 0 when an index term already."""
    held: int = -1
    """−1: the postings and keys are here. Else they were kept (`held`, `without_postings`)
    and this is the place of the chunk's first Page in its batch."""


Held = tuple[int, ChunkColumns, "array[int]", "array[int]", list[str], list[str], bytes]
"""A chunk's postings as `HeldPostings` keeps them: the place of its first Page in the
batch, its columns, each Page's number of postings, and the keys it numbered first (numbers,
index terms, keys, which are body words)."""


def held(chunk: AnalyzedChunk, start: int) -> Held:
    """`chunk`'s postings and keys, its first Page at place `start` in the batch."""
    per_doc: array[int] = array("i", [page.postings for page in chunk.pages])
    return (start, chunk.columns, per_doc, chunk.numbers, chunk.terms, chunk.keys, chunk.words)


def without_postings(chunk: AnalyzedChunk, start: int) -> AnalyzedChunk:
    """`chunk` with its Pages' analyses only, its first Page at place `start` (`held`)."""
    empty: array[int] = array("i")
    return AnalyzedChunk(chunk.pages, (empty, empty, empty), [], empty, [], b"", start)
