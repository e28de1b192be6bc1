"""Result rows and Page bodies: what a store contributes to the answer, in SPEC field order.

Sources never carry their content: their only text in an answer is the ≤ 180-character snippet.
A Page body is read up to its first `FOCUS_SCAN` characters (SQLite counts characters, so
the cut is in code points and CJK-safe); after the merge, `fit_pages` chooses the passages most
relevant to the query across the result Pages (`passages.allot`), each Page capped by its rank,
within LWC's caps (15,000 characters a body, 60,000 in all).
"""

from __future__ import annotations

import collections
import functools
import itertools
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import attrs

from lwc_trio.memory.format.cache import RevisionCache
from lwc_trio.memory.format.schema import placeholders
from lwc_trio.memory.format.slugs import PROVENANCE_ORDER, order_provenance
from lwc_trio.memory.query.passages import Slot, allot, cost, outline, priors
from lwc_trio.memory.query.passages import caps as page_caps
from lwc_trio.memory.query.search import Hit
from lwc_trio.memory.text.fields import SNIPPET_SCAN, snippet_text
from lwc_trio.memory.text.markdown import attribute_free, sections
from lwc_trio.memory.text.tokenize import is_cjk
from lwc_trio.protocol.jsonrpc import to_bytes
from lwc_trio.protocol.units import text_cost

__all__ = [
    "PAGES_TOTAL_CAP",
    "PAGE_BODY_CAP",
    "SNIPPET_MAX",
    "SNIPPET_WINDOW",
    "PageBody",
    "PageMeta",
    "PageRow",
    "ResultRow",
    "WholeQuery",
    "fit_pages",
    "make_snippet",
    "page_heads",
    "page_reference",
    "query_pattern",
    "read_from",
    "read_hits",
]

SNIPPET_MAX = 180
"""The longest snippet a result may carry (SPEC §2), a stored one included (`bounds.py`)."""
SNIPPET_WINDOW = 90
"""The snippets lwc makes: at most this many cost units wide (`_width`), up to `SNIPPET_LEAD`
of them before the match. Eight results' 180-character snippets were a quarter of a default
answer's metadata (SQuAD, `scripts/bench answers`: 1,105 → 1,012 tokens of metadata at 120,
the answers found in bodies or snippets 97.2 % → 97.0 %), and the Page bodies carry the
matching passages."""
SNIPPET_LEAD = 40
"""Cost units of context kept before the match (as LWC's 40 characters in English text), to
the next word boundary."""
PAGE_BODY_CAP = 15_000
FOCUS_SCAN = 100_000
"""Characters of a Page body read (once, for its snippet and its `pages` entry) and searched
for passages; the rest of a longer Page is read by the follow-up call (docs/mcp-reference.md)."""
_HEAD = max(SNIPPET_SCAN, FOCUS_SCAN)
PAGES_TOTAL_CAP = 60_000
MIN_SHARE = 240
"""A Page whose share of the budget (after its other fields) is under this many cost units
is left out, with every Page after it: a body that short would say nothing."""
RANK_DIGITS = 6
"""`rank` is written rounded to this many decimals (the order was decided unrounded)."""

_SPACE = re.compile(r"\s+")
_QUERY_WORD = re.compile(r"[^\W_]+")
"""A query's words for its whole-query window: runs of letters and digits (a combining mark,
which is no letter, ends one: the window's pattern joins them with `\\W+`, so a word typed
with or without its accent, nukta or vowel points finds the text either way)."""
_ELLIPSIS = "…"


@attrs.frozen
class ResultRow:
    """One entry of `results`."""

    scope: str
    doc_type: str
    identifier: str
    title: str
    kind: str | None
    summary: str | None
    provenance: tuple[str, ...] | None
    snippet: str
    rank: float
    match: str
    updated_at: str | None

    def sort_key(self, scope_order: dict[str, int]) -> tuple[float, int, int, str]:
        """Merge order: rank, project before global, Pages before Sources, identifier."""
        return (
            self.rank,
            scope_order[self.scope],
            0 if self.doc_type == "page" else 1,
            self.identifier,
        )

    def to_json(self) -> dict[str, Any]:
        """The SPEC §4 result object, keys in the documented order."""
        return {
            "scope": self.scope,
            "type": self.doc_type,
            "identifier": self.identifier,
            "title": self.title,
            "kind": self.kind,
            "summary": self.summary,
            "provenance": None if self.provenance is None else list(self.provenance),
            "snippet": self.snippet,
            "rank": round(self.rank, RANK_DIGITS),
            "match": self.match,
            "updatedAt": self.updated_at,
        }


@attrs.frozen
class PageBody:
    """A Page's body head (≤ `PAGE_BODY_CAP` characters) and what the `pages` entry needs."""

    scope: str
    slug: str
    title: str
    kind: str
    summary: str | None
    head: str
    length: int
    provenance: tuple[str, ...]
    links: tuple[str, ...]
    updated_at: str
    cut: bool = False
    """A field other than the body was cut to its SPEC §2 limit (see `bounds.py`)."""
    offset: int = -1
    """For a follow-up read (`[[slug@N]]`, `[[slug#Heading]]`): where `head` starts in the
    body; -1 for a search answer (`head` is the body's start, focused on the query)."""

    def to_json(self, body: str, truncated: bool, heads: list[str] | None = None) -> dict[str, Any]:
        """The SPEC §4 page object with `body` (the Page's, whole or focused); `truncated`
        when it is not the whole body; `heads`, the outline of a truncated Page."""
        item = {
            "scope": self.scope,
            "slug": self.slug,
            "title": self.title,
            "kind": self.kind,
            "summary": self.summary,
            "body": body,
            "provenance": list(self.provenance),
            "links": list(self.links),
            "updatedAt": self.updated_at,
            "truncated": self.cut or truncated or len(body) < self.length,
        }
        if heads:
            item["outline"] = heads
        return item


def _in_word(char: str) -> bool:
    """A letter or digit other than CJK (whose characters are words of their own): what
    cannot stand right before or after a whole-query match."""
    return char.isalnum() and not is_cjk(char)


def _in_shown_word(char: str) -> bool:
    """`_in_word`, or a combining mark (a vowel sign, an accent, an emoji's selector, in any
    script): what a snippet's lead must not start on, as it belongs to the word before."""
    return _in_word(char) or unicodedata.category(char)[0] == "M"


@attrs.frozen
class WholeQuery:
    """The whole query's words in a row (any separators), matched on lowercased text."""

    words: tuple[str, ...]

    def pattern(self) -> re.Pattern[str]:
        """The regular expression, compiled on the first text holding every word."""
        return _compiled(self.words)


@functools.lru_cache(maxsize=64)
def _compiled(words: tuple[str, ...]) -> re.Pattern[str]:
    # It starts with a literal, so `re` scans for it quickly.
    return re.compile(r"\W+".join(re.escape(word) for word in words))


def query_pattern(query: str) -> WholeQuery | None:
    """The whole query's words in a row; None for a one-word query."""
    words = _QUERY_WORD.findall(query.lower())
    if len(words) < 2:
        return None
    return WholeQuery(tuple(words))


def _whole_match(text: str, whole: WholeQuery, low: str | None = None) -> int:
    """Start of the first whole-word match of `whole` in `text` (`low`: `text.lower()`,
    when known), or -1."""
    if low is None:
        low = text.lower()
    if len(low) != len(text):  # lowercasing moved indexes (rare): no whole-query window
        return -1
    # A text missing a word cannot match: most do, and they never compile the expression
    # (parsing one costs more than the rest of a snippet; a new query is the common case).
    for word in whole.words:
        if word not in low:
            return -1
    pattern = whole.pattern()
    pos = 0
    while (found := pattern.search(low, pos)) is not None:
        start, end = found.span()
        if (start == 0 or not _in_word(low[start - 1])) and (
            end == len(low) or not _in_word(low[end])
        ):
            return start
        pos = start + 1
    return -1


def make_snippet(text: str, at: int, whole: WholeQuery | None = None) -> str:
    """`text` around a match, on one line, at most `SNIPPET_WINDOW` wide (`_width`).

    The window starts about `SNIPPET_LEAD` characters before the first match of the whole
    query (`whole`), else before `at` (the first matching term, stored at write time; -1:
    none, start of text), on a word boundary; `…` marks each side that was cut.
    """
    text = text[:SNIPPET_SCAN]
    return _window(text, _snippet_at(text, at, whole))


def _snippet_at(text: str, at: int, whole: WholeQuery | None, low: str | None = None) -> int:
    """Where `make_snippet`'s window leads up to in `text` (already cut to `SNIPPET_SCAN`):
    the whole query's match, else `at`; 0 for the start of the text."""
    if whole is not None:
        start = _whole_match(text, whole, low)
        at = start if start >= 0 else at
    return at if 0 < at <= len(text) else 0


def _width(text: str) -> int:
    """`text`'s width in a snippet's window: its cost units without JSON escapes (`text_cost`:
    a character each in ASCII text; else its UTF-8 bytes, and one more a CJK character). A
    window of 90 Devanagari characters cost 270 units, of CJK ones 360: twenty results'
    snippets took a default answer's whole budget and left no room for a Page
    (docs/memory.md, "Result rows")."""
    return text_cost(text)


def _char_width(char: str) -> int:
    """One non-ASCII character's `_width`, by its code point (no pattern a character: the
    window's walk)."""
    code = ord(char)
    width = 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return width + 1 if is_cjk(char) else width


def _within(text: str, width: int) -> int:
    """How many characters of `text`, from its start, fit in `width` (`_width`): a walk of
    at most `width` characters, each at least one unit."""
    if text.isascii():
        return min(len(text), width)
    used = 0
    for index, char in enumerate(text):
        used += 1 if char.isascii() else _char_width(char)
        if used > width:
            return index
    return len(text)


def _window(text: str, at: int) -> str:
    """`make_snippet` for a text cut to `SNIPPET_SCAN` and a `_snippet_at` position."""
    lead = 0
    if at > 0:
        before = text[max(0, at - SNIPPET_LEAD) : at]
        lead = at - _within(before[::-1], SNIPPET_LEAD)
        # Start at a word boundary: skip the rest of a word the cut fell into (CJK
        # characters are words of their own), then the separators after it.
        while 0 < lead < at and _in_shown_word(text[lead - 1]) and _in_shown_word(text[lead]):
            lead += 1
        while 0 < lead < at and text[lead].isspace():
            lead += 1
    # Half the window first: its flattened text is a prefix of the whole window's, so once
    # it is longer than the budget the snippet below is the same (most texts).
    window = text[lead : lead + 2 * SNIPPET_WINDOW]
    flat = " ".join(window.split())
    if len(flat) <= SNIPPET_WINDOW:
        window = text[lead : lead + 4 * SNIPPET_WINDOW]
        flat = " ".join(window.split())
    prefix = _ELLIPSIS if lead > 0 and flat else ""
    budget = SNIPPET_WINDOW - _width(prefix)
    if _width(flat) > budget or lead + len(window) < len(text):
        room = _within(flat, budget - _width(_ELLIPSIS))
        piece = flat[:room]
        if len(flat) > room and not flat[room].isspace():
            cut = piece.rfind(" ")
            # Cut at the last word boundary unless that loses most of the window (CJK).
            if cut >= 0 and _width(piece[cut:]) < SNIPPET_LEAD:
                piece = piece[:cut]
        flat = piece.rstrip() + _ELLIPSIS
    return prefix + flat


def _provenance(conn: sqlite3.Connection, slugs: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each Page's provenance, looked up by (Page, value) for the four values there are
    (what `order_provenance` keeps): at most four rows a Page, whatever else a store holds
    (5,000,000 junk rows on one Page cost seconds a call, issue 36)."""
    found: dict[str, set[str]] = {slug: set() for slug in slugs}
    if slugs:
        for slug, value in conn.execute(
            "SELECT page_slug, provenance FROM page_provenance "
            f"WHERE page_slug IN ({placeholders(len(slugs))}) "
            f"AND provenance IN ({placeholders(len(PROVENANCE_ORDER))})",
            [*slugs, *PROVENANCE_ORDER],
        ):
            found[slug].add(value)
    return {slug: tuple(order_provenance(values)) for slug, values in found.items()}


PageRow = tuple[str, str, "str | None", str, int, str]
"""title, kind, summary, body head, body length, updated_at."""
PageMeta = tuple[tuple[str, ...], tuple[str, ...]]
"""provenance, links."""
SourceRow = tuple[str, str, str]
"""title, content head, created_at."""

ROWS_BUDGET = 1_000_000
"""Characters of Page and Source heads (and of Pages' links) one `_Rows` keeps."""
SNIPPETS_BUDGET = 1_000_000
"""Characters of lowercased snippet texts and of snippets one `_Rows` keeps."""


class _Rows:
    """The result rows one store revision has read (they cannot change within it), up to
    `ROWS_BUDGET` characters of text, each row counting one more (a row without text is
    not free: a long session over a large Wiki reads thousands); what is not kept is read
    again."""

    def __init__(self) -> None:
        self.pages: dict[str, PageRow | None] = {}
        self.metas: dict[str, PageMeta | None] = {}
        self.sources: dict[str, SourceRow | None] = {}
        self.lowered: dict[tuple[str, str], str] = {}
        """(doc type, identifier) -> its snippet text lowercased (`_whole_match`)."""
        self.bodies: dict[tuple[str, str], PageBody] = {}
        """(scope, slug) -> the Page's `pages` entry as read (`bounds.py` checks it)."""
        self.windows: dict[tuple[str, str, int], str] = {}
        """(doc type, identifier, `_snippet_at`) -> the snippet (queries sharing a first
        term get the same window)."""
        self.size = 0
        self.snippet_size = 0

    def keep(self, text: str) -> bool:
        if self.size + len(text) + 1 > ROWS_BUDGET:
            return False
        self.size += len(text) + 1
        return True

    def keep_snippet(self, text: str) -> bool:
        """Like `keep`, for what snippets derive from the rows (their own budget, so that
        they never crowd out the rows)."""
        if self.snippet_size + len(text) + 1 > SNIPPETS_BUDGET:
            return False
        self.snippet_size += len(text) + 1
        return True


ROWS: RevisionCache[_Rows] = RevisionCache(4)
"""`_Rows` per (store path, store_id, store_revision), like `scoring.PREPARED`."""


def _page_rows(conn: sqlite3.Connection, slugs: Sequence[str]) -> dict[str, PageRow]:
    pages: dict[str, PageRow] = {}
    if slugs:
        for slug, title, kind, summary, head, length, updated in conn.execute(
            f"SELECT slug, title, kind, summary, substr(body, 1, {_HEAD}), length(body), "
            f"updated_at FROM pages WHERE slug IN ({placeholders(len(slugs))})",
            list(slugs),
        ):
            pages[slug] = (title, kind, summary, head, int(length), updated)
    return pages


def _page_meta(conn: sqlite3.Connection, slugs: Sequence[str]) -> dict[str, PageMeta]:
    """Each of `slugs`' (Pages that exist) provenance and links: read for result Pages only,
    not for every hit the ranking reads."""
    provenance = _provenance(conn, slugs)
    links = _links(conn, slugs)
    return {slug: (provenance[slug], links[slug]) for slug in slugs}


def _source_rows(conn: sqlite3.Connection, source_ids: Sequence[str]) -> dict[str, SourceRow]:
    sources: dict[str, SourceRow] = {}
    if source_ids:
        for ident, title, head, created in conn.execute(
            f"SELECT id, title, substr(content, 1, {SNIPPET_SCAN}), created_at "
            f"FROM sources WHERE id IN ({placeholders(len(source_ids))})",
            list(source_ids),
        ):
            sources[ident] = (title, head, created)
    return sources


Row = TypeVar("Row", PageRow, PageMeta, SourceRow)


def _cached(
    kept: dict[str, Row | None] | None,
    rows: _Rows | None,
    idents: Sequence[str],
    read: Callable[[sqlite3.Connection, Sequence[str]], dict[str, Row]],
    conn: sqlite3.Connection,
    head: Callable[[Row], str],
    known: dict[str, Row] | None = None,
) -> dict[str, Row]:
    """The rows of `idents`: those `known` (read earlier in this request) or `kept` (this
    revision's, `ROWS`), the rest read, kept while the budget lasts, and added to `known`."""
    known = {} if known is None else known
    found: dict[str, Row] = {}
    missing: list[str] = []
    for ident in idents:
        # One look-up per ident and place: another thread may add to `kept` meanwhile, and
        # an ident must come out found, absent (a kept None) or missing, never none of them.
        row = known.get(ident)
        if row is None and kept is not None and rows is not None:
            try:
                row = kept[ident]
            except KeyError:
                missing.append(ident)
                continue
        elif row is None:
            missing.append(ident)
            continue
        if row is not None:
            found[ident] = row
    if missing:
        fresh = read(conn, missing)
        found.update(fresh)
        known.update(fresh)
        if kept is not None and rows is not None:
            for ident in missing:
                row = fresh.get(ident)  # None: absent, kept as such (one unit of the budget)
                if rows.keep("" if row is None else head(row)):
                    kept[ident] = row
    return found


def page_heads(
    conn: sqlite3.Connection,
    slugs: Sequence[str],
    cache_key: Hashable | None = None,
    read: dict[str, PageRow] | None = None,
) -> dict[str, tuple[str, str]]:
    """Each of `slugs`' (title, body head): what ranking with section evidence reads. The rows
    are kept like `read_hits`' (`ROWS`) and added to `read`, so that the request's
    `read_hits` given it reads none of them again, even once the revision's budget is
    spent (a large Wiki's Pages are each read once)."""
    kept = None if cache_key is None else ROWS.get_or_build(cache_key, _Rows)
    pages = _cached(
        None if kept is None else kept.pages, kept, slugs, _page_rows, conn, lambda r: r[3], read
    )
    return {slug: (row[0], row[3]) for slug, row in pages.items()}


def read_hits(
    conn: sqlite3.Connection,
    scope: str,
    hits: Sequence[Hit],
    query: str,
    cache_key: Hashable | None = None,
    read: dict[str, PageRow] | None = None,
) -> tuple[list[ResultRow], dict[str, PageBody]]:
    """Result rows for `hits` (same order) and the bodies of their Pages.

    Read inside the caller's transaction, each table once: a Page's row gives both its
    snippet and its `pages` entry. `cache_key` names the store revision whose rows may be
    kept (`ROWS`); `read` holds the Page rows this request read already (`page_heads`).
    """
    slugs = [hit.identifier for hit in hits if hit.doc_type == "page"]
    source_ids = [hit.identifier for hit in hits if hit.doc_type == "source"]
    kept = None if cache_key is None else ROWS.get_or_build(cache_key, _Rows)
    pages = _cached(
        None if kept is None else kept.pages, kept, slugs, _page_rows, conn, lambda r: r[3], read
    )
    metas = _cached(
        None if kept is None else kept.metas, kept, [slug for slug in slugs if slug in pages],
        _page_meta, conn, lambda m: "".join(m[1]),
    )  # fmt: skip
    sources = _cached(
        None if kept is None else kept.sources, kept, source_ids, _source_rows, conn,
        lambda r: r[1],
    )  # fmt: skip
    whole = query_pattern(query)
    rows: list[ResultRow] = []
    bodies: dict[str, PageBody] = {}
    for hit in hits:
        if hit.doc_type == "page" and hit.identifier in pages:
            slug = hit.identifier
            title, kind, summary, head, length, updated = pages[slug]
            provenance, links = metas[slug]
            snippet = _snippet(kept, hit, snippet_text(head, summary), whole)
            rows.append(
                ResultRow(
                    scope, "page", slug, title, kind, summary, provenance,
                    snippet, hit.rank, hit.match, updated,
                )
            )  # fmt: skip
            body = None if kept is None else kept.bodies.get((scope, slug))
            if body is None:
                body = PageBody(
                    scope, slug, title, kind, summary, head, length, provenance, links, updated,
                )  # fmt: skip
                if kept is not None and kept.pages.get(slug) is not None:
                    # Kept with its row only, whose head it shares: no copy to count. A
                    # row past the budget is read again, and so is its entry.
                    kept.bodies[scope, slug] = body
            bodies[slug] = body
        elif hit.doc_type == "source" and hit.identifier in sources:
            title, head, created = sources[hit.identifier]
            rows.append(
                ResultRow(
                    scope, "source", hit.identifier, title, None, None, None,
                    _snippet(kept, hit, head, whole), hit.rank, hit.match, created,
                )
            )  # fmt: skip
    return rows, bodies


def _snippet(kept: _Rows | None, hit: Hit, text: str, whole: WholeQuery | None) -> str:
    """`make_snippet(text, hit.snippet_at, whole)`, through the revision's `kept` windows."""
    if kept is None:
        return make_snippet(text, hit.snippet_at, whole)
    text = text[:SNIPPET_SCAN]
    doc = (hit.doc_type, hit.identifier)
    low = None
    if whole is not None:
        low = kept.lowered.get(doc)
        if low is None:
            low = text.lower()
            if kept.keep_snippet(low):
                kept.lowered[doc] = low
    at = _snippet_at(text, hit.snippet_at, whole, low)
    snippet = kept.windows.get((*doc, at))
    if snippet is None:
        snippet = _window(text, at)
        if kept.keep_snippet(snippet):
            kept.windows[(*doc, at)] = snippet
    return snippet


def _links(conn: sqlite3.Connection, slugs: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each Page's first `LINKS_READ` out-links to Pages the store holds, by target: a link
    to no Page (a `[[page]]` not written yet, a `*.md` link named by a file the Wiki does not
    hold) is a slug the agent cannot open, so an answer does not spend its bytes on it
    (`lwc page show` lists every link). Bounded in SQL per Page: at most `LINKS_SCAN` links
    are looked at (the primary key's range), so a Page with 100,000 links costs no more than
    one with 4,096."""
    found: dict[str, tuple[str, ...]] = {}
    for slug in slugs:
        # Stepped one row at a time: it stops at the `LINKS_READ`th link that names a Page.
        rows = conn.execute(
            "SELECT to_slug, EXISTS (SELECT 1 FROM pages WHERE pages.slug = to_slug) "
            "FROM links WHERE from_slug = ? ORDER BY to_slug LIMIT ?",
            (slug, LINKS_SCAN),
        )
        try:
            named = (target for target, held in rows if held)
            found[slug] = tuple(itertools.islice(named, LINKS_READ))
        finally:
            rows.close()
    return found


LINKS_READ = 65
"""Out-links read per Page: one more than an answer keeps (`bounds.LINKS_MAX`, 64), so
`bounds.py` can mark the Page cut."""
LINKS_SCAN = 4096
"""Out-links looked at per Page for `LINKS_READ` that name a Page: as many as a write lets a
Page have (`index.inputs.MAX_PAGE_LINKS`); a store written otherwise may hold more."""


def fit_pages(
    ordered: Sequence[PageBody],
    terms: Sequence[tuple[str, int]],
    room: int,
    scores: Sequence[float] = (),
    credits: Sequence[int] = (),
) -> list[dict[str, Any]]:
    """`pages` in result order, as `_fit_pages` gives them; kept for the last `FITTED_MAX`
    inputs (an agent asks again; the Pages are frozen values of one store revision), handed
    out as copies the caller may change. `credits`: the cost units each Page's result row
    gives back when the Page comes (its snippet, which the caller then empties)."""
    scores = tuple(scores) or tuple(1.0 / (i + 1) for i in range(len(ordered)))
    credits = tuple(credits) or (0,) * len(ordered)
    key = (tuple(ordered), tuple(terms), room, scores, credits)
    with _FITTED_LOCK:
        fitted = _FITTED.get(key)
        if fitted is not None:
            _FITTED.move_to_end(key)
    if fitted is None:
        fitted = tuple(_fit_pages(ordered, terms, room, scores, credits))
        size = sum(len(item["body"]) for item in fitted)
        with _FITTED_LOCK:
            global _fitted_size
            if size <= FITTED_BUDGET and key not in _FITTED:
                _FITTED[key] = fitted
                _fitted_size += size
                while len(_FITTED) > FITTED_MAX or _fitted_size > FITTED_BUDGET:
                    _, dropped = _FITTED.popitem(last=False)
                    _fitted_size -= sum(len(item["body"]) for item in dropped)
    return [{k: list(v) if isinstance(v, list) else v for k, v in item.items()} for item in fitted]


FITTED_MAX = 1024
FITTED_BUDGET = 4_000_000
"""Fitted answers kept: as many as the engine's answers (`engine.ANSWERS_MAX`), their bodies
at most this many characters together (whole bodies are the Pages' own strings)."""
_FITTED: collections.OrderedDict[
    tuple[
        tuple[PageBody, ...], tuple[tuple[str, int], ...], int, tuple[float, ...], tuple[int, ...]
    ],
    tuple[dict[str, Any], ...],
] = collections.OrderedDict()
_FITTED_LOCK = threading.Lock()
_fitted_size = 0


def _fit_pages(
    ordered: Sequence[PageBody],
    terms: Sequence[tuple[str, int]],
    room: int,
    scores: Sequence[float],
    credits: Sequence[int],
) -> list[dict[str, Any]]:
    """`pages` in result order, within `room` cost units (`passages.cost`) and LWC's caps.

    A follow-up read's entries are cut in turn (`_fit_continued`). Otherwise `passages.allot`
    chooses across the Pages: each gets a cap by rank (`passages.caps`: the best the most)
    and a prior from its search score (`passages.priors`); the best passages of all of them
    go first. A body that fits comes whole; a longer one comes as its chosen passages, with
    its outline and `more`. Each body has at most `PAGE_BODY_CAP` characters, all together
    at most `PAGES_TOTAL_CAP`. A Page that gets nothing is left out.
    """
    if any(page.offset >= 0 for page in ordered):
        return _fit_continued(ordered, room)
    caps = page_caps(len(ordered), room)
    weights = priors(scores)
    slots: list[Slot] = []
    heads: list[list[str]] = []
    for page, cap, prior, credit in zip(ordered, caps, weights, credits, strict=True):
        outline_ = outline(page.head, page.title) if page.head else []
        whole = page.offset < 0 and len(page.head) == page.length
        # The entry with an empty body (its quotes stay: `body_units` is what a body adds to
        # them) and the comma before the next, less what its result row gives back.
        bare = page.to_json("", False)
        bare["truncated"] = page.cut
        entry = text_cost(dumps_compact(bare)) + 1 - credit
        cut_entry = text_cost(dumps_compact(_cut_entry(page, "", outline_))) + 1 - credit
        heads.append(outline_)
        slots.append(
            Slot(page.head, prior, cap, PAGE_BODY_CAP, entry, cut_entry, whole, page.title)
        )
    chosen = allot(slots, terms, room, PAGES_TOTAL_CAP)
    out: list[dict[str, Any]] = []
    for page, focused, outline_ in zip(ordered, chosen, heads, strict=True):
        if focused is None:
            continue
        if focused.truncated:
            out.append(_cut_entry(page, focused.body, outline_))
        else:
            out.append(page.to_json(focused.body, False))
    return out


def _cut_entry(page: PageBody, body: str, heads: list[str]) -> dict[str, Any]:
    """A query-focused Page's entry: its outline and the call that reads it whole."""
    item = page.to_json(body, True, heads)
    item["more"] = f"[[{page.slug}]]"
    return item


def _fit_continued(ordered: Sequence[PageBody], room: int) -> list[dict[str, Any]]:
    """A follow-up read's entries in turn, each within what is left (SPEC §4: the
    documented follow-up call reads a Page whole or continues it)."""
    chars = PAGES_TOTAL_CAP
    left = room
    out: list[dict[str, Any]] = []
    for page in ordered:
        base = text_cost(dumps_compact(page.to_json("", False))) + len(page.slug) + 16
        share = left - base - len(',"more":""') - len(page.slug) - 16
        cap = min(PAGE_BODY_CAP, chars)
        if share < MIN_SHARE or cap <= 0:
            break
        entry = _continued(page, share, cap)
        if entry is not None:
            out.append(entry)
            chars -= len(entry["body"])
            left -= base + text_cost(dumps_compact(entry))
    return out


def json_units(text: str) -> int:
    """`text_cost(dumps_compact(text))` of a string, counted: its escaped text (`cost`) and
    its two quotes."""
    return 2 + cost(text)


def dumps_compact(obj: Any) -> str:
    """Compact JSON as the text block writes it (for sizes)."""
    return to_bytes(obj).decode()


_REFERENCE = re.compile(r"\[\[([^\[\]|#@\s]+)(?:#([^\[\]]+)|@(\d{1,12}))?\]\]")


def page_reference(query: str) -> tuple[str, str | None, int] | None:
    """`(slug, heading, offset)` when `query` is a follow-up read of one Page:
    `[[slug]]` (from its start), `[[slug#Heading]]` (from that heading) or `[[slug@N]]`
    (from character N, as a cut Page's `more` says); None for a search."""
    found = _REFERENCE.fullmatch(query.strip())
    if found is None:
        return None
    slug, heading, offset = found.groups()
    return slug, heading, int(offset) if offset else 0


def read_from(
    conn: sqlite3.Connection, body: PageBody, heading: str | None, offset: int
) -> PageBody:
    """`body` with `head` = its text from `offset` (or from the line of `heading`, looked
    for in the first `FOCUS_SCAN` characters; not found: from the start), up to
    `PAGE_BODY_CAP` characters, read in SQL (a Page of any length is in reach)."""
    if heading is not None:
        wanted = attribute_free(heading).strip().lower()
        offset = next(
            (
                section.start
                for section in sections(body.head)
                if section.level and section.path[-1].lower() == wanted
            ),
            0,
        )
    offset = min(offset, body.length)
    (text,) = conn.execute(
        "SELECT substr(body, ?, ?) FROM pages WHERE slug = ?",
        (offset + 1, PAGE_BODY_CAP, body.slug),
    ).fetchone()
    return attrs.evolve(body, head=str(text), offset=offset)


def _continued(page: PageBody, room: int, cap: int) -> dict[str, Any] | None:
    """A follow-up read's entry: the text from `page.offset` that fits, cut at the last
    paragraph (else line) end, with `more` naming the call that reads on."""
    text = page.head[:cap]
    if cost(text) > room:
        text = text[: max(room // 4, 0)]
        while text and cost(text) > room:
            text = text[: len(text) * 9 // 10]
    end = page.offset + len(text)
    if end < page.length and text:
        cut, skip = text.rfind("\n\n"), 2
        if cut <= 0:
            cut, skip = text.rfind("\n"), 1
        if cut > 0:
            text = text[:cut]
            end = page.offset + cut + skip  # the next read starts after the line break
    if not text and page.length > page.offset:
        return None
    item = page.to_json(text, page.offset > 0 or end < page.length)
    if end < page.length:
        item["more"] = f"[[{page.slug}@{end}]]"
    return item
