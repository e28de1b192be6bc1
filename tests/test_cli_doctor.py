"""`lwc doctor` reports each missing piece with its exact next command, and never writes a byte."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_home import FakeHome

from lwc_trio.cli.main import main
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.storage.store import create_store

PYTHON_BIN = Path(sys.executable).parent


class Box(FakeHome):
    """A temporary HOME, a project (the cwd), a fake `lwc` on PATH and no CodeGraph runtime."""

    snapshot_mtimes = True  # doctor must not even touch a file

    def doctor(self, *args: str, cwd: Path | None = None, **env: str) -> dict[str, Any]:
        """Run `lwc doctor ARGS` (piped: JSON); it must exit 0 and print nothing on stderr."""
        done = self.spawn(("doctor", *args), cwd, env)
        assert (done.returncode, done.stderr) == (0, "")
        report: dict[str, Any] = json.loads(done.stdout)
        return report


@pytest.fixture
def box(tmp_path: Path) -> Box:
    """A fresh HOME and project."""
    return Box(tmp_path.resolve())


def checks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The report's checks by name."""
    return {check["name"]: check for check in report["checks"]}


def summary(report: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """Each check's status and next command."""
    return {
        c["name"]: (c["status"], c["nextAction"]["command"] if c["nextAction"] else None)
        for c in report["checks"]
    }


def store(root: Path, *, graph: str = "disabled") -> Path:
    """Create `root/.lwc/wiki.db` through the real write path; graph disabled/pending/ready."""
    (root / ".lwc").mkdir(parents=True, exist_ok=True)
    path = root / ".lwc" / "wiki.db"
    assert create_store(path)
    if graph != "disabled":
        with Wiki(path) as wiki:
            wiki.set_graph_enabled(True)
            if graph == "ready":
                wiki.build_graph()
    return path


def runtime(box: Box) -> Path:
    """A stand-in CodeGraph executable (never run by doctor), named by LWC_CODEGRAPH_BINARY."""
    binary = box.root / "codegraph"
    binary.write_text("#!/bin/sh\nexit 1\n")
    binary.chmod(0o755)
    return binary


def test_fresh_project_lists_every_missing_piece_with_its_command(box: Box) -> None:
    """Nothing set up: each check is missing with the exact command and where to run it."""
    report = box.doctor()
    assert report["workspace"] == str(box.project)
    assert report["ready"] == {"memory": False, "code": False}
    assert summary(report) == {
        "workspace": ("ok", None),
        "project_store": ("missing", "lwc init"),
        "project_graph": ("missing", "lwc init"),
        "global_store": ("missing", "lwc --scope global init"),
        "global_graph": ("missing", "lwc --scope global init"),
        "codegraph_runtime": ("missing", "lwc cg install"),
        "codegraph_index": ("missing", "lwc --scope project cg init"),
        "lwc_on_path": ("ok", None),
    }
    by_name = checks(report)
    assert by_name["project_store"]["nextAction"]["cwd"] == str(box.project)
    assert by_name["global_store"]["nextAction"]["cwd"] == str(box.home)
    assert by_name["codegraph_index"]["nextAction"]["cwd"] == str(box.project)
    assert by_name["lwc_on_path"]["path"] == str(box.lwc)
    assert report["problems"] == 6


def test_everything_ready(box: Box) -> None:
    """Stores with built graphs, a runtime and an index: every check is ok."""
    db = store(box.project, graph="ready")
    store(box.home, graph="ready")
    with Wiki(db) as wiki:
        revision = wiki.status()["revision"]
    (box.project / ".codegraph").mkdir()
    (box.project / ".codegraph" / "codegraph.db").write_bytes(b"")
    binary = runtime(box)
    report = box.doctor(LWC_CODEGRAPH_BINARY=str(binary))
    assert {name: status for name, (status, _) in summary(report).items()} == dict.fromkeys(
        summary(report), "ok"
    )
    assert report["ready"] == {"memory": True, "code": True}
    assert report["problems"] == 0
    by_name = checks(report)
    assert by_name["project_store"]["path"] == str(box.project / ".lwc" / "wiki.db")
    assert by_name["project_store"]["revision"] == revision
    assert by_name["codegraph_runtime"]["path"] == str(binary)
    assert by_name["codegraph_index"]["path"] == str(box.project / ".codegraph" / "codegraph.db")


def test_graph_disabled_and_pending_name_their_commands(box: Box) -> None:
    """A disabled graph says how to enable it; an unbuilt one how to build it (per scope)."""
    store(box.project, graph="disabled")
    store(box.home, graph="pending")
    report = box.doctor()
    assert summary(report)["project_store"] == ("ok", None)
    assert summary(report)["project_graph"] == ("missing", "lwc config set --graph enabled")
    assert summary(report)["global_graph"] == ("missing", "lwc --scope global graph build")
    assert checks(report)["global_graph"]["nextAction"]["cwd"] == str(box.home)
    assert report["ready"]["memory"] is True


def test_unusable_stores_are_errors_with_their_codes(box: Box) -> None:
    """A garbage wiki.db is store_corrupt; a symlinked .lwc is store_path_invalid."""
    (box.project / ".lwc").mkdir()
    (box.project / ".lwc" / "wiki.db").write_bytes(b"not sqlite")
    elsewhere = box.root / "elsewhere"
    store(elsewhere)
    (box.home / ".lwc").symlink_to(elsewhere / ".lwc")
    by_name = checks(box.doctor())
    assert by_name["project_store"]["status"] == "error"
    assert by_name["project_store"]["error"]["code"] == "store_corrupt"
    assert by_name["project_graph"]["status"] == "error"
    assert by_name["global_store"]["status"] == "error"
    assert by_name["global_store"]["error"]["code"] == "store_path_invalid"


def test_store_above_the_workspace_is_missing_with_a_hint(box: Box) -> None:
    """The server never looks above its workspace; doctor says where the Wiki is instead."""
    store(box.project)
    sub = box.project / "src"
    sub.mkdir()
    report = box.doctor(cwd=sub)
    project = checks(report)["project_store"]
    # Issue 15 #5: never `lwc init` in the subdirectory (a second, empty Wiki).
    assert (project["status"], project["nextAction"]) == (
        "missing",
        {"command": f"lwc serve --mcp --path {box.project}", "cwd": str(box.project)},
    )
    assert f"bind the host to {box.project} with --path" in project["message"]
    assert "lwc agent install HOST --project" in project["message"]
    assert box.doctor("--path", str(box.project), cwd=sub)["workspace"] == str(box.project)


def test_home_as_workspace_is_an_error_but_still_a_report(box: Box) -> None:
    """From $HOME the workspace is too broad; the report still covers global and runtime."""
    report = box.doctor(cwd=box.home)
    assert report["workspace"] is None
    by_name = checks(report)
    assert by_name["workspace"]["status"] == "error"
    assert by_name["workspace"]["error"]["code"] == "workspace_too_broad"
    assert by_name["project_store"]["status"] == "error"
    assert by_name["codegraph_index"]["status"] == "error"
    assert summary(report)["global_store"] == ("missing", "lwc --scope global init")
    assert summary(report)["codegraph_runtime"] == ("missing", "lwc cg install")


def test_bad_path_flag_is_reported(box: Box) -> None:
    """`--path` to a missing directory is an invalid_workspace error in the report."""
    report = box.doctor("--path", str(box.root / "nope"))
    assert checks(report)["workspace"]["error"]["code"] == "invalid_workspace"


def test_symlinked_index_is_an_error(box: Box) -> None:
    """A symlinked .codegraph is refused (codegraph_index_invalid), as the code plane does."""
    (box.root / "real").mkdir()
    (box.project / ".codegraph").symlink_to(box.root / "real")
    index = checks(box.doctor())["codegraph_index"]
    assert index["status"] == "error"
    assert "symbolic link" in index["message"]


def test_lwc_missing_from_path(box: Box) -> None:
    """Without `lwc` on PATH the fix is the PATH export for this install, or installing it."""
    if Path("/usr/bin/lwc").exists() or Path("/bin/lwc").exists():
        pytest.skip("an lwc is installed system-wide")
    lwc = checks(box.doctor(PATH="/usr/bin:/bin"))["lwc_on_path"]
    assert lwc["status"] == "missing"
    expected = (
        f'export PATH="{PYTHON_BIN}:$PATH"'
        if os.access(PYTHON_BIN / "lwc", os.X_OK)
        else "pip install lwc-trio"
    )
    assert lwc["nextAction"]["command"] == expected


def test_doctor_creates_and_changes_nothing(box: Box) -> None:
    """Byte, mode and mtime snapshot of HOME and the project is identical after doctor runs."""
    store(box.project, graph="pending")
    store(box.home, graph="ready")
    (box.project / ".codegraph").mkdir()
    (box.project / ".codegraph" / "codegraph.db").write_bytes(b"index")
    (box.project / "sub").mkdir()
    before = box.snapshot()
    box.doctor()
    box.doctor("--path", str(box.project), cwd=box.project / "sub")
    box.doctor(cwd=box.home)
    box.doctor(LWC_CODEGRAPH_BINARY=str(runtime(box)), PATH="/usr/bin:/bin")
    assert box.snapshot() == before


def test_doctor_on_an_empty_setup_creates_nothing(box: Box) -> None:
    """With no stores at all, doctor creates no `.lwc`, `.codegraph` or host folder."""
    before = box.snapshot()
    box.doctor()
    assert box.snapshot() == before


def test_human_report_on_a_terminal(
    box: Box, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a terminal the report is readable lines with the next commands; exit 0."""
    for name, value in box.vars.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LWC_CODEGRAPH_BINARY", raising=False)
    monkeypatch.chdir(box.project)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0] == f"lwc doctor: what a host starting `lwc serve --mcp` in {box.project} would see"
    )
    assert f"  ok       workspace      the server would bind {box.project}" in lines
    assert any(line.strip() == f"→ lwc init   (in {box.project})" for line in lines)
    assert lines[-1] == "memory: unavailable · code: unavailable"


def test_doctor_from_home_says_what_a_host_shows(box: Box) -> None:
    """Issue 15 #8: for a default workspace in $HOME doctor describes what a host gets from a
    user-scope server started there (connects, every call answers workspace_too_broad), not
    only the server's error code; an explicit --path there still exits 2."""
    message = checks(box.doctor(cwd=box.home))["workspace"]["message"]
    assert "answers every call with `workspace_too_broad`" in message
    assert "Failed to connect" in message
    assert "Codex" in message
    explicit = checks(box.doctor("--path", str(box.home), cwd=box.project))["workspace"]
    assert "exits 2 with `workspace_too_broad`" in explicit["message"]


def test_doctor_checks_each_registered_command_and_gate(box: Box) -> None:
    """Issue 15 #1/#2: doctor lists every host config that registers lwc, runs its command,
    and shows the host's gates (here Gemini's folder trust)."""
    (box.project / ".gemini").mkdir()
    entry = {"command": str(box.root / "moved" / "lwc"), "args": ["serve", "--mcp"]}
    (box.project / ".gemini" / "settings.json").write_text(
        json.dumps({"mcpServers": {"lwc": entry}})
    )
    report = box.doctor()
    [host] = report["hosts"]
    assert (host["host"], host["scope"], host["state"]) == ("gemini", "project", "broken")
    assert host["command"]["runs"] is False
    assert "does not exist" in host["command"]["problem"]
    assert host["nextAction"] == "lwc agent install gemini --project --force"
    assert [gate["gate"] for gate in host["gates"]] == ["gemini_folder_trust"]
    entry["command"] = str(box.lwc)
    (box.project / ".gemini" / "settings.json").write_text(
        json.dumps({"mcpServers": {"lwc": entry}})
    )
    [host] = box.doctor()["hosts"]
    assert host["command"]["runs"] is True
    assert host["command"]["version"] == "lwc 0.0-test"
