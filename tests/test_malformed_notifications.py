"""A malformed notification is logged and ignored, never answered (issue 17).

Spec: basic/index#notifications (the receiver of a notification MUST NOT send a response) and
basic/patterns/cancellation#error-handling (invalid cancellation notifications, malformed ones
included, SHOULD be ignored). A message with a string ``method`` and no ``id`` is a notification
however broken the rest of it is: it has no id an answer could carry. Each test sends the
malformed notifications, then a request: the server handles lines in order and answers a bad
line the moment it reads it, so when the request's answer is the first line back, nothing was
answered before it.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from tests.wire import ServerProcess, cancel, encode_line, modern_request, tool_call

ACCEPTED = ["notifications/cancelled", "notifications/initialized", "notifications/roots/list_changed", "notifications/progress", "notifications/tasks/status", "notifications/made-up"]


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    process = ServerProcess(module="tests.servers.basic_server", env={"MCP_REF_LOG_LEVEL": "INFO"}, schema="auto")
    yield process
    process.close()


def raw(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def first_answer_is(server: ServerProcess, request: dict[str, Any]) -> dict[str, Any]:
    server.send(request)
    message = server.read_message()
    assert message.get("id") == request["id"], f"something was answered before the request: {message}"
    return message


@pytest.mark.req("BASE-NOTIFICATION-NO-RESPONSE", "CANCEL-INVALID-IGNORED", "BASE-PARAMS-OBJECT")
@pytest.mark.parametrize("params", ["oops", [1, 2], None, 7, True], ids=["string", "array", "null", "number", "bool"])
def test_a_notification_whose_params_are_not_an_object_is_logged_and_never_answered(server: ServerProcess, params: Any) -> None:
    server.send_raw(b"".join(raw({"jsonrpc": "2.0", "method": method, "params": params}) for method in ACCEPTED))
    assert "result" in first_answer_is(server, modern_request(1, "tools/list"))
    stderr = server.stderr_text()
    for method in ACCEPTED:
        assert f'ignoring a malformed notification {method}: "params" must be an object' in stderr, stderr


@pytest.mark.req("BASE-NOTIFICATION-NO-RESPONSE")
def test_a_notification_without_jsonrpc_2_0_is_logged_and_never_answered(server: ServerProcess) -> None:
    server.send_raw(raw({"method": "notifications/cancelled", "params": {"requestId": 1}}) + raw({"jsonrpc": "1.0", "method": "notifications/initialized"}))
    assert "result" in first_answer_is(server, modern_request(1, "tools/list"))
    assert server.stderr_text().count('"jsonrpc" must be "2.0"') == 2


@pytest.mark.req("CANCEL-INVALID-IGNORED")
@pytest.mark.parametrize(
    "params",
    [{"requestId": 1, "reason": 42}, {"requestId": 1, "_meta": []}, {"requestId": [1]}, {"reason": "no id"}],
    ids=["reason-not-a-string", "meta-not-an-object", "requestId-an-array", "no-requestId"],
)
def test_a_malformed_cancellation_cancels_nothing_and_a_valid_one_after_it_does(server: ServerProcess, params: dict[str, Any]) -> None:
    server.send(tool_call(1, "slow", {"steps": 2000, "interval": 0.05}))  # 100 s unless cancelled
    server.send_raw(raw({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}))
    assert "result" in first_answer_is(server, modern_request(2, "tools/list"))
    assert "ignoring a malformed notification notifications/cancelled" in server.stderr_text()
    assert "cancelled by the client" not in server.stderr_text()  # logged when the cancellation is handled, before request 2
    server.send(cancel(1, "now for real"))
    assert "result" in first_answer_is(server, modern_request(3, "tools/list"))  # and never an answer for 1
    assert "request 1 (tools/call) cancelled by the client: now for real" in server.stderr_text()


@pytest.mark.req("BASE-NOTIFICATION-NO-RESPONSE", "LEGACY-INITIALIZED-NOT-REQUIRED")
def test_a_legacy_session_ignores_a_malformed_initialized_and_keeps_serving(server: ServerProcess) -> None:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    assert "result" in server.request({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
    server.send_raw(encode_line({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"_meta": "x"}}))
    assert first_answer_is(server, {"jsonrpc": "2.0", "id": "ping", "method": "ping"})["result"] == {}
    assert 'ignoring a malformed notification notifications/initialized: "_meta" is not an object' in server.stderr_text()
