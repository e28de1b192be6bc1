"""The code plane: readiness, one lazily started CodeGraph child, one call in flight (SPEC §5).

`open_code_plane` owns a nursery holding at most one live `CodeGraphChild` — for the index root
of the latest call, replaced when the root changes, restarted after any kill. Calls take a
single slot, FIFO, with at most `QUEUE_LIMIT` waiting; a call beyond that is answered at once
with `codegraph_timeout` ("busy") rather than queued without bound.

The slot is held from sending a call until its reply arrives or the child is killed — not until
the caller returns. A caller cancelled while its call is in flight leaves the slot with the
request, which frees it when the child's late reply comes (or the watchdog kills the child after
`call_timeout` in flight). A caller cancelled while queued just leaves the queue.

Races (SPEC §3): the child resolves paths itself, so the tree could be swapped under it. The
plane locates the index through directory handles before every call (`locate_index`), binds the
child to the root's identity (a different identity replaces the child), and after every reply
locates it again: a changed identity, or a child holding a `codegraph.db` other than the one
found, discards the answer and kills the child (docs/security.md, "Code plane and races").

Those filesystem calls (the readiness check, the index lookup, the `/proc` scan) can block on
a dead mount like the authorizer's path checks, so they run where those do, on a thread lane,
never on the event loop: the plane is given one (`Offload`, the actors' `ThreadLane.run`), and
a call abandoned there at its deadline costs that lane a thread, not the loop.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import attrs
import trio

from lwc_trio.codegraph import wire
from lwc_trio.codegraph.child import CodeGraphChild, Failure
from lwc_trio.codegraph.explore_output import error_reply_state, interpret_tool_result
from lwc_trio.codegraph.index import (
    DB_NAME,
    IndexInvalid,
    Located,
    Ready,
    RootIdentity,
    error_state,
    locate_index,
    readiness,
)
from lwc_trio.exceptions import ChildFailed

__all__ = [
    "QUEUE_LIMIT",
    "TOOL_NAME",
    "CodePlane",
    "CodePlaneConfig",
    "CodeQuery",
    "Offload",
    "open_code_plane",
]

QUEUE_LIMIT = 8
TOOL_NAME = "codegraph_explore"

T = TypeVar("T")


class Offload(Protocol):
    """Runs a blocking call in a thread and waits for it (`ThreadLane.run`); on cancellation
    the call is abandoned."""

    async def __call__(self, fn: Callable[..., T], /, *args: object) -> T: ...


@attrs.frozen
class CodeQuery:
    """One code-mode request, already validated and authorized by the caller."""

    query: str
    project_path: Path  # canonical, authorized, inside workspace
    workspace: Path  # canonical
    max_files: int  # 1..20
    max_tokens: int = 2_500
    """The answer's budget (`protocol.tool.DEFAULT_MAX_TOKENS`); the text is fitted to it when
    the result is assembled (`protocol.explore_result.fit_budget`)."""


@attrs.frozen
class CodePlaneConfig:
    """`call_timeout` bounds a call in flight (`--code-timeout`); `env` is the server's
    environment snapshot (HOME, PATH, LANG, LWC_CODEGRAPH_BINARY are read from it)."""

    call_timeout: float = 10.0
    env: Mapping[str, str] = attrs.field(factory=dict, hash=False)


class CodePlane:
    """Answers code queries with SPEC §2.1 `codeGraph` objects. Use `open_code_plane`."""

    def __init__(self, config: CodePlaneConfig, nursery: trio.Nursery, offload: Offload) -> None:
        self._config = config
        self._nursery = nursery
        self._offload = offload
        self._slot = trio.Semaphore(1)
        self._waiting = 0
        self._child: CodeGraphChild | None = None
        self._child_identity: RootIdentity | None = None
        self._closed = False

    @property
    def waiting(self) -> int:
        """Calls waiting for the slot (for status and tests)."""
        return self._waiting

    @property
    def child_pid(self) -> int | None:
        """The pid of the live child, if any (for status and tests)."""
        child = self._child
        return child.pid if child is not None and child.alive else None

    async def explore(self, q: CodeQuery) -> dict[str, Any]:
        """Return the SPEC §2.1 codeGraph object: ready {"state","text","truncated","files"} |
        unavailable | error. Safe to call from many tasks at once.

        Raises only `trio.Cancelled` (the caller's deadline: see the module docstring) and
        bugs; every failure of the runtime is an `error` object.
        """
        ready = await self._offload(readiness, q.project_path, q.workspace, self._config.env)
        if not isinstance(ready, Ready):
            return ready
        if self._waiting >= QUEUE_LIMIT:
            return error_state(
                "codegraph_timeout",
                f"CodeGraph is busy: one call is in flight and {QUEUE_LIMIT} are waiting; "
                "try again shortly",
            )
        self._waiting += 1
        try:
            await self._slot.acquire()
        finally:
            self._waiting -= 1
        handed_off = False
        try:
            if self._closed:
                return error_state("code_internal", "the code plane is shutting down")
            try:
                child = await self._child_for(ready)
            except ChildFailed as exc:
                return error_state(exc.code, exc.message)
            arguments = {"query": q.query, "maxFiles": q.max_files, "projectPath": str(ready.root)}
            handed_off = True  # from here the request releases the slot, whenever it settles
            outcome = await child.call(TOOL_NAME, arguments, on_done=self._slot.release)
        finally:
            if not handed_off:
                self._slot.release()
        if not isinstance(outcome, Failure):
            changed = await self._offload(
                _changed_during_call, ready, q.project_path, q.workspace, child.pid
            )
            if changed is not None:
                # What the child read may come from outside: the answer is discarded, and the
                # child is not reused: it may have opened (and cached) another project, or
                # refreshed the index from what the swapped path showed. The next child's
                # catch-up sync re-reads the tree before it answers.
                failure = Failure(
                    "codegraph_index_invalid",
                    f"the project tree changed during the call ({changed}); the answer was "
                    "discarded — retry once the tree is stable",
                )
                child.kill(failure)
                await child.wait_exited()
                return failure.state()
        state = self._state_of(outcome)
        if state is None:
            failure = Failure(
                "codegraph_bad_response", "CodeGraph answered the call without text content"
            )
            # A child whose answers are unusable is not trusted with the next call; like every
            # other kill, it is reaped before the error is returned.
            child.kill(failure)
            await child.wait_exited()
            return failure.state()
        return state

    async def _child_for(self, ready: Ready) -> CodeGraphChild:
        """The live child for `ready.root`, starting one (and stopping any other) if needed.
        Called with the slot held, so no request of the old child is in flight."""
        child = self._child
        same_identity = (
            self._child_identity is not None
            and ready.identity is not None
            and self._child_identity.nodes == ready.identity.nodes
        )
        if (
            child is not None
            and child.alive
            and (child.root, child.binary) == (ready.root, ready.binary)
            and same_identity
        ):
            return child
        if child is not None:
            # Another root, or the same path now naming other directories: a child started for
            # the old one may hold its files open.
            child.kill(Failure("codegraph_crashed", "replaced by a child for another index root"))
        child = CodeGraphChild(
            binary=ready.binary,
            root=ready.root,
            env=self._config.env,
            call_timeout=self._config.call_timeout,
        )
        self._child, self._child_identity = child, ready.identity
        await self._nursery.start(child.run)
        await child.handshake()
        return child

    @staticmethod
    def _state_of(outcome: wire.Response | Failure) -> dict[str, Any] | None:
        """The `codeGraph` object for a call's outcome; None when the reply is unusable."""
        if isinstance(outcome, Failure):
            return outcome.state()
        if outcome.error is not None:
            return error_reply_state(outcome.error)
        assert outcome.result is not None
        return interpret_tool_result(outcome.result)

    def close(self) -> None:
        """Refuse new calls and kill the child; its task reaps it as the nursery winds down."""
        self._closed = True
        if self._child is not None:
            self._child.kill(Failure("code_internal", "the code plane shut down"))


def _changed_during_call(
    before: Ready, project: Path, workspace: Path, pid: int | None
) -> str | None:
    """Why the answer cannot be trusted to come from `before`'s index root, or None
    (blocking: run on the plane's lane).

    The index is located again (`locate_index`) once the reply is in. On Linux the child's
    (`pid`) open files are checked too: a `codegraph.db` other than the one located means it
    opened another project (its connections stay open, so a swap it followed is still
    visible there).
    """
    if before.identity is None:
        return None
    if pid is not None and _holds_other_index(pid, before.identity.db):
        return "CodeGraph opened an index other than the one checked"
    after: Located | IndexInvalid | None = locate_index(project, workspace)
    if not isinstance(after, Located) or after.root != before.root:
        return "the index root is no longer where it was"
    if after.identity.nodes != before.identity.nodes:
        return "a directory on the way to the index was replaced"
    if after.identity.stamps != before.identity.stamps:
        return "a directory on the way to the index had entries renamed or replaced"
    return None


def _holds_other_index(pid: int, db: tuple[int, int]) -> bool | None:
    """Whether process `pid` has a `codegraph.db` open that is not `db` (st_dev, st_ino);
    None when that cannot be known.

    Reads `/proc/PID/fd`; where there is none (macOS) the answer is None and the identity
    checks stand alone.
    """
    base = f"/proc/{pid}/fd"
    try:
        names = os.listdir(base)
    except OSError:
        return None
    for name in names:
        try:
            target = os.readlink(f"{base}/{name}")
            if os.path.basename(target.removesuffix(" (deleted)")) != DB_NAME:
                continue
            opened = os.stat(f"{base}/{name}")
        except OSError:
            continue  # closed meanwhile
        if (opened.st_dev, opened.st_ino) != db:
            return True
    return False


@asynccontextmanager
async def open_code_plane(config: CodePlaneConfig, offload: Offload) -> AsyncIterator[CodePlane]:
    """Run a `CodePlane` for the duration of the block; its filesystem calls go to `offload`.

    On every exit path (normal, exception, cancellation) the child's process group is SIGKILLed
    and the child reaped — under a shielded, bounded scope — before this returns.
    """
    # The block's own exception is re-raised as is after the nursery closes, so callers see
    # their ValueError or Cancelled rather than an ExceptionGroup wrapping it.
    raised: BaseException | None = None
    async with trio.open_nursery() as nursery:
        plane = CodePlane(config, nursery, offload)
        try:
            yield plane
        except BaseException as exc:
            raised = exc
        finally:
            plane.close()
            nursery.cancel_scope.cancel()
    if raised is not None:
        raise raised
