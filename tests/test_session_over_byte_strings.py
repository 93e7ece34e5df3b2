"""A ``session.Session`` is the whole connection without a descriptor: bytes in, lines out.

Each test feeds byte strings to ``receive_data``/``receive_eof`` and reads the lines the session
wrote to a list, the way a transport would: no process, no pipe, no timer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mcp_ref import Server, elicit_form
from mcp_ref.core import session as session_module
from mcp_ref.core.meta import CLIENT_CAPABILITIES, PROTOCOL_VERSION
from mcp_ref.core.session import Session
from mcp_ref.core.versions import MODERN_VERSION
from mcp_ref.features.watch import WatchSet
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

    async def answer_to_notification(self, method: str) -> dict[str, Any]:
        while True:
            for message in self.messages:
                if message.get("method") == method:
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


# --- one server, two sessions: everything per-connection stays with its session ------------------------

TASKS_META = {PROTOCOL_VERSION: MODERN_VERSION, CLIENT_CAPABILITIES: {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


@pytest.mark.req("VER-ERA-PER-REQUEST")
async def test_two_sessions_on_one_server_share_no_era_subscription_or_task() -> None:
    server = Server("shared", "1.0", list_changed=True, resource_subscriptions=True)
    gate = asyncio.Event()
    watched: list[WatchSet] = []
    server.on_watch(watched.append)

    @server.resource("test://a")
    async def a(ctx: Any) -> str:
        return "a"

    @server.tool(task="optional")
    async def slow(ctx: Any, args: dict[str, Any]) -> str:
        ctx.run_as_task()
        await gate.wait()
        return "slow"

    old_lines, new_lines = Lines(), Lines()
    old, new = Session(server, old_lines), Session(server, new_lines)
    # The first client makes the initialize handshake and subscribes the legacy way.
    old.receive_data(legacy_line({"id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}})
                     + legacy_line({"method": "notifications/initialized"})
                     + legacy_line({"id": 1, "method": "resources/subscribe", "params": {"uri": "test://a"}}))
    assert "result" in await old_lines.answer_to(1)
    assert old.legacy.active and old.legacy.initialized and not new.legacy.active
    # Its era is its own: the same request without _meta is legacy there, a malformed modern one here.
    old.receive_data(legacy_line({"id": 2, "method": "tools/list", "params": {}}))
    new.receive_data(legacy_line({"id": 2, "method": "tools/list", "params": {}}))
    assert "resultType" not in (await old_lines.answer_to(2))["result"]
    assert (await new_lines.answer_to(2))["error"]["code"] == -32602
    # The second client listens; its stream is not the first one's.
    new.receive_data(line("s", "subscriptions/listen", {"notifications": {"toolsListChanged": True, "resourceSubscriptions": ["test://a"]}}))
    await new_lines.answer_to_notification("notifications/subscriptions/acknowledged")
    assert len(new.subscriptions) == 1 and len(old.subscriptions) == 0
    assert server.watched == WatchSet(frozenset({"test://a"}), frozenset({"tools"})) == watched[-1]
    # A change reaches each session its own way, once.
    server.notify_list_changed("tools")
    server.notify_resource_updated("test://a")
    old_notes = [m for m in old_lines.messages if m.get("method", "").startswith("notifications/")]
    new_notes = [m for m in new_lines.messages if m.get("method", "").startswith("notifications/")]
    assert [(m["method"], "_meta" in m.get("params", {})) for m in old_notes] == [
        ("notifications/tools/list_changed", False), ("notifications/resources/updated", False)]
    assert [m["method"] for m in new_notes] == [
        "notifications/subscriptions/acknowledged", "notifications/tools/list_changed", "notifications/resources/updated"]
    assert all(m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "s" for m in new_notes)
    # A task belongs to the connection that made it: the other cannot see it.
    new.receive_data(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                 "params": {"name": "slow", "arguments": {}, "_meta": TASKS_META}}).encode() + b"\n")
    task_id = (await new_lines.answer_to(3))["result"]["taskId"]
    get = {"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": task_id, "_meta": TASKS_META}}
    old.receive_data(json.dumps(get).encode() + b"\n")
    new.receive_data(json.dumps(get).encode() + b"\n")
    assert (await old_lines.answer_to(4))["error"]["code"] == -32602 and len(old.tasks) == 0
    assert (await new_lines.answer_to(4))["result"]["status"] == "working" and len(new.tasks) == 1
    # When one session ends, the other is still served, and watched as before.
    await new.shutdown(1.0)
    assert server.watched == WatchSet(frozenset({"test://a"}), frozenset({"tools"})) == watched[-1]  # (the old client fetched tools)
    assert new.watched == WatchSet()
    server.notify_resource_updated("test://a")
    assert [m["method"] for m in old_lines.messages[-1:]] == ["notifications/resources/updated"]
    gate.set()
    await old.shutdown(1.0)
    assert server.watched == WatchSet() == watched[-1]
