"""Caching hints on cacheable results.

Spec: server/utilities/caching. Complete results of ``server/discover``, the four list methods and
``resources/read`` must carry ``ttlMs`` (an integer >= 0) and ``cacheScope`` (``"public"`` or
``"private"``); interim (``input_required``) results carry none. Complete results of MRTR retries
must not be cached, so they carry ``ttlMs: 0``.
"""

from __future__ import annotations

from typing import Any, Literal

from ..layers.records import FrozenRecord

CACHEABLE_METHODS = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)


class CacheHint(FrozenRecord):
    """How long a result stays fresh (``ttl_ms``) and who may share a cached copy (``scope``).
    Immutable; equal (and hashed) by its two fields (a ``FrozenRecord``)."""

    __slots__ = ("ttl_ms", "scope")

    ttl_ms: int
    scope: Literal["public", "private"]

    def __init__(self, ttl_ms: int = 0, scope: Literal["public", "private"] = "public") -> None:
        if not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool) or ttl_ms < 0:
            raise ValueError("ttl_ms must be an integer >= 0")
        if scope not in ("public", "private"):
            raise ValueError('scope must be "public" or "private"')
        object.__setattr__(self, "ttl_ms", ttl_ms)
        object.__setattr__(self, "scope", scope)

    def apply(self, result: dict[str, Any]) -> dict[str, Any]:
        """Add the hint to a complete result (in place) and return it."""
        result["ttlMs"] = self.ttl_ms
        result["cacheScope"] = self.scope
        return result


# Defaults: lists and discovery are the same for every caller (public); resource contents may be
# per-user, so they are private. A TTL of 0 means "revalidate"; servers whose lists never change
# can raise it.
DEFAULT_LIST_HINT = CacheHint(0, "public")
DEFAULT_READ_HINT = CacheHint(0, "private")
