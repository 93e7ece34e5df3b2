"""The scenarios of big answers (issue 20): pages that must reach the model whole.

A model that follows the server's cues, and nothing else, pages through a 2 MB file of 40,000
lines, a tree of 5,000 files, a search with 3,000 hits and a grep with 3,000 matching lines to
their ends: each step reads the cue in the tool result as the host passed it (``Next page:
TOOL {JSON}``) and makes exactly that call. No offset is known in advance. The check then proves
that every page arrived whole and that together they are the data, each item once and in order:

- each text block the server sent (the page and its note) is in what the model got, verbatim
  (or JSON-escaped, as a host may pass it): no host cut, marker, saved-to-file notice or missing
  middle;
- the page's items are exactly the expected items its cue names (lines a-b of the file, entries
  a-b of the tree, hits a-b of the search), compared with what the folder holds;
- the ranges join up from the first item to the last.

``limit`` measures the largest tool result a host passes whole (a bisection: the model writes a
probe file of the size it wants to try with ``write_file``, then reads it, the server uncut), and
``media`` reads a PNG with ``read_media_file``.

The descriptions of what the model saw (``describe``) also say something useful when a check
fails: with the server of an older checkout they are the "before" table of
docs/external-checks.md.
"""

from __future__ import annotations

import json
import os
import random
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.hosts.shapes import saw
from tools.hosts.standin import Say, Script, Step, Turn

if TYPE_CHECKING:
    from tools.hosts.scenarios import Outcome

BIG = "big.txt"
BIG_LINES = 40_000
TREE = "tree"
_FILLER = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def big_line(number: int) -> str:
    """Line ``number`` (1-based) of big.txt, with its newline: about 52 bytes, unique, some with
    quotes, a backslash or a tab (so a page that a host escaped or re-encoded shows)."""
    words = " ".join(_FILLER[(number * 7 + k) % len(_FILLER)] for k in range(4))
    extra = ' "quoted"' if number % 7 == 0 else " back\\slash" if number % 11 == 0 else "\ttab" if number % 13 == 0 else ""
    return f"line {number:05d} of {BIG_LINES}: {words} ok{extra}\n"


def tree_files() -> list[tuple[str, str]]:
    """(path relative to the tree, content) of the tree's 5,000 files: 3,000 ``.log`` files that
    hold "match here" and 2,000 ``.txt`` files, 100 to a directory two levels down."""
    files = []
    for a in range(5):
        for b in range(10):
            for i in range(100):
                number = a * 1000 + b * 100 + i
                if i % 5 < 3:
                    files.append((f"a{a}/b{b}/entry-{number:04d}.log", f"entry {number:04d}: match here\n"))
                else:
                    files.append((f"a{a}/b{b}/entry-{number:04d}.txt", f"entry {number:04d}: nothing to see\n"))
    return files


def make_big(root: Path) -> None:
    with (root / BIG).open("w") as out:
        out.writelines(big_line(n) for n in range(1, BIG_LINES + 1))


def make_tree(root: Path) -> None:
    for relative, content in tree_files():
        target = root / TREE / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


# --- what the model reads: the cue ------------------------------------------------------------

_NEXT = re.compile(r"Next (?:page|lines): ([A-Za-z_]+) (?=\{)")


def next_call_in(text: str) -> tuple[str, dict[str, Any]] | None:
    """The call a cue names, ``(tool, arguments)``, as a model would read it from the text the
    host passed (the last cue, if the text holds several), or None when there is none."""
    for match in reversed(list(_NEXT.finditer(text))):
        try:
            arguments, _ = json.JSONDecoder().raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(arguments, dict):
            return match.group(1), arguments
    return None


MAX_CALLS = 400  # a model that follows cues round in circles is stopped here (2 MB at 10 KB a page: 220)


def follow_cues(tool: str, **arguments: Any) -> Script:
    """Call ``tool`` with ``arguments``, then whatever call each answer's cue names, to the end."""

    def script(turn: Turn) -> Step:
        if not turn.results:
            return turn.call(tool, **arguments)
        if turn.seen.calls >= MAX_CALLS:
            return Say(f"Stopped after {MAX_CALLS} calls.")
        cue = next_call_in(turn.last.verbatim or turn.last.text)
        if cue is None:
            return Say("The server names no next call: I have read all of it.")
        return turn.call(cue[0], **cue[1])

    return script


# --- what the model must have got -------------------------------------------------------------


@dataclass
class Walk:
    """One paged walk: its first call, the items it must deliver, and how a page counts them."""

    name: str  # what the cue counts: "lines", "entries", "hits"
    tool: str
    arguments: Callable[[Path], dict[str, Any]]  # of the first call, given the served folder
    expected: Callable[[Path], list[str]]  # every item, in order
    shown: re.Pattern[str]  # a cue's "first-last": groups 1 and 2
    items: Callable[[str], list[str]]  # the items of one page's data block
    # Finds an item in any text a host passed, group 1 its number (whole or cut, escaped or not):
    # what the descriptions count. ``counted`` names those items, ``noise`` is what is left of
    # the data around them once they are taken out (so what remains is the host's own text).
    key: re.Pattern[str]
    counted: str
    noise: re.Pattern[str] | None = None
    repeats_parents: bool = False  # a page may start with the parents of its first entry (trees)

    def check(self, outcome: Outcome) -> str | None:
        expected = self.expected(outcome.root)
        seen, sent = outcome.seen_results(), outcome.wire_results()
        if not seen:
            return "the model never got a tool result"
        if len(seen) != len(sent):
            return f"the model got {len(seen)} results of the {len(sent)} the server sent"
        done = 0
        for number, (page, answer) in enumerate(zip(seen, sent), 1):
            blocks = _texts(answer)
            if not blocks or not all(saw(page["verbatim"], block) for block in blocks):
                return f"page {number} did not reach the model whole: {self.describe_one(page, outcome)}"
            shown = self.shown.search(page["verbatim"])
            first, last = (_number(shown.group(1)), _number(shown.group(2))) if shown else (1, len(expected))
            if first != done + 1:
                return f"page {number} starts at {self.name} {first:,}, after {done:,}"
            got = self.items(blocks[0])
            if self.repeats_parents and first <= len(expected):
                got = _without_parents(got, expected[first - 1])
            want = expected[first - 1:last]
            if got != want:
                wrong = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                return (f"page {number} ({self.name} {first:,}-{last:,}) holds {len(got):,} items, not the "
                        f"{len(want):,} expected; the first difference is at item {first + wrong:,}")
            done = last
        if done != len(expected):
            return f"the model stopped after {self.name} {done:,} of {len(expected):,}"
        return None

    def _ranks(self, outcome: Outcome) -> dict[int, int]:
        """{an item's number: its place among the counted items (1-based)}."""
        keys = (self.key.search(item) for item in self.expected(outcome.root))
        return {int(match.group(1)): place for place, match in enumerate((k for k in keys if k), 1)}

    def _found(self, text: str, ranks: dict[int, int]) -> list[int]:
        return sorted({ranks[int(m.group(1))] for m in self.key.finditer(text) if int(m.group(1)) in ranks})

    def describe_one(self, page: dict[str, Any], outcome: Outcome) -> str:
        """Which counted items one answer held, its size, and what else the host put in it."""
        ranks = self._ranks(outcome)
        text = page["text"]  # JSON text read as JSON: a host that passed structuredContent shows its strings
        rest = self.key.sub("", text)
        if self.noise:
            rest = self.noise.sub("", rest)
        return (f"{self.counted} {ranges(self._found(text, ranks))} of {len(ranks):,} in "
                f"{len(page['verbatim'].encode('utf-8')):,} bytes" + _notice(rest))

    def describe(self, outcome: Outcome) -> str:
        """What the model saw: how many answers, which items they held, and whether each was whole."""
        seen, sent = outcome.seen_results(), outcome.wire_results()
        if not seen:
            return "no tool result reached the model"
        whole = sum(bool(_texts(answer)) and all(saw(page["verbatim"], b) for b in _texts(answer))
                    for page, answer in zip(seen, sent))
        largest = max(len(page["verbatim"].encode("utf-8")) for page in seen)
        head = f"{len(seen)} answer{'s' if len(seen) != 1 else ''} ({whole} whole, the largest {largest:,} bytes): "
        if len(seen) == 1:
            return head + self.describe_one(seen[0], outcome)
        ranks = self._ranks(outcome)
        found = sorted({place for page in seen for place in self._found(page["text"], ranks)})
        return head + f"{self.counted} {ranges(found)} of {len(ranks):,}"


def _texts(answer: dict[str, Any]) -> list[str]:
    return [block.get("text", "") for block in answer.get("content", []) if block.get("type") == "text"]


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _without_parents(paths: list[str], first: str) -> list[str]:
    index = 0
    while index < len(paths) and first.startswith(paths[index] + "/"):
        index += 1
    return paths[index:]


def ranges(numbers: list[int], most: int = 6) -> str:
    """1, 2, 3, 7, 8 -> "1-3, 7-8"; nothing -> "none"; more than ``most`` runs are elided."""
    if not numbers:
        return "none"
    runs: list[tuple[int, int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    parts = [f"{a:,}" if a == b else f"{a:,}-{b:,}" for a, b in runs]
    if len(parts) > most:
        parts = parts[:most - 2] + [f"... ({len(parts)} runs)"] + parts[-1:]
    return ", ".join(parts)


def _notice(rest: str) -> str:
    """What a host wrote beside the data (a notice, a marker), shortened; empty when nothing."""
    words = " ".join(rest.split())
    return f"; beside it: {words[:150]!r}" if len(words) > 2 else ""


def what_is_in(text: str, key: re.Pattern[str], total: int, name: str) -> str:
    """Which of ``total`` items (``key`` finds an item's number) one answer's text holds, its
    size, and what else is in it."""
    found = sorted({int(m.group(1)) for m in key.finditer(text)})
    return f"{name} {ranges(found)} of {total:,} in {len(text.encode('utf-8')):,} bytes" + _notice(key.sub("", text))


def _tree_paths(data: str) -> list[str]:
    """A tree page's entries, depth first, as paths ("a0/b2/entry-0218.txt")."""
    try:
        nodes = json.loads(data)
    except ValueError:
        return []
    paths: list[str] = []

    def walk(children: Any, prefix: str) -> None:
        for node in children if isinstance(children, list) else []:
            if isinstance(node, dict) and isinstance(node.get("name"), str):
                paths.append(prefix + node["name"])
                walk(node.get("children"), prefix + node["name"] + "/")

    walk(nodes, "")
    return paths


def tree_entries(root: Path) -> list[str]:
    """Every entry under the tree, depth first, by name: what directory_tree pages must give."""
    found: list[str] = []

    def walk(folder: Path, prefix: str) -> None:
        for name in sorted(os.listdir(folder)):
            found.append(prefix + name)
            if (folder / name).is_dir():
                walk(folder / name, prefix + name + "/")

    walk(root / TREE, "")
    return found


def _hits(root: Path) -> list[str]:
    return [str(root / TREE / path) for path in tree_entries(root) if path.endswith(".log")]


WALKS = {
    "page-read": Walk("lines", "read_text_file", lambda root: {"path": str(root / BIG)},
                      lambda root: [big_line(n) for n in range(1, BIG_LINES + 1)],
                      re.compile(r"Lines ([\d,]+)-([\d,]+) of [\d,]+"), lambda data: data.splitlines(keepends=True),
                      re.compile(rf"line (\d{{5}}) of {BIG_LINES}: [a-z ]+"), "lines",
                      noise=re.compile(r'quoted|slash|tab|\\[nt]|[\\"]')),
    "page-tree": Walk("entries", "directory_tree", lambda root: {"path": str(root / TREE)}, tree_entries,
                      re.compile(r"Entries ([\d,]+)-([\d,]+) of [\d,]+"), _tree_paths,
                      re.compile(r"entry-(\d{4})\.(?:log|txt)"), "files",
                      noise=re.compile(r'\b(?:file|directory|a\d|b\d|name|type|children)\b|[\\"{}\[\]:,]'),
                      repeats_parents=True),
    "page-search": Walk("hits", "search_files", lambda root: {"path": str(root / TREE), "pattern": "**/*.log"}, _hits,
                        re.compile(r"Matches ([\d,]+)-([\d,]+) of [\d,]+"), lambda data: data.split("\n"),
                        re.compile(r'[^\s"\\]*entry-(\d{4})\.log'), "hits", noise=re.compile(r'\\n|[\\"]')),
    "page-grep": Walk("matching lines", "grep_files", lambda root: {"path": str(root / TREE), "pattern": "match here"},
                      lambda root: [f"{path}:1: entry {path[-8:-4]}: match here" for path in _hits(root)],
                      re.compile(r"Matching lines ([\d,]+)-([\d,]+)"), lambda data: data.split("\n"),
                      re.compile(r'[^\s"\\]*entry-\d{4}\.log:1: entry (\d{4}): match here'), "matching lines",
                      noise=re.compile(r'\\n|[\\"]')),
}


# --- the host's own limit ---------------------------------------------------------------------

PROBES = "probes"
PROBE_SIZES = list(range(1_000, 200_001, 250))  # bytes: the bisection's grid
MEASURE_BUDGET = 1_000_000  # --max-answer-bytes for the measuring run: the server cuts nothing


def probe_text(size: int) -> str:
    """The content of the probe file of ``size`` bytes: ASCII lines of 64 bytes, numbered."""
    text = "".join(f"probe {size:06d} line {n:05d}: ".ljust(63, "x") + "\n" for n in range(size // 64 + 1))
    return text[:size - 1] + "\n"


def probe_key(size: int) -> re.Pattern[str]:
    return re.compile(rf"probe {size:06d} line (\d{{5}}): x*\n?")


def bisect(whole: list[bool]) -> tuple[int, int, int | None]:
    """Replay a bisection over ``PROBE_SIZES`` from the answers so far (True: passed whole):
    ``(largest index known whole or -1, smallest known cut or len, next index to probe)``."""
    low, high = -1, len(PROBE_SIZES)
    for passed in whole:
        middle = (low + high) // 2
        low, high = (middle, high) if passed else (low, middle)
    return low, high, (low + high) // 2 if high - low > 1 else None


def probe_replay(texts: list[str]) -> list[tuple[int, bool]]:
    """``(size asked, passed whole)`` of each probe read, in order, replayed from the reads'
    answers as they first arrived."""
    replay: list[tuple[int, bool]] = []
    for text in texts:
        following = bisect([whole for _, whole in replay])[2]
        if following is None:
            break
        size = PROBE_SIZES[following]
        replay.append((size, saw(text, probe_text(size))))
    return replay


def measure_script(root: Path) -> Script:
    """Write a probe of the next size to try, read it, and so on: results alternate between the
    write's answer and the read's. Each read is judged when it is new (a host may later shorten
    old results in the history it sends: Gemini CLI masks them), once (a host may send a turn twice)."""
    verdicts: dict[int, bool] = {}  # a read's place among the results: did it arrive whole

    def script(turn: Turn) -> Step:
        count = len(turn.results)
        if count and count % 2 == 0 and count - 1 not in verdicts:
            asked = bisect([verdicts[i] for i in sorted(verdicts)])[2]
            verdicts[count - 1] = asked is not None and saw(turn.last.verbatim, probe_text(PROBE_SIZES[asked]))
        following = bisect([verdicts[i] for i in sorted(verdicts)])[2]
        if following is None:
            return Say("Measured.")
        path = str(root / PROBES / f"{PROBE_SIZES[following]:06d}.txt")
        if count % 2:  # the probe is written: read it
            return turn.call("read_text_file", path=path)
        return turn.call("write_file", path=path, content=probe_text(PROBE_SIZES[following]))

    return script


def make_probes(root: Path) -> None:
    (root / PROBES).mkdir()


def measured(outcome: Outcome) -> tuple[int | None, int | None, str]:
    """(largest size passed whole, smallest size cut, what the model got for that one)."""
    texts = [result["verbatim"] for result in outcome.seen_results()[1::2]]
    replay = probe_replay(texts)
    low, high, _ = bisect([whole for _, whole in replay])
    largest = PROBE_SIZES[low] if low >= 0 else None
    smallest_cut = PROBE_SIZES[high] if high < len(PROBE_SIZES) else None
    cut_text = next((text for text, (size, _) in zip(texts, replay) if size == smallest_cut), "")
    return largest, smallest_cut, cut_text


# --- an image -----------------------------------------------------------------------------------

PICTURE = "picture.png"


def png(width: int, height: int, seed: int = 20) -> bytes:
    """A valid RGB PNG of noise (so it does not compress: its size is about width * height * 3)."""
    pixels = random.Random(seed).randbytes(width * 3 * height)
    raw = b"".join(b"\x00" + pixels[y * width * 3:(y + 1) * width * 3] for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")


def make_picture(root: Path) -> None:
    (root / PICTURE).write_bytes(png(800, 600))
