"""``subscriptions/listen`` (basic/patterns/subscriptions): long-lived notification streams on stdio.

The streams are tested over stdio against ``tests.servers.interop_server``, whose tools trigger
changes (``announce_change`` for list changes, ``set_note`` for updates of ``note://current``).
A tool's notifications are written before its response, so reading up to a tool's response
collects everything that tool caused. Capability and filter rules that need other server
options are tested in-process with ``tests.memory``.
"""

from __future__ import annotations

import itertools
import signal
from typing import Any

import pytest

from mcp_ref import Server
from mcp_ref.features import subscriptions
from tests import memory
from tests.wire import SUBSCRIPTION_ID_KEY as SUBSCRIPTION_ID
from tests.wire import ServerProcess, cancel, id_key, is_response, modern_request, subscription_of, tool_call

INTEROP = "tests.servers.interop_server"
ACK = "notifications/subscriptions/acknowledged"
EVERYTHING = {
    "toolsListChanged": True,
    "promptsListChanged": True,
    "resourcesListChanged": True,
    "resourceSubscriptions": ["note://current"],
}

_ids = itertools.count(1000)


@pytest.fixture
def interop() -> Any:
    with ServerProcess(module=INTEROP, env={"MCP_REF_MODERN_ONLY": None}) as process:
        yield process


def on(message: dict[str, Any], listen_id: Any) -> bool:
    """Does ``message`` belong to the subscription ``listen_id`` (1 and "1" are different)?"""
    found = subscription_of(message)
    return found is not ... and id_key(found) == id_key(listen_id)


def open_stream(process: ServerProcess, listen_id: Any, wanted: dict[str, Any]) -> list[dict[str, Any]]:
    """Send a listen request; return the messages read up to and including its acknowledgement."""
    process.send(modern_request(listen_id, "subscriptions/listen", {"notifications": wanted}))
    return process.read_until(lambda m: m.get("method") == ACK and on(m, listen_id))


def run_tool(process: ServerProcess, name: str, arguments: dict[str, Any] | None = None, **options: Any) -> list[dict[str, Any]]:
    """Call a tool; return every message up to its response (which is last)."""
    request_id = next(_ids)
    process.send(tool_call(request_id, name, arguments or {}, **options))
    messages = process.read_until(lambda m: is_response(m, request_id))
    assert "result" in messages[-1], messages[-1]
    return messages


def change_everything(process: ServerProcess) -> list[dict[str, Any]]:
    """Trigger one event of every kind; return the notifications they caused."""
    caused: list[dict[str, Any]] = []
    for name, arguments in [
        ("announce_change", {"kind": "tools"}),
        ("announce_change", {"kind": "prompts"}),
        ("announce_change", {"kind": "resources"}),
        ("set_note", {"text": "changed"}),
    ]:
        caused += [m for m in run_tool(process, name, arguments) if "method" in m]
    return caused


# --- opening a stream ----------------------------------------------------------------------------


@pytest.mark.req("SUB-ACK-FIRST", "SUB-NOTHING-BEFORE-ACK", "META-SUBSCRIPTION-ID-ON-STREAM")
def test_listen_is_acknowledged_first_with_the_listen_id_and_the_honoured_filter(interop: ServerProcess) -> None:
    messages = open_stream(interop, "watch-1", EVERYTHING)
    assert messages == [
        {
            "jsonrpc": "2.0",
            "method": ACK,
            "params": {"_meta": {SUBSCRIPTION_ID: "watch-1"}, "notifications": EVERYTHING},
        }
    ]


@pytest.mark.req("META-SUBSCRIPTION-ID-ON-STREAM", "SUB-NOTIFICATIONS-CARRY-ID")
@pytest.mark.parametrize("listen_id", [0, 7, "7"], ids=["zero", "integer", "string"])
def test_the_subscription_id_keeps_the_type_and_value_of_the_listen_id(interop: ServerProcess, listen_id: Any) -> None:
    ack = open_stream(interop, listen_id, {"toolsListChanged": True})[-1]
    changed = [m for m in run_tool(interop, "announce_change", {"kind": "tools"}) if "method" in m]
    for message in (ack, *changed):
        found = message["params"]["_meta"][SUBSCRIPTION_ID]
        assert type(found) is type(listen_id) and found == listen_id
    assert len(changed) == 1


@pytest.mark.req("SUB-ACK-HONOURED-SUBSET", "SUB-CAPABILITY-FLAGS")
async def test_the_acknowledgement_omits_types_the_server_does_not_emit() -> None:
    server = Server("tools-only", "1.0.0", list_changed=["tools"])

    @server.tool()
    async def noop(ctx: Any, args: dict[str, Any]) -> str:
        return ""

    async with memory.serve(server) as client:
        client.request("subscriptions/listen", {"notifications": EVERYTHING}, id="s")
        ack = await client.wait_for(lambda m: m.get("method") == ACK)
    assert ack["params"]["notifications"] == {"toolsListChanged": True}


@pytest.mark.req("SUB-ACK-HONOURED-SUBSET")
async def test_the_acknowledgement_leaves_out_types_requested_as_false() -> None:
    server = Server("all", "1.0.0", list_changed=True, resource_subscriptions=True)
    async with memory.serve(server) as client:
        client.request("subscriptions/listen", {"notifications": {"toolsListChanged": False, "promptsListChanged": True, "resourceSubscriptions": []}}, id="s")
        ack = await client.wait_for(lambda m: m.get("method") == ACK)
    assert ack["params"]["notifications"] == {"promptsListChanged": True}


@pytest.mark.req("SUB-ACK-HONOURED-SUBSET")
async def test_the_acknowledgement_lists_each_subscribed_uri_once() -> None:
    server = Server("all", "1.0.0", resource_subscriptions=True)
    uris = ["memo://b", "memo://a", "memo://b", "memo://a"]
    async with memory.serve(server) as client:
        client.request("subscriptions/listen", {"notifications": {"resourceSubscriptions": uris}}, id="s")
        ack = await client.wait_for(lambda m: m.get("method") == ACK)
    assert ack["params"]["notifications"] == {"resourceSubscriptions": ["memo://b", "memo://a"]}


@pytest.mark.req("SUB-FILTER-VALIDATED")
@pytest.mark.parametrize(
    "wanted",
    [None, [], {"toolsListChanged": "yes"}, {"resourceSubscriptions": "note://current"}, {"resourceSubscriptions": [1]}],
    ids=["missing", "array", "flag-not-boolean", "uris-not-a-list", "uri-not-a-string"],
)
async def test_a_malformed_filter_is_invalid_params(wanted: Any) -> None:
    server = Server("all", "1.0.0", list_changed=True, resource_subscriptions=True)
    params = {} if wanted is None else {"notifications": wanted}
    async with memory.serve(server) as client:
        error = await client.error("subscriptions/listen", params)
    assert error["code"] == -32602


# --- what a stream carries ---------------------------------------------------------------------


@pytest.mark.req("META-SUBSCRIPTION-ID-ON-STREAM", "SUB-NOTIFICATIONS-CARRY-ID")
def test_every_notification_on_a_stream_carries_its_subscription_id(interop: ServerProcess) -> None:
    open_stream(interop, "all", EVERYTHING)
    caused = change_everything(interop)
    assert [m["method"] for m in caused] == [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    ]
    assert all(on(m, "all") for m in caused)
    assert caused[-1]["params"]["uri"] == "note://current"


@pytest.mark.req("SUB-ONLY-REQUESTED-TYPES")
def test_a_stream_receives_only_the_types_it_asked_for(interop: ServerProcess) -> None:
    open_stream(interop, "tools-only", {"toolsListChanged": True})
    caused = change_everything(interop)
    assert [(m["method"], subscription_of(m)) for m in caused] == [("notifications/tools/list_changed", "tools-only")]


@pytest.mark.req("SUB-ONLY-REQUESTED-TYPES")
def test_without_any_stream_change_events_send_nothing(interop: ServerProcess) -> None:
    assert change_everything(interop) == []


@pytest.mark.req("SUB-CONCURRENT-STREAMS", "SUB-ONLY-REQUESTED-TYPES", "META-SUBSCRIPTION-ID-ON-STREAM", "TOOLS-LIST-CHANGED-NOTIFY", "PROMPT-LIST-CHANGED-NOTIFY", "RES-LIST-CHANGED-NOTIFY")
def test_concurrent_streams_with_different_filters_each_get_exactly_their_own(interop: ServerProcess) -> None:
    open_stream(interop, "t", {"toolsListChanged": True})
    open_stream(interop, "p", {"promptsListChanged": True})
    open_stream(interop, "r", {"resourcesListChanged": True, "resourceSubscriptions": ["note://current"]})
    open_stream(interop, "both", {"toolsListChanged": True, "promptsListChanged": True})
    caused = change_everything(interop)
    received = sorted((subscription_of(m), m["method"]) for m in caused)
    assert received == [
        ("both", "notifications/prompts/list_changed"),
        ("both", "notifications/tools/list_changed"),
        ("p", "notifications/prompts/list_changed"),
        ("r", "notifications/resources/list_changed"),
        ("r", "notifications/resources/updated"),
        ("t", "notifications/tools/list_changed"),
    ]


@pytest.mark.req("SUB-ONLY-REQUESTED-TYPES", "RES-UPDATED-ON-STREAM")
def test_resource_updates_go_only_to_streams_subscribed_to_that_uri(interop: ServerProcess) -> None:
    open_stream(interop, "note", {"resourceSubscriptions": ["note://current", "greeting://Ada"]})
    open_stream(interop, "greeting", {"resourceSubscriptions": ["greeting://Ada"]})
    caused = [m for m in run_tool(interop, "set_note", {"text": "x"}) if "method" in m]
    assert [(subscription_of(m), m["params"]["uri"]) for m in caused] == [("note", "note://current")]


# --- ending a stream ------------------------------------------------------------------------------


@pytest.mark.req("SUB-CANCEL-ENDS-STREAM", "CANCEL-NO-RESPONSE")
def test_cancelling_a_listen_ends_the_stream_with_no_response_and_no_further_messages(interop: ServerProcess) -> None:
    open_stream(interop, "gone", EVERYTHING)
    open_stream(interop, "kept", {"toolsListChanged": True})
    interop.send(cancel("gone", "done watching"))
    caused = change_everything(interop)
    assert [(subscription_of(m), m["method"]) for m in caused] == [("kept", "notifications/tools/list_changed")]
    after_eof = interop.shutdown()
    assert not any(is_response(m, "gone") or on(m, "gone") for m in after_eof)
    assert [m["id"] for m in after_eof if is_response(m)] == ["kept"]


def graceful_closures(messages: list[dict[str, Any]]) -> dict[Any, tuple[str, Any]]:
    """Response id -> (resultType, the subscription id in the result's ``_meta``) for every response."""
    return {m["id"]: (m["result"]["resultType"], subscription_of(m)) for m in messages if is_response(m)}


@pytest.mark.req(
    "SUB-GRACEFUL-CLOSURE", "SUB-SERVER-TEARDOWN-RESPONSE", "SUB-SHUTDOWN-GRACEFUL-RESPONSE", "STDIO-EXIT-ON-EOF", "STDIO-EOF-DRAIN"
)
def test_eof_answers_every_open_listen_with_a_complete_result_carrying_its_id_then_exits_zero(interop: ServerProcess) -> None:
    open_stream(interop, 0, {"toolsListChanged": True})
    open_stream(interop, "second", {"resourceSubscriptions": ["note://current"]})
    closed = graceful_closures(interop.shutdown())  # exit status 0 is checked by shutdown()
    assert closed == {0: ("complete", 0), "second": ("complete", "second")}


@pytest.mark.req("SUB-GRACEFUL-CLOSURE", "SUB-SHUTDOWN-GRACEFUL-RESPONSE")
def test_sigterm_answers_every_open_listen_then_exits_zero(interop: ServerProcess) -> None:
    open_stream(interop, "a", {"promptsListChanged": True})
    open_stream(interop, "b", {"toolsListChanged": True})
    interop.signal(signal.SIGTERM)
    closed = graceful_closures(interop.read_until_eof())
    interop.assert_exit(0)
    assert closed == {"a": ("complete", "a"), "b": ("complete", "b")}


@pytest.mark.req("PROG-TRACK-TOKENS", "PROG-TOKEN-ECHOED")
def test_progress_of_other_requests_keeps_flowing_while_a_stream_is_open(interop: ServerProcess) -> None:
    open_stream(interop, "watching", EVERYTHING)
    messages = run_tool(interop, "count_slowly", {"steps": 3}, progress_token="count")
    progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
    assert progress, messages
    assert all(p["progressToken"] == "count" and "_meta" not in p for p in progress)
    assert progress[-1]["progress"] == 3 and progress[-1]["total"] == 3
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "counted to 3"}]


# --- capabilities and the server API ----------------------------------------------------------------


def populated(**options: Any) -> Server:
    server = Server("populated", "1.0.0", **options)

    @server.tool()
    async def noop(ctx: Any, args: dict[str, Any]) -> str:
        return ""

    @server.resource("memo://one", name="one")
    async def one(ctx: Any) -> str:
        return "1"

    @server.prompt()
    async def hello(ctx: Any, args: dict[str, str]) -> str:
        return "hi"

    return server


@pytest.mark.req("SUB-CAPABILITY-FLAGS", "RES-CAPABILITY")
def test_interop_server_advertises_list_changed_and_resource_subscriptions(interop: ServerProcess) -> None:
    capabilities = interop.request(modern_request(1, "server/discover"))["result"]["capabilities"]
    assert capabilities["tools"] == {"listChanged": True}
    assert capabilities["prompts"] == {"listChanged": True}
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}


@pytest.mark.req("SUB-CAPABILITY-FLAGS", "DISC-CAPABILITIES-MATCH-HANDLERS")
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, {"tools": {}, "prompts": {}, "resources": {}}),
        ({"list_changed": ["prompts"]}, {"tools": {}, "prompts": {"listChanged": True}, "resources": {}}),
        ({"resource_subscriptions": True}, {"tools": {}, "prompts": {}, "resources": {"subscribe": True}}),
        (
            {"list_changed": ["tools", "resources"]},
            {"tools": {"listChanged": True}, "prompts": {}, "resources": {"listChanged": True}},
        ),
    ],
    ids=["nothing-declared", "prompts-list-changed", "resource-subscriptions", "tools-and-resources-lists"],
)
async def test_list_changed_and_subscribe_are_advertised_only_when_declared(options: dict[str, Any], expected: dict[str, Any]) -> None:
    async with memory.serve(populated(**options)) as client:
        capabilities = (await client.result("server/discover"))["capabilities"]
    assert {key: capabilities[key] for key in ("tools", "prompts", "resources")} == expected


@pytest.mark.req("SUB-CAPABILITY-FLAGS")
@pytest.mark.parametrize(
    ("options", "announce"),
    [
        ({}, lambda s: s.notify_list_changed("tools")),
        ({"list_changed": ["tools"]}, lambda s: s.notify_list_changed("prompts")),
        ({"list_changed": True}, lambda s: s.notify_resource_updated("memo://one")),
    ],
    ids=["tools-undeclared", "prompts-undeclared", "resource-updates-undeclared"],
)
def test_announcing_a_change_the_server_did_not_declare_raises(options: dict[str, Any], announce: Any) -> None:
    server = populated(**options)
    with pytest.raises(ValueError, match="not declared"):
        announce(server)


@pytest.mark.req("SUB-CONCURRENT-STREAMS")
async def test_open_subscriptions_are_bounded_and_the_next_listen_gets_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subscriptions, "MAX_OPEN_SUBSCRIPTIONS", 3)
    server = Server("bounded", "1", list_changed=["tools"])
    async with memory.serve(server) as client:
        for n in range(3):
            client.request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id=f"s{n}")
        await client.wait_for(lambda m: m.get("method") == "notifications/subscriptions/acknowledged"
                              and m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "s2")
        error = await client.error("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        assert error["code"] == -32603 and "Too many open subscriptions" in error["message"]
        client.cancel("s0")
        client.request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id="s3")
        await client.wait_for(lambda m: m.get("method") == "notifications/subscriptions/acknowledged"
                              and m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "s3")
