"""The legacy (initialize-era) protocol, for hosts that still speak 2025-11-25 and earlier.

Spec: 2026-07-28 basic/versioning#backward-compatibility-with-initialization-based-versions and
basic/transports/stdio#backward-compatibility; 2025-11-25 basic/lifecycle, basic/utilities/ping,
server/resources#subscriptions, server/utilities/logging.

Theory of operation
-------------------
An ``initialize`` request *without* modern ``_meta`` switches legacy semantics on for this connection
(its ``LegacySession``, which the connection's ``session.Session`` owns):
we answer with the negotiated version, and from then on requests that carry no modern ``_meta``
are served as that version -- ``ping``, ``logging/setLevel``, ``resources/subscribe`` included.
The era is still decided per request: a request with modern ``_meta`` is always served as
2026-07-28, before or after an ``initialize``, and a malformed first message locks nothing.

Legacy results are shaped for the negotiated version (``to_legacy_result``): no ``resultType``,
``ttlMs``, ``cacheScope`` or ``serverInfo`` ``_meta``; fields newer than the negotiated version are
removed where an older client could choke on them:

=============  =======================================================================
older than     what is removed or rewritten
=============  =======================================================================
(all legacy)   a tool ``outputSchema`` whose root is not ``type: object``, and a
               ``structuredContent`` that is not an object (2025-11-25 allowed only
               objects; the text content still carries the value)
2025-11-25     ``icons`` (tools, prompts, resources, templates, serverInfo)
2025-06-18     ``title`` (everywhere), tool ``outputSchema``, ``structuredContent``;
               ``resource_link`` content becomes a text block naming the URI
2025-03-26     tool ``annotations``; ``audio`` content becomes a text block;
               the ``completions`` capability
=============  =======================================================================

A handler that needs client input (MRTR) gets it from a legacy client through server-to-client
requests (``outgoing``, driven by the dispatcher) when the client declared the capability and its
version can carry the request; otherwise tools answer with a tool error saying what is needed,
other methods with -32603 and the same explanation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.errors import InvalidParams
from ..core.meta import LOG_LEVELS, SERVER_INFO, is_log_level
from .subscriptions import check_room_for_uris, check_uri_length
from ..core.versions import negotiate_legacy_version

if TYPE_CHECKING:
    from ..core.context import RequestContext, RequestLink
    from .legacyinput import LegacyRounds
    from ..server import Server
    from ..core.session import Session
    from ..core.wire import Request

LEGACY_ONLY_METHODS = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})


class LegacySession:
    """What the legacy era remembers of one connection (2025-11-25 lifecycle): the ``initialize``
    handshake, the log level, the subscribed URIs. Owned by that connection's ``Session``."""

    def __init__(self) -> None:
        self.version: str | None = None  # negotiated by initialize; None until then
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] | None = None
        self.initialized = False  # notifications/initialized received
        self.log_level: str | None = None  # set by logging/setLevel
        self.subscribed_uris: set[str] = set()
        self.listed: set[str] = set()  # list kinds it fetched (their changes are watched)

    @property
    def active(self) -> bool:
        return self.version is not None

    def watched_lists(self, announced: frozenset[str]) -> frozenset[str]:
        """The ``announced`` lists whose changes this client may need: legacy clients get list
        changes without asking, but only a list the client fetched can be stale (a host that never
        lists resources costs no resource watching)."""
        return announced & frozenset(self.listed) if self.active else frozenset()


async def initialize(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``initialize``: negotiate a legacy version and describe the server."""
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise InvalidParams('initialize needs "protocolVersion", a string')
    capabilities = params.get("capabilities", {})
    if not isinstance(capabilities, dict):
        raise InvalidParams('initialize "capabilities" must be an object')
    client_info = params.get("clientInfo")
    connection = ctx.connection
    handshake = connection.legacy
    handshake.version = negotiate_legacy_version(requested)
    handshake.client_capabilities = capabilities
    handshake.client_info = client_info if isinstance(client_info, dict) else None
    handshake.listed = set()  # a new handshake has fetched no list yet
    connection.watch_changed()
    result: dict[str, Any] = {
        "protocolVersion": handshake.version,
        "capabilities": server.capabilities(era="legacy"),
        "serverInfo": dict(server.info),
    }
    if server.instructions is not None:
        result["instructions"] = server.instructions
    return result


async def ping(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``ping``: an empty result."""
    return {}


async def set_level(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``logging/setLevel``: the minimum level of ``notifications/message`` for the whole connection."""
    level = params.get("level")
    if not is_log_level(level):
        raise InvalidParams(f'"level" must be one of: {", ".join(LOG_LEVELS)}')
    ctx.connection.legacy.log_level = level
    return {}


async def subscribe(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``resources/subscribe``: send ``notifications/resources/updated`` for this URI from now on.

    Bounded like listen streams (``subscriptions.MAX_SUBSCRIBED_URIS``, together with them).
    """
    uri = _uri(params)
    connection = ctx.connection
    if uri not in connection.legacy.subscribed_uris:
        check_room_for_uris(connection, 1)
        connection.legacy.subscribed_uris.add(uri)
        connection.watch_changed()
    return {}


async def unsubscribe(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``resources/unsubscribe``."""
    connection = ctx.connection
    connection.legacy.subscribed_uris.discard(_uri(params))
    connection.watch_changed()
    return {}


def _uri(params: dict[str, Any]) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams('"uri" must be a string')
    check_uri_length(uri)
    return uri


# --- shaping results for an older client --------------------------------------------------------

_MODERN_RESULT_FIELDS = ("resultType", "ttlMs", "cacheScope")
_LIST_KEYS = ("tools", "prompts", "resources", "resourceTemplates")


def to_legacy_result(method: str, result: dict[str, Any], version: str) -> dict[str, Any]:
    """Shape a result for a client that negotiated ``version`` (see the table in the module docstring)."""
    for name in _MODERN_RESULT_FIELDS:
        result.pop(name, None)
    meta = result.get("_meta")
    if isinstance(meta, dict):
        meta.pop(SERVER_INFO, None)
        if not meta:
            del result["_meta"]
    if "structuredContent" in result and not isinstance(result["structuredContent"], dict):
        del result["structuredContent"]
    # Rebuild rather than edit: list items and messages may be the server author's own objects.
    for key in _LIST_KEYS:
        if key in result:
            result[key] = [_legacy_item(item, version) for item in result[key]]
    if "serverInfo" in result:
        result["serverInfo"] = _legacy_item(result["serverInfo"], version)
    if version >= "2025-11-25":
        return result
    if version < "2025-06-18":
        result.pop("structuredContent", None)
    if "content" in result:
        result["content"] = [_downgrade_block(block, version) for block in result["content"]]
    if "messages" in result:
        result["messages"] = [{**m, "content": _downgrade_block(m["content"], version)} for m in result["messages"]]
    if version < "2025-03-26" and isinstance(result.get("capabilities"), dict):
        result["capabilities"].pop("completions", None)
    return result


def _legacy_item(item: dict[str, Any], version: str) -> dict[str, Any]:
    """A copy of a listed item (tool, prompt, resource, template, serverInfo) without newer fields."""
    item = dict(item)
    if "outputSchema" in item and item["outputSchema"].get("type") != "object":
        del item["outputSchema"]
    if version >= "2025-11-25":
        return item
    item.pop("icons", None)
    if version < "2025-06-18":
        item.pop("title", None)
        item.pop("outputSchema", None)
        if "arguments" in item:
            item["arguments"] = [{k: v for k, v in a.items() if k != "title"} for a in item["arguments"]]
    if version < "2025-03-26" and "inputSchema" in item:
        item.pop("annotations", None)  # tool annotations arrived in 2025-03-26
    return item


def _downgrade_block(block: dict[str, Any], version: str) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "resource_link" and version < "2025-06-18":
        return {"type": "text", "text": f"Resource: {block.get('uri')}"}
    if kind == "audio" and version < "2025-03-26":
        return {"type": "text", "text": f"[audio content ({block.get('mimeType')}) not supported by protocol {version}]"}
    return block


# --- serving one legacy request (the dispatcher's legacy side) -----------------------------------

# The list a legacy client fetched with each list method: its changes are watched from then on.
LISTED_KIND = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resources"}


def legacy_context(session: Session, request: Request, link: RequestLink, rounds: LegacyRounds | None = None) -> RequestContext:
    """A legacy request's client is the one its connection's ``initialize`` handshake described;
    on a re-run (``legacyinput``), the answers its client gave so far and the handler's state
    come along."""
    from ..core.context import RequestContext, linked, parse_progress_token

    handshake = session.legacy
    context = RequestContext(
        request_id=request.id,
        method=request.method,
        era="legacy",
        protocol_version=handshake.version or "",
        client_capabilities=handshake.client_capabilities,
        client_info=handshake.client_info,
        log_level=handshake.log_level,
        progress_token=parse_progress_token(request.params.get("_meta")),
        emit=link.emit,
    )
    if rounds is not None:
        rounds.carry_into(context)
    return linked(context, link)


def shape_result(session: Session, method: str, result: dict[str, Any]) -> dict[str, Any]:
    """A legacy request's result, for its negotiated version; a list the client fetched for the
    first time is worth watching from now on (see ``Server.on_watch``)."""
    handshake = session.legacy
    kind = LISTED_KIND.get(method)
    if kind is not None and kind not in handshake.listed:
        handshake.listed.add(kind)
        session.watch_changed()
    return to_legacy_result(method, result, handshake.version or "")
