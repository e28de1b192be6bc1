"""`lwc doctor`: what a host starting `lwc serve --mcp` here would see, and what to run next.

Read-only by construction: paths are checked with `stat`/`lstat`, stores are opened with the
server's own read-only reader (`mode=ro`, rollback journal only, so SQLite creates no file), the
CodeGraph lookups are the plane's own side-effect-free ones, and nothing is ever written.
Synchronous and trio-free.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lwc_trio.codegraph.index import INIT_COMMAND, INSTALL_COMMAND, IndexInvalid, find_index
from lwc_trio.codegraph.runtime import locate_binary
from lwc_trio.exceptions import PathRuleError, StoreError
from lwc_trio.memory.exchange.lwc_import import lwc_store_version
from lwc_trio.memory.storage.discovery import (
    StoreRef,
    find_global_store,
    find_project_store,
    project_store_above,
)
from lwc_trio.memory.storage.store import (
    StoreInfo,
    begin_read,
    graph_status,
    open_reader,
    translate_error,
)
from lwc_trio.paths import validate_workspace

__all__ = ["ERROR", "MISSING", "OK", "doctor_report", "host_section"]

OK, MISSING, ERROR = "ok", "missing", "error"

Check = dict[str, Any]


def _action(command: str, cwd: Path) -> dict[str, str]:
    return {"command": command, "cwd": str(cwd)}


def _check(
    name: str,
    status: str,
    message: str,
    next_action: dict[str, str] | None = None,
    **extra: Any,
) -> Check:
    return {"name": name, "status": status, "message": message, **extra, "nextAction": next_action}


def _read_info(ref: StoreRef) -> StoreInfo:
    """Open the store exactly as the server does and read its meta. Raises `StoreError`."""
    if ref.problem is not None:
        raise ref.problem
    conn = open_reader(ref.path)
    try:
        info = begin_read(conn)
        conn.execute("ROLLBACK")
        return info
    except sqlite3.Error as exc:
        error = translate_error(exc)
        if isinstance(error, StoreError):
            raise error from None
        raise StoreError("store_busy", "the store could not be read in time") from None
    finally:
        conn.close()


def _store_fix(error: StoreError, prefix: str, root: Path) -> dict[str, str] | None:
    if error.code == "store_needs_recovery" or (
        error.code == "unsupported_store_version" and "lwc repair" in error.message
    ):
        return _action(f"{prefix}repair", root)
    return None


def _foreign_store_check(name: str, scope: str, ref: StoreRef) -> Check | None:
    """An LWC 0.16 store, or a symlinked `.lwc`/`wiki.db`, explained with what to do."""
    prefix = "lwc --scope global " if scope == "global" else "lwc "
    if ref.problem is not None and ref.problem.code == "store_path_invalid":
        link = ref.path if ref.path.is_symlink() else ref.path.parent
        if not link.is_symlink():
            return None
        message = (
            f"{link} is a symlink (to {os.readlink(link)}); lwc never follows a symlinked "
            f"store, so the server reports the {scope} Wiki as unavailable: replace the link "
            "with the real folder or file"
        )
        return _check(
            name, ERROR, message, path=str(ref.path), link=str(link),
            error={"code": ref.problem.code, "message": ref.problem.message},
        )  # fmt: skip
    version = lwc_store_version(ref.path) if ref.problem is None else None
    if version is None:
        return None
    message = (
        f"{ref.path} is a Wiki written by LWC (SQLite user_version {version}); lwc reads its "
        "own format: import it (LWC's files are kept unchanged)"
    )
    return _check(
        name, ERROR, message, _action(f"{prefix}import --from-lwc {ref.path}", ref.root),
        path=str(ref.path), lwcFormat=version,
        error={"code": "unsupported_store_version", "message": message},
    )  # fmt: skip


def _store_check(
    name: str, scope: str, ref: StoreRef | None, where: Path, above: StoreRef | None
) -> tuple[Check, StoreInfo | None]:
    prefix = "lwc --scope global " if scope == "global" else "lwc "
    label = f"{scope} Wiki"
    foreign = _foreign_store_check(name, scope, ref) if ref is not None else None
    if foreign is not None:
        return foreign, None
    if ref is None and above is not None:
        # Started in a subdirectory of a project: bind the project, never `lwc init` here
        # (that would make a second, empty Wiki). The server's own guidance says the same.
        message = (
            f"no {label} (.lwc/wiki.db) in {where}; the project's Wiki is above it at "
            f"{above.path}, which a server bound to {where} never reads: bind the host to "
            f"{above.root} with --path (or run `lwc agent install HOST --project` there)"
        )
        action = _action(f"lwc serve --mcp --path {above.root}", above.root)
        return _check(name, MISSING, message, action, path=None, above=str(above.path)), None
    if ref is None:
        message = f"no {label} (.lwc/wiki.db) in {where}"
        return _check(name, MISSING, message, _action(prefix + "init", where), path=None), None
    try:
        info = _read_info(ref)
    except StoreError as exc:
        check = _check(
            name,
            ERROR,
            f"the {label} at {ref.path} cannot be used: {exc.message}",
            _store_fix(exc, prefix, ref.root),
            path=str(ref.path),
            error={"code": exc.code, "message": exc.message},
        )
        return check, None
    message = f"{label} at {ref.path} (revision {info.store_revision})"
    check = _check(
        name, OK, message, path=str(ref.path), storeId=info.store_id,
        revision=info.store_revision,
    )  # fmt: skip
    return check, info


def _graph_check(
    name: str, scope: str, store: Check, info: StoreInfo | None, root: Path | None
) -> Check:
    prefix = "lwc --scope global " if scope == "global" else "lwc "
    if info is None or root is None:
        return _check(
            name,
            store["status"],
            f"needs the {scope} Wiki first",
            store["nextAction"],
            graph=None,
        )
    status = graph_status(info)
    if status == "ready":
        return _check(name, OK, f"{scope} document graph is built and current", graph=status)
    if status == "disabled":
        return _check(
            name,
            MISSING,
            f"the {scope} document graph is disabled (optional: enable it, then "
            f"`{prefix}graph build`)",
            _action(prefix + "config set --graph enabled", root),
            graph=status,
        )
    return _check(
        name,
        MISSING,
        f"the {scope} document graph is enabled but not built for the current content",
        _action(prefix + "graph build", root),
        graph=status,
    )


def _path_check(env: Mapping[str, str], python_bin: Path, cwd: Path) -> Check:
    found = shutil.which("lwc", path=env.get("PATH", ""))
    if found:
        return _check("lwc_on_path", OK, f"`lwc` is {found}", path=found)
    beside = python_bin / "lwc"
    if beside.is_file() and os.access(beside, os.X_OK):
        action = _action(f'export PATH="{python_bin}:$PATH"', cwd)
        message = (
            f"`lwc` is installed in {python_bin}, which is not on PATH (host entries still "
            "work: `lwc agent install` writes the absolute path)"
        )
    else:
        action = _action("pip install lwc-trio", cwd)
        message = "`lwc` is not on PATH, so hosts cannot start the server"
    return _check("lwc_on_path", MISSING, message, action, path=None)


def _what_a_host_sees(error: PathRuleError, *, explicit: bool) -> str:
    """SPEC §1: an explicit `--path` that is too broad stops the server; a default workspace
    (a user-scope entry started by the host in `$HOME` or `/`) serves and guides instead."""
    if explicit or error.code != "workspace_too_broad":
        return f"a server started with --path here exits 2 with `{error.code}`"
    return (
        "a host that starts a user-scope `lwc` here (Claude Code, Codex and Gemini CLI start "
        "it in the session's directory) gets a server that connects and lists lwc_explore, but "
        "answers every call with `workspace_too_broad` and how to fix it (lwc releases before "
        "that rule exit instead: Claude Code shows `Failed to connect`, Codex drops the server "
        "without a word)"
    )


def doctor_report(
    raw_path: str | None,
    *,
    cwd: Path,
    env: Mapping[str, str],
    home: Path,
    python_bin: Path,
) -> dict[str, Any]:
    """The report: the workspace, each check (`ok`/`missing`/`error` with its `nextAction`)
    and whether the memory and code planes would be ready. Never raises for missing pieces."""
    raw = raw_path if raw_path is not None else str(cwd)
    checks: list[Check] = []
    workspace: Path | None
    try:
        workspace = validate_workspace(raw, env)
        checks.append(
            _check("workspace", OK, f"the server would bind {workspace}", path=str(workspace))
        )
    except PathRuleError as exc:
        workspace = None
        checks.append(
            _check(
                "workspace",
                ERROR,
                f"{exc.message}: {_what_a_host_sees(exc, explicit=raw_path is not None)}; run "
                "`lwc doctor` in the project directory (or pass --path DIR), and make sure the "
                "host passes `--path` (`lwc agent install HOST --project` does)",
                path=raw,
                error={"code": exc.code, "message": exc.message},
            )
        )

    if workspace is not None:
        project_ref = find_project_store(workspace, workspace, home=home)
        above = (
            project_store_above(str(workspace), os.path.realpath(home))
            if project_ref is None
            else None
        )
        project, project_info = _store_check(
            "project_store", "project", project_ref, workspace, above
        )
        project_root = project_ref.root if project_ref is not None else None
    else:
        project = _check("project_store", ERROR, "no valid workspace to look in", None, path=None)
        project_info, project_root = None, None
    checks.append(project)
    checks.append(_graph_check("project_graph", "project", project, project_info, project_root))

    global_ref = find_global_store(home)
    glob, global_info = _store_check("global_store", "global", global_ref, home, None)
    checks.append(glob)
    checks.append(
        _graph_check(
            "global_graph", "global", glob, global_info,
            global_ref.root if global_ref is not None else None,
        )
    )  # fmt: skip

    where = workspace if workspace is not None else cwd
    checks += _code_checks(env, workspace, where)
    checks.append(_path_check(env, python_bin, where))

    by_name = {check["name"]: check["status"] for check in checks}
    memory_ready = OK in (by_name["project_store"], by_name["global_store"])
    code_ready = by_name["codegraph_runtime"] == OK and by_name["codegraph_index"] == OK
    return {
        "workspace": str(workspace) if workspace is not None else None,
        "ready": {"memory": memory_ready, "code": code_ready},
        "problems": sum(1 for check in checks if check["status"] != OK),
        "checks": checks,
    }


def _code_checks(env: Mapping[str, str], workspace: Path | None, where: Path) -> list[Check]:
    """The CodeGraph runtime's and the workspace's index's checks (`where`: the folder their
    next actions run in)."""
    out: list[Check] = []
    binary = locate_binary(env)
    if binary is not None:
        out.append(_check("codegraph_runtime", OK, f"CodeGraph runtime {binary}", path=str(binary)))
    else:
        out.append(
            _check(
                "codegraph_runtime",
                MISSING,
                "the CodeGraph runtime is not installed (code mode needs it)",
                _action(INSTALL_COMMAND, where),
                path=None,
            )
        )

    if workspace is None:
        out.append(_check("codegraph_index", ERROR, "no valid workspace to look in", path=None))
    else:
        found = find_index(workspace, workspace)
        if found is None:
            out.append(
                _check(
                    "codegraph_index",
                    MISSING,
                    f"no CodeGraph index (.codegraph/codegraph.db) in {workspace} (building it "
                    "needs the runtime and the project Wiki)",
                    _action(INIT_COMMAND, workspace),
                    path=None,
                )
            )
        elif isinstance(found, IndexInvalid):
            out.append(
                _check(
                    "codegraph_index",
                    ERROR,
                    f"refusing the CodeGraph index: {found.reason}",
                    path=str(found.path),
                )
            )
        else:
            index = found / ".codegraph" / "codegraph.db"
            out.append(_check("codegraph_index", OK, f"CodeGraph index {index}", path=str(index)))

    return out


_HOST_FIELDS = (
    "host",
    "name",
    "scope",
    "file",
    "state",
    "command",
    "gates",
    "message",
    "nextAction",
)


def host_section(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The report's `hosts`: every host config that registers `lwc` (from `lwc agent status`'s
    rows for this workspace), whether its command runs, and the host gates still in its way."""
    return [{key: row[key] for key in _HOST_FIELDS} for row in rows if row["registered"]]
