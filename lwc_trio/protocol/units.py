"""Cost units: how much of the answer's budget a text takes (SPEC §2 "Budget"). Sans-IO.

The budget covers the text block as the host reads it: one unit per UTF-8 byte of that compact
JSON text, plus one more per CJK character; a token is estimated at four units
(`tool.UNITS_PER_TOKEN`). So a string value costs its UTF-8 bytes as compact JSON writes it
inside quotes (`\n` and `\"` are two bytes each: `cost`), plus its two quotes; a JSON text
already written costs its bytes as they stand (`text_cost`). Here, below both planes and the
result's assembly, so that sizing an answer imports neither plane.
"""

from __future__ import annotations

import re

__all__ = ["cost", "text_cost"]

_CJK = re.compile(
    "[\u1100-\u11ff\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]"
)
# Control characters compact JSON writes as six bytes (`\u00XX`); `\t`, `\n`, `\r`, `\b` and
# `\f` take two.
_LONG_CONTROL = re.compile(r"[\x00-\x07\x0b\x0e-\x1f]")


def text_cost(encoded: str) -> int:
    """Cost units of a JSON text as it stands (the text block, or a part of it): its UTF-8
    bytes plus one more per CJK character; nothing in it is escaped again."""
    if encoded.isascii():
        return len(encoded)
    return len(encoded.encode("utf-8")) + len(_CJK.findall(encoded))


def cost(text: str) -> int:
    """Cost units of `text` inside a compact JSON string, quotes not counted (see the module
    docstring).

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
