"""Edit one server entry of a JSON (or JSON-with-comments) config file, byte-for-byte elsewhere.

Host config files are hand-edited and shared: re-serialising them would reorder nothing (Python
dicts keep order) but would still reformat every line, drop comments and change number spellings.
So these edits are textual. The file is parsed twice over the same offsets: comments and trailing
commas are first replaced by spaces (a "clean" copy, same length, same line numbers), `json`
validates the clean copy and yields its value, and a small scanner finds where the members of the
root object and of the server container start and end. An edit then splices only the entry's own
text (plus one comma) and leaves every other byte alone. Callers re-parse the result and compare
values, so an edit that would change anything else is caught before it is written.

Pure: strings in, strings out.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from lwc_trio.exceptions import ConfigSyntaxError, DuplicateKeyError

__all__ = [
    "COMMENTS",
    "JSONC",
    "STRICT",
    "Dialect",
    "Document",
    "fresh",
    "parse",
    "remove_member",
    "set_member",
]


@attrs.frozen
class Dialect:
    """What a host's parser accepts beyond RFC 8259 JSON."""

    comments: bool
    trailing_commas: bool


STRICT = Dialect(comments=False, trailing_commas=False)  # JSON.parse
COMMENTS = Dialect(comments=True, trailing_commas=False)  # strip-json-comments + JSON.parse
JSONC = Dialect(comments=True, trailing_commas=True)  # VS Code's jsonc parser

# Strings come first in each alternation so that `//` inside a string is never a comment.
# An unterminated string or block comment runs to the end of the text (JSON then refuses
# it): were it no match, every later quote or `/*` would scan to the end again, a
# quadratic cost on a hostile file (issue 36: every pattern meeting file text is linear).
_STRING = r'"(?:[^"\\]++|\\[\s\S]?)*+(?:"|\Z)'
_COMMENTS_RE = re.compile(_STRING + r"|//[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL)
_TRAILING_RE = re.compile(_STRING + r"|,(?=\s*[}\]])")
_WS_RE = re.compile(r"[ \t\r\n]*")
_INDENT_RE = re.compile(r"^([ \t]+)\S", re.MULTILINE)
_DECODER = json.JSONDecoder()
_MAX_DEPTH_GUARD = "nesting is too deep"


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line} column {column}"


def _blank(token: str) -> str:
    # Same length, same line breaks: offsets and line numbers stay valid in the clean copy.
    return "".join(ch if ch in "\r\n" else " " for ch in token)


def _strip(body: str, dialect: Dialect) -> tuple[str, frozenset[int]]:
    """The clean copy of `body` and the offsets of the trailing commas it blanked."""
    parts: list[str] = []
    last = 0
    for match in _COMMENTS_RE.finditer(body):
        token = match.group()
        if token.startswith('"'):
            continue
        if not dialect.comments:
            raise ConfigSyntaxError(
                f"{_where(body, match.start())}: comments are not allowed in this file"
            )
        parts += [body[last : match.start()], _blank(token)]
        last = match.end()
    clean = "".join([*parts, body[last:]])
    trailing: list[int] = []
    for match in _TRAILING_RE.finditer(clean):
        if match.group() == ",":
            if not dialect.trailing_commas:
                raise ConfigSyntaxError(
                    f"{_where(body, match.start())}: trailing commas are not allowed in this file"
                )
            trailing.append(match.start())
    if trailing:
        chars = list(clean)
        for pos in trailing:
            chars[pos] = " "
        clean = "".join(chars)
    return clean, frozenset(trailing)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@attrs.frozen
class Document:
    """A parsed config text: the original, its clean copy and its value."""

    text: str
    dialect: Dialect
    bom: str  # "\ufeff" or ""; kept in front of whatever is written back
    body: str  # text without the BOM; all offsets below index into it
    clean: str
    trailing: frozenset[int]
    value: Any  # None for an empty (whitespace or comments only) document

    @property
    def newline(self) -> str:
        """The line break the file uses."""
        return "\r\n" if "\r\n" in self.body else "\n"

    @property
    def unit(self) -> str:
        """One level of indentation as the file writes it (two spaces when it cannot tell)."""
        match = _INDENT_RE.search(self.clean)
        return match.group(1) if match else "  "


def parse(text: str, dialect: Dialect) -> Document:
    """Parse `text` as `dialect` allows. Raises `ConfigSyntaxError` saying where and why."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    clean, trailing = _strip(body, dialect)
    value: Any = None
    if clean.strip():
        try:
            value = json.loads(clean, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise ConfigSyntaxError(f"line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        except ValueError as exc:
            raise ConfigSyntaxError(str(exc)) from None
        except RecursionError:
            raise ConfigSyntaxError(_MAX_DEPTH_GUARD) from None
    return Document(text, dialect, bom, body, clean, trailing, value)


# ---------------------------------------------------------------------------- structure


@attrs.frozen
class _Member:
    key: str
    key_start: int  # the opening quote
    value_start: int
    value_end: int  # exclusive
    comma: int | None  # the separating comma after the value, if any


@attrs.frozen
class _Object:
    start: int  # "{"
    end: int  # just after "}"
    members: tuple[_Member, ...]


def _skip(clean: str, pos: int) -> int:
    match = _WS_RE.match(clean, pos)
    assert match is not None  # `*` always matches
    return match.end()


def _scan_object(clean: str, start: int) -> _Object:
    """The members of the object at `start` (the clean copy is known to be valid JSON)."""
    pos = _skip(clean, start + 1)
    members: list[_Member] = []
    if clean[pos] == "}":
        return _Object(start, pos + 1, ())
    while True:
        key_start = pos
        key, pos = _DECODER.raw_decode(clean, pos)
        pos = _skip(clean, pos)
        pos = _skip(clean, pos + 1)  # the ":"
        value_start = pos
        _, value_end = _DECODER.raw_decode(clean, value_start)
        pos = _skip(clean, value_end)
        if clean[pos] == ",":
            members.append(_Member(key, key_start, value_start, value_end, pos))
            pos = _skip(clean, pos + 1)
            continue
        members.append(_Member(key, key_start, value_start, value_end, None))
        return _Object(start, pos + 1, tuple(members))


def _root(doc: Document) -> _Object:
    return _scan_object(doc.clean, _skip(doc.clean, 0))


def _find(obj: _Object, key: str) -> int | None:
    """Index of the member named `key`; raises `DuplicateKeyError` when it occurs twice."""
    found = [i for i, member in enumerate(obj.members) if member.key == key]
    if len(found) > 1:
        raise DuplicateKeyError(f"the key {json.dumps(key)} appears {len(found)} times")
    return found[0] if found else None


def _line_start(body: str, pos: int) -> int:
    return body.rfind("\n", 0, pos) + 1


def _line_end(body: str, pos: int) -> int:
    end = body.find("\n", pos)
    if end < 0:
        return len(body)
    return end - 1 if end > 0 and body[end - 1] == "\r" else end


def _own_line_indent(body: str, pos: int) -> str | None:
    """The indentation before `pos` when `pos` is the first thing on its line, else None."""
    before = body[_line_start(body, pos) : pos]
    return before if before.strip() == "" else None


def _line_indent(body: str, pos: int) -> str:
    line = body[_line_start(body, pos) : pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _trailing_after(doc: Document, obj: _Object, member: _Member) -> int | None:
    """The blanked trailing comma after the object's last member, if the file has one."""
    for pos in sorted(doc.trailing):
        if member.value_end <= pos < obj.end:
            return pos
    return None


# ---------------------------------------------------------------------------- rendering


def _render(value: Any, indent: str, unit: str, newline: str) -> str:
    """`value` as the file would write it: objects one member a line, scalar lists inline."""
    if isinstance(value, dict) and value:
        inner = indent + unit
        items = [
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {_render(v, inner, unit, newline)}"
            for k, v in value.items()
        ]
        return "{" + newline + ("," + newline).join(items) + newline + indent + "}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        inner = indent + unit
        items = [inner + _render(v, inner, unit, newline) for v in value]
        return "[" + newline + ("," + newline).join(items) + newline + indent + "]"
    return json.dumps(value, ensure_ascii=False)


def _inline(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


Edit = tuple[int, int, str]


def _apply(doc: Document, edits: list[Edit]) -> str:
    body = doc.body
    # Back to front, so earlier offsets stay valid; edits at one offset keep their listed order.
    order = sorted(range(len(edits)), key=lambda i: (edits[i][0], i), reverse=True)
    for start, end, text in (edits[i] for i in order):
        body = body[:start] + text + body[end:]
    return doc.bom + body


def _insert(doc: Document, obj: _Object, key: str, value: Any) -> list[Edit]:
    """Edits adding `"key": value` as the last member of `obj`."""
    body, newline, unit = doc.body, doc.newline, doc.unit
    name = json.dumps(key, ensure_ascii=False)
    if not obj.members:
        outer = _line_indent(body, obj.start)
        inner = outer + unit
        interior = body[obj.start + 1 : obj.end - 1].rstrip()
        text = f"{{{interior}{newline}{inner}{name}: {_render(value, inner, unit, newline)}"
        return [(obj.start, obj.end, f"{text}{newline}{outer}}}")]
    last = obj.members[-1]
    indent = _own_line_indent(body, obj.members[0].key_start)
    if indent is None:  # a one-line object stays on one line
        return [(last.value_end, last.value_end, f", {name}: {_inline(value)}")]
    member = f"{newline}{indent}{name}: {_render(value, indent, unit, newline)}"
    trailing = _trailing_after(doc, obj, last)
    comma = [(last.value_end, last.value_end, ",")]
    if trailing is not None:
        # The file ends its members with a comma: the new last member does too, and the old
        # trailing comma becomes the separator.
        comma, member = [], member + ","
    eol = _line_end(body, last.value_end)
    if doc.clean[last.value_end : eol].strip() == "":
        # Only spaces, a comment or the trailing comma follow: the new member goes on the next
        # line, so a comment about the last member stays on that member's line.
        return [*comma, (eol, eol, member)]
    return [(last.value_end, last.value_end, "," + member)]


def _remove(doc: Document, obj: _Object, index: int) -> list[Edit]:
    """Edits deleting member `index` of `obj` (its whole line when it has one)."""
    body = doc.body
    member = obj.members[index]
    trailing = _trailing_after(doc, obj, member) if member.comma is None else None
    separator = member.comma if member.comma is not None else trailing
    own_end = separator + 1 if separator is not None else member.value_end
    indent = _own_line_indent(body, member.key_start)
    if indent is None:
        start, end = member.key_start, own_end
        if member.comma is not None:
            end = obj.members[index + 1].key_start
        elif index > 0:
            start = obj.members[index - 1].value_end
    else:
        start = _line_start(body, member.key_start)
        eol = _line_end(body, own_end)
        end = own_end
        if body[own_end:eol].strip() == "":
            end = eol + (2 if body.startswith("\r\n", eol) else 1 if eol < len(body) else 0)
    if len(obj.members) == 1:
        remaining = body[obj.start + 1 : start] + body[end : obj.end - 1]
        if remaining.strip() == "":
            return [(obj.start, obj.end, "{}")]
        return [(start, end, "")]
    edits: list[Edit] = [(start, end, "")]
    if indent is not None and member.comma is None and trailing is None:
        previous = obj.members[index - 1].comma
        assert previous is not None
        edits.append((previous, previous + 1, ""))
    return edits


# ---------------------------------------------------------------------------- operations


def fresh(container: str, key: str, value: Any) -> str:
    """The whole text of a new file holding only `{container: {key: value}}`."""
    return _render({container: {key: value}}, "", "  ", "\n") + "\n"


def set_member(doc: Document, container: str, key: str, value: Any) -> str:
    """The text with `doc.value[container][key] = value`, creating the container if needed.

    The document's value must be an object whose `container` (if present) is an object.
    Raises `DuplicateKeyError` when either key occurs twice (which one the host uses is unclear).
    """
    if doc.value is None:
        prefix = doc.body.rstrip()
        text = fresh(container, key, value)
        return doc.bom + (prefix + doc.newline + text if prefix else text)
    root = _root(doc)
    index = _find(root, container)
    if index is None:
        return _apply(doc, _insert(doc, root, container, {key: value}))
    member = root.members[index]
    servers = _scan_object(doc.clean, member.value_start)
    found = _find(servers, key)
    if found is None:
        return _apply(doc, _insert(doc, servers, key, value))
    target = servers.members[found]
    indent = _own_line_indent(doc.body, target.key_start)
    rendered = _inline(value) if indent is None else _render(value, indent, doc.unit, doc.newline)
    return _apply(doc, [(target.value_start, target.value_end, rendered)])


def remove_member(doc: Document, container: str, key: str) -> str:
    """The text without `doc.value[container][key]` (which must exist)."""
    root = _root(doc)
    index = _find(root, container)
    assert index is not None
    servers = _scan_object(doc.clean, root.members[index].value_start)
    found = _find(servers, key)
    assert found is not None
    return _apply(doc, _remove(doc, servers, found))
