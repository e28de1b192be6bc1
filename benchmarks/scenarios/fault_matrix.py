"""Fault matrix: plane isolation under every injected and real fault, in mode `all` (issue 7).

    scripts/bench fault-matrix [--quick] [--json] [--binary PATH | --no-code]
                               [--cases LIST] [--baseline N] [--code-timeout S] [--keep]
                               [--workspace DIR] [--lwc CMD] [--query TEXT]

Set-up as in the soak (the same `benchmarks.fixtures.Fixture`): a temporary HOME and
workspace, a project Wiki of `--pages` Pages written with `lwc page put`, and the CodeGraph
index of a copy of the `lwc_trio` sources. Every case starts its OWN server,
`python -m lwc_trio serve --mcp --path WS --memory-timeout 1 --code-timeout 2` (`--code-timeout S`
changes the 2: a fresh CodeGraph child takes about 1.9 s to answer, so on a loaded machine its
first calls miss 2 s), and sends only `lwc_explore` calls in mode `all` with one fixed query:

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
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from benchmarks.fixtures import Fixture, Log, find_binary, logger, scratch
from benchmarks.scenarios.fault_cases import (
    CHILD_CASES,
    CODE_TIMEOUT,
    MEMORY_TIMEOUT,
    QUERY,
    Case,
    Workspace,
    all_cases,
    run_case,
)
from benchmarks.table import emit, loadavg, markdown_table


async def matrix(
    cases: Sequence[Case],
    fx: Fixture | Workspace,
    baseline: int,
    query: str,
    log: Log | None,
    code_timeout: float,
) -> list[dict[str, Any]]:
    return [await run_case(case, fx, baseline, query, log, code_timeout) for case in cases]


def print_report(result: dict[str, Any]) -> None:
    print(
        f"lwc fault matrix: --memory-timeout {MEMORY_TIMEOUT:g} --code-timeout "
        f"{result['code_timeout']:g}, mode all, {result['baseline']} baseline calls per case "
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
    rows = [
        [
            r["label"],
            f"{r['case'].split(':')[0] if ':' in r['case'] else 'code'} → {r['faulted_answer']}",
            r["faulted_ms"],
            f"{r['case_healthy']} {r['healthy_baseline_ms']:g} → {r['healthy_ms']}",
            f"{r['healthy_limit_ms']:g}",
            f"{r['ping_p50_ms']} / {r['ping_max_ms']} (n={r['ping_n']})",
            r["recovery_ms"],
            "yes" if r["recovered"] else "NO",
            "PASS" if r["pass"] else "FAIL",
        ]
        for r in result["rows"]
    ]
    print(markdown_table(headers, rows))
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
    p.add_argument(
        "--code-timeout", type=float, default=CODE_TIMEOUT, help="the server's code deadline"
    )
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
    binary = None if args.no_code else find_binary(args.binary)
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

    log = logger("faults", quiet=args.json)

    lwc = shlex.split(args.lwc) if args.lwc else None
    started = time.perf_counter()
    if args.workspace is not None:
        if not args.workspace.is_dir():
            print(f"fault_matrix: no such workspace {args.workspace}", file=sys.stderr)
            return 2
        own = Workspace(args.workspace, has_code, binary)
        own.lwc = lwc or own.lwc
        rows = trio.run(matrix, cases, own, args.baseline, args.query, log, args.code_timeout)
    else:
        with scratch("lwc-faults-", keep=args.keep, who="fault-matrix") as root:
            fx = Fixture(root, binary, args.source)
            fx.lwc = lwc or fx.lwc
            try:
                fx.build(args.pages, args.seed, log)
            except (RuntimeError, OSError) as exc:
                print(f"fault-matrix: set-up failed: {exc}", file=sys.stderr)
                return 2
            started = time.perf_counter()
            rows = trio.run(matrix, cases, fx, args.baseline, args.query, log, args.code_timeout)
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
        "code_timeout": args.code_timeout,
        "baseline": args.baseline,
        "codegraph": has_code,
        "loadavg": loadavg(),
        "elapsed_s": round(time.perf_counter() - started, 1),
        "rows": rows,
        "summary": summary,
        "behaviour_pass": all(r["behaviour_ok"] for r in rows),
        "pass": all(r["pass"] for r in rows),
    }
    return emit(result, args.json, print_report)
