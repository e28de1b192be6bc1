"""Strict JSON-RPC 2.0: parsing (RFC 8259), envelope checks, error replies.

`parse_message()` turns one frame into exactly one of: a `Request`, a
`Notification`, an `Ignored` client response, or a `Reply` that must be sent
as is (an error answer). Every error carries `data.kind` (SPEC §1.3).
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

import attrs
import orjson

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
SERVER_BUSY: Final = -32000

MAX_DEPTH: Final = 64
"""Deepest accepted nesting of arrays/objects."""

RequestId = str | int


@attrs.frozen
class Request:
    """A call that expects an answer."""

    id: RequestId
    method: str
    params: Any
    """Usually an object; anything else is answered with -32602 once the
    method is known to exist (SPEC §1.3 checks the method first)."""


@attrs.frozen
class Notification:
    """A message without an id: never answered."""

    method: str
    params: dict[str, Any]


@attrs.frozen
class Ignored:
    """A client's response to something we never ask; dropped silently."""


@attrs.frozen
class Reply:
    """A ready answer (an envelope error) to send unchanged."""

    message: dict[str, Any]


Message = Request | Notification | Ignored | Reply


class _DuplicateKey(ValueError):
    """A repeated key; `request_id` is the frame's top-level id when that is usable."""

    def __init__(self, key: str, request_id: RequestId | None) -> None:
        super().__init__(key)
        self.request_id = request_id


class _BadJson(ValueError):
    pass


class _DuplicateKeys(dict[str, Any]):
    """An object that repeated a key; reported only once the whole frame parsed
    (a parse error anywhere must win over the envelope error, SPEC §1.3)."""

    duplicate: str = ""
    repeated: frozenset[str] = frozenset()
    """Every key this object repeats."""
    shadowed: tuple[Any, ...] = ()
    """Values the repeated keys overwrote: still checked for strictness."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    marked = _DuplicateKeys(pairs)
    seen: set[str] = set()
    repeated: set[str] = set()
    shadowed = []
    for key, value in pairs:
        if key in seen:
            marked.duplicate = marked.duplicate or key
            repeated.add(key)
        seen.add(key)
        if marked[key] is not value:
            shadowed.append(value)
    marked.repeated = frozenset(repeated)
    marked.shadowed = tuple(shadowed)
    return marked


def _no_constants(name: str) -> Any:
    raise _BadJson(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_no_constants)


def _check_tree(value: Any) -> None:
    """Reject nesting deeper than MAX_DEPTH and strings holding lone surrogates,
    then (only if all else is well) a repeated key."""
    duplicate: str | None = None
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                raise _BadJson(f"nesting deeper than {MAX_DEPTH}")
            if isinstance(node, _DuplicateKeys):
                duplicate = duplicate or node.duplicate
                stack.extend((item, depth + 1) for item in node.shadowed)
            for key, item in node.items():
                _check_text(key)
                stack.append((item, depth + 1))
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                raise _BadJson(f"nesting deeper than {MAX_DEPTH}")
            stack.extend((item, depth + 1) for item in node)
        elif isinstance(node, str):
            _check_text(node)
    if duplicate is not None:
        raise _DuplicateKey(duplicate, _top_level_id(value))


def _top_level_id(value: Any) -> RequestId | None:
    """The frame's own id when it is usable despite a repeated key elsewhere (SPEC §1.3:
    id null unless usable): an object whose `id`, given once, is a string or an integer."""
    if not isinstance(value, dict):
        return None
    if isinstance(value, _DuplicateKeys) and "id" in value.repeated:
        return None
    raw_id = value.get("id")
    return raw_id if _usable_id(raw_id) else None


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _BadJson("string holds a lone surrogate escape") from None


def error(
    request_id: RequestId | None, code: int, message: str, kind: str, **extra: Any
) -> dict[str, Any]:
    """A JSON-RPC error response with `data.kind` (plus any extra data)."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": message, "data": {"kind": kind, **extra}},
    }


def result(request_id: RequestId, value: Any) -> dict[str, Any]:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def frame_too_large(request_id: RequestId | None, limit: int) -> dict[str, Any]:
    """The answer to a frame over the cap."""
    return error(
        request_id, INVALID_REQUEST, f"Request exceeds {limit // 1024} KiB", "frame_too_large"
    )


def _usable_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def loads_strict(data: bytes) -> Any:
    """Decode one strict JSON document.

    Raises:
        ValueError: not UTF-8, not RFC 8259 JSON, too deep or lone surrogates
            (message says which); `_DuplicateKey` (a ValueError) for repeated keys.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _BadJson("frame is not valid UTF-8") from None
    try:
        value, end = _DECODER.raw_decode(text.lstrip(" \t\r\n"))
    except RecursionError:
        raise _BadJson(f"nesting deeper than {MAX_DEPTH}") from None
    except _BadJson:
        raise
    except ValueError as exc:
        raise _BadJson(f"invalid JSON: {exc}") from None
    if text.lstrip(" \t\r\n")[end:].strip(" \t\r\n"):
        raise _BadJson("invalid JSON: extra data after the value")
    _check_tree(value)
    return value


def parse_message(data: bytes) -> Message:
    """Classify one frame (SPEC §1.3 order: parse → envelope)."""
    try:
        value = loads_strict(data)
    except _DuplicateKey as exc:
        # Well-formed JSON, ill-formed request; its id still tells the host which one.
        return Reply(
            error(exc.request_id, INVALID_REQUEST, f"duplicate key {exc}", "invalid_request")
        )
    except ValueError as exc:
        return Reply(error(None, PARSE_ERROR, f"Parse error: {exc}", "parse_error"))
    return classify(value)


def classify(value: Any) -> Message:
    """Envelope checks on an already-parsed JSON value."""
    if isinstance(value, list):
        return Reply(_invalid(None, "batch requests are not supported"))
    if not isinstance(value, dict):
        return Reply(_invalid(None, "a request must be a JSON object"))
    has_id = "id" in value
    raw_id = value.get("id")
    rid: RequestId | None = raw_id if _usable_id(raw_id) else None
    if value.get("jsonrpc") != "2.0":
        return Reply(_invalid(rid, '"jsonrpc" must be "2.0"'))
    if "method" not in value:
        if "result" in value or "error" in value:
            return Ignored()
        return Reply(_invalid(rid, 'missing "method"'))
    method = value["method"]
    if not isinstance(method, str):
        return Reply(_invalid(rid, '"method" must be a string'))
    if has_id and rid is None:
        return Reply(_invalid(None, '"id" must be a string or an integer'))
    params = value.get("params", {})
    if params is None:
        params = {}
    if rid is None:
        if not isinstance(params, dict):
            params = {}  # a notification is never answered, not even to complain
        return Notification(method, params)
    return Request(rid, method, params)


def _invalid(rid: RequestId | None, why: str) -> dict[str, Any]:
    return error(rid, INVALID_REQUEST, f"Invalid Request: {why}", "invalid_request")


_FAST_OPTIONS: Final = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
"""orjson encodes only the plain JSON types; anything else goes the `json` way below."""


def to_bytes(message: Any) -> bytes:
    """Compact strict UTF-8 JSON, non-ASCII kept as is (an HTTP body, a line before framing,
    a tool result). A non-finite number is written as `null`, never as `NaN`/`Infinity`.

    orjson first: an answer's ~13 KB encoded in about a fifteenth of the `json` module's
    time (docs/benchmarks.md). What it refuses (an int past 64 bits, a lone surrogate, a key
    that is not a string, a subclass) is encoded part by part: orjson still writes every
    value it takes, and only the refused values go the `json` module's way, so a message's
    bytes do not depend on whether something elsewhere in it was refused (orjson writes
    `1e-9` where `json` writes `1e-09`), and the error, if any, is what `json` gives.
    """
    try:
        return orjson.dumps(message, option=_FAST_OPTIONS)
    except TypeError:
        pass
    if type(message) is dict:
        items = (_key(key) + b":" + to_bytes(value) for key, value in message.items())
        return b"{" + b",".join(items) + b"}"
    if type(message) is list or type(message) is tuple:
        return b"[" + b",".join(to_bytes(value) for value in message) + b"]"
    return _json_bytes(message)


def _key(key: Any) -> bytes:
    """An object key as `json` writes it (non-string keys become strings, as `json` makes them)."""
    if type(key) is str:
        return to_bytes(key)
    return _json_bytes({key: 0})[1:-3]


def _json_bytes(value: Any) -> bytes:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(finite(value), ensure_ascii=False, separators=(",", ":"))
    return text.encode()


def encode(message: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON plus the newline that frames it on stdio."""
    return to_bytes(message) + b"\n"


def finite(obj: Any) -> Any:
    """A copy of `obj` with every non-finite float replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {key: finite(value) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(value) for value in obj]
    return obj
