"""Transport benchmark: `lwc serve --mcp` against the mcp SDK's own server, over stdio.

Issue 2, "Performance". In one run, against

* lwc    - the real `lwc serve --mcp --path WS`, WS a temp workspace with an initialized Wiki
           holding one Page, so every `lwc_explore` (mode memory) reads a real SQLite store;
* sdk    - a minimal echo-tool server written with the SDK's high-level `MCPServer`, written to
           a temp file and started as `sys.executable file.py`;
* floor  - a bare Trio echo loop (no MCP library at all), for reference,

it measures (1) process start -> initialize reply, (2) sequential ping round trips, (3) a burst of
200 `tools/call` requests written at once, until all 200 answers are in, and (4) the idle RSS of
the server after the handshake. For diagnosis it also reports the server CPU a burst took, a
burst of 200 calls the tool refuses at argument validation (transport + dispatch only), and for
lwc a burst of 200 valid calls with nothing to search (`scope: "global"`, no global Wiki): every
actor, the path check and the plane's store lookup, but no SQLite search.
Every server gets byte-identical JSON lines (protocol 2025-11-25, where `ping` is still a plain
request) written by this script on raw pipes - no MCP client library, so client overhead does
not dominate. Sessions are measured round-robin so background load hits every server alike.
Answers are validated after each timed section, never inside it.

    python scripts/bench_transport.py            # the full run recorded in docs/benchmarks.md
    python scripts/bench_transport.py --quick    # ~10 s, same code paths (for tests)
    python scripts/bench_transport.py --json     # machine-readable results on stdout

Exit status: 0 when the run completed (targets may FAIL; `--check` turns a FAIL into exit 1),
1 when a server misbehaved (no answer in time, wrong answer, bad exit).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

PROTOCOL_VERSION: Final = "2025-11-25"
IO_TIMEOUT: Final = 60.0
"""Longest wait for any single answer or burst: every loop here is bounded by it."""
EXIT_TIMEOUT: Final = 10.0
SETTLE: Final = 0.3
"""Pause after the handshake before reading the idle RSS."""
BURST_SIZE: Final = 200
PING_BLOCK: Final = 100
QUERY: Final = "login tokens"

# Targets from issue 2: ratios lwc/SDK in the same run, and an absolute RSS ceiling.
TARGETS: Final = {
    "cold_start_ms": 0.6,
    "ping_median_ms": 0.35,
    "burst_ms": 0.25,
}
RSS_LIMIT_MB: Final = 50.0


@dataclass(frozen=True)
class Plan:
    cold_runs: int
    pings: int
    ping_warmup: int
    bursts: int


FULL: Final = Plan(cold_runs=15, pings=2000, ping_warmup=50, bursts=5)
QUICK: Final = Plan(cold_runs=3, pings=200, ping_warmup=10, bursts=1)


class BenchError(Exception):
    """A server did not behave; the run is void."""


# --------------------------------------------------------------------------- servers

SDK_SERVER: Final = '''\
"""Minimal echo-tool MCP server on the mcp SDK's high-level API (bench_transport.py)."""
from mcp.server import MCPServer

mcp = MCPServer("echo")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    mcp.run("stdio")
'''

FLOOR_SERVER: Final = '''\
"""A bare Trio echo loop over stdio: the floor any Trio server pays (bench_transport.py)."""
import json
import os

import trio


def answer(msg):
    method = msg.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "floor", "version": "0"},
        }
    elif method == "tools/call":
        text = str(msg["params"]["arguments"]["text"])
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        result = {}
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


async def main():
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    pending = b""
    while data := await stdin.receive_some(65536):
        *lines, pending = (pending + data).split(b"\\n")
        out = [
            json.dumps(answer(m), separators=(",", ":")).encode() + b"\\n"
            for m in map(json.loads, filter(bytes.strip, lines))
            if "id" in m
        ]
        if out:
            await stdout.send_all(b"".join(out))


trio.run(main)
'''


@dataclass(frozen=True)
class Server:
    key: str
    label: str
    argv: list[str]
    tool: str
    arguments: dict[str, Any]
    bad_arguments: dict[str, Any]
    """Arguments the tool rejects: a burst of these costs transport + dispatch + validation only."""
    bare_arguments: dict[str, Any]
    """Valid arguments with no work for the tool's engine (lwc: a scope with no Wiki)."""


def _lwc_argv(workspace: Path) -> list[str]:
    # The console script next to this interpreter is what hosts start; fall back to -m.
    script = Path(sys.executable).parent / "lwc"
    if not script.exists():
        found = shutil.which("lwc")
        script = Path(found) if found else script
    head = [str(script)] if script.exists() else [sys.executable, "-m", "lwc_trio"]
    return [*head, "serve", "--mcp", "--path", str(workspace)]


def _setup(root: Path, env: dict[str, str]) -> tuple[Path, Path, Path]:
    """Create the workspace with a real Wiki, and the two comparison servers."""
    workspace = root / "ws"
    workspace.mkdir()
    page = root / "auth.md"
    page.write_text(
        "# Auth flow\n\nLogin uses short-lived access tokens; refresh tokens rotate on use.\n"
    )
    lwc = [sys.executable, "-m", "lwc_trio"]
    put = ["page", "put", "auth-flow", "--title", "Auth flow", "--file", str(page)]
    steps = [[*lwc, "init"], [*lwc, *put, "--summary", "How login and tokens work"]]
    for argv in steps:
        done = subprocess.run(
            argv, cwd=workspace, env=env, capture_output=True, timeout=IO_TIMEOUT, check=False
        )
        if done.returncode != 0:
            raise BenchError(f"{' '.join(argv[2:4])} failed: {done.stderr.decode()[-500:]}")
    sdk = root / "sdk_echo_server.py"
    sdk.write_text(SDK_SERVER)
    floor = root / "trio_floor_server.py"
    floor.write_text(FLOOR_SERVER)
    return workspace, sdk, floor


# --------------------------------------------------------------------------- raw JSON lines


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


INITIALIZE: Final = _line(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "bench_transport", "version": "1"},
        },
    }
)
INITIALIZED: Final = _line({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _ping(rid: int) -> bytes:
    return _line({"jsonrpc": "2.0", "id": rid, "method": "ping"})


def _call(rid: int, server: Server, *, kind: str = "call") -> bytes:
    arguments = {
        "call": server.arguments,
        "bad": server.bad_arguments,
        "bare": server.bare_arguments,
    }[kind]
    params = {"name": server.tool, "arguments": arguments}
    return _line({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


class Conn:
    """One server process driven over its stdin/stdout pipes."""

    def __init__(self, server: Server, cwd: Path, env: dict[str, str], errlog: Path) -> None:
        self.server = server
        self._err = errlog.open("wb")
        self.proc = subprocess.Popen(
            server.argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.errlog = errlog
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        os.set_blocking(self.rfd, False)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.rfd, selectors.EVENT_READ)
        self.buf = bytearray()

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.wfd, view) :]

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.perf_counter()
        if remaining <= 0 or not self.sel.select(remaining):
            raise BenchError(f"{self.server.key}: no answer within {IO_TIMEOUT:.0f} s")
        chunk = os.read(self.rfd, 1 << 20)
        if not chunk:
            raise BenchError(f"{self.server.key}: stdout closed; stderr: {self.stderr_tail()}")
        self.buf += chunk

    def read_line(self, deadline: float) -> bytes:
        while (nl := self.buf.find(b"\n")) < 0:
            self._fill(deadline)
        line = bytes(self.buf[:nl])
        del self.buf[: nl + 1]
        return line

    def burst(self, payload: bytes, count: int, deadline: float) -> list[bytes]:
        """Write `payload` while reading, until `count` lines arrived; returns them."""
        sel = selectors.DefaultSelector()
        os.set_blocking(self.wfd, False)
        view = memoryview(payload)
        sel.register(self.wfd, selectors.EVENT_WRITE)
        sel.register(self.rfd, selectors.EVENT_READ)
        got = self.buf.count(b"\n")
        try:
            while got < count:
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    raise BenchError(f"{self.server.key}: burst got {got}/{count} answers")
                for key, _ in sel.select(remaining):
                    if key.fd == self.wfd:
                        view = view[os.write(self.wfd, view[:65536]) :]
                        if not view:
                            sel.unregister(self.wfd)
                    else:
                        chunk = os.read(self.rfd, 1 << 20)
                        if not chunk:
                            raise BenchError(f"{self.server.key}: stdout closed in burst")
                        got += chunk.count(b"\n")
                        self.buf += chunk
        finally:
            sel.close()
            os.set_blocking(self.wfd, True)
        lines = bytes(self.buf).split(b"\n")
        self.buf = bytearray(lines.pop())
        return lines

    def rss_kb(self) -> int:
        for row in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if row.startswith("VmRSS:"):
                return int(row.split()[1])
        raise BenchError(f"{self.server.key}: no VmRSS in /proc/{self.proc.pid}/status")

    def cpu_ms(self) -> float:
        """User + system CPU the server has used so far, all threads (clock-tick resolution)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")

    def stderr_tail(self) -> str:
        self._err.flush()
        return self.errlog.read_bytes()[-800:].decode(errors="replace")

    def close(self) -> int:
        """Close stdin (the normal end of a session) and reap the process."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            code = self.proc.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = -9
        self.sel.close()
        self.proc.stdout.close()  # type: ignore[union-attr]
        self._err.close()
        return code


@contextlib.contextmanager
def session(server: Server, cwd: Path, env: dict[str, str], errlog: Path) -> Iterator[Conn]:
    conn = Conn(server, cwd, env, errlog)
    try:
        yield conn
    finally:
        if conn.proc.poll() is None:
            conn.close()


def _result(line: bytes, rid: int, who: str) -> dict[str, Any]:
    message = json.loads(line)
    if message.get("id") != rid or "result" not in message:
        raise BenchError(f"{who}: expected the result for id {rid}, got {line[:300]!r}")
    result: dict[str, Any] = message["result"]
    return result


def _check_call(result: dict[str, Any], server: Server, *, kind: str = "call") -> None:
    if kind == "bad":
        # The floor echoes anything; the MCP servers must refuse the argument.
        if server.key != "floor" and result.get("isError") is not True:
            raise BenchError(f"{server.key}: bad arguments accepted: {json.dumps(result)[:300]}")
        return
    if kind == "bare" and server.key == "lwc":
        memory = result["structuredContent"]["memory"]
        if memory.get("error", {}).get("code") != "store_not_found":
            raise BenchError(f"lwc: expected store_not_found: {json.dumps(memory)[:300]}")
        return
    if result.get("isError") is not False:
        raise BenchError(f"{server.key}: tool call failed: {json.dumps(result)[:300]}")
    if server.key == "lwc":
        memory = result["structuredContent"]["memory"]
        if memory.get("state") != "ready" or not memory.get("results"):
            raise BenchError(f"lwc: memory did not hit the Wiki: {json.dumps(memory)[:300]}")


# --------------------------------------------------------------------------- measurements


def cold_starts(
    servers: Sequence[Server], runs: int, cwd: Path, env: dict[str, str], logs: Path
) -> dict[str, list[float]]:
    """Spawn → initialize reply, in ms; servers interleaved, one unrecorded warm-up each."""
    times: dict[str, list[float]] = {s.key: [] for s in servers}
    for run in range(runs + 1):
        for server in servers:
            errlog = logs / f"{server.key}-cold-{run}.err"
            started = time.perf_counter()
            with session(server, cwd, env, errlog) as conn:
                conn.send(INITIALIZE)
                line = conn.read_line(started + IO_TIMEOUT)
                elapsed = (time.perf_counter() - started) * 1000
                result = _result(line, 0, server.key)
                if result.get("protocolVersion") != PROTOCOL_VERSION:
                    raise BenchError(f"{server.key}: negotiated {result.get('protocolVersion')}")
                code = conn.close()
            if code != 0:
                raise BenchError(f"{server.key}: exit {code} at EOF: {conn.stderr_tail()}")
            if run:
                times[server.key].append(elapsed)
    return times


@dataclass
class Steady:
    idle_rss_kb: int = 0
    rss_after_kb: int = 0
    pings_ms: list[float] = field(default_factory=list)
    bursts_ms: list[float] = field(default_factory=list)
    burst_cpu_ms: list[float] = field(default_factory=list)
    bad_bursts_ms: list[float] = field(default_factory=list)
    bare_bursts_ms: list[float] = field(default_factory=list)
    exit_code: int = 0
    stderr_bytes: int = 0
    next_id: int = 10


def _handshake(conn: Conn) -> None:
    conn.send(INITIALIZE)
    _result(conn.read_line(time.perf_counter() + IO_TIMEOUT), 0, conn.server.key)
    conn.send(INITIALIZED)


def _warm_up(conn: Conn) -> None:
    # The first tool call may import its engine lazily; that is not what a burst measures.
    conn.send(_call(1, conn.server))
    first = conn.read_line(time.perf_counter() + IO_TIMEOUT)
    _check_call(_result(first, 1, conn.server.key), conn.server)


def _pings(conn: Conn, out: Steady, count: int, record: bool) -> None:
    answers: list[tuple[int, bytes]] = []
    times: list[float] = []
    for _ in range(count):
        out.next_id += 1
        frame = _ping(out.next_id)
        started = time.perf_counter()
        conn.send(frame)
        line = conn.read_line(started + IO_TIMEOUT)
        times.append((time.perf_counter() - started) * 1000)
        answers.append((out.next_id, line))
    for rid, line in answers:
        if _result(line, rid, conn.server.key) != {}:
            raise BenchError(f"{conn.server.key}: ping {rid} answered {line[:200]!r}")
    if record:
        out.pings_ms += times


def _burst(conn: Conn, out: Steady, *, kind: str = "call") -> None:
    server = conn.server
    ids = range(out.next_id + 1, out.next_id + 1 + BURST_SIZE)
    out.next_id += BURST_SIZE
    payload = b"".join(_call(i, server, kind=kind) for i in ids)
    cpu = conn.cpu_ms()
    started = time.perf_counter()
    lines = conn.burst(payload, BURST_SIZE, started + IO_TIMEOUT)
    elapsed = (time.perf_counter() - started) * 1000
    if kind == "bad":
        out.bad_bursts_ms.append(elapsed)
    elif kind == "bare":
        out.bare_bursts_ms.append(elapsed)
    else:
        out.bursts_ms.append(elapsed)
        out.burst_cpu_ms.append(conn.cpu_ms() - cpu)
    by_id = {json.loads(line).get("id"): line for line in lines}
    if set(by_id) != set(ids):
        raise BenchError(f"{server.key}: burst answers do not match the {BURST_SIZE} ids")
    for i in ids:
        _check_call(_result(by_id[i], i, server.key), server, kind=kind)


def steady_state(
    servers: Sequence[Server], plan: Plan, cwd: Path, env: dict[str, str], logs: Path
) -> dict[str, Steady]:
    """One long session per server, all open at once; measurements alternate between them.

    The machine may be shared: taking pings and bursts round-robin (in blocks of
    `PING_BLOCK` pings, one burst at a time) spreads any background load over all servers
    alike, so the lwc/SDK ratios stay fair even when absolute figures drift.
    """
    results = {s.key: Steady() for s in servers}
    with contextlib.ExitStack() as stack:
        conns = [
            stack.enter_context(session(s, cwd, env, logs / f"{s.key}-session.err"))
            for s in servers
        ]
        for conn in conns:
            _handshake(conn)
        time.sleep(SETTLE)
        for conn in conns:
            results[conn.server.key].idle_rss_kb = conn.rss_kb()
        for conn in conns:
            _warm_up(conn)
            _pings(conn, results[conn.server.key], plan.ping_warmup, record=False)
        for block in range(0, plan.pings, PING_BLOCK):
            for conn in conns:
                _pings(conn, results[conn.server.key], min(PING_BLOCK, plan.pings - block), True)
        for _ in range(plan.bursts):
            for conn in conns:
                _burst(conn, results[conn.server.key])
            for conn in conns:
                _burst(conn, results[conn.server.key], kind="bad")
            for conn in conns:
                if conn.server.key == "lwc":
                    _burst(conn, results[conn.server.key], kind="bare")
        for conn in conns:
            out = results[conn.server.key]
            out.rss_after_kb = conn.rss_kb()
            out.exit_code = conn.close()
            out.stderr_bytes = conn.errlog.stat().st_size
            if out.exit_code != 0:
                raise BenchError(
                    f"{conn.server.key}: exit {out.exit_code} at EOF: {conn.stderr_tail()}"
                )
    return results


def _p99(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 99 // 100) - 1)]  # nearest rank


def _mb(kb: int) -> float:
    return kb * 1024 / 1e6


# --------------------------------------------------------------------------- report


def _machine() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for row in Path("/proc/cpuinfo").read_text().splitlines():
            if row.startswith("model name"):
                cpu = row.split(":", 1)[1].strip()
                break
    versions = {}
    for dist in ("mcp", "trio", "lwc-trio", "pydantic"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version

            versions[dist] = version(dist)
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": len(os.sched_getaffinity(0)),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
    }


def summarize(
    servers: Sequence[Server], cold: dict[str, list[float]], steady: dict[str, Steady]
) -> dict[str, Any]:
    figures: dict[str, dict[str, float]] = {}
    for server in servers:
        s = steady[server.key]
        figures[server.key] = {
            "cold_start_ms": statistics.median(cold[server.key]),
            "ping_median_ms": statistics.median(s.pings_ms),
            "ping_p99_ms": _p99(s.pings_ms),
            "burst_ms": statistics.median(s.bursts_ms),
            "burst_cpu_ms": statistics.mean(s.burst_cpu_ms),
            "bad_burst_ms": statistics.median(s.bad_bursts_ms),
            "bare_burst_ms": statistics.median(s.bare_bursts_ms) if s.bare_bursts_ms else None,
            "idle_rss_mb": _mb(s.idle_rss_kb),
            "rss_after_burst_mb": _mb(s.rss_after_kb),
        }
    lwc, sdk = figures["lwc"], figures["sdk"]
    checks = []
    for metric, target in TARGETS.items():
        ratio = lwc[metric] / sdk[metric]
        checks.append({"metric": metric, "ratio": ratio, "target": target, "pass": ratio <= target})
    checks.append(
        {
            "metric": "idle_rss_mb",
            "value": lwc["idle_rss_mb"],
            "target": RSS_LIMIT_MB,
            "pass": lwc["idle_rss_mb"] <= RSS_LIMIT_MB,
        }
    )
    return {"figures": figures, "checks": checks}


ROWS: Final = (
    # key, label, unit, decimals, how many
    ("cold_start_ms", "cold start → initialize reply", "ms", 1, "median of {cold_runs}"),
    ("ping_median_ms", "ping round trip, median", "ms", 3, "{pings} sequential"),
    ("ping_p99_ms", "ping round trip, p99", "ms", 3, "{pings} sequential"),
    ("burst_ms", "200 concurrent tools/call", "ms", 1, "median of {bursts} bursts"),
    ("burst_cpu_ms", "  server CPU for that burst", "ms", 0, "mean, all threads"),
    ("bad_burst_ms", "200 tools/call, invalid argument", "ms", 1, "median of {bursts} bursts"),
    ("bare_burst_ms", "200 tools/call, nothing to search", "ms", 1, "median of {bursts} bursts"),
    ("idle_rss_mb", "idle RSS after handshake", "MB", 1, "VmRSS"),
    ("rss_after_burst_mb", "RSS after the bursts", "MB", 1, "VmRSS"),
)


RATIO_BASE: Final = {"bare_burst_ms": "burst_ms"}


def render(report: dict[str, Any]) -> str:
    figures = report["figures"]
    keys = [k for k in ("lwc", "sdk", "floor") if k in figures]
    plan = report["plan"]
    checks = {c["metric"]: c for c in report["checks"]}
    head = ["metric", "n", *keys, "lwc/SDK", "target", "result"]
    rows = [head]
    for metric, label, unit, decimals, n in ROWS:
        cells = [f"{label} ({unit})", n.format(**plan)]
        for key in keys:
            value = figures[key][metric]
            cells.append("—" if value is None else f"{value:.{decimals}f}")
        # lwc's no-search burst is compared with the SDK's ordinary echo burst.
        sdk = figures["sdk"][RATIO_BASE.get(metric, metric)]
        cells.append(f"{figures['lwc'][metric] / sdk:.2f}×" if sdk else "—")
        check = checks.get(metric)
        if check is None:
            cells += ["—", "—"]
        elif "ratio" in check:
            cells += [f"≤ {check['target']:.2f}×", "PASS" if check["pass"] else "FAIL"]
        else:
            cells += [f"≤ {check['target']:.0f} MB", "PASS" if check["pass"] else "FAIL"]
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]

    def fmt(row: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    lines = [fmt(rows[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += [fmt(r) for r in rows[1:]]
    passed = sum(c["pass"] for c in report["checks"])
    lines.append("")
    lines.append(f"targets met: {passed}/{len(report['checks'])}")
    return "\n".join(lines)


def _server_notes(report: dict[str, Any]) -> str:
    labels = "\n".join(f"  {k:<6}{v}" for k, v in report["servers"].items())
    m = report["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    return (
        f"servers:\n{labels}\n"
        f"machine: {m['nproc']} CPUs ({m['cpu']}), Python {m['python']}, {m['platform']}\n"
        f"load average at the end of the run (1/5/15 min): {m['loadavg']}\n"
        f"versions: {versions}\ndate: {m['date']}"
    )


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run (used by the tests)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--no-floor", action="store_true", help="skip the bare Trio floor")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target FAILs")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL

    with tempfile.TemporaryDirectory(prefix="lwc-bench-") as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        logs = root / "logs"
        logs.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LWC_")}
        # A private HOME: no global Wiki of the user leaks into (or is touched by) the run.
        env["HOME"] = str(home)
        try:
            workspace, sdk_file, floor_file = _setup(root, env)
            servers = [
                Server(
                    "lwc",
                    "lwc serve --mcp --path WS (lwc_explore, mode memory, real Wiki)",
                    _lwc_argv(workspace),
                    "lwc_explore",
                    {"query": QUERY, "projectPath": str(workspace), "mode": "memory"},
                    # "3" is not an integer (SPEC §2): refused before any path or plane work.
                    {"query": QUERY, "projectPath": str(workspace), "maxDocuments": "3"},
                    # The private HOME has no global Wiki: path check and store lookup only.
                    {"query": QUERY, "projectPath": str(workspace), "scope": "global"},
                ),
                Server(
                    "sdk",
                    "mcp SDK MCPServer echo tool (python sdk_echo_server.py)",
                    [sys.executable, str(sdk_file)],
                    "echo",
                    {"text": QUERY},
                    {"text": 3},  # pydantic refuses an int for a str parameter
                    {"text": QUERY},
                ),
            ]
            if not args.no_floor:
                servers.append(
                    Server(
                        "floor",
                        "bare Trio echo loop (python trio_floor_server.py)",
                        [sys.executable, str(floor_file)],
                        "echo",
                        {"text": QUERY},
                        {"text": 3},
                        {"text": QUERY},
                    )
                )
            cold = cold_starts(servers, plan.cold_runs, workspace, env, logs)
            steady = steady_state(servers, plan, workspace, env, logs)
        except BenchError as exc:
            print(f"bench_transport: {exc}", file=sys.stderr)
            return 1

    report = summarize(servers, cold, steady)
    report["plan"] = vars(plan) | {"burst_size": BURST_SIZE, "protocol": PROTOCOL_VERSION}
    report["servers"] = {s.key: s.label for s in servers}
    report["machine"] = _machine()
    report["raw"] = {
        s.key: {
            "cold_start_ms": cold[s.key],
            "bursts_ms": steady[s.key].bursts_ms,
            "stderr_bytes": steady[s.key].stderr_bytes,
        }
        for s in servers
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        title = "Transport (stdio): lwc vs the mcp SDK's MCPServer, same run"
        print(title + ("  [--quick]" if args.quick else ""))
        print()
        print(render(report))
        print()
        print(textwrap.dedent(_server_notes(report)))
    if args.check and not all(c["pass"] for c in report["checks"]):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
