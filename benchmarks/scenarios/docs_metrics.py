"""The figures of the `docs` benchmark, as its data set's README defines them. Pure.

An answer, lwc's or a baseline's, becomes a `Reading`: the page ranking, the bodies the agent
reads (one a page, spans are matched in each on its own), the passages of the pages sent cut,
and the text block's bytes and how they split. `score` judges one Reading against its
question; `summarize` averages a list of them.

lwc's cut bodies (`truncated: true`) are split on lines that are only the elision marker
`[…]`; a passage's heading-path lines (starting `§ `) are counted apart and left out of its
text. An **orphan** is a passage that is only a heading path, one made only of container or
fence openers/closers (`!!! note`, `??? api "…"`, `/// note`, `:::tip`, `:::`,
`<div …>`, `</div>`, `<details>`, a bare fence, a lone `>`), or one whose last non-blank line
ends with `:` and that an elision follows (what it introduces is missing).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

import attrs

from benchmarks.scenarios.docs_corpus import Question, collapse
from benchmarks.stats import median, percentile

ELISION: Final = "[…]"
"""The line lwc puts between passages that do not follow each other."""
PATH_MARK: Final = "§ "
"""How lwc's heading-path lines start."""
SHORT: Final = 200
"""A passage under this many characters counts as short."""
ORPHAN_KINDS: Final = ("colon", "opener", "heading")

_OPENER: Final = re.compile(
    r"(?:!!!|\?\?\?)\+?(?:\s.*)?"  # Material admonitions: !!! note "Title", ???+ api "…"
    r"|///.*"  # pymdownx blocks: /// note … ///
    r"|:::.*"  # Docusaurus admonitions: :::tip … :::
    # one container tag alone: <div …>, </div>, <details>, </dl>
    r"|</?(?:div|details|summary|dl|dt|dd|section|aside|figure|blockquote)(?:\s[^<>]*)?>"
    r"|(?:```|~~~)[^`]*"  # a bare fence, with or without an info string
    r"|>"  # a lone blockquote marker
)


@attrs.frozen
class Passage:
    text: str
    """What the agent reads of it, heading-path lines left out, ends trimmed."""
    path_bytes: int
    """UTF-8 bytes of its heading-path lines (their newlines included)."""
    elided_after: bool
    """An elision follows it: what came next in the page is missing."""
    cut: bool
    """It ends cut short (lwc marks that with `…`)."""

    def orphan(self) -> str | None:
        """Its orphan kind (`ORPHAN_KINDS`), else None."""
        lines = [line.strip() for line in self.text.splitlines() if line.strip()]
        if not lines:
            return "heading"
        if all(_OPENER.fullmatch(line) for line in lines):
            return "opener"
        # A closing `:::` ends with a colon but introduces nothing.
        if self.elided_after and lines[-1].endswith(":") and not _OPENER.fullmatch(lines[-1]):
            return "colon"
        return None


@attrs.frozen
class Split:
    """The text block's bytes: results list, page bodies, outlines and the rest."""

    results: int
    bodies: int
    outlines: int
    rest: int

    @property
    def total(self) -> int:
        return self.results + self.bodies + self.outlines + self.rest


@attrs.frozen
class Reading:
    """One answer as the figures see it."""

    ranking: tuple[str, ...]
    """Page slugs, best first (lwc: `memory.results`; a baseline: the distinct pages of its
    full ranking)."""
    bodies: tuple[tuple[str, str], ...]
    """(slug, body) of each page sent, in order."""
    passages: tuple[Passage, ...]
    """The passages of the pages sent cut."""
    cut_slugs: tuple[str, ...]
    """The pages sent cut."""
    cut_bytes: int
    """UTF-8 bytes of the bodies of the pages sent cut."""
    split: Split

    @property
    def cut_pages(self) -> int:
        return len(self.cut_slugs)

    @property
    def body_chars(self) -> int:
        return sum(len(body) for _, body in self.bodies)


def passages_of(body: str) -> list[Passage]:
    """An lwc body split on lines that are only `[…]` (empty pieces dropped)."""
    pieces: list[list[str]] = [[]]
    for line in body.split("\n"):
        if line.strip() == ELISION:
            pieces.append([])
        else:
            pieces[-1].append(line)
    out: list[Passage] = []
    for i, piece in enumerate(pieces):
        paths = [line for line in piece if line.startswith(PATH_MARK)]
        text = "\n".join(line for line in piece if not line.startswith(PATH_MARK)).strip()
        if text or paths:
            path_bytes = sum(len(line.encode()) + 1 for line in paths)
            out.append(Passage(text, path_bytes, i < len(pieces) - 1, text.endswith("…")))
    return out


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def lwc_reading(text: str) -> Reading:
    """The Reading of one `lwc_explore` text block (memory mode)."""
    memory = json.loads(text)["memory"]
    if memory.get("state") != "ready":
        raise ValueError(f"memory state {memory.get('state')!r}: {memory.get('error')}")
    results = memory["results"]
    pages = memory["pages"]
    cut = [p for p in pages if p.get("truncated")]
    split = Split(
        results=_size(results),
        bodies=sum(_size(p["body"]) for p in pages),
        outlines=sum(_size(p["outline"]) for p in pages if "outline" in p),
        rest=0,
    )
    return Reading(
        ranking=tuple(r["identifier"] for r in results if r["type"] == "page"),
        bodies=tuple((p["slug"], p["body"]) for p in pages),
        passages=tuple(p for page in cut for p in passages_of(page["body"])),
        cut_slugs=tuple(p["slug"] for p in cut),
        cut_bytes=sum(len(p["body"].encode()) for p in cut),
        split=attrs.evolve(split, rest=len(text.encode()) - split.total),
    )


def spans_found(spans: Sequence[str], bodies: Sequence[str]) -> list[bool]:
    """Per span: it occurs in one of `bodies` (each on its own), whitespace collapsed, case kept."""
    flat = [collapse(body) for body in bodies]
    return [any(collapse(span) in body for body in flat) for span in spans]


@attrs.frozen
class Score:
    """One answer judged against its question."""

    at1: bool
    at3: bool
    all_spans: bool
    any_span: bool
    gold_sent: bool
    gold_all: bool
    """The gold page's body was sent and holds every span."""


def score(question: Question, reading: Reading) -> Score:
    hits = spans_found(question.spans, [body for _, body in reading.bodies])
    gold = [body for slug, body in reading.bodies if slug == question.slug]
    return Score(
        at1=bool(set(reading.ranking[:1]) & question.pages),
        at3=bool(set(reading.ranking[:3]) & question.pages),
        all_spans=all(hits),
        any_span=any(hits),
        gold_sent=bool(gold),
        gold_all=bool(gold) and all(spans_found(question.spans, gold)),
    )


def _share(part: float, whole: float) -> float:
    return part / whole if whole else float("nan")


def summarize(questions: Sequence[Question], readings: Sequence[Reading]) -> dict[str, Any]:
    """The README's figures over these answers (shares as fractions, sizes in characters or
    bytes); NaN where a figure has nothing to count."""
    scores = [score(q, r) for q, r in zip(questions, readings, strict=True)]
    passages = [p for r in readings for p in r.passages]
    lengths = [len(p.text) for p in passages]
    orphans = Counter(kind for p in passages if (kind := p.orphan()))
    sizes = [r.split.total for r in readings]
    sent = sum(s.gold_sent for s in scores)
    n = len(scores)
    bodies = sum(r.split.bodies for r in readings)
    total = sum(sizes)
    return {
        "questions": n,
        "page@1": _share(sum(s.at1 for s in scores), n),
        "page@3": _share(sum(s.at3 for s in scores), n),
        "spans_all": _share(sum(s.all_spans for s in scores), n),
        "spans_any": _share(sum(s.any_span for s in scores), n),
        "gold_sent": _share(sent, n),
        "gold_all_when_sent": _share(sum(s.gold_all for s in scores), sent),
        "body_chars": _share(sum(r.body_chars for r in readings), n),
        "passages_per_cut_page": _share(len(passages), sum(r.cut_pages for r in readings)),
        "passage_mean": _share(sum(lengths), len(lengths)),
        "passage_median": median(lengths),
        "under_200": _share(sum(x < SHORT for x in lengths), len(lengths)),
        "path_share": _share(
            sum(p.path_bytes for p in passages), sum(r.cut_bytes for r in readings)
        ),
        "orphans": sum(orphans.values()),
        **{f"orphans_{kind}": orphans[kind] for kind in ORPHAN_KINDS},
        "cut_share": _share(sum(p.cut for p in passages), len(passages)),
        "text_bytes": _share(total, n),
        "text_bytes_p90": percentile(sizes, 0.9),
        "text_bytes_max": max(sizes, default=0),
        "tokens": _share(sum(math.ceil(s / 4) for s in sizes), n),
        "split": {
            "results": _share(sum(r.split.results for r in readings), total),
            "bodies": _share(bodies, total),
            "outlines": _share(sum(r.split.outlines for r in readings), total),
            "rest": _share(sum(r.split.rest for r in readings), total),
        },
    }
