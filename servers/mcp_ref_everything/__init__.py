"""mcp-ref-everything: the demonstration server bundled with ``mcp_ref``.

Every tool, prompt and resource exercises one feature of the library, named as the official MCP
conformance suite's reference fixture names them. Read ``server.py`` top to bottom; run it with
``mcp-ref-everything`` or ``python -m mcp_ref_everything`` (it speaks MCP over stdio).
"""

from .server import server

__all__ = ["server"]
