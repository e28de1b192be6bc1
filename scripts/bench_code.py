#!/usr/bin/env python3
"""Code-plane benchmark: CodeGraph indexing and `lwc_explore` code-mode latency (issue 4).

    python scripts/bench_code.py [--quick] [--json] [--binary PATH] [--keep]

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
import contextlib
import json
import os
import platform
import random
import select
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from lwc_trio.codegraph.runtime import BINARY_ENV, child_env

TARGET_WARM_MS = 3.0
TARGET_FIRST_MS = 50.0
CALL_TIMEOUT = 60.0  # a single call, seconds (lwc's own code deadline is 10 s)
INDEX_TIMEOUT = 900.0
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


class SetupError(Exception):
    """A corpus could not be prepared or indexed; the run stops (exit 2)."""


def log(message: str) -> None:
    print(f"[bench_code] {message}", file=sys.stderr, flush=True)


# -- corpora and indexing -----------------------------------------------------------------------


def copy_py_tree(source: Path, dest: Path, *, skip_dirs: set[str]) -> int:
    """Copy every `.py` file under `source` into `dest` (same layout); returns the file count."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs and d != "__pycache__")
        rel = Path(dirpath).relative_to(source)
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            target = dest / rel / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(dirpath) / name, target)
            count += 1
    return count


def count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def tree_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(dirpath) / name).lstat().st_size
    return total


def run_lwc_cli(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "lwc_trio", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise SetupError(
            f"lwc {' '.join(args)} failed ({done.returncode}): "
            f"{done.stderr.decode(errors='replace').strip()[-500:]}"
        )
    return done.stdout.decode()


def build_corpus(
    name: str, source: Path, root: Path, skip: set[str], env: dict[str, str]
) -> dict[str, Any]:
    root.mkdir(parents=True)
    copied = copy_py_tree(source, root / "src", skip_dirs=skip)
    copied_loc = sum(count_lines(p) for p in (root / "src").rglob("*.py"))
    log(f"{name}: copied {copied} .py files ({copied_loc} lines) from {source}")
    run_lwc_cli(["init"], root, env, 60)
    started = time.perf_counter()
    out = run_lwc_cli(["--scope", "project", "cg", "init", str(root)], root, env, INDEX_TIMEOUT)
    seconds = time.perf_counter() - started
    index = json.loads(out)["index"]
    if index.get("state") != "ready":
        raise SetupError(f"{name}: index not ready: {out}")
    db = sqlite3.connect(f"file:{root / '.codegraph' / 'codegraph.db'}?mode=ro", uri=True)
    try:
        paths = [row[0] for row in db.execute("SELECT path FROM files")]
        nodes = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
        edges = db.execute("SELECT count(*) FROM edges").fetchone()[0]
    finally:
        db.close()
    indexed_loc = sum(count_lines(root / p) for p in paths if (root / p).is_file())
    size = tree_bytes(root / ".codegraph")
    log(f"{name}: indexed {len(paths)} files, {indexed_loc} lines in {seconds:.1f} s")
    return {
        "name": name,
        "source": str(source),
        "files_copied": copied,
        "loc_copied": copied_loc,
        "files_indexed": len(paths),
        "loc_indexed": indexed_loc,
        "nodes": nodes,
        "edges": edges,
        "index_seconds": round(seconds, 2),
        "loc_per_second": round(indexed_loc / seconds),
        "index_bytes": size,
    }


# -- a raw JSON-lines client ----------------------------------------------------------------------


class LineSession:
    """A child speaking newline-delimited JSON-RPC on stdio; stderr kept as a bounded tail."""

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> None:
        self.spawned_at = time.perf_counter()
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # our own group: cleanup never touches anything else
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._out = self.proc.stdout.fileno()
        self._buf = bytearray()
        self._next_id = 1
        self.stderr_tail: deque[bytes] = deque(maxlen=64)
        self._drain = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drain.start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self.proc.stderr.fileno(), 65536):
                self.stderr_tail.append(chunk)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.proc.stdin.flush()

    def _read_line(self, deadline: float) -> tuple[bytes, float]:
        """The next line and the perf_counter time it was complete."""
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                line = bytes(self._buf[:end])
                del self._buf[: end + 1]
                return line, time.perf_counter()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError("no answer in time")
            ready, _, _ = select.select([self._out], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._out, 1 << 20)
            if not chunk:
                tail = b"".join(self.stderr_tail)[-400:].decode(errors="replace")
                raise EOFError(f"process exited; stderr tail: {tail}")
            self._buf += chunk

    def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float, int]:
        """Send a request; (response, seconds from write to full response line, line bytes)."""
        request_id = self._next_id
        self._next_id += 1
        deadline = time.perf_counter() + CALL_TIMEOUT
        started = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            line, at = self._read_line(deadline)
            if not line.strip():
                continue
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return message, at - started, len(line)
            # notifications or requests from the server: none expected, skip them

    def handshake(self, params: dict[str, Any]) -> None:
        """`initialize` + `notifications/initialized`; the process is stopped if it fails."""
        try:
            self.request("initialize", params)
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """stdin EOF, then wait (bounded); SIGKILL our own group if it does not exit."""
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        # The group may still hold a helper the leader forked (codegraph's watchdog).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._drain.join(timeout=2)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


INIT_PARAMS = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench_code", "version": "1"},
}


class LwcSide:
    name = "lwc"

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        lwc = Path(sys.executable).with_name("lwc")
        argv = [str(lwc)] if lwc.is_file() else [sys.executable, "-m", "lwc_trio"]
        argv = [*argv, "serve", "--mcp", "--path", str(root)]
        self.session = LineSession(argv, cwd=root, env=env)
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
        self.session = LineSession(argv, cwd=root, env=child_env(env))
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


# -- latency --------------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), -(-len(ordered) * p // 100)))
    return ordered[int(rank) - 1]


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
                f"warm median {statistics.median(out['warm']) * 1000:.2f} ms"
            )
    summary: dict[str, Any] = {}
    for side_name, data in got.items():
        warm_ms = [t * 1000 for t in data["warm"]]
        summary[side_name] = {
            "first_ms": [round(t * 1000, 1) for t in data["first"]],
            "first_median_ms": round(statistics.median(data["first"]) * 1000, 1),
            "warm_n": len(warm_ms),
            "warm_median_ms": round(statistics.median(warm_ms), 2),
            "warm_p99_ms": round(percentile(warm_ms, 99), 2),
            "warm_min_ms": round(min(warm_ms), 2),
            "response_bytes_median": int(statistics.median(data["sizes"])),
        }
        if data["code_ms"]:
            summary[side_name]["code_ms_median"] = statistics.median(data["code_ms"])
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
        "first_paired_median_ms": round(statistics.median(paired_first), 1),
        "warm_median_ms": round(warm_over, 2),
        "warm_paired_median_ms": round(statistics.median(paired), 2),
        "first_pass": first_over <= TARGET_FIRST_MS,
        "warm_pass": warm_over <= TARGET_WARM_MS,
        # The verdict is only significant when the whole interval is on one side of the target.
        "first_conclusive": not first_ci[0] <= TARGET_FIRST_MS <= first_ci[1],
        "warm_conclusive": not warm_ci[0] <= TARGET_WARM_MS <= warm_ci[1],
    }
    return summary


def bootstrap_ci(a: list[float], b: list[float], n: int = 2000) -> tuple[float, float]:
    """95% bootstrap interval of median(a) - median(b), resampling each side independently."""
    rng = random.Random(1234)
    diffs = sorted(
        statistics.median(rng.choices(a, k=len(a))) - statistics.median(rng.choices(b, k=len(b)))
        for _ in range(n)
    )
    return diffs[int(n * 0.025)], diffs[int(n * 0.975) - 1]


# -- report ---------------------------------------------------------------------------------------


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
    lines = [
        "| corpus | files | LOC | index time | LOC/s | index size |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for c in report["corpora"]:
        lines.append(
            f"| {c['name']} | {c['files_indexed']:,} | {c['loc_indexed']:,} | "
            f"{c['index_seconds']:.1f} s | {c['loc_per_second']:,} | {mib(c['index_bytes'])} |"
        )
    lines += [
        "",
        "| corpus | side | first call (median) | warm median | warm p99 | warm n |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for c in report["corpora"]:
        lat = c["latency"]
        for side in ("direct", "lwc"):
            s = lat[side]
            lines.append(
                f"| {c['name']} | {side} | {s['first_median_ms']:.1f} ms | "
                f"{s['warm_median_ms']:.2f} ms | {s['warm_p99_ms']:.2f} ms | {s['warm_n']} |"
            )
        o = lat["overhead"]
        first_verdict = verdict(o["first_pass"], o["first_conclusive"], TARGET_FIRST_MS)
        warm_verdict = verdict(o["warm_pass"], o["warm_conclusive"], TARGET_WARM_MS)
        lines.append(
            f"| {c['name']} | **overhead** | **{o['first_ms']:+.1f} ms** ({first_verdict}) | "
            f"**{o['warm_median_ms']:+.2f} ms** ({warm_verdict}) | "
            f"95% CI first [{o['first_ci95_ms'][0]:+.0f}, {o['first_ci95_ms'][1]:+.0f}], "
            f"warm [{o['warm_ci95_ms'][0]:+.1f}, {o['warm_ci95_ms'][1]:+.1f}]; paired medians: "
            f"first {o['first_paired_median_ms']:+.1f}, warm {o['warm_paired_median_ms']:+.2f} | |"
        )
    lines.append("")
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


def main(argv: list[str] | None = None) -> int:
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
        "command": "python scripts/bench_code.py" + (" --quick" if args.quick else ""),
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
    tmp = Path(tempfile.mkdtemp(prefix="lwc-bench-code-"))
    try:
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
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
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


if __name__ == "__main__":
    sys.exit(main())
