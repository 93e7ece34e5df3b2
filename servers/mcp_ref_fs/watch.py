"""Change detection for subscriptions, running only while someone listens.

Spec: basic/patterns/subscriptions and server/resources#subscriptions (2026-07-28).

The library tells us, through ``Server.on_watch``, what open listen streams (and legacy
``resources/subscribe`` calls) currently want: a set of resource URIs and the lists whose
changes they want announced. When that set is empty nothing runs. When it is not, one task
watches every root with ``watchfiles`` (inotify on Linux, FSEvents on macOS,
ReadDirectoryChangesW on Windows, polling where none works) and turns the batches it reports
into ``notifications/resources/updated`` for subscribed files (written, replaced or deleted,
by a tool or by any other program) and ``notifications/resources/list_changed`` when files
appear or disappear. The batch window is short (``STEP_MS`` of quiet, at most ``DEBOUNCE_MS``),
so a change is announced well within a second.

Why ``watchfiles`` rather than polling ``stat`` of the subscribed files: list changes need the
whole tree watched, which polling can only do by walking it again and again; the kernel's
notification interface costs nothing while the disk is quiet. It is imported only when the
first subscriber arrives, so cold start does not pay for it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from .resources import location_uri, uri_path
from .root import FsError, Location, _under

if TYPE_CHECKING:
    from mcp_ref import Server

    from .root import Sandbox

log = logging.getLogger("mcp_ref_fs.watch")

DEBOUNCE_MS = 500
STEP_MS = 50


class Watcher:
    """Starts a watch on the first subscriber and stops it after the last one leaves."""

    def __init__(self, server: Server, sandbox: Sandbox) -> None:
        self.server = server
        self.sandbox = sandbox
        self._subscribed: dict[str, list[str]] = {}  # canonical URI -> the URIs clients sent
        self._lists = False
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def update(self, watched: Any) -> None:
        """``Server.on_watch`` hook: adopt the new set; start or stop the watch to match."""
        subscribed: dict[str, list[str]] = {}
        for uri in watched.resource_uris:
            canonical = self._canonical(uri)
            if canonical is not None:
                subscribed.setdefault(canonical, []).append(uri)
        self._subscribed = subscribed
        self._lists = "resources" in watched.lists
        wanted = bool(subscribed) or self._lists
        if wanted and not self.running:
            self._stop = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(self._stop))
        elif not wanted and self.running:
            assert self._stop is not None and self._task is not None
            self._stop.set()
            self._task.cancel()
            self._task = None

    def _canonical(self, uri: str) -> str | None:
        """One spelling per file, so ``%7E`` and ``~`` or the two root spellings match."""
        try:
            return location_uri(self.sandbox.locate(uri_path(uri)))
        except (ValueError, FsError):
            return None

    def _uri_of(self, real_path: str) -> str | None:
        for root in self.sandbox.roots:
            parts = _under(real_path, root.real)
            if parts is not None:
                return location_uri(Location(root, parts))
        return None

    async def _run(self, stop: asyncio.Event) -> None:
        try:
            import watchfiles
        except ImportError:  # pragma: no cover - a declared dependency
            log.error("watchfiles is not installed; subscriptions will not see changes")
            return
        paths = [root.real for root in self.sandbox.roots]
        try:
            async for changes in watchfiles.awatch(*paths, stop_event=stop, debounce=DEBOUNCE_MS, step=STEP_MS,
                                                   recursive=True, ignore_permission_denied=True):
                self._announce(changes)
        except asyncio.CancelledError:
            raise
        except Exception:  # a watch that dies must not take the server with it
            log.exception("file watching stopped")

    def _announce(self, changes: set[tuple[Any, str]]) -> None:
        list_changed = False
        updated: set[str] = set()
        for change, path in changes:
            if change.name in ("added", "deleted"):
                list_changed = True
            uri = self._uri_of(path)
            if uri is not None and uri in self._subscribed:
                updated.update(self._subscribed[uri])
        for uri in sorted(updated):
            self.server.notify_resource_updated(uri)
        if list_changed and self._lists:
            self.server.notify_list_changed("resources")
