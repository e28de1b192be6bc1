"""Code-plane benchmark: CodeGraph indexing and `lwc_explore` code-mode latency (issue 4).

    scripts/bench code [--quick] [--json] [--binary PATH] [--rounds N] [--warm N] [--keep]

Two real corpora are copied (`.py` files only) into a temporary directory:

* **mid** — the installed `trio` package from this interpreter's site-packages;
* **large** — the Python standard library's `.py` files (`sysconfig` "stdlib", without
  `site-packages`; `--quick` also leaves out the test directories).

Each gets a project Wiki (`python -m lwc_trio init`) and a CodeGraph index through
`python -m lwc_trio --scope project cg init DIR`; we report index time, LOC/s (lines of the files
CodeGraph says it indexed, from its `files` table) and the size of `.codegraph/`.

Latency, per corpus, in rounds that alternate which side goes first (sessions never overlap, so
the two `codegraph serve` processes never share the index at the same time):

* **lwc** — the real `lwc serve --mcp --path DIR` over raw JSON lines. After `initialize`, the
  *first call* is the first `tools/call lwc_explore {mode: "code"}`: it includes lwc's lazy
  start of its CodeGraph child, the child's handshake and the child's first (cold) explore.
* **direct** — `codegraph serve --mcp --no-watch --path DIR`, cwd DIR, with exactly the
  environment lwc gives its child (`runtime.child_env`). Its *first call* is timed from spawning
  the process through `initialize`/`initialized` to the first `codegraph_explore` reply — the
  same work lwc's first call does.

Then, in each session, one unmeasured pass over the fixed query set and `--warm` measured warm
calls cycling through it. A call is timed from writing its request line to having read its whole
response line (client-side JSON parsing excluded). Overhead = lwc − direct, for the median first
call and the median warm call. Targets (issue 4): warm ≤ 3 ms, first ≤ 50 ms.

Only local pipes; every loop and every wait is bounded. Exit 0 when both targets pass on every
corpus, 1 when one fails, 2 on a usage error or when a corpus cannot be indexed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.fixtures import lwc_argv, scratch
from benchmarks.messages import INITIALIZED, encode
from benchmarks.scenarios.code_corpus import SetupError, build_corpus, log
from benchmarks.scenarios.code_report import TARGET_FIRST_MS, TARGET_WARM_MS, machine, markdown
from benchmarks.stats import bootstrap_ci, median, percentile
from benchmarks.stdio import StdioClient
from lwc_trio.codegraph.runtime import BINARY_ENV, child_env

CALL_TIMEOUT = 60.0  # a single call, seconds (lwc's own code deadline is 10 s)
MAX_FILES = 12
TEST_DIRS = {"test", "tests", "idle_test", "test_lib2to3"}

QUERIES = [
    "cancel scope deadline timeout",
    "open a TCP socket connection",
    "parse command line arguments",
    "lock acquire release",
    "spawn a subprocess and wait for it",
    "read a file line by line",
    "thread pool worker queue",
    "JSON encode decode",
    "path join normalize",
    "format an exception traceback",
]


class Session:
    """A child speaking newline-delimited JSON-RPC on stdio, in its own process group."""

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> None:
        # Our own group: cleanup never touches anything else.
        self.client = StdioClient(argv, env=env, cwd=cwd, new_session=True, name=argv[0])
        self._next_id = 1

    def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float, int]:
        """Send a request; (response, seconds from write to full response line, line bytes)."""
        request_id = self._next_id
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        # Notifications or requests from the server: none expected, skipped (as before).
        response, seconds = self.client.call(message, CALL_TIMEOUT, skip_server=True)
        return response, seconds, self.client.last_size

    def handshake(self, params: dict[str, Any]) -> None:
        """`initialize` + `notifications/initialized`; the process is stopped if it fails."""
        try:
            self.request("initialize", params)
            self.client.write(encode(INITIALIZED))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """stdin EOF, then wait (bounded); SIGKILL our own group (codegraph's watchdog too)."""
        self.client.close(10, group=True)


INIT_PARAMS = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench_code", "version": "1"},
}


class LwcSide:
    name = "lwc"

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        argv = [*lwc_argv(), "serve", "--mcp", "--path", str(root)]
        self.session = Session(argv, cwd=root, env=env)
        self.session.handshake(INIT_PARAMS)
        self.code_ms: list[int] = []

    def call(self, query: str) -> tuple[float, int]:
        arguments = {
            "query": query,
            "projectPath": str(self.root),
            "mode": "code",
            "maxFiles": MAX_FILES,
        }
        response, seconds, size = self.session.request(
            "tools/call", {"name": "lwc_explore", "arguments": arguments}
        )
        result = response.get("result") or {}
        structured = result.get("structuredContent") or {}
        code = structured.get("codeGraph") or {}
        if result.get("isError") or code.get("state") != "ready":
            raise RuntimeError(f"lwc code call not ready: {json.dumps(response)[:500]}")
        self.code_ms.append(structured["timings"]["codeMs"])
        return seconds, size

    def close(self) -> None:
        self.session.close()


class DirectSide:
    name = "direct"

    def __init__(self, root: Path, binary: Path, env: dict[str, str]) -> None:
        self.root = root
        argv = [str(binary), "serve", "--mcp", "--no-watch", "--path", str(root)]
        self.session = Session(argv, cwd=root, env=child_env(env))
        self.session.handshake(dict(INIT_PARAMS, protocolVersion="2024-11-05"))
        self.code_ms: list[int] = []

    def call(self, query: str) -> tuple[float, int]:
        arguments = {"query": query, "maxFiles": MAX_FILES, "projectPath": str(self.root)}
        response, seconds, size = self.session.request(
            "tools/call", {"name": "codegraph_explore", "arguments": arguments}
        )
        result = response.get("result") or {}
        if result.get("isError") or not result.get("content"):
            raise RuntimeError(f"direct call failed: {json.dumps(response)[:500]}")
        return seconds, size

    def close(self) -> None:
        self.session.close()


def run_session(
    side_name: str, root: Path, binary: Path, env: dict[str, str], warm: int
) -> dict[str, Any]:
    if side_name == "lwc":
        time.sleep(0.2)  # nothing of the previous session still winding down
        side: LwcSide | DirectSide = LwcSide(root, env)
        time.sleep(0.2)  # the server idle after initialize, before the timed first call
        started = time.perf_counter()
    else:
        time.sleep(0.4)
        started = time.perf_counter()
        side = DirectSide(root, binary, env)
    handshake = time.perf_counter() - started  # 0 for lwc: its child starts inside the call
    try:
        call, _ = side.call(QUERIES[0])
        first = handshake + call
        for query in QUERIES:  # warm-up pass, not measured
            side.call(query)
        times: list[float] = []
        sizes: list[int] = []
        for i in range(warm):
            seconds, size = side.call(QUERIES[i % len(QUERIES)])
            times.append(seconds)
            sizes.append(size)
        code_ms = side.code_ms[-warm:] if side.code_ms else []
    finally:
        side.close()
    return {"first": first, "warm": times, "sizes": sizes, "code_ms": code_ms}


def bench_latency(
    root: Path, binary: Path, env: dict[str, str], rounds: int, warm: int
) -> dict[str, Any]:
    got: dict[str, dict[str, list[Any]]] = {
        s: {"first": [], "warm": [], "sizes": [], "code_ms": []} for s in ("lwc", "direct")
    }
    for r in range(rounds):
        order = ("lwc", "direct") if r % 2 == 0 else ("direct", "lwc")
        for side_name in order:
            out = run_session(side_name, root, binary, env, warm)
            got[side_name]["first"].append(out["first"])
            got[side_name]["warm"].extend(out["warm"])
            got[side_name]["sizes"].extend(out["sizes"])
            got[side_name]["code_ms"].extend(out["code_ms"])
            log(
                f"  round {r + 1}/{rounds} {side_name}: first {out['first'] * 1000:.1f} ms, "
                f"warm median {median(out['warm']) * 1000:.2f} ms"
            )
    summary: dict[str, Any] = {}
    for side_name, data in got.items():
        warm_ms = [t * 1000 for t in data["warm"]]
        summary[side_name] = {
            "first_ms": [round(t * 1000, 1) for t in data["first"]],
            "first_median_ms": round(median(data["first"]) * 1000, 1),
            "warm_n": len(warm_ms),
            "warm_median_ms": round(median(warm_ms), 2),
            "warm_p99_ms": round(percentile(warm_ms, 0.99), 2),
            "warm_min_ms": round(min(warm_ms), 2),
            "response_bytes_median": int(median(data["sizes"])),
        }
        if data["code_ms"]:
            summary[side_name]["code_ms_median"] = median(data["code_ms"])
    # Paired by position: call i of lwc and call i of direct ran the same query.
    paired = [
        (a - b) * 1000 for a, b in zip(got["lwc"]["warm"], got["direct"]["warm"], strict=True)
    ]
    # Round r's two sessions ran back to back: their difference is less exposed to drift.
    paired_first = [
        (a - b) * 1000 for a, b in zip(got["lwc"]["first"], got["direct"]["first"], strict=True)
    ]
    first_over = summary["lwc"]["first_median_ms"] - summary["direct"]["first_median_ms"]
    warm_over = summary["lwc"]["warm_median_ms"] - summary["direct"]["warm_median_ms"]
    first_ci = bootstrap_ci(
        [t * 1000 for t in got["lwc"]["first"]], [t * 1000 for t in got["direct"]["first"]]
    )
    warm_ci = bootstrap_ci(
        [t * 1000 for t in got["lwc"]["warm"]], [t * 1000 for t in got["direct"]["warm"]]
    )
    summary["overhead"] = {
        "first_ci95_ms": [round(first_ci[0], 1), round(first_ci[1], 1)],
        "warm_ci95_ms": [round(warm_ci[0], 2), round(warm_ci[1], 2)],
        "first_ms": round(first_over, 1),
        "first_paired_median_ms": round(median(paired_first), 1),
        "warm_median_ms": round(warm_over, 2),
        "warm_paired_median_ms": round(median(paired), 2),
        "first_pass": first_over <= TARGET_FIRST_MS,
        "warm_pass": warm_over <= TARGET_WARM_MS,
        # The verdict is only significant when the whole interval is on one side of the target.
        "first_conclusive": not first_ci[0] <= TARGET_FIRST_MS <= first_ci[1],
        "warm_conclusive": not warm_ci[0] <= TARGET_WARM_MS <= warm_ci[1],
    }
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="stdlib without tests, fewer calls")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--binary", default=os.environ.get(BINARY_ENV), help=f"CodeGraph binary (${BINARY_ENV})"
    )
    parser.add_argument("--rounds", type=int, help="sessions per side and corpus (6; quick 2)")
    parser.add_argument("--warm", type=int, help="measured warm calls per session (5)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary corpora")
    args = parser.parse_args(argv)
    if not args.binary:
        parser.error(f"no CodeGraph binary: pass --binary or set {BINARY_ENV}")
    binary = Path(args.binary).resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        parser.error(f"not an executable file: {binary}")
    rounds = max(1, min(args.rounds or (2 if args.quick else 6), 20))
    warm = max(1, min(args.warm or 5, 200))

    env = {k: v for k, v in os.environ.items() if not k.startswith("LWC_")}
    env[BINARY_ENV] = str(binary)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    import trio  # the mid-size corpus is the installed trio package's source

    corpora = [
        ("trio", Path(trio.__file__).parent, set()),
        (
            "stdlib" + (" (no tests)" if args.quick else ""),
            stdlib,
            {"site-packages", *TEST_DIRS} if args.quick else {"site-packages"},
        ),
    ]
    report: dict[str, Any] = {
        "command": "scripts/bench code" + (" --quick" if args.quick else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "binary": str(binary),
        "rounds": rounds,
        "warm_per_session": warm,
        "queries": QUERIES,
        "max_files": MAX_FILES,
        "corpora": [],
    }
    began = time.perf_counter()
    with scratch("lwc-bench-code-", keep=args.keep, who="code") as tmp:
        for i, (name, source, skip) in enumerate(corpora):
            root = tmp / f"corpus{i}"
            try:
                info = build_corpus(name, source, root, skip, env)
            except (SetupError, subprocess.TimeoutExpired, OSError) as exc:
                log(f"setup failed: {exc}")
                return 2
            log(f"{name}: latency, {rounds} round(s) x {warm} warm calls per side")
            info["latency"] = bench_latency(root, binary, env, rounds, warm)
            report["corpora"].append(info)
    ok = all(
        c["latency"]["overhead"]["first_pass"] and c["latency"]["overhead"]["warm_pass"]
        for c in report["corpora"]
    )
    report["pass"] = ok
    report["machine"]["loadavg_1m_at_end"] = round(os.getloadavg()[0], 2)
    report["seconds"] = round(time.perf_counter() - began, 1)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(markdown(report))
        print(f"\noverall: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1
