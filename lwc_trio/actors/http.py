"""The HTTP transport actor: stateless streamable HTTP on hypercorn's Trio worker.

hypercorn's per-connection server (a subclass, `_lwc_tcp_server`) accepts every
connection under lwc's accept loop and cap. An HTTP/1.1 connection is then served by
lwc's own loop on h11 (`_Http1`): h11 parses each request, the rules decide, and the
answer goes out as one buffer, without ASGI scopes, event dictionaries or hypercorn's
per-request stream objects in between. A connection that opens with HTTP/2's preface
goes to hypercorn's HTTP/2 protocol and a small ASGI app (`McpHttpApp`). Both reach the
same explore pipeline (`actors/explore.py`) the stdio transport uses. Every decision
about a request (status codes, their order, headers, bodies) is a pure function in
`lwc_trio.protocol.http_rules`; this module only moves bytes, counts tool calls in
flight and owns the lifetimes: the request's work is cancelled when its client goes
away, and SIGINT/SIGTERM stop accepting, let in-flight requests finish within the grace,
then stop the services (which reaps the CodeGraph child). hypercorn and h11 are imported
here only, and this module only in HTTP mode.

Slow and abusive clients (SPEC §1.2) are handled at two levels. Per connection,
`_Connection` tracks what the client is doing: a request whose headers and body have not
arrived within the read timeout of its first byte gets a 408 and a close, an idle
connection closes after the idle timeout. Across connections, `_Connections` caps how
many are open: a new one beyond the cap closes the connection that has made no progress
for longest, or, when every one is busy answering, is itself answered 503 and closed.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import resource
import select
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from email.utils import formatdate
from functools import cache, lru_cache, partial
from math import inf
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote

import attrs
import h11
import trio

from lwc_trio.actors.explore import Explorer
from lwc_trio.actors.supervisor import Engines, Services
from lwc_trio.config import HttpConfig, ServerConfig
from lwc_trio.exceptions import CliError
from lwc_trio.faults import FaultPlan
from lwc_trio.protocol import http_rules, session
from lwc_trio.protocol.http_rules import BODY_LIMIT, Limits, Response

log = logging.getLogger("lwc.http")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

BACKLOG: Final = 128
CONNECTION_KEY: Final = "lwc.connection"
"""Where the app finds its `_Connection` in the ASGI scope's `state`."""
RAW_SEND_TIMEOUT: Final = 1.0
"""Longest wait to write a 408 or 503 straight to a socket; a client that does not read
that much gets its connection closed without it."""
REFUSAL_DRAIN: Final = 1.0
"""Seconds a refused connection is read (and discarded) after its 503, so closing it with
unread input does not reset the connection before the client has read the answer."""
MAX_REFUSING: Final = 16
"""Refusals being written at once; beyond that a refused connection is closed at once."""
TOKEN_FILE_LIMIT: Final = 4096
"""A token file longer than this is a mistake (a key file, a log), not a token."""


@attrs.define(eq=False)
class _Inbound:
    """The request body as it arrives, and whether the client is still there.

    hypercorn hands each ASGI receive event to `put()` (`_lwc_task_group`): no
    channel and no task to pump one, so a request's body is usually complete before
    its handler first runs. What arrives after the body is complete, or past the cap,
    is dropped, never kept; `http.disconnect` cancels the request's work.
    """

    work: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    connection: _Connection | None = None
    body: bytearray = attrs.field(factory=bytearray)
    ready: trio.Event = attrs.field(factory=trio.Event)
    """Set once the body is complete, too large, or the client left."""
    too_large: bool = False
    gone: bool = False

    async def put(self, message: dict[str, Any]) -> None:
        self.take(message)

    def take(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.disconnect":
            # Closing the request is how an HTTP client cancels it.
            self.gone = True
            self.work.cancel()
            self.ready.set()
            return
        if self.ready.is_set():
            return
        chunk = message.get("body", b"")
        if len(self.body) + len(chunk) > BODY_LIMIT:
            self.too_large = True
            self.body.clear()
            self.ready.set()
        else:
            self.body += chunk
            if not message.get("more_body", False):
                if self.connection is not None:
                    self.connection.request_arrived()
                self.ready.set()


@attrs.define(eq=False)
class McpHttpApp:
    """The app: one POST, one JSON-RPC message, one answer.

    hypercorn runs `handle` once per request, with that request's `_Inbound`
    (`_lwc_task_group`); `__call__` is the same app for any other ASGI server.
    """

    policy: http_rules.Policy
    explorer: Explorer
    version: str
    max_in_flight: int
    limits: Limits = attrs.field(factory=Limits)
    slots: trio.Semaphore = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.slots = trio.Semaphore(self.max_in_flight)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        connection = (scope.get("state") or {}).get(CONNECTION_KEY)
        inbound = _Inbound(connection=connection if isinstance(connection, _Connection) else None)

        async def pump() -> None:
            while True:
                message = await receive()
                inbound.take(message)
                if message["type"] == "http.disconnect":
                    return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump)
            await self.handle(scope, inbound, send)
            nursery.cancel_scope.cancel()

    async def handle(self, scope: Scope, inbound: _Inbound, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, inbound, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, send)

    async def _http(self, scope: Scope, inbound: _Inbound, send: Send) -> None:
        head = http_rules.Head(scope["method"], scope["path"], scope["headers"])
        connection = inbound.connection
        http1 = str(scope.get("http_version", "1.1")).startswith("1")
        # The request began with its first byte (HTTP/1), or now (HTTP/2 streams).
        began = trio.current_time()
        if connection is not None and http1 and connection.phase == "reading":
            began = min(began, connection.since)
        deadline = began + self.limits.read_timeout
        response: Response | None = None
        with inbound.work:
            response = await self._respond(head, inbound, deadline)
        if response is None or inbound.gone:
            return
        if connection is not None:
            # Whatever the client sends after a closing answer is not parsed.
            connection.closing = connection.closing or response.close
            connection.answering = trio.Event()
            connection.answerer = trio.lowlevel.current_task()
        # Outside the work scope: a finished answer is always delivered whole.
        try:
            if inbound.ready.is_set() or response.close:
                await _send(send, response, http1)
            else:
                await _send_then_drain(send, response, http1, inbound, deadline)
        except (trio.BrokenResourceError, trio.BusyResourceError) as exc:
            # The client hung up while hypercorn was writing or closing.
            log.debug("client left before its %d was sent: %r", response.status, exc)
        finally:
            if connection is not None and connection.answering is not None:
                connection.answering.set()
                connection.answering = None

    async def _respond(self, head: http_rules.Head, inbound: _Inbound, deadline: float) -> Response:
        refused = http_rules.check_head(self.policy, head)
        if refused is not None:
            return refused
        if not inbound.ready.is_set():
            with trio.move_on_at(deadline) as waiting:
                if inbound.connection is not None:
                    # The connection cap may end this wait early to make room (`_Connections`).
                    inbound.connection.body_wait = waiting
                await inbound.ready.wait()
        if not inbound.ready.is_set():
            return http_rules.timed_out(self.limits)
        if inbound.too_large:
            return http_rules.too_large()
        answer = self.answer_body(bytes(inbound.body))
        if isinstance(answer, Response):
            return answer
        if not self.take_slot():
            return http_rules.busy(answer.id, self.max_in_flight)
        return await self.run_call(answer)

    def answer_body(self, body: bytes) -> Response | session.ToolCall:
        """The answer to a complete body, or the tool call that must run for it."""
        routed = http_rules.route_body(body)
        if isinstance(routed, Response):
            return routed
        answer = session.answer(routed, self.version)
        if isinstance(answer, session.ToolCall):
            return answer
        return http_rules.reply(answer)

    def take_slot(self) -> bool:
        """One of the `max_in_flight` tool-call slots, or False when all are taken."""
        try:
            self.slots.acquire_nowait()
        except trio.WouldBlock:
            return False
        return True

    async def run_call(self, call: session.ToolCall) -> Response:
        """Run `call` in the slot `take_slot` gave it, and free the slot."""
        try:
            return http_rules.Response(200, await self.explorer.call(call))
        finally:
            self.slots.release()

    async def _websocket(self, scope: Scope, send: Send) -> None:
        # An upgrade is a GET: answer it with the same 403/404/405 as any GET.
        head = http_rules.Head("GET", scope["path"], scope["headers"])
        response = http_rules.check_head(self.policy, head)
        assert response is not None  # a GET never passes the method check
        await send(
            {
                "type": "websocket.http.response.start",
                "status": response.status,
                "headers": response.asgi_headers(),
            }
        )
        await send({"type": "websocket.http.response.body", "body": response.body})


async def _send(send: Send, response: Response, http1: bool = True) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": response.status,
            "headers": response.asgi_headers(http1),
        }
    )
    await send({"type": "http.response.body", "body": response.body})


async def _send_then_drain(
    send: Send, response: Response, http1: bool, inbound: _Inbound, deadline: float
) -> None:
    """A refusal sent before its request's body has come (the head decided it).

    The answer goes out at once; its end is marked only once the rest of the body has
    been read (and dropped), within the request's read deadline, because hypercorn keeps
    a connection for the next request only when both sides have finished theirs. A body
    that does not come in time, or a client that leaves, ends in a closed connection.
    """
    await send(
        {
            "type": "http.response.start",
            "status": response.status,
            "headers": response.asgi_headers(http1),
        }
    )
    await send({"type": "http.response.body", "body": response.body, "more_body": True})
    with trio.move_on_at(deadline) as waiting:
        if inbound.connection is not None:
            # The connection cap may end this wait early to make room (`_Connections`).
            inbound.connection.body_wait = waiting
        await inbound.ready.wait()
    await send({"type": "http.response.body", "body": b"", "more_body": False})


# -- connections: read deadlines and the cap ----------------------------------------------


@attrs.define(eq=False)
class _Connection:
    """One client connection as the cap and the read deadline see it.

    `phase` is `idle` until a request's first byte, `reading` until its body is complete
    (`since` is then that first byte's time), `busy` until its answer is sent and the
    connection is idle again. hypercorn reports "request parsed" and "idle again" through
    `Updated` events (`_lwc_tcp_server`); the app reports the complete body.
    """

    stream: trio.SocketStream
    since: float
    phase: http_rules.Phase = "idle"
    headers_done: bool = False
    http1: bool = True
    send_lock: trio.Lock | None = None
    """hypercorn's lock for writing this socket, once its server exists."""
    body_wait: trio.CancelScope | None = None
    """The app's wait for the current request's body, while it waits."""
    closing: bool = False
    """An answer that closes the connection is being sent: input is no longer parsed."""
    answering: trio.Event | None = None
    """Set once the answer being written is out; None when none is."""
    answerer: trio.lowlevel.Task | None = None
    """The task writing that answer."""
    closed: bool = False
    reader: trio.CancelScope | None = None
    """The scope of the connection's current read; its deadline is the read or idle
    timeout, and cancelling it while idle closes the connection."""
    writing_since: float | None = None
    """When the answer being written began waiting for the client to read; None when no
    write waits. Such a connection is closed at the write timeout, or by the cap for room."""

    def stalled(self) -> tuple[http_rules.Phase, float]:
        """(phase, since) as the cap's victim choice sees them."""
        if self.writing_since is not None:
            return "writing", self.writing_since
        return self.phase, self.since

    def first_byte(self) -> None:
        if self.phase == "idle":
            self.phase, self.since, self.headers_done = "reading", trio.current_time(), False

    def headers_parsed(self) -> None:
        self.first_byte()  # a pipelined request whose bytes came with the last one
        self.headers_done = True

    def request_arrived(self) -> None:
        if self.phase == "reading":
            self.phase = "busy"
        self.body_wait = None

    def idle_again(self) -> None:
        self.phase, self.since, self.headers_done = "idle", trio.current_time(), False
        self.body_wait = None

    async def refuse(self, response: Response) -> None:
        """Write `response` straight to the socket (HTTP/1 only) and close it.

        Only for a connection hypercorn has not started answering: nothing of the
        current request has been sent, so the bytes cannot interleave with another answer.
        """
        if self.closed:
            return
        self.closed = True
        if self.http1:
            lock = self.send_lock or trio.Lock()
            with (
                trio.move_on_after(RAW_SEND_TIMEOUT),
                contextlib.suppress(
                    trio.BrokenResourceError, trio.ClosedResourceError, trio.BusyResourceError
                ),
            ):
                async with lock:
                    await self.stream.send_all(response.http1_bytes())
        with trio.CancelScope(shield=True):
            await self.stream.aclose()


@attrs.define(eq=False)
class _Connections:
    """The open connections, capped at `limit`."""

    limit: int
    limits: Limits
    open: dict[_Connection, None] = attrs.field(factory=dict)
    refusing: int = 0

    async def admit(self, connection: _Connection) -> bool:
        """Register `connection`, closing another to make room; False when it was refused
        (503 and closed) because every open connection is busy answering."""
        if len(self.open) >= self.limit:
            members = list(self.open)
            index = http_rules.choose_victim(c.stalled() for c in members)
            if index is None:
                await self._refuse(connection)
                return False
            victim = members[index]
            del self.open[victim]
            phase, since = victim.stalled()
            log.info(
                "connection cap %d reached: closing one %s since %.1f s",
                self.limit,
                phase,
                trio.current_time() - since,
            )
            if phase == "reading" and victim.body_wait is not None:
                # The app waits for this body: it answers 408 and hypercorn closes.
                victim.body_wait.cancel()
            elif phase == "reading" and not victim.headers_done:
                await victim.refuse(http_rules.timed_out(self.limits))
            else:
                # Idle, not reading its answer (the write waiting on it fails), or between
                # its headers and the app's wait: just close the socket.
                victim.closed = True
                with trio.CancelScope(shield=True):
                    await victim.stream.aclose()
        self.open[connection] = None
        return True

    def close_idle(self) -> None:
        """Wake the reader of every idle connection: it sees the server stopping and closes."""
        for connection in self.open:
            if connection.phase == "idle" and connection.reader is not None:
                connection.reader.cancel()

    def discard(self, connection: _Connection) -> None:
        self.open.pop(connection, None)

    async def _refuse(self, connection: _Connection) -> None:
        if self.refusing >= MAX_REFUSING:
            connection.closed = True
            await connection.stream.aclose()
            return
        self.refusing += 1
        try:
            with trio.move_on_after(RAW_SEND_TIMEOUT + REFUSAL_DRAIN):
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await connection.stream.send_all(
                        http_rules.too_many_connections(self.limit).http1_bytes()
                    )
                    await connection.stream.send_eof()
                    # Read what the client sent so closing does not reset the connection
                    # (and discard the 503) before the client has read it.
                    with trio.move_on_after(REFUSAL_DRAIN):
                        for _ in range(16):
                            if not await connection.stream.receive_some(4096):
                                break
        finally:
            self.refusing -= 1
            connection.closed = True
            with trio.CancelScope(shield=True):
                await connection.stream.aclose()


def _fd_usage() -> tuple[int | None, int]:
    """(soft limit on open files or None for unlimited, descriptors open now)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = None if soft == resource.RLIM_INFINITY else soft
    for folder in ("/proc/self/fd", "/dev/fd"):
        with contextlib.suppress(OSError):
            return limit, len(os.listdir(folder))
    return limit, 0


# -- HTTP/1.1 without ASGI in between -------------------------------------------------------


MAX_RECV: Final = 2**16
"""Bytes read from a socket at once (as hypercorn)."""
HEAD_LIMIT: Final = 16 * 1024
"""Largest request head h11 buffers (hypercorn's `h11_max_incomplete_size`); beyond: 431."""
PIPELINE_LIMIT: Final = BODY_LIMIT + HEAD_LIMIT
"""Bytes of further requests read (and held) while a tool call runs; beyond that the
connection is not read until its answer is out."""
PAUSED_POLL: Final = 0.25
"""Seconds between looks at a paused connection (see `PIPELINE_LIMIT`) for its client
having closed it: the input is not read then, so its end is not seen otherwise."""
HTTP2_PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""How an HTTP/2 (prior knowledge) connection starts: such connections go to hypercorn."""


@lru_cache(maxsize=1)
def _date_header(second: int) -> bytes:
    # Formatted once a second (RFC 9110 wants a Date from a server with a clock).
    return formatdate(second, usegmt=True).encode("ascii")


@attrs.define(eq=False)
class _Http1:
    """One HTTP/1.1 connection served by lwc itself: h11 parses each request, lwc's rules
    answer it, and the answer goes out as one buffer. No ASGI scope, event dictionaries or
    per-request stream objects between the bytes and `McpHttpApp`'s rules.

    Each request gets a fresh h11 parser (bytes that came behind it carry over), so h11
    parses what clients send and never has to be told what lwc answered; answers are built
    by `Response.http1_bytes` from lwc's own header names and values only. The connection's
    task reads, parses and answers everything but a tool call inline; a tool call runs in a
    task of its own (holding its in-flight slot) while the connection's task keeps reading,
    so a client that closes the request cancels it; the call's task writes its answer and
    readies the connection for the next request. Deadlines and phases live in the same
    `_Connection` record the cap and the hypercorn path use: the read timeout from a
    request's first byte until its body is in, the idle timeout between requests (at once
    once the server stops), none while answering.
    """

    stream: trio.SocketStream
    send_lock: trio.Lock
    connection: _Connection
    app: McpHttpApp
    terminated: Any
    """hypercorn's worker event: set once the server stops (no more keep-alive)."""
    max_requests: int
    """Requests served on one connection before it is closed (hypercorn's recycling)."""
    parser: h11.Connection = attrs.field(factory=lambda: _parser())
    requests: int = 0
    head_only: bool = False
    """The current request is a HEAD: its answer carries no body."""
    pending: int = 0
    """Bytes read while a tool call runs, held in the parser for the next request."""
    calling: trio.CancelScope | None = None
    """The running tool call's scope, cancelled when its client goes away."""
    call_done: trio.Event | None = None
    finished: bool = False
    """The connection must close: the reader stops at its next wake-up."""
    resumed: bool = False
    """A tool call's answer is out and the next request may be held already: parse it."""
    timed_out: bool = False
    """The last read ended at its deadline (or the cap cut it short to make room)."""

    async def serve(self, nursery: trio.Nursery, first: bytes) -> None:
        """Serve requests until the connection closes or must."""
        self.parser.receive_data(first)
        while not self.finished:
            try:
                event = self.parser.next_event()
            except h11.RemoteProtocolError as error:
                await self._protocol_error(error)
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                # PAUSED: a tool call is being answered; reading on notices its client leave.
                if not await self._read():
                    return
            elif type(event) is h11.Request:
                self.connection.headers_parsed()
                self.requests += 1
                if not await self._request(event, nursery):
                    return
            else:  # ConnectionClosed
                return

    async def _read(self) -> bool:
        """Read more input into the parser; False when the connection is done with."""
        connection = self.connection
        if self.calling is not None and self.pending >= PIPELINE_LIMIT:
            # A call is running and enough of the next request waits: read on once answered.
            return await self._paused() and not self.finished
        reader = connection.reader = trio.CancelScope(deadline=self.read_deadline())
        if connection.phase == "reading" and connection.headers_done:
            # The connection cap may end this wait early to make room (`_Connections`).
            connection.body_wait = reader
        data = b""
        try:
            with reader:
                data = await self.stream.receive_some(MAX_RECV)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass
        finally:
            # Outside a read the cap closes the socket instead of cancelling a stale scope.
            connection.reader = connection.body_wait = None
        if self.finished:
            return False
        if self.resumed and not data:
            self.resumed = False
            return True
        self.resumed = False
        self.timed_out = reader.cancelled_caught
        if reader.cancelled_caught:
            if connection.phase == "reading" and not connection.headers_done:
                # The headers did not arrive in time: nothing was answered yet.
                await connection.refuse(http_rules.timed_out(self.app.limits))
            # A body that did not come in time (the caller answers 408 when nothing was
            # answered yet), idle for too long, or the server is stopping: close.
            return False
        if not data:
            if self.calling is not None:
                # Closing the request is how an HTTP client cancels it.
                self.calling.cancel()
            return False
        if connection.phase == "idle":
            connection.first_byte()
        if self.calling is not None:
            self.pending += len(data)
        self.parser.receive_data(data)
        return True

    async def _paused(self) -> bool:
        """Wait for the running call's answer without reading more; False when the client
        closed the connection meanwhile (its call is then cancelled)."""
        done = self.call_done
        assert done is not None
        while not done.is_set():
            with trio.move_on_after(PAUSED_POLL):
                await done.wait()
            if not done.is_set() and _peer_closed(self.stream.socket):
                # Closing the request is how an HTTP client cancels it.
                if self.calling is not None:
                    self.calling.cancel()
                return False
        return True

    def read_deadline(self) -> float:
        """The read timeout from a request's first byte until its body is in; the idle
        timeout between requests (at once once the server stops); none while answering."""
        connection = self.connection
        limits = self.app.limits
        if connection.phase == "idle":
            if self.terminated.is_set():
                return -inf
            return connection.since + limits.idle_timeout
        if connection.phase == "reading":
            return connection.since + limits.read_timeout
        return inf

    async def _request(self, request: h11.Request, nursery: trio.Nursery) -> bool:
        """One request from its head on; False when the connection must close."""
        app = self.app
        # h11 admits only ASCII targets; decoded like hypercorn's ASGI `path`.
        path = request.target.partition(b"?")[0].decode("ascii")
        if "%" in path:
            path = unquote(path)
        method = request.method.decode("ascii").upper()
        self.head_only = method == "HEAD"
        head = http_rules.Head(method, path, request.headers)
        refused = http_rules.check_head(app.policy, head)
        if refused is not None:
            # Answered at once, even before the body has come; then the body is read and
            # dropped (within the read deadline) so the connection can serve the next one.
            # A client waiting for "100 Continue" will not send it: close instead.
            if refused.close or self.parser.they_are_waiting_for_100_continue:
                await self._send(refused, close=True)
                return False
            # A client that will close after this request (`Connection: close`, HTTP/1.0)
            # is told so; its body is still read, so closing does not reset the connection
            # under the answer.
            leaving = _asks_to_close(request)
            sent = await self._send(refused, close=leaving)
            return (sent or leaving) and await self._body(None) and self._recycle()
        body = bytearray()
        if not await self._body(body):
            return False
        if len(body) > BODY_LIMIT:
            # Past the cap: the rest is never read, so the connection cannot go on.
            await self._send(http_rules.too_large(), close=True)
            return False
        answer = app.answer_body(bytes(body))
        if isinstance(answer, Response):
            return await self._send(answer) and self._recycle()
        if not app.take_slot():
            busy = http_rules.busy(answer.id, app.max_in_flight)
            return await self._send(busy) and self._recycle()
        self.calling = trio.CancelScope()
        self.call_done = trio.Event()
        self.pending = 0
        nursery.start_soon(self._call, answer, self.calling, self.call_done)
        return True

    async def _body(self, body: bytearray | None) -> bool:
        """Read the current request's body into `body` (None: read and drop it), at most
        just past `BODY_LIMIT`; False when the connection must close (the client left, broke
        the protocol or was too slow; a 408 was sent if nothing else had been)."""
        parser = self.parser
        kept = 0
        continued = False
        while True:
            try:
                event = parser.next_event()
            except h11.RemoteProtocolError as error:
                if body is not None:  # nothing was answered yet: say why it closes
                    await self._protocol_error(error)
                return False
            if event is h11.NEED_DATA:
                if body is not None and parser.they_are_waiting_for_100_continue and not continued:
                    continued = True
                    if not await self._write(b"HTTP/1.1 100 Continue\r\n\r\n"):
                        return False
                if not await self._read():
                    if body is not None and self.timed_out:
                        # Nothing was answered yet: say why the connection closes.
                        await self._send(http_rules.timed_out(self.app.limits))
                    return False
            elif type(event) is h11.Data:
                kept += len(event.data)
                if kept > BODY_LIMIT:
                    if body is not None:
                        body += event.data  # marks it too large for the caller
                        return True
                    return False
                if body is not None:
                    body += event.data
            elif type(event) is h11.EndOfMessage:
                self.connection.request_arrived()
                return True
            else:  # ConnectionClosed: the client left mid-body
                return False

    async def _call(
        self, call: session.ToolCall, scope: trio.CancelScope, done: trio.Event
    ) -> None:
        """A tool call's task: run it, write its answer, ready the connection for the next."""
        try:
            response: Response | None = None
            with scope:
                response = await self.app.run_call(call)
            # Outside the call's scope: a finished answer is always delivered whole.
            if (
                response is None
                or scope.cancel_called
                or not (await self._send(response) and self._recycle())
            ):
                self._finish()
            elif self.parser.trailing_data[0] and self.connection.reader is not None:
                # The next request may be held already: the reader parses it now.
                self.resumed = True
                self.connection.reader.cancel()
        finally:
            if self.calling is scope:
                self.calling = None
            done.set()

    def _finish(self) -> None:
        """Make the reader stop: the connection closes once it has."""
        self.finished = True
        if self.connection.reader is not None:
            self.connection.reader.cancel()

    def _recycle(self) -> bool:
        """Ready the connection for its next request; False when it must close instead
        (the client asked to, or spoke HTTP/1.0, or the server is stopping)."""
        old = self.parser
        if self.terminated.is_set() or old.their_state is not h11.DONE:
            return False
        self.parser = _parser()
        data, closed = old.trailing_data
        if data:
            self.parser.receive_data(data)
        if closed:
            self.parser.receive_data(b"")
        connection = self.connection
        connection.idle_again()
        if data:
            connection.first_byte()  # the next request has begun arriving already
        if connection.reader is not None:
            connection.reader.deadline = self.read_deadline()
        return True

    async def _send(self, response: Response, *, close: bool = False) -> bool:
        """Write `response` whole; False when the client is gone or the connection closes
        after it (the answer says so, the client asked to, or its quota of requests is used)."""
        close = (
            close
            or response.close
            or self.requests >= self.max_requests
            or self.parser.their_state is h11.MUST_CLOSE
            or self.terminated.is_set()
        )
        date = _date_header(int(time.time()))
        data = response.http1_bytes(close=close, date=date, body=not self.head_only)
        return await self._write(data) and not close

    async def _write(self, data: bytes) -> bool:
        lock = self.send_lock
        await _acquire(lock)
        try:
            sent = _send_now(self.stream.socket, data)
            if sent < 0:
                return False
            if sent < len(data):
                return await _send_rest(
                    self.stream, self.connection, memoryview(data)[sent:], self.app.limits
                )
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        finally:
            lock.release()
        return True

    async def _protocol_error(self, error: h11.RemoteProtocolError) -> None:
        """Input h11 cannot parse (a malformed or oversized head): its status (400, 431 …)
        when nothing is being answered, then the connection closes (as in hypercorn)."""
        if self.calling is not None:
            return
        await self._send(http_rules.malformed(error.error_status_hint), close=True)


async def _send_rest(
    stream: trio.SocketStream, connection: _Connection, data: memoryview | bytes, limits: Limits
) -> bool:
    """Write what the socket did not take at once, within the write timeout; False (and the
    connection closed) when the client did not read it in time.

    Not shielded: the shutdown's grace and a second signal end it like any other wait (the
    connection then closes, its answer cut short). Meanwhile the cap may close the
    connection for room (`_Connection.stalled`); the write then fails as closed.
    """
    connection.writing_since = trio.current_time()
    try:
        with trio.move_on_after(limits.write_timeout):
            await stream.send_all(data)
            return True
    finally:
        connection.writing_since = None
    log.info("closing a connection whose client did not read its answer in time")
    connection.closed = True
    with trio.CancelScope(shield=True):
        await stream.aclose()
    return False


_CLOSED_EVENTS: Final = getattr(select, "POLLRDHUP", 0) | getattr(select, "POLLHUP", 0)


def _peer_closed(sock: trio.socket.SocketType) -> bool:
    """Whether the client has closed its side, even with unread input ahead of its end
    (`POLLRDHUP`, Linux); without that flag only a connection closed both ways is seen."""
    fd = sock.fileno()
    if fd < 0:
        return True
    if not _CLOSED_EVENTS or not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(fd, _CLOSED_EVENTS)
    return bool(poller.poll(0))


def _send_now(sock: trio.socket.SocketType, data: bytes) -> int:
    """Write what the socket takes without waiting: the bytes written (0 when its buffer is
    full), -1 when the connection is closed or broken.

    A small answer usually fits in the socket's buffer at once; trio's `send_all` would
    still pass through the scheduler once after the write. The caller holds the send lock,
    so nothing else writes meanwhile, and a closed socket's descriptor (-1) is never used.
    """
    fd = sock.fileno()
    if fd < 0:
        return -1
    try:
        return os.write(fd, data)
    except BlockingIOError:
        return 0
    except OSError:  # EPIPE, ECONNRESET …: the client is gone
        return -1


def _asks_to_close(request: h11.Request) -> bool:
    """Whether the connection ends after `request` by the client's own word: HTTP/1.0, or
    a `close` in its `Connection` header (h11 knows it too, once the body is read)."""
    if request.http_version != b"1.1":
        return True
    for name, value in request.headers:
        if name == b"connection" and b"close" in (t.strip() for t in value.lower().split(b",")):
            return True
    return False


def _parser() -> h11.Connection:
    return h11.Connection(h11.SERVER, max_incomplete_event_size=HEAD_LIMIT)


async def _acquire(lock: trio.Lock) -> None:
    """Take `lock`; without a trip through the scheduler when it is free (the common case:
    one answer at a time per connection)."""
    try:
        lock.acquire_nowait()
    except trio.WouldBlock:
        await lock.acquire()


async def _run_request(
    app: McpHttpApp, scope: Any, inbound: _Inbound, send: Callable[[Any], Awaitable[None]]
) -> None:
    """One request's task (hypercorn's `_handle`, with lwc's app and inbound)."""
    try:
        await app.handle(scope, inbound, send)
    except trio.Cancelled:
        raise
    except Exception:
        log.exception("request failed inside the app")
    finally:
        # Tells hypercorn the app is done: it recycles or closes the connection.
        await send(None)


@cache
def _lwc_tcp_server() -> Any:
    """hypercorn's `TCPServer` with lwc's deadlines, connection bookkeeping and its own
    HTTP/1.1 loop.

    HTTP/1.1 connections are served by `_Http1`; a connection that opens with HTTP/2's
    preface goes to hypercorn's protocol as before. On that path, per request, hypercorn
    0.18 spawns the app's task and a memory channel for its receive events, spawns an
    idle-timeout task (and waits for it to start) after every answer, and writes an
    answer's head and body with one socket write each. Here the reader's own deadline is
    the idle timeout, the request's `_Inbound` takes the receive events directly (one task
    per request), and an HTTP/1 answer's head goes out with its body in one write.
    """
    from hypercorn.config import Config
    from hypercorn.events import Closed, RawData, Updated
    from hypercorn.protocol import ProtocolWrapper
    from hypercorn.protocol.h11 import H11Protocol
    from hypercorn.trio.task_group import TaskGroup
    from hypercorn.trio.tcp_server import TCPServer
    from hypercorn.typing import AppWrapper, ASGIReceiveEvent, ASGISendEvent, ConnectionState
    from hypercorn.typing import Scope as AnyScope
    from hypercorn.utils import parse_socket_addr

    class LwcTaskGroup(TaskGroup):
        lwc_app: McpHttpApp
        lwc_connection: _Connection

        async def spawn_app(
            self,
            app: AppWrapper,
            config: Config,
            scope: AnyScope,
            send: Callable[[ASGISendEvent | None], Awaitable[None]],
        ) -> Callable[[ASGIReceiveEvent], Awaitable[None]]:
            inbound = _Inbound(connection=self.lwc_connection)
            assert self._nursery is not None
            self._nursery.start_soon(_run_request, self.lwc_app, scope, inbound, send)
            put: Callable[[ASGIReceiveEvent], Awaitable[None]] = inbound.put  # type: ignore[assignment]
            return put

    class LwcTCPServer(TCPServer):
        lwc_connection: _Connection
        lwc_limits: Limits
        lwc_app: McpHttpApp
        lwc_head: bytes = b""
        """An HTTP/1 answer's head, held until its first body bytes (or its end) are written."""
        lwc_in_body: bool = False
        """The answer's head has been written (or is held): what follows is its body."""

        async def run(self) -> None:
            # hypercorn's, without TLS (lwc serves plain HTTP) and without its idle task;
            # HTTP/1.1 is served by lwc's own loop (`_Http1`), HTTP/2 by hypercorn.
            try:
                first = await self._first_bytes()
                if first is None:
                    return
                if first.startswith(HTTP2_PREFACE[:3]):
                    await self._run_hypercorn(first)
                    return
                http1 = _Http1(
                    self.stream,  # type: ignore[arg-type]  # plain TCP: lwc serves no TLS
                    self.send_lock,
                    self.lwc_connection,
                    self.lwc_app,
                    self.context.terminated,
                    self.config.keep_alive_max_requests,
                )
                async with trio.open_nursery() as nursery:
                    await http1.serve(nursery, first)
            except OSError:
                pass
            finally:
                await self._close()

        async def _first_bytes(self) -> bytes | None:
            """The connection's first bytes, enough to tell HTTP/2's preface from HTTP/1;
            None when the client left or stayed silent past the idle timeout."""
            connection = self.lwc_connection
            data = b""
            while len(data) < 3 and HTTP2_PREFACE.startswith(data):
                reader = connection.reader = trio.CancelScope(deadline=self._read_deadline())
                chunk = b""
                try:
                    with reader:
                        # bytes (a SocketStream's) are not copied
                        chunk = bytes(await self.stream.receive_some(MAX_RECV))
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    return None
                finally:
                    connection.reader = None
                if not chunk:
                    if reader.cancelled_caught and connection.phase == "reading":
                        # The headers did not arrive in time: nothing was answered yet.
                        await connection.refuse(http_rules.timed_out(self.lwc_limits))
                    return None
                connection.first_byte()
                data += chunk
            return data

        async def _run_hypercorn(self, first: bytes) -> None:
            socket = self.stream.socket
            client = parse_socket_addr(socket.family, socket.getpeername())
            server = parse_socket_addr(socket.family, socket.getsockname())
            task_group = LwcTaskGroup()
            task_group.lwc_app = self.lwc_app
            task_group.lwc_connection = self.lwc_connection
            async with task_group:
                self._task_group = task_group
                self.protocol = ProtocolWrapper(
                    self.app,
                    self.config,
                    self.context,
                    task_group,
                    ConnectionState(self.state),
                    False,
                    client,
                    server,
                    self.protocol_send,
                    "http/1.1",
                )
                await self.protocol.initiate()
                await self.protocol.handle(RawData(first))
                await self._read_data()

        async def protocol_send(self, event: Any) -> None:
            if isinstance(event, RawData):
                await self._write(event.data)
            elif isinstance(event, Updated):
                # Noted before hypercorn acts on it: its handling yields, and the reader may
                # parse the next (pipelined) request meanwhile, whose "parsed" must come last.
                connection = self.lwc_connection
                if event.idle:
                    connection.idle_again()
                    if connection.reader is not None:
                        connection.reader.deadline = self._read_deadline()
                else:
                    connection.headers_parsed()
            else:
                # An answer cut short (the app failed between its head and its body) is
                # not sent in part: the client sees the connection close.
                self.lwc_head, self.lwc_in_body = b"", False
                await super().protocol_send(event)

        async def _write(self, data: bytes) -> None:
            protocol = self.protocol.protocol
            sending_body = (
                isinstance(protocol, H11Protocol)
                and type(protocol.connection) is h11.Connection
                and protocol.connection.our_state is h11.SEND_BODY
            )
            if sending_body and not self.lwc_in_body:
                # The head: h11 has moved on to the body, which follows in the same task.
                self.lwc_in_body = True
                self.lwc_head = data
                return
            self.lwc_in_body = sending_body
            if self.lwc_head:
                data, self.lwc_head = self.lwc_head + data, b""
            if not data:
                return  # the end of a Content-Length body adds no bytes
            lock = self.send_lock
            await _acquire(lock)
            try:
                sent = await _send_rest(
                    self.stream,  # type: ignore[arg-type]  # plain TCP: lwc serves no TLS
                    self.lwc_connection,
                    data,
                    self.lwc_limits,
                )
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                sent = False
            finally:
                lock.release()
            if not sent:
                await self.protocol.handle(Closed())

        async def _close(self) -> None:
            # hypercorn closes without its send lock. When h11 fails on input that came
            # behind a request (its peer is done, or must close), the reader closes the
            # socket while the app is writing that request's answer: the answer is lost
            # (`BusyResourceError`; hypercorn issues #225, #329). Let it finish first,
            # briefly: a client that does not read its answer does not hold the close.
            connection = self.lwc_connection
            answering = connection.answering
            # The answering task itself closes after its answer (hypercorn's recycle).
            if answering is not None and connection.answerer is not trio.lowlevel.current_task():
                with trio.move_on_after(RAW_SEND_TIMEOUT):
                    await answering.wait()
            await super()._close()

        def _read_deadline(self) -> float:
            """When the reader gives up: the read timeout while a request's headers are
            coming, the idle timeout (at once once the server stops) while idle."""
            connection = self.lwc_connection
            if connection.phase == "idle":
                if self.context.terminated.is_set():
                    return -inf
                return connection.since + self.lwc_limits.idle_timeout
            if connection.phase == "reading" and not connection.headers_done:
                return connection.since + self.lwc_limits.read_timeout
            return inf

        async def _read_data(self) -> None:
            connection = self.lwc_connection
            connection.send_lock = self.send_lock
            connection.http1 = isinstance(self.protocol.protocol, H11Protocol)
            while True:
                reader = connection.reader = trio.CancelScope(deadline=self._read_deadline())
                try:
                    with reader:
                        data = await self.stream.receive_some(MAX_RECV)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    break
                if reader.cancelled_caught:
                    if connection.phase == "reading" and not connection.headers_done:
                        # The headers did not arrive in time: nothing was answered yet.
                        await connection.refuse(http_rules.timed_out(self.lwc_limits))
                    # Otherwise idle for too long, or the server is stopping: close.
                    break
                if connection.closing:
                    # Bytes after an answer that closes the connection (say, a request
                    # smuggled behind an ambiguous body) are dropped unparsed: h11 would
                    # fail on them and hypercorn close the socket under the answer.
                    if data == b"":
                        break
                    continue
                if data and connection.phase == "idle":
                    connection.first_byte()
                await self.protocol.handle(RawData(bytes(data)))
                if data == b"":
                    break
            connection.reader = None
            await self.protocol.handle(Closed())

    return LwcTCPServer


# -- start-up ---------------------------------------------------------------------------


def read_token(path: Path | None) -> bytes | None:
    """The bearer token in `path` (surrounding whitespace stripped), read once.

    Raises:
        CliError: unreadable, empty or implausibly long (exit 1).
    """
    if path is None:
        return None
    try:
        with path.open("rb") as file:
            data = file.read(TOKEN_FILE_LIMIT + 1)
    except OSError as exc:
        raise CliError(
            "token_file_unreadable", f"--http-token-file {path}: {exc.strerror or exc}"
        ) from None
    token = data.strip()
    if not token or len(data) > TOKEN_FILE_LIMIT or any(b <= 0x20 or b >= 0x7F for b in token):
        raise CliError(
            "token_file_invalid",
            f"--http-token-file {path}: must hold one printable ASCII token "
            f"of at most {TOKEN_FILE_LIMIT} bytes",
        )
    return token


def open_listener(http: HttpConfig) -> socket.socket:
    """A socket bound to the listen address (not yet listening).

    Raises:
        CliError: the address is in use or cannot be bound (exit 1).
    """
    family = socket.AF_INET6 if ":" in http.address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    where = f"{http_rules.url_host(http.host)}:{http.port}"
    try:
        # Lets a restarted server rebind while old connections sit in TIME_WAIT;
        # it never lets two servers share a listening port.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((http.address, http.port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CliError("address_in_use", f"cannot listen on {where}: already in use") from None
        raise CliError("listen_failed", f"cannot listen on {where}: {exc.strerror}") from None
    return sock


def _hypercorn_config(limits: Limits) -> Any:
    from hypercorn.config import Config

    config = Config()
    config.keep_alive_timeout = limits.idle_timeout
    config.accesslog = None
    # Inside the `lwc` logger tree: silent unless LWC_LOG asks for it.
    config.errorlog = logging.getLogger("lwc.http.server")
    config.include_server_header = False
    return config


async def _serve_connections(
    app: McpHttpApp,
    sock: socket.socket,
    grace: float,
    stop: trio.Event,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """hypercorn's Trio worker loop (`hypercorn.trio.run.worker_serve`) with one change.

    There, an exception escaping one connection's handler cancels the whole
    server: a client hanging up mid-body while its early 4xx is being written
    makes hypercorn 0.18's reader and writer collide on the socket
    (`BusyResourceError`) and the process exit (hypercorn issues #225, #329).
    Here a failing connection is logged and dropped; the server keeps serving.
    No lifespan protocol either: the app has nothing to set up. Every connection
    goes through the cap (`_Connections`) and lwc's `TCPServer` subclass.
    """
    from hypercorn.trio.worker_context import WorkerContext
    from hypercorn.typing import ConnectionState
    from hypercorn.utils import wrap_app

    limits = app.limits
    config = _hypercorn_config(limits)
    context = WorkerContext(None)
    asgi = wrap_app(app, config.wsgi_max_body_size, "asgi")  # type: ignore[arg-type]
    fd_limit, fds_in_use = _fd_usage()
    cap = http_rules.connection_cap(limits.max_connections, fd_limit, fds_in_use)
    if cap < limits.max_connections:
        log.warning("at most %d open connections: the file-descriptor limit is %s", cap, fd_limit)
    connections = _Connections(cap, limits)
    server_class = _lwc_tcp_server()

    async def handle(stream: trio.SocketStream) -> None:
        connection = _Connection(stream, trio.current_time())
        if not await connections.admit(connection):
            return
        server = server_class(
            asgi, config, context, ConnectionState({CONNECTION_KEY: connection}), stream
        )
        server.lwc_connection, server.lwc_limits, server.lwc_app = connection, limits, app
        try:
            await server
        except* Exception as group:
            log.warning("connection failed: %r", group.exceptions)
        finally:
            connections.discard(connection)

    sock.listen(BACKLOG)
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    async with trio.open_nursery() as handlers:
        async with trio.open_nursery() as acceptor:
            await acceptor.start(
                partial(trio.serve_listeners, handle, [listener], handler_nursery=handlers)
            )
            task_status.started()
            await stop.wait()
            acceptor.cancel_scope.cancel()  # closes the listener: new clients are refused
        # Idle keep-alive connections close now; busy ones get the grace to answer.
        await context.terminated.set()
        connections.close_idle()
        handlers.cancel_scope.deadline = trio.current_time() + grace


async def serve_http(
    config: ServerConfig,
    faults: FaultPlan,
    engines: Engines | None = None,
) -> int:
    """Serve MCP over HTTP until SIGINT/SIGTERM; returns the exit code.

    Raises:
        CliError: unreadable token file or unusable listen address (exit 1).
    """
    http = config.http if config.http is not None else HttpConfig()
    try:
        limits = http_rules.parse_limits(os.environ.get(http_rules.LIMITS_ENV))
    except ValueError as exc:
        raise CliError("invalid_http_limits", str(exc), exit_code=2) from None
    token = read_token(http.token_file)
    sock = open_listener(http)
    port = sock.getsockname()[1]
    policy = http_rules.Policy.build(
        port=port,
        base_path=http.base_path,
        listen_names=(http.host, http.address),
        allowed_hosts=http.allowed_hosts,
        token=token,
    )
    services = Services(config, faults, engines)
    app = McpHttpApp(policy, services.explorer(), config.version, config.max_in_flight, limits)
    url = f"http://{http_rules.url_host(http.address)}:{port}{http.base_path}"
    if http.remote:
        _say(
            f"lwc: WARNING: remote mode: serving {url} beyond this machine; every request "
            f"needs the bearer token; scopes allowed: {', '.join(sorted(config.allowed_scopes))}"
        )

    stop = trio.Event()
    hard_stop = trio.CancelScope()
    with sock, trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as outer:
            await outer.start(services.run)
            outer.start_soon(_on_signals, signals, stop, hard_stop)
            with hard_stop:
                async with trio.open_nursery() as server:
                    await server.start(_serve_connections, app, sock, config.grace, stop)
                    _say(f"lwc: listening on {url}")
            # The server is down: nothing can reach the planes any more.
            outer.cancel_scope.cancel()
    return 0


async def _on_signals(
    signals: AsyncIterator[int], stop: trio.Event, hard_stop: trio.CancelScope
) -> None:
    async for _ in signals:
        if stop.is_set():
            # A second signal: the user does not want to wait for the grace.
            hard_stop.cancel()
        stop.set()


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
