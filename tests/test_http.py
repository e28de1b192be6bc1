"""`lwc serve --mcp --transport http` honours SPEC §1.2 end to end: a real process, real sockets."""

from __future__ import annotations

import array
import contextlib
import fcntl
import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import child_env, lwc_command

from lwc_trio.cli.main import main

pytestmark = pytest.mark.slow

FAKE_CODEGRAPH = Path(__file__).parent / "fakes" / "fake_codegraph.py"
START_TIMEOUT = 15.0
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


class Server:
    """A running `lwc serve --transport http` process and everything it wrote."""

    def __init__(
        self,
        workspace: Path,
        home: Path,
        *flags: str,
        env: dict[str, str],
        stdin: int = subprocess.DEVNULL,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        argv = lwc_command("serve", "--mcp", "--transport", "http")
        if not any(flag.startswith("--http-listen") for flag in flags):
            argv += ["--http-listen", "127.0.0.1:0"]
        argv += ["--path", str(workspace), *flags]
        self.workspace = workspace
        self.proc = subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**child_env(home), **env},
            preexec_fn=preexec_fn,
        )
        self.stderr: list[str] = []
        self._listening = threading.Event()
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        if not self._listening.wait(START_TIMEOUT):
            self.proc.kill()
            raise AssertionError(f"server did not start: {self.stderr}")
        line = next(x for x in self.stderr if x.startswith("lwc: listening on "))
        self.url = line.removeprefix("lwc: listening on ")
        self.port = int(self.url.split(":")[2].split("/")[0])

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stderr.append(line)
            if line.startswith("lwc: listening on "):
                self._listening.set()
        self._listening.set()  # the process ended: stop waiting

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 10.0) -> tuple[int, bytes]:
        """Signal the server, wait for it; (exit code, stdout)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        stdout, _ = self.proc.communicate(timeout=timeout)
        self._reader.join(timeout)
        return self.proc.returncode, stdout


@pytest.fixture
def spawn(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Any]:
    """Start servers on free loopback ports; every one is stopped and checked at teardown."""
    started: list[Server] = []

    def start(*flags: str, workspace: Path | None = None, **env: str) -> Server:
        ws = workspace or tmp_path_factory.mktemp("ws")
        server = Server(ws, tmp_path_factory.mktemp("home"), *flags, env=env)
        started.append(server)
        return server

    yield start
    for server in started:
        code, stdout = server.stop()
        assert code == 0, server.stderr
        assert stdout == b""  # logs and diagnostics never reach stdout


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One default server for the read-only status checks."""
    server = Server(tmp_path_factory.mktemp("ws"), tmp_path_factory.mktemp("home"), env={})
    yield server
    code, stdout = server.stop()
    assert (code, stdout) == (0, b"")
    assert server.stderr == [f"lwc: listening on {server.url}"], "\n".join(server.stderr)


def request(
    port: int,
    method: str = "POST",
    path: str = "/",
    body: bytes | None = PING,
    headers: dict[str, str] | None = None,
    *,
    host: str | None = None,
    conn: http.client.HTTPConnection | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One raw request with exactly these headers (plus Host); (status, headers, body)."""
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
        for name, value in (JSON if headers is None else headers).items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        data = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        if own:
            conn.close()


def call(query: str, workspace: Path, rid: int = 2, **arguments: Any) -> bytes:
    explore: dict[str, Any] = {"query": query, "projectPath": str(workspace), **arguments}
    params = {"name": "lwc_explore", "arguments": explore}
    return json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    ).encode()


def kind_of(body: bytes) -> str:
    kind: str = json.loads(body)["error"]["data"]["kind"]
    return kind


# -- statuses, one rule at a time ---------------------------------------------------------

NOTE = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
CANCEL = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'


@pytest.mark.parametrize(
    ("method", "path", "headers", "host", "body", "status", "kind"),
    [
        ("POST", "/", JSON, "evil.test", PING, 403, "forbidden_host"),
        ("POST", "/", JSON, "localhost:1", PING, 403, "forbidden_host"),
        ("POST", "/", {**JSON, "origin": "http://evil.test"}, None, PING, 403, "forbidden_origin"),
        ("POST", "/", {**JSON, "origin": "null"}, None, PING, 403, "forbidden_origin"),
        ("POST", "/mcp", JSON, None, PING, 404, "not_found"),
        ("POST", "/?x=1&y", JSON, None, PING, 200, None),
        ("GET", "/", {}, None, None, 405, "method_not_allowed"),
        ("DELETE", "/", {}, None, None, 405, "method_not_allowed"),
        ("OPTIONS", "/", {"origin": "http://localhost"}, None, None, 403, "forbidden_origin"),
        ("OPTIONS", "/", {}, None, None, 405, "method_not_allowed"),
        ("POST", "/", {**JSON, "mcp-protocol-version": "2026-07-28"}, None, PING, 400,
         "unsupported_protocol_version"),
        ("POST", "/", {**JSON, "mcp-protocol-version": "2025-11-25"}, None, PING, 200, None),
        ("POST", "/", {"content-type": "text/plain"}, None, PING, 415, "unsupported_media_type"),
        ("POST", "/", {"accept": "*/*"}, None, PING, 415, "unsupported_media_type"),
        ("POST", "/", {**JSON, "accept": "text/event-stream"}, None, PING, 406, "not_acceptable"),
        ("POST", "/", {"content-type": "application/json; charset=utf-8"}, None, PING, 200, None),
        ("POST", "/", {**JSON, "accept": "*/*"}, None, PING, 200, None),
        ("POST", "/", JSON, None, b'{"jsonrpc":"2.0","id":1,', 400, "parse_error"),
        ("POST", "/", JSON, None, b"", 400, "parse_error"),
        ("POST", "/", JSON, None, b'{"jsonrpc":"2.0","id":true,"method":"ping"}', 400,
         "invalid_request"),
        ("POST", "/", JSON, None, b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400,
         "invalid_request"),
        ("POST", "/", JSON, None, b'{"jsonrpc":"2.0","id":3,"method":"server/discover"}', 200,
         "method_not_found"),
        ("POST", "/", JSON, None, b'{"jsonrpc":"2.0","id":3,"method":"tools/call",'
         b'"params":{"name":"nope"}}', 200, "unknown_tool"),
        ("POST", "/", JSON, None, NOTE, 202, None),
        ("POST", "/", JSON, None, CANCEL, 202, None),
        ("POST", "/", JSON, None, b'{"jsonrpc":"2.0","id":9,"result":{}}', 202, None),
    ],
)  # fmt: skip
def test_status_codes(
    shared: Server,
    method: str,
    path: str,
    headers: dict[str, str],
    host: str | None,
    body: bytes | None,
    status: int,
    kind: str | None,
) -> None:
    """Every status of SPEC §1.2 comes back for the request that earns it, with data.kind."""
    got, response_headers, data = request(shared.port, method, path, body, headers, host=host)
    assert got == status, data
    assert not [name for name in response_headers if name.startswith("access-control-")]
    if status == 202:
        assert data == b""
        return
    assert response_headers["content-type"] == "application/json"
    message = json.loads(data)
    if kind is None:
        assert "result" in message
    else:
        assert message["error"]["data"]["kind"] == kind
    if status == 405:
        assert response_headers["allow"] == "POST"


def test_a_duplicate_key_is_answered_with_the_request_id(shared: Server) -> None:
    """A key repeated inside `arguments`: 400, -32600, and the request's own id (SPEC §1.3:
    id null unless usable), not `null`."""
    body = (
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"lwc_explore",'
        b'"arguments":{"query":"a","query":"b"}}}'
    )
    status, _, data = request(shared.port, body=body)
    answer = json.loads(data)
    assert (status, answer["id"], answer["error"]["code"]) == (400, 5, -32600), data
    assert answer["error"]["data"]["kind"] == "invalid_request"


def test_ping_initialize_and_tools_list(shared: Server) -> None:
    """Protocol methods answer 200 with the negotiated version and the single tool."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-03-26", "capabilities": {}}}
    ).encode()  # fmt: skip
    status, _, data = request(shared.port, body=body)
    assert status == 200
    result = json.loads(data)["result"]
    assert result["protocolVersion"] == "2025-03-26"
    assert result["serverInfo"]["name"] == "lwc"
    status, _, data = request(shared.port, body=b'{"jsonrpc":"2.0","id":"t","method":"tools/list"}')
    assert status == 200
    tools = json.loads(data)["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["lwc_explore"]


def test_websocket_upgrade_is_refused_like_any_get(shared: Server) -> None:
    """A WebSocket handshake is a GET: 405 with Allow: POST, never an upgrade."""
    headers = {
        "upgrade": "websocket",
        "connection": "Upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
    }
    status, response_headers, data = request(shared.port, "GET", "/", None, headers)
    assert status == 405
    assert response_headers["allow"] == "POST"
    assert kind_of(data) == "method_not_allowed"


def test_keep_alive_connection_serves_many_requests(shared: Server) -> None:
    """One connection carries answers, refusals and 202s in a row without getting stuck."""
    conn = http.client.HTTPConnection("127.0.0.1", shared.port, timeout=10)
    try:
        statuses = [
            request(shared.port, conn=conn)[0],
            request(shared.port, path="/nope", conn=conn)[0],
            request(shared.port, body=NOTE, conn=conn)[0],
            request(shared.port, "GET", body=None, headers={}, conn=conn)[0],
            request(shared.port, conn=conn)[0],
        ]
    finally:
        conn.close()
    assert statuses == [200, 404, 202, 405, 200]


def test_body_of_exactly_64_kib_is_served(shared: Server) -> None:
    """The cap is inclusive: a 65,536-byte body is parsed and answered."""
    body = PING + b" " * (65_536 - len(PING))
    status, _, data = request(shared.port, body=body)
    assert (status, json.loads(data)["result"]) == (200, {})


def _raw_exchange(port: int, head: bytes, chunks: Iterator[bytes]) -> tuple[bytes, int]:
    """Send `head`, then chunks until the server answers; (response bytes, body bytes sent)."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        response = b""
        for chunk in chunks:
            with contextlib.suppress(BlockingIOError):
                response += sock.recv(65_536)
            if response:
                break
            try:
                sent += sock.send(chunk)
            except BlockingIOError:
                time.sleep(0.01)  # the server stopped reading: wait for its answer
            except (BrokenPipeError, ConnectionResetError):
                break
        sock.settimeout(10)
        while not _complete(response):
            data = sock.recv(65_536)
            if not data:
                break
            response += data
    return response, sent


def _complete(response: bytes) -> bool:
    head, sep, body = response.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.lower().split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return True


def test_declared_oversize_body_is_refused_before_it_is_sent(shared: Server) -> None:
    """Content-Length over 64 KiB gets 413 at once, without the server waiting for the body."""
    head = (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{shared.port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n"
    ).encode()
    response, sent = _raw_exchange(shared.port, head, iter([]))
    assert response.startswith(b"HTTP/1.1 413 ")
    assert sent == 0
    assert b'"kind":"frame_too_large"' in response


def test_chunked_oversize_body_is_cut_off_at_the_cap(shared: Server) -> None:
    """A chunked body is read only until it passes 64 KiB, then refused with 413."""
    head = (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{shared.port}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    piece = b" " * 8192
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    total = 64 * 1024 * 1024  # far more than the server would ever take in
    response, sent = _raw_exchange(shared.port, head, iter([chunk] * (total // len(piece))))
    assert response.startswith(b"HTTP/1.1 413 "), response[:200]
    assert sent < total / 4


def test_clients_hanging_up_mid_body_never_take_the_server_down(shared: Server) -> None:
    """Hundreds of clients dropping the line while their 413 is written leave the server up.

    Stock hypercorn 0.18 exited on about one in four of these (its reader and writer
    collided on the socket); the transport has one writer per connection and contains any
    failure to that connection.
    """
    head = (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{shared.port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n"
    ).encode()
    for _ in range(300):
        with socket.create_connection(("127.0.0.1", shared.port), timeout=10) as sock:
            sock.sendall(head)
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                sock.recv(16)
    assert shared.proc.poll() is None
    assert request(shared.port)[0] == 200


def _unread(pipe_fd: int) -> int:
    """How many bytes wait in the pipe behind `pipe_fd` (either end)."""
    count = array.array("i", [0])
    fcntl.ioctl(pipe_fd, termios.FIONREAD, count)
    return count[0]


def test_stdin_is_never_read(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A frame waiting on stdin stays unread while the server serves, and EOF does not stop it."""
    frame = PING + b"\n"
    read_end, write_end = os.pipe()
    with open(write_end, "wb", buffering=0) as feeder:
        feeder.write(frame)
        try:
            server = Server(
                tmp_path_factory.mktemp("ws"),
                tmp_path_factory.mktemp("home"),
                env={},
                stdin=read_end,
            )
        finally:
            os.close(read_end)  # only the server holds it now
        try:
            assert request(server.port)[0] == 200
            assert _unread(write_end) == len(frame)  # a stdio server would have taken it
            feeder.close()  # EOF: a stdio server stops here
            assert request(server.port)[0] == 200
            assert server.proc.poll() is None
        finally:
            code, stdout = server.stop()
    assert (code, stdout) == (0, b"")
    assert server.stderr == [f"lwc: listening on {server.url}"], "\n".join(server.stderr)


# -- the mcp SDK's own client ------------------------------------------------------------


async def test_sdk_client_lists_and_calls_the_tool(shared: Server) -> None:
    """The mcp SDK's streamable HTTP client connects, negotiates, lists and calls lwc_explore."""
    from mcp import Client

    async with Client(shared.url) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info is not None
        assert client.server_info.name == "lwc"
        tools = await client.list_tools()
        assert [tool.name for tool in tools.tools] == ["lwc_explore"]
        result = await client.call_tool(
            "lwc_explore", {"query": "hello", "projectPath": str(shared.workspace)}
        )
    structured = result.structured_content
    assert structured is not None
    assert structured["mode"] == "memory"
    assert structured["projectPath"] == str(shared.workspace)
    assert structured["codeGraph"] == {"state": "not_requested"}
    assert "state" in structured["memory"]


async def test_sdk_client_sees_scope_errors_as_tool_errors(shared: Server) -> None:
    """Argument problems reach the SDK as isError tool results, not transport failures."""
    from mcp import Client

    async with Client(shared.url) as client:
        result = await client.call_tool("lwc_explore", {"query": "", "projectPath": "/"})
    assert result.is_error


# -- mount path, remote mode, allowed hosts ---------------------------------------------


def test_base_path_is_normalised_and_matched_exactly(spawn: Any) -> None:
    """`--http-base-path /mcp/` serves exactly /mcp and announces it."""
    server = spawn("--http-base-path", "/mcp/")
    assert server.url == f"http://127.0.0.1:{server.port}/mcp"
    assert request(server.port, path="/mcp")[0] == 200
    assert request(server.port, path="/mcp/")[0] == 404
    assert request(server.port, path="/")[0] == 404


def test_remote_mode_needs_the_token_and_shares_only_project_memory(
    spawn: Any, tmp_path: Path
) -> None:
    """--http-allow-remote warns, demands the bearer token and defaults scopes to project."""
    token = tmp_path / "token"
    token.write_text("tok-123\n")
    server = spawn("--http-allow-remote", "--http-token-file", str(token))
    assert any("WARNING" in line and "remote" in line for line in server.stderr)
    assert request(server.port)[0] == 401
    wrong = {**JSON, "authorization": "Bearer tok-124"}
    status, headers, data = request(server.port, headers=wrong)
    assert (status, headers["www-authenticate"], kind_of(data)) == (401, "Bearer", "unauthorized")
    good = {**JSON, "authorization": "Bearer tok-123"}
    assert request(server.port, headers=good)[0] == 200
    # Host checks still come first: a good token does not excuse a foreign Host.
    assert request(server.port, headers=good, host="evil.test")[0] == 403
    body = call("x", server.workspace, scope="global")
    status, _, data = request(server.port, body=body, headers=good)
    result = json.loads(data)["result"]
    assert status == 200
    assert result["isError"]
    assert result["structuredContent"]["error"]["code"] == "scope_not_allowed"


def test_allowed_host_admits_that_name_and_origin(spawn: Any) -> None:
    """--http-allowed-host lets a named Host and its http:// Origin through; others stay 403."""
    server = spawn("--http-allowed-host", "Dev.Example.Test")
    name = f"dev.example.test:{server.port}"
    assert request(server.port, host=name)[0] == 200
    origin = {**JSON, "origin": f"http://{name}"}
    assert request(server.port, host=name, headers=origin)[0] == 200
    assert request(server.port, host=f"other.test:{server.port}")[0] == 403


# -- concurrency, cancellation, shutdown -------------------------------------------------


async def _concurrently(port: int, bodies: list[bytes]) -> list[tuple[int, dict[str, str], bytes]]:
    results: list[Any] = [None] * len(bodies)
    limiter = trio.CapacityLimiter(len(bodies))

    async def one(i: int) -> None:
        results[i] = await trio.to_thread.run_sync(
            lambda: request(port, body=bodies[i]), limiter=limiter
        )

    async with trio.open_nursery() as nursery:
        for i in range(len(bodies)):
            nursery.start_soon(one, i)
    return results


async def test_tool_calls_beyond_the_bound_get_503(spawn: Any) -> None:
    """At most 32 tool calls run at once; the rest get 503 + Retry-After, pings still pass."""
    server = spawn("--memory-timeout", "2", LWC_FAULTS="memory=hang")
    bodies = [call("q", server.workspace, rid=i) for i in range(40)]
    results = await _concurrently(server.port, [*bodies, PING])
    *calls, (ping_status, _, ping_body) = results
    assert (ping_status, json.loads(ping_body)["result"]) == (200, {})
    statuses = [status for status, _, _ in calls]
    assert (statuses.count(200), statuses.count(503)) == (32, 8)
    for status, headers, data in calls:
        if status == 503:
            assert headers["retry-after"] == "1"
            assert kind_of(data) == "server_busy"
        else:
            memory = json.loads(data)["result"]["structuredContent"]["memory"]
            assert memory["error"]["code"] == "memory_timeout"


def _open_call(port: int, body: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


def test_closing_the_request_cancels_its_work(spawn: Any) -> None:
    """A client that hangs up frees its tool-call slot at once instead of after the deadline."""
    server = spawn("--memory-timeout", "60", LWC_FAULTS="memory=hang")
    # Takes a slot like any tool call but never reaches a plane: 200 (isError) or 503.
    probe = call("", server.workspace)
    socks = [_open_call(server.port, call("q", server.workspace, rid=i)) for i in range(32)]
    try:
        deadline = time.monotonic() + 10
        while request(server.port, body=probe)[0] != 503:
            assert time.monotonic() < deadline  # waiting for all 32 to hold their slots
            time.sleep(0.05)
    finally:
        for sock in socks:
            sock.close()
    deadline = time.monotonic() + 10
    while (status := request(server.port, body=probe)[0]) == 503:
        assert time.monotonic() < deadline, "hung-up calls kept their slots"
        time.sleep(0.05)
    assert status == 200


def _codegraph_was_asked(state: Path, query: str) -> bool:
    """Whether the fake CodeGraph logging to `state` has received a call for `query`."""
    lines = (state / "events.jsonl").read_text().splitlines()
    messages = (json.loads(line).get("message", {}) for line in lines)
    return any(
        m.get("method") == "tools/call" and m["params"]["arguments"]["query"] == query
        for m in messages
    )


def test_sigterm_lets_in_flight_calls_finish_and_reaps_codegraph(
    spawn: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """SIGTERM: the in-flight call still gets its answer, exit 0, the CodeGraph child is gone."""
    workspace = tmp_path_factory.mktemp("ws")
    (workspace / ".codegraph").mkdir()
    (workspace / ".codegraph" / "codegraph.db").write_bytes(b"")
    state = tmp_path_factory.mktemp("cgstate")
    wrapper = state / "codegraph"
    command = [sys.executable, str(FAKE_CODEGRAPH), str(state), "normal"]
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    wrapper.chmod(0o755)
    server = spawn(
        workspace=workspace, LWC_CODEGRAPH_BINARY=str(wrapper), LWC_FAULTS="memory=delay:1"
    )
    status, _, data = request(server.port, body=call("q", workspace, mode="code"))
    assert status == 200
    assert json.loads(data)["result"]["structuredContent"]["codeGraph"]["state"] == "ready"
    starts = [json.loads(line) for line in (state / "events.jsonl").read_text().splitlines()]
    child = starts[0]["pid"]
    os.kill(child, 0)  # alive while the server runs

    answer: list[tuple[int, dict[str, str], bytes]] = []
    # Mode all: the memory half sits in its 1 s delay while the CodeGraph half reaches the
    # fake, whose log then shows the call is in flight inside the server.
    slow = call("slow", workspace, mode="all")
    worker = threading.Thread(target=lambda: answer.append(request(server.port, body=slow)))
    worker.start()
    deadline = time.monotonic() + 10
    while not _codegraph_was_asked(state, "slow"):
        assert time.monotonic() < deadline, "the slow call never reached the planes"
        time.sleep(0.01)
    code, stdout = server.stop(signal.SIGTERM)
    worker.join(10)
    assert (code, stdout) == (0, b"")
    assert answer
    assert answer[0][0] == 200
    assert json.loads(answer[0][2])["result"]["structuredContent"]["memory"]["state"] != "error"
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert [line for line in server.stderr if "Traceback" in line] == []


def test_sigint_stops_promptly_despite_idle_keep_alive(spawn: Any) -> None:
    """SIGINT with an idle keep-alive connection open exits 0 without waiting out the grace."""
    server = spawn()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        assert request(server.port, conn=conn)[0] == 200
        started = time.monotonic()
        code, stdout = server.stop(signal.SIGINT)
        assert time.monotonic() - started < 1.5
    finally:
        conn.close()
    assert (code, stdout) == (0, b"")
    assert server.stderr == [f"lwc: listening on {server.url}"]


# -- start-up validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "code"),
    [
        (["--http-listen", "localhost"], "invalid_listen_address"),
        (["--http-listen", "127.0.0.1:99999"], "invalid_listen_address"),
        (["--http-listen", "::1:80"], "invalid_listen_address"),
        (["--http-listen", "no-such-host.invalid:80"], "invalid_listen_address"),
        (["--http-base-path", "mcp"], "invalid_base_path"),
        (["--http-base-path", "/a b"], "invalid_base_path"),
        (["--http-allowed-host", "http://x.test"], "invalid_allowed_host"),
        (["--http-listen", "0.0.0.0:0"], "remote_not_allowed"),
        (["--http-listen", "0.0.0.0:0", "--http-token-file", "t"], "remote_not_allowed"),
        (["--http-allow-remote"], "token_required"),
        (["--http-listen", "0.0.0.0:0", "--http-allow-remote"], "token_required"),
    ],
)
def test_bad_http_flags_exit_2_before_serving(
    flags: list[str], code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Malformed, unresolvable or unsafe HTTP flags are usage errors: exit 2, one JSON line."""
    argv = ["serve", "--mcp", "--transport", "HTTP", "--path", str(tmp_path), *flags]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1
    assert json.loads(err)["error"]["code"] == code


@pytest.mark.parametrize("flag", ["--http-listen=127.0.0.1:0", "--http-allow-remote"])
def test_http_flags_with_stdio_exit_2(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """HTTP-only flags are refused with the stdio transport."""
    assert main(["serve", "--mcp", "--path", str(tmp_path), flag]) == 2
    assert "only valid with --transport http" in capsys.readouterr().err


def _run(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[bytes]:
    (tmp_path / "ws").mkdir()
    argv = lwc_command("serve", "--mcp", "--transport", "http", "--path", str(tmp_path / "ws"))
    return subprocess.run(
        [*argv, *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=child_env(tmp_path),
        timeout=20,
    )


def test_port_in_use_exits_1_with_one_line(tmp_path: Path) -> None:
    """A taken port is a start-up failure: exit 1 and one clear line, nothing on stdout."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run(tmp_path, "--http-listen", f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1
    error = json.loads(lines[0])["error"]
    assert error["code"] == "address_in_use"
    assert f"127.0.0.1:{port}" in error["message"]


def test_unreadable_token_file_exits_1(tmp_path: Path) -> None:
    """The token file is read at start-up; a missing one stops the server with exit 1."""
    done = _run(tmp_path, "--http-allow-remote", "--http-token-file", str(tmp_path / "none"))
    assert done.returncode == 1
    error = json.loads(done.stderr.decode().splitlines()[-1])["error"]
    assert error["code"] == "token_file_unreadable"
    assert b"listening" not in done.stderr
