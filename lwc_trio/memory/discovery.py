"""Where stores live: the nearest project `.lwc/wiki.db` and the global `$HOME/.lwc/wiki.db`.

A symlinked `.lwc` or `wiki.db` (or a `wiki.db` that is not a regular file) is reported as
`store_path_invalid` for that store rather than followed: a cloned repository must not be able
to point the server at a file elsewhere.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import attrs

from lwc_trio.exceptions import StoreError

__all__ = ["STORE_DIR", "STORE_FILE", "StoreRef", "find_global_store", "find_project_store"]

STORE_DIR = ".lwc"
STORE_FILE = "wiki.db"


@attrs.frozen
class StoreRef:
    """A discovered store: its scope, its file, and why it cannot be used (if it cannot)."""

    scope: str  # "project" | "global"
    path: Path
    problem: StoreError | None = None

    @property
    def root(self) -> Path:
        """The directory holding `.lwc/` (where `lwc init` was run)."""
        return self.path.parent.parent


def _probe(directory: Path, scope: str) -> StoreRef | None:
    lwc = directory / STORE_DIR
    db = lwc / STORE_FILE
    try:
        st = lwc.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        return StoreRef(scope, db, StoreError("store_path_invalid", f"{lwc} is a symlink"))
    if not stat.S_ISDIR(st.st_mode):
        return None
    try:
        st = db.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        return StoreRef(scope, db, StoreError("store_path_invalid", f"{db} is a symlink"))
    if not stat.S_ISREG(st.st_mode):
        return StoreRef(scope, db, StoreError("store_path_invalid", f"{db} is not a file"))
    return StoreRef(scope, db)


def _canonical(path: Path) -> Path:
    return Path(os.path.realpath(path))


def find_project_store(start: Path, stop: Path, *, home: Path) -> StoreRef | None:
    """The nearest `.lwc/wiki.db` from `start` up to `stop` inclusive (canonical paths).

    Never looks above `stop` (nor at all when `start` is not inside it) and never takes
    `$HOME/.lwc`, which is the global store.
    """
    start, stop, home = _canonical(start), _canonical(stop), _canonical(home)
    if start != stop and stop not in start.parents:
        return None
    directory = start
    while True:
        if directory != home:
            found = _probe(directory, "project")
            if found is not None:
                return found
        if directory == stop or directory.parent == directory:
            return None
        directory = directory.parent


def find_global_store(home: Path) -> StoreRef | None:
    """`$HOME/.lwc/wiki.db` when it exists (or is invalid)."""
    return _probe(_canonical(home), "global")
