"""No step of a search holds the GIL for long, whatever the store (issue 24 item 4), on real
SQLite: a heartbeat thread in the same process measures its longest gap in CPU time
(`test_memory_scale.Heartbeat`) while a query ranks a store's scored documents."""

from __future__ import annotations

import importlib
import random
import sqlite3
from pathlib import Path

import pytest
from conftest_memory import new_store, page, put_pages
from test_memory_scale import HELD_BOUND_S, Heartbeat

from lwc_trio.memory.format.postings import encode_postings
from lwc_trio.memory.query import scoring, search, vector
from lwc_trio.memory.query.fuzzy import build_vocabulary
from lwc_trio.memory.text.tokenize import parse_query

DEAD = 800_000
"""Dead postings of `alpha` that outrank every live one."""


@pytest.fixture(scope="module")
def dead_at_the_top(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five live Pages holding `alpha`, and a segment (written with SQL, as a store rewritten
    many times leaves them until a merge) of `DEAD` postings of documents no longer in
    `search_docs`, each scoring above every live one."""
    db = new_store(tmp_path_factory.mktemp("dead") / "proj")
    put_pages(
        db, [page(f"live-{i}", f"Live {i}", "alpha " + "filler " * (40 * i)) for i in range(5)]
    )
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    first = 1_000
    rng = random.Random(5)
    ids = range(first, first + DEAD)
    # Scores in no order (an ordered run would sort in one pass).
    counts = [rng.randint(40, 4_000) for _ in ids]
    lengths = [rng.randint(0, 4_000) for _ in ids]
    blob = encode_postings(ids, counts, lengths, [-1] * DEAD)
    conn.execute(
        "INSERT INTO search_segments (term, seg, postings, heads) VALUES ('alpha', ?, ?, ?)",
        (first, blob, b""),
    )
    conn.execute(
        "UPDATE search_terms SET df = df + ?, segs = segs + 1 WHERE term = 'alpha'", (DEAD,)
    )
    conn.execute("COMMIT")
    conn.close()
    return db


def _search(conn: sqlite3.Connection, query: str, limit: int) -> list[search.Hit]:
    terms, phrase = parse_query(query)
    return search.search_store(
        conn,
        terms,
        limit,
        degrees=lambda slugs: search.load_degrees(conn, slugs),
        vocabulary=lambda: build_vocabulary(conn),
        phrase=phrase,
    )


def test_ranking_past_many_dead_documents_holds_the_gil_briefly(dead_at_the_top: Path) -> None:
    """The live Pages come back in rank order, and looking past the dead documents at the
    top never sorts them all in one call (one Python sort of their 800,000 tuples held the
    GIL for 0.13-0.23 s CPU)."""
    importlib.import_module("lwc_trio.memory.query.vector")  # its import is not what is measured
    conn = sqlite3.connect(f"file:{dead_at_the_top}?mode=ro", uri=True)
    beats, answers = [], []
    for _attempt in range(2):
        with Heartbeat() as beat:
            answers.append(_search(conn, "alpha", 4))
        beats.append(beat)
    conn.close()
    assert answers[0] == answers[1]
    assert [hit.identifier for hit in answers[0]] == [f"live-{i}" for i in range(4)]
    best = min(beats, key=lambda b: b.held)
    assert best.held < HELD_BOUND_S, f"ranking held the GIL {best}"


def test_ranked_slices_are_the_full_sort_in_pieces() -> None:
    """`VectorScores.ranked` gives the documents of each rank window (in chunks of at most
    the size asked, in no order), `best` past `SORT_MAX` ties Python's sort of (−score,
    doc id); the small-store scores (`_DictScores`) give the same windows."""
    import numpy as np

    rng = np.random.default_rng(7)
    ids = np.unique(rng.integers(1, 10**6, size=20_000)).astype(np.int64)
    values = rng.integers(1, 50, size=len(ids)).astype(np.float64) / 7.0  # many ties
    scores = vector.VectorScores(ids, values, None)
    small = scoring._DictScores(dict(zip(ids.tolist(), values.tolist(), strict=True)), None)
    expected = sorted(zip((-values).tolist(), ids.tolist(), strict=True))
    for start, stop in [(0, 0), (0, 1), (0, 16), (16, 80), (80, 2_000), (19_000, 30_000)]:
        for ranked in (scores, small):
            chunks = list(ranked.ranked(start, stop, 500))
            assert all(0 < len(chunk) <= 500 for chunk in chunks)
            assert sorted(item for chunk in chunks for item in chunk) == expected[start:stop]
    for n in (1, 32, vector.SORT_MAX + 1, len(ids), len(ids) + 5):
        assert scores.best(n) == expected[:n]
