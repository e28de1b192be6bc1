"""A raw JSON-lines driver for a real `lwc serve --mcp` process (used by black-box tests)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from functools import partial
from typing import Any

import trio
from conftest import lwc_command


class RawServer:
    """Talks to a real server over its pipes, one JSON line at a time."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self._buf = bytearray()
        self.stderr = b""

    @classmethod
    async def start(
        cls, nursery: trio.Nursery, args: Sequence[str], env: dict[str, str], cwd: str
    ) -> RawServer:
        process = await nursery.start(
            partial(
                trio.run_process,
                lwc_command("serve", "--mcp", *args),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=cwd,
                check=False,
            )
        )
        server = cls(process)
        nursery.start_soon(server._collect_stderr)
        return server

    async def _collect_stderr(self) -> None:
        assert self.process.stderr is not None
        async for chunk in self.process.stderr:
            self.stderr += chunk

    async def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(data)

    async def send(self, message: Any) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()

    async def recv(self) -> dict[str, Any]:
        """The next response line (fails the test if stdout ends first)."""
        line = await self.recv_line()
        assert line is not None, "stdout ended before a response arrived"
        value: dict[str, Any] = json.loads(line)
        return value

    async def recv_line(self) -> bytes | None:
        assert self.process.stdout is not None
        while b"\n" not in self._buf:
            chunk = await self.process.stdout.receive_some(65536)
            if not chunk:
                return None
            self._buf += chunk
        line, _, rest = bytes(self._buf).partition(b"\n")
        self._buf = bytearray(rest)
        return line

    async def rest(self) -> list[dict[str, Any]]:
        """Every remaining response until stdout closes."""
        out = []
        while (line := await self.recv_line()) is not None:
            out.append(json.loads(line))
        return out

    async def wait(self) -> int:
        return await self.process.wait()


def call(rid: Any, arguments: Any, name: str = "lwc_explore") -> dict[str, Any]:
    """A tools/call request."""
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
