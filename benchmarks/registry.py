"""The scenarios by name: what `scripts/bench NAME` (`python -m benchmarks NAME`) runs.

To add a scenario, write `benchmarks/scenarios/MODULE.py` with a docstring that says what it
measures against which same-run baseline, and `main(argv: Sequence[str] | None) -> int`
(argparse over `argv`; exit 0 when it ran and passed, 1 when a target or check failed, 2 on
a set-up error), then add one `Scenario` line to `SCENARIOS` below.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Final

import attrs

Main = Callable[[Sequence[str] | None], int]


@attrs.frozen
class Scenario:
    name: str
    """What `scripts/bench NAME` takes."""
    module: str
    """Module under `benchmarks.scenarios` with the `main(argv) -> int`."""
    summary: str
    """One line for `scripts/bench --list`: what it measures, against what."""

    def main(self) -> Main:
        module = importlib.import_module(f"benchmarks.scenarios.{self.module}")
        main: Main = module.main
        return main


SCENARIOS: Final = (
    Scenario(
        "transport", "transport", "stdio: lwc vs the mcp SDK's MCPServer and a bare Trio loop"
    ),
    Scenario("http", "http", "streamable HTTP: lwc vs the mcp SDK's server, 1/8/32 clients"),
    Scenario(
        "memory", "memory", "memory plane: write rate, e2e latency vs the raw BM25F floor, RSS"
    ),
    Scenario(
        "memory-engine",
        "memory_engine",
        "one explore_memory call in process (no transport); compare two checkouts in turn",
    ),
    Scenario("code", "code", "code plane: lwc code mode vs `codegraph serve` direct"),
    Scenario("code-answers", "code_answers", "source lines in code answers, FastAPI + CodeGraph"),
    Scenario("lanes", "lanes", "thread round trips: ThreadLane vs trio.to_thread vs inline"),
    Scenario("soak", "soak", "long mixed workload on one server: leaks, correctness, clean exit"),
    Scenario("fault-matrix", "fault_matrix", "every injected/real fault in mode all vs baseline"),
    Scenario("shutdown", "shutdown", "stdin EOF / SIGTERM to exit with calls in flight"),
    Scenario(
        "lwc-import", "lwc_import", "lwc import --from-lwc pages/s vs `lwc page import` of the same"
    ),
    Scenario(
        "graph-upkeep", "graph_upkeep", "page put with a ready graph vs graph off and a full build"
    ),
    Scenario(
        "scale-write",
        "scale_write",
        "bulk page import pages/s, peak RSS, store size vs an FTS5 table, same run",
    ),
    Scenario(
        "quality", "quality", "search quality on Cranfield vs bm25s (± stemming) and FTS5 porter"
    ),
    Scenario(
        "answers",
        "answers",
        "SQuAD answers per token through lwc serve --mcp vs first-characters and bm25s paragraphs",
    ),
    Scenario("docs", "docs", "documentation answers: lwc vs section/paragraph bm25s, same budget"),
    Scenario(
        "cjk", "cjk", "long Chinese and Hindi Pages: import, first and later questions vs English"
    ),
    Scenario("vocab", "vocab", "typo correction on 1,000,000 pages under the 5 s deadline"),
    Scenario(
        "typo-load",
        "typo_load",
        "32 concurrent calls x 64 unknown words on 1,000,000 pages: deadlines, pings",
    ),
    Scenario("scale", "scale", "10k/100k-Page Wiki: import rate, size, four query kinds vs FTS5"),
)


def find(name: str) -> Scenario | None:
    """The scenario called `name` (None when there is none)."""
    return next((s for s in SCENARIOS if s.name == name), None)
