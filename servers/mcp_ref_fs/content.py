"""What a file's bytes mean: text or binary, MIME type, line windows, edits and diffs.

The tools of mcp-ref-fs split every operation in two. ``root.py`` decides *which* file may be
touched and does the touching; this module decides *what the content means*. Everything here is
pure: bytes or text in, data out, no paths opened, no clock, no state but one cached table. That
keeps the rules a drop-in replacement for the official ``@modelcontextprotocol/server-filesystem``
must get right (sniffing, line counting, ``edit_file`` matching) testable with plain values.

* **Text or binary.** ``looks_binary`` judges a file from its first bytes (NUL bytes, invalid
  UTF-8, too many control characters); ``decode_text`` decodes strictly and raises ``NotText``.
  A UTF-8 byte order mark is text; ``split_bom`` separates it so a write can put it back.
* **MIME types.** ``sniff_mime`` trusts magic bytes first, then the extension (the server's own
  table, ``mimetable.py``: neither Python's, which changes between versions, nor the machine's
  ``/etc/mime.types``, so every machine and Python answers alike), then the text test.
* **Line windows.** ``head_lines`` reads forwards only as far as needed, ``tail_lines`` reads
  backwards block by block through a ``read_at(offset, length)`` callback (a ``pread``), and
  ``window_lines`` slices decoded text. A line ends with ``\\n``; a last line without one counts.
* **Edits.** ``apply_edits`` implements ``edit_file``: exact match first, then a match that
  ignores leading and trailing whitespace on each line, re-indenting the replacement. It never
  guesses between several matches, and its errors say what to change, because the reader is a
  language model that will retry. ``unified_diff`` and ``diff_stats`` show the result.
"""

from __future__ import annotations

import codecs
import functools
import posixpath
import re
from collections import Counter
from typing import Callable, Iterable, Iterator

__all__ = [
    "BOM",
    "EditError",
    "NotText",
    "apply_edits",
    "decode_text",
    "diff_stats",
    "format_size",
    "head_lines",
    "line_count",
    "looks_binary",
    "sniff_mime",
    "split_bom",
    "tail_lines",
    "unified_diff",
    "window_lines",
]

# How listings tag each kind of entry (list_directory, list_directory_with_sizes, a directory
# read as a resource): the official server's [FILE] and [DIR], plus our [LINK] and [OTHER].
LISTING_TAGS = {"file": "[FILE]", "directory": "[DIR]", "symlink": "[LINK]", "other": "[OTHER]"}

BOM = codecs.BOM_UTF8  # b"\xef\xbb\xbf"


class NotText(ValueError):
    """The bytes are not UTF-8 text (NUL bytes or an invalid UTF-8 sequence)."""


class EditError(ValueError):
    """An edit cannot be applied; the message tells the caller (a model) what to change."""


# ---------------------------------------------------------------------------------------------
# Text or binary
# ---------------------------------------------------------------------------------------------

# Control characters that real text files contain: tab, newline, carriage return, form feed,
# backspace (man pages) and escape (ANSI colours in logs). Every other C0 control and DEL counts
# against the sample.
_TEXT_CONTROLS = "\t\n\r\f\b\x1b"
# The others as bytes: in UTF-8 they are single bytes that occur inside no multi-byte sequence,
# so they can be counted in the raw sample (bytes.translate, in C) rather than in decoded text.
_CONTROL_BYTES = bytes(c for c in [*range(0x20), 0x7F] if chr(c) not in _TEXT_CONTROLS)
_utf8_decoder = codecs.getincrementaldecoder("utf-8")
# More than one control character in ten: no editor wrote this.
_MAX_CONTROL_RATIO = 0.10


def split_bom(data: bytes) -> tuple[bytes, bytes]:
    """``(bom, rest)``: the UTF-8 byte order mark if ``data`` starts with one (else ``b""``) and the remainder."""
    if data.startswith(BOM):
        return BOM, data[len(BOM):]
    return b"", data


def looks_binary(sample: bytes) -> bool:
    """Whether a file whose first bytes (up to 8 KiB) are ``sample`` should be treated as binary.

    Binary means: a NUL byte, or bytes that are not UTF-8, or more than 10% control characters
    other than tab, newline, carriage return, form feed, backspace and escape. A sample cut in
    the middle of a multi-byte character is still text (the cut is the sampler's, not the
    file's). A UTF-8 byte order mark is text. An empty sample is text.
    """
    if b"\0" in sample:
        return True
    body = split_bom(sample)[1]
    if body.isascii():
        characters = len(body)
    else:
        # An incremental decoder with final=False keeps an incomplete sequence at the end pending
        # instead of failing on it; anything invalid before that still raises.
        try:
            characters = len(_utf8_decoder(errors="strict").decode(body, final=False))
        except UnicodeDecodeError:
            return True
    controls = len(body) - len(body.translate(None, _CONTROL_BYTES))
    return controls > characters * _MAX_CONTROL_RATIO


def decode_text(data: bytes) -> str:
    """The UTF-8 text in ``data``, without a leading byte order mark.

    Strict: raises ``NotText`` if ``data`` holds a NUL byte or any invalid UTF-8 (including a
    truncated sequence at the end). Nothing else is changed: line endings stay as they are.
    Callers that write the text back use ``split_bom`` to remember the mark.
    """
    bom, rest = split_bom(data)
    nul = rest.find(b"\0")
    if nul >= 0:
        raise NotText(f"not a text file: NUL byte at offset {nul + len(bom)}")
    try:
        return rest.decode("utf-8")
    except UnicodeDecodeError as error:
        offset = error.start + len(bom)
        raise NotText(f"not UTF-8 text: invalid byte 0x{rest[error.start]:02x} at offset {offset}") from None


# ---------------------------------------------------------------------------------------------
# MIME types
# ---------------------------------------------------------------------------------------------

# Signatures that are a fixed prefix. Their order does not matter: none is a prefix of another.
_MAGIC_PREFIXES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"II*\x00", "image/tiff"),  # little-endian TIFF
    (b"MM\x00*", "image/tiff"),  # big-endian TIFF
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"PK\x05\x06", "application/zip"),  # an empty archive
    (b"PK\x07\x08", "application/zip"),  # a spanned archive
    (b"\x1f\x8b\x08", "application/gzip"),  # magic + compression method 8 (deflate, the only one)
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"\xff\xfb", "audio/mpeg"),  # MPEG-1 layer III frame sync, no ID3 tag
    (b"\xff\xf3", "audio/mpeg"),  # MPEG-2 layer III
    (b"\xff\xf2", "audio/mpeg"),  # MPEG-2 layer III, protected
    (b"OggS\x00", "audio/ogg"),  # capture pattern + stream structure version 0
    (b"fLaC", "audio/flac"),
    (b"MThd\x00\x00\x00\x06", "audio/midi"),  # header chunk, whose length is always 6
    (b"\x00asm", "application/wasm"),
)

# ISO base media files (MP4 and relatives) say what they are in the major brand of their
# leading ``ftyp`` box. Unlisted brands (isom, mp41, mp42, avc1, ...) are video.
_FTYP_BRANDS = {
    b"M4A ": "audio/mp4",
    b"M4B ": "audio/mp4",  # audiobook
    b"avif": "image/avif",
    b"avis": "image/avif",
    b"heic": "image/heic",
    b"heix": "image/heic",
    b"qt  ": "video/quicktime",
}

# BMP has only a two-letter magic ("BM"), which plain text can start with too. The DIB header
# size at offset 14 is one of a few values, which makes the test reliable.
_BMP_DIB_SIZES = {12, 16, 40, 52, 56, 64, 108, 124}

# An SVG document: optional BOM, whitespace, XML declaration, comments and doctype, then <svg.
# The regular expressions of this module are kept as source and compiled by ``re`` (which caches
# them) on first use: start-up, and requests that need none of them, do not pay for compiling.
_SVG = rb"\A(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*>\s*)?(?:(?:<!--.*?-->|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>)\s*)*<svg[\s>/]"

_ZIP_CONTAINERS = {".docx", ".xlsx", ".pptx", ".odt", ".ods", ".odp", ".epub", ".jar"}

_SNIFF_BYTES = 8192


@functools.cache
def _extension_types() -> dict[str, str]:
    from .mimetable import EXTENSION_TYPES  # lazily, like difflib below: cold start pays for neither

    return EXTENSION_TYPES


def _sniff_magic(head: bytes) -> str | None:
    for prefix, mime in _MAGIC_PREFIXES:
        if head.startswith(prefix):
            return mime
    if head[:4] == b"RIFF":
        return {b"WEBP": "image/webp", b"WAVE": "audio/wav"}.get(head[8:12])
    if head[4:8] == b"ftyp" and len(head) >= 12:
        return _FTYP_BRANDS.get(head[8:12], "video/mp4")
    if head[:2] == b"BM" and int.from_bytes(head[14:18], "little") in _BMP_DIB_SIZES:
        return "image/bmp"
    # ICO: reserved 0, type 1, then a non-zero image count.
    if head[:4] == b"\x00\x00\x01\x00" and len(head) >= 6 and head[4:6] != b"\x00\x00":
        return "image/vnd.microsoft.icon"
    # ID3v2 tag in front of MP3 frames: "ID3", major version 2-4, revision, flags, and a size of
    # four 7-bit bytes. Checking all of it keeps a text file starting with "ID3" text.
    if head[:3] == b"ID3" and len(head) >= 10 and head[3] in (2, 3, 4) and all(b < 0x80 for b in head[6:10]):
        return "audio/mpeg"
    if re.compile(_SVG, re.DOTALL).match(head, 0, _SNIFF_BYTES):
        return "image/svg+xml"
    return None


def sniff_mime(head: bytes, name: str) -> str:
    """The MIME type of a file named ``name`` (a base name or path) whose content starts with ``head``.

    Order: magic bytes (a PNG named ``x.txt`` is ``image/png``), then the extension, then
    ``text/plain`` if the head looks like text, else ``application/octet-stream``. One
    exception: ZIP is a container, so a ZIP whose extension names a ZIP-based format (``.docx``,
    ``.xlsx``, ``.epub``, ``.jar``, ...) gets that format's type. Pass at least the first 32
    bytes; the text test looks at up to 8 KiB.
    """
    ext = posixpath.splitext(name)[1].lower()
    magic = _sniff_magic(head)
    if magic == "application/zip" and ext in _ZIP_CONTAINERS:
        return _extension_types()[ext]
    if magic is not None:
        return magic
    known = _extension_types().get(ext) if ext else None
    if known is not None:
        return known
    return "application/octet-stream" if looks_binary(head[:_SNIFF_BYTES]) else "text/plain"


# ---------------------------------------------------------------------------------------------
# Line windows
# ---------------------------------------------------------------------------------------------


def _check_count(name: str, value: int) -> None:
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")


def head_lines(chunks: Iterable[bytes], n: int) -> tuple[bytes, bool]:
    """The first ``n`` lines of a byte stream given as chunks, and whether anything follows them.

    Lines end with ``b"\\n"`` (so ``\\r\\n`` works unchanged); a last line without one counts.
    The iterator is consumed lazily: it stops at the chunk that completes line ``n``. Only when
    that line ends exactly at the end of a chunk is one more non-empty chunk pulled, to learn
    whether anything follows. ``n == 0`` returns ``b""`` (and pulls one chunk for the flag).
    A negative ``n`` is the caller's mistake: ``ValueError``.
    """
    _check_count("n", n)
    it = iter(chunks)
    if n == 0:
        return b"", _any_content(it)
    out = bytearray()
    missing = n  # newlines still to find
    for chunk in it:
        found = chunk.count(b"\n")
        if found < missing:
            out += chunk
            missing -= found
            continue
        end = -1
        for _ in range(missing):
            end = chunk.index(b"\n", end + 1)
        out += chunk[: end + 1]
        return bytes(out), end + 1 < len(chunk) or _any_content(it)
    return bytes(out), False  # the stream ended first: everything was returned


def _any_content(it: Iterator[bytes]) -> bool:
    # Empty chunks say nothing; the first non-empty one answers.
    return any(chunk for chunk in it)


def tail_lines(read_at: Callable[[int, int], bytes], size: int, n: int, block: int = 65536) -> bytes:
    """The last ``n`` lines of a file of ``size`` bytes, read backwards in blocks.

    ``read_at(offset, length)`` must return exactly ``length`` bytes from ``offset`` (like
    ``os.pread`` on a regular file). Blocks are read from the end towards the start and the
    reading stops at the block that holds the start of the first wanted line, so a huge file
    with short lines costs one read. A newline ending the file ends the last line; it does not
    start an empty one. Fewer than ``n`` lines: the whole file. ``n == 0`` or an empty file:
    ``b""`` without reading. Negative ``n`` or a non-positive ``block``: ``ValueError``.
    """
    _check_count("n", n)
    if block <= 0:
        raise ValueError(f"block must be positive, got {block}")
    if n == 0:
        return b""
    blocks: list[bytes] = []  # newest first: blocks[0] is the end of the file
    newlines = 0
    pos = size
    while pos > 0:
        start = max(0, pos - block)
        data = read_at(start, pos - start)
        blocks.append(data)
        # The newline that ends the file (the first byte seen) terminates the last line.
        search_end = len(data) - 1 if pos == size and data.endswith(b"\n") else len(data)
        while (cut := data.rfind(b"\n", 0, search_end)) >= 0:
            newlines += 1
            if newlines == n:  # this newline ends the line before the first wanted one
                blocks[-1] = data[cut + 1:]
                return b"".join(reversed(blocks))
            search_end = cut
        pos = start
    return b"".join(reversed(blocks))


def _split_lines(text: str) -> list[str]:
    # Lines with their "\n". str.splitlines would also split on \r, \f, \x1c, \u2028, ...,
    # which are characters inside a line for every tool that counts lines by "\n".
    lines = text.split("\n")
    last = lines.pop()
    lines = [line + "\n" for line in lines]
    if last:
        lines.append(last)
    return lines


def line_count(text: str) -> int:
    """Number of lines: newlines, plus one for a last line without a newline. ``""`` has 0."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def window_lines(text: str, offset: int, limit: int | None) -> tuple[str, int]:
    """Lines ``[offset, offset + limit)`` of ``text`` (0-based, with their newlines) and the total line count.

    ``limit=None`` means to the end. An ``offset`` past the end gives ``""`` (with the true
    total, so the caller can say how long the file is). Negative values: ``ValueError``.
    """
    _check_count("offset", offset)
    if limit is not None:
        _check_count("limit", limit)
    lines = _split_lines(text)
    end = len(lines) if limit is None else offset + limit
    return "".join(lines[offset:end]), len(lines)


def format_size(n: int) -> str:
    """A byte count in 1024-based units, as the official server prints it.

    ``"0 B"``, ``"1023 B"``, ``"1.00 KB"``, ``"1.50 MB"``, ``"2.00 GB"``; TB is the largest unit.
    The unit is chosen by magnitude before rounding, so 1048575 bytes is ``"1024.00 KB"``.
    """
    _check_count("n", n)
    units = ("KB", "MB", "GB", "TB")
    if n < 1024:
        return f"{n} B"
    exponent = 1
    while exponent < len(units) and n >= 1024 ** (exponent + 1):
        exponent += 1
    return f"{n / 1024 ** exponent:.2f} {units[exponent - 1]}"


# ---------------------------------------------------------------------------------------------
# Edits
# ---------------------------------------------------------------------------------------------

_MAX_MATCHES = 1000  # stop counting ambiguous matches here ("1000+ places")
_MAX_LISTED = 10  # line numbers named in an ambiguity message
_MAX_SHOWN_LINES = 10  # lines of the closest match quoted in a not-found message
_MAX_SHOWN_CHARS = 200  # characters per quoted line
_COMMON_LINE = 64  # a line found more often than this in the file says nothing about location
_MAX_WINDOWS = 2000  # candidate windows considered for the closest match
_FINALISTS = 8  # candidates scored with the (slow) exact SequenceMatcher ratio
_EXCERPT_CHARS = 600  # text compared per candidate: enough to judge, bounded cost
_MIN_SIMILARITY = 0.5  # below this, a "closest match" would mislead more than help
_MAX_DISTINCT_LINES = 0x10FFFF - 1  # line codes are characters 1..this (see _find_blocks)


def _dominant_newline(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf > text.count("\n") - crlf else "\n"


def apply_edits(original: str, edits: list[tuple[str, str]]) -> str:
    """``original`` with each ``(oldText, newText)`` edit applied in order, each to the previous result.

    Matching, per edit:

    1. **Exact.** If ``oldText`` occurs exactly once (overlapping occurrences count), that
       occurrence is replaced by ``newText`` verbatim: ``$&``, ``$1``, ``\\1`` and the like are
       never expanded. It may start and end inside lines. Several occurrences: ``EditError``
       naming their lines, even if the tolerant step would find one.
    2. **Whitespace-tolerant.** Otherwise ``oldText`` is taken as whole lines and compared with
       every block of as many file lines, each line with leading and trailing whitespace removed.
       One matching block is replaced by ``newText``'s lines, re-indented: a line that starts
       with the indentation of oldText's first non-blank line gets the indentation of the
       matched file line instead (deeper lines keep their extra indentation; shallower lines
       lose the same amount from the file's indentation), whitespace-only lines become empty,
       and the file's newline after the block is kept whether or not ``newText`` ends with one.
       Several blocks: ``EditError`` naming them. None: ``EditError`` quoting the most similar
       block of the file, if any is at least half similar.

    Empty ``oldText``: ``EditError``. Line endings: the file's dominant newline (``\\r\\n`` when
    most line breaks are ``\\r\\n``) is detected once; the file and both texts are matched with
    ``\\n`` and the result gets the dominant newline on every line, so a CRLF file stays CRLF
    (a file with mixed endings comes back uniform). A byte order mark is the caller's: strip it
    with ``split_bom`` before decoding and put it back when writing. All or nothing: the first
    failing edit raises and nothing is returned; line numbers in messages count in the text as
    the earlier edits left it.
    """
    newline = _dominant_newline(original)
    text = original.replace("\r\n", "\n")
    for number, (old, new) in enumerate(edits, 1):
        text = _apply_one(text, old.replace("\r\n", "\n"), new.replace("\r\n", "\n"), number)
    return text.replace("\n", newline) if newline != "\n" else text


def _apply_one(text: str, old: str, new: str, number: int) -> str:
    if not old:
        raise EditError(
            f"oldText of edit {number} is empty; to insert text, put a neighbouring line in oldText "
            "and repeat it in newText (to create or overwrite a whole file, use write_file)"
        )
    positions = _occurrences(text, old)
    if len(positions) == 1:
        at = positions[0]
        return text[:at] + new + text[at + len(old):]  # slicing: newText is never interpreted
    if positions:
        lines = _line_numbers(text, positions)
        raise EditError(f"oldText of edit {number} {_places(len(positions), lines)}; add surrounding lines to make it unique")
    return _apply_tolerant(text, old, new, number)


def _occurrences(text: str, old: str) -> list[int]:
    # Overlapping occurrences count: "aa" occurs twice in "aaa", so it is not unique there.
    found: list[int] = []
    at = text.find(old)
    while at >= 0 and len(found) < _MAX_MATCHES:
        found.append(at)
        at = text.find(old, at + 1)
    return found


def _line_numbers(text: str, positions: list[int]) -> list[int]:
    numbers, line, previous = [], 1, 0
    for at in positions[:_MAX_LISTED]:
        line += text.count("\n", previous, at)
        previous = at
        numbers.append(line)
    return numbers


def _places(count: int, labels: list[int] | list[str]) -> str:
    more = ", ..." if count > len(labels) else ""
    amount = f"{count}+" if count >= _MAX_MATCHES else str(count)
    return f"matches {amount} places (lines {', '.join(map(str, labels))}{more})"


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _apply_tolerant(text: str, old: str, new: str, number: int) -> str:
    # Whole lines, without the final newline's empty remainder: "a\nb\n" is the lines a, b.
    lines = text.split("\n") if text else []
    trailing_newline = text.endswith("\n")
    if trailing_newline:
        lines.pop()
    old_lines = old.split("\n")
    if old.endswith("\n") and len(old_lines) > 1:
        old_lines.pop()
    new_lines = new.split("\n") if new else []
    if new.endswith("\n"):
        new_lines.pop()

    stripped = [line.strip() for line in lines]
    old_stripped = [line.strip() for line in old_lines]
    starts = _find_blocks(stripped, old_stripped, number)
    k = len(old_lines)
    if len(starts) > 1:
        labels = [f"{s + 1}-{s + k}" if k > 1 else str(s + 1) for s in starts[:_MAX_LISTED]]
        raise EditError(
            f"oldText of edit {number} {_places(len(starts), labels)} when leading and trailing whitespace "
            "is ignored; add surrounding lines to make it unique"
        )
    if not starts:
        raise EditError(_not_found(lines, stripped, old_stripped, number))

    start = starts[0]
    anchor = next((j for j, s in enumerate(old_stripped) if s), 0)
    replacement = _reindent(new_lines, _indent(old_lines[anchor]), _indent(lines[start + anchor]))
    lines[start:start + k] = replacement
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if trailing_newline else "")


def _find_blocks(stripped: list[str], old_stripped: list[str], number: int) -> list[int]:
    """Start indexes of every block of ``stripped`` equal to ``old_stripped`` (overlaps count).

    Each distinct oldText line gets a one-character code (1, 2, ...); a file line gets its code
    or "\\0" if oldText lacks it. Finding a block of lines is then finding a substring, which
    ``str.find`` does in C in linear time whatever the input, so a 1000-line oldText against a
    file of a million lines stays fast.
    """
    codes: dict[str, str] = {}
    for line in old_stripped:
        if line not in codes:
            if len(codes) >= _MAX_DISTINCT_LINES:
                raise EditError(f"oldText of edit {number} has too many distinct lines; split it into several edits")
            codes[line] = chr(len(codes) + 1)
    needle = "".join(codes[line] for line in old_stripped)
    haystack = "".join(codes.get(line, "\0") for line in stripped)
    return _occurrences(haystack, needle)


def _reindent(new_lines: list[str], old_indent: str, file_indent: str) -> list[str]:
    out = []
    for line in new_lines:
        if not line.strip():
            out.append("")
        elif line.startswith(old_indent):
            out.append(file_indent + line[len(old_indent):])
        elif old_indent.startswith(indent := _indent(line)):
            # Shallower than oldText's first line: dedent the file's indentation by as much.
            cut = len(old_indent) - len(indent)
            out.append(file_indent[: max(0, len(file_indent) - cut)] + line[len(indent):])
        else:
            out.append(line)  # tabs where oldText had spaces (or the reverse): no safe mapping
    return out


def _not_found(lines: list[str], stripped: list[str], old_stripped: list[str], number: int) -> str:
    head = f"oldText of edit {number} not found, not even ignoring leading and trailing whitespace"
    if number > 1:
        head += f" (edits 1-{number - 1} were applied first; this edit sees their result)"
    window = _closest_window(stripped, old_stripped)
    if window is None:
        return f"{head}; nothing similar either: read the file again and copy the text exactly"
    start, end = window
    shown = []
    for line in lines[start:min(end, start + _MAX_SHOWN_LINES)]:
        shown.append(line if len(line) <= _MAX_SHOWN_CHARS else line[:_MAX_SHOWN_CHARS] + "…")
    if end - start > _MAX_SHOWN_LINES:
        shown.append(f"… ({end - start - _MAX_SHOWN_LINES} more lines)")
    quoted = "\n".join(shown)
    return f"{head}; closest match at lines {start + 1}-{end}:\n{quoted}\nCopy the current text exactly into oldText"


def _closest_window(stripped: list[str], old_stripped: list[str]) -> tuple[int, int] | None:
    """``(start, end)`` of the file block most similar to oldText, or ``None`` if nothing is close.

    Candidates (at most ``_MAX_WINDOWS``): blocks that contain oldText lines at the same offsets
    ("votes", ignoring lines too common to locate anything), then blocks whose line facing
    oldText's first non-blank line contains one of its words. They are ranked cheaply (votes,
    then shared words) and only the best few get ``difflib.SequenceMatcher``'s ratio on a
    bounded excerpt of their stripped text.
    """
    n, k = len(stripped), len(old_stripped)
    if n == 0:
        return None
    last_start = max(0, n - k)

    def clamp(start: int) -> int:
        return min(max(start, 0), last_start)

    offsets: dict[str, list[int]] = {}
    for j, line in enumerate(old_stripped):
        if line:
            offsets.setdefault(line, []).append(j)
    seen: dict[str, list[int]] = {}
    for i, line in enumerate(stripped):
        if line in offsets:
            seen.setdefault(line, []).append(i)
    votes: Counter[int] = Counter()
    for line, where in seen.items():
        if len(where) <= _COMMON_LINE:
            for j in offsets[line]:
                votes.update(clamp(i - j) for i in where)
    candidates = dict.fromkeys(start for start, _ in votes.most_common(_MAX_WINDOWS))

    anchor = next((j for j, s in enumerate(old_stripped) if s), None)
    if anchor is not None:
        words = set(re.findall(r"\w{3,}", old_stripped[anchor])) or {old_stripped[anchor]}
        for i, line in enumerate(stripped):
            if len(candidates) >= _MAX_WINDOWS:
                break
            if any(word in line for word in words):
                candidates.setdefault(clamp(i - anchor))

    target = _excerpt(old_stripped)
    target_words = set(target.split())

    def shared_words(start: int) -> int:
        return len(target_words.intersection(_excerpt(stripped[start:start + k]).split()))

    finalists = sorted(candidates, key=lambda s: (votes[s], shared_words(s)), reverse=True)[:_FINALISTS]
    import difflib

    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)  # seq2 is the side SequenceMatcher indexes; index oldText once
    best, best_ratio = 0, 0.0
    for start in finalists:
        matcher.set_seq1(_excerpt(stripped[start:start + k]))
        ratio = matcher.ratio()
        if ratio > best_ratio:  # strictly: on a tie the better-ranked candidate stays
            best, best_ratio = start, ratio
    return (best, min(best + k, n)) if best_ratio >= _MIN_SIMILARITY else None


def _excerpt(stripped_lines: list[str]) -> str:
    out, size = [], 0
    for line in stripped_lines:
        if size >= _EXCERPT_CHARS:
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:_EXCERPT_CHARS]


# ---------------------------------------------------------------------------------------------
# Diffs
# ---------------------------------------------------------------------------------------------


def unified_diff(old: str, new: str, path: str) -> str:
    """A unified diff from ``old`` to ``new`` with 3 lines of context, or ``""`` if they are equal.

    The header is the one the official server prints (it uses the ``diff`` npm package)::

        Index: <path>
        ===================================================================
        --- <path>\\toriginal
        +++ <path>\\tmodified

    CRLF is shown as LF, so a change of line endings alone is no change. A last line without a
    newline is marked with ``\\ No newline at end of file``, as git and patch expect.
    """
    old_lines = _split_lines(old.replace("\r\n", "\n"))
    new_lines = _split_lines(new.replace("\r\n", "\n"))
    if old_lines == new_lines:
        return ""
    # difflib's matcher is quadratic on files of many equal lines, so it sees only the part that
    # differs: the common head and tail (minus the context lines) are cut first, in linear time,
    # and the hunk line numbers are shifted back afterwards.
    head = 0
    limit = min(len(old_lines), len(new_lines))
    while head < limit and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while tail < limit - head and old_lines[-1 - tail] == new_lines[-1 - tail]:
        tail += 1
    skip = max(head - 3, 0)
    keep_tail = max(tail - 3, 0)
    old_part = old_lines[skip : len(old_lines) - keep_tail]
    new_part = new_lines[skip : len(new_lines) - keep_tail]
    out = [f"Index: {path}\n", "=" * 67 + "\n"]
    import difflib

    for line in difflib.unified_diff(old_part, new_part, path, path, "original", "modified", n=3):
        if skip and line.startswith("@@"):
            line = re.sub(_HUNK_NUMBERS, lambda m: f"{m[1]}{int(m[2]) + skip}", line)
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


_HUNK_NUMBERS = r"([-+])(\d+)"


_HUNK = r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@"


def diff_stats(diff: str) -> tuple[int, int]:
    """``(added, removed)`` line counts of a unified diff.

    Hunk lines are counted from each ``@@`` header's line counts, so file headers (``---``,
    ``+++``) are never mistaken for changes, nor a removed line that itself starts with ``--``.
    """
    added = removed = 0
    old_left = new_left = 0  # lines of the current hunk not yet seen, per side
    for line in diff.split("\n"):
        if old_left or new_left:
            if line.startswith("-"):
                removed += 1
                old_left -= 1
            elif line.startswith("+"):
                added += 1
                new_left -= 1
            elif line.startswith(" ") or line == "":  # context; some tools strip a lone space
                old_left -= 1
                new_left -= 1
            # "\ No newline at end of file" belongs to the line before it: nothing to count
        elif hunk := re.match(_HUNK, line):
            old_left = 1 if hunk[1] is None else int(hunk[1])
            new_left = 1 if hunk[2] is None else int(hunk[2])
    return added, removed
