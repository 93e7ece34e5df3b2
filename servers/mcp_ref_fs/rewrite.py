"""Atomic rewrites: the one way mcp-ref-fs writes a file's content, keeping what the file is.

``write_file`` and ``edit_file`` (:mod:`.writing`) both end here, through
``Sandbox.replace_file``: root.py locates the path, opens its directory confined beneath the
root and looks the final name up; this module does the writing. A rewrite never changes the old
file in place. It writes a new file in the same directory and renames it over the old one, so a
reader sees the old content or the new, never a mix, and a crash leaves the old file whole.
Step by step (:meth:`Rewrite.start`, then :meth:`Rewrite.commit`):

1. **May this user write the file?** A rename needs only the directory's permission, so without a
   check a rewrite would replace files the server's user may not write (a ``chmod 444`` file,
   another user's file in a shared directory). The existing file is opened for writing
   (``O_WRONLY``; never truncated, never following the name, non-blocking), as any program
   writing it would, and the kernel answers with every rule it has: permission bits and ACLs,
   root's override (root may write a 0444 file, and so may this server run as root), read-only
   mounts, immutable and append-only files, a program being run. A refusal is ``Refused``
   (:func:`_not_writable` says which) and nothing has been created.
2. **What must the new file keep?** Read from that descriptor, the very file (checked by device
   and inode): owner and group, permission bits (without set-user-ID and set-group-ID, which the
   kernel also clears on any write), and the extended attributes (:func:`_read_xattrs`):
   ``user.*``, ``trusted.*`` where the server may see them (root), the POSIX ACL
   (``system.posix_acl_access``) and any other the file system lists, but ``security.*``: the new
   file gets the security labels any new file there gets, and no file capability
   (``security.capability``) survives new content (the kernel drops it on a write as well).
3. **The new file** is created in the same directory, without a name where Linux can
   (``O_TMPFILE``), so a crash at any moment before the commit leaves nothing behind; elsewhere,
   or on a file system without it, under a name of the server's own, ``.mcp-ref-<16 hex>.tmp``
   (:func:`is_temporary`), which listings never show and which the next rewrite in that directory
   removes once it is an hour old (:func:`sweep`). The old owner and group are given first: when
   the server may not (an unprivileged server and another user's file, or a group it is not in),
   the rewrite is refused before anything is written, as the file would otherwise change hands.
4. **Commit**: the extended attributes, then the permission bits, ``fsync``. Then the target must
   still be the file that was read (device, inode, size, modification and change times in ns;
   else ``FileChanged`` and nothing is written). Then the new file gets its name (an unnamed one
   is linked to a temporary name first) and is renamed over the target, and the directory is
   ``fsync``-ed. A file that did not exist is named without replacing anything, so a file another
   program created meanwhile is never overwritten (``FileChanged`` again).

What a rewrite keeps and what it cannot (the inode number, other hard links, file flags, birth
time) is listed in docs/filesystem-server.md, "What a rewrite keeps". A few microseconds pass
between the check of step 4 and the rename: another program's write in that window, or one made
later through a descriptor it opened before, goes to the old file and is lost, as with every
editor that saves by renaming.

``FileLocks`` lets the tools run the rewrites of one file (device and inode) one at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
import sys
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

from ._act import TEMPORARY_PREFIX, is_temporary
from .places import FileChanged, Refused, _fs_error

if TYPE_CHECKING:
    from ._confine import Act
    from .places import Location

STALE_SECONDS = 3600.0  # a temporary file of the server's naming older than this is a crash's leftover
_SWEPT_MAX = 10_000  # directories remembered as swept (then forgotten, and swept again)
_swept: set[tuple[int, int]] = set()

ACL_ACCESS = "system.posix_acl_access"
_XATTRS = hasattr(os, "listxattr")  # Linux; Python has no extended attribute calls elsewhere
_UNSUPPORTED = {errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}
# O_TMPFILE refused: no support in the file system, a kernel before 3.11 (EISDIR), or a filter.
_NO_UNNAMED = _UNSUPPORTED | {errno.EISDIR, errno.EINVAL, errno.ENOSYS}

# Absent on Windows (os.fchmod until Python 3.13, os.fchown always): looked up once, here.
_fchown: Callable[..., None] = getattr(os, "fchown", lambda fd, uid, gid: None)
_fchmod: Callable[[int, int], None] | None = getattr(os, "fchmod", None)

Snapshot = tuple[int, int, int, int, int]


def snapshot(info: os.stat_result) -> Snapshot:
    """What says a file is still the one that was read: device, inode, size, mtime and ctime (ns).
    A write of the same size is caught by the times: Linux 6.13 and later stamp a change in
    nanoseconds when the times were looked at since the last one (multigrain timestamps; on ext4
    with Linux 6.18, 2000 same-size writes each right after a ``stat`` all changed the mtime), and
    the size catches an append even where the clock is coarse."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _temporary_name() -> str:
    return f"{TEMPORARY_PREFIX}{os.urandom(8).hex()}.tmp"


class Rewrite:
    """A new file that becomes the target on :meth:`commit`, or vanishes on :meth:`abort` (or on
    leaving ``with`` without a commit, or with an exception). Write its content with :meth:`write`."""

    def __init__(self, act: Act, location: Location, dir_fd: Any, name: str,
                 expect: Snapshot | None, kept: _Kept | None) -> None:
        self.location = location
        self.existed = kept is not None
        self.fd = -1
        self._act = act
        self._dir_fd = dir_fd
        self._name = name
        self._expect = expect
        self._kept = kept
        self._temporary: str | None = None  # its name, while it has one
        self._done = False

    @classmethod
    def start(cls, act: Act, location: Location, dir_fd: Any, name: str,
              info: os.stat_result | None, expect: Snapshot | None = None) -> Rewrite:
        """Begin rewriting ``name`` in the held directory ``dir_fd`` (``info``: its ``lstat``, a
        regular file; None when it does not exist yet). ``expect``: the file's :func:`snapshot`
        when the caller read it (``FileChanged`` if it is no longer that). The rewrite owns
        ``dir_fd`` from here on (it is closed on failure too)."""
        try:
            if expect is not None and (info is None or snapshot(info) != expect):
                raise FileChanged(f"{location.display} changed after it was read; nothing was written")
            kept = None if info is None else _keep(act, dir_fd, name, info, location)
            sweep(act, dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                act.close(dir_fd)
            raise
        rewrite = cls(act, location, dir_fd, name, None if info is None else snapshot(info), kept)
        try:
            # A rewrite starts private (0600) and gets the old bits at the commit; a new file gets
            # what any new file there gets (0666 less the umask, or the directory's default ACL).
            rewrite.fd = rewrite._create(0o600 if kept is not None else 0o666)
            if kept is not None:
                rewrite._give_owner(kept)
        except BaseException:
            rewrite.abort()
            raise
        return rewrite

    # --- writing --------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]

    def commit(self) -> None:
        """Give the new file the old one's attributes and permission bits, flush it, check that the
        target is still the file that was read, and put the new file in its place."""
        display = self.location.display
        try:
            if self._kept is not None:
                _write_xattrs(self.fd, self._kept.xattrs, display)
                if _fchmod is not None:  # Windows before Python 3.13 has none (and only a read-only bit)
                    _fchmod(self.fd, self._kept.mode)
            os.fsync(self.fd)
            self._check_unchanged()
            self._name_it()
        except OSError as error:
            self.abort()
            raise _fs_error(error, display) from None
        except BaseException:
            self.abort()
            raise
        self._done = True
        try:
            self._act.sync(self._dir_fd)  # make the rename itself durable
        except OSError:
            pass
        self._close()

    def abort(self) -> None:
        """Remove the new file; the target is untouched."""
        if self._done:
            return
        self._done = True
        if self._temporary is not None:
            try:
                self._act.unlink(self._dir_fd, self._temporary)
            except OSError:
                pass
        self._close()

    def __enter__(self) -> Rewrite:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None or not self._done:
            self.abort()

    # --- the steps --------------------------------------------------------------------------------

    def _create(self, mode: int) -> int:
        act, dir_fd = self._act, self._dir_fd
        if _unnamed_files():
            try:
                return act.create_unnamed(dir_fd, mode)
            except OSError as error:
                if error.errno not in _NO_UNNAMED:
                    raise
        self._temporary = _temporary_name()
        return act.create(dir_fd, self._temporary, mode)

    def _give_owner(self, kept: _Kept) -> None:
        info = os.fstat(self.fd)
        if (info.st_uid, info.st_gid) == (kept.uid, kept.gid):
            return
        try:
            _fchown(self.fd, kept.uid if info.st_uid != kept.uid else -1, kept.gid if info.st_gid != kept.gid else -1)
        except PermissionError:
            raise Refused(
                f"{self.location.display} belongs to user {kept.uid} and group {kept.gid}, which this server's user may "
                "not give a new file; a rewrite would change its owner, so it is refused and nothing was written"
            ) from None

    def _check_unchanged(self) -> None:
        if self._expect is None:
            return  # a new file: named without replacing anything (_name_it)
        try:
            now = self._act.lstat(self._dir_fd, self._name)
        except FileNotFoundError:
            now = None
        if now is None or snapshot(now) != self._expect:
            raise FileChanged(f"{self.location.display} changed while it was being written (another program wrote, "
                              "replaced or deleted it); nothing was written")

    def _name_it(self) -> None:
        """Put the new file at the target's name: over the old file, or (a new file) only where
        nothing is."""
        act, dir_fd, name = self._act, self._dir_fd, self._name
        fd, self.fd = self.fd, -1
        try:
            info = os.fstat(fd)
            if self._temporary is None:  # unnamed so far
                if not self.existed:
                    try:
                        act.link_unnamed(fd, dir_fd, name)  # never replaces anything
                    except FileExistsError:
                        raise self._created_meanwhile() from None
                    return
                self._temporary = _temporary_name()
                act.link_unnamed(fd, dir_fd, self._temporary)
        finally:
            os.close(fd)  # before the rename: Windows cannot rename a file its creator holds open
        if self.existed:
            act.replace(dir_fd, self._temporary, name)
        else:
            try:
                act.rename_no_replace(dir_fd, self._temporary, dir_fd, name, info)
            except FileExistsError:
                raise self._created_meanwhile() from None
        self._temporary = None

    def _created_meanwhile(self) -> FileChanged:
        return FileChanged(f"{self.location.display} was created by another program while it was being written; "
                           "nothing was written")

    def _close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
        try:
            self._act.close(self._dir_fd)
        except OSError:
            pass
        self.fd = self._dir_fd = -1


# --- what the new file keeps -------------------------------------------------------------------------


class _Kept:
    """The old file's owner, group, permission bits and extended attributes."""

    __slots__ = ("uid", "gid", "mode", "xattrs")

    def __init__(self, uid: int, gid: int, mode: int, xattrs: list[tuple[str, bytes]]) -> None:
        self.uid, self.gid, self.mode, self.xattrs = uid, gid, mode, xattrs


def _keep(act: Act, dir_fd: Any, name: str, info: os.stat_result, location: Location) -> _Kept:
    """Open the existing file for writing (refused: ``Refused``) and read what a rewrite keeps."""
    try:
        fd = act.open_for_writing(dir_fd, name)
    except OSError as error:
        raise _not_writable(error, location) from None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(opened.st_mode):
            raise FileChanged(f"{location.display} changed while it was being opened; nothing was written")
        xattrs = _read_xattrs(fd, location.display)
    finally:
        os.close(fd)
    return _Kept(opened.st_uid, opened.st_gid, stat.S_IMODE(opened.st_mode) & ~(stat.S_ISUID | stat.S_ISGID), xattrs)


def _not_writable(error: OSError, location: Location) -> Exception:
    """The error for an existing file the server's user may not open for writing."""
    shown, code = location.display, error.errno
    if code in (errno.EACCES, errno.EPERM):
        return Refused(f"Permission denied: the user this server runs as may not write {shown} (its permissions, an "
                       "ACL, or an immutable or append-only flag refuse it); nothing was written")
    if code == errno.EROFS:
        return Refused(f"{shown} is on a read-only file system; nothing was written")
    if code == errno.ETXTBSY:
        return Refused(f"{shown} is a program that is running; nothing was written")
    if code in (errno.EAGAIN, errno.EWOULDBLOCK):
        return Refused(f"{shown} is held by another program (a lease); nothing was written, try again later")
    if code in (errno.ELOOP, errno.ENXIO, errno.ENOENT):  # swapped for a link or a FIFO, or gone
        return FileChanged(f"{shown} changed while it was being opened; nothing was written")
    return _fs_error(error, shown)


def _read_xattrs(fd: int, shown: str) -> list[tuple[str, bytes]]:
    """The extended attributes a rewrite carries over (module docstring: all but ``security.*``)."""
    if not _XATTRS:
        return []
    try:
        names = os.listxattr(fd)
    except OSError as error:
        if error.errno in _UNSUPPORTED:
            return []
        raise
    kept = []
    for name in names:
        if name.startswith("security."):
            continue
        try:
            kept.append((name, os.getxattr(fd, name)))
        except OSError as error:
            if error.errno == errno.ENODATA:
                continue  # removed meanwhile
            raise Refused(f"{shown} has the extended attribute {name}, which this server cannot read ({error.strerror}); "
                          "a rewrite would drop it, so it is refused and nothing was written") from None
    return kept


def _write_xattrs(fd: int, xattrs: list[tuple[str, bytes]], shown: str) -> None:
    """Give the new file the old one's extended attributes, and no ACL it did not have."""
    if not _XATTRS:
        return
    for name, value in xattrs:
        try:
            os.setxattr(fd, name, value)
        except OSError as error:
            raise Refused(f"{shown} has the extended attribute {name}, which the new file cannot be given "
                          f"({error.strerror}); a rewrite would drop it, so it is refused and nothing was written") from None
    if all(name != ACL_ACCESS for name, _value in xattrs):
        # A new file inherits the directory's default ACL; the file it replaces had none of its own.
        try:
            os.removexattr(fd, ACL_ACCESS)
        except OSError as error:
            if error.errno not in _UNSUPPORTED | {errno.ENODATA}:
                raise


def _unnamed_files() -> bool:
    """Can new files start without a name here? Linux with ``/proc`` (the name is given through
    the descriptor's ``/proc/self/fd`` link)."""
    from ._act import FD_PATHS, O_TMPFILE

    return bool(O_TMPFILE) and sys.platform.startswith("linux") and os.path.isdir(FD_PATHS)


def sweep(act: Act, dir_fd: Any) -> None:
    """Remove the temporary files of the server's naming that a crash left in this directory
    (regular files older than ``STALE_SECONDS``: no rewrite lasts that long). Once per directory
    per server run: the first rewrite there pays one listing of it."""
    try:
        info = act.stat_dir(dir_fd)
    except OSError:
        return
    key = (info.st_dev, info.st_ino)
    if key in _swept:
        return
    if len(_swept) >= _SWEPT_MAX:
        _swept.clear()
    _swept.add(key)
    try:
        with act.scandir(dir_fd) as scan:
            found = [entry.name for entry in scan if entry.name.startswith(TEMPORARY_PREFIX) and is_temporary(entry.name)]
    except OSError:
        return
    cutoff = time.time() - STALE_SECONDS
    for name in found:
        try:
            left = act.lstat(dir_fd, name)
            if stat.S_ISREG(left.st_mode) and left.st_mtime < cutoff:
                act.unlink(dir_fd, name)
        except OSError:
            pass


# --- one rewrite of a file at a time ---------------------------------------------------------------------


class FileLocks:
    """A lock per file, by (device, inode), that the tools hold while they rewrite it, so two
    rewrites of one file inside this server never overlap (the later one reads what the earlier
    one wrote). Locks exist only while someone holds or awaits them."""

    def __init__(self) -> None:
        self._locks: dict[tuple[int, int], list[Any]] = {}  # key -> [asyncio.Lock, users]

    @contextlib.asynccontextmanager
    async def hold(self, key: tuple[int, int]) -> AsyncIterator[None]:
        entry = self._locks.get(key)
        if entry is None:
            entry = self._locks[key] = [asyncio.Lock(), 0]
        entry[1] += 1
        lock: asyncio.Lock = entry[0]
        try:
            async with lock:
                yield
        finally:
            entry[1] -= 1
            if not entry[1]:
                del self._locks[key]
