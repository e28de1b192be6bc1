"""Strict validation of `lwc_explore` arguments (SPEC §2).

One cattrs `Converter` sits at the wire boundary. Its primitive hooks are
strict: cattrs would happily turn `"3"` into 3 and `True` into 1, which the
contract forbids. Fields are checked in the SPEC's order and the first error
wins, so the model gets one precise correction at a time.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
import cattrs

from lwc_trio.exceptions import ArgumentError
from lwc_trio.protocol.tool import (
    DEFAULT_MAX_DOCUMENTS,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_TOKENS,
    LIMIT_MAX,
    LIMIT_MIN,
    MAX_TOKENS_MAX,
    MAX_TOKENS_MIN,
    MODES,
    PATH_MAX,
    QUERY_MAX,
    SCOPES,
)

Mode = Literal["memory", "code", "all"]
Scope = Literal["project", "global", "all"]


@attrs.frozen
class ExploreArgs:
    """Arguments that passed every wire-level rule (paths not yet authorized)."""

    query: str
    projectPath: str
    mode: Mode = "memory"
    scope: Scope = "all"
    maxDocuments: int = DEFAULT_MAX_DOCUMENTS
    maxFiles: int = DEFAULT_MAX_FILES
    maxTokens: int = DEFAULT_MAX_TOKENS

    @property
    def wants_memory(self) -> bool:
        return self.mode in ("memory", "all")

    @property
    def wants_code(self) -> bool:
        return self.mode in ("code", "all")


class _WrongType(TypeError):
    pass


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return f"{value!r} (not an integer)" if value.is_integer() else "a non-integer number"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _strict_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise _WrongType(f"must be a string, got {_describe(value)}")
    return value


def _strict_int(value: Any, _: type) -> int:
    # bool is an int subclass and 3.0 a float: both are refused here.
    if type(value) is not int:
        raise _WrongType(f"must be an integer, got {_describe(value)}")
    return value


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(str, _strict_str)
    conv.register_structure_hook(int, _strict_int)
    return conv


CONVERTER: Final = _make_converter()
"""The converter for everything that comes off the wire."""

_FIELDS: Final = tuple(a.name for a in attrs.fields(ExploreArgs))


def _limit(value: Any, low: int = LIMIT_MIN, high: int = LIMIT_MAX) -> None:
    CONVERTER.structure(value, int)
    if not low <= value <= high:
        raise _WrongType(f"must be from {low} to {high}, got {value}")


def _choice(value: Any, choices: tuple[str, ...]) -> None:
    CONVERTER.structure(value, str)
    if value not in choices:
        raise _WrongType(f"must be one of {', '.join(choices)}, got {value!r}")


def validate(arguments: Any) -> ExploreArgs:
    """Check raw `arguments` in SPEC order.

    Raises:
        ArgumentError: the first rule broken, naming the field as sent.
    """
    if not isinstance(arguments, dict):
        raise ArgumentError(
            "invalid_arguments",
            f"arguments must be an object, got {_describe(arguments)}",
            "arguments",
        )
    for key in arguments:
        if key not in _FIELDS:
            raise ArgumentError(
                "invalid_arguments",
                f"$.{key} is not a known argument (known: {', '.join(_FIELDS)})",
                key,
            )
    _check_query(arguments)
    _check_project_path(arguments)
    given = {k: v for k, v in arguments.items() if v is not None}
    for field in ("mode", "scope", "maxDocuments", "maxFiles", "maxTokens"):
        if field in given:
            value = given[field]
            try:
                if field == "mode":
                    _choice(value, MODES)
                elif field == "scope":
                    _choice(value, SCOPES)
                elif field == "maxTokens":
                    _limit(value, MAX_TOKENS_MIN, MAX_TOKENS_MAX)
                else:
                    _limit(value)
            except _WrongType as exc:
                raise ArgumentError("invalid_arguments", f"$.{field} {exc}", field) from None
    return CONVERTER.structure(given, ExploreArgs)


def _required_string(arguments: dict[str, Any], field: str, code: str) -> str:
    """`$.field` present, not null and a string; otherwise `code`, naming the field."""
    if arguments.get(field) is None:
        raise ArgumentError(code, f"$.{field} is required", field)
    value = arguments[field]
    try:
        return CONVERTER.structure(value, str)
    except _WrongType as exc:
        raise ArgumentError(code, f"$.{field} {exc}", field) from None


def _at_most(value: str, limit: int, field: str, code: str) -> None:
    if len(value) > limit:
        raise ArgumentError(
            code, f"$.{field} must be at most {limit:,} characters, got {len(value):,}", field
        )


def _check_query(arguments: dict[str, Any]) -> None:
    query = _required_string(arguments, "query", "invalid_query")
    if not query.strip():
        rule = "must not be empty" if not query else "must not be whitespace only"
        raise ArgumentError("invalid_query", f"$.query {rule}", "query")
    _at_most(query, QUERY_MAX, "query", "invalid_query")


def _check_project_path(arguments: dict[str, Any]) -> None:
    path = _required_string(arguments, "projectPath", "invalid_project_path")
    _at_most(path, PATH_MAX, "projectPath", "invalid_project_path")
