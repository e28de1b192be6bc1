"""Thread lanes: a few long-lived worker threads for one actor's blocking work.

`trio.to_thread.run_sync` hands every call to a thread and back through the event loop
one at a time. Measured on the server (docs/benchmarks.md), that round trip cost about
100 µs per call under a burst: more than a whole path check, and two of them per tool
call. A lane keeps its threads for the whole session and moves work in batches:

* jobs wait in one queue; a thread that finishes a job takes the next one itself, with no
  trip through the loop in between;
* finished jobs are handed back together: one `run_sync_soon` wakes the loop for every
  result that is ready, however many there are.

Under load a round trip costs a few microseconds; a lone call costs what it did. The
threads also keep their thread-local state (the memory plane's pooled SQLite readers) for
the whole session instead of losing it whenever an idle thread is retired.

Cancellation abandons, as `abandon_on_cancel=True` does: a job still queued is dropped, a
running one finishes in its thread and its result is thrown away (callers that can stop
early pass the thread a flag of their own).

A thread can also get stuck for good: a path check on a dead network mount, a SQLite open
of a FIFO planted where a store's journal should be. A lane built with `replace_after`
writes off a thread whose abandoned job is still running that long after it was abandoned,
and starts another in its place, so a stuck thread costs the lane nothing but the thread
itself (at most `MAX_STUCK` such threads per lane; beyond that the lane runs short rather
than grow without bound). The stuck thread exits if its job ever returns.

Jobs outstanding (queued or running) are bounded like the mailboxes in front of the lane:
`run()` and `wait_room()` wait, in trio, while the lane is full.

Tests that run lanes under trio's autojump clock set `BUSY_OBSERVER` (see there): the clock
cannot see threads, so without it virtual time runs on while a thread works.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Final, Generic, TypeVar

import attrs
import outcome
import trio

from lwc_trio.exceptions import LaneClosed

__all__ = ["BUSY_OBSERVER", "MAX_STUCK", "BusyObserver", "LaneCall", "ThreadLane", "open_lane"]

T = TypeVar("T")

log = logging.getLogger("lwc.lanes")

MAX_STUCK: Final = 16
"""Written-off threads a lane tolerates at once before it stops replacing them."""
DEFAULT_QUEUE: Final = 64
"""Jobs waiting beyond the running ones, by default (the size of an actor's mailbox)."""

BusyObserver = Callable[[int], None]
"""Told +1 when a lane thread is handed work (in the trio thread) and -1 when it has none
left: it waits for work, or, written off, its job returned (in that thread, under the
lane's lock, so it must not block); `close()` reports the threads still busy as -N."""
BUSY_OBSERVER: Final = trio.lowlevel.RunVar[BusyObserver | None]("lwc_lane_busy", default=None)
"""Test hook: lanes created in this run report to it, so a test on trio's autojump clock can
hold virtual time still while real threads work; unset (production), a lane reports nothing."""


@attrs.define(eq=False)
class _Worker:
    thread: threading.Thread | None = None
    job: _Job | None = None
    lost: bool = False
    """Written off: stuck in an abandoned job, replaced, no longer counted."""


@attrs.define(eq=False)
class _Job:
    work: Callable[[], Callable[[], None]]
    """Runs the job (in a lane thread); returns what hands its outcome to the caller."""
    fail: Callable[[BaseException], None]
    """Tells the caller the job will never run (trio thread)."""
    abandoned: bool = False
    started: bool = False
    finished: bool = False
    counted: bool = True
    """Holds one unit of the lane's room until it is delivered or abandoned."""
    worker: _Worker | None = None


def _nothing() -> None:
    """What a delivered job hands back if run again: nothing."""


def _spent() -> Callable[[], None]:
    """What a delivered job's work becomes."""
    return _nothing


def _failed(_: BaseException) -> None:
    """What a delivered job's failure callback becomes."""


class ThreadLane:
    """At most `threads` worker threads serving one queue; create and use it in a trio run.

    Threads start on demand and stay until `close()`. Without `grow_after`, a job goes to an
    idle (or new) thread at once whenever one is free. With `grow_after` (seconds), a job
    that arrives while a thread is working waits for that thread, and only a `run()` call
    whose job has waited that long brings in another thread: short jobs then run one
    after another on one thread, which on a busy server beats several threads contending
    for the interpreter lock, while a slow job still cannot hold up the next one for longer
    than `grow_after`.

    With `replace_after` (seconds, 0 for at once), a thread still running a job that long
    after the job was abandoned is written off and replaced (see the module docstring).
    `queue` bounds the jobs waiting beyond the running ones.
    """

    def __init__(
        self,
        name: str,
        threads: int,
        *,
        grow_after: float | None = None,
        replace_after: float | None = None,
        queue: int = DEFAULT_QUEUE,
    ) -> None:
        if threads < 1:
            raise ValueError("a lane needs at least one thread")
        self.name = name
        self.max_threads = threads
        self.grow_after = grow_after
        self.replace_after = replace_after
        self._token = trio.lowlevel.current_trio_token()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: collections.deque[_Job] = collections.deque()
        self._finished: list[tuple[_Job, Callable[[], None]]] = []
        self._delivery_posted = False
        self._workers: list[_Worker] = []
        """Threads that count toward `max_threads` (written-off ones are not here)."""
        self._started = 0
        self._stuck = 0
        """Written-off threads whose job has not returned yet."""
        self._idle = 0
        """Threads waiting for work that no one has woken yet."""
        self._working = 0
        """Threads running a job, or woken or started to take one."""
        self._closed = False
        self._observer = BUSY_OBSERVER.get()
        # The room is touched only in the trio thread.
        self._limit = threads + max(queue, 0)
        self._outstanding = 0
        self._room = trio.lowlevel.ParkingLot()

    @property
    def stuck(self) -> int:
        """Threads written off and not yet returned."""
        return self._stuck

    @property
    def threads(self) -> int:
        """Threads that count toward the lane's capacity now."""
        return len(self._workers)

    @property
    def has_room(self) -> bool:
        """Whether one more job fits now (`wait_room()` would not wait)."""
        return self._outstanding < self._limit or self._closed

    # -- the loop side ------------------------------------------------------------------

    async def wait_room(self) -> None:
        """Wait until the lane has room for one more job (its queue is bounded)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        while self._outstanding >= self._limit and not self._closed:
            await self._room.park()

    def submit(
        self, fn: Callable[..., T], *args: object, done: Callable[[outcome.Outcome[T]], None]
    ) -> Callable[[], None]:
        """Queue `fn(*args)`; `done(outcome)` runs later in the trio thread.

        Callers that respect the bound `await wait_room()` first. Returns a function that
        abandons the job: if it has not started it never runs, and either way `done` is
        not called. Raises `LaneClosed` after `close()`.
        """
        job = self._submit(fn, args, done)
        return lambda: self._abandon(job)

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)` in a lane thread; its result or exception comes back here.

        Waits for room first. On cancellation the job is abandoned (see the module
        docstring).
        """
        await self.wait_room()
        if self.grow_after is not None:
            return await self._run_growing(fn, args, self.grow_after)
        task = trio.lowlevel.current_task()
        job = self._submit(fn, args, partial(trio.lowlevel.reschedule, task))

        def abort(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
            self._abandon(job)
            return trio.lowlevel.Abort.SUCCEEDED

        result: T = await trio.lowlevel.wait_task_rescheduled(abort)
        return result

    async def _run_growing(self, fn: Callable[..., T], args: tuple[object, ...], after: float) -> T:
        call: LaneCall[T] = LaneCall(self, fn, args, trio.current_time() + after)
        try:
            return await call.wait()
        except BaseException:
            call.abandon()
            raise

    def close(self) -> None:
        """Stop the threads once their current job ends; queued jobs fail with `LaneClosed`.

        Call it from the trio thread. Never blocks: a thread stuck on a hung filesystem call
        is left behind (it is a daemon thread) rather than holding the caller up.
        """
        with self._lock:
            self._closed = True
            dropped = list(self._queue)
            self._queue.clear()
            self._wake.notify_all()
            if self._observer is not None:
                # Threads no longer report once closed: account for the busy ones here.
                self._observer(-(self._working + self._stuck))
                self._observer = None
        for job in dropped:
            self._release(job)
            job.fail(LaneClosed(f"{self.name} lane closed"))
        self._room.unpark_all()

    def _submit(
        self,
        fn: Callable[..., T],
        args: tuple[object, ...],
        done: Callable[[outcome.Outcome[T]], None],
    ) -> _Job:
        def work() -> Callable[[], None]:
            return partial(done, outcome.capture(fn, *args))

        def fail(exc: BaseException) -> None:
            done(outcome.Error(exc))

        job = _Job(work, fail)
        with self._lock:
            if self._closed:
                raise LaneClosed(f"{self.name} lane is closed")
            self._queue.append(job)
            if self.grow_after is None or self._working == 0:
                self._add_worker()
        self._outstanding += 1
        return job

    def _release(self, job: _Job) -> None:
        # Trio thread only: the job no longer takes up room in the lane.
        if job.counted:
            job.counted = False
            self._outstanding -= 1
            self._room.unpark()

    def _grow(self, job: _Job) -> None:
        """`job` has waited `grow_after`: bring in another thread if it is still queued."""
        with self._lock:
            if not job.started and not job.abandoned and not self._closed:
                # The thread brought in takes this job, not the queue's head: jobs due at
                # the same time wake in no fixed order, and the head's own grow (now, or
                # already done) brings in its own thread. Taken from the head, the thread
                # left this job queued behind the head (a hang, say) and the head's grow
                # found its job started and added nothing.
                self._queue.remove(job)
                self._queue.appendleft(job)
                self._add_worker()

    def _add_worker(self) -> None:
        # Under the lock. Counted as working from here, not from when the thread wakes: a
        # second job submitted before then must not count on the same thread.
        if self._idle:
            self._idle -= 1
            self._working += 1
            self._wake.notify()
            if self._observer is not None:
                self._observer(1)
        elif len(self._workers) < self.max_threads:
            self._working += 1
            if self._observer is not None:
                self._observer(1)
            worker = _Worker()
            worker.thread = threading.Thread(
                target=self._work, args=(worker,), name=f"{self.name}-{self._started}", daemon=True
            )
            self._started += 1
            self._workers.append(worker)
            worker.thread.start()

    def _abandon(self, job: _Job) -> None:
        running = False
        with self._lock:
            job.abandoned = True
            try:
                self._queue.remove(job)
            except ValueError:
                # Not queued: running (its result is dropped on delivery) or finished.
                running = job.started and not job.finished
        self._release(job)
        replace_after = self.replace_after
        if running and replace_after is not None:
            if replace_after <= 0:
                self._write_off(job)
            else:
                # RuntimeError: the run is ending, so there is no capacity left to keep.
                with contextlib.suppress(RuntimeError):
                    trio.lowlevel.spawn_system_task(self._write_off_later, job, replace_after)

    async def _write_off_later(self, job: _Job, after: float) -> None:
        await trio.sleep(after)
        self._write_off(job)

    def _write_off(self, job: _Job) -> None:
        """`job` was abandoned and is still running: replace its thread (trio thread)."""
        with self._lock:
            worker = job.worker
            if job.finished or worker is None or worker.lost or self._closed:
                return
            if self._stuck >= MAX_STUCK:
                log.warning("%s lane: %d threads stuck; not replacing more", self.name, MAX_STUCK)
                return
            worker.lost = True
            self._workers.remove(worker)
            self._working -= 1
            self._stuck += 1
            log.warning("%s lane: a thread is stuck in an abandoned job; replaced", self.name)
            if self._queue:
                self._add_worker()

    def _deliver(self) -> None:
        with self._lock:
            finished, self._finished = self._finished, []
            self._delivery_posted = False
        for job, deliver in finished:
            self._release(job)
            # The callback usually refers back to whatever holds the job (a `LaneCall`):
            # dropping it, and the arguments, leaves no cycle to keep the job's arguments
            # and result (a whole search answer) alive until the cyclic collector runs.
            job.work, job.fail = _spent, _failed
            if not job.abandoned:
                try:
                    deliver()
                except Exception:  # a bug in one callback must not take the loop down
                    log.exception("%s lane: result callback failed", self.name)
        del finished

    # -- the thread side ----------------------------------------------------------------

    def _work(self, worker: _Worker) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    # Idle until _add_worker() wakes this thread (and counts it working).
                    self._working -= 1
                    self._idle += 1
                    if self._observer is not None:
                        self._observer(-1)
                    self._wake.wait()
                if self._closed:
                    return
                job = self._queue.popleft()
                job.started = True
                job.worker = worker
                worker.job = job
            deliver = job.work()
            with self._lock:
                job.finished = True
                worker.job = None
                self._finished.append((job, deliver))
                post = not self._delivery_posted
                self._delivery_posted = True
                lost = worker.lost
                if lost:
                    # Replaced long ago: this thread no longer belongs to the lane.
                    self._stuck -= 1
                    if self._observer is not None:
                        self._observer(-1)
            # Before the delivery: once it runs, the lane's only reference is the caller's
            # (an idle thread would keep its last answer alive).
            del job, deliver
            if post:
                try:
                    self._token.run_sync_soon(self._deliver)
                except trio.RunFinishedError:
                    return  # the run is over: nobody is left to take results
            if lost:
                return


class LaneCall(Generic[T]):
    """One job on a growing lane (`ThreadLane.run()`): wait for it, or abandon it."""

    def __init__(
        self,
        lane: ThreadLane,
        fn: Callable[..., T],
        args: tuple[object, ...],
        grow_at: float | None,
    ) -> None:
        self._lane = lane
        self._finished = trio.Event()
        self._result: outcome.Outcome[T] | None = None
        self._grow_at = grow_at
        self._job = lane._submit(fn, args, self._done)

    def _done(self, result: outcome.Outcome[T]) -> None:
        self._result = result
        self._finished.set()

    async def wait(self) -> T:
        """The job's result (or its exception), once it has run."""
        if self._grow_at is not None and not self._finished.is_set():
            with trio.move_on_at(self._grow_at):
                await self._finished.wait()
            if not self._finished.is_set() and trio.current_time() >= self._grow_at:
                self._grow_at = None
                self._lane._grow(self._job)
        if not self._finished.is_set():  # a set Event's wait() would still yield once
            await self._finished.wait()
        assert self._result is not None
        return self._result.unwrap()

    def abandon(self) -> None:
        """Give the job up (see the module docstring)."""
        if not self._finished.is_set():
            self._lane._abandon(self._job)


@asynccontextmanager
async def open_lane(
    name: str,
    threads: int,
    *,
    grow_after: float | None = None,
    replace_after: float | None = None,
    queue: int = DEFAULT_QUEUE,
) -> AsyncIterator[ThreadLane]:
    """A lane for the duration of the block; closed on the way out."""
    lane = ThreadLane(
        name, threads, grow_after=grow_after, replace_after=replace_after, queue=queue
    )
    try:
        yield lane
    finally:
        lane.close()
