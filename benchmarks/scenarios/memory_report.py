"""The memory scenario's targets and tables."""

from __future__ import annotations

import os
import platform
import sqlite3
from pathlib import Path
from typing import Any

from benchmarks.table import markdown_table


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
    main = [
        [
            f"{r['pages']:,}",
            f"{r['write_pages_per_s']:,.0f}",
            f"{r['e2e_median_ms']:.2f}",
            f"{r['e2e_p99_ms']:.2f}",
            f"{r['floor_median_ms']:.3f}",
            f"{r['floor_p99_ms']:.3f}",
            f"{r['ping_median_ms']:.3f}",
            f"{r['ratio']:.2f}",
            f"{r['rss_mb']:.1f}",
        ]
        for r in rows
    ]
    detail = [
        [
            f"{r['pages']:,}",
            f"{r['body_chars_mean']:,}",
            f"{r['write_cpu_pages_per_s']:,.0f}",
            f"{r['floor_cpu_median_ms']:.3f}",
            f"{r['server_cpu_ms_per_query']:.2f}",
            f"{r['first_call_ms']:.1f}",
            f"{r['loadavg_1min'][0]:.2f} → {r['loadavg_1min'][1]:.2f}",
        ]
        for r in rows
    ]
    main_head = ["pages", "write pages/s", "e2e median ms", "e2e p99 ms", "floor median ms"]
    main_head += ["floor p99 ms", "ping median ms", "e2e/(3×floor+ping)", "RSS MB"]
    detail_head = ["pages", "mean body chars", "write CPU pages/s", "floor CPU median ms"]
    detail_head += ["server CPU ms/query", "first call ms", "load avg (1 min) before → after"]
    targets = [[name, f"**{verdict}**", text] for name, verdict, text in verdicts]
    return "\n\n".join(
        [
            markdown_table(main_head, main, align="r" * 9),
            markdown_table(detail_head, detail, align="r" * 7),
            markdown_table(["target", "result", "measured"], targets),
        ]
    )
