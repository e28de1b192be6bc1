"""The lwc_explore result has its fixed key order, partial/isError rules and a text block equal to
its compact JSON; check_plane lets through only SPEC §2.1 plane shapes (SPEC §2, §2.1, §6)."""

from __future__ import annotations

import json
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lwc_trio.actors.planes import GARBAGE
from lwc_trio.exceptions import ArgumentError
from lwc_trio.protocol import jsonrpc
from lwc_trio.protocol.arguments import ExploreArgs
from lwc_trio.protocol.explore_result import (
    CODE_CODES,
    MEMORY_CODES,
    NOT_REQUESTED,
    build_result,
    check_plane,
    fault_code,
    plane_error,
    tool_response,
    tool_result,
)
from lwc_trio.protocol.tool import output_schema

# Copied from SPEC §2.1 on purpose, not imported: the package's own tables are checked
# against these, so a code added to or dropped from one side alone fails a test.
SPEC_MEMORY_CODES = {
    "store_not_found",
    "store_path_invalid",
    "store_corrupt",
    "unsupported_store_version",
    "store_busy",
    "store_needs_recovery",
    "memory_timeout",
    "memory_internal",
    "memory_crashed",
    "memory_bad_response",
}
SPEC_CODE_CODES = {
    "codegraph_runtime_missing",
    "codegraph_index_missing",
    "codegraph_index_invalid",
    "codegraph_timeout",
    "codegraph_crashed",
    "codegraph_bad_response",
    "codegraph_tool_error",
    "code_internal",
}

MEMORY_READY: dict[str, Any] = {
    "state": "ready",
    "stores": [
        {"scope": "project", "storeId": "s1", "revision": 4, "state": "ready"},
        {
            "scope": "global",
            "storeId": "s2",
            "revision": 1,
            "state": "error",
            "error": {"code": "store_busy", "message": "locked"},
        },
    ],
    "results": [
        {
            "scope": "project",
            "type": "page",
            "identifier": "trio-actors",
            "title": "Trio actors",
            "kind": "concept",
            "summary": "How actors talk",
            "provenance": ["user-provided"],
            "snippet": "actors talk over channels",
            "rank": -3.2,
            "match": "lexical",
            "updatedAt": "2025-01-01T00:00:00Z",
        }
    ],
    "pages": [
        {
            "scope": "project",
            "slug": "trio-actors",
            "title": "Trio actors",
            "kind": "concept",
            "summary": "How actors talk",
            "body": "# Actors\n日本語 body",
            "provenance": ["user-provided"],
            "links": ["channels"],
            "updatedAt": "2025-01-01T00:00:00Z",
            "truncated": False,
        }
    ],
    "graph": [{"scope": "project", "status": {"engine": "disabled", "status": "disabled"}}],
}
MEMORY_EMPTY_READY: dict[str, Any] = {
    "state": "ready",
    "stores": [],
    "results": [],
    "pages": [],
    "graph": [],
}
MEMORY_UNAVAILABLE: dict[str, Any] = {
    "state": "unavailable",
    "error": {"code": "store_not_found", "message": "no Wiki"},
    "nextAction": {"command": "lwc init", "cwd": "/ws"},
}
CODE_READY: dict[str, Any] = {
    "state": "ready",
    "text": "## src/a.py\nclass A: ...\n",
    "truncated": False,
    "files": ["src/a.py"],
}
CODE_UNAVAILABLE: dict[str, Any] = {
    "state": "unavailable",
    "error": {"code": "codegraph_runtime_missing", "message": "not installed"},
    "nextAction": {"command": "lwc cg install", "cwd": "/ws"},
}

KEY_ORDER = ["memory", "codeGraph", "query", "projectPath", "mode", "scope", "timings"]


def _args(mode: str = "memory", query: str = "q") -> ExploreArgs:
    return ExploreArgs(query, "/ws", mode, "all", 8, 12)  # type: ignore[arg-type]


def _plane_for(plane: str, ready: bool) -> dict[str, Any]:
    if plane == "memory":
        return MEMORY_READY if ready else plane_error("memory_timeout", "late")
    return CODE_READY if ready else CODE_UNAVAILABLE


@pytest.mark.parametrize("mode", ["memory", "code", "all"])
def test_key_order(mode: str) -> None:
    """Keys come out as query, projectPath, mode, scope, memory, codeGraph, [partial], timings."""
    memory = MEMORY_READY if mode != "code" else NOT_REQUESTED
    code = CODE_READY if mode != "memory" else NOT_REQUESTED
    out, _ = build_result(_args(mode), "/canonical/ws", memory, code, 3, None)
    expected = list(KEY_ORDER)
    if mode == "all":
        expected.insert(2, "partial")
    assert list(out) == expected
    assert out["projectPath"] == "/canonical/ws"
    assert out["timings"] == {"memoryMs": 3}
    assert out["memory"] == memory
    assert out["codeGraph"] == code


@pytest.mark.parametrize(
    ("memory_ready", "code_ready", "partial", "is_error"),
    [(True, True, False, False), (True, False, True, False), (False, True, True, False),
     (False, False, False, True)],
)  # fmt: skip
def test_mode_all_partial_and_is_error(
    memory_ready: bool, code_ready: bool, partial: bool, is_error: bool
) -> None:
    """In mode all, partial is true exactly when one plane is ready; isError when neither is."""
    out, err = build_result(
        _args("all"),
        "/ws",
        _plane_for("memory", memory_ready),
        _plane_for("code", code_ready),
        1,
        2,
    )
    assert out["partial"] is partial
    assert err is is_error


@pytest.mark.parametrize("ready", [True, False])
def test_mode_memory_is_error_follows_memory(ready: bool) -> None:
    """Memory mode: isError exactly when memory is not ready; no partial key."""
    out, err = build_result(
        _args("memory"), "/ws", _plane_for("memory", ready), NOT_REQUESTED, 1, None
    )
    assert err is (not ready)
    assert "partial" not in out


@pytest.mark.parametrize("ready", [True, False])
def test_mode_code_is_error_follows_code(ready: bool) -> None:
    """Code mode: isError exactly when code is not ready; no partial key."""
    out, err = build_result(_args("code"), "/ws", NOT_REQUESTED, _plane_for("code", ready), None, 5)
    assert err is (not ready)
    assert "partial" not in out


def test_unavailable_counts_as_not_ready() -> None:
    """An `unavailable` plane (guidance, not data) makes memory mode an isError result."""
    _, err = build_result(_args("memory"), "/ws", MEMORY_UNAVAILABLE, NOT_REQUESTED, 0, None)
    assert err is True


@pytest.mark.parametrize("query", ["café 日本語 😀 «ü»", "plain", 'quote " and \\ backslash'])
@pytest.mark.parametrize("is_error", [True, False])
def test_tool_result_text_is_compact_json_of_structured_content(query: str, is_error: bool) -> None:
    """The one text block is the structuredContent as compact JSON, non-ASCII unescaped."""
    out, _ = build_result(_args("all", query), "/ws", MEMORY_READY, CODE_READY, 1, 2)
    res = tool_result(out, is_error)
    assert list(res) == ["content", "structuredContent", "isError"]
    assert res["isError"] is is_error
    assert res["structuredContent"] is out
    assert len(res["content"]) == 1
    block = res["content"][0]
    assert block["type"] == "text"
    text = block["text"]
    assert text == json.dumps(out, ensure_ascii=False, separators=(",", ":"))
    assert json.loads(text) == out
    assert list(json.loads(text)) == list(out)
    assert text.startswith('{"memory":')
    assert "\n" not in text.replace("\\n", "")
    if query.startswith("café"):
        assert query in text
        assert "\\u" not in text


def test_argument_error_result() -> None:
    """An argument error is an isError tool result carrying {error: {code, message, field}}."""
    err = ArgumentError("invalid_query", "$.query is required", "query")
    res = tool_result(err.to_json(), True)
    assert res["isError"] is True
    assert res["structuredContent"] == {
        "error": {"code": "invalid_query", "message": "$.query is required", "field": "query"}
    }
    assert res["content"] == [
        {
            "type": "text",
            "text": '{"error":{"code":"invalid_query","message":"$.query is required",'
            '"field":"query"}}',
        }
    ]


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(
    request_id=st.integers() | st.text(),
    structured=st.dictionaries(st.text(), _JSON_VALUES, max_size=6),
    is_error=st.booleans(),
)
# An id past 64 bits sends the whole message down the `json` fallback, which wrote a small float
# as `1e-09` where the spliced structured content (orjson) has `1e-9`.
@example(request_id=-(2**63) - 1, structured={"": 1e-09}, is_error=False)
def test_tool_response_is_the_encoded_response_byte_for_byte(
    request_id: int | str, structured: dict[str, Any], is_error: bool
) -> None:
    """The spliced encoding equals encoding the whole JSON-RPC response the plain way."""
    whole = jsonrpc.encode(jsonrpc.result(request_id, tool_result(structured, is_error)))
    assert tool_response(request_id, structured, is_error) + b"\n" == whole


def test_closed_code_lists_match_spec() -> None:
    """The plane error code lists are exactly the SPEC's closed lists."""
    assert set(MEMORY_CODES) == SPEC_MEMORY_CODES
    assert set(CODE_CODES) == SPEC_CODE_CODES


@pytest.mark.parametrize(
    ("plane", "outcome", "code"),
    [
        ("memory", "timeout", "memory_timeout"),
        ("memory", "internal", "memory_internal"),
        ("memory", "crashed", "memory_crashed"),
        ("memory", "bad_response", "memory_bad_response"),
        ("code", "timeout", "codegraph_timeout"),
        ("code", "internal", "code_internal"),
        ("code", "crashed", "codegraph_crashed"),
        ("code", "bad_response", "codegraph_bad_response"),
    ],
)
def test_fault_codes(plane: str, outcome: str, code: str) -> None:
    """Each fault outcome maps to the SPEC §6 code, which is in that plane's closed list."""
    assert fault_code(plane, outcome) == code
    assert code in (SPEC_MEMORY_CODES if plane == "memory" else SPEC_CODE_CODES)
    assert check_plane(plane, plane_error(code, "x"))


_VALID = [
    ("memory", MEMORY_READY),
    ("memory", MEMORY_EMPTY_READY),
    ("memory", MEMORY_UNAVAILABLE),
    ("memory", {**MEMORY_UNAVAILABLE, "error": {"code": "store_path_invalid", "message": ""}}),
    *(("memory", plane_error(c, "m")) for c in sorted(SPEC_MEMORY_CODES)),
    ("code", CODE_READY),
    ("code", {"state": "ready", "text": "", "truncated": True, "files": []}),
    ("code", CODE_UNAVAILABLE),
    *(("code", plane_error(c, "m")) for c in sorted(SPEC_CODE_CODES)),
]


@pytest.mark.parametrize(("plane", "obj"), _VALID)
def test_check_plane_accepts_valid_shapes(plane: str, obj: dict[str, Any]) -> None:
    """Every SPEC §2.1 state shape for the plane passes, and its result fits the outputSchema."""
    assert check_plane(plane, obj) is True
    memory = obj if plane == "memory" else NOT_REQUESTED
    code = obj if plane == "code" else NOT_REQUESTED
    out, _ = build_result(_args(plane), "/ws", memory, code, 1, None)
    jsonschema.Draft202012Validator(output_schema()).validate(out)


def _drop(obj: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != key}


_INVALID = [
    pytest.param("memory", GARBAGE, id="memory-GARBAGE"),
    pytest.param("code", GARBAGE, id="code-GARBAGE"),
    pytest.param("memory", None, id="none"),
    pytest.param("memory", [], id="list"),
    pytest.param("code", "ready", id="string"),
    pytest.param("memory", {}, id="empty"),
    pytest.param("memory", {"state": "done"}, id="unknown-state"),
    pytest.param("memory", {"state": None}, id="null-state"),
    pytest.param("memory", _drop(MEMORY_UNAVAILABLE, "nextAction"), id="missing-nextAction"),
    pytest.param("code", _drop(CODE_UNAVAILABLE, "nextAction"), id="code-missing-nextAction"),
    pytest.param(
        "memory", {**MEMORY_UNAVAILABLE, "nextAction": {"command": "lwc init"}}, id="no-cwd"
    ),
    pytest.param("memory", {**MEMORY_UNAVAILABLE, "nextAction": {"command": 1, "cwd": "/"}}),
    pytest.param("memory", {**MEMORY_UNAVAILABLE, "nextAction": "lwc init"}, id="nextAction-str"),
    pytest.param("memory", _drop(MEMORY_UNAVAILABLE, "error"), id="unavailable-no-error"),
    pytest.param("memory", plane_error("codegraph_timeout", "x"), id="memory-with-code-code"),
    pytest.param("code", plane_error("memory_timeout", "x"), id="code-with-memory-code"),
    pytest.param("memory", plane_error("oops", "x"), id="unknown-code"),
    pytest.param("code", plane_error("", "x"), id="empty-code"),
    pytest.param("memory", {"state": "error", "error": {"code": "store_busy"}}, id="no-message"),
    pytest.param("memory", {"state": "error", "error": {"code": "store_busy", "message": 1}}),
    pytest.param("memory", {"state": "error", "error": "store_busy"}, id="error-str"),
    pytest.param("memory", {"state": "error"}, id="error-missing"),
    *(
        pytest.param("memory", _drop(MEMORY_READY, k), id=f"memory-missing-{k}")
        for k in ("stores", "results", "pages", "graph")
    ),
    *(
        pytest.param("memory", {**MEMORY_READY, k: "x"}, id=f"memory-str-{k}")
        for k in ("stores", "results", "pages", "graph")
    ),
    pytest.param("memory", {**MEMORY_READY, "results": None}, id="memory-null-results"),
    pytest.param("memory", CODE_READY, id="memory-answering-code-shape"),
    pytest.param("code", MEMORY_READY, id="code-answering-memory-shape"),
    *(pytest.param("code", _drop(CODE_READY, k), id=f"code-missing-{k}") for k in CODE_READY),
    pytest.param("code", {**CODE_READY, "text": None}, id="code-text-null"),
    pytest.param("code", {**CODE_READY, "text": 5}, id="code-text-int"),
    pytest.param("code", {**CODE_READY, "truncated": "false"}, id="code-truncated-str"),
    pytest.param("code", {**CODE_READY, "truncated": 0}, id="code-truncated-int"),
    pytest.param("code", {**CODE_READY, "files": "src/a.py"}, id="code-files-str"),
    pytest.param("code", {**CODE_READY, "files": ["a", 1]}, id="code-files-int-item"),
]


@pytest.mark.parametrize(("plane", "obj"), _INVALID)
def test_check_plane_rejects_garbage(plane: str, obj: Any) -> None:
    """Anything that is not a SPEC §2.1 shape for that plane is refused (→ bad_response)."""
    assert check_plane(plane, obj) is False


@pytest.mark.parametrize("key", ["stores", "results", "pages", "graph"])
def test_check_plane_rejects_memory_lists_of_non_objects(key: str) -> None:
    """A ready memory answer whose lists hold non-objects is garbage: passing it on would send
    a structuredContent that violates the tool's own outputSchema (items must be objects)."""
    validator = jsonschema.Draft202012Validator(output_schema())
    for item in ("\x00garbage", 1, None, ["x"]):
        obj = {**MEMORY_READY, key: [item]}
        out, _ = build_result(_args("memory"), "/ws", obj, NOT_REQUESTED, 1, None)
        assert not validator.is_valid(out)
        assert check_plane("memory", obj) is False, item


def test_the_wire_never_carries_non_finite_numbers() -> None:
    """NaN/Infinity that slipped past a plane are written as null, never as bare tokens."""
    from lwc_trio.protocol import jsonrpc
    from lwc_trio.protocol.explore_result import dumps, tool_response

    payload = {"memory": {"state": "ready", "rank": float("inf"), "x": [float("nan"), 1.5]}}
    assert dumps(payload) == '{"memory":{"state":"ready","rank":null,"x":[null,1.5]}}'
    line = tool_response(1, payload, False)
    assert b"Infinity" not in line
    assert b"NaN" not in line
    assert b"Infinity" not in jsonrpc.to_bytes({"id": 1, "result": {"v": float("-inf")}})


def test_a_response_line_never_exceeds_512_kib() -> None:
    """An answer too large to send drops pages from the end, then results, until it fits."""
    from lwc_trio.protocol.explore_result import MAX_RESPONSE_BYTES, tool_response

    page = {"slug": "s", "body": "\x01" * 15_000, "links": ["l" * 256] * 64}
    memory = {
        "state": "ready",
        "stores": [],
        "results": [{"identifier": f"r{i}", "title": "t" * 300} for i in range(20)],
        "pages": [dict(page, slug=f"p{i}") for i in range(20)],
        "graph": [],
    }
    structured: dict[str, Any] = {"memory": memory, "codeGraph": {"state": "not_requested"}}
    line = tool_response(7, structured, False)
    assert len(line) <= MAX_RESPONSE_BYTES
    kept = structured["memory"]["pages"]
    assert 0 < len(kept) < 20
    assert [p["slug"] for p in kept] == [f"p{i}" for i in range(len(kept))]
    assert len(structured["memory"]["results"]) == 20


def _code_text(files: int, lines: int = 40) -> str:
    return "\n".join(
        f"**`src/f{i}.py`** — fn{i}\n"
        + "\n".join(f"{n}\tline {n} of file {i}" for n in range(lines))
        for i in range(files)
    )


def _memory_with_pages(n: int, body: int) -> dict[str, Any]:
    page = {"scope": "project", "slug": "p", "body": "x" * body, "truncated": True}
    return {
        "state": "ready",
        "results": [{"identifier": f"p{i}"} for i in range(n)],
        "pages": [dict(page, slug=f"p{i}") for i in range(n)],
        "graph": [],
        "stores": [],
    }


def _cost(out: dict[str, Any]) -> int:
    return len(json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode())


def test_code_text_follows_the_budget_at_whole_file_sections() -> None:
    """Mode code: the text is cut to the budget at the last whole file section."""
    text = _code_text(30)
    code = {"state": "ready", "text": text, "truncated": False, "files": []}
    args = attrs.evolve(_args("code"), maxTokens=1_000)
    out, _ = build_result(args, "/ws", dict(NOT_REQUESTED), code, None, 5)
    got = out["codeGraph"]
    assert _cost(out) <= 4_000
    assert got["truncated"] is True
    assert got["text"]
    assert text.startswith(got["text"])
    assert text[len(got["text"]) :].startswith("**`src/f")  # cut where a file section starts
    assert got["files"] == [f"src/f{i}.py" for i in range(len(got["files"]))]


def test_mode_all_shares_one_budget_and_a_plane_not_ready_leaves_its_share() -> None:
    text = _code_text(30)
    code = {"state": "ready", "text": text, "truncated": False, "files": []}
    args = attrs.evolve(_args("all"), maxTokens=2_500)
    both, _ = build_result(args, "/ws", _memory_with_pages(6, 2_000), dict(code), 3, 5)
    assert _cost(both) <= 10_000
    assert both["memory"]["pages"]
    assert both["codeGraph"]["text"]
    alone, _ = build_result(args, "/ws", plane_error("memory_timeout", "late"), dict(code), 3, 5)
    assert _cost(alone) <= 10_000
    assert len(alone["codeGraph"]["text"]) > len(both["codeGraph"]["text"])
    no_code, _ = build_result(args, "/ws", _memory_with_pages(6, 2_000), CODE_UNAVAILABLE, 3, 5)
    assert len(no_code["memory"]["pages"]) > len(both["memory"]["pages"])


def test_mode_all_code_gets_its_share_when_a_file_section_is_long() -> None:
    """A file section longer than the code's share is cut at a line end, not dropped with
    everything after the preamble (the code text once kept only its first line)."""
    text = "Explore results for `q`\n\n" + _code_text(8, lines=300)  # ~6,700 chars a file
    code = {"state": "ready", "text": text, "truncated": False, "files": []}
    args = attrs.evolve(_args("all"), maxTokens=2_500)
    both, _ = build_result(args, "/ws", _memory_with_pages(6, 2_000), dict(code), 3, 5)
    got = both["codeGraph"]
    assert _cost(both) <= 10_000
    assert both["memory"]["pages"]
    assert len(got["text"]) >= 10_000 // 3  # a fair share of the 10,000 units
    assert text.startswith(got["text"])
    assert text[len(got["text"]) - 1] == "\n"
    assert got["files"] == ["src/f0.py"]
    assert got["truncated"] is True
    # Sections that fit still come whole: the cut is where a file section starts.
    short = "Explore results for `q`\n\n" + _code_text(30)
    code = {"state": "ready", "text": short, "truncated": False, "files": []}
    both, _ = build_result(args, "/ws", _memory_with_pages(6, 2_000), dict(code), 3, 5)
    assert short[len(both["codeGraph"]["text"]) :].startswith("**`src/f")


@pytest.mark.parametrize("lines", [1, 300])
def test_the_timings_digits_never_move_a_cut(lines: int) -> None:
    """The same planes' answers fit the budget the same way whatever the timings say (SPEC
    §2.1: byte-identical apart from `timings`); a call of 3 ms and one of 4,999 ms once cut
    the code text a few bytes apart, so a soak saw two answers to one query differ."""
    text = "Explore results for `q`\n\n" + _code_text(30, lines=lines)
    code = {"state": "ready", "text": text, "truncated": False, "files": []}
    for budget in range(2_400, 2_600, 3):  # some budget falls within a few units of a cut
        args = attrs.evolve(_args("all"), maxTokens=budget)
        answers = [
            build_result(args, "/ws", _memory_with_pages(6, 2_000), dict(code), memory, spent)[0]
            for memory, spent in [(3, 5), (4_999, 10_000), (0, 0), (42, 987)]
        ]
        for answer in answers:
            answer.pop("timings")
        assert all(answer == answers[0] for answer in answers), budget


def test_a_store_revisions_digits_never_move_a_cut() -> None:
    """Mode all with both planes ready: a write that takes a store's revision from 9 to 10
    (or to 12 digits) changes no Page and no code cut, for any budget."""
    text = "Explore results for `q`\n\n" + _code_text(400, lines=1)
    code = {"state": "ready", "text": text, "truncated": False, "files": []}
    for budget in range(500, 620):  # 508 once fell on a cut
        args = attrs.evolve(_args("all"), maxTokens=budget)
        answers = []
        for revision in (9, 10, 123_456_789_012):
            memory = _memory_with_pages(10, 300)
            store = {"scope": "project", "storeId": "a" * 32, "revision": revision}
            memory["stores"] = [{**store, "state": "ready"}]
            answer = build_result(args, "/ws", memory, dict(code), 3, 5)[0]
            answer["memory"].pop("stores")
            answers.append(answer)
        assert all(answer == answers[0] for answer in answers), budget
