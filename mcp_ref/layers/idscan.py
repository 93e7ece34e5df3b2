"""The id of a request that is refused unparsed: a bounded scan of the top level of its line.

Spec: basic/index#responses (an error response carries the id of the request it answers).

Theory of operation
-------------------
``wire.WireReader`` refuses some lines without parsing them: one longer than the line limit
(never held whole: it is discarded as it streams in) and one whose parse would cost too much
memory. Without a parse there is no id, and an error with ``"id": null`` leaves the client waiting
for the answer to its request forever. ``IdScanner`` finds the id without a parse: it is fed the
line's bytes in chunks, as they arrive, and walks the top-level object member by member,
remembering only which member it is in, a few flags, and at most ``MAX_ID_BYTES`` of the ``id``
member's value. Everything else is skipped, not built: a string by its closing quote, an array or
object by its bracket depth. So memory is O(1) whatever the line holds, and the work is linear in
its bytes, mostly at C speed: one regular expression skips runs of plain members and nested
values up to ``NESTING`` levels deep in one call (possessive quantifiers, so no backtracking), and
the Python loop only runs at chunk boundaries, interesting members and deeper nesting, at most
``MAX_STEPS`` times a line (past that, the scan gives up: deep nesting is an attack, not a request).

The answer is what the parser would have read: the last ``id`` member wins (duplicate members
are read last-wins, BASE-DUPLICATE-MEMBERS-LAST-WINS), escaped key spellings count
(``"\\u0069d"`` is ``id``), and an id that is not a string or an integer (null, a fraction, a
boolean, an object) is no id. A line whose top level is not one complete JSON object, and a client's
response (``"jsonrpc": "2.0"``, ``result`` or ``error``, no ``method``), give None: those are answered with
``"id": null`` as before. Brackets are matched by depth, not by kind, and values are not checked
for validity: for a line that is not valid JSON the scan may still name the id the client wrote,
which is the best answer it can get.

``request_id_of`` is the whole-line form.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.wire import RequestId

# The longest id value echoed (a longer one is treated as unreadable: null). Integers that long are
# still within Python's 4300-digit conversion limit.
MAX_ID_BYTES = 4096
# The Python-level steps one line may take before the scan gives up (None).
MAX_STEPS = 20_000
# Nested arrays and objects up to this depth are skipped inside the regular expression; each level
# beyond costs a Python step.
NESTING = 8
# Raw bytes of a member name worth keeping: "method" spelled with \\u escapes is 36.
_KEY_BYTES = 36

# The members that decide the answer: the id, and whether the line is the client's response
# (classify: "jsonrpc" is "2.0", "result" or "error" but not both, no "method").
_INTERESTING = ("id", "jsonrpc", "method", "result", "error")
_KEPT = ("id", "jsonrpc")  # the members whose values are kept


class _Patterns:
    """The expressions of the scan, compiled when the first line is scanned (~2 ms, which a
    server that never refuses a line does not pay at start-up)."""

    def __init__(self) -> None:
        self.whitespace = re.compile(rb"[ \t\r\n]*+")
        self.string_body = re.compile(rb"(?:[^\"\\]++|\\.)*+", re.DOTALL)
        self.scalar = re.compile(rb"[^\"\[\]{},: \t\r\n]*+")
        self.integer = re.compile(rb"-?(?:0|[1-9][0-9]*)")
        self.skip, self.members = _nested_patterns()


def _nested_patterns() -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    string = rb'"(?:[^"\\]++|\\.)*+"'
    neutral = rb'[^"\[\]{}]++'
    balanced = rb"[\[{](?:" + neutral + b"|" + string + rb")*+[\]}]"
    for _ in range(NESTING - 1):
        balanced = rb"[\[{](?:" + neutral + b"|" + string + b"|" + balanced + rb")*+[\]}]"
    # Inside a nested value: everything that leaves the depth where it was.
    skip = re.compile(rb"(?:" + neutral + b"|" + string + b"|" + balanced + rb")*+", re.DOTALL)
    # At the top level: whole members whose plain name is none of _INTERESTING, each up to the
    # comma after it, or to the closing brace after the last one.
    plain_key = rb'"(?!(?:' + b"|".join(k.encode() for k in _INTERESTING) + rb')")[^"\\]*+"'
    value = rb"(?:" + string + b"|" + balanced + rb'|[^"\[\]{},: \t\r\n]++)'
    ws = rb"[ \t\r\n]*+"
    members = re.compile(rb"(?:" + ws + plain_key + ws + b":" + ws + value + ws + rb"(?:,|(?=})))*+", re.DOTALL)
    return skip, members


_compiled: _Patterns | None = None


def _patterns() -> _Patterns:
    global _compiled
    if _compiled is None:
        _compiled = _Patterns()
    return _compiled


# States, in the order a member goes through them.
_OPEN, _KEY, _IN_KEY, _COLON, _VALUE, _IN_STRING, _IN_SCALAR, _NESTED, _AFTER_VALUE, _DONE, _FAILED = range(11)
_QUOTE, _COMMA, _COLON_BYTE, _OPEN_BRACE, _CLOSE_BRACE = b'",:{}'
_OPENERS = b"[{"


class IdScanner:
    """Feed one line's bytes (``feed``, any number of chunks); then ``result()`` is its request id,
    or None when it cannot be told (see the module docstring)."""

    __slots__ = ("_re", "_state", "_steps", "_depth", "_in_string", "_escape", "_key", "_field", "_value", "_overflow", "_id", "_jsonrpc", "_seen")

    def __init__(self) -> None:
        self._re = _patterns()
        self._state = _OPEN
        self._steps = 0
        self._depth = 0  # inside a nested value: its depth
        self._in_string = False  # inside a nested value: within a string
        self._escape = False  # within a string: the last byte fed was a lone backslash
        self._key = bytearray()  # the raw name of the member being read (at most _KEY_BYTES)
        self._field: str | None = None  # which of _INTERESTING the member is, if any
        self._value = bytearray()  # the raw value of a _KEPT member (at most MAX_ID_BYTES)
        self._overflow = False  # the key or value was longer than kept
        self._id: RequestId | None = None
        self._jsonrpc = False  # the (last) "jsonrpc" member is "2.0"
        self._seen: set[str] = set()

    def feed(self, data: bytes | bytearray | memoryview, start: int = 0, end: int | None = None) -> None:
        """The next bytes of the line, ``data[start:end]`` (nothing is copied)."""
        end = len(data) if end is None else end
        position = start
        while position < end and self._state < _DONE:
            self._steps += 1
            if self._steps > MAX_STEPS:
                self._state = _FAILED
                return
            position = self._step(data, position, end)
        if self._state == _DONE and _match_end(self._re.whitespace, data, position, end) < end:
            self._state = _FAILED  # something follows the object: not one JSON value

    def result(self) -> RequestId | None:
        """The request id, once the whole line was fed; None if there is none to tell."""
        if self._state != _DONE:
            return None
        seen = self._seen
        if self._jsonrpc and "method" not in seen and ("result" in seen) != ("error" in seen):
            return None  # the client's response to us: it gets no answer with its id
        return self._id

    # --- one step --------------------------------------------------------------------------------

    def _step(self, data: Any, position: int, end: int) -> int:
        state = self._state
        if state == _NESTED:
            return self._nested(data, position, end)
        if state in (_IN_KEY, _IN_STRING):
            return self._string(data, position, end)
        if state == _IN_SCALAR:
            stop = _match_end(self._re.scalar, data, position, end)
            self._keep(data, position, stop)
            if stop < end:
                self._member_value(self._integer())
                self._state = _AFTER_VALUE
            return stop
        position = _match_end(self._re.whitespace, data, position, end)
        if position == end:
            return position
        byte = data[position]
        if state == _OPEN:
            self._state = _KEY if byte == _OPEN_BRACE else _FAILED
            return position + 1
        if state == _KEY:
            stop = _match_end(self._re.members, data, position, end)
            if stop > position:
                return stop  # plain members skipped; the next one is looked at in the next step
            if byte == _QUOTE:
                self._key.clear()
                self._overflow = False
                self._state = _IN_KEY
            else:
                self._state = _DONE if byte == _CLOSE_BRACE else _FAILED
            return position + 1
        if state == _COLON:
            self._state = _VALUE if byte == _COLON_BYTE else _FAILED
            return position + 1
        if state == _VALUE:
            self._value.clear()
            self._overflow = False
            if byte == _QUOTE:
                self._state = _IN_STRING
                return position + 1
            if byte in _OPENERS:
                self._member_value(None)  # an array or object is no id
                self._state, self._depth, self._in_string = _NESTED, 1, False
                return position + 1
            self._state = _IN_SCALAR
            return position
        # _AFTER_VALUE
        self._state = _KEY if byte == _COMMA else _DONE if byte == _CLOSE_BRACE else _FAILED
        return position + 1

    def _string(self, data: Any, position: int, end: int) -> int:
        """Within the member name or a string value: keep its bytes if wanted, find its end."""
        stop, closed = self._string_end(data, position, end)
        self._keep(data, position, stop - 1 if closed else stop)
        if closed:
            if self._state == _IN_KEY:
                self._field = self._name()
                if self._field is not None:
                    self._seen.add(self._field)
                self._state = _COLON
            else:
                self._member_value(self._string_value())
                self._state = _AFTER_VALUE
        return stop

    def _string_end(self, data: Any, position: int, end: int) -> tuple[int, bool]:
        """Where the string being read ends (after its closing quote), or ``end`` if not in these bytes."""
        if self._escape:
            self._escape = False
            position += 1  # the byte a lone backslash at the end of the last chunk escapes
            if position >= end:
                return end, False
        stop = _match_end(self._re.string_body, data, position, end)
        if stop == end:
            return end, False
        if data[stop] == _QUOTE:
            return stop + 1, True
        self._escape = True  # a backslash ends these bytes: what it escapes comes next
        return end, False

    def _nested(self, data: Any, position: int, end: int) -> int:
        """Inside an array or object value: skip to where its depth returns to the top level."""
        if self._in_string:
            stop, closed = self._string_end(data, position, end)
            self._in_string = not closed
            return stop
        stop = _match_end(self._re.skip, data, position, end)
        if stop == end:
            return stop
        byte = data[stop]
        if byte == _QUOTE:
            self._in_string = True  # a string these bytes do not finish
        elif byte in _OPENERS:
            self._depth += 1  # deeper than the expression goes (or cut by the end of the bytes)
        else:
            self._depth -= 1
            if self._depth == 0:
                self._state = _AFTER_VALUE
        return stop + 1

    # --- what is kept ----------------------------------------------------------------------------

    def _keep(self, data: Any, start: int, stop: int) -> None:
        if self._state == _IN_KEY:
            kept, limit = self._key, _KEY_BYTES
        elif self._field in _KEPT:
            kept, limit = self._value, MAX_ID_BYTES
        else:
            return
        if len(kept) + stop - start > limit:
            self._overflow = True
        elif not self._overflow:
            kept += data[start:stop]

    def _name(self) -> str | None:
        if self._overflow:
            return None
        name = _decoded(b'"' + bytes(self._key) + b'"')
        return name if name in _INTERESTING else None

    def _string_value(self) -> RequestId | None:
        if self._field not in _KEPT or self._overflow:
            return None
        value = _decoded(b'"' + bytes(self._value) + b'"')
        return value if isinstance(value, str) else None

    def _integer(self) -> int | None:
        if self._field != "id" or self._overflow or not self._re.integer.fullmatch(self._value):
            return None  # a fraction, an exponent, true, false or null: not an id
        return int(self._value)

    def _member_value(self, value: RequestId | None) -> None:
        # The last member of a name wins, as in the parse.
        if self._field == "id":
            self._id = value
        elif self._field == "jsonrpc":
            self._jsonrpc = value == "2.0"


def _decoded(literal: bytes) -> Any:
    try:
        return json.loads(literal)
    except ValueError:  # an invalid escape or a raw control character: nothing to echo
        return None


def request_id_of(line: bytes | bytearray | memoryview, start: int = 0, end: int | None = None) -> RequestId | None:
    """The request id of ``line[start:end]`` (one whole line, without its newline), found without
    parsing it (``IdScanner``); None when it cannot be told."""
    scanner = IdScanner()
    scanner.feed(line, start, end)
    return scanner.result()


def _match_end(pattern: re.Pattern[bytes], data: Any, position: int, end: int) -> int:
    """Where ``pattern`` stops matching at ``position`` (its patterns all match the empty string)."""
    match = pattern.match(data, position, end)
    assert match is not None
    return match.end()
