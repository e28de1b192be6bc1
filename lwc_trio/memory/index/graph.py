"""The document graph's projection: built by `lwc graph build`, kept up to date by writes.

`lwc graph build` writes a projection (`graph_related`: up to `RELATED_PER_PAGE` related
Pages per Page, with scores) and records the `content_revision` it was built from; once it
is `ready` (`storage/store.graph_status`), every content write rescores the Pages it can
change (`refresh_projection`). The server only reads it (`query/neighborhood.py`).

Relatedness of two Pages: +1 for each direct link direction, +0.5 per shared cited Source, and
+0.25 per common link neighbour. Sources cited by, and Pages linked with, more than `HUB_LIMIT`
Pages are skipped for the shared/common terms: they relate everything to everything and would
make the build quadratic.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable

from lwc_trio.memory.format.schema import RELATED_PER_PAGE

__all__ = [
    "HUB_LIMIT",
    "LocalRelatedness",
    "Relatedness",
    "build_projection",
    "refresh_projection",
    "stale_before",
]

LINK_SCORE, SOURCE_SCORE, COMMON_SCORE = 1.0, 0.5, 0.25
HUB_LIMIT = 100


class _Scores:
    """Relatedness scores over four lookups a subclass provides (eager or from SQL)."""

    def out_links(self, slug: str) -> set[str]:
        raise NotImplementedError

    def in_links(self, slug: str) -> set[str]:
        raise NotImplementedError

    def cites(self, slug: str) -> set[str]:
        raise NotImplementedError

    def cited_by(self, source_id: str) -> set[str]:
        raise NotImplementedError

    def neighbours(self, slug: str) -> set[str]:
        """Pages linked with `slug`, either direction (existing Pages only, no self-links)."""
        return self.out_links(slug) | self.in_links(slug)

    def around(self, slugs: set[str]) -> set[str]:
        """Every Page whose related list can depend on one of `slugs`.

        A score needs a direct link, a shared Source or a common neighbour, so that is the
        slugs, their neighbours, their neighbours' neighbours and their Sources' other citers.
        """
        found = set(slugs)
        for slug in slugs:
            near = self.neighbours(slug)
            found |= near
            for middle in near:
                found |= self.neighbours(middle)
            for source_id in self.cites(slug):
                found |= self.cited_by(source_id)
        return found

    def related(self, slug: str) -> dict[str, float]:
        """Relatedness scores of every Page that relates to `slug` at all."""
        scores: dict[str, float] = defaultdict(float)
        for other in self.out_links(slug):
            scores[other] += LINK_SCORE
        for other in self.in_links(slug):
            scores[other] += LINK_SCORE
        for source_id in self.cites(slug):
            citers = self.cited_by(source_id)
            if len(citers) <= HUB_LIMIT:
                for other in citers:
                    scores[other] += SOURCE_SCORE
        for middle in self.neighbours(slug):
            around = self.neighbours(middle)
            if len(around) <= HUB_LIMIT:
                for other in around:
                    scores[other] += COMMON_SCORE
        scores.pop(slug, None)
        return scores

    def rows(self, slug: str) -> list[tuple[str, str, float]]:
        """The `graph_related` rows of `slug`: its best related Pages."""
        best = sorted(self.related(slug).items(), key=lambda item: (-item[1], item[0]))
        return [(slug, other, score) for other, score in best[:RELATED_PER_PAGE]]


class Relatedness(_Scores):
    """Every link and citation of the store, loaded once: for rebuilding the whole projection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.slugs = [row[0] for row in conn.execute("SELECT slug FROM pages ORDER BY slug")]
        existing = set(self.slugs)
        self._out: dict[str, set[str]] = defaultdict(set)
        self._in: dict[str, set[str]] = defaultdict(set)
        for source, target in conn.execute("SELECT from_slug, to_slug FROM links"):
            if source in existing and target in existing and source != target:
                self._out[source].add(target)
                self._in[target].add(source)
        self._cites: dict[str, set[str]] = defaultdict(set)
        self._cited_by: dict[str, set[str]] = defaultdict(set)
        for slug, source_id in conn.execute("SELECT page_slug, source_id FROM page_sources"):
            self._cites[slug].add(source_id)
            self._cited_by[source_id].add(slug)

    def out_links(self, slug: str) -> set[str]:
        return self._out.get(slug, set())

    def in_links(self, slug: str) -> set[str]:
        return self._in.get(slug, set())

    def cites(self, slug: str) -> set[str]:
        return self._cites.get(slug, set())

    def cited_by(self, source_id: str) -> set[str]:
        return self._cited_by.get(source_id, set())


class LocalRelatedness(_Scores):
    """The same scores, looked up on demand through the tables' indexes (memoised): a write
    that touches a few Pages reads only their surroundings, not the whole store."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._exists: dict[str, bool] = {}
        self._memo: dict[tuple[str, str], set[str]] = {}

    def exists(self, slug: str) -> bool:
        """Whether the Page `slug` exists."""
        if slug not in self._exists:
            row = self.conn.execute("SELECT 1 FROM pages WHERE slug = ?", (slug,)).fetchone()
            self._exists[slug] = row is not None
        return self._exists[slug]

    def _lookup(self, kind: str, key: str, query: str) -> set[str]:
        found = self._memo.get((kind, key))
        if found is None:
            found = {row[0] for row in self.conn.execute(query, (key,))}
            self._memo[kind, key] = found
        return found

    def _linked(self, kind: str, slug: str, query: str) -> set[str]:
        if not self.exists(slug):
            return set()
        found = self._lookup(kind, slug, query)
        return {other for other in found if other != slug and self.exists(other)}

    def out_links(self, slug: str) -> set[str]:
        return self._linked("out", slug, "SELECT to_slug FROM links WHERE from_slug = ?")

    def in_links(self, slug: str) -> set[str]:
        return self._linked("in", slug, "SELECT from_slug FROM links WHERE to_slug = ?")

    def cites(self, slug: str) -> set[str]:
        return self._lookup("cites", slug, "SELECT source_id FROM page_sources WHERE page_slug = ?")

    def cited_by(self, source_id: str) -> set[str]:
        return self._lookup(
            "cited_by", source_id, "SELECT page_slug FROM page_sources WHERE source_id = ?"
        )


# Past this many planned Pages a write rebuilds the whole projection: cheaper than walking
# the surroundings of each one.
LOCAL_LIMIT = 256


_INSERT = "INSERT INTO graph_related (slug, related_slug, score) VALUES (?, ?, ?)"


def build_projection(
    conn: sqlite3.Connection, progress: Callable[[int, int], None] | None = None
) -> int:
    """Recompute `graph_related` for every Page (inside the caller's write transaction).

    Returns the number of related pairs written; `progress(done, total)` is called as it goes.
    """
    graph = Relatedness(conn)
    conn.execute("DELETE FROM graph_related")
    written = 0
    for done, slug in enumerate(graph.slugs, start=1):
        rows = graph.rows(slug)
        conn.executemany(_INSERT, rows)
        written += len(rows)
        if progress is not None and (done % 256 == 0 or done == len(graph.slugs)):
            progress(done, len(graph.slugs))
    return written


def stale_before(conn: sqlite3.Connection, planned: set[str]) -> set[str] | None:
    """Pages whose related list may change when the Pages `planned` are written, read before
    the write; None when so many are planned that the projection will be rebuilt instead."""
    if len(planned) > LOCAL_LIMIT:
        return None
    return LocalRelatedness(conn).around(planned)


def refresh_projection(
    conn: sqlite3.Connection, before: set[str] | None, touched: set[str]
) -> None:
    """Bring `graph_related` up to date after the Pages `touched` were written or removed,
    inside the caller's write transaction.

    `before` (from `stale_before`) holds the Pages that related to them before the write: one
    that lost its link to a touched Page is found through it, one that gained a link through
    the graph as it is now. Only those are rescored, so a write costs about its neighbourhood.
    With `before` None, or when most Pages are stale anyway, the projection is rebuilt.
    """
    if not touched:
        return
    pages = int(conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0])
    after = LocalRelatedness(conn)
    stale = None if before is None else before | after.around(touched)
    if stale is None or 4 * len(stale) > pages:
        build_projection(conn)
        return
    conn.executemany(
        "DELETE FROM graph_related WHERE slug = ?", [(slug,) for slug in sorted(stale)]
    )
    for slug in sorted(stale):
        if after.exists(slug):
            conn.executemany(_INSERT, after.rows(slug))
