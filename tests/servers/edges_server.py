"""A server with handlers that misbehave on purpose, for tests/test_protocol_edges.py.

Run it with ``python -m tests.servers.edges_server`` from the repository root (the tests also
build it in memory with ``build_server()``). Built on the public ``mcp_ref`` API only.

Tools
    ``echo``              async; returns its ``text`` argument.
    ``slow``              async; sleeps ``seconds`` (default 0.3), then returns ``"slept"``.
    ``system_exit``       async; runs an argparse parser on a bad flag, which calls ``sys.exit(2)``.
    ``keyboard_interrupt`` synchronous (on the handler pool); raises ``KeyboardInterrupt``.
    ``generator_exit``    async; raises ``GeneratorExit``.
    ``inner_cancel``      async; awaits a task of its own that it cancelled (a ``CancelledError``
                          the client did not cause).
    ``ask_roots``         MRTR: asks for the client's roots, returns them as JSON text.
    ``ask_form``          MRTR: a form elicitation (``{ok: boolean}``); returns the answer as JSON text.
    ``ask_url``           MRTR: a URL elicitation; returns the answer as JSON text.
    ``bad_keys``          raises ``InputRequired`` with the keys ``1`` and ``"1"`` (refused at raise time).

Resource templates (each returns its variables as JSON text)
    ``db://{table}-{id}``, ``x://{a}-{b}-{c}-{d}-{e}``, ``file:///{+path}``, ``seg://{name}/info``.

Prompt ``p`` (argument ``a``) with a completer; protocol logging is on (``log_messages=True``);
resource subscriptions and tools list changes are declared (for listen streams).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from mcp_ref import (
    InputRequired,
    PromptArgument,
    RequestContext,
    Server,
    elicit_form,
    elicit_url,
    list_roots,
)

TEMPLATES = ("db://{table}-{id}", "x://{a}-{b}-{c}-{d}-{e}", "file:///{+path}", "seg://{name}/info")


def build_server() -> Server:
    server = Server(
        "edges-server",
        "1.0.0",
        log_messages=True,
        resource_subscriptions=True,
        list_changed=["tools"],
        state_key=b"edges-server-test-key-0123456789",
    )

    @server.tool(
        description="Return the given text unchanged",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )
    async def echo(ctx: RequestContext, args: dict[str, Any]) -> str:
        return args["text"]

    @server.tool(description="Sleep, then answer", input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}})
    async def slow(ctx: RequestContext, args: dict[str, Any]) -> str:
        await asyncio.sleep(args.get("seconds", 0.3))
        return "slept"

    @server.tool(description="Parse a bad flag with argparse, which calls sys.exit")
    async def system_exit(ctx: RequestContext, args: dict[str, Any]) -> str:
        argparse.ArgumentParser(prog="edges").parse_args(["--no-such-flag"])
        return "unreachable"

    @server.tool(description="Raise KeyboardInterrupt on a worker thread")
    def keyboard_interrupt(ctx: RequestContext, args: dict[str, Any]) -> str:
        raise KeyboardInterrupt

    @server.tool(description="Raise GeneratorExit")
    async def generator_exit(ctx: RequestContext, args: dict[str, Any]) -> str:
        raise GeneratorExit

    @server.tool(description="Await an inner task that this handler cancelled itself")
    async def inner_cancel(ctx: RequestContext, args: dict[str, Any]) -> str:
        inner = asyncio.get_running_loop().create_task(asyncio.sleep(10))
        await asyncio.sleep(0)
        inner.cancel()
        await inner
        return "unreachable"

    @server.tool(description="Ask for the client's roots")
    async def ask_roots(ctx: RequestContext, args: dict[str, Any]) -> str:
        return json.dumps(ctx.ask("roots", list_roots()))

    @server.tool(description="Ask for a confirmation with a form")
    async def ask_form(ctx: RequestContext, args: dict[str, Any]) -> str:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        return json.dumps(ctx.ask("confirm", elicit_form("Proceed?", schema)))

    @server.tool(description="Send the user to a page")
    async def ask_url(ctx: RequestContext, args: dict[str, Any]) -> str:
        return json.dumps(ctx.ask("visit", elicit_url("Sign in", "https://example.com/start")))

    @server.tool(description="Ask with keys 1 and '1' (refused when InputRequired is built)")
    async def bad_keys(ctx: RequestContext, args: dict[str, Any]) -> str:
        raise InputRequired({1: list_roots(), "1": list_roots()})  # type: ignore[dict-item]

    for template in TEMPLATES:

        async def read(ctx: RequestContext, uri: str, variables: dict[str, str]) -> str:
            return json.dumps(variables, ensure_ascii=False)

        server.resource_template(template, name=template.split(":")[0], mime_type="application/json")(read)

    @server.prompt("p", description="A prompt", arguments=[PromptArgument("a", "An argument")])
    async def prompt(ctx: RequestContext, args: dict[str, str]) -> str:
        return f"a={args.get('a')}"

    @server.completer(prompt="p")
    def complete(ctx: RequestContext, argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [choice for choice in ("alpha", "beta") if choice.startswith(value)]

    return server


def main() -> int:
    return build_server().run(shutdown_grace_seconds=2.0)


if __name__ == "__main__":
    sys.exit(main())
