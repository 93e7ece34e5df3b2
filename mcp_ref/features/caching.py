"""Caching hints on cacheable results.

Spec: server/utilities/caching. Complete results of ``server/discover``, the four list methods and
``resources/read`` must carry ``ttlMs`` (an integer >= 0) and ``cacheScope`` (``"public"`` or
``"private"``); interim (``input_required``) results carry none. Complete results of MRTR retries
must not be cached, so they carry ``ttlMs: 0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

CACHEABLE_METHODS = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)


@dataclass(frozen=True, slots=True)
class CacheHint:
    """How long a result stays fresh (``ttl_ms``) and who may share a cached copy (``scope``)."""

    ttl_ms: int = 0
    scope: Literal["public", "private"] = "public"

    def __post_init__(self) -> None:
        if not isinstance(self.ttl_ms, int) or isinstance(self.ttl_ms, bool) or self.ttl_ms < 0:
            raise ValueError("ttl_ms must be an integer >= 0")
        if self.scope not in ("public", "private"):
            raise ValueError('scope must be "public" or "private"')

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
