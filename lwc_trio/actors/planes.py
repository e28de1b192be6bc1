"""Plane workers: one actor per plane, its engine, faults, and the ask() side.

A request task `ask()`s a plane by sending a `PlaneJob` into the worker's
mailbox together with a one-shot reply channel and a cancel scope carrying the
plane deadline. The worker serves each job in its own task inside that scope.
If the worker dies (a `crash` fault, or its engine blowing up), its nursery
cancels every job, each job's reply channel closes, and every waiting request
learns `<plane>_crashed` at once; the supervisor then starts a fresh worker on
the same mailbox. While the worker is idle and no fault is scripted for its plane,
a request runs its job in its own task instead, under the same scope and rules
(`PlaneWorker.serve_here`), and still learns `<plane>_crashed` if the worker stops.

Each plane also owns how it is asked (`PlaneClient`): its own argument rules and
the query it builds from validated arguments, so the explore pipeline knows
plane names and deadlines, never a plane's query fields.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal

import attrs
import trio

from lwc_trio.actors.lanes import LaneCall, open_lane
from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import ArgumentError, PathRuleError, WorkerCrashed
from lwc_trio.faults import Fault, FaultPlan
from lwc_trio.protocol.arguments import ExploreArgs
from lwc_trio.protocol.explore_result import check_plane, fault_code, plane_error

log = logging.getLogger("lwc.planes")

PlaneName = Literal["memory", "code"]
PlaneObject = dict[str, Any]
"""A plane's SPEC §2.1 object (`memory` or `codeGraph`): `{"state": ...}` and its fields."""

Engine = Callable[[Any], Awaitable[PlaneObject]]
EngineFactory = Callable[[], Any]  # () -> async context manager yielding an Engine

MAILBOX_SIZE: Final = 64
"""Jobs waiting for a worker; senders block beyond this."""
MEMORY_THREADS: Final = 4
"""The memory lane's SQLite reader threads at most (each keeps its own pooled connections).
More threads than cores only add GIL contention and page caches: the soak showed RSS and
throughput both worse with 8 on a 2-core machine."""
MEMORY_GROW_AFTER: Final = 0.01
"""A search waits this long behind a busy reader thread before another thread takes it.
Short searches then run back to back on one thread (a 200-call burst took about a third
less time and 40 % less CPU than with four threads taking turns at the GIL; see
docs/benchmarks.md); a slow one (a large store, a writer's lock) holds the next up by no
more than this. At 2 ms, searches slowed by a busy event loop already waited long enough to
bring in more threads, and the gain was gone."""
MEMORY_REPLACE_AFTER: Final = 1.0
"""A search abandoned at its deadline normally stops within milliseconds (SQLite's progress
handler sees the flag); a thread still in it a second later is stuck (a store file swapped
for a FIFO, a hung mount) and is replaced so the plane keeps its capacity."""
CHECK_POLL: Final = 0.1
"""How often a `CheckedQuery` still waiting for a lane thread (the memory plane is busy) looks
whether its check has started: its 2 s then runs from the start, give or take this much.
A call that gets a thread at once never looks."""
LATE_MARGIN: Final = 0.05
"""How long a request waits past the plane deadline for the worker's own
timeout answer before concluding the worker itself is stuck."""

GARBAGE: Final = {"state": "ready", "results": "\x00garbage"}
"""What a `garbage` fault makes a plane answer: the right state, a wrong shape."""


class InjectedFault(Exception):
    """An injected `raise`."""


@attrs.define(eq=False)
class PlaneJob:
    """One request for a plane: payload, deadline scope and reply mailbox."""

    payload: Any
    scope: trio.CancelScope
    reply: trio.MemorySendChannel[Any]


@attrs.define(eq=False)
class PlaneWorker:
    """The actor serving one plane's mailbox until it is cancelled or crashes.

    While it runs with no fault scripted for its plane, a request finding the mailbox empty
    serves its job in its own task (`serve_here`) instead of queueing it: the same engine,
    deadline and answers, without the two task switches and the reply channel of the
    mailbox round trip. Such jobs are tied to this worker all the same: when it stops, each
    one still running learns `<plane>_crashed`, as a queued job would.
    """

    plane: PlaneName
    inbox: trio.MemoryReceiveChannel[PlaneJob]
    faults: FaultPlan
    open_engine: EngineFactory
    _engine: Engine | None = None
    """The engine while `run()` serves it."""
    _here: set[_HereJob] = attrs.field(factory=set)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve jobs concurrently; raises `WorkerCrashed` on an injected crash."""
        async with self.open_engine() as engine, trio.open_nursery() as nursery:
            self._engine = engine
            try:
                task_status.started()
                while True:
                    # The mailbox outlives this worker, so it is not closed here.
                    job = await self.inbox.receive()
                    fault = self.faults.next(self.plane)
                    if fault is not None and fault.kind == "crash":
                        await job.reply.aclose()
                        raise WorkerCrashed(f"{self.plane} worker crashed (injected fault)")
                    nursery.start_soon(self._serve, job, engine, fault)
            finally:
                self._engine = None
                for here in self._here:
                    here.crashed = True
                    here.scope.cancel()

    def can_serve_here(self) -> bool:
        """Whether a request may serve its job itself now: the engine is up, no fault can
        come (faults keep their order in the mailbox) and no job waits ahead of it."""
        return (
            self._engine is not None
            and not self.inbox.statistics().current_buffer_used
            and not self.faults.scripted(self.plane)
        )

    async def serve_here(self, payload: Any, deadline: float) -> Any:
        """Run `payload` in the calling task until `deadline`, answering as `_serve` would;
        only after `can_serve_here()`."""
        assert self._engine is not None
        here = _HereJob(trio.CancelScope(deadline=deadline))
        self._here.add(here)
        try:
            answer = await self._outcome(payload, here.scope, self._engine, None)
        finally:
            self._here.discard(here)
        return _crashed(self.plane) if here.crashed else answer

    async def _serve(self, job: PlaneJob, engine: Engine, fault: Fault | None) -> None:
        async with job.reply:
            answer = await self._outcome(job.payload, job.scope, engine, fault)
            # The request may have given up first; then nobody is waiting.
            with contextlib.suppress(trio.BrokenResourceError, trio.WouldBlock):
                job.reply.send_nowait(answer)

    async def _outcome(
        self, payload: Any, scope: trio.CancelScope, engine: Engine, fault: Fault | None
    ) -> Any:
        answer: Any = None
        checked = _Found()
        with scope:
            try:
                if isinstance(payload, CheckedQuery) and fault is not None:
                    answer = await self._checked_fault(payload, scope, engine, fault, checked)
                else:
                    answer = await self._answer(payload, engine, fault)
            except Exception as exc:
                log.warning("%s plane failed: %r", self.plane, exc)
                answer = plane_error(
                    fault_code(self.plane, "internal"),
                    f"{self.plane} plane failed: {type(exc).__name__}",
                )
        if scope.cancelled_caught:
            answer = _timeout(self.plane)
        if checked.project is not None and not isinstance(answer, Checked):
            answer = Checked(checked.project, answer)  # the path passed; the search did not
        return answer

    async def _checked_fault(
        self,
        query: CheckedQuery,
        scope: trio.CancelScope,
        engine: Engine,
        fault: Fault,
        checked: _Found,
    ) -> Any:
        """A `CheckedQuery` with a fault scripted for its search: the same path check on the
        same lane (a job of its own), then the fault where the search would start, then the
        search under the deadline it has without a fault (`memory_timeout` from the check's
        end)."""
        first = await engine(attrs.evolve(query, search=False))
        if not isinstance(first, Checked):
            return first  # refused, or no thread in time: what the fused job would answer
        checked.project = first.project
        scope.deadline = trio.current_time() + query.memory_timeout
        return await self._answer(query.build(first.project), engine, fault)

    async def _answer(self, payload: Any, engine: Engine, fault: Fault | None) -> Any:
        if fault is not None:
            if fault.kind == "hang":
                await trio.sleep_forever()
            elif fault.kind == "delay":
                await trio.sleep(fault.delay)
            elif fault.kind == "raise":
                raise InjectedFault(f"{self.plane} plane raised (injected fault)")
            elif fault.kind == "garbage":
                return dict(GARBAGE)
        return await engine(payload)


def _timeout(plane: str) -> dict[str, Any]:
    return plane_error(fault_code(plane, "timeout"), f"{plane} plane did not answer in time")


async def ask(
    mailbox: trio.MemorySendChannel[PlaneJob],
    plane: PlaneName,
    payload: Any,
    deadline: float,
    worker: PlaneWorker | None = None,
) -> PlaneObject:
    """Run `payload` on a plane until `deadline` (trio time); always returns a plane object.

    Whatever goes wrong on the plane's side (timeout, crash, garbage, an
    exception) comes back as that plane's `state: error`; only this request's
    own cancellation propagates. `worker`: the worker serving `mailbox`, when the
    request may serve its job itself (see `PlaneWorker`).
    """
    return checked_object(plane, await ask_raw(mailbox, plane, payload, deadline, worker))


def checked_object(plane: PlaneName, answer: Any) -> PlaneObject:
    """`answer` when it has the SPEC §2.1 shape for `plane`, else `<plane>_bad_response`."""
    if not check_plane(plane, answer):
        return plane_error(
            fault_code(plane, "bad_response"),
            f"{plane} plane answered with a malformed result",
        )
    return dict(answer)


async def ask_raw(
    mailbox: trio.MemorySendChannel[PlaneJob],
    plane: PlaneName,
    payload: Any,
    deadline: float,
    worker: PlaneWorker | None = None,
) -> Any:
    """`ask()` without the shape check: the worker's answer as it came, or a plane error
    object for a timeout or a crash."""
    if worker is not None and worker.can_serve_here():
        return await worker.serve_here(payload, deadline)
    reply_send, reply_recv = trio.open_memory_channel[Any](1)
    job = PlaneJob(payload, trio.CancelScope(deadline=deadline), reply_send)
    try:
        async with reply_recv:
            with trio.move_on_at(deadline + LATE_MARGIN):
                try:
                    await mailbox.send(job)
                except trio.BrokenResourceError:
                    return _crashed(plane)
                try:
                    return await reply_recv.receive()
                except trio.EndOfChannel:
                    return _crashed(plane)
            return _timeout(plane)
    finally:
        # However this request ends, the job it started ends with it.
        job.scope.cancel()


def _crashed(plane: str) -> dict[str, Any]:
    return plane_error(fault_code(plane, "crashed"), f"{plane} plane worker crashed; restarted")


@attrs.frozen
class CheckedQuery:
    """A memory search whose projectPath is not checked yet (mode `memory`, real engine).

    The only way mode `memory` reaches the real engine, with or without `LWC_FAULTS`: an
    `auth=` fault is in `check` (or, for `delay:S`, already waited out), and a memory fault
    is applied by the worker between the check and the search (`_checked_fault`).

    The memory engine runs the path check (SPEC §3) and the search as one job on one
    lane thread: one hand-off to a thread and one back per call instead of two of each,
    which cost more than the check itself (docs/benchmarks.md). Both deadlines still
    hold: the check gets `auth_timeout` from the moment the job is queued; the search
    gets `memory_timeout` from the moment the check ended.
    """

    raw: str
    check: Callable[[str], Path]
    """The path rules, bound to the workspace: raises `PathRuleError`."""
    build: Callable[[Path], Any]
    """The `MemoryQuery` for the canonical project directory."""
    auth_timeout: float
    memory_timeout: float
    search: bool = True
    """False: the path check alone (its answer is `Checked` with no body)."""


@attrs.define(eq=False)
class _HereJob:
    """A job a request serves itself (`PlaneWorker.serve_here`)."""

    scope: trio.CancelScope
    crashed: bool = False
    """Its worker stopped while it ran."""


@attrs.define(eq=False)
class _Found:
    """The project a `CheckedQuery`'s check found, once it has passed."""

    project: Path | None = None


@attrs.frozen
class Checked:
    """What a `CheckedQuery` found: the canonical projectPath and the memory object."""

    project: Path
    body: Any


@attrs.frozen
class PathRefused:
    """A `CheckedQuery` whose path check failed (`error`), or did not end in time (None)."""

    error: PathRuleError | None


@attrs.define(eq=False)
class _CheckClock:
    """When the job of a `CheckedQuery` started and its check ended (`time.perf_counter()`,
    written in the lane thread, read in the trio thread: only their difference is used)."""

    started: float | None = None
    ended: float | None = None


def _checked_search(
    query: CheckedQuery, clock: _CheckClock, cancelled: threading.Event
) -> Checked | PathRefused:
    """The lane thread's job for a `CheckedQuery`: the path rules, then the search."""
    from lwc_trio.memory.engine import explore_memory

    clock.started = time.perf_counter()
    try:
        project = query.check(query.raw)
    except PathRuleError as exc:
        return PathRefused(exc)
    except Exception:
        log.exception("path check failed")
        return PathRefused(
            PathRuleError("invalid_project_path", "projectPath could not be checked")
        )
    clock.ended = time.perf_counter()
    if not query.search:
        return Checked(project, None)
    return Checked(project, explore_memory(query.build(project), cancelled=cancelled))


@asynccontextmanager
async def memory_engine(config: Any) -> AsyncIterator[Engine]:
    """The memory plane: SQLite searches on the plane's own thread lane.

    The capacity limiter is the bound SPEC §6 names: searches beyond it wait here, in
    trio, where a deadline or a cancellation drops them at no cost.
    """
    limiter = trio.CapacityLimiter(MEMORY_THREADS)
    async with open_lane(
        "lwc-memory",
        MEMORY_THREADS,
        grow_after=MEMORY_GROW_AFTER,
        replace_after=MEMORY_REPLACE_AFTER,
        queue=MAILBOX_SIZE,
    ) as lane:

        async def run(query: Any) -> Any:
            if isinstance(query, CheckedQuery):
                return await run_checked(query)
            # Imported on first use, not at start-up: initialize is answered sooner.
            from lwc_trio.memory.engine import explore_memory

            cancelled = threading.Event()
            try:
                async with limiter:
                    result: dict[str, Any] = await lane.run(
                        partial(explore_memory, query, cancelled=cancelled)
                    )
            except trio.Cancelled:
                # The thread's SQLite progress handler sees this and stops.
                cancelled.set()
                raise
            return result

        async def run_checked(query: CheckedQuery) -> Checked | PathRefused | PlaneObject:
            # Each step keeps the deadline the two-step pipeline gives it: waiting for a
            # thread counts against the search's deadline (as it would behind the limiter),
            # the check gets `auth_timeout` from when it is seen started, and the search
            # `memory_timeout` from the queueing, not counting the check's own duration
            # (measured in the thread: a duration, never an instant, so it holds under a
            # virtual clock too).
            cancelled = threading.Event()
            clock = _CheckClock()
            queued = trio.current_time()
            call: LaneCall[Checked | PathRefused] | None = None
            acquired = False
            try:
                with contextlib.suppress(trio.WouldBlock):
                    limiter.acquire_nowait()  # the usual case: no cancel scope to set up
                    acquired = True
                if acquired and lane.has_room:
                    call = await lane.start(_checked_search, query, clock, cancelled)
                else:
                    with trio.move_on_at(queued + query.memory_timeout):
                        if not acquired:
                            await limiter.acquire()
                            acquired = True
                        call = await lane.start(_checked_search, query, clock, cancelled)
                if call is None:
                    return _timeout("memory")
                try:
                    seen: float | None = None  # first seen started (no wake-up says when)
                    while True:
                        now = trio.current_time()
                        if seen is None and clock.started is not None:
                            seen = now
                        ended = clock.ended
                        if seen is None:
                            # Look again soon, so a check that starts late still ends on time.
                            poll = min(query.auth_timeout, CHECK_POLL)
                            at = min(queued + query.memory_timeout, now + poll)
                        elif ended is None:
                            at = seen + query.auth_timeout
                        else:
                            checking = ended - (clock.started or ended)
                            at = queued + checking + query.memory_timeout
                        if await call.wait_until(at):
                            return call.result()
                        if seen is None:
                            if clock.started is not None or trio.current_time() < at:
                                continue  # it started meanwhile: its check deadline applies
                            if at < queued + query.memory_timeout:
                                continue
                        elif ended is None:
                            if clock.ended is not None:
                                continue  # the check ended meanwhile: the search's deadline
                            # A thread still in the check at its deadline is stuck: replace
                            # it now, as the authorizer does (SPEC §3).
                            call.abandon(replace_after=0)
                            return PathRefused(None)
                        cancelled.set()
                        call.abandon()
                        return _timeout("memory")
                except BaseException:
                    cancelled.set()
                    call.abandon()
                    raise
            finally:
                if acquired:
                    limiter.release()

        yield run


@asynccontextmanager
async def code_engine(config: Any) -> AsyncIterator[Engine]:
    """The code plane: the supervised CodeGraph child, started lazily."""
    from lwc_trio.codegraph.plane import CodePlaneConfig, open_code_plane

    async with open_code_plane(
        CodePlaneConfig(call_timeout=config.code_timeout, env=config.env)
    ) as plane:
        yield plane.explore


# -- how the pipeline asks each plane ------------------------------------------------------


@attrs.frozen
class PlaneAnswer:
    """A plane's object and how long the plane took (whole milliseconds)."""

    body: PlaneObject
    ms: int


@attrs.frozen
class PlaneClient:
    """One plane as the explore pipeline sees it: mailbox, deadline, its own query."""

    name: PlaneName
    mailbox: trio.MemorySendChannel[PlaneJob] = attrs.field(hash=False)
    timeout: float
    check: Callable[[ExploreArgs], None]
    """The plane's own argument rules; raises `ArgumentError`."""
    build: Callable[[ExploreArgs, Path, ServerConfig], Any]
    """The plane's query from validated arguments and the authorized projectPath."""
    worker: PlaneWorker | None = attrs.field(default=None, hash=False)
    """The worker serving `mailbox`: when it is idle, a request serves its job itself."""

    async def ask(self, args: ExploreArgs, project: Path, config: ServerConfig) -> PlaneAnswer:
        """Run the plane under its own deadline; always answers (see `ask`)."""
        payload = self.build(args, project, config)
        started = trio.current_time()
        body = await ask(self.mailbox, self.name, payload, started + self.timeout, self.worker)
        return PlaneAnswer(body, round((trio.current_time() - started) * 1000))

    async def ask_checked(
        self,
        args: ExploreArgs,
        raw: str,
        config: ServerConfig,
        check: Callable[[str], Path],
        auth_timeout: float,
    ) -> tuple[Checked | PathRefused | PlaneObject, int]:
        """Send a `CheckedQuery` (the memory plane's real engine only); the answer and ms.

        `auth_timeout` is what is left of the check's deadline. The plane's own outer
        deadline covers both steps; the engine (or, with a fault, the worker) applies each.
        """
        query = CheckedQuery(
            raw,
            check,
            lambda project: self.build(args, project, config),
            auth_timeout,
            self.timeout,
        )
        started = trio.current_time()
        deadline = started + auth_timeout + self.timeout
        answer = await ask_raw(self.mailbox, self.name, query, deadline, self.worker)
        return answer, round((trio.current_time() - started) * 1000)


def check_memory_arguments(args: ExploreArgs) -> None:
    """SPEC §2: more than 64 search terms is `invalid_query` when memory is asked."""
    from lwc_trio.memory.tokenize import MAX_TERMS, surely_within_term_limit, tokenize

    query = args.query
    if surely_within_term_limit(query):
        return  # the common case, without the stemmer
    terms = len(tokenize(query))
    if terms > MAX_TERMS:
        raise ArgumentError(
            "invalid_query",
            f"$.query has {terms} search terms; at most {MAX_TERMS} are allowed",
            "query",
        )


def memory_query(args: ExploreArgs, project: Path, config: ServerConfig) -> Any:
    """The memory plane's `MemoryQuery`."""
    from lwc_trio.memory.engine import MemoryQuery

    return MemoryQuery(
        query=args.query,
        project_path=project,
        workspace=config.workspace,
        home=config.home,
        scope=args.scope,
        allowed_scopes=config.allowed_scopes,
        max_documents=args.maxDocuments,
        max_tokens=args.maxTokens,
    )


def _no_rules(_: ExploreArgs) -> None:
    return None


def code_query(args: ExploreArgs, project: Path, config: ServerConfig) -> Any:
    """The code plane's `CodeQuery`."""
    from lwc_trio.codegraph.plane import CodeQuery

    return CodeQuery(
        query=args.query,
        project_path=project,
        workspace=config.workspace,
        max_files=args.maxFiles,
        max_tokens=args.maxTokens,
    )


def plane_clients(
    config: ServerConfig,
    memory: trio.MemorySendChannel[PlaneJob],
    code: trio.MemorySendChannel[PlaneJob],
    workers: Mapping[PlaneName, PlaneWorker] | None = None,
) -> dict[PlaneName, PlaneClient]:
    """Both planes, with the deadlines from the configuration (and `workers`, the workers
    serving the mailboxes, so a request may serve its job itself; see `PlaneWorker`)."""
    workers = workers or {}
    return {
        "memory": PlaneClient(
            "memory",
            memory,
            config.memory_timeout,
            check_memory_arguments,
            memory_query,
            workers.get("memory"),
        ),
        "code": PlaneClient(
            "code", code, config.code_timeout, _no_rules, code_query, workers.get("code")
        ),
    }
