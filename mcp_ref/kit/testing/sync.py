"""``Client``: the synchronous face of ``AsyncClient``, on a private event loop."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Awaitable

from .replies import Pending, Subscription
from .client import AsyncClient


# --- the synchronous client -------------------------------------------------------------------------


class _SyncView:
    """Runs an async object's coroutine methods on the owning ``Client``'s loop."""

    def __init__(self, owner: Client, target: Any) -> None:
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if inspect.iscoroutinefunction(attribute):

            def run(*args: Any, **kwargs: Any) -> Any:
                self._owner._started_loop()  # before the coroutine exists: never one left un-awaited
                return self._owner._wrap(self._owner._run(attribute(*args, **kwargs)))

            run.__name__ = name
            run.__doc__ = attribute.__doc__
            return run
        return attribute

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)


class Client(_SyncView):
    """The synchronous ``AsyncClient``: the same constructor, attributes and methods, each method
    called without ``await`` (``with Client(server) as client: client.call_tool(...)``). It runs
    the client on a private event loop while a method runs, so it cannot be used inside a running
    event loop (use ``AsyncClient`` there). ``send_request`` returns a ``Pending`` and ``listen`` a
    ``Subscription`` whose methods are synchronous too.
    """

    def __init__(self, target: Any, **options: Any) -> None:
        super().__init__(self, AsyncClient(target, **options))
        object.__setattr__(self, "_loop", None)

    def _started_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("the client is not started: use `with Client(...) as client:` or call start()")
        loop: asyncio.AbstractEventLoop = self._loop
        return loop

    def _run(self, work: Awaitable[Any]) -> Any:
        return self._started_loop().run_until_complete(work)

    def _wrap(self, value: Any) -> Any:
        return _SyncView(self, value) if isinstance(value, (Pending, Subscription)) else value

    def start(self) -> None:
        """Start serving (or spawn the command) on a private event loop; legacy era: ``initialize``."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("Client cannot run inside a running event loop; use mcp_ref.kit.testing.AsyncClient")
        object.__setattr__(self, "_loop", asyncio.new_event_loop())
        self._run(self._target.start())

    def close(self, check: bool = True) -> None:
        """``AsyncClient.close``, then the private loop is closed."""
        loop = self._loop
        if loop is None:
            return
        try:
            self._run(self._target.close(check))
        finally:
            leftovers = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in leftovers:
                task.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.close()
            object.__setattr__(self, "_loop", None)

    def __enter__(self) -> Client:
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close(check=exc_info[0] is None)
