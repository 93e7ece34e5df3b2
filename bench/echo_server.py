"""The benchmark's subject: a minimal mcp_ref server (one async echo tool, one small resource).

Run as ``python bench/echo_server.py``. With ``--large`` it also offers two 4 MiB resources,
``bench://large/text`` and ``bench://large/blob``, for the large-payload measurement; their
contents are built on each read (as the SDK peer does), so they do not weigh on start-up.
"""

from __future__ import annotations

import os
import sys

# Run from a checkout without installing (os is imported at start-up anyway; pathlib is not).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mcp_ref import Server  # noqa: E402

LARGE_BYTES = 4 * 1024 * 1024

server = Server("bench-echo", "1.0.0")


@server.tool(
    description="Echo the text back",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)
async def echo(ctx, args):
    return args["text"]


@server.resource("bench://hello", mime_type="text/plain", description="A small text resource")
async def hello(ctx):
    return "hello"


if "--large" in sys.argv:

    @server.resource("bench://large/text", mime_type="text/plain", description="4 MiB of text")
    async def large_text(ctx):
        return "0123456789abcdef" * (LARGE_BYTES // 16)

    @server.resource("bench://large/blob", mime_type="application/octet-stream", description="4 MiB of bytes")
    async def large_blob(ctx):
        return bytes(range(256)) * (LARGE_BYTES // 256)

if __name__ == "__main__":
    sys.exit(server.run())
