"""Once the graph is enabled and built, every write keeps it `ready` and exactly as a rebuild."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from conftest_memory import add_source, new_store, out_json, page, run_lwc

from lwc_trio.memory.index.graph import (
    HUB_LIMIT,
    NAV_LINKS,
    LocalRelatedness,
    Relatedness,
    build_projection,
)
from lwc_trio.memory.index.inputs import PageInput
from lwc_trio.memory.index.writer import Wiki


def projection(conn: sqlite3.Connection) -> list[tuple[str, str, float]]:
    """The stored related pairs, sorted."""
    return sorted(conn.execute("SELECT slug, related_slug, score FROM graph_related"))


def rebuilt(conn: sqlite3.Connection) -> list[tuple[str, str, float]]:
    """What a full `lwc graph build` would store now (computed and rolled back)."""
    conn.execute("BEGIN")
    try:
        build_projection(conn)
        return projection(conn)
    finally:
        conn.execute("ROLLBACK")


def graph_state(wiki: Wiki) -> str:
    """`disabled`, `pending` or `ready`."""
    return str(wiki.status()["graph"]["status"])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store with a small linked Wiki and one cited Source."""
    path = new_store(tmp_path)
    cited = add_source(path, "shared evidence for a and b")
    with Wiki(path) as wiki:
        wiki.put_pages(
            [
                page("a", "A", "see [[b]] and [[c]]", sources=(cited,)),
                page("b", "B", "back to [[a]]", sources=(cited,)),
                page("c", "C", "leaf"),
                page("d", "D", "see [[c]]"),
            ]
        )
    return path


def test_enabled_graph_is_pending_until_the_first_build(db: Path) -> None:
    """Enabling alone leaves the graph pending, writes do not build it; `graph build` does."""
    with Wiki(db) as wiki:
        wiki.set_graph_enabled(True)
        assert graph_state(wiki) == "pending"
        wiki.put_page(page("e", "E", "see [[a]]"))
        assert graph_state(wiki) == "pending"
        assert projection(wiki.conn) == []
        wiki.build_graph()
        assert graph_state(wiki) == "ready"
        assert projection(wiki.conn) == rebuilt(wiki.conn)


@pytest.mark.parametrize("size", [24, 400])
def test_every_write_keeps_a_built_graph_ready_and_exact(db: Path, size: int) -> None:
    """Page puts, removals, bulk imports and Source adds leave the graph ready, equal to a
    rebuild (24 Pages: mostly whole rebuilds; 400: the local rescoring path)."""
    rng = random.Random(14)
    slugs = [f"p{i}" for i in range(size)]
    with Wiki(db) as wiki:
        if size > 100:
            wiki.put_pages([page(s, s.upper(), f"[[{rng.choice(slugs)}]]") for s in slugs])
        wiki.set_graph_enabled(True)
        wiki.build_graph()
        cited = [add_source(db, f"evidence {i}") for i in range(3)]
        for step in range(60):
            action = rng.random()
            if action < 0.15:
                present = [row["slug"] for row in wiki.list_pages()]
                if present:
                    wiki.remove_page(rng.choice(present))
            elif action < 0.25:
                wiki.add_sources([])
                add_source(db, f"more evidence {step}")
            elif action < 0.35:
                batch = rng.sample(slugs, 4)
                wiki.put_pages([page(s, s.upper(), f"bulk [[{rng.choice(slugs)}]]") for s in batch])
            else:
                slug = rng.choice(slugs)
                targets = " ".join(f"[[{t}]]" for t in rng.sample(slugs, rng.randint(0, 3)))
                sources = tuple(rng.sample(cited, rng.randint(0, 2)))
                wiki.put_page(page(slug, slug.upper(), f"step {step} {targets}", sources=sources))
            assert graph_state(wiki) == "ready", step
            assert projection(wiki.conn) == rebuilt(wiki.conn), step


def test_a_source_crossing_the_hub_limit_rescores_its_citers(tmp_path: Path) -> None:
    """A Source cited by more than HUB_LIMIT Pages stops counting; one citation fewer and it
    counts again, for every citer: the local path must find them all."""
    path = new_store(tmp_path)
    hub = add_source(path, "cited by everyone")
    citers = [page(f"c{i:03}", f"C{i}", "x", sources=(hub,)) for i in range(HUB_LIMIT + 1)]
    others = [page(f"o{i:03}", f"O{i}", f"[[o{(i + 1) % 400:03}]]") for i in range(400)]
    with Wiki(path) as wiki:
        wiki.put_pages([*citers, *others])
        wiki.set_graph_enabled(True)
        wiki.build_graph()
        assert projection(wiki.conn) == rebuilt(wiki.conn)
        wiki.remove_page("c000")
        assert graph_state(wiki) == "ready"
        assert projection(wiki.conn) == rebuilt(wiki.conn)
        related = wiki.conn.execute(
            "SELECT COUNT(*) FROM graph_related WHERE slug = 'c001'"
        ).fetchone()[0]
        assert related == 11
        wiki.put_page(page("c000", "C0", "x", sources=(hub,)))
        assert projection(wiki.conn) == rebuilt(wiki.conn)


def test_a_navigation_page_is_rescored_exactly_as_it_changes(tmp_path: Path) -> None:
    """A table of contents crossing `NAV_LINKS` either way — also through links to Pages
    that do not exist, which count — and removed, leaves every related list as a rebuild
    would give it: its scale depends on its own links only, so the local path (400 Pages)
    rescores the lists that hold it."""
    path = new_store(tmp_path)
    others = [page(f"o{i:03}", f"O{i}", f"[[o{(i + 1) % 400:03}]]") for i in range(400)]

    def toc(count: int, missing: int = 0) -> PageInput:
        links = [f"o{i:03}" for i in range(count)] + [f"gone{i}" for i in range(missing)]
        return page("toc", "Contents", " ".join(f"[[{link}]]" for link in links))

    with Wiki(path) as wiki:
        wiki.put_pages(others)
        wiki.set_graph_enabled(True)
        wiki.build_graph()
        for count, missing in ((NAV_LINKS + 8, 0), (NAV_LINKS - 4, 8), (NAV_LINKS, 0),
                               (NAV_LINKS - 4, 8), (NAV_LINKS + 1, 0), (90, 0)):  # fmt: skip
            wiki.put_page(toc(count, missing))
            assert graph_state(wiki) == "ready"
            assert projection(wiki.conn) == rebuilt(wiki.conn), (count, missing)
        scaled = wiki.conn.execute(
            "SELECT score FROM graph_related WHERE slug = 'o001' AND related_slug = 'toc'"
        ).fetchone()[0]
        assert scaled == pytest.approx((1.0 + 2 * 0.25) * NAV_LINKS / 90)
        wiki.remove_page("toc")
        assert projection(wiki.conn) == rebuilt(wiki.conn)


def documented(conn: sqlite3.Connection) -> list[tuple[str, str, float]]:
    """The projection as docs/memory.md "Document graph" defines it, computed directly from
    the tables (no code of `graph.py`): links both ways, shared Sources, common neighbours,
    navigation Pages scaled, the best 11 of each Page."""
    pages = {row[0] for row in conn.execute("SELECT slug FROM pages")}
    near: dict[str, set[str]] = {slug: set() for slug in pages}
    counts: dict[str, int] = {}
    pairs = [(a, b) for a, b in conn.execute("SELECT from_slug, to_slug FROM links") if a != b]
    for a, _b in pairs:
        counts[a] = counts.get(a, 0) + 1
    cites: dict[str, set[str]] = {}
    for slug, source in conn.execute("SELECT page_slug, source_id FROM page_sources"):
        cites.setdefault(source, set()).add(slug)
    out = []
    for p in sorted(pages):
        score: dict[str, float] = {}
        for a, b in pairs:
            if a in pages and b in pages and p in (a, b):
                other = b if a == p else a
                score[other] = score.get(other, 0.0) + 1.0
                near[p].add(other)
        out.append((p, score))
    rows = []
    for p, score in out:
        for citers in cites.values():
            if p in citers and len(citers) <= HUB_LIMIT:
                for other in citers - {p}:
                    score[other] = score.get(other, 0.0) + 0.5
        for middle in near[p]:
            if len(near[middle]) <= HUB_LIMIT:
                for other in near[middle] - {p}:
                    score[other] = score.get(other, 0.0) + 0.25
        for other in score:
            count = min(counts.get(other, 0), 4097)
            if count > NAV_LINKS:
                score[other] = score[other] * NAV_LINKS / count
        best = sorted(score.items(), key=lambda item: (-item[1], item[0]))[:11]
        rows += [(p, other, value) for other, value in best]
    return sorted(rows)


def test_the_projection_is_the_documented_one(tmp_path: Path) -> None:
    """Random Wikis with navigation Pages (40–90 links, some to Pages that do not exist),
    Sources and ordinary Pages: the build stores exactly the documented projection — also
    where scaling a navigation Page down lets a Page past the first 11 candidates in."""
    rng = random.Random(37)
    for trial in range(6):
        path = new_store(tmp_path / str(trial))
        slugs = [f"p{i:03}" for i in range(rng.randint(30, 120))]
        sources = [add_source(path, f"evidence {trial} {i}") for i in range(3)]
        pages = []
        for slug in slugs:
            choices = [*slugs, "ghost-a", "ghost-b"]
            many = rng.randint(40, min(90, len(choices))) if rng.random() < 0.1 else 0
            targets = rng.sample(choices, many or rng.randint(0, 4))
            cited = tuple(rng.sample(sources, rng.randint(0, 1)))
            body = " ".join(f"[[{target}]]" for target in targets)
            pages.append(page(slug, slug.upper(), body, sources=cited))
        with Wiki(path) as wiki:
            wiki.put_pages(pages)
            wiki.set_graph_enabled(True)
            wiki.build_graph()
            stored = projection(wiki.conn)
            assert stored == documented(wiki.conn), trial


def test_a_list_of_navigation_candidates_is_read_in_two_rounds(tmp_path: Path) -> None:
    """A Page all of whose 260 candidates are navigation Pages: 20 it links to (1 each,
    133 links: scaled to 0.24) and 240 sharing them (0.25 each, 33 links: scaled to 0.2424,
    each still below the next one's unscaled 0.25). Its list asks for link counts twice at
    most, whichever class reads them — not a round per 11 candidates (quadratic: 20 s a
    write on 20,000 Pages of this shape) — and is the documented one."""
    path = new_store(tmp_path)
    middles = [f"m{i:02}" for i in range(20)]
    pages = [page("p", "P", " ".join(f"[[{m}]]" for m in middles))]
    for m in middles:
        pages.append(page(m, m.upper(), " ".join(f"[[gone{i}]]" for i in range(133))))
        chapter = " ".join(f"[[{m}]]" if i == 0 else f"[[gone{i}]]" for i in range(NAV_LINKS + 1))
        pages += [page(f"{m}-c{j:02}", "C", chapter) for j in range(12)]
    with Wiki(path) as wiki:
        wiki.put_pages(pages)
        for scores in (Relatedness(wiki.conn), LocalRelatedness(wiki.conn)):
            asked: list[int] = []
            scores.navigation = _counting(scores.navigation, asked)  # type: ignore[method-assign,assignment]
            rows = scores.rows(["p"])
            assert len(asked) <= 2, (type(scores).__name__, asked)
            assert rows == [row for row in documented(wiki.conn) if row[0] == "p"]


def test_a_slug_with_a_nul_character_is_counted_as_written(tmp_path: Path) -> None:
    """A store changed behind lwc's back holds a Page whose slug has a NUL character, linked
    with the Page a write touches: the write rescores it like a rebuild does (each slug is a
    bound parameter; a JSON array read by SQLite ends such a string at the NUL)."""
    path = new_store(tmp_path)
    filler = [page(f"f{i:02}", "F", "filler") for i in range(20)]
    with Wiki(path) as wiki:
        wiki.put_pages([*filler, page("x", "X", "[[y]]"), page("y", "Y", "leaf")])
        wiki.conn.execute(
            "INSERT INTO pages (slug, title, body, created_at, updated_at) "
            "VALUES ('n' || char(0) || 'ul', 'N', '', 'x', 'x')"
        )
        wiki.conn.execute("INSERT INTO links VALUES ('n' || char(0) || 'ul', 'x')")
        wiki.conn.commit()
        wiki.set_graph_enabled(True)
        wiki.build_graph()
        assert wiki.put_page(page("x", "X", "[[y]] edited")) == "updated"
        assert projection(wiki.conn) == rebuilt(wiki.conn)


def test_link_counts_take_any_iterable(tmp_path: Path) -> None:
    """Both readers of link counts give the same for a set, a list or a one-pass iterator."""
    path = new_store(tmp_path)
    with Wiki(path) as wiki:
        wiki.put_pages(
            [page("toc", "T", " ".join(f"[[t{i}]]" for i in range(40))), page("a", "A", "")]
        )
        for scores in (Relatedness(wiki.conn), LocalRelatedness(wiki.conn)):
            for given in ({"toc", "a"}, ["toc", "a"], iter(["toc", "a"])):
                assert scores.navigation(given) == {"toc": 40}, (type(scores).__name__, given)


def _counting(
    count: Callable[[Iterable[str]], dict[str, int]], asked: list[int]
) -> Callable[[Iterable[str]], dict[str, int]]:
    """`count` with each call's size appended to `asked`: a spy, the counts are real."""

    def counting(slugs: Iterable[str]) -> dict[str, int]:
        wanted = list(slugs)
        asked.append(len(wanted))
        return count(wanted)

    return counting


def test_a_disabled_graph_is_left_alone(db: Path) -> None:
    """With the graph disabled no projection is written and the state stays disabled."""
    with Wiki(db) as wiki:
        wiki.put_page(page("e", "E", "see [[a]]"))
        assert graph_state(wiki) == "disabled"
        assert projection(wiki.conn) == []


@pytest.mark.parametrize("engine", ["grafeo", "surrealdb", "enabled"])
def test_config_set_accepts_lwc_engine_names(tmp_path: Path, engine: str) -> None:
    """`lwc config set --graph grafeo|surrealdb` (LWC's values) enable the graph and, as LWC's
    `work` does, build it at once (SPEC §7: lwc runs the work and reports it done)."""
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    out_json(run_lwc("init", cwd=project, home=home))
    result = out_json(run_lwc("config", "set", "--graph", engine, cwd=project, home=home))
    assert result["changed"] is True
    assert result["graph"]["enabled"] is True
    assert result["graph"]["status"] == "ready"
    assert result["work"]["state"] == "succeeded"


def test_cli_page_put_keeps_the_graph_ready(tmp_path: Path) -> None:
    """Through the real CLI: build once, then `page put` and `page remove` keep it ready."""
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    out_json(run_lwc("init", cwd=project, home=home))
    body = project / "body.md"
    body.write_text("links to [[other]]\n", encoding="utf-8")
    put = ("page", "put", "one", "--title", "One", "--file", str(body))
    out_json(run_lwc(*put, cwd=project, home=home))
    out_json(run_lwc("config", "set", "--graph", "grafeo", cwd=project, home=home))
    out_json(run_lwc("graph", "build", cwd=project, home=home))
    for args in (
        ("page", "put", "other", "--title", "Other", "--file", str(body)),
        ("page", "remove", "one"),
    ):
        out_json(run_lwc(*args, cwd=project, home=home))
        status = out_json(run_lwc("graph", "status", cwd=project, home=home))
        assert status["stores"][0]["graph"]["status"] == "ready", args
