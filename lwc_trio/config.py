"""Validated server configuration: one frozen value built by the CLI."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs

DEFAULT_MEMORY_TIMEOUT: Final = 5.0
DEFAULT_CODE_TIMEOUT: Final = 10.0
DEFAULT_MAX_IN_FLIGHT: Final = 32
DEFAULT_QUEUE_SIZE: Final = 256
DEFAULT_GRACE: Final = 2.0


@attrs.frozen
class ServerConfig:
    """Everything the actors need to know, fixed at start-up."""

    workspace: Path
    """Canonical workspace directory every projectPath must lie in."""
    home: Path
    """The user's home: global memory lives in `home/.lwc/wiki.db`."""
    env: Mapping[str, str]
    """Snapshot of the process environment (PATH, LANG, LWC_CODEGRAPH_BINARY…)."""
    version: str
    allowed_scopes: frozenset[str] = frozenset({"project", "global"})
    memory_timeout: float = DEFAULT_MEMORY_TIMEOUT
    code_timeout: float = DEFAULT_CODE_TIMEOUT
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    queue_size: int = DEFAULT_QUEUE_SIZE
    grace: float = DEFAULT_GRACE
