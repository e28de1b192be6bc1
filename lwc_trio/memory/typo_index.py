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

import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "MAX_INITIALS",
    "MIN_WORD",
    "WORDS_BUDGET",
    "BoundIndex",
    "WordIndex",
    "record_words",
]

MIN_WORD = 3
"""The shortest word kept (`fuzzy.MIN_FUZZY_TERM` − 1: the shortest one edit can reach)."""
READ_CHUNK = 8192
"""Rows fetched at a time (a few milliseconds of GIL each)."""
MAX_INITIALS = 1024
"""First characters enumerated at one length before a correction scans the whole length
instead (a store of many scripts, or a hostile one, cannot make the lookups unbounded)."""
WORDS_BUDGET = 2_000_000
"""Words one `WordIndex` keeps; past it, what it read is dropped and read again on need."""
_LOOKUP = 500
"""Parameters in one `IN (...)`."""


def record_words(conn: sqlite3.Connection, words: Mapping[str, str]) -> None:
    """Add the words and stems of one write batch (`IndexBuffer.words`) to `search_fuzzy`."""
    new = sorted({w for pair in words.items() for w in pair if len(w) >= MIN_WORD})
    if new:
        new.sort(key=len)  # stable: by (length, word), the key's order
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
    its own read transaction: `bind`); two threads may read the same group at once, both
    keep the same value."""

    def __init__(self) -> None:
        self.shards: dict[tuple[int, str], tuple[str, ...]] = {}
        self.buckets: dict[int, tuple[str, ...]] = {}
        self.signatures: dict[int, Any] = {}
        self.initials: dict[int, tuple[str, ...] | None] = {}
        self.stems: dict[str, str | None] = {}
        self.memo: dict[tuple[str, str, int], list[Any]] = {}
        self.read = 0
        """Words read from the store so far (tests: a correction reads a few groups only)."""
        self._lock = threading.Lock()

    def bind(self, conn: sqlite3.Connection) -> BoundIndex:
        return BoundIndex(self, conn)

    def _kept(self, words: int) -> None:
        with self._lock:
            self.read += words
            if self.read > WORDS_BUDGET:
                self.shards.clear()
                self.buckets.clear()
                self.signatures.clear()
                self.stems.clear()
                self.read = words


class BoundIndex:
    """A `WordIndex` read through one connection (the caller's read transaction)."""

    def __init__(self, index: WordIndex, conn: sqlite3.Connection) -> None:
        self.index = index
        self.conn = conn
        self.memo = index.memo

    def _words(self, sql: str, args: Sequence[object]) -> tuple[str, ...]:
        cursor = self.conn.execute(sql, args)
        found: list[str] = []
        while rows := cursor.fetchmany(READ_CHUNK):
            found.extend(row[0] for row in rows if isinstance(row[0], str))
        self.index._kept(len(found))
        return tuple(found)

    def shard(self, length: int, initial: str) -> tuple[str, ...]:
        """The words of `length` characters starting with `initial`."""
        key = (length, initial)
        found = self.index.shards.get(key)
        if found is None:
            bucket = self.index.buckets.get(length)
            if bucket is not None:
                found = tuple(w for w in bucket if w[:1] == initial)
            else:
                upper = _after(initial)
                found = self._words(
                    "SELECT word FROM search_fuzzy WHERE length = ? AND word >= ?"
                    + ("" if upper is None else " AND word < ?")
                    + " ORDER BY word",
                    (length, initial) if upper is None else (length, initial, upper),
                )
            self.index.shards[key] = found
        return found

    def bucket(self, length: int) -> tuple[str, ...]:
        """Every word of `length` characters."""
        found = self.index.buckets.get(length)
        if found is None:
            found = self._words(
                "SELECT word FROM search_fuzzy WHERE length = ? ORDER BY word", (length,)
            )
            self.index.buckets[length] = found
        return found

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

    def stems_of(self, words: Iterable[str]) -> dict[str, str]:
        """The stem of each of `words` in the vocabulary (a term is its own stem, another word
        has the stem `search_words` gives it); words not in the vocabulary are left out."""
        known = self.index.stems
        wanted = sorted({w for w in words if w not in known})
        for start in range(0, len(wanted), _LOOKUP):
            chunk = wanted[start : start + _LOOKUP]
            marks = ",".join("?" * len(chunk))
            found: dict[str, str | None] = dict.fromkeys(chunk)
            for (term,) in self.conn.execute(
                f"SELECT term FROM search_terms WHERE term IN ({marks})", chunk
            ):
                if isinstance(term, str) and term in found:
                    found[term] = term
            rest = [w for w in chunk if found[w] is None]
            if rest:
                rest_marks = ",".join("?" * len(rest))
                for word, term in self.conn.execute(
                    f"SELECT word, term FROM search_words WHERE word IN ({rest_marks})", rest
                ):
                    if isinstance(word, str) and isinstance(term, str) and word in found:
                        found[word] = term
            known.update(found)
        return {w: stem for w in words if len(w) >= MIN_WORD and (stem := known.get(w)) is not None}
