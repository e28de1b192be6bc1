"""The document graph's projection: built by `lwc graph build`, kept up to date by writes.

`lwc graph build` writes a projection (`graph_related`: up to `RELATED_PER_PAGE` related
Pages per Page, with scores) and records the `content_revision` it was built from; once it
is `ready` (`storage/store.graph_status`), every content write rescores the Pages it can
change (`refresh_projection`). The server only reads it (`query/neighborhood.py`).

Relatedness of two Pages: +1 for each direct link direction, +0.5 per shared cited Source, and
+0.25 per common link neighbour. Sources cited by, and Pages linked with, more than `HUB_LIMIT`
Pages are skipped for the shared/common terms: they relate everything to everything and would
make the build quadratic. A navigation Page — one with more than `NAV_LINKS` stored links (to
Pages or not), a table of contents such as mdBook's `SUMMARY.md` — neighbours nearly every
Page and shares their neighbours: its score as a related Page is scaled by `NAV_LINKS` over
its link count, so it does not head every related list. That count is the Page's own stored
links, so it changes only when the Page itself is written, and a write rescores exactly the
Pages it rescored before (`around`).
"""

from __future__ import annotations

import bisect
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable

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
NAV_LINKS = 32
"""Links a Page may have before it counts as navigation (module docstring). In the three
documentation trees of `../shared/data/docs/`, content Pages link to at most 29 Pages (cargo's
reference index); the cargo book's table of contents links to 98."""
_COUNT_CAP = 4097
"""Stored links counted per Page: one more than a write lets a Page have (`MAX_PAGE_LINKS`),
so a store written otherwise costs no more to count."""


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

    def navigation(self, slugs: Iterable[str]) -> dict[str, int]:
        """Those of `slugs` with more than `NAV_LINKS` stored links to other slugs (Pages or
        not), with that count (at most `_COUNT_CAP`)."""
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

    def _unscaled(self, slug: str) -> dict[str, float]:
        """Relatedness scores of every Page that relates to `slug` at all, navigation Pages
        not scaled yet (`rows` scales those it keeps)."""
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

    def rows(self, slugs: list[str]) -> list[tuple[str, str, float]]:
        """The `graph_related` rows of `slugs`: each one's best `RELATED_PER_PAGE` related
        Pages, navigation Pages scaled.

        Scaling only lowers a score, so a Page's candidates are read best unscaled score first
        and their link counts asked for only as far as one could still enter its best (all
        the Pages' at once, a round at a time): most candidates of a large Wiki are never
        counted."""
        ranked = {slug: sorted(self._unscaled(slug).items(), key=_order) for slug in slugs}
        reach = dict.fromkeys(slugs, RELATED_PER_PAGE)
        navigation: dict[str, int] = {}
        asked: set[str] = set()
        while reach:
            wanted = {other for slug in reach for other, _ in ranked[slug][: reach[slug]]}
            navigation.update(self.navigation(wanted - asked))
            asked |= wanted
            for slug in list(reach):
                found, seen = ranked[slug], reach[slug]
                best = found[:seen]
                if navigation.keys().isdisjoint(other for other, _ in best):
                    ranked[slug] = best[:RELATED_PER_PAGE]  # unscaled, so no later one enters
                    del reach[slug]
                    continue
                best = sorted(_scale(best, navigation), key=_order)
                # A candidate past `seen` sorts, scaled, no earlier than it does unscaled: it
                # can enter only if it sorts unscaled before the last kept (`seen` of them
                # scored, so `best` holds at least `RELATED_PER_PAGE`). Every such one is
                # read next round; the last kept can then only move up, so a third round
                # never comes: two at most, whatever the candidates.
                if seen < len(found):
                    last = _order(best[RELATED_PER_PAGE - 1])
                    if _order(found[seen]) < last:
                        reach[slug] = bisect.bisect_left(found, last, lo=seen, key=_order)
                        continue
                ranked[slug] = best[:RELATED_PER_PAGE]
                del reach[slug]
        return [(slug, other, score) for slug in slugs for other, score in ranked[slug]]


def _order(item: tuple[str, float]) -> tuple[float, str]:
    """A related list's order: best score first, then by slug."""
    return -item[1], item[0]


def _scale(found: list[tuple[str, float]], navigation: dict[str, int]) -> list[tuple[str, float]]:
    """`found`'s scores with each navigation Page's (its link count in `navigation`) scaled."""
    return [
        (other, score * NAV_LINKS / navigation[other] if other in navigation else score)
        for other, score in found
    ]


class Relatedness(_Scores):
    """Every link and citation of the store, loaded once: for rebuilding the whole projection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.slugs = [row[0] for row in conn.execute("SELECT slug FROM pages ORDER BY slug")]
        existing = set(self.slugs)
        self._out: dict[str, set[str]] = defaultdict(set)
        self._in: dict[str, set[str]] = defaultdict(set)
        counts: dict[str, int] = defaultdict(int)
        for source, target in conn.execute("SELECT from_slug, to_slug FROM links"):
            if source != target:
                counts[source] += 1
                if source in existing and target in existing:
                    self._out[source].add(target)
                    self._in[target].add(source)
        self._navigation = {
            slug: min(count, _COUNT_CAP) for slug, count in counts.items() if count > NAV_LINKS
        }
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

    def navigation(self, slugs: Iterable[str]) -> dict[str, int]:
        return {slug: self._navigation[slug] for slug in self._navigation.keys() & slugs}


class LocalRelatedness(_Scores):
    """The same scores, looked up on demand through the tables' indexes (memoised): a write
    that touches a few Pages reads only their surroundings, not the whole store."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._exists: dict[str, bool] = {}
        self._memo: dict[tuple[str, str], set[str]] = {}
        self._counts: dict[str, int] = {}

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

    def navigation(self, slugs: Iterable[str]) -> dict[str, int]:
        wanted = set(slugs)  # read twice below: an iterator would be spent by the first
        missing = []
        for slug in sorted(wanted - self._counts.keys()):
            read = self._memo.get(("out", slug))  # its links, when already looked up
            if read is None:
                missing.append(slug)
            else:
                self._counts[slug] = min(len(read - {slug}), _COUNT_CAP)
        for at in range(0, len(missing), _COUNTED):
            chunk = missing[at : at + _COUNTED]
            # Padded to `_COUNTED` rows, so the statement's text never changes (prepared
            # once); each slug a bound parameter, each Page's count bounded in SQL.
            values = [
                item for i in range(_COUNTED) for item in (i, chunk[i] if i < len(chunk) else None)
            ]
            for index, count in self.conn.execute(_COUNT_LINKS, [*values, _COUNT_CAP]):
                if index < len(chunk):
                    self._counts[chunk[index]] = int(count)
        return {slug: self._counts[slug] for slug in wanted if self._counts[slug] > NAV_LINKS}


# Past this many planned Pages a write rebuilds the whole projection: cheaper than walking
# the surroundings of each one.
LOCAL_LIMIT = 256


_COUNTED = 64
"""Pages whose links one statement counts (`LocalRelatedness.navigation`)."""
_COUNT_LINKS = (
    f"WITH c(i, slug) AS (VALUES {', '.join(['(?, ?)'] * _COUNTED)}) "
    "SELECT i, (SELECT COUNT(*) FROM (SELECT 1 FROM links "
    "WHERE from_slug = c.slug AND to_slug != from_slug LIMIT ?)) FROM c"
)
_RESCORED = 256
"""Pages a write rescores together: their candidates' link counts are read in one statement."""
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
        rows = graph.rows([slug])
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
    present = [slug for slug in sorted(stale) if after.exists(slug)]
    for at in range(0, len(present), _RESCORED):
        conn.executemany(_INSERT, after.rows(present[at : at + _RESCORED]))
