"""The programs lwc starts are found on PATH's absolute entries, and git in a child is guarded."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from lwc_trio.programs import find_program, git_guarded, search_path


def test_relative_and_empty_path_entries_are_dropped() -> None:
    """`.`, `bin` and empty entries name the working directory: they never count."""
    assert search_path(".::bin:/usr/bin:/bin:") == "/usr/bin:/bin"
    assert search_path("") == search_path(None) != ""
    assert all(os.path.isabs(entry) for entry in search_path(".").split(os.pathsep))


def test_a_program_in_the_working_directory_is_not_found(tmp_path: Path) -> None:
    """With `.` first on PATH, a `git` in the working directory is never the one found."""
    planted = tmp_path / "git"
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o755)
    previous = os.getcwd()
    os.chdir(tmp_path)
    try:
        found = find_program("git", {"PATH": f".:{os.environ['PATH']}"})
    finally:
        os.chdir(previous)
    assert found is not None
    assert Path(found) != planted
    assert os.path.isabs(found)


def test_git_guarded_appends_to_the_callers_own_git_configuration(tmp_path: Path) -> None:
    """A caller's `GIT_CONFIG_COUNT` entries stay; core.fsmonitor=false comes after them and
    wins over the repository's own `.git/config` (checked with the real git)."""
    env = git_guarded({"PATH": "/usr/bin", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.b",
                       "GIT_CONFIG_VALUE_0": "c"})  # fmt: skip
    assert (env["GIT_CONFIG_COUNT"], env["GIT_CONFIG_KEY_1"], env["GIT_CONFIG_VALUE_1"]) == (
        "2",
        "core.fsmonitor",
        "false",
    )
    assert env["GIT_CONFIG_KEY_0"] == "a.b"
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "config", "core.fsmonitor", "/bin/false"],
                   check=True)  # fmt: skip
    shown = subprocess.run(
        ["git", "-C", str(tmp_path), "config", "core.fsmonitor"],
        env={**os.environ, **git_guarded({"PATH": os.environ["PATH"]})},
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.strip() == "false"
