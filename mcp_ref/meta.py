"""Per-request metadata: the ``_meta`` keys every 2026-07-28 request carries.

Spec: basic/index#meta. Required on every modern request: ``io.modelcontextprotocol/protocolVersion``
(string) and ``io.modelcontextprotocol/clientCapabilities`` (object); optional:
``io.modelcontextprotocol/clientInfo``, ``io.modelcontextprotocol/logLevel`` (deprecated logging)
and ``progressToken``. A request missing a required key is malformed (-32602). Nothing here is
remembered between requests: the server is stateless.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from .errors import InvalidParams, UnsupportedProtocolVersion
from .versions import MODERN_VERSIONS

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
PROGRESS_TOKEN = "progressToken"

# RFC 5424 severities, least to most severe (server/utilities/logging#log-levels).
LOG_LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOG_LEVEL_RANK: dict[str, int] = {name: rank for rank, name in enumerate(LOG_LEVELS)}


class RequestMeta(NamedTuple):
    """What one request says about its client. Built fresh for every request."""

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None = None
    log_level: str | None = None
    progress_token: str | int | None = None


def carries_modern_meta(params: dict[str, Any]) -> bool:
    """Does this request identify itself as modern? (It names a protocol version or capabilities in ``_meta``.)"""
    meta = params.get("_meta")
    return isinstance(meta, dict) and (PROTOCOL_VERSION in meta or CLIENT_CAPABILITIES in meta)


def is_log_level(value: Any) -> bool:
    """One of the eight level names (a client's list or object is simply not one: no hashing of it)."""
    return isinstance(value, str) and value in LOG_LEVEL_RANK


def parse_request_meta(params: dict[str, Any], advertised_versions: list[str], initialize_versions: list[str] | None = None) -> RequestMeta:
    """Validate the modern ``_meta`` of a request.

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
    return RequestMeta(version, capabilities, client_info, log_level, parse_progress_token(meta))


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


def client_has_capability(capabilities: dict[str, Any], path: str) -> bool:
    """True when a dotted capability path (``"sampling"``, ``"elicitation.url"``) is declared.

    ``elicitation: {}`` declares form mode only (client/elicitation#capabilities: an empty object
    is form support, for backward compatibility).
    """
    head, _, rest = path.partition(".")
    value = capabilities.get(head)
    if not isinstance(value, dict):
        return False
    if not rest:
        return True
    if head == "elicitation" and rest == "form" and not value:
        return True
    return isinstance(value.get(rest), dict)


# basic/index#meta: an optional prefix of dot-separated labels and a slash, then a name that,
# unless empty, starts and ends with a letter or digit. Compiled on first use (re's own cache):
# only a server that declares _meta on its tools, resources or prompts needs it.
_META_KEY = (
    r"(?:[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*/)?"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?"
)


def check_meta_keys(meta: Any, where: str) -> None:
    """Raise ``ValueError`` if a server author's ``_meta`` is not an object of well-formed keys."""
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise ValueError(f"{where}: _meta must be an object")
    for key in meta:
        if not isinstance(key, str) or not re.fullmatch(_META_KEY, key):
            raise ValueError(f"{where}: _meta key {key!r} is not a valid key (optional 'dotted.prefix/' then a name)")

