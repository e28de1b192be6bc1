"""Transport benchmark: `lwc serve --mcp` against the mcp SDK's own servers, over stdio.

Issues 2 and 11, "Performance". In one run, against

* lwc    - the real `lwc serve --mcp --path WS`, WS a temp workspace whose Wiki holds about 60
           Pages (`fixtures.shared_wiki`), so every `lwc_explore` (mode memory) searches a real
           SQLite store while the serving stack, not SQLite, dominates;
* same   - the same work on the SDK's `MCPServer`: a `lwc_explore` tool running lwc's path check
           and memory engine in `anyio.to_thread`, returning the same object (the peer for calls);
* sdk    - a minimal echo-tool `MCPServer` (the peer for start-up, ping and memory);
* floor  - a bare Trio echo loop (no MCP library at all), for reference,

each started as `sys.executable file.py` (lwc as its console script), it measures (1) process
start -> initialize reply, (2) sequential ping round trips, (3) sequential `tools/call` round
trips, (4) a burst of 200 `tools/call` written at once, until all 200 answers are in, (5) ping
round trips while such a burst is served, and (6) the idle RSS after the handshake. For
diagnosis it also reports the server CPU a burst took, a burst of 200 calls the tool refuses at
argument validation, and a burst of valid calls with nothing to search (`scope: "global"`, no
global Wiki). Every server gets byte-identical JSON lines (protocol 2025-11-25) written by this
script on raw pipes - no MCP client library, so client overhead does not dominate. The servers
take turns in blocks (100 pings, 50 calls, one burst): one server's whole run then the next's
would measure the machine's load, not the server. Answers are validated after each timed
section, never inside it.

    scripts/bench transport            # the full run recorded in docs/benchmarks.md
    scripts/bench transport --quick    # ~20 s, same code paths (for tests)
    scripts/bench transport --json     # machine-readable results on stdout

Exit status: 0 when the run completed (targets may FAIL; `--check` turns a FAIL into exit 1),
1 when a server misbehaved (no answer in time, wrong answer, bad exit).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path

from benchmarks.fixtures import SHARED_WIKI_PAGES, lwc_argv, private_env, shared_wiki
from benchmarks.scenarios.peers import FLOOR_SERVER, SAME_WORK_SERVER, SDK_SERVER
from benchmarks.scenarios.transport_report import render, server_notes, summarize
from benchmarks.scenarios.transport_sessions import (
    BURST_SIZE,
    FULL,
    IO_TIMEOUT,
    PROTOCOL_VERSION,
    QUERY,
    QUICK,
    BenchError,
    Server,
    cold_starts,
    steady_state,
)
from benchmarks.table import machine


def _setup(root: Path, env: dict[str, str]) -> tuple[Path, Path, Path, Path]:
    """Create the workspace with a real Wiki, and the comparison servers."""
    workspace = shared_wiki(root, env, IO_TIMEOUT)
    sdk = root / "sdk_echo_server.py"
    sdk.write_text(SDK_SERVER)
    same = root / "sdk_same_work_server.py"
    same.write_text(SAME_WORK_SERVER)
    floor = root / "trio_floor_server.py"
    floor.write_text(FLOOR_SERVER)
    return workspace, sdk, same, floor


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run (used by the tests)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--no-floor", action="store_true", help="skip the bare Trio floor")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target FAILs")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL

    with tempfile.TemporaryDirectory(prefix="lwc-bench-") as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        # A private HOME: no global Wiki of the user leaks into (or is touched by) the run.
        env = private_env(home, inherit=True)
        try:
            workspace, sdk_file, same_file, floor_file = _setup(root, env)
            # A table on purpose: each server fills the same Server fields (name, what it is,
            # argv, tool, a valid call, a refused call, a call with nothing to search).
            servers = [
                Server(
                    "lwc",
                    f"lwc serve --mcp --path WS (lwc_explore, mode memory, "
                    f"{SHARED_WIKI_PAGES}-page Wiki)",
                    [*lwc_argv(), "serve", "--mcp", "--path", str(workspace)],
                    "lwc_explore",
                    {"query": QUERY, "projectPath": str(workspace), "mode": "memory"},
                    # "3" is not an integer (SPEC §2): refused before any path or plane work.
                    {"query": QUERY, "projectPath": str(workspace), "maxDocuments": "3"},
                    # The private HOME has no global Wiki: path check and store lookup only.
                    {"query": QUERY, "projectPath": str(workspace), "scope": "global"},
                ),
                Server(
                    "same",
                    "mcp SDK MCPServer, same work in anyio.to_thread (sdk_same_work_server.py)",
                    [sys.executable, str(same_file)],
                    "lwc_explore",
                    {"query": QUERY, "projectPath": str(workspace)},
                    {"query": QUERY, "projectPath": 3},  # pydantic refuses an int for a str
                    {"query": QUERY, "projectPath": str(workspace), "scope": "global"},
                ),
                Server(
                    "sdk",
                    "mcp SDK MCPServer echo tool (python sdk_echo_server.py)",
                    [sys.executable, str(sdk_file)],
                    "echo",
                    {"text": QUERY},
                    {"text": 3},  # pydantic refuses an int for a str parameter
                    {"text": QUERY},
                ),
            ]
            if not args.no_floor:
                servers.append(
                    Server(
                        "floor",
                        "bare Trio echo loop (python trio_floor_server.py)",
                        [sys.executable, str(floor_file)],
                        "echo",
                        {"text": QUERY},
                        {"text": 3},
                        {"text": QUERY},
                    )
                )
            cold = cold_starts(servers, plan.cold_runs, workspace, env)
            steady = steady_state(servers, plan, workspace, env)
        except (BenchError, RuntimeError) as exc:
            print(f"bench transport: {exc}", file=sys.stderr)
            return 1

    report = summarize(servers, cold, steady)
    report["plan"] = vars(plan) | {"burst_size": BURST_SIZE, "protocol": PROTOCOL_VERSION}
    report["servers"] = {s.key: s.label for s in servers}
    report["machine"] = machine()
    report["raw"] = {
        s.key: {
            "cold_start_ms": cold[s.key],
            "bursts_ms": steady[s.key].bursts_ms,
            "stderr_bytes": steady[s.key].stderr_bytes,
        }
        for s in servers
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        title = "Transport (stdio): lwc vs the mcp SDK's MCPServer (same work, echo), same run"
        print(title + ("  [--quick]" if args.quick else ""))
        print()
        print(render(report))
        print()
        print(textwrap.dedent(server_notes(report)))
    if args.check and not all(c["pass"] for c in report["checks"]):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
