"""mcp-ref-request: request lines for the shell (value rules, nesting, ids, capabilities, the legacy
preamble, usage errors), in process and as a real command piped into a real server."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from mcp_ref.core import meta
from mcp_ref.kit import request
from mcp_ref.kit.request import build, main
from mcp_ref.core.versions import LATEST_LEGACY_VERSION, MODERN_VERSION

MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION, "io.modelcontextprotocol/clientCapabilities": {}}


def params_of(*argv: str) -> dict:
    [message] = build(["x", *argv])
    params = dict(message["params"])
    params.pop("_meta")
    return params


def usage_error(*argv: str) -> str:
    with pytest.raises(request.UsageError) as raised:
        build(list(argv))
    return str(raised.value)


def run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "mcp_ref.kit.request", *argv], capture_output=True, timeout=30,
                          input=stdin.encode() if stdin is not None else None)


# What a line looks like


def test_a_request_is_one_compact_line_with_the_modern_meta_last() -> None:
    done = run("tools/call", "name=read_text_file", "arguments.path=README.md")
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout == (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file",'
        b'"arguments":{"path":"README.md"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{}}}}\n'
    )


def test_a_request_without_parameters_still_carries_the_meta() -> None:
    assert build(["server/discover"]) == [{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": MODERN_META}}]


def test_text_is_written_as_utf8_not_escaped(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["x", "word=Grüße ✓"]) == 0
    out = capsysbinary.readouterr().out
    assert "Grüße ✓".encode() in out and b"\\u" not in out
    assert out.endswith(b"}\n") and out.count(b"\n") == 1


def test_main_reads_sys_argv_when_given_no_arguments(monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    monkeypatch.setattr(sys, "argv", ["mcp-ref-request", "--id", "5", "ping"])
    assert main() == 0
    assert json.loads(capsysbinary.readouterr().out)["id"] == 5


# Values


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("head=3", 3),
        ("ratio=0.5", 0.5),
        ("flag=true", True),
        ("nothing=null", None),
        ("path=README.md", "README.md"),
        ('name="3"', "3"),
        ('name="true"', "true"),
        ("tags=[\"a\",\"b\"]", ["a", "b"]),
        ('obj={"k":1}', {"k": 1}),
        ("empty=", ""),
        ("spaced=hello world", "hello world"),
        ("unbalanced={oops", "{oops"),
        ("x=NaN", "NaN"),
        ("x=Infinity", "Infinity"),
        ("x=-Infinity", "-Infinity"),
    ],
)
def test_a_value_is_json_when_it_parses_and_a_string_otherwise(argument: str, value: object) -> None:
    key = argument.partition("=")[0]
    assert params_of(argument) == {key: value}


def test_only_the_first_equals_sign_separates_the_key_from_the_value() -> None:
    assert params_of("uri=notes://x?a=b") == {"uri": "notes://x?a=b"}


# Nesting


def test_dotted_keys_build_nested_objects() -> None:
    assert params_of("arguments.path=README.md", "arguments.head=3", "a.b.c=1") == {
        "arguments": {"path": "README.md", "head": 3},
        "a": {"b": {"c": 1}},
    }


def test_a_dotted_key_may_add_to_an_object_given_as_json() -> None:
    assert params_of('a={"b":1}', "a.c=2") == {"a": {"b": 1, "c": 2}}


def test_parameters_keep_the_order_they_were_given_in() -> None:
    assert list(params_of("z=1", "a=2", "m.x=3")) == ["z", "a", "m"]


# Ids


def test_the_id_is_1_unless_given() -> None:
    assert build(["ping"])[0]["id"] == 1


@pytest.mark.parametrize(("given", "request_id"), [("7", 7), ("-3", -3), ("abc", "abc"), ('"7"', "7")])
def test_the_id_follows_the_value_rule_and_may_be_an_integer_or_a_string(given: str, request_id: object) -> None:
    assert build(["--id", given, "ping"])[0]["id"] == request_id


@pytest.mark.parametrize("given", ["1.5", "null", "true", "[1]", "{}"])
def test_an_id_that_is_neither_an_integer_nor_a_string_is_a_usage_error(given: str) -> None:
    assert "--id must be an integer or a string" in usage_error("--id", given, "ping")


def test_options_may_come_after_the_method_and_parameters() -> None:
    [message] = build(["tools/call", "name=clock", "--id", "4", "arguments.a=1"])
    assert message["id"] == 4 and message["params"]["arguments"] == {"a": 1}


# Capabilities and the other _meta members


def test_capabilities_are_declared_by_dotted_path_with_an_optional_value() -> None:
    [message] = build(["-c", "sampling", "--capability", "elicitation.form", "-c", "elicitation.url",
                       "-c", "roots.listChanged=true", "x"])
    assert message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {
        "sampling": {},
        "elicitation": {"form": {}, "url": {}},
        "roots": {"listChanged": True},
    }


def test_progress_token_log_level_and_protocol_version_go_into_the_meta() -> None:
    [message] = build(["--progress-token", "p1", "--log-level", "info", "--protocol-version", "2099-01-01", "x"])
    assert message["params"]["_meta"] == {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "info",
        "progressToken": "p1",
    }
    assert build(["--progress-token", "7", "x"])[0]["params"]["_meta"]["progressToken"] == 7


def test_meta_takes_its_key_whole_dots_and_all() -> None:
    [message] = build(["--meta", 'io.modelcontextprotocol/clientInfo={"name":"sh","version":"1"}', "x"])
    assert message["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] == {"name": "sh", "version": "1"}


def test_an_unknown_log_level_is_a_usage_error() -> None:
    assert "invalid choice" in usage_error("--log-level", "loud", "x")


def test_the_meta_key_names_and_log_levels_match_mcp_ref_meta() -> None:
    assert request.PROTOCOL_VERSION == meta.PROTOCOL_VERSION
    assert request.CLIENT_CAPABILITIES == meta.CLIENT_CAPABILITIES
    assert request.LOG_LEVEL == meta.LOG_LEVEL
    assert request.PROGRESS_TOKEN == meta.PROGRESS_TOKEN
    assert request.LOG_LEVELS == meta.LOG_LEVELS


# Notifications


def test_a_notification_has_no_id_and_no_meta() -> None:
    assert build(["notifications/cancelled", "requestId=1"]) == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    ]
    assert build(["notifications/initialized"]) == [{"jsonrpc": "2.0", "method": "notifications/initialized"}]


def test_meta_can_still_be_added_to_a_notification() -> None:
    [message] = build(["--meta", "k=v", "notifications/x"])
    assert message["params"] == {"_meta": {"k": "v"}}


@pytest.mark.parametrize(
    "option", [["--id", "2"], ["-c", "sampling"], ["--protocol-version", "x"], ["--log-level", "info"], ["--progress-token", "p"]]
)
def test_request_only_options_on_a_notification_are_usage_errors(option: list[str]) -> None:
    usage_error(*option, "notifications/cancelled", "requestId=1")


# Legacy


def test_legacy_prints_initialize_and_initialized_first_and_no_modern_meta() -> None:
    initialize, initialized, message = build(["--legacy", "-c", "roots", "tools/list"])
    assert initialize == {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_LEGACY_VERSION,
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "mcp-ref-request", "version": __import__("mcp_ref").__version__},
        },
    }
    assert initialized == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert message == {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_legacy_names_the_protocol_version_in_initialize_and_keeps_a_progress_token() -> None:
    initialize, _, message = build(["--legacy", "--protocol-version", "2025-06-18", "--progress-token", "t",
                                    "--id", "2", "tools/call", "name=divide"])
    assert initialize["params"]["protocolVersion"] == "2025-06-18"
    assert message["params"] == {"name": "divide", "_meta": {"progressToken": "t"}}


def test_no_meta_prints_the_bare_request_only() -> None:
    assert build(["--no-meta", "--id", "3", "ping"]) == [{"jsonrpc": "2.0", "id": 3, "method": "ping"}]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--legacy", "--no-meta", "ping"], "not allowed with"),
        (["--legacy", "--id", "0", "ping"], "id 0"),
        (["--legacy", "--log-level", "info", "ping"], "logging/setLevel"),
        (["--no-meta", "-c", "sampling", "ping"], "--no-meta"),
        (["--no-meta", "--protocol-version", "2025-06-18", "ping"], "--no-meta"),
    ],
)
def test_options_that_have_nowhere_to_go_in_the_legacy_era_are_usage_errors(argv: list[str], says: str) -> None:
    assert says in usage_error(*argv)


# Usage errors


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "METHOD is required"),
        (["x", "foo"], "'foo' is not KEY=VALUE"),
        (["x", "=3"], "no key"),
        (["x", "a..b=1"], "empty part"),
        (["x", ".a=1"], "empty part"),
        (["x", "a.=1"], "empty part"),
        (["x", "a=1", "a=2"], "a=2: a is already set"),
        (["x", "a=1", "a.b=2"], "a.b=2: cannot nest under a, which is already 1"),
        (["x", "a.b=1", "a=2"], "a is already set"),
        (["x", "a.b=1", "a.b.c=2"], "cannot nest under a.b"),
        (["-c", "sampling", "-c", "sampling", "x"], "--capability sampling: sampling is already set"),
        (["-c", "=1", "x"], "empty part"),
        (["x", "_meta=1"], "cannot nest under _meta"),
        (["--progress-token", "1", "x", "_meta.progressToken=2"], "progressToken is already set"),
        (["--meta", "io.modelcontextprotocol/protocolVersion=2025-06-18", "x"], "already set"),
        (["--meta", "novalue", "x"], "--meta 'novalue' is not KEY=VALUE"),
        (["--progress-token", "1.5", "x"], "--progress-token must be an integer or a string"),
        (["--bogus", "x"], "unrecognized arguments"),
    ],
)
def test_a_command_line_that_cannot_become_a_request_is_a_usage_error(argv: list[str], says: str) -> None:
    assert says in usage_error(*argv)


def test_a_usage_error_exits_2_with_the_message_on_stderr_and_nothing_on_stdout() -> None:
    done = run("x", "a=1", "a.b=2")
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"usage: mcp-ref-request" in done.stderr
    assert b"mcp-ref-request: error: a.b=2: cannot nest under a, which is already 1" in done.stderr


def test_main_returns_2_for_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--id", "null", "ping"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--id must be an integer or a string" in captured.err


def test_help_documents_the_rules_and_every_option() -> None:
    done = run("--help")
    assert done.returncode == 0
    text = done.stdout.decode()
    for word in ("KEY=VALUE", "JSON if it parses", "name='\"3\"'", "arguments.path=README.md", "a=1 a.b=2",
                 "notifications/", "--id", "--capability", "--protocol-version", "--progress-token", "--log-level",
                 "--meta", "--legacy", "--no-meta", "exit status 2"):
        assert word in text, word


# Packaging and startup


def test_the_console_script_runs_main() -> None:
    [script] = entry_points(group="console_scripts", name="mcp-ref-request")
    assert script.value == "mcp_ref.kit.request:main"


def test_the_module_imports_only_light_standard_modules_and_the_version_constants() -> None:
    """argparse, json and sys (and os, which every interpreter has loaded before any script runs)."""
    tree = ast.parse(Path(request.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    assert imported == {"__future__", "argparse", "json", "os", "sys", "typing", "..core.versions", ".."}


# Piped into a real server


def serve(directory: Path, stdin: bytes) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "mcp_ref_fs", str(directory)], input=stdin, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_tool_call_piped_into_mcp_ref_fs_returns_the_file(tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("first line\nsecond line\nthird line\n", encoding="utf-8")
    line = run("tools/call", "name=read_text_file", "arguments.path=note.txt", "arguments.head=2")
    [answer] = serve(tmp_path, line.stdout)
    assert answer["id"] == 1
    assert answer["result"]["content"] == [
        {"type": "text", "text": "first line\nsecond line\n"},
        # A window says what it showed and the exact next call (FS-ANSWER-CUES).
        {"type": "text", "text": '[Lines 1-2 of 3. Next lines: read_text_file {"path": "note.txt", "offset": 2, "limit": 2}]'},
    ]


def test_concatenated_invocations_make_one_session(tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("hello\n", encoding="utf-8")
    lines = run("--id", "1", "tools/list").stdout + run("--id", "2", "tools/call", "name=read_text_file",
                                                         "arguments.path=note.txt").stdout
    answers = {answer["id"]: answer for answer in serve(tmp_path, lines)}
    assert {tool["name"] for tool in answers[1]["result"]["tools"]} >= {"read_text_file"}
    assert answers[2]["result"]["content"] == [{"type": "text", "text": "hello\n"}]


def test_a_legacy_session_is_served_in_the_initialize_era(tmp_path: Path) -> None:
    lines = run("--legacy", "--protocol-version", "2025-06-18", "--id", "1", "tools/list").stdout + run("--no-meta", "--id", "2", "ping").stdout
    answers = {answer["id"]: answer for answer in serve(tmp_path, lines)}
    assert sorted(answers) == [0, 1, 2]
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"
    assert "resultType" not in answers[1]["result"]  # legacy shaping: the modern-only member is gone
    assert answers[2]["result"] == {}


def test_a_request_without_meta_is_refused_by_a_modern_only_server(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mcp_ref_fs", "--modern-only", str(tmp_path)],
                          input=run("--no-meta", "tools/list").stdout, capture_output=True, timeout=30)
    assert json.loads(done.stdout)["error"]["code"] == -32602


def test_a_reader_that_went_away_ends_the_command_quietly_with_status_1() -> None:
    """`mcp-ref-request ... | server` where the server already exited: no traceback, status 1."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write gets EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "mcp_ref.kit.request", "tools/list"], stdout=write_end,
                              stderr=subprocess.PIPE, timeout=30)
    finally:
        os.close(write_end)
    assert done.returncode == 1
    assert done.stderr == b""


@pytest.mark.parametrize("mode", ["poll", "threads"])
@pytest.mark.parametrize(("level", "reported"), [("WARNING", False), ("INFO", True)])
def test_a_client_that_stops_reading_after_its_answers_is_not_an_error_on_stderr(mode: str, level: str, reported: bool) -> None:
    """Closing stdout with nothing in flight (a shell's `| head -1`) is routine: logged at INFO,
    so the default level (WARNING) prints nothing; with work lost it is a WARNING (the
    transport hardening tests). Polled, the server notices the pipe's reader gone at once, so the
    client sends nothing more (a request sent now would race that notice, and lose its work when
    it lost the race). Threaded, only a write notices: the answer to a second request meets
    EPIPE, and that request, answered, is not work lost."""
    import os

    def line(*argv: str) -> bytes:
        return b"".join(request.encode(message) for message in build(list(argv)))

    server = subprocess.Popen([sys.executable, "-m", "mcp_ref_everything"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "MCP_REF_LOG_LEVEL": level, "MCP_REF_STDIO": mode})
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    server.stdin.write(line("--id", "1", "tools/list"))
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 1
    server.stdout.close()  # the reader is gone
    if mode == "threads":
        server.stdin.write(line("--id", "2", "server/discover"))
        server.stdin.flush()
    assert server.wait(timeout=15) == 0
    stderr = server.stderr.read().decode()
    server.stdin.close()
    assert ("stdout was closed by the client (EPIPE" in stderr) is reported, stderr
    if reported:
        assert "cancelling 0 request(s) in flight" in stderr, stderr
