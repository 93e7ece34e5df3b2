"""Windows path rules for the sandbox, as pure string functions (no disk access, runs anywhere).

The Windows confinement mechanism (:mod:`mcp_ref_fs._confine_windows`) resolves a client path
with these rules before anything is opened, and compares the *final* path of every opened
handle (``GetFinalPathNameByHandleW``) against the roots with :func:`is_within`. They are tested,
table-driven, on Linux (``tests/fs/test_windows_paths.py``).

Theory of operation
-------------------
* **Spellings.** ``\\`` and ``/`` both separate components; repeated separators collapse. A path
  is one of: drive-absolute (``C:\\x``), UNC (``\\\\server\\share\\x``), a Win32 file namespace
  path (``\\\\?\\C:\\x``, ``\\\\?\\UNC\\server\\share\\x``: the same places, spelled without
  normalisation), relative (``x\\y``), or one of the forms a sandbox refuses: drive-relative
  (``C:x``, relative to a per-drive current directory the server does not control), rooted
  (``\\x``, on "the current drive"), and device paths (``\\\\.\\``, ``\\??\\``, ``\\\\?\\GLOBALROOT``,
  ``\\\\?\\Volume{...}``).
* **Components** a client may name are refused when Windows would read them as something else
  (:func:`check_component`): reserved device names (``CON``, ``PRN``, ``AUX``, ``NUL``,
  ``COM1``-``COM9``, ``LPT1``-``LPT9``, the superscript-digit ``COM¹``..., ``CONIN$``, ``CONOUT$``),
  also with an extension or trailing spaces/dots (``nul.txt``, ``CON .log``), since Win32 maps
  them to the device in any directory; names ending in a dot or a space (Win32 strips them, so
  ``a.`` *is* ``a``); any ``:`` (an NTFS alternate data stream, ``name:stream``, or a drive);
  the characters ``<>"|?*`` and control characters (wildcards and invalid names); and 8.3 short
  names (``PROGRA~1``, ``LONGNA~2.TXT``): one file has two names, and a short one could reach a
  file whose long name a rule refuses, so names of that shape are refused rather than resolved.
* **Comparison** is case-insensitive, the way NTFS compares names by default: each character is
  upper-cased by its simple (one-character) mapping (:func:`name_key`), never ``casefold``
  (which maps ``ß`` to ``ss``; NTFS does not). Drive letters compare the same way.
* ``..`` is resolved lexically and cannot climb above the drive or the UNC share.

Everything here raises :class:`WindowsPathError` (a ``ValueError``) with a reason a model can
read, or returns plain strings and tuples.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SEPARATORS = re.compile(r"[\\/]+")
_DRIVE = re.compile(r"^([A-Za-z]):")
# Win32 reserves these names in every directory, whatever the extension.
RESERVED_NAMES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"COM{d}" for d in "123456789¹²³"]
    + [f"LPT{d}" for d in "123456789¹²³"]
)
_INVALID_CHARACTERS = re.compile(r'[<>:"|?*\x00-\x1f]')
# An 8.3 short name as Windows generates them: a base of at most 8 characters ending in ~N
# (PROGRA~1, AB12C~1, FILE~10), and an extension of at most 3.
_SHORT_NAME = re.compile(r"^(?=[^.]{3,8}(\.|$))[^.~ ]{1,6}~[1-9][0-9]{0,5}(\.[^. ]{1,3})?$")


class WindowsPathError(ValueError):
    """A path or name that the sandbox refuses on Windows; ``str()`` says why."""


class Outside(WindowsPathError):
    """A well-formed path, or a link's text, that leads outside the allowed directories."""


@dataclass(frozen=True)
class WinPath:
    """A parsed absolute path: ``anchor`` is ``C:`` or ``\\\\server\\share`` (as spelled), and
    ``parts`` the components below it (``.``/``..`` resolved)."""

    anchor: str
    parts: tuple[str, ...]

    def __str__(self) -> str:
        return self.anchor + "\\" + "\\".join(self.parts)

    @property
    def key(self) -> tuple[str, ...]:
        """For case-insensitive comparison: the anchor and every component, upper-cased."""
        return (name_key(self.anchor),) + tuple(name_key(p) for p in self.parts)


def name_key(name: str) -> str:
    """``name`` upper-cased the way NTFS compares names (simple one-character mappings only)."""
    return "".join(upper if len(upper := c.upper()) == 1 else c for c in name)


def same_name(a: str, b: str) -> bool:
    return name_key(a) == name_key(b)


def kind(path: str) -> str:
    """``drive-absolute``, ``drive-relative``, ``rooted``, ``unc``, ``namespace`` (``\\\\?\\C:`` or
    ``\\\\?\\UNC``), ``device`` (``\\\\.\\``, ``\\??\\``, other ``\\\\?\\`` forms) or ``relative``."""
    unified = path.replace("/", "\\")
    if unified.startswith("\\??\\") or unified.startswith("\\\\.\\"):
        return "device"
    if unified.startswith("\\\\?\\"):
        rest = unified[4:]
        if _DRIVE.match(rest) and (len(rest) == 2 or rest[2] == "\\"):
            return "namespace"
        if name_key(rest[:4]) == "UNC\\":
            return "namespace"
        return "device"
    if unified.startswith("\\\\"):
        return "unc"
    if unified.startswith("\\"):
        return "rooted"
    if _DRIVE.match(unified):
        return "drive-absolute" if len(unified) > 2 and unified[2] == "\\" else "drive-relative"
    return "relative"


def check_component(name: str) -> str:
    """``name`` if Windows would open exactly the file so named; else ``WindowsPathError``."""
    if not name:
        raise WindowsPathError("empty path component")
    if name in (".", ".."):
        return name
    if ":" in name:
        raise WindowsPathError(f"{name!r}: ':' names an alternate data stream (name:stream) or a drive; refused")
    if _INVALID_CHARACTERS.search(name):
        raise WindowsPathError(f"{name!r} contains a character Windows does not allow in names (<>\"|?* or a control character)")
    if name[-1] in ". ":
        raise WindowsPathError(f"{name!r} ends in a dot or a space, which Windows strips (it would name another file)")
    base = name.split(".", 1)[0].rstrip(" ")
    if name_key(base) in RESERVED_NAMES:
        raise WindowsPathError(f"{name!r} is a reserved device name on Windows ({name_key(base)}), in every directory")
    if _SHORT_NAME.match(name):
        raise WindowsPathError(f"{name!r} looks like an 8.3 short name (~N), a second name of some file; use its long name")
    return name


def _resolve(parts: list[str], *, check: bool, literal: bool) -> tuple[str, ...]:
    resolved: list[str] = []
    for part in parts:
        if part == "":
            continue
        if check:
            check_component(part)
        if part == ".":
            if literal:
                raise WindowsPathError("'.' in a \\\\?\\ path is not normalised by Windows; refused")
            continue
        if part == "..":
            if literal:
                raise WindowsPathError("'..' in a \\\\?\\ path is not normalised by Windows; refused")
            if resolved:
                resolved.pop()
            continue  # never above the drive or share
        resolved.append(part)
    return tuple(resolved)


def parse_absolute(path: str, *, check: bool = True) -> WinPath:
    """A drive-absolute, UNC or ``\\\\?\\`` path as a ``WinPath`` (``\\\\?\\C:\\x`` is ``C:\\x``,
    ``\\\\?\\UNC\\s\\h\\x`` is ``\\\\s\\h\\x``). Refuses the other kinds and, with ``check``, every
    component :func:`check_component` refuses."""
    if "\0" in path:
        raise WindowsPathError("path contains a NUL character")
    what = kind(path)
    unified = path.replace("/", "\\")
    literal = what == "namespace"
    if literal:
        unified = unified[4:]
        if name_key(unified[:4]) == "UNC\\":
            unified = "\\\\" + unified[4:]
        what = kind(unified)
    if what == "drive-absolute":
        anchor, rest = unified[:2].upper(), unified[2:]
    elif what == "unc":
        pieces = [p for p in _SEPARATORS.split(unified) if p]
        if len(pieces) < 2:
            raise WindowsPathError(f"{path!r}: a UNC path needs a server and a share (\\\\server\\share)")
        server, share = pieces[0], pieces[1]
        if check:
            for piece in (server, share):
                if piece in (".", "..", "?"):
                    raise WindowsPathError(f"{path!r}: {piece!r} is not a server or share name")
                check_component(piece)
        anchor, rest = f"\\\\{server}\\{share}", "\\".join(pieces[2:])
    elif what == "drive-relative":
        raise WindowsPathError(f"{path!r} is relative to the current directory of drive {path[:2]} (write {path[:2]}\\...)")
    elif what == "rooted":
        raise WindowsPathError(f"{path!r} is on the current drive, which the server does not choose (write a drive letter)")
    elif what == "device":
        raise WindowsPathError(f"{path!r} is a device path (\\\\.\\, \\??\\, a volume GUID); refused")
    else:
        raise WindowsPathError(f"{path!r} is not an absolute path")
    return WinPath(anchor, _resolve(_SEPARATORS.split(rest), check=check, literal=literal))


def join_relative(base: WinPath, path: str) -> WinPath:
    """``path`` (relative: no drive, no leading separator) below ``base``."""
    if kind(path) != "relative":
        raise WindowsPathError(f"{path!r} is not a relative path")
    return WinPath(base.anchor, _resolve(list(base.parts) + _SEPARATORS.split(path), check=True, literal=False))


def below(path: WinPath, root: WinPath) -> tuple[str, ...] | None:
    """The components of ``path`` below ``root`` (case-insensitive, whole components), or None."""
    key, root_key = path.key, root.key
    if key[: len(root_key)] != root_key:
        return None
    return path.parts[len(root.parts) :]


def is_within(path: str, root: str) -> bool:
    """Is ``path`` (as ``GetFinalPathNameByHandleW`` returns it, or any absolute spelling)
    ``root`` or inside it? Components of these paths come from the file system, so they are
    not checked against the client rules."""
    try:
        return below(parse_absolute(path, check=False), parse_absolute(root, check=False)) is not None
    except WindowsPathError:
        return False


def locate(path: str, roots: list[str] | tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
    """The index of the root holding the client ``path`` and the components below it.

    A relative path is below the first root. The longest matching root wins (nested roots).
    Raises ``WindowsPathError`` for a refused spelling or name, and for a path outside every root.
    """
    parsed_roots = [parse_absolute(root, check=False) for root in roots]
    target = join_relative(parsed_roots[0], path) if kind(path) == "relative" else parse_absolute(path)
    best: tuple[int, int, tuple[str, ...]] | None = None
    for index, root in enumerate(parsed_roots):
        parts = below(target, root)
        if parts is not None and (best is None or len(root.parts) > best[0]):
            best = (len(root.parts), index, parts)
    if best is None:
        raise Outside(f"{path!r} is outside the allowed directories")
    return best[1], best[2]


def follow_link(text: str, aliases: tuple[str, ...] | list[str], prefix: tuple[str, ...]) -> tuple[str, ...]:
    """The components below a root that a link's ``text`` names, for a link in the directory
    ``prefix`` (components below the root): the Windows spelling of the sandbox's link policy.

    Relative text is resolved lexically from ``prefix`` and may not climb above the root; absolute
    text (drive, UNC or ``\\\\?\\``, as ``os.readlink`` reports symbolic links and junctions) must
    lie inside one of ``aliases``, the spellings of the *same* root. Anything else (empty text,
    drive-relative or rooted text, a device path, a name Windows would read as another) raises
    ``WindowsPathError`` (``Outside`` when it leaves the root), judged on the text alone.
    """
    if not text or "\0" in text:
        raise WindowsPathError("a link with empty text or a NUL character")
    if kind(text) == "relative":
        resolved = list(prefix)
        for part in _SEPARATORS.split(text):
            if part in ("", "."):
                continue
            if part == "..":
                if not resolved:
                    raise Outside(f"the link {text!r} climbs above its root")
                resolved.pop()
            else:
                resolved.append(check_component(part))
        return tuple(resolved)
    target = parse_absolute(text, check=False)
    for alias in aliases:
        parts = below(target, parse_absolute(alias, check=False))
        if parts is not None:
            for part in parts:  # the names below the root follow the client rules
                check_component(part)
            return parts
    raise Outside(f"the link {text!r} leads outside its root")
