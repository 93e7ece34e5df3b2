"""``server/discover``: versions, capabilities and identity in one request.

Spec: server/discover (2026-07-28). Every server must implement it; a dual-era client sends it
first on stdio to learn the server's era. The result lists the versions a request may name in
its ``_meta`` (never the initialize-era ones, which work only through ``initialize``; a -32022
names those apart), the capabilities derived from what is registered, and optional
instructions; ``serverInfo`` and caching hints are added by the dispatcher, as for
every result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.context import RequestContext
    from ..server import Server


async def discover(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``server/discover``."""
    result: dict[str, Any] = {"supportedVersions": server.supported_versions, "capabilities": server.capabilities()}
    if server.instructions is not None:
        result["instructions"] = server.instructions
    return result
