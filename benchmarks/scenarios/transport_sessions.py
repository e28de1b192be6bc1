"""The transport scenario's sessions and measurements (blocking client, no event loop)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks import procstats
from benchmarks.fixtures import SMALL_QUERY
from benchmarks.messages import INITIALIZED, PROTOCOL, encode, initialize
from benchmarks.stdio import ServerGone, StdioClient

PROTOCOL_VERSION: Final = PROTOCOL
IO_TIMEOUT: Final = 60.0
"""Longest wait for any single answer or burst: every loop here is bounded by it."""
EXIT_TIMEOUT: Final = 10.0
SETTLE: Final = 0.3
"""Pause after the handshake before reading the idle RSS."""
BURST_SIZE: Final = 200
PING_BLOCK: Final = 100
CALL_BLOCK: Final = 50
"""Sequential tool calls per turn: servers take turns in blocks, so load hits all alike."""
WORKERS: Final = ("lwc", "same")
"""The servers whose tool does real memory work (the others echo)."""
QUERY: Final = SMALL_QUERY


@dataclass(frozen=True)
class Plan:
    cold_runs: int
    pings: int
    ping_warmup: int
    calls: int
    bursts: int
    busy_bursts: int


FULL: Final = Plan(cold_runs=15, pings=2000, ping_warmup=50, calls=500, bursts=5, busy_bursts=3)
QUICK: Final = Plan(cold_runs=3, pings=200, ping_warmup=10, calls=50, bursts=1, busy_bursts=1)


BenchError = ServerGone
"""A server did not behave; the run is void."""


# --------------------------------------------------------------------------- servers


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


# --------------------------------------------------------------------------- raw JSON lines


INITIALIZE: Final = encode(initialize(0, "bench_transport", PROTOCOL_VERSION))
INITIALIZED_LINE: Final = encode(INITIALIZED)


def _ping(rid: int) -> bytes:
    return encode({"jsonrpc": "2.0", "id": rid, "method": "ping"})


def _call(rid: int, server: Server, *, kind: str = "call") -> bytes:
    arguments = {
        "call": server.arguments,
        "bad": server.bad_arguments,
        "bare": server.bare_arguments,
    }[kind]
    params = {"name": server.tool, "arguments": arguments}
    return encode({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


@dataclass
class Conn:
    """One server session: the harness's client in its blocking mode (no event loop inside
    the timed sections), and which server it runs."""

    server: Server
    client: StdioClient

    def rss_kb(self) -> int:
        return procstats.rss_kb(self.client.pid)

    def cpu_ms(self) -> float:
        return procstats.cpu_s(self.client.pid) * 1000


@contextlib.contextmanager
def session(server: Server, cwd: Path, env: dict[str, str]) -> Iterator[Conn]:
    client = StdioClient(server.argv, env=env, cwd=cwd, name=server.key)
    try:
        yield Conn(server, client)
    finally:
        if client.proc.poll() is None:
            client.close(EXIT_TIMEOUT)


def _result(line: bytes, rid: int, who: str) -> dict[str, Any]:
    message = json.loads(line)
    if message.get("id") != rid or "result" not in message:
        raise BenchError(f"{who}: expected the result for id {rid}, got {line[:300]!r}")
    result: dict[str, Any] = message["result"]
    return result


def structured(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result's object: `structuredContent`, else its text block parsed."""
    content = result.get("structuredContent")
    if isinstance(content, dict):
        return content
    parsed: dict[str, Any] = json.loads(result["content"][0]["text"])
    return parsed


def _check_call(result: dict[str, Any], server: Server, *, kind: str = "call") -> None:
    if kind == "bad":
        # The floor echoes anything; the MCP servers must refuse the argument.
        if server.key != "floor" and result.get("isError") is not True:
            raise BenchError(f"{server.key}: bad arguments accepted: {json.dumps(result)[:300]}")
        return
    if kind == "bare" and server.key in WORKERS:
        memory = structured(result)["memory"]
        if memory.get("error", {}).get("code") != "store_not_found":
            raise BenchError(f"{server.key}: expected store_not_found: {json.dumps(memory)[:300]}")
        return
    if result.get("isError"):
        raise BenchError(f"{server.key}: tool call failed: {json.dumps(result)[:300]}")
    if server.key in WORKERS:
        memory = structured(result)["memory"]
        if memory.get("state") != "ready" or not memory.get("results"):
            raise BenchError(
                f"{server.key}: memory did not hit the Wiki: {json.dumps(memory)[:300]}"
            )


# --------------------------------------------------------------------------- measurements


def cold_starts(
    servers: Sequence[Server], runs: int, cwd: Path, env: dict[str, str]
) -> dict[str, list[float]]:
    """Spawn → initialize reply, in ms; servers interleaved, one unrecorded warm-up each."""
    times: dict[str, list[float]] = {s.key: [] for s in servers}
    for run in range(runs + 1):
        for server in servers:
            started = time.perf_counter()
            with session(server, cwd, env) as conn:
                conn.client.write(INITIALIZE)
                line = conn.client.read_line(started + IO_TIMEOUT)
                elapsed = (time.perf_counter() - started) * 1000
                result = _result(line, 0, server.key)
                if result.get("protocolVersion") != PROTOCOL_VERSION:
                    raise BenchError(f"{server.key}: negotiated {result.get('protocolVersion')}")
                code = conn.client.close(EXIT_TIMEOUT)
            if code != 0:
                raise BenchError(f"{server.key}: exit {code} at EOF: {conn.client.stderr_tail()}")
            if run:
                times[server.key].append(elapsed)
    return times


@dataclass
class Steady:
    idle_rss_kb: int = 0
    rss_after_kb: int = 0
    pings_ms: list[float] = field(default_factory=list)
    calls_ms: list[float] = field(default_factory=list)
    bursts_ms: list[float] = field(default_factory=list)
    busy_pings_ms: list[float] = field(default_factory=list)
    burst_cpu_ms: list[float] = field(default_factory=list)
    bad_bursts_ms: list[float] = field(default_factory=list)
    bare_bursts_ms: list[float] = field(default_factory=list)
    exit_code: int = 0
    stderr_bytes: int = 0
    next_id: int = 10


def _handshake(conn: Conn) -> None:
    conn.client.write(INITIALIZE)
    _result(conn.client.read_line(time.perf_counter() + IO_TIMEOUT), 0, conn.server.key)
    conn.client.write(INITIALIZED_LINE)


def _warm_up(conn: Conn) -> None:
    # The first tool call may import its engine lazily; that is not what a burst measures.
    conn.client.write(_call(1, conn.server))
    first = conn.client.read_line(time.perf_counter() + IO_TIMEOUT)
    _check_call(_result(first, 1, conn.server.key), conn.server)


def _pings(conn: Conn, out: Steady, count: int, record: bool) -> None:
    answers: list[tuple[int, bytes]] = []
    times: list[float] = []
    for _ in range(count):
        out.next_id += 1
        frame = _ping(out.next_id)
        started = time.perf_counter()
        conn.client.write(frame)
        line = conn.client.read_line(started + IO_TIMEOUT)
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
    lines = conn.client.burst(payload, BURST_SIZE, started + IO_TIMEOUT)
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


def _calls(conn: Conn, out: Steady, count: int) -> None:
    """`count` tool calls, one at a time: the round trip a host waits for."""
    answers: list[tuple[int, bytes]] = []
    for _ in range(count):
        out.next_id += 1
        frame = _call(out.next_id, conn.server)
        started = time.perf_counter()
        conn.client.write(frame)
        line = conn.client.read_line(started + IO_TIMEOUT)
        out.calls_ms.append((time.perf_counter() - started) * 1000)
        answers.append((out.next_id, line))
    for rid, line in answers:
        _check_call(_result(line, rid, conn.server.key), conn.server)


def _busy_pings(conn: Conn, out: Steady) -> None:
    """Pings one after another while a 200-call burst is served (what a host's keep-alive
    sees while an agent fires a burst). Each ping goes out once the previous one is
    answered; the burst's answers are read in between. A ping answered after the burst's
    last answer still counts: it waited behind all of it."""
    server = conn.server
    ids = range(out.next_id + 1, out.next_id + 1 + BURST_SIZE)
    out.next_id += BURST_SIZE
    conn.client.write(b"".join(_call(i, server) for i in ids))
    deadline = time.perf_counter() + IO_TIMEOUT
    calls: dict[int, bytes] = {}
    ping = 0
    while len(calls) < BURST_SIZE:
        ping += 1
        rid = f"busy-{ping}"
        started = time.perf_counter()
        conn.client.write(encode({"jsonrpc": "2.0", "id": rid, "method": "ping"}))
        while True:
            line = conn.client.read_line(deadline)
            if b'"busy-' in line[:80]:  # a ping's answer (the calls have integer ids)
                if json.loads(line).get("id") == rid:
                    break
                continue
            calls[json.loads(line)["id"]] = line
        out.busy_pings_ms.append((time.perf_counter() - started) * 1000)
    if set(calls) != set(ids):
        raise BenchError(f"{server.key}: busy burst answers do not match the {BURST_SIZE} ids")
    for i in ids:
        _check_call(_result(calls[i], i, server.key), server)


def steady_state(
    servers: Sequence[Server], plan: Plan, cwd: Path, env: dict[str, str]
) -> dict[str, Steady]:
    """One long session per server, all open at once; measurements alternate between them.

    The machine may be shared: taking pings, calls and bursts round-robin (in blocks of
    `PING_BLOCK` pings and `CALL_BLOCK` calls, one burst at a time) spreads any background
    load over all servers alike, so the ratios stay fair even when absolute figures drift.
    """
    results = {s.key: Steady() for s in servers}
    with contextlib.ExitStack() as stack:
        conns = [stack.enter_context(session(s, cwd, env)) for s in servers]
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
        for block in range(0, plan.calls, CALL_BLOCK):
            for conn in conns:
                _calls(conn, results[conn.server.key], min(CALL_BLOCK, plan.calls - block))
        for _ in range(plan.busy_bursts):
            for conn in conns:
                if conn.server.key in WORKERS:
                    _busy_pings(conn, results[conn.server.key])
        for _ in range(plan.bursts):
            for conn in conns:
                _burst(conn, results[conn.server.key])
            for conn in conns:
                _burst(conn, results[conn.server.key], kind="bad")
            for conn in conns:
                if conn.server.key in WORKERS:
                    _burst(conn, results[conn.server.key], kind="bare")
        for conn in conns:
            out = results[conn.server.key]
            out.rss_after_kb = conn.rss_kb()
            out.exit_code = conn.client.close(EXIT_TIMEOUT)
            out.stderr_bytes = len(conn.client.stderr)
            if out.exit_code != 0:
                raise BenchError(
                    f"{conn.server.key}: exit {out.exit_code} at EOF: {conn.client.stderr_tail()}"
                )
    return results
