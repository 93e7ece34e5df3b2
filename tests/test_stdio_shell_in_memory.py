"""The stdio shell (``stdio.StdioSession``) over in-memory streams: a real ``Server`` and ``Session``,
the real read loop, the real single writer, and no process, pipe or thread.

Spec: basic/transports/stdio. ``streams.MemoryInput`` is the client's end of stdin (the test
sends bytes; ``unread`` is what the server has not read) and ``streams.MemoryOutput`` the client's
end of stdout (the test reads lines; the server may hold at most ``pipe_bytes`` unread there, as
with a pipe). Every wait is on a condition.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, AsyncIterator

import pytest

from mcp_ref import Server
from mcp_ref.core import session as session_module
from mcp_ref.core.stdio import StdioSession
from mcp_ref.core.streams import MemoryInput, MemoryOutput
from tests.memory import gated_server, until
from tests.wire import cancel, encode_line, modern_request, tool_call

TIMEOUT = 5.0


class Shell:
    """A ``StdioSession`` serving ``server`` on memory streams, in a task of the test's loop."""

    def __init__(self, server: Server, **options: Any) -> None:
        self.stdin, self.stdout = MemoryInput(), MemoryOutput()
        self.shell = StdioSession(server, self.stdin, self.stdout, **options)
        self.task = asyncio.get_running_loop().create_task(self.shell.serve())

    def send(self, *messages: dict[str, Any]) -> None:
        self.stdin.send(b"".join(encode_line(m) for m in messages))

    async def message(self) -> dict[str, Any]:
        line = await asyncio.wait_for(self.stdout.receive_line(), TIMEOUT)
        assert line is not None, "the server closed stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    async def rest(self) -> list[dict[str, Any]]:
        """Every line until the server closes stdout (it has shut down)."""
        messages = []
        while (line := await asyncio.wait_for(self.stdout.receive_line(), TIMEOUT)) is not None:
            messages.append(json.loads(line))
        await asyncio.wait_for(self.task, TIMEOUT)
        return messages


@pytest.fixture
async def shells() -> AsyncIterator[list[Shell]]:
    made: list[Shell] = []
    yield made
    for shell in made:
        if not shell.task.done():
            shell.task.cancel()
            await asyncio.gather(shell.task, return_exceptions=True)


def big_server(size: int) -> Server:
    server = Server("big", "1.0")

    @server.tool()
    async def big(ctx: Any, args: dict[str, Any]) -> str:
        return "b" * size

    return server


@pytest.mark.req("STDIO-EXIT-ON-EOF", "STDIO-EOF-DRAIN")
async def test_requests_then_eof_are_answered_then_the_shell_closes_stdout_and_returns(shells: list[Shell]) -> None:
    server, release = gated_server()
    shells.append(shell := Shell(server))
    shell.send(modern_request(1, "server/discover"), tool_call(2, "wait"))
    assert (await shell.message())["id"] == 1
    shell.stdin.end()  # EOF while request 2 still runs: it gets the grace period
    await until(lambda: shell.stdin.closed)  # the shell stopped reading
    release.set()
    [answer] = await shell.rest()
    assert answer["id"] == 2 and answer["result"]["content"][0]["text"] == "done"
    assert shell.stdout.closed and not shell.shell.hard_stopped


@pytest.mark.req("STDIO-BACKPRESSURE")
async def test_reading_stops_while_the_session_holds_input_and_resumes_when_it_asks(
    shells: list[Shell], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_module, "HELD_INPUT_BYTES", 2000)
    server, release = gated_server()
    shells.append(shell := Shell(server, max_in_flight_bytes=1))  # one request at a time
    calls = [tool_call(i, "wait") for i in range(200)]  # ~30 kB, far more than 2000 bytes
    shell.send(*calls[:50])
    await until(lambda: shell.shell.session is not None and not shell.shell.session.wants_input)
    shell.send(*calls[50:])
    for _ in range(10):
        await asyncio.sleep(0)
    held = shell.stdin.unread
    assert held == sum(len(encode_line(call)) for call in calls[50:])  # not read: it stays with the client
    release.set()  # requests end one after another: the session asks for more each time
    ids = sorted([(await shell.message())["id"] for _ in calls])
    assert ids == list(range(200)) and shell.stdin.unread == 0 < held
    shell.stdin.end()
    assert await shell.rest() == []


@pytest.mark.req("STDIO-BACKPRESSURE")
async def test_a_client_that_does_not_read_fills_its_pipe_and_its_answers_wait_in_the_queue(shells: list[Shell]) -> None:
    shells.append(shell := Shell(big_server(300_000)))
    shell.send(*(tool_call(i, "big") for i in range(3)))
    await until(lambda: shell.stdout.unread == 64 * 1024)  # the "pipe" is full
    output = shell.shell._output
    assert output is not None
    await until(lambda: output.buffered > 800_000)  # the rest is queued, counted, not dropped
    answers = [await shell.message() for _ in range(3)]  # reading drains the queue
    assert sorted(a["id"] for a in answers) == [0, 1, 2]
    assert all(len(a["result"]["content"][0]["text"]) == 300_000 for a in answers)
    assert output.buffered == 0


@pytest.mark.req("STDIO-SIGNALS", "STDIO-EOF-DRAIN")
async def test_stop_lets_work_finish_in_the_grace_period_and_a_second_stop_answers_it_with_an_error(shells: list[Shell]) -> None:
    server, _release = gated_server()
    shells.append(shell := Shell(server, shutdown_grace_seconds=30))
    shell.send(tool_call(1, "wait"))
    await until(lambda: shell.shell.session is not None and shell.shell.session.running == 1)
    shell.shell.stop()  # a signal: the grace period begins, request 1 goes on
    await until(lambda: shell.stdin.closed)
    assert not shell.task.done()
    shell.shell.stop()  # a second signal: no more waiting
    [answer] = await shell.rest()
    assert answer["id"] == 1 and answer["error"]["code"] == -32603 and "shutting down" in answer["error"]["message"]
    assert shell.shell.hard_stopped


@pytest.mark.req("STDIO-STDOUT-CLOSED")
async def test_a_client_that_closes_stdout_ends_the_session_and_its_running_work_is_cancelled(shells: list[Shell]) -> None:
    server, _release = gated_server()
    shells.append(shell := Shell(server, shutdown_grace_seconds=30))
    shell.send(tool_call(1, "wait"))
    session = await _session(shell)
    await until(lambda: session.running == 1)
    shell.stdout.close_by_client()
    await asyncio.wait_for(shell.task, TIMEOUT)  # at once, not after 30 s of grace
    assert shell.shell.hard_stopped and session.running == 0 and shell.stdin.closed


@pytest.mark.req("STDIO-CANCEL-STOP-WORK", "CANCEL-NO-RESPONSE")
async def test_a_cancellation_read_by_the_shell_stops_the_request_and_it_is_never_answered(shells: list[Shell]) -> None:
    server, _release = gated_server()
    shells.append(shell := Shell(server))
    shell.send(tool_call(1, "wait"))
    session = await _session(shell)
    await until(lambda: session.running == 1)
    shell.send(cancel(1, "no longer needed"), modern_request(2, "server/discover"))
    assert (await shell.message())["id"] == 2
    assert session.running == 0
    shell.stdin.end()
    assert await shell.rest() == []


async def test_cancelling_serve_still_runs_the_shutdown(shells: list[Shell]) -> None:
    server, _release = gated_server()
    shells.append(shell := Shell(server, shutdown_grace_seconds=0))
    shell.send(tool_call(1, "wait"))
    session = await _session(shell)
    await until(lambda: session.running == 1)
    shell.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(shell.task, TIMEOUT)
    line = await shell.stdout.receive_line()
    assert line is not None and await shell.stdout.receive_line() is None  # one line, and stdout closed
    answer = json.loads(line)
    assert answer["id"] == 1 and answer["error"]["code"] == -32603  # answered, then cancelled
    assert shell.stdout.closed


async def _session(shell: Shell) -> session_module.Session:
    await until(lambda: shell.shell.session is not None)
    assert shell.shell.session is not None
    return shell.shell.session


async def test_a_polled_reader_sets_only_its_newest_event_and_watches_nothing_while_held() -> None:
    from mcp_ref.core.streams import PolledReader

    read_fd, write_fd = os.pipe()
    reader = PolledReader(read_fd)
    try:
        with pytest.raises(BlockingIOError):
            reader.receive_some(10)  # nothing there: the caller waits for the event
        first = reader.when_readable()
        os.write(write_fd, b"abc")
        await asyncio.wait_for(first.wait(), TIMEOUT)
        second = reader.when_readable()  # asked again before the read, as the shell does
        assert reader.receive_some(10) == b"abc"
        for _ in range(10):
            await asyncio.sleep(0)
        assert not second.is_set()  # the bytes that set the first event are read: no stale wake
        reader.hold()  # the session holds input: nothing is watched, the bytes stay in the pipe
        os.write(write_fd, b"def")
        for _ in range(10):
            await asyncio.sleep(0)
        assert not second.is_set()
        third = reader.when_readable()
        await asyncio.wait_for(third.wait(), TIMEOUT)  # watched again: the waiting bytes answer at once
        assert reader.receive_some(10) == b"def"
        os.close(write_fd)
        write_fd = -1
        assert reader.receive_some(10) == b""  # EOF
    finally:
        reader.close()
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


@pytest.mark.req("STDIO-EOF-DRAIN")
async def test_one_session_ending_leaves_another_sessions_queued_synchronous_calls_to_run(shells: list[Shell]) -> None:
    # The handler pool is the server's: the first session to end must not shut it down under the
    # other one (its queued calls were cancelled: -32603).
    import threading

    server = Server("shared", "1.0", handler_threads=2)
    gate = threading.Event()

    @server.tool()
    def blocking(ctx: Any, args: dict[str, Any]) -> str:
        gate.wait(TIMEOUT)
        return "done"

    shells.append(first := Shell(server))
    shells.append(second := Shell(server))
    first.send(*(tool_call(i, "blocking") for i in range(6)))
    await until(lambda: server.busy_handler_threads == 2)
    second.stdin.end()
    assert await second.rest() == []
    gate.set()
    answers = [await first.message() for _ in range(6)]
    assert sorted(a["id"] for a in answers) == list(range(6))
    assert all(a["result"]["content"][0]["text"] == "done" for a in answers), answers
    first.stdin.end()
    assert await first.rest() == []
