"""Write safety of mcp-ref-fs (issue 17), through real stdio: every test spawns the server.

Each test failed on 7f72c80 (the numbers are in the issue's closing note).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fs.conftest import fs_command
from tests.wire import ServerProcess, result_of, tool_call


# --- helpers -------------------------------------------------------------------------------------------


def text_of(response: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in result_of(response)["content"])


def is_error(response: dict[str, Any]) -> bool:
    return bool(result_of(response).get("isError"))


# --- 2: the diff -------------------------------------------------------------------------------------------


@pytest.mark.req("FS-EDIT-DIFF-BOUNDED")
def test_an_edit_of_both_ends_of_a_300000_line_file_of_repeating_lines_is_answered_with_its_two_hunks(tmp_path: Path) -> None:
    """Each line occurs ~3000 times: whole-file difflib took 3.9 s at 60,000 lines on the reference
    machine, growing with the square of the lines; the default wire deadline is 10 s."""
    (tmp_path / "root").mkdir()
    target = tmp_path / "root" / "cycle.txt"
    body = "".join(f"value {i % 101}\n" for i in range(299_998))
    target.write_text("first line\n" + body + "last line\n")
    edits = [{"oldText": "first line", "newText": "FIRST"}, {"oldText": "last line", "newText": "LAST"}]
    with ServerProcess(fs_command(tmp_path / "root")) as server:
        dry = server.request(tool_call(1, "edit_file", {"path": str(target), "edits": edits, "dryRun": True}))
        real = server.request(tool_call(2, "edit_file", {"path": str(target), "edits": edits}))
    for response in (dry, real):
        diff = result_of(response)["structuredContent"]["diff"]
        assert diff.count("\n@@ ") == 2 and "-first line\n+FIRST\n" in diff and "-last line\n+LAST\n" in diff
        assert "@@ -299997,4 +299997,4 @@" in diff
    assert target.read_text() == "FIRST\n" + body + "LAST\n"


# --- 7: a second byte-order mark ---------------------------------------------------------------------------------


@pytest.mark.req("FS-EDIT-PRESERVES-ENCODING")
def test_an_edit_keeps_a_second_byte_order_mark_and_every_byte_outside_the_edit(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    target = tmp_path / "root" / "two-marks.txt"
    target.write_bytes(b"\xef\xbb\xbf\xef\xbb\xbfbody\nrest\n")
    with ServerProcess(fs_command(tmp_path / "root")) as server:
        edited = server.request(tool_call(1, "edit_file", {"path": str(target), "edits": [{"oldText": "rest", "newText": "REST"}]}))
        read = server.request(tool_call(2, "read_text_file", {"path": str(target)}))
    assert not is_error(edited)
    assert target.read_bytes() == b"\xef\xbb\xbf\xef\xbb\xbfbody\nREST\n"
    assert text_of(read) == "\ufeffbody\nREST\n"  # the file's mark is not text; the second one is
