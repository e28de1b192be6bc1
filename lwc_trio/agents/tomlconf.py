"""Edit one `[mcp_servers.NAME]` table of a TOML config (Codex CLI), leaving the rest as written.

`tomllib` reads but cannot write, and a general TOML writer would reformat the user's file. We
need very little: emit one table of strings and string arrays, append it, and find the line range
of an existing `[mcp_servers.NAME]` table (and its sub-tables) to replace or delete. Header lines
are recognised by letting `tomllib` parse the line on its own, so quoting and spacing variants
(`[ mcp_servers."lwc" ]`) are understood exactly. Callers re-parse the result and compare values,
so a table written in a form this module does not edit (inline or dotted keys) is refused rather
than mangled.

Pure: strings in, strings out.
"""

from __future__ import annotations

import tomllib
from typing import Any

import attrs

from lwc_trio.exceptions import ConfigSyntaxError

__all__ = ["dumps_table", "parse", "remove_table", "set_table"]

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def parse(text: str) -> dict[str, Any]:
    """The TOML document's value. Raises `ConfigSyntaxError` (tomllib says line and column)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigSyntaxError(str(exc)) from None


def _string(value: str) -> str:
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _value(value: Any) -> str:
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # repr() spells every float as TOML does (`20.0`, `1e-07`, `inf`, `nan`).
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        # A user's `env` (or other sub-table) kept by `--force`, written inline.
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _key(part: str) -> str:
    bare = part and all(ch.isascii() and (ch.isalnum() or ch in "-_") for ch in part)
    return part if bare else _string(part)


def dumps_table(path: tuple[str, ...], table: dict[str, Any], newline: str = "\n") -> str:
    """`[a.b]` followed by `key = value` lines (strings, booleans, numbers, their lists, inline
    tables). Raises `TypeError` for a value it cannot write (a date)."""
    lines = ["[" + ".".join(_key(p) for p in path) + "]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
    return newline.join(lines) + newline


@attrs.frozen
class _Header:
    line: int
    path: tuple[str, ...]
    array: bool


def _header(line: str) -> tuple[tuple[str, ...], bool] | None:
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    try:
        parsed: Any = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None  # e.g. a line of a multi-line array
    path: list[str] = []
    while isinstance(parsed, dict) and len(parsed) == 1:
        key, parsed = next(iter(parsed.items()))
        path.append(key)
    if parsed == {}:
        return tuple(path), False
    if parsed == [{}]:
        return tuple(path), True
    return None


def _headers(lines: list[str]) -> list[_Header]:
    found = []
    for number, line in enumerate(lines):
        parsed = _header(line)
        if parsed is not None:
            found.append(_Header(number, *parsed))
    return found


def _blank_or_comment(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _spans(lines: list[str], prefix: tuple[str, ...]) -> list[tuple[int, int]] | None:
    """Line ranges of the tables at `prefix` and below, each widened over the blank lines before
    it and narrowed to exclude the blank/comment lines after it (those belong to what follows).
    None when such a table is an array of tables."""
    headers = _headers(lines)
    spans = []
    for i, header in enumerate(headers):
        if header.path[: len(prefix)] != prefix:
            continue
        if header.array:
            return None
        end = headers[i + 1].line if i + 1 < len(headers) else len(lines)
        while end > header.line + 1 and _blank_or_comment(lines[end - 1]):
            end -= 1
        start = header.line
        while start > 0 and not lines[start - 1].strip():
            start -= 1
        spans.append((start, end))
    return spans


def set_table(text: str, path: tuple[str, ...], table: dict[str, Any], *, replace: bool) -> str:
    """The text with the table at `path` set to `table`.

    `replace=False`: append it (the table must not exist). `replace=True`: put it where the
    existing `[path]` header was, dropping that table and its sub-tables. Raises
    `ConfigSyntaxError` when the existing table has no header of its own to replace.
    """
    newline = "\r\n" if "\r\n" in text else "\n"
    block = dumps_table(path, table, newline)
    if not replace:
        if not text.strip():
            return block
        return (text if text.endswith("\n") else text + newline) + newline + block
    lines = text.splitlines(keepends=True)
    spans = _spans(lines, path)
    if not spans:
        raise ConfigSyntaxError(f"[{'.'.join(path)}] is not written as a table of its own")
    first = spans[0][0]
    kept = [line for n, line in enumerate(lines) if not any(s <= n < e for s, e in spans)]
    before = "".join(kept[:first])
    after = "".join(kept[first:])
    if before and not before.endswith("\n"):
        before += newline
    return before + (newline if before else "") + block + after


def remove_table(text: str, path: tuple[str, ...]) -> str:
    """The text without the table at `path` and its sub-tables (blank lines before it go too)."""
    lines = text.splitlines(keepends=True)
    spans = _spans(lines, path)
    if not spans:
        raise ConfigSyntaxError(f"[{'.'.join(path)}] is not written as a table of its own")
    return "".join(line for n, line in enumerate(lines) if not any(s <= n < e for s, e in spans))
