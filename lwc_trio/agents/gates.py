"""The hosts' own gates: what keeps a correct `lwc` entry from starting, and what clears it.

Each host decides by itself whether it starts a registered server: Gemini CLI only in a trusted
folder, Claude Code a project server only once the user approved it (and a same-named entry in
its local scope wins over ours), Codex reads a project `.codex/config.toml` only in a trusted
project, VS Code asks before it first starts a server. These functions read the hosts' own state
files (never write them) and describe every gate that is not cleared, with the exact command or
setting that clears it. The rules and where they come from are in `docs/agents.md`.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lwc_trio.agents import jsonc
from lwc_trio.agents.hosts import ENTRY_NAME, Host
from lwc_trio.exceptions import ConfigSyntaxError

__all__ = ["claude_local_entry", "host_gates", "project_key"]

Gate = dict[str, Any]


def _gate(name: str, blocking: bool, message: str, fix: str, **extra: Any) -> Gate:
    return {"gate": name, "blocking": blocking, "message": message, "fix": fix, **extra}


def _read_json(path: Path, dialect: jsonc.Dialect = jsonc.STRICT) -> Any:
    """The file's JSON value, or None when it is missing or unreadable or malformed (a status
    report shows what it can; the host itself reports its own broken files)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        return jsonc.parse(text, dialect).value
    except ConfigSyntaxError:
        return None


def _read_toml(path: Path) -> dict[str, Any] | None:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def project_key(directory: Path) -> Path:
    """The directory Claude Code and Codex key a project by: the enclosing git checkout's
    root (the nearest folder with a `.git`), else the directory itself."""
    for candidate in (directory, *directory.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return directory


# ---------------------------------------------------------------------------- Claude Code


def _claude_state(host: Host, env: Mapping[str, str], platform: str) -> tuple[Path, Any]:
    path = host.user_file(env, platform)
    value = _read_json(path)
    return path, value if isinstance(value, dict) else {}


def claude_local_entry(
    host: Host, directory: Path, env: Mapping[str, str], platform: str
) -> tuple[Path, Path, Any] | None:
    """Claude Code's local-scope `lwc` entry for `directory` (`projects[KEY].mcpServers.lwc`
    in `~/.claude.json`) as (file, key, entry), or None. Claude prefers it to ours."""
    path, state = _claude_state(host, env, platform)
    projects = state.get("projects")
    if not isinstance(projects, dict):
        return None
    for key in dict.fromkeys((project_key(directory), directory)):
        config = projects.get(str(key))
        servers = config.get("mcpServers") if isinstance(config, dict) else None
        if isinstance(servers, dict) and ENTRY_NAME in servers:
            return path, key, servers[ENTRY_NAME]
    return None


def _claude_trusted(state: dict[str, Any], directory: Path) -> bool:
    projects = state.get("projects")
    if not isinstance(projects, dict):
        return False
    for candidate in (project_key(directory), directory, *directory.parents):
        config = projects.get(str(candidate))
        if isinstance(config, dict) and config.get("hasTrustDialogAccepted") is True:
            return True
    return False


def _claude_settings(directory: Path, env: Mapping[str, str]) -> dict[str, Any]:
    override = env.get("CLAUDE_CONFIG_DIR")
    user_dir = Path(override) if override else Path(env.get("HOME") or "~") / ".claude"
    return {
        "user": _read_json(user_dir / "settings.json"),
        "project": _read_json(directory / ".claude" / "settings.json"),
        "local": _read_json(directory / ".claude" / "settings.local.json"),
    }


def _lists(settings: Any, key: str) -> bool:
    if not isinstance(settings, dict):
        return False
    names = settings.get(key)
    return isinstance(names, list) and ENTRY_NAME in names


_SETTINGS_FILES = {"project": "settings.json", "local": "settings.local.json"}


def _approves(settings: Any) -> bool:
    return _lists(settings, "enabledMcpjsonServers") or (
        isinstance(settings, dict) and settings.get("enableAllProjectMcpServers") is True
    )


def _local_settings_suspect(directory: Path) -> bool:
    """Claude's test for a settings.local.json that may not be the user's own (checked only
    by `lstat`; whether git tracks it is not checked here)."""
    claude = directory / ".claude"
    return (
        claude.is_symlink()
        or (claude / "settings.local.json").is_symlink()
        or os.path.lexists(claude / ".git")
    )


def _claude_gates(
    host: Host, scope: str, directory: Path, env: Mapping[str, str], platform: str
) -> list[Gate]:
    gates = []
    state_file, state = _claude_state(host, env, platform)
    local = claude_local_entry(host, directory, env, platform)
    if local is not None:
        _, key, entry = local
        gates.append(
            _gate(
                "claude_local_entry",
                True,
                f"Claude Code has its own local-scope `lwc` entry for {key} in {state_file} "
                f"(projects[...].mcpServers.lwc = {json.dumps(entry, ensure_ascii=False)}); "
                f"local scope wins, so Claude keeps using that one instead of this {scope} entry",
                f"claude mcp remove lwc -s local   (in {key})",
                entry=entry,
            )
        )
    if scope != "project":
        return gates
    key = project_key(directory)
    trusted = _claude_trusted(state, directory)
    settings = _claude_settings(directory, env)
    if any(_lists(value, "disabledMcpjsonServers") for value in settings.values()):
        gates.append(
            _gate(
                "claude_project_approval",
                True,
                "Claude Code was told not to use `lwc` from .mcp.json in this project "
                "(disabledMcpjsonServers)",
                f"claude mcp reset-project-choices   (in {directory}), then approve `lwc` when "
                "Claude asks",
                state="rejected",
            )
        )
        return gates
    # Until the workspace is trusted Claude ignores .claude/settings.json (it comes with the
    # checkout) and a settings.local.json that may have come with it (symlinked, inside a
    # .claude that is a git repository, or tracked by git); the user's own file always counts.
    sources = ["user"]
    if trusted:
        sources += ["project", "local"]
    elif not _local_settings_suspect(directory):
        sources.append("local")
    approved = any(_approves(settings[name]) for name in sources)
    if not trusted:
        ignored = [name for name in ("project", "local") if name not in sources]
        ignored = [name for name in ignored if _approves(settings[name])]
        note = ""
        if ignored:
            files = " and ".join(f".claude/{_SETTINGS_FILES[name]}" for name in ignored)
            note = f"; the approval of `lwc` in {files} is ignored until then"
        gates.append(
            _gate(
                "claude_workspace_trust",
                bool(ignored),
                f"Claude Code has not trusted {key} yet: it shows its trust dialog on the first "
                f"interactive start there{note}",
                f"run `claude` in {key} once and accept the trust dialog (or set "
                f'projects["{key}"].hasTrustDialogAccepted: true in {state_file})',
            )
        )
    if not approved:
        gates.append(
            _gate(
                "claude_project_approval",
                False,
                "Claude Code asks each user to approve `lwc` from .mcp.json the first time it "
                "starts in this project; until then `claude mcp list` shows it as Pending "
                "approval",
                'choose "Use this and all future MCP servers in this project" or "Use this MCP '
                'server" when asked, or add "lwc" to "enabledMcpjsonServers" in '
                f"{directory / '.claude' / 'settings.local.json'}",
                state="pending",
            )
        )
    return gates


# ---------------------------------------------------------------------------- Gemini CLI


def _gemini_trust(directory: Path, env: Mapping[str, str]) -> tuple[bool | None, Path]:
    """True/False from the longest matching rule of trustedFolders.json, None without one."""
    home = Path(env.get("HOME") or "~")
    override = env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    path = Path(override) if override else home / ".gemini" / "trustedFolders.json"
    rules = _read_json(path, jsonc.COMMENTS)
    if not isinstance(rules, dict):
        return None, path
    best, verdict = -1, None
    real = Path(os.path.realpath(directory))
    for rule, level in rules.items():
        if level not in ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST"):
            continue
        effective = os.path.dirname(rule) if level == "TRUST_PARENT" else rule
        if _within(real, Path(os.path.realpath(effective))) and len(rule) > best:
            best, verdict = len(rule), level != "DO_NOT_TRUST"
    return verdict, path


def _gemini_gates(host: Host, directory: Path, env: Mapping[str, str], platform: str) -> list[Gate]:
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return []
    settings = _read_json(host.user_file(env, platform), jsonc.COMMENTS)
    security = settings.get("security") if isinstance(settings, dict) else None
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(folder_trust, dict) and folder_trust.get("enabled") is False:
        return []
    trusted, rules_file = _gemini_trust(directory, env)
    if trusted:
        return []
    why = "is marked DO_NOT_TRUST" if trusted is False else "is not trusted yet"
    return [
        _gate(
            "gemini_folder_trust",
            True,
            f"Gemini CLI folder trust is on and {directory} {why}: there `lwc` shows as "
            "Disabled (user-scope servers too) and headless runs exit 55",
            f'run `gemini` in {directory} and choose "Trust folder" (or add '
            f'"{directory}": "TRUST_FOLDER" to {rules_file}); for headless runs set '
            "GEMINI_CLI_TRUST_WORKSPACE=true or pass --skip-trust",
            state="distrusted" if trusted is False else "untrusted",
        )
    ]


# ---------------------------------------------------------------------------- Codex CLI


def _codex_gates(host: Host, directory: Path, env: Mapping[str, str], platform: str) -> list[Gate]:
    user_file = host.user_file(env, platform)
    config = _read_toml(user_file) or {}
    projects = config.get("projects")
    key = project_key(directory)
    level = None
    if isinstance(projects, dict):
        for candidate in dict.fromkeys((key, directory)):
            entry = projects.get(str(candidate))
            if isinstance(entry, dict) and isinstance(entry.get("trust_level"), str):
                level = entry["trust_level"]
                break
    if level == "trusted":
        return []
    why = "is marked untrusted" if level == "untrusted" else "is not trusted yet"
    return [
        _gate(
            "codex_project_trust",
            True,
            f"Codex reads .codex/config.toml only in a trusted project, and {key} {why}",
            f'run `codex` in {key} and choose to trust it (or add `[projects."{key}"]` with '
            f'`trust_level = "trusted"` to {user_file})',
            state=level or "unknown",
        )
    ]


# ---------------------------------------------------------------------------- all hosts


def _session_gate(host: Host, cwd: Path, broad: str) -> Gate:
    return _gate(
        "session_directory",
        True,
        f"this {host.name} entry binds the directory a session starts in, and {cwd} cannot be a "
        f"workspace ({broad}): the server starts, but every lwc_explore call answers "
        "`workspace_too_broad`",
        f"start {host.name} in a project directory, or run `lwc agent install {host.key} "
        "--project` in the project",
    )


def host_gates(
    host: Host,
    scope: str,
    directory: Path | None,
    env: Mapping[str, str],
    platform: str,
    *,
    cwd: Path,
    broad: str | None = None,
) -> list[Gate]:
    """The gates `host` puts in front of an `lwc` entry in `scope` for a session started in
    `directory` (None: `cwd` cannot be a workspace, `broad` says why). Cleared ones are left
    out; `blocking` is false for a gate the host itself asks about."""
    gates: list[Gate] = []
    if directory is None:
        if scope == "user" and host.workspace_var is None and broad is not None:
            gates.append(_session_gate(host, cwd, broad))
        return gates
    if host.key == "claude-code":
        gates += _claude_gates(host, scope, directory, env, platform)
    elif host.key == "gemini":
        gates += _gemini_gates(host, directory, env, platform)
    elif host.key == "codex" and scope == "project":
        gates += _codex_gates(host, directory, env, platform)
    elif host.key == "vscode":
        gates.append(
            _gate(
                "vscode_trust",
                False,
                "VS Code asks you to trust `lwc` the first time it starts it, and starts MCP "
                "servers only in a trusted workspace",
                'choose "Trust" when VS Code asks (or run "MCP: List Servers", pick lwc, '
                '"Start Server"); trust the folder with "Workspaces: Manage Workspace Trust"',
            )
        )
    return gates
