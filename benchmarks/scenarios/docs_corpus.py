"""The documentation QA set of the `docs` benchmark: its pages and questions, and Markdown cut
into sections and paragraphs the way the set's README says (its `check_questions.py` rules).

A section starts at an ATX heading outside code fences (`#` to `######`, up to three spaces of
indent; trailing `#`s and a trailing `{#anchor}` / `{ #anchor }` attribute list are not part of
its heading text) and runs to the next one; the text before the first heading is a section too.
A question's gold section is the first section with its heading text, with its subsections.
Paragraphs are the blank-line blocks of a section's text under its heading line, a fenced
block kept whole. Pure; every pattern here runs in linear time (no nested quantifiers).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import attrs

_HEADING: Final = re.compile(r" {0,3}(#{1,6})[ \t]+(\S.*)")
_FENCE: Final = re.compile(r" {0,3}(`{3,}|~{3,})")


@attrs.frozen
class Page:
    slug: str
    title: str
    body: str


@attrs.frozen
class Question:
    qid: str
    text: str
    slug: str
    """The gold page."""
    section: str
    """The gold section's heading text."""
    spans: tuple[str, ...]
    kind: str
    also: tuple[str, ...] = ()
    """Pages that answer equally well (page@k only)."""

    @property
    def pages(self) -> frozenset[str]:
        """The pages that count as a hit for page@k."""
        return frozenset((self.slug, *self.also))


@attrs.frozen
class Chunk:
    """A section or a paragraph of a page: where it lies in the body and what it is."""

    slug: str
    title: str
    order: int
    """Its place among its page's chunks (document order, from 0)."""
    start: int
    end: int
    """Offsets of its text in the page body (trailing blank lines left out)."""
    head: int
    """Characters of its own heading line at its start (0 for a paragraph or a preamble)."""
    level: int
    """Its heading's level (0 for the text before the first heading and for a paragraph)."""
    path: tuple[str, ...]
    """Heading texts from the outermost ancestor down to its own section's heading."""
    last: bool
    """It is its page's last chunk (nothing follows it)."""


def load(folder: Path) -> tuple[list[Page], list[Question]]:
    """`folder/pages.jsonl` and `folder/questions.jsonl`, in file order."""
    pages = [Page(row["slug"], row["title"], row["body"]) for row in _rows(folder / "pages.jsonl")]
    questions = [
        Question(
            row["id"], row["question"], row["slug"], row["section"], tuple(row["spans"]),
            row["kind"], tuple(row.get("also", ())),
        )
        for row in _rows(folder / "questions.jsonl")
    ]  # fmt: skip
    return pages, questions


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"{path}:{number}: not a JSON line ({exc})") from None


def collapse(text: str) -> str:
    """Whitespace runs as one space, ends trimmed, case kept (how spans are compared)."""
    return " ".join(text.split())


def strip_anchor(text: str) -> str:
    """`text` without a trailing `{#id}` / `{ #id .class }` attribute list."""
    text = text.rstrip()
    if not text.endswith("}"):
        return text
    inner = text[:-1]
    at = inner.rfind("}") + 1  # the list holds no `}`: it starts after the last one
    while (at := inner.find("{", at)) >= 0:
        if inner[at + 1 :].lstrip().startswith("#"):
            return text[:at].rstrip()
        at += 1
    return text


def heading(line: str) -> tuple[int, str] | None:
    """(level, heading text) of an ATX heading line, else None."""
    match = _HEADING.fullmatch(line.rstrip("\r\n"))
    if match is None:
        return None
    raw = match.group(2)
    return len(match.group(1)), strip_anchor(raw.rstrip(" \t#") or raw[:1])


class _Fences:
    """Tracks whether a line lies in a fenced code block (CommonMark's closing rule)."""

    def __init__(self) -> None:
        self.open = ""

    def step(self, line: str) -> bool:
        """Whether `line` is a fence line (opening or closing); updates the state."""
        match = _FENCE.match(line)
        if match is None:
            return False
        mark = match.group(1)
        if not self.open:
            self.open = mark
        elif (
            mark[0] == self.open[0]
            and len(mark) >= len(self.open)
            and not line.strip()[len(mark) :].strip()
        ):
            self.open = ""
        return True


def sections(page: Page) -> list[Chunk]:
    """The page cut at every ATX heading outside code fences, blank sections left out."""
    cuts: list[tuple[int, int, str]] = []  # (offset, level, heading text)
    fences = _Fences()
    pos = 0
    for line in page.body.splitlines(keepends=True):
        found = None if fences.step(line) or fences.open else heading(line)
        if found is not None:
            cuts.append((pos, *found))
        pos += len(line)
    if not cuts or cuts[0][0] > 0:
        cuts.insert(0, (0, 0, ""))
    out: list[Chunk] = []
    stack: list[tuple[int, str]] = []
    for i, (start, level, text) in enumerate(cuts):
        end = cuts[i + 1][0] if i + 1 < len(cuts) else len(page.body)
        if level:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
        chunk_text = page.body[start:end].rstrip()
        if not chunk_text.strip():
            continue
        head = len(page.body[start:end].split("\n", 1)[0]) if level else 0
        path = tuple(t for _, t in stack)
        out.append(
            Chunk(page.slug, page.title, len(out), start, start + len(chunk_text), head,
                  level, path, False)
        )  # fmt: skip
    if out:
        out[-1] = attrs.evolve(out[-1], last=True)
    return out


def paragraphs(page: Page, cut: list[Chunk] | None = None) -> list[Chunk]:
    """The blank-line paragraphs of each section (heading lines are not paragraphs; a fenced
    block, blank lines inside included, stays in one paragraph)."""
    out: list[Chunk] = []
    for section in sections(page) if cut is None else cut:
        text = page.body[section.start : section.end]
        pos = section.head
        fences = _Fences()
        start = -1
        for line in text[section.head :].splitlines(keepends=True):
            fence = fences.step(line)
            if not line.strip() and not fences.open and not fence:
                if start >= 0:
                    out.append(_paragraph(page, section, section.start + start,
                                          section.start + pos, len(out)))  # fmt: skip
                    start = -1
            elif start < 0:
                start = pos
            pos += len(line)
        if start >= 0:
            out.append(_paragraph(page, section, section.start + start, section.start + pos,
                                  len(out)))  # fmt: skip
    if out:
        out[-1] = attrs.evolve(out[-1], last=True)
    return out


def _paragraph(page: Page, section: Chunk, start: int, end: int, order: int) -> Chunk:
    end = start + len(page.body[start:end].rstrip())
    return Chunk(page.slug, page.title, order, start, end, 0, 0, section.path, False)


def text_of(page: Page, chunk: Chunk) -> str:
    return page.body[chunk.start : chunk.end]


def gold_section(page: Page, name: str) -> str | None:
    """The text of the first section of `page` headed `name`, its subsections included."""
    cut = sections(page)
    for i, chunk in enumerate(cut):
        if chunk.level and chunk.path[-1] == name:
            end = chunk.end
            for later in cut[i + 1 :]:
                if later.level and later.level <= chunk.level:
                    break
                end = later.end
            return page.body[chunk.start : end]
    return None
