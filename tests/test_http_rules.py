"""The HTTP rules (SPEC §1.2) decide every status in the contract's order, without any IO."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lwc_trio.protocol import http_rules, jsonrpc
from lwc_trio.protocol.http_rules import (
    BODY_LIMIT,
    Authority,
    Head,
    Policy,
    Response,
    accepts_json,
    check_head,
    normalise_base_path,
    parse_allowed_host,
    parse_authority,
    parse_listen,
    route_body,
)

PORT = 8123
TOKEN = b"s3cret-token"
POLICY = Policy.build(port=PORT, base_path="/mcp", allowed_hosts=["proxy.test"])
LOCKED = Policy.build(port=PORT, base_path="/mcp", token=TOKEN)

GOOD = {
    "host": f"127.0.0.1:{PORT}",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "authorization": f"Bearer {TOKEN.decode()}",
    "mcp-protocol-version": "2025-06-18",
}


def head(method: str = "POST", path: str = "/mcp", **overrides: str | None) -> Head:
    """A request head: GOOD headers with `overrides` applied (None removes one)."""
    fields = {**GOOD, **{k.replace("_", "-"): v for k, v in overrides.items()}}
    pairs = [(k.encode(), v.encode("latin-1")) for k, v in fields.items() if v is not None]
    return Head(method, path, pairs)


def error_of(response: Response) -> dict[str, Any]:
    message = json.loads(response.body)
    assert message["jsonrpc"] == "2.0"
    error: dict[str, Any] = message["error"]
    return error


def status_kind(response: Response | None) -> tuple[int, str] | None:
    if response is None:
        return None
    return response.status, error_of(response)["data"]["kind"]


def judged(
    policy: Policy, request: Head, allowed: bool, refusal: tuple[int, str]
) -> Response | None:
    """`check_head`'s answer, checked: None when `allowed`, else a `refusal` (status, kind)."""
    refused = check_head(policy, request)
    assert (refused is None) is allowed
    if refused is not None:
        assert status_kind(refused) == refusal
    return refused


def test_each_check_fires_in_spec_order() -> None:
    """A request breaking every rule is refused by each rule in turn as the earlier ones are fixed."""
    fixes: list[tuple[dict[str, str | None], tuple[int, str]]] = [
        ({"transfer_encoding": "chunked"}, (400, "ambiguous_framing")),
        ({"host": "evil.test"}, (403, "forbidden_host")),
        ({"origin": "http://evil.test"}, (403, "forbidden_origin")),
        ({}, (404, "not_found")),  # the path is wrong; fixed below by changing `path`
        ({}, (405, "method_not_allowed")),
        ({"authorization": "Bearer wrong"}, (401, "unauthorized")),
        ({"mcp_protocol_version": "1999-01-01"}, (400, "unsupported_protocol_version")),
        ({"content_type": "text/plain"}, (415, "unsupported_media_type")),
        ({"accept": "text/event-stream"}, (406, "not_acceptable")),
        ({"content_length": str(BODY_LIMIT + 1)}, (413, "frame_too_large")),
    ]
    broken: dict[str, str | None] = {}
    for overrides, _ in fixes:
        broken.update(overrides)
    path, method = "/elsewhere", "GET"
    seen = []
    for overrides, expected in fixes:
        seen.append(status_kind(check_head(LOCKED, head(method, path, **broken))))
        assert seen[-1] == expected, seen
        for key in overrides:
            broken[key] = GOOD.get(key.replace("_", "-"))
        if expected[0] == 404:
            path = "/mcp"
        if expected[0] == 405:
            method = "POST"
    assert check_head(LOCKED, head("POST", "/mcp", **broken)) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("localhost:8080", Authority("localhost", 8080)),
        ("LocalHost", Authority("localhost", None)),
        ("127.0.0.1:0", Authority("127.0.0.1", 0)),
        ("[::1]:9", Authority("[::1]", 9)),
        ("[::1]", Authority("[::1]", None)),
        ("a-b.example.test:65535", Authority("a-b.example.test", 65535)),
        ("", None),
        ("localhost:", None),
        ("localhost:65536", None),
        ("localhost:80:80", None),
        ("::1:80", None),
        ("[::1", None),
        ("[nope]:80", None),
        ("-bad.test", None),
        ("user@host:80", None),
        ("host/path", None),
        ("http://host", None),
    ],
)
def test_parse_authority(text: str, expected: Authority | None) -> None:
    """Host values parse to (lowercase host, port) and anything else is rejected."""
    assert parse_authority(text) == expected


@given(st.text(max_size=40))
def test_parsers_never_raise_on_arbitrary_headers(text: str) -> None:
    """Hostile Host, Origin and Accept values are refused, never crash the rules."""
    parse_authority(text)
    accepts_json([text])
    check_head(POLICY, Head("POST", "/mcp", [(b"host", text.encode("utf-8"))]))
    check_head(POLICY, head(origin=text.encode("utf-8").decode("latin-1")))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8080", ("127.0.0.1", 8080)),
        ("localhost:0", ("localhost", 0)),
        ("[::1]:8080", ("::1", 8080)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
    ],
)
def test_parse_listen_accepts_host_port(text: str, expected: tuple[str, int]) -> None:
    """--http-listen takes HOST:PORT with IPv6 in brackets."""
    assert parse_listen(text) == expected


@pytest.mark.parametrize(
    "text", ["", "localhost", "127.0.0.1:", ":8080", "::1:8080", "host:99999", "a b:1", "h:-1"]
)
def test_parse_listen_rejects_malformed(text: str) -> None:
    """A listen address without a port or with a bad host is a usage error."""
    with pytest.raises(ValueError, match=r"HOST:PORT|port"):
        parse_listen(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("/", "/"), ("/mcp", "/mcp"), ("/mcp/", "/mcp"), ("/a/b//", "/a/b"), ("///", "/")],
)
def test_base_path_is_normalised(text: str, expected: str) -> None:
    """Trailing slashes are dropped so `/mcp/` and `/mcp` mount the same endpoint."""
    assert normalise_base_path(text) == expected


@pytest.mark.parametrize("text", ["", "mcp", "/a b", "/a?x", "/a#x", "/a%20", "/a//b"])
def test_base_path_rejects_malformed(text: str) -> None:
    """A base path must start with / and be a plain path."""
    with pytest.raises(ValueError, match=r"must|empty"):
        normalise_base_path(text)


def test_allowed_host_normalises_and_rejects() -> None:
    """--http-allowed-host values are lowercased names with an optional port."""
    assert parse_allowed_host("Proxy.Test") == "proxy.test"
    assert parse_allowed_host("proxy.test:443") == "proxy.test:443"
    for bad in ("", "http://proxy.test", "proxy.test/", "a b"):
        with pytest.raises(ValueError, match="not a host name"):
            parse_allowed_host(bad)


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        (f"127.0.0.1:{PORT}", True),
        (f"localhost:{PORT}", True),
        (f"LOCALHOST:{PORT}", True),
        (f"[::1]:{PORT}", True),
        ("localhost", False),  # means port 80
        (f"localhost:{PORT + 1}", False),
        (f"127.0.0.2:{PORT}", False),
        (f"evil.test:{PORT}", False),
        ("proxy.test", True),  # an allowed name without a port matches any port
        ("proxy.test:9999", True),
        ("proxy.test.evil:80", False),
    ],
)
def test_host_must_be_loopback_with_port_or_allowed(host: str, allowed: bool) -> None:
    """DNS-rebinding protection: only loopback names with the listen port, or allowed names."""
    judged(POLICY, head(host=host, authorization=None), allowed, (403, "forbidden_host"))


def test_listen_host_is_allowed_but_wildcards_are_not() -> None:
    """A named listen host is a valid Host; `0.0.0.0` names nothing and adds nothing."""
    named = Policy.build(port=PORT, listen_names=["box.lan", "10.0.0.5"])
    assert named.allows(Authority("box.lan", PORT))
    assert named.allows(Authority("10.0.0.5", PORT))
    wildcard = Policy.build(port=PORT, listen_names=["0.0.0.0", "::"])
    assert not wildcard.allows(Authority("0.0.0.0", PORT))
    assert wildcard.hosts == Policy.build(port=PORT).hosts


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ([], False),
        ([(b"host", f"127.0.0.1:{PORT}".encode())] * 2, False),
        ([(b"host", f"localhost:{PORT}".encode())], True),
        ([(b":authority", f"localhost:{PORT}".encode())], False),
    ],
)
def test_host_header_must_appear_once(headers: list[tuple[bytes, bytes]], allowed: bool) -> None:
    """A missing or repeated Host is refused; nothing stands in for it (no HTTP/2)."""
    refused = check_head(POLICY, Head("POST", "/mcp", headers))
    assert refused is not None
    assert (refused.status != 403) is allowed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (f"http://localhost:{PORT}", True),
        (f"http://127.0.0.1:{PORT}", True),
        (f"http://[::1]:{PORT}", True),
        ("http://proxy.test", True),
        ("null", False),
        (f"https://localhost:{PORT}", False),
        (f"http://localhost:{PORT}/", False),
        (f"http://localhost:{PORT + 1}", False),
        ("http://localhost", False),
        (f"http://evil.test:{PORT}", False),
        (f"localhost:{PORT}", False),
    ],
)
def test_origin_when_present_must_be_http_plus_allowed_host(origin: str, allowed: bool) -> None:
    """Browsers' Origin must be http:// plus an allowed host and port; `null` never passes."""
    judged(POLICY, head(origin=origin, authorization=None), allowed, (403, "forbidden_origin"))


def test_two_origins_are_refused() -> None:
    """Repeated Origin headers cannot be checked, so they are refused."""
    pairs = [*head(authorization=None).headers, (b"origin", b"http://localhost:1")]
    pairs.insert(0, (b"origin", f"http://localhost:{PORT}".encode()))
    assert status_kind(check_head(POLICY, Head("POST", "/mcp", pairs))) == (
        403,
        "forbidden_origin",
    )


@pytest.mark.parametrize("path", ["/", "/mcp/", "/MCP", "/mcp/x", "/mcpx"])
def test_path_must_match_exactly(path: str) -> None:
    """Only the exact mount path is served."""
    assert status_kind(check_head(POLICY, head(path=path))) == (404, "not_found")


@pytest.mark.parametrize("method", ["GET", "DELETE", "OPTIONS", "PUT", "PATCH", "HEAD"])
def test_other_methods_get_405_with_allow_post_and_no_cors(method: str) -> None:
    """Stateless JSON mode takes POST only, says so in Allow, and never sends CORS headers."""
    refused = check_head(POLICY, head(method))
    assert refused is not None
    assert refused.status == 405
    headers = dict(refused.header_list())
    assert headers[b"allow"] == b"POST"
    assert not [name for name in headers if name.startswith(b"access-control-")]


@pytest.mark.parametrize(
    ("authorization", "allowed"),
    [
        (f"Bearer {TOKEN.decode()}", True),
        (f"bearer {TOKEN.decode()}", True),
        (f"Bearer  {TOKEN.decode()} ", True),
        (None, False),
        ("Bearer", False),
        ("Bearer wrong", False),
        (f"Bearer {TOKEN.decode()}x", False),
        (f"Basic {TOKEN.decode()}", False),
        (TOKEN.decode(), False),
    ],
)
def test_bearer_token_required_when_configured(authorization: str | None, allowed: bool) -> None:
    """With a token configured every request needs exactly `Bearer <token>`."""
    refused = judged(LOCKED, head(authorization=authorization), allowed, (401, "unauthorized"))
    if refused is not None:
        assert dict(refused.headers)[b"www-authenticate"] == b"Bearer"


def test_no_token_configured_ignores_authorization() -> None:
    """Without a token file, Authorization headers are not examined."""
    assert check_head(POLICY, head(authorization="Bearer anything")) is None


@pytest.mark.parametrize(
    ("version", "allowed"),
    [
        (None, True),
        ("2025-11-25", True),
        ("2025-06-18", True),
        ("2025-03-26", True),
        ("2024-11-05", True),
        ("2026-07-28", False),
        ("", False),
        ("latest", False),
    ],
)
def test_protocol_version_header_must_be_supported(version: str | None, allowed: bool) -> None:
    """An MCP-Protocol-Version we do not speak is 400 with the versions we do."""
    refused = judged(
        POLICY, head(mcp_protocol_version=version), allowed, (400, "unsupported_protocol_version")
    )
    if refused is not None:
        assert error_of(refused)["data"]["supported"][0] == "2025-11-25"


@pytest.mark.parametrize(
    ("content_type", "allowed"),
    [
        ("application/json", True),
        ("Application/JSON", True),
        ("application/json; charset=utf-8", True),
        ('application/json;charset="UTF-8"', True),
        (None, False),
        ("text/plain", False),
        ("application/json-rpc", False),
        ("application/json; charset=latin-1", False),
        ("text/event-stream", False),
    ],
)
def test_content_type_must_be_json(content_type: str | None, allowed: bool) -> None:
    """Bodies must be declared application/json (UTF-8), checked before any parsing."""
    judged(POLICY, head(content_type=content_type), allowed, (415, "unsupported_media_type"))


@pytest.mark.parametrize(
    ("accept", "allowed"),
    [
        (None, True),
        ("", True),
        ("*/*", True),
        ("application/*", True),
        ("application/json", True),
        ("application/json, text/event-stream", True),
        ("text/html, */*;q=0.1", True),
        ("*/*;q=0, application/json", True),
        ("application/json;q=oops", True),
        ("text/event-stream", False),
        ("text/html", False),
        ("application/json;q=0", False),
        ("*/*, application/json;q=0", False),
        ("application/*;q=0.0", False),
    ],
)
def test_accept_must_admit_json(accept: str | None, allowed: bool) -> None:
    """Accept may be missing or anything admitting JSON; the most specific range decides."""
    judged(POLICY, head(accept=accept), allowed, (406, "not_acceptable"))


def test_declared_oversize_body_is_refused_before_reading() -> None:
    """A Content-Length over 64 KiB is 413 from the head alone; exactly 64 KiB is fine."""
    assert check_head(POLICY, head(content_length=str(BODY_LIMIT))) is None
    refused = check_head(POLICY, head(content_length=str(BODY_LIMIT + 1)))
    assert status_kind(refused) == (413, "frame_too_large")
    assert route_body(b" " * (BODY_LIMIT + 1)) == http_rules.too_large()


@pytest.mark.parametrize(
    ("body", "code", "kind"),
    [
        (b"", jsonrpc.PARSE_ERROR, "parse_error"),
        (b"{nope", jsonrpc.PARSE_ERROR, "parse_error"),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","x":NaN}', jsonrpc.PARSE_ERROR, "parse_error"),
        (b"\xff", jsonrpc.PARSE_ERROR, "parse_error"),
        (b"[]", jsonrpc.INVALID_REQUEST, "invalid_request"),
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', jsonrpc.INVALID_REQUEST, "invalid_request"),
        (b'{"jsonrpc":"2.0","id":1}', jsonrpc.INVALID_REQUEST, "invalid_request"),
    ],
)
def test_bad_json_and_bad_envelopes_are_400(body: bytes, code: int, kind: str) -> None:
    """Unparseable bodies are 400 -32700, malformed envelopes 400 -32600, with data.kind."""
    routed = route_body(body)
    assert isinstance(routed, Response)
    assert routed.status == 400
    error = error_of(routed)
    assert (error["code"], error["data"]["kind"]) == (code, kind)


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
        b'{"jsonrpc":"2.0","method":"some/unknown"}',
        b'{"jsonrpc":"2.0","id":7,"result":{}}',
        b'{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}',
    ],
)
def test_notifications_and_client_responses_are_202_without_body(body: bytes) -> None:
    """Nothing is said back to a notification or a client response: 202 and an empty body."""
    routed = route_body(body)
    assert routed == http_rules.ACCEPTED
    assert isinstance(routed, Response)
    assert routed.body == b""
    assert dict(routed.header_list()) == {b"content-length": b"0"}


def test_requests_go_to_the_dispatcher() -> None:
    """A well-formed request comes back as a Request for the dispatcher to answer."""
    routed = route_body(b' {"jsonrpc":"2.0","id":"a","method":"tools/list"}\n')
    assert routed == jsonrpc.Request("a", "tools/list", {})


def test_replies_and_busy_carry_json_and_retry_after() -> None:
    """Answers are application/json with a length; 503 names the request and says when to retry."""
    ok = http_rules.reply(jsonrpc.result(3, {}))
    assert ok.status == 200
    assert dict(ok.header_list()) == {
        b"content-type": b"application/json",
        b"content-length": str(len(ok.body)).encode(),
    }
    busy = http_rules.busy(9, 32)
    assert busy.status == 503
    assert dict(busy.headers)[b"retry-after"] == http_rules.RETRY_AFTER
    message = json.loads(busy.body)
    assert message["id"] == 9
    assert message["error"]["code"] == jsonrpc.SERVER_BUSY
    assert message["error"]["data"]["kind"] == "server_busy"


# -- framing and the limits on slow and abusive clients -----------------------------------


def test_content_length_with_transfer_encoding_is_400_and_closes() -> None:
    """Two framings on one request: refused before anything else, and the connection closed."""
    response = check_head(POLICY, head(content_length="40", transfer_encoding="chunked"))
    assert status_kind(response) == (400, "ambiguous_framing")
    assert response is not None
    assert response.close
    assert (b"connection", b"close") in response.header_list()
    assert check_head(POLICY, head(transfer_encoding="chunked")) is None
    assert check_head(POLICY, head(content_length="40")) is None


def test_default_limits_are_the_spec_values() -> None:
    """10 s to read a request, 30 s idle keep-alive, 256 connections (SPEC §1.2); an
    answer gets as long to be read as a request to arrive."""
    assert http_rules.Limits() == http_rules.Limits(10.0, 30.0, 256, 10.0)
    assert http_rules.parse_limits(None) == http_rules.Limits()
    assert http_rules.parse_limits(" ") == http_rules.Limits()


def test_parse_limits_takes_any_subset_and_rejects_the_rest() -> None:
    limits = http_rules.parse_limits("read=0.5, connections=8")
    assert limits == http_rules.Limits(0.5, 30.0, 8)
    assert http_rules.parse_limits("idle=2").idle_timeout == 2.0
    assert http_rules.parse_limits("write=1.5").write_timeout == 1.5
    for bad in (
        "read=0",
        "read=-1",
        "idle=inf",
        "idle=nan",
        "connections=1.5",
        "write=0",
        "read",
        "read=1,read=2",
        "connections=x",
    ):
        with pytest.raises(ValueError, match="LWC_HTTP_LIMITS"):
            http_rules.parse_limits(bad)


@pytest.mark.parametrize(
    ("configured", "fd_limit", "in_use", "expected"),
    [
        (256, None, 20, 256),  # unlimited descriptors
        (256, 1_048_576, 20, 256),
        (256, 1024, 20, 256),
        (256, 256, 20, 256 - 20 - http_rules.FD_RESERVE),
        (256, 128, 20, 128 - 20 - http_rules.FD_RESERVE),  # the ulimit -n 128
        (256, 64, 20, 1),  # never below one
        (4, 128, 20, 4),
    ],
)
def test_connection_cap_leaves_descriptors_free(
    configured: int, fd_limit: int | None, in_use: int, expected: int
) -> None:
    assert http_rules.connection_cap(configured, fd_limit, in_use) == expected


def test_victim_is_the_connection_without_progress_for_longest() -> None:
    """Idle and half-sent connections can be closed for room, oldest first; busy ones never."""
    choose = http_rules.choose_victim
    assert choose([("busy", 1.0), ("reading", 5.0), ("idle", 3.0)]) == 2
    assert choose([("reading", 2.0), ("idle", 3.0)]) == 0
    assert choose([("busy", 1.0), ("busy", 2.0)]) is None
    assert choose([("busy", 1.0), ("writing", 4.0), ("reading", 5.0)]) == 1
    assert choose([]) is None


def test_timeout_and_refusal_answers_close_and_serialise_as_http1() -> None:
    limits = http_rules.Limits(read_timeout=10.0)
    timed_out = http_rules.timed_out(limits)
    assert status_kind(timed_out) == (408, "request_timeout")
    assert "10 s" in error_of(timed_out)["message"]
    refused = http_rules.too_many_connections(256)
    assert status_kind(refused) == (503, "server_busy")
    assert error_of(refused)["code"] == jsonrpc.SERVER_BUSY
    assert (timed_out.reason, refused.reason) == (b"Request Timeout", b"Service Unavailable")
    for response in (timed_out, refused):
        assert response.close
        headers = response.header_list(date=b"Thu, 03 Dec 2026 12:00:00 GMT")
        assert (b"connection", b"close") in headers
        assert (b"content-length", b"%d" % len(response.body)) in headers
        assert (b"date", b"Thu, 03 Dec 2026 12:00:00 GMT") in headers
    assert (b"retry-after", b"1") in refused.header_list()


@pytest.mark.parametrize("version", [b"2.0", b"0.9", b"3.0"])
def test_anything_but_http_1_is_refused_first_with_505_and_a_close(version: bytes) -> None:
    """HTTP/2's prior-knowledge preface parses as `PRI * HTTP/2.0`: refused before any other
    check (no Host, no path, no method would matter), and the connection closes."""
    refused = check_head(POLICY, Head("PRI", "*", [], version))
    assert status_kind(refused) == (505, "unsupported_http_version")
    assert refused is not None
    assert refused.close
    assert check_head(POLICY, head()) is None
    assert check_head(POLICY, attrs.evolve(head(), http_version=b"1.0")) is None


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "malformed_request"), (431, "headers_too_large"), (501, "unsupported_framing")],
)
def test_what_the_parser_refuses_is_a_json_rpc_error_that_closes(status: int, kind: str) -> None:
    refused = http_rules.malformed(status)
    assert status_kind(refused) == (status, kind)
    assert refused.close


def test_a_head_is_measured_in_bytes_received_up_to_16_kib_inclusive() -> None:
    """`check_head_size`: 16,384 bytes pass, one more is 431 `headers_too_large`, closed."""
    assert http_rules.HEAD_LIMIT == 16_384
    assert http_rules.check_head_size(16_384) is None
    refused = http_rules.check_head_size(16_385)
    assert refused is not None
    assert (refused.status, refused.close) == (431, True)
    assert json.loads(refused.body)["error"]["data"]["kind"] == "headers_too_large"
