"""Search ranking, merging, caps and store selection give the hand-checked answers of SPEC §4."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest_memory import (
    add_source,
    ask,
    ids,
    new_project,
    new_store,
    page,
    put_pages,
    raw_scores,
    search_rows,
)

from lwc_trio.memory.index.inputs import PageInput
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.query.engine import MemoryCancelled
from lwc_trio.memory.query.passages import ELISION
from lwc_trio.protocol.tool import MAX_TOKENS_MAX

RESULT_KEYS = [
    "scope",
    "type",
    "identifier",
    "title",
    "kind",
    "summary",
    "provenance",
    "snippet",
    "rank",
    "match",
    "updatedAt",
]
PAGE_KEYS = [
    "scope",
    "slug",
    "title",
    "kind",
    "summary",
    "body",
    "provenance",
    "links",
    "updatedAt",
    "truncated",
]

FILLER = [
    page(f"filler-{i}", f"Filler {word}", f"{word} text")
    for i, word in enumerate(
        ["apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel"]
    )
]


def put_among_filler(db: Path, *pages: PageInput) -> None:
    """Write `pages` beside the eight FILLER pages (so no term is in most of the store)."""
    put_pages(db, [*FILLER, *pages])


GENERIC = (page("index", "Index", "kubernetes"), page("guide", "Guide", "kubernetes"))

# Pages written beside FILLER, a query with its maxDocuments, and the exact (identifier, match)
# rows it must give, best first; every case also checks that ranks strictly rise (BM25 ranks
# are negative, lower is better) and that lexical ranks stay below 0.
RANKED = {
    # A term in the title (weight 8) beats the same term repeated in a body (weight 1).
    "title-outranks-body": (
        (
            page("consensus", "Raft consensus", "leader election"),
            page("notes", "Meeting notes", "raft raft raft was discussed"),
        ),
        "raft",
        8,
        [("consensus", "lexical"), ("notes", "lexical")],
    ),
    # An `index` page ranks below an equal page, except when the query says "index".
    "generic-page-pushed-down": (
        GENERIC,
        "kubernetes",
        8,
        [("guide", "lexical"), ("index", "lexical")],
    ),
    "generic-page-asked-for": (
        GENERIC,
        "kubernetes index",
        8,
        [("index", "lexical"), ("guide", "lexical")],
    ),
    # A misspelt word finds the title by correction, marked fuzzy, after lexical hits.
    "fuzzy-after-lexical": (
        (
            page("k8s", "Kubernetes Deployment", "how we ship"),
            page("typo", "Log excerpt", "error: kuberntes not found"),
            page("trust", "Trust boundaries", "who may call what"),
        ),
        "kuberntes",
        8,
        [("typo", "lexical"), ("k8s", "fuzzy")],
    ),
    # With maxDocuments lexical hits, no fuzzy result is added.
    "no-fuzzy-when-lexical-fills": (
        (page("k8s", "Kubernetes", "x"), page("typo", "Typo", "kuberntes")),
        "kuberntes",
        1,
        [("typo", "lexical")],
    ),
}


@pytest.mark.parametrize("case", list(RANKED))
def test_ranking_gives_exactly_these_rows(tmp_path: Path, case: str) -> None:
    """Title weight, the generic-page penalty and the fuzzy fallback order results as listed."""
    pages, query, limit, expected = RANKED[case]
    project, db, home = new_project(tmp_path)
    put_among_filler(db, *pages)
    memory = ask(query, project, home=home, max_documents=limit)
    assert memory["state"] == "ready"
    assert [(row["identifier"], row["match"]) for row in memory["results"]] == expected
    ranks = [row["rank"] for row in memory["results"]]
    assert ranks == sorted(set(ranks))
    assert all(row["rank"] < 0 for row in memory["results"] if row["match"] == "lexical")


def test_whole_query_title_and_path_match_multiply_bm25(tmp_path: Path) -> None:
    """Exact title (x2) and exact slug (x1.5) multiply the BM25F score: rank = score x 3."""
    project, db, home = new_project(tmp_path)
    put_among_filler(
        db,
        page("deploy-pipeline", "Deploy pipeline", "how we ship"),
        page("ci", "CI notes", "the deploy step of the pipeline"),
    )
    memory = ask("deploy pipeline", project, home=home)
    ranks = {row["identifier"]: row["rank"] for row in memory["results"]}
    raw = raw_scores(db, "deploy pipeline")
    assert ranks["deploy-pipeline"] == pytest.approx(raw["deploy-pipeline"] * 3.0)
    assert ranks["ci"] == pytest.approx(raw["ci"])
    assert ids(memory) == ["deploy-pipeline", "ci"]


def test_source_summarized_by_a_matching_source_page_is_hidden(tmp_path: Path) -> None:
    """A Source cited by a matching kind=source Page is hidden; a concept Page hides nothing."""
    project, db, home = new_project(tmp_path)
    sid = add_source(db, "kubernetes rollout details", title="Rollout log")
    put_among_filler(
        db,
        page(
            "rollout-summary",
            "Rollout summary",
            "kubernetes rollout",
            kind="source",
            sources=(sid,),
        ),
    )
    assert ids(ask("kubernetes rollout", project, home=home)) == ["rollout-summary"]
    put_pages(
        db,
        [
            page(
                "rollout-summary",
                "Rollout summary",
                "kubernetes rollout",
                kind="concept",
                sources=(sid,),
            )
        ],
    )
    assert set(ids(ask("kubernetes rollout", project, home=home))) == {"rollout-summary", sid}


def test_link_rerank_prefers_the_linked_page(tmp_path: Path) -> None:
    """Of two otherwise equal Pages, the one other Pages link to ranks first."""
    project, db, home = new_project(tmp_path)
    put_among_filler(
        db,
        page("wa", "Widget notes", "widget"),
        page("wb", "Widget notes", "widget"),
        page("c", "Cee", "see [[wb]]"),
        page("d", "Dee", "see [[wb]]"),
    )
    memory = ask("widget", project, home=home)
    assert ids(memory) == ["wb", "wa"]
    assert memory["results"][0]["rank"] == pytest.approx(
        memory["results"][1]["rank"] * (1 + 0.05 * 1.584962500721156)  # log2(1 + 2 links)
    )


def test_merge_order_project_before_global_then_pages_before_sources(tmp_path: Path) -> None:
    """Exact rank ties break project before global, then Page before Source."""
    project, db, home = new_project(tmp_path)
    global_db = new_store(home)
    for store in (db, global_db):
        put_among_filler(store, page("zeta", "Omega", ""))
        add_source(store, "", title="Omega", origin="zeta")
    memory = ask("omega", project, home=home)
    got = [(r["scope"], r["type"]) for r in memory["results"]]
    assert got == [
        ("project", "page"),
        ("project", "source"),
        ("global", "page"),
        ("global", "source"),
    ]
    assert len({r["rank"] for r in memory["results"]}) == 1
    assert [s["scope"] for s in memory["stores"]] == ["project", "global"]


def test_better_global_hit_precedes_worse_project_hit(tmp_path: Path) -> None:
    """Stores merge by rank first: a stronger global match comes before a weak project one."""
    project, db, home = new_project(tmp_path)
    global_db = new_store(home)
    put_among_filler(db, page("weak", "Weak", "a long body that mentions zebra once only"))
    put_among_filler(global_db, page("zebra", "Zebra", "zebra zebra"))
    memory = ask("zebra", project, home=home)
    assert [(r["scope"], r["identifier"]) for r in memory["results"]] == [
        ("global", "zebra"),
        ("project", "weak"),
    ]


def test_same_query_same_stores_same_bytes(tmp_path: Path) -> None:
    """Two runs of one query over unchanged stores serialize to identical bytes."""
    project, db, home = new_project(tmp_path)
    new_store(home)
    put_among_filler(
        db, page("a", "Alpha 机器学习", "alpha [[b]] body"), page("b", "Beta", "alpha")
    )
    first = json.dumps(ask("alpha 学习 banana", project, home=home), ensure_ascii=False)
    second = json.dumps(ask("alpha 学习 banana", project, home=home), ensure_ascii=False)
    assert first == second


def test_field_order_is_fixed(tmp_path: Path) -> None:
    """Result, page, store and memory keys come out in the SPEC order."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("a", "Alpha", "alpha body")])
    memory = ask("alpha", project, home=home)
    assert list(memory) == ["state", "results", "pages", "graph", "stores"]
    assert list(memory["results"][0]) == RESULT_KEYS
    assert list(memory["pages"][0]) == PAGE_KEYS
    assert list(memory["stores"][0]) == ["scope", "storeId", "revision", "state"]
    assert memory["graph"] == [
        {"scope": "project", "status": {"engine": "disabled", "status": "disabled"}}
    ]


def test_page_bodies_are_capped_at_15000_each_and_60000_total(tmp_path: Path) -> None:
    """Five 40,000-character bodies at the largest budget: each ≤ 15,000, all ≤ 60,000,
    every one marked truncated, in result order (LWC's caps stay the upper bound)."""
    project, db, home = new_project(tmp_path)
    body = ("lorem ipsum " * 4000)[:39_990] + " capsword"
    put_pages(db, [page(f"p{i}", f"Page {i}", body) for i in range(5)])
    memory = ask("capsword", project, home=home, max_tokens=MAX_TOKENS_MAX)
    assert len(memory["results"]) == 5
    lengths = [len(p["body"]) for p in memory["pages"]]
    assert lengths
    assert all(0 < n <= 15_000 for n in lengths)
    assert sum(lengths) <= 60_000
    assert all(p["truncated"] for p in memory["pages"])
    assert [p["slug"] for p in memory["pages"]] == ids(memory)[: len(lengths)]
    assert all("capsword" in p["body"] for p in memory["pages"])
    assert all(len(r["snippet"]) <= 180 for r in memory["results"])


def test_cjk_bodies_are_cut_in_code_points(tmp_path: Path) -> None:
    """A 40,000-character CJK body comes as at most 15,000 code points of its own text; a
    short one that fits its share comes whole."""
    project, db, home = new_project(tmp_path)
    long_body = "数据库" * 13_333 + "数"
    put_pages(db, [page("long", "长文", long_body), page("short", "短文", "数据库" * 1000)])
    memory = ask("数据库", project, home=home, max_tokens=MAX_TOKENS_MAX)
    bodies = {p["slug"]: p for p in memory["pages"]}
    assert len(long_body) == 40_000
    assert 0 < len(bodies["long"]["body"]) <= 15_000
    pieces = [piece.strip().rstrip(" …") for piece in bodies["long"]["body"].split(ELISION)]
    assert all(piece in long_body for piece in pieces)
    assert bodies["long"]["truncated"]
    assert bodies["short"]["body"] == "数据库" * 1000
    assert not bodies["short"]["truncated"]
    assert sum(len(p["body"]) for p in memory["pages"]) <= 60_000


def test_budget_cuts_the_last_page_to_what_is_left(tmp_path: Path) -> None:
    """10,000 + 4 x 40,000 characters at the largest budget: the short first Page whole, the
    others query-focused, total ≤ 60,000; shares fall with rank."""
    project, db, home = new_project(tmp_path)
    # The title match puts the small page first; the big ones follow.
    pages = [page("small", "Budget", ("budget " * 1500)[:10_000])]
    pages += [page(f"big{i}", f"Big {i}", ("budget " * 6000)[:40_000]) for i in range(4)]
    put_among_filler(db, *pages)
    memory = ask("budget", project, home=home, max_tokens=MAX_TOKENS_MAX)
    assert memory["pages"][0]["slug"] == "small"
    lengths = [len(p["body"]) for p in memory["pages"]]
    assert lengths[0] == 10_000
    assert all(n <= 15_000 for n in lengths)
    assert sum(lengths) <= 60_000
    assert lengths[1:] == sorted(lengths[1:], reverse=True)
    assert [p["truncated"] for p in memory["pages"]] == [False] + [True] * (len(lengths) - 1)


def test_sources_never_return_their_content(tmp_path: Path) -> None:
    """A matching Source contributes a ≤ 180-character snippet and no other text."""
    project, db, home = new_project(tmp_path)
    secret_tail = "tailmarker " * 500
    sid = add_source(db, "needle " + "x" * 300 + " " + secret_tail, title="Big source")
    memory = ask("needle", project, home=home)
    assert ids(memory) == [sid]
    row = memory["results"][0]
    assert row["type"] == "source"
    assert row["kind"] is None
    assert row["provenance"] is None
    assert len(row["snippet"]) <= 180
    assert "tailmarker" not in json.dumps(memory)
    assert memory["pages"] == []


def test_zero_terms_is_ready_with_no_results(tmp_path: Path) -> None:
    """A query of stop words and punctuation answers ready with empty lists."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("a", "The", "the of and")])
    memory = ask("the of ?!", project, home=home)
    assert memory["state"] == "ready"
    assert memory["results"] == []
    assert memory["pages"] == []
    assert len(memory["stores"]) == 1
    assert len(memory["graph"]) == 1


def test_missing_stores_are_unavailable_with_next_action(tmp_path: Path) -> None:
    """No store: store_not_found with `lwc init` (project, all) or the global init command."""
    project, home = tmp_path / "ws", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    for scope, command, cwd in (
        ("project", "lwc init", project),
        ("all", "lwc init", project),
        ("global", "lwc --scope global init", home),
    ):
        memory = ask("x", project, home=home, scope=scope)
        assert memory["state"] == "unavailable"
        assert memory["error"]["code"] == "store_not_found"
        assert memory["nextAction"] == {"command": command, "cwd": str(cwd)}
    only_global = ask("x", project, home=home, scope="all", allowed=frozenset({"global"}))
    assert only_global["nextAction"]["command"] == "lwc --scope global init"


def test_scope_all_reads_only_allowed_stores(tmp_path: Path) -> None:
    """With the host allowing only project, scope all never opens the global store."""
    project, db, home = new_project(tmp_path)
    put_pages(new_store(home), [page("g", "Gamma", "gamma")])
    put_pages(db, [page("p", "Gamma", "gamma")])
    memory = ask("gamma", project, home=home, allowed=frozenset({"project"}))
    assert [s["scope"] for s in memory["stores"]] == ["project"]
    assert ids(ask("gamma", project, home=home, scope="global")) == ["g"]


def test_store_reached_both_ways_is_read_once_as_global(tmp_path: Path) -> None:
    """A project store that is a copy of the global one (same store_id) is read once."""
    project, home = tmp_path / "ws", tmp_path / "home"
    project.mkdir()
    put_pages(new_store(home), [page("g", "Gamma", "gamma")])
    (project / ".lwc").mkdir()
    shutil.copyfile(home / ".lwc" / "wiki.db", project / ".lwc" / "wiki.db")
    memory = ask("gamma", project, home=home)
    assert [s["scope"] for s in memory["stores"]] == ["global"]
    assert [(r["scope"], r["identifier"]) for r in memory["results"]] == [("global", "g")]


def test_nearest_store_wins_and_never_above_the_workspace(tmp_path: Path) -> None:
    """The nearest .lwc/wiki.db up to the workspace is used; one above it is ignored."""
    home = tmp_path / "home"
    home.mkdir()
    put_pages(new_store(tmp_path / "outer"), [page("o", "Outer", "word")])
    put_pages(new_store(tmp_path / "outer" / "ws"), [page("w", "Ws", "word")])
    deep = tmp_path / "outer" / "ws" / "a" / "b"
    deep.mkdir(parents=True)
    assert ids(ask("word", deep, workspace=tmp_path / "outer" / "ws", home=home)) == ["w"]
    lonely = tmp_path / "outer" / "elsewhere"
    lonely.mkdir()
    memory = ask("word", lonely, workspace=lonely, home=home, scope="project")
    assert memory["state"] == "unavailable"


def test_home_lwc_is_never_a_project_store(tmp_path: Path) -> None:
    """Walking up through $HOME does not take $HOME/.lwc as the project store."""
    home = tmp_path / "home"
    put_pages(new_store(home), [page("g", "Gamma", "gamma")])
    project = home / "code" / "proj"
    project.mkdir(parents=True)
    memory = ask("gamma", project, workspace=tmp_path, home=home, scope="project")
    assert memory["state"] == "unavailable"


def test_failing_store_keeps_the_plane_ready(tmp_path: Path) -> None:
    """A symlinked project .lwc is store_path_invalid while the global store still answers."""
    project, home = tmp_path / "ws", tmp_path / "home"
    project.mkdir()
    put_pages(new_store(home), [page("g", "Gamma", "gamma")])
    put_pages(new_store(tmp_path / "elsewhere"), [page("e", "Gamma", "gamma")])
    os.symlink(tmp_path / "elsewhere" / ".lwc", project / ".lwc")
    memory = ask("gamma", project, home=home)
    assert memory["state"] == "ready"
    assert memory["stores"][0] == {
        "scope": "project",
        "storeId": None,
        "revision": None,
        "state": "error",
        "error": {"code": "store_path_invalid", "message": memory["stores"][0]["error"]["message"]},
    }
    assert ids(memory) == ["g"]
    only = ask("gamma", project, home=home, scope="project")
    # SPEC §3: with no other store answering, the plane is unavailable and `lwc doctor`
    # (which names the link) is the next action.
    assert only["state"] == "unavailable"
    assert only["error"]["code"] == "store_path_invalid"
    assert only["nextAction"] == {"command": "lwc doctor", "cwd": str(project)}


def test_cli_write_is_visible_to_the_next_query(tmp_path: Path) -> None:
    """A write bumps store_revision, so cached title indexes never hide new Pages."""
    project, db, home = new_project(tmp_path)
    put_among_filler(db, page("one", "Kubernetes", "x"))
    assert ids(ask("kuberntes", project, home=home)) == ["one"]
    put_pages(db, [page("two", "Kubernetes operators", "y")])
    assert ids(ask("kuberntes", project, home=home)) == ["one", "two"]


def test_question_asked_again_is_answered_afresh_after_a_write(tmp_path: Path) -> None:
    """The per-revision answers never outlive a write: the same question asked again gets
    the same bytes until a write, then the written text (rows, snippet and body). A result
    whose body comes in `pages` carries an empty snippet; `lwc search` shows it."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("a", "Alpha", "alpha before"), page("b", "Beta", "beta")])
    first = ask("alpha", project, home=home)
    assert json.dumps(ask("alpha", project, home=home)) == json.dumps(first)
    first["results"].clear()
    first["pages"][0]["body"] = "changed by the caller"
    again = ask("alpha", project, home=home)
    assert ids(again) == ["a"]
    assert again["pages"][0]["body"] == "alpha before"
    put_pages(db, [page("a", "Alpha", "alpha after"), page("c", "Alpha two", "gamma")])
    after = ask("alpha", project, home=home)
    assert ids(after) == ["a", "c"]
    assert after["results"][0]["snippet"] == ""
    assert after["pages"][0]["body"] == "alpha after"
    assert search_rows("alpha", project, home=home)[0]["snippet"] == "alpha after"


def test_graph_neighborhood_is_bounded_to_twelve_nodes(tmp_path: Path) -> None:
    """A hub linked by 20 Pages yields the seed plus 11 related Pages and 11 RELATED edges."""
    project, db, home = new_project(tmp_path)
    spokes = [page(f"s{i:02}", f"Spoke {i}", "see [[hub]]") for i in range(20)]
    put_pages(db, [page("hub", "Hub topic", "central"), *spokes])
    with Wiki(db) as wiki:
        wiki.set_graph_enabled(True)
        wiki.build_graph()
    memory = ask("hub topic", project, home=home)
    item = memory["graph"][0]
    assert item["status"] == {"engine": "sqlite", "status": "ready"}
    assert item["seed"] == "hub"
    hood = item["neighborhood"]
    assert (hood["depth"], hood["limit"]) == (1, 12)
    assert len(hood["nodes"]) == 12
    assert len(hood["edges"]) == 11
    assert hood["nodes"][0] == {
        "key": "page:hub",
        "identifier": "hub",
        "title": "Hub topic",
        "kind": "concept",
        "depth": 0,
        "score": None,
    }
    assert [n["identifier"] for n in hood["nodes"][1:]] == [f"s{i:02}" for i in range(11)]
    assert {e["type"] for e in hood["edges"]} == {"RELATED"}
    assert all(n["depth"] == 1 and n["score"] == 1.0 for n in hood["nodes"][1:])
    hood["nodes"].clear()  # the question asked again has a neighbourhood of its own
    again = ask("hub topic", project, home=home)["graph"][0]["neighborhood"]
    assert len(again["nodes"]) == 12
    assert again["nodes"][0]["identifier"] == "hub"


def test_graph_scores_links_shared_sources_and_common_neighbours(tmp_path: Path) -> None:
    """Both link directions, a shared Source and a common neighbour add up as documented."""
    project, db, home = new_project(tmp_path)
    sid = add_source(db, "shared evidence")
    put_pages(
        db,
        [
            page("seed", "Seed topic", "to [[both]] and [[mid]]", sources=(sid,)),
            page("both", "Both", "back to [[seed]]"),
            page("cited", "Cited", "unrelated", sources=(sid,)),
            page("mid", "Mid", "to [[far]]"),
            page("far", "Far", "end"),
        ],
    )
    hood = built_neighbourhood(db, project, home, "seed topic")
    scores = {n["identifier"]: n["score"] for n in hood["nodes"][1:]}
    # both: two link directions; mid: one link; cited: one shared source; far: common neighbour.
    assert scores == {"both": 2.0, "mid": 1.0, "cited": 0.5, "far": 0.25}


def built_neighbourhood(db: Path, project: Path, home: Path, query: str) -> dict[str, Any]:
    """The graph enabled and built, then the neighbourhood `query`'s first Page result gets."""
    with Wiki(db) as wiki:
        wiki.set_graph_enabled(True)
        wiki.build_graph()
    hood: dict[str, Any] = ask(query, project, home=home)["graph"][0]["neighborhood"]
    return hood


def test_a_table_of_contents_does_not_head_every_related_list(tmp_path: Path) -> None:
    """A Page linking to 64 Pages (a table of contents) neighbours the seed and three of its
    neighbours: 1 + 3 × 0.25 = 1.75, scaled by NAV_LINKS / 64 = 0.5, so the seed's own
    neighbours come first; it was first at 1.75. A Page of few links keeps its score."""
    project, db, home = new_project(tmp_path)
    chapters = [f"ch{i:02}" for i in range(64)]
    toc = " ".join(f"[[{slug}]]" for slug in chapters)
    put_pages(
        db,
        [
            page("contents", "Contents", toc),
            page("note", "Note", "about [[ch00]]"),
            page("ch00", "Seed topic", "see [[ch01]], [[ch02]] and [[ch03]]"),
            *(page(slug, slug.upper(), "a chapter") for slug in chapters[1:]),
        ],
    )
    hood = built_neighbourhood(db, project, home, "seed topic")
    assert hood["nodes"][0]["identifier"] == "ch00"
    ranked = [(n["identifier"], n["score"]) for n in hood["nodes"][1:]]
    assert ranked[:5] == [
        ("ch01", 1.25), ("ch02", 1.25), ("ch03", 1.25), ("note", 1.0), ("contents", 0.875)
    ]  # fmt: skip
    # The other chapters share the table of contents with the seed: one common neighbour.
    assert {score for _slug, score in ranked[5:]} == {0.25}


def test_preset_cancel_raises_memory_cancelled(tmp_path: Path) -> None:
    """A query whose deadline already passed stops with MemoryCancelled."""
    project, db, home = new_project(tmp_path)
    put_pages(db, [page("a", "Alpha", "alpha")])
    event = threading.Event()
    event.set()
    with pytest.raises(MemoryCancelled):
        ask("alpha", project, home=home, cancelled=event)


def test_a_hindi_word_finds_the_pages_that_hold_it(tmp_path: Path) -> None:
    """A Devanagari word is one term, vowel signs and viramas included: `परीक्षण` (testing)
    finds its Page, not the one that says only `प्रमाणपत्र` (certificate), which shares some
    of its letters (format 6 split both words at every sign and matched them by the pieces)."""
    project, db, home = new_project(tmp_path)
    put_among_filler(
        db,
        page("testing", "परीक्षण", "हर परीक्षण से पहले कैश साफ़ करें।"),
        page("certificates", "प्रमाणपत्र", "सर्वर का प्रमाणपत्र हर साल बदलें।"),
    )
    assert ids(ask("परीक्षण", project, home=home)) == ["testing"]
    assert ids(ask("प्रमाणपत्र बदलें", project, home=home)) == ["certificates"]
