"""`lwc page put|show|list|remove|import`: the Wiki's Pages."""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
from pathlib import Path
from typing import Any

from lwc_trio.cli.output import fail, notice
from lwc_trio.cli.wiki.console import (
    Progress,
    handles_errors,
    open_wiki,
    out,
    page_counts,
    skipped_json,
    skipped_lines,
)
from lwc_trio.cli.wiki.stores import (
    every_row,
    first_found,
    require_store,
    suggesting,
    write_scope,
)
from lwc_trio.memory.exchange.doc_tree import page_from_markdown, tree_links
from lwc_trio.memory.exchange.export import EXPORT_MARKER
from lwc_trio.memory.exchange.transfer import parse_jsonl
from lwc_trio.memory.exchange.walk import Skipped, page_inputs
from lwc_trio.memory.index.inputs import MAX_TEXT_BYTES, CheckedPages, PageInput
from lwc_trio.memory.index.writer import Wiki


def _read_input(name: str) -> bytes:
    """The bytes of `--file` (`-` is stdin), at most 64 MiB + 1 to detect oversize."""
    if name == "-":
        if sys.stdin.isatty():
            notice("Reading the page body from stdin: type or paste it, then press Ctrl-D on a "
                   "new line (Ctrl-C cancels).")  # fmt: skip
        return _read_stdin(MAX_TEXT_BYTES + 1)
    try:
        with open(name, "rb") as handle:
            return handle.read(MAX_TEXT_BYTES + 1)
    except OSError as exc:
        raise fail("invalid_input", f"cannot read {name}: {exc.strerror}") from None


def _read_stdin(limit: int) -> bytes:
    """Stdin to its end, at most `limit` bytes; a Ctrl-C ends the wait whenever it comes.

    A blocking read() returns early only for a signal that arrives while it waits in the
    kernel: one that lands just before it (the process preempted between the prompt and
    the read, seen under load) leaves it waiting for more input. So the wait is a select()
    on stdin and on the pipe the signal module writes a byte to for every signal it
    catches (`signal.set_wakeup_fd`): a Ctrl-C from any moment wakes it, and its
    KeyboardInterrupt is raised at the next step."""
    wake_read, wake_write = os.pipe()
    try:
        os.set_blocking(wake_write, False)
        previous = signal.set_wakeup_fd(wake_write)  # the CLI runs on the main thread
        try:
            stdin = sys.stdin.fileno()
            chunks: list[bytes] = []
            size = 0
            while size < limit:
                ready, _, _ = select.select([stdin, wake_read], [], [])
                if wake_read in ready:
                    os.read(wake_read, 256)  # another signal than SIGINT: read on
                if stdin in ready:
                    chunk = os.read(stdin, min(limit - size, 1 << 20))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
            return b"".join(chunks)
        finally:
            signal.set_wakeup_fd(previous)
    finally:
        os.close(wake_read)
        os.close(wake_write)


@handles_errors
def page_put(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    args.interrupt_note = lambda: "nothing was written"
    data = _read_input(args.file)
    if len(data) > MAX_TEXT_BYTES:
        raise fail("invalid_page", "a page body must be at most 64 MiB")
    try:
        body = data.decode("utf-8")
    except UnicodeDecodeError:
        raise fail("invalid_page", "the page body is not UTF-8") from None
    page = PageInput(
        slug=args.slug,
        title=args.title,
        body=body,
        kind=args.kind,
        summary=args.summary,
        sources=tuple(args.source or ()),
        provenance=tuple(args.provenance or ()),
    )
    path = require_store(scope)
    with open_wiki(path) as wiki:
        outcome = wiki.put_page(page)
        args.interrupt_note = lambda: f"page {page.slug!r} was written"
        revision = wiki.status()["revision"]
    result = {"scope": scope, "slug": page.slug, "result": outcome, "revision": revision}
    return out(args, result, lambda r: f"{r['result'].capitalize()} page {r['slug']}")


@handles_errors
def page_show(args: argparse.Namespace) -> int:
    with suggesting(args, "page_not_found", args.slug, Wiki.list_pages, "slug"):
        page = first_found(args, lambda wiki: wiki.get_page(args.slug))
    return out(args, page, _human_page)


def _human_page(page: dict[str, Any]) -> str:
    head = f"# {page['title']}  ({page['slug']}, {page['kind']}, {page['scope']})"
    meta = []
    if page["summary"]:
        meta.append(f"summary: {page['summary']}")
    if page["sources"]:
        meta.append("sources: " + ", ".join(page["sources"]))
    meta.append("provenance: " + ", ".join(page["provenance"]))
    return "\n".join([head, *meta, "", page["body"]])


@handles_errors
def page_list(args: argparse.Namespace) -> int:
    return out(
        args,
        {"pages": every_row(args, Wiki.list_pages)},
        lambda r: (
            "\n".join(f"{p['slug']}\t{p['title']}\t({p['kind']})" for p in r["pages"])
            or "(no pages)"
        ),
    )


@handles_errors
def page_remove(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    with (
        suggesting(args, "page_not_found", args.slug, Wiki.list_pages, "slug"),
        open_wiki(require_store(scope)) as wiki,
    ):
        wiki.remove_page(args.slug)
    result = {"scope": scope, "slug": args.slug, "removed": True}
    return out(args, result, lambda r: f"Removed page {r['slug']}")


@handles_errors
def page_import(args: argparse.Namespace) -> int:
    scope = write_scope(args)
    source = Path(args.path)
    if (source / EXPORT_MARKER).is_file():
        raise fail("invalid_input", f"{source} is an lwc export; load it with `lwc import`")
    skipped: list[Skipped] | None = None if args.strict else []
    store = require_store(scope)
    if source.is_dir():
        pages: list[PageInput] | CheckedPages = page_inputs(
            source, skipped=skipped, parse=page_from_markdown, link=tree_links
        )
    elif source.is_file():
        pages = parse_jsonl(source, spool_dir=store.parent)
    else:
        raise fail("invalid_input", f"{source} is neither a directory nor a .jsonl file")
    progress = Progress("Importing pages")
    stop = _StopAfterBatch(progress)
    args.interrupt_note = stop.kept
    with open_wiki(store) as wiki, progress, stop:
        counts = wiki.put_pages(pages, batch=args.batch, progress=stop)
    result: dict[str, Any] = {"scope": scope, **counts}
    if source.is_dir():
        result["skipped"] = skipped_json(skipped)
    return out(
        args, result, lambda r: "\n".join([f"Imported: {page_counts(r)}", *skipped_lines(r)])
    )


class _StopAfterBatch:
    """Ctrl-C during `page import` stops at the next batch boundary, so what was kept is
    exactly what the message says.

    `put_pages` reports progress after each batch commits; a first Ctrl-C only asks to stop,
    and the next report (outside any transaction) raises KeyboardInterrupt. A second Ctrl-C
    stops at once, rolling the batch in flight back.
    """

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.requested = False
        self.exact = True
        self.previous: Any = None

    def __enter__(self) -> _StopAfterBatch:
        self.previous = signal.signal(signal.SIGINT, self._interrupt)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGINT, self.previous)

    def _interrupt(self, _signum: int, _frame: Any) -> None:
        if self.requested:
            self.exact = False  # a batch may commit as this exception unwinds
            raise KeyboardInterrupt
        self.requested = True
        # The handler may run inside a `sys.stderr.write` (the progress bar): writing
        # through the same buffered stream again raises "reentrant call", so this line
        # goes to the descriptor directly.
        if sys.stderr.isatty():
            text = "\nStopping after the current batch (Ctrl-C again to stop at once)…\n"
            os.write(sys.stderr.fileno(), text.encode("utf-8", "replace"))

    def __call__(self, done: int, total: int) -> None:
        self.progress(done, total)
        if self.requested and done < total:
            raise KeyboardInterrupt

    def kept(self) -> str:
        """What the Ctrl-C kept (batches already committed stay)."""
        done, total = self.progress.done, self.progress.total
        if not done:
            return "nothing was written" if self.exact else "at most one batch was written"
        counted = f"{done:,}" if self.exact else f"at least {done:,}"
        return f"{counted} of {total:,} pages written; run the same command again to finish"
