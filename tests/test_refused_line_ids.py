"""A line refused for its size is answered with its request's id (issue 17).

Spec: basic/index#responses (an error answers its request's id); the refusals are project rules
(STDIO-MAX-LINE-SIZE, STDIO-IN-FLIGHT-BYTES), and STDIO-REFUSAL-KEEPS-ID says what they echo.
``mcp_ref.layers.idscan`` finds the id without a parse; its answer must be exactly the id the parser
would have read, which these tests check against ``wire.parse_line`` itself on generated lines
(any member order, duplicates, escaped names, whitespace, nesting deeper than the scan's
expression goes), fed whole and in random chunks. Then the refusals through real stdio.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_ref.layers.idscan import MAX_ID_BYTES, MAX_STEPS, NESTING, IdScanner, request_id_of
from mcp_ref.core.wire import BadMessage, Request, is_valid_id, parse_line
from tests.wire import ServerProcess, encode_line, tool_call

MiB = 1024 * 1024
REQ = pytest.mark.req("STDIO-REFUSAL-KEEPS-ID")


def parsed_id(line: bytes) -> Any:
    """The id the server answers a line with when it parses it (None: null)."""
    event = parse_line(line)
    return event.id if isinstance(event, (Request, BadMessage)) else None


def scanned_in_chunks(line: bytes, cuts: list[int]) -> Any:
    scanner = IdScanner()
    view, start = memoryview(line), 0
    for cut in sorted({min(max(c, 0), len(line)) for c in cuts}) + [len(line)]:
        scanner.feed(view, start, cut)
        start = cut
    return scanner.result()


# --- generated lines -----------------------------------------------------------------------------------

SCALARS = st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats(allow_nan=False, allow_infinity=False) | st.text(
    st.characters(exclude_categories=("Cs",)), max_size=8
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=12)
KEYS = st.sampled_from(["id", "method", "jsonrpc", "params", "result", "error", "ids", "i", ""]) | st.text(max_size=6)
IDS = st.integers(-(10**20), 10**20) | st.text(st.characters(exclude_categories=("Cs",)), max_size=12) | SCALARS
SPACE = st.sampled_from(["", "", " ", "\t", "\r", " \t "])


def render(value: Any, draw: Any) -> str:
    """``value`` as JSON text, its formatting drawn: whitespace, escaped spellings."""
    if isinstance(value, str):
        if draw(st.integers(0, 4)) == 0:  # every character as a \u escape
            return '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else json.dumps(c)[1:-1] for c in value) + '"'
        return json.dumps(value, ensure_ascii=draw(st.booleans()))
    if isinstance(value, list):
        return "[" + ",".join(draw(SPACE) + render(item, draw) + draw(SPACE) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + members(value.items(), draw) + "}"
    return json.dumps(value)


def members(pairs: Any, draw: Any) -> str:
    return ",".join(draw(SPACE) + render(k, draw) + draw(SPACE) + ":" + draw(SPACE) + render(v, draw) + draw(SPACE) for k, v in pairs)


@st.composite
def lines(draw: Any) -> bytes:
    """A top-level object as a list of members (so duplicates are possible), with or without an id."""
    pairs = draw(st.lists(st.tuples(KEYS, VALUES), max_size=6))
    if draw(st.booleans()):
        pairs.insert(draw(st.integers(0, len(pairs))), ("id", draw(IDS)))
    if draw(st.booleans()):  # a value nested deeper than the scan's expression goes
        depth = draw(st.integers(NESTING - 2, NESTING + 12))
        pairs.insert(draw(st.integers(0, len(pairs))), ("params", json.loads("[" * depth + "]" * depth)))
    return (draw(SPACE) + "{" + members(pairs, draw) + "}" + draw(SPACE)).encode()


@REQ
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=lines(), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_the_scan_finds_exactly_the_id_the_parse_reads_whole_or_in_chunks(line: bytes, cuts: list[int]) -> None:
    expected = parsed_id(line)
    assert request_id_of(line) == expected and type(request_id_of(line)) is type(expected)
    assert scanned_in_chunks(line, cuts) == expected


@REQ
@settings(max_examples=500, deadline=None)
@given(line=lines(), keep=st.integers(0, 10_000))
def test_a_line_that_ends_inside_its_object_has_no_id(line: bytes, keep: int) -> None:
    end = line.rstrip().rfind(b"}")
    assert request_id_of(line[: min(keep, end)]) is None


@REQ
@settings(max_examples=1000, deadline=None)
@given(noise=st.binary(max_size=200), cuts=st.lists(st.integers(0, 200), max_size=4))
def test_any_bytes_at_all_give_a_valid_id_or_none_and_never_an_exception(noise: bytes, cuts: list[int]) -> None:
    for line in (noise, b'{"id":' + noise, b'{"method":"m","id":"' + noise):
        found = scanned_in_chunks(line, cuts)
        assert found is None or is_valid_id(found)


@REQ
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":"r4","method":"tools/list","params":{"pad":[[],[],[]]}}', "r4"),
        (b'{"method":"tools/list","params":{"pad":[[],["]\\"["]]},"jsonrpc":"2.0","id":5}', 5),  # the TypeScript SDK's order
        (b'{"\\u0069d":7,"method":"m"}', 7),
        (b'{"id":1,"method":"m","id":"last"}', "last"),
        (b'{"id":1,"method":"m","id":null}', None),
        (b'{"id":1.0,"method":"m"}', None),
        (b'{"id":1e3,"method":"m"}', None),
        (b'{"id":true,"method":"m"}', None),
        (b'{"id":{"x":1},"method":"m"}', None),
        (b'{"id":"\\ud800","method":"m"}', "\ud800"),
        (b'{"id":"a\\"b\\\\","method":"m"}', 'a"b\\'),
        (b'{"id":-0,"method":"m"}', 0),
        (b'{"jsonrpc":"2.0","id":7,"result":{}}', None),  # the client's response: not answered with its id
        (b'{"id":7,"result":{}}', 7),  # without "jsonrpc" it is an invalid request, answered with its id
        (b'{"id":7,"result":{},"error":{}}', 7),
        (b'{"id":7}', 7),
        (b'[{"id":7}]', None),
        (b'{"id":7,"method":"m"} {}', None),
        (b'{"id":7,"method":"m"', None),
        (b'{"id":"\\x","method":"m"}', None),
    ],
)
def test_what_the_scan_reads_in_particular_lines(line: bytes, expected: Any) -> None:
    assert request_id_of(line) == expected
    if not isinstance(parse_line(line), BadMessage) or parse_line(line).error.code != -32700:
        assert parsed_id(line) == expected  # where the line is JSON, as the parse reads it
    for first in range(len(line) + 1):  # fed in pieces cut anywhere, even one byte long
        assert scanned_in_chunks(line, [first]) == expected
        assert scanned_in_chunks(line, [first, first + 1]) == expected


@REQ
def test_an_id_longer_than_kept_is_unknown_and_one_just_within_is_echoed() -> None:
    within = "i" * (MAX_ID_BYTES - 2)
    assert request_id_of(b'{"id":' + json.dumps(within).encode() + b',"method":"m"}') == within
    assert request_id_of(b'{"id":"' + b"i" * (MAX_ID_BYTES + 1) + b'","method":"m"}') is None
    assert request_id_of(b'{"id":' + b"9" * (MAX_ID_BYTES + 1) + b',"method":"m"}') is None


@REQ
def test_nesting_too_deep_for_the_steps_allowed_gives_up_with_no_id() -> None:
    depth = 2 * MAX_STEPS
    assert request_id_of(b'{"id":1,"method":"m","params":' + b"[" * depth + b"]" * depth + b"}") is None
    depth = NESTING + 200  # deeper than the expression, well within the steps
    assert request_id_of(b'{"id":1,"method":"m","params":' + b"[" * depth + b"]" * depth + b"}") == 1


def chunks_of(line: bytes, size: int) -> Iterator[memoryview]:
    view = memoryview(line)
    for start in range(0, len(line), size):
        yield view[start : start + size]


@REQ
@pytest.mark.parametrize(
    "pad",
    [b"[" + b"[]," * (6 * MiB) + b"[]]", b'"' + b"QUJD" * (4 * MiB) + b'"', b"[" + b'{"n":"a.txt","s":[1,{"t":"\\"]"}]},' * 300_000 + b"{}]"],
    ids=["nested-empty-arrays", "base64", "objects"],
)
def test_scanning_16_mib_in_chunks_keeps_no_more_than_a_few_kilobytes(pad: bytes) -> None:
    line = b'{"method":"tools/list","params":{"pad":' + pad + b'},"jsonrpc":"2.0","id":"r4"}'
    scanner = IdScanner()
    scanner.feed(b"{}")  # the expressions are compiled once, before memory is measured
    scanner = IdScanner()
    tracemalloc.start()
    try:
        for chunk in chunks_of(line, 256 * 1024):
            scanner.feed(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert scanner.result() == "r4"
    assert peak < 64 * 1024, f"peak {peak} bytes"


# --- through real stdio ----------------------------------------------------------------------------------


@pytest.fixture(params=["poll", "threads"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    process = ServerProcess(module="tests.servers.hardening_server", env={"MCP_REF_STDIO": request.param, "BASIC_SERVER_MAX_LINE_BYTES": None})
    yield process
    process.close()


def nested_arrays_line(request_id: str, *, id_last: bool) -> bytes:
    """The issue's line: 16 MiB of ``[],`` under "params": within the line limit, ~700 MiB once parsed."""
    pad = b"[" + b"[]," * ((16 * MiB - 200) // 3) + b"[]]"
    if id_last:
        return b'{"method":"tools/list","params":{"pad":' + pad + b'},"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b"}\n"
    return b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"method":"tools/list","params":{"pad":' + pad + b"}}\n"


@pytest.mark.req("STDIO-REFUSAL-KEEPS-ID", "STDIO-IN-FLIGHT-BYTES")
@pytest.mark.parametrize("id_last", [False, True], ids=["id-first", "id-last"])
def test_a_16_mib_line_refused_for_what_it_would_take_parsed_is_answered_with_its_id(server: ServerProcess, id_last: bool) -> None:
    line = nested_arrays_line("r4", id_last=id_last)
    assert len(line) <= 16 * MiB
    server.note_sent({"jsonrpc": "2.0", "id": "r4", "method": "tools/list"})
    server.send_raw(line, timeout=60)
    error = server.response("r4", timeout=60)["error"]
    assert error["code"] == -32600 and "once parsed" in error["message"]
    assert server.request(tool_call(2, "echo", {"text": "still serving"}))["result"]["content"][0]["text"] == "still serving"


@pytest.mark.req("STDIO-REFUSAL-KEEPS-ID", "STDIO-MAX-LINE-SIZE")
@pytest.mark.parametrize("id_last", [False, True], ids=["id-first", "id-last"])
def test_a_line_over_the_line_limit_is_answered_with_its_id_when_it_ends(id_last: bool) -> None:
    with ServerProcess(module="tests.servers.hardening_server", env={"BASIC_SERVER_MAX_LINE_BYTES": "100000"}) as server:
        message = tool_call("too-long", "echo", {"text": "z" * 300_000})  # 3 times the limit, through a 64 KiB pipe: many reads
        if id_last:
            message = {key: message[key] for key in ("method", "params", "jsonrpc", "id")}
        after = tool_call("after", "echo", {"text": "after"})
        server.note_sent(message)
        server.note_sent(after)
        server.send_raw(encode_line(message) + encode_line(after))
        error = server.response("too-long")["error"]
        assert error["code"] == -32600 and "maximum line size of 100000 bytes" in error["message"]
        assert server.response("after")["result"]["content"][0]["text"] == "after"
