"""The life of a request: progress, log messages, cancellation, ids in flight, concurrency, faults.

Spec 2026-07-28: basic/patterns/progress, server/utilities/logging, basic/patterns/cancellation,
basic/index (requests, ids, error codes).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import threading
import time
import weakref

import pytest

import mcp_ref.core.context
from mcp_ref import InputRequired, InvalidParams, RateLimit, Server, ToolError, elicit_form

from .memory import modern_meta, serve, until


def tool_server(handler, name="work", **options) -> Server:
    server = Server("lifecycle-test", "1.0.0", **options)
    server.tool(name, description="A test tool.", input_schema={"type": "object"})(handler)
    return server


def index_of(client, predicate) -> int:
    client.collect()
    return next(i for i, m in enumerate(client.messages) if predicate(m))


@pytest.fixture
def no_rate_limit(monkeypatch):
    monkeypatch.setattr(mcp_ref.core.context, "PROGRESS_MIN_INTERVAL_SECONDS", 0.0)


# --- progress --------------------------------------------------------------------------------------------


@pytest.mark.req("PROG-ONLY-ACTIVE-TOKENS")
async def test_no_progress_is_sent_without_a_progress_token(no_rate_limit):
    sent = []

    async def work(ctx, arguments):
        sent.append(ctx.report_progress(1, 2))
        return "done"

    async with serve(tool_server(work)) as client:
        await client.result("tools/call", {"name": "work"})
    assert sent == [False]
    assert client.notifications("notifications/progress") == []


@pytest.mark.req("PROG-TOKEN-ECHOED", "PROG-TOKEN-STRING-OR-INTEGER")
@pytest.mark.parametrize("token", ["tok-1", 99])
async def test_progress_echoes_the_requests_token_before_the_response(no_rate_limit, token):
    async def work(ctx, arguments):
        ctx.report_progress(1, 3, "one third")
        ctx.report_progress(2.5)
        return "done"

    async with serve(tool_server(work)) as client:
        request_id = client.request("tools/call", {"name": "work"}, meta=modern_meta(progress_token=token))
        await client.response(request_id)
        progress = client.notifications("notifications/progress")
        response_at = index_of(client, lambda m: m.get("id") == request_id)
    assert [n["params"] for n in progress] == [
        {"progressToken": token, "progress": 1, "total": 3, "message": "one third"},
        {"progressToken": token, "progress": 2.5},
    ]
    assert all(client.messages.index(n) < response_at for n in progress)


@pytest.mark.req("PROG-INCREASING")
async def test_progress_values_that_do_not_increase_are_dropped(no_rate_limit):
    results = []

    async def work(ctx, arguments):
        for value in (1, 1, 0.5, 2, 1.5, 3):
            results.append(ctx.report_progress(value))
        return "done"

    async with serve(tool_server(work)) as client:
        await client.result("tools/call", {"name": "work"}, meta=modern_meta(progress_token="p"))
    assert results == [True, False, False, True, False, True]
    assert [n["params"]["progress"] for n in client.notifications("notifications/progress")] == [1, 2, 3]


@pytest.mark.req("PROG-RATE-LIMIT")
async def test_progress_is_rate_limited_but_the_final_value_always_goes_out(monkeypatch):
    monkeypatch.setattr(mcp_ref.core.context, "PROGRESS_MIN_INTERVAL_SECONDS", 60.0)

    async def work(ctx, arguments):
        for step in range(1, 10):
            ctx.report_progress(step, 10)
        ctx.report_progress(10, 10, "complete")
        return "done"

    async with serve(tool_server(work)) as client:
        await client.result("tools/call", {"name": "work"}, meta=modern_meta(progress_token="p"))
    assert [n["params"] for n in client.notifications("notifications/progress")] == [
        {"progressToken": "p", "progress": 1, "total": 10},
        {"progressToken": "p", "progress": 10, "total": 10, "message": "complete"},
    ]


@pytest.mark.req("PROG-RATE-LIMIT")
async def test_progress_resumes_once_the_interval_has_passed(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(mcp_ref.core.context, "time", type("FakeTime", (), {"monotonic": staticmethod(lambda: clock[0])}))
    monkeypatch.setattr(mcp_ref.core.context, "PROGRESS_MIN_INTERVAL_SECONDS", 1.0)
    results = []

    async def work(ctx, arguments):
        results.append(ctx.report_progress(1))
        clock[0] += 0.5
        results.append(ctx.report_progress(2))
        clock[0] += 0.6
        results.append(ctx.report_progress(3))
        return "done"

    async with serve(tool_server(work)) as client:
        await client.result("tools/call", {"name": "work"}, meta=modern_meta(progress_token=7))
    assert results == [True, False, True]


@pytest.mark.req("PROG-STOP-AFTER-COMPLETION")
async def test_no_progress_after_the_response(no_rate_limit):
    kept = []

    async def work(ctx, arguments):
        ctx.report_progress(1)
        kept.append(ctx)
        return "done"

    async with serve(tool_server(work)) as client:
        await client.result("tools/call", {"name": "work"}, meta=modern_meta(progress_token="p"))
        assert kept[0].report_progress(2) is False
        await client.settle()
    assert [n["params"]["progress"] for n in client.notifications("notifications/progress")] == [1]


@pytest.mark.req("PROG-STOP-AFTER-COMPLETION")
async def test_no_progress_after_an_error_response(no_rate_limit):
    kept = []

    async def work(ctx, arguments):
        kept.append(ctx)
        raise InvalidParams("boom")

    async with serve(tool_server(work)) as client:
        await client.error("tools/call", {"name": "work"}, meta=modern_meta(progress_token="p"))
        sent = kept[0].report_progress(1)
        await client.settle()
    assert sent is False
    assert client.notifications("notifications/progress") == []


@pytest.mark.req("PROG-STOP-AFTER-COMPLETION")
async def test_progress_from_a_sync_handler_thread_precedes_the_response(no_rate_limit):
    def work(ctx, arguments):
        for step in (1, 2, 3):
            ctx.report_progress(step, 3)
        return "done"

    async with serve(tool_server(work)) as client:
        request_id = client.request("tools/call", {"name": "work"}, meta=modern_meta(progress_token="t"))
        await client.response(request_id)
        await client.settle()
        response_at = index_of(client, lambda m: m.get("id") == request_id)
        progress = client.notifications("notifications/progress")
    assert [n["params"]["progress"] for n in progress] == [1, 2, 3]
    assert all(client.messages.index(n) < response_at for n in progress)


@pytest.mark.req("PROG-ONLY-ACTIVE-TOKENS")
async def test_progress_of_one_request_never_uses_another_requests_token(no_rate_limit):
    async def work(ctx, arguments):
        ctx.report_progress(1)
        return "done"

    async with serve(tool_server(work)) as client:
        await client.result("tools/call", {"name": "work"}, meta=modern_meta(progress_token="first"))
        await client.result("tools/call", {"name": "work"})
    assert [n["params"]["progressToken"] for n in client.notifications("notifications/progress")] == ["first"]


# --- log messages ------------------------------------------------------------------------------------------


def logging_handler(levels=("debug", "info", "warning", "error")):
    async def work(ctx, arguments):
        sent = [ctx.log(level, {"level": level}, logger="worker" if level == "error" else None) for level in levels]
        return {"sent": sent}

    return work


@pytest.mark.req("LOG-AT-OR-ABOVE-LEVEL", "LOG-REQUEST-SCOPED")
async def test_log_messages_at_or_above_the_requested_level_are_sent_before_the_response():
    async with serve(tool_server(logging_handler(), log_messages=True)) as client:
        request_id = client.request("tools/call", {"name": "work"}, meta=modern_meta(log_level="warning"))
        response = await client.response(request_id)
        messages = client.notifications("notifications/message")
        response_at = index_of(client, lambda m: m.get("id") == request_id)
    assert [m["params"] for m in messages] == [
        {"level": "warning", "data": {"level": "warning"}},
        {"level": "error", "data": {"level": "error"}, "logger": "worker"},
    ]
    assert all(client.messages.index(m) < response_at for m in messages)
    assert '"sent": [false, false, true, true]' in response["result"]["content"][0]["text"]


@pytest.mark.req("LOG-PER-REQUEST-LEVEL")
async def test_no_log_messages_without_a_log_level_but_stderr_still_gets_them(caplog):
    caplog.set_level(logging.DEBUG, logger="mcp_ref.requests")
    async with serve(tool_server(logging_handler(), log_messages=True)) as client:
        await client.result("tools/call", {"name": "work"})
    assert client.notifications("notifications/message") == []
    assert "{'level': 'warning'}" in caplog.text
    assert "[worker] {'level': 'error'}" in caplog.text


@pytest.mark.req("LOG-CAPABILITY")
async def test_no_log_messages_when_the_server_has_them_switched_off():
    async with serve(tool_server(logging_handler())) as client:
        await client.result("tools/call", {"name": "work"}, meta=modern_meta(log_level="debug"))
    assert client.notifications("notifications/message") == []


@pytest.mark.req("LOG-AT-OR-ABOVE-LEVEL")
async def test_debug_level_sends_every_level():
    levels = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
    async with serve(tool_server(logging_handler(levels), log_messages=True)) as client:
        await client.result("tools/call", {"name": "work"}, meta=modern_meta(log_level="debug"))
    assert [m["params"]["level"] for m in client.notifications("notifications/message")] == list(levels)


@pytest.mark.req("LOG-INTERNAL-ERROR-32603")
async def test_unknown_level_in_ctx_log_is_a_handler_fault():
    server = Server("s", "1", log_messages=True)

    @server.prompt("p")
    async def work(ctx, arguments):
        ctx.log("verbose", "x")

    async with serve(server) as client:
        error = await client.error("prompts/get", {"name": "p"}, meta=modern_meta(log_level="debug"))
    assert error["code"] == -32603


@pytest.mark.req("LOG-REQUEST-SCOPED")
async def test_no_log_message_after_the_response():
    kept = []

    async def work(ctx, arguments):
        kept.append(ctx)
        return "done"

    async with serve(tool_server(work, log_messages=True)) as client:
        await client.result("tools/call", {"name": "work"}, meta=modern_meta(log_level="debug"))
        assert kept[0].log("error", "late") is False
        await client.settle()
    assert client.notifications("notifications/message") == []


async def test_a_finished_request_leaves_no_reference_cycle_and_its_emitter_stays_silent(no_rate_limit):
    # Once a request is over, nothing ties its context, emitter and task together in a cycle: they
    # are freed by reference counting. (With a cycle, every pipelined request left ~14 objects to
    # the cyclic garbage collector: ~5 us a message, bench/README.md.) A notification reaching the
    # loop after the end (one a worker thread queued, say) is still dropped.
    contexts = []
    kept = []

    async def work(ctx, arguments):
        contexts.append(weakref.ref(ctx))
        return "done"

    async def keep(ctx, arguments):
        kept.append(ctx)
        return "kept"

    server = tool_server(work)
    server.tool("keep", description="Keeps its context.", input_schema={"type": "object"})(keep)
    gc.disable()
    try:
        async with serve(server) as client:
            for _ in range(3):
                await client.result("tools/call", {"name": "work"}, meta=modern_meta(progress_token="p"))
            await client.result("tools/call", {"name": "keep"}, meta=modern_meta(progress_token="p"))
            await asyncio.wait_for(client.dispatcher.idle.wait(), 2)
            assert [ref() for ref in contexts] == [None, None, None]
            kept[0]._emit({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}})
            await client.settle()
    finally:
        gc.enable()
    assert client.notifications("notifications/progress") == []


# --- cancellation -------------------------------------------------------------------------------------------


class Gate:
    """Lets a test hold handlers until it releases them, and see which have started."""

    def __init__(self) -> None:
        self.started: list = []
        self.cancelled: list = []
        self.release = asyncio.Event()
        self._changed = asyncio.Event()

    async def hold(self, label) -> None:
        self.started.append(label)
        self._changed.set()
        try:
            await asyncio.wait_for(self.release.wait(), 2)
        except asyncio.CancelledError:
            self.cancelled.append(label)
            raise

    async def wait_started(self, count: int) -> None:
        async def wait() -> None:
            while len(self.started) < count:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(wait(), 1)


def gated_server(gate: Gate, **options) -> Server:
    async def work(ctx, arguments):
        await gate.hold(arguments.get("label"))
        return f"done {arguments.get('label')}"

    return tool_server(work, **options)


@pytest.mark.req("CANCEL-STOP-PROCESSING", "CANCEL-NO-RESPONSE")
async def test_cancelled_request_is_stopped_and_never_answered(caplog):
    caplog.set_level(logging.INFO, logger="mcp_ref")
    gate = Gate()
    async with serve(gated_server(gate)) as client:
        request_id = client.request("tools/call", {"name": "work", "arguments": {"label": "a"}})
        await gate.wait_started(1)
        client.cancel(request_id, "user pressed stop")
        await client.settle()
        assert gate.cancelled == ["a"]
        assert client.responses(request_id) == []
        # The server keeps serving.
        gate.release.set()
        after = await client.result("tools/call", {"name": "work", "arguments": {"label": "b"}})
    assert after["content"][0]["text"] == "done b"
    assert client.responses(request_id) == []
    assert "user pressed stop" in caplog.text


@pytest.mark.req("CANCEL-NO-RESPONSE", "STDIO-CANCEL-STOP-WORK", "STDIO-CANCEL-NO-FURTHER-MESSAGES")
async def test_cancelled_sync_handler_sees_ctx_cancelled_and_its_result_is_discarded():
    started, finish = threading.Event(), threading.Event()
    seen = {}

    def work(ctx, arguments):
        started.set()
        finish.wait(2)
        seen["cancelled"] = ctx.cancelled
        seen["progress"] = ctx.report_progress(1)
        seen["log"] = ctx.log("error", "x")
        return "too late"

    async with serve(tool_server(work, log_messages=True)) as client:
        request_id = client.request("tools/call", {"name": "work"}, meta=modern_meta(progress_token="p", log_level="debug"))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 2)
        client.cancel(request_id)
        finish.set()
        await client.settle()
        await until(lambda: "log" in seen)  # the worker thread's last step
        await client.settle()
    assert seen == {"cancelled": True, "progress": False, "log": False}
    assert client.responses(request_id) == []
    assert client.notifications() == []


@pytest.mark.req("CANCEL-RACE-GRACEFUL", "CANCEL-INVALID-IGNORED", "CANCEL-MAY-IGNORE")
async def test_cancellation_of_an_unknown_or_finished_request_is_ignored():
    async def work(ctx, arguments):
        return "done"

    async with serve(tool_server(work)) as client:
        finished = client.request("tools/call", {"name": "work"})
        await client.response(finished)
        client.cancel(finished)
        client.cancel("never-sent")
        await client.settle()
        later = await client.result("tools/call", {"name": "work"})
    assert later["content"][0]["text"] == "done"
    assert len(client.responses(finished)) == 1
    assert len(client.messages) == 2  # two responses, nothing for the notifications


@pytest.mark.req("CANCEL-INVALID-IGNORED")
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"requestId": None},
        {"requestId": True},
        {"requestId": 1.0},
        {"requestId": {"id": 1}},
        {"reason": "no id"},
        {"requestId": 1, "reason": ["not", "a", "string"]},
        {"requestId": 1, "_meta": "not an object"},
    ],
)
async def test_malformed_cancellation_is_ignored(params):
    gate = Gate()
    async with serve(gated_server(gate)) as client:
        request_id = client.request("tools/call", {"name": "work", "arguments": {"label": 1}}, id=1)
        await gate.wait_started(1)
        client.notify("notifications/cancelled", params)  # handled at once: a cancellation would be too
        gate.release.set()
        response = await client.response(request_id)
    assert response["result"]["content"][0]["text"] == "done 1"
    assert gate.cancelled == []


@pytest.mark.req("CANCEL-INVALID-IGNORED")
async def test_cancelling_string_id_does_not_cancel_the_integer_id():
    gate = Gate()
    async with serve(gated_server(gate)) as client:
        client.request("tools/call", {"name": "work", "arguments": {"label": "int"}}, id=1)
        await gate.wait_started(1)
        client.cancel("1")  # handled at once: a cancellation would be too
        gate.release.set()
        response = await client.response(1)
    assert "result" in response
    assert gate.cancelled == []


@pytest.mark.req("BASE-NOTIFICATION-NO-RESPONSE")
async def test_other_client_notifications_are_never_answered():
    async with serve(tool_server(lambda ctx, a: "x")) as client:
        client.notify("notifications/roots/list_changed")
        client.notify("notifications/initialized", {})
        client.notify("something/custom", {"x": 1})
        await client.settle()
    assert client.messages == []
    assert client.dispatcher.legacy.initialized is True


# --- request ids in flight -----------------------------------------------------------------------------------


@pytest.mark.req("BASE-REQUEST-ID-UNIQUE")
async def test_duplicate_in_flight_id_is_refused_and_the_first_request_is_unaffected():
    gate = Gate()
    async with serve(gated_server(gate)) as client:
        client.request("tools/call", {"name": "work", "arguments": {"label": "first"}}, id="dup")
        await gate.wait_started(1)
        client.request("tools/call", {"name": "work", "arguments": {"label": "second"}}, id="dup")
        refused = await client.response("dup")
        assert refused["error"]["code"] == -32600
        gate.release.set()
        await client.settle()
        responses = client.responses("dup")
    assert len(responses) == 2
    assert responses[1]["result"]["content"][0]["text"] == "done first"
    assert gate.started == ["first"]


@pytest.mark.req("BASE-REQUEST-ID-UNIQUE")
async def test_an_id_may_be_reused_once_its_request_has_finished():
    async with serve(tool_server(lambda ctx, a: "x")) as client:
        client.request("tools/call", {"name": "work"}, id=5)
        await client.response(5)
        await client.settle()
        client.request("server/discover", id=5)
        await client.settle()
        responses = client.responses(5)
    assert [("result" in r) for r in responses] == [True, True]
    assert "supportedVersions" in responses[1]["result"]


# --- concurrency --------------------------------------------------------------------------------------------------


@pytest.mark.req("CANCEL-STOP-PROCESSING", "CANCEL-FREE-RESOURCES")
async def test_concurrency_bound_holds_while_cancellations_still_get_through():
    gate = Gate()
    async with serve(gated_server(gate), max_concurrency=2) as client:
        ids = [client.request("tools/call", {"name": "work", "arguments": {"label": n}}) for n in range(4)]
        await gate.wait_started(2)
        for _ in range(10):
            await asyncio.sleep(0)
        assert gate.started == [0, 1]
        assert client.dispatcher.backlog == 4

        # A request still waiting for a slot is cancelled without ever starting.
        client.cancel(ids[3])
        # A running one is cancelled and frees its slot for the next in line.
        client.cancel(ids[0])
        await gate.wait_started(3)
        assert gate.started == [0, 1, 2]
        assert gate.cancelled == [0]

        gate.release.set()
        await client.settle()
    assert client.responses(ids[0]) == [] and client.responses(ids[3]) == []
    assert [client.responses(i)[0]["result"]["content"][0]["text"] for i in ids[1:3]] == ["done 1", "done 2"]
    assert gate.started == [0, 1, 2]


@pytest.mark.req("BASE-STATELESS-CONCURRENT-CONVERSATIONS")
async def test_responses_go_out_as_each_request_finishes_not_in_request_order():
    gate = Gate()
    server = gated_server(gate)

    @server.tool("quick", description="Answers at once.")
    async def quick(ctx, arguments):
        return "quick"

    async with serve(server) as client:
        slow = client.request("tools/call", {"name": "work", "arguments": {"label": "slow"}})
        await gate.wait_started(1)
        fast = client.request("tools/call", {"name": "quick"})
        await client.response(fast)
        assert client.responses(slow) == []
        gate.release.set()
        await client.response(slow)
    order = [m["id"] for m in client.messages]
    assert order == [fast, slow]


# --- faults -----------------------------------------------------------------------------------------------------


@pytest.mark.req("BASE-INTERNAL-ERROR-SAFE-MESSAGE", "STDIO-STDOUT-ONLY-MESSAGES")
@pytest.mark.parametrize("method, params", [("resources/read", {"uri": "test://r"}), ("prompts/get", {"name": "p"})])
async def test_handler_exception_is_internal_error_with_details_only_in_the_log(method, params, caplog, capsys):
    def explode(*args):
        raise ValueError("password=hunter2")

    server = tool_server(explode)
    server.resource("test://r")(explode)
    server.prompt("p")(explode)
    caplog.set_level(logging.ERROR, logger="mcp_ref")
    async with serve(server) as client:
        error = await client.error(method, params)
    assert error == {"code": -32603, "message": f"Internal error while handling {method}"}
    records = [r for r in caplog.records if r.name == "mcp_ref" and r.exc_info]
    assert records and "password=hunter2" in caplog.text
    assert capsys.readouterr().out == ""


async def test_tool_error_raised_outside_a_tool_is_internal_error_with_its_message():
    server = Server("s", "1")

    @server.resource("test://r")
    async def read(ctx):
        raise ToolError("resource backend unavailable")

    async with serve(server) as client:
        error = await client.error("resources/read", {"uri": "test://r"})
    assert error == {"code": -32603, "message": "resource backend unavailable"}


@pytest.mark.req("MRTR-SUPPORTED-METHODS")
async def test_asking_for_input_from_a_method_that_cannot_is_internal_error(caplog):
    server = Server("s", "1")
    server.prompt("p", description="P.")(lambda ctx, a: "x")

    @server.completer(prompt="p")
    async def needy(ctx, argument, value, context):
        raise InputRequired({"q": elicit_form("Which?", {"type": "object", "properties": {}})})

    params = {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}
    async with serve(server) as client:
        error = await client.error("completion/complete", params, meta=modern_meta(capabilities={"elicitation": {}}))
    assert error["code"] == -32603
    assert "completion/complete cannot ask" in error["message"]


@pytest.mark.req("BASE-MISSING-CAPABILITY-32021", "MRTR-DECLARED-CAPABILITIES-ONLY", "BASE-CODES-DEFINED-MEANING")
async def test_asking_for_input_the_client_cannot_give_is_missing_capability():
    async def work(ctx, arguments):
        return ctx.ask("q", elicit_form("Which?", {"type": "object", "properties": {}}))

    async with serve(tool_server(work)) as client:
        error = await client.error("tools/call", {"name": "work"})
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}


@pytest.mark.req("BASE-PARSE-ERROR-32700", "BASE-NO-BATCH", "BASE-ERROR-ID-NULL")
async def test_bad_line_is_answered_with_a_null_id_error_and_serving_continues():
    async with serve(tool_server(lambda ctx, a: "x")) as client:
        client.feed(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
        client.feed(b'[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]\n')
        await client.settle()
        result = await client.result("server/discover")
    assert [(m["id"], m["error"]["code"]) for m in client.messages[:2]] == [(None, -32700), (None, -32600)]
    assert result["resultType"] == "complete"


@pytest.mark.req("STDIO-NEWLINE-DELIMITED")
async def test_split_and_coalesced_lines_are_framed_correctly():
    async with serve(tool_server(lambda ctx, a: "x")) as client:
        message = {"jsonrpc": "2.0", "id": "a", "method": "server/discover", "params": {"_meta": modern_meta()}}
        line_a = json.dumps(message).encode() + b"\n"
        line_b = json.dumps({**message, "id": "b"}).encode() + b"\n"
        client.feed(line_a[:10])
        client.feed(line_a[10:] + line_b[:-1])
        client.feed(b"\n")
        await client.response("a")
        await client.response("b")


async def test_client_responses_are_ignored(caplog):
    async with serve(tool_server(lambda ctx, a: "x")) as client:
        client.send({"jsonrpc": "2.0", "id": 9, "result": {}})
        client.send({"jsonrpc": "2.0", "id": 10, "error": {"code": -1, "message": "x"}})
        await client.settle()
    assert client.messages == []
    assert "ignoring a JSON-RPC response" in caplog.text


# --- shutdown ----------------------------------------------------------------------------------------------------


@pytest.mark.req("STDIO-EOF-DRAIN")
async def test_shutdown_lets_in_flight_requests_finish_within_the_grace_period():
    async def work(ctx, arguments):
        await asyncio.sleep(0.02)
        return "finished"

    async with serve(tool_server(work)) as client:
        request_id = client.request("tools/call", {"name": "work"})  # in flight once handled
        await client.close(grace_seconds=1)
        response = client.responses(request_id)
    assert response[0]["result"]["content"][0]["text"] == "finished"


@pytest.mark.req("STDIO-EOF-DRAIN")
async def test_shutdown_cancels_requests_still_running_after_the_grace_period(caplog):
    gate = Gate()
    async with serve(gated_server(gate)) as client:
        request_id = client.request("tools/call", {"name": "work", "arguments": {"label": "stuck"}})
        await gate.wait_started(1)
        await client.close(grace_seconds=0.01)
        assert gate.cancelled == ["stuck"]
        # Answered with an error before it is cancelled: every request gets exactly one response.
        [response] = client.responses(request_id)
        assert response["error"]["code"] == -32603 and "shutting down" in response["error"]["message"]
    assert "still running" in caplog.text


@pytest.mark.req("CANCEL-NO-RESPONSE", "CANCEL-STOP-PROCESSING")
async def test_request_cancelled_in_the_same_read_as_it_arrived_never_starts():
    gate = Gate()
    async with serve(gated_server(gate)) as client:
        request = {"jsonrpc": "2.0", "id": "early", "method": "tools/call", "params": {"name": "work", "_meta": modern_meta()}}
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "early"}}
        client.feed(json.dumps(request).encode() + b"\n" + json.dumps(cancel).encode() + b"\n")
        await client.settle()
    assert gate.started == []
    assert client.messages == []


@pytest.mark.req("CANCEL-NO-RESPONSE")
async def test_handler_that_swallows_its_cancellation_still_gets_no_response():
    started = asyncio.Event()

    async def stubborn(ctx, arguments):
        started.set()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "I refuse to stop"
        return "slept"

    async with serve(tool_server(stubborn)) as client:
        request_id = client.request("tools/call", {"name": "work"})
        await asyncio.wait_for(started.wait(), 1)
        client.cancel(request_id)
        await client.settle()
    assert client.messages == []


async def test_cancel_in_flight_cancels_running_requests_without_answering_them():
    gate = Gate()
    async with serve(gated_server(gate)) as client:
        ids = [client.request("tools/call", {"name": "work", "arguments": {"label": n}}) for n in range(2)]
        await gate.wait_started(2)
        client.dispatcher.cancel_in_flight()
        await client.settle()
    assert sorted(gate.cancelled) == [0, 1]
    assert all(client.responses(i) == [] for i in ids)


# --- rate limits ------------------------------------------------------------------------------------


@pytest.mark.req("TOOLS-RATE-LIMIT")
async def test_a_rate_limit_paces_calls_beyond_the_burst():
    server = Server("paced", "1", rate_limits={"tools/call": RateLimit(per_second=20, burst=2)})

    @server.tool(description="fast")
    async def fast(ctx, args):
        return "ok"

    async with serve(server) as client:
        started = time.monotonic()
        ids = [client.request("tools/call", {"name": "fast"}) for _ in range(6)]
        for request_id in ids:
            assert "result" in await client.response(request_id, timeout=5)
        elapsed = time.monotonic() - started
        # Two go at once; the other four wait a twentieth of a second each.
        assert elapsed >= 0.18
        unpaced = time.monotonic()
        assert "result" in await client.call("tools/list")
        assert time.monotonic() - unpaced < 0.1  # other methods are not paced


@pytest.mark.req("TOOLS-RATE-LIMIT")
def test_a_rate_limit_promises_turns_in_arrival_order():
    limit = RateLimit(per_second=10, burst=1)
    delays = [limit.reserve() for _ in range(4)]
    assert delays[0] == 0
    assert delays == sorted(delays)
    assert 0.25 <= delays[-1] <= 0.31


@pytest.mark.req("TOOLS-RATE-LIMIT")
@pytest.mark.parametrize("per_second, burst", [(0, None), (-1, 2), (5, 0)])
def test_a_rate_limit_needs_a_positive_rate_and_burst(per_second, burst):
    with pytest.raises(ValueError):
        RateLimit(per_second, burst)
