"""Memory-plane benchmark (issue 3, "Performance"): write throughput, end-to-end latency, RSS.

For each wiki size it

1. generates a deterministic wiki (seeded RNG, Zipf-distributed vocabulary, Markdown bodies
   with headings, lists, code spans, fenced blocks and `[[wikilinks]]` between pages),
2. builds it through the real write path (`Wiki(db).put_pages`, `writer.IMPORT_BATCH` Pages
   per transaction, exactly what `lwc page import` does) and reports bulk write pages/s,
3. starts a real `lwc serve --mcp --path WS` and, over raw JSON lines on stdio, sequentially
   measures for every query: a `ping` round trip, the `lwc_explore` memory-mode round trip,
   and the raw floor: the engine's BM25F statement run directly on the same SQLite file
   with `sqlite3` in this process,
4. reads the server's VmRSS (and VmHWM) from /proc/PID/status after the queries.

Targets (issue 3): median ≤ 15 ms at 10,000 pages; median ≤ 3 × floor median + ping median;
cost (e2e − ping) growing no faster than the floor from the smallest to the largest size;
server RSS ≤ 150 MB at 50,000 pages; bulk write ≥ 1,000 pages/s.

    scripts/bench memory                     # 1,000 / 10,000 / 50,000 pages
    scripts/bench memory --quick             # tiny smoke run (seconds)
    scripts/bench memory --json              # machine-readable results on stdout
    scripts/bench memory --profile           # + cProfile of the engine path (stderr)

Everything generated lives in one temporary directory removed at the end. Progress goes to
stderr. Exit status: 0 all targets pass (or n/a), 1 a target fails, 2 the run broke.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import procstats
from benchmarks.fixtures import lwc_argv, private_env
from benchmarks.messages import INITIALIZED, encode, initialize
from benchmarks.scenarios.memory_corpus import Generator
from benchmarks.scenarios.memory_floor import MAX_DOCUMENTS, check_floor_sql, floor_run
from benchmarks.scenarios.memory_report import evaluate, machine_notes, render
from benchmarks.stats import median, percentile
from benchmarks.stdio import StdioClient
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.storage.store import create_store


class Session:
    """A real `lwc serve --mcp` driven one request at a time by the harness's blocking client."""

    def __init__(self, workspace: Path, home: Path) -> None:
        # This checkout's lwc, as the benchmark's own `lwc` commands run it: a run from
        # another worktree measures that worktree, not the package installed in the venv.
        env = private_env(home)
        argv = [*lwc_argv(), "serve", "--mcp", "--path", str(workspace)]
        self.client = StdioClient(argv, env=env, cwd=workspace, name="lwc")
        self._next = 0

    def call(self, method: str, params: dict[str, Any] | None = None) -> tuple[float, Any]:
        """(round trip in ms up to the response's newline, parsed response)."""
        self._next += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            msg["params"] = params
        reply, took = self.client.call(msg)
        return took * 1000.0, reply

    def notify(self, message: dict[str, Any]) -> None:
        self.client.write(encode(message))

    def cpu_s(self) -> float:
        return procstats.cpu_s(self.client.pid)

    def rss_kb(self) -> tuple[int, int]:
        return procstats.rss_kb(self.client.pid), procstats.hwm_kb(self.client.pid)

    def close(self) -> int:
        return self.client.close(15)


def explore_params(query: str, workspace: Path) -> dict[str, Any]:
    return {
        "name": "lwc_explore",
        "arguments": {"query": query, "projectPath": str(workspace), "mode": "memory"},
    }


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def bench_size(size: int, n_queries: int, seed: int, tmp: Path, profile: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    gen = Generator(seed, size)
    pages = gen.pages()
    queries = gen.queries(n_queries)
    gen_s = time.perf_counter() - t0
    body_chars = sum(len(p.body) for p in pages)
    log(f"[{size}] generated {size} pages ({body_chars / 1e6:.1f} M chars) in {gen_s:.1f} s")

    workspace = tmp / f"ws-{size}"
    (workspace / ".lwc").mkdir(parents=True)
    db = workspace / ".lwc" / "wiki.db"
    assert create_store(db)
    t0, c0 = time.perf_counter(), time.process_time()
    with Wiki(db) as wiki:
        counts = wiki.put_pages(pages)
    write_s = time.perf_counter() - t0
    write_cpu_s = time.process_time() - c0
    assert counts["created"] == size, counts
    write_rate = size / write_s
    links = (
        sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        .execute("SELECT count(*) FROM links")
        .fetchone()[0]
    )
    log(
        f"[{size}] wrote in {write_s:.1f} s ({write_rate:.0f} pages/s), "
        f"{db.stat().st_size / 2**20:.1f} MiB, {links} links"
    )
    del pages

    home = tmp / "home"
    home.mkdir(exist_ok=True)
    server = Session(workspace, home)
    floor_conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    try:
        server.call("initialize", initialize(0, "bench_memory")["params"])
        server.notify(INITIALIZED)
        first_ms, first = server.call("tools/call", explore_params(queries[0][1], workspace))
        if first["result"]["structuredContent"]["memory"]["state"] != "ready":
            raise RuntimeError(f"memory not ready: {json.dumps(first)[:400]}")
        # Warm-up (not measured): fills the per-revision caches (link degrees, the fuzzy
        # title index) and the OS page cache, as a long-lived session would have.
        warm = [q for c, q in queries if c == "nohit"][:1] + [q for _c, q in queries[:10]]
        for q in warm:
            server.call("tools/call", explore_params(q, workspace))
            floor_run(floor_conn, q, MAX_DOCUMENTS * 4)

        e2e: list[float] = []
        pings: list[float] = []
        floor: list[float] = []
        floor_cpu: list[float] = []
        select: list[float] = []
        plane_ms: list[float] = []
        by_cat: dict[str, list[float]] = {}
        hits: Counter[str] = Counter()
        load_before = os.getloadavg()[0]
        server_cpu0 = server.cpu_s()
        for cat, q in queries:
            ms, _ = server.call("ping")
            pings.append(ms)
            ms, reply = server.call("tools/call", explore_params(q, workspace))
            e2e.append(ms)
            by_cat.setdefault(cat, []).append(ms)
            structured = reply["result"]["structuredContent"]
            memory = structured["memory"]
            if memory["state"] != "ready":
                raise RuntimeError(f"query {q!r}: {json.dumps(memory)[:400]}")
            plane_ms.append(float(structured["timings"]["memoryMs"]))
            results = memory["results"]
            kind = "none" if not results else results[0]["match"]
            hits[f"{cat}:{kind}"] += 1
            # The floor: the engine's BM25F statement for the query's terms, run alone.
            s0, u0 = time.perf_counter(), time.thread_time()
            run_ms = floor_run(floor_conn, q, MAX_DOCUMENTS * 4)
            s2, u2 = time.perf_counter(), time.thread_time()
            select.append((s2 - s0) * 1000.0 - run_ms)
            floor.append(run_ms)
            floor_cpu.append((u2 - u0) * 1000.0)
        server_cpu = server.cpu_s() - server_cpu0
        load_after = os.getloadavg()[0]
        rss_kb, hwm_kb = server.rss_kb()
    finally:
        floor_conn.close()
        code = server.close()
    stderr = server.client.stderr
    if code != 0 or stderr:
        log(f"[{size}] server exit {code}, stderr: {stderr[:400]!r}")

    row = {
        "pages": size,
        "links": links,
        "db_mib": round(db.stat().st_size / 2**20, 1),
        "generate_s": round(gen_s, 2),
        "write_s": round(write_s, 2),
        "write_pages_per_s": round(write_rate, 1),
        "write_cpu_pages_per_s": round(size / write_cpu_s, 1),
        "body_chars_mean": round(body_chars / size),
        "queries": len(queries),
        "first_call_ms": round(first_ms, 3),
        "e2e_median_ms": round(median(e2e), 3),
        "e2e_p99_ms": round(percentile(e2e, 0.99), 3),
        "floor_median_ms": round(median(floor), 3),
        "floor_p99_ms": round(percentile(floor, 0.99), 3),
        "floor_cpu_median_ms": round(median(floor_cpu), 3),
        "term_select_median_ms": round(median(select), 3),
        "ping_median_ms": round(median(pings), 3),
        "ping_p99_ms": round(percentile(pings, 0.99), 3),
        "memory_plane_median_ms": median(plane_ms),
        # Server CPU per measured query (its ping included), from /proc/PID/stat.
        "server_cpu_ms_per_query": round(server_cpu * 1000.0 / len(queries), 2),
        "loadavg_1min": [round(load_before, 2), round(load_after, 2)],
        "ratio": round(median(e2e) / (3 * median(floor) + median(pings)), 3),
        "rss_mb": round(rss_kb / 1024, 1),
        "hwm_mb": round(hwm_kb / 1024, 1),
        "server_exit": code,
        "server_stderr_bytes": len(stderr),
        "e2e_median_by_category_ms": {c: round(median(v), 3) for c, v in sorted(by_cat.items())},
        "top_match_by_category": dict(sorted(hits.items())),
    }
    log(
        f"[{size}] e2e median {row['e2e_median_ms']} ms, floor {row['floor_median_ms']} ms, "
        f"ping {row['ping_median_ms']} ms, RSS {row['rss_mb']} MB"
    )
    if profile:
        row["profile"] = profile_engine(workspace, home, queries)
    return row


def profile_engine(workspace: Path, home: Path, queries: list[tuple[str, str]]) -> str:
    """cProfile of the engine path (`explore_memory`) in this process over the same queries."""
    from lwc_trio.memory.query.engine import MemoryQuery, explore_memory

    def run() -> None:
        for _cat, q in queries:
            explore_memory(
                MemoryQuery(
                    query=q,
                    project_path=workspace,
                    workspace=workspace,
                    home=home,
                    scope="all",
                    allowed_scopes=frozenset({"project", "global"}),
                    max_documents=MAX_DOCUMENTS,
                ),
                cancelled=threading.Event(),
            )

    run()  # warm the caches as the server's warm-up did
    prof = cProfile.Profile()
    prof.enable()
    run()
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime")
    stats.print_stats(18)
    stats.sort_stats("cumulative").print_stats(25)
    text = out.getvalue()
    log(text)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000", help="comma-separated page counts")
    parser.add_argument("--queries", type=int, default=200, help="measured queries per size")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run (200,1000 pages)")
    parser.add_argument("--json", action="store_true", help="JSON results on stdout")
    parser.add_argument("--profile", action="store_true", help="cProfile the engine (stderr)")
    args = parser.parse_args(argv)
    sizes = [200, 1000] if args.quick else [int(s) for s in args.sizes.split(",") if s.strip()]
    n_queries = 40 if args.quick else args.queries
    if not sizes or min(sizes) < 10 or n_queries < 1:
        parser.error("sizes must be ≥ 10 pages and --queries ≥ 1")
    sizes.sort()
    check_floor_sql()

    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="lwc-bench-"))
    try:
        rows = [bench_size(size, n_queries, args.seed, tmp, args.profile) for size in sizes]
    except Exception as exc:  # a broken run is not a benchmark result
        log(f"bench memory: {type(exc).__name__}: {exc}")
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    verdicts = evaluate(rows)
    report: dict[str, Any] = {
        "command": " ".join(["scripts/bench", "memory", *(sys.argv[1:] if argv is None else argv)]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": machine_notes(),
        "seconds": round(time.perf_counter() - started, 1),
        "sizes": rows,
        "targets": [{"target": n, "result": v, "measured": d} for n, v, d in verdicts],
    }
    table = "\n".join(
        [
            f"{report['command']}  ({report['date']}, {report['seconds']} s)",
            report["machine"],
            "",
            render(rows, verdicts),
        ]
    )
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        log(table)  # the table still goes to stderr
    else:
        print(table)
    return 1 if any(v == "FAIL" for _n, v, _d in verdicts) else 0
