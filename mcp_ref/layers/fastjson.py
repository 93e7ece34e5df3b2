"""JSON text for the line, at the speed of CPython's C encoder: an optional layer under ``wire``.

``json.JSONEncoder.encode`` builds a new C encoder object for every call (~0.9 us of the 2.4 us a
small answer takes). ``encode_chunks`` is that C encoder made once, with the options ``wire``
uses (compact separators, non-ASCII kept, NaN refused); ``wire`` joins its chunks. Without
circular-reference bookkeeping (a shared table would not be thread-safe): a structure that
contains itself ends in ``RecursionError`` instead of ``ValueError``, and both are answered alike
(``Session._serve``). Where ``json`` has no C encoder, the plain encoder stands in, with the same
result. ``tests/test_wire_reader.py`` checks every line against the ``json`` module's own.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

# The options of every protocol line: compact, UTF-8 (non-ASCII kept), no NaN or Infinity.
ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# The same, with every non-ASCII character escaped: for a line holding a lone surrogate.
ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
# Valid raw in JSON strings, but line breaks to JavaScript (before ES2019), Python's
# str.splitlines and others: escaped so that no reader can split a message in two.
LINE_SEPARATORS = (("\u2028", "\\u2028"), ("\u2029", "\\u2029"), ("\x85", "\\u0085"))


def _plain_chunks(value: Any, _indent_level: int) -> Sequence[str]:
    """``encode_chunks`` without the C encoder: the plain ``json`` call."""
    return (ENCODER.encode(value),)


def _make_chunks() -> Callable[[Any, int], Sequence[str]]:
    from json import encoder

    # (typeshed does not declare json.encoder's C hook: it is None where the C module is absent)
    c_make_encoder = getattr(encoder, "c_make_encoder", None)
    if c_make_encoder is None:  # pragma: no cover - CPython always has it
        return _plain_chunks
    # markers, default, string encoder, indent, key and item separators, sort_keys, skipkeys, allow_nan
    made: Callable[[Any, int], Sequence[str]] = c_make_encoder(
        None, ENCODER.default, encoder.encode_basestring, None, ":", ",", False, False, False
    )
    return made


#: ``"".join(encode_chunks(value, 0))`` is ``ENCODER.encode(value)``.
encode_chunks = _make_chunks()


def encode(value: Any) -> str:
    """``ENCODER.encode(value)``, through ``encode_chunks``."""
    return "".join(encode_chunks(value, 0))
