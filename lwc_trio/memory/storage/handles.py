"""Reaching stores through directory handles, so a changing tree cannot redirect a read.

The server's path checks and its reads are separate steps, and a local process may swap a
directory for a symlink in between (SPEC §3, "Races"). So the memory plane never looks a
store up by its path string:

* `Handles` opens the workspace (or `$HOME`) and then every directory below it down to
  `projectPath` one component at a time, relative to its parent, with `O_DIRECTORY |
  O_NOFOLLOW`: a component swapped for a symlink fails to open instead of being followed.
  `.lwc` is opened the same way; `wiki.db` and its `-journal`, `-wal` and `-shm` are
  inspected relative to that handle (`fstatat` without following links).
* SQLite needs a path, and SQLite resolves symlinks in it itself (3.40 turns even a
  `/proc/self/fd/N/...` path back into the directory's textual path before opening it), so
  a path cannot be made unredirectable. Instead `open_checked` verifies the descriptor
  SQLite opened: under `GATE`, the regular files the process has open are listed before and
  after SQLite connects, and the connection is used only when the one new file is the very
  file found through the handles. All opens of store files in the process happen under
  `GATE`, so no other thread can open that file meanwhile. A pooled connection keeps the
  descriptor it was verified with for its life. The header is read through one kept
  descriptor per file (`_HEADS`): closing any descriptor of a file would drop SQLite's POSIX
  locks on it.

A FIFO or device never blocks a thread here: everything is `lstat`-checked first, the store
file itself is opened with `O_NONBLOCK`, and a thread that still blocks inside SQLite (a FIFO
swapped in after the check) holds `GATE` for at most `GATE_WAIT_S` before the others replace
the gate and go on without it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from lwc_trio.exceptions import StoreChanged, StoreError
from lwc_trio.memory.format.schema import check_header
from lwc_trio.memory.storage.discovery import StoreRef
from lwc_trio.paths import text_within

__all__ = [
    "GATE",
    "GATE_WAIT_S",
    "SIDECARS",
    "STORE_DIR_FLAGS",
    "Handles",
    "forget_head",
    "inspect_store",
    "open_checked",
]

STORE_DIR: Final = ".lwc"
STORE_FILE: Final = "wiki.db"
SIDECARS: Final = ("-journal", "-wal", "-shm")
"""Files SQLite may open beside a store; each must be absent or a plain regular file."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
STORE_DIR_FLAGS: Final = _DIR_FLAGS
"""How a directory on the way to a store is opened: never through a symlink."""
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC

GATE_WAIT_S: Final = 1.0
"""How long a thread waits for `GATE` before concluding its holder is stuck (a FIFO swapped
in under SQLite's open) and replacing it."""

Identity = tuple[int, int]


class _Gate:
    """A lock that a stuck holder cannot keep forever: waiters replace it after a while."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._swap = threading.Lock()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the gate; raises nothing, never waits more than a few `GATE_WAIT_S`."""
        while True:
            lock = self._lock
            if lock.acquire(timeout=GATE_WAIT_S):
                break
            with self._swap:
                if self._lock is lock:
                    # Its holder is blocked in the kernel; it will only ever open a FIFO or
                    # device, never a store file, so verification stays sound without it.
                    self._lock = threading.Lock()
        try:
            yield
        finally:
            lock.release()


GATE: Final = _Gate()


def _invalid(message: str) -> StoreError:
    return StoreError("store_path_invalid", message)


def _os_problem(what: str, exc: OSError) -> StoreError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.EMLINK):
        return StoreChanged(f"{what} changed while it was being read (retry)")
    return _invalid(f"{what} cannot be read ({exc.strerror or type(exc).__name__})")


class Handles:
    """The directory descriptors one request holds; `close()` releases them all."""

    def __init__(self) -> None:
        self._fds: list[int] = []

    def __enter__(self) -> Handles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every descriptor opened through this object."""
        fds, self._fds = self._fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _open_dir(self, name: str, dir_fd: int | None = None) -> int:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        self._fds.append(fd)
        return fd

    def project(self, start: str, stop: str, *, home: str) -> StoreRef | None:
        """The nearest `.lwc/wiki.db` from `start` up to `stop` (canonical paths), or None.

        Never above `stop`, never `$HOME/.lwc`. Below `stop` the walk goes down by handles;
        a component that is no longer a directory gives a `store_path_invalid` store.
        """
        if not text_within(start, stop):
            return None
        rest = start[len(stop) :].strip("/")
        if not rest:  # the common case: projectPath is the workspace
            return None if stop == home else self._probe(None, stop, "project")
        try:
            fd = self._open_dir(stop)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return StoreRef("project", _db_path(stop), _os_problem(stop, exc))
        chain = [(stop, fd)]
        directory = stop
        for name in rest.split("/"):
            directory = os.path.join(directory, name)
            try:
                fd = self._open_dir(name, fd)
            except OSError as exc:
                return StoreRef("project", _db_path(directory), _os_problem(directory, exc))
            chain.append((directory, fd))
        for directory, fd in reversed(chain):
            if directory != home:
                found = self._probe(fd, directory, "project")
                if found is not None:
                    return found
        return None

    def global_store(self, home: str) -> StoreRef | None:
        """`$HOME/.lwc/wiki.db` (home canonical) when it exists or is invalid."""
        return self._probe(None, home, "global")

    def _probe(self, fd: int | None, directory: str, scope: str) -> StoreRef | None:
        """`.lwc/wiki.db` in `directory`, reached through its handle `fd`; without one (the
        workspace root or `$HOME`, trusted directories) by path, the `.lwc` still opened
        without following a link. Paths are built only for a store found: this runs for
        every directory walked."""
        lwc = f"{directory}/{STORE_DIR}"
        name = STORE_DIR if fd is not None else lwc
        try:
            lwc_fd = self._open_dir(name, fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                # Not followed: a symlink (Linux says ENOTDIR, macOS ELOOP) or a plain file.
                try:
                    link = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
                except OSError:
                    return None
                if not link:
                    return None
                return _problem(scope, directory, _invalid(f"{lwc} is a symlink"))
            return _problem(scope, directory, _os_problem(lwc, exc))
        try:
            st = os.stat(STORE_FILE, dir_fd=lwc_fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            return _problem(scope, directory, _os_problem(lwc, exc))
        db = _db_path(directory)
        if stat.S_ISLNK(st.st_mode):
            return StoreRef(scope, db, _invalid(f"{db} is a symlink"))
        if not stat.S_ISREG(st.st_mode):
            return StoreRef(scope, db, _invalid(f"{db} is not a regular file"))
        return StoreRef(scope, db, dir_fd=lwc_fd)


def _problem(scope: str, directory: str, problem: StoreError) -> StoreRef:
    return StoreRef(scope, _db_path(directory), problem)


@functools.lru_cache(maxsize=256)
def _db_path(directory: str) -> Path:
    # Cached: a Path is immutable, and parsing one is a tenth of a store walk.
    return Path(directory, STORE_DIR, STORE_FILE)


def inspect_store(dir_fd: int) -> Identity:
    """Check a store beside its `.lwc` handle; return the file's (device, inode).

    `wiki.db` must be a regular rollback-journal SQLite file (an LWC store is reported as
    such); a `-journal` must be absent or a regular non-symlink file; a `-wal` or `-shm` must
    be absent, since SQLite reads a store as WAL whenever a `-wal` exists beside it.
    Raises `StoreError`.
    """
    try:
        st = os.stat(STORE_FILE, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise StoreChanged("the store file disappeared while it was being read") from None
    except OSError as exc:
        raise _os_problem(STORE_FILE, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise _invalid("the store path is not a regular file")
    identity = (st.st_dev, st.st_ino)
    with GATE.hold():
        fd = _HEADS.get(identity)
        if fd is None:
            fd = _open_head(dir_fd, identity)
        check_header(os.pread(fd, 100, 0))
    for suffix in SIDECARS:
        name = STORE_FILE + suffix
        try:
            side = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _os_problem(name, exc) from None
        if stat.S_ISLNK(side.st_mode):
            raise _invalid(f"{name} beside the store is a symlink; see `lwc doctor`")
        if not stat.S_ISREG(side.st_mode):
            raise _invalid(f"{name} beside the store is not a regular file")
        if suffix != "-journal":
            raise StoreError("store_corrupt", f"{name} beside the store: it is in WAL mode")
    return identity


# One descriptor per store file, kept open while the file may be in use. Closing any
# descriptor of a file drops every POSIX lock this process holds on it, SQLite's included:
# opening and closing `wiki.db` on each checkout released other threads' read locks behind
# SQLite's back (and a writer could then change pages under their transaction).
_HEADS: dict[Identity, int] = {}


def _open_head(dir_fd: int, identity: Identity) -> int:
    try:
        fd = os.open(STORE_FILE, _FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise StoreChanged("the store file disappeared while it was being read") from None
    except OSError as exc:
        raise _os_problem(STORE_FILE, exc) from None
    if _identity(fd) != identity:
        # Swapped between the stat and the open; this descriptor never held SQLite's locks.
        os.close(fd)
        raise StoreChanged("the store file changed while it was being read (retry)")
    _HEADS[identity] = fd
    return fd


def forget_head(identity: Identity) -> None:
    """Close the kept descriptor of a file no connection of this process has open any more
    (so no SQLite lock of ours on it can be dropped)."""
    with GATE.hold():
        fd = _HEADS.pop(identity, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _identity(fd: int) -> Identity | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


_FD_DIR = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"


def _regular_fds() -> set[tuple[int, Identity]]:
    """(descriptor, file) of every regular file this process has open."""
    found = set()
    for name in os.listdir(_FD_DIR):
        identity = _identity(int(name))
        if identity is not None:
            found.add((int(name), identity))
    return found


def open_checked(
    connect: Callable[[], sqlite3.Connection], expected: Identity
) -> sqlite3.Connection:
    """`connect()`, kept only when SQLite's database descriptor is the `expected` file.

    Under `GATE`, the regular files this process has open are listed before and after
    SQLite connects; the connection is kept only when a new descriptor is the `expected`
    file and no other regular file appeared. Every open of a store file in the process
    happens under `GATE`, so that descriptor can only be SQLite's. Raises `StoreChanged`
    (after closing the connection) otherwise, also when SQLite reused a descriptor it kept
    from an earlier connection (`pool` closes connections so that it never has to).
    """
    with GATE.hold():
        before = _regular_fds()
        conn = connect()
        new = {identity for _fd, identity in _regular_fds() - before}
    if new != {expected}:
        conn.close()
        raise StoreChanged("the store file changed while it was being opened (retry)")
    return conn
