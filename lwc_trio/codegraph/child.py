"""One supervised `codegraph serve --mcp` process and its stdio MCP session (SPEC §5).

Lifetime is structured: `CodeGraphChild.run` is started in the code plane's nursery; it spawns
the process in its own process group, runs the stdout reader and the stderr drain, and on every
exit path (kill, crash, cancellation, a bug) SIGKILLs the whole group *before* reaping the leader
— the group id is ours only while the leader is unreaped — under a shielded, bounded scope.

At most one request is outstanding (`_pending`). It is "in flight" from the moment it is
registered, just before its frame is written, until its reply arrives or the child is killed; a
per-request watchdog kills the child when that lasts longer than `call_timeout`. A caller that is
cancelled while its request is in flight abandons it: the child is told with
`notifications/cancelled`, stays alive, and its late reply is discarded (which settles the
request and runs its `on_done`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import trio

from lwc_trio.codegraph import wire
from lwc_trio.codegraph.index import error_state
from lwc_trio.codegraph.runtime import child_env
from lwc_trio.exceptions import ChildFailed

__all__ = ["CodeGraphChild", "Failure"]

# Goes wherever `lwc serve` sends its logs (stderr, only with LWC_LOG set): never stdout.
log = logging.getLogger("lwc.codegraph")

READ_CHUNK = 64 * 1024
STDERR_KEEP = 4 * 1024  # a small tail, only to quote in crash messages
STDERR_QUOTE_CHARS = 200
# Our frames are at most a few tens of KiB, well under a pipe buffer: a write that does not
# finish in this time means the child stopped reading its stdin.
SEND_TIMEOUT = 2.0
STDERR_GRACE = 0.2  # after SIGKILL, for the stderr tail to reach EOF
REAP_TIMEOUT = 5.0  # SIGKILL makes reaping immediate unless the kernel is stuck (D state)


@attrs.frozen
class Failure:
    """Why a request got no usable answer: a SPEC §2.1 code and a message for people."""

    code: str
    message: str

    def state(self) -> dict[str, Any]:
        return error_state(self.code, self.message)

    def error(self) -> ChildFailed:
        """The exception that carries this failure out of `start()`."""
        return ChildFailed(self.code, self.message)


@attrs.define(eq=False)
class _Pending:
    request_id: int
    on_done: Callable[[], None] | None
    done: trio.Event = attrs.field(factory=trio.Event)
    response: wire.Response | None = None
    failure: Failure | None = None
    abandoned: bool = False


class CodeGraphChild:
    """`codegraph serve --mcp --no-watch --path ROOT`, cwd ROOT, minimal environment."""

    def __init__(
        self, *, binary: Path, root: Path, env: Mapping[str, str], call_timeout: float
    ) -> None:
        self.binary = binary
        self.root = root
        self.pid: int | None = None
        self._env = child_env(env)
        self._call_timeout = call_timeout
        self._process: trio.Process | None = None
        self._nursery: trio.Nursery | None = None
        self._stopping = trio.Event()
        self._stderr_done = trio.Event()
        self._exited = trio.Event()
        self._failure: Failure | None = None
        self._quote_status = False
        self._reaped = False
        self._pending: _Pending | None = None
        self._next_id = 1
        self._send_lock = trio.Lock()
        self._stderr_tail = bytearray()
        self._phase = "while starting"

    @property
    def alive(self) -> bool:
        """Started and not (being) stopped."""
        return self._process is not None and not self._stopping.is_set()

    # -- lifetime -------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Spawn the child and supervise it until it is killed; raises `ChildFailed` (before
        `started`) when it cannot be spawned."""
        try:
            process = await trio.lowlevel.open_process(
                [str(self.binary), "serve", "--mcp", "--no-watch", "--path", str(self.root)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=str(self.root),
                env=self._env,
                # Its own process group, so one killpg also takes the helpers it forks.
                start_new_session=True,
            )
        except OSError as exc:
            self._exited.set()
            raise Failure(
                "codegraph_crashed", f"could not start CodeGraph: {exc.strerror or exc}"
            ).error() from None
        self._process, self.pid = process, process.pid
        log.info("started CodeGraph pid %d for %s", process.pid, self.root)
        assert process.stdout is not None and process.stderr is not None
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._read_stdout, process.stdout)
                nursery.start_soon(self._drain_stderr, process.stderr)
                task_status.started()
                await self._stopping.wait()
                with trio.move_on_after(STDERR_GRACE):
                    await self._stderr_done.wait()
                nursery.cancel_scope.cancel()
        finally:
            self._stopping.set()
            returncode: int | None = None
            with trio.move_on_after(REAP_TIMEOUT, shield=True):
                self._kill_group()
                returncode = await process.wait()
            self._reaped = True
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    with trio.CancelScope(shield=True):
                        await stream.aclose()
            self._settle_after_exit(returncode)
            self._exited.set()

    def kill(self, failure: Failure, *, quote_status: bool = False) -> None:
        """Stop the child now (SIGKILL to its group); the outstanding request, if any, fails with
        `failure` once the child is reaped. The first reason wins. Never blocks, never raises."""
        if self._stopping.is_set():
            return
        self._failure = failure
        self._quote_status = quote_status
        log.info("killing CodeGraph pid %s: %s %s", self.pid, failure.code, failure.message)
        self._kill_group()
        self._stopping.set()

    async def wait_exited(self) -> None:
        """Return once the child has been killed and reaped."""
        await self._exited.wait()

    def _kill_group(self) -> None:
        if self.pid is None or self._reaped:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def _settle_after_exit(self, returncode: int | None) -> None:
        failure = self._failure or Failure("codegraph_crashed", "the CodeGraph child was stopped")
        if self._quote_status:
            failure = attrs.evolve(failure, message=failure.message + self._exit_detail(returncode))
        self._failure = failure
        self._settle_pending(failure=failure)

    def _exit_detail(self, returncode: int | None) -> str:
        if returncode is None:
            detail = "exit status unknown"
        elif returncode < 0:
            detail = f"ended by signal {-returncode}"
        else:
            detail = f"exit status {returncode}"
        text = self._stderr_tail.decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            last = "".join(ch if ch.isprintable() else "?" for ch in lines[-1])
            if len(last) > STDERR_QUOTE_CHARS:
                last = last[: STDERR_QUOTE_CHARS - 1] + "…"
            detail += f"; last stderr line: {last}"
        return f" ({detail})"

    # -- reading ----------------------------------------------------------------------------

    async def _read_stdout(self, stream: trio.abc.ReceiveStream) -> None:
        splitter = wire.LineSplitter()
        while True:
            try:
                data = await stream.receive_some(READ_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if self._stopping.is_set():
                return  # killed meanwhile: the kill's reason stands, later frames are moot
            if not data:
                failure = Failure(
                    "codegraph_crashed", f"CodeGraph exited unexpectedly {self._phase}"
                )
                self.kill(failure, quote_status=True)
                return
            try:
                for line in splitter.feed(data):
                    self._handle(wire.parse_frame(line))
            except wire.BadFrame as exc:
                self.kill(Failure("codegraph_bad_response", f"{exc} {self._phase}"))
                return

    def _handle(self, frame: wire.Frame | None) -> None:
        if frame is None or isinstance(frame, wire.Notification):
            return  # logging/progress notifications and blank lines carry nothing we use
        if isinstance(frame, wire.ChildRequest):
            # Answered from a separate task: the reader must never wait on our stdin.
            assert self._nursery is not None
            self._nursery.start_soon(self._send, wire.reply_to_child(frame))
            return
        pending = self._pending
        if pending is not None and frame.id == pending.request_id:
            self._settle_pending(response=frame)
        elif not 0 < frame.id < self._next_id:
            raise wire.BadFrame(f"CodeGraph answered request id {frame.id}, which lwc never issued")
        # else: a second reply to a request already settled; nothing waits for it.

    async def _drain_stderr(self, stream: trio.abc.ReceiveStream) -> None:
        # Read with a bound and keep only a tail; never forwarded anywhere (stdout is the wire).
        try:
            while data := await stream.receive_some(READ_CHUNK):
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("CodeGraph stderr: %s", data[:1000].decode("utf-8", "replace"))
                self._stderr_tail += data
                del self._stderr_tail[:-STDERR_KEEP]
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._stderr_done.set()

    # -- writing and requests -------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> bool:
        """Write one frame; False (and the child killed) when it cannot be written.

        Shielded and bounded: a frame cut off by a cancellation would corrupt the stream, and a
        healthy child reads its stdin at once.
        """
        process = self._process
        if process is None or process.stdin is None or not self.alive:
            return False
        data = wire.encode(message)
        try:
            with trio.move_on_after(SEND_TIMEOUT, shield=True) as scope:
                async with self._send_lock:
                    await process.stdin.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.kill(
                Failure("codegraph_crashed", f"CodeGraph closed its input {self._phase}"),
                quote_status=True,
            )
            return False
        if scope.cancelled_caught:
            self.kill(
                Failure("codegraph_timeout", f"CodeGraph stopped reading its input {self._phase}")
            )
            return False
        return True

    def _settle_pending(
        self, *, response: wire.Response | None = None, failure: Failure | None = None
    ) -> None:
        pending, self._pending = self._pending, None
        if pending is None or pending.done.is_set():
            return
        pending.response, pending.failure = response, failure
        if response is not None:
            self._phase = "while idle"
        pending.done.set()
        if pending.on_done is not None:
            pending.on_done()

    async def _watch(self, pending: _Pending, deadline: float) -> None:
        with trio.move_on_at(deadline):
            await pending.done.wait()
        if not pending.done.is_set():
            self.kill(
                Failure(
                    "codegraph_timeout",
                    f"CodeGraph did not answer within {self._call_timeout:g} s {self._phase}; "
                    "it was stopped and the next call starts a fresh one",
                )
            )

    async def _request(
        self, message: Callable[[int], dict[str, Any]], on_done: Callable[[], None] | None
    ) -> _Pending:
        """Register and send a request; the returned request always settles, and `on_done` runs
        exactly once — at once when the child is already stopped."""
        pending = _Pending(request_id=self._next_id, on_done=on_done)
        self._next_id += 1
        nursery = self._nursery
        if self._pending is not None:
            # The plane's slot makes this impossible; answer rather than corrupt the session.
            pending.failure = Failure("code_internal", "a CodeGraph request was already in flight")
        elif not self.alive or nursery is None:
            pending.failure = self._failure or Failure(
                "codegraph_crashed", "CodeGraph is not running"
            )
        if pending.failure is not None or nursery is None:
            pending.done.set()
            if on_done is not None:
                on_done()
            return pending
        self._pending = pending
        # In flight from here: the watchdog also covers a child that never reads the request.
        nursery.start_soon(self._watch, pending, trio.current_time() + self._call_timeout)
        await self._send(message(pending.request_id))
        return pending

    async def handshake(self) -> None:
        """`initialize` then `notifications/initialized`. Raises `ChildFailed`; a cancellation
        kills the half-started child (a fresh one is started by the next call)."""
        self._phase = "during the MCP handshake"
        pending = await self._request(wire.initialize_request, None)
        try:
            await pending.done.wait()
        except BaseException:
            self.kill(Failure("codegraph_crashed", "the CodeGraph start was abandoned"))
            raise
        if pending.failure is not None:
            raise pending.failure.error()
        assert pending.response is not None
        result = pending.response.result
        if result is None or not isinstance(result.get("protocolVersion"), str):
            failure = Failure("codegraph_crashed", "CodeGraph refused the MCP handshake")
            self.kill(failure)
            raise failure.error()
        if not await self._send(wire.initialized_notification()):
            raise (self._failure or Failure("codegraph_crashed", "CodeGraph exited")).error()
        self._phase = "while idle"

    async def call(
        self, name: str, arguments: dict[str, Any], *, on_done: Callable[[], None]
    ) -> wire.Response | Failure:
        """Call a tool; the reply, or why there is none. `on_done` runs exactly once, when the
        request is settled — possibly after this returns, if the caller is cancelled."""
        self._phase = "while answering a call"
        pending = await self._request(
            lambda request_id: wire.tools_call_request(request_id, name, arguments), on_done
        )
        try:
            await pending.done.wait()
        except trio.Cancelled:
            if not pending.done.is_set():
                pending.abandoned = True
                await self._send(wire.cancelled_notification(pending.request_id, "caller gave up"))
            raise
        if pending.response is not None:
            return pending.response
        assert pending.failure is not None
        return pending.failure
