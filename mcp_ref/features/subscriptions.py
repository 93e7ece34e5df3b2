"""``subscriptions/listen``: long-lived notification streams over the shared stdio channel.

Spec: basic/patterns/subscriptions (2026-07-28).

Theory of operation
-------------------
A listen request stays in flight for as long as the subscription lives. Its id is the
subscription id. When it opens, the server first sends ``notifications/subscriptions/acknowledged``
with the subset of the requested filter it will honour (types the server cannot emit are left
out); only then may notifications for it follow. Every notification on it carries
``_meta["io.modelcontextprotocol/subscriptionId"]`` so the client can tell streams apart, and only
the types its filter asked for are sent.

It ends in one of two ways. The client sends ``notifications/cancelled`` for the listen id: the
stream stops and, as for any cancelled request, no response is sent. Or the server shuts down
(EOF on stdin, a signal): each open subscription then gets a successful response carrying its
subscription id -- the "graceful closure" -- before the process exits.

Streams are meant to stay open, so what they hold is bounded: at most ``MAX_OPEN_SUBSCRIPTIONS``
streams, and at most ``MAX_SUBSCRIBED_URIS`` resource URIs across all of them and the legacy
``resources/subscribe`` set together, each URI at most ``MAX_URI_LENGTH`` characters; both bounds
are per connection, as the streams are (each ``Session`` owns its ``SubscriptionHub``). A listen
over a bound is refused before anything is registered. The hub counts what open streams hold, so
``Server.watched`` (the ``WatchSet`` given to watch hooks, see ``watch``) costs no scan of them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

from ..core.errors import InternalError, InvalidParams, clip
from ..core.meta import SUBSCRIPTION_ID
from .resources import MAX_URI_LENGTH
from .tasks import client_supports_tasks, missing_tasks_extension
from ..core.wire import notification, request_key

if TYPE_CHECKING:
    from ..core.context import RequestContext
    from ..server import Server
    from ..core.session import Session
    from .tasks import TaskStore
    from ..core.wire import RequestId

# Filter field -> (list kind, notification method).
LIST_CHANGED_FIELDS: dict[str, tuple[str, str]] = {
    "toolsListChanged": ("tools", "notifications/tools/list_changed"),
    "promptsListChanged": ("prompts", "notifications/prompts/list_changed"),
    "resourcesListChanged": ("resources", "notifications/resources/list_changed"),
}
LIST_CHANGED_METHOD = {kind: method for kind, method in LIST_CHANGED_FIELDS.values()}
# Open streams never count toward the transport's backlog (they are meant to stay open), so they
# have a bound of their own: a denial-of-service guard, far above what a host opens.
MAX_OPEN_SUBSCRIPTIONS = 1024
# Resource URIs held by all open streams and the legacy subscribe set together (each stream's own
# list counts; a URI two streams hold counts twice). A memory guard like the one above.
MAX_SUBSCRIBED_URIS = 10_000
RESOURCE_UPDATED = "notifications/resources/updated"
TASK_STATUS = "notifications/tasks"


def parse_filter(params: dict[str, Any]) -> dict[str, Any]:
    """The ``notifications`` filter of a listen request, type-checked (-32602 when malformed)."""
    requested = params.get("notifications")
    if not isinstance(requested, dict):
        raise InvalidParams('subscriptions/listen needs "notifications", an object (the subscription filter)')
    for name in LIST_CHANGED_FIELDS:
        if name in requested and not isinstance(requested[name], bool):
            raise InvalidParams(f'"notifications.{name}" must be a boolean')
    uris = requested.get("resourceSubscriptions")
    if uris is not None and not (isinstance(uris, list) and all(isinstance(u, str) for u in uris)):
        raise InvalidParams('"notifications.resourceSubscriptions" must be an array of URI strings')
    for uri in uris or ():
        check_uri_length(uri)
    task_ids = requested.get("taskIds")  # the tasks extension's filter field
    if task_ids is not None and not (isinstance(task_ids, list) and all(isinstance(t, str) for t in task_ids)):
        raise InvalidParams('"notifications.taskIds" must be an array of task id strings')
    return requested


def check_uri_length(uri: str) -> None:
    """-32602 for a subscribed URI longer than ``MAX_URI_LENGTH`` (no resource URI comes near it)."""
    if len(uri) > MAX_URI_LENGTH:
        raise InvalidParams(f"Subscribed URI longer than {MAX_URI_LENGTH} characters", {"uri": clip(uri)})


def check_room_for_uris(session: Session, count: int) -> None:
    """-32602 unless ``count`` more subscribed URIs fit within ``MAX_SUBSCRIBED_URIS`` (this
    connection's streams and legacy subscriptions together)."""
    held = session.subscriptions.uri_total + len(session.legacy.subscribed_uris)
    if held + count > MAX_SUBSCRIBED_URIS:
        raise InvalidParams(
            f"Too many subscribed resource URIs: the server holds at most {MAX_SUBSCRIBED_URIS} across all "
            f"subscriptions, {held} are held and this request adds {count}; subscribe to fewer URIs or end a subscription first",
            {"limit": MAX_SUBSCRIBED_URIS, "held": held, "requested": count},
        )


class Subscription:
    """One open stream: what it honours, and the future that ends it gracefully."""

    def __init__(self, id: RequestId, honoured: dict[str, Any], closed: asyncio.Future[None]) -> None:
        self.id = id
        self.honoured = honoured
        self.closed = closed
        self.task_ids = frozenset(honoured.get("taskIds", ()))

    def wants_list(self, kind: str) -> bool:
        return any(self.honoured.get(name) for name, (k, _) in LIST_CHANGED_FIELDS.items() if k == kind)

    def wants_uri(self, uri: str) -> bool:
        return uri in self.honoured.get("resourceSubscriptions", ())

    def wants_task(self, task_id: str) -> bool:
        return task_id in self.task_ids

    @property
    def uris(self) -> list[str]:
        """The URIs this stream holds (honoured, each once)."""
        uris: list[str] = self.honoured.get("resourceSubscriptions", [])
        return uris

    @property
    def lists(self) -> list[str]:
        """The list kinds whose changes this stream gets."""
        return [kind for name, (kind, _) in LIST_CHANGED_FIELDS.items() if self.honoured.get(name)]


class SubscriptionHub:
    """One connection's open subscriptions (its ``Session`` owns them), and the fan-out of change
    events to the ones whose filter matches. ``emit`` sends a notification (thread-safe);
    ``emit_optional`` one the output may shed under backpressure. Without ``emit`` nothing is sent."""

    def __init__(self, emit: Callable[[dict[str, Any]], None] | None = None,
                 emit_optional: Callable[[dict[str, Any]], None] | None = None) -> None:
        self._open: dict[Any, Subscription] = {}
        self._emit = emit
        self._emit_optional = emit_optional
        self._task_listeners = 0  # open streams with task ids (most servers have none)
        # What the open streams hold, counted per stream (for WatchSet and MAX_SUBSCRIBED_URIS).
        self._uri_refs: Counter[str] = Counter()
        self._list_refs: Counter[str] = Counter()
        self.uri_total = 0

    def __len__(self) -> int:
        return len(self._open)

    def open(self, request_id: RequestId, honoured: dict[str, Any]) -> Subscription:
        """Register a stream and send its acknowledgement, which must precede anything else on it."""
        subscription = Subscription(request_id, honoured, asyncio.get_running_loop().create_future())
        self._send(subscription, "notifications/subscriptions/acknowledged", {"notifications": honoured})
        self._open[request_key(request_id)] = subscription
        self._task_listeners += bool(subscription.task_ids)
        self._uri_refs.update(subscription.uris)
        self._list_refs.update(subscription.lists)
        self.uri_total += len(subscription.uris)
        return subscription

    def discard(self, request_id: RequestId, subscription: Subscription | None = None) -> None:
        """Forget a stream (its request ended or was cancelled): nothing more is sent for it.

        With ``subscription``, only that stream: the id may already belong to a newer listen (a
        cancelled request's id is free for reuse at once).
        """
        key = request_key(request_id)
        if subscription is not None and self._open.get(key) is not subscription:
            return
        subscription = self._open.pop(key, None)
        if subscription is not None:
            self._task_listeners -= bool(subscription.task_ids)
            _release(self._uri_refs, subscription.uris)
            _release(self._list_refs, subscription.lists)
            self.uri_total -= len(subscription.uris)

    def watched_uris(self) -> frozenset[str]:
        """Every URI some open stream is subscribed to."""
        return frozenset(self._uri_refs)

    def watched_lists(self) -> frozenset[str]:
        """Every list kind whose changes some open stream gets."""
        return frozenset(self._list_refs)

    def close_all(self) -> None:
        """Ask every open stream to end gracefully (server shutdown)."""
        for subscription in list(self._open.values()):
            if not subscription.closed.done():
                subscription.closed.set_result(None)

    def list_changed(self, kind: str) -> int:
        """Send ``notifications/<kind>/list_changed`` on every stream that asked for it. Returns how many."""
        method = LIST_CHANGED_METHOD[kind]
        targets = [s for s in self._open.values() if s.wants_list(kind)]
        for subscription in targets:
            self._send(subscription, method, {})
        return len(targets)

    def resource_updated(self, uri: str) -> int:
        """Send ``notifications/resources/updated`` on every stream subscribed to ``uri``."""
        targets = [s for s in self._open.values() if s.wants_uri(uri)]
        for subscription in targets:
            self._send(subscription, RESOURCE_UPDATED, {"uri": uri})
        return len(targets)

    def task_changed(self, task: Any, optional: bool = False) -> int:
        """Send ``notifications/tasks`` (the task's ``DetailedTask``) on every stream that asked for
        the task's id (tasks extension). ``optional``: only the status message changed, so under
        backpressure the notification may be shed (a later one carries the newer state anyway).
        Returns how many."""
        if not self._task_listeners:
            return 0
        targets = [s for s in self._open.values() if s.wants_task(task.id)]
        if targets:
            detailed = task.detailed()
            for subscription in targets:
                self._send(subscription, TASK_STATUS, detailed, optional=optional)
        return len(targets)

    def _send(self, subscription: Subscription, method: str, params: dict[str, Any], *, optional: bool = False) -> None:
        emit = self._emit_optional if optional and self._emit_optional is not None else self._emit
        if emit is None:
            return
        params = {"_meta": {SUBSCRIPTION_ID: subscription.id}, **params}
        emit(notification(method, params))


def _release(counts: Counter[str], keys: list[str]) -> None:
    for key in keys:
        counts[key] -= 1
        if not counts[key]:
            del counts[key]


def honoured_filter(server: Server, tasks: TaskStore, requested: dict[str, Any]) -> dict[str, Any]:
    """The part of a subscription filter ``server`` will honour (for the acknowledgement): the
    lists it announces, URIs if it offers resource subscriptions, and ids of ``tasks`` that exist."""
    honoured: dict[str, Any] = {}
    for name, (kind, _) in LIST_CHANGED_FIELDS.items():
        if requested.get(name) is True and kind in server.list_changed_kinds:
            honoured[name] = True
    uris = requested.get("resourceSubscriptions")
    if uris and server.resource_subscriptions:
        honoured["resourceSubscriptions"] = list(dict.fromkeys(uris))
    task_ids = requested.get("taskIds")
    if task_ids:  # tasks extension: the ids of tasks that exist (an unknown id gets nothing)
        honoured["taskIds"] = [task_id for task_id in dict.fromkeys(task_ids) if task_id in tasks]
    return honoured


async def listen(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``subscriptions/listen``: acknowledge, then stay open until cancelled or shut down."""
    requested = parse_filter(params)
    if "taskIds" in requested and not client_supports_tasks(ctx.client_capabilities):
        raise missing_tasks_extension("subscriptions/listen with notifications.taskIds")
    session = ctx.connection
    hub = session.subscriptions
    honoured = honoured_filter(server, session.tasks, requested)
    if len(hub) >= MAX_OPEN_SUBSCRIPTIONS:
        raise InternalError(f"Too many open subscriptions (at most {MAX_OPEN_SUBSCRIPTIONS}); cancel one first")
    check_room_for_uris(session, len(honoured.get("resourceSubscriptions", ())))
    subscription = hub.open(ctx.request_id, honoured)
    try:
        session.watch_changed()  # after the acknowledgement
        await subscription.closed
    finally:
        hub.discard(ctx.request_id, subscription)
        session.watch_changed()
    return {"_meta": {SUBSCRIPTION_ID: ctx.request_id}}
