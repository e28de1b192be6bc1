"""Hostile workspaces and stores against the real server: races, FIFOs, crafted schemas and values."""

from __future__ import annotations

import collections
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import lwc_command
from conftest_memory import new_store, page, put_pages
from lwc_process import RawServer, call

from benchmarks.stdio import StdioClient
from lwc_trio.protocol.tool import MAX_TOKENS_MAX

pytestmark = pytest.mark.slow

MAX_LINE = 512 * 1024


def strict(line: bytes) -> dict[str, Any]:
    """Parse a response line as RFC 8259 JSON (no NaN/Infinity), as Node's JSON.parse does."""

    def reject(name: str) -> Any:
        raise AssertionError(f"non-standard JSON constant {name} on the wire")

    value: dict[str, Any] = json.loads(line, parse_constant=reject)
    return value


def memory_of(response: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = response["result"]["structuredContent"]["memory"]
    return result


async def ask_all(
    server: StdioClient, paths: list[Path], query: str, **extra: Any
) -> list[tuple[bytes, dict[str, Any]]]:
    """Send one call per path, then read every answer; (raw line, parsed) in path order."""
    for i, path in enumerate(paths):
        await server.send(call(i, {"query": query, "projectPath": str(path), **extra}))
    got: dict[int, tuple[bytes, dict[str, Any]]] = {}
    for _ in paths:
        line = await server.recv_line()
        assert line is not None
        assert len(line) + 1 <= MAX_LINE
        message = strict(line)
        got[message["id"]] = (line, message)
    return [got[i] for i in range(len(paths))]


async def ask_once(
    workspace: Path, lwc_env: dict[str, str], **extra: Any
) -> tuple[bytes, dict[str, Any]]:
    """One memory call about `workspace` to a fresh `lwc serve --path WORKSPACE`, which then
    exits 0: (raw answer line, the answer's `memory` object)."""
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], lwc_env, str(workspace))
        ((line, response),) = await ask_all(server, [workspace], "zebra", **extra)
        await server.close_stdin()
        assert await server.wait() == 0
    return line, memory_of(response)


@contextmanager
def swapper(script: str) -> Iterator[None]:
    """Run `script` (a loop that changes the tree) in its own process until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)])
    try:
        time.sleep(0.2)  # let it start swapping
        yield
    finally:
        proc.kill()
        proc.wait()


def global_store(home: Path) -> None:
    put_pages(new_store(home), [page("global-note", "Zebra global note", "zebra stripes")])


# -- 1. escape by race --------------------------------------------------------------------


def _swap_script(real: Path, target: Path) -> str:
    return f"""
        import os, time
        real, aside, target = {str(real)!r}, {str(real) + ".aside"!r}, {str(target)!r}
        while True:
            time.sleep(0.001)
            os.rename(real, aside)
            os.symlink(target, real)
            time.sleep(0.001)
            os.unlink(real)
            os.rename(aside, real)
        """


@pytest.mark.parametrize("swapped", ["project", "lwc"])
async def test_swapping_a_directory_for_a_symlink_never_leaks_outside(
    tmp_path: Path, workspace: Path, lwc_env: dict[str, str], swapped: str
) -> None:
    """Finding 1: a swapper replaces projectPath (or its .lwc) by a link outside; 0 answers leak."""
    project = workspace / "proj"
    put_pages(new_store(project), [page("inside", "Zebra inside", "zebra inside")])
    outside = tmp_path / "outside" / "proj"
    put_pages(new_store(outside), [page("secret", "Zebra OUTSIDE-SECRET", "zebra secret")])
    real, target = (project, outside) if swapped == "project" else (
        project / ".lwc", outside / ".lwc"
    )  # fmt: skip
    answers: list[bytes] = []
    with swapper(_swap_script(real, target)):
        async with trio.open_nursery() as nursery:
            server = await RawServer.start(
                nursery, ["--path", str(workspace)], lwc_env, str(workspace)
            )
            deadline = time.monotonic() + 4.0
            while time.monotonic() < deadline:
                batch = await ask_all(server, [project] * 8, "zebra", scope="project")
                answers += [line for line, _ in batch]
            await server.close_stdin()
            assert await server.wait() == 0
    leaked = [line for line in answers if b"OUTSIDE-SECRET" in line or b"secret" in line]
    inside = [line for line in answers if b'"identifier":"inside"' in line]
    assert len(answers) >= 200
    assert len(leaked) == 0, f"{len(leaked)} of {len(answers)} answers leaked the outside store"
    kinds = collections.Counter(
        (m.get("state"), (m.get("error") or {}).get("code"))
        for m in (
            memory_of(strict(line)) if b"structuredContent" in line and b'"memory"' in line else {}
            for line in answers
        )
    )
    assert inside, f"the race test never read the real store: {kinds}"


# -- 3. FIFOs and devices -------------------------------------------------------------------


async def test_a_fifo_beside_the_store_never_wedges_the_plane(
    workspace: Path, home: Path, lwc_env: dict[str, str]
) -> None:
    """Finding 3: a FIFO as wiki.db-journal is store_path_invalid; the global store keeps answering."""
    put_pages(new_store(workspace), [page("p", "Zebra project", "zebra")])
    os.mkfifo(workspace / ".lwc" / "wiki.db-journal")
    global_store(home)
    async with trio.open_nursery() as nursery:
        args = ["--path", str(workspace), "--memory-timeout", "2"]
        server = await RawServer.start(nursery, args, lwc_env, str(workspace))
        with trio.fail_after(30):
            batch = await ask_all(server, [workspace] * 8, "zebra")
            alone = await ask_all(server, [workspace], "zebra", scope="project")
        await server.close_stdin()
        assert await server.wait() == 0
    for _, response in batch:
        memory = memory_of(response)
        assert memory["state"] == "ready"
        assert [r["identifier"] for r in memory["results"]] == ["global-note"]
        assert memory["stores"][0]["error"]["code"] == "store_path_invalid"
    memory = memory_of(alone[0][1])
    assert memory["state"] == "unavailable"
    assert memory["error"]["code"] == "store_path_invalid"
    assert memory["nextAction"]["command"] == "lwc doctor"


# -- 4, 5, 6, 7: crafted stores ---------------------------------------------------------------


def _raw(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    return conn


def _generated_column(db: Path) -> None:
    """A generated column planted in a table's stored definition (it would run on read)."""
    conn = _raw(db)
    conn.execute("PRAGMA writable_schema = ON")
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'pages'").fetchone()
    planted = sql.rstrip()[:-1] + ", zz TEXT GENERATED ALWAYS AS (printf('%.1000c', 65)))"
    conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'pages'", (planted,))
    conn.close()


def _trigger(db: Path) -> None:
    conn = _raw(db)
    conn.execute("CREATE TRIGGER t AFTER INSERT ON pages BEGIN SELECT 1; END")
    conn.close()


def _infinite_graph_score(db: Path) -> None:
    conn = _raw(db)
    conn.executemany("INSERT INTO graph_related VALUES (?, ?, 9e999)", [("p", "q"), ("q", "p")])
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'graph_enabled'")
    revision = conn.execute("SELECT value FROM meta WHERE key = 'content_revision'").fetchone()
    conn.execute("INSERT INTO meta VALUES ('graph_built_revision', ?)", revision)
    conn.close()


def _sql(*statements: str) -> Any:
    def mutate(db: Path) -> None:
        conn = _raw(db)
        for statement in statements:
            conn.execute(statement)
        conn.close()

    return mutate


CRAFTED = {
    "generated-column": (_generated_column, "store_corrupt"),
    "trigger": (_trigger, "store_corrupt"),
    "infinite-graph-score": (_infinite_graph_score, "store_corrupt"),
    "blob-title": (_sql("UPDATE pages SET title = X'00ff'"), "store_corrupt"),
    "blob-summary": (_sql("UPDATE pages SET summary = X'07'"), "store_corrupt"),
    "blob-updated-at": (_sql("UPDATE pages SET updated_at = X'01'"), "store_corrupt"),
    "superscript-revision": (
        _sql("UPDATE meta SET value = '²' WHERE key = 'store_revision'"),
        "store_corrupt",
    ),
    "huge-store-id": (
        _sql("UPDATE meta SET value = printf('%.9999c', 'x') WHERE key = 'store_id'"),
        "store_corrupt",
    ),
    "invalid-utf8-title": (_sql("UPDATE pages SET title = CAST(X'5aff' AS TEXT)"), "store_corrupt"),
    # Packed postings (int32 quadruples: doc id, weighted count, length, first offset).
    "postings-cut-short": (
        _sql("UPDATE search_segments SET postings = X'01000000040000' WHERE term = 'zebra'"),
        "store_corrupt",
    ),
    "postings-negative-doc-id": (
        _sql(
            "UPDATE search_segments SET postings = X'ffffffff040000000200000000000000' "
            "WHERE term = 'zebra'"
        ),
        "store_corrupt",
    ),
    "postings-zero-count": (
        _sql(
            "UPDATE search_segments SET postings = X'01000000000000000200000000000000' "
            "WHERE term = 'zebra'"
        ),
        "store_corrupt",
    ),
    "postings-repeated-doc-id": (
        _sql(
            "UPDATE search_segments SET postings = "
            "X'0100000004000000020000000000000001000000040000000200000000000000' "
            "WHERE term = 'zebra'"
        ),
        "store_corrupt",
    ),
    "postings-as-text": (
        _sql("UPDATE search_segments SET postings = 'zebra' WHERE term = 'zebra'"),
        "store_corrupt",
    ),
    "postings-empty": (
        _sql("UPDATE search_segments SET postings = X'' WHERE term = 'zebra'"),
        "store_corrupt",
    ),
    "heads-as-text": (
        _sql("UPDATE search_segments SET heads = 'zebra' WHERE term = 'zebra'"),
        "store_corrupt",
    ),
}


def _base_store(root: Path) -> Path:
    db = new_store(root)
    put_pages(db, [page("p", "Zebra page", "zebra [[q]]"), page("q", "Zebra q", "zebra more")])
    return db


async def test_crafted_stores_fail_alone_with_strict_json(
    workspace: Path, home: Path, lwc_env: dict[str, str]
) -> None:
    """Findings 4-6: each crafted anomaly is that store's store_corrupt; the global store still answers."""
    global_store(home)
    paths = []
    for name, (mutate, _code) in CRAFTED.items():
        root = workspace / name
        mutate(_base_store(root))
        paths.append(root)
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], lwc_env, str(workspace))
        with trio.fail_after(60):
            answers = await ask_all(server, paths, "zebra")
        await server.close_stdin()
        assert await server.wait() == 0
    seen = {}
    for name, (_line, response) in zip(CRAFTED, answers, strict=True):
        memory = memory_of(response)
        assert memory["state"] == "ready", (name, memory)
        assert [r["identifier"] for r in memory["results"]] == ["global-note"], name
        seen[name] = memory["stores"][0].get("error", {}).get("code")
    assert seen == {name: code for name, (_mutate, code) in CRAFTED.items()}


def _flip(data: bytes, rng: random.Random, flips: int) -> bytes:
    buf = bytearray(data)
    for _ in range(flips):
        buf[rng.randrange(100, len(buf))] ^= 1 << rng.randrange(8)
    return bytes(buf)


async def test_byte_flipped_stores_never_hide_the_healthy_store(
    tmp_path: Path, workspace: Path, home: Path, lwc_env: dict[str, str]
) -> None:
    """Finding 6: 300 byte-flipped stores; every answer is strict JSON with the global results."""
    global_store(home)
    base = _base_store(tmp_path / "base")
    put_pages(base, [page(f"n{i}", f"Zebra note {i}", "zebra " * (i + 1)) for i in range(30)])
    data = base.read_bytes()
    rng = random.Random(12)
    paths = []
    for i in range(300):
        root = workspace / f"f{i:03d}"
        (root / ".lwc").mkdir(parents=True)
        (root / ".lwc" / "wiki.db").write_bytes(_flip(data, rng, rng.choice((1, 4, 16))))
        paths.append(root)
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], lwc_env, str(workspace))
        answers = []
        with trio.fail_after(150):
            for start in range(0, len(paths), 20):
                answers += await ask_all(
                    server, paths[start : start + 20], "zebra stripes", maxDocuments=20
                )
        await server.close_stdin()
        assert await server.wait() == 0
    broken = []
    for path, (_line, response) in zip(paths, answers, strict=True):
        memory = memory_of(response)
        ok = memory["state"] == "ready" and "global-note" in {
            r["identifier"] for r in memory["results"]
        }
        if not ok:
            broken.append((path.name, memory.get("error") or memory["stores"]))
    assert broken == []


def _huge_pages(db: Path) -> None:
    """20 Pages written by lwc, then grown past every limit behind its back."""
    put_pages(db, [page(f"zebra-{i}", "Zebra", "zebra\x01 " * 50_000) for i in range(20)])
    conn = _raw(db)
    conn.execute("BEGIN")
    conn.execute(
        "UPDATE pages SET title = ?, kind = ?, summary = ?, updated_at = ?",
        ("Zebra " + "T" * 1_000_000, "K" * 100_000, "S" * 1_000_000, "2026-01-01" * 100),
    )
    for i in range(20):
        conn.executemany(
            "INSERT INTO links VALUES (?, ?)",
            [(f"zebra-{i}", f"{j:05d}" + "l" * 2_000) for j in range(500)],
        )
    conn.execute("COMMIT")
    conn.close()


async def test_answers_are_bounded_whatever_the_store_holds(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Finding 7: huge titles, summaries, kinds, slugs and link lists: every field and the line are capped."""
    _huge_pages(new_store(workspace))
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], lwc_env, str(workspace))
        with trio.fail_after(60):
            ((line, response),) = await ask_all(
                server, [workspace], "zebra", maxDocuments=20, maxTokens=MAX_TOKENS_MAX
            )
        await server.close_stdin()
        assert await server.wait() == 0
    assert len(line) + 1 <= MAX_LINE
    memory = memory_of(response)
    assert memory["state"] == "ready"
    assert len(memory["results"]) == 20
    for row in memory["results"]:
        assert len(row["title"]) <= 300
        assert len(row["summary"]) <= 1000
        assert len(row["kind"]) <= 64
        assert len(row["identifier"]) <= 256
        assert len(row["snippet"]) <= 180
        assert len(row["updatedAt"]) <= 64
    assert memory["pages"], "the pages that fit are kept"
    for item in memory["pages"]:
        assert item["truncated"] is True
        assert len(item["title"]) <= 300
        assert len(item["summary"]) <= 1000
        assert len(item["kind"]) <= 64
        assert len(item["slug"]) <= 256
        assert len(item["links"]) <= 64
        assert all(len(link) <= 256 for link in item["links"])


def _cli(env: dict[str, str], cwd: Path, *args: str, stdin: bytes | None = None) -> Any:
    return subprocess.run(
        lwc_command(*args, "--json"), cwd=cwd, env=env, capture_output=True, input=stdin,
        timeout=60, check=False,
    )  # fmt: skip


def test_cli_refuses_over_long_fields_at_write_time(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Finding 7: `page put` and `page import` refuse a title, summary or kind over the limits."""
    assert _cli(lwc_env, workspace, "init", "--no-git-exclude").returncode == 0
    cases = [
        ("--title", "T" * 301),
        ("--summary", "S" * 1001),
        ("--kind", "K" * 65),
    ]
    for flag, value in cases:
        args = ["page", "put", "x", "--title", "ok", flag, value, "--file", "-"]
        proc = _cli(lwc_env, workspace, *args, stdin=b"body")
        assert proc.returncode == 1, flag
        assert json.loads(proc.stderr)["error"]["code"] == "invalid_page", flag
    jsonl = workspace / "pages.jsonl"
    jsonl.write_text(json.dumps({"slug": "big", "title": "T" * 3_000_000, "body": "b"}) + "\n")
    proc = _cli(lwc_env, workspace, "page", "import", str(jsonl))
    assert proc.returncode == 1
    assert json.loads(proc.stderr)["error"]["code"] == "invalid_page"
    listed = json.loads(_cli(lwc_env, workspace, "page", "list").stdout)
    assert "big" not in json.dumps(listed)
    assert '"x"' not in json.dumps(listed)
    ok = ["page", "put", "x", "--title", "T" * 300, "--summary", "S" * 1000, "--kind", "K" * 64]
    assert _cli(lwc_env, workspace, *ok, "--file", "-", stdin=b"body").returncode == 0


# -- 8. WAL and LWC stores ---------------------------------------------------------------------


def _wal_copy(src: Path, dst: Path) -> None:
    shutil.copy(src, dst)
    conn = sqlite3.connect(dst, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    for suffix in ("-wal", "-shm"):
        assert not Path(str(dst) + suffix).exists()


async def test_a_wal_file_beside_the_store_is_never_read_nor_joined_by_shm(
    tmp_path: Path, workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Finding 8: a planted wiki.db-wal is store_corrupt; SQLite never reads it nor creates -shm."""
    db = _base_store(workspace)
    # A real WAL for this store, holding a later title: SQLite would read it as the store.
    wal_db = tmp_path / "wal.db"
    shutil.copy(db, wal_db)
    writer = sqlite3.connect(wal_db, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    keeper = sqlite3.connect(wal_db, isolation_level=None)  # keeps the -wal on close
    keeper.execute("BEGIN")
    keeper.execute("SELECT 1 FROM pages").fetchall()
    writer.execute("UPDATE pages SET title = 'Zebra FROM-THE-WAL'")
    shutil.copy(f"{wal_db}-wal", f"{db}-wal")
    keeper.close()
    writer.close()
    line, memory = await ask_once(workspace, lwc_env, scope="project")
    assert b"FROM-THE-WAL" not in line
    assert memory["state"] == "error"
    assert memory["error"]["code"] == "store_corrupt"
    assert sorted(os.listdir(db.parent)) == ["wiki.db", "wiki.db-wal"]


async def test_swapping_in_a_wal_store_never_creates_files(
    tmp_path: Path, workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Finding 8 (guard): wiki.db swapped between rollback and WAL versions: no -wal/-shm appears."""
    db = _base_store(workspace)
    rollback, wal = tmp_path / "rollback.db", tmp_path / "wal.db"
    shutil.copy(db, rollback)
    _wal_copy(db, wal)
    lwc = workspace / ".lwc"
    script = f"""
        import os, shutil
        lwc, sources = {str(lwc)!r}, ({str(rollback)!r}, {str(wal)!r})
        while True:
            for src in sources:
                shutil.copy(src, os.path.join(lwc, "next.db"))
                os.rename(os.path.join(lwc, "next.db"), os.path.join(lwc, "wiki.db"))
        """
    created: set[str] = set()
    with swapper(script):
        async with trio.open_nursery() as nursery:
            server = await RawServer.start(
                nursery, ["--path", str(workspace)], lwc_env, str(workspace)
            )
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline:
                await ask_all(server, [workspace] * 8, "zebra")
                created |= {n for n in os.listdir(lwc) if n.endswith(("-wal", "-shm"))}
            await server.close_stdin()
            assert await server.wait() == 0
    created |= {n for n in os.listdir(lwc) if n.endswith(("-wal", "-shm"))}
    assert created == set()


def _lwc_store(path: Path) -> None:
    """An LWC 0.16-shaped store (WAL, user_version 16, LWC's meta), as LWC's schema.rs builds."""
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('format_version', '16')")
    conn.execute("CREATE TABLE pages (slug TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT)")
    conn.execute("INSERT INTO pages VALUES ('zebra', 'Zebra', 'zebra')")
    conn.execute("PRAGMA user_version = 16")
    conn.close()


async def test_an_lwc_store_is_unavailable_with_the_import_command(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Finding 8: an LWC 0.16 store is never opened: unavailable, `lwc import --from-lwc PATH`."""
    db = workspace / ".lwc" / "wiki.db"
    _lwc_store(db)
    before = sorted(os.listdir(db.parent))
    _, memory = await ask_once(workspace, lwc_env, scope="project")
    assert memory["state"] == "unavailable"
    assert memory["error"]["code"] == "unsupported_store_version"
    assert memory["nextAction"] == {
        "command": f"lwc import --from-lwc {db}",
        "cwd": str(workspace),
    }
    assert sorted(os.listdir(db.parent)) == before


# -- 11. busy readers and symlinked journals --------------------------------------------------


def _hold_lock(db: Path, seconds: float) -> subprocess.Popen[bytes]:
    """A writer process holding `db`'s exclusive lock for `seconds` (returns once it holds it)."""
    script = f"""
        import sqlite3, time
        conn = sqlite3.connect({str(db)!r}, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        print("locked", flush=True)
        time.sleep({seconds})
        conn.execute("ROLLBACK")
        """
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == b"locked\n"
    holder.stdout.close()
    return holder


async def test_a_new_reader_waits_out_a_short_writer_lock(
    tmp_path: Path, workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Finding 11: a first read during a 0.7 s writer lock answers after it, not store_busy at 50 ms."""
    db = _base_store(workspace / "proj")
    empty = workspace / "empty"
    empty.mkdir()
    async with trio.open_nursery() as nursery:
        server = await RawServer.start(nursery, ["--path", str(workspace)], lwc_env, str(workspace))
        # The server is up and its memory plane warm, but has never opened this store.
        await ask_all(server, [empty], "zebra", scope="project")
        holder = _hold_lock(db, 0.7)
        try:
            ((_line, response),) = await ask_all(
                server, [workspace / "proj"], "zebra", scope="project"
            )
        finally:
            holder.wait()
        await server.close_stdin()
        assert await server.wait() == 0
    memory = memory_of(response)
    assert memory["state"] == "ready", memory
    assert {r["identifier"] for r in memory["results"]} == {"p", "q"}


async def test_a_symlinked_journal_is_not_sent_to_lwc_repair(
    tmp_path: Path, workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Finding 11: a symlinked wiki.db-journal is store_path_invalid with `lwc doctor`, never repair."""
    _base_store(workspace)
    target = tmp_path / "journal"
    target.write_bytes(b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + b"\x01" * 600)
    os.symlink(target, workspace / ".lwc" / "wiki.db-journal")
    _, memory = await ask_once(workspace, lwc_env, scope="project")
    assert memory["state"] == "unavailable"
    assert memory["error"]["code"] == "store_path_invalid"
    assert memory["nextAction"]["command"] == "lwc doctor"


async def test_a_symlinked_home_lwc_is_store_path_invalid(
    tmp_path: Path, workspace: Path, home: Path, lwc_env: dict[str, str]
) -> None:
    """SPEC §3: a symlinked $HOME/.lwc makes global memory unavailable with `lwc doctor`."""
    _base_store(tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere" / ".lwc", home / ".lwc")
    line, memory = await ask_once(workspace, lwc_env, scope="global")
    assert memory["state"] == "unavailable"
    assert memory["error"]["code"] == "store_path_invalid"
    assert memory["nextAction"] == {"command": "lwc doctor", "cwd": str(home)}
    assert b"Zebra" not in line
