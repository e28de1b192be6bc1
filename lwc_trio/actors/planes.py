"""Plane workers: one actor per plane, its engine, its faults, and how a request asks it.

A request `ask()`s a plane by sending a `PlaneJob` into the worker's bounded mailbox: the
plane's query, the call's fault (drawn by the pipeline, in arrival order), a cancel scope
carrying the plane deadline the pipeline set, and a one-shot reply channel. The worker
serves each job in its own task inside that scope; every job takes this route, idle server
or not, faults or not. If the worker dies (a `crash` fault, or its engine blowing up), its
nursery cancels every job, each job's reply channel closes, and every waiting request
learns `<plane>_crashed` at once; the supervisor then starts a fresh worker on the same
mailbox.

Each plane also owns how it is asked (`PlaneClient`): its own argument rules and the query
it builds from validated arguments, so the explore pipeline knows plane names and
deadlines, never a plane's query fields.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Final, Generic, Literal, TypeAlias, TypeVar

import attrs
import trio

from lwc_trio.actors import channels
from lwc_trio.actors.lanes import open_lane
from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import ArgumentError, WorkerCrashed
from lwc_trio.faults import Fault
from lwc_trio.protocol.arguments import ExploreArgs
from lwc_trio.protocol.explore_result import check_plane, fault_code, plane_error
from lwc_trio.protocol.session import JSON

if TYPE_CHECKING:
    from lwc_trio.codegraph.plane import CodePlane, CodePlaneConfig, CodeQuery
    from lwc_trio.memory.query.engine import MemoryQuery

log = logging.getLogger("lwc.planes")

PlaneName = Literal["memory", "code"]
PlaneObject: TypeAlias = dict[str, JSON]
"""A plane's SPEC §2.1 object (`memory` or `codeGraph`): `{"state": ...}` and its fields."""

Q = TypeVar("Q")
"""A plane's query: `MemoryQuery` or `CodeQuery`."""
Engine: TypeAlias = Callable[[Q], Awaitable[PlaneObject]]
EngineFactory: TypeAlias = Callable[[], AbstractAsyncContextManager[Engine[Q]]]
"""() -> an async context manager yielding the plane's engine (a test may inject a fake)."""

MAILBOX_SIZE: Final = 64
"""Jobs waiting for a worker; senders block beyond this. A worker takes every job at once
(each in its own task), so a job waits here only while its worker restarts; the memory
plane's jobs then wait on its lane (`memory_engine`)."""
MEMORY_THREADS: Final = 4
"""The memory lane's SQLite reader threads for any store (each keeps its own pooled
connections). More threads than cores only add GIL contention and page caches: the soak
showed RSS and throughput both worse with 8 on a 2-core machine."""
MEMORY_SPARE: Final = 2
"""Threads beyond `MEMORY_THREADS`, each only for a search of a store none of whose
searches is running (`lanes`: spare threads): when slow searches of one large store take
every thread, a search of another store still starts within `MEMORY_GROW_AFTER` instead of
waiting for one of them (issue 36: a one-Page store's call waited 5.1 s behind 32 typo
calls on a large one)."""
MEMORY_QUEUE: Final = MAILBOX_SIZE
"""Memory searches waiting for a lane thread beyond the running ones: the one bound on the
memory plane's work (more than every in-flight call of a transport: `config.max_in_flight`)."""
MEMORY_GROW_AFTER: Final = 0.03
"""A search waits this long behind busy reader threads, no search of its store starting
meanwhile, before another thread takes it. Short searches then run back to back on one
thread (a 200-call burst took about a third less time and 40 % less CPU than with four
threads taking turns at the GIL; see docs/benchmarks.md); a slow one (a large store, a
writer's lock) holds the next of its store up by no more than twice this (`lanes`)."""
MEMORY_REPLACE_AFTER: Final = 1.0
"""A search abandoned at its deadline normally stops within milliseconds (SQLite's progress
handler sees the flag); a thread still in it a second later is stuck (a store file swapped
for a FIFO, a hung mount) and is replaced so the plane keeps its capacity."""
CODE_FS_THREADS: Final = 2
"""Threads for the code plane's filesystem calls (as many as the authorizer's)."""
LATE_MARGIN: Final = 0.05
"""How long a request waits past the plane deadline for the worker's own
timeout answer before concluding the worker itself is stuck."""

GARBAGE: Final = {"state": "ready", "results": "\x00garbage"}
"""What a `garbage` fault makes a plane answer: the right state, a wrong shape."""


class InjectedFault(Exception):
    """An injected `raise`."""


@attrs.define(eq=False)
class PlaneJob(Generic[Q]):
    """One request for a plane: query, its fault, deadline scope and reply mailbox."""

    query: Q
    scope: trio.CancelScope
    reply: trio.MemorySendChannel[JSON]
    fault: Fault | None = None


@attrs.define(eq=False)
class PlaneWorker(Generic[Q]):
    """The actor serving one plane's mailbox until it is cancelled or crashes."""

    plane: PlaneName
    inbox: trio.MemoryReceiveChannel[PlaneJob[Q]]
    open_engine: EngineFactory[Q]

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve jobs concurrently; raises `WorkerCrashed` on an injected crash."""
        async with self.open_engine() as engine, trio.open_nursery() as nursery:
            task_status.started()
            while True:
                # The mailbox outlives this worker, so it is not closed here; jobs queued
                # behind a crash wait in it for the next worker. Jobs that arrived together
                # all start in this one turn (taken one by one, so none is taken past a crash).
                job: PlaneJob[Q] | None = await self.inbox.receive()
                while job is not None:
                    if job.fault is not None and job.fault.kind == "crash":
                        job.reply.close()
                        raise WorkerCrashed(f"{self.plane} worker crashed (injected fault)")
                    nursery.start_soon(self._serve, job, engine)
                    job = channels.receive_ready(self.inbox)

    async def _serve(self, job: PlaneJob[Q], engine: Engine[Q]) -> None:
        with job.reply:
            answer: JSON = None
            with job.scope:
                try:
                    answer = await self._answer(job, engine)
                except Exception as exc:
                    log.warning("%s plane failed: %r", self.plane, exc)
                    answer = plane_error(
                        fault_code(self.plane, "internal"),
                        f"{self.plane} plane failed: {type(exc).__name__}",
                    )
            if job.scope.cancelled_caught:
                answer = _timeout(self.plane)
            # The request may have given up first; then nobody is waiting.
            with contextlib.suppress(trio.BrokenResourceError, trio.WouldBlock):
                job.reply.send_nowait(answer)

    async def _answer(self, job: PlaneJob[Q], engine: Engine[Q]) -> JSON:
        fault = job.fault
        if fault is not None:
            if fault.kind == "hang":
                await trio.sleep_forever()
            elif fault.kind == "delay":
                await trio.sleep(fault.delay)
            elif fault.kind == "raise":
                raise InjectedFault(f"{self.plane} plane raised (injected fault)")
            elif fault.kind == "garbage":
                return dict(GARBAGE)
        return await engine(job.query)


def _timeout(plane: PlaneName) -> PlaneObject:
    return plane_error(fault_code(plane, "timeout"), f"{plane} plane did not answer in time")


def _crashed(plane: PlaneName) -> PlaneObject:
    return plane_error(fault_code(plane, "crashed"), f"{plane} plane worker crashed; restarted")


async def ask(
    mailbox: trio.MemorySendChannel[PlaneJob[Q]],
    plane: PlaneName,
    query: Q,
    scope: trio.CancelScope,
    fault: Fault | None = None,
) -> PlaneObject:
    """Run `query` on a plane inside `scope` (the deadline the pipeline set); always returns
    a plane object.

    Whatever goes wrong on the plane's side (timeout, crash, garbage, an exception) comes
    back as that plane's `state: error`; only this request's own cancellation propagates.
    """
    reply_send, reply_recv = trio.open_memory_channel[JSON](1)
    job = PlaneJob(query, scope, reply_send, fault)
    answer: JSON
    try:
        with reply_recv, trio.move_on_at(scope.deadline + LATE_MARGIN) as late:
            try:
                await channels.send(mailbox, job)
                answer = await reply_recv.receive()
            except (trio.BrokenResourceError, trio.EndOfChannel):
                answer = _crashed(plane)
        if late.cancelled_caught:
            answer = _timeout(plane)
    finally:
        # However this request ends, the job it started ends with it.
        scope.cancel()
    if not check_plane(plane, answer):
        return plane_error(
            fault_code(plane, "bad_response"), f"{plane} plane answered with a malformed result"
        )
    return dict(answer)


def store_key(query: MemoryQuery) -> Hashable:
    """The store a memory query reads, as far as it is known before a thread looks (the
    memory lane's fairness key): the global store, or the project store above its path
    (two paths into one project are two keys: a finer split, never a coarser one)."""
    return ("global",) if query.scope == "global" else ("project", query.project_path)


@asynccontextmanager
async def memory_engine(config: ServerConfig) -> AsyncIterator[Engine[MemoryQuery]]:
    """The memory plane: SQLite searches on the plane's own thread lane.

    The lane is the one bound SPEC §6 names (`MEMORY_THREADS` threads for any store,
    `MEMORY_SPARE` for stores with no search running, `MEMORY_QUEUE` waiting): a search
    waits in its queue, where the job's deadline drops it at no cost, and the lane picks
    the next one fairly across stores (`store_key`). A search running in a thread stops
    through SQLite's progress handler once its `cancelled` flag is set.
    """
    del config  # every setting a search needs travels in its query
    async with open_lane(
        "lwc-memory",
        MEMORY_THREADS,
        grow_after=MEMORY_GROW_AFTER,
        spare=MEMORY_SPARE,
        replace_after=MEMORY_REPLACE_AFTER,
        queue=MEMORY_QUEUE,
    ) as lane:

        async def run(query: MemoryQuery) -> PlaneObject:
            # Imported on first use, not at start-up: initialize is answered sooner.
            from lwc_trio.memory.query.engine import explore_memory

            cancelled = threading.Event()
            try:
                return await lane.run(
                    partial(explore_memory, query, cancelled=cancelled), key=store_key(query)
                )
            except trio.Cancelled:
                cancelled.set()  # the thread's SQLite progress handler sees this and stops
                raise

        yield run


@asynccontextmanager
async def open_code_plane_lane(config: CodePlaneConfig) -> AsyncIterator[CodePlane]:
    """The code plane with its own thread lane for its filesystem calls (the readiness
    check, the index lookup, the `/proc` scan: like the authorizer's checks, they can block
    on a dead mount). Its threads, like the authorizer's, take each call at once, and one
    stuck in a call abandoned at its deadline is replaced at once."""
    from lwc_trio.codegraph.plane import open_code_plane

    async with (
        open_lane("lwc-code", CODE_FS_THREADS, replace_after=0) as lane,
        open_code_plane(config, lane.run) as plane,
    ):
        yield plane


@asynccontextmanager
async def code_engine(config: ServerConfig) -> AsyncIterator[Engine[CodeQuery]]:
    """The code plane: the supervised CodeGraph child, started lazily."""
    from lwc_trio.codegraph.plane import CodePlaneConfig

    code = CodePlaneConfig(call_timeout=config.code_timeout, env=config.env)
    async with open_code_plane_lane(code) as plane:
        yield plane.explore


# -- how the pipeline asks each plane ------------------------------------------------------


@attrs.frozen
class PlaneAnswer:
    """A plane's object and how long the plane took (whole milliseconds)."""

    body: PlaneObject
    ms: int


@attrs.frozen
class PlaneClient(Generic[Q]):
    """One plane as the explore pipeline sees it: mailbox, deadline, its own query."""

    name: PlaneName
    mailbox: trio.MemorySendChannel[PlaneJob[Q]] = attrs.field(hash=False)
    timeout: float
    check: Callable[[ExploreArgs], None]
    """The plane's own argument rules; raises `ArgumentError`."""
    build: Callable[[ExploreArgs, Path, ServerConfig], Q]
    """The plane's query from validated arguments and the authorized projectPath."""

    async def ask(
        self,
        args: ExploreArgs,
        project: Path,
        config: ServerConfig,
        deadline: trio.CancelScope,
        fault: Fault | None,
    ) -> PlaneAnswer:
        """Run the plane inside `deadline` (the pipeline's scope); always answers."""
        query = self.build(args, project, config)
        started = trio.current_time()
        body = await ask(self.mailbox, self.name, query, deadline, fault)
        return PlaneAnswer(body, round((trio.current_time() - started) * 1000))


def check_memory_arguments(args: ExploreArgs) -> None:
    """SPEC §2: more than 64 search terms is `invalid_query` when memory is asked."""
    from lwc_trio.memory.text.tokenize import MAX_TERMS, surely_within_term_limit, tokenize

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


def memory_query(args: ExploreArgs, project: Path, config: ServerConfig) -> MemoryQuery:
    """The memory plane's `MemoryQuery`, waiting for a writer's lock for `BUSY_SHARE` of
    the memory deadline, and sharing the deadline among its stores."""
    from lwc_trio.memory.query.engine import BUSY_SHARE, MemoryQuery

    now = time.monotonic()
    return MemoryQuery(
        query=args.query,
        project_path=project,
        workspace=config.workspace,
        home=config.home,
        scope=args.scope,
        allowed_scopes=config.allowed_scopes,
        max_documents=args.maxDocuments,
        max_tokens=args.maxTokens,
        busy_until=now + BUSY_SHARE * config.memory_timeout,
        deadline=now + config.memory_timeout,
    )


def _no_rules(_: ExploreArgs) -> None:
    return None


def code_query(args: ExploreArgs, project: Path, config: ServerConfig) -> CodeQuery:
    """The code plane's `CodeQuery`."""
    from lwc_trio.codegraph.plane import CodeQuery

    return CodeQuery(
        query=args.query,
        project_path=project,
        workspace=config.workspace,
        max_files=args.maxFiles,
        max_tokens=args.maxTokens,
    )


@attrs.frozen
class Planes:
    """Both planes' clients, looked up by plane name with their query types."""

    memory: PlaneClient[MemoryQuery]
    code: PlaneClient[CodeQuery]

    def __getitem__(self, name: PlaneName) -> PlaneClient[MemoryQuery] | PlaneClient[CodeQuery]:
        return self.memory if name == "memory" else self.code


def plane_clients(
    config: ServerConfig,
    memory: trio.MemorySendChannel[PlaneJob[MemoryQuery]],
    code: trio.MemorySendChannel[PlaneJob[CodeQuery]],
) -> Planes:
    """Both planes, with the deadlines from the configuration."""
    return Planes(
        PlaneClient("memory", memory, config.memory_timeout, check_memory_arguments, memory_query),
        PlaneClient("code", code, config.code_timeout, _no_rules, code_query),
    )
