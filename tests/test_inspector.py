"""The official MCP Inspector CLI lists and calls `lwc_explore` over stdio and over HTTP.

`scripts/inspector.sh` installs a pinned `@modelcontextprotocol/inspector` on a private Node 22
into `.cache/inspector/` from the npm registry (once; later runs find it in place). The tests
skip, saying why, when npm is missing or that install fails; anything after it must pass.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import REPO, lwc_command

# One worker installs the Inspector into .cache/inspector and runs every test here (xdist).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("inspector")]

INSPECTOR = REPO / "scripts" / "inspector.sh"
INSTALL_TIMEOUT = 150.0
RUN_TIMEOUT = 30.0
SLUG = "zebracorn-notes"
TITLE = "Zebracorn notes"
BODY = "Trio nurseries supervise tasks; the zebracorn protocol lives here.\n"
LISTENING = b"lwc: listening on "


@pytest.fixture(scope="module")
def inspector() -> None:
    """The pinned Inspector is installed, or every test here is skipped with the reason."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not on PATH: scripts/inspector.sh installs the Inspector with it")
    try:
        done = subprocess.run(
            ["bash", str(INSPECTOR), "install"],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"scripts/inspector.sh install took over {INSTALL_TIMEOUT:.0f} s")
    if done.returncode != 0:
        why = " | ".join(done.stderr.strip().splitlines()[:4])
        pytest.skip(f"scripts/inspector.sh install failed (exit {done.returncode}): {why}")


@pytest.fixture
def wiki(workspace: Path, lwc_env: dict[str, str], tmp_path: Path) -> Path:
    """The workspace, holding a project Wiki with one Page."""
    body = tmp_path / "page.md"
    body.write_text(BODY, encoding="utf-8")
    for args in (("init",), ("page", "put", SLUG, "--title", TITLE, "--file", str(body))):
        subprocess.run(
            lwc_command(*args), cwd=workspace, env=lwc_env, check=True, capture_output=True
        )
    return workspace


async def run_inspector(args: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    """Run `mcp-inspector --cli --format json ARGS`, check it succeeded, return its JSON."""
    argv = ["bash", str(INSPECTOR), "cli", "--format", "json", *args]
    with trio.fail_after(RUN_TIMEOUT):
        done = await trio.run_process(
            argv, env=env, capture_stdout=True, capture_stderr=True, check=False
        )
    stderr = done.stderr.decode(errors="replace")
    assert done.returncode == 0, f"{argv}\nexit {done.returncode}\nstderr: {stderr}"
    value: dict[str, Any] = json.loads(done.stdout)
    return value


def list_args(*target: str) -> list[str]:
    """Inspector arguments for tools/list; --strict exits 6 on a schema portability error."""
    return ["--method", "tools/list", "--strict", *target]


def call_args(workspace: Path, *target: str) -> list[str]:
    """Inspector arguments for one lwc_explore call (the server target must come last)."""
    return [
        "--method",
        "tools/call",
        "--tool-name",
        "lwc_explore",
        "--tool-arg",
        "query=zebracorn",
        f"projectPath={workspace}",
        *target,
    ]


def check_tools(listed: dict[str, Any]) -> None:
    """tools/list named exactly lwc_explore, read-only, with no schema portability finding.

    The Inspector adds `schemaFindings` for schemas hosts may reject: `["T", "null"]` unions
    gave six warnings (four in inputSchema, two in outputSchema) before SPEC §2's plain types.
    """
    assert listed.get("schemaFindings", []) == []
    tools = listed["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["lwc_explore"]
    assert tools[0]["annotations"]["readOnlyHint"] is True
    assert tools[0]["inputSchema"]["required"] == ["query", "projectPath"]


def check_call(called: dict[str, Any], workspace: Path) -> None:
    """The call found the one Page, in structured content and in the text block alike."""
    result = called["result"]
    assert result["isError"] is False
    structured = result["structuredContent"]
    assert [block["type"] for block in result["content"]] == ["text"]
    assert json.loads(result["content"][0]["text"]) == structured
    assert structured["query"] == "zebracorn"
    assert structured["projectPath"] == str(workspace)
    assert structured["mode"] == "memory"
    memory = structured["memory"]
    assert memory["state"] == "ready"
    assert [hit["identifier"] for hit in memory["results"]] == [SLUG]
    [page] = memory["pages"]
    assert (page["slug"], page["title"], page["body"]) == (SLUG, TITLE, BODY)
    assert structured["codeGraph"] == {"state": "not_requested"}


async def test_stdio_lists_and_calls(inspector: None, wiki: Path, lwc_env: dict[str, str]) -> None:
    """The Inspector starts `lwc serve --mcp` over stdio, lists the tool and calls it."""
    server_env = [arg for key, value in lwc_env.items() for arg in ("-e", f"{key}={value}")]
    target = [*server_env, "--cwd", str(wiki), *lwc_command("serve", "--mcp", "--path", str(wiki))]
    check_tools(await run_inspector(list_args(*target), lwc_env))
    check_call(await run_inspector(call_args(wiki, *target), lwc_env), wiki)


async def test_http_lists_and_calls(inspector: None, wiki: Path, lwc_env: dict[str, str]) -> None:
    """The Inspector reaches `lwc serve --mcp --transport http` by URL, lists and calls."""
    argv = lwc_command(
        "serve", "--mcp", "--transport", "http", "--http-listen", "127.0.0.1:0", "--path", str(wiki)
    )
    stderr = bytearray()
    async with trio.open_nursery() as nursery:
        server: trio.Process = await nursery.start(
            partial(
                trio.run_process,
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=lwc_env,
                check=False,
            )
        )
        assert server.stderr is not None
        with trio.fail_after(RUN_TIMEOUT):
            while LISTENING not in stderr or not stderr.endswith(b"\n"):
                chunk = await server.stderr.receive_some()
                assert chunk, f"server exited before listening: {bytes(stderr)!r}"
                stderr += chunk
        [line] = [x for x in bytes(stderr).splitlines() if x.startswith(LISTENING)]
        url = line.removeprefix(LISTENING).decode()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/")

        target = ["--transport", "http", "--server-url", url]
        check_tools(await run_inspector(list_args(*target), lwc_env))
        check_call(await run_inspector(call_args(wiki, *target), lwc_env), wiki)

        server.terminate()
        with trio.fail_after(RUN_TIMEOUT):
            assert await server.wait() == 0
        async for chunk in server.stderr:
            stderr += chunk
    assert bytes(stderr).decode().splitlines() == [f"lwc: listening on {url}"]
