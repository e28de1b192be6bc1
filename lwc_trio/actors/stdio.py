"""The stdio transport: the reader, the call queue, the single stdout writer, `serve_stdio`.

The reader frames stdin (64 KiB cap, never buffering past it), answers what needs
no plane, and queues tool calls. The `CallQueue` starts queued calls under the
in-flight bound, each in its own cancel scope (so `notifications/cancelled` stops
exactly the call it names), and hands each finished answer to the writer, the only
task that writes the protocol stdout. Every call takes this route, idle or loaded.

Nothing is dropped while the host can still read (SPEC §1.1). Backpressure runs
the whole way back: a full outbox makes a finished call wait, holding its
in-flight slot; no slot means no new call starts; a full queue makes the reader
stop reading. Only a broken stdout, or the end of a SIGINT/SIGTERM grace,
discards computed answers. At stdin EOF every call already read is still
started and answered (each bounded by its own deadlines), then the server exits.
"""

from __future__ import annotations

import collections
import errno
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Final

import attrs
import trio

from lwc_trio.actors import channels
from lwc_trio.actors.explore import Explorer
from lwc_trio.actors.supervisor import Engines, Services
from lwc_trio.config import ServerConfig
from lwc_trio.faults import FaultPlan
from lwc_trio.protocol import jsonrpc, session
from lwc_trio.protocol.framing import FRAME_LIMIT, LineFramer, Oversize

log = logging.getLogger("lwc.stdio")

READ_SIZE: Final = 65_536
WRITE_BATCH: Final = 256 * 1024
"""Queued answers joined into one stdout write, up to about this many bytes."""
OUTBOX_SIZE: Final = 64

_Key = tuple[str, jsonrpc.RequestId]


def _key(rid: jsonrpc.RequestId) -> _Key:
    # JSON-RPC ids 1 and "1" are different requests.
    return (type(rid).__name__, rid)


@attrs.define(eq=False)
class Pending:
    """A queued or running tool call and the scope that cancels it."""

    call: session.ToolCall
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)


@attrs.define(eq=False)
class CallQueue:
    """The session's tool calls: cancellable by id from the moment they are read."""

    explorer: Explorer
    max_in_flight: int
    _pending: dict[_Key, list[Pending]] = attrs.field(factory=dict)

    def notify(self, note: jsonrpc.Notification) -> None:
        """Handle a notification (only cancellation does anything)."""
        if note.method == "notifications/cancelled":
            rid = session.cancelled_request_id(note.params)
            if rid is not None:
                for pending in self._pending.get(_key(rid), ()):
                    pending.scope.cancel()

    def register(self, call: session.ToolCall) -> Pending:
        """Make a call cancellable by id from the moment it is queued."""
        pending = Pending(call)
        self._pending.setdefault(_key(call.id), []).append(pending)
        return pending

    def _forget(self, pending: Pending) -> None:
        key = _key(pending.call.id)
        group = self._pending.get(key)
        if group is not None:
            group.remove(pending)
            if not group:
                del self._pending[key]

    async def run(
        self,
        calls: trio.MemoryReceiveChannel[Pending],
        outbox: Inlet,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Start queued calls under the in-flight bound until the queue closes.

        Returns once every started call has been answered (or cancelled).
        """
        slots = trio.Semaphore(self.max_in_flight)
        async with outbox, calls, trio.open_nursery() as nursery:
            task_status.started()
            # `receive()` yields once per call, so each call's task takes its first step
            # (where it draws its faults) before the next call starts: arrival order.
            async for pending in calls:
                if pending.scope.cancel_called:
                    self._forget(pending)
                    continue
                try:
                    slots.acquire_nowait()  # the usual case: no second trip through the loop
                except trio.WouldBlock:
                    await slots.acquire()
                nursery.start_soon(self._run_one, pending, outbox, slots)

    async def _run_one(self, pending: Pending, outbox: Inlet, slots: trio.Semaphore) -> None:
        try:
            with pending.scope:
                response = await self.explorer.call(pending.call)
                # Waits for room as long as stdout is open, holding the in-flight slot:
                # a slow reader slows the server down instead of losing answers.
                await outbox.send(response + b"\n")
        except trio.BrokenResourceError:
            pass  # the writer lost stdout; nobody can read this answer any more
        finally:
            slots.release()
            self._forget(pending)


@attrs.define(eq=False)
class StdioReader:
    """Reads frames from stdin until EOF or cancellation."""

    stream: trio.abc.ReceiveStream
    queue: CallQueue
    version: str
    calls: trio.MemorySendChannel[Pending]
    urgent: Inlet
    """The writer's inlet for replies that need no plane (they skip queued answers)."""
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    """Cancelled on SIGINT/SIGTERM: reading stops, what was read is still served."""
    input_over: trio.Event = attrs.field(factory=trio.Event)
    """Set at EOF or on a signal, once reading has stopped."""

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read and route frames until EOF; closing the queue tells the rest input is over."""
        framer = LineFramer(FRAME_LIMIT)
        async with self.calls, self.urgent:
            task_status.started()
            with self.scope:
                while True:
                    data = await self.stream.receive_some(READ_SIZE)
                    frames = framer.feed(bytes(data)) if data else framer.eof()
                    for frame in frames:
                        await self._route(frame)
                    if not data:
                        break
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
            self.queue.notify(message)
        elif isinstance(message, jsonrpc.Request):
            answer = session.answer(message, self.version)
            if isinstance(answer, session.ToolCall):
                # Waits only when the queue is full: reading pauses, nothing is dropped.
                await channels.send(self.calls, self.queue.register(answer))
            else:
                await self._send(answer)

    async def _send(self, message: dict[str, session.JSON]) -> None:
        try:
            await self.urgent.send(jsonrpc.encode(message))
        except trio.BrokenResourceError:
            # The writer lost stdout; the session is shutting down.
            self.scope.cancel()


@attrs.define(eq=False)
class Inlet:
    """A producer's way into one of the writer's queues, used like a memory channel's send
    side: `send()` waits while the queue holds `OUTBOX_SIZE` lines, and raises
    `trio.BrokenResourceError` once stdout is gone; closing says this producer is done."""

    _writer: StdoutWriter
    _queue: collections.deque[bytes]
    _closed: bool = False

    async def send(self, data: bytes) -> None:
        """Queue one line (its newline included) for the next write."""
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise trio.ClosedResourceError("this inlet is closed")
        writer = self._writer
        while True:
            if writer.over:
                raise trio.BrokenResourceError("stdout is gone")
            if len(self._queue) < OUTBOX_SIZE:
                break
            await writer.room.park()
        self._queue.append(data)
        writer.ready.unpark()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.producer_done()

    async def aclose(self) -> None:
        self.close()
        await trio.lowlevel.checkpoint()

    async def __aenter__(self) -> Inlet:
        return self

    async def __aexit__(self, *_: object) -> None:
        self.close()


@attrs.define(eq=False)
class StdoutWriter:
    """The owner of protocol stdout: every line goes out through it.

    Two inlets feed it: `urgent` (replies the reader gives at once: ping, initialize,
    tools/list, protocol errors) and `outbox` (tool answers, often tens of KB each). Each
    write takes every urgent reply first, so a ping is never queued behind megabytes of
    search results while a burst is being written; within each inlet order is kept. Both
    stay bounded: each queue holds at most `OUTBOX_SIZE` lines, and a producer waits for
    room. Producers append to the queues themselves: no task in between, and every line
    queued by the time this task runs goes out in one write.
    """

    stream: trio.abc.SendStream
    """Waited on (`wait_send_all_might_not_block`) while it is full; never written through."""
    write: Callable[[bytes], int]
    """Writes what fits without blocking and returns how much (raises `BlockingIOError`
    when nothing fits): `os.write` on the stream's descriptor (`serve_stdio`)."""
    rest: bytes = b""
    """The end of a line begun: written before anything else."""
    gone: trio.Event = attrs.field(factory=trio.Event)
    """Set when stdout broke (the host closed its end)."""
    over: bool = False
    """No more writes: stdout broke, or every producer is done and all is written."""
    ready: trio.lowlevel.ParkingLot = attrs.field(factory=trio.lowlevel.ParkingLot)
    room: trio.lowlevel.ParkingLot = attrs.field(factory=trio.lowlevel.ParkingLot)
    _queues: tuple[collections.deque[bytes], collections.deque[bytes]] = attrs.field(
        factory=lambda: (collections.deque(), collections.deque())
    )
    _open: int = 2
    urgent: Inlet = attrs.field(init=False)
    outbox: Inlet = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.urgent = Inlet(self, self._queues[0])
        self.outbox = Inlet(self, self._queues[1])

    def producer_done(self) -> None:
        self._open -= 1
        self.ready.unpark()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Write every queued line until both inlets are closed and nothing is left."""
        urgent, normal = self._queues
        task_status.started()
        try:
            while urgent or normal or self.rest or self._open:
                if not (urgent or normal or self.rest):
                    await self.ready.park()
                    continue
                if not self._write_some():
                    # stdout is full. Once it has room, urgent replies that came meanwhile
                    # go first: a ping waits for the end of one answer, not of a batch.
                    await self.stream.wait_send_all_might_not_block()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.gone.set()
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.EBADF, errno.ECONNRESET):
                raise
            self.gone.set()
        finally:
            # Producers waiting for room learn that nobody reads any more.
            self.over = True
            self.room.unpark_all()

    def _write_some(self) -> bool:
        """One non-blocking write of the queued lines (the end of a begun line, then urgent
        replies, then tool answers, up to about `WRITE_BATCH` bytes); False when stdout
        did not take them all.

        No trip through the loop when the pipe has room (`send_all` takes one before it
        writes): under a burst, one wait less for the interpreter lock per write. Of a line
        stdout takes in part, the end is written before anything else; lines not begun go
        back to the front of their queues, behind any urgent reply that comes meanwhile.
        Raises `trio.BrokenResourceError` when stdout broke, as `send_all` would.
        """
        taken = self._take()
        size = sum(len(data) for _, data in taken)
        try:
            sent = self.write(
                b"".join(data for _, data in taken) if len(taken) > 1 else taken[0][1]
            )
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            raise trio.BrokenResourceError("stdout is gone") from exc
        if sent:
            self.room.unpark_all()
        if sent == size:
            return True
        for i, (owner, data) in enumerate(taken):
            if sent >= len(data):
                sent -= len(data)
                continue
            if sent:
                self.rest, sent = data[sent:], 0
                continue
            if owner is None:
                self.rest = data  # nothing of it written yet
            else:
                # Lines not begun: back to where they were, in order.
                for later_queue, later in reversed(taken[i:]):
                    assert later_queue is not None
                    later_queue.appendleft(later)
                break
        return False

    def _take(self) -> list[tuple[collections.deque[bytes] | None, bytes]]:
        """The next write's lines, each with the queue it came from (None: the end of a
        begun line): that end first, then urgent replies, then tool answers, up to about
        `WRITE_BATCH` bytes (under a burst, one system call for many answers)."""
        taken: list[tuple[collections.deque[bytes] | None, bytes]] = []
        size = 0
        if self.rest:
            taken.append((None, self.rest))
            size, self.rest = len(self.rest), b""
        for queue in self._queues:
            while queue and (size < WRITE_BATCH or not taken):
                data = queue.popleft()
                taken.append((queue, data))
                size += len(data)
        return taken


async def serve_stdio(
    config: ServerConfig,
    faults: FaultPlan,
    stdin: trio.abc.ReceiveStream,
    stdout: trio.lowlevel.FdStream,
    engines: Engines | None = None,
) -> int:
    """Run the stdio server until input ends and every answer is out; returns the exit code.

    `stdout` is a pipe or file descriptor (the CLI's private copy of fd 1; tests' pipes):
    the writer writes it with `os.write`, never `send_all` (see `StdoutWriter`).

    Two nested nurseries give the shutdown order: the *session* (reader, call queue,
    writer) ends first, once input is over and every answer is written (or the signal
    grace ran out, or stdout broke); then the *services* are cancelled, which kills
    and reaps the CodeGraph child on the way out.
    """
    # First, so that a signal from here on takes the quiet path (SPEC §1.1).
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        services = Services(config, faults, engines)
        queue = CallQueue(services.explorer(), config.max_in_flight)
        calls_send, calls_recv = trio.open_memory_channel[Pending](config.queue_size)
        # trio's FdStream made the descriptor non-blocking; its `send_all` would take a trip
        # through the loop first, even when the pipe has room.
        writer = StdoutWriter(stdout, partial(os.write, stdout.fileno()))
        reader = StdioReader(stdin, queue, config.version, calls_send, writer.urgent)
        async with trio.open_nursery() as outer:
            async with trio.open_nursery() as session:
                outer.start_soon(_on_signals, signals, reader, session.cancel_scope, config.grace)
                outer.start_soon(_on_output_gone, writer, session.cancel_scope)
                await outer.start(services.run)
                await session.start(writer.run)
                await session.start(queue.run, calls_recv, writer.outbox)
                await session.start(reader.run)
            outer.cancel_scope.cancel()
    if writer.gone.is_set() and not reader.input_over.is_set():
        return 1
    return 0


async def _on_signals(
    signals: AsyncIterator[int], reader: StdioReader, session: trio.CancelScope, grace: float
) -> None:
    async for _ in signals:
        # Stop reading; what was read gets the grace, then the session (writer included)
        # is cancelled: the host asked the server to stop, not to finish.
        reader.scope.cancel()
        session.deadline = min(session.deadline, trio.current_time() + grace)


async def _on_output_gone(writer: StdoutWriter, session: trio.CancelScope) -> None:
    await writer.gone.wait()
    session.cancel()
