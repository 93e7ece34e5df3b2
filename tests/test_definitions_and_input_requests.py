"""What the server publishes and what it asks: registration-time checks of definitions, and the
checks on the input requests a handler sends the client (MRTR), in process.

Spec 2026-07-28: basic/index#meta, basic/index#schema-validation, server/tools#x-mcp-header,
server/resources#custom-uri-schemes, basic/patterns/mrtr, client/elicitation, client/sampling,
server/utilities/logging.
"""

from __future__ import annotations

import pytest

from mcp_ref import (
    InputRequired,
    Prompt,
    Resource,
    ResourceTemplate,
    Server,
    Tool,
    elicit_form,
    elicit_url,
    sample,
)
from mcp_ref.features.mrtr import check_input_request

from .memory import modern_meta, serve


async def noop(ctx, arguments):
    return "ok"


def tool_with_schema(schema, name="t", **fields) -> Tool:
    return Tool(name, noop, "A test tool.", schema, **fields)


def header_schema(**properties) -> dict:
    return {"type": "object", "properties": properties}


TEXT = {"type": "text", "text": "hi"}
FORM = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}


# --- _meta keys supplied by the server author -------------------------------------------------------


@pytest.mark.req("META-KEY-PREFIX-FORMAT", "META-KEY-NAME-FORMAT")
@pytest.mark.parametrize("key", ["com.example/x", "com.example-app.v2/feature_flag", "plain", "a", "io.modelcontextprotocol/ui", ""])
def test_well_formed_meta_keys_are_accepted_on_every_definition(key):
    meta = {key: True}
    tool_with_schema({"type": "object"}, meta=meta)
    Resource("test://r", "r", noop, meta=meta)
    ResourceTemplate("test://t/{id}", "t", noop, meta=meta)
    Prompt("p", noop, meta=meta)


@pytest.mark.req("META-KEY-PREFIX-FORMAT", "META-KEY-NAME-FORMAT")
@pytest.mark.parametrize(
    "key", ["1com.example/x", "com.example-/x", "com..example/x", "com.example/-x", "com.example/x_", "a b", "com.example/x/y", "/x"]
)
def test_malformed_meta_keys_are_refused_at_registration(key):
    for build in (
        lambda: tool_with_schema({"type": "object"}, meta={key: 1}),
        lambda: Resource("test://r", "r", noop, meta={key: 1}),
        lambda: ResourceTemplate("test://t/{id}", "t", noop, meta={key: 1}),
        lambda: Prompt("p", noop, meta={key: 1}),
    ):
        with pytest.raises(ValueError, match="_meta key"):
            build()


# --- x-mcp-header annotations ---------------------------------------------------------------------------


@pytest.mark.req("TOOLS-X-MCP-HEADER-CONSTRAINTS")
def test_header_annotations_on_reachable_primitive_properties_are_accepted():
    tool_with_schema(
        header_schema(
            region={"type": "string", "x-mcp-header": "Region"},
            count={"type": "integer", "x-mcp-header": "Count"},
            dry={"type": "boolean", "x-mcp-header": "Dry-Run"},
            nested={"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
        )
    )


@pytest.mark.req("TOOLS-X-MCP-HEADER-CONSTRAINTS")
@pytest.mark.parametrize(
    "schema, problem",
    [
        (header_schema(a={"type": "string", "x-mcp-header": ""}), "HTTP token"),
        (header_schema(a={"type": "string", "x-mcp-header": "Has Space"}), "HTTP token"),
        (header_schema(a={"type": "string", "x-mcp-header": "Line\nBreak"}), "HTTP token"),
        (header_schema(a={"type": "number", "x-mcp-header": "Price"}), "string, integer and boolean"),
        (header_schema(a={"type": "object", "x-mcp-header": "Obj"}), "string, integer and boolean"),
        (header_schema(a={"type": "integer", "maximum": 2**60, "x-mcp-header": "Big"}), "2\\*\\*53"),
        (
            header_schema(a={"type": "string", "x-mcp-header": "Region"}, b={"type": "string", "x-mcp-header": "REGION"}),
            "repeats",
        ),
        (header_schema(a={"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}), "reachable"),
        ({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}, "reachable"),
        ({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}, "reachable"),
        ({"type": "object", "x-mcp-header": "Root"}, "reachable"),
    ],
)
def test_header_annotations_that_http_clients_would_reject_are_refused_at_registration(schema, problem):
    with pytest.raises(ValueError, match=problem):
        tool_with_schema(schema)


# --- resource URIs ---------------------------------------------------------------------------------------


@pytest.mark.req("RES-CUSTOM-SCHEME-RFC3986", "RES-VALIDATE-URIS")
@pytest.mark.parametrize("uri", ["test://static-text", "file:///tmp/a%20b.txt", "urn:isbn:0451450523", "git://host/repo.git#main"])
def test_absolute_uris_are_accepted(uri):
    Resource(uri, "r", noop)


@pytest.mark.req("RES-CUSTOM-SCHEME-RFC3986", "RES-VALIDATE-URIS")
@pytest.mark.parametrize("uri", ["no-scheme", "/abs/path", "1http://x", "test://a b", "test://tab\there", "", "test://é"])
def test_uris_that_are_not_absolute_rfc3986_uris_are_refused(uri):
    with pytest.raises(ValueError, match="absolute URI"):
        Resource(uri, "r", noop)


@pytest.mark.req("RES-CUSTOM-SCHEME-RFC3986")
def test_resource_template_needs_a_scheme_too():
    ResourceTemplate("test://template/{id}/data", "t", noop)
    with pytest.raises(ValueError, match="absolute URI"):
        ResourceTemplate("{path}", "t", noop)


# --- published schemas are valid --------------------------------------------------------------------


@pytest.mark.req("BASE-SCHEMA-MUST-BE-VALID")
async def test_a_tool_whose_schema_is_invalid_for_its_dialect_is_never_listed():
    server = Server("defs", "1")
    server.add_tool(tool_with_schema({"type": "object", "properties": {"a": {"type": "no-such-type"}}}, name="broken"))
    async with serve(server) as client:
        error = await client.error("tools/list")
    assert error["code"] == -32603
    assert "broken" in error["message"]


@pytest.mark.req("BASE-SCHEMA-MUST-BE-VALID")
async def test_valid_schemas_are_listed_verbatim():
    schema = {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}, "required": ["a"]}
    server = Server("defs", "1")
    server.add_tool(tool_with_schema(schema))
    async with serve(server) as client:
        result = await client.result("tools/list")
    assert result["tools"][0]["inputSchema"] == schema


# --- elicitation requests ---------------------------------------------------------------------------


@pytest.mark.req("ELIC-REQUIRED-PARAMS", "ELIC-FORM-FIELDS")
def test_form_elicitation_always_carries_mode_message_and_a_flat_schema():
    request = elicit_form("Your name?", FORM)
    assert request == {"method": "elicitation/create", "params": {"mode": "form", "message": "Your name?", "requestedSchema": FORM}}


@pytest.mark.req("ELIC-FORM-FIELDS")
@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array"},
        {"type": "object"},
        {"type": "object", "properties": {"nested": {"type": "object", "properties": {}}}},
        {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["missing"]},
        {"type": "object", "properties": {"n": "string"}},
    ],
)
def test_form_elicitation_with_a_schema_that_is_not_flat_and_primitive_is_refused(schema):
    with pytest.raises(ValueError):
        elicit_form("Question?", schema)


@pytest.mark.req("ELIC-FORM-FIELDS")
def test_multi_select_enum_arrays_are_allowed_in_forms():
    elicit_form("Pick", {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["a", "b"]}}}})


@pytest.mark.req("ELIC-REQUIRED-PARAMS", "ELIC-URL-VALID")
@pytest.mark.parametrize("url", ["https://example.com/connect?session=1", "http://localhost:8080/", "mailto:help@example.com"])
def test_url_elicitation_accepts_absolute_urls(url):
    assert elicit_url("Open this page", url)["params"] == {"mode": "url", "message": "Open this page", "url": url}


@pytest.mark.req("ELIC-URL-VALID")
@pytest.mark.parametrize("url", ["", "example.com/path", "https://", "/relative", "not a url"])
def test_url_elicitation_refuses_anything_but_a_valid_url(url):
    with pytest.raises(ValueError, match="URL"):
        elicit_url("Open this page", url)


@pytest.mark.req("ELIC-REQUIRED-PARAMS")
def test_an_elicitation_without_a_message_is_refused():
    with pytest.raises(ValueError, match="message"):
        check_input_request({"method": "elicitation/create", "params": {"mode": "form", "requestedSchema": FORM}})


# --- sampling requests -------------------------------------------------------------------------------


def tool_use(tool_id):
    return {"type": "tool_use", "id": tool_id, "name": "lookup", "input": {}}


def tool_result(tool_id):
    return {"type": "tool_result", "toolUseId": tool_id, "content": [TEXT]}


@pytest.mark.req("SAMP-TOOL-USE-BALANCE", "SAMP-TOOL-RESULT-ONLY", "SAMP-TOOL-USE-RESPONSE", "SAMP-MESSAGE-ROLE-CONTENT")
def test_a_tool_loop_with_every_use_answered_is_a_valid_sampling_request():
    sample(
        [
            {"role": "user", "content": TEXT},
            {"role": "assistant", "content": [tool_use("1"), tool_use("2")]},
            {"role": "user", "content": [tool_result("1"), tool_result("2")]},
        ],
        100,
        tools=[{"name": "lookup", "inputSchema": {"type": "object"}}],
    )


@pytest.mark.req("SAMP-TOOL-RESULT-ONLY")
def test_a_user_message_mixing_tool_results_with_text_is_refused():
    with pytest.raises(ValueError, match="tool results"):
        sample(
            [
                {"role": "assistant", "content": [tool_use("1")]},
                {"role": "user", "content": [tool_result("1"), TEXT]},
            ],
            100,
        )


@pytest.mark.req("SAMP-TOOL-USE-BALANCE", "SAMP-TOOL-USE-RESPONSE")
@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "assistant", "content": [tool_use("1")]}, {"role": "user", "content": TEXT}],
        [{"role": "assistant", "content": [tool_use("1"), tool_use("2")]}, {"role": "user", "content": [tool_result("1")]}],
        [{"role": "assistant", "content": [tool_use("1")]}],
        [{"role": "user", "content": [tool_result("9")]}],
        [{"role": "user", "content": [tool_use("1")]}],
    ],
)
def test_tool_uses_without_matching_results_are_refused(messages):
    with pytest.raises(ValueError):
        sample(messages, 100)


@pytest.mark.req("SAMP-MESSAGE-ROLE-CONTENT")
@pytest.mark.parametrize(
    "messages, max_tokens",
    [
        ([{"role": "system", "content": TEXT}], 10),
        ([{"role": "user"}], 10),
        ([{"role": "user", "content": "bare string"}], 10),
        ([], 10),
        ([{"role": "user", "content": TEXT}], 0),
        ([{"role": "user", "content": TEXT}], True),
    ],
)
def test_sampling_messages_need_a_role_content_and_a_token_budget(messages, max_tokens):
    with pytest.raises(ValueError):
        sample(messages, max_tokens)


@pytest.mark.req("SAMP-INCLUDE-CONTEXT-CAPABILITY")
async def test_include_context_is_asked_only_of_clients_declaring_sampling_context():
    server = Server("samp", "1")

    @server.tool(description="asks with context")
    async def contextual(ctx, args):
        ctx.ask("q", sample([{"role": "user", "content": TEXT}], 10, includeContext="thisServer"))

    async with serve(server) as client:
        error = await client.error("tools/call", {"name": "contextual"}, meta=modern_meta(capabilities={"sampling": {}}))
        interim = await client.result(
            "tools/call", {"name": "contextual"}, meta=modern_meta(capabilities={"sampling": {"context": {}}})
        )
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"sampling": {"context": {}}}}
    assert interim["resultType"] == "input_required"


# --- hand-built input requests --------------------------------------------------------------------------


@pytest.mark.req("MRTR-INPUT-REQUEST-KINDS")
@pytest.mark.parametrize(
    "input_request",
    [
        {"method": "ping"},
        {"method": "elicitation/create", "params": {"message": "no schema"}},
        {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
        "not a dict",
    ],
)
async def test_a_malformed_hand_built_input_request_is_an_internal_error_not_silence(input_request):
    server = Server("mrtr", "1")

    @server.tool(description="asks badly")
    async def bad(ctx, args):
        raise InputRequired({"k": input_request})

    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    async with serve(server) as client:
        error = await client.error("tools/call", {"name": "bad"}, meta=modern_meta(capabilities=caps))
    assert error["code"] == -32603


# --- elicitation answers ----------------------------------------------------------------------------


def asking_server() -> Server:
    server = Server("answers", "1")

    @server.tool(description="asks for a form")
    async def form(ctx, args):
        answer = ctx.ask("who", elicit_form("Who?", FORM))
        return f"{answer['action']}:{answer.get('content')}"

    return server


@pytest.mark.req("ELIC-VALIDATE-RESPONSE-SCHEMA")
@pytest.mark.parametrize(
    "content",
    [{"age": 3}, {"name": 5}, {"name": "Ada", "age": "three"}],
)
async def test_accepted_form_content_that_breaks_the_requested_schema_is_invalid_params(content):
    meta = modern_meta(capabilities={"elicitation": {}})
    async with serve(asking_server()) as client:
        error = await client.error(
            "tools/call", {"name": "form", "inputResponses": {"who": {"action": "accept", "content": content}}}, meta=meta
        )
    assert error["code"] == -32602
    assert error["data"] == {"key": "who"}


@pytest.mark.req("ELIC-VALIDATE-RESPONSE-SCHEMA")
@pytest.mark.parametrize(
    "answer, text",
    [
        ({"action": "accept", "content": {"name": "Ada", "age": 36}}, "accept:{'name': 'Ada', 'age': 36}"),
        ({"action": "decline"}, "decline:None"),
        ({"action": "cancel"}, "cancel:None"),
    ],
)
async def test_conforming_accepts_and_declines_reach_the_handler(answer, text):
    meta = modern_meta(capabilities={"elicitation": {}})
    async with serve(asking_server()) as client:
        result = await client.result("tools/call", {"name": "form", "inputResponses": {"who": answer}}, meta=meta)
    assert result["content"] == [{"type": "text", "text": text}]


# --- log notifications are rate limited -------------------------------------------------------------


@pytest.mark.req("LOG-RATE-LIMIT")
async def test_a_flood_of_log_messages_is_cut_to_the_per_request_rate():
    from mcp_ref.core.context import LOG_MESSAGES_PER_SECOND

    server = Server("logs", "1", log_messages=True)

    @server.tool(description="logs a lot")
    async def chatty(ctx, args):
        sent = sum(ctx.log("info", {"n": n}) for n in range(10 * LOG_MESSAGES_PER_SECOND))
        return str(sent)

    async with serve(server) as client:
        result = await client.result("tools/call", {"name": "chatty"}, meta=modern_meta(log_level="debug"))
        notifications = client.notifications("notifications/message")
    sent = int(result["content"][0]["text"])
    assert LOG_MESSAGES_PER_SECOND <= sent < 2 * LOG_MESSAGES_PER_SECOND
    assert len(notifications) == sent


# --- what handlers return is checked before it reaches the wire -----------------------------------

PNG_BASE64 = "iVBORw0KGgo="


def output_server(tool_value=None, prompt_value=None, resource_value=None) -> Server:
    server = Server("outputs", "1")

    @server.tool(description="returns what the test says")
    async def emit(ctx, args):
        return tool_value

    @server.prompt(description="returns what the test says")
    async def shaped(ctx, args):
        return prompt_value

    @server.resource("test://shaped", description="returns what the test says")
    async def read(ctx):
        return resource_value

    return server


MALFORMED_BLOCKS = [
    {"type": "image", "data": b"raw bytes".hex() + "!", "mimeType": "image/png"},
    {"type": "image", "data": PNG_BASE64},
    {"type": "audio", "data": PNG_BASE64, "mimeType": "wav"},
    {"type": "image", "data": "abc", "mimeType": "image/png"},
    {"type": "resource", "resource": {"uri": "test://x", "text": "a", "blob": PNG_BASE64}},
    {"type": "resource", "resource": {"uri": "test://x", "blob": "not base64!"}},
    {"type": "resource", "resource": {"text": "no uri"}},
    {"type": "resource_link", "uri": "test://x"},
    {"type": "video", "data": PNG_BASE64},
]


@pytest.mark.req("PROMPT-IMAGE-BASE64", "PROMPT-AUDIO-BASE64", "PROMPT-EMBEDDED-RESOURCE-FIELDS", "PROMPT-VALIDATE-INPUTS-OUTPUTS")
@pytest.mark.parametrize("block", MALFORMED_BLOCKS)
async def test_a_prompt_message_with_a_malformed_block_is_an_internal_error(block):
    async with serve(output_server(prompt_value=[{"role": "user", "content": block}])) as client:
        error = await client.error("prompts/get", {"name": "shaped"})
    assert error["code"] == -32603


@pytest.mark.req("TOOLS-SANITIZE-OUTPUTS")
@pytest.mark.parametrize("block", MALFORMED_BLOCKS)
async def test_a_tool_result_with_a_malformed_block_is_an_internal_error(block):
    async with serve(output_server(tool_value=[{"type": "text", "text": "fine"}, block])) as client:
        error = await client.error("tools/call", {"name": "emit"})
    assert error["code"] == -32603


@pytest.mark.req("RES-READ-BLOB-BASE64")
@pytest.mark.parametrize(
    "contents",
    [{"uri": "test://shaped", "blob": "raw\x00bytes"}, {"uri": "test://shaped", "blob": "QUJD", "mimeType": "no-subtype"}],
)
async def test_hand_built_resource_contents_must_be_well_formed(contents):
    async with serve(output_server(resource_value=contents)) as client:
        error = await client.error("resources/read", {"uri": "test://shaped"})
    assert error["code"] == -32603


@pytest.mark.req("PROMPT-IMAGE-BASE64", "PROMPT-EMBEDDED-RESOURCE-FIELDS", "TOOLS-SANITIZE-OUTPUTS")
async def test_blocks_built_with_the_content_helpers_pass_the_checks():
    from mcp_ref import audio, blob_resource, embedded_resource, image, resource_link, text

    blocks = [
        text("t"),
        image(b"\x89PNG", "image/png"),
        audio(b"RIFF", "audio/wav; codecs=1"),
        embedded_resource(blob_resource("test://b", b"\x00\x01")),
        resource_link("test://l", "l"),
    ]
    messages = [{"role": "user", "content": block} for block in blocks]
    async with serve(output_server(tool_value=blocks, prompt_value=messages)) as client:
        tool = await client.result("tools/call", {"name": "emit"})
        prompt = await client.result("prompts/get", {"name": "shaped"})
    assert tool["content"] == blocks
    assert [m["content"] for m in prompt["messages"]] == blocks
