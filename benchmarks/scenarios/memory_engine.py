"""Memory-engine microbenchmark: the cost of one `explore_memory` call, in process.

End-to-end medians on a shared machine move by milliseconds from run to run; the hardening
budget of issue 12 (the median memory call may grow by at most 0.2 ms) is far below that
noise. This measures what the hardening touched without the transport: the store walk, the
file checks, the pooled connection's transaction and the result bounds. It builds one
deterministic Wiki with the memory scenario's generator (or reuses `--dir`), then runs
`explore_memory` in one thread, as a memory-lane thread does (pooled readers warm), cycling
through the generated queries, plus a zero-term query that isolates the fixed per-call cost.

    scripts/bench memory-engine --dir /tmp/engine-bench               # build once, then time
    scripts/bench memory-engine --dir /tmp/engine-bench --calls 3000

The baseline is another checkout run in alternation on the same `--dir` (same store): the
script reports figures only, no target.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.scenarios.memory_corpus import Generator
from benchmarks.stats import mean, median, percentile
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.query.engine import MemoryQuery, explore_memory
from lwc_trio.memory.storage.store import create_store


def build(root: Path, size: int, seed: int) -> list[str]:
    """The workspace `root/ws` with a `size`-page Wiki (built once); the query texts."""
    gen = Generator(seed, size)
    pages = gen.pages()
    queries = [q for _kind, q in gen.queries(200)]
    db = root / "ws" / ".lwc" / "wiki.db"
    if not db.exists():
        db.parent.mkdir(parents=True)
        (root / "home").mkdir(exist_ok=True)
        assert create_store(db)
        with Wiki(db) as wiki:
            wiki.put_pages(pages)
    return queries


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dir", type=Path, required=True, help="where the Wiki is (re)used")
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    queries = build(args.dir, args.size, args.seed)
    ws, home = (args.dir / "ws").resolve(), (args.dir / "home").resolve()
    both = frozenset({"project", "global"})
    cancelled = threading.Event()

    def run(text: str) -> tuple[float, float]:
        q = MemoryQuery(text, ws, ws, home, "all", both, 8)
        t0, c0 = time.perf_counter(), time.thread_time()
        answer = explore_memory(q, cancelled=cancelled)
        cpu, wall = time.thread_time() - c0, time.perf_counter() - t0
        assert answer["state"] == "ready", answer
        return wall, cpu

    for text in queries:  # warm: pooled readers, per-revision caches, OS page cache
        run(text)
    samples = [run(queries[i % len(queries)]) for i in range(args.calls)]
    fixed = [run("the")[1] for _ in range(args.calls)]  # a stop word: zero terms
    wall, cpu = [s[0] * 1e3 for s in samples], [s[1] * 1e3 for s in samples]
    print(
        f"{args.size} pages, {args.calls} calls: median {median(wall):.3f} ms, "
        f"p90 {percentile(wall, 0.9):.3f} ms, mean {mean(wall):.3f} ms; CPU median "
        f"{median(cpu):.3f} ms, mean {mean(cpu):.3f} ms; fixed CPU (zero terms) median "
        f"{median(fixed) * 1e6:.1f} us"
    )
    return 0
