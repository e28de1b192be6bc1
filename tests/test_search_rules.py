"""Each rule of SPEC §4 "Search", checked on small hand-made stores through the real engine."""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import lwc_command
from conftest_memory import ask, ids, new_project, new_store, page, put_pages, search_rows

from lwc_trio.exceptions import MemoryCancelled
from lwc_trio.memory.format import typo_index
from lwc_trio.memory.query import engine
from lwc_trio.memory.text.tokenize import index_terms, tokenize


def test_recall_a_common_term_beside_an_unknown_one(tmp_path: Path) -> None:
    """`login` is in every page and `work` in none: the login pages still come back."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("auth-flow", "Auth flow", "Login uses OAuth device codes")])
    memory = ask("how does login work", project, home=home)
    assert ids(memory) == ["auth-flow"]
    put_pages(db, [page(f"flow-{i}", f"Flow {i}", "flow of air over the wing") for i in range(12)])
    put_pages(db, [page("other", "Other", "nothing in common")])
    memory = ask("flow xyzzy", project, home=home, max_documents=20)
    assert len(memory["results"]) == 13  # every page holding "flow" (the auth page's title)
    assert all(row["match"] == "lexical" for row in memory["results"])


def test_small_store_where_every_term_is_common_ranks_by_matches(tmp_path: Path) -> None:
    """In 5 pages, both terms are in most of them: pages with both still come first."""
    project, db, home = new_project(tmp_path)
    put_pages(
        db,
        [
            page("both", "Acme rollout plan", "acme rollout in three waves"),
            page("acme-1", "Acme notes", "acme acme"),
            page("acme-2", "Acme people", "acme staff"),
            page("rollout-1", "Rollout", "rollout steps"),
            page("none", "Lunch", "sandwiches"),
        ],
    )
    memory = ask("acme rollout", project, home=home)
    assert ids(memory)[0] == "both"
    assert set(ids(memory)) == {"both", "acme-1", "acme-2", "rollout-1"}
    assert all(row["rank"] < 0 for row in memory["results"])


FINDS = {
    # English stemming at write and query time: `caching` finds a page about `cache`.
    "stemming": (
        [page("c", "Cache layer", "We cache responses."), page("o", "Other", "x")],
        {"caching": ["c"], "cached responses": ["c"]},
    ),
    # An accented page is found without accents, and the other way round.
    "accents": (
        [
            page("cafe", "Café crème", "Le café est naïf"),
            page("plain", "Resume", "resume writing tips"),
            page("filler", "Filler", "other text"),
        ],
        {"cafe creme": ["cafe"], "CAFE\u0301": ["cafe"], "résumé": ["plain"]},
    ),
    # A one-character query finds a page whose text has it inside a longer run.
    "cjk": (
        [
            page("db", "数据库设计", "关系数据库的索引"),
            page("ml", "机器学习", "模型训练"),
            page("en", "English", "no cjk"),
        ],
        {"库": ["db"], "学": ["ml"], "数据": ["db"]},
    ),
}


@pytest.mark.parametrize("rule", list(FINDS))
def test_each_query_finds_exactly_the_pages_its_rule_says(tmp_path: Path, rule: str) -> None:
    """Stemming, accent folding and CJK characters: each query finds exactly those pages."""
    project, db, home = new_project(tmp_path)
    pages, expected = FINDS[rule]
    put_pages(db, pages)
    assert {query: ids(ask(query, project, home=home)) for query in expected} == expected


def test_query_term_frequency_counts(tmp_path: Path) -> None:
    """Of two symmetric pages, the one about the word the query repeats ranks first."""
    project, db, home = new_project(tmp_path)
    put_pages(
        db,
        [
            page("a", "Notes one", "turbulence boundary"),
            page("b", "Notes two", "boundary turbulence"),
            *[page(f"f{i}", f"Filler {i}", "unrelated words") for i in range(4)],
            page("t", "Turbulence only", "turbulence"),
            page("l", "Boundary only", "boundary"),
        ],
    )
    first = ids(ask("turbulence boundary turbulence", project, home=home))
    second = ids(ask("boundary turbulence boundary", project, home=home))
    assert first.index("t") < first.index("l")
    assert second.index("l") < second.index("t")


def test_typo_correction_labels_results_found_only_that_way(tmp_path: Path) -> None:
    """A misspelt word is searched as its nearest vocabulary words; those hits are fuzzy."""
    project, db, home = new_project(tmp_path)
    put_pages(
        db,
        [
            page("deploy", "Deployment guide", "how we roll out releases"),
            page("pods", "Pod scheduling", "the scheduler places pods on nodes"),
            page("misc", "Misc", "unrelated"),
        ],
    )
    memory = ask("deploymnet", project, home=home)
    assert [(r["identifier"], r["match"]) for r in memory["results"]] == [("deploy", "fuzzy")]
    both = ask("deploymnet pods", project, home=home)
    matches = {r["identifier"]: r["match"] for r in both["results"]}
    assert matches == {"deploy": "fuzzy", "pods": "lexical"}
    # Short words are never corrected (one edit in three letters is another word).
    assert ids(ask("pdo", project, home=home)) == []


@pytest.mark.parametrize(
    "typo",
    ["xogin", "olgin", "ogin", "blogin", "lgoin", "logn", "loginx"],
    ids=["substituted", "swapped", "deleted", "inserted", "inner-swap", "inner-deleted", "added"],
)
def test_one_edit_at_the_first_character_is_corrected_too(tmp_path: Path, typo: str) -> None:
    """Words of up to 7 letters are matched through their first character (or the edit at
    it); an edit there finds the word as an edit anywhere else does."""
    project, db, home = new_project(tmp_path)
    put_pages(
        db,
        [
            page("auth", "Auth", "login uses oauth device codes"),
            page("misc", "Misc", "unrelated words here"),
            page("kern", "Kernel", "panics and traces"),
        ],
    )
    memory = ask(typo, project, home=home)
    assert [(r["identifier"], r["match"]) for r in memory["results"]] == [("auth", "fuzzy")]


def test_typo_ties_are_deterministic(tmp_path: Path) -> None:
    """Two vocabulary words at the same distance: the same choice, every time."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("a", "Tanks", "tanks"), page("b", "Banks", "banks"), page("c", "X", "y")])
    answers = {json.dumps(ask("danks", project, home=home)["results"]) for _ in range(3)}
    assert len(answers) == 1


def test_snippet_has_context_before_the_match(tmp_path: Path) -> None:
    """The snippet starts about 40 characters before the match, on a word, marked `…`."""
    project, db, home = new_project(tmp_path)
    body = "Intro sentence about many unrelated things. " * 5 + "The scheduler places pods."
    put_pages(db, [page("s", "Notes", body), page("o", "Other", "x")])
    snippet = search_rows("scheduler", project, home=home)[0]["snippet"]
    assert snippet.startswith("…")
    assert "scheduler places pods." in snippet
    assert 25 <= snippet.index("scheduler") <= 42
    assert snippet[1:].split(" ")[0] in body.split(" ")


def test_same_query_is_byte_identical(tmp_path: Path) -> None:
    """Lexical, corrected and CJK queries serialize to identical bytes run after run."""
    project, db, home = new_project(tmp_path)
    new_store(home)
    put_pages(
        db,
        [
            page("a", "Alpha 机器学习", "alpha [[b]] caching"),
            page("b", "Beta", "alpha deployment"),
            page("c", "Gamma", "deployments everywhere"),
        ],
    )
    for query in ("alpha 学习 cache", "deploymnet", "学"):
        first = json.dumps(ask(query, project, home=home), ensure_ascii=False)
        engine.WORD_INDEXES.clear()
        second = json.dumps(ask(query, project, home=home), ensure_ascii=False)
        assert first == second


def test_result_count_is_min_of_limit_and_matching_pages(tmp_path: Path) -> None:
    """Random small stores and queries: never fewer results than pages holding a query term."""
    rng = random.Random(13)
    vocabulary = [f"w{i}" for i in range(12)] + ["common"] * 6
    project, db, home = new_project(tmp_path)
    bodies = {f"p{i}": " ".join(rng.choices(vocabulary, k=rng.randint(1, 5))) for i in range(10)}
    put_pages(db, [page(slug, f"Page {slug}", body) for slug, body in bodies.items()])
    for _ in range(40):
        query = " ".join(rng.sample([*vocabulary[:12], "common", "zzz"], k=rng.randint(1, 3)))
        terms = set(tokenize(query))
        matching = [s for s, b in bodies.items() if terms & set(index_terms(f"Page {s} {b}"))]
        for limit in (1, 3, 8):
            got = ask(query, project, home=home, max_documents=limit)["results"]
            lexical = [r for r in got if r["match"] == "lexical"]
            assert len(lexical) >= min(limit, len(matching)), (query, limit)


def test_a_typo_group_is_read_once_and_a_waiting_request_keeps_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one request reads a group of the typo index, another that needs it waits for
    that read instead of reading it again, and gives up at its own deadline; the first
    request's read is kept for the next requests."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("d", "Deployment", "x"), page("o", "Other", "y")])
    engine.WORD_INDEXES.clear()
    started, release = threading.Event(), threading.Event()
    real = typo_index.BoundIndex._words

    def slow(self: typo_index.BoundIndex, sql: str, args: tuple[object, ...]) -> list[object]:
        started.set()
        release.wait(30)
        return real(self, sql, args)

    monkeypatch.setattr(typo_index.BoundIndex, "_words", slow)
    outcome: dict[str, object] = {}

    def request(name: str, cancelled: threading.Event) -> None:
        try:
            outcome[name] = ask("deploymnet", project, home=home, cancelled=cancelled)
        except BaseException as exc:
            outcome[name] = exc

    first = threading.Thread(target=request, args=("first", threading.Event()))
    first.start()
    assert started.wait(30)
    cancelled = threading.Event()
    second = threading.Thread(target=request, args=("second", cancelled))
    second.start()
    time.sleep(0.2)  # the second request is waiting for the first one's read
    cancelled.set()  # its deadline passes: it stops, though the read has not finished
    second.join(5)
    assert not second.is_alive()
    assert isinstance(outcome["second"], MemoryCancelled)
    release.set()
    first.join(30)
    memory = outcome["first"]
    assert isinstance(memory, dict)
    assert [(r["identifier"], r["match"]) for r in memory["results"]] == [("d", "fuzzy")]
    [index] = engine.WORD_INDEXES._entries.values()
    reads = index.reads
    assert reads == len(index.shards) + len(index.buckets) > 0
    assert ask("deploymnet", project, home=home)["results"] == memory["results"]
    assert index.reads == reads
    # A write is a new revision: its groups are read anew.
    put_pages(db, [page("e", "Deployer", "z")])
    ask("deploymnet", project, home=home)
    assert len(engine.WORD_INDEXES) == 2


@pytest.mark.slow
def test_readme_example_through_the_cli(workspace: Path, lwc_env: dict[str, str]) -> None:
    """The README's first steps: init, put one page, explore in natural language."""
    (workspace / "notes").mkdir()
    (workspace / "notes" / "auth.md").write_text("Login uses OAuth device codes\n")

    def lwc(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            lwc_command(*args), cwd=workspace, env=lwc_env, capture_output=True, timeout=60
        )

    assert lwc("init").returncode == 0
    put = lwc("page", "put", "auth-flow", "--title", "Auth flow", "--summary", "How login works",
              "--file", "notes/auth.md")  # fmt: skip
    assert put.returncode == 0, put.stderr
    explored = lwc("explore", "how does login work")
    assert explored.returncode == 0, explored.stderr
    memory = json.loads(explored.stdout)["memory"]
    assert [r["identifier"] for r in memory["results"]] == ["auth-flow"]
    assert memory["pages"][0]["body"] == "Login uses OAuth device codes\n"
    assert memory["results"][0]["snippet"] == ""  # the body is right below it
