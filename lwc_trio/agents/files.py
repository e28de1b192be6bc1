"""Reading and writing host config files: strict UTF-8, a backup, atomic replacement.

A config file may be a symlink (dotfile managers): it is read through the link and the file it
points to is replaced, so the link survives. Writes go to a temporary file in the same directory,
are flushed to disk and renamed over the target with the old file's permission bits; before the
rename the target is read again, so an edit the host made meanwhile is never overwritten.

Backups never go beside the file: a project's `.cursor/` or `.mcp.json` is committed, and a
`mcp.json.lwc-backup-...` there is noise in every `git status` (and may carry another server's
token into a commit). They go under the user's state directory (`backup_root`), mirroring the
file's absolute path below a UTC time stamp, readable by the user only.
"""

from __future__ import annotations

import datetime
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from lwc_trio.exceptions import AgentError

__all__ = ["backup_path", "backup_root", "decode", "read_config", "write_config"]


def _os_error(path: Path, exc: OSError) -> AgentError:
    reason = exc.strerror or type(exc).__name__
    return AgentError("agent_config_unreadable", f"{path}: {reason}")


def read_config(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist. Raises `AgentError` otherwise."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise AgentError("agent_config_invalid", f"{path} is a directory, not a file") from None
    except OSError as exc:
        raise _os_error(path, exc) from None


def decode(data: bytes, path: Path) -> str:
    """The text of a config file; raises `AgentError` (`agent_config_invalid`) if not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentError(
            "agent_config_invalid",
            f"{path} is not a valid config file: byte {exc.start} is not UTF-8; left unchanged",
        ) from None


def backup_root(env: Mapping[str, str]) -> Path:
    """Where backups go: `$XDG_STATE_HOME/lwc/backups` when that is an absolute path (the XDG
    base-directory rule), else `~/.lwc/backups` beside lwc's other per-user files."""
    state = env.get("XDG_STATE_HOME", "")
    if state.startswith("/"):
        return Path(state) / "lwc" / "backups"
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".lwc" / "backups"


def backup_path(path: Path, root: Path, now: datetime.datetime) -> Path:
    """`ROOT/YYYYMMDDTHHMMSSZ/<path without its leading />`, with `-2`, `-3`... after the time
    stamp if that name is taken. `path` is absolute."""
    stamp = now.astimezone(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    relative = Path(*path.parts[1:])
    candidate = root / stamp / relative
    number = 1
    while os.path.lexists(candidate):
        number += 1
        candidate = root / f"{stamp}-{number}" / relative
    return candidate


def _current_umask() -> int:
    # There is no way to read the umask without setting it; the CLI is single-threaded here.
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_new(path: Path, data: bytes, mode: int, *, exclusive: bool) -> None:
    """Write `data` to a temporary file beside `path` and rename it into place (the rename
    must stay on one filesystem; the temporary file is removed on any failure)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".lwc-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if exclusive:
            # A backup (or a file that did not exist) must never replace an existing file:
            # link fails if the name is taken. Filesystems without hard links get a check.
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise
            except OSError:
                if os.path.lexists(path):
                    raise FileExistsError(str(path)) from None
                os.replace(tmp, path)
            else:
                os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def write_config(
    path: Path,
    text: str,
    *,
    original: bytes | None,
    backups: Path,
    now: datetime.datetime | None = None,
    private: bool = False,
) -> Path | None:
    """Atomically replace `path` (or its symlink's target) with `text`; return the backup.

    `original` is what the plan was made from (None: the file did not exist, so there is no
    backup and missing parent directories are created); its backup goes under `backups`
    (see `backup_root`; the folder is made 0700 and the copy 0600). A new file gets
    `0666 & ~umask`, or 0600 (and new folders 0700) when `private` — user config files hold
    other servers' tokens, and the hosts create theirs that way; an existing file keeps its
    mode. Raises `AgentError`:
    `agent_config_changed` when the file no longer holds `original`, `agent_config_unreadable`
    for OS errors.
    """
    target = Path(os.path.realpath(path))
    data = text.encode("utf-8")
    try:
        if original is None:
            if os.path.lexists(target):
                raise _changed(path)
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700 if private else 0o777)
            mode = 0o600 if private else 0o666 & ~_current_umask()
            _write_new(target, data, mode, exclusive=True)
            return None
        mode = stat.S_IMODE(os.stat(target).st_mode)
        if target.read_bytes() != original:
            raise _changed(path)
        backup = backup_path(target, backups, now or datetime.datetime.now(datetime.UTC))
        backups.mkdir(parents=True, exist_ok=True, mode=0o700)
        backup.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_new(backup, original, 0o600, exclusive=True)
        # Read once more: the host may have saved the file while the backup was written.
        if target.read_bytes() != original:
            raise _changed(path)
        _write_new(target, data, mode, exclusive=False)
        return backup
    except AgentError:
        raise
    except FileExistsError:
        raise _changed(path) from None
    except OSError as exc:
        raise _os_error(path, exc) from None


def _changed(path: Path) -> AgentError:
    return AgentError(
        "agent_config_changed",
        f"{path} changed while lwc was editing it; nothing was written — run the command again",
    )
