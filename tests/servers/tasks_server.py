"""A server with small task bounds and handlers that test the edges of the tasks extension.

Run it with ``python -m tests.servers.tasks_server`` from the repository root. Built on the public
``mcp_ref`` API only. Tasks live 1.5 s (``ttlMs`` 1500), at most 2 run at once and 3 are kept;
a call is answered directly only if it finishes within 50 ms.

Tools (all ``task="optional"`` unless said otherwise)
    ``sleep``          async; sleeps ``seconds`` (default 30), returns ``"slept"``.
    ``sync_wait``      synchronous (on the handler pool); as a task at once, then loops until
                       ``ctx.cancelled`` (at most 10 s); returns ``"cancelled"`` or ``"timeout"``,
                       and records what it saw in ``SYNC_SEEN`` (read with the ``seen`` tool).
    ``seen``           not a task tool; returns ``SYNC_SEEN`` as JSON text.
    ``reask``          as a task, asks ``k``; once answered, raises ``InputRequired`` for ``k`` again.
    ``needs_sampling`` as a task, asks for a sampling (the client may not have declared it).
    ``spin``           as a task, raises ``InputRequired(state=...)`` with nothing to ask, forever.
    ``state_rounds``   as a task: round 1 keeps state, round 2 asks ``x``, round 3 returns both.
    ``progress``       as a task, reports progress 1..3 of 3 (a message only for the last), 0.1 s apart.
    ``sync_only``      ``task=None``: never a task.
    ``cancel_then_ask`` as a task, waits; when cancelled, swallows it, says so on stderr and asks ``keep``.
    ``ask_a_wait_ask_b`` plain MRTR code: asks ``a``, works 0.3 s, asks ``b`` (becomes a task in between).
    ``unencodable``    as a task, returns structured content holding NaN (not JSON).
    ``swallow_cancel`` as a task, ignores every cancellation (shutdown must not wait for it forever).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from typing import Any

from mcp_ref import InputRequired, RequestContext, Server, TaskSettings, ToolResult, elicit_form, prompt_message, sample, text

SECONDS = {"type": "object", "properties": {"seconds": {"type": "number"}}}
FORM = elicit_form("Value?", {"type": "object", "properties": {"v": {"type": "string"}}})
SYNC_SEEN: list[str] = []
_seen_lock = threading.Lock()

server = Server(
    "tasks-edges",
    "1.0.0",
    task_settings=TaskSettings(ttl_seconds=1.5, poll_interval_ms=50, answer_within_seconds=0.05, max_running=2, max_stored=3),
)


@server.tool(input_schema=SECONDS, task="optional")
async def sleep(ctx: RequestContext, args: dict[str, Any]) -> str:
    await asyncio.sleep(args.get("seconds", 30))
    return "slept"


@server.tool(task="optional")
def sync_wait(ctx: RequestContext, args: dict[str, Any]) -> str:
    ctx.run_as_task()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if ctx.cancelled:
            with _seen_lock:
                SYNC_SEEN.append("cancelled")
            return "cancelled"
        time.sleep(0.02)
    return "timeout"


@server.tool()
async def seen(ctx: RequestContext, args: dict[str, Any]) -> str:
    with _seen_lock:
        return json.dumps(SYNC_SEEN)


@server.tool(task="optional")
async def reask(ctx: RequestContext, args: dict[str, Any]) -> str:
    ctx.run_as_task()
    ctx.ask("k", FORM)
    raise InputRequired({"k": FORM})


@server.tool(task="optional")
async def needs_sampling(ctx: RequestContext, args: dict[str, Any]) -> str:
    ctx.run_as_task()
    return str(ctx.ask("s", sample([prompt_message("user", "hi")], max_tokens=5)))


@server.tool(task="optional")
async def spin(ctx: RequestContext, args: dict[str, Any]) -> str:
    ctx.run_as_task()
    raise InputRequired(state={"n": (ctx.state or {}).get("n", 0) + 1})


@server.tool(task="optional")
async def state_rounds(ctx: RequestContext, args: dict[str, Any]) -> str:
    ctx.run_as_task()
    if ctx.state is None:
        raise InputRequired(state={"round": 1})
    answer = ctx.ask("x", FORM, state={"round": 2})
    return json.dumps({"state": ctx.state, "x": answer.get("content")})


@server.tool(task="optional")
async def progress(ctx: RequestContext, args: dict[str, Any]) -> str:
    ctx.run_as_task()
    for step in (1, 2, 3):
        ctx.report_progress(step, 3, "all done" if step == 3 else None)
        await asyncio.sleep(0.1)
    return "done"


@server.tool(task="optional")
async def cancel_then_ask(ctx: RequestContext, args: dict[str, Any]) -> str:
    ctx.run_as_task()
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        print("tasks_server: cancel_then_ask asks after its cancellation", file=sys.stderr, flush=True)
        ctx.ask("keep", FORM)  # a handler that misbehaves: the task must stay cancelled
    return "finished"


@server.tool(task="optional")
async def ask_a_wait_ask_b(ctx: RequestContext, args: dict[str, Any]) -> str:
    a = ctx.ask("a", FORM)
    await asyncio.sleep(0.3)
    b = ctx.ask("b", FORM)
    return json.dumps({"a": a.get("content"), "b": b.get("content")})


@server.tool(task="optional")
async def unencodable(ctx: RequestContext, args: dict[str, Any]) -> ToolResult:
    ctx.run_as_task()
    return ToolResult([text("x")], structured_content={"x": float("nan")})


@server.tool(task="optional")
async def swallow_cancel(ctx: RequestContext, args: dict[str, Any]) -> str:
    ctx.run_as_task()
    while True:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            pass


@server.tool()
async def sync_only(ctx: RequestContext, args: dict[str, Any]) -> str:
    ctx.run_as_task()  # not a task tool: nothing changes
    return f"task_id={ctx.task_id}"


if __name__ == "__main__":
    server.run()
