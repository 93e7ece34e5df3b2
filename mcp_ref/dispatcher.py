"""The dispatcher: one event in, the right handler run, one response (or none) out.

Spec: basic/index (requests, responses, notifications, errors), basic/versioning (eras),
basic/patterns/cancellation, basic/patterns/mrtr, server/utilities/caching.

Theory of operation
-------------------
The transport feeds events from ``wire.WireReader`` to ``Dispatcher.handle``, synchronously.

* A **bad message** is answered at once with its error. A **client response** goes to
  ``outgoing`` (the answer to a request we sent an initialize-era client; anything else is
  logged and dropped there). A **notification** is handled inline and never
  answered: ``notifications/cancelled`` cancels the named request, ``notifications/initialized``
  completes the legacy handshake, anything else is ignored. A malformed one (params not an
  object, a ``requestId`` or ``reason`` of the wrong type: ``notification_problem``) is logged
  and ignored: a notification has no id to answer.
* A **request** becomes an asyncio task, so requests run concurrently and responses go out as
  soon as each is ready, correlated by id rather than by order. A second request reusing an id
  still in flight is refused (-32600) and the first is unaffected. At most ``max_concurrency``
  handlers run at once; the rest wait their turn (the reader keeps reading, so a cancellation is
  never stuck behind busy handlers).
* The **control lane** (``mcp_ref.control``): requests that do no user work (``ping``,
  ``server/discover``, the list methods, ``tasks/*``, legacy ``initialize``) take no slot, so they
  never wait behind tool handlers; and ``may_overtake`` tells the transport which messages it
  may take out of input it holds back, ahead of the requests before them.

Each request then goes through a few named steps, top to bottom in this file:

1. ``_is_modern``: the era. Modern ``_meta`` always means 2026-07-28; ``initialize`` without it
   starts the legacy era, and after that requests without modern ``_meta`` are legacy.
2. ``_route``: the method in that era's table (-32601 if absent, or if its feature is not offered).
3. ``_modern_context`` / ``_legacy_context``: who the client is -- from this request's ``_meta``
   (validated: -32602, -32022) and any sealed MRTR state, or from the legacy handshake.
4. ``_run``: the handler, within the concurrency bound (after any rate limit's pacing).
5. ``_complete`` (modern: ``resultType``, ``serverInfo``, caching hints), ``legacy.to_legacy_result``
   (the negotiated version's shape), or ``_input_required`` (an interim result).

A legacy handler that raises ``InputRequired`` is served by ``_ask_legacy_client`` instead: the
input requests go to the client as server-to-client requests (``outgoing``), and the handler runs
again with the validated answers as ``ctx.input_responses`` and its ``state`` as ``ctx.state``,
for at most ``LEGACY_MAX_ROUNDS`` rounds; what the client's version or capabilities cannot carry
gets the tool error (or -32603) of ``_legacy_input_error``.

Exceptions become wire errors in exactly one place (``_error_for``), ``SystemExit``,
``KeyboardInterrupt`` and ``GeneratorExit`` from a handler included: they end that request with
an error, never the server. Only the client's ``notifications/cancelled`` (or shutdown) silences
a request: a ``CancelledError`` the handler raised on its own (an inner task it awaited was
cancelled) is answered with an error too. A cancelled request's id is free for reuse at once.

On shutdown (EOF or a signal), ``shutdown`` lets in-flight requests finish within a grace
period, answers what is left with -32603 ("the server is shutting down") and cancels it, closes
open subscriptions gracefully (each gets its final response), and tells the server's watch hooks
that nothing is watched any more.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol

from . import discover, legacy, resources, subscriptions, tasks, tools
from .caching import CACHEABLE_METHODS
from .context import RequestContext
from .control import CONTROL_LANE, CONTROL_LANE_LIMIT, OVERTAKING_NOTIFICATIONS, OVERTAKING_REQUESTS, cancelled_request, notification_problem
from .errors import (
    TOO_MANY_DIGITS,
    InternalError,
    InvalidRequest,
    LegacyResourceNotFound,
    MethodNotFound,
    ProtocolError,
    ResourceNotFound,
    ToolError,
    UnsupportedProtocolVersion,
    clip,
    too_many_digits,
)
from .meta import SERVER_INFO, carries_modern_meta, parse_progress_token, parse_request_meta
from .meta import client_has_capability
from .mrtr import MRTR_METHODS, InputRequired, check_client_can_answer, check_input_request, parse_input_responses, required_capability, validate_input_response
from .outgoing import ClientRequestFailed, Outgoing, legacy_wire_request, unsupported_by_version
from .outputbudget import DEFAULT_MAX_RESERVED_OUTPUT_BYTES, OutputBudget
from .versions import MODERN_VERSIONS
from .wire import (
    CANCELLED,
    BadMessage,
    ClientResponse,
    Event,
    MalformedNotification,
    Notification,
    Request,
    RequestId,
    encode_message,
    encode_message_parts,
    error_response,
    result_response,
)

if TYPE_CHECKING:
    from .server import Server

log = logging.getLogger("mcp_ref")

# The list a legacy client fetched with each list method: its changes are watched from then on.
LISTED_KIND = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resources"}

# At shutdown, how long cancelled handlers get to unwind (one that swallows its cancellation is left).
UNWIND_SECONDS = 2.0

# A legacy request asks the client at most this many times in a row before it is answered with an error.
LEGACY_MAX_ROUNDS = 16

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
    "prompts/list": (_imported_on_first_call("prompts", "list_prompts"), "prompts"),
    "prompts/get": (_imported_on_first_call("prompts", "get_prompt"), "prompts"),
    "completion/complete": (_imported_on_first_call("completion", "complete"), "completions"),
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


class MessageSink(Protocol):
    """Where encoded lines go: the transport's single writer."""

    def write(self, line: bytes) -> None:
        """Queue one line; never blocks, never splices with other lines.

        A sink may also offer ``write_parts(parts)``: one line given as consecutive buffers
        (``wire.encode_message_parts``), queued without joining them (``stdio._Output`` does);
        without it, the dispatcher joins them and calls ``write``. And ``when_written(callback)``:
        call ``callback()`` once every byte queued so far has left (or never will); a request's
        reserved output (``RequestContext.reserve_output``) is held until then. Without it, the
        reservation ends when the answer is queued."""

    async def drain(self) -> None:
        """Wait until the queued lines have been handed to the OS (backpressure)."""


class InFlight:
    """A request being served."""

    __slots__ = ("task", "method", "context", "cancelled", "cost", "reserved", "written")

    def __init__(self, task: asyncio.Task[None], method: str, cost: int = 0) -> None:
        self.task = task
        self.method = method
        self.context: RequestContext | None = None
        self.cancelled = False
        self.cost = cost  # the request's estimated parsed size (wire.Request.cost), counted in in_flight_cost
        self.reserved = 0  # bytes held on the output budget for its answer (reserve_output)
        self.written = False  # its answer is queued: nothing more of it to budget


class LegacyRounds:
    """What a legacy request's handler has been told so far, across the rounds of asking its client."""

    __slots__ = ("responses", "state", "count", "previous")

    def __init__(self) -> None:
        self.responses: dict[str, Any] = {}  # validated answers, by input request key
        self.state: Any = None  # the handler's state from its last InputRequired
        self.count = 0  # rounds of asking so far
        self.previous: RequestContext | None = None  # last round's context (its progress carries on)


def _key(request_id: Any) -> tuple[type, Any]:
    # 1 and "1" are different request ids.
    return (type(request_id), request_id)


def _being_cancelled() -> bool:
    """Was ``cancel()`` called on the running task (by ``_cancel_entry``), as opposed to a
    ``CancelledError`` raised from something the handler awaited?"""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _has_capability(capabilities: dict[str, Any], needed: str) -> bool:
    head, _, flag = needed.partition(".")
    section = capabilities.get(head)
    return section is not None and (not flag or bool(section.get(flag)))


class Dispatcher:
    """Routes client messages to the server's handlers and writes the answers to a ``MessageSink``."""

    def __init__(self, server: Server, sink: MessageSink, *, max_concurrency: int = 64,
                 max_reserved_output_bytes: int = DEFAULT_MAX_RESERVED_OUTPUT_BYTES) -> None:
        self.server = server
        self._sink = sink
        #: Bytes of large answers being made or waiting to leave (``RequestContext.reserve_output``).
        self.output_budget = OutputBudget(max_reserved_output_bytes)
        # A response line goes to the sink in parts where it takes them (see MessageSink).
        self._write_parts: Callable[[list[bytes]], None] = getattr(sink, "write_parts", None) or self._write_joined
        self._in_flight: dict[tuple[type, Any], InFlight] = {}
        # Answered requests whose task still waits for room in the pipe: their ids are free again.
        self._draining: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(max_concurrency)
        # Estimated bytes of the requests whose tasks are alive (subscriptions included): the
        # transport starts no new request while this is over its budget.
        self.in_flight_cost = 0
        self.control_in_flight = 0  # requests of the control lane whose tasks are alive
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.idle = asyncio.Event()
        self.idle.set()
        self.outgoing = Outgoing(self.send)  # requests to initialize-era clients only
        server.bind(self.emit, self.emit_optional)

    # --- output -------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Encode and queue one message (event-loop thread only)."""
        self._sink.write(encode_message(message))

    def _write_joined(self, parts: list[bytes]) -> None:
        self._sink.write(b"".join(parts))  # one part: that very buffer, not a copy

    def emit(self, message: dict[str, Any]) -> None:
        """Queue a notification from any thread (synchronous handlers run on the handler pool)."""
        if threading.get_ident() == self._loop_thread:
            self.send(message)
        else:
            self._loop.call_soon_threadsafe(self.send, message)

    def emit_optional(self, message: dict[str, Any]) -> None:
        """Queue a notification the sink may shed under backpressure (event-loop thread only)."""
        getattr(self._sink, "write_optional", self._sink.write)(encode_message(message))

    def _emitter_for(self, entry: InFlight) -> Callable[[dict[str, Any]], None]:
        """``emit`` for one request's progress and log notifications. A notification a worker
        thread queued just before the client's cancellation is dropped when its turn comes on
        the loop, never written after it; and as these are optional, a sink that can shed them
        under backpressure (``write_optional``) may."""
        write = getattr(self._sink, "write_optional", self._sink.write)

        def send_unless_cancelled(message: dict[str, Any]) -> None:
            # Checked here, on the loop, where the response is written: a worker thread's
            # notification queued just before the response (or the task handle) is dropped.
            # (No context: the request's task is over, see _finished.)
            context = entry.context
            if entry.cancelled or context is None or context._finished or context._task_id is not None:
                return
            write(encode_message(message))

        def emit(message: dict[str, Any]) -> None:
            if threading.get_ident() == self._loop_thread:
                send_unless_cancelled(message)
            else:
                self._loop.call_soon_threadsafe(send_unless_cancelled, message)

        return emit

    # --- input --------------------------------------------------------------------------------

    @property
    def backlog(self) -> int:
        """Requests in flight, subscriptions excluded (the transport pauses reading when this is large)."""
        # Requests waiting for the client's own answer are not work the client is waiting for us to do.
        return len(self._in_flight) + len(self._draining) - len(self.server.subscriptions) - self.outgoing.waiting

    @property
    def running(self) -> int:
        """Requests not answered yet, subscriptions excluded: the work a lost client would cut short
        (``backlog`` counts answered ones whose lines still wait for room in the pipe too)."""
        return len(self._in_flight) - len(self.server.subscriptions) - self.outgoing.waiting

    def is_in_flight(self, request_id: Any) -> bool:
        """Is a request with this id running (not answered, not cancelled)?"""
        return _key(request_id) in self._in_flight

    def may_overtake(self, event: Event, *, room_for_answers: bool = True) -> bool | None:
        """May this message, found in input the transport holds back while the requests before it
        wait, be handled now, ahead of them (``OVERTAKING``)? True: yes. False: no, it keeps its
        place. None: not yet (the control lane is full, or the client is not reading its answers:
        ``room_for_answers`` is false): look again later."""
        if isinstance(event, Notification):
            if event.method == CANCELLED:
                target = cancelled_request(event.params)
                return target is not None and self.is_in_flight(target)
            return event.method in OVERTAKING_NOTIFICATIONS
        if isinstance(event, Request) and event.method in OVERTAKING_REQUESTS:
            return True if room_for_answers and self.control_in_flight < CONTROL_LANE_LIMIT else None
        return False

    def handle(self, event: Event) -> None:
        """Act on one event from the wire reader. Never raises, never blocks."""
        if isinstance(event, Request):
            self._start(event)
        elif isinstance(event, Notification):
            self._notified(event)
        elif isinstance(event, BadMessage):
            log.warning("bad message: %s", event.error.message)
            self.send(error_response(event.id, event.error))
        elif isinstance(event, ClientResponse):
            self.outgoing.receive(event.id, event.message)
        elif isinstance(event, MalformedNotification):
            log.warning("ignoring a malformed notification %s: %s", clip(event.method), event.problem)

    def _start(self, request: Request) -> None:
        key = _key(request.id)
        if key in self._in_flight:
            self.send(error_response(request.id, InvalidRequest(f"Request id {clip(request.id)!r} is already in use by a request in flight")))
            return
        task = self._loop.create_task(self._serve(request))
        entry = InFlight(task, request.method, cost=request.cost)
        self.in_flight_cost += entry.cost
        if request.method in CONTROL_LANE:
            self.control_in_flight += 1
        self._in_flight[key] = entry
        self.idle.clear()
        task.add_done_callback(lambda _: self._finished(key, entry))

    def _answered(self, key: tuple[type, Any], entry: InFlight) -> None:
        """The response is queued: the id is the client's to reuse, even if the pipe is still full."""
        if self._in_flight.get(key) is entry:
            del self._in_flight[key]
            self._draining.add(entry.task)

    def _finished(self, key: tuple[type, Any], entry: InFlight) -> None:
        # The request's task is over, so its emitter drops everything from now on. Unlinking the
        # context breaks the cycle entry -> context -> emitter -> entry: the request's objects
        # are freed at once by reference counting, not piled up for the cyclic garbage collector
        # (which cost ~5 us a message under pipelined load; bench/README.md).
        entry.context = None
        self.in_flight_cost -= entry.cost
        self._release_output(entry, at_once=True)  # cancelled or unanswered: nothing will leave
        if entry.method in CONTROL_LANE:
            self.control_in_flight -= 1
        if self._in_flight.get(key) is entry:  # the id may belong to a newer request by now
            del self._in_flight[key]
        self._draining.discard(entry.task)
        if not self._in_flight and not self._draining:
            self.idle.set()

    def _notified(self, notification: Notification) -> None:
        method, params = notification.method, notification.params
        problem = notification_problem(method, params)
        if problem is not None:
            log.warning("ignoring a malformed notification %s: %s", method, problem)
        elif method == CANCELLED:
            self._cancel(params["requestId"], params.get("reason"))
        elif method == "notifications/initialized":
            self.server.legacy.initialized = True
        else:
            log.debug("ignoring notification %s", clip(method))

    def _cancel(self, request_id: RequestId, reason: str | None) -> None:
        entry = self._in_flight.get(_key(request_id))
        if entry is None:
            log.debug("cancellation of unknown or finished request %r ignored", request_id)
            return
        log.info("request %r (%s) cancelled by the client%s", clip(request_id), entry.method, f": {clip(reason)}" if reason else "")
        self._cancel_entry(entry)
        # The id is the client's again at once, even before the task has unwound: a request
        # reusing it may follow in the same read as the cancellation.
        self._answered(_key(request_id), entry)
        if entry.method == "subscriptions/listen":
            self.server.subscriptions.discard(request_id)  # nothing more on this stream from now on

    @staticmethod
    def _cancel_entry(entry: InFlight) -> None:
        # The flag is for synchronous handlers (they cannot be interrupted, but can poll
        # ctx.cancelled); the task cancellation interrupts coroutines at their next await.
        entry.cancelled = True
        if entry.context is not None:
            entry.context._cancelled = True
        entry.task.cancel()

    # --- serving one request ------------------------------------------------------------------

    async def _serve(self, request: Request) -> None:
        entry = self._in_flight[_key(request.id)]
        try:
            response = await self._answer(request, entry)
        except asyncio.CancelledError:
            return  # a cancelled request is never answered
        if entry.cancelled:
            return
        try:
            parts = encode_message_parts(response)
        except (TypeError, ValueError, RecursionError) as exc:
            log.error("result of %s (id %r) is not JSON-serializable: %s", request.method, clip(request.id), exc)
            why = TOO_MANY_DIGITS if too_many_digits(exc) else "it could not be encoded as JSON"
            parts = encode_message_parts(error_response(request.id, InternalError(f"Internal error: the {request.method} result was not sent: {why}")))
        self._write_parts(parts)
        entry.written = True
        self._release_output(entry)
        self._answered(_key(request.id), entry)
        await self._sink.drain()

    async def _reserve_output(self, entry: InFlight, nbytes: int) -> None:
        """``RequestContext.reserve_output`` of this request (nothing once its answer is queued)."""
        if entry.written or entry.cancelled:
            return
        await self.output_budget.acquire(nbytes, now=entry.reserved > 0)
        entry.reserved += nbytes
        if entry.written or entry.context is None:  # answered (or over) while it waited
            self._release_output(entry, at_once=True)

    def _release_output(self, entry: InFlight, *, at_once: bool = False) -> None:
        """Give back a request's reserved output: once its answer has left, where the sink can say."""
        held, entry.reserved = entry.reserved, 0
        if not held:
            return
        budget = self.output_budget
        when_written = None if at_once else getattr(self._sink, "when_written", None)
        if when_written is None:
            budget.release(held)
        else:
            when_written(lambda: budget.release(held))

    async def _answer(self, request: Request, entry: InFlight) -> dict[str, Any]:
        """The response to one request: its result, or the error that replaces it."""
        modern = self._is_modern(request)
        rounds = None if modern else LegacyRounds()  # only the legacy era asks its client across rounds
        while True:
            try:
                result = await self._run(request, entry, modern, rounds)
            except InputRequired as needed:
                try:
                    if rounds is None:
                        result = self._input_required(request, entry, needed, modern)
                    else:
                        answered = await self._ask_legacy_client(request, entry, needed, rounds)
                        if answered is None:
                            continue  # the client answered: run the handler again
                        result = answered
                except Exception as exc:
                    return error_response(request.id, self._error_for(exc, modern, request.method))
            except asyncio.CancelledError:
                if entry.cancelled or _being_cancelled():
                    raise  # the client's cancellation (or shutdown's): no response
                # Raised inside the handler (it awaited a task that was cancelled): only the client may
                # silence a request, so this one is answered like any other failure.
                log.error("handler for %s (id %r) was interrupted by a cancellation the client did not ask for", request.method, clip(request.id))
                return error_response(request.id, InternalError(f"Internal error while handling {request.method}"))
            except (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) as exc:  # the one place exceptions become wire errors
                # SystemExit (argparse, sys.exit) and KeyboardInterrupt from a handler end that request,
                # never the server: the other requests in flight are still answered.
                return error_response(request.id, self._error_for(exc, modern, request.method))
            return result_response(request.id, result)

    def _is_modern(self, request: Request) -> bool:
        """The era of one request (basic/versioning#backward-compatibility...).

        Modern ``_meta`` always means 2026-07-28. Without it, ``initialize`` and ``ping`` are
        legacy, and so is everything once an ``initialize`` was answered; anything else is
        treated as a malformed modern request (and so answered -32602). A modern-only server has
        no legacy era at all.
        """
        if carries_modern_meta(request.params) or self.server.modern_only:
            return True
        return not (request.method in ("initialize", "ping") or self.server.legacy.active)

    def _route(self, method: str, params: dict[str, Any], modern: bool) -> Handler:
        """The handler for ``method`` in this era; -32601 if there is none, or its feature is not offered."""
        if modern and method == "initialize" and not carries_modern_meta(params):
            # A modern-only server: name our versions so a legacy user sees why (basic/versioning).
            requested = params.get("protocolVersion")
            raise UnsupportedProtocolVersion(
                requested if isinstance(requested, str) else "",  # clipped by the error
                list(MODERN_VERSIONS),
                f"This server speaks only MCP {', '.join(MODERN_VERSIONS)} (no initialize handshake); "
                "upgrade the client to a version that sends per-request _meta",
            )
        route = (MODERN_METHODS if modern else LEGACY_METHODS).get(method)
        if route is None:
            raise MethodNotFound(f"Method not found: {clip(method)}", {"method": clip(method)})
        handler, needed = route
        if needed is not None and not _has_capability(self.server._feature_capabilities("modern" if modern else "legacy"), needed):
            raise MethodNotFound(f"Method not found: {method} (this server does not offer {needed})", {"method": method})
        return handler

    def _modern_context(self, request: Request) -> RequestContext:
        """Everything a 2026-07-28 request says about its client, from its own ``_meta`` (and MRTR params)."""
        server, params = self.server, request.params
        meta = parse_request_meta(params, server.supported_versions, server.initialize_versions)
        input_responses: dict[str, Any] = {}
        context = RequestContext(
            request_id=request.id,
            method=request.method,
            era="modern",
            protocol_version=meta.protocol_version,
            client_capabilities=meta.client_capabilities,
            client_info=meta.client_info,
            log_level=meta.log_level if server.log_messages else None,
            progress_token=meta.progress_token,
            emit=self.emit,
            input_responses=input_responses,
        )
        if request.method in MRTR_METHODS:
            fresh = parse_input_responses(params)
            if "requestState" in params:
                opened = server.sealer.open(params["requestState"], request.method, params)  # -32602 if forged
                context.state = opened.state
                input_responses.update(opened.answered)
            input_responses.update(fresh)  # this round's answers win over carried ones
        return context

    def _legacy_context(self, request: Request, rounds: LegacyRounds | None = None) -> RequestContext:
        """A legacy request's client is the one the ``initialize`` handshake described; on a
        re-run, the answers its client gave so far and the handler's state come along."""
        session = self.server.legacy
        context = RequestContext(
            request_id=request.id,
            method=request.method,
            era="legacy",
            protocol_version=session.version or "",
            client_capabilities=session.client_capabilities,
            client_info=session.client_info,
            log_level=session.log_level,
            progress_token=parse_progress_token(request.params.get("_meta")),
            emit=self.emit,
        )
        if rounds is not None and rounds.count:
            context.input_responses = dict(rounds.responses)
            context.state = rounds.state
            if rounds.previous is not None:  # progress keeps increasing across rounds
                context._last_progress = rounds.previous._last_progress
                context._last_progress_time = rounds.previous._last_progress_time
        if rounds is not None:
            rounds.previous = context
        return context

    async def _run(self, request: Request, entry: InFlight, modern: bool, rounds: LegacyRounds | None = None) -> dict[str, Any]:
        """Route, build the context, run the handler (within the concurrency bound), shape the result."""
        handler = self._route(request.method, request.params, modern)
        context = self._modern_context(request) if modern else self._legacy_context(request, rounds)
        entry.context = context
        context._emit = self._emitter_for(entry)
        context._reserve = lambda nbytes: self._reserve_output(entry, nbytes)
        context._cancelled = entry.cancelled
        limit = self.server.rate_limits.get(request.method)
        try:
            if limit is not None:
                await limit.acquire()  # paced before it takes a slot
            tool = self._task_capable_tool(request, context, modern)
            if request.method == "subscriptions/listen" or request.method in CONTROL_LANE:
                # A subscription is open for as long as it lives; the control lane does no user
                # work: neither holds (nor waits for) a concurrency slot.
                result = await handler(self.server, context, request.params)
            elif tool is not None and self.server.tasks.reserve():
                result = await self._call_maybe_as_task(handler, request, context)
            else:
                async with self._slots:
                    result = await handler(self.server, context, request.params)
        finally:
            context._finish()  # no progress or log notification may follow the response
        if modern:
            return self._complete(request.method, result)
        kind = LISTED_KIND.get(request.method)
        if kind is not None and kind not in self.server.legacy.listed:
            self.server.legacy.listed.add(kind)  # its changes are worth watching now (see watch)
            self.server._watch_changed()
        return legacy.to_legacy_result(request.method, result, self.server.legacy.version or "")

    def _task_capable_tool(self, request: Request, context: RequestContext, modern: bool) -> tools.Tool | None:
        """The tool a ``tools/call`` names, if this call may become a task (tasks extension).

        A ``task="required"`` tool called without the extension in the request's ``_meta`` is
        -32021 (a legacy client cannot declare it), before its handler runs.
        """
        if request.method != "tools/call":
            return None
        name = request.params.get("name")
        tool = self.server.tools.get(name) if isinstance(name, str) else None
        if tool is None or tool.task is None:
            return None
        if modern and tasks.client_supports_tasks(context.client_capabilities):
            return tool
        if tool.task == "required":
            raise tasks.missing_tasks_extension(f"The tool {tool.name!r} runs only as a task: calling it", legacy=not modern)
        return None

    async def _call_maybe_as_task(self, handler: Handler, request: Request, context: RequestContext) -> dict[str, Any]:
        """Run a task-capable ``tools/call`` (a task place is reserved): its result if it finishes
        within ``answer_within_seconds`` and the handler did not ask for a task, else a
        ``CreateTaskResult`` while the handler runs on as that task (``mcp_ref.tasks``)."""
        store = self.server.tasks
        wanted = asyncio.Event()
        status: list[str | None] = [None]
        task: tasks.Task | None = None

        def request_task(message: str | None) -> None:
            # From run_as_task(), or report_progress() after it: the first status message.
            def on_loop() -> None:
                if task is not None:  # it became a task meanwhile (a thread's late call)
                    if message is not None:
                        task.set_status_message(message)
                    return
                if message is not None:
                    status[0] = message
                wanted.set()

            if threading.get_ident() == self._loop_thread:
                on_loop()
            else:
                self._loop.call_soon_threadsafe(on_loop)

        context._request_task = request_task
        work: asyncio.Future[dict[str, Any]] | None = None
        try:
            async with self._slots:
                work = asyncio.ensure_future(handler(self.server, context, request.params))
                asked = asyncio.ensure_future(wanted.wait())
                try:
                    await asyncio.wait((work, asked), timeout=store.settings.answer_within_seconds, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    asked.cancel()
                if work.done() and not wanted.is_set():
                    return work.result()  # answered directly (an InputRequired or error included)
            task = store.create(context.client_capabilities, status[0])
        finally:
            if task is None:
                store.release()
                context._request_task = None
                if work is not None and not work.done():
                    work.cancel()  # the request itself was cancelled
        try:
            self._detach(task, context, work, request)
        except BaseException:
            task.cancel()  # never a stored task nobody drives
            raise
        log.info("tools/call %r (id %r) continues as task %s", request.params.get("name"), clip(request.id), task.id)
        return {"resultType": "task", **task.handle()}

    def _detach(self, task: tasks.Task, context: RequestContext, work: asyncio.Future[dict[str, Any]], request: Request) -> None:
        """Hand a running ``tools/call`` over to its task: progress becomes the task's status
        message, and after client input the handler runs again with the task's answers."""
        params = {name: value for name, value in request.params.items() if name not in ("inputResponses", "requestState")}
        handler = MODERN_METHODS["tools/call"][0]

        def status_of(ctx: RequestContext) -> Callable[[str], None]:
            def report(message: str) -> None:
                if threading.get_ident() == self._loop_thread:
                    task.set_status_message(message)
                else:
                    self._loop.call_soon_threadsafe(task.set_status_message, message)

            ctx._task_id, ctx._task_status = task.id, report
            task.context = ctx
            return report

        status_of(context)
        # What the call learnt through MRTR before it became a task carries on into the task:
        # the retry's answers (validated again when asked, as in MRTR) and the handler's state.
        carried = dict(context.input_responses)
        task.answers.update(context.answered)
        task.issued.update(carried)
        task.state = context.state

        async def next_round(task: tasks.Task) -> dict[str, Any]:
            ctx = RequestContext(
                request_id=request.id,
                method="tools/call",
                era="modern",
                protocol_version=context.protocol_version,
                client_capabilities=task.client_capabilities,
                client_info=context.client_info,
                log_level=None,
                progress_token=None,
                emit=lambda message: None,  # no notifications in a task: progress is its statusMessage
                input_responses={**carried, **task.answers},
                state=task.state,
            )
            ctx._finish()
            status_of(ctx)
            return await handler(self.server, ctx, params)

        task.start(work, next_round, lambda result: self._complete("tools/call", result), lambda exc: self._error_for(exc, True, "tools/call"))

    def _complete(self, method: str, result: dict[str, Any]) -> dict[str, Any]:
        """A modern complete result: ``resultType``, ``serverInfo`` and, where cacheable, caching hints."""
        result.setdefault("resultType", "complete")
        meta = result.get("_meta")
        result["_meta"] = {SERVER_INFO: self.server.info, **meta} if meta else {SERVER_INFO: self.server.info}
        if method in CACHEABLE_METHODS and "ttlMs" not in result:
            self.server.cache_hint(method).apply(result)
        return result

    def _check_input_required(self, method: str, entry: InFlight, needed: InputRequired) -> None:
        """What both eras check of a handler's ``InputRequired`` before anything is sent (-32603)."""
        if entry.context is not None:
            entry.context._finish()
        if method not in MRTR_METHODS:
            log.error("a %s handler asked for client input, which only tools/call, prompts/get and resources/read may do", method)
            raise InternalError(f"Internal error: {method} cannot ask the client for input")
        for key, input_request in needed.requests.items():
            try:
                check_input_request(input_request)
            except ValueError as exc:
                log.error("a %s handler built a malformed input request %r: %s", method, key, exc)
                raise InternalError(f"Internal error: {method} built a malformed input request") from None

    def _input_required(self, request: Request, entry: InFlight, needed: InputRequired, modern: bool) -> dict[str, Any]:
        """Turn a handler's ``InputRequired`` into an ``InputRequiredResult`` (or the error that replaces it)."""
        method = request.method
        self._check_input_required(method, entry, needed)
        assert entry.context is not None
        check_client_can_answer(needed.requests, entry.context.client_capabilities)
        result: dict[str, Any] = {"resultType": "input_required"}
        if needed.requests:
            result["inputRequests"] = needed.requests
        # Answers asked for and accepted so far ride along, so later rounds never ask for them
        # again; keys nobody asked for are not carried.
        result["requestState"] = self.server.sealer.seal(method, request.params, needed.state, entry.context.answered)
        result["_meta"] = {SERVER_INFO: self.server.info}
        return result

    async def _ask_legacy_client(self, request: Request, entry: InFlight, needed: InputRequired, rounds: LegacyRounds) -> dict[str, Any] | None:
        """Ask an initialize-era client with server-to-client requests (``outgoing``).

        None when every answer arrived and was valid (``rounds`` holds them: run the handler
        again); otherwise the final result (a tool error) or an exception (-32603) saying why.
        """
        method = request.method
        self._check_input_required(method, entry, needed)
        session = self.server.legacy
        version = session.version or ""
        missing = sorted(
            {
                unsupported_by_version(r, version) or required_capability(r)[0]
                for r in needed.requests.values()
                if unsupported_by_version(r, version) or not client_has_capability(session.client_capabilities, required_capability(r)[0])
            }
        )
        if missing:
            return self._legacy_input_error(method, missing, needed)
        if rounds.count >= LEGACY_MAX_ROUNDS:
            log.error("a %s handler asked its client for input %d times in a row; giving up", method, rounds.count)
            return self._legacy_failure(method, f"it asked the client for input {rounds.count} times in a row without finishing")
        rounds.count += 1
        rounds.state = needed.state
        if not needed.requests:
            return None  # state only: the handler runs again with it
        import uuid  # here, not at start-up: only legacy elicitation needs it (with platform, ~2 ms)

        timeout = self.server.client_request_timeout_seconds
        asks = {
            key: asyncio.ensure_future(
                self.outgoing.request(r["method"], legacy_wire_request(r, version, f"mcp-ref-elicitation-{uuid.uuid4().hex}"), timeout)
            )
            for key, r in needed.requests.items()
        }
        try:
            done, _ = await asyncio.wait(asks.values(), return_when=asyncio.FIRST_EXCEPTION)
            for task in asks.values():
                if task in done and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
            for key, task in asks.items():
                try:
                    rounds.responses[key] = validate_input_response(key, needed.requests[key], task.result())
                except ProtocolError as exc:
                    raise ClientRequestFailed(f"the client's answer to {needed.requests[key]['method']} was not valid: {exc.message}") from None
        except ClientRequestFailed as exc:
            log.warning("%s (id %r) could not get the client's input: %s", method, clip(request.id), exc)
            return self._legacy_failure(method, f"the client's input could not be obtained: {exc}")
        finally:
            for task in asks.values():
                if not task.done():
                    task.cancel()
            await asyncio.gather(*asks.values(), return_exceptions=True)
        return None

    def _legacy_failure(self, method: str, why: str) -> dict[str, Any]:
        explanation = f"This {'tool' if method == 'tools/call' else method} did not finish: {why}"
        if method == "tools/call":
            return tools.tool_error_result(explanation)
        raise InternalError(explanation)

    def _legacy_input_error(self, method: str, wanted: list[str], needed: InputRequired) -> dict[str, Any]:
        explanation = (
            f"This {'tool' if method == 'tools/call' else method} needs input from the client "
            f"({', '.join(wanted)}), which this client (MCP {self.server.legacy.version}) did not declare "
            f"in initialize or cannot receive; declare the capability, or use an MCP {MODERN_VERSIONS[0]} "
            "client, or a tool that needs no interaction"
        )
        if method == "tools/call":
            return tools.tool_error_result(explanation)
        raise InternalError(explanation)

    def _error_for(self, exc: BaseException, modern: bool, method: str = "") -> ProtocolError:
        """The wire error for an exception a request raised."""
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

    # --- shutdown -------------------------------------------------------------------------------

    def cancel_in_flight(self, reason: str | None = None) -> None:
        """Cancel every running request except subscriptions (they close gracefully in ``shutdown``).

        With a ``reason`` (the server is shutting down), each is first answered -32603 with it:
        every request gets exactly one response unless the client cancelled it. Requests
        cancelled already are left alone (never answered twice).
        """
        for key, entry in list(self._in_flight.items()):
            if entry.method == "subscriptions/listen" or entry.cancelled:
                continue
            if reason is not None:
                self.send(error_response(key[1], InternalError(f"Internal error: {reason}")))
            self._cancel_entry(entry)

    async def shutdown(self, grace_seconds: float) -> None:
        """Finish in-flight work within ``grace_seconds``, cancel the rest, close subscriptions gracefully."""
        work = [e.task for e in self._in_flight.values() if e.method != "subscriptions/listen"]
        work += self._draining
        if work:
            _, pending = await asyncio.wait(work, timeout=grace_seconds)
            if pending:
                # Answered requests whose lines still drain, and ones already cancelled, are not "still running".
                running = sum(1 for e in self._in_flight.values() if e.method != "subscriptions/listen" and not e.cancelled)
                if running:
                    log.warning("shutting down: %d request(s) still running after %.1f s are answered with an error and cancelled", running, grace_seconds)
                self.cancel_in_flight("the server is shutting down")
                for task in self._draining:
                    task.cancel()
                # A handler that swallows its cancellation is not waited for forever.
                await asyncio.wait(pending, timeout=UNWIND_SECONDS)
        await self.server.tasks.close()  # nobody can poll them once the client has gone
        self.server.subscriptions.close_all()
        listens = [e.task for e in self._in_flight.values()]
        if listens:
            await asyncio.gather(*listens, return_exceptions=True)
        await self.server._stop_watching()  # watch hooks hear the empty set: nothing listens any more
        await self._sink.drain()
        self.server.bind(None)
