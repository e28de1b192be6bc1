"""The path check (SPEC §3): the rules for each call, its faults, and the authorizer lane.

Every `lwc_explore` call draws one `PathCheck` from `PathChecks` as its path-check step
starts: the rules bound to the workspace, with that call's `LWC_FAULTS` `auth=` entry
applied (`hang` blocks a real lane thread, as a dead mount would, until the server stops;
`raise` fails the check; `delay:S` starts it S seconds late). The authorizer runs every
call's check, in every mode, faults or not, so fault-injection runs take the path
production takes.

Path checks stat the filesystem (which can block on a dead mount), so they run on a thread
lane; the caller bounds its wait (the pipeline's 2 s deadline) and, when it gives up,
abandons its job: a check still running then is written off by the lane and its thread
replaced, so a hung check occupies one thread and never the lane's capacity (SPEC §3).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Final

import attrs
import outcome
import trio

from lwc_trio.actors import channels
from lwc_trio.actors.lanes import ThreadLane, open_lane
from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import LaneClosed, PathRuleError
from lwc_trio.faults import FaultPlan
from lwc_trio.paths import authorize_project_path

log = logging.getLogger("lwc.authorizer")

MAILBOX_SIZE: Final = 64
THREADS: Final = 2
"""Path checks at once. Each takes microseconds unless a mount hangs; more threads than
the machine's cores only add contention for the interpreter lock."""
REPLACE_AFTER: Final = 0.0
"""A check is abandoned only at its deadline: a thread still in it then is stuck."""

Rules = Callable[[str], Path]
"""SPEC §3 for one raw projectPath: the canonical directory, or `PathRuleError`."""


def could_not_check() -> PathRuleError:
    return PathRuleError("invalid_project_path", "projectPath could not be checked")


@attrs.frozen
class PathCheck:
    """One call's path check: `rules` to run on a lane thread, `delay` seconds after its
    deadline starts (an `auth=delay:S` fault; 0 otherwise)."""

    rules: Rules
    delay: float = 0.0


@attrs.define(eq=False)
class PathChecks:
    """Hands each call its `PathCheck`, with the `auth=` fault script applied in call order."""

    config: ServerConfig
    faults: FaultPlan = attrs.field(factory=FaultPlan)
    rules: Rules = attrs.field(
        default=attrs.Factory(
            lambda self: partial(
                authorize_project_path, workspace=self.config.workspace, env=self.config.env
            ),
            takes_self=True,
        )
    )
    """The rules without faults; by default `authorize_project_path` in the workspace."""
    hung: threading.Event = attrs.field(factory=threading.Event)
    """What `auth=hang` checks wait on; set as the services stop, so those threads end."""

    def draw(self) -> PathCheck:
        """The next call's check (consumes one `auth=` fault, if any is scripted)."""
        rules = self.rules
        fault = self.faults.next("auth")
        if fault is None:
            return PathCheck(rules)
        if fault.kind == "raise":
            return PathCheck(_raising)
        if fault.kind == "delay":
            return PathCheck(rules, fault.delay)
        return PathCheck(partial(_hanging, self.hung))


def _raising(_: str) -> Path:
    raise could_not_check()


def _hanging(hung: threading.Event, _: str) -> Path:
    hung.wait()  # a thread blocked for good, as on a dead mount
    raise could_not_check()


@attrs.define(eq=False)
class AuthJob:
    """One path check; `given_up` and `abandon` let the asker walk away at its deadline."""

    raw: str
    rules: Rules
    reply: trio.MemorySendChannel[Path | PathRuleError]
    abandon: Callable[[], None] | None = None
    given_up: bool = False


@attrs.define(eq=False)
class Authorizer:
    """Runs every call's path check on its own thread lane."""

    inbox: trio.MemoryReceiveChannel[AuthJob]

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve jobs until cancelled."""
        async with open_lane(
            "lwc-auth", THREADS, replace_after=REPLACE_AFTER, queue=MAILBOX_SIZE
        ) as lane:
            task_status.started()
            while True:
                job: AuthJob | None = await self.inbox.receive()
                while job is not None:  # every job that arrived together, in one turn
                    # Waits while the lane is full: the mailbox, then its senders, wait.
                    await lane.wait_room()
                    self._check(lane, job)
                    job = channels.receive_ready(self.inbox)

    def _check(self, lane: ThreadLane, job: AuthJob) -> None:
        if job.given_up:
            return
        try:
            job.abandon = lane.submit(job.rules, job.raw, done=partial(_reply, job))
        except LaneClosed:  # pragma: no cover - the lane closes only as run() ends
            job.reply.close()


def _reply(job: AuthJob, result: outcome.Outcome[Path]) -> None:
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
        answer = could_not_check()
    # The request may have given up and closed its end; then nobody listens.
    with job.reply, contextlib.suppress(trio.BrokenResourceError, trio.WouldBlock):
        job.reply.send_nowait(answer)


async def authorize(mailbox: trio.MemorySendChannel[AuthJob], raw: str, rules: Rules) -> Path:
    """Run `rules(raw)` on the authorizer; the caller sets the deadline.

    However the wait ends (answer, deadline, cancellation), a job still waiting or running
    is abandoned, so the authorizer never works for a caller that has gone.

    Raises:
        PathRuleError: the path broke a rule (code says which), or it could not be checked.
    """
    reply_send, reply_recv = trio.open_memory_channel[Path | PathRuleError](1)
    job = AuthJob(raw, rules, reply_send)
    answer: Path | PathRuleError | None = None
    try:
        with reply_recv:  # a sync close: no trip through the loop
            await channels.send(mailbox, job)
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
