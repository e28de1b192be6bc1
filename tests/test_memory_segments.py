"""The format-4 search index: per-term posting segments, dead postings and their merging.

A write batch appends one segment per term; a rewritten or removed document leaves its
postings behind under an id that is never reused. Whatever sequence of writes built a store,
it must answer exactly as the same content re-indexed from scratch (`lwc repair`).
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from array import array
from pathlib import Path
from typing import Any

from conftest_memory import ask, new_store, page, put_pages

from lwc_trio.memory import search, vector
from lwc_trio.memory.indexer import (
    MAX_SEGMENTS,
    POSTING_FIELDS,
    IndexBuffer,
    index_page,
    pack,
    unpack,
)
from lwc_trio.memory.search import best_first
from lwc_trio.memory.writer import Wiki

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "caching",
    "cache",
    "cached",
    "zebra",
    "quartz",
    "nimbus",
    "stratus",
]
QUERIES = ["alpha", "cache", "zebra quartz", "gamma delta nimbus", "stratus alpha beta", "zebr"]


def _answers(project: Path, home: Path) -> list[list[tuple[Any, ...]]]:
    out = []
    for query in QUERIES:
        memory = ask(query, project, home=home, scope="project", max_documents=5)
        assert memory["state"] == "ready", memory
        out.append(
            [(r["identifier"], r["rank"], r["match"], r["snippet"]) for r in memory["results"]]
        )
    return out


def _segments(db: Path) -> list[tuple[str, int, bytes, bytes]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT term, seg, postings, heads FROM search_segments").fetchall()
    finally:
        conn.close()


def test_any_write_sequence_answers_like_a_rebuilt_index(tmp_path: Path) -> None:
    """Random puts, rewrites and removals, one batch each, then the same store repaired:
    identical results (ranks, matches, snippets) for every query after every round."""
    rng = random.Random(7)
    project, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    db = new_store(project)
    slugs = [f"p{i}" for i in range(12)]
    for round_no in range(6):
        for _ in range(5):
            with Wiki(db) as wiki:
                present = sorted(p["slug"] for p in wiki.list_pages())
                if present and rng.random() < 0.2:
                    wiki.remove_page(rng.choice(present))
                    continue
            batch = []
            for slug in rng.sample(slugs, rng.randint(1, 3)):  # new Pages and rewrites
                body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30)))
                title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
                batch.append(page(slug, title.title(), body))
            put_pages(db, batch)
        incremental = _answers(project, home)
        copy_root = tmp_path / f"copy{round_no}"
        shutil.copytree(project, copy_root / "proj")
        with Wiki(copy_root / "proj" / ".lwc" / "wiki.db") as wiki:
            wiki.repair()
        assert _answers(copy_root / "proj", home) == incremental, round_no


def test_rewrites_merge_segments_and_drop_dead_postings(tmp_path: Path) -> None:
    """Each rewrite adds a segment per term; past MAX_SEGMENTS a write merges them into one,
    keeping only the live document's posting."""
    project, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    db = new_store(project)
    put_pages(db, [page("other", "Other", "zebra stripes")])
    for i in range(3 * MAX_SEGMENTS):
        put_pages(db, [page("z", "Zebra", f"zebra version {i}")])
        per_term: dict[str, int] = {}
        for term, _seg, _postings, _heads in _segments(db):
            per_term[term] = per_term.get(term, 0) + 1
        assert max(per_term.values()) <= MAX_SEGMENTS + 1
    conn = sqlite3.connect(db)
    live = {row[0] for row in conn.execute("SELECT doc_id FROM search_docs")}
    df = dict(conn.execute("SELECT term, df FROM search_terms").fetchall())
    conn.close()
    zebra = [unpack(blob) for term, _s, blob, _h in _segments(db) if term == "zebra"]
    ids = [d for values in zebra for d in values[0::POSTING_FIELDS]]
    assert len(ids) <= df["zebra"] + MAX_SEGMENTS  # dead ones only since the last merge
    assert live <= set(ids)
    memory = ask("zebra", project, home=home, scope="project")
    assert [r["identifier"] for r in memory["results"]] == ["z", "other"]
    assert "version 23" in memory["results"][0]["snippet"]


def test_removed_and_rewritten_pages_are_never_answered(tmp_path: Path) -> None:
    """A removed Page's postings stay in its segment, dead: it is not a result, and the
    live Pages behind it still fill the list."""
    project, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    db = new_store(project)
    put_pages(db, [page(f"n{i}", f"Note {i}", "kestrel " * (10 - i)) for i in range(10)])
    with Wiki(db) as wiki:
        for i in range(0, 10, 2):
            wiki.remove_page(f"n{i}")
    put_pages(db, [page("n1", "Note 1", "no bird here")])
    memory = ask("kestrel", project, home=home, scope="project", max_documents=3)
    assert [r["identifier"] for r in memory["results"]] == ["n3", "n5", "n7"]


def test_a_document_replaced_in_its_own_batch_leaves_no_posting(tmp_path: Path) -> None:
    """Written twice before one flush: only the second version's postings are stored."""
    project, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    db = new_store(project)
    put_pages(db, [page("a", "Alpha", "heron")])
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    buffer = IndexBuffer()
    index_page(conn, "b", "Beta", None, "heron egret", buffer)
    index_page(conn, "b", "Beta", None, "heron ibis", buffer)
    buffer.flush(conn)
    conn.execute("COMMIT")
    b_id = conn.execute("SELECT doc_id FROM search_docs WHERE ident = 'b'").fetchone()[0]
    conn.close()
    terms = {term for term, _s, _p, _h in _segments(db)}
    assert "egret" not in terms
    assert "ibi" in terms or "ibis" in terms
    heron = [unpack(blob) for term, _s, blob, _h in _segments(db) if term == "heron"]
    assert sorted(d for values in heron for d in values[0::POSTING_FIELDS]) == [1, b_id]


def test_decoded_postings_are_kept_per_revision_only(tmp_path: Path) -> None:
    """A query keeps its terms' decoded postings for the store revision it read: the next
    query after a write reads the new postings (a new Page holding the term is found, also when
    the mean document length, part of the key, stays the same)."""
    project, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    db = new_store(project)
    put_pages(db, [page("first", "Alpha notes", "alpha beta")])
    before = ask("alpha", project, home=home, scope="project", max_documents=5)
    assert [r["identifier"] for r in before["results"]] == ["first"]
    put_pages(db, [page("second", "Alpha again", "alpha gamma")])
    after = ask("alpha", project, home=home, scope="project", max_documents=5)
    assert sorted(r["identifier"] for r in after["results"]) == ["first", "second"]
    assert all(r["match"] == "lexical" for r in after["results"])


def test_best_first_is_the_n_smallest_of_score_and_doc_id() -> None:
    """The cutoff selection equals a full sort by (−score, doc id), ties included."""
    rng = random.Random(3)
    for _round in range(200):
        scores = {doc: float(rng.randint(0, 6)) for doc in rng.sample(range(1, 500), 60)}
        expected = sorted((-score, doc) for doc, score in scores.items())
        for n in (0, 1, 7, 32, 59, 60, 100):
            assert best_first(scores, n) == expected[:n]


def _random_prepared(
    rng: random.Random, terms: list[str], top: int
) -> dict[str, list[search.Prepared]]:
    segments: dict[str, list[search.Segment]] = {}
    for term in terms:
        for _seg in range(rng.randint(1, 3)):
            ids = sorted(rng.sample(range(1, top), rng.randint(1, 80)))
            tws = [rng.randint(1, 40) for _ in ids]
            dls = [rng.randint(0, 900) for _ in ids]
            columns = (ids, tws, dls, [-1] * len(ids))
            a, b, c, d = (array("i", values) for values in columns)
            segments.setdefault(term, []).append((a, b, c, d))
    return search.prepare(segments, 0.45, 1.35 / 117.3)


def test_numpy_scores_equal_the_python_loop_bit_for_bit(monkeypatch: Any) -> None:
    """Scoring by segment (numpy) gives exactly the per-posting loop's floats, best-first
    order, ties and exact/fuzzy matches, with dense and with sparse (remapped) doc ids."""
    rng = random.Random(11)
    terms = ["a", "b", "c", "d", "e"]
    for round_ in range(120):
        top = rng.choice([300, 5_000, 2_000_000_000])
        prepared = _random_prepared(rng, terms, top)
        weighted = [(t, rng.uniform(0.1, 9.0), int(rng.random() < 0.7)) for t in terms]
        expected, exact_docs = search.score_prepared(prepared, weighted)
        monkeypatch.setattr(search, "VECTOR_MIN", 0)
        scores = search.score(prepared, weighted)
        monkeypatch.undo()
        assert isinstance(scores, vector.VectorScores), round_
        assert dict(zip(scores.ids.tolist(), scores.values.tolist(), strict=True)) == expected
        for n in (0, 1, 5, 32, len(expected), len(expected) + 3):
            assert scores.best(n) == best_first(expected, n)
        for doc in [*list(expected)[:50], top + 1]:
            assert scores.is_exact(doc) == (exact_docs is None or doc in exact_docs)


def test_numpy_denominators_equal_the_python_ones(monkeypatch: Any) -> None:
    rng = random.Random(5)
    tws = array("i", [rng.randint(1, 60) for _ in range(2_000)])
    dls = array("i", [rng.randint(0, 5_000) for _ in range(2_000)])
    k, kb = 0.45, 1.35 / 91.7
    expected = array("d", [tw + k + kb * dl for tw, dl in zip(tws, dls, strict=True)])
    assert vector.denominators(tws, dls, k, kb) == expected


def test_large_segments_are_checked_like_small_ones(monkeypatch: Any) -> None:
    """The numpy checks of a large segment refuse exactly what the per-posting ones do."""
    rng = random.Random(9)
    good = []
    doc = 0
    for _ in range(600):
        doc += rng.randint(1, 3)
        good += [doc, rng.randint(1, 9), rng.randint(0, 99), rng.randint(-1, 50)]
    bad = {
        "zero id": (0, 0),
        "repeated id": (4, good[0]),
        "descending id": (8, 1),
        "zero count": (5, 0),
        "negative length": (6, -1),
        "first below -1": (7, -2),
    }
    for name, (index, value) in [("none", (1, good[1])), *bad.items()]:
        values = list(good)
        values[index] = value
        blob = pack(values)
        outcomes = []
        for vector_min in (0, 10**9):
            monkeypatch.setattr(search, "VECTOR_MIN", vector_min)
            monkeypatch.setattr(search, "VECTOR_LOADED_MIN", vector_min)
            try:
                search._segment(blob)
                outcomes.append("ok")
            except sqlite3.DatabaseError:
                outcomes.append("refused")
        assert outcomes == (["ok", "ok"] if name == "none" else ["refused", "refused"]), name


def test_a_rewritten_page_is_answered_from_its_new_rows(tmp_path: Path) -> None:
    """The per-revision caches (statistics, frequencies, descriptions, result rows) never
    answer for a newer revision: a Page rewritten between two queries shows its new title,
    snippet and links, and a removed link target's degree is recounted."""
    project, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    db = new_store(project)
    put_pages(db, [page("first", "Alpha notes", "alpha beta [[second]]"), page("second", "B", "x")])
    before = ask("alpha", project, home=home, scope="project", max_documents=5)
    assert [(r["title"], r["snippet"]) for r in before["results"]] == [
        ("Alpha notes", "alpha beta [[second]]")
    ]
    assert before["pages"][0]["links"] == ["second"]
    put_pages(db, [page("first", "Alpha again", "alpha gamma")])
    after = ask("alpha", project, home=home, scope="project", max_documents=5)
    assert [(r["title"], r["snippet"]) for r in after["results"]] == [
        ("Alpha again", "alpha gamma")
    ]
    assert after["pages"][0]["links"] == []
