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
