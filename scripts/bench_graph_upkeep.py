#!/usr/bin/env python3
"""Cost of keeping the document graph ready through a write (issue 14, graph upkeep).

For each size, builds a store of N linked Pages (three random `[[links]]` each, every tenth
citing one of N/20 Sources) through the real writer, then measures in the same run, as medians
of 5: a `page put` with the graph disabled (the baseline), a full `lwc graph build`, and the same
`page put` with the graph built (the projection is updated inside that write). Prints the ratio
of the upkeep put to the baseline put and to a full build.

    python scripts/bench_graph_upkeep.py            # 2,000 and 20,000 pages
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lwc_trio.memory.store import create_store  # noqa: E402
from lwc_trio.memory.writer import PageInput, SourceInput, Wiki, decode_source  # noqa: E402


def build(db: Path, n: int) -> None:
    rng = random.Random(14)
    sources = []
    for i in range(max(1, n // 20)):
        text, digest = decode_source(f"source {i} text".encode(), name="s")
        sources.append(SourceInput(f"s{i}", None, text, digest))
    with Wiki(db) as wiki:
        ids = [item["id"] for item in wiki.add_sources(sources)]
        pages = [
            PageInput(
                slug=f"p{i}", title=f"Page {i}",
                body=" ".join(f"[[p{rng.randrange(n)}]]" for _ in range(3)),
                sources=(rng.choice(ids),) if i % 10 == 0 else (),
            )
            for i in range(n)
        ]  # fmt: skip
        wiki.put_pages(pages)


def median_ms(action: object, runs: int = 5) -> float:
    times = []
    for i in range(runs):
        start = time.perf_counter()
        action(i)  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    print(f"{'pages':>7} {'put (off) ms':>13} {'build ms':>9} {'put (ready) ms':>15} "
          f"{'vs put':>7} {'vs build':>9}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-upkeep-") as tmp:
        for n in (2_000, 20_000):
            db = Path(tmp) / f"{n}.db"
            create_store(db)
            build(db, n)
            with Wiki(db) as wiki:

                def put(i: int, wiki: Wiki = wiki, n: int = n) -> None:
                    body = f"v{i} [[p{(i * 7) % n}]] [[p{(i * 13) % n}]]"
                    wiki.put_page(PageInput(slug="p5", title="P5", body=body))

                off = median_ms(put)
                wiki.set_graph_enabled(True)
                built = median_ms(lambda _i, wiki=wiki: wiki.build_graph(), runs=1)
                ready = median_ms(lambda i: put(i + 100))
                assert wiki.status()["graph"]["status"] == "ready"
            print(f"{n:>7,} {off:>13.1f} {built:>9.0f} {ready:>15.1f} "
                  f"{ready / off:>6.1f}x {ready / built:>8.3f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
