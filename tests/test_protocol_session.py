"""Requests that need no plane get the SPEC §1.3 answers: negotiation, initialize, ping,
tools/list, -32601/-32602 errors, and a ToolCall hand-off for lwc_explore."""

from __future__ import annotations

from typing import Any

import pytest

from lwc_trio.protocol.jsonrpc import Request
from lwc_trio.protocol.session import (
    SUPPORTED_VERSIONS,
    ToolCall,
    answer,
    cancelled_request_id,
    initialize_result,
    negotiate,
)
from lwc_trio.protocol.tool import tool_definition

VERSION = "9.8.7"


def _result(method: str, params: Any = None, rid: Any = 1) -> Any:
    reply = answer(Request(rid, method, {} if params is None else params), VERSION)
    assert isinstance(reply, dict), reply
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] == rid
    assert "error" not in reply
    return reply["result"]


def _error(method: str, params: Any, rid: Any = 1) -> dict[str, Any]:
    reply = answer(Request(rid, method, params), VERSION)
    assert isinstance(reply, dict), reply
    assert reply["id"] == rid
    assert "result" not in reply
    error = reply["error"]
    assert isinstance(error, dict)
    return error


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
def test_supported_versions_are_echoed(version: str) -> None:
    """A client asking for a supported version gets that version back."""
    assert negotiate(version) == version
    assert _result("initialize", {"protocolVersion": version})["protocolVersion"] == version


@pytest.mark.parametrize("requested", ["2099-01-01", "2024-10-07", "", None, 20251125, ["x"], {}])
def test_unknown_versions_get_the_latest(requested: Any) -> None:
    """Anything else, even a non-string, is answered with 2025-11-25."""
    assert negotiate(requested) == "2025-11-25"
    assert _result("initialize", {"protocolVersion": requested})["protocolVersion"] == "2025-11-25"


def test_missing_version_gets_the_latest() -> None:
    """initialize without protocolVersion still succeeds with the latest version."""
    assert _result("initialize", {})["protocolVersion"] == "2025-11-25"


def test_supported_versions_list_is_exactly_the_spec() -> None:
    """Exactly the four SPEC versions, newest first."""
    assert SUPPORTED_VERSIONS == ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


def test_initialize_result_shape() -> None:
    """serverInfo is lwc + the package version, only tools are advertised, instructions say
    results are untrusted and setup needs explicit CLI actions."""
    result = _result(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c"}},
    )
    assert set(result) == {"protocolVersion", "capabilities", "serverInfo", "instructions"}
    assert result["serverInfo"] == {"name": "lwc", "version": VERSION}
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    text = result["instructions"]
    assert isinstance(text, str)
    assert 0 < len(text) < 1000
    assert "untrusted" in text.lower()
    assert "lwc_explore" in text
    assert "lwc" in text
    assert "CLI" in text
    assert result == initialize_result({"protocolVersion": "2025-06-18"}, VERSION)


def test_repeated_initialize_is_served() -> None:
    """No lifecycle is enforced: a second initialize is answered like the first."""
    first = _result("initialize", {"protocolVersion": "2024-11-05"})
    second = _result("initialize", {"protocolVersion": "2024-11-05"}, rid="again")
    assert first == second


@pytest.mark.parametrize("rid", [1, "p", 0])
def test_ping_returns_empty_object(rid: Any) -> None:
    """ping → {} with the caller's id."""
    assert _result("ping", {}, rid=rid) == {}


def test_tools_list_has_exactly_lwc_explore() -> None:
    """tools/list returns one tool, lwc_explore, identical to the tool definition."""
    result = _result("tools/list")
    assert list(result) == ["tools"]
    assert len(result["tools"]) == 1
    assert result["tools"][0]["name"] == "lwc_explore"
    assert result["tools"][0] == tool_definition()


@pytest.mark.parametrize(
    "method",
    ["server/discover", "resources/list", "prompts/list", "completion/complete", "PING", ""],
)
def test_unknown_method_is_32601(method: str) -> None:
    """Any other request method is -32601 method_not_found, even with bad params."""
    bad_params: tuple[object, ...] = ({}, [1], "x")
    for params in bad_params:
        err = _error(method, params)
        assert err["code"] == -32601
        assert err["data"]["kind"] == "method_not_found"


@pytest.mark.parametrize("method", ["initialize", "ping", "tools/list", "tools/call"])
@pytest.mark.parametrize("params", [[], [1], "x", 3, True])
def test_non_object_params_are_32602(method: str, params: Any) -> None:
    """Known methods with params that are not an object get -32602 invalid_params."""
    err = _error(method, params)
    assert err["code"] == -32602
    assert err["data"]["kind"] == "invalid_params"
    assert "params" in err["message"]


@pytest.mark.parametrize("name", ["lwc_search", "LWC_EXPLORE", "", "lwc_explore "])
def test_unknown_tool_is_32602_unknown_tool(name: str) -> None:
    """tools/call naming any other tool is -32602 `Unknown tool`, kind unknown_tool."""
    err = _error("tools/call", {"name": name, "arguments": {}})
    assert err["code"] == -32602
    assert err["data"]["kind"] == "unknown_tool"
    assert err["message"].startswith("Unknown tool")


@pytest.mark.parametrize("params", [{}, {"arguments": {}}, {"name": None}, {"name": 5}])
def test_tools_call_without_string_name_is_invalid_params(params: dict[str, Any]) -> None:
    """tools/call without a string name is -32602 invalid_params naming `name`."""
    err = _error("tools/call", params)
    assert err["code"] == -32602
    assert err["data"]["kind"] == "invalid_params"
    assert "name" in err["message"]


@pytest.mark.parametrize(
    ("params", "arguments"),
    [
        ({"name": "lwc_explore"}, {}),
        ({"name": "lwc_explore", "arguments": None}, {}),
        ({"name": "lwc_explore", "arguments": {"query": "q"}}, {"query": "q"}),
        ({"name": "lwc_explore", "arguments": [1]}, [1]),
        ({"name": "lwc_explore", "arguments": "x", "_meta": {"progressToken": 1}}, "x"),
    ],
)
def test_tools_call_hands_raw_arguments_to_the_dispatcher(params: Any, arguments: Any) -> None:
    """lwc_explore calls become ToolCalls carrying the id and the raw arguments (validated later,
    so bad arguments become isError tool results, not protocol errors)."""
    assert answer(Request("c1", "tools/call", params), VERSION) == ToolCall("c1", arguments)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"requestId": 3}, 3),
        ({"requestId": "abc", "reason": "user"}, "abc"),
        ({"requestId": 0}, 0),
        ({"requestId": True}, None),
        ({"requestId": 1.0}, None),
        ({"requestId": None}, None),
        ({"requestId": {"id": 1}}, None),
        ({}, None),
    ],
)
def test_cancelled_request_id(params: dict[str, Any], expected: Any) -> None:
    """notifications/cancelled names a request only through a string or integer requestId."""
    got = cancelled_request_id(params)
    assert got == expected
    assert type(got) is type(expected)
