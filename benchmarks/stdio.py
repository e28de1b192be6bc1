"""The one raw JSON-lines MCP client: a server process driven over its stdin/stdout pipes.

No MCP library sits between the clock and the server: requests are bytes written to the
server's stdin, answers are lines read from its stdout. The same `StdioClient` serves three
kinds of callers, over one buffer and one set of descriptors:

* blocking methods (`write`, `read_line`, `call`, `burst`, `close`) for timing loops that
  must not pay an event loop's scheduling cost inside the measured interval (transport,
  memory and code scenarios);
* sequential async methods (`send`, `recv`, `rest`, `wait`) for tests that read answers in
  order (tests/lwc_process.py);
* routed async requests (`start`, `request`, `expect`, `wait_slot`, `cancel`): one reader
  task hands each answer to the task awaiting its id; answers nobody awaits are kept in
  `unclaimed` and `seen` counts answers per id (soak, fault matrix, shutdown).

Use one kind at a time per client. Linux only (the exit wait uses a pidfd).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import selectors
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import trio

from benchmarks.messages import Message, cancelled, encode, key_of

RESPONSE_TIMEOUT: Final = 60.0
"""No single answer may take longer (the server's own deadlines are 5 s and 10 s)."""
STDERR_CAP: Final = 65_536
_READ: Final = 1 << 20


async def wait_exit(proc: subprocess.Popen[bytes]) -> int:
    """Wait for `proc` to exit without blocking trio (a pidfd, so no polling); its code."""
    if proc.poll() is None:
        fd = os.pidfd_open(proc.pid)
        try:
            await trio.lowlevel.wait_readable(fd)
        finally:
            trio.lowlevel.notify_closing(fd)
            os.close(fd)
    else:
        await trio.lowlevel.checkpoint()
    return proc.wait()


class ServerGone(Exception):
    """The server's stdout ended, or no answer came in time; the run is void."""


class Slot:
    """Where the reader task leaves the answer to one awaited id."""

    __slots__ = ("event", "received", "response")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.response: Message | None = None
        self.received = 0.0


class StdioClient:
    """A server process (`argv`) with piped stdin/stdout and its stderr in a temporary file."""

    transport = "stdio"

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: Path | str | None = None,
        new_session: bool = False,
        name: str = "server",
    ) -> None:
        self.name = name
        err = tempfile.TemporaryFile()  # noqa: SIM115 (only its descriptor is kept)
        self.proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            bufsize=0,
            start_new_session=new_session,
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.pid = self.proc.pid
        # Plain descriptors, not file objects: nothing buffers behind our back, and a client
        # dropped by a failing test closes them in __del__ without a ResourceWarning.
        self.wfd = os.dup(self.proc.stdin.fileno())
        self.rfd = os.dup(self.proc.stdout.fileno())
        self._errfd = os.dup(err.fileno())
        self.proc.stdin.close()
        self.proc.stdout.close()
        err.close()
        os.set_blocking(self.rfd, False)
        os.set_blocking(self.wfd, False)
        self._buf = bytearray()
        self.last_size = 0
        self._rsel: selectors.BaseSelector | None = None
        self._stdin_open = True
        self._lock: trio.Lock | None = None
        # routed mode
        self._waiters: dict[tuple[str, Any], Slot] = {}
        self.seen: Counter[tuple[str, Any]] = Counter()
        self.unclaimed: list[Message] = []
        self.bad_lines: list[bytes] = []
        self.eof = trio.Event()

    # -- framing ---------------------------------------------------------------------------

    def _take_line(self) -> bytes | None:
        end = self._buf.find(b"\n")
        if end < 0:
            return None
        line = bytes(self._buf[:end])
        del self._buf[: end + 1]
        return line

    @property
    def stderr(self) -> bytes:
        """What the server wrote to stderr so far (the first 64 KiB)."""
        return os.pread(self._errfd, STDERR_CAP, 0)

    def stderr_tail(self, size: int = 800) -> str:
        data = os.pread(self._errfd, 1 << 22, 0)
        return data[-size:].decode(errors="replace")

    # -- blocking I/O (timing loops) -------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Write all of `data` to stdin, blocking until the pipe has taken it."""
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.wfd, view) :]
            except BlockingIOError:
                select.select([], [self.wfd], [], RESPONSE_TIMEOUT)

    def _fill(self, deadline: float) -> None:
        if self._rsel is None:
            # One selector for the client's life: a timing loop pays no set-up per line.
            self._rsel = selectors.DefaultSelector()
            self._rsel.register(self.rfd, selectors.EVENT_READ)
        remaining = deadline - time.perf_counter()
        if remaining <= 0 or not self._rsel.select(remaining):
            raise ServerGone(f"{self.name}: no answer within {RESPONSE_TIMEOUT:.0f} s")
        self._read_ready("")

    def _read_ready(self, during: str) -> bytes:
        """One read of stdout, added to the buffer and returned (b"" when it would block after
        all). Raises ServerGone at the end of stdout."""
        try:
            chunk = os.read(self.rfd, _READ)
        except BlockingIOError:
            return b""
        if not chunk:
            raise ServerGone(f"{self.name}: stdout closed{during}; stderr: {self.stderr_tail()}")
        self._buf += chunk
        return chunk

    def read_line(self, deadline: float) -> bytes:
        """The next stdout line, waiting until `deadline` (perf_counter); ServerGone if not."""
        while (line := self._take_line()) is None:
            self._fill(deadline)
        return line

    def call(
        self, message: Message, within: float = RESPONSE_TIMEOUT, *, skip_server: bool = False
    ) -> tuple[Message, float]:
        """Send one request, block for its answer: (response, seconds from write to line).

        Any other line raises ServerGone, except, with `skip_server`, requests and
        notifications from the server, which are skipped. `last_size` is then the answer
        line's length in bytes.
        """
        data = encode(message)
        started = time.perf_counter()
        self.write(data)
        while True:
            line = self.read_line(started + within)
            took = time.perf_counter() - started
            if skip_server and not line.strip():
                continue
            reply: Message = json.loads(line)
            if skip_server and "method" in reply:
                continue
            if key_of(reply.get("id")) != key_of(message["id"]):
                raise ServerGone(f"{self.name}: answer to another id: {line[:300]!r}")
            self.last_size = len(line)
            return reply, took

    def burst(self, payload: bytes, count: int, deadline: float) -> list[bytes]:
        """Write `payload` while reading, until `count` lines arrived; returns those lines."""
        view = memoryview(payload)
        got = self._buf.count(b"\n")
        with selectors.DefaultSelector() as sel:
            sel.register(self.wfd, selectors.EVENT_WRITE)
            sel.register(self.rfd, selectors.EVENT_READ)
            while got < count:
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    raise ServerGone(f"{self.name}: burst got {got}/{count} answers")
                for key, _ in sel.select(remaining):
                    if key.fd == self.wfd:
                        with contextlib.suppress(BlockingIOError):
                            view = view[os.write(self.wfd, view[:65536]) :]
                        if not view:
                            sel.unregister(self.wfd)
                    else:
                        got += self._read_ready(" in burst").count(b"\n")
        lines = bytes(self._buf).split(b"\n")
        self._buf = bytearray(lines.pop())
        return lines

    def close_input_now(self) -> None:
        if self._stdin_open:
            self._stdin_open = False
            with contextlib.suppress(RuntimeError):  # outside trio nobody can be waiting on it
                trio.lowlevel.notify_closing(self.wfd)
            os.close(self.wfd)

    def close(self, within: float = 10.0, *, group: bool = False) -> int:
        """stdin EOF (the normal end of a session), then the exit code; killed if it hangs.

        `group`: the process leads its own session (`new_session`); SIGKILL whatever is
        left of its process group afterwards (a helper the leader forked).
        """
        self.close_input_now()
        try:
            code = self.proc.wait(within)
        except subprocess.TimeoutExpired:
            self.kill(group=group)
            self.proc.wait()
            code = -9
        if group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        return code

    def __del__(self) -> None:
        if getattr(self, "_errfd", None) is None:
            return  # __init__ failed before the descriptors existed
        self.close_input_now()
        if self._rsel is not None:
            self._rsel.close()
        for fd in (self.rfd, self._errfd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def kill(self, *, group: bool = False) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(self.pid, signal.SIGKILL)
            else:
                self.proc.kill()

    # -- async I/O -------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> float:
        """Write `data` to stdin; the perf_counter time the write started."""
        if self._lock is None:
            self._lock = trio.Lock()
        async with self._lock:
            sent = time.perf_counter()
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(self.wfd, view) :]
                except BlockingIOError:
                    await trio.lowlevel.wait_writable(self.wfd)
            await trio.lowlevel.checkpoint()
        return sent

    async def send(self, message: Any) -> float:
        return await self.send_raw(encode(message))

    async def recv_line(self) -> bytes | None:
        """The next stdout line, or None once stdout has ended."""
        while (line := self._take_line()) is None:
            try:
                chunk = os.read(self.rfd, _READ)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.rfd)
                continue
            if not chunk:
                if self._buf:
                    line, self._buf = bytes(self._buf), bytearray()
                    return line
                return None
            self._buf += chunk
        await trio.lowlevel.checkpoint()
        return line

    async def recv(self) -> Message:
        """The next answer line, parsed (AssertionError if stdout ends first)."""
        line = await self.recv_line()
        assert line is not None, "stdout ended before a response arrived"
        value: Message = json.loads(line)
        return value

    async def rest(self) -> list[Message]:
        """Every remaining answer until stdout closes."""
        out = []
        while (line := await self.recv_line()) is not None:
            out.append(json.loads(line))
        return out

    async def close_stdin(self) -> None:
        if self._lock is None:
            self._lock = trio.Lock()
        async with self._lock:
            self.close_input_now()
        await trio.lowlevel.checkpoint()

    close_input = close_stdin

    async def wait(self) -> int:
        """Wait for the process to exit; its exit code."""
        return await wait_exit(self.proc)

    # -- routed async requests -------------------------------------------------------------

    @classmethod
    async def start(
        cls,
        nursery: trio.Nursery,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        cwd: Path | str | None = None,
        *,
        route: bool = True,
    ) -> StdioClient:
        """Start the server with a guard task in `nursery` that kills it when cancelled.

        `route`: also start the reader task that routes answers by id (off for callers that
        read answers in order with `recv`). The nursery waits for the process to exit.
        """
        client = cls(argv, env=env, cwd=cwd)
        nursery.start_soon(client._guard)
        if route:
            nursery.start_soon(client._route_stdout)
        return client

    async def _guard(self) -> None:
        try:
            await self.wait()
        finally:
            if self.proc.poll() is None:
                self.kill()
                self.proc.wait()
            self.close_input_now()

    async def _route_stdout(self) -> None:
        try:
            while (line := await self.recv_line()) is not None:
                self._route(line, time.perf_counter())
        finally:
            self.eof.set()
            for slot in self._waiters.values():
                slot.event.set()

    def _route(self, line: bytes, now: float) -> None:
        try:
            message = json.loads(line)
            rid = message["id"]
        except (ValueError, KeyError, TypeError):
            self.bad_lines.append(line[:200])
            return
        key = key_of(rid)
        self.seen[key] += 1
        slot = self._waiters.pop(key, None) if rid is not None else None
        if slot is None:
            self.unclaimed.append(message)
            return
        slot.response, slot.received = message, now
        slot.event.set()

    def expect(self, rid: Any) -> Slot:
        """Register interest in the answer to `rid` (before sending it)."""
        slot = Slot()
        self._waiters[key_of(rid)] = slot
        return slot

    async def wait_slot(self, slot: Slot, within: float = RESPONSE_TIMEOUT) -> Message:
        with trio.fail_after(within):
            await slot.event.wait()
        if slot.response is None:
            raise ServerGone(f"{self.name}: stdout ended before the answer")
        return slot.response

    async def request(
        self, message: Message, within: float = RESPONSE_TIMEOUT
    ) -> tuple[Message, float]:
        """Send one request and await its answer: (response, round trip in seconds)."""
        slot = self.expect(message["id"])
        sent = await self.send(message)
        response = await self.wait_slot(slot, within)
        return response, slot.received - sent

    async def request_raw(self, rid: Any, data: bytes) -> tuple[Message, float]:
        """Like `request` for a line built by the caller (e.g. an oversized one)."""
        slot = self.expect(rid)
        sent = await self.send_raw(data)
        response = await self.wait_slot(slot)
        return response, slot.received - sent

    async def cancel(self, rid: Any) -> None:
        await self.send(cancelled(rid))

    async def finish(self, within: float = 30.0) -> int:
        """Close stdin, read every remaining answer, return the exit code."""
        await self.close_stdin()
        with trio.fail_after(within):
            await self.eof.wait()
            return await self.wait()
