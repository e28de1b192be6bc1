"""The Wiki CLI writes, reads and refuses as SPEC §7 says; a refused write changes no byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_memory import err_code, out_json, run_lwc, run_lwc_on_terminal, snapshot


@pytest.fixture
def env(tmp_path: Path) -> tuple[Path, Path]:
    """(project dir with an initialized store and a git repo, home dir)."""
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    (project / ".git" / "info").mkdir(parents=True)
    out_json(run_lwc("init", cwd=project, home=home))
    (project / "body.md").write_text("Body about [[other]] kubernetes.\n", encoding="utf-8")
    return project, home


K8S = ("page", "put", "k8s", "--title", "Kubernetes", "--file", "body.md")
"""`lwc page put` of the page most tests write (body.md comes from the `env` fixture)."""


def store_bytes(project: Path) -> dict[str, bytes]:
    """The store directory's files and bytes."""
    return snapshot(project / ".lwc")


def test_init_creates_store_and_git_exclude_once(tmp_path: Path) -> None:
    """`lwc init` makes .lwc/wiki.db, excludes .lwc/ from git, and is idempotent."""
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    first = out_json(run_lwc("init", cwd=project, home=home))
    assert first["created"] is True
    assert first["gitExclude"] is True
    assert first["path"] == str(project / ".lwc" / "wiki.db")
    second = out_json(run_lwc("init", "--json", cwd=project, home=home))
    assert second["created"] is False
    assert second["storeId"] == first["storeId"]
    exclude = (project / ".git" / "info" / "exclude").read_text()
    assert exclude.splitlines().count(".lwc/") == 1


def test_init_no_git_exclude_and_global(tmp_path: Path) -> None:
    """--no-git-exclude leaves git alone; --scope global init writes $HOME/.lwc/wiki.db."""
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    out_json(run_lwc("init", "--no-git-exclude", cwd=project, home=home))
    assert not (project / ".git" / "info").exists()
    made = out_json(run_lwc("--scope", "global", "init", cwd=project, home=home))
    assert made["path"] == str(home / ".lwc" / "wiki.db")
    assert made["gitExclude"] is None


def test_init_inside_another_store_tree_refuses_unless_nested(env: tuple[Path, Path]) -> None:
    """`lwc init` in a subdirectory of a store refuses (naming it); `--nested` makes one."""
    project, home = env
    sub = project / "sub"
    sub.mkdir()
    refused = run_lwc("init", cwd=sub, home=home)
    assert refused.returncode == 1
    assert err_code(refused) == "store_exists_above"
    assert not (sub / ".lwc").exists()
    made = out_json(run_lwc("init", "--nested", cwd=sub, home=home))
    assert made["created"] is True
    assert made["path"] == str(sub / ".lwc" / "wiki.db")


def test_project_init_in_home_is_refused(tmp_path: Path) -> None:
    """$HOME/.lwc is the global store: a project init there is refused, nothing created."""
    home = tmp_path / "home"
    home.mkdir()
    proc = run_lwc("init", cwd=home, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "store_path_invalid"
    assert not (home / ".lwc").exists()


def test_page_put_show_list_remove_round_trip(env: tuple[Path, Path]) -> None:
    """A page written from a file and from stdin reads back whole; remove deletes it."""
    project, home = env
    put = out_json(
        run_lwc(*K8S, "--summary", "S", "--provenance", "agent-observed", cwd=project, home=home)
    )
    assert put == {"scope": "project", "slug": "k8s", "result": "created", "revision": 1}
    shown = out_json(run_lwc("page", "show", "k8s", cwd=project, home=home))
    assert shown["body"] == "Body about [[other]] kubernetes.\n"
    assert shown["links"] == ["other"]
    assert shown["provenance"] == ["agent-observed"]
    stdin = out_json(
        run_lwc(
            "page",
            "put",
            "数据",
            "--title",
            "数据库",
            "--file",
            "-",
            cwd=project,
            home=home,
            stdin="正文 body".encode(),
        )
    )
    assert stdin["result"] == "created"
    listed = out_json(run_lwc("page", "list", cwd=project, home=home))
    assert [p["slug"] for p in listed["pages"]] == ["k8s", "数据"]
    again = out_json(
        run_lwc(*K8S, "--summary", "S", "--provenance", "agent-observed", cwd=project, home=home)
    )
    assert again["result"] == "unchanged"
    assert again["revision"] == 2
    out_json(run_lwc("page", "remove", "k8s", cwd=project, home=home))
    gone = run_lwc("page", "show", "k8s", cwd=project, home=home)
    assert gone.returncode == 1
    assert err_code(gone) == "page_not_found"


def test_writes_from_a_subdirectory_use_the_nearest_store(env: tuple[Path, Path]) -> None:
    """Commands walk up from the cwd to the nearest .lwc/wiki.db."""
    project, home = env
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    (deep / "b.md").write_text("deep body")
    out_json(
        run_lwc("page", "put", "deep", "--title", "Deep", "--file", "b.md", cwd=deep, home=home)
    )
    listed = out_json(run_lwc("page", "list", cwd=project, home=home))
    assert [p["slug"] for p in listed["pages"]] == ["deep"]


OK_PUT = ("page", "put", "ok", "--title", "T", "--file", "body.md")
BAD_PAGES = {
    "slash": ["page", "put", "a/b", "--title", "T", "--file", "body.md"],
    "dotdot": ["page", "put", "..", "--title", "T", "--file", "body.md"],
    "control": ["page", "put", "bad\x01slug", "--title", "T", "--file", "body.md"],
    "empty": ["page", "put", "", "--title", "T", "--file", "body.md"],
    "provenance": [*OK_PUT, "--provenance", "rumour"],
    "grounded-without-source": [*OK_PUT, "--provenance", "source-grounded"],
    "missing-source": [*OK_PUT, "--source", "src-0000000000000000"],
    "binary-body": ["page", "put", "ok", "--title", "T", "--file", "binary.bin"],
}
BAD_CODES = {
    "slash": "invalid_slug",
    "dotdot": "invalid_slug",
    "control": "invalid_slug",
    "empty": "invalid_slug",
    "provenance": "invalid_provenance",
    "grounded-without-source": "invalid_provenance",
    "missing-source": "source_not_found",
    "binary-body": "invalid_page",
}


@pytest.mark.parametrize("case", sorted(BAD_PAGES))
def test_refused_page_leaves_store_unchanged(env: tuple[Path, Path], case: str) -> None:
    """Each refused `page put` exits 1 with its error code and the store bytes are identical."""
    project, home = env
    (project / "binary.bin").write_bytes(b"\xff\xfe\x00\x01")
    out_json(
        run_lwc(
            "page", "put", "keep", "--title", "Keep", "--file", "body.md", cwd=project, home=home
        )
    )
    before = store_bytes(project)
    proc = run_lwc(*BAD_PAGES[case], cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == BAD_CODES[case]
    assert proc.stdout == b""
    assert store_bytes(project) == before


def test_refused_sources_leave_store_unchanged(env: tuple[Path, Path]) -> None:
    """Non-UTF-8 files, files over 64 MiB and (with --strict) a directory holding one are
    all refused."""
    project, home = env
    (project / "bad.txt").write_bytes(b"ok then \xc3\x28 broken")
    with (project / "huge.txt").open("wb") as handle:
        handle.truncate(64 * 1024 * 1024 + 1)  # sparse: costs no disk
    docs = project / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("fine")
    (docs / "b.bin").write_bytes(b"\x80\x81")
    before = store_bytes(project)
    for target, code in (
        ("bad.txt", "invalid_source"),
        ("huge.txt", "source_too_large"),
        ("docs", "invalid_source"),
    ):
        proc = run_lwc("source", "add", target, "--strict", cwd=project, home=home)
        assert proc.returncode == 1, target
        assert err_code(proc) == code, target
        assert store_bytes(project) == before


def test_uninitialized_store_is_refused_and_nothing_created(tmp_path: Path) -> None:
    """Writes and reads without a store fail with store_not_found and create no file."""
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    (project / "body.md").write_text("x")
    before = snapshot(tmp_path)
    for args in (
        ["page", "put", "x", "--title", "T", "--file", "body.md"],
        ["source", "add", "body.md"],
        ["page", "list"],
        ["search", "x"],
        ["--scope", "global", "page", "list"],
    ):
        proc = run_lwc(*args, cwd=project, home=home)
        assert proc.returncode == 1, args
        assert err_code(proc) == "store_not_found", args
    assert snapshot(tmp_path) == before


def test_home_lwc_is_not_a_project_store(tmp_path: Path) -> None:
    """Below $HOME, the global store is never picked up as the project store."""
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    out_json(run_lwc("--scope", "global", "init", cwd=project, home=home))
    proc = run_lwc("page", "list", cwd=project, home=home)
    assert err_code(proc) == "store_not_found"
    assert out_json(run_lwc("page", "list", "--scope", "global", cwd=project, home=home)) == {
        "pages": []
    }


@pytest.mark.parametrize("where", ["before", "after"])
def test_write_with_scope_all_is_usage_error(env: tuple[Path, Path], where: str) -> None:
    """`--scope all` on a write exits 2, wherever the flag is, and changes nothing."""
    project, home = env
    before = store_bytes(project)
    cmd = ["page", "put", "x", "--title", "T", "--file", "body.md"]
    args = ["--scope", "all", *cmd] if where == "before" else [*cmd, "--scope", "all"]
    proc = run_lwc(*args, cwd=project, home=home)
    assert proc.returncode == 2
    assert err_code(proc) == "invalid_usage"
    assert store_bytes(project) == before


def test_source_add_dedupes_and_show_reads_a_window(env: tuple[Path, Path]) -> None:
    """Sources are named by content; `source show` pages through text with has_more."""
    project, home = env
    (project / "notes.txt").write_text("αβγδε" * 10, encoding="utf-8")
    added = out_json(
        run_lwc("source", "add", "notes.txt", "--title", "Greek", cwd=project, home=home)
    )
    (source,) = added["sources"]
    assert source["created"] is True
    assert source["id"].startswith("src-")
    again = out_json(run_lwc("source", "add", "notes.txt", cwd=project, home=home))
    assert again["sources"][0] == {"id": source["id"], "title": "Greek", "created": False}
    window = out_json(
        run_lwc(
            "source",
            "show",
            source["id"],
            "--offset-chars",
            "3",
            "--max-chars",
            "4",
            cwd=project,
            home=home,
        )
    )
    assert (window["content"], window["has_more"], window["length"]) == ("δεαβ", True, 50)
    tail = out_json(
        run_lwc("source", "show", source["id"], "--offset-chars", "45", cwd=project, home=home)
    )
    assert (tail["content"], tail["has_more"]) == ("αβγδε", False)
    cited = out_json(
        run_lwc(
            "page",
            "put",
            "greek",
            "--title",
            "Greek letters",
            "--file",
            "body.md",
            "--source",
            source["id"],
            cwd=project,
            home=home,
        )
    )
    assert cited["result"] == "created"
    shown = out_json(run_lwc("page", "show", "greek", cwd=project, home=home))
    assert shown["sources"] == [source["id"]]
    assert shown["provenance"] == ["source-grounded"]


def test_search_prints_ranked_results(env: tuple[Path, Path]) -> None:
    """`lwc search` returns the engine's result rows; > 64 terms is invalid_query."""
    project, home = env
    out_json(run_lwc(*K8S, cwd=project, home=home))
    found = out_json(run_lwc("search", "kubernetes", "--limit", "3", cwd=project, home=home))
    assert [r["identifier"] for r in found["results"]] == ["k8s"]
    assert found["stores"][0]["scope"] == "project"
    fuzzy = out_json(run_lwc("search", "kuberntes", "--scope", "all", cwd=project, home=home))
    assert [(r["identifier"], r["match"]) for r in fuzzy["results"]] == [("k8s", "fuzzy")]
    words = " ".join(f"w{i}" for i in range(65))
    proc = run_lwc("search", words, cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "invalid_query"


def test_page_import_jsonl_and_dir(env: tuple[Path, Path]) -> None:
    """Bulk import writes valid batches; one bad line refuses the whole file."""
    project, home = env
    lines = [
        json.dumps({"slug": f"p{i}", "title": f"Page {i}", "body": f"body {i}"}) for i in range(7)
    ]
    (project / "pages.jsonl").write_text("\n".join(lines) + "\n")
    counts = out_json(
        run_lwc("page", "import", "pages.jsonl", "--batch", "3", cwd=project, home=home)
    )
    assert counts == {"scope": "project", "created": 7, "updated": 0, "unchanged": 0}
    before = store_bytes(project)
    (project / "bad.jsonl").write_text(
        lines[0] + "\n" + '{"slug": "x/y", "title": "T", "body": ""}\n'
    )
    proc = run_lwc("page", "import", "bad.jsonl", cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "invalid_slug"
    assert store_bytes(project) == before
    md = project / "md"
    md.mkdir()
    (md / "plain.md").write_text("# Plain title\n\ntext")
    (md / "front.md").write_text('---\nslug: "fm"\ntitle: "Front"\nkind: note\n---\nbody\n')
    out_json(run_lwc("page", "import", "md", cwd=project, home=home))
    assert (
        out_json(run_lwc("page", "show", "plain", cwd=project, home=home))["title"] == "Plain title"
    )
    front = out_json(run_lwc("page", "show", "fm", cwd=project, home=home))
    assert (front["kind"], front["body"]) == ("note", "body\n")


def test_graph_config_build_and_status(env: tuple[Path, Path]) -> None:
    """The graph goes disabled → ready through the CLI (enabling builds it, as LWC's graph Work
    does); build needs it enabled and rebuilds it."""
    project, home = env
    proc = run_lwc("graph", "build", cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "graph_disabled"

    def status() -> str:
        stores = out_json(run_lwc("graph", "status", cwd=project, home=home))["stores"]
        return str(stores[0]["graph"]["status"])

    assert status() == "disabled"
    assert out_json(run_lwc("config", "set", "--graph", "enabled", cwd=project, home=home))[
        "changed"
    ]
    assert status() == "ready"
    built = out_json(run_lwc("graph", "build", cwd=project, home=home))
    assert built["graph"]["status"] == "ready"
    assert status() == "ready"


def test_repair_recovers_a_crashed_write(env: tuple[Path, Path]) -> None:
    """After a writer dies mid-transaction, `lwc repair` rolls back and re-indexes."""
    project, home = env
    out_json(run_lwc(*K8S, cwd=project, home=home))
    db = project / ".lwc" / "wiki.db"
    code = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA cache_size = 1')\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        "c.execute('DELETE FROM pages')\n"
        "c.execute('CREATE TABLE filler (x)')\n"
        "c.execute('WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 200)'"
        "          ' INSERT INTO filler SELECT zeroblob(4096) FROM s')\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True)
    assert (project / ".lwc" / "wiki.db-journal").exists()
    repaired = out_json(run_lwc("repair", cwd=project, home=home))
    assert repaired["journalRolledBack"] is True
    assert repaired["integrity"] == "ok"
    assert not (project / ".lwc" / "wiki.db-journal").exists()
    assert [
        p["slug"] for p in out_json(run_lwc("page", "list", cwd=project, home=home))["pages"]
    ] == ["k8s"]


def test_symlinked_store_is_refused(tmp_path: Path) -> None:
    """A symlinked .lwc is store_path_invalid for writes; the target is untouched."""
    home, project, other = tmp_path / "home", tmp_path / "home" / "proj", tmp_path / "other"
    project.mkdir(parents=True)
    other.mkdir()
    out_json(run_lwc("init", cwd=other, home=home))
    os.symlink(other / ".lwc", project / ".lwc")
    (project / "b.md").write_text("x")
    before = snapshot(other)
    proc = run_lwc("page", "put", "x", "--title", "T", "--file", "b.md", cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "store_path_invalid"
    assert snapshot(other) == before


def test_export_import_round_trip_is_byte_identical(env: tuple[Path, Path], tmp_path: Path) -> None:
    """export → import into a fresh store → export gives the same files, byte for byte."""
    project, home = env
    (project / "src.txt").write_text("line one\r\nline two 数据\n", encoding="utf-8")
    sid = out_json(run_lwc("source", "add", "src.txt", cwd=project, home=home))["sources"][0]["id"]
    (project / "p.md").write_text("Body with [[x]]\n\n---\nnot front matter\n", encoding="utf-8")
    out_json(
        run_lwc("page", "put", "数据", "--title", 'Quote " title', "--file", "p.md",
                "--source", sid, "--summary", "multi\nline", cwd=project, home=home)
    )  # fmt: skip
    first, second = tmp_path / "first", tmp_path / "second"
    assert out_json(run_lwc("export", str(first), cwd=project, home=home))["pages"] == 1
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    out_json(run_lwc("init", cwd=fresh, home=home))
    loaded = out_json(run_lwc("import", str(first), cwd=fresh, home=home))
    assert (loaded["sources"], loaded["created"]) == (1, 1)
    out_json(run_lwc("export", str(second), cwd=fresh, home=home))
    assert snapshot(first) == snapshot(second)
    shown = out_json(run_lwc("page", "show", "数据", cwd=fresh, home=home))
    assert shown["body"] == "Body with [[x]]\n\n---\nnot front matter\n"
    assert shown["summary"] == "multi\nline"
    assert shown["sources"] == [sid]


def test_export_refuses_a_foreign_non_empty_directory(
    env: tuple[Path, Path], tmp_path: Path
) -> None:
    """Export never writes into a non-empty directory that is not an earlier export."""
    project, home = env
    target = tmp_path / "busy"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    proc = run_lwc("export", str(target), cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "export_target_not_empty"
    assert snapshot(target) == {"keep.txt": b"mine"}


def test_progress_bar_only_on_a_terminal(env: tuple[Path, Path]) -> None:
    """`graph build` draws a bar when stderr is a terminal and prints nothing there when piped."""
    project, home = env
    out_json(
        run_lwc("page", "put", "a", "--title", "A", "--file", "body.md", cwd=project, home=home)
    )
    out_json(run_lwc("config", "set", "--graph", "enabled", cwd=project, home=home))
    piped = run_lwc("graph", "build", cwd=project, home=home)
    assert piped.returncode == 0
    assert piped.stderr == b""
    proc, drawn = run_lwc_on_terminal("graph", "build", cwd=project, home=home)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["graph"]["status"] == "ready"
    assert b"Building graph [" in drawn
    assert b"1/1" in drawn
