"""Input requests for initialize-era clients: the same handler API (``ctx.ask``, ``ctx.ask_all``,
``InputRequired``) served with server-to-client requests (``mcp_ref/features/outgoing.py``).

``mcp_ref.kit.testing.Client`` in the legacy era against ``mcp-ref-everything`` (its callbacks answer
the server's requests), raw stdio where a test answers by hand, and the official SDK client
(``mcp==2.3.0``) in ``legacy`` mode against every interactive tool of ``mcp-ref-everything`` and
``mcp-ref-fs``'s ``delete_file``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters, stdio_client

from mcp_ref.kit import testing
from tests.schema_check import schemas
from tests.wire import ServerProcess, cancel, notification, result_of, tool_call

REPO_ROOT = Path(__file__).resolve().parents[1]
MODULE = "mcp_ref_everything"
ALL = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}


def legacy_session(version: str = "2025-11-25", capabilities: dict[str, Any] | None = None, **env: str) -> ServerProcess:
    """A raw session after the handshake, for tests that answer (or do not answer) by hand."""
    server = ServerProcess(module=MODULE, schema=None, env=env or None)
    server.allow_server_requests = True
    params = {"protocolVersion": version, "capabilities": ALL if capabilities is None else capabilities, "clientInfo": {"name": "t", "version": "1"}}
    assert result_of(server.request({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}))["protocolVersion"] == version
    server.send(notification("notifications/initialized"))
    return server


@contextlib.contextmanager
def legacy_client(version: str = "2025-11-25", capabilities: dict[str, Any] = ALL, **callbacks: Any) -> Iterator[testing.Client]:
    """A test client after the handshake at ``version``, answering the server's requests with ``callbacks``."""
    command = [sys.executable, "-m", MODULE]
    with testing.Client(command, era="legacy", protocol_version=version, capabilities=capabilities, schemas=schemas(), **callbacks) as client:
        assert client.initialize_result is not None and client.initialize_result["protocolVersion"] == version
        yield client


def start_call(server: ServerProcess, request_id: Any, name: str) -> None:
    """Send a legacy ``tools/call`` (no ``_meta``) without waiting for its answer."""
    server.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": {}}})


def next_server_request(server: ServerProcess) -> dict[str, Any]:
    return server.read_until(lambda m: "method" in m and "id" in m)[-1]


def text(response: dict[str, Any]) -> str:
    return " ".join(block["text"] for block in result_of(response)["content"])


def answer_name(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda params: {"action": "accept", "content": {"name": name}}


@pytest.mark.req("LEGACY-CLIENT-INPUT-REQUESTS", "LEGACY-CLIENT-REQUEST-IDS")
def test_a_legacy_client_is_sent_elicitation_create_and_its_answer_completes_the_tool() -> None:
    with legacy_client(on_elicitation=answer_name("Ada")) as client:
        reply = client.call_tool("test_input_required_result_elicitation")
        (asked,) = reply.rounds  # the server's own request, answered by the callback
        assert asked["method"] == "elicitation/create" and asked["id"] == "mcp-ref-srv-1"
        assert asked["params"]["requestedSchema"]["properties"] == {"name": {"type": "string"}}
        assert reply.text == "Hello, Ada!" and "resultType" not in reply.result


@pytest.mark.req("LEGACY-CLIENT-INPUT-VERSION-SHAPES")
def test_a_2025_06_18_client_gets_form_elicitation_without_mode_and_no_url_elicitation() -> None:
    with legacy_client("2025-06-18", {"elicitation": {}}, on_elicitation=answer_name("Bo")) as client:
        reply = client.call_tool("test_input_required_result_elicitation")
        (asked,) = reply.rounds
        assert asked["method"] == "elicitation/create" and "mode" not in asked["params"]
        assert reply.text == "Hello, Bo!"
        refused = client.call_tool("test_url_elicitation")
        assert refused.is_error and "elicitation.url" in refused.text and refused.rounds == []


@pytest.mark.req("LEGACY-CLIENT-INPUT-VERSION-SHAPES")
def test_a_2025_11_25_client_gets_url_elicitation_with_an_elicitation_id() -> None:
    with legacy_client(on_elicitation=lambda params: {"action": "accept"}) as client:
        reply = client.call_tool("test_url_elicitation")
        (asked,) = reply.rounds
        assert asked["params"]["mode"] == "url" and isinstance(asked["params"]["elicitationId"], str)
        assert "'accept'" in reply.text


@pytest.mark.req("LEGACY-MRTR-TOOL-ERROR")
def test_a_client_without_the_capability_gets_the_tool_error_and_no_request() -> None:
    with legacy_client(capabilities={}) as client:
        reply = client.call_tool("test_input_required_result_sampling")
        assert reply.is_error and "sampling" in reply.text
        assert reply.rounds == []  # the server sent no request


def test_the_conformance_suites_initialize_era_fixtures_ask_with_server_requests_of_the_shapes_it_checks() -> None:
    def accept(content: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda params: {"action": "accept", "content": content}

    sampled = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}
    with legacy_client(on_sampling=lambda params: sampled) as client:
        reply = client.call_tool("test_sampling", {"prompt": "Capital?"})
        (asked,) = reply.rounds
        assert asked["params"]["messages"] == [{"role": "user", "content": {"type": "text", "text": "Capital?"}}]
        assert asked["params"]["maxTokens"] == 100 and reply.text == "LLM response: Paris"
    with legacy_client(on_elicitation=accept({"username": "ada", "email": "a@b.c"})) as client:
        reply = client.call_tool("test_elicitation", {"message": "Who are you?"})
        assert reply.rounds[0]["params"]["message"] == "Who are you?"
        assert reply.rounds[0]["params"]["requestedSchema"]["required"] == ["username", "email"]
        assert reply.text == 'User response: action=accept, content={"username": "ada", "email": "a@b.c"}'
    with legacy_client(on_elicitation=accept({"name": "Jo", "age": 2, "score": 1.5, "status": "pending", "verified": False})) as client:
        reply = client.call_tool("test_elicitation_sep1034_defaults")
        defaults = {k: v["default"] for k, v in reply.rounds[0]["params"]["requestedSchema"]["properties"].items()}
        assert defaults == {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True}
        assert reply.text.startswith("Elicitation completed: action=accept")
    with legacy_client(on_elicitation=accept({"untitledSingle": "option1", "titledMulti": ["value1"]})) as client:
        reply = client.call_tool("test_elicitation_sep1330_enums")
        fields = reply.rounds[0]["params"]["requestedSchema"]["properties"]
        assert len(fields["legacyEnum"]["enumNames"]) == len(fields["legacyEnum"]["enum"]) == 3
        assert [c["const"] for c in fields["titledMulti"]["items"]["anyOf"]] == ["value1", "value2", "value3"]
        assert reply.text.startswith("Elicitation completed: action=accept")


def test_the_logging_fixture_sends_three_info_messages_at_a_session_level_of_info_and_none_above() -> None:
    server = legacy_session()
    try:
        assert result_of(server.request({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}})) == {}
        start_call(server, 2, "test_tool_with_logging")
        seen = server.read_until(lambda m: m.get("id") == 2)
        logs = [m["params"]["data"] for m in seen if m.get("method") == "notifications/message"]
        assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]
        assert result_of(server.request({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "warning"}})) == {}
        start_call(server, 4, "test_tool_with_logging")
        assert [m for m in server.read_until(lambda m: m.get("id") == 4) if m.get("method") == "notifications/message"] == []
    finally:
        server.close()


def refuse_sampling(params: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("User rejected sampling request")  # the client answers with a JSON-RPC error


@pytest.mark.req("LEGACY-CLIENT-INPUT-FAILURES")
def test_a_client_error_response_ends_the_tool_with_a_tool_error() -> None:
    with legacy_client(on_sampling=refuse_sampling) as client:
        reply = client.call_tool("test_input_required_result_sampling")
        assert [asked["method"] for asked in reply.rounds] == ["sampling/createMessage"]
        assert reply.is_error and "User rejected" in reply.text


@pytest.mark.req("LEGACY-CLIENT-INPUT-FAILURES")
def test_an_invalid_answer_is_never_shown_to_the_handler() -> None:
    with legacy_client(on_roots=lambda params: [{"uri": "https://not-a-file"}]) as client:
        reply = client.call_tool("test_input_required_result_list_roots")
        assert [asked["method"] for asked in reply.rounds] == ["roots/list"]
        assert reply.is_error and "not valid" in reply.text


@pytest.mark.req("LEGACY-CLIENT-REQUEST-IDS")
def test_responses_with_unknown_ids_are_ignored_and_logged() -> None:
    with legacy_session() as server:
        start_call(server, 1, "test_input_required_result_list_roots")
        asked = next_server_request(server)
        server.send({"jsonrpc": "2.0", "id": 1, "result": {"roots": [{"uri": "file:///forged"}]}})  # the client's own id
        server.send({"jsonrpc": "2.0", "id": "mcp-ref-srv-99", "result": {"roots": [{"uri": "file:///forged"}]}})
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "file:///real"}]}})
        assert text(server.response(1)) == "Found 1 root(s): file:///real"
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}})  # late duplicate: ignored
        assert result_of(server.request({"jsonrpc": "2.0", "id": 2, "method": "ping"})) == {}
        server.shutdown()
        assert server.stderr_text().count("ignoring a JSON-RPC response from the client") == 3  # each logged once


@pytest.mark.req("LEGACY-CLIENT-INPUT-FAILURES")
def test_cancelling_the_outer_request_cancels_the_server_request_and_nothing_answers() -> None:
    with legacy_session() as server:
        start_call(server, 7, "test_input_required_result_elicitation")
        asked = next_server_request(server)
        server.send(cancel(7, "changed my mind"))
        told = server.read_until(lambda m: m.get("method") == "notifications/cancelled")[-1]
        assert told["params"]["requestId"] == asked["id"]
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "late"}}})
        assert "result" in server.request({"jsonrpc": "2.0", "id": 8, "method": "ping"})
        assert not [m for m in server.received if m.get("id") == 7]


@pytest.mark.req("LEGACY-CLIENT-INPUT-FAILURES")
def test_eof_while_waiting_ends_the_request_cleanly_and_the_server_exits() -> None:
    with legacy_session() as server:
        start_call(server, 1, "test_input_required_result_elicitation")
        next_server_request(server)
        server.close_stdin()
        messages = server.read_until_eof()
        final = [m for m in messages if m.get("id") == 1]
        assert len(final) == 1 and result_of(final[0])["isError"] is True
        assert server.wait() == 0


@pytest.mark.req("STDIO-NO-SERVER-REQUESTS")
def test_the_2026_07_28_era_never_gets_a_server_request_even_after_a_legacy_handshake() -> None:
    with legacy_session() as server:
        server.allow_server_requests = False  # any server request from here on is a WireViolation
        server.send(tool_call(1, "test_input_required_result_multiple_inputs", {}, capabilities={"elicitation": {}, "sampling": {}, "roots": {}}))
        result = result_of(server.response(1))
        assert result["resultType"] == "input_required" and len(result["inputRequests"]) == 3
        server.expect_silence(0.3)


# --- the official SDK client in legacy mode ---------------------------------------------------------------

INTERACTIVE = {
    "test_streaming_elicitation": "Streaming complete",
    "test_input_required_result_elicitation": "Hello, Ada!",
    "test_input_required_result_sampling": "Sampling result: short",
    "test_input_required_result_list_roots": "Found 1 root(s)",
    "test_input_required_result_request_state": "state-ok",
    "test_input_required_result_multiple_inputs": "Name: Ada; Greeting: short; Roots: 1",
    "test_input_required_result_multi_round": "Multi-round complete for Ada who likes teal",
    "test_input_required_result_tampered_state": "integrity-ok",
    "test_input_required_result_capabilities": "capabilities-ok",
    "test_url_elicitation": "URL elicitation finished with action 'accept'",
}


class Callbacks:
    def __init__(self, accept: bool = True) -> None:
        self.accept = accept
        self.asked: list[Any] = []

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params)
        if not self.accept:
            return types.ElicitResult(action="decline")
        if params.mode == "url":
            return types.ElicitResult(action="accept")
        schema = params.requested_schema if isinstance(params.requested_schema, dict) else params.requested_schema.model_dump()
        answers = {"name": "Ada", "color": "teal", "text": "more", "value": "v", "ok": True, "confirm": True}
        return types.ElicitResult(action="accept", content={k: answers.get(k, True) for k in schema["properties"]})

    async def sample(self, context: Any, params: Any) -> types.CreateMessageResult:
        self.asked.append(params)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="short"), model="m")

    async def roots(self, context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/interop", name="interop")])

    def options(self) -> dict[str, Any]:
        return {"elicitation_callback": self.elicit, "sampling_callback": self.sample, "list_roots_callback": self.roots}


@contextlib.asynccontextmanager
async def sdk(args: list[str], **options: Any) -> AsyncIterator[Client]:
    env = {name: value for name, value in os.environ.items() if name.startswith("COVERAGE")}
    parameters = StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO_ROOT), env=env)
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(parameters, errlog=errlog), mode="legacy", read_timeout_seconds=10.0, **options) as client:
            yield client


@pytest.mark.req("LEGACY-CLIENT-INPUT-REQUESTS", "MRTR-USE-PATTERN")
async def test_the_sdk_client_in_legacy_mode_completes_every_interactive_everything_tool() -> None:
    callbacks = Callbacks()
    with anyio.fail_after(60):
        async with sdk(["-m", MODULE], **callbacks.options()) as client:
            assert client.protocol_version == "2025-11-25"
            for name, expected in INTERACTIVE.items():
                result = await client.call_tool(name, {})
                assert not result.is_error, (name, result)
                assert expected in result.content[0].text, (name, result.content[0].text)


@pytest.mark.req("LEGACY-CLIENT-INPUT-REQUESTS", "FS-DELETE-CONFIRMED")
@pytest.mark.parametrize("accept", [True, False], ids=["accept-deletes", "decline-keeps"])
async def test_the_sdk_client_in_legacy_mode_confirms_fs_delete_file(tmp_path: Path, accept: bool) -> None:
    doomed = tmp_path / "doomed.txt"
    doomed.write_text("bye\n")
    callbacks = Callbacks(accept)
    with anyio.fail_after(30):
        async with sdk(["-m", "mcp_ref_fs", str(tmp_path)], **callbacks.options()) as client:
            result = await client.call_tool("delete_file", {"path": str(doomed)})
    assert len(callbacks.asked) == 1
    assert doomed.exists() is not accept, result
