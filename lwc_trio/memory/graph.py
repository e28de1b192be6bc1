"""The document graph: passive readiness and one bounded neighbourhood (SPEC §4).

`lwc graph build` writes a projection (`graph_related`: up to 11 related Pages per Page, with
scores) and records the `content_revision` it was built from. The server only reads it: a store
is `disabled` (graph not enabled), `pending` (enabled, projection missing or older than the
current `content_revision`) or `ready`.

Relatedness of two Pages: +1 for each direct link direction, +0.5 per shared cited Source, and
+0.25 per common link neighbour. Sources cited by, and Pages linked with, more than `HUB_LIMIT`
Pages are skipped for the shared/common terms: they relate everything to everything and would
make the build quadratic.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from lwc_trio.memory.store import StoreInfo

__all__ = [
    "NEIGHBORHOOD_LIMIT",
    "build_projection",
    "graph_item",
    "graph_status",
    "read_neighborhood",
]

NEIGHBORHOOD_DEPTH = 1
NEIGHBORHOOD_LIMIT = 12  # the seed plus 11 related Pages
LINK_SCORE, SOURCE_SCORE, COMMON_SCORE = 1.0, 0.5, 0.25
HUB_LIMIT = 100


def graph_status(info: StoreInfo) -> str:
    """`disabled`, `pending` or `ready` for a store's current meta."""
    if not info.graph_enabled:
        return "disabled"
    if info.graph_built_revision != info.content_revision:
        return "pending"
    return "ready"


def graph_item(scope: str, info: StoreInfo) -> dict[str, Any]:
    """The store's `graph` entry without a neighbourhood."""
    status = graph_status(info)
    engine = "disabled" if status == "disabled" else "sqlite"
    return {"scope": scope, "status": {"engine": engine, "status": status}}


def _key(slug: str) -> str:
    return f"page:{slug}"


def read_neighborhood(conn: sqlite3.Connection, seed: str) -> dict[str, Any] | None:
    """The seed and its related Pages from the projection; None when the seed is gone."""
    row = conn.execute("SELECT title, kind FROM pages WHERE slug = ?", (seed,)).fetchone()
    if row is None:
        return None
    nodes: list[dict[str, Any]] = [
        {
            "key": _key(seed),
            "identifier": seed,
            "title": row[0],
            "kind": row[1],
            "depth": 0,
            "score": None,
        }
    ]
    edges: list[dict[str, Any]] = []
    related = conn.execute(
        "SELECT g.related_slug, p.title, p.kind, g.score FROM graph_related AS g "
        "JOIN pages AS p ON p.slug = g.related_slug WHERE g.slug = ? "
        "ORDER BY g.score DESC, g.related_slug LIMIT ?",
        (seed, NEIGHBORHOOD_LIMIT - 1),
    )
    for slug, title, kind, score in related:
        nodes.append(
            {
                "key": _key(slug),
                "identifier": slug,
                "title": title,
                "kind": kind,
                "depth": NEIGHBORHOOD_DEPTH,
                "score": float(score),
            }
        )
        edges.append({"from": _key(seed), "to": _key(slug), "type": "RELATED"})
    return {
        "depth": NEIGHBORHOOD_DEPTH,
        "limit": NEIGHBORHOOD_LIMIT,
        "nodes": nodes,
        "edges": edges,
    }


def _relatedness(conn: sqlite3.Connection) -> tuple[list[str], Callable[[str], dict[str, float]]]:
    slugs = [row[0] for row in conn.execute("SELECT slug FROM pages ORDER BY slug")]
    existing = set(slugs)
    out_links: dict[str, set[str]] = defaultdict(set)
    in_links: dict[str, set[str]] = defaultdict(set)
    for source, target in conn.execute("SELECT from_slug, to_slug FROM links"):
        if source in existing and target in existing and source != target:
            out_links[source].add(target)
            in_links[target].add(source)
    cites: dict[str, set[str]] = defaultdict(set)
    cited_by: dict[str, set[str]] = defaultdict(set)
    for slug, source_id in conn.execute("SELECT page_slug, source_id FROM page_sources"):
        cites[slug].add(source_id)
        cited_by[source_id].add(slug)

    def neighbours(slug: str) -> set[str]:
        return out_links[slug] | in_links[slug]

    def related(slug: str) -> dict[str, float]:
        scores: dict[str, float] = defaultdict(float)
        for other in out_links[slug]:
            scores[other] += LINK_SCORE
        for other in in_links[slug]:
            scores[other] += LINK_SCORE
        for source_id in cites[slug]:
            if len(cited_by[source_id]) <= HUB_LIMIT:
                for other in cited_by[source_id]:
                    scores[other] += SOURCE_SCORE
        for middle in neighbours(slug):
            around = neighbours(middle)
            if len(around) <= HUB_LIMIT:
                for other in around:
                    scores[other] += COMMON_SCORE
        scores.pop(slug, None)
        return scores

    return slugs, related


def build_projection(
    conn: sqlite3.Connection, progress: Callable[[int, int], None] | None = None
) -> int:
    """Recompute `graph_related` for every Page (inside the caller's write transaction).

    Returns the number of related pairs written; `progress(done, total)` is called as it goes.
    """
    slugs, related = _relatedness(conn)
    conn.execute("DELETE FROM graph_related")
    written = 0
    for done, slug in enumerate(slugs, start=1):
        scores = related(slug)
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        rows = [(slug, other, score) for other, score in best[: NEIGHBORHOOD_LIMIT - 1]]
        conn.executemany(
            "INSERT INTO graph_related (slug, related_slug, score) VALUES (?, ?, ?)", rows
        )
        written += len(rows)
        if progress is not None and (done % 256 == 0 or done == len(slugs)):
            progress(done, len(slugs))
    return written
