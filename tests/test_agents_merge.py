"""Install/uninstall plans: idempotent, conflict-safe, CodeGraph-aware, verified before writing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lwc_trio.agents import (
    AgentError,
    desired_entry,
    find_host,
    inspect,
    plan_install,
    plan_uninstall,
)
from lwc_trio.agents.hosts import Host
from lwc_trio.agents.merge import codegraph_servers


def host(name: str) -> Host:
    """The host called `name`."""
    found = find_host(name)
    assert found is not None
    return found


CLAUDE, CODEX, VSCODE = host("claude-code"), host("codex"), host("vscode")
ENTRY = desired_entry(CLAUDE, "user", "/bin/lwc", None)


def test_missing_file_is_planned_as_a_new_file() -> None:
    """No file: status added with the fresh text, nothing else to preserve."""
    plan = plan_install(CLAUDE, None, ENTRY, force=False, label="f")
    assert plan.status == "added"
    assert plan.text is not None
    assert '"lwc"' in plan.text


def test_equivalent_entry_with_user_extras_is_unchanged() -> None:
    """Extra keys (env, timeouts) and an omitted default `type` do not make a conflict."""
    text = '{"mcpServers": {"lwc": {"command": "/bin/lwc", "args": ["serve", "--mcp"], "env": {}}}}'
    plan = plan_install(CLAUDE, text, ENTRY, force=False, label="f")
    assert (plan.status, plan.text) == ("unchanged", None)


def test_different_entry_is_a_conflict_without_force() -> None:
    """A foreign `lwc` entry is never overwritten silently."""
    text = '{"mcpServers": {"lwc": {"command": "npx", "args": ["other-lwc"]}}}'
    with pytest.raises(AgentError) as info:
        plan_install(CLAUDE, text, ENTRY, force=False, label="/x/.claude.json")
    assert info.value.code == "agent_entry_conflict"
    assert "/x/.claude.json" in info.value.message
    assert "--force" in info.value.message
    plan = plan_install(CLAUDE, text, ENTRY, force=True, label="f")
    assert plan.status == "replaced"
    assert plan.existing == {"command": "npx", "args": ["other-lwc"]}


def test_codegraph_servers_are_found_by_name_command_or_args() -> None:
    """Any server mentioning CodeGraph is reported; ours never is."""
    servers = {
        "CodeGraph": {"command": "x"},
        "cg": {"command": "npx", "args": ["-y", "@colbymchenry/codegraph", "serve"]},
        "bin": {"command": "/usr/local/bin/codegraph"},
        "other": {"command": "node"},
        "lwc": {"command": "codegraph-ish"},
    }
    assert codegraph_servers(servers) == ("CodeGraph", "cg", "bin")


def test_install_leaves_a_codegraph_server_alone_and_reports_it() -> None:
    """The CodeGraph entry stays; no second one is added; the plan names it."""
    text = '{"mcpServers": {"codegraph": {"command": "codegraph", "args": ["serve", "--mcp"]}}}'
    plan = plan_install(CLAUDE, text, ENTRY, force=False, label="f")
    assert plan.codegraph == ("codegraph",)
    assert plan.text is not None
    assert plan.text.count("codegraph") == 2


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[1, 2]", "the top level must be a JSON object"),
        ('{"mcpServers": []}', '"mcpServers" must be an object'),
        ('{"mcpServers": null}', '"mcpServers" must be an object'),
        ('{"mcpServers": {}', "line 1 column 18"),
        ('{"mcpServers": {"lwc": 1, "lwc": 2}}', 'the key "lwc" appears 2 times'),
    ],
)
def test_malformed_or_misshapen_json_is_invalid(text: str, needle: str) -> None:
    """Wrong shapes are reported with the file's name; no plan is made."""
    with pytest.raises(AgentError) as info:
        plan_install(CLAUDE, text, ENTRY, force=True, label="/p/.mcp.json")
    assert info.value.code == "agent_config_invalid"
    assert info.value.message.startswith("/p/.mcp.json is not a valid config file")
    assert needle in info.value.message


@pytest.mark.parametrize(
    ("text", "force"),
    [
        # An entry written inline cannot be replaced in place: refused, not rewritten.
        pytest.param('mcp_servers = { lwc = { command = "old" } }\n', True, id="inline-entry"),
        # Appending `[mcp_servers.lwc]` after an inline `mcp_servers` fails verification.
        pytest.param('mcp_servers = { other = { command = "x" } }\n', False, id="inline-table"),
    ],
)
def test_toml_that_cannot_be_edited_in_place_is_refused(text: str, force: bool) -> None:
    """A Codex file lwc could only break by editing is agent_config_unsupported."""
    entry = desired_entry(CODEX, "user", "/bin/lwc", None)
    with pytest.raises(AgentError) as info:
        plan_install(CODEX, text, entry, force=force, label="cfg")
    assert info.value.code == "agent_config_unsupported"


def test_uninstall_plans() -> None:
    """Removing is `absent` without an entry and `removed` (value-checked) with one."""
    assert plan_uninstall(CLAUDE, None, label="f").status == "absent"
    assert plan_uninstall(CLAUDE, '{"mcpServers": {"a": {}}}', label="f").status == "absent"
    plan = plan_uninstall(CLAUDE, '{"mcpServers": {"a": {}, "lwc": {"command": "x"}}}', label="f")
    assert (plan.status, plan.text, plan.existing) == (
        "removed",
        '{"mcpServers": {"a": {}}}',
        {"command": "x"},
    )


def test_inspect_states() -> None:
    """Status tells a matching entry from an outdated one and from none."""
    entry = desired_entry(VSCODE, "project", "/bin/lwc", Path("/p"))
    current = json.dumps({"servers": {"lwc": entry}})
    assert inspect(VSCODE, current, entry, label="f").state == "registered"
    assert inspect(VSCODE, '{"servers": {"lwc": {}}}', entry, label="f").state == "outdated"
    assert inspect(VSCODE, "{}", entry, label="f").state == "not_registered"


def test_force_keeps_every_key_lwc_does_not_own_in_codex_toml() -> None:
    """A Codex `[mcp_servers.lwc]` with env, a float timeout and `enabled`: --force rewrites
    command and args and keeps the rest, verified by re-parsing; a date refuses, unchanged."""
    entry = desired_entry(CODEX, "user", "/bin/lwc", None)
    text = (
        '[mcp_servers.lwc]\ncommand = "old"\nstartup_timeout_sec = 20.5\nenabled = true\n'
        '[mcp_servers.lwc.env]\nTOKEN = "t"\n'
    )
    plan = plan_install(CODEX, text, entry, force=True, label="f")
    assert plan.entry == {
        "command": "/bin/lwc",
        "startup_timeout_sec": 20.5,
        "enabled": True,
        "env": {"TOKEN": "t"},
        "args": ["serve", "--mcp"],
    }
    assert plan.text is not None
    assert 'env = {TOKEN = "t"}' in plan.text
    dated = '[mcp_servers.lwc]\ncommand = "old"\nsince = 2026-01-02\n'
    with pytest.raises(AgentError) as info:
        plan_install(CODEX, dated, entry, force=True, label="f")
    assert info.value.code == "agent_config_unsupported"
