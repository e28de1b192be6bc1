"""The real `lwc serve --mcp` process over stdio, driven by the mcp SDK client and raw JSON lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import REPO, lwc_command, sdk_client
from lwc_process import RawServer, call
from mcp import Client

pytestmark = pytest.mark.slow

VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under `roots` with its bytes (and every directory, as b'<dir>')."""
    out: dict[str, bytes] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames:
                out[os.path.join(dirpath, name)] = b"<dir>"
            for name in filenames:
                path = os.path.join(dirpath, name)
                out[path] = Path(path).read_bytes()
    return out


def make_wiki(workspace: Path, env: dict[str, str], *, with_global: bool = False) -> None:
    """A project store with two pages (and an empty global store), via the real CLI."""
    subprocess.run(lwc_command("init"), cwd=workspace, env=env, check=True, capture_output=True)
    if with_global:
        subprocess.run(
            lwc_command("--scope", "global", "init"), cwd=workspace, env=env, check=True,
            capture_output=True,
        )  # fmt: skip
    body = workspace / "body.md"
    body.write_text("Trio nurseries supervise tasks; cancel scopes bound them.\n")
    for slug, title in (("trio-nurseries", "Trio nurseries"), ("cancel-scopes", "Cancel scopes")):
        subprocess.run(
            lwc_command("page", "put", slug, "--title", title, "--file", str(body)),
            cwd=workspace,
            env=env,
            check=True,
            capture_output=True,
        )
    body.unlink()


def client_for(workspace: Path, env: dict[str, str], *extra: str) -> Client:
    """The SDK client for `lwc serve --mcp --path WORKSPACE EXTRA`, started in the workspace."""
    return sdk_client(workspace, env, "--path", str(workspace), *extra)


async def test_sdk_client_lists_the_tool_and_gets_guidance(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """The SDK client handshakes, sees one read-only tool, and gets init guidance."""
    async with client_for(workspace, lwc_env) as client:
        assert client.server_info is not None
        assert client.server_info.name == "lwc"
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == ["lwc_explore"]
        annotations = tools[0].annotations
        assert annotations is not None
        assert annotations.read_only_hint is True
        assert annotations.destructive_hint is False
        assert annotations.idempotent_hint is True
        assert annotations.open_world_hint is False
        result = await client.call_tool(
            "lwc_explore", {"query": "trio", "projectPath": str(workspace)}
        )
    assert result.is_error is True
    memory = result.structured_content["memory"]
    assert memory["state"] == "unavailable"
    assert memory["error"]["code"] == "store_not_found"
    assert memory["nextAction"] == {"command": "lwc init", "cwd": str(workspace)}
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]


async def test_sdk_client_reads_a_real_wiki(workspace: Path, lwc_env: dict[str, str]) -> None:
    """Memory mode over a real store returns ranked pages; code mode gives install guidance."""
    make_wiki(workspace, lwc_env)
    async with client_for(workspace, lwc_env) as client:
        memory = await client.call_tool(
            "lwc_explore", {"query": "cancel scopes", "projectPath": str(workspace)}
        )
        everything = await client.call_tool(
            "lwc_explore",
            {"query": "cancel scopes", "projectPath": str(workspace), "mode": "all"},
        )
    assert memory.is_error is False
    content = memory.structured_content
    assert content is not None
    assert content["memory"]["results"][0]["identifier"] == "cancel-scopes"
    assert everything.is_error is False
    both = everything.structured_content
    assert both is not None
    assert both["partial"] is True
    assert both["codeGraph"]["error"]["code"] == "codegraph_runtime_missing"
    assert both["memory"] == content["memory"]


@pytest.mark.parametrize("version", [*VERSIONS, "1999-01-01"])
async def test_version_negotiation(version: str, workspace: Path, lwc_env: dict[str, str]) -> None:
    """initialize answers the client's version when supported, else 2025-11-25."""
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], lwc_env, str(workspace))
        await server.send(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": version, "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"}}}
        )  # fmt: skip
        reply = await server.recv()
        await server.close_stdin()
        assert await server.wait() == 0
    expected = version if version in VERSIONS else "2025-11-25"
    assert reply["result"]["protocolVersion"] == expected
    assert reply["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert server.stderr == b""


ARGUMENT_ERRORS: list[tuple[Any, str, str]] = [
    ({"query": "x", "projectPath": "{ws}", "extra": 1}, "invalid_arguments", "extra"),
    ({"projectPath": "{ws}"}, "invalid_query", "query"),
    ({"query": "   ", "projectPath": "{ws}"}, "invalid_query", "query"),
    ({"query": "x" * 10_001, "projectPath": "{ws}"}, "invalid_query", "query"),
    ({"query": "x"}, "invalid_project_path", "projectPath"),
    ({"query": "x", "projectPath": 5}, "invalid_project_path", "projectPath"),
    ({"query": "x", "projectPath": "{ws}", "maxDocuments": True}, "invalid_arguments", "maxDocuments"),
    ({"query": "x", "projectPath": "{ws}", "maxDocuments": "3"}, "invalid_arguments", "maxDocuments"),
    ({"query": "x", "projectPath": "{ws}", "maxFiles": 3.5}, "invalid_arguments", "maxFiles"),
    ({"query": "x", "projectPath": "{ws}", "maxFiles": 3.0}, "invalid_arguments", "maxFiles"),
    ({"query": "x", "projectPath": "{ws}", "maxDocuments": 21}, "invalid_arguments", "maxDocuments"),
    ({"query": "x", "projectPath": "{ws}", "mode": "both"}, "invalid_arguments", "mode"),
    ({"query": " ".join(f"w{i}" for i in range(65)), "projectPath": "{ws}"}, "invalid_query", "query"),
    ({"query": "x", "projectPath": "relative/dir"}, "invalid_project_path", "projectPath"),
    ({"query": "x", "projectPath": "{ws}/../x"}, "invalid_project_path", "projectPath"),
    ({"query": "x", "projectPath": "/etc"}, "invalid_project_path", "projectPath"),
    ({"query": "x", "projectPath": "{ws}-evil"}, "project_path_outside_workspace", "projectPath"),
    ({"query": "x", "projectPath": "{ws}/missing"}, "invalid_project_path", "projectPath"),
]  # fmt: skip


async def test_every_argument_error_is_a_tool_result(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Argument errors come back as isError results naming the field, and the server keeps serving."""
    (workspace.parent / "ws-evil").mkdir()

    def fill(value: Any) -> Any:
        return value.replace("{ws}", str(workspace)) if isinstance(value, str) else value

    async with client_for(workspace, lwc_env) as client:
        for arguments, code, field in ARGUMENT_ERRORS:
            sent = {key: fill(value) for key, value in arguments.items()}
            result = await client.call_tool("lwc_explore", sent)
            assert result.is_error is True, arguments
            error = result.structured_content["error"]
            assert (error["code"], error["field"]) == (code, field), arguments
            assert field in error["message"] or code.startswith("project_path")
        assert len((await client.list_tools()).tools) == 1  # still serving


async def test_scope_not_allowed(workspace: Path, lwc_env: dict[str, str]) -> None:
    """--allow-scope project refuses an explicit global scope as scope_not_allowed."""
    async with client_for(workspace, lwc_env, "--allow-scope", "project") as client:
        result = await client.call_tool(
            "lwc_explore", {"query": "x", "projectPath": str(workspace), "scope": "global"}
        )
    assert result.is_error is True
    assert result.structured_content["error"]["code"] == "scope_not_allowed"


async def test_raw_protocol_errors_and_frame_limit(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Bad JSON, bad envelopes and a 70 KiB frame get their errors; the server keeps serving."""
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], lwc_env, str(workspace))
        await server.send_raw(b"{not json}\n")
        parse = await server.recv()
        await server.send_raw(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n')
        batch = await server.recv()
        await server.send({"jsonrpc": "2.0", "id": 2, "method": "server/discover"})
        unknown = await server.recv()
        big = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "lwc_explore", "arguments": {"query": "x" * 70_000}}}  # fmt: skip
        await server.send(big)
        oversize = await server.recv()
        await server.send_raw(b'\n   \n{"jsonrpc":"2.0","id":4,"method":"ping"}\r\n')
        ping = await server.recv()
        await server.send(call(5, {"query": "x", "projectPath": str(workspace)}, name="nope"))
        unknown_tool = await server.recv()
        await server.send_raw(b'{"jsonrpc":"2.0","id":6,"method":"ping"}')  # no newline, then EOF
        await server.close_stdin()
        last = await server.recv()
        assert await server.wait() == 0
    assert (parse["id"], parse["error"]["code"], parse["error"]["data"]["kind"]) == (
        None, -32700, "parse_error",
    )  # fmt: skip
    assert batch["error"]["data"]["kind"] == "invalid_request"
    assert (unknown["id"], unknown["error"]["code"]) == (2, -32601)
    assert oversize["id"] == 3
    assert oversize["error"]["code"] == -32600
    assert oversize["error"]["data"]["kind"] == "frame_too_large"
    assert oversize["error"]["message"] == "Request exceeds 64 KiB"
    assert ping == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert unknown_tool["error"]["data"]["kind"] == "unknown_tool"
    assert last == {"jsonrpc": "2.0", "id": 6, "result": {}}
    assert server.stderr == b""


async def test_a_duplicate_key_is_answered_with_the_request_id(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """A key repeated inside `arguments` is -32600 carrying the request's id (SPEC §1.3)."""
    frame = (
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"lwc_explore",'
        b'"arguments":{"query":"a","query":"b"}}}\n'
    )
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], lwc_env, str(workspace))
        await server.send_raw(frame)
        answer = await server.recv()
        await server.close_stdin()
        assert await server.wait() == 0
    assert (answer["id"], answer["error"]["code"]) == (5, -32600)
    assert answer["error"]["data"]["kind"] == "invalid_request"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["serve"], "invalid_serve_mode"),
        (["serve", "--mcp", "--path", "/definitely/missing"], "invalid_workspace"),
        (["serve", "--mcp", "--path", "/"], "workspace_too_broad"),
        (["serve", "--mcp", "--http-listen", "127.0.0.1:0"], "invalid_usage"),
        (["serve", "--mcp", "--bogus"], "invalid_usage"),
        (["serve", "--mcp", "stray"], "invalid_usage"),
        (["serve", "--mcp", "--memory-timeout", "0"], "invalid_usage"),
        (["serve", "--mcp", "--code-timeout", "nan"], "invalid_usage"),
    ],
)
def test_usage_errors_exit_2(
    args: list[str], code: str, workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Command-line mistakes exit 2 before serving, with one JSON error line on stderr."""
    proc = subprocess.run(
        lwc_command(*args), cwd=workspace, env=lwc_env, capture_output=True, input=b"", timeout=30
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["error"]["code"] == code


def test_malformed_faults_exit_2(workspace: Path, lwc_env: dict[str, str]) -> None:
    """A malformed LWC_FAULTS value is a usage error."""
    env = {**lwc_env, "LWC_FAULTS": "memory=explode"}
    proc = subprocess.run(
        lwc_command("serve", "--mcp"), cwd=workspace, env=env, capture_output=True, timeout=30
    )
    assert proc.returncode == 2
    assert "explode" in json.loads(proc.stderr)["error"]["message"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_signal_exits_0_after_answering_in_flight(
    signum: int, workspace: Path, lwc_env: dict[str, str]
) -> None:
    """SIGTERM/SIGINT: in-flight calls are answered, then exit 0 with no traceback."""
    env = {**lwc_env, "LWC_FAULTS": "memory=delay:0.5"}
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], env, str(workspace))
        await server.send(call(1, {"query": "x", "projectPath": str(workspace)}))
        await server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert (await server.recv())["id"] == 2  # the server is up and reading
        server.proc.send_signal(signum)
        answer = await server.recv()
        assert await server.wait() == 0
    assert answer["id"] == 1
    assert answer["result"]["structuredContent"]["memory"]["state"] == "unavailable"
    assert b"Traceback" not in server.stderr
    assert server.stderr.decode().startswith("lwc: LWC_FAULTS active")


@pytest.mark.serial  # pings must answer within a bound during the hang: alone
async def test_cancellation_and_ping_during_a_hang(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """A cancelled call gets no answer; ping is answered while a code call hangs."""
    env = {**lwc_env, "LWC_FAULTS": "code=hang"}
    args = ["--path", str(workspace), "--code-timeout", "1.5"]
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, args, env, str(workspace))
        # Up and reading first: the ping timed below must not include the start-up, which
        # takes seconds on a loaded machine.
        await server.send({"jsonrpc": "2.0", "id": "up", "method": "ping"})
        assert (await server.recv())["id"] == "up"
        await server.send(call(1, {"query": "x", "projectPath": str(workspace), "mode": "code"}))
        await server.send(call(2, {"query": "x", "projectPath": str(workspace), "mode": "code"}))
        await server.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        )
        started = trio.current_time()
        await server.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        pong = await server.recv()
        ping_seconds = trio.current_time() - started
        timed_out = await server.recv()
        await server.close_stdin()
        rest = await server.rest()
        assert await server.wait() == 0
    assert pong["id"] == "p"
    assert ping_seconds < 1.0  # behaviour, not a benchmark: it did not wait for the hang
    assert timed_out["id"] == 2
    assert timed_out["result"]["isError"] is True
    code = timed_out["result"]["structuredContent"]["codeGraph"]["error"]["code"]
    assert code == "codegraph_timeout"
    assert rest == []


def test_stray_print_never_reaches_the_wire(workspace: Path, lwc_env: dict[str, str]) -> None:
    """A print() inside the server lands on stderr; stdout holds only protocol lines."""
    script = (
        "import sys\n"
        "import lwc_trio.protocol.session as s\n"
        "real = s.answer\n"
        "def noisy(request, version):\n"
        "    print('STRAY OUTPUT', flush=True)\n"
        "    return real(request, version)\n"
        "s.answer = noisy\n"
        "from lwc_trio.cli.main import main\n"
        f"sys.exit(main(['serve', '--mcp', '--path', {str(workspace)!r}]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        env=lwc_env,
        cwd=workspace,
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 0
    assert proc.stdout == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    assert b"STRAY OUTPUT" in proc.stderr


async def test_a_session_changes_no_file(
    workspace: Path, home: Path, lwc_env: dict[str, str]
) -> None:
    """A session of queries leaves the workspace and $HOME byte-for-byte unchanged."""
    make_wiki(workspace, lwc_env, with_global=True)
    before = snapshot(workspace, home)
    async with client_for(workspace, lwc_env) as client:
        for mode in ("memory", "code", "all"):
            for scope in ("project", "global", "all"):
                result = await client.call_tool(
                    "lwc_explore",
                    {"query": "trio", "projectPath": str(workspace), "mode": mode,
                     "scope": scope},
                )  # fmt: skip
                assert result.structured_content is not None
    assert snapshot(workspace, home) == before
    assert REPO.exists()


@pytest.mark.parametrize(
    ("large", "allow", "imported"),
    [(False, "all", False), (True, "all", True), (True, "global", False)],
)
async def test_a_large_store_is_served_with_the_memory_modules_imported_first(
    large: bool, allow: str, imported: bool, workspace: Path, lwc_env: dict[str, str]
) -> None:
    """A server whose workspace store is at least `PRELOAD_STORE_BYTES` has the memory
    engine and numpy imported before it answers `initialize`: imported by the first query of
    a burst instead, they held the interpreter long enough to delay the other calls and
    pings (`scripts/bench typo-load`). A small store's server starts without numpy, and so
    does one that may not read the large store (`--allow-scope global`)."""
    from conftest_memory import new_store, page, put_pages

    from lwc_trio.cli.serve import PRELOAD_STORE_BYTES

    db = new_store(workspace)
    body = "\n\n".join(
        f"Paragraph {i} about caching, parsing and retries. " * 12 for i in range(40)
    )
    put_pages(db, [page(f"note-{i}", f"Note {i}", body) for i in range(350 if large else 3)])
    assert (db.stat().st_size >= PRELOAD_STORE_BYTES) is large
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(
            nursery, ["--path", str(workspace), "--allow-scope", allow], lwc_env, str(workspace)
        )
        await server.send(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"}}}
        )  # fmt: skip
        reply = await server.recv()
        maps = await trio.Path(f"/proc/{server.pid}/maps").read_text()
        await server.close_stdin()
        assert await server.wait() == 0
    assert reply["result"]["protocolVersion"] == "2025-11-25"
    assert ("_multiarray_umath" in maps) is imported
