"""An in-memory harness: a real ``Dispatcher`` driven through the real ``WireReader``, no process.

The stdio transport is a thin shell around two sans-I/O pieces, ``wire.WireReader`` (bytes in,
events out) and ``dispatcher.Dispatcher`` (events in, lines out to a ``MessageSink``). This module
wires those two pieces together inside the test's own event loop, so protocol features can be
tested in milliseconds while framing and encoding are still exercised on every message:

* the test writes JSON-RPC messages (or raw bytes) -> ``WireReader.feed`` -> ``Dispatcher.handle``;
* the dispatcher writes lines to a ``MemorySink`` -> each line is checked to be one compact JSON
  object on one line, decoded, and validated against the official schema of its era
  (``schema_check.check_modern`` / ``check_legacy``), using the method of the request a response
  answers.

Typical use::

    async with serve(server) as client:
        result = await client.result("tools/list")
        error = await client.error("tools/call", {"name": "nope"})

A schema violation is never swallowed: it is raised when the test awaits that message, and
again when the harness closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
from typing import Any, AsyncIterator

from mcp_ref.core.dispatcher import Dispatcher
from mcp_ref.core.meta import carries_modern_meta
from mcp_ref.server import Server
from mcp_ref.core.dispatcher import _key as request_key
from mcp_ref.core.wire import Request, WireReader

from .schema_check import check_legacy, check_modern
from .wire import OMIT
from .wire import modern_meta as wire_meta

DEFAULT_TIMEOUT = 2.0

modern_meta = functools.partial(wire_meta, client_info={"name": "memory-test-client", "version": "0.0.1"})
"""``tests.wire.modern_meta`` naming the in-memory client (``client_info``): a valid 2026-07-28
request ``_meta``, with the same overrides (``OMIT`` leaves a key out)."""


class MemorySink:
    """A ``MessageSink`` that keeps every line and wakes waiters when one arrives."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.drains = 0
        self._changed = asyncio.Event()

    def write(self, line: bytes) -> None:
        self.lines.append(bytes(line))
        self._changed.set()

    async def drain(self) -> None:
        self.drains += 1
        await asyncio.sleep(0)

    async def wait_for_change(self) -> None:
        self._changed.clear()
        await self._changed.wait()


class MemoryClient:
    """Drives a ``Dispatcher`` for ``server``. Build it with :func:`serve` inside a running loop."""

    def __init__(self, server: Server, *, max_concurrency: int = 64, max_line_bytes: int | None = None) -> None:
        self.server = server
        self.sink = MemorySink()
        self.dispatcher = Dispatcher(server, self.sink, max_concurrency=max_concurrency)
        self.reader = WireReader(max_line_bytes) if max_line_bytes is not None else WireReader()
        self.messages: list[dict[str, Any]] = []  # every decoded message, in order
        self.violations: list[str] = []
        self._decoded = 0
        self._ids = itertools.count(1)
        # (type(id), id) -> (method, era) of requests as the dispatcher received them.
        self._requests: dict[tuple[type, Any], tuple[str, str]] = {}
        self._problems: dict[int, str] = {}  # index in self.messages -> violation text

    # --- input --------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Give raw bytes to the wire reader and every completed event to the dispatcher."""
        self.reader.feed(data)
        for event in self.reader.events():
            if isinstance(event, Request):
                self._remember(event)
            self.dispatcher.handle(event)

    def _remember(self, request: Request) -> None:
        key = request_key(request.id)
        if key in self.dispatcher._in_flight:
            return  # a duplicate in-flight id: its answer (-32600) needs no method
        self.collect()  # earlier lines are validated against the earlier request with this id
        self._requests[key] = (request.method, self._era_of(request.method, request.params))

    def send(self, message: Any) -> None:
        """Encode one JSON value as a line and feed it."""
        self.feed(json.dumps(message).encode() + b"\n")

    def request(self, method: str, params: dict[str, Any] | None = None, *, id: Any = None, meta: Any = None) -> Any:
        """Send a request; ``_meta`` is ``modern_meta()`` unless ``meta`` is given (``OMIT``: none). Returns its id."""
        request_id = next(self._ids) if id is None else id
        body = dict(params or {})
        if meta is None:
            body.setdefault("_meta", modern_meta())
        elif meta is not OMIT:
            body["_meta"] = meta
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": body})
        return request_id

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def cancel(self, request_id: Any, reason: str | None = None) -> None:
        params: dict[str, Any] = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        self.notify("notifications/cancelled", params)

    def _era_of(self, method: str, params: dict[str, Any]) -> str:
        """The era the dispatcher serves this request in (basic/versioning; see dispatcher docstring)."""
        if carries_modern_meta(params) or self.server.modern_only:
            return "modern"
        if method in ("initialize", "ping") or self.dispatcher.legacy.active:
            return "legacy"
        return "modern"

    # --- output -------------------------------------------------------------------------------

    def collect(self) -> list[dict[str, Any]]:
        """Decode and validate every line written since the last call; returns the new messages."""
        new: list[dict[str, Any]] = []
        while self._decoded < len(self.sink.lines):
            line = self.sink.lines[self._decoded]
            self._decoded += 1
            message = self._decode(line)
            index = len(self.messages)
            self.messages.append(message)
            new.append(message)
            problem = self._validate(message)
            if problem:
                self._problems[index] = problem
                self.violations.append(problem)
        return new

    def _decode(self, line: bytes) -> dict[str, Any]:
        assert line.endswith(b"\n"), f"line without its newline: {line[:200]!r}"
        body = line[:-1]
        assert b"\n" not in body and b"\r" not in body, f"embedded newline in {body[:200]!r}"
        message = json.loads(body.decode("utf-8"))
        assert isinstance(message, dict), f"not a JSON object: {body[:200]!r}"
        return message

    def _validate(self, message: dict[str, Any]) -> str | None:
        if "method" in message:
            era = "legacy" if self.dispatcher.legacy.active and not self._modern_notification(message) else "modern"
            method = None
        else:
            request_id = message.get("id")
            method, era = self._requests.get(request_key(request_id), (None, "modern"))
        try:
            (check_modern if era == "modern" else check_legacy)(message, method)
        except AssertionError as exc:
            return str(exc)
        return None

    @staticmethod
    def _modern_notification(message: dict[str, Any]) -> bool:
        meta = (message.get("params") or {}).get("_meta") or {}
        return "io.modelcontextprotocol/subscriptionId" in meta

    def _raise_if_invalid(self, message: dict[str, Any]) -> None:
        for index, problem in self._problems.items():
            if self.messages[index] is message:
                raise AssertionError(f"schema violation: {problem}")

    def responses(self, request_id: Any) -> list[dict[str, Any]]:
        """Every response collected so far for ``request_id`` (1 and "1" are different ids)."""
        self.collect()
        return [
            m for m in self.messages
            if "method" not in m and "id" in m and type(m["id"]) is type(request_id) and m["id"] == request_id
        ]

    def notifications(self, method: str | None = None) -> list[dict[str, Any]]:
        """Notifications collected so far, optionally only those of ``method``."""
        self.collect()
        return [m for m in self.messages if "method" in m and (method is None or m["method"] == method)]

    async def response(self, request_id: Any, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """Wait (at most ``timeout`` s) for the response to ``request_id``; checks it against the schema."""

        async def wait() -> dict[str, Any]:
            while True:
                found = self.responses(request_id)
                if found:
                    return found[0]
                await self.sink.wait_for_change()

        try:
            message = await asyncio.wait_for(wait(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"no response to request {request_id!r} within {timeout} s") from None
        self._raise_if_invalid(message)
        return message

    async def wait_for(self, predicate: Any, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The first collected message satisfying ``predicate``, waiting at most ``timeout`` s."""

        async def wait() -> dict[str, Any]:
            while True:
                self.collect()
                for message in self.messages:
                    if predicate(message):
                        return message
                await self.sink.wait_for_change()

        message = await asyncio.wait_for(wait(), timeout)
        self._raise_if_invalid(message)
        return message

    async def started(self, request_id: Any, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Until the request's handler runs (its task has built the context and gone on to the
        handler, up to the handler's first ``await``)."""
        await until(lambda: getattr(self.dispatcher._in_flight.get(request_key(request_id)), "context", None) is not None, timeout)

    async def call(self, method: str, params: dict[str, Any] | None = None, *, meta: Any = None, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """Send a request and return its whole response message."""
        return await self.response(self.request(method, params, meta=meta), timeout)

    async def result(self, method: str, params: dict[str, Any] | None = None, *, meta: Any = None) -> dict[str, Any]:
        """Send a request and return its ``result``; fails if it was answered with an error."""
        response = await self.call(method, params, meta=meta)
        assert "result" in response, f"{method} answered with an error: {response}"
        return response["result"]

    async def error(self, method: str, params: dict[str, Any] | None = None, *, meta: Any = None) -> dict[str, Any]:
        """Send a request and return its ``error`` object; fails if it was answered with a result."""
        response = await self.call(method, params, meta=meta)
        assert "error" in response, f"{method} answered with a result: {response}"
        return response["error"]

    async def settle(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait until no request is in flight, then let queued callbacks run."""
        await asyncio.wait_for(self.dispatcher.idle.wait(), timeout)
        for _ in range(5):
            await asyncio.sleep(0)
        self.collect()

    async def close(self, grace_seconds: float = 0.5) -> None:
        await self.dispatcher.shutdown(grace_seconds)
        self.server.close()
        self.collect()


def gated_server(name: str = "gated") -> tuple[Server, asyncio.Event]:
    """A server whose one tool, ``wait``, ends when the event is set."""
    server = Server(name, "1.0")
    release = asyncio.Event()

    @server.tool()
    async def wait(ctx: Any, args: dict[str, Any]) -> str:
        await release.wait()
        return "done"

    return server, release


async def until(condition: Any, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Let the loop run until ``condition()`` holds (at most ``timeout`` s): for a state of the
    dispatcher, the server or a handler that no message shows."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"condition not met within {timeout} s"
        await asyncio.sleep(0.001)  # the poll interval (a worker thread may need the GIL): the condition is the state


@contextlib.asynccontextmanager
async def serve(server: Server, *, max_concurrency: int = 64, max_line_bytes: int | None = None, check: bool = True) -> AsyncIterator[MemoryClient]:
    """A ``MemoryClient`` for ``server`` in the running loop; on exit, shuts the dispatcher down and,
    unless ``check`` is False, fails if any message the server wrote violated the schema."""
    client = MemoryClient(server, max_concurrency=max_concurrency, max_line_bytes=max_line_bytes)
    try:
        yield client
    finally:
        await client.close()
    if check and client.violations:
        raise AssertionError("schema violations:\n" + "\n".join(client.violations))
