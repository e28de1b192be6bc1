"""The structure of a Markdown Page body: its sections and the blocks inside them.

A **section** is an ATX heading (outside code) and what lies under it up to the next heading;
the text before the first heading is a section too (level 0, no heading). A **block** is what
a reader keeps together: a paragraph, a list (its items, their continuation lines and the
blank lines between them), a table, a block quote, a fenced code block, a container and its
body (`/// note … ///`, `:::tip … :::`, `!!! note` / `??? note` / `=== "Tab"` with the lines
indented under it, `<div>…</div>`, `<dl>…</dl>`, `<details>…</details>`, `<table>…</table>`),
a run of link reference definitions. A block that introduces what follows (its last line ends
with `:`) is grouped with the next block (`cut_points`), so a cut never separates them.

Pure and linear: one pass over the lines, string methods and patterns that run in linear
time only (a hostile body of one 30,000-space line, or `#` runs, costs what its length
costs); every loop is bounded by the body's lines. Sans-IO: used by the read side
(passages, outlines, follow-up reads, ranking evidence) and the write side (titles) alike.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Final

import attrs

from lwc_trio.memory.format.cache import Memo

__all__ = [
    "Block",
    "Section",
    "attribute_free",
    "blocks",
    "cut_points",
    "first_heading",
    "heading",
    "introduces",
    "sections",
]

_LIST_MARKS = ("- ", "* ", "+ ", "-\t", "*\t", "+\t")
_INDENTED_CONTAINERS = ("!!!", "???", "===")
_HTML_BLOCKS = ("div", "dl", "details", "table", "pre", "section", "blockquote", "figure")


def _indent(line: str) -> int:
    """Columns of leading whitespace (a tab counts 4)."""
    width = 0
    for char in line:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def heading(line: str) -> tuple[int, str] | None:
    """`(level, text)` when `line` is an ATX heading (`## Text ##`), else None. `text` keeps its
    Markdown; the closing `#` sequence and the surrounding spaces are dropped."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or not stripped.startswith("#"):
        return None
    level = len(stripped) - len(stripped.lstrip("#"))
    rest = stripped[level:]
    if level > 6 or (rest and rest[0] not in " \t"):
        return None
    return level, _without_closing(rest.strip(" \t\r"))


def _without_closing(text: str) -> str:
    """A heading's text without its closing run of `#` (one that follows a space)."""
    closed = text.rstrip("#")
    if closed != text and (not closed or closed[-1] in " \t"):
        return closed.rstrip(" \t")
    return text


def attribute_free(text: str) -> str:
    """`text` (a heading's) without a trailing attribute list (`{#id}`, `{ #id .class }`,
    `{: #id }`), as MkDocs and mdBook headings carry them, and without a closing run of `#`
    the list hid (`## Title ## {#id}`)."""
    stripped = text.rstrip()
    if stripped.endswith("}"):
        opening = stripped.rfind("{")
        inner = stripped[opening + 1 : -1].strip() if opening >= 0 else ""
        if inner and inner[0] in "#.:" and "}" not in inner:
            return _without_closing(stripped[:opening].rstrip())
    return stripped


def first_heading(body: str) -> str | None:
    """The text of the first ATX heading of `body` outside fenced code that says anything,
    its attribute list removed; None when there is none."""
    return next((s.path[-1] for s in sections(body) if s.level and s.path[-1]), None)


def _fence(line: str) -> tuple[str, int] | None:
    """`(char, length)` when `line` opens or closes a fenced code block (any indentation:
    fences sit indented inside admonitions)."""
    stripped = line.lstrip(" \t")
    char = stripped[:1]
    if char not in ("`", "~"):
        return None
    length = len(stripped) - len(stripped.lstrip(char))
    if length < 3 or (char == "`" and "`" in stripped[length:]):
        return None
    return char, length


def _closes(line: str, fence: tuple[str, int]) -> bool:
    found = _fence(line)
    return (
        found is not None
        and found[0] == fence[0]
        and found[1] >= fence[1]
        and not line.strip(" \t\r").lstrip(fence[0])
    )


@attrs.frozen
class Section:
    """`body[start:end]`: a heading line (none for the preamble, `level` 0) and what lies
    under it; its content starts at `text`."""

    start: int
    text: int
    end: int
    level: int
    path: tuple[str, ...]
    """The headings above it and its own (attribute lists dropped), outermost first."""


def _lines(body: str) -> Iterator[tuple[int, str]]:
    """Each line of `body` with its offset (its line break left off). A line ends at `\\n`,
    `\\r` or `\\r\\n`, as CommonMark has it: the other breaks `str.splitlines` knows (a
    form feed, `\\x1c`–`\\x1e`, `\\x85`, `\\u2028`, `\\u2029`) are text within a line."""
    start = pos = 0
    for piece in body.splitlines(keepends=True):
        pos += len(piece)
        if piece.endswith(("\n", "\r")) or pos == len(body):
            yield start, body[start:pos].rstrip("\r\n")
            start = pos


_FIRST_MARKED: Final = re.compile("\\A[ \t]*+[#`~]")
_MARKED_AFTER_LF: Final = re.compile("\n[ \t]*+[#`~]")
_MARKED_AFTER_CR: Final = re.compile("\r[ \t]*+[#`~]")
"""A marked line after each kind of line break: one pattern each, since a pattern that
starts with one character is found by a fast scan, and one that starts with either of two
is not."""
_LINE_END: Final = re.compile("[\n\r]")


def _marked_lines(body: str) -> Iterator[tuple[int, str]]:
    """The lines of `body` (as `_lines` gives them) whose first character after indentation
    is `#`, a backtick or `~`: every heading and fence line is one, and `sections` looks at no
    other. Found by patterns instead of a Python step per line (most of a Page's lines); in
    linear time (possessive: a run of blanks is scanned once, from the line break before it)."""
    starts = [0] if _FIRST_MARKED.match(body) else []
    for char, pattern in (("\n", _MARKED_AFTER_LF), ("\r", _MARKED_AFTER_CR)):
        if char in body:
            starts += [found.start() + 1 for found in pattern.finditer(body)]
    starts.sort()
    for start in starts:
        end = _LINE_END.search(body, start)
        yield start, body[start : end.start() if end else len(body)]


def _sections(body: str) -> tuple[Section, ...]:
    """The sections of `body` in document order; the preamble only when it holds text."""
    found: list[tuple[int, int, int, str]] = []  # (start, text start, level, title)
    fence: tuple[str, int] | None = None
    for pos, line in _marked_lines(body):
        if fence is not None:
            if _closes(line, fence):
                fence = None
            continue
        fence = _fence(line)
        if fence is not None:
            continue
        head = heading(line)
        if head is not None:
            after = pos + len(line)
            after += 2 if body.startswith("\r\n", after) else 1 if after < len(body) else 0
            found.append((pos, after, head[0], attribute_free(head[1])))
    out: list[Section] = []
    first = found[0][0] if found else len(body)
    if body[:first].strip():
        out.append(Section(0, 0, first, 0, ()))
    path: list[tuple[int, str]] = []
    for index, (start, text, level, title) in enumerate(found):
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        end = found[index + 1][0] if index + 1 < len(found) else len(body)
        out.append(Section(start, min(text, end), end, level, tuple(t for _l, t in path)))
    return tuple(out)


@attrs.frozen
class Block:
    """`body[start:end]`, one block (trailing blank lines excluded)."""

    start: int
    end: int
    kind: str
    """`paragraph`, `list`, `table`, `quote`, `code`, `container`, `html`, `references`."""


def _html_tag(stripped: str) -> str | None:
    if not stripped.startswith("<"):
        return None
    words = stripped[1:].split(">", 1)[0].split(None, 1)
    name = words[0].rstrip("/").lower() if words else ""
    return name if name in _HTML_BLOCKS else None


def _closers(lines: Sequence[str], mark: str) -> dict[int, list[int]]:
    """For `mark` (`:` or `/`): the indexes of the lines made only of 3 or more of it, by
    their length (the closing lines of `:::` and `///` containers)."""
    found: dict[int, list[int]] = {}
    for index, line in enumerate(lines):
        stripped = line.strip()
        if len(stripped) >= 3 and not stripped.strip(mark):
            found.setdefault(len(stripped), []).append(index)
    return found


def _is_list_item(stripped: str) -> bool:
    if stripped.startswith(_LIST_MARKS):
        return True
    digits = len(stripped) - len(stripped.lstrip("0123456789"))
    return 0 < digits <= 9 and stripped[digits : digits + 2] in (". ", ") ", ".\t", ")\t")


def _is_reference(stripped: str) -> bool:
    """A link reference definition: `[label]: target`."""
    if not stripped.startswith("[") or stripped.startswith("[^"):
        return False
    close = stripped.find("]:", 1)
    return close > 1 and "]" not in stripped[1:close]


class _Scanner:
    """One pass over a section's lines, block by block (`blocks`)."""

    def __init__(self, lines: Sequence[str], offsets: Sequence[int]) -> None:
        self.lines = lines
        self.offsets = offsets
        self.colons = _closers(lines, ":")
        self.slashes = _closers(lines, "/")

    def _blank(self, index: int) -> bool:
        return not self.lines[index].strip()

    def _next_text(self, index: int) -> int:
        """The first non-blank line at or after `index` (len(lines) when none)."""
        while index < len(self.lines) and self._blank(index):
            index += 1
        return index

    def _closing(self, closers: dict[int, list[int]], size: int, index: int) -> int | None:
        candidates = closers.get(size, [])
        at = bisect.bisect_right(candidates, index)
        return candidates[at] if at < len(candidates) else None

    def block(self, index: int) -> tuple[int, str]:
        """The index after the block starting at line `index` (not blank), and its kind."""
        lines = self.lines
        line = lines[index]
        stripped = line.strip()
        fence = _fence(line)
        if fence is not None:
            end = index + 1
            while end < len(lines) and not _closes(lines[end], fence):
                end += 1
            return min(end + 1, len(lines)), "code"
        for mark, closers in ((":", self.colons), ("/", self.slashes)):
            size = len(stripped) - len(stripped.lstrip(mark))
            if size >= 3 and stripped[size:].strip():
                closing = self._closing(closers, size, index)
                if closing is not None:
                    return closing + 1, "container"
        if stripped.startswith(_INDENTED_CONTAINERS) and _indent(line) < 4:
            return self._indented(index), "container"
        tag = _html_tag(stripped)
        if tag is not None:
            return self._html(index, tag), "html"
        if _is_list_item(stripped) and _indent(line) < 4:
            return self._list(index), "list"
        if stripped.startswith(">"):
            return self._run(index, lambda _line: True), "quote"  # lazy lines go on
        if stripped.startswith("|"):
            return self._run(index, lambda line: "|" in line), "table"
        if _is_reference(stripped):
            return self._run(index, lambda line: _is_reference(line.strip())), "references"
        return self._run(index, _continues_paragraph), "paragraph"

    def _indented(self, index: int) -> int:
        """An admonition or content tab: its line and every line indented under it (blank
        lines inside included); tabs that follow each other are one block."""
        end = index + 1
        lines = self.lines
        while end < len(lines):
            following = self._next_text(end)
            if following < len(lines) and _indent(lines[following]) >= 4:
                end = following + 1
            elif following < len(lines) and lines[following].lstrip().startswith("=== "):
                if not lines[index].lstrip().startswith("=== "):
                    break
                end = following + 1
            else:
                break
        return end

    def _html(self, index: int, tag: str) -> int:
        depth = 0
        lines = self.lines
        end = index
        opening, closing = f"<{tag}", f"</{tag}"
        while end < len(lines):
            low = lines[end].lower()
            depth += low.count(opening) - low.count(closing)  # `<dl` is no part of `</dl`
            end += 1
            if depth <= 0:
                break
        return end

    def _list(self, index: int) -> int:
        lines = self.lines
        end = index + 1
        while end < len(lines):
            line = lines[end]
            stripped = line.strip()
            if not stripped:
                following = self._next_text(end)
                if following < len(lines) and (
                    _indent(lines[following]) >= 2 or _is_list_item(lines[following].strip())
                ):
                    end = following
                    continue
                break
            # A lazy continuation line belongs to the item; another block kind ends the list.
            if (
                _indent(line) < 2
                and not _is_list_item(stripped)
                and (_fence(line) is not None or stripped.startswith((">", "|", "<")))
            ):
                break
            end += 1
        return end

    def _run(self, index: int, same: Callable[[str], bool]) -> int:
        """The lines after `index` that are `same` (given the whole line), up to a blank one."""
        lines = self.lines
        end = index + 1
        while end < len(lines) and lines[end].strip() and same(lines[end]):
            end += 1
        return end


def _continues_paragraph(line: str) -> bool:
    """Whether `line` (not blank) goes on with the paragraph above it: no fence, list item,
    quote, table, admonition or HTML block starts there."""
    if _fence(line) is not None:
        return False
    stripped = line.strip()
    return _indent(line) >= 4 or not (
        _is_list_item(stripped)
        or stripped.startswith((">", "|", "!!!", "???", "=== "))
        or _html_tag(stripped) is not None
    )


def _blocks(text: str) -> tuple[Block, ...]:
    """The blocks of `text` (a section's content), in order; offsets are into `text`."""
    lines: list[str] = []
    offsets: list[int] = []
    for pos, line in _lines(text):
        lines.append(line)
        offsets.append(pos)
    scanner = _Scanner(lines, offsets)
    out: list[Block] = []
    index = scanner._next_text(0)
    while index < len(lines):
        after, kind = scanner.block(index)
        after = max(after, index + 1)
        last = after - 1
        while last > index and not lines[last].strip():
            last -= 1
        out.append(Block(offsets[index], offsets[last] + len(lines[last]), kind))
        index = scanner._next_text(after)
    return tuple(out)


PARSED_MAX = 64
"""Bodies (and section texts) whose sections (and blocks) are kept, at most."""
PARSED_BUDGET = 16 * 2**20
"""Bytes the kept sections, and apart from them the kept blocks, take at most, as estimated
(`SECTION_BYTES`, `BLOCK_BYTES`, the text they were found in): a Page of one-line sections
parses into a hundred times its size."""
SECTION_BYTES = 512
"""A `Section` and its heading path, at most (its headings' own text is counted with the
body's: each heading is one string, shared by the paths below it)."""
BLOCK_BYTES = 160
"""A `Block`, at most."""


def _sections_weight(body: str, found: tuple[Section, ...]) -> int:
    return 2 * sys.getsizeof(body) + SECTION_BYTES * len(found)


def _blocks_weight(text: str, found: tuple[Block, ...]) -> int:
    return sys.getsizeof(text) + BLOCK_BYTES * len(found)


sections: Memo[str, tuple[Section, ...]] = Memo(
    _sections, PARSED_MAX, PARSED_BUDGET, _sections_weight
)
blocks: Memo[str, tuple[Block, ...]] = Memo(_blocks, PARSED_MAX, PARSED_BUDGET, _blocks_weight)


def cut_points(text: str) -> tuple[int, ...]:
    """Where `text` (a section's content) may be cut: after each group of blocks, a block
    that introduces the next (its text ends with `:`) grouped with it. Ascending; the last is
    the end of the last block."""
    found = blocks(text)
    points: list[int] = []
    for index, block in enumerate(found):
        if index + 1 < len(found) and introduces(text, block):
            continue
        points.append(block.end)
    return tuple(points)


def introduces(text: str, block: Block) -> bool:
    """Whether `block` (of `text`) introduces what follows it: prose (a paragraph, a list, a
    quote) whose last line ends with one `:` (a container's closing `:::` does not)."""
    if block.kind not in ("paragraph", "list", "quote"):
        return False
    last = text[block.start : block.end].rstrip()
    return last.endswith(":") and not last.endswith("::")
