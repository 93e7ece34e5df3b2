"""A small server with one of each kind of thing, for the wire tests.

Run it with ``python -m tests.servers.basic_server`` from the repository root. It is built only on
the public ``mcp_ref`` API, so it is also a compact example of a server.

Tools
    ``echo``        async; returns its ``text`` argument.
    ``add``         synchronous (runs on the handler pool); returns ``a + b`` as text.
    ``slow``        async; ``steps`` steps of ``interval`` seconds each, reporting progress after every
                    step when the request asked for it; stops when cancelled and says so on stderr.
    ``spin``        synchronous; loops for ``seconds``, checking ``ctx.cancelled`` every 10 ms.
    ``stray_print`` writes to stdout three ways (``print``, ``sys.stdout.write``, ``os.write(1, ...)``);
                    the transport must route all of it to stderr.
    ``crash``       raises an unexpected exception (an ``isError`` result with a generic message;
                    details on stderr only).
    ``refuse``      raises ``ToolError`` (a tool execution error: ``isError: true``).

Resources
    ``memo://greeting``         a fixed text resource.
    ``memo://bytes/{size}``     a template: ``size`` ASCII characters of text (at most 64 MiB).

Prompt ``greet`` (``name`` required, ``style`` optional) and completers for it and for the template.

Options, from environment variables (all optional):
    ``BASIC_SERVER_PAGE_SIZE``        items per page of the list methods
    ``BASIC_SERVER_EXTRA_TOOLS``      register this many extra ``filler-N`` tools (for pagination)
    ``BASIC_SERVER_MAX_LINE_BYTES``   the transport's maximum input line size
    ``BASIC_SERVER_SHUTDOWN_GRACE``   seconds in-flight requests get after EOF or a signal
    ``BASIC_SERVER_MAX_CONCURRENCY``  handlers running at once
    ``BASIC_SERVER_MODERN_ONLY``      ``1``: serve only 2026-07-28 clients (no initialize)
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from mcp_ref import (
    Completion,
    PromptArgument,
    PromptResult,
    RequestContext,
    ResourceNotFound,
    Server,
    ToolError,
    prompt_message,
)

GREETING = "Hello from basic_server"
MAX_GENERATED_BYTES = 64 * 1024 * 1024
KNOWN_NAMES = ["Ada", "Alan", "Alonzo", "Barbara", "Grace"]
STRAY_MARKER = "STRAY-OUTPUT-FROM-A-HANDLER"


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value else None


def _env_float(name: str) -> float | None:
    value = os.environ.get(name)
    return float(value) if value else None


def _say(text: str) -> None:
    """Diagnostics for the tests go to stderr, as all server logging must."""
    print(f"basic_server: {text}", file=sys.stderr, flush=True)


def build_server() -> Server:
    """The server, configured from the environment."""
    options: dict[str, Any] = {}
    page_size = _env_int("BASIC_SERVER_PAGE_SIZE")
    if page_size is not None:
        options["page_size"] = page_size
    server = Server(
        "basic-server",
        "1.0.0",
        title="Basic test server",
        instructions="A test server for the mcp_ref wire tests.",
        modern_only=os.environ.get("BASIC_SERVER_MODERN_ONLY", "") in ("1", "true", "yes"),
        **options,
    )

    @server.tool(
        description="Return the given text unchanged",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )
    async def echo(ctx: RequestContext, args: dict[str, Any]) -> str:
        return args["text"]

    @server.tool(
        description="Add two integers (a synchronous handler)",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    )
    def add(ctx: RequestContext, args: dict[str, Any]) -> str:
        return str(args["a"] + args["b"])

    @server.tool(
        description="Work in steps, reporting progress; stops when cancelled",
        input_schema={
            "type": "object",
            "properties": {
                "steps": {"type": "integer", "minimum": 1},
                "interval": {"type": "number", "minimum": 0},
            },
        },
    )
    async def slow(ctx: RequestContext, args: dict[str, Any]) -> str:
        steps = args.get("steps", 10)
        interval = args.get("interval", 0.05)
        done = 0
        try:
            for done in range(1, steps + 1):
                if ctx.cancelled:
                    _say(f"slow {ctx.request_id!r}: saw the cancellation after {done - 1} steps")
                    return "cancelled"
                await asyncio.sleep(interval)
                ctx.report_progress(done, total=steps, message=f"step {done} of {steps}")
        except asyncio.CancelledError:
            _say(f"slow {ctx.request_id!r}: cancelled during step {done} of {steps}")
            raise
        return f"finished {steps} steps"

    @server.tool(
        description="Loop for a while on a worker thread, checking for cancellation",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0}}, "required": ["seconds"]},
    )
    def spin(ctx: RequestContext, args: dict[str, Any]) -> str:
        deadline = time.monotonic() + args["seconds"]
        while time.monotonic() < deadline:
            if ctx.cancelled:
                _say(f"spin {ctx.request_id!r}: stopped early, the request was cancelled")
                return "stopped early"
            time.sleep(0.01)
        return "finished spinning"

    @server.tool(description="Write to stdout from inside a handler (the transport must divert it)")
    async def stray_print(ctx: RequestContext, args: dict[str, Any]) -> str:
        print(f"{STRAY_MARKER} via print()")
        sys.stdout.write(f"{STRAY_MARKER} via sys.stdout.write\n")
        sys.stdout.flush()
        os.write(1, f"{STRAY_MARKER} via os.write(1)\n".encode())
        return "printed"

    @server.tool(description="Fail with an unexpected exception")
    async def crash(ctx: RequestContext, args: dict[str, Any]) -> str:
        raise RuntimeError("crash tool: secret internal detail")

    @server.tool(description="Fail with a tool execution error")
    async def refuse(ctx: RequestContext, args: dict[str, Any]) -> str:
        raise ToolError("refuse tool: this tool always refuses")

    for number in range(_env_int("BASIC_SERVER_EXTRA_TOOLS") or 0):
        server.tool(f"filler-{number}", description=f"Filler tool number {number}")(_filler)

    @server.resource("memo://greeting", mime_type="text/plain", description="A fixed greeting")
    async def greeting(ctx: RequestContext) -> str:
        return GREETING

    @server.resource_template("memo://bytes/{size}", mime_type="text/plain", description="size characters of text")
    async def generated(ctx: RequestContext, uri: str, variables: dict[str, str]) -> str:
        size = variables["size"]
        if not size.isdigit() or int(size) > MAX_GENERATED_BYTES:
            raise ResourceNotFound(uri)
        return "x" * int(size)

    @server.prompt(
        description="Greet someone",
        arguments=[
            PromptArgument("name", "Who to greet", required=True),
            PromptArgument("style", "formal or casual"),
        ],
    )
    async def greet(ctx: RequestContext, args: dict[str, str]) -> PromptResult:
        opening = "Good day" if args.get("style") == "formal" else "Hi"
        return PromptResult([prompt_message("user", f"{opening}, {args['name']}!")], description="A greeting")

    @server.completer(prompt="greet")
    def complete_greet(ctx: RequestContext, argument: str, value: str, context: dict[str, str]) -> Completion:
        choices = KNOWN_NAMES if argument == "name" else ["casual", "formal"]
        matches = [choice for choice in choices if choice.lower().startswith(value.lower())]
        return Completion(matches, total=len(matches), has_more=False)

    @server.completer(resource_template="memo://bytes/{size}")
    def complete_size(ctx: RequestContext, argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [size for size in ("1", "1024", "1048576") if size.startswith(value)]

    return server


async def _filler(ctx: RequestContext, args: dict[str, Any]) -> str:
    return "filler"


def transport_options() -> dict[str, Any]:
    """Options for ``Server.run`` from the environment."""
    options: dict[str, Any] = {}
    max_line = _env_int("BASIC_SERVER_MAX_LINE_BYTES")
    if max_line is not None:
        options["max_line_bytes"] = max_line
    grace = _env_float("BASIC_SERVER_SHUTDOWN_GRACE")
    if grace is not None:
        options["shutdown_grace_seconds"] = grace
    concurrency = _env_int("BASIC_SERVER_MAX_CONCURRENCY")
    if concurrency is not None:
        options["max_concurrency"] = concurrency
    return options


def main() -> int:
    return build_server().run(**transport_options())


if __name__ == "__main__":
    sys.exit(main())
