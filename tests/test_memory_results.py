"""Snippets: the pre-screened scan picks exactly the window a full token scan would."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from lwc_trio.memory.results import (
    _ELLIPSIS,
    _SPACE,
    SNIPPET_LEAD,
    SNIPPET_MAX,
    SNIPPET_SCAN,
    make_snippet,
)
from lwc_trio.memory.tokenize import token_spans, tokenize


def reference_snippet(text: str, terms: list[str]) -> str:
    """The straightforward version: walk every token from the start."""
    text = text[:SNIPPET_SCAN]
    wanted = set(terms)
    lead = 0
    for term, start, _end in token_spans(text):
        if term in wanted:
            lead = max(0, start - SNIPPET_LEAD)
            if lead > 0:
                space = max(text.rfind(" ", lead, start), text.rfind("\n", lead, start))
                lead = space + 1 if space >= 0 else lead
            break
    window = text[lead : lead + 4 * SNIPPET_MAX]
    flat = _SPACE.sub(" ", window).strip()
    prefix = _ELLIPSIS if lead > 0 and flat else ""
    budget = SNIPPET_MAX - len(prefix)
    if len(flat) > budget or lead + len(window) < len(text):
        flat = flat[: budget - 1].rstrip() + _ELLIPSIS
    return prefix + flat


WORDS = st.sampled_from(["pod", "Pods", "tripod", "ΟΔΟΣ", "İstanbul", "中文字", "k8s", "the", "_x"])
TEXT = st.lists(st.one_of(WORDS, st.text(max_size=6)), max_size=120).map(
    lambda parts: " ".join(parts)
)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.lists(st.one_of(WORDS, st.text(min_size=1, max_size=4)), min_size=1, max_size=3))
def test_snippet_equals_full_scan(text: str, words: list[str]) -> None:
    """For any text and query, the fast snippet equals the full-scan reference."""
    terms = tokenize(" ".join(words))
    if terms:
        assert make_snippet(text, terms) == reference_snippet(text, terms)


def test_snippet_centres_on_a_deep_match_and_is_bounded() -> None:
    """A term deep in the body pulls the window to it; the snippet stays within 180 chars."""
    body = "filler words here " * 400 + "the kubernetes scheduler places pods"
    snippet = make_snippet(body, ["scheduler"])
    assert "scheduler" in snippet
    assert len(snippet) <= SNIPPET_MAX
    assert re.match(_ELLIPSIS, snippet)
