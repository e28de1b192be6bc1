"""Query-focused Page bodies (SPEC §4 "Pages"): `lwc_trio.memory.query.passages`, pure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lwc_trio.memory.query import passages as passages_module
from lwc_trio.memory.query.passages import (
    ELISION,
    OUTLINE_MAX,
    body_units,
    caps,
    cost,
    estimate_tokens,
    focus,
    outline,
    split_passages,
)
from lwc_trio.memory.query.results import PageBody, dumps_compact, fit_pages, json_units
from lwc_trio.memory.text.tokenize import index_terms, parse_query, stem_words


def terms(query: str) -> list[tuple[str, int]]:
    return [(t.term, t.count) for t in parse_query(query)[0]]


FILLER = "Unrelated prose about gardens, weather and the colour of old doors. " * 12

DOC = f"""# Server guide

{FILLER}

## Install

{FILLER}

```sh
pip install lwc-trio
# a blank line inside the fence

lwc init
```

## Cancellation

{FILLER}

A request is cancelled when the client sends notifications/cancelled with its id.

### Timeouts

{FILLER}
"""


def test_passages_split_at_headings_then_paragraphs_and_keep_fences_whole() -> None:
    passages = split_passages(DOC)
    texts = [DOC[p.start : p.end] for p in passages]
    fence = next(p for p in passages if p.code)
    assert DOC[fence.start : fence.end].startswith("```sh")
    assert DOC[fence.start : fence.end].endswith("```")
    assert "lwc init" in DOC[fence.start : fence.end]  # the blank line did not split it
    assert fence.path == ("Server guide", "Install")
    cancelled = next(p for p in passages if "notifications/cancelled" in DOC[p.start : p.end])
    assert cancelled.path == ("Server guide", "Cancellation")
    assert not any(t.lstrip().startswith("#") for t in texts)  # headings are paths, not text


def test_a_page_that_fits_comes_whole() -> None:
    got = focus(DOC, terms("cancelled request"), body_units(DOC), 15_000)
    assert got.body == DOC
    assert not got.truncated


def test_a_long_page_comes_as_its_relevant_passage_with_heading_path_and_marker() -> None:
    got = focus(DOC, terms("how is a request cancelled"), 700, 15_000)
    assert got.truncated
    assert "A request is cancelled when the client sends notifications/cancelled" in got.body
    assert "§ Server guide › Cancellation" in got.body
    assert ELISION in got.body
    assert cost(got.body) <= 700
    assert "### Timeouts" not in got.body
    assert "§ Server guide › Install" not in got.body  # nothing matched there


def test_passages_come_in_document_order() -> None:
    got = focus(DOC, terms("pip install lwc cancelled notifications"), 1_500, 15_000)
    assert got.body.index("pip install") < got.body.index("notifications/cancelled")


def test_a_fence_is_not_cut_when_another_passage_can_go_instead() -> None:
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(200)) + "\n```"
    body = f"# Notes\n\nThe compute helper is documented below.\n\n{code}\n\n{FILLER}"
    got = focus(body, terms("compute helper"), 600, 15_000)
    assert "The compute helper is documented below." in got.body
    assert "```python" not in got.body  # it did not fit whole, and was not cut


def test_same_input_same_bytes() -> None:
    args = (DOC, terms("request timeouts cancelled"), 900, 15_000)
    assert focus(*args) == focus(*args)


def test_caps_hold_in_code_points() -> None:
    cjk = "\n\n".join(f"第{i}段 数据库 索引 " + "内存边界" * 300 for i in range(40))
    got = focus(cjk, terms("数据库"), 10**9, 15_000)
    assert len(got.body) <= 15_000
    assert got.truncated


def test_cost_counts_utf8_escapes_and_cjk() -> None:
    assert cost("abcd") == 4
    assert cost("数") == 4  # 3 bytes and one more: about one token
    assert cost('a"b\n') == 6
    assert estimate_tokens("数据库") == 3
    assert estimate_tokens("a" * 400) == 100


def test_outline_lists_headings_outside_code_capped() -> None:
    heads = outline(DOC)
    assert heads == ["# Server guide", "## Install", "## Cancellation", "### Timeouts"]
    many = "\n\n".join(f"## Part {i}\n\ntext" for i in range(100))
    capped = outline(many)
    assert len(capped) == OUTLINE_MAX
    assert capped[-1] == f"… {100 - OUTLINE_MAX + 1} more headings"
    assert outline("```\n# not a heading\n```\n") == []


def test_caps_favour_the_best_page() -> None:
    """Each Page's share by rank is a cap: the best may take the whole budget, later less."""
    got = caps(5, 10_000)
    assert got[0] == 10_000
    assert got == sorted(got, reverse=True)
    assert len(set(got)) == 5


def test_a_passage_cut_short_is_never_joined_to_the_next_as_if_whole() -> None:
    """Every piece between markers is the Page's own text (a cut passage ends the piece)."""
    big = ("ラーメン の 作り方。" * 4000)[:40_000]
    got = focus(big, terms("ラーメン"), 70_000, 15_000)
    pieces = [piece.strip().removesuffix(" …") for piece in got.body.split(ELISION)]
    assert all(piece in big for piece in pieces)
    assert len(got.body) <= 15_000


def _page(slug: str, body: str) -> PageBody:
    return PageBody("project", slug, slug.title(), "note", None, body, len(body), (), (), "t")


def test_a_short_page_that_fits_comes_whole_past_its_share() -> None:
    """A ~900-character glossary ranked third comes whole when the budget left holds it,
    though its rank's share is smaller; unused share still reaches the Pages after it."""
    long = ("The cancellation handshake. " + FILLER + "\n\n") * 30
    glossary = "\n".join(f"- term {i}: what cancellation {i} means here" for i in range(22))
    assert 800 < len(glossary) < 1_000
    pages = [_page("a", long), _page("b", long), _page("glossary", glossary)]
    pages += [_page(f"c{i}", long) for i in range(3)]
    got = fit_pages(pages, terms("cancellation"), 10_000)
    by_slug = {item["slug"]: item for item in got}
    assert by_slug["glossary"]["body"] == glossary
    assert by_slug["glossary"]["truncated"] is False
    assert "more" not in by_slug["glossary"]
    assert by_slug["a"]["truncated"] is True
    assert sum(len(dumps_compact(item)) + 1 for item in got) <= 10_000
    # The same input gives the same bytes (the fitted answer is kept and handed out as a copy).
    got[0]["links"].append("changed")
    again = fit_pages(pages, terms("cancellation"), 10_000)
    assert again[0]["links"] == []
    assert dumps_compact(again[1:]) == dumps_compact(got[1:])


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_counted_sizes_equal_the_encoded_ones(text: str) -> None:
    """`fit_pages` counts an entry's size instead of encoding its body again."""
    assert json_units(text) == cost(dumps_compact(text))


def test_a_cut_fence_is_closed_by_its_own_marker() -> None:
    """A code passage opened with `~~~~` and cut short ends with `~~~~`, not three backticks
    (which would leave the fence open and turn the rest of the answer into code)."""
    lines = "\n".join(f"alpha_{i} = compute(beta)" for i in range(300))
    body = f"# Code\n\nSome prose about alpha.\n\n~~~~python\n{lines}\n~~~~\n\nAfter the code.\n"
    got = focus(body, [("alpha", 1), ("beta", 1)], 1_500, 15_000)
    assert got.truncated
    opened = got.body.index("~~~~python")
    closing = [line for line in got.body[opened:].splitlines()[1:] if line.startswith(("~", "`"))]
    assert closing[:1] == ["~~~~"], got.body[-200:]


def test_passages_are_chosen_across_pages_by_comparable_scores() -> None:
    """The answer's passage sits in the sixth Page, whose search score is close to the
    first's: it comes in, though the first Pages' weaker matches could fill the whole
    budget (a fixed share per rank left the sixth Page too little to say anything)."""
    first = "\n\n".join(
        f"Release notes {i}: the release train left on time, release {i} shipped."
        for i in range(80)
    )
    second = "\n\n".join(
        [f"Storage remark {i}: disks, volumes and their quotas." for i in range(60)]
        + ["To roll back a release run the rollback command with the previous tag."]
        + [f"Storage remark {i}: more about quotas." for i in range(60, 120)]
    )
    pages = [_page(f"notes-{i}", first) for i in range(5)] + [_page("storage", second)]
    scores = [10.0, 9.9, 9.8, 9.7, 9.6, 9.5]
    got = fit_pages(pages, terms("how to roll back a release"), 4_000, scores)
    bodies = {item["slug"]: item["body"] for item in got}
    assert "To roll back a release run the rollback command" in bodies["storage"]
    assert sum(len(dumps_compact(item)) + 1 for item in got) <= 4_000


def test_a_page_whose_passages_match_nothing_is_left_out() -> None:
    """A result Page none of whose passages holds a query term (it matched by title) costs
    no entry while another Page's matching passages still fit: its metadata would say
    nothing the result row does not."""
    long = ("The cancellation handshake. " + FILLER + "\n\n") * 30
    other = (FILLER + "\n\n") * 30
    got = fit_pages([_page("a", long), _page("b", other)], terms("cancellation"), 3_000)
    assert [item["slug"] for item in got] == ["a"]


# Passage scores are computed from per-word counts for ASCII bodies (`passages._ascii_analysis`):
# the reference below is what every body went through before, the search's own analyzer
# (`index_terms`) on each passage with its heading path, all terms counted.
TRICKY = [
    "dying",
    "lying",
    "tying",
    "skies",
    "skis",
    "idly",
    "gently",
    "ugly",
    "early",
    "only",
    "singly",
    "possibility",
    "capability",
    "relational",
    "conditional",
    "hopping",
    "hoping",
    "happy",
    "happily",
    "generalization",
    "operator",
    "does",
    "doe",
    "succeeded",
    "exceeding",
    "inning",
    "herring",
    "news",
    "atlas",
    "sky",
    "generously",
    "hopefulness",
    "predictably",
    "parse_config",
    "ParseConfig",
    "v2",
    "HTTP2",
    "x86_64",
    "e2e",
    "re-index",
    "a",
    "an",
    "the",
    "of",
]


def _reference_scores(bodies: list[str], query: list[tuple[str, int]]) -> list[list[float]]:
    docs: list[dict[str, int]] = []
    lengths: list[int] = []
    sizes: list[int] = []
    for body in bodies:
        passages = split_passages(body)
        sizes.append(len(passages))
        for p in passages:
            found = index_terms(" ".join(p.path) + "\n" + body[p.start : p.end])
            lengths.append(len(found))
            docs.append({t: found.count(t) for t in set(found)})
    flat = passages_module._scores(docs, lengths, query)
    out, at = [], 0
    for n in sizes:
        out.append(flat[at : at + n])
        at += n
    return out


def _pooled(bodies: list[str], query: list[tuple[str, int]]) -> list[list[float]]:
    analyses = [passages_module._analysis(b) for b in bodies]
    first = passages_module._pooled(analyses, query)
    # A body asked about again is counted by term once for all (`passages._Words`).
    assert passages_module._pooled(analyses, query) == first
    return first


_WORD = st.sampled_from(TRICKY) | st.text("abcdeilnorsty0", min_size=1, max_size=9)
_LINE = st.lists(_WORD, min_size=1, max_size=12).map(" ".join)
_BLOCK = st.one_of(
    _LINE,
    _LINE.map(lambda line: f"## {line}"),
    st.lists(_LINE, min_size=1, max_size=3).map(lambda ls: "```\n" + "\n".join(ls) + "\n```"),
    st.text("abcdeilnorsty", min_size=801, max_size=1_700),  # cut inside one long word
)


@given(
    st.lists(st.lists(_BLOCK, min_size=1, max_size=8).map("\n\n".join), min_size=1, max_size=3),
    st.lists(_WORD, min_size=1, max_size=5).map(" ".join),
)
def test_ascii_bodies_score_as_the_analyzer_counts_their_passages(
    bodies: list[str], query_text: str
) -> None:
    query = terms(query_text)
    assert _pooled(bodies, query) == _reference_scores(bodies, query)


def test_ascii_and_general_analysis_agree_on_tricky_words() -> None:
    body = "# Dying stars\n\n" + " ".join(TRICKY) + "\n\n## Hoping\n\nHappily the skies idle."
    for word in TRICKY:
        query = terms(word)
        assert _pooled([body], query) == _reference_scores([body], query)


def test_a_stem_keeps_all_but_the_last_characters_of_its_word() -> None:
    """What `_words_for` relies on (`STEM_TAIL`): every word whose stem is t starts with t less
    its last `STEM_TAIL` characters, on the stemmer's special cases and suffixes of every step."""
    suffixes = [
        "s",
        "es",
        "ies",
        "ied",
        "ed",
        "ing",
        "ly",
        "edly",
        "ingly",
        "y",
        "ily",
        "iness",
        "ational",
        "tional",
        "enci",
        "anci",
        "abli",
        "entli",
        "izer",
        "ization",
        "ation",
        "ator",
        "alism",
        "aliti",
        "alli",
        "fulness",
        "ousli",
        "ousness",
        "iveness",
        "iviti",
        "biliti",
        "bility",
        "bly",
        "bli",
        "ogi",
        "ogy",
        "fulli",
        "lessli",
        "li",
        "alize",
        "icate",
        "iciti",
        "ical",
        "ful",
        "ness",
        "ative",
        "al",
        "ance",
        "ence",
        "er",
        "ic",
        "able",
        "ible",
        "ant",
        "ement",
        "ment",
        "ent",
        "ism",
        "ate",
        "iti",
        "ous",
        "ive",
        "ize",
        "ion",
        "sion",
        "tion",
        "e",
        "ll",
        "eed",
        "eedly",
    ]
    stems = ("d", "l", "t", "sk", "happ", "hop", "possib", "rel", "gener", "x9", "oper", "y")
    words = [*TRICKY, *(s + x for s in stems for x in ("", *suffixes))]
    words += [s + x + y for s in stems[:4] for x in suffixes for y in suffixes[:12]]
    words = [w for w in (w.lower() for w in words) if w.isalnum()]
    for word, stem in zip(words, stem_words(words), strict=True):
        keep = max(len(stem) - passages_module.STEM_TAIL, 0)
        assert word.startswith(stem[:keep]), (word, stem)
