"""CodeGraph's explore text cut to a room (SPEC §5): the one rule behind both the 15,000-character
cap and the budget. Sans-IO.

It lives under `protocol/` because two layers apply it: the code plane caps the child's answer
when it shapes the `codeGraph` object (`codegraph/explore_output.py`, measured in code points),
and the result's assembly fits that object to the budget (`explore_result.fit_budget`, measured
in cost units). `protocol/` imports no plane, and the code plane already imports `protocol/`, so
the rule sits below both; it imports only `protocol.units`.

What CodeGraph 1.6.1's `codegraph_explore` sends (mcp/tools.js), top to bottom:

- the **head**: an optional call-flow section, `**Exploration: <query>**`, a summary line, then
  lists *about* the code — the blast radius (`` - `name` (file:line) — N callers ... ``), the
  relationships by kind (`**calls:**` then `- a → b` items ending `- ... and N more`), dynamic
  dispatch links or boundaries — then `**Source Code**` and a note that the source is verbatim;
- **file sections**: a header line starting `` **`<path>`** `` (its own truncation keys off that
  prefix, FILE_SECTION_PREFIX), then a fenced block of source lines CodeGraph numbers
  `N<TAB>...`, with `... (gap: names) ...` markers where it skipped some;
- an **epilogue** after the last section's closing fence: the "Not shown above" pointer list and
  notes.

`fit_text` keeps a text that fits. Otherwise, in this order (each step only as far as needed):

1. the head's lists are shortened — every bulleted run to its first 3 items, then 1, then none,
   the rest counted in CodeGraph's own `- ... and N more` line — as little as makes the whole
   text fit; when it cannot fit, source lines must go, and the lists go down to the first of
   those lengths that leaves source at least half the room (else to none);
2. the text is cut at the last **file-section boundary** that fits (a section's header; or the
   end of the last section, which drops only the epilogue) — unless that keeps no source line
   or less than half the room;
3. then at the last **line boundary** that fits, inside the next section — unless that, too,
   keeps less than half the room, or no source line while the line it stops before is one;
4. then that line is cut at a **character boundary** and `CUT_MARK` appended.

A header at offset 0 is no boundary (it would keep nothing). The result is never empty: with
no room at all it is the first character and the mark.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from lwc_trio.protocol.units import cost

__all__ = [
    "CUT_MARK",
    "LIST_CAPS",
    "TEXT_LIMIT",
    "fit_state",
    "fit_text",
    "source_files",
]

TEXT_LIMIT: Final = 15_000
"""Code points a `codeGraph` text keeps at most, whatever the budget (SPEC §5)."""
CUT_MARK: Final = "[…]"
"""Appended where a line is cut at a character boundary (the memory plane's elision mark)."""
LIST_CAPS: Final = (3, 1, 0)
"""Items each head list keeps, step by step, before source lines are dropped."""

Measure = Callable[[str], int]
"""A text's size: additive over concatenation (`len`, `units.cost`)."""

_HEADER = re.compile(r"\*\*`([^`\n]+)`\*\*")
# Not preceded by a digit: a search (not only a match at a line's start) then tries each
# run of digits once, in linear time (issue 36: every pattern meeting file text is linear).
_SOURCE = re.compile(r"(?<!\d)\d+\t")
_MORE = re.compile(r"- \.\.\. and (\d{1,9}) more")
_HEADING = re.compile(r"\*\*[^*\n]+\*\*")


def source_files(text: str) -> list[str]:
    """The paths of the file sections in `text` holding at least one source line, in order,
    each once."""
    seen: dict[str, None] = {}
    path: str | None = None
    for line in text.split("\n"):
        header = _HEADER.match(line)
        if header is not None:
            path = header.group(1)
        elif path is not None and _SOURCE.match(line):
            seen.setdefault(path, None)
    return list(seen)


def _first_header(lines: list[str]) -> int:
    """Index of the first file-section header line (len(lines) when there is none)."""
    return next((i for i, line in enumerate(lines) if _HEADER.match(line)), len(lines))


def _is_item_line(line: str, in_item: bool) -> bool:
    """A list item's first line, or (inside an item) its indented continuation."""
    return line.startswith("- ") or (in_item and line[:1] in (" ", "\t") and bool(line.strip()))


def _shorten(lines: list[str], cap: int) -> list[str]:
    """`lines` with every bulleted run cut to its first `cap` items and a `- ... and N more`
    line counting the rest (CodeGraph's own count line folded in); runs within the cap as is."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("- "):
            out.append(lines[i])
            i += 1
            continue
        start, items, hidden = i, 0, 0
        kept_end = i  # end of the first `cap` items
        while i < len(lines) and _is_item_line(lines[i], i > start):
            more = _MORE.fullmatch(lines[i])
            if more is not None:
                hidden += int(more.group(1))
            elif lines[i].startswith("- "):
                items += 1
            if more is None and items <= cap:
                kept_end = i + 1
            i += 1
        if items <= cap:
            out.extend(lines[start:i])
            continue
        out.extend(lines[start:kept_end])
        out.append(f"- ... and {items - cap + hidden} more")
    return out


def _without_lists(lines: list[str]) -> list[str]:
    """`lines` without their bulleted runs, nor the bold headings that then head nothing but
    removed lists (a group heading over them too); runs of blank lines become one."""
    in_list: list[bool] = []
    for i, line in enumerate(lines):
        in_list.append(_is_item_line(line, i > 0 and in_list[i - 1]))
    out: list[str] = []
    content = removed = False  # below this point, up to the next heading kept
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if in_list[i]:
            removed = True
            continue
        if _HEADING.fullmatch(line) is not None:
            if removed and not content:
                continue
            content = removed = False
        elif line.strip():
            content = True
        if not (line == "" and out and out[-1] == ""):
            out.append(line)
    return out[::-1]


def _epilogue_start(lines: list[str], body: int) -> int | None:
    """The line after the last file section's closing fence, when something follows it.
    Scans back from the end: the epilogue is a few lines."""
    last = next((i for i in range(len(lines) - 1, body - 1, -1) if _HEADER.match(lines[i])), None)
    if last is None:
        return None
    opener = next((i for i in range(last + 1, len(lines)) if lines[i].startswith("```")), None)
    if opener is None:
        return None
    closer = next((i for i in range(opener + 1, len(lines)) if lines[i] == "```"), None)
    return closer + 1 if closer is not None and closer + 1 < len(lines) else None


def _line_sums(lines: list[str], room: int, measure: Measure) -> list[int]:
    """Sizes of `lines[:k]` joined with their line breaks, k = 0, 1, ... up to the first that
    exceeds `room` (only the lines that can matter are measured)."""
    sums = [0]
    last = len(lines) - 1
    for i, line in enumerate(lines):
        sums.append(sums[-1] + measure(line if i == last else line + "\n"))
        if sums[-1] > room:
            break
    return sums


def _cut(lines: list[str], body: int, room: int, measure: Measure) -> str:
    """The text of `lines` cut to `room` (steps 2-4 of the module docstring); `body` is the
    index of the first file-section line."""
    sums = _line_sums(lines, room, measure)
    if sums[-1] <= room:
        return "\n".join(lines)
    whole = len(sums) - 2  # whole lines that fit; `lines[whole]` crosses the room
    sources = [0]
    for i in range(whole + 1):
        sources.append(sources[-1] + (i >= body and _SOURCE.match(lines[i]) is not None))
    any_source = sources[-1] > 0 or any(_SOURCE.match(line) for line in lines[body:])

    def enough(end: int) -> bool:
        """Keeping `lines[:end]` is at least half the room, with source when there is any."""
        return 2 * sums[end] >= room and (not any_source or sources[end] > 0)

    boundaries = [i for i in range(max(body, 1), whole + 1) if _HEADER.match(lines[i])]
    epilogue = _epilogue_start(lines, body)
    if epilogue is not None and epilogue <= whole:
        boundaries.append(epilogue)
    if boundaries and enough(boundaries[-1]):
        return "\n".join(lines[: boundaries[-1]]) + "\n"
    kept = "\n".join(lines[:whole]) + "\n" if whole else ""
    line = lines[whole]
    starved = 2 * sums[whole] < room or (
        any_source and sources[whole] == 0 and sources[whole + 1] == 1
    )
    left = room - sums[whole] - measure(CUT_MARK)
    if whole > 0 and not (starved and left >= measure(line[:1])):
        return kept
    # The longest prefix of the line that fits with the mark (at least one character).
    lo, hi = 1, len(line)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(line[:mid]) <= left:
            lo = mid
        else:
            hi = mid - 1
    return kept + line[:lo] + CUT_MARK


def fit_text(text: str, room: int, measure: Measure = len) -> tuple[str, bool]:
    """`(text, False)` when `measure(text) <= room`, else `(cut, True)` with the text cut as the
    module docstring says: head lists shortened before source lines are dropped, then at a
    file-section, line or character boundary. Deterministic; never empty for a non-empty text."""
    if measure(text) <= room:
        return text, False
    lines = text.split("\n")
    body = _first_header(lines)
    head, rest = lines[:body], lines[body:]
    variants = [head]
    for cap in LIST_CAPS:
        shorter = _shorten(head, cap) if cap else _without_lists(head)
        # A text that is nothing but lists keeps at least their shortest form.
        if shorter != variants[-1] and any(line.strip() for line in shorter + rest):
            variants.append(shorter)
    sizes = [measure("\n".join(v) + "\n") if v else 0 for v in variants]
    rest_size = measure("\n".join(rest)) if rest else -measure("\n")
    for variant, size in zip(variants[1:], sizes[1:], strict=True):
        if size + rest_size <= room:
            return "\n".join(variant + rest), True
    # Source lines must go: the lists go down until source has half the room (else all).
    fitting = (v for v, n in zip(variants[1:], sizes[1:], strict=True) if 2 * n <= room)
    chosen = next(fitting, variants[-1])
    return _cut(chosen + rest, len(chosen), room, measure), True


def fit_state(state: dict[str, Any], room: int) -> dict[str, Any]:
    """A `ready` code object whose `text`, written as a string in the text block, costs at
    most `room` units there (`text_cost(dumps(text))`, quotes included: `units.cost` + 2),
    cut by `fit_text`; `truncated` and `files` follow. The object itself when it fits."""
    kept, cut = fit_text(state["text"], room - 2, cost)
    if not cut:
        return state
    return {"state": "ready", "text": kept, "truncated": True, "files": source_files(kept)}
