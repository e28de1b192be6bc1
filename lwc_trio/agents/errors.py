"""The one error type the agent installers raise: a stable `code`, a message naming the file."""

from __future__ import annotations

from lwc_trio.exceptions import LwcError

__all__ = ["AgentError", "ConfigSyntaxError", "DuplicateKeyError"]


class AgentError(LwcError):
    """An agent configuration could not be read, merged or written; nothing was changed.

    `code` is one of `agent_config_invalid` (malformed file or wrong shape),
    `agent_entry_conflict` (a different `lwc` entry exists; `--force` replaces it),
    `agent_config_unsupported` (valid, but not in a form lwc can edit without rewriting it),
    `agent_config_changed` (the file changed while lwc was editing it) or
    `agent_config_unreadable` (an OS error). `exit_code` is what the CLI exits with.
    """

    code = "agent_config_invalid"

    def __init__(self, code: str, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message, code=code)
        self.exit_code = exit_code


class ConfigSyntaxError(ValueError):
    """A config text does not parse; `message` says where (line and column) and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class DuplicateKeyError(ConfigSyntaxError):
    """A key lwc has to edit occurs twice in one object (which one the host uses is unclear)."""
