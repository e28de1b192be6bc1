"""The code scenario's corpora: `.py` trees copied, given a Wiki and a CodeGraph index."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, Final

from benchmarks.fixtures import lwc_cli

INDEX_TIMEOUT: Final = 900.0


class SetupError(Exception):
    """A corpus could not be prepared or indexed; the run stops (exit 2)."""


def log(message: str) -> None:
    print(f"[bench code] {message}", file=sys.stderr, flush=True)


def copy_py_tree(source: Path, dest: Path, *, skip_dirs: set[str]) -> int:
    """Copy every `.py` file under `source` into `dest` (same layout); returns the file count."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs and d != "__pycache__")
        rel = Path(dirpath).relative_to(source)
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            target = dest / rel / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(dirpath) / name, target)
            count += 1
    return count


def count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def tree_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(dirpath) / name).lstat().st_size
    return total


def run_lwc_cli(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Any:
    """`lwc ARGS`'s JSON output; SetupError when it fails."""
    try:
        return lwc_cli(args, env, cwd, timeout)
    except RuntimeError as exc:
        raise SetupError(str(exc)[-800:]) from exc


def build_corpus(
    name: str, source: Path, root: Path, skip: set[str], env: dict[str, str]
) -> dict[str, Any]:
    root.mkdir(parents=True)
    copied = copy_py_tree(source, root / "src", skip_dirs=skip)
    copied_loc = sum(count_lines(p) for p in (root / "src").rglob("*.py"))
    log(f"{name}: copied {copied} .py files ({copied_loc} lines) from {source}")
    run_lwc_cli(["init"], root, env, 60)
    started = time.perf_counter()
    out = run_lwc_cli(["--scope", "project", "cg", "init", str(root)], root, env, INDEX_TIMEOUT)
    seconds = time.perf_counter() - started
    index = out["index"]
    if index.get("state") != "ready":
        raise SetupError(f"{name}: index not ready: {out}")
    db = sqlite3.connect(f"file:{root / '.codegraph' / 'codegraph.db'}?mode=ro", uri=True)
    try:
        paths = [row[0] for row in db.execute("SELECT path FROM files")]
        nodes = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
        edges = db.execute("SELECT count(*) FROM edges").fetchone()[0]
    finally:
        db.close()
    indexed_loc = sum(count_lines(root / p) for p in paths if (root / p).is_file())
    size = tree_bytes(root / ".codegraph")
    log(f"{name}: indexed {len(paths)} files, {indexed_loc} lines in {seconds:.1f} s")
    return {
        "name": name,
        "source": str(source),
        "files_copied": copied,
        "loc_copied": copied_loc,
        "files_indexed": len(paths),
        "loc_indexed": indexed_loc,
        "nodes": nodes,
        "edges": edges,
        "index_seconds": round(seconds, 2),
        "loc_per_second": round(indexed_loc / seconds),
        "index_bytes": size,
    }
