"""HTTP transport benchmark: `lwc serve --mcp --transport http` beside the mcp SDK's own server.

Issue 5, "Performance". In one run, against

* lwc  - the real `lwc serve --mcp --transport http --path WS`, WS a temp workspace with an
         initialized Wiki holding one Page, so every `lwc_explore` (mode memory) reads SQLite;
* sdk  - the mcp SDK's `MCPServer` with one echo tool, served as streamable HTTP in stateless
         JSON-response mode (its own uvicorn + Starlette stack), written to a temp file and
         started as `sys.executable file.py PORT`,

it measures requests per second and median/p99 latency for `ping` and for one tool call (lwc:
a memory-mode `lwc_explore`; SDK: `echo`) with 1, 8 and 32 concurrent clients. For diagnosis,
not for the target, it also times lwc calls with nothing to search (`scope: "global"` with no
global Wiki): the transport, every actor and both thread trips, without the SQLite search.
Each client is one keep-alive HTTP/1.1 connection sending its requests one after another; every
request carries the same headers (JSON content type, `Accept: application/json,
text/event-stream`, `MCP-Protocol-Version: 2025-11-25`). The load generator is this script: one
Trio thread and h11, identical for both servers, so compare the two columns rather than reading
the absolute numbers as server capacity. Only loopback traffic; every loop is bounded by a
request count and every wait by IO_TIMEOUT.

    python scripts/bench_http.py            # the full run recorded in docs/benchmarks.md
    python scripts/bench_http.py --quick    # a few seconds, same code paths
    python scripts/bench_http.py --json     # machine-readable results on stdout

Target (issue 5): at least the SDK server's throughput at every concurrency level.
Exit status: 0 when the run completed (`--check` makes a missed target exit 1), 1 when a
server misbehaved (no answer in time, wrong status or body, bad exit).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import h11
import trio

PROTOCOL_VERSION: Final = "2025-11-25"
IO_TIMEOUT: Final = 60.0
"""Longest wait for a server to start, stop, or answer any single request."""
LEVELS: Final = (1, 8, 32)
QUERY: Final = "login tokens"


@dataclass(frozen=True)
class Plan:
    requests: int
    """Requests per (server, workload, level), split evenly over the clients."""
    warmup: int
    """Unrecorded requests per client before the clock starts."""


FULL: Final = Plan(requests=4000, warmup=20)
QUICK: Final = Plan(requests=320, warmup=3)


class BenchError(Exception):
    """A server did not behave; the run is void."""


SDK_SERVER: Final = '''\
"""The mcp SDK's own streamable HTTP server, stateless JSON mode, one echo tool (bench_http.py)."""
import sys

from mcp.server import MCPServer

mcp = MCPServer("echo", log_level="WARNING")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    mcp.run(
        "streamable-http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
    )
'''


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
    """lwc only: a valid call with nothing to search (diagnostic, not part of the target)."""


# --------------------------------------------------------------------------- servers


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _setup_workspace(root: Path, env: dict[str, str]) -> Path:
    """A workspace with an initialized Wiki and one Page the query finds."""
    workspace = root / "ws"
    workspace.mkdir()
    page = root / "auth.md"
    page.write_text(
        "# Auth flow\n\nLogin uses short-lived access tokens; refresh tokens rotate on use.\n"
    )
    lwc = [sys.executable, "-m", "lwc_trio"]
    put = ["page", "put", "auth-flow", "--title", "Auth flow", "--file", str(page)]
    for argv in ([*lwc, "init"], [*lwc, *put, "--summary", "How login and tokens work"]):
        done = subprocess.run(
            argv, cwd=workspace, env=env, capture_output=True, timeout=IO_TIMEOUT, check=False
        )
        if done.returncode != 0:
            raise BenchError(f"{' '.join(argv[3:5])} failed: {done.stderr.decode()[-500:]}")
    return workspace


def _start_lwc(workspace: Path, env: dict[str, str], errlog: Path) -> Target:
    argv = [sys.executable, "-m", "lwc_trio", "serve", "--mcp", "--transport", "http"]
    argv += ["--http-listen", "127.0.0.1:0", "--path", str(workspace)]
    err = errlog.open("w+b")
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
    )
    deadline = time.monotonic() + IO_TIMEOUT
    url = ""
    while not url:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise BenchError(f"lwc did not start: {errlog.read_text()[-500:]}")
        time.sleep(0.05)
        for line in errlog.read_text().splitlines():
            if line.startswith("lwc: listening on "):
                url = line.removeprefix("lwc: listening on ")
    host_port = url.removeprefix("http://").split("/", 1)[0]
    port = int(host_port.rsplit(":", 1)[1])

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
        "lwc",
        "lwc (memory-mode lwc_explore)",
        "127.0.0.1",
        port,
        "/",
        {"name": "lwc_explore", "arguments": arguments},
        check,
        proc,
        {"name": "lwc_explore", "arguments": bare},
    )


def _start_sdk(root: Path, env: dict[str, str], errlog: Path) -> Target:
    script = root / "sdk_http_echo_server.py"
    script.write_text(SDK_SERVER)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=errlog.open("wb"),
    )
    deadline = time.monotonic() + IO_TIMEOUT
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise BenchError(f"sdk did not start: {errlog.read_text()[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)

    def check(result: dict[str, Any]) -> None:
        content = result.get("content") or [{}]
        if result.get("isError") is not False or content[0].get("text") != QUERY:
            raise BenchError(f"sdk: echo failed: {json.dumps(result)[:300]}")

    call = {"name": "echo", "arguments": {"text": QUERY}}
    return Target("sdk", "mcp SDK (echo tool)", "127.0.0.1", port, "/mcp", call, check, proc)


def _stop(target: Target) -> int:
    assert target.proc is not None
    target.proc.send_signal(signal.SIGINT)
    try:
        return target.proc.wait(IO_TIMEOUT)
    except subprocess.TimeoutExpired:
        target.proc.kill()
        target.proc.wait()
        return -9


# --------------------------------------------------------------------------- the client


class Client:
    """One keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.stream: trio.SocketStream | None = None
        self.conn = h11.Connection(h11.CLIENT)
        self.headers = [
            ("host", f"{target.host}:{target.port}"),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", PROTOCOL_VERSION),
        ]

    async def post(self, message: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(message, separators=(",", ":")).encode()
        headers = [*self.headers, ("content-length", str(len(body)))]
        data = self.conn.send(h11.Request(method="POST", target=self.target.path, headers=headers))
        data += self.conn.send(h11.Data(data=body)) + self.conn.send(h11.EndOfMessage())
        with trio.fail_after(IO_TIMEOUT):
            if self.stream is None:
                self.stream = await trio.open_tcp_stream(self.target.host, self.target.port)
            await self.stream.send_all(data)
            status, chunks = 0, []
            while True:
                event = self.conn.next_event()
                if event is h11.NEED_DATA:
                    self.conn.receive_data(await self.stream.receive_some(65536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    chunks.append(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    raise BenchError(f"{self.target.key}: connection closed mid-answer")
        if self.conn.our_state is h11.MUST_CLOSE or self.conn.their_state is h11.MUST_CLOSE:
            # The server recycles keep-alive connections now and then (hypercorn: every
            # 1000 requests); a real client reconnects, and so does this one.
            await self.aclose()
            self.conn = h11.Connection(h11.CLIENT)
        else:
            self.conn.start_next_cycle()
        answer = b"".join(chunks)
        if status != 200:
            raise BenchError(f"{self.target.key}: HTTP {status}: {answer[:300]!r}")
        reply: dict[str, Any] = json.loads(answer)
        if reply.get("id") != message["id"] or "result" not in reply:
            raise BenchError(f"{self.target.key}: unexpected answer {answer[:300]!r}")
        result: dict[str, Any] = reply["result"]
        return result

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
            self.stream = None


@dataclass
class Sample:
    latencies_ms: list[float] = field(default_factory=list)
    wall_s: float = 0.0

    def summary(self) -> dict[str, float]:
        ordered = sorted(self.latencies_ms)
        p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
        return {
            "rps": len(ordered) / self.wall_s,
            "median_ms": statistics.median(ordered),
            "p99_ms": p99,
        }


async def _measure(target: Target, workload: str, clients: int, plan: Plan) -> Sample:
    per_client = max(1, plan.requests // clients)
    sample = Sample()
    ready = trio.Event()
    go = trio.Event()
    waiting = [clients]
    check = _check_bare if workload == "bare" else target.check_call
    params = target.bare_call if workload == "bare" else target.tool_call

    def message(rid: int) -> dict[str, Any]:
        if workload == "ping":
            return {"jsonrpc": "2.0", "id": rid, "method": "ping"}
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}

    async def one(index: int) -> None:
        client = Client(target)
        try:
            rid = index * 1_000_000
            for _ in range(plan.warmup):
                rid += 1
                result = await client.post(message(rid))
            if workload != "ping":
                check(result)
            waiting[0] -= 1
            if waiting[0] == 0:
                ready.set()
            await go.wait()
            for _ in range(per_client):
                rid += 1
                started = time.perf_counter()
                result = await client.post(message(rid))
                sample.latencies_ms.append((time.perf_counter() - started) * 1000)
            if workload != "ping":
                check(result)
            elif result != {}:
                raise BenchError(f"{target.key}: ping answered {result!r}")
        finally:
            await client.aclose()

    async with trio.open_nursery() as nursery:
        for index in range(clients):
            nursery.start_soon(one, index)
        with trio.fail_after(IO_TIMEOUT):
            await ready.wait()
        started = time.perf_counter()
        go.set()
    sample.wall_s = time.perf_counter() - started
    return sample


def _check_bare(result: dict[str, Any]) -> None:
    memory = result.get("structuredContent", {}).get("memory", {})
    if memory.get("error", {}).get("code") != "store_not_found":
        raise BenchError(f"lwc: expected store_not_found: {json.dumps(result)[:300]}")


async def _run_all(targets: list[Target], plan: Plan) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for workload in ("ping", "call", "bare"):
        for clients in LEVELS:
            # Servers interleaved per level, so drift on the machine hits both alike.
            for target in targets:
                if workload == "bare" and target.bare_call is None:
                    continue
                sample = await _measure(target, workload, clients, plan)
                key = f"{workload}@{clients}"
                results.setdefault(target.key, {})[key] = sample.summary()
    return results


# --------------------------------------------------------------------------- report


def _report(results: dict[str, Any], plan: Plan) -> tuple[str, bool]:
    lines = [
        f"bench_http: {plan.requests} requests per cell; python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "",
        "| workload | clients | lwc rps | SDK rps | lwc/SDK | lwc median / p99 ms "
        "| SDK median / p99 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    met = True
    for workload in ("ping", "call"):
        for clients in LEVELS:
            key = f"{workload}@{clients}"
            lwc, sdk = results["lwc"][key], results["sdk"][key]
            ratio = lwc["rps"] / sdk["rps"]
            met = met and ratio >= 1.0
            lines.append(
                f"| {workload} | {clients} | {lwc['rps']:.0f} | {sdk['rps']:.0f} | {ratio:.2f} "
                f"| {lwc['median_ms']:.2f} / {lwc['p99_ms']:.2f} "
                f"| {sdk['median_ms']:.2f} / {sdk['p99_ms']:.2f} |"
            )
    for clients in LEVELS:
        # Not part of the target: lwc's floor for a valid call, against the SDK's echo call.
        lwc, sdk = results["lwc"][f"bare@{clients}"], results["sdk"][f"call@{clients}"]
        lines.append(
            f"| call, nothing to search | {clients} | {lwc['rps']:.0f} | {sdk['rps']:.0f} "
            f"| {lwc['rps'] / sdk['rps']:.2f} | {lwc['median_ms']:.2f} / {lwc['p99_ms']:.2f} "
            f"| {sdk['median_ms']:.2f} / {sdk['p99_ms']:.2f} |"
        )
    lines += ["", f"target (lwc rps >= SDK rps at every level): {'MET' if met else 'MISSED'}"]
    return "\n".join(lines), met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a few seconds, same code paths")
    parser.add_argument("--json", action="store_true", help="results as JSON on stdout")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="bench_http.") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root / "home"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")])),
        }
        targets: list[Target] = []
        try:
            workspace = _setup_workspace(root, env)
            targets.append(_start_lwc(workspace, env, root / "lwc.err"))
            targets.append(_start_sdk(root, env, root / "sdk.err"))
            results = trio.run(_run_all, targets, plan)
        except BenchError as exc:
            print(f"bench_http: {exc}", file=sys.stderr)
            return 1
        finally:
            codes = {target.key: _stop(target) for target in targets if target.proc is not None}
        if codes.get("lwc") != 0:
            print(f"bench_http: lwc exited {codes.get('lwc')} on SIGINT", file=sys.stderr)
            return 1
    text, met = _report(results, plan)
    if args.json:
        print(json.dumps({"plan": plan.__dict__, "results": results, "target_met": met}))
    else:
        print(text)
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    raise SystemExit(main())
