"""Code readiness follows SPEC §5 order, stays inside the workspace and never creates a file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lwc_trio.codegraph.index import IndexInvalid, Ready, find_index, readiness


def make_index(root: Path) -> Path:
    (root / ".codegraph").mkdir(parents=True)
    db = root / ".codegraph" / "codegraph.db"
    db.write_bytes(b"SQLite format 3\x00")
    return db


def snapshot(base: Path) -> list[tuple[str, int]]:
    """Every path under `base` with its mtime: any created or touched file shows up."""
    out = []
    for folder, dirs, files in os.walk(base):
        for name in [*dirs, *files]:
            path = Path(folder, name)
            out.append((str(path), path.lstat().st_mtime_ns))
    return sorted(out)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/ws/proj/src/deep with a runtime binary at tmp/bin/codegraph."""
    (tmp_path / "ws" / "proj" / "src" / "deep").mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    binary = tmp_path / "bin" / "codegraph"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    return tmp_path


def env_for(tree: Path, binary: bool = True) -> dict[str, str]:
    env = {"HOME": str(tree / "home"), "PATH": "/usr/bin:/bin"}
    if binary:
        env["LWC_CODEGRAPH_BINARY"] = str(tree / "bin" / "codegraph")
    return env


def test_nearest_index_wins_walking_up_to_the_workspace(tree: Path) -> None:
    """The closest `.codegraph/codegraph.db` above projectPath is used, inner before outer."""
    ws, proj = tree / "ws", tree / "ws" / "proj"
    make_index(ws)
    assert find_index(proj / "src" / "deep", ws) == ws
    make_index(proj)
    assert find_index(proj / "src" / "deep", ws) == proj
    assert find_index(proj, ws) == proj


def test_index_above_the_workspace_is_never_used(tree: Path) -> None:
    """An index in the workspace's parent does not count, nor does a start outside the root."""
    make_index(tree)
    ws = tree / "ws"
    assert find_index(ws / "proj", ws) is None
    assert find_index(tree, ws) is None


def test_codegraph_folder_without_database_is_passed_over(tree: Path) -> None:
    """A bare `.codegraph/` (interrupted init) does not hide the index further up."""
    ws, proj = tree / "ws", tree / "ws" / "proj"
    make_index(ws)
    (proj / ".codegraph").mkdir()
    assert find_index(proj, ws) == ws


@pytest.mark.parametrize("what", ["folder", "dangling folder", "database", "database dir"])
def test_symlinked_or_odd_index_is_invalid(tree: Path, what: str) -> None:
    """A symlinked `.codegraph` (even dangling) or `codegraph.db`, or a db that is no file."""
    ws, proj = tree / "ws", tree / "ws" / "proj"
    make_index(ws)  # must not be reached instead
    elsewhere = tree / "elsewhere"
    make_index(elsewhere)
    if what == "folder":
        (proj / ".codegraph").symlink_to(elsewhere / ".codegraph")
    elif what == "dangling folder":
        (proj / ".codegraph").symlink_to(tree / "nowhere")
    elif what == "database":
        (proj / ".codegraph").mkdir()
        (proj / ".codegraph" / "codegraph.db").symlink_to(elsewhere / ".codegraph" / "codegraph.db")
    else:
        (proj / ".codegraph" / "codegraph.db").mkdir(parents=True)
    found = find_index(proj / "src", ws)
    assert isinstance(found, IndexInvalid)
    state = readiness(proj / "src", ws, env_for(tree))
    assert isinstance(state, dict)
    assert list(state) == ["state", "error"]
    assert state == {
        "state": "error",
        "error": {"code": "codegraph_index_invalid", "message": state["error"]["message"]},
    }
    assert str(proj) in state["error"]["message"]


def test_readiness_order_runtime_then_index(tree: Path) -> None:
    """Runtime missing is reported first (even with a bad index), then index missing."""
    ws, src = tree / "ws", tree / "ws" / "proj" / "src"
    (tree / "ws" / "proj" / ".codegraph").symlink_to(tree / "nowhere")
    assert readiness(src, ws, env_for(tree, binary=False)) == {
        "state": "unavailable",
        "error": {
            "code": "codegraph_runtime_missing",
            "message": "the CodeGraph runtime is not installed; `lwc cg install` installs it",
        },
        "nextAction": {"command": "lwc cg install", "cwd": str(src)},
    }
    (tree / "ws" / "proj" / ".codegraph").unlink()
    missing = readiness(src, ws, env_for(tree))
    assert isinstance(missing, dict)
    assert list(missing) == ["state", "error", "nextAction"]
    assert missing["state"] == "unavailable"
    assert missing["error"]["code"] == "codegraph_index_missing"
    assert missing["nextAction"] == {"command": "lwc --scope project cg init", "cwd": str(src)}


def test_ready_carries_binary_and_index_root(tree: Path) -> None:
    """With both present, readiness names the binary to run and the root to pass as --path."""
    proj = tree / "ws" / "proj"
    make_index(proj)
    assert readiness(proj / "src" / "deep", tree / "ws", env_for(tree)) == Ready(
        binary=tree / "bin" / "codegraph", root=proj
    )


def test_readiness_creates_no_file(tree: Path) -> None:
    """Checking readiness in every state leaves the filesystem exactly as it was."""
    ws, src = tree / "ws", tree / "ws" / "proj" / "src"
    home = tree / "home"
    home.mkdir()
    before = snapshot(tree)
    readiness(src, ws, env_for(tree, binary=False))
    readiness(src, ws, {"HOME": str(home)})
    readiness(src, ws, env_for(tree))
    assert snapshot(tree) == before
    make_index(ws / "proj")
    before = snapshot(tree)
    assert isinstance(readiness(src, ws, env_for(tree)), Ready)
    assert snapshot(tree) == before
