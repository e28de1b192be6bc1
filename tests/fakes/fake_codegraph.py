"""A fake `codegraph serve --mcp` speaking newline-delimited JSON-RPC on stdio, for fault tests.

Usage: fake_codegraph.py STATE_DIR SCRIPT [codegraph args...]

With codegraph args `init --yes DIR` it plays `codegraph init` instead: it logs its start (with
whether stdin is /dev/null), prints progress and writes DIR/.codegraph/codegraph.db; mode
`init_fail` prints an error and exits with status 5 instead.

SCRIPT is a comma-separated list of modes; the Nth process started with the same STATE_DIR
uses the Nth mode (the last one repeats), so "crash,normal" crashes once and then behaves.
Every process appends JSON events to STATE_DIR/events.jsonl: its start (pid, pgid, argv, cwd,
env), every message it receives, and the pid of the helper it forks (mode `grandchild`).

Modes (what happens on `tools/call`, unless said otherwise):
  normal        answer with file sections for min(maxFiles, 3) files naming the query
  big           answer with 40 file sections of ~600 characters (over the 15,000 cap)
  noise         send a notification and a `ping` request, await the pong, then answer
  MODE+grandchild  fork `sleep 300` into our process group at start, then behave as MODE
  hang          never answer
  slow          answer after 1.0 s (reads no input meanwhile)
  crash         exit with status 3 without answering
  wrong_id      answer with the request id + 1000
  oversized     answer with a single 300 KiB line
  garbage       print a line that is not JSON
  handshake_exit  exit with status 4 on `initialize`
  is_error      answer with `isError: true`
  no_content    answer with a result lacking `content`
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def log(state: Path, event: dict[str, object]) -> None:
    with (state / "events.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"pid": os.getpid(), **event}) + "\n")


def pick_mode(state: Path, script: list[str]) -> str:
    # O_APPEND writes of one short line are atomic, so concurrent starts count correctly.
    with (state / "starts").open("a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
    count = len((state / "starts").read_text(encoding="utf-8").split())
    return script[min(count, len(script)) - 1]


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def explore_text(query: str, files: int, body_lines: int = 3) -> str:
    parts = [f"**Exploration: {query}**", "", "**Source Code**", ""]
    for n in range(files):
        parts.append(f"**`pkg/file_{n}.py`** — func_{n}(function)")
        parts.append("")
        parts.append("```python")
        parts.extend(f"{i}\t# {query} line {i} of file {n}" for i in range(1, body_lines + 1))
        parts.append("```")
        parts.append("")
    return "\n".join(parts)


def answer(request_id: object, mode: str, arguments: dict[str, object]) -> None:
    query = str(arguments.get("query"))
    max_files = arguments.get("maxFiles")
    files = min(max_files, 3) if isinstance(max_files, int) else 3
    if mode == "hang":
        return
    if mode == "slow":
        time.sleep(1.0)
    if mode == "crash":
        sys.exit(3)
    if mode == "garbage":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
        return
    if mode == "oversized":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"pad": "x" * (300 * 1024)}})
        return
    if mode == "wrong_id":
        assert isinstance(request_id, int)
        request_id += 1000
    if mode == "noise":
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}})
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
        # Answer only once the client has answered our ping: proves it did so mid-call.
        pong = json.loads(sys.stdin.readline())
        log(STATE, {"event": "recv", "message": pong})
    if mode == "no_content":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"structured": True}})
        return
    if mode == "is_error":
        result: dict[str, object] = {
            "content": [{"type": "text", "text": "Error: query must be a non-empty string"}],
            "isError": True,
        }
    elif mode == "big":
        result = {"content": [{"type": "text", "text": explore_text(query, 40, body_lines=12)}]}
    else:
        result = {"content": [{"type": "text", "text": explore_text(query, files)}]}
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def fake_init(state: Path, mode: str, directory: str) -> None:
    null, stdin = os.stat(os.devnull), os.fstat(0)
    log(state, {"event": "init", "stdinIsDevNull": (null.st_rdev, null.st_ino) == (
        stdin.st_rdev, stdin.st_ino)})  # fmt: skip
    print("Scanning files...", flush=True)
    if mode == "init_fail":
        print("Failed: cannot parse the project", flush=True)
        sys.exit(5)
    index = Path(directory) / ".codegraph"
    index.mkdir(exist_ok=True)
    (index / "codegraph.db").write_bytes(b"SQLite format 3\x00")
    print("Indexed 3 files", flush=True)


STATE = Path(sys.argv[1]) if len(sys.argv) > 2 else Path()


def main() -> None:
    state, script = STATE, sys.argv[2].split(",")
    mode = pick_mode(state, script)
    log(state, {
        "event": "start", "mode": mode, "argv": sys.argv[3:], "cwd": os.getcwd(),
        "pgid": os.getpgid(0), "env": dict(os.environ),
    })  # fmt: skip
    if sys.argv[3:4] == ["init"]:
        fake_init(state, mode, sys.argv[-1])
        return
    if mode.endswith("+grandchild"):
        mode = mode.removesuffix("+grandchild")
        helper = subprocess.Popen(["sleep", "300"])
        log(state, {"event": "grandchild", "child": helper.pid})
    for raw in sys.stdin:
        message = json.loads(raw)
        log(state, {"event": "recv", "message": message})
        method = message.get("method")
        if method == "initialize":
            if mode == "handshake_exit":
                sys.stderr.write("fake: refusing to start\n")
                sys.exit(4)
            send({
                "jsonrpc": "2.0", "id": message["id"],
                "result": {
                    "protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "codegraph", "version": "1.6.1"},
                },
            })  # fmt: skip
        elif method == "tools/call":
            answer(message["id"], mode, message["params"]["arguments"])
        elif method == "ping" and "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})


if __name__ == "__main__":
    main()
