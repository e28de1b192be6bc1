"""`lwc explore` prints exactly what the tool returns, and refuses bad input like the tool."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import trio
from conftest import lwc_command
from lwc_process import RawServer, call

pytestmark = pytest.mark.slow


def _lwc(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(lwc_command(*args), cwd=cwd, env=env, capture_output=True, timeout=60)


@pytest.fixture
def wiki(workspace: Path, lwc_env: dict[str, str]) -> Path:
    """A workspace with a project Wiki of one page and a subdirectory."""
    assert _lwc(lwc_env, workspace, "init").returncode == 0
    body = workspace / "b.md"
    body.write_text("Supervisors restart crashed workers.\n")
    put = _lwc(lwc_env, workspace, "page", "put", "supervision", "--title", "Supervision",
               "--file", str(body))  # fmt: skip
    assert put.returncode == 0, put.stderr
    (workspace / "sub").mkdir()
    return workspace


async def test_explore_matches_the_tool_byte_for_byte(wiki: Path, lwc_env: dict[str, str]) -> None:
    """The CLI's JSON equals the server's structuredContent, apart from timings."""
    cli = _lwc(lwc_env, wiki, "explore", "restart workers", "--mode", "all")
    assert cli.returncode == 0, cli.stderr
    printed = json.loads(cli.stdout)

    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(wiki)], lwc_env, str(wiki))
        await server.send(call(1, {"query": "restart workers", "projectPath": str(wiki),
                                   "mode": "all"}))  # fmt: skip
        answer = await server.recv()
        await server.close_stdin()
        await server.wait()
    served = answer["result"]["structuredContent"]
    printed.pop("timings")
    served.pop("timings")
    assert printed == served
    assert printed["memory"]["results"][0]["identifier"] == "supervision"


def test_explore_from_a_subdirectory_finds_the_project_wiki(
    wiki: Path, lwc_env: dict[str, str]
) -> None:
    """Run inside the project tree, explore binds the project root and finds its store."""
    cli = _lwc(lwc_env, wiki / "sub", "explore", "supervisors")
    assert cli.returncode == 0, cli.stderr
    result = json.loads(cli.stdout)
    assert result["projectPath"] == str(wiki / "sub")
    assert result["memory"]["state"] == "ready"
    assert result["memory"]["results"][0]["identifier"] == "supervision"


def test_explore_refuses_a_blank_query(wiki: Path, lwc_env: dict[str, str]) -> None:
    """A whitespace query is an error on stderr (exit 1), like the tool's invalid_query."""
    cli = _lwc(lwc_env, wiki, "explore", "   ")
    assert cli.returncode == 1
    assert json.loads(cli.stderr)["error"]["code"] == "invalid_query"


def test_explore_passes_max_tokens_to_the_tool(wiki: Path, lwc_env: dict[str, str]) -> None:
    """`--max-tokens` is the tool's `maxTokens`: the tool checks its bound and names the field."""
    ok = _lwc(lwc_env, wiki, "explore", "restart workers", "--max-tokens", "20000")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["memory"]["state"] == "ready"
    low = _lwc(lwc_env, wiki, "explore", "restart workers", "--max-tokens", "10")
    assert low.returncode == 1
    error = json.loads(low.stderr)["error"]
    assert error["code"] == "invalid_arguments"
    assert "maxTokens" in error["message"]


def test_an_answer_lists_the_links_to_pages_the_wiki_holds(
    wiki: Path, lwc_env: dict[str, str]
) -> None:
    """A Page's `links` in an answer name Pages the agent can open: a `[[page]]` not written
    yet and a `*.md` link to a file the Wiki does not hold are left out of the answer, while
    `lwc page show` lists every link the Page records."""
    body = wiki / "hub.md"
    body.write_text("Workers: see [[supervision]], [[not-written-yet]] and [pool](pool.md).\n")
    put = _lwc(lwc_env, wiki, "page", "put", "hub", "--title", "Hub", "--file", str(body))
    assert put.returncode == 0, put.stderr
    shown = json.loads(_lwc(lwc_env, wiki, "page", "show", "hub").stdout)
    assert shown["links"] == ["not-written-yet", "pool", "supervision"]
    cli = _lwc(lwc_env, wiki, "explore", "workers hub")
    assert cli.returncode == 0, cli.stderr
    pages = {p["slug"]: p for p in json.loads(cli.stdout)["memory"]["pages"]}
    assert pages["hub"]["links"] == ["supervision"]
