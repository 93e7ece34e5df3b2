"""mcp_ref.testing: the test client, in process and over real stdio, in both eras.

Every client here checks what it receives against the official schemas when tests/schema_check.py
finds them (the library itself only takes a folder: ``schema_dir=``).
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

from mcp_ref import Server, TaskSettings, elicit_form, list_roots, sample
from mcp_ref.testing import AsyncClient, Client, RequestError, SchemaViolation, ServerExitError, WireViolation

from .schema_check import available, schema_dir

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
    with Client(demo_server(), schema_dir=SCHEMAS, on_elicitation=answer_form, on_sampling=answer_sampling, on_roots=answer_roots) as client:
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
    with Client(demo_server(), era="legacy", schema_dir=SCHEMAS, on_elicitation=answer_form, on_sampling=answer_sampling, on_roots=answer_roots) as client:
        assert client.initialize_result is not None and client.initialize_result["protocolVersion"] == "2025-11-25"
        reply = client.call_tool("greet")
        assert reply.text == "Ada: 1 root(s), forty-two"
        assert [r["method"] for r in reply.rounds] == ["elicitation/create", "roots/list", "sampling/createMessage"]
        assert client.ping().result == {}


def test_a_missing_callback_is_an_error_the_test_sees() -> None:
    with Client(demo_server(), schema_dir=SCHEMAS, capabilities={"elicitation": {}}) as client:
        with pytest.raises(LookupError, match="on_elicitation"):
            client.call_tool("greet")


def test_a_task_is_polled_to_its_end_answering_its_input_with_tasks_update() -> None:
    with Client(demo_server(), schema_dir=SCHEMAS, tasks=True, on_elicitation=answer_form) as client:
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

    async with AsyncClient(server, schema_dir=SCHEMAS) as client:
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
    options = dict(schema_dir=SCHEMAS, on_elicitation=answer_form, on_sampling=answer_sampling, on_roots=answer_roots)
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
    with Client(fake_server(tmp_path, MALFORMED), schema_dir=SCHEMAS) as client:
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
