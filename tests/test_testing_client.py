"""mcp_ref.kit.testing: the test client, in process and over real stdio, in both eras, and its
schema checks (``Schemas``).

Every client here checks what it receives against the official schemas when tests/schema_check.py
finds them (``schemas=schemas()``; the library's own lookup takes one folder: ``schema_dir=``).
Hand-written "servers" (``fake_server``) misbehave on purpose, to show what the client reports.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from mcp_ref import InputRequired, PromptArgument, Server, TaskSettings, elicit_form, list_roots, sample
from mcp_ref.kit.testing import SCHEMA_FILES, AsyncClient, Client, RequestError, Schemas, SchemaViolation, ServerExitError, WireViolation
from tests.memory import until

from .schema_check import available, schema_dir, schemas

SCHEMAS = schema_dir()[0] or False
EVERYTHING = [sys.executable, "-m", "mcp_ref_everything"]
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def answer_form(params):  # type: ignore[no-untyped-def]
    return {"action": "accept", "content": {"name": "Ada", "color": "teal", "ok": True, "confirm": True}}


def answer_sampling(params):  # type: ignore[no-untyped-def]
    return {"role": "assistant", "model": "test", "content": {"type": "text", "text": "forty-two"}}


async def answer_roots(params):  # type: ignore[no-untyped-def]
    return [{"uri": "file:///tmp", "name": "tmp"}]


def demo_server() -> Server:
    server = Server("client-demo", "1.0.0", page_size=1, task_settings=TaskSettings(poll_interval_ms=10))

    @server.tool()
    async def greet(ctx, args):  # type: ignore[no-untyped-def]
        """Ask for a name, then the roots and a sample, in two rounds."""
        name = ctx.ask("name", elicit_form("Name?", NAME_FORM))["content"]["name"]
        more = ctx.ask_all({"roots": list_roots(), "llm": sample([{"role": "user", "content": {"type": "text", "text": "A number?"}}], max_tokens=5)})
        ctx.report_progress(1, total=1)
        return f"{name}: {len(more['roots']['roots'])} root(s), {more['llm']['content']['text']}"

    @server.tool(task="optional")
    async def slow_confirm(ctx, args):  # type: ignore[no-untyped-def]
        """Becomes a task at once, then asks inside it."""
        ctx.run_as_task("asking")
        name = ctx.ask("who", elicit_form("Who?", NAME_FORM))["content"]["name"]
        await asyncio.sleep(0.05)
        return f"confirmed by {name}"

    @server.tool()
    async def nap(ctx, args):  # type: ignore[no-untyped-def]
        await asyncio.sleep(30)
        return "rested"

    @server.resource("demo://blob", mime_type="application/octet-stream")
    async def blob(ctx):  # type: ignore[no-untyped-def]
        return b"\x00\x01\xff"

    return server


def test_in_process_modern_pages_mrtr_rounds_progress_and_resources() -> None:
    with Client(demo_server(), schemas=schemas(), on_elicitation=answer_form, on_sampling=answer_sampling, on_roots=answer_roots) as client:
        assert [tool["name"] for tool in client.list_tools()] == ["greet", "slow_confirm", "nap"]  # three pages of one
        reply = client.call_tool("greet")
        assert reply.text == "Ada: 1 root(s), forty-two"
        assert [sorted(r["inputRequests"]) for r in reply.rounds] == [["name"], ["llm", "roots"]]
        assert all(r["resultType"] == "input_required" for r in reply.rounds)
        assert [p["progress"] for p in reply.progress] == [1]
        assert client.read_resource("demo://blob").data == [b"\x00\x01\xff"]
        sent = [line for direction, line in client.transcript if direction == "sent"]
        assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in sent)
        assert client.capabilities == {"elicitation": {}, "sampling": {}, "roots": {}}


def test_in_process_legacy_answers_the_servers_own_requests_with_the_same_callbacks() -> None:
    with Client(demo_server(), era="legacy", schemas=schemas(), on_elicitation=answer_form, on_sampling=answer_sampling, on_roots=answer_roots) as client:
        assert client.initialize_result is not None and client.initialize_result["protocolVersion"] == "2025-11-25"
        reply = client.call_tool("greet")
        assert reply.text == "Ada: 1 root(s), forty-two"
        assert [r["method"] for r in reply.rounds] == ["elicitation/create", "roots/list", "sampling/createMessage"]
        assert client.ping().result == {}


def test_a_missing_callback_is_an_error_the_test_sees() -> None:
    with Client(demo_server(), schemas=schemas(), capabilities={"elicitation": {}}) as client:
        with pytest.raises(LookupError, match="on_elicitation"):
            client.call_tool("greet")


def test_a_task_is_polled_to_its_end_answering_its_input_with_tasks_update() -> None:
    with Client(demo_server(), schemas=schemas(), tasks=True, on_elicitation=answer_form) as client:
        reply = client.call_tool("slow_confirm")
        assert reply.text == "confirmed by Ada"
        assert reply.rounds[0]["resultType"] == "task"
        assert reply.task is not None and reply.task["status"] == "completed"
        assert "input_required" in [poll["status"] for poll in reply.polls]
        handle = client.call_tool("slow_confirm", poll_task=False)
        assert handle["resultType"] == "task"


async def test_async_client_cancels_a_request_and_listens() -> None:
    server = Server("listen-demo", "1.0.0", list_changed=["tools"])

    @server.tool()
    async def nap(ctx, args):  # type: ignore[no-untyped-def]
        await asyncio.sleep(30)

    async with AsyncClient(server, schemas=schemas()) as client:
        subscription = await client.listen(tools=True, prompts=True)
        assert subscription.acknowledged == {"toolsListChanged": True}
        pending = await client.send_request("tools/call", {"name": "nap", "arguments": {}})
        await client.cancel(pending, "enough")
        server.remove_tool("nap")
        changed = await subscription.next("notifications/tools/list_changed")
        assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == subscription.id
        with pytest.raises(RequestError) as refused:
            await client.request("tools/list", {"cursor": "forged"})
        assert refused.value.code == -32602
        unchecked = await client.request("tools/list", {"cursor": "forged"}, check=False)
        assert unchecked.error is not None and unchecked.error["code"] == -32602


def test_spawned_server_modern_and_legacy_with_stderr_and_exit_status() -> None:
    options = dict(schemas=schemas(), on_elicitation=answer_form, on_sampling=answer_sampling, on_roots=answer_roots)
    with Client(EVERYTHING, **options) as client:
        assert "typed_add" in [tool["name"] for tool in client.list_tools()]
        assert client.call_tool("typed_add", {"a": 40, "b": 2}).structured_content == 42
        reply = client.call_tool("test_input_required_result_multiple_inputs")
        assert len(reply.rounds) == 1 and sorted(reply.rounds[0]["inputRequests"]) and not reply.is_error
        progress = client.call_tool("test_tool_with_progress")
        assert len(progress.progress) >= 3
        assert client.complete("arg1", "test", prompt="test_prompt_with_arguments")["completion"]["values"] == ["test", "testValue1", "testing"]
    assert client.exit_status == 0
    with Client(EVERYTHING, era="legacy", protocol_version="2025-06-18", **options) as client:
        reply = client.call_tool("test_input_required_result_elicitation")
        assert "Ada" in reply.text and [r["method"] for r in reply.rounds] == ["elicitation/create"]
        assert client.initialize_result is not None and client.initialize_result["protocolVersion"] == "2025-06-18"


def fake_server(tmp_path: Path, body: str) -> list[str]:
    """A hand-written 'server' that answers each request line with what ``body`` prints."""
    script = tmp_path / "fake_server.py"
    script.write_text(textwrap.dedent(body))
    return [sys.executable, str(script)]


MALFORMED = """
    import json, sys
    for line in sys.stdin:
        request = json.loads(line)
        # A ListToolsResult whose tool has no inputSchema and a non-string name.
        result = {"tools": [{"name": 7}], "resultType": "complete"}
        print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)
"""


@pytest.mark.skipif(not available(), reason="the official schemas are not available")
def test_a_result_that_breaks_the_schema_raises(tmp_path: Path) -> None:
    with Client(fake_server(tmp_path, MALFORMED), schema_dir=SCHEMAS) as client:  # the folder of the official files
        with pytest.raises(SchemaViolation, match="ListToolsResult"):
            client.list_tools()
    assert any("ListToolsResult" in problem for problem in client.violations)
    with Client(fake_server(tmp_path, MALFORMED), schema_dir=tmp_path) as client:  # no schema files there: not checked
        assert client.list_tools() == [{"name": 7}]


def test_bad_framing_and_a_bad_exit_status_are_reported(tmp_path: Path) -> None:
    broken = """
        import sys
        for line in sys.stdin:
            sys.stdout.write("this is not json\\n"); sys.stdout.flush()
        sys.exit(3)
    """
    client = Client(fake_server(tmp_path, broken), schema_dir=False)
    client.start()
    with pytest.raises(WireViolation, match="not json"):
        client.request("ping")
    with pytest.raises(ServerExitError, match="status 3"):
        client.close()


async def test_the_synchronous_client_refuses_a_running_loop() -> None:
    with pytest.raises(RuntimeError, match="AsyncClient"):
        Client(Server("x", "1")).start()


# --- what the client reports about a misbehaving server ------------------------------------------------


def test_a_response_to_no_request_fails_the_close_and_a_non_object_line_fails_the_call(tmp_path: Path) -> None:
    stray = """
        import json, sys
        for line in sys.stdin:
            request = json.loads(line)
            print(json.dumps({"jsonrpc": "2.0", "id": 999, "result": {}}), flush=True)  # nobody asked
            print("[1, 2]" if request["method"] == "ping" else json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"resultType": "complete"}}), flush=True)
    """
    client = Client(fake_server(tmp_path, stray), schemas=Schemas())
    client.start()
    assert client.request("custom/method").result == {"resultType": "complete"}  # lenient: a method of its own
    with pytest.raises(WireViolation, match="not a JSON object"):
        client.request("ping")
    with pytest.raises(SchemaViolation, match="a response to no request in flight"):
        client.close()
    assert len([problem for problem in client.violations if "no request in flight" in problem]) == 2


def test_a_modern_server_sending_a_request_is_a_violation_even_though_the_client_answers_it(tmp_path: Path) -> None:
    asking = """
        import json, sys
        for line in sys.stdin:
            request = json.loads(line)
            if "method" not in request:  # the client's answer to our request
                print(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "answer": request}}), flush=True)
                continue
            print(json.dumps({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}), flush=True)
    """
    with Client(fake_server(tmp_path, asking), schemas=Schemas()) as client:
        with pytest.raises(SchemaViolation, match="a 2026-07-28 server sent a request"):
            client.request("tools/list")
    assert client.transcript[-1][0] == "received"


def test_a_legacy_client_answers_ping_and_refuses_what_it_has_no_callback_for(tmp_path: Path) -> None:
    legacy = """
        import json, sys
        answers = []
        for line in sys.stdin:
            message = json.loads(line)
            if message.get("method") == "initialize":
                result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "fake", "version": "1"}}
                print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
            elif message.get("method") == "tools/call":
                call_id = message["id"]
                print(json.dumps({"jsonrpc": "2.0", "id": "s1", "method": "ping"}), flush=True)
                print(json.dumps({"jsonrpc": "2.0", "id": "s2", "method": "roots/list"}), flush=True)
            elif "method" not in message:
                answers.append(message)
                if len(answers) == 2:
                    text = json.dumps(sorted(answers, key=lambda m: m["id"]))
                    result = {"content": [{"type": "text", "text": text}]}
                    print(json.dumps({"jsonrpc": "2.0", "id": call_id, "result": result}), flush=True)
    """
    with Client(fake_server(tmp_path, legacy), era="legacy", schemas=schemas()) as client:
        reply = client.call_tool("anything")
    assert [request["method"] for request in reply.rounds] == ["ping", "roots/list"]
    pong, refused = json.loads(reply.text)
    assert pong == {"jsonrpc": "2.0", "id": "s1", "result": {}}
    assert refused["id"] == "s2" and refused["error"]["code"] == -32601 and "on_roots" in refused["error"]["message"]


def test_a_server_that_exits_without_answering_fails_the_call_and_every_later_one(tmp_path: Path) -> None:
    quitter = """
        import sys
        sys.stdin.readline()
        sys.stderr.write("giving up\\n")
    """
    client = Client(fake_server(tmp_path, quitter), schemas=Schemas())
    client.start()
    with pytest.raises(ServerExitError, match="before answering ping"):
        client.request("ping")
    with pytest.raises(ServerExitError, match="closed its output"):
        client.request("ping")
    client.close()
    assert client.exit_status == 0 and "giving up" in client.stderr


# --- the client's own limits and arguments ----------------------------------------------------------------


def limits_server() -> Server:
    server = Server("limits", "1.0.0", page_size=1, task_settings=TaskSettings(poll_interval_ms=10))

    @server.tool()
    async def one(ctx, args):  # type: ignore[no-untyped-def]
        return "one"

    @server.tool()
    async def two(ctx, args):  # type: ignore[no-untyped-def]
        return "two"

    @server.tool()
    async def forever(ctx, args):  # type: ignore[no-untyped-def]
        """Asks for another round, with nothing to ask, every time."""
        raise InputRequired(state={"round": (ctx.state or {}).get("round", 0) + 1})

    @server.tool(task="optional")
    async def long_task(ctx, args):  # type: ignore[no-untyped-def]
        ctx.run_as_task("working")
        await asyncio.sleep(30)

    @server.tool()
    async def nap(ctx, args):  # type: ignore[no-untyped-def]
        await asyncio.sleep(30)

    @server.prompt(arguments=[PromptArgument("topic")])
    async def about(ctx, args):  # type: ignore[no-untyped-def]
        return f"Tell me about {args.get('topic', 'nothing')}."

    @server.resource_template("notes://{folder}/{name}")
    async def note(ctx, uri, variables):  # type: ignore[no-untyped-def]
        return f"note {variables['name']}"

    @server.completer(resource_template="notes://{folder}/{name}")
    async def complete_note(ctx, argument, value, context):  # type: ignore[no-untyped-def]
        return [f"{context.get('folder', '?')}-{value}"]

    return server


def test_a_cursor_chain_longer_than_allowed_and_endless_rounds_are_assertion_errors() -> None:
    with Client(limits_server(), schemas=schemas(), max_rounds=3) as client:
        assert [len(page["tools"]) for page in client.pages("tools/list")] == [1] * 5
        with pytest.raises(AssertionError, match="nextCursor after 2 pages"):
            client.pages("tools/list", max_pages=2)
        with pytest.raises(AssertionError, match="still asked for input after 3 rounds"):
            client.call_tool("forever")


def test_timeouts_for_an_answer_and_for_a_task() -> None:
    with Client(limits_server(), schemas=schemas(), timeout=0.2, tasks=True, task_timeout=0.3) as client:
        with pytest.raises(TimeoutError, match="no response to tools/call"):
            client.call_tool("nap")
        with pytest.raises(TimeoutError, match="still working"):
            client.call_tool("long_task")
        assert client.discover()["supportedVersions"] == ["2026-07-28"]


def test_prompts_templates_and_completion_with_context() -> None:
    with Client(limits_server(), schemas=schemas()) as client:
        assert client.get_prompt("about", {"topic": "owls"})["messages"][0]["content"]["text"] == "Tell me about owls."
        assert [t["uriTemplate"] for t in client.list_resource_templates()] == ["notes://{folder}/{name}"]
        assert client.read_resource("notes://work/todo").data == ["note todo"]
        completed = client.complete("name", "to", resource_template="notes://{folder}/{name}", context={"folder": "work"})
        assert completed["completion"]["values"] == ["work-to"]
        with pytest.raises(ValueError, match="exactly one"):
            client.complete("name", "to")


async def test_subscriptions_time_out_close_and_refuse() -> None:
    server = Server("streams", "1.0.0", list_changed=["tools"])
    client = AsyncClient(server, schemas=schemas())
    await client.start()
    stream = await client.listen(tools=True)
    with pytest.raises(TimeoutError, match="no notifications/tools/list_changed"):
        await stream.next("notifications/tools/list_changed", timeout=0.1)
    assert not stream.closed
    await stream.cancel()
    assert stream.closed
    with pytest.raises(RequestError) as refused:  # tasks are not offered by this server
        await client.listen(task_ids=["no-such-task"])
    assert refused.value.code in (-32021, -32602)
    pending = await client.send_request("ping")
    await client.cancel(pending.id)  # by id
    await client.send_raw(b"{not json}\n")  # answered -32700 with id null: a response to no request
    await until(lambda: any(direction == "received" and b"-32700" in line for direction, line in client.transcript))
    with pytest.raises(SchemaViolation, match="no request in flight"):
        await client.close()
    assert [direction for direction, line in client.transcript if line == b"{not json}\n"] == ["sent"]


def test_wrong_arguments_and_a_client_used_before_it_starts() -> None:
    with pytest.raises(ValueError, match="era"):
        Client(Server("x", "1"), era="future")
    with pytest.raises(TypeError, match="target"):
        Client("python server.py")
    client = Client(Server("x", "1"))
    with pytest.raises(RuntimeError, match="not started"):
        client.list_tools()
    client.close()  # closing a client that never started does nothing


def test_schemas_structural_rules_hold_with_or_without_the_files() -> None:
    lenient, strict = Schemas(), Schemas(strict=True)
    assert not strict.has("modern") and not strict.has("tasks")
    unknown = {"jsonrpc": "2.0", "method": "notifications/custom"}
    assert lenient.problems("modern", unknown) == []
    assert strict.problems("modern", unknown) == ["no notification definition known for 'notifications/custom'"]
    result = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}
    assert lenient.problems("modern", result, "custom/method") == []
    assert strict.problems("modern", result, "custom/method") == ["no result definition known for 'custom/method'"]
    assert strict.problems("modern", result) == []  # a response to no known method: the envelope only
    for code, bad in ((-32000, True), (-32019, True), (-32020, True), (-32099, True), (-32021, False), (-32022, False), (-32100, False), (-32603, False)):
        error = {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "m"}}
        assert bool(lenient.problems("modern", error)) is bad, code
        assert lenient.problems("legacy", error) == []  # the rule is the 2026-07-28 era's
    with pytest.raises(SchemaViolation, match="no notification definition"):
        strict.check("legacy", {"jsonrpc": "2.0", "method": "notifications/tasks", "params": {}})  # a modern-only method


@pytest.mark.skipif(not available(), reason="the official schemas are not available")
def test_schemas_found_in_a_folder_check_every_kind_of_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    official = schemas()
    for kind, name in SCHEMA_FILES.items():
        if official.paths[kind] is not None and official.paths[kind].is_file():
            shutil.copy(official.paths[kind], tmp_path / name)
    monkeypatch.setenv("MCP_REF_SCHEMA_DIR", str(tmp_path))
    found, strict = Schemas.find(), Schemas.find(tmp_path, strict=True)
    assert found.has("modern") and found.has("legacy") and not Schemas.find(False).has("modern")
    acknowledged = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"notifications": {}}}
    assert found.problems("modern", acknowledged) == []
    assert found.problems("legacy", acknowledged) == []  # the legacy schema lacks it: not checked...
    assert strict.problems("legacy", acknowledged) == ["SubscriptionsAcknowledgedNotification is not defined in the legacy schema"]  # ...unless strict
    bad_request = {"jsonrpc": "2.0", "id": "s1", "method": "elicitation/create", "params": {"message": 7}}
    assert any("ElicitRequest" in problem for problem in found.problems("legacy", bad_request))
    assert found.problems("modern", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}) == []
    assert any("ParseError" in problem for problem in found.problems("modern", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": 7}}))
    with pytest.raises(SchemaViolation, match="ListToolsResult"):
        found.check("modern", {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": [{"name": 7}]}}, "tools/list")
    if found.has("tasks"):
        handle = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "task", "taskId": 7}}
        assert any("CreateTaskResult" in problem for problem in found.problems("modern", handle, "tools/call"))
