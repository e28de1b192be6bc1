"""The one table printer (Markdown, so a run pastes straight into docs/benchmarks.md) and the
machine notes every report ends with."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any


def markdown_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], align: Sequence[str] = ()
) -> str:
    """A padded Markdown table; `align` is one of "l"/"r" per column (default: left)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    sides = [*align, *("l" * (len(headers) - len(align)))]

    def line(row: Sequence[str]) -> str:
        padded = [
            c.rjust(w) if side == "r" else c.ljust(w)
            for c, w, side in zip(row, widths, sides, strict=True)
        ]
        return "| " + " | ".join(padded) + " |"

    seps = [
        "-" * (w + 1) + ":" if side == "r" else "-" * (w + 2)
        for w, side in zip(widths, sides, strict=True)
    ]
    return "\n".join([line(cells[0]), "|" + "|".join(seps) + "|", *(line(r) for r in cells[1:])])


def loadavg() -> str:
    """The 1/5/15-minute load average, e.g. "5.1 / 3.2 / 1.0" (the machine may be shared)."""
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def machine() -> dict[str, Any]:
    """CPU, interpreter, package versions, load and date, for the record of a run."""
    cpu = ""
    with contextlib.suppress(OSError):
        for row in Path("/proc/cpuinfo").read_text().splitlines():
            if row.startswith("model name"):
                cpu = row.split(":", 1)[1].strip()
                break
    versions = {}
    for dist in ("lwc-trio", "trio", "mcp", "pydantic"):
        with contextlib.suppress(PackageNotFoundError):
            versions[dist] = version(dist)
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": len(os.sched_getaffinity(0)),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
    }


def machine_line(m: dict[str, Any] | None = None) -> str:
    """One line describing the machine and its load."""
    m = m or machine()
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    return (
        f"machine: {m['nproc']} CPUs ({m['cpu']}), Python {m['python']}, {m['platform']}; "
        f"load {m['loadavg']}; {versions}; {m['date']}"
    )


def emit(result: dict[str, Any], as_json: bool, report: Callable[[dict[str, Any]], None]) -> int:
    """Print `result` as JSON or as its human report; the exit code: 0 if it passed, else 1."""
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0 if result["pass"] else 1
