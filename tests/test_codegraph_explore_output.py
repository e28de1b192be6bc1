"""Explore text is capped on a file-section boundary and `files` lists the surviving sections."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lwc_trio.codegraph.explore_output import (
    TEXT_LIMIT,
    cut_text,
    error_reply_state,
    interpret_tool_result,
    ready_state,
    section_files,
)


def section(path: str, body_chars: int) -> str:
    return f"**`{path}`** — f(function)\n\n```python\n1\t{'x' * body_chars}\n```\n\n"


def test_short_text_is_kept_whole() -> None:
    """Text within the cap is returned unchanged with truncated false."""
    text = "**Exploration: q**\n\n" + section("a.py", 10)
    assert cut_text(text) == (text, False)
    assert ready_state(text) == {
        "state": "ready",
        "text": text,
        "truncated": False,
        "files": ["a.py"],
    }


def test_long_text_is_cut_before_the_first_section_that_does_not_fit() -> None:
    """Whole sections survive; the one crossing the cap and those after it are dropped."""
    head = "**Exploration: q**\n\n**Source Code**\n\n"
    sections = [section(f"pkg/m{n}.py", 4_000) for n in range(5)]
    text = head + "".join(sections)
    kept, truncated = cut_text(text)
    assert truncated
    assert kept == head + "".join(sections[:3])
    assert section_files(kept) == ["pkg/m0.py", "pkg/m1.py", "pkg/m2.py"]


def test_a_section_starting_exactly_at_the_cap_is_a_boundary() -> None:
    """A header beginning at offset 15,000 keeps everything before it."""
    filler = "x" * (TEXT_LIMIT - 1) + "\n"
    text = filler + section("late.py", 100)
    assert cut_text(text) == (filler, True)


def test_without_sections_the_cut_is_at_the_last_line_break() -> None:
    """No section header: keep whole lines up to the cap; no line break: exactly the cap."""
    lines = "".join(f"line {n:05d} " + "y" * 80 + "\n" for n in range(400))
    kept, truncated = cut_text(lines)
    assert truncated
    assert kept.endswith("\n")
    assert len(kept) <= TEXT_LIMIT
    assert len(kept) > TEXT_LIMIT - 100
    assert lines.startswith(kept)
    assert cut_text("z" * (TEXT_LIMIT + 5)) == ("z" * TEXT_LIMIT, True)


def test_a_first_section_larger_than_the_cap_falls_back_to_lines() -> None:
    """A header at offset 0 is no boundary, so the cut keeps whole lines of that section."""
    text = "**`huge.py`**\n\n```\n" + "".join(f"{n}\tcode\n" for n in range(4_000))
    kept, truncated = cut_text(text)
    assert truncated
    assert 0 < len(kept) <= TEXT_LIMIT
    assert kept.endswith("\n")
    assert section_files(kept) == ["huge.py"]


def test_limit_counts_code_points_not_bytes() -> None:
    """Non-ASCII text is measured in characters, as the memory plane measures bodies."""
    text = "é" * TEXT_LIMIT
    assert cut_text(text) == (text, False)


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[a-z]{1,8}/[a-z]{1,8}\.py", fullmatch=True), st.integers(0, 6_000)
        ),
        max_size=12,
    ),
    st.text(alphabet="ab \n", max_size=300),
)
def test_cut_is_a_capped_prefix_listing_surviving_sections(
    parts: list[tuple[str, int]], preamble: str
) -> None:
    """Any explore-shaped text: a prefix, within the cap, ending at a boundary, files in order."""
    text = "**Exploration**\n" + preamble + "\n" + "".join(section(p, n) for p, n in parts)
    kept, truncated = cut_text(text)
    assert text.startswith(kept)
    assert len(kept) <= TEXT_LIMIT
    assert truncated == (len(text) > TEXT_LIMIT)
    if truncated:
        assert kept.endswith("\n")
    files = section_files(kept)
    assert files == section_files(text)[: len(files)]


def test_files_are_listed_once_in_order() -> None:
    """A path shown in two sections is listed once; bold text that is not a path is not listed."""
    text = section("b.py", 1) + "**Relationships**\n" + section("a.py", 1) + section("b.py", 1)
    assert section_files(text) == ["b.py", "a.py"]


def test_text_blocks_are_joined_and_other_blocks_ignored() -> None:
    """Every text block counts, in order; images or resources do not."""
    result = {
        "content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "..."},
            {"type": "text", "text": section("c.py", 1)},
        ]
    }
    state = interpret_tool_result(result)
    assert state is not None
    assert state["text"] == "one\n" + section("c.py", 1)
    assert state["files"] == ["c.py"]


def test_is_error_becomes_tool_error_with_the_first_line() -> None:
    """`isError: true` is codegraph_tool_error quoting only the message's first line."""
    result = {
        "content": [{"type": "text", "text": "Error: projectPath is not indexed\nsecond line"}],
        "isError": True,
    }
    assert interpret_tool_result(result) == {
        "state": "error",
        "error": {
            "code": "codegraph_tool_error",
            "message": "CodeGraph reported an error: Error: projectPath is not indexed",
        },
    }


def test_result_without_content_is_unusable() -> None:
    """A result with no content list cannot be turned into an answer."""
    assert interpret_tool_result({"structured": {}}) is None
    assert interpret_tool_result({"content": "text"}) is None


def test_json_rpc_error_reply_is_a_tool_error() -> None:
    """An error object answering the call (e.g. unknown tool) is codegraph_tool_error."""
    assert error_reply_state({"code": -32602, "message": "Unknown tool: x"}) == {
        "state": "error",
        "error": {
            "code": "codegraph_tool_error",
            "message": "CodeGraph rejected the call: Unknown tool: x",
        },
    }
    assert error_reply_state({})["error"]["message"] == "CodeGraph rejected the call: no message"
