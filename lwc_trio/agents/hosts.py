"""The agent hosts lwc can register with: where each keeps MCP servers and what entry it gets.

Formats and locations are each host's own documented ones; `docs/agents.md` gives the sources
and the decisions (which hosts get `--path`, which accept comments). Pure: paths are computed from
an environment mapping and a platform name, never from the process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from lwc_trio.agents.jsonc import COMMENTS, JSONC, STRICT, Dialect

__all__ = [
    "ENTRY_NAME",
    "HOSTS",
    "SCOPES",
    "Host",
    "desired_entry",
    "entry_matches",
    "find_host",
    "host_names",
    "server_args",
]

ENTRY_NAME = "lwc"
SCOPES = ("project", "user")


@attrs.frozen
class Host:
    """One agent host and the shape of its MCP configuration."""

    key: str  # what `lwc agent install KEY` takes
    name: str  # for people
    aliases: tuple[str, ...]
    fmt: str  # "json" | "toml"
    dialect: Dialect | None  # JSON flavour the host's own parser accepts
    container: str  # the object (or TOML table) holding server entries
    project_file: str | None  # relative to the project directory; None: user scope only
    workspace_var: str | None  # a variable the host expands to the open folder, if any
    entry_type: str | None  # "type" written into the entry, if the host wants one
    default_type: str | None  # transport the host assumes when an entry has no "type"
    default_scope: str = "project"  # what `install` writes without --project/--user

    @property
    def scopes(self) -> tuple[str, ...]:
        """The scopes this host reads servers from, default first."""
        if self.project_file is None:
            return ("user",)
        return (self.default_scope, *(scope for scope in SCOPES if scope != self.default_scope))

    def user_file(self, env: Mapping[str, str], platform: str) -> Path:
        """The user-scope config file (honouring the host's own override variables)."""
        home = Path(env.get("HOME") or "~")
        if self.key == "claude-code":
            # Claude Code keeps user-scope servers at the top level of ~/.claude.json, which
            # moves into $CLAUDE_CONFIG_DIR when that is set.
            override = env.get("CLAUDE_CONFIG_DIR")
            return Path(override) / ".claude.json" if override else home / ".claude.json"
        if self.key == "cursor":
            return home / ".cursor" / "mcp.json"
        if self.key == "vscode":
            # The default profile's user folder (Electron's appData + "Code/User").
            if platform == "darwin":
                base = home / "Library" / "Application Support"
            else:
                xdg = env.get("XDG_CONFIG_HOME", "")
                base = Path(xdg) if xdg.startswith("/") else home / ".config"
            return base / "Code" / "User" / "mcp.json"
        if self.key == "codex":
            override = env.get("CODEX_HOME")
            return (Path(override) if override else home / ".codex") / "config.toml"
        if self.key == "gemini":
            return home / ".gemini" / "settings.json"
        raise AssertionError(self.key)  # pragma: no cover - every host is listed above

    def config_file(
        self, scope: str, project: Path | None, env: Mapping[str, str], platform: str
    ) -> Path:
        """The file a `scope` install writes (`project` must be given for project scope)."""
        if scope == "project":
            assert self.project_file is not None and project is not None
            return project / self.project_file
        return self.user_file(env, platform)


HOSTS: tuple[Host, ...] = (
    Host(
        key="claude-code", name="Claude Code", aliases=("claude", "claudecode"), fmt="json",
        dialect=STRICT, container="mcpServers", project_file=".mcp.json", workspace_var=None,
        entry_type="stdio", default_type="stdio",
    ),
    Host(
        key="cursor", name="Cursor", aliases=(), fmt="json", dialect=JSONC,
        container="mcpServers", project_file=".cursor/mcp.json",
        workspace_var="${workspaceFolder}", entry_type=None, default_type="stdio",
    ),
    Host(
        key="vscode", name="VS Code", aliases=("code", "vs-code", "visual-studio-code"),
        fmt="json", dialect=JSONC, container="servers", project_file=".vscode/mcp.json",
        workspace_var="${workspaceFolder}", entry_type="stdio", default_type=None,
    ),
    Host(
        key="codex", name="Codex CLI", aliases=("codex-cli",), fmt="toml", dialect=None,
        container="mcp_servers", project_file=".codex/config.toml", workspace_var=None,
        entry_type=None, default_type=None, default_scope="user",
    ),
    Host(
        key="gemini", name="Gemini CLI", aliases=("gemini-cli",), fmt="json", dialect=COMMENTS,
        container="mcpServers", project_file=".gemini/settings.json", workspace_var=None,
        entry_type=None, default_type=None,
    ),
)  # fmt: skip


def host_names() -> str:
    """`claude-code, cursor, ...` for messages."""
    return ", ".join(host.key for host in HOSTS)


def find_host(name: str) -> Host | None:
    """The host called `name` (its key or an alias, case-insensitive), or None."""
    wanted = name.strip().lower()
    for host in HOSTS:
        if wanted == host.key or wanted in host.aliases:
            return host
    return None


def server_args(host: Host, scope: str, project: Path | None) -> list[str]:
    """`serve --mcp`, plus `--path` bound to the host's workspace variable when it has one, or
    to the absolute project directory for a project-scope install of a host without one."""
    args = ["serve", "--mcp"]
    if host.workspace_var is not None:
        args += ["--path", host.workspace_var]
    elif scope == "project":
        assert project is not None
        args += ["--path", str(project)]
    return args


def desired_entry(
    host: Host, scope: str, command: str, project: Path | None, *, prefix: Sequence[str] = ()
) -> dict[str, Any]:
    """The `lwc` server entry `lwc agent install` writes for this host and scope.

    `prefix` goes before `serve --mcp` (`-m lwc_trio` when `command` is a Python interpreter
    because no `lwc` script exists)."""
    entry: dict[str, Any] = {}
    if host.entry_type is not None:
        entry["type"] = host.entry_type
    entry["command"] = command
    entry["args"] = [*prefix, *server_args(host, scope, project)]
    return entry


def entry_matches(host: Host, existing: Any, desired: Mapping[str, Any]) -> bool:
    """True when `existing` already runs what `desired` runs.

    Keys we do not write (`env`, timeouts, `disabled`, `trust`...) are the user's and do not
    count; a missing `type` counts as the host's default transport.
    """
    if not isinstance(existing, dict):
        return False
    normalized = dict(existing)
    if host.default_type is not None:
        normalized.setdefault("type", host.default_type)
    return all(normalized.get(key) == value for key, value in desired.items())
