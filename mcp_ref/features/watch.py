"""Watch hooks: tell the server author what clients listen for, so the server watches only that.

A server that learns about changes by watching something (a directory, a database) should watch
only while someone listens, and only what they listen for. ``Server.on_watch(handler)`` registers
``handler(watched: WatchSet)``; the library calls it on the event loop whenever the set of watched
things changes:

* when a ``subscriptions/listen`` stream opens (after its acknowledgement is written) or ends
  (cancelled by the client, or closed at shutdown);
* when a legacy client subscribes to or unsubscribes from a URI, and when it first fetches a list
  the server announces changes of (legacy clients get those changes without asking, and a list
  the client has fetched is one it may need to refresh);
* with an empty ``WatchSet`` when serving stops, so nothing keeps watching after the last stream.

Calls are coalesced: a handler is never called with the set it saw last. A plain function is
called inline on the loop (keep it quick, or hand the work to a thread). A coroutine function runs
in a task the library owns, never concurrently with itself: if the set changes while it runs, it
is called once more afterwards with the newest set (intermediate sets are skipped). At shutdown it
gets ``WATCH_STOP_SECONDS`` to take in the empty set; then its task is cancelled. Exceptions are
logged to stderr (logger ``mcp_ref.watch``) and never affect a stream; the handler is still
called on the next change.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Callable

from ..layers.records import FrozenRecord

log = logging.getLogger("mcp_ref.watch")

# At shutdown, how long coroutine watch hooks get to take in the final empty set.
WATCH_STOP_SECONDS = 2.0


class WatchSet(FrozenRecord):
    """What clients currently listen for, limited to what the server honours.

    * ``resource_uris``: every URI in the ``resourceSubscriptions`` of an open listen stream, plus
      every URI a legacy client ``resources/subscribe``\\ d.
    * ``lists``: the lists (``"tools"``, ``"prompts"``, ``"resources"``) whose changes an open
      stream asked for, plus, while a legacy session is active, every announced list it fetched.

    Immutable; equal (and hashed) by its two fields (a ``FrozenRecord``).
    """

    __slots__ = ("resource_uris", "lists")

    resource_uris: frozenset[str]
    lists: frozenset[str]

    def __init__(self, resource_uris: frozenset[str] = frozenset(), lists: frozenset[str] = frozenset()) -> None:
        object.__setattr__(self, "resource_uris", resource_uris)
        object.__setattr__(self, "lists", lists)


class _Hook:
    def __init__(self, handler: Callable[[WatchSet], Any], is_async: bool) -> None:
        self.handler = handler
        self.is_async = is_async
        self.seen = WatchSet()  # coroutine hooks: the set of the latest call
        self.task: asyncio.Task[None] | None = None


class WatchHooks:
    """The registered hooks, the set they last heard about, and the tasks of coroutine hooks."""

    def __init__(self) -> None:
        self._hooks: list[_Hook] = []
        self._current = WatchSet()
        self._serving = False

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def add(self, handler: Callable[[WatchSet], Any]) -> None:
        self._hooks.append(_Hook(handler, inspect.iscoroutinefunction(handler)))

    def start(self) -> None:
        """Serving begins: nothing is watched yet."""
        self._current = WatchSet()
        self._serving = True

    def update(self, watched: WatchSet) -> None:
        """The set is now ``watched`` (event-loop thread): tell every hook, unless nothing changed."""
        if not self._serving or watched == self._current:
            return
        self._current = watched
        for hook in self._hooks:
            if hook.is_async:
                if hook.task is None or hook.task.done():
                    hook.task = asyncio.get_running_loop().create_task(self._drive(hook))
            else:
                try:
                    hook.handler(watched)
                except Exception:
                    log.exception("watch hook %s failed", _name(hook.handler))

    async def _drive(self, hook: _Hook) -> None:
        # One task per coroutine hook at a time: it catches up with the newest set, then ends.
        while hook.seen != self._current:
            target = self._current
            hook.seen = target
            try:
                await hook.handler(target)
            except Exception:
                log.exception("watch hook %s failed", _name(hook.handler))

    async def stop(self, timeout: float | None = None) -> None:
        """Serving ends: every hook hears the empty set; coroutine hooks get ``timeout`` s
        (default ``WATCH_STOP_SECONDS``), then are cancelled."""
        timeout = WATCH_STOP_SECONDS if timeout is None else timeout
        self.update(WatchSet())
        self._serving = False
        tasks = [hook.task for hook in self._hooks if hook.task is not None and not hook.task.done()]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        if pending:
            log.warning("cancelling %d watch hook(s) still running %.1f s after serving stopped", len(pending), timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


def _name(handler: Callable[..., Any]) -> str:
    return getattr(handler, "__qualname__", repr(handler))
