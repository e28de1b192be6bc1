"""The HTTP scenario's servers: lwc over HTTP and the mcp SDK's own two (same work, echo)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from benchmarks.fixtures import SMALL_QUERY
from benchmarks.http import start_http_server
from benchmarks.scenarios.peers import SAME_WORK_HTTP_SERVER, SDK_HTTP_SERVER
from benchmarks.stdio import ServerGone

IO_TIMEOUT: Final = 60.0
"""Longest wait for a server to start, stop, or answer any single request."""
LEVELS: Final = (1, 8, 32)
QUERY: Final = SMALL_QUERY


@dataclass(frozen=True)
class Plan:
    requests: int
    """Requests per (server, workload, level), split evenly over the clients."""
    warmup: int
    """Unrecorded requests per client before the clock starts."""


FULL: Final = Plan(requests=4000, warmup=20)
QUICK: Final = Plan(requests=320, warmup=3)


BenchError = ServerGone
"""A server did not behave; the run is void."""


@dataclass
class Target:
    key: str
    label: str
    host: str
    port: int
    path: str
    tool_call: dict[str, Any]
    check_call: Callable[[dict[str, Any]], None]
    proc: subprocess.Popen[bytes] | None = None
    bare_call: dict[str, Any] | None = None
    """lwc and same work: a valid call with nothing to search (diagnostic, not a target)."""


# --------------------------------------------------------------------------- servers


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_lwc(
    workspace: Path, env: dict[str, str], key: str = "lwc", source: Path | None = None
) -> Target:
    """`lwc serve --transport http`; from `source` (a directory holding `lwc_trio/`) if given.

    `python -m` puts its working directory first on `sys.path`, ahead of PYTHONPATH, so
    the other source is chosen by starting there.
    """
    argv = [sys.executable, "-m", "lwc_trio", "serve", "--mcp", "--transport", "http"]
    argv += ["--http-listen", "127.0.0.1:0", "--path", str(workspace)]
    if source is not None:
        env = {**env, "PYTHONPATH": str(source)}
    proc, host, port, _errfd, _path = start_http_server(argv, env, cwd=source)

    def check(result: dict[str, Any]) -> None:
        memory = result.get("structuredContent", {}).get("memory", {})
        if result.get("isError") is not False or memory.get("state") != "ready":
            raise BenchError(f"lwc: memory call failed: {json.dumps(result)[:300]}")
        if not memory.get("results"):
            raise BenchError(f"lwc: memory did not hit the Wiki: {json.dumps(memory)[:300]}")

    arguments = {"query": QUERY, "projectPath": str(workspace), "mode": "memory"}
    # The private HOME has no global Wiki: every actor and both thread trips, but no search.
    bare = {**arguments, "scope": "global"}
    return Target(
        key,
        "lwc (memory-mode lwc_explore)",
        host,
        port,
        "/",
        {"name": "lwc_explore", "arguments": arguments},
        check,
        proc,
        {"name": "lwc_explore", "arguments": bare},
    )


def _start_script(
    key: str, source: str, root: Path, env: dict[str, str], cwd: Path
) -> tuple[subprocess.Popen[bytes], int]:
    script = root / f"sdk_http_{key}_server.py"
    script.write_text(source)
    errlog = root / f"{key}.err"
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port)],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=errlog.open("wb"),
    )
    deadline = time.monotonic() + IO_TIMEOUT
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise BenchError(f"{key} did not start: {errlog.read_text()[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)


def start_sdk(root: Path, env: dict[str, str]) -> Target:
    proc, port = _start_script("sdk", SDK_HTTP_SERVER, root, env, root)

    def check(result: dict[str, Any]) -> None:
        content = result.get("content") or [{}]
        if result.get("isError") is not False or content[0].get("text") != QUERY:
            raise BenchError(f"sdk: echo failed: {json.dumps(result)[:300]}")

    call = {"name": "echo", "arguments": {"text": QUERY}}
    return Target("sdk", "mcp SDK (echo tool)", "127.0.0.1", port, "/mcp", call, check, proc)


def structured(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result's object: `structuredContent`, else its text block parsed."""
    content = result.get("structuredContent")
    if isinstance(content, dict):
        return content
    parsed: dict[str, Any] = json.loads((result.get("content") or [{}])[0].get("text", "{}"))
    return parsed


def start_same(root: Path, env: dict[str, str], workspace: Path) -> Target:
    """The same work as lwc's tool on the SDK's stateless JSON-response HTTP app (issue 11)."""
    proc, port = _start_script("same", SAME_WORK_HTTP_SERVER, root, env, workspace)

    def check(result: dict[str, Any]) -> None:
        memory = structured(result).get("memory", {})
        if result.get("isError") or memory.get("state") != "ready" or not memory.get("results"):
            raise BenchError(f"same: memory call failed: {json.dumps(result)[:300]}")

    arguments = {"query": QUERY, "projectPath": str(workspace)}
    return Target(
        "same",
        "mcp SDK (same work: lwc_explore)",
        "127.0.0.1",
        port,
        "/mcp",
        {"name": "lwc_explore", "arguments": arguments},
        check,
        proc,
        {"name": "lwc_explore", "arguments": {**arguments, "scope": "global"}},
    )


def stop(target: Target) -> int:
    assert target.proc is not None
    target.proc.send_signal(signal.SIGINT)
    try:
        return target.proc.wait(IO_TIMEOUT)
    except subprocess.TimeoutExpired:
        target.proc.kill()
        target.proc.wait()
        return -9
