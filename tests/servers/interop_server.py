"""An example server exercising multi round-trip requests, subscriptions and both protocol eras.

Run it with ``python -m tests.servers.interop_server`` from the repository root. The MRTR,
subscription and legacy-era tests drive it over stdio, and so does the official Python SDK client
in ``tests/test_sdk_interop.py``. It is built only on the public ``mcp_ref`` API, so it is also an
example of a server that asks its client for input.

Tools
    ``echo``              returns its ``text`` argument (plain text output).
    ``add``               ``a + b`` as structured output (``outputSchema``), with a title,
                          annotations and an icon (the legacy era strips these per version).
    ``media``             a text block, a ``resource_link`` and an ``audio`` block (rewritten for old
                          legacy versions).
    ``whoami``            structured: the era, protocol version and client capabilities this request
                          was served with.
    ``list_names``        structured output that is an array, not an object (legacy clients, which
                          allow only objects, get the JSON as text).
    ``ask_name``          asks for the user's name with a form elicitation (``ctx.ask``).
    ``connect_account``   asks the user to visit a URL (URL-mode elicitation).
    ``summarize``         asks the client's LLM to summarize ``text`` (sampling); with
                          ``use_tools: true`` the sampling request offers a tool (needs ``sampling.tools``).
    ``list_client_roots`` asks for the client's roots.
    ``wizard``            asks for a name, then a colour, over several rounds; what is already known
                          travels in the sealed request state, not in server memory.
    ``set_note``          replaces the text of ``note://current`` and announces the update.
    ``announce_change``   announces that the ``tools``, ``prompts`` or ``resources`` list changed.
    ``count_slowly``      counts to ``steps``, reporting progress after each step.
    ``log_every_level``   logs one message at each of the eight log levels.

Resources
    ``note://current``    text, changed by ``set_note``.
    ``blob://logo.png``   binary (a tiny PNG header), sent as a base64 ``blob``.
    ``vault://secret``    asks the user to confirm before revealing its text (MRTR on resources/read).
    ``greeting://{name}`` a template: a greeting for ``name``.

Prompts
    ``greet_user``        arguments ``name`` (required) and ``style`` (optional).
    ``interview``         asks the user for a topic (MRTR on prompts/get).

Completers for ``greet_user`` and for the ``greeting://{name}`` template.

The server announces list changes (``list_changed=True``) and resource updates
(``resource_subscriptions=True``). Environment variables (all optional):
    ``MCP_REF_MODERN_ONLY``   ``1``: serve only 2026-07-28 clients (``initialize`` is refused)
    ``MCP_REF_STATE_KEY``     the key sealing request state (read by ``mcp_ref`` itself); with it,
                              request state survives a restart of the server
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp_ref import (
    Completion,
    PromptArgument,
    PromptResult,
    RequestContext,
    Server,
    ToolError,
    ToolResult,
    audio,
    elicit_form,
    elicit_url,
    list_roots,
    prompt_message,
    resource_link,
    sample,
    text,
)

ICON = {"src": "https://example.com/icons/interop.png", "mimeType": "image/png", "sizes": ["48x48"]}
LOGO_BYTES = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
SECRET = "the vault is empty"
KNOWN_NAMES = ["Ada", "Alan", "Alonzo", "Barbara", "Grace"]
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
NAME_FORM = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Your name"}},
    "required": ["name"],
}


def _modern_only() -> bool:
    return os.environ.get("MCP_REF_MODERN_ONLY", "") in ("1", "true", "yes")


def _first_text(content: Any) -> str:
    """The first text in a sampling result's content (a block or a list of blocks)."""
    blocks = content if isinstance(content, list) else [content]
    for block in blocks:
        if block.get("type") == "text":
            return block["text"]
    return ""


def build_server(*, modern_only: bool | None = None, **options: Any) -> Server:
    """The interop server. ``modern_only`` defaults to ``$MCP_REF_MODERN_ONLY``; ``options`` go to ``Server``."""
    if modern_only is None:
        modern_only = _modern_only()
    server = Server(
        "interop-server",
        "1.0.0",
        title="Interop example server",
        instructions="An example server for MRTR, subscriptions and legacy clients.",
        list_changed=True,
        resource_subscriptions=True,
        modern_only=modern_only,
        **options,
    )
    note = {"text": "nothing noted yet"}

    # --- plain tools ------------------------------------------------------------------------------

    @server.tool(
        title="Echo",
        description="Return the given text unchanged",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )
    async def echo(ctx: RequestContext, args: dict[str, Any]) -> str:
        return args["text"]

    @server.tool(
        title="Adder",
        description="Add two integers; the sum comes back as structured content",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        output_schema={"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]},
        annotations={"readOnlyHint": True, "idempotentHint": True},
        icons=[ICON],
    )
    async def add(ctx: RequestContext, args: dict[str, Any]) -> dict[str, int]:
        return {"sum": args["a"] + args["b"]}

    @server.tool(description="Return a text block, a resource link and an audio clip")
    async def media(ctx: RequestContext, args: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            text("Here is the current note and a short beep."),
            resource_link("note://current", "current-note", mimeType="text/plain"),
            audio(b"RIFF\x00\x00\x00\x00WAVE", "audio/wav"),
        ]

    @server.tool(
        description="Report the era, protocol version and client capabilities of this request",
        output_schema={
            "type": "object",
            "properties": {
                "era": {"type": "string", "enum": ["modern", "legacy"]},
                "protocolVersion": {"type": "string"},
                "clientCapabilities": {"type": "object"},
            },
            "required": ["era", "protocolVersion", "clientCapabilities"],
        },
    )
    async def whoami(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
        return {"era": ctx.era, "protocolVersion": ctx.protocol_version, "clientCapabilities": ctx.client_capabilities}

    @server.tool(
        description="The names the completers know, as a structured array",
        output_schema={"type": "array", "items": {"type": "string"}},
    )
    async def list_names(ctx: RequestContext, args: dict[str, Any]) -> list[str]:
        return list(KNOWN_NAMES)

    # --- tools that need the client (multi round-trip requests) -----------------------------------

    @server.tool(description="Greet the user by name, asking for the name first")
    async def ask_name(ctx: RequestContext, args: dict[str, Any]) -> str:
        answer = ctx.ask("name", elicit_form("What is your name?", NAME_FORM))
        if answer["action"] != "accept":
            return f"No name given (the user chose {answer['action']})."
        return f"Hello, {answer['content']['name']}!"

    @server.tool(description="Connect an account: the user signs in on a web page")
    async def connect_account(ctx: RequestContext, args: dict[str, Any]) -> str:
        answer = ctx.ask("sign_in", elicit_url("Sign in to connect your account", "https://example.com/connect?demo=1"))
        return "Account connected." if answer["action"] == "accept" else f"Not connected ({answer['action']})."

    @server.tool(
        description="Summarize a text with the client's language model",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}, "use_tools": {"type": "boolean"}},
            "required": ["text"],
        },
    )
    async def summarize(ctx: RequestContext, args: dict[str, Any]) -> str:
        options: dict[str, Any] = {"systemPrompt": "You write one-line summaries."}
        if args.get("use_tools"):
            options["tools"] = [
                {
                    "name": "word_count",
                    "description": "Count the words of a text",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                }
            ]
        request = sample([{"role": "user", "content": text(f"Summarize: {args['text']}")}], 60, **options)
        answer = ctx.ask("summary", request)
        return f"Summary: {_first_text(answer['content'])}"

    @server.tool(description="List the client's roots")
    async def list_client_roots(ctx: RequestContext, args: dict[str, Any]) -> str:
        roots = ctx.ask("roots", list_roots())["roots"]
        return f"{len(roots)} root(s): " + ", ".join(root["uri"] for root in roots)

    @server.tool(description="A two-step wizard: asks for a name, then for a favourite colour")
    async def wizard(ctx: RequestContext, args: dict[str, Any]) -> str:
        # What earlier rounds learned comes back in ctx.state; each round asks for one more thing.
        known: dict[str, str] = dict((ctx.state or {}).get("known", {}))
        questions = {
            "name": ("What is your name?", "name"),
            "colour": ("What is your favourite colour?", "colour"),
        }
        for key, (message, field) in questions.items():
            if key in known:
                continue
            schema = {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}
            answer = ctx.ask(key, elicit_form(message, schema), state={"known": known})
            if answer["action"] != "accept":
                raise ToolError(f"The wizard was stopped at the {key!r} step.")
            known[key] = answer["content"][field]
        return f"{known['name']} likes {known['colour']}."

    # --- tools that change things --------------------------------------------------------------

    @server.tool(
        description="Replace the current note (announces an update of note://current)",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )
    async def set_note(ctx: RequestContext, args: dict[str, Any]) -> str:
        note["text"] = args["text"]
        server.notify_resource_updated("note://current")
        return "noted"

    @server.tool(
        description="Announce that a list changed",
        input_schema={
            "type": "object",
            "properties": {"kind": {"type": "string", "enum": ["tools", "prompts", "resources"]}},
            "required": ["kind"],
        },
    )
    async def announce_change(ctx: RequestContext, args: dict[str, Any]) -> str:
        server.notify_list_changed(args["kind"])
        return f"announced a {args['kind']} list change"

    @server.tool(
        description="Count to steps, reporting progress after each one",
        input_schema={"type": "object", "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 50}}},
    )
    async def count_slowly(ctx: RequestContext, args: dict[str, Any]) -> str:
        steps = args.get("steps", 3)
        for step in range(1, steps + 1):
            await asyncio.sleep(0.015)
            ctx.report_progress(step, total=steps, message=f"step {step}")
        return f"counted to {steps}"

    @server.tool(description="Log one message at every log level")
    async def log_every_level(ctx: RequestContext, args: dict[str, Any]) -> ToolResult:
        sent = [level for level in LOG_LEVELS if ctx.log(level, f"a {level} message", logger="interop")]
        return ToolResult([text(f"sent {len(sent)} log notification(s)")])

    # --- resources ----------------------------------------------------------------------------------

    @server.resource("note://current", name="current-note", title="Current note", mime_type="text/plain", icons=[ICON])
    async def current_note(ctx: RequestContext) -> str:
        """The note set with the set_note tool."""
        return note["text"]

    @server.resource("blob://logo.png", name="logo", mime_type="image/png")
    async def logo(ctx: RequestContext) -> bytes:
        """A few bytes of binary data."""
        return LOGO_BYTES

    @server.resource("vault://secret", name="secret", mime_type="text/plain")
    async def secret(ctx: RequestContext) -> str:
        """A secret that is only shown after the user confirms."""
        answer = ctx.ask(
            "confirm",
            elicit_form(
                "Reveal the secret?",
                {"type": "object", "properties": {"reveal": {"type": "boolean"}}, "required": ["reveal"]},
            ),
        )
        if answer["action"] == "accept" and answer["content"].get("reveal"):
            return SECRET
        return "(not revealed)"

    @server.resource_template("greeting://{name}", name="greeting", title="Greeting", mime_type="text/plain")
    async def greeting(ctx: RequestContext, uri: str, variables: dict[str, str]) -> str:
        """A greeting for anyone."""
        return f"Hello, {variables['name']}!"

    # --- prompts and completion ------------------------------------------------------------------

    @server.prompt(
        title="Greeting",
        description="Greet someone",
        arguments=[
            PromptArgument("name", "Who to greet", required=True, title="Name"),
            PromptArgument("style", "formal or casual"),
        ],
    )
    async def greet_user(ctx: RequestContext, args: dict[str, str]) -> PromptResult:
        opening = "Good day" if args.get("style") == "formal" else "Hi"
        return PromptResult([prompt_message("user", f"{opening}, {args['name']}!")], description="A greeting")

    @server.prompt(description="Interview the user about a topic they choose")
    async def interview(ctx: RequestContext, args: dict[str, str]) -> list[dict[str, Any]]:
        answer = ctx.ask(
            "topic",
            elicit_form("Which topic?", {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}),
        )
        topic = answer["content"]["topic"] if answer["action"] == "accept" else "anything"
        return [prompt_message("user", f"Interview me about {topic}.")]

    @server.completer(prompt="greet_user")
    async def complete_greet_user(ctx: RequestContext, argument: str, value: str, context: dict[str, str]) -> Completion:
        choices = KNOWN_NAMES if argument == "name" else ["casual", "formal"]
        matches = [choice for choice in choices if choice.lower().startswith(value.lower())]
        return Completion(matches, total=len(matches), has_more=False)

    @server.completer(resource_template="greeting://{name}")
    async def complete_greeting(ctx: RequestContext, argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [name for name in KNOWN_NAMES if name.lower().startswith(value.lower())]

    return server


def main() -> int:
    return build_server().run()


if __name__ == "__main__":
    sys.exit(main())
