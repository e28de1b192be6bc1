"""The memory scenario's same-run baseline: the engine's own BM25F scoring, run directly."""

from __future__ import annotations

import sqlite3
import sys
import time

from lwc_trio.memory.query import search as engine_search
from lwc_trio.memory.text.tokenize import query_terms

MAX_DOCUMENTS = 8  # the tool's default maxDocuments


def check_floor_sql() -> None:
    """The floor assumes the engine's candidate pool of 4 × maxDocuments."""
    if engine_search.CANDIDATE_FACTOR != 4:
        sys.exit("bench memory: the engine's candidate pool changed; update the floor")


def floor_run(conn: sqlite3.Connection, query: str, limit: int) -> float:
    """Score `query` with the engine's own code (term lookups untimed; postings read and
    BM25F and the best `limit` timed) alone; the run's milliseconds (0 when nothing
    matches)."""
    run = engine_search.floor_scorer(conn, query_terms(query), limit)
    if run is None:
        return 0.0
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000.0
