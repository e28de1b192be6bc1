"""A bulk import's Pages in write batches, the next one read ahead.

`Wiki.put_pages` writes one transaction per batch (`writer.IMPORT_BATCH` Pages); with an
analysis process, the next batch is read (`Ahead.peek`) and sent to it (`texts`) while the
current one is written.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from lwc_trio.memory.index.inputs import PageInput
from lwc_trio.memory.index.parts import PageText

__all__ = ["Ahead", "batches", "texts"]


def batches(pages: Iterable[PageInput], size: int) -> Iterator[list[PageInput]]:
    """`pages` in lists of `size` (the last one shorter)."""
    iterator = iter(pages)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


class Ahead:
    """The write batches of `Wiki.put_pages`, the next one read ahead (`peek`) so that it can be
    analyzed while the current one is written; an error reading it is raised where it
    would have been without the read-ahead, when that batch is asked for (`next`)."""

    def __init__(self, batches: Iterator[list[PageInput]]) -> None:
        self._batches = batches
        self._next: list[PageInput] | None = None
        self._error: Exception | None = None
        self._read = False

    def peek(self) -> list[PageInput] | None:
        """The next batch (None after the last), read now if it was not yet."""
        if not self._read:
            self._read = True
            try:
                self._next = next(self._batches, None)
            except Exception as exc:  # raised by `next`, in its place
                self._next, self._error = None, exc
        return self._next

    def next(self) -> list[PageInput] | None:
        """The next batch, which the one after it replaces; its reading error, raised."""
        upcoming = self.peek()
        self._read = False
        error, self._error = self._error, None
        if error is not None:
            raise error
        return upcoming


def texts(pages: list[PageInput]) -> list[PageText]:
    """The Pages' text as a batch's analysis reads it."""
    return [(page.slug, page.title, page.summary, page.body) for page in pages]
