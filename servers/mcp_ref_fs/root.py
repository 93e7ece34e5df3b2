"""THE sandbox of mcp-ref-fs. Every file operation of every tool and resource goes through its ``Sandbox``.

This module holds steps 1 and 2 below and reading; the sandbox's other parts are :mod:`.listing`
(listings and walks), :mod:`.changes` (creating, replacing, moving, deleting) and :mod:`.places`
(roots, locations and errors, which callers import from here).

Theory of operation
-------------------
The allowed directories (roots) are opened once, at start-up: each ``Root`` holds the directory
open (a descriptor; on Windows a handle that keeps it from being renamed), its canonical path
(``realpath``) and the path as the user gave it. From then on nothing is ever opened by a path
string that was not pinned first. A path from a client goes through three steps:

1. **Locate** (pure string work, no disk access). The path must be a non-empty string without
   NUL characters, valid Unicode, at most 4096 bytes. A relative path is taken relative to the
   first root; ``~`` is a literal name, never expanded. ``.``, ``..``, repeated and trailing
   slashes are resolved *lexically* (``/r/a/../b`` is ``/r/b`` whatever ``a`` is). The result
   must lie inside a root, compared by whole path components (``/r/a`` never admits
   ``/r/a_evil``), under either spelling of the root. A path outside every root is refused
   before anything touches the disk, so the answer never reveals whether it exists. On Windows
   the same rules take Windows spellings (:mod:`.winpaths`: drive letters, UNC and ``\\\\?\\``
   paths, either separator, compared case-insensitively; device names, streams, trailing dots
   and spaces and 8.3 short names refused).
2. **Resolve** beneath the root. The directories leading to the final name are opened by a
   *mechanism*: ``openat2(RESOLVE_BENEATH)`` where the Linux kernel offers it
   (:mod:`._confine_openat2`), otherwise a component-by-component walk with ``O_NOFOLLOW``
   (:mod:`._confine_walk`); on Windows a walk holding every directory's handle and checking final
   paths (:mod:`._confine_windows`). Symbolic links are followed only when their text, resolved
   against the directory that holds them, stays inside the *same* root (``_follow_link``); a link
   leaving the root, even a dangling one, is refused without looking at its target.
3. **Act** on ``(held directory, final name)``, never following the final name on its own, through
   one of two implementations of the same small interface (:mod:`._act`): POSIX ``*at`` calls on
   the directory's descriptor (``O_NOFOLLOW``, ``follow_symlinks=False``; the default on Linux and
   macOS, the same system calls as ever), or, where there are no ``*at`` calls (Windows), calls on
   the held directory's path plus the final name, the directory being held so that the path
   cannot be redirected. ``MCP_REF_FS_ACT=paths`` runs the path-based one on Linux, where a held
   descriptor's path is ``/proc/self/fd/N``, and the whole test suite and attack matrix run
   through both. Files are checked after opening (``fstat``): only regular files are read, so a
   FIFO, socket or device is refused and never blocks the server (it is opened, if at all,
   non-blocking).

So a directory swapped for a link between a check and its use cannot redirect an operation
outside: the swap makes the ``O_NOFOLLOW`` open fail, and the link is judged by its text.

What has run where: Linux runs everything above through both act steps and both POSIX
mechanisms. macOS would run the walk and the ``*at`` act step (never run here). Windows would run
the Windows mechanism and the path-based act step: their logic runs on Linux (the path-based act
through ``/proc/self/fd``, the handle logic against a fake ``kernel32``), the ``ctypes`` calls
themselves never have (see :mod:`._confine_windows`).

Policies (documented in docs and tested):

* Writes replace files atomically, and only files the server's user may write: a new file in the
  same directory, written, ``fsync``-ed, given the old file's owner, permission bits and
  extended attributes, then renamed over the target, and the directory ``fsync``-ed
  (:mod:`.rewrite`, the one write path). On any error or cancellation the new file is removed.
  Temporary files of the server's naming (``.mcp-ref-<16 hex>.tmp``) are never listed.
* Creating, moving and deleting ``fsync`` the directories whose entries changed (both, for a move
  between two), so a completed operation survives a power cut.
* A regular file with more than one hard link is never written: an atomic replace would split
  the link silently, and the other name may lie outside the roots. Reading it is allowed.
* Moves never overwrite (``renameat2(RENAME_NOREPLACE)``, ``renameatx_np(RENAME_EXCL)`` on
  macOS, ``MoveFileExW`` without ``MOVEFILE_REPLACE_EXISTING`` on Windows, else ``link`` +
  ``unlink`` for files: all race-free), and a root itself can be neither moved nor deleted,
  not even through a directory above it when roots nest: the directory is compared with the
  other roots by string and, once looked up, by identity (device and inode), so a spelling that
  differs only in case or Unicode normalisation (APFS, NTFS) does not get past the check.
* Walks (trees, searches, resource listings) do not descend into linked directories, so link
  loops cannot make them run forever.
* Names on disk that are not valid UTF-8 are shown with ``\\xNN`` escapes and cannot be
  addressed by a client path.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import posixpath
import stat
from typing import Any, Callable, Iterator, Sequence, TypeVar

from . import _act
from ._confine import COSTLY_LOOKUP, Act, Budget, Costly, FollowLink, Mechanism, Meter
from ._platform import choose_act, choose_mechanism
from .changes import Changes
from .listing import MAX_WALK_DEPTH, CostlyListing, Entry, Listings
# The sandbox's vocabulary (places.py), named here too: callers import the sandbox from this module.
from .places import (AccessDenied, AlreadyExists, FileChanged, FsError, InvalidPath, Location, NotFound, Refused, Root,
                     WrongKind, _Escape, _failure, _fs_error, _Guard, _identity, display_name)

__all__ = ["AccessDenied", "AlreadyExists", "Costly", "CostlyListing", "Entry", "FileChanged", "FsError", "InvalidPath",
           "Location", "MAX_WALK_DEPTH", "NotFound", "OpenFile", "Refused", "Root", "Sandbox", "WrongKind", "_fs_error",
           "cheaply", "choose_act", "choose_mechanism", "display_name", "sandboxed"]

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
# System calls an operation run ``cheaply()`` (on the event loop) may make for its lookups: a few
# microseconds each, so well under a millisecond; a path with links on it usually fits.
LOOP_LOOKUP_STEPS = 64

# POSIX-only flags are 0 where they do not exist (Windows), so this module imports everywhere.
_DIR_FLAGS = _act.DIR_FLAGS


# The meter of the operation running ``cheaply()`` in this thread (None: no limit). A ContextVar,
# so a worker thread (which starts with an empty context) never inherits the event loop's.
_loop_meter: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("mcp_ref_fs_loop_meter", default=None)


@contextlib.contextmanager
def cheaply() -> Iterator[None]:
    """Run the sandbox operations inside this block as the event loop may: their lookups together
    make at most ``LOOP_LOOKUP_STEPS`` system calls, and one that would need more raises
    ``Costly`` before it makes them (nothing has changed on disk by then), so that the caller
    runs the operation again in a worker thread (``offload.sandboxed``). Every lookup, cheap or
    not, follows at most ``MAX_LINK_HOPS`` links."""
    token = _loop_meter.set(Meter(steps=LOOP_LOOKUP_STEPS))
    try:
        yield
    finally:
        _loop_meter.reset(token)


T = TypeVar("T")


async def sandboxed(operation: Callable[..., T], *args: Any) -> T:
    """``operation(*args)``, a sandbox operation, as the event loop may run it: on the loop while its
    lookups stay within ``LOOP_LOOKUP_STEPS`` system calls (as in :func:`cheaply`), else, from the
    start, in a worker thread (``Costly`` is raised before anything has changed)."""
    token = _loop_meter.set(Meter(steps=LOOP_LOOKUP_STEPS))
    try:
        return operation(*args)
    except Costly:
        pass
    finally:
        _loop_meter.reset(token)
    from .offload import off_loop  # the thread pool: only for the costly ones

    return await off_loop(lambda _stop: operation(*args))


def _under(path: str, base: str) -> tuple[str, ...] | None:
    """The components of ``path`` below ``base`` (both normalized, absolute), or None."""
    if base == "/":
        return tuple(p for p in path.split("/") if p)
    if path == base:
        return ()
    if path.startswith(base + "/"):
        return tuple(path[len(base) + 1 :].split("/"))
    return None


def _normalize(path: str) -> str:
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


# --- the sandbox ----------------------------------------------------------------------------------


class Sandbox(Listings, Changes):
    """The allowed directories and every operation permitted inside them (listings and walks:
    :mod:`.listing`; changes: :mod:`.changes`)."""

    def __init__(self, roots: Sequence[Root], mechanism: Mechanism | None = None,
                 act: Act | None = None) -> None:
        if not roots:
            raise ValueError("a sandbox needs at least one root")
        self.roots = tuple(roots)
        if mechanism is not None:
            self.mechanism = mechanism
        #: The act step (``_act``): POSIX ``*at`` calls, or paths through held directories.
        self.act = act if act is not None else choose_act()
        self._windows = self.act.sep == "\\"  # client paths and link texts follow Windows rules
        self._spellings = [(alias, root) for root in self.roots for alias in root.aliases]  # what locate compares
        self._follow = {root: self._follow_link(root) for root in self.roots}  # each root's link policy
        self._closed = False

    @functools.cached_property
    def mechanism(self) -> Mechanism:
        """How directories are opened beneath a root; chosen on first use (probing costs start-up time)."""
        return choose_mechanism()

    @classmethod
    def open(cls, paths: Sequence[str], mechanism: Mechanism | None = None,
             act: Act | None = None) -> Sandbox:
        """Open each directory as a root. Raises ``ValueError`` naming the first unusable one.
        ``act`` forces the act step (default: :func:`._platform.choose_act`, ``MCP_REF_FS_ACT``)."""
        act = act if act is not None else choose_act()
        windows = act.sep == "\\"
        roots = []
        for given in paths:
            if not given or "\0" in given:
                raise ValueError(f"{given!r} is not a directory path")
            if windows:  # pragma: no cover - Windows only (the spelling rules are tested in test_windows_paths)
                from . import winpaths

                try:
                    display = str(winpaths.parse_absolute(os.path.abspath(given), check=False))
                    real = str(winpaths.parse_absolute(os.path.realpath(display), check=False))
                except winpaths.WindowsPathError as error:
                    raise ValueError(f"{given}: {error}") from None
            else:
                display = _normalize(os.path.abspath(given))
                real = os.path.realpath(display)
            try:
                fd = act.open_root(real)
            except FileNotFoundError:
                raise ValueError(f"{given}: no such directory") from None
            except NotADirectoryError:
                raise ValueError(f"{given}: not a directory") from None
            except OSError as error:
                raise ValueError(f"{given}: cannot open ({error.strerror})") from None
            if windows:  # pragma: no cover - Windows only
                real = act.real_path(fd) or real  # what the kernel calls it (subst drives, short names)
            roots.append(Root(display, real, fd, act.sep))
        return cls(roots, mechanism, act)

    def close(self) -> None:
        """Close the roots' descriptors (the sandbox is unusable afterwards). Closing again does
        nothing: the numbers may belong to other files by then."""
        if self._closed:
            return
        self._closed = True
        for root in self.roots:
            try:
                self.act.close(root.fd)
            except OSError:
                pass

    def locate(self, path: str) -> Location:
        """The root and components a client path names. Pure string work: raises ``InvalidPath``
        or ``AccessDenied`` (outside every root) without touching the disk."""
        if not isinstance(path, str) or not path:
            raise InvalidPath("path must be a non-empty string")
        if "\0" in path:
            raise InvalidPath("path must not contain NUL characters")
        try:
            size = len(path.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidPath("path is not valid Unicode") from None
        if size > MAX_PATH_BYTES:
            raise InvalidPath(f"path is longer than {MAX_PATH_BYTES} bytes")
        if self._windows:
            return self._locate_windows(path)
        absolute = path if path.startswith("/") else self.roots[0].display.rstrip("/") + "/" + path
        normal = posixpath.normpath(absolute)  # (_normalize, inline: every client path passes here)
        if normal.startswith("//"):
            normal = "/" + normal.lstrip("/")
        best: tuple[int, Root, tuple[str, ...]] | None = None
        for alias, root in self._spellings:
            parts = _under(normal, alias)
            if parts is not None and (best is None or len(alias) > best[0]):
                best = (len(alias), root, parts)
        if best is None:
            raise AccessDenied(path)
        for part in best[2]:
            if len(part.encode("utf-8")) > MAX_NAME_BYTES:
                raise InvalidPath(f"a path component is longer than {MAX_NAME_BYTES} bytes")
        return Location(best[1], best[2])

    def _locate_windows(self, path: str) -> Location:
        """``locate`` under Windows rules (:mod:`winpaths`): drive letters, UNC and ``\\\\?\\``
        spellings, either separator, compared case-insensitively by whole components; drive-relative
        and rooted paths, reserved device names, streams, trailing dots or spaces and 8.3 short
        names are ``InvalidPath``. Pure string work, like the POSIX rules."""
        from . import winpaths  # only here and on other Windows paths: not at start-up elsewhere

        spellings = self._spellings
        try:
            index, parts = winpaths.locate(path, [alias for alias, _root in spellings])
        except winpaths.Outside:
            raise AccessDenied(path) from None
        except winpaths.WindowsPathError as error:
            raise InvalidPath(str(error)) from None
        for part in parts:
            if len(part.encode("utf-8")) > MAX_NAME_BYTES:
                raise InvalidPath(f"a path component is longer than {MAX_NAME_BYTES} bytes")
        return Location(spellings[index][1], parts)

    def root_location(self, index: int = 0) -> Location:
        return Location(self.roots[index], ())

    def _follow_link(self, root: Root) -> FollowLink:
        """The link policy for ``root``: a link's new path below the root, or ``_Escape``."""
        if self._windows:
            from . import winpaths

            aliases = root.aliases

            def follow_windows(prefix: tuple[str, ...], target: str, remaining: tuple[str, ...]) -> tuple[str, ...]:
                try:
                    return winpaths.follow_link(target, aliases, prefix) + remaining
                except winpaths.WindowsPathError:
                    raise _Escape() from None

            return follow_windows

        def follow(prefix: tuple[str, ...], target: str, remaining: tuple[str, ...]) -> tuple[str, ...]:
            if not target or "\0" in target:
                raise _Escape()
            if target.startswith("/"):
                normal = _normalize(target)
                for alias in root.aliases:
                    parts = _under(normal, alias)
                    if parts is not None:
                        return parts + remaining
                raise _Escape()
            resolved = list(prefix)
            for part in target.split("/"):
                if part in ("", "."):
                    continue
                if part == "..":
                    if not resolved:
                        raise _Escape()
                    resolved.pop()
                else:
                    resolved.append(part)
            return tuple(resolved) + remaining

        return follow

    def _open_dir(self, location: Location, parts: Sequence[str] | None = None,
                  budget: Budget | None = None) -> tuple[Any, tuple[str, ...]]:
        """The directory at ``parts`` (default: the location's own) beneath the location's root, held,
        and the components really opened: the mechanism's work, but for the root itself, which
        needs no resolving (a new descriptor of it, through the act step)."""
        root = location.root
        if budget is None:
            budget = Budget(_loop_meter.get())
        parts = location.parts if parts is None else parts
        if not parts:
            budget.step()
            return self.act.reopen(root.fd), ()
        return self.mechanism.open_dir(root.fd, parts, self._follow.get(root) or self._follow_link(root), budget)

    def _lookup(self, location: Location, *, follow_final: bool) -> tuple[Any, str | None, os.stat_result | None]:
        """Open the directory holding the final name and ``lstat`` the name (None when absent).

        With ``follow_final``, a final link inside the root is followed, again and again while the
        lookup's one ``Budget`` has hops left: links on the way and final links draw on the same
        ``MAX_LINK_HOPS``, as in the kernel, so a chain of links costs at most that many walks,
        never that many times that many. Past it: ``ELOOP``. For the root itself, returns
        ``(a new descriptor of the root, None, its stat)``. The caller closes the fd.
        """
        root = location.root
        act = self.act
        parts = location.parts
        meter = _loop_meter.get()
        budget: Budget | None = None  # made once the lookup walks directories or follows a link
        while True:
            # This round's own system calls, counted before any is made (Budget.step, inline: every
            # lookup passes here): a new descriptor of the root and an lstat, or the lstat after a
            # walk that counts its own.
            if meter is not None:
                meter.steps -= 2 if len(parts) <= 1 else 1
                if meter.steps < 0:
                    raise Costly(COSTLY_LOOKUP)
            if not parts:
                fd = act.reopen(root.fd)
                return fd, None, act.stat_dir(fd)
            resolved: tuple[str, ...] = ()
            if len(parts) == 1:  # a name in the root itself: no directory to resolve
                parent_fd = act.reopen(root.fd)
            else:
                budget = budget or Budget(meter)
                parent_fd, resolved = self._open_dir(location, parts[:-1], budget)
            name = parts[-1]
            try:
                info = act.lstat(parent_fd, name)
            except FileNotFoundError:
                return parent_fd, name, None
            except BaseException:
                act.close(parent_fd)
                raise
            if not (follow_final and stat.S_ISLNK(info.st_mode)):
                return parent_fd, name, info
            try:
                budget = budget or Budget(meter)
                budget.hop()
                budget.step()
                target = act.readlink(parent_fd, name)
            finally:
                act.close(parent_fd)
            # A relative link is relative to the real directory holding it, which ``resolved``
            # names (both mechanisms report the components they really opened).
            parts = (self._follow.get(root) or self._follow_link(root))(resolved, target, ())

    def _guard(self, path: str) -> _Guard:
        return _Guard(path)

    def below(self, path: str, base: str) -> tuple[str, ...] | None:
        """The components of ``path`` below ``base`` (absolute paths of this sandbox's kind), or None."""
        if not self._windows:
            return _under(path, base)
        from . import winpaths

        try:
            return winpaths.below(winpaths.parse_absolute(path, check=False), winpaths.parse_absolute(base, check=False))
        except winpaths.WindowsPathError:
            return None

    def open_file(self, path: str) -> OpenFile:
        """Open a regular file for reading. Refuses directories, FIFOs, sockets and devices."""
        location = self.locate(path)  # step 1
        act = self.act
        try:
            parent_fd, name, info = self._lookup(location, follow_final=True)  # step 2
            try:
                if info is None:
                    raise NotFound(f"No such file: {location.display}")
                if stat.S_ISDIR(info.st_mode):
                    raise WrongKind(f"{location.display} is a directory, not a file (use list_directory)")
                if not stat.S_ISREG(info.st_mode) or name is None:
                    raise WrongKind(f"{location.display} is not a regular file (FIFOs, sockets and devices are refused)")
                fd = act.open_file(parent_fd, name)  # step 3, never following name
            finally:
                act.close(parent_fd)
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                os.close(fd)
                raise WrongKind(f"{location.display} changed while it was being opened; try again")
            if _act.O_NONBLOCK:  # opened non-blocking so that a FIFO could not hang us; it is a file
                os.set_blocking(fd, True)
        except (OSError, _Escape, ValueError) as error:  # as _guard() does, written out: the hot path
            failure = _failure(error, location.display)
            if failure is None:
                raise
            raise failure from None
        return OpenFile(fd, opened, location) if act.positional_reads else _SeekingFile(fd, opened, location)

    def stat(self, path: str) -> tuple[Location, os.stat_result]:
        """What ``path`` is (links inside the root followed), for ``get_file_info``."""
        location = self.locate(path)
        with self._guard(location.display):
            parent_fd, _name, info = self._lookup(location, follow_final=True)
            self.act.close(parent_fd)
        if info is None:
            raise NotFound(f"No such file or directory: {location.display}")
        return location, info

    def identity(self, path: str) -> tuple[int, int, str, int] | None:
        """``(device, inode, kind, ctime in ns)`` of the entry itself (links not followed), or None.

        The change time is part of it because file systems reuse inode numbers: a file deleted
        and created again often gets the same one, but never the same ctime.
        """
        location = self.locate(path)
        with self._guard(location.display):
            parent_fd, _name, info = self._lookup(location, follow_final=False)
            self.act.close(parent_fd)
        return None if info is None else _identity(info)

    def open_directory(self, path: str | Location) -> tuple[Location, Any]:
        """A directory held open (links inside the root followed): a descriptor with the POSIX act
        step, a held handle on Windows. The caller closes it with :meth:`close_directory`."""
        location = path if isinstance(path, Location) else self.locate(path)
        with self._guard(location.display):
            try:
                fd, _ = self._open_dir(location)
            except FileNotFoundError:
                raise NotFound(f"No such directory: {location.display}") from None
            except NotADirectoryError:
                raise WrongKind(f"{location.display} is not a directory") from None
            return location, fd

    def close_directory(self, held: Any) -> None:
        """Close what :meth:`open_directory` returned."""
        self.act.close(held)

    def locate_directory(self, path: str | Location) -> Location:
        """The location of a directory, after checking that it opens confined as one (``NotFound``,
        ``WrongKind``, ``AccessDenied`` otherwise)."""
        location, held = self.open_directory(path)
        self.act.close(held)
        return location

    def real_directory(self, path: str | Location) -> str | None:
        """The real path of the directory ``path`` names, opened confined, as the system tells it
        for the held directory (``/proc/self/fd`` on Linux, ``F_GETPATH`` on macOS, the final path
        on Windows); None where it cannot say."""
        _location, held = self.open_directory(path)
        try:
            return self.act.real_path(held)
        finally:
            self.act.close(held)


# --- handles ----------------------------------------------------------------------------------------


class OpenFile(contextlib.AbstractContextManager["OpenFile"]):
    """A regular file opened for reading inside a root. Close it, or use ``with`` (which returns
    the file itself, and closes it on the way out)."""

    def __init__(self, fd: int, info: os.stat_result, location: Location) -> None:
        self.fd = fd
        self.info = info
        self.location = location

    def read_at(self, offset: int, length: int) -> bytes:
        return os.pread(self.fd, length, offset)

    def close(self, *_: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    __exit__ = close  # leaving the with block closes it (close takes __exit__'s arguments)


class _SeekingFile(OpenFile):
    """An ``OpenFile`` of the path-based act step: reads seek, then read (Windows has no ``pread``)."""

    def read_at(self, offset: int, length: int) -> bytes:
        return _act.read_at(self.fd, length, offset)
