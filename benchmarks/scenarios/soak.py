"""Soak: one real `lwc serve --mcp` process under a long, deterministic mixed workload (issue 7).

    scripts/bench soak [--calls N] [--sample-every N] [--quick] [--json]
                       [--transport stdio|http] [--seed S] [--pages N] [--write-every K]
                       [--binary PATH | --no-code] [--keep] [--source DIR]

Set-up (all with the real CLI, in a temporary directory with a private HOME): a workspace with
a project Wiki (`python -m lwc_trio init`), `--pages` Pages written one by one with
`python -m lwc_trio page put SLUG --title T --file F` (seeded vocabulary, `[[links]]`
between them), a copy of the `lwc_trio` package as source code and its CodeGraph index
(`python -m lwc_trio --scope project cg init WS`). `--binary` (or `LWC_CODEGRAPH_BINARY`) names
the CodeGraph 1.6.1 platform binary; `--no-code` runs a memory-only workload instead.

Then ONE server process, `python -m lwc_trio serve --mcp --path WS`, gets `--calls` requests
from a seeded generator (`--seed`): `lwc_explore` in modes memory, code and all (projectPath
WS or WS/src, assorted maxDocuments/maxFiles), memory "probes" for the marker word of the
latest completed Wiki write (must be found, with that body) and for a superseded marker (must
no longer match), `ping`, invalid arguments and JSON-RPC errors, 70 KiB lines,
`notifications/cancelled` for in-flight ids, and bursts of 50 concurrent calls (a few of them
cancelled). Every `--write-every` calls a background `page put` rewrites one of 16 "live"
pages with a new marker word.

Every response is checked: right id, exactly once (a cancelled id: at most once), JSON-RPC
and tool-result shape, the result echoes its own request (query, mode, scope), planes ready,
the project store's revision at least that of the last write completed before the call was
sent, the same memory object for the same (query, maxDocuments, scope, revision) and the same
codeGraph object for the same (query, projectPath, maxFiles) throughout, and nothing on stderr.

Every `--sample-every` calls (default: calls / 20), once all outstanding answers are in, the
server is sampled from /proc: VmRSS, open descriptors (/proc/PID/fd), Threads, its child
processes (ppid == server pid) and zombies (state Z among them and in the CodeGraph child's
process group). The run starts with a burst of 50 memory calls, inside the warm-up (the first
10 % of calls). Verdicts: RSS growth (last sample − first sample after warm-up) < 10 MB;
descriptors flat (never above the warm-up peak + 2 + one pooled read connection per worker
thread and store, and no higher in the second half of the run than in the first + 2: any of
trio's worker threads may run a memory job and keep its connections, so a short run can still
step up after its warm-up, while a leak keeps growing); threads flat
(never above the design ceiling, 1 + the memory plane's and the authorizer's thread limits,
and no higher in the second half of the run than in the first + 2: trio's idle worker threads
come and go with the load); exactly one CodeGraph child at every sample after the first code
call, always the same pid; zero zombies; correctness (no check failed); clean exit (stdin EOF
→ exit 0, nothing on stderr, no live CodeGraph process left and its process group gone within
5 s — the CodeGraph child forks a watchdog into its group, which init reaps once the group is
killed).

`--source DIR` runs the lwc_trio package found in DIR (server and CLI writes alike), e.g. a
`git archive HEAD lwc_trio` copy, so a long run is not disturbed by edits to the checkout.

`--transport http` drives the same workload through `--transport http --http-listen
127.0.0.1:0`: one POST per request, cancellation closes the request, a 70 KiB body must get
413, and a 503 `server_busy` (above the in-flight bound, SPEC §1.2) is retried during bursts;
the server is stopped with SIGTERM instead of stdin EOF.

Exit 0 when every verdict passes, 1 when one fails, 2 on a set-up error. The workload is in
`soak_workload.py`, the answer checks in `soak_checks.py`, the verdicts in `soak_verdicts.py`;
the fixture, the clients and the /proc helpers are the harness's (`benchmarks/`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from benchmarks.fixtures import REPO, Fixture, Log, find_binary, logger, scratch
from benchmarks.http import HttpServer
from benchmarks.procstats import groups_after_exit
from benchmarks.scenarios.soak_verdicts import verdicts
from benchmarks.scenarios.soak_workload import Soak
from benchmarks.stats import median, ms, percentile
from benchmarks.stdio import StdioClient
from benchmarks.table import emit, loadavg, markdown_table


async def soak_main(args: argparse.Namespace, fixture: Fixture, log: Log | None) -> dict[str, Any]:
    soak = Soak(fixture, args)
    exit_info: dict[str, Any] = {"code": None, "live": 0, "gone_s": 0.0, "stderr_bytes": 0}
    async with trio.open_nursery() as nursery:
        client_cls = HttpServer if args.transport == "http" else StdioClient
        client = await client_cls.start(nursery, fixture.serve_argv(), fixture.env, fixture.ws)
        soak.client = client
        try:
            await soak.run(nursery, log)
            # Every CodeGraph child ever seen leads its own process group.
            pgids = {pid for s in soak.samples for pid in s["codegraph_pids"]}
            exit_info["code"] = await client.finish()
            exit_info.update(await groups_after_exit(pgids))
            exit_info["stderr_bytes"] = len(client.stderr)
            exit_info["stderr"] = bytes(client.stderr[:500]).decode(errors="replace")
        finally:
            client.kill()
        soak.check_cancelled()
        if client.bad_lines:
            soak.checker.fail(f"{len(client.bad_lines)} unparsable stdout lines")
        nursery.cancel_scope.cancel()
    elapsed = time.perf_counter() - soak.started
    warmup = max(args.calls // 10, args.sample_every)
    result = {
        "transport": args.transport,
        "calls": soak.calls,
        "seed": args.seed,
        "source": str(args.source or REPO),
        "pages": args.pages,
        "codegraph": fixture.has_code,
        "elapsed_s": round(elapsed, 1),
        "calls_per_s": round(soak.calls / elapsed, 1),
        "writes": {
            "completed": len(soak.writes),
            "skipped_busy": soak.writes_skipped,
            "failed": len(soak.write_failures),
            "final_revision": soak.committed,
        },
        "cancelled": {"sent": len(soak.cancel_sent), **soak.cancel_stats},
        "http_503_retries": getattr(soak.client, "busy_retries", None),
        "loadavg": loadavg(),
        "checks": dict(soak.checker.stats),
        "latency_ms": {
            kind: {
                "n": len(v),
                "p50": ms(median(v)),
                "p99": ms(percentile(v, 0.99)),
                "max": ms(max(v)),
            }
            for kind, v in sorted(soak.latency.items())
        },
        "samples": soak.samples,
        "verdicts": verdicts(soak.samples, warmup, soak, exit_info),
        "errors": soak.checker.errors[:20] + soak.write_failures[:5],
        "exit": exit_info,
    }
    result["pass"] = all(v["pass"] for v in result["verdicts"])
    return result


def print_report(result: dict[str, Any]) -> None:
    print(
        f"lwc soak: {result['calls']} calls over {result['transport']} in {result['elapsed_s']} s "
        f"({result['calls_per_s']} calls/s), seed {result['seed']}, {result['pages']} pages, "
        f"CodeGraph {'on' if result['codegraph'] else 'off'}"
    )
    w = result["writes"]
    print(
        f"background writes: {w['completed']} completed (revision → {w['final_revision']}), "
        f"{w['skipped_busy']} skipped while one ran, {w['failed']} failed"
    )
    c = result["cancelled"]
    print(
        f"cancelled calls: {c['sent']} sent, {c.get('answered', 0)} answered anyway (checked), "
        f"{c.get('no_answer', 0)} without answer; code plane busy in bursts: "
        f"{result['checks'].get('code_busy', 0)}; marker probes: "
        f"{result['checks'].get('probe_found', 0)} found, "
        f"{result['checks'].get('probe_gone', 0)} superseded and gone"
        + (
            f"; HTTP 503 retries in bursts: {result['http_503_retries']}"
            if result["transport"] == "http"
            else ""
        )
    )
    print(f"load average at the end: {result['loadavg']}")
    print()
    rows = [
        [s["calls"], s["elapsed_s"], s["rss_mb"], s["fds"], s["threads"], s["children"],
         s["codegraph"], s["zombies"]]
        for s in result["samples"]
    ]  # fmt: skip
    headers = ["calls", "t (s)", "RSS (MB)", "fds", "threads", "children", "codegraph", "zombies"]
    print(markdown_table(headers, rows))
    print()
    lat = result["latency_ms"]
    print(
        markdown_table(
            ["request", "n", "p50 (ms)", "p99 (ms)", "max (ms)"],
            [[k, v["n"], v["p50"], v["p99"], v["max"]] for k, v in lat.items()],
        )
    )
    print()
    print(
        markdown_table(
            ["resource", "measured", "target", "verdict"],
            [
                [v["resource"], v["measured"], v["target"], "PASS" if v["pass"] else "FAIL"]
                for v in result["verdicts"]
            ],
        )
    )
    for error in result["errors"]:
        print("  error:", error)
    print()
    print("verdict:", "PASS" if result["pass"] else "FAIL")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--calls", type=int, default=None, help="default 20,000; quick 1,000")
    p.add_argument("--sample-every", type=int, default=None, help="default: calls / 20")
    p.add_argument("--quick", action="store_true", help="about 1,000 calls, 40 pages")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--pages", type=int, default=None, help="Wiki pages (default 300; quick 40)")
    p.add_argument("--write-every", type=int, default=50, help="calls between background writes")
    p.add_argument("--binary", default=None, help="CodeGraph platform binary")
    p.add_argument("--no-code", action="store_true", help="memory-only workload")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument(
        "--source",
        type=Path,
        default=None,
        help="directory holding the lwc_trio package to run (default: this checkout)",
    )
    args = p.parse_args(argv)
    if args.calls is None:
        args.calls = 1_000 if args.quick else 20_000
    if args.pages is None:
        args.pages = 40 if args.quick else 300
    if args.sample_every is None:
        args.sample_every = max(1, args.calls // 20)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    binary = None if args.no_code else find_binary(args.binary)
    if not args.no_code and binary is None:
        print(
            "soak: no CodeGraph binary (--binary, LWC_CODEGRAPH_BINARY); use --no-code",
            file=sys.stderr,
        )
        return 2

    log = logger("soak", quiet=args.json)

    if args.source is not None:
        args.source = args.source.resolve()
        sys.path.insert(0, str(args.source))
    with scratch("lwc-soak-", keep=args.keep, who="soak") as root:
        fixture = Fixture(root, binary, args.source)
        try:
            fixture.build(args.pages, args.seed, log)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            print(f"soak: set-up failed: {exc}", file=sys.stderr)
            return 2
        result = trio.run(soak_main, args, fixture, log)
    return emit(result, args.json, print_report)
