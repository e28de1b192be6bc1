"""Code answers carry code (SPEC §5), end to end: the real `lwc serve --mcp` (driven by the `mcp`
SDK's client) and the real CodeGraph 1.6.1 on a project whose one file section is longer than
the 15,000-character cap (tests/codegraph_fixture.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest
from codegraph_fixture import BLOB_QUERY, LEDGER_QUERY, write_project
from conftest import child_env, lwc_command, sdk_client

from benchmarks.scenarios.code_answers import source_lines
from lwc_trio.protocol.code_text import CUT_MARK

BINARY = os.environ.get("LWC_TEST_CODEGRAPH_BINARY", "")

pytestmark = [
    pytest.mark.codegraph,
    pytest.mark.slow,
    pytest.mark.skipif(
        not BINARY,
        reason="set LWC_TEST_CODEGRAPH_BINARY to the CodeGraph 1.6.1 platform binary",
    ),
]

NOTES = "\n\n".join(
    f"## Reconciliation step {i}\n\n"
    + f"How does LedgerReconciler reconcile the ledger? Step {i} folds a value in. " * 3
    for i in range(8)
)
"""A Page that answers the ledger question too, so memory takes its share in mode all."""


@attrs.frozen
class Project:
    workspace: Path
    root: Path
    env: dict[str, str]


def _lwc(project: Path, env: dict[str, str], *argv: str) -> None:
    done = subprocess.run(lwc_command(*argv), cwd=project, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    base = tmp_path_factory.mktemp("answers")
    (base / "home").mkdir()
    workspace = (base / "ws").resolve()
    root = workspace / "ledger"
    write_project(root)
    env = {**child_env(base / "home"), "LWC_CODEGRAPH_BINARY": BINARY}
    _lwc(root, env, "init", "--no-git-exclude")
    (base / "notes.md").write_text(NOTES, encoding="utf-8")
    _lwc(root, env, "page", "put", "ledger-notes", "--title", "Ledger notes",
         "--file", str(base / "notes.md"))  # fmt: skip
    _lwc(root, env, "--scope", "project", "cg", "init")
    return Project(workspace, root, env)


async def _answers(project: Project, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    async with sdk_client(project.workspace, project.env) as client:
        results = [await client.call_tool("lwc_explore", arguments) for arguments in calls]
    return [json.loads(result.content[0].text) for result in results]  # type: ignore[union-attr]


async def test_a_long_first_section_reaches_the_answer_in_modes_code_and_all(
    project: Project,
) -> None:
    """Source lines of the long section reach the agent in modes code and all (default budget)."""
    calls = [
        {"query": LEDGER_QUERY, "projectPath": str(project.root), "mode": mode}
        for mode in ("code", "all")
    ]
    code, both = await _answers(project, calls)
    assert both["memory"]["pages"], "memory takes its share in mode all"
    for answer in (code, both):
        got = answer["codeGraph"]
        assert got["state"] == "ready", got
        assert source_lines(got["text"]) >= 20, got["text"][:3000]
        assert "def step_000(self, value: int) -> int:" in got["text"]
        assert got["files"] == ["pkg/ledger.py"]
        assert got["truncated"] is True
    assert len(code["codeGraph"]["text"]) > len(both["codeGraph"]["text"])


async def test_a_source_line_longer_than_the_cap_is_cut_and_marked(project: Project) -> None:
    """A 15,015-character source line reaches the answer cut at a character and marked."""
    (answer,) = await _answers(
        project, [{"query": BLOB_QUERY, "projectPath": str(project.root), "mode": "code"}]
    )
    got = answer["codeGraph"]
    assert got["state"] == "ready", got
    assert '2\t    return "0000000001' in got["text"]
    assert got["text"].endswith(CUT_MARK)
    assert got["files"] == ["pkg/blob.py"]
