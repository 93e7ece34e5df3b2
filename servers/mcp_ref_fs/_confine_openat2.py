"""Confinement mechanism: Linux ``openat2(2)`` with ``RESOLVE_BENEATH`` (kernel 5.6 and later).

The kernel resolves the whole path in one system call and refuses, atomically, any resolution
that would leave the directory it starts from: ``..`` above it, an absolute path, or a link.
It is asked to follow no links at all (``RESOLVE_NO_SYMLINKS``, ``RESOLVE_NO_MAGICLINKS``):
the common path, with no link on it, costs one system call, and a path that meets a link
(``ELOOP``) or anything else the kernel refuses (``EXDEV``) is handed to the portable walk
(:mod:`mcp_ref_fs._confine_walk`), which applies the root's link policy component by
component. So links mean the same thing whichever mechanism runs: one rule, in one place.

``available()`` probes once whether the system call exists and is permitted (containers with
seccomp filters may answer ``ENOSYS`` or ``EPERM``); the root falls back to the walk otherwise.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from typing import Sequence

from ._confine import Budget, FollowLink
from ._act import reopen
from ._confine_walk import WalkMechanism

# include/uapi/linux/openat2.h
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
# The syscall number is the same on every architecture that got openat2 after the unified table.
_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437, "armv7l": 437, "ppc64le": 437, "s390x": 437, "riscv64": 437, "i686": 437}
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)  # imports anywhere


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class Openat2Mechanism:
    """Open directories beneath a root fd with one ``openat2`` call; the walk settles refusals."""

    name = "openat2"

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._syscall = self._libc.syscall
        self._syscall.restype = ctypes.c_long
        self._number = _SYS_OPENAT2[platform.machine()]
        self._how = _OpenHow(_DIR_FLAGS, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
        self._walk = WalkMechanism(open_beneath=self._open_beneath)

    def _openat2(self, dir_fd: int, path: bytes) -> int:
        fd = self._syscall(self._number, dir_fd, path, ctypes.byref(self._how), ctypes.sizeof(self._how))
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return fd

    def _open_beneath(self, dir_fd: int, parts: Sequence[str]) -> int:
        """The directory at ``parts`` beneath ``dir_fd``, in one call, provided no link is on the way."""
        return self._openat2(dir_fd, os.fsencode("/".join(parts)))

    def open_dir(self, root_fd: int, parts: Sequence[str], follow: FollowLink,
                 budget: Budget | None = None) -> tuple[int, tuple[str, ...]]:
        """As :meth:`WalkMechanism.open_dir`. When the kernel resolved the path there was no link
        on it, so the components are reported as given."""
        if budget is not None:
            budget.step()
        if not parts:
            return reopen(root_fd), ()
        try:
            return self._openat2(root_fd, os.fsencode("/".join(parts))), tuple(parts)
        except OSError as error:
            # ENAMETOOLONG: the joined path may exceed PATH_MAX where each component, walked alone, does not.
            if error.errno not in (errno.EXDEV, errno.ELOOP, errno.EAGAIN, errno.ENAMETOOLONG):
                raise
        return self._walk.open_dir(root_fd, parts, follow, budget)


def available() -> bool:
    """Does this kernel offer ``openat2`` with ``RESOLVE_BENEATH`` to this process?"""
    if platform.system() != "Linux" or platform.machine() not in _SYS_OPENAT2:
        return False
    root_fd = os.open("/", _DIR_FLAGS)
    try:
        fd = Openat2Mechanism()._openat2(root_fd, b".")
    except (OSError, AttributeError):
        return False
    finally:
        os.close(root_fd)
    os.close(fd)
    return True
