"""The tasks extension (``io.modelcontextprotocol/tasks``, ``mcp_ref/features/tasks.py``) over real stdio.

``mcp-ref-everything`` carries the conformance suite's task fixtures (greet, slow_compute,
failing_job, protocol_error_job, confirm_delete, multi_input, test_tool_with_task);
``tests/servers/tasks_server.py`` has small bounds and handlers that probe the edges. Every
message is checked against the official schemas (the extension's own for task results and
notifications, when at hand: see ``tests/schema_check.py``). Tests that follow a task to its end
the way a client would -- polling ``tasks/get``, answering its questions -- use
``mcp_ref.kit.testing.Client``; tests of each step's exact answer talk raw stdio (``tests.wire``).
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any, Callable

import pytest

from mcp_ref.kit.testing import Client, RequestError
from tests.schema_check import schemas
from tests.wire import REPO_ROOT, ServerProcess, call, cancel, error_of, modern_request, notification, request, result_of

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
FORM_AND_TASKS = {"elicitation": {}, **TASKS}
TERMINAL = ("completed", "failed", "cancelled")
ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
ENVELOPE = ("taskId", "status", "result", "error", "inputRequests")


def everything() -> ServerProcess:
    """mcp-ref-everything, to a client that declares the extension (``request`` and ``call``)."""
    return ServerProcess(module="mcp_ref_everything", capabilities=TASKS)


def edges() -> ServerProcess:
    """The tasks test server, to a client that declares the extension."""
    return ServerProcess(module="tests.servers.tasks_server", capabilities=TASKS)


def get(server: ServerProcess, task_id: str) -> dict[str, Any]:
    return result_of(request(server, "tasks/get", {"taskId": task_id}))


def wait_for(server: ServerProcess, task_id: str, *statuses: str, timeout: float = 10) -> dict[str, Any]:
    """Poll tasks/get until the status is one of ``statuses`` (default: any terminal one)."""
    wanted = statuses or TERMINAL
    deadline = time.monotonic() + timeout
    while True:
        task = get(server, task_id)
        if task["status"] in wanted:
            return task
        assert time.monotonic() < deadline, f"task {task_id} still {task['status']!r} after {timeout} s"
        time.sleep(0.05)


def update(server: ServerProcess, task_id: str, responses: Any) -> dict[str, Any]:
    return request(server, "tasks/update", {"taskId": task_id, "inputResponses": responses})


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def task_client(module: str = "mcp_ref_everything", **options: Any) -> Client:
    """A test client declaring the extension, over stdio to ``module``; it polls tasks every 50 ms."""
    return Client([sys.executable, "-m", module], tasks=True, poll_interval=0.05, cwd=REPO_ROOT, schemas=schemas(), **options)


def answers(*values: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An elicitation callback answering the edge server's "Value?" forms with ``values``, in order."""
    remaining = iter(values)
    return lambda params: accept(v=next(remaining))


# --- negotiation ------------------------------------------------------------------------------------


@pytest.mark.req("TASKS-EXTENSION-DECLARED")
def test_discover_declares_the_extension_only_where_a_tool_supports_tasks() -> None:
    with everything() as server:
        capabilities = result_of(request(server, "server/discover", {}))["capabilities"]
        assert capabilities["extensions"] == {"io.modelcontextprotocol/tasks": {}}
        assert "tasks" not in capabilities  # not the 2025-11-25 slot
    with ServerProcess(capabilities=TASKS) as server:  # the basic test server has no task tool
        assert "extensions" not in result_of(request(server, "server/discover", {}))["capabilities"]
        assert error_of(request(server, "tasks/get", {"taskId": "x"}))["code"] == -32601


@pytest.mark.req("TASKS-ONLY-TO-DECLARING-CLIENT")
def test_a_client_that_did_not_declare_the_extension_never_gets_a_task() -> None:
    with everything() as server:
        for capabilities in ({}, {"extensions": {}}, {"extensions": {"io.modelcontextprotocol/tasks": True}}):
            result = call(server, "slow_compute", {"seconds": 0.3}, capabilities=capabilities)
            assert result["resultType"] == "complete" and "taskId" not in result
            assert result["content"][0]["text"] == "job: computed for 0.3 s"
        # Declared on this request alone: that is what counts (no session).
        assert call(server, "slow_compute", {"seconds": 0.3})["resultType"] == "task"


@pytest.mark.req("TASKS-METHODS-NEED-CAPABILITY")
def test_tasks_methods_without_the_extension_are_missing_capability() -> None:
    with everything() as server:
        task_id = call(server, "slow_compute", {"seconds": 5})["taskId"]
        for method, params in (("tasks/get", {}), ("tasks/update", {"inputResponses": {}}), ("tasks/cancel", {})):
            error = error_of(request(server, method, {"taskId": task_id, **params}, capabilities={}))
            assert error["code"] == -32021
            assert error["data"] == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
        assert get(server, task_id)["status"] == "working"  # nothing happened to it


@pytest.mark.req("TASKS-REQUIRED-MISSING-CAPABILITY")
def test_a_required_task_tool_refuses_a_client_without_the_extension_before_running() -> None:
    with everything() as server:
        error = error_of(request(server, "tools/call", {"name": "failing_job", "arguments": {}}, capabilities={}))
        assert error["code"] == -32021
        assert error["data"]["requiredCapabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}
        assert "failing_job" in error["message"]


@pytest.mark.req("TASKS-REQUIRED-MISSING-CAPABILITY", "TASKS-MODERN-ONLY")
def test_legacy_clients_get_plain_results_and_no_tasks_methods() -> None:
    with ServerProcess(module="mcp_ref_everything", schema="legacy") as server:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {"extensions": TASKS["extensions"]}, "clientInfo": {"name": "t", "version": "1"}}
        initialized = result_of(server.request({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}))
        assert "extensions" not in initialized["capabilities"]
        server.send(notification("notifications/initialized"))
        plain = result_of(server.request({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow_compute", "arguments": {"seconds": 0.2}}}))
        assert plain["content"][0]["text"] == "job: computed for 0.2 s" and "taskId" not in plain
        assert error_of(server.request({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "failing_job", "arguments": {}}}))["code"] == -32021
        assert error_of(server.request({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": "x"}}))["code"] == -32601


# --- creation and polling -----------------------------------------------------------------------------


@pytest.mark.req("TASKS-RESULT-TYPE-TASK", "TASKS-CREATE-FLAT-SHAPE", "TASKS-DURABLE-BEFORE-RESPONSE", "TASKS-ID-UNGUESSABLE")
def test_a_long_call_is_answered_with_a_flat_task_handle_that_resolves_at_once() -> None:
    with everything() as server:
        created = call(server, "slow_compute", {"seconds": 1, "label": "create"})
        assert created["resultType"] == "task" and created["status"] == "working"
        for absent in ("task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval", "content"):
            assert absent not in created
        assert ISO_8601.match(created["createdAt"]) and ISO_8601.match(created["lastUpdatedAt"])
        assert created["ttlMs"] == 3_600_000 and created["pollIntervalMs"] == 500
        assert len(created["taskId"]) >= 22  # 128 random bits, URL-safe base64
        # Strongly consistent: the very next request finds it.
        assert get(server, created["taskId"])["taskId"] == created["taskId"]
        second = call(server, "slow_compute", {"seconds": 1})
        assert second["taskId"] != created["taskId"]


@pytest.mark.req("TASKS-GET-STATUS-SHAPES", "TASKS-GET-RESULT-TYPE-COMPLETE", "TASKS-NO-RELATED-TASK-META")
def test_tasks_get_shows_working_then_the_completed_result_inlined() -> None:
    with everything() as server:
        task_id = call(server, "slow_compute", {"seconds": 0.6, "label": "poll"})["taskId"]
        working = get(server, task_id)
        assert working["resultType"] == "complete" and working["status"] == "working"
        assert not {"result", "error", "inputRequests"} & set(working)
        done = wait_for(server, task_id)
        assert done["status"] == "completed" and done["resultType"] == "complete"
        assert done["result"]["content"] == [{"type": "text", "text": "poll: computed for 0.6 s"}]
        assert done["result"]["isError"] is False if "isError" in done["result"] else True
        assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})
        assert done["lastUpdatedAt"] >= done["createdAt"]
        # Kept after it was fetched, until its TTL.
        assert get(server, task_id) == done


@pytest.mark.req("TASKS-IMMEDIATE-RESULT")
def test_a_task_capable_call_that_finishes_quickly_is_answered_directly() -> None:
    with everything() as server:
        result = call(server, "slow_compute", {"seconds": 0, "label": "instant"})
        assert result["resultType"] == "complete" and result["content"][0]["text"] == "instant: computed for 0 s"
        # The legacy v1 `task` hint is tolerated and ignored.
        hinted = call(server, "greet", {"name": "v1"}, task={"ttl": 60000, "pollInterval": 100})
        assert hinted["resultType"] == "complete" and hinted["content"][0]["text"] == "Hello, v1!"


@pytest.mark.req("TASKS-TOOL-ERROR-COMPLETED", "TASKS-FAILED-CARRIES-ERROR", "TASKS-GET-STATUS-SHAPES")
def test_a_tool_error_completes_the_task_and_a_protocol_error_fails_it() -> None:
    with task_client() as client:
        reply = client.call_tool("failing_job")
        assert [handle["resultType"] for handle in reply.rounds] == ["task"]
        tool_error = reply.task
        assert tool_error is not None and tool_error["status"] == "completed" and reply.is_error
        assert "error" not in tool_error
        with pytest.raises(RequestError) as raised:
            client.call_tool("protocol_error_job")
        failed = raised.value.reply.task  # the tasks/get result
        assert failed["status"] == "failed" and failed["resultType"] == "complete" and not {"result", "inputRequests"} & set(failed)
        assert raised.value.error == failed["error"] == {"code": -32603, "message": "Internal error: the job's worker crashed"}
        assert failed["statusMessage"] == failed["error"]["message"]


@pytest.mark.req("TASKS-UNKNOWN-ID-INVALID-PARAMS", "TASKS-REMOVED-V1-METHODS")
def test_unknown_task_ids_are_invalid_params_and_v1_methods_do_not_exist() -> None:
    with everything() as server:
        for method, params in (("tasks/get", {}), ("tasks/update", {"inputResponses": {}}), ("tasks/cancel", {})):
            error = error_of(request(server, method, {"taskId": "no-such-task", **params}))
            assert error["code"] == -32602 and "not found" in error["message"]
            assert error_of(request(server, method, {"taskId": 7, **params}))["code"] == -32602
            assert error_of(request(server, method, {**params}))["code"] == -32602
        for removed in ("tasks/result", "tasks/list"):
            assert error_of(request(server, removed, {"taskId": "no-such-task"}))["code"] == -32601


# --- cancellation ----------------------------------------------------------------------------------


@pytest.mark.req("TASKS-CANCEL-ACK-EMPTY", "TASKS-CANCEL-STOPS-WORK", "TASKS-GET-STATUS-SHAPES")
def test_cancel_acks_empty_stops_the_work_and_is_idempotent() -> None:
    with everything() as server:
        task_id = call(server, "slow_compute", {"seconds": 60})["taskId"]
        ack = result_of(request(server, "tasks/cancel", {"taskId": task_id}))
        assert not set(ENVELOPE) & set(ack) and ack["resultType"] == "complete"
        cancelled = get(server, task_id)
        assert cancelled["status"] == "cancelled" and cancelled["resultType"] == "complete"
        assert not {"result", "error", "inputRequests"} & set(cancelled)  # the Task fields only
        assert result_of(request(server, "tasks/cancel", {"taskId": task_id}))["resultType"] == "complete"
        done = wait_for(server, call(server, "slow_compute", {"seconds": 0.2})["taskId"])
        assert result_of(request(server, "tasks/cancel", {"taskId": done["taskId"]}))["resultType"] == "complete"
        assert get(server, done["taskId"])["status"] == "completed"  # a finished task stays as it is


@pytest.mark.req("TASKS-CANCEL-STOPS-WORK")
def test_a_synchronous_handler_sees_ctx_cancelled_when_its_task_is_cancelled() -> None:
    with edges() as server:
        task_id = call(server, "sync_wait", {})["taskId"]  # a task once its handler runs (it asked to be one)
        result_of(request(server, "tasks/cancel", {"taskId": task_id}))
        deadline = time.monotonic() + 5
        while json.loads(call(server, "seen", {})["content"][0]["text"]) != ["cancelled"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert get(server, task_id)["status"] == "cancelled"


@pytest.mark.req("CANCEL-NO-RESPONSE", "CANCEL-FREE-RESOURCES")
def test_cancelling_the_call_before_it_becomes_a_task_leaves_no_task_and_frees_its_place() -> None:
    with edges() as server:
        server.send(modern_request(100, "tools/call", {"name": "sleep", "arguments": {"seconds": 30}}, capabilities=TASKS))
        server.send(cancel(100))
        # The place it held is free again: two tasks may run (max_running=2).
        first, second = call(server, "sleep", {"seconds": 5}), call(server, "sleep", {"seconds": 5})
        assert first["resultType"] == second["resultType"] == "task"
        assert not [m for m in server.received if m.get("id") == 100]


# --- input inside a task -----------------------------------------------------------------------------


@pytest.mark.req("TASKS-INPUT-REQUESTS-OUTSTANDING", "TASKS-UPDATE-ACK-EMPTY", "TASKS-UPDATE-RESUMES", "TASKS-GET-STATUS-SHAPES")
def test_input_inside_a_task_is_asked_on_tasks_get_and_answered_with_tasks_update() -> None:
    with everything() as server:
        task_id = call(server, "confirm_delete", {"filename": "a.txt"}, capabilities=FORM_AND_TASKS)["taskId"]
        waiting = wait_for(server, task_id, "input_required")
        assert list(waiting["inputRequests"]) == ["confirm"] and not {"result", "error"} & set(waiting)
        assert waiting["inputRequests"]["confirm"]["method"] == "elicitation/create" and waiting["resultType"] == "complete"
        assert get(server, task_id)["inputRequests"] == waiting["inputRequests"]  # the same snapshot again
        ack = result_of(update(server, task_id, {"confirm": accept(confirm=True)}))
        assert ack["resultType"] == "complete" and not set(ENVELOPE) & set(ack)
        done = wait_for(server, task_id)
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "a.txt: deleted (pretend)"
        assert not [m for m in server.received if "method" in m and "id" in m]  # never a server-to-client request


@pytest.mark.req("TASKS-UPDATE-IGNORE-UNKNOWN-KEYS")
def test_answers_to_keys_not_outstanding_are_ignored_and_a_malformed_answer_is_refused() -> None:
    with everything() as server:
        task_id = call(server, "confirm_delete", {"filename": "b.txt"}, capabilities=FORM_AND_TASKS)["taskId"]
        wait_for(server, task_id, "input_required")
        assert result_of(update(server, task_id, {"unknown-key": {"ignored": True}}))["resultType"] == "complete"
        assert get(server, task_id)["status"] == "input_required"
        error = error_of(update(server, task_id, {"confirm": {"action": "accept", "content": {"confirm": "yes"}}}))
        assert error["code"] == -32602
        assert error_of(update(server, task_id, ["not", "an", "object"]))["code"] == -32602
        assert error_of(request(server, "tasks/update", {"taskId": task_id}))["code"] == -32602
        assert get(server, task_id)["status"] == "input_required"
        result_of(update(server, task_id, {"confirm": {"action": "decline"}}))
        assert wait_for(server, task_id)["result"]["content"][0]["text"] == "b.txt: kept"
        # After it is answered, the key is not outstanding any more: a second answer is ignored.
        assert result_of(update(server, task_id, {"confirm": accept(confirm=True)}))["resultType"] == "complete"


@pytest.mark.req("TASKS-UPDATE-PARTIAL")
def test_two_questions_may_be_answered_one_update_at_a_time() -> None:
    with everything() as server:
        task_id = call(server, "multi_input", {}, capabilities=FORM_AND_TASKS)["taskId"]
        waiting = wait_for(server, task_id, "input_required")
        assert sorted(waiting["inputRequests"]) == ["first", "second"]
        result_of(update(server, task_id, {"first": accept(name="one")}))
        partial = get(server, task_id)
        assert partial["status"] == "input_required" and list(partial["inputRequests"]) == ["second"]
        result_of(update(server, task_id, {"second": accept(name="two")}))
        assert wait_for(server, task_id)["result"]["content"][0]["text"] == "Entries: one and two"


@pytest.mark.req("TASKS-MRTR-BEFORE-TASK")
def test_mrtr_input_before_the_task_carries_into_it() -> None:
    with task_client(on_elicitation=lambda params: accept(name="Alice")) as client:
        reply = client.call_tool("test_tool_with_task")
    first, second = reply.rounds  # the interim result, then the task handle its retry got
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["user_name"] and "taskId" not in first
    assert second["resultType"] == "task" and "requestState" not in second and "inputRequests" not in second
    assert all("inputRequests" not in task for task in reply.polls)  # never asked again inside the task
    assert reply.text == "Hello, Alice, from a task!"


@pytest.mark.req("TASKS-KEYS-UNIQUE")
def test_a_handler_that_asks_again_for_an_answered_key_fails_its_task() -> None:
    with task_client("tests.servers.tasks_server", on_elicitation=answers("x")) as client:
        with pytest.raises(RequestError) as raised:
            client.call_tool("reask")
    assert [list(task["inputRequests"]) for task in raised.value.reply.polls if task["status"] == "input_required"][:1] == [["k"]]
    failed = raised.value.reply.task
    assert failed["status"] == "failed" and failed["error"]["code"] == -32603 and "'k'" in failed["error"]["message"]


@pytest.mark.req("TASKS-INPUT-NEEDS-CLIENT-CAPABILITY")
def test_a_task_that_needs_a_capability_the_client_did_not_declare_fails_with_minus_32021() -> None:
    with task_client("tests.servers.tasks_server", on_elicitation=answers()) as client:
        assert client.capabilities == FORM_AND_TASKS
        with pytest.raises(RequestError) as raised:
            client.call_tool("needs_sampling")
    failed = raised.value.reply.task
    assert failed["status"] == "failed" and failed["error"]["code"] == -32021
    assert failed["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


@pytest.mark.req("TASKS-INPUT-REQUESTS-OUTSTANDING")
def test_state_only_rounds_rerun_at_once_and_carry_state_into_later_rounds() -> None:
    with task_client("tests.servers.tasks_server", on_elicitation=answers("y")) as client:
        reply = client.call_tool("state_rounds")
        assert [list(task["inputRequests"]) for task in reply.polls if task["status"] == "input_required"][:1] == [["x"]]
        assert json.loads(reply.text) == {"state": {"round": 2}, "x": {"v": "y"}}
        with pytest.raises(RequestError) as spin:
            client.call_tool("spin")
        assert spin.value.reply.task["status"] == "failed" and "re-ran 16 times" in spin.value.message


# --- progress and notifications -----------------------------------------------------------------------


@pytest.mark.req("TASKS-NO-PROGRESS-IN-TASKS", "TASKS-PROGRESS-AS-STATUS-MESSAGE")
def test_progress_in_a_task_becomes_its_status_message_not_notifications() -> None:
    with edges() as server:
        body = {"name": "progress", "arguments": {}}
        response = request(server, "tools/call", body, progress_token="p")
        task_id = result_of(response)["taskId"]
        messages = set()
        while (task := get(server, task_id))["status"] == "working":
            messages.add(task.get("statusMessage"))
            time.sleep(0.02)
        assert task["statusMessage"] == "all done" and messages & {"1 of 3", "2 of 3"}
        assert not [m for m in server.received if m.get("method") in ("notifications/progress", "notifications/message")]


@pytest.mark.req("TASKS-NOTIFICATIONS-ON-LISTEN", "TASKS-LISTEN-NEEDS-CAPABILITY")
def test_a_listen_stream_for_a_task_gets_its_detailed_status_changes() -> None:
    with everything() as server:
        task_id = call(server, "slow_compute", {"seconds": 1.2, "label": "watched"})["taskId"]
        refused = request(server, "subscriptions/listen", {"notifications": {"taskIds": [task_id]}}, capabilities={})
        assert error_of(refused)["code"] == -32021
        assert error_of(request(server, "subscriptions/listen", {"notifications": {"taskIds": "x"}}))["code"] == -32602
        server.send(modern_request(900, "subscriptions/listen", {"notifications": {"taskIds": [task_id, "unknown"]}}, capabilities=TASKS))
        ack = server.read_until(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")[-1]
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        final = server.read_until(lambda m: m.get("method") == "notifications/tasks" and m["params"]["status"] == "completed", timeout=10)[-1]
        assert final["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 900
        assert final["params"]["result"]["content"][0]["text"] == "watched: computed for 1.2 s"
        detailed = get(server, task_id)
        assert {k: v for k, v in final["params"].items() if k != "_meta"} == {k: v for k, v in detailed.items() if k not in ("resultType", "_meta")}
        working = [m for m in server.received if m.get("method") == "notifications/tasks" and m["params"]["status"] == "working"]
        assert working and all("statusMessage" in m["params"] for m in working)  # progress reached the stream


# --- bounds, expiry, shutdown ---------------------------------------------------------------------


@pytest.mark.req("TASKS-BOUNDED")
def test_with_no_room_for_a_task_a_call_runs_as_an_ordinary_call() -> None:
    with edges() as server:
        first, second = call(server, "sleep", {"seconds": 3}), call(server, "sleep", {"seconds": 3})
        assert first["resultType"] == second["resultType"] == "task"
        third = call(server, "sleep", {"seconds": 0.3})  # max_running=2: answered directly, after 0.3 s
        assert third["resultType"] == "complete" and third["content"][0]["text"] == "slept"
        result_of(request(server, "tasks/cancel", {"taskId": first["taskId"]}))
        assert call(server, "sleep", {"seconds": 3})["resultType"] == "task"  # a cancelled task is not running
        # max_stored=3 (the cancelled one still counts until it expires).
        assert call(server, "sleep", {"seconds": 0.2})["resultType"] == "complete"


def forgotten_at(server: ServerProcess, task_id: str, timeout: float = 30) -> float:
    """Poll tasks/get until the task is gone; the wall-clock time its -32602 arrived (it was
    forgotten before that, never after)."""
    deadline = time.monotonic() + timeout
    while True:
        response = request(server, "tasks/get", {"taskId": task_id})
        if "error" in response:
            assert response["error"]["code"] == -32602 and "expired" in response["error"]["message"]
            return time.time()
        assert time.monotonic() < deadline, f"task {task_id} still kept after {timeout} s"
        time.sleep(0.02)  # the poll interval: the condition is the task being gone


def created_at(task: dict[str, Any]) -> float:
    from datetime import datetime

    return datetime.fromisoformat(task["createdAt"].replace("Z", "+00:00")).timestamp()  # millisecond precision, rounded down


@pytest.mark.req("TASKS-TTL-KEPT")
def test_a_task_lives_its_ttl_then_is_forgotten_and_a_running_one_is_cancelled() -> None:
    with ServerProcess(module="tests.servers.tasks_server", env={"MCP_REF_LOG_LEVEL": "INFO"}, capabilities=TASKS) as server:
        done = call(server, "sleep", {"seconds": 0.1})
        running = call(server, "sleep", {"seconds": 30})
        assert done["ttlMs"] == running["ttlMs"] == 1500
        assert wait_for(server, done["taskId"])["status"] == "completed"
        # Polled all along, and never forgotten before createdAt + ttlMs; the running one, never
        # polled, neither. How much later depends on the machine's load, not on the server.
        assert forgotten_at(server, done["taskId"]) >= created_at(done) + 1.5
        assert forgotten_at(server, running["taskId"]) >= created_at(running) + 1.5
        assert f"task {running['taskId']} expired while still running; cancelling it" in server.stderr_text()
        assert call(server, "sleep", {"seconds": 5})["resultType"] == "task"  # the room is free again


@pytest.mark.req("TASKS-SHUTDOWN")
def test_eof_cancels_running_tasks_and_exits_promptly() -> None:
    with everything() as server:
        call(server, "slow_compute", {"seconds": 60})
        started = time.monotonic()
        server.close_stdin()
        server.assert_exit(0, timeout=30)
        assert time.monotonic() - started < 10  # not the task's 60 s


def test_run_as_task_is_a_no_op_for_a_tool_without_task_support() -> None:
    with edges() as server:
        assert call(server, "sync_only", {})["content"][0]["text"] == "task_id=None"


# --- regressions from a hostile review ------------------------------------------------------------


@pytest.mark.req("TASKS-CANCEL-STOPS-WORK")
def test_a_cancelled_task_stays_cancelled_even_if_its_handler_swallows_the_cancel_and_asks() -> None:
    with edges() as server:
        server.send(modern_request(900, "subscriptions/listen", {"notifications": {}}, capabilities=TASKS))
        task_id = call(server, "cancel_then_ask", {}, capabilities=FORM_AND_TASKS)["taskId"]
        result_of(request(server, "tasks/cancel", {"taskId": task_id}))
        server.wait_for_stderr("cancel_then_ask asks after its cancellation")  # its question comes too late
        assert get(server, task_id)["status"] == "cancelled"
        result_of(update(server, task_id, {"keep": accept(v="yes")}))  # handled before it is acknowledged
        assert get(server, task_id)["status"] == "cancelled"


@pytest.mark.req("TASKS-MRTR-BEFORE-TASK", "TASKS-KEYS-UNIQUE")
def test_an_answer_given_before_the_call_became_a_task_is_never_asked_again() -> None:
    with task_client("tests.servers.tasks_server", on_elicitation=answers("A", "B")) as client:
        reply = client.call_tool("ask_a_wait_ask_b")
    first, task = reply.rounds
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["a"]
    assert task["resultType"] == "task"
    asked_in_task = [list(poll["inputRequests"]) for poll in reply.polls if poll["status"] == "input_required"]
    assert asked_in_task and all(keys == ["b"] for keys in asked_in_task)
    assert reply.task["status"] == "completed" and json.loads(reply.text) == {"a": {"v": "A"}, "b": {"v": "B"}}


@pytest.mark.req("TASKS-FAILED-CARRIES-ERROR")
def test_a_task_result_that_is_not_json_fails_the_task_and_tasks_get_keeps_working() -> None:
    with task_client("tests.servers.tasks_server") as client:
        with pytest.raises(RequestError) as raised:
            client.call_tool("unencodable")
        failed = raised.value.reply.task
        assert failed["status"] == "failed" and failed["error"]["code"] == -32603 and "JSON" in failed["error"]["message"]
        assert client.request("tasks/get", {"taskId": failed["taskId"]}).result == failed


@pytest.mark.req("TASKS-SHUTDOWN")
def test_shutdown_does_not_wait_forever_for_a_task_that_swallows_its_cancellation() -> None:
    with edges() as server:
        call(server, "swallow_cancel", {})
        server.send(modern_request(901, "subscriptions/listen", {"notifications": {}}, capabilities=TASKS))
        server.read_until(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
        started = time.monotonic()
        server.close_stdin()
        closing = server.read_until(lambda m: m.get("id") == 901, timeout=10)[-1]
        assert "result" in closing  # the stream still gets its graceful response
        server.assert_exit(0, timeout=10)
        assert time.monotonic() - started < 8


@pytest.mark.req("TASKS-NO-PROGRESS-IN-TASKS")
def test_no_log_notification_follows_run_as_task() -> None:
    with everything() as server:
        meta_extra = {"io.modelcontextprotocol/logLevel": "debug"}
        message = modern_request(902, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.3}, "_meta": meta_extra}, capabilities=TASKS)
        created = result_of(server.request(message))
        assert created["resultType"] == "task"
        wait_for(server, created["taskId"])
        assert not [m for m in server.received if m.get("method") == "notifications/message"]


def test_task_settings_refuse_values_the_wire_cannot_carry() -> None:
    from mcp_ref import TaskSettings

    for bad in ({"poll_interval_ms": 0.5}, {"poll_interval_ms": True}, {"ttl_seconds": float("inf")}, {"ttl_seconds": 0},
                {"answer_within_seconds": -1}, {"max_running": 0}, {"max_running": 5, "max_stored": 4}):
        with pytest.raises(ValueError):
            TaskSettings(**bad)


def test_tasks_update_with_null_input_responses_is_invalid_params() -> None:
    with everything() as server:
        task_id = call(server, "confirm_delete", {"filename": "c.txt"}, capabilities=FORM_AND_TASKS)["taskId"]
        wait_for(server, task_id, "input_required")
        assert error_of(update(server, task_id, None))["code"] == -32602
