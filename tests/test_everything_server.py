"""Wire tests of the bundled demonstration server, ``mcp-ref-everything``.

Each test spawns ``python -m mcp_ref_everything`` and talks to it over stdio through
``tests.wire.ServerProcess``, which checks every line the server writes (one JSON object, no
server-to-client request) and validates it against the official 2026-07-28 schema
(``tests.schema_check.check_modern``). The behaviours checked are the ones the official
conformance suite relies on; the suite itself runs through ``shared/conformance/run.sh``.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from tests.wire import ServerProcess, cancel, modern_request, tool_call

MODULE = "mcp_ref_everything"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
ALL_INPUT_CAPABILITIES = {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}}

# Remove once mcp_ref/context.py keeps the dispatcher's inputResponses dict (these tests then pass;
# strict=True makes that XPASS fail loudly so the marker cannot outlive the bug).


def everything() -> ServerProcess:
    return ServerProcess(module=MODULE)


def call(server: ServerProcess, request_id: int, name: str, arguments: dict[str, Any] | None = None, **params: Any) -> list[dict[str, Any]]:
    """Send a tools/call (extra top-level ``params`` such as inputResponses go beside name/arguments);
    return every message up to and including its response."""
    capabilities = params.pop("capabilities", ALL_INPUT_CAPABILITIES)
    meta = params.pop("_meta", {})
    message = tool_call(request_id, name, arguments if arguments is not None else {}, capabilities=capabilities)
    message["params"].update(params)
    message["params"]["_meta"].update(meta)
    server.send(message)
    return server.read_until(lambda m: m.get("id") == request_id and "method" not in m)


def result_text(response: dict[str, Any]) -> str:
    assert "result" in response, response
    return " ".join(block["text"] for block in response["result"]["content"] if block["type"] == "text")


@pytest.mark.req("DISC-SERVER-MUST-IMPLEMENT", "TOOLS-DEFINITION-FIELDS")
def test_first_listed_tool_succeeds_with_empty_arguments_and_every_tool_and_prompt_has_a_description() -> None:
    with everything() as server:
        tools = server.request(modern_request(1, "tools/list"))["result"]["tools"]
        prompts = server.request(modern_request(2, "prompts/list"))["result"]["prompts"]
        assert [t for t in tools if not t.get("description")] == []
        assert [p for p in prompts if not p.get("description")] == []
        first = call(server, 3, tools[0]["name"], {})[-1]
        assert first["result"].get("isError") is not True and result_text(first)
        server.shutdown()


@pytest.mark.req("PROG-TOKEN-ECHOED", "PROG-INCREASING")
def test_progress_notifications_echo_the_token_increase_and_precede_the_response() -> None:
    with everything() as server:
        messages = call(server, 1, "test_tool_with_progress", _meta={"progressToken": 7})
        *notifications, response = messages
        assert [n["method"] for n in notifications] == ["notifications/progress"] * len(notifications)
        assert len(notifications) >= 3
        assert all(n["params"]["progressToken"] == 7 and type(n["params"]["progressToken"]) is int for n in notifications)
        values = [n["params"]["progress"] for n in notifications]
        assert values == sorted(set(values)), values
        assert "result" in response
        server.shutdown()


@pytest.mark.req("BASE-MISSING-CAPABILITY-32021")
def test_missing_capability_tool_is_refused_with_32021_naming_sampling_unless_sampling_is_declared() -> None:
    with everything() as server:
        refused = call(server, 1, "test_missing_capability", capabilities={})[-1]
        assert refused["error"]["code"] == -32021
        assert refused["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
        allowed = call(server, 2, "test_missing_capability", capabilities={"sampling": {}})[-1]
        assert allowed["result"].get("isError") is not True
        server.shutdown()


@pytest.mark.req("LOG-PER-REQUEST-LEVEL")
def test_logging_tool_sends_a_log_notification_only_when_the_request_sets_a_log_level() -> None:
    with everything() as server:
        silent = call(server, 1, "test_logging_tool")
        assert [m for m in silent if m.get("method") == "notifications/message"] == []
        logged = call(server, 2, "test_logging_tool", _meta={LOG_LEVEL: "info"})
        assert [m["method"] for m in logged[:-1]] == ["notifications/message"]
        assert logged[0]["params"]["level"] == "info"
        server.shutdown()


@pytest.mark.req("MRTR-INPUT-REQUIRED-RESULT", "MRTR-RETRY-COMPLETES")
def test_elicitation_tool_asks_for_a_name_then_completes_when_retried_with_the_answer_and_state() -> None:
    with everything() as server:
        first = call(server, 1, "test_input_required_result_elicitation")[-1]["result"]
        assert first["resultType"] == "input_required"
        assert first["inputRequests"]["user_name"]["method"] == "elicitation/create"
        assert isinstance(first["requestState"], str)
        answer = {"user_name": {"action": "accept", "content": {"name": "Alice"}}}
        retry = call(server, 2, "test_input_required_result_elicitation", inputResponses=answer, requestState=first["requestState"])[-1]
        assert retry["result"]["resultType"] == "complete"
        assert result_text(retry) == "Hello, Alice!"
        server.shutdown()


@pytest.mark.req("MRTR-MULTIPLE-ROUNDS")
def test_multi_round_tool_asks_twice_with_different_states_then_completes() -> None:
    with everything() as server:
        round1 = call(server, 1, "test_input_required_result_multi_round")[-1]["result"]
        assert list(round1["inputRequests"]) == ["step1"]
        round2 = call(
            server, 2, "test_input_required_result_multi_round",
            inputResponses={"step1": {"action": "accept", "content": {"name": "Alice"}}},
            requestState=round1["requestState"],
        )[-1]["result"]
        assert round2["resultType"] == "input_required", round2
        assert list(round2["inputRequests"]) == ["step2"]
        assert round2["requestState"] != round1["requestState"]
        round3 = call(
            server, 3, "test_input_required_result_multi_round",
            inputResponses={"step2": {"action": "accept", "content": {"color": "blue"}}},
            requestState=round2["requestState"],
        )[-1]
        assert result_text(round3) == "Multi-round complete for Alice who likes blue"
        server.shutdown()


@pytest.mark.req("MRTR-STATE-INTEGRITY")
def test_tampered_request_state_is_rejected_with_invalid_params() -> None:
    with everything() as server:
        first = call(server, 1, "test_input_required_result_tampered_state")[-1]["result"]
        tampered = call(
            server, 2, "test_input_required_result_tampered_state",
            inputResponses={"confirm": {"action": "accept", "content": {"ok": True}}},
            requestState=first["requestState"] + "-TAMPERED",
        )[-1]
        assert tampered["error"]["code"] == -32602
        server.shutdown()


@pytest.mark.req("MRTR-DECLARED-CAPABILITIES-ONLY")
def test_capabilities_tool_asks_only_for_what_the_request_declares() -> None:
    with everything() as server:
        result = call(server, 1, "test_input_required_result_capabilities", capabilities={"sampling": {}})[-1]["result"]
        assert result["resultType"] == "input_required"
        assert [r["method"] for r in result["inputRequests"].values()] == ["sampling/createMessage"]
        server.shutdown()


@pytest.mark.req("SUB-ACK-FIRST", "SUB-NOTIFICATIONS-CARRY-ID", "SUB-ONLY-REQUESTED-TYPES")
def test_trigger_tool_change_mutates_the_tool_list_and_notifies_only_streams_that_asked_for_it() -> None:
    with everything() as server:
        for listen_id, wanted in ((100, "toolsListChanged"), (101, "promptsListChanged")):
            server.send(modern_request(listen_id, "subscriptions/listen", {"notifications": {wanted: True}}))
            ack = server.read_message()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["_meta"][SUBSCRIPTION_ID] == listen_id
            assert ack["params"]["notifications"] == {wanted: True}
        before = {t["name"] for t in server.request(modern_request(1, "tools/list"))["result"]["tools"]}
        *notifications, response = call(server, 2, "test_trigger_tool_change", capabilities={})
        assert "result" in response
        assert [(n["method"], n["params"]["_meta"][SUBSCRIPTION_ID]) for n in notifications] == [
            ("notifications/tools/list_changed", 100)
        ]
        after = {t["name"] for t in server.request(modern_request(3, "tools/list"))["result"]["tools"]}
        assert after ^ before == {"test_dynamic_tool"}
        server.send_many([cancel(100), cancel(101)])
        assert server.shutdown() == []  # cancelled streams get no response


@pytest.mark.req("RES-TEMPLATE-MATCH", "RES-NOT-FOUND-32602")
def test_template_resource_substitutes_the_id_and_unknown_uris_are_32602_with_the_uri() -> None:
    with everything() as server:
        first = server.request(modern_request(1, "resources/list"))["result"]["resources"][0]
        assert first["uri"] == "test://static-text"
        contents = server.request(modern_request(2, "resources/read", {"uri": "test://template/123/data"}))["result"]["contents"]
        assert contents[0]["uri"] == "test://template/123/data" and "123" in contents[0]["text"]
        missing = "test://nonexistent-resource-for-conformance-testing"
        error = server.request(modern_request(3, "resources/read", {"uri": missing}))["error"]
        assert error["code"] == -32602 and error["data"]["uri"] == missing
        server.shutdown()


def test_help_and_version_answer_a_person_and_unknown_arguments_are_refused() -> None:
    def run(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mcp_ref_everything", *arguments], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )

    help_text = run("--help")
    assert help_text.returncode == 0 and help_text.stdout.startswith("usage: mcp-ref-everything")
    version = run("--version")
    assert version.returncode == 0 and version.stdout.strip() == "mcp-ref-everything 0.1.0"
    refused = run("--serve-http")
    assert refused.returncode == 2 and "unexpected arguments: --serve-http" in refused.stderr and refused.stdout == ""
