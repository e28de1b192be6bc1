#!/usr/bin/env python3
"""Memory-plane benchmark (issue 3, "Performance"): write throughput, end-to-end latency, RSS.

For each wiki size it

1. generates a deterministic wiki (seeded RNG, Zipf-distributed vocabulary, Markdown bodies
   with headings, lists, code spans, fenced blocks and `[[wikilinks]]` between pages),
2. builds it through the real write path (`Wiki(db).put_pages`, 500 Pages per transaction,
   exactly what `lwc page import` does) and reports bulk write pages/s,
3. starts a real `lwc serve --mcp --path WS` and, over raw JSON lines on stdio, sequentially
   measures for every query: a `ping` round trip, the `lwc_explore` memory-mode round trip,
   and the raw floor: the engine's BM25 FTS5 statement run directly on the same SQLite file
   with `sqlite3` in this process,
4. reads the server's VmRSS (and VmHWM) from /proc/PID/status after the queries.

Targets (issue 3): median ≤ 15 ms at 10,000 pages; median ≤ 3 × floor median + ping median;
cost (e2e − ping) growing no faster than the floor from the smallest to the largest size;
server RSS ≤ 150 MB at 50,000 pages; bulk write ≥ 1,000 pages/s.

    python scripts/bench_memory.py                     # 1,000 / 10,000 / 50,000 pages
    python scripts/bench_memory.py --quick             # tiny smoke run (seconds)
    python scripts/bench_memory.py --json              # machine-readable results on stdout
    python scripts/bench_memory.py --profile           # + cProfile of the engine path (stderr)

Everything generated lives in one temporary directory removed at the end. Progress goes to
stderr. Exit status: 0 all targets pass (or n/a), 1 a target fails, 2 the run broke.
"""

from __future__ import annotations

import argparse
import bisect
import cProfile
import io
import json
import math
import os
import platform
import pstats
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lwc_trio.memory import search as engine_search  # noqa: E402
from lwc_trio.memory.store import create_store  # noqa: E402
from lwc_trio.memory.tokenize import STOP_WORDS, tokenize  # noqa: E402
from lwc_trio.memory.writer import PageInput, Wiki  # noqa: E402

# --------------------------------------------------------------------------- the raw floor

# The statement `lwc_trio.memory.search._lexical` issues, verbatim (weights 8/6/4/1, LIMIT
# 4 × maxDocuments). `check_floor_sql` fails loudly if the engine's SQL drifts from this.
FLOOR_SQL = (
    "SELECT d.doc_type, d.ident, bm25(search_index, 8.0, 6.0, 4.0, 1.0) AS score "
    "FROM search_index JOIN search_docs AS d ON d.doc_id = search_index.rowid "
    "WHERE search_index MATCH ? ORDER BY score, d.doc_type, d.ident LIMIT ?"
)
# `selective_terms`: a term in at least half of the documents is not matched on.
COUNT_DOCS_SQL = "SELECT count(*) FROM search_docs"
COUNT_TERM_SQL = "SELECT count(*) FROM search_index WHERE search_index MATCH ?"
MAX_DOCUMENTS = 8  # the tool's default maxDocuments


def check_floor_sql() -> None:
    import inspect

    source = inspect.getsource(engine_search)
    weights = ", ".join(str(w) for w in engine_search.BM25_WEIGHTS)
    wanted = [
        "SELECT d.doc_type, d.ident, bm25(search_index, {weights}) AS score ",
        "FROM search_index JOIN search_docs AS d ON d.doc_id = search_index.rowid ",
        "WHERE search_index MATCH ? ORDER BY score, d.doc_type, d.ident LIMIT ?",
        COUNT_TERM_SQL,
    ]
    missing = [part for part in wanted if part not in source]
    if missing or weights != "8.0, 6.0, 4.0, 1.0" or engine_search.CANDIDATE_FACTOR != 4:
        sys.exit(f"bench_memory: the engine's BM25 SQL changed; update FLOOR_SQL ({missing})")


def floor_match(conn: sqlite3.Connection, terms: list[str]) -> str:
    """The MATCH expression the engine ends up with (selective terms, each quoted)."""
    if len(terms) >= 2:
        total = conn.execute(COUNT_DOCS_SQL).fetchone()[0]
        kept = [
            t for t in terms if 2 * conn.execute(COUNT_TERM_SQL, (f'"{t}"',)).fetchone()[0] < total
        ]
        terms = kept or terms
    return " OR ".join(f'"{t}"' for t in terms)


# --------------------------------------------------------------------------- generation

# Zipf ranks 1..~60 are English function words, as in real text: most of them are on the
# tokenizer's stop list (never indexed), the rest ("from", "have", "also"…) become terms found
# in most documents. Then the technical words, then a long tail of synthetic words.
_FUNCTION_TEXT = (
    "the of and to a in is it that for on with as be at by this are or not but from have an "
    "they which you we can will if no there their these then such into was do does how what "
    "when where who why did i me my our your has all more also use only new one should must "
    "each other"
)
FUNCTION_WORDS = tuple(dict.fromkeys(_FUNCTION_TEXT.split()))
_COMMON_TEXT = (
    "server config cache deploy request response error handler query index build test "
    "release version module service client token session database schema migration worker "
    "thread queue timeout retry logging metrics latency memory store page search graph node "
    "edge link source document parser tokenizer plugin runtime process signal socket stream "
    "buffer frame protocol transport endpoint router policy permission user account project "
    "workspace branch commit review merge pipeline artifact container image cluster network "
    "storage backup restore snapshot monitor alert incident rollback feature flag option "
    "default value field record table column row key lock transaction commit journal file "
    "directory path format encoding unicode string integer float list map set batch limit "
    "budget deadline cancel shutdown startup health check design decision tradeoff risk note"
)
COMMON_WORDS = tuple(dict.fromkeys(_COMMON_TEXT.split()))
_SYLLABLE_TEXT = (
    "ka ri to ma ne so lu vi de pa mo ki ra te no sa fu gi be zo ta re mi ku ho ya "
    "shi chi ven dor lan mar tel quo bri sta fen gal dra plo tri cor nex vor hal pen"
)
SYLLABLES = _SYLLABLE_TEXT.split()
KINDS = ("concept",) * 14 + ("decision",) * 2 + ("how-to",) * 2 + ("reference", "source")
VOCAB_SIZE = 40_000
ZIPF_S = 1.0
# Titles and headings draw from below the function words.
TITLE_RANK = len(FUNCTION_WORDS) + 10


class Generator:
    """Deterministic wiki generator: the same (seed, size) always gives the same pages."""

    def __init__(self, seed: int, size: int) -> None:
        self.rng = random.Random(f"lwc-bench-{seed}-{size}")
        self.size = size
        self.vocab = self._vocabulary()
        self.cum = list(_cumulative(len(self.vocab), ZIPF_S))
        # Link targets: a Zipf over a random permutation of the pages, so a few are hubs.
        self.link_order = list(range(size))
        self.rng.shuffle(self.link_order)
        self.link_cum = list(_cumulative(size, 0.9))
        self.df: Counter[str] = Counter()
        self.titles: list[str] = []
        self.slugs: list[str] = []

    def _vocabulary(self) -> list[str]:
        rng = random.Random(20240501)  # the same vocabulary for every size
        words = [*FUNCTION_WORDS, *(w for w in COMMON_WORDS if w not in FUNCTION_WORDS)]
        seen = set(words)
        while len(words) < VOCAB_SIZE:
            n = rng.choice((2, 2, 3, 3, 3, 4, 4, 5))
            word = "".join(rng.choice(SYLLABLES) for _ in range(n))
            if word not in seen and word not in STOP_WORDS:
                seen.add(word)
                words.append(word)
        return words

    def words(self, k: int, lo_rank: int = 0) -> list[str]:
        if lo_rank:
            top = self.cum[-1]
            floor = self.cum[lo_rank - 1]
            picks = [
                bisect.bisect_left(self.cum, floor + self.rng.random() * (top - floor))
                for _ in range(k)
            ]
            return [self.vocab[min(i, len(self.vocab) - 1)] for i in picks]
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def sentence(self, used: list[str], *, links: bool = True) -> str:
        rng = self.rng
        ws = self.words(rng.randint(8, 22))
        used.extend(ws)
        out: list[str] = []
        for w in ws:
            if rng.random() < 0.03 and w not in STOP_WORDS:
                out.append(f"`{w}_{rng.choice(ws)}()`")
            else:
                out.append(w)
        if links and rng.random() < 0.3:
            target = self.link_target()
            if rng.random() < 0.3:
                alias = " ".join(self.words(2))
                out.insert(rng.randrange(len(out) + 1), f"[[{target}|{alias}]]")
            else:
                out.insert(rng.randrange(len(out) + 1), f"see [[{target}]]")
        out[0] = out[0][:1].upper() + out[0][1:]
        return " ".join(out) + "."

    def link_target(self) -> str:
        i = bisect.bisect_left(self.link_cum, self.rng.random() * self.link_cum[-1])
        return self.slugs[self.link_order[min(i, self.size - 1)]]

    def title(self, i: int) -> str:
        if i < 3:
            return ("Index", "Overview", "Project README")[i]
        k = self.rng.choice((1, 2, 2, 2, 3, 3, 4))
        return " ".join(w.capitalize() for w in self.words(k, lo_rank=TITLE_RANK))

    def body(self, title: str, used: list[str]) -> str:
        rng = self.rng
        target = min(3000, max(30, int(rng.lognormvariate(math.log(200), 0.6))))
        parts = [f"# {title}", "", " ".join(self.sentence(used) for _ in range(rng.randint(1, 3)))]
        count = sum(len(s.split()) for s in parts)
        while count < target:
            heading = " ".join(self.words(rng.randint(1, 3), lo_rank=TITLE_RANK)).capitalize()
            used.extend(heading.lower().split())
            block: list[str] = ["", f"## {heading}", ""]
            for _ in range(rng.randint(1, 3)):
                choice = rng.random()
                if choice < 0.55:
                    block.append(" ".join(self.sentence(used) for _ in range(rng.randint(2, 5))))
                elif choice < 0.85:
                    bullet = "-" if rng.random() < 0.7 else "1."
                    block.extend(
                        f"{bullet} {self.sentence(used)}" for _ in range(rng.randint(3, 6))
                    )
                else:
                    ident = self.words(3)
                    used.extend(ident)
                    block.extend(
                        [
                            "```python",
                            f"def {ident[0]}_{ident[1]}({ident[2]}):",
                            f"    return [[{ident[2]}]]  # not a link: inside code",
                            "```",
                        ]
                    )
                block.append("")
            parts.extend(block)
            count += sum(len(s.split()) for s in block)
        return "\n".join(parts).rstrip() + "\n"

    def pages(self) -> list[PageInput]:
        rng = self.rng
        seen: set[str] = set()
        for i in range(self.size):
            title = self.title(i)
            base = "-".join(title.lower().split())
            slug, n = base, 1
            while slug in seen:
                n += 1
                slug = f"{base}-{n}"
            seen.add(slug)
            self.titles.append(title)
            self.slugs.append(slug)
        out: list[PageInput] = []
        for i in range(self.size):
            used: list[str] = self.titles[i].lower().split()
            summary = self.sentence(used, links=False) if rng.random() < 0.4 else None
            body = self.body(self.titles[i], used)
            self.df.update(w for w in set(used) if w not in STOP_WORDS)
            provenance = ("agent-observed",) if rng.random() < 0.2 else ()
            out.append(
                PageInput(
                    slug=self.slugs[i],
                    title=self.titles[i],
                    body=body,
                    kind=rng.choice(KINDS),
                    summary=summary,
                    provenance=provenance,
                )
            )
        return out

    def queries(self, n: int) -> list[tuple[str, str]]:
        """`n` (category, query) pairs mixing common, rare, title, typo and no-hit queries."""
        rng = random.Random(f"lwc-bench-queries-{self.size}")
        by_df = sorted(self.df.items(), key=lambda kv: (-kv[1], kv[0]))
        # Agents search for content words, not "from" or "have".
        content = [(w, d) for w, d in by_df if w not in FUNCTION_WORDS]
        by_df = content
        common = [w for w, _ in by_df[:200]]
        rare = [w for w, d in by_df if 1 <= d <= 5] or [w for w, _ in by_df[-200:]]
        mid = [w for w, _ in by_df[200:3000]] or common
        plan = (
            ["common"] * 28 + ["rare"] * 22 + ["mixed"] * 20 + ["title"] * 10
            + ["question"] * 10 + ["typo"] * 5 + ["nohit"] * 5
        )  # fmt: skip
        out: list[tuple[str, str]] = []
        for i in range(n):
            cat = plan[i % len(plan)]
            if cat == "common":
                q = " ".join(rng.sample(common, rng.randint(1, 3)))
            elif cat == "rare":
                q = " ".join(rng.sample(rare, rng.randint(1, 2)))
            elif cat == "mixed":
                q = " ".join([*rng.sample(common, rng.randint(1, 2)), rng.choice(rare)])
            elif cat == "title":
                q = rng.choice(self.titles[3:])
            elif cat == "question":
                q = f"how do we {rng.choice(mid)} the {rng.choice(common)} {rng.choice(mid)}"
            elif cat == "typo":
                w = rng.choice([t for t in self.titles[3:] if len(t) >= 8]).split()[0].lower()
                j = rng.randrange(1, len(w) - 1)
                q = w[:j] + w[j + 1 :]  # one deletion after the first letter
            else:
                q = " ".join(f"xq{rng.randrange(10**6)}zv" for _ in range(rng.randint(1, 2)))
            out.append((cat, q))
        rng.shuffle(out)
        return out


def _cumulative(n: int, s: float) -> list[float]:
    total, out = 0.0, []
    for r in range(1, n + 1):
        total += 1.0 / r**s
        out.append(total)
    return out


# --------------------------------------------------------------------------- the server


class Server:
    """A real `lwc serve --mcp` over raw newline-delimited JSON-RPC, one request at a time."""

    def __init__(self, workspace: Path, home: Path, stderr_path: Path) -> None:
        lwc = Path(sys.executable).with_name("lwc")
        argv = [str(lwc)] if lwc.exists() else [sys.executable, "-m", "lwc_trio"]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
        }
        self._stderr = stderr_path.open("wb")
        self.proc = subprocess.Popen(
            [*argv, "serve", "--mcp", "--path", str(workspace)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=workspace,
        )
        self._next = 0

    def call(self, method: str, params: dict[str, Any] | None = None) -> tuple[float, Any]:
        """(round trip in ms up to the response's newline, parsed response)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._next += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            msg["params"] = params
        line = json.dumps(msg, ensure_ascii=False).encode() + b"\n"
        t0 = time.perf_counter()
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        raw = self.proc.stdout.readline()
        elapsed = (time.perf_counter() - t0) * 1000.0
        if not raw:
            raise RuntimeError("the server closed stdout")
        reply = json.loads(raw)
        if reply.get("id") != self._next:
            raise RuntimeError(f"unexpected reply {raw[:200]!r}")
        return elapsed, reply

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.proc.stdin.flush()

    def cpu_s(self) -> float:
        """The server's user + system CPU time so far (clock ticks, 10 ms resolution)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kb(self) -> tuple[int, int]:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._stderr.close()
        return code


def explore_params(query: str, workspace: Path) -> dict[str, Any]:
    return {
        "name": "lwc_explore",
        "arguments": {"query": query, "projectPath": str(workspace), "mode": "memory"},
    }


# --------------------------------------------------------------------------- statistics


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def p99(xs: list[float]) -> float:
    s = sorted(xs)
    return s[max(0, math.ceil(0.99 * len(s)) - 1)]  # nearest rank


# --------------------------------------------------------------------------- one size


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
    server = Server(workspace, home, tmp / f"server-{size}.stderr")
    floor_conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    try:
        server.call(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench_memory", "version": "1"},
            },
        )
        server.notify("notifications/initialized")
        first_ms, first = server.call("tools/call", explore_params(queries[0][1], workspace))
        if first["result"]["structuredContent"]["memory"]["state"] != "ready":
            raise RuntimeError(f"memory not ready: {json.dumps(first)[:400]}")
        # Warm-up (not measured): fills the per-revision caches (link degrees, the fuzzy
        # title index) and the OS page cache, as a long-lived session would have.
        warm = [q for c, q in queries if c == "nohit"][:1] + [q for _c, q in queries[:10]]
        for q in warm:
            server.call("tools/call", explore_params(q, workspace))
            floor_conn.execute(FLOOR_SQL, (floor_match(floor_conn, tokenize(q)), 32)).fetchall()

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
            # The floor: the engine's BM25 statement with the engine's MATCH expression.
            terms = tokenize(q)
            s0 = time.perf_counter()
            match = floor_match(floor_conn, terms)
            s1, u1 = time.perf_counter(), time.thread_time()
            floor_conn.execute(FLOOR_SQL, (match, MAX_DOCUMENTS * 4)).fetchall()
            s2, u2 = time.perf_counter(), time.thread_time()
            select.append((s1 - s0) * 1000.0)
            floor.append((s2 - s1) * 1000.0)
            floor_cpu.append((u2 - u1) * 1000.0)
        server_cpu = server.cpu_s() - server_cpu0
        load_after = os.getloadavg()[0]
        rss_kb, hwm_kb = server.rss_kb()
    finally:
        floor_conn.close()
        code = server.close()
    stderr = (tmp / f"server-{size}.stderr").read_bytes()
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
        "e2e_p99_ms": round(p99(e2e), 3),
        "floor_median_ms": round(median(floor), 3),
        "floor_p99_ms": round(p99(floor), 3),
        "floor_cpu_median_ms": round(median(floor_cpu), 3),
        "term_select_median_ms": round(median(select), 3),
        "ping_median_ms": round(median(pings), 3),
        "ping_p99_ms": round(p99(pings), 3),
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
    from lwc_trio.memory.engine import MemoryQuery, explore_memory

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


# --------------------------------------------------------------------------- report


def machine_notes() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores{mem}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; SQLite {sqlite3.sqlite_version}"
    )


def evaluate(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(target, PASS|FAIL|n/a, detail)."""
    out: list[tuple[str, str, str]] = []
    at = {r["pages"]: r for r in rows}
    r10 = at.get(10_000)
    if r10 is None:
        out.append(("median ≤ 15 ms at 10,000 pages", "n/a", "10,000 not in --sizes"))
    else:
        m = r10["e2e_median_ms"]
        out.append(("median ≤ 15 ms at 10,000 pages", _pf(m <= 15), f"{m:.2f} ms"))
    worst = max(rows, key=lambda r: r["ratio"])
    out.append(
        (
            "median ≤ 3 × floor + ping (every size)",
            _pf(worst["ratio"] <= 1.0),
            ", ".join(f"{r['pages']}: {r['ratio']:.2f}" for r in rows),
        )
    )
    lo, hi = rows[0], rows[-1]
    if len(rows) < 2 or lo["pages"] == hi["pages"]:
        out.append(("cost growth ≤ floor growth", "n/a", "needs two sizes"))
    else:
        cost_lo = lo["e2e_median_ms"] - lo["ping_median_ms"]
        cost_hi = hi["e2e_median_ms"] - hi["ping_median_ms"]
        g_cost = cost_hi / cost_lo
        g_floor = hi["floor_median_ms"] / lo["floor_median_ms"]
        out.append(
            (
                f"cost growth ≤ floor growth ({lo['pages']:,} → {hi['pages']:,})",
                _pf(g_cost <= g_floor),
                f"(e2e − ping) ×{g_cost:.2f} vs floor ×{g_floor:.2f}",
            )
        )
    big = [r for r in rows if r["pages"] >= 50_000]
    if not big:
        out.append(("RSS ≤ 150 MB at 50,000 pages", "n/a", "no size ≥ 50,000"))
    else:
        rss = big[0]["rss_mb"]
        out.append(("RSS ≤ 150 MB at 50,000 pages", _pf(rss <= 150), f"{rss:.1f} MB"))
    slowest = min(rows, key=lambda r: r["write_pages_per_s"])
    out.append(
        (
            "bulk write ≥ 1,000 pages/s (every size)",
            _pf(slowest["write_pages_per_s"] >= 1000),
            ", ".join(f"{r['pages']}: {r['write_pages_per_s']:.0f}" for r in rows),
        )
    )
    return out


def _pf(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def render(rows: list[dict[str, Any]], verdicts: list[tuple[str, str, str]]) -> str:
    head = (
        "| pages | write pages/s | e2e median ms | e2e p99 ms | floor median ms | floor p99 ms "
        "| ping median ms | e2e/(3×floor+ping) | RSS MB |"
    )
    lines = [head, "|" + "---:|" * 9]
    for r in rows:
        lines.append(
            f"| {r['pages']:,} | {r['write_pages_per_s']:,.0f} | {r['e2e_median_ms']:.2f} "
            f"| {r['e2e_p99_ms']:.2f} | {r['floor_median_ms']:.3f} | {r['floor_p99_ms']:.3f} "
            f"| {r['ping_median_ms']:.3f} | {r['ratio']:.2f} | {r['rss_mb']:.1f} |"
        )
    lines += [
        "",
        "| pages | mean body chars | write CPU pages/s | floor CPU median ms "
        "| server CPU ms/query | first call ms | load avg (1 min) before → after |",
        "|" + "---:|" * 7,
    ]
    for r in rows:
        lines.append(
            f"| {r['pages']:,} | {r['body_chars_mean']:,} | {r['write_cpu_pages_per_s']:,.0f} "
            f"| {r['floor_cpu_median_ms']:.3f} | {r['server_cpu_ms_per_query']:.2f} "
            f"| {r['first_call_ms']:.1f} "
            f"| {r['loadavg_1min'][0]:.2f} → {r['loadavg_1min'][1]:.2f} |"
        )
    lines += ["", "| target | result | measured |", "|---|---|---|"]
    lines += [f"| {name} | **{verdict}** | {detail} |" for name, verdict, detail in verdicts]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
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
        log(f"bench_memory: {type(exc).__name__}: {exc}")
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    verdicts = evaluate(rows)
    report = {
        "command": " ".join(["python", "scripts/bench_memory.py", *sys.argv[1:]]),
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


if __name__ == "__main__":
    sys.exit(main())
