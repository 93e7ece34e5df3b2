"""The diff ``edit_file`` answers with: only the places the edits changed are compared.

Pure functions, like :mod:`.edits`, whose :class:`~.edits.Edited` result carries the spans of the
text each edit replaced (``regions``). :func:`edit_diff` builds the unified diff from those
regions alone. The text between them is known to be equal, so only the lines inside a region are
ever compared, and the work is linear in the size of the file plus the edits whatever the file
holds (handing two whole 60,000-line files of repeating lines to ``difflib`` took seconds: its
matcher is quadratic on such input). Inside the regions ``difflib`` matches lines while the line
pairs compared in one diff stay within ``MAX_COMPARED_PAIRS``; a region beyond that budget is
shown whole, its old lines removed and its new lines added (``Diff.blocks`` counts them, so the
answer can say so). The text stops growing past ``max_bytes``. :func:`unified_diff` diffs any two
texts the same way, with the span between their common start and end as the one region.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .content import split_lines

if TYPE_CHECKING:
    from .edits import Edited

__all__ = ["Diff", "diff_stats", "edit_diff", "render_diff", "unified_diff"]

CONTEXT_LINES = 3
# Line pairs difflib may compare in one diff (old lines x new lines, summed over the regions). Its
# matcher takes up to about that many steps: 1000 x 1000 repetitive lines, the worst input found,
# took 0.12 s on the 2-core reference machine, and typical regions take well under a millisecond.
MAX_COMPARED_PAIRS = 1_000_000

# An opcode as difflib's get_opcodes gives them, plus what gives its lines: (tag, i1, i2, j1, j2, lines).
Op = tuple  # tuple[str, int, int, int, int, "_Block | _Gap"]


@dataclass
class Diff:
    """A unified diff: ``text`` (``""`` when the texts are equal), whether it was cut once longer
    than ``max_bytes`` (``truncated``), and how many changed regions it shows whole, removed then
    added, without matching the lines inside them (``blocks``: too large to compare line by line)."""

    text: str
    truncated: bool = False
    blocks: int = 0


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
    old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    return render_diff(old, new, _one_region(old, new), path).text


def edit_diff(edited: Edited, path: str, *, max_bytes: int | None = None, check: Callable[[], None] | None = None) -> Diff:
    """The unified diff of an edit (shown as :func:`unified_diff` shows one), comparing only the
    regions the edits changed. ``check()`` is called between regions and may raise to stop."""
    return render_diff(edited.before, edited.after, edited.regions, path, max_bytes=max_bytes, check=check)


def render_diff(old: str, new: str, regions: list[tuple[int, int, int, int]], path: str, *,
                max_bytes: int | None = None, check: Callable[[], None] | None = None) -> Diff:
    """The unified diff of ``old`` and ``new`` (``\\n`` line endings), which differ only inside
    ``regions`` (as :class:`Edited` gives them). Text stops being added once it holds more than
    ``max_bytes`` characters (so more than that many bytes), and ``truncated`` says so."""
    ops, blocks = _opcodes(old, new, _line_spans(old, new, regions), check)
    out = _Output(max_bytes)
    hunks = _hunks(ops)
    if hunks:
        out.add(f"Index: {path}\n" + "=" * 67 + f"\n--- {path}\toriginal\n+++ {path}\tmodified\n")
    for hunk in hunks:
        first, last = hunk[0], hunk[-1]
        out.add(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2, lines in hunk:
            if tag == "equal":
                out.lines(" ", lines.old_lines(i1, i2))
            if tag in ("replace", "delete"):
                out.lines("-", lines.old_lines(i1, i2))
            if tag in ("replace", "insert"):
                out.lines("+", lines.new_lines(j1, j2))
        if out.full:
            break
    return Diff("".join(out.parts), out.full, blocks)


def _one_region(old: str, new: str) -> list[tuple[int, int, int, int]]:
    """The one region where two texts differ: between their common start and their common end."""
    if old == new:
        return []
    head = _common_prefix(old, new)
    tail = _common_prefix(old[head:][::-1], new[head:][::-1])
    return [(head, len(old) - tail, head, len(new) - tail)]


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share (slices compared in C: growing steps, then halving)."""
    size = min(len(a), len(b))
    low, step = 0, 4096
    while low < size:
        high = min(size, low + step)
        if a[low:high] == b[low:high]:
            low, step = high, step * 2
            continue
        while high - low > 1:  # the first difference lies in [low, high)
            middle = (low + high) // 2
            if a[low:middle] == b[low:middle]:
                low = middle
            else:
                high = middle
        return low
    return size


def _at_line_start(text: str, position: int) -> bool:
    return position == 0 or text[position - 1] == "\n"


def _line_spans(old: str, new: str, regions: list[tuple[int, int, int, int]]) -> list[list[int]]:
    """The regions widened to whole lines on both sides, merged where they share a line.

    The text before a region is the same on both sides, so moving the region's start back to the
    start of its line moves both starts alike. The same holds for the text after it, up to the
    next region, so both ends move forward together to the end of the line (taking the next region
    in when that line reaches it).
    """
    starts: list[list[int]] = []
    for old_start, old_end, new_start, new_end in regions:
        line_start = old.rfind("\n", 0, old_start) + 1
        new_start -= old_start - line_start
        old_start = line_start
        if starts and old_start <= starts[-1][1]:  # it starts on a line the previous region reaches
            previous = starts.pop()
            old_start, new_start = previous[0], previous[2]
        starts.append([old_start, old_end, new_start, new_end])
    spans: list[list[int]] = []
    index = 0
    while index < len(starts):
        old_start, old_end, new_start, new_end = starts[index]
        while old_end < len(old) and not (_at_line_start(old, old_end) and _at_line_start(new, new_end)):
            newline = old.find("\n", old_end)
            line_end = len(old) if newline < 0 else newline + 1
            if index + 1 < len(starts) and line_end > starts[index + 1][0]:
                index += 1  # the line runs into the next region: one span
                old_end, new_end = starts[index][1], starts[index][3]
                continue
            new_end += line_end - old_end
            old_end = line_end
        spans.append([old_start, old_end, new_start, new_end])
        index += 1
    return spans


class _Block:
    """The lines of one changed span on both sides; indexes are line numbers of the whole texts."""

    def __init__(self, old: list[str], new: list[str], first_old: int, first_new: int) -> None:
        self.old, self.new, self.first_old, self.first_new = old, new, first_old, first_new

    def old_lines(self, start: int, stop: int) -> list[str]:
        return self.old[start - self.first_old:stop - self.first_old]

    def new_lines(self, start: int, stop: int) -> list[str]:
        return self.new[start - self.first_new:stop - self.first_new]


class _Gap:
    """Equal lines between two spans: ``text[start:end]``, lines ``first`` to ``first + count``.
    Only a few lines at one of its ends are ever shown (context), and they are found by scanning
    from that end, so a gap of a million lines costs nothing."""

    def __init__(self, text: str, start: int, end: int, first: int, count: int) -> None:
        self.text, self.start, self.end, self.first, self.count = text, start, end, first, count

    def old_lines(self, start: int, stop: int) -> list[str]:
        text = self.text
        if start == self.first:  # its first lines: forward from its start
            end = self.start
            for _ in range(stop - start):
                newline = text.find("\n", end, self.end)
                end = self.end if newline < 0 else newline + 1
            return split_lines(text[self.start:end])
        begin = self.end  # its last lines: backward from its end
        for _ in range(stop - start):
            above = begin - 1 if text[begin - 1] == "\n" else begin  # past the newline ending the line above
            begin = text.rfind("\n", self.start, above) + 1 or self.start
        return split_lines(text[begin:self.end])

    new_lines = old_lines  # equal lines are the same on both sides


def _opcodes(old: str, new: str, spans: list[list[int]], check: Callable[[], None] | None) -> tuple[list[Op], int]:
    """Opcodes over the lines of the whole texts (equal between the spans, compared inside them)
    and how many spans are shown whole."""
    ops: list[Op] = []
    budget, blocks = MAX_COMPARED_PAIRS, 0
    old_line = new_line = position = 0
    for old_start, old_end, new_start, new_end in spans:
        if check is not None:
            check()
        gap = old.count("\n", position, old_start)
        if gap:
            ops.append(("equal", old_line, old_line + gap, new_line, new_line + gap, _Gap(old, position, old_start, old_line, gap)))
            old_line, new_line = old_line + gap, new_line + gap
        block = _Block(split_lines(old[old_start:old_end]), split_lines(new[new_start:new_end]), old_line, new_line)
        compared, budget, whole = _compare(block, budget)
        ops += compared
        blocks += whole
        old_line, new_line, position = old_line + len(block.old), new_line + len(block.new), old_end
    tail = old.count("\n", position) + (position < len(old) and not old.endswith("\n"))
    if tail:
        ops.append(("equal", old_line, old_line + tail, new_line, new_line + tail, _Gap(old, position, len(old), old_line, tail)))
    return ops, blocks


def _compare(block: _Block, budget: int) -> tuple[list[Op], int, bool]:
    """The block's opcodes and the budget left. The lines it starts and ends with on both sides
    are set aside as equal; difflib matches the rest, unless that would take more line pairs than
    the budget holds: then the rest is one change, shown whole (the third value says so)."""
    a, b = block.old, block.new
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    i0, j0 = block.first_old, block.first_new
    ops: list[Op] = [("equal", i0, i0 + head, j0, j0 + head, block)] if head else []
    cost = (len(a) - head - tail) * (len(b) - head - tail)
    whole = cost > budget
    if cost and not whole:
        import difflib  # on the first diff that needs it (start-up time)

        matcher = difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail])
        i1, j1 = i0 + head, j0 + head
        ops += [(tag, i1 + x1, i1 + x2, j1 + y1, j1 + y2, block) for tag, x1, x2, y1, y2 in matcher.get_opcodes()]
        budget -= cost
    else:
        ops += _whole(block, head, tail)  # too large, or lines only removed or only added (or none)
    if tail:
        i, j = i0 + len(a), j0 + len(b)
        ops.append(("equal", i - tail, i, j - tail, j, block))
    return ops, budget, whole


def _whole(block: _Block, head: int, tail: int) -> list[Op]:
    """The block's lines but the first ``head`` and last ``tail`` as one change: removed, added, or both."""
    i1, i2 = block.first_old + head, block.first_old + len(block.old) - tail
    j1, j2 = block.first_new + head, block.first_new + len(block.new) - tail
    if i1 == i2 and j1 == j2:
        return []
    tag = "replace" if i1 < i2 and j1 < j2 else "delete" if i1 < i2 else "insert"
    return [(tag, i1, i2, j1, j2, block)]


def _hunks(ops: list[Op]) -> list[list[Op]]:
    """The opcodes grouped into hunks with ``CONTEXT_LINES`` of context: a run of more than twice
    that many equal lines ends one hunk and starts the next, and the equal lines the diff starts
    and ends with are cut to the context."""
    if all(op[0] == "equal" for op in ops):
        return []
    n = CONTEXT_LINES
    ops = list(ops)
    tag, i1, i2, j1, j2, lines = ops[0]
    if tag == "equal":
        ops[0] = (tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2, lines)
    tag, i1, i2, j1, j2, lines = ops[-1]
    if tag == "equal":
        ops[-1] = (tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n), lines)
    hunks: list[list[Op]] = []
    group: list[Op] = []
    for tag, i1, i2, j1, j2, lines in ops:
        if tag == "equal" and i2 - i1 > 2 * n:
            group.append((tag, i1, i1 + n, j1, j1 + n, lines))
            hunks.append(group)
            group = []
            i1, j1 = i2 - n, j2 - n
        group.append((tag, i1, i2, j1, j2, lines))
    if not (len(group) == 1 and group[0][0] == "equal"):
        hunks.append(group)
    return hunks


def _range(start: int, stop: int) -> str:
    """A hunk header's ``start,length`` (1-based; one line is just its number, and an empty range
    names the line before it)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


class _Output:
    """The diff's text, which stops growing once it holds more than ``limit`` characters."""

    def __init__(self, limit: int | None) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.full = False

    def add(self, text: str) -> None:
        if self.full:
            return
        self.parts.append(text)
        self.size += len(text)
        self.full = self.limit is not None and self.size > self.limit

    def lines(self, mark: str, lines: list[str]) -> None:
        for line in lines:
            if self.full:
                return
            self.add(mark + line if line.endswith("\n") else mark + line + "\n\\ No newline at end of file\n")


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
