"""Shared fixtures: an isolated HOME and workspace, and the environment for `lwc` processes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import trio.testing
from hypothesis import HealthCheck, settings
from lane_clock import HeldClock
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]

# Hypothesis's own wall-clock checks (200 ms an example, "input generation is slow") measure
# the machine's load, not the code: on a loaded machine they failed property tests whose
# properties held.
settings.register_profile("lwc", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("lwc")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private $HOME, so no test can see or touch the real one."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace directory (canonical)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def lwc_env(home: Path) -> dict[str, str]:
    """Environment for a child `lwc`: private HOME, no faults, no runtime override."""
    return child_env(home)


@pytest.fixture
async def held_clock(autojump_clock: trio.testing.MockClock) -> HeldClock:
    """`autojump_clock`, held still while a lane thread works (tests/lane_clock.py); a test
    asks for both, so pytest-trio runs it on that clock."""
    return HeldClock(autojump_clock)


def child_env(home: Path) -> dict[str, str]:
    """What a child `lwc` sees: this PATH, HOME set to `home`, C.UTF-8, this checkout."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(REPO),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def lwc_command(*args: str) -> list[str]:
    """argv that runs the `lwc` CLI with this interpreter."""
    return [sys.executable, "-m", "lwc_trio", *args]


def sdk_client(cwd: Path, env: dict[str, str], *extra: str) -> Client:
    """The `mcp` SDK's client for a real `lwc serve --mcp EXTRA` started in `cwd` (which is
    its workspace unless EXTRA says `--path`); use it with `async with`."""
    return Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "lwc_trio", "serve", "--mcp", *extra],
            env=env,
            cwd=str(cwd),
        )
    )
