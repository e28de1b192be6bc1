"""The folder walk behind `lwc source add DIR` and `lwc page import DIR` (SPEC §7).

Which files a folder import reads:

- inside a git work tree, the files git itself lists (`git ls-files --cached --others
  --exclude-standard`): tracked files plus untracked ones that `.gitignore`, `.git/info/exclude`
  and the user's global excludes do not ignore — git's own rules, not a re-implementation;
  outside a work tree (or without git), every file below the folder; when git refuses a work
  tree (a repository owned by another user: "dubious ownership"), an error that says what to
  do (`git_refused`), never a walk that reads what `.gitignore` excludes;
- never anything under a hidden name (`.git`, `.env`, ...) or under a folder of
  `SKIPPED_DIRS` (VCS, dependency and build output), tracked or not;
- never through a symbolic link: every folder below the root is opened with `O_NOFOLLOW` from
  the root's own descriptor, so a link (or a folder swapped for one meanwhile) cannot lead out
  of the folder; a file that is a link, a FIFO or a device is skipped, never opened for reading.

A file that cannot be stored as text (not UTF-8, NUL characters, over 64 MiB, a link...) is
skipped and reported as a `Skipped` with the reason; with `strict` the first one refuses the
whole import instead, before anything is written.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

import attrs

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.format.limits import TITLE_MAX
from lwc_trio.memory.index.inputs import MAX_TEXT_BYTES, PageInput, decode_source, validate_page
from lwc_trio.programs import GIT_GUARD, find_program, search_path

__all__ = [
    "SKIPPED_DIRS",
    "Listing",
    "PageParser",
    "Skipped",
    "list_folder",
    "page_inputs",
    "read_source",
    "source_files",
]

SKIPPED_DIRS = frozenset(
    {
        # version control (hidden names are skipped anyway; listed so the list is complete)
        ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", "CVS",
        # dependencies and virtual environments
        "node_modules", "bower_components", "jspm_packages", ".venv", "venv", ".tox", ".nox",
        # caches and build output
        "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", "dist", "build",
        "target", ".gradle", ".next", ".nuxt", ".eggs",
        # lwc's own stores and CodeGraph's index
        ".lwc", ".codegraph",
    }
)  # fmt: skip
"""Folder names never walked into, wherever they appear below the root (docs/cli.md)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_GIT_TIMEOUT_S = 60.0


class PageParser(Protocol):
    """Makes a Page of a Markdown file's text (`doc_tree.page_from_markdown`): `relative` is
    its path below the folder, `name` how messages name it. Raises `WikiError`."""

    def __call__(self, text: str, *, name: str, relative: str) -> PageInput: ...


@attrs.frozen
class Skipped:
    """A file or folder an import did not read, and why."""

    path: str  # as the user would name it: the folder argument joined with the relative path
    reason: str

    def to_json(self) -> dict[str, str]:
        """The `skipped` item of a command's JSON result."""
        return {"path": self.path, "reason": self.reason}


@attrs.frozen
class Listing:
    """The files a walk found (relative POSIX paths, sorted) and the folders it left out."""

    files: tuple[str, ...]
    skipped: tuple[Skipped, ...]
    gitignore: bool  # True when git listed the files (its ignore rules applied)


def _display(root: Path, relative: str) -> str:
    return (root / relative).as_posix()


_NOT_A_WORK_TREE = "not a git repository"
"""The start of git's message when a folder is in no work tree (git asked in the C locale)."""
_GIT_MESSAGE_CHARS = 300


def _git_files(root: Path) -> list[str] | None:
    """What git lists below `root` (relative to it), or None outside a work tree / without git.

    Raises `WikiError` when git does not answer in time, or refuses a folder that is in a
    work tree (`git_refused`): walking it without git would silently read what `.gitignore`
    excludes."""
    git = find_program("git", os.environ)
    if git is None:  # no git: there is no work tree to honour
        return None
    # core.fsmonitor (GIT_GUARD) would run a command named by the folder's own .git/config;
    # `ls-files` runs no other command a repository's config can name (no hook, filter or
    # pager: tests/test_cli_hostile_tree.py plants each). `-c` works with every git.
    guard = [arg for key, value in GIT_GUARD for arg in ("-c", f"{key}={value}")]
    try:
        done = subprocess.run(
            [git, *guard, "--no-pager", "-C", str(root), "ls-files", "--cached", "--others",
             "--exclude-standard", "-z"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            # English messages: "not a work tree" is told from a refusal by git's own words.
            env={**os.environ, "LC_ALL": "C", "PATH": search_path(os.environ.get("PATH"))},
        )  # fmt: skip
    except OSError:  # git vanished or cannot run: no work tree lwc can honour
        return None
    except subprocess.TimeoutExpired:
        # Falling back would silently read what .gitignore excludes.
        raise WikiError(
            "invalid_input", f"`git ls-files` in {root} did not finish in {_GIT_TIMEOUT_S:g} s"
        ) from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace")
        if _NOT_A_WORK_TREE in message:
            return None
        raise _git_refused(root, message)
    return [os.fsdecode(name) for name in done.stdout.split(b"\0") if name]


def _git_refused(root: Path, message: str) -> WikiError:
    """The error for git refusing a work tree, with git's reason and what to do about it."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    reason = next((line for line in lines if line.startswith("fatal:")), lines[0] if lines else "")
    reason = reason.removeprefix("fatal:").strip()[:_GIT_MESSAGE_CHARS] or "no message"
    allow = next((line for line in lines if line.startswith("git config ")), None)
    if "dubious ownership" in message:
        fix = (
            "the repository belongs to another user (a shared checkout or a container mount); "
            "run lwc as its owner, or if you trust it, "
            f"`{allow or 'git config --global --add safe.directory DIR'}`"
        )
    else:
        fix = f"run `git -C {root} status` to see git's own message, fix that"
    return WikiError(
        "git_refused",
        f"git refuses to list the files of {root} ({reason}), so its .gitignore cannot be "
        f"honoured and nothing was read; {fix}, then run the command again",
    )


def _plain_files(root: Path) -> list[str]:
    """Every name below `root` that is not a folder (links to folders included: they are
    reported when read), without descending into links."""
    found: list[str] = []
    for directory, dirs, files in os.walk(root, followlinks=False):
        base = Path(directory).relative_to(root)
        found += [(base / name).as_posix() for name in files]
        # A link to a folder is listed among `dirs` but never entered; read it as a file so
        # it is reported as a link.
        found += [
            (base / name).as_posix() for name in dirs if (Path(directory) / name).is_symlink()
        ]
        dirs[:] = [name for name in dirs if not (Path(directory) / name).is_symlink()]
    return found


def list_folder(root: Path, *, suffix: str | None = None) -> Listing:
    """The files an import of `root` reads, by the rules of the module docstring.

    `suffix` (e.g. ".md") keeps only names ending with it. Nothing is opened for reading.
    """
    listed = _git_files(root)
    gitignore = listed is not None
    names = listed if listed is not None else _plain_files(root)
    files: set[str] = set()
    left_out: dict[str, Skipped] = {}
    for name in names:
        parts = name.rstrip("/").split("/")
        if any(part.startswith(".") for part in parts):
            continue
        skipped_dir = next((i for i, part in enumerate(parts[:-1]) if part in SKIPPED_DIRS), None)
        if skipped_dir is not None:
            folder = "/".join(parts[: skipped_dir + 1])
            left_out.setdefault(
                folder, Skipped(_display(root, folder) + "/", "dependency, build or VCS folder")
            )
            continue
        if name.endswith("/"):
            # git lists an untracked nested repository as one entry; it has its own rules.
            left_out[name] = Skipped(_display(root, name), "a separate git repository")
            continue
        if suffix is None or name.endswith(suffix):
            files.add(name)
    return Listing(
        tuple(sorted(files)), tuple(left_out[key] for key in sorted(left_out)), gitignore
    )


class _Unreadable(Exception):
    """A file the walk does not read; `reason` says why (and `code` which error `strict`
    raises)."""

    def __init__(self, reason: str, code: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


def _read_below(root_fd: int, relative: str) -> bytes:
    """The bytes of `relative` under the folder `root_fd`, reached through handles only.

    Raises `_Unreadable` for a link, a non-regular file or a file over 64 MiB.
    """
    *folders, leaf = relative.split("/")
    fd = os.dup(root_fd)
    try:
        for part in folders:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _Unreadable(
                    f"its folder {part!r} cannot be opened ({_why(exc)})", "invalid_source"
                ) from None
            os.close(fd)
            fd = child
        try:
            # lstat first: a FIFO or a device must not even be opened.
            info = os.stat(leaf, dir_fd=fd, follow_symlinks=False)
        except OSError as exc:
            raise _Unreadable(f"cannot be read ({_why(exc)})", "invalid_source") from None
        if stat.S_ISLNK(info.st_mode):
            raise _Unreadable("is a symbolic link (links are not followed)", "invalid_source")
        if not stat.S_ISREG(info.st_mode):
            raise _Unreadable("is not a regular file", "invalid_source")
        if info.st_size > MAX_TEXT_BYTES:
            raise _Unreadable("is larger than 64 MiB", "source_too_large")
        try:
            handle = os.open(leaf, _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            raise _Unreadable(f"cannot be read ({_why(exc)})", "invalid_source") from None
        with os.fdopen(handle, "rb") as file:
            now = os.fstat(file.fileno())
            if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(
                now.st_mode
            ):
                raise _Unreadable("changed while it was read", "invalid_source")
            data = file.read(MAX_TEXT_BYTES + 1)
        if len(data) > MAX_TEXT_BYTES:
            raise _Unreadable("is larger than 64 MiB", "source_too_large")
        return data
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _texts(
    root: Path, listing: Listing, skipped: list[Skipped] | None, *, code: str | None = None
) -> Iterator[tuple[str, bytes, str, str]]:
    """`(relative, bytes, text, sha256)` of each listed file that is UTF-8 text.

    Every other file is appended to `skipped`; when `skipped` is None (strict) the first one
    raises `WikiError` instead (`code`, else `invalid_source` / `source_too_large`).
    """
    if skipped is not None:
        skipped.extend(listing.skipped)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for relative in listing.files:
            name = _display(root, relative)
            try:
                data = _read_below(root_fd, relative)
                text, digest = decode_source(data, name=name)
            except (_Unreadable, WikiError) as exc:
                if isinstance(exc, _Unreadable):
                    exc = WikiError(exc.code, f"{name} {exc.reason}")
                _skip(skipped, exc, name, code)
                continue
            yield relative, data, text, digest
    finally:
        os.close(root_fd)


def _skip(skipped: list[Skipped] | None, refused: WikiError, name: str, code: str | None) -> None:
    """List a file the import leaves out, with the reason `refused` gives; when `skipped` is
    None (strict) raise it instead (as `code` when given)."""
    if skipped is None:
        raise WikiError(code or refused.code, refused.message) from None
    reason = refused.message.removeprefix(name).removeprefix(":").strip()
    skipped.append(Skipped(name, reason.removeprefix("is ")))


def _open_root(root: Path) -> Path:
    try:
        return Path(os.path.realpath(root, strict=True))
    except OSError as exc:
        raise WikiError("invalid_input", f"{root} cannot be read ({_why(exc)})") from None


def source_files(
    folder: Path, *, store_root: Path, skipped: list[Skipped] | None
) -> Iterator[tuple[str, str, str]]:
    """`(relative, origin, sha256)` for each text file the walk of `folder` finds, read and
    checked once (its text is not kept: `read_source` reads it again to write it).

    `origin` is the path relative to `store_root` when inside it, else absolute. Files that
    are not text go to `skipped` (None: strict, the first one raises `WikiError`).
    """
    real = _open_root(folder)
    listing = list_folder(folder)
    long = {name for name in listing.files if len(name) > TITLE_MAX}
    for relative in sorted(long):
        # The path is the Source's title: one too long for a title is left out, not refused.
        name = _display(folder, relative)
        problem = f"its path is longer than {TITLE_MAX} characters (a source title's limit)"
        _skip(skipped, WikiError("invalid_source", f"{name}: {problem}"), name, None)
    listing = attrs.evolve(listing, files=tuple(n for n in listing.files if n not in long))
    for relative, _, _text, digest in _texts(folder, listing, skipped):
        path = real / relative
        origin = (
            path.relative_to(store_root).as_posix() if store_root in path.parents else str(path)
        )
        yield relative, origin, digest


def read_source(folder: Path, relative: str) -> tuple[str, str]:
    """`(text, sha256)` of a file `source_files` found, read again through handles only.

    Raises `WikiError` (the file became a link, not a regular file, too large, or not text).
    """
    name = _display(folder, relative)
    root_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        data = _read_below(root_fd, relative)
    except _Unreadable as exc:
        raise WikiError(exc.code, f"{name} {exc.reason}") from None
    finally:
        os.close(root_fd)
    return decode_source(data, name=name)


def page_inputs(
    folder: Path,
    *,
    skipped: list[Skipped] | None,
    parse: PageParser,
    link: Callable[[Sequence[tuple[str, PageInput]]], list[PageInput]],
) -> list[PageInput]:
    """A Page for each `.md` text file the walk of `folder` finds (`parse` makes it), refusing
    two files that give the same slug — naming both files; then `link` resolves their links
    with every Page's path below `folder` known.

    A file that makes no valid Page (no slug, a title over its limit...) is skipped and
    listed like an unreadable one. Raises `WikiError` (`invalid_page` for a repeated slug;
    strict: the first file that is unreadable or makes no valid Page).
    """
    _open_root(folder)
    pages: list[tuple[str, PageInput]] = []
    origin: dict[str, str] = {}
    listing = list_folder(folder, suffix=".md")
    for relative, _, text, _ in _texts(folder, listing, skipped, code="invalid_import"):
        name = _display(folder, relative)
        try:
            page = parse(text, name=name, relative=relative)
            validate_page(page)
        except WikiError as exc:
            _skip(skipped, exc, name, None)
            continue
        first = origin.setdefault(page.slug, name)
        if first != name:
            raise WikiError(
                "invalid_page",
                f"slug {page.slug!r} comes from both {first} and {name}; give one of them "
                'another slug in its front matter (`slug: "..."`) or rename it — nothing was '
                "imported",
            )
        pages.append((relative, page))
    return link(pages)
