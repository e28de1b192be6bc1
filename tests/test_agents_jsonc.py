"""The JSON/JSONC editor changes only the `lwc` entry's own bytes, whatever the file looks like."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lwc_trio.agents import jsonc
from lwc_trio.exceptions import ConfigSyntaxError, DuplicateKeyError

ENTRY = {"command": "/bin/lwc", "args": ["serve", "--mcp"]}


def put(text: str, dialect: jsonc.Dialect = jsonc.JSONC, value: Any = ENTRY) -> str:
    """Set mcpServers.lwc and check the result parses to exactly the expected value."""
    doc = jsonc.parse(text, dialect)
    out = jsonc.set_member(doc, "mcpServers", "lwc", value)
    expected = dict(doc.value or {})
    expected["mcpServers"] = {**expected.get("mcpServers", {}), "lwc": value}
    assert jsonc.parse(out, dialect).value == expected
    return out


def drop(text: str, dialect: jsonc.Dialect = jsonc.JSONC) -> str:
    """Remove mcpServers.lwc and check nothing else changed in value."""
    doc = jsonc.parse(text, dialect)
    out = jsonc.remove_member(doc, "mcpServers", "lwc")
    expected = json.loads(json.dumps(doc.value))
    del expected["mcpServers"]["lwc"]
    assert jsonc.parse(out, dialect).value == expected
    return out


def test_fresh_file_is_two_space_json_with_inline_args() -> None:
    """A new file holds only the container and the entry, args on one line."""
    assert jsonc.fresh("mcpServers", "lwc", ENTRY) == (
        '{\n  "mcpServers": {\n    "lwc": {\n      "command": "/bin/lwc",\n'
        '      "args": ["serve", "--mcp"]\n    }\n  }\n}\n'
    )


@pytest.mark.parametrize(
    ("text", "dialect", "expected"),
    [
        # The entry goes after the last server at the servers' indentation; nothing else moves.
        pytest.param(
            '{\n    "mcpServers": {\n        "a": {"command": "a"}\n    },\n    "z": 1.50\n}\n',
            jsonc.JSONC,
            '{\n    "mcpServers": {\n        "a": {"command": "a"},\n        "lwc": {\n'
            '            "command": "/bin/lwc",\n            "args": ["serve", "--mcp"]\n'
            '        }\n    },\n    "z": 1.50\n}\n',
            id="appends-after-last-server",
        ),
        # A file without mcpServers gets one at the end of the root object.
        pytest.param(
            '{\n  "theme": "dark"\n}',
            jsonc.JSONC,
            '{\n  "theme": "dark",\n  "mcpServers": {\n    "lwc": {\n'
            '      "command": "/bin/lwc",\n      "args": ["serve", "--mcp"]\n    }\n  }\n}',
            id="creates-the-container-last",
        ),
        # `"mcpServers": {}` is opened up and indented from its own line.
        pytest.param(
            '{\n  "mcpServers": {}\n}\n',
            jsonc.JSONC,
            '{\n  "mcpServers": {\n    "lwc": {\n      "command": "/bin/lwc",\n'
            '      "args": ["serve", "--mcp"]\n    }\n  }\n}\n',
            id="fills-an-empty-container",
        ),
        # A `// comment` closing the last member's line keeps belonging to that member.
        pytest.param(
            '{\n  "mcpServers": {\n    "a": {} // keep me\n  }\n}\n',
            jsonc.JSONC,
            '{\n  "mcpServers": {\n    "a": {}, // keep me\n    "lwc": {\n'
            '      "command": "/bin/lwc",\n      "args": ["serve", "--mcp"]\n    }\n  }\n}\n',
            id="comment-after-last-member-stays",
        ),
        # With a trailing comma there, it becomes the separator and the new member gets one.
        pytest.param(
            '{\n  "mcpServers": {\n    "a": {},\n  },\n}\n',
            jsonc.JSONC,
            '{\n  "mcpServers": {\n    "a": {},\n    "lwc": {\n      "command": "/bin/lwc",\n'
            '      "args": ["serve", "--mcp"]\n    },\n  },\n}\n',
            id="trailing-comma-style-kept",
        ),
        # A minified file gets an inline entry.
        pytest.param(
            '{"mcpServers":{"a":{}}}',
            jsonc.STRICT,
            '{"mcpServers":{"a":{}, "lwc": {"command": "/bin/lwc", "args": ["serve", "--mcp"]}}}',
            id="one-line-object-stays-one-line",
        ),
        # Indent unit, line breaks and a BOM follow the file.
        pytest.param(
            '\ufeff{\r\n\t"mcpServers": {\r\n\t\t"a": 1\r\n\t}\r\n}\r\n',
            jsonc.STRICT,
            '\ufeff{\r\n\t"mcpServers": {\r\n\t\t"a": 1,\r\n\t\t"lwc": {\r\n'
            '\t\t\t"command": "/bin/lwc",\r\n\t\t\t"args": ["serve", "--mcp"]\r\n\t\t}\r\n\t}\r\n}\r\n',
            id="tabs-crlf-and-bom-kept",
        ),
        # An existing lwc entry's value is swapped in place; its neighbours are untouched.
        pytest.param(
            '{"mcpServers": {\n  "lwc": {"command": "old"}, // ours\n  "b": 2\n}}',
            jsonc.JSONC,
            '{"mcpServers": {\n  "lwc": {\n    "command": "/bin/lwc",\n'
            '    "args": ["serve", "--mcp"]\n  }, // ours\n  "b": 2\n}}',
            id="replaces-only-the-existing-value",
        ),
    ],
)
def test_put_changes_only_the_entry_and_follows_the_file(
    text: str, dialect: jsonc.Dialect, expected: str
) -> None:
    """Adding or replacing `lwc` gives exactly these bytes: the file's own layout is kept."""
    assert put(text, dialect) == expected


def test_string_contents_that_look_like_comments_are_data() -> None:
    """`//` and `/*` inside strings are neither stripped nor refused in strict JSON."""
    text = '{"url": "http://x/*y*/", "mcpServers": {}}'
    assert jsonc.parse(put(text, jsonc.STRICT), jsonc.STRICT).value["url"] == "http://x/*y*/"


def test_whitespace_or_comment_only_file_gets_fresh_content() -> None:
    """An empty file (or one holding only comments) becomes a fresh file after its comments."""
    assert put("  \n") == jsonc.fresh("mcpServers", "lwc", ENTRY)
    assert put("// mine\n") == "// mine\n" + jsonc.fresh("mcpServers", "lwc", ENTRY)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # middle member, own line: the whole line goes
        ('{"mcpServers": {\n  "a": 1,\n  "lwc": {},\n  "b": 2\n}}', '{"mcpServers": {\n  "a": 1,\n  "b": 2\n}}'),
        # last member: the previous separator goes too
        ('{"mcpServers": {\n  "a": 1,\n  "lwc": {}\n}}', '{"mcpServers": {\n  "a": 1\n}}'),
        # last member with a comment after the previous one
        ('{"mcpServers": {\n  "a": 1, // c\n  "lwc": {}\n}}', '{"mcpServers": {\n  "a": 1 // c\n}}'),
        # only member: the object collapses to {}
        ('{\n  "mcpServers": {\n    "lwc": {}\n  }\n}\n', '{\n  "mcpServers": {}\n}\n'),
        # inline objects
        ('{"mcpServers": {"a": 1, "lwc": {}, "b": 2}}', '{"mcpServers": {"a": 1, "b": 2}}'),
        ('{"mcpServers": {"a": 1, "lwc": {}}}', '{"mcpServers": {"a": 1}}'),
        ('{"mcpServers": {"lwc": {}}}', '{"mcpServers": {}}'),
        # JSONC: a trailing comma after our entry
        ('{"mcpServers": {\n  "a": 1,\n  "lwc": {},\n}}', '{"mcpServers": {\n  "a": 1,\n}}'),
        # CRLF
        ('{"mcpServers": {\r\n  "lwc": {},\r\n  "b": 2\r\n}}', '{"mcpServers": {\r\n  "b": 2\r\n}}'),
    ],
)  # fmt: skip
def test_remove_deletes_only_the_entry(text: str, expected: str) -> None:
    """Removal takes the entry (and exactly one separator), never a neighbour or a comment."""
    assert drop(text) == expected


def test_install_then_remove_restores_the_original_bytes() -> None:
    """Adding and removing the entry is a byte-exact round trip on a typical file."""
    text = '{\n  // servers\n  "mcpServers": {\n    "a": {"command": "a"} // x\n  },\n  "k": [1, 2]\n}\n'
    assert drop(put(text)) == text


@pytest.mark.parametrize(
    ("dialect", "text", "needle"),
    [
        (jsonc.STRICT, '{"a": 1 // c\n}', "line 1 column 9: comments are not allowed"),
        (jsonc.STRICT, '{"a": [1,]}', "line 1 column 9: trailing commas are not allowed"),
        (jsonc.COMMENTS, '{"a": 1,}', "trailing commas are not allowed"),
        (jsonc.JSONC, '{"a": 1 "b": 2}', "line 1 column 9: Expecting ',' delimiter"),
        (jsonc.JSONC, '{"a": NaN}', "NaN is not JSON"),
        (jsonc.JSONC, '{"a": ', "line 1 column 7: Expecting value"),
    ],
)
def test_malformed_text_is_reported_with_its_position(
    dialect: jsonc.Dialect, text: str, needle: str
) -> None:
    """Parse errors say where and why, in the host's dialect."""
    with pytest.raises(ConfigSyntaxError) as info:
        jsonc.parse(text, dialect)
    assert needle in info.value.message


def test_comments_and_trailing_commas_parse_where_allowed() -> None:
    """JSONC accepts both; the value ignores them."""
    doc = jsonc.parse('{\n  /* a */ "a": [1, 2,], // b\n}', jsonc.JSONC)
    assert doc.value == {"a": [1, 2]}


def test_duplicate_container_or_entry_key_is_refused() -> None:
    """Which duplicate a host would use is unknown, so lwc does not guess."""
    with pytest.raises(DuplicateKeyError):
        put('{"mcpServers": {"lwc": 1, "lwc": 2}}')
    with pytest.raises(DuplicateKeyError):
        put('{"mcpServers": {}, "mcpServers": {}}')
