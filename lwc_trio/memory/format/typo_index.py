"""The typo index: every word of a store by (length, word), written by the CLI (SPEC §4 "Typos").

Per-term correction (`fuzzy.near_words`) compares an unknown query word with the words of a
few lengths only, and for one edit only with the words that share its first character (plus
exact lookups for an edit at the start). `search_fuzzy`'s key is (length, word), so each such
group is one range of the B-tree: a query reads the groups it needs, never the whole
vocabulary, and `WordIndex` keeps what was read for the store revision it was read at.

The table holds every word and term (3 characters or more) written since the index was last
rebuilt, a superset of the vocabulary: a candidate found there is looked up in `search_terms`
and `search_words` (its stem, exactly as the whole-vocabulary read gives it), so terms whose
documents are gone are never proposed.

Bounds (SPEC §4: the cost is bounded on any store size, and shared):

* a group is read `READ_CHUNK` words at a time, by one request at a time; a request that
  stops (its deadline) leaves what it read for the next one, which goes on from there, so a
  group costs one read per store revision however many requests time out on it;
* a group of more than `GROUP_MAX` words is not kept at all: it is left out of corrections
  (no real vocabulary has one), so an odd or hostile store costs one bounded read;
* what one store search's typo work compares is bounded by a `TypoBudget`
  (`TYPO_BUDGET` words, see `fuzzy`): past it the query is searched with what was corrected.
"""

from __future__ import annotations

import bisect
import contextlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import (
    Callable,
    Collection,
    Hashable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

from lwc_trio.exceptions import MemoryCancelled
from lwc_trio.memory.format import segments
from lwc_trio.memory.format.schema import placeholders

__all__ = [
    "GROUP_MAX",
    "MAX_INITIALS",
    "MIN_WORD",
    "TYPO_BUDGET",
    "WORDS_BUDGET",
    "BoundIndex",
    "TypoBudget",
    "WordIndex",
    "record_words",
    "request",
]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_Found = TypeVar("_Found", str | None, bool)
"""What a lookup remembers of a word: its stem (None: not in the vocabulary), or whether a
title or path holds it."""

MIN_WORD = 3
"""The shortest word kept (`fuzzy.MIN_FUZZY_TERM` − 1: the shortest one edit can reach)."""
READ_CHUNK = 8192
"""Rows fetched by one statement (a few milliseconds of GIL each); a group is read in such
steps, each going on after the last word read, so a read a request gave up is resumed."""
GROUP_MAX = 262_144
"""Words one group (a length, or a length and first character) may hold to be used. The
largest group of the 1,000,000-page benchmark store (500,000 distinct words) holds ~112,000;
a group past this (a hostile store, or a vocabulary of millions of words of one length) is
read only this far, once per store revision, and left out of corrections."""
TYPO_BUDGET = 4_000_000
"""Words one store search's typo work compares at most (each word of every group a
correction or the title fill-up goes through, and each candidate it looks up; about 30 ms
on the benchmark machine). A query with many unknown words on a large store stops
correcting there and is searched with the corrections made so far; agents' queries stay
far below it (three words of the 1,000,000-page store's title fill-up: ~1,500,000)."""
MAX_INITIALS = 1024
"""First characters enumerated at one length before a correction scans the whole length
instead (a store of many scripts, or a hostile one, cannot make the lookups unbounded)."""
WORDS_BUDGET = 2_000_000
"""Words every `WordIndex` together keeps (~150 MB); past it, the least recently used groups
are dropped and read again on need."""
LOOKUPS_MAX = 200_000
"""Stems (or title facts) one `WordIndex` remembers; past it, it starts over."""
WAIT_STEP_S = 0.01
"""How often a request waiting for another's group read checks its own deadline."""
_LOOKUP = 500
"""Parameters in one `IN (...)`."""


class TypoBudget:
    """What one store search's typo work may still compare (`TYPO_BUDGET` words).

    Charged the same whether the work was done now or remembered from an earlier request
    (`fuzzy` keeps each answer with what it cost), so a query cut short is cut at the same
    word every time: the answer stays deterministic."""

    def __init__(self, words: int | None = None) -> None:
        self.left = TYPO_BUDGET if words is None else words

    @property
    def spent(self) -> bool:
        """Nothing left: no more words are corrected or compared."""
        return self.left <= 0

    def charge(self, words: int) -> None:
        """Count `words` compared."""
        self.left -= words


@attrs.define(eq=False)
class _Partial:
    """A group read so far: its rows (any type: the caller keeps the text ones) and where
    the next step goes on."""

    rows: list[object] = attrs.field(factory=list)
    done: bool = False


def record_words(conn: sqlite3.Connection, words: Mapping[str, str]) -> None:
    """Add the words and stems of one write batch (`IndexBuffer.words`) to `search_fuzzy`."""
    seen = set(words)
    seen.update(words.values())
    ordered = sorted(seen)
    ordered.sort(key=len)  # stable: by (length, word), the key's order
    new = ordered[bisect.bisect_left(ordered, MIN_WORD, key=len) :]
    if new:
        conn.executemany(
            "INSERT OR IGNORE INTO search_fuzzy (length, word) VALUES (?, ?)",
            zip(map(len, new), new, strict=True),
        )


def _after(initial: str) -> str | None:
    """The smallest string above every string starting with `initial` (None: there is none)."""
    code = ord(initial) + 1
    if 0xD800 <= code <= 0xDFFF:
        code = 0xE000
    return None if code > 0x10FFFF else chr(code)


class WordIndex:
    """What one store revision's `search_fuzzy` gave so far, and the stems looked up.

    Shared by the requests on that revision (each reads through its own connection, inside
    its own read transaction: `bind`). A group is read by one request at a time: the others
    that need it meanwhile wait for it (while their own request lasts) instead of reading it
    again, and go on with the read themselves if that request stopped (`_Partial`). What
    every index keeps is bounded together (`WORDS_BUDGET`), least recently used groups first
    out. The same goes for what `fuzzy` computes once per revision (`once`): each group's
    signatures, each word's corrections."""

    def __init__(self) -> None:
        self.shards: dict[tuple[int, str], tuple[str, ...]] = {}
        self.buckets: dict[int, tuple[str, ...]] = {}
        self.signatures: dict[Hashable, NDArray[np.uint32]] = {}
        """A group's key -> its words' character-set signatures (`fuzzy._narrowed`)."""
        self.too_large: set[Hashable] = set()
        """Keys of the groups past `GROUP_MAX` (kept empty)."""
        self.initials: dict[int, tuple[str, ...] | None] = {}
        self.stems: dict[str, str | None] = {}
        self.titled: dict[str, bool] = {}
        """stem -> whether some document's title or path holds it."""
        self.memo: dict[tuple[str, str, int], tuple[int, list[Any]]] = {}
        """`fuzzy`'s answers for a word, with what they cost (`TypoBudget`)."""
        self.read = 0
        """Words read from the store so far (tests: a correction reads a few groups only)."""
        self.reads = 0
        """Group reads started or resumed (tests: concurrent requests read a group once)."""
        self._lock = threading.Lock()
        self._pending: dict[Hashable, threading.Event] = {}
        self._partial: dict[Hashable, _Partial] = {}

    def bind(self, conn: sqlite3.Connection) -> BoundIndex:
        state = getattr(_REQUEST, "state", None)
        cancelled, budget = (None, None) if state is None else state
        return BoundIndex(self, conn, cancelled, budget)

    def once(
        self,
        table: dict[K, V],
        key: K,
        make: Callable[[], V],
        cancelled: threading.Event | None,
        limit: int | None = None,
    ) -> V:
        """`table[key]`, made by `make()` once whatever the number of requests needing it:
        a request that finds it being made waits for it (until `cancelled`: then
        `MemoryCancelled`), and makes it itself if that failed. With `limit`, a table that
        holds that many values starts over."""
        tag = (id(table), key)
        while True:
            with self._lock:
                if key in table:
                    _KEPT.touch((id(self), *tag))
                    return table[key]
                pending = self._pending.get(tag)
                mine = pending is None
                if pending is None:
                    pending = self._pending[tag] = threading.Event()
            if not mine:
                while not pending.wait(WAIT_STEP_S):
                    if cancelled is not None and cancelled.is_set():
                        raise MemoryCancelled()
                continue  # made by the other request (or it failed: try here)
            try:
                value = make()
                with self._lock:
                    if limit is not None and len(table) >= limit:
                        table.clear()
                    table[key] = value
                return value
            finally:
                with self._lock:
                    del self._pending[tag]
                pending.set()

    def _group(
        self,
        table: dict[K, tuple[str, ...]],
        key: K,
        step: Callable[[object], list[object]],
        cancelled: threading.Event | None,
    ) -> tuple[str, ...]:
        """`table[key]`: the group's words, read by `step(after)` (the next `READ_CHUNK`
        rows after the row `after`, None: from the start) once per revision, going on from
        where a request that stopped left it; empty past `GROUP_MAX` rows."""
        tag = (id(self), id(table), key)

        def read() -> tuple[str, ...]:
            with self._lock:
                self.reads += 1
                partial = self._partial.pop(key, None) or _Partial()
            try:
                while not partial.done and len(partial.rows) <= GROUP_MAX:
                    if cancelled is not None and cancelled.is_set():
                        raise MemoryCancelled()
                    rows = step(partial.rows[-1] if partial.rows else None)
                    partial.rows.extend(rows)
                    partial.done = len(rows) < READ_CHUNK
                    with self._lock:
                        self.read += len(rows)
            except BaseException:
                # What was read stays for the next request (and counts against the budget).
                with self._lock:
                    self._partial[key] = partial
                _KEPT.keep(tag, len(partial.rows), lambda: self._drop(table, key))
                raise
            if not partial.done or len(partial.rows) > GROUP_MAX:
                self.too_large.add(key)
                found: tuple[str, ...] = ()
            else:
                found = tuple(row for row in partial.rows if isinstance(row, str))
            _KEPT.keep(tag, len(found), lambda: self._drop(table, key))
            return found

        return self.once(table, key, read, cancelled)

    def _derived(self, key: tuple[int, str], bucket: tuple[str, ...]) -> tuple[str, ...]:
        """The shard `key` taken from its length's whole group."""
        found = tuple(w for w in bucket if w[:1] == key[1])
        table = self.shards
        with self._lock:
            self.reads += 1
        _KEPT.keep((id(self), id(table), key), len(found), lambda: self._drop(table, key))
        return found

    def _drop(self, table: dict[K, tuple[str, ...]], key: K) -> None:
        with self._lock:
            table.pop(key, None)
            self._partial.pop(key, None)
            self.signatures.pop(key, None)

    def _remember(self, table: dict[str, _Found], found: Mapping[str, _Found]) -> None:
        with self._lock:
            if len(table) + len(found) > LOOKUPS_MAX:
                table.clear()
            table.update(found)


class _Kept:
    """Every `WordIndex`'s groups by last use, within `WORDS_BUDGET` words together."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.words = 0
        self._groups: OrderedDict[Hashable, tuple[int, Callable[[], object]]] = OrderedDict()
        self._lock = threading.Lock()

    def touch(self, key: Hashable) -> None:
        with self._lock:
            if key in self._groups:
                self._groups.move_to_end(key)

    def keep(self, key: Hashable, words: int, drop: Callable[[], object]) -> None:
        """Count a group just read (or read in part); drop the least recently used others
        past the budget (the newest stays, whatever it weighs: its request needs it)."""
        dropped: list[Callable[[], object]] = []
        with self._lock:
            old = self._groups.pop(key, None)
            self.words += words - (0 if old is None else old[0])
            self._groups[key] = (words, drop)
            while self.words > self.budget and len(self._groups) > 1:
                _key, (weight, drop_one) = self._groups.popitem(last=False)
                self.words -= weight
                dropped.append(drop_one)
        for drop_one in dropped:  # outside this lock: each takes its index's own
            drop_one()


_KEPT = _Kept(WORDS_BUDGET)
_REQUEST = threading.local()


@contextlib.contextmanager
def request(cancelled: threading.Event | None) -> Iterator[TypoBudget]:
    """One store search's typo work: within this block, this thread's `bind` calls stop
    waiting for another request's group read once `cancelled` is set (`MemoryCancelled`),
    and share one `TypoBudget` (yielded)."""
    previous = getattr(_REQUEST, "state", None)
    budget = TypoBudget()
    _REQUEST.state = (cancelled, budget)
    try:
        yield budget
    finally:
        _REQUEST.state = previous


class BoundIndex:
    """A `WordIndex` read through one connection (the caller's read transaction), with the
    request's cancellation and typo budget (None: unbounded)."""

    def __init__(
        self,
        index: WordIndex,
        conn: sqlite3.Connection,
        cancelled: threading.Event | None = None,
        budget: TypoBudget | None = None,
    ) -> None:
        self.index = index
        self.conn = conn
        self.memo = index.memo
        self.signatures = index.signatures
        self.cancelled = cancelled
        self.budget = budget

    def once(self, table: dict[K, V], key: K, make: Callable[[], V], limit: int | None = None) -> V:
        """`WordIndex.once` for this request."""
        return self.index.once(table, key, make, self.cancelled, limit)

    def weight(self, key: Hashable, group: Sequence[str]) -> int:
        """What using the group `key` (its words: `group`) costs a `TypoBudget`: its words,
        or `GROUP_MAX` for one past it (left out, but read that far)."""
        return GROUP_MAX if key in self.index.too_large else len(group)

    def _words(self, sql: str, args: tuple[object, ...]) -> list[object]:
        return [row[0] for row in self.conn.execute(sql, args)]

    def shard(self, length: int, initial: str) -> tuple[str, ...]:
        """The words of `length` characters starting with `initial`."""
        key = (length, initial)
        bucket = self.index.buckets.get(length)
        if bucket is not None and length not in self.index.too_large:
            # Its length was read whole: the shard is taken from there, once.
            return self.once(self.index.shards, key, lambda: self.index._derived(key, bucket))
        upper = _after(initial)

        def step(after: object) -> list[object]:
            low, op = (initial, ">=") if after is None else (after, ">")
            return self._words(
                f"SELECT word FROM search_fuzzy WHERE length = ? AND word {op} ?"
                + ("" if upper is None else " AND word < ?")
                + " ORDER BY word LIMIT ?",
                (length, low, *(() if upper is None else (upper,)), READ_CHUNK),
            )

        return self.index._group(self.index.shards, key, step, self.cancelled)

    def bucket(self, length: int) -> tuple[str, ...]:
        """Every word of `length` characters."""

        def step(after: object) -> list[object]:
            if after is None:
                sql = "SELECT word FROM search_fuzzy WHERE length = ? ORDER BY word LIMIT ?"
                return self._words(sql, (length, READ_CHUNK))
            sql = (
                "SELECT word FROM search_fuzzy WHERE length = ? AND word > ? ORDER BY word LIMIT ?"
            )
            return self._words(sql, (length, after, READ_CHUNK))

        return self.index._group(self.index.buckets, length, step, self.cancelled)

    def initials_at(self, length: int) -> tuple[str, ...] | None:
        """The first characters of the words of `length` characters, by one index seek each;
        None when there are more than `MAX_INITIALS`."""
        if length in self.index.initials:
            return self.index.initials[length]
        found: list[str] = []
        low: str | None = ""
        many = False
        while low is not None:
            row = self.conn.execute(
                "SELECT word FROM search_fuzzy WHERE length = ? AND word >= ? "
                "ORDER BY word LIMIT 1",
                (length, low),
            ).fetchone()
            if row is None or not isinstance(row[0], str) or not row[0]:
                break  # blobs sort after every text: nothing more to find
            if len(found) >= MAX_INITIALS:
                many = True
                break
            found.append(row[0][0])
            low = _after(row[0][0])
        result = None if many else tuple(found)
        self.index.initials[length] = result
        return result

    def _looked_up(
        self,
        known: dict[str, _Found],
        keys: Collection[str],
        look: Callable[[list[str]], dict[str, _Found]],
    ) -> dict[str, _Found]:
        """`keys` -> what `look` finds for them, `_LOOKUP` at a time, each key looked up
        once for this revision (`known` remembers it)."""
        got = {k: known[k] for k in keys if k in known}
        wanted = sorted({k for k in keys if k not in got})
        for start in range(0, len(wanted), _LOOKUP):
            found = look(wanted[start : start + _LOOKUP])
            self.index._remember(known, found)
            got.update(found)
        return got

    def stems_of(self, words: Iterable[str]) -> dict[str, str]:
        """The stem of each of `words` in the vocabulary (a term is its own stem, another word
        has the stem `search_words` gives it); words not in the vocabulary are left out."""
        words = [w for w in words if len(w) >= MIN_WORD]
        got = self._looked_up(self.index.stems, words, self._stems)
        return {w: stem for w in words if (stem := got.get(w)) is not None}

    def _stems(self, chunk: list[str]) -> dict[str, str | None]:
        marks = placeholders(len(chunk))
        found: dict[str, str | None] = dict.fromkeys(chunk)
        for (term,) in self.conn.execute(
            f"SELECT term FROM search_terms WHERE term IN ({marks})", chunk
        ):
            if isinstance(term, str) and term in found:
                found[term] = term
        rest = [w for w in chunk if found[w] is None]
        if rest:
            rest_marks = placeholders(len(rest))
            for word, term in self.conn.execute(
                f"SELECT word, term FROM search_words WHERE word IN ({rest_marks})", rest
            ):
                if isinstance(word, str) and isinstance(term, str) and word in found:
                    found[word] = term
        return found

    def titled(self, stems: Collection[str]) -> set[str]:
        """Those of `stems` that some document's title or path holds (`search_segments.heads`
        not empty), each looked up once for this revision."""
        got = self._looked_up(self.index.titled, stems, self._titled)
        return {s for s, yes in got.items() if yes}

    def _titled(self, chunk: list[str]) -> dict[str, bool]:
        found = dict.fromkeys(chunk, False)
        for term in segments.titled_among(self.conn, chunk):
            if term in found:
                found[term] = True
        return found
