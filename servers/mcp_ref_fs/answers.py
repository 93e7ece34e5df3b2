"""How every tool of mcp-ref-fs shapes its answer, and cuts text to a byte limit.

Shared by :mod:`.tools` (reading, listing, searching) and :mod:`.writing` (the tools that change
the disk): a text block plus ``structuredContent`` that repeats it as ``content``; arguments
turned into the UTF-8 a file holds; long text cut at whole lines, never inside a character.
"""

from __future__ import annotations

from typing import Any

from mcp_ref import ToolError, ToolResult, text


def answer(body: str, notes: list[str] | None = None, **structured: Any) -> ToolResult:
    """The text block (plus one block per note, so ``content`` stays exactly the data)."""
    blocks = [text(body)] + [text(note) for note in notes or ()]
    extra = {"notes": notes} if notes else {}
    return ToolResult(blocks, {"content": body, **structured, **extra})


def utf8(value: str, what: str) -> bytes:
    """``value`` as UTF-8, or a tool error when it holds a lone surrogate (JSON's ``\\ud800``
    escapes allow one; no UTF-8 file can store it)."""
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ToolError(
            f"{what} is not valid Unicode: it holds a lone surrogate (U+{ord(value[error.start]):04X}) at character "
            f"{error.start}, which a UTF-8 file cannot store"
        ) from None


def first_bytes(data: bytes, cap: int) -> bytes:
    """At most ``cap`` bytes from the start of ``data``: whole lines when a line ends within them,
    else cut between two characters, never inside a UTF-8 sequence."""
    cut = data.rfind(b"\n", 0, cap) + 1
    if not cut:
        cut = cap
        while cut > 0 and data[cut] & 0xC0 == 0x80:  # a continuation byte: the cut would split a character
            cut -= 1
    return data[:cut]


def last_bytes(data: bytes, cap: int) -> bytes:
    """At most ``cap`` bytes from the end of ``data``: whole lines when one starts within them,
    else cut between two characters, never inside a UTF-8 sequence."""
    start = len(data) - cap
    newline = data.find(b"\n", start - 1)  # the first line starting at or after ``start``
    if 0 <= newline < len(data) - 1:
        return data[newline + 1:]
    while start < len(data) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]
