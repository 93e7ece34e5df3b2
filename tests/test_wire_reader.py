"""Sans-I/O tests of the framing core (mcp_ref/core/wire.py): plain byte strings in, events out.

Spec: basic/transports/stdio (framing) and basic/index#messages (JSON-RPC as MCP restricts it).
No process and no event loop: every test feeds bytes to a ``WireReader`` (or calls ``parse_line``,
``classify`` or ``encode_message``) and looks at what comes out.
"""

from __future__ import annotations

import json
import random
import tracemalloc
from typing import Any

import pytest

from mcp_ref.core import wire
from mcp_ref.core.content import blob_resource, embedded_resource, image, text, text_resource
from mcp_ref.core.errors import INVALID_REQUEST, PARSE_ERROR, InvalidRequest
from mcp_ref.core.wire import (
    BadMessage,
    ClientResponse,
    MalformedNotification,
    Notification,
    Request,
    WireReader,
    classify,
    encode_message,
    encode_message_parts,
    error_response,
    parse_line,
)

REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
NOTIFICATION = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'


def read_all(*chunks: bytes, eof: bool = False, max_line_bytes: int | None = None) -> list:
    """Feed each chunk (collecting events after each, as the transport does), then EOF if asked."""
    reader = WireReader() if max_line_bytes is None else WireReader(max_line_bytes)
    events = []
    for chunk in chunks:
        reader.feed(chunk)
        events.extend(reader.events())
    if eof:
        reader.feed_eof()
        events.extend(reader.events())
    return events


def only(events: list):
    assert len(events) == 1, events
    return events[0]


def assert_bad(event, code: int, request_id=None) -> None:
    assert isinstance(event, BadMessage), event
    assert event.error.code == code, event.error.message
    assert event.id == request_id


# --- framing ------------------------------------------------------------------------------------


@pytest.mark.req("STDIO-NEWLINE-DELIMITED")
def test_each_newline_terminated_line_is_one_message() -> None:
    events = read_all(REQUEST + b"\n" + NOTIFICATION + b"\n")
    assert [type(e) for e in events] == [Request, Notification]
    assert events[0] == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-NEWLINE-DELIMITED")
def test_a_line_split_across_many_feeds_is_reassembled() -> None:
    data = REQUEST + b"\n"
    events = read_all(*(data[i : i + 1] for i in range(len(data))))
    assert only(events) == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-NEWLINE-DELIMITED")
def test_a_multibyte_character_split_between_feeds_decodes() -> None:
    line = '{"jsonrpc":"2.0","id":"é","method":"x"}\n'.encode()
    cut = line.index(b"\xc3") + 1  # between the two bytes of "é"
    assert only(read_all(line[:cut], line[cut:])) == Request("é", "x", {})


def test_nothing_is_emitted_before_the_newline_arrives() -> None:
    reader = WireReader()
    reader.feed(REQUEST)
    assert list(reader.events()) == []
    reader.feed(b"\n")
    assert only(list(reader.events())) == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-NEWLINE-DELIMITED")
@pytest.mark.parametrize(
    "separator",
    ["\r", "\u2028", "\u2029", "\u0085", "\x0b", "\x0c"],
    ids=["CR", "LINE-SEPARATOR", "PARAGRAPH-SEPARATOR", "NEL", "VT", "FF"],
)
def test_only_newline_splits_lines_not_other_line_breaks(separator: str) -> None:
    # Python's str.splitlines() would split at all of these; the framing splits at \n only.
    # Inside a JSON string, U+2028/U+2029/U+0085 are legal raw; \r, VT and FF are not (they must be
    # escaped), so there they make the *one* line a parse error rather than two lines.
    line = '{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"a' + separator + 'b"}}\n'
    event = only(read_all(line.encode()))
    if separator in "\r\x0b\x0c":
        assert_bad(event, PARSE_ERROR)
    else:
        assert event == Request(1, "echo", {"text": f"a{separator}b"})


def test_a_carriage_return_between_tokens_is_whitespace_not_a_line_break() -> None:
    event = only(read_all(b'{"jsonrpc":"2.0",\r"id":1,\r"method":"x"}\n'))
    assert event == Request(1, "x", {})


@pytest.mark.req("STDIO-LENIENT-FRAMING")
def test_crlf_line_endings_are_tolerated() -> None:
    events = read_all(REQUEST + b"\r\n" + NOTIFICATION + b"\r\n")
    assert [type(e) for e in events] == [Request, Notification]


@pytest.mark.req("STDIO-LENIENT-FRAMING")
def test_crlf_split_between_feeds_is_tolerated() -> None:
    assert only(read_all(REQUEST + b"\r", b"\n")) == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-LENIENT-FRAMING")
def test_blank_and_whitespace_only_lines_are_ignored() -> None:
    events = read_all(b"\n\n   \n\t\r\n\r\n" + REQUEST + b"\n \n")
    assert only(events) == Request(1, "tools/list", {})


def test_surrounding_whitespace_on_a_line_is_allowed() -> None:
    assert only(read_all(b"  \t" + REQUEST + b"  \n")) == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-LENIENT-FRAMING")
def test_a_final_line_without_newline_is_delivered_at_eof() -> None:
    reader = WireReader()
    reader.feed(REQUEST)
    assert list(reader.events()) == []
    reader.feed_eof()
    assert only(list(reader.events())) == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-LENIENT-FRAMING")
def test_a_final_line_with_a_lone_carriage_return_is_delivered_at_eof() -> None:
    assert only(read_all(REQUEST + b"\r", eof=True)) == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-LENIENT-FRAMING")
def test_trailing_whitespace_at_eof_produces_no_event() -> None:
    assert read_all(REQUEST + b"\n  \r", eof=True) == [Request(1, "tools/list", {})]


@pytest.mark.req("STDIO-LENIENT-FRAMING")
def test_eof_with_nothing_buffered_produces_no_event() -> None:
    assert read_all(eof=True) == []


def test_feeding_after_eof_is_a_programming_error() -> None:
    reader = WireReader()
    reader.feed_eof()
    with pytest.raises(RuntimeError):
        reader.feed(b"{}\n")


def test_at_eof_reports_whether_eof_was_fed() -> None:
    reader = WireReader()
    assert not reader.at_eof
    reader.feed_eof()
    assert reader.at_eof


# --- decoding -----------------------------------------------------------------------------------


@pytest.mark.req("BASE-PARSE-ERROR-32700", "BASE-ERROR-ID-NULL", "STDIO-UTF8")
def test_invalid_utf8_is_a_parse_error_with_null_id() -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"text":"\xff\xfe"}}'
    assert_bad(parse_line(line), PARSE_ERROR, None)


@pytest.mark.req("BASE-PARSE-ERROR-32700", "STDIO-UTF8")
def test_an_overlong_utf8_encoding_is_a_parse_error() -> None:
    # b"\xc0\xaf" is an overlong "/": lenient decoders accept it, strict UTF-8 must not.
    assert_bad(parse_line(b'{"jsonrpc":"2.0","id":1,"method":"\xc0\xaf"}'), PARSE_ERROR, None)


@pytest.mark.req("BASE-PARSE-ERROR-32700", "STDIO-UTF8")
def test_encoded_surrogates_are_a_parse_error() -> None:
    # CESU-style bytes for U+D800 are not UTF-8.
    assert_bad(parse_line(b'{"jsonrpc":"2.0","id":1,"method":"\xed\xa0\x80"}'), PARSE_ERROR, None)


@pytest.mark.req("BASE-PARSE-ERROR-32700", "STDIO-UTF8")
def test_a_byte_order_mark_is_a_parse_error() -> None:
    assert_bad(parse_line(b"\xef\xbb\xbf" + REQUEST), PARSE_ERROR, None)


@pytest.mark.req("BASE-PARSE-ERROR-32700", "STDIO-UTF8")
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_a_parse_error(constant: str) -> None:
    line = f'{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"n":{constant}}}}}'.encode()
    assert_bad(parse_line(line), PARSE_ERROR, None)


@pytest.mark.req("BASE-PARSE-ERROR-32700")
@pytest.mark.parametrize(
    "line",
    [b"not json", b'{"jsonrpc":"2.0","id":1,', b"{'jsonrpc':'2.0'}", b'{"a":1} {"b":2}', b"\x00"],
    ids=["text", "truncated", "single-quotes", "two-values", "nul"],
)
def test_text_that_is_not_one_json_value_is_a_parse_error(line: bytes) -> None:
    assert_bad(parse_line(line), PARSE_ERROR, None)


@pytest.mark.req("BASE-PARSE-ERROR-32700")
def test_pathologically_deep_nesting_is_a_parse_error_not_a_crash() -> None:
    depth = 200_000
    line = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":' + b"[" * depth + b"]" * depth + b"}}"
    assert_bad(parse_line(line), PARSE_ERROR, None)


def test_moderately_nested_params_parse_normally() -> None:
    depth = 200
    line = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":' + b"[" * depth + b"]" * depth + b"}}"
    event = parse_line(line)
    assert isinstance(event, Request) and event.id == 1


def test_large_integer_ids_keep_their_exact_value() -> None:
    big = 2**70
    assert parse_line(f'{{"jsonrpc":"2.0","id":{big},"method":"x"}}'.encode()) == Request(big, "x", {})


def test_escaped_lone_surrogates_in_input_are_accepted() -> None:
    # "\ud800" as a JSON escape is valid JSON; only raw surrogate *bytes* are invalid UTF-8.
    event = parse_line(b'{"jsonrpc":"2.0","id":"\\ud800","method":"x"}')
    assert event == Request("\ud800", "x", {})


# --- classification -----------------------------------------------------------------------------


@pytest.mark.req("BASE-REQUEST-ID-STRING-OR-INTEGER")
@pytest.mark.parametrize("request_id", [0, -5, 7, "abc", "", "1"])
def test_requests_with_string_or_integer_ids_are_requests(request_id) -> None:
    event = classify({"jsonrpc": "2.0", "id": request_id, "method": "m", "params": {"k": 1}})
    assert event == Request(request_id, "m", {"k": 1})
    assert type(event.id) is type(request_id)


def test_a_request_without_params_gets_empty_params() -> None:
    assert classify({"jsonrpc": "2.0", "id": 1, "method": "m"}) == Request(1, "m", {})


def test_a_message_without_id_is_a_notification() -> None:
    assert classify({"jsonrpc": "2.0", "method": "notifications/x"}) == Notification("notifications/x", {})
    assert classify({"jsonrpc": "2.0", "method": "n", "params": {"a": 1}}) == Notification("n", {"a": 1})


@pytest.mark.req("BASE-NO-BATCH")
@pytest.mark.parametrize("line", [b"[" + REQUEST + b"," + NOTIFICATION + b"]", b"[]", b"[" + REQUEST + b"]"], ids=["two", "empty", "one"])
def test_a_batch_array_is_an_invalid_request_with_null_id(line: bytes) -> None:
    assert_bad(parse_line(line), INVALID_REQUEST, None)


@pytest.mark.req("BASE-INVALID-REQUEST-32600", "BASE-ERROR-ID-NULL")
@pytest.mark.parametrize("line", [b"1", b'"text"', b"null", b"true", b"3.5"])
def test_a_json_scalar_is_an_invalid_request_with_null_id(line: bytes) -> None:
    assert_bad(parse_line(line), INVALID_REQUEST, None)


@pytest.mark.req("BASE-INVALID-REQUEST-32600", "BASE-ERROR-ECHOES-ID")
@pytest.mark.parametrize("version", ["1.0", 2.0, None, "2.0 "], ids=["1.0", "number", "null", "padded"])
def test_a_wrong_jsonrpc_version_is_an_invalid_request_echoing_the_id(version) -> None:
    assert_bad(classify({"jsonrpc": version, "id": 9, "method": "m"}), INVALID_REQUEST, 9)


@pytest.mark.req("BASE-INVALID-REQUEST-32600", "BASE-ERROR-ECHOES-ID")
def test_a_missing_jsonrpc_member_is_an_invalid_request_echoing_the_id() -> None:
    assert_bad(classify({"id": "a", "method": "m"}), INVALID_REQUEST, "a")


@pytest.mark.req("BASE-REQUEST-ID-NOT-NULL", "BASE-ERROR-ID-NULL")
def test_a_null_id_is_an_invalid_request_answered_with_null_id() -> None:
    assert_bad(classify({"jsonrpc": "2.0", "id": None, "method": "m"}), INVALID_REQUEST, None)


@pytest.mark.req("BASE-REQUEST-ID-STRING-OR-INTEGER", "BASE-ERROR-ID-NULL")
@pytest.mark.parametrize("bad_id", [1.5, 1.0, True, False, {"a": 1}, [1]], ids=["fraction", "float", "true", "false", "object", "array"])
def test_an_id_that_is_not_a_string_or_integer_is_answered_with_null_id(bad_id) -> None:
    assert_bad(classify({"jsonrpc": "2.0", "id": bad_id, "method": "m"}), INVALID_REQUEST, None)


@pytest.mark.req("BASE-INVALID-REQUEST-32600", "BASE-ERROR-ECHOES-ID")
@pytest.mark.parametrize("method", [1, None, ["m"], {"m": 1}])
def test_a_non_string_method_is_an_invalid_request_echoing_the_id(method) -> None:
    assert_bad(classify({"jsonrpc": "2.0", "id": 4, "method": method}), INVALID_REQUEST, 4)


@pytest.mark.req("BASE-PARAMS-OBJECT", "BASE-ERROR-ECHOES-ID")
@pytest.mark.parametrize("params", [[1, 2], None, "p", 3], ids=["array", "null", "string", "number"])
def test_params_that_are_not_an_object_are_an_invalid_request_echoing_the_id(params) -> None:
    assert_bad(classify({"jsonrpc": "2.0", "id": "r", "method": "m", "params": params}), INVALID_REQUEST, "r")


@pytest.mark.req("BASE-PARAMS-OBJECT", "BASE-NOTIFICATION-NO-RESPONSE", "CANCEL-INVALID-IGNORED")
@pytest.mark.parametrize("params", [[1], "oops", None, 3, True], ids=["array", "string", "null", "number", "bool"])
@pytest.mark.parametrize("method", ["notifications/cancelled", "notifications/initialized", "notifications/roots/list_changed", "n"])
def test_a_notification_with_non_object_params_is_malformed_and_not_answerable(method: str, params: Any) -> None:
    assert classify({"jsonrpc": "2.0", "method": method, "params": params}) == MalformedNotification(method, '"params" must be an object')


@pytest.mark.req("BASE-NOTIFICATION-NO-RESPONSE")
def test_a_notification_with_a_bad_jsonrpc_member_is_malformed_but_a_non_string_method_is_an_invalid_request() -> None:
    assert classify({"method": "notifications/cancelled", "params": {"requestId": 1}}) == MalformedNotification(
        "notifications/cancelled", '"jsonrpc" must be "2.0"'
    )
    assert classify({"jsonrpc": "1.0", "method": "n"}) == MalformedNotification("n", '"jsonrpc" must be "2.0"')
    assert_bad(classify({"jsonrpc": "2.0", "method": 1, "params": "bar"}), INVALID_REQUEST, None)  # JSON-RPC 2.0's own example
    assert_bad(classify({"jsonrpc": "2.0", "id": 4, "method": "m", "params": "p"}), INVALID_REQUEST, 4)  # a request is answered


@pytest.mark.req("STDIO-CLIENT-NO-RESPONSES")
@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 3, "result": {}},
        {"jsonrpc": "2.0", "id": "x", "error": {"code": -32601, "message": "nope"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"}},
    ],
    ids=["result", "error", "error-null-id"],
)
def test_a_response_from_the_client_is_classified_as_a_client_response(message) -> None:
    event = classify(message)
    assert isinstance(event, ClientResponse)
    assert event.id == message["id"] and event.message == message


@pytest.mark.req("BASE-INVALID-REQUEST-32600")
@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 3, "result": {}, "error": {"code": 1, "message": "m"}},
        {"jsonrpc": "2.0", "id": 3},
        {"jsonrpc": "2.0", "result": {}},
        {"jsonrpc": "2.0"},
        {},
    ],
    ids=["result-and-error", "id-only", "result-without-id", "bare", "empty"],
)
def test_an_object_that_is_neither_request_nor_response_is_an_invalid_request(message) -> None:
    event = classify(message)
    assert_bad(event, INVALID_REQUEST, message.get("id"))


# --- the line size limit ----------------------------------------------------------------------------


@pytest.mark.req("STDIO-MAX-LINE-SIZE")
def test_an_oversized_line_is_reported_once_with_its_id_and_the_next_line_is_parsed() -> None:
    big = b'{"jsonrpc":"2.0","id":"big","method":"x","params":{"pad":"' + b"a" * 500 + b'"}}'
    events = read_all(big + b"\n" + REQUEST + b"\n", max_line_bytes=200)
    assert len(events) == 2, events
    assert_bad(events[0], INVALID_REQUEST, "big")
    assert "200" in events[0].error.message
    assert events[1] == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-MAX-LINE-SIZE", "STDIO-REFUSAL-KEEPS-ID")
@pytest.mark.parametrize("split", [False, True], ids=["in-one-feed", "streamed"])
def test_an_oversized_line_is_answered_when_it_ends_with_the_id_found_anywhere_in_its_top_level(split: bool) -> None:
    # The TypeScript SDK writes {method, params, jsonrpc, id}: the id after the large params.
    big = b'{"method":"tools/call","params":{"arguments":{"t":["' + b"]" * 700 + b'"]}},"jsonrpc":"2.0","id":42}'
    reader = WireReader(200)
    chunks = [big[i : i + 64] for i in range(0, len(big), 64)] if split else [big]
    for chunk in chunks:
        reader.feed(chunk)
        assert list(reader.events()) == []  # not answered before the line ends
    reader.feed(b"\r\n" + REQUEST + b"\n")
    refused, after = reader.events()
    assert_bad(refused, INVALID_REQUEST, 42)
    assert after == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-MAX-LINE-SIZE", "STDIO-REFUSAL-KEEPS-ID")
def test_an_oversized_line_more_than_four_times_the_limit_is_not_scanned_past_that_and_gets_a_null_id() -> None:
    big = b'{"jsonrpc":"2.0","id":9,"method":"x","params":{"pad":"' + b"a" * 500 + b'"}}'
    assert_bad(only(read_all(big + b"\n", max_line_bytes=100)), INVALID_REQUEST, None)
    assert_bad(only(read_all(big[:150], big[150:] + b"\n", max_line_bytes=100)), INVALID_REQUEST, None)
    assert_bad(only(read_all(big + b"\n", max_line_bytes=len(big) // 4 + 1)), INVALID_REQUEST, 9)


@pytest.mark.req("STDIO-MAX-LINE-SIZE")
def test_an_oversized_line_split_across_many_feeds_is_reported_once_and_the_next_line_is_parsed() -> None:
    chunks = [b"x" * 37 for _ in range(200)] + [b"tail\n" + REQUEST[:10], REQUEST[10:] + b"\n"]
    events = read_all(*chunks, max_line_bytes=100)
    assert len(events) == 2, events
    assert_bad(events[0], INVALID_REQUEST, None)
    assert events[1] == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-MAX-LINE-SIZE")
def test_memory_stays_bounded_while_an_endless_line_is_discarded() -> None:
    limit = 1 << 20
    chunk = b"a" * (64 * 1024)
    reader = WireReader(limit)
    reported = []
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        for _ in range(512):  # 32 MiB, 32 times the limit, with no newline
            reader.feed(chunk)
            reported.extend(reader.events())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * limit, f"peak {peak} bytes while discarding"
    assert reported == []  # answered when it ends
    reader.feed(b"\n" + REQUEST + b"\n")
    refused, after = reader.events()
    assert_bad(refused, INVALID_REQUEST, None)
    assert after == Request(1, "tools/list", {})


@pytest.mark.req("STDIO-MAX-LINE-SIZE")
def test_a_line_exactly_at_the_limit_is_accepted_and_one_byte_more_is_not() -> None:
    padding = 100 - len(b'{"jsonrpc":"2.0","id":1,"method":""}')
    at_limit = b'{"jsonrpc":"2.0","id":1,"method":"' + b"m" * padding + b'"}'
    assert len(at_limit) == 100
    over = at_limit[:-2] + b'm"}'
    assert isinstance(only(read_all(at_limit + b"\n", max_line_bytes=100)), Request)
    # Also when the line arrives without its newline first (the unterminated-buffer check).
    assert isinstance(only(read_all(at_limit, b"\n", max_line_bytes=100)), Request)
    assert_bad(only(read_all(over + b"\n", max_line_bytes=100)), INVALID_REQUEST, 1)
    assert_bad(only(read_all(over, b"\n", max_line_bytes=100)), INVALID_REQUEST, 1)


@pytest.mark.req("STDIO-MAX-LINE-SIZE")
def test_an_oversized_final_line_at_eof_is_reported_once() -> None:
    events = read_all(b"z" * 300, eof=True, max_line_bytes=100)
    assert_bad(only(events), INVALID_REQUEST, None)


@pytest.mark.req("STDIO-MAX-LINE-SIZE")
def test_an_oversized_line_does_not_swallow_lines_after_it_in_the_same_feed() -> None:
    events = read_all(b"q" * 300 + b"\n" + REQUEST + b"\n" + NOTIFICATION + b"\n", max_line_bytes=100)
    assert [type(e) for e in events] == [BadMessage, Request, Notification]


def test_lines_before_an_oversized_one_are_parsed() -> None:
    assert [type(e) for e in read_all(REQUEST + b"\n" + b"q" * 300, max_line_bytes=100)] == [Request]
    assert [type(e) for e in read_all(REQUEST + b"\n" + b"q" * 300, eof=True, max_line_bytes=100)] == [Request, BadMessage]


# --- encoding -------------------------------------------------------------------------------------


@pytest.mark.req("STDIO-NO-EMBEDDED-NEWLINES")
def test_encoding_is_compact_json_with_one_trailing_newline() -> None:
    line = encode_message({"jsonrpc": "2.0", "id": 1, "result": {"a": [1, 2], "b": {"c": None}}})
    assert line == b'{"jsonrpc":"2.0","id":1,"result":{"a":[1,2],"b":{"c":null}}}\n'


@pytest.mark.req("STDIO-UTF8")
def test_encoding_writes_non_ascii_text_as_utf8() -> None:
    line = encode_message({"text": "é ☃ 𝄞"})
    assert line == '{"text":"é ☃ 𝄞"}\n'.encode("utf-8")


@pytest.mark.req("STDIO-NO-EMBEDDED-NEWLINES")
def test_encoded_strings_with_line_breaks_stay_on_one_line() -> None:
    value = "a\nb\r\nc\rd\u2028e\u2029f\u0085g\x0bh\x0ci\x00j"
    line = encode_message({"jsonrpc": "2.0", "method": "m", "params": {"text": value, "key\nwith newline": 1}})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert b"\r" not in line
    assert json.loads(line) == {"jsonrpc": "2.0", "method": "m", "params": {"text": value, "key\nwith newline": 1}}


@pytest.mark.req("STDIO-NO-EMBEDDED-NEWLINES")
def test_an_encoded_line_reads_back_as_exactly_one_event() -> None:
    message = {"jsonrpc": "2.0", "id": 5, "method": "echo", "params": {"text": "x\ny\u2028z"}}
    assert only(read_all(encode_message(message))) == Request(5, "echo", {"text": "x\ny\u2028z"})


@pytest.mark.req("STDIO-UTF8")
def test_a_lone_surrogate_is_encoded_as_valid_utf8_json() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"name": "bad\udcff name", "other": "é"}}
    line = encode_message(message)
    text = line.decode("utf-8")  # strict: raises if the bytes are not UTF-8
    assert text.count("\n") == 1 and text.endswith("\n")
    assert json.loads(text) == message


def test_values_json_cannot_carry_are_refused() -> None:
    with pytest.raises(ValueError):
        encode_message({"n": float("nan")})
    with pytest.raises(TypeError):
        encode_message({"b": b"bytes"})
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(RecursionError):  # the encoder keeps no table of what it has seen (see wire._make_encode)
        encode_message(cyclic)


@pytest.mark.req("BASE-ERROR-ID-NULL")
def test_an_error_for_an_unreadable_id_carries_id_null() -> None:
    line = encode_message(error_response(None, InvalidRequest("bad")))
    assert json.loads(line) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "bad"}}


# --- the shortcuts produce exactly what the json module does ----------------------------------------
#
# wire calls json's C scanner and C encoder directly, and puts large strings on the line with byte
# operations of its own (wire.py, "large results"). These tests pin them to the json module's own
# output over seeded random corpora: same values, same error messages, same bytes.


def json_line(message: Any) -> bytes:
    """The line the json module writes for ``message``: compact, U+2028/U+2029/U+0085 escaped,
    and \\u-escaped throughout when the text is not UTF-8 (a lone surrogate)."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw in ("\u2028", "\u2029", "\x85"):
        text = text.replace(raw, f"\\u{ord(raw):04x}")
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def outcome(function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except Exception as exc:  # noqa: BLE001 - the kind and wording are what is compared
        return (type(exc).__name__, str(exc))


CHARACTERS = ["a", "Z", " ", "/", "\n", "\r", "\t", '"', "\\", "\x00", "\x1f", "\x7f", "\b", "\f", "é", "☃", "😀", "\u2028", "\u2029", "\x85", "\ud800"]


def random_text(rng: random.Random, longest: int = 12) -> str:
    alphabet = CHARACTERS[: rng.choice([4, 9, 14, len(CHARACTERS)])]  # often only plain or only short escapes
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(longest + 1)))


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(11 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 2**53 + 1, -(2**64) - 5, 10**40])
    if kind == 2:
        return rng.choice([0.0, -0.0, 0.1, 1e16, 1e-7, 1.5e300, 2.5e-300, 123456789.125, rng.random() * 10 ** rng.randrange(-20, 20)])
    if kind in (3, 4, 5):
        return random_text(rng)
    if kind in (6, 7):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 8:
        return tuple(random_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    keys = [random_text(rng) if rng.random() < 0.9 else rng.choice([7, 2.5, None, True]) for _ in range(rng.randrange(4))]
    return {key: random_value(rng, depth + 1) for key in keys}


def test_encoding_matches_the_json_module_byte_for_byte() -> None:
    rng = random.Random(9)
    for _ in range(3000):
        message = {"jsonrpc": "2.0", "id": rng.randrange(100), "result": random_value(rng)}
        if rng.random() < 0.02:
            message["result"] = rng.choice([float("nan"), float("inf"), {1, 2}, b"raw"])
        assert outcome(encode_message, message) == outcome(json_line, message)


def random_large_item(rng: random.Random) -> Any:
    """An item of a tools/call or resources/read result, with a string long enough to be spliced."""
    long = random_text(rng, 40)
    raw = bytes(rng.randrange(256) for _ in range(rng.randrange(8, 40)))
    return rng.choice([
        lambda: text(long),
        lambda: text_resource("file:///" + random_text(rng, 3), long),
        lambda: blob_resource("file:///b", raw),
        lambda: image(raw, "image/png"),
        lambda: embedded_resource(text_resource("file:///e", long)),
        lambda: embedded_resource(blob_resource("file:///e", raw)),
        lambda: {"type": "text", "text": long, "annotations": {"note": random_text(rng)}},
    ])()


def test_large_strings_are_spliced_into_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "SPLICE_MIN_CHARS", 8)  # small strings exercise the same code
    rng = random.Random(4)
    spliced = 0
    for _ in range(3000):
        items = [random_large_item(rng) for _ in range(rng.randrange(1, 3))]
        if rng.random() < 0.1:
            items.insert(0, rng.choice(["not an object", 7, None, ["a list"]]))  # skipped over, never spliced
        key = rng.choice(["content", "contents"])
        message = {"jsonrpc": "2.0", "id": random_text(rng, 3), "result": {key: items, "_meta": {"k": random_text(rng)}}}
        parts = encode_message_parts(message)
        spliced += len(parts) > 1
        assert b"".join(parts) == json_line(message), message
        assert encode_message(message) == json_line(message)
    assert spliced > 2000  # the shortcut was taken (lone surrogates and the like are left to the encoder)


def test_a_large_result_string_goes_out_in_parts_without_a_joined_copy() -> None:
    data = bytes(range(256)) * 1024  # 256 KiB: base64 well above wire.SPLICE_MIN_CHARS
    blob = blob_resource("file:///big", data)
    parts = encode_message_parts({"jsonrpc": "2.0", "id": 1, "result": {"contents": [blob]}})
    assert any(part is blob.encoded_ascii for part in parts)  # the helper's base64 bytes themselves
    document = "line of text with a \"quote\"\n" * 4000
    parts = encode_message_parts({"jsonrpc": "2.0", "id": 2, "result": {"content": [text(document)]}})
    assert len(parts) > 1
    assert json.loads(b"".join(parts)) == {"jsonrpc": "2.0", "id": 2, "result": {"content": [text(document)]}}


def comparable(event: Any) -> Any:
    """An event as something ``==`` compares by value (error objects compare by identity)."""
    if isinstance(event, BadMessage):
        return ("bad", event.id, event.error.code, event.error.message)
    return event


def reference_event(line: bytes) -> Any:
    """What parse_line must return, computed with the json module's documented API."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    try:
        message = json.JSONDecoder(parse_constant=refuse).decode(line.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        return ("bad", None, PARSE_ERROR, f"Parse error: {exc}")
    return comparable(classify(message))


def test_decoding_matches_the_json_module_on_mangled_lines() -> None:
    rng = random.Random(3)
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2.5,null,true]}}}',
        '{"jsonrpc":"2.0","id":"\\ud800","method":"m","params":{"x":1e400,"y":-0,"z":"\\u2028"}}',
        '{"jsonrpc":"2.0","method":"n","params":{"v":NaN}}',
        '{"a":1,"a":2}',
        "{}",
    ]
    pieces = list('{}[]",:\\ 0123456789eE+-.ntrufals') + ["é", "\x00"]
    for _ in range(20000):
        line = rng.choice(lines)
        for _ in range(rng.randrange(4)):
            at = rng.randrange(len(line) + 1)
            line = rng.choice([line[:at] + rng.choice(pieces) + line[at:], line[:at] + line[at + 1 :], line[:at]])
        assert comparable(parse_line(line.encode("utf-8"))) == reference_event(line.encode("utf-8")), line


def test_events_compare_and_print_by_their_fields_and_cost_is_not_one_of_them() -> None:
    request = Request(7, "tools/list", {"a": 1}, cost=900)
    assert request == Request(7, "tools/list", {"a": 1}) and request.cost == 900
    assert request != Request(8, "tools/list", {"a": 1}) and request != Notification("tools/list", {"a": 1})
    assert repr(request) == "Request(id=7, method='tools/list', params={'a': 1})"
    assert repr(BadMessage(None, InvalidRequest("x"))).startswith("BadMessage(id=None, error=")
    with pytest.raises(TypeError):
        hash(request)  # params are a dict: as unhashable as a dataclass with eq


@pytest.mark.req("STDIO-IN-FLIGHT-BYTES")
@pytest.mark.parametrize("at_eof", [False, True])
def test_a_line_estimated_above_max_parsed_bytes_is_refused_unparsed_and_plain_data_passes(at_eof: bool) -> None:
    reader = WireReader(max_parsed_bytes=1024 * 1024)
    nested = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":[' + b"[]," * 20_000 + b"[]]}}"  # ~2.6 MB estimated
    data = b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":"' + b"A" * 900_000 + b'"}}'  # plain: about its size
    reader.feed(nested + b"\n" + data + (b"" if at_eof else b"\n"))
    if at_eof:
        reader.feed_eof()
    refused, passed = list(reader.events())
    assert_bad(refused, INVALID_REQUEST, 7)  # never parsed: the id comes from a scan of its top level
    assert "once parsed" in refused.error.message and "MiB one request may hold" in refused.error.message
    assert isinstance(passed, Request) and passed.id == 8
    assert WireReader().max_parsed_bytes is None  # without it, nothing is refused for its structure
