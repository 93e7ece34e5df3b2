"""Rate limits: pacing requests of one method to a steady rate.

Spec: server/tools#security-considerations (servers rate limit tool invocations) and
server/utilities/completion (completion requests are rate limited). A ``RateLimit`` is a token
bucket that *paces* rather than refuses: a request over the limit waits for its turn (in arrival
order), so a client never sees an error it could not act on. Waiting requests hold no
concurrency slot, and the transport's backlog bound still caps how many can queue up.

It is opt-in (``Server(rate_limits={"tools/call": RateLimit(10, burst=20)})``): a stdio server
has exactly one client, the user's own host, which already mediates every tool call, so the
library does not slow anyone down by default.
"""

from __future__ import annotations

import asyncio
import time


class RateLimit:
    """At most ``burst`` requests at once, refilled at ``per_second`` requests per second."""

    def __init__(self, per_second: float, burst: int | None = None) -> None:
        if per_second <= 0:
            raise ValueError("per_second must be positive")
        self.per_second = per_second
        self.burst = burst if burst is not None else max(1, int(per_second))
        if self.burst < 1:
            raise ValueError("burst must be at least 1")
        self._tokens = float(self.burst)
        self._updated = time.monotonic()

    def reserve(self) -> float:
        """Take the next turn; the seconds to wait before it comes (0 when a token is free now)."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.per_second)
        self._updated = now
        self._tokens -= 1  # below zero: the turns already promised to earlier waiters
        return max(0.0, -self._tokens / self.per_second)

    async def acquire(self) -> None:
        """Wait for this request's turn. Cancel-safe: a cancelled waiter just gives up its turn's wait."""
        delay = self.reserve()
        if delay:
            await asyncio.sleep(delay)
