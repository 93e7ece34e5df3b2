"""The output budget: bytes of large answers being made or waiting to leave, per connection.

Why: the transport stops *starting* requests while output piles up for a client that does not
read (``stdio.WRITE_HIGH_WATER``), but requests that started before any output existed all run
to the end: forty calls that each read a 32 MiB file were all under way at once, and each built
a 43 MiB answer, whether or not the client would ever read it. So a handler that is about to make
a large answer first reserves its estimated size with ``await ctx.reserve_output(nbytes)``
(:meth:`mcp_ref.RequestContext.reserve_output`): it waits while other reserved answers hold the
budget, and its reservation lasts until the line carrying its answer has left the process (the
transport says so: ``stdout._Output.when_written``), or until the request ends without an answer
(cancelled, or refused). Memory held by large answers is then bounded by the budget (plus the one
being built), whatever the client sends or fails to read, and every request is still answered
once the client reads.

Rules: a reservation is granted when it fits under ``limit`` beside those held, or when nothing
is held (so one answer larger than the whole budget still goes, alone); waiters are served in
arrival order, so a large answer is never overtaken forever by small ones; a request that holds a
reservation already gets its further ones at once (``now=True``: waiting behind others that wait
for its own bytes would never end). Waiting is cancel-safe. The budget is accounting only: nothing is allocated, and a handler that reserves
too little is not stopped (the estimate is its own).
"""

from __future__ import annotations

import asyncio
from collections import deque

# 64 MiB: one answer for a file at mcp-ref-fs's default media limit (32 MiB, 43 MiB as base64)
# at a time, or many small ones; a reading client keeps it flowing.
DEFAULT_MAX_RESERVED_OUTPUT_BYTES = 64 * 1024 * 1024


class OutputBudget:
    """Reserved bytes of answers in flight on one connection, at most ``limit`` (see the module)."""

    def __init__(self, limit: int = DEFAULT_MAX_RESERVED_OUTPUT_BYTES) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise ValueError(f"the output budget must be a positive number of bytes, not {limit!r}")
        self.limit = limit
        self.reserved = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    @property
    def waiting(self) -> int:
        """Reservations waiting for room."""
        return sum(1 for _n, future in self._waiters if not future.done())

    async def acquire(self, nbytes: int, *, now: bool = False) -> None:
        """Wait until ``nbytes`` fit, then hold them (until :meth:`release`); with ``now``, hold
        them at once, over the limit if need be."""
        if now or not self._waiters and (self.reserved == 0 or self.reserved + nbytes <= self.limit):
            self.reserved += nbytes
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((nbytes, future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release(nbytes)  # granted just as the waiter was cancelled: give it back
            else:
                future.cancel()
                self._wake()  # a large waiter leaving may let smaller ones behind it in
            raise

    def release(self, nbytes: int) -> None:
        """Give back ``nbytes`` held; the next waiters that now fit are granted, in order."""
        self.reserved -= nbytes
        self._wake()

    def _wake(self) -> None:
        waiters = self._waiters
        while waiters:
            nbytes, future = waiters[0]
            if future.done():  # cancelled
                waiters.popleft()
                continue
            if self.reserved and self.reserved + nbytes > self.limit:
                return
            waiters.popleft()
            self.reserved += nbytes
            future.set_result(None)
