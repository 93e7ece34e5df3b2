"""What a test client call returns and raises: replies, pending calls, subscriptions, the errors."""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from .client import AsyncClient


# --- errors ---------------------------------------------------------------------------------------


class SchemaViolation(AssertionError):
    """A message the server wrote does not match the official MCP schema."""


class WireViolation(AssertionError):
    """A line the server wrote is not one compact JSON object ending in a newline (or the server sent what its era forbids)."""


class ServerExitError(AssertionError):
    """The spawned server exited with an unexpected status, or closed its output while a request waited."""


class RequestError(Exception):
    """The server answered a request with a JSON-RPC error (or a task failed with one)."""

    def __init__(self, method: str, error: dict[str, Any], reply: Reply | None = None) -> None:
        self.method = method
        self.error = error
        self.code: int | None = error.get("code")
        self.message: str = str(error.get("message", ""))
        self.data: Any = error.get("data")
        self.reply = reply
        super().__init__(f"{method} failed with {self.code}: {self.message}")


# --- what a call returns --------------------------------------------------------------------------


@dataclass
class Reply:
    """The answer to one call: the final ``result`` plus everything that led to it.

    ``rounds``: the interim results (``input_required``, a task handle) in the modern era, or
    the server's own requests in the legacy era, in order. ``notifications``: those received
    while the call was in flight. ``task``: the last ``tasks/get`` result when the call became
    a task (``polls`` has every one). ``error``: the JSON-RPC error, only for ``request(...,
    check=False)``. ``reply["key"]`` reads the result.
    """

    method: str
    result: dict[str, Any]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    task: dict[str, Any] | None = None
    polls: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None

    def __getitem__(self, key: str) -> Any:
        return self.result[key]

    def __contains__(self, key: object) -> bool:
        return key in self.result

    def get(self, key: str, default: Any = None) -> Any:
        return self.result.get(key, default)

    @property
    def progress(self) -> list[dict[str, Any]]:
        """The ``params`` of every ``notifications/progress`` for this call."""
        return [n.get("params", {}) for n in self.notifications if n.get("method") == "notifications/progress"]

    @property
    def content(self) -> list[dict[str, Any]]:
        return list(self.result.get("content", []))

    @property
    def text(self) -> str:
        """The text blocks of ``content`` joined with newlines."""
        return "\n".join(block["text"] for block in self.content if block.get("type") == "text")

    @property
    def structured_content(self) -> Any:
        return self.result.get("structuredContent")

    @property
    def is_error(self) -> bool:
        return self.result.get("isError") is True

    @property
    def data(self) -> list[str | bytes]:
        """``resources/read``: each contents item's ``text``, or its ``blob`` decoded to bytes."""
        return [item["text"] if "text" in item else base64.b64decode(item.get("blob", ""), validate=True) for item in self.result.get("contents", [])]


@dataclass(eq=False)
class Pending:
    """A request sent and not yet answered (``AsyncClient.send_request``)."""

    client: AsyncClient
    id: int
    method: str
    progress_token: str | int | None
    future: asyncio.Future[dict[str, Any]]
    notifications: list[dict[str, Any]] = field(default_factory=list)
    server_requests: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    async def response(self, timeout: float | None = None) -> dict[str, Any]:
        """The whole response message (result or error). Raises ``SchemaViolation``, ``TimeoutError``."""
        wait = self.client.timeout if timeout is None else timeout
        try:
            message = await asyncio.wait_for(asyncio.shield(self.future), wait)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no response to {self.method} (id {self.id}) within {wait} s") from None
        if self.problems:
            raise SchemaViolation("\n".join(self.problems))
        return message

    async def reply(self, timeout: float | None = None) -> Reply:
        """The answer as a ``Reply``; a JSON-RPC error raises ``RequestError``."""
        message = await self.response(timeout)
        reply = Reply(self.method, message.get("result", {}), list(self.server_requests), list(self.notifications))
        if "error" in message:
            raise RequestError(self.method, message["error"], reply)
        return reply


class Subscription:
    """An open ``subscriptions/listen`` stream: ``acknowledged`` is the filter the server honours."""

    def __init__(self, client: AsyncClient, pending: Pending) -> None:
        self.client = client
        self.pending = pending
        self.id = pending.id
        self.acknowledged: dict[str, Any] = {}
        self.notifications: list[dict[str, Any]] = []  # every notification tagged with this stream's id
        self._taken = 0
        self._changed = asyncio.Event()

    def received(self, message: dict[str, Any]) -> None:
        """A notification tagged with this stream's id arrived (the client reading the server's lines calls this)."""
        self.notifications.append(message)
        self._changed.set()

    @property
    def closed(self) -> bool:
        """Has the server ended the stream with its final response?"""
        return self.pending.future.done()

    async def next(self, method: str | None = None, timeout: float | None = None) -> dict[str, Any]:
        """The next notification on the stream not returned before (of ``method``, if given); waits for it."""
        wait = self.client.timeout if timeout is None else timeout

        async def find() -> dict[str, Any]:
            while True:
                for index in range(self._taken, len(self.notifications)):
                    message = self.notifications[index]
                    if method is None or message.get("method") == method:
                        self._taken = index + 1
                        return message
                self._changed.clear()
                await self._changed.wait()

        try:
            return await asyncio.wait_for(find(), wait)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no {method or 'notification'} on subscription {self.id} within {wait} s") from None

    async def cancel(self) -> None:
        """End the stream (``notifications/cancelled`` for its id)."""
        await self.client.cancel(self.pending)


