"""Builds the mcp-ref-fs ``Server``: tools, resources and subscriptions over one sandbox.

Layers, top to bottom (each its own module): ``__main__`` (command line -> ``Config``) ->
``server`` (this wiring) -> ``tools`` / ``resources`` / ``watch`` (the MCP features) ->
``content`` / ``patterns`` / ``grep`` (pure text helpers) -> ``root`` (THE sandbox; the only module that
touches the file system by name) -> ``_confine_*`` (how directories are opened beneath a root).
"""

from __future__ import annotations

from typing import Any, Callable

from mcp_ref import RateLimit, Server

from . import __version__ as VERSION
from .config import RATE_BURST_SECONDS, Config
from .resources import READ_HINT, FsResources
from .root import Sandbox
from .tools import FsTools

INSTRUCTIONS = (
    "Read, search and change files inside the allowed directories (call list_allowed_directories first). "
    "Paths may be absolute or relative to the first allowed directory. Use read_text_file for text and "
    "read_media_file for images, audio and other binaries; edit_file for targeted changes (it returns a diff) "
    "and write_file to replace a whole file; grep_files searches contents, search_files names. "
    "Large answers are cut with a note that says how to get the rest."
)


def rate_limits(per_second: float) -> dict[str, RateLimit]:
    """The pacing of tool calls and completion requests (server/tools#security-considerations:
    servers MUST rate limit tool invocations; completion SHOULD be): one token bucket each per
    connection, ``per_second`` after a burst of ``RATE_BURST_SECONDS`` worth. Calls over it wait
    their turn, none is refused. ``0``: none."""
    if not per_second:
        return {}
    burst = max(1, int(per_second * RATE_BURST_SECONDS))
    return {"tools/call": RateLimit(per_second, burst), "completion/complete": RateLimit(per_second, burst)}


def watch_on_first_use(server: Server, sandbox: Sandbox) -> Callable[[Any], None]:
    """The ``Server.on_watch`` hook: the ``Watcher`` (:mod:`.watch`) is made when what clients
    listen for first changes. Most sessions never subscribe, so start-up does not import it."""
    watcher: Any = None

    def update(watched: Any) -> None:
        nonlocal watcher
        if watcher is None:
            from .watch import Watcher

            watcher = Watcher(server, sandbox)
        watcher.update(watched)

    return update


def build_server(config: Config, sandbox: Sandbox) -> Server:
    """The configured server, ready to ``run()``."""
    server = Server(
        "mcp-ref-fs",
        VERSION,
        title="mcp-ref filesystem server",
        instructions=INSTRUCTIONS + (" This server is read-only." if config.read_only else ""),
        list_changed=["resources"],
        resource_subscriptions=True,
        modern_only=config.modern_only,
        cache_hints={"resources/read": READ_HINT},
        rate_limits=rate_limits(config.max_calls_per_second),
    )
    FsTools(server, sandbox, config)
    FsResources(server, sandbox, config)
    server.on_watch(watch_on_first_use(server, sandbox))
    return server
