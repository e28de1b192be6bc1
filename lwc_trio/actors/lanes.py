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

Who runs next is the lane's one policy, the same for `submit` and `run`:

* **batching**: a job that arrives while a thread works waits for that thread, and brings
  in another (up to `threads`) only once it has waited `grow_after` (0: at once) with no
  job of its own key starting meanwhile: its key's jobs are then stuck behind slow ones,
  not being worked through. A wait in which one did start begins again, so a slow job
  holds the next of its key up by 2 × `grow_after` at most, and a key whose jobs keep
  starting brings in no thread however long its queue: short jobs run back to back on
  one thread instead of several threads taking turns at the interpreter lock (slower
  in all, and the event loop waits for the lock too). Every job that waited through such
  a window brings in a thread for itself (up to `threads`);
* **fairness by key**: each job carries a key (the memory plane's: the store it reads). A
  free thread takes the oldest job of the key with the fewest jobs running, and among
  those of the key served longest ago (round robin), so jobs of one key cannot make
  another key's wait behind all of them;
* **spare threads**: a job whose key has no job running that has waited `grow_after` may
  bring in one of `spare` threads beyond `threads`. A spare thread only ever takes such a
  job: when every thread is busy with one key's slow jobs, another key's job still starts
  within `grow_after` (SPEC §6: one slow query never holds up the next); and jobs of one
  key finishing never hold up another key's growth.

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
import functools
import itertools
import logging
import math
import sys
import threading
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from functools import partial
from typing import Final, TypedDict, TypeVar, Unpack

import attrs
import outcome
import trio

from lwc_trio.exceptions import LaneClosed

__all__ = ["BUSY_OBSERVER", "MAX_STUCK", "BusyObserver", "ThreadLane", "open_lane"]

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
    key: Hashable
    """Jobs of one key share the lane fairly with other keys' (see the module docstring)."""
    due: float
    """When, in trio time, the job has waited `grow_after` and may bring in a thread."""
    seq: int
    """Its place in arrival order."""
    queued: bool = True
    abandoned: bool = False
    started: bool = False
    finished: bool = False
    grew: bool = False
    """It has brought in a thread (or found none to bring in) once."""
    since: int = 0
    """When (in arrival numbers, `_seq`) its current `grow_after` wait began: a job of its
    key taken after that (`_served`) means its key is being worked through."""
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


@functools.cache
def _prctl() -> Callable[..., int] | None:
    if sys.platform != "linux":
        return None
    import ctypes  # only where threads get OS names: not on the server's start-up path

    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


def _name_os_thread(name: str) -> None:
    """Give the calling thread `name` (its first 15 bytes) where the OS keeps thread names
    (Linux: `top -H`, `/proc/PID/task/TID/comm`), so that a lane's threads can be told apart
    from outside the process (the soak counts the memory lane's, whose threads each keep a
    pooled connection); elsewhere, nothing."""
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_NAME, name.encode("ascii", "replace")[:15], 0, 0, 0)


_PR_SET_NAME: Final = 15


class ThreadLane:
    """At most `threads` worker threads (plus `spare`) serving one queue; create and use it
    in a trio run.

    Threads start on demand and stay until `close()`. Which waiting job runs next, and when
    another thread is brought in, follow the module docstring's policy: `grow_after`
    (seconds; 0 for at once) and `spare` set it. With `replace_after` (seconds, 0 for at
    once), a thread still running a job that long after the job was abandoned is written
    off and replaced. `queue` bounds the jobs waiting beyond the running ones.
    """

    def __init__(
        self,
        name: str,
        threads: int,
        *,
        grow_after: float = 0.0,
        spare: int = 0,
        replace_after: float | None = None,
        queue: int = DEFAULT_QUEUE,
    ) -> None:
        if threads < 1:
            raise ValueError("a lane needs at least one thread")
        self.name = name
        self.max_threads = threads
        self.spare = max(spare, 0)
        self.grow_after = max(grow_after, 0.0)
        self.replace_after = replace_after
        self._token = trio.lowlevel.current_trio_token()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._waiting: dict[Hashable, collections.deque[_Job]] = {}
        """Queued jobs by key, each key's in arrival order (`_seq`)."""
        self._running: dict[Hashable, int] = {}
        """Jobs running (taken by a thread and not yet returned) by key."""
        self._served: dict[Hashable, int] = {}
        """Key -> when (in arrival numbers) a job of it last started, while it has jobs."""
        self._seq = itertools.count()
        self._finished: list[tuple[_Job, Callable[[], None]]] = []
        self._delivery_posted = False
        self._workers: list[_Worker] = []
        """Threads that count toward the lane's capacity (written-off ones are not here)."""
        self._started = 0
        self._stuck = 0
        """Written-off threads whose job has not returned yet."""
        self._idle = 0
        """Threads waiting for work that no one has woken yet."""
        self._working = 0
        """Threads running a job, or woken or started to take one."""
        self._closed = False
        self._observer = BUSY_OBSERVER.get()
        # Touched only in the trio thread: the room, and the task that brings in threads
        # for jobs that have waited `grow_after`.
        self._limit = threads + self.spare + max(queue, 0)
        self._outstanding = 0
        self._room = trio.lowlevel.ParkingLot()
        self._grower: trio.lowlevel.Task | None = None
        self._grower_lot = trio.lowlevel.ParkingLot()
        self._grower_due = math.inf

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
        self,
        fn: Callable[..., T],
        *args: object,
        done: Callable[[outcome.Outcome[T]], None],
        key: Hashable = None,
    ) -> Callable[[], None]:
        """Queue `fn(*args)` under `key`; `done(outcome)` runs later in the trio thread.

        Callers that respect the bound `await wait_room()` first. Returns a function that
        abandons the job: if it has not started it never runs, and either way `done` is
        not called. Raises `LaneClosed` after `close()`.
        """
        job = self._submit(fn, args, done, key)
        return lambda: self._abandon(job)

    async def run(self, fn: Callable[..., T], *args: object, key: Hashable = None) -> T:
        """`fn(*args)` in a lane thread (`submit`, waited for); its result or exception
        comes back here.

        Waits for room first. On cancellation the job is abandoned (see the module
        docstring).
        """
        await self.wait_room()
        task = trio.lowlevel.current_task()
        job = self._submit(fn, args, partial(trio.lowlevel.reschedule, task), key)

        def abort(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
            self._abandon(job)
            return trio.lowlevel.Abort.SUCCEEDED

        result: T = await trio.lowlevel.wait_task_rescheduled(abort)
        return result

    def close(self) -> None:
        """Stop the threads once their current job ends; queued jobs fail with `LaneClosed`.

        Call it from the trio thread. Never blocks: a thread stuck on a hung filesystem call
        is left behind (it is a daemon thread) rather than holding the caller up.
        """
        with self._lock:
            self._closed = True
            dropped = [job for jobs in self._waiting.values() for job in jobs]
            for job in dropped:
                job.queued = False
            self._waiting.clear()
            self._wake.notify_all()
            if self._observer is not None:
                # Threads no longer report once closed: account for the busy ones here.
                self._observer(-(self._working + self._stuck))
                self._observer = None
        for job in dropped:
            self._release(job)
            job.fail(LaneClosed(f"{self.name} lane closed"))
        self._room.unpark_all()
        self._grower_lot.unpark_all()

    def _submit(
        self,
        fn: Callable[..., T],
        args: tuple[object, ...],
        done: Callable[[outcome.Outcome[T]], None],
        key: Hashable,
    ) -> _Job:
        def work() -> Callable[[], None]:
            return partial(done, outcome.capture(fn, *args))

        def fail(exc: BaseException) -> None:
            done(outcome.Error(exc))

        due = trio.current_time() + self.grow_after if self.grow_after else 0.0
        seq = next(self._seq)
        job = _Job(work, fail, key, due, seq, since=seq)
        with self._lock:
            if self._closed:
                raise LaneClosed(f"{self.name} lane is closed")
            jobs = self._waiting.get(key)
            if jobs is None:
                jobs = self._waiting[key] = collections.deque()
            jobs.append(job)
            if self.grow_after == 0 or self._working == 0:
                job.grew = True
                self._add_worker(key)
            waits = not job.grew
        self._outstanding += 1
        if waits and job.due < self._grower_due:
            self._wake_grower()
        return job

    def _release(self, job: _Job) -> None:
        # Trio thread only: the job no longer takes up room in the lane.
        if job.counted:
            job.counted = False
            self._outstanding -= 1
            self._room.unpark()

    # -- bringing in threads for jobs that waited `grow_after` (trio thread) --------------

    def _wake_grower(self) -> None:
        if self._grower is None:
            # RuntimeError: the run is ending; nothing is left to grow for.
            with contextlib.suppress(RuntimeError):
                self._grower = trio.lowlevel.spawn_system_task(
                    self._grow_loop, name=f"{self.name} lane grower"
                )
        else:
            self._grower_lot.unpark_all()

    async def _grow_loop(self) -> None:
        """Bring in a thread for each job that has waited `grow_after`, when it has."""
        while not self._closed:
            with self._lock:
                due = min(
                    (job.due for jobs in self._waiting.values() for job in jobs if not job.grew),
                    default=math.inf,
                )
            self._grower_due = due
            with trio.move_on_at(due):
                await self._grower_lot.park()
            self._grower_due = math.inf
            if trio.current_time() >= due:
                try:
                    self._grow(trio.current_time())
                except Exception:  # a system task's exception would end the whole run
                    log.exception("%s lane: could not bring in a thread", self.name)

    def _grow(self, now: float) -> None:
        with self._lock:
            if self._closed:
                return
            due = [job for jobs in self._waiting.values() for job in jobs if not job.grew]
            due.sort(key=lambda job: job.seq)
            for job in due:
                if job.due > now:
                    continue
                if self._served.get(job.key, -1) > job.since:
                    # A job of its key started while this one waited: its key is being
                    # worked through, by threads that keep up. Wait again.
                    job.since, job.due = next(self._seq), now + self.grow_after
                    continue
                job.grew = True
                self._add_worker(job.key)

    # -- threads (under the lock) -------------------------------------------------------

    def _may_start(self, key: Hashable, working: int) -> bool:
        """Whether a job of `key` may start with `working` threads working (itself
        included): within `threads`, or on a spare thread when its key has none running."""
        if working <= self.max_threads:
            return True
        return working <= self.max_threads + self.spare and not self._running.get(key)

    def _add_worker(self, key: Hashable) -> None:
        # Counted as working from here, not from when the thread wakes: a second job
        # submitted before then must not count on the same thread.
        if not self._may_start(key, self._working + 1):
            return
        if self._idle:
            self._idle -= 1
            self._working += 1
            self._wake.notify()
            if self._observer is not None:
                self._observer(1)
        elif len(self._workers) < self.max_threads + self.spare:
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

    def _take(self) -> _Job | None:
        """The next job for a working thread, among those it may start (`_may_start`): the
        oldest of the key with the fewest jobs running, then served longest ago."""
        best: collections.deque[_Job] | None = None
        if len(self._waiting) == 1:  # one key waiting (always, for a lane of one key)
            key, jobs = next(iter(self._waiting.items()))
            if self._may_start(key, self._working):
                best = jobs
        else:
            best_rank = (0, 0, 0)
            for key, jobs in self._waiting.items():
                if not self._may_start(key, self._working):
                    continue
                rank = (self._running.get(key, 0), self._served.get(key, -1), jobs[0].seq)
                if best is None or rank < best_rank:
                    best, best_rank = jobs, rank
        if best is None:
            return None
        job = best.popleft()
        if not best:
            del self._waiting[job.key]
        job.queued = False
        self._running[job.key] = self._running.get(job.key, 0) + 1
        self._served[job.key] = next(self._seq)
        return job

    def _done(self, key: Hashable) -> None:
        """A job of `key` returned: one fewer running; an idle key is forgotten."""
        left = self._running[key] - 1
        if left:
            self._running[key] = left
            return
        del self._running[key]
        if key not in self._waiting:
            self._served.pop(key, None)

    def _unqueue(self, job: _Job) -> bool:
        """Take `job` out of the queue; False when it is not there."""
        if not job.queued:
            return False
        jobs = self._waiting[job.key]
        jobs.remove(job)
        if not jobs:
            del self._waiting[job.key]
            if job.key not in self._running:
                self._served.pop(job.key, None)
        job.queued = False
        return True

    def _abandon(self, job: _Job) -> None:
        running = False
        with self._lock:
            job.abandoned = True
            if not self._unqueue(job):
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
            if self._waiting:
                self._add_worker(next(iter(self._waiting)))

    def _deliver(self) -> None:
        with self._lock:
            finished, self._finished = self._finished, []
            self._delivery_posted = False
        for job, deliver in finished:
            self._release(job)
            # The callback refers back to its caller (a task, an actor's job): dropping
            # it, and the arguments, leaves no cycle to keep the job's arguments and result
            # (a whole search answer) alive until the cyclic collector runs.
            job.work, job.fail = _spent, _failed
            if not job.abandoned:
                try:
                    deliver()
                except Exception:  # a bug in one callback must not take the loop down
                    log.exception("%s lane: result callback failed", self.name)
        del finished

    # -- the thread side ----------------------------------------------------------------

    def _work(self, worker: _Worker) -> None:
        _name_os_thread(threading.current_thread().name)
        while True:
            with self._lock:
                job = None if self._closed else self._take()
                while job is None and not self._closed:
                    # Idle until _add_worker() wakes this thread (and counts it working).
                    self._working -= 1
                    self._idle += 1
                    if self._observer is not None:
                        self._observer(-1)
                    self._wake.wait()
                    job = None if self._closed else self._take()
                if job is None:
                    return
                job.started = True
                job.worker = worker
                worker.job = job
            deliver = job.work()
            with self._lock:
                job.finished = True
                worker.job = None
                self._done(job.key)
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


class LaneOptions(TypedDict, total=False):
    """`ThreadLane`'s keyword options, as `open_lane` passes them on."""

    grow_after: float
    spare: int
    replace_after: float | None
    queue: int


@asynccontextmanager
async def open_lane(
    name: str, threads: int, **options: Unpack[LaneOptions]
) -> AsyncIterator[ThreadLane]:
    """A `ThreadLane(name, threads, **options)` for the duration of the block; closed on the
    way out."""
    lane = ThreadLane(name, threads, **options)
    try:
        yield lane
    finally:
        lane.close()
