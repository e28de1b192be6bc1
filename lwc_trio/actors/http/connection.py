"""The byte mover: one client connection on one `h11.Connection`, and the connection cap.

One task per connection reads, lets h11 parse, asks `http_rules` what to answer, and
writes the answer h11 serialises; after each exchange `start_next_cycle()` readies the
same parser for the next request (keep-alive, pipelining). A tool call runs in that task
too, while a watcher reads on: the end of the client's input cancels the call (closing
the request is how an HTTP client cancels). Every wait is one cancel scope whose deadline
is the limit that applies (`Peer.wait`): the read timeout from a request's first byte
until its body is in, the idle timeout between requests, the write timeout while an
answer waits for the client to read it. The cap closes a connection for room by
cancelling that same scope, so the connection's own task answers 408 or closes: nothing
else ever writes to its socket.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import time
from email.utils import formatdate
from functools import lru_cache
from math import inf
from typing import Final
from urllib.parse import unquote

import attrs
import h11
import trio

from lwc_trio.actors.explore import Explorer
from lwc_trio.protocol import http_rules, session
from lwc_trio.protocol.http_rules import BODY_LIMIT, HEAD_LIMIT, Limits, Phase, Response

log = logging.getLogger("lwc.http")

MAX_RECV: Final = 2**16
"""Bytes read from a socket at once."""
PIPELINE_LIMIT: Final = BODY_LIMIT + HEAD_LIMIT
"""Bytes of further requests read (and held) while a tool call runs; beyond that the
connection is not read until the call's answer is out."""
PAUSED_POLL: Final = 0.25
"""Seconds between looks at such a paused connection for its client having closed it."""
LINGER: Final = 1.0
"""Seconds a refused connection is read (input dropped) after its 503, so closing it with
unread input does not reset the connection before the client has read the answer."""
MAX_REFUSING: Final = 16
"""Refusals lingering at once; beyond that a refused connection is closed at once."""
_ANSWERING: Final = (h11.IDLE, h11.SEND_RESPONSE)
"""Our h11 states in which nothing of an answer has been written yet."""
_CLOSED_EVENTS: Final = getattr(select, "POLLRDHUP", 0) | getattr(select, "POLLHUP", 0)


@attrs.define(eq=False)
class Endpoint:
    """What every connection shares: the rules' policy and limits, the explore pipeline,
    the tool-call slots, and whether the server is stopping."""

    policy: http_rules.Policy
    explorer: Explorer
    version: str
    max_in_flight: int
    limits: Limits = attrs.field(factory=Limits)
    slots: trio.Semaphore = attrs.field(init=False)
    stopping: bool = False
    """Set once the server stops: idle connections close, answers say `connection: close`."""

    def __attrs_post_init__(self) -> None:
        self.slots = trio.Semaphore(self.max_in_flight)

    def answer_body(self, body: bytes) -> Response | session.ToolCall:
        """The answer to a complete body, or the tool call that must run for it (holding
        one of the `max_in_flight` slots; 503 when every slot is taken)."""
        routed = http_rules.route_body(body)
        if isinstance(routed, Response):
            return routed
        answer = session.answer(routed, self.version)
        if not isinstance(answer, session.ToolCall):
            return http_rules.reply(answer)
        try:
            self.slots.acquire_nowait()
        except trio.WouldBlock:
            return http_rules.busy(answer.id, self.max_in_flight)
        return answer

    async def run_call(self, call: session.ToolCall) -> Response:
        """Run `call` in the slot `answer_body` took for it, and free the slot."""
        try:
            return Response(200, await self.explorer.call(call))
        finally:
            self.slots.release()


@attrs.define(eq=False)
class Peer:
    """One connection as the cap sees it: `phase` is `idle` until a request's first byte,
    `reading` until its body is complete (`since` is then that first byte's time), `busy`
    while its answer is computed; `writing_since` is set while an answer waits for the
    client to read it. `wait` is the scope of what the connection waits for now."""

    since: float
    phase: Phase = "idle"
    writing_since: float | None = None
    wait: trio.CancelScope | None = None
    evicted: bool = False
    """Closed by the cap for room: every wait of this connection ends at once."""

    def stalled(self) -> tuple[Phase, float]:
        if self.writing_since is not None:
            return "writing", self.writing_since
        return self.phase, self.since

    def scope(self, deadline: float) -> trio.CancelScope:
        self.wait = trio.CancelScope(deadline=deadline)
        if self.evicted:
            self.wait.cancel()
        return self.wait

    def evict(self) -> None:
        self.evicted = True
        if self.wait is not None:
            self.wait.cancel()

    def first_byte(self) -> None:
        if self.phase == "idle":
            self.phase, self.since = "reading", trio.current_time()


@attrs.define(eq=False)
class Connections:
    """The open connections, capped at `limit`: a new one beyond it closes the one that
    has made no progress for longest (`http_rules.choose_victim`), or, when every open
    one is busy answering, is refused with 503."""

    limit: int
    open: dict[Peer, None] = attrs.field(factory=dict)
    refusing: int = 0

    def admit(self, peer: Peer) -> bool:
        """Register `peer`, closing another to make room; False when it must be refused."""
        if len(self.open) >= self.limit:
            members = list(self.open)
            index = http_rules.choose_victim(p.stalled() for p in members)
            if index is None:
                return False
            victim = members[index]
            del self.open[victim]
            phase, since = victim.stalled()
            log.info(
                "connection cap %d reached: closing one %s for %.1f s",
                self.limit,
                phase,
                trio.current_time() - since,
            )
            victim.evict()
        self.open[peer] = None
        return True

    def close_idle(self) -> None:
        """Wake every idle connection's read: it sees the server stopping and closes."""
        for peer in self.open:
            if peer.phase == "idle" and peer.wait is not None:
                peer.wait.cancel()

    def discard(self, peer: Peer) -> None:
        self.open.pop(peer, None)

    async def refuse(self, stream: trio.SocketStream) -> None:
        """503 to a connection beyond the cap, read for a moment, then closed."""
        if self.refusing >= MAX_REFUSING:
            return
        self.refusing += 1
        try:
            parser = _parser()
            data = _serialise(parser, http_rules.too_many_connections(self.limit), False)
            with trio.move_on_after(LINGER), contextlib.suppress(trio.BrokenResourceError):
                await stream.send_all(data)
                await stream.send_eof()
                for _ in range(16):
                    if not await stream.receive_some(MAX_RECV):
                        break
        finally:
            self.refusing -= 1


@attrs.define(eq=False)
class HttpConnection:
    """One client connection, served until it closes or must."""

    stream: trio.SocketStream
    peer: Peer
    endpoint: Endpoint
    parser: h11.Connection = attrs.field(factory=lambda: _parser())
    head_only: bool = False
    """The current request is a HEAD: its answer carries no body."""
    gone: bool = False
    """The client closed its side while a tool call ran."""
    received: int = 0
    """Bytes given to the parser since the current request began (what the previous one
    left unread included): the head's size once h11 has parsed it (`_head_fits`)."""

    async def serve(self) -> None:
        parser = self.parser
        while True:
            event = await self._next_event()
            if type(event) is not h11.Request:
                return
            if not await self._head_fits() or not await self._exchange(event):
                return
            if parser.our_state is not h11.DONE or parser.their_state is not h11.DONE:
                return
            parser.start_next_cycle()
            self.head_only = False
            self.peer.phase, self.peer.since = "idle", trio.current_time()
            self.received = len(parser.trailing_data[0])
            if self.received:
                self.peer.first_byte()  # the next request has begun arriving already

    async def _head_fits(self) -> bool:
        """Whether the head just parsed is within `HEAD_LIMIT` bytes; else 431 and False.
        h11 bounds only a head it is still waiting for, so a whole head in one read was
        never measured: the bytes received less those h11 has not parsed yet are."""
        refused = http_rules.check_head_size(self.received - len(self.parser.trailing_data[0]))
        if refused is None:
            return True
        await self._send(refused)
        return False

    async def _next_event(self) -> h11.Event | None:
        """The parser's next event, reading as needed; None when the connection is done
        with (the client left, was too slow, or broke the protocol: answered if it can be)."""
        while True:
            try:
                event = self.parser.next_event()
            except h11.RemoteProtocolError as error:
                await self._send(http_rules.malformed(error.error_status_hint))
                return None
            if event is not h11.NEED_DATA:
                return event if isinstance(event, h11.Event) else None  # PAUSED: never here
            if not await self._read():
                return None

    async def _read(self) -> bool:
        """Read more input into the parser within the deadline that applies; False when
        the connection must close (a 408 sent when a request was cut short)."""
        peer, limits = self.peer, self.endpoint.limits
        if peer.phase == "reading":
            deadline = peer.since + limits.read_timeout
        else:
            deadline = -inf if self.endpoint.stopping else peer.since + limits.idle_timeout
        data = b""
        with peer.scope(deadline) as waiting, contextlib.suppress(trio.BrokenResourceError):
            data = await self.stream.receive_some(MAX_RECV)
        if waiting.cancelled_caught:
            if peer.phase == "reading":
                await self._send(http_rules.timed_out(limits))
            return False
        if not data:
            return False
        peer.first_byte()
        self.parser.receive_data(data)
        self.received += len(data)
        return True

    async def _exchange(self, request: h11.Request) -> bool:
        """Answer one request from its head on; False when the connection must close."""
        # h11 admits only ASCII targets; percent-escapes decoded as in any server's path.
        path = request.target.partition(b"?")[0].decode("ascii")
        method = request.method.decode("ascii").upper()
        self.head_only = method == "HEAD"
        head = http_rules.Head(
            method, unquote(path) if "%" in path else path, request.headers, request.http_version
        )
        refused = http_rules.check_head(self.endpoint.policy, head)
        if refused is not None:
            if refused.close or self.parser.they_are_waiting_for_100_continue:
                # A client waiting for "100 Continue" will not send its body: close.
                return await self._send(refused, True)
            # Answered at once, before the body; the body is then read and dropped (also
            # when the client leaves after this, so closing does not reset the connection
            # under the answer) and the connection serves the next request.
            sent = await self._send(refused)
            return await self._body(None) is not None and sent
        body = await self._body(bytearray())
        if body is None:
            return False
        if len(body) > BODY_LIMIT:
            # Past the cap: the rest is never read, so the connection cannot go on.
            return await self._send(http_rules.too_large(), True)
        answer = self.endpoint.answer_body(bytes(body))
        response = await self._call(answer) if isinstance(answer, session.ToolCall) else answer
        return response is not None and await self._send(response)

    async def _body(self, into: bytearray | None) -> bytearray | None:
        """The current request's body (dropped when `into` is None), at most just past
        `BODY_LIMIT`; None when the connection must close."""
        kept, size = bytearray() if into is None else into, 0
        while True:
            if into is not None and self.parser.they_are_waiting_for_100_continue:
                informational = h11.InformationalResponse(status_code=100, headers=[])
                if not await self._write(self.parser.send(informational)):
                    return None
            event = await self._next_event()
            if type(event) is h11.Data:
                size += len(event.data)
                if into is None and size > BODY_LIMIT:
                    return None
                if into is not None:
                    kept += event.data
                    if size > BODY_LIMIT:
                        return kept  # too large: the caller answers 413 and closes
            elif type(event) is h11.EndOfMessage:
                self.peer.phase = "busy"
                return kept
            else:
                return None

    async def _call(self, call: session.ToolCall) -> Response | None:
        """Run a tool call while watching the connection; None when the client left."""
        response: Response | None = None
        with trio.CancelScope() as work:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch, work)
                response = await self.endpoint.run_call(call)
                nursery.cancel_scope.cancel()
        return None if self.gone else response

    async def _watch(self, work: trio.CancelScope) -> None:
        """Read on while a call runs (what comes is the next request, held in the parser)
        and cancel the call when the client closes its side. Past `PIPELINE_LIMIT` the
        input is left unread; the end behind it is then seen by `poll` (`POLLRDHUP`)."""
        held = 0
        while held < PIPELINE_LIMIT:
            data = b""
            with contextlib.suppress(trio.BrokenResourceError):
                data = await self.stream.receive_some(MAX_RECV)
            if not data:
                break
            held += len(data)
            self.parser.receive_data(data)
        else:
            # Nothing to wait on but a condition of the socket's other end: look again.
            while not _peer_closed(self.stream.socket):  # noqa: ASYNC110
                await trio.sleep(PAUSED_POLL)
        self.gone = True
        work.cancel()

    async def _send(self, response: Response, close: bool = False) -> bool:
        """Write `response` whole, unless an answer was already begun; False when the
        connection ends after it (the answer or the client says so, or the server stops)."""
        parser = self.parser
        if parser.our_state not in _ANSWERING:
            return False
        close = close or self.endpoint.stopping
        data = _serialise(parser, response, close, body=not self.head_only)
        return await self._write(data) and self._kept_open()

    def _kept_open(self) -> bool:
        """Whether the answer just written leaves the connection open (h11 knows)."""
        return self.parser.our_state is h11.DONE

    async def _write(self, data: bytes) -> bool:
        """Write `data` within the write timeout; False when the client did not take it
        in time (or is gone). The cap may end the wait for room, like a deadline."""
        peer = self.peer
        sent = _send_now(self.stream.socket, data)
        if sent < 0:
            return False
        if sent == len(data):
            return True
        peer.writing_since = now = trio.current_time()
        try:
            with peer.scope(now + self.endpoint.limits.write_timeout) as waiting:
                await self.stream.send_all(memoryview(data)[sent:])
        except trio.BrokenResourceError:
            return False
        finally:
            peer.writing_since = None
        if waiting.cancelled_caught:
            log.info("closing a connection whose client did not read its answer in time")
        return not waiting.cancelled_caught


def _serialise(parser: h11.Connection, response: Response, close: bool, body: bool = True) -> bytes:
    """The whole answer as h11 writes it (h11 adds `connection: close` itself when the
    client asked for it or spoke HTTP/1.0), for one socket write."""
    date = _date_header(int(time.time()))
    headers = response.header_list(close=close, date=date)
    data = parser.send(
        h11.Response(status_code=response.status, headers=headers, reason=response.reason)
    )
    if body and response.body:
        data += parser.send(h11.Data(data=response.body))
    return data + parser.send(h11.EndOfMessage())


def _parser() -> h11.Connection:
    return h11.Connection(h11.SERVER, max_incomplete_event_size=HEAD_LIMIT)


@lru_cache(maxsize=1)
def _date_header(second: int) -> bytes:
    # Formatted once a second (RFC 9110 wants a Date from a server with a clock).
    return formatdate(second, usegmt=True).encode("ascii")


def _send_now(sock: trio.socket.SocketType, data: bytes) -> int:
    """Write what the socket takes without waiting: the bytes written (0 when its buffer
    is full), -1 when the connection is closed or broken. A small answer usually fits at
    once, and trio's `send_all` would still pass through the scheduler after the write."""
    fd = sock.fileno()
    if fd < 0:
        return -1
    try:
        return os.write(fd, data)
    except BlockingIOError:
        return 0
    except OSError:  # EPIPE, ECONNRESET …: the client is gone
        return -1


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
