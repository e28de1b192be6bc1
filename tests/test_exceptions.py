"""Every coded error takes `(code, message)` in that order, positionally or by keyword, and
`str(error)` is the message; a class whose code never varies takes only the message."""

from __future__ import annotations

import pytest

from lwc_trio.exceptions import (
    AgentError,
    ArgumentError,
    ChildFailed,
    CliError,
    CodedError,
    FaultSpecError,
    ForeignStoreError,
    InstallError,
    LwcError,
    PathRuleError,
    StoreChanged,
    StoreError,
    UsageError,
    WikiError,
)

VARYING = [LwcError, PathRuleError, UsageError, CliError, InstallError, AgentError, WikiError]
VARYING += [StoreError, ChildFailed]


@pytest.mark.parametrize("cls", VARYING, ids=lambda cls: cls.__name__)
def test_a_coded_error_takes_code_then_message(cls: type[CodedError]) -> None:
    for err in (
        cls("some_code", "what went wrong"),
        cls(code="some_code", message="what went wrong"),
    ):
        assert (err.code, err.message, str(err)) == (
            "some_code",
            "what went wrong",
            "what went wrong",
        )


def test_an_argument_error_adds_the_field_after_code_and_message() -> None:
    err = ArgumentError("invalid_query", "$.query is required", "query")
    assert (err.code, err.message, err.field, str(err)) == (
        "invalid_query",
        "$.query is required",
        "query",
        "$.query is required",
    )


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        (FaultSpecError, "invalid_faults"),
        (StoreChanged, "store_path_invalid"),
        (ForeignStoreError, "unsupported_store_version"),
    ],
)
def test_a_fixed_code_error_takes_only_the_message(cls: type[CodedError], code: str) -> None:
    err = cls("what went wrong")  # type: ignore[call-arg]
    assert (err.code, err.message, str(err)) == (code, "what went wrong", "what went wrong")
