"""Hostile input: seeded random bytes and near-miss JSON, fed however the OS splits them.

Whatever arrives, the reader must never raise, must answer each malformed line exactly once, and
must keep serving the well-formed requests around it. The random inputs are seeded, so a
failure reproduces exactly (the seed is in the test id).

Spec 2026-07-28: basic/transports/stdio, basic/index#messages.
"""

from __future__ import annotations

import json
import random

import pytest

from mcp_ref.core.wire import BadMessage, WireReader

from .wire import ServerProcess, tool_call

NEAR_MISSES = [
    b"{",
    b"}",
    b'{"jsonrpc":"2.0"',
    b'{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}',
    b'{"jsonrpc":"1.0","id":1,"method":"x"}',
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"x"}',
    b'{"jsonrpc":"2.0","id":1.5,"method":"x"}',
    b'{"jsonrpc":"2.0","id":true,"method":"x"}',
    b'{"jsonrpc":"2.0","id":1,"method":null}',
    b"[]",
    b"[" * 5000 + b"]" * 5000,
    b'"just a string"',
    b"NaN",
    b'{"a":Infinity}',
    b"\xff\xfe\x00garbage",
    b"\xef\xbb\xbf{}",
    b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":"\xc3"}}',
    b"\x00\x00\x00",
]


def random_line(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.4:
        return rng.choice(NEAR_MISSES)
    if kind < 0.7:
        # Random bytes, newlines removed (a newline would just make two lines).
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).replace(b"\n", b" ")
    # A valid request with random damage: a byte flipped, or truncated.
    line = json.dumps({"jsonrpc": "2.0", "id": rng.randrange(1000), "method": "tools/list", "params": {}}).encode()
    position = rng.randrange(len(line))
    if rng.random() < 0.5:
        return line[:position] or b"{"
    return line[:position] + bytes([rng.randrange(256)]).replace(b"\n", b"?") + line[position + 1 :]


def split_randomly(rng: random.Random, data: bytes) -> list[bytes]:
    chunks, start = [], 0
    while start < len(data):
        size = rng.choice([1, 2, 3, 7, 64, 4096])
        chunks.append(data[start : start + size])
        start += size
    return chunks


@pytest.mark.req("BASE-PARSE-ERROR-32700", "BASE-INVALID-REQUEST-32600")
@pytest.mark.parametrize("seed", range(40))
def test_random_garbage_never_raises_and_every_nonblank_line_yields_one_event(seed: int) -> None:
    rng = random.Random(seed)
    lines = [random_line(rng) for _ in range(60)]
    reader = WireReader(max_line_bytes=64 * 1024)
    events = []
    for chunk in split_randomly(rng, b"\n".join(lines) + b"\n"):
        reader.feed(chunk)
        events.extend(reader.events())
    reader.feed_eof()
    events.extend(reader.events())
    nonblank = [line for line in lines if line.strip(b" \t\r")]
    assert len(events) == len(nonblank)
    assert all(event.error.code in (-32700, -32600) for event in events if isinstance(event, BadMessage))


@pytest.mark.req("BASE-PARSE-ERROR-32700")
@pytest.mark.parametrize("seed", range(10))
def test_the_same_bytes_give_the_same_events_however_they_are_split(seed: int) -> None:
    rng = random.Random(1000 + seed)
    data = b"\n".join(random_line(rng) for _ in range(40)) + b"\n"

    def events_of(chunks: list[bytes]) -> list[str]:
        reader = WireReader(max_line_bytes=64 * 1024)
        out = []
        for chunk in chunks:
            reader.feed(chunk)
            out.extend(repr(event) for event in reader.events())
        return out

    assert events_of([data]) == events_of(split_randomly(rng, data))


@pytest.mark.req("BASE-PARSE-ERROR-32700", "BASE-INVALID-REQUEST-32600", "BASE-ERROR-ID-NULL")
def test_a_server_fed_garbage_answers_each_bad_line_once_and_keeps_serving() -> None:
    rng = random.Random(7)
    garbage = [random_line(rng) for _ in range(200)]
    expected_bad = 0
    for line in garbage:
        reader = WireReader()
        reader.feed(line + b"\n")
        expected_bad += sum(isinstance(event, BadMessage) for event in reader.events())
    assert expected_bad > 100  # the corpus really is mostly garbage
    with ServerProcess() as server:
        # Garbage lines may carry (damaged) ids; they are raw bytes the harness does not track.
        for line in garbage:
            server.send_raw(line + b"\n")
        server.send(tool_call("after-garbage", "echo", {"text": "still here"}))
        answer = server.response("after-garbage")
        assert answer["result"]["content"] == [{"type": "text", "text": "still here"}]
        errors = [m for m in server.pending if "error" in m]
        server.shutdown()
    # Every bad line got its error (lines that happen to be valid requests get answers of their own).
    assert len(errors) >= expected_bad
    assert all(m["error"]["code"] in (-32700, -32600, -32601, -32602) for m in errors)


@pytest.mark.req("BASE-PARSE-ERROR-32700")
def test_deeply_nested_arguments_that_do_parse_still_get_an_answer() -> None:
    depth = 900  # parses with the default recursion limit; the result is just as deep
    nested: object = "bottom"
    for _ in range(depth):
        nested = [nested]
    with ServerProcess() as server:
        server.send(tool_call(1, "echo", {"text": "x", "extra": nested}))
        answer = server.response(1)
        server.shutdown()
    assert "result" in answer or answer["error"]["code"] in (-32602, -32603)


def test_random_lines_are_built_from_the_corpus() -> None:
    # Keeps the generator honest: it produces every kind of line the tests above rely on.
    rng = random.Random(3)
    kinds = {type(event).__name__ for _ in range(300) for event in _events_of(random_line(rng))}
    assert {"BadMessage", "Request"} <= kinds


def _events_of(line: bytes) -> list:
    reader = WireReader()
    reader.feed(line + b"\n")
    return list(reader.events())
