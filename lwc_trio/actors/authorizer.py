"""The authorizer actor: applies SPEC §3 to every projectPath, off the event loop.

Path checks stat the filesystem (which can block on a dead mount), so they run on the
authorizer's own thread lane; the actor only moves jobs in and answers out. The caller
bounds its wait (the pipeline's 2 s deadline) and, when it gives up, abandons its job: a
check still running then is written off by the lane and its thread replaced, so a hung
check occupies one thread and never the lane's capacity (SPEC §3).

`LWC_FAULTS` `auth=` entries apply here: `hang` parks a real lane thread (as a dead mount
would) until the server stops, `raise` fails the check, `delay:S` starts it S seconds late.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Final

import attrs
import outcome
import trio

from lwc_trio.actors.lanes import ThreadLane, open_lane
from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import LaneClosed, PathRuleError
from lwc_trio.faults import Fault, FaultPlan
from lwc_trio.paths import authorize_project_path

log = logging.getLogger("lwc.authorizer")

MAILBOX_SIZE: Final = 64
THREADS: Final = 2
"""Path checks at once. Each takes microseconds unless a mount hangs; more threads than
the machine's cores only add contention for the interpreter lock."""
REPLACE_AFTER: Final = 0.0
"""A check is abandoned only at its deadline: a thread still in it then is stuck."""


def _could_not_check() -> PathRuleError:
    return PathRuleError("invalid_project_path", "projectPath could not be checked")


@attrs.define(eq=False)
class AuthJob:
    """One path check; `given_up` and `abandon` let the asker walk away at its deadline."""

    raw: str
    reply: trio.MemorySendChannel[Path | PathRuleError]
    abandon: Callable[[], None] | None = None
    given_up: bool = False


@attrs.define(eq=False)
class Authorizer:
    """Owns the path rules for one workspace."""

    config: ServerConfig
    inbox: trio.MemoryReceiveChannel[AuthJob]
    faults: FaultPlan = attrs.field(factory=FaultPlan)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve jobs until cancelled."""
        hung = threading.Event()  # what `auth=hang` threads wait on; set as the actor ends
        try:
            async with (
                open_lane(
                    "lwc-auth", THREADS, replace_after=REPLACE_AFTER, queue=MAILBOX_SIZE
                ) as lane,
                trio.open_nursery() as nursery,
            ):
                task_status.started()
                while True:
                    job = await self.inbox.receive()
                    if job.given_up:
                        continue
                    fault = self.faults.next("auth")
                    if fault is None:
                        # Waits while the lane is full: the mailbox, then its senders, wait.
                        await lane.wait_room()
                        self._check(lane, job, authorize_project_path)
                    else:
                        nursery.start_soon(self._faulty, lane, job, fault, hung)
        finally:
            hung.set()

    def _check(self, lane: ThreadLane, job: AuthJob, check: Callable[..., Path]) -> None:
        if job.given_up:
            return
        try:
            job.abandon = lane.submit(
                check, job.raw, self.config.workspace, self.config.env, done=partial(_reply, job)
            )
        except LaneClosed:  # pragma: no cover - the lane closes only as run() ends
            job.reply.close()

    async def _faulty(
        self, lane: ThreadLane, job: AuthJob, fault: Fault, hung: threading.Event
    ) -> None:
        if fault.kind == "raise":
            _send(job, _could_not_check())
            return
        if fault.kind == "delay":
            await trio.sleep(fault.delay)
            check: Callable[..., Path] = authorize_project_path
        else:  # hang: a thread blocked for good, as on a dead mount

            def check(*_: Any) -> Path:
                hung.wait()
                raise _could_not_check()

        await lane.wait_room()
        self._check(lane, job, check)


def _reply(job: AuthJob, result: outcome.Outcome[Any]) -> None:
    """Runs in the trio thread when the check is done; never raises."""
    try:
        answer: Path | PathRuleError = result.unwrap()
    except PathRuleError as exc:
        answer = exc
    except LaneClosed:
        # Shutting down: whoever still waits learns the check could not be made.
        job.reply.close()
        return
    except Exception:
        log.exception("path check failed")
        answer = _could_not_check()
    _send(job, answer)


def _send(job: AuthJob, answer: Path | PathRuleError) -> None:
    # The request may have given up and closed its end; then nobody listens.
    with job.reply, contextlib.suppress(trio.BrokenResourceError, trio.WouldBlock):
        job.reply.send_nowait(answer)


async def authorize(mailbox: trio.MemorySendChannel[AuthJob], raw: str) -> Path:
    """Ask the authorizer about `raw`; the caller sets the deadline.

    However the wait ends (answer, deadline, cancellation), a job still waiting or running
    is abandoned, so the authorizer never works for a caller that has gone.

    Raises:
        PathRuleError: the path broke a rule (code says which), or it could not be checked.
    """
    reply_send, reply_recv = trio.open_memory_channel[Path | PathRuleError](1)
    job = AuthJob(raw, reply_send)
    answer: Path | PathRuleError | None = None
    try:
        async with reply_recv:
            await mailbox.send(job)
            try:
                answer = await reply_recv.receive()
            except trio.EndOfChannel:
                raise PathRuleError(
                    "invalid_project_path", "projectPath could not be checked; try again"
                ) from None
    finally:
        if answer is None:
            job.given_up = True
            if job.abandon is not None:
                job.abandon()
    if isinstance(answer, PathRuleError):
        raise answer
    return answer
