"""Unit tests of servers/mcp_ref_fs/patterns.py and grep.py: globs, excludes and grep, as plain values.

The glob tables follow minimatch with ``dot: true`` (what the official Node server uses); a small
reference matcher written here from the rules cross-checks the regex translation on random cases.
"""

from __future__ import annotations

import random
import time
from functools import lru_cache

import pytest

from mcp_ref_fs.grep import MAX_GREP_PATTERN_LENGTH, MAX_LINE_CHARS, GrepFileResult, GrepMatch, GrepTimeout, compile_grep
from mcp_ref_fs.patterns import (
    MAX_BRACE_ALTERNATIVES,
    MAX_EXPANDED_GLOB_CHARS,
    MAX_GLOB_LENGTH,
    Excludes,
    Glob,
    compile_excludes,
    compile_glob,
    relative_posix,
)

# --- relative_posix -----------------------------------------------------------------------------


@pytest.mark.parametrize(("parts", "expected"), [(("a", "b", "c.py"), "a/b/c.py"), (("x",), "x"), ((), "")])
def test_relative_posix_joins_segments_with_slashes(parts, expected):
    assert relative_posix(parts) == expected


# --- globs: matching ----------------------------------------------------------------------------

STAR_AND_QUESTION = [
    ("*.py", "a.py", True),
    ("*.py", "dir/a.py", False),
    ("*", "a/b", False),
    ("*", ".hidden", True),
    ("*.txt", ".txt", True),
    (".*", ".git", True),
    ("a*", "a", True),
    ("*a*b*c", "xaybzc", True),
    ("*a*b*c", "abcabc", True),
    ("*a*b*c", "xaybzcd", False),
    ("*a*a*b", "aab", True),
    ("*a*a*b", "ab", False),
    ("a**b", "axyb", True),
    ("a**b", "ax/yb", False),
    ("***", "abc", True),
    ("***", "a/b", False),
    ("?.py", "a.py", True),
    ("?.py", "ab.py", False),
    ("?", ".", True),
    ("a?b", "a/b", False),
    ("*.PY", "a.py", False),
    ("*", "new\nline", True),
]

CLASSES = [
    ("[abc].txt", "b.txt", True),
    ("[abc].txt", "d.txt", False),
    ("[a-c]x", "bx", True),
    ("[a-c]x", "dx", False),
    ("[!a-c]x", "dx", True),
    ("[!a-c]x", "ax", False),
    ("[^a]", "b", True),
    ("[^a]", "a", False),
    ("[.]*", ".git", True),
    ("[]]", "]", True),
    ("[!]]", "a", True),
    ("[!]]", "]", False),
    ("[a-]", "-", True),
    ("[\\]]", "]", True),
    ("[\\!a]", "!", True),
    ("[+-\\-]", ",", True),
    ("[[:digit:]]x", "7x", True),
    ("[[:digit:]]x", "ax", False),
    ("[[:upper:][:digit:]_]", "Q", True),
    ("[[:upper:][:digit:]_]", "_", True),
    ("[[:upper:][:digit:]_]", "q", False),
    ("[[:a]", ":", True),  # no ":]" closes it: "[" ":" "a" are plain members
    ("[[:a]x:]", "ax:]", True),  # "[:a]x:]" is no class name: "[" ":" "a" are plain members
    ("!a", "!a", True),  # no minimatch negation
    ("[{}]", "{", True),
]

SLASH_NEVER_MATCHED = [
    ("a[/]b", "a/b", False),
    ("a[!x]b", "a/b", False),
    ("a[^x]b", "a/b", False),
    ("a[--0]b", "a/b", False),  # the range "-".."0" holds "/"
    ("a[[:punct:]]b", "a/b", False),
    ("a[[:punct:]]b", "a.b", True),
    ("a?b", "a/b", False),
    ("a*b", "a/b", False),
]

BRACES = [
    ("{a,b}.txt", "a.txt", True),
    ("{a,b}.txt", "c.txt", False),
    ("*.{py,pyi}", "x.pyi", True),
    ("{src,lib}/**/*.ts", "lib/x/y.ts", True),
    ("{a,{b,c}}d", "cd", True),
    ("{a/b,c}/d", "a/b/d", True),
    ("a{,.bak}", "a", True),
    ("a{,.bak}", "a.bak", True),
    ("{x{a,b}}", "{xa}", True),  # the outer group has no comma: literal, like the shell
    ("{x{a,b}{c,d}}", "{xbc}", True),
    ("{a}", "{a}", True),
    ("{a,b", "{a,b", True),
    ("{a{b,c}", "{ac", True),
    ("{[,],x}", ",", True),  # the comma inside the class does not split
    ("\\{a,b}", "{a,b}", True),
    ("{a\\,b,c}", "a,b", True),
    ("{a\\,b,c}", "b", False),
    ("{./a,/b}", "b", True),
]

ESCAPES = [
    ("\\*", "*", True),
    ("\\*", "x", False),
    ("\\?", "?", True),
    ("\\[a]", "[a]", True),
    ("a\\/b", "a/b", True),  # an escaped slash still separates segments
    ("\\*\\*/x", "**/x", True),  # escaped stars are no globstar
    ("\\*\\*/x", "a/x", False),
]

GLOBSTARS = [
    ("**/*.py", "a.py", True),
    ("**/*.py", "x/y/a.py", True),
    ("**/*.py", "x/y/a.pyc", False),
    ("**", "anything/at/all", True),
    ("**", ".git/config", True),
    ("a/**", "a", True),
    ("a/**", "a/b", True),
    ("a/**", "a/b/c", True),
    ("a/**", "ab", False),
    ("a/**", "b/a", False),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**/b", "a/x/yb", False),
    ("a/**/**/b", "a/b", True),
    ("**/node_modules/**", "node_modules", True),
    ("**/node_modules/**", "x/node_modules/y", True),
    ("**/node_modules/**", "x/node_modules_old/y", False),
    ("**/a/**/b", "a/x/a/b", True),
    ("**/a/**/b", "b/a", False),
    ("**/a/**", "x/a/y/a", True),
    ("src/**/test_*/**/*.py", "src/test_a/b.py", True),
    ("src/**/test_*/**/*.py", "src/x/test_a/y/z/b.py", True),
    ("src/**/test_*/**/*.py", "src/x/test_a", False),
    (".*/**", ".git/objects/ab", True),
    ("**/.*", "a/.env", True),
]

ROOTS_AND_SLASHES = [
    ("./src/*.py", "src/a.py", True),
    ("/src/*.py", "src/a.py", True),
    ("././a", "a", True),
    ("src/", "src", True),
    ("a//b", "a/b", True),
]


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    STAR_AND_QUESTION + CLASSES + SLASH_NEVER_MATCHED + BRACES + ESCAPES + GLOBSTARS + ROOTS_AND_SLASHES,
)
def test_glob_matches_like_minimatch_with_dot_true(pattern, path, expected):
    assert compile_glob(pattern).matches(path) is expected


def test_double_star_matches_zero_or_more_directories():
    glob = compile_glob("**/*.py")
    assert [glob.matches(p) for p in ("a.py", "x/a.py", "x/y/z/a.py", "x/y/z/a.txt")] == [True, True, True, False]


def test_trailing_double_star_matches_the_directory_itself():
    glob = compile_glob("a/**")
    assert glob.matches("a") and glob.matches("a/b/c") and not glob.matches("abc")


def test_glob_keeps_its_pattern_and_shows_it_in_repr():
    glob = compile_glob("src/*.py")
    assert isinstance(glob, Glob)
    assert glob.pattern == "src/*.py"
    assert repr(glob) == "Glob('src/*.py')"


def test_many_stars_in_a_segment_match_in_bounded_time():
    # A naive translation to [^/]*a[^/]*a... backtracks exponentially here.
    started = time.monotonic()
    assert not compile_glob("*a*a*a*a*a*a*a*a*a*a*a*b").matches("a" * 4000)
    assert compile_glob("*a*a*a*a*a*a*a*a*a*a*a*b").matches("a" * 4000 + "b")
    assert time.monotonic() - started < 10


def test_many_globstars_match_in_bounded_time():
    started = time.monotonic()
    path = "a/" * 2000 + "c"
    assert not compile_glob("**/a/**/a/**/a/**/a/**/b").matches(path)
    assert compile_glob("**/a/**/a/**/a/**/a/**/c").matches(path)
    assert not compile_glob("**/*a*a*a*/**/*a*a*/**/b").matches("aaaaaaaaaaaa/" * 300 + "c")
    assert time.monotonic() - started < 10


# --- globs: a reference matcher for random cross-checks ------------------------------------------

_TOKENS = ["a", "b", "*", "?", "[ab]", "[!a]"]


def _reference_segment(tokens: tuple[str, ...], name: str) -> bool:
    @lru_cache(maxsize=None)
    def match(t: int, n: int) -> bool:
        if t == len(tokens):
            return n == len(name)
        token = tokens[t]
        if token == "*":
            return any(match(t + 1, k) for k in range(n, len(name) + 1))
        if n == len(name):
            return False
        char = name[n]
        ok = {"?": True, "[ab]": char in "ab", "[!a]": char != "a"}.get(token, token == char)
        return ok and match(t + 1, n + 1)

    return match(0, 0)


def _reference_path(segments: tuple[tuple[str, ...], ...], names: tuple[str, ...]) -> bool:
    if not segments:
        return not names
    if segments[0] in (("**",), ("*", "*")):  # a segment of exactly two stars is a globstar
        return any(_reference_path(segments[1:], names[k:]) for k in range(len(names) + 1))
    return bool(names) and _reference_segment(segments[0], names[0]) and _reference_path(segments[1:], names[1:])


def test_glob_agrees_with_a_reference_matcher_on_random_cases():
    rng = random.Random(20260728)
    for _ in range(3000):
        segments = tuple(
            ("**",) if rng.random() < 0.25 else tuple(rng.choice(_TOKENS) for _ in range(rng.randint(1, 5)))
            for _ in range(rng.randint(1, 4))
        )
        names = tuple("".join(rng.choice("abc") for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(1, 4)))
        pattern, path = "/".join("".join(s) for s in segments), "/".join(names)
        glob = compile_glob(pattern)
        expected = _reference_path(segments, names)
        assert glob.matches(path) is expected, (pattern, path)
        if expected:  # pruning must never hide a match: every ancestor directory could hold it
            for depth in range(len(names)):
                assert glob.could_match_below("/".join(names[:depth])), (pattern, path, depth)


_SUFFIX_TOKENS = ["a", ".", "\\*", "\\\\", "\\[", "+", "\n", "*", "?", "[.a]", "{a,.}", "{x,}", "**"]


def test_the_literal_suffix_shortcut_never_changes_an_answer():
    """``Glob.matches`` rejects a path that lacks every alternative's literal ending before the
    regex runs; on random globs (escapes, regex metacharacters, braces, classes) it answers
    exactly as the regex alone."""
    rng = random.Random(9)
    for _ in range(3000):
        pattern = "/".join("".join(rng.choice(_SUFFIX_TOKENS) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 3)))
        try:
            glob = compile_glob(pattern)
        except ValueError:
            continue
        for _ in range(10):
            path = "/".join("".join(rng.choice("a.*\\[+\nx") for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(1, 3)))
            assert glob.matches(path) is (glob._regex.fullmatch(path) is not None), (pattern, path)


@pytest.mark.parametrize(("pattern", "suffixes"), [
    ("**/*.py", (".py",)), ("*.{py,pyi}", (".py", ".pyi")), ("src/a\\*b", ("a*b",)), ("a?", None), ("*.[ch]", None),
    ("a/**", None), ("x*", None), ("{*.md,docs/**}", None),
])
def test_globs_know_the_literal_text_every_match_ends_with(pattern, suffixes):
    assert compile_glob(pattern)._suffixes == suffixes


# --- globs: pruning -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "directory", "expected"),
    [
        ("src/**/*.py", "", True),
        ("src/**/*.py", "src", True),
        ("src/**/*.py", "src/a/b", True),
        ("src/**/*.py", "docs", False),
        ("src/**/*.py", "docs/src", False),
        ("*.py", "", True),
        ("*.py", "a", False),  # a pattern without "**" has a fixed depth
        ("*.py", "x.py/b", False),  # deeper than the pattern itself
        ("a/*/c.txt", "a", True),
        ("a/*/c.txt", "a/b", True),
        ("a/*/c.txt", "a/b/c", False),
        ("a/*/c.txt", "x", False),
        ("a", "a", False),
        ("a/b", "a", True),
        ("**/*.py", "deep/down", True),
        ("a/**", "a", True),
        ("a/**", "a/b", True),
        ("a/**", "b", False),
        ("{src,lib}/*.py", "lib", True),
        ("{src,lib}/*.py", "doc", False),
        ("[a-c]*/x", "beta", True),
        ("[a-c]*/x", "delta", False),
        ("x/**/y", "x/q/r/s", True),
    ],
)
def test_could_match_below_prunes_only_directories_that_hold_no_match(pattern, directory, expected):
    assert compile_glob(pattern).could_match_below(directory) is expected


# --- globs: invalid patterns --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "empty"),
        ("x" * (MAX_GLOB_LENGTH + 1), "limit is 4096"),
        ("[abc", "unterminated character class"),
        ("a[!]", "unterminated character class"),
        ("[a\\", "unterminated character class"),
        ("[a-\\", "unterminated character class"),
        ("{a,[}", "unterminated character class"),
        ("[z-a]", "reversed range z-a"),
        ("[[:nope:]]", "unknown character class [:nope:]"),
        ("a\\", "trailing backslash"),
        ("/", "names no path"),
        ("./", "names no path"),
        ("{,}", "names no path"),
        ("{a,b}" * 10, f"more than {MAX_BRACE_ALTERNATIVES} brace alternatives"),
        ("{0,1,2,3,4,5,6,7,8,9}" * 3 + "/" + "y" * 100, f"more than {MAX_EXPANDED_GLOB_CHARS} characters"),
    ],
)
def test_invalid_glob_raises_value_error_with_a_clear_message(pattern, message):
    with pytest.raises(ValueError, match=message.replace("[", "\\[").replace("]", "\\]")):
        compile_glob(pattern)


def test_error_messages_shorten_long_patterns():
    with pytest.raises(ValueError) as caught:
        compile_glob("[" + "x" * 3000)
    assert len(str(caught.value)) < 300


def test_glob_of_the_maximum_length_is_accepted():
    assert compile_glob("a" * MAX_GLOB_LENGTH).matches("a" * MAX_GLOB_LENGTH)


def test_brace_expansion_up_to_the_limit_compiles():
    digits = "{0,1,2,3,4,5,6,7,8,9}"
    glob = compile_glob(digits * 3 + "/*.py")  # exactly 1000 alternatives
    assert glob.matches("123/a.py") and not glob.matches("12/a.py")
    assert glob.could_match_below("999") and not glob.could_match_below("99x")


# --- excludes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patterns", "path", "expected"),
    [
        (["node_modules"], "node_modules", True),
        (["node_modules"], "a/node_modules", True),
        (["node_modules"], "a/node_modules/x.js", True),
        (["node_modules"], "node_modules_old", False),
        (["build/out"], "build/out", True),
        (["build/out"], "build/out/x", True),
        (["build/out"], "src/build/out", True),
        (["build/out"], "build/output", False),
        (["build/out"], "build", False),
        (["*.log"], "x.log", True),
        (["*.log"], "a/x.log", False),  # a "*" pattern is a glob over the whole relative path
        (["**/*.log"], "a/x.log", True),
        (["/build"], "build/x", True),
        (["/build"], "src/build", False),
        (["./build"], "build", True),
        (["file?.txt"], "d/file1.txt", True),
        (["{a,b}"], "x/b/y", True),
        (["src/*"], "src/a", True),
        (["src/*"], "src/a/b", False),  # the walker never gets here: it prunes src/a
        (["dist", "*.tmp"], "a/dist/b", True),
        (["dist", "*.tmp"], "c.tmp", True),
        (["dist", "*.tmp"], "c.txt", False),
        ([], "anything", False),
        ([""], "a", False),
    ],
)
def test_excludes_follow_the_official_directory_tree_rules(patterns, path, expected):
    assert compile_excludes(patterns).excluded(path) is expected


def test_excludes_keep_their_patterns_and_show_them_in_repr():
    excludes = compile_excludes(["a", "*.b"])
    assert isinstance(excludes, Excludes)
    assert excludes.patterns == ["a", "*.b"]
    assert repr(excludes) == "Excludes(['a', '*.b'])"


@pytest.mark.parametrize(("patterns", "message"), [(["/"], "names no path"), (["[x"], "unterminated"), (["[x*"], "unterminated")])
def test_invalid_exclude_pattern_raises_value_error(patterns, message):
    with pytest.raises(ValueError, match=message):
        compile_excludes(patterns)


# --- grep: compiling ----------------------------------------------------------------------------

FAR = float("inf")  # a deadline that never passes


def search(pattern: str, data: bytes, *, context: int = 0, max_matches: int = 100, **options: bool) -> GrepFileResult:
    return compile_grep(pattern, **options).search_lines(data, context=context, max_matches=max_matches, deadline=FAR)


def lines_of(result: GrepFileResult) -> list[tuple[int, str]]:
    return [(m.line_number, m.line) for m in result.matches]


@pytest.mark.parametrize(
    ("pattern", "options", "substring"),
    [
        ("foo", {}, True),
        ("foo bar-baz", {"ignore_case": True}, True),
        ("fo+", {}, False),
        ("a.b", {"literal": True}, True),
        ("é", {}, True),
        ("é", {"ignore_case": True}, False),  # bytes.lower() folds ASCII only: the regex engine folds "É"
    ],
)
def test_plain_patterns_take_the_bytes_substring_fast_path(pattern, options, substring):
    assert compile_grep(pattern, **options).substring is substring


def test_grep_shows_its_pattern_in_repr():
    grep = compile_grep("x+", ignore_case=True)
    assert (grep.pattern, grep.ignore_case) == ("x+", True)
    assert repr(grep) == "Grep('x+', ignore_case=True)"


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(", "missing \\)"),
        ("a{2,1}", "min repeat greater than max repeat"),
        ("", "empty"),
        ("a" * (MAX_GREP_PATTERN_LENGTH + 1), "limit is 1000"),
    ],
)
def test_invalid_grep_pattern_raises_value_error_with_the_engine_message(pattern, message):
    with pytest.raises(ValueError, match=message):
        compile_grep(pattern)


def test_grep_pattern_of_the_maximum_length_is_accepted():
    assert compile_grep("a" * MAX_GREP_PATTERN_LENGTH).substring


# --- grep: searching ----------------------------------------------------------------------------

TEXT = b"alpha\nbeta\ngamma\n"


@pytest.mark.parametrize(
    ("pattern", "options", "expected"),
    [
        ("a", {}, [(1, "alpha"), (2, "beta"), (3, "gamma")]),  # a line counts once
        ("ta", {}, [(2, "beta")]),
        ("BETA", {}, []),
        ("BETA", {"ignore_case": True}, [(2, "beta")]),
        ("^g", {}, [(3, "gamma")]),
        ("A$", {"ignore_case": True}, [(1, "alpha"), (2, "beta"), (3, "gamma")]),
        ("^(?:al|ga)", {}, [(1, "alpha"), (3, "gamma")]),
        (".", {"literal": True}, []),
        ("a\nb", {"literal": True}, [(1, "alpha")]),  # a match across lines reports its first line
        ("a\\nb", {}, [(1, "alpha")]),
        ("x*", {}, [(1, "alpha"), (2, "beta"), (3, "gamma")]),  # empty matches count, but no line 4
    ],
)
def test_grep_reports_each_matching_line_once(pattern, options, expected):
    assert lines_of(search(pattern, TEXT, **options)) == expected


def test_literal_search_treats_regex_characters_as_text():
    data = b"a.b\naxb\n(x)\n"
    assert lines_of(search("a.b", data, literal=True)) == [(1, "a.b")]
    assert lines_of(search("a.b", data)) == [(1, "a.b"), (2, "axb")]
    assert lines_of(search("(x)", data, literal=True)) == [(3, "(x)")]


def test_non_ascii_ignore_case_folds_unicode():
    data = "Éclair\nécrit\nEcho\n".encode()
    assert lines_of(search("é", data, ignore_case=True)) == [(1, "Éclair"), (2, "écrit")]
    assert lines_of(search("é", data)) == [(2, "écrit")]


@pytest.mark.parametrize("pattern", ["^", "$"])
def test_zero_width_matches_find_every_line_and_no_phantom_line(pattern):
    assert lines_of(search(pattern, b"a\nb\n")) == [(1, "a"), (2, "b")]
    assert lines_of(search(pattern, b"a\nb")) == [(1, "a"), (2, "b")]
    assert search(pattern, b"").matches == []


def test_empty_data_and_no_match_give_an_empty_result():
    assert search("x", b"") == GrepFileResult([], False)
    assert search("x+", b"abc\n") == GrepFileResult([], False)


@pytest.mark.parametrize("options", [{}, {"literal": True}, {"ignore_case": True}])
def test_crlf_lines_are_reported_without_carriage_returns(options):
    data = b"one\r\ntwo\r\nthree\r\n"
    result = search("two", data, context=1, **options)
    assert result.matches == [GrepMatch(2, "two", ["one"], ["three"])]


def test_regex_dollar_matches_at_crlf_line_ends():
    assert lines_of(search("o$", b"two\r\nthree\r\n")) == [(1, "two")]


@pytest.mark.parametrize("pattern", ["ok", "o+k"])
def test_invalid_utf8_shows_as_replacement_characters(pattern):
    assert lines_of(search(pattern, b"caf\xe9 ok\n")) == [(1, "caf\ufffd ok")]


@pytest.mark.parametrize("pattern", ["start", "^start"])
def test_a_utf8_byte_order_mark_is_not_part_of_line_one(pattern):
    assert lines_of(search(pattern, b"\xef\xbb\xbfstart\n")) == [(1, "start")]


# --- grep: context ------------------------------------------------------------------------------

TEN = b"".join(b"l%d\n" % n for n in range(1, 11))


def test_context_lines_surround_a_match():
    assert search("l5", TEN, context=2).matches == [GrepMatch(5, "l5", ["l3", "l4"], ["l6", "l7"])]


@pytest.mark.parametrize(
    ("pattern", "data", "expected"),
    [
        ("l1$", TEN, GrepMatch(1, "l1", [], ["l2", "l3"])),
        ("l2", TEN, GrepMatch(2, "l2", ["l1"], ["l3", "l4"])),
        ("l10", TEN, GrepMatch(10, "l10", ["l8", "l9"], [])),
        ("l9", TEN, GrepMatch(9, "l9", ["l7", "l8"], ["l10"])),
        ("l9", TEN.rstrip(b"\n"), GrepMatch(9, "l9", ["l7", "l8"], ["l10"])),
        ("l10", TEN.rstrip(b"\n"), GrepMatch(10, "l10", ["l8", "l9"], [])),
    ],
)
def test_context_stops_at_the_start_and_end_of_the_file(pattern, data, expected):
    assert search(pattern, data, context=2).matches == [expected]


def test_overlapping_contexts_never_show_a_line_twice():
    result = search("l4|l6", TEN, context=2)
    assert result.matches == [GrepMatch(4, "l4", ["l2", "l3"], ["l5"]), GrepMatch(6, "l6", [], ["l7", "l8"])]


def test_adjacent_matches_share_no_context():
    result = search("l[45]$", TEN, context=1)
    assert result.matches == [GrepMatch(4, "l4", ["l3"], []), GrepMatch(5, "l5", [], ["l6"])]


def test_context_after_the_last_reported_match_may_show_an_unreported_match():
    result = search("l[23]$", TEN, context=1, max_matches=1)
    assert result == GrepFileResult([GrepMatch(2, "l2", ["l1"], ["l3"])], True)


def test_context_between_distant_matches_is_not_trimmed():
    result = search("l2|l9", TEN, context=1)
    assert result.matches == [GrepMatch(2, "l2", ["l1"], ["l3"]), GrepMatch(9, "l9", ["l8"], ["l10"])]


# --- grep: limits -------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["l", "l\\d"])
def test_max_matches_truncates_and_says_so(pattern):
    result = search(pattern, TEN, max_matches=3)
    assert lines_of(result) == [(1, "l1"), (2, "l2"), (3, "l3")]
    assert result.truncated


def test_exactly_max_matches_is_not_truncated():
    result = search("l1", TEN, max_matches=2)
    assert lines_of(result) == [(1, "l1"), (10, "l10")]
    assert not result.truncated


@pytest.mark.parametrize(
    ("pattern", "options"),
    [("x", {}), ("x", {"literal": True}), ("x", {"ignore_case": True}), ("x+", {}), ("X+", {"ignore_case": True})],
)
def test_long_lines_are_cut_with_an_ellipsis(pattern, options):
    data = b"x" * 5000 + b"\n" + b"x" * 501 + b"\r\n" + b"x" * MAX_LINE_CHARS + b"\r\n" + "é".encode() * 600 + b"x\n"
    result = search(pattern, data, **options)
    cut = "x" * MAX_LINE_CHARS + "…"
    assert lines_of(result) == [(1, cut), (2, cut), (3, "x" * MAX_LINE_CHARS), (4, "é" * MAX_LINE_CHARS + "…")]


@pytest.mark.parametrize("pattern", ["needle", "need+le"])
def test_long_context_lines_are_cut_too(pattern):
    result = search(pattern, b"y" * 3000 + b"\nneedle\n" + b"z" * 3000, context=1)
    assert result.matches == [GrepMatch(2, "needle", ["y" * MAX_LINE_CHARS + "…"], ["z" * MAX_LINE_CHARS + "…"])]


@pytest.mark.parametrize("pattern", ["needle", "nee+dle", "^needle$"])
def test_a_big_file_is_searched_in_one_pass_with_exact_line_numbers(pattern):
    data = b"filler line of text\n" * 200_000 + b"needle\n" + b"more\n" * 10
    result = search(pattern, data, context=1)
    assert result.matches == [GrepMatch(200_001, "needle", ["filler line of text"], ["more"])]


def test_pathological_regex_raises_grep_timeout_at_the_deadline(monkeypatch):
    monkeypatch.setenv("MCP_REF_FS_GREP", "regex")  # the backtracking engine (RE2 is linear here)
    grep = compile_grep(r"(a+)+$")
    started = time.monotonic()
    with pytest.raises(GrepTimeout):
        grep.search_lines(b"a" * 30000 + b"b", context=0, max_matches=10, deadline=started + 0.2)
    assert time.monotonic() - started < 10


def test_one_backtracking_search_gets_an_allowance_of_its_own_below_a_far_deadline(monkeypatch):
    from mcp_ref_fs.grep import GrepTooSlow

    monkeypatch.setattr("mcp_ref_fs.grep.PATTERN_SECONDS", 0.2)
    grep = compile_grep(r"(?:a|aa)+(?!a)c")  # lookahead: never RE2's
    assert not grep.linear
    with pytest.raises(GrepTooSlow, match=r"needed more than 0\.2 s for one search"):
        grep.search_lines(b"a" * 40 + b"b\n", context=0, max_matches=10, deadline=time.monotonic() + 600)


@pytest.mark.parametrize("pattern", ["x", "x+"])
def test_a_deadline_already_passed_raises_grep_timeout(pattern):
    with pytest.raises(GrepTimeout):
        compile_grep(pattern).search_lines(b"x\n", context=0, max_matches=1, deadline=time.monotonic() - 1)


@pytest.mark.parametrize(("context", "max_matches", "message"), [(-1, 1, "context"), (0, 0, "max_matches")])
def test_negative_context_or_no_matches_allowed_is_a_value_error(context, max_matches, message):
    with pytest.raises(ValueError, match=message):
        compile_grep("x").search_lines(b"x", context=context, max_matches=max_matches, deadline=FAR)
