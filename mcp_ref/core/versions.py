"""Protocol versions and eras.

Spec: basic/versioning (2026-07-28): *modern* versions carry version, identity and capabilities
in every request's ``_meta``; *legacy* versions (2025-11-25 and earlier) open with an
``initialize`` handshake. A dual-era server serves both; the era of each request is decided from
the request itself (see ``dispatcher``), never locked for the process.
"""

from __future__ import annotations

MODERN_VERSION = "2026-07-28"
MODERN_VERSIONS: tuple[str, ...] = (MODERN_VERSION,)

# Newest first. ``initialize`` with any other version gets the newest one (2025-11-25 lifecycle:
# the server answers with a version it supports and the client decides whether to continue).
LEGACY_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_LEGACY_VERSION = LEGACY_VERSIONS[0]


def supported_versions() -> list[str]:
    """What ``server/discover`` and -32022 ``data.supported`` advertise: the versions a request may
    name in its ``_meta``. Legacy versions are not among them: they work only through
    ``initialize``, so a client that picked one for ``_meta`` would be refused again."""
    return list(MODERN_VERSIONS)


def initialize_versions(include_legacy: bool) -> list[str]:
    """The initialize-era versions a dual-era server serves (named apart, in -32022 ``data.initializeVersions``)."""
    return list(LEGACY_VERSIONS) if include_legacy else []


def negotiate_legacy_version(requested: object) -> str:
    """The version an ``initialize`` answer names: the client's if we speak it, else our newest legacy one."""
    if isinstance(requested, str) and requested in LEGACY_VERSIONS:
        return requested
    return LATEST_LEGACY_VERSION


def legacy_at_least(version: str, minimum: str) -> bool:
    """Version strings are dates, so they order as strings."""
    return version >= minimum
