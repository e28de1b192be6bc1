"""Which program an agent entry runs (never a bare `lwc`), and whether a registered one runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from conftest import REPO

from lwc_trio import __version__
from lwc_trio.agents.command import check_command, find_launcher


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def test_launcher_prefers_path_then_the_running_lwc_then_python(tmp_path: Path) -> None:
    """SPEC §7: the `lwc` on PATH, else the executable running the installer (its argv[0],
    or the `lwc` beside its Python), else this Python with `-P -m lwc_trio` — always absolute
    (`-P`: the project directory the host starts it in never comes first on `sys.path`)."""
    on_path = _script(tmp_path / "bin" / "lwc", "echo lwc 1")
    venv = _script(tmp_path / "venv" / "bin" / "lwc", "echo lwc 2")
    python = tmp_path / "venv" / "bin" / "python"
    found = find_launcher({"PATH": str(on_path.parent)}, str(venv), str(python))
    assert (found.command, found.prefix, found.source) == (str(on_path), (), "path")
    os.chdir(tmp_path)
    found = find_launcher({"PATH": "/nonexistent"}, "venv/bin/lwc", "/elsewhere/python")
    assert (found.command, found.source) == (str(venv), "installer")
    found = find_launcher({"PATH": "/nonexistent"}, "/x/__main__.py", str(python))
    assert (found.command, found.source) == (str(venv), "installer")
    bare = tmp_path / "bare" / "python3"
    found = find_launcher({"PATH": "/nonexistent"}, "/x/__main__.py", str(bare))
    assert (found.command, found.prefix, found.source) == (
        str(bare),
        ("-P", "-m", "lwc_trio"),
        "python",
    )


def test_an_interpreter_entry_is_checked_with_its_module_arguments() -> None:
    """A `python -m lwc_trio serve --mcp` entry is run as `python -m lwc_trio --version`."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(REPO)}
    check = check_command(sys.executable, ["-m", "lwc_trio", "serve", "--mcp"], env)
    assert (check.runs, check.version, check.problem) == (True, f"lwc {__version__}", None)


def test_commands_that_do_not_run_say_why(tmp_path: Path) -> None:
    """Relative paths, failing programs and programs that hang are reported, not trusted."""
    env = {"PATH": str(tmp_path)}
    assert "relative path" in str(check_command("bin/lwc", [], env).problem)
    failing = _script(tmp_path / "failing", "echo boom >&2; exit 3")
    assert check_command(str(failing), [], env).problem == f"`{failing} --version` exited 3: boom"
    hanging = _script(tmp_path / "hanging", "exec /bin/sleep 30")
    check = check_command(str(hanging), [], env, timeout=0.2)
    assert check.runs is False
    assert "did not finish within 0.2 s" in str(check.problem)
    _script(tmp_path / "lwc", "echo lwc 9")
    check = check_command("lwc", ["serve", "--mcp"], env)
    assert check.runs is True
    assert "a host with a shorter PATH" in str(check.problem)
