"""Which `lwc` a host entry should run, and whether a registered command actually runs.

A host starts the server with its own environment: a GUI editor on macOS has a short PATH, a
host started from a shell where a virtualenv is not active has none of its scripts. So the entry
gets an absolute path (SPEC §7): the `lwc` on PATH, else the `lwc` that is running the
installer, else this Python interpreter with `-P -m lwc_trio` — never a bare `lwc` the host
cannot find. (`-P`: the host starts the server in the project, and without it Python would put
that directory first on `sys.path`, so a package a repository ships under a name lwc imports
would run.) That holds for every host and scope, a committed project file included: there the
entry names one machine's `lwc`, and on another machine `lwc agent status` reports it `broken`
with the `--force` install that rewrites only its command.

Checking a command means running it (`COMMAND [PREFIX] --version`), so a command that comes
from a project file — which a cloned repository can ship — is run only when it is recognisably
this lwc without running it: the same file (device and inode) as one of `known_launchers`, with
that launcher's exact arguments. Any other is reported not verified (`runs: null`) and never
started. Checks run in `/`, never in the project.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from lwc_trio.programs import find_program

__all__ = [
    "PYTHON_PREFIX",
    "VERSION_TIMEOUT_S",
    "CommandCheck",
    "Launcher",
    "check_command",
    "find_launcher",
    "known_launchers",
]

VERSION_TIMEOUT_S = 10.0
PYTHON_PREFIX = ("-P", "-m", "lwc_trio")
"""What an interpreter entry runs before `serve`: the module, without the working directory
on `sys.path`."""
_OLD_PYTHON_PREFIX = ("-m", "lwc_trio")  # written before `-P`; still this lwc when checked
_NEUTRAL_CWD = "/"


@attrs.frozen
class Launcher:
    """The program an entry runs and the arguments that go before `serve --mcp`."""

    command: str
    prefix: tuple[str, ...]
    source: str  # "path" | "installer" | "python"


def _executable_file(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_launcher(env: Mapping[str, str], argv0: str, executable: str) -> Launcher:
    """The `lwc` on `env`'s PATH, else the `lwc` script running now (`argv0`, or the one
    beside `executable`), else `executable -m lwc_trio`. Paths are absolute, links kept (a
    pipx or Homebrew link survives upgrades; its target does not)."""
    found = find_program("lwc", env)
    if found:
        return Launcher(os.path.abspath(found), (), "path")
    for candidate in _scripts(argv0, executable):
        return Launcher(candidate, (), "installer")
    return Launcher(os.path.abspath(executable), PYTHON_PREFIX, "python")


def _scripts(argv0: str, executable: str) -> list[str]:
    """The `lwc` scripts of the running lwc: its argv[0], the one beside its Python."""
    candidates = []
    if argv0 and os.path.basename(argv0) == "lwc":
        candidates.append(argv0)
    if executable:
        candidates.append(os.path.join(os.path.dirname(executable), "lwc"))
    return [os.path.abspath(c) for c in candidates if _executable_file(c)]


def known_launchers(env: Mapping[str, str], argv0: str, executable: str) -> tuple[Launcher, ...]:
    """Every way of starting this lwc that status may run from a project file: the launcher
    `find_launcher` picks, the running `lwc` scripts, and this Python with `-m lwc_trio`
    (`-P` or not)."""
    known = [find_launcher(env, argv0, executable)]
    known += [Launcher(script, (), "installer") for script in _scripts(argv0, executable)]
    if executable:
        python = os.path.abspath(executable)
        known += [
            Launcher(python, prefix, "python") for prefix in (PYTHON_PREFIX, _OLD_PYTHON_PREFIX)
        ]
    return tuple(known)


def _is_known(resolved: str, prefix: list[str], known: Sequence[Launcher]) -> bool:
    """Whether `resolved` with `prefix` is one of `known`: the same file, the same arguments."""
    for launcher in known:
        if tuple(prefix) != launcher.prefix:
            continue
        try:
            if os.path.samefile(resolved, launcher.command):
                return True
        except OSError:
            continue
    return False


@attrs.frozen
class CommandCheck:
    """What running a registered entry's command with `--version` showed."""

    command: str
    resolved: str | None  # the file it names (bare names looked up on PATH), or None
    runs: bool | None  # None: not run (a project file's command lwc does not recognise)
    version: str | None
    problem: str | None

    def to_json(self) -> dict[str, Any]:
        """The `command` object of a status row."""
        return {
            "command": self.command,
            "resolved": self.resolved,
            "runs": self.runs,
            "version": self.version,
            "problem": self.problem,
        }


def _prefix(args: Any) -> list[str]:
    """The entry's arguments before `serve` (`-m lwc_trio` for an interpreter entry)."""
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return []
    return args[: args.index("serve")] if "serve" in args else []


def check_command(
    command: Any,
    args: Any,
    env: Mapping[str, str],
    *,
    known: Sequence[Launcher] | None = None,
    timeout: float = VERSION_TIMEOUT_S,
) -> CommandCheck:
    """Does `command` exist, and does `command [prefix] --version` exit 0 within `timeout`?

    A bare name is looked up on `env`'s PATH (its absolute entries), which may be longer than
    the host's own — the problem text says so. With `known` (the entry comes from a project
    file) the command is run only when it is one of those launchers, else reported not run
    (`runs` None). Nothing is written; the child runs in `/` with no stdin."""
    if not isinstance(command, str) or not command:
        return CommandCheck(str(command), None, False, None, "the entry has no command")
    if os.sep in command:
        resolved: str | None = command if os.path.isabs(command) else None
        if resolved is None:
            problem = f"{command!r} is a relative path, which depends on the host's directory"
            return CommandCheck(command, None, False, None, problem)
        if not os.path.exists(resolved):
            return CommandCheck(command, None, False, None, f"{command} does not exist")
        if not _executable_file(resolved):
            return CommandCheck(command, resolved, False, None, f"{command} is not executable")
    else:
        resolved = find_program(command, env)
        if resolved is None:
            problem = f"`{command}` is not on PATH, so the host cannot start it"
            return CommandCheck(command, None, False, None, problem)
    prefix = _prefix(args)
    if known is not None and not _is_known(resolved, prefix, known):
        shown = " ".join([resolved, *prefix])
        problem = (
            f"`{shown}` was not run: the entry comes from the project's own file, which a cloned "
            "repository can ship, and lwc runs from one only an lwc it recognises without "
            "running it (the `lwc` on PATH, this lwc, or its Python with `-m lwc_trio`)"
        )
        return CommandCheck(command, resolved, None, None, problem)
    argv = [resolved, *prefix, "--version"]
    try:
        done = subprocess.run(
            argv,
            cwd=_NEUTRAL_CWD,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=dict(env),
            check=False,
        )
    except subprocess.TimeoutExpired:
        problem = f"`{' '.join(argv)}` did not finish within {timeout:g} s"
        return CommandCheck(command, resolved, False, None, problem)
    except OSError as exc:
        problem = f"{resolved} cannot be run: {exc.strerror or type(exc).__name__}"
        return CommandCheck(command, resolved, False, None, problem)
    output = (done.stdout.strip() or done.stderr.strip()).splitlines()
    first = output[0] if output else ""
    if done.returncode != 0:
        problem = f"`{' '.join(argv)}` exited {done.returncode}" + (f": {first}" if first else "")
        return CommandCheck(command, resolved, False, None, problem)
    if not first.startswith("lwc "):
        problem = f"{resolved} is not lwc (`--version` printed {first!r})"
        return CommandCheck(command, resolved, False, first or None, problem)
    caveat = None
    if os.sep not in command:
        caveat = (
            f"`{command}` is found on this PATH ({resolved}); a host with a shorter PATH "
            "will not find it"
        )
    return CommandCheck(command, resolved, True, first, caveat)
