"""The conformance bridge (tools/conformance/bridge.py): Streamable HTTP in front of a stdio server.

`make conformance` runs the official referee through it; these tests drive the bridge itself
with a few HTTP requests against a spawned `mcp-ref-everything`, in both eras, so the bridge is
covered without npm. The referee run itself is opt-in (MCP_REF_CONFORMANCE=1): it installs the
referee from npm and takes about 40 s.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tools.conformance import headers
from tools.conformance.bridge import _envelope_problem, _is_loopback_host
from tools.http11 import Request

REPO = Path(__file__).resolve().parents[1]
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "bridge-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    folder = tmp_path_factory.mktemp("bridge")
    ready = folder / "url"
    stats = folder / "stats.json"
    process = subprocess.Popen(
        [sys.executable, str(REPO / "tools" / "conformance" / "bridge.py"), "--ready-file", str(ready),
         "--stats-file", str(stats), "--", sys.executable, "-m", "mcp_ref_everything"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = process.stdout.readline().decode().strip()  # printed once the endpoint accepts connections
    assert url.startswith("http://127.0.0.1:"), process.stderr.read().decode()
    host, port = url.removeprefix("http://").removesuffix("/mcp").split(":")
    yield host, int(port)
    process.terminate()
    assert process.wait(10) == 0
    assert json.loads(stats.read_text())["requests_forwarded"] > 0


def post(endpoint: tuple[str, int], body: Any, headers_: dict[str, str] | None = None,
         method: str = "POST") -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection(*endpoint, timeout=10)
    all_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers_ or {})}
    connection.request(method, "/mcp", body=None if body is None else json.dumps(body), headers=all_headers)
    return connection.getresponse()


def modern(endpoint: tuple[str, int], request_id: Any, method: str, params: dict[str, Any] | None = None,
           **extra_headers: str) -> http.client.HTTPResponse:
    params = {**(params or {}), "_meta": {**META, **(params or {}).get("_meta", {})}}
    sent = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if "name" in params:
        sent["Mcp-Name"] = params["name"]
    sent.update({key.replace("_", "-"): value for key, value in extra_headers.items()})
    return post(endpoint, {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, sent)


def events(response: http.client.HTTPResponse, count: int | None = None) -> list[dict[str, Any]]:
    """The JSON messages of an SSE answer: ``count`` of them, or all until the stream ends."""
    found = []
    while count is None or len(found) < count:
        line = response.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            found.append(json.loads(line[6:]))
    return found


def test_a_modern_call_with_progress_streams_the_notifications_then_the_result_under_the_clients_id(bridge):
    response = modern(bridge, "call-1", "tools/call",
                      {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p"}})
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/event-stream"
    messages = events(response)
    assert [m["params"]["progress"] for m in messages[:-1]] == [0, 50, 100]
    assert {m["params"]["progressToken"] for m in messages[:-1]} == {"p"}
    assert messages[-1]["id"] == "call-1" and messages[-1]["result"]["resultType"] == "complete"


def test_a_quick_modern_answer_is_plain_json(bridge):
    response = modern(bridge, 5, "tools/call", {"name": "test_simple_text", "arguments": {}})
    assert (response.status, response.getheader("Content-Type")) == (200, "application/json")
    assert json.loads(response.read())["id"] == 5


def test_the_servers_error_codes_become_the_statuses_the_http_binding_names(bridge):
    unknown = modern(bridge, 6, "no/such/method")
    assert unknown.status == 404 and json.loads(unknown.read())["error"]["code"] == -32601
    no_meta = post(bridge, {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}},
                   {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    assert no_meta.status == 400 and json.loads(no_meta.read())["error"]["code"] == -32602


def test_headers_that_disagree_with_the_body_are_a_400_header_mismatch_carrying_the_request_id(bridge):
    for request_id, extra in ((8, {"Mcp_Method": "tools/list"}), (9, {"Mcp_Name": "test_error_handling"})):
        response = modern(bridge, request_id, "tools/call", {"name": "test_simple_text", "arguments": {}}, **extra)
        body = json.loads(response.read())
        assert (response.status, body["error"]["code"], body["id"]) == (400, -32020, request_id)
        assert body["error"]["message"].endswith("(rejected by the HTTP bridge)")


def test_an_x_mcp_header_argument_must_be_mirrored_in_its_mcp_param_header(bridge):
    call = {"name": "test_x_mcp_header", "arguments": {"region": "us-west1"}}
    missing = modern(bridge, 10, "tools/call", call)
    assert missing.status == 400 and json.loads(missing.read())["error"]["code"] == -32020
    mirrored = modern(bridge, 11, "tools/call", call, Mcp_Param_Region="us-west1")
    assert mirrored.status == 200 and "result" in json.loads(mirrored.read())


def test_a_foreign_origin_or_host_is_refused_and_get_without_a_session_is_405(bridge):
    assert post(bridge, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Origin": "http://evil.example"}).status == 403
    assert post(bridge, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Host": "evil.example"}).status == 421
    assert post(bridge, None, method="GET").status == 405


def test_a_listen_stream_gets_its_acknowledgement_then_the_changes_it_asked_for(bridge):
    listen = modern(bridge, "listen-1", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    acknowledged = events(listen, 1)[0]
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
    assert acknowledged["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
    trigger = modern(bridge, 12, "tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
    assert trigger.status == 200
    changed = events(listen, 1)[0]
    assert changed["method"] == "notifications/tools/list_changed"
    assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
    listen.close()  # the disconnect is the cancellation; the bridge keeps serving
    assert modern(bridge, 13, "tools/list").status == 200


def _initialize(endpoint: tuple[str, int], capabilities: dict[str, Any]) -> str:
    response = post(endpoint, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "legacy", "version": "1"}}})
    assert response.status == 200 and json.loads(response.read())["result"]["protocolVersion"] == "2025-11-25"
    session = response.getheader("Mcp-Session-Id")
    assert session and all(0x21 <= ord(c) <= 0x7E for c in session)
    ready = post(endpoint, {"jsonrpc": "2.0", "method": "notifications/initialized"}, _legacy(session))
    assert ready.status == 202
    return session


def _legacy(session: str) -> dict[str, str]:
    return {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}


def test_an_initialize_era_session_asks_the_client_on_the_requests_stream_and_takes_the_posted_answer(bridge):
    session = _initialize(bridge, {"sampling": {}})
    call = post(bridge, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "test_sampling", "arguments": {"prompt": "Capital of France?"}}}, _legacy(session))
    assert call.getheader("Content-Type") == "text/event-stream"
    ask = events(call, 1)[0]
    assert ask["method"] == "sampling/createMessage"
    assert ask["params"]["messages"][0]["content"]["text"] == "Capital of France?"
    answer = {"jsonrpc": "2.0", "id": ask["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}}
    assert post(bridge, answer, _legacy(session)).status == 202
    final = events(call)[-1]
    assert final["id"] == 1 and final["result"]["content"][0]["text"] == "LLM response: Paris"


def test_a_deleted_session_answers_404_and_requests_without_one_are_refused(bridge):
    session = _initialize(bridge, {})
    assert post(bridge, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, _legacy(session)).status == 200
    assert post(bridge, None, _legacy(session), method="DELETE").status == 200
    assert post(bridge, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, _legacy(session)).status == 404
    no_session = post(bridge, {"jsonrpc": "2.0", "id": 4, "method": "ping"}, {"MCP-Protocol-Version": "2025-11-25"})
    assert no_session.status == 400


def test_a_get_stream_carries_what_no_request_is_waiting_for(bridge):
    session = _initialize(bridge, {})
    stream = post(bridge, None, {"Mcp-Session-Id": session, "Accept": "text/event-stream"}, method="GET")
    assert stream.status == 200
    assert post(bridge, None, {"Mcp-Session-Id": session, "Accept": "text/event-stream"}, method="GET").status == 409
    subscribe = post(bridge, {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                              "params": {"name": "test_trigger_tool_change", "arguments": {}}}, _legacy(session))
    assert subscribe.status == 200 and json.loads(subscribe.read())["id"] == 5
    changed = events(stream, 1)[0]
    assert changed["method"] == "notifications/tools/list_changed"


def test_an_initialize_era_cancellation_names_the_clients_id_and_ends_that_request_without_a_result(bridge):
    session = _initialize(bridge, {})
    call = post(bridge, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "test_cancellable_wait", "arguments": {"seconds": 10}, "_meta": {"progressToken": "w"}}}, _legacy(session))
    assert events(call, 1)[0]["params"]["progressToken"] == "w"  # it is running
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "no longer needed"}}
    assert post(bridge, cancel, _legacy(session)).status == 202
    rest = events(call)  # the stream ends: no result follows a cancellation
    assert [m for m in rest if "result" in m or "error" in m] == []


def test_the_header_value_rules_decode_base64_strictly_and_compare_numbers_numerically():
    assert headers.decode("=?base64?SGVsbG8=?=") == "Hello"
    assert headers.decode("=?base64?SGVsbG8?=") is None  # bad padding
    assert headers.decode("=?base64?SGVs!!!bG8=?=") is None
    assert headers.decode("SGVsbG8=") == "SGVsbG8="  # no sentinel: a literal
    schema = {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"},
                                               "flag": {"type": "boolean", "x-mcp-header": "Flag"}}}
    request = Request("POST", "/mcp", [("mcp-param-n", "42.0"), ("mcp-param-flag", "true")])
    assert headers.check_params(request, {"n": 42, "flag": True}, schema) is None
    assert "does not match" in headers.check_params(request, {"n": 41, "flag": True}, schema)
    assert "missing" in headers.check_params(Request("POST", "/mcp", []), {"n": 1}, schema)


def test_loopback_hosts_and_envelopes_are_told_apart():
    assert all(map(_is_loopback_host, ["127.0.0.1:8080", "localhost", "[::1]:3000", "LOCALHOST:1"]))
    assert not any(map(_is_loopback_host, ["evil.example", "127.0.0.2", "evil.example:127"]))
    assert _envelope_problem([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert _envelope_problem({"jsonrpc": "2.0", "id": None, "method": "ping"})
    assert _envelope_problem({"jsonrpc": "2.0", "id": 1, "result": {}}) is None
    assert _envelope_problem({"jsonrpc": "2.0", "id": 1, "method": "ping"}) is None


@pytest.mark.skipif(os.environ.get("MCP_REF_CONFORMANCE") != "1",
                    reason="runs the official referee (npm install, ~40 s): set MCP_REF_CONFORMANCE=1, or run make conformance")
def test_the_official_referee_passes_every_scenario_through_the_bridge():
    if shutil.which("npm") is None:
        pytest.skip("MCP_REF_CONFORMANCE=1, but npm is not installed: the referee is an npm package")
    result = subprocess.run([sys.executable, str(REPO / "tools" / "conformance" / "run.py"),
                             "--bin", str(Path(sys.executable).parent)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
