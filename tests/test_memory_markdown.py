"""Markdown structure (`memory.text.markdown`): sections, blocks and where a section may be cut."""

from __future__ import annotations

import pytest

from lwc_trio.memory.text.markdown import (
    attribute_free,
    blocks,
    cut_points,
    heading,
    introduces,
    sections,
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("# Title", (1, "Title")),
        ("###   Spaced   ", (3, "Spaced")),
        ("## Closed ##", (2, "Closed")),
        ("## C# is a language", (2, "C# is a language")),
        ("   ###### Six", (6, "Six")),
        ("####### Seven", None),
        ("    # indented code", None),
        ("#hashtag", None),
        ("#", (1, "")),
        (
            "## `test.each(table)(name, fn)` {#test-each}",
            (2, "`test.each(table)(name, fn)` {#test-each}"),
        ),
    ],
)
def test_atx_headings(line: str, expected: tuple[int, str] | None) -> None:
    assert heading(line) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Install { #install }", "Install"),
        ("`debug` {#debug}", "`debug`"),
        ("Note {: .note }", "Note"),
        ("Set {a, b}", "Set {a, b}"),
        ("Plain", "Plain"),
    ],
)
def test_attribute_lists_are_dropped(text: str, expected: str) -> None:
    assert attribute_free(text) == expected


def test_sections_nest_and_ignore_headings_inside_fences() -> None:
    body = (
        "Intro text.\n\n# Guide\n\n## Install {#install}\n\nRun it.\n\n"
        "```python\n# a comment, not a heading\n```\n\n### Linux\n\nApt.\n\n## Use\n\nCall it.\n"
    )
    found = sections(body)
    assert [s.path for s in found] == [
        (),
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "Linux"),
        ("Guide", "Use"),
    ]
    assert body[found[0].start : found[0].end].strip() == "Intro text."
    install = found[2]
    assert body[install.start :].startswith("## Install")
    assert body[install.text : install.end].strip().endswith("```")
    assert found[-1].end == len(body)


@pytest.mark.parametrize("separator", ["\u2028", "\x0c", "\x85", "\x1e"])
def test_only_cr_and_lf_end_a_line(separator: str) -> None:
    """CommonMark ends a line at \\n, \\r or \\r\\n only: a Unicode line separator, a form
    feed or a record separator is text within the line (`str.splitlines` splits at them)."""
    body = f"# Title {separator}text\n\nBody.\n\n```\ncode {separator}\n```\n# Next\n"
    found = sections(body)
    assert [s.path for s in found] == [(f"Title {separator}text",), ("Next",)]
    assert body[found[0].text : found[0].end] == f"\nBody.\n\n```\ncode {separator}\n```\n"
    assert found[1].start == body.index("# Next")


def test_a_fence_in_an_admonition_hides_its_hash_lines() -> None:
    """pydantic's admonitions indent their code fences: a `# comment` line inside is code."""
    body = "## A\n\n!!! note\n    ```py\n# comment at column 0\n    ```\n\n## B\n\nText.\n"
    assert [s.path for s in sections(body)] == [("A",), ("B",)]


def _kinds(text: str) -> list[tuple[str, str]]:
    return [(b.kind, text[b.start : b.end].split("\n", 1)[0]) for b in blocks(text)]


def test_blocks_keep_lists_tables_quotes_and_containers_whole() -> None:
    text = "\n".join(
        [
            "A paragraph",
            "over two lines.",
            "",
            "- item one",
            "",
            "  continued after a blank line",
            "- item two",
            "    - nested",
            "",
            "| a | b |",
            "|---|---|",
            "| 1 | 2 |",
            "",
            "> **Note:** quoted",
            "> still quoted",
            "",
            "/// note | Title",
            "Inside.",
            "",
            "Still inside.",
            "///",
            "",
            ":::tip",
            "",
            "Tip text.",
            "",
            ":::",
            "",
            "!!! warning",
            "    Indented body.",
            "",
            "    Second paragraph.",
            "",
            '=== "Python 3.9"',
            "    one",
            '=== "Python 3.10"',
            "    two",
            "",
            '<div class="grid">',
            "",
            "Inside the div.",
            "",
            "</div>",
            "",
            "<dl>",
            "<dt>--flag</dt>",
            "",
            "<dd>What it does.</dd>",
            "</dl>",
            "",
            "[ref]: https://example.com",
            "[other]: https://example.org",
            "",
            "```toml",
            "[a]",
            "",
            "b = 1",
            "```",
        ]
    )
    assert _kinds(text) == [
        ("paragraph", "A paragraph"),
        ("list", "- item one"),
        ("table", "| a | b |"),
        ("quote", "> **Note:** quoted"),
        ("container", "/// note | Title"),
        ("container", ":::tip"),
        ("container", "!!! warning"),
        ("container", '=== "Python 3.9"'),
        ("html", '<div class="grid">'),
        ("html", "<dl>"),
        ("references", "[ref]: https://example.com"),
        ("code", "```toml"),
    ]
    by_kind = {b.kind: text[b.start : b.end] for b in blocks(text)}
    assert by_kind["list"].endswith("    - nested")
    assert by_kind["code"].endswith("b = 1\n```")


def test_a_mkdocstrings_directive_is_no_container() -> None:
    """`::: pydantic.BaseModel` (an API stub) has no closing `:::`: one line, not a block
    that swallows the rest of the section."""
    text = "::: pydantic.BaseModel\n    options:\n      show_root_heading: true\n\nAfter it."
    assert [kind for kind, _first in _kinds(text)] == ["paragraph", "paragraph"]


def test_a_block_that_introduces_the_next_is_never_a_cut_point() -> None:
    text = "First paragraph.\n\nThe options are:\n\n- a\n- b\n\n:::note\nx\n:::\n\nLast."
    found = blocks(text)
    assert [introduces(text, b) for b in found] == [False, True, False, False, False]
    points = cut_points(text)
    assert text[: points[0]] == "First paragraph."
    assert text[: points[1]].endswith("- b")  # "are:" travels with its list
    assert points[-1] == len(text)


@pytest.mark.parametrize(
    "body",
    [
        "# " + " " * 100_000 + "x",
        "#" + " #" * 50_000,
        " #" * 50_000 + "\n",
        "## a" + " " * 100_000 + "##",
        "```" + "`" * 100_000,
        ":::" + ":" * 100_000 + "\n" + ":::\n" * 20_000,
        "- " * 50_000,
        "<div>" * 20_000,
        "|" * 100_000,
        "[x]:" * 30_000,
        "\n" * 100_000,
        ("a:\n\n" * 30_000),
        "\n" + " \t" * 50_000 + "x",
        "\r" + " " * 100_000 + "#",
        "\r\n " * 50_000,
    ],
)
def test_hostile_bodies_are_parsed_in_one_pass(body: str) -> None:
    """Long adversarial lines finish (the suite's hang guard stops a quadratic parse): every
    structure here is found by string methods, one pass over the lines."""
    found = sections(body)
    for section in found:
        cut_points(body[section.text : section.end])
