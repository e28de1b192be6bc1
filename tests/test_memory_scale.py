"""Bounded work whatever the store (issue 24 item 4), checked by behaviour on real SQLite.

- No step of memory work holds the GIL for long: a heartbeat thread in the same process
  measures its longest gap while a large vocabulary is built and scanned.
- Vocabulary builds are shared by store identity (one store reached by six paths: one build)
  and bounded in number (many stores at once: a few builds at a time).
- The link reads of the rerank are bounded per Page.
"""

from __future__ import annotations

import importlib
import os
import random
import sqlite3
import string
import threading
import time
from pathlib import Path

import pytest
from conftest_memory import ask, new_project, new_store, page, put_pages
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from lwc_trio.memory.format import typo_index
from lwc_trio.memory.query import engine, fuzzy, search

HELD_BOUND_S = 0.06
"""The longest the memory work may keep a heartbeat thread from running, in CPU seconds of
this process (so most of a loaded machine's scheduling delays do not count), the better of
two attempts (a long hold repeats, a scheduling accident seldom does). Generous: a step
holding the GIL for ~20 ms stays below it; one rapidfuzz call over the 1,000,000-word
bucket below holds it for ~0.15 s."""


class Heartbeat:
    """A thread that wakes every millisecond and records the longest gap between its wakes,
    as process CPU time (what the other thread spent holding the GIL) and wall time."""

    def __init__(self) -> None:
        self.held = 0.0
        self.wall = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        cpu, wall = time.process_time(), time.perf_counter()
        while not self._stop.is_set():
            time.sleep(0.001)
            now_cpu, now_wall = time.process_time(), time.perf_counter()
            self.held = max(self.held, now_cpu - cpu)
            self.wall = max(self.wall, now_wall - wall)
            cpu, wall = now_cpu, now_wall

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        time.sleep(0.01)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def __str__(self) -> str:
        return f"{self.held * 1000:.0f} ms CPU ({self.wall * 1000:.0f} ms wall)"


def _words(n: int, length: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    found: dict[str, None] = {}
    while len(found) < n:
        found.setdefault("".join(rng.choices(string.ascii_lowercase, k=length)))
    return list(found)


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real store whose vocabulary holds 1,050,000 words, most of them of 10 letters (one
    length bucket of 1,000,000: what a big Wiki has), written with SQL."""
    db = new_store(tmp_path_factory.mktemp("big"))
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    words = _words(1_000_000, 10, 1) + _words(50_000, 6, 2)
    conn.executemany("INSERT INTO search_terms VALUES (?, 1, 1)", ((w,) for w in words))
    conn.execute("COMMIT")
    conn.close()
    return db


def test_vocabulary_build_and_scans_never_hold_the_gil_for_long(big_store: Path) -> None:
    # numpy's import (~0.1 s CPU, once per process: the first large query pays it whatever
    # this test does) is not what is measured here.
    importlib.import_module("lwc_trio.memory.query.vector")
    conn = sqlite3.connect(f"file:{big_store}?mode=ro", uri=True)
    built, scanned = [], []
    for attempt in range(2):
        with Heartbeat() as beat:
            vocab = fuzzy.build_vocabulary(conn)
        built.append(beat)
        with Heartbeat() as beat:
            # An unknown 10-letter word: two edits, the 8–12 letter buckets scanned.
            near = fuzzy.near_words(vocab, "qqqqqqqqq" + "xy"[attempt], 2)
            fuzzy.similar_words(vocab, "qqqqqqqqq" + "xy"[attempt])
            # A 6-letter word: one edit, through the shards and lookups.
            fuzzy.near_words(vocab, "zzzzz" + "xy"[attempt], 1)
        scanned.append(beat)
        assert len(vocab) == 1_050_000
        assert isinstance(near, list)
        del vocab
    conn.close()
    build = min(built, key=lambda b: b.held)
    scan = min(scanned, key=lambda b: b.held)
    assert build.held < HELD_BOUND_S, f"the build held the GIL {build}"
    assert scan.held < HELD_BOUND_S, f"a scan held the GIL {scan}"


def test_sliced_scans_and_lookups_find_what_one_whole_scan_finds() -> None:
    """Scanning buckets in slices, and one-edit corrections by shard and lookups, give the
    very lists one rapidfuzz call over each whole bucket gives."""
    words = _words(30_000, 7, 3) + _words(5_000, 6, 4) + _words(5_000, 8, 5)
    # A shard (length 7, first letter d) large enough to be narrowed by signatures.
    words += ["d" + w[1:] for w in _words(6_000, 7, 8)]
    words += ["deploys", "deplyos", "deploy", "deployed", "edploys", "xdeploys", "eploys"]
    words = list(dict.fromkeys(words))
    titled = set(words[::3])
    vocab = fuzzy.vocabulary_of(((w, w) for w in words), titled)
    assert len(vocab) == len(words)
    assert len(vocab.stems.shards[(7, "d")]) > fuzzy.FILTER_MIN

    def whole(word: str, edits: int) -> list[tuple[int, str, str]]:
        return sorted(
            (int(d), w, w)
            for n in range(len(word) - edits, len(word) + edits + 1)
            for w, d, _i in process.extract(
                word, sorted(w for w in words if len(w) == n), scorer=OSA.distance,
                score_cutoff=edits, limit=None,
            )
        )  # fmt: skip

    probes = ["deploys", "depolys", "qwertyu", "eploys", "xeploys", words[5], words[31_000]]
    probes += ["dqwerty", "dxploys", words[-20][:6] + "q", "d" + words[-30][2:]]
    rng = random.Random(6)
    for i in range(30):  # words one or two edits from stored ones, of each kind
        chars = list(words[i * 1_301])
        for _edit in range(1 + i % 2):
            at, kind = rng.randrange(len(chars) - 1), i % 4
            if kind == 0:
                chars[at] = rng.choice(string.ascii_lowercase)
            elif kind == 1:
                del chars[at]
            elif kind == 2:
                chars.insert(at, rng.choice(string.ascii_lowercase))
            else:
                chars[at], chars[at + 1] = chars[at + 1], chars[at]
        probes.append("".join(chars))
    for word in probes:
        assert fuzzy.near_words(vocab, word, 2) == whole(word, 2), word
        assert fuzzy.near_words(vocab, word, 1) == whole(word, 1), word
        similar = sorted(
            (
                (float(r), w, w)
                for w, r, _i in process.extract(
                    word, sorted(w for w in words if w in titled), scorer=fuzz.ratio,
                    score_cutoff=fuzzy.TITLE_CUTOFF, limit=None,
                )
            ),
            key=lambda item: (-item[0], item[1]),
        )  # fmt: skip
        assert fuzzy.similar_words(vocab, word) == similar, word


def test_one_store_reached_by_six_paths_reads_each_typo_group_once(tmp_path: Path) -> None:
    """Six projects whose `wiki.db` is one file (hard links), asked at once, twice: one
    typo index, each of its groups read once, shared."""
    first, db, home = new_project(tmp_path)
    put_pages(db, [page("d", "Deployment", "rollout steps"), page("o", "Other", "lunch")])
    projects = [first]
    for i in range(5):
        other = tmp_path / f"ws{i}"
        (other / ".lwc").mkdir(parents=True)
        os.link(db, other / ".lwc" / "wiki.db")
        projects.append(other)
    engine.WORD_INDEXES.clear()
    answers: list[list[tuple[str, str]]] = []
    lock = threading.Lock()

    def one(project: Path) -> None:
        memory = ask("deploymnet", project, home=home)
        with lock:
            answers.append([(r["identifier"], r["match"]) for r in memory["results"]])

    for _round in range(2):
        threads = [threading.Thread(target=one, args=(p,)) for p in projects]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert answers == [[("d", "fuzzy")]] * 12
    [index] = engine.WORD_INDEXES._entries.values()
    assert index.reads == len(index.shards) + len(index.buckets) > 0


def test_requests_arriving_at_once_share_one_typo_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests that find no typo index for their store revision at the same moment all
    get the one index made first, so each group is read once, not once per request."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("d", "Deployment", "rollout steps"), page("o", "Other", "lunch")])
    engine.WORD_INDEXES.clear()
    made: list[typo_index.WordIndex] = []
    real = typo_index.WordIndex.__init__

    def slow_init(self: typo_index.WordIndex) -> None:
        real(self)
        made.append(self)
        time.sleep(0.2)  # every request arrives while the first index is being made

    monkeypatch.setattr(typo_index.WordIndex, "__init__", slow_init)
    answers: list[list[tuple[str, str]]] = []
    lock = threading.Lock()

    def one() -> None:
        memory = ask("deploymnet", project, home=home)
        with lock:
            answers.append([(r["identifier"], r["match"]) for r in memory["results"]])

    threads = [threading.Thread(target=one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert answers == [[("d", "fuzzy")]] * 6
    assert len(made) == 1
    assert made[0].reads == len(made[0].shards) + len(made[0].buckets) > 0


def test_typo_groups_kept_are_bounded_across_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the typo indexes of every store keep stays within one word budget: groups read
    for other stores and revisions go, least recently used first, and answers are those
    read with nothing dropped."""
    stores = []
    for i in range(3):
        (tmp_path / f"s{i}").mkdir()
        project, db, home = new_project(tmp_path / f"s{i}")
        words = [*_words(400, 10, 7 + i), "deployment"]
        put_pages(db, [page("d", "Deployment", " ".join(words)), page("o", "Other", "lunch")])
        stores.append((project, home))
    queries = ["deploymnet", "deplyoment"]
    engine.WORD_INDEXES.clear()
    whole = [ask(q, p, home=h)["results"] for p, h in stores for q in queries]
    budget = 600
    monkeypatch.setattr(typo_index, "_KEPT", typo_index._Kept(budget))
    engine.WORD_INDEXES.clear()
    for _round in range(2):
        engine.ANSWERS.clear()  # asked again: searched again, not answered from the cache
        bounded = [ask(q, p, home=h)["results"] for p, h in stores for q in queries]
        assert bounded == whole
        assert 0 < typo_index._KEPT.words <= budget


def test_rerank_reads_at_most_the_capped_in_links_per_page(tmp_path: Path) -> None:
    """A hub with thousands of in-links is counted up to the cap the boost uses, no more:
    the read stops early and the ranking is what the full count gives."""
    _, db, _ = new_project(tmp_path)
    pages = [page("hub", "Hub", "the hub page")]
    pages += [page(f"p{i}", f"P {i}", "see [[hub]]") for i in range(1000)]
    put_pages(db, pages)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(count, 1)
    degrees = search.load_degrees(conn, ["hub", "p1"])
    conn.set_progress_handler(None, 0)
    assert degrees.get("hub", 0) == search.LINK_CAP + 1
    assert degrees.get("p1", 0) == 0
    assert steps < 500, f"{steps} VM steps: every in-link was read"
    conn.close()
