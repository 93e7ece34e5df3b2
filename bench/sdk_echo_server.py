"""The peer for ``bench.py --peers``: the same echo tool and resources on the official Python SDK.

Uses only the installed ``mcp`` package's public API (``MCPServer``, stdio transport). Not part
of mcp_ref; the SDK is a test extra of this project, so this file is only run by the benchmark.
"""

import sys

from mcp.server import MCPServer

LARGE_BYTES = 4 * 1024 * 1024

server = MCPServer("bench-echo-sdk", version="1.0.0", log_level="WARNING")


@server.tool(description="Echo the text back", structured_output=False)
async def echo(text: str) -> str:
    return text


@server.resource("bench://hello", mime_type="text/plain", description="A small text resource")
async def hello() -> str:
    return "hello"


if "--large" in sys.argv:

    @server.resource("bench://large/text", mime_type="text/plain", description="4 MiB of text")
    async def large_text() -> str:
        return "0123456789abcdef" * (LARGE_BYTES // 16)

    @server.resource("bench://large/blob", mime_type="application/octet-stream", description="4 MiB of bytes")
    async def large_blob() -> bytes:
        return bytes(range(256)) * (LARGE_BYTES // 256)


if __name__ == "__main__":
    server.run("stdio")
