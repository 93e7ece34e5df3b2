"""The tasks extension (``io.modelcontextprotocol/tasks``): a long tool call answered with a handle.

Spec: the Tasks extension (SEP-2663; modelcontextprotocol/ext-tasks, specification/draft/tasks.md),
basic/patterns/mrtr for the input requests a task carries.

Theory of operation
-------------------
A tool registered with ``task="optional"`` or ``task="required"`` may be answered with a
``CreateTaskResult`` (``resultType: "task"``: a task id, status, timestamps, ``ttlMs``,
``pollIntervalMs``) instead of its ``CallToolResult``, but only when *this request's* ``_meta``
declares the extension under ``clientCapabilities.extensions``. The server alone decides, per call:

* the handler starts as for any call. If it finishes within ``TaskSettings.answer_within_seconds``
  the client gets the plain result (the spec's immediate-result shortcut): a quick call costs no
  polling. If it does not, or it calls ``ctx.run_as_task()`` sooner, the call becomes a task: the
  task is stored first (so a ``tasks/get`` right after the handle always resolves), the handle is
  the response, and the handler keeps running, detached from the request.
* an MRTR ``InputRequired`` raised *before* that point is an ordinary ``InputRequiredResult`` (the
  client retries the call, and the retry may then become a task); raised *inside* a task it moves
  the task to ``input_required``. ``tasks/get`` then carries the outstanding ``inputRequests``, the
  client answers with ``tasks/update`` (a subset of keys at a time if it likes; unknown or already
  answered keys are ignored), and once every outstanding key is answered the handler runs again
  from the top with all answers so far, as in MRTR: one code path for every way of asking.
  A key is issued once per task: a handler that asks again for a key already answered gets that
  answer, never a second request.
* the outcome is stored: a result (tool errors included: ``isError`` is a result) makes the task
  ``completed``; a JSON-RPC error makes it ``failed`` with that error. ``tasks/cancel`` marks a
  running task ``cancelled`` and cancels its handler (a synchronous handler sees
  ``ctx.cancelled``); on a finished task it is a no-op. Every ack is an empty complete result.
* progress inside a task is not sent as notifications (the extension forbids them); the
  message (or "N of M") becomes the task's ``statusMessage``, and ``notifications/tasks`` goes to
  any ``subscriptions/listen`` stream that asked for the task's id.

Storage is bounded. At most ``max_running`` tasks run at once and ``max_stored`` exist at all; a
task-capable call that finds no room runs as an ordinary call. A task lives ``ttl_seconds`` from
its creation (``ttlMs``; it is never dropped sooner, fetched or not); then it is forgotten, and a
task still running at that point is cancelled first. Task ids are 128-bit random (unguessable).
Without the extension in a request's ``_meta``, ``tasks/get``, ``tasks/update`` and ``tasks/cancel``
are -32021, and so is a call to a ``task="required"`` tool (legacy-era clients included: they
have no way to declare it). The server declares ``extensions: {"io.modelcontextprotocol/tasks": {}}``
in ``server/discover`` when a tool supports tasks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..core.context import cancel_task_context, offer_task
from ..core.errors import InternalError, InvalidParams, MethodNotFound, MissingRequiredClientCapability, ProtocolError, clip
from ..core.wire import encode_message
from ..layers.records import FrozenRecord
from .mrtr import InputRequired, check_client_can_answer, check_input_request, parse_input_responses, validate_input_response

if TYPE_CHECKING:
    from ..core.context import RequestContext
    from ..core.dispatcher import Handler
    from ..server import Server
    from ..core.session import Session
    from ..core.wire import Request

log = logging.getLogger("mcp_ref.tasks")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_SUPPORT = ("optional", "required")
TERMINAL = frozenset({"completed", "failed", "cancelled"})
# A task whose handler keeps re-raising InputRequired with state only (nothing to ask) is failed
# after this many rounds in a row: it would otherwise spin without ever waiting for the client.
MAX_STATE_ONLY_ROUNDS = 16
# At shutdown, how long cancelled task handlers get to unwind.
CLOSE_SECONDS = 2.0


class TaskSettings(FrozenRecord):
    """How a server runs tasks. ``Server(task_settings=TaskSettings(...))``.

    * ``ttl_seconds``: how long a task is kept from its creation (``ttlMs``), finished or not.
    * ``poll_interval_ms``: the polling interval suggested to clients (``pollIntervalMs``).
    * ``answer_within_seconds``: a task-capable call that finishes within this is answered
      directly, without a task (0: every such call from a declaring client becomes a task).
    * ``max_running`` / ``max_stored``: tasks running at once / kept at all; a call that finds no
      room runs as an ordinary call.

    Immutable; equal (and hashed) by its fields (a ``FrozenRecord``).
    """

    __slots__ = ("ttl_seconds", "poll_interval_ms", "answer_within_seconds", "max_running", "max_stored")

    ttl_seconds: float
    poll_interval_ms: int
    answer_within_seconds: float
    max_running: int
    max_stored: int

    def __init__(self, ttl_seconds: float = 3600.0, poll_interval_ms: int = 500, answer_within_seconds: float = 0.1,
                 max_running: int = 64, max_stored: int = 1000) -> None:
        if not (0 < ttl_seconds < 10**9) or not (0 <= answer_within_seconds < 10**9):
            raise ValueError("TaskSettings: ttl_seconds must be positive and finite, answer_within_seconds at least 0")
        if isinstance(poll_interval_ms, bool) or not isinstance(poll_interval_ms, int) or poll_interval_ms < 1:
            raise ValueError("TaskSettings: poll_interval_ms must be a positive integer (milliseconds)")
        if max_running < 1 or max_stored < max_running:
            raise ValueError("TaskSettings: max_running must be at least 1 and max_stored at least max_running")
        for name, value in zip(self.__slots__, (ttl_seconds, poll_interval_ms, answer_within_seconds, max_running, max_stored)):
            object.__setattr__(self, name, value)


def client_supports_tasks(capabilities: dict[str, Any]) -> bool:
    """Did this request's client capabilities declare the tasks extension?"""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def missing_tasks_extension(what: str, *, legacy: bool = False) -> MissingRequiredClientCapability:
    """-32021 naming the tasks extension, for ``what`` (a method, or a tool that needs a task)."""
    why = (
        "which only MCP 2026-07-28 clients can declare (in a request's _meta clientCapabilities.extensions)"
        if legacy
        else "which this request's _meta clientCapabilities.extensions did not declare"
    )
    return MissingRequiredClientCapability({"extensions": {TASKS_EXTENSION: {}}}, f"{what} needs the {TASKS_EXTENSION} extension, {why}")


def _timestamp(seconds: float) -> str:
    """ISO 8601, UTC, millisecond precision: ``2026-12-01T10:30:00.123Z``."""
    from datetime import datetime, timezone  # on first use: a server without tasks never pays for it

    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Task:
    """One task: its status, what it waits for, and its outcome. Changed only on the event loop."""

    def __init__(self, store: TaskStore, task_id: str, client_capabilities: dict[str, Any]) -> None:
        self._store = store
        self.id = task_id
        self.client_capabilities = client_capabilities
        self.created = time.time()
        self.expires = time.monotonic() + store.settings.ttl_seconds
        self.updated = self.created
        self.status = "working"
        self.status_message: str | None = None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.input_requests: dict[str, dict[str, Any]] = {}  # outstanding, by key
        self.issued: set[str] = set()  # every key ever asked in this task (a key is never reused)
        self.answers: dict[str, dict[str, Any]] = {}  # validated answers so far, by key
        self.state: Any = None  # the handler's state from its last InputRequired
        self.context: RequestContext | None = None  # the running round's context (for ctx.cancelled)
        self._answered = asyncio.Event()
        self.driver: asyncio.Task[None] | None = None  # runs the handler's rounds (``start``)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def handle(self) -> dict[str, Any]:
        """The ``Task`` fields: what ``CreateTaskResult`` carries, and every ``tasks/get`` starts with."""
        settings = self._store.settings
        task: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": _timestamp(self.created),
            "lastUpdatedAt": _timestamp(self.updated),
            "ttlMs": int(settings.ttl_seconds * 1000),
            "pollIntervalMs": settings.poll_interval_ms,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        return task

    def detailed(self) -> dict[str, Any]:
        """The ``DetailedTask`` of ``tasks/get`` and ``notifications/tasks``: the handle plus what
        the status calls for (outstanding ``inputRequests``, the ``result``, or the ``error``)."""
        task = self.handle()
        if self.status == "input_required":
            task["inputRequests"] = dict(self.input_requests)
        elif self.status == "completed":
            task["result"] = self.result
        elif self.status == "failed":
            task["error"] = self.error
        return task

    # --- transitions ------------------------------------------------------------------------------

    def _changed(self, status: str | None = None) -> None:
        if status is not None:
            if self.terminal:  # completed, failed and cancelled are final
                log.error("task %s: ignoring a change from %s to %s", self.id, self.status, status)
                return
            self.status = status
        self.updated = time.time()
        # A new status message alone may be shed under backpressure; a new status never is.
        self._store.changed(self, optional=status is None)

    def set_status_message(self, message: str) -> None:
        """A new ``statusMessage`` (progress, from ``ctx.report_progress`` in a task)."""
        if not self.terminal and message != self.status_message:
            self.status_message = message
            self._changed()

    def update(self, responses: Any) -> None:
        """``tasks/update``: take the answers to outstanding keys (-32602 if one is malformed;
        then none is taken). Others are ignored. With every key answered the handler runs again."""
        responses = parse_input_responses({"inputResponses": responses})
        if self.status != "input_required":
            return
        accepted = {
            key: validate_input_response(key, self.input_requests[key], response)
            for key, response in responses.items()
            if key in self.input_requests
        }
        if not accepted:
            return
        self.answers.update(accepted)
        for key in accepted:
            del self.input_requests[key]
        if not self.input_requests:
            self.status_message = None
            self._changed("working")
            self._answered.set()
        else:
            self._changed()

    def cancel(self) -> None:
        """``tasks/cancel``: a running task is cancelled (its handler too); a finished one stays as it is."""
        if self.terminal:
            return
        if self.context is not None:
            cancel_task_context(self.context)
        if self.driver is not None:
            self.driver.cancel()
        self.input_requests.clear()
        self._changed("cancelled")

    # --- running ----------------------------------------------------------------------------------

    def start(
        self,
        first_round: asyncio.Future[dict[str, Any]],
        next_round: Callable[[Task], Awaitable[dict[str, Any]]],
        complete: Callable[[dict[str, Any]], dict[str, Any]],
        error_for: Callable[[BaseException], ProtocolError],
    ) -> None:
        """Drive the handler to an outcome: ``first_round`` is the call's handler, already running;
        ``next_round`` runs it again (with this task's answers and state) after input arrived."""
        self.driver = asyncio.ensure_future(self._drive(first_round, next_round, complete, error_for))

    async def _drive(self, round_: asyncio.Future[dict[str, Any]], next_round: Any, complete: Any, error_for: Any) -> None:
        state_only_rounds = 0
        try:
            while True:
                try:
                    result = await round_
                except InputRequired as needed:
                    if self.terminal:  # cancelled (or expired) meanwhile: nothing more runs
                        return
                    self._carry_answers()
                    problem = self._ask(needed)
                    if problem is not None:
                        self._fail(problem)
                        return
                    if needed.requests:
                        state_only_rounds = 0
                        self._changed("input_required")
                        await self._answered.wait()
                        self._answered.clear()
                    else:
                        state_only_rounds += 1
                        if state_only_rounds > MAX_STATE_ONLY_ROUNDS:
                            self._fail(InternalError(f"Internal error: the tool re-ran {MAX_STATE_ONLY_ROUNDS} times without finishing"))
                            return
                    round_ = asyncio.ensure_future(next_round(self))
                    continue
                if self.terminal:
                    return
                try:
                    completed = complete(result)
                    encode_message({"result": completed})  # as tasks/get will send it
                except (TypeError, ValueError, RecursionError) as exc:
                    log.error("task %s: the result cannot be sent as JSON: %s", self.id, exc)
                    self._fail(InternalError("Internal error: the tool's result could not be encoded as JSON"))
                    return
                self.result = completed
                self._changed("completed")
                return
        except asyncio.CancelledError:
            if not round_.done():
                round_.cancel()
            if self.terminal:
                return  # cancelled by tasks/cancel, expiry or shutdown: the status says so already
            # Raised inside the handler, not by us: a failure like any other.
            self._fail(InternalError("Internal error: the tool was interrupted"))
        except (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
            if not self.terminal:
                self._fail(error_for(exc))

    def _carry_answers(self) -> None:
        """Answers the round's handler accepted (``ctx.ask``) stay with the task for later rounds."""
        if self.context is not None:
            self.answers.update(self.context.answered)
            self.issued.update(self.context.answered)

    def _ask(self, needed: InputRequired) -> ProtocolError | None:
        """Check a handler's ``InputRequired`` inside a task; take it, or say why the task fails."""
        for key, input_request in needed.requests.items():
            try:
                check_input_request(input_request)
            except ValueError as exc:
                log.error("task %s: the tool built a malformed input request %r: %s", self.id, key, exc)
                return InternalError("Internal error: the tool built a malformed input request")
            if key in self.issued:
                log.error("task %s: the tool asked again for input key %r, already answered", self.id, key)
                return InternalError(f"Internal error: the tool asked again for input {clip(key)!r}, which was already answered")
        try:
            check_client_can_answer(needed.requests, self.client_capabilities)
        except ProtocolError as exc:
            return exc
        self.issued.update(needed.requests)
        self.input_requests = dict(needed.requests)
        self.state = needed.state
        return None

    def _fail(self, error: ProtocolError) -> None:
        if not self.terminal:
            self.error = error.to_error()
            self.status_message = error.message
            self._changed("failed")


class TaskStore:
    """One connection's tasks (its ``Session`` owns them): bounded, expiring, looked up by id.
    Event-loop thread only."""

    def __init__(self, settings: TaskSettings | None = None, on_change: Callable[[Task, bool], Any] | None = None) -> None:
        self.settings = settings or TaskSettings()
        self._tasks: OrderedDict[str, Task] = OrderedDict()  # creation order = expiry order
        self._running: set[str] = set()
        self._reserved = 0  # task-capable calls in their answer-directly window
        # notifications/tasks (the session's subscriptions): on_change(task, optional)
        self.on_change = on_change

    def __len__(self) -> int:
        return len(self._tasks)

    def __contains__(self, task_id: object) -> bool:
        self._expire()
        return task_id in self._tasks

    def reserve(self) -> bool:
        """Room for one more task? If so it is held until ``create`` or ``release``."""
        self._expire()
        running, stored = len(self._running) + self._reserved, len(self._tasks) + self._reserved
        if running >= self.settings.max_running or stored >= self.settings.max_stored:
            return False
        self._reserved += 1
        return True

    def release(self) -> None:
        """A reserved call finished without becoming a task."""
        self._reserved -= 1

    def create(self, client_capabilities: dict[str, Any], status_message: str | None = None) -> Task:
        """Store a new working task (in a reserved place) and return it."""
        import secrets  # on first use, like datetime above

        task_id = secrets.token_urlsafe(16)
        task = Task(self, task_id, client_capabilities)
        task.status_message = status_message
        self._tasks[task_id] = task
        self._running.add(task_id)
        self._reserved -= 1
        # Forgotten (and cancelled, if still running) at its TTL even if nobody asks meanwhile.
        asyncio.get_running_loop().call_later(self.settings.ttl_seconds + 0.001, self._expire)
        return task

    def get(self, task_id: Any) -> Task:
        """The task with this id; -32602 when there is none (never created, or expired)."""
        if not isinstance(task_id, str):
            raise InvalidParams("taskId must be a string")
        self._expire()
        task = self._tasks.get(task_id)
        if task is None:
            raise InvalidParams("Task not found: no task has this id, or it expired", {"taskId": clip(task_id)})
        return task

    def _expire(self) -> None:
        now = time.monotonic()
        while self._tasks:
            task = next(iter(self._tasks.values()))
            if task.expires > now:
                return
            del self._tasks[task.id]
            if not task.terminal:
                log.info("task %s expired while still running; cancelling it", task.id)
                task.cancel()
            self._running.discard(task.id)

    def changed(self, task: Task, optional: bool = False) -> None:
        """``task`` changed (its status, or only its status message when ``optional``): a
        finished one no longer counts as running, and listeners hear of it."""
        if task.terminal:
            self._running.discard(task.id)
        if self.on_change is not None:
            try:
                self.on_change(task, optional)
            except Exception:  # a listener's trouble never changes a task
                log.exception("task %s: sending notifications/tasks failed", task.id)

    async def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Shutdown: cancel every running task and wait (at most ``timeout``) for the handlers to
        unwind; one that swallows its cancellation is left behind, never waited for forever."""
        running = [task for task in self._tasks.values() if not task.terminal]
        for task in running:
            task.cancel()
        drivers = [task.driver for task in running if task.driver is not None and not task.driver.done()]
        if drivers:
            await asyncio.wait(drivers, timeout=timeout)


# --- the methods ----------------------------------------------------------------------------------


def _task_for(server: Server, ctx: RequestContext, params: dict[str, Any], method: str) -> Task:
    if not server.offers_tasks:
        raise MethodNotFound(f"Method not found: {method} (this server offers no tasks)", {"method": method})
    if not client_supports_tasks(ctx.client_capabilities):
        raise missing_tasks_extension(method)
    return ctx.connection.tasks.get(params.get("taskId"))  # only this connection's tasks


async def get_task(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``tasks/get``: the task's current ``DetailedTask``."""
    return _task_for(server, ctx, params, "tasks/get").detailed()


async def update_task(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``tasks/update``: answers to the task's outstanding input requests; an empty ack."""
    task = _task_for(server, ctx, params, "tasks/update")
    if not isinstance(params.get("inputResponses"), dict):
        raise InvalidParams("tasks/update needs inputResponses, an object mapping input request keys to results")
    task.update(params["inputResponses"])
    return {}


async def cancel_task(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``tasks/cancel``: cancel a running task; an empty ack (also for a task already finished)."""
    _task_for(server, ctx, params, "tasks/cancel").cancel()
    return {}


# --- a tools/call that may become a task (the dispatcher's hook) ----------------------------------


def may_become_task(session: Session, request: Request, context: RequestContext, modern: bool) -> bool:
    """May this ``tools/call`` become a task? Its tool was registered with ``task=``, the request's
    ``_meta`` declares the extension, and the store has room (a place is then reserved).

    A ``task="required"`` tool called without the extension in the request's ``_meta`` is
    -32021 (a legacy client cannot declare it), before its handler runs.
    """
    name = request.params.get("name")
    tool = session.server.tools.get(name) if isinstance(name, str) else None
    if tool is None or tool.task is None:
        return False
    if modern and client_supports_tasks(context.client_capabilities):
        return session.tasks.reserve()
    if tool.task == "required":
        raise missing_tasks_extension(f"The tool {tool.name!r} runs only as a task: calling it", legacy=not modern)
    return False


async def call_maybe_as_task(session: Session, handler: Handler, request: Request, context: RequestContext,
                             complete: Callable[[Server, str, dict[str, Any]], dict[str, Any]],
                             error_for: Callable[[BaseException, bool, str], ProtocolError]) -> dict[str, Any]:
    """Run a task-capable ``tools/call`` (a task place is reserved): its result if it finishes
    within ``answer_within_seconds`` and the handler did not ask for a task, else a
    ``CreateTaskResult`` while the handler runs on as that task."""
    server = session.server
    store = session.tasks
    wanted = asyncio.Event()
    status: list[str | None] = [None]
    task: Task | None = None

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

        session.on_loop(on_loop)

    offer_task(context, request_task)
    work: asyncio.Future[dict[str, Any]] | None = None
    try:
        async with session.slots:
            work = asyncio.ensure_future(handler(server, context, request.params))
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
            offer_task(context, None)
            if work is not None and not work.done():
                work.cancel()  # the request itself was cancelled
    try:
        _detach(session, task, context, work, request, handler, lambda result: complete(server, "tools/call", result),
                lambda exc: error_for(exc, True, "tools/call"))
    except BaseException:
        task.cancel()  # never a stored task nobody drives
        raise
    log.info("tools/call %r (id %r) continues as task %s", request.params.get("name"), clip(request.id), task.id)
    return {"resultType": "task", **task.handle()}


def _detach(session: Session, task: Task, context: RequestContext, work: asyncio.Future[dict[str, Any]], request: Request,
            handler: Handler, complete: Callable[[dict[str, Any]], dict[str, Any]], error_for: Callable[[BaseException], ProtocolError]) -> None:
    """Hand a running ``tools/call`` over to its task: progress becomes the task's status
    message, and after client input the handler runs again with the task's answers."""
    from ..core.context import RequestContext, serve_as_task

    params = {name: value for name, value in request.params.items() if name not in ("inputResponses", "requestState")}

    def status_of(ctx: RequestContext) -> None:
        def report(message: str) -> None:
            session.on_loop(task.set_status_message, message)

        serve_as_task(ctx, task.id, report)
        task.context = ctx

    status_of(context)
    # What the call learnt through MRTR before it became a task carries on into the task:
    # the retry's answers (validated again when asked, as in MRTR) and the handler's state.
    carried = dict(context.input_responses)
    task.answers.update(context.answered)
    task.issued.update(carried)
    task.state = context.state

    async def next_round(task: Task) -> dict[str, Any]:
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
        status_of(ctx)
        return await handler(session.server, ctx, params)

    task.start(work, next_round, complete, error_for)
