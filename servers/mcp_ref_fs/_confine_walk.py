"""Confinement mechanism: a component-by-component walk with ``O_NOFOLLOW`` (portable POSIX).

This is the fallback behind :mod:`mcp_ref_fs.root` and the authority on symbolic links. It opens
a directory *beneath* a root one name at a time, each relative to the directory it already holds
open, and never lets the kernel follow a link on its own (``O_NOFOLLOW``). When a name turns out
to be a symbolic link, the walk reads the link's text and hands it to ``follow``, the root's
policy, which either rewrites the remaining path (the link stays inside the root) or refuses.

Why this is race-free: every step is ``openat(parent_fd, name, O_NOFOLLOW | O_DIRECTORY)``.
Swapping a directory for a link between two steps makes that step fail (``ELOOP`` or
``ENOTDIR``) instead of following the link, and the link is then judged by ``follow`` from its
text. Nothing is ever opened through a path string that could have changed since it was checked.

What a lookup may cost is bounded by its ``Budget``: one allowance of link hops for the whole
lookup (``MAX_LINK_HOPS``, as the kernel's ``MAXSYMLINKS``: intermediate links here and final
links in ``root.Sandbox._lookup`` draw on the same one, so a chain of links cannot multiply the
work), and, for a lookup that must stay cheap because it runs on the event loop, a number of
system calls (``Meter``); past it, ``Costly`` is raised and the caller does the lookup again in a
worker thread (:mod:`._confine`, the interface every mechanism implements). After a link, the part of the rewritten path that is known to hold no link (the
directories just walked through) is opened again by ``open_beneath`` in one call where the
mechanism has one (``openat2``), and walked again otherwise.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Callable, Sequence

from ._act import reopen
from ._confine import Budget, FollowLink

# A step through something that is not a directory (or is a link we refused to follow). The flags
# are read with getattr so that the module imports on Windows (which uses _confine_windows).
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | _O_CLOEXEC


# open_beneath(root_fd, parts) -> an fd of the directory at parts, which must hold no link
# (openat2 with RESOLVE_NO_SYMLINKS); raises OSError otherwise.
OpenBeneath = Callable[[int, Sequence[str]], int]


class WalkMechanism:
    """Open directories beneath a root fd by walking one component at a time."""

    name = "walk"

    def __init__(self, open_beneath: OpenBeneath | None = None) -> None:
        self._open_beneath = open_beneath

    def open_dir(self, root_fd: int, parts: Sequence[str], follow: FollowLink,
                 budget: Budget | None = None) -> tuple[int, tuple[str, ...]]:
        """An fd of the directory at ``parts`` beneath ``root_fd``, and its resolved components.

        The caller owns the returned fd. Links along the way are resolved through ``follow``;
        raises ``OSError`` (``ENOENT``, ``ENOTDIR``, ``EACCES``, ``ELOOP`` once ``budget`` has no
        hop left), ``Costly`` once its meter is spent, or whatever ``follow`` raises.
        """
        budget = budget if budget is not None else Budget()
        pending = tuple(parts)
        known = 0  # leading components of ``pending`` just walked through: directories, no link
        while True:
            fd, start = self._reopen_prefix(root_fd, pending, known, budget)
            resolved: list[str] = list(pending[:start])
            try:
                for index in range(start, len(pending)):
                    name = pending[index]
                    budget.step()
                    try:
                        next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except OSError as error:
                        if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                            raise
                        budget.step()
                        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        if not stat.S_ISLNK(info.st_mode):
                            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
                        budget.hop()
                        budget.step()
                        target = os.readlink(name, dir_fd=fd)
                        prefix = tuple(resolved)
                        pending = follow(prefix, target, tuple(pending[index + 1 :]))
                        known = _common(prefix, pending)
                        break
                    os.close(fd)
                    fd = next_fd
                    resolved.append(name)
                else:
                    return fd, tuple(resolved)
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # start again from the root (or the known prefix) with the rewritten path

    def _reopen_prefix(self, root_fd: int, pending: tuple[str, ...], known: int, budget: Budget) -> tuple[int, int]:
        """An fd to walk on from, and how many components of ``pending`` it stands for: the root
        (0), or the ``known`` link-free prefix opened in one call where ``open_beneath`` exists.
        Should that fail (the tree changed meanwhile), the walk takes it one name at a time."""
        if known and self._open_beneath is not None:
            budget.step()
            try:
                return self._open_beneath(root_fd, pending[:known]), known
            except OSError:
                pass
        budget.step()
        return reopen(root_fd), 0


def _common(these: tuple[str, ...], those: tuple[str, ...]) -> int:
    """The number of leading components two paths share."""
    count = 0
    for this, that in zip(these, those):
        if this != that:
            break
        count += 1
    return count
