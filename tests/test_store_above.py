"""Issue 15 #5: a server started in a project *subdirectory* points at the project's Wiki.

A user-scope entry has no `--path`, so the host binds the directory the session started in. In
a subdirectory of a project that workspace holds no Wiki, while the project's Wiki is just above
it. The `store_not_found` guidance must say to bind that directory — never `lwc init` here,
which would create a second, empty Wiki. The server still reads nothing above its workspace.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import REPO, lwc_command, sdk_client
from conftest_memory import ask, new_store


def test_engine_names_the_wiki_above_the_workspace(tmp_path: Path) -> None:
    """No store in the workspace, one above: unavailable, nextAction binds the project."""
    home, project = tmp_path / "home", tmp_path / "proj"
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    home.mkdir()
    new_store(project)
    for scope in ("project", "all"):
        memory = ask("anything", sub, home=home, scope=scope)
        assert memory["state"] == "unavailable"
        assert memory["error"]["code"] == "store_not_found"
        assert memory["nextAction"] == {
            "command": f"lwc serve --mcp --path {project.resolve()}",
            "cwd": str(project.resolve()),
        }
        message = memory["error"]["message"]
        assert str(project.resolve() / ".lwc" / "wiki.db") in message
        assert "lwc agent install HOST --project" in message
        assert "lwc init" not in message
        assert "stores" not in memory  # nothing above the workspace was opened


def test_engine_keeps_lwc_init_without_a_wiki_above(tmp_path: Path) -> None:
    """Nothing above either (and `$HOME/.lwc` is the global store, not a project one)."""
    home = tmp_path / "home"
    sub = home / "proj" / "src"
    sub.mkdir(parents=True)
    new_store(home)  # the global store
    memory = ask("anything", sub, home=home, scope="project")
    assert memory["nextAction"] == {"command": "lwc init", "cwd": str(sub.resolve())}


def _project_with_subdir(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """A project with a Wiki (made by the real CLI), its `src/` and a private HOME."""
    home, project = tmp_path / "home", (tmp_path / "proj").resolve()
    sub = project / "src"
    sub.mkdir(parents=True)
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": str(REPO)}
    subprocess.run(lwc_command("init"), cwd=project, env=env, check=True, capture_output=True)
    return env, project, sub


async def test_real_server_started_in_a_subdirectory(tmp_path: Path) -> None:
    """The real `lwc serve --mcp`, started the way a host starts a user-scope entry (cwd =
    a subdirectory, no --path), answers with the project's `--path`."""
    env, project, sub = _project_with_subdir(tmp_path)
    async with sdk_client(sub, env) as client:
        result = await client.call_tool("lwc_explore", {"query": "x", "projectPath": str(sub)})
    memory = result.structured_content["memory"]
    assert memory["error"]["code"] == "store_not_found"
    assert memory["nextAction"] == {
        "command": f"lwc serve --mcp --path {project}",
        "cwd": str(project),
    }
