"""`lwc agent install|status|uninstall HOST` and `lwc doctor` (SPEC §7).

`install` merges one `lwc` server entry into the host's own MCP configuration (backing up and
atomically replacing the file), `uninstall` removes only that entry, `status` and `doctor` only
look. The merging itself is the pure `lwc_trio.agents` package; this module does the arguments,
the environment and the printing.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from lwc_trio.agents import (
    ENTRY_NAME,
    HOSTS,
    AgentError,
    Host,
    Plan,
    backup_root,
    decode,
    desired_entry,
    doctor_report,
    find_host,
    host_names,
    plan_install,
    plan_uninstall,
    read_config,
    write_config,
)
from lwc_trio.agents.command import Launcher, find_launcher, known_launchers
from lwc_trio.agents.doctor import host_section
from lwc_trio.agents.gates import host_gates
from lwc_trio.agents.merge import CODEGRAPH_WARNING, TRANSPORT_KEYS
from lwc_trio.agents.status import status_rows
from lwc_trio.cli.options import examples
from lwc_trio.cli.output import emit, fail, wants_json
from lwc_trio.exceptions import PathRuleError, UsageError
from lwc_trio.paths import validate_workspace

__all__ = ["register"]

Handler = Callable[[argparse.Namespace], int]


def _agent_errors(handler: Handler) -> Handler:
    @functools.wraps(handler)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except AgentError as exc:
            raise fail(exc.code, exc.message, exit_code=exc.exit_code) from None

    return wrapper


def _home() -> Path:
    return Path(os.path.realpath(Path.home()))


def _host(name: str) -> Host:
    host = find_host(name)
    if host is None:
        raise UsageError(
            "invalid_usage", f"unknown agent host {name!r}; choose one of: {host_names()}"
        )
    return host


def _scope(args: argparse.Namespace, host: Host) -> str:
    scope = str(args.target or host.scopes[0])
    if scope not in host.scopes:  # pragma: no cover - every host has both scopes today
        where = host.user_file(os.environ, sys.platform)
        raise fail(
            "agent_scope_unsupported",
            f"{host.name} reads MCP servers from its user configuration ({where}) only; use --user",
            exit_code=2,
        )
    return scope


def _project_or_reason(directory: Path | None = None) -> tuple[Path | None, str | None]:
    where = os.path.realpath(directory if directory is not None else os.getcwd())
    try:
        return validate_workspace(where, os.environ), None
    except PathRuleError as exc:
        return None, f"{where} cannot be a project directory ({exc.message})"


def _project() -> Path:
    project, reason = _project_or_reason()
    if project is None:
        raise fail(
            "workspace_too_broad",
            f"{reason}; run this in your project directory, or use --user",
            exit_code=2,
        )
    return project


def _launcher() -> Launcher:
    """The `lwc` a host should run: on PATH, else the one running now (absolute either way)."""
    return find_launcher(os.environ, sys.argv[0], sys.executable)


def _known() -> tuple[Launcher, ...]:
    """The launchers of this lwc that status may run from a project file."""
    return known_launchers(os.environ, sys.argv[0], sys.executable)


def _diff(path: Path, old: str | None, new: str | None) -> str:
    before = (old or "").splitlines(keepends=True)
    after = (new if new is not None else old or "").splitlines(keepends=True)
    lines = difflib.unified_diff(
        before,
        after,
        fromfile=str(path) if old is not None else "/dev/null",
        tofile=str(path),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _warnings(plan: Plan, path: Path, launcher: Launcher, gates: list[dict[str, Any]]) -> list[str]:
    warnings = []
    if plan.codegraph:
        names = ", ".join(repr(name) for name in plan.codegraph)
        warnings.append(CODEGRAPH_WARNING.format(file=path, names=names))
    if launcher.source == "installer":
        warnings.append(
            f"`lwc` is not on PATH: the entry runs {launcher.command} (the lwc running this "
            "installer); run `lwc agent install` again if you move it"
        )
    elif launcher.source == "python":
        warnings.append(
            f"no `lwc` script found: the entry runs {launcher.command} -P -m lwc_trio (this "
            "Python); run `lwc agent install` again if you move or remove it"
        )
    warnings += [
        f"{gate['message']} — {gate['fix']}"
        for gate in gates
        if gate["gate"] == "claude_local_entry"
    ]
    return warnings


def _notes(
    host: Host, scope: str, project: Path | None, plan: Plan, gates: list[dict[str, Any]]
) -> list[str]:
    notes = []
    if plan.status in ("added", "replaced") and scope == "project":
        # SPEC §7: the command is this machine's absolute `lwc`, so a committed project entry
        # is machine-specific for every host; the `--force` install rewrites it elsewhere.
        fix = f"a teammate runs `lwc agent install {host.key} --project --force`"
        if host.workspace_var is None:
            notes.append(
                f"the entry runs {plan.entry['command']} and binds --path to {project}, so it "
                f"is specific to this checkout on this machine; {fix} (or uses --user)"
            )
        else:
            notes.append(
                f"the entry runs {plan.entry['command']}, so it is specific to this machine; "
                f"{fix}, which rewrites only the command (or uses --user)"
            )
    kept = [key for key in plan.entry or () if key not in TRANSPORT_KEYS]
    if plan.status == "replaced" and kept:
        notes.append("kept the existing entry's own keys: " + ", ".join(kept))
    if scope == "user" and host.workspace_var is None:
        notes.append(
            f"{host.name} starts this entry in the directory a session starts in: start it in a "
            "project (started in $HOME or /, every lwc_explore call answers workspace_too_broad)"
        )
    notes += [
        f"{gate['message']} — {gate['fix']}"
        for gate in gates
        if gate["gate"] != "claude_local_entry"
    ]
    return notes


_VERBS = {
    "added": ("added `lwc` to", "would add `lwc` to"),
    "replaced": ("replaced the `lwc` entry in", "would replace the `lwc` entry in"),
    "unchanged": ("`lwc` is already registered, unchanged:", "`lwc` is already registered:"),
    "removed": ("removed `lwc` from", "would remove `lwc` from"),
    "absent": ("`lwc` is not registered; nothing changed in", "`lwc` is not registered in"),
}


def _human_change(result: dict[str, Any]) -> str:
    verb = _VERBS[result["status"]][1 if result["dryRun"] else 0]
    lines = [f"{result['name']} ({result['scope']}): {verb} {result['file']}"]
    if result["backup"]:
        lines.append(f"  backup: {result['backup']}")
    lines += [f"  warning: {text}" for text in result["warnings"]]
    lines += [f"  note: {text}" for text in result.get("notes", [])]
    if result["dryRun"]:
        lines.append("  (dry run: nothing was written)")
        if result["diff"]:
            lines.append(result["diff"].rstrip("\n"))
    return "\n".join(lines)


@attrs.frozen
class _Target:
    """The config file an install or uninstall edits, as it is before the edit."""

    host: Host
    scope: str
    project: Path | None
    path: Path
    original: bytes | None
    text: str | None


def _target(args: argparse.Namespace) -> _Target:
    host = _host(args.host)
    scope = _scope(args, host)
    project = _project() if scope == "project" else None
    path = host.config_file(scope, project, os.environ, sys.platform)
    original = read_config(path)
    text = decode(original, path) if original is not None else None
    return _Target(host, scope, project, path, original, text)


def _change_result(target: _Target, plan: Plan, args: argparse.Namespace) -> dict[str, Any]:
    host, scope, path = target.host, target.scope, target.path
    backup = None
    if plan.text is not None and not args.dry_run:
        backup = write_config(
            path,
            plan.text,
            original=target.original,
            backups=backup_root(os.environ),
            private=scope == "user",
        )
    result: dict[str, Any] = {
        "host": host.key,
        "name": host.name,
        "scope": scope,
        "file": str(path),
        "status": plan.status,
        "written": plan.text is not None and not args.dry_run,
        "dryRun": bool(args.dry_run),
        "backup": str(backup) if backup is not None else None,
    }
    if args.dry_run:
        result["diff"] = _diff(path, target.text, plan.text)
    return result


# ---------------------------------------------------------------------------- install


@_agent_errors
def _install(args: argparse.Namespace) -> int:
    target = _target(args)
    host, scope, project, path = target.host, target.scope, target.project, target.path
    launcher = _launcher()
    entry = desired_entry(host, scope, launcher.command, project, prefix=launcher.prefix)
    plan = plan_install(host, target.text, entry, force=args.force, label=str(path))
    result = _change_result(target, plan, args)
    cwd, (session, broad) = Path(os.path.realpath(os.getcwd())), _project_or_reason()
    gates = host_gates(host, scope, session, os.environ, sys.platform, cwd=cwd, broad=broad)
    result["entry"] = plan.entry
    result["gates"] = gates
    result["warnings"] = _warnings(plan, path, launcher, gates)
    result["notes"] = _notes(host, scope, project, plan, gates)
    emit(result, as_json=wants_json(args.json), human=_human_change)
    return 0


# ---------------------------------------------------------------------------- uninstall


@_agent_errors
def _uninstall(args: argparse.Namespace) -> int:
    target = _target(args)
    plan = plan_uninstall(target.host, target.text, label=str(target.path))
    result = _change_result(target, plan, args)
    result["removed"] = plan.existing
    result["warnings"] = []
    emit(result, as_json=wants_json(args.json), human=_human_change)
    return 0


# ---------------------------------------------------------------------------- status


def _human_status(result: dict[str, Any]) -> str:
    lines = []
    for row in result["configs"]:
        where = row["file"] or row["message"]
        lines.append(f"{row['name']:<12} {row['scope']:<8} {row['state']:<15} {where}")
        if row["state"] == "invalid":
            lines.append(f"{'':<22}{row['message']}")
        if row["codegraph"]:
            names = ", ".join(row["codegraph"])
            lines.append(f"{'':<22}also registers CodeGraph ({names}); lwc already includes it")
        if row["state"] in ("broken", "outdated") or row["scope"] == "local":
            if row["message"]:
                lines.append(f"{'':<22}{row['message']}")
            lines.append(f"{'':<22}→ {row['nextAction']}")
        if row["registered"] or row["state"] == "not_applicable":
            for gate in row["gates"]:
                lines.append(f"{'':<22}{'gate' if gate['blocking'] else 'asks'}: {gate['message']}")
                lines.append(f"{'':<22}→ {gate['fix']}")
    return "\n".join(lines)


@_agent_errors
def _status(args: argparse.Namespace) -> int:
    hosts = (_host(args.host),) if args.host else HOSTS
    project, reason = _project_or_reason()
    cwd = Path(os.path.realpath(os.getcwd()))
    rows = status_rows(
        hosts, project, reason, _launcher(), os.environ, sys.platform, cwd=cwd, known=_known()
    )
    result = {
        "entryName": ENTRY_NAME,
        "registered": [f"{row['host']}/{row['scope']}" for row in rows if row["registered"]],
        "configs": rows,
    }
    emit(result, as_json=wants_json(args.json), human=_human_status)
    return 0


# ---------------------------------------------------------------------------- doctor


_LABELS = {
    "workspace": "workspace",
    "project_store": "project Wiki",
    "project_graph": "project graph",
    "global_store": "global Wiki",
    "global_graph": "global graph",
    "codegraph_runtime": "CodeGraph",
    "codegraph_index": "code index",
    "lwc_on_path": "lwc on PATH",
}


def _human_doctor(report: dict[str, Any]) -> str:
    where = report["workspace"] or "this directory"
    lines = [f"lwc doctor: what a host starting `lwc serve --mcp` in {where} would see", ""]
    for check in report["checks"]:
        label = _LABELS.get(check["name"], check["name"])
        lines.append(f"  {check['status']:<8} {label:<14} {check['message']}")
        action = check["nextAction"]
        if action:
            lines.append(f"  {'':<8} {'':<14} → {action['command']}   (in {action['cwd']})")
    lines += ["", "hosts that register lwc:" if report["hosts"] else "no host registers lwc yet "
              "(lwc agent install HOST)"]  # fmt: skip
    for row in report["hosts"]:
        lines.append(f"  {row['state']:<10} {row['name']} ({row['scope']}) {row['file']}")
        if row["message"]:
            lines.append(f"  {'':<10} {row['message']}")
        for gate in row["gates"]:
            lines.append(f"  {'':<10} {'gate' if gate['blocking'] else 'asks'}: {gate['message']}")
            lines.append(f"  {'':<10} → {gate['fix']}")
    ready = report["ready"]
    lines += [
        "",
        f"memory: {'ready' if ready['memory'] else 'unavailable'} · "
        f"code: {'ready' if ready['code'] else 'unavailable'}",
    ]
    return "\n".join(lines)


def _doctor(args: argparse.Namespace) -> int:
    cwd = Path(os.getcwd())
    report = doctor_report(
        args.path, cwd=cwd, env=os.environ, home=_home(), python_bin=Path(sys.executable).parent
    )
    where = Path(os.path.realpath(args.path if args.path is not None else cwd))
    workspace, reason = _project_or_reason(where)
    rows = status_rows(
        HOSTS, workspace, reason, _launcher(), os.environ, sys.platform, cwd=where, known=_known()
    )
    report["hosts"] = host_section(rows)
    emit(report, as_json=wants_json(args.json), human=_human_doctor)
    return 0


# ---------------------------------------------------------------------------- parsers


def _scope_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--project",
        dest="target",
        action="store_const",
        const="project",
        help="the project's config file in the current directory (default where supported)",
    )
    group.add_argument(
        "--user",
        dest="target",
        action="store_const",
        const="user",
        help="your user config file (all projects; default where the host has no project file)",
    )


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `agent install|status|uninstall` and `doctor` to the `lwc` parser."""
    hosts = host_names()
    agent = sub.add_parser(
        "agent", parents=[common], help="register lwc with agent hosts",
        epilog=examples("lwc agent install claude-code", "lwc agent status"),
    )  # fmt: skip
    actions = agent.add_subparsers(dest="agent_command", metavar="ACTION")
    actions.required = True

    install = actions.add_parser(
        "install",
        parents=[common],
        help=f"add the `lwc` MCP server to a host ({hosts})",
        epilog=examples("lwc agent install cursor", "lwc agent install codex --user --dry-run"),
    )
    install.add_argument("host", metavar="HOST", help=hosts)
    _scope_flags(install)
    install.add_argument(
        "--dry-run", action="store_true", help="show the change, write nothing (default: write)"
    )
    install.add_argument(
        "--force",
        action="store_true",
        help="replace a different existing `lwc` entry (default: refuse)",
    )
    install.set_defaults(func=_install)

    uninstall = actions.add_parser(
        "uninstall",
        parents=[common],
        help="remove the `lwc` MCP server from a host",
        epilog=examples("lwc agent uninstall cursor"),
    )
    uninstall.add_argument("host", metavar="HOST", help=hosts)
    _scope_flags(uninstall)
    uninstall.add_argument(
        "--dry-run", action="store_true", help="show the change, write nothing (default: write)"
    )
    uninstall.set_defaults(func=_uninstall)

    status = actions.add_parser(
        "status", parents=[common], help="show where `lwc` is registered",
        epilog=examples("lwc agent status", "lwc agent status gemini"),
    )  # fmt: skip
    status.add_argument("host", metavar="HOST", nargs="?", help=f"one of {hosts} (default: all)")
    status.set_defaults(func=_status)

    doctor = sub.add_parser(
        "doctor",
        parents=[common],
        help="report what a host would see, and what to run next",
        epilog=examples("lwc doctor", "lwc doctor --path ~/src/project"),
    )
    doctor.add_argument(
        "--path", metavar="DIR", help="the workspace a host would bind (default: here)"
    )
    doctor.set_defaults(func=_doctor)
