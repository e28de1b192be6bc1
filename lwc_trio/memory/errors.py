"""The memory plane's errors: a stable machine `code` plus a message for people."""

from __future__ import annotations

__all__ = ["MemoryCancelled", "StoreError", "WikiError"]


class WikiError(Exception):
    """A Wiki operation was refused or failed; `code` is stable, `message` is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class StoreError(WikiError):
    """A store could not be used; `code` is one of the SPEC §2.1 memory codes."""


class MemoryCancelled(Exception):
    """The caller set the `cancelled` event while a query was running."""
