"""Sealed ``requestState``: what an MRTR handler carries from one round to the next.

Spec: basic/patterns/mrtr#server-requirements-basic-workflow. The state travels through the
client, so it is attacker-controlled input. A token is ``base64url(payload) "." base64url(mac)``
where the MAC is HMAC-SHA256 over a JSON payload that binds:

* ``m``: the method, and ``b``: a digest of the request's salient params (tool name and
  arguments, prompt name and arguments, or resource URI) -- so it is refused on any other request;
* ``e``: an expiry (default 10 minutes) -- so an old token is refused;
* ``n``: a random nonce -- so no two tokens are alike;
* ``s``: the handler's own state, and ``a``: the answers received so far.

A token that fails any check is refused with -32602 before the handler runs. The MAC, its key
and the strict base64url encoding live in ``sealing`` (shared with list cursors; the tag's
purpose is ``"requestState"``, so a cursor never opens as state). The key comes from
``MCP_REF_STATE_KEY`` when set (any string; it is hashed into the key), so retries survive a
restart or reach another instance; otherwise it is random per process, and a restarted server
refuses old tokens (the client is simply asked again). Tokens are signed, not encrypted: never
put secrets in the state. Nothing stops a token from being replayed within its lifetime; a
handler with one-time semantics must record redemption itself.

A token has to come back inside one request line, so ``seal`` refuses (``InternalError``, logged
for the handler's author) a state that would make the retry longer than the transport's line
limit (``max_line_bytes``, the connection's, given by the dispatcher): such a token could never be used, and the
client's retry would only be refused with ``id: null``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any, Mapping, NamedTuple

from ..core.errors import InternalError, InvalidParams
from .sealing import Signer, b64url_decode, b64url_encode
from ..core.wire import DEFAULT_MAX_LINE_BYTES

log = logging.getLogger("mcp_ref")

DEFAULT_STATE_TTL_SECONDS = 600
PURPOSE = "requestState"
# Room a retry needs besides the token and the salient params: the JSON-RPC envelope, _meta,
# and short input responses.
RETRY_ENVELOPE_BYTES = 4096


def salient_params(method: str, params: dict[str, Any]) -> Any:
    """The part of a request that identifies "the same request" across MRTR rounds."""
    if method == "resources/read":
        return params.get("uri")
    return [params.get("name"), params.get("arguments") or {}]


class OpenedState(NamedTuple):
    """What a verified ``requestState`` carried: the handler's state and the answers given so far."""

    state: Any
    answered: dict[str, Any]


class StateSealer:
    """Seals and opens ``requestState`` tokens: ``base64url(payload) "." base64url(HMAC-SHA256)``."""

    def __init__(self, key: bytes | None = None, ttl_seconds: float = DEFAULT_STATE_TTL_SECONDS) -> None:
        self.signer = Signer(key)  # the server's one key; list cursors are signed with it too
        self.ttl_seconds = ttl_seconds
        self.max_line_bytes = DEFAULT_MAX_LINE_BYTES  # the input line limit, unless seal() is told the connection's

    def _binding(self, method: str, params: dict[str, Any]) -> str:
        import hashlib  # on first use (see sealing.Signer.tag)

        canonical = json.dumps([method, salient_params(method, params)], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def seal(
        self,
        method: str,
        params: dict[str, Any],
        state: Any,
        answered: Mapping[str, Any] | None = None,
        now: float | None = None,
        max_line_bytes: int | None = None,
    ) -> str:
        """A token binding ``state`` (and earlier answers) to this method and these salient params,
        valid for ``ttl_seconds``. A random nonce makes every token unique, even for equal state.
        ``max_line_bytes`` is the connection's input line limit (default: ``self.max_line_bytes``)."""
        limit = self.max_line_bytes if max_line_bytes is None else max_line_bytes
        sealed: dict[str, Any] = {
            "m": method,
            "b": self._binding(method, params),
            "e": int((time.time() if now is None else now) + self.ttl_seconds),
            "n": b64url_encode(os.urandom(9)),
            "s": state,
        }
        if answered:
            sealed["a"] = dict(answered)
        payload = json.dumps(sealed, separators=(",", ":")).encode()
        token = f"{b64url_encode(payload)}.{b64url_encode(self.signer.tag(PURPOSE, payload))}"
        retry_bytes = len(token) + RETRY_ENVELOPE_BYTES
        if retry_bytes > limit // 2:  # only then is the exact size worth computing
            retry_bytes += len(json.dumps(salient_params(method, params), separators=(",", ":"), default=str))
        if retry_bytes > limit:
            log.error(
                "a %s handler's requestState is too large to come back: the retry would need about %d bytes, "
                "over the %d-byte input line limit; keep less in the state (and in the answers it carries)",
                method, retry_bytes, limit,
            )  # fmt: skip
            raise InternalError(
                f"Internal error: the {method} handler's requestState is too large to send back "
                f"(a retry would need about {retry_bytes} bytes; the line limit is {limit})"
            )
        return token

    def open(self, token: Any, method: str, params: dict[str, Any], now: float | None = None) -> OpenedState:
        """What a token presented with this request carries; -32602 if it fails any check."""
        if not isinstance(token, str):
            raise InvalidParams("requestState must be a string")
        try:
            payload_text, mac_text = token.split(".")
            payload, mac = b64url_decode(payload_text), b64url_decode(mac_text)
        except ValueError:
            raise InvalidParams("requestState is malformed") from None
        if not self.signer.verify(PURPOSE, payload, mac):
            raise InvalidParams("requestState failed integrity verification")
        sealed = json.loads(payload)
        if sealed["e"] < (time.time() if now is None else now):
            raise InvalidParams("requestState has expired; retry the request without it")
        if sealed["m"] != method or sealed["b"] != self._binding(method, params):
            raise InvalidParams("requestState was issued for a different request")
        return OpenedState(sealed["s"], sealed.get("a", {}))
