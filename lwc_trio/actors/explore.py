"""The explore pipeline: one `lwc_explore` call from its arguments to its result.

Transport-neutral: the stdio session and the HTTP app both hand it a `tools/call`
and get the encoded response back. Every step is bounded, and each deadline is
set here, in one place, from the configuration:

1. the workspace refusal (SPEC §1: a default workspace that is a prohibited root);
2. argument rules, in SPEC §2 order (sans-IO, plus each requested plane's own rules);
3. the path check (`PathChecks.draw()`: the rules, with any `auth=` fault) under
   `auth_timeout` (2 s): in mode `memory` on the memory lane as the first half of the
   search job (`CheckedQuery`), else on the authorizer's lane;
4. the requested planes, each under its own deadline, both at once in mode `all`;
5. the result object in its fixed key order.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from lwc_trio.actors.authorizer import AuthJob, PathChecks, Rules, authorize
from lwc_trio.actors.planes import (
    Checked,
    PathRefused,
    PlaneAnswer,
    PlaneClient,
    PlaneName,
    checked_object,
)
from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import ArgumentError, PathRuleError
from lwc_trio.protocol import jsonrpc, session
from lwc_trio.protocol.arguments import ExploreArgs, validate
from lwc_trio.protocol.explore_result import NOT_REQUESTED, build_result, tool_response, tool_result

log = logging.getLogger("lwc.explore")

PLANES_FOR_MODE: Final[Mapping[str, tuple[PlaneName, ...]]] = {
    "memory": ("memory",),
    "code": ("code",),
    "all": ("memory", "code"),
}


def _unchecked(timeout: float) -> ArgumentError:
    return ArgumentError(
        "invalid_project_path",
        f"projectPath could not be checked within {timeout:g} s",
        "projectPath",
    )


@attrs.define(eq=False)
class Explorer:
    """Runs `lwc_explore` calls against the shared services (path checks and planes)."""

    config: ServerConfig
    auth: trio.MemorySendChannel[AuthJob]
    planes: Mapping[PlaneName, PlaneClient]
    checks: PathChecks
    checked_memory: bool = False
    """The memory engine runs a call's path check as the first step of its search
    (`CheckedQuery`): the real engine does, faults or not; scripted test engines do not."""

    async def call(self, call: session.ToolCall) -> bytes:
        """Run one `tools/call`; returns its JSON-RPC response, encoded (no newline).

        Only the caller's own cancellation escapes; any other failure is `-32603`.
        """
        try:
            structured, is_error = await self.run(call.arguments)
            return tool_response(call.id, structured, is_error)
        except Exception:
            log.exception("tools/call %r failed", call.id)
            return jsonrpc.to_bytes(
                jsonrpc.error(call.id, jsonrpc.INTERNAL_ERROR, "Internal error", "internal_error")
            )

    async def explore(self, arguments: Any) -> dict[str, Any]:
        """The tool result (`content`, `structuredContent`, `isError`) for `arguments`."""
        return tool_result(*await self.run(arguments))

    async def run(self, arguments: Any) -> tuple[dict[str, Any], bool]:
        """The structured content for `arguments` and its `isError` flag."""
        try:
            args, wanted = self._check(arguments)
            check = self.checks.draw()
            timeout = self.config.auth_timeout
            if check.delay:  # an `auth=delay:S` fault: the check starts late, same deadline
                if check.delay >= timeout:
                    await trio.sleep(timeout)
                    raise _unchecked(timeout)
                await trio.sleep(check.delay)
                timeout -= check.delay
            if self.checked_memory and args.mode == "memory":
                return await self._memory_checked(args, check.rules, timeout)
            project = await self._authorize(args.projectPath, check.rules, timeout)
        except ArgumentError as err:
            return err.to_json(), True
        answers = await self._ask(wanted, args, project)
        memory = answers.get("memory")
        code = answers.get("code")
        return build_result(
            args,
            str(project),
            memory.body if memory else dict(NOT_REQUESTED),
            code.body if code else dict(NOT_REQUESTED),
            memory.ms if memory else None,
            code.ms if code else None,
        )

    def _check(self, arguments: Any) -> tuple[ExploreArgs, tuple[PlaneClient, ...]]:
        """SPEC §2's argument rules, in order; raises `ArgumentError`."""
        if self.config.workspace_refusal is not None:
            raise ArgumentError("workspace_too_broad", self.config.workspace_refusal, "projectPath")
        args = validate(arguments)
        wanted = tuple(self.planes[name] for name in PLANES_FOR_MODE[args.mode])
        for plane in wanted:
            plane.check(args)
        if args.scope != "all" and args.scope not in self.config.allowed_scopes:
            allowed = ", ".join(sorted(self.config.allowed_scopes))
            raise ArgumentError(
                "scope_not_allowed",
                f"$.scope {args.scope!r} is not allowed by this server (allowed: {allowed})",
                "scope",
            )
        return args, wanted

    async def _authorize(self, raw: str, rules: Rules, budget: float) -> Path:
        """SPEC §3 on the authorizer, under what is left of the check's deadline; raises
        `ArgumentError`."""
        try:
            with trio.move_on_after(budget):
                return await authorize(self.auth, raw, rules)
        except PathRuleError as exc:
            raise ArgumentError(exc.code, exc.message, "projectPath") from None
        raise _unchecked(self.config.auth_timeout)

    async def _memory_checked(
        self, args: ExploreArgs, rules: Rules, budget: float
    ) -> tuple[dict[str, Any], bool]:
        """Mode `memory` as one memory-plane job: path check, then search (`CheckedQuery`).

        Raises `ArgumentError` when the path is refused or its check did not end in time.
        When the plane fails before it can say how the check went (a crash), the same
        check runs on the authorizer, so the answer is what the two-step pipeline gives.
        """
        plane = self.planes["memory"]
        answer, ms = await plane.ask_checked(args, args.projectPath, self.config, rules, budget)
        if isinstance(answer, PathRefused):
            if answer.error is None:
                raise _unchecked(self.config.auth_timeout)
            raise ArgumentError(answer.error.code, answer.error.message, "projectPath")
        if isinstance(answer, Checked):
            project, body = answer.project, checked_object("memory", answer.body)
        else:
            project = await self._authorize(args.projectPath, rules, budget)
            body = checked_object("memory", answer)
        return build_result(args, str(project), body, dict(NOT_REQUESTED), ms, None)

    async def _ask(
        self, wanted: tuple[PlaneClient, ...], args: ExploreArgs, project: Path
    ) -> dict[PlaneName, PlaneAnswer]:
        """Each wanted plane under its own deadline (inside `PlaneClient.ask`)."""
        answers: dict[PlaneName, PlaneAnswer] = {}
        if len(wanted) == 1:
            plane = wanted[0]  # one plane: no nursery (or task) needed
            answers[plane.name] = await plane.ask(args, project, self.config)
            return answers

        async def one(plane: PlaneClient) -> None:
            answers[plane.name] = await plane.ask(args, project, self.config)

        async with trio.open_nursery() as nursery:
            for plane in wanted:
                nursery.start_soon(one, plane)
        return answers
