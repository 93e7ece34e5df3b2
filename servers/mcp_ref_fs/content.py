"""What a file's bytes mean: text or binary, MIME type, line windows.

The tools of mcp-ref-fs split every operation in two. ``root.py`` decides *which* file may be
touched and does the touching; this module decides *what the content means*. Everything here is
pure: bytes or text in, data out, no paths opened, no clock, no state but one cached table. That
keeps the rules a drop-in replacement for the official ``@modelcontextprotocol/server-filesystem``
must get right (sniffing, line counting) testable with plain values. ``edit_file``'s matching
and diffs are the same kind of pure code, in :mod:`.edits`.

* **Text or binary.** ``looks_binary`` judges a file from its first bytes (NUL bytes, invalid
  UTF-8, too many control characters); ``decode_text`` decodes strictly and raises ``NotText``;
  ``file_text`` asks both of a file (``Binary`` when its first bytes look binary).
  A UTF-8 byte order mark is text; ``decode_text`` strips exactly one (a second is content), and
  ``split_bom`` separates it so a write can put it back.
* **MIME types.** ``sniff_mime`` trusts magic bytes first, then the extension (the server's own
  table, ``mimetable.py``: neither Python's, which changes between versions, nor the machine's
  ``/etc/mime.types``, so every machine and Python answers alike), then the text test.
* **Line windows.** ``head_lines`` reads forwards only as far as needed, ``tail_lines`` reads
  backwards block by block through a ``read_at(offset, length)`` callback (a ``pread``), and
  ``window_lines`` slices decoded text. A line ends with ``\\n``; a last line without one counts.
"""

from __future__ import annotations

import codecs
import functools
import posixpath
import re
from typing import Callable, Iterable, Iterator

__all__ = [
    "BOM",
    "Binary",
    "NotText",
    "decode_text",
    "file_text",
    "format_size",
    "head_lines",
    "line_count",
    "looks_binary",
    "sniff_mime",
    "split_bom",
    "split_lines",
    "tail_lines",
    "window_lines",
]

# How listings tag each kind of entry (list_directory, list_directory_with_sizes, a directory
# read as a resource): the official server's [FILE] and [DIR], plus our [LINK] and [OTHER].
LISTING_TAGS = {"file": "[FILE]", "directory": "[DIR]", "symlink": "[LINK]", "other": "[OTHER]"}

BOM = codecs.BOM_UTF8  # b"\xef\xbb\xbf"


class NotText(ValueError):
    """The bytes are not UTF-8 text (NUL bytes or an invalid UTF-8 sequence)."""


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
    body = sample.removeprefix(BOM)
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


class Binary(NotText):
    """The file looks binary from its first bytes (``looks_binary``)."""


def file_text(data: bytes, sample: bytes | None = None) -> str:
    """The text of a file's ``data`` (``decode_text``: ``NotText`` unless strict UTF-8), and, when
    given the file's first bytes (``sample``, up to 8 KiB), ``Binary`` first if they look binary
    (``looks_binary``): a reader's one question, is this text, answered in one call."""
    if sample is not None and looks_binary(sample):
        raise Binary("not a text file: its first bytes look binary")
    return decode_text(data)


def decode_text(data: bytes) -> str:
    """The UTF-8 text in ``data``, without its leading byte order mark (exactly one: a second mark
    is the text's first character, U+FEFF).

    Strict: raises ``NotText`` if ``data`` holds a NUL byte or any invalid UTF-8 (including a
    truncated sequence at the end). Nothing else is changed: line endings stay as they are.
    Callers that write the text back use ``split_bom`` to remember the mark.
    """
    rest = data.removeprefix(BOM)
    bom = len(data) - len(rest)  # 3 or 0: offsets below count it, as in the file
    nul = rest.find(b"\0")
    if nul >= 0:
        raise NotText(f"not a text file: NUL byte at offset {nul + bom}")
    try:
        return rest.decode("utf-8")
    except UnicodeDecodeError as error:
        offset = error.start + bom
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


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their ``\\n`` (a last line without one counts). Not
    ``str.splitlines``, which also splits on ``\\r``, ``\\f``, ``\\x1c``, ``\\u2028``, ...: those
    are characters inside a line for every tool that counts lines by ``\\n``."""
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
    lines = split_lines(text)
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
