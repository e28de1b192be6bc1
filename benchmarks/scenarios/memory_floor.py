"""The memory scenario's same-run baseline: the engine's own BM25 statement, run directly."""

from __future__ import annotations

import sqlite3
import sys

from lwc_trio.memory import search as engine_search

# The statement `lwc_trio.memory.search._lexical` issues, verbatim (weights 8/6/4/1, LIMIT
# 4 × maxDocuments). `check_floor_sql` fails loudly if the engine's SQL drifts from this.
FLOOR_SQL = (
    "SELECT d.doc_type, d.ident, bm25(search_index, 8.0, 6.0, 4.0, 1.0) AS score "
    "FROM search_index JOIN search_docs AS d ON d.doc_id = search_index.rowid "
    "WHERE search_index MATCH ? ORDER BY score, d.doc_type, d.ident LIMIT ?"
)
# `selective_terms`: a term in at least half of the documents is not matched on.
COUNT_DOCS_SQL = "SELECT count(*) FROM search_docs"
COUNT_TERM_SQL = "SELECT count(*) FROM search_index WHERE search_index MATCH ?"
MAX_DOCUMENTS = 8  # the tool's default maxDocuments


def check_floor_sql() -> None:
    import inspect

    source = inspect.getsource(engine_search)
    weights = ", ".join(str(w) for w in engine_search.BM25_WEIGHTS)
    wanted = [
        "SELECT d.doc_type, d.ident, bm25(search_index, {weights}) AS score ",
        "FROM search_index JOIN search_docs AS d ON d.doc_id = search_index.rowid ",
        "WHERE search_index MATCH ? ORDER BY score, d.doc_type, d.ident LIMIT ?",
        COUNT_TERM_SQL,
    ]
    missing = [part for part in wanted if part not in source]
    if missing or weights != "8.0, 6.0, 4.0, 1.0" or engine_search.CANDIDATE_FACTOR != 4:
        sys.exit(f"bench memory: the engine's BM25 SQL changed; update FLOOR_SQL ({missing})")


def floor_match(conn: sqlite3.Connection, terms: list[str]) -> str:
    """The MATCH expression the engine ends up with (selective terms, each quoted)."""
    if len(terms) >= 2:
        total = conn.execute(COUNT_DOCS_SQL).fetchone()[0]
        kept = [
            t for t in terms if 2 * conn.execute(COUNT_TERM_SQL, (f'"{t}"',)).fetchone()[0] < total
        ]
        terms = kept or terms
    return " OR ".join(f'"{t}"' for t in terms)
