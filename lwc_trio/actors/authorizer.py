"""The authorizer actor: applies SPEC §3 to every projectPath, off the event loop.

Path checks stat the filesystem (which can block on a slow mount), so they run on the
authorizer's own thread lane; the actor only moves jobs in and answers out, and a hung
check holds up one lane thread, never the loop (`ping` keeps being answered).
"""

from __future__ import annotations

import contextlib
import logging
from functools import partial
from pathlib import Path
from typing import Any, Final

import attrs
import outcome
import trio

from lwc_trio.actors.lanes import LaneClosed, open_lane
from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import PathRuleError
from lwc_trio.paths import authorize_project_path

log = logging.getLogger("lwc.authorizer")

MAILBOX_SIZE: Final = 64
THREADS: Final = 2
"""Path checks at once. Each takes microseconds unless a mount hangs; more threads than
the machine's cores only add contention for the interpreter lock."""


@attrs.define(eq=False)
class AuthJob:
    raw: str
    reply: trio.MemorySendChannel[Path | PathRuleError]


@attrs.define(eq=False)
class Authorizer:
    """Owns the path rules for one workspace."""

    config: ServerConfig
    inbox: trio.MemoryReceiveChannel[AuthJob]

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve jobs until cancelled."""
        async with open_lane("lwc-auth", THREADS) as lane:
            task_status.started()
            while True:
                job = await self.inbox.receive()
                try:
                    lane.submit(
                        authorize_project_path,
                        job.raw,
                        self.config.workspace,
                        self.config.env,
                        done=partial(_reply, job),
                    )
                except LaneClosed:  # pragma: no cover - the lane closes only as run() ends
                    job.reply.close()


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
        answer = PathRuleError("invalid_project_path", "projectPath could not be checked")
    # The request may have given up (cancelled) and closed its end; then nobody listens.
    with job.reply, contextlib.suppress(trio.BrokenResourceError, trio.WouldBlock):
        job.reply.send_nowait(answer)


async def authorize(mailbox: trio.MemorySendChannel[AuthJob], raw: str) -> Path:
    """Ask the authorizer about `raw`.

    Raises:
        PathRuleError: the path broke a rule (code says which).
    """
    reply_send, reply_recv = trio.open_memory_channel[Path | PathRuleError](1)
    async with reply_recv:
        await mailbox.send(AuthJob(raw, reply_send))
        try:
            answer = await reply_recv.receive()
        except trio.EndOfChannel:
            raise PathRuleError(
                "invalid_project_path", "projectPath could not be checked; try again"
            ) from None
    if isinstance(answer, PathRuleError):
        raise answer
    return answer
