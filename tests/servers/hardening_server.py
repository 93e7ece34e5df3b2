"""basic_server plus a few tools and fault injections for the transport hardening tests.

Run it with ``python -m tests.servers.hardening_server`` from the repository root. Everything
``basic_server`` has is here too (``echo``, ``slow``, ``spin``, ``crash``, ``memo://bytes/{n}``...).

Extra tools
    ``big_state``       asks for a follow-up round (MRTR) carrying ``size`` characters of state.
    ``late_progress``   synchronous: reports progress 1, then progress 2 as a worker thread that
                        is preempted for ``delay`` seconds between deciding to send it (it says
                        so on stderr) and handing it to the loop; then waits (at most 10 s) to
                        be cancelled.
    ``chatty``          prints ``lines`` lines of ``width`` characters with ``print()``.
    ``print_after_cancel``  synchronous: prints a marker (``print`` and ``os.write(1)``) every
                        10 ms for ``seconds`` seconds, ignoring cancellation.

Fault injection
    A line containing ``RAISE-MEMORY-ERROR`` or ``RAISE-RUNTIME-ERROR`` makes ``wire.parse_line``
    raise that exception, as a decoder running out of memory (or a bug) would.

Options, from environment variables (on top of basic_server's ``BASIC_SERVER_*``):
    ``BASIC_SERVER_FLUSH_TIMEOUT``         seconds queued output may take after the grace period
    ``BASIC_SERVER_MAX_IN_FLIGHT_BYTES``   the transport's in-flight byte budget
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import mcp_ref.core.wire
from mcp_ref import InputRequired, RequestContext, Server
from tests.servers.basic_server import (
    _env_float,
    _env_int,
    _say,
    build_server,
    transport_options,
)

AFTER_CANCEL_MARKER = "PRINTED-AFTER-CANCELLATION"

_real_parse_line = mcp_ref.core.wire.parse_line


def _faulty_parse_line(line: bytes | bytearray, **options: Any) -> Any:
    if b"RAISE-MEMORY-ERROR" in line:
        raise MemoryError("injected by hardening_server")
    if b"RAISE-RUNTIME-ERROR" in line:
        raise RuntimeError("injected by hardening_server")
    return _real_parse_line(line, **options)


def build_hardening_server() -> Server:
    server = build_server()

    @server.tool(
        description="Ask for a follow-up round whose sealed state holds `size` characters",
        input_schema={"type": "object", "properties": {"size": {"type": "integer", "minimum": 0}}, "required": ["size"]},
    )
    async def big_state(ctx: RequestContext, args: dict[str, Any]) -> str:
        if ctx.state is not None:
            return f"state of {len(ctx.state)} characters came back"
        raise InputRequired(state="s" * args["size"])

    @server.tool(
        description="Report progress from a worker thread that is preempted before handing the second one over",
        input_schema={"type": "object", "properties": {"delay": {"type": "number", "minimum": 0}}},
    )
    def late_progress(ctx: RequestContext, args: dict[str, Any]) -> str:
        ctx.report_progress(1, total=2, message="first")
        forward = ctx._emit  # fault injection: the preemption point inside report_progress

        def preempted(message: dict[str, Any]) -> None:
            _say(f"late_progress {ctx.request_id!r}: progress 2 decided")
            time.sleep(args.get("delay", 0.5))
            forward(message)

        ctx._emit = preempted
        # Final (progress == total), so no rate limit applies; ctx.cancelled is checked: not yet.
        ctx.report_progress(2, total=2, message="second, decided before the cancellation")
        deadline = time.monotonic() + 10
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        return "cancelled" if ctx.cancelled else "never cancelled"

    @server.tool(
        description="Print lines with print() (the transport diverts them to stderr)",
        input_schema={
            "type": "object",
            "properties": {"lines": {"type": "integer", "minimum": 0}, "width": {"type": "integer", "minimum": 0}},
        },
    )
    async def chatty(ctx: RequestContext, args: dict[str, Any]) -> str:
        for number in range(args.get("lines", 1)):
            print(f"chatty {number}: " + "c" * args.get("width", 100))
        return "printed"

    @server.tool(
        description="Print to stdout every 10 ms for `seconds` seconds, ignoring cancellation",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0}}, "required": ["seconds"]},
    )
    def print_after_cancel(ctx: RequestContext, args: dict[str, Any]) -> str:
        deadline = time.monotonic() + args["seconds"]
        while time.monotonic() < deadline:
            if ctx.cancelled:
                print(f"{AFTER_CANCEL_MARKER} via print()", flush=True)
                os.write(1, f"{AFTER_CANCEL_MARKER} via os.write(1)\n".encode())
            time.sleep(0.01)
        return "done"

    return server


def main() -> int:
    mcp_ref.core.wire.parse_line = _faulty_parse_line
    options = transport_options()
    flush = _env_float("BASIC_SERVER_FLUSH_TIMEOUT")
    if flush is not None:
        options["flush_timeout_seconds"] = flush
    budget = _env_int("BASIC_SERVER_MAX_IN_FLIGHT_BYTES")
    if budget is not None:
        options["max_in_flight_bytes"] = budget
    return build_hardening_server().run(**options)


if __name__ == "__main__":
    sys.exit(main())
