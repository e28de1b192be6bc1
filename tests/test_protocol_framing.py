"""LineFramer cuts any byte stream exactly like a naive line splitter, never buffers past the cap,
and recovers the top-level id of a discarded oversize frame (SPEC §1.1)."""

from __future__ import annotations

import itertools
import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwc_trio.protocol.framing import FRAME_LIMIT, Line, LineFramer, Oversize

SMALL = 64
"""A small cap so that the fuzz reaches the oversize path with short inputs."""

Summary = tuple[str, Any]


def _reference_frame(raw: bytes, limit: int) -> Summary | None:
    """What one raw line (newline excluded) must become, per SPEC §1.1."""
    line = raw[:-1] if raw.endswith(b"\r") else raw
    if len(line) > limit:
        return ("oversize", len(raw))
    if not line.strip():
        return None
    return ("line", line)


def reference(stream: bytes, limit: int) -> tuple[list[Summary], list[Summary]]:
    """Frames a naive splitter predicts: those of complete lines, then the one `eof()` adds."""
    *complete, last = stream.split(b"\n")
    during = [f for raw in complete if (f := _reference_frame(raw, limit)) is not None]
    final = _reference_frame(last, limit)
    return during, [] if final is None else [final]


def summarize(frames: list[Line | Oversize]) -> list[Summary]:
    out: list[Summary] = []
    for frame in frames:
        if isinstance(frame, Line):
            out.append(("line", frame.data))
        else:
            assert isinstance(frame, Oversize)
            rid = frame.request_id
            assert rid is None or (isinstance(rid, str | int) and not isinstance(rid, bool))
            out.append(("oversize", frame.size))
    return out


def feed_all(framer: LineFramer, chunks: list[bytes]) -> list[Line | Oversize]:
    """Feed every chunk, checking the buffering bound after each one."""
    frames: list[Line | Oversize] = []
    for chunk in chunks:
        frames.extend(framer.feed(chunk))
        assert framer.buffered <= framer.limit + 1
    return frames


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def chunked(data: bytes, size: int | None) -> list[bytes]:
    if size is None:
        return [data]
    return [data[i : i + size] for i in range(0, len(data), size)]


_pieces = st.one_of(
    st.binary(max_size=3 * SMALL),
    st.sampled_from([b"\n", b"\r\n", b"\r", b" ", b"\t", b"\r\r\n", b"\n\n"]),
    st.integers(SMALL - 3, SMALL + 3).map(lambda k: b"x" * k),
    st.integers(0, 5 * SMALL).map(lambda k: b"y" * k),
    st.text(st.sampled_from(" \t\r\n"), max_size=12).map(str.encode),
    st.text(st.sampled_from('{}[]":,\\ id0123456789abc\r\n\t'), max_size=3 * SMALL).map(str.encode),
    st.builds(
        lambda rid, pad: json.dumps({"params": {"p": "z" * pad}, "id": rid}).encode(),
        st.one_of(st.integers(), st.text(max_size=5)),
        st.integers(0, 2 * SMALL),
    ),
)


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(_pieces, max_size=25), data=st.data())
def test_fuzz_matches_reference_splitter(pieces: list[bytes], data: st.DataObject) -> None:
    """Random streams cut at random points give exactly the reference frames, never raise, and
    never hold more than limit + 1 bytes."""
    stream = b"".join(pieces)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=30))
    framer = LineFramer(limit=SMALL)
    during = feed_all(framer, split_at(stream, cuts))
    final = framer.eof()
    assert framer.buffered == 0
    assert (summarize(during), summarize(final)) == reference(stream, SMALL)


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.integers(FRAME_LIMIT - 2, FRAME_LIMIT + 2), min_size=1, max_size=4),
    crlf=st.lists(st.booleans(), min_size=4, max_size=4),
    data=st.data(),
)
def test_fuzz_default_limit_boundary(
    sizes: list[int], crlf: list[bool], data: st.DataObject
) -> None:
    """Around the real 64 KiB cap, lines are kept or discarded exactly as the reference says."""
    stream = b"".join(
        b"a" * size + (b"\r\n" if cr else b"\n") for size, cr in zip(sizes, crlf, strict=False)
    )
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=10))
    framer = LineFramer()
    during = feed_all(framer, split_at(stream, cuts))
    assert (summarize(during), summarize(framer.eof())) == reference(stream, FRAME_LIMIT)


@pytest.mark.parametrize("chunk", [None, 4093, 1])
def test_exact_limit_is_kept_and_one_more_byte_is_not(chunk: int | None) -> None:
    """65,536 bytes (plus an optional `\\r`) is a Line; 65,537 bytes is an Oversize."""
    at_limit = b"{" + b" " * (FRAME_LIMIT - 2) + b"}"
    stream = at_limit + b"\n" + at_limit + b"\r\n" + at_limit + b" \n" + b'{"x":1}\n'
    framer = LineFramer()
    frames = feed_all(framer, chunked(stream, chunk))
    assert frames == [
        Line(at_limit),
        Line(at_limit),
        Oversize(None, FRAME_LIMIT + 1),
        Line(b'{"x":1}'),
    ]
    assert framer.limit == FRAME_LIMIT == 65_536


def test_crlf_stripped_and_inner_cr_kept() -> None:
    """Only one trailing `\\r` is removed; a `\\r` inside the line stays."""
    framer = LineFramer()
    assert framer.feed(b'{"a":"x\ry"}\r\n{"b":1}\r\r\n') == [
        Line(b'{"a":"x\ry"}'),
        Line(b'{"b":1}\r'),
    ]


def test_whitespace_only_lines_are_ignored() -> None:
    """Empty, blank, CR-only and tab lines produce no frame; surrounding frames still do."""
    framer = LineFramer()
    frames = framer.feed(b'\n\n   \n\t\r\n\r\n{"a":1}\n \t \r\n  {"b":2}  \n')
    assert frames == [Line(b'{"a":1}'), Line(b'  {"b":2}  ')]
    assert framer.eof() == []


def test_final_line_without_newline_counts_at_eof() -> None:
    """A last line without `\\n` is held until EOF, then delivered (its `\\r` stripped)."""
    framer = LineFramer()
    assert framer.feed(b'{"a":1}\n{"b"') == [Line(b'{"a":1}')]
    assert framer.feed(b":2}\r") == []
    assert framer.buffered == len(b'{"b":2}\r')
    assert framer.eof() == [Line(b'{"b":2}')]
    assert framer.buffered == 0
    assert framer.eof() == []


@pytest.mark.parametrize("tail", [b"", b"   ", b"\r", b" \t\r"])
def test_eof_with_blank_tail_gives_nothing(tail: bytes) -> None:
    """A blank unterminated tail is not a frame."""
    framer = LineFramer()
    assert framer.feed(b'{"a":1}\n' + tail) == [Line(b'{"a":1}')]
    assert framer.eof() == []


def test_eof_while_discarding_reports_oversize() -> None:
    """An oversize final line without `\\n` is still answered at EOF, with its id."""
    framer = LineFramer(limit=SMALL)
    assert framer.feed(b'{"id":"last","p":"' + b"q" * (3 * SMALL)) == []
    assert framer.buffered <= SMALL + 1
    frames = framer.eof()
    assert frames == [Oversize("last", len(b'{"id":"last","p":"') + 3 * SMALL)]


def test_framer_keeps_serving_after_oversize() -> None:
    """After a discarded line the very next line is framed normally."""
    framer = LineFramer(limit=SMALL)
    frames = framer.feed(b'{"id":3,"p":"' + b"z" * 500 + b'"}\n{"id":4}\n')
    assert frames == [Oversize(3, len(b'{"id":3,"p":"') + 500 + 2), Line(b'{"id":4}')]
    assert framer.buffered == 0


def test_byte_by_byte_trickle_equals_one_read() -> None:
    """Frames do not depend on how the stream was split into reads."""
    big = b'{"b":"' + b"w" * 200 + b'","id":"k"}'
    stream = b'{"a":1}\r\n\n  \n' + big + b'\n{"c":3}'
    whole = LineFramer(limit=SMALL)
    trickle = LineFramer(limit=SMALL)
    one = whole.feed(stream) + whole.eof()
    many = feed_all(trickle, chunked(stream, 1)) + trickle.eof()
    assert one == many == [Line(b'{"a":1}'), Oversize("k", len(big)), Line(b'{"c":3}')]


# --- id recovery from oversize frames -------------------------------------------------------

BIG = "p" * (FRAME_LIMIT + 100)


def _oversize_id(line: bytes, chunk: int | None) -> Any:
    framer = LineFramer()
    frames = feed_all(framer, chunked(line + b"\n", chunk))
    assert len(frames) == 1
    frame = frames[0]
    assert isinstance(frame, Oversize)
    assert frame.size == len(line)
    return frame.request_id


_ID_CASES = [
    pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"q":"%s"}}', 7, id="int-before"),
    pytest.param(b'{"jsonrpc":"2.0","method":"m","params":{"q":"%s"},"id":7}', 7, id="int-after"),
    pytest.param(b'{"id":"req-1","params":{"q":"%s"}}', "req-1", id="str-before"),
    pytest.param(b'{"params":{"q":"%s"},"id":"req-1"}', "req-1", id="str-after"),
    pytest.param(b'{"params":{"q":"%s"}, "id" :  -42 }', -42, id="negative-spaced"),
    pytest.param(b'{"id":0,"params":{"q":"%s"}}', 0, id="zero"),
    pytest.param(b'{"id":"a\\"b\\\\c\\u00e9","params":{"q":"%s"}}', 'a"b\\c\u00e9', id="escapes"),
    pytest.param('{"id":"日本","params":{"q":"%s"}}'.encode(), "日本", id="utf8-id"),
    pytest.param(
        b'{"params":{"id":99,"q":"%s","x":{"id":98}},"id":5}', 5, id="nested-decoy-then-real"
    ),
    pytest.param(b'{"params":{"id":99,"q":"%s"}}', None, id="nested-only"),
    pytest.param(b'{"params":[{"id":99},"%s"]}', None, id="nested-in-array"),
    pytest.param(b'{"params":{"q":"\\"id\\":9 %s"}}', None, id="id-inside-string"),
    pytest.param(b'{"method":"id","params":{"q":"%s"}}', None, id="id-as-value"),
    pytest.param(b'{"idx":1,"xid":2,"params":{"q":"%s"}}', None, id="similar-keys"),
    pytest.param(b'{"id":{"id":1},"params":{"q":"%s"}}', None, id="object-id"),
    pytest.param(b'{"id":[1],"params":{"q":"%s"}}', None, id="array-id"),
    pytest.param(b'{"id":true,"params":{"q":"%s"}}', None, id="true-id"),
    pytest.param(b'{"params":{"q":"%s"},"id":false}', None, id="false-id"),
    pytest.param(b'{"id":null,"params":{"q":"%s"}}', None, id="null-id"),
    pytest.param(b'{"id":1.5,"params":{"q":"%s"}}', None, id="float-id"),
    pytest.param(b'{"id":"%s"}', None, id="id-too-long"),
    pytest.param(b'["id",1,"%s"]', None, id="not-an-object"),
    pytest.param(b"%s", None, id="not-json"),
]


@pytest.mark.parametrize("chunk", [None, 4093, 13])
@pytest.mark.parametrize(("template", "expected"), _ID_CASES)
def test_oversize_id_recovery(template: bytes, expected: Any, chunk: int | None) -> None:
    """The top-level `id` is recovered wherever it sits; nested, non-scalar or bool ids are not."""
    line = template.replace(b"%s", BIG.encode())
    assert len(line) > FRAME_LIMIT
    rid = _oversize_id(line, chunk)
    assert rid == expected
    assert type(rid) is type(expected)


_usable_ids = st.one_of(st.integers(-(10**18), 10**18), st.text(max_size=20))
_unusable_ids = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.dictionaries(st.sampled_from(["id", "a"]), st.integers(), max_size=2),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=200, deadline=None)
@given(
    rid=st.one_of(_usable_ids, _unusable_ids),
    has_id=st.booleans(),
    keys=st.permutations(["jsonrpc", "method", "params", "id"]),
    decoy=st.one_of(st.none(), st.integers(), st.text(max_size=5)),
    pad=st.integers(600, 3000),
    ascii_only=st.booleans(),
    data=st.data(),
)
def test_fuzz_oversize_id_recovery(
    rid: Any,
    has_id: bool,
    keys: list[str],
    decoy: Any,
    pad: int,
    ascii_only: bool,
    data: st.DataObject,
) -> None:
    """A JSON request over the cap yields its own usable top-level id, or None, however split."""
    params: dict[str, Any] = {"q": "v" * pad, "id": decoy, "nested": {"id": decoy}}
    values = {"jsonrpc": "2.0", "method": "tools/call", "params": params, "id": rid}
    obj = {k: values[k] for k in keys if has_id or k != "id"}
    line = json.dumps(obj, ensure_ascii=ascii_only).encode()
    usable = isinstance(rid, str | int) and not isinstance(rid, bool)
    expected = rid if has_id and usable else None
    cuts = data.draw(st.lists(st.integers(0, len(line)), max_size=20))
    framer = LineFramer(limit=512)
    frames = feed_all(framer, split_at(line + b"\n", cuts))
    assert frames == [Oversize(expected, len(line))]


def test_ten_megabyte_line_is_discarded_in_constant_memory() -> None:
    """A 10 MB line read in 64 KiB pieces never grows the buffer or the heap; its id survives."""
    framer = LineFramer()
    head = b'{"jsonrpc":"2.0","method":"tools/call","params":{"q":"'
    tail = b'"},"id":"big-1"}\n'
    piece = b"a" * 65_536
    rounds = 160  # 10 MiB
    tracemalloc.start()
    try:
        assert framer.feed(head) == []
        baseline = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for _ in range(rounds):
            assert framer.feed(piece) == []
            assert framer.buffered <= FRAME_LIMIT + 1
        frames = framer.feed(tail + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = len(head) + rounds * len(piece) + len(tail) - 1
    assert frames == [Oversize("big-1", size), Line(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')]
    assert peak - baseline < 1_000_000
    assert framer.buffered == 0


def test_ten_megabyte_line_in_one_read() -> None:
    """One 10 MB read is discarded too: afterwards at most the cap is held."""
    framer = LineFramer()
    line = b'{"id":11,"params":"' + b"b" * 10_000_000 + b'"}'
    assert framer.feed(line) == []
    assert framer.buffered <= FRAME_LIMIT + 1
    assert framer.feed(b"\n") == [Oversize(11, len(line))]
