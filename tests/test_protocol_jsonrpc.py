"""Strict JSON-RPC parsing turns every frame into exactly one Request, Notification, ignored client
response or error Reply with the SPEC §1.1/§1.3 code, id and `data.kind`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwc_trio.protocol import jsonrpc
from lwc_trio.protocol.jsonrpc import (
    Ignored,
    Notification,
    Reply,
    Request,
    classify,
    encode,
    error,
    frame_too_large,
    loads_strict,
    parse_message,
)

SPEC_KINDS = frozenset(
    {
        "parse_error",
        "invalid_request",
        "frame_too_large",
        "method_not_found",
        "invalid_params",
        "unknown_tool",
        "unsupported_protocol_version",
        "server_busy",
        "internal_error",
    }
)


def _nest(depth: int) -> bytes:
    """A request whose deepest container sits at `depth` (the envelope object is level 1)."""
    inner = b"1"
    for _ in range(depth - 1):
        inner = b'{"a":' + inner + b"}"
    return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + inner + b"}"


def _assert_reply(msg: Any, code: int, kind: str, rid: Any) -> dict[str, Any]:
    assert isinstance(msg, Reply), msg
    reply = msg.message
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] == rid
    assert type(reply["id"]) is type(rid)
    assert reply["error"]["code"] == code
    assert reply["error"]["data"]["kind"] == kind
    assert isinstance(reply["error"]["message"], str)
    assert reply["error"]["message"]
    assert set(reply) == {"jsonrpc", "id", "error"}
    return reply


# --- strict parsing: -32700 (duplicates: -32600), id null unless usable ---------------------

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'

_PARSE_TABLE = [
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\xff"}', -32700, id="invalid-utf8"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\xc3"}', -32700, id="truncated-utf8"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\xed\xa0\x80"}', -32700, id="utf8-surrogate"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\xc0\xaf"}', -32700, id="overlong-utf8"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', -32700, id="nan"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":Infinity}}', -32700),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":-Infinity}}', -32700),
    pytest.param(b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', -32700, id="nan-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', -32700, id="lone-high"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\\udc00x"}', -32700, id="lone-low"),
    pytest.param(b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', -32700, id="lone-in-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping","\\ud83d":1}', -32700, id="lone-key"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":["\\ud800\\u0041"]}', -32700),
    pytest.param(_nest(65), -32700, id="depth-65"),
    pytest.param(b"[" * 65 + b"]" * 65, -32700, id="array-depth-65"),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, -32700, id="depth-100000"),
    pytest.param(b"{" * 100_000, -32700, id="open-braces-100000"),
    pytest.param(PING + b" x", -32700, id="trailing-garbage"),
    pytest.param(PING + PING, -32700, id="two-objects"),
    pytest.param(PING + b",", -32700, id="trailing-comma"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping",}', -32700, id="comma-before-brace"),
    pytest.param(b"{'jsonrpc':'2.0'}", -32700, id="single-quotes"),
    pytest.param(b'{"jsonrpc":"2.0","id":01,"method":"ping"}', -32700, id="leading-zero"),
    pytest.param(b'{"a":"tab\there"}', -32700, id="raw-control-char"),
    pytest.param(b"\xef\xbb\xbf" + PING, -32700, id="bom"),
    pytest.param(b"", -32700, id="empty"),
    pytest.param(b"   ", -32700, id="blank"),
    pytest.param(b'{"jsonrpc":"2.0"', -32700, id="truncated"),
    pytest.param(b"nan", -32700, id="bare-nan"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', -32600, id="dup-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"id":1,"method":"ping"}', -32600, id="same-id-twice"),
    pytest.param(b'[{"a":1,"a":2}]', -32600, id="dup-in-array"),
    pytest.param(b'{"jsonrpc":"2.0","id":true,"a":1,"a":2}', -32600, id="dup-with-bool-id"),
]


@pytest.mark.parametrize(("frame", "code"), _PARSE_TABLE)
def test_strict_parse_table(frame: bytes, code: int) -> None:
    """Non-RFC-8259 input is -32700 parse_error and duplicate keys -32600, both with id null."""
    kind = "parse_error" if code == -32700 else "invalid_request"
    _assert_reply(parse_message(frame), code, kind, None)


_CALL_WITH_DUPLICATE = (
    b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"lwc_explore",'
    b'"arguments":{"query":"a","query":"b"}}}'
)


@pytest.mark.parametrize(
    ("frame", "rid"),
    [
        pytest.param(_CALL_WITH_DUPLICATE, 5, id="dup-in-arguments"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping","method":"x"}', 1, id="dup-method"),
        pytest.param(b'{"jsonrpc":"2.0","id":"a","method":"ping","params":{"a":1,"a":1}}', "a"),
        pytest.param(b'{"id":7,"jsonrpc":"2.0","method":"x","p":[{"q":{"r":1,"r":2}}]}', 7),
        pytest.param(b'{"jsonrpc":"1.0","id":8,"method":"ping","x":1,"x":2}', 8, id="bad-version"),
    ],
)
def test_a_duplicate_key_keeps_a_usable_top_level_id(frame: bytes, rid: Any) -> None:
    """SPEC §1.3: id null *unless usable*. A key repeated anywhere in the frame is -32600,
    answered with the request's own id when the top-level id is unique and a string or an
    integer, so the host can match the error to its request (before: id null, and the host
    waited for its own timeout)."""
    reply = _assert_reply(parse_message(frame), -32600, "invalid_request", rid)
    assert "duplicate key" in reply["error"]["message"]


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(b'{"a":1,"a":2} x', id="dup-then-trailing-garbage"),
        pytest.param(b'[{"a":1,"a":1},', id="dup-then-truncated"),
        pytest.param(b'[{"a":1,"a":1},NaN]', id="dup-then-nan"),
        pytest.param(b'{"a":"\\ud800","a":1}', id="dup-with-lone-surrogate"),
        pytest.param(b'{"a":1,"a":1,"b":' + b"[" * 70 + b"]" * 70 + b"}", id="dup-with-depth-70"),
    ],
)
def test_parse_error_wins_over_duplicate_keys(frame: bytes) -> None:
    """SPEC §1.3 checks parse (-32700) before envelope: a frame that is not strict JSON anywhere
    is a parse error even when an object inside it repeats a key."""
    _assert_reply(parse_message(frame), -32700, "parse_error", None)


@pytest.mark.parametrize("depth", [2, 10, 63, 64])
def test_nesting_up_to_64_is_accepted(depth: int) -> None:
    """Nesting of exactly 64 containers (envelope included) still parses into a Request."""
    msg = parse_message(_nest(depth))
    assert isinstance(msg, Request)
    assert msg.method == "ping"


def test_array_depth_64_parses() -> None:
    """64 nested arrays are valid JSON (then refused only as a batch, -32600)."""
    assert loads_strict(b"[" * 64 + b"]" * 64) is not None
    _assert_reply(parse_message(b"[" * 64 + b"]" * 64), -32600, "invalid_request", None)


@pytest.mark.parametrize(
    ("frame", "value"),
    [
        (b' \t\r\n{"a":[1,2.5,"\\u00e9\\ud83d\\ude00"]} \r\n', {"a": [1, 2.5, "é😀"]}),
        (b"1e400", float("inf")),
        (b'"\\u0000"', "\x00"),
        ('"日本"'.encode(), "日本"),
        (b"-0", 0),
        (b"12345678901234567890", 12345678901234567890),
    ],
)
def test_loads_strict_accepts_valid_json(frame: bytes, value: Any) -> None:
    """Valid RFC 8259 text (surrogate pairs, JSON whitespace around the value) decodes."""
    assert loads_strict(frame) == value


@pytest.mark.parametrize(
    "frame", [b"NaN", b"\xff", b'"\\udfff"', b"[1] [2]", b"[" * 65 + b"]" * 65]
)
def test_loads_strict_raises_value_error(frame: bytes) -> None:
    """loads_strict signals every strictness violation as ValueError."""
    # The contract is the type alone: each violation has its own message.
    with pytest.raises(ValueError):  # noqa: PT011
        loads_strict(frame)


# --- envelope checks ------------------------------------------------------------------------

_ENVELOPE_ERRORS = [
    pytest.param([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None, id="batch"),
    pytest.param([], None, id="empty-batch"),
    pytest.param("ping", None, id="string"),
    pytest.param(1, None, id="number"),
    pytest.param(None, None, id="null"),
    pytest.param(True, None, id="bool"),
    pytest.param({}, None, id="empty-object"),
    pytest.param({"jsonrpc": "1.0", "id": 1, "method": "ping"}, 1, id="jsonrpc-1.0"),
    pytest.param({"id": "a", "method": "ping"}, "a", id="jsonrpc-missing"),
    pytest.param({"jsonrpc": 2.0, "id": 1, "method": "ping"}, 1, id="jsonrpc-number"),
    pytest.param({"jsonrpc": None, "id": 1, "method": "ping"}, 1, id="jsonrpc-null"),
    pytest.param({"jsonrpc": "1.0", "method": "ping"}, None, id="jsonrpc-1.0-notification"),
    pytest.param({"jsonrpc": "2.0", "id": 1}, 1, id="id-without-method"),
    pytest.param({"jsonrpc": "2.0", "id": "x", "params": {}}, "x", id="params-without-method"),
    pytest.param({"jsonrpc": "2.0"}, None, id="nothing"),
    pytest.param({"jsonrpc": "2.0", "id": 3, "method": 5}, 3, id="method-number"),
    pytest.param({"jsonrpc": "2.0", "id": 3, "method": None}, 3, id="method-null"),
    pytest.param({"jsonrpc": "2.0", "id": 3, "method": ["ping"]}, 3, id="method-array"),
    pytest.param({"jsonrpc": "2.0", "method": {}}, None, id="notification-method-object"),
    pytest.param({"jsonrpc": "2.0", "id": None, "method": "ping"}, None, id="id-null"),
    pytest.param({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None, id="id-float"),
    pytest.param({"jsonrpc": "2.0", "id": 1.0, "method": "ping"}, None, id="id-float-integral"),
    pytest.param({"jsonrpc": "2.0", "id": True, "method": "ping"}, None, id="id-true"),
    pytest.param({"jsonrpc": "2.0", "id": False, "method": "ping"}, None, id="id-false"),
    pytest.param({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, None, id="id-object"),
    pytest.param({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None, id="id-array"),
    pytest.param({"jsonrpc": "1.0", "id": 2.5, "method": "ping"}, None, id="bad-id-bad-version"),
]


@pytest.mark.parametrize(("value", "rid"), _ENVELOPE_ERRORS)
def test_envelope_errors(value: Any, rid: Any) -> None:
    """Each SPEC §1.3 envelope violation is -32600 invalid_request, echoing only a usable id."""
    reply = _assert_reply(parse_message(json.dumps(value).encode()), -32600, "invalid_request", rid)
    assert reply["error"]["message"].startswith("Invalid Request")
    _assert_reply(classify(value), -32600, "invalid_request", rid)


@pytest.mark.parametrize("rid", [0, -1, 2**63, 10**30, "", "abc", "日本", "1"])
def test_usable_ids_are_kept_exactly(rid: Any) -> None:
    """String and integer ids (any size, empty string, numeric strings) come back unchanged."""
    msg = parse_message(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}).encode())
    assert msg == Request(rid, "ping", {})
    assert type(msg.id) is type(rid)


@pytest.mark.parametrize(
    "value",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": "s", "result": None},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "no"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}},
        {"jsonrpc": "2.0", "result": 5},
    ],
)
def test_client_responses_are_ignored(value: Any) -> None:
    """A message with `result` or `error` and no `method` is a client response: never answered."""
    assert parse_message(json.dumps(value).encode()) == Ignored()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            Notification("notifications/initialized", {}),
        ),
        (
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}},
            Notification("notifications/cancelled", {"requestId": 7}),
        ),
        (
            {"jsonrpc": "2.0", "method": "notifications/whatever", "params": None},
            Notification("notifications/whatever", {}),
        ),
        (
            {"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1, 2]},
            Notification("notifications/initialized", {}),
        ),
    ],
)
def test_notifications(value: Any, expected: Notification) -> None:
    """A message with a method and no `id` is a Notification with object params."""
    assert parse_message(json.dumps(value).encode()) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, Request(1, "ping", {})),
        (
            {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "x"}},
            Request("a", "tools/call", {"name": "x"}),
        ),
        (
            {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": [1]},
            Request(2, "server/discover", [1]),
        ),
        (
            {"params": {}, "method": "initialize", "id": 9, "jsonrpc": "2.0"},
            Request(9, "initialize", {}),
        ),
    ],
)
def test_requests(value: Any, expected: Request) -> None:
    """Well-formed requests keep id, method and raw params (non-object params are left for
    the method check, since SPEC §1.3 checks the method before params)."""
    assert parse_message(json.dumps(value).encode()) == expected


# --- building replies -----------------------------------------------------------------------


def test_error_shape_and_extra_data() -> None:
    """error() builds a JSON-RPC error with data.kind plus extra data fields."""
    assert error(5, -32602, "bad", "invalid_params", field="x") == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {
            "code": -32602,
            "message": "bad",
            "data": {"kind": "invalid_params", "field": "x"},
        },
    }


@pytest.mark.parametrize("rid", [None, 4, "r"])
def test_frame_too_large_reply(rid: Any) -> None:
    """The oversize answer is -32600 `Request exceeds 64 KiB`, kind frame_too_large, with the id."""
    reply = frame_too_large(rid, 65_536)
    assert reply == {
        "jsonrpc": "2.0",
        "id": rid,
        "error": {
            "code": -32600,
            "message": "Request exceeds 64 KiB",
            "data": {"kind": "frame_too_large"},
        },
    }


def test_encode_is_one_compact_utf8_line() -> None:
    """encode() gives compact UTF-8 JSON, non-ASCII unescaped, with exactly one final newline."""
    out = encode(jsonrpc.result("r", {"text": "café\nnext", "n": [1, 2]}))
    assert out == '{"jsonrpc":"2.0","id":"r","result":{"text":"café\\nnext","n":[1,2]}}\n'.encode()
    assert out.count(b"\n") == 1
    assert json.loads(out) == {
        "jsonrpc": "2.0",
        "id": "r",
        "result": {"text": "café\nnext", "n": [1, 2]},
    }


def test_error_codes_are_the_json_rpc_ones() -> None:
    """The numeric codes are the JSON-RPC 2.0 reserved values the SPEC names."""
    assert (jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST) == (-32700, -32600)
    assert (jsonrpc.METHOD_NOT_FOUND, jsonrpc.INVALID_PARAMS) == (-32601, -32602)
    assert jsonrpc.MAX_DEPTH == 64


# --- fuzz -----------------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=10),
)
_json_values = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=15,
)
_envelopes = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.one_of(st.just("2.0"), _json_values),
        "id": st.one_of(st.integers(), st.text(max_size=5), _json_values),
        "method": st.one_of(
            st.sampled_from(["ping", "initialize", "tools/call", "notifications/cancelled"]),
            _json_values,
        ),
        "params": _json_values,
        "result": _json_values,
        "error": _json_values,
    },
)


def _usable(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _check_invariants(value: Any, msg: Any) -> None:
    assert isinstance(msg, Request | Notification | Ignored | Reply)
    if isinstance(msg, Reply):
        err = msg.message["error"]
        assert err["data"]["kind"] in SPEC_KINDS
        assert err["code"] == -32600
        assert err["data"]["kind"] == "invalid_request"
        rid = msg.message["id"]
        assert rid is None or (isinstance(value, dict) and _usable(rid) and rid == value["id"])
    elif isinstance(msg, Request):
        assert value["jsonrpc"] == "2.0"
        assert _usable(msg.id)
        assert msg.id == value["id"]
        assert msg.method == value["method"]
    elif isinstance(msg, Notification):
        assert value["jsonrpc"] == "2.0"
        assert "id" not in value
        assert isinstance(msg.method, str)
        assert isinstance(msg.params, dict)
    else:
        assert "method" not in value
        assert "result" in value or "error" in value


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(_json_values, _envelopes))
def test_fuzz_valid_json_values(value: Any) -> None:
    """Any valid JSON value is classified without raising, never as a parse error, and any
    reply it earns is -32600 with an id only when that id was usable."""
    msg = parse_message(json.dumps(value).encode())
    _check_invariants(value, msg)
    assert classify(value) == msg


@settings(max_examples=200, deadline=None)
@given(
    frame=st.one_of(
        st.binary(max_size=200),
        st.text(st.sampled_from('{}[]":,\\ud800 0123456789.eE+-truefalsnul\t'), max_size=80).map(
            str.encode
        ),
    )
)
def test_fuzz_arbitrary_bytes(frame: bytes) -> None:
    """Arbitrary bytes never raise; every reply is a JSON-RPC error with a SPEC data.kind."""
    msg = parse_message(frame)
    assert isinstance(msg, Request | Notification | Ignored | Reply)
    if isinstance(msg, Reply):
        err = msg.message["error"]
        assert err["code"] in (-32700, -32600)
        assert err["data"]["kind"] in SPEC_KINDS
        if err["code"] == -32700:
            assert msg.message["id"] is None
        json.dumps(msg.message)  # the reply itself is always encodable
