"""Content search for ``grep_files``: which lines of a file match a pattern, within a time limit.

Pure, like :mod:`.patterns`: bytes and a pattern in, numbered matching lines out, no paths opened.
``compile_grep`` gives a ``Grep`` whose ``search_lines`` returns numbered matches with context
lines. A pattern without regex metacharacters (or ``literal``) is a plain bytes substring search.
Grep patterns are real regular expressions, which no translation can tame. Two engines run them:

* **RE2** (``google-re2``), a linear-time engine with no backtracking at all, for every pattern it
  can run *exactly* as Python's syntax means it: RE2 compiles it, it holds no ``{,n}`` (a count in
  Python, literal text in RE2), and the file is valid UTF-8, and ASCII when the pattern uses
  ``\\w \\W \\b \\B \\d \\D \\s \\S`` or folds non-ASCII case (RE2's classes are ASCII-only). Where
  the engines differ in nothing but speed, ``(a+)+$`` against a 50,000-character line takes 0.1 ms
  instead of hanging. Matching runs on the file's bytes (offsets are byte offsets).
* **regex** (``regex.V0``, Python's ``re`` syntax and semantics) for everything else: back
  references, lookaround, atomic groups, possessive quantifiers, ``\\N{...}``, non-ASCII text
  with Unicode classes, and whenever RE2 is not installed (no wheel for the platform) or
  ``MCP_REF_FS_GREP=regex`` forces it. Its ``timeout=`` counts the engine's own (CPU) time, so
  each search gets ``min(time left, PATTERN_SECONDS + PATTERN_SECONDS_PER_MIB per MiB of text)``:
  one that needs more backtracks catastrophically and raises ``GrepTooSlow``, which names the
  allowance. The deadline itself is wall-clock time (``time.monotonic``), looked at between
  searches; the tool layer answers at it even while a search is still running (``offload``).
"""

from __future__ import annotations

import codecs
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AnyStr

from .patterns import _shown

if TYPE_CHECKING:
    import regex

__all__ = [
    "MAX_GREP_PATTERN_LENGTH",
    "MAX_LINE_CHARS",
    "PATTERN_SECONDS",
    "PATTERN_SECONDS_PER_MIB",
    "Grep",
    "GrepFileResult",
    "GrepMatch",
    "GrepTimeout",
    "GrepTooSlow",
    "compile_grep",
]

MAX_GREP_PATTERN_LENGTH = 1000
MAX_LINE_CHARS = 500


# --- the search ---------------------------------------------------------------------------------------

_REGEX_METACHARACTERS = frozenset(".^$*+?{}[]\\|()")
_LONGEST_TIMEOUT = 1e6  # seconds; for a deadline of float("inf")
# What one search of the backtracking engine may take (its own time, see the module docstring):
# ordinary patterns need well under this (a back reference through 32 MiB: ~2.4 s of the 4.2 s
# it gets there); a pattern that needs more is backtracking catastrophically.
PATTERN_SECONDS = 1.0
PATTERN_SECONDS_PER_MIB = 0.1
# Escapes whose class RE2 takes as ASCII and Python as Unicode.
_UNICODE_CLASSES = frozenset("wWbBdDsS")
GREP_ENGINES = ("auto", "regex")  # MCP_REF_FS_GREP


class GrepTimeout(Exception):
    """The deadline passed before the search of a file finished."""


class GrepTooSlow(GrepTimeout):
    """One search of the backtracking engine used up its own allowance (``PATTERN_SECONDS`` and
    more per MiB): the pattern backtracks catastrophically on this text."""

    def __init__(self, pattern: str, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"the regular expression {_shown(pattern)} needed more than {seconds:.1f} s for one search "
                         f"(the limit of {PATTERN_SECONDS:g} s plus {PATTERN_SECONDS_PER_MIB:g} s per MiB of text)")


@dataclass(frozen=True)
class GrepMatch:
    """One matching line (1-based number) with its context lines, each cut to ``MAX_LINE_CHARS``."""

    line_number: int
    line: str
    before: list[str]
    after: list[str]


@dataclass(frozen=True)
class GrepFileResult:
    """The matches in one file; ``truncated`` when more matches existed beyond ``max_matches``."""

    matches: list[GrepMatch]
    truncated: bool


class Grep:
    """A compiled content search; see ``compile_grep``."""

    __slots__ = ("pattern", "ignore_case", "substring", "_needle", "_regex", "_re2", "_re2_ascii_only")

    def __init__(self, pattern: str, ignore_case: bool, needle: bytes | None, compiled: regex.Pattern | None,
                 linear: tuple[Any, bool] | None = None) -> None:
        self.pattern = pattern
        self.ignore_case = ignore_case
        self.substring = needle is not None  # True when the bytes substring fast path is used
        self._needle = needle
        self._regex = compiled
        # RE2's compiled pattern, and whether it is exact on ASCII text only (see the module docstring).
        self._re2: Any
        self._re2, self._re2_ascii_only = linear if linear is not None else (None, False)

    @property
    def linear(self) -> bool:
        """Does this pattern run on RE2 (for files it is exact on)?"""
        return self._re2 is not None

    def __repr__(self) -> str:
        return f"Grep({self.pattern!r}, ignore_case={self.ignore_case})"

    def search_lines(self, data: bytes, *, context: int, max_matches: int, deadline: float) -> GrepFileResult:
        """Find the lines of ``data`` (a file's UTF-8 bytes) that match, at most ``max_matches``.

        A line counts once however often it matches; a match spanning lines counts for its first.
        ``context`` lines before and after come with each match, but no line is shown twice: a
        context never reaches into an earlier match's lines or context, nor onto the next reported
        match, so the matches read in order show each region once (like ``grep -C`` groups).
        Lines are reported without ``\\r\\n``/``\\n``; invalid UTF-8 shows as U+FFFD; a UTF-8 BOM
        is dropped. For a regex, CRLF files are matched as if LF, so ``$`` works on them.

        ``deadline`` is a ``time.monotonic()`` value; ``GrepTimeout`` is raised once it passes.
        The work is one pass over the file plus a little per reported match.
        """
        if context < 0:
            raise ValueError(f"context must be >= 0, got {context}")
        if max_matches < 1:
            raise ValueError(f"max_matches must be >= 1, got {max_matches}")
        if data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8) :]
        if self._needle is not None:
            # Same offsets in both: bytes.lower() folds ASCII only, so lengths and "\n"s stay put.
            haystack = data.lower() if self.ignore_case else data
            needle = self._needle
            hits = _scan(haystack, b"\n", lambda pos, _remaining: haystack.find(needle, pos), max_matches, deadline)
            return _result(data, b"\n", hits, context)
        if self._re2 is not None and (data.isascii() or not self._re2_ascii_only and _is_utf8(data)):
            buf = data.replace(b"\r\n", b"\n") if b"\r" in data else data
            linear = self._re2.search  # linear time: no allowance needed, the deadline is looked at between searches

            def find_linear(pos: int, _remaining: float) -> int:
                match = linear(buf, pos)
                return -1 if match is None else match.start()

            return _result(buf, b"\n", _scan(buf, b"\n", find_linear, max_matches, deadline), context)
        assert self._regex is not None
        text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
        compiled = self._regex
        allowance = PATTERN_SECONDS + PATTERN_SECONDS_PER_MIB * len(text) / (1024 * 1024)

        def find(pos: int, remaining: float) -> int:
            budget = min(remaining, allowance, _LONGEST_TIMEOUT)  # regex takes an infinite timeout as expired
            try:
                match = compiled.search(text, pos, timeout=budget)
            except TimeoutError:
                if budget < remaining:
                    raise GrepTooSlow(self.pattern, allowance) from None
                raise GrepTimeout(f"regex search of {_shown(self.pattern)} passed its deadline") from None
            return -1 if match is None else match.start()

        return _result(text, "\n", _scan(text, "\n", find, max_matches, deadline), context)


# (line number, start offset, end offset) of a matching line; the end is its "\n" or the end of data.
_Hit = tuple[int, int, int]


def _scan(
    buf: AnyStr, nl: AnyStr, find: Callable[[int, float], int], max_matches: int, deadline: float
) -> tuple[list[_Hit], bool]:
    """Collect matching lines by calling ``find(pos, remaining_seconds)`` once per matching line.

    Line numbers come from counting newlines between consecutive hits (``count`` runs in C), so a
    file costs one pass however many lines it has. Returns (hits, truncated).
    """
    hits: list[_Hit] = []
    size = len(buf)
    line_number, counted, pos = 1, 0, 0
    while pos <= size:
        remaining = deadline - time.monotonic()
        if remaining <= 0:  # also guards regex: a timeout <= 0 there means "no timeout"
            raise GrepTimeout("search passed its deadline")
        hit = find(pos, remaining)
        # A zero-width regex match after the final newline (or in empty data) is on no line.
        if hit < 0 or (hit == size and (size == 0 or buf[-1:] == nl)):
            break
        if len(hits) == max_matches:
            return hits, True
        line_number += buf.count(nl, counted, hit)
        counted = hit
        end = buf.find(nl, hit)
        end = size if end < 0 else end
        hits.append((line_number, buf.rfind(nl, 0, hit) + 1, end))
        pos = end + 1  # one match per line: resume on the next line
    return hits, False


def _result(buf: AnyStr, nl: AnyStr, scanned: tuple[list[_Hit], bool], context: int) -> GrepFileResult:
    """Attach non-overlapping context lines to the hits (see ``Grep.search_lines``)."""
    hits, truncated = scanned
    matches = []
    shown = 0  # the last line number already shown, as a match or as context
    for index, (line_number, start, end) in enumerate(hits):
        before_count = min(context, line_number - 1 - shown)
        after_count = context if index + 1 == len(hits) else min(context, hits[index + 1][0] - line_number - 1)
        before = []
        line_start = start
        for _ in range(before_count):  # line_number - 1 - shown > 0, so a previous line exists
            line_end = line_start - 1
            line_start = buf.rfind(nl, 0, line_end) + 1
            before.append(_excerpt(buf, line_start, line_end))
        before.reverse()
        after = []
        line_end = end
        for _ in range(after_count):
            line_start = line_end + 1
            if line_start >= len(buf):  # past the final newline: no more lines
                break
            line_end = buf.find(nl, line_start)
            line_end = len(buf) if line_end < 0 else line_end
            after.append(_excerpt(buf, line_start, line_end))
        matches.append(GrepMatch(line_number, _excerpt(buf, start, end), before, after))
        shown = line_number + len(after)
    return GrepFileResult(matches, truncated)


def _excerpt(buf: AnyStr, start: int, end: int) -> str:
    """The line ``buf[start:end]`` as text without a trailing ``\\r``, cut to ``MAX_LINE_CHARS`` + "…".

    Only the head of a long line is sliced and decoded: a minified megabyte stays cheap.
    """
    if end > start and buf[end - 1 : end] == (b"\r" if isinstance(buf, bytes) else "\r"):
        end -= 1
    if isinstance(buf, bytes):
        # A UTF-8 character (or an invalid byte, shown as U+FFFD) takes at most 4 bytes, so more
        # than 4 * MAX_LINE_CHARS bytes is surely too long, and that many hold the first MAX.
        cap = 4 * MAX_LINE_CHARS
        line = buf[start : min(end, start + cap)].decode("utf-8", errors="replace")
        if end - start > cap:
            return line[:MAX_LINE_CHARS] + "…"
    else:
        line = buf[start : min(end, start + MAX_LINE_CHARS + 1)]
    return line[:MAX_LINE_CHARS] + "…" if len(line) > MAX_LINE_CHARS else line


def compile_grep(pattern: str, *, ignore_case: bool = False, literal: bool = False) -> Grep:
    """Compile a content search: a Python-``re``-compatible regex (``regex.V0``), or a literal.

    A ``literal`` pattern, or one without regex metacharacters, is searched as a plain substring
    of the bytes (fast); with ``ignore_case`` that folds ASCII letters, and a non-ASCII literal
    goes through the regex engine instead to fold full Unicode case. ``^`` and ``$`` match at
    line boundaries (MULTILINE); ``.`` does not match a newline.

    Raises ``ValueError`` for an empty pattern, one longer than ``MAX_GREP_PATTERN_LENGTH``, or
    an invalid regex (with the engine's message).
    """
    if not pattern:
        raise ValueError("grep pattern is empty")
    if len(pattern) > MAX_GREP_PATTERN_LENGTH:
        raise ValueError(f"grep pattern is {len(pattern)} characters long; the limit is {MAX_GREP_PATTERN_LENGTH}")
    is_literal = literal or _REGEX_METACHARACTERS.isdisjoint(pattern)
    if is_literal and (not ignore_case or pattern.isascii()):
        needle = pattern.encode("utf-8")
        return Grep(pattern, ignore_case, needle.lower() if ignore_case else needle, None)
    import regex  # lazily: only a content search pays for loading it

    source = regex.escape(pattern, special_only=True) if is_literal else pattern
    flags = regex.V0 | regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0)
    try:
        compiled = regex.compile(source, flags)
    except regex.error as exc:
        raise ValueError(f"invalid regular expression {_shown(pattern)}: {exc}") from None
    return Grep(pattern, ignore_case, None, compiled, _linear(source, ignore_case))


def _grep_engine() -> Any:
    """The ``re2`` module, or None: not installed, or ``MCP_REF_FS_GREP=regex``."""
    if os.environ.get("MCP_REF_FS_GREP", "auto").strip().lower() == "regex":
        return None
    try:
        import re2  # google-re2; imported on the first content search
    except ImportError:
        return None
    return re2


def _linear(source: str, ignore_case: bool) -> tuple[Any, bool] | None:
    """RE2's form of a pattern ``regex`` accepted, where it means the same: ``(compiled, exact on
    ASCII text only)``, or None (see the module docstring)."""
    unicode_classes = False
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            unicode_classes |= source[index + 1 : index + 2] in _UNICODE_CLASSES
            index += 2
            continue
        if char == "{" and source[index + 1 : index + 2] == ",":
            return None  # {,n}: a count to Python, literal text to RE2
        index += 1
    re2 = _grep_engine()
    if re2 is None:
        return None
    options = re2.Options()
    options.log_errors = False  # a pattern RE2 cannot run is no error: regex runs it
    options.case_sensitive = not ignore_case
    try:
        compiled = re2.compile(b"(?m)" + source.encode("utf-8"), options)
    except re2.error:
        return None
    return compiled, unicode_classes or (ignore_case and not source.isascii())


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
