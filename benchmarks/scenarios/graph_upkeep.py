"""What keeping the document graph `ready` costs a write (issue 14, graph upkeep).

    scripts/bench graph-upkeep [--json] [--sizes 2000,20000]

For each size, writes N linked Pages (three random `[[links]]` each, every tenth citing one of
N/20 Sources) through the real writer (`lwc_trio.memory.index.writer.Wiki`, what the CLI
calls), then measures in the same run, as medians of 5 (in process, no CLI start-up): a `page
put` with the graph disabled (the baseline), one full `graph build`, and the same kind of `page
put` with the graph built, which updates the projection inside the write. Check: the graph is
still `ready` after the puts. Reported: the upkeep put against the baseline put and against a
full build.

Exit 0 when the check holds, 1 when not.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.fixtures import logger, scratch
from benchmarks.stats import median, ms
from benchmarks.table import emit, machine, machine_line, markdown_table
from lwc_trio.memory.index.inputs import PageInput, SourceInput, decode_source
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.storage.store import create_store

RUNS = 5


def build(wiki: Wiki, n: int) -> None:
    """N Pages with random links and a Source every tenth Page."""
    rng = random.Random(14)
    sources = []
    for i in range(max(1, n // 20)):
        text, digest = decode_source(f"source {i} text".encode(), name="s")
        sources.append(SourceInput(f"s{i}", None, text, digest))
    ids = [item["id"] for item in wiki.add_sources(sources)]
    wiki.put_pages(
        [
            PageInput(
                slug=f"p{i}", title=f"Page {i}",
                body=" ".join(f"[[p{rng.randrange(n)}]]" for _ in range(3)),
                sources=(rng.choice(ids),) if i % 10 == 0 else (),
            )
            for i in range(n)
        ]
    )  # fmt: skip


def median_ms(action: Callable[[int], object], runs: int = RUNS) -> float:
    times = []
    for i in range(runs):
        start = time.perf_counter()
        action(i)
        times.append(time.perf_counter() - start)
    return ms(median(times))


def one_size(root: Path, n: int) -> dict[str, Any]:
    db = root / f"{n}.db"
    create_store(db)
    with Wiki(db) as wiki:
        build(wiki, n)

        def put(i: int) -> None:
            body = f"v{i} [[p{(i * 7) % n}]] [[p{(i * 13) % n}]]"
            wiki.put_page(PageInput(slug="p5", title="P5", body=body))

        off = median_ms(put)
        wiki.set_graph_enabled(True)
        built = median_ms(lambda _i: wiki.build_graph(), runs=1)
        ready = median_ms(lambda i: put(i + 100))
        state = wiki.status()["graph"]["status"]
    return {"pages": n, "put_ms": off, "build_ms": built, "upkeep_put_ms": ready, "state": state}


def report(result: dict[str, Any]) -> None:
    rows = [
        [f"{r['pages']:,}", f"{r['put_ms']:.1f}", f"{r['build_ms']:.0f}",
         f"{r['upkeep_put_ms']:.1f}", f"{r['upkeep_put_ms'] / r['put_ms']:.1f}x",
         f"{r['upkeep_put_ms'] / r['build_ms']:.3f}x", r["state"]]
        for r in result["rows"]
    ]  # fmt: skip
    headers = ["pages", "put ms (graph off)", "build ms", "put ms (graph ready)", "vs put",
               "vs build", "graph after"]  # fmt: skip
    print(markdown_table(headers, rows, align="rrrrrrl"))
    print(f"\ncheck: graph still ready after the puts -> {'PASS' if result['pass'] else 'FAIL'}")
    print(machine_line(result["machine"]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench graph-upkeep", description=__doc__)
    parser.add_argument("--json", action="store_true", help="machine-readable result")
    parser.add_argument("--sizes", default="2000,20000", help="comma-separated Page counts")
    args = parser.parse_args(argv)
    log = logger("graph-upkeep", quiet=args.json)
    rows = []
    with scratch("bench-graph-upkeep-") as root:
        for n in (int(s) for s in args.sizes.split(",")):
            log(f"{n:,} pages")
            rows.append(one_size(root, n))
    passed = all(row["state"] == "ready" for row in rows)
    return emit({"rows": rows, "pass": passed, "machine": machine()}, args.json, report)
