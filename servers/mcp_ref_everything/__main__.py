"""Entry point: ``mcp-ref-everything`` or ``python -m mcp_ref_everything`` serves over stdio."""

from __future__ import annotations

import sys

USAGE = """\
usage: mcp-ref-everything [--help] [--version]

The mcp-ref demonstration server: every feature of the mcp_ref library, named as the official
MCP conformance suite's fixture. It speaks MCP over stdio: one JSON-RPC message per line on
stdin, answers on stdout, logs on stderr. It serves 2026-07-28 clients (per-request _meta) and
initialize-era clients (2025-11-25 and earlier), and exits when stdin closes.

Environment: MCP_REF_LOG_LEVEL, MCP_REF_STATE_KEY, MCP_REF_MAX_LINE_BYTES,
MCP_REF_SHUTDOWN_GRACE_SECONDS, MCP_REF_MAX_CONCURRENCY (see the README).
"""


def main(argv: list[str] | None = None) -> int:
    """Serve until stdin closes (or SIGTERM/SIGINT); returns the exit status."""
    arguments = sys.argv[1:] if argv is None else argv
    if arguments:
        # Only a person types arguments; hosts start the server without any.
        if arguments in (["-h"], ["--help"]):
            sys.stdout.write(USAGE)
            return 0
        if arguments == ["--version"]:
            from .server import server

            sys.stdout.write(f"mcp-ref-everything {server.info['version']}\n")
            return 0
        sys.stderr.write(USAGE + f"\nmcp-ref-everything: unexpected arguments: {' '.join(arguments)}\n")
        return 2
    from .server import server

    return server.run()


if __name__ == "__main__":
    sys.exit(main())
