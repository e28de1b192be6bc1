"""The lengths a stored field may have (SPEC §2: every answer is bounded).

The writer refuses a longer title, kind or summary (`index/inputs.validate_page`), so a Wiki
written by lwc never needs cutting; a reader cuts whatever a store holds to the same limits
(`query/bounds.py`), since a cloned repository can ship any store.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "IDENT_MAX",
    "KIND_MAX",
    "LINKS_MAX",
    "LINK_MAX",
    "STAMP_MAX",
    "SUMMARY_MAX",
    "TITLE_MAX",
]

TITLE_MAX: Final = 300
SUMMARY_MAX: Final = 1000
KIND_MAX: Final = 64
IDENT_MAX: Final = 256
"""An identifier or slug (Pages, Sources, graph nodes)."""
LINKS_MAX: Final = 64
LINK_MAX: Final = 256
STAMP_MAX: Final = 64
"""`updatedAt`: a timestamp lwc writes in 20 characters; a store could hold anything."""
