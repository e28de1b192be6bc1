"""Documents in and out of the search index: the entry points the writer calls.

`index_page`, `index_source` and `index_placed_page` (a Page a bulk import's analysis
process analyzed) add a document: its `search_docs` row now, its postings, frequencies and
statistics to the transaction's `IndexBuffer`, written at its flush. `unindex_doc` takes one
out before its `pages` or `sources` row changes; `reindex_all` rebuilds everything
(`lwc repair`, migrations). Runs inside the writer's transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import PurePosixPath

from lwc_trio.exceptions import StoreError
from lwc_trio.memory.format.postings import MAX_VALUE
from lwc_trio.memory.format.schema import SEARCH_TABLES
from lwc_trio.memory.index.buffer import IndexBuffer
from lwc_trio.memory.index.document import PageAnalysis, analyze, terms_of
from lwc_trio.memory.text.fields import is_generic, snippet_text

__all__ = [
    "MAX_DOC_ID",
    "index_doc",
    "index_page",
    "index_placed_page",
    "index_source",
    "reindex_all",
    "unindex_doc",
]

MAX_DOC_ID = MAX_VALUE
"""The largest doc id a posting holds: past it a store needs `lwc repair`."""


def unindex_doc(
    conn: sqlite3.Connection, doc_type: str, ident: str, buffer: IndexBuffer | None = None
) -> None:
    """Take one document out of the index (no-op when absent): its row and frequencies go;
    its postings stay behind, dead, until its terms' segments are merged.

    Call it before the document's `pages` or `sources` row changes: its terms are not stored
    (format 4 kept them, a fifth of the store) but worked out again from that row's text,
    with the same analyzer that indexed it (a format change reindexes every document)."""
    row = conn.execute(
        "SELECT doc_id, length FROM search_docs WHERE doc_type = ? AND ident = ?",
        (doc_type, ident),
    ).fetchone()
    if row is None:
        return
    own = buffer or IndexBuffer()
    doc_id, length = int(row[0]), int(row[1])
    if doc_type == "page":
        text = conn.execute(
            "SELECT slug, title, summary, body FROM pages WHERE slug = ?", (ident,)
        ).fetchone()
        fields = None if text is None else (text[1], text[0], text[2] or "", text[3])
    else:
        text = conn.execute(
            "SELECT title, origin, content FROM sources WHERE id = ?", (ident,)
        ).fetchone()
        fields = None if text is None else (text[0], text[1] or "", "", text[2])
    if fields is None:
        raise StoreError(
            "store_needs_recovery",
            f"the search index holds a {doc_type} that is gone: run `lwc repair`",
        )
    terms = terms_of(analyze(fields, "", own.words).keyed)
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
    """Index one document that is not in the index (`unindex_doc` first, before its row
    changes): `fields` are title, path, summary, body; `name` the slug or the origin's file
    stem (generic test); `snippet` the text its snippets are cut from. Frequencies and
    statistics go to `buffer` (flushed by the caller), else are written."""
    own = buffer or IndexBuffer()
    found = analyze(fields, snippet, own.words)
    length = found.length
    generic = is_generic(name, found.title_terms, found.generic_path if name == fields[1] else None)
    doc_id = _insert_doc(
        conn, doc_type, ident, found.title_terms, found.path_terms, generic, length
    )
    own.add(doc_id, length, found.keyed, found.firsts)
    _counted(own, doc_id, length, found.heads)
    if buffer is None:
        own.flush(conn)


def _insert_doc(
    conn: sqlite3.Connection,
    doc_type: str,
    ident: str,
    title_terms: list[str],
    path_terms: list[str],
    generic: bool,
    length: int,
) -> int:
    """The document's `search_docs` row; its new doc id."""
    cursor = conn.execute(
        "INSERT INTO search_docs (doc_type, ident, title_terms, path_terms, generic, length) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (doc_type, ident, " ".join(title_terms), " ".join(path_terms), int(generic), length),
    )
    doc_id = cursor.lastrowid
    if doc_id is None or doc_id > MAX_DOC_ID:
        raise StoreError(
            "store_needs_recovery", "the search index ran out of document ids: run `lwc repair`"
        )
    return doc_id


def _counted(own: IndexBuffer, doc_id: int, length: int, heads: Iterable[str]) -> None:
    """A document added to `own`: its title and path terms, the batch's statistics."""
    if not own.first_doc:
        own.first_doc = doc_id
    by_term = own.heads
    for term in heads:
        by_term[term].append(doc_id)
    own.docs += 1
    own.length += length


def index_placed_page(
    conn: sqlite3.Connection, slug: str, analysis: PageAnalysis, place: int, buffer: IndexBuffer
) -> None:
    """`index_page` for a Page a `BatchAnalyzer` analyzed in a bulk import: the analysis
    process holds its postings under its `place` in the batch (`HeldPostings`)."""
    doc_id = _insert_doc(
        conn, "page", slug, analysis.title_terms, analysis.path_terms, analysis.generic,
        analysis.length,
    )  # fmt: skip
    buffer.add_placed(doc_id, analysis.length, place, analysis.pairs)
    _counted(buffer, doc_id, analysis.length, analysis.heads)


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
    for table in SEARCH_TABLES:
        conn.execute(f"DELETE FROM {table}")
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
