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
from lwc_trio.paths import text_within

__all__ = [
    "STORE_DIR",
    "STORE_FILE",
    "StoreRef",
    "find_global_store",
    "find_project_store",
    "global_store_at",
    "nearest_project_store",
    "project_store_above",
]

STORE_DIR = ".lwc"
STORE_FILE = "wiki.db"


@attrs.frozen
class StoreRef:
    """A discovered store: its scope, its file, and why it cannot be used (if it cannot)."""

    scope: str  # "project" | "global"
    path: Path
    problem: StoreError | None = None
    dir_fd: int | None = attrs.field(default=None, eq=False)
    """The server's handle of the `.lwc` directory (see `handles.Handles`), valid during
    the request that found the store."""

    @property
    def root(self) -> Path:
        """The directory holding `.lwc/` (where `lwc init` was run)."""
        return self.path.parent.parent


def _lstat_mode(path: str) -> int | None:
    """`st_mode` of `path` itself (a link is not followed); None when nothing is there."""
    try:
        return os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None


def _probe(directory: str, scope: str) -> StoreRef | None:
    # Strings and os.lstat, not pathlib: this runs for every directory walked on every call.
    lwc = os.path.join(directory, STORE_DIR)
    db = os.path.join(lwc, STORE_FILE)
    mode = _lstat_mode(lwc)
    if mode is None:
        return None
    if stat.S_ISLNK(mode):
        return StoreRef(scope, Path(db), StoreError("store_path_invalid", f"{lwc} is a symlink"))
    if not stat.S_ISDIR(mode):
        return None
    mode = _lstat_mode(db)
    if mode is None:
        return None
    if stat.S_ISLNK(mode):
        return StoreRef(scope, Path(db), StoreError("store_path_invalid", f"{db} is a symlink"))
    if not stat.S_ISREG(mode):
        return StoreRef(scope, Path(db), StoreError("store_path_invalid", f"{db} is not a file"))
    return StoreRef(scope, Path(db))


def find_project_store(start: Path, stop: Path, *, home: Path) -> StoreRef | None:
    """The nearest `.lwc/wiki.db` from `start` up to `stop` inclusive.

    Never looks above `stop` (nor at all when `start` is not inside it) and never takes
    `$HOME/.lwc`, which is the global store. The three paths are canonicalised first.
    """
    real = os.path.realpath
    return nearest_project_store(real(start), real(stop), home=real(home))


def nearest_project_store(start: str, stop: str, *, home: str) -> StoreRef | None:
    """`find_project_store` for paths that are canonical already (the server's: the
    authorizer resolved `start`, and the workspace and home were resolved at start-up)."""
    if not text_within(start, stop):
        return None
    directory = start
    while True:
        if directory != home:
            found = _probe(directory, "project")
            if found is not None:
                return found
        parent = os.path.dirname(directory)
        if directory == stop or parent == directory:
            return None
        directory = parent


def find_global_store(home: Path | str) -> StoreRef | None:
    """`$HOME/.lwc/wiki.db` when it exists (or is invalid)."""
    return _probe(os.path.realpath(home), "global")


def global_store_at(home: str) -> StoreRef | None:
    """`find_global_store` for a canonical home."""
    return _probe(home, "global")


def project_store_above(workspace: str, home: str) -> StoreRef | None:
    """The nearest project store *above* a canonical `workspace` (up to `home`, or to `/` for a
    workspace outside it), or None. The server never reads it; it is named in the
    `store_not_found` guidance so that a host started in a subdirectory of a project is told to
    bind the project, not to create a second, empty Wiki. Only `lstat` calls."""
    parent = os.path.dirname(workspace)
    if parent == workspace or workspace == home:
        return None
    stop = home if text_within(workspace, home) else os.path.abspath(os.sep)
    return nearest_project_store(parent, stop, home=home)
