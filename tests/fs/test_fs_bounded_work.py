"""One request cannot make mcp-ref-fs do unbounded work: the schema caps how many exclude patterns
and edits a call may carry, brace expansion draws on one budget for all of a call's patterns, the
diff of a small change stays small in a file of equal lines, and a file the regex engine runs out
of memory on is skipped and named rather than ending the search.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mcp_ref import Server
from mcp_ref_fs import diffs
from mcp_ref_fs.config import Config
from mcp_ref_fs.patterns import MAX_BRACE_ALTERNATIVES, compile_excludes
from mcp_ref_fs.root import Sandbox
from mcp_ref_fs.tools import FsTools
from tests.fs.conftest import fs_command
from tests.wire import ServerProcess, result_of, tool_call


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "mid" / "inner").mkdir(parents=True)
    (root / "mid" / "inner" / "keep.txt").write_text("kept\n")
    return root


def test_exclude_patterns_share_one_expansion_budget() -> None:
    braces = "{" + ",".join(f"a{i}" for i in range(30)) + "}"
    patterns = [f"{braces}x{k}" for k in range(MAX_BRACE_ALTERNATIVES // 30 + 2)]
    with pytest.raises(ValueError, match="in all"):
        compile_excludes(patterns)


def test_too_many_exclude_patterns_or_edits_are_refused_by_the_schema(tree: Path) -> None:
    (tree / "f.txt").write_text("a\n")
    with ServerProcess(fs_command(tree)) as server:
        tree_result = result_of(server.request(tool_call(1, "directory_tree", {"path": str(tree), "excludePatterns": ["x"] * 65})))
        edit_result = result_of(server.request(tool_call(2, "edit_file", {
            "path": str(tree / "f.txt"), "edits": [{"oldText": "a", "newText": "b"}] * 1001})))
    assert tree_result["isError"] and edit_result["isError"]
    assert (tree / "f.txt").read_text() == "a\n"


def test_a_diff_of_a_one_line_change_in_a_file_of_equal_lines_is_small_and_exact() -> None:
    old = "same\n" * 200_000
    new = "same\n" * 100_000 + "changed\n" + "same\n" * 99_999
    diff = diffs.unified_diff(old, new, "f")
    assert "@@ -99998,7 +99998,7 @@" in diff
    assert len(diff.splitlines()) == 4 + 1 + 7 + 1


class _Context:
    cancelled = False
    task_id = None

    def report_progress(self, *args: Any, **kwargs: Any) -> bool:
        return False


def test_grep_skips_a_file_the_regex_engine_runs_out_of_memory_on_and_says_so(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "a.txt").write_text("aaaa\n")
    (tree / "b.txt").write_text("b\n")
    tools = FsTools(Server("t", "1"), Sandbox.open([str(tree)]), Config(roots=(str(tree),)))
    from mcp_ref_fs import grep

    real = grep.Grep.search_lines

    def search_lines(self: Any, data: bytes, **options: Any) -> Any:
        if data.startswith(b"aaaa"):
            raise MemoryError
        return real(self, data, **options)

    monkeypatch.setattr(grep.Grep, "search_lines", search_lines)
    result = asyncio.run(tools.grep_files(_Context(), {"path": str(tree), "pattern": "(a|b)+"}))
    assert [line.split(":")[0] for line in result.content[0]["text"].split("\n")] == [str(tree / "b.txt")]
    assert any("Skipped 1 file" in block["text"] and "a.txt" in block["text"] for block in result.content[1:])
