"""Code readiness follows SPEC §5 order, stays inside the workspace and never creates a file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lwc_trio.codegraph.index import (
    IndexInvalid,
    Located,
    Ready,
    find_index,
    locate_index,
    readiness,
)


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


# -- locating through directory handles (SPEC §3 "Races") -----------------------------------


def test_locate_index_agrees_with_find_index_and_names_the_root(tree: Path) -> None:
    """Same root as the path-string lookup, plus an identity: one node per directory from the
    workspace down, then `.codegraph` and the db; one change time per directory above the root."""
    ws, proj = tree / "ws", tree / "ws" / "proj"
    db = make_index(proj)
    located = locate_index(proj / "src" / "deep", ws)
    assert isinstance(located, Located)
    assert located.root == find_index(proj / "src" / "deep", ws) == proj
    assert len(located.identity.nodes) == 4  # ws, proj, .codegraph, codegraph.db
    assert len(located.identity.stamps) == 1  # ws
    assert located.identity.db == (db.stat().st_dev, db.stat().st_ino)
    assert locate_index(proj, ws) == located
    assert locate_index(tree / "elsewhere", ws) is None


def test_locate_index_refuses_a_component_that_became_a_link(tree: Path) -> None:
    """The path was checked, then `proj` was swapped for a symlink: the walk does not follow it."""
    ws, proj = tree / "ws", tree / "ws" / "proj"
    make_index(proj)
    outside = tree / "outside"
    make_index(outside)
    proj.rename(tree / "ws" / "proj.real")
    proj.symlink_to(outside)
    found = locate_index(proj / "src", ws)
    assert isinstance(found, IndexInvalid)
    assert "changed while it was being checked" in found.reason
    assert isinstance(locate_index(proj, ws), IndexInvalid)
    state = readiness(proj, ws, env_for(tree))
    assert not isinstance(state, Ready)
    assert state["error"]["code"] == "codegraph_index_invalid"


def test_identity_shows_a_swap_that_was_put_back(tree: Path) -> None:
    """Swapped for a link and back between two looks: same inodes, but the parent changed."""
    ws, proj = tree / "ws", tree / "ws" / "proj"
    make_index(proj)
    before = locate_index(proj, ws)
    assert isinstance(before, Located)
    time.sleep(0.02)  # past a coarse timestamp tick, where change times are not fine-grained
    proj.rename(ws / "hidden")
    proj.symlink_to(tree / "bin")
    proj.unlink()
    (ws / "hidden").rename(proj)
    after = locate_index(proj, ws)
    assert isinstance(after, Located)
    assert after.identity.nodes == before.identity.nodes
    assert after.identity.stamps != before.identity.stamps


def test_identity_shows_a_directory_replaced_by_another(tree: Path) -> None:
    ws, proj = tree / "ws", tree / "ws" / "proj"
    make_index(proj)
    before = locate_index(proj, ws)
    proj.rename(ws / "old")
    make_index(proj)
    after = locate_index(proj, ws)
    assert isinstance(before, Located)
    assert isinstance(after, Located)
    assert after.identity.nodes != before.identity.nodes


def test_open_index_files_of_a_process_are_checked(tmp_path: Path) -> None:
    """`/proc/PID/fd` tells which codegraph.db a process has open (Linux only)."""
    from lwc_trio.codegraph.plane import _holds_other_index

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("no /proc on this platform")
    db = make_index(tmp_path / "p")
    st = db.stat()
    with db.open("rb"):
        assert _holds_other_index(os.getpid(), (st.st_dev, st.st_ino)) is False
        assert _holds_other_index(os.getpid(), (st.st_dev, st.st_ino + 1)) is True
    assert _holds_other_index(2**22 + 12345, (0, 0)) is None
