"""A small per-thread pool of read-only connections.

A long agent session asks the same one or two stores thousands of times. Opening a
connection and re-verifying the whole schema each time was a third of a query's cost, so each
worker thread keeps its last few connections. Safety is unchanged: every checkout re-checks
that the file is still the same regular, rollback-journal SQLite file (same device and inode,
header re-read), and `begin_read_cookie` re-runs the full schema check whenever SQLite's
schema cookie differs from the one last verified. A replaced file gets a fresh connection.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Final

import attrs

from lwc_trio.memory.store import PROGRESS_STEPS, check_file, open_reader

PER_THREAD: Final = 4
"""Connections kept by one worker thread (least recently used go first)."""


@attrs.define(eq=False)
class Reader:
    """A pooled connection and what was verified about it."""

    key: str
    identity: tuple[int, int]
    conn: sqlite3.Connection
    verified_cookie: int | None = None


class _ThreadPool(OrderedDict[str, Reader]):
    """One thread's readers; closes them when the thread ends.

    Trio retires idle worker threads. Their thread-local pool is then dropped, but an
    `sqlite3.Connection` sits in a reference cycle (its statement cache points back to it),
    so without this its descriptor and page cache would linger until a full GC: a long
    session leaked descriptors and memory at every thread retirement.
    """

    def __del__(self) -> None:
        for reader in self.values():
            _close(reader)


_local = threading.local()


def _pool() -> _ThreadPool:
    pool: _ThreadPool | None = getattr(_local, "readers", None)
    if pool is None:
        pool = _ThreadPool()
        _local.readers = pool
    return pool


def checkout(path: Path, cancelled: threading.Event) -> Reader:
    """A read-only connection to `path` for this thread, interrupted once `cancelled` is set.

    Raises `StoreError` when the file is not (or no longer) a usable store.
    """
    key = str(path)
    identity = check_file(path)
    reader = _pool().pop(key, None)
    if reader is not None and reader.identity != identity:
        _close(reader)
        reader = None
    if reader is None:
        return Reader(key, identity, open_reader(path, cancelled))
    reader.conn.set_progress_handler(lambda: 1 if cancelled.is_set() else 0, PROGRESS_STEPS)
    return reader


def checkin(reader: Reader, *, reusable: bool) -> None:
    """Return a connection after its transaction ended; close it unless `reusable`."""
    reader.conn.set_progress_handler(None, 0)
    if not reusable or reader.conn.in_transaction:
        _close(reader)
        return
    pool = _pool()
    pool[reader.key] = reader
    while len(pool) > PER_THREAD:
        _close(pool.popitem(last=False)[1])


def _close(reader: Reader) -> None:
    with contextlib.suppress(sqlite3.Error):
        reader.conn.close()
