"""The analyzer splits, folds, stems, pairs CJK and dedupes exactly as SPEC §4 says."""

from __future__ import annotations

import gc
import re
import tracemalloc
import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwc_trio.memory.text.marks import MARKS, SELECTORS, UNSPACED
from lwc_trio.memory.text.tokenize import (
    _RUN,
    MAX_TERMS,
    STOP_WORDS,
    QueryTerm,
    fold,
    has_cjk,
    index_terms,
    index_words,
    query_terms,
    stem_words,
    surely_within_term_limit,
    token_spans,
    tokenize,
    tokens,
    words_and_runs,
)


def test_max_terms_is_64() -> None:
    """The query bound the dispatcher enforces is exactly 64 terms."""
    assert MAX_TERMS == 64


def test_english_words_are_lowercased_alphanumeric_runs() -> None:
    """Punctuation, underscores and hyphens separate words; case folds; digits are words."""
    assert tokenize("Async-Runtime: tokio_rs v2 3.14!") == [
        "async",
        "runtim",
        "tokio",
        "rs",
        "v2",
        "3",
        "14",
    ]


def test_stop_words_are_dropped() -> None:
    """Stop words never become terms, in any case."""
    assert tokenize("How does THE scheduler work in an Actor") == ["schedul", "work", "actor"]
    assert tokenize("the of and to") == []
    assert {"the", "and", "how", "what"} <= STOP_WORDS


def test_cjk_runs_become_adjacent_bigrams() -> None:
    """A query's run of CJK characters yields its overlapping bigrams, in order."""
    assert tokenize("机器学习") == ["机器", "器学", "学习"]
    assert tokenize("データベース") == ["デー", "ータ", "タベ", "ベー", "ース"]
    assert tokenize("한국어") == ["한국", "국어"]


def test_single_cjk_character_is_a_unigram() -> None:
    """A lone CJK character between other text stays a term by itself."""
    assert tokenize("日 rust 本") == ["日", "rust", "本"]


def test_mixed_text_splits_scripts() -> None:
    """CJK next to Latin letters splits into a word and bigrams."""
    assert tokenize("Rust语言编程guide") == ["rust", "语言", "言编", "编程", "guid"]


def test_terms_are_deduped_in_first_seen_order() -> None:
    """`tokenize` keeps the first occurrence; `tokens` keeps repeats for the index."""
    assert tokenize("beta alpha Beta ALPHA gamma") == ["beta", "alpha", "gamma"]
    assert tokens("beta alpha Beta") == ["beta", "alpha", "beta"]


def test_64_and_65_distinct_terms() -> None:
    """64 distinct words give 64 terms and 65 give 65 (the caller refuses > 64)."""
    words = [f"w{i}" for i in range(65)]
    assert len(tokenize(" ".join(words[:64]))) == 64
    assert len(tokenize(" ".join(words))) == 65
    # Repeats and stop words do not count toward the bound.
    assert len(tokenize(" ".join(words[:64] * 3 + ["the"] * 10))) == 64


def test_spans_index_the_original_text() -> None:
    """Every span slices the original text to the term (before lowercasing)."""
    text = "Hello 世界 World"
    spans = list(token_spans(text, query=True))
    assert spans == [("hello", "hello", 0), ("世界", "世界", 6), ("world", "world", 9)]
    assert [(t, s) for t, _w, s in token_spans(text)] == [
        ("hello", 0),
        ("世", 6),
        ("世界", 6),
        ("界", 7),
        ("world", 9),
    ]


@given(st.text(max_size=200))
def test_tokenize_is_deterministic_and_clean(text: str) -> None:
    """For any text: same output twice, no empty terms, no stop words, no duplicates."""
    first = tokenize(text)
    assert first == tokenize(text)
    assert all(first)
    assert not set(first) & STOP_WORDS
    assert len(first) == len(set(first))
    # The index also keeps every CJK character of a run the query uses as pairs.
    assert set(first) <= set(tokens(text))


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_fast_path_matches_span_path(text: str) -> None:
    """`tokens` (with its no-CJK fast path) always equals the span-based reference."""
    assert tokens(text) == [term for term, _w, _s in token_spans(text)]


def test_english_stemming_is_the_same_at_write_and_query_time() -> None:
    """Snowball stems: inflections meet on one term, in queries and in indexed text alike."""
    assert tokenize("caching") == tokenize("cache") == tokenize("cached") == ["cach"]
    assert index_terms("Caching caches") == ["cach", "cach"]
    assert tokenize("deployments deploying") == ["deploy"]


def test_accents_fold_to_plain_letters() -> None:
    """Composed and decomposed accents, ligatures and special letters fold alike."""
    assert fold("Éclair") == fold("E\u0301clair") == "eclair"
    assert fold("Straße") == "strasse"
    assert fold("Øresund") == "oresund"
    assert tokenize("naïve café") == tokenize("naive cafe") == tokenize("NAI\u0308VE CAFE\u0301")
    assert fold("ﬁle") == "file"


def test_cjk_index_keeps_single_characters_and_pairs() -> None:
    """Indexed CJK text holds every character and every adjacent pair, so one character matches."""
    assert index_terms("机器学习") == ["机", "机器", "器", "器学", "学", "学习", "习"]
    assert tokenize("学") == ["学"]
    assert set(tokenize("学")) <= set(index_terms("机器学习"))
    assert set(tokenize("学习")) <= set(index_terms("机器学习"))


def test_query_term_frequency_is_counted() -> None:
    """A repeated word (any inflection) counts once per occurrence, in first-seen order."""
    assert query_terms("flow Flows wing flow") == [
        QueryTerm("flow", "flow", 3),
        QueryTerm("wing", "wing", 1),
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40))
def test_index_terms_are_the_query_form_without_cjk(text: str) -> None:
    """The writer reuses a title's index terms as its query form unless it has CJK."""
    query_form = [term for term, _w, _s in token_spans(text, query=True)]
    if not has_cjk(text):
        assert index_words(text)[0] == query_form


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([" ", "-", "_", "'", "the", "running", "runs", "x1", "é", "中"]),
            st.text(alphabet="abcxyz019", min_size=1, max_size=3),
        ),
        max_size=150,
    )
)
def test_the_term_limit_shortcut_never_lets_too_many_terms_through(parts: list[str]) -> None:
    """Whenever the shortcut says a text is within the limit, tokenizing agrees."""
    text = "".join(parts)
    if surely_within_term_limit(text):
        assert len(tokenize(text)) <= MAX_TERMS


def test_a_run_of_letters_is_stemmed_but_not_kept() -> None:
    """The process's stem cache keeps words of at most 64 characters: a Page can be one run
    of 100,000 letters (1,000 such Pages grew the cache by 205 MB), and no English word is
    that long. The long word is still stemmed, each time."""
    import Stemmer

    from lwc_trio.memory.text import tokenize

    long_word = "stemmings" * 20
    snowball = Stemmer.Stemmer("english").stemWord(long_word)
    assert tokenize.stem_words([long_word, "caching"]) == [snowball, "cach"]
    assert long_word not in tokenize._STEMS.stems
    assert tokenize._STEMS.stems["caching"] == "cach"


def _kept(work: Callable[[], object]) -> int:
    """Bytes that `work` leaves allocated, measured with tracemalloc; what it makes while
    traced (the words a Page's text would make) counts."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_the_stem_cache_holds_at_most_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long session over many distinct words (a huge vocabulary, hostile Pages) keeps at
    most `STEM_CACHE_BYTES` of stems, measured with tracemalloc: counted by words, 500,000
    Devanagari words of 64 letters had kept about 200 MB. Each word is made while traced,
    as a Page's text makes it, and stems as Snowball does either way."""
    from lwc_trio.memory.text import tokenize

    monkeypatch.setattr(tokenize, "_STEMS", tokenize._Stems())
    letters = "कखगघचछजझटठडढणतथदधनपफबभमयरलवशसह" * 8

    def stem_them() -> None:
        for batch in range(200):
            words = [  # 64 letters: the longest word kept
                letters[n % 200 : n % 200 + 56] + f"{n:08d}"
                for n in range(batch * 1_000, (batch + 1) * 1_000)
            ]
            assert stem_words(words[:3]) == words[:3]  # Snowball leaves them as they are
            stem_words(words)

    kept = _kept(stem_them)
    assert 0 < tokenize._STEMS.weight <= tokenize.STEM_CACHE_BYTES
    assert kept <= 1.1 * 64 * 2**20  # docs/memory.md: 64 MiB, whatever the constant says


@pytest.mark.parametrize(
    "letters",
    ["abcdefgh", "éàü" * 3, "ह" * 60, "\U0001d49c" * 60],
    ids=["ascii", "latin-1", "two-byte", "four-byte"],
)
def test_the_stem_cache_weighs_what_it_keeps_from_above(
    monkeypatch: pytest.MonkeyPatch, letters: str
) -> None:
    """What `_Stems.add` counts for a batch of new words (ASCII, Latin-1, two- and four-byte
    characters, up to the 64 kept) is at least what they keep, measured with tracemalloc."""
    from lwc_trio.memory.text import tokenize

    monkeypatch.setattr(tokenize, "_STEMS", tokenize._Stems())
    kept = _kept(lambda: stem_words([f"{letters}{n:04d}" for n in range(2_000)]))
    assert 0 < kept <= tokenize._STEMS.weight


def test_words_too_many_to_keep_are_still_stemmed(monkeypatch: pytest.MonkeyPatch) -> None:
    """New words that alone weigh more than the cache may are stemmed and not kept, and the
    words found in the cache keep their stems."""
    from lwc_trio.memory.text import tokenize

    monkeypatch.setattr(tokenize, "_STEMS", tokenize._Stems())
    assert stem_words(["caching"]) == ["cach"]
    monkeypatch.setattr(tokenize, "STEM_CACHE_BYTES", 4_000)
    words = [f"running{n}s" for n in range(40)]
    stems = [f"running{n}" for n in range(40)]
    assert stem_words(["caching", *words, "hoping"]) == ["cach", *stems, "hope"]
    assert set(tokenize._STEMS.stems) == {"caching"}


@given(st.text("ab é,。配置中文字哈々カナ한글 \n-_", max_size=80))
def test_words_and_runs_hold_the_index_terms(text: str) -> None:
    """`words_and_runs` gives the same terms as `index_terms`, a run's as its characters
    and pairs: what the passages count in CJK runs without making them."""
    words, runs = words_and_runs(text)
    terms = words + [c for run in runs for c in run]
    terms += [run[i : i + 2] for run in runs for i in range(len(run) - 1)]
    assert sorted(terms) == sorted(index_terms(text))


def _spans_one_by_one(text: str, query: bool) -> list[tuple[str, str, int]]:
    """The analyzer's spans with each CJK run's made one character at a time, in document
    order (a run's character before the pair it starts): the oracle for the C-iterator path
    of `token_spans`, `index_terms` and `index_words`. The words' spans are taken as
    `token_spans` gives them."""
    runs = [match for match in _RUN.finditer(text) if match.lastgroup != "word"]
    in_runs = {at for match in runs for at in range(match.start(), match.end())}
    spans = [span for span in token_spans(text) if span[2] not in in_runs]
    for match in runs:
        run, start = match.group(), match.start()
        if len(run) == 1:
            spans.append((run, run, start))
            continue
        for i in range(len(run)):
            if not query:
                spans.append((run[i], run[i], start + i))
            if i + 1 < len(run):
                spans.append((run[i : i + 2], run[i : i + 2], start + i))
    return sorted(spans, key=lambda span: (span[2], len(span[0])))


@given(st.text("ab é,。配置中文字哈々カナ한글 \n-_Ω㊀〸", max_size=80))
def test_cjk_terms_come_in_the_analyzers_order(text: str) -> None:
    """`token_spans` (both forms), `index_terms` and `index_words` give, for text with CJK
    characters, exactly the spans made one character at a time, in the same order."""
    spans = _spans_one_by_one(text, query=False)
    assert list(token_spans(text)) == spans
    assert list(token_spans(text, query=True)) == _spans_one_by_one(text, query=True)
    assert index_terms(text) == [term for term, _w, _s in spans]
    assert index_words(text) == ([t for t, _w, _s in spans], [w for _t, w, _s in spans])


def test_words_keep_the_vowel_signs_and_viramas_of_their_script() -> None:
    """A Devanagari, Bengali or Tamil word is one term: its vowel signs and viramas are
    combining marks inside it, as an accent is in a Latin word (the virama folds away like
    one). Arabic and Hebrew vowel points fold away, so a pointed word meets its plain form."""
    assert tokenize("विन्यास फ़ाइल") == [fold("विन्यास"), fold("फ़ाइल")]
    assert fold("विन्यास") == "विनयास"  # NFKD, the virama dropped as accents are
    assert len(tokenize("পরীক্ষা করুন")) == 2
    assert len(tokenize("தமிழ் மொழி")) == 2
    assert tokenize("كَتَبَ الدَّرْسَ") == tokenize("كتب الدرس") == ["كتب", "الدرس"]
    assert tokenize("שָׁלוֹם") == tokenize("שלום") == ["שלום"]
    # A word is never split at a mark, and a term never starts with one.
    assert all(not unicodedata.category(term[0]).startswith("M") for term in tokens("ज़िंदगी है"))


def test_scripts_without_spaces_between_words_are_split_as_before() -> None:
    """Thai, Lao, Khmer and Myanmar write a phrase without spaces and have no segmentation
    here: their marks still end a term, as before format 7 (docs/memory.md, "Analyzer")."""
    assert tokenize("การตั้งค่า") == ["การต", "งค", "า"]
    assert tokenize("ការកំណត់") == ["ក", "រក", "ណត"]
    assert tokenize("ꦩꦂꦢꦶꦏ") == ["ꦩ", "ꦢ", "ꦏ"]  # Javanese
    assert len(tokens("ᬅᬓ᭄ᬱᬭᬩᬮᬶ")) > 1  # Balinese


def test_a_variation_selector_is_not_part_of_a_word() -> None:
    """A glyph's selector after a letter or digit leaves the term as it was: `ℹ️` is the stop
    word `i`, `1️⃣` the term `1`, a Mongolian word with a free variation selector its plain
    self (as in format 6)."""
    assert tokens("\u2139\ufe0f") == []
    assert tokens("1\ufe0f\u20e3 step") == ["1", "step"]
    assert tokens("ᠪᠢᠴᠢᠭ\u180c") == tokens("ᠪᠢᠴᠢᠭ") == ["ᠪᠢᠴᠢᠭ"]  # Mongolian


def test_the_marks_table_is_unicode_14s_marks_but_the_unspaced_scripts() -> None:
    """`MARKS` holds exactly Unicode 14.0's marks outside `UNSPACED` and `SELECTORS` (checked
    on Python 3.11,
    whose `unicodedata` is 14.0; on a later one, the table is a fixed subset of its marks)."""
    listed: set[str] = set()
    for start, end in re.findall(r"(.)(?:-(.))?", MARKS):
        listed.update(map(chr, range(ord(start), ord(end or start) + 1)))
    wanted = {
        chr(c)
        for c in range(0x110000)
        if unicodedata.category(chr(c)).startswith("M")
        and not any(low <= c <= high for low, high in (*UNSPACED, *SELECTORS))
    }
    if unicodedata.unidata_version == "14.0.0":
        assert listed == wanted
    else:
        assert listed <= wanted
