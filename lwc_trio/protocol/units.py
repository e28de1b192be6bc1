"""Cost units: how much of the answer's budget a text takes (SPEC §2 "Budget"). Sans-IO.

One unit per UTF-8 byte of the text inside a compact JSON string (escapes included), plus one
more per CJK character; a token is estimated at four units (`tool.UNITS_PER_TOKEN`). Here,
below both planes and the result's assembly, so that sizing an answer imports neither plane.
"""

from __future__ import annotations

import re

__all__ = ["cost", "field_cost"]

_CJK = re.compile(
    "[\u1100-\u11ff\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]"
)
# Control characters compact JSON writes as six bytes (`\u00XX`); `\t`, `\n`, `\r`, `\b` and
# `\f` take two.
_LONG_CONTROL = re.compile(r"[\x00-\x07\x0b\x0e-\x1f]")
_CONTROL = re.compile(r"[\x00-\x1f]")


def cost(text: str) -> int:
    """Cost units of `text` inside a compact JSON string (see the module docstring).

    Counted, not encoded: this runs for every Page of every answer."""
    ascii_ = text.isascii()
    size = len(text) if ascii_ else len(text.encode("utf-8")) + len(_CJK.findall(text))
    size += text.count('"') + text.count("\\")
    if not text.isprintable():  # line breaks, tabs, other control characters
        size += text.count("\n") + text.count("\t") + text.count("\r")
        size += text.count("\b") + text.count("\f")
        if _LONG_CONTROL.search(text) is not None:
            size += 5 * len(_LONG_CONTROL.findall(text))
    return size


def field_cost(text: str) -> int:
    """Cost units a string field holding `text` adds to the text block, its quotes excluded.

    The text block is compact JSON, and the budget counts it as a JSON string itself (`cost`
    of the block), so the field's text is escaped twice: each character JSON escapes brings a
    backslash that is escaped again (`"` and `\\` two more units, a control character one).
    Additive over concatenation: `cost(dumps(text)) == field_cost(text) + 4`."""
    size = cost(text) + 2 * (text.count('"') + text.count("\\"))
    if not text.isprintable():
        size += len(_CONTROL.findall(text))
    return size
