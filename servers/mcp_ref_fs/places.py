"""The sandbox's vocabulary: roots, locations inside them, names as they are shown, and its errors.

Shared by the three parts of the sandbox (:mod:`.root`: locate, resolve and read;
:mod:`.listing`: what directories hold; :mod:`.changes`: creating, replacing, moving and
deleting) and by the tools. Pure: nothing here touches the disk but :func:`_fs_error`'s
translation of what the disk answered.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Sequence

from ._confine import MAX_LINK_HOPS

if TYPE_CHECKING:
    from ._confine import Act, Budget


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


class _Escape(Exception):
    """A link leaves its root (internal: becomes ``AccessDenied`` naming the client's path)."""


# --- roots and locations -------------------------------------------------------------------------


class Root:
    """An allowed directory, opened once. ``display`` is how the user wrote it (absolute).
    ``fd`` holds the directory open: a descriptor on POSIX, the Windows mechanism's held handle
    there. ``sep`` separates components in its paths (``\\`` for Windows paths). Immutable by
    convention; equal (and hashed) by its fields. (A plain class, not a frozen dataclass: making
    that cost every start ~0.5 ms.)"""

    __slots__ = ("display", "real", "fd", "sep")

    def __init__(self, display: str, real: str, fd: Any, sep: str = "/") -> None:
        self.display, self.real, self.fd, self.sep = display, real, fd, sep

    def _fields(self) -> tuple[str, str, Any, str]:
        return (self.display, self.real, self.fd, self.sep)

    def __eq__(self, other: object) -> bool:
        return self._fields() == other._fields() if type(other) is Root else NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"Root(display={self.display!r}, real={self.real!r}, fd={self.fd!r}, sep={self.sep!r})"

    @property
    def aliases(self) -> tuple[str, ...]:
        return (self.display,) if self.display == self.real else (self.display, self.real)


class Location(NamedTuple):
    """A place inside a root: the root and the path components below it (already lexical-clean).
    Immutable, equal and hashed by its two fields. (A named tuple, not a frozen dataclass: making
    that cost every start ~0.7 ms, and each one made on a read costs less. So it also equals the
    plain tuple ``(root, parts)``, and unpacks as one; nothing here relies on either.)"""

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


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


# --- what the disk answered, as the client's path ----------------------------------------------


class _Guard:
    """Turns escapes and OS errors inside an operation into ``FsError`` naming the client's path."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _tb: object) -> Literal[False]:
        failure = None if error is None else _failure(error, self.path)
        if failure is not None:
            raise failure from None
        return False


def _failure(error: BaseException, path: str) -> FsError | None:
    """The ``FsError`` naming the client's ``path`` that an error inside an operation on it stands
    for: an escape, an OS error, a name Windows would read as another. None for anything else
    (an ``FsError`` already, an interruption, a bug), which goes on as itself."""
    if isinstance(error, _Escape):
        return AccessDenied(path)
    if isinstance(error, OSError):
        return _fs_error(error, path)
    if isinstance(error, ValueError):
        from . import winpaths

        if isinstance(error, winpaths.WindowsPathError):  # a name Windows would read as another
            return InvalidPath(str(error))
    return None


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


class SandboxCore:
    """What the parts of the sandbox (:mod:`.listing`, :mod:`.changes`) use of its core, which
    :class:`.root.Sandbox` defines (steps 1 and 2: locate and resolve). Declarations only."""

    if TYPE_CHECKING:
        roots: tuple[Root, ...]
        act: Act
        _windows: bool

        def locate(self, path: str) -> Location: ...
        def below(self, path: str, base: str) -> tuple[str, ...] | None: ...
        def open_directory(self, path: str | Location) -> tuple[Location, Any]: ...
        def _guard(self, path: str) -> _Guard: ...
        def _open_dir(self, location: Location, parts: Sequence[str] | None = None,
                      budget: Budget | None = None) -> tuple[Any, tuple[str, ...]]: ...
        def _lookup(self, location: Location, *, follow_final: bool) -> tuple[Any, str | None, os.stat_result | None]: ...
