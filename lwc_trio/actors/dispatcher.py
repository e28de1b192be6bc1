"""The dispatcher: answers cheap requests at once, runs each tool call in its own task.

Only `tools/call` counts toward the in-flight bound. Calls beyond it wait in the
bounded queue the transport feeds; `ping`, `initialize` and notifications are
answered by `immediate()` without ever waiting behind a slow call. Each call
runs in its own cancel scope, so `notifications/cancelled` (or the end of the
drain grace) stops exactly the work it names.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Final

import attrs
import trio

from lwc_trio.actors.authorizer import AuthJob, authorize
from lwc_trio.actors.planes import PlaneJob, ask
from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import PathRuleError
from lwc_trio.protocol import jsonrpc, session
from lwc_trio.protocol.arguments import ArgumentError, ExploreArgs, validate
from lwc_trio.protocol.results import NOT_REQUESTED, build_result, tool_response, tool_result

log = logging.getLogger("lwc.dispatcher")

SEND_GRACE: Final = 1.0
"""How long a computed answer may wait for room in the outbox once the
dispatcher is being torn down: long enough never to lose it to a busy writer."""

_Key = tuple[str, jsonrpc.RequestId]


def _key(rid: jsonrpc.RequestId) -> _Key:
    # JSON-RPC ids 1 and "1" are different requests.
    return (type(rid).__name__, rid)


@attrs.define(eq=False)
class Pending:
    """A queued or running tool call and the scope that cancels it."""

    call: session.ToolCall
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)


@attrs.define(eq=False)
class Dispatcher:
    """Routes requests to the authorizer and the planes; owns in-flight work."""

    config: ServerConfig
    memory: trio.MemorySendChannel[PlaneJob]
    code: trio.MemorySendChannel[PlaneJob]
    auth: trio.MemorySendChannel[AuthJob]
    _pending: dict[_Key, list[Pending]] = attrs.field(factory=dict)
    _scope: trio.CancelScope | None = None

    # -- messages that need no plane ------------------------------------------------

    def immediate(self, request: jsonrpc.Request) -> dict[str, Any] | session.ToolCall:
        """The reply to a cheap request, or the tool call to queue."""
        return session.answer(request, self.config.version)

    def notify(self, note: jsonrpc.Notification) -> None:
        """Handle a notification (only cancellation does anything)."""
        if note.method == "notifications/cancelled":
            rid = session.cancelled_request_id(note.params)
            if rid is not None:
                for pending in self._pending.get(_key(rid), ()):
                    pending.scope.cancel()

    def register(self, call: session.ToolCall) -> Pending:
        """Make a call cancellable by id from the moment it is queued."""
        pending = Pending(call)
        self._pending.setdefault(_key(call.id), []).append(pending)
        return pending

    def _forget(self, pending: Pending) -> None:
        key = _key(pending.call.id)
        group = self._pending.get(key)
        if group is not None:
            group.remove(pending)
            if not group:
                del self._pending[key]

    # -- the stdio call queue -------------------------------------------------------

    async def run(
        self,
        calls: trio.MemoryReceiveChannel[Pending],
        outbox: trio.MemorySendChannel[bytes],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Start queued calls under the in-flight bound until the queue closes.

        Returns once every started call has answered, or the drain grace set by
        `begin_drain()` ran out and the rest were cancelled.
        """
        slots = trio.Semaphore(self.config.max_in_flight)
        async with outbox, calls, trio.open_nursery() as nursery:
            self._scope = nursery.cancel_scope
            task_status.started()
            async for pending in calls:
                if pending.scope.cancel_called:
                    self._forget(pending)
                    continue
                await slots.acquire()
                nursery.start_soon(self._run_queued, pending, outbox, slots)

    def begin_drain(self) -> None:
        """Input ended: in-flight and queued calls get the grace, then are cancelled."""
        if self._scope is not None:
            self._scope.deadline = min(
                self._scope.deadline, trio.current_time() + self.config.grace
            )

    async def _run_queued(
        self, pending: Pending, outbox: trio.MemorySendChannel[bytes], slots: trio.Semaphore
    ) -> None:
        try:
            response: bytes | None = None
            with pending.scope:
                response = await self.call(pending.call)
            if response is not None and not pending.scope.cancelled_caught:
                # Computed answers are never lost to a late cancel.
                with trio.move_on_after(SEND_GRACE, shield=True):
                    # BrokenResourceError: stdout is gone; nobody can read it any more.
                    with contextlib.suppress(trio.BrokenResourceError):
                        await outbox.send(response + b"\n")
        finally:
            slots.release()
            self._forget(pending)

    # -- the tool --------------------------------------------------------------------

    async def call(self, call: session.ToolCall) -> bytes:
        """Run one `tools/call`; returns its JSON-RPC response, encoded (no newline)."""
        try:
            structured, is_error = await self._explore(call.arguments)
            return tool_response(call.id, structured, is_error)
        except Exception:
            log.exception("tools/call %r failed", call.id)
            return jsonrpc.to_bytes(
                jsonrpc.error(call.id, jsonrpc.INTERNAL_ERROR, "Internal error", "internal_error")
            )

    async def explore(self, arguments: Any) -> dict[str, Any]:
        """The `lwc_explore` pipeline: validate → authorize → planes → tool result."""
        return tool_result(*await self._explore(arguments))

    async def _explore(self, arguments: Any) -> tuple[dict[str, Any], bool]:
        """`explore` up to the structured content and its `isError` flag."""
        try:
            args = self._check_arguments(arguments)
            try:
                project = await authorize(self.auth, args.projectPath)
            except PathRuleError as exc:
                raise ArgumentError(exc.code, exc.message, "projectPath") from None
        except ArgumentError as err:
            return err.to_json(), True

        from lwc_trio.codegraph.plane import CodeQuery
        from lwc_trio.memory.engine import MemoryQuery

        # plane -> (mailbox, payload, timeout); answers land in `answers` as (object, ms).
        asks: dict[str, tuple[trio.MemorySendChannel[PlaneJob], Any, float]] = {}
        if args.wants_memory:
            memory_query = MemoryQuery(
                query=args.query,
                project_path=project,
                workspace=self.config.workspace,
                home=self.config.home,
                scope=args.scope,
                allowed_scopes=self.config.allowed_scopes,
                max_documents=args.maxDocuments,
            )
            asks["memory"] = (self.memory, memory_query, self.config.memory_timeout)
        if args.wants_code:
            code_query = CodeQuery(
                query=args.query,
                project_path=project,
                workspace=self.config.workspace,
                max_files=args.maxFiles,
            )
            asks["code"] = (self.code, code_query, self.config.code_timeout)
        answers: dict[str, tuple[dict[str, Any], int]] = {}

        async def run(plane: str) -> None:
            mailbox, payload, timeout = asks[plane]
            started = trio.current_time()
            answer = await ask(mailbox, plane, payload, started + timeout)
            answers[plane] = (answer, _ms(started))

        if len(asks) == 1:
            await run(next(iter(asks)))  # one plane: no nursery (or task) needed
        else:
            # Both planes at once, each under its own deadline inside ask().
            async with trio.open_nursery() as nursery:
                for plane in asks:
                    nursery.start_soon(run, plane)
        memory, memory_ms = answers.get("memory", (dict(NOT_REQUESTED), None))
        code, code_ms = answers.get("code", (dict(NOT_REQUESTED), None))
        return build_result(args, str(project), memory, code, memory_ms, code_ms)

    def _check_arguments(self, arguments: Any) -> ExploreArgs:
        args = validate(arguments)
        if args.wants_memory:
            from lwc_trio.memory.tokenize import MAX_TERMS, tokenize

            terms = len(tokenize(args.query))
            if terms > MAX_TERMS:
                raise ArgumentError(
                    "invalid_query",
                    f"$.query has {terms} search terms; at most {MAX_TERMS} are allowed",
                    "query",
                )
        if args.scope != "all" and args.scope not in self.config.allowed_scopes:
            allowed = ", ".join(sorted(self.config.allowed_scopes))
            raise ArgumentError(
                "scope_not_allowed",
                f"$.scope {args.scope!r} is not allowed by this server (allowed: {allowed})",
                "scope",
            )
        return args


def _ms(started: float) -> int:
    return round((trio.current_time() - started) * 1000)
