"""The document graph as the server reads it: a store's graph item and one neighbourhood.

The server never builds the graph (`index/graph.py` does, on write); it reports each
store's status (`storage/store.graph_status`: `disabled`, `pending` or `ready`) and, for a
ready store, the seed Page's bounded neighbourhood from the projection `graph_related`
(SPEC §4): the seed and its related Pages, best first. The values come from the store as
they are: `bounds.bound_neighborhood` checks and cuts them.
"""

from __future__ import annotations

import sqlite3

from lwc_trio.memory.format.schema import RELATED_PER_PAGE
from lwc_trio.memory.storage.store import StoreInfo, graph_status

__all__ = ["NEIGHBORHOOD_DEPTH", "NEIGHBORHOOD_LIMIT", "graph_item", "read_neighborhood"]

NEIGHBORHOOD_DEPTH = 1
NEIGHBORHOOD_LIMIT = RELATED_PER_PAGE + 1
"""The seed and its related Pages."""


def graph_item(scope: str, info: StoreInfo) -> dict[str, object]:
    """The store's `graph` entry without a neighbourhood."""
    status = graph_status(info)
    engine = "disabled" if status == "disabled" else "sqlite"
    return {"scope": scope, "status": {"engine": engine, "status": status}}


def _key(slug: object) -> str:
    return f"page:{slug}"


def read_neighborhood(conn: sqlite3.Connection, seed: str) -> dict[str, object] | None:
    """The seed and its related Pages from the projection; None when the seed is gone."""
    row = conn.execute("SELECT title, kind FROM pages WHERE slug = ?", (seed,)).fetchone()
    if row is None:
        return None
    nodes: list[dict[str, object]] = [
        {
            "key": _key(seed),
            "identifier": seed,
            "title": row[0],
            "kind": row[1],
            "depth": 0,
            "score": None,
        }
    ]
    edges: list[dict[str, str]] = []
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
