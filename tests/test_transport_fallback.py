"""The stdio transport's thread fallback (issue 11): what Windows' Proactor loop would run.

Spec: basic/transports/stdio.
Most tests force the fallback with ``MCP_REF_STDIO=threads`` on a real server process; one runs
the server on an event loop that, like the Proactor loop, can neither wait on descriptors nor
install signal handlers, so the fallback is chosen by capability and signals go through
``signal.signal``. The unit tests of the two threads need no server. The whole wire suite runs
through the fallback too, with the variable set for the pytest run::

    MCP_REF_STDIO=threads .venv/bin/python -m pytest tests/test_stdio_transport.py tests/test_transport_hardening.py tests/test_transport_fallback.py
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from mcp_ref.layers._stdio_threads import ReaderThread, WriterThread
from mcp_ref.core.stdio import STDIO_MODES, choose_stdio_mode, options_from_environment

MiB = 1024 * 1024
THREADS = {"MCP_REF_STDIO": "threads"}
MODULE = "tests.servers.hardening_server"
posix_wire = pytest.mark.skipif(sys.platform == "win32", reason="the wire harness polls pipes (POSIX only)")

# A server on a loop shaped like Windows' Proactor loop: no add_reader/add_writer, no
# add_signal_handler. (The loop's own self-pipe uses the private _add_reader, so it still runs.)
NO_FD_LOOP_SERVER = """
import asyncio, sys
class NoDescriptorLoop(asyncio.SelectorEventLoop):
    def add_reader(self, *args):
        raise NotImplementedError
    remove_reader = add_writer = remove_writer = add_signal_handler = remove_signal_handler = add_reader
class Policy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self):
        return NoDescriptorLoop()
asyncio.set_event_loop_policy(Policy())
from tests.servers.hardening_server import main
sys.exit(main())
"""


# --- choosing the fallback ------------------------------------------------------------------------


def test_the_environment_switch_selects_a_mode_and_a_bad_value_is_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    assert STDIO_MODES == ("auto", "poll", "threads")
    assert options_from_environment({"MCP_REF_STDIO": "threads"}) == {"stdio_mode": "threads"}
    assert options_from_environment({"MCP_REF_STDIO": " Poll "}) == {"stdio_mode": "poll"}
    with caplog.at_level(logging.ERROR, logger="mcp_ref"):
        assert options_from_environment({"MCP_REF_STDIO": "select"}) == {}
    assert "ignoring MCP_REF_STDIO='select'" in caplog.text


def test_the_mode_is_chosen_by_what_the_loop_can_do(caplog: pytest.LogCaptureFixture) -> None:
    class NoDescriptorLoop(asyncio.SelectorEventLoop):
        def remove_reader(self, fd: Any) -> bool:
            raise NotImplementedError

    plain, limited = asyncio.SelectorEventLoop(), NoDescriptorLoop()
    try:
        with caplog.at_level(logging.DEBUG, logger="mcp_ref"):
            if sys.platform != "win32":
                assert choose_stdio_mode(plain, 0, "auto") == "poll"
            assert choose_stdio_mode(plain, 0, "threads") == "threads"
            assert choose_stdio_mode(limited, 0, "auto") == "threads"
            assert choose_stdio_mode(limited, 0, "poll") == "threads"  # impossible: a warning, then threads
    finally:
        plain.close()
        limited.close()
    assert ("Windows has no non-blocking pipes" if sys.platform == "win32" else "cannot wait on file descriptors") in caplog.text
    assert "MCP_REF_STDIO=poll is impossible here" in caplog.text


# --- the two threads, without a server ----------------------------------------------------------------


def _run_loop_until(loop: asyncio.AbstractEventLoop, done: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        loop.run_until_complete(asyncio.sleep(0.01))


def test_the_reader_thread_reads_one_chunk_per_request_and_nothing_while_not_asked() -> None:
    loop = asyncio.new_event_loop()
    read_fd, write_fd = os.pipe()
    received: list[Any] = []
    reader = ReaderThread(read_fd, loop, received.append, chunk=4)
    try:
        os.write(write_fd, b"aaaabbbbcccc")
        reader.start()
        loop.run_until_complete(asyncio.sleep(0.2))
        assert received == []  # not asked: the pipe keeps the bytes (backpressure reaches the client)
        reader.request()
        _run_loop_until(loop, lambda: len(received) == 1)
        loop.run_until_complete(asyncio.sleep(0.2))
        assert received == [b"aaaa"]  # one chunk per request, never read ahead
        reader.request()
        _run_loop_until(loop, lambda: len(received) == 2)
        os.close(write_fd)
        write_fd = -1
        reader.request()
        _run_loop_until(loop, lambda: len(received) == 3)
        reader.request()
        _run_loop_until(loop, lambda: len(received) == 4)
        assert received == [b"aaaa", b"bbbb", b"cccc", b""]  # EOF is delivered as b""
        reader._thread.join(5)
        assert not reader._thread.is_alive()
        with pytest.raises(OSError):
            os.fstat(read_fd)  # the thread owned its descriptor and closed it
    finally:
        reader.stop()
        if write_fd >= 0:
            os.close(write_fd)
        loop.close()


def test_a_stopped_idle_reader_thread_ends_and_closes_its_descriptor() -> None:
    loop = asyncio.new_event_loop()
    read_fd, write_fd = os.pipe()
    reader = ReaderThread(read_fd, loop, lambda data: None, chunk=4)
    try:
        reader.start()
        reader.stop()
        reader._thread.join(5)
        assert not reader._thread.is_alive()
        with pytest.raises(OSError):
            os.fstat(read_fd)
    finally:
        os.close(write_fd)
        loop.close()


def test_the_writer_thread_reports_every_byte_then_the_batch_and_a_closed_pipe_as_an_error() -> None:
    loop = asyncio.new_event_loop()
    read_fd, write_fd = os.pipe()
    taken: list[int] = []
    done: list[bool] = []
    errors: list[OSError] = []
    writer = WriterThread(write_fd, loop, on_taken=taken.append, on_batch_done=lambda: done.append(True), on_error=errors.append, chunk=1000)
    collected = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 65536):
            collected.extend(chunk)

    collector = threading.Thread(target=drain, daemon=True)
    try:
        writer.start()
        collector.start()
        lines = [b"x" * 10 + b"\n", b"y" * 2500 + b"\n", memoryview(b"z" * 5 + b"\n")]
        writer.submit(lines)
        _run_loop_until(loop, lambda: bool(done))
        assert sum(taken) == sum(map(len, lines)) and max(taken) <= 1000
        writer.busy = False  # the loop side does this when the batch is done
        writer.stop()
        collector.join(5)  # the thread closed the write end: EOF for the reader
        assert bytes(collected) == b"".join(bytes(line) for line in lines)
        assert errors == []
    finally:
        writer.stop()
        loop.close()

    loop = asyncio.new_event_loop()
    read_fd, write_fd = os.pipe()
    os.close(read_fd)  # the client is gone
    errors.clear()
    writer = WriterThread(write_fd, loop, on_taken=taken.append, on_batch_done=lambda: None, on_error=errors.append)
    try:
        writer.start()
        writer.submit([b"lost\n"])
        _run_loop_until(loop, lambda: bool(errors))
        assert errors[0].errno in (errno.EPIPE, errno.EINVAL)  # Windows reports a closed pipe as EINVAL
    finally:
        writer.stop()
        loop.close()


@pytest.mark.parametrize("kind", ["poll", "threads", "file"])
def test_a_line_given_in_parts_is_written_whole_and_in_order(kind: str, tmp_path: Path) -> None:
    # wire.encode_message_parts: a large answer leaves as [JSON before, the big string, JSON after],
    # never joined into one more copy. Whatever the output (polled pipe, writer thread, regular
    # file), the parts go out in order, as one line, before what was queued after them.
    if kind == "poll" and sys.platform == "win32":
        pytest.skip("Windows has no non-blocking pipes")
    from mcp_ref.core.stdout import _Output
    from mcp_ref.core.streams import FileWriter, PolledWriter, SendStream, ThreadWriter

    big = b"b" * 300_000  # several pipe buffers: written over several rounds
    expected = b'{"a":"' + big + b'"}\n' + b'{"n":1}\n'
    loop = asyncio.new_event_loop()
    collected = bytearray()
    if kind == "file":
        path = tmp_path / "out.jsonl"
        write_fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    else:
        read_fd, write_fd = os.pipe()

        def drain() -> None:
            while chunk := os.read(read_fd, 65536):
                collected.extend(chunk)

        collector = threading.Thread(target=drain, daemon=True)
        collector.start()
    lost: list[BaseException] = []
    stream: SendStream = {"poll": PolledWriter, "threads": ThreadWriter, "file": FileWriter}[kind](write_fd)
    output = _Output(stream, on_lost=lost.append, on_room=lambda: None)

    async def write() -> None:
        output.open(loop)
        output.write_parts([b'{"a":"', big, b'"}\n'])
        output.write(b'{"n":1}\n')
        output.set_deadline(loop.time() + 10)
        await output.close()

    try:
        loop.run_until_complete(write())
    finally:
        loop.close()
        os.close(write_fd)
    if kind == "file":
        collected.extend(path.read_bytes())
    else:
        collector.join(5)
        os.close(read_fd)
    assert bytes(collected) == expected and lost == []


# --- the fallback serving a real client ---------------------------------------------------------------

if sys.platform != "win32":
    from tests.test_transport_hardening import status_kib, write_until_stalled
    from tests.wire import (
        Spawner,
        cancel,
        encode_line,
        is_progress,
        is_response,
        long_call,
        modern_request,
        result_text,
        tool_call,
    )


@pytest.fixture
def spawn() -> Iterator[Callable[..., Any]]:
    """hardening_server processes with the thread fallback forced (``Spawner``; ``BASIC_SERVER_*``
    options as keywords)."""
    with Spawner(MODULE, env={**THREADS, "MCP_REF_LOG_LEVEL": "DEBUG"}) as start:
        yield start


@posix_wire
@pytest.mark.req("STDIO-SIGNALS", "STDIO-EOF-DRAIN")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_on_a_loop_without_descriptor_polling_or_signal_handlers_the_fallback_is_chosen_and_signals_still_end_gracefully(
    spawn: Callable[..., Any], signum: int
) -> None:
    server = spawn([sys.executable, "-c", NO_FD_LOOP_SERVER], extra_env={"MCP_REF_STDIO": "auto"}, shutdown_grace="10")
    assert result_text(server.request(tool_call(0, "echo", {"text": "on threads"}))) == "on threads"
    server.send(tool_call(1, "slow", {"steps": 3, "interval": 0.1}, progress_token="p"))
    server.read_until(is_progress("p"))
    server.signal(signum)
    answers = [m for m in server.read_until_eof() if is_response(m)]
    assert [result_text(m) for m in answers] == ["finished 3 steps"]  # the grace period let it finish
    server.assert_exit(0)
    stderr = server.stderr_text()
    assert stderr.count("stdio: reader and writer threads: NoDescriptorLoop cannot wait on file descriptors") == 1, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr


@posix_wire
@pytest.mark.req("STDIO-EOF-DRAIN", "STDIO-EXIT-ON-EOF", "STDIO-RESPONSES-BY-ID")
def test_eof_after_a_pipelined_burst_answers_every_request_exactly_once_and_exits_0(spawn: Callable[..., Any]) -> None:
    server = spawn()
    server.send_many(tool_call(i, "echo", {"text": f"n{i}" + "-" * 3000}) for i in range(600))  # ~2 MiB, many chunks
    messages = server.shutdown(timeout=20)  # close stdin, read to EOF, exit 0; duplicates fail the harness
    answers = {m["id"]: m for m in messages if is_response(m)}
    assert sorted(answers) == list(range(600))
    assert all(result_text(answers[i]).startswith(f"n{i}-") for i in range(600))
    assert "reader and writer threads: forced" in server.stderr_text()


@posix_wire
@pytest.mark.req("STDIO-BACKPRESSURE")
def test_with_stdout_unread_the_reader_thread_stops_reading_and_memory_stays_bounded(spawn: Callable[..., Any]) -> None:
    server = spawn(extra_env={"MCP_REF_LOG_LEVEL": "WARNING"})
    line = b"{}\n"  # each answered -32600: output piles up while the client does not read
    taken = write_until_stalled(server, [line * (MiB // len(line))] * 13, stall=2.0, limit=10.0)  # 13 MiB offered
    assert server.proc is not None and server.returncode is None
    assert taken < 12 * MiB, f"the server took {taken // MiB} MiB while its output was not read"
    peak = status_kib(server.pid, "VmHWM")
    assert peak < 200 * 1024, f"peak RSS {peak // 1024} MiB after {taken // MiB} MiB of flood"


@posix_wire
@pytest.mark.req("STDIO-CANCEL-STOP-WORK", "CANCEL-NO-RESPONSE")
def test_a_cancellation_read_by_the_reader_thread_stops_the_running_request(spawn: Callable[..., Any]) -> None:
    server = spawn()
    server.send(long_call(1, "p"))
    server.read_until(is_progress("p"))
    server.send(cancel(1, "changed my mind"))
    server.wait_for_stderr("slow 1: cancelled during step")  # at once: uncancelled, it would run 100 s
    assert [m for m in server.shutdown() if is_response(m)] == []  # no answer to a cancelled request


@posix_wire
@pytest.mark.req("STDIO-SHUTDOWN-BOUNDED")
def test_a_writer_thread_blocked_on_a_client_that_never_reads_does_not_hold_the_process(spawn: Callable[..., Any]) -> None:
    server = spawn(shutdown_grace="0.2", flush_timeout="1")
    server.request(modern_request(0, "server/discover"))
    server.send(modern_request(1, "resources/read", {"uri": "memo://bytes/4000000"}))  # far more than the pipe holds
    server.send(long_call(2))
    server.wait_for_full_stdout()  # the writer thread is blocked on the full pipe
    started = time.monotonic()
    server.close_stdin()
    assert server.proc is not None
    assert server.proc.wait(timeout=15) == 0  # not server.wait(): that would read stdout
    assert time.monotonic() - started < 5  # 0.2 s of grace and 1 s of flushing (the defaults: 10 s), plus slack
    assert "not taken by the client before the shutdown deadline" in server.stderr_text()


@posix_wire
@pytest.mark.req("STDIO-STDOUT-CLOSED")
def test_a_client_that_closes_stdout_is_noticed_by_the_writer_thread(spawn: Callable[..., Any]) -> None:
    server = spawn(shutdown_grace="30")
    server.send(long_call(1, "p"))
    server.read_until(is_progress("p"))
    assert server.proc is not None and server.proc.stdout is not None
    server.proc.stdout.close()  # stdin stays open: the reader thread stays blocked in its read
    started = time.monotonic()
    assert server.proc.wait(timeout=8) == 0
    assert time.monotonic() - started < 3
    stderr = server.stderr_text()
    assert "slow 1: cancelled during step" in stderr and stderr.count("stdout was closed by the client (EPIPE") == 1, stderr


@posix_wire
@pytest.mark.req("STDIO-EXIT-ON-EOF")
def test_a_regular_file_as_stdin_and_stdout_is_served_in_the_thread_mode_too(tmp_path: Path) -> None:
    from tests.wire import run_with_files

    data = b"".join(encode_line(tool_call(i, "echo", {"text": str(i)})) for i in range(3))
    code, output, stderr = run_with_files(data, module=MODULE, env={**THREADS, "MCP_REF_LOG_LEVEL": "DEBUG"}, directory=tmp_path)
    assert code == 0, stderr
    assert output.count(b"\n") == 3 and "Traceback" not in stderr
    assert "reader and writer threads: forced" in stderr
