"""What trees and searches leave out by default: VCS metadata and what ``.gitignore`` files exclude.

``directory_tree``, ``search_files`` and ``grep_files`` skip, unless the call says
``includeIgnored: true``:

* **VCS metadata**: an entry named ``.git``, ``.hg``, ``.svn``, ``.bzr``, ``_darcs``, ``CVS``,
  ``.jj``, ``.pijul`` or ``.sl`` (a directory, or a ``.git`` file of a worktree or submodule).
* **What ``.gitignore`` files exclude**, with git's rules (the ``pathspec`` package's
  ``GitIgnoreSpec``: negation, directory-only patterns, anchoring, ``**``): each ``.gitignore``
  applies to the paths below its own directory, a deeper file overrides a shallower one, and
  within a file the last matching pattern wins. Files come from the directories on the way: the
  ones above the search directory (inside the allowed directory, from the top of the git
  repository holding it, or from the allowed directory itself when there is no repository), the
  search directory and every directory the walk enters. A directory holding ``.git`` is the top
  of a repository of its own: rules from above it do not reach into it, as in git. An ignored
  directory is not entered, so nothing below it can be re-included (git's rule too).
* A search directory that is itself ignored by the files above it is searched anyway (the caller
  named it): then only the ``.gitignore`` files at and below it apply.

Not read: ``.git/info/exclude`` and the user's global excludes file (``core.excludesFile``,
outside the allowed directories). A ``.gitignore`` that is a symbolic link is not followed
(git ignores those too) and one larger than ``MAX_IGNORE_FILE_BYTES`` is read only that far.

The files are read through the sandbox only (:meth:`.root.Sandbox.read_beneath` on directories
the walk holds open), never by path. ``pathspec`` is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .root import Location, Sandbox

VCS_NAMES = frozenset((".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj", ".pijul", ".sl"))
IGNORE_FILE = ".gitignore"
REPOSITORY_MARK = ".git"
MAX_IGNORE_FILE_BYTES = 1024 * 1024


def _spec(data: bytes) -> Any | None:
    """The compiled rules of one ``.gitignore`` (None when it has none)."""
    from pathspec import GitIgnoreSpec  # imported on first use: start-up does not pay for it

    lines = data.decode("utf-8", "surrogateescape").splitlines()
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    try:
        # Python's own engine: RE2 (pathspec's choice when google-re2 is installed, as grep_files
        # has it) cannot take a name that is not UTF-8 (surrogate escapes), and every walk would fail.
        return GitIgnoreSpec.from_lines(lines, backend="simple")
    except TypeError:  # pathspec before 1.0: one engine, Python's re
        return GitIgnoreSpec.from_lines(lines)


class Ignorer:
    """Decides, during one walk, whether an entry is ignored, and counts what it skipped.

    ``entering`` is the walk's hook (:meth:`.root.Sandbox.walk`): it reads each directory's
    ``.gitignore`` as the walk enters it. ``ignored(components, is_directory)`` answers for an
    entry at ``components`` below the walk's start. Rules of the directories above the start
    are loaded by :meth:`load_above`.
    """

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.skipped = 0
        self._below: dict[tuple[str, ...], Any] = {}  # directory below the start -> its rules
        self._above: list[tuple[str, Any]] = []  # (start's path relative to that directory, rules), top first
        self._tops: set[tuple[str, ...]] = set()  # repository tops below the start: rules above them stop there

    def load_above(self, location: Location) -> None:
        """Read the ``.gitignore`` files of the directories above ``location`` (inside its root),
        from the top of the repository holding it. None apply when ``location`` is itself a
        repository's top, or is ignored by them (it was named, so it is searched)."""
        found: list[tuple[tuple[str, ...], Any]] = []
        for parts, held in self.sandbox.ancestors(location):
            if self.sandbox.holds(held, REPOSITORY_MARK):
                found = []  # a repository's top: what lies above it is another project
            data = self.sandbox.read_beneath(held, IGNORE_FILE, MAX_IGNORE_FILE_BYTES)
            spec = _spec(data) if data else None
            if spec is not None:
                found.append((parts, spec))
        start = location.parts
        above = [("/".join(start[len(parts):]), spec) for parts, spec in found]
        # The start itself, checked against the rules above it as a directory: if they ignore
        # it, they would ignore all of it, and the caller asked for it by name.
        self._above = above
        if start and self._decide_above("", True) is True:
            self._above = []

    def entering(self, components: tuple[str, ...], held: Any) -> None:
        """The walk's hook: note the rules of the directory it just opened."""
        if components and self.sandbox.holds(held, REPOSITORY_MARK):
            self._tops.add(components)
        data = self.sandbox.read_beneath(held, IGNORE_FILE, MAX_IGNORE_FILE_BYTES)
        if data:
            spec = _spec(data)
            if spec is not None:
                self._below[components] = spec

    def ignores_none(self, names: list[str]) -> bool:
        """Whether no entry named in ``names`` can be ignored now: no rules met so far (walks
        through trees without a ``.gitignore``) and no VCS name among them."""
        return not self._below and not self._above and VCS_NAMES.isdisjoint(names)

    def ignored(self, components: tuple[str, ...], is_directory: bool) -> bool:
        """Whether the entry at ``components`` (below the start) is left out; counts it if so."""
        if components[-1] in VCS_NAMES or (self._below or self._above) and self._excluded(components, is_directory):
            self.skipped += 1  # (no .gitignore met yet, the usual case: no rules to ask)
            return True
        return False

    def _excluded(self, components: tuple[str, ...], is_directory: bool) -> bool:
        below = self._below
        slash = "/" if is_directory else ""
        # Deepest rules first: the first file with a matching pattern decides.
        for depth in range(len(components) - 1, -1, -1):
            directory = components[:depth]
            spec = below.get(directory) if below else None
            if spec is not None:
                decided = spec.check_file("/".join(components[depth:]) + slash).include
                if decided is not None:
                    return decided
            if depth and directory in self._tops:
                return False  # a repository of its own: rules from above do not reach in
        return self._decide_above("/".join(components), is_directory) is True

    def _decide_above(self, relative: str, is_directory: bool) -> bool | None:
        """What the rules above the start say of ``relative`` (a path below the start; ``""``
        for the start itself): True ignored, False re-included, None no rule matched."""
        slash = "/" if is_directory else ""
        for prefix, spec in reversed(self._above):
            path = "/".join(part for part in (prefix, relative) if part)
            decided = spec.check_file(path + slash).include
            if decided is not None:
                return bool(decided)
        return None
