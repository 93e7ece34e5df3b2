"""The everything server's resources, prompts and completion (its tools are in ``server``).

Registered on the same ``server`` after its tools (``server`` imports this module last), so every
list keeps the order the conformance suite's reference fixture has. Like ``server``, it uses
nothing but the public API.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_ref import (
    CacheHint,
    Completion,
    PromptArgument,
    PromptResult,
    RequestContext,
    ResourceNotFound,
    blob_resource,
    embedded_resource,
    image,
    prompt_message,
    text_resource,
)

from .media import PNG_PIXEL
from .server import WATCHED, _accepted, _form, server

# === Resources =========================================================================================
# The first resource registered is listed first (test://static-text).


@server.resource("test://static-text", name="static-text", title="Static Text Resource", mime_type="text/plain", cache=CacheHint(300_000, "public"))
async def static_text(ctx: RequestContext) -> str:
    """A static text resource; its contents may be cached and shared for 5 minutes."""
    # A str is sent as text contents with the resource's MIME type.
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", title="Static Binary Resource", mime_type="image/png")
async def static_binary(ctx: RequestContext) -> bytes:
    """A static binary resource (a PNG image)."""
    # bytes are sent base64-encoded as a blob.
    return PNG_PIXEL


@server.resource("test://watched-resource", name="watched-resource", title="Watched Resource", mime_type="text/plain")
async def watched_resource(ctx: RequestContext) -> dict[str, Any]:
    """A resource that changes (see test_update_watched_resource); subscribe to it with subscriptions/listen."""
    # A contents object can carry more than the handler-return shortcuts (here: _meta).
    return text_resource("test://watched-resource", WATCHED["text"], _meta={"version": WATCHED["version"]})


@server.resource_template("test://template/{id}/data", name="template", title="Resource Template", mime_type="application/json")
async def template_data(ctx: RequestContext, uri: str, variables: dict[str, str]) -> str:
    """Data for a numeric id, read through a URI template."""
    item_id = variables["id"]
    if not item_id.isdigit():
        # -32602 with data.uri, exactly as for a URI no resource matches.
        raise ResourceNotFound(uri, f"No data for id {item_id!r}: ids are numbers")
    return json.dumps({"id": item_id, "templateTest": True, "data": f"Data for ID: {item_id}"})


@server.resource_lister
async def template_examples(ctx: RequestContext) -> list[dict[str, Any]]:
    """Resources computed at list time: two readable instances of the template."""
    return [
        {"uri": f"test://template/{n}/data", "name": f"template-{n}", "mimeType": "application/json"} for n in (1, 2)
    ]


# === Prompts ============================================================================================


@server.prompt(title="Simple Test Prompt", description="A simple prompt without arguments.")
async def test_simple_prompt(ctx: RequestContext, args: dict[str, str]) -> str:
    # A plain string becomes one user message.
    return "This is a simple prompt for testing."


@server.prompt(
    title="Prompt With Arguments",
    description="A prompt with two required arguments.",
    arguments=[
        PromptArgument("arg1", "First test argument", required=True),
        PromptArgument("arg2", "Second test argument", required=True),
    ],
)
async def test_prompt_with_arguments(ctx: RequestContext, args: dict[str, str]) -> PromptResult:
    # Required arguments are checked by the library (-32602 when missing).
    message = f"Prompt with arguments: arg1='{args['arg1']}', arg2='{args['arg2']}'"
    return PromptResult([prompt_message("user", message)], description="Both arguments, quoted back")


@server.prompt(
    title="Prompt With Embedded Resource",
    description="A prompt that embeds the resource named by its argument.",
    arguments=[PromptArgument("resourceUri", "URI of the resource to embed", required=True)],
)
async def test_prompt_with_embedded_resource(ctx: RequestContext, args: dict[str, str]) -> list[dict[str, Any]]:
    return [
        prompt_message("user", embedded_resource(text_resource(args["resourceUri"], "Embedded resource content for testing."))),
        prompt_message("user", "Please process the embedded resource above."),
    ]


@server.prompt(title="Prompt With Image", description="A prompt that includes an image.")
async def test_prompt_with_image(ctx: RequestContext, args: dict[str, str]) -> list[dict[str, Any]]:
    return [
        prompt_message("user", image(PNG_PIXEL, "image/png")),
        prompt_message("user", "Please analyze the image above."),
    ]


@server.prompt(description="MRTR on prompts/get: asks what context the prompt should use.")
async def test_input_required_result_prompt(ctx: RequestContext, args: dict[str, str]) -> str:
    # prompts/get (and resources/read) may ask for input exactly like a tool.
    context = _accepted(ctx.ask("user_context", _form("What context should the prompt use?", "context"))).get("context", "none")
    return f"Prompt with context: {context}"


@server.prompt(
    description="Shows a binary resource embedded as a blob.",
    arguments=[PromptArgument("caption", "Optional caption")],
)
async def test_prompt_with_blob(ctx: RequestContext, args: dict[str, str]) -> list[dict[str, Any]]:
    return [
        prompt_message("user", embedded_resource(blob_resource("test://static-binary", PNG_PIXEL, "image/png"))),
        prompt_message("user", args.get("caption", "What does this image show?")),
    ]


# === Completion ==========================================================================================

SUGGESTIONS = {
    "arg1": ["test", "testValue1", "testing", "example"],
    "arg2": ["test", "testValue2", "sample"],
}


@server.completer(prompt="test_prompt_with_arguments")
async def complete_prompt_arguments(ctx: RequestContext, argument: str, value: str, context: dict[str, str]) -> Completion:
    """Suggest values for arg1/arg2 that start with what the user typed."""
    matches = [candidate for candidate in SUGGESTIONS.get(argument, []) if candidate.startswith(value)]
    return Completion(matches, total=len(matches), has_more=False)
