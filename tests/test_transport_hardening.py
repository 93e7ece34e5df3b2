"""Wire tests of the stdio transport against hostile and broken clients (issue 6).

Spec: basic/transports/stdio, basic/patterns/cancellation, basic/patterns/mrtr.
Each test starts ``python -m tests.servers.hardening_server`` (basic_server plus a few tools and
fault injections) and talks to it through its real stdin and stdout, often playing a client that
misbehaves: one that never reads stdout or stderr, closes stdout, floods, or sends more than the
server should hold. Memory is measured from outside, in ``/proc/<pid>/status``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

import pytest

from tests.schema_check import check_modern
from tests.servers.hardening_server import AFTER_CANCEL_MARKER
from tests.wire import (
    ServerProcess,
    Spawner,
    cancel,
    encode_line,
    is_progress,
    is_response,
    long_call,
    modern_request,
    result_text,
    run_with_files,
    tool_call,
)

MODULE = "tests.servers.hardening_server"
MiB = 1024 * 1024

Spawn = Spawner


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start hardening_server processes (``Spawner``); all are closed afterwards."""
    with Spawner(MODULE) as start:
        yield start


class UnreadStderr(ServerProcess):
    """A server whose stderr is a pipe that nobody reads until the test says so."""

    def start(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            self.command, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert self.proc.stdin is not None and self.proc.stderr is not None
        os.set_blocking(self.proc.stdin.fileno(), False)
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.stderr_read = b""
        return self

    def read_stderr(self) -> bytes:
        """Everything stderr holds right now (this makes room in the pipe)."""
        assert self.proc is not None and self.proc.stderr is not None
        while True:
            try:
                chunk = os.read(self.proc.stderr.fileno(), 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            self.stderr_read += chunk
        return self.stderr_read

    def stderr_text(self) -> str:
        return self.read_stderr().decode("utf-8", errors="replace")

    def kill(self) -> None:
        super().kill()
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()


def status_kib(pid: int, field: str) -> int:
    """A memory figure of a process, in KiB: ``VmRSS`` (now) or ``VmHWM`` (its peak so far)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def write_until_stalled(server: ServerProcess, chunks: Iterable[bytes], *, stall: float = 1.0, limit: float = 8.0) -> int:
    """Write ``chunks`` to stdin *without reading stdout* until the server stops taking input for
    ``stall`` seconds; returns the bytes it took. Fails if it took everything, or kept taking
    input (however slowly) for ``limit`` seconds: either way it never pushed back."""
    assert server.proc is not None and server.proc.stdin is not None
    fd = server.proc.stdin.fileno()
    taken = 0
    deadline = time.monotonic() + limit
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                wait = min(stall, deadline - time.monotonic())
                if not select.select([], [fd], [], max(wait, 0))[1]:
                    # The server stops reading only at the end of a pump, once what it read is
                    # parsed and handed on: memory can be measured now.
                    assert wait >= stall, f"the server was still taking input after {limit} s ({taken} bytes)"
                    return taken
                continue
            taken += written
            view = view[written:]
    raise AssertionError(f"the server took all {taken} bytes without pushing back")


def is_shutdown_error(message: dict[str, Any]) -> bool:
    return "error" in message and message["error"]["code"] == -32603 and "shutting down" in message["error"]["message"]


# --- shutdown and output --------------------------------------------------------------------------


@pytest.mark.req("STDIO-SHUTDOWN-BOUNDED")
@pytest.mark.parametrize("how", ["eof", "SIGTERM"])
def test_a_client_that_never_reads_stdout_cannot_hold_the_server_past_grace_plus_flush(spawn: Spawn, how: str) -> None:
    server = spawn(shutdown_grace="0.2", flush_timeout="1")
    server.request(modern_request(0, "server/discover"))  # running, signal handlers installed
    server.send(modern_request(1, "resources/read", {"uri": "memo://bytes/4000000"}))  # 60 times what the pipe holds
    server.wait_for_full_stdout()  # answered, and stuck behind a client that does not read
    started = time.monotonic()
    if how == "eof":
        server.close_stdin()
    else:
        server.signal(signal.SIGTERM)
    assert server.proc is not None
    assert server.proc.wait(timeout=15) == 0  # not server.wait(): that would read stdout
    elapsed = time.monotonic() - started
    # 0.2 s of grace and 1 s of flushing, plus a loaded machine's slack; the defaults would be 10 s.
    assert elapsed < 5, f"exit took {elapsed:.1f} s with a 0.2 s grace and a 1 s flush bound"
    assert "not taken by the client before the shutdown deadline" in server.stderr_text()


@pytest.mark.req("STDIO-SHUTDOWN-BOUNDED", "STDIO-EOF-DRAIN")
def test_a_second_signal_exits_at_once_even_when_stdout_is_not_read(spawn: Spawn) -> None:
    server = spawn(shutdown_grace="30", flush_timeout="30", extra_env={"MCP_REF_LOG_LEVEL": "INFO"})
    server.request(modern_request(0, "server/discover"))
    server.send(long_call(2, "p"))
    server.read_until(is_progress("p"))  # running
    server.send(modern_request(1, "resources/read", {"uri": "memo://bytes/4000000"}))
    server.wait_for_full_stdout()
    server.signal(signal.SIGTERM)
    server.wait_for_stderr("shutting down: reading no more input; what was read gets 30.0 s to finish")
    assert server.returncode is None  # the first signal only starts a 30 s grace period (and 30 s more to flush)
    started = time.monotonic()
    server.signal(signal.SIGTERM)
    assert server.proc is not None
    assert server.proc.wait(timeout=30) == 0
    assert time.monotonic() - started < 10, "the second signal did not end the shutdown at once (30 s of grace were left)"


@pytest.mark.req("STDIO-SHUTDOWN-ANSWERS-UNFINISHED", "STDIO-EOF-DRAIN", "STDIO-RESPONSES-BY-ID")
def test_every_request_read_before_eof_gets_exactly_one_answer_even_past_the_grace_period(spawn: Spawn) -> None:
    server = spawn(shutdown_grace="0.5")
    # 40 synchronous 0.3 s jobs on 4 worker threads: 3 s of work for a 0.5 s grace period.
    server.send_many(tool_call(i, "spin", {"seconds": 0.3}) for i in range(40))
    server.close_stdin()
    messages = server.read_until_eof(timeout=15)  # the harness fails on any id answered twice
    server.assert_exit(0)
    answers = {m["id"]: m for m in messages if is_response(m)}
    assert sorted(answers) == list(range(40))
    finished = [i for i, m in answers.items() if "result" in m]
    cut_short = [i for i, m in answers.items() if is_shutdown_error(m)]
    assert sorted(finished + cut_short) == list(range(40)), answers
    assert cut_short, "3 s of work finished within a 0.5 s grace period?"


@pytest.mark.req("STDIO-SHUTDOWN-ANSWERS-UNFINISHED", "STDIO-IN-FLIGHT-BYTES", "CANCEL-NO-RESPONSE")
def test_requests_held_back_unstarted_at_the_end_of_the_grace_period_are_answered_unless_cancelled(spawn: Spawn) -> None:
    # A one-byte budget: one request runs at a time, the others wait unparsed in the transport.
    server = spawn(shutdown_grace="0.3", max_in_flight_bytes="1")
    server.send_many([long_call(1), long_call(2), long_call(3), cancel(3), long_call(4)])
    server.close_stdin()
    messages = server.read_until_eof(timeout=10)
    server.assert_exit(0)
    answers = {m["id"]: m for m in messages if is_response(m)}
    assert sorted(answers) == [1, 2, 4], "request 3 was cancelled by the client: it gets no answer"
    assert all(is_shutdown_error(m) for m in answers.values()), answers
    assert "not started" in answers[2]["error"]["message"]


@pytest.mark.req("STDIO-CUSTOM-STREAM-FRAMING", "STDIO-EXIT-ON-EOF")
def test_stdin_and_stdout_may_be_one_socket() -> None:
    ours, theirs = socket.socketpair()
    with ours, ServerProcess(module=MODULE, stdin=theirs, stdout=theirs, schema=None) as server:
        theirs.close()  # the server holds its own copies now
        requests = [modern_request(1, "server/discover"), tool_call(2, "echo", {"text": "over one socket"})]
        ours.sendall(b"".join(encode_line(r) for r in requests))
        ours.settimeout(10)
        received = b""
        while received.count(b"\n") < 2:
            chunk = ours.recv(65536)
            assert chunk, f"socket closed early; stderr:\n{server.stderr_text()}"
            received += chunk
        ours.shutdown(socket.SHUT_WR)  # EOF for the server; it may still answer
        while chunk := ours.recv(65536):
            received += chunk
        server.assert_exit(0)
        assert "Traceback" not in server.stderr_text()
    messages = [json.loads(line) for line in received.splitlines()]
    by_id = {m["id"]: m for m in messages}
    assert sorted(by_id) == [1, 2] and len(messages) == 2
    check_modern(by_id[1], "server/discover")
    check_modern(by_id[2], "tools/call")
    assert result_text(by_id[2]) == "over one socket"


@pytest.mark.req("STDIO-STDERR-NEVER-BLOCKS")
def test_a_host_that_never_reads_stderr_cannot_freeze_the_server(spawn: Spawn) -> None:
    server = spawn(process=UnreadStderr)
    # Each client response is logged with its id: 30 ids of 20 kB fill the 64 KiB pipe many times.
    for number in range(30):
        server.send({"jsonrpc": "2.0", "id": f"{number}-" + "i" * 20_000, "result": {}})
    server.send(tool_call(1, "chatty", {"lines": 200, "width": 1000}))  # 200 kB of print() too
    assert result_text(server.response(1, timeout=5)) == "printed"
    assert result_text(server.request(tool_call(2, "echo", {"text": "still serving"}), timeout=5)) == "still serving"
    server.close_stdin()
    assert server.proc is not None
    deadline = time.monotonic() + 10
    while server.proc.poll() is None and time.monotonic() < deadline:
        server.read_stderr()  # the host reads stderr at last: what was dropped is reported at exit
        time.sleep(0.01)
    server.assert_exit(0)
    assert "log message(s) dropped: stderr was full" in server.stderr_text()


@pytest.mark.req("STDIO-STDERR-BOUNDED", "BASE-PARSE-ERROR-32700")
def test_four_mib_of_malformed_lines_write_only_a_few_kilobytes_to_stderr(spawn: Spawn) -> None:
    server = spawn()
    server.schema = None  # 10 000 parse errors: checked by count, not one by one against the schema
    lines = [f"not json {number:05d} ".encode() + b"x" * 400 for number in range(10_000)]
    server.send_raw(b"\n".join(lines) + b"\n")
    errors = [server.read_message() for _ in lines]
    assert {e["error"]["code"] for e in errors} == {-32700} and len(errors) == 10_000
    server.shutdown()
    stderr = server.stderr_text()
    assert len(stderr) < 16_000, f"{len(stderr)} characters of stderr for 4 MiB of malformed input"
    assert "were suppressed" in stderr  # the repeats are counted, not silently lost


@pytest.mark.req("STDIO-STDOUT-CLOSED", "STDIO-CANCEL-STOP-WORK")
def test_a_client_that_closes_stdout_gets_its_running_work_cancelled_and_the_server_exits(spawn: Spawn) -> None:
    server = spawn(shutdown_grace="30")
    server.send(long_call(1, "p"))
    server.read_until(is_progress("p"))  # the 100 s job runs
    assert server.proc is not None and server.proc.stdout is not None
    server.proc.stdout.close()  # the client stops listening, but keeps stdin open
    started = time.monotonic()
    assert server.proc.wait(timeout=30) == 0
    assert time.monotonic() - started < 10, "the server went on working for a client that cannot hear it (30 s of grace)"
    stderr = server.stderr_text()
    assert "slow 1: cancelled during step" in stderr
    assert stderr.count("stdout was closed by the client (EPIPE") == 1, stderr


@pytest.mark.req("STDIO-STDOUT-CLOSED")
def test_closing_stdout_on_answers_already_made_cuts_no_work_short_and_is_no_warning(spawn: Spawn) -> None:
    # The answer is made and waits in the server's queue behind a full pipe when the client goes
    # away (a shell's `| head -c 1000`): nothing was cut short, so the default level logs nothing.
    server = spawn()
    server.send(modern_request(1, "resources/read", {"uri": "memo://bytes/3000000"}))
    server.wait_for_full_stdout()
    assert server.proc is not None and server.proc.stdout is not None
    server.proc.stdout.close()
    assert server.proc.wait(timeout=10) == 0
    assert "stdout was closed" not in server.stderr_text()  # INFO: below the default WARNING


@pytest.mark.req("STDIO-SIGNALS", "STDIO-EOF-DRAIN")
def test_sighup_ends_the_session_as_gracefully_as_sigterm(spawn: Spawn) -> None:
    server = spawn(shutdown_grace="10")
    server.send(tool_call(1, "slow", {"steps": 3, "interval": 0.1}, progress_token="p"))
    server.read_until(is_progress("p"))
    server.signal(signal.SIGHUP)
    answers = [m for m in server.read_until_eof() if is_response(m)]
    assert [result_text(m) for m in answers] == ["finished 3 steps"]
    server.assert_exit(0)


# Two handlers that ignore their cancellation: a coroutine that swallows it, and a plain function
# that never looks at ctx.cancelled. The atexit marker shows the interpreter ended normally; only
# the swallowed cancellation ends it with os._exit (see run_stdio), which skips atexit.
STUBBORN_SERVER = """
import asyncio, atexit, sys, time
from mcp_ref import Server
atexit.register(lambda: sys.stderr.write("ATEXIT-RAN\\n"))
server = Server("stubborn", "1.0")
@server.tool()
async def swallows(ctx, args):
    while True:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            pass
@server.tool()
def spins(ctx, args):
    time.sleep(60)
sys.exit(server.run(shutdown_grace_seconds=0.1))
"""


@pytest.mark.req("STDIO-SHUTDOWN-BOUNDED", "STDIO-EXIT-ON-EOF")
@pytest.mark.parametrize("tool", ["swallows", "spins"])
def test_a_handler_that_ignores_its_cancellation_does_not_hold_the_exit(
    spawn: Spawn, tool: str
) -> None:
    server = spawn([sys.executable, "-c", STUBBORN_SERVER])
    server.send(tool_call(1, tool))
    server.request(modern_request(2, "server/discover"))  # read after the call: the call has started
    started = time.monotonic()
    server.close_stdin()
    assert [m["error"]["code"] for m in server.read_until_eof(timeout=20)] == [-32603]  # "shutting down"
    server.assert_exit(0, timeout=20)
    assert time.monotonic() - started < 10  # the handler would run 60 s
    stderr = server.stderr_text()
    kind = "handler task(s) that ignored their cancellation" if tool == "swallows" else "synchronous handler(s) still running"
    assert f"exiting with 1 {kind}" in stderr, stderr
    assert ("ATEXIT-RAN" in stderr) is (tool == "spins"), stderr
    assert "Traceback" not in stderr and "destroyed" not in stderr, stderr


@pytest.mark.req("STDIO-STDOUT-ONLY-MESSAGES")
def test_prints_from_a_synchronous_handler_after_shutdown_never_reach_stdout(spawn: Spawn) -> None:
    server = spawn(shutdown_grace="0.1")
    server.send(tool_call(1, "print_after_cancel", {"seconds": 3}))
    server.request(tool_call(2, "echo", {"text": "the printer runs"}))
    server.close_stdin()
    # The printer ignores its cancellation and prints for another ~1 s until the process exits;
    # the harness fails on any stdout line that is not a JSON-RPC message.
    messages = server.read_until_eof(timeout=10)
    server.assert_exit(0)
    assert [(m["id"], is_shutdown_error(m)) for m in messages] == [(1, True)]
    stderr = server.stderr_text()
    assert f"{AFTER_CANCEL_MARKER} via print()" in stderr and f"{AFTER_CANCEL_MARKER} via os.write(1)" in stderr


@pytest.mark.req("STDIO-SHUTDOWN-ANSWERS-UNFINISHED", "STDIO-STDERR-LOGGING")
def test_the_shutdown_warning_counts_only_requests_still_running(spawn: Spawn) -> None:
    server = spawn(shutdown_grace="0.3")
    # In one write, so both start before answer 1 fills the pipe (then no new request would start).
    server.send_many([modern_request(1, "resources/read", {"uri": "memo://bytes/3000000"}), long_call(2)])
    server.wait_for_full_stdout()  # answer 1 is made; its line waits for us, while 2 runs on
    server.close_stdin()
    server.wait_for_stderr("shutting down: 1 request(s) still running")  # the grace period ended, answer 1 still draining
    messages = server.read_until_eof(timeout=10)
    server.assert_exit(0)
    assert [m["id"] for m in messages if "result" in m] == [1]
    assert [m["id"] for m in messages if is_shutdown_error(m)] == [2]
    assert "shutting down: 1 request(s) still running" in server.stderr_text()


# --- bounded memory under floods ------------------------------------------------------------------


@pytest.mark.req("STDIO-BACKPRESSURE")
@pytest.mark.parametrize("flood", ["malformed", "duplicate-id"])
def test_a_flood_answered_with_errors_stops_being_read_while_stdout_is_not_read(spawn: Spawn, flood: str) -> None:
    server = spawn()
    if flood == "malformed":
        line = b"{}\n"  # -32600, id null
    else:
        server.send(long_call(1, "p"))
        server.read_until(is_progress("p"))
        line = encode_line(modern_request(1, "tools/list"))  # -32600: id 1 is in flight
    # 2 s without taking input: a server slowed down by its own logging is not mistaken for one that pushes back.
    taken = write_until_stalled(server, [line * (MiB // len(line))] * 13, stall=2.0, limit=10.0)  # 13 MiB
    assert server.proc is not None and server.returncode is None
    peak = status_kib(server.pid, "VmHWM")
    assert peak < 200 * 1024, f"peak RSS {peak // 1024} MiB after {taken // MiB} MiB of flood"


@pytest.mark.req("STDIO-IN-FLIGHT-BYTES", "STDIO-BACKPRESSURE")
def test_large_requests_in_flight_are_bounded_by_their_size_not_only_by_their_count(spawn: Spawn) -> None:
    server = spawn()
    pad = "x" * (8 * MiB)
    # 40 requests of 8 MiB that would each run for 100 s: far fewer than 1024, far more than 64 MiB.
    lines = (encode_line(tool_call(i, "slow", {"steps": 2000, "interval": 0.05, "pad": pad})) for i in range(40))
    taken = write_until_stalled(server, lines)
    assert taken < 12 * 8 * MiB, f"the server took {taken // MiB} MiB of requests into flight"
    peak = status_kib(server.pid, "VmHWM")
    assert peak < 250 * 1024, f"peak RSS {peak // 1024} MiB"


@pytest.mark.req("STDIO-IN-FLIGHT-BYTES")
def test_a_line_of_nested_empty_arrays_is_costed_by_its_structure_not_its_length(spawn: Spawn) -> None:
    server = spawn(max_line_bytes=str(4 * MiB))
    template = encode_line(tool_call(0, "slow", {"steps": 2000, "interval": 0.05, "pad": "PAD"}))
    arrays = b"[" + b"[]," * (MiB // 3 - 1000) + b"[]]"  # ~27 MiB once parsed, estimated ~43
    lines = (template.replace(b'"id":0', b'"id":%d' % i).replace(b'"PAD"', arrays) for i in range(24))
    taken = write_until_stalled(server, lines)
    assert taken < 8 * MiB, f"the server took {taken // MiB} MiB of nested arrays into flight"  # 24 offered; 4 may wait unparsed
    peak = status_kib(server.pid, "VmHWM")
    assert peak < 300 * 1024, f"peak RSS {peak // 1024} MiB"


@pytest.mark.req("STDIO-IN-FLIGHT-BYTES", "BASE-INVALID-REQUEST-32600", "STDIO-REFUSAL-KEEPS-ID")
def test_one_line_that_would_outgrow_the_in_flight_budget_once_parsed_is_refused_unparsed(spawn: Spawn) -> None:
    server = spawn()
    arrays = b"[" + b"[]," * (14 * MiB // 3) + b"[]]"  # 14 MiB, under the line limit; ~380 MiB once parsed
    line = encode_line(tool_call(1, "echo", {"text": "PAD"})).replace(b'"PAD"', arrays)
    server.note_sent(tool_call(1, "echo"))
    server.send_raw(line)
    error = server.read_message()
    assert error["id"] == 1 and error["error"]["code"] == -32600  # its id, found without a parse
    assert "once parsed" in error["error"]["message"]
    assert result_text(server.request(tool_call(2, "echo", {"text": "still serving"}))) == "still serving"
    peak = status_kib(server.pid, "VmHWM")
    assert peak < 150 * 1024, f"peak RSS {peak // 1024} MiB: the line was parsed"


@pytest.mark.req("STDIO-IN-FLIGHT-BYTES", "SUB-CANCEL-ENDS-STREAM")
def test_open_listen_streams_count_toward_the_in_flight_byte_budget(spawn: Spawn) -> None:
    server = spawn(max_in_flight_bytes=str(1 * MiB))
    for number in range(4):  # 4 x 300 kB of listen params, held for as long as the streams are open
        server.send(modern_request(f"L{number}", "subscriptions/listen", {"notifications": {"toolsListChanged": True}, "pad": "p" * 300_000}))
        server.read_until(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
    server.send(tool_call(9, "echo", {"text": "waits for room"}))
    server.expect_silence(0.5)  # not started: the streams hold the budget
    server.send(cancel("L0"))
    assert result_text(server.response(9)) == "waits for room"


@pytest.mark.req("MRTR-STATE-FITS-LINE")
def test_a_request_state_too_large_to_come_back_is_refused_when_sealed(spawn: Spawn) -> None:
    server = spawn(max_line_bytes="100000")
    assert server.request(tool_call(1, "big_state", {"size": 1000}))["result"]["resultType"] == "input_required"
    error = server.request(tool_call(2, "big_state", {"size": 200_000}))["error"]
    assert error["code"] == -32603 and "requestState is too large" in error["message"]
    assert "requestState is too large to come back" in server.stderr_text()  # for the handler's author


# --- the event loop must not stall or lose requests -------------------------------------------------


def faulty_batch(marker: str) -> tuple[bytes, list[dict[str, Any]]]:
    """Three requests in one write; the middle one makes the decoder raise."""
    before, after = tool_call(1, "echo", {"text": "before"}), tool_call(3, "echo", {"text": "after"})
    faulty = tool_call(2, "echo", {"text": marker})
    return b"".join(encode_line(m) for m in (before, faulty, after)), [before, after]


@pytest.mark.req("STDIO-READER-FAULTS", "STDIO-RESPONSES-BY-ID", "STDIO-REFUSAL-KEEPS-ID")
def test_a_memory_error_inside_the_reader_neither_repeats_nor_loses_the_requests_around_it(spawn: Spawn) -> None:
    server = spawn()
    data, tracked = faulty_batch("RAISE-MEMORY-ERROR")
    for message in [*tracked, tool_call(2, "echo")]:
        server.note_sent(message)
    server.send_raw(data)
    assert result_text(server.response(1)) == "before"
    assert result_text(server.response(3)) == "after"
    later = server.shutdown()  # the harness fails on an id answered twice
    errors = [m for m in server.received if "error" in m]
    assert [(e["id"], e["error"]["code"]) for e in errors] == [(2, -32603)] and later == []  # its id, found without a parse


@pytest.mark.req("STDIO-READER-FAULTS", "STDIO-EXIT-ON-EOF")
def test_with_a_regular_file_as_stdin_a_reader_fault_is_logged_and_reading_goes_on(tmp_path: Path) -> None:
    data, _ = faulty_batch("RAISE-RUNTIME-ERROR")
    code, output, stderr = run_with_files(data, module=MODULE, directory=tmp_path)
    assert code == 0, stderr
    messages = [json.loads(line) for line in output.splitlines()]
    assert sorted(json.dumps(m["id"]) for m in messages) == ["1", "3", "null"], messages
    assert "internal error while reading a message" in stderr and "RuntimeError: injected" in stderr


@pytest.mark.req("STDIO-CANCEL-AHEAD-OF-BACKLOG", "STDIO-CANCEL-STOP-WORK", "STDIO-BACKPRESSURE")
def test_a_cancellation_is_honoured_at_once_with_more_than_1024_requests_in_flight(spawn: Spawn) -> None:
    server = spawn(shutdown_grace="0.2")
    # 100 s each: the backlog will not drain. The transport starts 1024, so the cancellation,
    # sent after all 1100, is read among held input whenever it arrives: it can only be honoured
    # by being taken ahead (in its turn, it would wait for calls of 100 s to end).
    server.send_many(long_call(i) for i in range(1100))
    server.send(cancel(5, "the user gave up"))
    server.wait_for_stderr("slow 5: cancelled during step", timeout=10)


@pytest.mark.req("STDIO-CANCEL-NO-FURTHER-MESSAGES", "CANCEL-NO-RESPONSE")
def test_a_progress_notification_queued_by_a_worker_thread_just_before_the_cancellation_is_not_sent(spawn: Spawn) -> None:
    server = spawn()
    server.send(tool_call(1, "late_progress", {"delay": 0.5}, progress_token="lp"))
    server.read_until(is_progress("lp"))  # progress 1
    server.wait_for_stderr("late_progress 1: progress 2 decided")  # and on its way to the loop (0.5 s)
    server.send(cancel(1))
    server.expect_silence(1.0)  # neither progress 2 nor a response
    assert server.shutdown() == []


# --- wire edges ---------------------------------------------------------------------------------------


@pytest.mark.req("STDIO-MAX-LINE-SIZE", "STDIO-LENIENT-FRAMING")
def test_the_line_cap_counts_the_message_not_the_cr_of_a_crlf_ending(spawn: Spawn) -> None:
    limit = 300
    server = spawn(max_line_bytes=str(limit))
    bare = encode_line(tool_call(1, "echo", {"text": ""}))[:-1]
    at_limit = bare.replace(b'"text":""', b'"text":"' + b"t" * (limit - len(bare)) + b'"')
    assert len(at_limit) == limit
    server.note_sent(tool_call(1, "echo", {"text": "t"}))
    server.send_raw(at_limit + b"\r\n")
    assert result_text(server.response(1)) == "t" * (limit - len(bare))
    server.note_sent(tool_call(12, "echo"))
    server.send_raw(at_limit.replace(b'"id":1', b'"id":12') + b"\r\n")  # one byte over
    refusal = server.read_message()
    assert refusal["id"] == 12 and refusal["error"]["code"] == -32600


@pytest.mark.req("STDIO-LINE-SEPARATORS-ESCAPED", "STDIO-NO-EMBEDDED-NEWLINES")
def test_unicode_line_and_paragraph_separators_are_escaped_in_output(spawn: Spawn) -> None:
    server = spawn()
    text = "a\u2028b\u2029c\x85d é"
    server.send(tool_call(1, "echo", {"text": text}))
    line, message = server.read_line_and_message()
    assert result_text(message) == text
    for raw, escaped in (("\u2028", b"\\u2028"), ("\u2029", b"\\u2029"), ("\x85", b"\\u0085")):
        assert raw.encode() not in line and escaped in line
    assert "é".encode() in line  # other text stays UTF-8, not escaped


@pytest.mark.req("STDIO-ENV-VALIDATION")
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e99"])
def test_a_shutdown_grace_that_is_not_a_finite_number_of_seconds_is_logged_and_ignored(spawn: Spawn, value: str) -> None:
    server = spawn(extra_env={"MCP_REF_SHUTDOWN_GRACE_SECONDS": value})
    server.send(tool_call(1, "slow", {"steps": 3, "interval": 0.1}, progress_token="p"))
    server.read_until(is_progress("p"))
    server.close_stdin()
    # The default grace (5 s) applies: the request finishes.
    assert [result_text(m) for m in server.read_until_eof() if is_response(m)] == ["finished 3 steps"]
    server.assert_exit(0)
    assert f"ignoring MCP_REF_SHUTDOWN_GRACE_SECONDS={value!r}" in server.stderr_text()


def test_the_threaded_stderr_sink_never_blocks_and_counts_what_it_drops() -> None:
    # Where select.poll is missing (Windows) a writer thread does the blocking writes.
    from mcp_ref.layers import stderr as stderr_module

    read_end, write_end = os.pipe()
    try:
        sink = stderr_module.StderrSink(write_end, threaded=True)
        started = time.monotonic()
        for index in range(100_000):  # far more than the pipe plus the backlog hold, nobody reading
            sink.write(b"line %05d\n" % index)
        assert time.monotonic() - started < 5
        received = bytearray()
        os.set_blocking(read_end, False)
        deadline = time.monotonic() + 5
        while not sink.flush(0.05) and time.monotonic() < deadline:
            with contextlib.suppress(BlockingIOError):
                received += os.read(read_end, 1 << 20)
        with contextlib.suppress(BlockingIOError):
            received += os.read(read_end, 1 << 20)
        lines = bytes(received).splitlines()
        assert lines[0] == b"line 00000" and all(line.startswith(b"line ") or b"dropped" in line for line in lines)
        assert len(lines) < 100_000 and b"log message(s) dropped: stderr was full" in received
        sink.write(b"after\n")
        assert sink.flush(2) and os.read(read_end, 1 << 20) == b"after\n"
    finally:
        os.close(read_end)
        os.close(write_end)


# --- a stdin that is always readable (a file, a device) -------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.req("STDIO-SHUTDOWN-BOUNDED")
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="/dev/zero, and the server's CPU time from /proc (Linux)")
def test_a_signal_stops_a_server_whose_stdin_never_ends() -> None:
    # /dev/zero is always readable and never ends: the read loop must still give the event loop
    # its turn, or the SIGTERM handler never runs (the server ran until SIGKILL).
    with open("/dev/zero", "rb") as zeros:
        with ServerProcess(module=MODULE, stdin=zeros, schema=None) as server:
            deadline = time.monotonic() + 20
            while cpu_seconds(server.pid) < 0.3:  # it is reading
                assert time.monotonic() < deadline and server.returncode is None, "the server did not start reading"
                time.sleep(0.02)
            server.signal(signal.SIGTERM)
            assert server.wait(20) == 0


@pytest.mark.req("STDIO-EOF-DRAIN")
@pytest.mark.skipif(not Path("/proc/self/fdinfo").exists(), reason="reads the server's stdin offset from /proc (Linux)")
def test_a_request_at_the_start_of_a_long_stdin_file_is_answered_before_the_file_is_read(tmp_path: Path) -> None:
    # The request's task must run while the rest of the file (40 MB of blank lines) is read,
    # not after it: each chunk is read in a turn of the loop of its own.
    requests = tmp_path / "requests.jsonl"
    with open(requests, "wb") as out:
        out.write(encode_line(modern_request(1, "server/discover")))
        out.write(b"\n" * (40 * MiB))
    size = requests.stat().st_size
    with open(requests, "rb") as stdin, ServerProcess(module=MODULE, stdin=stdin, schema=None) as server:
        answer = server.read_message(timeout=30)
        assert answer["id"] == 1 and "result" in answer
        position = int(Path(f"/proc/{server.pid}/fdinfo/0").read_text().split()[1])
        assert position < size, "the answer came only once the whole file was read"
        server.signal(signal.SIGTERM)
        assert server.wait(20) == 0
