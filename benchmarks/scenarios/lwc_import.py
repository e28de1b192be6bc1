"""`lwc import --from-lwc` throughput (issue 14: at least 1,000 pages/s).

    scripts/bench lwc-import [--quick] [--json] [--sizes 5000,20000]

Builds a deterministic LWC-shaped store (`benchmarks.lwc_store`: WAL mode, `user_version` 16,
LWC's tables, written with the test extra's `apsw`) of N Pages (~1 KB Markdown, three
`[[links]]` each, every tenth citing one of N/20 Sources) and times the real CLI end to end
(process start, private copy, validation, one write transaction), then a second, idempotent
import of the same store, and the same-run baseline: `lwc page import FILE.jsonl` of the same
Pages into a fresh store (the existing bulk write path, `writer.IMPORT_BATCH` Pages per
transaction).

Target: every first import at least 1,000 pages/s. Exit 0 when it holds, 1 when not, 2 on a
set-up error.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.fixtures import logger, lwc_cli, private_env, scratch
from benchmarks.lwc_store import LwcPage, LwcSource, make_lwc_store
from benchmarks.table import emit, machine, machine_line, markdown_table

TARGET = 1_000.0
VOCABULARY = (
    "trio", "nursery", "channel", "cancel", "scope", "deadline", "actor", "memory", "store",
    "page", "source", "graph", "link", "search", "index", "token", "stem", "query", "rank",
    "snippet", "wiki", "release", "policy", "journal",
)  # fmt: skip


def corpus(n: int, seed: int = 14) -> tuple[list[LwcPage], list[LwcSource]]:
    """N Pages and N/20 Sources, the same for the same seed."""
    rng = random.Random(seed)
    sources = [
        LwcSource(i + 1, " ".join(rng.choices(VOCABULARY, k=300)), f"s{i}", f"d/s{i}.md")
        for i in range(max(1, n // 20))
    ]
    pages = []
    for i in range(n):
        links = " ".join(f"[[p{rng.randrange(n)}]]" for _ in range(3))
        body = f"# Page {i}\n\n" + " ".join(rng.choices(VOCABULARY, k=150)) + f"\n\n{links}\n"
        pages.append(
            LwcPage(
                slug=f"p{i}", title=f"Page {i} {rng.choice(VOCABULARY)}", body=body,
                summary=f"summary {i}", provenance=("agent-observed",),
                sources=(rng.randrange(len(sources)) + 1,) if i % 10 == 0 else (),
            )
        )  # fmt: skip
    return pages, sources


def timed(args: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[float, Any]:
    """Seconds the CLI took, and its JSON."""
    start = time.perf_counter()
    out = lwc_cli(args, env, cwd)
    return time.perf_counter() - start, out


def one_size(root: Path, n: int, env: dict[str, str]) -> dict[str, Any]:
    pages, sources = corpus(n)
    store = make_lwc_store(root / f"lwc-{n}" / "wiki.db", pages, sources)
    target, base = root / f"target-{n}", root / f"base-{n}"
    for folder in (target, base):
        folder.mkdir()
        lwc_cli(["init"], env, folder)
    first, report = timed(["import", "--from-lwc", str(store)], env, target)
    again, repeat = timed(["import", "--from-lwc", str(store)], env, target)
    jsonl = root / f"pages-{n}.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        for page in pages:
            row = {"slug": page.slug, "title": page.title, "body": page.body,
                   "summary": page.summary, "provenance": list(page.provenance)}  # fmt: skip
            out.write(json.dumps(row) + "\n")
    baseline, _ = timed(["page", "import", str(jsonl)], env, base)
    return {
        "pages": n,
        "import_pps": n / first,
        "again_pps": n / again,
        "baseline_pps": n / baseline,
        "created": report["pages"]["created"],
        "unchanged_again": repeat["pages"]["unchanged"],
    }


def report(result: dict[str, Any]) -> None:
    rows = [
        [f"{r['pages']:,}", f"{r['import_pps']:,.0f}", f"{r['again_pps']:,.0f}",
         f"{r['baseline_pps']:,.0f}", f"{r['import_pps'] / r['baseline_pps']:.2f}"]
        for r in result["rows"]
    ]  # fmt: skip
    headers = ["pages", "import p/s", "2nd import p/s", "page import p/s", "import / baseline"]
    print(markdown_table(headers, rows, align="rrrrr"))
    print(
        f"\ntarget: first import >= {TARGET:,.0f} pages/s -> {'PASS' if result['pass'] else 'FAIL'}"
    )
    print(machine_line(result["machine"]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench lwc-import", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1,000 Pages only")
    parser.add_argument("--json", action="store_true", help="machine-readable result")
    parser.add_argument("--sizes", default="5000,20000", help="comma-separated Page counts")
    args = parser.parse_args(argv)
    sizes = [1_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    log = logger("lwc-import", quiet=args.json)
    rows = []
    with scratch("bench-lwc-import-") as root:
        home = root / "home"
        home.mkdir()
        env = private_env(home)
        for n in sizes:
            log(f"{n:,} pages")
            row = one_size(root, n, env)
            if (row["created"], row["unchanged_again"]) != (n, n):
                log(f"unexpected counts: {row}")
                return 2
            rows.append(row)
    passed = all(row["import_pps"] >= TARGET for row in rows)
    return emit({"rows": rows, "pass": passed, "machine": machine()}, args.json, report)
