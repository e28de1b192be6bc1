"""Query-focused Page bodies (SPEC §4 "Pages"): whole sections, `memory.query.passages`, pure."""

from __future__ import annotations

import gc
import sys
import tracemalloc

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lwc_trio.memory.query import passages as passages_module
from lwc_trio.memory.query.passages import (
    ELISION,
    MIN_CUT,
    OUTLINE_UNITS,
    SUBSECTION_UNITS,
    UNIT_MAX,
    Unit,
    best_units,
    body_units,
    caps,
    cost,
    estimate_tokens,
    focus,
    outline,
    priors,
    split_units,
)
from lwc_trio.memory.query.results import PageBody, dumps_compact, fit_pages, json_units
from lwc_trio.memory.text.markdown import Block, blocks, sections
from lwc_trio.memory.text.tokenize import MAX_TERMS, index_terms, is_cjk, parse_query, stem_words
from lwc_trio.protocol.units import text_cost


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


def _page(slug: str, body: str, title: str | None = None) -> PageBody:
    return PageBody(
        "project", slug, title or slug.title(), "note", None, body, len(body), (), (), "t"
    )


def _fit(body: str, query: str, room: int, title: str = "Server guide") -> dict[str, object]:
    """The one `pages` entry of `body` as a Page titled `title`, within `room` units."""
    got = fit_pages([_page("guide", body, title)], terms(query), room)
    assert len(got) == 1
    return got[0]


def _passages(body: str) -> list[str]:
    """A focused body's passages, the text between elision markers."""
    return [part.strip() for part in body.split(ELISION) if part.strip()]


def test_units_are_sections_and_a_fence_is_never_split() -> None:
    """Each section with text is one unit, under its heading path; the heading lines are no
    part of any unit; the fence (with its blank line) sits whole inside its section's unit."""
    units = split_units(DOC)
    assert [u.path for u in units] == [
        ("Server guide",),
        ("Server guide", "Install"),
        ("Server guide", "Cancellation"),
        ("Server guide", "Cancellation", "Timeouts"),
    ]
    install = DOC[units[1].start : units[1].end]
    assert install.startswith("Unrelated prose")
    assert install.endswith("lwc init\n```")
    assert not any(DOC[u.start : u.end].lstrip().startswith("#") for u in units)


def test_a_long_section_is_runs_of_whole_blocks() -> None:
    """A section longer than `UNIT_MAX` characters is scored and taken as consecutive runs of
    its blocks, each at most that long where the blocks allow, never splitting a list."""
    items = "\n".join(f"- item {i} of the list that must stay together" for i in range(12))
    paragraphs = "\n\n".join(f"Paragraph {i}. " + FILLER for i in range(6))
    body = f"# Long\n\n{paragraphs}\n\n{items}\n\n{paragraphs}\n"
    units = split_units(body)
    assert len(units) > 2
    assert all(u.path == ("Long",) for u in units)
    texts = [body[u.start : u.end] for u in units]
    assert "".join(texts).replace("\n", "") == body.split("\n\n", 1)[1].replace("\n", "")
    assert sum(items in text for text in texts) == 1  # the list whole, in one unit
    assert all(len(t) <= UNIT_MAX for t in texts if items not in t)


@pytest.mark.parametrize(
    ("tail", "alone"),
    [
        (
            "[platform-specific dependencies]: "
            "specifying-dependencies.md#platform-specific-dependencies",
            False,
        ),
        ("<!-- old anchor, kept for links -->\n<!-- markdownlint-disable-next-line -->", False),
        ("See also the platform-specific dependencies of the manifest format.", True),
        ("See also the platform notes of the manifest format.\n\n[platform]: platform.md#n", True),
    ],
    ids=["reference-definition", "html-comments", "readable-note", "note-and-definition"],
)
def test_a_long_sections_unseen_last_blocks_are_no_unit_of_their_own(
    tail: str, alone: bool
) -> None:
    """A long section's runs end where its blocks allow; a last run of what a reader never
    sees rendered (link reference definitions, HTML comments) goes with the run before it,
    so no passage is only "[…]: specifying-dependencies.md#…" (cargo's features reference
    had one: its runs of two paragraphs filled `UNIT_MAX`). A short note that can be read
    stays a unit of its own."""
    paragraphs = "\n\n".join(
        f"Paragraph {i} on optional dependencies. " + (FILLER * 2)[:940] for i in range(4)
    )
    body = f"# Features\n\n## Optional\n\n{paragraphs}\n\n{tail}\n"
    units = split_units(body)
    texts = [body[u.start : u.end] for u in units]
    assert len(units) == 2 + alone
    assert texts[-1].startswith(tail if alone else "Paragraph 2")
    assert texts[-1].endswith(tail)
    assert "".join(texts).replace("\n", "") == body.split("## Optional\n\n")[1].replace("\n", "")


def test_each_block_is_judged_unseen_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a block renders as nothing is asked once a block, however many runs it
    overlaps (a long paragraph cut at its sentences, a run of many comments): the fold stays
    linear in the section, where asking again for each run took a minute for 354 kB."""
    asked: list[tuple[int, int]] = []
    real = passages_module._unseen

    def spy(text: str, block: Block) -> bool:
        asked.append((block.start, block.end))
        return real(text, block)

    monkeypatch.setattr(passages_module, "_unseen", spy)
    paragraph = "Some text here about snapshots. " * 5_000
    comments = "<!-- generated -->\n" * 2_000
    body = f"# Notes\n\n## Long\n\n{paragraph}\n\n{comments}\n[x]: x.md#y\n"
    units = split_units(body)
    assert len(units) > 50
    assert len(asked) == len(set(asked))
    assert body[units[-1].start : units[-1].end].endswith("[x]: x.md#y")


def test_a_long_paragraph_stays_runs_of_its_sentences() -> None:
    """A paragraph longer than `UNIT_MAX` is runs of its sentences; none of them starts a
    block, and none is taken for an unseen tail and folded into the run before it."""
    sentence = "The janitor prunes old snapshots after forty-five days of retention. "
    body = "# Retention\n\n## Snapshots\n\n" + sentence * 100 + "\n"
    units = split_units(body)
    assert len(units) >= 3
    assert all(u.end - u.start <= UNIT_MAX for u in units)


@pytest.mark.parametrize("language", ["chinese", "english"])
def test_more_room_never_loses_the_page(language: str) -> None:
    """A Page whose best section comes cut at every room from a few hundred units up keeps
    coming at each larger room. The passage's estimate left out the marker before a Page's
    first passage: where the chosen cut came within a few units of the room, the rendered
    passage overshot and the Page was dropped whole, at rooms between two that fit."""
    if language == "chinese":
        sentence, heading = "缓存的配置需要索引和查询。", "缓存"
    else:
        sentence, heading = "The cache config needs an index and a query. ", "Cache"
    body = f"# Guide\n\n## Intro\n\n{FILLER}\n\n## {heading}\n\n{sentence * 150}\n"
    came = [
        room
        for room in range(600, 1_400)
        if focus(body, terms(f"{heading} config"), room, 15_000).body
    ]
    assert came
    assert came == list(range(came[0], 1_400))


def test_a_page_that_fits_comes_whole() -> None:
    got = focus(DOC, terms("cancelled request"), body_units(DOC), 15_000)
    assert got.body == DOC
    assert not got.truncated


def test_a_long_page_comes_as_its_best_section_whole_under_a_short_heading_path() -> None:
    """The section that answers comes whole, introduced by its heading path without the
    Page's title; nothing of a section that matched nothing comes."""
    entry = _fit(DOC, "how is a request cancelled", 2_000)
    body = str(entry["body"])
    assert entry["truncated"] is True
    cancellation = DOC.split("## Cancellation\n\n", 1)[1].split("\n\n### Timeouts", 1)[0]
    assert f"§ Cancellation\n{cancellation}" in body
    assert "Server guide ›" not in body
    assert "§ Install" not in body
    assert "pip install" not in body
    assert ELISION in body


def test_sections_next_to_each_other_read_as_the_page_has_them() -> None:
    """Two adjacent sections come joined by what lies between them (the next heading line as
    written), with one heading path before the first only."""
    body = str(_fit(DOC, "request cancelled timeouts notifications", 3_000)["body"])
    assert "### Timeouts" in body  # the continuation keeps its own heading line
    assert body.count("§ ") == 1
    assert body.index("§ Cancellation") < body.index("### Timeouts")


ALIAS = f"""# Shared options

## resolve.alias

Shortens long import paths: each entry stands for a folder the imports name. The order of
the entries matters, the first that applies wins. Give folders as absolute paths.

### Object format

Each key is replaced by its value:

```js
{{ utils: '../../../utils', 'batman-1.0.0': './joker-1.5.0' }}
```

### Array format

Each entry finds a string or a regular expression:

```js
[{{ find: 'utils', replacement: '../../../utils' }}]
```

## resolve.dedupe

{FILLER}

## css.modules

{FILLER}

Class names keep the import path of their sheet through the locals convention.

{FILLER}
"""


def test_a_chosen_sections_subsections_follow_it() -> None:
    """A section is a heading and what lies under it (SPEC §4): the subsections of the
    section that answers (its examples, which repeat none of the question's words) come
    after it, as the Page has them, before a weaker match elsewhere."""
    body = str(
        _fit(ALIAS, "how to shorten long import paths", 1_000, title="Shared options")["body"]
    )
    assert body.startswith("§ resolve.alias\nShortens long import paths")
    assert "### Object format\n\nEach key is replaced by its value:\n\n```js\n{ utils:" in body
    assert "### Array format" in body
    assert "§ css.modules" not in body


def _chosen(body: str, query: str, room: int, title: str = "Guide") -> str:
    """`body`'s focused text, each `FILLER` shown as `<F>`."""
    got = str(_fit(body, query, room, title=title)["body"])
    return got.replace(FILLER.strip(), "<F>")


def test_a_long_sections_next_runs_come_before_its_subsections() -> None:
    """The rest of a chosen section follows it in document order: its own next run (which
    matches nothing) before its subsection, so it reads as the Page has it, with no gap."""
    body = (
        "# Guide\n\n## Shortcuts\n\nAn alias shortens import paths.\n\n"
        + "\n\n".join([FILLER] * 3)
        + "\n\n### Object format\n\nEach key is replaced by its value.\n\n## Other\n\n"
        + FILLER * 3
    )
    assert len(split_units(body)) == 5  # Shortcuts in two runs
    got = _chosen(body, "alias", 4_000)
    assert got.startswith("§ Shortcuts\nAn alias shortens import paths.\n\n<F> \n\n<F> \n\n<F> ")
    assert "<F> \n\n### Object format\n\nEach key is replaced by its value." in got
    assert got.count("§ ") == 1


def test_subsections_follow_in_document_order() -> None:
    """With room for one subsection and a part, the first comes whole and the second cut."""
    body = (
        "# Guide\n\n## Alias\n\nAn alias shortens import paths.\n\n### First format\n\n"
        f"{FILLER}\n\n### Second format\n\n{FILLER}\n\n## Other\n\n{FILLER * 3}"
    )
    got = _chosen(body, "alias", 1_500)
    assert "### First format\n\n<F> \n\n### Second format\n\nUnrelated prose" in got
    assert "<F> \n\n[…]" not in got.split("### Second format")[1]


def test_a_heading_without_text_ends_the_sections_it_is_not_under() -> None:
    """`## API` holds no text of its own (a unit of none), yet its subsections lie under it,
    not under the matched `## Alias` before it."""
    body = (
        "# Guide\n\n## Alias\n\nAn alias shortens import paths.\n\n## API\n\n"
        f"### createServer\n\n{FILLER}\n\n### build\n\n{FILLER}\n\n## Other\n\n{FILLER * 3}"
    )
    assert _chosen(body, "alias", 2_000) == "§ Alias\nAn alias shortens import paths.\n\n[…]"


@pytest.mark.parametrize(
    ("top", "end"),
    [("# Performance tips\n\n", ""), ("# Performance\n\n", f"# Appendix\n\n{FILLER}\n"), ("", "")],
)
def test_the_title_heading_and_the_preamble_pass_on_nothing(top: str, end: str) -> None:
    """A first heading over every other one is the Page's title heading whatever it says (the
    Page is titled "Performance", the heading "Performance tips"); so is a first heading
    saying the title (another `#` heading follows); and the text before the first heading
    lies over nothing: a match in that text brings no other section."""
    body = (
        f"{top}Alias lookups are cached for speed.\n\n## Validators\n\n{FILLER}\n\n"
        f"## Serialization\n\n{FILLER}\n\n## More\n\n{FILLER * 3}\n\n{end}"
    )
    got = _chosen(body, "alias", 2_000, title="Performance")
    assert got.count("Alias lookups") == 1
    assert "Unrelated prose" not in got
    assert "<F>" not in got


def test_a_first_heading_beside_others_at_its_level_is_a_section() -> None:
    """Only a first heading over every other one is the title heading: one with a sibling at
    its level is a section, and what lies under it follows its match."""
    body = (
        f"## Caching\n\nAlias lookups are cached for speed.\n\n### Sizes\n\n{FILLER}\n\n"
        f"## Validators\n\n{FILLER * 3}\n"
    )
    got = _chosen(body, "alias", 2_000, title="Performance")
    assert got.startswith("§ Caching\nAlias lookups are cached for speed.\n\n### Sizes\n\n<F>")


def test_what_lies_under_a_section_scores_a_share_decaying_from_its_best_unit() -> None:
    """Scores as `_with_sections` raises them: SUBSECTION_SHARE ** k of the section's best own
    unit so far, k counting the units from that one; a unit keeps a better score of its own."""
    share = passages_module.SUBSECTION_SHARE
    body = (
        "# T\n\n## A\n\n" + "\n\n".join([FILLER] * 3) + "\n\n### B\n\nbee\n\n"
        "#### C\n\nsea\n\n### D\n\ndee\n\n## E\n\neel\n"
    )
    units = split_units(body)
    assert [(u.path[1:], u.first) for u in units] == [
        (("A",), True),
        (("A",), False),
        (("A", "B"), True),
        (("A", "B", "C"), True),
        (("A", "D"), True),
        (("E",), True),
    ]
    raised, after = passages_module._with_sections(body, units, [0.2, 1.0, 0.0, 0.3, 0.9, 0.0], "T")
    assert after == [-1, -1, 1, 1, -1, -1]
    # A's best is its second run (index 1): B is 1 unit on, C 2 (and under B, which has no
    # score of its own), D keeps its own 0.9 over 0.343, E lies under nothing.
    assert raised == pytest.approx([0.2, 1.0, share, share**2, 0.9, 0.0])


def test_the_rest_of_a_section_never_comes_without_its_match() -> None:
    """A subsection earns its place from its section's matched text: when that text does not
    fit (one fenced block longer than the room, which is never cut), the subsection, short
    enough to fit, stays out too; a sliver under a heading path would say nothing."""
    fence = "```python\n" + "alias = configure(paths)\n" * 60 + "```"
    body = (
        f"# Guide\n\n## Shortcuts\n\n{fence}\n\n### Note\n\nKeep it short.\n\n"
        "## Other\n\nAn alias once, in passing.\n"
    )
    got = _chosen(body, "alias", 1_000)
    assert "Keep it short" not in got
    assert "§ Other\nAn alias once, in passing." in got


def test_a_unit_that_matches_on_its_own_still_comes_when_its_section_does_not() -> None:
    """A subsection that names the query itself comes at its own score when the section
    whose share it earned never fits (one fenced block longer than the room): the share
    raises a unit, never holds it back."""
    fence = "```python\n" + "alias = configure(paths)\n" * 60 + "```"
    body = (
        f"# Guide\n\n## Shortcuts\n\n{fence}\n\n### Note\n\nThe alias must stay short. "
        f"{FILLER[:300]}\n\n## Other\n\n{FILLER}\n"
    )
    got = _chosen(body, "alias", 1_000)
    assert got.startswith("[…]\n\n§ Shortcuts › Note\nThe alias must stay short.")


def test_a_units_share_waits_for_its_own_section_not_any_other() -> None:
    """The section chosen first (Alias) is not the one Note lies under (Shortcuts, whose
    match does not fit): Note, which names nothing asked, stays out."""
    fence = "```python\n" + "alias = configure(paths)\n" * 60 + "```"
    body = (
        "# Guide\n\n## Alias\n\nAn alias, alias for short.\n\n"
        f"## Shortcuts\n\n{fence}\n\n### Note\n\nKeep it short.\n"
    )
    got = _chosen(body, "alias", 1_000)
    assert got.startswith("§ Alias\nAn alias, alias for short.")
    assert "Keep it short" not in got


def test_a_sections_share_reaches_a_bounded_number_of_units_under_it() -> None:
    """Only the first `SUBSECTION_UNITS` units under a matched section score a share of it:
    a section of thousands of one-line subsections would otherwise make each a candidate."""
    body = "# Reference\n\n## Options\n\nEvery option a proxy takes.\n\n" + "".join(
        f"### Option {i}\n\nValue {i}. It sets what the server does with requests of kind {i}.\n\n"
        for i in range(1, 201)
    )
    got = str(_fit(body, "proxy", 10_000, title="Reference")["body"])
    assert len(got) < len(body)
    assert f"Value {SUBSECTION_UNITS}." in got
    assert f"Value {SUBSECTION_UNITS + 1}." not in got


def test_what_lies_under_the_title_or_an_unmatched_section_does_not_follow_it() -> None:
    """The Page's own title heading has the whole Page under it, so a match in its opening
    text brings no other section; a section that matches nothing brings none either."""
    body = (
        "# Server guide\n\nThe server cancels a request on notifications/cancelled.\n\n"
        f"## Install\n\n{FILLER}\n\n### Upgrading\n\n{FILLER}\n\n## Cancellation\n\n"
        f"A cancelled request answers nothing.\n\n### Timeouts\n\n{FILLER}\n\n## Other\n\n{FILLER}\n"
    )
    got = str(_fit(body, "cancelled request", 2_400)["body"])
    assert got.startswith("The server cancels a request on notifications/cancelled.\n\n[…]")
    assert "§ Cancellation\nA cancelled request answers nothing.\n\n### Timeouts\n" in got
    assert "§ Install" not in got
    assert "Upgrading" not in got
    assert "§ Other" not in got


def test_sections_come_in_document_order() -> None:
    got = focus(DOC, terms("pip install lwc cancelled notifications"), 2_000, 15_000)
    assert got.body.index("pip install") < got.body.index("notifications/cancelled")


def test_a_heading_path_keeps_the_section_and_two_ancestors_without_attribute_lists() -> None:
    body = (
        "# Title\n\n## Reference { #reference }\n\n### Options {#options}\n\n"
        "#### Network\n\n##### Proxy settings {: .note }\n\n"
        + "The proxy answers requests through the tunnel. " * 10
        + "\n\n## Other\n\n"
        + FILLER * 3
    )
    got = _fit(body, "proxy tunnel", 900, title="Title")
    assert "§ Options › Network › Proxy settings\n" in str(got["body"])
    assert "{" not in str(got["body"])


def test_a_section_too_long_is_cut_at_a_block_boundary_from_its_start() -> None:
    """A chosen section that does not fit its room keeps its first whole blocks: never a
    sentence, list, table, fence or container cut in the middle, never a block that
    introduces the next (`…:`) without it."""
    section = "\n\n".join(
        [
            "Retries are configured per client. The defaults suit most networks.",
            "The retry options are:",
            "\n".join(f"- `retry_{i}`: how the client retries, case {i}" for i in range(8)),
            "| option | default |\n|---|---|\n" + "\n".join(f"| r{i} | {i} |" for i in range(30)),
            "/// note | Retries\nA note about retries that must stay whole.\n\nEven its second paragraph.\n///",
            "!!! warning\n    Retries can hide outages.\n\n    Watch the retry counter.",
            "::: tip\nTip about retries.\n\nStill the tip.\n:::",
            '<div class="x">\n\nRetries inside a div.\n\n</div>',
            "<dl>\n<dt>retry</dt>\n\n<dd>Retries a request.</dd>\n</dl>",
            "```toml\n[retry]\ncount = 3\n\nbackoff = 2\n```",
        ]
    )
    body = f"# Client\n\n## Retries\n\n{section}\n\n## Other\n\n{FILLER * 4}"
    whole = len(section)
    sent = 0
    for room in range(500, whole + 600, 97):
        got = fit_pages([_page("client", body, "Client")], terms("retry retries options"), room)
        text = str(got[0]["body"]) if got else ""
        sent += bool(text)
        for part in _passages(text):
            kept = part.split("\n", 1)[1] if part.startswith("§ ") else part
            assert section.startswith(kept), (room, kept[-80:])
            assert len(kept) >= MIN_CUT or kept == section
            for container in section.split("\n\n"):
                if container[:3] in ("///", "!!!", "::;", "<di", "<dl", "```", "| o", "- `"):
                    start = container.split("\n", 1)[0]
                    if start in kept:
                        assert container in kept, (room, start)
            assert not kept.endswith("The retry options are:")
    assert sent > 10


def test_a_section_ending_with_a_colon_comes_only_with_the_section_it_introduces() -> None:
    """`## Options` whose text ends "…are:" and whose items are subsections: it never comes
    alone, ending on the colon before an elision marker."""
    body = (
        "# Tool\n\n## Options\n\n" + FILLER + "\n\nThe tool takes these options:\n\n"
        "### --fast\n\nRuns fast. " + FILLER + "\n\n### --slow\n\n" + FILLER * 3 + "\n\n"
        "## Install\n\n" + FILLER * 3
    )
    for query in ("tool options", "tool takes options fast", "fast"):
        for room in (600, 900, 1_500, 2_500):
            text = str(_fit(body, query, room, title="Tool")["body"])
            for part in _passages(text):
                assert not part.rstrip().endswith(":"), (query, room, part[-60:])


SENTENCES = {
    "english": ("The cache keeps every entry for one hour before it is dropped.", "cache entry hour"),
    "chinese": ("缓存会把每个条目保存一个小时，然后删除。", "缓存条目"),
    # Hindi and Urdu end a sentence with their own full stops (the danda, U+06D4).
    "hindi": ("कैश हर प्रविष्टि को एक घंटे तक रखता है, फिर उसे हटा देता है।", "कैश प्रविष्टि"),
    "urdu": ("کیش ہر اندراج کو ایک گھنٹے تک رکھتا ہے، پھر اسے ہٹا دیتا ہے۔", "کیش اندراج"),
}  # fmt: skip


@pytest.mark.parametrize("language", list(SENTENCES))
def test_no_passage_is_cut_to_a_sliver(language: str) -> None:
    """A cut passage has at least `MIN_CUT` characters: a long first paragraph is cut after a
    sentence, never inside one, whatever the script's full stop. (A Hindi paragraph longer
    than its room had no sentence end to be cut at, so no Page of long Hindi sections came
    at `maxDocuments` 20.)"""
    sentence, query = SENTENCES[language]
    body = "# Cache\n\n" + " ".join([sentence] * 60) + "\n\n## Other\n\n" + FILLER * 5
    text = str(_fit(body, query, 1_500, title="Cache")["body"])
    kept = _passages(text)[0]
    assert len(kept) >= MIN_CUT
    assert kept.endswith(sentence)


def test_a_page_without_headings_comes_as_its_paragraphs_that_answer() -> None:
    """An article with no headings (SQuAD's Pages, notes) comes as the runs of paragraphs
    that answer, not as its first characters."""
    paragraphs = [f"Paragraph {i}: " + FILLER for i in range(30)]
    paragraphs[21] = "The lighthouse keeper lit the lamp at dusk every evening. " + FILLER
    body = "\n\n".join(paragraphs)
    text = str(_fit(body, "when did the lighthouse keeper light the lamp", 2_000, "Notes")["body"])
    assert "The lighthouse keeper lit the lamp at dusk" in text
    assert "Paragraph 0:" not in text


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
    assert text_cost('{"a":"b\\n"}') == 11  # a JSON text costs its bytes as they stand
    assert estimate_tokens("数据库") == 3
    assert estimate_tokens("a" * 400) == 100


def test_outline_lists_headings_outside_code_capped_by_cost() -> None:
    """The outline leaves out the Page's own title and attribute lists; when all headings do
    not fit `OUTLINE_UNITS`, the shallowest levels do, and the last entry counts the rest."""
    assert outline(DOC, "Server guide") == ["## Install", "## Cancellation", "### Timeouts"]
    many = "\n\n".join(
        f"## Part {i} {{ #part-{i} }}\n\ntext\n\n### Detail {i}\n\nmore" for i in range(100)
    )
    capped = outline(many, "Many")
    assert sum(cost(item) + 3 for item in capped) <= OUTLINE_UNITS
    assert all(item.startswith("## Part ") for item in capped[:-1])
    assert "{" not in "".join(capped)
    assert capped[-1] == f"… {200 - len(capped) + 1} more headings"
    assert outline("```\n# not a heading\n```\n") == []


def test_caps_favour_the_best_page() -> None:
    """Each Page's share by rank is a cap: the best may take the whole budget, later less."""
    got = caps(5, 10_000)
    assert got[0] == 10_000
    assert got == sorted(got, reverse=True)
    assert len(set(got)) == 5


def test_plain_notes_are_not_split_for_the_section_evidence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A heading is `#`-marked: bodies without `#` (a Wiki of plain notes, Cranfield) have no
    section to rank by, and `best_units` says so without splitting any of them; a body with
    a `#` that is no heading is split to tell."""
    split: list[str] = []
    real = passages_module.split_units

    def spy(body: str) -> tuple[Unit, ...]:
        split.append(body)
        return real(body)

    monkeypatch.setattr(passages_module, "split_units", spy)
    notes = ["Cancellation of a request.\n\nIt stops the search.", "Another note on cancel."]
    assert best_units(notes, terms("cancellation")) == [None, None]
    assert split == []
    with_hash = "Cancellation in C# code.\n\n#hashtag, no heading."
    assert best_units([*notes, with_hash], terms("cancellation")) == [None, None, None]
    assert split == [with_hash]


def test_a_page_below_the_first_weighs_less_than_its_score_ratio() -> None:
    """`priors` (docs/memory.md, "Decisions"): the best Page weighs 1, one scored 80 % of it
    weighs below 0.8 (the first Page's further sections win over a close second Page's of
    about the same score), never nothing; a fill-up without a score weighs by its rank."""
    got = priors([10.0, 8.0, 5.0, 0.0])
    assert got[0] == 1.0
    assert got[1] == pytest.approx(0.8**1.25)
    assert 0.0 < got[2] < 0.5
    assert got[3] == 1.0 / 4
    assert got == sorted(got, reverse=True)


def test_a_cut_passage_is_never_joined_to_the_next_as_if_whole() -> None:
    """Every piece between markers is the Page's own text (a cut passage ends the piece)."""
    big = ("ラーメン の 作り方。" * 4000)[:40_000]
    got = focus(big, terms("ラーメン"), 70_000, 15_000)
    pieces = [piece.strip() for piece in got.body.split(ELISION)]
    assert all(piece in big for piece in pieces)
    assert len(got.body) <= 15_000


def test_a_short_page_that_fits_comes_whole_past_its_share() -> None:
    """A ~900-character glossary ranked third (its search score close to the first's) comes
    whole when the budget left holds it, though its rank's share is smaller."""
    long = ("The cancellation handshake. " + FILLER + "\n\n") * 30
    glossary = "\n".join(f"- term {i}: what cancellation {i} means here" for i in range(22))
    assert 800 < len(glossary) < 1_000
    pages = [_page("a", long), _page("b", long), _page("glossary", glossary)]
    pages += [_page(f"c{i}", long) for i in range(3)]
    scores = [10.0, 9.8, 9.6, 5.0, 4.0, 3.0]
    got = fit_pages(pages, terms("cancellation"), 10_000, scores)
    by_slug = {item["slug"]: item for item in got}
    assert by_slug["glossary"]["body"] == glossary
    assert by_slug["glossary"]["truncated"] is False
    assert "more" not in by_slug["glossary"]
    assert by_slug["a"]["truncated"] is True
    assert sum(text_cost(dumps_compact(item)) + 1 for item in got) <= 10_000
    # The same input gives the same bytes (the fitted answer is kept and handed out as a copy).
    got[0]["links"].append("changed")
    again = fit_pages(pages, terms("cancellation"), 10_000, scores)
    assert again[0]["links"] == []
    assert dumps_compact(again[1:]) == dumps_compact(got[1:])


def test_the_pages_never_take_more_than_their_room() -> None:
    """At every room, the Pages' entries with their commas cost no more than the room. An
    entry was counted without the quotes of its empty body, which `body_units` leaves out
    too: two units a Page under, so whole Pages could overshoot by eight units."""
    short = "Cache config needs an index. " * 3
    long = "# Guide\n\n## Cache\n\n" + ("The cache config needs an index. " * 40 + "\n\n") * 5
    for bodies in ([short] * 3, [long, short], [short] * 6):
        pages = [_page(f"p{i}", body) for i, body in enumerate(bodies)]
        for room in range(200, 2_500, 7):
            got = fit_pages(pages, terms("cache config"), room)
            assert sum(text_cost(dumps_compact(item)) + 1 for item in got) <= room, room


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_counted_sizes_equal_the_encoded_ones(text: str) -> None:
    """`fit_pages` counts an entry's size instead of encoding its body again."""
    assert json_units(text) == text_cost(dumps_compact(text))


def test_sections_are_chosen_across_pages_by_comparable_scores() -> None:
    """The answer's section sits in the sixth Page, whose search score is close to the
    first's: it comes in, though the first Pages' weaker matches could fill the whole
    budget (a fixed share per rank left the sixth Page too little to say anything)."""
    first = "\n\n".join(
        f"## Release {i}\n\nThe release train left on time, release {i} shipped." for i in range(80)
    )
    second = "\n\n".join(
        [f"## Storage {i}\n\nDisks, volumes and their quotas." for i in range(60)]
        + ["## Rollback\n\nTo roll back a release run the rollback command with the previous tag."]
        + [f"## Quotas {i}\n\nMore about quotas." for i in range(60, 120)]
    )
    pages = [_page(f"notes-{i}", first) for i in range(5)] + [_page("storage", second)]
    scores = [10.0, 9.9, 9.8, 9.7, 9.6, 9.5]
    got = fit_pages(pages, terms("how to roll back a release"), 4_000, scores)
    bodies = {item["slug"]: item["body"] for item in got}
    assert "To roll back a release run the rollback command" in bodies["storage"]
    assert sum(text_cost(dumps_compact(item)) + 1 for item in got) <= 4_000


def test_a_page_whose_sections_match_nothing_is_left_out() -> None:
    """A result Page none of whose sections holds a query term (it matched by title) costs
    no entry while another Page's matching sections still fit: its metadata would say
    nothing the result row does not."""
    long = ("The cancellation handshake. " + FILLER + "\n\n") * 30
    other = (FILLER + "\n\n") * 30
    got = fit_pages([_page("a", long), _page("b", other)], terms("cancellation"), 3_000)
    assert [item["slug"] for item in got] == ["a"]


# Unit scores are computed from per-word counts for ASCII bodies (`passages._ascii_analysis`):
# the reference below is the search's own analyzer (`index_terms`) on each unit with its
# heading path (counted `HEADING_WEIGHT` times), all terms counted.
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
        units = split_units(body)
        sizes.append(len(units))
        room = passages_module.heads_room(body, len(units))
        for p in units:
            heads = passages_module.heads_scored(p.path, room)
            found = index_terms(heads + "\n" + body[p.start : p.end])
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
    # The same terms again (the ranking asks, then the passages) reuse the counts; a body
    # asked about by another question is counted by term once for all (`passages._Texts`).
    assert passages_module._pooled(analyses, query) == first
    passages_module._pooled(analyses, [("zz", 1)])
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
def test_ascii_bodies_score_as_the_analyzer_counts_their_units(
    bodies: list[str], query_text: str
) -> None:
    query = terms(query_text)
    assert _pooled(bodies, query) == _reference_scores(bodies, query)


_OTHER_WORD = _WORD | st.sampled_from(
    [
        "Éclair",
        "straße",
        "naïve",
        "哈哈哈",
        "配置",
        "中文字",
        "é",
        "ﷺ",
        "ͺ",
        "㊀",
        "㍻",
        "一",
        "〸a",
        "ﾡ",
        "ﹰ",
    ]
)
_OTHER_BLOCK = st.one_of(
    st.lists(_OTHER_WORD, min_size=1, max_size=12).map(" ".join),
    st.lists(_OTHER_WORD, min_size=1, max_size=6).map(lambda ws: "## " + "".join(ws)),
    st.text("哈配置中文字é a", min_size=1, max_size=900),
)


@given(
    st.lists(
        st.lists(_OTHER_BLOCK, min_size=1, max_size=8).map(lambda bs: "é " + "\n\n".join(bs)),
        min_size=1,
        max_size=3,
    ),
    st.lists(_OTHER_WORD, min_size=1, max_size=4).map(" ".join),
)
@example(["é\n\nÉclair Éclair éclair, an éclair\n\n## Straße\n\n哈哈哈哈 straße"], "eclair 哈哈")
@example(["é\n\n## 配置\n\n配置，中文。置中 and 配\n\n## 中\n\n文"], "置中 配置 中")
@example(["é\n\n## ﷺ notes\n\nword ﷺ ͺ more ͺ\n\n## Other\n\nword"], "ﷺ ͺ word")
@example(["é\n\n## ㊀\n\n㊀ 一二 ㊀ ㍻\n\n## 二\n\n一"], "㊀ 一 ㍻")
def test_other_bodies_score_as_the_analyzer_counts_their_units(
    bodies: list[str], query_text: str
) -> None:
    """Non-ASCII bodies, CJK or not, counted from their terms' string (a repeated CJK pair
    such as 哈哈 overlapping itself), then by term: the analyzer's counts."""
    query = terms(query_text)
    assert _pooled(bodies, query) == _reference_scores(bodies, query)


def test_ascii_and_general_analysis_agree_on_tricky_words() -> None:
    body = "# Dying stars\n\n" + " ".join(TRICKY) + "\n\n## Hoping\n\nHappily the skies idle."
    for word in TRICKY:
        query = terms(word)
        assert _pooled([body], query) == _reference_scores([body], query)


def test_a_stem_keeps_all_but_the_last_characters_of_its_word() -> None:
    """What `_query_counts` relies on (`_prefix`): every word whose stem is t starts with t
    less its last `STEM_TAIL` characters, and with its first, on the stemmer's special cases
    and suffixes of every step."""
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
        assert word.startswith(passages_module._prefix(stem)), (word, stem)


@pytest.mark.parametrize(
    ("body", "query_text"),
    [
        ("# Log\n\n" + "ab" * 100_000, "abababab"),
        ("# Log\n\n" + " a" * 100_000, "aardvark"),
        ("# Log\n\n" + "a " * 100_000, "a1 a2 a3 a4 a5 a6"),
    ],
)
def test_hostile_bodies_are_counted_in_one_pass(body: str, query_text: str) -> None:
    """A word as long as the Page, or a Page of words that start like the query's, finishes
    (the suite's hang guard stops a quadratic match) and counts as the analyzer does."""
    query = terms(query_text)
    assert _pooled([body], query) == _reference_scores([body], query)


def test_a_huge_heading_over_many_sections_is_counted_once_bounded() -> None:
    """A heading of 1,200 words over 1,000 tiny sections (a hostile Page of 12 kB): the
    units share the body's heading room (`heads_room`), so the text analysed stays within a
    few times the body, not its sections times the heading (2 million characters before),
    and the scores are the analyzer's with that room."""
    body = "# " + " ".join(f"w{i}" for i in range(1_200)) + "\n"
    body += "".join(f"## s{i}\nx\n" for i in range(1_000))
    analysis = passages_module._analysis(body)
    texts = analysis[2]
    assert texts is not None
    assert len(analysis[0]) == 1_000
    room = passages_module.HEADS_ROOM_FACTOR * (len(body) + passages_module.HEADS_SCORED_MAX)
    bound = len(body) + passages_module.HEADING_WEIGHT * room + 32 * len(analysis[0])
    assert len(texts.text) <= bound
    query = terms("w5 s7")
    assert _pooled([body], query) == _reference_scores([body], query)


def test_a_real_pages_heading_path_is_never_cut_by_the_room() -> None:
    """The room is for hostile Pages: a long reference Page of many sections, terse option
    references, a glossary under a long title and a stub count every path whole, and the
    option asked about is the best unit of its reference."""
    reference = "# Configuration reference\n\n" + "".join(
        f"## Section {i}\n\n### `option.name.number{i}` (deprecated alias)\n\n"
        f"Sets what option {i} does, its default and its environment variable.\n\n"
        for i in range(150)
    )
    terse = "# Configuration reference for the server and its command line interface\n\n"
    for table in ("server", "storage", "network", "import"):
        terse += f"## `[{table}]` table options\n\n"
        terse += "".join(
            f"### `{table}.option_{k}_{name}`\n\nType: bool. Default: false.\n\n"
            for k, name in enumerate(["heartbeat_interval", "retry", "timeout", "limit"] * 6)
        )
    glossary = "# Glossary of the terms used throughout the storage engine documentation\n\n"
    glossary += "".join(f"## {c}\n\n### {c}term\n\nWhat {c}term means.\n\n" for c in "ABCDEFGHIJ")
    stub = "# " + "A very long title of a stub page " * 20 + "\n\nTBD.\n"
    for body in (reference, terse, glossary, stub):
        units = split_units(body)
        room = passages_module.heads_room(body, len(units))
        assert all(len(" ".join(unit.path)) <= room for unit in units)
    units = split_units(terse)
    best = _pooled([terse], terms("network heartbeat interval"))[0]
    assert "network.option_0_heartbeat_interval" in units[best.index(max(best))].path[-1]


HINDI_WORDS = (
    "विन्यास", "कैश", "सूचकांक", "प्रश्न", "संस्करण", "निर्भरता", "परीक्षण", "फ़ाइल", "निर्देशिका",
    "मॉड्यूल", "इंटरफ़ेस", "त्रुटि", "लॉग", "अनुमति", "नेटवर्क", "डेटाबेस", "का", "और", "में",
)  # fmt: skip


def _long_hindi_page(seed: int) -> str:
    """A long Hindi Page: 30 sections of about 3,400 characters (100 kB in all, what a
    question reads of a Page), prose of a fixed vocabulary, as a manual's chapter is."""
    out = []
    for i in range(30):
        sentences = (
            " ".join(
                HINDI_WORDS[(seed * 7 + i * 5 + j * 3 + k * k) % len(HINDI_WORDS)] for k in range(8)
            )
            for j in range(60)
        )
        out.append(f"## खंड {seed}.{i} विन्यास\n\n" + "। ".join(sentences) + "।\n\n")
    return "".join(out)


@pytest.mark.parametrize(
    "shape",
    [
        "# " + "h1x " * 250 + "\n\n" + "".join(f"## s\nw{i} v{i}\n" for i in range(900)),
        "#\nD\n" * 2_500,
        "# T\n\n" + " ".join(f"{chr(97 + i % 26)}{i}q{i * 7}" for i in range(1_500)),
        "é" + "".join(f"## s{i}\nw{i}\n" for i in range(900)),
        "é\n\n" + " ".join(f"{'é' * 1_000}{i}" for i in range(20)),
        "".join(f"## 节{i}\n\n" + "".join(chr(0x4E00 + (i * 97 + j * 31) % 20_000) for j in range(700))
                + "\n\n" for i in range(14)),
        "".join(f"## 节\n{chr(0x4E00 + i)}{chr(0x4E00 + i * 7 % 20_000)}\n" for i in range(1_200)),
        "".join("## 节\n" + "".join(chr(0x4E00 + j) for j in range(64)) + "\n" for _ in range(300)),
        "## h\n" + "w" * 19_990,
        _long_hindi_page(0),
        "".join(f"## खंड {i}\n\n" + " ".join(f"शब्द{i}क{j}" for j in range(300)) + "।\n\n"
                for i in range(10)),
    ],
    ids=["long-heading-tiny-sections", "empty-headings", "distinct-words", "non-ascii-tiny",
         "non-ascii-long-words",
         "cjk", "cjk-tiny-sections", "cjk-asked-64-terms", "one-huge-word", "hindi",
         "hindi-distinct-words"],
)  # fmt: skip
def test_an_analysis_keeps_no_more_than_its_weight(shape: str) -> None:
    """`_weight`, what the kept analyses are bounded by (`ANALYSES_BUDGET`), is an upper
    bound of what an analysis keeps once asked about twice (its counts by term built, or a
    CJK body's last question's counts kept, here of `MAX_TERMS` of its characters), for the
    shapes that made a body keep a hundred times its size: measured with tracemalloc, the
    process's stem cache (bounded on its own) warmed first."""
    body = shape[:20_000]
    stem_words(body.lower().translate(passages_module._ALNUM).split())
    index_terms(body)  # any other body's words stemmed too
    split_units.cache_clear()
    sections.cache_clear()
    blocks.cache_clear()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        analysis = passages_module._analysis(body)
        widest = list(dict.fromkeys(c for c in body if is_cjk(c)))[:MAX_TERMS]
        for asked in (["s", "w5", "v7"], ["h1x", "d", "shard"], ["节", "中"], widest):
            passages_module._query_counts(analysis, asked)
        split_units.cache_clear()
        sections.cache_clear()
        blocks.cache_clear()  # a separate memo, bounded on its own
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before + sys.getsizeof(body)
    finally:
        tracemalloc.stop()
    assert kept <= passages_module._weight(body, analysis)


def _spy_on_analyses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The bodies analysed from now on (`passages._analysis`), in order."""
    analysed: list[str] = []
    real = passages_module._analysis

    def spy(body: str) -> passages_module.Analysis:
        analysed.append(body)
        return real(body)

    monkeypatch.setattr(passages_module, "_analysis", spy)
    return analysed


def _cjk_page(seed: int) -> str:
    """20 sections of 1,000 CJK characters (each character and pair a term of its own)."""
    return "".join(
        f"## 节{i}\n"
        + "".join(chr(0x4E00 + (seed * 7_919 + i * 1_543 + j * 97) % 20_000) for j in range(1_000))
        + "\n"
        for i in range(20)
    )


def test_the_kept_analyses_stay_within_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """More Pages asked about than their analyses' budget holds: what is kept weighs at most
    `ANALYSES_BUDGET`, the newest is kept (asked again, it is not analysed again), the
    oldest was dropped (it is), and scores as before."""
    one = passages_module._weight(_cjk_page(0), passages_module._analysis(_cjk_page(0)))
    count = passages_module.ANALYSES_BUDGET // one + 2
    bodies = [_cjk_page(seed) for seed in range(count)]
    query = terms("节 中")
    first = [best_units([body], query) for body in bodies]
    assert 0 < passages_module._ANALYSES.weight <= passages_module.ANALYSES_BUDGET
    analysed = _spy_on_analyses(monkeypatch)
    assert best_units([bodies[-1]], query) == first[-1]
    assert analysed == []
    assert best_units([bodies[0]], query) == first[0]
    assert analysed == [bodies[0]]


def test_a_huge_heading_still_lets_its_section_come() -> None:
    """A heading line of 60,000 characters (a hostile or broken Page) is cut in the passage's
    path: the section under it still comes, its path bounded."""
    body = (
        "# Title\n\n## "
        + "long " * 12_000
        + "end\n\n"
        + "The janitor prunes snapshots after 45 days. " * 20
        + "\n\n## Other\n\n"
        + FILLER * 6
    )
    text = str(_fit(body, "janitor prunes snapshots", 2_000, title="Title")["body"])
    assert "The janitor prunes snapshots after 45 days." in text
    assert all(len(line) <= 110 for line in text.splitlines() if line.startswith("§ "))


def _long_cjk_page(seed: int) -> str:
    """A long Chinese Page: 30 sections of about 2,000 characters (60 kB), prose with
    punctuation, as a translated manual's chapter is."""
    out = []
    for i in range(30):
        text = "".join(
            chr(0x4E00 + (seed * 7_919 + i * 1_543 + j * 97) % 20_000)
            + ("，" if j % 11 == 10 else "")
            for j in range(1_800)
        )
        out.append(f"## 第{i}节 配置\n\n{text}。\n\n")
    return "".join(out)


def test_twenty_long_cjk_pages_keep_their_analyses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Wiki whose 20 best hits are long CJK Pages (60 kB each) keeps their analyses within
    `ANALYSES_BUDGET`: asked a second question, no Page is analysed again (each analysis of
    such a Page costs tens of milliseconds; twenty of them a second a question)."""
    passages_module._ANALYSES.clear()
    bodies = [_long_cjk_page(seed) for seed in range(20)]
    first = best_units(bodies, terms("配置 第三节"))
    assert passages_module._ANALYSES.weight <= passages_module.ANALYSES_BUDGET
    analysed = _spy_on_analyses(monkeypatch)
    assert best_units(bodies, terms("配置 第三节")) == first
    best_units(bodies, terms("节 中文"))
    assert analysed == []


def test_thirty_long_hindi_pages_keep_their_analyses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Wiki whose best hits are 30 long Hindi Pages (100 kB each, what a question reads of
    a Page) keeps their analyses within `ANALYSES_BUDGET`: their counts by term are weighed
    by each unit's distinct terms, not by its words (2.6 MB a Page, so that every question
    analysed some again, at tens of milliseconds each; `scripts/bench cjk`)."""
    passages_module._ANALYSES.clear()
    bodies = [_long_hindi_page(seed) for seed in range(30)]
    first = best_units(bodies, terms("विन्यास कैश"))
    best_units(bodies, terms("प्रश्न फ़ाइल"))  # counted by term from the second question on
    assert passages_module._ANALYSES.weight <= passages_module.ANALYSES_BUDGET
    analysed = _spy_on_analyses(monkeypatch)
    assert best_units(bodies, terms("विन्यास कैश")) == first
    best_units(bodies, terms("त्रुटि लॉग"))
    assert analysed == []
