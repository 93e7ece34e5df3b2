"""The argparse parser of ``mcp-ref-fs``: its help, its usage and the wording of its errors.

Imported only for a command line that is not plain (``options.plain_command_line`` says which
are): ``--help``, ``--version``, a mistake, an abbreviated option, ``--flag=value``... A plain one,
what a host's entry runs, is parsed without importing argparse (with gettext, ~2 ms of a start).
"""

from __future__ import annotations

import argparse
from typing import Any

from . import __version__ as VERSION
from .options import add_server_options

SUBCOMMAND_USAGE = ("print-config --client HOST [OPTION ...] [ROOT ...]",
                    "install --client HOST [--workspace] [OPTION ...] [ROOT ...]")

DESCRIPTION = """\
The mcp-ref filesystem server: MCP over stdio (one JSON-RPC message per line on stdin, answers
on stdout, logs on stderr) giving a client read and write access to the ROOT directories and
nothing else. Serves 2026-07-28 clients and initialize-era clients (2025-11-25 and earlier);
exits with status 0 when stdin closes.

Each ROOT is an allowed directory; without any, the current directory is served (and stderr says
so). Paths in tool arguments may be absolute or relative; relative paths resolve against the
first ROOT, and ~ is an ordinary name, never expanded. Nothing outside the roots is read,
listed, written, created, moved, deleted or revealed; symbolic links are followed only while
they stay inside their root."""

EPILOG = """\
limits: an answer carrying text (reads, listings, trees, searches, grep) holds at most
--max-answer-bytes (by default the budget measured for the client that says who it is, e.g.
claude-code 45000, codex-mcp-client 10000; 10000 for any other) and says in its text what it
showed and the exact arguments of the next call. A read returns at most --max-read-bytes of text, a
media file or resource read at most --max-media-bytes, and a listing, tree, search or grep at most
--max-entries entries (with a note saying the answer was cut). Searches stop after
--search-seconds of wall-clock time (one regular-expression search of the backtracking engine
also stops after 1 s plus 0.1 s per MiB of text), or --task-search-seconds when the call runs as
a task: a client that declares
the io.modelcontextprotocol/tasks extension gets a task handle for a directory_tree,
search_files or grep_files still running after 0.1 s, and polls it (tasks/get) while the
task's status message counts what was searched.

environment variables:
  MCP_REF_FS_CONFINE  how directories are opened beneath a root: auto (the default: openat2 where
                      the kernel has it, else the walk; on Windows, windows), openat2, walk (the
                      portable walk, for a system whose openat2 misbehaves) or windows (Windows only)
  MCP_REF_FS_ACT      how the final name of a path is acted on: auto (the default: *at calls
                      relative to the held directory where the system has them, else paths), at,
                      or paths (the held directory's path: what Windows uses; selectable on Linux
                      for testing)
  MCP_REF_FS_GREP     grep_files' engine: auto (the default: RE2, linear in time, for the patterns
                      it runs exactly as Python means them, the regex module for the rest) or regex
                      (the regex module for all)
  MCP_REF_LOG_LEVEL   the server's log on stderr: DEBUG, INFO, WARNING (default), ERROR, CRITICAL
  and the mcp-ref library's MCP_REF_STATE_KEY, MCP_REF_MAX_LINE_BYTES,
  MCP_REF_SHUTDOWN_GRACE_SECONDS, MCP_REF_MAX_CONCURRENCY and MCP_REF_STDIO (see the README's
  "Environment variables").

subcommands: 'mcp-ref-fs print-config --client HOST [ROOT ...]' prints a host configuration entry,
'mcp-ref-fs install --client HOST [ROOT ...]' writes it into the host's file (HOST: claude-desktop,
vscode, cursor, claude-code; see 'mcp-ref-fs install --help'). To serve a directory named
print-config or install, write 'mcp-ref-fs -- print-config' or 'mcp-ref-fs ./print-config'.

example: printf '%s\\n' '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' | mcp-ref-fs ."""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, measuring the terminal only when it formats help or usage.

    ``argparse`` makes a formatter for every ``add_argument`` (to check the metavar), and the
    stock one asks ``shutil.get_terminal_size`` for its width at once: importing ``shutil`` (with
    ``bz2``, ``lzma``, ``fnmatch``) cost every start ~1.4 ms for a width nothing used."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None, **more: Any) -> None:
        self._settings = (indent_increment, max_help_position, width)
        super().__init__(prog, indent_increment, max_help_position, 80 if width is None else width, **more)

    def _format_usage(self, usage: Any, actions: Any, groups: Any, prefix: Any) -> str:
        """argparse's usage of serving, then the two subcommands' (``mcp-ref-fs print-config -h``
        has their options), so ``--help`` and every error show all three forms."""
        serving = super()._format_usage(usage, actions, groups, prefix).rstrip("\n")
        indent = " " * len(prefix if prefix is not None else "usage: ")
        return serving + "".join(f"\n{indent}{self._prog} {form}" for form in SUBCOMMAND_USAGE) + "\n\n"

    def format_help(self) -> str:
        indent_increment, max_help_position, width = self._settings
        if width is None:  # what HelpFormatter.__init__ does with width=None
            import shutil

            self._width = shutil.get_terminal_size().columns - 2
            self._max_help_position = min(max_help_position, max(self._width - 20, indent_increment * 2))
        return super().format_help()


def argument_parser() -> argparse.ArgumentParser:
    """The parser of serving's command line (argparse exits 2 on bad options)."""
    parser = argparse.ArgumentParser(
        prog="mcp-ref-fs",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("roots", nargs="*", metavar="ROOT", help="an allowed directory (default: the current directory)")
    add_server_options(parser)
    parser.add_argument("--version", action="version", version=f"mcp-ref-fs {VERSION}")
    return parser
