"""The actor system on a virtual clock: isolation, deadlines, cancellation, drain and restarts."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from conftest_memory import MEMORY_FAULTS

from lwc_trio.actors.stdio import serve_stdio
from lwc_trio.actors.supervisor import Engines
from lwc_trio.config import ServerConfig
from lwc_trio.faults import FaultPlan
from lwc_trio.paths import authorize_project_path

MEMORY_READY = {"state": "ready", "stores": [], "results": [], "pages": [], "graph": []}
CODE_READY = {"state": "ready", "text": "**`a.py`**", "truncated": False, "files": ["a.py"]}


def scripted(answer: dict[str, Any], delay: float, log: list[str] | None = None) -> Any:
    """A fake engine (fault injection stand-in): waits `delay` virtual seconds, then answers."""

    @asynccontextmanager
    async def factory() -> AsyncIterator[Callable[[Any], Awaitable[dict[str, Any]]]]:
        async def run(_query: Any) -> dict[str, Any]:
            try:
                await trio.sleep(delay)
            except trio.Cancelled:
                if log is not None:
                    log.append("cancelled")
                raise
            return dict(answer)

        yield run

    return factory


def call_lines(arguments: dict[str, Any], rids: Iterable[Any]) -> bytes:
    """One `lwc_explore` tools/call line per id, all with `arguments`, as a host frames them."""
    return b"".join(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": "lwc_explore", "arguments": arguments},
            }
        ).encode()
        + b"\n"
        for rid in rids
    )


class HostPipe:
    """stdout as production has it, a pipe: the server writes its end (`server`, what
    `serve_stdio` takes), the test reads the other like a host (`host`, `data`). With
    `capacity`, the pipe holds no more than that (where the system lets a pipe be sized)."""

    def __init__(self, capacity: int | None = None) -> None:
        read_fd, write_fd = os.pipe()
        set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
        if capacity is not None and set_size is not None:
            fcntl.fcntl(write_fd, set_size, capacity)
        self.server = trio.lowlevel.FdStream(write_fd)
        self.host = trio.lowlevel.FdStream(read_fd)
        self.data = bytearray()

    def read_ready(self) -> None:
        """Read what the pipe holds now, without waiting."""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.host.fileno(), 1 << 16):
                self.data += chunk

    async def read_to_end(self) -> None:
        """Read until the server's end is closed."""
        while chunk := await self.host.receive_some():
            self.data += chunk

    async def aclose(self) -> None:
        await self.server.aclose()
        await self.host.aclose()


@attrs.define
class Harness:
    """Runs `serve_stdio` with stdin from memory and stdout on a real pipe (`HostPipe`), and
    records when each answer arrived."""

    to_server: trio.abc.SendStream
    from_server: trio.abc.ReceiveStream
    answers: dict[Any, tuple[float, dict[str, Any]]] = attrs.field(factory=dict)
    order: list[Any] = attrs.field(factory=list)
    exit_code: int | None = None
    exited_at: float | None = None
    _arrival: trio.Event = attrs.field(factory=trio.Event)

    async def send(self, message: dict[str, Any]) -> None:
        await self.to_server.send_all(json.dumps(message).encode() + b"\n")

    async def call(self, rid: Any, mode: str = "memory", **extra: Any) -> None:
        arguments = {"query": "trio nursery", "projectPath": self.project, "mode": mode, **extra}
        await self.to_server.send_all(call_lines(arguments, [rid]))

    project: str = ""

    async def collect(self) -> None:
        buf = b""
        while True:
            data = await self.from_server.receive_some()
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                message = json.loads(line)
                self.answers[message["id"]] = (trio.current_time(), message)
                self.order.append(message["id"])
                self._arrival.set()
                self._arrival = trio.Event()

    async def answered(self, *rids: Any) -> None:
        """Wait (in real time: no virtual time passes) until each of `rids` is answered."""
        while not all(rid in self.answers for rid in rids):
            await self._arrival.wait()

    def structured(self, rid: Any) -> dict[str, Any]:
        content: dict[str, Any] = self.answers[rid][1]["result"]["structuredContent"]
        return content


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Virtual time that jumps once the loop has idled 20 ms of real time.

    The authorizer stats paths in a worker thread; a zero threshold would jump
    the clock while that thread runs and expire deadlines that never really passed.
    """
    return trio.testing.MockClock(autojump_threshold=0.02)


@pytest.fixture
def config(workspace: Path, home: Path) -> ServerConfig:
    return ServerConfig(workspace=workspace, home=home, env={"HOME": str(home)}, version="test")


@asynccontextmanager
async def running(
    config: ServerConfig,
    *,
    memory: float = 0,
    code: float = 0,
    faults: str = "",
    log: list[str] | None = None,
) -> AsyncIterator[Harness]:
    """`serve_stdio` with fake planes that answer ready after `memory` and `code` virtual
    seconds (`log` records the memory plane's cancellations)."""
    to_server, server_in = trio.testing.memory_stream_one_way_pair()
    stdout = HostPipe()
    server_out = stdout.server
    harness = Harness(to_server, stdout.host, project=str(config.workspace))

    async def serve() -> None:
        harness.exit_code = await serve_stdio(
            config,
            FaultPlan.from_env(faults),
            server_in,
            server_out,
            Engines(memory=scripted(MEMORY_READY, memory, log), code=scripted(CODE_READY, code)),
        )
        harness.exited_at = trio.current_time()
        await server_out.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        nursery.start_soon(harness.collect)
        await trio.testing.wait_all_tasks_blocked()
        yield harness
    await stdout.aclose()


async def test_hung_code_plane_does_not_delay_memory(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """Mode all with a hanging code plane answers at the code deadline with memory intact."""
    async with running(config, memory=0.25, code=1e9) as h:
        await h.call(1, mode="all")
        await h.call(2, mode="memory")
        await trio.sleep(30)
        await h.to_server.aclose()
    at_all, _ = h.answers[1]
    at_memory, _ = h.answers[2]
    assert at_memory == pytest.approx(0.25)
    assert at_all == pytest.approx(config.code_timeout, abs=0.06)
    result = h.structured(1)
    assert result["memory"] == MEMORY_READY
    assert result["codeGraph"]["error"]["code"] == "codegraph_timeout"
    assert result["partial"] is True
    assert h.answers[1][1]["result"]["isError"] is False


async def test_ping_is_answered_while_a_slow_call_runs(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """A ping sent behind a slow tool call is answered at once."""
    async with running(config, memory=4.0) as h:
        await h.call(1)
        await h.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        await trio.sleep(10)
        await h.to_server.aclose()
    assert h.answers["p"][0] == 0
    assert h.answers["p"][1]["result"] == {}
    assert h.answers[1][0] == pytest.approx(4.0)
    assert h.order == ["p", 1]


async def test_cancelled_request_gets_no_response_and_stops_its_work(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """notifications/cancelled silences the named call and cancels the plane work."""
    log: list[str] = []
    async with running(config, memory=3.0, log=log) as h:
        await h.call(7)
        await h.call(8)
        await trio.sleep(1)
        await h.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        )
        await trio.sleep(5)
        await h.to_server.aclose()
    assert 7 not in h.answers
    assert h.answers[8][0] == pytest.approx(3.0)
    assert log == ["cancelled"]


@pytest.mark.parametrize(
    ("max_in_flight", "delay", "times"),
    [
        # Five calls in flight at once: all answered at 1.5 s, within the grace.
        (None, 1.5, [1.5] * 5),
        # Six piped calls, two in flight at a time: the queued ones are answered too.
        (2, 3.0, [3.0, 3.0, 6.0, 6.0, 9.0, 9.0]),
    ],
    ids=["in-flight", "queued-beyond-the-bound"],
)
async def test_eof_answers_every_call_before_exit(
    config: ServerConfig,
    clock: trio.testing.MockClock,
    max_in_flight: int | None,
    delay: float,
    times: list[float],
) -> None:
    """stdin EOF with calls in flight or queued: every call is answered, then exit 0."""
    if max_in_flight is not None:
        config = attrs.evolve(config, max_in_flight=max_in_flight)
    async with running(config, memory=delay) as h:
        for rid in range(len(times)):
            await h.call(rid)
        await h.to_server.aclose()
    assert sorted(h.answers) == list(range(len(times)))
    assert sorted(at for at, _ in h.answers.values()) == pytest.approx(times)
    assert all(h.structured(rid)["memory"] == MEMORY_READY for rid in range(len(times)))
    assert h.exit_code == 0
    assert h.exited_at == pytest.approx(times[-1])


async def test_eof_answers_a_call_that_outlasts_the_grace(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """stdin EOF is not a stop request: a call slower than the grace is still answered."""
    config = attrs.evolve(config, memory_timeout=60.0)
    async with running(config, memory=30.0) as h:
        await h.call(1)
        await h.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        await trio.sleep(0.5)
        await h.to_server.aclose()
    assert h.order == [2, 1]
    assert h.answers[1][0] == pytest.approx(30.0)
    assert h.exit_code == 0
    assert h.exited_at == pytest.approx(30.0)


async def test_signal_cancels_what_outlasts_the_grace(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """SIGTERM keeps the grace: what finishes in it is answered, the rest is cancelled."""
    config = attrs.evolve(config, memory_timeout=60.0)
    async with running(config, memory=1.0, code=30.0) as h:
        await h.call(1)
        await h.call(2, mode="code")
        await trio.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)
    assert list(h.answers) == [1]
    assert h.exit_code == 0
    assert h.exited_at == pytest.approx(0.5 + config.grace)


async def test_in_flight_bound_queues_further_calls(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """With max_in_flight=2, the third and fourth calls start only as slots free up."""
    config = attrs.evolve(config, max_in_flight=2)
    async with running(config, memory=1.0) as h:
        for rid in range(4):
            await h.call(rid)
        await h.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        await trio.sleep(5)
        await h.to_server.aclose()
    times = sorted(at for rid, (at, _) in h.answers.items() if rid != "p")
    assert times == pytest.approx([1.0, 1.0, 2.0, 2.0])
    assert h.answers["p"][0] == 0


async def test_crashed_worker_is_restarted(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """An injected crash fails only that call; the next call is served by a new worker."""
    async with running(config, memory=0.1, code=0.1, faults="memory=crash*1") as h:
        await h.call(1, mode="all")
        await trio.sleep(1)
        await h.call(2, mode="all")
        await trio.sleep(1)
        await h.to_server.aclose()
    first, second = h.structured(1), h.structured(2)
    assert first["memory"]["error"]["code"] == "memory_crashed"
    assert first["codeGraph"] == CODE_READY
    assert first["partial"] is True
    assert second["memory"] == MEMORY_READY
    assert second["partial"] is False


@pytest.mark.parametrize(("fault", "code", "at"), MEMORY_FAULTS)
async def test_memory_faults_leave_code_unchanged(
    config: ServerConfig, clock: trio.testing.MockClock, fault: str, code: str, at: float
) -> None:
    """Each memory fault yields its error code at the right time; the code answer is untouched."""
    async with running(config, code=0.2, faults=f"memory={fault}") as h:
        await h.call(1, mode="all")
        await trio.sleep(20)
        await h.to_server.aclose()
    answered_at, message = h.answers[1]
    result = message["result"]["structuredContent"]
    assert result["memory"]["state"] == "error"
    assert result["memory"]["error"]["code"] == code
    assert result["codeGraph"] == CODE_READY
    assert result["partial"] is True
    assert answered_at == pytest.approx(max(at, 0.2), abs=0.06)


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        ("hang", "codegraph_timeout"),
        ("raise", "code_internal"),
        ("garbage", "codegraph_bad_response"),
        ("crash", "codegraph_crashed"),
    ],
)
async def test_code_faults_leave_memory_unchanged(
    config: ServerConfig, clock: trio.testing.MockClock, fault: str, code: str
) -> None:
    """Each code fault gives its code; the memory plane's answer comes back unchanged."""
    async with running(config, memory=0.2, faults=f"code={fault}") as h:
        await h.call(1, mode="all")
        await trio.sleep(20)
        await h.to_server.aclose()
    result = h.structured(1)
    assert result["codeGraph"]["error"]["code"] == code
    assert result["memory"] == MEMORY_READY
    assert result["partial"] is True


async def test_delay_fault_answers_normally_after_the_delay(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """delay:S gives the normal answer S seconds later, then the script ends."""
    async with running(config, faults="memory=delay:1.5*1") as h:
        await h.call(1)
        await trio.sleep(3)
        await h.call(2)
        await trio.sleep(3)
        await h.to_server.aclose()
    assert h.answers[1][0] == pytest.approx(1.5)
    assert h.structured(1)["memory"] == MEMORY_READY
    assert h.answers[2][0] == pytest.approx(3.0)


@pytest.mark.parametrize(("close_stdin", "expected"), [(False, 1), (True, 0)])
async def test_broken_stdout_exit_code(
    config: ServerConfig, clock: trio.testing.MockClock, close_stdin: bool, expected: int
) -> None:
    """stdout broken while stdin is open exits 1; broken while draining after EOF exits 0."""
    to_server, server_in = trio.testing.memory_stream_one_way_pair()
    engines = Engines(memory=scripted(MEMORY_READY, 0.5), code=scripted(CODE_READY, 0))
    arguments = {"query": "q", "projectPath": str(config.workspace)}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    request["params"] = {"name": "lwc_explore", "arguments": arguments}
    # The answer is written 0.5 s later: after EOF was seen, or while stdin is still open.
    await to_server.send_all(json.dumps(request).encode() + b"\n")
    if close_stdin:
        await to_server.aclose()
    stdout = HostPipe()
    await stdout.host.aclose()  # the host's end is gone: writing fails with EPIPE
    with trio.fail_after(10):
        code = await serve_stdio(config, FaultPlan(), server_in, stdout.server, engines)
    await stdout.server.aclose()
    assert code == expected


async def test_full_queue_pauses_reading(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """With the call queue full, a ping waits until a slot frees; nothing is dropped."""
    config = attrs.evolve(config, max_in_flight=1, queue_size=1, memory_timeout=60.0)
    async with running(config, memory=2.0) as h:
        for rid in range(4):
            await h.call(rid)
        await h.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        await trio.sleep(20)
        await h.to_server.aclose()
    assert sorted(k for k in h.answers if k != "p") == [0, 1, 2, 3]
    assert h.answers["p"][0] > 0  # it was behind the full queue


async def test_writer_joins_queued_answers_into_one_write() -> None:
    """Answers already queued go out together, in order, each still its own line."""
    from lwc_trio.actors.stdio import StdoutWriter

    stream = _Pipe(room=1 << 20)
    writer = StdoutWriter(stream, stream)
    writer.urgent.close()
    lines = [f'{{"id":{i}}}\n'.encode() for i in range(50)]
    for line in lines:
        await writer.outbox.send(line)
    writer.outbox.close()
    await writer.run()
    assert b"".join(stream.writes) == b"".join(lines)
    assert len(stream.writes) == 1


async def test_a_ping_reply_skips_queued_tool_answers() -> None:
    """Replies that need no plane go out in the next write, ahead of queued tool answers."""
    from lwc_trio.actors.stdio import StdoutWriter

    stream = _Pipe(room=5)  # the host has paused: the pipe takes a little, then no more
    writer = StdoutWriter(stream, stream)
    send, urgent_send = writer.outbox, writer.urgent
    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer.run)
        async with send, urgent_send:
            await send.send(b'{"id":0}\n')  # being written while the host is paused
            await trio.testing.wait_all_tasks_blocked()
            for i in range(1, 20):
                await send.send(f'{{"id":{i}}}\n'.encode())
            await urgent_send.send(b'{"id":"p"}\n')
            stream.drain()
    ids = [json.loads(line)["id"] for line in bytes(stream.data).splitlines()]
    assert ids == [0, "p", *range(1, 20)]


class _Pipe(trio.abc.SendStream):
    """A stdout pipe for the writer's non-blocking path: each write takes at most `room`
    bytes (then raises `BlockingIOError`); it has room again once the test `drain()`s it."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.data = bytearray()
        self.writes: list[bytes] = []
        """What each write took (one call is one system call on a real pipe)."""
        self._drained = trio.Event()

    def __call__(self, data: bytes) -> int:
        if self.room <= 0:
            raise BlockingIOError
        taken = bytes(data[: self.room])
        self.room -= len(taken)
        self.data += taken
        self.writes.append(taken)
        return len(taken)

    def drain(self, room: int = 1 << 20) -> None:
        self.room = room
        self._drained.set()
        self._drained = trio.Event()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        raise AssertionError("the non-blocking path never calls send_all")

    async def wait_send_all_might_not_block(self) -> None:
        await self._drained.wait()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def test_the_writer_writes_each_line_itself() -> None:
    """A producer only queues its line; the writer task writes it, with one non-blocking
    write for every line queued by the time it runs (no `send_all`)."""
    from lwc_trio.actors.stdio import StdoutWriter

    pipe = _Pipe(room=1 << 20)
    writer = StdoutWriter(pipe, pipe)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer.run)
        await trio.testing.wait_all_tasks_blocked()
        await writer.outbox.send(b'{"id":1}\n')
        await writer.urgent.send(b'{"id":"p"}\n')
        assert bytes(pipe.data) == b""  # queued, not written by the producer
        await trio.testing.wait_all_tasks_blocked()
        assert bytes(pipe.data) == b'{"id":"p"}\n{"id":1}\n'
        writer.outbox.close()
        writer.urgent.close()


async def test_a_line_stdout_takes_in_part_is_finished_before_any_other() -> None:
    """What the pipe did not take at once is written next, ahead of an urgent reply: lines
    never interleave."""
    from lwc_trio.actors.stdio import StdoutWriter

    pipe = _Pipe(room=5)
    writer = StdoutWriter(pipe, pipe)
    answer = b'{"id":1,"result":"' + b"x" * 100 + b'"}\n'
    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer.run)
        await trio.testing.wait_all_tasks_blocked()
        await writer.outbox.send(answer)
        await trio.testing.wait_all_tasks_blocked()  # the pipe takes 5 bytes of it
        await writer.urgent.send(b'{"id":"p"}\n')
        await writer.outbox.send(b'{"id":2}\n')
        await trio.testing.wait_all_tasks_blocked()
        assert bytes(pipe.data) == answer[:5]
        pipe.drain()
        writer.outbox.close()
        writer.urgent.close()
    assert bytes(pipe.data) == answer + b'{"id":"p"}\n{"id":2}\n'


async def test_a_ping_waits_for_one_answer_not_for_a_batch() -> None:
    """When stdout fills up in the middle of a batch, an urgent reply queued meanwhile goes
    out right after the answer being written, ahead of the batch's other answers."""
    from lwc_trio.actors.stdio import StdoutWriter

    pipe = _Pipe(room=0)
    writer = StdoutWriter(pipe, pipe)
    answers = [f'{{"id":{i},"pad":"{"x" * 10}"}}\n'.encode() for i in range(5)]
    for answer in answers:
        await writer.outbox.send(answer)  # not running yet: queued
    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer.run)
        await trio.testing.wait_all_tasks_blocked()
        pipe.drain(room=len(answers[0]) + 5)  # all of the first answer, a bit of the second
        await trio.testing.wait_all_tasks_blocked()
        await writer.urgent.send(b'{"id":"p"}\n')
        pipe.drain()
        writer.outbox.close()
        writer.urgent.close()
    ids = [json.loads(line)["id"] for line in bytes(pipe.data).splitlines()]
    assert ids == [0, 1, "p", 2, 3, 4]


async def test_stalled_writer_loses_no_answer(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """A host that stops reading for a minute during a 200-call burst still gets 200 answers.

    While it stalls, finished calls hold their slots, the queue fills and reading pauses
    (a ping behind the burst waits too); nothing is dropped.
    """
    config = attrs.evolve(config, queue_size=16)
    to_server, server_in = trio.testing.memory_stream_one_way_pair()
    stdout = HostPipe(capacity=4096)  # far less than 200 answers
    engines = Engines(memory=scripted(MEMORY_READY, 0.01), code=scripted(CODE_READY, 0))
    arguments = {"query": "q", "projectPath": str(config.workspace)}
    lines = call_lines(arguments, range(200))
    exit_code: list[int] = []

    async def serve() -> None:
        exit_code.append(await serve_stdio(config, FaultPlan(), server_in, stdout.server, engines))
        await stdout.server.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        nursery.start_soon(
            to_server.send_all, lines + b'{"jsonrpc":"2.0","id":"p","method":"ping"}\n'
        )
        await trio.sleep(60)
        stdout.read_ready()  # what the pipe took before it filled up
        assert b'"p"' not in stdout.data  # the ping is behind the paused reader
        nursery.start_soon(stdout.read_to_end)  # the host reads again
        await trio.sleep(1)
        await to_server.aclose()
    await stdout.host.aclose()
    ids = [json.loads(line)["id"] for line in bytes(stdout.data).splitlines()]
    assert sorted(i for i in ids if i != "p") == list(range(200))
    assert ids.count("p") == 1
    assert exit_code == [0]


# The path checks below run in real threads, so these tests keep the clock themselves
# (`mock_clock`: virtual time moves only when the test jumps it). On the autojump clock a
# slow check thread left every task blocked and the clock jumped to the hung call's deadline.


async def _step(clock: trio.testing.MockClock, to: float) -> None:
    """Let every task reach its next wait, then move virtual time to `to`."""
    await trio.testing.wait_all_tasks_blocked()
    clock.jump(to - trio.current_time())
    await trio.testing.wait_all_tasks_blocked()


@pytest.mark.parametrize("slow", [False, True])
async def test_hung_path_check_answers_at_its_deadline(
    config: ServerConfig,
    mock_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    slow: bool,
) -> None:
    """auth=hang: that call gets invalid_project_path at 2 s; a ping and the next call don't
    wait, however long the next call's check thread takes in real time (`slow`: 0.1 s, as on
    a loaded machine)."""
    if slow:

        def slow_rules(*args: Any, **kwargs: Any) -> Path:
            time.sleep(0.1)
            return authorize_project_path(*args, **kwargs)

        monkeypatch.setattr("lwc_trio.actors.authorizer.authorize_project_path", slow_rules)
    async with running(config, faults="auth=hang*1") as h:
        await h.call(1)
        await _step(mock_clock, 0.5)
        await h.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        await h.call(2)
        await h.answered("p", 2)
        assert 1 not in h.answers
        await _step(mock_clock, config.auth_timeout)
        await h.answered(1)
        await h.to_server.aclose()
    assert h.answers["p"][0] == 0.5
    assert h.answers[2][0] == 0.5
    assert h.structured(2)["memory"] == MEMORY_READY
    at, message = h.answers[1]
    assert at == config.auth_timeout
    assert message["result"]["isError"] is True
    assert h.structured(1)["error"] == {
        "code": "invalid_project_path",
        "message": "projectPath could not be checked within 2 s",
        "field": "projectPath",
    }


async def test_hung_checks_do_not_use_up_the_authorizer(
    config: ServerConfig, mock_clock: trio.testing.MockClock
) -> None:
    """Four checks hang one after another; each thread is replaced, later calls still pass."""
    async with running(config, faults="auth=hang*4") as h:
        for rid in range(4):
            await h.call(rid)
            await _step(mock_clock, 3.0 * rid + config.auth_timeout)
            await h.answered(rid)
            await _step(mock_clock, 3.0 * (rid + 1))
        await h.call(9)
        await h.answered(9)
        await h.to_server.aclose()
    for rid in range(4):
        assert h.answers[rid][0] == 3.0 * rid + config.auth_timeout
        assert h.structured(rid)["error"]["code"] == "invalid_project_path"
    assert h.answers[9][0] == 12.0
    assert h.structured(9)["memory"] == MEMORY_READY


async def test_fault_scripts_count_calls_in_arrival_order(
    config: ServerConfig, mock_clock: trio.testing.MockClock
) -> None:
    """Calls that arrive in one read take their `auth=` entries in the order they arrived,
    though each runs in its own task (and trio runs new tasks in no promised order)."""
    faults = ";".join(["auth=raise*1;auth=delay:0*1"] * 10)
    async with running(config, faults=faults) as h:
        arguments = {"query": "q", "projectPath": h.project, "mode": "memory"}
        await h.to_server.send_all(call_lines(arguments, range(20)))
        await h.answered(*range(20))
        await h.to_server.aclose()
    refused = [rid for rid in range(20) if h.answers[rid][1]["result"]["isError"]]
    assert refused == list(range(0, 20, 2))


@pytest.mark.parametrize(
    ("fault", "at", "error"),
    [
        ("raise", 0.0, "projectPath could not be checked"),
        ("delay:1.5", 1.5, None),
        ("delay:3", 2.0, "projectPath could not be checked within 2 s"),
    ],
)
async def test_auth_faults(
    config: ServerConfig,
    mock_clock: trio.testing.MockClock,
    fault: str,
    at: float,
    error: str | None,
) -> None:
    """auth=raise fails the check at once; delay:S answers normally, or at 2 s when S >= 2."""
    async with running(config, faults=f"auth={fault}") as h:
        await h.call(1)
        if at:
            await _step(mock_clock, at)
        await h.answered(1)
        await h.to_server.aclose()
    assert h.answers[1][0] == at
    result = h.structured(1)
    if error is None:
        assert result["memory"] == MEMORY_READY
    else:
        assert result["error"]["code"] == "invalid_project_path"
        assert result["error"]["message"] == error


async def test_default_workspace_too_broad_refuses_every_call(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """A refused default workspace answers ping and tools/list, and every call is the guidance."""
    config = attrs.evolve(config, workspace_refusal="started in / without --path: too broad")
    async with running(config) as h:
        await h.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        await h.call(1)
        await h.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "lwc_explore", "arguments": {"bogus": 1}},
            }
        )
        await trio.sleep(1)
        await h.to_server.aclose()
    assert h.answers["p"][1]["result"] == {}
    for rid in (1, 2):
        assert h.answers[rid][1]["result"]["isError"] is True
        assert h.structured(rid) == {
            "error": {
                "code": "workspace_too_broad",
                "message": "started in / without --path: too broad",
                "field": "projectPath",
            }
        }
