"""Turn a `codegraph_explore` tool result into the SPEC §2.1 `codeGraph` object.

Sans-IO. CodeGraph 1.6.1 renders explore output as Markdown in which every per-file source
section starts with a line `` **`<path>`** `` (optionally followed by ` — <symbols>`); its own
truncation keys off that same prefix (mcp/tools.js FILE_SECTION_PREFIX), and source lines inside
sections are line-numbered (`12\\t...`), so no other line starts with it.
"""

from __future__ import annotations

import re
from typing import Any

from lwc_trio.codegraph.index import error_state
from lwc_trio.protocol.units import cost

__all__ = [
    "TEXT_LIMIT",
    "cut_text",
    "error_reply_state",
    "fit_state",
    "interpret_tool_result",
    "ready_state",
    "section_files",
]

TEXT_LIMIT = 15_000
_SECTION = re.compile(r"^\*\*`([^`\n]+)`\*\*", re.MULTILINE)
_TOOL_ERROR_CHARS = 200


def section_files(text: str) -> list[str]:
    """The file paths of the sections in `text`, in order, each once."""
    seen: dict[str, None] = {}
    for match in _SECTION.finditer(text):
        seen.setdefault(match.group(1), None)
    return list(seen)


def cut_text(text: str, limit: int = TEXT_LIMIT) -> tuple[str, bool]:
    """`(text, False)` when it fits in `limit` characters, else `(prefix, True)`.

    The prefix ends at the last file-section boundary (the start of a section header line) at or
    below `limit`; with no such boundary, after the last line break at or below it; with no line
    break either, at exactly `limit` characters. Characters are code points.
    """
    if len(text) <= limit:
        return text, False
    boundary = 0
    for match in _SECTION.finditer(text, 0, limit + 1):
        # A header at offset 0 is no boundary: cutting there would return nothing.
        if 0 < match.start() <= limit:
            boundary = match.start()
    if boundary == 0:
        newline = text.rfind("\n", 0, limit)
        boundary = newline + 1 if newline >= 0 else limit
    return text[:boundary], True


def ready_state(text: str) -> dict[str, Any]:
    """The `ready` object for the child's full text, capped per SPEC §5."""
    kept, truncated = cut_text(text)
    return {"state": "ready", "text": kept, "truncated": truncated, "files": section_files(kept)}


def _longest(text: str, cuts: list[int], room: int) -> str:
    """The longest `text[:cut]` of the ascending `cuts` whose JSON string costs at most
    `room` units ("" when none does); the cost grows with the prefix, so bisection."""
    lo, hi = 0, len(cuts)
    while lo < hi:
        mid = (lo + hi) // 2
        if cost(text[: cuts[mid]]) + 2 <= room:
            lo = mid + 1
        else:
            hi = mid
    return text[: cuts[lo - 1]] if lo else ""


def fit_state(state: dict[str, Any], room: int) -> dict[str, Any]:
    """A `ready` object whose `text` costs at most `room` units as a JSON string
    (`passages.cost`), cut never mid-line: at the last file section that fits, unless that
    keeps less than half the room (a long file section next) — then at the last line that
    fits, inside that section. `truncated` and `files` follow. Nothing fits: empty text."""
    text: str = state["text"]
    if cost(text) + 2 <= room:
        return state
    sections = [m.start() for m in _SECTION.finditer(text) if m.start() > 0]
    kept = _longest(text, sections, room)
    if cost(kept) + 2 < room // 2:
        lines = [m.end() for m in re.finditer(r"\n", text) if m.end() < len(text)]
        kept = max(kept, _longest(text, lines, room), key=len)
    return {"state": "ready", "text": kept, "truncated": True, "files": section_files(kept)}


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
    """The `codeGraph` object for a `tools/call` result, or None when its shape is unusable.

    `isError: true` becomes `codegraph_tool_error` carrying the first line of the child's text
    (CodeGraph's error texts are one-line messages, never source).
    """
    text = _text_of(result)
    if text is None:
        return None
    if result.get("isError") is True:
        detail = _first_line(text) or "no message"
        return error_state("codegraph_tool_error", f"CodeGraph reported an error: {detail}")
    return ready_state(text)


def error_reply_state(error: dict[str, Any]) -> dict[str, Any]:
    """The `codeGraph` object for a JSON-RPC error answer to our `tools/call`."""
    message = error.get("message")
    detail = _first_line(message) if isinstance(message, str) and message.strip() else "no message"
    return error_state("codegraph_tool_error", f"CodeGraph rejected the call: {detail}")
