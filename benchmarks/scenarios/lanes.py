"""Thread round trips: `trio.to_thread.run_sync` against the server's thread lanes.

Every tool call makes two trips from the event loop to a worker thread and back (the path
check, the memory search). This measures one such trip, in one run, three ways:

* to_thread - `trio.to_thread.run_sync(fn, limiter=CapacityLimiter(N))`, what the server used
              before `lwc_trio/actors/lanes.py`;
* lane      - `ThreadLane(name, N).run(fn)`, what it uses now;
* inline    - `fn()` on the loop plus one checkpoint: the floor, no thread at all,

for a no-op job and for a job of about 50 µs of Python, (1) one call at a time (latency and
the event loop thread's own CPU per call, `time.thread_time()`), and (2) 200 calls started at
once (wall time until all are back), with N = 1 and 4 threads.

    scripts/bench lanes            # the run recorded in docs/benchmarks.md
    scripts/bench lanes --quick    # a second or two
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

import trio

from benchmarks.stats import median
from benchmarks.table import loadavg, markdown_table
from lwc_trio.actors.lanes import ThreadLane

BURST: Final = 200


def noop() -> int:
    return 0


def work() -> int:
    """About 50 µs of pure Python on the development machine."""
    total = 0
    for i in range(1500):
        total += i
    return total


Runner = Callable[[Callable[[], int]], Awaitable[int]]


def _runners(threads: int) -> tuple[dict[str, Runner], ThreadLane]:
    limiter = trio.CapacityLimiter(threads)
    lane = ThreadLane("bench", threads)

    async def to_thread(fn: Callable[[], int]) -> int:
        return await trio.to_thread.run_sync(fn, limiter=limiter)

    async def inline(fn: Callable[[], int]) -> int:
        value = fn()
        await trio.lowlevel.checkpoint()
        return value

    return {"to_thread": to_thread, "lane": lane.run, "inline": inline}, lane


async def _sequential(run: Runner, fn: Callable[[], int], calls: int) -> tuple[float, float]:
    for _ in range(calls // 10):  # warm-up: threads started, caches filled
        await run(fn)
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(calls):
        await run(fn)
    return (
        (time.perf_counter() - wall) / calls * 1e6,
        (time.thread_time() - cpu) / calls * 1e6,
    )


async def _burst(run: Runner, fn: Callable[[], int], bursts: int) -> float:
    times = []
    for _ in range(bursts):
        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(BURST):
                nursery.start_soon(run, fn)
        times.append((time.perf_counter() - started) * 1000)
    return median(times)


async def run(calls: int, bursts: int) -> None:
    rows = []
    for threads in (1, 4):
        runners, lane = _runners(threads)
        try:
            for job in (noop, work):
                for name, runner in runners.items():
                    if name == "inline" and threads != 1:
                        continue
                    latency, cpu = await _sequential(runner, job, calls)
                    burst = await _burst(runner, job, bursts)
                    label = name if name == "inline" else f"{name}, {threads} thread(s)"
                    rows.append(
                        (job.__name__, label, f"{latency:.1f}", f"{cpu:.1f}", f"{burst:.1f}")
                    )
        finally:
            lane.close()
    print(f"one call at a time: {calls} calls; bursts: median of {bursts} × {BURST} calls")
    print()
    headers = ["job", "how", "latency µs", "loop-thread CPU µs", "200-call burst ms"]
    print(markdown_table(headers, rows, align="llrrr"))
    print()
    print(f"load average at the end: {loadavg()}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a second or two")
    args = parser.parse_args(argv)
    trio.run(run, 300 if args.quick else 3000, 2 if args.quick else 9)
    return 0
