"""JSON-RPC messages every scenario sends, as plain dicts and JSON lines (no MCP library)."""

from __future__ import annotations

import json
from typing import Any, Final

PROTOCOL: Final = "2025-11-25"
"""The protocol version the benchmarks negotiate (`ping` is still a plain request in it)."""
OVERSIZE_BYTES: Final = 70 * 1024
"""A line this long is over the server's 64 KiB frame limit."""

Message = dict[str, Any]


def encode(message: Any) -> bytes:
    """One compact JSON line, newline included."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def key_of(rid: Any) -> tuple[str, Any]:
    """A dict key for a request id that keeps `1` and `"1"` apart."""
    return (type(rid).__name__, rid)


def initialize(rid: Any, client: str = "lwc-bench", protocol: str = PROTOCOL) -> Message:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol,
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }


INITIALIZED: Final[Message] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def ping(rid: Any) -> Message:
    return {"jsonrpc": "2.0", "id": rid, "method": "ping"}


def tool_call(rid: Any, arguments: Any, name: str = "lwc_explore") -> Message:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def cancelled(rid: Any, reason: str = "benchmark") -> Message:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": rid, "reason": reason},
    }


def oversize_line(rid: Any, ws: str) -> bytes:
    """A tools/call line of about 70 KiB (over the 64 KiB frame limit), id first."""
    head = json.dumps(tool_call(rid, {"query": "", "projectPath": ws}))
    pad = "q" * (OVERSIZE_BYTES - len(head))
    return head.replace('"query": ""', f'"query": "{pad}"').encode() + b"\n"
