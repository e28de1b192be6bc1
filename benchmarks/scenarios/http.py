"""HTTP transport benchmark: `lwc serve --mcp --transport http` beside the mcp SDK's servers.

Issues 5 and 11, "Performance". In one run, against

* lwc  - the real `lwc serve --mcp --transport http --path WS`, WS a temp workspace whose Wiki
         holds about 60 Pages (`fixtures.shared_wiki`), so every `lwc_explore` searches SQLite;
* same - the same work on the mcp SDK's `MCPServer`: a `lwc_explore` tool running lwc's path
         check and memory engine in `anyio.to_thread`, served as streamable HTTP in stateless
         JSON-response mode (its own uvicorn + Starlette stack): the peer for tool calls;
* sdk  - the same SDK stack with one echo tool: the peer for `ping`,

each written to a temp file and started as `sys.executable file.py PORT`, it measures requests
per second and median/p99 latency for `ping` and for one tool call with 1, 8 and 32 concurrent
clients. For diagnosis, not for the target, it also times calls with nothing to search
(`scope: "global"` with no global Wiki).
Each client is one keep-alive HTTP/1.1 connection sending its requests one after another; every
request carries the same headers (JSON content type, `Accept: application/json,
text/event-stream`, `MCP-Protocol-Version: 2025-11-25`). The load generator is this scenario:
one Trio thread and the harness's h11 client (`benchmarks.http.HttpConnection`), identical for
every server, so compare the columns rather than reading the absolute numbers as server
capacity. Only loopback traffic; every loop is bounded by a request count and every wait by
IO_TIMEOUT.

    scripts/bench http            # the full run recorded in docs/benchmarks.md
    scripts/bench http --quick    # a few seconds, same code paths
    scripts/bench http --workloads call --requests 1000 --rounds 3
                                  # while iterating: only the target's cells, each the
                                  # sum of 3 interleaved rounds (the echo SDK not started)
    scripts/bench http --json     # machine-readable results on stdout
    scripts/bench http --baseline DIR   # also lwc_trio from DIR (e.g. main), interleaved

Target (issue 11): at least 1.5x the same-work SDK server's tool-call throughput at every
concurrency level (issue 5's "at least an echo server" is retired: it compared real searches
with an echo).
Exit status: 0 when the run completed (`--check` makes a missed target exit 1), 1 when a
server misbehaved (no answer in time, wrong status or body, bad exit).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from benchmarks.fixtures import private_env, shared_wiki
from benchmarks.http import HttpConnection
from benchmarks.procstats import cpu_s, main_thread_cpu_s
from benchmarks.scenarios.http_targets import (
    FULL,
    IO_TIMEOUT,
    LEVELS,
    QUICK,
    BenchError,
    Plan,
    Target,
    start_lwc,
    start_same,
    start_sdk,
    stop,
    structured,
)
from benchmarks.stats import median, percentile
from benchmarks.table import loadavg, markdown_table

# --------------------------------------------------------------------------- the client


class Client:
    """One keep-alive connection (the harness's HttpConnection) that checks every answer."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.http = HttpConnection(target.host, target.port, target.path)

    async def post(self, message: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(message, separators=(",", ":")).encode()
        with trio.fail_after(IO_TIMEOUT):
            status, answer = await self.http.post(body)
        if status != 200:
            raise BenchError(f"{self.target.key}: HTTP {status}: {answer[:300]!r}")
        reply: dict[str, Any] = json.loads(answer)
        if reply.get("id") != message["id"] or "result" not in reply:
            raise BenchError(f"{self.target.key}: unexpected answer {answer[:300]!r}")
        result: dict[str, Any] = reply["result"]
        return result

    async def aclose(self) -> None:
        await self.http.aclose()


@dataclass
class Sample:
    latencies_ms: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float | None = None
    """The server's CPU time over the measured requests: steadier than latency on a shared
    machine, where other load adds waiting rather than work."""
    loop_cpu_s: float | None = None
    """The part of it on the main thread (the event loop: HTTP, protocol, dispatch); the
    rest is worker threads (the memory engine, the path check)."""

    def add(self, other: Sample) -> None:
        self.latencies_ms += other.latencies_ms
        self.wall_s += other.wall_s
        self.cpu_s = None if self.cpu_s is None or other.cpu_s is None else self.cpu_s + other.cpu_s
        self.loop_cpu_s = (
            None
            if self.loop_cpu_s is None or other.loop_cpu_s is None
            else self.loop_cpu_s + other.loop_cpu_s
        )

    def summary(self) -> dict[str, float]:
        out = {
            "rps": len(self.latencies_ms) / self.wall_s,
            "median_ms": median(self.latencies_ms),
            "p99_ms": percentile(self.latencies_ms, 0.99),
        }
        if self.cpu_s is not None:
            out["cpu_us_per_request"] = self.cpu_s / len(self.latencies_ms) * 1e6
        if self.loop_cpu_s is not None:
            out["loop_cpu_us_per_request"] = self.loop_cpu_s / len(self.latencies_ms) * 1e6
        return out


def _cpu(target: Target) -> tuple[float, float] | None:
    """(all threads, main thread) CPU seconds of the server so far; None without /proc."""
    try:
        if target.proc is None:
            return None
        return cpu_s(target.proc.pid), main_thread_cpu_s(target.proc.pid)
    except OSError:
        return None


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
        cpu_before = _cpu(target)
        go.set()
    sample.wall_s = time.perf_counter() - started
    cpu_after = _cpu(target)
    if cpu_before is not None and cpu_after is not None:
        sample.cpu_s = cpu_after[0] - cpu_before[0]
        sample.loop_cpu_s = cpu_after[1] - cpu_before[1]
    return sample


def _check_bare(result: dict[str, Any]) -> None:
    memory = structured(result).get("memory", {})
    if memory.get("error", {}).get("code") != "store_not_found":
        raise BenchError(f"lwc: expected store_not_found: {json.dumps(result)[:300]}")


WORKLOADS: Final = ("ping", "call", "bare")


async def _run_all(
    targets: list[Target], plan: Plan, workloads: Sequence[str] = WORKLOADS, rounds: int = 1
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for workload in workloads:
        for clients in LEVELS:
            samples: dict[str, Sample] = {}
            # Servers interleaved per level (and per round), so drift on the machine hits
            # them alike; a cell's figures are over all its rounds.
            for _ in range(rounds):
                for target in targets:
                    if workload == "bare" and target.bare_call is None:
                        continue
                    sample = await _measure(target, workload, clients, plan)
                    samples.setdefault(target.key, Sample(cpu_s=0.0, loop_cpu_s=0.0)).add(sample)
            for key, sample in samples.items():
                results.setdefault(key, {})[f"{workload}@{clients}"] = sample.summary()
    return results


# --------------------------------------------------------------------------- report


CALL_TARGET: Final = 1.5
"""lwc's tool-call throughput over the same-work SDK server's, at every level (issue 11)."""


def _row(label: str, clients: int, lwc: dict[str, float], base: dict[str, float]) -> list[str]:
    return [
        label,
        str(clients),
        f"{lwc['rps']:.0f}",
        f"{base['rps']:.0f}",
        f"{lwc['rps'] / base['rps']:.2f}",
        f"{lwc['median_ms']:.2f} / {lwc['p99_ms']:.2f}",
        f"{base['median_ms']:.2f} / {base['p99_ms']:.2f}",
        _cpu_cell(lwc, base),
    ]


def _report(results: dict[str, Any], plan: Plan, rounds: int = 1) -> tuple[str, bool | None]:
    measured = set(results["lwc"])
    rows = []
    if "ping@1" in measured:
        rows += [_row("ping (vs echo SDK)", n, *_pair(results, "sdk", "ping", n)) for n in LEVELS]
    met: bool | None = None
    if "call@1" in measured:
        met = True
        for clients in LEVELS:
            lwc, same = _pair(results, "same", "call", clients)
            met = met and lwc["rps"] / same["rps"] >= CALL_TARGET
            rows.append(_row("call (vs same work)", clients, lwc, same))
    # Not part of the target: both servers' cost of a valid call with nothing to search, and
    # the echo SDK's tool call (the floor of its stack), for reference.
    if "bare@1" in measured:
        rows += [
            _row("call, nothing to search", n, *_pair(results, "same", "bare", n)) for n in LEVELS
        ]
    if "call@1" in measured and "sdk" in results:
        rows += [_row("call (vs echo SDK)", n, *_pair(results, "sdk", "call", n)) for n in LEVELS]
    headers = ["workload", "clients", "lwc rps", "peer rps", "lwc/peer"]
    headers += ["lwc median / p99 ms", "peer median / p99 ms", "CPU µs/request (loop) lwc / peer"]
    per_cell = f"{plan.requests} requests" + (f" x {rounds} rounds" if rounds > 1 else "")
    lines = [
        f"bench http: {per_cell} per cell; python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, "
        f"load {loadavg()}",
        "",
        markdown_table(headers, rows, align="lrrrrrrr"),
    ]
    if met is not None:
        lines += [
            "",
            f"target (lwc tool-call rps >= {CALL_TARGET}x the same-work SDK's at every level): "
            f"{'MET' if met else 'MISSED'}",
        ]
    if "base" in results:
        lines += ["", _baseline_table(results)]
    return "\n".join(lines), met


def _pair(
    results: dict[str, Any], peer: str, workload: str, clients: int
) -> tuple[dict[str, float], dict[str, float]]:
    key = f"{workload}@{clients}"
    return results["lwc"][key], results[peer][key]


def _cpu_cell(*samples: dict[str, float]) -> str:
    """Each server's CPU per request, its event-loop thread's share in parentheses."""
    cells = []
    for s in samples:
        cell = f"{s['cpu_us_per_request']:.0f}" if "cpu_us_per_request" in s else "n/a"
        if "loop_cpu_us_per_request" in s:
            cell += f" ({s['loop_cpu_us_per_request']:.0f})"
        cells.append(cell)
    return " / ".join(cells)


def _baseline_table(results: dict[str, Any]) -> str:
    """This checkout against `--baseline`, same workloads, with server CPU per request."""
    rows = []
    for workload in WORKLOADS:
        for clients in LEVELS:
            key = f"{workload}@{clients}"
            if key not in results["lwc"]:
                continue
            lwc, base = results["lwc"][key], results["base"][key]
            label = "call, nothing to search" if workload == "bare" else workload
            rows.append(_row(label, clients, lwc, base))
    headers = ["workload", "clients", "lwc rps", "baseline rps", "lwc/baseline"]
    headers += [
        "lwc median / p99 ms",
        "baseline median / p99 ms",
        "CPU µs/request (loop) lwc / base",
    ]
    return markdown_table(headers, rows, align="lrrrrrrr")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a few seconds, same code paths")
    parser.add_argument("--json", action="store_true", help="results as JSON on stdout")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="also lwc_trio from DIR")
    parser.add_argument(
        "--workloads",
        type=_workloads,
        default=WORKLOADS,
        metavar="LIST",
        help="comma-separated subset of ping,call,bare (default: all)",
    )
    parser.add_argument("--requests", type=int, metavar="N", help="requests per cell and round")
    parser.add_argument(
        "--rounds", type=int, default=1, metavar="K", help="interleaved rounds per cell"
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.requests is not None:
        plan = Plan(requests=max(args.requests, 1), warmup=plan.warmup)
    rounds = max(args.rounds, 1)
    # The echo SDK is the peer for ping, and a reference row for calls only with ping.
    with_sdk = "ping" in args.workloads
    with tempfile.TemporaryDirectory(prefix="bench_http.") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        env = private_env(root / "home")
        targets: list[Target] = []
        try:
            workspace = shared_wiki(root, env, IO_TIMEOUT)
            targets.append(start_lwc(workspace, env))
            targets.append(start_same(root, env, workspace))
            if args.baseline is not None:
                base = args.baseline.resolve()
                targets.append(start_lwc(workspace, env, key="base", source=base))
            if with_sdk:
                targets.append(start_sdk(root, env))
            results = trio.run(_run_all, targets, plan, args.workloads, rounds)
        except (BenchError, RuntimeError) as exc:
            print(f"bench http: {exc}", file=sys.stderr)
            return 1
        finally:
            codes = {target.key: stop(target) for target in targets if target.proc is not None}
        for key in ("lwc", "base"):
            if key in codes and codes[key] != 0:
                print(f"bench http: {key} exited {codes[key]} on SIGINT", file=sys.stderr)
                return 1
    text, met = _report(results, plan, rounds)
    if args.json:
        out = {"plan": plan.__dict__, "rounds": rounds, "results": results, "target_met": met}
        print(json.dumps(out))
    else:
        print(text)
    return 1 if args.check and met is False else 0


def _workloads(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [name for name in chosen if name not in WORKLOADS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"choose from {','.join(WORKLOADS)}")
    # Always measured in the same order, whatever order they were given in.
    return tuple(name for name in WORKLOADS if name in chosen)
