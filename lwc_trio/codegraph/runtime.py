"""The pinned CodeGraph runtime: where it lives, how it is installed, what environment it gets.

Synchronous and trio-free: used by the CLI (`lwc cg install|init|status`) and, for the cheap
per-call lookup, by the code plane. SPEC §5.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from lwc_trio.exceptions import InstallError
from lwc_trio.programs import git_guarded

__all__ = [
    "BINARY_ENV",
    "PACKAGE",
    "VERSION",
    "InstallError",
    "binary_in",
    "child_env",
    "init_env",
    "install",
    "installed_version",
    "locate_binary",
    "platform_package",
    "runtime_dir",
]

PACKAGE = "@colbymchenry/codegraph"
VERSION = "1.6.1"
BINARY_ENV = "LWC_CODEGRAPH_BINARY"

# Passed through from the host; everything else (tokens, proxies, CODEGRAPH_* overrides) is not.
_PASSED_THROUGH = ("PATH", "HOME", "LANG")
_FALLBACK_PATH = "/usr/bin:/bin"

# Switches read by 1.6.1 (found by grepping its lib/dist for `process.env.`; see
# docs/codegraph.md). Each closes a way for the runtime to reach outside the project.
_FIXED_ENV: dict[str, str] = {
    # Telemetry: DO_NOT_TRACK wins over everything, CODEGRAPH_TELEMETRY=0 over the saved choice;
    # with either set nothing is queued under ~/.codegraph either.
    "CODEGRAPH_TELEMETRY": "0",
    "DO_NOT_TRACK": "1",
    "NO_COLOR": "1",
    # Without it `serve` proxies to a shared background daemon that outlives our process group.
    "CODEGRAPH_NO_DAEMON": "1",
    "CODEGRAPH_NO_WATCH": "1",
    # The background "newer release on GitHub" check (also implied by DO_NOT_TRACK).
    "CODEGRAPH_NO_UPDATE_CHECK": "1",
    # Pin the index folder name: under WSL on /mnt drives 1.6.1 would otherwise pick
    # `.codegraph-wsl`, and a host-set CODEGRAPH_DIR would move it where lwc never looks.
    "CODEGRAPH_DIR": ".codegraph",
}

_OS_NAMES = {"linux": "linux", "darwin": "darwin"}
_ARCH_NAMES = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def runtime_dir(home: Path) -> Path:
    """Where `lwc cg install` puts the pinned runtime: `HOME/.lwc/runtime/codegraph/1.6.1`."""
    return home / ".lwc" / "runtime" / "codegraph" / VERSION


def platform_package(system: str | None = None, machine: str | None = None) -> str | None:
    """`@colbymchenry/codegraph-<os>-<arch>` for this machine, or None off Linux/macOS x64/arm64."""
    os_name = _OS_NAMES.get((system if system is not None else sys.platform).lower())
    arch = _ARCH_NAMES.get((machine if machine is not None else platform.machine()).lower())
    if os_name is None or arch is None:
        return None
    return f"{PACKAGE}-{os_name}-{arch}"


def binary_in(directory: Path, package: str | None = None) -> Path | None:
    """The platform binary's path inside an install directory (whether or not it exists)."""
    package = package if package is not None else platform_package()
    if package is None:
        return None
    return directory.joinpath("node_modules", *package.split("/"), "bin", "codegraph")


def _is_executable_file(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def locate_binary(env: Mapping[str, str]) -> Path | None:
    """The CodeGraph executable to run, or None when the runtime is missing.

    `LWC_CODEGRAPH_BINARY` wins and is used as given: a path (absolute, or relative to the
    current directory), or a bare command name looked up on the environment's PATH. Otherwise
    the platform binary under `runtime_dir($HOME)`. We run that binary rather than the npm shim,
    which needs `node` on PATH and may download. Only stats files; never raises.
    """
    override = env.get(BINARY_ENV, "")
    if override:
        if os.sep not in override:
            found = shutil.which(override, path=env.get("PATH", _FALLBACK_PATH))
            return Path(found) if found else None
        candidate = Path(override)
        return candidate if _is_executable_file(candidate) else None
    home = env.get("HOME", "")
    if not home.startswith("/"):
        return None
    binary = binary_in(runtime_dir(Path(home)))
    return binary if binary is not None and _is_executable_file(binary) else None


def child_env(env: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of a `codegraph serve` child (SPEC §5).

    PATH, HOME and LANG from `env` (PATH falls back to `/usr/bin:/bin`), plus the fixed
    switches that keep the runtime local and quiet. Host tokens never pass.
    """
    out = {name: env[name] for name in _PASSED_THROUGH if env.get(name)}
    out.setdefault("PATH", _FALLBACK_PATH)
    out.update(_FIXED_ENV)
    # CodeGraph runs git in the project: a planted core.fsmonitor must not run (docs/security.md).
    return git_guarded(out)


def init_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of `codegraph init`: `child_env` without CODEGRAPH_NO_WATCH.

    With watching off, 1.6.1's `init --yes` installs post-commit/merge/checkout hooks into
    `.git/hooks`; CODEGRAPH_FORCE_WATCH=1 also suppresses that offer where 1.6.1 would turn
    watching off by itself (WSL /mnt drives). `init` itself never starts a watcher.
    """
    out = child_env(env)
    del out["CODEGRAPH_NO_WATCH"]
    out["CODEGRAPH_FORCE_WATCH"] = "1"
    return out


def _package_version(package_json: Path) -> str | None:
    try:
        data = json.loads(package_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None


def installed_version(directory: Path) -> str | None:
    """The version of a complete install in `directory`, or None.

    Complete means: the main package and this platform's package both declare the same version
    and the platform binary is an executable file.
    """
    package = platform_package()
    binary = binary_in(directory, package)
    if package is None or binary is None or not _is_executable_file(binary):
        return None
    main = _package_version(directory.joinpath("node_modules", *PACKAGE.split("/"), "package.json"))
    native = _package_version(
        directory.joinpath("node_modules", *package.split("/"), "package.json")
    )
    return main if main is not None and main == native else None


Runner = Callable[[list[str], Path], int]


def _run_npm(command: list[str], cwd: Path) -> int:
    # npm keeps the host environment: it needs the user's registry, proxy and cache settings.
    return subprocess.run(command, cwd=cwd, stdin=subprocess.DEVNULL, check=False).returncode


def install(
    home: Path,
    *,
    npm: str | None = None,
    run: Runner = _run_npm,
) -> Path:
    """Install the pinned runtime under `runtime_dir(home)` with npm and return the binary.

    Idempotent: an existing verified install is returned without running npm. `npm` defaults to
    the `npm` found on PATH; `run(command, cwd)` runs it and returns its exit status (the CLI
    passes one that shows or hides npm's output). Raises `InstallError` with code
    `npm_not_found`, `unsupported_platform` or `codegraph_install_failed`.
    """
    package = platform_package()
    if package is None:
        raise InstallError(
            "unsupported_platform",
            f"CodeGraph {VERSION} ships binaries for Linux and macOS on x64 and arm64 only, "
            f"not {sys.platform}/{platform.machine()}",
        )
    directory = runtime_dir(home)
    binary = binary_in(directory, package)
    assert binary is not None  # platform_package() is not None
    if installed_version(directory) == VERSION:
        return binary
    npm_path = npm if npm is not None else shutil.which("npm")
    if not npm_path:
        raise InstallError(
            "npm_not_found",
            "npm was not found on PATH: install Node.js (it includes npm), "
            "then run `lwc cg install` again",
        )
    directory.mkdir(parents=True, exist_ok=True)
    # --ignore-scripts: neither package needs an install script, so none gets to run.
    command = [
        npm_path, "install", "--prefix", str(directory), "--no-audit", "--no-fund",
        "--ignore-scripts", f"{PACKAGE}@{VERSION}",
    ]  # fmt: skip
    try:
        status = run(command, directory)
    except OSError as exc:
        raise InstallError(
            "codegraph_install_failed", f"could not run npm: {exc.strerror or exc}"
        ) from None
    if status != 0:
        raise InstallError(
            "codegraph_install_failed",
            f"npm install {PACKAGE}@{VERSION} failed with exit status {status}",
        )
    found = installed_version(directory)
    if found != VERSION:
        raise InstallError(
            "codegraph_install_failed",
            f"npm finished but {directory} holds no complete {PACKAGE} {VERSION} for this "
            f"platform (found {found or 'nothing usable'}; is {package} blocked by npm's "
            "optional-dependency settings?)",
        )
    return binary
