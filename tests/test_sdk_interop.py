"""Interoperability with the official Python SDK client (``mcp==2.3.0``) over real stdio.

The SDK's ``Client`` spawns ``python -m tests.servers.interop_server`` itself and talks to it in
each of its modes: ``"auto"`` (probes ``server/discover``, falls back to ``initialize`` only for a
legacy server), ``"2026-07-28"`` (pinned modern, no probe) and ``"legacy"`` (``initialize``
handshake at 2025-11-25). On modern sessions the SDK drives multi round-trip requests itself,
answering ``inputRequests`` through its elicitation, sampling and roots callbacks.

The SDK spawns the server with a minimal environment (see /tmp/digest/sdk_client.md §4), so the
server must not depend on inherited variables; only coverage's own variables are passed along.
Every test is bounded by ``anyio.fail_after``, and every request by ``read_timeout_seconds``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged

REPO_ROOT = Path(__file__).resolve().parents[1]
INTEROP = "tests.servers.interop_server"
# "auto" differs from the pinned modern mode only in how it connects, which the negotiation tests
# cover; feature tests run once per era to stay fast.
ERAS = ["2026-07-28", "legacy"]
MODERN_MODES = ["auto", "2026-07-28"]
MODERN = "2026-07-28"
REQUEST_TIMEOUT = 10.0
TEST_TIMEOUT = 20.0
LOGO_BYTES = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"



def server_parameters(*, modern_only: bool = False) -> StdioServerParameters:
    env = {name: value for name, value in os.environ.items() if name.startswith("COVERAGE")}
    if modern_only:
        env["MCP_REF_MODERN_ONLY"] = "1"
    return StdioServerParameters(command=sys.executable, args=["-m", INTEROP], cwd=str(REPO_ROOT), env=env)


@contextlib.asynccontextmanager
async def connect(mode: str, *, modern_only: bool = False, **options: Any) -> AsyncIterator[Client]:
    """A connected SDK client in ``mode``; the server's stderr goes to a temporary file."""
    with tempfile.TemporaryFile("w+") as errlog:
        transport = stdio_client(server_parameters(modern_only=modern_only), errlog=errlog)
        async with Client(transport, mode=mode, read_timeout_seconds=REQUEST_TIMEOUT, **options) as client:
            yield client


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (possibly nested) exception groups; anyio task groups wrap errors in them."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def only_text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent), result
    return result.content[0].text


# --- client callbacks (what a host application would do) ------------------------------------------


class Callbacks:
    """Answers the server's input requests and remembers what it was asked."""

    ANSWERS = {"name": "Ada", "colour": "teal", "topic": "owls", "reveal": True}

    def __init__(self) -> None:
        self.elicitations: list[Any] = []
        self.samplings: list[types.CreateMessageRequestParams] = []
        self.roots_asked = 0

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.elicitations.append(params)
        if params.mode == "url":
            return types.ElicitResult(action="accept")
        fields = params.requested_schema["properties"] if isinstance(params.requested_schema, dict) else params.requested_schema.properties
        return types.ElicitResult(action="accept", content={name: self.ANSWERS[name] for name in fields})

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.samplings.append(params)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="short"), model="test-model")

    async def roots(self, context: Any) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/interop", name="interop")])

    def options(self) -> dict[str, Any]:
        return {"elicitation_callback": self.elicit, "sampling_callback": self.sample, "list_roots_callback": self.roots}


# --- negotiation ------------------------------------------------------------------------------------


@pytest.mark.req("VER-ERA-PER-REQUEST", "VER-IMPLEMENT-DISCOVER")
@pytest.mark.parametrize(
    ("mode", "version", "era"),
    [("auto", "2026-07-28", "modern"), ("2026-07-28", "2026-07-28", "modern"), ("legacy", "2025-11-25", "legacy")],
)
async def test_each_client_mode_is_served_in_the_era_it_chose(mode: str, version: str, era: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode) as client:
            assert client.protocol_version == version
            result = await client.call_tool("whoami", {})
    assert result.structured_content["era"] == era
    assert result.structured_content["protocolVersion"] == version


@pytest.mark.req("DISC-SERVERINFO-IN-META", "DISC-RESULT-FIELDS")
async def test_auto_mode_learns_server_info_and_capabilities_from_discover() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect("auto") as client:
            info, capabilities = client.server_info, client.server_capabilities
    assert info is not None and info.name == "interop-server" and info.version == "1.0.0"
    assert capabilities.tools is not None and capabilities.tools.list_changed is True
    assert capabilities.resources is not None and capabilities.resources.subscribe is True


@pytest.mark.req("VER-MODERN-ONLY-INITIALIZE-32022")
async def test_a_legacy_client_fails_against_a_modern_only_server_with_an_error_naming_the_version() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        with pytest.raises(BaseException) as raised:
            async with connect("legacy", modern_only=True):
                pass  # pragma: no cover - the handshake must fail
    refusals = [error for error in leaves(raised.value) if isinstance(error, MCPError)]
    assert len(refusals) == 1, raised.value
    assert refusals[0].error.code == -32022
    assert "2026-07-28" in refusals[0].error.message


@pytest.mark.req("DISC-SUPPORTED-VERSIONS", "VER-DUAL-ERA-ADVERTISES-LEGACY")
async def test_an_auto_client_works_with_a_modern_only_server() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect("auto", modern_only=True) as client:
            assert client.protocol_version == "2026-07-28"
            assert only_text(await client.call_tool("echo", {"text": "still here"})) == "still here"


# --- the server's features, in every mode ---------------------------------------------------------


@pytest.mark.req("TOOLS-LIST", "TOOLS-OUTPUT-SCHEMA-CONFORMS", "TOOLS-STRUCTURED-CONTENT-TEXT-MIRROR", "VER-LEGACY-STRIPPING")
@pytest.mark.parametrize("mode", ERAS)
async def test_tools_are_listed_and_called_with_text_and_structured_output(mode: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            echoed = await client.call_tool("echo", {"text": "héllo"})
            added = await client.call_tool("add", {"a": 2, "b": 40})
            names = await client.call_tool("list_names", {})
    assert {"echo", "add", "list_names", "ask_name", "wizard", "set_note"} <= set(tools)
    assert tools["add"].output_schema is not None and tools["add"].title == "Adder"
    assert only_text(echoed) == "héllo" and not echoed.is_error
    assert added.structured_content == {"sum": 42}
    assert not added.is_error
    # An array is structured content for a modern client; a legacy one gets it only as text.
    expected_names = ["Ada", "Alan", "Alonzo", "Barbara", "Grace"]
    assert names.structured_content == (expected_names if mode == MODERN else None)
    assert json.loads(only_text(names)) == expected_names


@pytest.mark.req("TOOLS-INPUT-VALIDATION-IS-ERROR")
@pytest.mark.parametrize("mode", ERAS)
async def test_invalid_tool_arguments_come_back_as_a_tool_error(mode: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode) as client:
            result = await client.call_tool("add", {"a": "two"})
    assert result.is_error
    assert "Invalid arguments" in only_text(result)


@pytest.mark.req("RES-LIST", "RES-TEMPLATES-LIST", "RES-TEMPLATE-MATCH", "RES-READ-BLOB-BASE64")
@pytest.mark.parametrize("mode", ERAS)
async def test_resources_and_templates_are_listed_and_read_as_text_and_blob(mode: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode) as client:
            resources = {str(r.uri) for r in (await client.list_resources()).resources}
            templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
            note = (await client.read_resource("note://current")).contents
            logo = (await client.read_resource("blob://logo.png")).contents
            greeting = (await client.read_resource("greeting://Ada")).contents
    assert {"note://current", "blob://logo.png", "vault://secret"} <= resources
    assert templates == ["greeting://{name}"]
    assert isinstance(note[0], types.TextResourceContents) and note[0].text == "nothing noted yet"
    assert isinstance(logo[0], types.BlobResourceContents) and base64.b64decode(logo[0].blob) == LOGO_BYTES
    assert logo[0].mime_type == "image/png"
    assert isinstance(greeting[0], types.TextResourceContents) and greeting[0].text == "Hello, Ada!"


@pytest.mark.req("RES-NOT-FOUND-32602", "LEGACY-RES-NOT-FOUND-32002")
@pytest.mark.parametrize("mode", ERAS)
async def test_reading_a_missing_resource_raises_an_mcp_error(mode: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode) as client:
            with pytest.raises(MCPError) as raised:
                await client.read_resource("note://missing")
    assert raised.value.error.code == (-32002 if mode == "legacy" else -32602)


@pytest.mark.req("PROMPT-LIST", "PROMPT-GET-RESULT")
@pytest.mark.parametrize("mode", ERAS)
async def test_prompts_are_listed_and_fetched_with_arguments(mode: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode) as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            formal = await client.get_prompt("greet_user", {"name": "Ada", "style": "formal"})
    assert [a.name for a in prompts["greet_user"].arguments or []] == ["name", "style"]
    assert formal.description == "A greeting"
    assert formal.messages[0].role == "user"
    assert formal.messages[0].content == types.TextContent(type="text", text="Good day, Ada!")


@pytest.mark.req("COMPL-REFERENCES")
@pytest.mark.parametrize("mode", ERAS)
async def test_completion_suggests_prompt_arguments_and_template_variables(mode: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode) as client:
            names = await client.complete(types.PromptReference(name="greet_user"), {"name": "name", "value": "Al"})
            variables = await client.complete(types.ResourceTemplateReference(uri="greeting://{name}"), {"name": "name", "value": "b"})
    assert names.completion.values == ["Alan", "Alonzo"]
    assert variables.completion.values == ["Barbara"]


@pytest.mark.req("PROG-TOKEN-ECHOED", "PROG-TRACK-TOKENS")
@pytest.mark.parametrize("mode", ERAS)
async def test_progress_reaches_the_progress_callback(mode: str) -> None:
    seen: list[tuple[float, float | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total))

    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode) as client:
            result = await client.call_tool("count_slowly", {"steps": 3}, progress_callback=progress)
    assert only_text(result) == "counted to 3"
    assert seen and seen[-1] == (3.0, 3.0)


# --- multi round-trip requests through the SDK's callbacks -------------------------------------------


@pytest.mark.req("MRTR-DECLARED-CAPABILITIES-ONLY")
async def test_without_an_elicitation_callback_the_server_reports_the_missing_capability() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(MODERN) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("ask_name", {})
    assert raised.value.error.code == -32021
    assert raised.value.error.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


@pytest.mark.req("MRTR-RETRY-COMPLETES")
@pytest.mark.parametrize("mode", MODERN_MODES)
async def test_form_elicitation_round_trips_through_the_elicitation_callback(mode: str) -> None:
    callbacks = Callbacks()
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode, **callbacks.options()) as client:
            result = await client.call_tool("ask_name", {})
    assert only_text(result) == "Hello, Ada!"
    assert [e.message for e in callbacks.elicitations] == ["What is your name?"]


@pytest.mark.req("ELIC-URL-FIELDS", "MRTR-RETRY-COMPLETES")
async def test_url_elicitation_round_trips_through_the_elicitation_callback() -> None:
    callbacks = Callbacks()
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(MODERN, **callbacks.options()) as client:
            result = await client.call_tool("connect_account", {})
    assert only_text(result) == "Account connected."
    assert callbacks.elicitations[0].url == "https://example.com/connect?demo=1"


@pytest.mark.req("SAMP-CAPABILITY", "MRTR-RETRY-COMPLETES")
async def test_sampling_round_trips_through_the_sampling_callback() -> None:
    callbacks = Callbacks()
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(MODERN, **callbacks.options()) as client:
            result = await client.call_tool("summarize", {"text": "a long story"})
    assert only_text(result) == "Summary: short"
    assert callbacks.samplings[0].max_tokens == 60
    assert callbacks.samplings[0].system_prompt == "You write one-line summaries."


@pytest.mark.req("ROOTS-CHECK-CAPABILITY-FIRST", "MRTR-RETRY-COMPLETES")
async def test_roots_round_trip_through_the_roots_callback() -> None:
    callbacks = Callbacks()
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(MODERN, **callbacks.options()) as client:
            result = await client.call_tool("list_client_roots", {})
    assert only_text(result) == "1 root(s): file:///tmp/interop"
    assert callbacks.roots_asked == 1


@pytest.mark.req("MRTR-MULTIPLE-ROUNDS")
async def test_a_multi_round_wizard_completes_through_the_sdk() -> None:
    callbacks = Callbacks()
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(MODERN, **callbacks.options()) as client:
            result = await client.call_tool("wizard", {})
    assert only_text(result) == "Ada likes teal."
    assert [e.message for e in callbacks.elicitations] == ["What is your name?", "What is your favourite colour?"]


@pytest.mark.req("MRTR-SUPPORTED-METHODS-MAY")
async def test_resource_read_and_prompt_get_that_ask_for_input_complete_through_the_sdk() -> None:
    callbacks = Callbacks()
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(MODERN, **callbacks.options()) as client:
            secret = (await client.read_resource("vault://secret")).contents
            interview = await client.get_prompt("interview", {})
    assert isinstance(secret[0], types.TextResourceContents) and secret[0].text == "the vault is empty"
    assert interview.messages[0].content == types.TextContent(type="text", text="Interview me about owls.")


@pytest.mark.req("LEGACY-CLIENT-INPUT-REQUESTS", "MRTR-USE-PATTERN")
async def test_a_legacy_sdk_client_is_asked_through_its_elicitation_callback() -> None:
    callbacks = Callbacks()
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect("legacy", **callbacks.options()) as client:
            result = await client.call_tool("ask_name", {})
    assert not result.is_error
    assert only_text(result) == "Hello, Ada!"
    assert len(callbacks.elicitations) == 1  # one server-to-client elicitation/create


@pytest.mark.req("LEGACY-MRTR-TOOL-ERROR")
async def test_a_legacy_sdk_client_without_the_callback_gets_a_tool_error_saying_what_is_needed() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect("legacy") as client:
            result = await client.call_tool("ask_name", {})
    assert result.is_error
    assert "2026-07-28" in only_text(result) and "elicitation" in only_text(result)


# --- notifications -------------------------------------------------------------------------------------


@pytest.mark.req("SUB-ACK-FIRST", "SUB-ACK-HONOURED-SUBSET", "SUB-NOTIFICATIONS-CARRY-ID", "SUB-ONLY-REQUESTED-TYPES")
async def test_a_subscription_opened_with_listen_delivers_list_changes_and_resource_updates() -> None:
    events: list[Any] = []
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(MODERN) as client:
            async with client.listen(tools_list_changed=True, resource_subscriptions=["note://current"]) as subscription:
                honored = subscription.honored
                await client.call_tool("announce_change", {"kind": "prompts"})  # not asked for
                await client.call_tool("announce_change", {"kind": "tools"})
                await client.call_tool("set_note", {"text": "changed"})
                async for event in subscription:
                    events.append(event)
                    if len(events) == 2:
                        break
            # Leaving the listen block cancels the stream; the connection stays usable.
            assert only_text(await client.call_tool("echo", {"text": "after"})) == "after"
    assert honored.tools_list_changed is True and honored.resource_subscriptions == ["note://current"]
    assert not honored.prompts_list_changed
    assert events == [ToolsListChanged(), ResourceUpdated(uri="note://current")]


@pytest.mark.req("LEGACY-LOG-SET-LEVEL", "LEGACY-RES-SUBSCRIBE")
async def test_a_legacy_sdk_client_receives_log_messages_and_resource_updates_it_subscribed_to() -> None:
    logged: list[types.LoggingMessageNotificationParams] = []
    updates: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params)

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    with anyio.fail_after(TEST_TIMEOUT):
        async with connect("legacy", logging_callback=on_log, message_handler=on_message) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # both methods are deprecated in 2026-07-28, not in 2025-11-25
                await client.set_logging_level("error")
                await client.subscribe_resource("note://current")
            await client.call_tool("log_every_level", {})
            await client.call_tool("set_note", {"text": "changed"})
            await client.call_tool("echo", {"text": "flush"})  # notifications precede this response
    assert [entry.level for entry in logged] == ["error", "critical", "alert", "emergency"]
    assert updates == ["note://current"]
