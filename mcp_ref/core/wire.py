"""The sans-I/O wire core: bytes in, JSON-RPC events out; messages in, lines out.

Spec: basic/transports/stdio (framing) and basic/index#messages (JSON-RPC as MCP restricts it).

Theory of operation
-------------------
A ``WireReader`` is fed raw bytes as they arrive (``feed``) and is then asked for events, one at
a time (``next_event``) or all that are complete (``events``). It never does I/O and never
blocks, so the whole framing layer is testable with byte strings.

* Framing. A message is one line: bytes up to ``\\n``. One trailing ``\\r`` is stripped (CRLF is
  tolerated) and blank lines are ignored. At end of input (``feed_eof``) a final line without a
  newline is still delivered, so ``printf '...'`` without a trailing newline works.
* Decoding. A line must be strict UTF-8 JSON: invalid bytes, a BOM, ``NaN`` or ``Infinity`` are
  a parse error (-32700), never silently replaced.
* Classification. A JSON object with ``method`` is a request (it has an ``id``) or a notification
  (it has none); one with ``result``/``error`` and no ``method`` is a response the client should
  not have sent. A notification with a bad ``jsonrpc`` member or non-object params is a
  ``MalformedNotification``: it has no id to answer, so it is only logged. Anything else -- arrays
  (JSON-RPC batches), scalars, a bad ``jsonrpc`` member, an ``id`` that is null or not a
  string/integer, a non-string method, non-object params -- is an invalid request (-32600). Its
  error echoes the id when the id itself is usable, else null.
* Limits. A line whose message (not counting the ``\\r`` of a CRLF ending) is longer than
  ``max_line_bytes`` is a denial-of-service guard: the reader stops buffering, discards input up
  to the next newline and then reports one ``BadMessage`` (-32600). Memory stays bounded by the
  limit, whatever the peer sends. With ``max_parsed_bytes``, a line whose parsed form is
  estimated above it (``estimated_cost``: a line of ``[],[],...`` grows ~27 times when parsed)
  is refused the same way, before it is parsed. A refusal still carries the request's id:
  ``idscan`` finds it without a parse, in O(1) memory, from the bytes as they are discarded
  (at most ``ID_SCAN_LINES`` times the limit of them).
* Pulling, not pushing. Bytes that were fed stay raw until an event is asked for, so the
  transport decides how much input becomes parsed (and costly) structure: it stops asking while
  too much is in flight, and the rest waits as bytes. ``estimated_cost`` says what a line will
  cost once parsed (``Request.cost``); ``take_ahead`` fishes the messages the transport lets
  overtake (cancellations, the dispatcher's control lane) out of the waiting bytes, so a
  cancellation never waits behind the input it wants to stop, nor a ``ping`` behind tool calls.
* Exactly once. A line is marked consumed *before* it is parsed, so an exception while parsing
  (even ``MemoryError``), or a consumer that stops iterating ``events()`` half-way, can never
  make the same line an event twice. ``MemoryError`` while parsing becomes a -32603 for that
  line (id null); any other exception propagates, and the next call goes on with the next line.

``encode_message`` is the other direction: one compact UTF-8 JSON line per message. JSON escapes
control characters inside strings, and compact separators put no whitespace between tokens, so a
line never contains an embedded newline. U+2028, U+2029 and U+0085, which JSON allows raw but
some runtimes' line splitters treat as line ends, are written as ``\\u`` escapes too.
``encode_message_parts`` gives the same line as a few buffers when a result carries a large string
(a file's text or base64), so the transport can write it without one more copy ("large results").
The line is always byte for byte what the ``json`` module writes: the shortcuts here (the C
scanner and encoder called directly, large strings escaped as bytes) are tested against it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Iterator, Union

from ..layers import splice
from ..layers.fastjson import ASCII_ENCODER, LINE_SEPARATORS, encode_chunks
from ..layers.records import Record
from .errors import InternalError, InvalidRequest, ParseError, ProtocolError

if TYPE_CHECKING:
    from re import Pattern

    from ..layers.idscan import IdScanner

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024

# The estimated memory of a parsed line, per "[", "{" or "," in it: each one starts a value the
# parsed structure holds (an empty list costs about 80 bytes with its reference and GC header,
# an empty dict about 90, a short string 50-60). Generous on purpose: it only bounds how much
# parsed input the transport keeps in flight, it never decides what is valid.
STRUCTURE_COST_BYTES = 64

# Lines up to this size are not counted: the worst case (a structure every third byte, "[],")
# is assumed. Typical requests are a few hundred bytes, so they stay far below any budget.
_COUNTED_FROM_BYTES = 4096
_WORST_COST_PER_BYTE = 1 + -(-STRUCTURE_COST_BYTES // 3)

ID_SCAN_LINES = 4  # an oversized line's id is looked for (idscan) in this many line limits of it
CANCELLED = "notifications/cancelled"
# The longest line WireReader.take_ahead takes out of held input: what may overtake is small, and
# so is its parse (at most ~350 KiB, the worst case of estimated_cost).
AHEAD_MAX_BYTES = 16 * 1024
# A helper-made string of at least this many characters goes on the line as its own buffer (splice).
SPLICE_MIN_CHARS = 64 * 1024

RequestId = Union[str, int]


class _Event(Record):
    """What the four kinds of event share: values set once by ``__init__`` (treat them as read-only),
    compared with ``==`` and shown by ``repr`` field by field (``FIELDS``), like a dataclass's.

    ``Record``s with ``__slots__`` rather than frozen dataclasses: one is made for every
    message, three times faster, and defining them costs nothing at start-up (a frozen dataclass:
    ~0.35 ms each).
    """

    __slots__ = ()


class Request(_Event):
    """A JSON-RPC request from the client: it expects exactly one response (or none if cancelled).

    ``cost`` is the estimated memory of the parsed request (``estimated_cost``), 0 when unknown;
    the transport bounds the total of what is in flight by it. (Not compared, not shown.)
    """

    __slots__ = ("id", "method", "params", "cost", "key")
    FIELDS = ("id", "method", "params")

    def __init__(self, id: RequestId, method: str, params: dict[str, Any], cost: int = 0) -> None:
        self.id = id
        self.method = method
        self.params = params
        self.cost = cost
        self.key = (type(id), id)  # request_key(id): the in-flight table's key


class Notification(_Event):
    """A JSON-RPC notification from the client: never answered."""

    __slots__ = FIELDS = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any]) -> None:
        self.method = method
        self.params = params


class MalformedNotification(_Event):
    """A notification (a string ``method``, no ``id``) that is not a valid one, ``problem`` says why:
    never answered, as it has no id to answer; logged and ignored (basic/index#notifications)."""

    __slots__ = FIELDS = ("method", "problem")

    def __init__(self, method: str, problem: str) -> None:
        self.method = method
        self.problem = problem


class ClientResponse(_Event):
    """A JSON-RPC response written by the client. Clients must not send these on stdio; we log and drop them."""

    __slots__ = FIELDS = ("id", "message")

    def __init__(self, id: Any, message: dict[str, Any]) -> None:
        self.id = id
        self.message = message


class BadMessage(_Event):
    """Input that must be answered with an error response: ``id`` is None when it could not be read."""

    __slots__ = FIELDS = ("id", "error")

    def __init__(self, id: RequestId | None, error: ProtocolError) -> None:
        self.id = id
        self.error = error


Event = Union[Request, Notification, MalformedNotification, ClientResponse, BadMessage]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# One decoder for the whole process. The C scanner still does the work; parse_constant only runs
# for NaN/Infinity, which JSON does not allow.
_decoder = json.JSONDecoder(parse_constant=_reject_constant)
_scan = _decoder.scan_once  # type: ignore[attr-defined]  # the C scanner itself, set by JSONDecoder.__init__ (typeshed omits it)
def is_valid_id(value: Any) -> bool:
    """MCP request ids are strings or integers; never null, bool or float (basic/index#requests)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def estimated_cost(line: bytes | bytearray, start: int = 0, end: int | None = None) -> int:
    """What ``line[start:end]`` will cost in memory once parsed, estimated cheaply: its own bytes,
    plus ``STRUCTURE_COST_BYTES`` per container or separator (three byte counts, no copy; a line
    of at most 4 KiB is charged its worst case instead, 22 bytes a byte).

    A line of empty arrays (``[[],[],...]``) costs about 27 times its size once parsed; this
    estimate says about 43, so nesting cannot hide from the transport's in-flight budget.
    """
    if end is None:
        end = len(line)
    size = end - start
    if size <= _COUNTED_FROM_BYTES:
        return size * _WORST_COST_PER_BYTE  # not worth counting: assume the worst
    structure = line.count(b"[", start, end) + line.count(b"{", start, end) + line.count(b",", start, end)
    return size + STRUCTURE_COST_BYTES * structure


def parse_line(line: bytes | bytearray, *, cost: int = 0) -> Event:
    """Turn one line (without its newline) into an event. Pure: no state, no I/O.

    ``cost`` is carried on a ``Request`` (see ``Request.cost``).
    """
    try:
        text = line.decode("utf-8")
        # The usual line is one object and nothing around it: the C scanner reads it directly
        # (``_decoder.decode`` wraps the scanner in two whitespace scans and a Python method each
        # side: 0.6 us of the 1.7 us a small request takes). Anything else, errors included,
        # takes the full path, so every value and every error message is exactly ``json``'s.
        end = -1
        if text[:1] == "{" and text[-1:] == "}":
            try:
                message, end = _scan(text, 0)  # a malformed object raises what decode() would raise...
            except StopIteration:
                pass  # ...except a value missing inside it: decode() words that one
        if end != len(text):
            message = _decoder.decode(text)
    except UnicodeDecodeError as exc:
        return BadMessage(None, ParseError(f"Parse error: input is not valid UTF-8 ({exc.reason} at byte {exc.start})"))
    except (ValueError, RecursionError) as exc:
        return BadMessage(None, ParseError(f"Parse error: {exc}"))
    return classify(message, cost=cost)


def classify(message: Any, *, cost: int = 0) -> Event:
    """Classify a decoded JSON value as a request, notification, client response or bad message."""
    if not isinstance(message, dict):
        kind = "a batch (JSON array)" if isinstance(message, list) else type(message).__name__
        return BadMessage(None, InvalidRequest(f"Invalid request: expected one JSON-RPC object, got {kind}"))
    has_id = "id" in message
    raw_id = message.get("id")
    # is_valid_id(raw_id), inline: this runs for every message.
    usable_id = raw_id if has_id and (isinstance(raw_id, str) or (isinstance(raw_id, int) and not isinstance(raw_id, bool))) else None
    if message.get("jsonrpc") != "2.0":
        if not has_id and isinstance(message.get("method"), str):
            return MalformedNotification(message["method"], '"jsonrpc" must be "2.0"')
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
        if not has_id:
            return MalformedNotification(method, '"params" must be an object')
        return BadMessage(usable_id, InvalidRequest('Invalid request: "params" must be an object'))
    if not has_id:
        return Notification(method, params)
    if usable_id is None:
        what = "null" if raw_id is None else type(raw_id).__name__
        return BadMessage(None, InvalidRequest(f'Invalid request: "id" must be a string or integer, not {what}'))
    return Request(usable_id, method, params, cost)


class WireReader:
    """Incremental line framer and classifier. Feed it bytes; ask for ``next_event()`` or iterate ``events()``.

    The buffer holds the bytes fed and not yet consumed: at most one partial line (bounded by
    ``max_line_bytes``) plus whatever complete lines the consumer has not asked for yet (bounded
    by the consumer, which stops feeding when it holds enough: see ``buffered_bytes``).
    """

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, max_parsed_bytes: int | None = None) -> None:
        self.max_line_bytes = max_line_bytes
        # A line whose parsed form is estimated (estimated_cost) above this is refused unparsed:
        # 16 MiB of "[]," would otherwise become ~400 MiB of lists before anything could object.
        self.max_parsed_bytes = max_parsed_bytes
        self._buffer = bytearray()
        self._start = 0  # the first byte not yet consumed; everything before it is done with
        self._scan_from = 0  # there is no newline in _buffer[_start:_scan_from]
        self._peeked = 0  # lines starting before this were already searched for cancellations
        self._discarding = False  # inside an oversized line, dropping bytes up to its newline
        # While discarding, the oversized line's id is looked for in the bytes as they are dropped,
        # in at most _id_scan_room more of them.
        self._id_scan: IdScanner | None = None
        self._id_scan_room = 0
        self.at_eof = False  # feed_eof() was called: the peer closed its side

    def feed(self, data: bytes) -> None:
        """Add bytes read from the peer."""
        if self.at_eof:
            raise RuntimeError("feed() after feed_eof()")
        start = self._start
        if start and start >= len(self._buffer) >> 1:
            # Drop consumed bytes once they are at least half of the buffer: amortised O(1) a
            # byte, even while many unconsumed lines wait behind a few consumed ones.
            del self._buffer[:start]
            self._start = 0
            self._scan_from = max(0, self._scan_from - start)
            self._peeked = max(0, self._peeked - start)
        self._buffer += data

    def feed_eof(self) -> None:
        """The peer closed its side: a final unterminated line is delivered by the next ``next_event()``."""
        self.at_eof = True

    @property
    def buffered_bytes(self) -> int:
        """Bytes fed and not yet consumed (waiting lines and the partial line)."""
        return len(self._buffer) - self._start

    def has_pending_event(self) -> bool:
        """Is there input that ``next_event()`` would turn into an event (or skip) right now?"""
        if self._buffer.find(b"\n", max(self._start, self._scan_from)) >= 0:
            return True
        return self.at_eof and self.buffered_bytes > 0

    def events(self) -> Iterator[Event]:
        """Yield every event that the bytes fed so far complete. Stopping early loses nothing."""
        while (event := self.next_event()) is not None:
            yield event

    def next_event(self) -> Event | None:
        """The next event the bytes fed so far complete, or None when they complete none."""
        buffer = self._buffer
        while True:
            start = self._start
            newline = buffer.find(b"\n", max(start, self._scan_from))
            if newline < 0:
                if self._discarding or self.at_eof or len(buffer) - start > self.max_line_bytes:
                    return self._incomplete()
                self._scan_from = len(buffer)  # (the common case of _incomplete: a partial line, or none)
                return None
            self._start = newline + 1  # consumed before it is parsed: never read twice
            if self._discarding:  # the end of an oversized line: now it is answered
                self._discarding = False
                self._scan_dropped(buffer, start, newline)
                return self._oversized()
            end = newline
            if end > start and buffer[end - 1] == 0x0D:
                end -= 1  # the CR of CRLF: not part of the message, nor of the size limit
            size = end - start
            if size > self.max_line_bytes:
                self._start_id_scan(buffer, start, newline)  # as if it had streamed in: the CR counts
                return self._oversized()
            if end > start and buffer[start] not in _WHITESPACE and buffer[end - 1] not in _WHITESPACE or not _is_blank(buffer, start, end):
                if size > _COUNTED_FROM_BYTES:
                    return self._parse(buffer, start, end)
                try:  # (_parse for a small line, inlined: this is the per-message path)
                    return parse_line(buffer[start:end], cost=size * _WORST_COST_PER_BYTE)
                except MemoryError:
                    return _out_of_memory(buffer, start, end)

    def _incomplete(self) -> Event | None:
        """No newline after ``_start``: police the partial line, or deliver it at EOF."""
        buffer = self._buffer
        pending = len(buffer) - self._start
        if self._discarding:
            self._scan_dropped(buffer, self._start, len(buffer))
            self._reset()
            if self.at_eof:  # the oversized line ends with the input
                self._discarding = False
                return self._oversized()
            return None
        # A trailing CR may be the first half of a CRLF: it does not count toward the limit.
        message_bytes = pending - 1 if pending and buffer[-1] == 0x0D else pending
        if message_bytes > self.max_line_bytes:
            # Too long to hold: its bytes are dropped as they come, and looked at only for its id;
            # it is answered when it ends (at its newline), so that the answer can carry that id.
            self._start_id_scan(buffer, self._start, len(buffer))
            self._reset()
            if self.at_eof:
                return self._oversized()
            self._discarding = True
            return None
        if self.at_eof and pending:
            line = bytes(buffer[self._start :]).rstrip(b"\r")
            self._reset()
            if line.strip():
                return self._parse(line, 0, len(line))
            return None
        self._scan_from = len(buffer)
        return None

    def _reset(self) -> None:
        self._buffer.clear()
        self._start = self._scan_from = self._peeked = 0

    def _parse(self, buffer: bytes | bytearray, start: int, end: int) -> Event:
        cost = estimated_cost(buffer, start, end)
        # A line of at most _COUNTED_FROM_BYTES is charged its worst case (under 100 KiB) and never refused.
        if self.max_parsed_bytes is not None and cost > self.max_parsed_bytes and end - start > _COUNTED_FROM_BYTES:
            from ..layers.idscan import request_id_of  # (only a refused line imports it)

            return self._too_costly(request_id_of(buffer, start, end), cost)
        try:
            return parse_line(buffer[start:end], cost=cost)
        except MemoryError:
            return _out_of_memory(buffer, start, end)

    def _too_costly(self, request_id: RequestId | None, cost: int) -> BadMessage:
        mib = 1024 * 1024
        assert self.max_parsed_bytes is not None  # (only a reader with the limit refuses)
        return BadMessage(request_id, InvalidRequest(
            f"Invalid request: the message would take about {-(-cost // mib)} MiB once parsed, more than the "
            f"{self.max_parsed_bytes // mib} MiB one request may hold (it has too many arrays, objects or values)"))

    def _start_id_scan(self, buffer: bytes | bytearray, start: int, end: int) -> None:
        from ..layers.idscan import IdScanner  # only a refused line needs it

        self._id_scan = IdScanner()
        self._id_scan_room = ID_SCAN_LINES * self.max_line_bytes
        self._scan_dropped(buffer, start, end)

    def _scan_dropped(self, buffer: bytes | bytearray, start: int, end: int) -> None:
        """The next bytes of the oversized line, looked at for its id before they are dropped."""
        scan = self._id_scan
        if scan is None:
            return
        if end - start > self._id_scan_room:
            self._id_scan = None  # longer than the scan goes: its id stays unknown
            return
        self._id_scan_room -= end - start
        scan.feed(buffer, start, end)

    def _oversized(self) -> BadMessage:
        """The answer to the oversized line that just ended, with its id if the scan found one."""
        scan, self._id_scan = self._id_scan, None
        return BadMessage(
            scan.result() if scan is not None else None,
            InvalidRequest(f"Invalid request: message exceeds the maximum line size of {self.max_line_bytes} bytes"),
        )

    def take_ahead(self, methods: Pattern[bytes], wanted: Callable[[Event], bool | None]) -> list[Event]:
        """Messages waiting in complete, unconsumed lines that ``wanted`` accepts, in arrival
        order, taken out of the input so they are not read twice.

        For a transport that holds input back: a cancellation of a request already running, or a
        request that does no work (a ``ping``), need not wait its turn. Only lines of at most
        ``AHEAD_MAX_BYTES`` (and the line limit) in which ``methods`` (say ``control.overtaking_pattern()``) finds a
        method name are parsed; each complete line is searched once. One that ``wanted`` declines
        (False) is read in its turn; at "not yet" (None) the search stops, to resume from that
        line next time. A method name hidden by ``\\/`` escapes is simply read in its turn.
        """
        buffer = self._buffer
        found: list[Event] = []
        position = max(self._start, self._peeked)
        if self._discarding and position == self._start:
            # The first line is the tail of an oversized line: never a message.
            newline = buffer.find(b"\n", position)
            if newline < 0:
                return found
            position = newline + 1
        while True:
            hit = methods.search(buffer, position)
            if hit is None:
                last_newline = buffer.rfind(b"\n", position)
                self._peeked = last_newline + 1 if last_newline >= 0 else position
                return found
            line_start = buffer.rfind(b"\n", position, hit.start()) + 1 or position
            line_end = buffer.find(b"\n", hit.start())
            if line_end < 0:
                self._peeked = line_start  # searched again once the line is complete
                return found
            next_line = line_end + 1
            end = line_end - 1 if buffer[line_end - 1] == 0x0D else line_end
            if end - line_start > min(AHEAD_MAX_BYTES, self.max_line_bytes):
                position = next_line
                continue
            try:
                event = parse_line(buffer[line_start:end], cost=estimated_cost(buffer, line_start, end))
            except MemoryError:
                position = next_line
                continue
            verdict = wanted(event)
            if verdict is None:
                self._peeked = line_start
                return found
            if verdict:
                buffer[line_start:line_end] = b" " * (line_end - line_start)  # a blank line: skipped
                found.append(event)
            position = next_line


def _out_of_memory(buffer: bytes | bytearray, start: int, end: int) -> BadMessage:
    """Too big for this process right now: the line is consumed already, so the next one is read
    normally. Its id is looked for without a parse (``idscan``); null if even that fails."""
    from ..layers.idscan import request_id_of  # (only a refused line imports it)

    try:
        request_id = request_id_of(buffer, start, end)
    except MemoryError:
        request_id = None
    return BadMessage(request_id, InternalError("Internal error: the server ran out of memory reading this message"))


_WHITESPACE = b" \t\r"


def _is_blank(buffer: bytes | bytearray, start: int, end: int) -> bool:
    """True when buffer[start:end] is empty or only whitespace. Only copies when it might be blank."""
    if start == end:
        return True
    if buffer[start] not in _WHITESPACE and buffer[end - 1] not in _WHITESPACE:
        return False
    return not buffer[start:end].strip()


def encode_message(message: dict[str, Any]) -> bytes:
    """One message as one compact UTF-8 JSON line, newline included.

    Raises ``ValueError``/``TypeError`` for values JSON cannot carry (NaN, sets, bytes), and
    ``RecursionError`` for a structure nested too deeply or containing itself: the caller decides
    what the peer sees instead.
    """
    parts = encode_message_parts(message)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def encode_message_parts(message: dict[str, Any]) -> list[bytes]:
    """``encode_message``'s line as consecutive buffers: usually one; several for a result holding
    a large string a content helper made (``mcp_ref.layers.splice``: the JSON before it, the string, the
    rest with the newline), so a transport that writes a list of buffers (``writev``) sends a
    many-megabyte answer without first copying it into one more buffer."""
    result = message.get("result")
    if isinstance(result, dict) and (key := _large_string_list(result)) is not None:
        parts = splice.encode_parts(message, key, SPLICE_MIN_CHARS)
        if parts is not None:
            return parts
    return [_encode_line(message)]


def _large_string_list(result: dict[str, Any]) -> str | None:
    """``"content"`` or ``"contents"`` when that list of ``result`` holds a block a content helper
    marked with a string of at least ``SPLICE_MIN_CHARS`` (``splice.Marked.size``), else None."""
    for key in ("content", "contents"):
        items = result.get(key)
        if type(items) is list:
            for item in items:
                if isinstance(item, splice.Marked) and item.size >= SPLICE_MIN_CHARS:
                    return key
    return None


def _encode_line(message: dict[str, Any]) -> bytes:
    """The line of ``encode_message``, in one buffer."""
    text = "".join(encode_chunks(message, 0))  # fastjson: json's C encoder, made once
    # isascii() is O(1) on CPython (a flag of the string): ASCII-only lines pay nothing more.
    if not text.isascii():
        for raw, escaped in LINE_SEPARATORS:
            if raw in text:  # only ever inside strings: JSON has them nowhere else
                text = text.replace(raw, escaped)
    text += "\n"  # resized in place (the only reference): no second copy of a large result
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (e.g. an undecodable file name) cannot be UTF-8; JSON's \\u escapes can
        # still carry it, so the line stays valid JSON and valid UTF-8.
        return ASCII_ENCODER.encode(message).encode("ascii") + b"\n"


def request_key(request_id: Any) -> tuple[type, Any]:
    """A request id as a dict key: 1 and "1" are different request ids."""
    return (type(request_id), request_id)


def response_parts(request_id: RequestId, outcome: dict[str, Any] | ProtocolError) -> list[bytes]:
    """The response line to a request, its result or its error, as ``encode_message_parts`` makes it."""
    if isinstance(outcome, ProtocolError):
        return [_encode_line(error_response(request_id, outcome))]
    message = {"jsonrpc": "2.0", "id": request_id, "result": outcome}
    for key in ("content", "contents"):  # (_large_string_list, inline: every response passes here)
        items = outcome.get(key)
        if type(items) is list:
            for item in items:
                if isinstance(item, splice.Marked) and item.size >= SPLICE_MIN_CHARS:
                    # A large string a content helper made: its own buffer (splice.py's optional layer).
                    return splice.encode_parts(message, key, SPLICE_MIN_CHARS) or [_encode_line(message)]
    return [_encode_line(message)]


def result_response(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC result response (as a dict: a client's answer to a server's request; the
    server's own answers are lines, ``response_parts``, which builds the same envelope inline)."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: RequestId | None, error: ProtocolError) -> dict[str, Any]:
    """A JSON-RPC error response. ``id`` is null when the request id could not be read.

    The MCP schema makes ``id`` optional on errors; JSON-RPC 2.0 requires it (null when unknown),
    and the official SDK client rejects an error without it. See spec/ (BASE-ERROR-ID-NULL).
    """
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_error()}


def request(request_id: RequestId, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC request from the server (to initialize-era clients only: ``outgoing``)."""
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC notification from the server."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message
