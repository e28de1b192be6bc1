"""The search index (format 6): per-term posting segments, dead postings and their merging.

A write batch appends one segment per term; a rewritten or removed document leaves its
postings behind under an id that is never reused. Whatever sequence of writes built a store,
it must answer exactly as the same content re-indexed from scratch (`lwc repair`).
"""

from __future__ import annotations

import pickle
import random
import shutil
import sqlite3
from array import array
from pathlib import Path
from typing import Any

import pytest
from conftest_memory import ask, new_store, page, put_pages

from lwc_trio.exceptions import StoreError, WikiError
from lwc_trio.memory.format.postings import (
    decode_batch,
    decode_postings,
    encode_postings,
    posting_count,
)
from lwc_trio.memory.format.segments import MAX_SEGMENTS
from lwc_trio.memory.index.buffer import IndexBuffer
from lwc_trio.memory.index.indexing import index_page, unindex_doc
from lwc_trio.memory.index.inputs import PageInput
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.query import scoring, vector
from lwc_trio.memory.query.scoring import best_first
from lwc_trio.memory.text.fields import SNIPPET_SCAN

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
    zebra = [decode_postings(blob) for term, _s, blob, _h in _segments(db) if term == "zebra"]
    ids = [d for columns in zebra for d in columns[0]]
    assert len(ids) <= df["zebra"] + MAX_SEGMENTS  # dead ones only since the last merge
    assert live <= set(ids)
    memory = ask("zebra", project, home=home, scope="project")
    assert [r["identifier"] for r in memory["results"]] == ["z", "other"]
    assert "version 23" in memory["pages"][0]["body"]  # the live text, not a dead one


def test_a_merge_keeps_the_older_larger_segments(tmp_path: Path) -> None:
    """A term in a large early batch and then in many small ones: each merge takes only the
    small newest segments, so the large one is written once and never again (merging every
    segment rewrote a common term's whole postings every `MAX_SEGMENTS` batches), reads see
    at most `MAX_SEGMENTS` rows, and the store answers like the same Pages re-indexed."""
    project, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    db = new_store(project)
    put_pages(db, [page(f"bulk{i}", f"Bulk {i}", f"zebra quartz note {i}") for i in range(200)])
    first = [row for row in _segments(db) if row[0] == "zebra"]
    assert len(first) == 1
    for i in range(4 * MAX_SEGMENTS):
        put_pages(db, [page(f"small{i}", f"Small {i}", f"zebra nimbus {i}")])
        zebra = sorted(row for row in _segments(db) if row[0] == "zebra")
        assert len(zebra) <= MAX_SEGMENTS
        assert zebra[0] == first[0]  # the large segment, untouched
    assert len(zebra) < MAX_SEGMENTS  # merged, not only appended
    conn = sqlite3.connect(db)
    segs = conn.execute("SELECT segs FROM search_terms WHERE term = 'zebra'").fetchone()[0]
    conn.close()
    assert segs == len(zebra)
    before = [ask(q, project, home=home, scope="project") for q in ("zebra", "zebra nimbus")]
    with Wiki(db) as wiki:
        wiki.repair()
    after = [ask(q, project, home=home, scope="project") for q in ("zebra", "zebra nimbus")]
    assert [m["results"] for m in after] == [m["results"] for m in before]


@pytest.mark.parametrize(
    ("sizes", "first"),
    [
        ([1] * 9, 0),  # alike: all merged, as before
        ([50] + [1] * 8, 1),  # one large segment stays
        ([50, 20, 10, 5, 1, 1, 1, 1, 1], 1),  # each older one is at most the newer ones
        ([90, 40, 20, 10, 1, 1, 1, 1, 1], 4),  # at most MAX_SEGMENTS // 2 stay
    ],
)
def test_a_merge_takes_the_newest_segments_up_to_a_larger_one(sizes: list[int], first: int) -> None:
    """A segment's size is the span of doc ids up to the next one (the newest: up to the
    write's next id)."""
    pytest.importorskip("numpy")
    from lwc_trio.memory.index.merge import merge_firsts as _merge_firsts

    assert MAX_SEGMENTS == 8  # the cases are written for it
    segs = [1 + sum(sizes[:at]) for at in range(len(sizes))]
    rows = [("t", seg, 100 + seg) for seg in segs]
    assert _merge_firsts(rows, 1 + sum(sizes)) == [("t", 0, first, len(sizes))]


def _merge_first(sizes: list[int]) -> int:
    """The rule `_merge_firsts` applies to every term at once, one term at a time."""
    start = min(MAX_SEGMENTS // 2, len(sizes))
    merged = sum(sizes[start:])
    while start > 0 and sizes[start - 1] <= merged:
        start -= 1
        merged += sizes[start]
    return 0 if len(sizes) - start < 2 else start


def test_a_merge_picks_each_terms_segments_as_if_alone() -> None:
    """Many crowded terms at once, each with its own segments (sizes from a span of one id
    to thousands, 1 to 12 rows, the newest one reaching past the write's next id or not):
    each term's segments are picked as its own alone."""
    pytest.importorskip("numpy")
    from lwc_trio.memory.index.merge import merge_firsts as _merge_firsts

    rng = random.Random(31)
    for _round in range(200):
        end = rng.randint(1, 50_000)
        rows: list[tuple[str, int, int]] = []
        expected = []
        for t in range(rng.randint(1, 12)):
            segs = sorted(rng.sample(range(1, end + 5), rng.randint(1, min(12, end + 4))))
            bounds = [*segs[1:], max(end, segs[-1] + 1)]
            sizes = [later - seg for seg, later in zip(segs, bounds, strict=True)]
            begin = len(rows)
            rows.extend((f"term{t:02d}", seg, rng.randrange(10**6)) for seg in segs)
            expected.append((f"term{t:02d}", begin, begin + _merge_first(sizes), len(rows)))
        assert _merge_firsts(rows, end) == expected


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
    """Written twice before one flush (taken out first, as the writer does, while its old
    row is still there): only the second version's postings are stored, and the frequencies
    count it once."""
    project, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    db = new_store(project)
    put_pages(db, [page("a", "Alpha", "heron")])
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    buffer = IndexBuffer()
    insert = (
        "INSERT OR REPLACE INTO pages (slug, title, body, created_at, updated_at) "
        "VALUES ('b', 'Beta', ?, 'now', 'now')"
    )
    conn.execute(insert, ("heron egret",))
    index_page(conn, "b", "Beta", None, "heron egret", buffer)
    unindex_doc(conn, "page", "b", buffer)
    conn.execute(insert, ("heron ibis",))
    index_page(conn, "b", "Beta", None, "heron ibis", buffer)
    buffer.flush(conn)
    conn.execute("COMMIT")
    b_id = conn.execute("SELECT doc_id FROM search_docs WHERE ident = 'b'").fetchone()[0]
    df = dict(conn.execute("SELECT term, df FROM search_terms").fetchall())
    conn.close()
    terms = {term for term, _s, _p, _h in _segments(db)}
    assert "egret" not in terms
    assert "egret" not in df
    assert "ibi" in terms or "ibis" in terms
    assert df["heron"] == 2
    assert df["beta"] == 1
    heron = [decode_postings(blob) for term, _s, blob, _h in _segments(db) if term == "heron"]
    assert sorted(d for columns in heron for d in columns[0]) == [1, b_id]


def test_indexing_a_document_twice_without_taking_it_out_is_refused(tmp_path: Path) -> None:
    """Its frequencies would count it twice: the second `index_page` fails loudly."""
    db = new_store(tmp_path / "proj")
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    buffer = IndexBuffer()
    index_page(conn, "b", "Beta", None, "heron egret", buffer)
    try:
        index_page(conn, "b", "Beta", None, "heron ibis", buffer)
    except sqlite3.IntegrityError:
        pass
    else:
        raise AssertionError("indexed twice")
    finally:
        conn.execute("ROLLBACK")
        conn.close()


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
) -> dict[str, list[scoring.Prepared]]:
    segments: dict[str, list[scoring.Segment]] = {}
    for term in terms:
        for _seg in range(rng.randint(1, 3)):
            ids = sorted(rng.sample(range(1, top), rng.randint(1, 80)))
            tws = [rng.randint(1, 40) for _ in ids]
            dls = [rng.randint(0, 900) for _ in ids]
            columns = (ids, tws, dls, [-1] * len(ids))
            a, b, c, d = (array("i", values) for values in columns)
            segments.setdefault(term, []).append((a, b, c, d))
    return scoring.prepare(segments, 0.45, 1.35 / 117.3)


def test_numpy_scores_equal_the_python_loop_bit_for_bit(monkeypatch: Any) -> None:
    """Scoring by segment (numpy) gives exactly the per-posting loop's floats, best-first
    order, ties and exact/fuzzy matches, with dense and with sparse (remapped) doc ids."""
    rng = random.Random(11)
    terms = ["a", "b", "c", "d", "e"]
    for round_ in range(120):
        top = rng.choice([300, 5_000, 2_000_000_000])
        prepared = _random_prepared(rng, terms, top)
        weighted = [(t, rng.uniform(0.1, 9.0), int(rng.random() < 0.7)) for t in terms]
        expected, exact_docs = scoring.score_prepared(prepared, weighted)
        monkeypatch.setattr(scoring, "VECTOR_MIN", 0)
        scores = scoring.score(prepared, weighted)
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
    """The numpy decoding of a large segment refuses exactly what the plain one does."""
    rng = random.Random(9)
    ids, doc = [], 0
    for _ in range(600):
        doc += rng.randint(1, 3)
        ids.append(doc)
    tws = [rng.randint(1, 9) for _ in ids]
    dls = [rng.randint(0, 99) for _ in ids]
    firsts = [rng.randint(-1, 50) for _ in ids]
    good = encode_postings(ids, tws, dls, firsts)
    n = len(ids)
    gaps, counts = 4, 4 + 2 * n

    def patched(at: int, value: bytes, blob: bytes = good) -> bytes:
        return blob[:at] + value + blob[at + len(value) :]

    bad = {
        "zero gap (a repeated id)": patched(gaps + 2, b"\x00\x00"),
        "zero count": patched(counts + 5, b"\x00"),
        "one posting missing": good[:-7],
        "a stray byte": good + b"\x00",
        "more postings than bytes": patched(0, (n + 1).to_bytes(4, "little")),
        "no posting": (0).to_bytes(4, "little"),
        "an escape without its value": patched(counts + 3, b"\xff"),
        "an escaped value without its escape": good[:4] + good[4:] + b"\x01\x00\x00\x00",
        "ids beyond int32": encode_postings([2**31 - 1, 2**31], [1, 1], [0, 0], [-1, -1]),
        "count beyond int32": encode_postings([1], [2**31], [0], [-1]),
    }
    for name, blob in [("none", good), *bad.items()]:
        outcomes = []
        for vector_min in (0, 10**9):
            monkeypatch.setattr(scoring, "VECTOR_MIN", vector_min)
            monkeypatch.setattr(scoring, "VECTOR_LOADED_MIN", vector_min)
            try:
                columns = scoring._segment(blob)
                assert [c.tolist() for c in columns] == [ids, tws, dls, firsts]
                outcomes.append("ok")
            except sqlite3.DatabaseError:
                outcomes.append("refused")
        try:  # a merge decodes many segments at once: a damaged one among good ones
            _counts, *batch = decode_batch([good, blob, good])
            assert [c.tolist() for c in batch] == [ids * 3, tws * 3, dls * 3, firsts * 3]
            outcomes.append("ok")
        except sqlite3.DatabaseError:
            outcomes.append("refused")
        assert outcomes == (["ok"] * 3 if name == "none" else ["refused"] * 3), name


def test_both_codecs_write_the_same_bytes_and_read_them_back() -> None:
    """`encode_batch` (numpy, every term of a bulk write at once) and `encode_postings`
    (plain, term by term) give the same blobs, and both decoders give back every value,
    escapes at each column's limit included."""
    from lwc_trio.memory.format.postings import encode_batch

    rng = random.Random(21)
    for round_ in range(150):
        counts: list[int] = []
        blobs: list[bytes] = []
        columns: tuple[list[int], ...] = ([], [], [], [])
        for _term in range(rng.randint(1, 12)):
            top = rng.choice([100, 70_000, 2**31 - 1])
            ids = sorted(rng.sample(range(1, top), rng.randint(1, 40)))
            values = (
                ids,
                [rng.choice([1, 2, 254, 255, 256, 2**31 - 1]) for _ in ids],
                [rng.choice([0, 5, 65_534, 65_535, 70_000]) for _ in ids],
                [rng.choice([-1, 0, 65_533, 65_534, 65_535, 19_999]) for _ in ids],
            )
            blob = encode_postings(*values)
            blobs.append(blob)
            counts.append(len(ids))
            for into, column in zip(columns, values, strict=True):
                into.extend(column)
            for vectorized in (False, True):
                decoded = decode_postings(blob, vectorized=vectorized)
                assert [c.tolist() for c in decoded] == list(values), round_
        assert encode_batch(counts, *columns) == blobs, round_


def _index_rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("search_segments", "search_terms", "search_docs", "search_words")
        } | {"stats": conn.execute("SELECT * FROM search_stats ORDER BY 1").fetchall()}
    finally:
        conn.close()


def _rewrite_in_one_batch(db: Path, slug: str, bodies: list[str]) -> None:
    """Write a Page once per body in one transaction and one buffer, as the writer does."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    buffer = IndexBuffer()
    for body in bodies:
        unindex_doc(conn, "page", slug, buffer)
        conn.execute(
            "INSERT OR REPLACE INTO pages (slug, title, body, created_at, updated_at) "
            "VALUES (?, 'Bird', ?, 'now', 'now')",
            (slug, body),
        )
        index_page(conn, slug, "Bird", None, body, buffer)
    buffer.flush(conn)
    conn.execute("COMMIT")
    conn.close()


def test_the_numpy_flush_writes_the_plain_flushs_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same writes give the same index rows, byte for byte, whether the flush groups the
    postings with numpy or in plain Python: words sharing a stem, terms only in a title,
    non-ASCII and longer-than-the-snippet-scan bodies, blank bodies, Pages rewritten within
    their batch and in a later one, and a removed one."""
    from lwc_trio.memory.index import buffer

    rng = random.Random(4)
    long_body = " ".join(rng.choice(WORDS) for _ in range(SNIPPET_SCAN // 4))
    batches = [
        [
            page("a", "Caching Notes", "cache caching cached cache", summary="zebra"),
            page("b", "Zürich Café", "naïve café crème brûlée cache"),
            page("c", "Long", long_body),
            page("d", "Only a title", "   ", summary="quartz nimbus"),
            page("e", "日本語 notes", "東京 cache 東京"),
        ],
        [page("a", "Caching again", "stratus alpha"), page("f", "Fresh", "alpha beta")],
    ]
    stores = []
    for vector_min in (0, 10**9):
        monkeypatch.setattr(buffer, "VECTOR_POSTINGS", vector_min)
        db = new_store(tmp_path / f"v{vector_min}")
        with Wiki(db) as wiki:
            wiki.put_pages(batches[0])
            wiki.put_pages(batches[1])
            wiki.remove_page("d")
        _rewrite_in_one_batch(db, "g", ["heron egret cache", "heron ibis caching"])
        stores.append(_index_rows(db))
    assert stores[0] == stores[1]
    assert stores[0]["search_segments"]


def test_merges_with_numpy_write_the_plain_merges_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk write's merge (numpy, every crowded term at once, a chunk of rows at a time)
    writes the rows the term-by-term merge writes: postings of rewritten and removed Pages
    dropped, heads kept in order, terms left with no live document emptied."""
    from lwc_trio.memory.index import buffer, merge

    rng = random.Random(12)
    rounds: list[list[PageInput]] = []
    for round_no in range(2 * MAX_SEGMENTS + 3):
        batch = [
            page(f"p{rng.randrange(40)}", " ".join(rng.sample(WORDS, 2)).title(),
                 " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 60))))
            for _ in range(rng.randint(5, 15))
        ]  # fmt: skip
        batch.append(page(f"once{round_no}", "Heron", f"heron{round_no % 3} egret"))
        rounds.append(list({p.slug: p for p in batch}.values()))  # one write a slug
    stores = []
    for vector_min, chunk in ((10**9, merge.MERGE_CHUNK), (0, merge.MERGE_CHUNK), (0, 1)):
        monkeypatch.setattr(buffer, "VECTOR_POSTINGS", vector_min)
        monkeypatch.setattr(merge, "VECTOR_POSTINGS", vector_min)
        monkeypatch.setattr(merge, "MERGE_CHUNK", chunk)
        db = new_store(tmp_path / f"v{vector_min}-{chunk}")
        with Wiki(db) as wiki:
            for round_no, batch in enumerate(rounds):
                wiki.put_pages(batch)
                if round_no % 4 == 3:
                    wiki.remove_page(f"once{round_no - 1}")
        stores.append(_index_rows(db))
    assert stores[0] == stores[1] == stores[2]
    segments = stores[0]["search_segments"]
    per_term: dict[str, int] = {}
    for term, *_rest in segments:
        per_term[term] = per_term.get(term, 0) + 1
    assert max(per_term.values()) <= MAX_SEGMENTS  # merged, not only appended
    assert len(segments) < len(per_term) * (2 * MAX_SEGMENTS + 3)


def _store_rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        return _index_rows(db) | {
            table: conn.execute(f"SELECT {columns} FROM {table} ORDER BY 1, 2").fetchall()
            for table, columns in (
                ("search_fuzzy", "*"),
                ("links", "*"),
                ("pages", "slug, title, summary, body"),
            )
        }
    finally:
        conn.close()


def test_the_analysis_process_writes_the_in_process_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk import analyzed by the second process (`memory/index/analysis.py`) writes exactly the
    rows of the same import analyzed in-process: batches of several chunks, words sharing a
    stem, links, non-ASCII and longer-than-the-snippet-scan bodies, blank bodies, and a second
    import where some Pages are unchanged (analyzed, not written), some rewritten."""
    from lwc_trio.memory.index import analysis, writer

    rng = random.Random(24)
    long_body = " ".join(rng.choice(WORDS) for _ in range(SNIPPET_SCAN // 4))
    odd = [
        "naïve café crème", "東京 cache 東京", "   ", long_body, "see [[p-3]] and [b](p-7.md)",
        "Supercalifragilistic SUPERCALIFRAGILISTICS supercalifragilisticexpialidocious x9",
    ]  # fmt: skip

    def body(index: int) -> str:
        words = " ".join(rng.choice(WORDS) + rng.choice(["", "s", "_x", "1"]) for _ in range(30))
        return f"{words} {odd[index % len(odd)]} [[p-{index + 1}]]"

    first = [page(f"p-{i}", f"Page {i} {rng.choice(WORDS)}", body(i)) for i in range(1300)]
    second = [
        p if i % 3 else page(p.slug, p.title, body(i + 7), summary="caching zebra")
        for i, p in enumerate(first[:1100])
    ] + [page(f"q-{i}", "Fresh", body(i)) for i in range(50)]
    stores = []
    started: list[int] = []
    real_worker = analysis.AnalysisWorker

    def counted_worker() -> Any:
        started.append(1)
        return real_worker()

    monkeypatch.setattr(writer, "AnalysisWorker", counted_worker)
    for worker_min in (writer.ANALYSIS_WORKER_PAGES, 10**9):
        monkeypatch.setattr(writer, "ANALYSIS_WORKER_PAGES", worker_min)
        db = new_store(tmp_path / f"w{worker_min}")
        with Wiki(db) as wiki:
            assert wiki.put_pages(first, batch=600)["created"] == 1300
            counts = wiki.put_pages(second, batch=400)
            # Every batch unchanged: the analysis process drops each one's postings.
            again = wiki.put_pages(second, batch=400)
        assert counts == {"created": 50, "updated": 367, "unchanged": 733}
        assert again == {"created": 0, "updated": 0, "unchanged": 1150}
        stores.append(_store_rows(db))
    assert len(started) == 3  # the three imports of the first round, none of the second
    assert stores[0] == stores[1]
    assert stores[0]["search_segments"]
    assert stores[0]["links"]


def test_a_batch_whose_postings_come_in_several_parts_writes_the_in_process_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The analysis process sends a batch's postings encoded in parts of about
    `ENCODE_CHUNK` postings, each written as it comes: a batch of more postings than that
    writes the rows the in-process analysis writes."""
    from lwc_trio.memory.index import grouping, writer

    rng = random.Random(7)
    pages = [
        page(f"p-{i}", f"Page {i}", " ".join(f"w{rng.randrange(6000)}" for _ in range(700)))
        for i in range(1000)
    ]
    stores = []
    for worker_min in (writer.ANALYSIS_WORKER_PAGES, 10**9):
        monkeypatch.setattr(writer, "ANALYSIS_WORKER_PAGES", worker_min)
        db = new_store(tmp_path / f"w{worker_min}")
        with Wiki(db) as wiki:
            assert wiki.put_pages(pages, batch=1000)["created"] == 1000
        stores.append(_store_rows(db))
    assert stores[0] == stores[1]
    assert len(stores[0]["search_segments"]) > 5000
    postings = sum(posting_count(row[2]) for row in stores[0]["search_segments"])
    assert postings > 2 * grouping.ENCODE_CHUNK


def _pages_and_docs(db: Path) -> tuple[int, int]:
    conn = sqlite3.connect(db)
    try:
        pages = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
        docs = conn.execute("SELECT count(*) FROM search_docs").fetchone()[0]
        return int(pages), int(docs)
    finally:
        conn.close()


def test_a_dead_analysis_process_is_reported_whatever_was_sent() -> None:
    """Fault injection: the analysis process is gone before the feeder thread sent the
    request whose answer the writer reads (the writer may see the end of the answers
    first). Every read says the process ended, the first and the next; an answer to
    nothing asked is an error too, never an IndexError."""
    from lwc_trio.memory.index import analysis

    worker = analysis.AnalysisWorker()
    try:
        worker._process.kill()
        worker._process.wait()
        for _ in range(2):
            with pytest.raises(WikiError, match="ended unexpectedly") as caught:
                worker._answer(0)  # nothing was submitted, so nothing was sent
            assert caught.value.code == "internal_error"
    finally:
        worker.close()
    unasked = analysis.AnalysisWorker()
    try:
        unasked._answers.put((pickle.dumps(("ok", None)), True))
        with pytest.raises(WikiError, match="answered unasked"):
            unasked._answer(0)
    finally:
        unasked.close()


@pytest.mark.parametrize("dies_at", [1, 2])
def test_an_analysis_process_that_dies_fails_only_the_batch_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dies_at: int
) -> None:
    """Fault injection: the analysis process is killed as a batch's Pages are all taken
    (its words and postings not sent yet). That batch fails with `internal_error` and is
    rolled back; the batches committed before stay, with their index; nothing hangs."""
    from lwc_trio.memory.index import analysis

    real_batch = analysis.AnalysisWorker.batch
    calls: list[int] = []

    def dying_batch(self: analysis.AnalysisWorker) -> Any:
        calls.append(1)
        if len(calls) == dies_at:
            self._process.kill()
            self._process.wait()
        return real_batch(self)

    monkeypatch.setattr(analysis.AnalysisWorker, "batch", dying_batch)
    db = new_store(tmp_path)
    assert "ended unexpectedly" in _failed_import_message(db)
    assert _pages_and_docs(db) == (400 * (dies_at - 1), 400 * (dies_at - 1))


def _failed_import_message(db: Path) -> str:
    """Import 1,200 Pages in batches of 400 into `db`, which must fail with
    `internal_error`: its message."""
    pages = [page(f"p-{i}", f"Page {i}", f"zebra quartz {i} " * 20) for i in range(1200)]
    with Wiki(db) as wiki, pytest.raises(WikiError) as caught:
        wiki.put_pages(pages, batch=400)
    assert caught.value.code == "internal_error"
    return caught.value.message


def test_an_analysis_process_whose_encoding_fails_fails_the_batch_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: the second batch's documents are sent with a place outside it. The
    analysis process's error comes back as the answer to the encoding request, after the
    batch's words: the batch fails with `internal_error` naming the reason and is rolled
    back, the first one stays."""
    from lwc_trio.memory.index import analysis
    from lwc_trio.memory.index.parts import Placed

    real_place = analysis.AnalysisWorker.place
    calls: list[int] = []

    def misplacing(self: analysis.AnalysisWorker, placed: Placed) -> Any:
        calls.append(1)
        if len(calls) == 2:
            at = array("i", placed.at)
            at[0] = 10**6
            placed = placed._replace(at=at)
        return real_place(self, placed)

    monkeypatch.setattr(analysis.AnalysisWorker, "place", misplacing)
    db = new_store(tmp_path)
    assert "placed outside its batch" in _failed_import_message(db)
    assert _pages_and_docs(db) == (400, 400)


@pytest.mark.parametrize("ids", [[3, 4, 5, 9], [1, 2**31 - 2], [7]])
def test_a_merge_tells_live_documents_apart_however_sparse_their_ids(ids: list[int]) -> None:
    """Which posting ids are live: a table of the id range when the ids are dense, a binary
    search when they are sparse (a store may hold any id): the same answer."""
    from lwc_trio.memory.index.merge import LiveDocs as _LiveDocs

    np = pytest.importorskip("numpy")
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE search_docs (doc_id INTEGER PRIMARY KEY)")
    conn.executemany("INSERT INTO search_docs VALUES (?)", [(i,) for i in ids])
    asked = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 2**31 - 2, 2**31 - 1, *ids]
    live = _LiveDocs(conn)
    mask = live.mask(np.asarray(asked, dtype=np.int64)).tolist()
    assert mask == [i in ids for i in asked]
    assert (live._table is None) == (max(ids) - min(ids) > 2**20)


def _fuzzy_words(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {str(row[0]) for row in conn.execute("SELECT word FROM search_fuzzy")}
    finally:
        conn.close()


def test_a_writer_writes_typo_rows_again_after_another_writes_between(tmp_path: Path) -> None:
    """A writer skips the typo-index rows of words its own earlier transactions wrote, but
    not after another writer's transaction: that one may have removed them (a Page removed,
    then `lwc repair`)."""
    db = new_store(tmp_path)
    with Wiki(db) as first, Wiki(db) as other:
        first.put_pages([page("a", "Alpha", "zebra quartz")])
        first.put_pages([page("b", "Beta", "zebra nimbus")])
        assert {"zebra", "quartz", "nimbus"} <= _fuzzy_words(db)
        other.remove_page("a")
        other.remove_page("b")
        other.repair()
        assert "zebra" not in _fuzzy_words(db)
        first.put_pages([page("c", "Gamma", "zebra stratus")])
        assert {"zebra", "stratus"} <= _fuzzy_words(db)


def test_a_bulk_import_analyzes_in_process_when_no_process_can_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No second process (a process limit, a sandbox): the import is analyzed here."""
    from lwc_trio.memory.index import writer

    def refused() -> Any:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(writer, "AnalysisWorker", refused)
    pages = [page(f"p-{i}", f"Page {i}", f"zebra quartz {i}") for i in range(1000)]
    db = new_store(tmp_path)
    with Wiki(db) as wiki:
        assert wiki.put_pages(pages)["created"] == 1000
    assert {"zebra", "quartz"} <= _fuzzy_words(db)


def test_a_bulk_import_on_one_cpu_starts_no_second_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process allowed one CPU only analyzes the Pages itself: a second process could not
    run beside it and would only add the cost of sending the text."""
    from lwc_trio.memory.index import writer

    started: list[int] = []
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0}, raising=False)
    monkeypatch.setattr(writer, "AnalysisWorker", lambda: started.append(1))
    pages = [page(f"p-{i}", f"Page {i}", f"zebra quartz {i}") for i in range(1000)]
    db = new_store(tmp_path)
    with Wiki(db) as wiki:
        assert wiki.put_pages(pages)["created"] == 1000
    assert not started


@pytest.mark.parametrize("bucket", [1_000_000, 997, 1])
@pytest.mark.parametrize("term_count", [50, 70_000])
def test_postings_grouped_a_range_of_terms_at_a_time_equal_a_plain_grouping(
    monkeypatch: pytest.MonkeyPatch, bucket: int, term_count: int
) -> None:
    """`group_postings` sorts a range of terms of about `GROUP_BUCKET` postings at a time
    (by the ranks' 16-bit halves, one pass when the range holds fewer than 2**16 terms):
    its groups, every range joined, are a plain grouping by (term, document) of the same
    postings, counts summed and the earliest first offset kept (−1: none)."""
    pytest.importorskip("numpy")
    from lwc_trio.memory.index import grouping

    monkeypatch.setattr(grouping, "GROUP_BUCKET", bucket)
    rng = random.Random(term_count + bucket)
    terms = [f"t{i:06d}" for i in range(term_count)]
    per_doc: list[int] = []
    kids: list[int] = []
    tws: list[int] = []
    firsts: list[int] = []
    for _doc in range(40):
        keys = [rng.randrange(2 * term_count) for _ in range(rng.randrange(0, 60))]
        keys += rng.sample(range(2 * term_count), 3)  # spread over the whole range too
        per_doc.append(len(keys))
        kids += keys
        tws += [rng.randrange(1, 9) for _ in keys]
        firsts += [rng.choice([-1, rng.randrange(5000)]) for _ in keys]
    numbers = list(range(2 * term_count))
    key_terms = [terms[n // 2] for n in numbers]  # two keys a term: words sharing a stem
    expected: dict[tuple[int, int], list[int]] = {}
    at = 0
    for doc, count in enumerate(per_doc):
        for i in range(at, at + count):
            entry = expected.setdefault((kids[i] // 2, doc), [0, -1])
            entry[0] += tws[i]
            if firsts[i] >= 0 and (entry[1] < 0 or firsts[i] < entry[1]):
                entry[1] = firsts[i]
        at += count
    columns = (array("i", kids), array("i", tws), array("i", firsts))
    ranked = grouping.rank_postings(numbers, key_terms, columns, array("i", per_doc))
    got: list[tuple[tuple[int, int], list[int]]] = []
    ranges = 0
    for grouped in grouping.group_postings(ranked):
        ranges += 1
        first = terms.index(grouped.terms[0])
        assert grouped.terms == terms[first : first + len(grouped.terms)]
        assert grouped.docs == len(per_doc)
        for rank, doc, tw, offset in zip(
            grouped.ranks.tolist(), grouped.at.tolist(), grouped.tws.tolist(),
            grouped.firsts.tolist(), strict=True,
        ):  # fmt: skip
            got.append(((first + rank, doc), [tw, offset]))
    assert got == sorted(expected.items())
    assert (ranges > 1) == (bucket < sum(per_doc))


def _joined(buffer: IndexBuffer) -> tuple[list[str], list[int], list[bytes]]:
    """A buffer's postings grouped and encoded (`IndexBuffer._parts`), every part joined."""
    terms: list[str] = []
    counts: list[int] = []
    blobs: list[bytes] = []
    for part_terms, part_counts, part_blobs in buffer._parts():
        assert not terms or not part_terms or terms[-1] < part_terms[0]
        terms += part_terms
        counts += part_counts
        blobs += part_blobs
    return terms, counts, blobs


@pytest.mark.parametrize("encode_chunk", [250_000, 7])
@pytest.mark.parametrize(
    ("owners", "written"),
    [
        ("wwww", "all"),  # the analysis process analyzed every chunk
        ("llll", "all"),  # the writer analyzed every chunk itself
        ("wlwl", "all"),
        ("lwwl", "some"),  # and some Pages are not written (unchanged)
        ("wllw", "none_of_one"),  # a chunk none of whose Pages is written
    ],
)
def test_postings_grouped_by_the_analysis_process_equal_those_grouped_in_process(
    monkeypatch: pytest.MonkeyPatch, owners: str, written: str, encode_chunk: int
) -> None:
    """A bulk import's batch: the analysis process keeps the postings of the chunks it
    analyzed, gets those of the chunks the writer analyzed (in any order: the writer takes
    them from either end of the queue) and groups and encodes them all, in parts; the
    writer places each Page written by its place in the batch. The terms, frequencies and
    blobs are those the in-process analysis of the same Pages gives, whichever process took
    which chunk, whichever Pages are left out and however many parts they come in."""
    pytest.importorskip("numpy")
    from lwc_trio.memory.index import grouping
    from lwc_trio.memory.index.chunks import BatchAnalyzer
    from lwc_trio.memory.index.document import analyze as _analyze
    from lwc_trio.memory.index.held import HeldPostings
    from lwc_trio.memory.index.parts import held, without_postings
    from lwc_trio.memory.text.fields import snippet_text

    rng = random.Random(len(owners) * 7 + len(written))
    texts: list[tuple[str, str, str | None, str]] = [
        (
            f"p-{i}",
            f"Page {i} {rng.choice(WORDS)}",
            None if i % 3 else "cache summary",
            " ".join(rng.choice(WORDS) + rng.choice(["", "s", "_x", "1"]) for _ in range(40))
            + (" naïve café" if i % 5 == 0 else ""),
        )
        for i in range(4 * 30)
    ]
    if written == "all":
        skipped: set[int] = set()
    elif written == "some":
        skipped = {i for i in range(len(texts)) if i % 4 == 1}
    else:
        skipped = set(range(30, 60))

    def doc_id(i: int) -> int:
        return 100 + 2 * i  # ascending in Page order, with gaps

    in_process = IndexBuffer()
    for i, (slug, title, summary, body) in enumerate(texts):
        if i not in skipped:
            fields = (title, slug, summary or "", body)
            found = _analyze(fields, snippet_text(body, summary), in_process.words)
            in_process.add(doc_id(i), found.length, found.keyed, found.firsts)

    split = IndexBuffer()
    worker, local, kept = BatchAnalyzer(first=0), BatchAnalyzer(first=1), HeldPostings()
    theirs: list[Any] = []
    for number, owner in enumerate(owners):
        start = 30 * number
        analyzer = worker if owner == "w" else local
        analyzed = analyzer.chunk(
            texts[start : start + 30], new_batch=owners.index(owner) == number
        )
        (kept.hold if owner == "w" else theirs.append)(held(analyzed, start))
        for place, analysis in enumerate(without_postings(analyzed, start).pages, start):
            if place not in skipped:
                split.add_placed(doc_id(place), analysis.length, place, analysis.pairs)
    for chunk in reversed(theirs):
        kept.hold(chunk)
    split.add_part(kept.group())

    expected = _joined(in_process)
    monkeypatch.setattr(grouping, "ENCODE_CHUNK", encode_chunk)
    assert _joined(split) == expected
    assert expected[0]
    assert not kept.chunks
    # Every word of a written Page is recorded (those only in Pages not written may be too:
    # such a Page is in the store, unchanged, with its words).
    assert in_process.words.items() <= split.words.items()


def test_words_whose_hashes_collide_are_numbered_by_their_strings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch's analysis looks its chunks' body words up by a hash of their bytes, then
    checks the bytes: words sharing a hash (forced here: four hash values for all) are
    numbered by their strings, and the batch's index is the one distinct hashes give."""
    np = pytest.importorskip("numpy")
    from lwc_trio.memory.index import chunks
    from lwc_trio.memory.index.chunks import BatchAnalyzer
    from lwc_trio.memory.index.held import HeldPostings
    from lwc_trio.memory.index.parts import held

    rng = random.Random(8)
    vocabulary = [*WORDS, "databases", "database", "abcdefghijklmnopq", "abcdefghijklmnopqrs"]
    texts: list[tuple[str, str, str | None, str]] = [
        (f"p-{i}", f"Page {i}", None, " ".join(rng.choice(vocabulary) for _ in range(30)))
        for i in range(90)
    ]

    def analyzed_batch() -> tuple[Any, dict[str, str]]:
        buffer = IndexBuffer()
        analyzer = BatchAnalyzer(first=0)
        kept = HeldPostings()
        for number, start in enumerate(range(0, len(texts), 30)):
            analyzed = analyzer.chunk(texts[start : start + 30], new_batch=number == 0)
            kept.hold(held(analyzed, start))
            for place, analysis in enumerate(analyzed.pages, start):
                buffer.add_placed(place + 1, analysis.length, place, analysis.pairs)
        buffer.add_part(kept.group())
        return _joined(buffer), buffer.words

    expected = analyzed_batch()
    monkeypatch.setattr(chunks, "hashed", lambda halves: halves[0] & np.uint64(3))
    assert analyzed_batch() == expected
    assert expected[0][0]


@pytest.mark.parametrize("vector_min", [0, 10**9])
@pytest.mark.parametrize("column", ["postings", "heads"])
def test_a_merge_refuses_a_segment_that_is_not_a_blob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vector_min: int, column: str
) -> None:
    """A cloned store's segment row holding text where a blob belongs: the write whose
    merge reads it fails (its batch rolled back) instead of writing it back."""
    from lwc_trio.memory.index import buffer, merge

    monkeypatch.setattr(buffer, "VECTOR_POSTINGS", vector_min)
    monkeypatch.setattr(merge, "VECTOR_POSTINGS", vector_min)
    db = new_store(tmp_path)
    with Wiki(db) as wiki:
        wiki.put_pages([page("first", "Zebra", "zebra quartz")])
    conn = sqlite3.connect(db)
    # Four characters: a whole number of head ids, were it a blob.
    conn.execute(f"UPDATE search_segments SET {column} = 'zebr' WHERE term = 'zebra'")
    conn.commit()
    conn.close()
    with Wiki(db) as wiki:
        for i in range(MAX_SEGMENTS - 1):
            wiki.put_pages([page(f"p{i}", "Zebra", f"zebra nimbus {i}")])
        with pytest.raises(StoreError, match="invalid postings") as refused:
            wiki.put_pages([page("last", "Zebra", "zebra stratus")])
    assert refused.value.code == "store_corrupt"
    assert "last" not in {row[0] for row in _index_rows(db)["search_docs"]}


def test_early_writes_do_not_look_for_crowded_terms(tmp_path: Path) -> None:
    """A term gains at most one segment a write: while a store has had too few writes for
    any term to pass `MAX_SEGMENTS`, a write does not look its terms up for a merge; after
    that it does, and no term keeps more than `MAX_SEGMENTS` rows."""
    db = new_store(tmp_path)
    looked_up: list[int] = []
    with Wiki(db) as wiki:
        statements: list[str] = []
        wiki.conn.set_trace_callback(statements.append)
        for i in range(2 * MAX_SEGMENTS):
            statements.clear()
            wiki.put_pages([page(f"p{i}", "Zebra", f"zebra quartz {i}")])
            looked_up.append(sum("AND segs >" in sql for sql in statements))
    assert looked_up[: MAX_SEGMENTS - 2] == [0] * (MAX_SEGMENTS - 2)
    assert all(looked_up[MAX_SEGMENTS - 1 :])
    zebra = [row for row in _segments(db) if row[0] == "zebra"]
    assert 1 <= len(zebra) <= MAX_SEGMENTS
