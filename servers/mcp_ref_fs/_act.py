"""The sandbox's *act* step: the system calls that read, list and change things once a directory
has been opened confined, in two implementations behind one small interface.

:mod:`mcp_ref_fs.root` resolves every client path to *(a held directory, a final name)*: the
directory is opened beneath a root by a confinement mechanism and held open while the
operation runs. What happens next is this module's: look at the final name without following it,
open it, list the directory, create, remove and rename names in it. Every method takes the held
directory (``held``: whatever the mechanism returned) and a single final name, never a path.

``AtAct`` (``MCP_REF_FS_ACT=at``, the default on Linux and macOS)
    POSIX ``*at`` calls: the directory is named by its descriptor and the final name by itself
    (``openat``, ``fstatat``, ``readlinkat``, ``mkdirat``, ``unlinkat``, ``renameat``, through
    Python's ``dir_fd=``), never following it (``O_NOFOLLOW``, ``follow_symlinks=False``). Each
    method is the one system call root.py made before this module existed: no extra call on Linux.

``PathAct`` (``MCP_REF_FS_ACT=paths``; Windows, which has no ``*at`` calls)
    Each call names ``held directory's path + separator + final name`` and never follows the final
    name: ``lstat``, ``O_NOFOLLOW`` (on Windows ``FILE_FLAG_OPEN_REPARSE_POINT`` and a look at the
    opened handle's attributes), ``readlink``; listing is ``os.scandir(path)``, reading is seek then
    read (Windows has no ``pread``), a no-overwrite move is a rename that never replaces, and an
    atomic replace is a temporary file created exclusively in the held directory, then
    ``os.replace``. The path cannot be redirected because the mechanism holds the directory, and
    how it does so is the one thing each platform provides (:meth:`PathAct.path` and the few
    methods marked *platform* below):

    * **Linux** (:class:`ProcFdPathAct`): the held directory is a descriptor ``N`` of the POSIX
      mechanisms, and its path is ``/proc/self/fd/N``. That is a *magic link*: the kernel resolves
      it to the very directory ``N`` holds, not through any path string, so
      ``open("/proc/self/fd/N/name", O_NOFOLLOW)`` is ``openat(N, "name", O_NOFOLLOW)``. It exists
      so that the path-based code Windows runs is run here by the whole test suite and the attack
      matrix, injected swaps included (``MCP_REF_FS_ACT=paths``).
    * **Windows** (:class:`mcp_ref_fs._confine_windows.WindowsPathAct`): the held directory is every
      directory from the root down, each opened without ``FILE_SHARE_DELETE`` (so none can be
      renamed, deleted or replaced by a junction while held), and its path is the verified final
      path of the last one. Only that class's few ``kernel32`` calls never run on Linux.

Both implement :class:`mcp_ref_fs._confine.Act`. :func:`mcp_ref_fs._platform.choose_act` picks one by
capability (``*at`` calls where ``os.open`` takes ``dir_fd``, else paths); ``MCP_REF_FS_ACT`` or
``Sandbox.open(act=...)`` forces one. The module imports on any system: POSIX-only flags are read
with ``getattr`` and a default.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import sys
from typing import Any, Callable


# Flags that exist only on some systems are 0 elsewhere (O_BINARY and O_NOINHERIT: Windows only).
O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOINHERIT", 0)
O_BINARY = getattr(os, "O_BINARY", 0)
DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_BINARY
TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
# An existing file opened for writing to learn whether this process may write it: never
# truncated, never following the name, never blocking (a FIFO, a lease).
WRITE_FLAGS = os.O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_BINARY
# A new file without a name in a directory (Linux O_TMPFILE; 0 where the system has none).
O_TMPFILE = getattr(os, "O_TMPFILE", 0)
UNNAMED_FLAGS = O_TMPFILE | os.O_WRONLY | O_CLOEXEC
ROOT_FLAGS = os.O_RDONLY | O_DIRECTORY | O_CLOEXEC

# The temporary files of atomic rewrites (rewrite.py), where one needs a name: listings skip them.
TEMPORARY_PREFIX = ".mcp-ref-"
_HEX = frozenset("0123456789abcdef")


def is_temporary(name: str) -> bool:
    """Is ``name`` a temporary file of the server's own naming (``.mcp-ref-<16 hex>.tmp``)?"""
    return len(name) == 29 and name.startswith(TEMPORARY_PREFIX) and name.endswith(".tmp") and _HEX.issuperset(name[9:25])


def reopen(dir_fd: int) -> int:
    """A new open file description of the directory ``dir_fd`` refers to.

    Not ``os.dup``: a duplicate shares the directory read offset with the original, so two
    listings of the same root (in two worker threads) would interleave and skip entries.
    """
    return os.open(".", ROOT_FLAGS, dir_fd=dir_fd)


def open_root_fd(path: str) -> int:
    """A descriptor of the directory ``path`` (a root: its real path, so links are fine)."""
    return os.open(path, ROOT_FLAGS)


def fd_real_path(fd: int) -> str | None:
    """The path of the directory a descriptor holds, where the system tells it (Linux
    ``/proc/self/fd``, macOS ``F_GETPATH``); None elsewhere or when it cannot say."""
    try:
        if sys.platform == "darwin":
            import fcntl

            return os.fsdecode(fcntl.fcntl(fd, 50, bytes(1024)).split(b"\0", 1)[0])  # F_GETPATH
        return os.readlink(f"{FD_PATHS}/{fd}")
    except OSError:
        return None


FD_PATHS = "/proc/self/fd"


# --- the POSIX act: *at calls ---------------------------------------------------------------------------


class AtAct:
    """POSIX: (directory descriptor, final name) through ``dir_fd=`` calls. Held directories are
    descriptors; ``close`` and friends are the ``os`` functions themselves (no Python frame)."""

    name = "at"
    positional_reads = True  # OpenFile reads with os.pread
    sep = "/"

    open_root = staticmethod(open_root_fd)
    close = staticmethod(os.close)
    reopen = staticmethod(reopen)
    stat_dir = staticmethod(os.fstat)
    real_path = staticmethod(fd_real_path)

    @staticmethod
    def lstat(held: int, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=held, follow_symlinks=False)

    @staticmethod
    def readlink(held: int, name: str) -> str:
        return os.readlink(name, dir_fd=held)

    @staticmethod
    def open_file(held: int, name: str) -> int:
        """An existing file, read-only, never following ``name``; non-blocking (a FIFO must not
        hang the server: the caller checks the kind, then makes it blocking)."""
        return os.open(name, FILE_FLAGS, dir_fd=held)

    @staticmethod
    def open_dir(held: int, name: str) -> int:
        """A subdirectory, never following ``name`` (walks: a link there is not entered)."""
        return os.open(name, DIR_FLAGS, dir_fd=held)

    @staticmethod
    def scandir(held: int) -> Any:
        return os.scandir(held)

    @staticmethod
    def mkdir(held: int, name: str) -> None:
        os.mkdir(name, 0o777, dir_fd=held)

    @staticmethod
    def open_for_writing(held: int, name: str) -> int:
        """An existing file opened write-only, never truncated, never following ``name``: the
        kernel's answer to whether this process may write it (an atomic rewrite asks first)."""
        return os.open(name, WRITE_FLAGS, dir_fd=held)

    @staticmethod
    def create(held: int, name: str, mode: int = 0o600) -> int:
        """A new file, exclusively (the temporary file of an atomic rewrite), write-only."""
        return os.open(name, TEMP_FLAGS, mode, dir_fd=held)

    @staticmethod
    def create_unnamed(held: int, mode: int) -> int:
        """A new file without a name in the directory (``O_TMPFILE``), write-only; ``OSError``
        (``EOPNOTSUPP``, ``EISDIR`` on kernels before 3.11) where there is none."""
        if not O_TMPFILE:
            raise OSError(errno.EOPNOTSUPP, "no O_TMPFILE on this system")
        return os.open(".", UNNAMED_FLAGS, mode, dir_fd=held)

    @staticmethod
    def link_unnamed(fd: int, held: int, name: str) -> None:
        """Give the unnamed file ``fd`` the name ``name`` (``EEXIST`` when it is taken): ``linkat``
        of its ``/proc/self/fd`` magic link (``AT_EMPTY_PATH`` would need a capability)."""
        os.link(f"{FD_PATHS}/{fd}", name, dst_dir_fd=held, follow_symlinks=True)

    @staticmethod
    def unlink(held: int, name: str) -> None:
        os.unlink(name, dir_fd=held)

    @staticmethod
    def rmdir(held: int, name: str) -> None:
        os.rmdir(name, dir_fd=held)

    @staticmethod
    def replace(held: int, source: str, name: str) -> None:
        """Rename ``source`` over ``name`` in one directory (the commit of an atomic write)."""
        os.rename(source, name, src_dir_fd=held, dst_dir_fd=held)

    @staticmethod
    def rename_no_replace(from_held: int, from_name: str, to_held: int, to_name: str, info: os.stat_result) -> None:
        rename_no_replace(from_held, from_name, to_held, to_name, info)

    @staticmethod
    def sync(held: int) -> None:
        """Make the renames in a directory durable (best effort: the caller ignores failures)."""
        os.fsync(held)


# --- the path-based act ---------------------------------------------------------------------------------


class PathAct:
    """The act step for systems without ``*at`` calls: every operation on ``path(held) + sep + name``.

    The methods defined here are the same on every platform (and run on Linux through
    :class:`ProcFdPathAct`); a subclass provides the *platform* ones: how a directory is held,
    its path, and the opens that must not follow the final name.
    """

    name = "paths"
    positional_reads = False  # OpenFile reads by seek + read: Windows has no pread
    sep = "/"

    # --- platform ---------------------------------------------------------------------------------

    def path(self, held: Any) -> str:  # pragma: no cover - abstract
        """The path through which names in the held directory are reached."""
        raise NotImplementedError

    def open_root(self, path: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self, held: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def reopen(self, held: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def stat_dir(self, held: Any) -> os.stat_result:  # pragma: no cover - abstract
        raise NotImplementedError

    def open_dir(self, held: Any, name: str) -> Any:  # pragma: no cover - abstract
        """A subdirectory, held, never following ``name``."""
        raise NotImplementedError

    def open_path(self, path: str) -> int:  # pragma: no cover - abstract
        """An existing file, read-only, never following its final name."""
        raise NotImplementedError

    def open_path_for_writing(self, path: str) -> int:  # pragma: no cover - abstract
        """An existing file, write-only, never truncated, never following its final name."""
        raise NotImplementedError

    def create_unnamed(self, held: Any, mode: int) -> int:
        """A new file without a name in the held directory: none here. Windows has no such thing,
        and the Linux path-based act step, which exists to run Windows' code, makes none either,
        so rewrites through it use a temporary file of the server's naming, as on Windows (and
        never need ``AtAct.link_unnamed``)."""
        raise OSError(errno.EOPNOTSUPP, "no unnamed files through the path-based act step")

    def link_unnamed(self, fd: int, held: Any, name: str) -> None:  # pragma: no cover - never reached
        """Never called: :meth:`create_unnamed` makes no unnamed file to name."""
        raise OSError(errno.EOPNOTSUPP, "no unnamed files through the path-based act step")

    def rename_paths(self, source: str, target: str, info: os.stat_result) -> None:  # pragma: no cover - abstract
        """Rename ``source`` to ``target`` unless ``target`` exists (``EEXIST`` then)."""
        raise NotImplementedError

    def sync(self, held: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def real_path(self, held: Any) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def lstat_path(self, path: str) -> os.stat_result:
        """``lstat`` of a path (Windows also marks junctions as links)."""
        return os.stat(path, follow_symlinks=False)

    # --- the same everywhere -----------------------------------------------------------------------

    def at(self, held: Any, name: str) -> str:
        return self.path(held) + self.sep + name

    def lstat(self, held: Any, name: str) -> os.stat_result:
        return self.lstat_path(self.at(held, name))

    def readlink(self, held: Any, name: str) -> str:
        return os.readlink(self.at(held, name))

    def open_file(self, held: Any, name: str) -> int:
        return self.open_path(self.at(held, name))

    def open_for_writing(self, held: Any, name: str) -> int:
        return self.open_path_for_writing(self.at(held, name))

    def scandir(self, held: Any) -> Any:
        return os.scandir(self.path(held))

    def mkdir(self, held: Any, name: str) -> None:
        os.mkdir(self.at(held, name), 0o777)

    def create(self, held: Any, name: str, mode: int = 0o600) -> int:
        # O_CREAT | O_EXCL never follows a link at the name (it fails: the name exists).
        return os.open(self.at(held, name), TEMP_FLAGS, mode)

    def unlink(self, held: Any, name: str) -> None:
        os.unlink(self.at(held, name))

    def rmdir(self, held: Any, name: str) -> None:
        os.rmdir(self.at(held, name))

    def replace(self, held: Any, source: str, name: str) -> None:
        os.replace(self.at(held, source), self.at(held, name))

    def rename_no_replace(self, from_held: Any, from_name: str, to_held: Any, to_name: str, info: os.stat_result) -> None:
        self.rename_paths(self.at(from_held, from_name), self.at(to_held, to_name), info)


class ProcFdPathAct(PathAct):
    """The path-based act on Linux: held directories are the POSIX mechanisms' descriptors, and
    ``/proc/self/fd/N`` is the path of descriptor ``N`` (see the module docstring)."""

    def open_root(self, path: str) -> int:
        return open_root_fd(path)

    def close(self, held: int) -> None:
        os.close(held)

    def reopen(self, held: int) -> int:
        return reopen(held)

    def stat_dir(self, held: int) -> os.stat_result:
        return os.fstat(held)

    def real_path(self, held: int) -> str | None:
        return fd_real_path(held)

    def path(self, held: int) -> str:
        return f"{FD_PATHS}/{held}"

    def open_dir(self, held: int, name: str) -> int:
        return os.open(self.at(held, name), DIR_FLAGS)

    def open_path(self, path: str) -> int:
        return os.open(path, FILE_FLAGS)

    def open_path_for_writing(self, path: str) -> int:
        return os.open(path, WRITE_FLAGS)

    def rename_paths(self, source: str, target: str, info: os.stat_result) -> None:
        rename_no_replace(None, source, None, target, info)

    def sync(self, held: int) -> None:
        os.fsync(held)


def read_at(fd: int, length: int, offset: int) -> bytes:
    """``os.pread`` where there is none: seek, then read. An ``OpenFile`` belongs to one request,
    which reads it from one thread at a time, so the shared offset is not raced."""
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, length)


# --- rename without replacing ---------------------------------------------------------------------------

_RENAME_NOREPLACE = 1
# macOS (10.12 and later): renameatx_np(..., RENAME_EXCL) is the same operation.
_RENAME_EXCL = 0x4
# Linux: "relative to the current directory", i.e. the names are paths (the path-based act).
_AT_FDCWD = -100


@functools.lru_cache(maxsize=None)
def _renameat2() -> Callable[..., int] | None:
    """glibc's ``renameat2`` (2.28 and later), or on macOS ``renameatx_np`` with ``RENAME_EXCL``
    behind the same signature; looked up on first use; None where absent."""
    import ctypes

    darwin = sys.platform == "darwin"
    try:
        library = ctypes.CDLL(None, use_errno=True)
        function = library.renameatx_np if darwin else library.renameat2
    except (OSError, AttributeError, TypeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    if not darwin:
        return function

    def renameatx_np(from_fd: int, from_name: bytes, to_fd: int, to_name: bytes, flags: int) -> int:
        return function(from_fd, from_name, to_fd, to_name, _RENAME_EXCL if flags & _RENAME_NOREPLACE else 0)

    return renameatx_np


def rename_no_replace(from_fd: int | None, from_name: str, to_fd: int | None, to_name: str, info: os.stat_result) -> None:
    """Atomically rename unless the destination exists (``EEXIST`` then). A ``None`` descriptor
    means the name is a path (the path-based act on Linux)."""
    renameat2 = _renameat2()
    if renameat2 is not None and (from_fd is not None or sys.platform.startswith("linux")):
        import ctypes

        source_fd = _AT_FDCWD if from_fd is None else from_fd
        target_fd = _AT_FDCWD if to_fd is None else to_fd
        if renameat2(source_fd, os.fsencode(from_name), target_fd, os.fsencode(to_name), _RENAME_NOREPLACE) == 0:
            return
        code = ctypes.get_errno()
        # EINVAL (Linux) or ENOTSUP (macOS): the file system lacks the flag.
        if code not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(code, os.strerror(code))
    if not stat.S_ISDIR(info.st_mode):
        # link() never replaces: the destination appears atomically or not at all.
        os.link(from_name, to_name, src_dir_fd=from_fd, dst_dir_fd=to_fd, follow_symlinks=False)
        os.unlink(from_name, dir_fd=from_fd)
        return
    # Directories cannot be hard-linked: check, then rename (a race remains on such systems).
    try:
        os.stat(to_name, dir_fd=to_fd, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(from_name, to_name, src_dir_fd=from_fd, dst_dir_fd=to_fd)
        return
    raise OSError(errno.EEXIST, os.strerror(errno.EEXIST))
