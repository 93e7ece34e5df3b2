"""Pattern matching for ``search_files``, ``directory_tree`` excludes and ``grep_files``.

Everything here is pure: strings and bytes in, answers out, no paths opened. The walker in the
tool layer asks three questions, and each has a compiled matcher:

* **Does this path match a glob?** ``compile_glob`` gives a ``Glob`` with the semantics of
  minimatch with ``dot: true`` (what the official Node server uses): ``*``, ``?``, ``[...]``,
  ``**`` segments, ``{a,b}`` braces, backslash escapes, dotfiles matched like any name.
  ``Glob.could_match_below`` lets the walker skip directories that cannot hold a match.
* **Is this path excluded?** ``compile_excludes`` mirrors the official ``directory_tree``: a
  pattern with ``*`` is a glob over the whole relative path; one without names a file or
  directory anywhere in the tree (``node_modules``, ``build/out``).
* **Which lines of this file match?** ``compile_grep`` gives a ``Grep`` whose
  ``search_lines`` returns numbered matches with context lines.

Patterns come from a language model, so every matcher bounds its work. A glob is translated once
into one anchored ``re`` pattern that cannot backtrack catastrophically: no quantifier is
nested in an unbounded one, and each ``*`` or ``**`` that is followed by more pattern commits to
the *earliest* place the rest of its segment (or run of segments) matches, inside an atomic group
``(?>...)``. That is always correct for globs, because the next ``*`` can absorb whatever lies
between the earliest and any later place, and it keeps matching near linear in the path length.
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
import functools
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AnyStr

if TYPE_CHECKING:
    import regex


__all__ = [
    "MAX_BRACE_ALTERNATIVES",
    "MAX_EXPANDED_GLOB_CHARS",
    "MAX_GLOB_LENGTH",
    "MAX_GREP_PATTERN_LENGTH",
    "MAX_LINE_CHARS",
    "Excludes",
    "Glob",
    "Grep",
    "GrepFileResult",
    "GrepMatch",
    "GrepTimeout",
    "GrepTooSlow",
    "compile_excludes",
    "compile_glob",
    "compile_grep",
    "relative_posix",
]

MAX_GLOB_LENGTH = 4096
MAX_BRACE_ALTERNATIVES = 1000
# Brace expansion multiplies the pattern text; cap the total so one request cannot make us
# compile a regex of megabytes (1000 alternatives of 4 KiB each would be 4 MB).
MAX_EXPANDED_GLOB_CHARS = 65536
MAX_GREP_PATTERN_LENGTH = 1000
MAX_LINE_CHARS = 500


def _shown(pattern: str) -> str:
    """A pattern quoted for an error message, shortened: it may be thousands of characters long."""
    return repr(pattern if len(pattern) <= 80 else pattern[:80] + "…")


def relative_posix(parts: tuple[str, ...]) -> str:
    """The relative path the matchers expect: segments joined with ``/`` (``()`` gives ``""``)."""
    return "/".join(parts)


# --- globs --------------------------------------------------------------------------------------

# ASCII meaning of the POSIX classes usable inside brackets, e.g. ``[[:digit:]_]``.
_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "word": "a-zA-Z0-9_",
    "xdigit": "0-9A-Fa-f",
}

# One parsed segment: regex snippets that each match exactly one character, and None for ``*``.
_Tokens = list[str | None]


def _parse_class(pattern: str, start: int) -> tuple[str, int]:
    """Translate the bracket expression at ``pattern[start] == "["``; return (regex, index after it).

    ``!`` or ``^`` first negates; a ``]`` right after the opening (and negation) is a member;
    ``a-z`` is a range; a backslash escapes the next character. A class never matches ``/``:
    a negated one excludes it explicitly, a positive one is guarded by a ``(?!/)`` lookahead.
    """
    end = len(pattern)
    i = start + 1
    negate = i < end and pattern[i] in "!^"
    i += negate
    items: list[str] = []
    first = True
    while True:
        if i >= end:
            raise ValueError(f"unterminated character class {pattern[start:start + 20]!r}")
        char = pattern[i]
        if char == "]" and not first:
            i += 1
            break
        first = False
        if pattern.startswith("[:", i):
            close = pattern.find(":]", i + 2)
            name = pattern[i + 2 : close]
            if close >= 0 and name.isalpha():  # otherwise "[" is a plain member
                if name not in _POSIX_CLASSES:
                    raise ValueError(f"unknown character class [:{name}:]")
                items.append(_POSIX_CLASSES[name])
                i = close + 2
                continue
        low, i = _class_char(pattern, i, start)
        if i + 1 < end and pattern[i] == "-" and pattern[i + 1] != "]":
            high, i = _class_char(pattern, i + 1, start)
            if high < low:
                raise ValueError(f"reversed range {low}-{high} in a character class")
            items.append(f"{re.escape(low)}-{re.escape(high)}")
        else:
            items.append(re.escape(low))
    body = "".join(items)
    return (f"[^/{body}]" if negate else f"(?!/)[{body}]"), i


def _class_char(pattern: str, i: int, start: int) -> tuple[str, int]:
    """One (possibly backslash-escaped) member character of a class; return it and the next index."""
    if pattern[i] != "\\":
        return pattern[i], i + 1
    if i + 1 >= len(pattern):
        raise ValueError(f"unterminated character class {pattern[start:start + 20]!r}")
    return pattern[i + 1], i + 2


def _brace_group(pattern: str) -> tuple[int, int, list[int]] | None:
    """The first brace group to expand: (index of ``{``, index of ``}``, indexes of its commas).

    Like the shell, only a balanced group with a top-level comma expands; ``{a}`` and a lone
    ``{`` are literal. Of nested groups the outermost expandable one is returned, so that
    ``{a,{b,c}}`` expands once into ``a``, ``b``, ``c`` rather than into duplicates.
    """
    open_groups: list[tuple[int, list[int]]] = []
    found: tuple[int, int, list[int]] | None = None
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            try:
                i = _parse_class(pattern, i)[1]  # braces and commas inside a class are members
                continue
            except ValueError:
                pass  # not a class: a literal "[" (compile_glob reports it later)
        elif char == "{":
            open_groups.append((i, []))
        elif char == "," and open_groups:
            open_groups[-1][1].append(i)
        elif char == "}" and open_groups:
            opened, commas = open_groups.pop()
            if commas and (found is None or opened < found[0]):
                found = (opened, i, commas)
            if found is not None and not open_groups:
                return found
        i += 1
    return found


def _expand_braces(pattern: str) -> list[str]:
    """All brace alternatives of ``pattern``, in order, without duplicates.

    A work list rather than recursion: a pattern can hold a thousand groups. Every pending
    string yields at least one result, so ``done + pending`` is a lower bound on the total and
    the limit trips before anything explodes.
    """
    if "{" not in pattern:
        return [pattern]
    pending = [pattern]
    done: list[str] = []
    while pending:
        current = pending.pop()
        group = _brace_group(current) if "{" in current else None
        if group is None:
            done.append(current)
            continue
        opened, closed, commas = group
        head, tail = current[:opened], current[closed + 1 :]
        cuts = [opened, *commas, closed]
        options = [head + current[a + 1 : b] + tail for a, b in zip(cuts, cuts[1:], strict=False)]
        pending.extend(reversed(options))  # a stack: reversed keeps left-to-right order
        if len(done) + len(pending) > MAX_BRACE_ALTERNATIVES:
            raise ValueError(f"glob {_shown(pattern)} expands to more than {MAX_BRACE_ALTERNATIVES} brace alternatives")
    return list(dict.fromkeys(done))


def _strip_root(pattern: str) -> tuple[str, bool]:
    """Drop leading ``./`` and ``/`` (both mean "the search root"); return (rest, anchored)."""
    rest = pattern
    while rest.startswith(("./", "/")):
        rest = rest[2:] if rest.startswith("./") else rest[1:]
    return rest, rest != pattern


def _parse_segments(alternative: str) -> list[_Tokens]:
    """Split one brace-free alternative into segments of tokens; empty segments are dropped."""
    segments: list[_Tokens] = [[]]
    i = 0
    while i < len(alternative):
        char = alternative[i]
        if char == "\\":
            if i + 1 == len(alternative):
                raise ValueError("a trailing backslash escapes nothing")
            char = alternative[i + 1]
            i += 2
            if char == "/":  # a name cannot hold "/": an escaped one still separates segments
                segments.append([])
            else:
                segments[-1].append(re.escape(char))
            continue
        if char == "[":
            source, i = _parse_class(alternative, i)
            segments[-1].append(source)
            continue
        if char == "/":
            segments.append([])
        elif char == "*":
            segments[-1].append(None)
        elif char == "?":
            segments[-1].append("[^/]")
        else:
            segments[-1].append(re.escape(char))
        i += 1
    return [tokens for tokens in segments if tokens]


def _segment_source(tokens: _Tokens) -> str:
    """Regex for one segment: P0 *P1 *P2 ... *Pm, where each P is a run of one-character tokens.

    P0 is anchored at the segment start and the last ``*Pm`` at its end (greedy ``[^/]*`` then Pm
    only backtracks linearly). Each middle ``*Pi`` commits to the earliest Pi: ``(?>[^/]*?Pi)``.
    """
    pieces: list[list[str]] = [[]]
    after_star = False
    for token in tokens:
        if token is None:
            if not after_star:  # "**" inside a segment, or "***", is just "*"
                pieces.append([])
            after_star = True
        else:
            pieces[-1].append(token)
            after_star = False
    source = "".join(pieces[0])
    if len(pieces) == 1:
        return source
    for middle in pieces[1:-1]:
        source += "(?>[^/]*?" + "".join(middle) + ")"
    return source + "[^/]*" + "".join(pieces[-1])


def _alternative_source(segments: list[str | None]) -> str:
    """Regex for one alternative; ``None`` in ``segments`` is a ``**`` segment.

    The segments form runs R0 ** R1 ** ... ** Rk. R0 is anchored at the start and Rk at the end;
    a middle run commits to its earliest segment-aligned place (sound because a ``**`` follows),
    and ``(?![^/])`` makes that place end on a segment boundary. A trailing ``**`` also matches
    zero segments, so ``a/**`` matches ``a`` itself, as in minimatch.
    """
    runs: list[list[str]] = [[]]
    for segment in segments:
        if segment is None:
            if runs[-1] or len(runs) == 1:  # "**/**" is one "**"
                runs.append([])
        else:
            runs[-1].append(segment)
    source = "/".join(runs[0])
    before = bool(runs[0])  # whether something precedes, so a "/" must separate
    last = len(runs) - 1
    for index in range(1, last + 1):
        body = "/".join(runs[index])
        sep = "/" if before else ""
        if index < last:
            source += sep + "(?>(?:.*?/)??" + body + "(?![^/]))"
        elif body:
            source += sep + "(?:.*/)?" + body
        else:
            source += "(?:/.*)?" if before else ".*"
        before = True
    return source


@functools.lru_cache(maxsize=1024)
def _segment_regex(source: str) -> re.Pattern[str]:
    return re.compile(source, re.DOTALL)


class Glob:
    """A compiled glob; see ``compile_glob`` for the syntax."""

    __slots__ = ("pattern", "_regex", "_alternatives", "_suffixes")

    def __init__(self, pattern: str, alternatives: list[list[str | None]], suffixes: tuple[str, ...] | None = None) -> None:
        self.pattern = pattern
        self._alternatives = alternatives  # per alternative: segment regex sources, None for "**"
        # The literal text every alternative ends with ("**/*.py": ".py"), or None when one ends
        # with a wildcard: a cheap test that rejects most paths before the regex runs.
        self._suffixes = suffixes
        sources = [_alternative_source(segments) for segments in alternatives]
        joined = sources[0] if len(sources) == 1 else "|".join(f"(?:{s})" for s in sources)
        self._regex = re.compile(joined, re.DOTALL)  # DOTALL: a file name may contain "\n"

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"

    @property
    def suffixes(self) -> tuple[str, ...] | None:
        """Literal endings one of which every matching path has (``**/*.py``: ``(".py",)``), or None
        when some alternative ends with a wildcard. Never holding ``/``, they can be tested on the
        last name alone, before a walker builds the relative path."""
        return self._suffixes

    def matches(self, relative_path: str) -> bool:
        """Whether a POSIX relative path (``a/b/c.py``: no leading ``./``, ``/`` separators) matches."""
        if self._suffixes is not None and not relative_path.endswith(self._suffixes):
            return False  # a match would end with one of them (str.endswith: ~10x cheaper than the regex)
        return self._regex.fullmatch(relative_path) is not None

    def could_match_below(self, dir_relative_path: str) -> bool:
        """False when no path strictly below this directory can match (``""`` is the root).

        Conservative: each directory name is matched against the pattern segment at its depth,
        up to the first ``**``; once a ``**`` is reached anything below may match. A pattern
        without ``**`` has a fixed depth, so a directory that deep or deeper holds no match.
        """
        names = dir_relative_path.split("/") if dir_relative_path else []
        return any(_could_match_below(segments, names) for segments in self._alternatives)


def _could_match_below(segments: list[str | None], names: list[str]) -> bool:
    for index, name in enumerate(names):
        if index == len(segments):
            return False  # the pattern ends above this directory
        segment = segments[index]
        if segment is None:
            return True
        if _segment_regex(segment).fullmatch(name) is None:
            return False
    return len(names) < len(segments)  # children sit one level deeper: the pattern must reach it


def compile_glob(pattern: str) -> Glob:
    """Compile a glob for relative POSIX paths, with minimatch ``dot: true`` semantics.

    * ``*`` matches any run of characters except ``/``, ``?`` one character except ``/``;
      both match dotfiles.
    * ``[abc]``, ``[a-z]``, ``[!a]`` / ``[^a]``, POSIX ``[[:digit:]]`` (ASCII); never ``/``.
    * ``**`` as a whole segment matches zero or more segments: ``**/*.py`` matches ``a.py`` and
      ``x/y/a.py``; ``a/**`` matches ``a``, ``a/b`` and ``a/b/c``. Elsewhere (``a**b``) it is ``*``.
    * ``{a,b}`` alternatives, nestable (``{a}`` and unbalanced braces are literal); at most
      ``MAX_BRACE_ALTERNATIVES`` after expansion. Not supported (taken literally): ``{1..3}``
      ranges, extglobs like ``@(a|b)``, and minimatch's leading ``!`` negation.
    * A backslash escapes the next character (so ``\\`` cannot be a Windows separator).
    * A leading ``./`` or ``/`` is ignored (both mean the search root); empty segments from
      ``a//b`` or a trailing ``/`` are ignored. Matching is case-sensitive.

    Raises ``ValueError`` for an empty pattern, one longer than ``MAX_GLOB_LENGTH``, an
    unterminated class, a reversed range, a trailing lone backslash or too many alternatives.
    """
    if not pattern:
        raise ValueError("glob pattern is empty")
    if len(pattern) > MAX_GLOB_LENGTH:
        raise ValueError(f"glob pattern is {len(pattern)} characters long; the limit is {MAX_GLOB_LENGTH}")
    alternatives = []
    suffixes: list[str] = []
    expanded = 0
    for alternative in _expand_braces(pattern):
        expanded += len(alternative)
        if expanded > MAX_EXPANDED_GLOB_CHARS:
            raise ValueError(f"glob {_shown(pattern)} expands to more than {MAX_EXPANDED_GLOB_CHARS} characters")
        try:
            segments = _parse_segments(_strip_root(alternative)[0])
        except ValueError as exc:
            raise ValueError(f"invalid glob {_shown(pattern)}: {exc}") from None
        if segments:  # "{a,}" has an empty alternative, which matches no path
            alternatives.append([None if s == [None, None] else _segment_source(s) for s in segments])
            suffixes.append(_literal_suffix(segments[-1]))
    if not alternatives:
        raise ValueError(f"glob pattern {_shown(pattern)} names no path")
    return Glob(pattern, alternatives, tuple(suffixes) if all(suffixes) else None)


def _literal_suffix(tokens: _Tokens) -> str:
    """The literal characters a segment ends with (``*.py``: ``.py``; ``a*``, ``[ab]`` and ``**``: "").

    A literal token is ``re.escape`` of one character: the character itself or a backslash and it;
    ``?`` and classes are longer snippets, ``*`` is None.
    """
    suffix = []
    for token in reversed(tokens):
        if token is None or len(token) > 2 or (len(token) == 2 and token[0] != "\\"):
            break
        suffix.append(token[-1])
    return "".join(reversed(suffix))


# --- excludes -----------------------------------------------------------------------------------


class Excludes:
    """Compiled exclude patterns; see ``compile_excludes``."""

    __slots__ = ("patterns", "_globs")

    def __init__(self, patterns: list[str], globs: list[Glob]) -> None:
        self.patterns = patterns
        self._globs = globs

    def __repr__(self) -> str:
        return f"Excludes({self.patterns!r})"

    def excluded(self, relative_path: str) -> bool:
        """Whether the relative POSIX path is excluded (a walker also skips an excluded directory's contents)."""
        return any(glob.matches(relative_path) for glob in self._globs)


def compile_excludes(patterns: list[str]) -> Excludes:
    """Compile ``excludePatterns`` the way the official ``directory_tree`` interprets them.

    * A pattern containing ``*`` is a glob matched against the whole relative path, so
      ``*.log`` excludes ``x.log`` but not ``a/x.log``; write ``**/*.log`` for every depth.
    * Any other pattern names a path anywhere: it excludes a path when it matches a run of
      whole segments of it (officially: the pattern itself, ``**/p`` or ``**/p/**``). So
      ``node_modules`` excludes ``node_modules`` and ``a/node_modules/x.js``; ``build/out``
      excludes ``build/out/x`` and ``src/build/out``, not ``build/output``. ``?``, classes
      and braces still work as in globs. With a leading ``/`` or ``./`` it is anchored at the
      root instead: ``/build`` excludes ``build`` and ``build/x``, not ``src/build``.

    Empty strings are ignored; other invalid patterns raise ``ValueError`` as in ``compile_glob``.
    """
    globs = []
    alternatives = 0
    for pattern in patterns:
        if not pattern:
            continue
        if "*" in pattern:
            globs.append(compile_glob(pattern))
        else:
            rest, anchored = _strip_root(pattern)
            if not rest:
                raise ValueError(f"exclude pattern {_shown(pattern)} names no path")
            globs.append(compile_glob(f"{rest}/**" if anchored else f"**/{rest}/**"))
        # One budget for the whole list: many patterns of many braces each would otherwise
        # multiply the compile work a single request can ask for.
        alternatives += len(globs[-1]._alternatives)
        if alternatives > MAX_BRACE_ALTERNATIVES:
            raise ValueError(f"the exclude patterns expand to more than {MAX_BRACE_ALTERNATIVES} brace alternatives in all")
    return Excludes(list(patterns), globs)


# --- grep ---------------------------------------------------------------------------------------

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
