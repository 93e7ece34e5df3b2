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
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Callable, Sequence

# A step through something that is not a directory (or is a link we refused to follow). The flags
# are read with getattr so that the module imports on Windows (which uses _confine_windows).
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | _O_CLOEXEC
# Links followed while resolving one path, as the kernel's own limit (MAXSYMLINKS = 40).
MAX_LINK_HOPS = 40



def reopen(dir_fd: int) -> int:
    """A new open file description of the directory ``dir_fd`` refers to.

    Not ``os.dup``: a duplicate shares the directory read offset with the original, so two
    listings of the same root (in two worker threads) would interleave and skip entries.
    """
    return os.open(".", os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC, dir_fd=dir_fd)


# follow(resolved_prefix, link_text, remaining) -> the new full list of components below the root
# (or raises, when the link leaves the root).
FollowLink = Callable[[tuple[str, ...], str, tuple[str, ...]], tuple[str, ...]]


class WalkMechanism:
    """Open directories beneath a root fd by walking one component at a time."""

    name = "walk"

    def open_dir(self, root_fd: int, parts: Sequence[str], follow: FollowLink) -> tuple[int, tuple[str, ...]]:
        """An fd of the directory at ``parts`` beneath ``root_fd``, and its resolved components.

        The caller owns the returned fd. Links along the way are resolved through ``follow``;
        raises ``OSError`` (``ENOENT``, ``ENOTDIR``, ``EACCES``, ``ELOOP`` for too many links) or
        whatever ``follow`` raises.
        """
        pending = tuple(parts)
        hops = 0
        while True:
            fd = reopen(root_fd)
            resolved: list[str] = []
            try:
                for index, name in enumerate(pending):
                    try:
                        next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except OSError as error:
                        if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                            raise
                        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        if not stat.S_ISLNK(info.st_mode):
                            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
                        hops += 1
                        if hops > MAX_LINK_HOPS:
                            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
                        target = os.readlink(name, dir_fd=fd)
                        pending = follow(tuple(resolved), target, tuple(pending[index + 1 :]))
                        break
                    os.close(fd)
                    fd = next_fd
                    resolved.append(name)
                else:
                    return fd, tuple(resolved)
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # restart from the root with the rewritten path
