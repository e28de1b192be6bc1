"""Plane workers on a virtual clock: every job goes through the mailbox to the worker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from lwc_trio.actors.planes import MAILBOX_SIZE, PlaneJob, PlaneWorker, ask
from lwc_trio.exceptions import WorkerCrashed
from lwc_trio.faults import Fault

READY = {"state": "ready", "stores": [], "results": [], "pages": [], "graph": []}


class Engine:
    """A fake memory engine (fault injection stand-in): waits `delay`, then answers or raises,
    and records the task each job ran in."""

    def __init__(self, delay: float = 0.0, error: Exception | None = None) -> None:
        self.delay = delay
        self.error = error
        self.tasks: list[trio.lowlevel.Task] = []
        self.cancelled = 0

    @asynccontextmanager
    async def factory(self) -> AsyncIterator[Callable[[Any], Awaitable[dict[str, Any]]]]:
        async def run(_query: Any) -> dict[str, Any]:
            self.tasks.append(trio.lowlevel.current_task())
            try:
                await trio.sleep(self.delay)
            except trio.Cancelled:
                self.cancelled += 1
                raise
            if self.error is not None:
                raise self.error
            return dict(READY)

        yield run


@asynccontextmanager
async def worker_for(engine: Engine) -> AsyncIterator[tuple[Any, PlaneWorker[Any]]]:
    send, recv = trio.open_memory_channel[PlaneJob[Any]](MAILBOX_SIZE)
    worker = PlaneWorker("memory", recv, engine.factory)
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.run)
        yield send, worker
        nursery.cancel_scope.cancel()


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


def within(seconds: float) -> trio.CancelScope:
    """The plane deadline the pipeline sets: `seconds` from now."""
    return trio.CancelScope(deadline=trio.current_time() + seconds)


async def test_an_idle_worker_serves_the_job_in_its_own_task(
    clock: trio.testing.MockClock,
) -> None:
    """Nothing queued, no fault: the job still goes through the mailbox to the worker."""
    engine = Engine(delay=1.0)
    async with worker_for(engine) as (mailbox, _):
        answer = await ask(mailbox, "memory", "q", within(5))
    assert answer == READY
    assert len(engine.tasks) == 1
    assert engine.tasks[0] is not trio.lowlevel.current_task()
    assert trio.current_time() == 1.0


async def test_a_job_keeps_the_pipelines_deadline(clock: trio.testing.MockClock) -> None:
    """A job that outlasts the plane deadline answers `memory_timeout` at the deadline, and
    the engine is cancelled there."""
    engine = Engine(delay=60.0)
    async with worker_for(engine) as (mailbox, _):
        answer = await ask(mailbox, "memory", "q", within(5))
    assert answer["error"]["code"] == "memory_timeout"
    assert trio.current_time() == 5.0
    assert engine.cancelled == 1


async def test_an_engine_error_is_memory_internal(clock: trio.testing.MockClock) -> None:
    """An engine blowing up on the worker is the plane's error, not the request's."""
    engine = Engine(error=RuntimeError("boom"))
    async with worker_for(engine) as (mailbox, _):
        answer = await ask(mailbox, "memory", "q", within(5))
    assert answer["error"]["code"] == "memory_internal"


async def test_a_worker_stopping_answers_its_jobs_crashed(
    clock: trio.testing.MockClock,
) -> None:
    """When the worker stops, a job it runs learns `memory_crashed` at once."""
    engine = Engine(delay=60.0)
    answers: list[tuple[float, dict[str, Any]]] = []
    send, recv = trio.open_memory_channel[PlaneJob[Any]](MAILBOX_SIZE)
    worker = PlaneWorker("memory", recv, engine.factory)

    async def request() -> None:
        answer = await ask(send, "memory", "q", within(5))
        answers.append((trio.current_time(), answer))

    async with trio.open_nursery() as outer, trio.open_nursery() as workers:
        await workers.start(worker.run)
        outer.start_soon(request)
        await trio.sleep(1)
        assert len(engine.tasks) == 1
        workers.cancel_scope.cancel()
    assert [(at, a["error"]["code"]) for at, a in answers] == [(1.0, "memory_crashed")]


async def test_a_request_that_goes_away_takes_its_job_with_it(
    clock: trio.testing.MockClock,
) -> None:
    """A cancelled request (`notifications/cancelled`, a closed connection) cancels the job
    on the worker: the engine stops at once."""
    engine = Engine(delay=60.0)
    async with worker_for(engine) as (mailbox, _):
        with trio.move_on_after(1):
            await ask(mailbox, "memory", "q", within(5))
        await trio.testing.wait_all_tasks_blocked()
        assert engine.cancelled == 1
    assert trio.current_time() == 1.0


async def test_each_job_meets_the_fault_drawn_for_it(clock: trio.testing.MockClock) -> None:
    """Faults travel with their job: a `raise` answers `memory_internal`, `garbage` the
    plane's `bad_response`, `delay:S` the normal answer S seconds later, `hang` the timeout
    at the deadline; the next job without a fault is normal."""
    engine = Engine()
    codes = []
    async with worker_for(engine) as (mailbox, _):
        for fault in (Fault("raise"), Fault("garbage"), Fault("hang"), None):
            answer = await ask(mailbox, "memory", "q", within(5), fault)
            codes.append(answer.get("error", {}).get("code"))
        started = trio.current_time()
        assert await ask(mailbox, "memory", "q", within(5), Fault("delay", 2.0)) == READY
        assert trio.current_time() - started == 2.0
    assert codes == ["memory_internal", "memory_bad_response", "memory_timeout", None]


async def test_a_crash_fault_kills_the_worker_and_answers_crashed(
    clock: trio.testing.MockClock,
) -> None:
    """A job carrying `crash` takes its worker down (`WorkerCrashed`) and answers
    `memory_crashed`; a job queued behind it waits in the mailbox for the next worker."""
    engine = Engine()
    send, recv = trio.open_memory_channel[PlaneJob[Any]](MAILBOX_SIZE)
    worker = PlaneWorker("memory", recv, engine.factory)
    answers: dict[str, dict[str, Any]] = {}

    async def request(name: str, fault: Fault | None) -> None:
        answers[name] = await ask(send, "memory", "q", within(5), fault)

    async with trio.open_nursery() as outer:
        outer.start_soon(request, "crash", Fault("crash"))
        await trio.testing.wait_all_tasks_blocked()
        outer.start_soon(request, "behind", None)
        await trio.testing.wait_all_tasks_blocked()
        crashed = False
        try:
            await worker.run()
        except* WorkerCrashed:
            crashed = True
        assert crashed
        await trio.testing.wait_all_tasks_blocked()
        assert answers["crash"]["error"]["code"] == "memory_crashed"
        assert "behind" not in answers
        async with trio.open_nursery() as workers:
            await workers.start(worker.run)
            await trio.testing.wait_all_tasks_blocked()
            workers.cancel_scope.cancel()
    assert answers["behind"] == READY
