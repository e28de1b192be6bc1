"""A `codegraph_explore` result becomes the `codeGraph` object: text capped (the cut itself is
tested in test_protocol_code_text.py), tool errors passed on, unusable shapes refused."""

from __future__ import annotations

from lwc_trio.codegraph.explore_output import (
    TEXT_LIMIT,
    error_reply_state,
    interpret_tool_result,
    ready_state,
)


def section(path: str, body_chars: int) -> str:
    return f"**`{path}`** — f(function)\n\n```python\n1\t{'x' * body_chars}\n```\n\n"


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


def test_an_answer_without_text_is_unusable_not_ready_and_empty() -> None:
    """No text, or blank text, is no ready answer; an error result without text still reports."""
    assert interpret_tool_result({"content": []}) is None
    assert interpret_tool_result({"content": [{"type": "image", "data": "..."}]}) is None
    assert interpret_tool_result({"content": [{"type": "text", "text": " \n"}]}) is None
    state = interpret_tool_result({"content": [], "isError": True})
    assert state is not None
    assert state["error"]["message"] == "CodeGraph reported an error: no message"


def test_ready_state_caps_the_text_and_lists_files_with_source() -> None:
    """The child's text is capped at TEXT_LIMIT code points; `files` names what survives."""
    text = "**Exploration: q**\n\n" + "".join(section(f"m{n}.py", 4_000) for n in range(5))
    state = ready_state(text)
    assert state["truncated"] is True
    assert len(state["text"]) <= TEXT_LIMIT
    assert state["files"] == ["m0.py", "m1.py", "m2.py"]


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
