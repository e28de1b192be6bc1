"""Path rules (SPEC §1 `--path`, §3): the workspace, projectPath authorization, upward store lookup.

Pure and synchronous: these functions touch the filesystem only through `os.lstat`, `os.stat` and
`os.path.realpath`, never import trio, and are run by the authorizer actor in a worker thread.
Every rejection is a `PathRuleError` whose message names the rule broken and never carries file
contents (nor the path itself, which may be huge or contain control bytes).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from lwc_trio.exceptions import PathRuleError

__all__ = [
    "MAX_PATH_CHARS",
    "SYSTEM_ROOTS",
    "PathRuleError",
    "authorize_project_path",
    "is_within",
    "nearest_upward",
    "prohibited_roots",
    "text_within",
    "validate_workspace",
]

MAX_PATH_CHARS = 4096

# SPEC §3, verbatim. Linux and macOS roots share one list: a root that does not exist on this
# machine canonicalises to itself and can never equal an existing canonical directory.
SYSTEM_ROOTS: tuple[str, ...] = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/opt", "/proc", "/root", "/run", "/sbin",
    "/srv", "/sys", "/usr", "/var", "/Library", "/Applications", "/System", "/private",
    "/private/etc", "/private/var",
)  # fmt: skip

# Kernel-synthesised trees: `/proc/self/cwd/x` or `/dev/fd/3` can reach real directories anywhere,
# so no path through them is ever authorized, whatever it resolves to.
_VIRTUAL_TREES: tuple[str, ...] = ("/proc", "/sys", "/dev")


def prohibited_roots(env: Mapping[str, str]) -> frozenset[Path]:
    """The canonical roots a workspace or projectPath may never be exactly (SPEC §3).

    `/`, `$HOME`, `$TMPDIR`, `/tmp` and `SYSTEM_ROOTS`, each canonicalised so that e.g.
    `/private/tmp` counts as `/tmp` on macOS. Unset, empty or relative HOME/TMPDIR values are
    ignored: a relative one would resolve against the cwd and forbid an arbitrary directory.
    Never raises. Cached per (HOME, TMPDIR): every tool call needs the list, and resolving the
    ~25 roots again each time was most of the cost of authorizing a path.
    """
    return _prohibited_roots(env.get("HOME", ""), env.get("TMPDIR", ""))


@functools.lru_cache(maxsize=8)
def _prohibited_roots(home: str, tmpdir: str) -> frozenset[Path]:
    return frozenset(Path(root) for root in _prohibited_strings(home, tmpdir))


@functools.lru_cache(maxsize=8)
def _prohibited_strings(home: str, tmpdir: str) -> frozenset[str]:
    raws = ["/", "/tmp", *SYSTEM_ROOTS]
    raws.extend(value for value in (home, tmpdir) if value.startswith("/") and "\0" not in value)
    roots: set[str] = set()
    for raw in raws:
        try:
            roots.add(os.path.realpath(raw))
        except (OSError, ValueError):  # pragma: no cover - realpath(strict=False) barely raises
            continue
    return frozenset(roots)


def is_within(child: Path, parent: Path) -> bool:
    """True when `child` is `parent` or below it, comparing whole components.

    Both paths should be canonical: this is lexical, so `/ws-evil` is not inside `/ws`.
    """
    parts = parent.parts
    return child.parts[: len(parts)] == parts


@functools.cache
def _virtual_prefixes() -> tuple[str, ...]:
    # Both the literal and the canonical form of each tree, in case a platform links one of
    # them; resolved once (a per-call realpath of the three trees was most of a check's cost).
    return tuple(dict.fromkeys(p for t in _VIRTUAL_TREES for p in (t, os.path.realpath(t))))


def text_within(child: str, parent: str) -> bool:
    """`is_within` for canonical path strings (no `Path` objects on the per-call path).

    Whole components, so `/ws-evil` is not inside `/ws`; `parent` must have no trailing `/`
    unless it is `/` itself.
    """
    return child == parent or child.startswith(parent if parent == "/" else parent + "/")


def _under_virtual_tree(path: Path | str) -> bool:
    text = str(path)
    return any(text_within(text, tree) for tree in _virtual_prefixes())


def _is_utf8(text: str) -> bool:
    # Paths go back to the client in JSON and to the CodeGraph child as UTF-8; a lone surrogate
    # (e.g. a non-UTF-8 byte smuggled in through surrogateescape) can do neither.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _project_error(rule: str) -> PathRuleError:
    return PathRuleError("invalid_project_path", f"projectPath {rule}")


def _check_lexical(path: str) -> None:
    """Rules that need no filesystem access; raises `PathRuleError`."""
    if not path.startswith("/"):
        raise _project_error("must be absolute")
    if len(path) > MAX_PATH_CHARS:
        raise _project_error(f"must be at most {MAX_PATH_CHARS:,} characters")
    if "\0" in path:
        raise _project_error("must not contain a NUL byte")
    if not _is_utf8(path):
        raise _project_error("must be valid UTF-8")
    # "/" has no components; otherwise "//", "/./" and "/../" all show up here.
    if path != "/" and any(part in ("", ".", "..") for part in path[1:].split("/")):
        raise _project_error("must not contain '.', '..' or empty components")


def _os_error(exc: OSError, error: Callable[[str], PathRuleError]) -> PathRuleError:
    if isinstance(exc, FileNotFoundError):
        return error("does not exist")
    # strerror is the OS's wording ("Permission denied", "File name too long"), never file data.
    return error(f"cannot be resolved: {exc.strerror or type(exc).__name__}")


def _canonical_dir(path: str, error: Callable[[str], PathRuleError]) -> str:
    """The canonical form of `path`, which must exist, be a directory and be valid UTF-8;
    otherwise `error(rule)` is raised. The projectPath and --path rules share these steps."""
    try:
        # strict=True: a missing component is an error, not something resolved by guesswork.
        canonical = os.path.realpath(path, strict=True)
        is_dir = stat.S_ISDIR(os.stat(canonical).st_mode)
    except OSError as exc:
        raise _os_error(exc, error) from None
    except ValueError:  # pragma: no cover - NUL is caught lexically first; kept as a backstop
        raise error("is not a valid path") from None
    if not is_dir:
        raise error("must be a directory")
    if not _is_utf8(canonical):
        raise error("must resolve to a valid UTF-8 path")
    return canonical


def authorize_project_path(raw: str, workspace: Path, env: Mapping[str, str]) -> Path:
    """Apply SPEC §3 to a projectPath and return its canonical directory.

    `workspace` must already be canonical (see `validate_workspace`). The rules run in the
    SPEC's order. Raises `PathRuleError` with code `project_path_outside_workspace` when only
    the final containment rule fails, `invalid_project_path` for every other failure
    (including any `OSError` or unencodable string).
    """
    # "/" alone must survive so that it fails later as a prohibited root, not as relative.
    path = raw.rstrip("/") or ("/" if raw else "")
    _check_lexical(path)
    try:
        # lstat: the last component itself must not be a link (parents may be, and are resolved).
        linked = stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError as exc:
        raise _os_error(exc, _project_error) from None
    if linked:
        raise _project_error("must not be a symbolic link")
    canonical = _canonical_dir(path, _project_error)
    # Compared as strings: every tool call runs this, and Path objects cost more than the rules.
    if canonical in _prohibited_strings(env.get("HOME", ""), env.get("TMPDIR", "")):
        raise _project_error("must not be the filesystem root, $HOME, a temp root or a system root")
    if _under_virtual_tree(path) or _under_virtual_tree(canonical):
        raise _project_error("must not lie under /proc, /sys or /dev")
    if not text_within(canonical, str(workspace)):
        raise PathRuleError(
            "project_path_outside_workspace", "projectPath must be the workspace or inside it"
        )
    return Path(canonical)


def validate_workspace(raw: str, env: Mapping[str, str]) -> Path:
    """Canonicalise the `--path` value (relative to the cwd) and return the workspace.

    Raises `PathRuleError`: `invalid_workspace` when it is empty, unencodable, missing, not a
    directory or under /proc, /sys or /dev; `workspace_too_broad` when it is exactly a
    prohibited root (`/`, `$HOME`, a temp root, a system root).
    """

    def invalid(rule: str) -> PathRuleError:
        return PathRuleError("invalid_workspace", f"--path {rule}")

    if not raw:
        raise invalid("must not be empty")
    if "\0" in raw or not _is_utf8(raw):
        raise invalid("must be a valid UTF-8 path without NUL bytes")
    workspace = Path(_canonical_dir(raw, invalid))
    if workspace in prohibited_roots(env):
        raise PathRuleError(
            "workspace_too_broad",
            "--path must not be the filesystem root, $HOME, a temp root or a system root",
        )
    # Not in SPEC §1, but every projectPath inside such a workspace would fail §3 anyway:
    # refusing at start-up beats a server that can answer nothing.
    if _under_virtual_tree(workspace):
        raise invalid("must not lie under /proc, /sys or /dev")
    return workspace


def nearest_upward(start: Path, root: Path, relative: str) -> Path | None:
    """The first `dir/relative` that exists (even as a dangling link), for dir from `start` up
    to `root` inclusive; None when there is none or `start` is not inside `root`.

    Never looks above `root`. `os.path.lexists` is used so that a symlinked store is found and
    the caller can refuse it, rather than silently skipping to one further up. Raises
    `ValueError` when `relative` is absolute or contains `..`, which would escape `root`.
    """
    rel = Path(relative)
    if rel.is_absolute() or ".." in rel.parts:
        raise ValueError(f"relative must stay below its directory: {relative!r}")
    if not is_within(start, root):
        return None
    current = start
    while True:
        candidate = current / rel
        if os.path.lexists(candidate):
            return candidate
        if current == root or current.parent == current:
            return None
        current = current.parent
