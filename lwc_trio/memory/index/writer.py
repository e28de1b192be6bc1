"""The write API behind the Wiki CLI: validated, atomic changes to one store (`Wiki`).

Every change runs in one `write_transaction` (BEGIN IMMEDIATE … COMMIT): refused input raises
`WikiError` before or inside the transaction and the store is left byte-for-byte unchanged
(`inputs.py` checks what is submitted). Each content write keeps the search index
(`indexing.py`, through one `IndexBuffer` a transaction) and a ready graph (`graph.py`) up
to date; a bulk import's Pages are analyzed by a second process meanwhile (`analysis.py`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from lwc_trio.exceptions import StoreError, WikiError
from lwc_trio.memory.format.limits import TITLE_MAX
from lwc_trio.memory.format.segments import MAX_SEGMENTS
from lwc_trio.memory.index import page_rows, reads
from lwc_trio.memory.index.analysis import AnalysisWorker, Analyzed
from lwc_trio.memory.index.buffer import IndexBuffer
from lwc_trio.memory.index.bulk import Ahead, batches, texts
from lwc_trio.memory.index.graph import build_projection, refresh_projection, stale_before
from lwc_trio.memory.index.indexing import (
    index_page,
    index_placed_page,
    index_source,
    reindex_all,
    unindex_doc,
)
from lwc_trio.memory.index.inputs import (
    CheckedPages,
    CheckedSources,
    PageInput,
    SourceInput,
    check_pages,
    source_id,
    validate_page,
)
from lwc_trio.memory.index.migrations import open_writer
from lwc_trio.memory.index.page_rows import PageRows
from lwc_trio.memory.index.reads import (
    GraphBuilt,
    Imported,
    PageListing,
    PageRecord,
    Repaired,
    SourceAdded,
    SourceListing,
    SourceRow,
    SourceWindow,
    StoreStatus,
)
from lwc_trio.memory.storage.store import graph_status, read_info, utc_now, write_transaction
from lwc_trio.memory.text.links import extract_links

__all__ = [
    "ANALYSIS_WORKER_PAGES",
    "IMPORT_BATCH",
    "SOURCE_BATCH_CHARS",
    "Wiki",
]

WRITER_CACHE_KIB = 64 * 1024
WAIT_NOTICE_S = 1.0
"""How long a write waits for another writer's lock before `Wiki.on_wait` is called."""
SOURCE_BATCH_CHARS = 48 * 1024 * 1024
"""Characters of Source text per transaction of `add_sources` (at least one Source each):
a transaction's postings are held in memory until it commits."""
IMPORT_BATCH = 6500
"""Pages per transaction of a bulk import. Each transaction writes one search segment row
per term it touches, so fewer, larger ones write faster and merge less (the scale Wiki's
100,000 Pages: 80 s at 5,000 a batch, 68.5 s at 6,500). A batch's texts and postings are
held in memory until its commit while the next batch is read: a 300,000-Page import peaked
at 977-983 MiB for its two processes together (docs/decisions.md, "Bulk writes, eleventh
round")."""
ANALYSIS_WORKER_PAGES = 1000
"""Pages from which `put_pages` analyzes them in a second process (`memory/index/analysis.py`)
while it writes: starting one costs a Python start-up (~0.1 s), which a `lwc page put` or a
small folder never pays."""
RECORDED_WORDS = 1_000_000
"""Words a `Wiki` remembers having written to the typo index (`_recorded`), at most."""
REPAIR_VACUUM_SHARE = 4
"""`lwc repair` rewrites the file (VACUUM) when more than 1/this of its pages are free."""
Progress = Callable[[int, int], None]


def _start_worker() -> AnalysisWorker | None:
    """A second process for a bulk import's analysis; None (analyze here) when this process
    may run on one CPU only (it would only add the cost of sending the text) or when no
    process can be started (a process limit, a sandbox)."""
    if _cpus() < 2:
        return None
    try:
        return AnalysisWorker()
    except OSError:
        return None


def _cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


class Wiki:
    """One store opened for writing by the CLI. Use as a context manager."""

    def __init__(self, path: Path, *, on_wait: Callable[[], None] | None = None) -> None:
        self.path = path
        # Called (from a timer thread) when a write has waited WAIT_NOTICE_S for another
        # writer's lock: the CLI tells the person at the terminal.
        self.on_wait = on_wait
        self.conn = open_writer(path)
        # The postings table is keyed by term, so a page's inserts land all over it: with
        # SQLite's 2 MB default cache a large import re-reads index pages constantly.
        self.conn.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KIB}")
        # Frequencies, vocabulary and statistics of the open content write (`_content_write`).
        self._buffer: IndexBuffer | None = None
        # Words whose typo-index and `search_words` rows this writer's own transactions wrote,
        # while no other write came between (`store_revision` is still `_recorded_at`): a
        # bulk import's later batches do not write them again.
        self._recorded: set[str] = set()
        self._recorded_at = -1

    def __enter__(self) -> Wiki:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (no transaction is ever left open)."""
        self.conn.close()

    @contextlib.contextmanager
    def _content_write(self, planned: Iterable[str] = ()) -> Iterator[set[str]]:
        """A content write (`write_transaction(content=True)`) that keeps a ready graph ready.

        `planned` are the slugs the caller may write or remove; it adds each one it did touch
        to the yielded set. When the graph was `ready` as the transaction began, the
        projection is brought up to date and marked built at the new `content_revision` before
        COMMIT, so readers never see the graph go `pending` because of an ordinary write
        (SPEC §4, graph upkeep).
        """
        with self._transaction(content=True):
            info = read_info(self.conn)
            if info.store_revision != self._recorded_at:
                self._recorded.clear()  # another write came between: it may have removed some
            ready = graph_status(info) == "ready"
            before = stale_before(self.conn, set(planned)) if ready else None
            touched: set[str] = set()
            self._buffer = IndexBuffer()
            try:
                yield touched
                # Document frequencies and statistics: once per transaction, not per document.
                # A term gains at most one segment a content write (`lwc repair`, not one,
                # leaves one a term): no term has more than content_revision + 1 yet.
                crowding = info.content_revision + 2 > MAX_SEGMENTS
                fresh = self._buffer.flush(self.conn, self._recorded, crowding=crowding)
            finally:
                self._buffer = None
            if ready:
                refresh_projection(self.conn, before, touched)
                # write_transaction adds one to content_revision when this block ends.
                self.conn.execute(
                    "UPDATE meta SET value = ? WHERE key = 'graph_built_revision'",
                    (str(info.content_revision + 1),),
                )
        # Committed (write_transaction added one to store_revision).
        if len(self._recorded) + len(fresh) > RECORDED_WORDS:
            self._recorded.clear()
        self._recorded.update(fresh)
        self._recorded_at = info.store_revision + 1

    @contextlib.contextmanager
    def _transaction(self, *, content: bool) -> Iterator[None]:
        """`write_transaction`, calling `on_wait` once the lock has taken WAIT_NOTICE_S."""
        timer = None
        if self.on_wait is not None:
            timer = threading.Timer(WAIT_NOTICE_S, self.on_wait)
            timer.daemon = True
            timer.start()
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(write_transaction(self.conn, content=content))
            finally:
                if timer is not None:
                    timer.cancel()
            yield

    # ------------------------------------------------------------------ pages

    def _write_page(
        self,
        page: PageInput,
        now: str,
        rows: PageRows | None = None,
        analyzed: Analyzed | None = None,
    ) -> str:
        """Insert or replace one Page in the open transaction: created, updated or unchanged.

        Its sources, provenance and links go to `rows` (written by the caller before the
        transaction ends, for every Page of it at once), else are written here. `analyzed`
        is its analysis by an `AnalysisWorker`, else it is analyzed here."""
        if analyzed is None:
            body_links = extract_links(page.body, own_slug=page.slug)
        else:
            body_links = analyzed.page.links
        planned = page_rows.plan(self.conn, page, body_links)
        existing = reads.page_record(self.conn, page.slug)
        if planned.matches(page, existing):
            return "unchanged"
        created_at = page.created_at or (existing["createdAt"] if existing else now)
        if existing is not None:  # while its old text is still there to analyze
            unindex_doc(self.conn, "page", page.slug, self._buffer)
        self.conn.execute(
            "INSERT OR REPLACE INTO pages (slug, title, kind, summary, body, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (page.slug, page.title, page.kind, page.summary, page.body, created_at,
             page.updated_at or now),
        )  # fmt: skip
        own = rows or PageRows()
        own.add(page.slug, planned)
        if rows is None:
            own.write(self.conn)
        if analyzed is None:
            index_page(self.conn, page.slug, page.title, page.summary, page.body, self._buffer)
        else:
            assert self._buffer is not None  # inside `_content_write`
            index_placed_page(self.conn, page.slug, analyzed.page, analyzed.place, self._buffer)
        return "updated" if existing else "created"

    def put_pages(
        self,
        pages: Sequence[PageInput] | CheckedPages,
        *,
        batch: int = IMPORT_BATCH,
        progress: Progress | None = None,
    ) -> dict[str, int]:
        """Write `pages`, one transaction per `batch`; counts by outcome.

        Every Page is validated before the first transaction, so bad input changes nothing
        (`CheckedPages` were checked as they were opened; they are read again as a stream, one
        batch in memory at a time). Raises `WikiError` (the failing batch is rolled back).
        """
        if not isinstance(pages, CheckedPages):
            check_pages(pages)
        counts = {"created": 0, "updated": 0, "unchanged": 0}
        total = len(pages)
        done = 0
        worker = _start_worker() if total >= ANALYSIS_WORKER_PAGES else None
        try:
            ahead = Ahead(batches(pages, batch))
            chunk = ahead.next()
            if worker is not None and chunk:
                worker.submit(texts(chunk))
            while chunk:
                now = utc_now()
                outcomes: list[str] = []
                try:
                    with self._content_write(page.slug for page in chunk) as touched:
                        rows = PageRows()
                        outcomes = [
                            self._write_page(
                                page, now, rows, None if worker is None else worker.take()
                            )
                            for page in chunk
                        ]
                        rows.write(self.conn)
                        touched.update(page.slug for page in chunk)
                        if worker is not None:
                            # The next batch is analyzed while this one is flushed.
                            upcoming = ahead.peek()
                            if upcoming:
                                worker.submit(texts(upcoming))
                        if all(outcome == "unchanged" for outcome in outcomes):
                            # Nothing changed: roll back so the revision does not move.
                            if worker is not None:
                                worker.discard()
                            raise _NothingToDo()
                        if worker is not None:
                            # The worker groups and encodes the postings at the flush.
                            assert self._buffer is not None
                            self._buffer.add_part(worker.batch())
                except _NothingToDo:
                    pass
                for outcome in outcomes:
                    counts[outcome] += 1
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
                chunk = ahead.next()
        finally:
            if worker is not None:
                worker.close()
        return counts

    def put_page(self, page: PageInput) -> str:
        """Write one Page atomically: 'created', 'updated' or 'unchanged'."""
        counts = self.put_pages([page])
        return next(outcome for outcome, n in counts.items() if n)

    def get_page(self, slug: str) -> PageRecord:
        """The full Page. Raises `WikiError(page_not_found)`."""
        page = reads.page_record(self.conn, slug)
        if page is None:
            raise WikiError("page_not_found", f"no page {slug!r}")
        return page

    def list_pages(self) -> list[PageListing]:
        """Every Page's metadata, sorted by slug."""
        return reads.list_pages(self.conn)

    def remove_page(self, slug: str) -> None:
        """Delete a Page with its citations, provenance and outgoing links."""
        with self._content_write([slug]) as touched:
            touched.add(slug)
            if self.conn.execute("SELECT 1 FROM pages WHERE slug = ?", (slug,)).fetchone() is None:
                raise WikiError("page_not_found", f"no page {slug!r}")
            unindex_doc(self.conn, "page", slug, self._buffer)  # before its text goes
            self.conn.execute("DELETE FROM pages WHERE slug = ?", (slug,))
            for table, column in (
                ("page_sources", "page_slug"),
                ("page_provenance", "page_slug"),
                ("links", "from_slug"),
            ):
                self.conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (slug,))

    # ---------------------------------------------------------------- sources

    def _write_source(self, source: SourceInput, now: str) -> SourceAdded:
        """Store one Source in the open transaction unless its content is stored already."""
        ident = source_id(source.content_hash)
        row = self.conn.execute(
            "SELECT id, title FROM sources WHERE content_hash = ?", (source.content_hash,)
        ).fetchone()
        if row is not None:
            return {"id": row[0], "title": row[1], "created": False}
        self.conn.execute(
            "INSERT INTO sources (id, content_hash, title, origin, content, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (ident, source.content_hash, source.title, source.origin, source.content,
             source.created_at or now),
        )  # fmt: skip
        index_source(self.conn, ident, source.title, source.origin, source.content, self._buffer)
        return {"id": ident, "title": source.title, "created": True}

    def add_sources(
        self,
        sources: Sequence[SourceInput] | CheckedSources,
        *,
        progress: Progress | None = None,
    ) -> list[SourceAdded]:
        """Store Source snapshots, deduplicated by SHA-256, one transaction per
        `SOURCE_BATCH_CHARS` of text (a folder of any size is written with bounded memory).

        Every title is checked before the first transaction. Raises `WikiError`.
        """
        for source in sources.titles() if isinstance(sources, CheckedSources) else sources:
            title = source if isinstance(source, str) else source.title
            if len(title) > TITLE_MAX:
                raise WikiError(
                    "invalid_source",
                    f"a source title has {len(title)} characters (at most {TITLE_MAX})",
                )
        out: list[SourceAdded] = []
        total = len(sources)
        pending = iter(sources)
        while True:
            batch: list[SourceAdded] = []
            now = utc_now()
            try:
                # New Sources are cited by no Page yet: nothing in the graph changes.
                with self._content_write():
                    chars = 0
                    for source in pending:
                        batch.append(self._write_source(source, now))
                        chars += len(source.content)
                        if progress is not None:
                            progress(len(out) + len(batch), total)
                        if chars >= SOURCE_BATCH_CHARS:
                            break
                    if not any(item["created"] for item in batch):
                        raise _NothingToDo()
            except _NothingToDo:
                pass
            out.extend(batch)
            if not batch or len(out) == total:
                return out

    def put_everything(
        self,
        sources: Sequence[SourceInput],
        pages: Sequence[PageInput],
        *,
        progress: Progress | None = None,
    ) -> Imported:
        """Write Sources then Pages in ONE transaction (`lwc import --from-lwc`): all or nothing.

        Every Page is validated first. Returns `{"sources": {"created", "existing"}, "pages":
        {"created", "updated", "unchanged"}}`. Raises `WikiError`; nothing is written then.
        """
        for page in pages:
            validate_page(page)
        if len({page.slug for page in pages}) != len(pages):
            raise WikiError("invalid_page", "a slug appears more than once")
        now = utc_now()
        added: list[SourceAdded] = []
        outcomes: list[str] = []
        try:
            with self._content_write(page.slug for page in pages) as touched:
                added = [self._write_source(source, now) for source in sources]
                rows = PageRows()
                for done, page in enumerate(pages, start=1):
                    outcome = self._write_page(page, now, rows)
                    outcomes.append(outcome)
                    if outcome != "unchanged":
                        touched.add(page.slug)
                    if progress is not None and (done % 256 == 0 or done == len(pages)):
                        progress(done, len(pages))
                rows.write(self.conn)
                if not touched and not any(item["created"] for item in added):
                    raise _NothingToDo()
        except _NothingToDo:
            pass
        created = sum(1 for item in added if item["created"])
        return {
            "sources": {"created": created, "existing": len(added) - created},
            "pages": {key: outcomes.count(key) for key in ("created", "updated", "unchanged")},
        }

    def get_source(self, ident: str, *, offset: int, max_chars: int) -> SourceWindow:
        """A window of a Source's text. Raises `WikiError(source_not_found)`."""
        window = reads.source_window(self.conn, ident, offset=offset, max_chars=max_chars)
        if window is None:
            raise WikiError("source_not_found", f"no source {ident!r}")
        return window

    # ------------------------------------------------------------ graph, meta

    def status(self) -> StoreStatus:
        """Store id, revisions, counts and graph state."""
        return reads.store_status(self.conn, self.path)

    def set_graph_enabled(self, enabled: bool) -> bool:
        """Enable or disable the document graph; False when it already was."""
        if read_info(self.conn).graph_enabled == enabled:
            return False
        with self._transaction(content=False):
            self.conn.execute(
                "UPDATE meta SET value = ? WHERE key = 'graph_enabled'", ("1" if enabled else "0",)
            )
        return True

    def build_graph(self, progress: Progress | None = None) -> GraphBuilt:
        """Rebuild the projection at the current `content_revision`.

        Raises `WikiError(graph_disabled)` when the graph is not enabled.
        """
        if not read_info(self.conn).graph_enabled:
            raise WikiError(
                "graph_disabled",
                "the document graph is disabled; run `lwc config set --graph enabled`",
            )
        with self._transaction(content=False):
            pairs = build_projection(self.conn, progress)
            revision = read_info(self.conn).content_revision
            self.conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('graph_built_revision', ?)",
                (str(revision),),
            )
        return {"builtRevision": revision, "related": pairs, **self.status()}

    def repair(self) -> Repaired:
        """Check integrity and rebuild the search index (opening already rolled back a journal).

        Raises `StoreError(store_corrupt)` when SQLite's integrity check fails.
        """
        problems = [row[0] for row in self.conn.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise StoreError("store_corrupt", "integrity check failed: " + "; ".join(problems[:5]))
        with self._transaction(content=False):
            reindexed = self._reindex()
        free = int(self.conn.execute("PRAGMA freelist_count").fetchone()[0])
        pages = int(self.conn.execute("PRAGMA page_count").fetchone()[0])
        if free * REPAIR_VACUUM_SHARE > pages:
            # A store migrated to a smaller format (or after many removals) keeps its old size
            # as free pages until it is rewritten: repair gives the space back.
            self.conn.execute("VACUUM")
        return {"integrity": "ok", "reindexed": reindexed, **self.status()}

    def _reindex(self) -> int:
        return reindex_all(self.conn)

    def source_ids(self) -> set[str]:
        """The ids of every stored Source."""
        return {row[0] for row in self.conn.execute("SELECT id FROM sources")}

    def iter_sources(self) -> Iterator[SourceRow]:
        """Every Source `(id, title, origin, content_hash, created_at, content)` by id."""
        return reads.source_rows(self.conn)

    def list_sources(self) -> list[SourceListing]:
        """Every Source's id, title, origin, length and creation time (no content), by id."""
        return reads.list_sources(self.conn)

    def remove_source(self, ident: str) -> None:
        """Delete a Source no Page cites. Raises `WikiError(source_not_found|source_in_use)`."""
        with self._content_write():
            if self.conn.execute("SELECT 1 FROM sources WHERE id = ?", (ident,)).fetchone() is None:
                raise WikiError("source_not_found", f"no source {ident!r}")
            citing = [
                row[0]
                for row in self.conn.execute(
                    "SELECT page_slug FROM page_sources WHERE source_id = ? ORDER BY page_slug "
                    "LIMIT 4",
                    (ident,),
                )
            ]
            if citing:
                raise WikiError(
                    "source_in_use",
                    f"source {ident!r} is cited by page {', '.join(map(repr, citing[:3]))}"
                    f"{' and more' if len(citing) > 3 else ''}; remove those citations first",
                )
            unindex_doc(self.conn, "source", ident, self._buffer)  # before its text goes
            self.conn.execute("DELETE FROM sources WHERE id = ?", (ident,))


class _NothingToDo(Exception):
    """Raised inside a write transaction to roll it back when nothing changed."""
