"""Waits that take a trip through trio's loop only when they must wait.

`MemorySendChannel.send()` always yields to the scheduler, even when there is room, and on
the one path each such yield is one more pass of the run loop (an `epoll_wait`) per call.
`send` does the same without it when nothing has to wait; the bound and the backpressure
are the channel's own. The caller's next real wait is its checkpoint.
"""

from __future__ import annotations

from typing import TypeVar

import trio

T = TypeVar("T")


async def send(channel: trio.MemorySendChannel[T], item: T) -> None:
    """`channel.send(item)`, at once when it has room."""
    try:
        channel.send_nowait(item)
    except trio.WouldBlock:
        await channel.send(item)  # full: wait for room


def receive_ready(channel: trio.MemoryReceiveChannel[T]) -> T | None:
    """The next item already waiting in `channel`, or None: an actor takes every job that
    arrived together in one turn instead of one trip through the loop per job."""
    try:
        return channel.receive_nowait()
    except trio.WouldBlock:
        return None
