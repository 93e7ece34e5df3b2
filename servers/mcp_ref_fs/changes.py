"""Changing things inside the sandbox: directories created, files replaced, entries moved and deleted.

A part of :class:`.root.Sandbox`, under its rules (the root module's docstring): every change acts
on (a held directory, a final name) through the act step, never following the final name; a
rewrite goes through :mod:`.rewrite`, the one write path; the directories whose entries changed
are flushed; a root can be neither moved nor deleted, not even through a directory above it.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING, Any

from .places import AlreadyExists, Location, NotFound, Refused, SandboxCore, WrongKind, _identity, _kind

if TYPE_CHECKING:
    from .rewrite import Rewrite, Snapshot


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


class Changes(SandboxCore):
    """The operations of :class:`.root.Sandbox` that change the disk (a part of it: every method
    runs on a sandbox)."""

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
                same = (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)
            except OSError:
                same = False
            if not same:
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
