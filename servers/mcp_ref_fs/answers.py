"""Answers that fit the host: the answer budget, and the cues that say how to get the rest.

Hosts cut what a tool returns before their model sees it, each in its own way. Each budget is
about 90 % of the largest result the pinned host passed its model whole (``make hosts``, scenario
``limit``: a bisection to 250 bytes; see docs/filesystem-server.md "Answers that fit the host"):

==================== ================= ==================================================
client (clientInfo)   budget (bytes)    what the host does (measured whole / cut)
==================== ================= ==================================================
``claude-code``       45,000            past 50,000 characters (12,500 estimated tokens) it
                                        counts the tokens and, past 25,000, saves the
                                        result to a file and shows a notice (50,000 / 50,250)
``codex-mcp-client``  10,000            keeps the first and the last part of a longer
                                        result, "…N tokens truncated…" between (11,750 / 12,000)
``gemini-cli-mcp-     36,000            cuts a one-part result of over 40,000 characters to
client``                                its first 8,000 and last 32,000 (39,750 / 40,000)
``copilot-cli``       18,000            saves a result over 20 KiB to a temporary file and
                                        shows its first 10 lines (20,250 / 20,500)
anyone else           10,000            the smallest of the above: it fits every known host
==================== ================= ==================================================

The budget bounds the UTF-8 bytes of every text block of one answer together (the text the
model reads; the tools that carry text have no ``structuredContent``, so nothing is sent
twice). ``--max-answer-bytes N`` sets it for every client instead. Bytes are a safe measure for
hosts that count characters (a UTF-8 byte count is never below the UTF-16 length) or estimate
tokens at four characters each.

The cue of a cut answer names what was shown and the exact arguments of the next call, as
JSON, so a model can continue where the cut fell; :func:`next_call` writes it.
"""

from __future__ import annotations

import json
from array import array
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable

from mcp_ref import ToolError, ToolResult, text

if TYPE_CHECKING:
    import os

    from mcp_ref import RequestContext

    from .places import Location

from .config import MIN_ANSWER_BYTES

DEFAULT_ANSWER_BYTES = 10_000
HOST_ANSWER_BYTES = {
    "claude-code": 45_000,
    "codex-mcp-client": 10_000,
    "gemini-cli-mcp-client": 36_000,
    "copilot-cli": 18_000,
}
CUE_BYTES = 600  # kept free of data for the cue blocks, beyond the arguments they repeat
# The least data_budget leaves, whoever asks and whatever the arguments: a file of at most this
# many bytes fits any answer whole, so reading one needs no budget reckoned.
LEAST_DATA_BYTES = MIN_ANSWER_BYTES // 2


def text_answer(body: str, notes: list[str] | None = None) -> ToolResult:
    """The answer of a tool that carries text: the data in the first block, each note (cues,
    what was skipped) in a block of its own, and no ``structuredContent``: hosts that prefer it
    (Codex, many SDK clients) would show their model metadata only, or a second copy of the text,
    and hosts that count both (Copilot CLI) would spend half their room on the copy."""
    return ToolResult([text(body)] + [text(note) for note in notes or ()])


# Hosts measured to read the first text block of a result without ``structuredContent`` as JSON:
# Gemini CLI 0.61 wraps its stdio transport so that text which parses becomes structuredContent,
# and its SDK then fails the call ("expected record") when that value is not an object: a
# directory_tree page (a JSON array), a file that holds [1, 2] or 42. An empty object keeps it
# from doing so; it shows its model the content blocks all the same.
HOSTS_PARSING_TEXT = {"gemini-cli-mcp-client": "Gemini CLI"}
_JSON_NOT_OBJECT = frozenset('["-0123456789tfn')  # how JSON that is not an object starts


def for_client(result: ToolResult | str, client_info: dict[str, Any] | None) -> ToolResult | str:
    """``result`` (a ``ToolResult``, or a plain text answer) as ``client_info``'s host handles it:
    for a host of ``HOSTS_PARSING_TEXT``, an empty ``structuredContent`` when the first text block
    would parse as JSON other than an object. (The tools' wrapper, ``FsTools._register``, calls it
    for those hosts only: every other answer goes out as the tool made it.)"""
    name = client_info.get("name") if isinstance(client_info, dict) else None
    if not isinstance(name, str) or name not in HOSTS_PARSING_TEXT:
        return result
    if isinstance(result, str):
        result = ToolResult([text(result)])
    if result.has_structured_content or result.is_error or not result.content:
        return result
    first = result.content[0]
    body = first.get("text") if first.get("type") == "text" else None
    if not isinstance(body, str) or body.lstrip()[:1] not in _JSON_NOT_OBJECT:
        return result
    try:
        json.loads(body)
    except ValueError:
        return result
    return ToolResult(result.content, {}, result.is_error)


# Hosts measured to pass no image or audio block of a tool result to their model: GitHub Copilot
# CLI 1.0.102 sent an empty tool message in its place (chat completions, responses and anthropic
# providers alike), where Claude Code, Codex and Gemini CLI passed the image on.
HOSTS_WITHOUT_MEDIA = {"copilot-cli": "GitHub Copilot CLI"}


def media_note(path: str, mime: str, size: int, kind: str, client_info: dict[str, Any] | None) -> str:
    """The text beside a media block: what the file is, so a model whose host dropped the block
    still learns it, and, for a host known to drop such blocks, that it did."""
    note = f"{path}: {mime}, {count(size)} bytes, sent as {kind} block."
    name = client_info.get("name") if isinstance(client_info, dict) else None
    host = HOSTS_WITHOUT_MEDIA.get(name) if isinstance(name, str) else None
    if host and kind != "an embedded resource":
        note += f" {host} passes no image or audio from a tool to its model, so this line is all of it that reaches you."
    else:
        note += " If it does not reach you, the host did not pass it on."
    return note


def answer_budget(configured: int | None, client_info: dict[str, Any] | None) -> int:
    """The byte budget of one answer: ``--max-answer-bytes`` when given, else the budget
    measured for the client that said who it is, else the conservative default."""
    if configured is not None:
        return configured
    name = client_info.get("name") if isinstance(client_info, dict) else None
    return HOST_ANSWER_BYTES.get(name, DEFAULT_ANSWER_BYTES) if isinstance(name, str) else DEFAULT_ANSWER_BYTES


def surely_fits(size: int, ctx: Any, configured: int | None, arguments: dict[str, Any]) -> bool:
    """Does ``size`` bytes of data fit in :func:`data_budget`, whatever the cues repeating
    ``arguments`` take, judged without encoding them? For JSON values (what a request's arguments
    are), each character of their ``repr`` stands for at most four bytes of
    :func:`call_arguments`' UTF-8 (a printable character beyond the BMP: one in ``repr``, four in
    UTF-8; a control character is four in ``repr``, six as a JSON escape), so
    ``12 * len(repr(arguments))`` bounds what the two cues take, with room to spare. A whole file
    or listing that fits so skips the JSON of its arguments: 7.5 % of a small read (issue 21)."""
    budget = answer_budget(configured, getattr(ctx, "client_info", None))
    return size <= budget - CUE_BYTES - 12 * len(repr(arguments))


def data_budget(ctx: Any, configured: int | None, arguments: dict[str, Any]) -> int:
    """What one answer to ``ctx``'s client may spend on data: its budget (:func:`answer_budget`)
    less room for the cues repeating ``arguments``."""
    budget = answer_budget(configured, getattr(ctx, "client_info", None))
    return max(budget - CUE_BYTES - 2 * len(call_arguments(arguments).encode("utf-8")), LEAST_DATA_BYTES)


# --- an answer's bytes on the wire, reserved before the file is read ------------------------------

# An answer estimated at this many bytes or more is reserved on the connection's output budget
# (``RequestContext.reserve_output``) before the file is read, so memory stays bounded whatever a
# client sends or fails to read; below it, the concurrency limit bounds what answers can hold.
RESERVE_FROM_BYTES = 256 * 1024


def text_answer_bytes(size: int) -> int:
    """About the bytes an answer carrying ``size`` bytes of text takes on the wire: the text comes
    once (the reading tools have no ``structuredContent``), a little longer once escaped."""
    return size + size // 8 + 4096


def base64_answer_bytes(size: int) -> int:
    """About the bytes an answer carrying a ``size``-byte file as base64 takes on the wire."""
    return (size + 2) // 3 * 4 + 4096


async def reserve_for(ctx: RequestContext, nbytes: int) -> None:
    """Reserve a large answer's bytes on the output budget before it is made (small ones: nothing)."""
    if nbytes >= RESERVE_FROM_BYTES:
        await ctx.reserve_output(nbytes)


def call_arguments(arguments: dict[str, Any], **changes: Any) -> str:
    """``arguments`` with ``changes`` applied (None removes a key), as compact JSON."""
    merged = {**arguments, **changes}
    return json.dumps({key: value for key, value in merged.items() if value is not None}, ensure_ascii=False,
                      separators=(", ", ": "))


def next_call(tool: str, arguments: dict[str, Any], **changes: Any) -> str:
    """The exact next call, as a model would write it: ``tool {"path": ..., "start": 40}``."""
    return f"{tool} {call_arguments(arguments, **changes)}"


def count(number: int) -> str:
    """A count as people read it: 40,000."""
    return f"{number:,}"


def fit_lines(lines: list[str], start: int, room: int) -> int:
    """How many of ``lines[start:]`` fit in ``room`` bytes, each with its newline (at least one
    when any is left, so a page always moves forward)."""
    used = 0
    end = start
    for line in lines[start:]:
        used += len(line.encode("utf-8")) + 1
        if used > room and end > start:
            break
        end += 1
    return end - start


# --- line counts and where lines start ------------------------------------------------------------

INDEX_CHUNK = 1024 * 1024  # one checkpoint per MiB: a window read scans at most this much to find its start
_INDEXES: OrderedDict[tuple[int, int, int, int], LineIndex] = OrderedDict()
MAX_INDEXES = 16  # files remembered (a model pages through one or two at a time)


class LineIndex:
    """How many lines a file has, and, per MiB, how many lines ended before that byte: so a
    window at line 39,000 of a 2 MB file starts reading near it, not from the top. Built once per
    file version (device, inode, size, modification time) and kept for the next pages."""

    __slots__ = ("lines", "ends_before", "complete")

    def __init__(self) -> None:
        self.lines = 0  # newlines seen, plus one for a last line without its newline
        self.ends_before = array("q")  # [k]: newlines before byte k * INDEX_CHUNK
        self.complete = False

    def start_of(self, line: int) -> tuple[int, int]:
        """``(byte, lines before it)`` of the last checkpoint whose partial first line lies
        before ``line`` (0-based): reading from there reaches ``line`` within one chunk."""
        ends = self.ends_before
        low, high = 0, len(ends) - 1
        while low < high:  # the last k with ends[k] < line (k = 0 is always one: ends[0] == 0)
            middle = (low + high + 1) // 2
            if ends[middle] < line:
                low = middle
            else:
                high = middle - 1
        return low * INDEX_CHUNK, ends[low] if ends else 0


def line_index(info: os.stat_result, read_at: Callable[[int, int], bytes], stop: Callable[[], bool]) -> LineIndex:
    """The file's :class:`LineIndex` (cached per version); ``complete`` is False when ``stop``
    ended the count early (the caller then says the line count is unknown)."""
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    index = _INDEXES.get(key)
    if index is not None:
        _INDEXES.move_to_end(key)
        return index
    index = LineIndex()
    newlines = 0
    position = 0
    last = b""
    while True:
        if stop():
            return index
        chunk = read_at(position, INDEX_CHUNK)
        if not chunk:
            break
        index.ends_before.append(newlines)
        newlines += chunk.count(b"\n")
        last = chunk[-1:]
        position += len(chunk)
        if len(chunk) < INDEX_CHUNK:
            break
    index.lines = newlines + (1 if last and last != b"\n" else 0)
    index.complete = True
    _INDEXES[key] = index
    if len(_INDEXES) > MAX_INDEXES:
        _INDEXES.popitem(last=False)
    return index


# --- the answer of every tool, and text cut to a byte limit (reads, listings, writes) ----------------


def answer(body: str, notes: list[str] | None = None, **structured: Any) -> ToolResult:
    """The text block (plus one block per note, so ``content`` stays exactly the data)."""
    blocks = [text(body)] + [text(note) for note in notes or ()]
    extra = {"notes": notes} if notes else {}
    return ToolResult(blocks, {"content": body, **structured, **extra})


def binary_file(location: Location, sample: bytes) -> ToolError:
    """The refusal of a binary file (its first bytes, ``sample``, said so) by a tool that reads text."""
    from . import content

    mime = content.sniff_mime(sample[:8192], location.parts[-1] if location.parts else "")
    return ToolError(f"{location.display} is a binary file ({mime}), not UTF-8 text; use read_media_file to read it")


def not_utf8(location: Location) -> ToolError:
    """The refusal of a file that is not strict UTF-8 by a tool that reads text."""
    return ToolError(f"{location.display} is not valid UTF-8 text; use read_media_file to read it")


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
