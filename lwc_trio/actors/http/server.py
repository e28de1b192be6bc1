"""Start-up, the accept loop and the shutdown of the HTTP transport.

The socket is bound here first, so "port in use" is an exit before anything starts and
port 0 is known up front; Trio's own `SocketListener` and `serve_listeners` accept, every
connection passes the cap (`Connections`) and is then served by `HttpConnection`. An
exception escaping one connection is logged and that connection dropped: the server
keeps serving. SIGINT/SIGTERM stop accepting, close idle connections, give requests in
flight the grace, then stop the services (which reaps the CodeGraph child).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import resource
import signal
import socket
import sys
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Final

import trio

from lwc_trio.actors.http.connection import Connections, Endpoint, HttpConnection, Peer
from lwc_trio.actors.supervisor import Services
from lwc_trio.config import HttpConfig, ServerConfig
from lwc_trio.exceptions import CliError
from lwc_trio.faults import FaultPlan
from lwc_trio.protocol import http_rules

log = logging.getLogger("lwc.http")

BACKLOG: Final = 128
TOKEN_FILE_LIMIT: Final = 4096
"""A token file longer than this is a mistake (a key file, a log), not a token."""


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


def _fd_usage() -> tuple[int | None, int]:
    """(soft limit on open files or None for unlimited, descriptors open now)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = None if soft == resource.RLIM_INFINITY else soft
    for folder in ("/proc/self/fd", "/dev/fd"):
        with contextlib.suppress(OSError):
            return limit, len(os.listdir(folder))
    return limit, 0


async def _serve(
    endpoint: Endpoint,
    sock: socket.socket,
    grace: float,
    stop: trio.Event,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept and serve connections until `stop`, then give busy ones the grace."""
    limits = endpoint.limits
    fd_limit, fds_in_use = _fd_usage()
    cap = http_rules.connection_cap(limits.max_connections, fd_limit, fds_in_use)
    if cap < limits.max_connections:
        log.warning("at most %d open connections: the file-descriptor limit is %s", cap, fd_limit)
    connections = Connections(cap)

    async def handle(stream: trio.SocketStream) -> None:
        peer = Peer(trio.current_time())
        try:
            if not connections.admit(peer):
                await connections.refuse(stream)
                return
            await HttpConnection(stream, peer, endpoint).serve()
        except Exception as exc:
            log.warning("connection failed: %r", exc)
        finally:
            connections.discard(peer)
            with trio.CancelScope(shield=True):
                await stream.aclose()

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
        endpoint.stopping = True
        connections.close_idle()
        handlers.cancel_scope.deadline = trio.current_time() + grace


async def serve_http(config: ServerConfig, faults: FaultPlan) -> int:
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
    services = Services(config, faults)
    endpoint = Endpoint(policy, services.explorer(), config.version, config.max_in_flight, limits)
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
                    await server.start(_serve, endpoint, sock, config.grace, stop)
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
