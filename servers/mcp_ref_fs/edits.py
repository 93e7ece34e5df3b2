"""What ``edit_file`` does to a text: matching, and where the text changed (the diff: :mod:`.diffs`).

Pure functions, like :mod:`.content`: text in, text out, no paths, no clock. The tool
(:mod:`.writing`) reads the file, calls :func:`edit_text` and :func:`.diffs.edit_diff` in a worker
thread, and writes the result through the sandbox.

* **Matching.** :func:`edit_text` applies ``(oldText, newText)`` edits in order: an exact match
  first, then a match of whole lines that ignores leading and trailing whitespace, re-indenting
  the replacement. It never guesses between several matches, and its errors say what to change,
  because the reader is a language model that will retry. Every edit replaces one span of the
  text, so the result knows exactly *where* it differs from the original: :class:`Edited`
  carries those spans (``regions``), merged where later edits overlap earlier ones.
* **The diff** of exactly those regions is :mod:`.diffs`' part.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable


__all__ = ["EditError", "Edited", "apply_edits", "edit_text"]


class EditError(ValueError):
    """An edit cannot be applied; the message tells the caller (a model) what to change."""


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


@dataclass
class Edited:
    """The outcome of :func:`edit_text`.

    ``text`` is the new content in the file's own line endings. ``before`` and ``after`` are the
    old and the new content with ``\\n`` line endings (what the edits matched and produced, and
    what the diff compares), and ``regions`` the places where those two differ, as sorted,
    disjoint ``(before_start, before_end, after_start, after_end)`` character offsets: outside
    them the texts are equal, character for character.
    """

    text: str
    before: str
    after: str
    regions: list[tuple[int, int, int, int]] = field(default_factory=list)


def _dominant_newline(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf > text.count("\n") - crlf else "\n"


def apply_edits(original: str, edits: list[tuple[str, str]]) -> str:
    """``original`` with the edits applied: :func:`edit_text`'s ``text``."""
    return edit_text(original, edits).text


def edit_text(original: str, edits: list[tuple[str, str]], *, exact_only: bool = False,
              check: Callable[[], None] | None = None) -> Edited:
    """``original`` with each ``(oldText, newText)`` edit applied in order, each to the previous result.

    Matching, per edit:

    1. **Exact.** If ``oldText`` occurs exactly once (overlapping occurrences count), that
       occurrence is replaced by ``newText`` verbatim: ``$&``, ``$1``, ``\\1`` and the like are
       never expanded. It may start and end inside lines. Several occurrences: ``EditError``
       naming their lines, even if the tolerant step would find one.
    2. **Whitespace-tolerant** (skipped with ``exact_only``: an edit that does not occur exactly
       once is then an ``EditError``). ``oldText`` is taken as whole lines and compared with
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
    (a file with mixed endings comes back uniform). A byte order mark is the caller's: decode
    without it (``content.decode_text`` strips exactly one) and put it back when writing. All or
    nothing: the first failing edit raises and nothing is returned; line numbers in messages
    count in the text as the earlier edits left it. ``check()``, called before each edit, may
    raise to stop the work (a cancelled request).
    """
    newline = _dominant_newline(original)
    before = text = original.replace("\r\n", "\n")
    changes = _Changes()
    for number, (old, new) in enumerate(edits, 1):
        if check is not None:
            check()
        start, end, replacement = _locate(text, old.replace("\r\n", "\n"), new.replace("\r\n", "\n"), number, exact_only)
        text = text[:start] + replacement + text[end:]  # slicing: newText is never interpreted
        changes.replaced(start, end, len(replacement))
    result = text.replace("\n", newline) if newline != "\n" else text
    return Edited(result, before, text, changes.spans())


class _Changes:
    """Where the text being edited differs from the original, kept up to date edit by edit.

    ``regions`` are sorted, disjoint ``[now_start, now_end, was_start, was_end]``: characters
    ``[now_start, now_end)`` of the current text stand where ``[was_start, was_end)`` of the
    original stood. Between regions the two texts are equal, so a position ``p`` of the current
    text outside every region was ``p - (now_end - was_end)`` of the last region before it.
    """

    def __init__(self) -> None:
        self.regions: list[list[int]] = []

    def replaced(self, start: int, end: int, length: int) -> None:
        """Characters ``[start, end)`` of the current text were replaced by ``length`` new ones."""
        regions = self.regions
        first = bisect.bisect_left(regions, start, key=lambda region: region[1])  # the first ending at or after start
        last = first
        while last < len(regions) and regions[last][0] <= end:  # every region the edit overlaps or touches
            last += 1

        def was(position: int, regions_before: int) -> int:
            if not regions_before:
                return position
            previous = regions[regions_before - 1]
            return position - (previous[1] - previous[3])

        if first < last and regions[first][0] <= start:
            low, was_low = regions[first][0], regions[first][2]
        else:
            low, was_low = start, was(start, first)
        if first < last and regions[last - 1][1] >= end:
            high, was_high = regions[last - 1][1], regions[last - 1][3]
        else:
            high, was_high = end, was(end, last)
        shift = length - (end - start)
        regions[first:last] = [[low, high + shift, was_low, was_high]]
        for region in regions[first + 1:]:
            region[0] += shift
            region[1] += shift

    def spans(self) -> list[tuple[int, int, int, int]]:
        """The regions as ``(before_start, before_end, after_start, after_end)``."""
        return [(was_start, was_end, now_start, now_end) for now_start, now_end, was_start, was_end in self.regions]


def _locate(text: str, old: str, new: str, number: int, exact_only: bool) -> tuple[int, int, str]:
    """Where edit ``number`` applies: ``(start, end, replacement)`` in characters of ``text``."""
    if not old:
        raise EditError(
            f"oldText of edit {number} is empty; to insert text, put a neighbouring line in oldText "
            "and repeat it in newText (to create or overwrite a whole file, use write_file)"
        )
    positions = _occurrences(text, old)
    if len(positions) == 1:
        return positions[0], positions[0] + len(old), new
    if positions:
        lines = _line_numbers(text, positions)
        raise EditError(f"oldText of edit {number} {_places(len(positions), lines)}; add surrounding lines to make it unique")
    if exact_only:
        raise EditError(f"oldText of edit {number} no longer occurs exactly in the file")
    return _tolerant_span(text, old, new, number)


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


def _tolerant_span(text: str, old: str, new: str, number: int) -> tuple[int, int, str]:
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
    # The block in characters: from the start of its first line to the end of its last line
    # (where that line's newline is, or the end of the text).
    begin = sum(map(len, lines[:start])) + start
    end = begin + sum(map(len, lines[start:start + k])) + k - 1
    if replacement:
        return begin, end, "\n".join(replacement)
    # Nothing replaces the block: it goes with one newline, the one after it where there is one.
    if trailing_newline or start + k < len(lines):
        return begin, end + 1, ""
    return max(begin - 1, 0), end, ""


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
