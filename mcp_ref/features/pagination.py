"""Cursor pagination for the four list methods.

Spec: server/utilities/pagination. Cursors are opaque to clients; the server picks the page size.

Cursors are sealed: a cursor is ``base64url(tag || payload)``, unpadded, where ``payload`` is the
compact JSON of a position in the list and ``tag`` is the 32-byte HMAC-SHA256 of it for the
purpose ``"cursor <method>"`` (``sealing.Signer``, the server's one key, shared with MRTR
``requestState``). So a cursor is refused (-32602 "Invalid cursor") when it was forged, tampered
with, truncated, issued by a server with another key, issued for another list method, or spelled
in any way but the one we wrote (``sealing.b64url_decode``). The error's ``data.cursor`` echoes at
most ``CURSOR_ECHO_CHARS`` characters of what the client sent.

The position is an offset into a list kept in a deterministic order (registration order), so a
cursor stays meaningful while the list is unchanged; one past the end of a list that shrank is
-32602 too. ``resources/list`` seals a richer position (which source, and where in it: see
``resources.list_resources``), and a paged resource lister's own position rides inside it, so a
lister only ever resumes from a position it produced itself. Cursors do not expire; they survive
a restart only when the key does (``$MCP_REF_STATE_KEY`` or ``Server(state_key=...)``).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence, TypeVar

from ..core.errors import InternalError, InvalidParams
from .sealing import TAG_BYTES, Signer, b64url_decode, b64url_encode

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 100
# An invalid cursor's error data echoes at most this much of it (a cursor may be megabytes long).
CURSOR_ECHO_CHARS = 64
LIST_CHANGED = "Invalid cursor: the list has changed since it was issued"


def _purpose(method: str) -> str:
    return f"cursor {method}"


def invalid_cursor(cursor: str, message: str = "Invalid cursor") -> InvalidParams:
    """The -32602 for a refused cursor; its data echoes only a short prefix of the cursor."""
    return InvalidParams(message, {"cursor": cursor[:CURSOR_ECHO_CHARS]})


def encode_cursor(signer: Signer, method: str, position: Any) -> str:
    """A sealed cursor for the page of ``method`` that starts at ``position`` (any JSON value).

    Raises ``InternalError`` when ``position`` is not JSON (a paged lister's bug).
    """
    try:
        payload = json.dumps(position, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise InternalError(f"Internal error: a {method} position is not JSON ({exc})") from None
    return b64url_encode(signer.tag(_purpose(method), payload) + payload)


def decode_cursor(signer: Signer, cursor: Any, method: str) -> Any:
    """The position a cursor we issued for ``method`` carries; ``InvalidParams`` for anything else."""
    if not isinstance(cursor, str):
        raise InvalidParams("Invalid cursor: must be a string")
    try:
        sealed = b64url_decode(cursor)
    except ValueError:
        raise invalid_cursor(cursor) from None
    tag, payload = sealed[:TAG_BYTES], sealed[TAG_BYTES:]
    if not payload or not signer.verify(_purpose(method), payload, tag):
        raise invalid_cursor(cursor)
    return json.loads(payload)


def is_offset(value: Any) -> bool:
    """A non-negative int (and not a bool): what a sealed offset must be."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def paginate(signer: Signer, items: Sequence[T], params: dict[str, Any], method: str, page_size: int) -> tuple[Sequence[T], str | None]:
    """The page a list request asks for, and the cursor of the next page (None at the end)."""
    cursor = params.get("cursor")
    offset = 0 if cursor is None else decode_cursor(signer, cursor, method)
    if not is_offset(offset):
        raise invalid_cursor(str(cursor))
    if offset > len(items):
        raise invalid_cursor(str(cursor), LIST_CHANGED)
    end = offset + page_size
    next_cursor = encode_cursor(signer, method, end) if end < len(items) else None
    return items[offset:end], next_cursor


def page_result(
    signer: Signer, key: str, items: Sequence[T], params: dict[str, Any], method: str, page_size: int, describe: Callable[[T], Any]
) -> dict[str, Any]:
    """A list method's result: ``{key: [described items of the page]}`` plus ``nextCursor`` when more remain."""
    page, next_cursor = paginate(signer, items, params, method, page_size)
    result: dict[str, Any] = {key: [describe(item) for item in page]}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result
