"""Strict structuring of `lwc_explore` arguments (SPEC §2) through one cattrs `Converter`.

The converter forbids extra keys and its primitive hooks are strict: cattrs would happily
turn `"3"` into 3 and `True` into 1, which the contract forbids. Each field's bound rides
on its own structure hook (`override(struct_hook=...)`), so `CONVERTER.structure(given,
ExploreArgs)` is the whole wire check. With detailed validation cattrs reports every
broken field at once (a `ClassValidationError` whose sub-exceptions carry a note naming
their attribute); `validate` maps the first of them in SPEC §2 order — unknown field
first in sent order, then the fields in declaration order, which is the SPEC's — onto
the SPEC's code, field and message, so the model gets one precise correction at a time.

Two rules sit in front of the converter (docs/decisions.md): `arguments` must be an
object, and an explicit `null` means the field was omitted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal

import attrs
import cattrs
from cattrs.errors import AttributeValidationNote, ClassValidationError, ForbiddenExtraKeysError
from cattrs.gen import make_dict_structure_fn, override

from lwc_trio.exceptions import ArgumentError
from lwc_trio.protocol.session import JSON
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
    """Arguments that passed every wire-level rule (paths not yet authorized).

    The fields are in SPEC §2's checking order: the first broken one is reported.
    """

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


class Refused(TypeError):
    """A value a structure hook refuses; its text completes "$.field ..."."""


def describe(value: JSON) -> str:
    """A value's JSON kind, as a correction names it."""
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


def _strict_str(value: JSON, _: type) -> str:
    if not isinstance(value, str):
        raise Refused(f"must be a string, got {describe(value)}")
    return value


def _strict_int(value: JSON, _: type) -> int:
    # bool is an int subclass and 3.0 a float: both are refused here.
    if type(value) is not int:
        raise Refused(f"must be an integer, got {describe(value)}")
    return value


def _text(limit: int, *, blank_ok: bool) -> Callable[[JSON, type], str]:
    def hook(value: JSON, _: type) -> str:
        text = _strict_str(value, str)
        if not blank_ok and not text.strip():
            raise Refused("must not be empty" if not text else "must not be whitespace only")
        if len(text) > limit:
            raise Refused(f"must be at most {limit:,} characters, got {len(text):,}")
        return text

    return hook


def _within(low: int, high: int) -> Callable[[JSON, type], int]:
    def hook(value: JSON, _: type) -> int:
        number = _strict_int(value, int)
        if not low <= number <= high:
            raise Refused(f"must be from {low} to {high}, got {number}")
        return number

    return hook


def _one_of(choices: tuple[str, ...]) -> Callable[[JSON, type], str]:
    def hook(value: JSON, _: type) -> str:
        text = _strict_str(value, str)
        if text not in choices:
            raise Refused(f"must be one of {', '.join(choices)}, got {text!r}")
        return text

    return hook


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(str, _strict_str)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(
        ExploreArgs,
        make_dict_structure_fn(
            ExploreArgs,
            conv,
            _cattrs_forbid_extra_keys=True,
            query=override(struct_hook=_text(QUERY_MAX, blank_ok=False)),
            projectPath=override(struct_hook=_text(PATH_MAX, blank_ok=True)),
            mode=override(struct_hook=_one_of(MODES)),
            scope=override(struct_hook=_one_of(SCOPES)),
            maxDocuments=override(struct_hook=_within(LIMIT_MIN, LIMIT_MAX)),
            maxFiles=override(struct_hook=_within(LIMIT_MIN, LIMIT_MAX)),
            maxTokens=override(struct_hook=_within(MAX_TOKENS_MIN, MAX_TOKENS_MAX)),
        ),
    )
    return conv


CONVERTER: Final = _make_converter()
"""The converter for everything that comes off the wire."""

FIELDS: Final = tuple(a.name for a in attrs.fields(ExploreArgs))
_CODES: Final = {"query": "invalid_query", "projectPath": "invalid_project_path"}


def validate(arguments: JSON) -> ExploreArgs:
    """Structure raw `arguments` into `ExploreArgs`.

    Raises:
        ArgumentError: the first rule broken in SPEC §2 order, naming the field as sent.
    """
    if not isinstance(arguments, dict):
        raise ArgumentError(
            "invalid_arguments",
            f"arguments must be an object, got {describe(arguments)}",
            "arguments",
        )
    given = {key: value for key, value in arguments.items() if value is not None}
    try:
        return CONVERTER.structure(given, ExploreArgs)
    except ClassValidationError as group:
        raise _first_error(arguments, group) from None


def _first_error(arguments: dict[str, JSON], group: ClassValidationError) -> ArgumentError:
    """SPEC §2's first error among everything cattrs found wrong."""
    by_field: dict[str, Exception] = {}
    for exc in group.exceptions:
        if isinstance(exc, ForbiddenExtraKeysError):
            unknown = next(key for key in arguments if key in exc.extra_fields)
            return ArgumentError(
                "invalid_arguments",
                f"$.{unknown} is not a known argument (known: {', '.join(FIELDS)})",
                unknown,
            )
        for note in getattr(exc, "__notes__", ()):
            if isinstance(note, AttributeValidationNote):
                by_field.setdefault(note.name, exc)
    field = next((name for name in FIELDS if name in by_field), None)
    if field is None:  # not a wire rule: a bug, reported as one
        raise group
    exc = by_field[field]
    rule = "is required" if isinstance(exc, KeyError) else str(exc)
    return ArgumentError(_CODES.get(field, "invalid_arguments"), f"$.{field} {rule}", field)
