"""Thread lanes: results and errors come back, cancellation abandons, close never hangs,
stuck threads are replaced and the queue is bounded."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import outcome
import pytest
import trio
import trio.testing
from lane_clock import Hang, HeldClock

from lwc_trio.actors.lanes import ThreadLane, open_lane
from lwc_trio.exceptions import LaneClosed


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Virtual time that jumps once the loop has idled 20 ms of real time."""
    return trio.testing.MockClock(autojump_threshold=0.02)


async def test_results_and_exceptions_come_back() -> None:
    """A job's value is returned and its exception raised in the calling task."""
    async with open_lane("t", 2) as lane:
        assert await lane.run(lambda a, b: a + b, 2, 3) == 5
        with pytest.raises(ZeroDivisionError):
            await lane.run(lambda: 1 / 0)


async def test_a_burst_runs_on_at_most_the_lane_threads() -> None:
    """200 jobs at once all finish, on no more than the lane's threads, each reused."""
    names: list[str] = []

    def job(i: int) -> int:
        names.append(threading.current_thread().name)
        return i * i

    results: dict[int, int] = {}
    async with open_lane("burst", 3) as lane:

        async def one(i: int) -> None:
            results[i] = await lane.run(job, i)

        async with trio.open_nursery() as nursery:
            for i in range(200):
                nursery.start_soon(one, i)
    assert results == {i: i * i for i in range(200)}
    assert len(names) == 200
    assert set(names) <= {"burst-0", "burst-1", "burst-2"}


async def test_thread_state_survives_between_jobs() -> None:
    """One thread keeps its thread-local state (pooled readers) from job to job."""
    local = threading.local()

    def count() -> int:
        local.n = getattr(local, "n", 0) + 1
        return int(local.n)

    async with open_lane("one", 1) as lane:
        assert [await lane.run(count) for _ in range(5)] == [1, 2, 3, 4, 5]


async def test_cancelled_queued_job_never_runs() -> None:
    """A job cancelled while it waits behind a busy thread is dropped, not run later."""
    release = threading.Event()
    ran: list[str] = []

    def blocker() -> None:
        release.wait(10)
        ran.append("blocker")

    async with open_lane("q", 1) as lane:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lane.run, blocker)
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(0.05) as scope:
                await lane.run(ran.append, "queued")
            assert scope.cancelled_caught
            release.set()
        # The lane is idle again and still serves new work.
        assert await lane.run(lambda: "after") == "after"
    assert ran == ["blocker"]


async def test_cancelled_running_job_is_abandoned() -> None:
    """Cancelling a running job returns at once; the thread's late result is dropped."""
    started = threading.Event()
    release = threading.Event()
    finished = threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        finished.set()
        return "late"

    async with open_lane("r", 1) as lane:
        with trio.move_on_after(5) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lane.run, slow)
                await trio.to_thread.run_sync(started.wait, 10)
                nursery.cancel_scope.cancel()
        assert not scope.cancelled_caught
        assert not finished.is_set()
        release.set()
        # The abandoned job's result arrives and is dropped; the next job still works.
        assert await lane.run(lambda: "next") == "next"
        assert finished.is_set()


async def test_close_fails_queued_jobs_and_refuses_new_ones() -> None:
    """At close a queued job gets LaneClosed, the running one still finishes, new ones raise."""
    started = threading.Event()
    release = threading.Event()
    got: dict[str, outcome.Outcome[Any]] = {}

    def running() -> str:
        started.set()
        release.wait(10)
        return "done"

    delivered = trio.Event()

    def on_running(result: outcome.Outcome[Any]) -> None:
        got["running"] = result
        delivered.set()

    lane = ThreadLane("c", 1)
    lane.submit(running, done=on_running)
    await trio.to_thread.run_sync(started.wait, 10)

    def on_queued(result: outcome.Outcome[Any]) -> None:
        got.setdefault("queued", result)

    lane.submit(lambda: "never", done=on_queued)
    lane.close()
    queued = got["queued"]
    assert isinstance(queued, outcome.Error)
    assert isinstance(queued.error, LaneClosed)
    with pytest.raises(LaneClosed):
        lane.submit(lambda: None, done=lambda _: None)
    release.set()
    with trio.fail_after(5):
        await delivered.wait()
    assert got["running"] == outcome.Value("done")


async def test_close_does_not_wait_for_a_hung_job() -> None:
    """Closing a lane whose thread is stuck returns at once (the thread is a daemon)."""
    stuck = threading.Event()
    lane = ThreadLane("h", 1)
    lane.submit(stuck.wait, 30, done=lambda _: None)
    await trio.testing.wait_all_tasks_blocked()
    started = time.monotonic()
    lane.close()
    assert time.monotonic() - started < 1
    stuck.set()


def test_a_lane_needs_a_thread() -> None:
    """Zero threads is a programming error, caught at construction."""

    async def build() -> None:
        ThreadLane("z", 0)

    with pytest.raises(ValueError, match="at least one thread"):
        trio.run(build)


async def test_back_to_back_jobs_do_not_queue_behind_a_slow_one() -> None:
    """Two jobs submitted at once with one idle thread: the second gets its own thread.

    Both submits happen before the idle thread wakes; counting that thread for both would
    leave the second job waiting for the first, however slow it is.
    """
    release = threading.Event()
    async with open_lane("b", 2) as lane:
        assert await lane.run(lambda: "warm") == "warm"  # one thread, now idle
        second_done = trio.Event()

        async def second() -> None:
            assert await lane.run(lambda: "quick") == "quick"
            second_done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(lane.run, release.wait, 10)
            nursery.start_soon(second)
            with trio.fail_after(5):
                await second_done.wait()
            release.set()


async def test_growing_lane_runs_short_jobs_on_one_thread() -> None:
    """With grow_after, jobs that arrive while a thread works wait for it: one thread."""
    names: list[str] = []

    def job() -> None:
        names.append(threading.current_thread().name)
        time.sleep(0.001)

    async with open_lane("g", 4, grow_after=5.0) as lane, trio.open_nursery() as nursery:
        for _ in range(20):
            nursery.start_soon(lane.run, job)
    assert len(names) == 20
    assert set(names) == {"g-0"}


async def test_a_burst_longer_than_grow_after_stays_on_the_thread_that_keeps_up() -> None:
    """300 short jobs at once take three times grow_after on one thread; while that thread
    keeps starting them, their wait brings in no other (four threads taking turns at the
    interpreter lock made the event loop wait for it too: the ping p99 during a burst went
    from 2.8 to 8.5 ms). One more at most: a thread descheduled for all of grow_after (0.2 s)
    on a loaded machine looks stuck."""
    names: list[str] = []

    def job() -> None:
        names.append(threading.current_thread().name)
        time.sleep(0.002)

    async with (
        open_lane("k", 4, grow_after=0.2, queue=300) as lane,
        trio.open_nursery() as nursery,
    ):
        for _ in range(300):
            nursery.start_soon(lane.run, job)
    assert len(names) == 300
    assert len(set(names)) <= 2, sorted(set(names))


async def test_a_key_stuck_behind_its_slow_job_is_not_held_up_by_another_keys_stream() -> None:
    """Store a's search hangs (a writer's lock) while store b's short searches keep another
    thread finishing one every 2 ms for half a second: a's next search brings in a thread
    once it has waited grow_after (b's searches finishing says nothing about a's), rather
    than waiting for b's stream to end."""
    hang = threading.Event()
    async with open_lane("s", 4, grow_after=0.01, spare=2) as lane, trio.open_nursery() as n:
        n.start_soon(partial(lane.run, hang.wait, 10, key="a"))
        await trio.sleep(0.002)
        n.start_soon(partial(lane.run, time.sleep, 0.006, key="b"))  # b's own thread
        await trio.sleep(0.013)

        async def stream() -> None:
            end = trio.current_time() + 0.5
            while trio.current_time() < end:
                n.start_soon(partial(lane.run, time.sleep, 0.002, key="b"))
                await trio.sleep(0.0015)

        n.start_soon(stream)
        await trio.sleep(0.05)
        asked = trio.current_time()
        await lane.run(lambda: None, key="a")
        waited = trio.current_time() - asked
        hang.set()
    assert waited < 0.2, waited


async def test_growing_lane_lets_a_job_past_a_slow_one() -> None:
    """A job stuck behind a slow one gets its own thread once it has waited grow_after."""
    release = threading.Event()
    async with open_lane("s", 2, grow_after=0.05) as lane:
        quick_done = trio.Event()

        async def quick() -> None:
            assert await lane.run(lambda: threading.current_thread().name) == "s-1"
            quick_done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(lane.run, release.wait, 10)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(quick)
            with trio.fail_after(5):
                await quick_done.wait()
            assert not release.is_set()
            release.set()


async def test_growing_lane_never_exceeds_its_threads(clock: trio.testing.MockClock) -> None:
    """With one thread, the job behind a slow one waits for it, however long."""
    release = threading.Event()
    order: list[str] = []

    def slow() -> None:
        release.wait(10)
        order.append("slow")

    async with open_lane("m", 1, grow_after=0.01) as lane, trio.open_nursery() as nursery:
        nursery.start_soon(lane.run, slow)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(lane.run, order.append, "next")
        await trio.sleep(0.1)  # virtual: ten times grow_after, and the lane decided in-loop
        assert lane.threads == 1
        assert order == []
        release.set()
    assert order == ["slow", "next"]


async def test_each_job_that_waited_grow_after_brings_in_a_thread_for_itself(
    autojump_clock: trio.testing.MockClock, held_clock: HeldClock
) -> None:
    """Two jobs queued together behind a busy thread: the thread that the later one's wait
    brings in runs the later one, not the queue's head (a hung job here), and the head's own
    wait brings in another; no job that waited grow_after is left waiting behind a hang."""
    release = Hang(held_clock)
    hung: list[str] = []

    def hang() -> str:
        hung.append(threading.current_thread().name)
        release.wait()
        return "hung"

    done: dict[str, tuple[float, str]] = {}

    async def run(name: str, job: Callable[[], str]) -> None:
        result = await lane.run(job)
        done[name] = (trio.current_time(), result)

    async with open_lane("g", 3, grow_after=0.01) as lane, trio.open_nursery() as nursery:
        for name, job in (("busy", hang), ("ahead", hang), ("behind", lambda: "behind")):
            nursery.start_soon(run, name, job)
            await trio.testing.wait_all_tasks_blocked()  # queued in this order
            if name == "busy":
                # Started before the others arrive: a job of their key starting during
                # their wait would have them wait another grow_after (the lane's policy).
                while not hung:
                    await trio.to_thread.run_sync(time.sleep, 0.001)
        # trio wakes tasks whose deadlines fall together in no fixed order: here the later
        # job's wait ends first.
        await trio.sleep(1.0)
        assert done["behind"][1] == "behind"
        assert done["behind"][0] == pytest.approx(0.01)
        await trio.sleep(2.0)
        assert "ahead" not in done
        assert len(hung) == 2  # `ahead` runs too (on the thread `behind` left idle)
        release.release()
    assert (done["ahead"][1], done["busy"][1]) == ("hung", "hung")


async def test_growing_lane_drops_a_cancelled_queued_job() -> None:
    """A queued job cancelled before it starts never runs, growing lane or not."""
    release = threading.Event()
    ran: list[str] = []
    async with open_lane("c", 1, grow_after=0.01) as lane:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lane.run, release.wait, 10)
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(0.05):
                await lane.run(ran.append, "queued")
            release.set()
        assert await lane.run(lambda: "after") == "after"
    assert ran == []


async def test_a_thread_stuck_in_an_abandoned_job_is_replaced() -> None:
    """A one-thread lane whose job hangs past its caller's deadline still serves the next job."""
    stuck = threading.Event()
    names: list[str] = []

    def hang() -> None:
        names.append(threading.current_thread().name)
        stuck.wait(30)

    async with open_lane("s", 1, replace_after=0) as lane:
        with trio.move_on_after(0.05):
            await lane.run(hang)
        assert lane.stuck == 1
        assert await lane.run(lambda: threading.current_thread().name) == "s-1"
        assert lane.threads == 1
        first = next(t for t in threading.enumerate() if t.name == "s-0")
        stuck.set()
        # The written-off thread finishes its job and leaves; it never rejoins the lane.
        await trio.to_thread.run_sync(first.join, 5)
        assert not first.is_alive()
        assert lane.stuck == 0
        assert lane.threads == 1
    assert names == ["s-0"]


async def test_replacement_waits_for_replace_after(clock: trio.testing.MockClock) -> None:
    """With replace_after, an abandoned job may still finish in its thread for that long."""
    stuck = threading.Event()
    async with open_lane("w", 1, replace_after=1.0) as lane:
        with trio.move_on_after(0.5):
            await lane.run(stuck.wait, 30)
        assert lane.stuck == 0  # abandoned, but not yet written off
        await trio.sleep(0.4)
        assert lane.stuck == 0
        await trio.sleep(0.7)
        assert lane.stuck == 1
        assert await lane.run(lambda: "next") == "next"
        stuck.set()


async def test_stuck_threads_are_bounded() -> None:
    """Beyond MAX_STUCK written-off threads the lane stops replacing them."""
    from lwc_trio.actors.lanes import MAX_STUCK

    stuck = threading.Event()
    token = trio.lowlevel.current_trio_token()
    async with open_lane("b", 1, replace_after=0) as lane:
        for round_no in range(MAX_STUCK + 2):
            began = trio.Event()

            def job(began: trio.Event = began) -> None:
                token.run_sync_soon(began.set)
                stuck.wait(30)

            async def abandon_once_running(scope: trio.CancelScope, began: trio.Event) -> None:
                await began.wait()
                scope.cancel()

            # Each job is abandoned once it runs in its thread, not after a fixed delay (on a
            # loaded machine a thread can take longer than any short delay to start). The
            # MAX_STUCK + 1st runs in a last thread that is not written off, so the next one
            # waits for a thread and is abandoned while it waits.
            running = round_no <= MAX_STUCK
            with trio.move_on_after(10 if running else 0.2) as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(abandon_once_running, scope, began)
                    await lane.run(job)
            assert began.is_set() == running, round_no
        assert lane.stuck == MAX_STUCK
        stuck.set()


async def test_a_full_lane_makes_callers_wait() -> None:
    """Jobs outstanding are bounded: threads + queue; the next caller waits for room."""
    release = threading.Event()
    started: list[int] = []

    def job(i: int) -> None:
        started.append(i)
        release.wait(10)

    async with open_lane("f", 1, queue=2) as lane:
        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(lane.run, job, i)
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(0.05) as waited:
                await lane.wait_room()
            assert waited.cancelled_caught
            release.set()
        with trio.fail_after(5):
            await lane.wait_room()
    assert sorted(started) == [0, 1, 2]


class _Payload:
    """Stands for a job's arguments and result (a query, a whole search answer)."""


@pytest.mark.parametrize("growing", [False, True])
async def test_a_finished_job_frees_its_arguments_and_result_at_once(growing: bool) -> None:
    """Once its caller has the result, nothing in the lane keeps a job's arguments or result
    alive: they are freed by reference counting, not left for the cyclic collector (whose
    passes then stall the loop, and grow with every answer waiting in a cycle)."""
    import gc
    import weakref

    refs: list[weakref.ref[_Payload]] = []

    def job(_: _Payload) -> _Payload:
        answer = _Payload()
        refs.append(weakref.ref(answer))
        return answer

    async with open_lane("t", 1, grow_after=0.01 if growing else 0) as lane:
        argument = _Payload()
        refs.append(weakref.ref(argument))
        gc.disable()
        try:
            answer = await lane.run(job, argument)
            assert answer is refs[1]()
            del argument, answer
            # trio's run loop holds the last value it resumed a task with until its next
            # step: take one.
            await trio.lowlevel.checkpoint()
            assert [ref() for ref in refs] == [None, None]
        finally:
            gc.enable()


async def test_a_free_thread_takes_the_job_of_a_key_served_longest_ago() -> None:
    """One thread, one key's jobs queued before another key's: when the thread frees, the
    other key's job goes next, not the rest of the first key's queue (round robin)."""
    release = threading.Event()
    order: list[str] = []

    def job(name: str) -> None:
        if name == "big1":
            release.wait(10)
        order.append(name)

    async with open_lane("f", 1, grow_after=0.01) as lane, trio.open_nursery() as nursery:
        for name, key in (("big1", "big"), ("big2", "big"), ("big3", "big"), ("small", "small")):
            nursery.start_soon(partial(lane.run, job, name, key=key))
            await trio.testing.wait_all_tasks_blocked()  # queued in this order
        release.set()
    assert order == ["big1", "small", "big2", "big3"]


async def test_another_keys_job_starts_on_a_spare_thread_while_one_key_takes_them_all(
    autojump_clock: trio.testing.MockClock, held_clock: HeldClock
) -> None:
    """Every thread busy with one key's hung jobs (more queued behind): a job of another key
    starts on a spare thread once it has waited grow_after, and so does the next; the spare
    thread never takes the busy key's jobs."""
    release = Hang(held_clock)
    started: list[str] = []
    done: dict[str, float] = {}

    def job(name: str) -> str:
        started.append(name)
        if name.startswith("big"):
            release.wait()
        return name

    async def run(name: str, key: str) -> None:
        assert await lane.run(job, name, key=key) == name
        done[name] = trio.current_time()

    async with open_lane("k", 2, grow_after=0.01, spare=1) as lane, trio.open_nursery() as n:
        for i in range(5):
            n.start_soon(run, f"big{i}", "big")
            await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(1.0)
        assert sorted(started) == ["big0", "big1"]  # the other three wait for these
        n.start_soon(run, "small1", "small")
        await trio.sleep(1.0)
        n.start_soon(run, "small2", "small")
        await trio.sleep(1.0)
        assert done == {"small1": pytest.approx(1.01), "small2": pytest.approx(2.01)}
        assert sorted(started) == ["big0", "big1", "small1", "small2"]
        assert lane.threads == 3
        release.release()
    assert sorted(done) == ["big0", "big1", "big2", "big3", "big4", "small1", "small2"]
