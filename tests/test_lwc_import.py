"""`lwc import --from-lwc` carries an LWC 0.16 Wiki over whole, never touching the LWC store,
idempotently, and refuses a hostile one by name without writing anything."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest_memory import err_code, out_json, run_lwc, run_lwc_on_terminal, snapshot

from benchmarks.lwc_store import (
    LwcExtras,
    LwcPage,
    LwcSource,
    fill,
    make_lwc_store,
    make_wal_only_store,
    open_lwc,
)
from lwc_trio.exceptions import WikiError
from lwc_trio.memory.exchange.lwc_import import lwc_store_version
from lwc_trio.memory.index.inputs import PageInput, SourceInput, decode_source, source_id
from lwc_trio.memory.index.writer import Wiki

BODY_A = "Alpha links to [[beta]] and [[ghost-page]].\n"


def sid(text: str) -> str:
    """The lwc_trio id a Source with `text` gets."""
    return source_id(decode_source(text.encode("utf-8"), name="x")[1])


def sample_pages() -> list[LwcPage]:
    """Pages using every field LWC stores, with citations, claims and links."""
    return [
        LwcPage(
            slug="alpha",
            title="Alpha release",
            kind="decision",
            summary="Why alpha ships first",
            body=BODY_A,
            created_at="2025-01-02T03:04:05.678Z",
            updated_at="2025-01-03T04:05:06.789Z",
            provenance=("agent-observed", "hypothesis"),
            sources=(1,),
            links=("beta", "ghost-page", "gamma"),
        ),
        LwcPage(
            slug="beta",
            title="Beta",
            kind=None,
            summary=None,
            body="beta body",
            provenance=("user-provided",),
        ),
        LwcPage(slug="gamma", title="Gamma 日本語", body="ガンマ", sources=(1, 2)),
    ]


def sample_sources() -> list[LwcSource]:
    """Two distinct Sources, one untitled (LWC allows that)."""
    return [
        LwcSource(1, "first source text", title="Design notes", origin="docs/design.md"),
        LwcSource(
            2,
            "second source text",
            title=None,
            origin="notes/meeting.txt",
            created_at="2025-02-01T00:00:00Z",
        ),
    ]


@pytest.fixture
def box(tmp_path: Path) -> tuple[Path, Path]:
    """(home, project with an empty lwc_trio store)."""
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    out_json(run_lwc("init", cwd=project, home=home))
    return home, project


def lwc_import(project: Path, home: Path, path: Path) -> dict[str, Any]:
    """Run `lwc import --from-lwc PATH` in `project` and return its JSON report."""
    result: dict[str, Any] = out_json(
        run_lwc("import", "--from-lwc", str(path), cwd=project, home=home)
    )
    return result


def test_round_trip_of_every_field(box: tuple[Path, Path], tmp_path: Path) -> None:
    """Pages, Sources, citations, provenance and links arrive as LWC had them."""
    home, project = box
    lwc = make_lwc_store(
        tmp_path / "old" / ".lwc" / "wiki.db",
        sample_pages(),
        sample_sources(),
        LwcExtras(tags=2, retrieval_weights=3, todo_items=1, plans=1),
    )
    report = lwc_import(project, home, lwc)
    assert report["pages"] == {"created": 3, "updated": 0, "unchanged": 0}
    assert report["sources"] == {"created": 2, "existing": 0}
    assert (report["citations"], report["provenance"], report["links"]) == (3, 3, 3)
    assert report["linksToMissingPages"] == 1
    assert report["lwcFormat"] == 16
    assert report["lwcStoreKeptAt"] is None
    assert report["notImported"] == {
        "tags": 2, "retrieval_weights": 3, "todo_items": 1, "plans": 1,
    }  # fmt: skip
    first, second = sid("first source text"), sid("second source text")
    with Wiki(project / ".lwc" / "wiki.db") as wiki:
        alpha = wiki.get_page("alpha")
        assert {k: alpha[k] for k in ("title", "kind", "summary", "body")} == {
            "title": "Alpha release", "kind": "decision", "summary": "Why alpha ships first",
            "body": BODY_A,
        }  # fmt: skip
        assert (alpha["createdAt"], alpha["updatedAt"]) == (
            "2025-01-02T03:04:05.678Z",
            "2025-01-03T04:05:06.789Z",
        )
        assert alpha["sources"] == [first]
        assert alpha["provenance"] == ["source-grounded", "agent-observed", "hypothesis"]
        assert alpha["links"] == ["beta", "gamma", "ghost-page"]
        beta = wiki.get_page("beta")
        assert (beta["kind"], beta["summary"], beta["provenance"]) == (
            "concept",
            None,
            ["user-provided"],
        )
        gamma = wiki.get_page("gamma")
        assert gamma["title"] == "Gamma 日本語"
        assert gamma["sources"] == sorted([first, second])
        assert gamma["provenance"] == ["source-grounded"]
        one = wiki.get_source(first, offset=0, max_chars=100)
        assert (one["title"], one["origin"], one["content"], one["createdAt"]) == (
            "Design notes",
            "docs/design.md",
            "first source text",
            "2025-02-28T09:00:00.000Z",
        )
        two = wiki.get_source(second, offset=0, max_chars=100)
        assert (two["title"], two["origin"]) == ("meeting.txt", "notes/meeting.txt")


def test_found_through_lwc_explore(box: tuple[Path, Path], tmp_path: Path) -> None:
    """After the import the Pages answer `lwc explore` (the tool's engine and JSON)."""
    home, project = box
    lwc = make_lwc_store(tmp_path / "old" / "wiki.db", sample_pages(), sample_sources())
    lwc_import(project, home, lwc)
    found = out_json(run_lwc("explore", "alpha release", cwd=project, home=home))
    assert found["memory"]["state"] == "ready"
    assert found["memory"]["results"][0]["identifier"] == "alpha"
    assert found["memory"]["pages"][0]["body"] == BODY_A


def test_the_lwc_store_is_never_modified(box: tuple[Path, Path], tmp_path: Path) -> None:
    """Its folder holds the same files with the same bytes afterwards: no -shm, no checkpoint."""
    home, project = box
    folder = tmp_path / "old" / ".lwc"
    make_wal_only_store(folder / "wiki.db", sample_pages(), sample_sources())
    before = snapshot(folder)
    assert "wiki.db-wal" in before
    assert "wiki.db-shm" not in before
    lwc_import(project, home, folder / "wiki.db")
    assert snapshot(folder) == before


def test_wal_content_not_yet_checkpointed_is_imported(
    box: tuple[Path, Path], tmp_path: Path
) -> None:
    """Rows that live only in `-wal` are read (the main file alone has none of them)."""
    home, project = box
    lwc = make_wal_only_store(tmp_path / "old" / "wiki.db", sample_pages(), sample_sources())
    alone = tmp_path / "main-only.db"
    alone.write_bytes(lwc.read_bytes())
    conn = sqlite3.connect(alone)
    assert conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0] == 0
    conn.close()
    report = lwc_import(project, home, lwc)
    assert report["pages"]["created"] == 3
    assert report["sources"]["created"] == 2


def test_duplicate_sources_are_stored_once(box: tuple[Path, Path], tmp_path: Path) -> None:
    """Same content twice in LWC, or already in the target store: one Source, citations kept."""
    home, project = box
    already = project / "already.txt"
    already.write_text("second source text", encoding="utf-8")
    out_json(run_lwc("source", "add", str(already), cwd=project, home=home))
    sources = [*sample_sources(), LwcSource(3, "first source text", content_hash="lwc-own")]
    pages = [LwcPage(slug="cites", title="Cites", sources=(1, 2, 3))]
    report = lwc_import(project, home, make_lwc_store(tmp_path / "o" / "wiki.db", pages, sources))
    assert report["sources"] == {"created": 1, "existing": 1}
    assert report["duplicateSources"] == 1
    with Wiki(project / ".lwc" / "wiki.db") as wiki:
        assert len(wiki.source_ids()) == 2
        assert wiki.get_page("cites")["sources"] == sorted(
            [sid("first source text"), sid("second source text")]
        )


def test_dangling_rows_are_skipped_and_counted(box: tuple[Path, Path], tmp_path: Path) -> None:
    """Citations, claims and links of Pages that do not exist are reported, not written."""
    home, project = box
    lwc = make_lwc_store(tmp_path / "o" / "wiki.db", [LwcPage("only", "Only")], sample_sources())
    conn = apsw.Connection(str(lwc))
    conn.execute("INSERT INTO page_sources VALUES ('gone', 1), ('only', 99)")
    conn.execute("INSERT INTO page_provenance VALUES ('gone', 'hypothesis')")
    conn.execute("INSERT INTO links VALUES ('gone', 'only')")
    conn.close()
    report = lwc_import(project, home, lwc)
    assert report["skipped"] == {
        "citationsOfMissingPages": 1,
        "citationsOfMissingSources": 1,
        "provenanceOfMissingPages": 1,
        "linksFromMissingPages": 1,
    }
    assert report["pages"]["created"] == 1


def test_second_import_changes_nothing(box: tuple[Path, Path], tmp_path: Path) -> None:
    """Run twice: everything `unchanged`, no new Source, the store's bytes identical."""
    home, project = box
    lwc = make_lwc_store(tmp_path / "o" / "wiki.db", sample_pages(), sample_sources())
    lwc_import(project, home, lwc)
    before = snapshot(project / ".lwc")
    again = lwc_import(project, home, lwc)
    assert again["pages"] == {"created": 0, "updated": 0, "unchanged": 3}
    assert again["sources"] == {"created": 0, "existing": 2}
    assert snapshot(project / ".lwc") == before


def test_a_built_graph_stays_ready_through_the_import(
    box: tuple[Path, Path], tmp_path: Path
) -> None:
    """The import is a write like any other: a ready graph is kept ready, with LWC's links."""
    home, project = box
    out_json(run_lwc("config", "set", "--graph", "grafeo", cwd=project, home=home))
    out_json(run_lwc("graph", "build", cwd=project, home=home))
    lwc_import(project, home, make_lwc_store(tmp_path / "o" / "wiki.db", sample_pages()))
    status = out_json(run_lwc("graph", "status", cwd=project, home=home))
    assert status["stores"][0]["graph"]["status"] == "ready"


def test_converts_the_projects_own_lwc_store_in_place(tmp_path: Path) -> None:
    """Run in an LWC project: the new store takes `.lwc/wiki.db`, LWC's files are kept as they
    were under `.lwc/lwc-0.16/`, and importing from there again changes nothing."""
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    lwc = make_wal_only_store(project / ".lwc" / "wiki.db", sample_pages(), sample_sources())
    before = snapshot(project / ".lwc")
    report = lwc_import(project, home, project)
    assert report["path"] == str(project / ".lwc" / "wiki.db")
    kept = project / ".lwc" / "lwc-0.16"
    assert report["lwcStoreKeptAt"] == str(kept)
    assert snapshot(kept) == before
    assert lwc_store_version(lwc) is None
    assert lwc_store_version(kept / "wiki.db") == 16
    assert sorted(os.listdir(project / ".lwc")) == ["lwc-0.16", "wiki.db"]
    found = out_json(run_lwc("explore", "alpha", cwd=project, home=home))
    assert found["memory"]["results"][0]["identifier"] == "alpha"
    again = lwc_import(project, home, kept / "wiki.db")
    assert again["pages"]["unchanged"] == 3
    assert again["lwcStoreKeptAt"] is None


def test_creates_a_store_when_there_is_none(tmp_path: Path) -> None:
    """With no Wiki here yet, the import makes one where `lwc init` would."""
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    lwc = make_lwc_store(tmp_path / "elsewhere" / "wiki.db", sample_pages())
    report = lwc_import(project, home, lwc)
    assert report["path"] == str(project / ".lwc" / "wiki.db")
    assert report["pages"]["created"] == 3


def test_refuses_what_is_not_an_lwc_store(box: tuple[Path, Path]) -> None:
    """An lwc_trio store or a missing path is refused with a code that says which."""
    home, project = box
    proc = run_lwc("import", "--from-lwc", str(project / ".lwc"), cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "not_an_lwc_store"
    proc = run_lwc("import", "--from-lwc", str(project / "nope"), cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "store_not_found"
    proc = run_lwc("import", cwd=project, home=home)
    assert proc.returncode == 2


def _blob(conn: apsw.Connection) -> None:
    conn.execute("UPDATE pages SET title = x'00ff' WHERE slug = 'alpha'")


HOSTILE: list[tuple[str, Any, str]] = [
    ("blob title", _blob, "LWC pages row 1 ('alpha'): title must be text, not a blob"),
    (
        "long title",
        "UPDATE pages SET title = printf('%.301c', 'x') WHERE slug = 'alpha'",
        "title is 301 characters; the limit is 300",
    ),
    (
        "long summary",
        "UPDATE pages SET summary = printf('%.1001c', 'x') WHERE slug = 'beta'",
        "LWC pages row 2 ('beta'): summary is 1,001 characters; the limit is 1,000",
    ),
    (
        "body over 64 MiB",
        "UPDATE pages SET body = hex(zeroblob(33554433)) WHERE slug = 'gamma'",
        "LWC pages row 3 ('gamma'): body is larger than 64 MiB",
    ),
    (
        "value past SQLite's length limit",
        "UPDATE pages SET body = CAST(zeroblob(67112000) AS TEXT) WHERE slug = 'gamma'",
        "LWC pages row 3: cannot be read (string or blob too big)",
    ),
    ("slug with a slash", "UPDATE pages SET slug = 'a/b' WHERE slug = 'beta'", "not a valid slug"),
    (
        "numeric slug",
        "ALTER TABLE pages RENAME TO p0; "
        "CREATE TABLE pages(slug, title, kind, summary, body, created_at, updated_at); "
        "INSERT INTO pages SELECT slug, title, kind, summary, body, created_at, updated_at "
        "FROM p0; UPDATE pages SET slug = 7 WHERE slug = 'beta'",
        "LWC pages row 2: slug must be text, not a number",
    ),
    (
        "bad timestamp",
        "UPDATE pages SET updated_at = 'yesterday' WHERE slug = 'alpha'",
        "updated_at 'yesterday' is not an ISO 8601 timestamp",
    ),
    (
        "unknown provenance",
        "INSERT INTO page_provenance VALUES ('beta', 'rumour')",
        "provenance 'rumour' is not one of",
    ),
    (
        "invalid UTF-8",
        "UPDATE sources SET content = CAST(x'61ff62' AS TEXT) WHERE id = 2",
        "LWC sources row 2: content is not valid UTF-8",
    ),
    (
        "NUL in a body",
        "UPDATE pages SET body = 'a' || char(0) || 'b' WHERE slug = 'beta'",
        "body contains a NUL character",
    ),
    (
        "pages is a view",
        "ALTER TABLE pages RENAME TO real_pages; CREATE VIEW pages AS SELECT * FROM real_pages",
        "no plain 'pages' table (found: view)",
    ),
    ("no links table", "DROP TABLE links", "no plain 'links' table (found: missing)"),
]


@pytest.mark.parametrize(("why", "change", "message"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_store_is_refused_by_name_and_nothing_is_written(
    box: tuple[Path, Path], tmp_path: Path, why: str, change: Any, message: str
) -> None:
    """A bad row is `invalid_lwc_store` naming table, row, field and rule; no byte changes."""
    home, project = box
    lwc = tmp_path / "bad" / "wiki.db"
    lwc.parent.mkdir()
    conn = open_lwc(lwc)
    fill(conn, sample_pages(), sample_sources())
    if callable(change):
        change(conn)
    else:
        conn.execute(change)
    conn.close()
    before = snapshot(project / ".lwc")
    proc = run_lwc("import", "--from-lwc", str(lwc), cwd=project, home=home)
    assert proc.returncode == 1, why
    assert err_code(proc) == "invalid_lwc_store"
    assert message in proc.stderr.decode()
    assert snapshot(project / ".lwc") == before


def test_progress_bar_only_on_a_terminal(box: tuple[Path, Path], tmp_path: Path) -> None:
    """A bar is drawn when stderr is a terminal; piped, stderr stays empty."""
    home, project = box
    lwc = make_lwc_store(tmp_path / "o" / "wiki.db", sample_pages())
    piped = run_lwc("import", "--from-lwc", str(lwc), cwd=project, home=home)
    assert piped.returncode == 0
    assert piped.stderr == b""
    proc, drawn = run_lwc_on_terminal("import", "--from-lwc", str(lwc), cwd=project, home=home)
    assert proc.returncode == 0
    assert b"Reading LWC store [" in drawn
    assert b"3/3" in drawn


def test_a_failure_while_writing_leaves_the_store_as_it_was(box: tuple[Path, Path]) -> None:
    """Sources then Pages go in one transaction: a Page refused mid-write takes the Sources
    written before it back out (the import's write step, in process)."""
    _home, project = box
    db = project / ".lwc" / "wiki.db"
    before = snapshot(project / ".lwc")
    text, digest = decode_source(b"a source", name="s")
    with Wiki(db) as wiki:
        with pytest.raises(WikiError) as refused:
            wiki.put_everything(
                [SourceInput("s", None, text, digest)],
                [PageInput("ok", "Ok", "body"), PageInput("bad", "Bad", "b", sources=("src-0",))],
            )
        assert refused.value.code == "source_not_found"
        assert wiki.source_ids() == set()
        assert wiki.list_pages() == []
    assert snapshot(project / ".lwc") == before


@pytest.mark.parametrize(
    "command",
    [("init",), ("page", "list"), ("page", "put", "x", "--title", "X", "--file", "-"),
     ("graph", "status")],
    ids=["init", "page list", "page put", "graph status"],
)  # fmt: skip
def test_other_commands_name_the_import_on_an_lwc_store(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """Any command meeting an LWC store says `unsupported_store_version` and how to convert
    it, instead of calling it corrupt; the LWC folder is left byte-identical."""
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    lwc = make_wal_only_store(project / ".lwc" / "wiki.db", sample_pages())
    before = snapshot(project / ".lwc")
    proc = run_lwc(*command, cwd=project, home=home, stdin=b"body")
    assert proc.returncode == 1
    assert err_code(proc) == "unsupported_store_version"
    assert f"`lwc import --from-lwc {lwc}`" in proc.stderr.decode()
    assert snapshot(project / ".lwc") == before
