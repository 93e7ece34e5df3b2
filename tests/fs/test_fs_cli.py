"""The mcp-ref-fs command line: roots, options, --help/--version, exit statuses, printf sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_ref_fs.options import SERVER_OPTIONS, plain_command_line
from mcp_ref_fs.usage import argument_parser
from tests.wire import request_line



def run(*arguments: str, stdin: str = "", cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_ref_fs", *arguments], input=stdin, capture_output=True,
                          text=True, timeout=30, cwd=cwd, env={**os.environ, **env} if env else None)


def test_help_explains_roots_options_and_limits() -> None:
    done = run("--help")
    assert done.returncode == 0
    for word in ("ROOT", "--read-only", "--modern-only", "--max-read-bytes", "--max-media-bytes", "--max-entries",
                 "--search-seconds", "relative paths resolve against the first"):
        assert word in done.stdout.replace("\n", " ").replace("  ", " ") or word in done.stdout


def test_help_names_the_environment_variables_and_their_values() -> None:
    done = run("--help", env={"COLUMNS": "100"})
    assert done.returncode == 0
    words = " ".join(done.stdout.split())
    for name in ("MCP_REF_FS_CONFINE", "MCP_REF_FS_ACT", "MCP_REF_LOG_LEVEL", "MCP_REF_STATE_KEY", "MCP_REF_MAX_LINE_BYTES",
                 "MCP_REF_SHUTDOWN_GRACE_SECONDS", "MCP_REF_MAX_CONCURRENCY", "MCP_REF_STDIO"):
        assert name in words
    # The values named are the ones the server accepts.
    from mcp_ref_fs import _platform

    assert all(value in words for value in _platform.ACTS)
    confine = words[words.index("MCP_REF_FS_CONFINE how"):words.index("MCP_REF_FS_ACT how")]
    for value in ("auto", "openat2", "walk", "windows"):
        assert value in confine
    for value in ("fast", "bogus"):
        assert value not in confine


def test_help_follows_the_terminal_width() -> None:
    # argparse's formatter is replaced by one that measures the terminal only for help (see
    # usage.HelpFormatter): the width must still follow COLUMNS.
    narrow, wide = run("--help", env={"COLUMNS": "50"}), run("--help", env={"COLUMNS": "300"})
    # The usage block: serving (wrapped to the width), then the two subcommands' lines.
    narrow_usage, wide_usage = (done.stdout.split("\n\n", 1)[0].splitlines()[:-2] for done in (narrow, wide))
    assert max(map(len, narrow_usage)) <= 48 and len(narrow_usage) > 2
    assert len(wide_usage) == 1
    assert "--max-entries: must be a positive integer" in run("--max-entries", "0", env={"COLUMNS": "50"}).stderr


def test_the_usage_shows_the_subcommands_in_help_and_in_errors() -> None:
    for shown in (run("--help").stdout, run("--no-such-option").stderr):
        usage = shown.split("\n\n", 1)[0].split("\nmcp-ref-fs: error:", 1)[0].splitlines()
        assert usage[0].startswith("usage: mcp-ref-fs [-h]") and usage[-2:] == [
            "       mcp-ref-fs print-config --client HOST [OPTION ...] [ROOT ...]",
            "       mcp-ref-fs install --client HOST [--workspace] [OPTION ...] [ROOT ...]",
        ], shown


@pytest.mark.parametrize(("option", "said"), [("--max-entries", "must be a positive integer"),
                                              ("--search-seconds", "must be a positive number of seconds")])
def test_a_bad_number_gets_one_plain_message_whatever_is_wrong_with_it(option: str, said: str) -> None:
    """`abc` used to get argparse's "invalid positive_int value" (a function's name), `-5` a
    sentence: now both get the sentence, with the value."""
    for value in ("abc", "-5", "0", ""):
        done = run(option, value)
        assert done.returncode == 2
        assert done.stderr.splitlines()[-1] == f"mcp-ref-fs: error: argument {option}: {said}, not {value!r}"


_FLAGS = [flag for flag, *_ in SERVER_OPTIONS]
# Words of command lines: every option in full, abbreviated and with "=", values good and bad for
# each kind, ROOTs, and what only argparse handles.
_WORDS = st.sampled_from(_FLAGS + ["--read", "--max-entries=5", "--", "-", "-5", "--version", "-h",
                                   "5", "0", "abc", "", "1.5", "20000", "/a", "b c", "./d"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_WORDS, max_size=9))
def test_a_plain_command_line_gets_what_argparse_makes_of_it(argv: list[str]) -> None:
    """``options.plain_command_line`` parses a host's command line without importing argparse
    (~2 ms of a start): where it answers, argparse (``usage.argument_parser``) answers the same."""
    plain = plain_command_line(argv)
    if plain is not None:
        assert plain == vars(argument_parser().parse_args(argv))


@pytest.mark.parametrize("argv", [[], ["."], ["/a", "b c"], ["--read-only", "/a", "/b"], ["/a", "--modern-only"],
                                  ["--max-entries", "1000000", "--max-answer-bytes", "1000000000",
                                   "--max-calls-per-second", "0", "/r"],
                                  ["--max-read-bytes", "5", "--max-media-bytes", "6", "--search-seconds", "0.5",
                                   "--task-search-seconds", "60", "--max-answer-bytes", "20000", "."]])
def test_the_command_lines_hosts_run_are_plain(argv: list[str]) -> None:
    plain = plain_command_line(argv)
    assert plain is not None and plain == vars(argument_parser().parse_args(argv))


def test_start_up_imports_nothing_only_help_or_writes_need() -> None:
    # argparse (+gettext: a plain command line is parsed without them), shutil (+bz2, lzma:
    # argparse measures the terminal for every formatter it makes) and
    # secrets (+hmac, hashlib, random: one name per atomic write) cost ~5 ms of every start; the
    # edit and diff modules serve edit_file only, and mcp_ref.kit.typed (with a signature inspection
    # per tool) only handlers that are not classic (ctx, arguments) ones (issue 21: ~3 ms).
    environment = {name: value for name, value in os.environ.items() if not name.startswith("COVERAGE_")}
    code = ("import sys, json\nfrom mcp_ref_fs.__main__ import parse_arguments\nfrom mcp_ref_fs.root import Sandbox\n"
            "from mcp_ref_fs.server import build_server\nconfig = parse_arguments(['--max-entries', '5', '.'])\n"
            "build_server(config, Sandbox.open(config.roots))\nprint(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, env=environment)
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    assert modules & {"shutil", "bz2", "lzma", "secrets", "hmac", "random", "argparse", "gettext"} == set()
    assert modules & {"mcp_ref_fs.edits", "mcp_ref_fs.diffs", "mcp_ref.kit.typed"} == set()
    # The watcher of subscribed files (its module and thread) comes with the first subscription.
    assert "mcp_ref_fs.watch" not in modules


def test_start_up_makes_no_dataclass_and_does_not_import_dataclasses() -> None:
    # Creating a dataclass costs ~0.2-0.8 ms of start-up (its methods are generated and compiled),
    # and importing dataclasses (with copy) ~0.6 ms more: the classes mcp-ref-fs and mcp_ref make
    # at start-up are plain classes (issue 21; Tool, Resource, CacheHint, WatchSet, Root, InFlight,
    # OpenFile, Budget), a named tuple (Location) or a namespace (Meter).
    environment = {name: value for name, value in os.environ.items() if not name.startswith("COVERAGE_")}
    code = ("import sys, json\nfrom mcp_ref_fs.__main__ import parse_arguments\nfrom mcp_ref_fs.root import Sandbox\n"
            "from mcp_ref_fs.server import build_server\nimport mcp_ref.core.stdio, mcp_ref.core.session\n"
            "config = parse_arguments(['.'])\nbuild_server(config, Sandbox.open(config.roots))\n"
            "made = sorted(f'{name}.{value.__name__}' for name, module in list(sys.modules.items())\n"
            "              if name.startswith('mcp_ref') for value in vars(module).values()\n"
            "              if isinstance(value, type) and value.__module__ == name and '__dataclass_fields__' in vars(value))\n"
            "print(json.dumps([made, 'dataclasses' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, env=environment)
    assert json.loads(done.stdout.splitlines()[-1]) == [[], False]


def test_roots_and_locations_compare_and_hash_by_value() -> None:
    from mcp_ref_fs.places import Location, Root

    root = Root("/r", "/real/r", 3)
    assert root == Root("/r", "/real/r", 3, "/") and hash(root) == hash(Root("/r", "/real/r", 3))
    assert root != Root("/r", "/real/r", 4) and root != Root("/r", "/real/r", 3, "\\")
    here = Location(root, ("a", "b"))
    assert here == Location(Root("/r", "/real/r", 3), ("a", "b")) == Location(root, ("a",)).child("b")
    assert {here: 1}[Location(root, ("a", "b"))] == 1 and here != Location(root, ("a",)) and here != ("a", "b")
    assert repr(here) == "Location(root=Root(display='/r', real='/real/r', fd=3, sep='/'), parts=('a', 'b'))"
    assert here.display == "/r/a/b" and here.relative == "a/b" and root.aliases == ("/r", "/real/r")


def test_config_is_immutable_and_compares_by_value() -> None:
    from mcp_ref_fs.config import Config

    config = Config(roots=("a",), max_entries=5)
    assert config == Config(("a",), max_entries=5) and hash(config) == hash(Config(("a",), max_entries=5))
    assert config != config.replace(read_only=True) and config.replace(read_only=True).read_only
    assert "max_entries=5" in repr(config)
    with pytest.raises(AttributeError):
        config.max_entries = 6  # type: ignore[misc]


def test_version_prints_the_version() -> None:
    done = run("--version")
    assert done.returncode == 0 and done.stdout.startswith("mcp-ref-fs ")


@pytest.mark.parametrize("make", ["missing", "file"])
def test_a_root_that_is_not_a_directory_exits_2_before_serving(tmp_path: Path, make: str) -> None:
    target = tmp_path / "x"
    if make == "file":
        target.write_text("not a directory")
    done = run(str(target), stdin=request_line(1, "server/discover"))
    assert done.returncode == 2
    assert done.stdout == ""  # nothing was served
    assert str(target) in done.stderr


def test_bad_option_values_exit_2(tmp_path: Path) -> None:
    assert run("--max-entries", "0", str(tmp_path)).returncode == 2
    assert run("--search-seconds", "nan", str(tmp_path)).returncode == 2


def test_no_root_serves_the_current_directory_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("here\n")
    done = run(stdin=request_line(1, "tools/call", name="list_allowed_directories", arguments={}), cwd=tmp_path)
    assert done.returncode == 0
    assert "current directory" in done.stderr
    answer = json.loads(done.stdout)
    assert os.path.realpath(str(tmp_path)) in os.path.realpath(answer["result"]["structuredContent"]["directories"][0])


def test_options_come_before_roots_and_several_roots_are_served(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    done = run("--read-only", "--max-entries", "10", str(first), str(second),
               stdin=request_line(1, "tools/call", name="list_allowed_directories", arguments={}))
    assert done.returncode == 0
    assert json.loads(done.stdout)["result"]["structuredContent"]["directories"] == [str(first), str(second)]


def test_a_printf_session_answers_every_request_and_exits_0(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello\n")
    session = request_line(1, "server/discover") + request_line(2, "tools/list") + request_line(
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


def test_start_up_pauses_the_cyclic_collector_only_until_the_server_is_built(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # main() pauses gc while it imports and builds (issue 21: ~10 % of a cold start) and turns it
    # back on before serving, and after a start-up that fails or exits (argparse); a collector
    # already off stays off. Only the process's own start (no argv) freezes what start-up made.
    import gc

    from mcp_ref_fs import __main__ as entry, server as fs_server

    seen: list[tuple[str, bool, int]] = []
    built = fs_server.build_server
    sandboxes: list[Any] = []

    class Served:
        def run(self) -> int:
            seen.append(("run", gc.isenabled(), gc.get_freeze_count()))
            return 0

    def build(config: Any, sandbox: Any) -> Served:
        sandboxes.append(sandbox)
        built(config, sandbox)
        seen.append(("build", gc.isenabled(), gc.get_freeze_count()))
        return Served()

    monkeypatch.setattr(fs_server, "build_server", build)
    # Some interpreters start with objects already frozen (3.12.1: 375), so counts are relative.
    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    try:
        assert entry.main([str(tmp_path)]) == 0  # called with an argv, as tests and tools do: nothing frozen
        assert seen == [("build", False, frozen), ("run", True, frozen)]
        assert entry.main([str(tmp_path / "missing")]) == 2 and gc.isenabled()
        with pytest.raises(SystemExit):
            entry.main(["--no-such-option"])
        assert gc.isenabled() and gc.get_freeze_count() == frozen
        seen.clear()
        monkeypatch.setattr(sys, "argv", ["mcp-ref-fs", str(tmp_path)])
        assert entry.main() == 0  # the process's own start: start-up's objects are frozen before serving
        assert seen[0] == ("build", False, frozen) and seen[1][:2] == ("run", True)
        assert seen[1][2] > frozen + 10_000
        gc.unfreeze()
        gc.disable()
        seen.clear()
        assert entry.main([str(tmp_path)]) == 0
        assert seen == [("build", False, 0), ("run", False, 0)]
    finally:
        gc.enable()
        gc.unfreeze()  # this test process is not a server: its objects go back to the collector
        for sandbox in sandboxes:
            sandbox.close()
