"""mcp-ref-fs: the bundled filesystem MCP server."""

__version__ = "0.1.0"
