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

from lwc_trio.exceptions import MemoryCancelled

__all__ = ["BuildOnce", "RevisionCache"]

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

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Drop every entry (tests)."""
        with self._lock:
            self._entries.clear()


class BuildOnce(Generic[T]):
    """Per-key values built once, each in a thread of its own, kept for `size` keys.

    A request that needs a value waits for it while its own `cancelled` stays clear. When the
    request gives up (deadline), the build goes on in its thread and the next request gets
    the finished value: an expensive per-revision index is paid for once, never abandoned
    half-way and restarted by every timed-out request. A build that failed is forgotten, so
    the next request tries again.

    Bounded: at most `MAX_BUILDS` builds run at once (the others wait their turn in their
    threads, holding nothing yet), and finished values are kept while there are at most
    `size` of them and their total `weight` stays within `budget` (the newest value is kept
    whatever it weighs, so a request always gets what it waited for and the next one reuses
    it). Callers key values by what they are built from (a store's file identity and
    revision), never by the path that reached it, so one store seen through many paths is
    built once.
    """

    MAX_BUILDS = 2
    """Builds running at once, across every key (each may take a core and memory)."""

    def __init__(
        self,
        size: int,
        *,
        name: str = "lwc-build",
        budget: int | None = None,
        weight: Callable[[T], int] | None = None,
    ) -> None:
        self._size = size
        self._name = name
        self._budget = budget
        self._weight = weight
        self._entries: OrderedDict[Hashable, _Pending[T]] = OrderedDict()
        self._lock = threading.Lock()
        self._turns = threading.BoundedSemaphore(self.MAX_BUILDS)
        self.builds = 0
        """How many builds were started (tests)."""

    def get(self, key: Hashable, build: Callable[[], T], cancelled: threading.Event | None) -> T:
        """The value for `key`; raises `MemoryCancelled` once `cancelled` is set first."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = _Pending()
                self._entries[key] = entry
                self.builds += 1
                threading.Thread(
                    target=self._run, args=(key, entry, build), name=self._name, daemon=True
                ).start()
                self._evict()
            self._entries.move_to_end(key)
        while not entry.done.wait(0.01):
            if cancelled is not None and cancelled.is_set():
                raise MemoryCancelled()
        if entry.error is not None:
            raise entry.error
        assert entry.value is not None
        return entry.value

    def _run(self, key: Hashable, entry: _Pending[T], build: Callable[[], T]) -> None:
        try:
            with self._turns:
                entry.value = build()
            entry.weight = 0 if self._weight is None else self._weight(entry.value)
            with self._lock:
                self._evict()
        except BaseException as exc:  # handed to the waiting requests
            entry.error = exc
            with self._lock:
                if self._entries.get(key) is entry:
                    del self._entries[key]
        finally:
            entry.done.set()

    def _evict(self) -> None:
        # Only finished entries go, least recently used first; a build in flight stays until
        # it is done, and the most recently used entry always stays.
        for key in list(self._entries)[:-1]:
            if not self._over():
                break
            if self._entries[key].done.is_set():
                del self._entries[key]

    def _over(self) -> bool:
        if len(self._entries) > self._size:
            return True
        return self._budget is not None and self._kept_weight() > self._budget

    def _kept_weight(self) -> int:
        return sum(e.weight for e in self._entries.values())

    def kept_weight(self) -> int:
        """The total weight of the values kept (tests)."""
        with self._lock:
            return self._kept_weight()

    def clear(self) -> None:
        """Drop every finished entry (tests)."""
        with self._lock:
            for key in [k for k, e in self._entries.items() if e.done.is_set()]:
                del self._entries[key]


class _Pending(Generic[T]):
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None
        self.weight = 0
