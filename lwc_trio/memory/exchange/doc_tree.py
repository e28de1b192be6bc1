"""Pages from a folder of Markdown files, as a documentation site names them (SPEC §7).

`lwc page import DIR` reads a real documentation tree (MkDocs, mdBook, Docusaurus, a wiki
folder) in one command:

- **slug**: the front matter's `slug`, else the file's path relative to DIR without `.md`,
  lowercased, each run of characters that are not letters or digits as one `-`, with a file
  named `index.md` or `README.md` standing for its folder — `guide/install.md` →
  `guide-install`, `guide/index.md` and `guide/README.md` → `guide`, `Getting Started.md` →
  `getting-started` (the root `index.md` stays `index`). A name with no letter or digit makes
  no slug: that file is skipped and listed.
- **title**: the front matter's `title`, else the first ATX heading outside code fences with
  its attribute list (`{ #id }`, `{#id .class}`, `{: .class }`) removed, else the file name
  (an index or README file: its folder's name).
- **links**: a Markdown link to a `*.md` file names the Page of the file it reaches in the
  folder (`[config](../reference/config.md)` from `guide/install.md` → `reference-config`; a
  path starting with `/` is taken from the folder's root), so a tree's own links join its
  Pages; a link to a file the folder does not hold (outside it, or missing) is no link: its
  file name would name no Page, or the wrong one (another book's `index.md` is not this
  tree's `index`).
- **kind**, **summary**, **sources**, **provenance** and the dates: the front matter's, when it
  has them (so an `lwc export` folder imports as well); a `description` stands in for a missing
  `summary`. Every other front matter key (a site generator's `id`, `sidebar_label`, `hide`...)
  is ignored.

Front matter is YAML; lwc reads the subset documentation uses for these keys — one `key: value`
line each, the value plain, single- or double-quoted, a JSON value (lwc's own export writes
those), or a `|` / `>` block — and skips the lines of any other structure. Everything here is
plain string work, linear in the text.
"""

from __future__ import annotations

import json
import posixpath
import unicodedata
from collections.abc import Iterator, Sequence

import attrs

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.exchange.transfer import PAGE_KEYS, page_from_mapping
from lwc_trio.memory.index.inputs import PageInput
from lwc_trio.memory.text.links import INDEX_STEMS, extract_links, page_name
from lwc_trio.memory.text.markdown import first_heading

__all__ = ["INDEX_STEMS", "page_from_markdown", "path_slug", "split_front_matter", "tree_links"]

_FENCE = "---"
_PAGE_FIELDS = frozenset(PAGE_KEYS) - {"links"}
"""The front matter keys a documentation file's Page takes: an export's, but `links`, which a
site generator's front matter may use for its own ends; the body's links are resolved."""
_TEXT_FIELDS = frozenset({"slug", "title", "kind", "summary"})


def path_slug(relative: str) -> str:
    """The slug a file at `relative` (POSIX, below the imported folder) gets; "" for a name
    that has no letter or digit."""
    parts = relative.split("/")
    stem = parts[-1].removesuffix(".md")
    if stem.lower() in INDEX_STEMS and len(parts) > 1:
        parts = parts[:-1]
    else:
        parts[-1] = stem
    text = unicodedata.normalize("NFC", "-".join(parts)).lower()
    words: list[str] = []
    word: list[str] = []
    for ch in text:
        if ch.isalnum():
            word.append(ch)
        elif word:
            words.append("".join(word))
            word = []
    if word:
        words.append("".join(word))
    return "-".join(words)


# ------------------------------------------------------------------------- front matter


def split_front_matter(text: str) -> tuple[str | None, str]:
    """`(front matter, body)`: the YAML between a first line `---` and the next `---` line,
    or None (and the whole text) when the file does not start with one."""
    if not text.startswith(_FENCE + "\n") and not text.startswith(_FENCE + "\r\n"):
        return None, text
    at = text.index("\n") + 1
    while at < len(text):
        end = text.find("\n", at)
        line = text[at : len(text) if end < 0 else end].rstrip("\r")
        if line in (_FENCE, "..."):
            return text[text.index("\n") + 1 : at], text[len(text) if end < 0 else end + 1 :]
        if end < 0:
            break
        at = end + 1
    return None, text  # never closed: not front matter, the body as it is


_JSON = json.JSONDecoder()


def _single_quoted(value: str) -> tuple[str, str] | None:
    """`(text, what follows)` of a YAML single-quoted scalar (`''` is a quote), or None."""
    at = 1
    while at < len(value):
        if value[at] == "'":
            if value[at + 1 : at + 2] != "'":
                return value[1:at].replace("''", "'"), value[at + 1 :]
            at += 1
        at += 1
    return None


def _scalar(raw: str) -> object:
    """One YAML value written on its key's line: JSON (lwc's export, double-quoted YAML),
    single-quoted, or plain (a ` #` starts a comment, after a quoted value too)."""
    value = raw.strip()
    if not value:
        return None
    quoted: tuple[object, str] | None = None
    if value.startswith("'"):
        quoted = _single_quoted(value)
    else:
        try:
            decoded, end = _JSON.raw_decode(value)
            quoted = decoded, value[end:]
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
            pass
    if quoted is not None:
        rest = quoted[1].strip()
        if not rest or rest.startswith("#"):
            return quoted[0]
    cut = value.find(" #")
    return value[:cut].rstrip() if cut >= 0 else value


def _block(lines: list[str], style: str) -> str:
    """A `|` (literal) or `>` (folded) block scalar from its indented lines."""
    indents = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    cut = min(indents, default=0)
    kept = [line[cut:] for line in lines]
    return ("\n".join(kept) if style.startswith("|") else " ".join(k for k in kept if k)).strip()


def _entries(yaml: str) -> Iterator[tuple[str, str, list[str]]]:
    """`(key, value on the key's line, indented lines below it)` of each top-level key."""
    key: str | None = None
    value = ""
    below: list[str] = []
    for line in yaml.splitlines():
        if line[:1] in (" ", "\t", "-") or not line.strip() or line.startswith("#"):
            if key is not None:
                below.append(line)
            continue
        if key is not None:
            yield key, value, below
        name, sep, rest = line.partition(":")
        key, value, below = (name.strip(), rest, []) if sep else (None, "", [])
    if key is not None:
        yield key, value, below


def front_matter_fields(yaml: str) -> dict[str, object]:
    """The top-level keys of a YAML front matter whose value lwc can read (see the module
    docstring); a key whose value is a structure (a nested map, a list written as lines) maps
    to None."""
    fields: dict[str, object] = {}
    for key, value, below in _entries(yaml):
        style = value.strip()
        if style[:1] in ("|", ">"):
            fields[key] = _block(below, style)
        elif any(line.strip() for line in below):
            fields[key] = None if not style else _scalar(value)
        else:
            fields[key] = _scalar(value)
    return fields


# --------------------------------------------------------------------------------- pages


def _as_text(key: str, value: object) -> object:
    """A YAML number written where a string belongs (`title: 404`) as the text it was."""
    if key in _TEXT_FIELDS and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def page_from_markdown(text: str, *, name: str, relative: str) -> PageInput:
    """A Page from one Markdown file of a folder import (module docstring): `relative` is its
    path below the folder, `name` how messages name it. Raises `WikiError` (`invalid_import`
    for a name that makes no slug or a front matter value of the wrong type)."""
    yaml, body = split_front_matter(text)
    given = front_matter_fields(yaml) if yaml is not None else {}
    fields = {key: _as_text(key, value) for key, value in given.items() if key in _PAGE_FIELDS}
    if fields.get("summary") is None and isinstance(given.get("description"), str):
        fields["summary"] = given["description"]
    if not fields.get("slug"):
        fields["slug"] = path_slug(relative)
        if not fields["slug"]:
            raise WikiError(
                "invalid_import",
                f"{name}: its name makes no slug (no letter or digit); give it one in its front "
                'matter (`slug: "..."`)',
            )
    if not fields.get("title"):
        fields["title"] = first_heading(body) or page_name(relative)
    fields = {key: value for key, value in fields.items() if value is not None}
    return page_from_mapping({**fields, "body": body}, where=name)


# ------------------------------------------------------------------------------- links


def tree_links(found: Sequence[tuple[str, PageInput]]) -> list[PageInput]:
    """The Pages of a folder (each with its path below the folder) with their body's links
    resolved (module docstring): a `*.md` link names the Page of the file it reaches, or
    nothing."""
    slugs = {relative: page.slug for relative, page in found}

    def linked(relative: str, page: PageInput) -> PageInput:
        folder = posixpath.dirname(relative)

        def resolve(path: str) -> str | None:
            within = path.lstrip("/") if path.startswith("/") else posixpath.join(folder, path)
            return slugs.get(posixpath.normpath(within))

        links = extract_links(page.body, own_slug=page.slug, resolve=resolve)
        return attrs.evolve(page, body_links=tuple(links))

    return [linked(relative, page) for relative, page in found]
