"""Server-to-client requests, for initialize-era clients only.

Spec: 2025-11-25 client/elicitation, client/sampling, client/roots, basic/lifecycle#timeouts,
basic/utilities/cancellation; 2026-07-28 basic/patterns/mrtr (the modern era sends none).

Theory of operation
-------------------
A 2026-07-28 client gets input requests inside an ``InputRequiredResult`` and retries; the server
never sends it a request. An initialize-era client cannot do that: it expects the server to send
``elicitation/create``, ``sampling/createMessage`` or ``roots/list`` itself and answers each with a
JSON-RPC response. When a legacy request's handler raises ``InputRequired``, the dispatcher asks
this module to send the era's request(s) (``legacy_wire_request`` shapes them for the negotiated
version), waits for the answers, and runs the handler again with them (see ``dispatcher``).

* **Ids.** Ours are strings ``"mcp-ref-srv-<n>"``; client requests have ids of their own, and a
  client response is matched only against requests we sent and still wait for, so the two id
  spaces never meet.
* **Correlation.** ``receive`` resolves the one pending future the response names. A response
  naming an id we never sent, or one already answered, timed out or cancelled, is dropped
  and logged once (one warning each): nothing a client writes can become
  the answer to a question it was not asked.
* **Endings.** A client error response, no answer within the timeout, the outer request's
  cancellation, or the end of input (``close``): the wait ends with ``ClientRequestFailed``
  (or the cancellation), and the pending entry is always removed (``finally``). On a timeout or
  a cancellation the client is told with ``notifications/cancelled``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any, Callable

from ..core.errors import clip
from ..core.wire import CANCELLED, notification
from ..core.wire import request as request_message

log = logging.getLogger("mcp_ref")

ID_PREFIX = "mcp-ref-srv-"
DEFAULT_CLIENT_REQUEST_TIMEOUT_SECONDS = 300.0


class ClientRequestFailed(Exception):
    """A request we sent the client got no usable answer (error response, timeout, end of input)."""


class Outgoing:
    """Our requests to the client: id allocation, pending futures, correlation, timeouts."""

    def __init__(self, send: Callable[[dict[str, Any]], None], on_waiting: Callable[[], None] | None = None) -> None:
        self._send = send
        # Called once a request waits for the client: the session's budgets leave it out, so
        # held input may go on (the client's answer may be in it).
        self._on_waiting = on_waiting
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._closed: str | None = None
        self.waiting = 0  # how many of our requests await an answer (read by the session's budgets)

    async def request(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and return the client's result; ``ClientRequestFailed`` otherwise."""
        if self._closed is not None:
            raise ClientRequestFailed(f"{method} could not be sent: {self._closed}")
        request_id = f"{ID_PREFIX}{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self.waiting += 1
        try:
            self._send(request_message(request_id, method, params))
            if self._on_waiting is not None:
                self._on_waiting()
            try:
                return await asyncio.wait_for(future, timeout)
            except TimeoutError:
                self._cancel_at_client(request_id, "timed out")
                raise ClientRequestFailed(f"the client did not answer {method} within {timeout:g} s") from None
            except asyncio.CancelledError:
                if self._closed is None:
                    self._cancel_at_client(request_id, "the request that needed it was cancelled")
                raise
        finally:
            del self._pending[request_id]
            self.waiting -= 1

    def _cancel_at_client(self, request_id: str, reason: str) -> None:
        try:
            self._send(notification(CANCELLED, {"requestId": request_id, "reason": reason}))
        except Exception:  # pragma: no cover - the sink never raises; a lost stdout ends the session anyway
            log.debug("could not send notifications/cancelled for %s", request_id)

    def receive(self, request_id: Any, message: dict[str, Any]) -> None:
        """A JSON-RPC response from the client: resolve the request it answers, or drop it."""
        future = self._pending.get(request_id) if isinstance(request_id, str) else None
        if future is None or future.done():
            log.warning("ignoring a JSON-RPC response from the client with id %r: it answers no request of ours that is waiting", clip(request_id))
            return
        if "error" in message:
            error = message["error"]
            if isinstance(error, dict):
                detail = f"{clip(error.get('message'))} (code {clip(error.get('code'))})"
            else:
                detail = clip(error)
            future.set_exception(ClientRequestFailed(f"the client answered with an error: {detail}"))
            return
        result = message.get("result")
        if not isinstance(result, dict):
            future.set_exception(ClientRequestFailed("the client's answer is not a JSON object"))
            return
        future.set_result(result)

    def close(self, reason: str) -> None:
        """No answer can arrive any more (end of input, shutdown): fail every wait, send no more."""
        self._closed = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ClientRequestFailed(f"no answer can arrive: {reason}"))


# --- the era's request shapes --------------------------------------------------------------------------


def legacy_wire_request(input_request: dict[str, Any], version: str, elicitation_id: str) -> dict[str, Any]:
    """``input_request`` (an MRTR input request) as the params a ``version`` client expects."""
    params = dict(input_request.get("params") or {})
    if input_request["method"] == "elicitation/create":
        if params.get("mode", "form") == "url":
            params["elicitationId"] = elicitation_id
        elif version < "2025-11-25":
            params.pop("mode", None)  # 2025-06-18 knows form elicitation only, without a mode member
    return params


def unsupported_by_version(input_request: dict[str, Any], version: str) -> str | None:
    """Why a client speaking ``version`` cannot receive ``input_request`` at all, or None."""
    method = input_request["method"]
    params = input_request.get("params") or {}
    if method == "elicitation/create":
        if version < "2025-06-18":
            return f"elicitation (MCP {version} has no elicitation/create)"
        if params.get("mode", "form") == "url" and version < "2025-11-25":
            return f"elicitation.url (URL-mode elicitation arrived in MCP 2025-11-25; this client speaks {version})"
    if method == "sampling/createMessage" and version < "2025-11-25" and (params.get("tools") or "toolChoice" in params):
        return f"sampling.tools (tool use in sampling arrived in MCP 2025-11-25; this client speaks {version})"
    return None
