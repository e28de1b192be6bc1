"""The scale benchmark's corpus (`benchmarks.scale_corpus`): deterministic, issue-24-shaped."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import scale_corpus as sc


def test_pages_are_a_function_of_their_index_and_shaped_as_the_issue_says(
    tmp_path: Path,
) -> None:
    pages = list(sc.pages(2_000, 0, 60))
    assert pages == list(sc.pages(2_000, 0, 60))
    assert sc.page(37, 2_000) == pages[37]
    assert len({p["slug"] for p in pages}) == len(pages)
    for page in pages:
        assert 3 <= len(page["title"].split()) <= 8
        assert page["summary"]
        words = len(page["body"].split())
        assert sc.MIN_WORDS * 0.9 <= words <= sc.MAX_WORDS * 1.2, words
    assert any("[[" in p["body"] for p in pages)
    assert any("_" in p["body"] for p in pages)  # snake_case identifiers
    size = sc.write_jsonl(tmp_path / "p.jsonl", 2_000, 0, 60)
    lines = (tmp_path / "p.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == pages
    assert 3_000 < size / len(pages) < 10_000  # ~5.9 KB a Page


def test_queries_are_deterministic_and_of_their_kind() -> None:
    vocab = set(sc.vocabulary())
    assert len(vocab) == sc.VOCABULARY_SIZE
    for kind in sc.KINDS:
        found = sc.queries(2_000, kind, 12)
        assert found == sc.queries(2_000, kind, 12)
        assert len(found) == 12
    for query in sc.queries(2_000, "rare", 12):
        assert 2 <= len(query.split()) <= 4
    for query in sc.queries(2_000, "common", 12):
        terms = query.split()
        assert 2 <= len(terms) <= 4
        assert any(t in sc._frequent() for t in terms)
    for query in sc.queries(2_000, "typo", 12):
        terms = query.split()
        assert len(terms) == 2
        assert sum(t not in vocab for t in terms) == 1
    for query in sc.queries(2_000, "question", 12):
        assert 10 <= len(query.rstrip("?").split()) <= 20
