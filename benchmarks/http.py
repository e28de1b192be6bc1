"""The one HTTP client: MCP over streamable HTTP, JSON responses, with h11 on trio sockets.

`HttpConnection` is one HTTP/1.1 connection sending one request at a time (keep-alive, or a
fresh connection per request with `close=True`). `HttpServer` starts `lwc serve --mcp
--transport http` (or any server that announces `listening on http://…` on stderr) and
offers the routed-request interface the soak uses: `request`, `request_cancellable`,
`cancel`, `seen`, `unclaimed`, `finish`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import h11
import trio

from benchmarks.messages import PROTOCOL, Message, encode, key_of, oversize_line
from benchmarks.stdio import RESPONSE_TIMEOUT, ServerGone, wait_exit

START_TIMEOUT: Final = 60.0


class HttpConnection:
    """One HTTP/1.1 connection to `host:port`, one POST at a time."""

    def __init__(self, host: str, port: int, path: str, *, close: bool = False) -> None:
        self.host, self.port, self.path = host, port, path
        self.close_each = close
        self.stream: trio.SocketStream | None = None
        self.conn = h11.Connection(h11.CLIENT)
        self.headers = [
            ("host", f"{host}:{port}"),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", PROTOCOL),
        ]
        if close:
            self.headers.append(("connection", "close"))

    async def post(self, body: bytes) -> tuple[int, bytes]:
        """POST `body`: (status, response body). ServerGone if the connection drops."""
        headers = [*self.headers, ("content-length", str(len(body)))]
        data = self.conn.send(h11.Request(method="POST", target=self.path, headers=headers))
        data += self.conn.send(h11.Data(data=body)) + self.conn.send(h11.EndOfMessage())
        if self.stream is None:
            self.stream = await trio.open_tcp_stream(self.host, self.port)
        await self.stream.send_all(data)
        status, chunks = 0, []
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(await self.stream.receive_some(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise ServerGone(f"{self.host}:{self.port}: connection closed mid-answer")
        if (
            self.close_each
            or self.conn.our_state is h11.MUST_CLOSE
            or self.conn.their_state is h11.MUST_CLOSE
        ):
            # The server recycles keep-alive connections now and then (hypercorn: every
            # 1000 requests); a real client reconnects, and so does this one.
            await self.aclose()
        else:
            self.conn.start_next_cycle()
        return status, b"".join(chunks)

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
            self.stream = None
        self.conn = h11.Connection(h11.CLIENT)


def start_http_server(
    argv: Sequence[str], env: dict[str, str], cwd: Path | str | None = None
) -> tuple[subprocess.Popen[bytes], str, int, int, str]:
    """Start a server that prints `listening on http://HOST:PORT/PATH` to stderr.

    Returns (process, host, port, stderr descriptor, path); raises ServerGone when it exits
    or stays silent for START_TIMEOUT seconds.
    """
    err = tempfile.TemporaryFile()  # noqa: SIM115 (only its descriptor is kept)
    errfd = os.dup(err.fileno())
    proc = subprocess.Popen(
        list(argv), env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=err, stderr=err
    )
    err.close()
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        text = os.pread(errfd, 65536, 0).decode(errors="replace")
        for line in text.splitlines():
            if "listening on http://" in line:
                url = line.split("listening on ", 1)[1].strip()
                hostport, _, path = url.removeprefix("http://").partition("/")
                host, _, port = hostport.rpartition(":")
                return proc, host, int(port), errfd, "/" + path
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            os.close(errfd)
            raise ServerGone(f"HTTP server did not start: {text[-500:]}")
        time.sleep(0.02)


class HttpServer:
    """`lwc serve --mcp --transport http` driven with one fresh connection per request."""

    transport = "http"

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: Path | str) -> None:
        full = [*argv, "--transport", "http", "--http-listen", "127.0.0.1:0"]
        self.proc, self.host, self.port, self._errfd, self.path = start_http_server(full, env, cwd)
        self.pid = self.proc.pid
        self.seen: Counter[tuple[str, Any]] = Counter()
        self.unclaimed: list[Message] = []
        self.bad_lines: list[bytes] = []
        self.eof = trio.Event()
        self._inflight: dict[tuple[str, Any], trio.CancelScope] = {}
        self.retry_busy = False
        self.busy_retries = 0

    @classmethod
    async def start(
        cls, nursery: trio.Nursery, argv: Sequence[str], env: dict[str, str], cwd: Path
    ) -> HttpServer:
        server = cls(argv, env, cwd)
        nursery.start_soon(server._guard)
        await trio.lowlevel.checkpoint()
        return server

    async def _guard(self) -> None:
        try:
            await wait_exit(self.proc)
        finally:
            if self.proc.poll() is None:
                self.kill()
                self.proc.wait()
            self.eof.set()

    @property
    def stderr(self) -> bytes:
        """Everything the server wrote (stdout and stderr) but its `listening on` line."""
        raw = os.pread(self._errfd, 65536, 0)
        return b"\n".join(ln for ln in raw.split(b"\n") if b"listening on" not in ln).strip()

    async def post(self, body: bytes) -> tuple[int, bytes]:
        conn = HttpConnection(self.host, self.port, self.path, close=True)
        try:
            return await conn.post(body)
        finally:
            await conn.aclose()

    async def request(
        self, message: Message, within: float = RESPONSE_TIMEOUT
    ) -> tuple[Message, float]:
        """POST one message: (response, seconds); a non-200 answer carries `_status`."""
        key = key_of(message["id"])
        sent = time.perf_counter()
        with trio.fail_after(within):
            while True:
                status, payload = await self.post(encode(message)[:-1])
                response = json.loads(payload) if payload else {}
                busy = response.get("error", {}).get("data", {}).get("kind") == "server_busy"
                if not (status == 503 and busy and self.retry_busy):
                    break
                # Above the in-flight bound (SPEC §1.2): a client retries; so does the soak,
                # at once (Retry-After is advice for people), while a burst is running.
                self.busy_retries += 1
                await trio.sleep(0.02)
        took = time.perf_counter() - sent
        if status != 200:
            response = {"_status": status, **response}
        self.seen[key] += 1
        return response, took

    async def request_cancellable(self, message: Message, scope: trio.CancelScope) -> None:
        """A request that a later `cancel(id)` aborts by closing its connection."""
        key = key_of(message["id"])
        self._inflight[key] = scope
        try:
            with scope:
                status, payload = await self.post(encode(message)[:-1])
                response = json.loads(payload) if payload else {}
                self.seen[key] += 1
                self.unclaimed.append(
                    response if status == 200 else {"_status": status, **response}
                )
        finally:
            self._inflight.pop(key, None)

    async def oversize(self, rid: Any, ws: str) -> tuple[Message, float]:
        sent = time.perf_counter()
        status, payload = await self.post(oversize_line(rid, ws)[:-1])
        took = time.perf_counter() - sent
        response = json.loads(payload) if payload else {}
        return {"_status": status, **response}, took

    async def cancel(self, rid: Any) -> None:
        scope = self._inflight.get(key_of(rid))
        if scope is not None:
            scope.cancel()
        await trio.lowlevel.checkpoint()

    async def finish(self, within: float = 30.0) -> int:
        """SIGTERM (HTTP has no stdin), then the exit code."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        with trio.fail_after(within):
            return await wait_exit(self.proc)

    def stop(self, sig: int = signal.SIGINT, within: float = START_TIMEOUT) -> int:
        """Blocking stop: `sig`, then the exit code (-9 when it had to be killed)."""
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(within)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
            return -9

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
