"""The supervisor: owns the nursery, starts every actor, restarts crashed workers.

Two nested nurseries give the shutdown order: the *session* (reader,
dispatcher, writer) ends first, once input is over and every answer is written;
then the *services* (authorizer, plane workers and the signal watcher) are
cancelled, which kills and reaps the CodeGraph child on the way out.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import Final

import trio

from lwc_trio.actors.authorizer import AuthJob, Authorizer
from lwc_trio.actors.dispatcher import Dispatcher, Pending
from lwc_trio.actors.planes import (
    MAILBOX_SIZE,
    EngineFactory,
    PlaneJob,
    PlaneWorker,
    WorkerCrashed,
    code_engine,
    memory_engine,
)
from lwc_trio.actors.stdio import StdioReader, StdoutWriter
from lwc_trio.config import ServerConfig
from lwc_trio.faults import FaultPlan

log = logging.getLogger("lwc.supervisor")

OUTBOX_SIZE: Final = 64
WRITER_GRACE: Final = 1.0
"""After the drain grace, how long the writer may take to flush what was computed."""
RESTART_BACKOFF: Final = 0.1
"""Pause before restarting a worker whose engine failed to start (not a crash)."""


class Services:
    """The long-lived actors every transport shares: planes and the authorizer."""

    def __init__(
        self,
        config: ServerConfig,
        faults: FaultPlan,
        engines: Mapping[str, EngineFactory] | None = None,
    ) -> None:
        self.config = config
        self.faults = faults
        # Tests swap in scripted fakes here; the server uses the real engines.
        self.engines = (
            dict(engines)
            if engines is not None
            else {
                "memory": partial(memory_engine, config),
                "code": partial(code_engine, config),
            }
        )
        self.memory_send, self._memory_recv = trio.open_memory_channel[PlaneJob](MAILBOX_SIZE)
        self.code_send, self._code_recv = trio.open_memory_channel[PlaneJob](MAILBOX_SIZE)
        self.auth_send, self._auth_recv = trio.open_memory_channel[AuthJob](MAILBOX_SIZE)
        self.restarts = {"memory": 0, "code": 0}

    def dispatcher(self) -> Dispatcher:
        return Dispatcher(self.config, self.memory_send, self.code_send, self.auth_send)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the authorizer and both plane workers; run until cancelled."""
        async with trio.open_nursery() as nursery:
            await nursery.start(Authorizer(self.config, self._auth_recv).run)
            await nursery.start(self._supervise, "memory", self._memory_recv)
            await nursery.start(self._supervise, "code", self._code_recv)
            task_status.started()

    async def _supervise(
        self,
        plane: str,
        inbox: trio.MemoryReceiveChannel[PlaneJob],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Keep one worker alive on `inbox`, restarting it whenever it dies."""
        worker = PlaneWorker(plane, inbox, self.faults, self.engines[plane])
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
            self.restarts[plane] += 1


async def serve_stdio(
    config: ServerConfig,
    faults: FaultPlan,
    stdin: trio.abc.ReceiveStream,
    stdout: trio.abc.SendStream,
    engines: Mapping[str, EngineFactory] | None = None,
) -> int:
    """Run the stdio server until input ends; returns the exit code."""
    services = Services(config, faults, engines)
    dispatcher = services.dispatcher()
    calls_send, calls_recv = trio.open_memory_channel[Pending](config.queue_size)
    outbox_send, outbox_recv = trio.open_memory_channel[bytes](OUTBOX_SIZE)
    reader = StdioReader(stdin, dispatcher, calls_send, outbox_send.clone())
    writer = StdoutWriter(stdout, outbox_recv)

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as outer:
            await outer.start(services.run)
            async with trio.open_nursery() as session:
                outer.start_soon(_on_signals, signals, reader)
                outer.start_soon(_on_input_over, reader, session.cancel_scope, config.grace)
                outer.start_soon(_on_output_gone, writer, session.cancel_scope)
                await session.start(writer.run)
                await session.start(dispatcher.run, calls_recv, outbox_send)
                await session.start(reader.run)
            outer.cancel_scope.cancel()
    if writer.gone.is_set() and not reader.input_over.is_set():
        return 1
    return 0


async def _on_signals(signals: AsyncIterator[int], reader: StdioReader) -> None:
    async for _ in signals:
        # SIGINT/SIGTERM take the same path as stdin EOF.
        reader.scope.cancel()


async def _on_input_over(reader: StdioReader, session: trio.CancelScope, grace: float) -> None:
    await reader.input_over.wait()
    # The dispatcher cancels leftovers at `grace`; this bounds the final flush too,
    # so a host that stopped reading stdout cannot keep the process alive.
    session.deadline = trio.current_time() + grace + WRITER_GRACE


async def _on_output_gone(writer: StdoutWriter, session: trio.CancelScope) -> None:
    await writer.gone.wait()
    session.cancel()
