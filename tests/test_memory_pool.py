"""Pooled read connections: reused within a thread, closed when their thread ends."""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
from pathlib import Path

import pytest
from conftest_memory import new_store

from lwc_trio.memory.storage import pool
from lwc_trio.memory.storage.pool import checkin, checkout


def open_descriptors(path: Path) -> int:
    """How many of this process's descriptors point at `path`."""
    target = os.path.realpath(path)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                count += 1
        except OSError:
            continue
    return count


def use_pool_once(db: Path) -> None:
    reader = checkout(db, threading.Event())
    reader.conn.execute("SELECT count(*) FROM pages").fetchone()
    checkin(reader, reusable=True)


def test_connections_close_when_their_thread_ends(tmp_path: Path) -> None:
    """Five threads that pooled a connection and ended leave no descriptor open, even without GC."""
    db = new_store(tmp_path)
    gc.disable()
    try:
        threads = [threading.Thread(target=use_pool_once, args=(db,)) for _ in range(5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert open_descriptors(db) == 0
    finally:
        gc.enable()


def test_a_thread_reuses_its_connection(tmp_path: Path) -> None:
    """Two checkouts in one thread get the same connection back."""
    db = new_store(tmp_path)
    first = checkout(db, threading.Event())
    checkin(first, reusable=True)
    second = checkout(db, threading.Event())
    checkin(second, reusable=True)
    assert second.conn is first.conn


def test_a_replaced_file_gets_a_fresh_connection(tmp_path: Path) -> None:
    """A store file swapped for another (new inode) is never read through the old connection."""
    db = new_store(tmp_path)
    first = checkout(db, threading.Event())
    checkin(first, reusable=True)
    other = new_store(tmp_path / "other")
    os.replace(other, db)
    second = checkout(db, threading.Event())
    checkin(second, reusable=False)
    assert second.conn is not first.conn


def test_a_pool_dropped_while_its_lock_is_held_does_not_deadlock(tmp_path: Path) -> None:
    """The GC may drop a thread's pool in a thread that holds the pool's own lock (or, at
    exit, while a frozen daemon thread holds it): the drop returns at once and the
    connection is closed by the next checkin instead."""
    db = new_store(tmp_path)
    orphaned: list[sqlite3.Connection] = []

    def drop_under_lock() -> None:
        thread_pool = pool._ThreadPool()
        reader = checkout(db, threading.Event())
        pool._leave(reader.identity)  # checked in by hand: this pool alone holds it
        thread_pool[reader.key] = reader
        with pool._BOOK:
            del thread_pool  # what a GC pass inside a locked section does
        reader.conn.execute("SELECT 1")  # still open: handed on, not closed
        orphaned.append(reader.conn)

    thread = threading.Thread(target=drop_under_lock, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), "dropping a pool under its lock deadlocked"
    assert len(orphaned) == 1
    use_pool_once(db)  # any later checkout and checkin closes the orphaned connection
    with pytest.raises(sqlite3.ProgrammingError):
        orphaned[0].execute("SELECT 1")
