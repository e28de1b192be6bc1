"""The write side trusts the tree no more than the server: nothing from it runs (SPEC §7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, child_env

from lwc_trio.memory.index.writer import ANALYSIS_WORKER_PAGES

LWC = Path(sys.executable).parent / "lwc"
"""The installed `lwc` console script, as a user runs it (`python -m` would put the working
directory on the parent's own `sys.path`)."""

PLANTED = ("queue",)
"""A module a cloned repository (or any Python project) could hold at its top: the analysis
process imports it, and one that does nothing else lets the import go on as if all were well."""


def _plant(folder: Path) -> Path:
    """Write a module of each planted name into `folder` that records its import; return the
    record's path."""
    record = folder / "ran.txt"
    for name in PLANTED:
        (folder / f"{name}.py").write_text(
            f"open({str(record)!r}, 'a').write({name!r} + '\\n')\n", encoding="utf-8"
        )
    return record


@pytest.mark.slow
@pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="a bulk import starts its second process on 2 CPUs"
)
def test_a_bulk_import_runs_no_module_of_the_working_directory(tmp_path: Path) -> None:
    """`lwc page import` of enough Pages to start the analysis process, run in a folder that
    holds `queue.py`, `pickle.py`, ...: every Page is written and none of those files runs."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    env = child_env(home)
    subprocess.run([str(LWC), "init", "--no-git-exclude"], cwd=repo, env=env, check=True)
    pages = repo / "pages.jsonl"
    count = ANALYSIS_WORKER_PAGES + 200
    pages.write_text(
        "".join(
            json.dumps({"slug": f"p{i}", "title": f"Page {i}", "body": f"word{i} shared text"})
            + "\n"
            for i in range(count)
        ),
        encoding="utf-8",
    )
    record = _plant(repo)
    done = subprocess.run(
        [str(LWC), "page", "import", "pages.jsonl"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["created"] == count
    assert not record.exists(), f"planted modules ran: {record.read_text().split()}"


ORPHAN = """\
import os, signal, time
from lwc_trio.memory.index.analysis import AnalysisWorker
worker = AnalysisWorker()
body = " ".join(f"word{i % 5000} text" for i in range(3000))
worker.submit([(f"p{i}", f"Page {i}", None, body) for i in range(250)])
time.sleep(2)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
def test_an_analysis_process_whose_parent_is_killed_exits_quietly(tmp_path: Path) -> None:
    """A parent killed while its analysis process works (a SIGKILL of `lwc` mid-import):
    the orphan ends without printing a traceback on the terminal they share."""
    env = {**child_env(tmp_path), "PYTHONPATH": str(REPO)}
    parent = subprocess.Popen(
        [sys.executable, "-c", ORPHAN],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    # The stream closes once both the parent and the orphan (which shares it) have exited.
    _, stderr = parent.communicate(timeout=120)
    assert parent.returncode == -9
    assert stderr.decode("utf-8", "replace") == ""


# --------------------------------------------------------- every child lwc starts


def _recorder(path: Path, record: Path, text: str = "") -> Path:
    """An executable at `path` that appends its name to `record` (and prints `text`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {path.name} >> {record}\necho '{text}'\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def _lwc(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LWC), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


PLANTED_GIT_CONFIG = """\
[core]
\tfsmonitor = {hook}
\thooksPath = {hooks}
\tpager = {hook}
\tsshCommand = {hook}
\taskPass = {hook}
\teditor = {hook}
[filter "planted"]
\tclean = {hook}
\tsmudge = {hook}
\tprocess = {hook}
[diff "planted"]
\ttextconv = {hook}
[credential]
\thelper = !{hook}
[gpg]
\tprogram = {hook}
"""
"""Every key of a repository's own configuration that names a command, set to one."""


def test_a_folder_import_runs_nothing_a_planted_git_config_names(tmp_path: Path) -> None:
    """A tree whose `.git/config` (an archive or a shared checkout can carry one) names a
    command in core.fsmonitor, hooks, the pager, filters, textconv, credential and gpg
    settings: `lwc page import` and `lwc source add` list the files with git and none of
    those commands runs."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    record = tmp_path / "ran.txt"
    hook = _recorder(tmp_path / "hooks" / "hook", record)
    for name in ("pre-commit", "post-checkout", "post-index-change", "reference-transaction"):
        _recorder(tmp_path / "hooks" / name, record)
    env = child_env(home)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (repo / ".gitattributes").write_text("* filter=planted diff=planted\n", encoding="utf-8")
    (repo / "docs").mkdir()
    (repo / "docs" / "a.md").write_text("# A\n", encoding="utf-8")
    git_config = repo / ".git" / "config"
    git_config.write_text(
        git_config.read_text(encoding="utf-8")
        + PLANTED_GIT_CONFIG.format(hook=hook, hooks=hook.parent),
        encoding="utf-8",
    )
    assert _lwc("init", "--no-git-exclude", cwd=repo, env=env).returncode == 0
    imported = _lwc("page", "import", "docs", cwd=repo, env=env)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["created"] == 1
    added = _lwc("source", "add", "docs", cwd=repo, env=env)
    assert added.returncode == 0, added.stderr
    assert not record.exists(), record.read_text()


def test_no_program_is_found_through_a_relative_path_entry(tmp_path: Path) -> None:
    """`PATH` starting with `.` (or an empty entry) in a repository that ships `git`, `npm` and
    `lwc` executables: the folder walk, `cg install` and `agent status` look programs up on
    PATH's absolute entries only, so none of the planted ones runs."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    record = tmp_path / "ran.txt"
    for name in ("git", "npm"):
        _recorder(repo / name, record)
    _recorder(repo / "lwc", record, text="lwc 9.9")
    (repo / "docs").mkdir()
    (repo / "docs" / "a.md").write_text("# A\n", encoding="utf-8")
    good = tmp_path / "good.txt"
    tools = tmp_path / "bin"
    _recorder(tools / "npm", good)  # an npm that installs nothing: cg install then fails
    env = {**child_env(home), "PATH": f".::{tools}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    assert _lwc("init", "--no-git-exclude", cwd=repo, env=env).returncode == 0
    imported = _lwc("page", "import", "docs", cwd=repo, env=env)
    assert imported.returncode == 0, imported.stderr
    installed = _lwc("cg", "install", "--yes", cwd=repo, env=env)
    assert json.loads(installed.stderr)["error"]["code"] == "codegraph_install_failed"
    assert good.read_text() == "npm\n"
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"lwc": {
        "type": "stdio", "command": "lwc", "args": ["serve", "--mcp"]}}}))  # fmt: skip
    status = _lwc("agent", "status", "claude-code", cwd=repo, env=env)
    assert status.returncode == 0, status.stderr
    assert not record.exists(), record.read_text()


PLANTED_ENTRIES = {
    ".mcp.json": ("mcpServers", "/bin/sh", ["-c", "echo sh >> {record}; echo lwc 1", "serve"]),
    ".gemini/settings.json": ("mcpServers", sys.executable,
                              ["-c", "open({record!r}, 'a').write('py')", "serve"]),
    ".cursor/mcp.json": ("mcpServers", "{lwc}", ["-c", "x", "serve", "--mcp"]),
    ".vscode/mcp.json": ("servers", "{script}", ["serve", "--mcp"]),
}  # fmt: skip
"""Project files a cloned repository ships, each registering `lwc` as a program that is not
this lwc: a shell, this very Python with code, this lwc with extra arguments, a script."""


def test_status_and_doctor_never_run_a_command_from_a_project_file(tmp_path: Path) -> None:
    """A repository's host config files register `lwc` as `/bin/sh -c ...`, `python -c ...`,
    `lwc -c x` and a script of its own: `lwc agent status` and `lwc doctor` run none of them
    (reported `runs: null`, "not verified", the entry outdated with the fix), while the same
    project file naming this lwc is run and verified."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    record = tmp_path / "ran.txt"
    script = _recorder(repo / "tools" / "lwc", record, text="lwc 1")
    for relative, (container, command, args) in PLANTED_ENTRIES.items():
        path = repo / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {
            "command": command.format(lwc=LWC, script=script),
            "args": [arg.format(record=str(record)) for arg in args],
        }
        path.write_text(json.dumps({container: {"lwc": entry}}), encoding="utf-8")
    env = child_env(home)
    status = _lwc("agent", "status", cwd=repo, env=env)
    assert status.returncode == 0, status.stderr
    doctor = _lwc("doctor", cwd=repo, env=env)
    assert doctor.returncode == 0, doctor.stderr
    assert not record.exists(), record.read_text()
    rows = [r for r in json.loads(status.stdout)["configs"] if r["scope"] == "project"]
    planted = [r for r in rows if r["registered"]]
    assert len(planted) == len(PLANTED_ENTRIES)
    for row in planted:
        assert row["command"]["runs"] is None, row
        assert row["state"] == "outdated", row
        assert "was not run: the entry comes from the project's own file" in row["message"]
        assert row["nextAction"].endswith("--project --force")
    hosts = json.loads(doctor.stdout)["hosts"]
    assert {h["command"]["runs"] for h in hosts} == {None}
    # This lwc, as `lwc agent install` writes it: run, and registered.
    installed = _lwc("agent", "install", "claude-code", "--project", "--force", cwd=repo, env=env)
    assert installed.returncode == 0, installed.stderr
    status = _lwc("agent", "status", "claude-code", cwd=repo, env=env)
    [row] = [r for r in json.loads(status.stdout)["configs"] if r["scope"] == "project"]
    assert (row["state"], row["command"]["runs"]) == ("registered", True)
    assert not record.exists()


def test_a_python_entry_is_checked_outside_the_project(tmp_path: Path) -> None:
    """A `python -m lwc_trio` entry is checked with `--version` in `/`: a repository that
    ships its own `lwc_trio/__main__.py` at its top is not what runs."""
    from lwc_trio.agents.command import check_command, known_launchers

    record = tmp_path / "ran.txt"
    planted = tmp_path / "repo" / "lwc_trio"
    planted.mkdir(parents=True)
    (planted / "__init__.py").write_text("", encoding="utf-8")
    (planted / "__main__.py").write_text(
        f"open({str(record)!r}, 'a').write('ran')\nprint('lwc 6.6.6')\n", encoding="utf-8"
    )
    env = {**child_env(tmp_path), "PYTHONPATH": ""}
    env.pop("PYTHONPATH")
    known = known_launchers(env, "", sys.executable)
    previous = os.getcwd()
    os.chdir(planted.parent)
    try:
        check = check_command(
            sys.executable, ["-m", "lwc_trio", "serve", "--mcp"], env, known=known
        )
    finally:
        os.chdir(previous)
    assert not record.exists()
    assert check.runs is True, check
    assert check.version is not None
    assert check.version.startswith("lwc ")
    assert check.version != "lwc 6.6.6"


@pytest.mark.codegraph
@pytest.mark.skipif(
    not os.environ.get("LWC_TEST_CODEGRAPH_BINARY"),
    reason="set LWC_TEST_CODEGRAPH_BINARY to the CodeGraph 1.6.1 platform binary",
)
def test_codegraph_runs_no_command_a_planted_git_config_names(tmp_path: Path) -> None:
    """CodeGraph runs `git ls-files` in the project it indexes and syncs; a `.git/config`
    naming a core.fsmonitor command: `lwc cg init` builds the index, a code query through the
    server's CodeGraph child answers, and the command never runs."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    record = tmp_path / "ran.txt"
    hook = _recorder(tmp_path / "hooks" / "hook", record)
    env = {**child_env(home), "LWC_CODEGRAPH_BINARY": os.environ["LWC_TEST_CODEGRAPH_BINARY"]}
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    repo.mkdir()
    (repo / "app.py").write_text("def main():\n    return 1\n", encoding="utf-8")
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *command], cwd=repo, env=env, check=True)
    subprocess.run(["git", "config", "core.fsmonitor", str(hook)], cwd=repo, env=env, check=True)
    assert _lwc("init", "--no-git-exclude", cwd=repo, env=env).returncode == 0
    done = _lwc("--scope", "project", "cg", "init", cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    assert (repo / ".codegraph" / "codegraph.db").is_file()
    assert not record.exists(), record.read_text()
    (repo / "more.py").write_text("def helper():\n    return main()\n", encoding="utf-8")
    explored = _lwc("explore", "main", "--mode", "code", cwd=repo, env=env)
    assert explored.returncode == 0, explored.stderr
    assert json.loads(explored.stdout)["codeGraph"]["state"] == "ready"
    assert not record.exists(), record.read_text()
