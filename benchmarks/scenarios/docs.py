"""Documentation answers: what an agent reads when it asks lwc's memory about real docs.

The public development set `docs/` in the shared data folder (pydantic, cargo and jest
documentation, 225 pages, 120 questions, each with its gold page and section and the key
spans a useful answer must contain; its README defines the run, every figure and both
baselines). Per corpus, in a scratch directory with a scratch HOME: the real `lwc init
--no-git-exclude` and `lwc page import NAME/pages.jsonl`, then every question verbatim to one
long-lived `lwc serve --mcp --path WIKI` over stdio (the harness's client): `lwc_explore`
with `mode: memory, scope: project`, every other argument at its default (`--max-tokens` sets
`maxTokens`, for exploration). The text block echoes the Wiki's path, so its length is fixed
(`WIKI_PATH_CHARS`).

Figures (`docs_metrics`), per corpus and pooled: page@1/@3 (`also` pages count), key-span
ALL/ANY recall in the bodies (each on its own, whitespace collapsed, case kept), how often the
gold page's body is sent and then holds every span, passages per cut page, passage characters
(mean, median, share under 200), heading-path bytes over the cut bodies, orphans by kind,
share of passages ending cut, text-block bytes (mean / p90 / max) and their split.

Same-run baselines (`docs_baselines`): section BM25 and paragraph BM25 with `bm25s`, each at
B_body (lwc's mean body characters on that corpus) and B_bytes (B_body scaled once so their
mean text block matches lwc's).

Targets (issue 37), on the pooled default run (all three corpora, every question, default
`maxTokens`, baselines on; any other run prints them as indicative only): spans ALL ≥ section
BM25 at B_bytes (aim 0.85); page@1 and page@3 ≥ the better baseline; mean passage ≥ 600
characters; passages under 200 characters ≤ 15 %; heading-path bytes ≤ 8 % of the cut
bodies; no orphan passage; text block ≤ 11,000 bytes; page bodies ≥ 65 % of the text block.

`--show N` prints N whole answers (spread over the run), `--dump DIR` writes every one, with
where its key spans went (`docs_report.diagnose`). Needs the `bench` extra for the baselines.
Exit status: 0 targets met (or indicative), 1 a target missed, 2 set-up error.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final

import attrs

from benchmarks.fixtures import Log, logger, lwc_argv, private_env, scratch
from benchmarks.messages import INITIALIZED, initialize
from benchmarks.scenarios import docs_baselines as baselines
from benchmarks.scenarios.docs_corpus import Page, Question, load, paragraphs, sections
from benchmarks.scenarios.docs_metrics import Reading, lwc_reading, summarize
from benchmarks.scenarios.docs_report import (
    Diagnosis,
    corpus_table,
    diagnose,
    diagnosis_table,
    pooled_table,
    render,
    shape,
    shape_lines,
    split_line,
)
from benchmarks.scenarios.memory import Session
from benchmarks.table import machine, machine_line

CORPORA: Final = ("pydantic", "cargo", "jest")
WIKI_PATH_CHARS: Final = 48
"""The Wiki's canonical path is padded to this length (the text block echoes it)."""
QUICK: Final = ("jest", 10)
"""`--quick`: this corpus, its first questions."""
MAX_BYTES: Final = 11_000
LWC: Final = "lwc"


def data_dir() -> Path:
    """`shared/data/docs` beside the checkout (or beside the folder of worktrees)."""
    repo = Path(__file__).resolve().parents[2]
    for base in (repo.parent, repo.parent.parent):
        if (base / "shared" / "data" / "docs").is_dir():
            return base / "shared" / "data" / "docs"
    return repo.parent / "shared" / "data" / "docs"


class SetupError(Exception):
    """The run could not start (data, lwc, Wiki); exit 2."""


@attrs.frozen
class Corpus:
    name: str
    pages: list[Page]
    questions: list[Question]
    texts: list[str]
    """lwc's text block for each question."""
    readings: list[Reading]
    seconds: float


def wiki_path(root: Path) -> Path:
    """A Wiki folder in `root` whose canonical path has `WIKI_PATH_CHARS` characters (when
    `root` is short enough)."""
    root = root.resolve()
    pad = WIKI_PATH_CHARS - len(str(root)) - len("/wiki")
    return root / ("wiki" + "-" * max(pad, 0))


def _lwc(args: Sequence[str], wiki: Path, env: dict[str, str]) -> Any:
    proc = subprocess.run(
        [*lwc_argv(), *args], cwd=wiki, env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SetupError(f"lwc {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout.splitlines()[-1]) if proc.stdout.strip() else None


def ask(folder: Path, pages: list[Page], questions: Sequence[Question],
        max_tokens: int | None, log: Log) -> tuple[list[str], float]:  # fmt: skip
    """Import `folder`'s pages into a fresh Wiki and ask every question: the text blocks and
    the seconds the questions took."""
    texts: list[str] = []
    with scratch("lwc-docs-") as root:
        home, wiki = root / "home", wiki_path(root)
        home.mkdir()
        wiki.mkdir()
        env = private_env(home)
        _lwc(["init", "--no-git-exclude"], wiki, env)
        imported = _lwc(["page", "import", str(folder / "pages.jsonl")], wiki, env)
        if imported.get("created") != len(pages):
            raise SetupError(f"{folder.name}: import created {imported}, not {len(pages)} pages")
        log(f"{folder.name}: {len(pages)} pages imported into a Wiki at {len(str(wiki))} chars")
        session = Session(wiki, home)
        try:
            session.call("initialize", initialize(0)["params"])
            session.notify(INITIALIZED)
            started = time.perf_counter()
            for q in questions:
                arguments: dict[str, Any] = {
                    "query": q.text, "projectPath": str(wiki), "mode": "memory",
                    "scope": "project",
                }  # fmt: skip
                if max_tokens is not None:
                    arguments["maxTokens"] = max_tokens
                _ms, reply = session.call(
                    "tools/call", {"name": "lwc_explore", "arguments": arguments}
                )
                result = reply.get("result") or {}
                if result.get("isError") or "content" not in result:
                    raise SetupError(f"{q.qid}: lwc_explore failed: {json.dumps(reply)[:500]}")
                texts.append(result["content"][0]["text"])
            took = time.perf_counter() - started
        finally:
            session.close()
    return texts, took


def run_lwc(folder: Path, limit: int | None, max_tokens: int | None, log: Log) -> Corpus:
    pages, questions = load(folder)
    questions = questions[:limit] if limit else questions
    texts, took = ask(folder, pages, questions, max_tokens, log)
    return Corpus(folder.name, pages, questions, texts, [lwc_reading(t) for t in texts], took)


def run_baselines(corpus: Corpus, log: Log) -> tuple[dict[str, list[Reading]], dict[str, int]]:
    """Section and paragraph BM25 at B_body and B_bytes for `corpus`'s questions: their
    readings by system name, and the budgets (characters) by name."""
    by_slug = {p.slug: p for p in corpus.pages}
    lwc = summarize(corpus.questions, corpus.readings)
    b_body = round(lwc["body_chars"])
    out: dict[str, list[Reading]] = {}
    budgets: dict[str, int] = {"B_body": b_body}
    for name, cut in (("section", sections), ("paragraph", paragraphs)):
        chunks = [c for page in corpus.pages for c in cut(page)]
        rank = baselines.ranker(corpus.pages, chunks)
        orders = [rank(q.text) for q in corpus.questions]
        at_body = [baselines.reading(by_slug, chunks, o, b_body) for o in orders]
        mean_bytes = sum(r.split.total for r in at_body) / len(at_body)
        b_bytes = round(b_body * lwc["text_bytes"] / mean_bytes)
        out[f"{name} BM25 @ B_body"] = at_body
        out[f"{name} BM25 @ B_bytes"] = [
            baselines.reading(by_slug, chunks, o, b_bytes) for o in orders
        ]
        budgets[f"B_bytes {name}"] = b_bytes
        log(f"{corpus.name}: {name} BM25 over {len(chunks):,} chunks, B_body {b_body:,}, "
            f"B_bytes {b_bytes:,} characters")  # fmt: skip
    return out, budgets


def targets(pooled: dict[str, dict[str, Any]]) -> dict[str, bool | None]:
    """Issue 37's targets on pooled figures (None: no baseline to compare with)."""
    lwc = pooled[LWC]
    base = {k: v for k, v in pooled.items() if "BM25" in k}
    section = base.get("section BM25 @ B_bytes")

    def vs(key: str) -> bool | None:
        return lwc[key] >= max(f[key] for f in base.values()) if base else None

    return {
        "spans ALL >= section BM25 @ B_bytes": (
            lwc["spans_all"] >= section["spans_all"] if section else None
        ),
        "page@1 >= the better BM25": vs("page@1"),
        "page@3 >= the better BM25": vs("page@3"),
        "mean passage >= 600 characters": lwc["passage_mean"] >= 600,
        "passages under 200 characters <= 15%": lwc["under_200"] <= 0.15,
        "heading-path bytes <= 8% of the cut bodies": lwc["path_share"] <= 0.08,
        "no orphan passage": lwc["orphans"] == 0,
        f"text block <= {MAX_BYTES:,} bytes": lwc["text_bytes_max"] <= MAX_BYTES,
        "page bodies >= 65% of the text block": lwc["split"]["bodies"] >= 0.65,
    }


def _spread(count: int, n: int) -> list[int]:
    """`n` indexes spread evenly over `count` items."""
    n = min(n, count)
    return sorted({round(i * count / n) for i in range(n)}) if n else []


def figures(runs: Sequence[Corpus], extra: dict[str, dict[str, list[Reading]]]) -> dict[str, Any]:
    """Every system's figures per corpus and pooled."""
    per_corpus: dict[str, dict[str, dict[str, Any]]] = {}
    pooled_readings: dict[str, list[Reading]] = {}
    questions: list[Question] = []
    for corpus in runs:
        systems = {LWC: corpus.readings, **extra.get(corpus.name, {})}
        per_corpus[corpus.name] = {
            name: summarize(corpus.questions, readings) for name, readings in systems.items()
        }
        for name, readings in systems.items():
            pooled_readings.setdefault(name, []).extend(readings)
        questions += corpus.questions
    pooled = {name: summarize(questions, r) for name, r in pooled_readings.items()}
    return {"per_corpus": per_corpus, "pooled": pooled}


def _clean(value: Any) -> Any:
    """NaN as None, for JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench docs", description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--data", type=Path, default=data_dir(), help="the docs data folder")
    add(
        "--corpus",
        action="append",
        metavar="NAME",
        help=f"a corpus to run (repeatable; default: {', '.join(CORPORA)})",
    )
    add(
        "--questions",
        type=int,
        default=None,
        metavar="N",
        help="only the first N questions of each corpus",
    )
    add("--quick", action="store_true", help=f"{QUICK[0]} only, its first {QUICK[1]} questions")
    add("--max-tokens", type=int, default=None, help="lwc_explore's maxTokens (default: its own)")
    add("--no-baselines", action="store_true", help="lwc's figures only (no bm25s needed)")
    add("--show", type=int, default=0, metavar="N", help="print N whole answers, spread out")
    add(
        "--dump",
        type=Path,
        default=None,
        metavar="DIR",
        help="write every answer to DIR: ID.txt as a person reads it, ID.json as sent",
    )
    add("--json", action="store_true", help="print the figures as JSON")
    return parser  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.questions is not None and args.questions < 1:
        parser.error("--questions: at least 1")
    corpora = [QUICK[0]] if args.quick else args.corpus or list(CORPORA)
    limit = QUICK[1] if args.quick else args.questions
    log = logger("docs", quiet=args.json)
    try:
        missing = [c for c in corpora if not (args.data / c / "questions.jsonl").is_file()]
        if missing:
            raise SetupError(f"no corpus {', '.join(missing)} in {args.data}")
        if not args.no_baselines:
            try:
                import bm25s  # noqa: F401
                import Stemmer  # noqa: F401
            except ImportError as exc:
                raise SetupError(
                    f"needs the bench extra (pip install -e '.[bench]'): {exc}"
                ) from None
        runs = [run_lwc(args.data / c, limit, args.max_tokens, log) for c in corpora]
        extra: dict[str, dict[str, list[Reading]]] = {}
        budgets: dict[str, dict[str, int]] = {}
        if not args.no_baselines:
            for corpus in runs:
                extra[corpus.name], budgets[corpus.name] = run_baselines(corpus, log)
    except SetupError as exc:
        print(f"bench docs: {exc}", file=sys.stderr)
        return 2
    default = (
        set(corpora) == set(CORPORA) and limit is None and args.max_tokens is None
        and not args.no_baselines
    )  # fmt: skip
    diagnoses = {
        c.name: [
            diagnose(q, next(p for p in c.pages if p.slug == q.slug), r)
            for q, r in zip(c.questions, c.readings, strict=True)
        ]
        for c in runs
    }
    if args.dump:
        dump(args.dump, runs, diagnoses)
    result = evaluate(runs, extra, diagnoses)
    result.update(budgets=budgets, judged=default, max_tokens=args.max_tokens)
    if args.json:
        print(json.dumps(_clean(result), indent=2, ensure_ascii=False))
    else:
        report(result, runs, diagnoses, args.show)
    missed = [name for name, ok in result["targets"].items() if ok is False]
    return 1 if default and missed else 0


def evaluate(runs: Sequence[Corpus], extra: dict[str, dict[str, list[Reading]]],
             diagnoses: dict[str, list[Diagnosis]]) -> dict[str, Any]:  # fmt: skip
    """The figures, the targets, where the spans went and the run's record."""
    result = figures(runs, extra)
    lwc = result["pooled"][LWC]
    everyone = [d for ds in diagnoses.values() for d in ds]
    result.update(
        targets=targets(result["pooled"]),
        aim_spans_all=lwc["spans_all"] >= 0.85,
        shape=shape(everyone, [r for c in runs for r in c.readings], lwc["body_chars"]),
        questions={
            c.name: [
                {"id": q.qid, **attrs.asdict(d)}
                for q, d in zip(c.questions, diagnoses[c.name], strict=True)
            ]
            for c in runs
        },
        baseline_versions=_versions() if extra else {},
        wiki_path_chars=WIKI_PATH_CHARS,
        seconds_per_question=sum(c.seconds for c in runs) / sum(len(c.questions) for c in runs),
        machine=machine(),
    )
    return result


def _versions() -> dict[str, str]:
    return {dist: version(dist) for dist in ("bm25s", "PyStemmer")}


def dump(folder: Path, runs: Sequence[Corpus], diagnoses: dict[str, list[Diagnosis]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for corpus in runs:
        for q, text, d in zip(corpus.questions, corpus.texts, diagnoses[corpus.name], strict=True):
            (folder / f"{q.qid}.txt").write_text(render(q, text, d), encoding="utf-8")
            (folder / f"{q.qid}.json").write_text(text + "\n", encoding="utf-8")


def report(result: dict[str, Any], runs: Sequence[Corpus],
           diagnoses: dict[str, list[Diagnosis]], show: int) -> None:  # fmt: skip
    pooled = result["pooled"]
    n = pooled[LWC]["questions"]
    budget = result["max_tokens"] or "default"
    print(f"docs: {n} questions ({', '.join(c.name for c in runs)}), maxTokens {budget}, "
          f"one lwc serve --mcp per corpus")  # fmt: skip
    print()
    print(pooled_table(pooled))
    print()
    print(corpus_table(result["per_corpus"]))
    print()
    for name, b in result["budgets"].items():
        print(f"{name} budgets (characters): " + ", ".join(f"{k} {v:,}" for k, v in b.items()))
    for name, systems in result["per_corpus"].items():
        print(f"lwc text block, {name}: {split_line(systems[LWC])}")
    print(f"lwc text block, pooled: {split_line(pooled[LWC])}")
    print()
    print(diagnosis_table(diagnoses))
    for line in shape_lines(result["shape"], pooled[LWC]["body_chars"], n):
        print(line)
    if result["baseline_versions"]:
        versions = ", ".join(f"{k} {v}" for k, v in result["baseline_versions"].items())
        print(f"baselines: {versions} (the data set's README used bm25s 0.3.16, PyStemmer 3.1.0)")
    print()
    state = "judged" if result["judged"] else "indicative only (not the default full run)"
    print(f"targets ({state}):")
    for name, ok in result["targets"].items():
        print(f"  {'n/a ' if ok is None else 'met ' if ok else 'MISS'}  {name}")
    spans = pooled[LWC]["spans_all"]
    print(f"  aim: spans ALL >= 0.85: {spans:.2f}")
    print(f"{result['seconds_per_question'] * 1000:.0f} ms a question")
    print(machine_line(result["machine"]))
    every = [(q, t, d) for c in runs
             for q, t, d in zip(c.questions, c.texts, diagnoses[c.name], strict=True)]  # fmt: skip
    for i in _spread(len(every), show):
        print()
        print(render(*every[i]), end="")
