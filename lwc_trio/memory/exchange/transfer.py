"""Plain-text forms of a Wiki: JSONL and Markdown with front matter, for import and export.

A Page file is `---`, one `key: <JSON value>` line per field (a YAML subset any YAML reader
accepts), `---`, then the body verbatim. Export writes keys in a fixed order with sorted lists,
so the same store always exports to the same bytes and diffs well under version control.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
import weakref
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.exchange import walk
from lwc_trio.memory.exchange.walk import Skipped
from lwc_trio.memory.format.slugs import is_valid_slug, shown_name
from lwc_trio.memory.index.inputs import (
    MAX_TEXT_BYTES,
    CheckedPages,
    CheckedSources,
    PageInput,
    SourceInput,
    decode_source,
    validate_page,
)

Progress = Callable[[int, int], None]

__all__ = [
    "PAGE_KEYS",
    "SOURCE_KEYS",
    "JsonlPages",
    "SourceFiles",
    "format_front_matter",
    "optional_text",
    "page_from_mapping",
    "parse_front_matter",
    "parse_jsonl",
    "parse_page_file",
    "parse_page_text",
    "read_source_inputs",
    "read_text",
]

PAGE_KEYS = (
    "slug", "title", "kind", "summary", "sources", "provenance", "created_at", "updated_at",
    "links",
)  # fmt: skip
"""A Page's fields in an export's front matter and a JSONL record, in that order. `links`
(optional) are the Page's links as recorded, kept instead of those its body gives: an
export carries them, so a folder import's resolved links survive the round trip."""
SOURCE_KEYS = ("id", "title", "origin", "content_hash", "created_at")
_FENCE = "---"


def format_front_matter(fields: Mapping[str, object], keys: tuple[str, ...], body: str) -> str:
    """A document: front matter with `keys` in order (JSON values), then `body` verbatim."""
    lines = [_FENCE]
    lines += [f"{key}: {json.dumps(fields.get(key), ensure_ascii=False)}" for key in keys]
    lines.append(_FENCE)
    return "\n".join(lines) + "\n" + body


def parse_front_matter(text: str, *, name: str) -> tuple[dict[str, object], str] | None:
    """`(fields, body)` of a document with front matter, None when it has none."""
    if not text.startswith(_FENCE + "\n"):
        return None
    end = text.find("\n" + _FENCE + "\n", len(_FENCE))
    if end < 0:
        raise WikiError("invalid_import", f"{name}: front matter is not closed by '---'")
    fields: dict[str, object] = {}
    for number, line in enumerate(text[len(_FENCE) + 1 : end].split("\n"), start=2):
        if not line.strip():
            continue
        key, sep, raw = line.partition(":")
        if not sep:
            raise WikiError("invalid_import", f"{name}:{number}: expected 'key: value'")
        try:
            fields[key.strip()] = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            # Bare YAML scalars (`kind: concept`) are accepted as strings.
            fields[key.strip()] = raw.strip()
    return fields, text[end + len(_FENCE) + 2 :]


def _text(value: object, field: str, where: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise WikiError("invalid_import", f"{where}: {field} must be a string")
    return value


def optional_text(value: object, field: str, where: str) -> str | None:
    """`value` when it is a string or None. Raises `WikiError` naming `field` otherwise."""
    return _text(value, field, where, optional=True)


def _strings(value: object, field: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise WikiError("invalid_import", f"{where}: {field} must be a list of strings")
    return tuple(value)


def page_from_mapping(fields: Mapping[str, object], *, where: str) -> PageInput:
    """A `PageInput` from decoded fields (`body` included). Raises `WikiError`."""
    unknown = sorted(set(fields) - {*PAGE_KEYS, "body"})
    if unknown:
        raise WikiError("invalid_import", f"{where}: unknown field {unknown[0]!r}")
    for required in ("slug", "title", "body"):
        if required not in fields:
            raise WikiError("invalid_import", f"{where}: missing field {required!r}")
    return PageInput(
        slug=_text(fields["slug"], "slug", where) or "",
        title=_text(fields["title"], "title", where) or "",
        body=_text(fields["body"], "body", where) or "",
        kind=_text(fields.get("kind", "concept"), "kind", where) or "",
        summary=_text(fields.get("summary"), "summary", where, optional=True),
        sources=_strings(fields.get("sources"), "sources", where),
        provenance=_strings(fields.get("provenance"), "provenance", where),
        created_at=_text(fields.get("created_at"), "created_at", where, optional=True),
        updated_at=_text(fields.get("updated_at"), "updated_at", where, optional=True),
        body_links=_links(fields.get("links"), where),
    )


def _links(value: object, where: str) -> tuple[str, ...] | None:
    """A record's `links`: None when absent (the body's are extracted), else slugs."""
    if value is None:
        return None
    links = _strings(value, "links", where)
    for index, link in enumerate(links):
        if not is_valid_slug(link):
            raise WikiError(
                "invalid_import", f"{where}: links[{index}] {shown_name(link)} is not a slug"
            )
    return links


def read_text(path: Path) -> str:
    """A UTF-8 file of at most 64 MiB. Raises `WikiError`."""
    with path.open("rb") as handle:
        data = handle.read(MAX_TEXT_BYTES + 1)
    if len(data) > MAX_TEXT_BYTES:
        raise WikiError("invalid_import", f"{path} is larger than 64 MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise WikiError("invalid_import", f"{path} is not UTF-8") from None


def parse_page_file(path: Path) -> PageInput:
    """A Page from a Markdown file (see `parse_page_text`)."""
    return parse_page_text(read_text(path), name=str(path), stem=path.stem)


def parse_page_text(text: str, *, name: str, stem: str) -> PageInput:
    """A Page from a Markdown file's text; without front matter the slug is the file name's
    `stem` and the title the first `# ` heading (or the stem). Raises `WikiError`."""
    parsed = parse_front_matter(text, name=name)
    if parsed is not None:
        fields, body = parsed
        fields.setdefault("slug", stem)
        return page_from_mapping({**fields, "body": body}, where=name)
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), stem)
    return page_from_mapping({"slug": stem, "title": title, "body": text}, where=name)


class JsonlPages(CheckedPages):
    """The Pages of a JSON Lines file, read as a stream (any size; each record at most
    64 MiB): one object per non-blank line.

    The file is read once, when this is made: each record is checked (JSON, fields,
    `validate_page`, slugs distinct; only the slugs are kept) and its line copied to a
    private spool file, so bad input is refused before anything is written. Iterating reads
    the spool, never the file again: what is written is exactly what was checked, even when
    the file changes meanwhile (a producer still appending, or someone on purpose), and a
    bulk import holds one write batch in memory, not the file. Lines added to the file after
    that one read are not imported. The spool is an unnamed file (unlinked at once where the
    system cannot create it nameless) in `spool_dir` — the store's own folder, on disk, where
    a temporary folder in memory (tmpfs) would turn a large file into memory. Raises
    `WikiError`.
    """

    def __init__(self, path: Path, *, spool_dir: Path) -> None:
        self.path = path
        try:
            # Held open for this object's life (closed by `close` or with the object).
            self._spool = tempfile.TemporaryFile(dir=spool_dir, prefix=".import-")  # noqa: SIM115
        except OSError as exc:
            raise WikiError(
                "invalid_import", f"cannot make a spool file in {spool_dir} ({exc.strerror})"
            ) from None
        # Closed with the object (or by `close`), never left to the garbage collector's warning.
        self._closer = weakref.finalize(self, self._spool.close)
        try:
            with path.open("rb") as handle:
                self._count = self._check(handle)
            self._spool.flush()
        except BaseException:
            self._closer()
            raise

    def _check(self, handle: BinaryIO) -> int:
        seen: dict[str, int] = {}
        for number, line, page in _records(handle, str(self.path)):
            validate_page(page)
            first = seen.setdefault(page.slug, number)
            if first != number:
                raise WikiError(
                    "invalid_page",
                    f"{self.path}:{number}: slug {shown_name(page.slug)} appears more than once "
                    f"(first on line {first})",
                )
            self._spool.write(line if line.endswith(b"\n") else line + b"\n")
        return len(seen)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[PageInput]:
        self._spool.seek(0)
        name = f"{self.path} (as read)"
        return (page for _number, _line, page in _records(self._spool, name))

    def close(self) -> None:
        self._closer()


def _records(handle: BinaryIO, name: str) -> Iterator[tuple[int, bytes, PageInput]]:
    """`(line number, line, Page)` of each non-blank line of `handle`, from where it is."""
    number = 0
    while True:
        line = handle.readline(MAX_TEXT_BYTES + 1)
        if not line:
            return
        number += 1
        where = f"{name}:{number}"
        if len(line) > MAX_TEXT_BYTES:
            raise WikiError("invalid_import", f"{where}: a record is larger than 64 MiB")
        if not line.strip():
            continue
        try:
            fields = json.loads(line)
        except UnicodeDecodeError:
            raise WikiError("invalid_import", f"{where}: not UTF-8") from None
        except json.JSONDecodeError as exc:
            raise WikiError("invalid_import", f"{where}: invalid JSON ({exc.msg})") from None
        except RecursionError:
            raise WikiError("invalid_import", f"{where}: JSON nested too deeply") from None
        if not isinstance(fields, dict):
            raise WikiError("invalid_import", f"{where}: expected a JSON object")
        yield number, line, page_from_mapping(fields, where=where)


def parse_jsonl(path: Path, *, spool_dir: Path) -> JsonlPages:
    """The checked Pages of a JSON Lines file (`JsonlPages`). Raises `WikiError`."""
    return JsonlPages(path, spool_dir=spool_dir)


# ----------------------------------------------------------------------- source files


def _read_source(path: Path) -> tuple[str, str]:
    """`(text, sha256)` of one Source file, size checked by `stat` before reading."""
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise WikiError("source_too_large", f"{path} is larger than 64 MiB")
    with path.open("rb") as handle:
        data = handle.read(MAX_TEXT_BYTES + 1)
    return decode_source(data, name=str(path))


SourceReader = Callable[[], tuple[str, str]]
"""Reads one checked Source file again: `(text, sha256)`."""


class SourceFiles(CheckedSources):
    """The Source files under a path, each read and checked once when this is made (only
    its digest kept), then read again one at a time as the writer stores them: a folder of
    any size is added with one write batch of text in memory. A file whose bytes changed in
    between is refused (`invalid_source`) rather than stored unchecked."""

    def __init__(self, entries: list[tuple[SourceReader, str, str, str]]) -> None:
        self._entries = entries
        """`(read, title, origin, sha256)` per file."""

    def __len__(self) -> int:
        return len(self._entries)

    def titles(self) -> list[str]:
        return [title for _read, title, _origin, _digest in self._entries]

    def __iter__(self) -> Iterator[SourceInput]:
        for read, title, origin, digest in self._entries:
            text, again = read()
            if again != digest:
                raise WikiError("invalid_source", f"{title} changed while it was being added")
            yield SourceInput(title, origin, text, digest)


def read_source_inputs(
    target: Path, *, root: Path, title: str | None, skipped: list[Skipped] | None = None
) -> SourceFiles:
    """Read and check every Source file under `target` before anything is written.

    A directory is walked by `walk.source_inputs` (`.gitignore`, skipped folders, no links);
    its files that are not text go to `skipped`, or refuse the whole import when `skipped` is
    None. `origin` is the path relative to the store `root` when inside it, else absolute.
    Raises `WikiError` (`source_too_large` from `stat` before reading, `invalid_source`, ...).
    """
    if target.is_symlink():
        raise WikiError("invalid_source", f"{target} is a symlink; give the file itself")
    if target.is_dir():
        return SourceFiles(
            [
                (
                    functools.partial(walk.read_source, target, relative),
                    title or relative,
                    origin,
                    digest,
                )
                for relative, origin, digest in walk.source_files(
                    target, store_root=root, skipped=skipped
                )
            ]
        )
    if not target.is_file():
        raise WikiError("invalid_input", f"{target} does not exist")
    _text, digest = _read_source(target)
    real = Path(os.path.realpath(target))
    origin = real.relative_to(root).as_posix() if root in real.parents else str(real)
    return SourceFiles(
        [(functools.partial(_read_source, target), title or target.name, origin, digest)]
    )
