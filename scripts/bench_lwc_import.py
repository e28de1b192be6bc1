#!/usr/bin/env python3
"""`lwc import --from-lwc` throughput (issue 14: at least 1,000 pages/s).

Builds a deterministic LWC-shaped store (tests/lwc_fixture.py: WAL mode, user_version 16,
LWC's tables; needs the test extra's `apsw`) with N Pages of ~1 KB Markdown, every tenth citing
one of N/20 Sources, a few `[[links]]` each, then times, in the same run:

- `lwc import --from-lwc` into a fresh store (the real CLI process, end to end), and
- the baseline: `lwc page import FILE.jsonl` of the same Pages into another fresh store (the
  existing bulk write path, 500 Pages per transaction),

and prints pages/s for both and their ratio, plus a second (idempotent) import.

    python scripts/bench_lwc_import.py              # 5,000 and 20,000 pages
    python scripts/bench_lwc_import.py --quick      # 1,000 pages

Exit status: 0 when every import reaches 1,000 pages/s, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from lwc_fixture import LwcPage, LwcSource, make_lwc_store  # noqa: E402

TARGET = 1_000.0
# Vocabulary of the generated bodies.
WORDS = (
    "trio", "nursery", "channel", "cancel", "scope", "deadline", "actor", "memory", "store",
    "page", "source", "graph", "link", "search", "index", "token", "stem", "query", "rank",
    "snippet", "wiki", "release", "policy", "journal",
)  # fmt: skip


def corpus(n: int, seed: int = 14) -> tuple[list[LwcPage], list[LwcSource]]:
    """N Pages and N/20 Sources, deterministic."""
    rng = random.Random(seed)
    sources = [
        LwcSource(i + 1, " ".join(rng.choices(WORDS, k=300)), title=f"s{i}", origin=f"d/s{i}.md")
        for i in range(max(1, n // 20))
    ]
    pages = []
    for i in range(n):
        links = " ".join(f"[[p{rng.randrange(n)}]]" for _ in range(3))
        body = f"# Page {i}\n\n" + " ".join(rng.choices(WORDS, k=150)) + f"\n\n{links}\n"
        cites = (rng.randrange(len(sources)) + 1,) if i % 10 == 0 else ()
        pages.append(
            LwcPage(
                slug=f"p{i}", title=f"Page {i} {rng.choice(WORDS)}", body=body,
                summary=f"summary {i}", provenance=("agent-observed",), sources=cites,
            )
        )  # fmt: skip
    return pages, sources


def lwc(*args: str, cwd: Path, home: Path) -> dict[str, object]:
    """Run the real CLI and return its JSON (stdout is a pipe: no progress bar)."""
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "lwc_trio", *args], cwd=cwd, env=env, capture_output=True,
        check=True,
    )  # fmt: skip
    result: dict[str, object] = json.loads(done.stdout)
    return result


def timed(*args: str, cwd: Path, home: Path) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    out = lwc(*args, cwd=cwd, home=home)
    return time.perf_counter() - start, out


def run(n: int, tmp: Path) -> dict[str, float]:
    pages, sources = corpus(n)
    store = make_lwc_store(tmp / f"lwc-{n}" / "wiki.db", pages, sources)
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    target, base = tmp / f"target-{n}", tmp / f"base-{n}"
    for folder in (target, base):
        folder.mkdir()
        lwc("init", cwd=folder, home=home)
    seconds, report = timed("import", "--from-lwc", str(store), cwd=target, home=home)
    assert report["pages"] == {"created": n, "updated": 0, "unchanged": 0}, report
    again, _ = timed("import", "--from-lwc", str(store), cwd=target, home=home)
    jsonl = tmp / f"pages-{n}.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        for page in pages:
            row = {"slug": page.slug, "title": page.title, "body": page.body,
                   "summary": page.summary, "provenance": list(page.provenance)}  # fmt: skip
            out.write(json.dumps(row) + "\n")
    baseline, _ = timed("page", "import", str(jsonl), cwd=base, home=home)
    return {"pages": n, "import": n / seconds, "again": n / again, "baseline": n / baseline}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = [1_000] if args.quick else [5_000, 20_000]
    ok = True
    print(f"{'pages':>7} {'import p/s':>11} {'2nd run p/s':>12} {'page import p/s':>16} ratio")
    with tempfile.TemporaryDirectory(prefix="bench-lwc-import-") as tmp:
        for n in sizes:
            row = run(n, Path(tmp))
            ok &= row["import"] >= TARGET
            print(
                f"{n:>7,} {row['import']:>11,.0f} {row['again']:>12,.0f} "
                f"{row['baseline']:>16,.0f} {row['import'] / row['baseline']:.2f}"
            )
    print(f"target: >= {TARGET:,.0f} pages/s end to end -> {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
