"""Snippets: a ≤ 180-character window with ~60 characters of context before the match (SPEC §4)."""

from __future__ import annotations

import sqlite3
import unicodedata
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest_memory import ask, ids, new_project, new_store, page, put_pages
from hypothesis import given, settings
from hypothesis import strategies as st

from lwc_trio.memory.query import results as results_module
from lwc_trio.memory.query.results import (
    _ELLIPSIS,
    LINKS_READ,
    LINKS_SCAN,
    SNIPPET_LEAD,
    SNIPPET_WINDOW,
    PageMeta,
    PageRow,
    _in_word,
    _links,
    make_snippet,
    query_pattern,
)
from lwc_trio.memory.text.ascii import ascii_body as _ascii_body
from lwc_trio.memory.text.ascii import ascii_words
from lwc_trio.memory.text.bodies import ascii_bodies as _ascii_bodies
from lwc_trio.memory.text.fields import SNIPPET_SCAN
from lwc_trio.memory.text.fields import first_offsets as _first_offsets_spans
from lwc_trio.memory.text.tokenize import is_cjk, plain_words, stem_words
from lwc_trio.memory.text.tokenize import token_spans as _token_spans


def test_snippet_keeps_about_60_characters_before_the_match() -> None:
    """The window starts on the first word boundary at most 60 characters before the match."""
    text = "intro words " * 30 + "the needle\n\nis   here " + "tail " * 100
    at = text.index("needle")
    snippet = make_snippet(text, at)
    assert snippet.startswith(_ELLIPSIS)
    assert snippet.endswith(_ELLIPSIS)
    assert len(snippet) <= SNIPPET_WINDOW
    before = snippet[1 : snippet.index("needle")]
    assert SNIPPET_LEAD - 12 <= len(before) <= SNIPPET_LEAD
    assert before.startswith("intro words") or before.startswith("words")
    assert "needle is here" in snippet


def test_snippet_cuts_on_word_boundaries() -> None:
    """Neither end of a cut snippet splits a word."""
    words = [f"word{i:03}" for i in range(200)]
    text = " ".join(words)
    snippet = make_snippet(text, text.index("word100"))
    inner = snippet.strip(_ELLIPSIS)
    assert all(part in words for part in inner.split(" "))
    assert len(snippet) <= SNIPPET_WINDOW


def test_snippet_at_the_start_and_without_a_match() -> None:
    """A match near the start (or none) gives the text's beginning, with no leading mark."""
    assert make_snippet("short text", -1) == "short text"
    assert make_snippet("login uses oauth device codes", 6) == "login uses oauth device codes"
    long = "alpha " * 100
    snippet = make_snippet(long, -1)
    assert not snippet.startswith(_ELLIPSIS)
    assert snippet.endswith(_ELLIPSIS)


def test_whole_query_match_wins_over_the_first_term() -> None:
    """The window goes to the first place the whole query occurs, when it does."""
    text = "deploy " + "filler " * 40 + "we deploy pipeline changes daily " + "tail " * 40
    whole = query_pattern("Deploy  pipeline")
    snippet = make_snippet(text, 0, whole)
    assert "deploy pipeline" in snippet
    assert snippet.startswith(_ELLIPSIS)
    assert query_pattern("single") is None


def test_cjk_snippet_keeps_context_and_bound() -> None:
    """CJK text has no spaces: the window still keeps context before the match and fits,
    a CJK character counting its four cost units (ten characters of context, 22 in all)."""
    text = "数据" * 100 + "目标词" + "尾" * 300
    snippet = make_snippet(text, text.index("目标词"))
    assert "目标词" in snippet
    assert _cost_width(snippet) <= SNIPPET_WINDOW
    assert snippet.index("目标词") == 1 + SNIPPET_LEAD // 4


PROSE = {
    # A script's words about configuration and caches, how words join, how a sentence ends.
    "chinese": (("配置", "缓存", "索引", "查询", "版本", "依赖", "测试", "文件", "目录", "模块"), "", "。"),
    "hindi": (
        ("विन्यास", "कैश", "सूचकांक", "प्रश्न", "संस्करण", "निर्भरता", "परीक्षण", "फ़ाइल",
         "निर्देशिका", "मॉड्यूल"),
        " ", "। ",
    ),
    "russian": (
        ("настройка", "кэш", "индекс", "запрос", "версия", "зависимость", "тест", "файл",
         "каталог", "модуль"),
        " ", ". ",
    ),
}  # fmt: skip


def _long_page(language: str, seed: int) -> str:
    """A long Page in `language`: 30 sections of prose about configuration and caches."""
    words, space, stop = PROSE[language]
    sections = []
    for i in range(30):
        text = stop.join(
            space.join(words[(seed + i * 7 + j * 3 + k) % len(words)] for k in range(6))
            for j in range(60)
        )
        sections.append(f"## {words[i % len(words)]} {i}\n\n{text}{stop.strip()}\n")
    return "\n".join(sections)


def _cost_width(snippet: str) -> int:
    """A snippet's cost units without JSON escapes: UTF-8 bytes and one more a CJK character."""
    return len(snippet.encode()) + sum(map(is_cjk, snippet))


@pytest.mark.parametrize("language", list(PROSE))
def test_twenty_results_leave_room_for_their_pages(tmp_path: Path, language: str) -> None:
    """A snippet is bounded by what it costs: each character counts its cost units (a CJK
    character four, as four English characters are about a token; a Devanagari one three,
    a Cyrillic one two). Twenty results of long Chinese or Hindi Pages (a question at
    `maxDocuments` 20) spent the whole default budget on their 90-character snippets and
    brought no Page at all; the best Pages now come."""
    words, space, _stop = PROSE[language]
    project, db, home = new_project(tmp_path)
    put_pages(
        db,
        [page(f"chapter-{i}", f"{words[i % 10]} {i}", _long_page(language, i)) for i in range(20)],
    )
    memory = ask(space.join(words[1::-1]), project, home=home, max_documents=20)
    assert len(memory["results"]) == 20
    assert memory["pages"], [row["snippet"] for row in memory["results"]]
    assert sum(len(item["body"]) for item in memory["pages"]) >= 500
    for row in memory["results"]:
        assert _cost_width(row["snippet"]) <= SNIPPET_WINDOW


TEXT = st.lists(
    st.one_of(
        st.sampled_from(["pod", "Pods", "中文字", "k8s", "\n\n", "  "]), st.text(max_size=12)
    ),
    max_size=120,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(min_value=-1, max_value=2000))
def test_snippet_is_always_one_bounded_line(text: str, at: int) -> None:
    """For any text and offset: within the window (`_width`, its cost units),
    no line breaks, marks only where cut."""
    snippet = make_snippet(text, at)
    assert results_module._width(snippet) <= SNIPPET_WINDOW
    assert "\n" not in snippet
    flat = " ".join(text.split())
    if results_module._width(flat) <= SNIPPET_WINDOW and not snippet.startswith(_ELLIPSIS):
        assert snippet == flat


ASCII_TEXT = st.lists(
    st.one_of(
        st.sampled_from(["cache", "caching", "Cached", "the", "their", "heir", "a_b", "x1", "ca"]),
        st.text(alphabet="abc _-.\n9", max_size=8),
    ),
    max_size=60,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(ASCII_TEXT)
def test_write_time_offsets_equal_the_analyzer_spans(text: str) -> None:
    """The fast ASCII analysis gives exactly the analyzer's words, counts and first positions."""
    words = plain_words(text)
    assert words is not None
    counts, total, first_word = ascii_words(text)
    assert list(counts) == list(dict.fromkeys(words))
    assert dict(counts) == dict(Counter(words))
    assert total == len(words)
    first: dict[str, int] = {}
    for word, stem in zip(counts, stem_words(list(counts)), strict=True):
        first[stem] = min(first.get(stem, first_word[word]), first_word[word])
    assert first == _first_offsets_spans(text)


# Every ASCII character, control characters and `_` included: `ascii_words` turns each one
# that is not a letter or digit into a space, and must still find the analyzer's words.
ANY_ASCII = st.text(alphabet=st.characters(max_codepoint=127), max_size=80)


@settings(max_examples=500, deadline=None)
@given(st.one_of(ANY_ASCII, ASCII_TEXT))
def test_ascii_words_splits_like_the_analyzer_on_any_ascii(text: str) -> None:
    """Words, counts, total and each word's first position equal the analyzer's spans."""
    counts, total, first_word = ascii_words(text)
    spans = [(word, start) for _term, word, start in _token_spans(text)]
    words = [word for word, _start in spans]
    assert list(counts.items()) == list(Counter(words).items())
    assert total == len(words)
    first: dict[str, int] = {}
    for word, start in spans:
        first.setdefault(word, start)
    assert {word: first_word[word] for word in counts} == first


# Words around `_ascii_bodies`'s 16 characters compared as numbers: 16-character prefixes
# shared by longer words, words of exactly 8, 9, 16 and 17 characters, in any case.
LONG_WORDS = st.lists(
    st.one_of(
        st.text(alphabet="aAb1", min_size=14, max_size=20),
        st.sampled_from(["abcdefgh", "abcdefghi", "abcdefghijklmnop", "abcdefghijklmnopq"]),
    ),
    max_size=12,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(ANY_ASCII, ASCII_TEXT, LONG_WORDS), max_size=6))
def test_many_ascii_bodies_at_once_equal_each_one_alone(bodies: list[str]) -> None:
    """A bulk import's analysis of a chunk's bodies at once (numpy) finds each body's words,
    counts, first offsets and total exactly as `_ascii_body` does for it alone."""
    found = _ascii_bodies(bodies)
    assert len(found.bounds) == len(bodies) + 1
    for at, body in enumerate(bodies):
        counts, total, firsts = _ascii_body(body)
        begin, end = found.bounds[at], found.bounds[at + 1]
        counted, first = (column[begin:end].tolist() for column in (found.counts, found.firsts))
        spelled = found.spell(found.word[begin:end])
        postings = {w: (c, f) for w, c, f in zip(spelled, counted, first, strict=True)}
        assert end - begin == len(postings)
        assert postings == {
            word: (count, first)
            for (word, count), first in zip(counts.items(), firsts, strict=True)
        }
        assert found.totals[at] == total


def test_at_most_65536_bodies_are_analyzed_at_once() -> None:
    """The bodies are sorted by number as 16-bit integers: more is refused, never wrapped."""
    found = _ascii_bodies(["word"] * (1 << 16))
    assert found.bounds[-2:] == [(1 << 16) - 1, 1 << 16]
    with pytest.raises(ValueError, match="65537 bodies at once"):
        _ascii_bodies(["word"] * ((1 << 16) + 1))


# A deliberate reference implementation: `make_snippet` before its half-window shortcut, kept
# line for line (so `duplicates` pairs it with lwc_trio/memory/query/results.py) as the oracle the
# property test below compares the shortcut with.
def _whole_window_snippet(text: str, at: int) -> str:
    """`make_snippet` flattening the whole 4 × SNIPPET_WINDOW window every time."""
    text = text[:SNIPPET_SCAN]
    lead = 0
    if 0 < at <= len(text):
        lead = at - results_module._within(text[max(0, at - SNIPPET_LEAD) : at][::-1], SNIPPET_LEAD)
        while 0 < lead < at and _in_word(text[lead - 1]) and _in_word(text[lead]):
            lead += 1
        while 0 < lead < at and text[lead].isspace():
            lead += 1
    window = text[lead : lead + 4 * SNIPPET_WINDOW]
    flat = " ".join(window.split())
    prefix = _ELLIPSIS if lead > 0 and flat else ""
    budget = SNIPPET_WINDOW - results_module._width(prefix)
    if results_module._width(flat) > budget or lead + len(window) < len(text):
        room = results_module._within(flat, budget - results_module._width(_ELLIPSIS))
        piece = flat[:room]
        if len(flat) > room and not flat[room].isspace():
            cut = piece.rfind(" ")
            if cut >= 0 and results_module._width(piece[cut:]) < SNIPPET_LEAD:
                piece = piece[:cut]
        flat = piece.rstrip() + _ELLIPSIS
    return prefix + flat


SPACED = st.lists(
    st.sampled_from(["word", "x", " ", "   ", "\n", "\t\t", "中文", "a" * 30, " " * 90]),
    max_size=200,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(SPACED, st.integers(min_value=-1, max_value=1200))
def test_half_window_first_gives_the_same_snippet(text: str, at: int) -> None:
    """Flattening half the window first (and the whole one only when that is short) never
    changes a snippet, whatever the whitespace."""
    assert make_snippet(text, at) == _whole_window_snippet(text, at)


def test_links_read_per_page_are_bounded_at_the_query(tmp_path: Path) -> None:
    """A Page with 100,000 out-links costs the links query no more SQLite steps than one with
    100 (SPEC §4: links read per Page are bounded at the query), whether its links name
    Pages or not (those that do not are looked at up to `LINKS_SCAN` of them, then no
    more); counted by a progress handler called every 100 virtual-machine steps, not by a
    clock."""
    db = new_store(tmp_path)
    put_pages(db, [page("wide", "Wide"), page("narrow", "Narrow")])
    conn = sqlite3.connect(db)
    targets = [f"t{i:06d}" for i in range(100_000)]
    with conn:
        conn.executemany(
            "INSERT INTO pages (slug, title, body, created_at, updated_at) "
            "VALUES (?, 'T', '', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
            ((slug,) for slug in targets),
        )
        for source, count, prefix in (
            ("wide", 100_000, "t"),
            ("narrow", 100, "t"),
            ("wide-dangling", 100_000, "x"),
            ("scan-dangling", LINKS_SCAN, "x"),
        ):
            conn.executemany(
                "INSERT INTO links VALUES (?, ?)",
                ((source, f"{prefix}{i:06d}") for i in range(count)),
            )

    def steps(slug: str) -> tuple[int, int]:
        count = [0]

        def tick() -> int:
            count[0] += 1
            return 0

        conn.set_progress_handler(tick, 100)
        links = _links(conn, [slug])[slug]
        conn.set_progress_handler(None, 0)
        return count[0], len(links)

    wide, wide_links = steps("wide")
    narrow, narrow_links = steps("narrow")
    assert wide_links == narrow_links == LINKS_READ
    assert wide <= narrow + 2
    dangling, none = steps("wide-dangling")
    scanned, also_none = steps("scan-dangling")
    assert none == also_none == 0
    assert dangling <= scanned + 2
    conn.close()


def test_snippets_are_shorter_than_the_bound_they_keep() -> None:
    """lwc's own snippets take at most 90 characters (SPEC §2 allows 180, a stored one
    included): they are the results' only text besides the Page bodies, which carry the
    matching sections."""
    text = " ".join(f"word{i}" for i in range(200))
    snippet = make_snippet(text, text.index("word100"))
    assert len(snippet) <= 90
    assert "word100" in snippet
    assert snippet.index("word100") >= 30  # still about 40 characters before the match


def test_a_request_reads_each_page_row_once_when_no_row_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ranking reads the best hits' rows (section evidence) and the results the first
    `maxDocuments` of them: a request reads each row once, even when the revision keeps
    none (on a large Wiki its row budget is soon spent: the 8 result rows were read twice,
    about 1.5 ms a query at 100,000 Pages), and the provenance and links of the result
    Pages only (the other 12 hits' cost about 0.8 ms there). Counted by spies on the real
    readers."""
    project, db, home = new_project(tmp_path)
    body = "# Page {i}\n\n## Setup\n\nThe zebracorn setup, step {i}.\n\n## Other\n\nFiller.\n"
    put_pages(db, [page(f"p{i:02d}", f"Page {i}", body.format(i=i)) for i in range(12)])
    monkeypatch.setattr(results_module, "ROWS_BUDGET", 0)
    rows: Counter[str] = Counter()
    metas: Counter[str] = Counter()
    read_rows, read_metas = results_module._page_rows, results_module._page_meta

    def counted_rows(conn: sqlite3.Connection, slugs: Sequence[str]) -> dict[str, PageRow]:
        rows.update(slugs)
        return read_rows(conn, slugs)

    def counted_metas(conn: sqlite3.Connection, slugs: Sequence[str]) -> dict[str, PageMeta]:
        metas.update(slugs)
        return read_metas(conn, slugs)

    monkeypatch.setattr(results_module, "_page_rows", counted_rows)
    monkeypatch.setattr(results_module, "_page_meta", counted_metas)
    memory = ask("zebracorn setup", project, home=home)
    assert len(ids(memory)) == 8
    assert sorted(rows) == [f"p{i:02d}" for i in range(12)]
    assert set(rows.values()) == {1}
    assert sorted(metas) == sorted(ids(memory))
    assert set(metas.values()) == {1}


def test_a_revision_keeps_page_entries_only_with_their_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A revision keeps each result Page's `pages` entry beside its row, whose head it shares;
    past the row budget neither is kept (an entry kept without its row held its body head
    outside the budget: 3,118 entries for 252 rows after 400 questions at 100,000 Pages,
    growing for as long as a session lasts). A row without text counts too."""

    def kept_after_asking(root: Path) -> results_module._Rows:
        root.mkdir()
        project, db, home = new_project(root)
        body = "# Page {i}\n\n## Setup\n\nThe zebracorn setup, step {i}.\n"
        put_pages(db, [page(f"p{i:02d}", f"Page {i}", body.format(i=i)) for i in range(12)])
        memory = ask("zebracorn setup", project, home=home)
        (store,) = memory["stores"]
        key = (str(db.resolve()), store["storeId"], store["revision"])
        return results_module.ROWS.get_or_build(key, results_module._Rows)

    roomy = kept_after_asking(tmp_path / "roomy")
    assert len(roomy.bodies) == 8
    assert len(roomy.pages) == 12
    monkeypatch.setattr(results_module, "ROWS_BUDGET", 0)
    full = kept_after_asking(tmp_path / "full")
    assert full.pages == {}
    assert full.bodies == {}
    monkeypatch.setattr(results_module, "ROWS_BUDGET", 3)
    rows = results_module._Rows()
    assert [rows.keep("") for _ in range(4)] == [True, True, True, False]
    # An absent Page (a hit whose row is gone) is kept as absent within the budget too.
    absent = ["gone-1", "gone-2", "gone-3"]
    conn = sqlite3.connect(":memory:")
    results_module._cached(rows.pages, rows, absent, lambda c, i: {}, conn, lambda r: r[3])
    assert rows.pages == {}


class _FilledMeanwhile(dict[str, "PageRow | None"]):
    """A revision's kept rows that another reader thread fills right after a look-up
    misses (a fake standing for that interleaving)."""

    def __init__(self, row: PageRow) -> None:
        super().__init__()
        self.row = row

    def get(self, key: str, default: PageRow | None = None) -> PageRow | None:  # type: ignore[override]
        found = super().get(key, default)
        if found is None:
            self[key] = self.row
        return found


def test_a_row_another_thread_keeps_meanwhile_is_still_returned() -> None:
    """Up to six reader threads share a revision's kept rows. A row kept by another thread
    between two look-ups of one ident was neither found nor read: its result was dropped,
    and with provenance and links read for result Pages apart, the request failed
    (KeyError). Each ident is now looked up once."""
    row: PageRow = ("Title", "concept", None, "head", 4, "2026-01-01T00:00:00Z")
    kept = _FilledMeanwhile(row)

    def read(conn: sqlite3.Connection, idents: Sequence[str]) -> dict[str, PageRow]:
        return dict.fromkeys(idents, row)

    conn = sqlite3.connect(":memory:")
    found = results_module._cached(kept, results_module._Rows(), ["a"], read, conn, lambda r: r[3])
    assert found == {"a": row}


WORDS_WITH_MARKS = {
    "hindi": PROSE["hindi"][0],
    "thai": ("การตั้งค่า", "แคช", "ที่สำคัญ", "เริ่มต้นใช้งาน", "ข้อมูล", "ระบบ"),
    "emoji": ("ℹ️", "❤️x", "1️⃣", "word", "café"),
}


@pytest.mark.parametrize("script", list(WORDS_WITH_MARKS))
def test_a_snippet_starts_at_a_word_boundary_in_every_script(script: str) -> None:
    """The window's lead skips the rest of a word it fell into, every combining mark after
    its letters included (a Thai one too, though the analyzer ends a Thai term there, and an
    emoji's presentation selector): a snippet starts with a whole word, never with a vowel
    sign (`…ै`, `…ั้ง`) or a selector."""
    words = WORDS_WITH_MARKS[script]
    text = " ".join(words[i % len(words)] for i in range(200))
    for at in range(40, 600, 7):
        word_start = text.rfind(" ", 0, at) + 1
        snippet = make_snippet(text, word_start)
        first = snippet.removeprefix(_ELLIPSIS)[0]
        assert not unicodedata.category(first).startswith("M"), snippet
        assert snippet.removeprefix(_ELLIPSIS).split(" ")[0] in words, snippet


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("कैश साफ़ करें", "कैश का आकार सर्वर पर निर्भर करता है। " * 8 + "हर परीक्षण से पहले कैश साफ़ करें। अंत।"),
        ("कैश साफ", "कैश का आकार सर्वर पर निर्भर करता है। " * 8 + "हर परीक्षण से पहले कैश साफ़ करें। अंत।"),
        ("le cafe\u0301", "Un texte sans rapport. " * 10 + "Il prend le cafe\u0301 noir."),
        ("le cafe", "Un texte sans rapport. " * 10 + "Il prend le cafe\u0301 noir."),
        ("كتاب جديد", "نص لا علاقة له. " * 10 + "هذا كتابٌ جديدٌ هنا."),
    ],
    ids=["hindi", "hindi-without-nukta", "decomposed-accent", "accent-left-out", "arabic-points"],
)
def test_the_whole_query_window_finds_words_ending_in_a_mark(query: str, text: str) -> None:
    """The window goes to the whole query's place when its words end in a vowel sign, a
    nukta or a combining accent, in the text or the query or both: the window's words are
    letters and digits, and a mark after them (which the analyzer keeps inside the word, or
    folds away) ends no match."""
    snippet = make_snippet(text, 0, query_pattern(query))
    assert query.split()[0] in snippet, snippet
    assert query.split()[-1] in snippet, snippet
    assert snippet.index(query.split()[0]) < 40, snippet


@settings(max_examples=500, deadline=None)
@given(st.characters(exclude_categories=["Cs"], min_codepoint=0x80))
def test_the_windows_walk_counts_a_character_as_its_cost(char: str) -> None:
    """`_within` walks by code point (`_char_width`); its count is the character's cost units,
    the window's width (`_width`, `protocol.units.text_cost`)."""
    assert results_module._char_width(char) == results_module._width(char)
