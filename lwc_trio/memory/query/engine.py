"""The memory-plane engine: discover stores, read each in one transaction, merge, cap.

`explore_memory` is what the memory-plane worker runs in a thread. It is synchronous, opens
its own read-only connections, creates no file, and stops promptly when the caller sets
`cancelled` (SQLite's progress handler interrupts the running statement).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from lwc_trio.exceptions import ForeignStoreError, MemoryCancelled, StoreChanged, StoreError
from lwc_trio.memory.format.cache import RevisionCache
from lwc_trio.memory.format.typo_index import WordIndex
from lwc_trio.memory.format.typo_index import request as typo_request
from lwc_trio.memory.query.bounds import bound_body, bound_neighborhood, bound_row
from lwc_trio.memory.query.evidence import RERANK_POOL, rerank
from lwc_trio.memory.query.neighborhood import graph_item, read_neighborhood
from lwc_trio.memory.query.passages import UNITS_PER_TOKEN, cost
from lwc_trio.memory.query.results import (
    PageBody,
    PageRow,
    ResultRow,
    dumps_compact,
    fit_pages,
    page_heads,
    page_reference,
    read_from,
    read_hits,
)
from lwc_trio.memory.query.search import Hit, load_degrees, search_store
from lwc_trio.memory.storage.discovery import StoreRef, project_store_above
from lwc_trio.memory.storage.handles import Handles
from lwc_trio.memory.storage.pool import Reader, checkin, checkout
from lwc_trio.memory.storage.store import (
    Interrupted,
    StoreInfo,
    begin_read_cookie,
    graph_status,
    translate_error,
)
from lwc_trio.memory.text.tokenize import MAX_TERMS, QueryTerm, parse_query
from lwc_trio.protocol.tool import DEFAULT_MAX_TOKENS
from lwc_trio.protocol.units import text_cost

__all__ = [
    "MemoryCancelled",
    "MemoryQuery",
    "StoreAnswer",
    "explore_memory",
    "query_stores",
]

SCOPES = ("project", "global")
_SCOPE_ORDER = {scope: i for i, scope in enumerate(SCOPES)}
# How long a reader keeps retrying a store a writer has locked before `store_busy`, when the
# query sets no `busy_until` (`lwc search` and other CLI readers).
BUSY_LIMIT_S = 2.0
BUSY_SHARE = 0.8
"""The share of the memory deadline a server read waits for a writer's lock: a one-Page
commit holds it while it flushes to disk, which took 0.6 s on a moderately loaded machine
and over 2 s in a loaded test run; the rest of the deadline is left to answer `store_busy`
in time, naming the cause (SPEC §4)."""
# A store whose directory changed while it was opened is retried after this pause (within
# the same window): a benign rename settles, a swapping attacker gets an error, never data.
CHANGED_PAUSE_S = 0.002

ANSWER_RESERVE = 0.15
"""The share of the time a request has left when it starts that no store may use: the
merge, the Pages' passages (`fit_pages`, bounded by `results.FOCUS_SCAN` characters a Page)
and the way back to the event loop run in it, so an answer whose stores ran out of time
still arrives before the plane's deadline."""

# The typo index of each store revision, keyed by the store file and revision ((device,
# inode), store_id, store_revision: one store reached by many paths is read once): what
# per-term correction and the title fill-up read of `search_fuzzy` so far, group by group,
# each group read once (`typo_index.WordIndex`) within one budget for all of them. No
# request reads a store's whole vocabulary (SPEC §4 "Typos": cost bounded on any size).
WORD_INDEXES: RevisionCache[WordIndex] = RevisionCache(4)


@attrs.frozen
class MemoryQuery:
    """One memory-plane request, already validated and authorized by the caller."""

    query: str
    project_path: Path  # canonical, inside the workspace
    workspace: Path  # canonical
    home: Path  # canonical $HOME, for the global store $HOME/.lwc/wiki.db
    scope: str  # "project" | "global" | "all"
    allowed_scopes: frozenset[str]
    max_documents: int  # 1..20
    max_tokens: int = DEFAULT_MAX_TOKENS
    """The whole answer's budget in estimated tokens (`passages.estimate_tokens`)."""
    busy_until: float | None = None
    """`time.monotonic()` until which a store a writer has locked is waited for, then
    `store_busy`; None: `BUSY_LIMIT_S` from the store's first open."""
    deadline: float | None = None
    """`time.monotonic()` at which the plane's deadline cancels this request: each store
    gets its own share of the time until then (`query_stores`); None (the CLI): no shares."""


@attrs.frozen
class StoreAnswer:
    """What one store contributed (or why it could not)."""

    ref: StoreRef
    info: StoreInfo | None
    error: StoreError | None
    rows: tuple[ResultRow, ...] = ()
    bodies: dict[str, PageBody] = attrs.field(factory=dict)
    neighborhood: dict[str, Any] | None = None

    def store_json(self) -> dict[str, Any]:
        """The `stores` entry: scope, storeId, revision, state, error?."""
        item: dict[str, Any] = {
            "scope": self.ref.scope,
            "storeId": None if self.info is None else self.info.store_id,
            "revision": None if self.info is None else self.info.store_revision,
            "state": "error" if self.error is not None else "ready",
        }
        if self.error is not None:
            item["error"] = {"code": self.error.code, "message": self.error.message}
        return item


class Share(threading.Event):
    """One store's share of the memory deadline, as the `cancelled` event its read checks:
    set once the request is cancelled, or once `until` (`time.monotonic()`) has passed.

    Whatever stops a read on the request's cancellation (SQLite's progress handler every
    1,000 VM steps, the checks between Python steps, the waits for a writer's lock) stops
    it at the share's end the same way, so a store that is merely slow costs its own
    share, never another store's (SPEC §4). No thread polls a clock for it: the checks
    already there read one as well as the flag."""

    def __init__(self, request: threading.Event, until: float | None = None) -> None:
        super().__init__()
        self.request = request
        self.until = until

    def is_set(self) -> bool:
        """The request is cancelled, this share was cancelled, or its time is up."""
        return (
            self.request.is_set()
            or super().is_set()
            or (self.until is not None and time.monotonic() >= self.until)
        )

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until `is_set()` or for `timeout` seconds; returns `is_set()`."""
        left = timeout
        if self.until is not None:
            rest = max(self.until - time.monotonic(), 0.0)
            left = rest if left is None else min(left, rest)
        if not self.is_set():
            self.request.wait(left)
        return self.is_set()

    def ran_out(self) -> bool:
        """This share is over while the request itself goes on."""
        return self.is_set() and not self.request.is_set()


def _check(cancelled: threading.Event) -> None:
    if cancelled.is_set():
        raise MemoryCancelled()


def _retryable(exc: StoreError) -> bool:
    return exc.code == "store_busy" or isinstance(exc, StoreChanged)


def _open(
    ref: StoreRef, cancelled: threading.Event, busy_until: float | None = None
) -> tuple[Reader, StoreInfo]:
    """Check out a reader for `ref` and start its read transaction.

    Retries, until `busy_until` (else for `BUSY_LIMIT_S`), while a writer holds the lock
    (also when a new reader must open meanwhile) and while the store's directory is
    changing under it.
    """
    if ref.problem is not None:
        raise ref.problem
    deadline = time.monotonic() + BUSY_LIMIT_S if busy_until is None else busy_until
    busy: StoreError | None = None
    while True:
        _check(cancelled)
        try:
            reader = checkout(ref.path, cancelled, dir_fd=ref.dir_fd)
        except StoreError as exc:
            if not _retryable(exc):
                raise
            if time.monotonic() >= deadline:
                # A lock held all along is the cause to report, not a reopen it prevented.
                raise (busy or exc) from None
            if isinstance(exc, StoreChanged):
                time.sleep(CHANGED_PAUSE_S)
            else:
                busy = exc
            continue
        try:
            info, reader.verified_cookie = begin_read_cookie(reader.conn, reader.verified_cookie)
            return reader, info
        except Interrupted:
            checkin(reader, reusable=False)
            raise MemoryCancelled() from None
        except StoreError as exc:
            checkin(reader, reusable=False)
            if not _retryable(exc):
                raise
            if time.monotonic() >= deadline:
                raise (busy or exc) from None
            if exc.code == "store_busy":
                busy = exc
        except BaseException:
            checkin(reader, reusable=False)
            raise


Found = tuple[tuple[ResultRow, ...], dict[str, PageBody], str | None]
"""A store's bounded rows, its bounded Page bodies by slug, the first Page hit's slug."""


class _Answers:
    """One store revision's answers so far, by (scope, query text, limit): what `_search`
    found, which a revision cannot change (the graph neighbourhood is read each time). Up
    to `ANSWERS_MAX` of them and `ANSWERS_BUDGET` characters of body heads."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str, int], Found] = {}
        self.size = 0
        self.lock = threading.Lock()

    def keep(self, what: tuple[str, str, int], found: Found) -> None:
        size = sum(len(body.head) for body in found[1].values())
        with self.lock:
            if len(self.kept) < ANSWERS_MAX and self.size + size <= ANSWERS_BUDGET:
                self.kept[what] = found
                self.size += size


ANSWERS_MAX = 1024
ANSWERS_BUDGET = 4_000_000
ANSWERS: RevisionCache[_Answers] = RevisionCache(4)
"""`_Answers` per (store path, store_id, store_revision), like `scoring.PREPARED`: a write
bumps the revision, so a question asked again after it is answered afresh."""


def _answer(
    ref: StoreRef,
    reader: Reader,
    info: StoreInfo,
    query: str,
    parsed: tuple[Sequence[QueryTerm], str],
    limit: int,
    cancelled: threading.Event,
) -> StoreAnswer:
    if not parsed[0] and page_reference(query) is None:
        return StoreAnswer(ref, info, None)
    answers = ANSWERS.get_or_build((str(ref.path), info.store_id, info.store_revision), _Answers)
    what = (ref.scope, query, limit)
    found = answers.kept.get(what)
    if found is None:
        found = _search(ref, reader, info, query, parsed, limit, cancelled)
        answers.keep(what, found)
    rows, bodies, seed = found
    neighborhood = None
    if seed is not None and graph_status(info) == "ready":
        neighborhood = bound_neighborhood(read_neighborhood(reader.conn, seed))
    # The answer's own dict: callers may add to it; the rows and bodies are frozen.
    return StoreAnswer(ref, info, None, rows, dict(bodies), neighborhood)


def _search(
    ref: StoreRef,
    reader: Reader,
    info: StoreInfo,
    query: str,
    parsed: tuple[Sequence[QueryTerm], str],
    limit: int,
    cancelled: threading.Event,
) -> Found:
    """The bounded rows and Page bodies of `query` in this store revision, and the seed."""
    conn = reader.conn
    key = (str(ref.path), info.store_id, info.store_revision)
    terms, phrase = parsed
    reference = page_reference(query)
    if reference is not None:  # a follow-up read of one Page: no search
        slug, heading, offset = reference
        rows, bodies = read_hits(conn, ref.scope, [Hit("page", slug, 0.0, "lexical")], query)
        bodies = {s: read_from(conn, bound_body(b), heading, offset) for s, b in bodies.items()}
        return tuple(map(bound_row, rows)), bodies, None

    def words() -> WordIndex:
        # One index per store revision, never one per request that arrived first at once:
        # the groups each reads are shared through it.
        return WORD_INDEXES.get_or_add(
            (reader.identity, info.store_id, info.store_revision), WordIndex
        )

    with typo_request(cancelled):
        hits = search_store(
            conn,
            terms,
            limit,
            pool=RERANK_POOL,
            degrees=lambda slugs: load_degrees(conn, slugs),
            vocabulary=lambda: words().bind(conn),
            cancelled=cancelled,
            phrase=phrase,
            cache_key=key,
            words=words,
        )
    _check(cancelled)
    query_terms = [(t.term, t.count) for t in terms]
    read: dict[str, PageRow] = {}  # the ranking's rows, which the results read no more
    hits = rerank(hits, query_terms, lambda slugs: page_heads(conn, slugs, key, read))[:limit]
    _check(cancelled)
    rows, bodies = read_hits(conn, ref.scope, hits, query, key, read)
    return (
        tuple(bound_row(row) for row in rows),
        # Keyed by the bounded slug, which is also the bounded row's identifier.
        {bounded.slug: bounded for bounded in map(bound_body, bodies.values())},
        next((row.identifier for row in rows if row.doc_type == "page"), None),
    )


def _unexpected(exc: Exception) -> StoreError:
    # Whatever a hostile or damaged store makes go wrong stays that store's problem. The
    # message names the failure's type only: its text could quote the store's contents.
    return StoreError("store_corrupt", f"the store could not be read ({type(exc).__name__})")


def _read_one(
    ref: StoreRef,
    opened: tuple[Reader, StoreInfo],
    query: str,
    parsed: tuple[Sequence[QueryTerm], str],
    limit: int,
    cancelled: threading.Event,
) -> StoreAnswer:
    reader, info = opened
    try:
        answer = _answer(ref, reader, info, query, parsed, limit, cancelled)
        # The header is checked before every transaction, but a file rewritten in between
        # could still have made SQLite read it as WAL (from a `-wal` beside it): discard.
        mode = reader.conn.execute("PRAGMA journal_mode").fetchone()
        if not mode or str(mode[0]).lower() != "delete":
            reader.broken = True
            raise StoreError("store_corrupt", "the store turned to WAL mode while it was read")
        return answer
    except MemoryCancelled:
        raise
    except sqlite3.Error as exc:
        error = translate_error(exc)
        if isinstance(error, Interrupted):
            raise MemoryCancelled() from None
        return StoreAnswer(ref, info, error)
    except StoreError as exc:
        return StoreAnswer(ref, info, exc)
    except Exception as exc:
        reader.broken = True
        return StoreAnswer(ref, info, _unexpected(exc))


def _out_of_time(ref: StoreRef) -> StoreError:
    return StoreError(
        "memory_timeout",
        f"the {ref.scope} store did not answer within its share of the memory deadline",
    )


def _close(reader: Reader) -> None:
    """End `reader`'s read transaction and hand it back (closed when unusable)."""
    reusable = not reader.broken
    try:
        if reader.conn.in_transaction:
            reader.conn.execute("ROLLBACK")
    except sqlite3.Error:
        reusable = False
    finally:
        checkin(reader, reusable=reusable)


def _turn(
    ref: StoreRef,
    share: Share,
    query: str,
    parsed: tuple[Sequence[QueryTerm], str],
    limit: int,
    busy_until: float | None,
) -> StoreAnswer:
    """One store, opened and read within `share`: its answer, or its own error (its own
    `memory_timeout` when the share runs out). Raises `MemoryCancelled` only when the
    request itself is cancelled."""
    try:
        try:
            opened = _open(ref, share, busy_until)
        except StoreError as exc:
            return StoreAnswer(ref, None, exc)
        except MemoryCancelled:
            raise
        except Exception as exc:
            return StoreAnswer(ref, None, _unexpected(exc))
        try:
            return _read_one(ref, opened, query, parsed, limit, share)
        except MemoryCancelled:
            if share.ran_out():
                return StoreAnswer(ref, opened[1], _out_of_time(ref))
            raise
        finally:
            _close(opened[0])
    except MemoryCancelled:
        if share.ran_out():
            return StoreAnswer(ref, None, _out_of_time(ref))
        raise


def query_stores(
    refs: Sequence[StoreRef],
    query: str,
    limit: int,
    cancelled: threading.Event,
    parsed: tuple[list[QueryTerm], str] | None = None,
    busy_until: float | None = None,
    deadline: float | None = None,
) -> list[StoreAnswer]:
    """Read every store in `refs` (project first), each in one read transaction.

    With a `deadline` (`time.monotonic()`), each store gets its own share of the time left
    (`ANSWER_RESERVE` of it kept for the answer): the time left divided by the stores not
    read yet, so the first of two gets half and what it leaves passes on to the next (a
    writer's lock is waited for `BUSY_SHARE` of a share at most). A store whose share runs
    out answers its own `memory_timeout` and the next one is read. The same stores give the
    same reads in the same order: only a store that runs out changes an answer.

    A project store with the global store's `store_id` is dropped (read once, as global).
    Raises `MemoryCancelled`; store failures of any kind are reported per store, never
    raised, so one store's anomaly never hides another store's results.
    """
    parsed = parsed or parse_query(query)
    end = None
    if deadline is not None:
        now = time.monotonic()
        end = deadline - ANSWER_RESERVE * max(deadline - now, 0.0)
    answers: list[StoreAnswer] = []
    for i, ref in enumerate(refs):
        share, busy = Share(cancelled), busy_until
        if end is not None:
            now = time.monotonic()
            share.until = now + max(end - now, 0.0) / (len(refs) - i)
            mine = now + BUSY_SHARE * (share.until - now)
            busy = mine if busy is None else min(busy, mine)
        answers.append(_turn(ref, share, query, parsed, limit, busy))
    ids = {a.ref.scope: a.info.store_id for a in answers if a.info is not None}
    if "project" in ids and ids.get("project") == ids.get("global"):
        answers = [a for a in answers if a.ref.scope != "project"]
    return answers


def merge_rows(answers: Sequence[StoreAnswer], limit: int) -> list[ResultRow]:
    """All stores' rows by rank, project before global on ties, Pages first, identifier."""
    rows = [row for answer in answers for row in answer.rows]
    rows.sort(key=lambda row: row.sort_key(_SCOPE_ORDER))
    return rows[:limit]


ENVELOPE = 160
"""Cost units of the result object around `memory` besides the query and path echoes
(`"codeGraph":{"state":"not_requested"}`, `partial`, `mode`, `scope`, `timings`, keys, quotes):
140 at most as written."""


STORE_ROOM = 120
"""Cost units of a `stores` entry with its longest revision, no error, and a comma."""
GRAPH_ROOM = 80
"""Cost units of a `graph` item without neighbourhood (`"engine":"disabled"`), and a comma."""


def _ready(
    answers: Sequence[StoreAnswer], q: MemoryQuery, terms: Sequence[QueryTerm]
) -> dict[str, Any]:
    limit = q.max_documents
    rows = merge_rows(answers, limit)
    by_scope = {answer.ref.scope: answer for answer in answers if answer.error is None}
    with_body = [
        row
        for row in rows
        if row.doc_type == "page" and row.identifier in by_scope[row.scope].bodies
    ]
    bodies = [by_scope[row.scope].bodies[row.identifier] for row in with_body]
    seed: ResultRow | None = next(
        (
            row
            for row in rows
            if row.doc_type == "page" and by_scope[row.scope].neighborhood is not None
        ),
        None,
    )
    graph: list[dict[str, Any]] = []
    for answer in answers:
        if answer.info is None or answer.error is not None:
            continue
        item = graph_item(answer.ref.scope, answer.info)
        if seed is not None and seed.scope == answer.ref.scope:
            item["seed"] = seed.identifier
            item["neighborhood"] = answer.neighborhood
        graph.append(item)
    # What the agent needs first (docs/mcp-reference.md): results, then Pages; metadata after.
    out: dict[str, Any] = {
        "state": "ready",
        "results": [row.to_json() for row in rows],
        "pages": [],
        "graph": graph,
        "stores": [answer.store_json() for answer in answers],
    }
    # The budget covers the whole text block: what is not a body is paid for first. Stores
    # and graph items are counted at their largest, so the bodies never depend on a
    # revision's digits or a graph status (only a neighbourhood counts as it is).
    spent = text_cost(dumps_compact({**out, "graph": [], "stores": []})) + ENVELOPE
    spent += STORE_ROOM * len(out["stores"]) + GRAPH_ROOM * len(graph)
    spent += sum(text_cost(dumps_compact(s.get("error"))) for s in out["stores"] if "error" in s)
    spent += sum(
        text_cost(dumps_compact(item["neighborhood"])) + len(item["seed"]) + 30
        for item in graph
        if "neighborhood" in item
    )
    spent += cost(q.query) + cost(str(q.project_path)) + 4
    room = q.max_tokens * UNITS_PER_TOKEN - spent
    scores = [-row.rank for row in with_body]  # `rank` is lower-is-better
    # A result whose Page comes needs no snippet (the body says more): its row gives the
    # snippet's cost back to the bodies, and carries an empty one.
    credits = [cost(row.snippet) for row in with_body]
    out["pages"] = fit_pages(bodies, [(t.term, t.count) for t in terms], room, scores, credits)
    paged = {(page["scope"], page["slug"]) for page in out["pages"]}
    for item in out["results"]:
        if item["type"] == "page" and (item["scope"], item["identifier"]) in paged:
            item["snippet"] = ""
    return out


def _wanted_scopes(q: MemoryQuery) -> list[str]:
    if q.scope == "all":
        return [scope for scope in SCOPES if scope in q.allowed_scopes]
    return [q.scope]


def _next_action(scope: str, q: MemoryQuery, command: str, ref: StoreRef | None) -> dict[str, str]:
    scoped = command != "doctor"
    prefix = "lwc --scope global " if scope == "global" and scoped else "lwc "
    # A broken store is fixed where it lives; a missing one is created where it was looked for.
    cwd = ref.root if ref is not None else (q.home if scope == "global" else q.project_path)
    return {"command": prefix + command, "cwd": str(cwd)}


def _store_above(above: StoreRef, q: MemoryQuery) -> dict[str, Any]:
    """No Wiki in the workspace, one above it: the host started the server in a subdirectory.
    Say to bind that directory; `lwc init` here would make a second, empty Wiki."""
    root = str(above.root)
    return {
        "state": "unavailable",
        "error": {
            "code": "store_not_found",
            "message": f"no project Wiki store in the workspace {q.workspace}; the project's "
            f"Wiki is above it, at {above.path}, which this server does not read: start the "
            f"server with `--path {root}` (or run `lwc agent install HOST --project` in {root}) "
            "instead of creating another Wiki here",
        },
        "nextAction": {"command": f"lwc serve --mcp --path {root}", "cwd": root},
    }


def explore_memory(q: MemoryQuery, *, cancelled: threading.Event) -> dict[str, Any]:
    """The SPEC §2.1 `memory` object for `q`.

    `{"state": "ready", "stores", "results", "pages", "graph"}`, or `unavailable` (no store for
    the requested scope, or only a store needing `lwc repair`) with `error` and `nextAction`, or
    `error` when every store failed. Raises `MemoryCancelled` once `cancelled` is set.
    """
    parsed = parse_query(q.query)
    if len(parsed[0]) > MAX_TERMS:
        # The explore pipeline refuses these before calling; never run an unbounded query anyway.
        return {
            "state": "error",
            "error": {"code": "memory_internal", "message": f"more than {MAX_TERMS} terms"},
        }
    scopes = _wanted_scopes(q)
    with Handles() as handles:
        refs: list[StoreRef] = []
        for scope in scopes:
            # All three paths are canonical already (authorizer, start-up); the walk goes
            # down from the workspace (or $HOME) by directory handles, never by name.
            if scope == "project":
                ref = handles.project(str(q.project_path), str(q.workspace), home=str(q.home))
            else:
                ref = handles.global_store(str(q.home))
            if ref is not None:
                refs.append(ref)
        if not refs:
            scope = scopes[0] if scopes else "project"
            if scope == "project":
                above = project_store_above(str(q.workspace), str(q.home))
                if above is not None:
                    return _store_above(above, q)
            return {
                "state": "unavailable",
                "error": {
                    "code": "store_not_found",
                    "message": f"no {scope} Wiki store found; create one with `lwc init`"
                    if scope == "project"
                    else "no global Wiki store found; create one with `lwc --scope global init`",
                },
                "nextAction": _next_action(scope, q, "init", None),
            }
        answers = query_stores(
            refs, q.query, q.max_documents, cancelled, parsed, q.busy_until, q.deadline
        )
    if any(answer.error is None for answer in answers):
        return _ready(answers, q, parsed[0])
    first = answers[0]
    assert first.error is not None
    error = {"code": first.error.code, "message": first.error.message}
    command = _UNAVAILABLE_ACTIONS.get(first.error.code)
    # An older format (its message names `lwc repair`, as `lwc doctor` reads it too) is
    # migrated by the CLI: guidance, never results read with the wrong analyzer.
    if first.error.code == "unsupported_store_version" and "lwc repair" in first.error.message:
        command = "repair"
    if isinstance(first.error, ForeignStoreError):
        # The same command `lwc doctor` and the CLI name for an LWC store.
        command = f"import --from-lwc {first.ref.path}"
    if command is None:
        return {"state": "error", "error": error}
    return {
        "state": "unavailable",
        "error": error,
        "nextAction": _next_action(first.ref.scope, q, command, first.ref),
    }


# Failures the user fixes with one command (the plane is `unavailable`, SPEC §3, §4). A
# broken link or a FIFO is named by `lwc doctor`; an LWC store is imported (above).
_UNAVAILABLE_ACTIONS = {"store_needs_recovery": "repair", "store_path_invalid": "doctor"}
