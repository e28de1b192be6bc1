"""Wiki commands: init, page, source, search, config, graph, repair, export/import (SPEC §7).

Every write goes through `lwc_trio.memory.writer` (validated, one transaction); refusals print
`{"error": {"code", "message"}}` on stderr, exit 1, and leave the store unchanged.
"""

from __future__ import annotations

import argparse
import functools
import os
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lwc_trio.cli.output import emit, fail, style, wants_json
from lwc_trio.exceptions import UsageError, WikiError
from lwc_trio.memory.discovery import (
    STORE_DIR,
    STORE_FILE,
    StoreRef,
    find_global_store,
    find_project_store,
)
from lwc_trio.memory.engine import merge_rows, query_stores
from lwc_trio.memory.lwc_files import remove_quietly, swap_in
from lwc_trio.memory.lwc_import import LwcWiki, lwc_store_version, read_lwc_store, resolve_lwc_path
from lwc_trio.memory.store import create_store
from lwc_trio.memory.tokenize import MAX_TERMS, tokenize
from lwc_trio.memory.transfer import (
    EXPORT_MARKER,
    export_wiki,
    import_wiki,
    parse_jsonl,
    parse_page_file,
    read_source_inputs,
)
from lwc_trio.memory.writer import IMPORT_BATCH, MAX_TEXT_BYTES, PageInput, Wiki

__all__ = ["register"]

Handler = Callable[[argparse.Namespace], int]
DEFAULT_SHOW_CHARS = 20_000
SEARCH_LIMIT_MAX = 50
# LWC 0.16 names its graph engines; lwc has one (SQLite), so either name simply enables it.
GRAPH_ENABLED = ("enabled", "grafeo", "surrealdb")


# ----------------------------------------------------------------------------- helpers


def _handles_errors(handler: Handler) -> Handler:
    """Turn memory-plane errors into the CLI's `{"error"}` + exit 1."""

    @functools.wraps(handler)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except WikiError as exc:
            raise fail(exc.code, exc.message) from None
        except sqlite3.Error as exc:
            raise fail("store_corrupt", f"the store could not be used ({exc})") from None

    return wrapper


def _home() -> Path:
    return Path(os.path.realpath(Path.home()))


def _write_scope(args: argparse.Namespace) -> str:
    if args.scope == "all":
        raise UsageError("invalid_usage", "--scope all is for reads only; choose project or global")
    return str(args.scope)


def _find(scope: str) -> StoreRef | None:
    home = _home()
    if scope == "global":
        return find_global_store(home)
    cwd = Path(os.path.realpath(Path.cwd()))
    # Walk up to $HOME (never taking $HOME/.lwc, the global store), or to `/` outside it.
    stop = home if cwd == home or home in cwd.parents else Path(cwd.anchor)
    return find_project_store(cwd, stop, home=home)


def _require(scope: str) -> Path:
    """The store file a command acts on. Raises the CLI error when there is none."""
    ref = _find(scope)
    if ref is None:
        if scope == "global":
            raise fail("store_not_found", "no global Wiki store; run `lwc --scope global init`")
        raise fail(
            "store_not_found",
            "no Wiki store in this directory or its parents; run `lwc init` first",
        )
    if ref.problem is not None:
        raise fail(ref.problem.code, ref.problem.message)
    _refuse_lwc_store(ref.path, scope)
    return ref.path


def _refuse_lwc_store(path: Path, scope: str) -> None:
    """An LWC 0.16 store where lwc expects its own: say how to convert it, not "corrupt"."""
    version = lwc_store_version(path)
    if version is not None:
        prefix = "lwc --scope global " if scope == "global" else "lwc "
        raise fail(
            "unsupported_store_version",
            f"{path} is a Wiki written by LWC (SQLite user_version {version}); convert it with "
            f"`{prefix}import --from-lwc {path}` (LWC's files are kept unchanged)",
        )


def _read_scopes(args: argparse.Namespace) -> list[str]:
    return ["project", "global"] if args.scope == "all" else [str(args.scope)]


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal (`with` ends it)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.active = sys.stderr.isatty()
        self.drawn = False

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def __call__(self, done: int, total: int) -> None:
        if not self.active or total <= 0:
            return
        width = 30
        filled = width * done // total
        bar = "#" * filled + "." * (width - filled)
        sys.stderr.write(f"\r{self.label} [{bar}] {done}/{total}")
        sys.stderr.flush()
        self.drawn = True

    def finish(self) -> None:
        """End the bar's line."""
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _read_input(name: str) -> bytes:
    """The bytes of `--file` (`-` is stdin), at most 64 MiB + 1 to detect oversize."""
    if name == "-":
        return sys.stdin.buffer.read(MAX_TEXT_BYTES + 1)
    try:
        with open(name, "rb") as handle:
            return handle.read(MAX_TEXT_BYTES + 1)
    except OSError as exc:
        raise fail("invalid_input", f"cannot read {name}: {exc.strerror}") from None


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def _out(args: argparse.Namespace, obj: Any, human: Callable[[Any], str]) -> int:
    emit(obj, as_json=wants_json(args.json), human=human)
    return 0


# ---------------------------------------------------------------------------- commands


def _create(scope: str, *, git_exclude: bool) -> tuple[Path, bool, bool | None]:
    """Create the store `lwc init` makes for `scope`: (path, created, gitExclude)."""
    home = _home()
    root = home if scope == "global" else Path(os.path.realpath(Path.cwd()))
    if scope == "project" and root == home:
        raise fail(
            "store_path_invalid",
            "$HOME/.lwc is the global store; use `lwc --scope global init` or run "
            "`lwc init` inside a project",
        )
    lwc = root / STORE_DIR
    if lwc.is_symlink() or (lwc / STORE_FILE).is_symlink():
        raise fail("store_path_invalid", f"{lwc} or its wiki.db is a symlink; refusing to use it")
    try:
        lwc.mkdir(exist_ok=True)
    except OSError as exc:
        raise fail("store_path_invalid", f"cannot create {lwc}: {exc.strerror}") from None
    if not lwc.is_dir():
        raise fail("store_path_invalid", f"{lwc} exists and is not a directory")
    path = lwc / STORE_FILE
    created = create_store(path)
    excluded = _git_exclude(root) if scope == "project" and git_exclude else None
    return path, created, excluded


@_handles_errors
def _init(args: argparse.Namespace) -> int:
    scope = _write_scope(args)
    path, created, excluded = _create(scope, git_exclude=not args.no_git_exclude)
    _refuse_lwc_store(path, scope)
    with Wiki(path) as wiki:
        status = wiki.status()
    result = {"scope": scope, "created": created, **status, "gitExclude": excluded}
    return _out(
        args,
        result,
        lambda r: f"{'Created' if r['created'] else 'Already initialized:'} {r['path']}",
    )


def _git_exclude(root: Path) -> bool | None:
    """Add `.lwc/` to `.git/info/exclude` of a repository rooted at `root`.

    None when `root` is not a git repository root (a `.git` directory); True when the line
    is present afterwards.
    """
    git = root / ".git"
    if git.is_symlink() or not git.is_dir():
        return None
    exclude = git / "info" / "exclude"
    existing = exclude.read_text(encoding="utf-8", errors="replace") if exclude.exists() else ""
    if any(line.strip() in (".lwc", ".lwc/", "/.lwc", "/.lwc/") for line in existing.splitlines()):
        return True
    exclude.parent.mkdir(exist_ok=True)
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    with exclude.open("a", encoding="utf-8") as handle:
        handle.write(f"{prefix}.lwc/\n")
    return True


@_handles_errors
def _page_put(args: argparse.Namespace) -> int:
    scope = _write_scope(args)
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
    path = _require(scope)
    with Wiki(path) as wiki:
        outcome = wiki.put_page(page)
        revision = wiki.status()["revision"]
    result = {"scope": scope, "slug": page.slug, "result": outcome, "revision": revision}
    return _out(args, result, lambda r: f"{r['result'].capitalize()} page {r['slug']}")


def _each_store(args: argparse.Namespace) -> Iterator[tuple[str, Path]]:
    scopes = _read_scopes(args)
    found = [(scope, _find(scope)) for scope in scopes]
    if all(ref is None for _scope, ref in found):
        _require(scopes[0])
    for scope, ref in found:
        if ref is not None:
            if ref.problem is not None:
                raise fail(ref.problem.code, ref.problem.message)
            _refuse_lwc_store(ref.path, scope)
            yield scope, ref.path


def _first_found(
    args: argparse.Namespace, fetch: Callable[[Wiki], dict[str, Any]]
) -> dict[str, Any]:
    """`fetch` from the first store that has the item (project before global with `all`)."""
    error: WikiError | None = None
    for scope, path in _each_store(args):
        with Wiki(path) as wiki:
            try:
                return {"scope": scope, **fetch(wiki)}
            except WikiError as exc:
                error = error or exc
    assert error is not None
    raise error


@_handles_errors
def _page_show(args: argparse.Namespace) -> int:
    return _out(args, _first_found(args, lambda wiki: wiki.get_page(args.slug)), _human_page)


def _human_page(page: dict[str, Any]) -> str:
    head = f"# {page['title']}  ({page['slug']}, {page['kind']}, {page['scope']})"
    meta = []
    if page["summary"]:
        meta.append(f"summary: {page['summary']}")
    if page["sources"]:
        meta.append("sources: " + ", ".join(page["sources"]))
    meta.append("provenance: " + ", ".join(page["provenance"]))
    return "\n".join([head, *meta, "", page["body"]])


@_handles_errors
def _page_list(args: argparse.Namespace) -> int:
    pages: list[dict[str, Any]] = []
    for scope, path in _each_store(args):
        with Wiki(path) as wiki:
            pages += [{"scope": scope, **page} for page in wiki.list_pages()]
    return _out(
        args,
        {"pages": pages},
        lambda r: (
            "\n".join(f"{p['slug']}\t{p['title']}\t({p['kind']})" for p in r["pages"])
            or "(no pages)"
        ),
    )


@_handles_errors
def _page_remove(args: argparse.Namespace) -> int:
    scope = _write_scope(args)
    with Wiki(_require(scope)) as wiki:
        wiki.remove_page(args.slug)
    result = {"scope": scope, "slug": args.slug, "removed": True}
    return _out(args, result, lambda r: f"Removed page {r['slug']}")


@_handles_errors
def _page_import(args: argparse.Namespace) -> int:
    scope = _write_scope(args)
    source = Path(args.path)
    if (source / EXPORT_MARKER).is_file():
        raise fail("invalid_input", f"{source} is an lwc export; load it with `lwc import`")
    if source.is_dir():
        files = sorted(p for p in source.rglob("*.md") if p.is_file() and not p.is_symlink())
        pages = [parse_page_file(p) for p in files]
    elif source.is_file():
        pages = parse_jsonl(source)
    else:
        raise fail("invalid_input", f"{source} is neither a directory nor a .jsonl file")
    with Wiki(_require(scope)) as wiki, _Progress("Importing pages") as progress:
        counts = wiki.put_pages(pages, batch=args.batch, progress=progress)
    result = {"scope": scope, **counts}
    return _out(
        args,
        result,
        lambda r: (
            f"Imported: {r['created']} created, {r['updated']} updated, {r['unchanged']} unchanged"
        ),
    )


@_handles_errors
def _source_add(args: argparse.Namespace) -> int:
    scope = _write_scope(args)
    target = Path(args.path)
    if args.title is not None and target.is_dir():
        raise UsageError("invalid_usage", "--title applies to a single FILE, not a directory")
    store = _require(scope)
    inputs = read_source_inputs(target, root=store.parent.parent, title=args.title)
    with Wiki(store) as wiki, _Progress("Adding sources") as progress:
        added = wiki.add_sources(inputs, progress=progress if len(inputs) > 1 else None)
    return _out(
        args,
        {"scope": scope, "sources": added},
        lambda r: "\n".join(
            f"{s['id']}\t{s['title']}{'' if s['created'] else '  (already stored)'}"
            for s in r["sources"]
        ),
    )


@_handles_errors
def _source_show(args: argparse.Namespace) -> int:
    if args.offset_chars < 0 or args.max_chars < 1:
        raise UsageError("invalid_usage", "--offset-chars must be >= 0 and --max-chars >= 1")
    found = _first_found(
        args,
        lambda wiki: wiki.get_source(args.id, offset=args.offset_chars, max_chars=args.max_chars),
    )
    return _out(args, found, lambda r: str(r["content"]))


@_handles_errors
def _search(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= SEARCH_LIMIT_MAX:
        raise UsageError("invalid_usage", f"--limit must be between 1 and {SEARCH_LIMIT_MAX}")
    terms = tokenize(args.query)
    if len(terms) > MAX_TERMS:
        raise fail("invalid_query", f"the query has more than {MAX_TERMS} search terms")
    refs = [ref for scope in _read_scopes(args) if (ref := _find(scope)) is not None]
    if not refs:
        _require(_read_scopes(args)[0])
    answers = query_stores(refs, args.query, args.limit, threading.Event())
    if all(answer.error is not None for answer in answers):
        first = answers[0].error
        assert first is not None
        raise fail(first.code, first.message)
    result = {
        "query": args.query,
        "scope": args.scope,
        "stores": [answer.store_json() for answer in answers],
        "results": [row.to_json() for row in merge_rows(answers, args.limit)],
    }
    return _out(args, result, _human_results)


def _human_results(result: dict[str, Any]) -> str:
    if not result["results"]:
        return "No results."
    lines = []
    for i, row in enumerate(result["results"], start=1):
        fuzzy = style(" ~fuzzy", "yellow") if row["match"] == "fuzzy" else ""
        ident = style(row["identifier"], "bold", "cyan")
        lines.append(f"{i}. [{row['type']}] {ident} — {row['title']}{fuzzy}")
        lines.append(style(f"   {row['snippet']}", "dim"))
    return "\n".join(lines)


@_handles_errors
def _config_set(args: argparse.Namespace) -> int:
    scope = _write_scope(args)
    if args.graph is None:
        raise UsageError("invalid_usage", "nothing to set; use --graph enabled|disabled")
    with Wiki(_require(scope)) as wiki:
        changed = wiki.set_graph_enabled(args.graph in GRAPH_ENABLED)
        status = wiki.status()
    result = {"scope": scope, "changed": changed, **status}
    word = "enabled" if args.graph in GRAPH_ENABLED else "disabled"
    return _out(args, result, lambda r: f"Document graph {word}")


@_handles_errors
def _graph_build(args: argparse.Namespace) -> int:
    scope = _write_scope(args)
    with Wiki(_require(scope)) as wiki, _Progress("Building graph") as progress:
        result = {"scope": scope, **wiki.build_graph(progress)}
    return _out(args, result, lambda r: f"Graph ready at content revision {r['builtRevision']}")


@_handles_errors
def _graph_status(args: argparse.Namespace) -> int:
    stores = []
    for scope, path in _each_store(args):
        with Wiki(path) as wiki:
            stores.append({"scope": scope, **wiki.status()})
    return _out(
        args,
        {"stores": stores},
        lambda r: "\n".join(f"{s['scope']}: graph {s['graph']['status']}" for s in r["stores"]),
    )


@_handles_errors
def _repair(args: argparse.Namespace) -> int:
    scope = _write_scope(args)
    path = _require(scope)
    journal = path.with_name(path.name + "-journal")
    had_journal = journal.exists() and journal.stat().st_size > 0
    with Wiki(path) as wiki:  # opening rolls a leftover hot journal back
        result = {"scope": scope, "journalRolledBack": had_journal, **wiki.repair()}
    return _out(args, result, lambda r: f"Store OK; {r['reindexed']} documents reindexed")


@_handles_errors
def _export(args: argparse.Namespace) -> int:
    scope = _write_scope(args)
    with Wiki(_require(scope)) as wiki, _Progress("Exporting") as progress:
        counts = export_wiki(wiki, Path(args.dir), progress)
    result = {"scope": scope, "dir": str(Path(args.dir).resolve()), **counts}
    return _out(args, result, lambda r: f"Exported {r['pages']} pages, {r['sources']} sources")


@_handles_errors
def _import(args: argparse.Namespace) -> int:
    scope = _write_scope(args)
    if args.from_lwc is not None:
        if args.dir is not None:
            raise UsageError(
                "invalid_usage", "give either DIR (an lwc export) or --from-lwc PATH, not both"
            )
        return _import_lwc(args, scope, Path(args.from_lwc))
    if args.dir is None:
        raise UsageError(
            "invalid_usage",
            "lwc import needs DIR (an lwc export) or --from-lwc PATH (an LWC store)",
        )
    with Wiki(_require(scope)) as wiki, _Progress("Importing") as progress:
        counts = import_wiki(wiki, Path(args.dir), progress)
    result = {"scope": scope, **counts}
    return _out(
        args,
        result,
        lambda r: (
            f"Imported {r['sources']} new sources; pages: {r['created']} created, "
            f"{r['updated']} updated, {r['unchanged']} unchanged"
        ),
    )


def _import_lwc(args: argparse.Namespace, scope: str, given: Path) -> int:
    """`lwc import --from-lwc PATH`: into the Wiki this directory writes to (docs/lwc-compat.md).

    That is the nearest lwc_trio store for `--scope project` (or the global one); with none, one
    is created as `lwc init` would. When that place holds the LWC store itself (LWC and lwc both
    use `.lwc/wiki.db`), the new store is built beside it and swapped in, LWC's files kept.
    """
    source = resolve_lwc_path(given)
    with _Progress("Reading LWC store") as progress:
        lwc = read_lwc_store(source, progress)
    ref = _find(scope)
    if ref is not None and ref.problem is not None:
        raise fail(ref.problem.code, ref.problem.message)
    backup: Path | None = None
    if ref is not None and lwc_store_version(ref.path) is not None:
        if not os.path.samefile(ref.path, source):
            raise fail(
                "unsupported_store_version",
                f"the {scope} Wiki {ref.path} is itself an LWC store; convert it first: "
                f"`lwc import --from-lwc {ref.path}`",
            )
        target = ref.path
        building = target.with_name(f".{target.name}.import-{os.getpid()}")
        remove_quietly(building)
        create_store(building)
        try:
            counts = _write_lwc(building, lwc)
            backup = swap_in(target, building)
        finally:
            remove_quietly(building)
    else:
        target = ref.path if ref is not None else _create(scope, git_exclude=True)[0]
        counts = _write_lwc(target, lwc)
    result = {
        "scope": scope,
        "path": str(target),
        "from": str(source),
        "lwcFormat": lwc.user_version,
        **counts,
        "duplicateSources": lwc.duplicate_sources,
        "citations": lwc.citations,
        "provenance": lwc.provenance,
        "links": lwc.links,
        "linksToMissingPages": lwc.links_to_missing_pages,
        "skipped": lwc.skipped,
        "notImported": lwc.not_imported,
        "lwcStoreKeptAt": str(backup) if backup is not None else None,
    }
    return _out(args, result, _human_lwc_import)


def _write_lwc(path: Path, lwc: LwcWiki) -> dict[str, Any]:
    with Wiki(path) as wiki, _Progress("Importing") as progress:
        return wiki.put_everything(lwc.sources, lwc.pages, progress=progress)


def _human_lwc_import(r: dict[str, Any]) -> str:
    pages, sources = r["pages"], r["sources"]
    lines = [
        f"Imported {r['from']} (LWC format {r['lwcFormat']}) into {r['path']}",
        f"  pages: {pages['created']} created, {pages['updated']} updated, "
        f"{pages['unchanged']} unchanged",
        f"  sources: {sources['created']} created, {sources['existing']} already stored",
        f"  citations {r['citations']}, provenance {r['provenance']}, links {r['links']}",
    ]
    if r["lwcStoreKeptAt"]:
        lines.append(f"  LWC's own files were moved, unchanged, to {r['lwcStoreKeptAt']}")
    if r["notImported"]:
        rest = ", ".join(f"{table} {n}" for table, n in sorted(r["notImported"].items()))
        lines.append(f"  no lwc equivalent (not imported): {rest}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- parsers


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the Wiki subcommands to the `lwc` parser."""
    init = sub.add_parser("init", parents=[common], help="create a Wiki store")
    init.add_argument("--no-git-exclude", action="store_true", help="leave .git/info/exclude alone")
    init.set_defaults(func=_init)

    page = sub.add_parser("page", parents=[common], help="write and read Wiki pages")
    pages = page.add_subparsers(dest="page_command", metavar="ACTION")
    pages.required = True
    put = pages.add_parser("put", parents=[common], help="create or replace a page")
    put.add_argument("slug")
    put.add_argument("--title", required=True)
    put.add_argument("--kind", default="concept")
    put.add_argument("--summary")
    put.add_argument("--file", required=True, help="Markdown body file, or - for stdin")
    put.add_argument("--source", action="append", metavar="ID", help="cited source id")
    put.add_argument(
        "--provenance", action="append", metavar="P",
        help="user-provided, agent-observed or hypothesis (source-grounded is implied by --source)",
    )  # fmt: skip
    put.set_defaults(func=_page_put)
    show = pages.add_parser("show", parents=[common], help="print one page")
    show.add_argument("slug")
    show.set_defaults(func=_page_show)
    listing = pages.add_parser("list", parents=[common], help="list pages")
    listing.set_defaults(func=_page_list)
    remove = pages.add_parser("remove", parents=[common], help="delete a page")
    remove.add_argument("slug")
    remove.set_defaults(func=_page_remove)
    bulk = pages.add_parser("import", parents=[common], help="import pages from DIR or FILE.jsonl")
    bulk.add_argument("path", metavar="DIR|FILE.jsonl")
    bulk.add_argument("--batch", type=_positive, default=IMPORT_BATCH, help=argparse.SUPPRESS)
    bulk.set_defaults(func=_page_import)

    source = sub.add_parser("source", parents=[common], help="store and read source snapshots")
    sources = source.add_subparsers(dest="source_command", metavar="ACTION")
    sources.required = True
    add = sources.add_parser("add", parents=[common], help="snapshot a file or directory")
    add.add_argument("path", metavar="FILE|DIR")
    add.add_argument("--title")
    add.set_defaults(func=_source_add)
    peek = sources.add_parser("show", parents=[common], help="print a window of a source")
    peek.add_argument("id")
    peek.add_argument("--offset-chars", type=int, default=0)
    peek.add_argument("--max-chars", type=int, default=DEFAULT_SHOW_CHARS)
    peek.set_defaults(func=_source_show)

    search = sub.add_parser("search", parents=[common], help="search the Wiki")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=8)
    search.set_defaults(func=_search)

    config = sub.add_parser("config", parents=[common], help="store settings")
    configs = config.add_subparsers(dest="config_command", metavar="ACTION")
    configs.required = True
    setter = configs.add_parser("set", parents=[common], help="change a setting")
    setter.add_argument(
        "--graph", choices=(*GRAPH_ENABLED, "disabled"),
        help="enabled or disabled (LWC's engine names grafeo and surrealdb mean enabled)",
    )  # fmt: skip
    setter.set_defaults(func=_config_set)

    graph = sub.add_parser("graph", parents=[common], help="the document graph")
    graphs = graph.add_subparsers(dest="graph_command", metavar="ACTION")
    graphs.required = True
    build = graphs.add_parser("build", parents=[common], help="build the graph projection")
    build.set_defaults(func=_graph_build)
    state = graphs.add_parser("status", parents=[common], help="show graph readiness")
    state.set_defaults(func=_graph_status)

    repair = sub.add_parser("repair", parents=[common], help="recover and re-index a store")
    repair.set_defaults(func=_repair)

    export = sub.add_parser("export", parents=[common], help="write the Wiki as Markdown files")
    export.add_argument("dir", metavar="DIR")
    export.set_defaults(func=_export)
    restore = sub.add_parser(
        "import", parents=[common], help="load a Wiki written by export, or an LWC 0.16 store"
    )
    restore.add_argument("dir", metavar="DIR", nargs="?")
    restore.add_argument(
        "--from-lwc", metavar="PATH",
        help="an LWC 0.16 store (its wiki.db, .lwc folder or project folder), read unmodified",
    )  # fmt: skip
    restore.set_defaults(func=_import)
