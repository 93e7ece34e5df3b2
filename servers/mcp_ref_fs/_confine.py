"""The two interfaces between the sandbox (:mod:`.root`) and a platform: ``Mechanism`` and ``Act``.

Every client path ends as *(a held directory, a final name)*. How the directory is opened
beneath a root is a **Mechanism**'s job (step 2, *resolve*); what is then done with the final
name is an **Act**'s (step 3). Each platform brings one or two of each:

============================  ==========================================  ==============================
                              Mechanism (``open_dir``)                    Act (every other call)
============================  ==========================================  ==============================
Linux 5.6+                    ``openat2(RESOLVE_BENEATH)``                ``*at`` calls (``AtAct``)
                              (:mod:`._confine_openat2`)
other POSIX, or forced        a walk with ``O_NOFOLLOW``                  ``*at`` calls
                              (:mod:`._confine_walk`)
Linux, ``MCP_REF_FS_ACT=paths`` either of the above                       paths through ``/proc/self/fd``
                                                                          (``ProcFdPathAct``, :mod:`._act`)
Windows                       held handles, final paths checked           paths through held handles
                              (:mod:`._confine_windows`)                  (``WindowsPathAct``)
============================  ==========================================  ==============================

:mod:`._platform` is the one place that picks them. This module imports nothing of the package,
so every implementation can import it and none imports another's chooser.

A lookup's cost is bounded by its :class:`Budget`: the links it may follow (``MAX_LINK_HOPS``, as
the kernel's ``MAXSYMLINKS``: links on the way and final links draw on the same allowance) and,
when it runs on the event loop, the system calls it may make (a shared :class:`Meter`); past that,
:class:`Costly` is raised before anything has changed, and the caller runs the operation again in a
worker thread.
"""

from __future__ import annotations

import errno
import os
from types import SimpleNamespace
from typing import Any, Callable, ContextManager, Iterator, Protocol, Sequence

# Links followed while resolving one path, as the kernel's own limit (MAXSYMLINKS = 40).
MAX_LINK_HOPS = 40
COSTLY_LOOKUP = "the lookup needs more system calls than the event loop may spend on it"


class Costly(Exception):
    """Work asked to stay cheap (on the event loop) would not be: a lookup that would make more
    system calls than its ``Meter`` allows, or a listing too big or holding links to resolve. The
    caller does it again in a worker thread, where nothing limits the calls."""


class Meter(SimpleNamespace):
    """System calls an operation on the event loop may still make (shared by its lookups):
    ``Meter(steps=N)``, by keyword. A namespace, so that the one made for every sandbox operation
    (``root.sandboxed``) is made in C, with no constructor of ours to run or to create at import
    (the price: its attributes are not fixed, as a class with ``__slots__`` would fix them)."""

    steps: int


class Budget:
    """What one lookup may still spend: ``hops`` links followed, and system calls on ``meter``
    (None: as many as it takes, in a worker thread)."""

    __slots__ = ("meter", "hops")

    def __init__(self, meter: Meter | None = None, hops: int = MAX_LINK_HOPS) -> None:
        self.meter = meter
        self.hops = hops

    def step(self, count: int = 1) -> None:
        """``count`` more system calls: ``Costly`` once the meter (if any) is spent."""
        meter = self.meter
        if meter is not None:
            meter.steps -= count
            if meter.steps < 0:
                raise Costly(COSTLY_LOOKUP)

    def hop(self) -> None:
        """One more link followed: ``ELOOP`` past ``MAX_LINK_HOPS`` for the whole lookup."""
        self.hops -= 1
        if self.hops < 0:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))


# follow(resolved_prefix, link_text, remaining) -> the new full list of components below the root
# (or raises, when the link leaves the root): the root's link policy, root.py's ``_follow_link``.
FollowLink = Callable[[tuple[str, ...], str, tuple[str, ...]], tuple[str, ...]]


class Mechanism(Protocol):
    """Step 2, *resolve*: open a directory beneath a root, never leaving it."""

    name: str

    def open_dir(self, root: Any, parts: Sequence[str], follow: FollowLink,
                 budget: Budget | None = None) -> tuple[Any, tuple[str, ...]]:
        """The directory at ``parts`` beneath the held ``root``, held (the caller closes it through
        the act step), and the components really opened (after links). Links on the way are
        judged by ``follow``; raises ``OSError`` (``ENOENT``, ``ENOTDIR``, ``EACCES``, ``ELOOP``
        once ``budget`` has no hop left), ``Costly`` once its meter is spent, or what ``follow``
        raises. Leaves nothing open when it raises."""
        ...


class Act(Protocol):
    """Step 3, *act*: calls on (a held directory, a final name), never following the final name.

    ``held`` is whatever the mechanism (or ``open_root``) returned: a descriptor on POSIX, a
    ``WindowsDirectory`` on Windows. Every call names one final name, never a path."""

    name: str
    positional_reads: bool  # OpenFile reads with os.pread (else seek, then read)
    sep: str  # the separator of this platform's paths

    def open_root(self, path: str) -> Any: ...
    def close(self, held: Any) -> None: ...
    def reopen(self, held: Any) -> Any: ...
    def stat_dir(self, held: Any) -> os.stat_result: ...
    def real_path(self, held: Any) -> str | None: ...
    def lstat(self, held: Any, name: str) -> os.stat_result: ...
    def readlink(self, held: Any, name: str) -> str: ...
    def open_file(self, held: Any, name: str) -> int: ...
    def open_dir(self, held: Any, name: str) -> Any: ...
    def scandir(self, held: Any) -> ContextManager[Iterator[os.DirEntry[str]]]: ...
    def mkdir(self, held: Any, name: str) -> None: ...
    def open_for_writing(self, held: Any, name: str) -> int: ...
    def create(self, held: Any, name: str, mode: int = 0o600) -> int: ...
    def create_unnamed(self, held: Any, mode: int) -> int: ...
    def link_unnamed(self, fd: int, held: Any, name: str) -> None: ...
    def unlink(self, held: Any, name: str) -> None: ...
    def rmdir(self, held: Any, name: str) -> None: ...
    def replace(self, held: Any, source: str, name: str) -> None: ...
    def rename_no_replace(self, from_held: Any, from_name: str, to_held: Any, to_name: str,
                          info: os.stat_result) -> None: ...
    def sync(self, held: Any) -> None: ...
