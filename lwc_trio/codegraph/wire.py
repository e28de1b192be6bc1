"""Sans-IO MCP client side of the CodeGraph child's stdio: framing, messages, classification.

No I/O and no trio: `child.py` feeds the bytes it reads into `LineSplitter`, classifies each
line with `parse_frame`, and writes what `encode` returns.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

import attrs

__all__ = [
    "FRAME_LIMIT",
    "PROTOCOL_VERSION",
    "BadFrame",
    "ChildRequest",
    "FrameTooLarge",
    "LineSplitter",
    "Notification",
    "Response",
    "cancelled_notification",
    "encode",
    "initialize_request",
    "initialized_notification",
    "parse_frame",
    "reply_to_child",
    "tools_call_request",
]

FRAME_LIMIT = 256 * 1024
# CodeGraph 1.6.1 answers every `initialize` with 2024-11-05 whatever the client asks for
# (mcp/session.js PROTOCOL_VERSION), so that is the version we ask for.
PROTOCOL_VERSION = "2024-11-05"
CLIENT_INFO = {"name": "lwc", "version": "codegraph-client"}


class BadFrame(Exception):
    """A line from the child that is not a usable JSON-RPC message; str() says why."""


class FrameTooLarge(BadFrame):
    """The child sent a line longer than `FRAME_LIMIT` bytes (newline excluded)."""


class LineSplitter:
    """Cuts a byte stream into lines, holding at most `limit` bytes of an unfinished one."""

    def __init__(self, limit: int = FRAME_LIMIT) -> None:
        self._limit = limit
        self._partial = bytearray()

    def feed(self, data: bytes | bytearray) -> list[bytes]:
        """Return the complete lines `data` finishes (without `\\n`, `\\r` stripped).

        Raises `FrameTooLarge` as soon as a line is known to exceed the limit, before buffering
        more than `limit` bytes of it.
        """
        lines: list[bytes] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if len(self._partial) + (end - start) > self._limit:
                self._too_large()
            self._partial += data[start:end]
            line = bytes(self._partial)
            self._partial.clear()
            lines.append(line[:-1] if line.endswith(b"\r") else line)
            start = end + 1
        if len(self._partial) + (len(data) - start) > self._limit:
            self._too_large()
        self._partial += data[start:]
        return lines

    def _too_large(self) -> NoReturn:
        self._partial.clear()
        raise FrameTooLarge(f"CodeGraph sent a frame over {self._limit // 1024} KiB")


@attrs.frozen
class Response:
    """A reply to one of our requests: exactly one of `result` / `error` is not None."""

    id: int
    result: dict[str, Any] | None
    error: dict[str, Any] | None


@attrs.frozen
class ChildRequest:
    """A request the child sends us (e.g. `ping`); `id` is echoed back verbatim."""

    id: Any
    method: str


@attrs.frozen
class Notification:
    """A notification from the child (logging, progress): skipped."""

    method: str


Frame = Response | ChildRequest | Notification


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def parse_frame(line: bytes) -> Frame | None:
    """Classify one line; None for a blank line. Raises `BadFrame` for anything else.

    Responses must carry an integer id (we only issue integers) and an object `result` or
    `error`; whether the id was issued is the caller's check.
    """
    if not line.strip():
        return None
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadFrame("CodeGraph sent a line that is not valid JSON") from None
    if not isinstance(message, dict):
        raise BadFrame("CodeGraph sent a JSON value that is not a JSON-RPC message object")
    method = message.get("method")
    if isinstance(method, str):
        if "id" in message:
            return ChildRequest(id=message["id"], method=method)
        return Notification(method=method)
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int):
        raise BadFrame("CodeGraph sent a reply whose id is not one lwc issued")
    result, error = message.get("result"), message.get("error")
    if isinstance(result, dict) and "error" not in message:
        return Response(id=request_id, result=result, error=None)
    if isinstance(error, dict) and "result" not in message:
        return Response(id=request_id, result=None, error=error)
    raise BadFrame("CodeGraph sent a reply without a proper result or error object")


def encode(message: dict[str, Any]) -> bytes:
    """One newline-terminated compact JSON frame."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def initialize_request(request_id: int) -> dict[str, Any]:
    """Our `initialize`: no client capabilities, so the child never asks us for `roots/list`."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        },
    }


def initialized_notification() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/initialized"}


def tools_call_request(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def cancelled_notification(request_id: int, reason: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": reason},
    }


def reply_to_child(request: ChildRequest) -> dict[str, Any]:
    """`ping` gets `{}`; anything else `-32601`: we offer the child no client features."""
    if request.method == "ping":
        return {"jsonrpc": "2.0", "id": request.id, "result": {}}
    return {
        "jsonrpc": "2.0",
        "id": request.id,
        "error": {"code": -32601, "message": f"Method not found: {request.method[:100]}"},
    }
