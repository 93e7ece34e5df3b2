"""Cursor pagination for the four list methods.

Spec: server/utilities/pagination. Cursors are opaque to clients; the server picks the page size.
Ours encode the list method and an offset into the list, which is kept in a deterministic order
(registration order), so a cursor stays meaningful while the list is unchanged. A cursor we did
not issue, or one for another method, is answered with -32602.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Callable, Sequence, TypeVar

from .errors import InvalidParams

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 100


def encode_cursor(method: str, offset: int) -> str:
    """An opaque cursor for the page of ``method`` that starts at ``offset``."""
    return base64.urlsafe_b64encode(f"{method}\n{offset}".encode()).decode("ascii").rstrip("=")


def decode_cursor(cursor: Any, method: str) -> int:
    """The offset a cursor points at. Raises ``InvalidParams`` for anything we did not issue for ``method``."""
    if not isinstance(cursor, str):
        raise InvalidParams("Invalid cursor: must be a string")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        cursor_method, offset_text = raw.split("\n")
        offset = int(offset_text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidParams("Invalid cursor", {"cursor": cursor}) from None
    if cursor_method != method or offset < 0 or str(offset) != offset_text:
        raise InvalidParams("Invalid cursor", {"cursor": cursor})
    return offset


def paginate(items: Sequence[T], params: dict[str, Any], method: str, page_size: int) -> tuple[Sequence[T], str | None]:
    """The page a list request asks for, and the cursor of the next page (None at the end)."""
    cursor = params.get("cursor")
    offset = 0 if cursor is None else decode_cursor(cursor, method)
    if offset > len(items):
        raise InvalidParams("Invalid cursor: the list has changed since it was issued", {"cursor": cursor})
    end = offset + page_size
    next_cursor = encode_cursor(method, end) if end < len(items) else None
    return items[offset:end], next_cursor


def page_result(key: str, items: Sequence[T], params: dict[str, Any], method: str, page_size: int, describe: Callable[[T], Any]) -> dict[str, Any]:
    """A list method's result: ``{key: [described items of the page]}`` plus ``nextCursor`` when more remain."""
    page, next_cursor = paginate(items, params, method, page_size)
    result: dict[str, Any] = {key: [describe(item) for item in page]}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result
