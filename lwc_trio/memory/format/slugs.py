"""Validation of user-supplied names: slugs, provenance values, kinds."""

from __future__ import annotations

import unicodedata

__all__ = [
    "MAX_SLUG_BYTES",
    "PROVENANCE_ORDER",
    "USER_PROVENANCE",
    "is_valid_slug",
    "order_provenance",
    "shown_name",
    "slug_problem",
    "source_id_problem",
]

# Bytes, not characters: the slug is a file name on export, and file systems count bytes
# (255 at most); 200 leaves room for the `.md` suffix and temporary names.
MAX_SLUG_BYTES = 200

# Output order is fixed: `source-grounded` first (derived: the Page cites a Source), then the
# values a writer may claim, in this order.
PROVENANCE_ORDER = ("source-grounded", "user-provided", "agent-observed", "hypothesis")
USER_PROVENANCE = frozenset(PROVENANCE_ORDER[1:])


def slug_problem(slug: str) -> str | None:
    """Why `slug` is not one safe filename segment, or None when it is."""
    if not slug:
        return "a slug must not be empty"
    if len(slug.encode("utf-8", "surrogatepass")) > MAX_SLUG_BYTES:
        return f"a slug must be at most {MAX_SLUG_BYTES} bytes in UTF-8"
    if "/" in slug or "\\" in slug:
        return "a slug must not contain '/' or '\\'"
    if ".." in slug or slug == ".":
        return "a slug must not be '.' or contain '..'"
    # Printable ASCII has none of these categories (the usual slug: no per-character scan).
    if not (slug.isascii() and slug.isprintable()) and any(
        unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") for ch in slug
    ):
        return "a slug must not contain control characters"
    if slug != slug.strip():
        return "a slug must not start or end with whitespace"
    return None


SOURCE_ID_PREFIX = "src-"
SOURCE_ID_HEX = 16
"""A Source id is `src-` and the first 16 hex digits of its content's SHA-256 (`source_id`)."""

_HEX = frozenset("0123456789abcdef")


def source_id_problem(ident: str) -> str | None:
    """Why `ident` is not a Source id lwc writes, or None when it is one."""
    digits = ident.removeprefix(SOURCE_ID_PREFIX)
    if digits == ident or len(digits) != SOURCE_ID_HEX or not set(digits) <= _HEX:
        return f"a source id is {SOURCE_ID_PREFIX!r} and {SOURCE_ID_HEX} lowercase hex digits"
    return None


SHOWN_NAME_CHARS = 80
"""Characters of a name an error message quotes (a hostile store's slug can be megabytes)."""


def shown_name(name: str) -> str:
    """`name` quoted for a message: `repr` (so control characters show as escapes), cut to
    `SHOWN_NAME_CHARS` with `…` where cut."""
    if len(name) <= SHOWN_NAME_CHARS:
        return repr(name)
    return repr(name[:SHOWN_NAME_CHARS]) + "…"


def is_valid_slug(slug: str) -> bool:
    """True when `slug` is one safe filename segment."""
    return slug_problem(slug) is None


def order_provenance(values: set[str]) -> list[str]:
    """`values` in the fixed output order."""
    return [value for value in PROVENANCE_ORDER if value in values]
