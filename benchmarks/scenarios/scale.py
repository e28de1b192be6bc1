"""A Wiki that grows (issue 24): write rate, store size and query latency at 10,000–1,000,000
Pages, against a plain SQLite FTS5 table fed the same Pages in the same run.

    scripts/bench scale                       # 10,000 and 100,000 Pages
    scripts/bench scale --sizes 1000000       # on demand (hours the first time; cached)
    scripts/bench scale --quick               # 2,000 Pages, 30 queries a kind (a smoke run)
    scripts/bench scale --max-documents 20    # the queries at 20 results (maxDocuments)
    scripts/bench scale --rebuild --json

For each size, the deterministic Wiki of `benchmarks.scale_corpus` (one JSONL file, cached
under `.cache/scale/` by size and generator version) is

1. written with the real CLI, `lwc init` then one `lwc page import PAGES.jsonl`, the bulk
   write issue 24 measures (`scale-write` times it alone, in rounds): pages/s over the
   import's wall time (process start included), its peak RSS (`wait4`: the larger of its two
   processes), the store's size. The store is cached beside the JSONL (keyed by the store
   format too); a cached store reports the write figures measured when it was built, marked
   `cached`;
2. written into a plain FTS5 table (`porter unicode61`; title, summary, body; 1,000-Page
   transactions) by this process from the same file: pages/s, file size; then each query
   kind as bm25 top-20 (`MATCH` of the terms OR-ed, `ORDER BY bm25 LIMIT 20`, rows fetched);
3. queried through one `lwc serve --mcp --path WS` (stdio, the benchmarks' client): the first
   call after start (a misspelt query: the vocabulary's first need), then 200 queries of each
   kind (`scale_corpus.KINDS`), reading `timings.memoryMs` of each answer; then the server's RSS.

Targets (issues 24 and 37): at 100,000 Pages every kind p50 ≤ 10 ms at the default 8 results
(≤ 15 ms at 20, `--max-documents 20`) and p99 ≤ 50 ms, the first call ≤ 500 ms; at 1,000,000
Pages every kind p50 ≤ 100 ms. The write side's (≥ 0.5× FTS5's pages/s,
store ≤ 1.5× FTS5's size) are reported as ratios and checked too. Exit 0 when every target of
the sizes run holds, 1 when one fails, 2 on a set-up error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import procstats, scale_corpus
from benchmarks.fixtures import lwc_argv, private_env
from benchmarks.messages import INITIALIZED, encode, initialize
from benchmarks.scenarios.memory import Session
from benchmarks.stats import median, percentile
from benchmarks.stdio import StdioClient
from benchmarks.table import emit, machine, machine_line, markdown_table
from lwc_trio.memory.format.schema import FORMAT_VERSION

REPO = Path(__file__).resolve().parents[2]
FTS_BATCH = 1_000
TOP = 20
TARGETS = {
    100_000: {"p50": 10.0, "p99": 50.0, "first": 500.0},
    1_000_000: {"p50": 100.0},
}
WIDE_P50 = {100_000: 15.0}
"""The p50 targets with more than the default 8 results (issue 37: 20 results)."""
DEFAULT_RESULTS = 8
WRITE_RATIO_MIN = 0.5
SIZE_RATIO_MAX = 1.5


def log(text: str) -> None:
    print(f"[scale] {text}", file=sys.stderr, flush=True)


def _timed_child(argv: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of one child process; raises when it fails."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {err[-800:]!r}")
    return took, int(usage.ru_maxrss)


def build_lwc(where: Path, jsonl: Path, size: int, rebuild: bool) -> dict[str, Any]:
    """The cached lwc store under `where` (built with the CLI when missing or `rebuild`)."""
    record = where / "write.json"
    db = where / "ws" / ".lwc" / "wiki.db"
    if not rebuild and record.exists() and db.exists():
        found: dict[str, Any] = json.loads(record.read_text())
        return {**found, "cached": True}
    shutil.rmtree(where, ignore_errors=True)
    (where / "ws").mkdir(parents=True)
    (where / "home").mkdir()
    env = private_env(where / "home")
    lwc = lwc_argv()
    _timed_child([*lwc, "init"], env, where / "ws")
    wall, peak = _timed_child([*lwc, "page", "import", str(jsonl)], env, where / "ws")
    found = {
        "pages": size,
        "seconds": round(wall, 2),
        "pages_per_s": round(size / wall, 1),
        "peak_rss_mib": round(peak / 1024, 1),
        "store_mib": round(db.stat().st_size / 2**20, 1),
        "format_version": FORMAT_VERSION,
        "built": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load": [round(x, 2) for x in os.getloadavg()],
    }
    record.write_text(json.dumps(found, indent=2))
    return {**found, "cached": False}


def _fts_query(text: str) -> str:
    terms = [t for t in "".join(c if c.isalnum() else " " for c in text).split() if t]
    return " OR ".join(f'"{t}"' for t in terms)


def fts5(where: Path, jsonl: Path, size: int, queries: dict[str, list[str]]) -> Any:
    """Write the same Pages into a fresh FTS5 table (this process), then time bm25 top-20."""
    db = where / "fts5.db"
    for stale in (db, db.with_name(db.name + "-journal")):
        stale.unlink(missing_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(
        "CREATE VIRTUAL TABLE pages USING fts5(title, summary, body, tokenize='porter unicode61')"
    )
    started = time.perf_counter()
    batch: list[tuple[str, str, str]] = []

    def flush() -> None:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO pages(title, summary, body) VALUES (?, ?, ?)", batch)
        conn.execute("COMMIT")
        batch.clear()

    with jsonl.open(encoding="utf-8") as lines:
        for line in lines:
            page = json.loads(line)
            batch.append((page["title"], page.get("summary") or "", page["body"]))
            if len(batch) == FTS_BATCH:
                flush()
    if batch:
        flush()
    wall = time.perf_counter() - started
    out: dict[str, Any] = {
        "pages_per_s": round(size / wall, 1),
        "seconds": round(wall, 2),
        "store_mib": round(db.stat().st_size / 2**20, 1),
        "kinds": {},
    }
    for kind, texts in queries.items():
        took = []
        for text in texts:
            t0 = time.perf_counter()
            conn.execute(
                "SELECT rowid FROM pages WHERE pages MATCH ? ORDER BY bm25(pages) LIMIT ?",
                (_fts_query(text), TOP),
            ).fetchall()
            took.append((time.perf_counter() - t0) * 1000.0)
        out["kinds"][kind] = _percentiles(took)
    conn.close()
    db.unlink()
    return out


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(median(values), 2),
        "p95": round(percentile(values, 0.95), 2),
        "p99": round(percentile(values, 0.99), 2),
        "max": round(max(values), 2),
    }


class Server(Session):
    """One real `lwc serve --mcp --path WS`, one request at a time (the memory scenario's
    session, optionally serving another checkout's package)."""

    def __init__(self, workspace: Path, home: Path, code: Path | None, max_documents: int) -> None:
        argv = [*lwc_argv(), "serve", "--mcp", "--path", str(workspace)]
        env = private_env(home)
        if code is not None:  # A/B: another checkout's lwc_trio package first on the path
            env["PYTHONPATH"] = os.pathsep.join([str(code), env["PYTHONPATH"]])
        self.workspace = workspace
        self.max_documents = max_documents
        self.client = StdioClient(argv, env=env, cwd=workspace, name="lwc")
        self._next = 0

    def explore(self, query: str) -> tuple[float, float, str]:
        """(round trip ms, memoryMs, memory state) of one memory-mode call."""
        args = {
            "query": query,
            "projectPath": str(self.workspace),
            "mode": "memory",
            "maxDocuments": self.max_documents,
        }
        took, reply = self.call("tools/call", {"name": "lwc_explore", "arguments": args})
        result = reply["result"]["structuredContent"]
        memory = result["memory"]
        state = str(memory["state"])
        if state != "ready":
            state += f" ({memory.get('error', {}).get('code')})"
        return took, float(result["timings"]["memoryMs"]), state


def serve(
    where: Path,
    queries: dict[str, list[str]],
    first: str,
    code: Path | None,
    max_documents: int,
) -> dict[str, Any]:
    home = where / "home-serve"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    server = Server(where / "ws", home, code, max_documents)
    out: dict[str, Any] = {"kinds": {}}
    try:
        server.call("initialize", initialize(0, "bench_scale")["params"])
        server.client.write(encode(INITIALIZED))
        took, memory_ms, status = server.explore(first)
        out["first"] = {"round_trip_ms": round(took, 1), "memoryMs": memory_ms, "status": status}
        statuses: dict[str, int] = {}
        for kind, texts in queries.items():
            took_ms = []
            for text in texts:
                _trip, memory_ms, status = server.explore(text)
                statuses[status] = statuses.get(status, 0) + 1
                took_ms.append(memory_ms)
            out["kinds"][kind] = _percentiles(took_ms)
        out["statuses"] = statuses
        out["rss_mib"] = round(procstats.rss_kb(server.client.pid) / 1024, 1)
        out["hwm_mib"] = round(procstats.hwm_kb(server.client.pid) / 1024, 1)
    finally:
        out["exit"] = server.client.close(15)
    return out


def run_size(
    size: int, per_kind: int, rebuild: bool, code: Path | None, fts: bool, max_documents: int
) -> dict[str, Any]:
    t0 = time.perf_counter()
    [jsonl] = scale_corpus.cached_jsonl(REPO, size)
    log(f"{size}: JSONL ready in {time.perf_counter() - t0:.1f} s")
    queries = {kind: scale_corpus.queries(size, kind, per_kind) for kind in scale_corpus.KINDS}
    first = scale_corpus.queries(size, "typo", per_kind + 1)[-1]
    where = scale_corpus.cache_dir(REPO, size) / f"lwc-format{FORMAT_VERSION}-one-import"
    lwc = build_lwc(where, jsonl, size, rebuild)
    log(f"{size}: lwc {lwc['pages_per_s']} pages/s, {lwc['store_mib']} MiB")
    base = fts5(scale_corpus.cache_dir(REPO, size), jsonl, size, queries) if fts else None
    if base is not None:
        log(f"{size}: fts5 {base['pages_per_s']} pages/s, {base['store_mib']} MiB")
    served = serve(where, queries, first, code, max_documents)
    log(f"{size}: served, first call {served['first']['memoryMs']} ms")
    return {
        "size": size,
        "queries_per_kind": per_kind,
        "max_documents": max_documents,
        "lwc_write": lwc,
        "fts5": base,
        "serve": served,
        "write_ratio": None if base is None else round(lwc["pages_per_s"] / base["pages_per_s"], 3),
        "size_ratio": None if base is None else round(lwc["store_mib"] / base["store_mib"], 3),
        "checks": _checks(size, lwc, base, served, max_documents),
    }


def _checks(
    size: int, lwc: Any, base: Any, served: Any, max_documents: int
) -> list[dict[str, Any]]:
    checks = []
    if base is not None:
        checks += [
            {
                "what": "write pages/s ≥ 0.5× FTS5's",
                "value": round(lwc["pages_per_s"] / base["pages_per_s"], 3),
                "ok": lwc["pages_per_s"] >= WRITE_RATIO_MIN * base["pages_per_s"],
            },
            {
                "what": "store ≤ 1.5× FTS5's size",
                "value": round(lwc["store_mib"] / base["store_mib"], 3),
                "ok": lwc["store_mib"] <= SIZE_RATIO_MAX * base["store_mib"],
            },
        ]
    checks += [
        {
            "what": "every answer ready",
            "value": served.get("statuses"),
            "ok": set(served.get("statuses", {})) == {"ready"}
            and served["first"]["status"] == "ready",
        },
    ]
    target = dict(TARGETS.get(size, {}))
    if max_documents > DEFAULT_RESULTS and size in WIDE_P50:
        target["p50"] = WIDE_P50[size]
    checks.extend(
        {
            "what": f"{kind} memoryMs {key} ≤ {target[key]:g} ms",
            "value": got[key],
            "ok": got[key] <= target[key],
        }
        for kind, got in served["kinds"].items()
        for key in ("p50", "p99")
        if key in target
    )
    if "first" in target:
        checks.append(
            {
                "what": f"first call memoryMs ≤ {target['first']:g} ms",
                "value": served["first"]["memoryMs"],
                "ok": served["first"]["memoryMs"] <= target["first"],
            }
        )
    return checks


def report(result: dict[str, Any]) -> None:
    print(machine_line(result["machine"]))
    print(f"lwc_trio served from: {result['code']}")
    for run in result["runs"]:
        lwc, served = run["lwc_write"], run["serve"]
        base = run["fts5"] or {"pages_per_s": "-", "store_mib": "-", "kinds": {}}
        cached = " (cached store: written " + lwc["built"] + ")" if lwc.get("cached") else ""
        print(f"\n## {run['size']:,} Pages{cached}, {run['max_documents']} results a query\n")
        writes = [
            ["lwc page import", lwc["pages_per_s"], lwc["store_mib"], lwc["peak_rss_mib"]],
            ["FTS5 porter", base["pages_per_s"], base["store_mib"], "(in process)"],
            ["ratio", run["write_ratio"], run["size_ratio"], ""],
        ]
        print(markdown_table(["", "pages/s", "store MiB", "writer peak RSS MiB"], writes))
        rows = []
        for kind, got in served["kinds"].items():
            fts = base["kinds"].get(kind, {"p50": "-", "p95": "-", "p99": "-"})
            rows.append(
                [
                    kind,
                    f"{got['p50']} / {got['p95']} / {got['p99']}",
                    f"{fts['p50']} / {fts['p95']} / {fts['p99']}",
                ]
            )
        print()
        print(markdown_table(["kind", "lwc memoryMs p50/p95/p99", "FTS5 bm25 top-20"], rows))
        first = served["first"]
        print(
            f"\nfirst call (typo): memoryMs {first['memoryMs']} ({first['round_trip_ms']} ms "
            f"round trip); server RSS after {served['rss_mib']} MiB (peak {served['hwm_mib']})"
        )
        for check in run["checks"]:
            print(f"- {'ok  ' if check['ok'] else 'FAIL'} {check['what']}: {check['value']}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench scale", description=__doc__)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated Page counts")
    parser.add_argument("--queries", type=int, default=200, help="queries of each kind")
    parser.add_argument("--quick", action="store_true", help="2,000 Pages, 30 queries a kind")
    parser.add_argument("--rebuild", action="store_true", help="write the lwc store again")
    parser.add_argument("--no-fts5", action="store_true", help="skip the FTS5 baseline")
    parser.add_argument(
        "--code", type=Path, help="serve with the lwc_trio package of this checkout (A/B runs)"
    )
    parser.add_argument(
        "--max-documents", type=int, default=DEFAULT_RESULTS, help="maxDocuments of each query"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        sizes = [2_000] if args.quick else [int(s) for s in args.sizes.split(",") if s]
    except ValueError:
        print("scale: --sizes takes comma-separated integers", file=sys.stderr)
        return 2
    per_kind = 30 if args.quick else args.queries
    if not sizes or min(sizes) < 10 or per_kind < 1:
        print("scale: sizes must be ≥ 10 and --queries ≥ 1", file=sys.stderr)
        return 2
    result: dict[str, Any] = {"machine": machine(), "code": str(args.code or REPO), "runs": []}
    try:
        for size in sizes:
            result["runs"].append(
                run_size(
                    size, per_kind, args.rebuild, args.code, not args.no_fts5, args.max_documents
                )
            )
    except (RuntimeError, OSError, KeyError) as exc:
        print(f"scale: {exc}", file=sys.stderr)
        return 2
    result["machine_after"] = machine()
    result["pass"] = all(c["ok"] for run in result["runs"] for c in run["checks"])
    return emit(result, args.json, report)
