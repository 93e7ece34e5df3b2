"""The per-request context a handler receives, and the rate limits requests are held to.

It tells the handler who is asking (client capabilities and info, from this request's ``_meta``
in the modern era or from ``initialize`` in the legacy era), lets it report progress and log
messages for *this* request, ask the client for input (MRTR), and see whether the request was
cancelled. Everything on it is scoped to one request; nothing leaks into the next one.

Every rate a request is held to lives here: its progress and log notifications are thinned
(``PROGRESS_MIN_INTERVAL_SECONDS``, ``LOG_MESSAGES_PER_SECOND``), and the requests of a method may
be paced (``RateLimit``, at the end of this module).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, NamedTuple, Protocol

from .errors import InvalidParams, UnsupportedProtocolVersion
from .meta import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, LOG_LEVEL_RANK, LOG_LEVELS, PROGRESS_TOKEN, PROTOCOL_VERSION, client_has_capability, is_log_level
from ..features.mrtr import MRTR_METHODS, InputRequired, parse_input_responses, validate_input_response
from .versions import MODERN_VERSIONS
from .wire import notification

if TYPE_CHECKING:
    from ..server import Server
    from .session import Session
    from .wire import RequestId

log = logging.getLogger("mcp_ref.requests")

# Progress notifications closer together than this are dropped (basic/patterns/progress: rate
# limit to prevent flooding). The final one (progress == total) always goes out.
PROGRESS_MIN_INTERVAL_SECONDS = 0.01
# Log notifications per request: a burst of this many, then this many per second; the rest are
# dropped (server/utilities/logging: rate limit log messages). stderr still gets every one.
LOG_MESSAGES_PER_SECOND = 100

_PYTHON_LEVEL = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class RequestContext:
    """What a handler knows about, and can do for, the request it is serving."""

    def __init__(
        self,
        *,
        request_id: RequestId,
        method: str,
        era: str,
        protocol_version: str,
        client_capabilities: dict[str, Any],
        client_info: dict[str, Any] | None,
        log_level: str | None,
        progress_token: str | int | None,
        emit: Callable[[dict[str, Any]], None],
        input_responses: Mapping[str, Any] | None = None,
        state: Any = None,
    ) -> None:
        self.request_id = request_id
        self.method = method
        self.era = era  # "modern" (2026-07-28) or "legacy" (initialize-era)
        self.protocol_version = protocol_version
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self.log_level = log_level
        self.progress_token = progress_token
        self.input_responses: Mapping[str, Any] = input_responses if input_responses is not None else {}
        self.state = state  # the handler's own state from a verified requestState, else None
        self.answered: dict[str, dict[str, Any]] = {}  # answers asked for and validated so far
        self._emit = emit
        self._finished = False
        self._cancelled = False  # (a task's own cancellation; a request's is its link's)
        self._link: RequestLink | None = None  # the request's entry in its session, once linked
        self._last_progress: float | None = None
        self._last_progress_time = 0.0
        self._log_allowance = float(LOG_MESSAGES_PER_SECOND)
        self._log_checked = time.monotonic()
        # Tasks extension (set by the dispatcher): asks for this call to become a task, when it may;
        # and, once it is one, its id and where its progress goes (the task's statusMessage).
        self._request_task: Callable[[str | None], None] | None = None
        self._task_id: str | None = None
        self._task_status: Callable[[str], None] | None = None
        self._task_requested = False  # run_as_task() was accepted: progress is no longer notified
        # Set by the dispatcher: reserves answer bytes on the connection's output budget.
        self._reserve: Callable[[int], Awaitable[None]] | None = None

    # --- lifecycle (set by the dispatcher) -------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this request; its result will be discarded."""
        return self._cancelled or (self._link is not None and self._link.cancelled)

    @property
    def connection(self) -> Session:
        """The connection this request arrived on (``mcp_ref.core.session.Session``): what the library's
        own per-connection methods (the legacy handshake, subscriptions, tasks) act on. RuntimeError
        for a context no session serves (a task's later rounds, a test's own)."""
        if self._link is None:
            raise RuntimeError(f"{self.method} (id {self.request_id!r}) is not served by a session")
        return self._link.session

    def _is_finished(self) -> bool:
        """Is the request answered (or over)? Then no progress or log notification may follow."""
        return self._finished or (self._link is not None and self._link.finished)

    def carry_progress_from(self, previous: RequestContext) -> None:
        """The same request run again (a legacy client answered its questions): progress values
        go on increasing from where the previous run left them."""
        self._last_progress = previous._last_progress
        self._last_progress_time = previous._last_progress_time

    # --- capabilities ------------------------------------------------------------------------------

    def client_supports(self, capability: str) -> bool:
        """Did this request's client declare ``capability`` (dotted: ``"sampling"``, ``"elicitation.url"``)?"""
        return client_has_capability(self.client_capabilities, capability)

    # --- progress and logging -------------------------------------------------------------------

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> bool:
        """Send ``notifications/progress`` if the request asked for it. Returns whether it was sent.

        Values must strictly increase; a value that does not is dropped, as is one sent after the
        response or too soon after the previous one (unless it completes the total). In a task,
        where progress notifications do not exist, it becomes the task's ``statusMessage``
        (``message``, else "N of M") and is sent to whoever listens for the task.
        """
        if self.cancelled or (self.progress_token is None and self._task_status is None and not self._task_requested):
            return False
        if self._last_progress is not None and progress <= self._last_progress:
            log.debug("dropping non-increasing progress %r for request %r", progress, self.request_id)
            return False
        now = time.monotonic()
        final = total is not None and progress >= total
        if not final and self._last_progress is not None and now - self._last_progress_time < PROGRESS_MIN_INTERVAL_SECONDS:
            return False
        if self._task_status is not None or self._task_requested:
            self._last_progress, self._last_progress_time = progress, now
            status = str(message) if message is not None else f"{progress:g} of {total:g}" if total is not None else f"{progress:g}"
            if self._task_status is not None:
                self._task_status(status)
            else:  # becoming a task: this is its first status message
                self._request_task(status)  # type: ignore[misc]
            return True
        if self._is_finished():
            return False
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._last_progress, self._last_progress_time = progress, now
        self._emit(notification("notifications/progress", params))
        return True

    def log(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Log for this request. Sent as ``notifications/message`` only when the request set a log
        level (modern ``_meta`` logLevel, or legacy ``logging/setLevel``) at or below ``level``;
        always written to stderr through :mod:`logging`. Returns whether a notification was sent.
        """
        if not is_log_level(level):
            raise ValueError(f"unknown log level {level!r}")
        log.log(_PYTHON_LEVEL[level], "%s%s", f"[{logger}] " if logger else "", data)
        if self.log_level is None or self._is_finished() or self.cancelled or self._task_requested or self._task_id is not None:
            return False  # (no log notifications for a task either)
        if LOG_LEVEL_RANK[level] < LOG_LEVEL_RANK[self.log_level]:
            return False
        now = time.monotonic()
        self._log_allowance = min(LOG_MESSAGES_PER_SECOND, self._log_allowance + (now - self._log_checked) * LOG_MESSAGES_PER_SECOND)
        self._log_checked = now
        if self._log_allowance < 1:
            return False
        self._log_allowance -= 1
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._emit(notification("notifications/message", params))
        return True

    # --- large answers ------------------------------------------------------------------------------

    async def reserve_output(self, nbytes: int) -> None:
        """Reserve ``nbytes`` (an estimate of this request's answer on the wire) before making a
        large answer, such as a file's base64: waits while other reserved answers on this
        connection hold the output budget (``mcp_ref.layers.outputbudget``), and holds the bytes until the
        answer has left the process (or the request ends unanswered). Call it before reading or
        building anything big, so that a client sending many such requests, and maybe never
        reading, keeps the server's memory bounded; small answers need none. Several calls add up.
        Cancel-safe; without a budget (a context not served by a dispatcher, or a call that is
        already a task, whose result waits in the task store) it returns at once."""
        if nbytes > 0 and self._reserve is not None and not self.cancelled:
            await self._reserve(nbytes)

    # --- tasks (the io.modelcontextprotocol/tasks extension) --------------------------------------

    @property
    def task_id(self) -> str | None:
        """The id of the task this handler runs in, or None while it answers its request directly."""
        return self._task_id

    def run_as_task(self, status_message: str | None = None) -> bool:
        """Answer this call with a task handle now, and keep running as that task.

        Possible for a tool registered with ``task="optional"`` or ``"required"`` whose request
        declared the tasks extension (and while the server has room for a task); returns whether
        the call is (or already was) a task. Otherwise nothing changes and the handler's result is
        the request's answer, as usual. Without this call, a task-capable call still becomes a task
        once it runs longer than ``TaskSettings.answer_within_seconds``.
        """
        if self._task_id is not None:
            return True
        if self._request_task is None:
            return False
        self._task_requested = True
        self._request_task(status_message)
        return True

    # --- multi round-trip input -------------------------------------------------------------------

    def ask(self, key: str, input_request: dict[str, Any], *, state: Any = None) -> dict[str, Any]:
        """The client's answer to ``input_request`` under ``key``, or raise ``InputRequired`` to ask for it.

        ``state`` (any JSON value) comes back as ``ctx.state`` on the retry.
        """
        return self.ask_all({key: input_request}, state=state)[key]

    def ask_all(self, input_requests: Mapping[str, dict[str, Any]], *, state: Any = None) -> dict[str, dict[str, Any]]:
        """Answers for every key, or raise ``InputRequired`` for the ones not yet answered.

        Keys the client answered but we did not ask for are ignored; a malformed answer to a key we
        asked for is -32602. Answers given in earlier rounds count too (they travel in the sealed
        ``requestState``), so a client is never asked the same key twice.
        """
        answers: dict[str, dict[str, Any]] = {}
        missing: dict[str, dict[str, Any]] = {}
        for key, input_request in input_requests.items():
            if key in self.input_responses:
                answers[key] = validate_input_response(key, input_request, self.input_responses[key])
                self.answered[key] = answers[key]
            else:
                missing[key] = input_request
        if missing:
            raise InputRequired(missing, state=state)
        return answers


# --- a modern request's context, from its own _meta ------------------------------------------------


class RequestMeta(NamedTuple):
    """What one request says about its client. Built fresh for every request."""

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None = None
    log_level: str | None = None
    progress_token: str | int | None = None


def parse_request_meta(params: dict[str, Any], advertised_versions: list[str], initialize_versions: list[str] | None = None) -> RequestMeta:
    """Validate the modern ``_meta`` of a request (basic/index#meta).

    Raises ``InvalidParams`` (-32602) when a required key is missing or mistyped, and
    ``UnsupportedProtocolVersion`` (-32022) when the version is well formed but not served
    (naming ``advertised_versions`` as supported, and any ``initialize_versions`` apart).
    """
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise InvalidParams(f"Missing params._meta: every request must carry {PROTOCOL_VERSION} and {CLIENT_CAPABILITIES}")
    version = meta.get(PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise InvalidParams(f"params._meta[{PROTOCOL_VERSION!r}] is required and must be a string")
    capabilities = meta.get(CLIENT_CAPABILITIES)
    if not isinstance(capabilities, dict):
        raise InvalidParams(f"params._meta[{CLIENT_CAPABILITIES!r}] is required and must be an object")
    if version not in MODERN_VERSIONS:
        # Legacy versions are served only through ``initialize``, never in a modern ``_meta``.
        raise UnsupportedProtocolVersion(version, advertised_versions, initialize_versions=initialize_versions)
    client_info = meta.get(CLIENT_INFO)
    if client_info is not None and not isinstance(client_info, dict):
        raise InvalidParams(f"params._meta[{CLIENT_INFO!r}] must be an object")
    log_level = meta.get(LOG_LEVEL)
    if LOG_LEVEL in meta and not is_log_level(log_level):
        raise InvalidParams(f"params._meta[{LOG_LEVEL!r}] must be one of: {', '.join(LOG_LEVELS)}")
    token = parse_progress_token(meta) if PROGRESS_TOKEN in meta else None
    return RequestMeta(version, capabilities, client_info, log_level, token)


class RequestLink(Protocol):
    """What a context reports through: the request's entry in its session (``session.InFlight``)."""

    session: Session
    context: RequestContext | None
    cancelled: bool
    finished: bool  # the request is answered (or over): nothing more may be reported for it

    def emit(self, message: dict[str, Any]) -> None: ...

    async def reserve_output(self, nbytes: int) -> None: ...


def linked(context: RequestContext, link: RequestLink) -> RequestContext:
    """``context``, reporting through ``link`` (its progress, its logs, its reserved output), and
    known to it."""
    context._emit = link.emit
    context._reserve = link.reserve_output
    context._link = link
    link.context = context
    return context


# --- what the tasks extension (``tasks``) changes on a context ------------------------------------


def offer_task(context: RequestContext, request_task: Callable[[str | None], None] | None) -> None:
    """``ctx.run_as_task()`` (and progress after it) call ``request_task(status_message)`` from now
    on; None takes the offer back (the call was answered directly)."""
    context._request_task = request_task


def serve_as_task(context: RequestContext, task_id: str, report_status: Callable[[str], None]) -> None:
    """``context`` runs as task ``task_id``: its request is answered (nothing more is notified for
    it), and progress becomes the task's status message through ``report_status``."""
    context._task_id, context._task_status = task_id, report_status
    context._finished = True


def cancel_task_context(context: RequestContext) -> None:
    """The task ``context`` runs in was cancelled (``tasks/cancel``, expiry, shutdown): a
    synchronous handler sees ``ctx.cancelled``."""
    context._cancelled = True


def modern_context(request_id: RequestId, method: str, params: dict[str, Any], server: Server, link: RequestLink) -> RequestContext:
    """Everything a 2026-07-28 request says about its client, checked: its ``_meta``
    (``parse_request_meta``) and, for ``tools/call``, ``prompts/get`` and ``resources/read``, its
    input responses and sealed ``requestState`` (basic/patterns/mrtr). Nothing is remembered
    between requests."""
    meta = parse_request_meta(params, server.supported_versions, server.initialize_versions)
    input_responses: dict[str, Any] = {}
    context = RequestContext(
        request_id=request_id,
        method=method,
        era="modern",
        protocol_version=meta.protocol_version,
        client_capabilities=meta.client_capabilities,
        client_info=meta.client_info,
        log_level=meta.log_level if server.log_messages else None,
        progress_token=meta.progress_token,
        emit=link.emit,
        input_responses=input_responses,
    )
    context._reserve, context._link, link.context = link.reserve_output, link, context  # (linked(), inline)
    if method in MRTR_METHODS and ("inputResponses" in params or "requestState" in params):
        fresh = parse_input_responses(params)
        if "requestState" in params:
            opened = server.sealer.open(params["requestState"], method, params)  # -32602 if forged
            context.state = opened.state
            input_responses.update(opened.answered)
        input_responses.update(fresh)  # this round's answers win over carried ones
    return context


def parse_progress_token(meta: Any) -> str | int | None:
    """The request's progress token, if it asked for progress (basic/patterns/progress)."""
    if not isinstance(meta, dict):
        return None
    token = meta.get(PROGRESS_TOKEN)
    if isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool)):
        return token
    if token is not None:
        raise InvalidParams("params._meta.progressToken must be a string or integer")
    return None


# --- pacing the requests of one method ------------------------------------------------------------


class RateLimit:
    """At most ``burst`` requests at once, refilled at ``per_second`` requests per second.

    Spec: server/tools#security-considerations (servers rate limit tool invocations) and
    server/utilities/completion (completion requests are rate limited). A token bucket that
    *paces* rather than refuses: the dispatcher holds a request over the limit until its turn (in
    arrival order), once its context is built and before it takes a concurrency slot, so a client
    never sees an error it could not act on; the transport's backlog bound still caps how many
    can queue up. Opt-in (``Server(rate_limits={"tools/call": RateLimit(10, burst=20)})``): a stdio
    server has exactly one client, the user's own host, which already mediates every tool call,
    so the library does not slow anyone down by default.
    """

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
