"""Reading a Wiki written by LWC 0.16 so that `lwc import --from-lwc PATH` can carry it over.

LWC (the Rust `llm-wiki-cli`) keeps its Wiki in one SQLite file in WAL mode with `user_version`
16 and its own tables. Pages, Sources, citations, provenance and links live in plain tables; the
search tables use FTS5 options (`contentless_delete`) that older SQLite builds cannot parse, so
they are never touched. Everything else (tags, retrieval weights and feedback, todos, plans,
changesets, temporal memory, …) has no equivalent here and is only counted.

The LWC store is never modified: its file and `-wal` are copied (O_NOFOLLOW, regular files only)
into a private temporary directory and SQLite opens the copy, so WAL content not yet checkpointed
is read and SQLite creates its `-shm` there, never beside the original. Every row is checked
(types, sizes, slugs, timestamps) before anything is written; a bad one is an `invalid_lwc_store`
error naming the table, the row and the rule.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.exchange.lwc_files import private_copy
from lwc_trio.memory.format.limits import IDENT_MAX, KIND_MAX, STAMP_MAX, SUMMARY_MAX, TITLE_MAX
from lwc_trio.memory.format.schema import lwc_header_version
from lwc_trio.memory.format.slugs import USER_PROVENANCE, slug_problem
from lwc_trio.memory.index.inputs import MAX_TEXT_BYTES, PageInput, SourceInput, source_id

__all__ = [
    "FIELD_LIMITS",
    "LwcWiki",
    "lwc_store_version",
    "read_lwc_store",
    "resolve_lwc_path",
]

Progress = Callable[[int, int], None]

# The SPEC §2 bounds a Wiki written by lwc never exceeds (characters).
FIELD_LIMITS = {
    "slug": IDENT_MAX,
    "title": TITLE_MAX,
    "summary": SUMMARY_MAX,
    "kind": KIND_MAX,
    "timestamp": STAMP_MAX,
}
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?"
)

# The tables read, with the columns read from each (LWC 0.16, `src/store/schema.rs`).
_TABLES: dict[str, tuple[str, ...]] = {
    "pages": ("slug", "title", "kind", "summary", "body", "created_at", "updated_at"),
    "sources": ("id", "title", "origin", "content", "created_at"),
    "page_sources": ("page_slug", "source_id"),
    "page_provenance": ("page_slug", "provenance"),
    "links": ("from_slug", "to_slug"),
}
# LWC tables with no lwc_trio equivalent: their rows are counted in the report, not imported.
_NOT_IMPORTED = (
    "tags", "page_tags", "retrieval_weights", "retrieval_feedback", "semantic_relations",
    "operations", "ingest_jobs", "source_path_revisions", "changesets", "memory_events",
    "memory_feedback", "todo_items", "plans", "plan_steps",
)  # fmt: skip


def _invalid(message: str) -> WikiError:
    return WikiError("invalid_lwc_store", message)


def lwc_store_version(path: Path) -> int | None:
    """LWC's `user_version` when `path` is a regular SQLite file that has one, else None.

    Reads only the 100-byte header (never through a symlink, never blocking on a FIFO), so it is
    safe on any path and tells an LWC store from an lwc_trio one without opening SQLite.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, 100)
    finally:
        os.close(fd)
    return lwc_header_version(head)


def resolve_lwc_path(path: Path) -> Path:
    """The LWC `wiki.db` that PATH names: the file, or `DIR/wiki.db`, or `DIR/.lwc/wiki.db`.

    Raises `WikiError` (`store_not_found`, `not_an_lwc_store`).
    """
    candidates = [path] if not path.is_dir() else [path / "wiki.db", path / ".lwc" / "wiki.db"]
    for candidate in candidates:
        if os.path.lexists(candidate):
            if lwc_store_version(candidate) is None:
                raise WikiError(
                    "not_an_lwc_store",
                    f"{candidate} is not an LWC store (no SQLite user_version; an lwc_trio "
                    "store needs no import)",
                )
            return candidate
    raise WikiError("store_not_found", f"no LWC store at {path}")


# ------------------------------------------------------------------------------ reading


@attrs.frozen
class LwcWiki:
    """Everything read from an LWC store, validated and mapped to lwc_trio inputs."""

    path: Path
    user_version: int
    sources: tuple[SourceInput, ...]
    pages: tuple[PageInput, ...]
    duplicate_sources: int
    citations: int
    provenance: int
    links: int
    links_to_missing_pages: int
    skipped: dict[str, int]
    not_imported: dict[str, int]


class _Blob:
    """A BLOB where text was expected (kept apart so the error can say so)."""


def _rows(conn: sqlite3.Connection, table: str, columns: tuple[str, ...]) -> Iterator[list[Any]]:
    """The rows of `table` (numbered from 1), TEXT decoded strictly, SQLite types checked."""
    select = ", ".join(f'typeof("{c}"), "{c}"' for c in columns)
    query = f'SELECT {select} FROM "{table}" NOT INDEXED'
    number = 0
    try:
        cursor = conn.execute(query)
        while (raw := cursor.fetchone()) is not None:
            number += 1
            yield [number, *_decode(raw, table, number, columns)]
    except sqlite3.Error as exc:
        where = _failing_row(conn, table, query)
        raise _invalid(f"LWC {table} {where}: cannot be read ({exc})") from None


def _decode(
    raw: tuple[object, ...], table: str, number: int, columns: tuple[str, ...]
) -> list[object]:
    row: list[object] = []
    for index, column in enumerate(columns):
        kind, value = raw[2 * index], raw[2 * index + 1]
        # typeof() is text too, so it comes back as bytes under text_factory=bytes.
        if kind == b"text" and isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise _invalid(f"LWC {table} row {number}: {column} is not valid UTF-8") from None
        elif kind == b"blob":
            value = _Blob()
        row.append(value)
    return row


def _failing_row(conn: sqlite3.Connection, table: str, query: str) -> str:
    """`row N` of the row SQLite refused to read (the cursor reads ahead, so it is searched
    again one row at a time, in the same scan order); `a row` if that is not possible."""
    try:
        rowids = [r[0] for r in conn.execute(f'SELECT rowid FROM "{table}" NOT INDEXED')]
        for number, rowid in enumerate(rowids, start=1):
            try:
                conn.execute(f"{query} WHERE rowid = ?", (rowid,)).fetchall()
            except sqlite3.Error:
                return f"row {number}"
    except sqlite3.Error:
        pass
    return "a row"


def _where(table: str, number: int, key: object = None) -> str:
    return f"LWC {table} row {number}" + (f" ({key!r})" if isinstance(key, str) else "")


def _text(
    value: object, where: str, field: str, *, limit: int | None, optional: bool = False
) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        kind = "a blob" if isinstance(value, _Blob) else "null" if value is None else "a number"
        raise _invalid(f"{where}: {field} must be text, not {kind}")
    if "\x00" in value:
        raise _invalid(f"{where}: {field} contains a NUL character")
    if limit is not None and len(value) > limit:
        raise _invalid(f"{where}: {field} is {len(value):,} characters; the limit is {limit:,}")
    if limit is None and len(value.encode("utf-8")) > MAX_TEXT_BYTES:
        raise _invalid(f"{where}: {field} is larger than 64 MiB")
    return value


def _timestamp(value: object, where: str, field: str) -> str:
    text = str(_text(value, where, field, limit=FIELD_LIMITS["timestamp"]))
    if not _TIMESTAMP.fullmatch(text):
        raise _invalid(f"{where}: {field} {text!r} is not an ISO 8601 timestamp")
    return text


def _slug(value: object, where: str, field: str) -> str:
    slug = str(_text(value, where, field, limit=FIELD_LIMITS["slug"]))
    problem = slug_problem(slug)
    if problem is not None:
        raise _invalid(f"{where}: {field} {slug!r} is not a valid slug ({problem})")
    return slug


def _name(value: object) -> str:
    """A schema string read with `text_factory=bytes` (anything else becomes empty)."""
    return bytes(value).decode("utf-8", "replace") if isinstance(value, bytes) else ""


def _check_tables(conn: sqlite3.Connection) -> dict[str, int]:
    """Refuse a store whose needed tables are missing, not plain tables, or lack a column."""
    kinds = {
        _name(name): (_name(kind), _name(sql))
        for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master")
    }
    for table, columns in _TABLES.items():
        kind, sql = kinds.get(table, ("missing", ""))
        if kind != "table" or sql.lstrip().upper().startswith("CREATE VIRTUAL"):
            raise _invalid(f"the LWC store has no plain {table!r} table (found: {kind})")
        present = {_name(row[1]) for row in conn.execute(f'PRAGMA table_info("{table}")')}
        missing = [c for c in columns if c not in present]
        if missing:
            raise _invalid(f"the LWC {table} table has no {', '.join(missing)} column")
    counts = {}
    for table in _NOT_IMPORTED:
        kind, sql = kinds.get(table, ("missing", ""))
        if kind == "table" and not sql.lstrip().upper().startswith("CREATE VIRTUAL"):
            rows = int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])
            if rows:
                counts[table] = rows
    return counts


def _read_sources(
    conn: sqlite3.Connection,
) -> tuple[dict[object, str], list[SourceInput], int]:
    """LWC source id → lwc_trio source id, the distinct Sources, and how many were duplicates."""
    mapping: dict[object, str] = {}
    seen: dict[str, SourceInput] = {}
    duplicates = 0
    for number, lwc_id, title, origin, content, created in _rows(
        conn, "sources", _TABLES["sources"]
    ):
        where = _where("sources", number)
        if type(lwc_id) is not int and not isinstance(lwc_id, str):
            raise _invalid(f"{where}: id must be an integer")
        where = f"LWC sources row {number} (id {lwc_id!r})"
        body = str(_text(content, where, "content", limit=None))
        origin_text = _text(origin, where, "origin", limit=None, optional=True)
        if isinstance(origin_text, str) and len(origin_text) > 4_096:
            raise _invalid(f"{where}: origin is longer than 4,096 characters")
        name = _text(title, where, "title", limit=FIELD_LIMITS["title"], optional=True)
        if not name or not str(name).strip():
            # LWC allows an untitled Source; lwc_trio needs a title: take the origin's name.
            name = os.path.basename(str(origin_text or "").rstrip("/")) or f"LWC source {lwc_id}"
            name = name[: FIELD_LIMITS["title"]]
        digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
        mapping[lwc_id] = source_id(digest)
        if digest in seen:
            duplicates += 1
            continue
        seen[digest] = SourceInput(
            title=str(name),
            origin=origin_text,
            content=body,
            content_hash=digest,
            created_at=_timestamp(created, where, "created_at"),
        )
    return mapping, list(seen.values()), duplicates


def read_lwc_store(path: Path, progress: Progress | None = None) -> LwcWiki:
    """Read and validate the LWC store at `path` (never modifying it). Raises `WikiError`."""
    version = lwc_store_version(path)
    if version is None:
        raise WikiError("not_an_lwc_store", f"{path} is not an LWC store")
    with private_copy(path) as copy:
        try:
            conn = sqlite3.connect(copy, isolation_level=None)
        except sqlite3.Error as exc:
            raise _invalid(f"the LWC store cannot be opened ({exc})") from None
        try:
            conn.text_factory = bytes
            conn.execute("PRAGMA trusted_schema = OFF")
            conn.execute("PRAGMA cell_size_check = ON")
            conn.execute("PRAGMA temp_store = MEMORY")
            # No single value may exceed the 64 MiB a Page body or Source may hold.
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_TEXT_BYTES + 1024)
            conn.execute("BEGIN")
            return _read(conn, path, version, progress)
        except sqlite3.Error as exc:
            raise _invalid(f"the LWC store cannot be read ({exc})") from None
        finally:
            conn.close()


def _read(conn: sqlite3.Connection, path: Path, version: int, progress: Progress | None) -> LwcWiki:
    not_imported = _check_tables(conn)
    source_map, sources, duplicates = _read_sources(conn)
    skipped = {
        "citationsOfMissingPages": 0,
        "citationsOfMissingSources": 0,
        "provenanceOfMissingPages": 0,
        "linksFromMissingPages": 0,
    }
    rows = list(_rows(conn, "pages", _TABLES["pages"]))
    slugs: set[str] = set()
    checked = []
    for number, slug, title, kind, summary, body, created, updated in rows:
        where = _where("pages", number, slug)
        slug = _slug(slug, where, "slug")
        if slug in slugs:
            raise _invalid(f"{where}: slug {slug!r} appears more than once")
        slugs.add(slug)
        title = str(_text(title, where, "title", limit=FIELD_LIMITS["title"]))
        if not title.strip():
            raise _invalid(f"{where}: title must not be empty")
        kind = _text(kind, where, "kind", limit=FIELD_LIMITS["kind"], optional=True)
        if kind is None or not str(kind).strip():
            kind = "concept"  # LWC's kind may be null; lwc_trio's default
        summary = _text(summary, where, "summary", limit=FIELD_LIMITS["summary"], optional=True)
        checked.append(
            (
                slug, title, str(kind), summary,
                str(_text(body, where, "body", limit=None)),
                _timestamp(created, where, "created_at"), _timestamp(updated, where, "updated_at"),
            )
        )  # fmt: skip
    del rows

    cites: dict[str, set[str]] = {}
    for number, page_slug, lwc_source in _rows(conn, "page_sources", _TABLES["page_sources"]):
        where = _where("page_sources", number, page_slug)
        if not isinstance(page_slug, str) or page_slug not in slugs:
            _text(page_slug, where, "page_slug", limit=FIELD_LIMITS["slug"])
            skipped["citationsOfMissingPages"] += 1
        elif lwc_source not in source_map:
            skipped["citationsOfMissingSources"] += 1
        else:
            cites.setdefault(page_slug, set()).add(source_map[lwc_source])

    claims: dict[str, set[str]] = {}
    for number, page_slug, value in _rows(conn, "page_provenance", _TABLES["page_provenance"]):
        where = _where("page_provenance", number, page_slug)
        _text(page_slug, where, "page_slug", limit=FIELD_LIMITS["slug"])
        value = str(_text(value, where, "provenance", limit=FIELD_LIMITS["kind"]))
        if value == "source-grounded":
            continue  # derived from citations, here as in LWC
        if value not in USER_PROVENANCE:
            allowed = ", ".join(sorted(USER_PROVENANCE))
            raise _invalid(f"{where}: provenance {value!r} is not one of {allowed}")
        if page_slug not in slugs:
            skipped["provenanceOfMissingPages"] += 1
        else:
            claims.setdefault(page_slug, set()).add(value)

    outgoing: dict[str, set[str]] = {}
    missing_targets = 0
    for number, source, target in _rows(conn, "links", _TABLES["links"]):
        where = _where("links", number, source)
        source = _slug(source, where, "from_slug")
        target = _slug(target, where, "to_slug")
        if source not in slugs:
            skipped["linksFromMissingPages"] += 1
            continue
        if source == target:
            continue
        outgoing.setdefault(source, set()).add(target)
        missing_targets += target not in slugs

    pages = []
    for done, (slug, title, kind, summary, body, created, updated) in enumerate(checked, 1):
        pages.append(
            PageInput(
                slug=slug, title=title, body=body, kind=kind, summary=summary,
                sources=tuple(sorted(cites.get(slug, ()))),
                provenance=tuple(sorted(claims.get(slug, ()))),
                created_at=created, updated_at=updated,
                links=tuple(sorted(outgoing.get(slug, ()))),
            )
        )  # fmt: skip
        if progress is not None and (done % 1024 == 0 or done == len(checked)):
            progress(done, len(checked))
    return LwcWiki(
        path=path,
        user_version=version,
        sources=tuple(sources),
        pages=tuple(pages),
        duplicate_sources=duplicates,
        citations=sum(len(v) for v in cites.values()),
        provenance=sum(len(v) for v in claims.values()),
        links=sum(len(v) for v in outgoing.values()),
        links_to_missing_pages=missing_targets,
        skipped={key: n for key, n in skipped.items() if n},
        not_imported=not_imported,
    )
