"""Code-plane readiness: is there a runtime, and which CodeGraph index serves a projectPath?

Synchronous and read-only: only `lstat`/`stat`/`access` calls and read-only directory
handles, so checking readiness never creates a file (SPEC §2, §5). The code plane runs
`readiness` before every call.

`locate_index` (used by `readiness`) walks from the workspace down through directory handles
opened with `O_NOFOLLOW`, never through a path string the kernel resolves again, and returns
the index root's `RootIdentity`: what the code plane compares before and after each call, so a
directory swapped for a symlink mid-call cannot redirect what the answer holds
(docs/security.md, "Code plane and races").
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from lwc_trio.codegraph.runtime import locate_binary
from lwc_trio.paths import is_within

__all__ = [
    "DB_NAME",
    "INDEX_DIR",
    "INIT_COMMAND",
    "INSTALL_COMMAND",
    "IndexInvalid",
    "IndexLookup",
    "Located",
    "Ready",
    "RootIdentity",
    "error_state",
    "find_index",
    "locate_index",
    "readiness",
    "unavailable_state",
]

INDEX_DIR = ".codegraph"
DB_NAME = "codegraph.db"

INSTALL_COMMAND = "lwc cg install"
INIT_COMMAND = "lwc --scope project cg init"


@attrs.frozen
class RootIdentity:
    """Where an index root was, as the kernel names files rather than as paths spell them.

    `nodes`: (st_dev, st_ino) of every directory from the workspace down to the root, then of
    `.codegraph` and of `codegraph.db`. `stamps`: the change time (st_ctime_ns) of every
    directory from the workspace down to the root's parent — the directories whose entries
    make up the path. A rename, a symlink or an unlink in one of them changes its change time,
    so a component swapped away and back between two checks still shows.
    """

    nodes: tuple[tuple[int, int], ...]
    stamps: tuple[int, ...]

    @property
    def db(self) -> tuple[int, int]:
        """(st_dev, st_ino) of `codegraph.db`."""
        return self.nodes[-1]


@attrs.frozen
class Located:
    """The nearest index root found through directory handles, and its identity."""

    root: Path
    identity: RootIdentity


@attrs.frozen
class Ready:
    """The code plane can serve: run `binary` against the index in `root/.codegraph/`."""

    binary: Path
    root: Path
    identity: RootIdentity | None = attrs.field(default=None, eq=False)
    """The root's identity when readiness was checked (None only when built by hand)."""


@attrs.frozen
class IndexInvalid:
    """An index was found but must not be used; `reason` is for people (no file contents)."""

    path: Path
    reason: str


IndexLookup = Path | IndexInvalid | None


def _mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def find_index(start: Path, root: Path) -> IndexLookup:
    """The directory holding the nearest `.codegraph/codegraph.db`, walking up from `start` to
    `root` inclusive (never above); `IndexInvalid` when the nearest one is a symlink or not a
    regular file; None when there is none or `start` is not inside `root`.

    Both paths must be canonical. A symlinked `.codegraph` counts as found (and invalid) even
    when it dangles, so a link cannot make the lookup skip to an index further up. A real
    `.codegraph` folder without a database (an interrupted init) is passed over. Never raises.
    """
    if not is_within(start, root):
        return None
    current = start
    while True:
        folder = current / INDEX_DIR
        folder_mode = _mode(folder)
        if folder_mode is not None:
            if stat.S_ISLNK(folder_mode):
                return IndexInvalid(folder, f"{INDEX_DIR} in {current} is a symbolic link")
            db = folder / DB_NAME
            db_mode = _mode(db) if stat.S_ISDIR(folder_mode) else None
            if db_mode is not None:
                if stat.S_ISLNK(db_mode):
                    return IndexInvalid(
                        db, f"{INDEX_DIR}/{DB_NAME} in {current} is a symbolic link"
                    )
                if not stat.S_ISREG(db_mode):
                    return IndexInvalid(db, f"{INDEX_DIR}/{DB_NAME} in {current} is not a file")
                return current
        if current == root or current.parent == current:
            return None
        current = current.parent


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHANGED = (errno.ELOOP, errno.ENOTDIR, errno.ENOENT)


def locate_index(start: Path, root: Path) -> Located | IndexInvalid | None:
    """`find_index` through directory handles: the same answer, plus the root's identity.

    `root` (the canonical workspace) is opened once; every component below it is opened with
    `O_NOFOLLOW | O_DIRECTORY` relative to its parent's handle, and `.codegraph` and
    `codegraph.db` are looked at relative to their directory's handle without following
    links. A component that is a symlink now (the tree changed after the path check) or
    cannot be opened is `IndexInvalid`. Both paths must be canonical. Never raises.
    """
    if not is_within(start, root):
        return None
    parts = start.relative_to(root).parts
    handles: list[int] = []
    try:
        try:
            handles.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            stats = [os.fstat(handles[0])]
        except OSError as exc:
            return IndexInvalid(root, f"the workspace cannot be opened: {exc.strerror}")
        for depth, name in enumerate(parts, start=1):
            where = root.joinpath(*parts[:depth])
            try:
                handles.append(os.open(name, _DIR_FLAGS, dir_fd=handles[-1]))
                stats.append(os.fstat(handles[-1]))
            except OSError as exc:
                if exc.errno in _CHANGED:
                    return IndexInvalid(
                        where, f"{where} changed while it was being checked (now a link or gone)"
                    )
                return IndexInvalid(where, f"{where} cannot be opened: {exc.strerror}")
        for depth in range(len(handles) - 1, -1, -1):
            found = _index_at(handles[depth], root.joinpath(*parts[:depth]), stats, depth)
            if found is not None:
                return found
        return None
    finally:
        for handle in handles:
            os.close(handle)


def _index_at(
    handle: int, current: Path, stats: list[os.stat_result], depth: int
) -> Located | IndexInvalid | None:
    """The index in the directory open as `handle`, if any (the `find_index` rules)."""
    try:
        folder = os.stat(INDEX_DIR, dir_fd=handle, follow_symlinks=False)
    except OSError:
        return None
    if stat.S_ISLNK(folder.st_mode):
        return IndexInvalid(current / INDEX_DIR, f"{INDEX_DIR} in {current} is a symbolic link")
    if not stat.S_ISDIR(folder.st_mode):
        return None
    try:
        folder_handle = os.open(INDEX_DIR, _DIR_FLAGS, dir_fd=handle)
    except OSError:
        return IndexInvalid(current / INDEX_DIR, f"{INDEX_DIR} in {current} changed while read")
    try:
        folder = os.fstat(folder_handle)
        try:
            db = os.stat(DB_NAME, dir_fd=folder_handle, follow_symlinks=False)
        except OSError:
            return None  # an interrupted init: passed over, as in `find_index`
    finally:
        os.close(folder_handle)
    db_path = current / INDEX_DIR / DB_NAME
    if stat.S_ISLNK(db.st_mode):
        return IndexInvalid(db_path, f"{INDEX_DIR}/{DB_NAME} in {current} is a symbolic link")
    if not stat.S_ISREG(db.st_mode):
        return IndexInvalid(db_path, f"{INDEX_DIR}/{DB_NAME} in {current} is not a file")
    nodes = tuple((st.st_dev, st.st_ino) for st in stats[: depth + 1])
    nodes += ((folder.st_dev, folder.st_ino), (db.st_dev, db.st_ino))
    stamps = tuple(st.st_ctime_ns for st in stats[:depth])
    return Located(current, RootIdentity(nodes, stamps))


def unavailable_state(code: str, message: str, command: str, cwd: Path) -> dict[str, Any]:
    """SPEC §2.1 `codeGraph` object for a capability the user has to add with the CLI."""
    return {
        "state": "unavailable",
        "error": {"code": code, "message": message},
        "nextAction": {"command": command, "cwd": str(cwd)},
    }


def error_state(code: str, message: str) -> dict[str, Any]:
    """SPEC §2.1 `codeGraph` object for a failure."""
    return {"state": "error", "error": {"code": code, "message": message}}


def readiness(
    project_path: Path, workspace: Path, env: Mapping[str, str]
) -> Ready | dict[str, Any]:
    """`Ready` when the code plane can serve `project_path`, else its `codeGraph` object.

    Checked in SPEC §5 order: runtime missing (`codegraph_runtime_missing`), then index missing
    (`codegraph_index_missing`), then a symlinked index (`codegraph_index_invalid`). Both paths
    must be canonical and `project_path` inside `workspace`. Creates nothing; never raises.
    """
    binary = locate_binary(env)
    if binary is None:
        return unavailable_state(
            "codegraph_runtime_missing",
            "the CodeGraph runtime is not installed; `lwc cg install` installs it",
            INSTALL_COMMAND,
            project_path,
        )
    found = locate_index(project_path, workspace)
    if found is None:
        return unavailable_state(
            "codegraph_index_missing",
            "no CodeGraph index (.codegraph/codegraph.db) between projectPath and the workspace "
            "root; `lwc --scope project cg init` builds one",
            INIT_COMMAND,
            project_path,
        )
    if isinstance(found, IndexInvalid):
        return error_state(
            "codegraph_index_invalid", f"refusing the CodeGraph index: {found.reason}"
        )
    return Ready(binary=binary, root=found.root, identity=found.identity)
