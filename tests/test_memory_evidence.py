"""Pages ranked with their sections' evidence (SPEC §4 "Ranking uses section evidence";
`query/evidence.py`), through the engine the memory worker runs, on a real store."""

from __future__ import annotations

from pathlib import Path

from conftest_memory import add_source, ask, ids, new_project, page, put_pages, raw_scores

from lwc_trio.memory.index.inputs import PageInput

QUERY = "rollback migration lockfile"


def _filler(n: int, words: int) -> str:
    return " ".join(f"topic{(n * 7 + i) % 53}" for i in range(words))


def _wiki() -> list[PageInput]:
    """Twelve short Pages that each mention the query's three words in three different
    sections, and one long Page with a section about exactly the three together, among
    sections of other things: the whole-Page score ranks it below the twelve."""
    pages = [
        page(
            f"mention-{n:02d}",
            f"Notes {n}",
            f"## Overview\n\nThe rollback is mentioned here. {_filler(n, 12)}\n\n"
            f"## Details\n\nA migration happens. {_filler(n + 1, 12)}\n\n"
            f"## More\n\nThe lockfile is kept. {_filler(n + 2, 12)}\n",
        )
        for n in range(12)
    ]
    long_sections = "".join(f"## Part {k}\n\n{_filler(100 + k, 120)}\n\n" for k in range(40))
    pages.append(
        page(
            "answer",
            "Operations guide",
            f"{long_sections}## Rolling back a migration\n\n"
            "To rollback a migration, restore the lockfile first: the rollback reads the "
            "lockfile the migration wrote, and a migration without its lockfile has no "
            "rollback.\n",
        )
    )
    return pages


def test_a_page_whose_one_section_answers_comes_first_from_below_the_results(
    tmp_path: Path,
) -> None:
    """The whole-Page score puts the answering Page below the eight results; its section's
    evidence brings it to the first place, and of its body, too long to come whole, that
    section comes."""
    project, db, home = new_project(tmp_path)
    put_pages(db, _wiki())
    assert list(raw_scores(db, QUERY)).index("answer") >= 8
    answer = ask(QUERY, project, home=home, scope="project")
    assert ids(answer)[0] == "answer"
    first = answer["pages"][0]
    assert first["truncated"] is True
    assert "restore the lockfile first" in first["body"]


def _prefixes(project: Path, home: Path, query: str) -> list[tuple[str, float, str]]:
    """Each `maxDocuments` from 1 to 19 gives the first of 20's results (identifiers, ranks
    and match kinds); returns 20's."""
    rows = {
        n: [
            (r["identifier"], r["rank"], r["match"])
            for r in ask(query, project, home=home, scope="project", max_documents=n)["results"]
        ]
        for n in range(1, 21)
    }
    for n in range(1, 20):
        assert rows[n] == rows[20][:n], n
    return rows[20]


def test_fewer_documents_are_the_first_of_more(tmp_path: Path) -> None:
    """Every `maxDocuments` ranks the same pool again, so a smaller one's results are the
    first of a larger one's, in the same order with the same ranks."""
    project, db, home = new_project(tmp_path)
    put_pages(db, _wiki())
    assert len(_prefixes(project, home, QUERY)) == 13


def test_a_source_and_title_fill_ups_keep_their_places_at_any_max_documents(
    tmp_path: Path,
) -> None:
    """Pages with sections, a Source and, after them, Pages found by their misspelt title
    alone: each `maxDocuments` gives the first of the next one's results."""
    project, db, home = new_project(tmp_path)
    pages = [
        page(
            f"log-{i}",
            f"Log {i}",
            f"## A\n\nerror: kuberntes not found {i}\n\n## B\n\nother {'kuberntes ' * i}\n",
        )
        for i in range(3)
    ]
    pages += [page(f"k8s-{i}", f"Kubernetes guide {i}", "how we ship") for i in range(10)]
    pages += [page(f"filler-{i}", f"Filler {i}", "apple text") for i in range(20)]
    put_pages(db, pages)
    add_source(db, "kuberntes appears in this source too", title="src")
    _prefixes(project, home, "kuberntes")


def test_a_title_match_far_below_on_score_ranks_alike_at_any_max_documents(
    tmp_path: Path,
) -> None:
    """A Page titled as the query, whose long body puts it 50th on its score, is pulled up
    by its title to 4th place: it is found among the candidates at every `maxDocuments`."""
    project, db, home = new_project(tmp_path)
    pages = [page(f"other-{i}", f"Other {i}", f"unrelated text {i}") for i in range(200)]
    pages += [
        page(f"note-{i:02d}", f"Note {i}", "deploy " + " ".join(f"f{i}x{k}" for k in range(i)))
        for i in range(60)
    ]
    pages.append(page("deploy", "Deploy", " ".join(f"filler{k}" for k in range(400))))
    put_pages(db, pages)
    assert list(raw_scores(db, "deploy", 80)).index("deploy") >= 4 * 8
    assert ids(ask("deploy", project, home=home, scope="project"))[3] == "deploy"
    _prefixes(project, home, "deploy")
