"""Shutdown benchmark: stdin EOF / SIGTERM → process exit, with requests in flight (issue 7).

    scripts/bench shutdown [--quick] [--json] [--repeat N] [--binary PATH | --no-code]
                           [--in-flight 0,10,100] [--triggers eof,sigterm]
                           [--children none,live] [--keep]

Set-up as in the soak (the same `benchmarks.fixtures.Fixture`): a project Wiki written with
`lwc page put` and the CodeGraph index of a copy of the `lwc_trio` sources. Each measurement
starts a fresh `python -m lwc_trio serve --mcp --path WS` with `LWC_FAULTS=memory=delay:0.5`
(every memory call answers after 0.5 s, so calls stay in flight) and:

* "with child": first one `lwc_explore` call in mode `code` (answered before the clock starts),
  so a live CodeGraph child is there, found via /proc (ppid == server pid);
  "without": no code call, and /proc shows no child;
* sends N memory-mode calls at once (N = 0, 10, 100; the in-flight bound is 32, the rest
  wait in the queue) followed by a `ping`; once the ping's answer is back, every call has
  been read by the server (the reader answers pings in order), and it closes stdin (EOF) or
  sends SIGTERM;
* times from right after the close / the signal to the process's exit (trio's pidfd wait);
* reads every answer until stdout ends and checks each one (right id, ready memory answer to
  its own query).

Checks: exit code 0; stderr holds nothing but the `LWC_FAULTS` announcement; every call that
finishes within the grace (2 s) is delivered — all N for N ≤ 32, and for N = 100 at least the
96 calls of the three rounds of 32 that end by 1.5 s (the 4 queued last may be cancelled at
the grace); after SIGTERM, rounds count as they came: each answer frees a slot for a queued
call, due if that answer came at least `DELAY` + `SLACK` before the grace ended (a loaded
machine takes longer than 0.5 s a round, and then fewer calls can finish in the grace); no
CodeGraph process left (the child and its group gone). Targets: ≤ 100 ms from
the trigger to exit with nothing in flight, never more than grace + 100 ms = 2.1 s.

Exit 0 when every row passes, 1 otherwise, 2 on a set-up error.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from benchmarks import procstats
from benchmarks.fixtures import WORDS, Fixture, Log, find_binary, logger, scratch
from benchmarks.messages import encode, initialize, ping, tool_call
from benchmarks.stats import median, ms
from benchmarks.stdio import StdioClient
from benchmarks.table import emit, loadavg, markdown_table

DELAY = 0.5
GRACE = 2.0
IN_FLIGHT_BOUND = 32
IDLE_TARGET_MS = 100.0
MAX_TARGET_MS = GRACE * 1000 + 100.0
SLACK = 0.4
"""What a queued call may take beyond its `DELAY` after its slot is freed (its search and its
answer's write) and still count as due in a SIGTERM's grace. Below 0.5 s, so on a quiet
machine the rounds due are the same three as `must_deliver`."""


def must_deliver(n: int) -> int:
    """Calls certain to finish within the grace: whole rounds of the in-flight bound."""
    rounds = int((GRACE - 0.1) // DELAY)
    return min(n, rounds * IN_FLIGHT_BOUND)


def due_in_grace(n: int, answered: Sequence[float]) -> int:
    """Calls certain to finish in a SIGTERM's grace, from when their answers came (seconds
    after the signal): the first `IN_FLIGHT_BOUND` were running at the signal; the k-th answer
    freed the slot of the k-th queued call, which ends `DELAY` (+ `SLACK`) later at most.
    Never more than `must_deliver(n)`: a quiet machine's rounds are the bound."""
    freed = sum(at + DELAY + SLACK <= GRACE for at in answered)
    return min(must_deliver(n), IN_FLIGHT_BOUND + freed)


async def one_run(fx: Fixture, trigger: str, n: int, with_child: bool, seq: int) -> dict[str, Any]:
    env = dict(fx.env, LWC_FAULTS=f"memory=delay:{DELAY:g}")
    run: dict[str, Any] = {"problems": []}
    problems: list[str] = run["problems"]
    async with trio.open_nursery() as nursery:
        client = await StdioClient.start(nursery, fx.serve_argv(), env, fx.ws)
        try:
            await client.request(initialize(0))
            pgids: set[int] = set()
            if with_child:
                code_args = {"query": "kill the child", "projectPath": str(fx.ws), "mode": "code"}
                response, _ = await client.request(tool_call(1, code_args))
                cg = response["result"]["structuredContent"]["codeGraph"]
                if cg.get("state") != "ready":
                    problems.append(f"code call not ready: {str(cg)[:200]}")
                pgids = {c["pid"] for c in procstats.codegraph_children(client.pid)}
                if len(pgids) != 1:
                    problems.append(f"{len(pgids)} CodeGraph children before the trigger")
            elif procstats.children_of(client.pid):
                problems.append("a child process without any code call")
            queries = {}
            lines = []
            for i in range(n):
                rid = 1000 + i
                queries[rid] = f"{WORDS[(seq + i) % len(WORDS)]} shutdown {i}"
                args = {"query": queries[rid], "projectPath": str(fx.ws)}
                lines.append(encode(tool_call(rid, args)))
            # A ping after the calls: the reader answers it in order, so once its answer is
            # back every call has been read (running, or queued beyond the in-flight bound).
            lines.append(encode(ping(999)))
            barrier = client.expect(999)
            slots = {rid: client.expect(rid) for rid in queries}
            await client.send_raw(b"".join(lines))
            await client.wait_slot(barrier)
            if trigger == "eof":
                await client.close_input()
            else:
                client.proc.send_signal(signal.SIGTERM)
            t0 = time.perf_counter()
            with trio.fail_after(30):
                code = await client.wait()
            run["exit_ms"] = ms(time.perf_counter() - t0)
            run["exit_code"] = code
            with trio.fail_after(10):
                await client.eof.wait()
            left = await procstats.groups_after_exit(pgids)
            run["left_live"] = left["live"]
            run["group_gone_s"] = left["gone_s"]
            if code != 0:
                problems.append(f"exit code {code}")
            if left["live"] or left["gone_s"] is None:
                problems.append(f"CodeGraph processes left: {left}")
            # Anything unclaimed is an answer to no call or a second answer to one.
            problems.extend(f"unexpected answer {str(m)[:200]}" for m in client.unclaimed)
            delivered = 0
            answered = []
            for rid, slot in slots.items():
                if slot.response is None:
                    continue
                answered.append(slot.received - t0)
                sc = slot.response.get("result", {}).get("structuredContent", {})
                if sc.get("query") != queries[rid] or sc["memory"].get("state") != "ready":
                    problems.append(f"wrong answer for {rid}: {str(sc)[:200]}")
                else:
                    delivered += 1
            run["delivered"] = delivered
            run["due"] = due = must_deliver(n) if trigger == "eof" else due_in_grace(n, answered)
            if delivered < due:
                problems.append(f"only {delivered} of {n} answers (≥ {due} due)")
            stray = [
                ln
                for ln in bytes(client.stderr).splitlines()
                if ln.strip() and not ln.startswith(b"lwc: LWC_FAULTS active")
            ]
            if stray:
                problems.append(f"stderr: {stray[:2]}")
        finally:
            client.kill()
            nursery.cancel_scope.cancel()
    return run


async def bench(
    fx: Fixture,
    triggers: Sequence[str],
    counts: Sequence[int],
    children: Sequence[bool],
    repeat: int,
    log: Log | None,
) -> list[dict[str, Any]]:
    rows = []
    seq = 0
    for with_child in children:
        for trigger in triggers:
            for n in counts:
                runs = []
                for _ in range(repeat):
                    seq += 1
                    runs.append(await one_run(fx, trigger, n, with_child, seq))
                times = [r["exit_ms"] for r in runs if "exit_ms" in r]
                limit = IDLE_TARGET_MS if n == 0 else MAX_TARGET_MS
                row = {
                    "trigger": trigger,
                    "in_flight": n,
                    "codegraph_child": with_child,
                    "runs": len(runs),
                    "exit_ms_median": round(median(times), 1),
                    "exit_ms_max": round(max(times), 1),
                    "target_ms": limit,
                    "delivered": sorted({r.get("delivered", 0) for r in runs}),
                    "due": min(r.get("due", must_deliver(n)) for r in runs),
                    "exit_codes": sorted({r.get("exit_code") for r in runs}, key=str),
                    "left": sum(r.get("left_live", 0) for r in runs),
                    "problems": [p for r in runs for p in r["problems"]],
                }
                row["behaviour_ok"] = not row["problems"]
                row["timing_ok"] = row["exit_ms_max"] <= limit
                row["pass"] = row["behaviour_ok"] and row["timing_ok"]
                rows.append(row)
                if log:
                    log(
                        f"{trigger} n={n} child={with_child}: median {row['exit_ms_median']} "
                        f"ms, max {row['exit_ms_max']} ms, delivered {row['delivered']} "
                        f"{'PASS' if row['pass'] else 'FAIL'} {row['problems'][:2]}"
                    )
    return rows


def print_report(result: dict[str, Any]) -> None:
    print(
        f"lwc shutdown: LWC_FAULTS=memory=delay:{DELAY:g}, grace {GRACE:g} s, in-flight bound "
        f"{IN_FLIGHT_BOUND}, {result['repeat']} run(s) per row, load average "
        f"{result['loadavg']}"
    )
    print()
    headers = [
        "trigger",
        "in flight",
        "CodeGraph child",
        "exit ms (median / max)",
        "target",
        "answers delivered (due)",
        "exit code",
        "left",
        "verdict",
    ]
    rows = [
        [
            "stdin EOF" if r["trigger"] == "eof" else "SIGTERM",
            r["in_flight"],
            "live" if r["codegraph_child"] else "none",
            f"{r['exit_ms_median']} / {r['exit_ms_max']}",
            f"≤ {r['target_ms']:g}",
            f"{'/'.join(map(str, r['delivered']))} ({r['due']})",
            "/".join(map(str, r["exit_codes"])),
            r["left"],
            "PASS" if r["pass"] else "FAIL",
        ]
        for r in result["rows"]
    ]
    print(markdown_table(headers, rows))
    for r in result["rows"]:
        for problem in r["problems"][:3]:
            print(f"  {r['trigger']} n={r['in_flight']} child={r['codegraph_child']}: {problem}")
    print()
    print("verdict:", "PASS" if result["pass"] else "FAIL")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="lwc_trio shutdown benchmark (issue 7)")
    p.add_argument("--quick", action="store_true", help="one run per row, 20 pages")
    p.add_argument("--json", action="store_true")
    p.add_argument("--repeat", type=int, default=None, help="runs per row (default 5; quick 1)")
    p.add_argument("--in-flight", default="0,10,100")
    p.add_argument("--triggers", default="eof,sigterm")
    p.add_argument("--binary", default=None, help="CodeGraph platform binary")
    p.add_argument("--no-code", action="store_true", help="only rows without a CodeGraph child")
    p.add_argument("--children", default="none,live", help="CodeGraph child: none and/or live")
    p.add_argument("--pages", type=int, default=None)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--keep", action="store_true")
    p.add_argument(
        "--source", type=Path, default=None, help="lwc_trio source tree to run (default: here)"
    )
    args = p.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 5
    if args.pages is None:
        args.pages = 20 if args.quick else 100
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    binary = None if args.no_code else find_binary(args.binary)
    if not args.no_code and binary is None:
        print("bench_shutdown: no CodeGraph binary (--binary, LWC_CODEGRAPH_BINARY); --no-code")
        return 2
    counts = [int(x) for x in args.in_flight.split(",")]
    triggers = args.triggers.split(",")
    if set(triggers) - {"eof", "sigterm"}:
        print("bench_shutdown: --triggers takes eof and/or sigterm", file=sys.stderr)
        return 2
    wanted = args.children.split(",")
    if set(wanted) - {"none", "live"} or (
        binary is None and "live" in wanted and "none" not in wanted
    ):
        print("bench_shutdown: --children takes none and/or live (live needs CodeGraph)")
        return 2
    children = [c == "live" for c in wanted if c == "none" or binary is not None]

    log = logger("shutdown", quiet=args.json)

    with scratch("lwc-shutdown-", keep=args.keep, who="shutdown") as root:
        fx = Fixture(root, binary, args.source)
        try:
            fx.build(args.pages, args.seed, log)
        except (RuntimeError, OSError) as exc:
            print(f"shutdown: set-up failed: {exc}", file=sys.stderr)
            return 2
        rows = trio.run(bench, fx, triggers, counts, children, args.repeat, log)
    result = {
        "delay_s": DELAY,
        "grace_s": GRACE,
        "repeat": args.repeat,
        "codegraph": binary is not None,
        "loadavg": loadavg(),
        "rows": rows,
        "behaviour_pass": all(r["behaviour_ok"] for r in rows),
        "pass": all(r["pass"] for r in rows),
    }
    return emit(result, args.json, print_report)
