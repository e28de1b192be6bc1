"""Both planes through the real `lwc serve --mcp` process: fake CodeGraph faults and real Wiki memory."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import REPO, lwc_command
from lwc_process import RawServer, call

from lwc_trio.memory.query.passages import ELISION
from lwc_trio.protocol.tool import MAX_TOKENS_MAX

pytestmark = pytest.mark.slow

FAKE = REPO / "tests" / "fakes" / "fake_codegraph.py"


def cli(env: dict[str, str], cwd: Path, *args: str, stdin: bytes | None = None) -> Any:
    proc = subprocess.run(
        lwc_command(*args, "--json"), cwd=cwd, env=env, capture_output=True, input=stdin,
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def fake_runtime(tmp: Path, script: str) -> str:
    """An executable running the scripted fake CodeGraph (fault injection, not the real runtime)."""
    state = tmp / "state"
    state.mkdir(exist_ok=True)
    wrapper = tmp / "codegraph-fake"
    command = [sys.executable, str(FAKE), str(state), script]
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def starts(tmp: Path) -> list[int]:
    path = tmp / "state" / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [e["pid"] for e in events if e["event"] == "start"]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def project(workspace: Path, lwc_env: dict[str, str]) -> Path:
    """A workspace with a Wiki page about 'shapes' and a (fake) CodeGraph index."""
    cli(lwc_env, workspace, "init", "--no-git-exclude")
    cli(lwc_env, workspace, "page", "put", "shapes", "--title", "Shapes", "--file", "-",
        stdin=b"Circles and squares are shapes.\n")  # fmt: skip
    (workspace / ".codegraph").mkdir()
    (workspace / ".codegraph" / "codegraph.db").write_bytes(b"")
    return workspace


def explore(rid: int, workspace: Path, mode: str, **extra: Any) -> dict[str, Any]:
    return call(rid, {"query": "shapes", "projectPath": str(workspace), "mode": mode, **extra})


@pytest.mark.parametrize(
    ("script", "code"),
    [
        ("hang,normal", "codegraph_timeout"),
        ("crash,normal", "codegraph_crashed"),
        ("wrong_id,normal", "codegraph_bad_response"),
        ("oversized,normal", "codegraph_bad_response"),
        ("garbage,normal", "codegraph_bad_response"),
        ("handshake_exit,normal", "codegraph_crashed"),
    ],
)
async def test_code_fault_isolated_and_next_call_gets_a_fresh_child(
    script: str, code: str, project: Path, lwc_env: dict[str, str], tmp_path: Path
) -> None:
    """A misbehaving child: right code, memory unchanged, ping answered, fresh child after."""
    env = {**lwc_env, "LWC_CODEGRAPH_BINARY": fake_runtime(tmp_path, script)}
    args = ["--path", str(project), "--code-timeout", "2"]
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, args, env, str(project))
        await server.send(explore(1, project, "memory"))
        memory_only = (await server.recv())["result"]["structuredContent"]["memory"]
        await server.send(explore(2, project, "all"))
        await server.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        first = await server.recv()
        assert first["id"] == "p"  # never behind the faulted call
        faulted = (await server.recv())["result"]
        await server.send(explore(3, project, "code"))
        recovered = (await server.recv())["result"]
        pids = starts(tmp_path)
        await server.close_stdin()
        assert await server.wait() == 0
    result = faulted["structuredContent"]
    assert result["codeGraph"]["state"] == "error"
    assert result["codeGraph"]["error"]["code"] == code
    assert result["memory"] == memory_only
    assert result["partial"] is True
    assert faulted["isError"] is False
    assert recovered["isError"] is False
    assert recovered["structuredContent"]["codeGraph"]["state"] == "ready"
    assert len(pids) == 2
    assert pids[0] != pids[1]
    assert not any(alive(pid) for pid in pids)
    assert server.stderr == b""


async def test_second_query_reuses_the_child_and_sigterm_reaps_it(
    project: Path, lwc_env: dict[str, str], tmp_path: Path
) -> None:
    """Two code queries use one child; SIGTERM exits 0 and leaves no process behind."""
    env = {**lwc_env, "LWC_CODEGRAPH_BINARY": fake_runtime(tmp_path, "normal")}
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(project)], env, str(project))
        for rid in (1, 2):
            await server.send(explore(rid, project, "code"))
            answer = (await server.recv())["result"]["structuredContent"]["codeGraph"]
            assert answer["state"] == "ready"
        pids = starts(tmp_path)
        server.proc.send_signal(signal.SIGTERM)
        assert await server.wait() == 0
    assert len(pids) == 1
    assert not alive(pids[0])


async def test_memory_caps_sources_freshness_and_scopes(
    project: Path, home: Path, lwc_env: dict[str, str]
) -> None:
    """Bodies are capped (CJK-safe), Sources never leak, CLI writes show up, scopes are honoured."""
    big = ("ラーメン の 作り方。" * 4000)[:40_000]
    cli(lwc_env, project, "page", "put", "ramen", "--title", "Ramen", "--file", "-",
        stdin=big.encode())  # fmt: skip
    secret = project / "secret.md"
    secret_text = "The launch code is kubernetes-42 and must stay private. " * 50
    secret.write_text(secret_text)
    source_id = cli(lwc_env, project, "source", "add", str(secret))
    cli(lwc_env, project, "--scope", "global", "init")
    cli(lwc_env, home, "--scope", "global", "page", "put", "global-note", "--title",
        "Global shapes note", "--file", "-", stdin=b"Shapes everywhere.\n")  # fmt: skip
    args = ["--path", str(project), "--allow-scope", "project"]
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, args, lwc_env, str(project))
        await server.send(call(1, {"query": "ラーメン", "projectPath": str(project),
                                   "maxTokens": MAX_TOKENS_MAX}))  # fmt: skip
        ramen = (await server.recv())["result"]["structuredContent"]["memory"]
        await server.send(call(2, {"query": "launch code kubernetes", "projectPath": str(project)}))
        leak = await server.recv()
        await server.send(call(3, {"query": "shapes", "projectPath": str(project)}))
        scoped = (await server.recv())["result"]["structuredContent"]["memory"]
        cli(lwc_env, project, "page", "put", "fresh", "--title", "Freshly written", "--file", "-",
            stdin=b"Brand new trapezoid facts.\n")  # fmt: skip
        await server.send(call(4, {"query": "trapezoid", "projectPath": str(project)}))
        fresh = (await server.recv())["result"]["structuredContent"]["memory"]
        await server.close_stdin()
        assert await server.wait() == 0
    page = ramen["pages"][0]
    assert page["slug"] == "ramen"
    assert page["truncated"] is True
    assert 0 < len(page["body"]) <= 15_000  # query-focused within LWC's cap (SPEC §4)
    assert all(piece.strip().rstrip(" …") in big for piece in page["body"].split(ELISION))
    memory = leak["result"]["structuredContent"]["memory"]
    hits = memory["results"]
    assert hits
    assert hits[0]["type"] == "source"
    assert len(hits[0]["snippet"]) <= 180
    assert memory["pages"] == []  # a Source never comes back as a body
    sent = json.dumps(leak, ensure_ascii=False)
    assert secret_text[:200] not in sent
    assert secret_text[:200] not in leak["result"]["content"][0]["text"]
    assert source_id is not None
    assert [store["scope"] for store in scoped["stores"]] == ["project"]  # global not allowed
    assert [r["identifier"] for r in fresh["results"]] == ["fresh"]
