"""Small thread-safe LRU caches for per-store derived data (title index, link degrees) and
for what is derived from Page text (sections, blocks and units: `Memo`; the analyses), bounded
by count and, where told, by size. Here, on the memory plane's floor, so that the text analysis
above it can use them too.

Per-store keys include the store path, `store_id` and `store_revision`, so a CLI write (which
bumps the revision) is seen by the next query without any invalidation message, and a copied
store with the same id at another path never shares entries. What is derived from a body
alone is keyed by the body itself.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Memo", "RevisionCache"]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class RevisionCache(Generic[T]):
    """At most `size` entries, least recently used first out; with `weigh`, also at most
    `budget` of their weights together (an entry heavier than the whole budget is handed
    out and not kept)."""

    def __init__(
        self, size: int, budget: int | None = None, weigh: Callable[[T], int] | None = None
    ) -> None:
        self._size = size
        self._budget = budget
        self._weigh = weigh
        self._entries: OrderedDict[Hashable, T] = OrderedDict()
        self._weights: dict[Hashable, int] = {}
        self._weight = 0
        self._lock = threading.Lock()

    def get_or_build(self, key: Hashable, build: Callable[[], T]) -> T:
        """The cached value for `key`, building it (outside the lock) when missing."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        # Two threads may build the same entry at once; both results are equal, one wins.
        value = build()
        weight = 0 if self._weigh is None else self._weigh(value)
        with self._lock:
            self._keep(key, value, weight)
        return value

    def get_or_add(self, key: Hashable, new: Callable[[], T]) -> T:
        """The cached value for `key`, made by `new()` under the lock when missing: one
        value per key whatever the number of threads asking at once (for values that are
        cheap to make and filled later, shared by everyone who got them)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            value = new()
            self._keep(key, value, 0 if self._weigh is None else self._weigh(value))
            return value

    def _keep(self, key: Hashable, value: T, weight: int) -> None:
        """Under the lock: `value` kept as the newest, the oldest dropped past the bounds."""
        if self._budget is not None and weight > self._budget:
            return
        self._weight += weight - self._weights.pop(key, 0)
        self._entries[key] = value
        self._weights[key] = weight
        self._entries.move_to_end(key)
        while len(self._entries) > self._size or (
            self._budget is not None and self._weight > self._budget
        ):
            dropped, _value = self._entries.popitem(last=False)
            self._weight -= self._weights.pop(dropped)

    @property
    def weight(self) -> int:
        """The kept entries' weights together."""
        with self._lock:
            return self._weight

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Drop every entry (tests)."""
        with self._lock:
            self._entries.clear()
            self._weights.clear()
            self._weight = 0


class Memo(Generic[K, T]):
    """`fn` of one argument, remembered like `functools.lru_cache` for the last `size`
    arguments, and besides within `budget` bytes as `weigh(argument, value)` estimates the
    entry (its key included): what a Page's text is parsed into can be a hundred times its
    size (a section or block per line), so a count alone bounds nothing."""

    def __init__(
        self, fn: Callable[[K], T], size: int, budget: int, weigh: Callable[[K, T], int]
    ) -> None:
        self._fn = fn
        self._weigh = weigh
        self._cache: RevisionCache[tuple[T, int]] = RevisionCache(size, budget, _second)
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, key: K) -> T:
        return self._cache.get_or_build(key, lambda: self._build(key))[0]

    def _build(self, key: K) -> tuple[T, int]:
        value = self._fn(key)
        return value, self._weigh(key, value)

    @property
    def weight(self) -> int:
        """The kept entries' estimated bytes together."""
        return self._cache.weight

    def __len__(self) -> int:
        return len(self._cache)

    def cache_clear(self) -> None:
        """Drop every entry (tests; `functools.lru_cache`'s name)."""
        self._cache.clear()


def _second(kept: tuple[object, int]) -> int:
    return kept[1]
