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
"""

from __future__ import annotations

import bisect
import contextlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from lwc_trio.exceptions import MemoryCancelled
from lwc_trio.memory.format.schema import placeholders

__all__ = [
    "MAX_INITIALS",
    "MIN_WORD",
    "WORDS_BUDGET",
    "BoundIndex",
    "WordIndex",
    "record_words",
    "request",
]

MIN_WORD = 3
"""The shortest word kept (`fuzzy.MIN_FUZZY_TERM` − 1: the shortest one edit can reach)."""
READ_CHUNK = 8192
"""Rows fetched at a time (a few milliseconds of GIL each)."""
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
    again, and read it themselves only if that read failed. What every index keeps is
    bounded together (`WORDS_BUDGET`), least recently used groups first out."""

    def __init__(self) -> None:
        self.shards: dict[tuple[int, str], tuple[str, ...]] = {}
        self.buckets: dict[int, tuple[str, ...]] = {}
        self.signatures: dict[int, Any] = {}
        self.shard_signatures: dict[Any, Any] = {}
        self.initials: dict[int, tuple[str, ...] | None] = {}
        self.stems: dict[str, str | None] = {}
        self.titled: dict[str, bool] = {}
        """stem -> whether some document's title or path holds it."""
        self.memo: dict[tuple[str, str, int], list[Any]] = {}
        self.read = 0
        """Words read from the store so far (tests: a correction reads a few groups only)."""
        self.reads = 0
        """Group reads started (tests: concurrent requests read a group once)."""
        self._lock = threading.Lock()
        self._reading: dict[Hashable, threading.Event] = {}

    def bind(self, conn: sqlite3.Connection) -> BoundIndex:
        return BoundIndex(self, conn, getattr(_REQUEST, "cancelled", None))

    def _kept(self, words: int) -> None:
        with self._lock:
            self.read += words

    def _group(
        self,
        table: dict[Any, tuple[str, ...]],
        key: Any,
        read: Callable[[], tuple[str, ...]],
        cancelled: threading.Event | None,
    ) -> tuple[str, ...]:
        """`table[key]`, read by `read()` once whatever the number of requests needing it."""
        while True:
            with self._lock:
                found = table.get(key)
                if found is not None:
                    _KEPT.touch((id(self), id(table), key))
                    return found
                pending = self._reading.get((id(table), key))
                mine = pending is None
                if pending is None:
                    pending = self._reading[(id(table), key)] = threading.Event()
                    self.reads += 1
            if not mine:
                while not pending.wait(WAIT_STEP_S):
                    if cancelled is not None and cancelled.is_set():
                        raise MemoryCancelled()
                continue  # read by the other request (or it failed: try here)
            try:
                found = read()
                with self._lock:
                    table[key] = found
                _KEPT.keep((id(self), id(table), key), len(found), lambda: self._drop(table, key))
                return found
            finally:
                with self._lock:
                    del self._reading[(id(table), key)]
                pending.set()

    def _drop(self, table: dict[Any, tuple[str, ...]], key: Any) -> None:
        table.pop(key, None)
        if table is self.buckets:
            self.signatures.pop(key, None)
        else:
            self.shard_signatures.pop(key, None)

    def _remember(self, table: dict[str, Any], found: Mapping[str, Any]) -> None:
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
        """Count a group just read; drop the least recently used others past the budget (the
        newest stays, whatever it weighs: its request needs it)."""
        with self._lock:
            old = self._groups.pop(key, None)
            self.words += words - (0 if old is None else old[0])
            self._groups[key] = (words, drop)
            while self.words > self.budget and len(self._groups) > 1:
                _key, (weight, dropped) = self._groups.popitem(last=False)
                self.words -= weight
                dropped()


_KEPT = _Kept(WORDS_BUDGET)
_REQUEST = threading.local()


@contextlib.contextmanager
def request(cancelled: threading.Event | None) -> Iterator[None]:
    """Within this block, this thread's `bind` calls stop waiting for another request's
    group read once `cancelled` is set (`MemoryCancelled`)."""
    previous = getattr(_REQUEST, "cancelled", None)
    _REQUEST.cancelled = cancelled
    try:
        yield
    finally:
        _REQUEST.cancelled = previous


class BoundIndex:
    """A `WordIndex` read through one connection (the caller's read transaction)."""

    def __init__(
        self,
        index: WordIndex,
        conn: sqlite3.Connection,
        cancelled: threading.Event | None = None,
    ) -> None:
        self.index = index
        self.conn = conn
        self.memo = index.memo
        self.shard_signatures = index.shard_signatures
        self.cancelled = cancelled

    def _words(self, sql: str, args: Sequence[object]) -> tuple[str, ...]:
        cursor = self.conn.execute(sql, args)
        found: list[str] = []
        while rows := cursor.fetchmany(READ_CHUNK):
            found.extend(row[0] for row in rows if isinstance(row[0], str))
        self.index._kept(len(found))
        return tuple(found)

    def shard(self, length: int, initial: str) -> tuple[str, ...]:
        """The words of `length` characters starting with `initial`."""

        def read() -> tuple[str, ...]:
            bucket = self.index.buckets.get(length)
            if bucket is not None:
                return tuple(w for w in bucket if w[:1] == initial)
            upper = _after(initial)
            return self._words(
                "SELECT word FROM search_fuzzy WHERE length = ? AND word >= ?"
                + ("" if upper is None else " AND word < ?")
                + " ORDER BY word",
                (length, initial) if upper is None else (length, initial, upper),
            )

        return self.index._group(self.index.shards, (length, initial), read, self.cancelled)

    def bucket(self, length: int) -> tuple[str, ...]:
        """Every word of `length` characters."""
        return self.index._group(
            self.index.buckets,
            length,
            lambda: self._words(
                "SELECT word FROM search_fuzzy WHERE length = ? ORDER BY word", (length,)
            ),
            self.cancelled,
        )

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
        known: dict[str, Any],
        keys: Collection[str],
        look: Callable[[list[str]], dict[str, Any]],
    ) -> dict[str, Any]:
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

    def _stems(self, chunk: list[str]) -> dict[str, Any]:
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

    def _titled(self, chunk: list[str]) -> dict[str, Any]:
        marks = placeholders(len(chunk))
        found = dict.fromkeys(chunk, False)
        for (term,) in self.conn.execute(
            f"SELECT DISTINCT term FROM search_segments WHERE term IN ({marks}) "
            "AND length(heads) > 0",
            chunk,
        ):
            if isinstance(term, str) and term in found:
                found[term] = True
        return found
