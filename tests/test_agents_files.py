"""Config writes are atomic, keep the file's mode, back up outside the file's folder, follow
symlinks, and lose no edit."""

from __future__ import annotations

import datetime
import os
import stat
from pathlib import Path

import pytest

from lwc_trio.agents import (
    AgentError,
    backup_path,
    backup_root,
    decode,
    read_config,
    write_config,
)

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def test_backup_names_are_timestamped_and_never_reused(tmp_path: Path) -> None:
    """`ROOT/<UTC stamp>/<absolute path>`, then `<stamp>-2` when that name is taken."""
    path = tmp_path / "proj" / ".cursor" / "mcp.json"
    root = tmp_path / "state"
    first = backup_path(path, root, NOW)
    assert first == root / "20260102T030405Z" / str(path).lstrip("/")
    first.parent.mkdir(parents=True)
    first.write_text("x")
    assert backup_path(path, root, NOW) == root / "20260102T030405Z-2" / str(path).lstrip("/")


def test_backup_root_follows_xdg_state_home() -> None:
    """`$XDG_STATE_HOME/lwc/backups` when it is absolute, else `~/.lwc/backups`."""
    assert backup_root({"HOME": "/h", "XDG_STATE_HOME": "/s"}) == Path("/s/lwc/backups")
    assert backup_root({"HOME": "/h", "XDG_STATE_HOME": "rel"}) == Path("/h/.lwc/backups")
    assert backup_root({"HOME": "/h"}) == Path("/h/.lwc/backups")


def test_replace_keeps_mode_and_backs_up_outside_the_folder(tmp_path: Path) -> None:
    """The new file has the old permission bits; the backup holds the old bytes, is private
    (0600 in a 0700 folder) and lives under the backup root, not beside the file."""
    folder = tmp_path / "proj"
    folder.mkdir()
    path = folder / ".mcp.json"
    path.write_bytes(b'{"a": 1}')
    path.chmod(0o644)
    root = tmp_path / "state"
    backup = write_config(path, '{"a": 2}', original=b'{"a": 1}', backups=root, now=NOW)
    assert path.read_bytes() == b'{"a": 2}'
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert backup is not None
    assert backup.read_bytes() == b'{"a": 1}'
    assert root in backup.parents
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert [p.name for p in folder.iterdir()] == [".mcp.json"]


def test_new_file_creates_directories_and_no_backup(tmp_path: Path) -> None:
    """A first install creates the host's folder and a file with the umask's default mode."""
    path = tmp_path / ".cursor" / "mcp.json"
    old = os.umask(0o022)
    try:
        assert write_config(path, "{}\n", original=None, backups=tmp_path / "b") is None
    finally:
        os.umask(old)
    assert path.read_text() == "{}\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["mcp.json"]


def test_symlinked_config_stays_a_symlink(tmp_path: Path) -> None:
    """A dotfile-managed config keeps its link; the file it points to is replaced."""
    real = tmp_path / "dotfiles" / "config.toml"
    real.parent.mkdir()
    real.write_text("a = 1\n")
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    root = tmp_path / "state"
    backup = write_config(link, "a = 2\n", original=b"a = 1\n", backups=root, now=NOW)
    assert link.is_symlink()
    assert real.read_text() == "a = 2\n"
    assert backup == root / "20260102T030405Z" / str(real).lstrip("/")


def test_a_concurrent_edit_is_never_overwritten(tmp_path: Path) -> None:
    """If the file no longer holds what the plan was made from, nothing is written."""
    path = tmp_path / "settings.json"
    path.write_text('{"host": "edited"}')
    with pytest.raises(AgentError) as info:
        write_config(path, "{}", original=b"{}", backups=tmp_path / "b")
    assert info.value.code == "agent_config_changed"
    assert path.read_text() == '{"host": "edited"}'
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]
    with pytest.raises(AgentError):
        write_config(path, "{}", original=None, backups=tmp_path / "b")  # appeared meanwhile


def test_reading_missing_directory_and_non_utf8(tmp_path: Path) -> None:
    """Missing is None; a directory or non-UTF-8 bytes are invalid, with the file named."""
    assert read_config(tmp_path / "nope.json") is None
    with pytest.raises(AgentError) as info:
        read_config(tmp_path)
    assert info.value.code == "agent_config_invalid"
    with pytest.raises(AgentError) as info:
        decode(b'{"a": "\xff"}', tmp_path / "x.json")
    assert info.value.message.startswith(f"{tmp_path / 'x.json'} is not a valid config file")
