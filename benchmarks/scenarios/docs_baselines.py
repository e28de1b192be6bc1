"""The two baselines of the `docs` benchmark: section BM25 and paragraph BM25.

What a RAG stack's Markdown header splitter does: each page cut into sections (or those
sections into blank-line paragraphs, `docs_corpus`), each chunk indexed as page title +
heading path + text with `bm25s` (its default BM25, Snowball English stemming from PyStemmer,
English stop words; query terms outside the vocabulary dropped). The answer is the best
chunks whole, in rank order, until a character budget is spent, the last one cut to it; its
text block is the compact JSON `[{"slug","title","text"}]`. Its page ranking is the distinct
pages of the full chunk ranking (ties: document order).

As passages (the README's rules): every returned chunk is one; a section's own heading line
counts as heading path; an elision follows a chunk unless the next chunk returned is its
successor in the same page (the last chunk returned is followed by nothing). Needs the
`bench` extra (bm25s).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from benchmarks.scenarios.docs_corpus import Chunk, Page, collapse, text_of
from benchmarks.scenarios.docs_metrics import Passage, Reading, Split

Ranker = Callable[[str], list[int]]


def ranker(pages: Sequence[Page], chunks: Sequence[Chunk]) -> Ranker:
    """A function from a query to the indexes of every chunk, best first (ties: index)."""
    import bm25s
    import numpy as np
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    by_slug = {page.slug: page for page in pages}
    docs = [f"{c.title}\n{' '.join(c.path)}\n{text_of(by_slug[c.slug], c)}" for c in chunks]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(docs, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    vocabulary = retriever.vocab_dict

    def rank(query: str) -> list[int]:
        words = bm25s.tokenize(
            [query], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )[0]
        known = [w for w in words if w in vocabulary]
        scores = retriever.get_scores(known) if known else np.zeros(len(chunks))
        # A stable sort on the negated scores: equal scores stay in document order.
        return [int(i) for i in np.argsort(-scores, kind="stable")]

    return rank


def page_ranking(chunks: Sequence[Chunk], order: Sequence[int]) -> tuple[str, ...]:
    """The distinct pages of a chunk ranking, in order."""
    return tuple(dict.fromkeys(chunks[i].slug for i in order))


def pack(chunks: Sequence[Chunk], order: Sequence[int], budget: int) -> list[tuple[Chunk, int]]:
    """The best chunks whole until `budget` characters are spent, the last one cut: each with
    the characters of it sent."""
    out: list[tuple[Chunk, int]] = []
    used = 0
    for i in order:
        if used >= budget:
            break
        size = chunks[i].end - chunks[i].start
        take = min(size, budget - used)
        out.append((chunks[i], take))
        used += take
    return out


def reading(pages: dict[str, Page], chunks: Sequence[Chunk], order: Sequence[int],
            budget: int) -> Reading:  # fmt: skip
    """The Reading of the baseline's answer at `budget` characters."""
    sent = pack(chunks, order, budget)
    texts = [pages[c.slug].body[c.start : c.start + take] for c, take in sent]
    rows = [
        {"slug": c.slug, "title": c.title, "text": t} for (c, _), t in zip(sent, texts, strict=True)
    ]
    block = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    passages = []
    for i, ((chunk, take), text) in enumerate(zip(sent, texts, strict=True)):
        head = text[: min(chunk.head, take)]
        cut = take < chunk.end - chunk.start
        after = sent[i + 1][0] if i + 1 < len(sent) else None
        followed = after is not None and (after.slug, after.order) != (chunk.slug, chunk.order + 1)
        body = text[len(head) :].strip()
        path_bytes = len(head.encode()) + bool(head)
        passages.append(Passage(body, path_bytes, followed, cut))
    bodies = _bodies(pages, sent)
    text_bytes = sum(len(t.encode()) for t in texts)
    total = len(block.encode())
    # JSON-escaped size of the texts (what they weigh in the block), as for lwc's bodies.
    escaped = sum(len(json.dumps(t, ensure_ascii=False).encode()) for t in texts)
    return Reading(
        ranking=page_ranking(chunks, order),
        bodies=tuple(bodies.items()),
        passages=tuple(passages),
        cut_slugs=tuple(bodies),
        cut_bytes=text_bytes,
        split=Split(results=0, bodies=escaped, outlines=0, rest=total - escaped),
    )


def _bodies(pages: dict[str, Page], sent: Sequence[tuple[Chunk, int]]) -> dict[str, str]:
    """Per page, what was sent of it in document order: touching chunks joined as they lie in
    the page, others set apart by an elision line (so no span is matched across a gap)."""
    by_page: dict[str, list[tuple[int, int]]] = {}
    for chunk, take in sent:
        by_page.setdefault(chunk.slug, []).append((chunk.start, chunk.start + take))
    out: dict[str, str] = {}
    for slug, ranges in by_page.items():
        body = pages[slug].body
        parts: list[str] = []
        last = -1
        for start, end in sorted(ranges):
            if parts:
                gap = body[last:start]
                parts.append(gap if last <= start and not collapse(gap) else "\n\n[…]\n\n")
            parts.append(body[start:end])
            last = end
        out[slug] = "".join(parts)
    return out
