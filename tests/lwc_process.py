"""A raw JSON-lines driver for a real `lwc serve --mcp` process (used by black-box tests).

It is the benchmarks' client, `benchmarks.stdio.StdioClient`, in its sequential mode: the
tests read answers in order with `recv`, `recv_line` and `rest`.
"""

from __future__ import annotations

from collections.abc import Sequence

import trio
from conftest import lwc_command

from benchmarks.messages import tool_call as call
from benchmarks.stdio import StdioClient

__all__ = ["RawServer", "call"]


class RawServer:
    """Starts `lwc serve --mcp` under the harness's client."""

    @staticmethod
    async def start(
        nursery: trio.Nursery, args: Sequence[str], env: dict[str, str], cwd: str
    ) -> StdioClient:
        """`lwc serve --mcp ARGS` with piped stdio; killed if the nursery is cancelled, and
        the nursery waits for it to exit."""
        return await StdioClient.start(
            nursery, lwc_command("serve", "--mcp", *args), env, cwd, route=False
        )
