"""Newline-delimited framing with a hard cap that never buffers past it.

`LineFramer.feed()` takes whatever bytes a read returned and gives back the
complete frames it now holds. A line longer than the cap is read on to its
newline and discarded while a tiny JSON scanner looks for its top-level `"id"`,
so the `-32600 frame_too_large` answer can still carry the caller's id.
"""

from __future__ import annotations

import json
import re

import attrs

FRAME_LIMIT = 65_536
"""Largest accepted frame in bytes, newline excluded (SPEC §1.1)."""

_ID_VALUE_LIMIT = 256
"""An id value longer than this is not worth recovering."""


@attrs.frozen
class Line:
    """A complete frame: one line, `\\r\\n`/`\\n` stripped, not whitespace-only."""

    data: bytes


@attrs.frozen
class Oversize:
    """A frame that exceeded the cap and was discarded.

    `request_id` is the top-level `"id"` when it could be recovered from the
    discarded bytes (a str or int), else None.
    """

    request_id: str | int | None
    size: int


Frame = Line | Oversize

# Outside strings only these bytes matter to the scanner.
_STRUCTURAL = re.compile(rb'["{}\[\]:,]')
# Inside a string: run to the next quote or backslash.
_STRING_BODY = re.compile(rb'[^"\\]*')


class _IdScanner:
    """Streams over a JSON object in pieces, remembering its top-level `"id"`.

    Constant memory: key strings are kept only while they are short enough to
    be `"id"`, and the id value only up to `_ID_VALUE_LIMIT` bytes.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escape = False
        self.string_is_key = False
        self.key: bytearray | None = None
        self.expect_key = False
        self.last_key: bytes | None = None
        self.capturing = False
        self.value = bytearray()
        self.found: str | int | None = None
        self.done = False

    def feed(self, chunk: bytes) -> None:
        i, n = 0, len(chunk)
        while i < n and not self.done:
            if self.in_string:
                i = self._string(chunk, i)
                continue
            if self.capturing and self.depth == 1:
                # A scalar id value (number, or the start of a string).
                b = chunk[i]
                if b in b"[{":
                    self.capturing = False  # an array/object id is not usable
                    continue
                if b in b",}":
                    self._finish_value()
                    continue
                if b == 0x22:  # '"'
                    self.value.append(b)
                    self.in_string, self.string_is_key = True, False
                    i += 1
                    continue
                if len(self.value) <= _ID_VALUE_LIMIT:
                    self.value.append(b)
                i += 1
                continue
            m = _STRUCTURAL.search(chunk, i)
            if m is None:
                return
            i = m.end()
            self._structural(m.group())

    def _structural(self, tok: bytes) -> None:
        if tok == b'"':
            self.in_string = True
            self.string_is_key = self.depth == 1 and self.expect_key
            self.key = bytearray() if self.string_is_key else None
        elif tok in (b"{", b"["):
            self.depth += 1
            self.expect_key = tok == b"{" and self.depth == 1
        elif tok in (b"}", b"]"):
            self.depth -= 1
            if self.depth <= 0:
                self.done = True
        elif tok == b":":
            if self.depth == 1:
                self.expect_key = False
                if self.last_key == b"id":
                    self.capturing = True
                    self.value.clear()
        elif tok == b"," and self.depth == 1:
            self.expect_key = True

    def _string(self, chunk: bytes, i: int) -> int:
        n = len(chunk)
        while i < n:
            if self.escape:
                self.escape = False
                self._keep(chunk[i : i + 1])
                i += 1
                continue
            m = _STRING_BODY.match(chunk, i)
            end = m.end() if m else i
            self._keep(chunk[i:end])
            i = end
            if i >= n:
                return i
            if chunk[i] == 0x5C:  # backslash
                self.escape = True
                self._keep(chunk[i : i + 1])
                i += 1
                continue
            # closing quote
            self.in_string = False
            i += 1
            if self.string_is_key:
                self.last_key = bytes(self.key) if self.key is not None else None
                self.key = None
            elif self.capturing:
                self.value.append(0x22)
                self._finish_value()
            return i
        return i

    def _keep(self, piece: bytes) -> None:
        if self.string_is_key and self.key is not None:
            if len(self.key) + len(piece) <= 8:
                self.key += piece
            else:
                self.key = None  # too long to be "id"
        elif self.capturing and len(self.value) <= _ID_VALUE_LIMIT:
            self.value += piece

    def _finish_value(self) -> None:
        self.capturing = False
        raw = bytes(self.value).strip()
        self.found = _usable_id(raw)
        if self.found is not None:
            self.done = True


def _usable_id(raw: bytes) -> str | int | None:
    if not raw or len(raw) > _ID_VALUE_LIMIT:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return value


class LineFramer:
    """Splits a byte stream into `Line` and `Oversize` frames.

    Memory is bounded by `limit` plus one read: past the cap, bytes are only
    scanned for an id and dropped.
    """

    def __init__(self, limit: int = FRAME_LIMIT) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._discarding = False
        self._discarded = 0
        self._scanner: _IdScanner | None = None

    @property
    def buffered(self) -> int:
        """Bytes currently held (never more than `limit` + one `\\r`)."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Frame]:
        """Consume `data`; return every frame it completed, in order."""
        frames: list[Frame] = []
        start = 0
        n = len(data)
        while start < n:
            nl = data.find(b"\n", start)
            end = n if nl < 0 else nl
            piece = data[start:end]
            if self._discarding:
                self._discard(piece)
            else:
                # +1 leaves room for a '\r' that belongs to a CRLF ending.
                room = self.limit + 1 - len(self._buf)
                if len(piece) > room:
                    self._start_discarding(piece)
                else:
                    self._buf += piece
            if nl < 0:
                break
            frame = self._end_line()
            if frame is not None:
                frames.append(frame)
            start = nl + 1
        return frames

    def eof(self) -> list[Frame]:
        """The stream ended: a final line without `\\n` still counts."""
        frame = self._end_line()
        return [frame] if frame is not None else []

    def _start_discarding(self, piece: bytes) -> None:
        self._discarding = True
        self._scanner = _IdScanner()
        self._scanner.feed(bytes(self._buf))
        self._discarded = len(self._buf)
        self._buf.clear()
        self._discard(piece)

    def _discard(self, piece: bytes) -> None:
        self._discarded += len(piece)
        if self._scanner is not None and not self._scanner.done:
            self._scanner.feed(piece)

    def _end_line(self) -> Frame | None:
        if self._discarding:
            scanner = self._scanner
            size = self._discarded
            self._discarding, self._discarded, self._scanner = False, 0, None
            return Oversize(scanner.found if scanner else None, size)
        line = bytes(self._buf)
        self._buf.clear()
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self.limit:
            return Oversize(_recover_id(line), len(line))
        if not line.strip():
            return None
        return Line(line)


def _recover_id(line: bytes) -> str | int | None:
    scanner = _IdScanner()
    scanner.feed(line)
    return scanner.found
