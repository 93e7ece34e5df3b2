"""Large strings on the line without one more copy: an optional layer under ``wire``.

A tools/call or resources/read result may carry a file's text or an image's base64: many
megabytes that the JSON encoder would copy, check character by character, and copy again into
the line. The content helpers (``mcp_ref.core.content``) mark what they build: their blocks and
resource contents are ``Marked`` dicts that remember the length of their large string
(``size``), and base64 they encoded is ``Encoded`` (the ASCII bytes ``b64encode`` made are kept).
``wire.response_parts`` looks at the marks only (an attribute read per block); for a marked block
at or above ``wire.SPLICE_MIN_CHARS`` it asks ``encode_parts`` here for the line as consecutive
buffers: the JSON before the string, the string as a JSON literal, the rest. The transport
writes them with one ``writev``. The line is byte for byte the one ``json`` writes
(``tests/test_wire_reader.py`` checks that), and anything unusual (a block changed after the
helper made it, a lone surrogate, the stand-in found in the data) falls back to the encoder.

* Helper-made base64 needs no escaping and is already bytes: it goes out as it is (the JSON
  encoder would check each of its characters: ~14 ms for the 11 MiB of an 8 MiB file).
* ASCII text is escaped with a few whole-buffer byte operations when it needs only the short
  escapes (quote, backslash, newline, carriage return, tab), ~4 times faster than the
  encoder's character loop; other text goes through the encoder alone.
"""

from __future__ import annotations

import os
from typing import Any

from .fastjson import LINE_SEPARATORS, encode

_MARKER = "mcp-ref-splice-" + os.urandom(16).hex()  # stands in for the string while the rest is encoded
_QUOTED_MARKER = f'"{_MARKER}"'

# ASCII bytes that stand for themselves in a JSON string (json escapes only controls, " and \).
_PLAIN_ASCII = bytes(byte for byte in range(0x20, 0x80) if byte not in b'"\\')
# The escapes json writes for the others that text usually holds; the backslash goes first.
_SHORT_ESCAPES = ((b"\\", b"\\\\"), (b'"', b'\\"'), (b"\n", b"\\n"), (b"\r", b"\\r"), (b"\t", b"\\t"))
_MAX_ESCAPE_PASSES = 2


class Marked(dict):  # type: ignore[type-arg]
    """A content block or resource contents a content helper built: ``size`` is the length of
    the large string it may hold (its text, its base64, or an embedded resource's)."""

    __slots__ = ("size",)
    size: int


class Encoded(Marked):
    """Base64 a content helper encoded: ``encoded`` is the text, ``encoded_ascii`` the same as the
    bytes ``b64encode`` made. As long as that very string is still in place, checking the block
    need not scan it again, and the line can carry the bytes as they are."""

    __slots__ = ("encoded", "encoded_ascii")
    encoded: str
    encoded_ascii: bytes


def encoded_base64(item: Any) -> tuple[str, bytes] | None:
    """``(field, its base64 text as ASCII bytes)`` when a content helper encoded ``item``'s
    ``data`` or ``blob`` and that very text is still in place; else None (built by hand, or changed)."""
    if not isinstance(item, Encoded):
        return None
    for field in ("data", "blob"):
        if item.get(field) is item.encoded:
            return field, item.encoded_ascii
    return None


def encode_parts(message: dict[str, Any], key: str, min_chars: int) -> list[bytes] | None:
    """``message``'s line as buffers around the first large string of ``message["result"][key]``
    (a list holding a ``Marked`` item), or None when there is none after all."""
    result = message["result"]
    items = result[key]
    for index, item in enumerate(items):
        if not isinstance(item, Marked) or item.size < min_chars:
            continue
        swapped = _swap(item, min_chars)
        if swapped is None:
            continue
        stand_in, literal = swapped
        text = encode({**message, "result": {**result, key: [*items[:index], stand_in, *items[index + 1:]]}})
        if text.count(_MARKER) != 1:
            return None  # the marker is also in the data (practically impossible): no shortcut
        head, _marker, tail = text.partition(_QUOTED_MARKER)
        if not text.isascii():
            for raw, escaped in LINE_SEPARATORS:
                head, tail = head.replace(raw, escaped), tail.replace(raw, escaped)
        try:
            return [head.encode("utf-8"), *literal, (tail + "\n").encode("utf-8")]
        except UnicodeEncodeError:
            return None  # a lone surrogate elsewhere in the message: the \u-escaping path
    return None


def _swap(item: Any, min_chars: int) -> tuple[dict[str, Any], list[bytes]] | None:
    """``item`` with its large string replaced by the stand-in, and that string as a JSON string
    literal (quotes included) in buffers; None when it has none (or one better left to the
    encoder: a lone surrogate)."""
    encoded = encoded_base64(item)
    if encoded is not None and len(encoded[1]) >= min_chars:
        field, payload = encoded
        return {**item, field: _MARKER}, [b'"', payload, b'"']
    if not isinstance(item, dict):
        return None
    value = item.get("text")
    if type(value) is str and len(value) >= min_chars:
        literal = _string_literal(value)
        return None if literal is None else ({**item, "text": _MARKER}, literal)
    if item.get("type") == "resource":
        inner = _swap(item.get("resource"), min_chars)
        if inner is not None:
            return {**item, "resource": inner[0]}, inner[1]
    return None


def _string_literal(value: str) -> list[bytes] | None:
    """``value`` as the encoder writes it in a line (quoted, escaped, UTF-8), in buffers; None
    for a lone surrogate (the line then takes the \\u-escaping path)."""
    if value.isascii():  # O(1): a flag of the string
        data = value.encode("ascii")  # a copy at memory speed
        special = data.translate(None, _PLAIN_ASCII)  # the bytes that need escaping, in one pass
        escapes = [(raw, escaped) for raw, escaped in _SHORT_ESCAPES if raw in special]
        # Only short escapes (anything else: the encoder), and at most two kinds: each kind is one
        # more pass over the text, and from the third on the encoder's single loop is faster.
        if len(escapes) <= _MAX_ESCAPE_PASSES and len(special) == sum(special.count(raw) for raw, _ in escapes):
            for raw, escaped in escapes:
                data = data.replace(raw, escaped)
            return [b'"', data, b'"']
    text = encode(value)
    if not text.isascii():
        for separator, escape in LINE_SEPARATORS:
            if separator in text:
                text = text.replace(separator, escape)
    try:
        return [text.encode("utf-8")]
    except UnicodeEncodeError:
        return None
