"""Asking an initialize-era client for input, the way its era does: server-to-client requests.

Spec: 2026-07-28 basic/patterns/mrtr (what a handler asks), 2025-11-25 client/elicitation,
client/sampling, client/roots (how a legacy client is asked).

Theory of operation
-------------------
A 2026-07-28 client answers a handler's ``InputRequired`` by retrying with ``inputResponses``. A
legacy client cannot: it is asked with requests of its own era instead (``outgoing``), and the
handler runs again with the validated answers as ``ctx.input_responses`` and its ``state`` as
``ctx.state`` (``LegacyRounds`` carries them from one run to the next), for at most
``LEGACY_MAX_ROUNDS`` rounds. What the client's version or declared capabilities cannot carry
ends a tool with an ``isError`` result that explains it (-32603 for a prompt or resource). The
dispatcher calls ``ask_client``; nothing else here is called from outside.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..core.errors import InternalError, ProtocolError, clip
from ..core.meta import client_has_capability
from .mrtr import InputRequired, required_capability, validate_input_response
from .outgoing import ClientRequestFailed, legacy_wire_request, unsupported_by_version
from ..core.versions import MODERN_VERSIONS

if TYPE_CHECKING:
    from ..core.context import RequestContext
    from ..core.session import InFlight, Session
    from ..core.wire import Request

log = logging.getLogger("mcp_ref")

# A legacy request asks the client at most this many times in a row before it is answered with an error.
LEGACY_MAX_ROUNDS = 16


class LegacyRounds:
    """What a legacy request's handler has been told so far, across the rounds of asking its client."""

    __slots__ = ("responses", "state", "count", "previous")

    def __init__(self) -> None:
        self.responses: dict[str, Any] = {}  # validated answers, by input request key
        self.state: Any = None  # the handler's state from its last InputRequired
        self.count = 0  # rounds of asking so far
        self.previous: RequestContext | None = None  # last round's context (its progress carries on)

    def carry_into(self, context: RequestContext) -> None:
        """A re-run's context gets the answers and state so far, and progress goes on increasing."""
        if self.count:
            context.input_responses = dict(self.responses)
            context.state = self.state
            if self.previous is not None:
                context.carry_progress_from(self.previous)
        self.previous = context


async def ask_client(session: Session, request: Request, entry: InFlight, needed: InputRequired, rounds: LegacyRounds) -> dict[str, Any] | None:
    """Ask an initialize-era client with server-to-client requests (``outgoing``).

    None when every answer arrived and was valid (``rounds`` holds them: run the handler
    again); otherwise the final result (a tool error) or an exception (-32603) saying why.
    """
    from ..core.dispatcher import check_input_required

    method = request.method
    check_input_required(method, needed)
    legacy = session.legacy
    version = legacy.version or ""
    missing = sorted(
        {
            unsupported_by_version(r, version) or required_capability(r)[0]
            for r in needed.requests.values()
            if unsupported_by_version(r, version) or not client_has_capability(legacy.client_capabilities, required_capability(r)[0])
        }
    )
    if missing:
        return _input_error(method, missing, version)
    if rounds.count >= LEGACY_MAX_ROUNDS:
        log.error("a %s handler asked its client for input %d times in a row; giving up", method, rounds.count)
        return _failure(method, f"it asked the client for input {rounds.count} times in a row without finishing")
    rounds.count += 1
    rounds.state = needed.state
    if not needed.requests:
        return None  # state only: the handler runs again with it
    try:
        await _ask(session, request, needed, rounds, version)
    except ClientRequestFailed as exc:
        log.warning("%s (id %r) could not get the client's input: %s", method, clip(request.id), exc)
        return _failure(method, f"the client's input could not be obtained: {exc}")
    return None


async def _ask(session: Session, request: Request, needed: InputRequired, rounds: LegacyRounds, version: str) -> None:
    """Send every question at once; store each valid answer in ``rounds`` (``ClientRequestFailed`` otherwise)."""
    import uuid  # here, not at start-up: only legacy elicitation needs it (with platform, ~2 ms)

    timeout = session.server.client_request_timeout_seconds
    outgoing = session.outgoing
    asks = {
        key: asyncio.ensure_future(
            outgoing.request(r["method"], legacy_wire_request(r, version, f"mcp-ref-elicitation-{uuid.uuid4().hex}"), timeout)
        )
        for key, r in needed.requests.items()
    }
    try:
        done, _ = await asyncio.wait(asks.values(), return_when=asyncio.FIRST_EXCEPTION)
        for task in asks.values():
            if task in done and (failure := task.exception()) is not None:
                raise failure
        for key, task in asks.items():
            try:
                rounds.responses[key] = validate_input_response(key, needed.requests[key], task.result())
            except ProtocolError as exc:
                raise ClientRequestFailed(f"the client's answer to {needed.requests[key]['method']} was not valid: {exc.message}") from None
    finally:
        for task in asks.values():
            if not task.done():
                task.cancel()
        await asyncio.gather(*asks.values(), return_exceptions=True)


def _failure(method: str, why: str) -> dict[str, Any]:
    from .tools import tool_error_result

    explanation = f"This {'tool' if method == 'tools/call' else method} did not finish: {why}"
    if method == "tools/call":
        return tool_error_result(explanation)
    raise InternalError(explanation)


def _input_error(method: str, wanted: list[str], version: str) -> dict[str, Any]:
    from .tools import tool_error_result

    explanation = (
        f"This {'tool' if method == 'tools/call' else method} needs input from the client "
        f"({', '.join(wanted)}), which this client (MCP {version}) did not declare "
        f"in initialize or cannot receive; declare the capability, or use an MCP {MODERN_VERSIONS[0]} "
        "client, or a tool that needs no interaction"
    )
    if method == "tools/call":
        return tool_error_result(explanation)
    raise InternalError(explanation)
