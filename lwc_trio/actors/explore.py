"""The explore pipeline: one `lwc_explore` call from its arguments to its result.

Transport-neutral: the stdio session and the HTTP app both hand it a `tools/call`
and get the encoded response back. Every call takes the same steps, and every deadline is
set here, in one place, from the configuration, as a cancel scope:

1. the workspace refusal (SPEC §1: a default workspace that is a prohibited root);
2. argument rules, in SPEC §2 order (sans-IO, plus each requested plane's own rules);
3. the call's faults are drawn, in arrival order (`auth=` in its `PathCheck`, each
   requested plane's entry in its job);
4. the path check on the authorizer under `auth_timeout` (2 s), in every mode;
5. the requested planes, each under its own deadline, both at once in mode `all`;
6. the result object in its fixed key order.

The deadlines, all from `ServerConfig`, each a cancel scope counted from when its step
starts:

- **path check**: `auth_timeout` (2 s; no command-line flag) from when the check starts;
  an `auth=delay:S` fault waits inside it. No answer by then is the argument
  error `invalid_project_path` "could not be checked within 2 s".
- **each plane**: its own timeout from when it is asked, so a slow path check never eats
  into it: memory `memory_timeout` (5 s, `--memory-timeout`), code `code_timeout` (10 s,
  `--code-timeout`). A plane that has not answered by then is `<plane>_timeout`.
- **derived from the plane deadlines** where each plane builds its query or job
  (`actors/planes.py`): the request waits `LATE_MARGIN` (50 ms) past its plane's deadline
  for the worker's own timeout answer before concluding the worker is stuck; a memory
  search waits for a writer's lock until `BUSY_SHARE` (80 %) of `memory_timeout`, then
  answers `store_busy` (`memory_query`), and gives each store its own share of the memory
  deadline (`engine.query_stores`: a store that runs out answers its own `memory_timeout`
  while the others answer); the code plane kills a call that has been in
  flight for `code_timeout` (`CodePlaneConfig.call_timeout`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs
import trio

from lwc_trio.actors.authorizer import AuthJob, PathCheck, PathChecks, authorize
from lwc_trio.actors.planes import PlaneAnswer, PlaneName, Planes
from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import ArgumentError, PathRuleError
from lwc_trio.faults import Fault, FaultPlan
from lwc_trio.protocol import jsonrpc, session
from lwc_trio.protocol.arguments import ExploreArgs, validate
from lwc_trio.protocol.explore_result import NOT_REQUESTED, build_result, tool_response, tool_result
from lwc_trio.protocol.session import JSON

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
    planes: Planes
    checks: PathChecks
    faults: FaultPlan = attrs.field(factory=FaultPlan)

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

    async def explore(self, arguments: JSON) -> dict[str, JSON]:
        """The tool result (`content`, `structuredContent`, `isError`) for `arguments`."""
        return tool_result(*await self.run(arguments))

    async def run(self, arguments: JSON) -> tuple[dict[str, JSON], bool]:
        """The structured content for `arguments` and its `isError` flag."""
        try:
            args, wanted = self._check(arguments)
            check = self.checks.draw()
            faults = {name: self.faults.next(name) for name in wanted}
            project = await self._authorize(args.projectPath, check)
        except ArgumentError as err:
            return err.to_json(), True
        answers = await self._ask(faults, args, project)
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

    def _check(self, arguments: JSON) -> tuple[ExploreArgs, tuple[PlaneName, ...]]:
        """SPEC §2's argument rules, in order; raises `ArgumentError`."""
        if self.config.workspace_refusal is not None:
            raise ArgumentError("workspace_too_broad", self.config.workspace_refusal, "projectPath")
        args = validate(arguments)
        wanted = PLANES_FOR_MODE[args.mode]
        for name in wanted:
            self.planes[name].check(args)
        if args.scope != "all" and args.scope not in self.config.allowed_scopes:
            allowed = ", ".join(sorted(self.config.allowed_scopes))
            raise ArgumentError(
                "scope_not_allowed",
                f"$.scope {args.scope!r} is not allowed by this server (allowed: {allowed})",
                "scope",
            )
        return args, wanted

    async def _authorize(self, raw: str, check: PathCheck) -> Path:
        """SPEC §3 on the authorizer under the check's deadline (an `auth=delay:S` fault
        starts it S seconds late, inside the same deadline); raises `ArgumentError`."""
        timeout = self.config.auth_timeout
        try:
            with trio.move_on_after(timeout):
                if check.delay:
                    await trio.sleep(check.delay)
                return await authorize(self.auth, raw, check.rules)
        except PathRuleError as exc:
            raise ArgumentError(exc.code, exc.message, "projectPath") from None
        raise _unchecked(timeout)

    async def _ask(
        self, faults: Mapping[PlaneName, Fault | None], args: ExploreArgs, project: Path
    ) -> dict[PlaneName, PlaneAnswer]:
        """Each wanted plane under its own deadline, counted from when it is asked."""
        answers: dict[PlaneName, PlaneAnswer] = {}

        async def one(name: PlaneName) -> None:
            plane = self.planes[name]
            deadline = trio.CancelScope(deadline=trio.current_time() + plane.timeout)
            answers[name] = await plane.ask(args, project, self.config, deadline, faults[name])

        if len(faults) == 1:
            await one(*faults)  # one plane: no nursery (or task) needed
            return answers
        async with trio.open_nursery() as nursery:
            for name in faults:
                nursery.start_soon(one, name)
        return answers
