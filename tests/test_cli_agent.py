"""`lwc agent install|status|uninstall` against real files in a temporary HOME and project."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_home import FakeHome

from lwc_trio.cli.main import main


class Env(FakeHome):
    """A temporary HOME, a project directory (the cwd) and a fake `lwc` on PATH."""

    def run(
        self, *args: str, cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run `lwc ARGS` as a subprocess (stdout is a pipe, so output is JSON)."""
        return self.spawn(args, cwd, env)

    def ok(self, *args: str, **env: str) -> dict[str, Any]:
        """Run and return the stdout JSON of a successful command."""
        done = self.spawn(args, None, env)
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    def error(self, code: int, *args: str, **env: str) -> dict[str, str]:
        """Run a failing command and return its stderr error object."""
        done = self.spawn(args, None, env)
        assert done.returncode == code, (done.stdout, done.stderr)
        assert done.stdout == ""
        error: dict[str, str] = json.loads(done.stderr)["error"]
        return error


@pytest.fixture
def env(tmp_path: Path) -> Env:
    """A fresh HOME, project and PATH."""
    return Env(tmp_path.resolve())


def backups(path: Path) -> list[Path]:
    """Backups lwc made of `path` (under the fake HOME's `~/.lwc/backups`, never beside it)."""
    assert not list(path.parent.glob(path.name + ".lwc-backup-*"))
    home = next(p for p in path.parents if (p / "home").is_dir()) / "home"
    real = Path(os.path.realpath(path))
    return sorted((home / ".lwc" / "backups").glob("*/" + str(real).lstrip("/")))


def install_twice(env: Env, path: Path, *args: str) -> dict[str, Any]:
    """Install, then check a second run reports unchanged and changes no byte and no backup."""
    first = env.ok("agent", "install", *args)
    assert first["status"] in ("added", "replaced")
    assert first["written"] is True
    after = env.snapshot()
    second = env.ok("agent", "install", *args)
    assert (second["status"], second["written"], second["backup"]) == ("unchanged", False, None)
    assert env.snapshot() == after
    return first


# ---------------------------------------------------------------------------- per host


def test_claude_project_merges_into_mcp_json(env: Env) -> None:
    """Claude Code: the entry joins .mcp.json's servers with an absolute --path; CodeGraph stays."""
    path = env.project / ".mcp.json"
    original = (
        "{\n"
        '  "mcpServers": {\n'
        '    "github": {"command": "npx", "args": ["-y", "@mcp/github"], "env": {"T": "${T}"}},\n'
        '    "codegraph": {\n'
        '      "command": "npx",\n'
        '      "args": ["-y", "@colbymchenry/codegraph", "serve", "--mcp"]\n'
        "    }\n"
        "  },\n"
        '  "x-team": {"owner": "infra", "ratio": 1.50}\n'
        "}\n"
    )
    path.write_text(original)
    result = install_twice(env, path, "claude-code")
    assert path.read_text() == (
        "{\n"
        '  "mcpServers": {\n'
        '    "github": {"command": "npx", "args": ["-y", "@mcp/github"], "env": {"T": "${T}"}},\n'
        '    "codegraph": {\n'
        '      "command": "npx",\n'
        '      "args": ["-y", "@colbymchenry/codegraph", "serve", "--mcp"]\n'
        "    },\n"
        '    "lwc": {\n'
        '      "type": "stdio",\n'
        f'      "command": "{env.lwc}",\n'
        f'      "args": ["serve", "--mcp", "--path", "{env.project}"]\n'
        "    }\n"
        "  },\n"
        '  "x-team": {"owner": "infra", "ratio": 1.50}\n'
        "}\n"
    )
    assert result["file"] == str(path)
    assert result["scope"] == "project"
    [backup] = backups(path)
    assert result["backup"] == str(backup)
    assert backup.read_text() == original
    [warning] = result["warnings"]
    assert "'codegraph'" in warning
    assert "lwc already includes CodeGraph" in warning
    assert any("approve" in note for note in result["notes"])


def test_claude_user_scope_keeps_claude_json_state(env: Env) -> None:
    """Claude Code --user: a top-level mcpServers is added to ~/.claude.json, nothing else moves."""
    path = env.home / ".claude.json"
    original = (
        '{\n  "numStartups": 12,\n  "projects": {\n    "/w": {\n      "mcpServers": {},\n'
        '      "allowedTools": []\n    }\n  },\n  "userID": "abc"\n}'
    )
    path.write_text(original)
    path.chmod(0o600)
    install_twice(env, path, "claude", "--user")
    assert path.read_text() == (
        '{\n  "numStartups": 12,\n  "projects": {\n    "/w": {\n      "mcpServers": {},\n'
        '      "allowedTools": []\n    }\n  },\n  "userID": "abc",\n  "mcpServers": {\n'
        f'    "lwc": {{\n      "type": "stdio",\n      "command": "{env.lwc}",\n'
        '      "args": ["serve", "--mcp"]\n    }\n  }\n}'
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_claude_config_dir_override(env: Env) -> None:
    """With CLAUDE_CONFIG_DIR set, the user file is $CLAUDE_CONFIG_DIR/.claude.json."""
    result = env.ok("agent", "install", "claude", "--user", CLAUDE_CONFIG_DIR=str(env.home / "alt"))
    assert result["file"] == str(env.home / "alt" / ".claude.json")
    assert (env.home / "alt" / ".claude.json").exists()
    assert not (env.home / ".claude.json").exists()


def cursor_entry(command: str) -> str:
    """The `lwc` entry Cursor's mcp.json gets, last in `mcpServers`, and the file's end."""
    return (
        '    "lwc": {\n'
        f'      "command": "{command}",\n'
        '      "args": ["serve", "--mcp", "--path", "${workspaceFolder}"]\n'
        "    }\n  }\n}\n"
    )


def test_cursor_project_keeps_comments(env: Env) -> None:
    """Cursor: comments and other servers in .cursor/mcp.json survive; --path ${workspaceFolder}."""
    path = env.project / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(
        '{\n  // shared with the team\n  "mcpServers": {\n    "db": {"url": "http://localhost:9"}'
        " // local only\n  }\n}\n"
    )
    install_twice(env, path, "cursor")
    assert path.read_text() == (
        '{\n  // shared with the team\n  "mcpServers": {\n    "db": {"url": "http://localhost:9"},'
        " // local only\n" + cursor_entry(str(env.lwc))
    )


def test_cursor_user_creates_a_new_file_without_backup(env: Env) -> None:
    """Cursor --user: a missing ~/.cursor/mcp.json is created, with no backup to keep."""
    path = env.home / ".cursor" / "mcp.json"
    result = install_twice(env, path, "cursor", "--user")
    assert result["backup"] is None
    assert backups(path) == []
    assert path.read_text() == '{\n  "mcpServers": {\n' + cursor_entry(str(env.lwc))


def test_vscode_project_jsonc_with_inputs_and_trailing_commas(env: Env) -> None:
    """VS Code: `servers` with type stdio; inputs, comments and trailing commas are kept."""
    path = env.project / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text(
        "{\n"
        '\t"inputs": [{"type": "promptString", "id": "key", "password": true},],\n'
        "\t/* servers */\n"
        '\t"servers": {\n'
        '\t\t"fs": {"type": "stdio", "command": "npx", "args": ["fs"]},\n'
        "\t},\n"
        "}\n"
    )
    install_twice(env, path, "vscode")
    assert path.read_text() == (
        "{\n"
        '\t"inputs": [{"type": "promptString", "id": "key", "password": true},],\n'
        "\t/* servers */\n"
        '\t"servers": {\n'
        '\t\t"fs": {"type": "stdio", "command": "npx", "args": ["fs"]},\n'
        '\t\t"lwc": {\n'
        '\t\t\t"type": "stdio",\n'
        f'\t\t\t"command": "{env.lwc}",\n'
        '\t\t\t"args": ["serve", "--mcp", "--path", "${workspaceFolder}"]\n'
        "\t\t},\n"
        "\t},\n"
        "}\n"
    )


@pytest.mark.skipif(sys.platform == "darwin", reason="Linux location of the VS Code user folder")
def test_vscode_user_file_location(env: Env) -> None:
    """VS Code --user writes the default profile's mcp.json (XDG_CONFIG_HOME honoured)."""
    result = env.ok("agent", "install", "code", "--user")
    assert result["file"] == str(env.home / ".config" / "Code" / "User" / "mcp.json")
    xdg = env.root / "xdg"
    result = env.ok("agent", "install", "vscode", "--user", XDG_CONFIG_HOME=str(xdg))
    assert result["file"] == str(xdg / "Code" / "User" / "mcp.json")


def test_codex_appends_a_table_and_keeps_the_rest(env: Env) -> None:
    """Codex: `[mcp_servers.lwc]` is appended to ~/.codex/config.toml; other tables untouched."""
    path = env.home / ".codex" / "config.toml"
    path.parent.mkdir()
    original = (
        'model = "gpt-5"  # default model\n'
        "\n"
        "[mcp_servers.docs]\n"
        'command = "npx"\n'
        'args = ["-y", "docs-mcp"]\n'
        "\n"
        "[mcp_servers.docs.env]\n"
        'TOKEN = "x"\n'
    )
    path.write_text(original)
    result = install_twice(env, path, "codex")
    assert result["scope"] == "user"
    assert path.read_text() == original + (
        f'\n[mcp_servers.lwc]\ncommand = "{env.lwc}"\nargs = ["serve", "--mcp"]\n'
    )


def test_codex_force_replaces_our_tables_in_place(env: Env) -> None:
    """Codex --force: a stale `[mcp_servers.lwc]` is replaced where it stood, keeping the
    user's `env` sub-table (issue 23: --force dropped it)."""
    path = env.home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(
        '[mcp_servers.lwc]\ncommand = "/old/lwc"\nargs = ["serve"]\n\n'
        '[mcp_servers.lwc.env]\nA = "1"\n\n'
        '# keep\n[profiles.fast]\nmodel = "o4"\n'
    )
    error = env.error(1, "agent", "install", "codex")
    assert error["code"] == "agent_entry_conflict"
    assert str(path) in error["message"]
    result = env.ok("agent", "install", "codex", "--force")
    assert result["status"] == "replaced"
    assert path.read_text() == (
        f'[mcp_servers.lwc]\ncommand = "{env.lwc}"\nargs = ["serve", "--mcp"]\nenv = {{A = "1"}}\n\n'
        '# keep\n[profiles.fast]\nmodel = "o4"\n'
    )
    assert "kept the existing entry's own keys: env" in result["notes"]


def test_codex_project_scope_writes_codex_config_toml(env: Env) -> None:
    """`install codex --project` writes `.codex/config.toml` (read by Codex in a trusted
    project) with an absolute --path, and says the project must be trusted."""
    path = env.project / ".codex" / "config.toml"
    result = install_twice(env, path, "codex", "--project")
    assert result["scope"] == "project"
    assert result["file"] == str(path)
    assert path.read_text() == (
        f'[mcp_servers.lwc]\ncommand = "{env.lwc}"\n'
        f'args = ["serve", "--mcp", "--path", "{env.project}"]\n'
    )
    [gate] = result["gates"]
    assert gate["gate"] == "codex_project_trust"
    assert gate["blocking"] is True
    assert f'[projects."{env.project}"]' in gate["fix"]
    assert any("trusted project" in note for note in result["notes"])
    # Without a flag Codex still writes its user file, which every Codex version reads.
    assert env.ok("agent", "install", "codex")["scope"] == "user"


def test_codex_inline_entry_is_refused_not_rewritten(env: Env) -> None:
    """An inline `mcp_servers = {...}` cannot be edited in place: refused, file untouched."""
    path = env.home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('mcp_servers = { lwc = { command = "old" } }\n')
    before = env.snapshot()
    error = env.error(1, "agent", "install", "codex", "--force")
    assert error["code"] == "agent_config_unsupported"
    assert str(path) in error["message"]
    assert env.snapshot() == before


def test_gemini_project_settings_keep_other_settings(env: Env) -> None:
    """Gemini: .gemini/settings.json keeps its settings and comments; --path is absolute."""
    path = env.project / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text('{\n  // mine\n  "theme": "GitHub",\n  "mcpServers": {}\n}\n')
    install_twice(env, path, "gemini-cli")
    assert path.read_text() == (
        '{\n  // mine\n  "theme": "GitHub",\n  "mcpServers": {\n    "lwc": {\n'
        f'      "command": "{env.lwc}",\n'
        f'      "args": ["serve", "--mcp", "--path", "{env.project}"]\n'
        "    }\n  }\n}\n"
    )


# ---------------------------------------------------------------------------- safety


@pytest.mark.parametrize(
    ("host", "relative", "content", "needle"),
    [
        ("claude-code", ".mcp.json", '{"mcpServers": {}', "line 1 column 18"),
        ("claude-code", ".mcp.json", '{"mcpServers": {} // c\n}', "comments are not allowed"),
        ("cursor", ".cursor/mcp.json", '{"mcpServers": []}', '"mcpServers" must be an object'),
        ("vscode", ".vscode/mcp.json", '{"servers": {"a": 1 "b": 2}}', "Expecting ','"),
        ("gemini", ".gemini/settings.json", '{"theme": "x",}', "trailing commas are not allowed"),
        ("gemini", ".gemini/settings.json", "[]", "the top level must be a JSON object"),
    ],
)
def test_malformed_files_are_reported_and_never_rewritten(
    env: Env, host: str, relative: str, content: str, needle: str
) -> None:
    """Exit 1 with a JSON error naming the file and the parse problem; no byte changes."""
    path = env.project / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    before = env.snapshot()
    for args in (("install", host, "--force"), ("uninstall", host)):
        error = env.error(1, "agent", *args)
        assert error["code"] == "agent_config_invalid"
        assert error["message"].startswith(f"{path} is not a valid config file")
        assert needle in error["message"]
    assert env.snapshot() == before


def test_malformed_codex_toml_is_reported(env: Env) -> None:
    """A broken config.toml is reported with tomllib's position and left alone."""
    path = env.home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('[mcp_servers.lwc\ncommand = "x"\n')
    before = env.snapshot()
    error = env.error(1, "agent", "install", "codex")
    assert error["code"] == "agent_config_invalid"
    assert "line 1" in error["message"]
    assert env.snapshot() == before


def test_conflicting_entry_needs_force_and_force_keeps_a_backup(env: Env) -> None:
    """A different `lwc` entry is refused without --force; --force replaces it with a backup."""
    path = env.project / ".mcp.json"
    original = (
        '{\n  "mcpServers": {\n    "lwc": {"command": "uvx", "args": ["lwc-other"]}\n  }\n}\n'
    )
    path.write_text(original)
    before = env.snapshot()
    error = env.error(1, "agent", "install", "claude-code")
    assert error["code"] == "agent_entry_conflict"
    assert "--force" in error["message"]
    assert env.snapshot() == before
    result = env.ok("agent", "install", "claude-code", "--force")
    assert result["status"] == "replaced"
    [backup] = backups(path)
    assert backup.read_text() == original
    assert json.loads(path.read_text())["mcpServers"]["lwc"]["command"] == str(env.lwc)


@pytest.mark.parametrize(
    ("host", "relative"),
    [
        ("claude-code", ".mcp.json"),
        ("cursor", ".cursor/mcp.json"),
        ("vscode", ".vscode/mcp.json"),
        ("gemini", ".gemini/settings.json"),
    ],
)
def test_dry_run_writes_nothing(env: Env, host: str, relative: str) -> None:
    """--dry-run prints the would-be diff, creates no file or folder and changes no byte."""
    before = env.snapshot()
    result = env.ok("agent", "install", host, "--dry-run")
    assert (result["status"], result["written"], result["dryRun"]) == ("added", False, True)
    assert result["diff"].startswith(f"--- /dev/null\n+++ {env.project / relative}\n")
    assert '+      "command": ' in result["diff"]
    assert env.snapshot() == before
    (env.project / relative).parent.mkdir(parents=True, exist_ok=True)
    (env.project / relative).write_text('{"other": true}\n')
    before = env.snapshot()
    result = env.ok("agent", "install", host, "--dry-run")
    assert result["diff"].splitlines()[:2] == [
        f"--- {env.project / relative}",
        f"+++ {env.project / relative}",
    ]
    assert env.snapshot() == before


def test_uninstall_dry_run_writes_nothing(env: Env) -> None:
    """`uninstall --dry-run` shows the removal and leaves the file as it is."""
    env.ok("agent", "install", "codex")
    before = env.snapshot()
    result = env.ok("agent", "uninstall", "codex", "--dry-run")
    assert (result["status"], result["written"]) == ("removed", False)
    assert "-[mcp_servers.lwc]" in result["diff"]
    assert env.snapshot() == before


# A table on purpose: per host, its scope flag, where its file is, and a file holding another
# server that uninstall must give back byte for byte.
ORIGINALS: dict[str, tuple[str, Callable[[Env], Path], str]] = {
    "claude-code": (
        "--user",
        lambda e: e.home / ".claude.json",
        '{\n  "mcpServers": {\n    "a": {"command": "a"}\n  },\n  "tipsHistory": {}\n}\n',
    ),
    "cursor": (
        "--project",
        lambda e: e.project / ".cursor" / "mcp.json",
        '{\n  "mcpServers": {\n    "a": {"command": "a"} // note\n  }\n}\n',
    ),
    "vscode": (
        "--project",
        lambda e: e.project / ".vscode" / "mcp.json",
        '{\n  "servers": {\n    "a": {"type": "stdio", "command": "a"},\n  },\n  "inputs": []\n}\n',
    ),
    "codex": (
        "--user",
        lambda e: e.home / ".codex" / "config.toml",
        '[mcp_servers.a]\ncommand = "a"\n',
    ),
    "gemini": (
        "--user",
        lambda e: e.home / ".gemini" / "settings.json",
        '{\n  "mcpServers": {\n    "a": {"command": "a"}\n  },\n  "theme": "x"\n}\n',
    ),
}


@pytest.mark.parametrize("host", sorted(ORIGINALS))
def test_uninstall_removes_only_our_entry(env: Env, host: str) -> None:
    """Install then uninstall gives back the original bytes; other servers stay registered."""
    flag, locate, original = ORIGINALS[host]
    path = locate(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(original)
    env.ok("agent", "install", host, flag)
    result = env.ok("agent", "uninstall", host, flag)
    assert result["status"] == "removed"
    assert result["written"] is True
    assert result["removed"]["command"] == str(env.lwc)
    assert path.read_text() == original
    assert len(backups(path)) == 2  # one per change
    after = env.snapshot()
    again = env.ok("agent", "uninstall", host, flag)
    assert (again["status"], again["written"]) == ("absent", False)
    assert env.snapshot() == after


def test_uninstall_without_a_file_creates_nothing(env: Env) -> None:
    """Removing from a host that has no config file is a no-op."""
    before = env.snapshot()
    assert env.ok("agent", "uninstall", "cursor", "--user")["status"] == "absent"
    assert env.snapshot() == before


# ---------------------------------------------------------------------------- environment


VENV_LWC = Path(sys.executable).parent / "lwc"


@pytest.mark.skipif(not VENV_LWC.is_file(), reason="this interpreter has no lwc script")
def test_installer_outside_path_registers_its_own_absolute_path(env: Env) -> None:
    """Issue 15 #1: `.venv/bin/lwc agent install` with the venv not on PATH registers that
    absolute `lwc` (a bare `lwc` made Claude show `Failed to connect`), and says why."""
    if shutil.which("lwc", path="/usr/bin:/bin"):
        pytest.skip("an lwc is installed system-wide")
    done = subprocess.run(
        [str(VENV_LWC), "agent", "install", "claude-code", "--user"],
        cwd=env.project,
        env={**env.vars, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["entry"]["command"] == str(VENV_LWC)
    assert json.loads((env.home / ".claude.json").read_text())["mcpServers"]["lwc"] == {
        "type": "stdio",
        "command": str(VENV_LWC),
        "args": ["serve", "--mcp"],
    }
    assert any("not on PATH" in warning for warning in result["warnings"])
    status = env.ok("agent", "status", "claude-code", PATH="/usr/bin:/bin")
    [user] = [row for row in status["configs"] if row["scope"] == "user"]
    assert user["state"] == "registered"
    assert user["command"]["runs"] is True


def test_bare_or_missing_commands_are_reported_broken(env: Env) -> None:
    """Issue 15 #1: status runs the registered command; a bare `lwc` the host cannot find, a
    path that no longer exists or a program that is not lwc is `broken`, not `registered`."""
    (env.root / "other").write_text("#!/bin/sh\necho something else\n")
    (env.root / "other").chmod(0o755)
    cases = {
        "lwc": "not on PATH",
        str(env.root / "gone" / "lwc"): "does not exist",
        str(env.root / "other"): "is not lwc",
    }
    for command, problem in cases.items():
        entry = {"type": "stdio", "command": command, "args": ["serve", "--mcp"]}
        (env.home / ".claude.json").write_text(json.dumps({"mcpServers": {"lwc": entry}}))
        status = env.ok("agent", "status", "claude", PATH="/usr/bin:/bin")
        [user] = [row for row in status["configs"] if row["scope"] == "user"]
        assert (user["state"], user["registered"]) == ("broken", True), command
        assert problem in user["command"]["problem"]
        assert problem in user["message"]
        assert user["nextAction"] == "lwc agent install claude-code --user --force"


def test_project_install_from_home_is_refused(env: Env) -> None:
    """A project install from $HOME would bind the home folder: exit 2, nothing written."""
    before = env.snapshot()
    done = env.run("agent", "install", "cursor", cwd=env.home)
    assert done.returncode == 2
    assert json.loads(done.stderr)["error"]["code"] == "workspace_too_broad"
    assert env.snapshot() == before


def test_unknown_host_and_conflicting_flags_are_usage_errors(env: Env) -> None:
    """A host lwc does not know, or --project with --user, exits 2."""
    assert (
        "claude-code, cursor, vscode, codex, gemini"
        in env.error(2, "agent", "install", "vim")["message"]
    )
    env.error(2, "agent", "install", "cursor", "--project", "--user")


def test_symlinked_user_config_keeps_its_link(env: Env) -> None:
    """A dotfile-managed ~/.gemini/settings.json stays a link to the updated file."""
    real = env.root / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text('{"theme": "x"}\n')
    link = env.home / ".gemini" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    env.ok("agent", "install", "gemini", "--user")
    assert link.is_symlink()
    assert json.loads(real.read_text())["mcpServers"]["lwc"]["args"] == ["serve", "--mcp"]


# ---------------------------------------------------------------------------- status


def test_status_reports_each_host_and_scope(env: Env) -> None:
    """Status lists every host and scope with its file and state, and changes nothing."""
    env.ok("agent", "install", "vscode")
    env.ok("agent", "install", "codex")
    (env.home / ".cursor").mkdir()
    (env.home / ".cursor" / "mcp.json").write_text(
        json.dumps({"mcpServers": {"lwc": {"command": str(env.lwc), "args": ["serve"]}}})
    )
    (env.home / ".gemini").mkdir()
    (env.home / ".gemini" / "settings.json").write_text("{oops")
    (env.project / ".mcp.json").write_text('{"mcpServers": {"codegraph": {"command": "x"}}}')
    before = env.snapshot()
    result = env.ok("agent", "status")
    assert env.snapshot() == before
    states = {(r["host"], r["scope"]): r["state"] for r in result["configs"]}
    assert states == {
        ("claude-code", "project"): "not_registered",
        ("claude-code", "user"): "no_config",
        ("cursor", "project"): "no_config",
        ("cursor", "user"): "outdated",
        ("vscode", "project"): "registered",
        ("vscode", "user"): "no_config",
        ("codex", "user"): "registered",
        ("codex", "project"): "no_config",
        ("gemini", "project"): "no_config",
        ("gemini", "user"): "invalid",
    }
    assert result["registered"] == ["cursor/user", "vscode/project", "codex/user"]
    rows = {(r["host"], r["scope"]): r for r in result["configs"]}
    assert rows[("claude-code", "project")]["codegraph"] == ["codegraph"]
    assert (
        rows[("claude-code", "project")]["nextAction"] == "lwc agent install claude-code --project"
    )
    assert rows[("cursor", "user")]["nextAction"] == "lwc agent install cursor --user --force"
    assert rows[("gemini", "user")]["message"].startswith(
        f"{env.home / '.gemini' / 'settings.json'} is not a valid config file"
    )
    assert rows[("vscode", "project")]["file"] == str(env.project / ".vscode" / "mcp.json")
    one = env.ok("agent", "status", "codex")
    assert [(r["scope"], r["state"]) for r in one["configs"]] == [
        ("user", "registered"),
        ("project", "no_config"),
    ]


def test_status_from_home_skips_project_scope(env: Env) -> None:
    """From $HOME there is no project: project rows say so instead of reading user files."""
    done = env.run("agent", "status", "cursor", cwd=env.home)
    assert done.returncode == 0
    rows = json.loads(done.stdout)["configs"]
    assert [(r["scope"], r["state"]) for r in rows] == [
        ("project", "not_applicable"),
        ("user", "no_config"),
    ]


def test_human_output_on_a_terminal(
    env: Env, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a terminal, install and status print short readable lines instead of JSON."""
    for name, value in env.vars.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(env.project)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["agent", "install", "cursor"]) == 0
    out = capsys.readouterr().out
    assert out == (
        f"Cursor (project): added `lwc` to {env.project / '.cursor' / 'mcp.json'}\n"
        f"  note: the entry runs {env.lwc}, so it is specific to this machine; a teammate runs "
        "`lwc agent install cursor --project --force`, which rewrites only the command (or "
        "uses --user)\n"
    )
    assert main(["agent", "status", "cursor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "Cursor",
        "project",
        "registered",
        str(env.project / ".cursor" / "mcp.json"),
    ]


# ---------------------------------------------------------------------------- host gates


def gates_of(result: dict[str, Any], host: str, scope: str) -> dict[str, dict[str, Any]]:
    """The gates of one status row, by name."""
    [row] = [r for r in result["configs"] if (r["host"], r["scope"]) == (host, scope)]
    return {gate["gate"]: gate for gate in row["gates"]}


def test_gemini_folder_trust_is_reported_with_its_fix(env: Env) -> None:
    """Issue 15 #2: Gemini CLI's folder trust (on by default) disables `lwc` in an untrusted
    folder, user scope too; install, status and doctor say so and how to clear it."""
    result = env.ok("agent", "install", "gemini")
    [gate] = result["gates"]
    assert (gate["gate"], gate["blocking"], gate["state"]) == (
        "gemini_folder_trust",
        True,
        "untrusted",
    )
    assert "Disabled" in gate["message"]
    assert "exit 55" in gate["message"]
    rules = env.home / ".gemini" / "trustedFolders.json"
    assert f'"{env.project}": "TRUST_FOLDER"' in gate["fix"]
    assert str(rules) in gate["fix"]
    assert "GEMINI_CLI_TRUST_WORKSPACE=true" in gate["fix"]
    assert any("Trust folder" in note for note in result["notes"])
    env.ok("agent", "install", "gemini", "--user")
    status = env.ok("agent", "status", "gemini")
    for scope in ("project", "user"):
        assert "gemini_folder_trust" in gates_of(status, "gemini", scope)
    doctor = env.ok("doctor")
    assert {(h["host"], h["scope"]) for h in doctor["hosts"]} == {
        ("gemini", "project"),
        ("gemini", "user"),
    }
    assert all(h["gates"][0]["gate"] == "gemini_folder_trust" for h in doctor["hosts"])
    # Trusting the parent (TRUST_PARENT on a sibling's path) clears it; a longer
    # DO_NOT_TRUST rule for the project itself wins again.
    rules.write_text(json.dumps({str(env.project.parent / "x"): "TRUST_PARENT"}))
    assert gates_of(env.ok("agent", "status", "gemini"), "gemini", "project") == {}
    rules.write_text(
        json.dumps({str(env.project.parent / "x"): "TRUST_PARENT",
                    str(env.project): "DO_NOT_TRUST"})
    )  # fmt: skip
    gate = gates_of(env.ok("agent", "status", "gemini"), "gemini", "project")["gemini_folder_trust"]
    assert gate["state"] == "distrusted"
    rules.unlink()
    settings = env.home / ".gemini" / "settings.json"
    value = json.loads(settings.read_text())
    value["security"] = {"folderTrust": {"enabled": False}}
    settings.write_text(json.dumps(value))
    assert gates_of(env.ok("agent", "status", "gemini"), "gemini", "user") == {}


def test_claude_local_scope_entry_is_seen_and_named(env: Env) -> None:
    """Issue 15 #3: an `lwc` in Claude Code's local scope (`claude mcp add`'s default, kept in
    projects[<project>].mcpServers of ~/.claude.json) wins over ours: status lists it and
    install warns with the command that removes it."""
    state = {
        "numStartups": 3,
        "projects": {str(env.project): {"mcpServers": {"lwc": {"type": "stdio",
                                                               "command": str(env.lwc),
                                                               "args": ["serve"]}}}},
    }  # fmt: skip
    (env.home / ".claude.json").write_text(json.dumps(state))
    status = env.ok("agent", "status", "claude-code")
    [local] = [row for row in status["configs"] if row["scope"] == "local"]
    assert (local["state"], local["registered"]) == ("outdated", True)
    assert local["nextAction"] == f"claude mcp remove lwc -s local   (in {env.project})"
    assert "claude-code/local" in status["registered"]
    result = env.ok("agent", "install", "claude-code", "--project")
    assert result["status"] == "added"
    [warning] = [w for w in result["warnings"] if "local-scope" in w]
    assert "claude mcp remove lwc -s local" in warning
    assert str(env.project) in warning
    assert "claude_local_entry" in gates_of(env.ok("agent", "status"), "claude-code", "user")


def test_claude_project_install_names_approval_and_trust(env: Env) -> None:
    """Issue 15 #7: Claude Code's project approval and workspace trust are in the install
    output; an approval in the committed .claude/settings.json is ignored until trust."""
    result = env.ok("agent", "install", "claude-code")
    gates = {gate["gate"]: gate for gate in result["gates"]}
    approval = gates["claude_project_approval"]
    assert approval["state"] == "pending"
    assert "enabledMcpjsonServers" in approval["fix"]
    assert str(env.project / ".claude" / "settings.local.json") in approval["fix"]
    trust = gates["claude_workspace_trust"]
    assert f'projects["{env.project}"].hasTrustDialogAccepted: true' in trust["fix"]
    assert any("approve" in note for note in result["notes"])
    assert any("trust dialog" in note for note in result["notes"])
    (env.project / ".claude").mkdir()
    (env.project / ".claude" / "settings.json").write_text('{"enabledMcpjsonServers": ["lwc"]}')
    gates = gates_of(env.ok("agent", "status"), "claude-code", "project")
    assert "settings.json is ignored until then" in gates["claude_workspace_trust"]["message"]
    assert gates["claude_workspace_trust"]["blocking"] is True
    assert "claude_project_approval" in gates
    # Accepting the trust dialog: now the project's own approval counts.
    (env.home / ".claude.json").write_text(
        json.dumps({"projects": {str(env.project): {"hasTrustDialogAccepted": True}}})
    )
    assert gates_of(env.ok("agent", "status"), "claude-code", "project") == {}
    (env.project / ".claude" / "settings.local.json").write_text(
        '{"disabledMcpjsonServers": ["lwc"]}'
    )
    gates = gates_of(env.ok("agent", "status"), "claude-code", "project")
    assert gates["claude_project_approval"]["state"] == "rejected"
    assert "claude mcp reset-project-choices" in gates["claude_project_approval"]["fix"]


def test_vscode_install_names_the_trust_prompt(env: Env) -> None:
    """Issue 15 #7: VS Code asks before it first starts a server; the install says so."""
    result = env.ok("agent", "install", "vscode")
    [gate] = result["gates"]
    assert gate["gate"] == "vscode_trust"
    assert gate["blocking"] is False
    assert any("Trust" in note for note in result["notes"])


def test_codex_project_trust_clears_the_gate(env: Env) -> None:
    """Issue 15 #4: the Codex project gate clears once ~/.codex/config.toml trusts the project
    (what accepting Codex's trust prompt records); the git root is the project key."""
    sub = env.project / "pkg"
    sub.mkdir()
    (env.project / ".git").mkdir()
    done = env.run("agent", "install", "codex", "--project", cwd=sub)
    gate = json.loads(done.stdout)["gates"][0]
    assert gate["gate"] == "codex_project_trust"
    assert f'[projects."{env.project}"]' in gate["fix"]
    config = env.home / ".codex" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    config.write_text(f'[projects."{env.project}"]\ntrust_level = "trusted"\n')
    status = json.loads(env.run("agent", "status", "codex", cwd=sub).stdout)
    assert gates_of(status, "codex", "project") == {}


@pytest.mark.parametrize(
    ("host", "relative"),
    [
        ("claude-code", ".claude.json"),
        ("cursor", ".cursor/mcp.json"),
        ("codex", ".codex/config.toml"),
        ("gemini", ".gemini/settings.json"),
    ],
)
def test_new_user_config_files_are_private(env: Env, host: str, relative: str) -> None:
    """Issue 15 #6: a user config file lwc creates is 0600 (its new folder 0700), as the hosts
    create theirs; an existing file keeps its mode; project files stay shareable."""
    result = env.ok("agent", "install", host, "--user")
    path = env.home / relative
    assert result["file"] == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    if path.parent != env.home:
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    env.ok("agent", "uninstall", host, "--user")
    path.chmod(0o640)
    env.ok("agent", "install", host, "--user")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_new_project_files_keep_the_umask_mode(env: Env) -> None:
    """Project files are meant to be committed and shared: `0666 & ~umask` as before."""
    env.ok("agent", "install", "cursor")
    mode = stat.S_IMODE((env.project / ".cursor" / "mcp.json").stat().st_mode)
    mask = os.umask(0)
    os.umask(mask)
    assert mode == 0o666 & ~mask


def test_status_from_home_says_what_a_user_scope_host_gets(env: Env) -> None:
    """Issue 15 #8: started from $HOME a user-scope entry's every call answers
    workspace_too_broad; status run there says so for each host that binds the session
    directory (not VS Code and Cursor, which pass ${workspaceFolder})."""
    for host in ("claude-code", "codex", "gemini", "vscode"):
        env.ok("agent", "install", host, "--user")
    done = env.run("agent", "status", cwd=env.home)
    result = json.loads(done.stdout)
    for host in ("claude-code", "codex", "gemini"):
        gate = gates_of(result, host, "user")["session_directory"]
        assert "workspace_too_broad" in gate["message"]
        assert str(env.home) in gate["message"]
        assert f"lwc agent install {host} --project" in gate["fix"]
    assert gates_of(result, "vscode", "user") == {}


# ---------------------------------------------------------------------------- leave nothing behind

PROJECT_FILES = {
    "claude-code": ".mcp.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".vscode/mcp.json",
    "codex": ".codex/config.toml",
    "gemini": ".gemini/settings.json",
}


def project_tree(env: Env) -> list[str]:
    """Every file (not folder) under the project, relative."""
    return sorted(
        str(Path(directory, name).relative_to(env.project))
        for directory, _, files in os.walk(env.project)
        for name in files
    )


@pytest.mark.parametrize("host", sorted(PROJECT_FILES))
def test_install_and_uninstall_leave_no_file_in_the_project_tree(env: Env, host: str) -> None:
    """Issue 23 #7: over an existing project file, install and uninstall each back it up
    under ~/.lwc/backups (0600, the output says where) and leave nothing beside it."""
    path = env.project / PROJECT_FILES[host]
    path.parent.mkdir(parents=True, exist_ok=True)
    original = (
        '[mcp_servers.a]\ncommand = "a"\n'
        if host == "codex"
        else json.dumps({"servers" if host == "vscode" else "mcpServers": {"a": {"command": "a"}}})
    )
    path.write_text(original)
    installed = env.ok("agent", "install", host, "--project")
    removed = env.ok("agent", "uninstall", host, "--project")
    assert project_tree(env) == [PROJECT_FILES[host]]
    assert path.read_text() == original
    root = env.home / ".lwc" / "backups"
    kept = backups(path)
    assert [str(p) for p in kept] == [installed["backup"], removed["backup"]]
    assert kept[0].read_text() == original
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in kept)
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


def test_backups_follow_xdg_state_home_and_the_terminal_says_where(
    env: Env, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With $XDG_STATE_HOME set the backup goes to `$XDG_STATE_HOME/lwc/backups`, and the
    human output names it."""
    state = env.root / "state"
    for name, value in {**env.vars, "XDG_STATE_HOME": str(state)}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(env.project)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    (env.project / ".mcp.json").write_text('{"mcpServers": {}}\n')
    assert main(["agent", "install", "claude-code"]) == 0
    out = capsys.readouterr().out
    [backup] = list((state / "lwc" / "backups").glob("*" + str(env.project / ".mcp.json")))
    assert f"  backup: {backup}\n" in out
    assert backup.read_text() == '{"mcpServers": {}}\n'
    assert project_tree(env) == [".mcp.json"]


def test_force_keeps_the_keys_lwc_does_not_own(env: Env) -> None:
    """Issue 23 #7: --force replaces the command of a different `lwc` entry but keeps its
    `env`, timeout and other keys of the user's; an HTTP entry's url and headers go."""
    path = env.project / ".mcp.json"
    old = {"command": "uvx", "args": ["lwc-other"], "env": {"TOKEN": "${TOKEN}"}, "timeout": 9}
    path.write_text(json.dumps({"mcpServers": {"lwc": old}}, indent=2) + "\n")
    result = env.ok("agent", "install", "claude-code", "--force")
    written = json.loads(path.read_text())["mcpServers"]["lwc"]
    assert written == {
        "command": str(env.lwc),
        "args": ["serve", "--mcp", "--path", str(env.project)],
        "env": {"TOKEN": "${TOKEN}"},
        "timeout": 9,
        "type": "stdio",
    }
    assert result["entry"] == written
    assert "kept the existing entry's own keys: env, timeout" in result["notes"]
    http = {"type": "http", "url": "http://x", "headers": {"A": "b"}, "env": {"K": "v"}}
    path.write_text(json.dumps({"mcpServers": {"lwc": http}}) + "\n")
    env.ok("agent", "install", "claude-code", "--force")
    assert json.loads(path.read_text())["mcpServers"]["lwc"] == {
        "type": "stdio",
        "env": {"K": "v"},
        "command": str(env.lwc),
        "args": ["serve", "--mcp", "--path", str(env.project)],
    }


@pytest.mark.parametrize("host", sorted(PROJECT_FILES))
@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_every_entry_runs_an_absolute_lwc(env: Env, host: str, scope: str) -> None:
    """SPEC §7: every host and scope, a committed project file included, gets the absolute
    `lwc` found on PATH — never a bare `lwc` a GUI editor's short PATH cannot find."""
    result = env.ok("agent", "install", host, scope)
    assert result["entry"]["command"] == str(env.lwc)
    assert os.path.isabs(result["entry"]["command"])
    if scope == "--project":
        [note] = [n for n in result["notes"] if "a teammate runs" in n]
        assert f"the entry runs {env.lwc}" in note
        assert f"`lwc agent install {host} --project --force`" in note


@pytest.mark.parametrize("host", ["cursor", "vscode", "claude-code", "codex", "gemini"])
def test_a_committed_project_entry_is_broken_for_a_teammate_until_force(
    tmp_path: Path, host: str
) -> None:
    """Issue 23 #7 under SPEC §7: a committed project entry names the machine's absolute
    `lwc`. In a teammate's checkout (another machine, another folder) `lwc agent status`
    reports it `broken` and names `lwc agent install HOST --project --force`, which rewrites
    only how the server is started, keeping the teammate's own keys; then it is registered."""
    alice, bob = Env(tmp_path / "alice"), Env(tmp_path / "bob")
    alice.ok("agent", "install", host, "--project")
    shared, mine = alice.project / PROJECT_FILES[host], bob.project / PROJECT_FILES[host]
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_bytes(shared.read_bytes())
    alice.lwc.unlink()  # alice's lwc is on another machine: nothing at that path for bob
    assert str(alice.lwc) in mine.read_text()

    def project_row() -> dict[str, Any]:
        status = bob.ok("agent", "status", host)
        [row] = [r for r in status["configs"] if r["scope"] == "project"]
        assert isinstance(row, dict)
        return row

    row = project_row()
    assert (row["state"], row["registered"]) == ("broken", True)
    assert "does not exist" in row["command"]["problem"]
    assert row["nextAction"] == f"lwc agent install {host} --project --force"
    # The teammate's own tuning of the entry, which --force must keep.
    text = mine.read_text()
    if host == "codex":
        text += '[mcp_servers.lwc.env]\nLOG = "1"\n'
    else:
        config = json.loads(text)
        [servers] = [v for v in config.values() if isinstance(v, dict) and "lwc" in v]
        servers["lwc"]["env"] = {"LOG": "1"}
        text = json.dumps(config, indent=2) + "\n"
    mine.write_text(text)
    fixed = bob.ok("agent", "install", host, "--project", "--force")
    assert fixed["status"] == "replaced"
    assert fixed["entry"]["command"] == str(bob.lwc)
    assert fixed["entry"]["env"] == {"LOG": "1"}
    assert "kept the existing entry's own keys: env" in fixed["notes"]
    assert str(alice.lwc) not in mine.read_text()
    row = project_row()
    assert (row["state"], row["command"]["runs"]) == ("registered", True)
    assert row["entry"]["env"] == {"LOG": "1"}
