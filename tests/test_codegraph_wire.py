"""The child's stdio is framed within 256 KiB and every line is classified or refused."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lwc_trio.codegraph import wire
from lwc_trio.codegraph.wire import (
    FRAME_LIMIT,
    BadFrame,
    ChildRequest,
    FrameTooLarge,
    LineSplitter,
    Notification,
    Response,
    parse_frame,
)


@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8), st.data())
def test_lines_survive_any_chunking(lines: list[bytes], data: st.DataObject) -> None:
    """However the bytes are split into reads, the same lines come out, in order."""
    stream = b"".join(line + b"\n" for line in lines)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    splitter, out = LineSplitter(), []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        out.extend(splitter.feed(stream[start:end]))
    assert out == [line.removesuffix(b"\r") for line in lines]


def test_trailing_carriage_return_is_stripped() -> None:
    """CRLF-terminated frames parse like LF-terminated ones."""
    assert LineSplitter().feed(b'{"a":1}\r\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']


def test_a_frame_of_exactly_the_limit_is_accepted() -> None:
    """256 KiB of payload plus the newline is still one frame."""
    line = b"x" * FRAME_LIMIT
    splitter = LineSplitter()
    assert splitter.feed(line[:1000]) == []
    assert splitter.feed(line[1000:] + b"\n") == [line]


def test_an_oversized_frame_is_refused_before_its_newline_arrives() -> None:
    """The limit trips as soon as an unfinished line exceeds it, not at its end."""
    splitter = LineSplitter()
    splitter.feed(b"y" * FRAME_LIMIT)
    with pytest.raises(FrameTooLarge, match="256 KiB"):
        splitter.feed(b"y")
    with pytest.raises(FrameTooLarge):
        LineSplitter(limit=10).feed(b"0123456789ab\n")


def test_replies_requests_and_notifications_are_told_apart() -> None:
    """A reply has our integer id; the child's own messages carry a method."""
    assert parse_frame(b'{"jsonrpc":"2.0","id":3,"result":{"content":[]}}') == Response(
        id=3, result={"content": []}, error=None
    )
    assert parse_frame(b'{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"m"}}') == Response(
        id=4, result=None, error={"code": -1, "message": "m"}
    )
    assert parse_frame(b'{"jsonrpc":"2.0","id":"s1","method":"ping"}') == ChildRequest(
        id="s1", method="ping"
    )
    assert parse_frame(b'{"jsonrpc":"2.0","method":"notifications/message"}') == Notification(
        method="notifications/message"
    )
    assert parse_frame(b"   ") is None


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"\xff\xfe",
        b'{"id":1,"result":NaN}',
        b"[1,2]",
        b'{"id":"1","result":{}}',
        b'{"id":true,"result":{}}',
        b'{"id":1.5,"result":{}}',
        b'{"id":1}',
        b'{"id":1,"result":{},"error":{}}',
        b'{"id":1,"result":"text"}',
    ],
)
def test_unusable_lines_are_bad_frames(line: bytes) -> None:
    """Invalid JSON, non-objects, foreign id types and malformed replies are refused."""
    with pytest.raises(BadFrame):
        parse_frame(line)


def test_child_requests_get_pong_or_method_not_found() -> None:
    """We answer the child's ping with {} and anything else with -32601, echoing its id."""
    assert wire.reply_to_child(ChildRequest(id=7, method="ping")) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {},
    }
    refusal = wire.reply_to_child(ChildRequest(id="r", method="roots/list"))
    assert refusal["id"] == "r"
    assert refusal["error"]["code"] == -32601


def test_messages_we_send_are_compact_single_lines() -> None:
    """Frames are one line of compact UTF-8 JSON, so a newline in a query cannot split them."""
    frame = wire.encode(
        wire.tools_call_request(5, "codegraph_explore", {"query": "naïve\nsplit", "maxFiles": 2})
    )
    assert frame.endswith(b"\n")
    assert frame.count(b"\n") == 1
    assert "naïve".encode() in frame
    assert json.loads(frame)["params"]["arguments"]["query"] == "naïve\nsplit"
    init = wire.initialize_request(1)
    assert init["params"]["protocolVersion"] == "2024-11-05"
    assert init["params"]["capabilities"] == {}
    assert wire.cancelled_notification(5, "gone")["params"] == {"requestId": 5, "reason": "gone"}
