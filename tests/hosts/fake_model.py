"""FAKE MODEL — a scripted stand-in for a model API, for the host end-to-end tests only.

This is not a model and never calls one. The real host programs (Claude Code, Codex CLI,
Gemini CLI) cannot reach their model services from the test machine, so each is pointed at this
HTTP server on 127.0.0.1 through its documented base-URL setting. The server speaks just enough
of each wire format for one scripted turn:

1. the first request of a conversation gets a tool call to the host's `lwc_explore` tool (found
   by name in the request's tool list) with the arguments in `$FAKE_MODEL_ARGS_FILE` or
   `$FAKE_MODEL_ARGS` (JSON: one object, or a list of objects for one call after another);
2. a request that carries as many tool results as there are calls in the script gets a short
   final text answer.

Every request is appended to `$FAKE_MODEL_LOG` (JSON lines: path, tool names offered, tool
results received), so a test can check what the host really sent back: each tool result is the
text the host put in front of its model, taken from the wire format's own result field (an
Anthropic `tool_result`'s content, a Responses `function_call_output`'s output, a Gemini
`functionResponse`'s response), with nothing added by this server.

Token counting (Anthropic `count_tokens`, Gemini `countTokens`) answers an estimate — a quarter
of the ASCII characters plus one per other character — rather than a constant, so that a host's
own token limit (Claude Code asks before it cuts a large MCP result) sees a plausible size.

    python fake_model.py PORT_FILE      (binds 127.0.0.1:0 and writes the port to PORT_FILE)

Wire formats: Anthropic Messages (`POST /v1/messages`, streamed as SSE), OpenAI Responses
(`POST /v1/responses`, SSE) and Gemini (`POST /v1beta/models/M:streamGenerateContent?alt=sse`
or `:generateContent`). Anything else is answered 404 and logged.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL_SUFFIX = "lwc_explore"
FINAL_TEXT = "FAKE MODEL: the lwc_explore result arrived."
NAMESPACE_SEP = "/"
_LOCK = threading.Lock()


def _log(record: dict[str, Any]) -> None:
    path = os.environ.get("FAKE_MODEL_LOG")
    if not path:
        return
    with _LOCK, open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _script() -> list[dict[str, Any]]:
    """The scripted calls' arguments: `$FAKE_MODEL_ARGS_FILE` (read per request, so a test can
    change them between runs), else `$FAKE_MODEL_ARGS`; one object is a script of one call."""
    path = os.environ.get("FAKE_MODEL_ARGS_FILE")
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    else:
        text = os.environ.get("FAKE_MODEL_ARGS", "{}")
    value = json.loads(text)
    return list(value) if isinstance(value, list) else [value]


def _arguments(done: int) -> dict[str, Any]:
    """The arguments of the next call, after `done` calls have been answered."""
    value: dict[str, Any] = _script()[done]
    return value


def _estimate_tokens(value: Any) -> int:
    """About what a tokenizer says: ASCII text is ~4 characters a token, CJK ~1."""
    text = json.dumps(value, ensure_ascii=False)
    ascii_chars = sum(1 for char in text if char.isascii())
    return max(1, ascii_chars // 4 + (len(text) - ascii_chars))


def _text_of(value: Any) -> str:
    """The text of a tool result: a string as it is, a list of content blocks as their texts
    one after another (a block's `text`, else all its strings), any other shape as all the
    strings inside it; several texts are joined by newlines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text_of(item) for item in value)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return str(value["text"])
        return "\n".join(_text_of(item) for item in value.values())
    return ""


def _pick(names: list[str]) -> str | None:
    for name in names:
        if name.endswith(TOOL_SUFFIX):
            return name
    return None


# ---------------------------------------------------------------------------- Anthropic


def _anthropic_view(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    tools = [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]
    results = [
        _text_of(block.get("content"))
        for message in body.get("messages") or []
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    return tools, results


def _anthropic_events(tool: str | None, args: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    message_id = "msg_fake_" + uuid.uuid4().hex[:12]
    usage = {"input_tokens": 10, "output_tokens": 5}
    start = {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "fake-model",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        },
    }
    events: list[tuple[str, dict[str, Any]]] = [("message_start", start)]
    if tool is not None:
        block = {
            "type": "tool_use",
            "id": "toolu_fake_" + uuid.uuid4().hex[:8],
            "name": tool,
            "input": {},
        }
        delta = {"type": "input_json_delta", "partial_json": json.dumps(args)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": FINAL_TEXT}
        stop = "end_turn"
    events += [
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def _anthropic_message(tool: str | None, args: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]]
    if tool is not None:
        content = [{"type": "tool_use", "id": "toolu_fake_1", "name": tool, "input": args}]
    else:
        content = [{"type": "text", "text": FINAL_TEXT}]
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "fake-model",
        "content": content,
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


# ---------------------------------------------------------------------------- OpenAI Responses


def _responses_view(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    tools = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            # Codex groups an MCP server's tools: {"type": "namespace", "name": "mcp__lwc",
            # "tools": [...]}; a call names the namespace and the tool separately.
            tools += [
                f"{tool.get('name')}{NAMESPACE_SEP}{inner.get('name')}"
                for inner in tool.get("tools") or []
            ]
        else:
            tools.append(str(tool.get("name") or tool.get("function", {}).get("name") or ""))
    items = body.get("input")
    results = [
        _text_of(item.get("output"))
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict)
        and item.get("type") in ("function_call_output", "mcp_tool_call_output")
    ]
    return tools, results


def _responses_events(tool: str | None, args: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    response_id = "resp_fake_" + uuid.uuid4().hex[:12]
    item: dict[str, Any]
    if tool is not None:
        namespace, _, name = tool.rpartition(NAMESPACE_SEP)
        item = {
            "type": "function_call",
            "id": "fc_fake_" + uuid.uuid4().hex[:8],
            "call_id": "call_fake_" + uuid.uuid4().hex[:8],
            "name": name,
            "arguments": json.dumps(args),
            "status": "completed",
        }
        if namespace:
            item["namespace"] = namespace
    else:
        item = {
            "type": "message",
            "id": "msg_fake_" + uuid.uuid4().hex[:8],
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
        }
    base = {
        "id": response_id,
        "object": "response",
        "model": "fake-model",
        "status": "in_progress",
        "output": [],
    }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    done = {**base, "status": "completed", "output": [item], "usage": usage}
    return [
        ("response.created", {"type": "response.created", "response": base}),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        ("response.completed", {"type": "response.completed", "response": done}),
    ]


# ---------------------------------------------------------------------------- Gemini


def _gemini_view(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    tools = [
        str(declaration.get("name", ""))
        for tool in body.get("tools") or []
        for declaration in (tool or {}).get("functionDeclarations") or []
    ]
    results = [
        _text_of(part["functionResponse"].get("response"))
        for content in body.get("contents") or []
        for part in (content or {}).get("parts") or []
        if isinstance(part, dict) and "functionResponse" in part
    ]
    return tools, results


def _gemini_chunk(tool: str | None, args: dict[str, Any]) -> dict[str, Any]:
    part = (
        {"functionCall": {"name": tool, "args": args}} if tool is not None else {"text": FINAL_TEXT}
    )
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 5,
            "totalTokenCount": 15,
        },
        "modelVersion": "fake-model",
    }


# ---------------------------------------------------------------------------- server


class Handler(BaseHTTPRequestHandler):
    """One request: log it, then answer in the dialect its path names."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            value = json.loads(raw or b"{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def _json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[tuple[str | None, dict[str, Any]]]) -> None:
        chunks = []
        for name, payload in events:
            head = f"event: {name}\n" if name else ""
            chunks.append(f"{head}data: {json.dumps(payload)}\n\n")
        data = "".join(chunks).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        _log({"method": "GET", "path": self.path})
        self._json(404, {"error": {"message": "fake model: not here"}})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self._body()
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            tokens = _estimate_tokens(body.get("messages"))
            _log({"method": "POST", "path": self.path, "tokens": tokens})
            self._json(200, {"input_tokens": tokens})
            return
        if path.endswith("/messages"):
            tools, results = _anthropic_view(body)
        elif path.endswith("/responses"):
            tools, results = _responses_view(body)
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            tools, results = _gemini_view(body)
        elif ":countTokens" in path:
            tokens = _estimate_tokens(body.get("contents"))
            _log({"method": "POST", "path": self.path, "tokens": tokens})
            self._json(200, {"totalTokens": tokens})
            return
        else:
            _log({"method": "POST", "path": self.path, "unhandled": True})
            self._json(404, {"error": {"message": "fake model: unknown endpoint"}})
            return
        if os.environ.get("FAKE_MODEL_DUMP"):
            with _LOCK, open(os.environ["FAKE_MODEL_DUMP"], "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"path": self.path, "body": body}) + "\n")
        done = len(results)
        tool = _pick(tools) if done < len(_script()) else None
        args = _arguments(done) if tool is not None else {}
        _log(
            {
                "method": "POST",
                "path": self.path,
                "tools": tools,
                "toolResults": results,
                "answer": tool or "text",
                "stream": body.get("stream"),
            }
        )
        if path.endswith("/messages"):
            if body.get("stream"):
                self._sse(list(_anthropic_events(tool, args)))
            else:
                self._json(200, _anthropic_message(tool, args))
        elif path.endswith("/responses"):
            self._sse(list(_responses_events(tool, args)))
        elif ":streamGenerateContent" in path:
            self._sse([(None, _gemini_chunk(tool, args))])
        else:
            self._json(200, _gemini_chunk(tool, args))


def main() -> None:
    """Serve on a free loopback port until killed; the port goes to argv[1]."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port_file = sys.argv[1]
    with open(port_file + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
