"""Every error type lwc_trio raises on purpose lives here.

Every error that carries a stable machine `code` takes `(code, message)` in that order (both
may be passed by keyword); a class whose code never varies takes only `message`. `str(error)`
is always the message.
"""

from __future__ import annotations


class CodedError(Exception):
    """A failure with a stable machine `code` (a SPEC §2.1 code) and a human `message`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class LwcError(CodedError):
    """Base class of the CLI, path and installer failures: `lwc` reports `code` and `message`."""


class PathRuleError(LwcError):
    """A path broke a rule of SPEC §1/§3.

    `code` is one of `invalid_project_path`, `project_path_outside_workspace`,
    `workspace_too_broad` or `invalid_workspace`; `message` names the field and the rule.
    """


class UsageError(LwcError):
    """Command-line usage or validation failure (exit 2); `code` is usually `invalid_usage`."""


class CliError(LwcError):
    """A CLI command failed (exit 1 unless `exit_code` says otherwise)."""

    def __init__(self, code: str, message: str, *, exit_code: int = 1) -> None:
        super().__init__(code, message)
        self.exit_code = exit_code


class FaultSpecError(UsageError):
    """`LWC_FAULTS` is malformed (code `invalid_faults`)."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_faults", message)


class InstallError(LwcError):
    """`lwc cg install` could not produce a verified runtime; `code` says why."""


# -- the memory plane (stores and the Wiki write side) ---------------------------


class WikiError(CodedError):
    """A Wiki operation was refused or failed; `code` is stable, `message` is for people."""


class StoreError(WikiError):
    """A store could not be used; `code` is one of the SPEC §2.1 memory codes."""


class StoreChanged(StoreError):
    """The tree changed under a store while it was being opened; retrying may succeed.

    Reported, once retries are used up, as `store_path_invalid`.
    """

    def __init__(self, message: str) -> None:
        super().__init__("store_path_invalid", message)


class ForeignStoreError(StoreError):
    """The file is a store written by LWC 0.16: only `lwc import --from-lwc` reads it."""

    def __init__(self, message: str) -> None:
        super().__init__("unsupported_store_version", message)


class MemoryCancelled(Exception):
    """The caller set the `cancelled` event while a query was running."""


# -- agent installers -------------------------------------------------------------


class AgentError(LwcError):
    """An agent configuration could not be read, merged or written; nothing was changed.

    `code` is one of `agent_config_invalid` (malformed file or wrong shape),
    `agent_entry_conflict` (a different `lwc` entry exists; `--force` replaces it),
    `agent_config_unsupported` (valid, but not in a form lwc can edit without rewriting it),
    `agent_config_changed` (the file changed while lwc was editing it) or
    `agent_config_unreadable` (an OS error). `exit_code` is what the CLI exits with.
    """

    def __init__(self, code: str, message: str, *, exit_code: int = 1) -> None:
        super().__init__(code, message)
        self.exit_code = exit_code


class ConfigSyntaxError(ValueError):
    """A config text does not parse; `message` says where (line and column) and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class DuplicateKeyError(ConfigSyntaxError):
    """A key lwc has to edit occurs twice in one object (which one the host uses is unclear)."""


# -- the request path (arguments, planes, lanes, the CodeGraph child) ---------------


class ArgumentError(CodedError):
    """An `lwc_explore` argument broke a rule of SPEC §2: becomes an `isError` tool result.

    `code` is the SPEC §2.1 code, `message` says what is wrong, `field` names the argument as
    the client sent it.
    """

    def __init__(self, code: str, message: str, field: str) -> None:
        super().__init__(code, message)
        self.field = field

    def to_json(self) -> dict[str, object]:
        return {"error": {"code": self.code, "message": self.message, "field": self.field}}


class WorkerCrashed(Exception):
    """A plane worker died (injected `crash`); its supervisor restarts it."""


class LaneClosed(Exception):
    """A thread lane shut down before the job could run."""


class ChildFailed(CodedError):
    """Starting or talking to the CodeGraph child failed: a SPEC §2.1 `code` and a `message`.

    The code plane answers the request with exactly these (an `error` state).
    """
