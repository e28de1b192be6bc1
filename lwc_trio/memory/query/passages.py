"""Query-focused Page bodies under a size budget (SPEC §4 "Pages"). Sans-IO and pure.

`allot` chooses for all the result Pages at once: the passages of every Page are scored as
one collection, weighted by their Page's search score, and taken best first within each Page's
cap by rank (`caps`). A Page that fits comes whole. A longer one comes as the passages most
relevant to the query: the body is split at Markdown headings, then at blank lines (a fenced
code block is one passage, never split where that can be avoided; a very long paragraph is
split at line and then sentence ends), each passage is scored with the search's own analyzer
(`tokenize.index_terms`) and BM25 with the search's non-collapsing IDF and constants
(`search.idf`, `search.DEFAULT_RANKING`), counting its heading path as part of it, and the
best passages that fit are returned **in document order**. A passage that does not follow the
one before it is introduced by its heading path (`§ Install › Linux`) and set apart by the
elision marker `[…]` on a line of its own; the outline (the Page's headings, capped) says
what was left out.

Sizes are in **cost units**: one unit per UTF-8 byte of the text as compact JSON writes it
(escapes included), plus one more per CJK character. A token is estimated at four units, so a
budget of T tokens is 4 T units, which is at most 4 T bytes: English text is about four bytes
a token, CJK text three bytes and about one token a character (see `estimate_tokens`).
"""

from __future__ import annotations

import collections
import functools
import itertools
import re
from collections.abc import Sequence
from itertools import repeat

import attrs

from lwc_trio.memory.query.search import DEFAULT_RANKING, idf
from lwc_trio.memory.text.tokenize import STOP_WORDS, index_terms, stem_words
from lwc_trio.protocol.units import cost

__all__ = [
    "ELISION",
    "OUTLINE_MAX",
    "UNITS_PER_TOKEN",
    "Focused",
    "Passage",
    "Slot",
    "allot",
    "body_units",
    "caps",
    "cost",
    "estimate_tokens",
    "focus",
    "outline",
    "priors",
    "split_passages",
]

UNITS_PER_TOKEN = 4
ELISION = "[…]"
"""The visible marker between passages that are not next to each other in the Page."""
_GAP = f"\n\n{ELISION}\n\n"
OUTLINE_MAX = 12
"""Headings listed in a truncated Page's `outline` at most."""
OUTLINE_ITEM_MAX = 80
PIECE_MAX = 800
"""A paragraph longer than this (characters) is split at line ends, then sentence ends
(tuned on SQuAD, whose paragraphs average ~700 characters: 1,200 and 500 did worse)."""
MIN_PASSAGE = 80
"""A passage is not cut down below this many characters to fit (it is left out instead)."""

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def estimate_tokens(text: str) -> int:
    """The documented token estimate of `text`: its cost units / 4, rounded up."""
    return -(-cost(text) // UNITS_PER_TOKEN)


@attrs.frozen
class Passage:
    """One piece of a Page body: `body[start:end]`, under the headings `path`."""

    start: int
    end: int
    path: tuple[str, ...]
    code: bool = False


def _grouped(body: str, start: int, end: int, breaks: re.Pattern[str]) -> list[tuple[int, int]]:
    """`[start, end)` cut after matches of `breaks` into groups of at most `PIECE_MAX`
    characters where the matches allow."""
    cuts = [start]
    last = start
    for match in breaks.finditer(body, start, end):
        if match.end() - cuts[-1] > PIECE_MAX and last > cuts[-1]:
            cuts.append(last)
        last = match.end()
    if end - cuts[-1] > PIECE_MAX and start < last < end and last > cuts[-1]:
        cuts.append(last)
    bounds = [*cuts, end]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


_LINE_END = re.compile(r"\n")


_SPACE_RUN = re.compile(r"\s+")


def _split_long(body: str, start: int, end: int) -> list[tuple[int, int]]:
    """`[start, end)` in pieces of about `PIECE_MAX` characters at most: at line ends, then
    sentence ends, then spaces; text with none of them (CJK) every `PIECE_MAX` characters."""
    pieces = [(start, end)]
    for breaks in (_LINE_END, _SENTENCE_END, _SPACE_RUN):
        pieces = [
            part
            for a, b in pieces
            for part in (_grouped(body, a, b, breaks) if b - a > PIECE_MAX else [(a, b)])
        ]
    out: list[tuple[int, int]] = []
    for a, b in pieces:
        out.extend((x, min(x + PIECE_MAX, b)) for x in range(a, b, PIECE_MAX))
    return [(a, _rstrip(body, a, b)) for a, b in out if _rstrip(body, a, b) > a]


def _rstrip(body: str, a: int, b: int) -> int:
    while b > a and body[b - 1].isspace():
        b -= 1
    return b


def split_passages(body: str) -> list[Passage]:
    """The passages of `body` in document order (headings are not passages: each passage
    carries the heading path above it). Whitespace between passages belongs to none."""
    passages: list[Passage] = []
    path: list[tuple[int, str]] = []
    para_start = -1
    fence: str | None = None
    fence_start = 0
    pos = 0

    def close(end: int) -> None:
        nonlocal para_start
        if para_start < 0:
            return
        a, b = para_start, end
        while b > a and body[b - 1].isspace():
            b -= 1
        para_start = -1
        heads = tuple(title for _level, title in path)
        for x, y in _split_long(body, a, b):
            passages.append(Passage(x, y, heads))

    for line in body.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        text = line.rstrip("\r\n")
        if fence is not None:
            marker = _FENCE.match(text)
            if (
                marker
                and marker.group(1)[0] == fence[0]
                and len(marker.group(1)) >= len(fence)
                and not text.strip().lstrip(fence[0])
            ):
                heads = tuple(title for _level, title in path)
                passages.append(Passage(fence_start, start + len(text), heads, code=True))
                fence = None
            continue
        marker = _FENCE.match(text)
        if marker:
            close(start)
            fence, fence_start = marker.group(1), start
            continue
        heading = _HEADING.match(text)
        if heading:
            close(start)
            level = len(heading.group(1))
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, heading.group(2).strip()))
            continue
        if not text.strip():
            close(start)
        elif para_start < 0:
            para_start = start
    if fence is not None:  # an unclosed fence runs to the end (as Markdown renders it)
        end = len(body.rstrip())
        heads = tuple(title for _level, title in path)
        if end > fence_start:
            passages.append(Passage(fence_start, end, heads, code=True))
    close(len(body))
    return passages


def outline(body: str, limit: int = OUTLINE_MAX) -> list[str]:
    """The Page's headings outside code, as `#`-marked lines, at most `limit` of them
    (the last entry says how many more there are)."""
    heads: list[str] = []
    fence: str | None = None
    total = 0
    for line in body.splitlines():
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence[0] and not line.strip().lstrip(fence[0]):
                fence = None
            continue
        if marker:
            fence = marker.group(1)
            continue
        heading = _HEADING.match(line)
        if heading:
            total += 1
            if len(heads) < limit:
                title = heading.group(2).strip()
                if len(title) > OUTLINE_ITEM_MAX:
                    title = title[: OUTLINE_ITEM_MAX - 1] + "…"
                heads.append(f"{heading.group(1)} {title}")
    if total > limit:
        heads[-1] = f"… {total - limit + 1} more headings"
    return heads


class _Words:
    """An ASCII body's folded words (`_ascii_analysis`) and, once the body is asked about a
    second time (its analysis kept, `_analyzed`), each passage's counts by term, as the
    analyzer gives them: a body asked about again mostly is again (a small Wiki's Pages
    answer question after question), and stemming its words once then costs less than
    finding each question's words among them."""

    __slots__ = ("by_term", "distinct", "used")

    def __init__(self, distinct: tuple[str, ...]) -> None:
        self.distinct = distinct
        self.used = False
        self.by_term: tuple[dict[str, int], ...] | None = None


Analysis = tuple[tuple[Passage, ...], tuple[dict[str, int], ...], tuple[int, ...], _Words | None]
"""A body's passages, each one's counts, each one's length in terms, and None when the counts
are by term, else the folded words they are by (an ASCII body, `_ascii_analysis`)."""
SMALL_BODY = 20_000
"""Bodies up to this many characters have their analysis kept for the last 1,024 of them;
longer ones (each analysis up to ~100,000 characters' terms) for the last 16."""


def _analyzed(body: str) -> Analysis:
    """`body`'s passages, each one's counts (its heading path counted with it) and length in
    terms. Kept for recent bodies: agents ask about the same Pages again."""
    return _small(body) if len(body) <= SMALL_BODY else _large(body)


def _analysis(body: str) -> Analysis:
    passages = tuple(split_passages(body))
    if body.isascii():
        return _ascii_analysis(body, passages)
    counts: list[dict[str, int]] = []
    lengths: list[int] = []
    for passage in passages:
        terms = index_terms(" ".join(passage.path) + "\n" + body[passage.start : passage.end])
        lengths.append(len(terms))
        counts.append(collections.Counter(terms))
    return passages, tuple(counts), tuple(lengths), None


_ALNUM = str.maketrans({chr(c): chr(c) if chr(c).isalnum() else " " for c in range(128)})
"""ASCII letters and digits kept, any other ASCII character a space: after `str.lower`,
`text.translate(_ALNUM).split()` gives the words `tokenize` finds in ASCII text (runs of
`[^\\W_]`, ASCII), with a few C calls instead of a regex match per word."""


def _ascii_analysis(body: str, passages: tuple[Passage, ...]) -> Analysis:
    """`_analysis` of an ASCII body, each passage's counts by folded word (stop words left out):
    what `index_terms` counts, before stemming. Stemming every word of every result Page was
    most of a query's cost on long Pages, and a query needs its own terms only
    (`_query_counts` finds the words behind them)."""
    low = body.lower().translate(_ALNUM)
    heads: dict[tuple[str, ...], list[str]] = {}
    counts: list[dict[str, int]] = []
    lengths: list[int] = []
    for passage in passages:
        words = heads.get(passage.path)
        if words is None:
            words = " ".join(passage.path).lower().translate(_ALNUM).split()
            heads[passage.path] = words
        found = collections.Counter(words)
        found.update(low[passage.start : passage.end].split())
        length = found.total() - sum(map(found.pop, found.keys() & STOP_WORDS))
        counts.append(found)
        lengths.append(length)
    distinct = tuple(dict.fromkeys(itertools.chain.from_iterable(counts)))
    return passages, tuple(counts), tuple(lengths), _Words(distinct)


STEM_TAIL = 3
"""An English Snowball stem differs from its word in at most its last two characters (it
only ever drops a suffix, or changes or adds a letter or two at the end: "dying" → "die",
"hoping" → "hope", "happy" → "happi"), so every word stemming to a term starts with the
term less its last two characters; one more is left off for safety (`_words_for`)."""


def _words_for(distinct: Sequence[str], terms: Sequence[str]) -> dict[str, list[str]]:
    """Those of `distinct` (a body's folded words) whose stem is one of `terms`: only the
    words starting like a term (`STEM_TAIL`) are stemmed."""
    prefixes = tuple({t[: max(len(t) - STEM_TAIL, 0)] for t in terms})
    candidates = list(itertools.compress(distinct, map(str.startswith, distinct, repeat(prefixes))))
    wanted = set(terms)
    out: dict[str, list[str]] = {}
    for word, term in zip(candidates, stem_words(candidates), strict=True):
        if term in wanted:
            out.setdefault(term, []).append(word)
    return out


def _query_counts(analysis: Analysis, terms: Sequence[str]) -> Sequence[dict[str, int]]:
    """Each passage's counts of `terms` (those it holds; any other key is ignored)."""
    _passages, counts, _lengths, words = analysis
    if words is None:
        return counts
    if words.by_term is not None:
        return words.by_term
    if words.used:
        term_of = dict(zip(words.distinct, stem_words(list(words.distinct)), strict=True))
        by_term: list[dict[str, int]] = []
        for found in counts:
            tfs: dict[str, int] = {}
            for word, count in found.items():
                term = term_of[word]
                tfs[term] = tfs.get(term, 0) + count
            by_term.append(tfs)
        words.by_term = tuple(by_term)  # complete before it is seen; threads may build it twice
        return words.by_term
    words.used = True
    words_of = _words_for(words.distinct, terms)
    out: list[dict[str, int]] = []
    for found in counts:
        tfs = {}
        for term, found_words in words_of.items():
            tf = sum(found.get(word, 0) for word in found_words)
            if tf:
                tfs[term] = tf
        out.append(tfs)
    return out


_small = functools.lru_cache(maxsize=1024)(_analysis)
_large = functools.lru_cache(maxsize=16)(_analysis)


def _scores(
    docs: Sequence[dict[str, int]], lengths: Sequence[int], query: Sequence[tuple[str, int]]
) -> list[float]:
    """BM25 of each passage for `query`'s `(term, count)`, the Page's passages being the
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


def _intro(path: tuple[str, ...]) -> str:
    return f"§ {' › '.join(path)}\n" if path else ""


def _cut_to(text: str, room: int, code: bool) -> str | None:
    """The longest prefix of `text` ending at a line end (else a word end) whose cost with a
    closing `…` (a closing fence for code) is at most `room` (`body_units`); None when under
    `MIN_PASSAGE` characters."""
    # A cut fence is closed by its own marker (`~~~`, four backticks...), or the rest of the
    # answer would render as code.
    opening = _FENCE.match(text) if code else None
    tail = f"\n{opening.group(1)}" if opening else ("\n```" if code else " …")
    limit = room - body_units(tail)
    if limit < MIN_PASSAGE:
        return None
    # Cost is at least one unit a character: the first `limit` characters bound the search.
    piece = text[:limit]
    while piece and body_units(piece) > limit:
        piece = piece[: max(len(piece) - max((body_units(piece) - limit) // 3, 1), 0)]
    cut = piece.rfind("\n")
    if cut < MIN_PASSAGE and not code:
        cut = piece.rfind(" ")
        if cut < MIN_PASSAGE and not piece.isascii():
            cut = len(piece)  # no space to cut at (CJK): any character boundary
    if cut < MIN_PASSAGE:
        return None
    return piece[:cut].rstrip() + tail


@attrs.frozen
class Focused:
    """A Page body cut to its share: the text, whether anything was left out, its cost."""

    body: str
    truncated: bool
    units: int


def _render(body: str, passages: Sequence[Passage], chosen: dict[int, str]) -> str:
    parts: list[str] = []
    previous = -1
    for index in sorted(chosen):
        passage = passages[index]
        whole = chosen.get(previous) == body[passages[previous].start : passages[previous].end]
        if (
            previous >= 0
            and index == previous + 1
            and passage.path == passages[previous].path
            and whole  # after a passage cut short, the gap is marked
        ):
            parts.append(body[passages[previous].end : passage.start])
        else:
            if index > 0 or previous >= 0:
                parts.append(_GAP if parts else f"{ELISION}\n\n")
            parts.append(_intro(passage.path))
        parts.append(chosen[index])
        previous = index
    if previous >= 0 and previous < len(passages) - 1:
        parts.append(_GAP.rstrip())
    return "".join(parts)


def focus(body: str, query: Sequence[tuple[str, int]], room: int, cap: int) -> Focused:
    """`body` alone (as the only Page of an answer, no entry around it) within `room` cost
    units and `cap` characters: whole when it fits, else its best passages for `query`
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


def priors(scores: Sequence[float]) -> list[float]:
    """Each result Page's weight from its search score (higher is better, `-rank`): its
    score over the best one's, so a Page nearly as good as the first weighs nearly as
    much. A score that is not positive (a title-only fuzzy fill-up, or no scores at all)
    weighs 1 / (rank + 1) instead. Tuned on SQuAD (docs/memory.md): an exponent of 1 on
    the ratio beat 0.5, 1.5 and 3, and beat weights by position alone."""
    top = scores[0] if scores else 0.0
    return [
        min(s / top, 1.0) if top > 0.0 and s > 0.0 else 1.0 / (i + 1) for i, s in enumerate(scores)
    ]


def caps(count: int, room: int) -> list[int]:
    """The most cost units the Page at each rank may take, its share by rank: rank i (from
    0) at most room / (i + 1), so the best Page may take the whole budget and each later
    one less (SPEC §4: each Page gets a share by rank, the best the most)."""
    return [room // (i + 1) for i in range(count)]


def _pooled(analyses: Sequence[Analysis], query: Sequence[tuple[str, int]]) -> list[list[float]]:
    """BM25 of every passage of every Page for `query`, all the Pages' passages one
    collection (IDF and mean length across them, so scores compare across Pages; scoring
    each Page's passages alone did worse on SQuAD), split back by Page."""
    terms = [term for term, _count in query]
    docs = [d for a in analyses for d in _query_counts(a, terms)]
    lengths = [n for a in analyses for n in a[2]]
    flat = _scores(docs, lengths, query)
    out = []
    at = 0
    for a in analyses:
        out.append(flat[at : at + len(a[0])])
        at += len(a[0])
    return out


def body_units(text: str) -> int:
    """What `text` adds to its entry as a JSON string value beyond an empty one: its cost
    with each quote and backslash escaped once more (`passages.cost` counts a text as it
    sits inside a JSON string; the entry's own encoding escapes it again)."""
    extra = 2 * (text.count('"') + text.count("\\"))
    if not text.isprintable():
        extra += len(_CONTROL.findall(text))
    return cost(text) + extra


_CONTROL = re.compile(r"[\x00-\x1f]")


def allot(
    slots: Sequence[Slot], query: Sequence[tuple[str, int]], room: int, chars: int
) -> list[Focused | None]:
    """What of each Page goes into the answer, within `room` cost units and `chars`
    characters in all (entries included, as `Slot` counts them): None for a Page left out.

    Every passage of every Page is scored for `query` against the passages of all of them
    (one collection: the scores compare across Pages), times its Page's `prior`; the best
    are taken first while the answer and the Page's `cap` hold them. A Page that is whole
    in `body` and fits its cap (or costs at most `WHOLE_FLOOR`) is one candidate, scored as
    its best passage, and comes whole when its turn comes and it fits. A Page whose passages
    match nothing offers them in document order, after every match. Deterministic; pure."""
    analyses = [_analyzed(slot.body) for slot in slots]
    scores = _pooled(analyses, query)
    # (score, page, passage); passage -1 is the whole Page, tried before its passages.
    candidates: list[tuple[float, int, int]] = []
    for i, slot in enumerate(slots):
        page_scores = scores[i]
        best = max(page_scores, default=0.0)
        if slot.whole and len(slot.body) <= slot.chars:
            candidates.append((best * slot.prior, i, -1))
        if best > 0.0:
            candidates.extend((s * slot.prior, i, j) for j, s in enumerate(page_scores) if s)
        else:
            candidates.extend((0.0, i, j) for j in range(len(page_scores)))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    left, chars_left = room, chars
    whole: set[int] = set()
    chosen: dict[int, dict[int, str]] = {}
    used = [0] * len(slots)
    used_chars = [0] * len(slots)
    overhead = cost(_GAP) + 2  # a separator (or the final marker) and the path's quoting
    for _score, i, j in candidates:
        if left < MIN_PASSAGE:
            break
        slot = slots[i]
        if i in whole:
            continue
        if j < 0:
            units = body_units(slot.body)
            fits = (units <= slot.cap or units <= WHOLE_FLOOR) and units + slot.entry <= left
            if fits and len(slot.body) <= chars_left:
                whole.add(i)
                left -= units + slot.entry
                chars_left -= len(slot.body)
            continue
        passage = analyses[i][0][j]
        entry = slot.cut_entry if i not in chosen else 0
        intro = _intro(passage.path)
        extra = cost(intro) + overhead
        left_units = min(slot.cap - used[i], left - entry) - extra
        left_chars = min(slot.chars - used_chars[i], chars_left) - len(intro) - 2 * len(_GAP)
        if left_units < MIN_PASSAGE or left_chars < MIN_PASSAGE:
            continue
        text = slot.body[passage.start : passage.end]
        units = body_units(text)
        if units > left_units or len(text) > left_chars:
            if passage.code and i in chosen:
                continue  # never cut inside a fence when another passage can go instead
            piece = _cut_to(text, min(left_units, left_chars), passage.code)
            if piece is None:
                continue
            text, units = piece, body_units(piece)
        chosen.setdefault(i, {})[j] = text
        used[i] += units + extra
        used_chars[i] += len(text) + len(intro) + len(_GAP)
        left -= units + extra + entry
        chars_left -= len(text) + len(intro) + len(_GAP)
    rendered = {i: _render(slots[i].body, analyses[i][0], picked) for i, picked in chosen.items()}

    def over() -> bool:
        units = sum(slots[i].entry + body_units(slots[i].body) for i in whole)
        units += sum(slots[i].cut_entry + body_units(text) for i, text in rendered.items())
        size = sum(len(slots[i].body) for i in whole) + sum(map(len, rendered.values()))
        return (
            units > room
            or size > chars
            or any(len(text) > slots[i].chars for i, text in rendered.items())
        )

    # The estimate above counts every separator at its largest: the answer always fits;
    # should the whitespace between passages still overshoot, drop the lowest-scored ones.
    while rendered and over():
        _s, i, j = min((scores[i][j] * slots[i].prior, -i, -j) for i in chosen for j in chosen[i])
        i, j = -i, -j
        del chosen[i][j]
        if chosen[i]:
            rendered[i] = _render(slots[i].body, analyses[i][0], chosen[i])
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
