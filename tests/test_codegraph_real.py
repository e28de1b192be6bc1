"""The real CodeGraph 1.6.1 builds an index through `lwc cg init` and answers through the plane."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from lwc_trio.actors.planes import open_code_plane_lane as open_code_plane
from lwc_trio.codegraph.plane import CodePlaneConfig, CodeQuery

BINARY = os.environ.get("LWC_TEST_CODEGRAPH_BINARY", "")
REPO = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.codegraph,
    pytest.mark.skipif(
        not BINARY,
        reason="set LWC_TEST_CODEGRAPH_BINARY to the CodeGraph 1.6.1 platform binary "
        "(node_modules/@colbymchenry/codegraph-<os>-<arch>/bin/codegraph)",
    ),
]

SOURCES = {
    "geometry/shapes.py": (
        "class Shape:\n"
        "    def area(self) -> float:\n"
        "        raise NotImplementedError\n\n\n"
        "class Circle(Shape):\n"
        "    def __init__(self, radius: float) -> None:\n"
        "        self.radius = radius\n\n"
        "    def area(self) -> float:\n"
        "        return 3.14159 * self.radius * self.radius\n"
    ),
    "geometry/totals.py": (
        "from geometry.shapes import Circle\n\n\n"
        "def total_area(shapes):\n"
        "    return sum(shape.area() for shape in shapes)\n\n\n"
        "def unit_circle_area():\n"
        "    return total_area([Circle(1.0)])\n"
    ),
    "app.py": (
        "from geometry.totals import unit_circle_area\n\n\n"
        "def main():\n"
        "    print(unit_circle_area())\n"
    ),
}


def digest_tree(base: Path, skip: str | None = None) -> dict[str, str]:
    """Path → sha256 of every file under `base` (optionally skipping one top-level folder)."""
    out = {}
    for folder, dirs, files in os.walk(base):
        if skip is not None and Path(folder) == base and skip in dirs:
            dirs.remove(skip)
        for name in files:
            path = Path(folder, name)
            out[str(path.relative_to(base))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def lwc(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lwc_trio", *argv],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(REPO)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@attrs.frozen
class Indexed:
    """A git project indexed by `lwc --scope project cg init`, and what was seen around it."""

    home: Path
    workspace: Path
    project: Path
    env: dict[str, str]
    git_before: dict[str, str]
    init: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    base = tmp_path_factory.mktemp("real")
    home, workspace = base / "home", base / "ws"
    project = workspace / "shapes"
    home.mkdir()
    for rel, text in SOURCES.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LWC_CODEGRAPH_BINARY": BINARY,
    }
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *command], cwd=project, env=env, check=True)
    wiki = lwc(project, env, "init", "--no-git-exclude")
    assert wiki.returncode == 0, wiki.stderr
    git_before = digest_tree(project / ".git")
    init = lwc(project, env, "--scope", "project", "cg", "init")
    return Indexed(home, workspace, project, env, git_before, init)


def test_cg_init_builds_the_index_and_leaves_git_alone(indexed: Indexed) -> None:
    """`lwc --scope project cg init` writes .codegraph/codegraph.db; .git/ is byte-identical."""
    assert indexed.init.returncode == 0, indexed.init.stderr
    db = indexed.project / ".codegraph" / "codegraph.db"
    assert json.loads(indexed.init.stdout)["index"]["path"] == str(db)
    assert db.is_file()
    assert digest_tree(indexed.project / ".git") == indexed.git_before
    hooks = os.listdir(indexed.project / ".git" / "hooks")
    assert [h for h in hooks if not h.endswith(".sample")] == []
    assert os.listdir(indexed.home) == []


async def test_explore_returns_real_files_from_one_reused_child(indexed: Indexed) -> None:
    """Two queries: real file sections, one child for both, nothing changed outside .codegraph/."""
    project, workspace = indexed.project, indexed.workspace
    outside_index = digest_tree(project, skip=".codegraph")
    async with open_code_plane(CodePlaneConfig(call_timeout=60.0, env=indexed.env)) as plane:
        first = await plane.explore(
            CodeQuery("Circle area", project / "geometry", workspace, max_files=5)
        )
        pid = plane.child_pid
        second = await plane.explore(CodeQuery("total_area", project, workspace, max_files=5))
        assert plane.child_pid == pid
    assert pid is not None
    assert first["state"] == "ready", first
    assert "geometry/shapes.py" in first["files"]
    assert "class Circle(Shape):" in first["text"]
    assert first["truncated"] is False
    assert second["state"] == "ready", second
    assert "geometry/totals.py" in second["files"]
    assert digest_tree(project, skip=".codegraph") == outside_index
    assert digest_tree(project / ".git") == indexed.git_before
    assert os.listdir(indexed.home) == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
