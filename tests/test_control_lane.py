"""The control lane: requests that do no user work never wait behind tool handlers (issue 17).

Spec: basic/transports/stdio; the lane itself is a project rule (STDIO-CONTROL-LANE, see
``mcp_ref.core.control``). The wire tests queue tool calls that only end when
cancelled or at shutdown (``slow``, 100 s each), so every lane answer that arrives while they wait
proves the lane overtook them: before the lane, ``server/discover`` behind 1,200 such calls waited
for (1,200 / 64) rounds of the tool. The sans-I/O tests pin the pieces: which messages may
overtake held input (``Dispatcher.may_overtake``), how ``WireReader.take_ahead`` takes them out,
and that a lane request takes no concurrency slot.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from mcp_ref.core.control import CONTROL_LANE, CONTROL_LANE_LIMIT, overtaking_pattern
from mcp_ref.core.wire import AHEAD_MAX_BYTES, Notification, Request, WireReader
from tests.memory import gated_server, serve
from tests.wire import ServerProcess, cancel, encode_line, is_response, long_call, modern_request, notification, tool_call

MODULE = "tests.servers.hardening_server"
LANE_REQUESTS = ["server/discover", "tools/list", "resources/list", "resources/templates/list", "prompts/list"]


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    process = ServerProcess(module=MODULE, env={"BASIC_SERVER_SHUTDOWN_GRACE": "0"}, schema="auto")
    yield process
    process.close(timeout=5.0)


def answered_calls(server: ServerProcess) -> list[Any]:
    return [m["id"] for m in server.received if is_response(m) and isinstance(m["id"], int)]


# --- through real stdio --------------------------------------------------------------------------------


@pytest.mark.req("STDIO-CONTROL-LANE")
@pytest.mark.parametrize("calls", [200, 1200], ids=["behind-calls-waiting-for-slots", "behind-calls-held-as-bytes"])
def test_discover_and_the_list_methods_are_answered_while_hundreds_of_tool_calls_wait(server: ServerProcess, calls: int) -> None:
    # 200 calls: 64 run, 136 wait for a slot (the lane does not queue behind them). 1,200: past
    # the 1,024 the transport starts, the rest and what follows wait unread as bytes.
    server.send_many([*(long_call(number) for number in range(calls)), *(modern_request(m, m) for m in LANE_REQUESTS)])
    for method in LANE_REQUESTS:
        assert "result" in server.response(method), method
    assert answered_calls(server) == []  # every call is still waiting or running
    server.send(cancel(calls - 1))  # the last call was never started: the cancellation waits its turn
    server.send(cancel(0))  # a running one: honoured at once, as before
    server.request(modern_request("after", "tools/list"))
    assert answered_calls(server) == []


@pytest.mark.req("STDIO-CONTROL-LANE")
def test_a_legacy_ping_is_answered_while_1200_legacy_tool_calls_wait(server: ServerProcess) -> None:
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "lane", "version": "1"}}
    assert "result" in server.request({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": initialize})
    calls = [{"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "slow", "arguments": {"steps": 2000, "interval": 0.05}}} for n in range(1200)]
    server.send_many([*calls, notification("notifications/initialized"), {"jsonrpc": "2.0", "id": "ping", "method": "ping"}])
    assert server.response("ping")["result"] == {}
    assert answered_calls(server) == []


@pytest.mark.req("STDIO-CONTROL-LANE", "STDIO-BACKPRESSURE")
def test_thousands_of_lane_requests_behind_a_backlog_are_all_answered_in_bounded_rounds(server: ServerProcess) -> None:
    # More lane requests than the lane holds at once (CONTROL_LANE_LIMIT): they go in rounds,
    # and every one is answered while the calls still wait.
    count = 10 * CONTROL_LANE_LIMIT
    server.send_many([*(long_call(number) for number in range(1200)), *(modern_request(f"l{n}", "tools/list") for n in range(count))])
    for number in range(count):
        assert "result" in server.response(f"l{number}")
    assert answered_calls(server) == []


# --- the pieces, sans I/O --------------------------------------------------------------------------------


def line(message: dict[str, Any]) -> bytes:
    return encode_line(message)


def held_reader(*messages: dict[str, Any] | bytes) -> WireReader:
    reader = WireReader()
    reader.feed(b"".join(m if isinstance(m, bytes) else line(m) for m in messages))
    return reader


def lane_only(event: Any) -> bool:
    return isinstance(event, Request) and event.method in CONTROL_LANE


PATTERN = overtaking_pattern()


def test_take_ahead_takes_the_wanted_messages_out_and_leaves_the_rest_in_order() -> None:
    reader = held_reader(tool_call(1, "slow"), modern_request(2, "tools/list"), tool_call(3, "echo", {"text": "tools/list"}), modern_request(4, "server/discover"))
    taken = reader.take_ahead(PATTERN, lane_only)
    assert [(e.id, e.method) for e in taken] == [(2, "tools/list"), (4, "server/discover")]
    assert [e.id for e in reader.events()] == [1, 3]  # a call naming a lane method in its arguments stays


def test_take_ahead_stops_at_not_yet_and_resumes_there() -> None:
    reader = held_reader(tool_call(1, "slow"), modern_request(2, "tools/list"), modern_request(3, "tools/list"))
    seen: list[Any] = []

    def one_at_a_time(event: Any) -> bool | None:
        seen.append(event.id)
        return True if len(seen) == 1 else None

    assert [e.id for e in reader.take_ahead(PATTERN, one_at_a_time)] == [2]
    assert [e.id for e in reader.take_ahead(PATTERN, lambda event: True)] == [3]  # searched again from 3
    assert seen == [2, 3]
    assert [e.id for e in reader.events()] == [1]


def test_take_ahead_searches_each_complete_line_once_and_a_partial_line_when_it_completes() -> None:
    reader = held_reader(modern_request(1, "tools/list"))
    declined: list[Any] = []
    assert reader.take_ahead(PATTERN, lambda event: declined.append(event.id) or False) == []
    partial = line(modern_request(2, "tools/list"))
    reader.feed(partial[:20])
    assert reader.take_ahead(PATTERN, lambda event: True) == []  # 1 is not looked at again; 2 is not complete
    reader.feed(partial[20:])
    assert [e.id for e in reader.take_ahead(PATTERN, lambda event: True)] == [2]
    assert declined == [1] and [e.id for e in reader.events()] == [1]


def test_take_ahead_leaves_long_lines_and_the_tail_of_an_oversized_line_in_their_place() -> None:
    big = modern_request(1, "tools/list", {"pad": "x" * AHEAD_MAX_BYTES})
    reader = held_reader(big, modern_request(2, "tools/list"))
    assert [e.id for e in reader.take_ahead(PATTERN, lambda event: True)] == [2]
    assert [e.id for e in reader.events()] == [1]

    reader = WireReader(max_line_bytes=100)
    reader.feed(b'{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"pad":"' + b"y" * 200)
    first = reader.next_event()  # over the limit: from here the line is discarded up to its newline
    reader.feed(b'"},"method":"tools/list"}\n' + line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
    assert [e.id for e in reader.take_ahead(PATTERN, lambda event: True)] == [3]
    rest = [first, *reader.events()]
    assert [type(e).__name__ for e in rest if e is not None] == ["BadMessage"]  # the one refusal, and 3 is not read twice


def test_a_method_name_inside_a_longer_string_is_not_a_hit() -> None:
    reader = held_reader(tool_call(1, "echo", {"text": "see tools/list."}), {"jsonrpc": "2.0", "id": 2, "method": "tools/listing"})
    parsed: list[Any] = []
    assert reader.take_ahead(PATTERN, lambda event: parsed.append(event) or True) == []
    assert parsed == []  # neither line was even parsed


def test_a_request_taken_ahead_carries_its_cost() -> None:
    reader = held_reader(modern_request(1, "tools/list"))
    (taken,) = reader.take_ahead(PATTERN, lambda event: True)
    assert taken.cost > 0


async def test_may_overtake_admits_the_lane_until_it_is_full_and_cancellations_only_of_requests_in_flight() -> None:
    server, release = gated_server()
    async with serve(server) as client:
        dispatcher = client.dispatcher
        call_id = client.request("tools/call", {"name": "wait"})  # in flight once handled
        cancelled = Notification("notifications/cancelled", {"requestId": call_id})
        assert dispatcher.may_overtake(cancelled) is True
        assert dispatcher.may_overtake(Notification("notifications/cancelled", {"requestId": "not-in-flight"})) is False
        assert dispatcher.may_overtake(Notification("notifications/cancelled", {"requestId": [1]})) is False
        assert dispatcher.may_overtake(Notification("notifications/initialized", {})) is True
        assert dispatcher.may_overtake(Notification("notifications/roots/list_changed", {})) is False
        discover = Request("d", "server/discover", {})
        assert dispatcher.may_overtake(discover) is True
        assert dispatcher.may_overtake(discover, room_for_answers=False) is None
        assert dispatcher.may_overtake(Request("i", "initialize", {})) is False  # keeps its place
        assert dispatcher.may_overtake(Request("c", "tools/call", {"name": "wait"})) is False
        dispatcher.control_in_flight = CONTROL_LANE_LIMIT
        assert dispatcher.may_overtake(discover) is None
        dispatcher.control_in_flight = 0
        release.set()
        await client.response(call_id)


async def test_lane_requests_take_no_concurrency_slot_and_are_counted_while_alive() -> None:
    server, release = gated_server()
    async with serve(server, max_concurrency=1) as client:
        first, second = client.request("tools/call", {"name": "wait"}), client.request("tools/call", {"name": "wait"})
        listing = client.request("tools/list")
        assert client.dispatcher.control_in_flight == 1
        listed = await client.response(listing)  # while the one slot is taken, and one call waits for it
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["wait"]
        assert client.responses(first) == [] and client.responses(second) == []
        release.set()
        assert (await client.response(second))["result"]["content"][0]["text"] == "done"
        await client.settle()
        assert client.dispatcher.control_in_flight == 0
