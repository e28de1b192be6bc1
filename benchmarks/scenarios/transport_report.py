"""The transport scenario's figures, ratios against the SDK in the same run, and its table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from benchmarks.stats import mb, mean, median, percentile
from benchmarks.table import markdown_table

if TYPE_CHECKING:
    from benchmarks.scenarios.transport_sessions import Server, Steady

# Targets from issue 2: ratios lwc/SDK in the same run, and an absolute RSS ceiling.
TARGETS: Final = {
    "cold_start_ms": 0.6,
    "ping_median_ms": 0.35,
    "burst_ms": 0.25,
}
RSS_LIMIT_MB: Final = 50.0


def summarize(
    servers: Sequence[Server], cold: dict[str, list[float]], steady: dict[str, Steady]
) -> dict[str, Any]:
    figures: dict[str, dict[str, Any]] = {}
    for server in servers:
        s = steady[server.key]
        figures[server.key] = {
            "cold_start_ms": median(cold[server.key]),
            "ping_median_ms": median(s.pings_ms),
            "ping_p99_ms": percentile(s.pings_ms, 0.99),
            "burst_ms": median(s.bursts_ms),
            "burst_cpu_ms": mean(s.burst_cpu_ms),
            "bad_burst_ms": median(s.bad_bursts_ms),
            "bare_burst_ms": median(s.bare_bursts_ms) if s.bare_bursts_ms else None,
            "idle_rss_mb": mb(s.idle_rss_kb),
            "rss_after_burst_mb": mb(s.rss_after_kb),
        }
    lwc, sdk = figures["lwc"], figures["sdk"]
    checks = []
    for metric, target in TARGETS.items():
        ratio = lwc[metric] / sdk[metric]
        checks.append({"metric": metric, "ratio": ratio, "target": target, "pass": ratio <= target})
    checks.append(
        {
            "metric": "idle_rss_mb",
            "value": lwc["idle_rss_mb"],
            "target": RSS_LIMIT_MB,
            "pass": lwc["idle_rss_mb"] <= RSS_LIMIT_MB,
        }
    )
    return {"figures": figures, "checks": checks}


ROWS: Final = (
    # key, label, unit, decimals, how many
    ("cold_start_ms", "cold start → initialize reply", "ms", 1, "median of {cold_runs}"),
    ("ping_median_ms", "ping round trip, median", "ms", 3, "{pings} sequential"),
    ("ping_p99_ms", "ping round trip, p99", "ms", 3, "{pings} sequential"),
    ("burst_ms", "200 concurrent tools/call", "ms", 1, "median of {bursts} bursts"),
    ("burst_cpu_ms", "  server CPU for that burst", "ms", 0, "mean, all threads"),
    ("bad_burst_ms", "200 tools/call, invalid argument", "ms", 1, "median of {bursts} bursts"),
    ("bare_burst_ms", "200 tools/call, nothing to search", "ms", 1, "median of {bursts} bursts"),
    ("idle_rss_mb", "idle RSS after handshake", "MB", 1, "VmRSS"),
    ("rss_after_burst_mb", "RSS after the bursts", "MB", 1, "VmRSS"),
)


RATIO_BASE: Final = {"bare_burst_ms": "burst_ms"}


def render(report: dict[str, Any]) -> str:
    figures = report["figures"]
    keys = [k for k in ("lwc", "sdk", "floor") if k in figures]
    plan = report["plan"]
    checks = {c["metric"]: c for c in report["checks"]}
    head = ["metric", "n", *keys, "lwc/SDK", "target", "result"]
    rows = [head]
    for metric, label, unit, decimals, n in ROWS:
        cells = [f"{label} ({unit})", n.format(**plan)]
        for key in keys:
            value = figures[key][metric]
            cells.append("—" if value is None else f"{value:.{decimals}f}")
        # lwc's no-search burst is compared with the SDK's ordinary echo burst.
        sdk = figures["sdk"][RATIO_BASE.get(metric, metric)]
        cells.append(f"{figures['lwc'][metric] / sdk:.2f}×" if sdk else "—")
        check = checks.get(metric)
        if check is None:
            cells += ["—", "—"]
        elif "ratio" in check:
            cells += [f"≤ {check['target']:.2f}×", "PASS" if check["pass"] else "FAIL"]
        else:
            cells += [f"≤ {check['target']:.0f} MB", "PASS" if check["pass"] else "FAIL"]
        rows.append(cells)
    lines = [markdown_table(head, rows[1:])]
    passed = sum(c["pass"] for c in report["checks"])
    lines.append("")
    lines.append(f"targets met: {passed}/{len(report['checks'])}")
    return "\n".join(lines)


def server_notes(report: dict[str, Any]) -> str:
    labels = "\n".join(f"  {k:<6}{v}" for k, v in report["servers"].items())
    m = report["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    return (
        f"servers:\n{labels}\n"
        f"machine: {m['nproc']} CPUs ({m['cpu']}), Python {m['python']}, {m['platform']}\n"
        f"load average at the end of the run (1/5/15 min): {m['loadavg']}\n"
        f"versions: {versions}\ndate: {m['date']}"
    )
