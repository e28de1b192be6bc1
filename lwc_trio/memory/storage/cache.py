"""Small thread-safe LRU caches for per-store derived data (title index, link degrees).

Keys include the store path, `store_id` and `store_revision`, so a CLI write (which bumps the
revision) is seen by the next query without any invalidation message, and a copied store with
the same id at another path never shares entries.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["RevisionCache"]

T = TypeVar("T")


class RevisionCache(Generic[T]):
    """At most `size` entries; least recently used first out."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_build(self, key: Hashable, build: Callable[[], T]) -> T:
        """The cached value for `key`, building it (outside the lock) when missing."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        # Two threads may build the same entry at once; both results are equal, one wins.
        value = build()
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return value

    def get_or_add(self, key: Hashable, new: Callable[[], T]) -> T:
        """The cached value for `key`, made by `new()` under the lock when missing: one
        value per key whatever the number of threads asking at once (for values that are
        cheap to make and filled later, shared by everyone who got them)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            value = self._entries[key] = new()
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
            return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Drop every entry (tests)."""
        with self._lock:
            self._entries.clear()
