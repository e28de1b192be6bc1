"""lwc_explore arguments are validated strictly in SPEC §2 order: the first broken rule wins and
comes back with its code, the field as sent, and a message naming that field."""

from __future__ import annotations

from typing import Any

import cattrs
import pytest

from lwc_trio.exceptions import ArgumentError
from lwc_trio.protocol.arguments import CONVERTER, ExploreArgs, validate

BASE: dict[str, Any] = {"query": "q", "projectPath": "/ws"}

Q = "invalid_query"
P = "invalid_project_path"
A = "invalid_arguments"


def _with(**changes: Any) -> dict[str, Any]:
    return {**BASE, **changes}


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in BASE.items() if k != key}


def _fails(arguments: Any) -> ArgumentError:
    with pytest.raises(ArgumentError) as info:
        validate(arguments)
    return info.value


_LIMIT_BAD = [True, False, "3", 3.5, 3.0, 20.0, 0, 21, -1, 10**20, [3], {"n": 3}]
_MODE_BAD: tuple[object, ...] = ("MEMORY", "", "both", "memory ", 1, True, ["memory"], {})
_SCOPE_BAD: tuple[object, ...] = ("local", "ALL", "", 0, False, ["all"])

_ERRORS = [
    # `arguments` not an object
    *(pytest.param(v, A, "arguments", id=f"arguments-{v!r}") for v in (None, [], [BASE], "x", 1)),
    pytest.param(True, A, "arguments", id="arguments-true"),
    # unknown fields, first in sent order
    pytest.param(_with(foo=1), A, "foo", id="unknown-last"),
    pytest.param({"zeta": 1, "alpha": 2, **BASE}, A, "zeta", id="unknown-first-sent"),
    pytest.param({"query": "q", "b": 1, "projectPath": "/ws", "a": 2}, A, "b", id="unknown-order"),
    pytest.param({"bogus": 1}, A, "bogus", id="unknown-before-missing-query"),
    pytest.param(_with(maxdocuments=3), A, "maxdocuments", id="unknown-case"),
    pytest.param(_with(max_files=3), A, "max_files", id="unknown-snake"),
    pytest.param(_with(**{"": 1}), A, "", id="unknown-empty-name"),
    # query
    pytest.param(_without("query"), Q, "query", id="query-missing"),
    pytest.param(_with(query=None), Q, "query", id="query-null"),
    pytest.param(_with(query=5), Q, "query", id="query-int"),
    pytest.param(_with(query=["q"]), Q, "query", id="query-array"),
    pytest.param(_with(query=True), Q, "query", id="query-bool"),
    pytest.param(_with(query=""), Q, "query", id="query-empty"),
    pytest.param(_with(query="   \t\r\n "), Q, "query", id="query-whitespace"),
    pytest.param(_with(query="\u3000\u00a0"), Q, "query", id="query-unicode-whitespace"),
    pytest.param(_with(query="x" * 10_001), Q, "query", id="query-10001"),
    pytest.param(_with(query="😀" * 10_001), Q, "query", id="query-10001-astral"),
    # projectPath
    pytest.param(_without("projectPath"), P, "projectPath", id="path-missing"),
    pytest.param(_with(projectPath=None), P, "projectPath", id="path-null"),
    pytest.param(_with(projectPath=7), P, "projectPath", id="path-int"),
    pytest.param(_with(projectPath=["/ws"]), P, "projectPath", id="path-array"),
    pytest.param(_with(projectPath="/" + "a" * 4_096), P, "projectPath", id="path-4097"),
    # mode / scope
    *(pytest.param(_with(mode=v), A, "mode", id=f"mode-{v!r}") for v in _MODE_BAD),
    *(pytest.param(_with(scope=v), A, "scope", id=f"scope-{v!r}") for v in _SCOPE_BAD),
    # maxDocuments / maxFiles
    *(pytest.param(_with(maxDocuments=v), A, "maxDocuments", id=f"docs-{v!r}") for v in _LIMIT_BAD),
    *(pytest.param(_with(maxFiles=v), A, "maxFiles", id=f"files-{v!r}") for v in _LIMIT_BAD),
]


@pytest.mark.parametrize(("arguments", "code", "field"), _ERRORS)
def test_argument_errors(arguments: Any, code: str, field: str) -> None:
    """Each broken rule gives its SPEC code and the field as sent, named in the message."""
    err = _fails(arguments)
    assert (err.code, err.field) == (code, field)
    if field == "arguments":
        assert "arguments" in err.message
    else:
        assert f"$.{field}" in err.message
    assert err.to_json() == {"error": {"code": code, "message": err.message, "field": field}}


@pytest.mark.parametrize(("field", "value"), [("maxDocuments", 3.0), ("maxFiles", 12.0)])
def test_integral_float_message_says_not_an_integer(field: str, value: float) -> None:
    """3.0 is refused with a message telling the model it is not an integer."""
    err = _fails(_with(**{field: value}))
    assert "integer" in err.message
    assert "not an integer" in err.message


@pytest.mark.parametrize(("field", "value"), [("maxDocuments", 0), ("maxFiles", 21)])
def test_bound_message_states_the_range(field: str, value: int) -> None:
    """Out-of-range limits name the allowed range 1 to 20."""
    err = _fails(_with(**{field: value}))
    assert "1" in err.message
    assert "20" in err.message


def test_too_long_query_message_states_the_bound() -> None:
    """A too-long query is refused with a message stating the 10,000 limit."""
    assert "10,000" in _fails(_with(query="x" * 10_001)).message


_PRECEDENCE = [
    pytest.param([], "arguments", id="non-object-first"),
    pytest.param({"query": 5, "zzz": 1, "projectPath": 3}, "zzz", id="unknown-before-query"),
    pytest.param({"query": "", "projectPath": None, "mode": 1}, "query", id="query-before-path"),
    pytest.param({"projectPath": 1, "query": None}, "query", id="query-before-path-any-order"),
    pytest.param({"query": "q", "projectPath": 1, "mode": "bad"}, "projectPath", id="path-mode"),
    pytest.param(_with(maxFiles=0, scope="x", maxDocuments=0, mode="x"), "mode", id="mode-first"),
    pytest.param(_with(maxFiles=0, maxDocuments=0, scope="x"), "scope", id="scope-second"),
    pytest.param(_with(maxFiles=0, maxDocuments=0), "maxDocuments", id="docs-third"),
    pytest.param(_with(maxFiles=True, mode=None), "maxFiles", id="files-last"),
]


@pytest.mark.parametrize(("arguments", "field"), _PRECEDENCE)
def test_first_error_wins(arguments: Any, field: str) -> None:
    """With several broken rules, the one earliest in SPEC §2 order is reported."""
    assert _fails(arguments).field == field


def test_defaults() -> None:
    """Only query and projectPath given: mode memory, scope all, 8 documents, 12 files."""
    assert validate(dict(BASE)) == ExploreArgs("q", "/ws", "memory", "all", 8, 12)


def test_null_means_omitted() -> None:
    """null for every optional field yields the defaults."""
    args = validate(_with(mode=None, scope=None, maxDocuments=None, maxFiles=None))
    assert args == ExploreArgs("q", "/ws", "memory", "all", 8, 12)


@pytest.mark.parametrize("mode", ["memory", "code", "all"])
@pytest.mark.parametrize("scope", ["project", "global", "all"])
def test_every_mode_and_scope(mode: str, scope: str) -> None:
    """All enum values are accepted and kept."""
    args = validate(_with(mode=mode, scope=scope))
    assert (args.mode, args.scope) == (mode, scope)
    assert args.wants_memory == (mode in ("memory", "all"))
    assert args.wants_code == (mode in ("code", "all"))


@pytest.mark.parametrize("value", [1, 2, 8, 19, 20])
def test_limit_bounds_inclusive(value: int) -> None:
    """1 and 20 (and values between) are valid for both limits, kept as exact ints."""
    args = validate(_with(maxDocuments=value, maxFiles=value))
    assert args.maxDocuments == value
    assert args.maxFiles == value
    assert type(args.maxDocuments) is int
    assert type(args.maxFiles) is int


@pytest.mark.parametrize(
    "query", ["x" * 10_000, "😀" * 10_000, "a", " a ", "日本語のクエリ", "x" + " " * 9_999]
)
def test_valid_queries(query: str) -> None:
    """Queries of 1 to 10,000 characters (code points) are kept unchanged."""
    assert validate(_with(query=query)).query == query


@pytest.mark.parametrize("path", ["/" + "a" * 4_095, "", "relative/dir", "/ws/../x"])
def test_project_path_wire_rules_only(path: str) -> None:
    """Wire validation only checks type and length (≤ 4,096); path rules come later (§3)."""
    assert validate(_with(projectPath=path)).projectPath == path


def test_full_valid_arguments_in_any_order() -> None:
    """All six fields, in any order, come back as typed ExploreArgs."""
    args = validate(
        {
            "maxFiles": 20,
            "scope": "project",
            "projectPath": "/ws/sub",
            "maxDocuments": 1,
            "mode": "all",
            "query": "find it",
        }
    )
    assert args == ExploreArgs("find it", "/ws/sub", "all", "project", 1, 20)


def test_validate_does_not_mutate_input() -> None:
    """The caller's dict is left as it was."""
    arguments = _with(mode=None, maxFiles=3)
    before = dict(arguments)
    validate(arguments)
    assert arguments == before


@pytest.mark.parametrize(("value", "kind"), [("2", int), (True, int), (3.0, int), (1, str)])
def test_converter_primitive_hooks_are_strict(value: Any, kind: type) -> None:
    """The wire converter refuses cattrs' lenient coercions ("2"→2, True→1, 3.0→3, 1→"1")."""
    with pytest.raises(TypeError):
        CONVERTER.structure(value, kind)


def test_converter_forbids_extra_keys_and_structures_exact_types() -> None:
    """Exact values pass through; extra keys are refused."""
    assert CONVERTER.structure(3, int) == 3
    assert CONVERTER.structure("s", str) == "s"
    with pytest.raises(cattrs.errors.ClassValidationError) as info:
        CONVERTER.structure({**BASE, "x": 1}, ExploreArgs)
    assert info.group_contains(cattrs.errors.ForbiddenExtraKeysError)
