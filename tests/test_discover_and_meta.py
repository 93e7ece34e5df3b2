"""server/discover, per-request _meta, and method routing, in process.

Spec 2026-07-28: server/discover, basic/index#meta, basic/versioning, basic/index#error-codes.
Every message the server writes is checked against the official schema by ``tests.memory``.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from mcp_ref import LEGACY_VERSIONS, MODERN_VERSION, CacheHint, PromptArgument, Server
from mcp_ref.core.meta import CLIENT_CAPABILITIES, LOG_LEVEL, PROTOCOL_VERSION, SERVER_INFO

from .memory import OMIT, modern_meta, serve


def bare_server(**options) -> Server:
    return Server("discover-test", "1.2.3", **options)


def full_server(**options) -> Server:
    server = Server("full", "2.0.0", **options)

    @server.tool()
    async def echo(ctx, arguments):
        """Echo nothing."""
        return "ok"

    @server.resource("test://static")
    async def static(ctx):
        """A static resource."""
        return "static"

    @server.resource_template("test://items/{id}")
    async def item(ctx, uri, variables):
        """An item."""
        return variables["id"]

    @server.prompt(arguments=[PromptArgument("topic")])
    async def greet(ctx, arguments):
        """A greeting."""
        return "hello"

    return server


# --- server/discover ----------------------------------------------------------------------------


@pytest.mark.req("DISC-SERVER-MUST-IMPLEMENT", "VER-IMPLEMENT-DISCOVER", "DISC-RESULT-FIELDS")
async def test_discover_answers_with_versions_capabilities_and_identity():
    async with serve(bare_server()) as client:
        result = await client.result("server/discover")
    assert result["supportedVersions"][0] == MODERN_VERSION
    assert result["capabilities"] == {}
    assert result["_meta"][SERVER_INFO] == {"name": "discover-test", "version": "1.2.3"}
    assert result["resultType"] == "complete"


@pytest.mark.req("DISC-SUPPORTED-VERSIONS", "VER-DUAL-ERA-ADVERTISES-LEGACY")
async def test_a_dual_era_server_discovers_only_versions_usable_in_meta():
    async with serve(bare_server(modern_only=False)) as client:
        result = await client.result("server/discover")
    assert result["supportedVersions"] == [MODERN_VERSION]
    assert not set(result["supportedVersions"]) & set(LEGACY_VERSIONS)


@pytest.mark.req("DISC-SUPPORTED-VERSIONS")
async def test_discover_lists_only_the_modern_version_on_a_modern_only_server():
    async with serve(bare_server(modern_only=True)) as client:
        result = await client.result("server/discover")
    assert result["supportedVersions"] == [MODERN_VERSION]


@pytest.mark.req("DISC-RESULT-FIELDS")
async def test_discover_carries_instructions_when_configured():
    async with serve(bare_server(instructions="Use the echo tool.")) as client:
        result = await client.result("server/discover")
    assert result["instructions"] == "Use the echo tool."


async def test_discover_omits_instructions_when_none_are_configured():
    async with serve(bare_server()) as client:
        result = await client.result("server/discover")
    assert "instructions" not in result


async def test_discover_server_info_includes_the_title_when_given():
    async with serve(Server("n", "1", title="Nice Name")) as client:
        result = await client.result("server/discover")
    assert result["_meta"][SERVER_INFO] == {"name": "n", "version": "1", "title": "Nice Name"}


@pytest.mark.req("DISC-CAPABILITIES-MATCH-HANDLERS", "TOOLS-CAPABILITY", "RES-CAPABILITY", "PROMPT-CAPABILITY", "COMPL-CAPABILITY")
async def test_discover_capabilities_are_derived_from_registrations():
    async with serve(full_server()) as client:
        result = await client.result("server/discover")
    assert result["capabilities"] == {"tools": {}, "resources": {}, "prompts": {}, "completions": {}}


@pytest.mark.req("DISC-CAPABILITIES-MATCH-HANDLERS")
async def test_discover_declares_only_tools_for_a_tools_only_server():
    server = bare_server()

    @server.tool()
    async def only(ctx, arguments):
        """The only tool."""
        return "x"

    async with serve(server) as client:
        result = await client.result("server/discover")
    assert result["capabilities"] == {"tools": {}}


@pytest.mark.req("DISC-CAPABILITIES-MATCH-HANDLERS", "SUB-CAPABILITY-FLAGS")
async def test_discover_declares_list_changed_and_subscribe_flags_when_enabled():
    server = bare_server(list_changed=True, resource_subscriptions=True)
    async with serve(server) as client:
        result = await client.result("server/discover")
    assert result["capabilities"] == {
        "tools": {"listChanged": True},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
    }


def test_unknown_list_changed_kind_is_refused():
    with pytest.raises(ValueError, match="unknown list"):
        Server("s", "1", list_changed=["tools", "roots"])


def test_announcing_an_undeclared_change_is_refused():
    server = bare_server(list_changed=["prompts"])
    with pytest.raises(ValueError, match="tools list changes are not declared"):
        server.notify_list_changed("tools")
    with pytest.raises(ValueError, match="resource subscriptions are not declared"):
        server.notify_resource_updated("test://x")


@pytest.mark.req("DISC-CAPABILITIES-MATCH-HANDLERS")
async def test_declared_list_changed_alone_makes_the_list_method_exist():
    async with serve(bare_server(list_changed=["prompts"])) as client:
        discovered = await client.result("server/discover")
        prompts = await client.result("prompts/list")
        tools = await client.error("tools/list")
    assert discovered["capabilities"] == {"prompts": {"listChanged": True}}
    assert prompts["prompts"] == []
    assert tools["code"] == -32601


@pytest.mark.req("LOG-CAPABILITY")
async def test_discover_declares_logging_only_when_log_messages_are_on():
    async with serve(bare_server(log_messages=True)) as client:
        with_logging = await client.result("server/discover")
    async with serve(bare_server()) as client:
        without = await client.result("server/discover")
    assert with_logging["capabilities"] == {"logging": {}}
    assert "logging" not in without["capabilities"]


@pytest.mark.req("COMPL-CAPABILITY")
async def test_completions_capability_follows_a_resource_template_alone():
    server = bare_server()

    @server.resource_template("test://t/{x}")
    async def t(ctx, uri, variables):
        """T."""
        return "t"

    async with serve(server) as client:
        result = await client.result("server/discover")
    assert result["capabilities"] == {"resources": {}, "completions": {}}


@pytest.mark.req("CACHE-HINTS-REQUIRED")
async def test_discover_carries_the_configured_cache_hint():
    server = bare_server(cache_hints={"server/discover": CacheHint(60_000, "public")})
    async with serve(server) as client:
        result = await client.result("server/discover")
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public")


@pytest.mark.req("DISC-SERVERINFO-IN-META", "META-SERVERINFO-IN-RESULT", "BASE-RESULT-TYPE-REQUIRED", "BASE-RESULT-TYPE-KNOWN-VALUES")
async def test_every_modern_result_carries_server_info_and_result_type():
    calls = [
        ("server/discover", {}),
        ("tools/list", {}),
        ("tools/call", {"name": "echo"}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "test://static"}),
        ("resources/read", {"uri": "test://items/7"}),
        ("prompts/list", {}),
        ("prompts/get", {"name": "greet"}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "topic", "value": ""}}),
    ]
    async with serve(full_server()) as client:
        for method, params in calls:
            result = await client.result(method, params)
            assert result["resultType"] == "complete", method
            assert result["_meta"][SERVER_INFO] == {"name": "full", "version": "2.0.0"}, method


# --- _meta validation ---------------------------------------------------------------------------


@pytest.mark.req("META-MISSING-REQUIRED-32602")
async def test_request_without_meta_is_invalid_params():
    async with serve(bare_server()) as client:
        error = await client.error("server/discover", meta=OMIT)
    assert error["code"] == -32602
    assert PROTOCOL_VERSION in error["message"]


@pytest.mark.req("META-MISSING-REQUIRED-32602")
async def test_request_without_params_at_all_is_invalid_params():
    async with serve(bare_server()) as client:
        client.send({"jsonrpc": "2.0", "id": "no-params", "method": "server/discover"})
        response = await client.response("no-params")
    assert response["error"]["code"] == -32602


@pytest.mark.req("META-MISSING-REQUIRED-32602")
async def test_request_missing_protocol_version_is_invalid_params():
    async with serve(bare_server()) as client:
        error = await client.error("server/discover", meta=modern_meta(protocol_version=OMIT))
    assert error["code"] == -32602
    assert PROTOCOL_VERSION in error["message"]


@pytest.mark.req("META-MISSING-REQUIRED-32602")
async def test_request_missing_client_capabilities_is_invalid_params():
    async with serve(bare_server()) as client:
        error = await client.error("server/discover", meta=modern_meta(capabilities=OMIT))
    assert error["code"] == -32602
    assert CLIENT_CAPABILITIES in error["message"]


@pytest.mark.req("META-MISSING-REQUIRED-32602")
async def test_meta_with_only_client_info_is_invalid_params():
    async with serve(bare_server()) as client:
        error = await client.error("server/discover", meta=modern_meta(protocol_version=OMIT, capabilities=OMIT))
    assert error["code"] == -32602


async def test_method_routing_comes_before_meta_validation():
    # A method the server does not offer is -32601 whatever its _meta says.
    async with serve(bare_server()) as client:
        error = await client.error("tools/list", meta=OMIT)
    assert error["code"] == -32601


@pytest.mark.req("META-CLIENT-INFO-OPTIONAL")
async def test_client_info_is_optional():
    async with serve(bare_server()) as client:
        result = await client.result("server/discover", meta=modern_meta(client_info=OMIT))
    assert result["resultType"] == "complete"


@pytest.mark.req("META-MISSING-REQUIRED-32602")
@pytest.mark.parametrize(
    "meta",
    [
        pytest.param("not an object", id="meta-is-a-string"),
        pytest.param(modern_meta(protocol_version=20260728), id="version-is-a-number"),
        pytest.param(modern_meta(capabilities=[]), id="capabilities-is-an-array"),
        pytest.param(modern_meta(capabilities=None), id="capabilities-is-null"),
        pytest.param(modern_meta(client_info="me"), id="client-info-is-a-string"),
        pytest.param(modern_meta(progress_token=1.5), id="progress-token-is-a-float"),
        pytest.param(modern_meta(progress_token=True), id="progress-token-is-a-bool"),
    ],
)
async def test_mistyped_meta_is_invalid_params(meta):
    async with serve(bare_server()) as client:
        error = await client.error("server/discover", meta=meta)
    assert error["code"] == -32602


@pytest.mark.req("VER-UNSUPPORTED-32022", "BASE-CODES-DEFINED-MEANING")
async def test_unsupported_version_is_32022_naming_supported_and_requested():
    async with serve(bare_server()) as client:
        error = await client.error("server/discover", meta=modern_meta(protocol_version="v999.0.0"))
    assert error["code"] == -32022
    assert error["data"] == {"supported": [MODERN_VERSION], "requested": "v999.0.0", "initializeVersions": list(LEGACY_VERSIONS)}


@pytest.mark.req("VER-UNSUPPORTED-32022")
async def test_unsupported_version_on_a_modern_only_server_names_only_the_modern_version():
    async with serve(bare_server(modern_only=True)) as client:
        error = await client.error("server/discover", meta=modern_meta(protocol_version="1999-01-01"))
    assert error["code"] == -32022
    assert error["data"] == {"supported": [MODERN_VERSION], "requested": "1999-01-01"}


@pytest.mark.req("VER-UNSUPPORTED-32022", "VER-LEGACY-ONLY-VIA-INITIALIZE")
async def test_legacy_version_in_modern_meta_is_unsupported():
    async with serve(bare_server()) as client:
        error = await client.error("server/discover", meta=modern_meta(protocol_version="2025-11-25"))
    assert error["code"] == -32022
    assert error["data"]["requested"] == "2025-11-25"


@pytest.mark.req("VER-UNSUPPORTED-32022")
async def test_supported_versions_in_the_error_match_discover():
    async with serve(bare_server()) as client:
        discovered = await client.result("server/discover")
        error = await client.error("server/discover", meta=modern_meta(protocol_version="v9"))
    assert set(error["data"]["supported"]) <= set(discovered["supportedVersions"])
    assert error["data"]["supported"]


@pytest.mark.req("LOG-INVALID-LEVEL-32602")
@pytest.mark.parametrize("level", ["verbose", "DEBUG", 3, ""])
async def test_unrecognized_log_level_is_invalid_params(level):
    async with serve(bare_server(log_messages=True)) as client:
        error = await client.error("server/discover", meta=modern_meta(log_level=level))
    assert error["code"] == -32602
    assert LOG_LEVEL in error["message"]


@pytest.mark.req("LOG-INVALID-LEVEL-32602")
async def test_null_log_level_is_invalid_params():
    async with serve(bare_server(log_messages=True)) as client:
        error = await client.error("server/discover", meta=modern_meta(log_level=None))
    assert error["code"] == -32602


@pytest.mark.req("LOG-INVALID-LEVEL-32602")
async def test_invalid_log_level_is_rejected_even_when_log_messages_are_off():
    async with serve(bare_server()) as client:
        error = await client.error("server/discover", meta=modern_meta(log_level="loud"))
    assert error["code"] == -32602


@pytest.mark.req("BASE-ERROR-ECHOES-ID")
async def test_errors_echo_the_request_id_of_either_type():
    async with serve(bare_server()) as client:
        client.request("server/discover", id="str-id", meta=OMIT)
        client.request("server/discover", id=77, meta=OMIT)
        by_string = await client.response("str-id")
        by_number = await client.response(77)
    assert by_string["id"] == "str-id" and by_string["error"]["code"] == -32602
    assert by_number["id"] == 77 and by_number["error"]["code"] == -32602


# --- routing ------------------------------------------------------------------------------------


@pytest.mark.req("BASE-UNKNOWN-METHOD-32601")
async def test_unknown_method_is_method_not_found():
    async with serve(full_server()) as client:
        error = await client.error("unknown/method")
    assert error["code"] == -32601
    assert error["data"] == {"method": "unknown/method"}


@pytest.mark.req("BASE-UNKNOWN-METHOD-32601", "DISC-CAPABILITIES-MATCH-HANDLERS", "PROMPT-RESPECT-CAPABILITIES")
@pytest.mark.parametrize(
    "method",
    ["tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read", "prompts/list", "prompts/get", "completion/complete"],
)
async def test_method_of_a_feature_the_server_does_not_offer_is_method_not_found(method):
    async with serve(bare_server()) as client:
        error = await client.error(method)
    assert error["code"] == -32601


@pytest.mark.req("VER-REMOVED-METHODS-32601")
@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"])
async def test_legacy_only_methods_with_modern_meta_are_method_not_found(method):
    server = full_server(resource_subscriptions=True, log_messages=True)
    params = {"uri": "test://static", "level": "info", "protocolVersion": MODERN_VERSION, "capabilities": {}}
    async with serve(server) as client:
        error = await client.error(method, params)
    assert error["code"] == -32601


@pytest.mark.req("VER-MODERN-ONLY-INITIALIZE-32022")
async def test_modern_only_server_answers_legacy_initialize_with_its_versions():
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}
    async with serve(bare_server(modern_only=True)) as client:
        error = await client.error("initialize", params, meta=OMIT)
    assert error["code"] == -32022
    assert error["data"] == {"supported": [MODERN_VERSION], "requested": "2025-11-25"}
    assert "initialize" in error["message"]


async def test_modern_only_server_names_an_empty_requested_version_when_initialize_has_none():
    async with serve(bare_server(modern_only=True)) as client:
        error = await client.error("initialize", {}, meta=OMIT)
    assert error["code"] == -32022
    assert error["data"]["requested"] == ""


@pytest.mark.req("VER-ERA-PER-REQUEST", "VER-BOTH-ERAS-CONCURRENTLY")
async def test_modern_request_is_served_after_a_legacy_initialize():
    async with serve(full_server()) as client:
        init = await client.result(
            "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "o", "version": "1"}}, meta=OMIT
        )
        result = await client.result("tools/list")
    assert init["protocolVersion"] == "2025-11-25"
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO]["name"] == "full"


# --- statelessness -------------------------------------------------------------------------------


def capability_probe_server() -> Server:
    server = bare_server(log_messages=True)

    @server.tool()
    async def probe(ctx, arguments):
        """Report what this request's context says about the client."""
        ctx.log("info", "probe ran")
        return {
            "sampling": ctx.client_supports("sampling"),
            "elicitation": ctx.client_supports("elicitation"),
            "client": (ctx.client_info or {}).get("name"),
            "version": ctx.protocol_version,
            "level": ctx.log_level,
        }

    return server


@pytest.mark.req("BASE-STATELESS-PER-REQUEST-META")
async def test_capabilities_from_one_request_are_not_used_for_the_next():
    async with serve(capability_probe_server()) as client:
        first = await client.result(
            "tools/call",
            {"name": "probe"},
            meta=modern_meta(capabilities={"sampling": {}, "elicitation": {}}, client_info={"name": "first", "version": "1"}),
        )
        second = await client.result("tools/call", {"name": "probe"}, meta=modern_meta(client_info=OMIT))
    assert json.loads(first["content"][0]["text"]) == {
        "sampling": True, "elicitation": True, "client": "first", "version": MODERN_VERSION, "level": None
    }
    assert json.loads(second["content"][0]["text"]) == {
        "sampling": False, "elicitation": False, "client": None, "version": MODERN_VERSION, "level": None
    }


@pytest.mark.req("BASE-STATELESS-PER-REQUEST-META", "LOG-PER-REQUEST-LEVEL")
async def test_log_level_of_one_request_does_not_apply_to_the_next():
    async with serve(capability_probe_server()) as client:
        await client.result("tools/call", {"name": "probe"}, meta=modern_meta(log_level="debug"))
        logged_first = len(client.notifications("notifications/message"))
        await client.result("tools/call", {"name": "probe"})
        logged_after = len(client.notifications("notifications/message"))
    assert logged_first == 1
    assert logged_after == 1


@pytest.mark.req("BASE-STATELESS-PER-REQUEST-META", "BASE-STATELESS-CONCURRENT-CONVERSATIONS")
async def test_concurrent_requests_see_only_their_own_capabilities():
    server = bare_server()
    both_started = asyncio.Event()
    started = []

    @server.tool()
    async def wait_and_probe(ctx, arguments):
        """Wait for the other request, then report."""
        started.append(1)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 1)
        return {"roots": ctx.client_supports("roots")}

    async with serve(server) as client:
        with_roots = client.request("tools/call", {"name": "wait_and_probe"}, meta=modern_meta(capabilities={"roots": {}}))
        without = client.request("tools/call", {"name": "wait_and_probe"})
        a = await client.response(with_roots)
        b = await client.response(without)
    assert json.loads(a["result"]["content"][0]["text"]) == {"roots": True}
    assert json.loads(b["result"]["content"][0]["text"]) == {"roots": False}


@pytest.mark.req("META-RESERVED-KEYS-NO-ASSUMPTIONS", "VER-EXTENSION-FALLBACK")
async def test_unknown_meta_keys_and_client_extensions_are_ignored():
    meta = modern_meta(
        capabilities={"extensions": {"io.example/shiny": {"level": 3}}, "experimental": {"x": {}}},
        **{"io.modelcontextprotocol/somethingNew": {"v": 1}, "example.com/trace": "abc", "traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"},
    )
    async with serve(full_server()) as client:
        plain = await client.result("tools/list")
        extended = await client.result("tools/list", meta=meta)
    assert extended == plain


@pytest.mark.req("META-INFO-NO-BEHAVIOUR-CHANGE")
async def test_client_info_does_not_change_the_answer():
    async with serve(full_server()) as client:
        results = [
            await client.result("prompts/get", {"name": "greet"}, meta=modern_meta(client_info=info))
            for info in ({"name": "claude", "version": "1"}, {"name": "other", "version": "99", "title": "X"}, OMIT)
        ]
    assert results[0] == results[1] == results[2]


@pytest.mark.req("TOOLS-LIST-NOT-PER-CONNECTION", "PROMPT-LIST-NOT-PER-CONNECTION", "RES-LIST-NOT-PER-CONNECTION")
@pytest.mark.parametrize("method", ["tools/list", "prompts/list", "resources/list", "resources/templates/list"])
async def test_lists_depend_neither_on_earlier_requests_nor_on_the_connection(method):
    server = full_server()
    async with serve(server) as first_connection:
        before = await first_connection.result(method)
        await first_connection.result("tools/call", {"name": "echo"})
        await first_connection.result("prompts/get", {"name": "greet"})
        await first_connection.result("resources/read", {"uri": "test://items/1"})
        after = await first_connection.result(method, meta=modern_meta(capabilities={"sampling": {}, "roots": {}}))
    async with serve(server) as second_connection:
        elsewhere = await second_connection.result(method)
    assert before == after == elsewhere
