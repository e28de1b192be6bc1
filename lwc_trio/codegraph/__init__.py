"""The code plane: the pinned CodeGraph runtime, index readiness, and the supervised child.

Modules, bottom up: `runtime` (where the runtime lives, install, child environment), `index`
(readiness, no side effects), `wire` and `explore_output` (sans-IO MCP client and result
shaping; the cut of the explore text is `protocol.code_text`, which the budget applies too),
`child` and `plane` (Trio: the supervised process and the one-call-in-flight plane).

This facade re-exports only the synchronous pieces, so the CLI can use them without importing
trio; the server's code-plane worker imports `lwc_trio.codegraph.plane` directly.
"""

from lwc_trio.codegraph.index import Ready, find_index, readiness
from lwc_trio.codegraph.runtime import (
    PACKAGE,
    VERSION,
    InstallError,
    child_env,
    install,
    locate_binary,
    runtime_dir,
)

__all__ = [
    "PACKAGE",
    "VERSION",
    "InstallError",
    "Ready",
    "child_env",
    "find_index",
    "install",
    "locate_binary",
    "readiness",
    "runtime_dir",
]
