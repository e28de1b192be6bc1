"""Validation of user-supplied names: slugs, provenance values, kinds."""

from __future__ import annotations

import unicodedata

__all__ = [
    "MAX_SLUG_BYTES",
    "PROVENANCE_ORDER",
    "USER_PROVENANCE",
    "is_valid_slug",
    "order_provenance",
    "slug_problem",
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


def is_valid_slug(slug: str) -> bool:
    """True when `slug` is one safe filename segment."""
    return slug_problem(slug) is None


def order_provenance(values: set[str]) -> list[str]:
    """`values` in the fixed output order."""
    return [value for value in PROVENANCE_ORDER if value in values]
