"""Multi round-trip requests (basic/patterns/mrtr): asking the client for input without requests.

The interim results and what the server does with malformed retries are checked over stdio
against ``tests.servers.interop_server`` (a real process; every message is checked against the
official schema by ``tests.wire``). Complete round trips -- the answers given, the state echoed,
until a final result -- go through ``mcp_ref.kit.testing.Client`` with answering callbacks, in
process against the same server (``build_server``) and over stdio for legacy clients. Rules that
need a handler the example server does not have -- one that counts its runs, asks from a method
that may not ask, or runs against a fake clock -- are tested in-process with ``tests.memory``.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_ref import (
    CacheHint,
    InputRequired,
    Prompt,
    PromptArgument,
    Server,
    elicit_form,
    sample,
)
from mcp_ref.features import requeststate
from mcp_ref.kit.testing import AsyncClient, Client
from tests import memory
from tests.schema_check import schemas
from tests.servers.interop_server import build_server
from tests.wire import REPO_ROOT, ServerProcess, error_of, modern_request, result_of

INTEROP = "tests.servers.interop_server"
FORM = {"elicitation": {"form": {}}}
ALL_CAPABILITIES = {"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}}
NAME_ANSWER = {"action": "accept", "content": {"name": "Ada"}}
MODERN_ENV = {"MCP_REF_MODERN_ONLY": None, "MCP_REF_STATE_KEY": None}

ANSWERS = {"name": "Ada", "colour": "teal", "topic": "owls", "reveal": True}
_ids = itertools.count(1)


def answer_form(params: dict[str, Any]) -> dict[str, Any]:
    """An elicitation callback: the canned answer (``ANSWERS``) to each field the form asks for."""
    return {"action": "accept", "content": {field: ANSWERS[field] for field in params["requestedSchema"]["properties"]}}


def interop_client(**options: Any) -> Client:
    """The interop server in this process (both eras, a random state key), behind a test client."""
    return Client(build_server(modern_only=False), schemas=schemas(), **options)


@pytest.fixture(scope="module")
def interop() -> Any:
    """One interop server for the module: the modern era is stateless, so tests cannot disturb each other."""
    with ServerProcess(module=INTEROP, env=MODERN_ENV) as process:
        yield process


def ask(
    process: ServerProcess,
    method: str,
    params: dict[str, Any],
    capabilities: dict[str, Any] | None = None,
    **retry: Any,
) -> dict[str, Any]:
    """Send one modern request (``retry`` adds ``inputResponses``/``requestState``); return the response."""
    body = {**params, **retry}
    return process.request(modern_request(next(_ids), method, body, capabilities=capabilities))


def tool(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "arguments": arguments or {}}


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def tamper(state: str) -> str:
    """What a malicious client would try: rewrite the handler state inside the token, keep the MAC.

    (The payload is readable JSON because this server only signs its state; nothing in it is secret.)
    """
    payload, mac = state.split(".")
    sealed = json.loads(unb64(payload))
    sealed["s"] = {"known": {"name": "Mallory"}, "admin": True}
    forged = json.dumps(sealed, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(forged).decode().rstrip("=") + "." + mac


# --- the interim result and the retry -----------------------------------------------------------


@pytest.mark.req(
    "MRTR-INPUT-REQUIRED-RESULT", "MRTR-REQUESTS-OR-STATE", "MRTR-INPUT-REQUEST-KINDS", "ELIC-FORM-FIELDS", "CACHE-INTERIM-NO-HINTS"
)
def test_tool_needing_input_answers_input_required_with_requests_and_sealed_state(interop: ServerProcess) -> None:
    result = result_of(ask(interop, "tools/call", tool("ask_name"), FORM))
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {
        "name": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "What is your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "title": "Your name"}},
                    "required": ["name"],
                },
            },
        }
    }
    assert isinstance(result["requestState"], str) and result["requestState"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "interop-server"
    assert "ttlMs" not in result and "cacheScope" not in result
    assert "content" not in result


ASKING_REQUESTS = [
    pytest.param("tools/call", tool("ask_name"), id="form-elicitation"),
    pytest.param("tools/call", tool("connect_account"), id="url-elicitation"),
    pytest.param("tools/call", tool("summarize", {"text": "t", "use_tools": True}), id="sampling"),
    pytest.param("tools/call", tool("list_client_roots"), id="roots"),
    pytest.param("prompts/get", {"name": "interview", "arguments": {}}, id="prompt"),
    pytest.param("resources/read", {"uri": "vault://secret"}, id="resource"),
]


@pytest.mark.req("MRTR-USE-PATTERN")
@pytest.mark.parametrize(("method", "params"), ASKING_REQUESTS)
def test_input_is_asked_for_only_inside_the_result_never_with_a_request(interop: ServerProcess, method: str, params: dict[str, Any]) -> None:
    request = modern_request(next(_ids), method, params, capabilities=ALL_CAPABILITIES)
    interop.send(request)
    messages = interop.read_until(lambda m: "id" in m and m["id"] == request["id"])
    assert len(messages) == 1  # nothing before the response (the harness also rejects any request)
    assert messages[0]["result"]["resultType"] == "input_required"
    assert {r["method"] for r in messages[0]["result"]["inputRequests"].values()} <= {
        "elicitation/create",
        "sampling/createMessage",
        "roots/list",
    }


@pytest.mark.req("MRTR-RETRY-COMPLETES")
def test_retry_with_the_answer_and_the_echoed_state_completes() -> None:
    with interop_client(on_elicitation=answer_form) as client:
        reply = client.call_tool("ask_name")
    (first,) = reply.rounds  # the retry echoed its requestState with the answer
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["name"]
    assert reply["resultType"] == "complete"
    assert reply.content == [{"type": "text", "text": "Hello, Ada!"}]


@pytest.mark.req("MRTR-SUPPORTED-METHODS-MAY", "RES-INPUT-REQUIRED-MAY", "CACHE-INTERIM-NO-HINTS")
def test_resource_read_may_answer_input_required_without_caching_hints(interop: ServerProcess) -> None:
    result = result_of(ask(interop, "resources/read", {"uri": "vault://secret"}, FORM))
    assert result["resultType"] == "input_required"
    assert set(result["inputRequests"]) == {"confirm"}
    assert "ttlMs" not in result and "cacheScope" not in result
    assert "contents" not in result


@pytest.mark.req("MRTR-RETRY-COMPLETES", "CACHE-HINTS-REQUIRED")
def test_resource_read_retry_completes_with_contents_and_caching_hints() -> None:
    with interop_client(on_elicitation=answer_form) as client:
        reply = client.read_resource("vault://secret")
    assert [list(interim["inputRequests"]) for interim in reply.rounds] == [["confirm"]]
    final = reply.result
    assert final["resultType"] == "complete"
    assert final["contents"] == [{"uri": "vault://secret", "text": "the vault is empty", "mimeType": "text/plain"}]
    assert final["ttlMs"] == 0 and final["cacheScope"] == "private"


@pytest.mark.req("MRTR-SUPPORTED-METHODS-MAY", "PROMPT-INPUT-REQUIRED-MAY")
def test_prompt_get_may_answer_input_required(interop: ServerProcess) -> None:
    result = result_of(ask(interop, "prompts/get", {"name": "interview", "arguments": {}}, FORM))
    assert result["resultType"] == "input_required"
    assert result["inputRequests"]["topic"]["method"] == "elicitation/create"
    assert "messages" not in result


@pytest.mark.req("MRTR-RETRY-COMPLETES")
def test_prompt_get_retry_completes_with_messages() -> None:
    with interop_client(on_elicitation=answer_form) as client:
        reply = client.get_prompt("interview", {})
    assert [list(interim["inputRequests"]) for interim in reply.rounds] == [["topic"]]
    final = reply.result
    assert final["resultType"] == "complete"
    assert final["messages"] == [{"role": "user", "content": {"type": "text", "text": "Interview me about owls."}}]


@pytest.mark.req("MRTR-MULTIPLE-ROUNDS")
def test_a_wizard_asks_one_question_per_round_carrying_what_it_learned_in_the_state() -> None:
    with interop_client(on_elicitation=answer_form) as client:
        reply = client.call_tool("wizard")
    first, second = reply.rounds
    assert set(first["inputRequests"]) == {"name"}
    assert second["resultType"] == "input_required"
    assert set(second["inputRequests"]) == {"colour"}
    assert second["requestState"] != first["requestState"]
    # The client's third round answers only the colour: the name must come back from the state.
    assert reply.content == [{"type": "text", "text": "Ada likes teal."}]


# --- capabilities -----------------------------------------------------------------------------

CAPABILITY_CASES = [
    # (tool, arguments, declared capabilities, the requiredCapabilities of the -32021 error or None when allowed)
    pytest.param("ask_name", {}, {}, {"elicitation": {"form": {}}}, id="form-elicitation-undeclared"),
    pytest.param("ask_name", {}, {"elicitation": {}}, None, id="empty-elicitation-means-form"),
    pytest.param("ask_name", {}, {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}, id="url-only-cannot-answer-a-form"),
    pytest.param("connect_account", {}, {"elicitation": {}}, {"elicitation": {"url": {}}}, id="empty-elicitation-is-not-url"),
    pytest.param("connect_account", {}, {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}, id="form-only-cannot-answer-a-url"),
    pytest.param("connect_account", {}, {"elicitation": {"url": {}}}, None, id="url-declared"),
    pytest.param("summarize", {"text": "t"}, {}, {"sampling": {}}, id="sampling-undeclared"),
    pytest.param("summarize", {"text": "t"}, {"sampling": {}}, None, id="sampling-declared"),
    pytest.param("summarize", {"text": "t", "use_tools": True}, {"sampling": {}}, {"sampling": {"tools": {}}}, id="sampling-tools-undeclared"),
    pytest.param("summarize", {"text": "t", "use_tools": True}, {"sampling": {"tools": {}}}, None, id="sampling-tools-declared"),
    pytest.param("list_client_roots", {}, {"elicitation": {}, "sampling": {}}, {"roots": {}}, id="roots-undeclared"),
    pytest.param("list_client_roots", {}, {"roots": {}}, None, id="roots-declared"),
]


@pytest.mark.req(
    "MRTR-DECLARED-CAPABILITIES-ONLY",
    "META-NO-UNDECLARED-CAPABILITY",
    "BASE-MISSING-CAPABILITY-32021",
    "ELIC-EMPTY-CAPABILITY-MEANS-FORM",
    "ELIC-MODE-SUPPORTED-ONLY",
    "SAMP-CAPABILITY",
    "SAMP-TOOLS-CAPABILITY",
    "ROOTS-CHECK-CAPABILITY-FIRST",
)
@pytest.mark.parametrize(("name", "arguments", "capabilities", "required"), CAPABILITY_CASES)
def test_input_requests_are_sent_only_for_capabilities_the_request_declared(
    interop: ServerProcess, name: str, arguments: dict[str, Any], capabilities: dict[str, Any], required: dict[str, Any] | None
) -> None:
    response = ask(interop, "tools/call", tool(name, arguments), capabilities)
    if required is None:
        assert result_of(response)["resultType"] == "input_required"
    else:
        error = error_of(response)
        assert error["code"] == -32021
        assert error["data"] == {"requiredCapabilities": required}


@pytest.mark.req("ELIC-URL-FIELDS")
def test_url_elicitation_request_has_url_mode_and_the_url(interop: ServerProcess) -> None:
    result = result_of(ask(interop, "tools/call", tool("connect_account"), {"elicitation": {"url": {}}}))
    assert result["inputRequests"]["sign_in"] == {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": "Sign in to connect your account", "url": "https://example.com/connect?demo=1"},
    }


@pytest.mark.req("SAMP-TOOLS-CAPABILITY")
def test_sampling_request_offering_tools_carries_them(interop: ServerProcess) -> None:
    result = result_of(ask(interop, "tools/call", tool("summarize", {"text": "t", "use_tools": True}), {"sampling": {"tools": {}}}))
    request = result["inputRequests"]["summary"]
    assert request["method"] == "sampling/createMessage"
    assert request["params"]["maxTokens"] == 60
    assert [t["name"] for t in request["params"]["tools"]] == ["word_count"]


# --- request state: integrity, expiry, binding --------------------------------------------------


@pytest.mark.req("MRTR-STATE-INTEGRITY", "MRTR-STATE-UNTRUSTED", "MRTR-VALIDATE-STATE")
def test_tampered_request_state_is_rejected_with_invalid_params(interop: ServerProcess) -> None:
    first = result_of(ask(interop, "tools/call", tool("wizard"), FORM))
    error = error_of(
        ask(interop, "tools/call", tool("wizard"), FORM, inputResponses={"name": NAME_ANSWER}, requestState=tamper(first["requestState"]))
    )
    assert error["code"] == -32602
    assert "integrity" in error["message"]


@pytest.mark.req("MRTR-STATE-INTEGRITY")
@pytest.mark.parametrize("state", ["", "not-a-token", "a.b.c", "!!!.???", 42], ids=["empty", "no-dot", "two-dots", "bad-base64", "number"])
def test_request_state_that_is_not_a_sealed_token_is_rejected(interop: ServerProcess, state: Any) -> None:
    error = error_of(ask(interop, "tools/call", tool("ask_name"), FORM, requestState=state))
    assert error["code"] == -32602


@pytest.mark.req("MRTR-STATE-SEALING", "BASE-STATELESS-NO-SAME-PROCESS", "BASE-STATELESS-EXPLICIT-STATE-ID")
def test_state_sealed_with_a_fixed_key_survives_a_server_restart() -> None:
    env = {**MODERN_ENV, "MCP_REF_STATE_KEY": "a fixed test key"}
    with ServerProcess(module=INTEROP, env=env) as before:
        first = result_of(ask(before, "tools/call", tool("wizard"), FORM))
        before.shutdown()
    with ServerProcess(module=INTEROP, env=env) as after:
        # The new process opens the old token (no answer yet, so it simply asks again).
        again = result_of(ask(after, "tools/call", tool("wizard"), FORM, requestState=first["requestState"]))
        assert again["resultType"] == "input_required"
        assert set(again["inputRequests"]) == {"name"}


@pytest.mark.req("MRTR-STATE-SEALING", "MRTR-STATE-INTEGRITY")
def test_state_sealed_with_a_random_key_is_rejected_after_a_restart() -> None:
    with ServerProcess(module=INTEROP, env=MODERN_ENV) as before:
        first = result_of(ask(before, "tools/call", tool("wizard"), FORM))
        before.shutdown()
    with ServerProcess(module=INTEROP, env=MODERN_ENV) as after:
        error = error_of(ask(after, "tools/call", tool("wizard"), FORM, requestState=first["requestState"]))
        assert error["code"] == -32602
        assert "integrity" in error["message"]


@pytest.mark.req("MRTR-NO-ASSUMED-FULFILMENT", "MRTR-STATE-SEALING", "BASE-STATELESS-NO-SAME-PROCESS", "BASE-STATELESS-EXPLICIT-STATE-ID")
async def test_an_unanswered_round_leaves_nothing_behind_and_another_instance_can_finish_it() -> None:
    def build() -> Server:
        server = Server("stateless", "1.0.0", state_key=b"shared between instances")

        @server.tool()
        async def greet(ctx: Any, args: dict[str, Any]) -> str:
            answer = ctx.ask("name", elicit_form("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}))
            return f"Hello, {answer['content']['name']}!"

        return server

    async with memory.serve(build()) as first:
        interim = await first.result("tools/call", {"name": "greet"}, meta=form_meta())
        # The round is over: nothing waits for the client, so the dispatcher goes idle (settle fails
        # if it does not). Waited for, not looked at: the request's task ends a loop turn or two after
        # it queued the interim result (two on Python 3.12+, whose wait_for no longer adds a task).
        await first.settle()
    async with memory.serve(build()) as second:
        final = await second.result(
            "tools/call",
            {"name": "greet", "inputResponses": {"name": NAME_ANSWER}, "requestState": interim["requestState"]},
            meta=form_meta(),
        )
    assert final["content"] == [{"type": "text", "text": "Hello, Ada!"}]


def counting_server(**options: Any) -> tuple[Server, list[dict[str, Any]]]:
    """A server whose ``confirm`` tool and ``confirm`` prompt record every run of their handlers."""
    server = Server("counting", "1.0.0", **options)
    runs: list[dict[str, Any]] = []
    question = elicit_form("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})

    @server.tool(input_schema={"type": "object", "properties": {"item": {"type": "string"}}})
    async def confirm(ctx: Any, args: dict[str, Any]) -> str:
        runs.append({"method": ctx.method, "state": ctx.state, "args": args})
        ctx.ask("ok", question, state={"item": args.get("item")})
        return "confirmed"

    @server.tool(input_schema={"type": "object", "properties": {"item": {"type": "string"}}})
    async def other(ctx: Any, args: dict[str, Any]) -> str:
        runs.append({"method": ctx.method, "state": ctx.state, "args": args})
        return "other"

    async def confirm_prompt(ctx: Any, args: dict[str, str]) -> str:
        runs.append({"method": ctx.method, "state": ctx.state, "args": args})
        return "prompt"

    server.add_prompt(Prompt("confirm", confirm_prompt, arguments=[PromptArgument("item")]))
    return server, runs


def form_meta() -> dict[str, Any]:
    return memory.modern_meta(capabilities=FORM)


async def first_state(client: memory.MemoryClient, item: str = "book") -> str:
    result = await client.result("tools/call", {"name": "confirm", "arguments": {"item": item}}, meta=form_meta())
    assert result["resultType"] == "input_required"
    return result["requestState"]


@pytest.mark.req("MRTR-STATE-UNTRUSTED", "MRTR-STATE-INTEGRITY")
async def test_tampered_state_never_reaches_the_handler() -> None:
    server, runs = counting_server()
    async with memory.serve(server) as client:
        state = await first_state(client)
        runs.clear()
        error = await client.error(
            "tools/call", {"name": "confirm", "arguments": {"item": "book"}, "requestState": tamper(state)}, meta=form_meta()
        )
    assert error["code"] == -32602
    assert runs == []


@pytest.mark.req("MRTR-STATE-REPLAY")
async def test_expired_state_is_rejected_before_the_handler_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SimpleNamespace(now=1_000_000.0)
    monkeypatch.setattr(requeststate, "time", SimpleNamespace(time=lambda: clock.now))
    server, runs = counting_server(state_ttl_seconds=30)
    async with memory.serve(server) as client:
        state = await first_state(client)
        clock.now += 31
        runs.clear()
        error = await client.error(
            "tools/call", {"name": "confirm", "arguments": {"item": "book"}, "requestState": state}, meta=form_meta()
        )
    assert error["code"] == -32602
    assert "expired" in error["message"]
    assert runs == []


@pytest.mark.req("MRTR-STATE-REPLAY")
async def test_state_within_its_lifetime_reaches_the_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SimpleNamespace(now=1_000_000.0)
    monkeypatch.setattr(requeststate, "time", SimpleNamespace(time=lambda: clock.now))
    server, runs = counting_server(state_ttl_seconds=30)
    async with memory.serve(server) as client:
        state = await first_state(client)
        clock.now += 29
        runs.clear()
        await client.result("tools/call", {"name": "confirm", "arguments": {"item": "book"}, "requestState": state}, meta=form_meta())
    assert runs == [{"method": "tools/call", "state": {"item": "book"}, "args": {"item": "book"}}]


REPLAYS = [
    pytest.param("tools/call", {"name": "other", "arguments": {"item": "book"}}, id="another-tool"),
    pytest.param("tools/call", {"name": "confirm", "arguments": {"item": "car"}}, id="other-arguments"),
    pytest.param("tools/call", {"name": "confirm", "arguments": {}}, id="arguments-dropped"),
    pytest.param("prompts/get", {"name": "confirm", "arguments": {"item": "book"}}, id="another-method-same-name-and-arguments"),
]


@pytest.mark.req("MRTR-STATE-REPLAY", "MRTR-STATE-UNTRUSTED")
@pytest.mark.parametrize(("method", "params"), REPLAYS)
async def test_state_replayed_on_a_different_request_is_rejected_and_the_handler_never_runs(method: str, params: dict[str, Any]) -> None:
    server, runs = counting_server()
    async with memory.serve(server) as client:
        state = await first_state(client, "book")
        runs.clear()
        error = await client.error(method, {**params, "requestState": state}, meta=form_meta())
    assert error["code"] == -32602
    assert "different request" in error["message"]
    assert runs == []


# --- input responses ---------------------------------------------------------------------------


@pytest.mark.req("MRTR-VALIDATE-INPUT-RESPONSES", "MRTR-PROTOCOL-ERRORS-AS-JSONRPC")
@pytest.mark.parametrize("responses", [[NAME_ANSWER], "name=Ada", 7], ids=["array", "string", "number"])
def test_input_responses_that_are_not_an_object_are_invalid_params(interop: ServerProcess, responses: Any) -> None:
    error = error_of(ask(interop, "tools/call", tool("ask_name"), FORM, inputResponses=responses))
    assert error["code"] == -32602


MALFORMED_ANSWERS = [
    pytest.param("ask_name", {}, FORM, "name", "Ada", id="elicitation-not-an-object"),
    pytest.param("ask_name", {}, FORM, "name", {"action": "maybe"}, id="elicitation-unknown-action"),
    pytest.param("ask_name", {}, FORM, "name", {"action": "accept", "content": ["Ada"]}, id="elicitation-content-not-an-object"),
    pytest.param("summarize", {"text": "t"}, {"sampling": {}}, "summary", {"role": "assistant", "content": {"type": "text", "text": "s"}}, id="sampling-without-model"),
    pytest.param("summarize", {"text": "t"}, {"sampling": {}}, "summary", {"role": "robot", "content": {"type": "text", "text": "s"}, "model": "m"}, id="sampling-bad-role"),
    pytest.param("summarize", {"text": "t"}, {"sampling": {}}, "summary", {"role": "assistant", "content": "s", "model": "m"}, id="sampling-content-not-a-block"),
    pytest.param("list_client_roots", {}, {"roots": {}}, "roots", {"roots": "file:///"}, id="roots-not-a-list"),
    pytest.param("list_client_roots", {}, {"roots": {}}, "roots", {"roots": [{"name": "no uri"}]}, id="root-without-uri"),
    pytest.param("list_client_roots", {}, {"roots": {}}, "roots", {"action": "accept"}, id="elicit-result-for-roots"),
]


@pytest.mark.req("MRTR-VALIDATE-INPUT-RESPONSES", "MRTR-PROTOCOL-ERRORS-AS-JSONRPC", "SAMP-VALIDATE-CONTENT")
@pytest.mark.parametrize(("name", "arguments", "capabilities", "key", "answer"), MALFORMED_ANSWERS)
def test_an_answer_of_the_wrong_shape_for_its_key_is_invalid_params(
    interop: ServerProcess, name: str, arguments: dict[str, Any], capabilities: dict[str, Any], key: str, answer: Any
) -> None:
    error = error_of(ask(interop, "tools/call", tool(name, arguments), capabilities, inputResponses={key: answer}))
    assert error["code"] == -32602
    assert error["data"] == {"key": key}


@pytest.mark.req("MRTR-IGNORE-UNKNOWN-RESPONSES")
def test_unknown_extra_keys_in_input_responses_are_ignored(interop: ServerProcess) -> None:
    responses = {"name": NAME_ANSWER, "unrelated": {"whatever": [1, 2]}, "roots": "not even a result"}
    result = result_of(ask(interop, "tools/call", tool("ask_name"), FORM, inputResponses=responses))
    assert result["content"] == [{"type": "text", "text": "Hello, Ada!"}]


@pytest.mark.req("MRTR-ASK-AGAIN-WHEN-MISSING")
def test_a_retry_without_the_needed_answer_is_asked_again_rather_than_failed(interop: ServerProcess) -> None:
    first = result_of(ask(interop, "tools/call", tool("ask_name"), FORM))
    again = result_of(
        ask(interop, "tools/call", tool("ask_name"), FORM, inputResponses={"unrelated": {}}, requestState=first["requestState"])
    )
    assert again["resultType"] == "input_required"
    assert again["inputRequests"] == first["inputRequests"]


@pytest.mark.req("MRTR-RETRY-COMPLETES")
def test_sampling_and_roots_answers_reach_the_tools() -> None:
    def sample_answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m"}

    def roots_answer(params: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"uri": "file:///a"}, {"uri": "file:///b", "name": "b"}]

    with interop_client(on_sampling=sample_answer, on_roots=roots_answer) as client:
        summary = client.call_tool("summarize", {"text": "a long story"})
        roots = client.call_tool("list_client_roots")
    assert [list(interim["inputRequests"]) for interim in summary.rounds] == [["summary"]]
    assert [list(interim["inputRequests"]) for interim in roots.rounds] == [["roots"]]
    assert summary.text == "Summary: short"
    assert roots.text == "2 root(s): file:///a, file:///b"


# --- in-process: ask_all, state-only rounds, methods that may not ask ---------------------------


@pytest.mark.req("MRTR-ASK-AGAIN-WHEN-MISSING", "ELIC-HANDLE-DECLINE-CANCEL")
async def test_ask_all_asks_only_for_the_keys_still_unanswered() -> None:
    server = Server("both", "1.0.0")

    @server.tool()
    async def both(ctx: Any, args: dict[str, Any]) -> str:
        answers = ctx.ask_all({"first": elicit_form("1?", {"type": "object", "properties": {}}), "second": elicit_form("2?", {"type": "object", "properties": {}})})
        return ",".join(answer["action"] for answer in answers.values())

    async with memory.serve(server) as client:
        opening = await client.result("tools/call", {"name": "both"}, meta=form_meta())
        partial = await client.result(
            "tools/call", {"name": "both", "inputResponses": {"first": {"action": "decline"}}}, meta=form_meta()
        )
        final = await client.result(
            "tools/call",
            {"name": "both", "inputResponses": {"first": {"action": "decline"}, "second": {"action": "cancel"}}},
            meta=form_meta(),
        )
    assert set(opening["inputRequests"]) == {"first", "second"}
    assert set(partial["inputRequests"]) == {"second"}
    assert final["content"] == [{"type": "text", "text": "decline,cancel"}]


@pytest.mark.req("MRTR-MULTIPLE-ROUNDS")
async def test_answers_from_earlier_rounds_travel_in_the_state_so_sequential_asks_finish() -> None:
    server = Server("sequential", "1.0.0")
    question = {"type": "object", "properties": {"v": {"type": "string"}}}

    @server.tool()
    async def two_steps(ctx: Any, args: dict[str, Any]) -> str:
        first = ctx.ask("first", elicit_form("First?", question))
        second = ctx.ask("second", elicit_form("Second?", question))
        return f"{first['content']['v']} then {second['content']['v']}"

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"v": {"First?": "x", "Second?": "y"}[params["message"]]}}

    async with AsyncClient(server, on_elicitation=answer, schemas=schemas()) as client:
        reply = await client.call_tool("two_steps")
    one, two = reply.rounds
    assert set(one["inputRequests"]) == {"first"}
    assert set(two["inputRequests"]) == {"second"}
    # Round three answered only the second question; the first answer came back from the state.
    assert reply.content == [{"type": "text", "text": "x then y"}]


@pytest.mark.req("MRTR-REQUESTS-OR-STATE")
async def test_a_state_only_round_carries_request_state_and_no_input_requests() -> None:
    server = Server("poller", "1.0.0")

    @server.tool()
    async def poll(ctx: Any, args: dict[str, Any]) -> str:
        polls = (ctx.state or 0) + 1
        if polls < 3:
            raise InputRequired(state=polls)
        return f"ready after {polls} polls"

    async with memory.serve(server) as client:
        first = await client.result("tools/call", {"name": "poll"})
        second = await client.result("tools/call", {"name": "poll", "requestState": first["requestState"]})
        final = await client.result("tools/call", {"name": "poll", "requestState": second["requestState"]})
    assert "inputRequests" not in first and first["resultType"] == "input_required"
    assert final["content"] == [{"type": "text", "text": "ready after 3 polls"}]


def asking_completer_server() -> Server:
    server = Server("asks-wrongly", "1.0.0")

    @server.prompt()
    async def topic(ctx: Any, args: dict[str, str]) -> str:
        return "t"

    @server.completer(prompt="topic")
    async def complete_topic(ctx: Any, argument: str, value: str, context: dict[str, str]) -> list[str]:
        ctx.ask("hint", elicit_form("Hint?", {"type": "object", "properties": {}}))
        return []

    @server.resource_lister
    async def more_resources(ctx: Any) -> list[dict[str, Any]]:
        ctx.ask("which", sample([{"role": "user", "content": {"type": "text", "text": "?"}}], 5))
        return []

    return server


@pytest.mark.req("MRTR-SUPPORTED-METHODS")
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "topic"}, "argument": {"name": "x", "value": ""}}),
        ("resources/list", {}),
    ],
    ids=["completion", "resources-list"],
)
async def test_a_handler_asking_for_input_on_a_method_that_may_not_ask_is_an_internal_error(method: str, params: dict[str, Any]) -> None:
    meta = memory.modern_meta(capabilities=ALL_CAPABILITIES)
    async with memory.serve(asking_completer_server()) as client:
        response = await client.call(method, params, meta=meta)
    assert response["error"]["code"] == -32603
    assert "cannot ask the client for input" in response["error"]["message"]


@pytest.mark.req("CACHE-RETRY-ZERO-TTL")
async def test_complete_result_of_a_resource_read_retry_carries_a_zero_ttl() -> None:
    server = Server("cached-vault", "1.0.0")

    @server.resource("vault://cached", name="cached", cache=CacheHint(60_000, "private"))
    async def cached(ctx: Any) -> str:
        ctx.ask("ok", elicit_form("Open?", {"type": "object", "properties": {}}))
        return "open"

    async with memory.serve(server) as client:
        result = await client.result(
            "resources/read", {"uri": "vault://cached", "inputResponses": {"ok": {"action": "accept"}}}, meta=form_meta()
        )
    assert result["contents"][0]["text"] == "open"
    assert result["ttlMs"] == 0


# --- legacy clients ------------------------------------------------------------------------------


def legacy_client() -> Client:
    """A 2025-11-25 session with no capabilities, over stdio to the interop server."""
    env = {name: value for name, value in os.environ.items() if name not in MODERN_ENV}
    return Client([sys.executable, "-m", INTEROP], era="legacy", env=env, cwd=REPO_ROOT, schemas=schemas())


@pytest.mark.req("LEGACY-MRTR-TOOL-ERROR")
def test_legacy_client_calling_a_tool_that_needs_input_gets_a_tool_error_saying_what_it_needs() -> None:
    with legacy_client() as client:
        reply = client.call_tool("ask_name")
    assert reply.rounds == []  # the server asked nothing
    result = reply.result
    assert result["isError"] is True
    message = result["content"][0]["text"]
    assert "elicitation.form" in message and "2026-07-28" in message and "2025-11-25" in message
    assert "resultType" not in result


@pytest.mark.req("LEGACY-MRTR-ERROR")
@pytest.mark.parametrize(
    ("method", "params", "needs"),
    [
        ("prompts/get", {"name": "interview", "arguments": {}}, "elicitation.form"),
        ("resources/read", {"uri": "vault://secret"}, "elicitation.form"),
    ],
    ids=["prompt", "resource"],
)
def test_legacy_client_getting_a_prompt_or_resource_that_needs_input_gets_an_error(method: str, params: dict[str, Any], needs: str) -> None:
    with legacy_client() as client:
        error = client.request(method, params, check=False).error
    assert error is not None and error["code"] == -32603
    assert needs in error["message"] and "2026-07-28" in error["message"]


@pytest.mark.req("MRTR-STATE-SEALING")
def test_sealed_state_payload_binds_method_and_request() -> None:
    """A white-box check of what the token binds, read side by side with requeststate.StateSealer."""
    sealer = requeststate.StateSealer(key=b"k" * 32)
    answered = {"ok": {"action": "accept"}}
    token = sealer.seal("tools/call", {"name": "t", "arguments": {"a": 1}}, {"step": 2}, answered, now=100.0)
    payload = json.loads(unb64(token.split(".")[0]))
    assert payload["m"] == "tools/call" and payload["s"] == {"step": 2} and payload["a"] == answered
    assert payload["e"] == 100 + requeststate.DEFAULT_STATE_TTL_SECONDS
    # Argument order does not matter to the binding; argument values do.
    opened = sealer.open(token, "tools/call", {"arguments": {"a": 1}, "name": "t"}, now=101.0)
    assert opened.state == {"step": 2} and opened.answered == answered
