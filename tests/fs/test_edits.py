"""Unit tests of mcp_ref_fs.edits beyond the matching rules (those are in test_content.py): where an
edit changed the text, and the diff built from those places alone.

The property tests apply every diff as a patch (``patch`` below, a strict reader of unified
diffs) and check that it turns the old text into the new one, for random texts and random edits.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_ref_fs import diffs, edits
from mcp_ref_fs.content import split_lines
from mcp_ref_fs.diffs import edit_diff, render_diff, unified_diff
from mcp_ref_fs.edits import EditError, edit_text


def patch(old: str, diff: str) -> str:
    """``old`` with a unified diff applied; fails on any context or removed line that does not match."""
    lines, out, position = split_lines(old), [], 0
    rows = diff.split("\n")
    index = next((i for i, row in enumerate(rows) if row.startswith("@@")), len(rows))
    while index < len(rows) and rows[index]:
        header = re.fullmatch(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", rows[index])
        assert header, rows[index]
        start, count = int(header[1]), 1 if header[2] is None else int(header[2])
        begin = start - 1 if count else start
        assert begin >= position, "hunks out of order"
        out += lines[position:begin]
        position = begin
        index += 1
        while index < len(rows) and rows[index] and not rows[index].startswith("@@"):
            row = rows[index]
            no_newline = index + 1 < len(rows) and rows[index + 1] == "\\ No newline at end of file"
            body = row[1:] + ("" if no_newline else "\n")
            if row[0] in " -":
                assert lines[position] == body, (lines[position], body)
                position += 1
            if row[0] in " +":
                out.append(body)
            index += 2 if no_newline else 1
    return "".join(out + lines[position:])


def region_texts(edited: edits.Edited) -> list[tuple[str, str]]:
    return [(edited.before[a:b], edited.after[c:d]) for a, b, c, d in edited.regions]


# --- where the text changed ----------------------------------------------------------------------------


def test_each_edit_is_one_region_in_both_texts() -> None:
    edited = edit_text("alpha beta gamma\n", [("beta", "BETA!"), ("gamma", "G")])
    assert edited.after == "alpha BETA! G\n"
    assert region_texts(edited) == [("beta", "BETA!"), ("gamma", "G")]


def test_an_edit_of_text_an_earlier_edit_wrote_merges_into_one_region() -> None:
    edited = edit_text("one two three\n", [("two", "2"), ("one 2", "1 2"), ("2 three", "2 3")])
    assert edited.after == "1 2 3\n"
    assert region_texts(edited) == [("one two three", "1 2 3")]


def test_regions_after_an_edit_move_with_it_and_keep_their_original_place() -> None:
    edited = edit_text("a b c d e\n", [("d", "DDDD"), ("b", ""), ("e", "E")])
    assert edited.after == "a  c DDDD E\n"
    assert region_texts(edited) == [("b", ""), ("d", "DDDD"), ("e", "E")]
    assert edited.regions[1][:2] == (6, 7)  # "d" of the original


def test_a_tolerant_edit_reports_the_lines_it_replaced() -> None:
    edited = edit_text("def f():\n    x = 1\n    y = 2\n", [("x = 1\ny = 2", "x = 10\ny = 20")])
    assert edited.after == "def f():\n    x = 10\n    y = 20\n"
    assert region_texts(edited) == [("    x = 1\n    y = 2", "    x = 10\n    y = 20")]


@pytest.mark.parametrize(("text", "old", "after"), [
    ("a\nb\nc\n", "b", "a\nc\n"),  # a line in the middle goes with its newline
    ("a\nb\n", "b", "a\n"),  # the last line, with the file's final newline
    ("a\nb", "b", "a"),  # the last line without one: the newline before it goes
    ("b\n", "b", ""),  # everything
])
def test_a_tolerant_edit_that_removes_lines_removes_one_newline_with_them(text: str, old: str, after: str) -> None:
    edited = edit_text(text, [(f"  {old}  ", "")])
    assert edited.after == after
    assert patch(text, edit_diff(edited, "f").text) == after


def test_edits_matched_exactly_only_refuse_what_only_the_tolerant_rule_finds() -> None:
    with pytest.raises(EditError, match="no longer occurs exactly"):
        edit_text("    x = 1\n", [("x = 1 ", "x = 2")], exact_only=True)
    assert edit_text("    x = 1\n", [("x = 1", "x = 2")], exact_only=True).text == "    x = 2\n"


@pytest.mark.req("FS-WORK-NEVER-STARVED")
def test_a_check_between_edits_can_stop_the_work() -> None:
    calls: list[int] = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("stopped")

    with pytest.raises(RuntimeError):
        edit_text("a b c\n", [("a", "A"), ("b", "B"), ("c", "C")], check=check)
    assert len(calls) == 2


# --- the diff ------------------------------------------------------------------------------------------------


@pytest.mark.req("FS-EDIT-DIFF-BOUNDED")
def test_the_diff_of_an_edit_compares_only_the_lines_of_its_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[int, int]] = []
    real = difflib.SequenceMatcher

    def matcher(junk: Any, a: list[str], b: list[str]) -> difflib.SequenceMatcher[str]:
        compared.append((len(a), len(b)))
        return real(junk, a, b)

    monkeypatch.setattr(difflib, "SequenceMatcher", matcher)
    text = "first\n" + "".join(f"v{i % 7}\n" for i in range(200_000)) + "middle\n" + "".join(f"v{i % 7}\n" for i in range(200_000))
    edited = edit_text(text, [("first\nv0\nv1\n", "FIRST\nv0\nv1 changed\n"), ("middle", "MIDDLE")])
    diff = edit_diff(edited, "f")
    assert compared == [(3, 3), (1, 1)]  # the lines of the two regions, never the 400,000 others
    assert diff.text.count("\n@@ ") == 2 and diff.blocks == 0
    assert patch(text, diff.text) == edited.after


@pytest.mark.req("FS-EDIT-DIFF-BOUNDED")
def test_a_region_too_large_to_compare_is_shown_whole_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diffs, "MAX_COMPARED_PAIRS", 10)
    old = "".join(f"{i}\n" for i in range(20))
    new_block = "".join(f"{i}\n" if i % 2 else f"{i} changed\n" for i in range(1, 19))
    edited = edit_text(old, [("".join(f"{i}\n" for i in range(1, 19)), new_block)])
    diff = edit_diff(edited, "f")
    assert diff.blocks == 1
    body = diff.text.split("@@\n", 1)[1]
    removed, added = [row for row in body.splitlines() if row.startswith("-")], [row for row in body.splitlines() if row.startswith("+")]
    assert len(removed) == len(added) == 17  # lines 1 and 18 are equal at the block's ends; the rest shown whole
    assert patch(old, diff.text) == edited.after


@pytest.mark.req("FS-EDIT-DIFF-BOUNDED")
def test_a_diff_stops_growing_at_its_byte_limit_and_says_so() -> None:
    old = "".join(f"line {i}\n" for i in range(10_000))
    edited = edit_text(old, [(f"line {i}\n", f"LINE {i}\n") for i in range(0, 10_000, 10)])
    diff = edit_diff(edited, "f", max_bytes=2000)
    assert diff.truncated and 2000 < len(diff.text) < 2200
    assert not edit_diff(edited, "f").truncated


def test_the_diff_of_equal_texts_after_edits_is_empty() -> None:
    edited = edit_text("a\nb\n", [("a", "x"), ("x", "a")])
    assert edited.text == "a\nb\n" and edit_diff(edited, "f").text == ""


@pytest.mark.parametrize(("second", "hunks"), [("L12", 1), ("L13", 2)])
def test_hunks_more_than_twice_the_context_apart_are_separate_as_difflib_makes_them(second: str, hunks: int) -> None:
    old = "".join(f"L{i:02d}\n" for i in range(40))
    edited = edit_text(old, [("L05\n", "five\n"), (f"{second}\n", "changed\n")])
    diff = edit_diff(edited, "f").text
    assert diff.count("\n@@ -") == hunks
    expected = difflib.unified_diff(split_lines(old), split_lines(edited.after), "f", "f", "original", "modified")
    assert diff == "Index: f\n" + "=" * 67 + "\n" + "".join(expected)


def test_render_diff_of_a_region_ending_inside_a_line_shows_that_whole_line() -> None:
    old, new = "ab\ncd\n", "aXb\ncd\n"
    diff = render_diff(old, new, [(1, 1 + 0, 1, 2)], "f").text  # an insertion at offset 1
    assert diff.endswith("@@ -1,2 +1,2 @@\n-ab\n+aXb\n cd\n")


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(st.sampled_from(["a", "b", "c", "", "  a", "d e"]), max_size=25),
    final_newline=st.booleans(),
    picks=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 12), st.sampled_from(["", "x", "\n", "y\nz", "a\n", "  b"])),
                   min_size=1, max_size=6),
)
def test_every_edit_diff_patches_the_old_text_into_the_new_one(lines: list[str], final_newline: bool,
                                                                picks: list[tuple[int, int, str]]) -> None:
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    current, chosen = text, []
    for at, length, new in picks:
        if not current:
            break
        start = at % len(current)
        try:
            current = edit_text(current, [(current[start:start + length], new)]).after
        except EditError:
            continue  # not unique there
        chosen.append((start, length, new))
    edited = edit_text(text, [(old, new) for old, new in _replay(text, chosen)])
    assert edited.after == current
    # Outside the regions the two texts are the same, and the regions rebuild the new text.
    rebuilt, was, now = [], 0, 0
    for a, b, c, d in edited.regions:
        assert edited.before[was:a] == edited.after[now:c]
        rebuilt += [edited.before[was:a], edited.after[c:d]]
        was, now = b, d
    assert "".join(rebuilt) + edited.before[was:] == edited.after
    diff = edit_diff(edited, "f").text
    assert patch(text, diff) == current if diff else text == current


def _replay(text: str, chosen: list[tuple[int, int, str]]) -> list[tuple[str, str]]:
    """The (oldText, newText) pairs the property test picked, each read from the text as the
    earlier ones left it."""
    pairs, current = [], text
    for start, length, new in chosen:
        old = current[start:start + length]
        pairs.append((old, new))
        current = edit_text(current, [(old, new)]).after
    return pairs


@settings(max_examples=300, deadline=None)
@given(old=st.text(alphabet="ab\n", max_size=40), new=st.text(alphabet="ab\n", max_size=40))
def test_every_unified_diff_patches_the_old_text_into_the_new_one(old: str, new: str) -> None:
    diff = unified_diff(old, new, "f")
    assert (patch(old, diff) if diff else old) == new
