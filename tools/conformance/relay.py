"""One stdio server process, and the routing of what it writes back to HTTP requests.

The bridge is the stdio *client* of the child (basic/transports/stdio): one JSON-RPC message per
line on its stdin, one per line read from its stdout. Every HTTP request becomes a ``Route`` with a
fresh integer id, so concurrent HTTP clients that reuse ids cannot collide; the answer is mapped
back to the client's id. What the child writes is routed:

* a response, by id, to its route (then the route is done);
* ``notifications/progress``, by ``progressToken`` (rewritten only when two routes share one);
* a notification carrying ``_meta["io.modelcontextprotocol/subscriptionId"]``, to that
  ``subscriptions/listen`` route (the subscription id is the listen request's id, so it is mapped
  back like an id);
* ``notifications/message``, to the one in-flight route it can belong to (stdio has no
  correlation field for log messages);
* in the initialize era, a server-to-client request (sampling, elicitation, roots) and any other
  notification, to the one in-flight route if there is exactly one, else to the standalone GET
  stream; the client's answer comes back as a POSTed response, forwarded as it is.

Anything that cannot be routed is counted in ``stats`` (the referee cannot see stdio-side faults).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import IO, Any

LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
MAX_LINE = 64 * 1024 * 1024
_ids = itertools.count(1)


@dataclass(eq=False)
class Route:
    """One request in flight at the child, and the queue its HTTP answer is read from.

    The queue holds ``("message", msg)`` (a notification or server request for this stream),
    ``("final", msg)`` (the response, mapped back to the client's id) or ``("end", None)`` (the
    stream ends without a response: a cancelled listen, or a request the client cancelled)."""

    client_id: Any
    child_id: int
    method: str
    wants_log: bool = False
    listen: bool = False
    child_token: Any = None
    client_token: Any = None
    outbox: asyncio.Queue = field(default_factory=asyncio.Queue)


class Relay:
    """A child process and its routes. ``era`` is ``"modern"`` (2026-07-28) or ``"legacy"``."""

    def __init__(self, argv: list[str], *, era: str, stats: Counter, stderr: IO[bytes] | int | None = None,
                 restart: bool = False, verbose: bool = False) -> None:
        self.argv = argv
        self.era = era
        self.stats = stats
        self.stderr = stderr
        self.restart = restart
        self.verbose = verbose
        self.routes: dict[int, Route] = {}
        self.tokens: dict[Any, Route] = {}
        self.standalone: asyncio.Queue | None = None  # the legacy GET stream, when one is open
        self.backlog: deque = deque(maxlen=1000)  # legacy messages waiting for a GET stream
        self.process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task | None = None
        self._restarts: deque = deque()
        self._stopping = False
        self.dead = False

    # --- process -----------------------------------------------------------------------------

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=self.stderr, limit=MAX_LINE, env=child_environment())
        self._reader = asyncio.create_task(self._read(self.process))

    async def stop(self, timeout: float = 5.0) -> None:
        """Shut down per the stdio binding: close stdin, wait, then SIGTERM, then SIGKILL."""
        self._stopping = True
        process = self.process
        if process is None or process.returncode is not None:
            return
        try:
            process.stdin.close()
        except (ConnectionError, OSError):
            pass
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None and process.returncode is None:
                process.send_signal(sig)
            try:
                await asyncio.wait_for(process.wait(), timeout)
                break
            except TimeoutError:
                continue
        if self._reader:
            await asyncio.gather(self._reader, return_exceptions=True)

    def send(self, message: dict[str, Any]) -> bool:
        """Write one message as one line; ``False`` if the child cannot take it."""
        process = self.process
        if process is None or process.returncode is not None or process.stdin.is_closing():
            return False
        line = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        if self.verbose:
            print(f"bridge -> child: {line[:500]}", file=sys.stderr)
        process.stdin.write(line.encode() + b"\n")
        return True

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        while True:
            try:
                line = await process.stdout.readline()
            except ValueError:  # a line over MAX_LINE
                self.stats["stdout_line_too_long"] += 1
                continue
            if not line:
                break
            if self.verbose:
                print(f"child -> bridge: {line[:500]!r}", file=sys.stderr)
            try:
                message = json.loads(line)
            except ValueError:
                self.stats["stdout_not_json"] += 1
                continue
            if isinstance(message, dict):
                self._route(message)
            else:
                self.stats["stdout_not_an_object"] += 1
        await process.wait()
        self._exited(process.returncode)

    def _exited(self, code: int | None) -> None:
        failed = list(self.routes.values())
        self.routes.clear()
        self.tokens.clear()
        for route in failed:
            route.outbox.put_nowait(("final", {"jsonrpc": "2.0", "id": route.client_id, "error": {
                "code": -32603, "message": f"the stdio server exited (status {code}) before answering"}}))
        if self._stopping:
            return
        self.stats["child_crashes"] += 1
        now = time.monotonic()
        while self._restarts and now - self._restarts[0] > 60:
            self._restarts.popleft()
        if self.restart and len(self._restarts) < 5:
            self._restarts.append(now)
            asyncio.get_running_loop().create_task(self.start())
        else:
            self.dead = True

    # --- requests from HTTP ------------------------------------------------------------------

    def open(self, message: dict[str, Any], *, with_log: bool | None = None) -> Route | None:
        """Send a request under a fresh id; ``None`` if the child is gone."""
        child_id = next(_ids)
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) and isinstance(params.get("_meta"), dict) else {}
        wants_log = (LOG_LEVEL in meta) if with_log is None else with_log
        route = Route(message.get("id"), child_id, str(message.get("method")), wants_log=wants_log,
                      listen=message.get("method") == "subscriptions/listen")
        outgoing = {**message, "id": child_id}
        token = meta.get("progressToken")
        if token is not None:
            route.client_token = route.child_token = token
            if token in self.tokens:  # another route already uses it: give this one its own
                route.child_token = f"bridge-{child_id}"
                outgoing["params"] = {**params, "_meta": {**meta, "progressToken": route.child_token}}
            self.tokens[route.child_token] = route
        self.routes[child_id] = route
        if not self.send(outgoing):
            self._forget(route)
            return None
        self.stats["requests_forwarded"] += 1
        return route

    def cancel(self, route: Route, reason: str) -> None:
        """Stop a route: tell the child (``notifications/cancelled``) and drop what it still sends."""
        if self.routes.get(route.child_id) is route:
            self._forget(route)
            self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": route.child_id, "reason": reason}})

    def abandon(self, route: Route) -> None:
        """The client went away but did not cancel (initialize era): its answer is dropped."""
        route.outbox = asyncio.Queue()  # nobody reads it any more

    def find(self, client_id: Any) -> Route | None:
        for route in self.routes.values():
            if route.client_id == client_id and not route.listen:
                return route
        return None

    def _forget(self, route: Route) -> None:
        self.routes.pop(route.child_id, None)
        if route.child_token is not None and self.tokens.get(route.child_token) is route:
            del self.tokens[route.child_token]

    # --- what the child writes ---------------------------------------------------------------

    def _route(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            self._response(message)
        elif "id" in message:
            self._server_request(message)
        else:
            self._notification(message)

    def _response(self, message: dict[str, Any]) -> None:
        route = self.routes.get(message.get("id"))  # type: ignore[arg-type]
        if route is None:
            self.stats["responses_to_unknown_ids"] += 1
            return
        self._forget(route)
        route.outbox.put_nowait(("final", {**message, "id": route.client_id}))

    def _in_flight(self) -> list[Route]:
        return [route for route in self.routes.values() if not route.listen]

    def _server_request(self, message: dict[str, Any]) -> None:
        if self.era == "modern":
            # Forbidden at 2026-07-28 (MRTR replaces it): counted, and shown where a referee check
            # will fail for the server rather than silently dropped.
            self.stats["server_to_client_requests_modern"] += 1
        self._to_session(message)

    def _to_session(self, message: dict[str, Any]) -> None:
        """An unaddressed message: the one in-flight route, else the GET stream, else held."""
        in_flight = self._in_flight()
        if len(in_flight) == 1:
            in_flight[0].outbox.put_nowait(("message", message))
        elif self.standalone is not None:
            self.standalone.put_nowait(("message", message))
        elif in_flight:
            in_flight[0].outbox.put_nowait(("message", message))
        elif self.era == "legacy":
            self.backlog.append(message)
        else:
            self.stats["notifications_unroutable"] += 1

    def _notification(self, message: dict[str, Any]) -> None:
        method = message["method"]
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if method == "notifications/progress":
            route = self.tokens.get(params.get("progressToken"))
            if route is None:
                self.stats["progress_for_unknown_tokens"] += 1
                return
            route.outbox.put_nowait(("message", {**message, "params": {**params, "progressToken": route.client_token}}))
            return
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        if SUBSCRIPTION_ID in meta:
            route = self.routes.get(meta[SUBSCRIPTION_ID])
            if route is None or not route.listen:
                self.stats["notifications_for_unknown_subscriptions"] += 1
                return
            mapped = {**params, "_meta": {**meta, SUBSCRIPTION_ID: route.client_id}}
            route.outbox.put_nowait(("message", {**message, "params": mapped}))
            return
        if method == "notifications/cancelled":
            route = self.routes.get(params.get("requestId"))
            if route is not None:  # the server ends a stream (a listen) without a response
                self._forget(route)
                route.outbox.put_nowait(("end", None))
                return
        if method == "notifications/message":
            wanting = [route for route in self._in_flight() if route.wants_log]
            if len(wanting) == 1:
                wanting[0].outbox.put_nowait(("message", message))
            elif self.era == "legacy" and self.standalone is not None:
                self.standalone.put_nowait(("message", message))
            else:
                self.stats["log_messages_unroutable"] += 1
            return
        if self.era == "modern":
            self.stats["change_notifications_without_subscription"] += 1
            listens = [route for route in self.routes.values() if route.listen]
            if listens:
                listens[0].outbox.put_nowait(("message", message))
            return
        if self.standalone is not None:
            self.standalone.put_nowait(("message", message))
        else:
            self._to_session(message)


def child_environment() -> dict[str, str]:
    """The child's environment: the bridge's own, with Python output unbuffered."""
    return {**os.environ, "PYTHONUNBUFFERED": "1"}
