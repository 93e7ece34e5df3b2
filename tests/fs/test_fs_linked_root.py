"""A root given through a symbolic link (issue 17, "Also"): list_allowed_directories shows where it
leads, and every answer spells paths under it one way, the way it was given, whichever spelling
the client used."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.fs.conftest import fs_command
from tests.wire import ServerProcess, call


@pytest.fixture
def linked_root(tmp_path: Path) -> tuple[Path, Path]:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "a.txt").write_text("alpha needle\n")
    (real / "sub" / "b.txt").write_text("beta\n")
    link = tmp_path / "link"
    os.symlink(real, link)
    return link, real


def _text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]


@pytest.mark.req("FS-ROOT-SYMLINK")
def test_a_root_given_through_a_link_is_shown_with_its_target_and_answers_spell_paths_its_given_way(linked_root: tuple[Path, Path]) -> None:
    link, real = linked_root
    with ServerProcess(fs_command(link)) as server:
        listed = call(server, "list_allowed_directories", {})
        assert str(link) in _text(listed) and str(real) in _text(listed)
        assert listed["structuredContent"]["directories"] == [str(link)]
        assert listed["structuredContent"]["resolved"] == [str(real)]

        # Each request below names the real spelling; each answer uses the given one.
        assert _text(call(server, "write_file", {"path": f"{real}/new.txt", "content": "x\n"})) == f"Successfully wrote to {link}/new.txt"
        assert _text(call(server, "create_directory", {"path": f"{real}/made"})) == f"Successfully created directory {link}/made"
        moved = call(server, "move_file", {"source": f"{real}/new.txt", "destination": f"{real}/made/new.txt"})
        assert _text(moved) == f"Successfully moved {link}/new.txt to {link}/made/new.txt"
        many = _text(call(server, "read_multiple_files", {"paths": [f"{real}/a.txt", f"{real}/none.txt", "sub/b.txt"]}))
        assert [part.split(":", 1)[0] for part in many.split("\n---\n")] == [f"{link}/a.txt", f"{link}/none.txt", f"{link}/sub/b.txt"]
        assert f"{link}/none.txt: Error - No such file: {link}/none.txt" in many
        assert call(server, "get_file_info", {"path": f"{real}/a.txt"})["structuredContent"]["content"].startswith(f"path: {link}/a.txt")
        assert _text(call(server, "search_files", {"path": str(real), "pattern": "**/*.txt"})).splitlines() == [
            f"{link}/a.txt", f"{link}/made/new.txt", f"{link}/sub/b.txt"]
        grep = call(server, "grep_files", {"path": str(real), "pattern": "needle"})
        assert [line.split(":", 1)[0] for line in _text(grep).splitlines()] == [f"{link}/a.txt"]
        missing = call(server, "read_text_file", {"path": f"{real}/gone.txt"})
        assert missing.get("isError") is True and _text(missing) == f"No such file: {link}/gone.txt"
    assert (real / "made" / "new.txt").read_text() == "x\n"
