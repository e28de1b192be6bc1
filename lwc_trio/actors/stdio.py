"""The stdio transport actor: the reader, and the single stdout writer.

The reader frames stdin (64 KiB cap, never buffering past it), answers what
needs no plane, and queues tool calls; when the queue is full it stops reading,
which is the only backpressure a stdio client sees. The writer is the only
code that touches the protocol stdout.
"""

from __future__ import annotations

import errno
import logging
from typing import Final

import attrs
import trio

from lwc_trio.actors.dispatcher import Dispatcher, Pending
from lwc_trio.protocol import jsonrpc, session
from lwc_trio.protocol.framing import FRAME_LIMIT, LineFramer, Oversize

log = logging.getLogger("lwc.stdio")

READ_SIZE: Final = 65_536
WRITE_BATCH: Final = 256 * 1024
"""Queued answers joined into one stdout write, up to about this many bytes."""


@attrs.define(eq=False)
class StdioReader:
    """Reads frames from stdin until EOF or cancellation."""

    stream: trio.abc.ReceiveStream
    dispatcher: Dispatcher
    calls: trio.MemorySendChannel[Pending]
    outbox: trio.MemorySendChannel[bytes]
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    """Cancelled by the supervisor on SIGINT/SIGTERM: same path as EOF."""
    input_over: trio.Event = attrs.field(factory=trio.Event)
    """Set at EOF or on a signal, once the dispatcher has begun its drain."""

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read and route frames; on EOF start the dispatcher's drain."""
        framer = LineFramer(FRAME_LIMIT)
        async with self.calls, self.outbox:
            task_status.started()
            with self.scope:
                while True:
                    data = await self.stream.receive_some(READ_SIZE)
                    frames = framer.feed(bytes(data)) if data else framer.eof()
                    for frame in frames:
                        await self._route(frame)
                    if not data:
                        break
            self.dispatcher.begin_drain()
            self.input_over.set()

    async def _route(self, frame: object) -> None:
        if isinstance(frame, Oversize):
            log.info("discarded a %d-byte frame", frame.size)
            await self._send(jsonrpc.frame_too_large(frame.request_id, FRAME_LIMIT))
            return
        message = jsonrpc.parse_message(frame.data)  # type: ignore[attr-defined]
        if isinstance(message, jsonrpc.Reply):
            await self._send(message.message)
        elif isinstance(message, jsonrpc.Notification):
            self.dispatcher.notify(message)
        elif isinstance(message, jsonrpc.Request):
            answer = self.dispatcher.immediate(message)
            if isinstance(answer, session.ToolCall):
                pending = self.dispatcher.register(answer)
                # Blocks only when the queue is full: reading pauses, nothing is dropped.
                await self.calls.send(pending)
            else:
                await self._send(answer)

    async def _send(self, message: dict[str, object]) -> None:
        try:
            await self.outbox.send(jsonrpc.encode(message))
        except trio.BrokenResourceError:
            # The writer lost stdout; the supervisor is shutting down.
            self.scope.cancel()


@attrs.define(eq=False)
class StdoutWriter:
    """The only writer of protocol stdout."""

    stream: trio.abc.SendStream
    outbox: trio.MemoryReceiveChannel[bytes]
    gone: trio.Event = attrs.field(factory=trio.Event)
    """Set when stdout broke (the host closed its end)."""

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Write every queued message until all producers have closed the outbox."""
        async with self.outbox:
            task_status.started()
            try:
                async for data in self.outbox:
                    await self.stream.send_all(self._with_queued(data))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.gone.set()
            except OSError as exc:
                if exc.errno not in (errno.EPIPE, errno.EBADF, errno.ECONNRESET):
                    raise
                self.gone.set()

    def _with_queued(self, first: bytes) -> bytes:
        # Whatever else is already queued goes out in the same write: under a burst
        # that is one system call (and one trip through the loop) for many answers.
        chunks = [first]
        size = len(first)
        while size < WRITE_BATCH:
            try:
                data = self.outbox.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                break
            chunks.append(data)
            size += len(data)
        return b"".join(chunks)
