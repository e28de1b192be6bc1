"""What a store may put into an answer: checked types, finite numbers, bounded fields.

A store is data from wherever the workspace came from (SPEC §2, "Every response is
bounded"; §4, "Safe reading"). Each value read from one is checked here before it joins the
answer: a value of the wrong type or a non-finite number makes that store `store_corrupt`
(`StoreError`), and a string longer than its limit is cut, marking its Page `truncated`. The
CLI refuses the same limits (`format/limits.py`) at write time (`inputs.validate_page`), so
a Wiki written by lwc never needs cutting.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from lwc_trio.exceptions import StoreError
from lwc_trio.memory.format.limits import (
    IDENT_MAX,
    KIND_MAX,
    LINK_MAX,
    LINKS_MAX,
    STAMP_MAX,
    SUMMARY_MAX,
    TITLE_MAX,
)
from lwc_trio.memory.format.slugs import PROVENANCE_ORDER
from lwc_trio.memory.query.results import SNIPPET_MAX, PageBody, ResultRow

__all__ = [
    "bound_body",
    "bound_neighborhood",
    "bound_row",
    "cut",
]

_ELLIPSIS = "…"
_PROVENANCE = frozenset(PROVENANCE_ORDER)


def _corrupt(what: str) -> StoreError:
    return StoreError("store_corrupt", f"the store holds an invalid {what}")


def cut(value: str, limit: int) -> str:
    """`value` if it fits in `limit` characters, else its first `limit - 1` and `…`."""
    return value if len(value) <= limit else value[: limit - 1] + _ELLIPSIS


def _text(value: object, limit: int, what: str) -> str:
    if not isinstance(value, str):
        raise _corrupt(what)
    return cut(value, limit)


def _optional(value: object, limit: int, what: str) -> str | None:
    return None if value is None else _text(value, limit, what)


def _number(value: object, what: str) -> float:
    # bool is an int; a store's REAL can be ±inf (SQLite stores NaN as NULL).
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _corrupt(what)
    number = float(value)
    if not math.isfinite(number):
        raise StoreError("store_corrupt", f"the store produced a non-finite {what}")
    return number


def _provenance(values: object) -> tuple[str, ...]:
    # Values read from SQLite are hashable; `issuperset` is `all(v in _PROVENANCE ...)`.
    if not isinstance(values, tuple) or not _PROVENANCE.issuperset(values):
        raise _corrupt("provenance")
    return values


def _fits(value: object, limit: int) -> bool:
    return type(value) is str and len(value) <= limit


def bound_row(row: ResultRow) -> ResultRow:
    """`row` with every field checked and cut to its limit. Raises `StoreError`."""
    # The field checks spelt out (no calls): this runs for every row of every answer.
    kind, summary, updated = row.kind, row.summary, row.updated_at
    if (
        type(row.identifier) is str
        and len(row.identifier) <= IDENT_MAX
        and type(row.title) is str
        and len(row.title) <= TITLE_MAX
        and (kind is None or (type(kind) is str and len(kind) <= KIND_MAX))
        and (summary is None or (type(summary) is str and len(summary) <= SUMMARY_MAX))
        and type(row.snippet) is str
        and len(row.snippet) <= SNIPPET_MAX
        and (updated is None or (type(updated) is str and len(updated) <= STAMP_MAX))
        and type(row.rank) is float
        and math.isfinite(row.rank)
        and (row.provenance is None or _provenance(row.provenance) is row.provenance)
    ):
        return row  # the common case: a store lwc wrote
    return attrs.evolve(
        row,
        identifier=_text(row.identifier, IDENT_MAX, "identifier"),
        title=_text(row.title, TITLE_MAX, "title"),
        kind=_optional(row.kind, KIND_MAX, "kind"),
        summary=_optional(row.summary, SUMMARY_MAX, "summary"),
        provenance=None if row.provenance is None else _provenance(row.provenance),
        snippet=_text(row.snippet, SNIPPET_MAX, "snippet"),
        rank=_number(row.rank, "score"),
        updated_at=_optional(row.updated_at, STAMP_MAX, "timestamp"),
    )


def bound_body(body: PageBody) -> PageBody:
    """`body` with every field checked and cut; `cut` set when anything was. Raises
    `StoreError`."""
    summary = body.summary
    if (
        type(body.slug) is str
        and len(body.slug) <= IDENT_MAX
        and type(body.title) is str
        and len(body.title) <= TITLE_MAX
        and type(body.kind) is str
        and len(body.kind) <= KIND_MAX
        and (summary is None or (type(summary) is str and len(summary) <= SUMMARY_MAX))
        and type(body.updated_at) is str
        and len(body.updated_at) <= STAMP_MAX
        and type(body.head) is str
        and type(body.length) is int
        and len(body.links) <= LINKS_MAX
        and (not body.links or all(_fits(link, LINK_MAX) for link in body.links))
        and _provenance(body.provenance) is body.provenance
    ):
        return body  # the common case: a store lwc wrote
    fields: dict[str, Any] = {
        "slug": _text(body.slug, IDENT_MAX, "slug"),
        "title": _text(body.title, TITLE_MAX, "title"),
        "kind": _text(body.kind, KIND_MAX, "kind"),
        "summary": _optional(body.summary, SUMMARY_MAX, "summary"),
        "updated_at": _text(body.updated_at, STAMP_MAX, "timestamp"),
    }
    if not isinstance(body.head, str) or not isinstance(body.length, int):
        raise _corrupt("page body")
    links = body.links
    if not all(isinstance(link, str) for link in links):
        raise _corrupt("link")
    fields["links"] = tuple(cut(link, LINK_MAX) for link in links[:LINKS_MAX])
    fields["provenance"] = _provenance(body.provenance)
    changed = len(links) > LINKS_MAX or any(fields[name] != getattr(body, name) for name in fields)
    return attrs.evolve(body, cut=body.cut or changed, **fields)


def bound_neighborhood(neighborhood: dict[str, Any] | None) -> dict[str, Any] | None:
    """The graph neighbourhood with node fields checked and cut. Raises `StoreError`."""
    if neighborhood is None:
        return None
    nodes = []
    for node in neighborhood["nodes"]:
        identifier = _text(node["identifier"], IDENT_MAX, "identifier")
        score = node["score"]
        nodes.append(
            {
                **node,
                "key": f"page:{identifier}",
                "identifier": identifier,
                "title": _text(node["title"], TITLE_MAX, "title"),
                "kind": _text(node["kind"], KIND_MAX, "kind"),
                "score": None if score is None else _number(score, "graph score"),
            }
        )
    seed = nodes[0]["key"]
    edges = [{**edge, "from": seed, "to": node["key"]} for edge, node in zip(
        neighborhood["edges"], nodes[1:], strict=True
    )]  # fmt: skip
    return {**neighborhood, "nodes": nodes, "edges": edges}
