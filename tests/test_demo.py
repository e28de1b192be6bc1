"""The README's demo runs end to end: a real Wiki from docs/ served to a real MCP client."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow


def test_demo_serves_docs_wiki_and_shows_each_mode() -> None:
    """scripts/demo.py builds the Wiki, connects, and shows memory, code and all modes."""
    env = {key: value for key, value in os.environ.items() if key != "LWC_FAULTS"}
    env.pop("LWC_CODEGRAPH_BINARY", None)
    env["HOME"] = str(REPO / ".cache" / "no-such-home")  # no ~/.lwc runtime is picked up
    # The demo uses the runtime ./scripts/test.sh installs under .cache/, if it is there.
    has_runtime = any((REPO / ".cache" / "codegraph").glob("node_modules/@colbymchenry/*/bin"))
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "demo.py")],
        env=env, capture_output=True, text=True, timeout=240, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Connected to lwc" in out
    assert "Tools: lwc_explore" in out
    assert "memory: ready" in out
    if has_runtime:
        assert "code: ready, files: lwc_trio/" in out
        assert "partial: False" in out
    else:
        assert "next step for the user: `lwc cg install`" in out
        assert "partial: True" in out
