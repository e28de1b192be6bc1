"""Stores are read without creating files, hostile files are refused, writes are atomic."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest_memory import (
    add_source,
    ask,
    ids,
    new_project,
    new_store,
    page,
    put_pages,
    snapshot,
)

from lwc_trio.exceptions import StoreError
from lwc_trio.memory.format import schema
from lwc_trio.memory.index import indexing, migrations
from lwc_trio.memory.index.migrations import open_writer
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.query import engine
from lwc_trio.memory.storage.store import (
    Interrupted,
    create_store,
    open_reader,
    translate_error,
    write_transaction,
)
from lwc_trio.memory.text import tokenize


def meta(db: Path) -> dict[str, str]:
    """The store's meta table."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    finally:
        conn.close()


def tamper(db: Path, *statements: str) -> None:
    """Change a store behind the writer's back (what a hostile clone could ship)."""
    conn = sqlite3.connect(db, isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.close()


def test_queries_create_no_file(tmp_path: Path) -> None:
    """A session of lexical, fuzzy, graph and empty queries leaves every byte as it was."""
    project, db, home = new_project(tmp_path)
    put_pages(new_store(home), [page("g", "Global", "shared word")])
    put_pages(db, [page("a", "Alpha", "shared word [[b]]"), page("b", "Beta", "word")])
    with Wiki(db) as wiki:
        wiki.set_graph_enabled(True)
        wiki.build_graph()
    before = snapshot(tmp_path)
    for query in ("shared word", "alpah", "the", "beta", "zzz"):
        assert ask(query, project, home=home)["state"] == "ready"
    assert snapshot(tmp_path) == before


def test_reader_sees_last_commit_while_a_writer_is_mid_transaction(tmp_path: Path) -> None:
    """An open write transaction (its journal not hot) neither blocks nor breaks a reader."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("a", "Alpha", "alpha")])
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE pages SET title = 'Changed'")
    try:
        memory = ask("alpha", project, home=home)
        assert memory["results"][0]["title"] == "Alpha"
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_exclusive_lock_gives_store_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer holding the exclusive lock past the busy limit makes the store store_busy."""
    monkeypatch.setattr(engine, "BUSY_LIMIT_S", 0.2)
    project, db, home = new_project(tmp_path)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        memory = ask("alpha", project, home=home, scope="project")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert memory == {
        "state": "error",
        "error": {"code": "store_busy", "message": memory["error"]["message"]},
    }


@pytest.mark.parametrize(
    "statements",
    [
        ("CREATE TRIGGER t AFTER INSERT ON pages BEGIN SELECT 1; END",),
        ("CREATE VIEW v AS SELECT 1",),
        ("DROP TABLE pages", "CREATE VIEW pages AS SELECT 1 AS slug"),
        ("DROP TABLE links", "CREATE TABLE links (from_slug, to_slug)"),
        ("DELETE FROM meta WHERE key = 'store_id'",),
        ("UPDATE meta SET value = 'x' WHERE key = 'store_revision'",),
        ("PRAGMA journal_mode = WAL",),
    ],
    ids=["trigger", "view", "pages-view", "links-changed", "no-store-id", "bad-revision", "wal"],
)
def test_hostile_schema_is_store_corrupt(tmp_path: Path, statements: tuple[str, ...]) -> None:
    """Any object, meta value or journal mode the writer would not have made makes the store
    store_corrupt, and reading it creates no file (no -wal or -shm beside a WAL store)."""
    project, db, home = new_project(tmp_path)
    tamper(db, *statements)
    memory = ask("alpha", project, home=home, scope="project")
    assert memory["state"] == "error"
    assert memory["error"]["code"] == "store_corrupt"
    assert sorted(p.name for p in db.parent.iterdir()) == ["wiki.db"]


@pytest.mark.parametrize(
    "content", [b"", b"not a database at all" * 10, b"SQLite format 3\x00" + b"\xff" * 200]
)
def test_non_sqlite_file_is_store_corrupt(tmp_path: Path, content: bytes) -> None:
    """Empty, garbage or damaged files are store_corrupt and stay untouched."""
    project, db, home = new_project(tmp_path)
    db.write_bytes(content)
    memory = ask("alpha", project, home=home, scope="project")
    assert memory["error"]["code"] == "store_corrupt"
    assert db.read_bytes() == content
    assert sorted(p.name for p in db.parent.iterdir()) == ["wiki.db"]


def test_newer_format_is_unsupported_store_version(tmp_path: Path) -> None:
    """A store from a newer lwc gets unsupported_store_version, for readers and writers."""
    project, db, home = new_project(tmp_path)
    tamper(db, "UPDATE meta SET value = '99' WHERE key = 'format_version'")
    memory = ask("alpha", project, home=home, scope="project")
    assert memory["error"]["code"] == "unsupported_store_version"
    assert "upgrade lwc" in memory["error"]["message"]
    with pytest.raises(StoreError) as caught:
        open_writer(db)
    assert caught.value.code == "unsupported_store_version"
    assert "format 99" in str(caught.value)
    assert "upgrade lwc" in str(caught.value)


def test_older_format_without_migration_is_refused(tmp_path: Path) -> None:
    """A format with no migration path is unsupported, and the writer leaves it unchanged."""
    _project, db, _home = new_project(tmp_path)
    tamper(db, "UPDATE meta SET value = '0' WHERE key = 'format_version'")
    before = db.read_bytes()
    with pytest.raises(StoreError) as caught:
        open_writer(db)
    assert caught.value.code == "unsupported_store_version"
    assert db.read_bytes() == before


def test_writer_applies_migrations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening an older store for writing runs its migrations and records the new format."""
    _project, db, _home = new_project(tmp_path)
    tamper(db, "UPDATE meta SET value = '1' WHERE key = 'format_version'")
    noop = ("UPDATE meta SET value = value WHERE 0",)
    monkeypatch.setattr(
        migrations, "MIGRATIONS", dict.fromkeys(range(1, schema.FORMAT_VERSION), noop)
    )
    open_writer(db).close()
    assert meta(db)["format_version"] == str(schema.FORMAT_VERSION)
    assert meta(db)["store_revision"] == "1"


def make_hot_journal(db: Path) -> None:
    """Kill a writer in the middle of a large transaction, leaving a hot journal behind."""
    code = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA cache_size = 2')\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        "c.execute(\"UPDATE pages SET body = body || 'changed'\")\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True)
    journal = db.with_name("wiki.db-journal")
    assert journal.exists()
    assert journal.stat().st_size > 0


def test_hot_journal_needs_recovery_then_repair_restores(tmp_path: Path) -> None:
    """A crashed write gives store_needs_recovery + `lwc repair`, which restores the last commit."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page(f"p{i}", f"Page {i}", "body " * 2000) for i in range(40)])
    make_hot_journal(db)
    memory = ask("page", project, home=home, scope="project")
    assert memory["state"] == "unavailable"
    assert memory["error"]["code"] == "store_needs_recovery"
    assert memory["nextAction"] == {"command": "lwc repair", "cwd": str(project)}
    assert db.with_name("wiki.db-journal").exists()  # the reader did not touch it
    with Wiki(db) as wiki:
        wiki.repair()
    assert not db.with_name("wiki.db-journal").exists()
    after = ask("page", project, home=home, scope="project")
    assert after["state"] == "ready"
    assert all(not p["body"].endswith("changed") for p in after["pages"])


def test_graph_readiness_transitions(tmp_path: Path) -> None:
    """disabled → pending (enabled) → ready (built, and through a write) → disabled → pending
    (written while disabled, then enabled) → ready (built)."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("a", "Alpha", "alpha")])

    def status() -> str:
        return str(ask("alpha", project, home=home)["graph"][0]["status"]["status"])

    assert status() == "disabled"
    with Wiki(db) as wiki:
        wiki.set_graph_enabled(True)
    assert status() == "pending"
    with Wiki(db) as wiki:
        wiki.build_graph()
    assert status() == "ready"
    assert ask("alpha", project, home=home)["graph"][0]["seed"] == "a"
    put_pages(db, [page("b", "Beta", "beta")])
    assert status() == "ready"
    assert ask("alpha", project, home=home)["graph"][0]["seed"] == "a"
    with Wiki(db) as wiki:
        wiki.set_graph_enabled(False)
    assert ask("alpha", project, home=home)["graph"][0]["status"] == {
        "engine": "disabled",
        "status": "disabled",
    }
    put_pages(db, [page("c", "Gamma", "gamma")])
    with Wiki(db) as wiki:
        wiki.set_graph_enabled(True)
    assert status() == "pending"
    assert "seed" not in ask("alpha", project, home=home)["graph"][0]
    with Wiki(db) as wiki:
        wiki.build_graph()
    assert status() == "ready"


def test_revisions_move_as_documented(tmp_path: Path) -> None:
    """store_revision moves on every write, content_revision on content only, no-ops on neither."""
    _project, db, _home = new_project(tmp_path)
    assert (meta(db)["store_revision"], meta(db)["content_revision"]) == ("0", "0")
    put_pages(db, [page("a", "Alpha", "alpha")])
    assert (meta(db)["store_revision"], meta(db)["content_revision"]) == ("1", "1")
    put_pages(db, [page("a", "Alpha", "alpha")])  # identical: nothing written
    assert meta(db)["store_revision"] == "1"
    add_source(db, "text")
    assert (meta(db)["store_revision"], meta(db)["content_revision"]) == ("2", "2")
    with Wiki(db) as wiki:
        wiki.set_graph_enabled(True)
    assert (meta(db)["store_revision"], meta(db)["content_revision"]) == ("3", "2")


def test_interrupted_write_leaves_previous_revision(tmp_path: Path) -> None:
    """Ctrl-C inside a write transaction rolls back: the file bytes are unchanged."""
    _project, db, _home = new_project(tmp_path)
    put_pages(db, [page("a", "Alpha", "alpha")])
    before = db.read_bytes()
    conn = open_writer(db)

    def interrupted_delete() -> None:
        with write_transaction(conn, content=True):
            conn.execute("DELETE FROM pages")
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted_delete()
    conn.close()
    assert db.read_bytes() == before


def test_concurrent_writers_are_serialized(tmp_path: Path) -> None:
    """Two threads writing at once both succeed and the store stays consistent."""
    project, db, home = new_project(tmp_path)
    errors: list[BaseException] = []

    def write(prefix: str) -> None:
        try:
            for i in range(15):
                put_pages(db, [page(f"{prefix}{i}", f"Title {prefix}{i}", "common")])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in ("x", "y")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Wiki(db) as wiki:
        assert len(wiki.list_pages()) == 30
        assert wiki.status()["revision"] == 30
    assert len(ask("common", project, home=home, max_documents=20)["results"]) == 20


def test_progress_handler_interrupts_a_running_statement(tmp_path: Path) -> None:
    """Setting the cancel event stops a long SQLite statement within milliseconds."""
    _project, db, _home = new_project(tmp_path)
    event = threading.Event()
    conn = open_reader(db, event)
    threading.Timer(0.05, event.set).start()
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError) as caught:
        conn.execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
        ).fetchone()
    conn.close()
    assert time.monotonic() - started < 2.0
    assert isinstance(translate_error(caught.value), Interrupted)


def test_create_store_is_exclusive_and_leaves_no_temp_file(tmp_path: Path) -> None:
    """A second create on the same path reports False and nothing else is left in .lwc."""
    db = new_store(tmp_path)
    assert create_store(db) is False
    assert sorted(p.name for p in db.parent.iterdir()) == ["wiki.db"]
    assert meta(db)["format_version"] == str(schema.FORMAT_VERSION)


def test_damaged_pages_are_store_corrupt(tmp_path: Path) -> None:
    """A valid header over garbage b-tree pages is store_corrupt, not a crash."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page(f"p{i}", f"Page {i}", "alpha " * 300) for i in range(30)])
    data = bytearray(db.read_bytes())
    data[4096:] = bytes((i * 37 + 11) % 256 for i in range(len(data) - 4096))
    db.write_bytes(bytes(data))
    memory = ask("alpha", project, home=home, scope="project")
    assert memory["state"] == "error"
    assert memory["error"]["code"] == "store_corrupt"


# Format 5's search tables, each made anew in the older format's shape.
_FORMAT_4_SEARCH_TABLES = (
    "search_docs", "search_terms", "search_segments", "search_words", "search_stats",
    "search_fuzzy",
)  # fmt: skip

FORMAT_2_SEARCH = (
    *(f"DROP TABLE {table}" for table in _FORMAT_4_SEARCH_TABLES),
    "CREATE TABLE search_docs (doc_id INTEGER PRIMARY KEY, doc_type TEXT NOT NULL, "
    "ident TEXT NOT NULL, UNIQUE (doc_type, ident))",
    "CREATE VIRTUAL TABLE search_index USING fts5("
    "title, path, summary, body, tokenize = 'ascii', detail = full)",
    "INSERT INTO search_docs (doc_type, ident) SELECT 'page', slug FROM pages ORDER BY slug",
    "INSERT INTO search_index (rowid, title, path, summary, body) SELECT d.doc_id, "
    "lower(p.title), p.slug, '', lower(p.body) FROM pages p JOIN search_docs d ON d.ident = p.slug",
    "UPDATE meta SET value = '2' WHERE key = 'format_version'",
)

# Format 3's search tables (one posting row per term and document), as that release made them.
FORMAT_3_SEARCH = (
    *(f"DROP TABLE {table}" for table in _FORMAT_4_SEARCH_TABLES),
    "CREATE TABLE search_docs (doc_id INTEGER PRIMARY KEY, doc_type TEXT NOT NULL, "
    "ident TEXT NOT NULL, title_terms TEXT NOT NULL, path_terms TEXT NOT NULL, "
    "generic INTEGER NOT NULL, terms TEXT NOT NULL, UNIQUE (doc_type, ident))",
    "CREATE TABLE search_terms (term TEXT PRIMARY KEY NOT NULL, df INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE search_postings (term TEXT NOT NULL, doc_id INTEGER NOT NULL, "
    "tt INTEGER NOT NULL, tp INTEGER NOT NULL, tw INTEGER NOT NULL, dl INTEGER NOT NULL, "
    "first INTEGER NOT NULL, PRIMARY KEY (term, doc_id)) WITHOUT ROWID",
    "CREATE TABLE search_words (word TEXT PRIMARY KEY NOT NULL, term TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE search_stats (key TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) "
    "WITHOUT ROWID",
    "INSERT INTO search_docs (doc_type, ident, title_terms, path_terms, generic, terms) "
    "SELECT 'page', slug, lower(title), slug, 0, lower(title) FROM pages ORDER BY slug",
    "INSERT INTO search_terms SELECT lower(title), 1 FROM pages",
    "INSERT INTO search_postings SELECT lower(p.title), d.doc_id, 1, 0, 4, 2, -1 "
    "FROM pages p JOIN search_docs d ON d.ident = p.slug",
    "INSERT INTO search_stats VALUES ('docs', 30), ('length', 60)",
    "UPDATE meta SET value = '3' WHERE key = 'format_version'",
)


# Format 4's search tables as that release made them: each document's distinct terms in
# `search_docs.terms`, postings as little-endian int32 quadruples (doc id, weighted count,
# length, first offset).
FORMAT_4_SEARCH = (
    *(f"DROP TABLE {table}" for table in _FORMAT_4_SEARCH_TABLES),
    "CREATE TABLE search_docs (doc_id INTEGER PRIMARY KEY AUTOINCREMENT, doc_type TEXT NOT NULL, "
    "ident TEXT NOT NULL, title_terms TEXT NOT NULL, path_terms TEXT NOT NULL, "
    "generic INTEGER NOT NULL, length INTEGER NOT NULL, terms TEXT NOT NULL, "
    "UNIQUE (doc_type, ident))",
    "CREATE TABLE search_terms (term TEXT PRIMARY KEY NOT NULL, df INTEGER NOT NULL, "
    "segs INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE search_segments (term TEXT NOT NULL, seg INTEGER NOT NULL, "
    "postings BLOB NOT NULL, heads BLOB NOT NULL, PRIMARY KEY (term, seg)) WITHOUT ROWID",
    "CREATE TABLE search_words (word TEXT PRIMARY KEY NOT NULL, term TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE search_stats (key TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) "
    "WITHOUT ROWID",
    "INSERT INTO search_docs (doc_type, ident, title_terms, path_terms, generic, length, terms) "
    "SELECT 'page', slug, 'kubernet', slug, 0, 2, 'kubernet' FROM pages ORDER BY slug",
    "INSERT INTO search_terms VALUES ('kubernet', 30, 1)",
    "INSERT INTO search_segments VALUES ('kubernet', 1, "
    "X'01000000040000000200000000000000', X'01000000')",
    "INSERT INTO search_stats VALUES ('docs', 30), ('length', 60)",
    "UPDATE meta SET value = '4' WHERE key = 'format_version'",
)


# Format 5's `search_segments`: the same rows, keyed by (term, seg) instead of appended.
FORMAT_5_SEARCH = (
    "CREATE TABLE format5 (term TEXT NOT NULL, seg INTEGER NOT NULL, postings BLOB NOT NULL, "
    "heads BLOB NOT NULL, PRIMARY KEY (term, seg)) WITHOUT ROWID",
    "INSERT INTO format5 SELECT term, seg, postings, heads FROM search_segments",
    "DROP TABLE search_segments",
    "ALTER TABLE format5 RENAME TO search_segments",
    "UPDATE meta SET value = '5' WHERE key = 'format_version'",
)

# Format 6's tables are today's; only its analyzer differed (`FORMAT_6_ANALYZER`).
FORMAT_6_SEARCH = ("UPDATE meta SET value = '6' WHERE key = 'format_version'",)


@pytest.mark.parametrize("how", ["repair", "write"])
@pytest.mark.parametrize("old", [2, 3, 4, 5, 6])
def test_older_format_store_is_refused_then_migrated(tmp_path: Path, how: str, old: int) -> None:
    """A format-2 to -6 store gets guidance (`lwc repair`), never results; repair or any
    write migrates it (formats 2-4 and 6 are re-indexed, format 5's postings rows are copied
    on the way to 6), after which it answers exactly like a store built in the current
    format."""
    project, db, home = new_project(tmp_path)
    pages = [
        page(f"p{i}", f"Kubernetes note {i}", f"caching pods and nodes {i} " * 20)
        for i in range(30)
    ]
    put_pages(db, pages)
    before = ask("kubernetes cache", project, home=home, scope="project")
    formats = {2: FORMAT_2_SEARCH, 3: FORMAT_3_SEARCH, 4: FORMAT_4_SEARCH, 5: FORMAT_5_SEARCH}
    tamper(db, *{**formats, 6: FORMAT_6_SEARCH}[old])
    assert meta(db)["format_version"] == str(old)
    refused = ask("kubernetes cache", project, home=home, scope="project")
    assert refused["state"] == "unavailable"
    assert refused["error"]["code"] == "unsupported_store_version"
    assert "lwc repair" in refused["error"]["message"]
    assert refused["nextAction"] == {"command": "lwc repair", "cwd": str(project)}
    with Wiki(db) as wiki:
        if how == "repair":
            wiki.repair()
        else:
            wiki.set_graph_enabled(True)  # any write command opens (and migrates) the store
    assert meta(db)["format_version"] == str(schema.FORMAT_VERSION)
    after = ask("kubernetes cache", project, home=home, scope="project")
    assert after["results"] == before["results"]
    assert after["pages"] == before["pages"]


@pytest.mark.parametrize("old", [4, 5, 6])
def test_a_migration_re_indexes_once(
    tmp_path: Path, old: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Formats 4 → 5 and 6 → 7 each re-index the whole store; migrating across both does it
    once, at the end (an earlier re-index's rows would be thrown away)."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page(f"p{i}", f"Kubernetes note {i}", "caching pods") for i in range(5)])
    before = ask("kubernetes cache", project, home=home, scope="project")
    tamper(db, *{4: FORMAT_4_SEARCH, 5: FORMAT_5_SEARCH, 6: FORMAT_6_SEARCH}[old])
    calls: list[object] = []
    real = indexing.reindex_all

    def counted(conn: sqlite3.Connection) -> int:
        calls.append(conn)
        return real(conn)

    monkeypatch.setattr(migrations, "reindex_all", counted)
    with Wiki(db) as wiki:
        wiki.set_graph_enabled(True)
    assert len(calls) == 1
    assert (
        ask("kubernetes cache", project, home=home, scope="project")["results"] == before["results"]
    )


# Format 6's analyzer: only the Latin blocks' combining marks stayed inside a word.
FORMAT_6_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
HINDI = {
    "testing": ("परीक्षण", "हर परीक्षण से पहले कैश साफ़ करें।"),
    "certificates": ("प्रमाणपत्र", "सर्वर का प्रमाणपत्र हर साल बदलें।"),
}


@pytest.mark.parametrize("how", ["repair", "write"])
def test_a_format_6_store_is_indexed_again_with_whole_words(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Format 6 split a Devanagari word at each vowel sign and virama, so `परीक्षण`
    (testing) also found the Page that says only `प्रमाणपत्र` (certificate), through their
    shared one-letter pieces. Migrating to format 7 indexes every Page again: the query then
    finds the Page holding the word, and only it."""
    project, db, home = new_project(tmp_path)
    with monkeypatch.context() as old:  # write the index as format 6's analyzer did
        word_class = f"(?:[^\\W_{tokenize._CJK_RANGES}]|[{FORMAT_6_MARKS}])"
        old.setattr(tokenize, "_WORD", re.compile(f"[^\\W_]{word_class}*"))
        old.setattr(tokenize, "_RUN", re.compile(
            f"(?P<cjk>[{tokenize._CJK_RANGES}]+)|(?P<word>[^\\W_{tokenize._CJK_RANGES}]{word_class}*)"
        ))  # fmt: skip
        put_pages(db, [page(slug, title, body) for slug, (title, body) in HINDI.items()])
    tamper(db, *FORMAT_6_SEARCH)
    refused = ask("परीक्षण", project, home=home, scope="project")
    assert refused["error"]["code"] == "unsupported_store_version"
    with Wiki(db) as wiki:
        if how == "repair":
            wiki.repair()
        else:
            wiki.set_graph_enabled(True)
    assert meta(db)["format_version"] == "7"
    assert ids(ask("परीक्षण", project, home=home, scope="project")) == ["testing"]


def test_format_change_is_seen_by_a_pooled_reader(tmp_path: Path) -> None:
    """A reader that already verified the store still refuses it once format_version changes.

    The pooled fast path skips the schema check while SQLite's schema cookie is unchanged; a
    value-only update of format_version does not change the cookie, so it must be read anew.
    """
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("a", "Alpha", "word")])

    def same_thread_twice() -> list[dict[str, Any]]:
        first = ask("alpha", project, home=home, scope="project")
        tamper(db, "UPDATE meta SET value = '99' WHERE key = 'format_version'")
        return [first, ask("alpha", project, home=home, scope="project")]

    answers: list[list[dict[str, Any]]] = []
    worker = threading.Thread(target=lambda: answers.append(same_thread_twice()))
    worker.start()
    worker.join()
    first, second = answers[0]
    assert first["state"] == "ready"
    assert second["state"] == "error"
    assert second["error"]["code"] == "unsupported_store_version"


def test_repair_gives_back_the_space_of_free_pages(tmp_path: Path) -> None:
    """A store that shrank (a migration to a smaller format, many removals) keeps its size
    as free pages; `lwc repair` rewrites it, and it still answers the same."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page(f"p{i}", f"Note {i}", f"kestrel heron {i} " * 400) for i in range(60)])
    with Wiki(db) as wiki:
        for i in range(50):
            wiki.remove_page(f"p{i}")
    before = ask("kestrel", project, home=home, scope="project")
    conn = sqlite3.connect(db)
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    assert free * 4 > conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    size = db.stat().st_size
    with Wiki(db) as wiki:
        wiki.repair()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    conn.close()
    assert db.stat().st_size < size // 2
    assert ask("kestrel", project, home=home, scope="project")["results"] == before["results"]
    assert sorted(p.name for p in db.parent.iterdir()) == ["wiki.db"]
