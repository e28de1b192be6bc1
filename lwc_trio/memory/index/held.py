"""The postings a bulk import's analysis process holds for a write batch, then groups.

The analysis process keeps the postings of the chunks it analyzed (`hold`), and those of the
chunks the writer analyzed itself come with the request to group; `HeldPostings.group`
puts them in the batch's order and hands a `HeldBatch`, which groups them by term
(`grouping.py`) while the writer still writes the batch's rows, and encodes them once the
documents written are known (`parts`). A Page is told by its place in the batch, whichever
process analyzed it.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterator
from itertools import compress

import numpy as np

from lwc_trio.memory.index.grouping import (
    Columns,
    Grouped,
    bucket_parts,
    group_postings,
    rank_postings,
)
from lwc_trio.memory.index.parts import EncodedPart, Held, Placed

__all__ = ["HeldBatch", "HeldPostings"]

Postings = tuple["array[int]", list[str], Columns, "array[int]"]
"""`grouping.rank_postings`' arguments: key numbers and, aligned, their index terms; the
postings' columns; each document's number of postings."""


class HeldPostings:
    """The postings of one write batch's chunks, kept by the analysis process and grouped
    by term when the batch ends (`group`): those of the chunks it analyzed, and those of
    the chunks the writer analyzed itself, sent with the request to group. The writer gets
    them grouped and encoded (`IndexBuffer.add_part`) and never groups postings itself. A
    Page is told by its place in the batch, whichever process analyzed it."""

    def __init__(self) -> None:
        self.chunks: list[Held] = []

    def __len__(self) -> int:
        """The chunks held."""
        return len(self.chunks)

    def hold(self, chunk: Held) -> None:
        self.chunks.append(chunk)

    def group(self) -> HeldBatch:
        """The held postings, to be grouped (`HeldBatch`); then nothing is held."""
        chunks = sorted(self.chunks, key=operator.itemgetter(0))  # in the batch's order
        self.chunks = []
        columns: tuple[array[int], array[int], array[int]] = (array("i"), array("i"), array("i"))
        per_doc: array[int] = array("i")
        places: array[int] = array("i")
        numbers: array[int] = array("i")
        terms: list[str] = []
        keys: list[str] = []
        flags = bytearray()
        for chunk in chunks:
            start, chunk_columns, chunk_per_doc, chunk_numbers = chunk[:4]
            chunk_terms, chunk_keys, chunk_flags = chunk[4:]
            for column, values in zip(columns, chunk_columns, strict=True):
                column.extend(values)
            per_doc.extend(chunk_per_doc)
            places.extend(range(start, start + len(chunk_per_doc)))
            numbers.extend(chunk_numbers)
            terms.extend(chunk_terms)
            keys.extend(chunk_keys)
            flags.extend(chunk_flags)
        if columns[0]:
            used = np.zeros(max(numbers) + 1, dtype=bool)
            used[np.frombuffer(columns[0], np.int32)] = True
            chosen = used[np.frombuffer(numbers, np.int32)]
            if not bool(chosen.all()):
                at = np.flatnonzero(chosen).tolist()
                numbers = array("i", map(numbers.__getitem__, at))
                terms = list(map(terms.__getitem__, at))
                keys = list(map(keys.__getitem__, at))
                flags = bytearray(map(flags.__getitem__, at))
        words = (list(compress(keys, flags)), list(compress(terms, flags)))
        return HeldBatch(words, (numbers, terms, columns, per_doc), places)


class HeldBatch:
    """A `GroupedBatch` in the analysis process: the batch's words are known at once; its
    postings are grouped by `group` (the analysis process calls it as soon as it has sent
    the words, while the writer still writes the batch's last rows), a range of terms at a
    time, and encoded once the documents written are known (`parts`)."""

    def __init__(
        self,
        words: tuple[list[str], list[str]],
        postings: Postings,
        places: array[int],
    ) -> None:
        self._words = words
        self._postings: Postings | None = postings
        """`rank_postings`' arguments until `group` ran."""
        self._grouped: list[Grouped] | None = None
        self._places = places
        """Each document's place in the batch."""

    def words(self) -> tuple[list[str], list[str]]:
        return self._words

    def group(self) -> None:
        """Group the postings by term (once); the held ones are let go."""
        if self._grouped is None:
            postings, self._postings = self._postings, None
            if postings is None:
                raise RuntimeError("a batch's postings were grouped twice")
            ranked = rank_postings(*postings)
            del postings  # the key numbers go; the counts and offsets stay in `ranked`
            self._grouped = list(group_postings(ranked))

    def parts(self, placed: Placed) -> Iterator[EncodedPart]:
        if not placed.at:  # no document written (every Page unchanged)
            return iter(())
        self.group()
        grouped, self._grouped = self._grouped, None
        assert grouped is not None
        place_of = np.frombuffer(self._places, np.int32)
        span = int(place_of.max()) + 1 if len(place_of) else 0
        at = np.frombuffer(placed.at, np.int32)
        if int(at.min()) < 0 or int(at.max()) >= span:
            raise RuntimeError("a Page was placed outside its batch")
        ids_of = np.full(span, -1, dtype=np.int32)
        ids_of[at] = np.frombuffer(placed.ids, np.int32)
        lengths_of = np.zeros(span, dtype=np.int32)
        lengths_of[at] = np.frombuffer(placed.lengths, np.int32)
        ids_of, lengths_of = ids_of[place_of], lengths_of[place_of]
        return bucket_parts(grouped, ids_of, lengths_of, placed.dead)
