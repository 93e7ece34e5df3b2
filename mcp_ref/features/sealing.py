"""The one HMAC in mcp-ref: signing what the server hands to the client and must get back intact.

Two things travel through the client and come back as attacker-controlled input: MRTR
``requestState`` (``requeststate``) and list cursors (``pagination``). Both are signed here, with
one per-server key, so there is exactly one implementation of the MAC, of its comparison and of
the encoding that carries it.

* **Key.** ``Server(state_key=...)`` when given; otherwise derived from ``$MCP_REF_STATE_KEY``
  (any string, hashed to 32 bytes) so tokens survive a restart or reach another instance;
  otherwise random per process (a restarted server refuses old tokens).
* **Tag.** HMAC-SHA256 over ``purpose NUL payload``. The purpose names what the payload is
  (``"requestState"``, ``"cursor tools/list"``, ...), so a token minted for one purpose never
  verifies for another, even though the key is shared.
* **Encoding.** base64url without padding, decoded strictly: only ``A-Z a-z 0-9 - _``, and the
  text must be the canonical encoding of the bytes it decodes to (no padding, no ``+`` or ``/``,
  no whitespace, no non-zero trailing bits). Every token therefore has exactly one spelling.

Signed, not encrypted: payloads are readable by the client. Never put secrets in them.
"""

from __future__ import annotations

import base64
import os
import re
from typing import Any

STATE_KEY_ENV = "MCP_REF_STATE_KEY"
TAG_BYTES = 32  # a full HMAC-SHA256 tag

_B64URL = re.compile(r"[A-Za-z0-9_-]*")


def b64url_encode(data: bytes) -> str:
    """base64url without padding: the only spelling ``b64url_decode`` accepts."""
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def b64url_decode(text: Any) -> bytes:
    """The bytes of a canonical unpadded base64url string; ``ValueError`` for any other spelling."""
    if not isinstance(text, str) or not _B64URL.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError("not unpadded base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if b64url_encode(data) != text:  # e.g. non-zero bits in the last character
        raise ValueError("not the canonical base64url spelling")
    return data


def load_key() -> bytes:
    """The key from ``$MCP_REF_STATE_KEY`` (hashed), else 32 random bytes."""
    configured = os.environ.get(STATE_KEY_ENV)
    if configured:
        # Any string works as a secret; hash it to a fixed-size HMAC key.
        import hashlib

        return hashlib.sha256(configured.encode()).digest()
    return os.urandom(32)


class Signer:
    """HMAC-SHA256 tags, domain-separated by purpose, under one key."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else load_key()

    def tag(self, purpose: str, payload: bytes) -> bytes:
        """The tag binding ``payload`` to ``purpose`` (``TAG_BYTES`` long)."""
        # Imported when the first token is made or checked, not at start-up (OpenSSL's hashes).
        import hashlib
        import hmac

        return hmac.new(self._key, purpose.encode() + b"\0" + payload, hashlib.sha256).digest()

    def verify(self, purpose: str, payload: bytes, tag: bytes) -> bool:
        """Is ``tag`` the tag of ``payload`` for ``purpose``? (Constant-time comparison.)"""
        import hmac

        return hmac.compare_digest(tag, self.tag(purpose, payload))
