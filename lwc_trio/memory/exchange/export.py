"""`lwc export DIR` and `lwc import DIR`: a whole Wiki as Markdown files with front matter.

The tree is `lwc-export.json` (a marker), `pages/<slug>.md` and `sources/<id>.md`. Export writes
keys in a fixed order with sorted lists, so the same store always exports to the same bytes and
diffs well under version control.

The write side trusts the store no more than the server does (SPEC §7): a store can come from a
cloned repository, so every file name export derives from it is checked by the rule lwc itself
writes with — a Page's slug by `slug_problem`, a Source's id by `source_id_problem` — before
anything is written, and a store with one name that breaks them is refused whole (naming the
name and the rule), never exported in part. Files are then reached only through handles:
`pages/` and `sources/` are opened `O_DIRECTORY | O_NOFOLLOW` from the target's own descriptor,
each file is written to a new temporary name (`O_CREAT | O_EXCL | O_NOFOLLOW`) and renamed over
its final name, so a symbolic link (or a hard link) planted in an earlier export cannot turn a
write into a write elsewhere. The target itself is the folder the user named, links included.

Import reads an export tree the same way the folder walk reads any tree: through handles,
never through a link, never opening a FIFO or a device.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.exchange import walk
from lwc_trio.memory.exchange.transfer import (
    PAGE_KEYS,
    SOURCE_KEYS,
    format_front_matter,
    optional_text,
    parse_front_matter,
    parse_page_text,
)
from lwc_trio.memory.format.slugs import shown_name, slug_problem, source_id_problem
from lwc_trio.memory.index.inputs import PageInput, SourceInput, source_id, validate_page
from lwc_trio.memory.index.writer import Wiki

__all__ = ["EXPORT_MARKER", "export_wiki", "import_wiki"]

Progress = Callable[[int, int], None]

EXPORT_MARKER = "lwc-export.json"
_MARKER_TEXT = '{"format": "lwc-wiki-export", "version": 1}\n'
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_SUFFIX = ".lwc-tmp"


def _checked_names(wiki: Wiki) -> tuple[list[str], list[str]]:
    """Every Page slug and Source id of `wiki`, sorted; refuses a store whose names do not all
    make safe, distinct file names. Raises `WikiError(export_name_invalid|_collision)`."""
    slugs = [str(row["slug"]) for row in wiki.list_pages()]
    idents = sorted(wiki.source_ids())
    bad = [("page", slug, problem) for slug in slugs if (problem := slug_problem(slug))]
    bad += [("source", ident, problem) for ident in idents if (problem := source_id_problem(ident))]
    if bad:
        kind, name, problem = bad[0]
        more = f" (and {len(bad) - 1:,} more)" if len(bad) > 1 else ""
        remove = "lwc page remove" if kind == "page" else "lwc source remove"
        raise WikiError(
            "export_name_invalid",
            f"{kind} {shown_name(name)}{more} cannot be a file name: {problem}; nothing was "
            f"exported — a Wiki written by lwc never holds such a name, so this store was "
            f"written by another program: remove it with `{remove}`, then export again",
        )
    folded: dict[str, str] = {}
    for slug in slugs:
        other = folded.setdefault(slug.casefold(), slug)
        if other != slug:
            raise WikiError(
                "export_name_collision",
                f"pages {shown_name(other)} and {shown_name(slug)} differ only in case and "
                "would share a file name",
            )
    return slugs, idents


def _failed(path: Path, exc: OSError) -> WikiError:
    return WikiError("export_failed", f"{path} cannot be written ({exc.strerror or exc})")


def _open_target(target: Path) -> int:
    """The export folder's descriptor (created when absent); refuses a folder that is neither
    empty nor an earlier export."""
    try:
        target.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _failed(target, exc) from None
    try:
        names = os.listdir(fd)
        if names and not _is_regular(fd, EXPORT_MARKER):
            raise WikiError(
                "export_target_not_empty", f"{target} is not empty and not an earlier lwc export"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_regular(dir_fd: int, name: str) -> bool:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(info.st_mode)


def _open_folder(parent: int, name: str, shown: Path) -> int:
    """`name` below `parent`, created when absent, opened without following a link."""
    try:
        os.mkdir(name, dir_fd=parent)
    except FileExistsError:
        pass
    except OSError as exc:
        raise _failed(shown, exc) from None
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        raise WikiError(
            "export_failed",
            f"{shown} is not a folder lwc can write into ({exc.strerror or exc}); export "
            "never follows a symbolic link inside its target",
        ) from None


def _remove_quietly(dir_fd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)


def _write_file(dir_fd: int, name: str, text: str, shown: Path) -> None:
    """`text` as the file `name` in `dir_fd`: written to a new file, then renamed over `name`.

    A link or any other file already called `name` is replaced, never written through."""
    temp = f".{name}{_TEMP_SUFFIX}"
    try:
        _remove_quietly(dir_fd, temp)  # left by a crash
        fd = os.open(temp, _NEW_FILE_FLAGS, 0o666, dir_fd=dir_fd)
        try:
            # newline="" keeps the body's own line endings byte for byte.
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            _remove_quietly(dir_fd, temp)
            raise
    except OSError as exc:
        raise _failed(shown, exc) from None


def _remove_stale(dir_fd: int, keep: set[str], shown: Path) -> None:
    """Remove the `.md` entries of `dir_fd` not in `keep` (a file or link, never a folder)."""
    for name in os.listdir(dir_fd):
        if not name.endswith(".md") or name in keep:
            continue
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            continue
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError as exc:
            raise _failed(shown / name, exc) from None


def export_wiki(wiki: Wiki, target: Path, progress: Progress | None = None) -> dict[str, int]:
    """Write every Page and Source of `wiki` under `target` (pages/, sources/).

    `target` must be absent, empty or an earlier export (it has `lwc-export.json`); files of
    Pages and Sources that no longer exist are removed so the tree mirrors the store. Every
    name is checked before anything is written (module docstring). Raises `WikiError`.
    """
    slugs, idents = _checked_names(wiki)
    root = _open_target(target)
    try:
        pages_fd = _open_folder(root, "pages", target / "pages")
        try:
            sources_fd = _open_folder(root, "sources", target / "sources")
            try:
                _write_file(root, EXPORT_MARKER, _MARKER_TEXT, target / EXPORT_MARKER)
                written = _write_pages(wiki, slugs, pages_fd, target / "pages", progress)
                _remove_stale(pages_fd, written, target / "pages")
                sources = _write_sources(wiki, set(idents), sources_fd, target / "sources")
                _remove_stale(sources_fd, sources, target / "sources")
            finally:
                os.close(sources_fd)
        finally:
            os.close(pages_fd)
    finally:
        os.close(root)
    return {"pages": len(written), "sources": len(sources)}


def _write_pages(
    wiki: Wiki, slugs: list[str], dir_fd: int, shown: Path, progress: Progress | None
) -> set[str]:
    written: set[str] = set()
    for done, slug in enumerate(slugs, start=1):
        row = wiki.get_page(slug)
        fields = {
            "slug": row["slug"], "title": row["title"], "kind": row["kind"],
            "summary": row["summary"], "sources": row["sources"],
            "provenance": row["provenance"], "created_at": row["createdAt"],
            "updated_at": row["updatedAt"], "links": row["links"],
        }  # fmt: skip
        name = f"{slug}.md"
        _write_file(dir_fd, name, format_front_matter(fields, PAGE_KEYS, row["body"]), shown / name)
        written.add(name)
        if progress is not None:
            progress(done, len(slugs))
    return written


def _write_sources(wiki: Wiki, checked: set[str], dir_fd: int, shown: Path) -> set[str]:
    written: set[str] = set()
    for ident, title, origin, digest, created, content in wiki.iter_sources():
        if ident not in checked:  # added by another writer since the check: not exported
            continue
        fields = {
            "id": ident, "title": title, "origin": origin, "content_hash": digest,
            "created_at": created,
        }  # fmt: skip
        name = f"{ident}.md"
        _write_file(dir_fd, name, format_front_matter(fields, SOURCE_KEYS, content), shown / name)
        written.add(name)
    return written


# ---------------------------------------------------------------------- import of an export


def _tree_files(source: Path, folder: str) -> list[str]:
    """The `.md` names in `source/folder`, sorted (none when the folder is absent); the
    folder is opened without following a link."""
    try:
        root = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise WikiError("invalid_import", f"{source} cannot be read ({exc.strerror})") from None
    try:
        try:
            fd = os.open(folder, _DIR_FLAGS, dir_fd=root)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise WikiError(
                "invalid_import",
                f"{source / folder} is not a folder lwc reads ({exc.strerror}; links are not "
                "followed)",
            ) from None
        try:
            return sorted(name for name in os.listdir(fd) if name.endswith(".md"))
        finally:
            os.close(fd)
    finally:
        os.close(root)


def _tree_texts(source: Path, folder: str) -> Iterator[tuple[str, str]]:
    """`(name shown, text)` of each `.md` file of `source/folder`, read through handles."""
    for name in _tree_files(source, folder):
        text, _digest = walk.read_source(source, f"{folder}/{name}")
        yield str(source / folder / name), text


def _source_from_text(text: str, where: str) -> SourceInput:
    parsed = parse_front_matter(text, name=where)
    if parsed is None:
        raise WikiError("invalid_import", f"{where}: a source file needs front matter")
    fields, content = parsed
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
    if fields.get("content_hash") != digest or fields.get("id") != source_id(digest):
        raise WikiError("invalid_import", f"{where}: content does not match its id and hash")
    return SourceInput(
        title=optional_text(fields.get("title"), "title", where) or "",
        origin=optional_text(fields.get("origin"), "origin", where),
        content=content,
        content_hash=digest,
        created_at=optional_text(fields.get("created_at"), "created_at", where),
    )


def _page_from_text(text: str, where: str) -> PageInput:
    stem = where.rsplit("/", 1)[-1].removesuffix(".md")
    return parse_page_text(text, name=where, stem=stem)


def import_wiki(wiki: Wiki, source: Path, progress: Progress | None = None) -> dict[str, int]:
    """Load an export tree into `wiki`: Sources first, then Pages in batches.

    Everything is parsed and checked (slugs, provenance, cited Sources present in the tree or
    the store) before the first write. Raises `WikiError`.
    """
    if not (source / EXPORT_MARKER).is_file():
        raise WikiError("invalid_import", f"{source} is not an lwc export (no {EXPORT_MARKER})")
    sources = [_source_from_text(text, where) for where, text in _tree_texts(source, "sources")]
    pages = [_page_from_text(text, where) for where, text in _tree_texts(source, "pages")]
    for page in pages:
        validate_page(page)
    known = {source_id(s.content_hash) for s in sources} | wiki.source_ids()
    for page in pages:
        missing = sorted(set(page.sources) - known)
        if missing:
            raise WikiError(
                "source_not_found",
                f"page {shown_name(page.slug)} cites unknown source {shown_name(missing[0])}",
            )
    added = wiki.add_sources(sources)
    counts = wiki.put_pages(pages, progress=progress)
    return {"sources": sum(1 for s in added if s["created"]), **counts}
