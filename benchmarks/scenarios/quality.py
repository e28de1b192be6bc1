"""Search quality benchmark (issue 13) on the public Cranfield collection, with baselines.

Data: `../shared/data/cranfield` (1,400 abstracts, 225 queries, graded judgments); nothing is
downloaded at run time. A page is title + abstract: title → the Page title, abstract → body,
slug `d<id>`, written through the real write path (`Wiki.put_pages`, what `lwc page import`
runs) and searched through the engine `lwc search` uses (`query_stores`, maxDocuments 10).

Systems, all in the same run on the same texts:
- `lwc`: this project's search;
- `bm25s`: bm25s (Lucene BM25, k1 1.5, b 0.75) with its English stop-words, no stemming;
- `bm25s+stem`: the same with PyStemmer's English Snowball stemmer;
- `fts5-porter`: SQLite FTS5 `porter unicode61`, columns (title, abstract), bm25 weights 8/1,
  the query's words OR-ed.

Metrics (top 10): nDCG@10 (gain 5 − grade for grades 1–4; -1 is not relevant), MRR@10 and
Recall@10 and P@5 (grades 1–4 relevant), zero-result queries. Settings:
- `full`: all 1,400 documents, all 225 queries;
- `random-30`, `random-200`, `hard-30`, `hard-200`: per query, its relevant documents plus
  fillers up to 30 / 200 pages, drawn at random or taking the documents sharing the most query
  words (lowercase words minus bm25s's English stop-words, no stemming), fixed seed;
- `titles-clean`, `titles-typo12`, `titles-typoall`: 200 documents' titles (fixed seed) as
  queries for their own document, as written, with 1–2 words misspelt, and with every word of
  4+ letters misspelt (one random substitution, deletion, insertion or swap per word, at any
  position).
Latency: the engine's `explore_memory` per query on the full store and on a 60-page store
(wall-clock medians, the targets; and the calling thread's CPU time, which a shared machine's
other work disturbs less).

    scripts/bench quality              # everything (~5 minutes on a quiet machine)
    scripts/bench quality --quick      # full + titles only
    scripts/bench quality --json       # machine-readable results on stdout
    scripts/bench quality --tune       # grid over the ranking constants (full + hard-200)
    scripts/bench quality --ablate     # each factor switched off, one at a time
    scripts/bench quality --latency    # only the two latency figures
    scripts/bench quality --digest     # sha256 of every hit of the 225 queries (full, 60 pages)

Needs the `bench` extra (`pip install -e '.[bench]'`) for bm25s. Exit status: 0 targets met,
1 a target missed.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager as contextlib_contextmanager
from pathlib import Path
from typing import Any

import attrs

from lwc_trio.memory.index.inputs import PageInput
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.query.engine import MemoryQuery, explore_memory, query_stores
from lwc_trio.memory.query.fuzzy import build_vocabulary
from lwc_trio.memory.query.scoring import DEFAULT_RANKING, Ranking
from lwc_trio.memory.query.search import search_store
from lwc_trio.memory.storage.discovery import StoreRef
from lwc_trio.memory.storage.store import create_store
from lwc_trio.memory.text.tokenize import query_terms

REPO = Path(__file__).resolve().parents[2]

DATA = REPO.parent / "shared" / "data" / "cranfield"
SEED = 13
K = 10
TITLE_QUERIES = 200

Doc = tuple[int, str, str]  # id, title, abstract
Ranked = list[int]  # doc ids, best first


# --------------------------------------------------------------------------- data


def _fields(text: str) -> list[dict[str, str]]:
    records: list[dict[str, str]] = []
    field = ""
    for line in text.splitlines():
        if line.startswith(".I"):
            records.append({"I": line[2:].strip()})
            field = ""
        elif len(line) == 2 and line.startswith("."):
            field = line[1]
            records[-1][field] = ""
        elif field:
            records[-1][field] += line + "\n"
    return records


def load() -> tuple[list[Doc], list[str], dict[int, dict[int, int]]]:
    """Documents, queries (in file order: qrels number them 1..225) and judgments."""
    docs = [
        (int(r["I"]), " ".join(r.get("T", "").split()), " ".join(r.get("W", "").split()))
        for r in _fields((DATA / "cran.all.1400").read_text())
    ]
    queries = [" ".join(r.get("W", "").split()) for r in _fields((DATA / "cran.qry").read_text())]
    qrels: dict[int, dict[int, int]] = {}
    for line in (DATA / "cranqrel").read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            q, d, grade = map(int, parts)
            if 1 <= grade <= 4:
                qrels.setdefault(q, {})[d] = 5 - grade
    return docs, queries, qrels


# --------------------------------------------------------------------------- metrics


def metrics(ranked: Ranked, gains: dict[int, int]) -> dict[str, float]:
    top = ranked[:K]
    dcg = sum(gains.get(d, 0) / math.log2(i + 2) for i, d in enumerate(top))
    ideal = sorted(gains.values(), reverse=True)[:K]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    rr = next((1.0 / (i + 1) for i, d in enumerate(top) if d in gains), 0.0)
    hits = sum(1 for d in top if d in gains)
    return {
        "ndcg": dcg / idcg if idcg else 0.0,
        "mrr": rr,
        "recall": hits / len(gains) if gains else 0.0,
        "p5": sum(1 for d in ranked[:5] if d in gains) / 5,
        "zero": 1.0 if not ranked else 0.0,
    }


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    out = {key: statistics.fmean(r[key] for r in rows) for key in rows[0]}
    out["zero"] = sum(r["zero"] for r in rows)
    return out


# --------------------------------------------------------------------------- systems

Searcher = Callable[[str], Ranked]


def lwc_system(docs: Sequence[Doc], root: Path) -> tuple[Searcher, Path]:
    """Build an lwc store of `docs` under `root`; the searcher goes through `query_stores`."""
    (root / ".lwc").mkdir(parents=True)
    db = root / ".lwc" / "wiki.db"
    create_store(db)
    with Wiki(db) as wiki:
        wiki.put_pages([PageInput(slug=f"d{i}", title=t or f"d{i}", body=w) for i, t, w in docs])
    ref = StoreRef("project", db)
    never = threading.Event()

    def search(query: str) -> Ranked:
        answers = query_stores([ref], query, K, never)
        if answers[0].error is not None:
            raise RuntimeError(answers[0].error.message)
        return [int(row.identifier[1:]) for row in answers[0].rows]

    return search, db


def bm25s_system(docs: Sequence[Doc], *, stem: bool) -> Searcher:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english") if stem else None
    corpus = [f"{t} {w}" for _i, t, w in docs]
    ids = [i for i, _t, _w in docs]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)  # fmt: skip
    n = min(K, len(docs))

    def search(query: str) -> Ranked:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        found, scores = retriever.retrieve(tokens, k=n, show_progress=False)
        return [ids[j] for j, s in zip(found[0], scores[0], strict=True) if s > 0]

    return search


_FTS_WORD = re.compile(r"\w+")


def fts5_system(docs: Sequence[Doc]) -> Searcher:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize = 'porter unicode61')")
    conn.executemany("INSERT INTO t (rowid, title, body) VALUES (?, ?, ?)", docs)

    def search(query: str) -> Ranked:
        words = _FTS_WORD.findall(query.lower())
        if not words:
            return []
        expr = " OR ".join(f'"{w}"' for w in words)
        rows = conn.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t, 8.0, 1.0), rowid LIMIT ?",
            (expr, K),
        )
        return [int(r[0]) for r in rows]

    return search


# --------------------------------------------------------------------------- settings


def _plain_words(text: str, stop: frozenset[str]) -> set[str]:
    return {w for w in _FTS_WORD.findall(text.lower()) if w not in stop and not w.isdigit()}


def sub_collections(
    docs: Sequence[Doc], queries: Sequence[str], qrels: dict[int, dict[int, int]], size: int,
    hard: bool,
) -> list[list[Doc]]:  # fmt: skip
    """One sub-collection per query: its relevant documents plus fillers up to `size`."""
    import bm25s

    stop = frozenset(bm25s.stopwords.STOPWORDS_EN)
    rng = random.Random(f"{SEED}-{size}-{hard}")
    words = {d[0]: _plain_words(f"{d[1]} {d[2]}", stop) for d in docs}
    by_id = {d[0]: d for d in docs}
    out: list[list[Doc]] = []
    for qn, query in enumerate(queries, start=1):
        relevant = sorted(qrels.get(qn, {}))[:size]
        others = [d[0] for d in docs if d[0] not in set(relevant)]
        need = size - len(relevant)
        if hard:
            qwords = _plain_words(query, stop)
            shuffled = rng.sample(others, len(others))  # ties broken at random, seeded
            fillers = sorted(shuffled, key=lambda d: -len(words[d] & qwords))[:need]
        else:
            fillers = rng.sample(others, need)
        out.append(sorted((by_id[d] for d in relevant + fillers), key=lambda d: d[0]))
    return out


_EDITS = "abcdefghijklmnopqrstuvwxyz"


def misspell(word: str, rng: random.Random) -> str:
    """One random edit anywhere in the word: substitute, delete, insert or swap."""
    i = rng.randrange(len(word))
    kind = rng.choice(("sub", "del", "ins", "swap"))
    if kind == "sub":
        return word[:i] + rng.choice([c for c in _EDITS if c != word[i]]) + word[i + 1 :]
    if kind == "del":
        return word[:i] + word[i + 1 :]
    if kind == "ins":
        return word[:i] + rng.choice(_EDITS) + word[i:]
    j = min(i + 1, len(word) - 1)
    if j == i or word[i] == word[j]:
        return word[:i] + rng.choice([c for c in _EDITS if c != word[i]]) + word[i + 1 :]
    return word[:i] + word[j] + word[i] + word[j + 1 :]


def title_queries(docs: Sequence[Doc]) -> dict[str, list[tuple[str, int]]]:
    """(query, target doc) for clean titles, 1–2 misspelt words, every word misspelt."""
    rng = random.Random(SEED)
    seen: dict[str, int] = {}
    for d in docs:
        seen[d[1]] = seen.get(d[1], 0) + 1
    pool = [d for d in docs if d[1] and seen[d[1]] == 1]
    chosen = rng.sample(pool, TITLE_QUERIES)
    out: dict[str, list[tuple[str, int]]] = {"titles-clean": [], "titles-typo12": [],
                                             "titles-typoall": []}  # fmt: skip
    for doc_id, title, _w in chosen:
        words = title.split()
        long = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
        out["titles-clean"].append((title, doc_id))
        some = rng.sample(long, min(len(long), rng.choice((1, 2))))
        out["titles-typo12"].append(
            (" ".join(misspell(w, rng) if i in some else w for i, w in enumerate(words)), doc_id)
        )
        out["titles-typoall"].append(
            (" ".join(misspell(w, rng) if i in long else w for i, w in enumerate(words)), doc_id)
        )
    return out


# --------------------------------------------------------------------------- runs


def run_setting(
    name: str, collections: Sequence[Sequence[Doc]], cases: Sequence[tuple[str, dict[int, int]]],
    systems: Sequence[str], tmp: Path,
) -> dict[str, dict[str, float]]:  # fmt: skip
    """Metrics per system; `collections[i]` is the collection for `cases[i]` (or one for all)."""
    results: dict[str, list[dict[str, float]]] = {s: [] for s in systems}
    built: dict[int, dict[str, Searcher]] = {}
    for i, (query, gains) in enumerate(cases):
        coll = collections[i if len(collections) > 1 else 0]
        key = id(coll)
        if key not in built:
            if len(built) > 0 and len(collections) > 1:
                built.clear()
            searchers: dict[str, Searcher] = {}
            for system in systems:
                if system == "lwc":
                    searchers[system] = lwc_system(coll, tmp / f"{name}-{i}")[0]
                elif system == "bm25s":
                    searchers[system] = bm25s_system(coll, stem=False)
                elif system == "bm25s+stem":
                    searchers[system] = bm25s_system(coll, stem=True)
                else:
                    searchers[system] = fts5_system(coll)
            built[key] = searchers
        for system, search in built[key].items():
            results[system].append(metrics(search(query), gains))
    return {system: mean_metrics(rows) for system, rows in results.items()}


def latency(root: Path, queries: Sequence[str]) -> dict[str, float]:
    """Median and p95 ms of `explore_memory` (what the server's memoryMs times) per query.

    One warm-up query (not a Cranfield one) builds the vocabulary and pools a connection.
    Then every query is timed the first time it is asked (`median_ms`, the target: the
    search's per-revision caches hold only terms earlier queries shared) and twice more
    (`repeat_median_ms`: a question asked again, its terms' postings and typo corrections
    already kept).
    """
    never = threading.Event()
    home = root / "no-home"
    home.mkdir(exist_ok=True)
    cpu: list[float] = []

    def timed(query: str) -> float:
        q = MemoryQuery(query, root, root, home, "project", frozenset({"project"}), 8)
        start, thread = time.perf_counter(), time.thread_time()
        explore_memory(q, cancelled=never)
        cpu.append((time.thread_time() - thread) * 1000)
        return (time.perf_counter() - start) * 1000

    timed("warm up the vocabulary")
    cpu.clear()
    first = sorted(timed(query) for query in queries)
    first_cpu, cpu = cpu, []
    again = sorted(timed(query) for _ in range(2) for query in queries)
    return {
        "median_ms": statistics.median(first),
        "p95_ms": first[int(0.95 * len(first))],
        "repeat_median_ms": statistics.median(again),
        "repeat_p95_ms": again[int(0.95 * len(again))],
        # The calling thread's CPU time: what a shared machine's other work disturbs least.
        "cpu_median_ms": statistics.median(first_cpu),
        "repeat_cpu_median_ms": statistics.median(cpu),
    }


def fresh_latency() -> dict[str, dict[str, float]]:
    """`--latency` in a fresh process, as the full run's latency figures.

    A server's process holds its stores and nothing else; by the end of the full run this
    one also holds the baselines' indexes and hundreds of sub-collection stores, and every
    garbage collection walks them (the 60-page first ask: 1.11 and 1.28 ms beside a heap of
    3 M objects, 0.81 and 1.13 ms without, two runs each). The figures are those of a
    process like the server's.
    """
    command = [sys.executable, "-m", "benchmarks", "quality", "--latency"]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600)
    figures: dict[str, dict[str, float]] = {}
    for line in out.stdout.splitlines():
        name, _, data = line.partition(" ")
        if name in ("latency_full", "latency_60"):
            figures[name] = json.loads(data)
    assert set(figures) == {"latency_full", "latency_60"}, out.stdout
    return figures


def digest(root: Path, queries: Sequence[str]) -> str:
    """sha256 of every result row of `queries` through `explore_memory`, maxDocuments 8 (as
    `latency`, first ask), 10 (as the quality table) and 8 again (the per-revision caches
    warm): every field but `updatedAt`, the rank as its exact float repr. A change that
    keeps this digest keeps every ranking, rank and snippet byte-identical."""
    never = threading.Event()
    home = root / "no-home"
    home.mkdir(exist_ok=True)
    h = hashlib.sha256()
    for limit in (8, K, 8):
        for query in queries:
            q = MemoryQuery(query, root, root, home, "project", frozenset({"project"}), limit)
            memory = explore_memory(q, cancelled=never)
            rows = [
                {
                    key: repr(v) if key == "rank" else v
                    for key, v in row.items()
                    if key != "updatedAt"
                }
                for row in memory["results"]
            ]
            h.update(json.dumps(rows, ensure_ascii=False, sort_keys=True).encode("utf-8"))
            h.update(b"\n")
    return h.hexdigest()


SYSTEMS = ("lwc", "bm25s", "bm25s+stem", "fts5-porter")


def tune(docs: list[Doc], queries: list[str], qrels: dict[int, dict[int, int]], tmp: Path) -> None:
    """Grid over the ranking constants, on the full store and hard-200 (in-process)."""
    _search, db = lwc_system(docs, tmp / "tune-full")
    hard = sub_collections(docs, queries, qrels, 200, hard=True)
    hard_dbs = [lwc_system(c, tmp / f"tune-hard-{i}")[1] for i, c in enumerate(hard)]
    conns = {db: sqlite3.connect(db)} | {h: sqlite3.connect(h) for h in hard_dbs}
    vocab = {path: build_vocabulary(conn) for path, conn in conns.items()}

    def evaluate(ranking: Ranking, path_of: Callable[[int], Path]) -> float:
        scores = []
        for qn, query in enumerate(queries, start=1):
            path = path_of(qn)
            conn = conns[path]
            hits = search_store(conn, query_terms(query), K, degrees=lambda s: {},
                                vocabulary=functools.partial(vocab.__getitem__, path),
                                ranking=ranking)  # fmt: skip
            scores.append(metrics([int(h.identifier[1:]) for h in hits], qrels.get(qn, {}))["ndcg"])
        return statistics.fmean(scores)

    # The field weights are part of the index (fields.FIELD_WEIGHTS): they were tuned with
    # per-field counts in the postings (4/3/2/1 beat 8/6/4/1 and 2/1.5/1/1); this grid covers
    # the query-time constants.
    grid = [Ranking(k1=k1, b=b) for k1 in (1.2, 1.5, 1.8, 2.2) for b in (0.6, 0.75, 0.9)]
    for ranking in grid:
        full = evaluate(ranking, lambda qn: db)
        hard_score = evaluate(ranking, lambda qn: hard_dbs[qn - 1])
        print(f"{ranking}: full {full:.4f} hard-200 {hard_score:.4f}", flush=True)


def ablate(
    docs: list[Doc], queries: list[str], qrels: dict[int, dict[int, int]], tmp: Path
) -> None:
    """Each factor's effect: lwc with one factor switched off (in-process `search_store`)."""
    import contextlib
    import importlib

    from lwc_trio.memory.query import search

    # `lwc_trio.memory.text.tokenize` is also a function name in the package: take the module.
    tokenize = importlib.import_module("lwc_trio.memory.text.tokenize")

    titles = title_queries(docs)
    hard = sub_collections(docs, queries, qrels, 200, hard=True)

    def stores(tag: str) -> tuple[Path, list[Path]]:
        full = lwc_system(docs, tmp / f"ablate-{tag}-full")[1]
        return full, [lwc_system(c, tmp / f"ablate-{tag}-hard-{i}")[1] for i, c in enumerate(hard)]

    def evaluate(full: Path, hard_dbs: list[Path], ranking: Ranking) -> dict[str, float]:
        conns: dict[Path, sqlite3.Connection] = {}
        vocab: dict[Path, Any] = {}

        def run(path: Path, query: str) -> Ranked:
            if path not in conns:
                conns[path] = sqlite3.connect(path)
                vocab[path] = build_vocabulary(conns[path])
            hits = search_store(conns[path], query_terms(query), K, degrees=lambda s: {},
                                vocabulary=lambda: vocab[path], ranking=ranking)  # fmt: skip
            return [int(h.identifier[1:]) for h in hits]

        out = {}
        rows = [metrics(run(full, q), qrels.get(i, {})) for i, q in enumerate(queries, start=1)]
        out["full nDCG"] = mean_metrics(rows)["ndcg"]
        rows = [metrics(run(hard_dbs[i - 1], q), qrels.get(i, {}))
                for i, q in enumerate(queries, start=1)]  # fmt: skip
        out["hard-200 nDCG"] = mean_metrics(rows)["ndcg"]
        for name in ("titles-clean", "titles-typo12", "titles-typoall"):
            rows = [metrics(run(full, q), {d: 1}) for q, d in titles[name]]
            out[f"{name} MRR"] = mean_metrics(rows)["mrr"]
        for conn in conns.values():
            conn.close()
        return out

    def collapsing_idf(docs_n: int, df: int) -> float:
        return max(1e-6, math.log((docs_n - df + 0.5) / (df + 0.5)))

    base = DEFAULT_RANKING
    full, hard_dbs = stores("base")
    variants: list[tuple[str, Ranking, contextlib.AbstractContextManager[Any]]] = [
        ("lwc (all factors)", base, contextlib.nullcontext()),
        ("IDF floored like FTS5 (collapses)", base, _patch(search, "idf", collapsing_idf)),
        ("no query term frequency", attrs.evolve(base, query_tf=False), contextlib.nullcontext()),
        (
            "no title/path pull-up",
            attrs.evolve(base, title_exact=1.0, title_phrase=1.0, path_exact=1.0, path_phrase=1.0),
            contextlib.nullcontext(),
        ),
        ("no per-term typo correction", base, _patch(search, "max_edits", lambda w: 0)),
        ("no title fill-up", base, _patch(search, "_fill_up", lambda *a: [])),
        (
            "no typo handling at all",
            base,
            _patches((search, "max_edits", lambda w: 0), (search, "_fill_up", lambda *a: [])),
        ),
    ]
    for label, ranking, patch in variants:
        with patch:
            result = evaluate(full, hard_dbs, ranking)
        print(json.dumps({"variant": label, **{k: round(v, 4) for k, v in result.items()}}),
              flush=True)  # fmt: skip

    def same(words: list[str]) -> list[str]:
        return list(words)

    from lwc_trio.memory.index import buffer, document

    patched = ((tokenize, "stem_words", same), (buffer, "stem_words", same))
    with _patches(*patched, (document, "stem_words", same)):
        tokenize._STEMS.clear()
        full_ns, hard_ns = stores("nostem")
        result = evaluate(full_ns, hard_ns, base)
    print(json.dumps({"variant": "no stemming", **{k: round(v, 4) for k, v in result.items()}}))


@contextlib_contextmanager
def _patch(module: Any, name: str, value: Any) -> Any:
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


@contextlib_contextmanager
def _patches(*items: tuple[Any, str, Any]) -> Any:
    olds = [(m, n, getattr(m, n)) for m, n, _v in items]
    for m, n, v in items:
        setattr(m, n, v)
    try:
        yield
    finally:
        for m, n, v in olds:
            setattr(m, n, v)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="full collection and titles only")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--tune", action="store_true", help="grid over the ranking constants")
    parser.add_argument("--ablate", action="store_true", help="each factor switched off")
    parser.add_argument("--latency", action="store_true", help="only the latency figures")
    parser.add_argument("--digest", action="store_true", help="only the result digests")
    args = parser.parse_args(argv)
    docs, queries, qrels = load()
    cases = [(q, qrels.get(i, {})) for i, q in enumerate(queries, start=1)]
    report: dict[str, Any] = {"ranking": str(DEFAULT_RANKING), "settings": {}}
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="lwc-quality-", dir=base) as raw:
        tmp = Path(raw)
        if args.tune:
            tune(docs, queries, qrels, tmp)
            return 0
        if args.ablate:
            ablate(docs, queries, qrels, tmp)
            return 0
        if args.latency or args.digest:
            for name, subset in (("full", docs), ("60", docs[:60])):
                root = tmp / name
                lwc_system(subset, root)
                if args.digest:
                    print(f"digest_{name}", digest(root, queries), flush=True)
                else:
                    print(f"latency_{name}", json.dumps(latency(root, queries)), flush=True)
            return 0
        settings: list[tuple[str, list[list[Doc]], list[tuple[str, dict[int, int]]]]] = [
            ("full", [docs], cases)
        ]
        if not args.quick:
            for size in (30, 200):
                for hard in (False, True):
                    name = f"{'hard' if hard else 'random'}-{size}"
                    subs = sub_collections(docs, queries, qrels, size, hard)
                    settings.append((name, subs, cases))
        for name, title_cases in title_queries(docs).items():
            settings.append((name, [docs], [(q, {d: 1}) for q, d in title_cases]))
        for name, collections, setting_cases in settings:
            started = time.perf_counter()
            report["settings"][name] = run_setting(name, collections, setting_cases, SYSTEMS, tmp)
            print(f"{name}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        report.update(fresh_latency())
    verdicts = check(report)
    report["targets"] = verdicts
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0 if all(v["pass"] for v in verdicts) else 1


def check(report: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, systems in report["settings"].items():
        if name.startswith("titles"):
            continue
        best = max(("bm25s", "bm25s+stem", "fts5-porter"), key=lambda s: systems[s]["ndcg"])
        for metric in ("ndcg", "mrr"):
            ours, theirs = (
                systems["lwc"][metric],
                max(systems[s][metric] for s in ("bm25s", "bm25s+stem", "fts5-porter")),
            )
            out.append({"target": f"{name} {metric} ≥ best baseline ({best})",
                        "value": f"{ours:.3f} vs {theirs:.3f}",
                        "pass": ours >= theirs})  # fmt: skip
    floors = {"titles-clean": 0.92, "titles-typo12": 0.85, "titles-typoall": 0.75}
    for name, floor in floors.items():
        if name in report["settings"]:
            mrr = report["settings"][name]["lwc"]["mrr"]
            out.append({"target": f"{name} MRR@10 ≥ {floor}", "value": f"{mrr:.3f}",
                        "pass": mrr >= floor})  # fmt: skip
    for name, limit in (("latency_full", 2.0), ("latency_60", 1.0)):
        ms = report[name]["median_ms"]
        out.append({"target": f"{name} first-ask median ≤ {limit} ms", "value": f"{ms:.2f} ms",
                    "pass": ms <= limit})  # fmt: skip
    return out


def print_report(report: dict[str, Any]) -> None:
    print(f"ranking: {report['ranking']}")
    print("| setting | system | nDCG@10 | MRR@10 | Recall@10 | P@5 | zero-result |")
    print("|---|---|---|---|---|---|---|")
    for name, systems in report["settings"].items():
        for system, m in systems.items():
            print(f"| {name} | {system} | {m['ndcg']:.3f} | {m['mrr']:.3f} | "
                  f"{m['recall']:.3f} | {m['p5']:.3f} | {int(m['zero'])} |")  # fmt: skip
    for name in ("latency_full", "latency_60"):
        lat = report[name]
        print(f"{name}: explore_memory first ask median {lat['median_ms']:.2f} ms, "
              f"p95 {lat['p95_ms']:.2f} ms; asked again median "
              f"{lat['repeat_median_ms']:.2f} ms, p95 {lat['repeat_p95_ms']:.2f} ms; thread "
              f"CPU median {lat['cpu_median_ms']:.2f} / {lat['repeat_cpu_median_ms']:.2f} ms"
              )  # fmt: skip
    print("| target | value | verdict |")
    print("|---|---|---|")
    for v in report["targets"]:
        print(f"| {v['target']} | {v['value']} | {'PASS' if v['pass'] else 'FAIL'} |")
