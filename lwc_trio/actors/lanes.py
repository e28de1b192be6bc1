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
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import attrs
import outcome
import trio

__all__ = ["LaneClosed", "ThreadLane", "open_lane"]

T = TypeVar("T")

log = logging.getLogger("lwc.lanes")


class LaneClosed(Exception):
    """The lane shut down before the job could run."""


@attrs.define(eq=False)
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    done: Callable[[outcome.Outcome[Any]], None]
    abandoned: bool = False
    started: bool = False


class ThreadLane:
    """At most `threads` worker threads serving one queue; create and use it in a trio run.

    Threads start on demand and stay until `close()`. Without `grow_after`, a job goes to an
    idle (or new) thread at once whenever one is free. With `grow_after` (seconds), a job
    that arrives while a thread is working waits for that thread, and only a `run()` call
    whose job has waited that long brings in another thread: short jobs then run one
    after another on one thread, which on a busy server beats several threads contending
    for the interpreter lock, while a slow job still cannot hold up the next one for longer
    than `grow_after`.
    """

    def __init__(self, name: str, threads: int, *, grow_after: float | None = None) -> None:
        if threads < 1:
            raise ValueError("a lane needs at least one thread")
        self.name = name
        self.max_threads = threads
        self.grow_after = grow_after
        self._token = trio.lowlevel.current_trio_token()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: collections.deque[_Job] = collections.deque()
        self._finished: list[tuple[_Job, outcome.Outcome[Any]]] = []
        self._delivery_posted = False
        self._threads: list[threading.Thread] = []
        self._idle = 0
        """Threads waiting for work that no one has woken yet."""
        self._working = 0
        """Threads running a job, or woken or started to take one."""
        self._closed = False

    # -- the loop side ------------------------------------------------------------------

    def submit(
        self, fn: Callable[..., Any], *args: Any, done: Callable[[outcome.Outcome[Any]], None]
    ) -> Callable[[], None]:
        """Queue `fn(*args)`; `done(outcome)` runs later in the trio thread.

        Returns a function that abandons the job: if it has not started it never runs, and
        either way `done` is not called. Raises `LaneClosed` after `close()`.
        """
        job = self._submit(fn, args, done)
        return lambda: self._abandon(job)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in a lane thread; its result or exception comes back here.

        On cancellation the job is abandoned (see the module docstring).
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        if self.grow_after is not None:
            return await self._run_growing(fn, args, self.grow_after)
        task = trio.lowlevel.current_task()
        job = self._submit(fn, args, lambda result: trio.lowlevel.reschedule(task, result))

        def abort(_: Any) -> trio.lowlevel.Abort:
            self._abandon(job)
            return trio.lowlevel.Abort.SUCCEEDED

        result: T = await trio.lowlevel.wait_task_rescheduled(abort)
        return result

    async def _run_growing(self, fn: Callable[..., T], args: tuple[Any, ...], after: float) -> T:
        finished = trio.Event()
        box: list[outcome.Outcome[T]] = []

        def done(result: outcome.Outcome[T]) -> None:
            box.append(result)
            finished.set()

        job = self._submit(fn, args, done)
        try:
            with trio.move_on_after(after):
                await finished.wait()
            if not finished.is_set():
                self._grow(job)
                await finished.wait()
        except BaseException:
            self._abandon(job)
            raise
        return box[0].unwrap()

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
        for job in dropped:
            job.done(outcome.Error(LaneClosed(f"{self.name} lane closed")))

    def _submit(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        done: Callable[[outcome.Outcome[Any]], None],
    ) -> _Job:
        job = _Job(fn, args, done)
        with self._lock:
            if self._closed:
                raise LaneClosed(f"{self.name} lane is closed")
            self._queue.append(job)
            if self.grow_after is None or self._working == 0:
                self._add_worker()
        return job

    def _grow(self, job: _Job) -> None:
        """`job` has waited `grow_after`: bring in another thread if it is still queued."""
        with self._lock:
            if not job.started and not job.abandoned and not self._closed:
                self._add_worker()

    def _add_worker(self) -> None:
        # Under the lock. Counted as working from here, not from when the thread wakes: a
        # second job submitted before then must not count on the same thread.
        if self._idle:
            self._idle -= 1
            self._working += 1
            self._wake.notify()
        elif len(self._threads) < self.max_threads:
            self._working += 1
            thread = threading.Thread(
                target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _abandon(self, job: _Job) -> None:
        with self._lock:
            job.abandoned = True
            # Not queued means running or finished: its result is dropped on delivery.
            with contextlib.suppress(ValueError):
                self._queue.remove(job)

    def _deliver(self) -> None:
        with self._lock:
            finished, self._finished = self._finished, []
            self._delivery_posted = False
        for job, result in finished:
            if not job.abandoned:
                try:
                    job.done(result)
                except Exception:  # a bug in one callback must not take the loop down
                    log.exception("%s lane: result callback failed", self.name)

    # -- the thread side ----------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    # Idle until _add_worker() wakes this thread (and counts it working).
                    self._working -= 1
                    self._idle += 1
                    self._wake.wait()
                if self._closed:
                    return
                job = self._queue.popleft()
                job.started = True
            result = outcome.capture(job.fn, *job.args)
            with self._lock:
                self._finished.append((job, result))
                post = not self._delivery_posted
                self._delivery_posted = True
            if post:
                try:
                    self._token.run_sync_soon(self._deliver)
                except trio.RunFinishedError:
                    return  # the run is over: nobody is left to take results


@asynccontextmanager
async def open_lane(
    name: str, threads: int, *, grow_after: float | None = None
) -> AsyncIterator[ThreadLane]:
    """A lane for the duration of the block; closed on the way out."""
    lane = ThreadLane(name, threads, grow_after=grow_after)
    try:
        yield lane
    finally:
        lane.close()
