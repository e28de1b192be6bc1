"""Store access by directory handles: verified connections, deferred closes, contained failures."""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
from pathlib import Path

import pytest
from conftest_memory import ask, new_store, page, put_pages

from lwc_trio.exceptions import StoreChanged
from lwc_trio.memory.storage import pool
from lwc_trio.memory.storage.handles import Handles, inspect_store, open_checked


def _identity(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def test_open_checked_keeps_only_the_file_it_was_told(tmp_path: Path) -> None:
    """A connection whose descriptor is another file (a swapped path) is closed, never used."""
    mine, other = new_store(tmp_path / "mine"), new_store(tmp_path / "other")
    conn = open_checked(lambda: sqlite3.connect(mine), _identity(mine))
    assert conn.execute("SELECT count(*) FROM pages").fetchone() == (0,)
    conn.close()
    with pytest.raises(StoreChanged):
        open_checked(lambda: sqlite3.connect(other), _identity(mine))


def test_handles_refuse_a_component_swapped_for_a_symlink(tmp_path: Path) -> None:
    """A directory below the workspace that became a symlink is not followed."""
    ws = tmp_path / "ws"
    new_store(tmp_path / "outside")
    ws.mkdir()
    os.symlink(tmp_path / "outside", ws / "proj")
    with Handles() as found:
        ref = found.project(str(ws / "proj"), str(ws), home=str(tmp_path / "home"))
    assert ref is not None
    assert ref.dir_fd is None
    assert isinstance(ref.problem, StoreChanged)


def test_sidecars_must_be_plain_files_and_wal_absent(tmp_path: Path) -> None:
    """A FIFO journal is store_path_invalid, a -wal beside the store store_corrupt."""
    db = new_store(tmp_path)
    fd = os.open(db.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert inspect_store(fd) == _identity(db)
        os.mkfifo(f"{db}-journal")
        with pytest.raises(Exception, match="not a regular file") as fifo:
            inspect_store(fd)
        assert getattr(fifo.value, "code", None) == "store_path_invalid"
        os.unlink(f"{db}-journal")
        Path(f"{db}-wal").write_bytes(b"")
        with pytest.raises(Exception, match="WAL") as wal:
            inspect_store(fd)
        assert getattr(wal.value, "code", None) == "store_corrupt"
    finally:
        os.close(fd)


def test_a_connection_is_closed_only_when_no_reader_of_its_file_is_out(tmp_path: Path) -> None:
    """Closing while another reader of the file is checked out waits for that reader."""
    db = new_store(tmp_path)
    first = pool.checkout(db, threading.Event())
    second = pool.checkout(db, threading.Event())
    assert first.conn is not second.conn or first is second
    first.conn.execute("BEGIN")
    first.conn.execute("SELECT count(*) FROM meta").fetchone()
    pool.checkin(second, reusable=False)  # must not really close while `first` holds a lock
    assert second.conn in pool._WAITING[first.identity]
    first.conn.execute("ROLLBACK")
    pool.checkin(first, reusable=False)
    assert first.identity not in pool._WAITING
    with pytest.raises(sqlite3.ProgrammingError):
        second.conn.execute("SELECT 1")


def test_an_unreadable_directory_is_that_store_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project .lwc that cannot be opened (EACCES, injected) leaves the global store answering."""
    project, home = tmp_path / "ws", tmp_path / "home"
    put_pages(new_store(project), [page("p", "Zebra project", "zebra")])
    put_pages(new_store(home), [page("g", "Zebra global", "zebra")])
    real_open = os.open
    denied = f"{project}/.lwc"

    def fake_open(path: object, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if path == denied:
            raise PermissionError(errno.EACCES, "Permission denied", denied)
        return real_open(path, flags, mode, dir_fd=dir_fd)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", fake_open)
    memory = ask("zebra", project, home=home)
    assert memory["state"] == "ready"
    assert [r["identifier"] for r in memory["results"]] == ["g"]
    assert memory["stores"][0]["error"]["code"] == "store_path_invalid"
    assert "cannot be read" in memory["stores"][0]["error"]["message"]
