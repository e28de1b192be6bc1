"""The benchmark harness: every registered scenario runs by name; the shared helpers compute
what their docstrings say (the scenarios themselves run in tests/test_soak.py)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.registry import SCENARIOS, find
from benchmarks.stats import percentile
from benchmarks.table import markdown_table

REPO = Path(__file__).resolve().parents[1]


def test_every_scenario_has_a_main_and_a_docstring() -> None:
    """Each registered name imports a module with main(argv) and says what it measures."""
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS)
    for scenario in SCENARIOS:
        main = scenario.main()
        assert list(inspect.signature(main).parameters) == ["argv"], scenario.name
        module = sys.modules[main.__module__]
        assert module.__doc__, scenario.name
        assert module.__doc__.strip(), scenario.name
    assert find("soak") is not None
    assert find("no-such-scenario") is None


def test_bench_lists_every_scenario_and_refuses_unknown_names() -> None:
    """`scripts/bench --list` names every scenario; an unknown name exits 2."""
    listed = subprocess.run(
        [str(REPO / "scripts" / "bench"), "--list"], capture_output=True, text=True, check=True
    )
    for scenario in SCENARIOS:
        assert f"  {scenario.name}  " in listed.stdout
    unknown = subprocess.run(
        [str(REPO / "scripts" / "bench"), "no-such-scenario"], capture_output=True, text=True
    )
    assert unknown.returncode == 2
    assert "no scenario" in unknown.stderr


@pytest.mark.parametrize(
    ("q", "expected"), [(0.5, 5.0), (0.9, 9.0), (0.99, 10.0), (1.0, 10.0), (0.01, 1.0)]
)
def test_percentile_is_nearest_rank(q: float, expected: float) -> None:
    """The smallest value with at least q·n values at or below it."""
    assert percentile([float(v) for v in range(10, 0, -1)], q) == expected


def test_markdown_table_pads_and_aligns() -> None:
    """Columns are padded to their widest cell; "r" columns are right-aligned."""
    table = markdown_table(["name", "n"], [["a", 1], ["bbb", 22]], align="lr")
    assert table.splitlines() == [
        "| name |  n |",
        "|------|---:|",
        "| a    |  1 |",
        "| bbb  | 22 |",
    ]
