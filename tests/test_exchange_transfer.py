"""Plain-text forms of Pages: a JSON Lines file is written exactly as it was checked (SPEC §7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest_memory import new_store

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.exchange.transfer import parse_jsonl
from lwc_trio.memory.index.writer import Wiki

GOOD = [{"slug": f"good-{i}", "title": f"Good {i}", "body": f"body {i}"} for i in range(3)]

HOSTILE = [
    {"slug": "../../evil", "title": "Evil", "body": "escapes on export"},
    {"slug": "long-title", "title": "T" * 5_000, "body": "a title past the limit"},
    {"slug": "nul", "title": "NUL", "body": "a NUL \u0000 in the body"},
    {"slug": "good-0", "title": "Repeated", "body": "a slug given twice"},
]
"""Records each of which the check refuses (issue 36 item 6's examples)."""


def _lines(records: list[dict[str, str]]) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode("utf-8")


def test_records_appended_after_the_check_are_never_written(tmp_path: Path) -> None:
    """A producer appends refused records (a `../../` slug, a 5,000-character title, NUL, a
    repeated slug) after the file was checked: the import writes the checked records only."""
    db = new_store(tmp_path / "proj")
    path = tmp_path / "pages.jsonl"
    path.write_bytes(_lines(GOOD))
    pages = parse_jsonl(path, spool_dir=db.parent)
    with path.open("ab") as handle:
        handle.write(_lines(HOSTILE))
    with Wiki(db) as wiki:
        counts = wiki.put_pages(pages, batch=2)
        stored = {row["slug"]: row["title"] for row in wiki.list_pages()}
    assert counts == {"created": 3, "updated": 0, "unchanged": 0}
    assert stored == {"good-0": "Good 0", "good-1": "Good 1", "good-2": "Good 2"}


def test_a_record_changed_in_place_after_the_check_is_written_as_checked(tmp_path: Path) -> None:
    """The file is rewritten between the check and the write (same size, another slug): what
    is written is what was checked."""
    db = new_store(tmp_path / "proj")
    path = tmp_path / "pages.jsonl"
    path.write_bytes(_lines(GOOD))
    pages = parse_jsonl(path, spool_dir=db.parent)
    path.write_bytes(path.read_bytes().replace(b'"good-1"', b'"../x/1"'))
    with Wiki(db) as wiki:
        wiki.put_pages(pages)
        assert [row["slug"] for row in wiki.list_pages()] == ["good-0", "good-1", "good-2"]
        assert wiki.get_page("good-1")["body"] == "body 1"


def test_the_spool_leaves_no_file_behind(tmp_path: Path) -> None:
    """The private copy lives in the store's folder without a name, and is gone after."""
    db = new_store(tmp_path / "proj")
    before = sorted(p.name for p in db.parent.iterdir())
    path = tmp_path / "pages.jsonl"
    path.write_bytes(_lines(GOOD))
    pages = parse_jsonl(path, spool_dir=db.parent)
    with Wiki(db) as wiki:
        wiki.put_pages(pages)
    pages.close()
    assert sorted(p.name for p in db.parent.iterdir()) == before


def test_a_record_nested_past_the_stack_is_refused_by_line(tmp_path: Path) -> None:
    """A record of 100,000 nested arrays: `invalid_import` naming its line, not a traceback."""
    db = new_store(tmp_path / "proj")
    path = tmp_path / "pages.jsonl"
    path.write_bytes(_lines(GOOD) + b"[" * 100_000 + b"\n")
    with pytest.raises(WikiError, match=r"pages\.jsonl:4: JSON nested too deeply"):
        parse_jsonl(path, spool_dir=db.parent)
