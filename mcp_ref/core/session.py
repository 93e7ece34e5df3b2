"""The session: one connection's state, from the bytes of its requests to the lines of its answers.

Spec: basic/index (requests, responses, notifications), basic/patterns/cancellation,
basic/transports/stdio (backpressure is ours: the spec leaves it to the implementation).

Theory of operation
-------------------
A ``Session`` is everything one client connection has; the ``Server`` holds only what is
registered and how it is configured, so one ``Server`` may serve several sessions that share
nothing else. It does no I/O of its own: the transport (``stdio``) gives it bytes
(``receive_data``, ``receive_eof``) and an ``Output`` to queue answer lines on, and reads
``wants_input`` to know whether to read more. Each request runs as an asyncio task that
``dispatcher.answer`` drives (era, route, context, handler, result shape); the session only starts
it, answers or silences it, and forgets it. What it holds, and who changes it::

    reader            bytes not read yet (wire.WireReader)        receive_data, _pump, _take_ahead
    _in_flight        requests by id (InFlight), and _draining    _start, _answered, _finished
    budgets           slots, in_flight_cost, output_budget        _start/_finished, reserve_output
    outgoing          our requests to an initialize-era client    legacyinput.ask_client, handle
    legacy            the initialize handshake (LegacySession)    legacy.initialize, _notified
    subscriptions     open listen streams (SubscriptionHub)       subscriptions.listen, _cancel
    tasks             this client's tasks (TaskStore)             tasks.call_maybe_as_task
    accepting, ...    the shutdown phases (below)                 serve_held_input ... shutdown

The per-connection methods reach it as ``ctx.connection``; ``Server.notify_*`` reach it through
``list_changed``/``resource_updated`` on its loop (``Server.attach``, until ``shutdown``
detaches it), and ``watched`` is its share of what the server's watch hooks hear.

States of one request id::

    (absent) --Request, budgets allow--> in flight --answer queued--> draining --task over--> (absent)
        |                                   |   \\--notifications/cancelled: no answer, id free--> draining
        |                                   \\--shutdown, grace over: -32603, cancelled--> draining
        \\--Request, budgets full--> held (unparsed bytes) --room--> in flight
                                       \\--shutdown, grace over: -32603 ("not started")

An id is the client's to reuse as soon as the request is answered or cancelled ("draining" is
the task unwinding or waiting for room in the pipe). A second request with an id in flight is
refused (-32600).

Budgets (the input is *held* as bytes while one is full, and the session says so through
``wants_input`` once ``HELD_INPUT_BYTES`` wait): fewer than ``BACKLOG_HIGH_WATER`` requests waiting
or running (open subscriptions and requests waiting for the client's own answer not counted), less
than ``max_in_flight_bytes`` of estimated parsed requests in flight, and no more than the output's
high-water mark queued for a client that is not reading. Every change that can make room signals:
a request finishing and the output draining call ``_pump`` again; nothing polls. While input is
held, the control lane (``mcp_ref.core.control``) is served through it (``_take_ahead``): a
cancellation of a request in flight, and requests that do no user work, are taken out and handled
at once, at most ``control.CONTROL_LANE_LIMIT`` at a time, none while the client leaves its
answers unread.

Connection phases: serving -> (EOF, a signal) draining held input for the grace period
(``serve_held_input``) -> refusing what is still held (``refuse_held_input``) -> ``shutdown``
(in-flight work finishes within what is left of the grace, then -32603 and cancellation; open
subscriptions get their graceful closure; tasks are cancelled; the server forgets the session,
``Server.detach``). A lost output (the client closed stdout) skips to cancelling everything
without answers (``cancel_in_flight``).

Cancel-safety: every method but ``serve_held_input`` and ``shutdown`` is a plain function that
runs to completion on the loop; those two, if cancelled, stop waiting and leave the state as it
was (``shutdown`` again finishes the job).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, cast

from .control import CONTROL_LANE, CONTROL_LANE_LIMIT, OVERTAKING_NOTIFICATIONS, OVERTAKING_REQUESTS, cancelled_request, notification_problem, overtaking_pattern
from .dispatcher import answer
from .errors import TOO_MANY_DIGITS, InternalError, InvalidRequest, clip, too_many_digits
from ..features.legacy import LegacySession
from ..features.outgoing import Outgoing
from ..layers.outputbudget import DEFAULT_MAX_RESERVED_OUTPUT_BYTES, OutputBudget
from ..features.subscriptions import LIST_CHANGED_METHOD, RESOURCE_UPDATED, SubscriptionHub
from ..features.tasks import TaskStore
from ..features.watch import WatchSet
from .wire import (
    CANCELLED,
    DEFAULT_MAX_LINE_BYTES,
    BadMessage,
    ClientResponse,
    Event,
    MalformedNotification,
    Notification,
    Request,
    RequestId,
    WireReader,
    encode_message,
    encode_message_parts,
    error_response,
    notification,
    request_key,
    response_parts,
)

if TYPE_CHECKING:
    from .context import RequestContext
    from ..server import Server

log = logging.getLogger("mcp_ref")

DEFAULT_MAX_CONCURRENCY = 64
# No new request is started while this many wait or run (subscriptions have their own bound).
BACKLOG_HIGH_WATER = 1024
# No new request is started while requests in flight (subscriptions included) are estimated to
# hold this much parsed input (wire.estimated_cost); the first one always starts.
DEFAULT_MAX_IN_FLIGHT_BYTES = 64 * 1024 * 1024
# One line whose parsed form is estimated above this is refused without being parsed (-32600):
# that first request would start whatever its size. Four times the line limit, at least 64 MiB,
# so a line of plain data (a file's base64, whose estimate is about its size) always passes.
MIN_MAX_PARSED_BYTES = 64 * 1024 * 1024
# Input read ahead, unparsed, while no new request may start: the window in which cancellations
# are honoured ahead of their turn.
HELD_INPUT_BYTES = 4 * 1024 * 1024
# At shutdown, how long cancelled handlers get to unwind (one that swallows its cancellation is left).
UNWIND_SECONDS = 2.0
# The reason given in the -32603 of requests cut short.
SHUTTING_DOWN = "the server is shutting down"


class Output(Protocol):
    """Where a session's lines go: the transport's single writer (``stdout._Output``), or a test's list.

    ``buffered`` is the bytes queued and not yet taken by the client; above ``high_water`` no new
    request starts, and the writer calls the session's ``room`` once it is back to its low mark.
    """

    buffered: int
    high_water: int

    def write_parts(self, parts: Sequence[bytes]) -> None:
        """Queue one whole line given as consecutive buffers (``wire.encode_message_parts``);
        never blocks, never splices with other lines."""

    def write_optional(self, line: bytes) -> None:
        """Queue a line the client can do without (progress, log): it may be shed under backpressure."""

    def when_written(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once every byte queued so far has left (or never will)."""

    async def drain(self) -> None:
        """Wait while too much is queued (backpressure). Cancel-safe: only the waiting stops."""


class LineSink(Protocol):
    """The smallest output: ``write(line)`` and ``drain()`` (an in-memory list in tests)."""

    def write(self, line: bytes) -> None: ...

    async def drain(self) -> None: ...


class _Lines:
    """A ``LineSink`` seen as an ``Output``: parts joined, nothing shed, and written means queued
    unless the sink offers its own ``when_written`` (a test's stand-in for a slow pipe)."""

    buffered = 0
    high_water = 1 << 62

    def __init__(self, sink: LineSink) -> None:
        self._sink = sink

    def write_parts(self, parts: Sequence[bytes]) -> None:
        write_parts = getattr(self._sink, "write_parts", None)
        if write_parts is not None:
            write_parts(parts)
        else:
            self._sink.write(parts[0] if len(parts) == 1 else b"".join(parts))

    def write_optional(self, line: bytes) -> None:
        getattr(self._sink, "write_optional", self._sink.write)(line)

    def when_written(self, callback: Callable[[], None]) -> None:
        when_written = getattr(self._sink, "when_written", None)
        if when_written is None:
            callback()
        else:
            when_written(callback)

    async def drain(self) -> None:
        await self._sink.drain()


_OUTPUT_NAMES = ("buffered", "high_water", "write_parts", "write_optional", "when_written", "drain")


def as_output(sink: Output | LineSink) -> Output:
    """``sink`` as an ``Output``: a sink with all of ``Output`` as it is, any other (a ``LineSink``,
    perhaps with some of ``Output``'s methods) through the adapter above."""
    if all(hasattr(sink, name) for name in _OUTPUT_NAMES):
        return cast(Output, sink)  # (the Protocol is not runtime-checkable: its members say it)
    return _Lines(cast(LineSink, sink))


class InFlight:
    """A request being served: its task, its context once built, and what its answer holds."""

    __slots__ = ("request", "session", "task", "context", "cancelled", "finished", "reserved", "written")
    task: asyncio.Task[None]  # set by Session._start, right after

    def __init__(self, request: Request, session: Session) -> None:
        self.request = request  # (its cost is counted in Session.in_flight_cost while the task lives)
        self.session = session
        self.context: RequestContext | None = None
        self.cancelled = False
        self.finished = False  # the handler is done: no notification may follow (set by the dispatcher)
        self.reserved = 0  # bytes held on the output budget for its answer (reserve_output)
        self.written = False  # its answer is queued: nothing more of it to budget

    def cancel(self) -> None:
        """The client's cancellation (or shutdown's): the flag is for synchronous handlers (they
        cannot be interrupted, but can poll ``ctx.cancelled``); the task cancellation interrupts
        coroutines at their next await."""
        self.cancelled = True  # (the context reads it: RequestContext.cancelled)
        self.task.cancel()

    def emit(self, message: dict[str, Any]) -> None:
        """The request's progress and log notifications, from any thread. One a worker thread
        queued just before the client's cancellation is dropped when its turn comes on the loop,
        never written after it; and as they are optional, the output may shed them."""
        self.session.on_loop(self._send_unless_over, message)

    def _send_unless_over(self, message: dict[str, Any]) -> None:
        # Checked here, on the loop, where the response is written. (No context: the request's
        # task is over, see Session._finished.)
        context = self.context
        if self.cancelled or self.finished or context is None or context.task_id is not None:
            return
        self.session.output.write_optional(encode_message(message))

    async def reserve_output(self, nbytes: int) -> None:
        await self.session.reserve_output(self, nbytes)


class Session:
    """One client connection (see the module docstring). ``handle(event)`` takes one event
    directly (the in-memory test client does); a transport feeds bytes instead."""

    def __init__(self, server: Server, sink: Output | LineSink, *, max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
                 max_reserved_output_bytes: int = DEFAULT_MAX_RESERVED_OUTPUT_BYTES,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, max_in_flight_bytes: int = DEFAULT_MAX_IN_FLIGHT_BYTES) -> None:
        self.server = server
        self.output = as_output(sink)
        self.reader = WireReader(max_line_bytes, max_parsed_bytes=max(MIN_MAX_PARSED_BYTES, 4 * max_line_bytes))
        #: Bytes of large answers being made or waiting to leave (``RequestContext.reserve_output``).
        self.output_budget = OutputBudget(max_reserved_output_bytes)
        self.max_in_flight_bytes = max_in_flight_bytes
        self._in_flight: dict[tuple[type, Any], InFlight] = {}
        # Answered requests whose task still waits for room in the pipe: their ids are free again.
        self._draining: set[asyncio.Task[None]] = set()
        self.slots = asyncio.Semaphore(max_concurrency)
        # Estimated bytes of the requests whose tasks are alive (subscriptions included).
        self.in_flight_cost = 0
        self.control_in_flight = 0  # requests of the control lane whose tasks are alive
        self.listening = 0  # subscriptions/listen requests in flight (not counted in the backlog)
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        self.idle = asyncio.Event()
        self.idle.set()
        self.accepting = True  # false once the grace period is over: no more requests start
        self.wants_input = True  # false while enough input is held, and after EOF
        self.holding = False  # input waits because a budget is full
        self.on_input_wanted: Callable[[], None] | None = None  # the transport's: look at wants_input again
        self._changed = asyncio.Event()  # set whenever room may have appeared (see serve_held_input)
        self.outgoing = Outgoing(self.send, self.room)  # requests to initialize-era clients only
        self.legacy = LegacySession()  # the initialize handshake, if this client made one
        self.subscriptions = SubscriptionHub(self.emit, self.emit_optional)  # open listen streams
        self.tasks = TaskStore(server.task_settings, on_change=self.subscriptions.task_changed)
        server.attach(self)  # change notifications reach this session from now on

    # --- output -------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Encode and queue one message (event-loop thread only)."""
        self.output.write_parts(encode_message_parts(message))

    def emit(self, message: dict[str, Any]) -> None:
        """Queue a notification from any thread (synchronous handlers run on the handler pool)."""
        self.on_loop(self.send, message)

    def on_loop(self, function: Callable[..., None], *args: Any) -> None:
        """``function(*args)`` on the session's event loop: at once from the loop's thread, else
        handed over with ``call_soon_threadsafe`` (a synchronous handler's thread, say)."""
        if threading.get_ident() == self.loop_thread:
            function(*args)
        else:
            self.loop.call_soon_threadsafe(function, *args)

    def emit_optional(self, message: dict[str, Any]) -> None:
        """Queue a notification the output may shed under backpressure (event-loop thread only)."""
        self.output.write_optional(encode_message(message))

    def room(self) -> None:
        """Something that bounds input was given back (a request ended, output drained): look again."""
        self._changed.set()
        if self.holding:
            self._pump()
            if self.on_input_wanted is not None:
                self.on_input_wanted()

    # --- input --------------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> bool:
        """Bytes from the client; returns ``wants_input`` (read more?)."""
        self.reader.feed(data)
        return self._pump()

    def receive_eof(self) -> None:
        """The client closed its side: what was read is still served."""
        if not self.reader.at_eof:
            self.reader.feed_eof()
            self._pump()

    @property
    def backlog(self) -> int:
        """Requests in flight, subscriptions and requests waiting for the client's own answer excluded."""
        return len(self._in_flight) + len(self._draining) - self.listening - self.outgoing.waiting

    @property
    def running(self) -> int:
        """Requests not answered yet, subscriptions excluded: the work a lost client would cut short."""
        return len(self._in_flight) - self.listening - self.outgoing.waiting

    def _pump(self) -> bool:
        """Hand complete input to ``handle`` while the budgets allow; else hold it as bytes, taking
        the control lane's messages out of it (``_take_ahead``). Returns ``wants_input``."""
        reader, output = self.reader, self.output
        while self.accepting:
            if (len(self._in_flight) + len(self._draining) - self.listening - self.outgoing.waiting >= BACKLOG_HIGH_WATER
                    or output.buffered > output.high_water or self.in_flight_cost >= self.max_in_flight_bytes):
                self.holding = True
                self._take_ahead()
                break
            self.holding = False
            try:
                event = reader.next_event()
            except Exception:
                # A bug or an exhausted resource while reading one line: that line is consumed
                # already (the reader marks it before parsing), so answer it and go on.
                log.exception("internal error while reading a message; answering it with -32603 and going on")
                event = BadMessage(None, InternalError("Internal error: the server could not read this message"))
            if event is None:
                break
            if type(event) is Request:
                try:
                    self._start(event)
                except Exception:
                    log.exception("internal error while starting a request; going on")
            else:
                self.handle(event)
        self.wants_input = not reader.at_eof and (not self.holding or reader.buffered_bytes < HELD_INPUT_BYTES)
        return self.wants_input

    def _take_ahead(self) -> None:
        """The control lane through held input (see the module docstring)."""
        room = self.output.buffered <= self.output.high_water  # a client that does not read gets no more answers

        def wanted(event: Event) -> bool | None:
            return self.may_overtake(event, room_for_answers=room)

        for event in self.reader.take_ahead(overtaking_pattern(), wanted):
            self.handle(event)

    def is_in_flight(self, request_id: Any) -> bool:
        """Is a request with this id running (not answered, not cancelled)?"""
        return request_key(request_id) in self._in_flight

    def may_overtake(self, event: Event, *, room_for_answers: bool = True) -> bool | None:
        """May this held message be handled now, ahead of the requests before it? True: yes.
        False: it keeps its place. None: not yet (the control lane is full, or the client is not
        reading its answers): look again when something changes."""
        if isinstance(event, Notification):
            if event.method == CANCELLED:
                target = cancelled_request(event.params)
                return target is not None and self.is_in_flight(target)
            return event.method in OVERTAKING_NOTIFICATIONS
        if isinstance(event, Request) and event.method in OVERTAKING_REQUESTS:
            return True if room_for_answers and self.control_in_flight < CONTROL_LANE_LIMIT else None
        return False

    def handle(self, event: Event) -> None:
        """Act on one event from the wire reader. Never blocks; an internal error is logged."""
        try:
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
        except Exception:
            log.exception("internal error while dispatching a message; going on")

    def _start(self, request: Request) -> None:
        key = request.key
        if key in self._in_flight:
            self.send(error_response(request.id, InvalidRequest(f"Request id {clip(request.id)!r} is already in use by a request in flight")))
            return
        entry = InFlight(request, self)
        self.in_flight_cost += request.cost
        if request.method in CONTROL_LANE:
            self.control_in_flight += 1
        elif request.method == "subscriptions/listen":
            self.listening += 1
        self._in_flight[key] = entry
        self.idle.clear()
        entry.task = task = self.loop.create_task(self._serve(request, entry))
        task.add_done_callback(lambda _: self._finished(key, entry))

    def _answered(self, key: tuple[type, Any], entry: InFlight) -> None:
        """The response is queued (or the request cancelled): the id is the client's to reuse."""
        if self._in_flight.get(key) is entry:
            del self._in_flight[key]
            if entry.request.method == "subscriptions/listen":
                self.listening -= 1
            self._draining.add(entry.task)

    def _finished(self, key: tuple[type, Any], entry: InFlight) -> None:
        # The request's task is over, so its emitter drops everything from now on. Unlinking the
        # context breaks the cycle entry -> context -> emitter -> entry: the request's objects
        # are freed at once by reference counting, not piled up for the cyclic garbage collector
        # (which cost ~5 us a message under pipelined load; bench/README.md).
        entry.context = None
        self.in_flight_cost -= entry.request.cost
        self.release_output(entry, at_once=True)  # cancelled or unanswered: nothing will leave
        if entry.request.method in CONTROL_LANE:
            self.control_in_flight -= 1
        self._answered(key, entry)  # (the id may belong to a newer request by now: then nothing)
        self._draining.discard(entry.task)
        if not self._in_flight and not self._draining:
            self.idle.set()
        self.room()

    def _notified(self, notification: Notification) -> None:
        method, params = notification.method, notification.params
        problem = notification_problem(method, params)
        if problem is not None:
            log.warning("ignoring a malformed notification %s: %s", method, problem)
        elif method == CANCELLED:
            self._cancel(params["requestId"], params.get("reason"))
        elif method == "notifications/initialized":
            self.legacy.initialized = True
        else:
            log.debug("ignoring notification %s", clip(method))

    def _cancel(self, request_id: RequestId, reason: str | None) -> None:
        entry = self._in_flight.get(request_key(request_id))
        if entry is None:
            log.debug("cancellation of unknown or finished request %r ignored", request_id)
            return
        log.info("request %r (%s) cancelled by the client%s", clip(request_id), entry.request.method, f": {clip(reason)}" if reason else "")
        entry.cancel()
        # The id is the client's again at once, even before the task has unwound: a request
        # reusing it may follow in the same read as the cancellation.
        self._answered(request_key(request_id), entry)
        if entry.request.method == "subscriptions/listen":
            self.subscriptions.discard(request_id)  # nothing more on this stream from now on

    # --- change notifications (``Server.notify_*`` calls these on the loop) ------------------------

    def list_changed(self, kind: str) -> None:
        """The ``kind`` list changed: the streams that asked hear it, and an initialize-era client
        (which never asks: it gets every announced list's changes)."""
        self.subscriptions.list_changed(kind)
        if self.legacy.active:
            self.send(notification(LIST_CHANGED_METHOD[kind]))

    def resource_updated(self, uri: str) -> None:
        """The resource at ``uri`` changed: tell the streams, and a legacy client, subscribed to it."""
        self.subscriptions.resource_updated(uri)
        if self.legacy.active and uri in self.legacy.subscribed_uris:
            self.send(notification(RESOURCE_UPDATED, {"uri": uri}))

    @property
    def watched(self) -> WatchSet:
        """What this client listens for: its streams' URIs and lists, its legacy subscriptions, and
        the announced lists its legacy handshake fetched (``LegacySession.watched_lists``)."""
        hub, legacy = self.subscriptions, self.legacy
        lists = hub.watched_lists() | legacy.watched_lists(self.server.list_changed_kinds)
        return WatchSet(hub.watched_uris() | frozenset(legacy.subscribed_uris), lists)

    def watch_changed(self) -> None:
        """What this session watches may have changed (event-loop thread): the server's hooks hear the new union."""
        self.server.watch_changed()

    # --- serving one request (the dispatcher does the work) ------------------------------------

    async def _serve(self, request: Request, entry: InFlight) -> None:
        try:
            outcome = await answer(self, request, entry)
        except asyncio.CancelledError:
            return  # a cancelled request is never answered
        if entry.cancelled:
            return
        try:
            parts = response_parts(request.id, outcome)
        except Exception as exc:  # (TypeError, ValueError, RecursionError from json; anything a hand-made marked block raises)
            log.error("result of %s (id %r) is not JSON-serializable: %s", request.method, clip(request.id), exc)
            why = TOO_MANY_DIGITS if too_many_digits(exc) else "it could not be encoded as JSON"
            parts = response_parts(request.id, InternalError(f"Internal error: the {request.method} result was not sent: {why}"))
        # The id is the client's to reuse from now on; the line is queued in the same step.
        self._answered(request.key, entry)
        self.output.write_parts(parts)
        entry.written = True
        if entry.reserved:
            self.release_output(entry)
        await self.output.drain()

    async def reserve_output(self, entry: InFlight, nbytes: int) -> None:
        """``RequestContext.reserve_output`` of this request (nothing once its answer is queued)."""
        if entry.written or entry.cancelled:
            return
        await self.output_budget.acquire(nbytes, now=entry.reserved > 0)
        entry.reserved += nbytes
        if entry.written or entry.context is None:  # answered (or over) while it waited
            self.release_output(entry, at_once=True)

    def release_output(self, entry: InFlight, *, at_once: bool = False) -> None:
        """Give back a request's reserved output: once its answer has left, unless ``at_once``."""
        held, entry.reserved = entry.reserved, 0
        if not held:
            return
        budget = self.output_budget
        if at_once:
            budget.release(held)
        else:
            self.output.when_written(lambda: budget.release(held))

    # --- ending ---------------------------------------------------------------------------------

    async def serve_held_input(self, until: float) -> None:
        """Shutdown, step 1: input already read (held back by the budgets) is still served, until
        loop time ``until``; woken by every change that can make room, never by a timer."""
        reader = self.reader
        while self.accepting and reader.has_pending_event() and self.loop.time() < until:
            self._changed.clear()
            self._pump()
            if not reader.has_pending_event():
                break
            try:
                await asyncio.wait_for(self._changed.wait(), max(0.0, until - self.loop.time()))
            except TimeoutError:
                break
        self.accepting = False

    def refuse_held_input(self) -> None:
        """Shutdown, step 2: answer -32603 to every request still held unparsed, unless a
        cancellation after it (also held) silences it; other held messages are handled as usual
        (a bad line still gets its error). Only ids are kept, never params: memory stays flat."""
        self.accepting = False
        refused: dict[tuple[type, Any], list[Any]] = {}  # key -> [id, requests with that id]
        while (event := self.reader.next_event()) is not None:
            if isinstance(event, Request):
                refused.setdefault(request_key(event.id), [event.id, 0])[1] += 1
            elif isinstance(event, Notification) and event.method == CANCELLED and (target := cancelled_request(event.params)) is not None:
                waiting = refused.get(request_key(target))
                if waiting is not None and waiting[1]:
                    waiting[1] -= 1  # the client cancelled a request it sent: no answer
                else:
                    self.handle(event)  # cancels a request in flight (or is ignored)
            else:
                self.handle(event)
        count = sum(times for _, times in refused.values())
        if count:
            log.warning("shutting down: answering %d request(s) that were read but never started with an error", count)
        for request_id, times in refused.values():
            for _ in range(times):
                self.send(error_response(request_id, InternalError(f"Internal error: {SHUTTING_DOWN}; the request was not started")))

    def cancel_in_flight(self, reason: str | None = None) -> None:
        """Cancel every running request except subscriptions (they close gracefully in ``shutdown``).

        With a ``reason`` (the server is shutting down), each is first answered -32603 with it:
        every request gets exactly one response unless the client cancelled it. Requests
        cancelled already are left alone (never answered twice).
        """
        self.accepting = False
        self._changed.set()  # shutdown's first step stops waiting for room: nothing more starts
        for entry in list(self._in_flight.values()):
            if entry.request.method == "subscriptions/listen" or entry.cancelled:
                continue
            if reason is not None:
                self.send(error_response(entry.request.id, InternalError(f"Internal error: {reason}")))
            entry.cancel()

    async def shutdown(self, grace_seconds: float) -> None:
        """Finish in-flight work within ``grace_seconds``, cancel the rest, close subscriptions gracefully."""
        work = [e.task for e in self._in_flight.values() if e.request.method != "subscriptions/listen"]
        work += self._draining
        if work:
            _, pending = await asyncio.wait(work, timeout=grace_seconds)
            if pending:
                # Answered requests whose lines still drain, and ones already cancelled, are not "still running".
                running = sum(1 for e in self._in_flight.values() if e.request.method != "subscriptions/listen" and not e.cancelled)
                if running:
                    log.warning("shutting down: %d request(s) still running after %.1f s are answered with an error and cancelled", running, grace_seconds)
                self.cancel_in_flight(SHUTTING_DOWN)
                for task in self._draining:
                    task.cancel()
                # A handler that swallows its cancellation is not waited for forever.
                await asyncio.wait(pending, timeout=UNWIND_SECONDS)
        await self.tasks.close()  # nobody can poll them once the client has gone
        self.subscriptions.close_all()
        # (Only subscriptions: a handler that swallowed its cancellation above is not waited for.)
        listens = [e.task for e in self._in_flight.values() if e.request.method == "subscriptions/listen"]
        if listens:
            await asyncio.gather(*listens, return_exceptions=True)
        await self.server.detach(self)  # no more change notifications; watch hooks hear what is left
        await self.output.drain()
