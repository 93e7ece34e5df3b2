"""mcp-ref-fs's answers without its file work: the library alone, for ``fs_breakdown.py``.

    python bench/answer_server.py ANSWERS.json

ANSWERS.json holds the server's name and version (``"server"``) and, for each tool (``"tools"``),
its input schema and what mcp-ref-fs's handler returned for one call (``"value"``: a string, or
``{"content": [...]}`` for a full result), recorded by ``fs_breakdown.py``. This server registers
each tool with the same input schema and answers every call with that same value, through the
same public API (``Server.add_tool``), so its answers are byte for byte those of mcp-ref-fs for
the recorded arguments. On pipes, its CPU per call is what mcp_ref, JSON and the event loop cost
for that answer; mcp-ref-fs's CPU per call less this one is what its file work costs in place (the
sandbox, the system calls, the tool's own code), measured the way the rows of ``fs_bench.py`` are.
The ``mcp_ref`` it runs on is the one Python finds first (``PYTHONPATH``, then the installed one),
else this checkout's.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # a checkout, uninstalled

from mcp_ref import Server, Tool, ToolResult  # noqa: E402


def answering(value: Any) -> Any:
    """A handler that answers ``value`` (a fresh ``ToolResult`` each call: results are shaped in place)."""
    if isinstance(value, str):
        async def handler(ctx: Any, arguments: dict[str, Any]) -> Any:
            return value
    else:
        async def handler(ctx: Any, arguments: dict[str, Any]) -> Any:
            return ToolResult([dict(block) for block in value["content"]])
    return handler


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        answers = json.load(handle)
    info = answers["server"]
    server = Server(info["name"], info["version"], title=info.get("title"))
    for name, recorded in answers["tools"].items():
        server.add_tool(Tool(name, answering(recorded["value"]), input_schema=recorded["input_schema"]))
    return server.run()


if __name__ == "__main__":
    sys.exit(main())
