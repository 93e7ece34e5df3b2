"""Tools: registration rules, tools/list, tools/call, argument and output validation, in process.

Spec 2026-07-28: server/tools, basic/index#json-schema-usage.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import urllib.request

import pytest

from mcp_ref import Server, Tool, ToolError, ToolResult, image, resource_link, text
from mcp_ref.features.schemas import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, SchemaError

from .memory import serve

DRAFT_07 = "http://json-schema.org/draft-07/schema#"


async def noop(ctx, arguments):
    return "ok"


def server_with(*tools: Tool, **options) -> Server:
    server = Server("tools-test", "1.0.0", **options)
    for tool in tools:
        server.add_tool(tool)
    return server


def make_tool(name="t", handler=noop, **fields) -> Tool:
    return Tool(name, handler, fields.pop("description", "A test tool."), **fields)


def only_text(result) -> str:
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text", result
    return result["content"][0]["text"]


# --- registration ---------------------------------------------------------------------------------


@pytest.mark.req("TOOLS-NAME-RULES")
@pytest.mark.parametrize("name", ["a", "get_weather", "DATA-export.v2", "x" * 128, "A_b-C.9"])
def test_valid_tool_names_are_accepted(name):
    assert make_tool(name).name == name


@pytest.mark.req("TOOLS-NAME-RULES")
@pytest.mark.parametrize(
    "name",
    ["", "x" * 129, "has space", "comma,name", "slash/name", "colon:name", "émoji", "tab\tname", "new\nline"],
)
def test_invalid_tool_names_are_refused_at_registration(name):
    with pytest.raises(ValueError, match="invalid tool name"):
        make_tool(name)


@pytest.mark.req("TOOLS-NAME-RULES")
def test_non_string_tool_name_is_refused():
    with pytest.raises(ValueError, match="invalid tool name"):
        make_tool(42)


@pytest.mark.req("TOOLS-INPUT-SCHEMA-OBJECT")
@pytest.mark.parametrize(
    "schema",
    [{}, {"type": "string"}, {"type": ["object", "null"]}, {"properties": {}}, ["type", "object"], None],
)
def test_input_schema_must_be_an_object_typed_schema(schema):
    with pytest.raises(ValueError, match="inputSchema must be a JSON Schema object"):
        make_tool(input_schema=schema)


@pytest.mark.req("BASE-SCHEMA-UNSUPPORTED-DIALECT")
def test_unsupported_schema_dialect_is_refused_with_a_clear_error():
    schema = {"$schema": "https://example.com/my-dialect", "type": "object"}
    with pytest.raises(ValueError) as raised:
        make_tool("dialect", input_schema=schema)
    message = str(raised.value)
    assert "unsupported JSON Schema dialect" in message
    assert "https://example.com/my-dialect" in message
    assert "draft/2020-12" in message  # says what is supported


@pytest.mark.req("BASE-SCHEMA-UNSUPPORTED-DIALECT")
def test_unsupported_dialect_in_output_schema_is_refused():
    with pytest.raises(ValueError, match="outputSchema: unsupported JSON Schema dialect"):
        make_tool(output_schema={"$schema": "https://json-schema.org/draft-03/schema", "type": "object"})


def test_non_string_schema_dialect_is_refused():
    with pytest.raises(ValueError, match=r"\$schema must be a string"):
        make_tool(input_schema={"$schema": 7, "type": "object"})


def test_output_schema_must_be_an_object():
    with pytest.raises(ValueError, match="outputSchema must be a JSON object"):
        make_tool(output_schema=True)


@pytest.mark.req("BASE-SCHEMA-BOUNDS")
def test_too_deep_schema_is_refused_at_registration():
    schema = {"type": "object"}
    node = schema
    for _ in range(MAX_SCHEMA_DEPTH + 1):
        node["not"] = {}
        node = node["not"]
    with pytest.raises(ValueError, match="nested deeper"):
        make_tool(input_schema=schema)


@pytest.mark.req("BASE-SCHEMA-BOUNDS")
def test_too_large_schema_is_refused_at_registration():
    schema = {"type": "object", "enum": list(range(MAX_SCHEMA_NODES + 1))}
    with pytest.raises(ValueError, match="more than"):
        make_tool(input_schema=schema)


@pytest.mark.req("BASE-SCHEMA-MUST-BE-VALID")
def test_validate_definitions_rejects_a_schema_invalid_for_its_dialect():
    server = server_with(make_tool(input_schema={"type": "object", "properties": {"a": {"type": "nonsense"}}}))
    with pytest.raises(SchemaError, match="invalid schema"):
        server.validate_definitions()


def test_validate_definitions_accepts_good_schemas():
    server = server_with(make_tool(input_schema={"type": "object"}, output_schema={"type": "object"}))
    server.validate_definitions()
    tool = server.tools["t"]
    assert tool._check_arguments is not None and tool._check_output is not None


def test_decorator_defaults_name_description_and_schema():
    server = Server("s", "1")

    @server.tool()
    def my_tool(ctx, arguments):
        """First paragraph
        continues here.

        Second paragraph is not part of it."""

    tool = server.tools["my_tool"]
    assert tool.description == "First paragraph continues here."
    assert tool.input_schema == {"type": "object", "additionalProperties": False}


def test_decorator_without_docstring_leaves_description_out():
    server = Server("s", "1")

    @server.tool("named")
    async def handler(ctx, arguments):
        return None

    assert server.tools["named"].definition() == {"name": "named", "inputSchema": {"type": "object", "additionalProperties": False}}


# --- tools/list -------------------------------------------------------------------------------------


@pytest.mark.req("TOOLS-DETERMINISTIC-ORDER")
async def test_tools_list_is_in_registration_order_every_time():
    names = ["zeta", "alpha", "mid", "beta"]
    server = server_with(*(make_tool(n) for n in names))
    async with serve(server) as client:
        first = await client.result("tools/list")
        second = await client.result("tools/list")
    assert [t["name"] for t in first["tools"]] == names
    assert first["tools"] == second["tools"]


@pytest.mark.req("TOOLS-NAME-CASE-SENSITIVE")
async def test_tool_names_are_case_sensitive():
    async def upper(ctx, arguments):
        return "upper"

    server = server_with(make_tool("Echo", upper), make_tool("echo"))
    async with serve(server) as client:
        listed = await client.result("tools/list")
        result = await client.result("tools/call", {"name": "Echo"})
        missing = await client.error("tools/call", {"name": "ECHO"})
    assert [t["name"] for t in listed["tools"]] == ["Echo", "echo"]
    assert only_text(result) == "upper"
    assert missing["code"] == -32602


@pytest.mark.req("TOOLS-DETERMINISTIC-ORDER", "TOOLS-NAME-UNIQUE")
async def test_replacing_a_tool_keeps_its_position():
    server = server_with(make_tool("a"), make_tool("b"))
    server.add_tool(make_tool("a", description="Replaced."))
    async with serve(server) as client:
        result = await client.result("tools/list")
    assert [(t["name"], t["description"]) for t in result["tools"]] == [("a", "Replaced."), ("b", "A test tool.")]


@pytest.mark.req("TOOLS-LIST-MAY-CHANGE")
async def test_removed_tool_disappears_from_the_list():
    server = server_with(make_tool("a"), make_tool("b"))
    server.remove_tool("a")
    async with serve(server) as client:
        result = await client.result("tools/list")
    assert [t["name"] for t in result["tools"]] == ["b"]


@pytest.mark.req("TOOLS-DEFINITION-FIELDS")
async def test_title_icons_annotations_meta_and_schemas_are_listed_as_given():
    icons = [{"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}]
    annotations = {"readOnlyHint": True, "openWorldHint": False, "title": "Annotated"}
    input_schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    output_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    server = Server("s", "1")

    @server.tool(
        "search",
        description="Search.",
        title="Search Things",
        icons=icons,
        annotations=annotations,
        input_schema=input_schema,
        output_schema=output_schema,
        meta={"example.com/x": 1},
    )
    async def search(ctx, arguments):
        return {"n": 1}

    async with serve(server) as client:
        result = await client.result("tools/list")
    assert result["tools"] == [
        {
            "name": "search",
            "title": "Search Things",
            "description": "Search.",
            "inputSchema": input_schema,
            "outputSchema": output_schema,
            "annotations": annotations,
            "icons": icons,
            "_meta": {"example.com/x": 1},
        }
    ]


# --- tools/call: protocol errors --------------------------------------------------------------------


@pytest.mark.req("TOOLS-UNKNOWN-TOOL-32602")
async def test_unknown_tool_is_invalid_params():
    async with serve(server_with(make_tool())) as client:
        error = await client.error("tools/call", {"name": "missing", "arguments": {}})
    assert error["code"] == -32602
    assert error["data"] == {"name": "missing"}
    assert "missing" in error["message"]


@pytest.mark.req("TOOLS-MALFORMED-CALL-32602")
@pytest.mark.parametrize("params", [{}, {"name": 5}, {"name": None}])
async def test_call_without_a_string_name_is_invalid_params(params):
    async with serve(server_with(make_tool())) as client:
        error = await client.error("tools/call", params)
    assert error["code"] == -32602


@pytest.mark.req("TOOLS-MALFORMED-CALL-32602")
@pytest.mark.parametrize("arguments", [[1, 2], "text", 3, True])
async def test_non_object_arguments_are_invalid_params(arguments):
    async with serve(server_with(make_tool())) as client:
        error = await client.error("tools/call", {"name": "t", "arguments": arguments})
    assert error["code"] == -32602
    assert "arguments" in error["message"]


async def test_missing_or_null_arguments_are_an_empty_object():
    seen = []

    async def record(ctx, arguments):
        seen.append(arguments)
        return "ok"

    async with serve(server_with(make_tool(handler=record))) as client:
        await client.result("tools/call", {"name": "t"})
        await client.result("tools/call", {"name": "t", "arguments": None})
    assert seen == [{}, {}]


# --- tools/call: argument validation ---------------------------------------------------------------

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "maximum": 10}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


async def add(ctx, arguments):
    return str(arguments["a"] + arguments["b"])


@pytest.mark.req("TOOLS-INPUT-VALIDATION-IS-ERROR")
async def test_valid_arguments_reach_the_handler():
    async with serve(server_with(make_tool("add", add, input_schema=ADD_SCHEMA))) as client:
        result = await client.result("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert only_text(result) == "5"
    assert "isError" not in result


@pytest.mark.req("TOOLS-INPUT-VALIDATION-IS-ERROR", "TOOLS-VALIDATE-INPUTS")
async def test_invalid_arguments_are_a_tool_error_a_model_can_act_on():
    called = []

    async def handler(ctx, arguments):
        called.append(arguments)
        return "ran"

    async with serve(server_with(make_tool("add", handler, input_schema=ADD_SCHEMA))) as client:
        result = await client.result("tools/call", {"name": "add", "arguments": {"a": "two", "b": 11, "c": 0}})
    assert result["isError"] is True
    message = only_text(result)
    assert message.startswith("Invalid arguments for tool 'add':")
    assert "a: 'two' is not of type 'integer'" in message
    assert "b: 11 is greater than the maximum of 10" in message
    assert "'c' was unexpected" in message
    assert called == []


@pytest.mark.req("TOOLS-INPUT-VALIDATION-IS-ERROR")
async def test_missing_required_argument_names_the_property():
    async with serve(server_with(make_tool("add", add, input_schema=ADD_SCHEMA))) as client:
        result = await client.result("tools/call", {"name": "add", "arguments": {"a": 1}})
    assert result["isError"] is True
    assert "(root): 'b' is a required property" in only_text(result)


@pytest.mark.req("TOOLS-NO-PARAMS-SCHEMA")
async def test_default_schema_refuses_unexpected_arguments():
    async with serve(server_with(Tool("plain", noop, "No arguments."))) as client:
        result = await client.result("tools/call", {"name": "plain", "arguments": {"x": 1}})
    assert result["isError"] is True


@pytest.mark.req("BASE-SCHEMA-DEFAULT-2020-12", "BASE-SCHEMA-SUPPORT-2020-12")
async def test_schema_without_dialect_is_validated_as_2020_12():
    schema = {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}}}
    async with serve(server_with(make_tool("pair", input_schema=schema))) as client:
        good = await client.result("tools/call", {"name": "pair", "arguments": {"pair": [1, "x"]}})
        bad = await client.result("tools/call", {"name": "pair", "arguments": {"pair": ["x", 1]}})
    assert "isError" not in good
    assert bad["isError"] is True


@pytest.mark.req("BASE-SCHEMA-EXPLICIT-DIALECT", "BASE-SCHEMA-VALID-FOR-DIALECT")
async def test_draft_07_schema_is_accepted_and_validated_with_draft_07_rules():
    # Array-form "items" is tuple validation in draft-07 (and invalid in 2020-12).
    schema = {
        "$schema": DRAFT_07,
        "type": "object",
        "properties": {"pair": {"type": "array", "items": [{"type": "integer"}, {"type": "string"}]}},
        "required": ["pair"],
    }
    async with serve(server_with(make_tool("pair", input_schema=schema))) as client:
        listed = await client.result("tools/list")
        good = await client.result("tools/call", {"name": "pair", "arguments": {"pair": [1, "x"]}})
        bad = await client.result("tools/call", {"name": "pair", "arguments": {"pair": ["x", 1]}})
    assert listed["tools"][0]["inputSchema"]["$schema"] == DRAFT_07
    assert "isError" not in good
    assert bad["isError"] is True
    assert "pair/0: 'x' is not of type 'integer'" in only_text(bad)


@pytest.mark.req("BASE-SCHEMA-EXPLICIT-DIALECT", "BASE-SCHEMA-VALID-FOR-DIALECT")
async def test_draft_04_boolean_exclusive_maximum_is_honoured():
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "maximum": 5, "exclusiveMaximum": True}},
    }
    async with serve(server_with(make_tool("n", input_schema=schema))) as client:
        at_limit = await client.result("tools/call", {"name": "n", "arguments": {"n": 5}})
        below = await client.result("tools/call", {"name": "n", "arguments": {"n": 4.5}})
    assert at_limit["isError"] is True
    assert "isError" not in below


async def test_local_refs_resolve_inside_the_schema():
    schema = {
        "type": "object",
        "$defs": {"positive": {"type": "integer", "minimum": 1}},
        "properties": {"n": {"$ref": "#/$defs/positive"}},
    }
    async with serve(server_with(make_tool("n", input_schema=schema))) as client:
        good = await client.result("tools/call", {"name": "n", "arguments": {"n": 3}})
        bad = await client.result("tools/call", {"name": "n", "arguments": {"n": 0}})
    assert "isError" not in good
    assert bad["isError"] is True


@pytest.fixture
def no_network(monkeypatch):
    """Make any attempt to reach the network fail the test loudly."""
    attempts = []

    def explode(*args, **kwargs):
        attempts.append(args)
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(urllib.request, "urlopen", explode)
    monkeypatch.setattr(socket, "create_connection", explode)
    monkeypatch.setattr(socket.socket, "connect", explode)
    return attempts


@pytest.mark.req("BASE-SCHEMA-NO-NETWORK-REF", "BASE-SCHEMA-UNRESOLVED-REF-REJECTED")
async def test_network_ref_is_never_fetched_and_validation_fails_cleanly(no_network, caplog):
    schema = {"type": "object", "properties": {"x": {"$ref": "http://127.0.0.1:9/schema.json"}}}
    ran = []

    async def handler(ctx, arguments):
        ran.append(arguments)
        return "ran"

    async with serve(server_with(make_tool("remote", handler, input_schema=schema))) as client:
        error = await client.error("tools/call", {"name": "remote", "arguments": {"x": 1}})
    assert error["code"] == -32603
    assert "unusable inputSchema" in error["message"]
    assert ran == []
    assert no_network == []


@pytest.mark.req("BASE-SCHEMA-NO-NETWORK-REF", "BASE-SCHEMA-UNRESOLVED-REF-REJECTED")
async def test_root_network_ref_fails_every_call_instead_of_being_permissive(no_network):
    schema = {"type": "object", "$ref": "https://127.0.0.1:9/root.json"}
    async with serve(server_with(make_tool("remote", input_schema=schema))) as client:
        error = await client.error("tools/call", {"name": "remote", "arguments": {}})
    assert error["code"] == -32603
    assert no_network == []


async def test_meta_schema_ref_resolves_offline(no_network):
    # A $ref to a dialect's own meta-schema is known locally, so it works without the network.
    schema = {"type": "object", "properties": {"s": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}
    async with serve(server_with(make_tool("meta", input_schema=schema))) as client:
        good = await client.result("tools/call", {"name": "meta", "arguments": {"s": {"type": "string"}}})
        bad = await client.result("tools/call", {"name": "meta", "arguments": {"s": {"type": 12}}})
    assert "isError" not in good
    assert bad["isError"] is True
    assert no_network == []


@pytest.mark.req("BASE-SCHEMA-MUST-BE-VALID")
async def test_schema_invalid_for_its_dialect_is_an_internal_error_at_call_time():
    schema = {"type": "object", "properties": {"a": {"minimum": "zero"}}}
    async with serve(server_with(make_tool("broken", input_schema=schema))) as client:
        error = await client.error("tools/call", {"name": "broken", "arguments": {}})
    assert error["code"] == -32603
    assert "unusable inputSchema" in error["message"]


async def test_format_keywords_are_checked():
    schema = {"type": "object", "properties": {"when": {"type": "string", "format": "date"}}}
    async with serve(server_with(make_tool("fmt", input_schema=schema))) as client:
        good = await client.result("tools/call", {"name": "fmt", "arguments": {"when": "2026-07-28"}})
        bad = await client.result("tools/call", {"name": "fmt", "arguments": {"when": "yesterday"}})
    assert "isError" not in good
    assert bad["isError"] is True


# --- tools/call: execution errors and faults --------------------------------------------------------


@pytest.mark.req("TOOLS-EXECUTION-ERROR-IS-ERROR")
async def test_tool_error_becomes_an_is_error_result():
    async def failing(ctx, arguments):
        raise ToolError("the upstream API returned 503; try again later")

    async with serve(server_with(make_tool("f", failing))) as client:
        result = await client.result("tools/call", {"name": "f"})
    assert result["isError"] is True
    assert only_text(result) == "the upstream API returned 503; try again later"


@pytest.mark.req("TOOLS-EXECUTION-ERROR-IS-ERROR")
async def test_tool_error_without_a_message_names_its_class():
    class QuotaExceeded(ToolError):
        pass

    async def failing(ctx, arguments):
        raise QuotaExceeded()

    async with serve(server_with(make_tool("f", failing))) as client:
        result = await client.result("tools/call", {"name": "f"})
    assert result["isError"] is True
    assert only_text(result) == "QuotaExceeded"


@pytest.mark.req("TOOLS-EXECUTION-ERROR-IS-ERROR", "TOOLS-ERRORS-IN-RESULT")
async def test_an_unexpected_exception_is_a_tool_error_result_with_a_generic_message(caplog):
    async def crashing(ctx, arguments):
        raise KeyError("secret-api-key-123")

    caplog.set_level(logging.ERROR, logger="mcp_ref")
    async with serve(server_with(make_tool("crash", crashing))) as client:
        result = await client.result("tools/call", {"name": "crash"})
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "Tool 'crash' failed with an internal error; the details are in the server's log."}]
    assert "secret" not in json.dumps(result)
    assert "secret-api-key-123" in caplog.text and any(r.exc_info for r in caplog.records)


@pytest.mark.req("TOOLS-EXECUTION-ERROR-IS-ERROR", "TOOLS-ERRORS-IN-RESULT")
async def test_an_exception_in_a_sync_handler_is_a_tool_error_result_too(caplog):
    def crashing(ctx, arguments):
        raise RuntimeError("disk path /home/user/private")

    async with serve(server_with(make_tool("crash", crashing))) as client:
        result = await client.result("tools/call", {"name": "crash"})
    assert result["isError"] is True
    assert "/home/user" not in json.dumps(result)


@pytest.mark.req("TOOLS-RESULT-CONTENT-SHAPES")
async def test_returning_bytes_is_an_internal_error():
    async def raw(ctx, arguments):
        return b"\x89PNG"

    async with serve(server_with(make_tool("raw", raw))) as client:
        error = await client.error("tools/call", {"name": "raw"})
    assert error["code"] == -32603


# --- tools/call: structured output -------------------------------------------------------------------

WEATHER_OUT = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
    "required": ["temperature", "conditions"],
}


@pytest.mark.req("TOOLS-OUTPUT-SCHEMA-CONFORMS", "TOOLS-STRUCTURED-CONTENT-TEXT-MIRROR")
async def test_structured_output_is_validated_and_mirrored_as_text():
    async def weather(ctx, arguments):
        return {"temperature": 22.5, "conditions": "Partly cloudy, 20% chance of rain"}

    async with serve(server_with(make_tool("weather", weather, output_schema=WEATHER_OUT))) as client:
        result = await client.result("tools/call", {"name": "weather"})
    assert result["structuredContent"] == {"temperature": 22.5, "conditions": "Partly cloudy, 20% chance of rain"}
    assert json.loads(only_text(result)) == result["structuredContent"]


@pytest.mark.req("TOOLS-STRUCTURED-CONTENT-TEXT-MIRROR")
async def test_text_mirror_keeps_non_ascii_characters():
    async def greet(ctx, arguments):
        return {"temperature": -3, "conditions": "Schnee ❄"}

    async with serve(server_with(make_tool("greet", greet, output_schema=WEATHER_OUT))) as client:
        result = await client.result("tools/call", {"name": "greet"})
    assert "Schnee ❄" in only_text(result)


@pytest.mark.req("TOOLS-OUTPUT-SCHEMA-CONFORMS")
async def test_structured_output_that_violates_the_schema_is_internal_error():
    async def weather(ctx, arguments):
        return {"temperature": "warm"}

    async with serve(server_with(make_tool("weather", weather, output_schema=WEATHER_OUT))) as client:
        error = await client.error("tools/call", {"name": "weather"})
    assert error["code"] == -32603
    assert "outputSchema" in error["message"]
    assert any("temperature" in problem for problem in error["data"]["errors"])
    assert any("conditions" in problem for problem in error["data"]["errors"])


@pytest.mark.req("TOOLS-OUTPUT-SCHEMA-CONFORMS")
async def test_structured_content_may_be_any_json_value_the_schema_allows():
    async def numbers(ctx, arguments):
        return [3, 1, 2]

    schema = {"type": "array", "items": {"type": "integer"}}
    async with serve(server_with(make_tool("nums", numbers, output_schema=schema))) as client:
        result = await client.result("tools/call", {"name": "nums"})
    assert result["structuredContent"] == [3, 1, 2]
    assert json.loads(only_text(result)) == [3, 1, 2]


async def test_tool_result_keeps_its_own_content_beside_structured_content():
    async def weather(ctx, arguments):
        return ToolResult([text("22.5 degrees, cloudy")], {"temperature": 22.5, "conditions": "cloudy"})

    async with serve(server_with(make_tool("weather", weather, output_schema=WEATHER_OUT))) as client:
        result = await client.result("tools/call", {"name": "weather"})
    assert only_text(result) == "22.5 degrees, cloudy"
    assert result["structuredContent"]["temperature"] == 22.5


async def test_error_result_skips_output_schema_validation():
    async def weather(ctx, arguments):
        return ToolResult([text("station offline")], {"reason": "offline"}, is_error=True)

    async with serve(server_with(make_tool("weather", weather, output_schema=WEATHER_OUT))) as client:
        result = await client.result("tools/call", {"name": "weather"})
    assert result["isError"] is True
    assert result["structuredContent"] == {"reason": "offline"}


@pytest.mark.req("TOOLS-OUTPUT-SCHEMA-CONFORMS")
async def test_tool_with_output_schema_must_not_answer_without_structured_content():
    async def wrong(ctx, arguments):
        return "22 degrees"

    async with serve(server_with(make_tool("weather", wrong, output_schema=WEATHER_OUT))) as client:
        response = await client.call("tools/call", {"name": "weather"})
    assert "structuredContent" in response.get("result", {}) or response.get("error", {}).get("code") == -32603


# --- return conventions --------------------------------------------------------------------------------


@pytest.mark.req("TOOLS-RESULT-CONTENT-SHAPES")
@pytest.mark.parametrize(
    "value, content",
    [
        pytest.param("plain", [{"type": "text", "text": "plain"}], id="str"),
        pytest.param(text("block"), [{"type": "text", "text": "block"}], id="one-block"),
        pytest.param(
            [text("one"), resource_link("test://r", "r")],
            [{"type": "text", "text": "one"}, {"type": "resource_link", "uri": "test://r", "name": "r"}],
            id="list-of-blocks",
        ),
        pytest.param(ToolResult([text("full")]), [{"type": "text", "text": "full"}], id="tool-result"),
        pytest.param({"answer": 42}, [{"type": "text", "text": '{"answer": 42}'}], id="json-object"),
        pytest.param([1, 2], [{"type": "text", "text": "[1, 2]"}], id="json-array"),
        pytest.param([], [{"type": "text", "text": "[]"}], id="empty-list"),
        pytest.param(7, [{"type": "text", "text": "7"}], id="json-number"),
        pytest.param(None, [], id="none"),
    ],
)
async def test_return_conventions(value, content):
    async def handler(ctx, arguments):
        return value

    async with serve(server_with(make_tool("r", handler))) as client:
        result = await client.result("tools/call", {"name": "r"})
    assert result["content"] == content
    assert "structuredContent" not in result


async def test_image_content_is_base64_in_the_result():
    async def picture(ctx, arguments):
        return image(b"\x89PNG\r\n", "image/png")

    async with serve(server_with(make_tool("pic", picture))) as client:
        result = await client.result("tools/call", {"name": "pic"})
    assert result["content"] == [{"type": "image", "data": "iVBORw0K", "mimeType": "image/png"}]


@pytest.mark.req("BASE-INTERNAL-ERROR-SAFE-MESSAGE")
async def test_unserializable_result_is_internal_error_and_the_server_keeps_serving(caplog):
    async def odd(ctx, arguments):
        return ToolResult([{"type": "text", "text": "x", "extra": {1, 2}}])

    async with serve(server_with(make_tool("odd", odd), make_tool("fine"))) as client:
        error = await client.error("tools/call", {"name": "odd"})
        fine = await client.result("tools/call", {"name": "fine"})
    assert error["code"] == -32603
    assert "could not be encoded" in error["message"]
    assert only_text(fine) == "ok"
    assert "not JSON-serializable" in caplog.text


# --- handlers --------------------------------------------------------------------------------------


async def test_sync_handlers_run_off_the_event_loop_thread():
    loop_thread = threading.get_ident()
    seen = {}

    def blocking(ctx, arguments):
        seen["thread"] = threading.get_ident()
        seen["name"] = threading.current_thread().name
        return "done"

    async with serve(server_with(make_tool("sync", blocking))) as client:
        result = await client.result("tools/call", {"name": "sync"})
    assert only_text(result) == "done"
    assert seen["thread"] != loop_thread
    assert seen["name"].startswith("mcp-ref-handler")


async def test_a_blocking_sync_handler_does_not_stall_other_requests():
    release = threading.Event()

    def blocking(ctx, arguments):
        release.wait(2)
        return "slow"

    async with serve(server_with(make_tool("slow", blocking), make_tool("fast"))) as client:
        slow = client.request("tools/call", {"name": "slow"})
        fast = await client.result("tools/call", {"name": "fast"})
        assert client.responses(slow) == []
        release.set()
        slow_response = await client.response(slow)
    assert only_text(fast) == "ok"
    assert only_text(slow_response["result"]) == "slow"


async def test_coroutine_handlers_run_on_the_loop():
    seen = {}

    async def on_loop(ctx, arguments):
        seen["loop"] = asyncio.get_running_loop()
        return "x"

    async with serve(server_with(make_tool("c", on_loop))) as client:
        await client.result("tools/call", {"name": "c"})
        assert seen["loop"] is asyncio.get_running_loop()


async def test_handler_receives_the_validated_arguments_and_its_request_context():
    seen = {}

    async def handler(ctx, arguments):
        seen.update(arguments=arguments, method=ctx.method, era=ctx.era, request_id=ctx.request_id)
        return "x"

    async with serve(server_with(make_tool("h", handler, input_schema={"type": "object"}))) as client:
        client.request("tools/call", {"name": "h", "arguments": {"k": [1]}}, id="req-9")
        await client.response("req-9")
    assert seen == {"arguments": {"k": [1]}, "method": "tools/call", "era": "modern", "request_id": "req-9"}


@pytest.mark.req("SUB-ONLY-REQUESTED-TYPES")
async def test_tool_list_changes_reach_no_modern_client_without_a_subscription():
    server = server_with(make_tool("a"), list_changed=["tools"])
    async with serve(server) as client:
        await client.result("tools/list")
        server.add_tool(make_tool("b"))
        server.remove_tool("a")
        server.notify_list_changed("tools")
        await client.settle()
        listed = await client.result("tools/list")
    assert [t["name"] for t in listed["tools"]] == ["b"]
    assert client.notifications() == []
