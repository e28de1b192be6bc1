"""The same-run baselines the transport and HTTP scenarios start beside lwc, as source text.

Each is written to a temporary file and run with this interpreter, so it uses the same Python
and the same installed `mcp` SDK as the run itself.
"""

from __future__ import annotations

from typing import Final

SDK_SERVER: Final = '''\
"""Minimal echo-tool MCP server on the mcp SDK's high-level API (benchmarks: transport)."""
from mcp.server import MCPServer

mcp = MCPServer("echo")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    mcp.run("stdio")
'''

FLOOR_SERVER: Final = '''\
"""A bare Trio echo loop over stdio: the floor any Trio server pays (benchmarks: transport)."""
import json
import os

import trio


def answer(msg):
    method = msg.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "floor", "version": "0"},
        }
    elif method == "tools/call":
        text = str(msg["params"]["arguments"]["text"])
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        result = {}
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


async def main():
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    pending = b""
    while data := await stdin.receive_some(65536):
        *lines, pending = (pending + data).split(b"\\n")
        out = [
            json.dumps(answer(m), separators=(",", ":")).encode() + b"\\n"
            for m in map(json.loads, filter(bytes.strip, lines))
            if "id" in m
        ]
        if out:
            await stdout.send_all(b"".join(out))


trio.run(main)
'''


SDK_HTTP_SERVER: Final = '''\
"""The mcp SDK's streamable HTTP server, stateless JSON mode, one echo tool (benchmarks: http)."""
import sys

from mcp.server import MCPServer

mcp = MCPServer("echo", log_level="WARNING")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    mcp.run(
        "streamable-http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
    )
'''
