"""The control lane: the messages that do no user work, and so never wait behind it.

Spec: basic/transports/stdio; basic/index#notifications and basic/patterns/cancellation#error-handling
for the notifications the server acts on.

Theory of operation
-------------------
Tool calls, prompts, resource reads and completions run the server author's code and may take
long; they share ``max_concurrency`` handler slots, and a flood of them is held back by the
transport's budgets, unread. Everything else a client sends is bookkeeping the library answers
at once from its own state: the health check (``ping``, ``server/discover``), the lists, the
tasks extension's ``tasks/*`` and, in the legacy era, ``initialize``. Those are the **control
lane** (``CONTROL_LANE``). They take no handler slot (``dispatcher._run``), and while input is
held back the transport takes them out of it, ahead of their turn (``Session._take_ahead``
asks ``Session.may_overtake``, which applies ``OVERTAKING``), at most ``CONTROL_LANE_LIMIT``
at a time; cancellations of requests in flight overtake the same way. So a host's health check
is answered in milliseconds whatever the backlog, and memory stays bounded: only small lines
(``wire.AHEAD_MAX_BYTES``) overtake, and none while the client leaves its answers unread.

``initialize`` is in the lane (it takes no slot) but keeps its place in held input: it decides
how the requests sent before it are served (the era, the negotiated version). A
``resources/list`` calls the author's resource listers, which must be quick (a synchronous one
shares the handler threads with the tools).

A notification is never answered, however malformed: ``notification_problem`` says why one the
server acts on is unusable, and the dispatcher logs it and ignores it.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .wire import CANCELLED, RequestId, is_valid_id

# Requests that do no user work (see the module docstring).
CONTROL_LANE = frozenset(
    {
        "ping",
        "initialize",
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
    }
)
# What may overtake held input: the lane's requests but initialize (it decides how the requests
# sent before it are served: the era, the negotiated version; so it keeps its place), and the two
# notifications whose effect does not depend on their place (a cancellation names a request in
# flight already; notifications/initialized is only recorded).
OVERTAKING_REQUESTS = CONTROL_LANE - {"initialize"}
OVERTAKING_NOTIFICATIONS = frozenset({CANCELLED, "notifications/initialized"})
OVERTAKING = OVERTAKING_REQUESTS | OVERTAKING_NOTIFICATIONS


@functools.cache
def overtaking_pattern() -> re.Pattern[bytes]:
    """What WireReader.take_ahead searches held input for: any of OVERTAKING as a JSON string, the
    method's value ("ping" in a tool's arguments is a false hit: that line is parsed and left).
    Compiled on first use (~0.2 ms that a session whose input is never held does not spend)."""
    return re.compile(b'"(?:' + b"|".join(re.escape(m.encode()) for m in sorted(OVERTAKING, key=len, reverse=True)) + b')"')


# Requests of the control lane in flight at once, beyond which held input is not searched for
# more (it is looked at again as they finish). Each is a small line (wire.AHEAD_MAX_BYTES).
CONTROL_LANE_LIMIT = 64


def notification_problem(method: str, params: dict[str, Any]) -> str | None:
    """Why a notification the server acts on is malformed, or None: such a notification is ignored
    and logged, never answered (basic/patterns/cancellation#error-handling: invalid cancellations
    SHOULD be ignored). The others (roots/list_changed, progress, ...) are ignored anyway."""
    if method not in (CANCELLED, "notifications/initialized"):
        return None
    if not isinstance(params.get("_meta", {}), dict):
        return '"_meta" is not an object'
    if method == CANCELLED:
        if not is_valid_id(params.get("requestId")):
            return '"requestId" is missing or not a string or integer'
        if not isinstance(params.get("reason", ""), str):
            return '"reason" is not a string'
    return None


def cancelled_request(params: dict[str, Any]) -> RequestId | None:
    """The request a ``notifications/cancelled`` names, or None when the notification is malformed."""
    return None if notification_problem(CANCELLED, params) else params["requestId"]
