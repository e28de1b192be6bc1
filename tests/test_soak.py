"""Short soak, fault-matrix and shutdown runs against the real server (issue 7), as behaviour checks.

Each test runs one of the issue-7 benchmark scenarios (`soak`, `fault-matrix`, `shutdown` in
`benchmarks/scenarios/`, as `python -m benchmarks NAME`) in its short form as a subprocess with
`--json`, against a real `lwc serve --mcp` process and a real Wiki written with the CLI, and
asserts only behaviour: every response correct, no leaked descriptors, zombies or CodeGraph
processes, exit codes. Timings are measured by the scenarios but never asserted here (CI machines are shared and
noisy); the full runs and their timing verdicts are in docs/benchmarks.md.

Parts that need the real CodeGraph runtime are skipped unless `LWC_TEST_CODEGRAPH_BINARY` names
its platform binary (`scripts/test.sh`, and so CI, sets it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.fixtures import run_module
from lwc_trio.config import DEFAULT_CODE_TIMEOUT

REPO = Path(__file__).resolve().parents[1]
BINARY = os.environ.get("LWC_TEST_CODEGRAPH_BINARY", "")
RUN_LIMIT = 170  # seconds; pytest's own per-test timeout is 180

pytestmark = pytest.mark.slow
# The fault-matrix and shutdown runs hold 1-2 s deadlines (a fresh CodeGraph child, a 2 s
# grace): scripts/test.sh runs them alone, after the parallel pass.
SERIAL = pytest.mark.serial

requires_codegraph = pytest.mark.skipif(
    not BINARY,
    reason="needs the real CodeGraph runtime: set LWC_TEST_CODEGRAPH_BINARY to the CodeGraph "
    "1.6.1 platform binary (node_modules/@colbymchenry/codegraph-<os>-<arch>/bin/codegraph); "
    "scripts/test.sh does",
)


def run_script(name: str, *args: str) -> dict[str, Any]:
    """Run scenario NAME with --json; its parsed result (exit 0 or 1 both print one)."""
    env = {k: v for k, v in os.environ.items() if k != "LWC_FAULTS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if BINARY:
        env["LWC_CODEGRAPH_BINARY"] = BINARY
    proc = run_module("benchmarks", [name, "--json", *args], env, REPO, RUN_LIMIT)
    assert proc.returncode in (0, 1), f"{name} failed to run ({proc.returncode}): {proc.stderr}"
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def verdict(result: dict[str, Any], resource: str) -> dict[str, Any]:
    """One named verdict of a soak result."""
    (found,) = [v for v in result["verdicts"] if v["resource"] == resource]
    assert isinstance(found, dict)
    return found


SOAK_BEHAVIOUR = ("correctness", "open fds", "zombies", "exit")


def check_soak(result: dict[str, Any], calls: int) -> None:
    """Every behaviour verdict passed, and the workload did what it is meant to."""
    for resource in SOAK_BEHAVIOUR:
        v = verdict(result, resource)
        assert v["pass"], (v, result["errors"])
    assert result["calls"] == calls
    assert result["writes"]["completed"] > 0
    assert result["writes"]["failed"] == 0
    assert result["cancelled"]["sent"] > 0
    assert result["checks"].get("probe_found", 0) > 0
    assert result["exit"]["code"] == 0


def test_soak_short_memory_only() -> None:
    """A 400-call soak without CodeGraph: every answer right, no fd or process leak, exit 0."""
    result = run_script("soak", "--quick", "--no-code", "--calls", "400", "--pages", "15")
    check_soak(result, 400)
    assert result["samples"][-1]["children"] == 0


@pytest.mark.codegraph
@requires_codegraph
def test_soak_short_with_codegraph() -> None:
    """The ~1,000-call soak with CodeGraph: right answers, one child throughout, none left."""
    result = run_script("soak", "--quick", "--pages", "20")
    check_soak(result, 1000)
    assert verdict(result, "CodeGraph child")["pass"]
    assert result["checks"].get("ok_code", 0) > 0
    assert result["checks"].get("ok_all", 0) > 0


def check_matrix(result: dict[str, Any], cases: list[str]) -> None:
    """Each case: expected error, healthy plane unchanged, recovered at once, clean exit."""
    assert [row["case"] for row in result["rows"]] == cases
    for row in result["rows"]:
        assert row["behaviour_ok"], (row["case"], row["problems"])
        assert row["recovered"], row["case"]
        assert row["exit_code"] == 0
        assert row["left_live"] == 0


@SERIAL
def test_fault_matrix_reduced_lwc_faults() -> None:
    """LWC_FAULTS on either plane in mode all: only that plane fails, the next call recovers."""
    cases = ["memory:hang", "memory:crash", "memory:garbage", "code:raise", "code:crash"]
    result = run_script("fault-matrix", "--quick", "--no-code", "--cases", ",".join(cases))
    check_matrix(result, cases)


@SERIAL
@pytest.mark.codegraph
@requires_codegraph
def test_fault_matrix_child_signals() -> None:
    """SIGKILL / SIGSTOP of the real CodeGraph child mid-call: codegraph error, fresh child."""
    cases = ["sigkill", "sigstop"]
    # The server's default code deadline, not the matrix's 2 s: the cold first call and the
    # recovery call each wait for a fresh child, which takes about 1.9 s on a quiet machine.
    timeout = f"{DEFAULT_CODE_TIMEOUT:g}"
    result = run_script(
        "fault-matrix", "--quick", "--cases", ",".join(cases), "--code-timeout", timeout
    )
    check_matrix(result, cases)
    for row in result["rows"]:
        assert row["children_after"] == 1


def check_shutdown(result: dict[str, Any], rows: int) -> None:
    """Exit 0, every answer due delivered and correct, nothing left behind."""
    assert len(result["rows"]) == rows
    for row in result["rows"]:
        assert row["behaviour_ok"], (row["trigger"], row["in_flight"], row["problems"])
        assert row["exit_codes"] == [0]
        assert row["left"] == 0
        assert min(row["delivered"]) >= row["due"]


@SERIAL
def test_shutdown_without_child() -> None:
    """stdin EOF and SIGTERM with 0, 10 and 100 calls in flight: answers due are delivered."""
    result = run_script(
        "shutdown", "--quick", "--no-code", "--in-flight", "0,10,100", "--pages", "10"
    )
    check_shutdown(result, 6)


@SERIAL
@pytest.mark.codegraph
@requires_codegraph
def test_shutdown_with_live_child() -> None:
    """The same with a live CodeGraph child: it is killed and reaped, the answers delivered."""
    result = run_script(
        "shutdown", "--quick", "--children", "live", "--in-flight", "0,10", "--pages", "10"
    )
    check_shutdown(result, 4)
    assert all(row["codegraph_child"] for row in result["rows"])
