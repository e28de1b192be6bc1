"""Turn a `codegraph_explore` tool result into the SPEC §2.1 `codeGraph` object.

Sans-IO. The text is capped at `TEXT_LIMIT` code points by `protocol.code_text.fit_text`, the
rule the budget applies too (`protocol.explore_result.fit_budget`); that module describes
CodeGraph 1.6.1's explore output and how it is cut.
"""

from __future__ import annotations

from typing import Any

from lwc_trio.codegraph.index import error_state
from lwc_trio.protocol.code_text import TEXT_LIMIT, fit_text, source_files

__all__ = [
    "TEXT_LIMIT",
    "error_reply_state",
    "interpret_tool_result",
    "ready_state",
]

_TOOL_ERROR_CHARS = 200


def ready_state(text: str) -> dict[str, Any]:
    """The `ready` object for the child's full text, capped per SPEC §5: `files` names the
    files whose source survives the cut."""
    kept, truncated = fit_text(text, TEXT_LIMIT)
    return {"state": "ready", "text": kept, "truncated": truncated, "files": source_files(kept)}


def _text_of(result: dict[str, Any]) -> str | None:
    content = result.get("content")
    if not isinstance(content, list):
        return None
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(parts)


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= _TOOL_ERROR_CHARS else line[: _TOOL_ERROR_CHARS - 1] + "…"


def interpret_tool_result(result: dict[str, Any]) -> dict[str, Any] | None:
    """The `codeGraph` object for a `tools/call` result, or None when its shape is unusable
    (no content list; or, for an answer, no text: a ready answer never has an empty `text`).

    `isError: true` becomes `codegraph_tool_error` carrying the first line of the child's text
    (CodeGraph's error texts are one-line messages, never source).
    """
    text = _text_of(result)
    if text is None:
        return None
    if result.get("isError") is True:
        detail = _first_line(text) or "no message"
        return error_state("codegraph_tool_error", f"CodeGraph reported an error: {detail}")
    if not text.strip():
        return None
    return ready_state(text)


def error_reply_state(error: dict[str, Any]) -> dict[str, Any]:
    """The `codeGraph` object for a JSON-RPC error answer to our `tools/call`."""
    message = error.get("message")
    detail = _first_line(message) if isinstance(message, str) and message.strip() else "no message"
    return error_state("codegraph_tool_error", f"CodeGraph rejected the call: {detail}")
