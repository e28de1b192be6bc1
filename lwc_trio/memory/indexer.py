"""The search index's write side: what the CLI stores per document (SPEC §4 "Search").

Everything a query would otherwise redo per candidate is worked out here, once per write: the
analyzed title and path (whole-query pull-up), the generic flag (push-down), per-field term
counts and document length (BM25F), and where each term first occurs in the snippet text.
Runs inside the writer's transaction; the reader side is `search.py`.
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable
from itertools import accumulate, repeat
from pathlib import PurePosixPath

from lwc_trio.exceptions import StoreError
from lwc_trio.memory.tokenize import (
    STOP_WORDS,
    has_cjk,
    index_terms,
    index_words,
    stem_words,
    token_spans,
)
from lwc_trio.memory.typo_index import record_words

__all__ = [
    "FIELD_WEIGHTS",
    "GENERIC_TERMS",
    "MAX_SEGMENTS",
    "POSTING_FIELDS",
    "SNIPPET_SCAN",
    "IndexBuffer",
    "ascii_words",
    "index_doc",
    "is_generic",
    "pack",
    "reindex_all",
    "snippet_text",
    "unindex_doc",
    "unpack",
]

FIELD_WEIGHTS = (4, 3, 2, 1)
"""Title, path, summary, body: each occurrence's weight in a posting's count (BM25F).
Part of the format: changing them needs a format_version bump (tuned on Cranfield)."""

SNIPPET_SCAN = 20_000
"""Characters of a document's snippet text searched for the first match (a 64 MiB Source is
never read whole for a query; a match further in gives a snippet from the start)."""

# A document named or titled like this is a table of contents: pushed down unless asked for.
_GENERIC_NAMES = ("index", "overview", "readme", "toc", "contents", "table of contents")
_GENERIC_FORMS = frozenset(tuple(index_terms(name)) for name in _GENERIC_NAMES)
GENERIC_TERMS = frozenset(index_terms(" ".join(_GENERIC_NAMES[:5])))
"""Query terms that ask for generic pages (then they are not pushed down)."""


def is_generic(name: str, title_terms: list[str], name_terms: list[str] | None = None) -> bool:
    """True when the document's name (slug, file stem) or title is a generic one;
    `name_terms` are `index_terms(name)` when the caller has them."""
    named = index_terms(name) if name_terms is None else name_terms
    return tuple(named) in _GENERIC_FORMS or tuple(title_terms) in _GENERIC_FORMS


def _query_form(text: str, terms: list[str]) -> list[str]:
    """`text`'s terms as a query analyzes them, given its index `terms`."""
    if has_cjk(text):
        return [term for term, _w, _s in token_spans(text, query=True)]
    return terms


def snippet_text(body: str, summary: str | None) -> str:
    """The text a Page's snippet is cut from: its body head, or the summary when blank."""
    head = body[:SNIPPET_SCAN]
    return head if head.strip() else (summary or "")


MAX_SEGMENTS = 8
"""A term's segment rows (one per write batch) before a write merges them into one: a query
reads at most this many rows per term, and merging drops the postings of dead documents."""

POSTING_FIELDS = 4
"""int32s per posting in `search_segments.postings`: doc id, weighted count, length, first."""

MAX_DOC_ID = 2**31 - 1
_LITTLE = sys.byteorder == "little"


def pack(values: Iterable[int]) -> bytes:
    """int32s, little-endian (the store is the same file on every machine)."""
    packed = values if isinstance(values, array) else _ints(values)
    if not _LITTLE:
        packed = array("i", packed)
        packed.byteswap()
    return packed.tobytes()


def _ints(values: Iterable[int]) -> array[int]:
    packed = array("i")
    packed.fromlist(values if isinstance(values, list) else list(values))
    return packed


def unpack(blob: bytes) -> array[int]:
    """The int32s of `pack`; a length that is not a multiple of 4 is a damaged index."""
    if len(blob) % 4:
        raise sqlite3.DatabaseError("the search index holds invalid postings")
    values = array("i")
    values.frombytes(blob)
    if not _LITTLE:
        values.byteswap()
    return values


def _new_ints() -> array[int]:
    return array("i")


class IndexBuffer:
    """Postings, frequencies, vocabulary words and statistics of one write transaction.

    They are collected here and written once per transaction (`flush`), not once per
    document: a 5,000-page import writes one segment row per term instead of one row per term
    and page, and updates each term's frequency once. A document's postings count towards
    its terms' frequencies at the flush (`df` holds what documents taken out subtract).
    """

    def __init__(self) -> None:
        self.df: Counter[str] = Counter()
        self.words: dict[str, str] = {}
        self.postings: defaultdict[str, array[int]] = defaultdict(_new_ints)
        self.heads: defaultdict[str, list[int]] = defaultdict(list)
        self.dead: set[int] = set()
        """Documents of this buffer (ids ≥ `first_doc`) taken out again before the flush."""
        self.first_doc = 0
        self.docs = 0
        self.length = 0

    def _reset(self) -> None:
        self.df, self.words, self.docs, self.length = Counter(), {}, 0, 0
        self.postings, self.heads = defaultdict(_new_ints), defaultdict(list)
        self.dead, self.first_doc = set(), 0

    def flush(self, conn: sqlite3.Connection) -> None:
        """Write what was collected (inside the same transaction) and start over."""
        postings: dict[str, array[int]] = self.postings
        heads: dict[str, list[int]] = self.heads
        dead = self.dead
        df = self.df
        for term, values in postings.items():  # each posting: one more document for its term
            df[term] += len(values) // POSTING_FIELDS
        if dead:
            # Documents written and replaced in the same transaction: drop them now.
            postings = {term: _drop_dead(values, dead) for term, values in postings.items()}
            postings = {term: values for term, values in postings.items() if values}
            heads = {term: [d for d in ids if d not in dead] for term, ids in heads.items()}
        seg = self.first_doc
        if postings:
            nothing = b""
            conn.executemany(
                "INSERT INTO search_segments (term, seg, postings, heads) VALUES (?, ?, ?, ?)",
                [
                    (term, seg, pack(values), pack(heads[term]) if term in heads else nothing)
                    for term, values in sorted(postings.items())
                ],
            )
        added = postings
        changes = sorted(term for term in {*df, *added} if df.get(term, 0) or term in added)
        if changes:
            conn.executemany(
                "INSERT INTO search_terms (term, df, segs) VALUES (?, ?, ?) ON CONFLICT (term) "
                "DO UPDATE SET df = df + excluded.df, segs = segs + excluded.segs",
                [(term, df.get(term, 0), 1 if term in added else 0) for term in changes],
            )
            gone = [(term,) for term in changes if df.get(term, 0) < 0]
            if gone:
                conn.executemany("DELETE FROM search_terms WHERE term = ? AND df <= 0", gone)
                conn.executemany(
                    "DELETE FROM search_segments WHERE term = ? "
                    "AND NOT EXISTS (SELECT 1 FROM search_terms WHERE term = ?)",
                    [(term, term) for (term,) in gone],
                )
            _merge_segments(conn, [term for term in changes if term in added])
        record_words(conn, self.words)
        pairs = sorted((word, term) for word, term in self.words.items() if word != term)
        if pairs:
            conn.executemany("INSERT OR IGNORE INTO search_words (word, term) VALUES (?, ?)", pairs)
        if self.docs or self.length:
            conn.executemany(
                "INSERT INTO search_stats (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = value + excluded.value",
                [("docs", self.docs), ("length", self.length)],
            )
        self._reset()


def _drop_dead(values: array[int], dead: set[int]) -> array[int]:
    kept = array("i")
    for i in range(0, len(values), POSTING_FIELDS):
        if values[i] not in dead:
            kept.extend(values[i : i + POSTING_FIELDS])
    return kept


def _merge_segments(conn: sqlite3.Connection, terms: list[str]) -> None:
    """Merge the segments of each of `terms` that has more than `MAX_SEGMENTS` into one,
    without the postings of documents that are gone."""
    crowded: list[str] = []
    for start in range(0, len(terms), 500):
        chunk = terms[start : start + 500]
        crowded.extend(
            str(row[0])
            for row in conn.execute(
                f"SELECT term FROM search_terms WHERE term IN ({','.join('?' * len(chunk))}) "
                "AND segs > ?",
                [*chunk, MAX_SEGMENTS],
            )
        )
    if not crowded:
        return
    live = {int(row[0]) for row in conn.execute("SELECT doc_id FROM search_docs")}
    for term in crowded:
        rows = conn.execute(
            "SELECT seg, postings, heads FROM search_segments WHERE term = ? ORDER BY seg",
            (term,),
        ).fetchall()
        merged: list[int] = []
        heads: list[int] = []
        for _seg, blob, head_blob in rows:
            if not (isinstance(blob, bytes) and isinstance(head_blob, bytes)):
                raise sqlite3.DatabaseError("the search index holds invalid postings")
            values = unpack(blob)
            if len(values) % POSTING_FIELDS:
                raise sqlite3.DatabaseError("the search index holds invalid postings")
            for i in range(0, len(values), POSTING_FIELDS):
                if values[i] in live:
                    merged.extend(values[i : i + POSTING_FIELDS])
            heads.extend(d for d in unpack(head_blob) if d in live)
        conn.execute("DELETE FROM search_segments WHERE term = ?", (term,))
        if merged:
            conn.execute(
                "INSERT INTO search_segments (term, seg, postings, heads) VALUES (?, ?, ?, ?)",
                (term, int(rows[0][0]), pack(merged), pack(heads)),
            )
        conn.execute("UPDATE search_terms SET segs = ? WHERE term = ?", (1 if merged else 0, term))


def unindex_doc(
    conn: sqlite3.Connection, doc_type: str, ident: str, buffer: IndexBuffer | None = None
) -> None:
    """Take one document out of the index (no-op when absent): its row and frequencies go;
    its postings stay behind, dead, until its terms' segments are merged."""
    row = conn.execute(
        "SELECT doc_id, terms, length FROM search_docs WHERE doc_type = ? AND ident = ?",
        (doc_type, ident),
    ).fetchone()
    if row is None:
        return
    own = buffer or IndexBuffer()
    doc_id, joined, length = int(row[0]), str(row[1]), int(row[2])
    terms = joined.split(" ") if joined else []
    conn.execute("DELETE FROM search_docs WHERE doc_id = ?", (doc_id,))
    df = own.df
    for term in terms:
        df[term] = df.get(term, 0) - 1
    if own.first_doc and doc_id >= own.first_doc:
        own.dead.add(doc_id)  # its postings are still in the buffer
    own.docs -= 1
    own.length -= length
    if buffer is None:
        own.flush(conn)


def _first_offsets_spans(text: str) -> dict[str, int]:
    """Where each term first occurs in `text` (code points), from the analyzer's spans."""
    first: dict[str, int] = {}
    for term, _word, start in token_spans(text):
        first.setdefault(term, start)
    return first


# tokenize's ASCII words are the runs of `[^\W_]` (re.ASCII): letters and digits. Every other
# ASCII character becomes a space, one for one, so offsets in the translated text are offsets
# in the original.
_ASCII_SPACED = str.maketrans({c: c if chr(c).isalnum() else 32 for c in range(128)})
_PLUS_ONE = (1).__add__


def ascii_words(text: str) -> tuple[Counter[str], int, dict[str, int]]:
    """For ASCII `text`: its non-stop words' counts (first-seen order), how many there are,
    and where each word first occurs, as `tokenize.plain_words` and the analyzer's spans
    give them (a property test checks).

    Separators become single spaces and `split(" ")` cuts there: each part (a word, or the
    empty string between two separators) starts one past the end of the previous one, so every
    offset is a running sum of lengths, all in C: no regex, no per-word search. This is the
    write path's hottest function (about a third less time than a capturing `re.split`).
    """
    parts = text.lower().translate(_ASCII_SPACED).split(" ")
    starts = list(accumulate(map(_PLUS_ONE, map(len, parts)), initial=0))
    starts.pop()  # the offset after the last part
    # Reversed, so that each word's first occurrence is the one that stays.
    first = dict(zip(reversed(parts), reversed(starts), strict=True))
    counts = Counter(parts)
    total = len(parts) - counts.pop("", 0)
    for stop in STOP_WORDS.intersection(counts):
        total -= counts.pop(stop)
    return counts, total, first


def index_doc(
    conn: sqlite3.Connection,
    doc_type: str,
    ident: str,
    fields: tuple[str, str, str, str],
    *,
    name: str,
    snippet: str,
    buffer: IndexBuffer | None = None,
) -> None:
    """(Re)index one document: `fields` are title, path, summary, body; `name` the slug or
    the origin's file stem (generic test); `snippet` the text its snippets are cut from.
    Frequencies and statistics go to `buffer` (flushed by the caller), else are written."""
    own = buffer or IndexBuffer()
    unindex_doc(conn, doc_type, ident, own)
    title, path = fields[0], fields[1]
    short = [index_words(text) for text in fields[:3]]
    # Title and path in the query's form (CJK pairs), for the whole-query comparison; without
    # CJK characters that is exactly their index terms.
    title_terms = _query_form(title, short[0][0])
    path_terms = _query_form(path, short[1][0])
    length = sum(len(terms) for terms, _words in short)
    for terms, field_words in short:
        own.words.update(zip(field_words, terms, strict=True))
    body = fields[3]
    scan = snippet[:SNIPPET_SCAN]
    if body.isascii():
        # The body (the bulk of the work): one split, stem each distinct word once.
        word_counts, body_length, first_word = ascii_words(body)
        distinct_words = list(word_counts)
        # The batch's words so far give most stems (one lookup a word, nothing to add).
        seen = own.words
        known = list(map(seen.get, distinct_words))
        if all(known):
            stems: list[str] = known  # type: ignore[assignment]  # no None left
        else:  # a few new words (most documents have some): stem only those
            new = list(set(distinct_words).difference(seen))
            seen.update(zip(new, stem_words(new), strict=True))
            stems = list(map(seen.__getitem__, distinct_words))
        length += body_length
        # Counts and first offsets per stem, built in C; words sharing a stem (`cache`,
        # `caching`) are summed below. Words come in first-seen order, so the first of a
        # stem's words (the last to be written when reversed) has its first offset.
        weighted = dict(zip(stems, word_counts.values(), strict=True))
        if len(weighted) < len(stems):
            weighted = dict.fromkeys(weighted, 0)
            for stem, count in zip(stems, word_counts.values(), strict=True):
                weighted[stem] += count
        if scan is body:
            starts = list(map(first_word.__getitem__, distinct_words))
            first = dict(zip(reversed(stems), reversed(starts), strict=True))
        else:
            first = _first_offsets_spans(scan)
    else:
        body_terms, body_words = index_words(body)
        own.words.update(zip(body_words, body_terms, strict=True))
        weighted = dict(Counter(body_terms))
        length += len(body_terms)
        first = _first_offsets_spans(scan)
    # BM25F's weighted count: the body's counts plus the short fields', weighted.
    in_heads = {*short[0][0], *short[1][0]}  # title and path terms
    for (terms, _words), weight in zip(short, FIELD_WEIGHTS[:3], strict=True):
        for term in terms:
            weighted[term] = weighted.get(term, 0) + weight
    distinct = list(weighted)
    generic = is_generic(name, title_terms, short[1][0] if name == path else None)
    cursor = conn.execute(
        "INSERT INTO search_docs (doc_type, ident, title_terms, path_terms, generic, length, "
        "terms) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (doc_type, ident, " ".join(title_terms), " ".join(path_terms), int(generic), length,
         " ".join(distinct)),
    )  # fmt: skip
    doc_id = cursor.lastrowid
    if doc_id is None or doc_id > MAX_DOC_ID:
        raise StoreError(
            "store_needs_recovery", "the search index ran out of document ids: run `lwc repair`"
        )
    if not own.first_doc:
        own.first_doc = doc_id
    postings = own.postings
    offsets = map(first.get, weighted, repeat(-1))  # -1: not in the snippet text
    for term, tw, start in zip(weighted, weighted.values(), offsets, strict=True):
        postings[term].fromlist([doc_id, tw, length, start])
    heads = own.heads
    for term in in_heads:
        heads[term].append(doc_id)
    own.docs += 1
    own.length += length
    if buffer is None:
        own.flush(conn)


def index_page(
    conn: sqlite3.Connection,
    slug: str,
    title: str,
    summary: str | None,
    body: str,
    buffer: IndexBuffer | None = None,
) -> None:
    """Index a Page: path is its slug."""
    index_doc(
        conn, "page", slug, (title, slug, summary or "", body),
        name=slug, snippet=snippet_text(body, summary), buffer=buffer,
    )  # fmt: skip


def index_source(
    conn: sqlite3.Connection,
    ident: str,
    title: str,
    origin: str | None,
    content: str,
    buffer: IndexBuffer | None = None,
) -> None:
    """Index a Source: path is its origin, its name the origin's file stem."""
    origin = origin or ""
    index_doc(
        conn, "source", ident, (title, origin, "", content),
        name=PurePosixPath(origin).stem, snippet=content, buffer=buffer,
    )  # fmt: skip


def reindex_all(conn: sqlite3.Connection) -> int:
    """Rebuild the whole index from `pages` and `sources` (in the caller's transaction);
    document ids start again from 1 and every term has one segment."""
    for table in ("search_docs", "search_terms", "search_segments", "search_words", "search_fuzzy"):
        conn.execute(f"DELETE FROM {table}")
    conn.execute("DELETE FROM search_stats")
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'search_docs'")
    buffer = IndexBuffer()
    count = 0
    for slug, title, summary, body in conn.execute(
        "SELECT slug, title, summary, body FROM pages ORDER BY slug"
    ).fetchall():
        index_page(conn, slug, title, summary, body, buffer)
        count += 1
    for ident, title, origin, content in conn.execute(
        "SELECT id, title, origin, content FROM sources ORDER BY id"
    ).fetchall():
        index_source(conn, ident, title, origin, content, buffer)
        count += 1
    buffer.flush(conn)
    return count
