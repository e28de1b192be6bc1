"""A temporary HOME and project with a fake `lwc` on PATH: what the agent and doctor tests run in."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from conftest import REPO


class FakeHome:
    """A temporary HOME, a project directory (the cwd) and a fake `lwc` on PATH."""

    snapshot_mtimes = False
    """Whether `snapshot` records each entry's mtime (0 when it does not)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "work" / "proj"
        self.bin = root / "bin"
        for path in (self.home, self.project, self.bin):
            path.mkdir(parents=True)
        self.lwc = self.bin / "lwc"
        self.lwc.write_text("#!/bin/sh\necho lwc 0.0-test\n")
        self.lwc.chmod(0o755)
        self.vars = {
            "HOME": str(self.home),
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "PYTHONPATH": str(REPO),
            "LANG": "C.UTF-8",
        }

    def spawn(
        self, args: tuple[str, ...], cwd: Path | None, env: dict[str, str]
    ) -> subprocess.CompletedProcess[str]:
        """Run `lwc ARGS` as a subprocess in `cwd` (default: the project), output captured."""
        return subprocess.run(
            [sys.executable, "-m", "lwc_trio", *args],
            cwd=cwd or self.project,
            env={**self.vars, **env},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def snapshot(self) -> dict[str, tuple[bytes | str, int, int]]:
        """Every file, link and folder under HOME and the project: content, mode and mtime."""
        out: dict[str, tuple[bytes | str, int, int]] = {}
        for base in (self.home, self.root / "work"):
            for directory, dirs, files in os.walk(base):
                for name in [*dirs, *files]:
                    path = Path(directory, name)
                    st = path.lstat()
                    if stat.S_ISLNK(st.st_mode):
                        content: bytes | str = "-> " + os.readlink(path)
                    elif stat.S_ISDIR(st.st_mode):
                        content = "<dir>"
                    else:
                        content = path.read_bytes()
                    mtime = st.st_mtime_ns if self.snapshot_mtimes else 0
                    out[str(path)] = (content, st.st_mode, mtime)
        return out
