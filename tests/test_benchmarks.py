"""The benchmark harness: every registered scenario runs by name; the shared helpers compute
what their docstrings say (the scenarios themselves run in tests/test_soak.py)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest

from benchmarks.registry import SCENARIOS, find
from benchmarks.scenarios import cjk
from benchmarks.scenarios.docs import main as docs_main
from benchmarks.scenarios.docs_baselines import reading as baseline_reading
from benchmarks.scenarios.docs_corpus import Page as DocsPage
from benchmarks.scenarios.docs_corpus import Question as DocsQuestion
from benchmarks.scenarios.docs_corpus import gold_section, paragraphs, sections, text_of
from benchmarks.scenarios.docs_metrics import lwc_reading, summarize
from benchmarks.scenarios.soak_verdicts import verdicts
from benchmarks.stats import percentile
from benchmarks.table import markdown_table

if TYPE_CHECKING:
    from benchmarks.scenarios.soak_workload import Soak

REPO = Path(__file__).resolve().parents[1]


def test_every_scenario_has_a_main_and_a_docstring() -> None:
    """Each registered name imports a module with main(argv) and says what it measures."""
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS)
    for scenario in SCENARIOS:
        main = scenario.main()
        assert list(inspect.signature(main).parameters) == ["argv"], scenario.name
        module = sys.modules[main.__module__]
        assert module.__doc__, scenario.name
        assert module.__doc__.strip(), scenario.name
    assert find("soak") is not None
    assert find("no-such-scenario") is None


def test_bench_lists_every_scenario_and_refuses_unknown_names() -> None:
    """`scripts/bench --list` names every scenario; an unknown name exits 2."""
    listed = subprocess.run(
        [str(REPO / "scripts" / "bench"), "--list"], capture_output=True, text=True, check=True
    )
    for scenario in SCENARIOS:
        assert f"  {scenario.name}  " in listed.stdout
    unknown = subprocess.run(
        [str(REPO / "scripts" / "bench"), "no-such-scenario"], capture_output=True, text=True
    )
    assert unknown.returncode == 2
    assert "no scenario" in unknown.stderr


@pytest.mark.parametrize(
    ("q", "expected"), [(0.5, 5.0), (0.9, 9.0), (0.99, 10.0), (1.0, 10.0), (0.01, 1.0)]
)
def test_percentile_is_nearest_rank(q: float, expected: float) -> None:
    """The smallest value with at least q·n values at or below it."""
    assert percentile([float(v) for v in range(10, 0, -1)], q) == expected


def test_markdown_table_pads_and_aligns() -> None:
    """Columns are padded to their widest cell; "r" columns are right-aligned."""
    table = markdown_table(["name", "n"], [["a", 1], ["bbb", 22]], align="lr")
    assert table.splitlines() == [
        "| name |  n |",
        "|------|---:|",
        "| a    |  1 |",
        "| bbb  | 22 |",
    ]


# -- scripts/bench docs: the figures, each against a value worked out by hand -----------------

_GUIDE = (
    "[…]\n\n"
    "§ Guide › Install\nRun the installer with these flags:\n\n[…]\n\n"
    "§ Guide › Tips\n:::tip\n\n[…]\n\n"
    "§ Usage\n\n[…]\n\n"
    "§ Usage\nCall `run()` to start;  it returns the\nresult code.\n\n:::\n\n[…]\n\n"
    "§ Usage\nOptions are many …"
)
_FAQ = "Use `--Force` to   overwrite.\n"


def _answer() -> str:
    """An lwc_explore text block: `guide` sent cut (five passages), `faq` whole."""
    row = {"scope": "project", "type": "page", "title": "T", "snippet": "…", "rank": -1.0}
    page = {"scope": "project", "title": "T", "links": []}
    answer = {
        "memory": {
            "state": "ready",
            "results": [{**row, "identifier": "guide"}, {**row, "identifier": "faq"}],
            "pages": [
                {
                    **page,
                    "slug": "guide",
                    "body": _GUIDE,
                    "truncated": True,
                    "outline": ["## Install", "## Usage"],
                    "more": "[[guide]]",
                },
                {**page, "slug": "faq", "body": _FAQ, "truncated": False},
            ],
        },
        "projectPath": "/w",
    }
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


def test_docs_lwc_passages_orphans_and_spans() -> None:
    """lwc's cut body splits on `[…]` lines; `§ ` lines are heading path; orphans by kind
    (a closing `:::` introduces nothing); spans match with whitespace collapsed, case kept."""
    reading = lwc_reading(_answer())
    texts = [p.text for p in reading.passages]
    assert texts == [
        "Run the installer with these flags:",
        ":::tip",
        "",
        "Call `run()` to start;  it returns the\nresult code.\n\n:::",
        "Options are many …",
    ]
    assert [p.orphan() for p in reading.passages] == ["colon", "opener", "heading", None, None]
    # "§ Guide › Install" is 20 UTF-8 bytes (§ and › are 2 and 3), "§ Guide › Tips" 17,
    # "§ Usage" 8; each line with its newline: 21 + 18 + 9 + 9 + 9.
    assert [p.path_bytes for p in reading.passages] == [21, 18, 9, 9, 9]
    assert [p.elided_after for p in reading.passages] == [True, True, True, True, False]
    assert reading.split.total == len(_answer().encode())
    bodies = sum(len(json.dumps(b, ensure_ascii=False).encode()) for b in (_GUIDE, _FAQ))
    assert reading.split.bodies == bodies

    q1 = DocsQuestion(
        "q1", "?", "faq", "S", ("it returns the result code", "use `--Force`"), "how-to"
    )
    q2 = DocsQuestion("q2", "?", "faq", "S", ("Use `--Force` to overwrite.",), "how-to", ("guide",))
    f = summarize([q1, q2], [reading, reading])
    assert (f["page@1"], f["page@3"]) == (0.5, 1.0)  # q1's faq is second; q2 counts `also`
    assert (f["spans_all"], f["spans_any"]) == (0.5, 1.0)  # q1 misses the lowercase "use"
    assert (f["gold_sent"], f["gold_all_when_sent"]) == (1.0, 0.5)
    assert f["passages_per_cut_page"] == 5.0
    # 35 + 6 + 0 + 56 + 18 characters over five passages, the third one being only a path.
    assert (f["passage_mean"], f["passage_median"], f["under_200"]) == (23.0, 18, 1.0)
    assert f["path_share"] == 66 * 2 / (2 * len(_GUIDE.encode()))
    assert (f["orphans"], f["orphans_colon"], f["orphans_opener"], f["orphans_heading"]) == (
        6, 2, 2, 2,
    )  # fmt: skip
    assert f["cut_share"] == 0.2


_PAGE = (
    "Intro line.\n\n"
    "# Tool {#tool}\n\nInstall it:\n\n```sh\n# not a heading\n\nmake install\n```\n\n"
    "## Use ##\n\nRun it.\n\nThen stop.\n"
)


def test_docs_sections_paragraphs_and_a_baseline_answer() -> None:
    """Markdown cut at ATX headings outside fences (anchors and closing #s dropped), blank-line
    paragraphs with a fence whole; a baseline packs chunks to its budget, cuts the last, and
    an elision follows a chunk unless the next one returned is its successor."""
    page = DocsPage("p", "P", _PAGE)
    cut = sections(page)
    assert [(c.level, c.path, c.head) for c in cut] == [
        (0, (), 0), (1, ("Tool",), 14), (2, ("Tool", "Use"), 9),
    ]  # fmt: skip
    paras = paragraphs(page)
    assert [text_of(page, c) for c in paras] == [
        "Intro line.", "Install it:", "```sh\n# not a heading\n\nmake install\n```", "Run it.",
        "Then stop.",
    ]  # fmt: skip
    assert gold_section(page, "Tool") == _PAGE[_PAGE.index("# Tool") :].rstrip()

    # 11 + 7 characters whole, then 7 of "Then stop." to reach 25.
    answer = baseline_reading({"p": page}, paras, [1, 3, 4, 0, 2], 25)
    assert [(p.text, p.orphan(), p.cut) for p in answer.passages] == [
        ("Install it:", "colon", False), ("Run it.", None, False), ("Then st", None, True),
    ]  # fmt: skip
    assert answer.bodies == (("p", "Install it:\n\n[…]\n\nRun it.\n\nThen st"),)
    assert answer.ranking == ("p",)

    whole = baseline_reading({"p": page}, cut, [1, 2, 0], 1000)
    assert [p.elided_after for p in whole.passages] == [False, True, False]
    assert [p.path_bytes for p in whole.passages] == [15, 10, 0]  # "# Tool {#tool}", "## Use ##"
    assert whole.passages[1].text == "Run it.\n\nThen stop."


def test_docs_scenario_asks_the_real_lwc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bench docs` imports a corpus with the real lwc, asks it over stdio and reports the
    figures and whole answers (lwc only: the test extra has no bm25s)."""
    folder = tmp_path / "data" / "tiny"
    folder.mkdir(parents=True)
    pages = [
        {"slug": "install", "title": "Installing", "body": "# Installing\n\n## Linux\n\n"
         "Run `tool setup --system` as root to install the daemon.\n"},
        {"slug": "colors", "title": "Colours", "body": "Set `theme = dark` in the config file.\n"},
    ]  # fmt: skip
    questions = [
        {"id": "t-1", "question": "how do I install the daemon on linux", "slug": "install",
         "section": "Linux", "spans": ["Run `tool setup --system` as root"], "kind": "how-to"},
        {"id": "t-2", "question": "dark theme colours", "slug": "colors", "section": "Linux",
         "spans": ["Set `theme = dark`"], "kind": "how-to"},
    ]  # fmt: skip
    for name, rows in (("pages", pages), ("questions", questions)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["--data", str(folder.parent), "--corpus", "tiny", "--no-baselines", "--json"]
    assert docs_main([*argv, "--dump", str(tmp_path / "dump")]) == 0
    result = json.loads(capsys.readouterr().out)
    lwc = result["pooled"]["lwc"]
    assert (lwc["questions"], lwc["page@1"], lwc["spans_all"]) == (2, 1.0, 1.0)
    assert lwc["split"]["bodies"] > 0
    assert [q["verdict"] for q in result["questions"]["tiny"]] == ["all spans", "all spans"]
    shown = (tmp_path / "dump" / "t-1.txt").read_text()
    assert "Q: how do I install the daemon on linux" in shown
    assert "Run `tool setup --system` as root" in shown


def test_cjk_scenario_asks_every_wiki(capsys: pytest.CaptureFixture[str]) -> None:
    """`bench cjk` imports the Chinese, English and Hindi Wikis with the real lwc, asks each
    over stdio, and its checks hold on a small run; the Wikis say the same, word for word."""
    chinese, english, hindi = (cjk.pages(2, lang) for lang in range(3))
    assert (
        [p["slug"] for p in chinese] == [p["slug"] for p in english] == [p["slug"] for p in hindi]
    )
    assert (
        chinese[0]["body"].count("。")
        == english[0]["body"].count(".")
        == hindi[0]["body"].count("।")
    )
    assert cjk.main(["--pages", "3", "--questions", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [run["wiki"] for run in result["runs"]] == ["chinese", "english", "hindi"]
    assert set(result["ratios"]) == {"chinese", "hindi"}
    assert all(run["without_pages"] == 0 for run in result["runs"])


def test_a_benchmark_server_runs_this_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `lwc serve` a memory, docs or answers benchmark starts imports lwc_trio from the
    checkout the benchmark runs from (as its own `lwc` commands do), not from whichever
    checkout the interpreter's venv installed: a run from another worktree measures that
    worktree. The client is replaced by a recorder of what it would start."""
    from benchmarks.scenarios import memory

    started: dict[str, dict[str, str]] = {}

    class Recorder:
        def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path, name: str) -> None:
            started["env"] = env

    monkeypatch.setattr(memory, "StdioClient", Recorder)
    memory.Session(tmp_path, tmp_path / "home")
    # `-S`: without the venv's site-packages, where an editable install of any checkout
    # would answer; only what the environment points at is found.
    found = subprocess.run(
        [sys.executable, "-S", "-c", "import lwc_trio; print(lwc_trio.__file__)"],
        env=started["env"], cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(found.stdout.strip()).is_relative_to(REPO)


def _soak_sample(calls: int, fds: int, threads: int, memory: int) -> dict[str, object]:
    return {
        "calls": calls,
        "rss_mb": 40.0,
        "fds": fds,
        "threads": threads,
        "memory_threads": memory,
        "zombies": 0,
        "codegraph": 0,
        "codegraph_pids": [],
    }


def _fd_verdict(shape: list[tuple[int, int, int]]) -> dict[str, Any]:
    """The soak's fd verdict on samples of `(fds, threads, memory-lane threads)`, 100 calls
    apart, a memory-only run (a stand-in for the run's workload: the verdicts read its
    counters only)."""
    samples = [_soak_sample(100 * i, *sample) for i, sample in enumerate(shape)]
    soak = SimpleNamespace(
        fx=SimpleNamespace(has_code=False),
        checker=SimpleNamespace(checked=1, error_count=0),
        first_code_call=None,
    )
    exit_info = {"code": 0, "live": 0, "gone_s": 0.0, "stderr_bytes": 0}
    every = verdicts(samples, 100, cast("Soak", soak), exit_info)
    (found,) = [v for v in every if v["resource"] == "open fds"]
    return found


def test_soak_fds_that_follow_the_memory_lane_s_threads_are_no_leak() -> None:
    """Under load the memory lane brings in its spare threads late in a run, each with its
    pooled connection (a loaded machine's run: 16 fds at 6 threads, 1 of the memory lane,
    then 19 at 10, 4 of them): no leak. Descriptors that grow while the memory lane does
    not are one, whatever other threads come (they hold no connection)."""
    assert _fd_verdict([(16, 6, 1)] * 6 + [(19, 10, 4)] * 5)["pass"]
    assert not _fd_verdict([(16, 6, 1)] * 6 + [(16 + i, 6, 1) for i in range(1, 6)])["pass"]
    assert not _fd_verdict([(16, 6, 1)] * 6 + [(22, 10, 1)] * 5)["pass"]
