"""The authorizer actor: applies SPEC §3 to every projectPath, off the event loop.

Path checks stat the filesystem (which can block on a slow mount), so each
check runs in a worker thread under a small limiter; the actor itself only
moves jobs and replies.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Final

import attrs
import trio

from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import PathRuleError
from lwc_trio.paths import authorize_project_path

MAILBOX_SIZE: Final = 64
THREADS: Final = 4


@attrs.define(eq=False)
class AuthJob:
    raw: str
    reply: trio.MemorySendChannel[Path | PathRuleError]


@attrs.define(eq=False)
class Authorizer:
    """Owns the path rules for one workspace."""

    config: ServerConfig
    inbox: trio.MemoryReceiveChannel[AuthJob]
    _limiter: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(THREADS))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve jobs until cancelled."""
        async with trio.open_nursery() as nursery:
            task_status.started()
            while True:
                job = await self.inbox.receive()
                nursery.start_soon(self._check, job)

    async def _check(self, job: AuthJob) -> None:
        async with job.reply:
            try:
                answer: Path | PathRuleError = await trio.to_thread.run_sync(
                    authorize_project_path,
                    job.raw,
                    self.config.workspace,
                    self.config.env,
                    limiter=self._limiter,
                    abandon_on_cancel=True,
                )
            except PathRuleError as exc:
                answer = exc
            with contextlib.suppress(trio.BrokenResourceError, trio.WouldBlock):
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
