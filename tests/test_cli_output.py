"""CLI output: a coloured summary on a terminal, exact JSON when piped or with --json."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
from conftest import lwc_command

pytestmark = pytest.mark.slow


def on_terminal(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run `cmd` with stdout on a pseudo-terminal; return what it printed there."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.stderr is not None
    with proc.stderr:
        errors = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, errors
    return b"".join(chunks).decode()


@pytest.fixture
def wiki(workspace: Path, lwc_env: dict[str, str]) -> Path:
    subprocess.run(lwc_command("init"), cwd=workspace, env=lwc_env, check=True, capture_output=True)
    subprocess.run(
        lwc_command("page", "put", "nursery", "--title", "Nurseries", "--file", "-"),
        input=b"A nursery supervises child tasks.\n", cwd=workspace, env=lwc_env, check=True,
        capture_output=True,
    )  # fmt: skip
    return workspace


@pytest.mark.parametrize("command", [["search", "nursery"], ["explore", "nursery"]])
def test_terminal_gets_colour_and_pipe_gets_json(
    command: list[str], wiki: Path, lwc_env: dict[str, str]
) -> None:
    """On a terminal: ANSI-coloured text naming the hit; piped: JSON, no escape codes."""
    shown = on_terminal(lwc_command(*command), wiki, lwc_env)
    assert "\x1b[" in shown
    assert "nursery" in shown
    assert not shown.lstrip().startswith("{")
    piped = subprocess.run(lwc_command(*command), cwd=wiki, env=lwc_env, capture_output=True)
    assert b"\x1b[" not in piped.stdout
    parsed = json.loads(piped.stdout)
    assert "results" in json.dumps(parsed)


def test_no_color_and_json_flag_on_a_terminal(wiki: Path, lwc_env: dict[str, str]) -> None:
    """NO_COLOR keeps a terminal summary plain; --json prints JSON even on a terminal."""
    plain = on_terminal(lwc_command("explore", "nursery"), wiki, {**lwc_env, "NO_COLOR": "1"})
    assert "\x1b[" not in plain
    assert "memory: ready" in plain
    forced = on_terminal(lwc_command("explore", "nursery", "--json"), wiki, lwc_env)
    assert json.loads(forced)["memory"]["results"][0]["identifier"] == "nursery"
