"""`lwc doctor` recognises an LWC store and names `lwc import --from-lwc`; it names a symlinked
`.lwc` or `wiki.db` with its target; it writes nothing beside either."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli_doctor import Box, checks, store

from benchmarks.lwc_store import LwcPage, make_lwc_store, make_wal_only_store


@pytest.fixture
def box(tmp_path: Path) -> Box:
    """A fresh HOME and project, with a fake `lwc` on PATH."""
    return Box(tmp_path.resolve())


@pytest.mark.parametrize("where", ["project", "global"])
def test_lwc_store_names_the_import_command(box: Box, where: str) -> None:
    """An LWC 0.16 store is `unsupported_store_version` with `lwc import --from-lwc PATH`."""
    root = box.project if where == "project" else box.home
    db = make_wal_only_store(root / ".lwc" / "wiki.db", [LwcPage("a", "A")])
    before = box.snapshot()
    check = checks(box.doctor())[f"{where}_store"]
    prefix = "lwc --scope global " if where == "global" else "lwc "
    assert check["status"] == "error"
    assert check["error"]["code"] == "unsupported_store_version"
    assert check["lwcFormat"] == 16
    assert check["nextAction"] == {
        "command": f"{prefix}import --from-lwc {db}",
        "cwd": str(root),
    }
    assert box.snapshot() == before


def test_lwc_store_makes_memory_not_ready(box: Box) -> None:
    """With only an LWC store, doctor says memory would not be ready."""
    make_lwc_store(box.project / ".lwc" / "wiki.db", [LwcPage("a", "A")])
    assert box.doctor()["ready"]["memory"] is False


@pytest.mark.parametrize("what", [".lwc", "wiki.db"])
def test_symlinked_store_names_the_link_and_its_target(box: Box, what: str) -> None:
    """A symlinked `.lwc` or `wiki.db` is named, with where it points, as store_path_invalid."""
    elsewhere = box.root / "elsewhere"
    real = store(elsewhere)
    if what == ".lwc":
        link, target = box.project / ".lwc", real.parent
    else:
        (box.project / ".lwc").mkdir()
        link, target = box.project / ".lwc" / "wiki.db", real
    link.symlink_to(target)
    check = checks(box.doctor())["project_store"]
    assert check["status"] == "error"
    assert check["error"]["code"] == "store_path_invalid"
    assert check["link"] == str(link)
    assert f"{link} is a symlink (to {target})" in check["message"]
