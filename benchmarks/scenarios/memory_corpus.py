"""The memory scenario's corpus: a deterministic Wiki and queries, seeded and Zipf-shaped."""

from __future__ import annotations

import bisect
import math
import random
from collections import Counter

from lwc_trio.memory.index.inputs import PageInput
from lwc_trio.memory.text.tokenize import STOP_WORDS

# Zipf ranks 1..~60 are English function words, as in real text: most of them are on the
# tokenizer's stop list (never indexed), the rest ("from", "have", "also"…) become terms found
# in most documents. Then the technical words, then a long tail of synthetic words.
_FUNCTION_TEXT = (
    "the of and to a in is it that for on with as be at by this are or not but from have an "
    "they which you we can will if no there their these then such into was do does how what "
    "when where who why did i me my our your has all more also use only new one should must "
    "each other"
)
FUNCTION_WORDS = tuple(dict.fromkeys(_FUNCTION_TEXT.split()))
_COMMON_TEXT = (
    "server config cache deploy request response error handler query index build test "
    "release version module service client token session database schema migration worker "
    "thread queue timeout retry logging metrics latency memory store page search graph node "
    "edge link source document parser tokenizer plugin runtime process signal socket stream "
    "buffer frame protocol transport endpoint router policy permission user account project "
    "workspace branch commit review merge pipeline artifact container image cluster network "
    "storage backup restore snapshot monitor alert incident rollback feature flag option "
    "default value field record table column row key lock transaction commit journal file "
    "directory path format encoding unicode string integer float list map set batch limit "
    "budget deadline cancel shutdown startup health check design decision tradeoff risk note"
)
COMMON_WORDS = tuple(dict.fromkeys(_COMMON_TEXT.split()))
_SYLLABLE_TEXT = (
    "ka ri to ma ne so lu vi de pa mo ki ra te no sa fu gi be zo ta re mi ku ho ya "
    "shi chi ven dor lan mar tel quo bri sta fen gal dra plo tri cor nex vor hal pen"
)
SYLLABLES = _SYLLABLE_TEXT.split()
KINDS = ("concept",) * 14 + ("decision",) * 2 + ("how-to",) * 2 + ("reference", "source")
VOCAB_SIZE = 40_000
ZIPF_S = 1.0
# Titles and headings draw from below the function words.
TITLE_RANK = len(FUNCTION_WORDS) + 10


class Generator:
    """Deterministic wiki generator: the same (seed, size) always gives the same pages."""

    def __init__(self, seed: int, size: int) -> None:
        self.rng = random.Random(f"lwc-bench-{seed}-{size}")
        self.size = size
        self.vocab = self._vocabulary()
        self.cum = list(_cumulative(len(self.vocab), ZIPF_S))
        # Link targets: a Zipf over a random permutation of the pages, so a few are hubs.
        self.link_order = list(range(size))
        self.rng.shuffle(self.link_order)
        self.link_cum = list(_cumulative(size, 0.9))
        self.df: Counter[str] = Counter()
        self.titles: list[str] = []
        self.slugs: list[str] = []

    def _vocabulary(self) -> list[str]:
        rng = random.Random(20240501)  # the same vocabulary for every size
        words = [*FUNCTION_WORDS, *(w for w in COMMON_WORDS if w not in FUNCTION_WORDS)]
        seen = set(words)
        while len(words) < VOCAB_SIZE:
            n = rng.choice((2, 2, 3, 3, 3, 4, 4, 5))
            word = "".join(rng.choice(SYLLABLES) for _ in range(n))
            if word not in seen and word not in STOP_WORDS:
                seen.add(word)
                words.append(word)
        return words

    def words(self, k: int, lo_rank: int = 0) -> list[str]:
        if lo_rank:
            top = self.cum[-1]
            floor = self.cum[lo_rank - 1]
            picks = [
                bisect.bisect_left(self.cum, floor + self.rng.random() * (top - floor))
                for _ in range(k)
            ]
            return [self.vocab[min(i, len(self.vocab) - 1)] for i in picks]
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def sentence(self, used: list[str], *, links: bool = True) -> str:
        rng = self.rng
        ws = self.words(rng.randint(8, 22))
        used.extend(ws)
        out: list[str] = []
        for w in ws:
            if rng.random() < 0.03 and w not in STOP_WORDS:
                out.append(f"`{w}_{rng.choice(ws)}()`")
            else:
                out.append(w)
        if links and rng.random() < 0.3:
            target = self.link_target()
            if rng.random() < 0.3:
                alias = " ".join(self.words(2))
                out.insert(rng.randrange(len(out) + 1), f"[[{target}|{alias}]]")
            else:
                out.insert(rng.randrange(len(out) + 1), f"see [[{target}]]")
        out[0] = out[0][:1].upper() + out[0][1:]
        return " ".join(out) + "."

    def link_target(self) -> str:
        i = bisect.bisect_left(self.link_cum, self.rng.random() * self.link_cum[-1])
        return self.slugs[self.link_order[min(i, self.size - 1)]]

    def title(self, i: int) -> str:
        if i < 3:
            return ("Index", "Overview", "Project README")[i]
        k = self.rng.choice((1, 2, 2, 2, 3, 3, 4))
        return " ".join(w.capitalize() for w in self.words(k, lo_rank=TITLE_RANK))

    def body(self, title: str, used: list[str]) -> str:
        rng = self.rng
        target = min(3000, max(30, int(rng.lognormvariate(math.log(200), 0.6))))
        parts = [f"# {title}", "", " ".join(self.sentence(used) for _ in range(rng.randint(1, 3)))]
        count = sum(len(s.split()) for s in parts)
        while count < target:
            heading = " ".join(self.words(rng.randint(1, 3), lo_rank=TITLE_RANK)).capitalize()
            used.extend(heading.lower().split())
            block: list[str] = ["", f"## {heading}", ""]
            for _ in range(rng.randint(1, 3)):
                choice = rng.random()
                if choice < 0.55:
                    block.append(" ".join(self.sentence(used) for _ in range(rng.randint(2, 5))))
                elif choice < 0.85:
                    bullet = "-" if rng.random() < 0.7 else "1."
                    block.extend(
                        f"{bullet} {self.sentence(used)}" for _ in range(rng.randint(3, 6))
                    )
                else:
                    ident = self.words(3)
                    used.extend(ident)
                    block.extend(
                        [
                            "```python",
                            f"def {ident[0]}_{ident[1]}({ident[2]}):",
                            f"    return [[{ident[2]}]]  # not a link: inside code",
                            "```",
                        ]
                    )
                block.append("")
            parts.extend(block)
            count += sum(len(s.split()) for s in block)
        return "\n".join(parts).rstrip() + "\n"

    def pages(self) -> list[PageInput]:
        rng = self.rng
        seen: set[str] = set()
        for i in range(self.size):
            title = self.title(i)
            base = "-".join(title.lower().split())
            slug, n = base, 1
            while slug in seen:
                n += 1
                slug = f"{base}-{n}"
            seen.add(slug)
            self.titles.append(title)
            self.slugs.append(slug)
        out: list[PageInput] = []
        for i in range(self.size):
            used: list[str] = self.titles[i].lower().split()
            summary = self.sentence(used, links=False) if rng.random() < 0.4 else None
            body = self.body(self.titles[i], used)
            self.df.update(w for w in set(used) if w not in STOP_WORDS)
            provenance = ("agent-observed",) if rng.random() < 0.2 else ()
            out.append(
                PageInput(
                    slug=self.slugs[i],
                    title=self.titles[i],
                    body=body,
                    kind=rng.choice(KINDS),
                    summary=summary,
                    provenance=provenance,
                )
            )
        return out

    def queries(self, n: int) -> list[tuple[str, str]]:
        """`n` (category, query) pairs mixing common, rare, title, typo and no-hit queries."""
        rng = random.Random(f"lwc-bench-queries-{self.size}")
        by_df = sorted(self.df.items(), key=lambda kv: (-kv[1], kv[0]))
        # Agents search for content words, not "from" or "have".
        content = [(w, d) for w, d in by_df if w not in FUNCTION_WORDS]
        by_df = content
        common = [w for w, _ in by_df[:200]]
        rare = [w for w, d in by_df if 1 <= d <= 5] or [w for w, _ in by_df[-200:]]
        mid = [w for w, _ in by_df[200:3000]] or common
        plan = (
            ["common"] * 28 + ["rare"] * 22 + ["mixed"] * 20 + ["title"] * 10
            + ["question"] * 10 + ["typo"] * 5 + ["nohit"] * 5
        )  # fmt: skip
        out: list[tuple[str, str]] = []
        for i in range(n):
            cat = plan[i % len(plan)]
            if cat == "common":
                q = " ".join(rng.sample(common, rng.randint(1, 3)))
            elif cat == "rare":
                q = " ".join(rng.sample(rare, rng.randint(1, 2)))
            elif cat == "mixed":
                q = " ".join([*rng.sample(common, rng.randint(1, 2)), rng.choice(rare)])
            elif cat == "title":
                q = rng.choice(self.titles[3:])
            elif cat == "question":
                q = f"how do we {rng.choice(mid)} the {rng.choice(common)} {rng.choice(mid)}"
            elif cat == "typo":
                w = rng.choice([t for t in self.titles[3:] if len(t) >= 8]).split()[0].lower()
                j = rng.randrange(1, len(w) - 1)
                q = w[:j] + w[j + 1 :]  # one deletion after the first letter
            else:
                q = " ".join(f"xq{rng.randrange(10**6)}zv" for _ in range(rng.randint(1, 2)))
            out.append((cat, q))
        rng.shuffle(out)
        return out


def _cumulative(n: int, s: float) -> list[float]:
    total, out = 0.0, []
    for r in range(1, n + 1):
        total += 1.0 / r**s
        out.append(total)
    return out
