"""What a writer submits, and the rules it must keep before anything is written.

A Page (`PageInput`) or a Source (`SourceInput`) is checked here (`validate_page`,
`decode_source`): a slug that is one safe file name, the SPEC §2 field limits
(`format/limits.py`), at most 64 MiB of UTF-8 text, at most `MAX_PAGE_LINKS` distinct
links, known provenance values. `CheckedPages` and `CheckedSources` are inputs checked once
that the writer reads again as a stream (a large JSON Lines file, a folder of Sources).
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Iterable, Iterator

import attrs

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.format.limits import KIND_MAX, SUMMARY_MAX, TITLE_MAX
from lwc_trio.memory.format.slugs import USER_PROVENANCE, slug_problem
from lwc_trio.memory.text.links import extract_links

__all__ = [
    "MAX_PAGE_LINKS",
    "MAX_TEXT_BYTES",
    "CheckedPages",
    "CheckedSources",
    "PageInput",
    "SourceInput",
    "body_links",
    "check_pages",
    "decode_source",
    "source_id",
    "validate_page",
]

MAX_TEXT_BYTES = 64 * 1024 * 1024
MAX_PAGE_LINKS = 4096
"""Distinct out-links a Page may have (body links and recorded ones): a write with more is
refused. A query keeps 64 links per Page; thousands are a generated hub, not a note, and
every read and graph build would pay for them (docs/decisions.md, "Write-side bounds")."""


@attrs.frozen
class PageInput:
    """A Page as a writer submits it."""

    slug: str
    title: str
    body: str
    kind: str = "concept"
    summary: str | None = None
    sources: tuple[str, ...] = ()
    provenance: tuple[str, ...] = ()
    created_at: str | None = None  # kept by `lwc import`; otherwise now
    updated_at: str | None = None
    # Links recorded by another tool (`lwc import --from-lwc`), stored with those in the body.
    links: tuple[str, ...] = ()
    # The body's links as given: a folder import's, resolved (`doc_tree.tree_links`: a
    # `*.md` link names the file it reaches), or a record's `links` (an export's, which
    # carries them); None: extracted from the body at write time.
    body_links: tuple[str, ...] | None = None


@attrs.frozen
class SourceInput:
    """A Source snapshot: decoded text plus where it came from."""

    title: str
    origin: str | None
    content: str
    content_hash: str  # sha256 hex of the UTF-8 bytes
    created_at: str | None = None


def decode_source(data: bytes, *, name: str) -> tuple[str, str]:
    """`(text, sha256)` of a Source file's bytes. Raises `WikiError` for refused content."""
    if len(data) > MAX_TEXT_BYTES:
        raise WikiError("source_too_large", f"{name} is larger than 64 MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WikiError("invalid_source", f"{name} is not UTF-8 (byte {exc.start})") from None
    if "\x00" in text:
        raise WikiError("invalid_source", f"{name} contains NUL characters (binary file?)")
    return text, hashlib.sha256(data).hexdigest()


def source_id(content_hash: str) -> str:
    """Sources are named by their content: the same bytes always get the same id."""
    return f"src-{content_hash[:16]}"


def validate_page(page: PageInput) -> None:
    """Refuse a Page that must not be written. Raises `WikiError`."""
    problem = slug_problem(page.slug)
    if problem is not None:
        raise WikiError("invalid_slug", f"invalid slug {page.slug!r}: {problem}")
    if not page.title.strip():
        raise WikiError("invalid_page", "a page needs a non-empty title")
    if not page.kind.strip():
        raise WikiError("invalid_page", "a page kind must not be empty")
    # The limits every answer holds to (SPEC §2): a Wiki written by lwc never needs cutting.
    for field, value, limit in (
        ("title", page.title, TITLE_MAX),
        ("kind", page.kind, KIND_MAX),
        ("summary", page.summary or "", SUMMARY_MAX),
    ):
        if len(value) > limit:
            raise WikiError(
                "invalid_page",
                f"page {page.slug[:64]!r}: the {field} has {len(value)} characters "
                f"(at most {limit})",
            )
    # A character takes at most 4 bytes: a body of a quarter of the limit needs no encoding.
    too_long = len(page.body) * 4 > MAX_TEXT_BYTES and (
        len(page.body.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES
    )
    if too_long or "\x00" in page.body:
        raise WikiError("invalid_page", "a page body must be text of at most 64 MiB")
    _check_links(page)
    for value in page.provenance:
        if value == "source-grounded":
            if not page.sources:
                raise WikiError(
                    "invalid_provenance", "provenance 'source-grounded' needs at least one --source"
                )
        elif value not in USER_PROVENANCE:
            allowed = ", ".join(["source-grounded", *sorted(USER_PROVENANCE)])
            raise WikiError(
                "invalid_provenance", f"unknown provenance {value!r} (one of: {allowed})"
            )


def _check_links(page: PageInput) -> None:
    """Refuse a Page with more than `MAX_PAGE_LINKS` distinct out-links. Links found in the
    body each take at least four of its characters (`[[a]]`, `](a.md)`, `[a]: a.md`: two
    kinds can share one) and need a `[[`, a `](` or a `]:`, so most bodies are let through
    by their length or by counting those alone; links given with the Page (`body_links`: a
    record's `links`, a folder's resolved ones) are counted."""
    if page.body_links is None:
        body = page.body
        if len(body) // 4 + len(page.links) <= MAX_PAGE_LINKS:
            return
        rough = body.count("[[") + body.count("](") + body.count("]:") + len(page.links)
        if rough <= MAX_PAGE_LINKS:
            return
    links = set(body_links(page)).union(page.links)
    links.discard(page.slug)
    if len(links) > MAX_PAGE_LINKS:
        raise WikiError(
            "invalid_page",
            f"page {page.slug[:64]!r} links to {len(links):,} pages (at most "
            f"{MAX_PAGE_LINKS:,} distinct links per page): split it into smaller pages",
        )


def body_links(page: PageInput) -> list[str]:
    """The links `page`'s body makes: those given with it (`PageInput.body_links`), else
    extracted."""
    if page.body_links is not None:
        return sorted(set(page.body_links) - {page.slug})
    return extract_links(page.body, own_slug=page.slug)


class CheckedSources(abc.ABC):
    """Source files already read and checked once (`transfer.SourceFiles`), read again one
    at a time as they are written, so only one write batch of text is held."""

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def __iter__(self) -> Iterator[SourceInput]: ...

    @abc.abstractmethod
    def titles(self) -> list[str]:
        """Each Source's title, without reading its content."""


class CheckedPages(abc.ABC):
    """Pages already checked (`check_pages`: valid, slugs distinct) that can be read again
    as a stream, e.g. a large JSON Lines file (`transfer.JsonlPages`)."""

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def __iter__(self) -> Iterator[PageInput]: ...


def check_pages(pages: Iterable[PageInput]) -> None:
    """`validate_page` each of `pages` and refuse a slug given twice. Raises `WikiError`."""
    seen: set[str] = set()
    for page in pages:
        validate_page(page)
        if page.slug in seen:
            raise WikiError("invalid_page", f"slug {page.slug!r} appears more than once")
        seen.add(page.slug)
