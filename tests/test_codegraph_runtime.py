"""The pinned 1.6.1 runtime is found, installed, verified, and run with a token-free env."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest

from lwc_trio.codegraph import runtime
from lwc_trio.codegraph.runtime import (
    InstallError,
    binary_in,
    child_env,
    init_env,
    install,
    installed_version,
    locate_binary,
    platform_package,
    runtime_dir,
)

HOST = {
    "PATH": "/opt/bin:/usr/bin",
    "HOME": "/home/dev",
    "LANG": "en_US.UTF-8",
    "GITHUB_TOKEN": "ghp_secret",
    "NPM_TOKEN": "npm_secret",
    "ANTHROPIC_API_KEY": "sk-secret",
    "CODEGRAPH_TELEMETRY": "1",
    "CODEGRAPH_DIR": ".elsewhere",
    "LWC_CODEGRAPH_BINARY": "/x/codegraph",
}


def fake_install(
    directory: Path, version: str = "1.6.1", native_version: str | None = None
) -> Path:
    """Lay out what `npm install @colbymchenry/codegraph@VERSION` leaves on this platform."""
    package = platform_package()
    assert package is not None
    main = directory / "node_modules" / "@colbymchenry" / "codegraph"
    native = directory.joinpath("node_modules", *package.split("/"))
    for folder, ver in ((main, version), (native, native_version or version)):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text(json.dumps({"version": ver}))
    binary = binary_in(directory)
    assert binary is not None
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    return binary


def test_runtime_dir_is_pinned_under_home_lwc() -> None:
    """The install folder is `$HOME/.lwc/runtime/codegraph/1.6.1`."""
    assert runtime.VERSION == "1.6.1"
    assert runtime_dir(Path("/home/dev")) == Path("/home/dev/.lwc/runtime/codegraph/1.6.1")


@pytest.mark.parametrize(
    ("system", "machine", "expected"),
    [
        ("linux", "x86_64", "@colbymchenry/codegraph-linux-x64"),
        ("linux", "aarch64", "@colbymchenry/codegraph-linux-arm64"),
        ("darwin", "arm64", "@colbymchenry/codegraph-darwin-arm64"),
        ("darwin", "x86_64", "@colbymchenry/codegraph-darwin-x64"),
        ("win32", "AMD64", None),
        ("linux", "riscv64", None),
    ],
)
def test_platform_package_names_the_native_bundle(
    system: str, machine: str, expected: str | None
) -> None:
    """Linux and macOS on x64/arm64 map to their platform package; others have none."""
    assert platform_package(system, machine) == expected


def test_locate_binary_finds_the_platform_binary_not_the_shim(tmp_path: Path) -> None:
    """An install under HOME is found at node_modules/@colbymchenry/codegraph-<os>-<arch>/bin."""
    binary = fake_install(runtime_dir(tmp_path))
    package = platform_package()
    assert package is not None
    assert locate_binary({"HOME": str(tmp_path)}) == runtime_dir(tmp_path).joinpath(
        "node_modules", *package.split("/"), "bin", "codegraph"
    )
    assert binary.name == "codegraph"


def test_locate_binary_reports_missing_or_unusable_runtime(tmp_path: Path) -> None:
    """No HOME, no install, or a non-executable binary all mean the runtime is missing."""
    assert locate_binary({}) is None
    assert locate_binary({"HOME": "relative/home"}) is None
    assert locate_binary({"HOME": str(tmp_path)}) is None
    binary = fake_install(runtime_dir(tmp_path))
    binary.chmod(0o644)
    assert locate_binary({"HOME": str(tmp_path)}) is None


def test_binary_override_is_used_as_given_and_never_falls_back(tmp_path: Path) -> None:
    """LWC_CODEGRAPH_BINARY wins over an install; a missing override is missing, not ignored."""
    fake_install(runtime_dir(tmp_path))
    custom = tmp_path / "my-codegraph"
    custom.write_text("#!/bin/sh\n")
    custom.chmod(0o755)
    env = {"HOME": str(tmp_path), "LWC_CODEGRAPH_BINARY": str(custom)}
    assert locate_binary(env) == custom
    env["LWC_CODEGRAPH_BINARY"] = str(tmp_path / "absent")
    assert locate_binary(env) is None
    env.update(LWC_CODEGRAPH_BINARY="my-codegraph", PATH=str(tmp_path))
    assert locate_binary(env) == custom


def test_child_env_is_minimal_and_carries_no_host_tokens() -> None:
    """Only PATH, HOME, LANG pass; the telemetry/daemon/watch/update switches are forced."""
    env = child_env(HOST)
    # Spelled out on purpose rather than built from runtime._FIXED_ENV: the test pins the
    # exact environment the child gets, so a switch dropped from the table fails here.
    assert env == {
        "PATH": "/opt/bin:/usr/bin",
        "HOME": "/home/dev",
        "LANG": "en_US.UTF-8",
        "CODEGRAPH_TELEMETRY": "0",
        "DO_NOT_TRACK": "1",
        "NO_COLOR": "1",
        "CODEGRAPH_NO_DAEMON": "1",
        "CODEGRAPH_NO_WATCH": "1",
        "CODEGRAPH_NO_UPDATE_CHECK": "1",
        "CODEGRAPH_DIR": ".codegraph",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.fsmonitor",
        "GIT_CONFIG_VALUE_0": "false",
    }
    assert not any("secret" in value for value in env.values())


def test_child_env_falls_back_to_a_system_path() -> None:
    """Without a host PATH the child still finds /usr/bin and /bin (and gets no empty HOME)."""
    env = child_env({"HOME": ""})
    assert env["PATH"] == "/usr/bin:/bin"
    assert "HOME" not in env


def test_init_env_drops_no_watch_so_no_git_hooks_are_installed() -> None:
    """`codegraph init` must not see CODEGRAPH_NO_WATCH (1.6.1 would install .git hooks)."""
    env = init_env(HOST)
    assert "CODEGRAPH_NO_WATCH" not in env
    assert env["CODEGRAPH_FORCE_WATCH"] == "1"
    assert env["CODEGRAPH_TELEMETRY"] == "0"
    assert env["DO_NOT_TRACK"] == "1"
    assert "GITHUB_TOKEN" not in env


def test_install_runs_npm_for_the_pinned_version_and_verifies_it(tmp_path: Path) -> None:
    """npm is asked for @colbymchenry/codegraph@1.6.1 in the runtime dir; the result is checked."""
    calls: list[tuple[list[str], Path]] = []

    def npm(command: list[str], cwd: Path) -> int:
        calls.append((command, cwd))
        fake_install(runtime_dir(tmp_path))
        return 0

    binary = install(tmp_path, npm="/usr/bin/npm", run=npm)
    directory = runtime_dir(tmp_path)
    assert binary == binary_in(directory)
    (command, cwd), *rest = calls
    assert not rest
    assert command[:4] == ["/usr/bin/npm", "install", "--prefix", str(directory)]
    assert command[-1] == "@colbymchenry/codegraph@1.6.1"
    assert "--ignore-scripts" in command
    assert cwd == directory
    assert installed_version(directory) == "1.6.1"
    # Already installed: npm is not run again.
    assert install(tmp_path, npm="/usr/bin/npm", run=npm) == binary
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("version", "native", "status"),
    [("1.7.0", None, 0), ("1.6.1", "1.6.0", 0), ("1.6.1", None, 1)],
)
def test_install_refuses_a_wrong_or_failed_install(
    tmp_path: Path, version: str, native: str | None, status: int
) -> None:
    """Another version, mismatched packages, or an npm failure is codegraph_install_failed."""

    def npm(command: list[str], cwd: Path) -> int:
        fake_install(runtime_dir(tmp_path), version, native)
        return status

    with pytest.raises(InstallError) as caught:
        install(tmp_path, npm="npm", run=npm)
    assert caught.value.code == "codegraph_install_failed"
    assert "@colbymchenry/codegraph" in caught.value.message


def test_install_explains_a_missing_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without npm on PATH the error says to install Node.js, and nothing is created."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(InstallError) as caught:
        install(home)
    assert caught.value.code == "npm_not_found"
    assert "Node.js" in caught.value.message
    assert os.listdir(home) == []


def test_install_refuses_unsupported_platforms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A platform without a native bundle gets unsupported_platform before npm runs."""
    monkeypatch.setattr(platform, "machine", lambda: "sparc64")
    with pytest.raises(InstallError) as caught:
        install(tmp_path, npm="npm", run=lambda command, cwd: pytest.fail("npm ran"))
    assert caught.value.code == "unsupported_platform"
