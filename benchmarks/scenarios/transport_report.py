"""The transport scenario's figures, ratios against same-run baselines, and its table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from benchmarks.stats import mb, mean, median, percentile
from benchmarks.table import markdown_table

if TYPE_CHECKING:
    from benchmarks.scenarios.transport_sessions import Server, Steady

# Targets (issues 2 and 11): lwc over a baseline server in the same run - the echo SDK server
# for start-up and ping, the same-work SDK server for tool calls...
TARGETS: Final = {
    "cold_start_ms": ("sdk", 0.6),
    "ping_median_ms": ("sdk", 0.35),
    "call_median_ms": ("same", 0.6),
    "burst_ms": ("same", 0.6),
}
# ...and absolute ceilings. (Issue 2's "burst <= 0.25x an echo server" is retired: it compared
# real searches with an echo.)
LIMITS: Final = {"idle_rss_mb": 50.0, "busy_ping_p99_ms": 5.0}


def summarize(
    servers: Sequence[Server], cold: dict[str, list[float]], steady: dict[str, Steady]
) -> dict[str, Any]:
    figures: dict[str, dict[str, Any]] = {}
    for server in servers:
        s = steady[server.key]
        busy = s.busy_pings_ms
        figures[server.key] = {
            "cold_start_ms": median(cold[server.key]),
            "ping_median_ms": median(s.pings_ms),
            "ping_p99_ms": percentile(s.pings_ms, 0.99),
            "call_median_ms": median(s.calls_ms),
            "call_p99_ms": percentile(s.calls_ms, 0.99),
            "burst_ms": median(s.bursts_ms),
            "burst_cpu_ms": mean(s.burst_cpu_ms),
            "busy_ping_p50_ms": percentile(busy, 0.5) if busy else None,
            "busy_ping_p99_ms": percentile(busy, 0.99) if busy else None,
            "bad_burst_ms": median(s.bad_bursts_ms),
            "bare_burst_ms": median(s.bare_bursts_ms) if s.bare_bursts_ms else None,
            "idle_rss_mb": mb(s.idle_rss_kb),
            "rss_after_burst_mb": mb(s.rss_after_kb),
        }
    lwc = figures["lwc"]
    checks: list[dict[str, Any]] = []
    for metric, (base, target) in TARGETS.items():
        ratio = lwc[metric] / figures[base][metric]
        checks.append(
            {"metric": metric, "base": base, "ratio": ratio, "target": target,
             "pass": ratio <= target}
        )  # fmt: skip
    for metric, limit in LIMITS.items():
        value = lwc[metric]
        checks.append(
            {"metric": metric, "value": value, "target": limit,
             "pass": value is not None and value <= limit}
        )  # fmt: skip
    return {"figures": figures, "checks": checks}


# A table on purpose: one row per printed figure, not repeated logic.
ROWS: Final = (
    # key, label, unit, decimals, how many
    ("cold_start_ms", "cold start → initialize reply", "ms", 1, "median of {cold_runs}"),
    ("ping_median_ms", "ping round trip, median", "ms", 3, "{pings} sequential"),
    ("ping_p99_ms", "ping round trip, p99", "ms", 3, "{pings} sequential"),
    ("call_median_ms", "tools/call round trip, median", "ms", 2, "{calls} sequential"),
    ("call_p99_ms", "tools/call round trip, p99", "ms", 2, "{calls} sequential"),
    ("burst_ms", "200 concurrent tools/call", "ms", 1, "median of {bursts} bursts"),
    ("burst_cpu_ms", "  server CPU for that burst", "ms", 0, "mean, all threads"),
    ("busy_ping_p50_ms", "ping during a 200-call burst, p50", "ms", 2, "{busy_bursts} bursts"),
    ("busy_ping_p99_ms", "ping during a 200-call burst, p99", "ms", 2, "{busy_bursts} bursts"),
    ("bad_burst_ms", "200 tools/call, invalid argument", "ms", 1, "median of {bursts} bursts"),
    ("bare_burst_ms", "200 tools/call, nothing to search", "ms", 1, "median of {bursts} bursts"),
    ("idle_rss_mb", "idle RSS after handshake", "MB", 1, "VmRSS"),
    ("rss_after_burst_mb", "RSS after the bursts", "MB", 1, "VmRSS"),
)


def _base(metric: str) -> str:
    """The server lwc's figure is divided by: the target's, else same work for call work."""
    if metric in TARGETS:
        return TARGETS[metric][0]
    return "sdk" if metric.startswith(("cold", "ping", "idle", "rss")) else "same"


def render(report: dict[str, Any]) -> str:
    figures = report["figures"]
    keys = [k for k in ("lwc", "same", "sdk", "floor") if k in figures]
    plan = report["plan"]
    checks = {c["metric"]: c for c in report["checks"]}
    head = ["metric", "n", *keys, "lwc ratio", "target", "result"]
    rows = [head]
    for metric, label, unit, decimals, n in ROWS:
        cells = [f"{label} ({unit})", n.format(**plan)]
        for key in keys:
            value = figures[key][metric]
            cells.append("—" if value is None else f"{value:.{decimals}f}")
        base = _base(metric)
        value, against = figures["lwc"][metric], figures.get(base, {}).get(metric)
        cells.append(f"{value / against:.2f}× {base}" if value and against else "—")
        check = checks.get(metric)
        if check is None:
            cells += ["—", "—"]
        elif "ratio" in check:
            cells += [f"≤ {check['target']:.2f}×", "PASS" if check["pass"] else "FAIL"]
        else:
            cells += [f"≤ {check['target']:g} {unit}", "PASS" if check["pass"] else "FAIL"]
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
