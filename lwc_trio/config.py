"""Validated server configuration: one frozen value built by the CLI."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs

DEFAULT_MEMORY_TIMEOUT: Final = 5.0
DEFAULT_CODE_TIMEOUT: Final = 10.0
DEFAULT_MAX_IN_FLIGHT: Final = 32
DEFAULT_QUEUE_SIZE: Final = 256
DEFAULT_GRACE: Final = 2.0
DEFAULT_AUTH_TIMEOUT: Final = 2.0
"""SPEC §3: a path check not done by then is `invalid_project_path`."""
DEFAULT_HTTP_LISTEN: Final = "127.0.0.1:8080"


@attrs.frozen
class HttpConfig:
    """The HTTP transport's validated flags (SPEC §1.2)."""

    host: str = "127.0.0.1"
    """The listen host as given (lowercased, IPv6 without brackets)."""
    address: str = "127.0.0.1"
    """The IP address `host` resolved to: what the socket binds."""
    port: int = 8080
    """0 asks the kernel for a free port."""
    base_path: str = "/"
    """Normalised mount path: requests must hit exactly this path."""
    remote: bool = False
    """`--http-allow-remote`: a bearer token is required and scopes default to project."""
    token_file: Path | None = None
    """Read once at start-up; every request must carry its bearer token."""
    allowed_hosts: tuple[str, ...] = ()
    """Extra `Host` names (`NAME` or `NAME:PORT`, lowercased) from `--http-allowed-host`."""


def _canonical(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


@attrs.frozen
class ServerConfig:
    """Everything the actors need to know, fixed at start-up."""

    workspace: Path
    """Canonical workspace directory every projectPath must lie in."""
    home: Path = attrs.field(converter=_canonical)
    """The user's home, canonical: global memory lives in `home/.lwc/wiki.db`. Resolved once
    here so that no tool call has to resolve it again."""
    env: Mapping[str, str]
    """Snapshot of the process environment (PATH, LANG, LWC_CODEGRAPH_BINARY…)."""
    version: str
    allowed_scopes: frozenset[str] = frozenset({"project", "global"})
    memory_timeout: float = DEFAULT_MEMORY_TIMEOUT
    code_timeout: float = DEFAULT_CODE_TIMEOUT
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    queue_size: int = DEFAULT_QUEUE_SIZE
    grace: float = DEFAULT_GRACE
    auth_timeout: float = DEFAULT_AUTH_TIMEOUT
    http: HttpConfig | None = None
    """Set only with `--transport http`."""
    workspace_refusal: str | None = None
    """Set when the default workspace (no `--path`) is a prohibited root (SPEC §1): the
    server still serves, and every tool call is `workspace_too_broad` with this message."""
