"""Query-focused Page bodies under a size budget (SPEC §4 "Pages"). Sans-IO and pure.

`allot` chooses for all the result Pages at once. A Page that fits its share comes whole. A
longer one comes as its **sections** most relevant to the query (`markdown.sections`: a
heading and what lies under it), in document order:

- **Units.** Each section holding text is a unit, scored and taken as one. A section longer
  than `UNIT_MAX` characters (a long reference section, a Page with no headings at all) is
  several units, consecutive runs of its whole blocks (`markdown.cut_points`), so a long
  heading-less Page still comes as the part that answers.
- **Scoring.** Every unit of every result Page is scored for the query as one collection:
  BM25 with the search's own analyzer (`tokenize.index_terms`), non-collapsing IDF and
  constants (`scoring.idf`, `scoring.DEFAULT_RANKING`), its heading path counted with it; times
  its Page's prior from the search (`priors`). The rest of a matched section (its next
  runs, its subsections) scores at least a share of its match, and comes only after it
  (`_with_sections`): a section is what lies under its heading.
- **Taking.** Best first, each Page within its cap by rank (`caps`) and the answer within
  its room: a unit that fits is taken whole; a longer one is cut at a block boundary from its
  start (never inside a sentence, a list, a table, a fence or a container; a block that
  introduces the next, ending with `:`, travels with it), or, when its first block alone is
  too long, after a sentence of its first paragraph; never to under `MIN_CUT` characters.
- **Rendering.** Units next to each other come as the Page has them. Any other unit is
  introduced by one short heading path, its section's heading and at most two ancestors,
  without the Page's title (`§ Profiles › debug`), which stands for the heading line; the
  elision marker `[…]` on a line of its own marks what was left out between, before and
  after. The outline (the Page's headings, `outline`, capped by its cost) says what that was.

Sizes are in **cost units**: one unit per UTF-8 byte of the text as compact JSON writes it
(escapes included), plus one more per CJK character. A token is estimated at four units, so a
budget of T tokens is 4 T units, which is at most 4 T bytes: English text is about four bytes
a token, CJK text three bytes and about one token a character (see `estimate_tokens`).
"""

from __future__ import annotations

import bisect
import collections
import itertools
import re
import sys
from collections.abc import Iterator, Sequence

import attrs

from lwc_trio.memory.format.cache import Memo, RevisionCache
from lwc_trio.memory.query.scoring import DEFAULT_RANKING, idf
from lwc_trio.memory.text.markdown import (
    PARSED_BUDGET,
    PARSED_MAX,
    Block,
    blocks,
    cut_points,
    introduces,
    sections,
)
from lwc_trio.memory.text.tokenize import (
    MAX_TERMS,
    STOP_WORDS,
    is_cjk,
    known_stems,
    stem_words,
    words_and_runs,
)
from lwc_trio.protocol.units import cost

__all__ = [
    "ELISION",
    "MIN_CUT",
    "OUTLINE_UNITS",
    "UNITS_PER_TOKEN",
    "UNIT_MAX",
    "Focused",
    "Slot",
    "Unit",
    "allot",
    "best_units",
    "body_units",
    "caps",
    "cost",
    "estimate_tokens",
    "focus",
    "outline",
    "priors",
    "split_units",
]

UNITS_PER_TOKEN = 4
ELISION = "[…]"
"""The visible marker between passages that are not next to each other in the Page."""
_GAP = f"\n\n{ELISION}\n\n"
UNIT_MAX = 2000
"""A section longer than this (characters) is scored and taken as consecutive runs of its
whole blocks of at most this size (a block longer than that is a unit of its own)."""
PROSE_MAX = 800
"""`UNIT_MAX` for a Page without headings."""
MIN_CUT = 200
"""A unit is never cut to fewer characters than this (it is left out instead): a passage
that short says nothing on its own (SPEC §4). A whole section may be shorter."""
OUTLINE_UNITS = 120
"""The most cost units a truncated Page's outline takes (its headings, shallowest first)."""
OUTLINE_ITEM_MAX = 60
"""Characters of one outline heading at most."""
HEADING_WEIGHT = 2
"""A unit's heading path counts this many times in its score: a heading names what its section
is about, as a title does a Page (the search weighs titles 8 to a body's 1)."""
HEADS_SCORED_MAX = 1_000
"""Characters of a unit's heading path (its headings joined, outermost first) counted in its
score at most: real paths are a few hundred at most. A body's units share a room besides
(`heads_room`): a hostile Page of a thousand tiny sections under one huge heading would
otherwise copy that heading into every unit's analysis (18 MB kept, and seconds to count,
for a 20 kB body)."""
PATH_DEPTH = 3
"""Headings in a passage's path at most: its section's and two ancestors (SPEC §4)."""
PATH_ITEM_MAX = 100
"""Characters of one heading in a passage's path at most."""


def estimate_tokens(text: str) -> int:
    """The documented token estimate of `text`: its cost units / 4, rounded up."""
    return -(-cost(text) // UNITS_PER_TOKEN)


@attrs.frozen
class Unit:
    """One unit of a Page body: `body[start:end]`, a section's text (after its heading line)
    or a run of its blocks, under the headings `path` (empty for the text before the first
    heading)."""

    start: int
    end: int
    path: tuple[str, ...]
    first: bool
    """It starts its section: what precedes it in the Page is the section's heading line."""


def _pieces(text: str, most: int) -> list[tuple[int, int]]:
    """`text` (a section's content) as runs of whole block groups of at most `most`
    characters each where the blocks allow; offsets into `text`. A run after the first of
    only what a reader never sees rendered (link reference definitions, HTML comments: a
    long section's last run can be its "[name]: target.md#anchor" lines) goes with the run
    before it, which may then be that much longer: no unit that cannot be read at all."""
    stripped = text.rstrip()
    if not stripped:
        return []
    first = len(text) - len(text.lstrip())
    first = text.rfind("\n", 0, first) + 1  # the start of the first line with text
    if len(stripped) - first <= most and not stripped.endswith(":"):
        return [(first, len(stripped))]  # most sections: one unit, no block to look at
    points = list(cut_points(text))
    found = blocks(text)
    if introduces(text, found[-1]):
        # The section ends introducing the next ("…the options are:"): that block is no part
        # of its unit. It comes only where the next section's text follows it (`_render`
        # joins units next to each other with what lies between them).
        points = [point for point in points if point < found[-1].start]
    if not points:
        return []
    if points[-1] - first <= most:
        return [(first, points[-1])]
    for block in found:
        if block.kind == "paragraph" and block.end - block.start > most:
            points.extend(_breaks(text, block.start, block.end, most))
    points.sort()
    runs: list[tuple[int, int]] = []
    start, last = first, first
    for point in points:
        if point - start > most and last > start:
            runs.append((start, last))
            start = _skip_space(text, last)
        last = point
    runs.append((start, last))
    return _fold_unseen(text, runs, found)


def _fold_unseen(
    text: str, runs: list[tuple[int, int]], found: Sequence[Block]
) -> list[tuple[int, int]]:
    """`runs` with each one after the first that overlaps only unseen blocks (`_unseen`)
    joined to the run before it. Runs and blocks both come in order: one walk over each,
    each block judged once (a paragraph cut at its sentences overlaps many runs), so the
    fold stays linear in the section."""
    kept = runs[:1]
    unseen: dict[int, bool] = {}
    at = 0
    for start, end in runs[1:]:
        while at < len(found) and found[at].end <= start:
            at += 1
        index, hidden = at, True
        while hidden and index < len(found) and found[index].start < end:
            if index not in unseen:
                unseen[index] = _unseen(text, found[index])
            hidden = unseen[index]
            index += 1
        if hidden:
            kept[-1] = (kept[-1][0], end)
        else:
            kept.append((start, end))
    return kept


def _unseen(text: str, block: Block) -> bool:
    """`block` of `text` renders as nothing: link reference definitions, HTML comments
    (looked at in place, one pass)."""
    if block.kind == "references":
        return True
    at, end = block.start, block.end
    while True:
        while at < end and text[at].isspace():
            at += 1
        if at == end:
            return True
        if not text.startswith("<!--", at, end):
            return False
        close = text.find("-->", at + 4, end)
        if close < 0:
            return False
        at = close + 3


def _breaks(text: str, start: int, end: int, most: int) -> list[int]:
    """Where a paragraph longer than `most` characters (`text[start:end]`) may end a unit:
    after its sentences; where a sentence is longer still, at its line ends, then at its
    spaces, then (text without any, such as CJK) every `most` characters."""
    cuts = [start, end]
    for finder in (_sentence_ends, _line_ends, _space_ends, _every):
        found: list[int] = []
        for a, b in itertools.pairwise(cuts):
            if b - a > most:
                found.extend(finder(text, a, b, most))
        if found:
            cuts = sorted({*cuts, *found})
    return cuts[1:-1]


def _sentence_ends(text: str, a: int, b: int, most: int) -> list[int]:
    return [match.end() for match in _SENTENCE_END.finditer(text, a, b - 1)]


def _line_ends(text: str, a: int, b: int, most: int) -> list[int]:
    return [match.start() for match in _NEWLINE.finditer(text, a + 1, b)]


def _space_ends(text: str, a: int, b: int, most: int) -> list[int]:
    return [match.start() for match in _SPACE.finditer(text, a + 1, b)]


def _every(text: str, a: int, b: int, most: int) -> list[int]:
    return list(range(a + most, b, most))


_NEWLINE = re.compile("\n")
_SPACE = re.compile(" ")


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _split_units(body: str) -> tuple[Unit, ...]:
    """The units of `body` in document order (see the module docstring)."""
    units: list[Unit] = []
    found = sections(body)
    # A Page without headings (an article, notes) has no sections to speak of: its units
    # are runs of a few paragraphs.
    most = PROSE_MAX if all(section.level == 0 for section in found) else UNIT_MAX
    for section in found:
        text = body[section.text : section.end]
        for index, (start, end) in enumerate(_pieces(text, most)):
            units.append(Unit(section.text + start, section.text + end, section.path, index == 0))
    return tuple(units)


UNIT_OBJECT_BYTES = 160
"""A `Unit` in `split_units`'s keeping, at most (its heading path is its section's)."""


def _units_weight(body: str, units: tuple[Unit, ...]) -> int:
    return sys.getsizeof(body) + UNIT_OBJECT_BYTES * len(units) + _paths_bytes(units)


def _paths_bytes(units: Sequence[Unit]) -> int:
    """The bytes of `units`' heading paths, each tuple and heading counted once: they are
    the sections' (`markdown.sections`), which can be dropped before the units are."""
    paths = {id(unit.path): unit.path for unit in units}.values()
    heads = {id(head): head for path in paths for head in path}.values()
    return sum(map(sys.getsizeof, paths)) + sum(map(sys.getsizeof, heads))


split_units: Memo[str, tuple[Unit, ...]] = Memo(
    _split_units, PARSED_MAX, PARSED_BUDGET, _units_weight
)


def _title_key(text: str) -> str:
    return " ".join(text.replace("`", "").split()).casefold()


def short_path(path: Sequence[str], title: str) -> tuple[str, ...]:
    """The heading path a passage is introduced by: without the Page's own title (its
    entry carries it), the last `PATH_DEPTH` headings, each cut to `PATH_ITEM_MAX`
    characters (a heading line of 60,000 characters still leaves room for its text)."""
    key = _title_key(title)
    kept = [head for head in path if _title_key(head) != key]
    return tuple(
        head if len(head) <= PATH_ITEM_MAX else head[: PATH_ITEM_MAX - 1].rstrip() + "…"
        for head in kept[-PATH_DEPTH:]
    )


def outline(body: str, title: str = "", room: int = OUTLINE_UNITS) -> list[str]:
    """The Page's headings outside code (`#`-marked, attribute lists dropped, the Page's own
    title left out) within `room` cost units: the shallowest levels that fit, in document
    order; the last entry says how many headings are not listed."""
    key = _title_key(title)
    heads: list[tuple[int, str]] = []
    for section in sections(body):
        if section.level and _title_key(section.path[-1]) != key:
            text = section.path[-1]
            if len(text) > OUTLINE_ITEM_MAX:
                text = text[: OUTLINE_ITEM_MAX - 1] + "…"
            heads.append((section.level, f"{'#' * section.level} {text}"))
    if not heads:
        return []
    levels = sorted({level for level, _text in heads})
    chosen: list[str] = []
    for depth in range(len(levels), 0, -1):
        allowed = set(levels[:depth])
        chosen = [text for level, text in heads if level in allowed]
        more = len(heads) - len(chosen)
        if more:
            chosen.append(f"… {more} more headings")
        if sum(cost(item) + 3 for item in chosen) <= room:
            return chosen
    # Even the top level does not fit: as many of its headings as do.
    top = [text for level, text in heads if level == levels[0]]
    out: list[str] = []
    spent = 0
    for text in top:
        if spent + cost(text) + 3 + 30 > room:
            break
        out.append(text)
        spent += cost(text) + 3
    out.append(f"… {len(heads) - len(out)} more headings")
    return out


Counts = tuple[dict[str, int], ...]
"""Each unit's counts by term (of the terms asked about, or of all of them)."""


class _Counted:
    """How a kept analysis gives its units' counts (`counts`): the last question's again
    (one question asks twice: the ranking's section evidence, then the passages, which is no
    second question); counted for a question's own terms while it is asked about once; from
    a second question on, where the body allows it (`by_term_of`), counted by term once for
    all: a body asked about again mostly is again (a small Wiki's Pages answer question after
    question), and counting it whole once then costs less than finding each question's
    words again."""

    __slots__ = ("by_term", "last", "used")

    def __init__(self) -> None:
        self.used = False
        self.by_term: Counts | None = None
        self.last: tuple[tuple[str, ...], Counts] | None = None

    def counts(self, terms: Sequence[str]) -> Counts:
        if self.by_term is not None:
            return self.by_term
        key = tuple(terms)
        last = self.last
        if last is not None and last[0] == key:
            return last[1]
        if self.used:
            by_term = self.by_term_of()
            if by_term is not None:
                self.by_term = by_term  # complete before it is seen; threads may build it twice
                self.last = None  # counted by term from now on
                return by_term
        self.used = True
        counted = self.found(terms)
        if len(set(key)) <= MAX_TERMS:  # what `_weight` counts on
            self.last = (key, counted)
        return counted

    def found(self, terms: Sequence[str]) -> Counts:
        """Each unit's counts of `terms`, found for them."""
        raise NotImplementedError

    def by_term_of(self) -> Counts | None:
        """Each unit's counts of all its terms, or None where they are not kept."""
        raise NotImplementedError


class _Texts(_Counted):
    """An ASCII body's passages as `_ascii_analysis` keeps them: each one's heading path
    (counted `HEADING_WEIGHT` times) and text, folded to lowercase letters, digits and
    spaces, in one string (`text`, each passage's from its offset in `starts`), every word
    between spaces. A question's words are found by their prefixes (`_words_like`) and
    stemmed; from a second question on, every word is (`_Counted`)."""

    __slots__ = ("starts", "text")

    def __init__(self, text: str, starts: tuple[int, ...]) -> None:
        super().__init__()
        self.text = text
        self.starts = starts

    def passages(self) -> Iterator[str]:
        """Each passage's folded text."""
        return (self.text[a:b] for a, b in itertools.pairwise((*self.starts, len(self.text))))

    def found(self, terms: Sequence[str]) -> Counts:
        found = _words_like(self, terms)
        distinct = list({word for _passage, word in found} - STOP_WORDS)
        stems = known_stems(distinct)
        unknown = [word for word, stem in zip(distinct, stems, strict=True) if not stem]
        term_of = dict(zip(distinct, stems, strict=True))
        term_of.update(zip(unknown, stem_words(unknown), strict=True))
        wanted = set(terms)
        out: list[dict[str, int]] = [{} for _ in self.starts]
        for passage, word in found:
            term = term_of.get(word)  # None for a stop word
            if term in wanted:
                tfs = out[passage]
                tfs[term] = tfs.get(term, 0) + 1
        return tuple(out)

    def by_term_of(self) -> Counts:
        return tuple(
            collections.Counter(stem_words(list(itertools.filterfalse(_STOP, text.split()))))
            for text in self.passages()
        )


_SEP = "\x00"
"""What stands either side of each term in a `_Terms` string: a character no term holds (a
folded word can hold spaces: the ligature U+FDFA folds to four Arabic words), checked over
every word character of Unicode."""


class _Terms(_Counted):
    """Any other body's units as their index terms: each unit's word terms (its heading path
    counted `HEADING_WEIGHT` times, then its text), every term between its own two `_SEP`s,
    in one string (each unit's from its offset in `starts`), and each unit's CJK runs, one a
    line, in another (`runs`, from `run_starts`). A query counts only its own terms, by
    `str.find` (`found`): each in the words, a CJK character or pair in the runs too. A
    term kept takes a few bytes here where a count by term takes about a
    hundred, and a CJK run of n characters holds 2n - 1 terms in n characters, so long CJK
    Pages are kept, and analysed without a string made for each of their terms. A body
    without CJK characters (`countable`: at most a term a word) is counted by term from its
    second question on, as an ASCII body is (`_Texts`): `distinct` is how many entries those
    counts take, each unit's distinct word terms summed (what `_weight` counts on)."""

    __slots__ = ("distinct", "run_starts", "runs", "starts", "text")

    def __init__(
        self,
        text: str,
        starts: tuple[int, ...],
        runs: str,
        run_starts: tuple[int, ...],
        distinct: int,
    ) -> None:
        super().__init__()
        self.text = text
        self.starts = starts
        self.runs = runs
        self.run_starts = run_starts
        self.distinct = distinct

    @property
    def countable(self) -> bool:
        """No CJK run: at most a term a word, so counts by term are kept."""
        return not self.runs

    def found(self, terms: Sequence[str]) -> Counts:
        """Every term of `text` stands between its own two `_SEP`s, so each find of it with
        them is one occurrence, and the next starts past it. A CJK character or pair is
        also each place it starts in the runs, overlapping ones too ("哈哈哈" holds the pair
        哈哈 twice); it can be a word's term too (a compatibility character such as ㊀
        folds to 一)."""
        out: list[dict[str, int]] = [{} for _ in self.starts]
        for term in dict.fromkeys(terms):
            if not term:  # no term is empty (and "\0\0" lies between every two)
                continue
            needle = f"{_SEP}{term}{_SEP}"
            _count(out, term, self.text, needle, self.starts, step=len(needle))
            if self.runs and len(term) <= 2 and is_cjk(term[:1]):
                _count(out, term, self.runs, term, self.run_starts, step=1)
        return tuple(out)

    def by_term_of(self) -> Counts | None:
        if not self.countable:
            return None
        text = self.text
        pairs = itertools.pairwise((*self.starts, len(text)))
        return tuple(collections.Counter(filter(None, text[a:b].split(_SEP))) for a, b in pairs)


Analysis = tuple[tuple[Unit, ...], tuple[int, ...], _Texts | _Terms]
"""A body's units, each one's length in terms, and what their counts come from
(`_query_counts`): an ASCII body's folded texts (`_ascii_analysis`), any other's terms."""
ANALYSES_MAX = 1024
ANALYSES_BUDGET = 64 * 2**20
"""Analyses kept: those of the last `ANALYSES_MAX` bodies asked about, at most this many
bytes together as `_weight` estimates them (from above: the body, its units, its folded text
and every term its units can be counted by)."""
UNIT_BYTES = 640
"""What one unit of an analysis keeps beyond its text and terms: its `Unit`, offsets and
length, and its counts by term (an empty dict already takes a few hundred bytes)."""
ANALYSIS_BYTES = 4096
"""What an analysis keeps whatever its size: its tuples, its texts' object, a stem or two."""
TERM_BYTES = 128
"""What one term of a unit's counts keeps: a dict entry, and its own string (an English
stem of an ASCII body is most often shared with the process's stem cache)."""


def _weight(body: str, analysis: Analysis) -> int:
    """Bytes kept by `analysis` of `body` (and `body`, the cache's key), estimated from
    above: each unit's share (`UNIT_BYTES`), its heading path, and what its counts come
    from. An ASCII body's: its folded text twice over (as folded, and as the characters of
    terms too long for `TERM_BYTES`, a run of letters) and each term it is counted by once
    asked about twice (`TERM_BYTES`; counts by term hold at most its words less the stop
    words, its `lengths`). Any other body's: its terms' strings (`_Terms`), and when it is
    `countable` its counts by term, an entry for each distinct term of each unit (`distinct`:
    a Hindi Page repeats its words as an English one does, and weighed by each word instead,
    a 100 kB one came to 2.6 MB: of 24 such Pages, some were analysed again at every
    question), whose keys are that string's terms over again; when it
    is not, the last question's counts, kept for good: at most `MAX_TERMS` a unit, and no
    more than the unit's terms (`_Counted.counts` keeps none of a longer question)."""
    units, lengths, source = analysis
    if isinstance(source, _Texts):
        text = 2 * sys.getsizeof(source.text) + TERM_BYTES * sum(lengths)
    elif source.countable:
        text = 2 * sys.getsizeof(source.text) + TERM_BYTES * source.distinct
    else:
        asked = sum(min(length, MAX_TERMS) for length in lengths)
        text = sys.getsizeof(source.text) + sys.getsizeof(source.runs) + TERM_BYTES * asked
    paths = _paths_bytes(units)
    return ANALYSIS_BYTES + sys.getsizeof(body) + text + paths + UNIT_BYTES * len(units)


_ANALYSES: RevisionCache[tuple[Analysis, int]] = RevisionCache(
    ANALYSES_MAX, ANALYSES_BUDGET, lambda kept: kept[1]
)


def _analyzed(body: str) -> Analysis:
    """`body`'s units, each one's counts (its heading path counted with it) and length in
    terms. Kept for recent bodies (`ANALYSES_BUDGET`): agents ask about the same Pages
    again."""

    def build() -> tuple[Analysis, int]:
        analysis = _analysis(body)
        return analysis, _weight(body, analysis)

    return _ANALYSES.get_or_build(body, build)[0]


HEADS_ROOM_FACTOR = 4
"""A body's units count at most this many times the body's length (plus `HEADS_SCORED_MAX`)
of heading paths together (`heads_room`)."""


def heads_room(body: str, units: int) -> int:
    """How many characters of its heading path each of `body`'s `units` counts: up to
    `HEADS_SCORED_MAX`, and together no more than `HEADS_ROOM_FACTOR` times the body's
    length plus that, so that what a body is analysed into stays a few times its size. A
    real Page's paths take a third of its length at most, terse references (an option per
    line under long headings, a glossary, an FAQ) a few times it: the room cuts none of
    them; a hostile Page of thousands of one-word sections under one long heading has each
    count a few characters of it."""
    room = (HEADS_ROOM_FACTOR * (len(body) + HEADS_SCORED_MAX)) // max(units, 1)
    return min(HEADS_SCORED_MAX, room)


def heads_scored(path: Sequence[str], room: int = HEADS_SCORED_MAX) -> str:
    """What of a unit's heading `path` its score counts: the headings joined, their last
    `room` characters (`heads_room`: the section's own heading first of all, then its
    nearest ancestors), `HEADING_WEIGHT` times."""
    joined = " ".join(path)
    return " ".join([joined[max(len(joined) - room, 0) :]] * HEADING_WEIGHT)


def _analysis(body: str) -> Analysis:
    passages = split_units(body)
    if body.isascii():
        return _ascii_analysis(body, passages)
    texts: list[str] = []
    starts: list[int] = []
    at = 0
    cjk: list[str] = []
    run_starts: list[int] = []
    run_at = 0
    lengths: list[int] = []
    distinct = 0
    room = heads_room(body, len(passages))
    for passage in passages:
        heads = heads_scored(passage.path, room)
        words, runs = words_and_runs(heads + "\n" + body[passage.start : passage.end])
        distinct += len(set(words))
        chars = sum(map(len, runs))
        lengths.append(len(words) + 2 * chars - len(runs))  # a run's characters and pairs
        text = f"{_SEP}{(_SEP * 2).join(words)}{_SEP}"
        texts.append(text)
        starts.append(at)
        at += len(text)
        lines = "".join(f"{run}\n" for run in runs)  # a line ends each run: no pair spans two
        cjk.append(lines)
        run_starts.append(run_at)
        run_at += len(lines)
    terms = _Terms("".join(texts), tuple(starts), "".join(cjk), tuple(run_starts), distinct)
    return passages, tuple(lengths), terms


_ALNUM = str.maketrans({chr(c): chr(c) if chr(c).isalnum() else " " for c in range(128)})
"""ASCII letters and digits kept, any other ASCII character a space: after `str.lower`,
`text.translate(_ALNUM).split()` gives the words `tokenize` finds in ASCII text (runs of
`[^\\W_]`, ASCII), with a few C calls instead of a regex match per word."""
_STOP = STOP_WORDS.__contains__


def _ascii_analysis(body: str, passages: tuple[Unit, ...]) -> Analysis:
    """`_analysis` of an ASCII body, by C string operations instead of a Python step per
    word (counting or stemming every word of every result Page was most of a query's cost):
    each passage's text folded (`_Texts`) and its length in terms, its words less its stop
    words. A query counts its own terms' words only (`_query_counts`)."""
    low = body.lower().translate(_ALNUM)
    heads: dict[tuple[str, ...], str] = {}
    texts: list[str] = []
    starts: list[int] = []
    at = 0
    lengths: list[int] = []
    room = heads_room(body, len(passages))
    for passage in passages:
        head = heads.get(passage.path)
        if head is None:
            head = heads_scored(passage.path, room).lower().translate(_ALNUM)
            heads[passage.path] = head
        text = f" {head} {low[passage.start : passage.end]} "
        texts.append(text)
        starts.append(at)
        at += len(text)
        words = text.split()
        lengths.append(len(words) - sum(map(_STOP, words)))
    return passages, tuple(lengths), _Texts("".join(texts), tuple(starts))


STEM_TAIL = 3
"""An English Snowball stem differs from its word in at most its last two characters (it
only ever drops a suffix, or changes or adds a letter or two at the end: "dying" → "die",
"hoping" → "hope", "happy" → "happi") and never in its first, so every word stemming to a
term starts with the term less its last two characters, and with its first character; one
more is left off for safety (`_prefix`)."""


def _prefix(term: str) -> str:
    """What every word stemming to `term` starts with (`STEM_TAIL`)."""
    return term[: max(len(term) - STEM_TAIL, 1)]


def _prefixes(terms: Sequence[str]) -> list[str]:
    """The prefixes (`_prefix`) of `terms`, none of them starting with another: a word that
    starts like several terms is found once."""
    out: list[str] = []
    for prefix in sorted(set(map(_prefix, terms))):
        # Sorted, every string that starts with a kept prefix comes right after it.
        if not out or not prefix.startswith(out[-1]):
            out.append(prefix)
    return out


def _words_like(texts: _Texts, terms: Sequence[str]) -> list[tuple[int, str]]:
    """`(passage, word)` for each word of `texts` that starts like one of `terms`: the only
    words that may stem to one of them. Each prefix is found after a space by `str.find`, and
    each find starts past the word before: linear in the text and the words found."""
    text, starts = texts.text, texts.starts
    found: list[tuple[int, str]] = []
    for prefix in _prefixes(terms):
        needle = " " + prefix
        at = text.find(needle)
        while at >= 0:
            end = text.find(" ", at + len(needle))  # every passage's text ends with a space
            found.append((bisect.bisect_right(starts, at) - 1, text[at + 1 : end]))
            at = text.find(needle, end)
    return found


def _count(
    out: list[dict[str, int]],
    term: str,
    text: str,
    needle: str,
    starts: Sequence[int],
    *,
    step: int,
) -> None:
    """Count `term` in `out` (a dict a unit, each unit's text from its offset in `starts`)
    once for each find of `needle` in `text`, each find `step` past the one before."""
    at = text.find(needle)
    while at >= 0:
        tfs = out[bisect.bisect_right(starts, at) - 1]
        tfs[term] = tfs.get(term, 0) + 1
        at = text.find(needle, at + step)


def _query_counts(analysis: Analysis, terms: Sequence[str]) -> Sequence[dict[str, int]]:
    """Each passage's counts of `terms` (those it holds; any other key is ignored)."""
    return analysis[2].counts(terms)


def _scores(
    docs: Sequence[dict[str, int]], lengths: Sequence[int], query: Sequence[tuple[str, int]]
) -> list[float]:
    """BM25 of each unit for `query`'s `(term, count)`, the units given being the
    collection: the search's IDF (never negative) and constants, query term frequency."""
    n = len(docs)
    if n == 0:
        return []
    ranking = DEFAULT_RANKING
    avgdl = max(sum(lengths) / n, 1.0)
    weights = {
        term: idf(n, sum(1 for doc in docs if term in doc)) * count * (ranking.k1 + 1.0)
        for term, count in query
    }
    out: list[float] = []
    for counts, length in zip(docs, lengths, strict=True):
        den = ranking.k1 * (1.0 - ranking.b + ranking.b * length / avgdl)
        score = 0.0
        for term, weight in weights.items():
            tf = counts.get(term, 0)
            if tf:
                score += weight * tf / (tf + den)
        out.append(score)
    return out


def _intro(unit: Unit, title: str) -> str:
    path = short_path(unit.path, title)
    return f"§ {' › '.join(path)}\n" if path else ""


_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？।॥؟۔]")
"""A sentence's last character: a full stop, question or exclamation mark before white
space, or a CJK one, the danda of Hindi and other Indic scripts (।, ॥), or the Arabic
question mark and Urdu full stop (؟, ۔) (character classes: linear on any text)."""


def _longest(text: str, points: Sequence[int], units: int) -> int:
    """The largest of the ascending `points` whose prefix of `text` costs at most `units`
    (`body_units`), 0 when none: the cost grows with the prefix, so bisection."""
    lo, hi = 0, len(points)
    while lo < hi:
        mid = (lo + hi) // 2
        if body_units(text[: points[mid]]) <= units:
            lo = mid + 1
        else:
            hi = mid
    return points[lo - 1] if lo else 0


def _cut(text: str, units: int, chars: int) -> str | None:
    """The longest prefix of `text` (a unit) ending at a block boundary that costs at most
    `units` (`body_units`) and has at most `chars` characters; else one ending at a sentence
    end of its first block, if that is a paragraph; None when under `MIN_CUT` characters."""
    # Cost is at least one unit a character: `limit` characters bound every prefix tried.
    limit = min(units, chars)
    best = _longest(text, [p for p in cut_points(text) if p <= limit], units)
    if best >= MIN_CUT:
        return text[:best]
    found = blocks(text)
    if not found or found[0].kind != "paragraph":
        return None
    ends = [
        match.end()
        for match in _SENTENCE_END.finditer(text, found[0].start, min(found[0].end, limit))
        if match.end() >= MIN_CUT
    ]
    best = _longest(text, ends, units)
    return text[:best] if best >= MIN_CUT else None


@attrs.frozen
class Focused:
    """A Page body cut to its share: the text, whether anything was left out, its cost."""

    body: str
    truncated: bool
    units: int


def _render(body: str, units: Sequence[Unit], chosen: dict[int, str], title: str) -> str:
    """The chosen units' texts (`chosen`: unit index → its text, whole or cut) as the Page
    reads: units next to each other joined by what lies between them in the Page (blank
    lines, the next section's heading), any other introduced by its heading path and set
    apart by the elision marker."""
    parts: list[str] = []
    previous = -1
    for index in sorted(chosen):
        unit = units[index]
        text = chosen[index]
        joined = (
            previous >= 0
            and index == previous + 1
            and chosen[previous] == body[units[previous].start : units[previous].end]
        )
        if joined:
            parts.append(body[units[previous].end : unit.start])
        else:
            if parts:
                parts.append(_GAP)
            elif index > 0 or (body[: unit.start].strip() and not unit.first):
                parts.append(f"{ELISION}\n\n")
            parts.append(_intro(unit, title))
        parts.append(text)
        previous = index
    last = units[previous]
    if chosen[previous] != body[last.start : last.end] or body[last.end :].strip():
        parts.append(_GAP.rstrip())
    return "".join(parts)


def focus(body: str, query: Sequence[tuple[str, int]], room: int, cap: int) -> Focused:
    """`body` alone (as the only Page of an answer, no entry around it) within `room` cost
    units and `cap` characters: whole when it fits, else its best units for `query`
    (`(term, count)` pairs, as `tokenize.parse_query` gives) in document order (`allot`)."""
    got = allot([Slot(body, 1.0, room, cap, 0, 0, True)], query, room, cap)[0]
    return got if got is not None else Focused("", True, 0)


@attrs.frozen
class Slot:
    """One result Page as `allot` sees it, in result order."""

    body: str
    """Its text (as read: up to `FOCUS_SCAN` characters)."""
    prior: float
    """Its weight from the search's ranking, 1.0 for the best Page (see `priors`)."""
    cap: int
    """The most cost units its body may take: its share by rank."""
    chars: int
    """The most characters its body may have (LWC's caps)."""
    entry: int
    """Cost units of its entry without a body, when it comes whole."""
    cut_entry: int
    """Cost units of its entry without a body, when it is truncated (outline, `more`)."""
    whole: bool
    """`body` is the whole Page, so it may come whole."""
    title: str = ""
    """The Page's title, which its passages' heading paths leave out."""


def priors(scores: Sequence[float]) -> list[float]:
    """Each result Page's weight from its search score (higher is better, `-rank`): its
    score over the best one's, so a Page nearly as good as the first weighs nearly as
    much. A score that is not positive (a title-only fuzzy fill-up, or no scores at all)
    weighs 1 / (rank + 1) instead. The ratio is raised to `PP`."""
    top = scores[0] if scores else 0.0
    return [
        min(s / top, 1.0) ** PP if top > 0.0 and s > 0.0 else 1.0 / (i + 1)
        for i, s in enumerate(scores)
    ]


PP = 1.25
"""The exponent on a Page's score ratio in `priors`: above 1, a Page somewhat below the
first weighs less than its ratio, so the first Page's further sections win over the next
Pages' sections of about the same score. Tuned on the documentation set with sections as
units (docs/memory.md, "Decisions"): 1.25 and 1.5 beat 1 and 1.75; SQuAD's tuning
questions agree."""


def caps(count: int, room: int) -> list[int]:
    """The most cost units the Page at each rank may take, its share by rank: rank i (from
    0) at most room / (i + 1), so the best Page may take the whole budget and each later
    one less (SPEC §4: each Page gets a share by rank, the best the most)."""
    return [room // (i + 1) for i in range(count)]


def _pooled(analyses: Sequence[Analysis], query: Sequence[tuple[str, int]]) -> list[list[float]]:
    """BM25 of every unit of every Page for `query`, all the Pages' units one collection
    (IDF and mean length across them, so scores compare across Pages), split back by Page."""
    terms = [term for term, _count in query]
    docs = [d for a in analyses for d in _query_counts(a, terms)]
    lengths = [n for a in analyses for n in a[1]]
    flat = _scores(docs, lengths, query)
    out = []
    at = 0
    for a in analyses:
        out.append(flat[at : at + len(a[0])])
        at += len(a[0])
    return out


SUBSECTION_SHARE = 0.7
"""The share of a section's match that each unit after it scores at least, raised to the
number of units from it (`_with_sections`). Tuned on the documentation set (docs/memory.md,
"The rest of a section follows it"): from 0.5 to 0.8 the answers held every key span they
held without it, at 0.9 one fewer; passages under 200 characters were fewest at 0.8 (5.0 %)
and 0.7 (5.1 %)."""
SUBSECTION_UNITS = 64
"""Units after a section's best unit that score a share of it, at most (0.7 ** 64 is 1e-10 of
it): a section of thousands of one-line subsections makes no more candidates than that."""


@attrs.define
class _Open:
    """A section the walk of `_with_sections` is in or under."""

    level: int
    best: float | None
    """Its best own unit's score so far; None for one that passes on nothing."""
    at: int = -1
    """The index of that unit."""


def _with_sections(
    body: str, units: Sequence[Unit], scores: list[float], title: str
) -> tuple[list[float], list[int]]:
    """`scores` of `body`'s `units`, each raised to what lying under a matched heading earns
    it, and for each the unit it earned it from (-1: its own score): the k-th unit after a
    section's best own unit so far, in document order (its own further runs, then its
    subsections), scores at least `SUBSECTION_SHARE` ** k times that unit's score, k up to
    `SUBSECTION_UNITS`. A section is a heading and what lies under it (SPEC §4), so the rest
    of a chosen section (a long one's next runs, its examples, its options, which often
    repeat none of the question's words) follows it in order while the room holds it, before
    whatever scores less; `allot` takes such a unit only after the one it earned its score
    from. The Page's title heading (its first, when it says the title or lies over every
    other heading) and the text before the first heading pass on nothing: the whole Page
    lies under the one, nothing under the other. The walk is over the sections themselves,
    so a heading with no text of its own ends the sections it does not lie under."""
    after = [-1] * len(units)
    if not any(scores):
        return scores, after
    found = sections(body)
    headed = [section for section in found if section.level]
    first = headed[0] if headed else None
    key = _title_key(title)
    out = list(scores)
    enclosing: list[_Open] = []
    j = 0
    for section in found:
        while enclosing and enclosing[-1].level >= section.level:
            enclosing.pop()
        titled = section is first and (
            _title_key(section.path[-1]) == key
            or all(other.level > section.level for other in headed[1:])
        )
        own = _Open(section.level, 0.0 if section.level and not titled else None)
        while j < len(units) and units[j].start < section.end:
            for above in (*enclosing, own):
                if above.best and j - above.at <= SUBSECTION_UNITS:
                    inherited = SUBSECTION_SHARE ** (j - above.at) * above.best
                    if inherited > out[j]:
                        out[j], after[j] = inherited, above.at
            if own.best is not None and scores[j] > own.best:
                own.best, own.at = scores[j], j
            j += 1
        enclosing.append(own)
    return out, after


def best_units(bodies: Sequence[str], query: Sequence[tuple[str, int]]) -> list[float | None]:
    """Each body's best unit score for `query`, all the bodies' units one collection (as
    `allot` scores them, which then counts nothing again): the section evidence of
    `evidence.rerank`; None for a body without headings, which has no section to rank by
    (and, when no body has any, nothing is scored: a Wiki of plain notes). A heading is
    `#`-marked (`markdown.heading`), so a body without `#` is not split to tell."""
    if not any(unit.path for body in bodies if "#" in body for unit in split_units(body)):
        return [None] * len(bodies)
    analyses = [_analyzed(body) for body in bodies]
    scores = _pooled(analyses, query)
    return [
        max(found, default=0.0) if any(unit.path for unit in analysis[0]) else None
        for analysis, found in zip(analyses, scores, strict=True)
    ]


def body_units(text: str) -> int:
    """What `text` adds to its entry as a JSON string value beyond an empty one (`cost`)."""
    return cost(text)


class _Taking:
    """`allot`'s running account: what each Page took, what is left."""

    def __init__(self, slots: Sequence[Slot], room: int, chars: int) -> None:
        self.slots = slots
        self.left = room
        self.chars_left = chars
        self.whole: set[int] = set()
        self.chosen: dict[int, dict[int, str]] = {}
        self.used = [0] * len(slots)
        self.used_chars = [0] * len(slots)

    def take_whole(self, i: int) -> None:
        slot = self.slots[i]
        if i in self.whole or i in self.chosen or not slot.whole or len(slot.body) > slot.chars:
            return
        units = body_units(slot.body)
        fits = (units <= slot.cap or units <= WHOLE_FLOOR) and units + slot.entry <= self.left
        if fits and len(slot.body) <= self.chars_left:
            self.whole.add(i)
            self.left -= units + slot.entry
            self.chars_left -= len(slot.body)

    def take(self, i: int, j: int, unit: Unit) -> None:
        slot = self.slots[i]
        if i in self.whole:
            return
        entry = slot.cut_entry if i not in self.chosen else 0
        # What follows, in short, before its intro is made: the unit (at least a cost unit a
        # character) and its separators do not fit in what is left, which is too little to
        # cut it to.
        size = unit.end - unit.start
        most = min(slot.cap - self.used[i], self.left - entry) - cost(_GAP) - 2
        most_chars = min(slot.chars - self.used_chars[i], self.chars_left) - 2 * len(_GAP)
        if min(most, most_chars) < MIN_CUT and (size > most or size > most_chars):
            return
        intro = _intro(unit, slot.title)
        extra = cost(intro) + cost(_GAP) + 2  # its separator (or the end marker), quoting
        left_units = min(slot.cap - self.used[i], self.left - entry) - extra
        left_chars = min(slot.chars - self.used_chars[i], self.chars_left)
        left_chars -= len(intro) + 2 * len(_GAP)
        text = slot.body[unit.start : unit.end]
        if body_units(text) > left_units or len(text) > left_chars:
            if min(left_units, left_chars) < MIN_CUT:
                return
            piece = _cut(text, left_units, left_chars)
            if piece is None:
                return
            text = piece
        units = body_units(text)
        self.chosen.setdefault(i, {})[j] = text
        self.used[i] += units + extra
        self.used_chars[i] += len(text) + len(intro) + len(_GAP)
        self.left -= units + extra + entry
        self.chars_left -= len(text) + len(intro) + len(_GAP)


def allot(
    slots: Sequence[Slot], query: Sequence[tuple[str, int]], room: int, chars: int
) -> list[Focused | None]:
    """What of each Page goes into the answer, within `room` cost units and `chars`
    characters in all (entries included, as `Slot` counts them): None for a Page left out.

    Every unit of every Page is scored for `query` against the units of all of them (one
    collection: the scores compare across Pages), times its Page's `prior`; the best are
    taken first while the answer and the Page's `cap` hold them (see the module docstring).
    A Page that is whole in `body` and fits its cap (or costs at most `WHOLE_FLOOR`) is one
    candidate, scored as its best unit, and comes whole when its turn comes and it fits. A
    Page whose units match nothing offers them in document order, after every match.
    Deterministic; pure."""
    analyses = [_analyzed(slot.body) for slot in slots]
    own = _pooled(analyses, query)
    raised = [
        _with_sections(slot.body, analysis[0], found, slot.title)
        for analysis, found, slot in zip(analyses, own, slots, strict=True)
    ]
    scores = [page_scores for page_scores, _after in raised]
    # (score, page, unit, the unit it must come after or -1); unit -1 is the whole Page,
    # tried before its units. A unit that earned a share of a section's match comes only
    # after that match, and, should the match not come, at its own score.
    candidates: list[tuple[float, int, int, int]] = []
    for i, slot in enumerate(slots):
        page_scores, after = raised[i]
        best = max(page_scores, default=0.0)
        if slot.whole and len(slot.body) <= slot.chars:
            candidates.append((best * slot.prior, i, -1, -1))
        if best > 0.0:
            candidates.extend(
                (s * slot.prior, i, j, after[j]) for j, s in enumerate(page_scores) if s
            )
            candidates.extend(
                (s * slot.prior, i, j, -1) for j, s in enumerate(own[i]) if s and after[j] >= 0
            )
        else:
            candidates.extend((0.0, i, j, -1) for j in range(len(page_scores)))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2], c[3]))
    taking = _Taking(slots, room, chars)
    for _score, i, j, source in candidates:
        if taking.left < MIN_CUT:
            break
        if j < 0:
            taking.take_whole(i)
            continue
        taken = taking.chosen.get(i, {})
        if j not in taken and (source < 0 or source in taken):
            taking.take(i, j, analyses[i][0][j])
    chosen = taking.chosen
    rendered = {
        i: _render(slots[i].body, analyses[i][0], picked, slots[i].title)
        for i, picked in chosen.items()
    }
    whole = taking.whole

    def over() -> tuple[int, bool]:
        """Cost units over `room` (at most 0 when within), and whether characters are."""
        units = sum(slots[i].entry + body_units(slots[i].body) for i in whole)
        units += sum(slots[i].cut_entry + body_units(text) for i, text in rendered.items())
        size = sum(len(slots[i].body) for i in whole) + sum(map(len, rendered.values()))
        return units - room, size > chars or any(
            len(text) > slots[i].chars for i, text in rendered.items()
        )

    # The estimate above leaves out the text between joined units and the marker before a
    # Page's first passage; should the answer overshoot its units, the lowest-scored unit is
    # cut shorter by as much, or dropped when it cannot be (a Page whose one passage was over
    # by a few units had been left out whole: long CJK Pages at 20 results); over its
    # characters, it is dropped.
    while rendered:
        excess, too_long = over()
        if excess <= 0 and not too_long:
            break
        _s, i, j = min((scores[i][j] * slots[i].prior, -i, -j) for i in chosen for j in chosen[i])
        i, j = -i, -j
        text = chosen[i][j]
        shorter = None if too_long else _cut(text, body_units(text) - excess, len(text) - 1)
        if shorter is not None:
            chosen[i][j] = shorter
        else:
            del chosen[i][j]
        if chosen[i]:
            rendered[i] = _render(slots[i].body, analyses[i][0], chosen[i], slots[i].title)
        else:
            del chosen[i], rendered[i]
    return [
        Focused(slot.body, False, body_units(slot.body))
        if i in whole
        else Focused(rendered[i], True, body_units(rendered[i]))
        if i in rendered
        else None
        for i, slot in enumerate(slots)
    ]


WHOLE_FLOOR = 2_000
"""A Page body of at most this many cost units (about 500 tokens: a glossary, a short note)
comes whole when its turn comes and the budget left holds it, whatever its cap: cut to a
few hundred characters it would say less and cost a follow-up read."""
