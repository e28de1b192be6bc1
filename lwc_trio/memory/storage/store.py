"""Opening stores: the read-only reader the server uses and the writer the CLI uses.

Readers open `file:...?mode=ro` with `query_only` and `trusted_schema=OFF`, refuse anything but a
rollback-journal SQLite file before SQLite sees it, and check `format_version` and the exact
schema before any query. They never create a file. The writer uses a rollback journal (never WAL)
and short `BEGIN IMMEDIATE` transactions that bump `store_revision` on every write and
`content_revision` on Page, Source and link changes.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sqlite3
import stat
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import attrs

from lwc_trio.exceptions import MemoryCancelled, StoreError
from lwc_trio.memory.format.schema import (
    DDL,
    FORMAT_VERSION,
    check_header,
    check_schema,
    parse_count,
    read_format_version,
)
from lwc_trio.memory.storage.handles import open_checked

__all__ = [
    "READ_BUSY_SLICE_MS",
    "STORE_PATH_MAX",
    "WRITE_BUSY_TIMEOUT_S",
    "Interrupted",
    "StoreInfo",
    "begin_read",
    "begin_read_cookie",
    "check_file",
    "check_path_length",
    "connect_writer",
    "create_store",
    "graph_status",
    "open_reader",
    "opening_error",
    "read_info",
    "translate_error",
    "utc_now",
    "version_error",
    "write_transaction",
]

# Readers wait for a writer's lock in short slices so that a cancelled query notices within
# one slice (the progress handler does not run while SQLite sleeps in its busy handler).
READ_BUSY_SLICE_MS = 50
# Writers queue behind each other; CLI writes are short, so 10 s is generous.
WRITE_BUSY_TIMEOUT_S = 10.0
# Page cache of one read-only connection, in KiB (SQLite's default is 2,000).
READER_CACHE_KIB = 1024
STORE_PATH_MAX = 480
"""Bytes of a store file's path, symlinks resolved, that lwc opens. SQLite's unix VFS takes
paths of at most 512 bytes and resolves symlinks (even `/proc/self/fd/N/...`) back to the
textual path first, so a longer path cannot be reached through a handle; the margin holds
`-journal` and `lwc init`'s temporary file beside `wiki.db` (docs/decisions.md)."""
# The progress handler runs every this many SQLite VM steps.
PROGRESS_STEPS = 1000
STORE_ID_MAX = 256
"""A `store_id` is an identifier in answers (SPEC §2: ≤ 256 characters); longer is corrupt."""

_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_INTERRUPT = 9
_SQLITE_CANTOPEN = 14
_SQLITE_READONLY_ROLLBACK = 776  # a hot journal a read-only connection cannot roll back


Interrupted = MemoryCancelled
"""The progress handler stopped a statement because the query was cancelled: the memory
package's one cancellation error, under the name this module has always used."""


@attrs.frozen
class StoreInfo:
    """What `meta` says about a store, read inside the current transaction."""

    store_id: str
    store_revision: int
    content_revision: int
    graph_enabled: bool
    graph_built_revision: int | None


def graph_status(info: StoreInfo) -> str:
    """`disabled`, `pending` or `ready` for a store's current meta: the projection
    (`graph_related`) is ready once built at the current `content_revision`."""
    if not info.graph_enabled:
        return "disabled"
    if info.graph_built_revision != info.content_revision:
        return "pending"
    return "ready"


def utc_now() -> str:
    """The current time as `YYYY-MM-DDTHH:MM:SSZ` (what `created_at`/`updated_at` hold)."""
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def translate_error(exc: sqlite3.Error) -> StoreError | Interrupted:
    """Map an SQLite failure to a SPEC memory error code (or to `Interrupted`)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if code == _SQLITE_READONLY_ROLLBACK:
        return StoreError(
            "store_needs_recovery",
            "the store has a leftover journal from an interrupted write; run `lwc repair`",
        )
    if primary == _SQLITE_INTERRUPT:
        return Interrupted()
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return StoreError("store_busy", "the store is locked by a writer")
    if primary == _SQLITE_CANTOPEN:
        return StoreError("store_not_found", "the store file could not be opened")
    return StoreError("store_corrupt", f"the store could not be read ({_bounded(exc)})")


ERROR_DETAIL_MAX = 200
"""Characters of an SQLite message quoted in an error (a hostile store picks its names)."""


def _bounded(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= ERROR_DETAIL_MAX else text[: ERROR_DETAIL_MAX - 1] + "…"


def _open_nofollow(path: Path) -> int:
    # O_NOFOLLOW: the caller checked for symlinks, but the file could be swapped since;
    # O_NONBLOCK: a FIFO swapped in must not block the open.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise StoreError("store_not_found", "the store file does not exist") from None
    except OSError as exc:
        message = f"the store file cannot be opened ({exc.strerror})"
        raise StoreError("store_path_invalid", message) from None


def _read_head(path: Path) -> bytes:
    fd = _open_nofollow(path)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StoreError("store_path_invalid", "the store path is not a regular file")
        return os.read(fd, 100)
    finally:
        os.close(fd)


def check_file(path: Path) -> tuple[int, int]:
    """Check the file is still a rollback-journal SQLite store; return its (device, inode).

    Raises `StoreError` when it is not (missing, not a regular file, WAL mode, not SQLite).
    """
    fd = _open_nofollow(path)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StoreError("store_path_invalid", "the store path is not a regular file")
        check_header(os.read(fd, 100))
        return info.st_dev, info.st_ino
    finally:
        os.close(fd)


def check_path_length(path: Path) -> None:
    """Refuse a store whose path SQLite cannot open: `store_path_invalid` naming the bound
    (SQLite would say `unable to open database file`, read as a missing or corrupt store)."""
    real = os.fsencode(os.path.realpath(path))
    if len(real) > STORE_PATH_MAX:
        tail = os.fsdecode(real[-48:])
        raise StoreError(
            "store_path_invalid",
            f"the store path (…{tail}) is {len(real)} bytes long with symlinks resolved; "
            f"SQLite opens paths of at most {STORE_PATH_MAX} bytes: move the project to a "
            "shorter path or use the global Wiki (`--scope global`)",
        )


def open_reader(
    path: Path,
    cancelled: threading.Event | None = None,
    *,
    expected: tuple[int, int] | None = None,
) -> sqlite3.Connection:
    """Open `path` read-only for this thread. Raises `StoreError`.

    With `cancelled`, every statement is interrupted (`Interrupted`) once the event is set.
    With `expected` (the server), the header was checked through a directory handle and the
    connection is kept only when SQLite opened exactly that (device, inode): see
    `handles.open_checked` (raises `StoreChanged` otherwise). Without it (`lwc doctor`, a
    CLI process) the header is checked by path first.
    """
    # readonly_shm: should the header turn to WAL between the check and SQLite's own read,
    # SQLite must not create a `-shm` (the WAL case is then refused after reading).
    uri = f"file:{quote(str(path))}?mode=ro&readonly_shm=1"

    def connect() -> sqlite3.Connection:
        # check_same_thread=False: used by one thread at a time, but the pool may close it
        # from another (see `pool._close`).
        return sqlite3.connect(
            uri,
            uri=True,
            isolation_level=None,
            timeout=READ_BUSY_SLICE_MS / 1000,
            check_same_thread=False,
        )

    check_path_length(path)
    try:
        if expected is None:
            check_header(_read_head(path))
            conn = connect()
        else:
            conn = open_checked(connect, expected)
    except sqlite3.Error as exc:
        raise translate_error(exc) from None
    try:
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("PRAGMA cell_size_check = ON")
        # Sorts and temporary indexes stay in memory: a reader creates no file anywhere.
        conn.execute("PRAGMA temp_store = MEMORY")
        # Pooled readers live for hours, one set per worker thread: cap each page cache
        # (the OS file cache is shared and serves re-reads cheaply).
        conn.execute(f"PRAGMA cache_size = -{READER_CACHE_KIB}")
    except sqlite3.Error as exc:
        conn.close()
        raise translate_error(exc) from None
    if cancelled is not None:
        event = cancelled
        conn.set_progress_handler(lambda: 1 if event.is_set() else 0, PROGRESS_STEPS)
    return conn


def read_info(conn: sqlite3.Connection) -> StoreInfo:
    """Parse `meta` (the schema has been checked). Raises `StoreError(store_corrupt)`."""
    return _parse_info(dict(conn.execute("SELECT key, value FROM meta").fetchall()))


def _parse_info(values: dict[object, object]) -> StoreInfo:
    """`StoreInfo` from the `meta` rows. Raises `StoreError(store_corrupt)`."""

    def integer(key: str, *, required: bool = True) -> int | None:
        raw = values.get(key)
        if raw is None and not required:
            return None
        number = parse_count(raw)
        if number is None:
            raise StoreError("store_corrupt", f"the store's meta value {key!r} is invalid")
        return number

    store_id = values.get("store_id")
    if not isinstance(store_id, str) or not 0 < len(store_id) <= STORE_ID_MAX:
        raise StoreError("store_corrupt", "the store has no valid store_id")
    store_revision = integer("store_revision")
    content_revision = integer("content_revision")
    assert store_revision is not None and content_revision is not None
    return StoreInfo(
        store_id=store_id,
        store_revision=store_revision,
        content_revision=content_revision,
        graph_enabled=values.get("graph_enabled") == "1",
        graph_built_revision=integer("graph_built_revision", required=False),
    )


def begin_read(conn: sqlite3.Connection, verified_cookie: int | None = None) -> StoreInfo:
    """Start the one read transaction and check format and schema before any other query.

    `verified_cookie` is the `schema_version` at which this connection last passed the full
    schema check: while SQLite reports the same cookie the schema cannot have changed, so a
    pooled connection skips the (comparatively costly) object-by-object comparison.
    Raises `StoreError` (`unsupported_store_version`, `store_corrupt`, ...) or `Interrupted`;
    sqlite3 errors are translated. The caller ends the transaction with ROLLBACK.
    """
    return begin_read_cookie(conn, verified_cookie)[0]


def begin_read_cookie(
    conn: sqlite3.Connection, verified_cookie: int | None = None
) -> tuple[StoreInfo, int]:
    """`begin_read`, also returning the schema cookie the checks were made against."""
    try:
        conn.execute("BEGIN")
        cookie = int(conn.execute("PRAGMA schema_version").fetchone()[0])
        if cookie != verified_cookie:
            # `meta` itself first: a store of another format must say so, not "corrupt".
            version = read_format_version(conn)
            if version != FORMAT_VERSION:
                raise version_error(version)
            check_schema(conn)
        # With the cookie unchanged, `meta` is still the table verified above, and one read
        # of it gives both the format version (a value a writer can change) and the info.
        rows = tuple(conn.execute("SELECT key, value FROM meta").fetchall())
        known = _INFOS.get(rows)
        if known is not None:
            return known, cookie
        values = dict(rows)
        current = parse_count(values.get("format_version"))
        if current is None:
            raise StoreError("store_corrupt", "the store has no valid format_version")
        if current != FORMAT_VERSION:
            raise version_error(current)
        info = _parse_info(values)
        if len(_INFOS) >= _INFOS_MAX:
            _INFOS.clear()
        _INFOS[rows] = info
        return info, cookie
    except sqlite3.Error as exc:
        raise translate_error(exc) from None


_INFOS: dict[tuple[tuple[object, object], ...], StoreInfo] = {}
"""`meta` rows already checked and parsed by `begin_read_cookie` -> their `StoreInfo`
(frozen): the same rows always give the same info, and a store's rows change only with a
write (its revision). Shared by all threads (dict reads and writes are atomic)."""
_INFOS_MAX = 256


def version_error(version: int) -> StoreError:
    """`unsupported_store_version` for a store of another format than this lwc's."""
    if version > FORMAT_VERSION:
        return StoreError(
            "unsupported_store_version",
            f"the store has format {version}; this lwc reads format {FORMAT_VERSION} (upgrade lwc)",
        )
    return StoreError(
        "unsupported_store_version",
        f"the store has the older format {version}; run `lwc repair` to migrate it "
        f"to format {FORMAT_VERSION}",
    )


# --------------------------------------------------------------------------- writer side


def create_store(path: Path) -> bool:
    """Create an empty current-format store at `path`; False when one already exists.

    Built in a temporary file next to `path` and linked into place, so a crash never leaves a
    half-made store and two concurrent `lwc init` never clobber each other.
    """
    if os.path.lexists(path):
        return False
    check_path_length(path)
    tmp = path.with_name(f".{path.name}.init-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = DELETE")
            conn.execute("BEGIN IMMEDIATE")
            for statement in DDL:
                conn.execute(statement)
            meta = {
                "format_version": str(FORMAT_VERSION),
                "store_id": uuid.uuid4().hex,
                "store_revision": "0",
                "content_revision": "0",
                "graph_enabled": "0",
                "created_at": utc_now(),
            }
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", sorted(meta.items()))
            conn.execute("COMMIT")
        finally:
            conn.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def connect_writer(path: Path) -> sqlite3.Connection:
    """A connection for writing to the existing store at `path`: a regular file (no symlink)
    with a rollback-journal SQLite header. Its format and schema are not checked yet: the
    writer migrates an older store first (`index/migrations.open_writer`). Raises
    `StoreError`.

    Connecting rolls back a leftover hot journal (SQLite does it on first read), which is
    what `lwc repair` relies on.
    """
    try:
        st = path.lstat()
    except FileNotFoundError:
        raise StoreError("store_not_found", f"no Wiki store at {path}") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise StoreError("store_path_invalid", f"{path} is not a regular file")
    check_path_length(path)
    check_header(_read_head(path))
    conn = sqlite3.connect(path, isolation_level=None, timeout=WRITE_BUSY_TIMEOUT_S)
    try:
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("PRAGMA cell_size_check = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
    except sqlite3.Error as exc:
        conn.close()
        raise opening_error(exc) from None
    return conn


def opening_error(exc: sqlite3.Error) -> StoreError:
    """What an SQLite failure while a writer opens a store is (`store_busy` when it is not
    a store error)."""
    error = translate_error(exc)
    return error if isinstance(error, StoreError) else StoreError("store_busy", str(exc))


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection, *, content: bool) -> Iterator[None]:
    """One atomic write: `BEGIN IMMEDIATE` ... bump revisions ... `COMMIT`.

    `content=True` also bumps `content_revision` (Page, Source or link changes). Every exception,
    Ctrl-C included, rolls back: the previous revision stays intact.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        raise _write_error(exc) from None
    try:
        yield
        keys = ("store_revision", "content_revision") if content else ("store_revision",)
        conn.executemany(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = ?",
            [(key,) for key in keys],
        )
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise _write_error(exc) from None
        raise


def _write_error(exc: sqlite3.Error) -> StoreError:
    error = translate_error(exc)
    if isinstance(error, StoreError):
        if error.code == "store_busy":
            return StoreError("store_busy", "another lwc command is writing this store; retry")
        return error
    return StoreError("store_busy", str(exc))
