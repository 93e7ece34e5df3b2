"""Entry point: ``mcp-ref-fs [options] [ROOT ...]`` or ``python -m mcp_ref_fs``.

Parses the command line into a ``Config``, opens the roots (exit status 2 with a message on
stderr when one is unusable) and serves MCP over stdio until stdin closes.

A first argument ``print-config`` or ``install`` is a subcommand instead (see ``hosts.hostconfig``),
imported only then, so serving starts as fast as before. A directory of either name is served as
``mcp-ref-fs -- print-config`` or ``mcp-ref-fs ./print-config``.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING

from . import __version__ as VERSION  # noqa: F401 (read here by tools and tests)
from .config import Config
from .options import plain_command_line

if TYPE_CHECKING:
    from mcp_ref import Server

SUBCOMMANDS = ("print-config", "install")  # as the first argument only


def parse_arguments(argv: list[str]) -> Config:
    """The ``Config`` for a command line (argparse exits 2 on bad options)."""
    options = plain_command_line(argv)  # a host's entry, as a rule: no argparse to import
    if options is None:
        from .usage import argument_parser  # help, errors and every other spelling

        options = vars(argument_parser().parse_args(argv))
    return Config(roots=tuple(options.pop("roots")), **options)


def main(argv: list[str] | None = None) -> int:
    """Serve until stdin closes (or a signal); returns the exit status.

    Without ``argv`` (the console script, ``python -m mcp_ref_fs``) this call is the process's
    whole life, and what start-up made is frozen out of the garbage collector's way (below);
    with an ``argv`` list (tests, tools calling it in their own process) nothing is frozen."""
    arguments = sys.argv[1:] if argv is None else argv
    if arguments and arguments[0] in SUBCOMMANDS:
        from .hosts import hostconfig

        return hostconfig.main(arguments[0], arguments[1:])
    # Start-up makes tens of thousands of long-lived objects (the modules of asyncio, mcp_ref and
    # this server, their classes and functions) and little garbage: the cyclic collector would
    # only walk them, again and again as they pile up (~10 % of a cold start). It is paused until
    # the server is built (or start-up fails); then, for the process's own start, what start-up
    # made is frozen (``gc.freeze``: moved where collections never look), so the first collection
    # does not walk all of it once more (~6 ms) and later ones stay small. The price: the cycles
    # start-up leaves behind (throwaway enum classes of socket, signal and ssl; argparse's
    # parser when the command line needed it) are never collected, ~85 KiB once. gc is
    # process-wide: an in-process caller's other threads pause with it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        server = _build(arguments)
        if argv is None and not isinstance(server, int):
            gc.freeze()
    finally:
        if collecting:
            gc.enable()
    return server if isinstance(server, int) else server.run()


def _build(arguments: list[str]) -> Server | int:
    """The ``Server`` to run for these arguments, or the exit status (2) when a root is unusable."""
    config = parse_arguments(arguments)
    if not config.roots:
        config = config.replace(roots=(os.getcwd(),))
        sys.stderr.write(f"mcp-ref-fs: no ROOT given; serving the current directory {config.roots[0]}\n")
    from .root import Sandbox

    try:
        sandbox = Sandbox.open(config.roots)
    except ValueError as error:
        sys.stderr.write(f"mcp-ref-fs: {error}\n")
        return 2
    if sys.stdin is not None and sys.stdin.isatty():
        sys.stderr.write("mcp-ref-fs: waiting for JSON-RPC lines on stdin (see --help); Ctrl-D ends\n")
    from .server import build_server

    return build_server(config, sandbox)


if __name__ == "__main__":
    sys.exit(main())
