"""Answers per token: does a memory answer hand the agent the answer, and at what cost?

The public QA set `squad-v2.0-dev-answerable.json` (SQuAD 2.0 dev, answerable questions; its
README in the shared data folder) becomes a Wiki as that README says: one Page per article
(slug from the title, title with `_` as spaces, body = the paragraphs joined by a blank line),
written with the real `lwc init` and `lwc page import FILE.jsonl`. Questions are sampled
deterministically (`--questions`, `--seed`) and each is asked through one warm
`lwc serve --mcp` over stdio with the benchmarks' raw client, at `--max-tokens` (default:
the tool's default). Per question:

- **body**: a gold answer (lowercased, whitespace collapsed) occurs in the Page bodies;
- **body+snip**: in the bodies or the result snippets;
- **strict**: the answer with up to `CONTEXT` characters of its own paragraph on each side
  (clipped to the paragraph) occurs in the bodies (short answers occur by chance elsewhere);
- **gold**: the gold article's Page is among the results;
- **tokens**: o200k tokens (`bpe-openai`, vocabulary in its wheel) of the text block, and of
  the same text with every body emptied (**metadata**).

Same-run baselines:

- **(a) today's rule**: the same answer with each result Page's body replaced by its first
  characters (15,000 a Page, 60,000 in all), as before budgets (metadata as in our answer);
- **(b) chunked BM25**: `bm25s` with PyStemmer's English stemmer and English stop-words over
  every paragraph of the Wiki; the best paragraphs until the mean body size of our answers
  (the last one cut to it): the same mean body budget.

Targets: mean tokens ≤ 1/5 of (a); body and strict recall ≥ (b)'s. Needs the `bench` extra.
Exit status: 0 targets met, 1 a target missed, 2 set-up error.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from benchmarks.fixtures import lwc_argv
from benchmarks.messages import INITIALIZED, initialize
from benchmarks.scenarios.memory import Session

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "squad"
"""Beside the checkout (`../shared/data/squad/`), where the project's public data sets live."""
FILE = "squad-v2.0-dev-answerable.json"
CONTEXT = 15
TODAY_PAGE, TODAY_TOTAL = 15_000, 60_000
_SPACE = re.compile(r"\s+")


def norm(text: str) -> str:
    return _SPACE.sub(" ", text.lower()).strip()


def slug_of(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


@attrs.frozen
class Question:
    qid: str
    text: str
    slug: str
    answers: tuple[str, ...]
    strict: tuple[str, ...]
    """Each answer with its paragraph context (normalized)."""


def load(path: Path) -> tuple[dict[str, str], dict[str, str], list[Question], list[str]]:
    """Pages (slug -> body), titles, all questions, all paragraphs."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    bodies: dict[str, str] = {}
    titles: dict[str, str] = {}
    questions: list[Question] = []
    paragraphs: list[str] = []
    for article in data:
        slug = slug_of(article["title"])
        titles[slug] = article["title"].replace("_", " ")
        contexts = [p["context"] for p in article["paragraphs"]]
        bodies[slug] = "\n\n".join(contexts)
        paragraphs.extend(contexts)
        for paragraph in article["paragraphs"]:
            ctx = paragraph["context"]
            for qa in paragraph["qas"]:
                answers = tuple(dict.fromkeys(norm(a["text"]) for a in qa["answers"]))
                strict = tuple(
                    dict.fromkeys(
                        norm(ctx[max(0, a["answer_start"] - CONTEXT) : a["answer_start"]
                                 + len(a["text"]) + CONTEXT])
                        for a in qa["answers"]
                    )
                )  # fmt: skip
                questions.append(Question(qa["id"], qa["question"], slug, answers, strict))
    return bodies, titles, questions, paragraphs


def build_wiki(root: Path, bodies: dict[str, str], titles: dict[str, str]) -> None:
    lines = [json.dumps({"slug": s, "title": titles[s], "body": b}) for s, b in bodies.items()]
    jsonl = root / "squad.jsonl"
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {**os.environ, "HOME": str(root / "home")}
    for args in (["init"], ["page", "import", str(jsonl)]):
        subprocess.run([*lwc_argv(), *args], cwd=root / "ws", env=env, check=True,
                       capture_output=True)  # fmt: skip
    jsonl.unlink()


def found(texts: Sequence[str], blob: str) -> bool:
    return any(t and t in blob for t in texts)


def today_answer(answer: dict[str, Any], bodies: dict[str, str]) -> tuple[list[str], str]:
    """Rule (a): every result Page with the first characters of its body, 15,000 each,
    60,000 in all (as before budgets), in our answer's frame; the bodies and the text."""
    copy = json.loads(json.dumps(answer))
    left = TODAY_TOTAL
    heads: list[str] = []
    pages = []
    for row in copy["memory"]["results"]:
        if row["type"] != "page" or left <= 0:
            continue
        head = bodies[row["identifier"]][: min(TODAY_PAGE, left)]
        left -= len(head)
        heads.append(head)
        pages.append({
            "scope": row["scope"], "slug": row["identifier"], "title": row["title"],
            "kind": row["kind"], "summary": row["summary"], "body": head,
            "provenance": row["provenance"], "links": [], "updatedAt": row["updatedAt"],
            "truncated": len(head) < len(bodies[row["identifier"]]),
        })  # fmt: skip
    copy["memory"]["pages"] = pages
    return heads, json.dumps(copy, ensure_ascii=False, separators=(",", ":"))


def with_bodies(answer: dict[str, Any], new: Sequence[str]) -> str:
    copy = json.loads(json.dumps(answer))
    for page, body in zip(copy["memory"]["pages"], new, strict=True):
        page["body"] = body
    return json.dumps(copy, ensure_ascii=False, separators=(",", ":"))


def bm25_baseline(paragraphs: list[str]) -> Any:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(paragraphs, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )

    def best(query: str, budget: int) -> str:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        k = min(len(paragraphs), 40)
        ids, _scores = retriever.retrieve(tokens, k=k, show_progress=False)
        parts: list[str] = []
        used = 0
        for i in ids[0]:
            text = paragraphs[int(i)]
            if used + len(text) > budget:
                parts.append(text[: budget - used])
                break
            parts.append(text)
            used += len(text) + 2
        return "\n\n".join(parts)

    return best


def pct(hits: Sequence[bool]) -> float:
    return 100.0 * sum(hits) / max(len(hits), 1)


def mean(values: Sequence[float]) -> float:
    return sum(values) / max(len(values), 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench answers", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA / FILE)
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="60 questions")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    try:
        import bm25s  # noqa: F401
        import bpe_openai
    except ImportError as exc:
        print(f"needs the bench extra (pip install -e '.[bench]'): {exc}", file=sys.stderr)
        return 2
    if not args.data.is_file():
        print(f"no data set at {args.data}", file=sys.stderr)
        return 2
    encoding = bpe_openai.get_encoding("o200k_base")

    def tokens(text: str) -> int:
        return len(encoding.encode(text))

    n = 60 if args.quick else args.questions
    bodies, titles, questions, paragraphs = load(args.data)
    sample = random.Random(args.seed).sample(questions, min(n, len(questions)))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lwc-answers-") as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "home").mkdir()
        build_wiki(root, bodies, titles)
        session = Session(root / "ws", root / "home")
        try:
            session.client.call(initialize(0))
            session.notify(INITIALIZED)
            started = time.perf_counter()
            for q in sample:
                arguments: dict[str, Any] = {"query": q.text, "projectPath": str(root / "ws")}
                if args.max_tokens is not None:
                    arguments["maxTokens"] = args.max_tokens
                _ms, reply = session.call(
                    "tools/call", {"name": "lwc_explore", "arguments": arguments}
                )
                text = reply["result"]["content"][0]["text"]
                if os.environ.get("ANSWERS_DUMP"):
                    Path(os.environ["ANSWERS_DUMP"]).write_text(text, encoding="utf-8")
                answer = json.loads(text)
                memory = answer["memory"]
                got = [p["body"] for p in memory["pages"]]
                body = norm("\n".join(got))
                snips = norm("\n".join(r["snippet"] for r in memory["results"]))
                today, today_text = today_answer(answer, bodies)
                today_blob = norm("\n".join(today))
                rows.append({
                    "body": found(q.answers, body),
                    "both": found(q.answers, body + "\n" + snips),
                    "strict": found(q.strict, body),
                    "gold": q.slug in [r["identifier"] for r in memory["results"]],
                    "first": [r["identifier"] for r in memory["results"][:1]] == [q.slug],
                    "tokens": tokens(text),
                    "bytes": len(text.encode()),
                    "meta": tokens(with_bodies(answer, [""] * len(got))),
                    "chars": sum(len(b) for b in got),
                    "a_body": found(q.answers, today_blob),
                    "a_strict": found(q.strict, today_blob),
                    "a_tokens": tokens(today_text),
                })  # fmt: skip
            asked_s = time.perf_counter() - started
        finally:
            session.close()
    budget = round(mean([r["chars"] for r in rows]))
    best = bm25_baseline(paragraphs)
    b_rows: list[dict[str, Any]] = []
    for q in sample:
        blob = best(q.text, budget)
        b_rows.append(
            {
                "body": found(q.answers, norm(blob)),
                "strict": found(q.strict, norm(blob)),
                "tokens": tokens(blob),
            }
        )
    figures: dict[str, Any] = {
        "questions": len(rows),
        "lwc": {
            "body": pct([r["body"] for r in rows]),
            "body+snippets": pct([r["both"] for r in rows]),
            "strict": pct([r["strict"] for r in rows]),
            "gold_in_results": pct([r["gold"] for r in rows]),
            "gold_first": pct([r["first"] for r in rows]),
            "tokens": mean([r["tokens"] for r in rows]),
            "max_bytes": max(r["bytes"] for r in rows),
            "metadata_tokens": mean([r["meta"] for r in rows]),
            "body_chars": budget,
        },
        "a_today": {
            "body": pct([r["a_body"] for r in rows]),
            "strict": pct([r["a_strict"] for r in rows]),
            "tokens": mean([r["a_tokens"] for r in rows]),
        },
        "b_bm25_paragraphs": {
            "body": pct([r["body"] for r in b_rows]),
            "strict": pct([r["strict"] for r in b_rows]),
            "tokens": mean([r["tokens"] for r in b_rows]),
            "body_chars": budget,
        },
        "seconds_per_question": asked_s / max(len(rows), 1),
    }
    lwc, a, b = figures["lwc"], figures["a_today"], figures["b_bm25_paragraphs"]
    checks = {
        "tokens <= 1/5 of (a)": lwc["tokens"] <= a["tokens"] / 5,
        "body recall >= (b)": lwc["body"] >= b["body"],
        "strict recall >= (b)": lwc["strict"] >= b["strict"],
    }
    figures["targets"] = checks
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"answers: {len(rows)} SQuAD questions, seed {args.seed}, one warm lwc serve --mcp")
        print("| system | body % | strict % | body+snippets % | gold in results % | tokens |")
        print("|---|---|---|---|---|---|")
        print(f"| lwc | {lwc['body']:.1f} | {lwc['strict']:.1f} | {lwc['body+snippets']:.1f} | "
              f"{lwc['gold_in_results']:.1f} (first {lwc['gold_first']:.1f}) | "
              f"{lwc['tokens']:.0f} (metadata {lwc['metadata_tokens']:.0f}) |")  # fmt: skip
        print(f"| (a) first characters | {a['body']:.1f} | {a['strict']:.1f} | | | "
              f"{a['tokens']:.0f} |")  # fmt: skip
        print(f"| (b) bm25s paragraphs, {budget} chars | {b['body']:.1f} | {b['strict']:.1f} "
              f"| | | {b['tokens']:.0f} (bodies only) |")  # fmt: skip
        print(
            f"largest text block: {lwc['max_bytes']} bytes; "
            f"{figures['seconds_per_question'] * 1000:.0f} ms a question"
        )
        for name, ok in checks.items():
            print(f"target {name}: {'met' if ok else 'MISSED'}")
    return 0 if all(checks.values()) else 1
