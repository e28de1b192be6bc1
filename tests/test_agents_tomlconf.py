"""The Codex TOML editor writes valid TOML and touches only the `[mcp_servers.lwc]` tables."""

from __future__ import annotations

import tomllib

import pytest

from lwc_trio.agents import tomlconf
from lwc_trio.exceptions import ConfigSyntaxError

PATH = ("mcp_servers", "lwc")
ENTRY = {"command": "/opt/lwc", "args": ["serve", "--mcp"]}


def test_emitter_escapes_strings_and_quotes_odd_keys() -> None:
    """Quotes, backslashes, control characters and non-ASCII survive a tomllib round trip."""
    table = {"command": 'C:\\x "y"\n\t\x01é', "args": [], "weird key": True, "n": 3}
    text = tomlconf.dumps_table(("mcp_servers", "my.server"), table)
    assert text.splitlines()[0] == '[mcp_servers."my.server"]'
    assert tomllib.loads(text) == {"mcp_servers": {"my.server": table}}


def test_append_keeps_everything_before_and_adds_one_blank_line() -> None:
    """A new table is appended after one blank line; a missing final newline is added."""
    text = 'model = "o3"  # mine\n[mcp_servers.other]\ncommand = "x"'
    assert tomlconf.set_table(text, PATH, ENTRY, replace=False) == (
        'model = "o3"  # mine\n[mcp_servers.other]\ncommand = "x"\n\n'
        '[mcp_servers.lwc]\ncommand = "/opt/lwc"\nargs = ["serve", "--mcp"]\n'
    )


def test_append_to_empty_text_is_just_the_table() -> None:
    """An empty file becomes the table alone."""
    assert tomlconf.set_table("", PATH, ENTRY, replace=False) == (
        '[mcp_servers.lwc]\ncommand = "/opt/lwc"\nargs = ["serve", "--mcp"]\n'
    )


def test_replace_drops_subtables_and_keeps_comments_of_the_next_table() -> None:
    """`[mcp_servers.lwc]` and `[mcp_servers.lwc.env]` are replaced where they stood."""
    text = (
        "[a]\nx = 1\n\n"
        '[ mcp_servers . "lwc" ]  # old\ncommand = "old"\n\n'
        '[mcp_servers.lwc.env]\nK = "v"\n\n'
        "# about b\n[b]\ny = 2\n"
    )
    assert tomlconf.set_table(text, PATH, ENTRY, replace=True) == (
        "[a]\nx = 1\n\n"
        '[mcp_servers.lwc]\ncommand = "/opt/lwc"\nargs = ["serve", "--mcp"]\n\n'
        "# about b\n[b]\ny = 2\n"
    )


def test_multiline_array_lines_are_not_headers() -> None:
    """A line like `  ["x"],` inside a multi-line array does not end a table."""
    text = '[mcp_servers.lwc]\ncommand = "old"\nargs = [\n  ["x"],\n]\n[z]\nq = 1\n'
    out = tomlconf.set_table(text, PATH, ENTRY, replace=True)
    assert tomllib.loads(out) == {"mcp_servers": {"lwc": ENTRY}, "z": {"q": 1}}


def test_remove_after_append_restores_the_original() -> None:
    """Appending and removing the table is a byte-exact round trip."""
    text = '# codex\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "x"\n'
    added = tomlconf.set_table(text, PATH, ENTRY, replace=False)
    assert tomlconf.remove_table(added, PATH) == text


def test_remove_in_the_middle_keeps_one_blank_line() -> None:
    """Removing a table between two others leaves the usual single blank line."""
    text = '[a]\nx = 1\n\n[mcp_servers.lwc]\ncommand = "c"\n\n[b]\ny = 2\n'
    assert tomlconf.remove_table(text, PATH) == "[a]\nx = 1\n\n[b]\ny = 2\n"


def test_entry_without_its_own_header_cannot_be_edited() -> None:
    """Inline or dotted definitions are refused rather than rewritten."""
    text = '[mcp_servers]\nlwc = { command = "old" }\n'
    with pytest.raises(ConfigSyntaxError):
        tomlconf.set_table(text, PATH, ENTRY, replace=True)
    with pytest.raises(ConfigSyntaxError):
        tomlconf.remove_table(text, PATH)


def test_parse_error_names_line_and_column() -> None:
    """tomllib's position is passed on."""
    with pytest.raises(ConfigSyntaxError) as info:
        tomlconf.parse('a = "x\n')
    assert "line 1" in info.value.message
