"""Each host gets its own documented file location and entry shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from lwc_trio.agents import HOSTS, desired_entry, entry_matches, find_host
from lwc_trio.agents.hosts import Host

ENV = {"HOME": "/h"}


def host(name: str) -> Host:
    """The host called `name`."""
    found = find_host(name)
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("name", "env", "platform", "expected"),
    [
        ("claude-code", ENV, "linux", "/h/.claude.json"),
        ("claude-code", {**ENV, "CLAUDE_CONFIG_DIR": "/c"}, "linux", "/c/.claude.json"),
        ("cursor", ENV, "darwin", "/h/.cursor/mcp.json"),
        ("vscode", ENV, "linux", "/h/.config/Code/User/mcp.json"),
        ("vscode", {**ENV, "XDG_CONFIG_HOME": "/x"}, "linux", "/x/Code/User/mcp.json"),
        ("vscode", {**ENV, "XDG_CONFIG_HOME": "rel"}, "linux", "/h/.config/Code/User/mcp.json"),
        ("vscode", ENV, "darwin", "/h/Library/Application Support/Code/User/mcp.json"),
        ("codex", ENV, "linux", "/h/.codex/config.toml"),
        ("codex", {**ENV, "CODEX_HOME": "/cx"}, "linux", "/cx/config.toml"),
        ("gemini", ENV, "darwin", "/h/.gemini/settings.json"),
    ],
)
def test_user_files(name: str, env: dict[str, str], platform: str, expected: str) -> None:
    """User-scope files follow each host's documented location and override variables."""
    assert host(name).user_file(env, platform) == Path(expected)


def test_project_files_and_scopes() -> None:
    """Project files are relative to the project; Codex defaults to its user file."""
    project = Path("/p")
    files = {
        h.key: str(h.config_file("project", project, ENV, "linux"))
        for h in HOSTS
        if "project" in h.scopes
    }
    assert files == {
        "claude-code": "/p/.mcp.json",
        "cursor": "/p/.cursor/mcp.json",
        "vscode": "/p/.vscode/mcp.json",
        "gemini": "/p/.gemini/settings.json",
        "codex": "/p/.codex/config.toml",
    }
    assert host("codex").scopes == ("user", "project")
    assert host("gemini").scopes == ("project", "user")


def test_aliases_are_case_insensitive() -> None:
    """`Claude`, `code`, `codex-cli`, `gemini-cli` name the right hosts; others none."""
    assert host("Claude").key == "claude-code"
    assert host("code").key == "vscode"
    assert host("codex-cli").key == "codex"
    assert host("gemini-cli").key == "gemini"
    assert find_host("emacs") is None


def test_entries_bind_the_workspace_where_the_host_can() -> None:
    """`${workspaceFolder}` for VS Code/Cursor, the absolute project for other project installs."""
    project = Path("/p")
    assert desired_entry(host("vscode"), "user", "/b/lwc", None) == {
        "type": "stdio",
        "command": "/b/lwc",
        "args": ["serve", "--mcp", "--path", "${workspaceFolder}"],
    }
    assert desired_entry(host("cursor"), "project", "/b/lwc", project) == {
        "command": "/b/lwc",
        "args": ["serve", "--mcp", "--path", "${workspaceFolder}"],
    }
    assert desired_entry(host("claude-code"), "project", "lwc", project) == {
        "type": "stdio",
        "command": "lwc",
        "args": ["serve", "--mcp", "--path", "/p"],
    }
    assert desired_entry(host("claude-code"), "user", "lwc", None)["args"] == ["serve", "--mcp"]
    assert desired_entry(host("gemini"), "project", "lwc", project) == {
        "command": "lwc",
        "args": ["serve", "--mcp", "--path", "/p"],
    }
    assert desired_entry(host("codex"), "user", "lwc", None) == {
        "command": "lwc",
        "args": ["serve", "--mcp"],
    }


def test_entry_matching_ignores_user_extras_but_not_our_keys() -> None:
    """Extra keys and a default transport match; a different command or type does not."""
    claude = host("claude-code")
    entry = desired_entry(claude, "user", "lwc", None)
    assert entry_matches(claude, {"command": "lwc", "args": ["serve", "--mcp"], "env": {}}, entry)
    assert not entry_matches(claude, {**entry, "type": "http"}, entry)
    assert not entry_matches(claude, {**entry, "command": "/other/lwc"}, entry)
    assert not entry_matches(claude, "lwc", entry)
    vscode = host("vscode")
    ventry = desired_entry(vscode, "user", "lwc", None)
    assert not entry_matches(vscode, {k: v for k, v in ventry.items() if k != "type"}, ventry)
