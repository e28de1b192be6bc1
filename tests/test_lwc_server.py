"""The server recognises an LWC 0.16 store (memory `unavailable`, `unsupported_store_version`,
nextAction `lwc import --from-lwc PATH`) and a symlinked `.lwc` or `wiki.db` (`unavailable`,
`store_path_invalid`, nextAction `lwc doctor`), and writes nothing beside either (SPEC §3, §4)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import lwc_command, sdk_client

from benchmarks.lwc_store import LwcPage, make_wal_only_store

pytestmark = pytest.mark.slow


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (a `-shm` appearing would show here)."""
    out: dict[str, bytes] = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = Path(directory, name)
            out[str(path.relative_to(root))] = b"->" if path.is_symlink() else path.read_bytes()
    return out


async def memory_of(workspace: Path, env: dict[str, str], scope: str = "project") -> Any:
    """The memory plane of one `lwc_explore` call through the real server and SDK client."""
    async with sdk_client(workspace, env, "--path", str(workspace)) as client:
        result = await client.call_tool(
            "lwc_explore", {"query": "alpha", "projectPath": str(workspace), "scope": scope}
        )
    return json.loads(result.content[0].text)["memory"]  # type: ignore[union-attr]


async def test_project_lwc_store_is_unavailable_with_the_import_command(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """A project `.lwc/wiki.db` written by LWC: unsupported_store_version, import nextAction."""
    db = make_wal_only_store(workspace / ".lwc" / "wiki.db", [LwcPage("alpha", "Alpha")])
    before = tree(workspace)
    memory = await memory_of(workspace, lwc_env)
    assert memory["state"] == "unavailable"
    assert memory["error"]["code"] == "unsupported_store_version"
    assert memory["nextAction"] == {
        "command": f"lwc import --from-lwc {db}",
        "cwd": str(workspace),
    }
    assert tree(workspace) == before


async def test_global_lwc_store_is_unavailable_with_the_import_command(
    workspace: Path, home: Path, lwc_env: dict[str, str]
) -> None:
    """The same for `$HOME/.lwc/wiki.db` written by LWC, read with scope global."""
    db = make_wal_only_store(home / ".lwc" / "wiki.db", [LwcPage("alpha", "Alpha")])
    before = tree(home)
    memory = await memory_of(workspace, lwc_env, scope="global")
    assert memory["state"] == "unavailable"
    assert memory["error"]["code"] == "unsupported_store_version"
    assert f"import --from-lwc {db}" in memory["nextAction"]["command"]
    assert tree(home) == before


@pytest.mark.parametrize("what", [".lwc", "wiki.db"])
async def test_symlinked_store_is_unavailable_and_names_doctor(
    workspace: Path, tmp_path: Path, lwc_env: dict[str, str], what: str
) -> None:
    """A symlinked `.lwc` or `wiki.db`: unavailable, store_path_invalid, nextAction `lwc doctor`."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    await trio.run_process(lwc_command("init"), cwd=elsewhere, env=lwc_env, capture_stdout=True)
    if what == ".lwc":
        (workspace / ".lwc").symlink_to(elsewhere / ".lwc")
    else:
        (workspace / ".lwc").mkdir()
        (workspace / ".lwc" / "wiki.db").symlink_to(elsewhere / ".lwc" / "wiki.db")
    memory = await memory_of(workspace, lwc_env)
    assert memory["state"] == "unavailable"
    assert memory["error"]["code"] == "store_path_invalid"
    assert memory["nextAction"] == {"command": "lwc doctor", "cwd": str(workspace)}
