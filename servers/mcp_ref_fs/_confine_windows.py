"""Confinement on Windows: held directory handles, final-path checks, and the path-based act step.

Windows has no ``openat``/``O_NOFOLLOW`` through the C runtime, so the POSIX mechanisms
(:mod:`._confine_openat2`, :mod:`._confine_walk`) and the ``*at`` act step cannot run there. This
module keeps their rule (a directory is opened *beneath* a root, and a link is followed only while
it stays inside the *same* root) with Windows' own tools, in two parts that root.py plugs in
exactly where the POSIX ones go: :class:`WindowsMechanism` (the *resolve* step) and
:class:`WindowsPathAct` (the *act* step).

Resolve (:meth:`WindowsMechanism.open_dir`)
-------------------------------------------
1. **String rules first.** Every component is checked by :func:`winpaths.check_component`:
   reserved device names, alternate data streams (``name:stream``), trailing dots and spaces,
   8.3 short names and invalid characters are refused before anything is opened.
2. **Walk, holding every directory.** From the root down, each component is opened with
   ``CreateFileW(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)`` and a share mode
   *without* ``FILE_SHARE_DELETE``: while a directory is held, nobody can rename it, delete it, or
   put a junction in its place. The walk returns *all* the handles from the root down (a
   :class:`WindowsDirectory`), so the whole path to the directory stays the path that was checked
   for as long as the operation runs; the root itself is held the same way for the sandbox's
   life. The handle's attributes say whether a component is a reparse point (a symbolic link, a
   junction, a mount point, an app-exec link...).
3. **Open, then verify.** A reparse point is opened again *following* it, and the new handle's
   final path (``GetFinalPathNameByHandleW``, which resolves every link, junction and mount on the
   way, in the kernel) is handed to the root's link policy (root.py's ``_follow_link``, the
   Windows spelling in :func:`winpaths.follow_link`) as if it were the link's text: inside the
   same root it names the components the walk goes on from (case-insensitively, by whole
   components); anywhere else, or unresolvable (dangling), it is refused, and nothing was read or
   written through it. The directory finally returned is verified the same way, so a root
   reached by another spelling (a ``subst`` drive, a ``\\\\?\\`` path, a short name in the root's
   own path) is still compared by what it really is.

Act (:class:`WindowsPathAct`, a :class:`mcp_ref_fs._act.PathAct`)
-----------------------------------------------------------------
Every operation names ``held directory's final path + \\ + final name`` (in the ``\\\\?\\`` form,
which Win32 does not normalise: no trailing-dot stripping, no device names, no ``MAX_PATH``) and
never follows the final name. The path-based code is shared with Linux, where the whole test suite
runs it (``MCP_REF_FS_ACT=paths``: see :mod:`mcp_ref_fs._act`); what is Windows' own is here:

* opening an existing file (to read it, or to learn whether this user may write it before an
  atomic rewrite): ``CreateFileW(OPEN_EXISTING, FILE_FLAG_OPEN_REPARSE_POINT)``, then the handle's
  attributes: a reparse point is refused (``ELOOP``, as ``O_NOFOLLOW`` answers), a
  directory too (``EISDIR``); only then ``msvcrt.open_osfhandle`` makes it a C runtime descriptor;
* a directory entered by a walk: the same open with ``FILE_FLAG_BACKUP_SEMANTICS`` and the held
  share mode; a reparse point is not entered (``ELOOP``), as POSIX walks never enter links;
* ``lstat`` marks a junction (a name-surrogate reparse point Python reports as a directory) as a
  link, so root.py's link policy judges it like a symbolic link (``os.readlink`` reads both);
* a move that never replaces is ``os.rename`` (``MoveFileExW`` without ``MOVEFILE_REPLACE_EXISTING``
  fails when the destination exists, a link included); an atomic write's commit is ``os.replace``
  of a temporary file of the server's own naming (Windows has no unnamed files);
  a directory cannot be flushed through the C runtime, so that ``fsync`` is skipped;
* the real path of a held directory (for the watcher) is its final path.

What has run where: the logic of both classes runs on Linux against a fake ``kernel32``
(``tests/fs/test_windows_confinement.py``); the path-based act step they plug into runs the whole
sandbox suite on Linux. Only :class:`Kernel32` (the ``ctypes`` bindings) and
``Sandbox.open``'s Windows spelling branch never ran: nobody has run this on Windows yet.

``available()`` is true only on Windows; the module imports anywhere (``ctypes.WinDLL`` and
``msvcrt`` are reached only when :class:`Kernel32` is made).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from typing import Any, Sequence

from . import winpaths
from ._act import PathAct
from ._confine import MAX_LINK_HOPS, Budget, FollowLink

# winnt.h / fileapi.h
GENERIC_READ = 0x80000000
GENERIC_WRITE = 0x40000000
FILE_READ_ATTRIBUTES = 0x80
FILE_SHARE_READ = 0x1
FILE_SHARE_WRITE = 0x2
FILE_SHARE_DELETE = 0x4
OPEN_EXISTING = 3
FILE_FLAG_BACKUP_SEMANTICS = 0x02000000
FILE_FLAG_OPEN_REPARSE_POINT = 0x00200000
FILE_ATTRIBUTE_DIRECTORY = 0x10
FILE_ATTRIBUTE_REPARSE_POINT = 0x400
FILE_NAME_NORMALIZED = 0x0
VOLUME_NAME_DOS = 0x0
INVALID_HANDLE_VALUE = ctypes.c_void_p(-1).value
# A reparse tag with this bit names another file (symbolic links, junctions, mount points).
REPARSE_TAG_NAME_SURROGATE = 0x20000000
IO_REPARSE_TAG_MOUNT_POINT = 0xA0000003
MAX_REPARSE_HOPS = MAX_LINK_HOPS  # for the whole lookup (its Budget), as on POSIX
# Directories are held without FILE_SHARE_DELETE: they cannot be renamed or removed meanwhile.
HOLD_SHARE = FILE_SHARE_READ | FILE_SHARE_WRITE
# Files being read do not stop others from replacing or deleting them (an editor saving).
READ_SHARE = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE
# Never follow the final component; directories need backup semantics to be opened at all.
DIRECTORY_NOFOLLOW = FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT
DIRECTORY_FOLLOW = FILE_FLAG_BACKUP_SEMANTICS
FILE_NOFOLLOW = FILE_FLAG_OPEN_REPARSE_POINT


class Escape(PermissionError):
    """An opened handle's final path is outside the roots (or not a path on a drive at all)."""


def available() -> bool:
    """Is this Windows (with ``kernel32`` reachable through ctypes)?"""
    return sys.platform == "win32" and hasattr(ctypes, "windll")


def check_final_path(final: str, roots: Sequence[str]) -> int:
    """The index of the root holding ``final`` (a final path as Windows reports it); the longest
    root wins. Raises ``Escape`` when no root holds it."""
    best: tuple[int, int] | None = None
    for index, root in enumerate(roots):
        if winpaths.is_within(final, root):
            depth = len(winpaths.parse_absolute(root, check=False).parts)
            if best is None or depth > best[0]:
                best = (depth, index)
    if best is None:
        raise Escape(errno.EACCES, f"{final} is outside the allowed directories")
    return best[1]


def long_path(path: str) -> str:
    """``path`` in the Win32 file namespace (``\\\\?\\C:\\x``, ``\\\\?\\UNC\\server\\share\\x``),
    which Windows takes literally: no ``MAX_PATH``, no stripping of trailing dots, no device names."""
    if path.startswith("\\\\?\\"):
        return path
    if path.startswith("\\\\"):
        return "\\\\?\\UNC\\" + path[2:]
    return "\\\\?\\" + path


def as_link(info: os.stat_result, tag: int) -> os.stat_result:
    """``info`` (an ``lstat`` result) with the mode of a link when ``tag`` (its reparse tag) names
    another file: Python reports a junction as a directory, and the sandbox must judge it as the
    link it is. Other reparse points (cloud placeholders, dedup) stay what they are."""
    if not tag & REPARSE_TAG_NAME_SURROGATE or stat.S_ISLNK(info.st_mode):
        return info
    fields = list(info)
    fields[0] = stat.S_IFLNK | stat.S_IMODE(info.st_mode)
    hidden = {name: getattr(info, name) for name in dir(info)
              if name.startswith("st_") and name not in _VISIBLE_STAT_FIELDS}
    return os.stat_result(fields, hidden)


_VISIBLE_STAT_FIELDS = frozenset(["st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid", "st_size"])


class WindowsDirectory:
    """A directory held open: ``handles`` (owned, closed by ``close``) keep it and every directory
    between it and its root from being renamed or replaced; ``path`` is its verified final path
    (``\\\\?\\`` form), ``root`` the final path of its root."""

    __slots__ = ("handles", "path", "root")

    def __init__(self, handles: list[int], path: str, root: str) -> None:
        self.handles = handles
        self.path = path
        self.root = root

    def __repr__(self) -> str:
        return f"WindowsDirectory({self.path!r}, {len(self.handles)} handles)"


class Kernel32:  # pragma: no cover - Windows only: the ctypes bindings, never run on Linux
    """The few ``kernel32``/``msvcrt`` calls this module makes. Tests give the classes below a fake
    with the same five methods."""

    def __init__(self) -> None:
        if not available():
            raise OSError("the Windows confinement mechanism needs Windows")
        from ctypes import wintypes

        kernel32: Any = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
        self._create = kernel32.CreateFileW
        self._create.argtypes = [wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD, ctypes.c_void_p, wintypes.DWORD, wintypes.DWORD, wintypes.HANDLE]
        self._create.restype = wintypes.HANDLE
        self._close = kernel32.CloseHandle
        self._close.argtypes = [wintypes.HANDLE]
        self._final = kernel32.GetFinalPathNameByHandleW
        self._final.argtypes = [wintypes.HANDLE, wintypes.LPWSTR, wintypes.DWORD, wintypes.DWORD]
        self._final.restype = wintypes.DWORD
        self._info = kernel32.GetFileInformationByHandle
        self._info.argtypes = [wintypes.HANDLE, ctypes.POINTER(_ByHandleFileInformation)]

    def _error(self, what: str) -> OSError:
        code = ctypes.get_last_error()  # type: ignore[attr-defined]
        return ctypes.WinError(code, f"{what}: {ctypes.FormatError(code)}")  # type: ignore[attr-defined]

    def open(self, path: str, access: int, share: int, flags: int) -> int:
        """``CreateFileW(path, access, share, OPEN_EXISTING, flags)``; ``OSError`` on failure."""
        handle = self._create(path, access, share, None, OPEN_EXISTING, flags, None)
        if handle in (None, INVALID_HANDLE_VALUE):
            raise self._error(path)
        return int(handle)

    def close(self, handle: int) -> None:
        self._close(handle)

    def attributes(self, handle: int) -> int:
        info = _ByHandleFileInformation()
        if not self._info(handle, ctypes.byref(info)):
            raise self._error("GetFileInformationByHandle")
        return int(info.dwFileAttributes)

    def final_path(self, handle: int) -> str:
        """The handle's path with every link, junction and mount resolved (``\\\\?\\C:\\...``)."""
        size = 512
        while True:
            buffer = ctypes.create_unicode_buffer(size)
            length = self._final(handle, buffer, size, FILE_NAME_NORMALIZED | VOLUME_NAME_DOS)
            if length == 0:
                raise self._error("GetFinalPathNameByHandleW")
            if length < size:
                return buffer.value
            size = length + 1

    def to_fd(self, handle: int, flags: int) -> int:
        """A C runtime descriptor owning ``handle`` (``msvcrt.open_osfhandle``)."""
        import msvcrt

        return msvcrt.open_osfhandle(handle, flags)  # type: ignore[attr-defined]


class _ByHandleFileInformation(ctypes.Structure):
    _fields_ = [
        ("dwFileAttributes", ctypes.c_uint32),
        ("ftCreationTime", ctypes.c_uint64),
        ("ftLastAccessTime", ctypes.c_uint64),
        ("ftLastWriteTime", ctypes.c_uint64),
        ("dwVolumeSerialNumber", ctypes.c_uint32),
        ("nFileSizeHigh", ctypes.c_uint32),
        ("nFileSizeLow", ctypes.c_uint32),
        ("nNumberOfLinks", ctypes.c_uint32),
        ("nFileIndexHigh", ctypes.c_uint32),
        ("nFileIndexLow", ctypes.c_uint32),
    ]


def _open_held_directory(api: Any, path: str) -> int:
    """A handle of the directory ``path`` (final component not followed), held so that it cannot be
    renamed or replaced. A reparse point is ``ELOOP``, anything else not a directory ``ENOTDIR``."""
    handle = api.open(long_path(path), FILE_READ_ATTRIBUTES, HOLD_SHARE, DIRECTORY_NOFOLLOW)
    try:
        attributes = api.attributes(handle)
        if attributes & FILE_ATTRIBUTE_REPARSE_POINT:
            raise OSError(errno.ELOOP, f"{path} is a link or junction; not entered")
        if not attributes & FILE_ATTRIBUTE_DIRECTORY:
            raise NotADirectoryError(errno.ENOTDIR, f"{path} is not a directory")
    except BaseException:
        api.close(handle)
        raise
    return handle


class WindowsMechanism:
    """Open directories beneath a root by walking with held handles; verify final paths."""

    name = "windows"

    def __init__(self, api: Any = None) -> None:
        self._api = api if api is not None else Kernel32()

    def open_dir(self, root: WindowsDirectory, parts: Sequence[str], follow: FollowLink | None = None,
                 budget: Budget | None = None) -> tuple[WindowsDirectory, tuple[str, ...]]:
        """The directory at ``parts`` beneath the held ``root``, held, and the components really
        opened (as the POSIX mechanisms report them). A reparse point on the way is judged by its
        target's final path through ``follow`` (the root's link policy; without one, it must lie
        inside the root). Raises what ``follow`` raises, ``Escape``, ``winpaths.WindowsPathError``
        or ``OSError`` (``ELOOP`` once ``budget``, the lookup's, has no hop left), or ``Costly`` once
        its meter is spent; leaves no handle open then."""
        api = self._api
        budget = budget if budget is not None else Budget()
        for name in parts:
            winpaths.check_component(name)
        base = winpaths.parse_absolute(root.root, check=False)

        def judge(final: str, remaining: tuple[str, ...]) -> tuple[str, ...]:
            if follow is not None:
                return tuple(follow((), final, remaining))
            check_final_path(final, [root.root])
            return tuple(winpaths.below(winpaths.parse_absolute(final, check=False), base) or ()) + remaining

        pending = tuple(parts)
        while True:
            held: list[int] = []
            try:
                current = base
                for index, name in enumerate(pending):
                    current = winpaths.WinPath(current.anchor, current.parts + (name,))
                    budget.step()
                    try:
                        held.append(_open_held_directory(api, str(current)))
                        continue
                    except OSError as error:
                        if error.errno != errno.ELOOP:
                            raise
                    try:
                        budget.hop()
                    except OSError:
                        raise OSError(errno.ELOOP, "too many links and junctions") from None
                    budget.step()
                    target = api.open(long_path(str(current)), FILE_READ_ATTRIBUTES, READ_SHARE, DIRECTORY_FOLLOW)
                    try:
                        final = api.final_path(target)
                    finally:
                        api.close(target)
                    pending = judge(final, tuple(pending[index + 1 :]))
                    break
                else:
                    path = api.final_path(held[-1]) if held else root.path
                    resolved = judge(path, ())  # the directory really opened, as the policy sees it
                    directory = WindowsDirectory(held, path, root.root)
                    held = []  # now the directory's
                    return directory, resolved
            finally:
                for handle in held:
                    api.close(handle)
            # a reparse point inside the root: walk again from the root with the rewritten path

    def verify(self, handle: int, roots: Sequence[str]) -> int:
        """For a handle opened any other way: the index of the root holding it, or ``Escape``
        (close the handle then; nothing was read or written through it)."""
        return check_final_path(self._api.final_path(handle), roots)


class WindowsPathAct(PathAct):
    """The path-based act step with Windows' held handles (see the module docstring)."""

    sep = "\\"

    def __init__(self, api: Any = None) -> None:
        self._api = api if api is not None else Kernel32()

    def path(self, held: WindowsDirectory) -> str:
        return held.path

    def open_root(self, path: str) -> WindowsDirectory:
        """Hold a root (its real path: links on it are followed) for the sandbox's life."""
        api = self._api
        handle = api.open(long_path(path), FILE_READ_ATTRIBUTES, HOLD_SHARE, DIRECTORY_FOLLOW)
        try:
            if not api.attributes(handle) & FILE_ATTRIBUTE_DIRECTORY:
                raise NotADirectoryError(errno.ENOTDIR, f"{path} is not a directory")
            final = api.final_path(handle)
        except BaseException:
            api.close(handle)
            raise
        return WindowsDirectory([handle], final, final)

    def close(self, held: WindowsDirectory) -> None:
        handles, held.handles = held.handles, []
        for handle in handles:
            self._api.close(handle)

    def reopen(self, held: WindowsDirectory) -> WindowsDirectory:
        """The same directory with a handle of its own (the original may be closed first)."""
        return WindowsDirectory([_open_held_directory(self._api, held.path)], held.path, held.root)

    def stat_dir(self, held: WindowsDirectory) -> os.stat_result:
        return os.stat(held.path)

    def open_dir(self, held: WindowsDirectory, name: str) -> WindowsDirectory:
        """A subdirectory for a walk, held; a link or junction there is not entered (``ELOOP``).
        Its parent stays held by the walk, so only its own handle is needed."""
        path = self.at(held, name)
        return WindowsDirectory([_open_held_directory(self._api, path)], path, held.root)

    def open_path(self, path: str) -> int:
        return self._open_existing(path, GENERIC_READ, os.O_RDONLY)

    def open_path_for_writing(self, path: str) -> int:
        """The file opened for writing, never truncated: Windows' answer (its ACL, the read-only
        attribute, another program holding it without sharing) to whether this user may write it."""
        return self._open_existing(path, GENERIC_WRITE, os.O_WRONLY)

    def _open_existing(self, path: str, access: int, flags: int) -> int:
        api = self._api
        handle = api.open(path, access, READ_SHARE, FILE_NOFOLLOW)
        try:
            attributes = api.attributes(handle)
            if attributes & FILE_ATTRIBUTE_REPARSE_POINT:
                raise OSError(errno.ELOOP, f"{path} is a link or junction (changed since it was looked up)")
            if attributes & FILE_ATTRIBUTE_DIRECTORY:
                raise IsADirectoryError(errno.EISDIR, f"{path} is a directory")
            return int(api.to_fd(handle, flags | getattr(os, "O_BINARY", 0)))
        except BaseException:
            api.close(handle)
            raise

    def lstat_path(self, path: str) -> os.stat_result:
        info = os.stat(path, follow_symlinks=False)
        return as_link(info, getattr(info, "st_reparse_tag", 0))

    def rename_paths(self, source: str, target: str, info: os.stat_result) -> None:
        os.rename(source, target)  # MoveFileExW without MOVEFILE_REPLACE_EXISTING: never replaces

    def sync(self, held: WindowsDirectory) -> None:
        """Nothing: the C runtime cannot flush a directory (NTFS journals the rename itself)."""

    def real_path(self, held: WindowsDirectory) -> str | None:
        try:
            return str(winpaths.parse_absolute(held.path, check=False))
        except winpaths.WindowsPathError:
            return None
