"""Plane workers on a virtual clock: a request serves its own job while the worker is idle."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from lwc_trio.actors.planes import MAILBOX_SIZE, PlaneJob, PlaneWorker, ask
from lwc_trio.faults import FaultPlan

READY = {"state": "ready", "stores": [], "results": [], "pages": [], "graph": []}


class Engine:
    """A fake memory engine (fault injection stand-in): waits `delay`, then answers or raises,
    and records the task each job ran in."""

    def __init__(self, delay: float = 0.0, error: Exception | None = None) -> None:
        self.delay = delay
        self.error = error
        self.tasks: list[trio.lowlevel.Task] = []

    @asynccontextmanager
    async def factory(self) -> AsyncIterator[Callable[[Any], Awaitable[dict[str, Any]]]]:
        async def run(_query: Any) -> dict[str, Any]:
            self.tasks.append(trio.lowlevel.current_task())
            await trio.sleep(self.delay)
            if self.error is not None:
                raise self.error
            return dict(READY)

        yield run


@asynccontextmanager
async def worker_for(engine: Engine, faults: str = "") -> AsyncIterator[tuple[Any, PlaneWorker]]:
    send, recv = trio.open_memory_channel[PlaneJob](MAILBOX_SIZE)
    worker = PlaneWorker("memory", recv, FaultPlan.from_env(faults), engine.factory)
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.run)
        yield send, worker
        nursery.cancel_scope.cancel()


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


async def test_an_idle_worker_lets_the_request_run_its_job(clock: trio.testing.MockClock) -> None:
    """No fault scripted, nothing queued: the job runs in the asking task, answered as usual."""
    engine = Engine(delay=1.0)
    async with worker_for(engine) as (mailbox, worker):
        answer = await ask(mailbox, "memory", "q", trio.current_time() + 5, worker)
    assert answer == READY
    assert engine.tasks == [trio.lowlevel.current_task()]
    assert trio.current_time() == 1.0


async def test_a_job_run_here_keeps_its_deadline(clock: trio.testing.MockClock) -> None:
    """A job that outlasts the plane deadline answers `memory_timeout` at the deadline."""
    engine = Engine(delay=60.0)
    async with worker_for(engine) as (mailbox, worker):
        answer = await ask(mailbox, "memory", "q", trio.current_time() + 5, worker)
    assert answer["error"]["code"] == "memory_timeout"
    assert trio.current_time() == 5.0


async def test_an_engine_error_run_here_is_memory_internal(clock: trio.testing.MockClock) -> None:
    """An engine blowing up in the asking task is the plane's error, not the request's."""
    engine = Engine(error=RuntimeError("boom"))
    async with worker_for(engine) as (mailbox, worker):
        answer = await ask(mailbox, "memory", "q", trio.current_time() + 5, worker)
    assert answer["error"]["code"] == "memory_internal"
    assert engine.tasks == [trio.lowlevel.current_task()]


async def test_a_worker_stopping_answers_jobs_run_here_crashed(
    clock: trio.testing.MockClock,
) -> None:
    """When the worker stops, a job running in its asker learns `memory_crashed` at once,
    as a job it had queued would."""
    engine = Engine(delay=60.0)
    answers: list[tuple[float, dict[str, Any]]] = []
    send, recv = trio.open_memory_channel[PlaneJob](MAILBOX_SIZE)
    worker = PlaneWorker("memory", recv, FaultPlan(), engine.factory)

    async def request() -> None:
        answer = await ask(send, "memory", "q", trio.current_time() + 5, worker)
        answers.append((trio.current_time(), answer))

    async with trio.open_nursery() as outer, trio.open_nursery() as workers:
        await workers.start(worker.run)
        outer.start_soon(request)
        await trio.sleep(1)
        assert len(engine.tasks) == 1  # running in the request's task
        workers.cancel_scope.cancel()
    assert [(at, a["error"]["code"]) for at, a in answers] == [(1.0, "memory_crashed")]
    assert not worker.can_serve_here()


async def test_scripted_faults_keep_jobs_in_the_mailbox(clock: trio.testing.MockClock) -> None:
    """With a fault scripted for the plane, jobs go through the mailbox in arrival order, so
    each call meets its scripted fault; once the script is used up, requests run their own."""
    engine = Engine()
    async with worker_for(engine, "memory=raise*1") as (mailbox, worker):
        first = await ask(mailbox, "memory", "q", trio.current_time() + 5, worker)
        second = await ask(mailbox, "memory", "q", trio.current_time() + 5, worker)
        third = await ask(mailbox, "memory", "q", trio.current_time() + 5, worker)
    assert first["error"]["code"] == "memory_internal"
    assert second == third == READY
    me = trio.lowlevel.current_task()
    assert engine.tasks[0] is not me  # the second call still drew from the script
    assert engine.tasks[1] is me
