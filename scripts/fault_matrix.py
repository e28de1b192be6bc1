#!/usr/bin/env python3
"""Fault matrix: plane isolation under every injected and real fault, in mode `all` (issue 7).

    python scripts/fault_matrix.py [--quick] [--json] [--binary PATH | --no-code]
                                   [--cases LIST] [--baseline N] [--keep]
                                   [--workspace DIR] [--lwc CMD] [--query TEXT]

Set-up as in `soak.py` (same fixture code): a temporary HOME and workspace, a project Wiki of
`--pages` Pages written with `lwc page put`, and the CodeGraph index of a copy of the
`lwc_trio` sources. Every case starts its OWN server,
`python -m lwc_trio serve --mcp --path WS --memory-timeout 1 --code-timeout 2`, and sends only
`lwc_explore` calls in mode `all` with one fixed query:

1. `--baseline` calls (default 6) with no fault: the first one is cold (it starts the
   CodeGraph child) and is not counted; the others give the no-fault baseline of each plane
   (`timings.memoryMs` / `timings.codeMs`, medians) and the reference answer of each plane.
2. The fault call. `LWC_FAULTS` cases use `PLANE=delay:0*N;PLANE=FAULT*1`, so exactly this
   call is faulted (`delay:0` answers normally). Child cases find the CodeGraph child via
   /proc (ppid == server pid) and SIGSTOP it just before the call, so the call is certainly in
   flight (sent, unanswered: the child answers a warm query in ~20 ms, faster than a signal
   can be aimed at "mid-work"); `sigkill` then SIGKILLs it 50 ms into the call, `sigstop`
   leaves it stopped for lwc's in-flight deadline. While the call is pending, `ping` is sent
   every 10 ms and timed.
3. The recovery call: the very next call, timed.

Measured per case: the time to the faulted plane's answer (its `timings` entry) and its error
code; the healthy plane's latency during the fault against its baseline; `ping` latency during
the fault (median and max); the recovery call's round trip. Checks ("behaviour"): the faulted
plane gives the expected code (`hang` → timeout, `raise` → internal, `crash` → crashed,
`garbage` → bad_response, `delay:S` → the normal answer about S later, SIGKILL →
`codegraph_crashed`, SIGSTOP → `codegraph_timeout`), the healthy plane's answer is identical
to its baseline answer, `partial` is right, the recovery call returns both planes' baseline
answers, the server exits 0 on stdin EOF and no CodeGraph process is left (a stopped or killed
child included). Targets ("timing", SPEC §6): the healthy plane answers within its own deadline
+ 50 ms, every `ping` < 5 ms, recovery on the very next call.

`--no-code` runs without the CodeGraph runtime: the code plane's normal answer is then
`unavailable` (runtime missing), `LWC_FAULTS` code faults still apply, child cases are left
out. `--cases` picks cases by name (`memory:hang,code:crash,sigkill,…`).

Against your own integration: `--workspace DIR` uses an existing workspace (its Wiki and, when
`DIR/.codegraph/codegraph.db` exists, its CodeGraph index) with your own environment (HOME,
PATH, `LWC_CODEGRAPH_BINARY`) instead of a generated one, and writes nothing; `--lwc CMD`
starts the server with CMD (for example `--lwc lwc`, the installed entry point) instead of
this interpreter's `-m lwc_trio`; `--query` sets the query (pick one your Wiki answers).

Exit 0 when every case passes, 1 otherwise, 2 on a set-up error.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import soak

MEMORY_TIMEOUT = 1.0
CODE_TIMEOUT = 2.0
DEADLINES = {"memory": MEMORY_TIMEOUT, "code": CODE_TIMEOUT}
DELAYS = {"memory": 0.5, "code": 1.0}
HEALTHY_MARGIN_MS = 50.0
PING_LIMIT_MS = 5.0
PING_EVERY = 0.010
QUERY = "cancel scope deadline timeout"
PLANE_KEY = {"memory": "memory", "code": "codeGraph"}
TIMING_KEY = {"memory": "memoryMs", "code": "codeMs"}
FAULTS = ("hang", "raise", "crash", "delay", "garbage")
CHILD_CASES = ("sigkill", "sigstop")
CHILD_KILL_AFTER = 0.05
"""SIGKILL this long after sending the call to the stopped child."""


def expected_code(plane: str, fault: str) -> str | None:
    """The faulted plane's error code (None: the normal answer)."""
    prefix = "memory" if plane == "memory" else "codegraph"
    return {
        "hang": f"{prefix}_timeout",
        "raise": f"{plane}_internal",
        "crash": f"{prefix}_crashed",
        "garbage": f"{prefix}_bad_response",
        "delay": None,
        "sigkill": "codegraph_crashed",
        "sigstop": "codegraph_timeout",
    }[fault]


def all_cases(has_code: bool) -> list[str]:
    cases = [f"{plane}:{fault}" for plane in ("memory", "code") for fault in FAULTS]
    return cases + (list(CHILD_CASES) if has_code else [])


class Workspace:
    """An existing workspace, run with the caller's own environment (`--workspace`)."""

    def __init__(self, ws: Path, has_code: bool, binary: str | None) -> None:
        self.ws = ws.resolve()
        self.has_code = has_code
        self.env = {k: v for k, v in os.environ.items() if k != "LWC_FAULTS"}
        if binary:
            self.env[soak.BINARY_ENV] = binary
        self.lwc = [sys.executable, "-m", "lwc_trio"]

    def serve_argv(self, extra: Sequence[str] = ()) -> list[str]:
        return [*self.lwc, "serve", "--mcp", "--path", str(self.ws), *extra]


class Case:
    """One row of the matrix."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name in CHILD_CASES:
            self.plane, self.fault = "code", name
        else:
            self.plane, _, self.fault = name.partition(":")
        self.healthy = "code" if self.plane == "memory" else "memory"

    def lwc_faults(self, baseline: int) -> str | None:
        if self.fault in CHILD_CASES:
            return None
        fault = f"delay:{DELAYS[self.plane]:g}" if self.fault == "delay" else self.fault
        return f"{self.plane}=delay:0*{baseline};{self.plane}={fault}*1"

    def label(self) -> str:
        if self.fault == "sigkill":
            return "SIGKILL CodeGraph child mid-call"
        if self.fault == "sigstop":
            return "SIGSTOP CodeGraph child mid-call"
        fault = f"delay:{DELAYS[self.plane]:g}" if self.fault == "delay" else self.fault
        return f"LWC_FAULTS {self.plane}={fault}"


def plane_code(obj: Any) -> str:
    """`ready`, `unavailable:<code>` or the error code of a plane object."""
    if not isinstance(obj, dict):
        return "?"
    if obj.get("state") == "error":
        return str(obj.get("error", {}).get("code"))
    if obj.get("state") == "unavailable":
        return f"unavailable:{obj.get('error', {}).get('code')}"
    return str(obj.get("state"))


async def run_case(
    case: Case, fx: soak.Fixture | Workspace, baseline_calls: int, query: str, log: Any
) -> dict[str, Any]:
    env = dict(fx.env)
    spec = case.lwc_faults(baseline_calls)
    if spec:
        env["LWC_FAULTS"] = spec
    argv = fx.serve_argv(
        ["--memory-timeout", f"{MEMORY_TIMEOUT:g}", "--code-timeout", f"{CODE_TIMEOUT:g}"]
    )
    row: dict[str, Any] = {"case": case.name, "label": case.label(), "problems": []}
    problems: list[str] = row["problems"]
    args = {"query": query, "projectPath": str(fx.ws), "mode": "all"}
    next_id = 100

    async with trio.open_nursery() as nursery:
        client = await soak.StdioClient.start(nursery, argv, env, fx.ws)
        try:
            await client.request(soak.initialize(1))

            async def explore() -> tuple[dict[str, Any], float]:
                nonlocal next_id
                next_id += 1
                response, took = await client.request(soak.tool_call(next_id, args))
                sc = response.get("result", {}).get("structuredContent")
                if not isinstance(sc, dict):
                    raise RuntimeError(f"no result: {str(response)[:300]}")
                return sc, took

            # 1. baseline (the first call is cold: it starts the CodeGraph child)
            base: list[dict[str, Any]] = []
            for _ in range(baseline_calls):
                sc, _took = await explore()
                base.append(sc)
            reference = {p: base[-1][PLANE_KEY[p]] for p in ("memory", "code")}
            for sc in base[1:]:
                for p in ("memory", "code"):
                    if sc[PLANE_KEY[p]] != reference[p]:
                        problems.append(f"baseline {p} answers differ")
            if plane_code(reference["memory"]) != "ready":
                problems.append(f"baseline memory not ready: {plane_code(reference['memory'])}")
            if fx.has_code and plane_code(reference["code"]) != "ready":
                problems.append(f"baseline code not ready: {plane_code(reference['code'])}")
            healthy_base = [sc["timings"][TIMING_KEY[case.healthy]] for sc in base[1:]]
            row["healthy_baseline_ms"] = statistics.median(healthy_base)
            child_before = [c["pid"] for c in soak.codegraph_children(client.pid)]

            # 2. the fault call, with pings every 10 ms while it is pending
            pings: list[float] = []
            done = trio.Event()
            fault_result: dict[str, Any] = {}

            async def pinger() -> None:
                nonlocal next_id
                while not done.is_set():
                    next_id += 1
                    response, took = await client.request(soak.ping(next_id))
                    if response.get("result") != {}:
                        problems.append(f"bad ping answer {response}")
                    pings.append(took)
                    await trio.sleep(PING_EVERY)

            if case.fault in CHILD_CASES and len(child_before) != 1:
                raise RuntimeError(f"expected one CodeGraph child, saw {child_before}")

            async def fault_call() -> None:
                nonlocal next_id
                try:
                    next_id += 1
                    slot = client.expect(next_id)
                    if case.fault in CHILD_CASES:
                        # Stopped first, so the call is certainly in flight (sent, unanswered)
                        # when the child is killed or left stopped; a child that answers in a
                        # few ms would otherwise race the signal.
                        row["signalled_pid"] = pid = child_before[0]
                        os.kill(pid, signal.SIGSTOP)
                    sent = await client.send(soak.tool_call(next_id, args))
                    if case.fault == "sigkill":
                        await trio.sleep(CHILD_KILL_AFTER)
                        if slot.event.is_set():
                            problems.append("answered although the child was stopped")
                        os.kill(pid, signal.SIGKILL)
                    response = await client.wait_slot(slot)
                    fault_result["sc"] = response["result"]["structuredContent"]
                    fault_result["took"] = slot.received - sent
                finally:
                    done.set()

            async with trio.open_nursery() as inner:
                inner.start_soon(fault_call)
                inner.start_soon(pinger)
            sc = fault_result["sc"]
            faulted, healthy = sc[PLANE_KEY[case.plane]], sc[PLANE_KEY[case.healthy]]
            row["fault_call_ms"] = soak.ms(fault_result["took"])
            row["faulted_ms"] = sc["timings"][TIMING_KEY[case.plane]]
            row["faulted_answer"] = plane_code(faulted)
            row["healthy_ms"] = sc["timings"][TIMING_KEY[case.healthy]]
            row["healthy_limit_ms"] = DEADLINES[case.healthy] * 1000 + HEALTHY_MARGIN_MS
            row["ping_n"] = len(pings)
            row["ping_p50_ms"] = soak.ms(statistics.median(pings)) if pings else None
            row["ping_max_ms"] = soak.ms(max(pings)) if pings else None
            want = expected_code(case.plane, case.fault)
            if want is None:
                if faulted != reference[case.plane]:
                    problems.append(f"delayed {case.plane} answer differs from its baseline")
                delay_ms = DELAYS[case.plane] * 1000
                if row["faulted_ms"] < delay_ms:
                    problems.append(f"delay answered after {row['faulted_ms']} ms < {delay_ms}")
            elif row["faulted_answer"] != want:
                problems.append(f"faulted plane answered {row['faulted_answer']}, want {want}")
            if healthy != reference[case.healthy]:
                problems.append(f"healthy {case.healthy} answer differs from its baseline")
            ready = sum(obj.get("state") == "ready" for obj in (faulted, healthy))
            if sc.get("partial") is not (ready == 1):
                problems.append(f"partial is {sc.get('partial')!r} with {ready} plane(s) ready")

            # 3. recovery: the very next call
            rec, took = await explore()
            row["recovery_ms"] = soak.ms(took)
            row["recovered"] = all(rec[PLANE_KEY[p]] == reference[p] for p in ("memory", "code"))
            if not row["recovered"]:
                got = {p: plane_code(rec[PLANE_KEY[p]]) for p in ("memory", "code")}
                problems.append(f"next call did not recover: {got}")
            children = soak.codegraph_children(client.pid)
            row["children_after"] = len(children)
            if fx.has_code and len(children) != 1:
                problems.append(f"{len(children)} CodeGraph children after recovery")
            if case.fault in CHILD_CASES:
                stat = soak.proc_stat(row["signalled_pid"])
                if stat is not None:
                    problems.append(f"signalled child {row['signalled_pid']} still there: {stat}")
            pgids = {c["pid"] for c in children} | set(child_before)
            row["exit_code"] = await client.finish()
            left = await soak.groups_after_exit(pgids)
            row["left_live"] = left["live"]
            if row["exit_code"] != 0:
                problems.append(f"exit code {row['exit_code']}")
            if left["live"] or left["gone_s"] is None:
                problems.append(f"CodeGraph processes left after exit: {left}")
            # Only the start-up announcement of LWC_FAULTS may reach stderr.
            stray = [
                ln
                for ln in bytes(client.stderr).splitlines()
                if ln.strip() and not (spec and ln.startswith(b"lwc: LWC_FAULTS active"))
            ]
            if stray:
                problems.append(f"unexpected stderr: {stray[:2]}")
        finally:
            client.kill()
            with trio.move_on_after(5):
                await client.process.wait()
            nursery.cancel_scope.cancel()

    row["behaviour_ok"] = not problems
    row["healthy_ok"] = row["healthy_ms"] <= row["healthy_limit_ms"]
    row["ping_ok"] = row["ping_max_ms"] is not None and row["ping_max_ms"] < PING_LIMIT_MS
    row["recovery_ok"] = bool(row["recovered"])
    row["pass"] = row["behaviour_ok"] and row["healthy_ok"] and row["ping_ok"]
    if log:
        log(
            f"{case.name}: {row['faulted_answer']} after {row['faulted_ms']} ms, healthy "
            f"{row['healthy_ms']} ms, ping max {row['ping_max_ms']} ms, "
            f"{'PASS' if row['pass'] else 'FAIL'} {problems}"
        )
    return row


async def matrix(
    cases: Sequence[Case], fx: soak.Fixture | Workspace, baseline: int, query: str, log: Any
) -> list[dict[str, Any]]:
    return [await run_case(case, fx, baseline, query, log) for case in cases]


def print_report(result: dict[str, Any]) -> None:
    print(
        f"lwc fault matrix: --memory-timeout {MEMORY_TIMEOUT:g} --code-timeout "
        f"{CODE_TIMEOUT:g}, mode all, {result['baseline']} baseline calls per case "
        f"(first one cold, not counted), CodeGraph {'on' if result['codegraph'] else 'off'}, "
        f"{result['elapsed_s']} s, load average at the end {result['loadavg']}"
    )
    print()
    headers = [
        "fault",
        "faulted plane → answer",
        "time to it (ms)",
        "healthy plane: baseline → during (ms)",
        "limit (ms)",
        "ping p50 / max (ms)",
        "next call (ms)",
        "recovered",
        "verdict",
    ]
    rows = []
    for r in result["rows"]:
        rows.append(
            [
                r["label"],
                f"{r['case'].split(':')[0] if ':' in r['case'] else 'code'} → "
                f"{r['faulted_answer']}",
                r["faulted_ms"],
                f"{r['case_healthy']} {r['healthy_baseline_ms']:g} → {r['healthy_ms']}",
                f"{r['healthy_limit_ms']:g}",
                f"{r['ping_p50_ms']} / {r['ping_max_ms']} (n={r['ping_n']})",
                r["recovery_ms"],
                "yes" if r["recovered"] else "NO",
                "PASS" if r["pass"] else "FAIL",
            ]
        )
    print(soak.markdown_table(headers, rows))
    print()
    for r in result["rows"]:
        for problem in r["problems"]:
            print(f"  {r['case']}: {problem}")
    s = result["summary"]
    print(
        f"behaviour: {s['behaviour']}; healthy plane within deadline + 50 ms: {s['healthy']}; "
        f"ping < 5 ms: {s['ping']}; recovery on the next call: {s['recovery']}"
    )
    print("verdict:", "PASS" if result["pass"] else "FAIL")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="lwc_trio fault matrix (issue 7)")
    p.add_argument("--quick", action="store_true", help="3 baseline calls, 20 pages")
    p.add_argument("--json", action="store_true")
    p.add_argument("--binary", default=None, help="CodeGraph platform binary")
    p.add_argument("--no-code", action="store_true", help="without the CodeGraph runtime")
    p.add_argument("--cases", default=None, help="comma-separated case names")
    p.add_argument("--baseline", type=int, default=None, help="baseline calls per case (≥ 2)")
    p.add_argument("--pages", type=int, default=None)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--keep", action="store_true")
    p.add_argument(
        "--source", type=Path, default=None, help="lwc_trio source tree to run (default: here)"
    )
    p.add_argument("--workspace", type=Path, default=None, help="an existing workspace")
    p.add_argument("--lwc", default=None, help="command that runs lwc (default: -m lwc_trio)")
    p.add_argument("--query", default=QUERY)
    args = p.parse_args(argv)
    if args.baseline is None:
        args.baseline = 3 if args.quick else 6
    if args.pages is None:
        args.pages = 20 if args.quick else 100
    args.baseline = max(2, args.baseline)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    binary = None if args.no_code else soak.find_binary(args.binary)
    if args.workspace is not None:
        # Your own project: CodeGraph counts as on when its index is there.
        has_code = not args.no_code and (args.workspace / ".codegraph/codegraph.db").is_file()
    else:
        has_code = binary is not None
        if not args.no_code and binary is None:
            print("fault_matrix: no CodeGraph binary (--binary, LWC_CODEGRAPH_BINARY); --no-code")
            return 2
    names = args.cases.split(",") if args.cases else all_cases(has_code)
    known = set(all_cases(True))
    if unknown := [n for n in names if n not in known]:
        print(f"fault_matrix: unknown case(s) {unknown}; known: {sorted(known)}", file=sys.stderr)
        return 2
    if not has_code and (child := [n for n in names if n in CHILD_CASES]):
        print(f"fault_matrix: {child} need the CodeGraph runtime", file=sys.stderr)
        return 2
    cases = [Case(n) for n in names]

    def log(text: str) -> None:
        if not args.json:
            print(f"[faults] {text}", file=sys.stderr, flush=True)

    lwc = shlex.split(args.lwc) if args.lwc else None
    started = time.perf_counter()
    if args.workspace is not None:
        if not args.workspace.is_dir():
            print(f"fault_matrix: no such workspace {args.workspace}", file=sys.stderr)
            return 2
        own = Workspace(args.workspace, has_code, binary)
        own.lwc = lwc or own.lwc
        rows = trio.run(matrix, cases, own, args.baseline, args.query, log)
    else:
        root = Path(tempfile.mkdtemp(prefix="lwc-faults-"))
        try:
            fx = soak.Fixture(root, binary, args.source)
            fx.lwc = lwc or fx.lwc
            try:
                fx.build(args.pages, args.seed, log)
            except (RuntimeError, OSError) as exc:
                print(f"fault_matrix: set-up failed: {exc}", file=sys.stderr)
                return 2
            started = time.perf_counter()
            rows = trio.run(matrix, cases, fx, args.baseline, args.query, log)
        finally:
            if args.keep:
                print(f"fault_matrix: kept {root}", file=sys.stderr)
            else:
                shutil.rmtree(root, ignore_errors=True)
    for case, row in zip(cases, rows, strict=True):
        row["case_healthy"] = case.healthy
    summary = {
        key: f"{sum(r[field] for r in rows)}/{len(rows)}"
        for key, field in (
            ("behaviour", "behaviour_ok"),
            ("healthy", "healthy_ok"),
            ("ping", "ping_ok"),
            ("recovery", "recovery_ok"),
        )
    }
    result = {
        "memory_timeout": MEMORY_TIMEOUT,
        "code_timeout": CODE_TIMEOUT,
        "baseline": args.baseline,
        "codegraph": has_code,
        "loadavg": " / ".join(f"{x:.1f}" for x in os.getloadavg()),
        "elapsed_s": round(time.perf_counter() - started, 1),
        "rows": rows,
        "summary": summary,
        "behaviour_pass": all(r["behaviour_ok"] for r in rows),
        "pass": all(r["pass"] for r in rows),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
