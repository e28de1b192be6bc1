"""A small per-thread pool of read-only connections.

A long agent session asks the same one or two stores thousands of times. Opening a
connection and re-verifying the whole schema each time was a third of a query's cost, so each
worker thread keeps its last few connections. Safety is unchanged: every checkout re-checks,
through the store's `.lwc` directory handle, that the file is still the same regular,
rollback-journal SQLite file with plain sidecars (same device and inode, header re-read), and
`begin_read_cookie` re-runs the full schema check whenever SQLite's schema cookie differs from
the one last verified. A replaced file gets a fresh connection, itself verified to hold
exactly the file the handle names (`handles.open_checked`), so a pooled connection can never
read anything but the file it was checked against.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections import OrderedDict, deque
from pathlib import Path
from typing import Final

import attrs

from lwc_trio.exceptions import StoreChanged
from lwc_trio.memory.storage import handles
from lwc_trio.memory.storage.handles import STORE_DIR_FLAGS, inspect_store
from lwc_trio.memory.storage.store import PROGRESS_STEPS, open_reader

PER_THREAD: Final = 4
"""Connections kept by one worker thread (least recently used go first)."""


@attrs.define(eq=False)
class Reader:
    """A pooled connection and what was verified about it."""

    key: str
    identity: tuple[int, int]
    conn: sqlite3.Connection
    verified_cookie: int | None = None
    broken: bool = False
    """Something odd happened on this connection: close it instead of pooling it."""


# SQLite keeps the descriptor of a connection closed while another connection of this
# process holds a lock on the same file, and hands it to the next connection opened to
# that file: that connection's descriptor could then not be verified (`open_checked`).
# So a connection is closed only when no reader of its file is checked out; until then it
# waits here.
_BOOK = threading.Lock()
_ACTIVE: dict[tuple[int, int], int] = {}
_WAITING: dict[tuple[int, int], list[sqlite3.Connection]] = {}
_LIVE: dict[tuple[int, int], int] = {}
"""Open connections per file; the file's kept descriptor (`handles`) closes with the last."""


def _enter(identity: tuple[int, int]) -> None:
    with _BOOK:
        _ACTIVE[identity] = _ACTIVE.get(identity, 0) + 1


def _leave(identity: tuple[int, int]) -> None:
    with _BOOK:
        left = _ACTIVE[identity] - 1
        if left:
            _ACTIVE[identity] = left
            return
        del _ACTIVE[identity]
        waiting = _WAITING.pop(identity, [])
        for conn in waiting:
            _close_now(identity, conn)


class _ThreadPool(OrderedDict[str, Reader]):
    """One thread's readers; closes them when the thread ends.

    Reader threads end: the memory lane's threads stop when the server does, a thread
    written off behind a stuck job ends once the job returns, and the vocabulary builds run
    in threads of their own. Their thread-local pool is then dropped, but an
    `sqlite3.Connection` sits in a reference cycle (its statement cache points back to it),
    so without this its descriptor and page cache would linger until a full GC (measured
    when threads were still retired by trio: a long session leaked descriptors and memory at
    every retirement).

    `__del__` never waits for `_BOOK`: the cyclic GC may run it in any thread at any
    allocation, including one that already holds `_BOOK`, and at interpreter exit a frozen
    daemon thread may hold it for ever. When the lock is not free at once, the readers go
    to `_ORPHANS`, which the next checkout or checkin (holding no lock) closes.
    """

    def __del__(self) -> None:
        try:
            if not _BOOK.acquire(blocking=False):
                _ORPHANS.extend(self.values())
                return
        except Exception:  # interpreter shutdown: module globals are gone
            for reader in self.values():
                with contextlib.suppress(Exception):
                    reader.conn.close()
            return
        try:
            for reader in self.values():
                _close_held(reader)
        finally:
            _BOOK.release()


_ORPHANS: deque[Reader] = deque()
"""Readers of dropped thread pools, to close outside `__del__` (deque appends are atomic)."""


def _close_orphans() -> None:
    while _ORPHANS:
        try:
            reader = _ORPHANS.popleft()
        except IndexError:  # another thread took the last one
            return
        _close(reader)


_local = threading.local()


def _pool() -> _ThreadPool:
    pool: _ThreadPool | None = getattr(_local, "readers", None)
    if pool is None:
        pool = _ThreadPool()
        _local.readers = pool
    return pool


def checkout(path: Path, cancelled: threading.Event, *, dir_fd: int | None = None) -> Reader:
    """A read-only connection to `path` for this thread, interrupted once `cancelled` is set.

    `dir_fd` is the handle of the store's `.lwc` directory (the server's walk holds one);
    without it the directory is opened by path for this call. Raises `StoreError` when the
    file is not (or no longer) a usable store, `StoreChanged` when it changed meanwhile.
    """
    if dir_fd is None:
        fd = os.open(path.parent, STORE_DIR_FLAGS)
        try:
            return checkout(path, cancelled, dir_fd=fd)
        finally:
            os.close(fd)
    _close_orphans()
    key = str(path)
    identity = inspect_store(dir_fd)
    reader = _pool().pop(key, None)
    if reader is not None and reader.identity != identity:
        _close(reader)
        reader = None
    _enter(identity)
    try:
        if reader is None:
            reader = Reader(key, identity, _open_verified(path, cancelled, identity))
            with _BOOK:
                _LIVE[identity] = _LIVE.get(identity, 0) + 1
            return reader
        reader.conn.set_progress_handler(lambda: 1 if cancelled.is_set() else 0, PROGRESS_STEPS)
        return reader
    except BaseException:
        _leave(identity)
        raise


OPEN_TRIES: Final = 4
"""Verification fails when another thread takes the descriptor number first; try again
at once a few times before the caller's slower retry."""


def _open_verified(
    path: Path, cancelled: threading.Event, identity: tuple[int, int]
) -> sqlite3.Connection:
    for attempt in range(OPEN_TRIES):
        try:
            return open_reader(path, cancelled, expected=identity)
        except StoreChanged:
            if attempt == OPEN_TRIES - 1:
                raise
    raise AssertionError("unreachable")


def checkin(reader: Reader, *, reusable: bool) -> None:
    """Return a connection after its transaction ended; close it unless `reusable`."""
    reader.conn.set_progress_handler(None, 0)
    _leave(reader.identity)
    _close_orphans()
    if not reusable or reader.conn.in_transaction:
        _close(reader)
        return
    pool = _pool()
    pool[reader.key] = reader
    while len(pool) > PER_THREAD:
        _close(pool.popitem(last=False)[1])


def _close(reader: Reader) -> None:
    with _BOOK:
        _close_held(reader)


def _close_held(reader: Reader) -> None:
    # Caller holds _BOOK.
    if reader.identity in _ACTIVE:
        _WAITING.setdefault(reader.identity, []).append(reader.conn)
        return
    _close_now(reader.identity, reader.conn)


def _close_now(identity: tuple[int, int], conn: sqlite3.Connection) -> None:
    # Caller holds _BOOK. Connections are opened with check_same_thread=False: a deferred
    # close runs in whichever thread returned the file's last reader.
    with contextlib.suppress(sqlite3.Error):
        conn.close()
    left = _LIVE.get(identity, 1) - 1
    if left > 0:
        _LIVE[identity] = left
        return
    _LIVE.pop(identity, None)
    handles.forget_head(identity)
