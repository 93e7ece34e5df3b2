"""Unit tests of mcp_ref_fs.content: pure helpers, plain values in and out."""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator

import pytest

from mcp_ref_fs import edits
from mcp_ref_fs.content import (
    BOM,
    NotText,
    decode_text,
    format_size,
    head_lines,
    line_count,
    looks_binary,
    sniff_mime,
    split_bom,
    tail_lines,
    window_lines,
)
from mcp_ref_fs.diffs import diff_stats, unified_diff
from mcp_ref_fs.edits import EditError, apply_edits

# ---------------------------------------------------------------------------------------------
# Text or binary
# ---------------------------------------------------------------------------------------------


def test_split_bom_separates_a_utf8_byte_order_mark():
    assert split_bom(BOM + b"hello") == (b"\xef\xbb\xbf", b"hello")
    assert split_bom(b"hello") == (b"", b"hello")
    assert split_bom(b"") == (b"", b"")


def test_plain_text_and_an_empty_sample_are_not_binary():
    assert not looks_binary(b"")
    assert not looks_binary(b"def f():\n\treturn 1\r\n")
    assert not looks_binary("naïve café ✓\n".encode())


def test_a_bom_is_text():
    assert not looks_binary(BOM + b"text")
    assert not looks_binary(BOM)


def test_a_nul_byte_makes_a_sample_binary():
    assert looks_binary(b"text\x00more text")


def test_invalid_utf8_is_binary():
    assert looks_binary(b"abc\xff\xfedef")
    assert looks_binary(b"caf\xe9 au lait")  # Latin-1, not UTF-8


def test_a_multibyte_character_cut_at_the_end_of_the_sample_is_still_text():
    snowman = "☃".encode()  # three bytes
    assert not looks_binary(b"x" * 100 + snowman[:1])
    assert not looks_binary(b"x" * 100 + snowman[:2])
    assert looks_binary(b"x" * 100 + snowman[:2] + b"y")  # the same cut in the middle is invalid


def test_many_control_characters_make_a_sample_binary():
    assert looks_binary(bytes(range(1, 32)) * 4)
    assert looks_binary(b"ab\x01\x02")


def test_escape_backspace_and_form_feed_are_text_controls():
    ansi_log = b"\x1b[31mERROR\x1b[0m something\n" * 20
    assert not looks_binary(ansi_log)
    assert not looks_binary(b"N\bNA\bAM\bME\bE\n\f page two\n")


def test_a_few_stray_control_characters_do_not_make_a_file_binary():
    assert not looks_binary(b"a" * 95 + b"\x01" * 5)
    assert looks_binary(b"a" * 85 + b"\x01" * 15)


def test_decode_text_returns_the_text_without_the_bom_and_keeps_line_endings():
    assert decode_text(BOM + b"a\r\nb\n") == "a\r\nb\n"
    assert decode_text("é".encode()) == "é"
    assert decode_text(b"") == ""


def test_decode_text_refuses_nul_bytes_with_their_offset():
    with pytest.raises(NotText, match="NUL byte at offset 5"):
        decode_text(BOM + b"ab\x00")


def test_decode_text_refuses_invalid_utf8_with_the_byte_and_offset():
    with pytest.raises(NotText, match=r"invalid byte 0xff at offset 2"):
        decode_text(b"ab\xffcd")
    with pytest.raises(NotText, match="offset 4"):
        decode_text(BOM + b"a\xe9")


def test_decode_text_is_strict_about_a_truncated_final_character():
    with pytest.raises(NotText):
        decode_text(b"abc" + "☃".encode()[:2])


def test_not_text_is_a_value_error():
    assert issubclass(NotText, ValueError)
    assert issubclass(EditError, ValueError)


# ---------------------------------------------------------------------------------------------
# MIME types
# ---------------------------------------------------------------------------------------------

_BMP = b"BM" + struct.pack("<IHHII", 70, 0, 0, 54, 40) + b"\x00" * 40

MAGIC_SAMPLES = [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
    (b"GIF87a\x01\x00", "image/gif"),
    (b"GIF89a\x01\x00", "image/gif"),
    (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
    (_BMP, "image/bmp"),
    (b"II*\x00\x08\x00\x00\x00", "image/tiff"),
    (b"MM\x00*\x00\x00\x00\x08", "image/tiff"),
    (b"\x00\x00\x01\x00\x01\x00\x10\x10", "image/vnd.microsoft.icon"),
    (b"%PDF-1.7\n", "application/pdf"),
    (b"PK\x03\x04\x14\x00", "application/zip"),
    (b"PK\x05\x06" + b"\x00" * 18, "application/zip"),
    (b"PK\x07\x08PK\x03\x04", "application/zip"),
    (b"\x1f\x8b\x08\x00\x00\x00\x00\x00", "application/gzip"),
    (b"7z\xbc\xaf\x27\x1c\x00\x04", "application/x-7z-compressed"),
    (b"RIFF\x24\x00\x00\x00WAVEfmt ", "audio/wav"),
    (b"ID3\x04\x00\x00\x00\x00\x01\x7f", "audio/mpeg"),
    (b"\xff\xfb\x90\x64", "audio/mpeg"),
    (b"\xff\xf3\x90\x64", "audio/mpeg"),
    (b"\xff\xf2\x90\x64", "audio/mpeg"),
    (b"OggS\x00\x02\x00\x00", "audio/ogg"),
    (b"fLaC\x00\x00\x00\x22", "audio/flac"),
    (b"\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00", "audio/mp4"),
    (b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00", "video/mp4"),
    (b"\x00\x00\x00\x20ftypmp42\x00\x00\x00\x00", "video/mp4"),
    (b"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00", "image/avif"),
    (b"MThd\x00\x00\x00\x06\x00\x01", "audio/midi"),
    (b"\x00asm\x01\x00\x00\x00", "application/wasm"),
    (b'<svg xmlns="http://www.w3.org/2000/svg"/>', "image/svg+xml"),
    (b'<?xml version="1.0" encoding="UTF-8"?>\n<svg width="1">', "image/svg+xml"),
    (
        BOM + b'  <?xml version="1.0"?>\n<!-- Generator: editor -->\n'
        b'<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "svg11.dtd">\n<svg>',
        "image/svg+xml",
    ),
    (b'<!DOCTYPE svg [ <!ENTITY a "b"> ]>\n<svg\n>', "image/svg+xml"),
]


@pytest.mark.parametrize(("head", "expected"), MAGIC_SAMPLES)
def test_each_magic_signature_is_recognised_whatever_the_name(head, expected):
    assert sniff_mime(head, "unnamed") == expected
    assert sniff_mime(head, "misleading.txt") == expected


def test_magic_wins_over_the_extension():
    assert sniff_mime(b"\x89PNG\r\n\x1a\n", "notes.txt") == "image/png"
    assert sniff_mime(b"%PDF-1.4", "photo.JPG") == "application/pdf"


def test_a_zip_named_as_a_zip_based_format_gets_that_format():
    zip_head = b"PK\x03\x04\x14\x00"
    assert sniff_mime(zip_head, "report.docx") == "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    assert sniff_mime(zip_head, "book.EPUB") == "application/epub+zip"
    assert sniff_mime(zip_head, "archive.zip") == "application/zip"
    assert sniff_mime(zip_head, "photo.png") == "application/zip"  # only ZIP-based formats win


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("README.md", "text/markdown"),
        ("tool.py", "text/x-python"),
        ("app.ts", "text/typescript"),
        ("data.json", "application/json"),
        ("conf.yaml", "application/yaml"),
        ("conf.YML", "application/yaml"),
        ("pyproject.toml", "application/toml"),
        ("icon.svg", "image/svg+xml"),
        ("a.webp", "image/webp"),
        ("a.flac", "audio/flac"),
        ("a.wav", "audio/wav"),
        ("a.mp3", "audio/mpeg"),
        ("a.ogg", "audio/ogg"),
        ("a.txt", "text/plain"),
        ("a.csv", "text/csv"),
        ("a.html", "text/html"),
        ("a.js", "text/javascript"),
        ("a.css", "text/css"),
        ("run.sh", "text/x-shellscript"),
        ("/deep/dir.d/backup.tar", "application/x-tar"),
        ("letter.rtf", "application/rtf"),
        ("notes.rst", "text/x-rst"),
    ],
)
def test_without_magic_the_extension_decides(name, expected):
    assert sniff_mime(b"plain words", name) == expected


def test_the_extension_table_is_the_servers_own_so_every_python_answers_alike(monkeypatch):
    """Python's mimetypes differs by version (.rtf: text/rtf on 3.13, application/rtf before; .md
    and .rst unknown before 3.13; .js application/javascript on 3.11): the server never asks it."""
    monkeypatch.setitem(sys.modules, "mimetypes", None)  # an import of it would fail
    for name, expected in [("letter.rtf", "application/rtf"), ("notes.rst", "text/x-rst"), ("a.md", "text/markdown"),
                           ("a.js", "text/javascript"), ("backup.tar", "application/x-tar"), ("song.aac", "audio/aac"),
                           ("subtitles.ass", "text/plain")]:  # .ass is text; Python's table says AAC audio
        assert sniff_mime(b"plain words", name) == expected, name


def test_without_magic_or_a_known_extension_the_content_decides():
    assert sniff_mime(b"just some words\n", "Makefile") == "text/plain"
    assert sniff_mime(b"just some words\n", "notes.unknownext") == "text/plain"
    assert sniff_mime(b"", "empty") == "text/plain"
    assert sniff_mime(b"\x00\x01\x02\x03", "blob.unknownext") == "application/octet-stream"
    assert sniff_mime(b"\xde\xad\xbe\xef", ".hidden") == "application/octet-stream"


def test_weak_signatures_need_their_full_structure():
    # Text that merely starts with the letters of a magic number stays text.
    assert sniff_mime(b"BMW builds cars, and this line is long enough", "cars") == "text/plain"
    assert sniff_mime(b"ID3 tags are metadata in MP3 files", "notes") == "text/plain"
    assert sniff_mime(b"ID3\x05\x00\x00\x00\x00\x00\x00", "x") == "application/octet-stream"
    assert sniff_mime(b"ID3\x03\x00\x00\x00\x00\x00\x80", "x") == "application/octet-stream"  # size byte > 0x7f
    assert sniff_mime(b"\x00\x00\x01\x00\x00\x00", "x") == "application/octet-stream"  # an icon with no image
    assert sniff_mime(b"\x00\x00\x01\x00", "x") == "application/octet-stream"  # too short to tell
    assert sniff_mime(b"RIFF\x24\x00\x00\x00AVI LIST", "clip.avi") == "video/x-msvideo"  # other RIFF: extension
    assert sniff_mime(b"\x00\x00\x00\x20ftyp", "x.m4a") == "audio/mp4"  # brand cut off: extension
    assert sniff_mime(b"<svgfoo/>", "x") == "text/plain"
    assert sniff_mime(b"<html><svg></svg></html>", "page.html") == "text/html"


def test_the_text_fallback_looks_at_most_8_kib():
    head = b"a" * 8192 + b"\x00"
    assert sniff_mime(head, "noext") == "text/plain"


# ---------------------------------------------------------------------------------------------
# Line windows
# ---------------------------------------------------------------------------------------------


def _chunks_then_explode(*chunks: bytes) -> Iterator[bytes]:
    """Yields ``chunks``, then fails: a test that pulls one more chunk than it may fails."""
    yield from chunks
    raise AssertionError("the iterator was consumed past what was needed")


def test_head_lines_returns_the_first_lines_across_chunks():
    assert head_lines([b"a\nb", b"\nc\nd\n"], 3) == (b"a\nb\nc\n", True)
    assert head_lines([b"a\r\nb\r\n", b"c\r\n"], 2) == (b"a\r\nb\r\n", True)


def test_head_lines_stops_at_the_chunk_that_completes_the_last_wanted_line():
    assert head_lines(_chunks_then_explode(b"one\ntw", b"o\nthree\n"), 2) == (b"one\ntwo\n", True)


def test_head_lines_pulls_one_more_chunk_only_when_the_line_ends_a_chunk():
    assert head_lines(_chunks_then_explode(b"one\n", b"two\n"), 1) == (b"one\n", True)
    assert head_lines(iter([b"one\n", b"", b""]), 1) == (b"one\n", False)
    assert head_lines(iter([b"one\n", b"", b"x"]), 1) == (b"one\n", True)


def test_head_lines_counts_a_last_line_without_a_newline():
    assert head_lines([b"a\nb"], 2) == (b"a\nb", False)
    assert head_lines([b"a\nb"], 5) == (b"a\nb", False)
    assert head_lines([], 3) == (b"", False)


def test_head_lines_with_zero_lines_returns_nothing_and_says_whether_content_exists():
    assert head_lines(_chunks_then_explode(b"x"), 0) == (b"", True)
    assert head_lines([b"", b""], 0) == (b"", False)


def test_head_lines_refuses_a_negative_count():
    with pytest.raises(ValueError, match="n must not be negative"):
        head_lines([b"a\n"], -1)


class FakeFile:
    """``read_at`` over bytes, recording every read."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.reads: list[tuple[int, int]] = []

    def read_at(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return self.data[offset:offset + length]


def _tail(data: bytes, n: int, block: int = 65536) -> bytes:
    return tail_lines(FakeFile(data).read_at, len(data), n, block)


def test_tail_lines_returns_the_last_lines_and_ignores_the_final_newline():
    assert _tail(b"a\nb\nc\n", 2) == b"b\nc\n"
    assert _tail(b"a\nb\nc\n", 1) == b"c\n"


def test_tail_lines_on_a_file_without_a_trailing_newline():
    assert _tail(b"a\nb\nc", 2) == b"b\nc"
    assert _tail(b"a\nb\nc", 1) == b"c"


def test_tail_lines_with_more_lines_wanted_than_the_file_has_returns_the_whole_file():
    assert _tail(b"a\nb\nc\n", 10) == b"a\nb\nc\n"
    assert _tail(b"a\nb\nc\n", 3) == b"a\nb\nc\n"
    assert _tail(b"only", 2, block=2) == b"only"


def test_tail_lines_counts_empty_lines():
    assert _tail(b"\n", 1) == b"\n"
    assert _tail(b"\n\n", 1) == b"\n"
    assert _tail(b"a\n\n\n", 2) == b"\n\n"
    assert _tail(b"a\r\nb\r\n", 1) == b"b\r\n"


def test_tail_lines_reads_only_the_blocks_it_needs():
    data = b"".join(b"line %03d\n" % i for i in range(100))  # 9 bytes a line, 900 bytes
    file = FakeFile(data)
    assert tail_lines(file.read_at, len(data), 3, block=16) == b"line 097\nline 098\nline 099\n"
    # The newline before line 097 is byte 872; blocks of 16 from the end reach it in the 2nd read.
    assert file.reads == [(884, 16), (868, 16)]


def test_tail_lines_reads_the_short_first_block_last():
    data = b"x" * 10 + b"\n" + b"y" * 20 + b"\n"
    file = FakeFile(data)
    assert tail_lines(file.read_at, len(data), 5, block=8) == data
    assert file.reads == [(24, 8), (16, 8), (8, 8), (0, 8)]


def test_tail_lines_of_zero_lines_or_an_empty_file_reads_nothing():
    file = FakeFile(b"a\nb\n")
    assert tail_lines(file.read_at, 4, 0) == b""
    assert tail_lines(file.read_at, 0, 5) == b""
    assert file.reads == []


def test_tail_lines_refuses_a_negative_count_or_block():
    with pytest.raises(ValueError, match="n must not be negative"):
        _tail(b"a\n", -2)
    with pytest.raises(ValueError, match="block must be positive"):
        _tail(b"a\n", 1, block=0)


def test_window_lines_returns_a_slice_of_lines_and_the_total():
    text = "l0\nl1\nl2\nl3\nl4"
    assert window_lines(text, 1, 2) == ("l1\nl2\n", 5)
    assert window_lines(text, 3, None) == ("l3\nl4", 5)
    assert window_lines(text, 0, 0) == ("", 5)
    assert window_lines(text, 4, 100) == ("l4", 5)


def test_window_lines_past_the_end_is_empty_with_the_true_total():
    assert window_lines("a\nb\n", 7, 3) == ("", 2)
    assert window_lines("", 0, None) == ("", 0)


def test_window_lines_splits_on_newlines_only():
    text = "a\r\nb\fstill b\u2028still b\x1cstill b\nc"
    assert window_lines(text, 1, 1) == ("b\fstill b\u2028still b\x1cstill b\n", 3)


def test_window_lines_refuses_negative_offset_or_limit():
    with pytest.raises(ValueError, match="offset"):
        window_lines("a", -1, None)
    with pytest.raises(ValueError, match="limit"):
        window_lines("a", 0, -1)


@pytest.mark.parametrize(
    ("text", "count"),
    [("", 0), ("a", 1), ("a\n", 1), ("a\nb", 2), ("a\nb\n", 2), ("\n", 1), ("\n\n", 2), ("a\r\nb\r\n", 2)],
)
def test_line_count_counts_a_last_line_without_a_newline(text, count):
    assert line_count(text) == count
    assert window_lines(text, 0, None)[1] == count


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (1, "1 B"),
        (1023, "1023 B"),
        (1024, "1.00 KB"),
        (1536, "1.50 KB"),
        (1048575, "1024.00 KB"),
        (1024**2 * 3 // 2, "1.50 MB"),
        (2 * 1024**3, "2.00 GB"),
        (5 * 1024**4, "5.00 TB"),
        (1024**5, "1024.00 TB"),
    ],
)
def test_format_size_uses_1024_based_units_like_the_official_server(size, text):
    assert format_size(size) == text


def test_format_size_refuses_a_negative_size():
    with pytest.raises(ValueError):
        format_size(-1)


# ---------------------------------------------------------------------------------------------
# Edits: exact matches
# ---------------------------------------------------------------------------------------------


def test_an_exact_edit_replaces_the_only_occurrence():
    assert apply_edits("a = 1\nb = 2\n", [("b = 2", "b = 3")]) == "a = 1\nb = 3\n"


def test_an_exact_edit_may_match_inside_a_line():
    assert apply_edits("print('hello world')\n", [("hello", "goodbye")]) == "print('goodbye world')\n"


def test_no_edits_return_the_text_unchanged():
    assert apply_edits("a\r\nb", []) == "a\r\nb"


@pytest.mark.parametrize("replacement", ["$&", "$1", "$$", "$`", "\\1", "\\g<0>", "\\n", "\\\\"])
def test_new_text_is_inserted_verbatim_without_any_substitution(replacement):
    assert apply_edits("x = OLD\n", [("OLD", replacement)]) == f"x = {replacement}\n"


def test_an_empty_old_text_is_refused():
    with pytest.raises(EditError, match="oldText of edit 1 is empty"):
        apply_edits("abc", [("", "x")])


def test_an_ambiguous_edit_names_every_matching_line():
    text = "".join("target\n" if i in (3, 18, 32) else f"line {i}\n" for i in range(40))
    with pytest.raises(EditError) as caught:
        apply_edits(text, [("line 1\n", "line one\n"), ("target", "x")])
    message = str(caught.value)
    assert "oldText of edit 2 matches 3 places (lines 4, 19, 33)" in message
    assert "add surrounding lines to make it unique" in message


def test_overlapping_occurrences_make_an_edit_ambiguous():
    with pytest.raises(EditError, match=r"matches 2 places \(lines 1, 1\)"):
        apply_edits("aaa", [("aa", "b")])


def test_a_long_list_of_matches_is_cut_short():
    with pytest.raises(EditError, match=r"matches 12 places \(lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, \.\.\.\)"):
        apply_edits("x\n" * 12, [("x", "y")])
    with pytest.raises(EditError, match=r"matches 1000\+ places"):
        apply_edits("x" * 5000, [("x", "y")])


def test_edits_apply_in_order_each_to_the_previous_result():
    text = "alpha\nbeta\n"
    edits = [("alpha", "gamma"), ("gamma\nbeta", "gamma\ndelta")]
    assert apply_edits(text, edits) == "gamma\ndelta\n"


def test_a_later_edit_can_be_made_ambiguous_by_an_earlier_one():
    with pytest.raises(EditError, match="edit 2 matches 2 places"):
        apply_edits("a\nb\n", [("a", "b"), ("b", "c")])


# ---------------------------------------------------------------------------------------------
# Edits: line endings
# ---------------------------------------------------------------------------------------------


def test_a_crlf_file_stays_crlf_through_an_edit_written_with_lf():
    original = "one\r\ntwo\r\nthree\r\n"
    assert apply_edits(original, [("two\nthree", "2\n3\n3.5")]) == "one\r\n2\r\n3\r\n3.5\r\n"


def test_an_lf_file_stays_lf_through_an_edit_written_with_crlf():
    assert apply_edits("one\ntwo\n", [("one\r\ntwo", "1\r\n2")]) == "1\n2\n"


def test_a_mixed_file_comes_back_with_its_dominant_newline():
    assert apply_edits("a\r\nb\r\nc\nd\r\n", [("b", "B")]) == "a\r\nB\r\nc\r\nd\r\n"
    assert apply_edits("a\nb\nc\r\nd\n", [("b", "B")]) == "a\nB\nc\nd\n"
    assert apply_edits("a\r\nb\n", [("b", "B")]) == "a\nB\n"  # a tie is LF


def test_a_bom_is_the_callers_business():
    data = BOM + "x = 1\r\n".encode()
    bom, rest = split_bom(data)
    edited = apply_edits(decode_text(rest), [("x = 1", "x = 2")])
    assert bom + edited.encode() == BOM + b"x = 2\r\n"


# ---------------------------------------------------------------------------------------------
# Edits: whitespace-tolerant matching
# ---------------------------------------------------------------------------------------------

PYTHON_FILE = """\
class Greeter:
    def greet(self, name):
        if name:
            return f"hello {name}"
        return "hello"
"""


def test_old_text_without_indentation_matches_an_indented_block():
    edited = apply_edits(PYTHON_FILE, [('if name:\nreturn f"hello {name}"', 'if name:\n    return f"hi {name}"')])
    assert edited == PYTHON_FILE.replace('return f"hello {name}"', 'return f"hi {name}"')


def test_nested_new_lines_keep_their_relative_indentation():
    old = "def greet(self, name):\n    if name:"
    new = "def greet(self, name, loud=False):\n    if loud:\n        name = name.upper()\n\n    if name:"
    edited = apply_edits(PYTHON_FILE, [(old, new)])
    assert edited == (
        "class Greeter:\n"
        "    def greet(self, name, loud=False):\n"
        "        if loud:\n"
        "            name = name.upper()\n"
        "\n"
        "        if name:\n"
        '            return f"hello {name}"\n'
        '        return "hello"\n'
    )


def test_too_deep_old_text_is_re_indented_to_the_file_including_shallower_lines():
    old = "            if name:\n                return f\"hello {name}\"\n            return \"hello\""
    new = "            if name:\n                return name\n        # fallback\n            return \"?\""
    edited = apply_edits(PYTHON_FILE, [(old, new)])
    assert edited.splitlines()[2:] == ["        if name:", "            return name", "    # fallback", '        return "?"']


def test_a_line_shallower_than_the_file_allows_loses_all_indentation():
    old = "          if name:\n                return f\"hello {name}\""
    new = "  # note\n          if name:"
    edited = apply_edits(PYTHON_FILE, [(old, new)])
    assert edited.splitlines()[2:4] == ["# note", "        if name:"]


def test_trailing_whitespace_differences_match_and_blank_new_lines_are_empty():
    text = "a = 1   \nb = 2\t\nc = 3\n"
    assert apply_edits(text, [("a = 1\nb = 2", "a = 1\n   \nb = 4")]) == "a = 1\n\nb = 4\nc = 3\n"


def test_indentation_that_cannot_be_mapped_is_kept_as_written():
    text = "if x:\n\tdo()\n\tmore()\n"
    old = "    do()  \n    more()"
    new = "    do()\n\tother()\n  half()"
    assert apply_edits(text, [(old, new)]) == "if x:\n\tdo()\n\tother()\nhalf()\n"


def test_a_tolerant_match_keeps_the_files_newline_after_the_block():
    text = "  a\n  b\n  c"
    assert apply_edits(text, [("a\nb\n", "A\nB")]) == "  A\n  B\n  c"
    assert apply_edits(text, [("b\nc\n", "B\nC\n")]) == "  a\n  B\n  C"


def test_a_tolerant_match_can_delete_lines():
    assert apply_edits("x\n  a\n  b\ny\n", [("a\nb", "")]) == "x\ny\n"
    assert apply_edits("  a\n  b\n", [("a\nb\n", "")]) == ""
    assert apply_edits("  a\n", [("a ", "\n")]) == "\n"  # one blank line instead


def test_a_blank_first_old_line_takes_indentation_from_the_first_non_blank_one():
    text = "def f():\n\n    x = 1\n    y = 2\n"
    assert apply_edits(text, [(" \nx = 1 ", "\nx = 10")]) == "def f():\n\n    x = 10\n    y = 2\n"


def test_a_tolerant_match_works_in_a_crlf_file():
    text = "if a:\r\n    b()\r\n    c()\r\n"
    assert apply_edits(text, [("b()\nc()", "b()\n    d()")]) == "if a:\r\n    b()\r\n        d()\r\n"


def test_an_ambiguous_tolerant_match_names_every_block():
    text = "def a():\n    x = 1\n    y = 2\n\ndef b():\n    x = 1\n    y = 2\n"
    with pytest.raises(EditError) as caught:
        apply_edits(text, [("x = 1\ny = 2", "z = 3")])
    message = str(caught.value)
    assert "oldText of edit 1 matches 2 places (lines 2-3, 6-7) when leading and trailing whitespace is ignored" in message
    assert "add surrounding lines" in message


def test_an_ambiguous_single_line_tolerant_match_names_lines():
    with pytest.raises(EditError, match=r"matches 2 places \(lines 1, 3\) when leading"):
        apply_edits(" x\ny\n x\n", [("x ", "z")])


def test_a_missing_match_quotes_the_closest_block_of_the_file():
    with pytest.raises(EditError) as caught:
        apply_edits(PYTHON_FILE, [('if name:\n    return f"helo {name}"', "x")])
    message = str(caught.value)
    assert message.startswith("oldText of edit 1 not found")
    assert 'closest match at lines 3-4:\n        if name:\n            return f"hello {name}"\n' in message
    assert "Copy the current text exactly" in message


def test_a_missing_match_in_a_later_edit_mentions_the_earlier_edits():
    with pytest.raises(EditError) as caught:
        apply_edits(PYTHON_FILE, [("Greeter", "Welcomer"), ("class Greeter:", "class X:")])
    message = str(caught.value)
    assert "oldText of edit 2 not found" in message
    assert "edits 1-1 were applied first" in message
    assert "closest match at lines 1-1:\nclass Welcomer:" in message


def test_a_missing_match_with_nothing_similar_says_so():
    with pytest.raises(EditError, match="nothing similar either"):
        apply_edits(PYTHON_FILE, [("completely unrelated words", "x")])
    with pytest.raises(EditError, match="nothing similar either"):
        apply_edits("", [("anything", "x")])
    with pytest.raises(EditError, match="nothing similar either"):
        apply_edits("a\n\nb\n", [("\t\n\t\n\t", "x")])  # only blank lines: nothing to compare


def test_the_closest_match_is_found_by_shared_lines_even_when_the_first_line_differs():
    lines = [f"value_{i} = compute({i})" for i in range(200)]
    text = "\n".join(lines) + "\n"
    old = "\n".join(["totally different first line"] + lines[101:104])
    with pytest.raises(EditError, match=r"closest match at lines 101-104:\nvalue_100 = compute\(100\)"):
        apply_edits(text, [(old, "x")])


def test_a_long_closest_match_is_quoted_briefly():
    lines = ["x" * 300] + [f"line {i}" for i in range(20)]
    old = "\n".join(["x" * 299 + "y"] + lines[1:])
    with pytest.raises(EditError) as caught:
        apply_edits("\n".join(lines), [(old, "z")])
    message = str(caught.value)
    assert "closest match at lines 1-21:\n" + "x" * 200 + "…\nline 0\n" in message
    assert "line 8\n… (11 more lines)\n" in message
    assert "line 9\n" not in message


def test_old_text_longer_than_the_file_still_gets_a_closest_match():
    with pytest.raises(EditError, match=r"closest match at lines 1-2:\nalpha beta\ngamma delta"):
        apply_edits("alpha beta\ngamma delta\n", [("alpha beta\ngamma delta!\nepsilon\nzeta", "x")])


def test_an_old_text_with_too_many_distinct_lines_is_refused(monkeypatch):
    monkeypatch.setattr(edits, "_MAX_DISTINCT_LINES", 2)
    with pytest.raises(EditError, match="too many distinct lines"):
        apply_edits("a\nb\nc\n", [("a \nb \nc ", "x")])


def test_a_missing_1000_line_edit_against_a_1_mib_file_completes():
    lines = [f"line {i}: some filler text so that the file gets big {i * 7}" for i in range(18000)]
    text = "\n".join(lines) + "\n"
    assert len(text) > 1024 * 1024
    unrelated = "\n".join(f"nope {i}: some filler text" for i in range(1000))
    with pytest.raises(EditError, match="not found"):
        apply_edits(text, [(unrelated, "x")])
    near_miss = "\n".join(lines[5000:6000]).replace("line 5500:", "line 5500 changed:")
    with pytest.raises(EditError, match="closest match at lines 5001-6000"):
        apply_edits(text, [(near_miss, "x")])
    common = "\n".join(["}"] * 1000 + ["never"])
    with pytest.raises(EditError, match="not found"):
        apply_edits("}\n" * 500_000, [(common, "x")])


# ---------------------------------------------------------------------------------------------
# Diffs
# ---------------------------------------------------------------------------------------------


def test_unified_diff_has_the_official_header_and_three_lines_of_context():
    old = "".join(f"{i}\n" for i in range(10))
    new = old.replace("5\n", "five\n")
    assert unified_diff(old, new, "/r/n.txt") == (
        "Index: /r/n.txt\n"
        "===================================================================\n"
        "--- /r/n.txt\toriginal\n"
        "+++ /r/n.txt\tmodified\n"
        "@@ -3,7 +3,7 @@\n"
        " 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
    )


def test_unified_diff_of_equal_texts_or_line_endings_only_is_empty():
    assert unified_diff("a\nb\n", "a\nb\n", "f") == ""
    assert unified_diff("a\r\nb\r\n", "a\nb\n", "f") == ""


def test_unified_diff_marks_a_last_line_without_newline():
    diff = unified_diff("a\nb", "a\nc", "f")
    assert diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")
    assert diff_stats(diff) == (1, 1)


def test_unified_diff_shows_crlf_files_as_lf():
    diff = unified_diff("a\r\nb\r\n", "a\r\nc\r\n", "f")
    assert "\r" not in diff
    assert diff_stats(diff) == (1, 1)


def test_diff_stats_counts_added_and_removed_lines_but_not_headers():
    old = "keep\n--- not a header\n++ nor this\nkeep\n"
    new = "keep\nkeep\nadded 1\nadded 2\nadded 3\n"
    diff = unified_diff(old, new, "f")
    assert diff_stats(diff) == (3, 2)
    assert diff_stats("") == (0, 0)


def test_diff_stats_reads_single_line_hunks_and_stripped_context():
    diff = "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n@@ -5,3 +5,2 @@\n c\n\n-d\n"
    assert diff_stats(diff) == (1, 2)
