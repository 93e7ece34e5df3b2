"""The one place that decides which platform code the sandbox runs: its mechanism and its act step.

:mod:`._confine` describes the two interfaces and the table of what runs where. The choice is by
capability, never by a list of systems where a capability test can answer: ``openat2`` where the
kernel offers it, else the walk; ``*at`` calls where ``os.open`` takes ``dir_fd``, else paths; the
Windows pair on Windows. ``MCP_REF_FS_CONFINE`` and ``MCP_REF_FS_ACT`` (or the ``name``
arguments, for tests) force one, and a forced choice that cannot run is a ``ValueError`` (never a
silent fallback). The implementations are imported here, on first use, and import nothing back.
"""

from __future__ import annotations

import os
import sys

from . import _act
from ._confine import Act, Mechanism

ACTS = ("auto", "at", "paths")
MECHANISMS = ("auto", "openat2", "walk", "windows")


def choose_mechanism(name: str | None = None) -> Mechanism:
    """``openat2`` when the kernel has it, else the walk; on Windows, the handle checks of
    :mod:`._confine_windows`. ``name`` forces one (tests, and ``MCP_REF_FS_CONFINE=walk`` for a
    system whose ``openat2`` misbehaves)."""
    name = name or os.environ.get("MCP_REF_FS_CONFINE") or "auto"
    if name not in MECHANISMS:
        raise ValueError(f"unknown confinement mechanism {name!r} (auto, openat2, walk or windows)")
    if name == "windows" or (name == "auto" and sys.platform == "win32"):
        from . import _confine_windows

        if not _confine_windows.available():
            raise ValueError("the windows mechanism is available on Windows only")
        return _confine_windows.WindowsMechanism()  # pragma: no cover - Windows only
    if os.open not in os.supports_dir_fd:
        raise ValueError(f"the {name} mechanism needs POSIX *at calls (os.open with dir_fd)")
    if name in ("auto", "openat2"):
        from . import _confine_openat2

        if _confine_openat2.available():
            return _confine_openat2.Openat2Mechanism()
        if name == "openat2":
            raise ValueError("openat2 is not available on this system")
    from ._confine_walk import WalkMechanism

    return WalkMechanism()


def choose_act(name: str | None = None, *, windows: bool | None = None) -> Act:
    """The act step for this system: ``*at`` calls where ``os.open`` takes ``dir_fd``, else paths.
    ``name`` (or ``MCP_REF_FS_ACT``) forces ``at`` or ``paths``. ``windows`` (default: this is
    Windows) picks the Windows path-based act."""
    name = name or os.environ.get("MCP_REF_FS_ACT") or "auto"
    if name not in ACTS:
        raise ValueError(f"unknown act step {name!r} (auto, at or paths)")
    if windows if windows is not None else sys.platform == "win32":
        if name == "at":
            raise ValueError("the at act step needs POSIX *at calls (os.open with dir_fd), which Windows lacks")
        from ._confine_windows import WindowsPathAct

        return WindowsPathAct()
    at_calls = os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd
    if name == "at" or (name == "auto" and at_calls):
        if not at_calls:
            raise ValueError("the at act step needs POSIX *at calls (os.open with dir_fd)")
        return _act.AtAct()
    if not os.path.isdir(_act.FD_PATHS):
        raise ValueError(f"the paths act step needs {_act.FD_PATHS} here (Linux), to give held directories a path")
    return _act.ProcFdPathAct()
