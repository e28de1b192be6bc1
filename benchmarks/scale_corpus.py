"""The scale benchmark's Wiki (issue 24): deterministic agent-like Pages at any size, streamed.

Every Page is a pure function of `(GENERATOR_VERSION, index)`: its own seeded RNG, so the
corpus is generated in one pass without holding it in memory, any Page can be regenerated
alone (the query generators read Pages back that way), and the same size always gives
byte-identical output. A Page has a title of 3–8 words, a one-sentence summary, and a
Markdown body of 300–3,000 words (log-normal, ~5.9 KB on average) drawn from a Zipfian
vocabulary of ~200,000 words: English function words at the top ranks, technical words, then
synthetic words among which snake_case identifiers (`parse_config`), CamelCase names and
numbers; headings, bullet lists, code spans, fenced code and `[[links]]` to other Pages (their
targets Zipf-distributed, so a few Pages are hubs).

    write_jsonl(path, size)            # the JSONL `lwc page import FILE.jsonl` reads
    cached_jsonl(root, size)           # the same, cached under root/.cache/scale/
    queries(size, kind, n)             # the four query kinds, deterministic

`python -m benchmarks.scale_corpus SIZE [--out FILE] [--queries KIND]` writes one or prints.
Bump `GENERATOR_VERSION` whenever the output changes: caches are keyed by it.
"""

from __future__ import annotations

import argparse
import bisect
import functools
import itertools
import json
import math
import os
import random
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks.scenarios.memory_corpus import COMMON_WORDS, FUNCTION_WORDS

GENERATOR_VERSION: Final = 1
VOCABULARY_SIZE: Final = 200_000
ZIPF_S: Final = 1.0
MIN_WORDS: Final = 300
MAX_WORDS: Final = 3_000
# log-normal body length (words): median ~600; whole blocks round it up to a mean of
# ~790 → ~5.9 KB a Page as JSONL.
_LENGTH_MU: Final = math.log(600)
_LENGTH_SIGMA: Final = 0.5
KINDS: Final = ("rare", "common", "typo", "question")
"""The four query kinds: 2–4 rare terms; 2–4 terms, one in more than 20 % of Pages; a misspelt
word beside a normal one; a 10–20-term question."""

_ONSETS = (*"bcdfghjklmnprstvwzbdkmpt", "st", "tr", "ch", "sh")
_VOWELS = (*"aeiouaeiou", "ai", "ou")
_CODAS = ["", "", "", "", "", "n", "r", "l", "s", "t", "x"]
_QUESTION_OPENERS = (
    "how does the", "why does", "what happens when the", "where is the", "how do we",
    "what is the", "when should the", "which",
)  # fmt: skip
_KIND_CHOICES = ("concept",) * 14 + ("decision",) * 2 + ("how-to",) * 2 + ("reference", "source")


@functools.cache
def vocabulary() -> tuple[str, ...]:
    """The ~200,000 words by Zipf rank (rank 0 the most frequent), the same for every size."""
    rng = random.Random(f"scale-vocabulary-{GENERATOR_VERSION}")
    # The memory scenario's English function words and technical words come first.
    words: list[str] = list(FUNCTION_WORDS)
    words += [w for w in COMMON_WORDS if w not in words]
    seen = set(words)

    def syllables(k: int) -> str:
        return "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(k)
        )

    while len(words) < VOCABULARY_SIZE:
        roll = rng.random()
        if roll < 0.06:  # snake_case identifier from two earlier words
            a, b = words[rng.randrange(60, len(words))], words[rng.randrange(60, len(words))]
            word = f"{a}_{b}".lower()
        elif roll < 0.09:  # CamelCase name
            word = syllables(rng.randint(1, 2)).capitalize() + syllables(1).capitalize()
        elif roll < 0.11:  # a number: a port, a version, a count
            word = rng.choice(
                (str(rng.randint(10, 99_999)), f"v{rng.randint(1, 30)}.{rng.randint(0, 40)}")
            )
        else:
            word = syllables(rng.choice((1, 2, 2, 2, 3, 3, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return tuple(words)


@functools.cache
def _cumulative() -> tuple[float, ...]:
    return tuple(itertools.accumulate(1.0 / (r + 1) ** ZIPF_S for r in range(VOCABULARY_SIZE)))


@functools.cache
def _ranks() -> dict[str, int]:
    return {w: i for i, w in enumerate(vocabulary())}


def _draw(rng: random.Random, k: int, lo_rank: int = 0) -> list[str]:
    vocab, cum = vocabulary(), _cumulative()
    if not lo_rank:
        return rng.choices(vocab, cum_weights=cum, k=k)
    floor = cum[lo_rank - 1]
    span = cum[-1] - floor
    top = len(vocab) - 1
    return [vocab[min(bisect.bisect_left(cum, floor + rng.random() * span), top)] for _ in range(k)]


# Titles and headings draw below the function words (content words, identifiers, names).
_TITLE_RANK: Final = 60


def title(index: int) -> str:
    """Page `index`'s title (3–8 words), a function of the index alone."""
    rng = random.Random(f"scale-title-{GENERATOR_VERSION}-{index}")
    words = _draw(rng, rng.randint(3, 8), _TITLE_RANK)
    return " ".join(w[:1].upper() + w[1:] for w in words)


def slug(index: int) -> str:
    """Page `index`'s slug: its title's first five words and the index (unique)."""
    head = "-".join(title(index).lower().replace("_", "-").replace(".", "-").split()[:5])
    return f"{head}-{index}"


def _link_target(rng: random.Random, size: int) -> int:
    # Zipf over a fixed scattering of the indexes: a few Pages are linked from many.
    rank = min(int(size ** rng.random()) - 1, size - 1)
    return (rank * 2_654_435_761) % size


class _Page:
    """One Page's fields and the words of its text (for the query generators)."""

    def __init__(self, index: int, size: int) -> None:
        rng = random.Random(f"scale-page-{GENERATOR_VERSION}-{index}")
        self.index = index
        self.title = title(index)
        self.words: list[str] = []
        self.summary = self._sentence(rng, size, links=False)
        target = int(min(MAX_WORDS, max(MIN_WORDS, rng.lognormvariate(_LENGTH_MU, _LENGTH_SIGMA))))
        parts = [f"# {self.title}", "", self._paragraph(rng, size, 2)]
        count = len(self.words)
        while count < target:
            heading = _draw(rng, rng.randint(1, 4), _TITLE_RANK)
            self.words.extend(heading)
            parts += ["", "## " + " ".join(heading).capitalize(), ""]
            roll = rng.random()
            if roll < 0.6:
                parts.append(self._paragraph(rng, size, rng.randint(3, 7)))
            elif roll < 0.88:
                bullet = "-" if rng.random() < 0.7 else "1."
                parts += [f"{bullet} {self._sentence(rng, size)}" for _ in range(rng.randint(3, 6))]
            else:
                a, b, c = _draw(rng, 3, _TITLE_RANK)
                self.words += [a, b, c]
                name = f"{a}_{b}".lower().replace(".", "_")
                parts += ["```python", f"def {name}({c.lower()}):", f"    return {c!r}", "```"]
            count = len(self.words)
        self.body = "\n".join(parts) + "\n"
        self.kind = rng.choice(_KIND_CHOICES)

    def _paragraph(self, rng: random.Random, size: int, sentences: int) -> str:
        return " ".join(self._sentence(rng, size) for _ in range(sentences))

    def _sentence(self, rng: random.Random, size: int, *, links: bool = True) -> str:
        ws = _draw(rng, rng.randint(8, 24))
        self.words.extend(ws)
        out = [f"`{w}`" if "_" in w and rng.random() < 0.5 else w for w in ws]
        if links and size > 1 and rng.random() < 0.12:
            target = _link_target(rng, size)
            if target != self.index:
                out.insert(rng.randrange(len(out) + 1), f"see [[{slug(target)}]]")
        out[0] = out[0][:1].upper() + out[0][1:]
        return " ".join(out) + "."

    def record(self) -> dict[str, Any]:
        return {
            "slug": slug(self.index),
            "title": self.title,
            "summary": self.summary,
            "kind": self.kind,
            "body": self.body,
        }


def page(index: int, size: int) -> dict[str, Any]:
    """Page `index` of a Wiki of `size` Pages, as a `lwc page import` JSONL object."""
    return _Page(index, size).record()


def pages(size: int, start: int = 0, stop: int | None = None) -> Iterator[dict[str, Any]]:
    """Pages `start..stop` of a Wiki of `size` Pages, in index order."""
    for index in range(start, size if stop is None else min(stop, size)):
        yield page(index, size)


def write_jsonl(path: Path, size: int, start: int = 0, stop: int | None = None) -> int:
    """Write Pages `start..stop` as JSONL to `path` (via a temporary name); returns bytes."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for record in pages(size, start, stop):
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path.stat().st_size


def cache_dir(root: Path, size: int) -> Path:
    """Where a Wiki of `size` Pages is cached: keyed by size and generator version."""
    return root / ".cache" / "scale" / f"v{GENERATOR_VERSION}" / str(size)


def cached_jsonl(root: Path, size: int, shard: int = 0) -> list[Path]:
    """The Wiki of `size` Pages as JSONL under `root/.cache/`, generated once.

    With `shard` > 0, files of at most `shard` Pages each (for importers with a per-file cap);
    else one file. Returns the files in order.
    """
    where = cache_dir(root, size)
    where.mkdir(parents=True, exist_ok=True)
    step = shard if shard > 0 else size
    files = []
    for start in range(0, size, step):
        name = "pages.jsonl" if step >= size else f"pages-{start // step:05d}-of-{step}.jsonl"
        path = where / name
        if not path.exists():
            write_jsonl(path, size, start, start + step)
        files.append(path)
    return files


# ----------------------------------------------------------------------------- queries


def _expected_df(rank: int) -> float:
    """The share of Pages expected to contain the word at `rank` (mean body length)."""
    p = 1.0 / ((rank + 1) ** ZIPF_S * _cumulative()[-1])
    return float(1.0 - (1.0 - p) ** 740)


@functools.cache
def _stop_words() -> frozenset[str]:
    from lwc_trio.memory.text.tokenize import STOP_WORDS

    return frozenset(STOP_WORDS)


def _content(word: str) -> bool:
    return word.lower() not in _stop_words() and any(c.isalpha() for c in word)


@functools.cache
def _frequent() -> tuple[str, ...]:
    """Content words expected in more than 25 % of Pages (safely above the 20 % line)."""
    return tuple(
        w
        for r, w in enumerate(vocabulary()[:2_000])
        if r >= _TITLE_RANK and _content(w) and _expected_df(r) > 0.25
    )


def _misspell(rng: random.Random, word: str) -> str | None:
    """One edit (substitution, deletion, transposition) that is not a vocabulary word."""
    ranks = _ranks()
    for _ in range(20):
        i = rng.randrange(1, len(word) - 1)
        roll = rng.random()
        if roll < 0.4:
            typo = word[:i] + rng.choice("aeiourstnl") + word[i + 1 :]
        elif roll < 0.7:
            typo = word[:i] + word[i + 1 :]
        else:
            typo = word[: i - 1] + word[i] + word[i - 1] + word[i + 1 :]
        if typo != word and typo not in ranks:
            return typo
    return None


def queries(size: int, kind: str, n: int) -> list[str]:
    """`n` queries of `kind` (one of `KINDS`) for the Wiki of `size` Pages, deterministic.

    Each query is built from one Page read back by index, so its terms occur in the Wiki.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    rng = random.Random(f"scale-queries-{GENERATOR_VERSION}-{size}-{kind}")
    ranks = _ranks()
    out: list[str] = []
    while len(out) < n:
        words = _Page(rng.randrange(size), size).words
        distinct = sorted({w for w in words if _content(w)}, key=lambda w: -ranks[w])
        if len(distinct) < 8:
            continue
        if kind == "rare":  # the rarest words of one Page
            out.append(" ".join(rng.sample(distinct[:6], rng.randint(2, 4))))
        elif kind == "common":  # one frequent word beside 1–3 rarer ones of the same Page
            terms = [rng.choice(_frequent()), *rng.sample(distinct[:20], rng.randint(1, 3))]
            rng.shuffle(terms)
            out.append(" ".join(terms))
        elif kind == "typo":  # a misspelt mid-frequency word beside a normal one
            middle = [
                w for w in distinct if 300 <= ranks[w] < 30_000 and w.isalpha() and w.islower()
            ]
            long_ones = [w for w in middle if len(w) >= 6]
            if not long_ones or not middle:
                continue
            typo = _misspell(rng, rng.choice(long_ones))
            if typo is None:
                continue
            terms = [typo, rng.choice(middle)]
            rng.shuffle(terms)
            out.append(" ".join(terms))
        else:  # a question of 10–20 words: an opener, words of one Page, function words
            target = rng.randint(10, 20)
            pool = distinct[:60]
            picks = rng.sample(pool, min(len(pool), 18))
            text = rng.choice(_QUESTION_OPENERS).split()
            for w in picks:
                if len(text) >= target:
                    break
                text.append(w)
                if len(text) < target and rng.random() < 0.35:
                    text.append(rng.choice(("with", "in", "for", "and", "of")))
            while len(text) < target:
                text.append(rng.choice(("with", "in", "for", "and", "of")))
            out.append(" ".join(text[:20]) + "?")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale_corpus")
    parser.add_argument("size", type=int)
    parser.add_argument("--out", type=Path, help="write the JSONL here (else stdout)")
    parser.add_argument("--queries", choices=KINDS, help="print 10 queries of this kind")
    args = parser.parse_args(argv)
    if args.queries:
        print("\n".join(queries(args.size, args.queries, 10)))
    elif args.out:
        write_jsonl(args.out, args.size)
    else:
        for record in pages(args.size):
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
