"""Adversarial lines for a regular expression, and how its cost grows with their length.

Used by `tests/test_regex_linear.py` (issue 36, SPEC §4: "every pattern matched against
store or file text runs in linear time"). Python's `re` backtracks, so a pattern is slow
when an attempt that starts at many positions scans far ahead and fails (`a*b` on a run of
`a`), or when two quantifiers can share a run (`(.+?)[ \\t#]*$` on a line of spaces). Both
show on lines made of the pattern's own characters: a run of one character or a repeated
unit of two or three, after a prefix that brings the engine into the pattern (`# a` before
the spaces), before a tail that makes it fail.

**Families.** The pattern's source is read by a small parser (`parse`): literals, escapes,
classes, `.`, groups of every kind, alternation and quantifiers. Each atom's members are
found by compiling the atom alone and trying it on a pool of characters (ASCII, whitespace,
controls, a few letters of other scripts), so a negated class gives real non-members of
what it excludes. The lines are then, with each tail of `TAILS`:

- a run of every unit: each representative character, each pair of the characters of the
  unbounded atoms (`" #"` runs), each short piece of a string the pattern matches (`"](a"`);
- a prefix of a string the pattern matches (`"# a"`) followed by a run of one character.

**Cost.** `re` exposes no step count, so cost is CPU time of the measuring thread
(`time.thread_time_ns`): a loaded machine delays a thread but does not add to its CPU time.
Every line is tried at 20, 256 and 2,048 characters (`SCREENS`), where a linear pattern
takes microseconds and a quadratic one milliseconds at the last (a cubic one at 256, an
exponential one at 20: each is caught before a longer line could hang the run). A line over
`SUSPECT` is measured again at n/4 and n (best of three): a linear cost grows about 4×, a
quadratic one 16×; more than `GROWTH_MAX` (8×, the geometric middle) fails.
Then each pattern's costliest lines go to `LONG` characters (64 KiB) and must still grow
at most `GROWTH_MAX` from a quarter of that length: the long adversarial line every pattern
is fed. Times below `FLOOR` are never judged by their ratio (timer grain and cache effects).
"""

from __future__ import annotations

import gc
import itertools
import math
import re
import string
import time
from collections.abc import Callable, Iterable

import attrs

POOL = (
    string.ascii_letters
    + string.digits
    + string.punctuation
    + " \t\n\r\x0b\x0c\x00\x1b\x7f"
    + "éßøİ中あ한ｦ\u0301\u00a0\u2028𠀀"
)
"""Characters tried against each atom; its members among them represent it."""
TAILS = ("", "\n", "x", "\x00")
SCREENS = (20, 256, 2048)
"""Lengths every line is tried at, shortest first, so that an exponential pattern is caught
at 20 characters and a cubic one at 256, before a longer line could hang the run."""
SUSPECT = 0.003
"""CPU seconds at a screening length above which a line is measured for growth (a linear
pattern takes a few microseconds at 256 characters and under 1 ms at 2,048 even when every
character is a match; a quadratic one 20 ms there)."""
GROWTH_MAX = 8.0
FLOOR = 0.002
"""CPU seconds under which a cost is too small to judge by its growth."""
LONG = 65_536
LONG_LINES = 3
"""Lines per pattern taken to `LONG` characters (its costliest at the last screening length)."""
LONG_MAX = 0.5
"""CPU seconds a search of a `LONG` line may take at all (a linear pattern takes ~1 ms)."""
REPS = 3
WALKS_MAX = 16
PREFIXES_MAX = 40
UNITS_MAX = 40


@attrs.frozen
class Node:
    """One piece of a parsed pattern, with its quantifier (`low`..`high`, None: no bound)."""

    kind: str  # "atom" | "seq" | "alt" | "empty"
    chars: tuple[str, ...] = ()
    items: tuple[Node, ...] = ()
    low: int = 1
    high: int | None = 1


_QUANTIFIER = re.compile(r"\{(\d*)(,?)(\d*)\}")


class _Parser:
    """A tolerant reader of `re` syntax: what it does not know becomes a literal, which only
    makes the families a little less sharp, never wrong."""

    def __init__(self, source: str, flags: int) -> None:
        self.src = source
        self.flags = flags & ~re.VERBOSE
        self.at = 0
        self.order = list(dict.fromkeys(source))
        self.atoms: list[Node] = []

    def members(self, atom_source: str) -> tuple[str, ...]:
        try:
            compiled = re.compile(atom_source, self.flags)
        except re.error:
            return tuple(dict.fromkeys(c for c in atom_source if c != "\\"))[:3]
        found = [c for c in POOL if compiled.fullmatch(c)]
        ranked = sorted(found, key=lambda c: self.order.index(c) if c in self.order else 999)
        return tuple(ranked[:3])

    def atom(self, atom_source: str) -> Node:
        node = Node("atom", self.members(atom_source))
        self.atoms.append(node)
        return node

    def parse(self) -> Node:
        branches = [self.sequence()]
        while self.at < len(self.src) and self.src[self.at] == "|":
            self.at += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else Node("alt", items=tuple(branches))

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.at < len(self.src) and self.src[self.at] not in "|)":
            item = self.item()
            if item is not None:
                items.append(self.quantified(item))
        return Node("seq", items=tuple(items))

    def quantified(self, item: Node) -> Node:
        src, at = self.src, self.at
        low: int
        high: int | None
        if at < len(src) and src[at] in "*+?":
            bounds: dict[str, tuple[int, int | None]] = {
                "*": (0, None),
                "+": (1, None),
                "?": (0, 1),
            }
            low, high = bounds[src[at]]
            at += 1
        elif at < len(src) and src[at] == "{" and (m := _QUANTIFIER.match(src, at)):
            first, comma, last = m.groups()
            low = int(first or 0)
            high = (int(last) if last else None) if comma else low
            at = m.end()
        else:
            return item
        if at < len(src) and src[at] in "?+":  # lazy or possessive
            at += 1
        self.at = at
        return attrs.evolve(item, low=low, high=high)

    def item(self) -> Node | None:
        src = self.src
        char = src[self.at]
        if char == "(":
            return self.group()
        if char == "[":
            end = self.class_end(self.at)
            atom_source, self.at = src[self.at : end], end
            return self.atom(atom_source)
        if char == "\\":
            return self.escape()
        self.at += 1
        if char in "^$":
            return Node("empty")
        return self.atom("." if char == "." else re.escape(char))

    def class_end(self, start: int) -> int:
        at = start + 1
        if at < len(self.src) and self.src[at] == "^":
            at += 1
        if at < len(self.src) and self.src[at] == "]":
            at += 1
        while at < len(self.src) and self.src[at] != "]":
            at += 2 if self.src[at] == "\\" else 1
        return min(at + 1, len(self.src))

    def escape(self) -> Node | None:
        src, at = self.src, self.at
        kind = src[at + 1] if at + 1 < len(src) else "\\"
        lengths = {"x": 4, "u": 6, "U": 10}
        if kind in "bBAZ":
            self.at += 2
            return Node("empty")
        if kind.isdigit() and kind != "0":  # a back-reference: matches what its group did
            self.at += 2
            while self.at < len(src) and src[self.at].isdigit():
                self.at += 1
            return Node("empty")
        if kind == "N" and "}" in src[at:]:
            end = src.index("}", at) + 1
        else:
            end = at + lengths.get(kind, 2)
        atom_source, self.at = src[at:end], end
        return self.atom(atom_source)

    def group(self) -> Node | None:
        src = self.src
        self.at += 1
        zero_width = False
        if src.startswith("?", self.at):
            rest = src[self.at + 1 :]
            if rest.startswith("#"):
                self.at = src.index(")", self.at) + 1
                return None
            if rest.startswith("P="):
                self.at = src.index(")", self.at) + 1
                return Node("empty")
            if rest.startswith("P<"):
                self.at = src.index(">", self.at) + 1
            elif rest[:1] in "=!" or rest[:2] in ("<=", "<!"):
                zero_width = True
                self.at += 2 if rest[:1] in "=!" else 3
            elif rest[:1] in ":>":
                self.at += 2
            else:  # inline flags: (?aiLmsux) alone, or (?i-s:...) scoping a group
                m = re.compile(r"\?[aiLmsux-]*([:)])").match(src, self.at)
                if m is None:
                    return Node("empty")
                self.at = m.end()
                if m.group(1) == ")":
                    return None
        inner = self.parse()
        if self.at < len(src) and src[self.at] == ")":
            self.at += 1
        return Node("empty") if zero_width else inner


def parse(pattern: re.Pattern[str] | re.Pattern[bytes]) -> tuple[Node, list[Node]]:
    """The pattern's tree and every atom in it (those of lookarounds included)."""
    source = pattern.pattern
    text = source.decode("latin-1") if isinstance(source, bytes) else source
    flags = pattern.flags & ~re.UNICODE if isinstance(source, bytes) else pattern.flags
    parser = _Parser(text, flags if isinstance(source, str) else 0)
    tree = parser.parse()
    return tree, parser.atoms


def walks(node: Node) -> list[str]:
    """A few short strings `node` matches, each quantified piece taken its least number of
    times (once where that is zero, and also not at all)."""
    if node.kind == "empty":
        found = [""]
    elif node.kind == "atom":
        found = list(node.chars[:2])
    elif node.kind == "alt":
        found = list(dict.fromkeys(w for branch in node.items for w in walks(branch)))
    else:
        found = [""]
        for item in node.items:
            options = walks(item)
            found = ["".join(p) for p in itertools.islice(itertools.product(found, options), 64)]
            found = list(dict.fromkeys(found))[:WALKS_MAX]
    repeated = [w * min(max(node.low, 1), 3) for w in found]
    if node.low == 0:
        repeated = [*found, ""] if node.kind != "atom" else ["", *found]
    return list(dict.fromkeys(repeated))[:WALKS_MAX]


def _unbounded(node: Node, inside: bool = False) -> Iterable[str]:
    """Characters of the atoms under an unbounded quantifier."""
    loose = inside or node.high is None or node.high > 3
    if node.kind == "atom" and loose:
        yield from node.chars
    for item in node.items:
        yield from _unbounded(item, loose)


@attrs.frozen
class Family:
    """A line of any length: `prefix`, `unit` repeated, `tail`."""

    prefix: str
    unit: str
    tail: str

    def line(self, n: int) -> str:
        body = max(n - len(self.prefix) - len(self.tail), len(self.unit))
        return self.prefix + self.unit * (body // len(self.unit)) + self.tail


def families(pattern: re.Pattern[str] | re.Pattern[bytes]) -> list[Family]:
    """The adversarial lines for `pattern` (see the module docstring)."""
    tree, atoms = parse(pattern)
    chars = list(dict.fromkeys(c for atom in atoms for c in atom.chars))
    chars += [c for c in " \t\na" if c not in chars]
    loose = list(dict.fromkeys([*_unbounded(tree), " ", "a"]))
    paths = walks(tree)
    prefixes = sorted(
        {w[:i] for w in paths for i in range(1, len(w) + 1)}, key=lambda p: (len(p), p)
    )
    pieces = sorted(
        {w[:i] for w in paths for i in range(2, min(len(w), 4) + 1)}
        | {w for w in paths if 1 < len(w) <= 6},
        key=lambda p: (len(p), p),
    )
    units = chars + [a + b for a in loose for b in loose if a != b] + pieces[:UNITS_MAX]
    found = [Family("", unit, tail) for unit in dict.fromkeys(units) for tail in TAILS]
    found += [
        Family(prefix, char, tail)
        for prefix in prefixes[:PREFIXES_MAX]
        for char in loose
        for tail in TAILS
    ]
    return list(dict.fromkeys(found))


AnyPattern = re.Pattern[str] | re.Pattern[bytes]


def _subject(pattern: AnyPattern, line: str) -> str | bytes:
    return line.encode("utf-8") if isinstance(pattern.pattern, bytes) else line


def cpu(run: Callable[[], object], reps: int = 1) -> float:
    """CPU seconds of this thread that `run()` takes (best of `reps`), with the cyclic
    garbage collector paused: its passes cost what the whole process holds, not what is
    measured."""
    best = math.inf
    collecting = gc.isenabled()
    gc.disable()
    try:
        for _ in range(reps):
            start = time.thread_time_ns()
            run()
            best = min(best, (time.thread_time_ns() - start) / 1e9)
    finally:
        if collecting:
            gc.enable()
    return best


def cost(pattern: AnyPattern, line: str, reps: int = 1) -> float:
    """`cpu` of finding every match of `pattern` in `line` one after the other, as
    `finditer` does (and `findall`, `sub` and `split`)."""
    subject = _subject(pattern, line)
    finditer: Callable[[object], Iterable[object]] = pattern.finditer  # type: ignore[assignment]

    def run() -> None:
        for _match in finditer(subject):
            pass

    return cpu(run, reps)


def linear_growth(run: Callable[[int], object], n: int, floor: float = FLOOR) -> tuple[bool, str]:
    """Whether `run(n)` costs at most `GROWTH_MAX` times `run(n // 4)`, or less than
    `floor` (best of `REPS` each; a linear cost's first try at `n` usually settles it).

    A pair that fails is measured once more, both lengths again, and only a second failure
    counts: a linear pattern that makes a match object per character (`[0-9]{1,5}` on
    `a9a9…`) once measured 8.3× from 16 KiB to 64 KiB on an idle machine (allocator and
    cache effects), while a quadratic one grows about 16× every time."""
    how = ""
    for _attempt in range(2):
        small = cpu(lambda: run(n // 4), REPS)
        large = math.inf
        for _ in range(REPS):
            large = min(large, cpu(lambda: run(n)))
            if large < floor or large <= GROWTH_MAX * small:
                break
        how = f"{n // 4}: {small * 1000:.2f} ms, {n}: {large * 1000:.2f} ms CPU"
        if large < floor or large <= GROWTH_MAX * small:
            return True, how
    return False, how


def grows_linearly(pattern: AnyPattern, family: Family, n: int) -> tuple[bool, str]:
    """`linear_growth` of `pattern` on `family`'s lines of n/4 and n characters."""
    return linear_growth(lambda size: cost(pattern, family.line(size)), n)


def superlinear(pattern: AnyPattern, most: int = 3) -> list[str]:
    """What `pattern` does on its adversarial lines that is not linear (empty: nothing;
    the search stops at `most` such lines)."""
    faults: list[str] = []
    screened: list[tuple[float, Family]] = []
    for family in families(pattern):
        spent = 0.0
        for n in SCREENS:
            spent = cost(pattern, family.line(n))
            if spent > SUSPECT:
                ok, how = grows_linearly(pattern, family, n)
                if not ok:
                    faults.append(f"{family}: {how}")
                    break
        else:
            screened.append((spent, family))
        if len(faults) >= most:
            return faults
    screened.sort(key=lambda item: -item[0])
    for _spent, family in screened[:LONG_LINES]:
        ok, how = grows_linearly(pattern, family, LONG)
        if not ok or cost(pattern, family.line(LONG)) > LONG_MAX:
            faults.append(f"{family}: {how}")
    return faults
