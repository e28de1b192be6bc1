"""Code-plane readiness: is there a runtime, and which CodeGraph index serves a projectPath?

Synchronous and read-only: only `lstat`/`stat`/`access` calls, so checking readiness never
creates a file (SPEC §2, §5). The code plane runs `readiness` before every call.
"""

from __future__ import annotations

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
    "Ready",
    "error_state",
    "find_index",
    "readiness",
    "unavailable_state",
]

INDEX_DIR = ".codegraph"
DB_NAME = "codegraph.db"

INSTALL_COMMAND = "lwc cg install"
INIT_COMMAND = "lwc --scope project cg init"


@attrs.frozen
class Ready:
    """The code plane can serve: run `binary` against the index in `root/.codegraph/`."""

    binary: Path
    root: Path


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
    found = find_index(project_path, workspace)
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
    return Ready(binary=binary, root=found)
