"""Confinement mechanism for Windows: open first, then check the opened handle's final path.

Windows has no ``openat``/``O_NOFOLLOW`` through the C runtime, so the POSIX mechanisms
(:mod:`._confine_openat2`, :mod:`._confine_walk`) cannot run there. This one keeps their rule
(a directory is opened *beneath* a root, and a link is followed only while it stays inside the
*same* root) with Windows' own tools, through ``ctypes`` on ``kernel32``:

1. **String rules first.** Every component is checked by :func:`winpaths.check_component`:
   reserved device names, alternate data streams (``name:stream``), trailing dots and spaces,
   8.3 short names and invalid characters are refused before anything is opened.
2. **Walk, holding every directory.** From the root down, each component is opened with
   ``CreateFileW(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)`` and a share mode
   *without* ``FILE_SHARE_DELETE``: while the walk holds a directory, nobody can rename it,
   delete it, or put a junction in its place, so the path below it stays the path that was
   checked. The handle's attributes say whether the component is a reparse point (a symbolic
   link, a junction, a mount point, an app-exec link...).
3. **Open, then verify.** A reparse point is opened again *following* it, and the new handle's
   final path (``GetFinalPathNameByHandleW``, which resolves every link, junction and mount on the
   way, in the kernel) must lie inside the same root (:func:`winpaths.is_within`, case-insensitive,
   by whole components); the walk then goes on from the components that final path names below
   the root. A reparse point leaving the roots, or one that cannot be resolved (dangling), is
   refused, and nothing was read or written through it. Every directory handle the walk returns
   is verified the same way, so a root reached by another spelling (a ``subst`` drive, a
   ``\\\\?\\`` path, a short name in the root's own path) is still compared by what it really is.

``available()`` is true only on Windows. The module imports on any system (``ctypes.windll`` is
looked up only when a mechanism is made), so the rules and tests run on Linux.

How it plugs in: :func:`mcp_ref_fs.root.choose_mechanism` accepts ``"windows"`` and picks this
mechanism automatically on Windows. Its ``open_dir`` has the same contract as the other
mechanisms' (a directory beneath a root, and the components it really opened), with Windows
handles instead of descriptors: the root is given by its real path and the result is a
``HANDLE`` to close with :meth:`WindowsMechanism.close`. The sandbox's *act* step
(``root.Sandbox._lookup`` and the operations) is written with POSIX ``*at`` calls and
``dir_fd=`` arguments, which Windows does not support; running ``mcp-ref-fs`` on Windows needs
that step ported to these handles (open the final name relative to the held parent, then
``msvcrt.open_osfhandle`` for a descriptor). That port is not done: see docs/filesystem-server.md.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any, Callable, Sequence

from . import winpaths

FollowLink = Callable[[tuple[str, ...], str, tuple[str, ...]], tuple[str, ...]]

# winnt.h / fileapi.h
GENERIC_READ = 0x80000000
FILE_READ_ATTRIBUTES = 0x80
FILE_SHARE_READ = 0x1
FILE_SHARE_WRITE = 0x2
OPEN_EXISTING = 3
FILE_FLAG_BACKUP_SEMANTICS = 0x02000000
FILE_FLAG_OPEN_REPARSE_POINT = 0x00200000
FILE_ATTRIBUTE_DIRECTORY = 0x10
FILE_ATTRIBUTE_REPARSE_POINT = 0x400
FILE_NAME_NORMALIZED = 0x0
VOLUME_NAME_DOS = 0x0
INVALID_HANDLE_VALUE = ctypes.c_void_p(-1).value
MAX_REPARSE_HOPS = 40
# Directories are held without FILE_SHARE_DELETE: they cannot be renamed or removed meanwhile.
_HOLD_SHARE = FILE_SHARE_READ | FILE_SHARE_WRITE


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
        raise Escape(13, f"{final} is outside the allowed directories")
    return best[1]


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


class WindowsMechanism:
    """Open directories beneath a root by walking with held handles; verify final paths."""

    name = "windows"

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

    # --- handles ---------------------------------------------------------------------------------

    def _error(self, what: str) -> OSError:
        code = ctypes.get_last_error()  # type: ignore[attr-defined]
        return ctypes.WinError(code, f"{what}: {ctypes.FormatError(code)}")  # type: ignore[attr-defined]

    def _open(self, path: str, *, follow: bool) -> int:
        flags = FILE_FLAG_BACKUP_SEMANTICS | (0 if follow else FILE_FLAG_OPEN_REPARSE_POINT)
        handle = self._create("\\\\?\\" + path if not path.startswith("\\\\") else path, FILE_READ_ATTRIBUTES, _HOLD_SHARE, None, OPEN_EXISTING, flags, None)
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

    # --- the mechanism ----------------------------------------------------------------------------

    def open_dir(self, root: str, parts: Sequence[str], follow: FollowLink | None = None) -> tuple[int, tuple[str, ...]]:
        """A handle of the directory at ``parts`` beneath the root whose real path is ``root``,
        and the components really opened. ``follow`` is unused: a reparse point is judged by its
        target's final path (see the module docstring), which is what the POSIX link policy
        decides from the link text. Raises ``Escape``, ``winpaths.WindowsPathError`` or ``OSError``."""
        for name in parts:
            winpaths.check_component(name)
        base = winpaths.parse_absolute(root, check=False)
        pending = tuple(parts)
        hops = 0
        while True:
            held = [self._open(str(base), follow=True)]
            try:
                check_final_path(self.final_path(held[0]), [root])
                current = base
                for index, name in enumerate(pending):
                    current = winpaths.WinPath(current.anchor, current.parts + (name,))
                    handle = self._open(str(current), follow=False)
                    held.append(handle)
                    attributes = self.attributes(handle)
                    if attributes & FILE_ATTRIBUTE_REPARSE_POINT:
                        hops += 1
                        if hops > MAX_REPARSE_HOPS:
                            raise OSError(40, "too many reparse points")  # ELOOP
                        target = self._open(str(current), follow=True)
                        try:
                            final = self.final_path(target)
                        finally:
                            self.close(target)
                        check_final_path(final, [root])  # Escape when the link leaves this root
                        below = winpaths.below(winpaths.parse_absolute(final, check=False), base) or ()
                        pending = tuple(below) + tuple(pending[index + 1 :])
                        break
                    if not attributes & FILE_ATTRIBUTE_DIRECTORY:
                        raise NotADirectoryError(20, f"{current} is not a directory")
                else:
                    last = held.pop()
                    check_final_path(self.final_path(last), [root])
                    return last, pending
            finally:
                for handle in held:
                    self.close(handle)
            # restart from the root with the rewritten path (the held handles were released)

    def verify(self, handle: int, roots: Sequence[str]) -> int:
        """For a handle opened any other way (a file, say): the index of the root holding it, or
        ``Escape`` (close the handle then; nothing was read or written through it)."""
        return check_final_path(self.final_path(handle), roots)
