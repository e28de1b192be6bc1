"""The soak's verdicts: resource growth, leaks, the CodeGraph child, correctness, exit."""

from __future__ import annotations

from typing import Any, Final

from benchmarks.scenarios.soak_workload import Soak

RSS_LIMIT_MB: Final = 10.0
FD_TOLERANCE: Final = 2
THREAD_TOLERANCE: Final = 2
FDS_PER_THREAD: Final = 1
"""Descriptors a memory-lane thread may hold for the soak's one store: its pooled read
connection (the lane keeps one per thread and store; no other thread opens any)."""


def thread_ceiling(has_code: bool) -> int:
    """The server's threads by design: the main thread, the memory lane's threads and its
    spare ones, the authorizer's and the code plane's lanes, and, with CodeGraph, the thread
    trio spawns the child from. A lane thread replaced while its abandoned call still runs
    (`lanes`: stuck threads) lingers until the call returns, and counts like any other."""
    from lwc_trio.actors.authorizer import THREADS  # from --source when given (see main)
    from lwc_trio.actors.planes import CODE_FS_THREADS, MEMORY_SPARE, MEMORY_THREADS

    return 1 + MEMORY_THREADS + MEMORY_SPARE + THREADS + CODE_FS_THREADS + int(has_code)


# -- verdicts --------------------------------------------------------------------------------


def verdicts(
    samples: list[dict[str, Any]], warmup_calls: int, soak: Soak, exit_info: dict[str, Any]
) -> list[dict[str, Any]]:
    warm_idx = next(
        (i for i, s in enumerate(samples) if s["calls"] >= warmup_calls), len(samples) - 1
    )
    warm = samples[warm_idx]
    after = samples[warm_idx:]
    out = []
    growth = after[-1]["rss_mb"] - warm["rss_mb"]
    peak = max(s["rss_mb"] for s in after) - warm["rss_mb"]
    # A leak keeps growing; a warm-up plateau does not: show the second half on its own.
    second_half = after[-1]["rss_mb"] - after[len(after) // 2]["rss_mb"]
    out.append(
        {
            "resource": "RSS",
            "measured": f"{warm['rss_mb']:.1f} → {after[-1]['rss_mb']:.1f} MB "
            f"(growth {growth:+.1f}, peak {peak:+.1f}, 2nd half {second_half:+.1f})",
            "target": f"growth < {RSS_LIMIT_MB:g} MB after warm-up",
            "pass": growth < RSS_LIMIT_MB,
        }
    )
    ceiling = thread_ceiling(soak.fx.has_code)
    fds = [s["fds"] for s in after]
    warm_fds = max(s["fds"] for s in samples[1 : warm_idx + 1] or samples)
    # Each memory-lane thread keeps a pooled connection to the store, so the descriptors
    # follow those threads: under load the lane brings in its spare threads, late in a run
    # as well as early. A leak is what they do not explain and keeps growing: the second
    # half's descriptors beyond one per memory-lane thread (the OS names them, `procstats`)
    # may not exceed the first half's.
    excess = [s["fds"] - FDS_PER_THREAD * s["memory_threads"] for s in after]
    fd_ceiling = warm_fds + FD_TOLERANCE + FDS_PER_THREAD * (ceiling - 1)
    first_half, second_half = excess[: max(1, len(excess) // 2)], excess[len(excess) // 2 :]
    out.append(
        {
            "resource": "open fds",
            "measured": f"≤ {warm_fds} during warm-up, {min(fds)}–{max(fds)} after; beyond "
            f"{FDS_PER_THREAD} a memory-lane thread: 1st half ≤ {max(first_half)}, 2nd half ≤ "
            f"{max(second_half)}",
            "target": f"≤ {fd_ceiling} (a pooled connection per reader thread); beyond the "
            f"memory lane's share, 2nd half ≤ 1st half peak + {FD_TOLERANCE}",
            "pass": max(fds) <= fd_ceiling and max(second_half) <= max(first_half) + FD_TOLERANCE,
        }
    )
    warm_threads = max(s["threads"] for s in samples[: warm_idx + 1])
    threads = [s["threads"] for s in after]
    # The memory lane's spare threads join under load, late as well as early; every other
    # thread's count may not grow from the first half to the second.
    others = [s["threads"] - s["memory_threads"] for s in after]
    half = max(1, len(others) // 2)
    out.append(
        {
            "resource": "threads",
            "measured": f"≤ {warm_threads} during warm-up, {min(threads)}–{max(threads)} after "
            f"(design ceiling {ceiling}); outside the memory lane 1st half ≤ "
            f"{max(others[:half])}, 2nd half ≤ {max(others[len(others) // 2 :])}",
            "target": f"≤ ceiling; outside the memory lane, 2nd half ≤ 1st half peak + "
            f"{THREAD_TOLERANCE}",
            "pass": max(threads) <= ceiling
            and max(others[len(others) // 2 :]) <= max(others[:half]) + THREAD_TOLERANCE,
        }
    )
    if soak.fx.has_code:
        first = soak.first_code_call or 0
        cg = [s for s in samples if s["calls"] > first]
        pids = {pid for s in cg for pid in s["codegraph_pids"]}
        counts = sorted({s["codegraph"] for s in cg})
        out.append(
            {
                "resource": "CodeGraph child",
                "measured": f"count per sample {counts}, {len(pids)} distinct pid(s)",
                "target": "exactly 1, same pid",
                "pass": counts == [1] and len(pids) == 1,
            }
        )
    zombies = max(s["zombies"] for s in samples)
    out.append(
        {
            "resource": "zombies",
            "measured": str(zombies),
            "target": "0",
            "pass": zombies == 0,
        }
    )
    c = soak.checker
    out.append(
        {
            "resource": "correctness",
            "measured": f"{c.checked} responses checked, {c.error_count} failures",
            "target": "0 failures",
            "pass": c.error_count == 0,
        }
    )
    gone = exit_info["gone_s"]
    out.append(
        {
            "resource": "exit",
            "measured": f"exit {exit_info['code']}, {exit_info['live']} live process(es) left, "
            f"CodeGraph group gone after {'—' if gone is None else f'{gone:g} s'}, "
            f"stderr {exit_info['stderr_bytes']} B",
            "target": "0, none left, empty stderr",
            "pass": exit_info["code"] == 0
            and exit_info["live"] == 0
            and gone is not None
            and exit_info["stderr_bytes"] == 0,
        }
    )
    return out
