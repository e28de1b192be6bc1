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
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lwc_trio.agents import (
    ENTRY_NAME,
    HOSTS,
    AgentError,
    Host,
    Plan,
    decode,
    desired_entry,
    doctor_report,
    find_host,
    host_names,
    inspect,
    plan_install,
    plan_uninstall,
    read_config,
    write_config,
)
from lwc_trio.agents.merge import CODEGRAPH_WARNING
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
        raise UsageError(f"unknown agent host {name!r}; choose one of: {host_names()}")
    return host


def _scope(args: argparse.Namespace, host: Host) -> str:
    scope = str(args.target or host.scopes[0])
    if scope not in host.scopes:
        where = host.user_file(os.environ, sys.platform)
        raise fail(
            "agent_scope_unsupported",
            f"{host.name} reads MCP servers from its user configuration ({where}) only; use --user",
            exit_code=2,
        )
    return scope


def _project_or_reason() -> tuple[Path | None, str | None]:
    cwd = os.path.realpath(os.getcwd())
    try:
        return validate_workspace(cwd, os.environ), None
    except PathRuleError as exc:
        return None, f"{cwd} cannot be a project directory ({exc.message})"


def _project() -> Path:
    project, reason = _project_or_reason()
    if project is None:
        raise fail(
            "workspace_too_broad",
            f"{reason}; run this in your project directory, or use --user",
            exit_code=2,
        )
    return project


def _command() -> tuple[str, bool]:
    """The `lwc` a host should run: the absolute path found on PATH, else plain `lwc`."""
    found = shutil.which("lwc")
    return (found, True) if found else ("lwc", False)


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


def _warnings(plan: Plan, path: Path, on_path: bool) -> list[str]:
    warnings = []
    if plan.codegraph:
        names = ", ".join(repr(name) for name in plan.codegraph)
        warnings.append(CODEGRAPH_WARNING.format(file=path, names=names))
    if not on_path:
        warnings.append(
            "`lwc` is not on PATH: the entry runs plain `lwc`, which works only if the host's "
            "PATH finds it (run `lwc doctor`)"
        )
    return warnings


def _notes(host: Host, scope: str, project: Path | None, status: str) -> list[str]:
    if status not in ("added", "replaced"):
        return []
    notes = []
    if scope == "project" and host.workspace_var is None:
        notes.append(
            f"the entry binds --path to {project}, so it is specific to this checkout on this "
            "machine"
        )
    if host.key == "claude-code" and scope == "project":
        notes.append("Claude Code asks each user to approve servers from .mcp.json on first use")
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


def _change_result(
    host: Host,
    scope: str,
    path: Path,
    plan: Plan,
    args: argparse.Namespace,
    original: bytes | None,
    text: str | None,
) -> dict[str, Any]:
    backup = None
    if plan.text is not None and not args.dry_run:
        backup = write_config(path, plan.text, original=original)
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
        result["diff"] = _diff(path, text, plan.text)
    return result


# ---------------------------------------------------------------------------- install


@_agent_errors
def _install(args: argparse.Namespace) -> int:
    host = _host(args.host)
    scope = _scope(args, host)
    project = _project() if scope == "project" else None
    path = host.config_file(scope, project, os.environ, sys.platform)
    command, on_path = _command()
    entry = desired_entry(host, scope, command, project)
    original = read_config(path)
    text = decode(original, path) if original is not None else None
    plan = plan_install(host, text, entry, force=args.force, label=str(path))
    result = _change_result(host, scope, path, plan, args, original, text)
    result["entry"] = entry
    result["warnings"] = _warnings(plan, path, on_path)
    result["notes"] = _notes(host, scope, project, plan.status)
    emit(result, as_json=wants_json(args.json), human=_human_change)
    return 0


# ---------------------------------------------------------------------------- uninstall


@_agent_errors
def _uninstall(args: argparse.Namespace) -> int:
    host = _host(args.host)
    scope = _scope(args, host)
    project = _project() if scope == "project" else None
    path = host.config_file(scope, project, os.environ, sys.platform)
    original = read_config(path)
    text = decode(original, path) if original is not None else None
    plan = plan_uninstall(host, text, label=str(path))
    result = _change_result(host, scope, path, plan, args, original, text)
    result["removed"] = plan.existing
    result["warnings"] = []
    emit(result, as_json=wants_json(args.json), human=_human_change)
    return 0


# ---------------------------------------------------------------------------- status


def _status_row(
    host: Host, scope: str, project: Path | None, reason: str | None, command: str
) -> dict[str, Any]:
    row: dict[str, Any] = {"host": host.key, "name": host.name, "scope": scope}
    if scope == "project" and project is None:
        return {**row, "file": None, "state": "not_applicable", "registered": False,
                "entry": None, "codegraph": [], "message": reason, "nextAction": None}  # fmt: skip
    path = host.config_file(scope, project, os.environ, sys.platform)
    row["file"] = str(path)
    flag = f"--{scope}"
    install = f"lwc agent install {host.key} {flag}"
    codegraph: tuple[str, ...] = ()
    existing: Any = None
    message: str | None = None
    try:
        original = read_config(path)
        if original is None:
            state = "no_config"
        else:
            entry = desired_entry(host, scope, command, project)
            found = inspect(host, decode(original, path), entry, label=str(path))
            state, existing, codegraph = found.state, found.existing, found.codegraph
    except AgentError as exc:
        state, message = "invalid", exc.message
    next_action = {
        "no_config": install,
        "not_registered": install,
        "outdated": install + " --force",
    }.get(state)
    return {
        **row,
        "state": state,
        "registered": state in ("registered", "outdated"),
        "entry": existing,
        "codegraph": list(codegraph),
        "message": message,
        "nextAction": next_action,
    }


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
        if row["nextAction"] and row["state"] == "outdated":
            lines.append(f"{'':<22}→ {row['nextAction']}")
    return "\n".join(lines)


@_agent_errors
def _status(args: argparse.Namespace) -> int:
    hosts = (_host(args.host),) if args.host else HOSTS
    project, reason = _project_or_reason()
    command, _ = _command()
    rows = [
        _status_row(host, scope, project, reason, command)
        for host in hosts
        for scope in host.scopes
    ]
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
    ready = report["ready"]
    lines += [
        "",
        f"memory: {'ready' if ready['memory'] else 'unavailable'} · "
        f"code: {'ready' if ready['code'] else 'unavailable'}",
    ]
    return "\n".join(lines)


def _doctor(args: argparse.Namespace) -> int:
    report = doctor_report(
        args.path,
        cwd=Path(os.getcwd()),
        env=os.environ,
        home=_home(),
        python_bin=Path(sys.executable).parent,
    )
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
        help="your user config file (all projects)",
    )


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `agent install|status|uninstall` and `doctor` to the `lwc` parser."""
    hosts = host_names()
    agent = sub.add_parser("agent", parents=[common], help="register lwc with agent hosts")
    actions = agent.add_subparsers(dest="agent_command", metavar="ACTION")
    actions.required = True

    install = actions.add_parser(
        "install", parents=[common], help=f"add the `lwc` MCP server to a host ({hosts})"
    )
    install.add_argument("host", metavar="HOST", help=hosts)
    _scope_flags(install)
    install.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
    install.add_argument(
        "--force", action="store_true", help="replace a different existing `lwc` entry"
    )
    install.set_defaults(func=_install)

    uninstall = actions.add_parser(
        "uninstall", parents=[common], help="remove the `lwc` MCP server from a host"
    )
    uninstall.add_argument("host", metavar="HOST", help=hosts)
    _scope_flags(uninstall)
    uninstall.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
    uninstall.set_defaults(func=_uninstall)

    status = actions.add_parser("status", parents=[common], help="show where `lwc` is registered")
    status.add_argument("host", metavar="HOST", nargs="?", help=f"one of {hosts} (default: all)")
    status.set_defaults(func=_status)

    doctor = sub.add_parser(
        "doctor", parents=[common], help="report what a host would see, and what to run next"
    )
    doctor.add_argument(
        "--path", metavar="DIR", help="the workspace a host would bind (default: here)"
    )
    doctor.set_defaults(func=_doctor)
