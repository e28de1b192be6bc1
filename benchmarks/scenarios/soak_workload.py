"""The soak's workload: a seeded mix of requests, bursts, cancellations and live writes."""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from typing import Any, Final

import trio

from benchmarks import procstats
from benchmarks.fixtures import CODE_QUERIES, LIVE_PAGES, WORDS, Fixture, Log
from benchmarks.http import HttpServer
from benchmarks.messages import INITIALIZED, initialize, key_of, oversize_line, ping, tool_call
from benchmarks.scenarios.soak_checks import Checker, invalid_cases
from benchmarks.stdio import RESPONSE_TIMEOUT, StdioClient

BURST: Final = 50


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
        self.client: StdioClient | HttpServer

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
        if isinstance(self.client, HttpServer):
            response, took = await self.client.oversize(rid, self.ws)
        else:
            response, took = await self.client.request_raw(rid, oversize_line(rid, self.ws))
        self._record("oversize", took)
        if isinstance(self.client, HttpServer):
            if response.get("_status") != 413:
                self.checker.fail(f"oversize {rid!r}: HTTP {response.get('_status')} != 413")
            return
        self.checker.rpc_error(rid, response, -32600, "frame_too_large")

    async def cancelled_call(self, mode: str) -> None:
        """Send a call and cancel it at once; its answer, if any, is checked at the end."""
        args = self.explore_args(mode)
        rid = self.new_id()
        self.cancel_sent[key_of(rid)] = (args, self.committed, self.in_burst)
        if isinstance(self.client, HttpServer):
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
        if isinstance(self.client, HttpServer):
            self.client.retry_busy = True
        try:
            await self._burst(memory_only)
        finally:
            self.in_burst = False
            if isinstance(self.client, HttpServer):
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
        self.samples.append(procstats.sample(self.client.pid, self.calls, self.started))

    async def run(self, nursery: trio.Nursery, log: Log | None) -> None:
        a = self.args
        self.started = time.perf_counter()
        response, _ = await self.client.request(initialize(0, "lwc-soak"))
        if "result" not in response:
            raise RuntimeError(f"initialize failed: {response}")
        if isinstance(self.client, StdioClient):
            await self.client.send(INITIALIZED)
        self.samples.append(procstats.sample(self.client.pid, 0, self.started))
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
