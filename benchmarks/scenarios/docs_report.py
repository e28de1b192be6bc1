"""What the `docs` benchmark prints: the figures' tables, where each question's key spans were
lost (`diagnose`), and whole answers as the agent reads them (`render`)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from benchmarks.scenarios.docs_corpus import Page, Question, collapse, gold_section
from benchmarks.scenarios.docs_metrics import Passage, Reading, passages_of, spans_found
from benchmarks.table import markdown_table

VERDICTS: Final = (
    "all spans",
    "gold page not in results",
    "gold page ranked, body not sent",
    "gold section not chosen",
    "gold section cut after a colon",
    "gold section cut short (…)",
    "gold section chosen, spans in parts left out",
)
"""Why a question's key spans are (not) all in the bodies, the first that applies."""


@attrs.frozen
class Diagnosis:
    verdict: str
    rank: int | None
    """The gold page's place in the results (from 1), None when absent."""
    found: tuple[bool, ...]
    """Per key span: in the bodies."""
    section_chars: int
    """Characters of the gold section (its subsections included)."""
    sent_chars: int
    """Characters of the gold section that came in its page's body (its passages' text)."""
    gold_passages: int
    """Passages of the gold page's body taken from the gold section."""


def _within(passage: Passage, region: str) -> bool:
    """The passage's text (less a cut mark or a closing fence lwc added) lies in `region`."""
    text = passage.text.removesuffix("…").rstrip()
    lines = text.splitlines()
    candidates = [text, "\n".join(lines[:-1])] if len(lines) > 1 else [text]
    return any(c.strip() and collapse(c) in region for c in candidates)


def diagnose(question: Question, page: Page, reading: Reading) -> Diagnosis:
    """Where the key spans of `question` were lost in lwc's answer, if they were."""
    gold = gold_section(page, question.section) or ""
    region = collapse(gold)
    found = tuple(spans_found(question.spans, [body for _, body in reading.bodies]))
    rank = reading.ranking.index(question.slug) + 1 if question.slug in reading.ranking else None
    body = dict(reading.bodies).get(question.slug)
    whole = body is not None and question.slug not in reading.cut_slugs
    inside = [] if body is None or whole else [p for p in passages_of(body) if _within(p, region)]
    sent = len(gold) if whole else sum(len(p.text) for p in inside)
    if all(found):
        verdict = VERDICTS[0]
    elif rank is None:
        verdict = VERDICTS[1]
    elif body is None:
        verdict = VERDICTS[2]
    elif not inside:
        verdict = VERDICTS[3]
    elif any(p.orphan() == "colon" for p in inside):
        verdict = VERDICTS[4]
    elif any(p.cut for p in inside):
        verdict = VERDICTS[5]
    else:
        verdict = VERDICTS[6]
    return Diagnosis(verdict, rank, found, len(gold), sent, len(inside))


def _f(value: float, digits: int = 2) -> str:
    return "–" if math.isnan(value) else f"{value:.{digits}f}"


def _pct(value: float) -> str:
    return "–" if math.isnan(value) else f"{100 * value:.1f}%"


def _n(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:,.0f}"


def pooled_table(systems: dict[str, dict[str, Any]]) -> str:
    """One row per system: the README's reference-figures columns."""
    rows = [
        [
            name, _f(f["page@1"]), _f(f["page@3"]), _f(f["spans_all"]), _f(f["spans_any"]),
            _f(f["passages_per_cut_page"], 1),
            f"{_n(f['passage_mean'])} ({_n(f['passage_median'])})", _pct(f["under_200"]),
            _pct(f["path_share"]),
            f"{f['orphans']} ({f['orphans_colon']} / {f['orphans_opener']} / "
            f"{f['orphans_heading']})",
            _pct(f["cut_share"]),
            f"{_n(f['text_bytes'])} / {_n(f['text_bytes_p90'])} / {_n(f['text_bytes_max'])}",
            _pct(f["split"]["bodies"]),
        ]
        for name, f in systems.items()
    ]  # fmt: skip
    headers = [
        "system", "page@1", "page@3", "spans ALL", "spans ANY", "passages / cut page",
        "passage ch mean (median)", "< 200 ch", "heading-path share",
        "orphans (colon / opener / heading)", "ends cut …", "text bytes mean / p90 / max",
        "bodies share",
    ]  # fmt: skip
    return markdown_table(headers, rows, "lrrrrrrrrrrrr")


def corpus_table(per_corpus: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Per corpus and system: ranking, spans, the gold body, sizes."""
    rows = []
    for corpus, systems in per_corpus.items():
        for name, f in systems.items():
            rows.append([
                corpus, name, _f(f["page@1"]), _f(f["page@3"]), _f(f["spans_all"]),
                _f(f["spans_any"]), _pct(f["gold_sent"]), _pct(f["gold_all_when_sent"]),
                _n(f["body_chars"]), _n(f["text_bytes"]), _pct(f["split"]["bodies"]),
            ])  # fmt: skip
    headers = [
        "corpus", "system", "page@1", "page@3", "spans ALL", "spans ANY", "gold body sent",
        "… holding every span", "body ch", "text bytes", "bodies share",
    ]  # fmt: skip
    return markdown_table(headers, rows, "llrrrrrrrrr")


def split_line(f: dict[str, Any]) -> str:
    s = f["split"]
    return (
        f"results list {_pct(s['results'])}, page bodies {_pct(s['bodies'])}, "
        f"outlines {_pct(s['outlines'])}, the rest {_pct(s['rest'])}"
    )


def diagnosis_table(by_corpus: Mapping[str, Sequence[Diagnosis]]) -> str:
    """Questions per verdict, per corpus and pooled."""
    counts = {name: Counter(d.verdict for d in ds) for name, ds in by_corpus.items()}
    pooled = sum(counts.values(), Counter[str]())
    headers = ["lwc: where the key spans went", *counts, "pooled"]
    rows = [[v, *(c[v] for c in counts.values()), pooled[v]] for v in VERDICTS]
    return markdown_table(headers, rows, "l" + "r" * (len(counts) + 1))


def render(question: Question, text: str, diagnosis: Diagnosis) -> str:
    """One answer whole, as a person would read what the agent reads."""
    answer = json.loads(text)
    memory = answer["memory"]
    marks = " ".join(
        f"[{'x' if hit else ' '}] {span!r}"
        for span, hit in zip(question.spans, diagnosis.found, strict=True)
    )
    if diagnosis.sent_chars and not diagnosis.gold_passages:
        sent = "its Page sent whole"
    else:
        sent = f"{diagnosis.sent_chars:,} ch of it sent in {diagnosis.gold_passages} passages"
    out = [
        f"==== {question.qid} ({question.kind}) ====",
        f"Q: {question.text}",
        f"gold: {question.slug} § {question.section} "
        f"({diagnosis.section_chars:,} ch; rank {diagnosis.rank or '-'}; {sent})",
        f"spans: {marks}",
        f"verdict: {diagnosis.verdict}",
        f"text block: {len(text.encode()):,} bytes",
        "",
        "-- results --",
    ]
    for i, row in enumerate(memory["results"], 1):
        out.append(f"{i:2}. {row['identifier']}  {row['title']!r}  rank {row['rank']}")
        out.append(f"    {row['snippet']}")
    for i, page in enumerate(memory["pages"], 1):
        state = "cut" if page.get("truncated") else "whole"
        out += ["", f"-- page {i}: {page['slug']} {page['title']!r} ({state}, "
                f"{len(page['body']):,} ch) --"]  # fmt: skip
        if page.get("outline"):
            out.append("outline: " + " | ".join(page["outline"]))
        out += ["", page["body"]]
    return "\n".join(out) + "\n"


def shape(
    diagnoses: Sequence[Diagnosis], readings: Sequence[Reading], budget: float
) -> dict[str, Any]:
    """How lwc spent its bodies, and how many gold sections would have fit whole: the
    numbers a passage-selection change moves (`budget`: lwc's mean body characters)."""
    sizes = sorted(d.section_chars for d in diagnoses)
    bodies = [len(body) for r in readings for _, body in r.bodies]
    missed = [d for d in diagnoses if d.verdict != VERDICTS[0]]
    repeats = 0
    for r in readings:
        for slug, body in r.bodies:
            if slug in r.cut_slugs:
                texts = [p.text for p in passages_of(body) if p.text]
                repeats += len(texts) - len(set(texts))
    return {
        "gold_section_median": sizes[len(sizes) // 2] if sizes else 0,
        "gold_sections_within_budget": sum(s <= budget for s in sizes),
        "missed_top3_within_budget": sum(
            (d.rank or 99) <= 3 and d.section_chars <= budget for d in missed
        ),
        "missed": len(missed),
        "pages_per_answer": len(bodies) / max(len(readings), 1),
        "bodies_under_300": sum(b < 300 for b in bodies) / max(len(bodies), 1),
        "first_body_share": sum(len(r.bodies[0][1]) for r in readings if r.bodies)
        / max(sum(bodies), 1),
        "repeated_passages": repeats,
    }


def shape_lines(s: dict[str, Any], budget: float, n: int) -> list[str]:
    return [
        f"gold sections (with subsections): median {s['gold_section_median']:,} characters; "
        f"{s['gold_sections_within_budget']} of {n} no longer than lwc's mean body "
        f"characters ({budget:,.0f})",
        f"of the {s['missed']} questions missing a key span, {s['missed_top3_within_budget']} "
        f"had the gold page in the first 3 results and a gold section that short",
        f"lwc bodies: {s['pages_per_answer']:.1f} pages an answer, {_pct(s['bodies_under_300'])} "
        f"of them under 300 characters, the first page {_pct(s['first_body_share'])} of the "
        f"body characters; {s['repeated_passages']} passages repeat one already in their body",
    ]
