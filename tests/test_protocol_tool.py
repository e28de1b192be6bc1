"""The lwc_explore definition is valid JSON Schema with the SPEC §2 annotations, input rules and an
outputSchema that accepts real results and argument errors and nothing else."""

from __future__ import annotations

from typing import Any

import jsonschema
import mcp.types
import pytest

from lwc_trio.exceptions import ArgumentError
from lwc_trio.protocol.arguments import ExploreArgs, validate
from lwc_trio.protocol.explore_result import NOT_REQUESTED, build_result, plane_error
from lwc_trio.protocol.tool import TOOL_NAME, input_schema, output_schema, tool_definition

INPUT = jsonschema.Draft202012Validator(input_schema())
OUTPUT = jsonschema.Draft202012Validator(output_schema())

MEMORY_READY: dict[str, Any] = {
    "state": "ready",
    "stores": [{"scope": "project", "storeId": "a1", "revision": 2, "state": "ready"}],
    "results": [
        {
            "scope": "project",
            "type": "source",
            "identifier": "src-1",
            "title": "notes.md",
            "kind": None,
            "summary": None,
            "provenance": None,
            "snippet": "…channels…",
            "rank": -1.5,
            "match": "fuzzy",
            "updatedAt": None,
        }
    ],
    "pages": [],
    "graph": [
        {
            "scope": "project",
            "status": {"engine": "sqlite", "status": "ready"},
            "seed": "trio",
            "neighborhood": {"depth": 1, "limit": 12, "nodes": [], "edges": []},
        }
    ],
}
CODE_READY: dict[str, Any] = {
    "state": "ready",
    "text": "## a.py\n",
    "truncated": True,
    "files": ["a.py"],
}
CODE_MISSING: dict[str, Any] = {
    "state": "unavailable",
    "error": {"code": "codegraph_index_missing", "message": "no index"},
    "nextAction": {"command": "lwc --scope project cg init", "cwd": "/ws"},
}


def _result(mode: str, memory: dict[str, Any], code: dict[str, Any]) -> dict[str, Any]:
    args = ExploreArgs("trio actors", "/ws", mode, "project", 8, 12)  # type: ignore[arg-type]
    return build_result(args, "/ws", memory, code, 12, 40)[0]


def test_schemas_are_valid_json_schema() -> None:
    """Both schemas are valid Draft 2020-12 JSON Schema."""
    jsonschema.Draft202012Validator.check_schema(input_schema())
    jsonschema.Draft202012Validator.check_schema(output_schema())


def test_definition_is_accepted_by_the_mcp_sdk() -> None:
    """The MCP SDK's own Tool model accepts the definition unchanged."""
    tool = mcp.types.Tool.model_validate(tool_definition())
    assert tool.name == "lwc_explore"
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True


def test_name_and_description() -> None:
    """One tool named lwc_explore whose description covers Wiki, CodeGraph, untrusted data and
    the 3.0-is-not-an-integer rule."""
    d = tool_definition()
    assert d["name"] == TOOL_NAME == "lwc_explore"
    text = d["description"]
    assert "Wiki" in text
    assert "CodeGraph" in text
    assert "untrusted reference data" in text
    assert "3.0 is not an integer" in text
    assert {"name", "description", "inputSchema", "outputSchema", "annotations"} <= set(d)


def test_annotations_exact() -> None:
    """readOnly, not destructive, idempotent, closed world: exactly these four hints."""
    ann = tool_definition()["annotations"]
    hints = {k: v for k, v in ann.items() if k.endswith("Hint")}
    assert hints == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert set(ann) - set(hints) <= {"title"}


def test_definition_is_stable() -> None:
    """tools/list gives the same definition every time."""
    assert tool_definition() is tool_definition()
    assert tool_definition()["inputSchema"] == input_schema()
    assert tool_definition()["outputSchema"] == output_schema()


def test_input_schema_shape() -> None:
    """Closed object, required query and projectPath, every field one plain JSON type."""
    schema = input_schema()
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == ["projectPath", "query"]
    props = schema["properties"]
    assert set(props) == {
        "query", "projectPath", "mode", "scope", "maxDocuments", "maxFiles", "maxTokens"
    }  # fmt: skip
    assert props["query"]["type"] == "string"
    assert (props["query"]["minLength"], props["query"]["maxLength"]) == (1, 10_000)
    assert props["projectPath"]["type"] == "string"
    assert props["projectPath"]["maxLength"] == 4_096
    assert props["mode"]["type"] == "string"
    assert props["mode"]["enum"] == ["memory", "code", "all"]
    assert props["mode"]["default"] == "memory"
    assert props["scope"]["type"] == "string"
    assert props["scope"]["enum"] == ["project", "global", "all"]
    assert props["scope"]["default"] == "all"
    for field, default in (("maxDocuments", 8), ("maxFiles", 12)):
        assert props[field]["type"] == "integer"
        assert (props[field]["minimum"], props[field]["maximum"]) == (1, 20)
        assert props[field]["default"] == default
        assert "3.0 is not an integer" in props[field]["description"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "q", "projectPath": "/ws"},
        {"query": "q", "projectPath": "/ws", "mode": "all", "scope": "global"},
        {"query": "q", "projectPath": "/ws", "maxDocuments": 1, "maxFiles": 20},
    ],
)
def test_input_schema_accepts_what_validate_accepts(arguments: dict[str, Any]) -> None:
    """Arguments the server accepts also pass the advertised inputSchema."""
    validate(arguments)
    INPUT.validate(arguments)


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "q"},
        {"projectPath": "/ws"},
        {"query": "q", "projectPath": "/ws", "extra": 1},
        {"query": "", "projectPath": "/ws"},
        {"query": "q" * 10_001, "projectPath": "/ws"},
        {"query": "q", "projectPath": "/" * 4_097},
        {"query": "q", "projectPath": "/ws", "mode": "both"},
        {"query": "q", "projectPath": "/ws", "scope": "local"},
        {"query": "q", "projectPath": "/ws", "maxDocuments": 0},
        {"query": "q", "projectPath": "/ws", "maxFiles": 21},
        {"query": "q", "projectPath": "/ws", "maxFiles": "3"},
        {"query": "q", "projectPath": "/ws", "maxDocuments": True},
        {"query": None, "projectPath": "/ws"},
    ],
)
def test_input_schema_rejects_what_validate_rejects(arguments: dict[str, Any]) -> None:
    """Arguments the schema can express as wrong are refused by both schema and server."""
    assert not INPUT.is_valid(arguments)
    with pytest.raises(ArgumentError):
        validate(arguments)


@pytest.mark.parametrize(
    "structured",
    [
        pytest.param(_result("memory", MEMORY_READY, NOT_REQUESTED), id="memory-ready"),
        pytest.param(_result("code", NOT_REQUESTED, CODE_READY), id="code-ready"),
        pytest.param(_result("code", NOT_REQUESTED, CODE_MISSING), id="code-unavailable"),
        pytest.param(_result("all", MEMORY_READY, CODE_READY), id="all-ready"),
        pytest.param(
            _result("all", plane_error("memory_timeout", "late"), CODE_MISSING), id="all-failed"
        ),
        pytest.param(
            ArgumentError("invalid_arguments", "$.maxFiles must be…", "maxFiles").to_json(),
            id="argument-error",
        ),
    ],
)
def test_output_schema_accepts_results_and_argument_errors(structured: dict[str, Any]) -> None:
    """Realistic results of every mode and an argument error match exactly one oneOf branch."""
    OUTPUT.validate(structured)


@pytest.mark.parametrize(
    "structured",
    [
        pytest.param({"foo": 1}, id="neither"),
        pytest.param({}, id="empty"),
        pytest.param({"error": {"code": "x", "message": "y"}}, id="error-without-field"),
        pytest.param(
            {k: v for k, v in _result("all", MEMORY_READY, CODE_READY).items() if k != "timings"},
            id="result-without-timings",
        ),
        pytest.param({**_result("memory", MEMORY_READY, NOT_REQUESTED), "mode": "both"}, id="mode"),
        pytest.param(
            {**_result("memory", MEMORY_READY, NOT_REQUESTED), "memory": {"state": "weird"}},
            id="bad-plane-state",
        ),
        pytest.param(
            {
                **_result("memory", MEMORY_READY, NOT_REQUESTED),
                "error": {"code": "c", "message": "m", "field": "f"},
            },
            id="both-shapes",
        ),
    ],
)
def test_output_schema_rejects_other_objects(structured: dict[str, Any]) -> None:
    """An object that is neither a result nor an argument error (or is both) is refused."""
    assert not OUTPUT.is_valid(structured)


def _walk(schema: Any, path: str = "$") -> list[tuple[str, Any]]:
    """Every (path, sub-schema) in `schema`, depth first."""
    found = [(path, schema)]
    if isinstance(schema, dict):
        for key, value in schema.items():
            found += _walk(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += _walk(value, f"{path}[{index}]")
    return found


@pytest.mark.parametrize("which", ["inputSchema", "outputSchema"])
def test_schemas_use_plain_types(which: str) -> None:
    """No ["T", "null"] union, no null in an enum anywhere (Gemini-backed hosts refuse them)."""
    for path, node in _walk(tool_definition()[which]):
        if isinstance(node, dict):
            assert not isinstance(node.get("type"), list), path
            assert None not in node.get("enum", []), path


def test_input_schema_has_no_combinators() -> None:
    """inputSchema has no oneOf/anyOf (hosts flatten or refuse them)."""
    for path, node in _walk(input_schema()):
        if isinstance(node, dict):
            assert not {"oneOf", "anyOf", "allOf"} & set(node), path


@pytest.mark.parametrize("field", ["mode", "scope", "maxDocuments", "maxFiles"])
def test_explicit_null_is_still_omitted(field: str) -> None:
    """A host that sends null for an optional field gets the default, not an error."""
    args = validate({"query": "q", "projectPath": "/ws", field: None})
    assert getattr(args, field) == getattr(ExploreArgs("q", "/ws"), field)
