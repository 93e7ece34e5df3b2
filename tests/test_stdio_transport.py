"""Wire tests of the stdio transport (mcp_ref/core/stdio.py) against a real server process.

Spec: basic/transports/stdio, basic/patterns/cancellation, basic/patterns/progress, basic/index.
Each test starts ``python -m tests.servers.basic_server`` and talks to it through its real stdin
and stdout (see tests/wire.py); every line the server writes is checked to be one JSON object
that validates against the official 2026-07-28 schema.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.schema_check import check_modern
from tests.servers.basic_server import GREETING, STRAY_MARKER
from tests.wire import (
    ServerProcess,
    Spawner,
    cancel,
    encode_line,
    is_progress,
    is_response,
    long_call,
    modern_request,
    notification,
    result_text,
    run_with_files,
    tool_call,
)

Spawn = Spawner


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start basic_server processes (``Spawner``); all are closed afterwards."""
    with Spawner() as start:
        yield start


@pytest.fixture(scope="module")
def _module_servers() -> Iterator[list[ServerProcess]]:
    servers: list[ServerProcess] = []
    yield servers
    for process in servers:
        process.close(timeout=1.0)


@pytest.fixture
def shared_server(_module_servers: list[ServerProcess]) -> ServerProcess:
    """One server for a family of cheap cases that each leave it ready for the next. A fresh one is
    started when a case left it dead, so one failure does not cascade."""
    if not _module_servers or _module_servers[-1].returncode is not None:
        _module_servers.append(ServerProcess())
    return _module_servers[-1]


def progress_of(messages: list[dict[str, Any]], token: Any) -> list[dict[str, Any]]:
    return [
        m["params"]
        for m in messages
        if m.get("method") == "notifications/progress" and m["params"]["progressToken"] == token
    ]


def assert_clean_stderr(server: ServerProcess) -> None:
    stderr = server.stderr_text()
    assert "Traceback" not in stderr, stderr


# --- the basic exchange ---------------------------------------------------------------------------


@pytest.mark.req("STDIO-NEWLINE-DELIMITED", "STDIO-EXIT-ON-EOF", "BASE-RESULT-ECHOES-ID")
def test_piped_requests_then_eof_are_answered_and_the_server_exits_0(spawn: Spawn) -> None:
    server = spawn()
    requests = [
        modern_request(1, "server/discover"),
        modern_request("two", "tools/list"),
        tool_call(3, "echo", {"text": "hello"}),
    ]
    # Written the way `printf '...' | server` would: one write, the last line without a newline.
    for request in requests:
        server.note_sent(request)
    server.send_raw(b"".join(encode_line(r) for r in requests)[:-1])
    messages = server.shutdown()
    assert sorted(json.dumps(m["id"]) for m in messages) == ['"two"', "1", "3"]
    assert all("result" in m for m in messages), messages
    assert result_text(next(m for m in messages if m["id"] == 3)) == "hello"
    assert_clean_stderr(server)


@pytest.mark.req("DISC-SERVER-MUST-IMPLEMENT", "DISC-SUPPORTED-VERSIONS")
def test_a_cold_server_answers_server_discover_first_thing(spawn: Spawn) -> None:
    server = spawn()
    response = server.request(modern_request(1, "server/discover"))
    assert "2026-07-28" in response["result"]["supportedVersions"]
    assert response["result"]["resultType"] == "complete"


@pytest.mark.req("STDIO-EXIT-ON-EOF")
def test_stdin_from_dev_null_exits_0_at_once_with_no_output() -> None:
    with ServerProcess(stdin=subprocess.DEVNULL) as server:
        assert server.read_until_eof() == []
        server.assert_exit(0)
        assert_clean_stderr(server)


@pytest.mark.req("STDIO-EXIT-ON-EOF")
def test_an_empty_file_as_stdin_exits_0_with_no_output(tmp_path: Path) -> None:
    code, output, stderr = run_with_files(b"", directory=tmp_path)
    assert (code, output) == (0, b""), stderr
    assert "Traceback" not in stderr


# --- shutdown -----------------------------------------------------------------------------------------


def trigger_shutdown(server: ServerProcess, how: str) -> None:
    if how == "eof":
        server.close_stdin()
    else:
        server.signal(getattr(signal, how))


@pytest.mark.req("STDIO-EXIT-ON-EOF", "STDIO-EOF-DRAIN")
@pytest.mark.parametrize("how", ["eof", "SIGTERM", "SIGINT"])
def test_shutdown_lets_an_in_flight_request_finish_within_the_grace_period(spawn: Spawn, how: str) -> None:
    server = spawn(shutdown_grace="10")
    server.send(tool_call(1, "slow", {"steps": 3, "interval": 0.1}, progress_token="p"))
    server.read_until(is_progress("p"))  # running (and the signal handlers are installed)
    trigger_shutdown(server, how)
    messages = server.read_until_eof()
    final = [m for m in messages if is_response(m, 1)]
    assert len(final) == 1 and result_text(final[0]) == "finished 3 steps"
    server.assert_exit(0)
    assert_clean_stderr(server)


@pytest.mark.req("STDIO-EXIT-ON-EOF", "STDIO-EOF-DRAIN", "CANCEL-NO-RESPONSE", "CANCEL-SERVER-NO-OTHER-CANCELLED")
@pytest.mark.parametrize("how", ["eof", "SIGTERM", "SIGINT"])
def test_requests_still_running_when_the_grace_period_ends_are_answered_with_an_error_and_cancelled(
    spawn: Spawn, how: str
) -> None:
    server = spawn(shutdown_grace="0.3")
    server.send(long_call(1, "p"))
    server.read_until(is_progress("p"))
    started = time.monotonic()
    trigger_shutdown(server, how)
    messages = server.read_until_eof(timeout=15)
    server.assert_exit(0, timeout=15)
    elapsed = time.monotonic() - started
    # Exactly one response, an error saying why; never a notifications/cancelled.
    [answer] = [m for m in messages if is_response(m)]
    assert answer["id"] == 1 and answer["error"]["code"] == -32603 and "shutting down" in answer["error"]["message"]
    assert [m for m in messages if "method" in m and m["method"] != "notifications/progress"] == []
    assert elapsed < 10, f"exit took {elapsed:.1f} s with a 0.3 s grace period (the tool would run 100 s)"
    assert "slow 1: cancelled during step" in server.stderr_text()


@pytest.mark.req("STDIO-EXIT-ON-EOF", "STDIO-EOF-DRAIN")
def test_a_synchronous_handler_still_running_after_the_grace_period_does_not_hold_the_exit(spawn: Spawn) -> None:
    server = spawn(shutdown_grace="0.2")
    server.send(tool_call(1, "spin", {"seconds": 20}))
    server.send(tool_call(2, "echo", {"text": "spinning"}))
    server.response(2)  # the spin call was read before this one and is running on a worker thread
    started = time.monotonic()
    server.close_stdin()
    assert [m["error"]["code"] for m in server.read_until_eof(timeout=25)] == [-32603]  # "shutting down"
    server.assert_exit(0, timeout=25)
    elapsed = time.monotonic() - started
    assert elapsed < 8, f"exit took {elapsed:.1f} s with a 0.2 s grace period (the handler would spin 20 s)"


@pytest.mark.req("STDIO-EOF-DRAIN")
def test_a_second_signal_ends_the_grace_period_at_once(spawn: Spawn) -> None:
    server = spawn(shutdown_grace="30")
    server.send(long_call(1, "p"))
    last = server.read_until(is_progress("p"))[-1]["params"]["progress"]
    server.signal(signal.SIGTERM)
    # The first signal only starts the grace period: the work goes on. Two more steps (0.1 s) make
    # sure the server has taken the signal before the second one is sent.
    server.read_until(lambda m: is_progress("p")(m) and m["params"]["progress"] >= last + 2)
    started = time.monotonic()
    server.signal(signal.SIGTERM)
    assert [m["error"]["code"] for m in server.read_until_eof() if is_response(m)] == [-32603]  # "shutting down"
    server.assert_exit(0)
    assert time.monotonic() - started < 10, "the second signal did not cut the 30 s grace period short"


@pytest.mark.req("STDIO-EXIT-ON-EOF", "STDIO-EOF-DRAIN", "STDIO-BACKPRESSURE")
def test_output_still_queued_at_eof_is_written_out_before_the_server_exits(spawn: Spawn) -> None:
    server = spawn(extra_env={"MCP_REF_LOG_LEVEL": "INFO"})
    # 3 MB: fills the pipe (1 MiB on Linux: the server widens it, mcp_ref.layers.pipesize), and
    # the rest waits in the transport's buffer.
    server.send(modern_request(1, "resources/read", {"uri": "memo://bytes/3000000"}))
    server.close_stdin()
    # The server reaches its shutdown with the response still unread: the client reads only now.
    server.wait_for_stderr("shutting down: reading no more input")
    server.wait_for_full_stdout()
    messages = server.read_until_eof()
    assert [len(m["result"]["contents"][0]["text"]) for m in messages] == [3000000]
    server.assert_exit(0)


@pytest.mark.req("STDIO-EOF-DRAIN")
def test_sigterm_with_nothing_in_flight_exits_0(spawn: Spawn) -> None:
    server = spawn()
    server.request(modern_request(1, "server/discover"))  # the signal handlers are installed by now
    server.signal(signal.SIGTERM)
    assert server.read_until_eof() == []
    server.assert_exit(0)


def test_the_transport_restores_blocking_mode_on_a_shared_stdin_and_stdout() -> None:
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    fds = [in_read, in_write, out_read, out_write]
    try:
        with ServerProcess(stdin=in_read, stdout=out_write) as process:
            os.write(in_write, encode_line(modern_request(1, "server/discover")))
            response = b""
            deadline = time.monotonic() + 10
            while b"\n" not in response and time.monotonic() < deadline:
                response += os.read(out_read, 65536)
            assert json.loads(response)["id"] == 1
            os.close(in_write)
            fds.remove(in_write)
            process.assert_exit(0)
            # in_read and out_write are our own descriptors for the very pipes the server used.
            assert os.get_blocking(in_read), "stdin left non-blocking for the parent"
            assert os.get_blocking(out_write), "stdout left non-blocking for the parent"
    finally:
        for fd in fds:
            os.close(fd)


# --- concurrency and cancellation -------------------------------------------------------------------


@pytest.mark.req("BASE-RESULT-ECHOES-ID", "STDIO-RESPONSES-BY-ID")
def test_a_fast_request_is_answered_while_a_slow_one_is_still_running(spawn: Spawn) -> None:
    server = spawn()
    server.send(long_call(1, "p1"))
    server.read_until(is_progress("p1"))
    server.send(tool_call(2, "echo", {"text": "fast"}))
    first = server.read_until(is_response)[-1]
    assert first["id"] == 2 and result_text(first) == "fast"
    assert not [m for m in server.received if is_response(m, 1)]


@pytest.mark.req("BASE-RESULT-ECHOES-ID", "STDIO-RESPONSES-BY-ID")
def test_responses_go_out_in_completion_order_not_request_order(spawn: Spawn) -> None:
    server = spawn()
    server.send_many(
        [
            tool_call(1, "slow", {"steps": 3, "interval": 0.1}),
            tool_call(2, "slow", {"steps": 1, "interval": 0.1}),
            tool_call(3, "echo", {"text": "fast"}),
        ]
    )
    order = [m["id"] for m in server.read_until(lambda m: is_response(m, 1)) if is_response(m)]
    assert order == [3, 2, 1]


@pytest.mark.req("STDIO-RESPONSES-BY-ID")
def test_a_synchronous_handler_does_not_block_other_requests(spawn: Spawn) -> None:
    server = spawn()
    server.send(tool_call(1, "spin", {"seconds": 30}))
    server.send(tool_call(2, "add", {"a": 2, "b": 40}))
    first = server.read_until(is_response)[-1]
    assert first["id"] == 2 and result_text(first) == "42"
    server.send(cancel(1))  # lets the worker thread go


@pytest.mark.req("CANCEL-NO-RESPONSE", "CANCEL-STOP-PROCESSING", "STDIO-CANCEL-STOP-WORK", "STDIO-CANCEL-NO-FURTHER-MESSAGES")
def test_a_cancelled_request_is_never_answered_and_the_server_keeps_serving(spawn: Spawn) -> None:
    server = spawn()
    server.send(long_call("c", "pc"))
    server.read_until(is_progress("pc"))
    server.send(cancel("c", "the user gave up"))
    server.send(tool_call(2, "echo", {"text": "still here"}))
    assert result_text(server.response(2)) == "still here"
    # The cancellation was handled before request 2 was read: nothing more may come for "c".
    later = server.shutdown()
    assert not [m for m in server.received if is_response(m, "c")]
    assert progress_of(later, "pc") == []
    assert "slow 'c': cancelled during step" in server.stderr_text()


@pytest.mark.req("CANCEL-NO-RESPONSE", "CANCEL-STOP-PROCESSING", "STDIO-CANCEL-STOP-WORK")
def test_a_cancelled_synchronous_handler_sees_ctx_cancelled_and_is_never_answered(spawn: Spawn) -> None:
    server = spawn()
    server.send(tool_call(1, "spin", {"seconds": 30}))
    server.request(tool_call(2, "echo", {"text": "spin is running"}))
    server.send(cancel(1))
    deadline = time.monotonic() + 10
    while "stopped early" not in server.stderr_text() and time.monotonic() < deadline:
        server.expect_silence(0.05)
    assert "spin 1: stopped early" in server.stderr_text()
    assert server.shutdown() == []


@pytest.mark.req("CANCEL-LOG-REASON", "STDIO-STDERR-LOGGING")
def test_a_cancellation_is_logged_to_stderr_with_its_reason(spawn: Spawn) -> None:
    server = spawn(extra_env={"MCP_REF_LOG_LEVEL": "INFO"})
    server.send(long_call("c", "pc"))
    server.read_until(is_progress("pc"))
    server.send(cancel("c", "the user gave up"))
    server.shutdown()  # (a progress update already on its way may still arrive, so no check of what it returns)
    stderr = server.stderr_text()
    assert "'c'" in stderr and "the user gave up" in stderr, stderr


@pytest.mark.req("CANCEL-INVALID-IGNORED", "BASE-NOTIFICATION-NO-RESPONSE")
def test_cancellations_of_unknown_or_malformed_ids_are_ignored(spawn: Spawn) -> None:
    server = spawn()
    for params in [{"requestId": 12345}, {"requestId": "never-sent"}, {"requestId": None}, {"requestId": {"x": 1}}, {}]:
        server.send(notification("notifications/cancelled", params))
    server.send(notification("notifications/cancelled"))
    assert result_text(server.request(tool_call(1, "echo", {"text": "ok"}))) == "ok"
    assert server.shutdown() == []
    assert [m.get("id") for m in server.received] == [1]


@pytest.mark.req("CANCEL-RACE-GRACEFUL", "CANCEL-INVALID-IGNORED")
def test_a_cancellation_after_the_response_is_ignored(spawn: Spawn) -> None:
    server = spawn()
    server.request(tool_call(1, "echo", {"text": "done"}))
    server.send(cancel(1))
    assert result_text(server.request(tool_call(1, "echo", {"text": "id reused after completion"}))) == (
        "id reused after completion"
    )
    assert server.shutdown() == []


@pytest.mark.req("BASE-REQUEST-ID-UNIQUE", "BASE-INVALID-REQUEST-32600")
def test_a_duplicate_in_flight_id_is_refused_and_the_original_request_is_unaffected(spawn: Spawn) -> None:
    server = spawn()
    server.send(tool_call(7, "slow", {"steps": 4, "interval": 0.1}, progress_token="p7"))
    server.read_until(is_progress("p7"))
    server.send(tool_call(7, "echo", {"text": "duplicate"}))
    refusal = server.read_until(is_response)[-1]
    assert refusal["id"] == 7 and refusal["error"]["code"] == -32600
    original = server.response(7)
    assert result_text(original) == "finished 4 steps"
    assert server.shutdown() == []


@pytest.mark.req("BASE-REQUEST-ID-STRING-OR-INTEGER")
def test_integer_and_string_ids_with_the_same_digits_are_different_requests(spawn: Spawn) -> None:
    server = spawn()
    server.send(tool_call(5, "slow", {"steps": 4, "interval": 0.1}, progress_token="p5"))
    server.read_until(is_progress("p5"))  # request 5 is in flight
    server.send(tool_call("5", "echo", {"text": "string id"}))
    assert result_text(server.response("5")) == "string id"  # not refused as a duplicate
    assert result_text(server.response(5)) == "finished 4 steps"


@pytest.mark.req("BASE-RESULT-ECHOES-ID", "STDIO-RESPONSES-BY-ID")
def test_five_hundred_concurrent_requests_are_each_answered_exactly_once(spawn: Spawn) -> None:
    server = spawn()
    count = 500
    requests = [
        tool_call(i, "add", {"a": i, "b": 1}) if i % 5 == 0 else tool_call(i, "echo", {"text": f"n{i}"})
        for i in range(count)
    ]
    server.send_many(requests)
    answers = {}
    for _ in range(count):
        message = server.read_until(is_response)[-1]
        assert message["id"] not in answers, f"id {message['id']} answered twice"
        answers[message["id"]] = result_text(message)
    assert answers == {i: (str(i + 1) if i % 5 == 0 else f"n{i}") for i in range(count)}
    assert server.shutdown() == []


@pytest.mark.req("STDIO-BACKPRESSURE", "STDIO-RESPONSES-BY-ID")
def test_a_flood_beyond_the_backlog_limit_pauses_reading_and_every_request_is_still_answered(spawn: Spawn) -> None:
    # More requests in flight at once than the transport's backlog limit (1024): reading pauses,
    # then resumes as they finish. Every handler may run at once, so the flood drains in ~0.2 s.
    server = spawn(max_concurrency="5000", shutdown_grace="0.5")
    count = 1200
    server.send_many(tool_call(i, "slow", {"steps": 1, "interval": 0.2}) for i in range(count))
    answered = set()
    for _ in range(count):
        message = server.read_until(is_response, timeout=30)[-1]
        assert result_text(message) == "finished 1 steps"
        answered.add(message["id"])
    assert answered == set(range(count))
    assert server.shutdown() == []


# --- progress -------------------------------------------------------------------------------------


@pytest.mark.req("PROG-INCREASING", "PROG-TOKEN-ECHOED", "PROG-STOP-AFTER-COMPLETION")
def test_progress_notifications_precede_the_response_and_strictly_increase(spawn: Spawn) -> None:
    server = spawn()
    server.send(tool_call(1, "slow", {"steps": 6, "interval": 0.03}, progress_token="tok-1"))
    before = server.read_until(lambda m: is_response(m, 1))
    after = server.shutdown()
    updates = progress_of(before, "tok-1")
    assert updates, "no progress was reported"
    values = [u["progress"] for u in updates]
    assert all(a < b for a, b in zip(values, values[1:])), values
    assert all(u["total"] == 6 and u["progress"] <= 6 for u in updates)
    assert progress_of(after, "tok-1") == []


@pytest.mark.req("PROG-ONLY-ACTIVE-TOKENS")
def test_no_progress_is_sent_for_a_request_without_a_progress_token(spawn: Spawn) -> None:
    server = spawn()
    server.send(tool_call(1, "slow", {"steps": 3, "interval": 0.02}))
    messages = server.read_until(is_response)
    assert [m for m in messages if "method" in m] == []


@pytest.mark.req("PROG-TOKEN-ECHOED")
def test_an_integer_progress_token_is_echoed_unchanged(spawn: Spawn) -> None:
    server = spawn()
    server.send(tool_call(1, "slow", {"steps": 2, "interval": 0.02}, progress_token=41))
    messages = server.read_until(lambda m: is_response(m, 1))
    tokens = [m["params"]["progressToken"] for m in messages if m.get("method") == "notifications/progress"]
    assert tokens and all(token == 41 and type(token) is int for token in tokens)


# --- messages the server must not answer ----------------------------------------------------------------


@pytest.mark.req("BASE-NOTIFICATION-NO-RESPONSE")
def test_notifications_known_or_unknown_are_never_answered(spawn: Spawn) -> None:
    server = spawn()
    for method in ["notifications/roots/list_changed", "notifications/initialized", "notifications/made-up", "not/a/notification"]:
        server.send(notification(method, {"anything": [1, 2]}))
        server.send(notification(method))
    assert result_text(server.request(tool_call(1, "echo", {"text": "next"}))) == "next"
    assert server.shutdown() == []
    assert len(server.received) == 1


@pytest.mark.req("STDIO-CLIENT-NO-RESPONSES")
def test_responses_sent_by_the_client_are_ignored(spawn: Spawn) -> None:
    server = spawn()
    server.send({"jsonrpc": "2.0", "id": 99, "result": {}})
    server.send({"jsonrpc": "2.0", "id": "x", "error": {"code": -32601, "message": "no"}})
    assert result_text(server.request(tool_call(1, "echo", {"text": "next"}))) == "next"
    assert server.shutdown() == []
    assert len(server.received) == 1
    assert server.stderr_text().count("ignoring a JSON-RPC response from the client") == 2


# --- malformed input ---------------------------------------------------------------------------------------


@pytest.mark.req("BASE-PARSE-ERROR-32700", "BASE-INVALID-REQUEST-32600", "BASE-ERROR-ID-NULL", "BASE-NO-BATCH", "BASE-ERROR-ECHOES-ID", "BASE-PARAMS-OBJECT")
@pytest.mark.parametrize(
    ("line", "code", "error_id"),
    [
        (b"this is not json", -32700, None),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/list",', -32700, None),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/\xff\xfelist"}', -32700, None),
        (b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", -32700, None),
        (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', -32600, None),
        (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', -32600, None),
        (b'{"jsonrpc":"1.0","id":5,"method":"tools/list"}', -32600, 5),
        (b'{"jsonrpc":"2.0","id":"p","method":"tools/list","params":[1]}', -32600, "p"),
        (b'{"jsonrpc":"2.0","id":6,"method":42}', -32600, 6),
        (b"42", -32600, None),
    ],
    ids=[
        "text",
        "truncated",
        "invalid-utf8",
        "bom",
        "batch",
        "id-null",
        "id-float",
        "id-bool",
        "jsonrpc-1.0",
        "params-array",
        "method-number",
        "scalar",
    ],
)
def test_malformed_input_is_answered_with_the_right_error_and_the_server_keeps_serving(
    shared_server: ServerProcess, line: bytes, code: int, error_id: Any
) -> None:
    server = shared_server
    server.send_raw(line + b"\n")
    error = server.read_message()
    assert "error" in error and error["error"]["code"] == code, error
    assert "id" in error and error["id"] == error_id
    request_id = f"after-{len(server.received)}"
    assert result_text(server.request(tool_call(request_id, "echo", {"text": "recovered"}))) == "recovered"


@pytest.mark.req("STDIO-MAX-LINE-SIZE", "STDIO-REFUSAL-KEEPS-ID")
def test_an_oversized_line_is_answered_and_the_next_request_is_served(spawn: Spawn) -> None:
    server = spawn(max_line_bytes="4096")
    server.note_sent(tool_call(1, "echo"))
    server.send_raw(encode_line(tool_call(1, "echo", {"text": "y" * 10_000})))
    error = server.read_message()
    assert error["id"] == 1 and error["error"]["code"] == -32600  # its id, found without a parse
    assert result_text(server.request(tool_call(2, "echo", {"text": "after"}))) == "after"


@pytest.mark.req("STDIO-MAX-LINE-SIZE", "BASE-ERROR-ID-NULL")
def test_an_oversized_line_longer_than_the_pipe_buffer_is_answered_and_the_next_request_is_served(
    spawn: Spawn,
) -> None:
    # A 1 MB line through a 64 KiB pipe reaches the server in many reads; at more than four
    # times the limit, the server does not look for its id.
    server = spawn(max_line_bytes="100000")
    after = tool_call(2, "echo", {"text": "after"})
    server.note_sent(after)
    server.send_raw(encode_line(tool_call(1, "echo", {"text": "z" * 1_000_000})) + encode_line(after))
    error = server.read_message()
    assert error["id"] is None and error["error"]["code"] == -32600
    assert result_text(server.response(2)) == "after"


# --- stdout hygiene ---------------------------------------------------------------------------------------


@pytest.mark.req("STDIO-STDOUT-ONLY-MESSAGES", "STDIO-STDERR-LOGGING")
def test_output_a_handler_writes_to_stdout_goes_to_stderr(spawn: Spawn) -> None:
    server = spawn()
    assert result_text(server.request(tool_call(1, "stray_print"))) == "printed"
    assert server.shutdown() == []  # every stdout line was a valid message (checked by the harness)
    stderr = server.stderr_text()
    for how in ("print()", "sys.stdout.write", "os.write(1)"):
        assert f"{STRAY_MARKER} via {how}" in stderr, stderr


@pytest.mark.req(
    "STDIO-STDOUT-ONLY-MESSAGES",
    "BASE-SCHEMA-CONFORMANCE",
    "STDIO-NO-EMBEDDED-NEWLINES",
    "BASE-JSONRPC-2",
    "STDIO-NO-SERVER-REQUESTS",
    "BASE-RESULT-MEMBER",
    "BASE-ERROR-CODE-AND-MESSAGE",
    "BASE-ERROR-CODE-INTEGER",
    "BASE-CODES-LEGACY-RANGE-UNUSED",
    "BASE-CODES-RESERVED-RANGE-DEFINED-ONLY",
    "BASE-NOTIFICATION-NO-ID",
    "BASE-NO-32042",
)
def test_every_line_written_is_one_json_object_valid_against_the_schema(spawn: Spawn) -> None:
    server = spawn()
    requests = [
        modern_request(1, "server/discover"),
        modern_request(2, "tools/list"),
        tool_call(3, "echo", {"text": "line one\nline two\r\n\u2028end"}),
        tool_call(4, "add", {"a": 1, "b": 2}),
        tool_call(5, "refuse"),
        tool_call(6, "crash"),
        tool_call(7, "echo", {"wrong": "arguments"}),
        modern_request(8, "resources/list"),
        modern_request(9, "resources/templates/list"),
        modern_request(10, "resources/read", {"uri": "memo://greeting"}),
        modern_request(11, "resources/read", {"uri": "memo://nothing-here"}),
        modern_request(12, "prompts/list"),
        modern_request(13, "prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
        modern_request(14, "prompts/get", {"name": "greet"}),
        modern_request(15, "completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "Al"}}),
        modern_request(16, "no/such/method"),
        {"jsonrpc": "2.0", "id": 17, "method": "tools/list"},
        modern_request(18, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}}),
        tool_call(19, "slow", {"steps": 2, "interval": 0.01}, progress_token=19),
    ]
    server.send_many(requests)
    raw_lines = []
    while len([m for m in server.received if is_response(m)]) < len(requests):
        line, _ = server.read_line_and_message()  # checked: one JSON object, the official schema
        raw_lines.append(line)
    assert result_text(server.received[[m.get("id") for m in server.received].index(3)]) == "line one\nline two\r\n\u2028end"
    assert all(line == line.strip() and b"\n" not in line for line in raw_lines)
    # What the schema check implies, spelled out for the reader:
    for message in server.received:
        if "result" in message:
            assert isinstance(message["result"], dict)
        elif "error" in message:
            code = message["error"]["code"]
            assert type(code) is int and isinstance(message["error"]["message"], str)
            assert not -32019 <= code <= -32000, f"{code} is in the range the spec leaves unallocated"
            assert not -32099 <= code <= -32020 or code in (-32021, -32022), f"{code} is not a defined code"
        else:
            assert "id" not in message and message["method"] == "notifications/progress"


@pytest.mark.req("TOOLS-EXECUTION-ERROR-IS-ERROR")
def test_a_tool_error_is_a_result_with_is_error(spawn: Spawn) -> None:
    server = spawn()
    result = server.request(tool_call(1, "refuse"))["result"]
    assert result["isError"] is True
    assert "always refuses" in result["content"][0]["text"]


@pytest.mark.req("TOOLS-ERRORS-IN-RESULT")
def test_an_unexpected_tool_exception_is_a_tool_error_result_that_hides_details(spawn: Spawn) -> None:
    server = spawn()
    result = server.request(tool_call(1, "crash"))["result"]
    assert result["isError"] is True
    assert "secret internal detail" not in json.dumps(result)
    assert "secret internal detail" in server.stderr_text()  # the details are logged for the operator
    assert result_text(server.request(tool_call(2, "echo", {"text": "alive"}))) == "alive"


# --- files instead of pipes, and a slow reader ------------------------------------------------------------


def file_requests() -> list[dict[str, Any]]:
    return [
        modern_request(1, "server/discover"),
        tool_call(2, "echo", {"text": "from a file"}),
        tool_call(3, "slow", {"steps": 3, "interval": 0.02}),
        modern_request(4, "resources/read", {"uri": "memo://greeting"}),
    ]


METHODS = {1: "server/discover", 2: "tools/call", 3: "tools/call", 4: "resources/read"}


def check_file_output(output: bytes) -> None:
    assert output.endswith(b"\n")
    messages = [json.loads(line) for line in output.split(b"\n")[:-1]]
    for message in messages:
        check_modern(message, METHODS[message["id"]])
    by_id = {m["id"]: m for m in messages}
    assert sorted(by_id) == [1, 2, 3, 4] and len(messages) == 4
    assert result_text(by_id[2]) == "from a file"
    assert result_text(by_id[3]) == "finished 3 steps"
    assert by_id[4]["result"]["contents"][0]["text"] == GREETING


@pytest.mark.req("STDIO-EXIT-ON-EOF", "STDIO-CUSTOM-STREAM-FRAMING")
def test_stdin_and_stdout_may_be_regular_files(tmp_path: Path) -> None:
    requests = b"".join(encode_line(r) for r in file_requests())
    code, output, stderr = run_with_files(requests, directory=tmp_path)
    assert code == 0, stderr
    check_file_output(output)
    assert "Traceback" not in stderr


@pytest.mark.req("STDIO-EXIT-ON-EOF", "STDIO-CUSTOM-STREAM-FRAMING")
def test_stdout_may_be_a_regular_file_while_stdin_is_a_pipe(tmp_path: Path) -> None:
    out_path = tmp_path / "out.jsonl"
    with open(out_path, "wb") as out, ServerProcess(stdout=out, schema=None) as server:
        server.send_many(file_requests())
        server.close_stdin()
        server.assert_exit(0)
        assert_clean_stderr(server)
    check_file_output(out_path.read_bytes())


def test_stdout_may_be_dev_null() -> None:
    with ServerProcess(stdout=subprocess.DEVNULL, schema=None) as server:
        server.send_many(file_requests())
        server.close_stdin()
        server.assert_exit(0)
        assert_clean_stderr(server)


@pytest.mark.req("STDIO-NEWLINE-DELIMITED", "STDIO-BACKPRESSURE")
def test_a_response_larger_than_the_pipe_buffer_arrives_whole_to_a_slow_reader(spawn: Spawn) -> None:
    size = 5 * 1024 * 1024
    server = spawn()
    server.read_chunk_bytes = 32 * 1024
    server.read_delay = 0.001
    server.send(modern_request(1, "resources/read", {"uri": f"memo://bytes/{size}"}))
    server.send(tool_call(2, "echo", {"text": "queued behind the big one"}))
    contents = server.response(1, timeout=30)["result"]["contents"]
    assert len(contents) == 1 and contents[0]["text"] == "x" * size
    assert result_text(server.response(2)) == "queued behind the big one"


@pytest.mark.req("BASE-REQUEST-ID-UNIQUE", "STDIO-BACKPRESSURE", "STDIO-RESPONSES-BY-ID")
def test_an_answered_id_may_be_reused_at_once_even_while_the_pipe_is_draining(spawn: Spawn) -> None:
    server = spawn()
    server.send(modern_request(1, "resources/read", {"uri": "memo://bytes/300000"}))
    server.send(modern_request(2, "resources/read", {"uri": "memo://bytes/3000001"}))  # more than the pipe holds
    assert len(server.response(1)["result"]["contents"][0]["text"]) == 300_000
    # Request 1 is answered; the second answer still fills the pipe and the transport's buffer, as
    # we are not reading it yet. The client may use id 1 again now.
    assert result_text(server.request(tool_call(1, "echo", {"text": "id 1 again"}))) == "id 1 again"
    assert len(server.response(2)["result"]["contents"][0]["text"]) == 3_000_001


@pytest.mark.req("STDIO-BACKPRESSURE", "STDIO-RESPONSES-BY-ID")
def test_requests_waiting_for_a_full_pipe_all_complete_once_it_drains(spawn: Spawn) -> None:
    server = spawn(shutdown_grace="30")
    server.send(modern_request(1, "resources/read", {"uri": "memo://bytes/3000000"}))  # more than the pipe holds
    server.send(tool_call(2, "echo", {"text": "also waits for the pipe"}))
    assert len(server.response(1)["result"]["contents"][0]["text"]) == 3_000_000
    server.response(2)
    # Nothing is left in flight: with a 30 s grace period, only stuck requests could delay the exit.
    started = time.monotonic()
    assert server.shutdown() == []
    assert time.monotonic() - started < 10, "requests that had answered were still waiting at shutdown"
