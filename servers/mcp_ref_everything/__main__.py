"""Entry point: ``mcp-ref-everything`` or ``python -m mcp_ref_everything`` serves over stdio."""

from __future__ import annotations

import sys

from .server import server


def main() -> int:
    """Serve until stdin closes (or SIGTERM/SIGINT); returns the exit status."""
    return server.run()


if __name__ == "__main__":
    sys.exit(main())
