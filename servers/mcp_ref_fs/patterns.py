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
* **Which lines of this file match?** is :mod:`.grep`'s question (``compile_grep``).

Patterns come from a language model, so every matcher bounds its work. A glob is translated once
into one anchored ``re`` pattern that cannot backtrack catastrophically: no quantifier is
nested in an unbounded one, and each ``*`` or ``**`` that is followed by more pattern commits to
the *earliest* place the rest of its segment (or run of segments) matches, inside an atomic group
``(?>...)``. That is always correct for globs, because the next ``*`` can absorb whatever lies
between the earliest and any later place, and it keeps matching near linear in the path length.
Grep patterns are real regular expressions, which no translation can tame: :mod:`.grep` runs them.
"""

from __future__ import annotations

import functools
import re


__all__ = [
    "MAX_BRACE_ALTERNATIVES",
    "MAX_EXPANDED_GLOB_CHARS",
    "MAX_GLOB_LENGTH",
    "Excludes",
    "Glob",
    "compile_excludes",
    "compile_glob",
    "relative_posix",
]

MAX_GLOB_LENGTH = 4096
MAX_BRACE_ALTERNATIVES = 1000
# Brace expansion multiplies the pattern text; cap the total so one request cannot make us
# compile a regex of megabytes (1000 alternatives of 4 KiB each would be 4 MB).
MAX_EXPANDED_GLOB_CHARS = 65536


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
