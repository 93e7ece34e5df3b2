"""Per-request metadata: the ``_meta`` keys every 2026-07-28 request carries.

Spec: basic/index#meta. Required on every modern request: ``io.modelcontextprotocol/protocolVersion``
(string) and ``io.modelcontextprotocol/clientCapabilities`` (object); optional:
``io.modelcontextprotocol/clientInfo``, ``io.modelcontextprotocol/logLevel`` (deprecated logging)
and ``progressToken``. A request missing a required key is malformed (-32602). Nothing here is
remembered between requests: the server is stateless.
"""

from __future__ import annotations

import re
from typing import Any


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


def is_log_level(value: Any) -> bool:
    """One of the eight level names (a client's list or object is simply not one: no hashing of it)."""
    return isinstance(value, str) and value in LOG_LEVEL_RANK


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



def __getattr__(name: str) -> Any:
    # Whether a request is modern is the dispatcher's decision (``dispatcher.has_modern_meta``), and
    # a request's ``_meta`` is read into its context (``context.parse_request_meta``).
    if name == "carries_modern_meta":
        from .dispatcher import has_modern_meta

        return has_modern_meta
    if name in ("RequestMeta", "parse_request_meta", "parse_progress_token"):
        from . import context  # (which imports this module: hence the late import)

        return getattr(context, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
