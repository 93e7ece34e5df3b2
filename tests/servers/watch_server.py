"""A server with a paged resource lister and a watch hook, for the wire tests of both.

Run it with ``python -m tests.servers.watch_server`` from the repository root. Built only on the
public ``mcp_ref`` API, like a small file server would be: the lister pages through a sorted list
of file names, using the name of the next file as its position, and the watch hook says on stderr
what it would watch.

Resources
    ``files://static/readme``   a fixed text resource (listed first).
    ``files://data/{name}``     the files ``f0000`` .. ``f<N-1>``, listed by the paged lister.

Tool ``touch`` (synchronous, so it runs on a worker thread): announces an update of ``files://data/<name>``.

stderr lines the tests read (one per event, flushed at once):
    ``watch_server: lister position=<JSON> limit=<n> returned=<n>``
    ``watch_server: watch uris=<JSON list> lists=<JSON list>``

Options, from environment variables (all optional):
    ``WATCH_SERVER_FILES``      how many files (default 25)
    ``WATCH_SERVER_PAGE_SIZE``  items per page (default 10)
"""

from __future__ import annotations

import bisect
import json
import os
import sys
from typing import Any

from mcp_ref import RequestContext, ResourceNotFound, Server, WatchSet


def _say(text: str) -> None:
    print(f"watch_server: {text}", file=sys.stderr, flush=True)


def build_server() -> Server:
    files = [f"f{n:04d}" for n in range(int(os.environ.get("WATCH_SERVER_FILES", "25")))]
    server = Server(
        "watch-server",
        "1.0.0",
        list_changed=["resources"],
        resource_subscriptions=True,
        page_size=int(os.environ.get("WATCH_SERVER_PAGE_SIZE", "10")),
    )

    @server.resource("files://static/readme", mime_type="text/plain")
    async def readme(ctx: RequestContext) -> str:
        return "listed before the files"

    @server.resource_template("files://data/{name}", mime_type="text/plain")
    async def data(ctx: RequestContext, uri: str, variables: dict[str, str]) -> str:
        if variables["name"] not in files:
            raise ResourceNotFound(uri)
        return f"contents of {variables['name']}"

    @server.resource_lister(paged=True)
    async def list_files(ctx: RequestContext, position: str | None, limit: int) -> tuple[list[dict[str, Any]], str | None]:
        start = 0 if position is None else bisect.bisect_left(files, position)
        chunk = files[start : start + limit]
        after = files[start + limit] if start + limit < len(files) else None
        _say(f"lister position={json.dumps(position)} limit={limit} returned={len(chunk)}")
        return [{"uri": f"files://data/{name}", "name": name} for name in chunk], after

    @server.on_watch
    async def watch(watched: WatchSet) -> None:
        _say(f"watch uris={json.dumps(sorted(watched.resource_uris))} lists={json.dumps(sorted(watched.lists))}")

    @server.tool(input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    def touch(ctx: RequestContext, args: dict[str, Any]) -> str:
        """Announce that a file changed (from a worker thread)."""
        server.notify_resource_updated(f"files://data/{args['name']}")
        return "touched"

    return server


def main() -> int:
    return build_server().run()


if __name__ == "__main__":
    sys.exit(main())
