"""Pages ranked with their sections' evidence (SPEC §4 "Pages": ranking uses section evidence).

The search ranks whole Pages (BM25F over title, path, summary and body, `search.py`). A long
Page that mentions the query's words everywhere can outrank a Page one of whose sections
answers the question, and the whole-Page score can leave that Page just below the results. So
the search's best `RERANK_POOL` hits (20, the most `maxDocuments` allows; `lwc search --limit`
above 20 ranks that many) are ranked again with their best section's score, and the answer
keeps the first `maxDocuments` of them: every unit
(a section, or a run of a long section's blocks: `passages.split_units`) of those that have
headings is scored for the query as one collection, as the answer's passages are
(`passages.best_units`), and each such Page's score becomes

    (1 − w) × score + w × best_score × evidence / best_evidence

where `score` is its search score, `best_score` the best search score of the pool,
`evidence` its best unit's score and `best_evidence` the best of the pool, and w is
`SECTION_WEIGHT`. The scale stays the search's (the best Page keeps its score when it also
holds the best section), so stores still merge by rank. A Page without headings, or a
Source, has no sections to tell apart: its evidence is taken as its search score's share (it
keeps its score), so a Wiki of plain notes (or the Cranfield collection) ranks as the search
does. Hits the title fill-up found (rank ≥ 0) stay after every scored hit. Deterministic: ties
keep the search's order.

One pool for every `maxDocuments` makes the results of a smaller `maxDocuments` the first
of a larger one's. Tuned on the public documentation set (`scripts/bench docs`; docs/memory.md,
"Section evidence"): a pool of 20 at w = 0.8 against the 8 results at w = 0.65 took page@1
from 0.67 to 0.70 and every-key-span recall from 0.75 to 0.78, for 0.62 ms a further Page
read and analysed on the scale benchmark's Pages (docs/benchmarks.md, "Wiki scale").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from lwc_trio.memory.query.passages import best_units
from lwc_trio.memory.query.search import Hit

__all__ = ["RERANK_POOL", "SECTION_WEIGHT", "rerank"]

SECTION_WEIGHT = 0.8
"""The best section's share of a Page's final score."""
RERANK_POOL = 20
"""How many of a store's best hits are ranked again for any `maxDocuments` (1–20); a larger
limit (`lwc search --limit`) ranks that many."""


def rerank(
    hits: Sequence[Hit],
    query: Sequence[tuple[str, int]],
    heads: Callable[[Sequence[str]], dict[str, tuple[str, str]]],
) -> list[Hit]:
    """`hits` (the search's order: scored ones, then title fill-ups) ranked with their
    sections' evidence; `heads(slugs)` gives each Page's (title, body head)."""
    scored = [hit for hit in hits if hit.rank < 0.0]
    rest = [hit for hit in hits if hit.rank >= 0.0]
    if len(scored) < 2 or not query:
        return [*scored, *rest]
    slugs = [hit.identifier for hit in scored if hit.doc_type == "page"]
    found = heads(slugs)
    pages = [hit.identifier for hit in scored if hit.doc_type == "page" and hit.identifier in found]
    best = best_units([found[slug][1] for slug in pages], query)
    evidence = {slug: score for slug, score in zip(pages, best, strict=True) if score is not None}
    best_score = max(-hit.rank for hit in scored)
    best_evidence = max(evidence.values(), default=0.0)
    if best_score <= 0.0 or best_evidence <= 0.0:
        return [*scored, *rest]
    weighed: list[tuple[float, int, Hit]] = []
    for order, hit in enumerate(scored):
        score = -hit.rank
        if hit.doc_type == "page" and hit.identifier in evidence:
            share = evidence[hit.identifier] / best_evidence
        else:
            share = score / best_score
        final = (1.0 - SECTION_WEIGHT) * score + SECTION_WEIGHT * best_score * share
        weighed.append((-final, order, hit))
    weighed.sort(key=lambda item: (item[0], item[1]))
    return [*(attrs.evolve(hit, rank=rank) for rank, _order, hit in weighed), *rest]
