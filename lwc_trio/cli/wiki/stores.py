"""Which store a Wiki command acts on: scopes, discovery, refusals, and `lwc init`'s store."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from lwc_trio.cli.output import did_you_mean, fail
from lwc_trio.exceptions import UsageError, WikiError
from lwc_trio.memory.exchange.lwc_import import lwc_store_version
from lwc_trio.memory.index.writer import Wiki
from lwc_trio.memory.storage.discovery import (
    STORE_DIR,
    STORE_FILE,
    StoreRef,
    find_global_store,
    find_project_store,
)
from lwc_trio.memory.storage.store import check_path_length, create_store


def home_dir() -> Path:
    """$HOME, symlinks resolved (the global store lives in its `.lwc`)."""
    return Path(os.path.realpath(Path.home()))


def write_scope(args: argparse.Namespace) -> str:
    """The scope a write goes to. Raises `UsageError` for `--scope all`."""
    if args.scope == "all":
        raise UsageError("invalid_usage", "--scope all is for reads only; choose project or global")
    return str(args.scope)


def read_scopes(args: argparse.Namespace) -> list[str]:
    """The scopes a read looks in, project before global."""
    return ["project", "global"] if args.scope == "all" else [str(args.scope)]


def find_store(scope: str) -> StoreRef | None:
    """The store of `scope` seen from the working directory, or None when there is none."""
    home = home_dir()
    if scope == "global":
        return find_global_store(home)
    cwd = Path(os.path.realpath(Path.cwd()))
    # Walk up to $HOME (never taking $HOME/.lwc, the global store), or to `/` outside it.
    stop = home if cwd == home or home in cwd.parents else Path(cwd.anchor)
    return find_project_store(cwd, stop, home=home)


def require_store(scope: str) -> Path:
    """The store file a command acts on. Raises the CLI error when there is none."""
    ref = find_store(scope)
    if ref is None:
        if scope == "global":
            raise fail("store_not_found", "no global Wiki store; run `lwc --scope global init`")
        raise fail(
            "store_not_found",
            "no Wiki store in this directory or its parents; run `lwc init` first",
        )
    if ref.problem is not None:
        raise fail(ref.problem.code, ref.problem.message)
    refuse_lwc_store(ref.path, scope)
    return ref.path


def refuse_lwc_store(path: Path, scope: str) -> None:
    """An LWC 0.16 store where lwc expects its own: say how to convert it, not "corrupt"."""
    version = lwc_store_version(path)
    if version is not None:
        prefix = "lwc --scope global " if scope == "global" else "lwc "
        raise fail(
            "unsupported_store_version",
            f"{path} is a Wiki written by LWC (SQLite user_version {version}); convert it with "
            f"`{prefix}import --from-lwc {path}` (LWC's files are kept unchanged)",
        )


def each_store(args: argparse.Namespace) -> Iterator[tuple[str, Path]]:
    """(scope, store file) for every store a read uses. Raises the CLI error when none exists."""
    scopes = read_scopes(args)
    found = [(scope, find_store(scope)) for scope in scopes]
    if all(ref is None for _scope, ref in found):
        require_store(scopes[0])
    for scope, ref in found:
        if ref is not None:
            if ref.problem is not None:
                raise fail(ref.problem.code, ref.problem.message)
            refuse_lwc_store(ref.path, scope)
            yield scope, ref.path


def first_found(
    args: argparse.Namespace, fetch: Callable[[Wiki], Mapping[str, object]]
) -> dict[str, object]:
    """`fetch` from the first store that has the item (project before global with `all`)."""
    error: WikiError | None = None
    for scope, path in each_store(args):
        with Wiki(path) as wiki:
            try:
                return {"scope": scope, **fetch(wiki)}
            except WikiError as exc:
                error = error or exc
    assert error is not None
    raise error


def every_row(
    args: argparse.Namespace, rows: Callable[[Wiki], Sequence[Mapping[str, object]]]
) -> list[dict[str, object]]:
    """`rows(wiki)` of every store a read uses, project first, each row with its `scope`."""
    found: list[dict[str, object]] = []
    for scope, path in each_store(args):
        with Wiki(path) as wiki:
            found += [{"scope": scope, **row} for row in rows(wiki)]
    return found


@contextlib.contextmanager
def suggesting(
    args: argparse.Namespace,
    code: str,
    word: str,
    rows: Callable[[Wiki], Sequence[Mapping[str, object]]],
    key: str,
) -> Iterator[None]:
    """Add "did you mean" to a `code` error about `word`: the stored `key`s closest to it."""
    try:
        yield
    except WikiError as exc:
        if exc.code != code:
            raise
        names = [str(row[key]) for row in every_row(args, rows)]
        raise WikiError(code, exc.message + did_you_mean(word, names)) from None


def create_for_scope(
    scope: str, *, git_exclude: bool, nested: bool = False
) -> tuple[Path, bool, bool | None]:
    """Create the store `lwc init` makes for `scope`: (path, created, gitExclude).

    A project store inside another Wiki's tree is refused unless `nested`: every command
    run below that Wiki already uses it, and a second, empty one would silently shadow it.
    """
    home = home_dir()
    root = home if scope == "global" else Path(os.path.realpath(Path.cwd()))
    if scope == "project" and root == home:
        raise fail(
            "store_path_invalid",
            "$HOME/.lwc is the global store; use `lwc --scope global init` or run "
            "`lwc init` inside a project",
        )
    lwc = root / STORE_DIR
    if scope == "project" and not nested:
        above = find_store("project")
        if above is not None and above.path.parent != lwc:
            raise fail(
                "store_exists_above",
                f"{root} is inside the Wiki {above.path}, which every lwc command run here "
                f"already uses; to create a separate, nested Wiki here on purpose, run "
                f"`lwc init --nested`",
            )
    if lwc.is_symlink() or (lwc / STORE_FILE).is_symlink():
        raise fail("store_path_invalid", f"{lwc} or its wiki.db is a symlink; refusing to use it")
    # Before anything is created: a refused `init` leaves no empty `.lwc/` behind.
    check_path_length(lwc / STORE_FILE)
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
