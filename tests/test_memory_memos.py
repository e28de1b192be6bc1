"""What is parsed from Page text and kept (`format.cache.Memo`): sections, blocks and units,
bounded by size as well as by count — a Page of one-line sections parses into a hundred
times its size, and 64 kept 100 kB such Pages held about 330 MB of sections alone."""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from lwc_trio.memory.format.cache import Memo
from lwc_trio.memory.query import passages
from lwc_trio.memory.text import markdown

HOSTILE = {
    "empty-headings": "#\nD\n" * 5_000,
    "deep-paths": "".join(f"{'#' * (1 + i % 6)} h{i}\nx\n" for i in range(2_000)),
    "long-headings": "".join(f"## {'t' * 200}{i}\nx\n" for i in range(90)),
    "cjk-headings": "".join(f"## {'节' * 30}{i}\n文\n" for i in range(500)),
}
BLOCKY = {
    "paragraph-lines": "x\n\n" * 6_000,
    "mixed-blocks": "x\n\n- a\n\n> q\n\n| t |\n\n" * 800,
}


def _kept(memo: Memo[str, Any], text: str) -> tuple[int, Any]:
    """Bytes `memo`'s function keeps for `text` (its result, and the key the memo holds),
    measured with tracemalloc; the result."""
    memo.__wrapped__("# warm\n\nx\n\n- a\n")  # first-call allocations of the parser itself
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = memo.__wrapped__(text)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before + sys.getsizeof(text)
    finally:
        tracemalloc.stop()
    return kept, value


CASES: list[tuple[str, Memo[str, Any], Callable[[str, Any], int], str]] = [
    *((f"sections-{n}", markdown.sections, markdown._sections_weight, t) for n, t in HOSTILE.items()),
    *((f"units-{n}", passages.split_units, passages._units_weight, t) for n, t in HOSTILE.items()),
    *((f"blocks-{n}", markdown.blocks, markdown._blocks_weight, t) for n, t in BLOCKY.items()),
]  # fmt: skip


@pytest.mark.parametrize(
    ("memo", "weigh", "text"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_kept_parse_weighs_at_least_what_it_keeps(
    memo: Memo[str, Any], weigh: Callable[[str, Any], int], text: str
) -> None:
    """Each memo's estimate is an upper bound of what its entry keeps, for the shapes that
    parse into the most objects (a unit's heading path is its section's: kept apart)."""
    if memo is passages.split_units:
        markdown.sections(text)
    kept, value = _kept(memo, text)
    assert kept <= weigh(text, value)


def test_parsed_pages_stay_within_their_budget() -> None:
    """Twenty 40 kB Pages of one-line sections and blocks (megabytes of sections, units
    and blocks each): what each memo keeps weighs at most `PARSED_BUDGET`,
    and a Page dropped parses as before."""
    bodies = [(f"#\n{seed}\n\n" * 10_000)[:40_000] for seed in range(20)]
    for body in bodies:
        passages.split_units(body)
        markdown.blocks(body)
    for memo in (markdown.sections, passages.split_units, markdown.blocks):
        assert 0 < memo.weight <= markdown.PARSED_BUDGET
        assert len(memo) < len(bodies)
    assert passages.split_units(bodies[0]) == passages._split_units(bodies[0])
