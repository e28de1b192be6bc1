"""The fault matrix's cases: what each one injects, what it must answer, and one run of it."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from benchmarks import procstats
from benchmarks.fixtures import BINARY_ENV, Fixture, Log
from benchmarks.messages import initialize, ping, tool_call
from benchmarks.stats import median, ms
from benchmarks.stdio import StdioClient

MEMORY_TIMEOUT = 1.0
CODE_TIMEOUT = 2.0
"""The matrix's code deadline by default (`--code-timeout`): a fresh CodeGraph child answers
its first call in about 1.9 s on the 2-core machine, so a loaded one may miss it."""
DELAYS = {"memory": 0.5, "code": 1.0}
HEALTHY_MARGIN_MS = 50.0
PING_LIMIT_MS = 5.0
PING_EVERY = 0.010
QUERY = "cancel scope deadline timeout"
PLANE_KEY = {"memory": "memory", "code": "codeGraph"}
TIMING_KEY = {"memory": "memoryMs", "code": "codeMs"}
FAULTS = ("hang", "raise", "crash", "delay", "garbage")
CHILD_CASES = ("sigkill", "sigstop")
CHILD_KILL_AFTER = 0.05
"""SIGKILL this long after sending the call to the stopped child."""


def expected_code(plane: str, fault: str) -> str | None:
    """The faulted plane's error code (None: the normal answer)."""
    prefix = "memory" if plane == "memory" else "codegraph"
    return {
        "hang": f"{prefix}_timeout",
        "raise": f"{plane}_internal",
        "crash": f"{prefix}_crashed",
        "garbage": f"{prefix}_bad_response",
        "delay": None,
        "sigkill": "codegraph_crashed",
        "sigstop": "codegraph_timeout",
    }[fault]


def all_cases(has_code: bool) -> list[str]:
    cases = [f"{plane}:{fault}" for plane in ("memory", "code") for fault in FAULTS]
    return cases + (list(CHILD_CASES) if has_code else [])


class Workspace:
    """An existing workspace, run with the caller's own environment (`--workspace`)."""

    def __init__(self, ws: Path, has_code: bool, binary: str | None) -> None:
        self.ws = ws.resolve()
        self.has_code = has_code
        self.env = {k: v for k, v in os.environ.items() if k != "LWC_FAULTS"}
        if binary:
            self.env[BINARY_ENV] = binary
        self.lwc = [sys.executable, "-m", "lwc_trio"]

    def serve_argv(self, extra: Sequence[str] = ()) -> list[str]:
        return [*self.lwc, "serve", "--mcp", "--path", str(self.ws), *extra]


class Case:
    """One row of the matrix."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name in CHILD_CASES:
            self.plane, self.fault = "code", name
        else:
            self.plane, _, self.fault = name.partition(":")
        self.healthy = "code" if self.plane == "memory" else "memory"

    def lwc_faults(self, baseline: int) -> str | None:
        if self.fault in CHILD_CASES:
            return None
        fault = f"delay:{DELAYS[self.plane]:g}" if self.fault == "delay" else self.fault
        return f"{self.plane}=delay:0*{baseline};{self.plane}={fault}*1"

    def label(self) -> str:
        if self.fault == "sigkill":
            return "SIGKILL CodeGraph child mid-call"
        if self.fault == "sigstop":
            return "SIGSTOP CodeGraph child mid-call"
        fault = f"delay:{DELAYS[self.plane]:g}" if self.fault == "delay" else self.fault
        return f"LWC_FAULTS {self.plane}={fault}"


def alone_matches(healthy: Any, reference: Any, plane: str) -> bool:
    """Is `healthy` the baseline answer of `plane`, given the room the faulted plane left?

    In mode all the planes share one budget and a plane that is not ready leaves its share to
    the other (SPEC §2), so the healthy plane may say more than in the baseline, never other:
    memory keeps its results, stores and its baseline Pages in order (more Pages or passages
    may come); the code text is the baseline's text or goes on from it.
    """
    if not isinstance(healthy, dict) or not isinstance(reference, dict):
        return False
    if healthy == reference:
        return True
    if healthy.get("state") != "ready" or reference.get("state") != "ready":
        return False
    if plane == "code":
        return str(healthy.get("text", "")).startswith(str(reference.get("text", "")))
    slugs = [page.get("slug") for page in healthy.get("pages", [])]
    wanted = [page.get("slug") for page in reference.get("pages", [])]
    return (
        healthy.get("results") == reference.get("results")
        and healthy.get("stores") == reference.get("stores")
        and slugs[: len(wanted)] == wanted
    )


def plane_code(obj: Any) -> str:
    """`ready`, `unavailable:<code>` or the error code of a plane object."""
    if not isinstance(obj, dict):
        return "?"
    if obj.get("state") == "error":
        return str(obj.get("error", {}).get("code"))
    if obj.get("state") == "unavailable":
        return f"unavailable:{obj.get('error', {}).get('code')}"
    return str(obj.get("state"))


async def run_case(
    case: Case,
    fx: Fixture | Workspace,
    baseline_calls: int,
    query: str,
    log: Log | None,
    code_timeout: float = CODE_TIMEOUT,
) -> dict[str, Any]:
    env = dict(fx.env)
    spec = case.lwc_faults(baseline_calls)
    if spec:
        env["LWC_FAULTS"] = spec
    argv = fx.serve_argv(
        ["--memory-timeout", f"{MEMORY_TIMEOUT:g}", "--code-timeout", f"{code_timeout:g}"]
    )
    deadlines = {"memory": MEMORY_TIMEOUT, "code": code_timeout}
    row: dict[str, Any] = {"case": case.name, "label": case.label(), "problems": []}
    problems: list[str] = row["problems"]
    args = {"query": query, "projectPath": str(fx.ws), "mode": "all"}
    next_id = 100

    async with trio.open_nursery() as nursery:
        client = await StdioClient.start(nursery, argv, env, fx.ws)
        try:
            await client.request(initialize(1))

            async def explore() -> tuple[dict[str, Any], float]:
                nonlocal next_id
                next_id += 1
                response, took = await client.request(tool_call(next_id, args))
                sc = response.get("result", {}).get("structuredContent")
                if not isinstance(sc, dict):
                    raise RuntimeError(f"no result: {str(response)[:300]}")
                return sc, took

            # 1. baseline (the first call is cold: it starts the CodeGraph child)
            base: list[dict[str, Any]] = []
            for _ in range(baseline_calls):
                sc, _took = await explore()
                base.append(sc)
            reference = {p: base[-1][PLANE_KEY[p]] for p in ("memory", "code")}
            for sc in base[1:]:
                problems.extend(
                    f"baseline {p} answers differ"
                    for p in ("memory", "code")
                    if sc[PLANE_KEY[p]] != reference[p]
                )
            if plane_code(reference["memory"]) != "ready":
                problems.append(f"baseline memory not ready: {plane_code(reference['memory'])}")
            if fx.has_code and plane_code(reference["code"]) != "ready":
                problems.append(f"baseline code not ready: {plane_code(reference['code'])}")
            healthy_base = [sc["timings"][TIMING_KEY[case.healthy]] for sc in base[1:]]
            row["healthy_baseline_ms"] = median(healthy_base)
            child_before = [c["pid"] for c in procstats.codegraph_children(client.pid)]

            # 2. the fault call, with pings every 10 ms while it is pending
            pings: list[float] = []
            done = trio.Event()
            fault_result: dict[str, Any] = {}

            async def pinger() -> None:
                nonlocal next_id
                while not done.is_set():
                    next_id += 1
                    response, took = await client.request(ping(next_id))
                    if response.get("result") != {}:
                        problems.append(f"bad ping answer {response}")
                    pings.append(took)
                    await trio.sleep(PING_EVERY)

            if case.fault in CHILD_CASES and len(child_before) != 1:
                raise RuntimeError(f"expected one CodeGraph child, saw {child_before}")

            async def fault_call() -> None:
                nonlocal next_id
                try:
                    next_id += 1
                    slot = client.expect(next_id)
                    if case.fault in CHILD_CASES:
                        # Stopped first, so the call is certainly in flight (sent, unanswered)
                        # when the child is killed or left stopped; a child that answers in a
                        # few ms would otherwise race the signal.
                        row["signalled_pid"] = pid = child_before[0]
                        os.kill(pid, signal.SIGSTOP)
                    sent = await client.send(tool_call(next_id, args))
                    if case.fault == "sigkill":
                        await trio.sleep(CHILD_KILL_AFTER)
                        if slot.event.is_set():
                            problems.append("answered although the child was stopped")
                        os.kill(pid, signal.SIGKILL)
                    response = await client.wait_slot(slot)
                    fault_result["sc"] = response["result"]["structuredContent"]
                    fault_result["took"] = slot.received - sent
                finally:
                    done.set()

            async with trio.open_nursery() as inner:
                inner.start_soon(fault_call)
                inner.start_soon(pinger)
            sc = fault_result["sc"]
            faulted, healthy = sc[PLANE_KEY[case.plane]], sc[PLANE_KEY[case.healthy]]
            row["fault_call_ms"] = ms(fault_result["took"])
            row["faulted_ms"] = sc["timings"][TIMING_KEY[case.plane]]
            row["faulted_answer"] = plane_code(faulted)
            row["healthy_ms"] = sc["timings"][TIMING_KEY[case.healthy]]
            row["healthy_limit_ms"] = deadlines[case.healthy] * 1000 + HEALTHY_MARGIN_MS
            row["ping_n"] = len(pings)
            row["ping_p50_ms"] = ms(median(pings)) if pings else None
            row["ping_max_ms"] = ms(max(pings)) if pings else None
            want = expected_code(case.plane, case.fault)
            if want is None:
                if faulted != reference[case.plane]:
                    problems.append(f"delayed {case.plane} answer differs from its baseline")
                delay_ms = DELAYS[case.plane] * 1000
                if row["faulted_ms"] < delay_ms:
                    problems.append(f"delay answered after {row['faulted_ms']} ms < {delay_ms}")
            elif row["faulted_answer"] != want:
                problems.append(f"faulted plane answered {row['faulted_answer']}, want {want}")
            if not alone_matches(healthy, reference[case.healthy], case.healthy):
                problems.append(f"healthy {case.healthy} answer differs from its baseline")
            ready = sum(obj.get("state") == "ready" for obj in (faulted, healthy))
            if sc.get("partial") is not (ready == 1):
                problems.append(f"partial is {sc.get('partial')!r} with {ready} plane(s) ready")

            # 3. recovery: the very next call
            rec, took = await explore()
            row["recovery_ms"] = ms(took)
            row["recovered"] = all(rec[PLANE_KEY[p]] == reference[p] for p in ("memory", "code"))
            if not row["recovered"]:
                got = {p: plane_code(rec[PLANE_KEY[p]]) for p in ("memory", "code")}
                problems.append(f"next call did not recover: {got}")
            children = procstats.codegraph_children(client.pid)
            row["children_after"] = len(children)
            if fx.has_code and len(children) != 1:
                problems.append(f"{len(children)} CodeGraph children after recovery")
            if case.fault in CHILD_CASES:
                stat = procstats.stat(row["signalled_pid"])
                if stat is not None:
                    problems.append(f"signalled child {row['signalled_pid']} still there: {stat}")
            pgids = {c["pid"] for c in children} | set(child_before)
            row["exit_code"] = await client.finish()
            left = await procstats.groups_after_exit(pgids)
            row["left_live"] = left["live"]
            if row["exit_code"] != 0:
                problems.append(f"exit code {row['exit_code']}")
            if left["live"] or left["gone_s"] is None:
                problems.append(f"CodeGraph processes left after exit: {left}")
            # Only the start-up announcement of LWC_FAULTS may reach stderr.
            stray = [
                ln
                for ln in bytes(client.stderr).splitlines()
                if ln.strip() and not (spec and ln.startswith(b"lwc: LWC_FAULTS active"))
            ]
            if stray:
                problems.append(f"unexpected stderr: {stray[:2]}")
        finally:
            client.kill()
            with trio.move_on_after(5):
                await client.wait()
            nursery.cancel_scope.cancel()

    row["behaviour_ok"] = not problems
    row["healthy_ok"] = row["healthy_ms"] <= row["healthy_limit_ms"]
    row["ping_ok"] = row["ping_max_ms"] is not None and row["ping_max_ms"] < PING_LIMIT_MS
    row["recovery_ok"] = bool(row["recovered"])
    row["pass"] = row["behaviour_ok"] and row["healthy_ok"] and row["ping_ok"]
    if log:
        log(
            f"{case.name}: {row['faulted_answer']} after {row['faulted_ms']} ms, healthy "
            f"{row['healthy_ms']} ms, ping max {row['ping_max_ms']} ms, "
            f"{'PASS' if row['pass'] else 'FAIL'} {problems}"
        )
    return row
