"""Helpers shared by the memory-plane and Wiki CLI tests (plain functions, no fixtures)."""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lwc_trio.memory.index.inputs import PageInput, SourceInput, decode_source
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.query.engine import MemoryQuery, explore_memory, merge_rows, query_stores
from lwc_trio.memory.query.fuzzy import build_vocabulary
from lwc_trio.memory.query.scoring import Ranking
from lwc_trio.memory.query.search import search_store
from lwc_trio.memory.storage.discovery import find_project_store
from lwc_trio.memory.storage.store import create_store
from lwc_trio.memory.text.tokenize import query_terms
from lwc_trio.protocol.tool import DEFAULT_MAX_TOKENS

REPO = Path(__file__).resolve().parents[1]
BOTH = frozenset({"project", "global"})


MEMORY_FAULTS: list[tuple[str, str | None, float]] = [
    ("hang", "memory_timeout", 5.0),
    ("raise", "memory_internal", 0.0),
    ("garbage", "memory_bad_response", 0.0),
    ("crash", "memory_crashed", 0.0),
]
"""Each scripted memory fault (SPEC §6), the error code it yields and when, in seconds, under
the default 5 s memory deadline; `None` is a normal answer."""


def new_store(root: Path) -> Path:
    """Create `root/.lwc/wiki.db` (an empty current-format store) and return its path."""
    (root / ".lwc").mkdir(parents=True, exist_ok=True)
    path = root / ".lwc" / "wiki.db"
    assert create_store(path)
    return path


def new_project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace with a project store and an empty home: (project dir, store, home)."""
    project = tmp_path / "ws"
    home = tmp_path / "home"
    home.mkdir()
    return project, new_store(project), home


def ids(memory: dict[str, object]) -> list[str]:
    """Identifiers of the results, in order."""
    results = memory["results"]
    assert isinstance(results, list)
    return [row["identifier"] for row in results]


def put_pages(db: Path, pages: Iterable[PageInput]) -> None:
    """Write `pages` through the real write path."""
    with Wiki(db) as wiki:
        wiki.put_pages(list(pages))


def add_source(db: Path, text: str, *, title: str = "notes", origin: str = "notes.md") -> str:
    """Store one Source and return its id."""
    content, digest = decode_source(text.encode("utf-8"), name=title)
    with Wiki(db) as wiki:
        return str(wiki.add_sources([SourceInput(title, origin, content, digest)])[0]["id"])


def page(slug: str, title: str, body: str = "", **kw: Any) -> PageInput:
    """A PageInput with defaults."""
    return PageInput(slug=slug, title=title, body=body, **kw)


def ask(
    query: str,
    project: Path,
    *,
    workspace: Path | None = None,
    home: Path,
    scope: str = "all",
    allowed: frozenset[str] = BOTH,
    max_documents: int = 8,
    cancelled: threading.Event | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> dict[str, Any]:
    """Run the engine the way the memory worker does: on paths already canonical, as the
    authorizer (project) and the server's config (workspace, home) hand them over."""
    q = MemoryQuery(
        query=query,
        project_path=project.resolve(),
        workspace=(workspace or project).resolve(),
        home=home.resolve(),
        scope=scope,
        allowed_scopes=allowed,
        max_documents=max_documents,
        max_tokens=max_tokens,
    )
    return explore_memory(q, cancelled=cancelled or threading.Event())


NEUTRAL = Ranking(title_exact=1, title_phrase=1, path_exact=1, path_phrase=1, generic_penalty=1)
"""The ranking without its adjustments: plain BM25F."""


def raw_scores(db: Path, query: str, limit: int = 20) -> dict[str, float]:
    """The best `limit` ranks without any adjustment (plain BM25F, no section evidence),
    best first, to check the adjustments by hand."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        hits = search_store(
            conn,
            query_terms(query),
            limit,
            degrees=lambda slugs: {},
            vocabulary=lambda: build_vocabulary(conn),
            ranking=NEUTRAL,
        )
    finally:
        conn.close()
    return {hit.identifier: hit.rank for hit in hits}


def search_rows(query: str, project: Path, *, home: Path, limit: int = 8) -> list[dict[str, Any]]:
    """The project store's result rows as `lwc search` gives them (every snippet kept: no
    Page body stands in for it)."""
    ref = find_project_store(project, project, home=home)
    assert ref is not None
    answers = query_stores([ref], query, limit, threading.Event())
    return [row.to_json() for row in merge_rows(answers, limit)]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (symlinks recorded by target)."""
    files: dict[str, bytes] = {}
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = Path(directory) / name
            rel = path.relative_to(root).as_posix()
            files[rel] = (
                b"->" + os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            )
    return files


def _lwc_env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        "LANG": "C.UTF-8",
    }


def run_lwc(
    *args: str, cwd: Path, home: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`python -m lwc_trio ARGS` with HOME set and output captured (stdout is a pipe)."""
    return subprocess.run(
        [sys.executable, "-m", "lwc_trio", *args],
        cwd=cwd,
        env=_lwc_env(home),
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=60,
        check=False,
    )


def run_lwc_on_terminal(
    *args: str, cwd: Path, home: Path
) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """`run_lwc`, but with stderr on a pseudo-terminal: (the process, what it drew there)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "lwc_trio", *args],
            cwd=cwd,
            env=_lwc_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=60,
            check=False,
        )
    finally:
        os.close(follower)
    try:
        drawn = os.read(leader, 4096)
    finally:
        os.close(leader)
    return proc, drawn


def out_json(proc: subprocess.CompletedProcess[bytes]) -> Any:
    """stdout of a successful command, parsed."""
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def err_code(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The `error.code` a failed command printed on stderr (its only stderr line)."""
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1, proc.stderr.decode()
    return str(json.loads(lines[0])["error"]["code"])
