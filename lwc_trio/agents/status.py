"""`lwc agent status` rows: is `lwc` registered, does its command run, and what gates remain.

Shared by `lwc agent status` and `lwc doctor`. Reads config files and the hosts' state files and
runs each registered command once with `--version` (one from a project file only when it is
recognisably this lwc: `agents/command.py`); writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lwc_trio.agents.command import CommandCheck, Launcher, check_command
from lwc_trio.agents.files import decode, read_config
from lwc_trio.agents.gates import claude_local_entry, host_gates
from lwc_trio.agents.hosts import Host, desired_entry, entry_matches
from lwc_trio.agents.merge import inspect
from lwc_trio.exceptions import AgentError

__all__ = ["status_rows"]

Row = dict[str, Any]


class _Commands:
    """Each distinct registered command is run once per report; one from a project file only
    when it is one of the `known` launchers (`check_command`)."""

    def __init__(self, env: Mapping[str, str], known: Sequence[Launcher]) -> None:
        self.env = env
        self.known = known
        self.seen: dict[str, CommandCheck] = {}

    def check(self, entry: Any, *, from_project: bool) -> CommandCheck:
        fields = entry if isinstance(entry, dict) else {}
        command, args = fields.get("command"), fields.get("args")
        key = repr((command, args if isinstance(args, list) else None, from_project))
        if key not in self.seen:
            known = self.known if from_project else None
            self.seen[key] = check_command(command, args, self.env, known=known)
        return self.seen[key]


def _judged(state: str, message: str | None, check: CommandCheck) -> tuple[str, str | None]:
    """The row's state and message once its command was checked."""
    if check.runs is False:
        return "broken", f"the host cannot start it: {check.problem}"
    if check.runs is None:
        return state, f"its command was not verified: {check.problem}"
    return state, message


def _next_action(host: Host, scope: str, state: str) -> str | None:
    install = f"lwc agent install {host.key} --{scope}"
    return {
        "no_config": install,
        "not_registered": install,
        "outdated": install + " --force",
        "broken": install + " --force",
    }.get(state)


def _row(
    host: Host,
    scope: str,
    project: Path | None,
    reason: str | None,
    launcher: Launcher,
    commands: _Commands,
    env: Mapping[str, str],
    platform: str,
    cwd: Path,
) -> Row:
    row: Row = {"host": host.key, "name": host.name, "scope": scope}
    gates = host_gates(host, scope, project, env, platform, cwd=cwd, broad=reason)
    if scope == "project" and project is None:
        return {**row, "file": None, "state": "not_applicable", "registered": False,
                "entry": None, "codegraph": [], "command": None, "gates": gates,
                "message": reason, "nextAction": None}  # fmt: skip
    path = host.config_file(scope, project, env, platform)
    row["file"] = str(path)
    codegraph: tuple[str, ...] = ()
    existing: Any = None
    message: str | None = None
    check: CommandCheck | None = None
    try:
        original = read_config(path)
        if original is None:
            state = "no_config"
        else:
            entry = desired_entry(host, scope, launcher.command, project, prefix=launcher.prefix)
            found = inspect(host, decode(original, path), entry, label=str(path))
            state, existing, codegraph = found.state, found.existing, found.codegraph
    except AgentError as exc:
        state, message = "invalid", exc.message
    if state in ("registered", "outdated"):
        check = commands.check(existing, from_project=scope == "project")
        state, message = _judged(state, message, check)
    return {
        **row,
        "state": state,
        "registered": state in ("registered", "outdated", "broken"),
        "entry": existing,
        "codegraph": list(codegraph),
        "command": check.to_json() if check is not None else None,
        "gates": gates,
        "message": message,
        "nextAction": _next_action(host, scope, state),
    }


def _local_row(
    host: Host,
    project: Path,
    launcher: Launcher,
    commands: _Commands,
    env: Mapping[str, str],
    platform: str,
) -> Row | None:
    """Claude Code's local scope (`projects[KEY].mcpServers` in ~/.claude.json), when it has
    an `lwc` entry: lwc never writes it, but Claude prefers it to the project and user ones."""
    found = claude_local_entry(host, project, env, platform)
    if found is None:
        return None
    path, key, existing = found
    check = commands.check(existing, from_project=False)  # ~/.claude.json: the user's own file
    wanted = [
        desired_entry(host, scope, launcher.command, project, prefix=launcher.prefix)
        for scope in ("project", "user")
    ]
    state = "registered" if any(entry_matches(host, existing, e) for e in wanted) else "outdated"
    message: str | None = (
        f"Claude Code's local scope for {key}: it is used instead of the project and user entries"
    )
    state, message = _judged(state, message, check)
    return {
        "host": host.key,
        "name": host.name,
        "scope": "local",
        "file": str(path),
        "state": state,
        "registered": True,
        "entry": existing,
        "codegraph": [],
        "command": check.to_json(),
        "gates": [],
        "message": message,
        "nextAction": f"claude mcp remove lwc -s local   (in {key})",
    }


def status_rows(
    hosts: Sequence[Host],
    project: Path | None,
    reason: str | None,
    launcher: Launcher,
    env: Mapping[str, str],
    platform: str,
    *,
    cwd: Path,
    known: Sequence[Launcher] = (),
) -> list[Row]:
    """One row per host and scope (plus Claude Code's local scope when it has `lwc`).

    `project` is the directory a session would bind (None when `cwd` cannot be one: `reason`);
    `known` the launchers a project file's command may be run as (`known_launchers`)."""
    commands = _Commands(env, (launcher, *known))
    rows = []
    for host in hosts:
        if host.key == "claude-code" and project is not None:
            local = _local_row(host, project, launcher, commands, env, platform)
            if local is not None:
                rows.append(local)
        rows += [
            _row(host, scope, project, reason, launcher, commands, env, platform, cwd)
            for scope in host.scopes
        ]
    return rows
