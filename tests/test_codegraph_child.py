"""The code plane supervises real fake-CodeGraph processes through every fault and exit path."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from lwc_trio.actors.planes import open_code_plane_lane as open_code_plane
from lwc_trio.codegraph.explore_output import TEXT_LIMIT
from lwc_trio.codegraph.plane import QUEUE_LIMIT, CodePlaneConfig, CodeQuery

FAKE = Path(__file__).parent / "fakes" / "fake_codegraph.py"
HOST_TOKEN = "ghp_do_not_leak_me"


def process_gone(pid: int) -> bool:
    """Dead, or a zombie nobody but init will reap (init in a container may never do so)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return sys.platform != "linux"
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@attrs.define
class Fake:
    """A workspace with an indexed project, and a fake runtime scripted per process start."""

    tmp: Path
    workspace: Path
    root: Path

    def binary(self, script: str) -> Path:
        wrapper = self.tmp / f"codegraph-{script.replace(',', '-')}"
        command = [sys.executable, str(FAKE), str(self.tmp / "state"), script]
        wrapper.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
        wrapper.chmod(0o755)
        return wrapper

    def config(self, script: str, call_timeout: float = 10.0) -> CodePlaneConfig:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.tmp / "home"),
            "LANG": "C.UTF-8",
            "LWC_CODEGRAPH_BINARY": str(self.binary(script)),
            "GITHUB_TOKEN": HOST_TOKEN,
        }
        return CodePlaneConfig(call_timeout=call_timeout, env=env)

    def query(
        self, text: str = "shapes", project: Path | None = None, max_files: int = 3
    ) -> CodeQuery:
        return CodeQuery(
            query=text,
            project_path=project or self.root / "src",
            workspace=self.workspace,
            max_files=max_files,
        )

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        path = self.tmp / "state" / "events.jsonl"
        if not path.exists():
            return []
        events = [json.loads(line) for line in path.read_text().splitlines()]
        return [e for e in events if kind is None or e["event"] == kind]

    def calls(self) -> list[dict[str, Any]]:
        return [
            e["message"] for e in self.events("recv") if e["message"].get("method") == "tools/call"
        ]

    def starts(self) -> list[int]:
        return [e["pid"] for e in self.events("start")]

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        # Polls a real subprocess's log (nothing to wait on in-process): the only sleeps here.
        with trio.fail_after(5):
            while not predicate():  # noqa: ASYNC110
                await trio.sleep(0.01)


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    workspace = tmp_path / "ws"
    root = workspace / "proj"
    (root / "src").mkdir(parents=True)
    (root / ".codegraph").mkdir()
    (root / ".codegraph" / "codegraph.db").write_bytes(b"")
    (tmp_path / "state").mkdir()
    (tmp_path / "home").mkdir()
    return Fake(tmp=tmp_path, workspace=workspace, root=root)


async def test_answer_is_ready_with_files_in_spec_key_order(fake: Fake) -> None:
    """A normal answer becomes {state, text, truncated, files} with the sections' paths."""
    async with open_code_plane(fake.config("normal")) as plane:
        state = await plane.explore(fake.query("shapes", max_files=2))
    assert list(state) == ["state", "text", "truncated", "files"]
    assert state["state"] == "ready"
    assert state["truncated"] is False
    assert state["files"] == ["pkg/file_0.py", "pkg/file_1.py"]
    assert "**Exploration: shapes**" in state["text"]
    (call,) = fake.calls()
    assert call["params"] == {
        "name": "codegraph_explore",
        "arguments": {"query": "shapes", "maxFiles": 2, "projectPath": str(fake.root)},
    }


async def test_child_runs_serve_in_root_with_minimal_env_in_own_group(fake: Fake) -> None:
    """The child is `serve --mcp --no-watch --path ROOT`, cwd ROOT, own group, no host token."""
    async with open_code_plane(fake.config("normal")) as plane:
        await plane.explore(fake.query())
    (start,) = fake.events("start")
    assert start["argv"] == ["serve", "--mcp", "--no-watch", "--path", str(fake.root)]
    assert start["cwd"] == str(fake.root)
    assert start["pgid"] == start["pid"]
    env = start["env"]
    assert HOST_TOKEN not in json.dumps(env)
    assert "LWC_CODEGRAPH_BINARY" not in env
    for name, value in {
        "CODEGRAPH_TELEMETRY": "0", "DO_NOT_TRACK": "1", "NO_COLOR": "1",
        "CODEGRAPH_NO_DAEMON": "1", "CODEGRAPH_NO_WATCH": "1", "CODEGRAPH_NO_UPDATE_CHECK": "1",
    }.items():  # fmt: skip
        assert env[name] == value
    assert env["HOME"] == str(fake.tmp / "home")
    handshake = [e["message"] for e in fake.events("recv")][:2]
    assert handshake[0]["method"] == "initialize"
    assert handshake[0]["params"]["protocolVersion"] == "2024-11-05"
    assert handshake[1] == {"jsonrpc": "2.0", "method": "notifications/initialized"}


async def test_second_and_concurrent_queries_reuse_one_child(fake: Fake) -> None:
    """Later queries, even six at once, go to the same single process, each its own answer."""
    results: dict[str, dict[str, Any]] = {}

    async def ask(text: str) -> None:
        results[text] = await plane.explore(fake.query(text))

    async with open_code_plane(fake.config("normal")) as plane:
        await ask("first")
        pid = plane.child_pid
        async with trio.open_nursery() as nursery:
            for n in range(6):
                nursery.start_soon(ask, f"q{n}")
        assert plane.child_pid == pid
    assert fake.starts() == [pid]
    for text, state in results.items():
        assert state["state"] == "ready"
        assert f"**Exploration: {text}**" in state["text"]


async def test_child_notifications_are_skipped_and_its_ping_answered(fake: Fake) -> None:
    """A log notification and a ping request before the reply do not disturb the call."""
    async with open_code_plane(fake.config("noise")) as plane:
        state = await plane.explore(fake.query())
    assert state["state"] == "ready"
    replies = [e["message"] for e in fake.events("recv") if "method" not in e["message"]]
    assert replies == [{"jsonrpc": "2.0", "id": "srv-1", "result": {}}]


@pytest.mark.parametrize(
    ("mode", "code"),
    [
        ("crash", "codegraph_crashed"),
        ("handshake_exit", "codegraph_crashed"),
        ("wrong_id", "codegraph_bad_response"),
        ("oversized", "codegraph_bad_response"),
        ("garbage", "codegraph_bad_response"),
        ("no_content", "codegraph_bad_response"),
        ("hang", "codegraph_timeout"),
    ],
)
async def test_fault_kills_child_and_next_call_gets_a_fresh_one(
    fake: Fake, mode: str, code: str
) -> None:
    """Each fault answers its code within the deadline, the child is reaped, the next one works."""
    async with open_code_plane(fake.config(f"{mode},normal", call_timeout=0.5)) as plane:
        with trio.fail_after(3):
            failed = await plane.explore(fake.query())
        assert failed == {
            "state": "error",
            "error": {"code": code, "message": failed["error"]["message"]},
        }
        assert list(failed["error"]) == ["code", "message"]
        first = fake.starts()[0]
        assert process_gone(first)
        recovered = await plane.explore(fake.query())
        assert recovered["state"] == "ready"
        assert plane.child_pid not in (None, first)
    assert len(fake.starts()) == 2


async def test_crash_message_names_exit_status_and_last_stderr_line(fake: Fake) -> None:
    """A child that exits during the handshake is reported with its status and its last words."""
    async with open_code_plane(fake.config("handshake_exit")) as plane:
        state = await plane.explore(fake.query())
    message = state["error"]["message"]
    assert "MCP handshake" in message
    assert "exit status 4" in message
    assert "fake: refusing to start" in message


async def test_tool_error_keeps_the_child(fake: Fake) -> None:
    """`isError: true` is codegraph_tool_error with the child's message, and the child lives on."""
    async with open_code_plane(fake.config("is_error")) as plane:
        first = await plane.explore(fake.query())
        pid = plane.child_pid
        second = await plane.explore(fake.query())
        assert plane.child_pid == pid
    assert first == second
    assert first["error"] == {
        "code": "codegraph_tool_error",
        "message": "CodeGraph reported an error: Error: query must be a non-empty string",
    }
    assert len(fake.starts()) == 1


async def test_cancel_in_flight_notifies_child_keeps_it_and_drops_late_reply(fake: Fake) -> None:
    """A caller's deadline abandons only its call: cancel sent, same child, next answer its own."""
    async with open_code_plane(fake.config("slow")) as plane:
        with trio.move_on_after(0.5) as scope:
            await plane.explore(fake.query("first"))
        assert scope.cancelled_caught
        assert len(fake.calls()) == 1  # it was in flight, not still starting
        pid = plane.child_pid
        assert pid is not None
        state = await plane.explore(fake.query("second"))
        assert plane.child_pid == pid
    assert "**Exploration: second**" in state["text"]
    assert "first" not in state["text"]
    first_id = fake.calls()[0]["id"]
    cancels = [
        e["message"]["params"]["requestId"]
        for e in fake.events("recv")
        if e["message"].get("method") == "notifications/cancelled"
    ]
    assert cancels == [first_id]
    assert len(fake.starts()) == 1


async def test_cancel_while_queued_just_leaves_the_queue(fake: Fake) -> None:
    """A waiter whose deadline passes in the queue sends nothing; the queue keeps working."""
    async with open_code_plane(fake.config("slow")) as plane, trio.open_nursery() as nursery:
        nursery.start_soon(plane.explore, fake.query("holder"))
        await fake.wait_for(lambda: len(fake.calls()) == 1)
        with trio.move_on_after(0.2) as scope:
            await plane.explore(fake.query("quitter"))
        assert scope.cancelled_caught
        state = await plane.explore(fake.query("patient"))
    assert state["state"] == "ready"
    assert [c["params"]["arguments"]["query"] for c in fake.calls()] == ["holder", "patient"]
    assert not any(
        e["message"].get("method") == "notifications/cancelled" for e in fake.events("recv")
    )


async def test_queue_beyond_its_bound_answers_busy_at_once(fake: Fake) -> None:
    """With one call in flight and the queue full, the next call is refused without waiting."""
    async with open_code_plane(fake.config("hang", call_timeout=30)) as plane:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(plane.explore, fake.query("in-flight"))
            await fake.wait_for(lambda: len(fake.calls()) == 1)
            for n in range(QUEUE_LIMIT):
                nursery.start_soon(plane.explore, fake.query(f"waiter{n}"))
            # Each waiter checks readiness on the plane's lane before it queues.
            await fake.wait_for(lambda: plane.waiting == QUEUE_LIMIT)
            with trio.fail_after(1):
                busy = await plane.explore(fake.query("one too many"))
            nursery.cancel_scope.cancel()
        pid = plane.child_pid
        assert pid is not None
    assert busy["error"]["code"] == "codegraph_timeout"
    assert "busy" in busy["error"]["message"]
    assert len(fake.calls()) == 1
    assert process_gone(pid)


async def test_root_change_replaces_the_child(fake: Fake) -> None:
    """A query under another index root stops the old child and starts one for the new root."""
    other = fake.workspace / "other"
    (other / ".codegraph").mkdir(parents=True)
    (other / ".codegraph" / "codegraph.db").write_bytes(b"")
    async with open_code_plane(fake.config("normal")) as plane:
        await plane.explore(fake.query())
        first = plane.child_pid
        state = await plane.explore(fake.query(project=other))
        second = plane.child_pid
        assert first is not None
        assert process_gone(first)
    assert state["state"] == "ready"
    assert second not in (None, first)
    roots = [e["argv"][-1] for e in fake.events("start")]
    assert roots == [str(fake.root), str(other)]


async def test_big_answer_is_cut_at_a_file_section_boundary(fake: Fake) -> None:
    """Text over 15,000 characters ends before a section header; `files` lists survivors only."""
    async with open_code_plane(fake.config("big")) as plane:
        state = await plane.explore(fake.query())
    assert state["truncated"] is True
    assert len(state["text"]) <= TEXT_LIMIT
    assert state["text"].endswith("```\n\n")
    assert 0 < len(state["files"]) < 40
    assert state["files"] == [f"pkg/file_{n}.py" for n in range(len(state["files"]))]


@pytest.mark.parametrize("ending", ["normal", "exception", "cancelled in flight"])
async def test_no_process_outlives_the_plane(fake: Fake, ending: str) -> None:
    """However the block ends, the child and the helper it forked are killed and reaped."""
    mode = "hang" if ending == "cancelled in flight" else "normal"

    async def use_plane() -> None:
        async with open_code_plane(fake.config(f"{mode}+grandchild")) as plane:
            await plane.explore(fake.query())
            if ending == "exception":
                raise ValueError("boom")

    if ending == "exception":
        with pytest.raises(ValueError, match="boom"):
            await use_plane()
    elif ending == "cancelled in flight":
        with trio.move_on_after(5) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(use_plane)
                await fake.wait_for(lambda: len(fake.calls()) == 1)
                nursery.cancel_scope.cancel()
        assert not scope.cancelled_caught
    else:
        await use_plane()
    (child,) = fake.starts()
    (helper,) = [e["child"] for e in fake.events("grandchild")]
    assert process_gone(child)  # our own child: reaped before the block returned
    # The helper was SIGKILLed with the group; it is init's to reap, so allow it a moment.
    await fake.wait_for(lambda: process_gone(helper))


async def test_missing_runtime_or_index_starts_nothing(fake: Fake) -> None:
    """Readiness answers come before any process is started, in SPEC order."""
    config = fake.config("normal")
    no_runtime = attrs.evolve(
        config, env={**config.env, "LWC_CODEGRAPH_BINARY": str(fake.tmp / "none")}
    )
    bare = fake.workspace / "bare"
    bare.mkdir()
    async with open_code_plane(no_runtime) as plane:
        missing_runtime = await plane.explore(fake.query(project=bare))
    async with open_code_plane(config) as plane:
        missing_index = await plane.explore(fake.query(project=bare))
    assert missing_runtime["error"]["code"] == "codegraph_runtime_missing"
    assert missing_index["error"]["code"] == "codegraph_index_missing"
    assert missing_index["nextAction"] == {
        "command": "lwc --scope project cg init",
        "cwd": str(bare),
    }
    assert fake.starts() == []


async def test_unstartable_binary_is_reported_as_crashed(fake: Fake) -> None:
    """An executable that cannot be exec'd yields codegraph_crashed naming the OS error."""
    broken = fake.tmp / "broken"
    broken.write_text("#!/nonexistent/interpreter\n")
    broken.chmod(0o755)
    config = fake.config("normal")
    config = attrs.evolve(config, env={**config.env, "LWC_CODEGRAPH_BINARY": str(broken)})
    async with open_code_plane(config) as plane:
        state = await plane.explore(fake.query())
    assert state["error"]["code"] == "codegraph_crashed"
    assert state["error"]["message"].startswith("could not start CodeGraph:")


@pytest.mark.parametrize("call", ["readiness", "_changed_during_call"])
async def test_a_hung_filesystem_call_holds_a_lane_thread_not_the_loop(
    fake: Fake, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    """The readiness check before a call, or the index lookup and `/proc` scan after it,
    hung on a dead mount (scripted: it blocks until released, 2 s at most) holds one of the
    plane's lane threads, never the event loop: the test's own task runs meanwhile and is
    the one that releases it, and the call then answers."""
    import threading

    from lwc_trio.codegraph import plane as plane_module

    entered, release = threading.Event(), threading.Event()
    released: list[bool] = []
    real = getattr(plane_module, call)

    def hung(*args: Any) -> Any:
        entered.set()
        released.append(release.wait(2))  # fault injection: a stat on a dead mount
        return real(*args)

    monkeypatch.setattr(plane_module, call, hung)
    states: list[dict[str, Any]] = []

    async def explore() -> None:
        states.append(await plane.explore(fake.query("q")))

    async with open_code_plane(fake.config("normal")) as plane, trio.open_nursery() as nursery:
        nursery.start_soon(explore)
        await trio.to_thread.run_sync(entered.wait, 5)
        release.set()  # from the event loop, which the hung call must not hold
    assert released == [True]
    assert [state["state"] for state in states] == ["ready"]
