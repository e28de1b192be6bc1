"""Every error type lwc_trio raises on purpose lives here."""

from __future__ import annotations


class LwcError(Exception):
    """Base class: a failure with a stable machine `code` and a human `message`."""

    code: str = "internal_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class PathRuleError(LwcError):
    """A path broke a rule of SPEC §1/§3.

    `code` is one of `invalid_project_path`, `project_path_outside_workspace`,
    `workspace_too_broad` or `invalid_workspace`; `message` names the field and the rule.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


class UsageError(LwcError):
    """Command-line usage or validation failure (exit 2)."""

    code = "invalid_usage"


class CliError(LwcError):
    """A CLI command failed (exit 1 unless `exit_code` says otherwise)."""

    def __init__(self, code: str, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message, code=code)
        self.exit_code = exit_code


class FaultSpecError(UsageError):
    """`LWC_FAULTS` is malformed."""

    code = "invalid_faults"
