"""Wire tests of the bundled demonstration server, ``mcp-ref-everything``.

Each test spawns ``python -m mcp_ref_everything`` and talks to it over stdio through
``mcp_ref.kit.testing.Client``, which checks every line the server writes (one JSON object, no
server-to-client request in the 2026-07-28 era), validates it against the official schemas
(``tests.schema_check.schemas()``), and checks the exit status when the test closes it. The
behaviours checked are the ones the official conformance suite relies on; the suite itself runs
with ``make conformance`` (tools/conformance/).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from mcp_ref.kit.testing import Client, RequestError
from tests.schema_check import schemas

COMMAND = [sys.executable, "-m", "mcp_ref_everything"]
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def everything(**options: Any) -> Client:
    return Client(COMMAND, schemas=schemas(), **options)


def answer_name_then_colour(params: dict[str, Any]) -> dict[str, Any]:
    """An elicitation callback: Alice for a form asking for a name, blue for one asking for a colour."""
    wanted = params["requestedSchema"]["properties"]
    return {"action": "accept", "content": {"name": "Alice"} if "name" in wanted else {"color": "blue"}}


@pytest.mark.req("DISC-SERVER-MUST-IMPLEMENT", "TOOLS-DEFINITION-FIELDS")
def test_first_listed_tool_succeeds_with_empty_arguments_and_every_tool_and_prompt_has_a_description() -> None:
    with everything() as client:
        tools = client.list_tools()
        prompts = client.list_prompts()
        assert [t for t in tools if not t.get("description")] == []
        assert [p for p in prompts if not p.get("description")] == []
        first = client.call_tool(tools[0]["name"], {})
        assert not first.is_error and first.text


@pytest.mark.req("PROG-TOKEN-ECHOED", "PROG-INCREASING")
def test_progress_notifications_echo_the_token_increase_and_precede_the_response() -> None:
    with everything() as client:
        reply = client.send_request("tools/call", {"name": "test_tool_with_progress", "arguments": {}}, progress_token=7).reply()
        progress = reply.progress
        assert reply.notifications == client.notifications  # all of them came before the response
        assert [n["method"] for n in reply.notifications] == ["notifications/progress"] * len(progress)
        assert len(progress) >= 3
        assert all(p["progressToken"] == 7 and type(p["progressToken"]) is int for p in progress)
        values = [p["progress"] for p in progress]
        assert values == sorted(set(values)), values
        assert reply.text == "Progress reported with token 7"


@pytest.mark.req("BASE-MISSING-CAPABILITY-32021")
def test_missing_capability_tool_is_refused_with_32021_naming_sampling_unless_sampling_is_declared() -> None:
    with everything(capabilities={}) as client:
        with pytest.raises(RequestError) as refused:
            client.call_tool("test_missing_capability")
        assert refused.value.code == -32021
        assert refused.value.data == {"requiredCapabilities": {"sampling": {}}}
    with everything(capabilities={"sampling": {}}) as client:
        assert not client.call_tool("test_missing_capability").is_error


@pytest.mark.req("LOG-PER-REQUEST-LEVEL")
def test_logging_tool_sends_a_log_notification_only_when_the_request_sets_a_log_level() -> None:
    with everything() as client:
        silent = client.call_tool("test_logging_tool")
        assert [n for n in silent.notifications if n["method"] == "notifications/message"] == []
        client.log_level = "info"
        logged = client.call_tool("test_logging_tool")
        assert [n["method"] for n in logged.notifications] == ["notifications/message"]
        assert logged.notifications[0]["params"]["level"] == "info"


@pytest.mark.req("MRTR-INPUT-REQUIRED-RESULT", "MRTR-RETRY-COMPLETES")
def test_elicitation_tool_asks_for_a_name_then_completes_when_retried_with_the_answer_and_state() -> None:
    with everything(on_elicitation=answer_name_then_colour) as client:
        reply = client.call_tool("test_input_required_result_elicitation")
        (first,) = reply.rounds
        assert first["resultType"] == "input_required"
        assert first["inputRequests"]["user_name"]["method"] == "elicitation/create"
        assert isinstance(first["requestState"], str)
        assert reply["resultType"] == "complete"  # the retry carried the answer and the state
        assert reply.text == "Hello, Alice!"


@pytest.mark.req("MRTR-MULTIPLE-ROUNDS")
def test_multi_round_tool_asks_twice_with_different_states_then_completes() -> None:
    with everything(on_elicitation=answer_name_then_colour) as client:
        reply = client.call_tool("test_input_required_result_multi_round")
        round1, round2 = reply.rounds
        assert list(round1["inputRequests"]) == ["step1"]
        assert round2["resultType"] == "input_required", round2
        assert list(round2["inputRequests"]) == ["step2"]
        assert round2["requestState"] != round1["requestState"]
        assert reply.text == "Multi-round complete for Alice who likes blue"


@pytest.mark.req("MRTR-STATE-INTEGRITY")
def test_tampered_request_state_is_rejected_with_invalid_params() -> None:
    call = {"name": "test_input_required_result_tampered_state", "arguments": {}}
    with everything(capabilities={"elicitation": {}}) as client:
        first = client.request("tools/call", call)
        assert first["resultType"] == "input_required"
        tampered = client.request(
            "tools/call",
            {**call, "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}}, "requestState": first["requestState"] + "-TAMPERED"},
            check=False,
        )
        assert tampered.error is not None and tampered.error["code"] == -32602


@pytest.mark.req("MRTR-DECLARED-CAPABILITIES-ONLY")
def test_capabilities_tool_asks_only_for_what_the_request_declares() -> None:
    with everything(capabilities={"sampling": {}}) as client:
        result = client.request("tools/call", {"name": "test_input_required_result_capabilities", "arguments": {}})
        assert result["resultType"] == "input_required"
        assert [r["method"] for r in result["inputRequests"].values()] == ["sampling/createMessage"]


@pytest.mark.req("SUB-ACK-FIRST", "SUB-NOTIFICATIONS-CARRY-ID", "SUB-ONLY-REQUESTED-TYPES")
def test_trigger_tool_change_mutates_the_tool_list_and_notifies_only_streams_that_asked_for_it() -> None:
    with everything() as client:
        tools_stream, prompts_stream = client.listen(tools=True), client.listen(prompts=True)
        for stream, wanted in ((tools_stream, "toolsListChanged"), (prompts_stream, "promptsListChanged")):
            (ack,) = stream.notifications
            assert ack["method"] == "notifications/subscriptions/acknowledged"  # the stream's first message
            assert ack["params"]["_meta"][SUBSCRIPTION_ID] == stream.id
            assert stream.acknowledged == {wanted: True}
        before = {t["name"] for t in client.list_tools()}
        assert not client.call_tool("test_trigger_tool_change").is_error
        changed = tools_stream.notifications[1:]
        assert [(n["method"], n["params"]["_meta"][SUBSCRIPTION_ID]) for n in changed] == [("notifications/tools/list_changed", tools_stream.id)]
        assert len(prompts_stream.notifications) == 1  # the acknowledgement only
        after = {t["name"] for t in client.list_tools()}
        assert after ^ before == {"test_dynamic_tool"}
        tools_stream.cancel()
        prompts_stream.cancel()
    # Leaving the block closed stdin: a response to a cancelled stream would have failed the close.


@pytest.mark.req("RES-TEMPLATE-MATCH", "RES-NOT-FOUND-32602")
def test_template_resource_substitutes_the_id_and_unknown_uris_are_32602_with_the_uri() -> None:
    with everything() as client:
        assert client.list_resources()[0]["uri"] == "test://static-text"
        contents = client.read_resource("test://template/123/data")["contents"]
        assert contents[0]["uri"] == "test://template/123/data" and "123" in contents[0]["text"]
        missing = "test://nonexistent-resource-for-conformance-testing"
        with pytest.raises(RequestError) as error:
            client.read_resource(missing)
        assert error.value.code == -32602 and error.value.data["uri"] == missing


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
