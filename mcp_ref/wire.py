"""The sans-I/O wire core: bytes in, JSON-RPC events out; messages in, lines out.

Spec: basic/transports/stdio (framing) and basic/index#messages (JSON-RPC as MCP restricts it).

Theory of operation
-------------------
A ``WireReader`` is fed raw bytes as they arrive (``feed``) and is then asked for events
(``events``). It never does I/O and never blocks, so the whole framing layer is testable with
byte strings.

* Framing. A message is one line: bytes up to ``\\n``. One trailing ``\\r`` is stripped (CRLF is
  tolerated) and blank lines are ignored. At end of input (``feed_eof``) a final line without a
  newline is still delivered, so ``printf '...'`` without a trailing newline works.
* Decoding. A line must be strict UTF-8 JSON: invalid bytes, a BOM, ``NaN`` or ``Infinity`` are
  a parse error (-32700), never silently replaced.
* Classification. A JSON object with ``method`` is a request (it has an ``id``) or a notification
  (it has none); one with ``result``/``error`` and no ``method`` is a response the client should
  not have sent. Anything else -- arrays (JSON-RPC batches), scalars, a bad ``jsonrpc`` member,
  an ``id`` that is null or not a string/integer, a non-string method, non-object params -- is an
  invalid request (-32600). Its error echoes the id when the id itself is usable, else null.
* Limits. A line longer than ``max_line_bytes`` is a denial-of-service guard: the reader stops
  buffering, discards input up to the next newline and reports one ``BadMessage`` (-32600).
  Memory stays bounded by the limit, whatever the peer sends.

``encode_message`` is the other direction: one compact UTF-8 JSON line per message. JSON escapes
control characters inside strings, and compact separators put no whitespace between tokens, so a
line never contains an embedded newline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator, Union

from .errors import InvalidRequest, ParseError, ProtocolError

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024

RequestId = Union[str, int]


@dataclass(frozen=True, slots=True)
class Request:
    """A JSON-RPC request from the client: it expects exactly one response (or none if cancelled)."""

    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Notification:
    """A JSON-RPC notification from the client: never answered."""

    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ClientResponse:
    """A JSON-RPC response written by the client. Clients must not send these on stdio; we log and drop them."""

    id: Any
    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class BadMessage:
    """Input that must be answered with an error response: ``id`` is None when it could not be read."""

    id: RequestId | None
    error: ProtocolError


Event = Union[Request, Notification, ClientResponse, BadMessage]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# One decoder for the whole process. The C scanner still does the work; parse_constant only runs
# for NaN/Infinity, which JSON does not allow.
_decoder = json.JSONDecoder(parse_constant=_reject_constant)
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ascii_encoder = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def is_valid_id(value: Any) -> bool:
    """MCP request ids are strings or integers; never null, bool or float (basic/index#requests)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_line(line: bytes | bytearray) -> Event:
    """Turn one line (without its newline) into an event. Pure: no state, no I/O."""
    try:
        text = line.decode("utf-8")
        message = _decoder.decode(text)
    except UnicodeDecodeError as exc:
        return BadMessage(None, ParseError(f"Parse error: input is not valid UTF-8 ({exc.reason} at byte {exc.start})"))
    except (ValueError, RecursionError) as exc:
        return BadMessage(None, ParseError(f"Parse error: {exc}"))
    return classify(message)


def classify(message: Any) -> Event:
    """Classify a decoded JSON value as a request, notification, client response or bad message."""
    if not isinstance(message, dict):
        kind = "a batch (JSON array)" if isinstance(message, list) else type(message).__name__
        return BadMessage(None, InvalidRequest(f"Invalid request: expected one JSON-RPC object, got {kind}"))
    has_id = "id" in message
    raw_id = message.get("id")
    usable_id = raw_id if has_id and is_valid_id(raw_id) else None
    if message.get("jsonrpc") != "2.0":
        return BadMessage(usable_id, InvalidRequest('Invalid request: "jsonrpc" must be "2.0"'))
    if "method" not in message:
        if ("result" in message) != ("error" in message) and has_id:
            return ClientResponse(raw_id, message)
        return BadMessage(usable_id, InvalidRequest('Invalid request: no "method"'))
    method = message["method"]
    if not isinstance(method, str):
        return BadMessage(usable_id, InvalidRequest('Invalid request: "method" must be a string'))
    params = message.get("params", {})
    if params is None or not isinstance(params, dict):
        # MCP params are always by-name: an object or absent.
        return BadMessage(usable_id, InvalidRequest('Invalid request: "params" must be an object'))
    if not has_id:
        return Notification(method, params)
    if usable_id is None:
        what = "null" if raw_id is None else type(raw_id).__name__
        return BadMessage(None, InvalidRequest(f'Invalid request: "id" must be a string or integer, not {what}'))
    return Request(usable_id, method, params)


class WireReader:
    """Incremental line framer and classifier. Feed it bytes; iterate ``events()``."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._scan_from = 0  # bytes of _buffer already known to contain no newline
        self._discarding = False  # inside an oversized line, dropping bytes up to its newline
        self._eof = False
        self._oversized_lines = 0

    def feed(self, data: bytes) -> None:
        """Add bytes read from the peer."""
        if self._eof:
            raise RuntimeError("feed() after feed_eof()")
        self._buffer += data

    def feed_eof(self) -> None:
        """The peer closed its side: a final unterminated line is delivered by the next ``events()``."""
        self._eof = True

    @property
    def at_eof(self) -> bool:
        return self._eof

    def events(self) -> Iterator[Event]:
        """Yield every event that the bytes fed so far complete."""
        buffer = self._buffer
        start = 0
        while True:
            newline = buffer.find(b"\n", max(start, self._scan_from))
            if newline < 0:
                break
            self._scan_from = 0
            line_end = newline
            if self._discarding:
                self._discarding = False
                start = newline + 1
                continue
            if line_end - start > self.max_line_bytes:
                start = newline + 1
                yield self._oversized()
                continue
            if line_end > start and buffer[line_end - 1] == 0x0D:
                line_end -= 1
            if not _is_blank(buffer, start, line_end):
                yield parse_line(buffer[start:line_end])
            start = newline + 1
        if start:
            del buffer[:start]
        pending = len(buffer)
        if self._discarding:
            buffer.clear()
            self._scan_from = 0
        elif pending > self.max_line_bytes:
            buffer.clear()
            self._scan_from = 0
            self._discarding = True
            yield self._oversized()
        else:
            self._scan_from = pending
        if self._eof and buffer:
            line = bytes(buffer).rstrip(b"\r")
            buffer.clear()
            if line.strip():
                yield parse_line(line)
        if self._eof:
            self._discarding = False

    def _oversized(self) -> BadMessage:
        self._oversized_lines += 1
        return BadMessage(
            None,
            InvalidRequest(f"Invalid request: message exceeds the maximum line size of {self.max_line_bytes} bytes"),
        )


_WHITESPACE = b" \t\r"


def _is_blank(buffer: bytearray, start: int, end: int) -> bool:
    """True when buffer[start:end] is empty or only whitespace. Only copies when it might be blank."""
    if start == end:
        return True
    if buffer[start] not in _WHITESPACE and buffer[end - 1] not in _WHITESPACE:
        return False
    return not buffer[start:end].strip()


def encode_message(message: dict[str, Any]) -> bytes:
    """One message as one compact UTF-8 JSON line, newline included.

    Raises ``ValueError``/``TypeError`` for values JSON cannot carry (NaN, sets, bytes): the caller
    decides what the peer sees instead.
    """
    text = _encoder.encode(message)
    text += "\n"  # resized in place (the only reference): no second copy of a large result
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (e.g. an undecodable file name) cannot be UTF-8; JSON's \\u escapes can
        # still carry it, so the line stays valid JSON and valid UTF-8.
        return _ascii_encoder.encode(message).encode("ascii") + b"\n"


def result_response(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC result response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: RequestId | None, error: ProtocolError) -> dict[str, Any]:
    """A JSON-RPC error response. ``id`` is null when the request id could not be read.

    The MCP schema makes ``id`` optional on errors; JSON-RPC 2.0 requires it (null when unknown),
    and the official SDK client rejects an error without it. See spec/ (BASE-ERROR-ID-NULL).
    """
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_error()}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC notification from the server."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message
