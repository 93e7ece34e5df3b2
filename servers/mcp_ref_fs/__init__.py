"""mcp-ref-fs: the bundled filesystem MCP server."""
