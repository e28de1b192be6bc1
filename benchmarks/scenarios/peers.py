"""The same-run baselines the transport and HTTP scenarios start beside lwc, as source text.

Each is written to a temporary file and run with this interpreter, so it uses the same Python
and the same installed `mcp` SDK as the run itself. The echo servers are the peers for start-up,
ping and memory; the *same-work* servers (issue 11) are the fair peers for tool calls: the SDK's
`MCPServer` with a `lwc_explore` tool that runs lwc's own path check and memory engine in
`anyio.to_thread` and returns the same result object.
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


_SAME_WORK: Final = '''\
"""lwc's memory work on the mcp SDK's MCPServer: the fair peer for tool calls (benchmarks)."""
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.server import MCPServer

from lwc_trio.memory.query.engine import MemoryQuery, explore_memory
from lwc_trio.paths import authorize_project_path

WORKSPACE = Path(os.path.realpath(os.getcwd()))
HOME = Path(os.path.realpath(os.environ["HOME"]))
ENV = dict(os.environ)
mcp = MCPServer("same-work", log_level="WARNING")


def _explore(query: str, project_path: str, scope: str, max_documents: int) -> dict[str, Any]:
    project = authorize_project_path(project_path, WORKSPACE, ENV)
    started = time.perf_counter()
    memory = explore_memory(
        MemoryQuery(
            query=query,
            project_path=project,
            workspace=WORKSPACE,
            home=HOME,
            scope=scope,
            allowed_scopes=frozenset({"project", "global"}),
            max_documents=max_documents,
        ),
        cancelled=threading.Event(),
    )
    return {
        "query": query,
        "projectPath": str(project),
        "mode": "memory",
        "scope": scope,
        "memory": memory,
        "codeGraph": {"state": "not_requested"},
        "timings": {"memoryMs": round((time.perf_counter() - started) * 1000), "codeMs": None},
    }


@mcp.tool()
async def lwc_explore(
    query: str, projectPath: str, scope: str = "all", maxDocuments: int = 8
) -> dict[str, Any]:
    """Read bounded Wiki memory (the same work as lwc's tool in mode memory)."""
    return await anyio.to_thread.run_sync(_explore, query, projectPath, scope, maxDocuments)


if __name__ == "__main__":
    RUN
'''

SAME_WORK_SERVER: Final = _SAME_WORK.replace("RUN", 'mcp.run("stdio")')
"""Over stdio; started in the workspace (its cwd is the workspace it authorizes against)."""

SAME_WORK_HTTP_SERVER: Final = _SAME_WORK.replace(
    "RUN",
    'mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), '
    'streamable_http_path="/mcp", stateless_http=True, json_response=True)',
)
"""Stateless JSON-response streamable HTTP on port argv[1] (the SDK's uvicorn + Starlette)."""
