"""The mcp-ref-fs command line: roots, options, --help/--version, exit statuses, printf sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def run(*arguments: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_ref_fs", *arguments], input=stdin, capture_output=True,
                          text=True, timeout=30, cwd=cwd)


def line(request_id: int, method: str, **params: object) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": META}}) + "\n"


def test_help_explains_roots_options_and_limits() -> None:
    done = run("--help")
    assert done.returncode == 0
    for word in ("ROOT", "--read-only", "--modern-only", "--max-read-bytes", "--max-media-bytes", "--max-entries",
                 "--search-seconds", "relative paths resolve against the first"):
        assert word in done.stdout.replace("\n", " ").replace("  ", " ") or word in done.stdout


def test_version_prints_the_version() -> None:
    done = run("--version")
    assert done.returncode == 0 and done.stdout.startswith("mcp-ref-fs ")


@pytest.mark.parametrize("make", ["missing", "file"])
def test_a_root_that_is_not_a_directory_exits_2_before_serving(tmp_path: Path, make: str) -> None:
    target = tmp_path / "x"
    if make == "file":
        target.write_text("not a directory")
    done = run(str(target), stdin=line(1, "server/discover"))
    assert done.returncode == 2
    assert done.stdout == ""  # nothing was served
    assert str(target) in done.stderr


def test_bad_option_values_exit_2(tmp_path: Path) -> None:
    assert run("--max-entries", "0", str(tmp_path)).returncode == 2
    assert run("--search-seconds", "nan", str(tmp_path)).returncode == 2


def test_no_root_serves_the_current_directory_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("here\n")
    done = run(stdin=line(1, "tools/call", name="list_allowed_directories", arguments={}), cwd=tmp_path)
    assert done.returncode == 0
    assert "current directory" in done.stderr
    answer = json.loads(done.stdout)
    assert os.path.realpath(str(tmp_path)) in os.path.realpath(answer["result"]["structuredContent"]["directories"][0])


def test_options_come_before_roots_and_several_roots_are_served(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    done = run("--read-only", "--max-entries", "10", str(first), str(second),
               stdin=line(1, "tools/call", name="list_allowed_directories", arguments={}))
    assert done.returncode == 0
    assert json.loads(done.stdout)["result"]["structuredContent"]["directories"] == [str(first), str(second)]


def test_a_printf_session_answers_every_request_and_exits_0(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello\n")
    session = line(1, "server/discover") + line(2, "tools/list") + line(
        3, "tools/call", name="read_text_file", arguments={"path": "hello.txt"})
    done = run(str(tmp_path), stdin=session)
    assert done.returncode == 0
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3]
    assert answers[3]["result"]["content"][0]["text"] == "hello\n"


def test_modern_only_refuses_initialize(tmp_path: Path) -> None:
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}) + "\n"
    done = run("--modern-only", str(tmp_path), stdin=initialize)
    assert json.loads(done.stdout)["error"]["code"] == -32022
