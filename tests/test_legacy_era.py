"""The legacy era (2025-11-25 and earlier) next to the modern one, in one process.

Spec: 2026-07-28 basic/versioning#backward-compatibility-with-initialization-based-versions and
basic/transports/stdio#backward-compatibility; 2025-11-25 basic/lifecycle, basic/utilities/ping,
server/resources#subscriptions, server/utilities/logging. What is stripped for which version is
the table in ``mcp_ref/features/legacy.py``.

The tests run over stdio against ``tests.servers.interop_server``; legacy traffic is checked
against the 2025-11-25 schema, modern traffic against 2026-07-28. A legacy session is
``mcp_ref.kit.testing.Client`` in the legacy era (it sends ``initialize`` and
``notifications/initialized`` itself); tests that mix eras or send what no client would send talk
raw stdio (``tests.wire``). One test needs a handler that returns the same objects every time and
runs in-process (``tests.memory``).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from typing import Any, Iterator

import pytest

from mcp_ref import Server, resource_link
from mcp_ref.kit import testing
from mcp_ref.kit.testing import RequestError
from tests import memory
from tests.schema_check import schemas
from tests.wire import REPO_ROOT, ServerProcess, error_of, is_response, modern_request, notification, result_of, tool_call

INTEROP = "tests.servers.interop_server"
DUAL_ERA = {"MCP_REF_MODERN_ONLY": None}
MODERN_ONLY = {"MCP_REF_MODERN_ONLY": "1"}
LEGACY_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
MODERN_ONLY_FIELDS = ("resultType", "ttlMs", "cacheScope")
SERVER_INFO = "io.modelcontextprotocol/serverInfo"

_ids = itertools.count(1)


def legacy(method: str, params: dict[str, Any] | None = None, request_id: Any = None) -> dict[str, Any]:
    """A legacy request: no modern ``_meta``."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_ids) if request_id is None else request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize_params(version: str = "2025-11-25") -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "legacy-test-client", "version": "1.0"}}


def handshake(process: ServerProcess, version: str = "2025-11-25") -> dict[str, Any]:
    """``initialize`` + ``notifications/initialized``; returns the initialize result."""
    response = process.request(legacy("initialize", initialize_params(version)))
    assert "result" in response, response
    process.send(notification("notifications/initialized"))
    return response["result"]


def legacy_client(version: str = "2025-11-25") -> testing.Client:
    """A dual-era interop server behind a test client that opens a legacy session at ``version``."""
    env = {name: value for name, value in os.environ.items() if name != "MCP_REF_MODERN_ONLY"}
    command = [sys.executable, "-m", INTEROP]
    return testing.Client(command, era="legacy", protocol_version=version, client_info={"name": "legacy-test-client", "version": "1.0"}, env=env, cwd=REPO_ROOT, schemas=schemas())


def messages_of_tool(client: testing.Client, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """Call a tool as a legacy client; return the notifications it caused (written before its response)."""
    reply = client.call_tool(name, arguments)
    assert not reply.is_error, reply.result
    return reply.notifications


@pytest.fixture
def fresh() -> Any:
    """A dual-era server no client has talked to yet; legacy traffic checked against 2025-11-25."""
    with ServerProcess(module=INTEROP, env=DUAL_ERA, schema="legacy") as process:
        yield process


@pytest.fixture
def mixed() -> Any:
    """A dual-era server for tests mixing eras: each response is checked against its request's era."""
    with ServerProcess(module=INTEROP, env=DUAL_ERA, schema="auto") as process:
        yield process


@pytest.fixture
def legacy_session() -> Iterator[testing.Client]:
    """A fresh server after a legacy handshake at 2025-11-25."""
    with legacy_client() as client:
        yield client


@pytest.fixture(scope="module", params=LEGACY_VERSIONS)
def session(request: pytest.FixtureRequest) -> Iterator[tuple[str, testing.Client]]:
    """A server after a legacy handshake at each version: (version, client)."""
    with legacy_client(request.param) as client:
        yield request.param, client


@pytest.fixture(scope="module")
def modern_only() -> Any:
    with ServerProcess(module=INTEROP, env=MODERN_ONLY, schema="modern") as process:
        yield process


@pytest.fixture(scope="module")
def dual_era_modern_client() -> Any:
    """A dual-era server only ever spoken to in the modern era (stateless, so shared)."""
    with ServerProcess(module=INTEROP, env=DUAL_ERA, schema="auto") as process:
        yield process


# --- the handshake ---------------------------------------------------------------------------------


@pytest.mark.req("LEGACY-VERSION-SAME-IF-SUPPORTED", "LEGACY-INIT-RESPONSE")
def test_initialize_answers_with_the_requested_legacy_version(session: Any) -> None:
    version, client = session
    result = client.initialize_result
    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] == "interop-server"
    assert result["instructions"] == "An example server for MRTR, subscriptions and legacy clients."


@pytest.mark.req("LEGACY-VERSION-OTHERWISE-SUPPORTED", "LEGACY-VERSION-LATEST")
@pytest.mark.parametrize("requested", ["2099-01-01", "2026-07-28", "2024-10-07", "1.0"])
def test_initialize_with_a_version_the_server_does_not_speak_answers_the_newest_legacy_version(
    fresh: ServerProcess, requested: str
) -> None:
    assert handshake(fresh, requested)["protocolVersion"] == "2025-11-25"


@pytest.mark.req("VER-LEGACY-STRIPPING", "LEGACY-RESPECT-NEGOTIATED-VERSION")
def test_initialize_result_has_no_modern_result_fields(session: Any) -> None:
    _, client = session
    result = client.initialize_result
    assert not set(MODERN_ONLY_FIELDS) & set(result)
    assert "_meta" not in result


@pytest.mark.req("BASE-NOTIFICATION-NO-RESPONSE", "LEGACY-INITIALIZED-NOT-REQUIRED")
def test_initialized_notification_gets_no_answer(fresh: ServerProcess) -> None:
    handshake(fresh)  # also sends notifications/initialized
    ping = legacy("ping")
    fresh.send(ping)
    assert is_response(fresh.read_message(), ping["id"])


@pytest.mark.parametrize(
    "params",
    [{}, {"protocolVersion": 20251125, "capabilities": {}}, {"protocolVersion": "2025-11-25", "capabilities": []}],
    ids=["no-version", "version-not-a-string", "capabilities-not-an-object"],
)
def test_malformed_initialize_is_invalid_params(fresh: ServerProcess, params: dict[str, Any]) -> None:
    assert error_of(fresh.request(legacy("initialize", params)))["code"] == -32602


# --- results are shaped for the negotiated version ---------------------------------------------------

LEGACY_CALLS = [
    ("tools/list", {}),
    ("tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
    ("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "note://current"}),
    ("resources/read", {"uri": "blob://logo.png"}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "greet_user", "arguments": {"name": "Ada"}}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet_user"}, "argument": {"name": "name", "value": "A"}}),
    ("ping", None),
]


@pytest.mark.req("VER-LEGACY-STRIPPING", "LEGACY-RESPECT-NEGOTIATED-VERSION")
@pytest.mark.parametrize(("method", "params"), LEGACY_CALLS, ids=lambda v: v if isinstance(v, str) else None)
def test_legacy_results_carry_no_modern_fields_and_validate_against_the_legacy_schema(
    session: Any, method: str, params: dict[str, Any] | None
) -> None:
    _, client = session
    result = client.request(method, params).result  # schema-checked by the client
    assert not set(MODERN_ONLY_FIELDS) & set(result)
    assert SERVER_INFO not in result.get("_meta", {})


def at_least(version: str, since: str) -> bool:
    return version >= since


@pytest.mark.req("VER-LEGACY-STRIPPING", "LEGACY-RESPECT-NEGOTIATED-VERSION")
def test_tool_definitions_keep_only_fields_the_negotiated_version_knows(session: Any) -> None:
    version, client = session
    add = next(t for t in client.list_tools() if t["name"] == "add")
    assert ("icons" in add) == at_least(version, "2025-11-25")
    assert ("title" in add) == at_least(version, "2025-06-18")
    assert ("outputSchema" in add) == at_least(version, "2025-06-18")
    assert ("annotations" in add) == at_least(version, "2025-03-26")
    assert add["inputSchema"]["required"] == ["a", "b"]


@pytest.mark.req("VER-LEGACY-STRIPPING", "LEGACY-RESPECT-NEGOTIATED-VERSION")
def test_structured_content_is_sent_only_to_versions_that_know_it(session: Any) -> None:
    version, client = session
    result = client.call_tool("add", {"a": 2, "b": 3}).result
    assert ("structuredContent" in result) == at_least(version, "2025-06-18")
    assert result["content"] == [{"type": "text", "text": '{"sum": 5}'}]


@pytest.mark.req("VER-LEGACY-STRIPPING", "LEGACY-RESPECT-NEGOTIATED-VERSION")
def test_structured_output_that_is_not_an_object_reaches_legacy_clients_only_as_text(session: Any) -> None:
    _, client = session
    listed = next(t for t in client.list_tools() if t["name"] == "list_names")
    result = client.call_tool("list_names").result
    assert "outputSchema" not in listed
    assert "structuredContent" not in result
    assert json.loads(result["content"][0]["text"]) == ["Ada", "Alan", "Alonzo", "Barbara", "Grace"]


@pytest.mark.req("TOOLS-OUTPUT-SCHEMA-CONFORMS")
def test_structured_output_that_is_not_an_object_is_kept_for_modern_clients(dual_era_modern_client: ServerProcess) -> None:
    process = dual_era_modern_client
    tools = result_of(process.request(modern_request(next(_ids), "tools/list")))["tools"]
    result = result_of(process.request(tool_call(next(_ids), "list_names", {})))
    assert next(t for t in tools if t["name"] == "list_names")["outputSchema"]["type"] == "array"
    assert result["structuredContent"] == ["Ada", "Alan", "Alonzo", "Barbara", "Grace"]


@pytest.mark.req("VER-LEGACY-STRIPPING", "LEGACY-RESPECT-NEGOTIATED-VERSION")
def test_resource_links_and_audio_are_rewritten_as_text_for_versions_without_them(session: Any) -> None:
    version, client = session
    content = client.call_tool("media").content
    link, clip = content[1], content[2]
    if at_least(version, "2025-06-18"):
        assert link == {"type": "resource_link", "uri": "note://current", "name": "current-note", "mimeType": "text/plain"}
    else:
        assert link == {"type": "text", "text": "Resource: note://current"}
    if at_least(version, "2025-03-26"):
        assert clip["type"] == "audio" and clip["mimeType"] == "audio/wav"
    else:
        assert clip["type"] == "text" and "audio/wav" in clip["text"] and version in clip["text"]


@pytest.mark.req("VER-LEGACY-STRIPPING", "LEGACY-RESPECT-NEGOTIATED-VERSION", "LEGACY-RES-CAPABILITY", "LEGACY-LOG-CAPABILITY")
def test_server_info_and_capabilities_keep_only_what_the_negotiated_version_knows(session: Any) -> None:
    version, client = session
    result = client.initialize_result
    assert ("title" in result["serverInfo"]) == at_least(version, "2025-06-18")
    assert ("completions" in result["capabilities"]) == at_least(version, "2025-03-26")
    assert result["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    assert result["capabilities"]["logging"] == {}


@pytest.mark.req("VER-LEGACY-STRIPPING", "LEGACY-RESPECT-NEGOTIATED-VERSION")
def test_resource_prompt_and_template_listings_keep_only_fields_the_negotiated_version_knows(session: Any) -> None:
    version, client = session
    note = next(r for r in client.list_resources() if r["uri"] == "note://current")
    template = client.list_resource_templates()[0]
    prompt = next(p for p in client.list_prompts() if p["name"] == "greet_user")
    assert ("icons" in note) == at_least(version, "2025-11-25")
    assert ("title" in note) == at_least(version, "2025-06-18")
    assert ("title" in template) == at_least(version, "2025-06-18")
    assert ("title" in prompt) == at_least(version, "2025-06-18")
    assert ("title" in prompt["arguments"][0]) == at_least(version, "2025-06-18")


@pytest.mark.req("VER-LEGACY-STRIPPING", "VER-BOTH-ERAS-CONCURRENTLY")
async def test_shaping_a_legacy_result_leaves_the_servers_own_objects_untouched() -> None:
    server = Server("shared-objects", "1.0.0")
    messages = [{"role": "user", "content": resource_link("memo://a", "a", title="A")}]

    @server.prompt()
    async def linked(ctx: Any, args: dict[str, str]) -> list[dict[str, Any]]:
        return messages  # the same list object every time

    async with memory.serve(server) as client:
        await client.result("initialize", initialize_params("2025-03-26"), meta=memory.OMIT)
        old = await client.result("prompts/get", {"name": "linked"}, meta=memory.OMIT)
        new = await client.result("prompts/get", {"name": "linked"})
    assert old["messages"][0]["content"] == {"type": "text", "text": "Resource: memo://a"}
    assert new["messages"][0]["content"] == {"type": "resource_link", "uri": "memo://a", "name": "a", "title": "A"}
    assert messages[0]["content"]["type"] == "resource_link"


# --- legacy-only methods -----------------------------------------------------------------------------


@pytest.mark.req("LEGACY-PING-EMPTY-RESULT", "VER-ERA-PER-REQUEST")
def test_ping_before_initialize_is_answered_with_an_empty_result(fresh: ServerProcess) -> None:
    assert result_of(fresh.request(legacy("ping"))) == {}


@pytest.mark.req("LEGACY-PING-EMPTY-RESULT")
def test_ping_after_initialize_is_answered_with_an_empty_result(session: Any) -> None:
    _, client = session
    assert client.ping().result == {}


@pytest.mark.req("LEGACY-LOG-SET-LEVEL", "LEGACY-NEGOTIATED-CAPABILITIES-ONLY")
def test_without_set_level_a_legacy_client_gets_no_log_messages(legacy_session: testing.Client) -> None:
    assert messages_of_tool(legacy_session, "log_every_level", {}) == []


@pytest.mark.req("LEGACY-LOG-SET-LEVEL")
@pytest.mark.parametrize(
    ("level", "expected"),
    [
        ("warning", ["warning", "error", "critical", "alert", "emergency"]),
        ("debug", ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]),
        ("emergency", ["emergency"]),
    ],
)
def test_set_level_sends_log_messages_at_that_level_and_above(legacy_session: testing.Client, level: str, expected: list[str]) -> None:
    assert legacy_session.request("logging/setLevel", {"level": level}).result == {}
    messages = messages_of_tool(legacy_session, "log_every_level", {})
    assert [m["method"] for m in messages] == ["notifications/message"] * len(expected)
    assert [m["params"]["level"] for m in messages] == expected
    assert messages[0]["params"] == {"level": expected[0], "data": f"a {expected[0]} message", "logger": "interop"}


@pytest.mark.req("LEGACY-LOG-INVALID-LEVEL-32602")
def test_set_level_with_an_unknown_level_is_invalid_params(legacy_session: testing.Client) -> None:
    assert legacy_session.request("logging/setLevel", {"level": "loud"}, check=False).error["code"] == -32602


@pytest.mark.req("LEGACY-RES-SUBSCRIBE", "RES-UPDATED-ON-STREAM")
def test_subscribed_resource_updates_are_sent_to_a_legacy_client(legacy_session: testing.Client) -> None:
    assert legacy_session.request("resources/subscribe", {"uri": "note://current"}).result == {}
    messages = messages_of_tool(legacy_session, "set_note", {"text": "new"})
    assert messages == [{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "note://current"}}]


@pytest.mark.req("LEGACY-RES-SUBSCRIBE", "LEGACY-NEGOTIATED-CAPABILITIES-ONLY")
def test_unsubscribed_or_never_subscribed_resources_send_no_updates(legacy_session: testing.Client) -> None:
    assert messages_of_tool(legacy_session, "set_note", {"text": "unwatched"}) == []
    legacy_session.request("resources/subscribe", {"uri": "note://current"})
    legacy_session.request("resources/unsubscribe", {"uri": "note://current"})
    assert messages_of_tool(legacy_session, "set_note", {"text": "no longer watched"}) == []


@pytest.mark.req("LEGACY-RES-LIST-CHANGED", "LEGACY-NEGOTIATED-CAPABILITIES-ONLY", "TOOLS-LIST-CHANGED-NOTIFY", "PROMPT-LIST-CHANGED-NOTIFY", "RES-LIST-CHANGED-NOTIFY")
@pytest.mark.parametrize("kind", ["tools", "prompts", "resources"])
def test_list_changes_are_announced_to_a_legacy_client(legacy_session: testing.Client, kind: str) -> None:
    messages = messages_of_tool(legacy_session, "announce_change", {"kind": kind})
    assert messages == [{"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"}]


@pytest.mark.req("LEGACY-RES-NOT-FOUND-32002")
def test_reading_a_missing_resource_is_32002_for_a_legacy_client(legacy_session: testing.Client) -> None:
    with pytest.raises(RequestError) as error:
        legacy_session.read_resource("note://missing")
    assert error.value.code == -32002
    assert error.value.data == {"uri": "note://missing"}


@pytest.mark.req("RES-NOT-FOUND-32602", "BASE-NO-32002-MODERN", "VER-BOTH-ERAS-CONCURRENTLY")
def test_reading_a_missing_resource_is_32602_for_a_modern_request_in_the_same_process(mixed: ServerProcess) -> None:
    handshake(mixed)
    error = error_of(mixed.request(modern_request(next(_ids), "resources/read", {"uri": "note://missing"})))
    assert error["code"] == -32602
    assert error["data"] == {"uri": "note://missing"}


# --- the era is decided per request -----------------------------------------------------------------


@pytest.mark.req("VER-ERA-PER-REQUEST", "VER-BOTH-ERAS-CONCURRENTLY")
def test_a_modern_request_after_initialize_is_served_in_the_modern_era(mixed: ServerProcess) -> None:
    handshake(mixed, "2025-06-18")
    modern = result_of(mixed.request(tool_call(next(_ids), "whoami", {})))
    old = result_of(mixed.request(legacy("tools/call", {"name": "whoami", "arguments": {}})))
    assert modern["structuredContent"]["era"] == "modern" and modern["structuredContent"]["protocolVersion"] == "2026-07-28"
    assert modern["resultType"] == "complete"
    assert old["structuredContent"] == {"era": "legacy", "protocolVersion": "2025-06-18", "clientCapabilities": {}}


@pytest.mark.req("VER-BOTH-ERAS-CONCURRENTLY", "CACHE-HINTS-REQUIRED", "DISC-SERVERINFO-IN-META")
def test_a_modern_list_after_initialize_carries_result_type_and_caching_hints(mixed: ServerProcess) -> None:
    handshake(mixed)
    result = result_of(mixed.request(modern_request(next(_ids), "tools/list")))
    assert result["resultType"] == "complete" and result["ttlMs"] == 0 and result["cacheScope"] == "public"
    assert result["_meta"][SERVER_INFO]["name"] == "interop-server"


@pytest.mark.req("VER-ERA-PER-REQUEST")
def test_a_malformed_initialize_does_not_switch_the_process_to_the_legacy_era(mixed: ServerProcess) -> None:
    assert error_of(mixed.request(legacy("initialize", {"capabilities": {}})))["code"] == -32602
    # Still no legacy session: a request without modern _meta is a malformed modern request.
    assert error_of(mixed.request(legacy("tools/list")))["code"] == -32602
    handshake(mixed)
    assert "tools" in result_of(mixed.request(legacy("tools/list")))


@pytest.mark.req("VER-ERA-PER-REQUEST")
def test_an_unparsable_first_line_does_not_prevent_a_later_handshake(mixed: ServerProcess) -> None:
    mixed.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
    assert mixed.read_message()["error"]["code"] == -32700
    assert handshake(mixed)["protocolVersion"] == "2025-11-25"


@pytest.mark.req("VER-ERA-PER-REQUEST")
def test_a_legacy_ping_first_does_not_lock_the_process_into_the_legacy_era(mixed: ServerProcess) -> None:
    assert result_of(mixed.request(legacy("ping"))) == {}
    assert result_of(mixed.request(modern_request(next(_ids), "tools/list")))["resultType"] == "complete"
    assert error_of(mixed.request(legacy("tools/list")))["code"] == -32602


@pytest.mark.req("VER-REMOVED-METHODS-32601")
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("initialize", initialize_params()),
        ("ping", {}),
        ("logging/setLevel", {"level": "info"}),
        ("resources/subscribe", {"uri": "note://current"}),
        ("resources/unsubscribe", {"uri": "note://current"}),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_legacy_only_methods_with_modern_meta_are_method_not_found(
    dual_era_modern_client: ServerProcess, method: str, params: dict[str, Any]
) -> None:
    error = error_of(dual_era_modern_client.request(modern_request(next(_ids), method, params)))
    assert error["code"] == -32601


@pytest.mark.req("VER-LEGACY-ONLY-VIA-INITIALIZE", "VER-DUAL-ERA-ADVERTISES-LEGACY")
def test_modern_meta_naming_a_legacy_version_is_unsupported_even_on_a_dual_era_server(dual_era_modern_client: ServerProcess) -> None:
    request = modern_request(next(_ids), "tools/list")
    request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2025-11-25"
    error = error_of(dual_era_modern_client.request(request))
    assert error["code"] == -32022
    # Every version in "supported" works in _meta; the legacy ones are named apart.
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25", "initializeVersions": LEGACY_VERSIONS}


@pytest.mark.req("VER-REMOVED-METHODS-32601")
def test_subscriptions_listen_without_modern_meta_is_method_not_found_for_a_legacy_client(legacy_session: testing.Client) -> None:
    error = legacy_session.request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, check=False).error
    assert error["code"] == -32601


# --- modern-only servers and discovery ------------------------------------------------------------


@pytest.mark.req("VER-MODERN-ONLY-INITIALIZE-32022")
def test_a_modern_only_server_refuses_initialize_naming_the_versions_it_supports(modern_only: ServerProcess) -> None:
    error = error_of(modern_only.request(legacy("initialize", initialize_params("2025-06-18"))))
    assert error["code"] == -32022
    assert "2026-07-28" in error["message"]
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "2025-06-18"}


@pytest.mark.req("DISC-SUPPORTED-VERSIONS", "VER-DUAL-ERA-ADVERTISES-LEGACY")
def test_a_modern_only_server_discovers_only_the_modern_version(modern_only: ServerProcess) -> None:
    result = result_of(modern_only.request(modern_request(next(_ids), "server/discover")))
    assert result["supportedVersions"] == ["2026-07-28"]


@pytest.mark.req("DISC-SUPPORTED-VERSIONS", "VER-DUAL-ERA-ADVERTISES-LEGACY")
def test_a_dual_era_server_discovers_only_the_versions_usable_in_meta(dual_era_modern_client: ServerProcess) -> None:
    result = result_of(dual_era_modern_client.request(modern_request(next(_ids), "server/discover")))
    assert result["supportedVersions"] == ["2026-07-28"]
