"""`lwc cg install|init|status`: the CodeGraph runtime and index, as explicit user actions (§5, §7).

`install` downloads only after consent (a prompt on a terminal, or `--yes`); `init` builds the
project index with the pinned runtime and leaves `.git/` alone; `status` only looks.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lwc_trio.cli.options import examples
from lwc_trio.cli.output import emit, fail, wants_json
from lwc_trio.codegraph.index import (
    DB_NAME,
    INDEX_DIR,
    INIT_COMMAND,
    INSTALL_COMMAND,
    IndexInvalid,
    find_index,
)
from lwc_trio.codegraph.runtime import (
    BINARY_ENV,
    PACKAGE,
    VERSION,
    InstallError,
    init_env,
    install,
    installed_version,
    locate_binary,
    runtime_dir,
)
from lwc_trio.memory.storage.discovery import find_project_store
from lwc_trio.paths import is_within, prohibited_roots
from lwc_trio.programs import find_program

__all__ = ["register"]

_TAIL_LINES = 20


def _home() -> Path:
    return Path(os.path.realpath(Path.home()))


def _directory(raw: str | None) -> Path:
    """The canonical directory a command is about (default: the working directory)."""
    try:
        path = Path(os.path.realpath(raw or os.getcwd(), strict=True))
    except OSError as exc:
        raise fail("invalid_path", f"{raw}: {exc.strerror or 'cannot be resolved'}") from None
    if not path.is_dir():
        raise fail("invalid_path", f"{path} is not a directory")
    return path


def _walk_stop(start: Path, home: Path) -> Path:
    # Like the Wiki commands: walk up to $HOME when inside it, else to the filesystem root.
    return home if is_within(start, home) else Path(start.anchor)


def _runtime_state() -> dict[str, Any]:
    binary = locate_binary(os.environ)
    override = bool(os.environ.get(BINARY_ENV))
    directory = runtime_dir(_home())
    version = None if override else installed_version(directory)
    return {
        "state": "installed" if binary is not None else "missing",
        "version": version,
        "binary": str(binary) if binary is not None else None,
        "override": override,
        "directory": str(directory),
    }


def _index_state(start: Path) -> dict[str, Any]:
    found = find_index(start, _walk_stop(start, _home()))
    if found is None:
        return {"state": "missing", "root": None, "path": None}
    if isinstance(found, IndexInvalid):
        return {"state": "invalid", "root": None, "path": str(found.path), "message": found.reason}
    return {"state": "ready", "root": str(found), "path": str(found / INDEX_DIR / DB_NAME)}


# ---------------------------------------------------------------------------- status


def _status(args: argparse.Namespace) -> int:
    directory = _directory(args.dir)
    runtime, index = _runtime_state(), _index_state(directory)
    next_action = None
    if runtime["state"] == "missing":
        next_action = INSTALL_COMMAND
    elif index["state"] == "missing":
        next_action = INIT_COMMAND
    result = {"path": str(directory), "runtime": runtime, "index": index, "nextAction": next_action}

    def human(r: dict[str, Any]) -> str:
        rt, ix = r["runtime"], r["index"]
        lines = [
            f"runtime: {rt['state']}" + (f" ({rt['binary']})" if rt["binary"] else ""),
            f"index:   {ix['state']}" + (f" ({ix['path']})" if ix["path"] else ""),
        ]
        if r["nextAction"]:
            lines.append(f"next:    {r['nextAction']}")
        return "\n".join(lines)

    emit(result, as_json=wants_json(args.json), human=human)
    return 0


# ---------------------------------------------------------------------------- install


def _consent(args: argparse.Namespace, directory: Path) -> None:
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise fail(
            "consent_required",
            f"installing {PACKAGE}@{VERSION} downloads it from the npm registry; "
            "run `lwc cg install --yes` to agree without a prompt",
            exit_code=2,
        )
    sys.stderr.write(f"Install {PACKAGE}@{VERSION} from the npm registry into {directory}? [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise fail("consent_declined", "nothing was installed")


def _npm_runner(show: bool) -> Any:
    def run(command: list[str], cwd: Path) -> int:
        if show:
            # npm's output goes to stderr: stdout carries only our result.
            return subprocess.run(
                command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=sys.stderr, check=False
            ).returncode
        done = subprocess.run(
            command, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=False
        )
        if done.returncode != 0:
            _replay_tail(done.stdout + done.stderr)
        return done.returncode

    return run


def _replay_tail(output: bytes) -> None:
    # Quiet when piped, but a failure should still say what npm said.
    lines = output.decode("utf-8", "replace").splitlines()[-_TAIL_LINES:]
    if lines:
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()


def _install(args: argparse.Namespace) -> int:
    home = _home()
    directory = runtime_dir(home)
    already = installed_version(directory) == VERSION
    if not already:
        _consent(args, directory)
    try:
        # npm runs in the runtime folder (its `--prefix`), so no project `.npmrc` applies; it
        # is looked up on PATH's absolute entries only (`""`: not found).
        npm = find_program("npm", os.environ) or ""
        binary = install(home, npm=npm, run=_npm_runner(sys.stderr.isatty()))
    except InstallError as exc:
        raise fail(exc.code, exc.message) from None
    result = {
        "installed": not already,
        "runtime": {"state": "installed", "version": VERSION, "binary": str(binary),
                    "directory": str(directory)},
    }  # fmt: skip
    emit(
        result,
        as_json=wants_json(args.json),
        human=lambda r: (
            f"CodeGraph {VERSION} {'installed' if r['installed'] else 'already installed'}"
            f": {r['runtime']['binary']}"
        ),
    )
    return 0


# ---------------------------------------------------------------------------- init


def _require_wiki(directory: Path, home: Path) -> None:
    ref = find_project_store(directory, _walk_stop(directory, home), home=home)
    if ref is None:
        raise fail(
            "store_not_found",
            f"no project Wiki in {directory} or its parents; run `lwc init` there first",
        )
    if ref.problem is not None:
        raise fail(ref.problem.code, ref.problem.message)


def _run_init(binary: Path, directory: Path) -> None:
    command = [str(binary), "init", "--yes", str(directory)]
    show = sys.stderr.isatty()
    try:
        # On a terminal CodeGraph draws its own progress on our stderr; piped, we stay quiet
        # and keep the last lines for an error message.
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr if show else subprocess.PIPE,
            stderr=None if show else subprocess.STDOUT,
            cwd=directory,
            # Its git guarded and its PATH absolute (`runtime.child_env`, docs/security.md).
            env=init_env(os.environ),
        )
    except OSError as exc:
        raise fail("codegraph_init_failed", f"could not run {binary}: {exc.strerror}") from None
    tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
    try:
        if process.stdout is not None:
            for line in process.stdout:
                tail.append(line.decode("utf-8", "replace").rstrip())
        status = process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        if process.stdout is not None:
            process.stdout.close()
    if status != 0:
        last = next((line for line in reversed(tail) if line.strip()), "")
        raise fail(
            "codegraph_init_failed",
            f"codegraph init exited with status {status}" + (f": {last.strip()}" if last else ""),
        )


def _init(args: argparse.Namespace) -> int:
    if args.scope != "project":
        raise fail(
            "invalid_scope", "cg init builds a project index: use --scope project", exit_code=2
        )
    directory = _directory(args.dir)
    home = _home()
    if directory in prohibited_roots(os.environ):
        raise fail(
            "invalid_path",
            f"refusing to index {directory}: the filesystem root, $HOME, a temp root or a "
            "system root",
        )
    _require_wiki(directory, home)
    binary = locate_binary(os.environ)
    if binary is None:
        raise fail(
            "codegraph_runtime_missing",
            f"the CodeGraph runtime is not installed; run `{INSTALL_COMMAND}` first",
        )
    before = find_index(directory, directory)
    if isinstance(before, IndexInvalid):
        raise fail("codegraph_index_invalid", f"refusing the CodeGraph index: {before.reason}")
    _run_init(binary, directory)
    after = find_index(directory, directory)
    if after != directory:
        raise fail("codegraph_init_failed", f"codegraph init wrote no index in {directory}")
    db = directory / INDEX_DIR / DB_NAME
    result = {
        "created": before is None,
        "index": {"state": "ready", "root": str(directory), "path": str(db)},
    }
    emit(
        result,
        as_json=wants_json(args.json),
        human=lambda r: f"{'Indexed' if r['created'] else 'Already indexed:'} {r['index']['path']}",
    )
    return 0


# ---------------------------------------------------------------------------- parsers


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `cg install|init|status` to the `lwc` parser."""
    cg = sub.add_parser(
        "cg", parents=[common], help="the CodeGraph runtime and code index",
        epilog=examples("lwc cg install", "lwc cg init"),
    )  # fmt: skip
    actions = cg.add_subparsers(dest="cg_command", metavar="ACTION")
    actions.required = True
    inst = actions.add_parser(
        "install", parents=[common], help=f"install {PACKAGE}@{VERSION} with npm",
        epilog=examples("lwc cg install", "lwc cg install --yes"),
    )  # fmt: skip
    inst.add_argument(
        "--yes", action="store_true",
        help="agree to the download without a prompt (default: ask on a terminal)",
    )  # fmt: skip
    inst.set_defaults(func=_install)
    init = actions.add_parser(
        "init", parents=[common], help="build the project's code index",
        epilog=examples("lwc cg init", "lwc cg init ~/src/project"),
    )  # fmt: skip
    init.add_argument("dir", nargs="?", metavar="DIR", help="project directory (default: here)")
    init.set_defaults(func=_init)
    status = actions.add_parser(
        "status", parents=[common], help="show runtime and index state",
        epilog=examples("lwc cg status", "lwc cg status --json"),
    )  # fmt: skip
    status.add_argument("dir", nargs="?", metavar="DIR", help="where to look (default: here)")
    status.set_defaults(func=_status)
