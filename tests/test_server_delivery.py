"""The real `lwc serve --mcp` delivers every answer and bounds every step: a slow reader, EOF
after piped calls, a hung path check, a too-broad start directory and early signals."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio
from conftest import lwc_command
from conftest_memory import new_store, page, put_pages
from lwc_process import RawServer, call

pytestmark = pytest.mark.slow

PING = {"jsonrpc": "2.0", "id": "p", "method": "ping"}


def big_wiki(workspace: Path) -> None:
    """Thirty pages of about 3,000 characters that all match `trio`: answers of ~25 KB."""
    body = "Trio nurseries supervise tasks and cancel scopes bound them. " * 50
    pages = [page(f"trio-{i:02d}", f"Trio page {i}", body) for i in range(30)]
    put_pages(new_store(workspace), pages)


async def test_slow_reader_during_a_burst_gets_every_answer(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """200 real memory calls while the host stalls 2 s, then reads slowly: 200 answers."""
    big_wiki(workspace)
    arguments = {"query": "trio nurseries", "projectPath": str(workspace), "maxDocuments": 8}
    burst = b"".join(json.dumps(call(rid, arguments)).encode() + b"\n" for rid in range(200))
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], lwc_env, str(workspace))
        await server.send_raw(burst)
        await trio.sleep(2.0)  # a paused host: nothing is read while the burst is served
        lines: list[bytes] = []
        # A lost answer would leave this loop waiting for good (the old failure): bound it.
        with trio.fail_after(120):
            while len(lines) < 200:
                line = await server.recv_line()
                assert line is not None, "stdout ended before every answer arrived"
                lines.append(line)
                await trio.sleep(0.01)  # one ~25 KB answer per 10 ms: a slow reader
        await server.close_stdin()
        rest = await server.rest()
        assert await server.wait() == 0
    answers = [json.loads(line) for line in lines]
    assert sorted(a["id"] for a in answers) == list(range(200))
    assert rest == []
    assert all(a["result"]["structuredContent"]["memory"]["state"] == "ready" for a in answers)
    assert sum(map(len, lines)) > 200 * 10_000  # the answers were large, as real ones are
    assert server.stderr == b""


@pytest.mark.parametrize(
    ("delay", "calls"),
    [
        pytest.param(0.3, 10, id="ten-in-flight"),
        pytest.param(3, 5, id="slower-than-the-2s-grace"),
    ],
)
async def test_eof_after_piped_calls_answers_them_all(
    workspace: Path, lwc_env: dict[str, str], delay: float, calls: int
) -> None:
    """Calls still in flight (even ones slower than the 2 s grace) when stdin closes at once:
    every one is answered, then exit 0."""
    env = {**lwc_env, "LWC_FAULTS": f"memory=delay:{delay}"}
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], env, str(workspace))
        for rid in range(calls):
            await server.send(call(rid, {"query": "x", "projectPath": str(workspace)}))
        await server.close_stdin()
        answers = await server.rest()
        assert await server.wait() == 0
    assert sorted(a["id"] for a in answers) == list(range(calls))
    assert all(
        a["result"]["structuredContent"]["memory"]["error"]["code"] == "store_not_found"
        for a in answers
    )
    assert server.stderr.decode().splitlines() == [
        f"lwc: LWC_FAULTS active: memory: delay:{delay} from then on"
    ]


async def test_hung_path_check_answers_at_its_deadline(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """auth=hang: the call gets invalid_project_path; a ping and a later call do not wait."""
    env = {**lwc_env, "LWC_FAULTS": "auth=hang*1"}
    arguments = {"query": "x", "projectPath": str(workspace)}
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], env, str(workspace))
        await server.send(call(1, arguments))
        await server.send(PING)
        await server.send(call(2, arguments))
        first, second, third = [await server.recv() for _ in range(3)]
        await server.close_stdin()
        assert await server.rest() == []
        assert await server.wait() == 0
    assert third["id"] == 1  # the ping and call 2 were answered while the check hung
    assert {first["id"], second["id"]} == {"p", 2}
    assert third["result"]["isError"] is True
    assert third["result"]["structuredContent"]["error"] == {
        "code": "invalid_project_path",
        "message": "projectPath could not be checked within 2 s",
        "field": "projectPath",
    }
    later = first if first["id"] == 2 else second
    assert later["result"]["structuredContent"]["memory"]["state"] == "unavailable"


@pytest.mark.parametrize("start", ["home", "root"])
async def test_default_workspace_too_broad_serves_and_guides(
    start: str, home: Path, lwc_env: dict[str, str]
) -> None:
    """Started in $HOME or / without --path: handshake, tools/list and ping work; every call
    is workspace_too_broad naming the start directory and the fix; one stderr warning."""
    cwd = str(home) if start == "home" else "/"
    init = {
        "jsonrpc": "2.0",
        "id": "i",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t"},
        },
    }
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, [], lwc_env, cwd)
        await server.send(init)
        assert (await server.recv())["result"]["serverInfo"]["name"] == "lwc"
        await server.send({"jsonrpc": "2.0", "id": "t", "method": "tools/list"})
        assert (await server.recv())["result"]["tools"][0]["name"] == "lwc_explore"
        await server.send(PING)
        assert (await server.recv())["result"] == {}
        await server.send(call(1, {"query": "x", "projectPath": str(home)}))
        refused = await server.recv()
        await server.send(call(2, {"query": ""}))
        also_refused = await server.recv()
        await server.close_stdin()
        assert await server.wait() == 0
    for answer in (refused, also_refused):
        assert answer["result"]["isError"] is True
        error = answer["result"]["structuredContent"]["error"]
        assert error["code"] == "workspace_too_broad"
        assert error["field"] == "projectPath"
        assert f"started in {cwd} " in error["message"]
        assert "--path DIR" in error["message"]
    lines = server.stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("lwc: WARNING:")
    assert cwd in lines[0]


def test_explicit_path_too_broad_still_exits_2(home: Path, lwc_env: dict[str, str]) -> None:
    """`--path $HOME` is a usage error: the host asked for it explicitly."""
    proc = subprocess.run(
        lwc_command("serve", "--mcp", "--path", str(home)),
        cwd=home,
        env=lwc_env,
        capture_output=True,
        input=b"",
        timeout=30,
    )
    assert proc.returncode == 2
    assert json.loads(proc.stderr)["error"]["code"] == "workspace_too_broad"


def _catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler installed for `signum` (Linux /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(int(row.split()[1], 16) for row in status.splitlines() if row.startswith("SigCgt"))
    return bool(mask >> (signum - 1) & 1)


@contextlib.contextmanager
def plain_deadline(seconds: float) -> Iterator[Callable[[], bool]]:
    """A plain deadline for synchronous polling loops."""
    end = time.monotonic() + seconds
    yield lambda: time.monotonic() > end


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(
    ("anchor", "after"),
    [
        ("python", 0.3),
        ("python", 0.6),
        ("lwc", 0.0),
        ("lwc", 0.05),
        ("lwc", 0.1),
        ("lwc", 0.2),
        ("ping", 0.0),
    ],
)
def test_sigterm_during_start_up_exits_0_quietly(
    anchor: str, after: float, workspace: Path, lwc_env: dict[str, str]
) -> None:
    """SIGTERM at several moments of start-up (and once serving): exit 0, nothing on stderr.

    Moments count from an anchor, so that a loaded machine does not shift them: `python`,
    the interpreter is up (its SIGINT handler exists; before that no Python code can run);
    `lwc`, lwc's own SIGTERM handler exists (the rest of start-up follows); `ping`, the
    server has answered a ping.
    """
    proc = subprocess.Popen(
        lwc_command("serve", "--mcp", "--path", str(workspace)),
        cwd=workspace,
        env=lwc_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    if anchor == "ping":
        proc.stdin.write(json.dumps(PING).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == "p"
    else:
        signum = signal.SIGINT if anchor == "python" else signal.SIGTERM
        with plain_deadline(10) as expired:
            while not _catches(proc.pid, signum) and not expired():
                time.sleep(0.001)
    time.sleep(after)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert err == b""
