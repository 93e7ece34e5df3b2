"""THE sandbox of mcp-ref-fs. Every file operation of every tool and resource goes through here.

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

import bisect
import contextlib
import contextvars
import errno
import itertools
import operator
import os
import posixpath
import re
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, Sequence

from . import _act
from ._confine import MAX_LINK_HOPS, Act, Budget, Costly, Mechanism, Meter
from ._platform import choose_act, choose_mechanism

if TYPE_CHECKING:
    from .rewrite import Rewrite, Snapshot

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
# Walks stop descending here: deeper trees exist only to exhaust file descriptors.
MAX_WALK_DEPTH = 256
# System calls an operation run ``cheaply()`` (on the event loop) may make for its lookups: a few
# microseconds each, so well under a millisecond; a path with links on it usually fits.
LOOP_LOOKUP_STEPS = 64

# POSIX-only flags are 0 where they do not exist (Windows), so this module imports everywhere.
_DIR_FLAGS = _act.DIR_FLAGS


# --- errors -------------------------------------------------------------------------------------


class FsError(Exception):
    """A refused or failed file operation. ``str(error)`` is written for the model to read."""


class InvalidPath(FsError):
    """The path string itself is unusable (empty, NUL, too long, not Unicode)."""


class AccessDenied(FsError):
    """The path, or a link on it, leads outside the allowed directories."""

    def __init__(self, path: str) -> None:
        super().__init__(f"Access denied: {path} is outside the allowed directories (see list_allowed_directories)")


class NotFound(FsError):
    """Nothing exists at the path."""


class WrongKind(FsError):
    """The path names the wrong kind of thing (a directory where a file is needed, a FIFO, ...)."""


class AlreadyExists(FsError):
    """The destination of a create or move exists."""


class Refused(FsError):
    """A policy refuses the operation (hard-linked file, moving a root, ...)."""


class FileChanged(FsError):
    """The file changed (written, replaced, deleted or created by someone else) while a rewrite of
    it was under way, or after the caller read it; nothing was written (:mod:`.rewrite`)."""


class CostlyListing(Costly):
    """A listing asked to stay cheap (``list_directory_page(most=...)``, on the event loop) would
    not be: the directory holds more names than that, or a link whose target must be resolved
    (each resolution can walk many components). The caller lists it again in a thread."""


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
    token = _loop_meter.set(Meter(LOOP_LOOKUP_STEPS))
    try:
        yield
    finally:
        _loop_meter.reset(token)


class _Escape(Exception):
    """A link leaves its root (internal: becomes ``AccessDenied`` naming the client's path)."""


# --- roots and locations -------------------------------------------------------------------------


@dataclass(frozen=True)
class Root:
    """An allowed directory, opened once. ``display`` is how the user wrote it (absolute).
    ``fd`` holds the directory open: a descriptor on POSIX, the Windows mechanism's held handle
    there. ``sep`` separates components in its paths (``\\`` for Windows paths)."""

    display: str
    real: str
    fd: Any
    sep: str = "/"

    @property
    def aliases(self) -> tuple[str, ...]:
        return (self.display,) if self.display == self.real else (self.display, self.real)


@dataclass(frozen=True)
class Location:
    """A place inside a root: the root and the path components below it (already lexical-clean)."""

    root: Root
    parts: tuple[str, ...]

    @property
    def display(self) -> str:
        """The absolute path shown to clients, under the root's user-given spelling."""
        if not self.parts:
            return self.root.display
        sep = self.root.sep
        return self.root.display.rstrip(sep) + sep + sep.join(display_name(p) for p in self.parts)

    @property
    def relative(self) -> str:
        """The path below the root, ``/``-separated (empty for the root itself)."""
        return "/".join(display_name(p) for p in self.parts)

    def child(self, name: str) -> Location:
        return Location(self.root, self.parts + (name,))


class Entry(NamedTuple):
    """One directory entry as listings show it. ``kind``: file, directory, symlink or other.
    (A named tuple: walks make one per entry, at well under half the cost of a frozen dataclass.)"""

    name: str
    kind: str
    size: int
    mtime: float

    @property
    def label(self) -> str:
        """The name, safe to print (undecodable bytes as ``\\xNN``)."""
        return display_name(self.name)


# ``_new_entry(Entry, (name, kind, size, mtime))`` makes an Entry without the Python-level
# ``__new__`` a named tuple adds: walks and listings make one per entry, and that frame is 60 %
# of the cost (0.22 -> 0.08 us).
_new_entry = tuple.__new__


# Characters a listing never shows as they are: every control (Unicode category Cc: C0, DEL, C1)
# but tab, the line and paragraph separators (Zl, Zp), and every format character (Cf: the
# bidirectional controls such as U+202E and U+061C, zero-width characters, U+FEFF, the invisible
# tag characters U+E0000-E007F...). Controls and separators could forge lines of a listing; format
# characters reorder text or hide text a user cannot see but a model reads.
_HIDDEN_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp"))
_ASCII_CONTROLS = "[\x00-\x08\x0a-\x1f\x7f]"  # the same rule for ASCII (compiled on first use)


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def display_name(name: str) -> str:
    """A name from disk as text a listing can show: bytes that are not UTF-8 appear as ``\\xNN``,
    and hidden characters (controls but tab, line separators, format characters such as bidi
    controls and zero-width or tag characters) as ``\\xNN``/``\\uNNNN``/``\\UNNNNNNNN``, so a name
    can neither forge a line of a listing nor hide text in it. A name shown with escapes cannot be
    addressed by clients (its label is not its name; a different file whose name really contains
    that backslash text may exist, and is the one a client reaches by the label)."""
    if name.isascii() and name.isprintable():
        return name  # the usual name, shown as it is (a tab is not "printable": it takes the long way)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        name = os.fsencode(name).decode("utf-8", "backslashreplace")
    if name.isascii():
        return re.sub(_ASCII_CONTROLS, lambda m: _escaped(m[0]), name)
    from unicodedata import category  # a C module, loaded for the first name that is not ASCII

    return "".join([_escaped(c) if c != "\t" and category(c) in _HIDDEN_CATEGORIES else c for c in name])


def _identity(info: os.stat_result) -> tuple[int, int, str, int]:
    return (info.st_dev, info.st_ino, _kind(info.st_mode), info.st_ctime_ns)


def _other_kind(item: os.DirEntry[str]) -> str:
    """The kind of a directory entry that is not a regular file, from the listing's own type field
    (no ``stat`` where the file system fills it in; links are never followed). Walks and listings
    write the common case inline, ``"file" if item.is_file(follow_symlinks=False) else
    _other_kind(item)``: one call for a file, and no Python frame."""
    if item.is_dir(follow_symlinks=False):
        return "symlink" if _is_junction(item) else "directory"
    return "symlink" if item.is_symlink() else "other"


# Only Windows' stat results carry a reparse tag; elsewhere nothing is a junction (tests force it).
_REPARSE_TAGS = hasattr(os.stat_result, "st_reparse_tag")
_REPARSE_TAG_NAME_SURROGATE = 0x20000000  # symbolic links, junctions, mount points


def _is_junction(item: os.DirEntry[str]) -> bool:
    """Is this directory entry a Windows junction (or another reparse point naming another file)?
    Python reports one as a directory, not as a link; listings must show it as the link it is,
    never as a directory (walks already never enter it: the Windows act step refuses to). Asked
    of directories only. ``DirEntry.is_junction`` exists from Python 3.12; before that, the
    reparse tag of the entry's own ``lstat`` (free on Windows: it comes with the listing)."""
    is_junction = getattr(item, "is_junction", None)
    if is_junction is not None and is_junction():
        return True
    if not _REPARSE_TAGS:
        return False
    try:
        tag = getattr(item.stat(follow_symlinks=False), "st_reparse_tag", 0)
    except OSError:
        return False
    return bool(tag & _REPARSE_TAG_NAME_SURROGATE)


def _entry_kind(item: os.DirEntry[str], info: os.stat_result) -> str:
    """The kind of a directory entry from its ``lstat``, a junction being a link (``_is_junction``)."""
    kind = _kind(info.st_mode)
    return "symlink" if kind == "directory" and _is_junction(item) else kind


_name_of = operator.attrgetter("name")  # the sort key of directory entries (in C: no Python call per entry)


def _without_temporaries(items: list[os.DirEntry[str]]) -> list[os.DirEntry[str]]:
    """Directory entries sorted by name, without the temporary files of the server's own rewrites
    (``.mcp-ref-<16 hex>.tmp``, :mod:`.rewrite`): listings, trees, searches and resources never
    show them. Names with that prefix sit together in name order, so finding them costs a
    binary search, not a look at every name."""
    first = bisect.bisect_left(items, _act.TEMPORARY_PREFIX, key=_name_of)
    last = first
    while last < len(items) and items[last].name.startswith(_act.TEMPORARY_PREFIX):
        last += 1
    if first < last:
        items[first:last] = [item for item in items[first:last] if not _act.is_temporary(item.name)]
    return items


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


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


def _fold(path: str) -> str:
    """A spelling as a case-insensitive, normalising file system compares it (APFS, NTFS: near enough)."""
    import unicodedata  # rarely needed: not at start-up

    return unicodedata.normalize("NFC", path).casefold()


def _ancestry(path: str) -> set[tuple[int, int]]:
    """(device, inode) of the directory ``path`` and of every directory above it (those that can
    be examined): what a directory holding ``path`` is, whatever it is called."""
    found = set()
    while True:
        try:
            info = os.stat(path)
        except OSError:
            pass
        else:
            found.add((info.st_dev, info.st_ino))
        parent = os.path.dirname(path)
        if parent == path:
            return found
        path = parent


# --- the mechanism --------------------------------------------------------------------------------


# --- the sandbox ----------------------------------------------------------------------------------


class Sandbox:
    """The allowed directories and every operation permitted inside them."""

    def __init__(self, roots: Sequence[Root], mechanism: Mechanism | None = None,
                 act: Act | None = None) -> None:
        if not roots:
            raise ValueError("a sandbox needs at least one root")
        self.roots = tuple(roots)
        self._mechanism = mechanism
        #: The act step (``_act``): POSIX ``*at`` calls, or paths through held directories.
        self.act = act if act is not None else choose_act()
        self._windows = self.act.sep == "\\"  # client paths and link texts follow Windows rules
        self._closed = False

    @property
    def mechanism(self) -> Mechanism:
        """How directories are opened beneath a root; chosen on first use (probing costs start-up time)."""
        if self._mechanism is None:
            self._mechanism = choose_mechanism()
        return self._mechanism

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

    # --- step 1: locate ---------------------------------------------------------------------------

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
        normal = _normalize(absolute)
        best: tuple[int, Root, tuple[str, ...]] | None = None
        for root in self.roots:
            for alias in root.aliases:
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

        spellings = [(alias, root) for root in self.roots for alias in root.aliases]
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

    # --- step 2: resolve --------------------------------------------------------------------------

    def _follow_link(self, root: Root) -> Callable[[tuple[str, ...], str, tuple[str, ...]], tuple[str, ...]]:
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
        root = location.root
        if budget is None:
            budget = Budget(_loop_meter.get())
        return self.mechanism.open_dir(root.fd, location.parts if parts is None else parts, self._follow_link(root), budget)

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
        budget = Budget(_loop_meter.get())
        while True:
            if not parts:
                budget.step(2)
                fd = act.reopen(root.fd)
                return fd, None, act.stat_dir(fd)
            parent_fd, resolved = self._open_dir(location, parts[:-1], budget)
            name = parts[-1]
            try:
                budget.step()
                info = act.lstat(parent_fd, name)
            except FileNotFoundError:
                return parent_fd, name, None
            except BaseException:
                act.close(parent_fd)
                raise
            if not (follow_final and stat.S_ISLNK(info.st_mode)):
                return parent_fd, name, info
            try:
                budget.hop()
                budget.step()
                target = act.readlink(parent_fd, name)
            finally:
                act.close(parent_fd)
            # A relative link is relative to the real directory holding it, which ``resolved``
            # names (both mechanisms report the components they really opened).
            parts = self._follow_link(root)(resolved, target, ())

    def _guard(self, path: str) -> _Guard:
        return _Guard(path)

    def _refuse_if_holds_a_root(self, location: Location, action: str) -> None:
        """A nested root (``R`` and ``R/a/b`` both allowed) must not vanish through its ancestor."""
        for root in self.roots:
            if root is location.root:
                continue
            for alias in root.aliases:
                inner = self.below(alias, location.root.display) if alias != location.root.display else None
                if inner is None:
                    inner = self.below(alias, location.root.real)
                if inner is not None and self._same_parts(inner[: len(location.parts)], location.parts):
                    raise Refused(f"{location.display} holds the allowed directory {root.display}; it cannot be {action}")

    def _refuse_if_holds_a_root_by_identity(self, location: Location, info: os.stat_result, action: str) -> None:
        """The same rule by what the entry *is*, once it has been looked up. On a case-insensitive or
        normalising file system (APFS and NTFS by default) ``/r/SUB`` and ``/r/sub``, or a composed
        and a decomposed ``é``, name one directory, which no comparison of the client's string with
        the roots' can know. So a directory's (device, inode) is compared with every other root's
        and those of the directories above it; where the file system numbers nothing (inode 0),
        the spellings are compared folded (``casefold`` after NFC) instead."""
        if len(self.roots) < 2 or not stat.S_ISDIR(info.st_mode):
            return
        entry = (info.st_dev, info.st_ino)
        for root in self.roots:
            if root is location.root:
                continue
            if info.st_ino:
                held = entry in _ancestry(root.real)
            else:
                sep = location.root.sep
                spellings = [alias.rstrip(sep) + sep + sep.join(location.parts) for alias in location.root.aliases]
                held = any(self.below(_fold(alias), _fold(spelling)) is not None
                           for alias in root.aliases for spelling in spellings)
            if held:
                raise Refused(f"{location.display} holds the allowed directory {root.display}; it cannot be {action}")

    def _same_parts(self, these: tuple[str, ...], those: tuple[str, ...]) -> bool:
        """Do two component tuples name the same place (Windows: case-insensitively)?"""
        if these == those or not self._windows:
            return these == those
        from . import winpaths

        return [winpaths.name_key(p) for p in these] == [winpaths.name_key(p) for p in those]

    def below(self, path: str, base: str) -> tuple[str, ...] | None:
        """The components of ``path`` below ``base`` (absolute paths of this sandbox's kind), or None."""
        if not self._windows:
            return _under(path, base)
        from . import winpaths

        try:
            return winpaths.below(winpaths.parse_absolute(path, check=False), winpaths.parse_absolute(base, check=False))
        except winpaths.WindowsPathError:
            return None

    # --- step 3: act: reading --------------------------------------------------------------------

    def open_file(self, path: str) -> OpenFile:
        """Open a regular file for reading. Refuses directories, FIFOs, sockets and devices."""
        location = self.locate(path)
        act = self.act
        with self._guard(location.display):
            parent_fd, name, info = self._lookup(location, follow_final=True)
            try:
                if info is None:
                    raise NotFound(f"No such file: {location.display}")
                if stat.S_ISDIR(info.st_mode):
                    raise WrongKind(f"{location.display} is a directory, not a file (use list_directory)")
                if not stat.S_ISREG(info.st_mode) or name is None:
                    raise WrongKind(f"{location.display} is not a regular file (FIFOs, sockets and devices are refused)")
                fd = act.open_file(parent_fd, name)
            finally:
                act.close(parent_fd)
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                os.close(fd)
                raise WrongKind(f"{location.display} changed while it was being opened; try again")
            if _act.O_NONBLOCK:  # opened non-blocking so that a FIFO could not hang us; it is a file
                os.set_blocking(fd, True)
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

    def has_entries(self, path: str) -> bool:
        """Does the directory ``path`` hold anything (stops at the first name)?"""
        _location, held = self.open_directory(path)
        try:
            with self.act.scandir(held) as scan:
                return next(scan, None) is not None
        finally:
            self.act.close(held)

    def real_directory(self, path: str | Location) -> str | None:
        """The real path of the directory ``path`` names, opened confined, as the system tells it
        for the held directory (``/proc/self/fd`` on Linux, ``F_GETPATH`` on macOS, the final path
        on Windows); None where it cannot say."""
        _location, held = self.open_directory(path)
        try:
            return self.act.real_path(held)
        finally:
            self.act.close(held)

    def list_directory(self, path: str) -> tuple[Location, list[Entry]]:
        """Every entry of a directory, sorted by name (see ``list_directory_page``)."""
        location, entries, _total = self.list_directory_page(path)
        return location, entries

    def list_directory_page(self, path: str, *, limit: int | None = None, largest_first: bool = False,
                            sizes: bool = True, most: int | None = None, start: int = 0) -> tuple[Location, list[Entry], int]:
        """``limit`` entries of a directory from the ``start``-th (0-based) on, and how many there are in all.

        Sorted by name, or with ``largest_first`` files by size (largest first) then the rest by
        name. A link is shown as what it points to when that is inside the root, else as
        ``symlink`` (its target is never examined). Sorted by name, links are resolved only for
        the entries shown, and a huge directory costs one name per entry until the page is chosen.
        Without ``sizes`` (name order only), entries carry size and time 0 and their kind comes
        from the directory listing itself: no ``stat`` per entry, only per link shown.
        With ``most``, a directory holding more names raises ``CostlyListing`` once ``most + 1``
        are read, and so does a link among the entries shown (so a caller can list small, link-free
        directories on the event loop, and the others in a thread).
        """
        location, fd = self.open_directory(path)
        act = self.act
        entries = []
        try:
            with act.scandir(fd) as scan:
                items = list(scan if most is None else itertools.islice(scan, most + 1))
            if most is not None and len(items) > most:
                raise CostlyListing(f"{location.display} holds more than {most} entries")
            if largest_first:
                sized = []
                for item in _without_temporaries(sorted(items, key=_name_of)):
                    try:
                        info = item.stat(follow_symlinks=False)
                    except OSError:
                        continue  # vanished meanwhile
                    kind = _entry_kind(item, info)
                    if kind == "symlink" and (linked := self._linked(location.child(item.name))) is not None:
                        kind, info = _kind(linked.st_mode), linked  # sorted by what it shows as
                    sized.append((item.name, kind, info))
                sized.sort(key=lambda entry: (-entry[2].st_size if entry[1] == "file" else 1, entry[0]))
                for name, kind, info in sized[start:None if limit is None else start + limit]:
                    entries.append(Entry(name, kind, info.st_size, info.st_mtime))
                return location, entries, len(sized)
            items.sort(key=_name_of)
            items = _without_temporaries(items)
            for item in items[start:None if limit is None else start + limit]:
                try:
                    # is_file first: one call (no stat where the listing carries types) settles most entries.
                    kind = "file" if item.is_file(follow_symlinks=False) else _other_kind(item)
                    if kind == "symlink" and most is not None:
                        raise CostlyListing(f"{location.display} holds links to resolve")
                    if kind == "symlink" and (linked := self._linked(location.child(item.name))) is not None:
                        kind, info = _kind(linked.st_mode), linked  # shown as what it points to
                    elif sizes:
                        info = item.stat(follow_symlinks=False)
                    else:
                        entries.append(_new_entry(Entry, (item.name, kind, 0, 0.0)))
                        continue
                except OSError:
                    continue  # vanished meanwhile
                entries.append(_new_entry(Entry, (item.name, kind, info.st_size if sizes else 0,
                                                  info.st_mtime if sizes else 0.0)))
        finally:
            act.close(fd)
        return location, entries, len(items)

    def _linked(self, location: Location) -> os.stat_result | None:
        """The stat of a link's target when it stays inside the root, else None."""
        try:
            parent_fd, _name, info = self._lookup(location, follow_final=True)
        except (OSError, _Escape, ValueError):  # ValueError: a name Windows rules refuse (winpaths)
            return None
        self.act.close(parent_fd)
        return info

    def walk(
        self,
        path: str | Location,
        *,
        descend: Callable[[tuple[str, ...]], bool] | None = None,
        after: tuple[str, ...] | None = None,
        sizes: bool = True,
        entering: Callable[[tuple[str, ...], Any], None] | None = None,
    ) -> Iterator[tuple[tuple[str, ...], Entry]]:
        """Every entry below a directory, depth first, sorted by name at each level, as
        ``(components below the start, entry)``. Linked directories are listed, not entered.

        ``descend(components)`` may prune a directory. ``after`` resumes a walk just after the
        entry with those components, without visiting what came before (resource pages).
        A generator: close it to stop early; it holds at most one descriptor per level.
        Without ``sizes``, entries carry size and time 0 and their kind comes from the directory
        listing itself, which saves a ``stat`` per entry (trees and name searches need no more).
        ``entering(components, held)`` is called with each directory held open (the start
        first, as ``()``), before any of its entries is yielded: it may read files in it with
        :meth:`read_beneath` (how ``.gitignore`` files are read, never by path).
        """
        act = self.act
        _location, fd = self.open_directory(path)
        stack: list[tuple[Any, tuple[str, ...], Iterator[os.DirEntry[str]]]] = [(fd, (), self._sorted_entries(fd))]
        if entering is not None:
            try:
                entering((), fd)
            except BaseException:
                act.close(fd)
                raise
        try:
            while stack:
                dir_fd, prefix, entries = stack[-1]
                for item in entries:
                    name = item.name
                    components = prefix + (name,)
                    if after is not None and components <= after and after[: len(components)] != components:
                        continue  # before the resume point and not on the way to it
                    try:
                        if sizes:
                            info = item.stat(follow_symlinks=False)
                            kind, size, mtime = _kind(info.st_mode), info.st_size, info.st_mtime
                            if kind == "directory" and _is_junction(item):  # inline: no frame per file
                                kind = "symlink"
                        else:
                            # is_file first: one call settles most entries (the walk's hot line)
                            kind = "file" if item.is_file(follow_symlinks=False) else _other_kind(item)
                            size, mtime = 0, 0.0
                    except OSError:
                        continue
                    if after is None or components > after:
                        yield components, _new_entry(Entry, (name, kind, size, mtime))
                    # Descend (also on the resume path, as in the full walk), then come back to
                    # this directory's remaining entries.
                    if kind == "directory" and len(components) < MAX_WALK_DEPTH and (descend is None or descend(components)):
                        try:
                            child_fd = act.open_dir(dir_fd, name)  # never follows name (O_NOFOLLOW)
                        except OSError:
                            continue  # unreadable, or swapped for something else: skip it
                        stack.append((child_fd, components, self._sorted_entries(child_fd)))
                        if entering is not None:
                            entering(components, child_fd)
                        break
                else:
                    stack.pop()
                    act.close(dir_fd)
        finally:
            for dir_fd, _prefix, _entries in stack:
                act.close(dir_fd)

    def read_beneath(self, held: Any, name: str, limit: int) -> bytes | None:
        """At most ``limit`` bytes of the regular file ``name`` directly in the held directory
        ``held`` (from :meth:`walk`'s ``entering`` or :meth:`ancestors`), or None when there is
        no such regular file. A link at ``name`` is never followed (git reads no linked
        ``.gitignore`` either), and a FIFO or device is never read."""
        try:
            fd = self.act.open_file(held, name)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            if _act.O_NONBLOCK:
                os.set_blocking(fd, True)
            return _act.read_at(fd, limit, 0)
        except OSError:
            return None
        finally:
            os.close(fd)

    def holds(self, held: Any, name: str) -> bool:
        """Whether the held directory has an entry ``name`` (of any kind; links not followed)."""
        try:
            self.act.lstat(held, name)
        except OSError:
            return False
        return True

    def ancestors(self, path: str | Location) -> Iterator[tuple[tuple[str, ...], Any]]:
        """The directories above ``path`` inside its root, from the root down, each held open
        while the caller looks at it (``(parts below the root, held)``). ``path`` itself is not
        among them. Directories that cannot be opened are left out."""
        location = path if isinstance(path, Location) else self.locate(path)
        for depth in range(len(location.parts)):
            try:
                _location, held = self.open_directory(Location(location.root, location.parts[:depth]))
            except (FsError, OSError):
                continue
            try:
                yield location.parts[:depth], held
            finally:
                self.act.close(held)

    def _sorted_entries(self, held: Any) -> Iterator[os.DirEntry[str]]:
        try:
            with self.act.scandir(held) as scan:
                return iter(_without_temporaries(sorted(scan, key=_name_of)))
        except OSError:
            return iter(())

    # --- step 3: act: changing things ------------------------------------------------------------

    def make_directories(self, path: str) -> Location:
        """Create a directory and any missing parents; an existing directory is fine."""
        location = self.locate(path)
        act = self.act
        with self._guard(location.display):
            for depth in range(1, len(location.parts) + 1):
                prefix = location.parts[:depth]
                try:
                    fd, _ = self._open_dir(location, prefix)
                    act.close(fd)
                    continue
                except FileNotFoundError:
                    pass
                except NotADirectoryError:
                    raise WrongKind(f"{Location(location.root, prefix).display} exists and is not a directory") from None
                parent_fd, _ = self._open_dir(location, prefix[:-1])
                try:
                    act.mkdir(parent_fd, prefix[-1])
                    self._sync(parent_fd)
                except FileExistsError:
                    # Created meanwhile, or a link (dangling, or to a non-directory) sits there.
                    fd, _ = self._open_dir(location, prefix)
                    act.close(fd)
                finally:
                    act.close(parent_fd)
        return location

    def _sync(self, held: Any, other: Any = None) -> None:
        """Make the changed entries of a directory durable (and of ``other``, when it is another
        directory: both sides of a move). Best effort: some file systems refuse to sync a
        directory, and the change itself has happened."""
        act = self.act
        directories = [held]
        if other is not None:
            try:
                here, there = act.stat_dir(held), act.stat_dir(other)
            except OSError:
                here = there = None
            if here is None or there is None or (here.st_dev, here.st_ino) != (there.st_dev, there.st_ino):
                directories.append(other)
        for directory in directories:
            try:
                act.sync(directory)
            except OSError:
                pass

    def replace_file(self, path: str, *, expect: Snapshot | None = None) -> Rewrite:
        """Begin an atomic rewrite of ``path`` (created if absent; its directory must exist), as
        :mod:`.rewrite` describes: refused unless the server's user may write the existing file,
        and keeping its owner, permission bits and extended attributes.

        Write to the returned object, then ``commit()``; ``abort()`` (or any exception inside
        ``with``) removes the new file and leaves the target untouched. ``expect``: the file's
        ``rewrite.snapshot`` when the caller read it; ``FileChanged`` if it is no longer that file.
        """
        from .rewrite import Rewrite  # the write path: imported by the first write

        location = self.locate(path)
        act = self.act
        with self._guard(location.display):
            parent_fd, name, info = self._lookup(location, follow_final=True)
            try:
                if name is None:
                    raise WrongKind(f"{location.display} is a directory, not a file")
                if info is not None:
                    if stat.S_ISDIR(info.st_mode):
                        raise WrongKind(f"{location.display} is a directory, not a file")
                    if not stat.S_ISREG(info.st_mode):
                        raise WrongKind(f"{location.display} is not a regular file (FIFOs, sockets and devices are refused)")
                    if info.st_nlink > 1:
                        raise Refused(
                            f"{location.display} has {info.st_nlink} hard links; writing would split them, so it is refused"
                        )
            except BaseException:
                act.close(parent_fd)
                raise
            return Rewrite.start(act, location, parent_fd, name, info, expect)

    def move(self, source: str, destination: str) -> tuple[Location, Location]:
        """Rename ``source`` to ``destination``, never replacing anything at the destination."""
        from_location, to_location = self.locate(source), self.locate(destination)
        if not from_location.parts or not to_location.parts:
            raise Refused("an allowed directory itself cannot be moved or replaced")
        if to_location.root is from_location.root and to_location.parts[: len(from_location.parts)] == from_location.parts:
            raise Refused(f"cannot move {from_location.display} into itself")
        self._refuse_if_holds_a_root(from_location, "moved")
        act = self.act
        with self._guard(from_location.display):
            from_fd, from_name, from_info = self._lookup(from_location, follow_final=False)
        try:
            if from_info is None or from_name is None:
                raise NotFound(f"No such file or directory: {from_location.display}")
            self._refuse_if_holds_a_root_by_identity(from_location, from_info, "moved")
            with self._guard(to_location.display):
                to_fd, to_name, to_info = self._lookup(to_location, follow_final=False)
            try:
                if to_info is not None or to_name is None:
                    raise AlreadyExists(f"{to_location.display} already exists; move_file never overwrites")
                with self._guard(to_location.display):
                    act.rename_no_replace(from_fd, from_name, to_fd, to_name, from_info)
                self._sync(to_fd, from_fd)
            finally:
                act.close(to_fd)
        finally:
            act.close(from_fd)
        return from_location, to_location

    def delete(self, path: str, *, expect: tuple[int, int, str, int] | None = None) -> tuple[Location, str]:
        """Remove a file, link or empty directory (links themselves, never their targets).

        ``expect``: the ``identity()`` seen when the deletion was confirmed; if the entry is no
        longer that one, nothing is deleted. Returns the location and the kind removed.
        """
        location = self.locate(path)
        if not location.parts:
            raise Refused("an allowed directory itself cannot be deleted")
        self._refuse_if_holds_a_root(location, "deleted")
        act = self.act
        with self._guard(location.display):
            parent_fd, name, info = self._lookup(location, follow_final=False)
            try:
                if info is None or name is None:
                    raise NotFound(f"No such file or directory: {location.display}")
                if expect is not None and _identity(info) != tuple(expect):
                    raise Refused(f"{location.display} changed since the deletion was confirmed; nothing was deleted")
                self._refuse_if_holds_a_root_by_identity(location, info, "deleted")
                kind = _kind(info.st_mode)
                if kind == "directory":
                    try:
                        act.rmdir(parent_fd, name)
                    except OSError as error:
                        if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
                            raise Refused(f"{location.display} is a directory that is not empty; only empty ones are deleted") from None
                        raise
                else:
                    act.unlink(parent_fd, name)
                self._sync(parent_fd)
            finally:
                act.close(parent_fd)
        return location, kind


class _Guard:
    """Turns escapes and OS errors inside an operation into ``FsError`` naming the client's path."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _tb: object) -> bool:
        if error is None or isinstance(error, FsError):
            return False
        if isinstance(error, _Escape):
            raise AccessDenied(self.path) from None
        if isinstance(error, OSError):
            raise _fs_error(error, self.path) from None
        if isinstance(error, ValueError):
            from . import winpaths

            if isinstance(error, winpaths.WindowsPathError):  # a name Windows would read as another
                raise InvalidPath(str(error)) from None
        return False


def _fs_error(error: OSError, path: str) -> FsError:
    code = error.errno
    if code == errno.ENOENT:
        return NotFound(f"No such file or directory: {path}")
    if code == errno.ENOTDIR:
        return WrongKind(f"A component of {path} is not a directory")
    if code == errno.EISDIR:
        return WrongKind(f"{path} is a directory")
    if code in (errno.EACCES, errno.EPERM):
        return Refused(f"Permission denied: {path}")
    if code == errno.ELOOP:
        return Refused(f"Too many levels of symbolic links: {path} (resolving it would follow more than "
                       f"{MAX_LINK_HOPS} links, the limit of one lookup; the system refuses such a path too)")
    if code == errno.EEXIST:
        return AlreadyExists(f"{path} already exists")
    if code == errno.ENAMETOOLONG:
        return InvalidPath(f"File name too long: {path}")
    if code == errno.EXDEV:
        return Refused(f"{path}: cannot move across file systems")
    if code == errno.ENOSPC:
        return Refused(f"No space left on device while writing {path}")
    return FsError(f"{path}: {error.strerror or error}")


# --- handles ----------------------------------------------------------------------------------------


@dataclass
class OpenFile:
    """A regular file opened for reading inside a root. Close it (or use ``with``)."""

    fd: int
    info: os.stat_result
    location: Location

    def read_at(self, offset: int, length: int) -> bytes:
        return os.pread(self.fd, length, offset)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> OpenFile:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class _SeekingFile(OpenFile):
    """An ``OpenFile`` of the path-based act step: reads seek, then read (Windows has no ``pread``)."""

    def read_at(self, offset: int, length: int) -> bytes:
        return _act.read_at(self.fd, length, offset)
