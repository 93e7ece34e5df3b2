"""What directories hold: listings (one page at a time) and walks, for :class:`.root.Sandbox`.

Every directory is opened through the sandbox's own resolve step (:meth:`.root.Sandbox.open_directory`)
and read through its act step: a listing never follows a link it shows (a link is shown as what it
points to only when that stays inside the root, judged by the lookup's link policy), and a walk
never enters a linked directory and stops at ``MAX_WALK_DEPTH`` levels. The server's own
temporary files (:mod:`.rewrite`) are never shown.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import os
import stat
from typing import Any, Callable, Generator, Iterator, NamedTuple

from . import _act
from ._confine import Costly
from .places import FsError, Location, SandboxCore, _Escape, _kind, display_name

# Walks stop descending here: deeper trees exist only to exhaust file descriptors.
MAX_WALK_DEPTH = 256


class CostlyListing(Costly):
    """A listing asked to stay cheap (``list_directory_page(most=...)``, on the event loop) would
    not be: the directory holds more names than that, or a link whose target must be resolved
    (each resolution can walk many components). The caller lists it again in a thread."""


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


_ZEROS, _ZERO_TIMES = itertools.repeat(0), itertools.repeat(0.0)  # an Entry's size and time in listings without sizes
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


class Listings(SandboxCore):
    """The listing and walking operations of :class:`.root.Sandbox` (a part of it: every method
    runs on a sandbox)."""

    def has_entries(self, path: str) -> bool:
        """Does the directory ``path`` hold anything (stops at the first name)?"""
        _location, held = self.open_directory(path)
        try:
            with self.act.scandir(held) as scan:
                return next(scan, None) is not None
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
        if not sizes and not largest_first:
            location, names, kinds, total = self.list_kinds_page(path, limit=limit, most=most, start=start)
            return location, [_new_entry(Entry, fields) for fields in zip(names, kinds, _ZEROS, _ZERO_TIMES)], total
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
                    else:
                        info = item.stat(follow_symlinks=False)
                except OSError:
                    continue  # vanished meanwhile
                entries.append(_new_entry(Entry, (item.name, kind, info.st_size, info.st_mtime)))
        finally:
            act.close(fd)
        return location, entries, len(items)

    def list_kinds_page(self, path: str, *, limit: int | None = None, most: int | None = None,
                        start: int = 0) -> tuple[Location, list[str], list[str], int]:
        """``list_directory_page(..., sizes=False)`` as two lists, the names and their kinds, without
        an ``Entry`` per name (what ``list_directory`` shows): ``limit`` names from the ``start``-th,
        sorted by name, and how many there are; ``most`` as there."""
        location, fd = self.open_directory(path)
        try:
            with self.act.scandir(fd) as scan:
                items = list(scan if most is None else itertools.islice(scan, most + 1))
            if most is not None and len(items) > most:
                raise CostlyListing(f"{location.display} holds more than {most} entries")
            items.sort(key=_name_of)
            items = _without_temporaries(items)
            # While the directory is still open: an entry whose type the listing lacks is looked
            # up relative to it (a closed descriptor's number may already name another directory).
            names, kinds = self._names_and_kinds(location, items[start:None if limit is None else start + limit], most)
        finally:
            self.act.close(fd)
        return location, names, kinds, len(items)

    def _names_and_kinds(self, location: Location, page: list[os.DirEntry[str]],
                         most: int | None) -> tuple[list[str], list[str]]:
        """The names of ``page`` (entries of the directory at ``location``) and their kinds from the
        listing's type field: a link shown as what it points to when that stays inside the root.
        With ``most`` (a listing on the event loop), a link raises ``CostlyListing`` instead.
        The whole page is classified in one pass; an entry that vanished meanwhile (an ``OSError``
        where the file system gives no types and a ``stat`` is made) sends the page the long way,
        entry by entry, leaving that one out."""
        try:
            kinds = ["file" if item.is_file(follow_symlinks=False) else _other_kind(item) for item in page]
        except OSError:
            return self._names_and_kinds_one_by_one(location, page, most)
        names = list(map(_name_of, page))
        if "symlink" in kinds:
            if most is not None:
                raise CostlyListing(f"{location.display} holds links to resolve")
            for index, kind in enumerate(kinds):
                if kind == "symlink" and (linked := self._linked(location.child(names[index]))) is not None:
                    kinds[index] = _kind(linked.st_mode)  # shown as what it points to
        return names, kinds

    def _names_and_kinds_one_by_one(self, location: Location, page: list[os.DirEntry[str]],
                                    most: int | None) -> tuple[list[str], list[str]]:
        names, kinds = [], []
        for item in page:
            try:
                kind = "file" if item.is_file(follow_symlinks=False) else _other_kind(item)
            except OSError:
                continue  # vanished meanwhile
            if kind == "symlink":
                if most is not None:
                    raise CostlyListing(f"{location.display} holds links to resolve")
                if (linked := self._linked(location.child(item.name))) is not None:
                    kind = _kind(linked.st_mode)
            names.append(item.name)
            kinds.append(kind)
        return names, kinds

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
    ) -> Generator[tuple[tuple[str, ...], Entry], None, None]:
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

    def walk_runs(
        self,
        path: str | Location,
        *,
        descend: Callable[[tuple[str, ...]], bool] | None = None,
        entering: Callable[[tuple[str, ...], Any], None] | None = None,
        run: int = 100,
    ) -> Generator[tuple[tuple[str, ...], list[str], list[str]], None, None]:
        """``walk(path, sizes=False)`` a run of entries at a time: ``(components of their
        directory below the start, names, kinds)``, at most ``run`` consecutive entries of one
        directory, in the walk's order. A run ends at a directory (its last entry), which the
        walk then enters or not (``descend``, as in :meth:`walk`) before the next run; the names
        and kinds of a run are the walk's ``components[-1]`` and ``entry.kind``, entry for entry.

        For trees and name searches, which can then look at a whole run with one C-level step
        (a name check, a suffix filter, one list of nodes) instead of a Python step per entry.
        ``entering`` and the limits (``MAX_WALK_DEPTH``, links never entered, one descriptor
        per level, close the generator to stop early) are :meth:`walk`'s.
        """
        act = self.act
        _location, fd = self.open_directory(path)
        stack: list[list[Any]] = [[fd, (), *self._walk_kinds(fd), 0]]
        try:
            if entering is not None:
                entering((), fd)
            while stack:
                frame = stack[-1]
                dir_fd, prefix, names, kinds, position = frame
                end = min(position + run, len(names))
                if position >= end:
                    stack.pop()
                    act.close(dir_fd)
                    continue
                if "directory" in kinds[position:end]:
                    end = kinds.index("directory", position, end) + 1  # a run ends at a directory
                frame[4] = end
                yield prefix, names[position:end], kinds[position:end]
                if kinds[end - 1] != "directory":
                    continue
                components = prefix + (names[end - 1],)
                if len(components) < MAX_WALK_DEPTH and (descend is None or descend(components)):
                    try:
                        child_fd = act.open_dir(dir_fd, names[end - 1])  # never follows name (O_NOFOLLOW)
                    except OSError:
                        continue  # unreadable, or swapped for something else: skip it
                    stack.append([child_fd, components, *self._walk_kinds(child_fd), 0])
                    if entering is not None:
                        entering(components, child_fd)
        finally:
            for frame in stack:
                act.close(frame[0])

    def _walk_kinds(self, held: Any) -> tuple[list[str], list[str]]:
        """The names of a held directory as a walk lists them (sorted, without the server's
        temporary files, an entry that vanished meanwhile left out) and their kinds from the
        listing's type field (links not followed: a link is a ``symlink``)."""
        items = list(self._sorted_entries(held))
        try:
            kinds = ["file" if item.is_file(follow_symlinks=False) else _other_kind(item) for item in items]
        except OSError:  # a file system without types, and an entry gone: one at a time
            kept, kinds = [], []
            for item in items:
                try:
                    kinds.append("file" if item.is_file(follow_symlinks=False) else _other_kind(item))
                except OSError:
                    continue
                kept.append(item)
            items = kept
        return list(map(_name_of, items)), kinds

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
