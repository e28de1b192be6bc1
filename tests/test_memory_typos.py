"""Per-term typo correction through the store's typo index (SPEC §4 "Typos"), real stores."""

from __future__ import annotations

import contextlib
import random
import sqlite3
import string
from pathlib import Path
from typing import Any

import pytest
from conftest_memory import ask, new_project, page, put_pages

from lwc_trio.memory.format.typo_index import WordIndex
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.query import engine, fuzzy
from lwc_trio.memory.storage import pool


def _filler(rng: random.Random, count: int) -> list[str]:
    return [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 11)))
        for _ in range(count)
    ]


def _edited(rng: random.Random, word: str, edits: int) -> str:
    """`word` with `edits` random substitutions, deletions, insertions or adjacent swaps."""
    chars = list(word)
    for _ in range(edits):
        at = rng.randrange(len(chars) - 1)
        how = rng.choice("sdit")
        if how == "t":
            chars[at : at + 2] = chars[at + 1 : at - 1 if at else None : -1]
        elif how == "d":
            del chars[at]
        else:
            chars[at : at + (how == "s")] = [rng.choice(string.ascii_lowercase)]
    return "".join(chars)


def test_a_misspelt_word_is_corrected_without_reading_the_whole_vocabulary(
    tmp_path: Path,
) -> None:
    """A typo (one edit: 4–7 letters) among enough hits is corrected from the few words of
    its lengths and initial: no whole-vocabulary read, far fewer words read than stored."""
    project, db, home = new_project(tmp_path)
    rng = random.Random(24)
    pages = [page(f"d{i}", f"Deployment {i}", "rollout deployment notes") for i in range(8)]
    pages += [page(f"f{i}", f"Filler {i}", " ".join(_filler(rng, 400))) for i in range(40)]
    put_pages(db, pages)
    conn = sqlite3.connect(db)
    total = conn.execute("SELECT count(*) FROM search_words").fetchone()[0]
    total += conn.execute("SELECT count(*) FROM search_terms").fetchone()[0]
    conn.close()
    engine.WORD_INDEXES.clear()
    memory = ask("rolluot", project, home=home, max_documents=8)
    assert sorted(r["identifier"] for r in memory["results"]) == [f"d{i}" for i in range(8)]
    assert {r["match"] for r in memory["results"]} == {"fuzzy"}
    read = max(index.read for index in engine.WORD_INDEXES._entries.values())
    assert 0 < read < total / 5, (read, total)


def test_the_typo_index_finds_what_the_whole_vocabulary_finds(tmp_path: Path) -> None:
    """Through the store's typo index, corrections are the very lists the whole vocabulary
    gives: removed documents' terms are not proposed, words keep their stems."""
    _project, db, _home = new_project(tmp_path)
    rng = random.Random(5)
    words = [*_filler(rng, 3000), "deploys", "deploying", "deployed", "edploys", "xdeploys"]
    pages = [page(f"p{i}", f"Page {i}", " ".join(words[i * 60 : (i + 1) * 60])) for i in range(51)]
    put_pages(db, pages)
    put_pages(db, [page("gone", "Gone", "deplozzz quuxing")])
    conn = sqlite3.connect(db, isolation_level=None)
    # Removed the way the CLI removes it: its terms leave search_terms.
    with Wiki(db) as wiki:
        wiki.remove_page("gone")
    conn.execute("BEGIN")
    vocab = fuzzy.build_vocabulary(conn)
    probes = ["deplozz", "deploys", "depolys", "eploys", "deployign", "quuxin", "qwertyuiop"]
    probes += [_edited(rng, words[i * 47], 1 + i % 2) for i in range(60)]
    index = WordIndex().bind(conn)
    for word in probes:
        for edits in (1, 2):
            assert fuzzy.near_words(index, word, edits) == fuzzy.near_words(vocab, word, edits)
    assert not any(w == "deplozzz" for _d, w, _s in fuzzy.near_words(index, "deplozz", 1))
    conn.execute("ROLLBACK")
    conn.close()


SEARCH_TABLES = ("search_terms", "search_words", "search_segments", "search_fuzzy")


def test_typos_and_the_title_fill_up_never_scan_a_whole_search_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A misspelt query with fewer hits than maxDocuments (so the title fill-up runs): every
    statement the server runs on the store, in the request's thread or any other, reads the
    search tables by key (SQLite's plan SEARCHes them, never SCANs one whole), and the
    words it reads of the typo index are a few of its groups."""
    project, db, home = new_project(tmp_path)
    rng = random.Random(11)
    pages = [page("k", "Kubernetes rollout", "cluster notes"), page("o", "Other", "lunch")]
    # Words of lengths no query word here can reach (4–13 letters for these two).
    long_words = [
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(14, 18))) for _ in range(9000)
    ]
    pages += [
        page(f"f{i}", f"Filler {i}", " ".join(long_words[i * 300 : (i + 1) * 300]))
        for i in range(30)
    ]
    put_pages(db, pages)
    statements: list[str] = []
    traced: list[sqlite3.Connection] = []
    real = pool.checkout

    def checkout(*args: Any, **kwargs: Any) -> Any:
        reader = real(*args, **kwargs)
        reader.conn.set_trace_callback(statements.append)
        traced.append(reader.conn)
        return reader

    monkeypatch.setattr(engine, "checkout", checkout)
    engine.WORD_INDEXES.clear()
    try:
        memory = ask("kubernets rolout", project, home=home, max_documents=8)
    finally:
        for conn in traced:
            with contextlib.suppress(sqlite3.ProgrammingError):  # closed already
                conn.set_trace_callback(None)
    assert [r["identifier"] for r in memory["results"]][:1] == ["k"]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    scans = []
    for sql in statements:
        if any(table in sql for table in SEARCH_TABLES):
            plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            scans += [(sql, step) for step in plan if step.startswith("SCAN search_")]
    total = conn.execute("SELECT count(*) FROM search_fuzzy").fetchone()[0]
    conn.close()
    assert scans == []
    read = max(index.read for index in engine.WORD_INDEXES._entries.values())
    assert 0 < read < total / 2, (read, total)


def test_the_title_fill_up_through_the_typo_index_finds_what_the_vocabulary_finds(
    tmp_path: Path,
) -> None:
    """`similar_words` through the store's typo index gives the very list the whole
    vocabulary gives: same words, ratios, stems, order; only words a title holds."""
    _project, db, _home = new_project(tmp_path)
    rng = random.Random(9)
    words = _filler(rng, 3000)
    pages = [
        page(
            f"p{i}", f"{words[i]} {words[i + 1000]} Deploying", " ".join(words[i * 3 : i * 3 + 60])
        )
        for i in range(60)
    ]
    put_pages(db, pages)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    vocab = fuzzy.build_vocabulary(conn)
    index = WordIndex().bind(conn)
    probes = [
        "deploing",
        "deplyoing",
        "dep",
        "deploys",
        *(_edited(rng, words[i], 1) for i in range(40)),
    ]
    probes += [_edited(rng, words[i + 1000], 2) for i in range(40)] + words[100:120]
    for word in probes:
        assert fuzzy.similar_words(index, word) == fuzzy.similar_words(vocab, word), word
    assert any(fuzzy.similar_words(index, w) for w in probes[4:44])
    conn.execute("ROLLBACK")
    conn.close()
