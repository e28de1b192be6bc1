"""The code scenario's report: index figures, latencies, overhead against direct CodeGraph."""

from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path
from typing import Any

from benchmarks.table import markdown_table

TARGET_WARM_MS = 3.0
TARGET_FIRST_MS = 50.0


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "os": f"{platform.system()} {platform.release()}",
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "loadavg_1m_at_start": round(os.getloadavg()[0], 2),
    }


def mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def verdict(passed: bool, conclusive: bool, target: float) -> str:
    text = f"{'PASS' if passed else 'FAIL'} ≤ {target:g}"
    return text if conclusive else text + ", CI spans target"


def markdown(report: dict[str, Any]) -> str:
    index_rows = [
        [
            c["name"],
            f"{c['files_indexed']:,}",
            f"{c['loc_indexed']:,}",
            f"{c['index_seconds']:.1f} s",
            f"{c['loc_per_second']:,}",
            mib(c["index_bytes"]),
        ]
        for c in report["corpora"]
    ]
    latency_rows = []
    for c in report["corpora"]:
        lat = c["latency"]
        for side in ("direct", "lwc"):
            s = lat[side]
            latency_rows.append(
                [
                    c["name"],
                    side,
                    f"{s['first_median_ms']:.1f} ms",
                    f"{s['warm_median_ms']:.2f} ms",
                    f"{s['warm_p99_ms']:.2f} ms",
                    str(s["warm_n"]),
                ]
            )
        o = lat["overhead"]
        first_verdict = verdict(o["first_pass"], o["first_conclusive"], TARGET_FIRST_MS)
        warm_verdict = verdict(o["warm_pass"], o["warm_conclusive"], TARGET_WARM_MS)
        latency_rows.append(
            [
                c["name"],
                "**overhead**",
                f"**{o['first_ms']:+.1f} ms** ({first_verdict})",
                f"**{o['warm_median_ms']:+.2f} ms** ({warm_verdict})",
                f"95% CI first [{o['first_ci95_ms'][0]:+.0f}, {o['first_ci95_ms'][1]:+.0f}], "
                f"warm [{o['warm_ci95_ms'][0]:+.1f}, {o['warm_ci95_ms'][1]:+.1f}]; paired "
                f"medians: first {o['first_paired_median_ms']:+.1f}, "
                f"warm {o['warm_paired_median_ms']:+.2f}",
                "",
            ]
        )
    index_head = ["corpus", "files", "LOC", "index time", "LOC/s", "index size"]
    latency_head = ["corpus", "side", "first call (median)", "warm median", "warm p99", "warm n"]
    lines = [
        markdown_table(index_head, index_rows, align="lrrrrr"),
        "",
        markdown_table(latency_head, latency_rows, align="llrrrr"),
        "",
    ]
    for c in report["corpora"]:
        lat = c["latency"]
        lines.append(
            f"- {c['name']}: first calls (ms) lwc {lat['lwc']['first_ms']}, "
            f"direct {lat['direct']['first_ms']}; lwc's own `timings.codeMs` warm median "
            f"{lat['lwc'].get('code_ms_median')} ms; response line median "
            f"lwc {lat['lwc']['response_bytes_median']:,} B, "
            f"direct {lat['direct']['response_bytes_median']:,} B"
        )
    m = report["machine"]
    lines.append(
        f"- machine: {m['cpu']}, {m['cores']} cores, {m['os']}, Python {m['python']}; "
        f"1-min load average {m['loadavg_1m_at_start']} at start, "
        f"{m['loadavg_1m_at_end']} at end; run took {report['seconds']} s"
    )
    return "\n".join(lines)
