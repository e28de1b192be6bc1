"""Link extraction from Page bodies at write time (SPEC §4).

Recognised: `[[slug]]`, `[[slug|alias]]`, `[[slug#fragment]]` and Markdown links whose target is
a `*.md` file (not a URL), inline or by a reference definition (`[text](dir/other.md#part)`,
or a line `[o]: dir/other.md`, used or not) → `other`: the file's name, as LWC records it, or
for an `index.md` or `README.md` its folder's, as a documentation site names it
(`../book/index.md` → `book`, not this Wiki's `index`); a folder import names the file by its
path instead (`resolve`). Nothing inside fenced code
blocks or inline code spans counts: code samples that mention `[[x]]` are not links.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from urllib.parse import unquote

from lwc_trio.memory.format.slugs import is_valid_slug

__all__ = ["INDEX_STEMS", "extract_links", "page_name", "strip_code"]

INDEX_STEMS = frozenset({"index", "readme"})
"""File stems (case-insensitive) that stand for their folder, as on a documentation site."""

_FENCE_LINE = re.compile(r"\n[ \t]{0,3}(`{3,}|~{3,})[^\n]*")
"""A line that opens or closes a fence, with the newline before it (a literal first
character lets the search skip ahead: `^` in MULTILINE mode is tried at every position)."""
_TICKS = re.compile(r"`+")
"""A backtick string: an inline code span opens with one and closes with the next one of
the same length on its line (`_blank_spans`)."""
_WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
# `[text](target)` or `[text](<target>)`, optionally followed by a title. Linear (issue 36,
# item 8): no part runs over a `](` (`\](?!\()` is a `]` that starts none), so an attempt
# stops at the next link's start instead of scanning to the end of a body of `](a`
# repeated; and every run is possessive, since none could give anything back to what
# follows it (a title's run of spaces was otherwise retried against `\s*` one by one).
_MDLINK = re.compile(
    r"\]\(\s*+(?:<((?:[^>\n\]]|\](?!\())*+)>|((?:[^)\s\]]|\](?!\())++))"
    r"(?:\s++[\"'(](?:[^)\n\]]|\](?!\())*+)?\s*\)"
)
_MDDEF = re.compile(r"\n[ ]{0,3}\[(?!\^)(?:[^\]\n\\]|\\.)++\]:[ \t]*+(?:<([^>\n]*+)>|(\S++))")
"""A link reference definition (`[label]: target`, `[label]: <target> "title"`; not a
footnote's `[^1]:`), at the start of a line (the text is searched with a newline before
it). Linear: an attempt starts only at a line's start and runs to its end at most, every
run possessive."""
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def strip_code(markdown: str) -> str:
    """`markdown` with fenced blocks and inline code spans blanked out (same line count).

    Line by line, the rule is: a line opening a fence, the fenced lines and the line
    closing it become empty; on the other lines every inline code span becomes a space.
    It is applied to the whole text at once: only the lines that may open or close a fence
    are visited (`_FENCE_LINE`), a fenced block is replaced by its newlines, and the text
    between blocks has its spans blanked by one substitution that never crosses a line."""
    if "`" not in markdown and "~" not in markdown:
        return markdown  # no fence, no code span: nothing to blank
    text = "\n" + markdown  # every line follows a newline, the first one too
    pieces: list[str] = []
    at = 1  # where the text not handled yet begins (a line's start)
    fence: str | None = None
    opened = 1
    for match in _FENCE_LINE.finditer(text):
        marker = match.group(1)
        if fence is None:
            pieces.append(_blank_spans(text[at : match.start() + 1]))
            fence, opened = marker, match.start() + 1
            continue
        # A fence closes with the same character, at least as long, nothing after it.
        line = match.group(0).strip()
        if marker[0] == fence[0] and len(line) >= len(fence) and not line.lstrip(fence[0]):
            pieces.append("\n" * text.count("\n", opened, match.end()))
            fence, at = None, match.end()
    if fence is None:
        pieces.append(_blank_spans(text[at:]))
    else:  # never closed: fenced to the end
        pieces.append("\n" * text.count("\n", opened))
    return "".join(pieces)


def _blank_spans(text: str) -> str:
    """`text` with every inline code span made one space: a backtick string (a run of n
    backticks) opens one, which the next run of exactly n backticks on the same line
    closes (CommonMark's rule, within a line); a run that nothing closes is plain text.

    Linear: each run is paired through one right-to-left pass (a regular expression with
    a back-reference retried every shorter closing at every backtick: a line of backticks
    took cubic time)."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text)]
    if len(runs) < 2:
        return text
    lines: list[int] = []
    line = previous = 0
    for start, end in runs:
        line += text.count("\n", previous, start)
        lines.append(line)
        previous = end
    closer: list[int | None] = [None] * len(runs)
    latest: dict[tuple[int, int], int] = {}
    for i in range(len(runs) - 1, -1, -1):
        key = (lines[i], runs[i][1] - runs[i][0])
        closer[i] = latest.get(key)
        latest[key] = i
    pieces: list[str] = []
    at, i = 0, 0
    while i < len(runs):
        j = closer[i]
        if j is None:
            i += 1
            continue
        pieces += [text[at : runs[i][0]], " "]
        at, i = runs[j][1], j + 1
    pieces.append(text[at:])
    return "".join(pieces)


def _wikilink_target(inner: str) -> str:
    target = inner.split("|", 1)[0].split("#", 1)[0]
    return target.strip()


def _markdown_path(target: str) -> str | None:
    """The file path a Markdown link's target names (query and fragment left out), if it
    names a `*.md` file (not a URL)."""
    if _SCHEME.match(target) or target.startswith(("#", "//")):
        return None
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not path.rstrip("/").lower().endswith(".md"):
        return None
    return path.rstrip("/")


def page_name(path: str) -> str:
    """The name a Markdown file at `path` gives its Page: the file's without `.md`, or, for an
    index or README file, its folder's (when the path names one: not `.` or `..`)."""
    parts = path.split("/")
    name = parts[-1]
    stem = name[: -len(".md")] if name.lower().endswith(".md") else name
    folder = parts[-2] if len(parts) > 1 else ""
    return folder if stem.lower() in INDEX_STEMS and folder not in ("", ".", "..") else stem


def extract_links(
    markdown: str,
    *,
    own_slug: str | None = None,
    resolve: Callable[[str], str | None] | None = None,
) -> list[str]:
    """Distinct valid target slugs linked from `markdown`, sorted; self-links dropped.

    A Markdown link to a `*.md` file names the file's name less `.md`; with `resolve`, the
    slug `resolve(path)` gives for the path as written, and no link when it gives None (a
    folder import: the Page of the file the link reaches in the folder, if any)."""
    text = strip_code(markdown)
    found: set[str] = set()
    for match in _WIKILINK.finditer(text):
        found.add(_wikilink_target(match.group(1)))
    targets = itertools.chain(_MDLINK.finditer(text), _MDDEF.finditer("\n" + text))
    for match in targets:
        path = _markdown_path(match.group(1) if match.group(1) is not None else match.group(2))
        if path is None:
            continue
        slug = page_name(path) if resolve is None else resolve(path)
        if slug is not None:
            found.add(slug)
    found.discard(own_slug or "")
    return sorted(slug for slug in found if is_valid_slug(slug))
