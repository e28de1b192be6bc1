"""A Page's rows besides its `pages` row: the Sources it cites, its provenance, its links.

The writer plans them for each Page it writes (`plan`: the cited Sources must exist, the
provenance gets its default, recorded links join the body's) and writes those of a whole
transaction together (`PageRows.write`: six statements per batch instead of six per Page).
"""

from __future__ import annotations

import sqlite3

import attrs

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.format.schema import placeholders
from lwc_trio.memory.format.slugs import order_provenance
from lwc_trio.memory.index.inputs import PageInput, body_links
from lwc_trio.memory.index.reads import PageRecord

__all__ = ["PageRows", "Planned", "plan"]


@attrs.frozen
class Planned:
    """What a Page's rows will hold: its cited Sources (sorted), provenance (in output
    order) and links."""

    sources: list[str]
    provenance: list[str]
    links: list[str]

    def matches(self, page: PageInput, existing: PageRecord | None) -> bool:
        """Whether the stored Page `existing` is `page` with these rows already."""
        return existing is not None and (
            existing["title"],
            existing["kind"],
            existing["summary"],
            existing["body"],
            existing["sources"],
            existing["provenance"],
            existing["links"],
        ) == (
            page.title, page.kind, page.summary, page.body, self.sources, self.provenance,
            self.links,
        )  # fmt: skip


def plan(conn: sqlite3.Connection, page: PageInput, extracted: list[str]) -> Planned:
    """The rows of `page`, whose body links to `extracted` (`links.extract_links`) unless
    its links came with it (`PageInput.body_links`: a folder import's, a record's). Raises
    `WikiError(source_not_found)` when it cites a Source the store does not hold."""
    sources = sorted(set(page.sources))
    if sources:
        marks = placeholders(len(sources))
        known = {
            r[0] for r in conn.execute(f"SELECT id FROM sources WHERE id IN ({marks})", sources)
        }
        missing = [ident for ident in sources if ident not in known]
        if missing:
            raise WikiError(
                "source_not_found", f"page {page.slug!r} cites unknown source {missing[0]!r}"
            )
    links = extracted if page.body_links is None else body_links(page)
    if page.links:
        links = sorted(set(links).union(page.links) - {page.slug})
    return Planned(sources, _stored_provenance(page), links)


def _stored_provenance(page: PageInput) -> list[str]:
    values = set(page.provenance)
    if page.sources:
        values.add("source-grounded")
    elif not values:
        # The CLI is an explicit user action: an unqualified Page is the user's word.
        values.add("user-provided")
    return order_provenance(values)


@attrs.define
class PageRows:
    """The sources, provenance and links rows of the Pages a transaction (re)writes, written
    together (`write`). Each Page is written at most once per transaction, so deleting all
    of its old rows first and then inserting the new ones is what one Page at a time would
    do."""

    slugs: list[tuple[str]] = attrs.field(factory=list)
    sources: list[tuple[str, str]] = attrs.field(factory=list)
    provenance: list[tuple[str, str]] = attrs.field(factory=list)
    links: list[tuple[str, str]] = attrs.field(factory=list)

    def add(self, slug: str, planned: Planned) -> None:
        """The rows of the Page `slug`, to be written."""
        self.slugs.append((slug,))
        self.sources.extend((slug, ident) for ident in planned.sources)
        self.provenance.extend((slug, value) for value in planned.provenance)
        self.links.extend((slug, target) for target in planned.links)

    def write(self, conn: sqlite3.Connection) -> None:
        """Replace the rows of every Page added, then start over."""
        if not self.slugs:
            return
        for table, column in (
            ("page_sources", "page_slug"),
            ("page_provenance", "page_slug"),
            ("links", "from_slug"),
        ):
            conn.executemany(f"DELETE FROM {table} WHERE {column} = ?", self.slugs)
        for statement, values in (
            ("INSERT INTO page_sources (page_slug, source_id) VALUES (?, ?)", self.sources),
            ("INSERT INTO page_provenance (page_slug, provenance) VALUES (?, ?)", self.provenance),
            ("INSERT INTO links (from_slug, to_slug) VALUES (?, ?)", self.links),
        ):
            if values:
                conn.executemany(statement, values)
        self.slugs, self.sources, self.provenance, self.links = [], [], [], []
