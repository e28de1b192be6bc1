"""The HTTP transport actor: stateless streamable HTTP on hypercorn's Trio worker.

A small ASGI app sits between hypercorn and the same explore pipeline
(`actors/explore.py`) the stdio transport uses. Every decision about a request
(status codes, their order, headers, bodies) is a pure function in
`lwc_trio.protocol.http_rules`; this module only moves bytes, counts tool calls
in flight and owns the lifetimes: the request's work is cancelled when its
client goes away, and SIGINT/SIGTERM stop accepting, let in-flight requests
finish within the grace, then stop the services (which reaps the CodeGraph
child). hypercorn is imported here only, and this module only in HTTP mode.
"""

from __future__ import annotations

import errno
import logging
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from lwc_trio.actors.explore import Explorer
from lwc_trio.actors.planes import EngineFactory
from lwc_trio.actors.supervisor import Services
from lwc_trio.config import HttpConfig, ServerConfig
from lwc_trio.exceptions import CliError
from lwc_trio.faults import FaultPlan
from lwc_trio.protocol import http_rules, session
from lwc_trio.protocol.http_rules import BODY_LIMIT, Response

log = logging.getLogger("lwc.http")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

BACKLOG: Final = 128
KEEP_ALIVE: Final = 5.0
"""Seconds an idle keep-alive connection stays open (hypercorn's default)."""
TOKEN_FILE_LIMIT: Final = 4096
"""A token file longer than this is a mistake (a key file, a log), not a token."""


@attrs.define(eq=False)
class _Inbound:
    """The request body as it arrives, and whether the client is still there.

    `pump()` is the only reader of the ASGI `receive` channel. It keeps reading
    after the body is complete, or past the cap, because hypercorn queues every
    chunk and the final `http.disconnect` for the app and blocks the connection
    when nobody takes them; what arrives past the cap is dropped, never kept.
    """

    receive: Receive
    work: trio.CancelScope
    body: bytearray = attrs.field(factory=bytearray)
    ready: trio.Event = attrs.field(factory=trio.Event)
    """Set once the body is complete, too large, or the client left."""
    too_large: bool = False
    gone: bool = False

    async def pump(self) -> None:
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                # Closing the request is how an HTTP client cancels it.
                self.gone = True
                self.work.cancel()
                self.ready.set()
                return
            if self.ready.is_set():
                continue
            chunk = message.get("body", b"")
            if len(self.body) + len(chunk) > BODY_LIMIT:
                self.too_large = True
                self.body.clear()
                self.ready.set()
            else:
                self.body += chunk
                if not message.get("more_body", False):
                    self.ready.set()


@attrs.define(eq=False)
class McpHttpApp:
    """The ASGI app: one POST, one JSON-RPC message, one answer."""

    policy: http_rules.Policy
    explorer: Explorer
    version: str
    max_in_flight: int
    slots: trio.Semaphore = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.slots = trio.Semaphore(self.max_in_flight)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        head = http_rules.Head(scope["method"], scope["path"], scope["headers"])
        inbound = _Inbound(receive, trio.CancelScope())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(inbound.pump)
            response: Response | None = None
            with inbound.work:
                response = await self._respond(head, inbound)
            if response is not None and not inbound.gone:
                # Outside the work scope: a finished answer is always delivered whole.
                try:
                    await _send(send, response)
                except (trio.BrokenResourceError, trio.BusyResourceError) as exc:
                    # The client hung up while hypercorn was writing or closing.
                    log.debug("client left before its %d was sent: %r", response.status, exc)
            nursery.cancel_scope.cancel()

    async def _respond(self, head: http_rules.Head, inbound: _Inbound) -> Response:
        refused = http_rules.check_head(self.policy, head)
        if refused is not None:
            return refused
        await inbound.ready.wait()
        if inbound.too_large:
            return http_rules.too_large()
        routed = http_rules.route_body(bytes(inbound.body))
        if isinstance(routed, Response):
            return routed
        answer = session.answer(routed, self.version)
        if not isinstance(answer, session.ToolCall):
            return http_rules.reply(answer)
        try:
            self.slots.acquire_nowait()
        except trio.WouldBlock:
            return http_rules.busy(answer.id, self.max_in_flight)
        try:
            return http_rules.Response(200, await self.explorer.call(answer))
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


async def _send(send: Send, response: Response) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": response.status,
            "headers": response.asgi_headers(),
        }
    )
    await send({"type": "http.response.body", "body": response.body})


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


def _hypercorn_config() -> Any:
    from hypercorn.config import Config

    config = Config()
    config.keep_alive_timeout = KEEP_ALIVE
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
    No lifespan protocol either: the app has nothing to set up.
    """
    from hypercorn.trio.tcp_server import TCPServer
    from hypercorn.trio.worker_context import WorkerContext
    from hypercorn.typing import ConnectionState
    from hypercorn.utils import wrap_app

    config = _hypercorn_config()
    context = WorkerContext(None)
    asgi = wrap_app(app, config.wsgi_max_body_size, "asgi")  # type: ignore[arg-type]

    async def handle(stream: trio.SocketStream) -> None:
        try:
            await TCPServer(asgi, config, context, ConnectionState({}), stream)  # type: ignore[arg-type]
        except* Exception as group:
            log.warning("connection failed inside hypercorn: %r", group.exceptions)

    sock.listen(BACKLOG)
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as acceptor:
            await acceptor.start(
                partial(trio.serve_listeners, handle, [listener], handler_nursery=connections)
            )
            task_status.started()
            await stop.wait()
            acceptor.cancel_scope.cancel()  # closes the listener: new clients are refused
        # Idle keep-alive connections close now; busy ones get the grace to answer.
        await context.terminated.set()
        connections.cancel_scope.deadline = trio.current_time() + grace


async def serve_http(
    config: ServerConfig,
    faults: FaultPlan,
    engines: Mapping[str, EngineFactory] | None = None,
) -> int:
    """Serve MCP over HTTP until SIGINT/SIGTERM; returns the exit code.

    Raises:
        CliError: unreadable token file or unusable listen address (exit 1).
    """
    http = config.http if config.http is not None else HttpConfig()
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
    app = McpHttpApp(policy, services.explorer(), config.version, config.max_in_flight)
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
