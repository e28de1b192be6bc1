"""A reader waits out a Wiki write whose commit is slow (the short soak's rare `store_busy`).

A CLI write holds the store's exclusive lock only while it commits, but that commit flushes
the journal, its directory and the store to disk (four fsyncs), and on a machine whose disk
is busy with other work those take long: a one-Page `lwc page put` was measured holding
readers off for 0.6 s under a moderate load, and the soak once saw a memory call give up
with `store_busy` after the reader's fixed 2 s limit. A read has the whole memory deadline
(5 s by default), so it now waits for the lock for most of it, and only a lock held longer
than that is `store_busy`, still answered before the deadline (SPEC §4).

The slow commit is a real SQLite exclusive lock held by another process for a set time (the
one fault injected here: a disk that takes that long to flush), against the real server
driven by the `mcp` SDK client.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import lwc_command, sdk_client

pytestmark = pytest.mark.slow

HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def wiki(workspace: Path, env: dict[str, str]) -> Path:
    """A project Wiki with one Page about alpha, written with the real CLI."""
    body = workspace / "alpha.md"
    body.write_text("# Alpha\n\nThe alpha rollout plan.\n")
    for args in (
        ("init", "--no-git-exclude"),
        ("page", "put", "alpha", "--title", "Alpha", "--file", str(body)),
    ):
        subprocess.run(lwc_command(*args), cwd=workspace, env=env, check=True, capture_output=True)
    return workspace / ".lwc" / "wiki.db"


@contextmanager
def exclusive_lock(db: Path, seconds: float) -> Iterator[None]:
    """Another process holds `db`'s exclusive lock for `seconds` from when this yields."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), str(seconds)], stdout=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "locked\n"
            yield
        finally:
            proc.wait(timeout=30)


async def explore(workspace: Path, env: dict[str, str], db: Path, hold: float, *extra: str) -> Any:
    """One memory call sent while a write holds the lock for `hold` seconds."""
    async with sdk_client(workspace, env, "--path", str(workspace), *extra) as client:
        with exclusive_lock(db, hold):
            result = await client.call_tool(
                "lwc_explore", {"query": "alpha", "projectPath": str(workspace)}
            )
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def test_a_commit_slower_than_two_seconds_is_waited_for(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """A commit holding readers off for 2.5 s, inside the 5 s deadline: the answer is ready."""
    db = wiki(workspace, lwc_env)
    answer = await explore(workspace, lwc_env, db, 2.5)
    memory = answer["memory"]
    assert memory["state"] == "ready", (memory.get("error"), answer["timings"])
    assert [row["identifier"] for row in memory["results"]] == ["alpha"]


async def test_a_lock_held_past_the_deadline_is_store_busy_in_time(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """With a 1 s memory deadline and a lock held for 3 s, the answer names the cause,
    `store_busy`, before the deadline (not `memory_timeout`)."""
    db = wiki(workspace, lwc_env)
    answer = await explore(workspace, lwc_env, db, 3.0, "--memory-timeout", "1")
    memory = answer["memory"]
    assert memory["state"] == "error"
    assert memory["error"]["code"] == "store_busy", (memory["error"], answer["timings"])
    assert answer["timings"]["memoryMs"] < 1000
