"""The "everything" server: every feature of ``mcp_ref`` in one small handler each.

It is two things at once:

* the fixture the official MCP conformance suite drives (its tools, prompts and resources carry
  exactly the names the suite's reference fixture uses, and behave as its scenarios expect), and
* the worked answer to "how do I do X with mcp_ref". Each section below is one feature; each
  handler shows one way of doing it, using nothing but the public API (``from mcp_ref import ...``).

Handlers receive ``ctx`` (a :class:`mcp_ref.RequestContext`, scoped to one request) and, for
tools and prompts, the already validated ``arguments``. They return plain values (a ``str``, a
content block, a list of blocks, a dict for structured output...) and the library shapes the
result, adds ``resultType``, caching hints and ``serverInfo``, and writes it to stdout.

Sections: content tools, errors, progress and logging, client capabilities, multi round-trip
requests (MRTR), tasks, list changes and subscriptions, schemas, extra tool features; then
resources, prompts and completion, in ``resources_and_prompts`` (imported at the end, so they are
registered after the tools).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Annotated, Any, Literal, TypedDict

from mcp_ref import (
    CacheHint,
    InputRequired,
    InternalError,
    MissingRequiredClientCapability,
    Prompt,
    RequestContext,
    Server,
    Tool,
    ToolError,
    ToolResult,
    audio,
    elicit_form,
    elicit_url,
    embedded_resource,
    image,
    list_roots,
    prompt_message,
    resource_link,
    sample,
    text,
    text_resource,
)

from .media import PNG_PIXEL, WAV_TONE

Arguments = dict[str, Any]

server = Server(
    "mcp-ref-everything",
    "0.1.0",
    title="mcp-ref everything server",
    instructions="A demonstration server: every tool, prompt and resource exercises one MCP feature.",
    # Announce tools/prompts/resources list changes on subscriptions/listen streams.
    list_changed=True,
    # Send notifications/resources/updated to streams subscribed to a resource URI.
    resource_subscriptions=True,
    # Let ctx.log reach clients that ask for it (request _meta logLevel).
    log_messages=True,
    # The template list never changes: let clients (and shared caches) keep it for 5 minutes.
    cache_hints={"resources/templates/list": CacheHint(300_000, "public")},
)


def _form(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    """An elicitation asking for one required field of a primitive type."""
    return elicit_form(message, {"type": "object", "properties": {field: {"type": kind}}, "required": [field]})


def _accepted(answer: dict[str, Any]) -> dict[str, Any]:
    """The form content of an accepted elicitation (``ElicitResult``); empty if declined or cancelled."""
    content = answer.get("content") if answer.get("action") == "accept" else None
    return content if isinstance(content, dict) else {}


def _sampled_text(answer: dict[str, Any]) -> str:
    """The text of a sampling answer (``CreateMessageResult``), whose content is one block or a list."""
    content = answer["content"]
    blocks = content if isinstance(content, list) else [content]
    return " ".join(block.get("text", "") for block in blocks if block.get("type") == "text")


# === Content tools: what a tool result can carry ====================================================
# Registered first: test_simple_text leads tools/list and works with no arguments at all.


@server.tool(description="Returns one text content block.")
async def test_simple_text(ctx: RequestContext, args: Arguments) -> str:
    # A plain string becomes a single text block.
    return "This is a simple text response for testing."


@server.tool(description="Returns an image content block (a 1x1 PNG, base64-encoded).")
async def test_image_content(ctx: RequestContext, args: Arguments) -> dict[str, Any]:
    # image() takes raw bytes and does the base64 encoding.
    return image(PNG_PIXEL, "image/png")


@server.tool(description="Returns an audio content block (a 50 ms WAV tone, base64-encoded).")
async def test_audio_content(ctx: RequestContext, args: Arguments) -> dict[str, Any]:
    return audio(WAV_TONE, "audio/wav")


@server.tool(description="Returns an embedded text resource.")
async def test_embedded_resource(ctx: RequestContext, args: Arguments) -> dict[str, Any]:
    return embedded_resource(text_resource("test://embedded-resource", "This is an embedded resource content."))


@server.tool(description="Returns text, an image and an embedded JSON resource in one result.")
async def test_multiple_content_types(ctx: RequestContext, args: Arguments) -> list[dict[str, Any]]:
    # A list of content blocks is sent as is, in order.
    return [
        text("Multiple content types test:"),
        image(PNG_PIXEL, "image/png"),
        embedded_resource(
            text_resource("test://mixed-content-resource", json.dumps({"test": "data", "value": 123}), "application/json")
        ),
    ]


# === Errors ==========================================================================================


@server.tool(description="Fails on purpose with a tool execution error (isError: true), not a protocol error.")
async def test_error_handling(ctx: RequestContext, args: Arguments) -> str:
    # ToolError becomes a result the model can read; any other exception would be -32603.
    raise ToolError("This tool intentionally returns an error for testing")


# === Progress and logging ============================================================================


@server.tool(description="Reports progress 0, 50 and 100 of 100, about 50 ms apart, then returns.")
async def test_tool_with_progress(ctx: RequestContext, args: Arguments) -> str:
    # report_progress is a no-op unless the request carried _meta.progressToken.
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await asyncio.sleep(0.05)
        ctx.report_progress(progress, total=100, message=f"Completed step {progress} of 100")
    return f"Progress reported with token {ctx.progress_token!r}"


@server.tool(description="Logs a message; it reaches the client only if the request set _meta logLevel.")
async def test_logging_tool(ctx: RequestContext, args: Arguments) -> str:
    # Always written to stderr; sent as notifications/message only when the request asked for
    # this level (io.modelcontextprotocol/logLevel) -- never otherwise.
    sent = ctx.log("info", "Diagnostic trace logging activated", logger="everything")
    return "Logging evaluated: " + ("log notification sent" if sent else "no logLevel requested, nothing sent")


# === Client capabilities =============================================================================


@server.tool(description="Requires the client's sampling capability; without it the call fails with -32021.")
async def test_missing_capability(ctx: RequestContext, args: Arguments) -> str:
    # Capabilities arrive with every request (_meta clientCapabilities); check them per call.
    if not ctx.client_supports("sampling"):
        raise MissingRequiredClientCapability({"sampling": {}})
    return "Success: the client declared sampling"


@server.tool(description="Streams a progress update, then asks for input the 2026-07-28 way (an input_required result, never a server-to-client request).")
async def test_streaming_elicitation(ctx: RequestContext, args: Arguments) -> str:
    ctx.report_progress(50, total=100, message="Half way; the user's input is needed next")
    answer = ctx.ask("user_input", _form("Anything to add?", "text"))
    return f"Streaming complete: {_accepted(answer).get('text', '(nothing)')}"


# === Multi round-trip requests (MRTR) ==================================================================
# ctx.ask(key, request) returns the client's answer when this request carries it
# (params.inputResponses[key]); otherwise it raises InputRequired, which the library sends as
# {"resultType": "input_required", "inputRequests": {...}, "requestState": "..."}. The client then
# retries the same call with the answers, and the handler runs again from the top.
# requestState is sealed (HMAC) by the library: a tampered one is rejected with -32602 before the
# handler runs; whatever `state=` we pass comes back, verified, as ctx.state.

NAME_FORM = _form("What is your name?", "name")
CONFIRM_FORM = _form("Please confirm", "ok", "boolean")


@server.tool(description="MRTR: asks for the user's name with an elicitation, then greets them.")
async def test_input_required_result_elicitation(ctx: RequestContext, args: Arguments) -> str:
    # Stateless: any call that carries inputResponses.user_name completes, extra keys are ignored,
    # and a malformed answer is -32602 (validated by ctx.ask).
    name = _accepted(ctx.ask("user_name", NAME_FORM)).get("name", "stranger")
    return f"Hello, {name}!"


@server.tool(description="MRTR: asks the client's LLM a question (sampling), then reports the answer.")
async def test_input_required_result_sampling(ctx: RequestContext, args: Arguments) -> str:
    question = sample([prompt_message("user", "What is the capital of France?")], max_tokens=100)
    return f"Sampling result: {_sampled_text(ctx.ask('capital_question', question))}"


@server.tool(description="MRTR: asks for the client's roots (roots/list), then counts them.")
async def test_input_required_result_list_roots(ctx: RequestContext, args: Arguments) -> str:
    roots = ctx.ask("client_roots", list_roots())["roots"]
    return f"Found {len(roots)} root(s): " + ", ".join(root["uri"] for root in roots)


@server.tool(description="MRTR: asks for a confirmation and completes only when its requestState comes back.")
async def test_input_required_result_request_state(ctx: RequestContext, args: Arguments) -> str:
    if ctx.state is None:
        # First round: ask, and hand the client state that it must echo back.
        raise InputRequired({"confirm": CONFIRM_FORM}, state={"kind": "request-state"})
    confirmed = _accepted(ctx.ask("confirm", CONFIRM_FORM, state=ctx.state)).get("ok") is True
    return f"state-ok: requestState validated (state={ctx.state}, confirmed={confirmed})"


@server.tool(description="MRTR: asks for an elicitation, a sampling and the roots in a single round.")
async def test_input_required_result_multiple_inputs(ctx: RequestContext, args: Arguments) -> str:
    answers = ctx.ask_all(
        {
            "user_name": NAME_FORM,
            "greeting": sample([prompt_message("user", "Generate a greeting")], max_tokens=50),
            "client_roots": list_roots(),
        },
        state={"kind": "multiple-inputs"},
    )
    name = _accepted(answers["user_name"]).get("name", "stranger")
    greeting = _sampled_text(answers["greeting"])
    return f"Name: {name}; Greeting: {greeting}; Roots: {len(answers['client_roots']['roots'])}"


@server.tool(description="MRTR: three rounds -- asks for a name, then a colour, then answers.")
async def test_input_required_result_multi_round(ctx: RequestContext, args: Arguments) -> str:
    # Answers from earlier rounds travel in the (sealed) state, not in server memory.
    state = ctx.state or {}
    name = state.get("name")
    if name is None:
        name = _accepted(ctx.ask("step1", _form("Step 1: What is your name?", "name"), state={"round": 1})).get("name", "stranger")
    color_answer = ctx.ask("step2", _form("Step 2: What is your favorite color?", "color"), state={"round": 2, "name": name})
    return f"Multi-round complete for {name} who likes {_accepted(color_answer).get('color', 'no colour')}"


@server.tool(description="MRTR: its requestState is integrity-protected; a tampered one is rejected with -32602.")
async def test_input_required_result_tampered_state(ctx: RequestContext, args: Arguments) -> str:
    # Nothing to verify here: the library checked the HMAC, expiry and request binding before
    # this handler ran. We only insist that the state came back at all.
    if ctx.state is None:
        raise InputRequired({"confirm": CONFIRM_FORM}, state={"kind": "tamper-test"})
    ctx.ask("confirm", CONFIRM_FORM, state=ctx.state)
    return "integrity-ok: state verified"


@server.tool(description="MRTR: asks only for the kinds of input the request's client capabilities declare.")
async def test_input_required_result_capabilities(ctx: RequestContext, args: Arguments) -> str:
    # Never put an input request in front of a client that cannot answer it.
    wanted: dict[str, dict[str, Any]] = {}
    if ctx.client_supports("elicitation.form"):
        wanted["elicit_input"] = _form("Elicitation input", "value")
    if ctx.client_supports("sampling"):
        wanted["sample_input"] = sample([prompt_message("user", "Sample request")], max_tokens=50)
    if not wanted:
        return "No supported capabilities declared"
    answers = ctx.ask_all(wanted, state={"kind": "capabilities-test"})
    return f"capabilities-ok: received {', '.join(sorted(answers))}"


@server.tool(description="MRTR with URL-mode elicitation: sends the user to a page (needs elicitation.url).")
async def test_url_elicitation(ctx: RequestContext, args: Arguments) -> str:
    # A client without elicitation.url gets -32021 naming it: the library checks before sending.
    answer = ctx.ask("authorize", elicit_url("Please open this page to authorize the demo", "https://example.com/authorize"))
    return f"URL elicitation finished with action {answer['action']!r}"


# === The initialize era's fixtures (the conformance suite's 2025-11-25 scenarios) =======================
# The same ctx.ask as above: an initialize-era client that declared the capability is asked with a
# server-to-client request (sampling/createMessage, elicitation/create) and the handler gets the
# answer in place; a 2026-07-28 client gets an input_required result, as for the MRTR tools.

USER_FORM = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}
DEFAULTS_FORM = {  # SEP-1034: a default for every primitive type
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
}
ENUMS_FORM = {  # SEP-1330: the five ways to offer choices
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [
            {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [
            {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"}]}},
    },
}


@server.tool(description="Logs three info messages about 50 ms apart (sent as the client's logging level allows), then returns.")
async def test_tool_with_logging(ctx: RequestContext, args: Arguments) -> str:
    for step, message in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if step:
            await asyncio.sleep(0.05)
        ctx.log("info", message, logger="everything")
    return "Tool with logging executed successfully"


@server.tool(description="Asks the client's LLM (sampling) with the given prompt and returns its answer.", input_schema={
    "type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"],
})
async def test_sampling(ctx: RequestContext, args: Arguments) -> str:
    answer = ctx.ask("llm", sample([prompt_message("user", args["prompt"])], max_tokens=100))
    return f"LLM response: {_sampled_text(answer)}"


@server.tool(description="Asks the user (elicitation) for a username and an email with the given message.", input_schema={
    "type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"],
})
async def test_elicitation(ctx: RequestContext, args: Arguments) -> str:
    answer = ctx.ask("user", elicit_form(args["message"], USER_FORM))
    return f"User response: action={answer['action']}, content={json.dumps(answer.get('content', {}))}"


@server.tool(description="Elicitation whose form has a default for every primitive type (SEP-1034).")
async def test_elicitation_sep1034_defaults(ctx: RequestContext, args: Arguments) -> str:
    answer = ctx.ask("defaults", elicit_form("Please review and update the form fields with defaults", DEFAULTS_FORM))
    return f"Elicitation completed: action={answer['action']}, content={json.dumps(answer.get('content', {}))}"


@server.tool(description="Elicitation offering choices in all five enum shapes (SEP-1330).")
async def test_elicitation_sep1330_enums(ctx: RequestContext, args: Arguments) -> str:
    answer = ctx.ask("enums", elicit_form("Please select options from the enum fields", ENUMS_FORM))
    return f"Elicitation completed: action={answer['action']}, content={json.dumps(answer.get('content', {}))}"


# === Tasks (the io.modelcontextprotocol/tasks extension) ================================================
# A tool registered with task="optional" may answer a client that declared the extension with a
# task handle instead of its result: when it runs longer than TaskSettings.answer_within_seconds
# (0.1 s by default), or as soon as it calls ctx.run_as_task(). The client then polls tasks/get,
# answers input requests with tasks/update, and may tasks/cancel. task="required" refuses clients
# that did not declare the extension (-32021). The handler code is the same either way; these
# carry the names the conformance suite's task scenarios use.

SECONDS = {"type": "number", "minimum": 0, "maximum": 600}


@server.tool(description="Greets by name, always at once: a tool that never becomes a task.", input_schema={
    "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": False,
})
async def greet(ctx: RequestContext, args: Arguments) -> str:
    return f"Hello, {args['name']}!"


@server.tool(
    description="Computes for `seconds` (0 answers at once); a longer call becomes a task whose status message counts the seconds.",
    input_schema={"type": "object", "properties": {"seconds": SECONDS, "label": {"type": "string"}}, "additionalProperties": False},
    task="optional",
)
async def slow_compute(ctx: RequestContext, args: Arguments) -> str:
    seconds, label = args.get("seconds", 1), args.get("label", "job")
    started = time.monotonic()
    while (left := seconds - (time.monotonic() - started)) > 0:
        # Progress: notifications/progress while the call is a plain request, the task's
        # statusMessage once it is a task. Cancelling the task cancels this await.
        ctx.report_progress(round(seconds - left, 1), total=seconds, message=f"{label}: {seconds - left:.0f} of {seconds} s")
        await asyncio.sleep(min(left, 0.5))
    return f"{label}: computed for {seconds} s"


@server.tool(description="A job that runs as a task (required) and ends with a tool error (isError: the task completes).", task="required")
async def failing_job(ctx: RequestContext, args: Arguments) -> str:
    ctx.run_as_task("starting a job that will fail")  # answer with the task handle now
    await asyncio.sleep(1)
    raise ToolError("The job failed: the input it needed was missing")


@server.tool(description="A job that fails with a JSON-RPC error: as a task, its status becomes failed.", task="optional")
async def protocol_error_job(ctx: RequestContext, args: Arguments) -> str:
    ctx.run_as_task()
    await asyncio.sleep(0.2)
    raise InternalError("Internal error: the job's worker crashed")


CONFIRM_DELETE_FORM = elicit_form("Delete this file?", {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]})


@server.tool(
    description="Asks for confirmation inside a task (input_required, answered with tasks/update), then reports; it deletes nothing.",
    input_schema={"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"], "additionalProperties": False},
    task="optional",
)
async def confirm_delete(ctx: RequestContext, args: Arguments) -> str:
    ctx.run_as_task("waiting for confirmation")
    # In a task, a missing answer parks the task in input_required; without one, this is an MRTR round.
    confirmed = _accepted(ctx.ask("confirm", CONFIRM_DELETE_FORM)).get("confirm") is True
    return f"{args['filename']}: {'deleted (pretend)' if confirmed else 'kept'}"


ENTRY_FORM = {"type": "object", "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}}


@server.tool(description="Asks two questions at once inside a task; the client may answer them one tasks/update at a time.", task="optional")
async def multi_input(ctx: RequestContext, args: Arguments) -> str:
    ctx.run_as_task()
    answers = ctx.ask_all({"first": elicit_form("First entry", ENTRY_FORM), "second": elicit_form("Second entry", ENTRY_FORM)})
    names = [_accepted(answers[key]).get("name", "nobody") for key in ("first", "second")]
    return f"Entries: {names[0]} and {names[1]}"


@server.tool(description="Asks for a name the MRTR way, then becomes a task (required) that greets with it.", task="required")
async def test_tool_with_task(ctx: RequestContext, args: Arguments) -> str:
    # Input first (an InputRequiredResult, synchronously), then the long part as a task.
    name = _accepted(ctx.ask("user_name", NAME_FORM)).get("name", "stranger")
    ctx.run_as_task("greeting slowly")
    await asyncio.sleep(0.5)
    return f"Hello, {name}, from a task!"


# === List changes and subscriptions ==================================================================
# Registering or removing a tool/prompt/resource announces the change by itself: the library sends
# notifications/<kind>/list_changed, tagged with the subscription id, on every open
# subscriptions/listen stream whose filter asked for that kind (and only those).


async def _dynamic_tool(ctx: RequestContext, args: Arguments) -> str:
    return "I appear and disappear with test_trigger_tool_change."


async def _dynamic_prompt(ctx: RequestContext, args: Arguments) -> str:
    return "I appear and disappear with test_trigger_prompt_change."


DYNAMIC_TOOL = Tool("test_dynamic_tool", _dynamic_tool, description="Added and removed by test_trigger_tool_change.", input_schema={"type": "object"})
DYNAMIC_PROMPT = Prompt("test_dynamic_prompt", _dynamic_prompt, description="Added and removed by test_trigger_prompt_change.")


@server.tool(description="Adds test_dynamic_tool, or removes it if present; listeners for tools list changes are notified.")
async def test_trigger_tool_change(ctx: RequestContext, args: Arguments) -> str:
    if DYNAMIC_TOOL.name in server.tools:
        server.remove_tool(DYNAMIC_TOOL.name)
        return "Mutation triggered: test_dynamic_tool removed"
    server.add_tool(DYNAMIC_TOOL)
    return "Mutation triggered: test_dynamic_tool added"


@server.tool(description="Adds test_dynamic_prompt, or removes it if present; listeners for prompts list changes are notified.")
async def test_trigger_prompt_change(ctx: RequestContext, args: Arguments) -> str:
    if DYNAMIC_PROMPT.name in server.prompts:
        server.remove_prompt(DYNAMIC_PROMPT.name)
        return "Mutation triggered: test_dynamic_prompt removed"
    server.add_prompt(DYNAMIC_PROMPT)
    return "Mutation triggered: test_dynamic_prompt added"


class WatchedState(TypedDict):
    """What test://watched-resource serves: its text and a version each change increments."""

    text: str
    version: int


WATCHED: WatchedState = {"text": "Watched resource content", "version": 1}


@server.tool(
    description="Changes test://watched-resource; streams subscribed to that URI get notifications/resources/updated.",
    input_schema={"type": "object", "properties": {"text": {"type": "string", "description": "The new content"}}, "additionalProperties": False},
)
async def test_update_watched_resource(ctx: RequestContext, args: Arguments) -> str:
    WATCHED["version"] += 1
    WATCHED["text"] = args.get("text", f"Watched resource content, version {WATCHED['version']}")
    server.notify_resource_updated("test://watched-resource")
    return f"test://watched-resource is now at version {WATCHED['version']}"


# === Schemas ===========================================================================================

# Kept verbatim in tools/list, and used as is (JSON Schema 2020-12) to validate arguments.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(description="Takes arguments described with JSON Schema 2020-12 ($defs, $anchor, allOf/anyOf, if/then/else).", input_schema=JSON_SCHEMA_2020_12)
async def json_schema_2020_12_tool(ctx: RequestContext, args: Arguments) -> str:
    # Arguments that break the schema never get here: they become an isError result listing why.
    return f"JSON Schema 2020-12 tool called with: {json.dumps(args, sort_keys=True)}"


@server.tool(
    description="Echoes a region that HTTP clients also mirror into the Mcp-Param-Region header (x-mcp-header).",
    input_schema={
        "type": "object",
        "properties": {"region": {"type": "string", "description": "Where to run", "x-mcp-header": "Region"}},
        "required": ["region"],
    },
)
async def test_x_mcp_header(ctx: RequestContext, args: Arguments) -> str:
    return f"Region: {args['region']}"


# === Extra tool features: structured output, sync handlers, cancellation, links ==========================


@server.tool(
    title="Add two integers",
    description="Adds two integers; returns structured content checked against its outputSchema.",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
    output_schema={"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]},
    annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
)
def test_structured_content(ctx: RequestContext, args: Arguments) -> dict[str, Any]:
    # A plain (non-async) handler runs on the handler thread pool. With an outputSchema, a returned
    # dict becomes structuredContent (validated) plus the same JSON as text.
    return {"sum": args["a"] + args["b"]}


# Typed tools: parameters after ctx are keyword arguments, and the annotations give the inputSchema
# (and, from the return annotation, the outputSchema). See "Typed tools" in docs/server-api.md.


@dataclasses.dataclass
class Rectangle:
    width: Annotated[float, "width, in metres"]
    height: Annotated[float, "height, in metres"]


class AreaReport(TypedDict):
    area: float
    unit: Literal["m2", "ft2"]


@server.tool()
def typed_add(ctx: RequestContext, a: int, b: int = 0) -> int:
    """Adds two integers (a typed tool: the schemas come from the annotations).

    Args:
        a: the first addend
        b: the second addend
    """
    return a + b


@server.tool()
async def typed_area(ctx: RequestContext, shape: Rectangle, unit: Literal["m2", "ft2"] = "m2") -> AreaReport:
    """The area of a rectangle, as structured content (a dataclass argument, a TypedDict result)."""
    area = shape.width * shape.height
    return {"area": area if unit == "m2" else round(area * 10.7639, 4), "unit": unit}


@server.tool(
    description="Works for a while on a worker thread, reporting progress, and stops early if the client cancels.",
    input_schema={
        "type": "object",
        "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 10}},
        "additionalProperties": False,
    },
)
def test_cancellable_wait(ctx: RequestContext, args: Arguments) -> Any:
    # A thread cannot be interrupted, so a long synchronous handler polls ctx.cancelled.
    # (An async handler is simply cancelled at its next await.)
    seconds = args.get("seconds", 1)
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < seconds:
        if ctx.cancelled:
            return None  # the client will never see this result
        ctx.report_progress(round(elapsed, 2), total=seconds, message="waiting")
        time.sleep(0.05)
    return ToolResult([text(f"Waited {seconds} s")])


@server.tool(description="Returns links to resources instead of their contents (resource_link blocks).")
async def test_resource_links(ctx: RequestContext, args: Arguments) -> list[dict[str, Any]]:
    return [
        text("Two resources worth reading:"),
        resource_link("test://static-text", "static-text", mimeType="text/plain"),
        resource_link("test://static-binary", "static-binary", mimeType="image/png"),
    ]


# === Resources, prompts and completion: in their own module, registered after the tools ============

from . import resources_and_prompts  # noqa: E402,F401  (registers them on this server)
