"""The dispatcher: one request in, the right handler run, its answer (or error) out.

Spec: basic/index (requests, responses, errors), basic/versioning (eras), basic/patterns/mrtr,
server/utilities/caching.

Theory of operation
-------------------
The session (``mcp_ref.core.session``) starts one asyncio task per request and awaits ``answer`` in
it. ``answer`` goes through a few named steps, top to bottom in this file:

1. The era (at the top of ``answer``). Modern ``_meta`` always means 2026-07-28; ``initialize`` without it
   starts the legacy era, and after that requests without modern ``_meta`` are legacy.
2. ``_run``: the method in that era's table (``MODERN_METHODS``, ``LEGACY_METHODS``: -32601 if
   absent, or if its feature is not offered), the context (``context.modern_context`` from this
   request's ``_meta``, or ``legacy.legacy_context`` from the handshake), the handler within the
   concurrency bound (after any rate limit's pacing; the control lane and subscriptions take no
   slot), and the result's shape: ``complete`` (modern: ``resultType``, ``serverInfo``, caching
   hints) or ``legacy.to_legacy_result`` (the negotiated version's shape).
3. ``InputRequired``: an interim result (``input_required_result``), or for a legacy client the
   questions asked with server-to-client requests (``legacyinput.ask_client``) and the handler run
   again with the answers.

Two features hook in from their own modules: a ``tools/call`` of a tool registered with
``task=`` may become a task (``tasks.call_maybe_as_task``), and legacy elicitation
(``legacyinput.ask_client``).

Exceptions become wire errors in exactly one place (``error_for``), ``SystemExit``,
``KeyboardInterrupt`` and ``GeneratorExit`` from a handler included: they end that request with
an error, never the server. Only the client's ``notifications/cancelled`` (or shutdown) silences
a request: a ``CancelledError`` the handler raised on its own (an inner task it awaited was
cancelled) is answered with an error too.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..features import discover, legacy, legacyinput, resources, subscriptions, tasks, tools
from ..features.caching import CACHEABLE_METHODS
from .context import RequestContext, modern_context
from .control import CONTROL_LANE
from .errors import (
    TOO_MANY_DIGITS,
    InternalError,
    LegacyResourceNotFound,
    MethodNotFound,
    ProtocolError,
    ResourceNotFound,
    ToolError,
    UnsupportedProtocolVersion,
    clip,
    too_many_digits,
)
from .meta import CLIENT_CAPABILITIES, PROTOCOL_VERSION, SERVER_INFO
from ..features.mrtr import MRTR_METHODS, InputRequired, check_client_can_answer, check_input_request
from .versions import MODERN_VERSIONS

if TYPE_CHECKING:
    from ..server import Server
    from .session import InFlight, Session
    from .wire import Request

log = logging.getLogger("mcp_ref")

Handler = Callable[["Server", RequestContext, dict[str, Any]], Awaitable[dict[str, Any]]]


def _imported_on_first_call(module: str, name: str) -> Handler:
    """The handler ``name`` of the feature module ``mcp_ref.<module>``, imported when first called:
    prompts and completion cost ~1 ms of start-up that a server offering neither never needs (one
    that registers a prompt has imported them by then anyway)."""

    async def handler(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        from importlib import import_module

        function: Handler = getattr(import_module(f".{module}", __package__), name)
        return await function(server, ctx, params)

    handler.__qualname__ = f"{module}.{name}"
    return handler


# method -> (handler, the capability the server must offer for the method to exist)
MODERN_METHODS: dict[str, tuple[Handler, str | None]] = {
    "server/discover": (discover.discover, None),
    "tools/list": (tools.list_tools, "tools"),
    "tools/call": (tools.call_tool, "tools"),
    "resources/list": (resources.list_resources, "resources"),
    "resources/templates/list": (resources.list_resource_templates, "resources"),
    "resources/read": (resources.read_resource, "resources"),
    "prompts/list": (_imported_on_first_call(".features.prompts", "list_prompts"), "prompts"),
    "prompts/get": (_imported_on_first_call(".features.prompts", "get_prompt"), "prompts"),
    "completion/complete": (_imported_on_first_call(".features.completion", "complete"), "completions"),
    "subscriptions/listen": (subscriptions.listen, None),
    # The tasks extension (io.modelcontextprotocol/tasks); -32601 when no tool supports tasks.
    "tasks/get": (tasks.get_task, None),
    "tasks/update": (tasks.update_task, None),
    "tasks/cancel": (tasks.cancel_task, None),
}

LEGACY_METHODS: dict[str, tuple[Handler, str | None]] = {
    "initialize": (legacy.initialize, None),
    "ping": (legacy.ping, None),
    "logging/setLevel": (legacy.set_level, "logging"),
    "resources/subscribe": (legacy.subscribe, "resources.subscribe"),
    "resources/unsubscribe": (legacy.unsubscribe, "resources.subscribe"),
    **{m: route for m, route in MODERN_METHODS.items() if m not in ("server/discover", "subscriptions/listen") and not m.startswith("tasks/")},
}


def has_modern_meta(params: dict[str, Any]) -> bool:
    """Does this request identify itself as modern? (It names a protocol version or capabilities in ``_meta``.)"""
    meta = params.get("_meta")
    return isinstance(meta, dict) and (PROTOCOL_VERSION in meta or CLIENT_CAPABILITIES in meta)


async def answer(session: Session, request: Request, entry: InFlight) -> dict[str, Any] | ProtocolError:
    """The answer to one request: its result, or the error that replaces it (see the module docstring)."""
    # The era of this request (basic/versioning#backward-compatibility...). Modern ``_meta`` (a
    # protocol version or client capabilities: has_modern_meta, inline) always means 2026-07-28.
    # Without it, ``initialize`` and ``ping`` are legacy, and so is everything once an
    # ``initialize`` was answered on this connection; anything else is treated as a malformed modern request (and so
    # answered -32602). A modern-only server has no legacy era at all.
    server, meta = session.server, request.params.get("_meta")
    modern = server.modern_only or isinstance(meta, dict) and (PROTOCOL_VERSION in meta or CLIENT_CAPABILITIES in meta) \
        or not (request.method in ("initialize", "ping") or session.legacy.active)
    rounds = None if modern else legacyinput.LegacyRounds()  # only the legacy era asks its client across rounds
    while True:
        try:
            return await _run(session, request, entry, modern, rounds)
        except InputRequired as needed:
            try:
                if rounds is None:
                    return input_required_result(server, request, entry, needed, session.reader.max_line_bytes)
                answered = await legacyinput.ask_client(session, request, entry, needed, rounds)
                if answered is None:
                    continue  # the client answered: run the handler again
                return answered
            except Exception as exc:
                return error_for(exc, modern, request.method)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if entry.cancelled or (task is not None and task.cancelling() > 0):
                raise  # the client's cancellation (or shutdown's): no response
            # Raised inside the handler (it awaited a task that was cancelled): only the client may
            # silence a request, so this one is answered like any other failure.
            log.error("handler for %s (id %r) was interrupted by a cancellation the client did not ask for", request.method, clip(request.id))
            return InternalError(f"Internal error while handling {request.method}")
        except (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
            # SystemExit (argparse, sys.exit) and KeyboardInterrupt from a handler end that request,
            # never the server: the other requests in flight are still answered.
            return error_for(exc, modern, request.method)


def route(server: Server, method: str, params: dict[str, Any], modern: bool) -> Handler:
    """The handler for ``method`` in this era; -32601 if there is none, or its feature is not offered."""
    found = (MODERN_METHODS if modern else LEGACY_METHODS).get(method)
    if found is None:
        if modern and method == "initialize" and not has_modern_meta(params):
            # A modern-only server: name our versions so a legacy user sees why (basic/versioning).
            requested = params.get("protocolVersion")
            raise UnsupportedProtocolVersion(
                requested if isinstance(requested, str) else "",  # clipped by the error
                list(MODERN_VERSIONS),
                f"This server speaks only MCP {', '.join(MODERN_VERSIONS)} (no initialize handshake); "
                "upgrade the client to a version that sends per-request _meta",
            )
        raise MethodNotFound(f"Method not found: {clip(method)}", {"method": clip(method)})
    handler, needed = found
    if needed is not None and needed not in server.offered[modern]:
        raise MethodNotFound(f"Method not found: {method} (this server does not offer {needed})", {"method": method})
    return handler


async def _run(session: Session, request: Request, entry: InFlight, modern: bool, rounds: legacyinput.LegacyRounds | None) -> dict[str, Any]:
    """Route, build the context, run the handler (within the concurrency bound), shape the result."""
    server, method, params = session.server, request.method, request.params
    handler = route(server, method, params, modern)
    entry.finished = False  # (a legacy request runs again after its client answered)
    if modern:
        context = modern_context(request.id, method, params, server, entry)
    else:
        context = legacy.legacy_context(session, request, entry, rounds)
    limit = server.rate_limits.get(method)
    try:
        if limit is not None and (delay := limit.reserve()):
            await asyncio.sleep(delay)  # paced before it takes a slot
        if method in CONTROL_LANE or method == "subscriptions/listen":
            # The control lane does no user work, and a subscription is open for as long as it
            # lives: neither holds (nor waits for) a concurrency slot.
            result = await handler(server, context, params)
        elif method == "tools/call" and isinstance(name := params.get("name"), str) and name in server.task_tools \
                and tasks.may_become_task(session, request, context, modern):
            result = await tasks.call_maybe_as_task(session, handler, request, context, complete, error_for)
        else:
            async with session.slots:
                result = await handler(server, context, params)
    finally:
        entry.finished = True  # no progress or log notification may follow the response
    if modern:
        return complete(server, method, result)
    return legacy.shape_result(session, method, result)


def complete(server: Server, method: str, result: dict[str, Any]) -> dict[str, Any]:
    """A modern complete result: ``resultType``, ``serverInfo`` and, where cacheable, caching hints."""
    result.setdefault("resultType", "complete")
    meta = result.get("_meta")
    result["_meta"] = {SERVER_INFO: server.info, **meta} if meta else {SERVER_INFO: server.info}
    if method in CACHEABLE_METHODS and "ttlMs" not in result:
        server.cache_hint(method).apply(result)
    return result


def check_input_required(method: str, needed: InputRequired) -> None:
    """What both eras check of a handler's ``InputRequired`` before anything is sent (-32603)."""
    if method not in MRTR_METHODS:
        log.error("a %s handler asked for client input, which only tools/call, prompts/get and resources/read may do", method)
        raise InternalError(f"Internal error: {method} cannot ask the client for input")
    for key, input_request in needed.requests.items():
        try:
            check_input_request(input_request)
        except ValueError as exc:
            log.error("a %s handler built a malformed input request %r: %s", method, key, exc)
            raise InternalError(f"Internal error: {method} built a malformed input request") from None


def input_required_result(server: Server, request: Request, entry: InFlight, needed: InputRequired, max_line_bytes: int) -> dict[str, Any]:
    """Turn a handler's ``InputRequired`` into an ``InputRequiredResult`` (or the error that replaces
    it): a ``requestState`` the client could not send back within ``max_line_bytes`` is never issued."""
    method = request.method
    check_input_required(method, needed)
    assert entry.context is not None
    check_client_can_answer(needed.requests, entry.context.client_capabilities)
    result: dict[str, Any] = {"resultType": "input_required"}
    if needed.requests:
        result["inputRequests"] = needed.requests
    # Answers asked for and accepted so far ride along, so later rounds never ask for them
    # again; keys nobody asked for are not carried.
    result["requestState"] = server.sealer.seal(method, request.params, needed.state, entry.context.answered, max_line_bytes=max_line_bytes)
    result["_meta"] = {SERVER_INFO: server.info}
    return result


def error_for(exc: BaseException, modern: bool, method: str = "") -> ProtocolError:
    """The wire error for an exception a request raised: the one place where that is decided."""
    if isinstance(exc, ProtocolError):
        if not modern and isinstance(exc, ResourceNotFound):
            return LegacyResourceNotFound(exc.message, exc.data)
        return exc
    if isinstance(exc, ToolError):
        return InternalError(str(exc))
    if too_many_digits(exc):
        log.error("handler for %s failed: %s", method, exc)
        return InternalError(f"Internal error while handling {method}: {TOO_MANY_DIGITS}")
    log.error("handler for %s failed", method, exc_info=exc)
    return InternalError(f"Internal error while handling {method}")


def __getattr__(name: str) -> Any:
    # The names of the time before ``mcp_ref.core.session`` (an in-memory test harness may use them).
    if name == "Dispatcher":
        from .session import Session

        return Session
    if name == "_key":
        from .wire import request_key

        return request_key
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
