#!/usr/bin/env python3
"""Soak: one real `lwc serve --mcp` process under a long, deterministic mixed workload (issue 7).

    python scripts/soak.py [--calls N] [--sample-every N] [--quick] [--json]
                           [--transport stdio|http] [--seed S] [--pages N] [--write-every K]
                           [--binary PATH | --no-code] [--keep]

Set-up (all with the real CLI, in a temporary directory with a private HOME): a workspace with
a project Wiki (`python -m lwc_trio init`), `--pages` Pages written one by one with
`python -m lwc_trio page put SLUG --title T --file F` (seeded vocabulary, `[[links]]`
between them), a copy of the `lwc_trio` package as source code and its CodeGraph index
(`python -m lwc_trio --scope project cg init WS`). `--binary` (or `LWC_CODEGRAPH_BINARY`) names
the CodeGraph 1.6.1 platform binary; `--no-code` runs a memory-only workload instead.

Then ONE server process, `python -m lwc_trio serve --mcp --path WS`, gets `--calls` requests
from a seeded generator (`--seed`): `lwc_explore` in modes memory, code and all (projectPath
WS or WS/src, assorted maxDocuments/maxFiles), memory "probes" for the marker word of the
latest completed Wiki write (must be found, with that body) and for a superseded marker (must
no longer match), `ping`, invalid arguments and JSON-RPC errors, 70 KiB lines,
`notifications/cancelled` for in-flight ids, and bursts of 50 concurrent calls (a few of them
cancelled). Every `--write-every` calls a background `page put` rewrites one of 16 "live"
pages with a new marker word.

Every response is checked: right id, exactly once (a cancelled id: at most once), JSON-RPC
and tool-result shape, the result echoes its own request (query, mode, scope), planes ready,
the project store's revision at least that of the last write completed before the call was
sent, the same memory object for the same (query, maxDocuments, scope, revision) and the same
codeGraph object for the same (query, maxFiles) throughout, and nothing on stderr.

Every `--sample-every` calls (default: calls / 20), once all outstanding answers are in, the
server is sampled from /proc: VmRSS, open descriptors (/proc/PID/fd), Threads, its child
processes (ppid == server pid) and zombies (state Z among them and in the CodeGraph child's
process group). The run starts with a burst of 50 memory calls, inside the warm-up (the first
10 % of calls). Verdicts: RSS growth (last sample − first sample after warm-up) < 10 MB;
descriptors flat (never above the warm-up peak + 2 + one pooled read connection per worker
thread and store, and no higher in the second half of the run than in the first + 2: any of
trio's worker threads may run a memory job and keep its connections, so a short run can still
step up after its warm-up, while a leak keeps growing); threads flat
(never above the design ceiling, 1 + the memory plane's and the authorizer's thread limits,
and no higher in the second half of the run than in the first + 2: trio's idle worker threads
come and go with the load); exactly one CodeGraph child at every sample after the first code
call, always the same pid; zero zombies; correctness (no check failed); clean exit (stdin EOF
→ exit 0, nothing on stderr, no live CodeGraph process left and its process group gone within
5 s — the CodeGraph child forks a watchdog into its group, which init reaps once the group is
killed).

`--source DIR` runs the lwc_trio package found in DIR (server and CLI writes alike), e.g. a
`git archive HEAD lwc_trio` copy, so a long run is not disturbed by edits to the checkout.

`--transport http` drives the same workload through `--transport http --http-listen
127.0.0.1:0`: one POST per request, cancellation closes the request, a 70 KiB body must get
413, and a 503 `server_busy` (above the in-flight bound, SPEC §1.2) is retried during bursts;
the server is stopped with SIGTERM instead of stdin EOF.

Exit 0 when every verdict passes, 1 when one fails, 2 on a set-up error. The other scripts of
issue 7 (`fault_matrix.py`, `bench_shutdown.py`) import the fixture, client and /proc helpers
from this file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import trio

REPO = Path(__file__).resolve().parents[1]
BINARY_ENV = "LWC_CODEGRAPH_BINARY"
PROTOCOL = "2025-11-25"
FRAME_LIMIT = 65_536
OVERSIZE_BYTES = 70 * 1024
BURST = 50
LIVE_PAGES = 16
RESPONSE_TIMEOUT = 60.0
"""No single answer may take longer (the server's own deadlines are 5 s and 10 s)."""
MB = 1_000_000

RSS_LIMIT_MB = 10.0
FD_TOLERANCE = 2
THREAD_TOLERANCE = 2

_WORD_TEXT = """
anchor atlas beacon binder cache canvas cipher cluster compass crystal delta docket ember
engine falcon fathom filter fjord galaxy garnet glacier harbor helix horizon index iris
jasper journal kernel keystone lantern ledger lumen magnet matrix meadow nebula needle
nimbus oracle orbit osprey packet pebble pilot prism quartz quill radar raven relay ribbon
saddle schema signal socket spiral summit tablet tandem thistle timber tunnel umbra vector
velvet vertex voyage walnut willow window zenith zephyr migration rollback deadline
scheduler tokenizer allocator checksum manifest registry pipeline snapshot watchdog
heartbeat throttle backoff quorum replica shard ingest
"""
WORDS = tuple(_WORD_TEXT.split())
CODE_QUERIES = (
    "cancel scope deadline timeout",
    "parse a JSON-RPC message envelope",
    "sqlite read-only connection progress handler",
    "fault injection script plan",
    "authorize project path symlink",
    "line framer frame limit oversize",
    "restart crashed plane worker",
    "kill process group and reap child",
    "BM25 search ranking fields",
    "page body truncation budget",
    "tokenize CJK bigrams stop words",
    "http request body limit",
)


# -- small utilities -----------------------------------------------------------------------


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def pct(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def find_binary(given: str | None) -> str | None:
    """The CodeGraph binary: --binary, then $LWC_CODEGRAPH_BINARY, then the test variable."""
    for value in (given, os.environ.get(BINARY_ENV), os.environ.get("LWC_TEST_CODEGRAPH_BINARY")):
        if value:
            return value
    return None


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), sep, *(line(r) for r in cells[1:])])


# -- /proc ---------------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, str]:
    """/proc/PID/status as a dict ({} when the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgid) from /proc/PID/stat, or None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2])


def proc_cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace")


def all_pids() -> Iterator[int]:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            yield int(entry.name)


def children_of(pid: int) -> list[dict[str, Any]]:
    """Processes whose parent is `pid`: pid, state, comm, pgid."""
    out = []
    for child in all_pids():
        stat = proc_stat(child)
        if stat is not None and stat[1] == pid:
            out.append(
                {"pid": child, "state": stat[0], "pgid": stat[2], "cmd": proc_cmdline(child)}
            )
    return out


def group_members(pgid: int) -> list[int]:
    """Live pids (zombies included) in process group `pgid`."""
    return [p for p in all_pids() if (s := proc_stat(p)) is not None and s[2] == pgid]


async def groups_after_exit(pgids: set[int], wait: float = 5.0) -> dict[str, Any]:
    """What is left of the CodeGraph process groups once the server has exited.

    `live`: members not yet dead (state other than Z) right at exit — lwc must leave none.
    `zombies`: dead members not yet reaped. The CodeGraph child's own helper process (a
    watchdog it forks into the same group) is SIGKILLed with the group; its parent dies too,
    so it is re-parented to PID 1 and reaping it is init's job, not lwc's. `gone_s`: how long
    until no member was left at all (None: still there after `wait` seconds).
    """
    members = [(p, proc_stat(p)) for g in pgids for p in group_members(g)]
    live = [p for p, st in members if st is not None and st[0] != "Z"]
    zombies = [p for p, st in members if st is not None and st[0] == "Z"]
    t0 = time.perf_counter()
    gone: float | None = None
    while time.perf_counter() - t0 < wait:
        if not any(group_members(g) for g in pgids):
            gone = round(time.perf_counter() - t0, 3)
            break
        await trio.sleep(0.01)
    return {"live": len(live), "zombies": len(zombies), "gone_s": gone}


def fd_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def rchar(pid: int) -> int:
    """Bytes this process has read (any descriptor), from /proc/PID/io; -1 when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def codegraph_children(server_pid: int) -> list[dict[str, Any]]:
    return [c for c in children_of(server_pid) if "codegraph" in c["cmd"]]


def sample(server_pid: int, calls: int, started: float) -> dict[str, Any]:
    """One resource sample of the server process."""
    status = proc_status(server_pid)
    rss_kb = int(status.get("VmRSS", "0 kB").split()[0])
    kids = children_of(server_pid)
    zombies = [k for k in kids if k["state"] == "Z"]
    cg = [k for k in kids if "codegraph" in k["cmd"]]
    group = 0
    for kid in cg:  # whatever the CodeGraph child forked (its own watchdog process)
        members = group_members(kid["pgid"])
        group += len(members)
        for member in members:
            stat = proc_stat(member)
            if member != kid["pid"] and stat is not None and stat[0] == "Z":
                zombies.append({"pid": member, "state": "Z"})
    return {
        "calls": calls,
        "elapsed_s": round(time.perf_counter() - started, 1),
        "rss_mb": round(rss_kb * 1024 / MB, 2),
        "fds": fd_count(server_pid),
        "threads": int(status.get("Threads", "0")),
        "children": len(kids),
        "codegraph": len(cg),
        "codegraph_pids": [k["pid"] for k in cg],
        "codegraph_group": group,
        "zombies": len(zombies),
    }


# -- the fixture: a real Wiki and a real CodeGraph index, written with the CLI --------------


def lwc_cli(args: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 600) -> Any:
    """Run `python -m lwc_trio ARGS`; its JSON output (raises on failure)."""
    proc = subprocess.run(
        [sys.executable, "-m", "lwc_trio", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"lwc {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def page_text(rng: random.Random, index: int, pages: int) -> tuple[str, str, str]:
    """(title, summary, body) for generated page `index`."""
    title = " ".join(rng.sample(WORDS, 3)).title() + f" {index}"
    summary = " ".join(rng.sample(WORDS, 8))
    paragraphs = []
    for _ in range(rng.randint(2, 5)):
        paragraphs.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) + ".")
    links = {rng.randrange(pages) for _ in range(rng.randint(0, 4))} - {index}
    paragraphs.append(" ".join(f"See [[p-{n:04d}]]." for n in sorted(links)))
    return title, summary, f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n"


def marker(n: int) -> str:
    """The unique search word of live write number `n`."""
    return f"soakmark{n:05d}x"


def live_write(n: int) -> tuple[str, str, str]:
    """(slug, title, body) of live write number `n`: one of LIVE_PAGES pages, a new marker."""
    rng = random.Random(f"live-{n}")
    slug = f"live-{n % LIVE_PAGES:02d}"
    body = (
        f"# Live page {n % LIVE_PAGES}\n\n"
        + " ".join(rng.choice(WORDS) for _ in range(40))
        + f" {marker(n)} "
        + " ".join(rng.choice(WORDS) for _ in range(20))
        + ".\n"
    )
    return slug, f"Live page {n % LIVE_PAGES}", body


class Fixture:
    """A temporary HOME and workspace with a project Wiki and, optionally, a CodeGraph index."""

    def __init__(self, root: Path, binary: str | None, source: Path | None = None) -> None:
        self.root = root
        self.home = root / "home"
        self.ws = root / "ws"
        self.outside = root / "outside"  # an existing directory outside the workspace
        self.binary = binary
        self.revision = 0
        self.lwc = [sys.executable, "-m", "lwc_trio"]
        """The command that runs lwc (scripts may point it at an installed `lwc`)."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.ws.mkdir(parents=True, exist_ok=True)
        self.outside.mkdir(parents=True, exist_ok=True)
        self.ws = self.ws.resolve()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            # Every lwc process (server and CLI writes) runs this source tree: a frozen copy
            # (--source) keeps a long run on one version while the checkout changes.
            "PYTHONPATH": str(source or REPO),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if binary:
            self.env[BINARY_ENV] = binary

    @property
    def has_code(self) -> bool:
        return self.binary is not None

    def build(self, pages: int, seed: int, log: Any = None) -> None:
        """`lwc init`, `pages` × `lwc page put`, the live pages, and the CodeGraph index."""
        lwc_cli(["init", "--no-git-exclude"], self.env, self.ws)
        rng = random.Random(seed)
        body_file = self.root / "body.md"
        started = time.perf_counter()
        for i in range(pages):
            title, summary, body = page_text(rng, i, pages)
            body_file.write_text(body)
            out = lwc_cli(
                [
                    "page",
                    "put",
                    f"p-{i:04d}",
                    "--title",
                    title,
                    "--summary",
                    summary,
                    "--file",
                    str(body_file),
                ],
                self.env,
                self.ws,
            )
            self.revision = out["revision"]
        if log:
            log(f"{pages} pages written with `page put` in {time.perf_counter() - started:.1f} s")
        (self.ws / "src").mkdir(exist_ok=True)
        if self.binary:
            shutil.copytree(
                REPO / "lwc_trio",
                self.ws / "src" / "lwc_trio",
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                dirs_exist_ok=True,
            )
            t0 = time.perf_counter()
            lwc_cli(["--scope", "project", "cg", "init", str(self.ws)], self.env, self.ws)
            if log:
                log(f"CodeGraph index built in {time.perf_counter() - t0:.1f} s")

    def write_args(self, n: int) -> tuple[list[str], str, str, str]:
        """argv for live write `n` (its body file written now), plus slug, marker, body."""
        slug, title, body = live_write(n)
        path = self.root / f"live-{n % 4}.md"
        path.write_text(body)
        argv = [sys.executable, "-m", "lwc_trio", "page", "put", slug, "--title", title]
        return [*argv, "--file", str(path)], slug, marker(n), body

    def serve_argv(self, extra: Sequence[str] = ()) -> list[str]:
        return [*self.lwc, "serve", "--mcp", "--path", str(self.ws), *extra]


# -- JSON-RPC messages -----------------------------------------------------------------------


def key_of(rid: Any) -> tuple[str, Any]:
    return (type(rid).__name__, rid)


def tool_call(rid: Any, arguments: Any, name: str = "lwc_explore") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def ping(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "ping"}


def cancelled(rid: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": rid, "reason": "soak"},
    }


def initialize(rid: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "lwc-soak", "version": "1"},
        },
    }


def oversize_line(rid: Any, ws: str) -> bytes:
    """A tools/call line of about 70 KiB (over the 64 KiB frame limit), id first."""
    head = json.dumps(tool_call(rid, {"query": "", "projectPath": ws}))
    pad = "q" * (OVERSIZE_BYTES - len(head))
    return head.replace('"query": ""', f'"query": "{pad}"').encode() + b"\n"


def encode(message: Any) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


# -- clients ---------------------------------------------------------------------------------


class ServerGone(Exception):
    """The server's stdout ended while an answer was awaited."""


class _Slot:
    __slots__ = ("event", "received", "response")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.response: dict[str, Any] | None = None
        self.received = 0.0


class StdioClient:
    """Raw newline-delimited JSON-RPC over a real server's pipes (no client library).

    One reader task routes each response line to the task awaiting its id; responses nobody
    awaits (cancelled ids, null ids) are kept in `unclaimed`. `seen` counts answers per id.
    """

    transport = "stdio"

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.pid = process.pid
        self._waiters: dict[tuple[str, Any], _Slot] = {}
        self._lock = trio.Lock()
        self._buf = bytearray()
        self.seen: Counter[tuple[str, Any]] = Counter()
        self.unclaimed: list[dict[str, Any]] = []
        self.stderr = bytearray()
        self.eof = trio.Event()
        self.bad_lines: list[bytes] = []

    @classmethod
    async def start(
        cls, nursery: trio.Nursery, argv: Sequence[str], env: dict[str, str], cwd: Path
    ) -> StdioClient:
        process = await trio.lowlevel.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(cwd),
        )
        client = cls(process)
        nursery.start_soon(client._read_stdout)
        nursery.start_soon(client._read_stderr)
        return client

    async def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        try:
            async for chunk in self.process.stdout:
                self._buf += chunk
                while (end := self._buf.find(b"\n")) >= 0:
                    line = bytes(self._buf[:end])
                    del self._buf[: end + 1]
                    self._route(line, time.perf_counter())
        finally:
            self.eof.set()
            for slot in self._waiters.values():
                slot.event.set()

    def _route(self, line: bytes, now: float) -> None:
        try:
            message = json.loads(line)
            rid = message["id"]
        except (ValueError, KeyError, TypeError):
            self.bad_lines.append(line[:200])
            return
        key = key_of(rid)
        self.seen[key] += 1
        slot = self._waiters.pop(key, None) if rid is not None else None
        if slot is None:
            self.unclaimed.append(message)
            return
        slot.response, slot.received = message, now
        slot.event.set()

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        async for chunk in self.process.stderr:
            if len(self.stderr) < 65_536:
                self.stderr += chunk[: 65_536 - len(self.stderr)]

    def expect(self, rid: Any) -> _Slot:
        slot = _Slot()
        self._waiters[key_of(rid)] = slot
        return slot

    async def send_raw(self, data: bytes) -> float:
        assert self.process.stdin is not None
        async with self._lock:
            sent = time.perf_counter()
            await self.process.stdin.send_all(data)
        return sent

    async def send(self, message: Any) -> float:
        return await self.send_raw(encode(message))

    async def wait_slot(self, slot: _Slot, within: float = RESPONSE_TIMEOUT) -> dict[str, Any]:
        with trio.fail_after(within):
            await slot.event.wait()
        if slot.response is None:
            raise ServerGone("the server's stdout ended before the answer")
        return slot.response

    async def request(
        self, message: dict[str, Any], within: float = RESPONSE_TIMEOUT
    ) -> tuple[dict[str, Any], float]:
        """Send one request and await its answer: (response, round trip in seconds)."""
        slot = self.expect(message["id"])
        sent = await self.send(message)
        response = await self.wait_slot(slot, within)
        return response, slot.received - sent

    async def oversize(self, rid: Any, ws: str) -> tuple[dict[str, Any], float]:
        slot = self.expect(rid)
        sent = await self.send_raw(oversize_line(rid, ws))
        response = await self.wait_slot(slot)
        return response, slot.received - sent

    async def cancel(self, rid: Any) -> None:
        await self.send(cancelled(rid))

    async def close_input(self) -> None:
        assert self.process.stdin is not None
        async with self._lock:
            await self.process.stdin.aclose()

    async def finish(self, within: float = 30.0) -> int:
        """Close stdin, read every remaining answer, return the exit code."""
        await self.close_input()
        with trio.fail_after(within):
            await self.eof.wait()
            return await self.process.wait()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()


class HttpClient:
    """Stateless streamable HTTP: one POST (one fresh connection) per JSON-RPC message."""

    transport = "http"

    def __init__(self, process: trio.Process, host: str, port: int, path: str) -> None:
        self.process = process
        self.pid = process.pid
        self.host, self.port, self.path = host, port, path
        self.seen: Counter[tuple[str, Any]] = Counter()
        self.unclaimed: list[dict[str, Any]] = []
        self.stderr = bytearray()
        self.bad_lines: list[bytes] = []
        self.eof = trio.Event()
        self._inflight: dict[tuple[str, Any], trio.CancelScope] = {}
        self.retry_busy = False
        self.busy_retries = 0

    @classmethod
    async def start(
        cls, nursery: trio.Nursery, argv: Sequence[str], env: dict[str, str], cwd: Path
    ) -> HttpClient:
        process = await trio.lowlevel.open_process(
            [*argv, "--transport", "http", "--http-listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(cwd),
        )
        assert process.stderr is not None
        buf = bytearray()
        url = None
        with trio.fail_after(30):
            while url is None:
                chunk = await process.stderr.receive_some(4096)
                if not chunk:
                    raise RuntimeError(f"HTTP server ended before listening: {bytes(buf)!r}")
                buf += chunk
                for line in bytes(buf).decode(errors="replace").splitlines():
                    if "listening on http://" in line:
                        url = line.split("listening on ", 1)[1].strip()
        rest = url[len("http://") :]
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.rpartition(":")
        client = cls(process, host, int(port), "/" + path)
        lines = bytes(buf).split(b"\n")
        client.stderr += b"\n".join(ln for ln in lines if b"listening on" not in ln).strip()
        nursery.start_soon(client._read_stderr)
        nursery.start_soon(client._read_stdout)
        return client

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        async for chunk in self.process.stderr:
            if len(self.stderr) < 65_536:
                self.stderr += chunk[: 65_536 - len(self.stderr)]

    async def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        async for chunk in self.process.stdout:  # nothing should ever come here
            self.bad_lines.append(bytes(chunk[:200]))
        self.eof.set()

    async def post(self, body: bytes) -> tuple[int, bytes]:
        """POST `body`; (status, response body)."""
        stream = await trio.open_tcp_stream(self.host, self.port)
        async with stream:
            head = (
                f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                f"MCP-Protocol-Version: {PROTOCOL}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            await stream.send_all(head + body)
            data = bytearray()
            while chunk := await stream.receive_some(65_536):
                data += chunk
                if _http_complete(data):
                    break
        header, _, payload = bytes(data).partition(b"\r\n\r\n")
        status = int(header.split(b" ", 2)[1])
        return status, payload

    async def request(
        self, message: dict[str, Any], within: float = RESPONSE_TIMEOUT
    ) -> tuple[dict[str, Any], float]:
        key = key_of(message["id"])
        sent = time.perf_counter()
        with trio.fail_after(within):
            while True:
                status, payload = await self.post(encode(message)[:-1])
                response = json.loads(payload) if payload else {}
                busy = response.get("error", {}).get("data", {}).get("kind") == "server_busy"
                if not (status == 503 and busy and self.retry_busy):
                    break
                # Above the in-flight bound (SPEC §1.2): a client retries; so does the soak,
                # at once (Retry-After is advice for people), while a burst is running.
                self.busy_retries += 1
                await trio.sleep(0.02)
        took = time.perf_counter() - sent
        if status != 200:
            response = {"_status": status, **response}
        self.seen[key] += 1
        return response, took

    async def request_cancellable(self, message: dict[str, Any], scope: trio.CancelScope) -> None:
        """A request that a later `cancel(id)` aborts by closing its connection."""
        key = key_of(message["id"])
        self._inflight[key] = scope
        try:
            with scope:
                status, payload = await self.post(encode(message)[:-1])
                response = json.loads(payload) if payload else {}
                self.seen[key] += 1
                self.unclaimed.append(
                    response if status == 200 else {"_status": status, **response}
                )
        finally:
            self._inflight.pop(key, None)

    async def oversize(self, rid: Any, ws: str) -> tuple[dict[str, Any], float]:
        sent = time.perf_counter()
        status, payload = await self.post(oversize_line(rid, ws)[:-1])
        took = time.perf_counter() - sent
        response = json.loads(payload) if payload else {}
        return {"_status": status, **response}, took

    async def cancel(self, rid: Any) -> None:
        scope = self._inflight.get(key_of(rid))
        if scope is not None:
            scope.cancel()

    async def finish(self, within: float = 30.0) -> int:
        """SIGTERM (HTTP has no stdin), then the exit code."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        with trio.fail_after(within):
            return await self.process.wait()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()


def _http_complete(data: bytearray) -> bool:
    header, sep, body = bytes(data).partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in header.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


# -- response checks -------------------------------------------------------------------------


class Checker:
    """Validates every response against the request that produced it."""

    def __init__(self, ws: Path, has_code: bool) -> None:
        self.ws = str(ws)
        self.has_code = has_code
        self.errors: list[str] = []
        self.error_count = 0
        self.checked = 0
        self.memory_seen: dict[tuple[Any, ...], str] = {}
        self.code_seen: dict[tuple[Any, ...], str] = {}
        self.stats: Counter[str] = Counter()

    def fail(self, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < 50:
            self.errors.append(message)

    def envelope(self, rid: Any, response: dict[str, Any]) -> bool:
        self.checked += 1
        if response.get("jsonrpc") != "2.0" or key_of(response.get("id")) != key_of(rid):
            self.fail(f"id {rid!r}: wrong envelope or id: {str(response)[:200]}")
            return False
        return True

    def ping(self, rid: Any, response: dict[str, Any]) -> None:
        if self.envelope(rid, response) and response.get("result") != {}:
            self.fail(f"ping {rid!r}: {str(response)[:200]}")

    def rpc_error(self, rid: Any, response: dict[str, Any], code: int, kind: str) -> None:
        if not self.envelope(rid, response):
            return
        error = response.get("error")
        if (
            not isinstance(error, dict)
            or error.get("code") != code
            or not isinstance(error.get("data"), dict)
            or error["data"].get("kind") != kind
        ):
            self.fail(f"id {rid!r}: expected error {code}/{kind}, got {str(response)[:200]}")

    def _structured(self, rid: Any, response: dict[str, Any]) -> tuple[dict[str, Any], bool] | None:
        if not self.envelope(rid, response):
            return None
        result = response.get("result")
        if not isinstance(result, dict):
            self.fail(f"id {rid!r}: no result: {str(response)[:200]}")
            return None
        content, sc = result.get("content"), result.get("structuredContent")
        if (
            not isinstance(content, list)
            or len(content) != 1
            or content[0].get("type") != "text"
            or not isinstance(sc, dict)
            or not isinstance(result.get("isError"), bool)
        ):
            self.fail(f"id {rid!r}: bad tool result shape: {str(result)[:200]}")
            return None
        text = content[0].get("text")
        if text != json.dumps(sc, ensure_ascii=False, separators=(",", ":")):
            self.fail(f"id {rid!r}: text block differs from structuredContent")
            return None
        return sc, result["isError"]

    def argument_error(self, rid: Any, response: dict[str, Any], code: str, field: str) -> None:
        got = self._structured(rid, response)
        if got is None:
            return
        sc, is_error = got
        error = sc.get("error")
        if (
            not is_error
            or not isinstance(error, dict)
            or error.get("code") != code
            or error.get("field") != field
        ):
            self.fail(f"id {rid!r}: expected {code}/{field}, got {str(sc)[:200]}")

    def explore(
        self,
        rid: Any,
        response: dict[str, Any],
        args: dict[str, Any],
        floor: int,
        probe: tuple[str, str, bool] | None = None,
        busy_ok: bool = False,
    ) -> None:
        """A successful lwc_explore answer to `args`, sent after revision `floor` was written.

        `probe` = (slug, marker, present): the marker search must (or must no longer) find slug.
        `busy_ok`: the call was one of a burst, so the code plane may answer "busy" (SPEC §5:
        one CodeGraph call in flight and a small bounded queue).
        """
        got = self._structured(rid, response)
        if got is None:
            return
        sc, is_error = got
        mode = args.get("mode", "memory")
        scope = args.get("scope", "all")
        where = f"id {rid!r} ({mode} {args['query'][:30]!r})"
        code = sc.get("codeGraph")
        if busy_ok and is_busy(code):
            self.stats["code_busy"] += 1
            if mode == "code":
                if not is_error:
                    self.fail(f"{where}: busy code answer without isError")
                return
            if sc.get("partial") is not True:
                self.fail(f"{where}: busy code plane but partial is not true")
            self._memory(where, sc.get("memory"), args, floor, probe)
            return
        if is_error:
            self.fail(f"{where}: isError: {str(sc)[:300]}")
            return
        if (sc.get("query"), sc.get("mode"), sc.get("scope")) != (args["query"], mode, scope):
            self.fail(f"{where}: answer to another request: {str(sc)[:200]}")
            return
        if not str(args["projectPath"]).startswith(str(sc.get("projectPath"))):
            self.fail(f"{where}: projectPath {sc.get('projectPath')!r}")
        if ("partial" in sc) != (mode == "all") or sc.get("partial", False):
            self.fail(f"{where}: partial flag wrong: {sc.get('partial')!r}")
        memory = sc.get("memory")
        if mode in ("memory", "all"):
            self._memory(where, memory, args, floor, probe)
        elif memory != {"state": "not_requested"}:
            self.fail(f"{where}: memory requested? {str(memory)[:100]}")
        if mode in ("code", "all"):
            self._code(where, code, args)
        elif code != {"state": "not_requested"}:
            self.fail(f"{where}: code requested? {str(code)[:100]}")
        self.stats[f"ok_{mode}"] += 1

    def _memory(
        self,
        where: str,
        memory: Any,
        args: dict[str, Any],
        floor: int,
        probe: tuple[str, str, bool] | None,
    ) -> None:
        if not isinstance(memory, dict) or memory.get("state") != "ready":
            self.fail(f"{where}: memory not ready: {str(memory)[:300]}")
            return
        stores = [s for s in memory.get("stores", []) if s.get("scope") == "project"]
        if len(stores) != 1 or stores[0].get("state") != "ready":
            self.fail(f"{where}: project store missing or not ready: {memory.get('stores')}")
            return
        revision = stores[0]["revision"]
        if not isinstance(revision, int) or revision < floor:
            self.fail(f"{where}: stale read: revision {revision} < last completed write {floor}")
        limit = args.get("maxDocuments") or 8
        results = memory.get("results")
        if not isinstance(results, list) or len(results) > limit:
            self.fail(f"{where}: {len(results or [])} results > maxDocuments {limit}")
            return
        if probe is not None:
            slug, word, present = probe
            hits = [
                r for r in results if r.get("identifier") == slug and r.get("match") == "lexical"
            ]
            if present:
                bodies = [p.get("body", "") for p in memory.get("pages", [])]
                if not hits or not any(word in b for b in bodies):
                    self.fail(f"{where}: marker {word} of {slug} (rev ≥ {floor}) not found")
                self.stats["probe_found"] += 1
            else:
                if hits:
                    self.fail(f"{where}: superseded marker {word} still matches {slug}")
                self.stats["probe_gone"] += 1
        key = (args["query"], limit, args.get("scope", "all"), revision)
        text = json.dumps(memory, sort_keys=True)
        previous = self.memory_seen.setdefault(key, text)
        if previous != text:
            self.fail(f"{where}: memory differs from an earlier answer at revision {revision}")
        if len(self.memory_seen) > 20_000:
            self.memory_seen.clear()

    def _code(self, where: str, code: Any, args: dict[str, Any]) -> None:
        if not isinstance(code, dict) or code.get("state") != "ready":
            self.fail(f"{where}: codeGraph not ready: {str(code)[:300]}")
            return
        if not isinstance(code.get("text"), str) or not isinstance(code.get("files"), list):
            self.fail(f"{where}: codeGraph shape: {str(code)[:200]}")
            return
        key = (args["query"], args.get("maxFiles") or 12)
        text = json.dumps(code, sort_keys=True)
        previous = self.code_seen.setdefault(key, text)
        if previous != text:
            self.fail(f"{where}: codeGraph differs from an earlier answer to the same query")


def is_busy(code: Any) -> bool:
    """The code plane's immediate "busy" answer (its bounded queue was full)."""
    return (
        isinstance(code, dict)
        and code.get("state") == "error"
        and code.get("error", {}).get("code") == "codegraph_timeout"
        and "busy" in code.get("error", {}).get("message", "")
    )


# -- the workload ----------------------------------------------------------------------------


def invalid_cases(ws: str, outside: str) -> list[tuple[str, dict[str, Any], tuple[Any, ...]]]:
    """(label, message-without-id, expectation); expectation ("tool", code, field) or
    ("rpc", code, kind)."""
    many = " ".join(f"term{i}" for i in range(70))
    # fmt: off
    cases = [
        ("maxDocuments string", {"query": "x", "projectPath": ws, "maxDocuments": "3"},
         ("tool", "invalid_arguments", "maxDocuments")),
        ("maxFiles float", {"query": "x", "projectPath": ws, "maxFiles": 3.0},
         ("tool", "invalid_arguments", "maxFiles")),
        ("unknown field", {"query": "x", "projectPath": ws, "bogus": 1},
         ("tool", "invalid_arguments", "bogus")),
        ("empty query", {"query": "   ", "projectPath": ws},
         ("tool", "invalid_query", "query")),
        ("relative path", {"query": "x", "projectPath": "rel/dir"},
         ("tool", "invalid_project_path", "projectPath")),
        ("outside workspace", {"query": "x", "projectPath": outside},
         ("tool", "project_path_outside_workspace", "projectPath")),
        ("bad mode", {"query": "x", "projectPath": ws, "mode": "both"},
         ("tool", "invalid_arguments", "mode")),
        ("too many terms", {"query": many, "projectPath": ws},
         ("tool", "invalid_query", "query")),
        ("unknown tool", {"query": "x", "projectPath": ws},
         ("rpc", -32602, "unknown_tool")),
        ("unknown method", {}, ("rpc", -32601, "method_not_found")),
    ]
    # fmt: on
    return cases


class Soak:
    """Drives the workload against one server and records everything."""

    def __init__(self, fixture: Fixture, args: argparse.Namespace) -> None:
        self.fx = fixture
        self.args = args
        self.rng = random.Random(args.seed)
        self.checker = Checker(fixture.ws, fixture.has_code)
        self.ws = str(fixture.ws)
        self.src = str(fixture.ws / "src")
        self.invalid_table = invalid_cases(self.ws, str(fixture.outside))
        self.next_id = 1
        self.calls = 0
        self.samples: list[dict[str, Any]] = []
        self.latency: dict[str, list[float]] = {}
        self.outstanding = 0
        self.idle = trio.Event()
        self.idle.set()
        self.cancel_sent: dict[tuple[str, Any], tuple[dict[str, Any], int, bool]] = {}
        self.cancel_stats: Counter[str] = Counter()
        # Live writes: (slug, marker, revision) of completed writes, newest last.
        self.committed = fixture.revision
        self.writes: list[tuple[str, str, int]] = []
        self.write_count = 0
        self.writes_skipped = 0
        self.writing = False
        self.write_failures: list[str] = []
        self.first_code_call: int | None = None
        self.in_burst = False
        self.started = 0.0
        self.client: StdioClient | HttpClient

    def new_id(self) -> Any:
        self.next_id += 1
        # Mostly integers; every 7th a string, so both id kinds are exercised.
        return f"s-{self.next_id}" if self.next_id % 7 == 0 else self.next_id

    # -- request builders -------------------------------------------------------------------

    def explore_args(self, mode: str) -> dict[str, Any]:
        rng = self.rng
        if mode == "code":
            query = rng.choice(CODE_QUERIES)
        elif mode == "all":
            query = rng.choice(CODE_QUERIES[:6]) if rng.random() < 0.5 else rng.choice(WORDS)
        else:
            query = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        args: dict[str, Any] = {
            "query": query,
            "projectPath": self.src if rng.random() < 0.25 else self.ws,
        }
        if mode != "memory" or rng.random() < 0.5:
            args["mode"] = mode
        if mode != "code" and rng.random() < 0.3:
            args["maxDocuments"] = rng.randint(1, 20)
        if mode != "memory" and rng.random() < 0.3:
            args["maxFiles"] = rng.randint(1, 20)
        if rng.random() < 0.1:
            args["scope"] = "project"
        return args

    def probe_args(self) -> tuple[dict[str, Any], tuple[str, str, bool]] | None:
        """A memory search for the newest marker, or for one that was overwritten since."""
        if not self.writes:
            return None
        if self.rng.random() < 0.7 or len(self.writes) <= LIVE_PAGES:
            slug, word, _ = self.writes[-1]
            probe = (slug, word, True)
        else:
            # A marker at least LIVE_PAGES writes old: its page has been rewritten since.
            slug, word, _ = self.writes[self.rng.randrange(len(self.writes) - LIVE_PAGES)]
            probe = (slug, word, False)
        return {"query": probe[1], "projectPath": self.ws, "maxDocuments": 20}, probe

    # -- running one request -----------------------------------------------------------------

    def _record(self, kind: str, seconds: float) -> None:
        key = f"{kind} (in bursts)" if self.in_burst else kind
        self.latency.setdefault(key, []).append(seconds)

    async def _tracked(self, coro: Any) -> None:
        self.outstanding += 1
        self.idle = trio.Event() if self.outstanding == 1 else self.idle
        try:
            await coro
        finally:
            self.outstanding -= 1
            if self.outstanding == 0:
                self.idle.set()

    async def explore(self, mode: str) -> None:
        args = self.explore_args(mode)
        rid = self.new_id()
        floor = self.committed
        if mode != "memory" and self.first_code_call is None:
            self.first_code_call = self.calls
        response, took = await self.client.request(tool_call(rid, args))
        self._record(mode, took)
        self.checker.explore(rid, response, args, floor, busy_ok=self.in_burst)

    async def probe(self) -> None:
        made = self.probe_args()
        if made is None:
            await self.explore("memory")
            return
        args, probe = made
        rid = self.new_id()
        floor = self.committed
        response, took = await self.client.request(tool_call(rid, args))
        self._record("probe", took)
        self.checker.explore(rid, response, args, floor, probe)

    async def ping(self) -> None:
        rid = self.new_id()
        response, took = await self.client.request(ping(rid))
        self._record("ping", took)
        self.checker.ping(rid, response)

    async def invalid(self) -> None:
        label, arguments, expect = self.rng.choice(self.invalid_table)
        rid = self.new_id()
        if label == "unknown method":
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": "server/discover"}
        elif label == "unknown tool":
            message = tool_call(rid, arguments, name="lwc_nothing")
        else:
            message = tool_call(rid, arguments)
        response, took = await self.client.request(message)
        self._record("invalid", took)
        if expect[0] == "tool":
            self.checker.argument_error(rid, response, expect[1], expect[2])
        else:
            self.checker.rpc_error(rid, response, expect[1], expect[2])

    async def oversize(self) -> None:
        rid = self.new_id()
        response, took = await self.client.oversize(rid, self.ws)
        self._record("oversize", took)
        if isinstance(self.client, HttpClient):
            if response.get("_status") != 413:
                self.checker.fail(f"oversize {rid!r}: HTTP {response.get('_status')} != 413")
            return
        self.checker.rpc_error(rid, response, -32600, "frame_too_large")

    async def cancelled_call(self, mode: str) -> None:
        """Send a call and cancel it at once; its answer, if any, is checked at the end."""
        args = self.explore_args(mode)
        rid = self.new_id()
        self.cancel_sent[key_of(rid)] = (args, self.committed, self.in_burst)
        if isinstance(self.client, HttpClient):
            scope = trio.CancelScope()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.client.request_cancellable, tool_call(rid, args), scope)
                await trio.sleep(0.002)
                await self.client.cancel(rid)
            return
        await self.client.send(tool_call(rid, args))
        await self.client.cancel(rid)

    async def burst(self, memory_only: bool = False) -> None:
        """BURST calls at once (mixed modes, a few invalid, a few cancelled)."""
        self.in_burst = True
        if isinstance(self.client, HttpClient):
            self.client.retry_busy = True
        try:
            await self._burst(memory_only)
        finally:
            self.in_burst = False
            if isinstance(self.client, HttpClient):
                self.client.retry_busy = False
        self.calls += BURST

    async def _burst(self, memory_only: bool) -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(BURST):
                roll = self.rng.random()
                if memory_only:
                    nursery.start_soon(self.explore, "memory")
                elif roll < 0.06:
                    nursery.start_soon(self.cancelled_call, self._mode())
                elif roll < 0.16:
                    nursery.start_soon(self.invalid)
                elif roll < 0.22:
                    nursery.start_soon(self.ping)
                else:
                    nursery.start_soon(self.explore, self._mode())

    def _mode(self) -> str:
        if not self.fx.has_code:
            return "memory"
        roll = self.rng.random()
        return "memory" if roll < 0.6 else ("code" if roll < 0.8 else "all")

    # -- background writes --------------------------------------------------------------------

    async def write(self, n: int) -> None:
        argv, slug, word, _ = self.fx.write_args(n)
        self.writing = True
        try:
            proc = await trio.run_process(
                argv, cwd=str(self.fx.ws), env=self.fx.env, capture_stdout=True,
                capture_stderr=True, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                self.write_failures.append(proc.stderr.decode(errors="replace")[:200])
                return
            revision = json.loads(proc.stdout)["revision"]
            self.writes.append((slug, word, revision))
            self.committed = max(self.committed, revision)
        finally:
            self.writing = False

    # -- the main loop ------------------------------------------------------------------------

    async def take_sample(self) -> None:
        with trio.fail_after(RESPONSE_TIMEOUT):
            await self.idle.wait()
        self.samples.append(sample(self.client.pid, self.calls, self.started))

    async def run(self, nursery: trio.Nursery, log: Any) -> None:
        a = self.args
        self.started = time.perf_counter()
        response, _ = await self.client.request(initialize(0))
        if "result" not in response:
            raise RuntimeError(f"initialize failed: {response}")
        if isinstance(self.client, StdioClient):
            await self.client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.samples.append(sample(self.client.pid, 0, self.started))
        weights = {
            "memory": 30,
            "code": 9 if self.fx.has_code else 0,
            "all": 9 if self.fx.has_code else 0,
            "probe": 10,
            "ping": 15,
            "invalid": 10,
            "oversize": 2,
            "cancel": 4,
            "burst": 0.45,
        }
        kinds, cum = list(weights), list(weights.values())
        if a.calls >= 4 * BURST:
            # The warm-up phase starts with a burst of memory calls, which fills both thread
            # pools (authorizer and memory plane): its peaks are the baseline.
            await self._tracked(self.burst(memory_only=True))
        next_sample = a.sample_every
        next_write = a.write_every
        last_log = time.perf_counter()
        while self.calls < a.calls:
            kind = self.rng.choices(kinds, cum)[0]
            if kind == "burst" and self.calls + BURST > a.calls:
                kind = "memory"
            if kind == "burst":
                await self._tracked(self.burst())
            else:
                self.calls += 1
                if kind in ("memory", "code", "all"):
                    coro = self.explore(kind)
                elif kind == "cancel":
                    coro = self.cancelled_call(self._mode())
                else:
                    coro = getattr(self, kind)()
                await self._tracked(coro)
            if self.calls >= next_write:
                next_write += a.write_every
                if self.writing:
                    self.writes_skipped += 1
                else:
                    self.write_count += 1
                    nursery.start_soon(self.write, self.write_count)
            if self.calls >= next_sample:
                next_sample += a.sample_every
                await self.take_sample()
                if log and time.perf_counter() - last_log > 15:
                    last_log = time.perf_counter()
                    s = self.samples[-1]
                    log(
                        f"{s['calls']} calls, {s['elapsed_s']} s: RSS {s['rss_mb']} MB, "
                        f"fds {s['fds']}, threads {s['threads']}, errors "
                        f"{self.checker.error_count}"
                    )
        await self.take_sample()

    def check_cancelled(self) -> None:
        """Every answer to a cancelled id must be that call's own correct answer."""
        for message in self.client.unclaimed:
            rid = message.get("id")
            entry = self.cancel_sent.get(key_of(rid)) if rid is not None else None
            if entry is None:
                self.checker.fail(f"unsolicited response: {str(message)[:200]}")
                continue
            args, floor, in_burst = entry
            if in_burst and message.get("_status") == 503:
                # HTTP, above the in-flight bound before the cancel: a valid refusal.
                self.checker.rpc_error(rid, message, -32000, "server_busy")
                self.cancel_stats["busy_503"] += 1
                continue
            self.checker.explore(rid, message, args, floor, busy_ok=in_burst)
            self.cancel_stats["answered"] += 1
        for key in self.cancel_sent:
            if self.client.seen[key] == 0:
                self.cancel_stats["no_answer"] += 1
        for key, count in self.client.seen.items():
            if count > 1:
                self.checker.fail(f"id {key[1]!r} answered {count} times")


def thread_ceiling() -> int:
    """1 main thread + the memory plane's and the authorizer's worker-thread limits."""
    from lwc_trio.actors.authorizer import THREADS  # from --source when given (see main)
    from lwc_trio.actors.planes import MEMORY_THREADS

    return 1 + MEMORY_THREADS + THREADS


# -- verdicts --------------------------------------------------------------------------------


def verdicts(
    samples: list[dict[str, Any]], warmup_calls: int, soak: Soak, exit_info: dict[str, Any]
) -> list[dict[str, Any]]:
    warm_idx = next(
        (i for i, s in enumerate(samples) if s["calls"] >= warmup_calls), len(samples) - 1
    )
    warm = samples[warm_idx]
    after = samples[warm_idx:]
    out = []
    growth = after[-1]["rss_mb"] - warm["rss_mb"]
    peak = max(s["rss_mb"] for s in after) - warm["rss_mb"]
    # A leak keeps growing; a warm-up plateau does not: show the second half on its own.
    second_half = after[-1]["rss_mb"] - after[len(after) // 2]["rss_mb"]
    out.append(
        {
            "resource": "RSS",
            "measured": f"{warm['rss_mb']:.1f} → {after[-1]['rss_mb']:.1f} MB "
            f"(growth {growth:+.1f}, peak {peak:+.1f}, 2nd half {second_half:+.1f})",
            "target": f"growth < {RSS_LIMIT_MB:g} MB after warm-up",
            "pass": growth < RSS_LIMIT_MB,
        }
    )
    fds = [s["fds"] for s in after]
    warm_fds = max(s["fds"] for s in samples[1 : warm_idx + 1] or samples)
    # Any of trio's worker threads may run a memory job and keep a pooled read connection per
    # store, so until every thread has done so (a short run may not get there in its warm-up)
    # descriptors can still step up by design: the ceiling allows one per thread and store.
    # A leak is what keeps growing: the second half may not exceed the first.
    fd_ceiling = warm_fds + FD_TOLERANCE + 2 * (thread_ceiling() - 1)
    first_half, second_half = fds[: max(1, len(fds) // 2)], fds[len(fds) // 2 :]
    out.append(
        {
            "resource": "open fds",
            "measured": f"≤ {warm_fds} during warm-up, {min(fds)}–{max(fds)} after "
            f"(1st half ≤ {max(first_half)}, 2nd half ≤ {max(second_half)})",
            "target": f"≤ {fd_ceiling} (one pooled connection per thread and store); "
            f"2nd half ≤ 1st half peak + {FD_TOLERANCE}",
            "pass": max(fds) <= fd_ceiling and max(second_half) <= max(first_half) + FD_TOLERANCE,
        }
    )
    warm_threads = max(s["threads"] for s in samples[: warm_idx + 1])
    threads = [s["threads"] for s in after]
    out.append(
        {
            "resource": "threads",
            "measured": f"≤ {warm_threads} during warm-up, {min(threads)}–{max(threads)} after "
            f"(design ceiling {thread_ceiling()})",
            "target": f"≤ ceiling; 2nd half ≤ 1st half peak + {THREAD_TOLERANCE}",
            "pass": max(threads) <= thread_ceiling()
            and max(threads[len(threads) // 2 :])
            <= max(threads[: max(1, len(threads) // 2)]) + THREAD_TOLERANCE,
        }
    )
    if soak.fx.has_code:
        first = soak.first_code_call or 0
        cg = [s for s in samples if s["calls"] > first]
        pids = {pid for s in cg for pid in s["codegraph_pids"]}
        counts = sorted({s["codegraph"] for s in cg})
        out.append(
            {
                "resource": "CodeGraph child",
                "measured": f"count per sample {counts}, {len(pids)} distinct pid(s)",
                "target": "exactly 1, same pid",
                "pass": counts == [1] and len(pids) == 1,
            }
        )
    zombies = max(s["zombies"] for s in samples)
    out.append(
        {
            "resource": "zombies",
            "measured": str(zombies),
            "target": "0",
            "pass": zombies == 0,
        }
    )
    c = soak.checker
    out.append(
        {
            "resource": "correctness",
            "measured": f"{c.checked} responses checked, {c.error_count} failures",
            "target": "0 failures",
            "pass": c.error_count == 0,
        }
    )
    gone = exit_info["gone_s"]
    out.append(
        {
            "resource": "exit",
            "measured": f"exit {exit_info['code']}, {exit_info['live']} live process(es) left, "
            f"CodeGraph group gone after {'—' if gone is None else f'{gone:g} s'}, "
            f"stderr {exit_info['stderr_bytes']} B",
            "target": "0, none left, empty stderr",
            "pass": exit_info["code"] == 0
            and exit_info["live"] == 0
            and gone is not None
            and exit_info["stderr_bytes"] == 0,
        }
    )
    return out


# -- main -------------------------------------------------------------------------------------


async def soak_main(args: argparse.Namespace, fixture: Fixture, log: Any) -> dict[str, Any]:
    soak = Soak(fixture, args)
    exit_info: dict[str, Any] = {"code": None, "live": 0, "gone_s": 0.0, "stderr_bytes": 0}
    async with trio.open_nursery() as nursery:
        client_cls = HttpClient if args.transport == "http" else StdioClient
        client = await client_cls.start(nursery, fixture.serve_argv(), fixture.env, fixture.ws)
        soak.client = client
        try:
            await soak.run(nursery, log)
            # Every CodeGraph child ever seen leads its own process group.
            pgids = {pid for s in soak.samples for pid in s["codegraph_pids"]}
            exit_info["code"] = await client.finish()
            exit_info.update(await groups_after_exit(pgids))
            await trio.sleep(0.05)  # let the stderr reader see EOF
            exit_info["stderr_bytes"] = len(client.stderr)
            exit_info["stderr"] = bytes(client.stderr[:500]).decode(errors="replace")
        finally:
            client.kill()
        soak.check_cancelled()
        if client.bad_lines:
            soak.checker.fail(f"{len(client.bad_lines)} unparsable stdout lines")
        nursery.cancel_scope.cancel()
    elapsed = time.perf_counter() - soak.started
    warmup = max(args.calls // 10, args.sample_every)
    result = {
        "transport": args.transport,
        "calls": soak.calls,
        "seed": args.seed,
        "source": str(args.source or REPO),
        "pages": args.pages,
        "codegraph": fixture.has_code,
        "elapsed_s": round(elapsed, 1),
        "calls_per_s": round(soak.calls / elapsed, 1),
        "writes": {
            "completed": len(soak.writes),
            "skipped_busy": soak.writes_skipped,
            "failed": len(soak.write_failures),
            "final_revision": soak.committed,
        },
        "cancelled": {"sent": len(soak.cancel_sent), **soak.cancel_stats},
        "http_503_retries": getattr(soak.client, "busy_retries", None),
        "loadavg": " / ".join(f"{x:.1f}" for x in os.getloadavg()),
        "checks": dict(soak.checker.stats),
        "latency_ms": {
            kind: {
                "n": len(v),
                "p50": ms(statistics.median(v)),
                "p99": ms(pct(v, 0.99)),
                "max": ms(max(v)),
            }
            for kind, v in sorted(soak.latency.items())
        },
        "samples": soak.samples,
        "verdicts": verdicts(soak.samples, warmup, soak, exit_info),
        "errors": soak.checker.errors[:20] + soak.write_failures[:5],
        "exit": exit_info,
    }
    result["pass"] = all(v["pass"] for v in result["verdicts"])
    return result


def print_report(result: dict[str, Any]) -> None:
    print(
        f"lwc soak: {result['calls']} calls over {result['transport']} in {result['elapsed_s']} s "
        f"({result['calls_per_s']} calls/s), seed {result['seed']}, {result['pages']} pages, "
        f"CodeGraph {'on' if result['codegraph'] else 'off'}"
    )
    w = result["writes"]
    print(
        f"background writes: {w['completed']} completed (revision → {w['final_revision']}), "
        f"{w['skipped_busy']} skipped while one ran, {w['failed']} failed"
    )
    c = result["cancelled"]
    print(
        f"cancelled calls: {c['sent']} sent, {c.get('answered', 0)} answered anyway (checked), "
        f"{c.get('no_answer', 0)} without answer; code plane busy in bursts: "
        f"{result['checks'].get('code_busy', 0)}; marker probes: "
        f"{result['checks'].get('probe_found', 0)} found, "
        f"{result['checks'].get('probe_gone', 0)} superseded and gone"
        + (
            f"; HTTP 503 retries in bursts: {result['http_503_retries']}"
            if result["transport"] == "http"
            else ""
        )
    )
    print(f"load average at the end: {result['loadavg']}")
    print()
    rows = [
        [s["calls"], s["elapsed_s"], s["rss_mb"], s["fds"], s["threads"], s["children"],
         s["codegraph"], s["zombies"]]
        for s in result["samples"]
    ]  # fmt: skip
    headers = ["calls", "t (s)", "RSS (MB)", "fds", "threads", "children", "codegraph", "zombies"]
    print(markdown_table(headers, rows))
    print()
    lat = result["latency_ms"]
    print(
        markdown_table(
            ["request", "n", "p50 (ms)", "p99 (ms)", "max (ms)"],
            [[k, v["n"], v["p50"], v["p99"], v["max"]] for k, v in lat.items()],
        )
    )
    print()
    print(
        markdown_table(
            ["resource", "measured", "target", "verdict"],
            [
                [v["resource"], v["measured"], v["target"], "PASS" if v["pass"] else "FAIL"]
                for v in result["verdicts"]
            ],
        )
    )
    for error in result["errors"]:
        print("  error:", error)
    print()
    print("verdict:", "PASS" if result["pass"] else "FAIL")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--calls", type=int, default=None, help="default 20,000; quick 1,000")
    p.add_argument("--sample-every", type=int, default=None, help="default: calls / 20")
    p.add_argument("--quick", action="store_true", help="about 1,000 calls, 40 pages")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--pages", type=int, default=None, help="Wiki pages (default 300; quick 40)")
    p.add_argument("--write-every", type=int, default=50, help="calls between background writes")
    p.add_argument("--binary", default=None, help="CodeGraph platform binary")
    p.add_argument("--no-code", action="store_true", help="memory-only workload")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument(
        "--source",
        type=Path,
        default=None,
        help="directory holding the lwc_trio package to run (default: this checkout)",
    )
    args = p.parse_args(argv)
    if args.calls is None:
        args.calls = 1_000 if args.quick else 20_000
    if args.pages is None:
        args.pages = 40 if args.quick else 300
    if args.sample_every is None:
        args.sample_every = max(1, args.calls // 20)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    binary = None if args.no_code else find_binary(args.binary)
    if not args.no_code and binary is None:
        print(
            "soak: no CodeGraph binary (--binary, LWC_CODEGRAPH_BINARY); use --no-code",
            file=sys.stderr,
        )
        return 2

    def log(text: str) -> None:
        if not args.json:
            print(f"[soak] {text}", file=sys.stderr, flush=True)

    if args.source is not None:
        args.source = args.source.resolve()
        sys.path.insert(0, str(args.source))
    root = Path(tempfile.mkdtemp(prefix="lwc-soak-"))
    try:
        fixture = Fixture(root, binary, args.source)
        try:
            fixture.build(args.pages, args.seed, log)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            print(f"soak: set-up failed: {exc}", file=sys.stderr)
            return 2
        result = trio.run(soak_main, args, fixture, log)
    finally:
        if args.keep:
            print(f"soak: kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
