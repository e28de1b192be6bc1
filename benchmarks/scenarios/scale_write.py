"""Bulk write rate, peak RSS and store size: `lwc page import` vs a plain SQLite FTS5 table.

Issue 24 item 2: the scale benchmark's synthetic Wiki (`benchmarks.scale_corpus`, cached) is
written by `lwc page import FILE.jsonl` (a real `lwc` process into a fresh store) and, in the
same run, into a plain FTS5 table (`porter unicode61`; title, summary, body; 1,000-Page
transactions) by a child Python process that reads the same JSONL. The two alternate for
`--rounds` rounds (the machine is shared: same-run baselines, never figures from another
day). Each child's peak RSS comes from `os.wait4` (that child alone); the store sizes are the
files' bytes after the write.

Targets: lwc pages/s ≥ 0.5 × FTS5's (best round of each), lwc peak RSS ≤ 1 GiB, lwc store
≤ 1.5 × FTS5's. `--sources-mb N` adds `lwc source add DIR` of 60 files of identifier-like
text totalling N MB (issue 23 item 2: 192 MB within 512 MB peak RSS).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import scale_corpus

RATE_RATIO_MIN = 0.5
SIZE_RATIO_MAX = 1.5
RSS_MAX_MIB = 1024
SOURCE_RSS_MAX_MIB = 512
SOURCE_FILES = 60
REPO = Path(__file__).resolve().parents[2]

_FTS5 = """
import json, sqlite3, sys
src, db = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(db, isolation_level=None)
conn.execute("CREATE VIRTUAL TABLE pages USING fts5(title, summary, body, "
             "tokenize='porter unicode61')")
batch = []
def flush():
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?)", batch)
    conn.execute("COMMIT")
    batch.clear()
with open(src, encoding="utf-8") as handle:
    for line in handle:
        row = json.loads(line)
        batch.append((row["title"], row.get("summary") or "", row["body"]))
        if len(batch) == 1000:
            flush()
if batch:
    flush()
conn.close()
"""


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Run `argv`; (wall seconds, peak RSS MiB of that child). Exits 2 when it fails."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"bench scale-write: {argv[:4]} exited {child.returncode}")
    return seconds, usage.ru_maxrss / 1024  # KiB on Linux


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}


def _lwc(*args: str) -> list[str]:
    return [sys.executable, "-m", "lwc_trio", *args]


def _lwc_import(jsonl: Path, work: Path) -> tuple[float, float, int]:
    project = work / "lwc"
    project.mkdir()
    env = _env(work)
    _run(_lwc("init", "--no-git-exclude", "--json"), project, env)
    seconds, rss = _run(_lwc("page", "import", str(jsonl), "--json"), project, env)
    return seconds, rss, (project / ".lwc" / "wiki.db").stat().st_size


def _fts5(jsonl: Path, work: Path) -> tuple[float, float, int]:
    db = work / "fts5.db"
    seconds, rss = _run([sys.executable, "-c", _FTS5, str(jsonl), str(db)], work, _env(work))
    return seconds, rss, db.stat().st_size


def _source_dir(root: Path, megabytes: int) -> Path:
    """`SOURCE_FILES` files of identifier-like text (snake_case, CamelCase, numbers),
    `megabytes` in all."""
    where = root / f"sources-{megabytes}mb"
    if where.is_dir():
        return where
    rng = random.Random(24)
    words = scale_corpus.vocabulary()
    per_file = megabytes * 1_000_000 // SOURCE_FILES
    where.mkdir(parents=True)
    for index in range(SOURCE_FILES):
        lines: list[str] = []
        size = 0
        while size < per_file:
            line = " ".join(rng.choices(words, k=12)) + "();"
            lines.append(line)
            size += len(line) + 1
        (where / f"module_{index:02d}.py").write_text("\n".join(lines), encoding="utf-8")
    return where


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench scale-write", description=__doc__)
    parser.add_argument("--size", type=int, default=10_000, help="Pages (default 10,000)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    parser.add_argument(
        "--sources-mb", type=int, default=0, help="also `lwc source add` N MB (default: off)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    jsonl = scale_corpus.cached_jsonl(REPO, args.size)[0]
    load = os.getloadavg()
    rows: list[dict[str, Any]] = []
    for round_ in range(args.rounds):
        for name, write in (("fts5", _fts5), ("lwc", _lwc_import))[:: 1 if round_ % 2 == 0 else -1]:
            with tempfile.TemporaryDirectory(prefix="bench-scale-write-") as tmp:
                seconds, rss, written = write(jsonl, Path(tmp))
            row = {"round": round_, "writer": name, "seconds": round(seconds, 2),
                   "pages_per_s": round(args.size / seconds, 1), "peak_rss_mib": round(rss, 1),
                   "store_mb": round(written / 1e6, 1)}  # fmt: skip
            rows.append(row)
            print(json.dumps(row), flush=True)
    best = {
        name: max(r["pages_per_s"] for r in rows if r["writer"] == name) for name in ("lwc", "fts5")
    }
    size = {name: min(r["store_mb"] for r in rows if r["writer"] == name) for name in best}
    rss = max(r["peak_rss_mib"] for r in rows if r["writer"] == "lwc")
    summary: dict[str, object] = {
        "pages": args.size,
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "rate_ratio": round(best["lwc"] / best["fts5"], 3),
        "size_ratio": round(size["lwc"] / size["fts5"], 3),
        "lwc_peak_rss_mib": rss,
        "spread_pages_per_s": {
            name: sorted(r["pages_per_s"] for r in rows if r["writer"] == name) for name in best
        },
    }
    passed = (
        best["lwc"] >= RATE_RATIO_MIN * best["fts5"]
        and size["lwc"] <= SIZE_RATIO_MAX * size["fts5"]
        and rss <= RSS_MAX_MIB
    )
    if args.sources_mb:
        with tempfile.TemporaryDirectory(prefix="bench-scale-write-") as tmp:
            # Outside the checkout: `lwc source add` skips what Git ignores (`.cache/`).
            folder = _source_dir(Path(tmp), args.sources_mb)
            project = Path(tmp) / "lwc"
            project.mkdir()
            env = _env(Path(tmp))
            _run(_lwc("init", "--no-git-exclude", "--json"), project, env)
            seconds, source_rss = _run(_lwc("source", "add", str(folder), "--json"), project, env)
            conn = sqlite3.connect(project / ".lwc" / "wiki.db")
            stored = conn.execute("SELECT count(*) FROM sources").fetchone()[0]
            conn.close()
            if stored != SOURCE_FILES:
                sys.exit(f"bench scale-write: source add stored {stored} of {SOURCE_FILES} files")
        summary["source_add"] = {"mb": args.sources_mb, "seconds": round(seconds, 1),
                                 "peak_rss_mib": round(source_rss, 1)}  # fmt: skip
        passed = passed and source_rss <= SOURCE_RSS_MAX_MIB
    summary["targets_met"] = passed
    print(json.dumps(summary))
    return 0 if passed else 1
