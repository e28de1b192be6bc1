"""Link extraction and slug rules: what becomes a link, and which names are safe slugs."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from conftest_memory import new_store, page, put_pages
from hypothesis import given, settings
from hypothesis import strategies as st
from regex_probe import linear_growth

from lwc_trio.memory.format.slugs import slug_problem
from lwc_trio.memory.text.links import extract_links, strip_code


def test_wikilink_forms_are_extracted_sorted_and_deduped() -> None:
    """[[slug]], [[slug|alias]] and [[slug#frag]] all name the slug; output is sorted."""
    body = "See [[zeta]], [[alpha|the first]], [[beta#usage]] and [[alpha]] again."
    assert extract_links(body) == ["alpha", "beta", "zeta"]


def test_markdown_links_to_md_files_count_urls_do_not() -> None:
    """Relative `*.md` targets give their stem; URLs, anchors and other files are ignored."""
    body = (
        "[guide](docs/guide.md#setup) [sp](<my%20notes.md>) [web](https://x.org/a.md) "
        '[img](pic.png) [top](#intro) [t](other.md "title")'
    )
    assert extract_links(body) == ["guide", "my notes", "other"]


def test_reference_definitions_to_md_files_are_links() -> None:
    """`[label]: target.md` at a line's start (up to three spaces in, `<...>` and a title
    allowed) is a link, as an inline one is; a footnote, an indented (code) line, a fenced
    one and a URL are not. The mdBook of cargo writes most of its links this way."""
    body = (
        "Read [the book][book] and [`cargo build`].\n\n"
        "[book]: ../guide/index.md\n"
        '  [`cargo build`]: <../commands/cargo build.md> "the command"\n'
        "[esc\\]aped]: escaped.md#part\n"
        "[^note]: footnote.md\n"
        "    [code]: indented.md\n"
        "[web]: https://example.org/web.md\n"
        "```\n[fenced]: fenced.md\n```\n"
        "not [at]: line-start.md"
    )
    assert extract_links(body) == ["cargo build", "escaped", "guide"]


def test_an_index_or_readme_link_names_its_folder() -> None:
    """Without a folder to resolve against, `dir/index.md` and `dir/README.md` name `dir`, as a
    documentation site does — not this Wiki's own `index` or `readme`; one with no folder
    named (`index.md`, `../index.md`) keeps the file's name."""
    body = (
        "[rustc](../../rustc/codegen-options/index.md#link-arg) [guide](guide/README.md) "
        "[home](index.md) [up](../index.md) [here](./Readme.md)"
    )
    assert extract_links(body) == ["Readme", "codegen-options", "guide", "index"]


def test_links_inside_code_are_not_links() -> None:
    """Fenced blocks (``` and ~~~) and inline code spans never contribute links."""
    body = (
        "real [[one]] and `[[inline]]`\n"
        "```python\nx = '[[fenced]]'\n```\n"
        "~~~~\n[[tilde]]\n~~~\n still inside the four-tilde fence [[still]]\n~~~~\n"
        "after [[two]]"
    )
    assert extract_links(body) == ["one", "two"]


def test_self_links_and_unsafe_targets_are_dropped() -> None:
    """A page does not link to itself, and a target that is no valid slug is ignored."""
    assert extract_links("[[me]] [[../etc]] [[a/b]] [[ok]]", own_slug="me") == ["ok"]


@pytest.mark.parametrize(
    "slug", ["", "a/b", "a\\b", "..", "a..b", ".", "tab\there", "nl\n", " lead", "x" * 201]
)
def test_unsafe_slugs_are_refused(slug: str) -> None:
    """Empty, separators, dot-dot, control characters, padding and overlong names are refused."""
    assert slug_problem(slug) is not None


@pytest.mark.parametrize("slug", ["kubernetes", "Rust-async_2", "数据库", "v1.2", ".hidden"])
def test_safe_slugs_are_accepted(slug: str) -> None:
    """Ordinary names, CJK and dotted names are one safe filename segment."""
    assert slug_problem(slug) is None


def test_slug_limit_counts_utf8_bytes() -> None:
    """66 CJK characters (198 bytes) fit; 67 (201 bytes) do not."""
    assert slug_problem("数" * 66) is None
    assert slug_problem("数" * 67) is not None


_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_TICKS = re.compile(r"`+")


def _blank_spans_reference(line: str) -> str:
    """CommonMark's code spans within one line, opener by opener: a run of n backticks
    closed by the next run of exactly n; a run nothing closes is text."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line)]
    out, at, i = "", 0, 0
    while i < len(runs):
        width = runs[i][1] - runs[i][0]
        close = next((j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == width), None)
        if close is None:
            i += 1
            continue
        out += line[at : runs[i][0]] + " "
        at, i = runs[close][1], close + 1
    return out + line[at:]


# The rule as SPEC §4 states it, line by line, as the property test's oracle: `strip_code`
# applies it to the whole text at once.
def _strip_code_reference(markdown: str) -> str:
    """The line-by-line rule: every line matched against both patterns."""
    kept: list[str] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        opener = _FENCE.match(line)
        if fence is None:
            if opener:
                fence = opener.group(1)
                kept.append("")
                continue
            kept.append(_blank_spans_reference(line))
        else:
            closes = opener is not None and opener.group(1)[0] == fence[0]
            if closes and len(line.strip()) >= len(fence) and not line.strip().lstrip(fence[0]):
                fence = None
            kept.append("")
    return "\n".join(kept)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(["`", "``", "```", "````", "~~~", "~", " ", "\t", "a", "[[x]]", "\n", "  "])
    )
)
def test_strip_code_blanks_what_the_line_rule_blanks(parts: list[str]) -> None:
    """Fences, inline spans, indented and unclosed fences: the whole-text pass blanks
    exactly what the rule applied line by line blanks."""
    text = "".join(parts)
    assert strip_code(text) == _strip_code_reference(text)


@pytest.mark.parametrize("unit", ["](a", "`", "](<", '](a "'])
def test_a_hostile_body_is_written_in_linear_time(tmp_path: Path, unit: str) -> None:
    """Issue 36 item 8, made small: a body of `](a` (or backticks, or the like) repeated
    costs a `page put` time linear in its length (it was quadratic: 18 KB took 8–11 s), and
    a real link after it still counts. Growth of thread CPU time from 1,000 to 4,000
    characters (`regex_probe.linear_growth`), not a wall-clock bound."""
    db = new_store(tmp_path)
    written = iter(range(100))

    def put(size: int) -> None:
        body = "x " + unit * (size // len(unit)) + "\n\nthen [[next]] and [n](next.md)\n"
        put_pages(db, [page(f"p{next(written)}", "Hostile", body)])

    ok, how = linear_growth(put, 4_000, floor=0.05)
    assert ok, how
    conn = sqlite3.connect(db)
    try:
        links = conn.execute("SELECT from_slug, to_slug FROM links ORDER BY from_slug").fetchall()
    finally:
        conn.close()
    assert links
    assert all(to == "next" for _from, to in links)
