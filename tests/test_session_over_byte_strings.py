"""A ``session.Session`` is the whole connection without a descriptor: bytes in, lines out.

Each test feeds byte strings to ``receive_data``/``receive_eof`` and reads the lines the session
wrote to a list, the way a transport would: no process, no pipe, no timer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp_ref import Server, elicit_form
from mcp_ref import session as session_module
from mcp_ref.meta import CLIENT_CAPABILITIES, PROTOCOL_VERSION
from mcp_ref.session import Session
from mcp_ref.versions import MODERN_VERSION
from tests.memory import gated_server

META = {PROTOCOL_VERSION: MODERN_VERSION, CLIENT_CAPABILITIES: {}}


class Lines:
    """A ``LineSink``: what the session writes, one decoded message per line."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.written = asyncio.Event()

    def write(self, line: bytes) -> None:
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        self.messages.append(json.loads(line))
        self.written.set()

    async def drain(self) -> None:
        pass

    async def answer_to(self, request_id: Any) -> dict[str, Any]:
        while True:
            for message in self.messages:
                if message.get("id") == request_id and "method" not in message:
                    return message
            self.written.clear()
            await asyncio.wait_for(self.written.wait(), 5)


def line(request_id: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": META}}
    return json.dumps(message).encode() + b"\n"


async def test_a_request_split_across_reads_is_answered_with_one_line() -> None:
    server = Server("bytes", "1.0")
    lines = Lines()
    session = Session(server, lines)
    data = line(1, "server/discover")
    assert session.receive_data(data[:7]) is True  # a partial line: read more
    session.receive_data(data[7:])
    answer = await lines.answer_to(1)
    assert answer["result"]["resultType"] == "complete"
    await session.shutdown(1.0)


async def test_a_final_line_without_its_newline_is_still_served_at_the_end_of_input() -> None:
    lines = Lines()
    session = Session(Server("bytes", "1.0"), lines)
    session.receive_data(line("last", "server/discover").rstrip(b"\n"))
    session.receive_eof()
    assert (await lines.answer_to("last"))["result"]["resultType"] == "complete"
    await session.shutdown(1.0)


async def test_input_over_the_budget_waits_as_bytes_and_goes_on_when_a_request_ends() -> None:
    server, gate = gated_server()
    lines = Lines()
    session = Session(server, lines, max_in_flight_bytes=1)  # one request at a time
    session.receive_data(line(1, "tools/call", {"name": "wait"}) + line(2, "tools/call", {"name": "wait"}))
    assert session.holding and session.is_in_flight(1) and not session.is_in_flight(2)
    gate.set()  # the first ends: that alone lets the second start (no timer looks again)
    assert (await lines.answer_to(1))["result"]["content"][0]["text"] == "done"
    assert (await lines.answer_to(2))["result"]["content"][0]["text"] == "done"
    await session.shutdown(1.0)


async def test_a_cancellation_and_a_control_lane_request_in_held_input_overtake_it() -> None:
    server, gate = gated_server()
    lines = Lines()
    session = Session(server, lines, max_in_flight_bytes=1)
    cancel = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}).encode() + b"\n"
    session.receive_data(line(1, "tools/call", {"name": "wait"}) + line(2, "tools/call", {"name": "wait"}) + line(3, "server/discover") + cancel)
    assert (await lines.answer_to(3))["result"]["resultType"] == "complete"  # served ahead of request 2
    assert not session.is_in_flight(1)  # the cancellation was taken out of the held bytes too
    gate.set()
    assert (await lines.answer_to(2))["result"]["content"][0]["text"] == "done"
    assert all(message.get("id") != 1 for message in lines.messages)  # a cancelled request is never answered
    await session.shutdown(1.0)


async def test_at_shutdown_requests_still_held_unparsed_are_answered_with_an_error() -> None:
    server, gate = gated_server()
    lines = Lines()
    session = Session(server, lines, max_in_flight_bytes=1)
    session.receive_data(line(1, "tools/call", {"name": "wait"}) + line(2, "tools/call", {"name": "wait"}))
    await session.serve_held_input(until=session.loop.time())  # the grace period is over at once
    session.refuse_held_input()
    refused = await lines.answer_to(2)
    assert refused["error"]["code"] == -32603 and "not started" in refused["error"]["message"]
    gate.set()
    await session.shutdown(1.0)
    assert (await lines.answer_to(1))["result"]["content"][0]["text"] == "done"


def legacy_line(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


async def test_held_input_goes_on_when_a_request_starts_waiting_for_the_clients_answer(monkeypatch: Any) -> None:
    # An initialize-era tool that asks the client (elicitation/create) no longer counts in the
    # backlog once its question is out. With the backlog full until then (2 here: a slow call and
    # the asking one), the held request and the client's answer must be read as soon as the
    # question leaves, not when some other request happens to end.
    monkeypatch.setattr(session_module, "BACKLOG_HIGH_WATER", 2)
    server, gate = gated_server()

    @server.tool()
    async def ask(ctx: Any, args: dict[str, Any]) -> str:
        answer = ctx.ask("go", elicit_form("Go on?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}))
        return f"asked: {answer['action']}"

    @server.tool()
    async def quick(ctx: Any, args: dict[str, Any]) -> str:
        return "quick"

    lines = Lines()
    session = Session(server, lines)
    session.receive_data(legacy_line({"id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}}, "clientInfo": {"name": "c", "version": "1"}}}))
    await lines.answer_to(0)
    session.receive_data(legacy_line({"method": "notifications/initialized"})
                         + legacy_line({"id": 1, "method": "tools/call", "params": {"name": "wait", "arguments": {}}})
                         + legacy_line({"id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": {}}})
                         + legacy_line({"id": 3, "method": "tools/call", "params": {"name": "quick", "arguments": {}}}))
    assert (await lines.answer_to(3))["result"]["content"][0]["text"] == "quick"  # the slow call still runs
    question = next(message for message in lines.messages if message.get("method") == "elicitation/create")
    session.receive_data(legacy_line({"id": question["id"], "result": {"action": "accept", "content": {"ok": True}}}))
    assert (await lines.answer_to(2))["result"]["content"][0]["text"] == "asked: accept"
    gate.set()
    await session.shutdown(1.0)


class CongestedOutput(Lines):
    """An ``Output`` whose client reads nothing: always above its high-water mark."""

    buffered = 2
    high_water = 1

    def write_parts(self, parts: list[bytes]) -> None:
        self.write(b"".join(parts))

    def write_optional(self, line: bytes) -> None:
        self.write(line)

    def when_written(self, callback: Any) -> None:
        pass


async def test_cancelling_everything_ends_shutdowns_wait_for_room_at_once() -> None:
    # Shutdown's first step waits for room to serve held input. Here input is held only because
    # the client reads nothing (nothing is in flight, so no request's end will wake the wait); a
    # second signal (or a lost stdout) cancels everything, and the wait must end then, not when
    # the grace period does.
    server, _ = gated_server()
    session = Session(server, CongestedOutput())
    session.receive_data(line(1, "tools/call", {"name": "wait"}))
    assert session.holding and not session.is_in_flight(1)
    waiting = asyncio.ensure_future(session.serve_held_input(until=session.loop.time() + 60))
    await asyncio.sleep(0)  # (one turn: the step is now waiting for room)
    session.cancel_in_flight()
    await asyncio.wait_for(waiting, 5)  # it used to sit out the whole grace period
    assert not session.accepting
