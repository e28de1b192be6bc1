"""The supervisor: the long-lived services every transport shares, and their restarts.

`Services` runs the authorizer and both plane workers (each under a loop that
restarts it whenever it dies; its mailbox outlives it, so queued jobs wait for
the new worker) and hands out the `Explorer` that reaches them. The transports
(`serve_stdio` in `actors/stdio.py`, `serve_http` in `actors/http.py`) compose a
session around it.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Final

import attrs
import trio

from lwc_trio.actors.authorizer import AuthJob, Authorizer, PathChecks
from lwc_trio.actors.explore import Explorer
from lwc_trio.actors.planes import (
    MAILBOX_SIZE,
    EngineFactory,
    PlaneJob,
    PlaneWorker,
    code_engine,
    memory_engine,
    plane_clients,
)
from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import WorkerCrashed
from lwc_trio.faults import FaultPlan

if TYPE_CHECKING:
    from lwc_trio.codegraph.plane import CodeQuery
    from lwc_trio.memory.query.engine import MemoryQuery

log = logging.getLogger("lwc.supervisor")

RESTART_BACKOFF: Final = 0.1
"""Pause before restarting a worker whose engine failed to start (not a crash)."""


@attrs.frozen
class Engines:
    """Engines that replace a plane's own (tests inject fakes for fault injection); a plane
    left None gets its real engine. Nothing else changes with them: the same pipeline,
    channels and workers serve whichever engine answers."""

    memory: EngineFactory[MemoryQuery] | None = None
    code: EngineFactory[CodeQuery] | None = None


class Services:
    """The long-lived actors every transport shares: planes and the authorizer."""

    def __init__(
        self,
        config: ServerConfig,
        faults: FaultPlan,
        engines: Engines | None = None,
    ) -> None:
        self.config = config
        self.faults = faults
        engines = engines or Engines()
        memory = engines.memory or partial(memory_engine, config)
        code = engines.code or partial(code_engine, config)
        self.memory_send, memory_recv = trio.open_memory_channel[PlaneJob["MemoryQuery"]](
            MAILBOX_SIZE
        )
        self.code_send, code_recv = trio.open_memory_channel[PlaneJob["CodeQuery"]](MAILBOX_SIZE)
        self.auth_send, self._auth_recv = trio.open_memory_channel[AuthJob](MAILBOX_SIZE)
        self.checks = PathChecks(config, faults)
        # One worker per plane for the whole run: `_supervise` restarts the same one.
        self.memory_worker = PlaneWorker("memory", memory_recv, memory)
        self.code_worker = PlaneWorker("code", code_recv, code)

    def explorer(self) -> Explorer:
        """The explore pipeline over these services."""
        planes = plane_clients(self.config, self.memory_send, self.code_send)
        return Explorer(self.config, self.auth_send, planes, self.checks, self.faults)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the authorizer and both plane workers; run until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(Authorizer(self._auth_recv).run)
                await nursery.start(self._supervise, self.memory_worker)
                await nursery.start(self._supervise, self.code_worker)
                task_status.started()
        finally:
            self.checks.hung.set()  # `auth=hang` threads end with the services

    async def _supervise(
        self,
        worker: PlaneWorker[MemoryQuery] | PlaneWorker[CodeQuery],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Keep `worker` alive on its mailbox, restarting it whenever it dies."""
        plane = worker.plane
        first = True
        while True:
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(worker.run)
                    if first:
                        task_status.started()
                        first = False
            except* WorkerCrashed:
                log.info("%s worker crashed; restarting", plane)
            except* Exception as group:
                log.warning("%s worker failed (%r); restarting", plane, group.exceptions)
                await trio.sleep(RESTART_BACKOFF)
