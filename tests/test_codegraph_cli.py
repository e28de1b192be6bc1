"""`lwc cg install|init|status` act only on explicit request and change nothing else."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from lwc_trio.cli.main import main
from lwc_trio.codegraph.runtime import binary_in, platform_package, runtime_dir

FAKE = Path(__file__).parent / "fakes" / "fake_codegraph.py"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, Any]:
    """Run `lwc ARGV` in-process: exit code, stdout JSON (or None), stderr JSON (or None)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    as_json = [json.loads(text) if text.strip().startswith("{") else None for text in (out, err)]
    return code, as_json[0], as_json[1]


def snapshot(base: Path) -> list[str]:
    return sorted(str(Path(d, n)) for d, dirs, files in os.walk(base) for n in [*dirs, *files])


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory (the cwd) with a Wiki, an empty HOME, and no runtime override."""
    home = tmp_path / "home"
    home.mkdir()
    proj = tmp_path / "proj"
    (proj / ".lwc").mkdir(parents=True)
    (proj / ".lwc" / "wiki.db").write_bytes(b"")
    (tmp_path / "state").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("LWC_CODEGRAPH_BINARY", raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_do_not_leak")
    monkeypatch.chdir(proj)
    return proj


def use_fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str = "normal") -> None:
    wrapper = tmp_path / "codegraph"
    command = [sys.executable, str(FAKE), str(tmp_path / "state"), mode]
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("LWC_CODEGRAPH_BINARY", str(wrapper))


def events(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "state" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_status_reports_missing_runtime_and_index_and_changes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cg status` prints both states and the next step as JSON, creating no file."""
    before = snapshot(project.parent)
    code, out, _ = run(capsys, "cg", "status")
    assert code == 0
    assert out["runtime"]["state"] == "missing"
    assert out["index"] == {"state": "missing", "root": None, "path": None}
    assert out["nextAction"] == "lwc cg install"
    assert snapshot(project.parent) == before


def test_init_runs_codegraph_init_yes_dir_without_watch_switch(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`cg init` runs `init --yes DIR`, stdin /dev/null, telemetry off, no NO_WATCH, no tokens."""
    use_fake(tmp_path, monkeypatch)
    code, out, _ = run(capsys, "--scope", "project", "cg", "init")
    assert code == 0
    db = project / ".codegraph" / "codegraph.db"
    assert out == {
        "created": True,
        "index": {"state": "ready", "root": str(project), "path": str(db)},
    }
    start, init = events(tmp_path)
    assert start["argv"] == ["init", "--yes", str(project)]
    assert start["cwd"] == str(project)
    assert init["stdinIsDevNull"] is True
    env = start["env"]
    assert "CODEGRAPH_NO_WATCH" not in env
    assert env["CODEGRAPH_TELEMETRY"] == "0"
    assert env["DO_NOT_TRACK"] == "1"
    assert "GITHUB_TOKEN" not in env
    code, out, _ = run(capsys, "cg", "init", str(project))
    assert (code, out["created"]) == (0, False)
    code, status, _ = run(capsys, "cg", "status")
    assert status["index"]["state"] == "ready"
    assert status["nextAction"] is None


def test_init_failure_reports_status_and_last_line(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A failing runtime exits 1 with codegraph_init_failed quoting its last output line."""
    use_fake(tmp_path, monkeypatch, "init_fail")
    code, out, err = run(capsys, "cg", "init")
    assert (code, out) == (1, None)
    assert err["error"] == {
        "code": "codegraph_init_failed",
        "message": "codegraph init exited with status 5: Failed: cannot parse the project",
    }


@pytest.mark.parametrize("scope", ["global", "all"])
def test_init_needs_project_scope(
    project: Path, scope: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cg init` builds a project index only: another scope is a usage error (exit 2)."""
    code, _, err = run(capsys, "--scope", scope, "cg", "init")
    assert code == 2
    assert err["error"]["code"] == "invalid_scope"


def test_init_needs_a_project_wiki_and_a_runtime(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without a Wiki: store_not_found; with one but no runtime: codegraph_runtime_missing."""
    bare = tmp_path / "bare"
    bare.mkdir()
    use_fake(tmp_path, monkeypatch)
    code, _, err = run(capsys, "cg", "init", str(bare))
    assert (code, err["error"]["code"]) == (1, "store_not_found")
    monkeypatch.delenv("LWC_CODEGRAPH_BINARY")
    code, _, err = run(capsys, "cg", "init")
    assert (code, err["error"]["code"]) == (1, "codegraph_runtime_missing")
    assert "lwc cg install" in err["error"]["message"]
    assert events(tmp_path) == []


def test_install_without_terminal_needs_yes(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With stdin not a terminal and no --yes, nothing is downloaded and the exit code is 2."""
    code, _, err = run(capsys, "cg", "install")
    assert code == 2
    assert err["error"]["code"] == "consent_required"
    assert "--yes" in err["error"]["message"]
    assert not (Path(os.environ["HOME"]) / ".lwc").exists()


def test_install_yes_uses_npm_and_is_idempotent(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`cg install --yes` runs npm once for 1.6.1; the second run finds it installed."""
    bin_dir = tmp_path / "npm-bin"
    bin_dir.mkdir()
    log = tmp_path / "npm.log"
    package = platform_package()
    assert package is not None
    layout = {
        "node_modules/@colbymchenry/codegraph/package.json": '{"version":"1.6.1"}',
        f"node_modules/{package}/package.json": '{"version":"1.6.1"}',
        f"node_modules/{package}/bin/codegraph": "#!/bin/sh\n",
    }
    npm = bin_dir / "npm"
    npm.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {shlex.quote(str(log))}\n'
        'dir="$3"\n'
        + "".join(
            f'mkdir -p "$dir/$(dirname {shlex.quote(p)})" && '
            f'printf %s {shlex.quote(c)} > "$dir/{p}"\n'
            for p, c in layout.items()
        )
        + f'chmod +x "$dir/node_modules/{package}/bin/codegraph"\n'
    )
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    home = Path(os.environ["HOME"])
    code, out, _ = run(capsys, "cg", "install", "--yes")
    assert code == 0
    assert out["installed"] is True
    assert out["runtime"]["binary"] == str(binary_in(runtime_dir(home)))
    (call,) = log.read_text().splitlines()
    assert call.split()[-1] == "@colbymchenry/codegraph@1.6.1"
    code, out, _ = run(capsys, "cg", "install")  # installed: no consent needed, npm not run
    assert (code, out["installed"]) == (0, False)
    assert len(log.read_text().splitlines()) == 1
    code, status, _ = run(capsys, "cg", "status")
    assert status["runtime"]["state"] == "installed"
    assert status["runtime"]["version"] == "1.6.1"


def test_install_without_npm_says_so(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No npm on PATH: exit 1, npm_not_found, with a hint to install Node.js."""
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    code, _, err = run(capsys, "cg", "install", "--yes")
    assert (code, err["error"]["code"]) == (1, "npm_not_found")
    assert "Node.js" in err["error"]["message"]
