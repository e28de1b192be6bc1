"""Bulk writes stay bounded and stores are told apart correctly (issue 24 items 2 and 4,
issue 23 item 2): streamed JSON Lines of any size, a cap on out-links per Page, store paths
too long for SQLite, and an lwc store with a `user_version` that is not LWC's."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from conftest_memory import (
    ask,
    err_code,
    ids,
    new_project,
    new_store,
    out_json,
    page,
    put_pages,
    run_lwc,
    snapshot,
)

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.exchange.transfer import read_source_inputs
from lwc_trio.memory.index import writer
from lwc_trio.memory.index.inputs import MAX_PAGE_LINKS, MAX_TEXT_BYTES
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.storage.store import STORE_PATH_MAX


def _cli_project(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    out_json(run_lwc("init", "--no-git-exclude", cwd=project, home=home))
    return project, home


# -- links per Page -----------------------------------------------------------------------


def test_a_page_with_too_many_links_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    """`lwc page put` of a body with more distinct links than `MAX_PAGE_LINKS` exits 1 with
    `invalid_page` naming the bound, and the store's bytes are unchanged; a Page at the
    bound is written with every link."""
    project, home = _cli_project(tmp_path)
    hub = " ".join(f"[[t{i}]]" for i in range(MAX_PAGE_LINKS + 1))
    (project / "hub.md").write_text(hub, encoding="utf-8")
    before = snapshot(project / ".lwc")
    proc = run_lwc(
        "page", "put", "hub", "--title", "Hub", "--file", "hub.md", cwd=project, home=home
    )
    assert proc.returncode == 1
    assert err_code(proc) == "invalid_page"
    message = json.loads(proc.stderr)["error"]["message"]
    assert f"{MAX_PAGE_LINKS + 1:,}" in message
    assert f"at most {MAX_PAGE_LINKS:,}" in message
    assert snapshot(project / ".lwc") == before

    # Repeated links count once: at the bound, the Page is written with all of them.
    at_bound = " ".join(f"[[t{i}]] [[t{i}]]" for i in range(MAX_PAGE_LINKS))
    (project / "ok.md").write_text(at_bound, encoding="utf-8")
    out_json(
        run_lwc("page", "put", "ok", "--title", "Ok", "--file", "ok.md", cwd=project, home=home)
    )
    shown = out_json(run_lwc("page", "show", "ok", cwd=project, home=home))
    assert len(shown["links"]) == MAX_PAGE_LINKS


def test_reference_definitions_count_towards_the_bound(tmp_path: Path) -> None:
    """A body whose links are all reference definitions (`[a]: a.md`, no `[[` or `](`) is
    bounded like one of `[[a]]` links."""
    db = new_store(tmp_path / "p")
    body = "".join(f"[t{i}]: t{i}.md\n" for i in range(MAX_PAGE_LINKS + 1))
    with Wiki(db) as wiki:
        with pytest.raises(WikiError) as refused:
            wiki.put_pages([page("hub", "Hub", body)])
        assert refused.value.code == "invalid_page"
        assert f"{MAX_PAGE_LINKS + 1:,}" in refused.value.message
        assert wiki.list_pages() == []


def test_a_records_listed_links_are_checked_and_bounded(tmp_path: Path) -> None:
    """A JSONL record's `links` (what an export carries) replace the body's: each must be a
    slug, the error naming the item, and they count towards `MAX_PAGE_LINKS` however short
    the body is; nothing is written when one is refused. Within the rules, they are the
    Page's links."""
    project, home = _cli_project(tmp_path)
    records = {
        "bad.jsonl": {"slug": "a", "title": "A", "body": "[[b]]", "links": ["b", "../up"]},
        "many.jsonl": {
            "slug": "a", "title": "A", "body": "x",
            "links": [f"t{i}" for i in range(MAX_PAGE_LINKS + 1)],
        },
        "ok.jsonl": {"slug": "a", "title": "A", "body": "[[b]] [c](c.md)", "links": ["d", "a"]},
    }  # fmt: skip
    for name, record in records.items():
        (project / name).write_text(json.dumps(record) + "\n", encoding="utf-8")
    before = snapshot(project / ".lwc")
    bad = run_lwc("page", "import", "bad.jsonl", cwd=project, home=home)
    assert (bad.returncode, err_code(bad)) == (1, "invalid_import")
    assert "links[1]" in json.loads(bad.stderr)["error"]["message"]
    many = run_lwc("page", "import", "many.jsonl", cwd=project, home=home)
    assert (many.returncode, err_code(many)) == (1, "invalid_page")
    assert snapshot(project / ".lwc") == before
    out_json(run_lwc("page", "import", "ok.jsonl", cwd=project, home=home))
    shown = out_json(run_lwc("page", "show", "a", cwd=project, home=home))
    assert shown["links"] == ["d"]


def test_recorded_links_count_towards_the_bound(tmp_path: Path) -> None:
    """Links another tool recorded (`PageInput.links`, `import --from-lwc`) are bounded too."""
    db = new_store(tmp_path / "p")
    hub = page("hub", "Hub", "no links here", links=tuple(f"t{i}" for i in range(5000)))
    with Wiki(db) as wiki:
        with pytest.raises(WikiError) as refused:
            wiki.put_pages([hub])
        assert refused.value.code == "invalid_page"
        assert wiki.list_pages() == []


# -- JSON Lines of any size ---------------------------------------------------------------


def test_a_jsonl_larger_than_64_mib_is_imported_in_batches(tmp_path: Path) -> None:
    """A 65+ MiB JSON Lines file is streamed: every Page is stored, over several batches.
    The bodies are written as JSON `\\u` escapes (6 bytes a character), so the file is large
    while the text to index stays small."""
    project, home = _cli_project(tmp_path)
    escaped = "".join(f"\\u{ord(c):04x}" for c in "zebra ") * 200_000  # 1.2 Mi chars
    count = 10
    with (project / "big.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(count):
            handle.write(f'{{"slug": "p{i}", "title": "Page {i}", "body": "{escaped}"}}\n')
    assert (project / "big.jsonl").stat().st_size > 64 * 1024 * 1024
    result = out_json(
        run_lwc("page", "import", "big.jsonl", "--batch", "4", cwd=project, home=home)
    )
    assert result["created"] == count
    listed = out_json(run_lwc("page", "list", cwd=project, home=home))
    assert len(listed["pages"]) == count


def test_a_bad_record_late_in_a_jsonl_changes_nothing(tmp_path: Path) -> None:
    """Every record is checked before the first batch is written: a duplicate slug on the
    last line names both lines, and no Page of the earlier batches is stored."""
    project, home = _cli_project(tmp_path)
    lines = [json.dumps({"slug": f"p{i}", "title": "T", "body": "b"}) for i in range(30)]
    lines.append(json.dumps({"slug": "p3", "title": "T", "body": "again"}))
    (project / "pages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = snapshot(project / ".lwc")
    proc = run_lwc("page", "import", "pages.jsonl", "--batch", "5", cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "invalid_page"
    message = json.loads(proc.stderr)["error"]["message"]
    assert "pages.jsonl:31" in message
    assert "line 4" in message
    assert snapshot(project / ".lwc") == before


def test_a_jsonl_record_over_64_mib_is_refused_by_line(tmp_path: Path) -> None:
    """One record is still bounded: a line over 64 MiB is `invalid_import` naming the line."""
    project, home = _cli_project(tmp_path)
    with (project / "huge.jsonl").open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"slug": "a", "title": "A", "body": "ok"}) + "\n")
        handle.write('{"slug": "b", "title": "B", "body": "' + "x" * MAX_TEXT_BYTES + '"}\n')
    proc = run_lwc("page", "import", "huge.jsonl", cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "invalid_import"
    assert "huge.jsonl:2" in json.loads(proc.stderr)["error"]["message"]


# -- store paths too long for SQLite ------------------------------------------------------


def _deep(root: Path, length: int) -> Path:
    """A directory under `root` whose path is about `length` bytes long."""
    path = root
    while len(os.fsencode(path)) < length:
        path = path / ("d" * min(100, max(1, length - len(os.fsencode(path)) - 1)))
    path.mkdir(parents=True)
    return path


def test_lwc_init_in_a_too_long_directory_is_store_path_invalid(tmp_path: Path) -> None:
    """From a directory whose store path SQLite cannot open, `lwc init` says so (not
    `store_corrupt (unable to open database file)`) and leaves nothing behind: no store
    file and no `.lwc/` folder (a refused command changes no file)."""
    home = tmp_path / "home"
    deep = _deep(tmp_path / "w", STORE_PATH_MAX)
    proc = run_lwc("init", "--no-git-exclude", cwd=deep, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "store_path_invalid"
    assert f"at most {STORE_PATH_MAX} bytes" in json.loads(proc.stderr)["error"]["message"]
    assert list(deep.iterdir()) == []


def test_an_existing_store_at_a_too_long_path_is_store_path_invalid(tmp_path: Path) -> None:
    """A store moved below a long path is `store_path_invalid` for the CLI and the server's
    memory plane (was `store_corrupt` and `store_not_found`)."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("zebra", "Zebra", "zebra stripes")])
    deep = _deep(tmp_path / "long", 520) / "ws"  # past what SQLite itself opens (~504)
    project.rename(deep)
    memory = ask("zebra", deep, home=home, scope="project")
    assert memory["state"] == "unavailable"
    assert memory["error"]["code"] == "store_path_invalid"
    proc = run_lwc("search", "zebra", cwd=deep, home=home)
    assert err_code(proc) == "store_path_invalid"
    proc = run_lwc("page", "list", cwd=deep, home=home)
    assert err_code(proc) == "store_path_invalid"


# -- user_version ---------------------------------------------------------------------------


def test_an_lwc_store_with_a_user_version_is_not_taken_for_lwc(tmp_path: Path) -> None:
    """An lwc store whose SQLite `user_version` is 1–255 (set by a user or another tool) is
    still read and written as an lwc store: `unsupported_store_version` is for LWC 0.16's
    WAL-mode stores with `user_version` 16."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("zebra", "Zebra", "zebra stripes")])
    for version in (1, 16, 255):
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute(f"PRAGMA user_version = {version}")
        conn.close()
        memory = ask("zebra", project, home=home, scope="project")
        assert memory["state"] == "ready", (version, memory)
        assert ids(memory) == ["zebra"]
        proc = run_lwc("search", "zebra", cwd=project, home=home)
        assert out_json(proc)["results"][0]["identifier"] == "zebra"
    out_json(run_lwc("page", "put", "more", "--title", "More", "--file", "-", cwd=project,
                     home=home, stdin=b"more zebra"))  # fmt: skip


# -- folders of Sources -------------------------------------------------------------------


def test_a_folder_of_sources_is_written_in_bounded_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`add_sources` of checked files commits once per `SOURCE_BATCH_CHARS` of text (the
    write holds one batch, not the folder) and stores every file; a file changed after the
    check is refused, not stored unchecked."""
    db = new_store(tmp_path / "p")
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(6):
        (folder / f"f{i}.txt").write_text(f"heron{i} " * 200, encoding="utf-8")
    monkeypatch.setattr(writer, "SOURCE_BATCH_CHARS", 2_500)  # two files of 1,400 a batch
    files = read_source_inputs(folder, root=tmp_path, title=None)
    with Wiki(db) as wiki:
        before = wiki.status()["contentRevision"]
        added = wiki.add_sources(files)
        assert [item["created"] for item in added] == [True] * 6
        assert wiki.status()["contentRevision"] == before + 3
        assert wiki.status()["sources"] == 6
    memory = ask("heron4", tmp_path / "p", home=tmp_path, scope="project")
    assert [row["type"] for row in memory["results"]] == ["source"]

    (folder / "g.txt").write_text("first words", encoding="utf-8")
    files = read_source_inputs(folder / "g.txt", root=tmp_path, title=None)
    (folder / "g.txt").write_text("other words", encoding="utf-8")
    with Wiki(db) as wiki, pytest.raises(WikiError) as refused:
        wiki.add_sources(files)
    assert refused.value.code == "invalid_source"
    assert "changed" in str(refused.value)
