"""The files of an LWC store: a private, consistent copy to read, and the in-place swap.

Reading an LWC store must never change it, and SQLite would create `-shm` (and replay the WAL
into the file) beside any WAL database it opens. So its `wiki.db` and `-wal`/`-journal` are
copied, never through a symlink and never blocking on a FIFO, into a fresh temporary directory,
and SQLite only ever sees the copy. Converting a project's own LWC store moves LWC's files,
unchanged, out of the way of the new one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from lwc_trio.exceptions import WikiError

__all__ = ["private_copy", "remove_quietly", "swap_in"]

_COPY_ATTEMPTS = 3
_CHUNK = 1 << 20


def _copy_file(source: Path, target: Path) -> tuple[int, int, int]:
    """Copy a regular, non-symlink file; return its (size, mtime_ns, inode) as copied."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        why = "is a symlink" if exc.errno == errno.ELOOP else f"cannot be read ({exc.strerror})"
        raise WikiError("store_path_invalid", f"{source} {why}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise WikiError("store_path_invalid", f"{source} is not a regular file")
        with open(target, "wb") as out:
            while chunk := os.read(fd, _CHUNK):
                out.write(chunk)
        return info.st_size, info.st_mtime_ns, info.st_ino
    finally:
        os.close(fd)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino


@contextlib.contextmanager
def private_copy(db: Path) -> Iterator[Path]:
    """A consistent copy of `db` and its `-wal`/`-journal` in a fresh temporary directory.

    Raises `WikiError(lwc_store_busy)` when LWC keeps writing while it is copied.
    """
    with tempfile.TemporaryDirectory(prefix="lwc-import-") as tmp:
        copy = Path(tmp) / "wiki.db"
        for _attempt in range(_COPY_ATTEMPTS):
            stamps = {}
            for suffix in ("", "-wal", "-journal"):
                side = db.with_name(db.name + suffix)
                if suffix and not os.path.lexists(side):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(copy.with_name(copy.name + suffix))
                    continue
                stamps[suffix] = _copy_file(side, copy.with_name(copy.name + suffix))
            now = {s: _stamp(db.with_name(db.name + s)) for s in ("", "-wal", "-journal")}
            if all(now[s] == stamps.get(s) for s in now):
                yield copy
                return
        raise WikiError(
            "lwc_store_busy",
            f"{db} kept changing while it was copied; stop LWC (and hosts running it) and retry",
        )


def swap_in(lwc_db: Path, new_store: Path) -> Path:
    """Put `new_store` where the LWC store `lwc_db` was; keep LWC's files, renamed, untouched.

    LWC and lwc_trio both keep a project's Wiki at `.lwc/wiki.db`, so converting it in place is
    the only way the server finds the imported Pages there. LWC's `wiki.db` and its `-wal`/`-shm`
    are moved (never rewritten) into `.lwc/lwc-0.16/` (or `lwc-0.16-N`), then the new store is
    renamed into place. On any failure what was moved is moved back. Returns the backup folder.
    """
    parent = lwc_db.parent
    backup = parent / "lwc-0.16"
    number = 1
    while os.path.lexists(backup):
        backup = parent / f"lwc-0.16-{number}"
        number += 1
    backup.mkdir()
    moved: list[tuple[Path, Path]] = []
    try:
        for suffix in ("", "-wal", "-shm", "-journal"):
            side = lwc_db.with_name(lwc_db.name + suffix)
            if os.path.lexists(side):
                os.rename(side, backup / side.name)
                moved.append((side, backup / side.name))
        os.rename(new_store, lwc_db)
    except OSError as exc:
        for original, now in reversed(moved):
            with contextlib.suppress(OSError):
                os.rename(now, original)
        with contextlib.suppress(OSError):
            backup.rmdir()
        raise WikiError(
            "store_path_invalid", f"cannot put the new store in place of {lwc_db}: {exc.strerror}"
        ) from None
    return backup


def remove_quietly(path: Path) -> None:
    """Delete a half-built store file and its journal, ignoring what is not there."""
    for suffix in ("", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path.with_name(path.name + suffix))
