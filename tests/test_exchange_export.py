"""`lwc export` writes only inside its target, whatever the store or the target holds (SPEC §7)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from conftest_memory import add_source, err_code, new_store, out_json, page, put_pages, run_lwc

from lwc_trio.memory.format.slugs import SHOWN_NAME_CHARS, shown_name


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose Wiki holds one Page, `note`, and one Source, written by lwc."""
    root = tmp_path / "home" / "proj"
    db = new_store(root)
    put_pages(db, [page("note", "Note", "A note.\n")])
    add_source(db, "source text\n")
    return root


def _home(project: Path) -> Path:
    return project.parent


def _plant(project: Path, sql: str, *params: str) -> None:
    """Change the store behind lwc's back, as a cloned repository's `wiki.db` can be."""
    with sqlite3.connect(project / ".lwc" / "wiki.db") as conn:
        conn.execute(sql, params)


HOSTILE_SLUGS = {
    "parent": "../../escaped",
    "absolute": "{outside}/absolute",
    "slash": "sub/dir",
    "backslash": "back\\slash",
    "nul": "nul\x00byte",
    "escape": "\x1b]0;title\x07",
    "dots": "..",
    "empty": "",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_SLUGS))
def test_export_refuses_a_store_whose_slug_is_no_file_name(
    project: Path, tmp_path: Path, kind: str
) -> None:
    """A planted slug (`../../x`, an absolute path, `/`, NUL, ...): export exits 1 with
    `export_name_invalid`, naming the slug (escaped) and the rule; nothing is written, the
    target included."""
    outside = tmp_path / "outside"
    outside.mkdir()
    slug = HOSTILE_SLUGS[kind].format(outside=outside)
    _plant(project, "UPDATE pages SET slug = ? WHERE slug = 'note'", slug)
    target = project / "export" / "deep"
    proc = run_lwc("export", str(target), cwd=project, home=_home(project))
    assert proc.returncode == 1
    assert err_code(proc) == "export_name_invalid"
    message = json.loads(proc.stderr)["error"]["message"]
    assert message.startswith(f"page {shown_name(slug)} cannot be a file name: a slug must ")
    assert "nothing was exported" in message
    assert not (project / "export").exists()
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "escaped.md").exists()


def test_export_refuses_a_planted_source_id(project: Path, tmp_path: Path) -> None:
    """A Source id that is not `src-` and 16 hex digits is refused like a slug."""
    _plant(project, "UPDATE sources SET id = ?", "../../stolen")
    proc = run_lwc("export", str(tmp_path / "out"), cwd=project, home=_home(project))
    assert proc.returncode == 1
    assert err_code(proc) == "export_name_invalid"
    assert "source '../../stolen'" in proc.stderr.decode()
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "stolen.md").exists()


def test_a_long_hostile_slug_is_quoted_cut(project: Path, tmp_path: Path) -> None:
    """A 100,000-character slug: the error quotes its first characters, not all of it."""
    _plant(project, "UPDATE pages SET slug = ? WHERE slug = 'note'", "/" + "x" * 100_000)
    proc = run_lwc("export", str(tmp_path / "out"), cwd=project, home=_home(project))
    assert err_code(proc) == "export_name_invalid"
    assert len(proc.stderr) < 1_000
    assert "x" * (SHOWN_NAME_CHARS - 1) + "'…" in proc.stderr.decode()


def test_a_link_planted_in_an_earlier_export_is_replaced_not_followed(
    project: Path, tmp_path: Path
) -> None:
    """An earlier export (say, committed to the repository) whose `pages/note.md` is a
    symbolic link, and whose source file is a hard link, to files outside: export replaces
    both entries with its own files, and the files outside keep their bytes."""
    target = tmp_path / "export"
    out_json(run_lwc("export", str(target), cwd=project, home=_home(project)))
    victim = tmp_path / "victim.md"
    victim.write_text("the user's own file\n", encoding="utf-8")
    linked = tmp_path / "hard.md"
    linked.write_text("another file of the user\n", encoding="utf-8")
    note = target / "pages" / "note.md"
    note.unlink()
    note.symlink_to(victim)
    (source,) = (target / "sources").iterdir()
    source.unlink()
    os.link(linked, source)
    out_json(run_lwc("export", str(target), cwd=project, home=_home(project)))
    assert victim.read_text(encoding="utf-8") == "the user's own file\n"
    assert linked.read_text(encoding="utf-8") == "another file of the user\n"
    assert not note.is_symlink()
    assert "A note." in note.read_text(encoding="utf-8")
    assert "source text" in source.read_text(encoding="utf-8")


def test_a_pages_folder_that_is_a_link_is_refused(project: Path, tmp_path: Path) -> None:
    """`pages/` of an earlier export swapped for a link to another folder: export fails
    (`export_failed`, saying links are not followed) and writes nothing there."""
    target = tmp_path / "export"
    out_json(run_lwc("export", str(target), cwd=project, home=_home(project)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for item in (target / "pages").iterdir():
        item.unlink()
    (target / "pages").rmdir()
    (target / "pages").symlink_to(elsewhere)
    proc = run_lwc("export", str(target), cwd=project, home=_home(project))
    assert proc.returncode == 1
    assert err_code(proc) == "export_failed"
    assert "symbolic link" in proc.stderr.decode()
    assert list(elsewhere.iterdir()) == []


def test_import_of_an_export_never_reads_through_a_link(project: Path, tmp_path: Path) -> None:
    """`lwc import DIR` of a cloned export whose page file links to a file outside: the import
    is refused naming the link, and the outside file's text is nowhere in the store."""
    target = tmp_path / "export"
    out_json(run_lwc("export", str(target), cwd=project, home=_home(project)))
    secret = tmp_path / "secret.md"
    secret.write_text('---\nslug: "stolen"\ntitle: "Stolen"\n---\nSECRET-TEXT\n', "utf-8")
    (target / "pages" / "stolen.md").symlink_to(secret)
    fresh = tmp_path / "home" / "fresh"
    put_pages(new_store(fresh), [])
    proc = run_lwc("import", str(target), cwd=fresh, home=_home(project))
    assert proc.returncode == 1
    assert err_code(proc) == "invalid_source"
    assert "stolen.md is a symbolic link" in proc.stderr.decode()
    assert b"SECRET-TEXT" not in (fresh / ".lwc" / "wiki.db").read_bytes()
