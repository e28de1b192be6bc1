"""A document's fields as both sides of the index see them (SPEC §4 "Search").

The writer stores, per document and term, a count weighted by field (`FIELD_WEIGHTS`, what
BM25F reads) and where the term first occurs in the snippet text (`snippet_text`, at most
`SNIPPET_SCAN` characters of it); it marks generic documents (`is_generic`), which a query
pushes down unless it asks for them (`GENERIC_TERMS`). The readers rank and cut snippets by
the same rules, so they live here, below both sides.
"""

from __future__ import annotations

from lwc_trio.memory.text.tokenize import has_cjk, index_terms, token_spans

__all__ = [
    "FIELD_WEIGHTS",
    "GENERIC_TERMS",
    "SNIPPET_SCAN",
    "first_offsets",
    "is_generic",
    "query_form",
    "snippet_text",
]

FIELD_WEIGHTS = (4, 3, 2, 1)
"""Title, path, summary, body: each occurrence's weight in a posting's count (BM25F).
Part of the format: changing them needs a format_version bump (tuned on Cranfield)."""

SNIPPET_SCAN = 20_000
"""Characters of a document's snippet text searched for the first match (a 64 MiB Source is
never read whole for a query; a match further in gives a snippet from the start)."""

# A document named or titled like this is a table of contents: pushed down unless asked for.
_GENERIC_NAMES = ("index", "overview", "readme", "toc", "contents", "table of contents")
_GENERIC_FORMS = frozenset(tuple(index_terms(name)) for name in _GENERIC_NAMES)
GENERIC_TERMS = frozenset(index_terms(" ".join(_GENERIC_NAMES[:5])))
"""Query terms that ask for generic pages (then they are not pushed down)."""


def is_generic(name: str, title_terms: list[str], name_terms: list[str] | None = None) -> bool:
    """True when the document's name (slug, file stem) or title is a generic one;
    `name_terms` are `index_terms(name)` when the caller has them."""
    named = index_terms(name) if name_terms is None else name_terms
    return tuple(named) in _GENERIC_FORMS or tuple(title_terms) in _GENERIC_FORMS


def query_form(text: str, terms: list[str]) -> list[str]:
    """`text`'s terms as a query analyzes them, given its index `terms`."""
    if has_cjk(text):
        return [term for term, _w, _s in token_spans(text, query=True)]
    return terms


def snippet_text(body: str, summary: str | None) -> str:
    """The text a Page's snippet is cut from: its body head, or the summary when blank."""
    head = body[:SNIPPET_SCAN]
    return head if head.strip() else (summary or "")


def first_offsets(text: str) -> dict[str, int]:
    """Where each term first occurs in `text` (code points), from the analyzer's spans."""
    first: dict[str, int] = {}
    for term, _word, start in token_spans(text):
        first.setdefault(term, start)
    return first
