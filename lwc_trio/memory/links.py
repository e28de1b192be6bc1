"""Link extraction from Page bodies at write time (SPEC §4).

Recognised: `[[slug]]`, `[[slug|alias]]`, `[[slug#fragment]]` and Markdown links whose target is
a relative `*.md` file (`[text](dir/other.md#part)` → `other`). Nothing inside fenced code
blocks or inline code spans counts: code samples that mention `[[x]]` are not links.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from lwc_trio.memory.slugs import is_valid_slug

__all__ = ["extract_links", "strip_code"]

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:.+?)\1", re.DOTALL)
_WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
# `[text](target)` or `[text](<target>)`, optionally followed by a title.
_MDLINK = re.compile(r"\]\(\s*(?:<([^>\n]*)>|([^)\s]+))(?:\s+[\"'(][^)\n]*)?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def strip_code(markdown: str) -> str:
    """`markdown` with fenced blocks and inline code spans blanked out (same line count)."""
    if "`" not in markdown and "~" not in markdown:
        return markdown  # no fence, no code span: nothing to blank
    kept: list[str] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        # Only a line holding a backtick or a tilde can open or close a fence or hold a span.
        marked = "`" in line or "~" in line
        opener = _FENCE.match(line) if marked else None
        if fence is None:
            if opener:
                fence = opener.group(1)
                kept.append("")
                continue
            kept.append(_INLINE_CODE.sub(" ", line) if "`" in line else line)
        else:
            # A fence closes with the same character, at least as long, nothing after it.
            closes = opener is not None and opener.group(1)[0] == fence[0]
            if closes and len(line.strip()) >= len(fence) and not line.strip().lstrip(fence[0]):
                fence = None
            kept.append("")
    return "\n".join(kept)


def _wikilink_target(inner: str) -> str:
    target = inner.split("|", 1)[0].split("#", 1)[0]
    return target.strip()


def _markdown_target(target: str) -> str | None:
    if _SCHEME.match(target) or target.startswith(("#", "//")):
        return None
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if not name.lower().endswith(".md"):
        return None
    return name[: -len(".md")]


def extract_links(markdown: str, *, own_slug: str | None = None) -> list[str]:
    """Distinct valid target slugs linked from `markdown`, sorted; self-links dropped."""
    text = strip_code(markdown)
    found: set[str] = set()
    for match in _WIKILINK.finditer(text):
        found.add(_wikilink_target(match.group(1)))
    for match in _MDLINK.finditer(text):
        slug = _markdown_target(match.group(1) if match.group(1) is not None else match.group(2))
        if slug is not None:
            found.add(slug)
    found.discard(own_slug or "")
    return sorted(slug for slug in found if is_valid_slug(slug))
