"""LWC 0.16's own MCP integration tests (`tests/mcp_cli.rs` at v0.16.2), ported to drive the real
`lwc serve --mcp` through the mcp SDK client. Each test is named after the LWC test it mirrors and
asserts what that test asserts, except where SPEC deliberately differs (docs/lwc-compat.md lists
every such difference: instructions text, the frame-limit error, CodeGraph layout and codes)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import lwc_command, sdk_client

pytestmark = pytest.mark.slow


def lwc(cwd: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    """Run the CLI like LWC's `run_lwc` and return its JSON output."""
    done = subprocess.run(lwc_command(*args), cwd=cwd, env=env, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def put(cwd: Path, env: dict[str, str], slug: str, body: str, *scope: str) -> None:
    """`lwc [--scope S] page put SLUG --title SLUG --file F --provenance agent-observed`."""
    file = cwd / f"{slug}-{len(scope)}.md"
    file.write_text(body, encoding="utf-8")
    lwc(cwd, env, *scope, "page", "put", slug, "--title", slug, "--file", str(file),
        "--provenance", "agent-observed")  # fmt: skip


async def explore(
    cwd: Path, env: dict[str, str], arguments: dict[str, Any], *extra: str
) -> tuple[bool, dict[str, Any]]:
    """One `lwc_explore` call: (isError, the object in the text block == structuredContent)."""
    async with sdk_client(cwd, env, *extra) as client:
        result = await client.call_tool("lwc_explore", arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    value: dict[str, Any] = json.loads(text)
    if result.structured_content is not None:
        assert value == result.structured_content
    return bool(result.is_error), value


async def refusal(cwd: Path, env: dict[str, str], arguments: dict[str, Any], *extra: str) -> str:
    """The `error.code` of one `lwc_explore` call that must be a tool error (isError true)."""
    is_error, value = await explore(cwd, env, arguments, *extra)
    assert is_error, value
    return str(value["error"]["code"])


def tree(root: Path) -> dict[str, bytes]:
    """Durable files under `root` (a `-shm` would be transient; none may appear anyway)."""
    out: dict[str, bytes] = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = Path(directory, name)
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


@pytest.fixture
def env(lwc_env: dict[str, str]) -> dict[str, str]:
    """The child environment (private HOME)."""
    return lwc_env


@pytest.fixture
def project(workspace: Path) -> Path:
    """An empty project directory, canonical (conftest's workspace, by LWC's name for it)."""
    return workspace


async def test_mcp_server_negotiates_and_lists_one_read_only_tool(
    project: Path, env: dict[str, str]
) -> None:
    """Over raw lines as LWC's test sends them: 2024-11-05 is negotiated, the notification gets
    no answer, one closed read-only tool is listed, and ping answers {}."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {},
            "clientInfo": {"name": "lwc-test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]  # fmt: skip
    done = await trio.run_process(
        lwc_command("serve", "--mcp"), cwd=project, env=env, check=False,
        stdin="".join(json.dumps(m) + "\n" for m in messages).encode(),
        capture_stdout=True, capture_stderr=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, listed, pong = [json.loads(line) for line in done.stdout.splitlines()]
    assert first["id"] == 1
    assert first["result"]["protocolVersion"] == "2024-11-05"
    assert first["result"]["serverInfo"]["name"] == "lwc"
    assert isinstance(first["result"]["capabilities"]["tools"], dict)
    [tool] = listed["result"]["tools"]
    assert tool["name"] == "lwc_explore"
    assert tool["inputSchema"]["additionalProperties"] is False
    assert tool["inputSchema"]["required"] == ["query", "projectPath"]
    assert tool["annotations"] == {
        "title": tool["annotations"].get("title"),
        "readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
        "openWorldHint": False,
    }  # fmt: skip
    assert pong == {"jsonrpc": "2.0", "id": 3, "result": {}}


async def test_mcp_rejects_relative_project_path_without_creating_state(
    project: Path, env: dict[str, str]
) -> None:
    """A relative projectPath is invalid_project_path, and nothing is created for it."""
    assert (
        await refusal(project, env, {"query": "release policy", "projectPath": "relative/project"})
        == "invalid_project_path"
    )
    assert not (project / "relative").exists()
    assert os.listdir(project) == []


@pytest.mark.parametrize(
    "bad",
    [{"mode": "guess"}, {"scope": "nearby"}, {"maxDocuments": 0}, {"maxFiles": 21}],
    ids=["mode", "scope", "maxDocuments", "maxFiles"],
)
async def test_mcp_enforces_declared_mode_scope_and_count_bounds(
    project: Path, env: dict[str, str], bad: dict[str, Any]
) -> None:
    """Each out-of-bounds argument is an invalid_arguments tool error."""
    assert (
        await refusal(project, env, {"query": "x", "projectPath": str(project), **bad})
        == "invalid_arguments"
    )


async def test_mcp_rejects_oversized_frames_and_sensitive_roots_then_continues(
    project: Path, env: dict[str, str]
) -> None:
    """A frame over 64 KiB gets -32600 and the next frame is still answered; `/` as
    projectPath is refused as invalid_project_path."""
    oversized = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x" * 65_536})
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    done = await trio.run_process(
        lwc_command("serve", "--mcp"), cwd=project, env=env, check=False,
        stdin=f"{oversized}\n{ping}\n".encode(), capture_stdout=True, capture_stderr=True,
    )  # fmt: skip
    frames = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(frames) == 2
    assert frames[0]["error"]["code"] == -32600
    assert frames[1]["result"] == {}
    assert await refusal(project, env, {"query": "x", "projectPath": "/"}) == "invalid_project_path"


async def test_mcp_rejects_a_symlinked_project_boundary(
    tmp_path: Path, project: Path, env: dict[str, str]
) -> None:
    """A projectPath that is a symlink to the project is refused as invalid_project_path."""
    alias = tmp_path / "alias"
    alias.symlink_to(project)
    assert (
        await refusal(project, env, {"query": "x", "projectPath": str(alias)})
        == "invalid_project_path"
    )


async def test_mcp_explicit_project_path_ignores_conflicting_ambient_root(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """With LWC_PROJECT_ROOT naming another Wiki, the explicit projectPath's store answers."""
    selected, ambient = tmp_path / "selected", tmp_path / "ambient"
    for folder, slug in ((selected, "selected-page"), (ambient, "ambient-page")):
        folder.mkdir()
        lwc(folder, env, "init")
        put(folder, env, slug, "unique boundary token")
    _, value = await explore(
        selected,
        {**env, "LWC_PROJECT_ROOT": str(ambient)},
        {"query": "unique boundary token", "projectPath": str(selected), "scope": "project"},
    )
    assert value["memory"]["pages"][0]["slug"] == "selected-page"
    assert all(hit["identifier"] != "ambient-page" for hit in value["memory"]["results"])


async def test_mcp_rejects_project_paths_outside_the_host_workspace(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A sibling of the workspace is project_path_outside_workspace."""
    workspace, sibling = tmp_path / "workspace", tmp_path / "sibling"
    workspace.mkdir()
    sibling.mkdir()
    assert (
        await refusal(workspace, env, {"query": "private sibling", "projectPath": str(sibling)})
        == "project_path_outside_workspace"
    )


async def test_mcp_explicit_host_workspace_accepts_that_project_from_another_cwd(
    tmp_path: Path, project: Path, env: dict[str, str]
) -> None:
    """Started elsewhere with --path PROJECT, a call for PROJECT is not outside the workspace."""
    launcher = tmp_path / "launcher"
    launcher.mkdir()
    _, value = await explore(
        launcher,
        env,
        {"query": "anything", "projectPath": str(project), "scope": "project"},
        "--path",
        str(project),
    )
    assert value.get("error", {}).get("code") != "project_path_outside_workspace"
    assert value["memory"]["error"]["code"] == "store_not_found"


async def test_mcp_missing_memory_is_explicit_and_side_effect_free(
    project: Path, env: dict[str, str]
) -> None:
    """No Wiki: memory unavailable, store_not_found, and no `.lwc` appears."""
    is_error, value = await explore(
        project,
        env,
        {"query": "anything", "projectPath": str(project), "mode": "memory", "scope": "project"},
    )
    assert is_error
    assert value["memory"]["state"] == "unavailable"
    assert value["memory"]["error"]["code"] == "store_not_found"
    assert not (project / ".lwc").exists()


async def test_mcp_all_scope_qualifies_duplicate_pages_and_keeps_source_bodies_implicit(
    project: Path, env: dict[str, str]
) -> None:
    """scope all returns the same slug from both stores, scoped; a Source's tail never leaks."""
    lwc(project, env, "init")
    lwc(project, env, "--scope", "global", "init")
    put(project, env, "shared-page", "sharedscope project body")
    put(project, env, "shared-page", "sharedscope global body", "--scope", "global")
    source = project / "source.txt"
    source.write_text(
        f"sourceonlyneedle {'private ' * 4_000} NEVER_RETURN_FULL_SOURCE_TAIL", encoding="utf-8"
    )
    lwc(project, env, "source", "add", str(source))
    async with sdk_client(project, env) as client:
        shared = await client.call_tool(
            "lwc_explore",
            {"query": "sharedscope", "projectPath": str(project), "scope": "all",
             "maxDocuments": 20},
        )  # fmt: skip
        only = await client.call_tool(
            "lwc_explore",
            {"query": "sourceonlyneedle", "projectPath": str(project), "scope": "project"},
        )
    pages = json.loads(shared.content[0].text)["memory"]["pages"]  # type: ignore[union-attr]
    assert {page["scope"] for page in pages} == {"global", "project"}
    text = only.content[0].text  # type: ignore[union-attr]
    assert json.loads(text)["memory"]["pages"] == []
    assert "NEVER_RETURN_FULL_SOURCE_TAIL" not in text


async def test_mcp_code_mode_reports_missing_index_without_initializing_or_downloading(
    project: Path, env: dict[str, str]
) -> None:
    """Code mode with nothing set up is unavailable and creates nothing. (LWC says
    codegraph_index_missing; lwc checks the runtime first: codegraph_runtime_missing.)"""
    _, value = await explore(project, env, {"query": "x", "projectPath": str(project),
                                            "mode": "code"})  # fmt: skip
    assert value["codeGraph"]["state"] == "unavailable"
    assert value["codeGraph"]["error"]["code"] in (
        "codegraph_runtime_missing",
        "codegraph_index_missing",
    )
    assert os.listdir(project) == []


async def test_mcp_memory_mode_returns_bounded_page_content_without_mutation(
    project: Path, env: dict[str, str]
) -> None:
    """A ready Page comes back whole, graph disabled without neighbourhood, no file changed."""
    lwc(project, env, "init")
    body = "Release policy requires a clean affected test run."
    file = project / "release-policy.md"
    file.write_text(body, encoding="utf-8")
    lwc(project, env, "page", "put", "release-policy", "--title", "Release policy", "--file",
        str(file), "--provenance", "agent-observed")  # fmt: skip
    before = tree(project / ".lwc")
    is_error, value = await explore(
        project,
        env,
        {"query": "release policy", "projectPath": str(project), "mode": "memory",
         "scope": "project", "maxDocuments": 8},
    )  # fmt: skip
    assert not is_error
    assert (value["mode"], value["scope"]) == ("memory", "project")
    memory = value["memory"]
    assert memory["state"] == "ready"
    assert memory["pages"][0]["slug"] == "release-policy"
    assert memory["pages"][0]["body"] == body
    assert memory["graph"][0]["status"]["status"] == "disabled"
    assert "neighborhood" not in memory["graph"][0]
    assert value["codeGraph"]["state"] == "not_requested"
    assert tree(project / ".lwc") == before
    assert not (project / ".lwc" / "codegraph").exists()


async def test_mcp_memory_mode_caps_long_unicode_pages_and_total_output(
    project: Path, env: dict[str, str]
) -> None:
    """Five ~20,000-character CJK Pages: each body ≤ 15,000, all ≤ 60,000, one truncated."""
    lwc(project, env, "init")
    for index in range(5):
        put(project, env, f"capacity-{index}", f"第{index}篇 容量 capacity {'内存边界 ' * 4_000}")
    async with sdk_client(project, env) as client:
        result = await client.call_tool(
            "lwc_explore",
            {"query": "capacity", "projectPath": str(project), "mode": "memory",
             "scope": "project", "maxDocuments": 20},
        )  # fmt: skip
    text = result.content[0].text  # type: ignore[union-attr]
    assert len(text) <= 80_000
    pages = json.loads(text)["memory"]["pages"]
    assert pages
    assert all(len(page["body"]) <= 15_000 for page in pages)
    assert sum(len(page["body"]) for page in pages) <= 60_000
    assert any(page["truncated"] for page in pages)


async def test_mcp_memory_mode_expands_only_one_ready_physical_graph_seed(
    project: Path, env: dict[str, str]
) -> None:
    """`config set --graph grafeo`, `work watch` its `work.id`, then one seed with ≤ 12 nodes at
    depth ≤ 1, no file changed (t15, as LWC runs it: lwc builds the graph within `config set`
    and `work watch` reports that work done)."""
    lwc(project, env, "init")
    put(project, env, "graph-a", "graphseed links to [[graph-b]].")
    put(project, env, "graph-b", "graphseed related page.")
    enabled = lwc(project, env, "config", "set", "--graph", "grafeo")
    work_id = enabled["work"]["id"]
    watched = lwc(project, env, "work", "watch", work_id)
    assert watched["work"]["state"] == "succeeded"
    assert watched["work"]["completed"] == watched["work"]["total"] == 2
    before = tree(project / ".lwc")
    _, value = await explore(
        project, env, {"query": "graphseed", "projectPath": str(project), "scope": "project"}
    )
    graph = value["memory"]["graph"][0]
    assert graph["status"]["status"] == "ready", graph
    assert graph["seed"] in ("graph-a", "graph-b")
    nodes = graph["neighborhood"]["nodes"]
    assert len(nodes) <= 12
    assert all(node["depth"] <= 1 for node in nodes)
    assert tree(project / ".lwc") == before


async def test_mcp_graph_stays_ready_after_a_page_write(project: Path, env: dict[str, str]) -> None:
    """Not in LWC's file, but LWC's behaviour: a page put after the build keeps the seed."""
    lwc(project, env, "init")
    put(project, env, "graph-a", "graphseed links to [[graph-b]].")
    lwc(project, env, "config", "set", "--graph", "grafeo")
    lwc(project, env, "graph", "build")
    put(project, env, "graph-b", "graphseed related page.")
    _, value = await explore(
        project, env, {"query": "graphseed", "projectPath": str(project), "scope": "project"}
    )
    graph = value["memory"]["graph"][0]
    assert graph["status"]["status"] == "ready"
    assert {node["identifier"] for node in graph["neighborhood"]["nodes"]} == {
        "graph-a",
        "graph-b",
    }
