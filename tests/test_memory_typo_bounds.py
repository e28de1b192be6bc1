"""Typo work is bounded per request and shared across requests (issue 36 item 12), on real
stores written through the real writer: a query past its typo budget answers with what it
corrected, a typo-index group past its size bound is read once and left out, and a group
read cut short by its request's deadline is finished by the next request, not started over.
"""

from __future__ import annotations

import random
import sqlite3
import string
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest_memory import ask, new_project, page, put_pages

from lwc_trio.exceptions import MemoryCancelled
from lwc_trio.memory.format import typo_index
from lwc_trio.memory.query import engine, fuzzy
from lwc_trio.memory.storage.store import PROGRESS_STEPS

WORDS = ["bramble", "crumpet", "dolphin", "fractal", "glimmer", "harvest"]
"""One word per Page, each of 7 letters with its own first letter."""
TYPOS = ["brambel", "crumpte", "dolphni", "fractla", "glimmre", "harvets"]
"""Each of `WORDS` with its last two letters swapped: one edit."""


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    engine.WORD_INDEXES.clear()
    engine.ANSWERS.clear()
    yield
    engine.WORD_INDEXES.clear()
    engine.ANSWERS.clear()


def _fuzzy(memory: dict[str, Any]) -> list[str]:
    assert memory["state"] == "ready"
    return sorted(r["identifier"] for r in memory["results"] if r["match"] == "fuzzy")


def test_a_query_past_its_typo_budget_answers_with_what_it_corrected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six misspelt words with a typo budget for one correction: the first is corrected and
    found, the others are searched as they are, the answer is ready (not a timeout), and
    the same query asked again, its corrections now remembered, is cut at the same word."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page(f"p{i}", f"Page {i}", f"notes on {w}") for i, w in enumerate(WORDS)])
    query = " ".join(TYPOS)
    assert _fuzzy(ask(query, project, home=home)) == [f"p{i}" for i in range(6)]
    engine.WORD_INDEXES.clear()
    engine.ANSWERS.clear()
    monkeypatch.setattr(typo_index, "TYPO_BUDGET", fuzzy.WORD_COST + 1)
    assert _fuzzy(ask(query, project, home=home)) == ["p0"]
    engine.ANSWERS.clear()  # searched again, through the remembered corrections
    assert _fuzzy(ask(query, project, home=home)) == ["p0"]


def _words(rng: random.Random, count: int, length: int) -> list[str]:
    found: set[str] = set()
    while len(found) < count:
        found.add("".join(rng.choices(string.ascii_lowercase, k=length)))
    return sorted(found)


def test_a_typo_group_past_its_size_bound_is_read_once_and_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A length of the typo index holding more words than a group may: it is read only up
    to the bound, once per store revision, and its words are never proposed; the query
    still answers, and words of the other lengths are still corrected."""
    monkeypatch.setattr(typo_index, "READ_CHUNK", 16)
    monkeypatch.setattr(typo_index, "GROUP_MAX", 100)
    project, db, home = new_project(tmp_path)
    filler = _words(random.Random(3), 300, 10)  # with "deployment": 301 words of 10 letters
    pages = [page("d", "Deployment", "deployment"), page("r", "Rollout", "rollout")]
    pages += [
        page(f"f{i}", f"Filler {i}", " ".join(filler[i * 30 : (i + 1) * 30])) for i in range(10)
    ]
    put_pages(db, pages)
    assert _fuzzy(ask("deploymnet rollotu", project, home=home)) == ["r"]
    [index] = engine.WORD_INDEXES._entries.values()
    assert 10 in index.too_large
    assert index.buckets[10] == ()
    reads, read = index.reads, index.read
    assert (
        read
        <= sum(len(w) for w in index.buckets.values())
        + sum(len(w) for w in index.shards.values())
        + typo_index.GROUP_MAX
        + typo_index.READ_CHUNK
    )
    engine.ANSWERS.clear()
    assert _fuzzy(ask("deploymnet rollotu", project, home=home)) == ["r"]
    assert (index.reads, index.read) == (reads, read)  # nothing read again


def test_a_group_read_cut_short_by_its_deadline_is_not_started_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request whose deadline passes halfway through reading a typo-index group leaves
    what it read: the next request goes on from there, so reading the group costs SQLite
    what one uninterrupted read costs (plus a step), not that again (SPEC §4: an index built
    once per store revision, reused across requests even when one request timed out)."""
    monkeypatch.setattr(typo_index, "READ_CHUNK", 64)
    project, db, home = new_project(tmp_path)
    filler = _words(random.Random(5), 3000, 10)
    pages = [page("d", "Deployment", "deployment")]
    pages += [
        page(f"f{i}", f"Filler {i}", " ".join(filler[i * 100 : (i + 1) * 100])) for i in range(30)
    ]
    put_pages(db, pages)
    steps = [0]
    stop_at: list[int] = []
    request = threading.Event()
    real = typo_index.BoundIndex._words

    def counted(self: typo_index.BoundIndex, sql: str, args: Any) -> Any:
        """SQLite's work on the typo index, in progress-handler calls of 10 VM steps; past
        `stop_at`, the request's deadline passes (its flag is set and SQLite interrupted;
        the index sees it through the store's share of the deadline, `engine.Share`)."""
        cancelled = self.cancelled
        assert cancelled is not None

        def progress() -> int:
            steps[0] += 1
            if stop_at and steps[0] >= stop_at[0]:
                request.set()
            return 1 if cancelled.is_set() else 0

        self.conn.set_progress_handler(progress, 10)
        try:
            return real(self, sql, args)
        finally:
            self.conn.set_progress_handler(lambda: 1 if cancelled.is_set() else 0, PROGRESS_STEPS)

    monkeypatch.setattr(typo_index.BoundIndex, "_words", counted)
    whole = ask("deploymnet", project, home=home)
    assert _fuzzy(whole) == ["d"]
    full = steps[0]
    engine.WORD_INDEXES.clear()
    engine.ANSWERS.clear()
    steps[0] = 0
    stop_at.append(full // 2)
    with pytest.raises(MemoryCancelled):
        ask("deploymnet", project, home=home, cancelled=request)
    first = steps[0]
    assert first >= full // 2
    stop_at.clear()
    steps[0] = 0
    assert ask("deploymnet", project, home=home)["results"] == whole["results"]
    # One step of 64 rows is what a cut-short read can lose; starting over would cost
    # about half the whole read again.
    assert first + steps[0] <= full + full // 8, (first, steps[0], full)
    with sqlite3.connect(db) as conn:
        assert (
            conn.execute("SELECT count(*) FROM search_fuzzy WHERE length = 10").fetchone()[0] > 3000
        )
