"""The programs lwc starts, found and configured so that none of them comes from the tree.

`lwc` runs inside cloned repositories (SPEC §7: "no file of the working directory or the tree
is ever imported or executed by lwc or a process it starts"). Two ways a tree could slip a
program in, both closed here:

- **A relative PATH entry.** An empty entry or `.` in `PATH` names the working directory, so
  `git` or `npm` looked up on it could be a file the repository ships. `find_program` looks a
  name up on the absolute entries only, and `search_path` gives a child the same PATH.
- **A repository's own git configuration.** `core.fsmonitor` names a command git runs for
  `ls-files` and `status`, and a `.git/config` in a tree someone else prepared (an archive, a
  shared or mounted checkout) can set it. lwc's own git calls pass `-c core.fsmonitor=false`;
  a child that runs git itself (CodeGraph) gets the same setting through git's environment
  configuration (`git_guarded`), which wins over the repository's file (git ≥ 2.31).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

__all__ = ["GIT_GUARD", "find_program", "git_guarded", "search_path"]

GIT_GUARD = (("core.fsmonitor", "false"),)
"""Git settings a child's git must use whatever the repository's configuration says."""


def search_path(value: str | None) -> str:
    """`value` (a PATH) without its relative and empty entries, which name the working
    directory; `os.defpath`'s absolute entries when nothing is left."""
    entries = [entry for entry in (value or "").split(os.pathsep) if os.path.isabs(entry)]
    if not entries:
        entries = [entry for entry in os.defpath.split(os.pathsep) if os.path.isabs(entry)]
    return os.pathsep.join(entries)


def find_program(name: str, env: Mapping[str, str]) -> str | None:
    """The absolute path of the program `name` on `env`'s PATH, its absolute entries only."""
    return shutil.which(name, path=search_path(env.get("PATH")))


def git_guarded(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with `GIT_GUARD` added to git's environment configuration (`GIT_CONFIG_COUNT`,
    `GIT_CONFIG_KEY_n`, `GIT_CONFIG_VALUE_n`) after any the caller already set, and PATH
    narrowed by `search_path`."""
    out = dict(env)
    try:
        count = max(int(out.get("GIT_CONFIG_COUNT", "0") or "0"), 0)
    except ValueError:
        count = 0
    for key, value in GIT_GUARD:
        out[f"GIT_CONFIG_KEY_{count}"] = key
        out[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    out["GIT_CONFIG_COUNT"] = str(count)
    out["PATH"] = search_path(out.get("PATH"))
    return out
