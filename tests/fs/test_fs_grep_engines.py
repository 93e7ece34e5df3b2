"""grep_files' two engines and its wall-clock time limit (issue 17, item 8).

RE2 runs the patterns it can run exactly as Python's syntax means them, in linear time; the
``regex`` module runs the rest, each search within an allowance of its own time. The time limit
is kept by the event loop's clock, so a stopped or CPU-starved process answers at it, not after
the engine's CPU time has caught up.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_ref_fs import grep
from tests.fs.conftest import fs_command
from tests.wire import ServerProcess, modern_request, result_of, tool_call

try:
    import re2  # noqa: F401
except ImportError:  # no wheel for this platform: the backtracking engine alone
    HAVE_RE2 = False
else:
    HAVE_RE2 = True
needs_re2 = pytest.mark.skipif(not HAVE_RE2, reason="google-re2 is not installed here (no wheel for this platform)")


def _grep(server: ServerProcess, request_id: int, root: Path, pattern: str, timeout: float) -> dict[str, Any]:
    return result_of(server.request(tool_call(request_id, "grep_files", {"path": str(root), "pattern": pattern}), timeout=timeout))


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process ``pid`` has used, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _notes(result: dict[str, Any]) -> str:
    """The cue and note blocks that follow the data block (FS-ANSWER-CUES)."""
    return " ".join(block["text"] for block in result["content"][1:])


def _match_lines(result: dict[str, Any]) -> list[str]:
    return result["content"][0]["text"].splitlines()


@pytest.mark.req("FS-SEARCH-TIME-LIMIT", "FS-GREP-ENGINES")
@pytest.mark.parametrize("engine", [pytest.param("auto", marks=needs_re2), "regex"])
def test_a_catastrophic_pattern_is_answered_within_seconds_under_the_default_limit(tmp_path: Path, engine: str) -> None:
    # The default --search-seconds is 30: one pattern used to hold a grep that long.
    (tmp_path / "aaa.txt").write_text("a" * 50_000 + "b\naaa\n")
    with ServerProcess(fs_command(tmp_path), env={"MCP_REF_FS_GREP": engine}) as server:
        result = _grep(server, 1, tmp_path, "(a+)+$", timeout=15)  # a generous bound: the issue asks for 5 s
        assert not result.get("isError"), result
        if engine == "auto":  # RE2: the real answer, at once
            assert _match_lines(result) == [f"{tmp_path / 'aaa.txt'}:2: aaa"]
            assert _notes(result) == ""  # complete: no cue, no note
        else:  # the backtracking engine: stopped, and the note names the allowance it used up
            assert "Stopped early" in _notes(result)
            assert "needed more than 1.0 s for one search" in _notes(result) and "0.1 s per MiB" in _notes(result)
        assert _match_lines(_grep(server, 2, tmp_path, "a+b", timeout=15))[0].startswith(f"{tmp_path / 'aaa.txt'}:1: ")  # still serving


@pytest.mark.req("FS-SEARCH-TIME-LIMIT")
def test_the_time_limit_is_wall_clock_time_even_for_a_stopped_process(tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):  # skipped at run time: a skipif marker would drop it from spec/
        pytest.skip("reads the server's CPU time from /proc (Linux)")
    # One backtracking search that would run past --search-seconds (its allowance on 30 MiB of
    # text is 4 s of engine time). The process is stopped for 4 s: the engine's clock (CPU time)
    # stands still meanwhile, the event loop's does not, so the answer is due as it resumes. It
    # used to come once the engine had used its 4 s of CPU: 3.5 s or more after resuming.
    (tmp_path / "big.txt").write_bytes(b"a" * (30 * 1024 * 1024) + b"\n")
    with ServerProcess(fs_command(tmp_path, options=("--search-seconds", "4")), env={"MCP_REF_FS_GREP": "regex"}) as server:
        server.request(modern_request(0, "ping"))  # serving: the grep is read as soon as it is sent
        busy = _cpu_seconds(server.pid)
        server.send(tool_call(1, "grep_files", {"path": str(tmp_path), "pattern": "(a+)+(?=c)"}))
        # The stop must fall inside the search: wait until the server has spent half a second of
        # CPU on it (reading 30 MiB takes a few ms; the rest is the engine), however busy the machine.
        deadline = time.monotonic() + 60
        while _cpu_seconds(server.pid) - busy < 0.5:
            assert time.monotonic() < deadline, "the search did not start within 60 s"
            time.sleep(0.01)
        server.signal(signal.SIGSTOP)
        time.sleep(4.0)  # the stop itself is the condition under test
        server.signal(signal.SIGCONT)
        resumed = time.monotonic()
        result = result_of(server.response(1, timeout=30))
        waited = time.monotonic() - resumed
        assert "time limit" in _notes(result)
        assert waited < 2.0, f"answered {waited:.1f} s after the process resumed: the limit was kept in CPU time"


# --- the engines agree --------------------------------------------------------------------------

PATTERNS = [
    r"\w+\s=", r"^def \w+", r"[[:alpha:]]+\d", r"a{,3}b", r"a{2,}", r"(?i)straße", r"(?i)k", r"\bcat\b", r"é+",
    r"[^a-z\n]+", r"\d{2}:\d{2}", r"x|$", r"^", r"colou?r", r"\p{Lu}\p{Ll}+", r"(?s)a.b", r"\x41", r"[\]]",
    r"(a|ab)(c|bcd)", r"\Bing\b", r"\S+@\S+", r"\t", r"^\s*$",
]
TEXTS = [
    b"def main():\n    x = 1\n\tcat catalog\r\nemail me@example.org\n",
    "café naïve Straße KELVIN \u212a Ünïcode 12:34 ٣٤\naab aaab a{,3}b\nÉté\n".encode(),
    b"plain ascii\n\nab\nabcd\n12:34 colour color\n]\nA\n",
    b"not utf-8 \xff\xfe here\nab a{,3}b\n",
]


@pytest.mark.req("FS-GREP-ENGINES")
@needs_re2
@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("ignore_case", [False, True])
def test_re2_and_the_backtracking_engine_find_the_same_lines(pattern: str, ignore_case: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    linear = grep.compile_grep(pattern, ignore_case=ignore_case)
    monkeypatch.setenv("MCP_REF_FS_GREP", "regex")
    backtracking = grep.compile_grep(pattern, ignore_case=ignore_case)
    assert not backtracking.linear
    deadline = time.monotonic() + 30
    for text in TEXTS:
        ours = linear.search_lines(text, context=1, max_matches=50, deadline=deadline)
        theirs = backtracking.search_lines(text, context=1, max_matches=50, deadline=deadline)
        assert ours == theirs, (pattern, text)


@pytest.mark.req("FS-GREP-ENGINES")
@needs_re2
def test_re2_runs_only_patterns_it_means_the_same_way() -> None:
    assert grep.compile_grep(r"(a+)+$").linear
    assert grep.compile_grep(r"\w+").linear  # on ASCII (or exact) text only: checked per file
    for python_only in (r"(a)\1", r"(?<=x)y", r"a++", r"(?>a)", r"a{,3}", r"\N{DIGIT ONE}", r"(?x) a"):
        assert not grep.compile_grep(python_only).linear, python_only
