"""The tools that list: list_directory(_with_sizes), directory_tree, search_files, grep_files.

Each answer is one page: at most --max-entries entries (or ``maxResults``) and at most the
answer budget (:mod:`.answers`) in bytes. A page that does not hold everything ends with a note
saying which entries it shows, of how many, and the exact next call: the same arguments with
``start``, the number of entries (matching lines, for grep) to skip. The order is stable (by
name; trees and searches depth first), so pages join up while the directory does not change.

Trees and searches skip VCS metadata and what ``.gitignore`` files exclude (:mod:`.ignore`)
unless ``includeIgnored`` is true, and say how many entries they skipped; a listing of one
directory shows everything.
"""

from __future__ import annotations

import json
import operator
import threading
from json.encoder import encode_basestring as _encode_string  # what json.dumps(str, ensure_ascii=False) writes
from typing import TYPE_CHECKING, Any

from mcp_ref import ToolError, ToolResult

from . import content
from .definitions import INCLUDE_IGNORED, MAX_EXCLUDES, PATH, READ_ONLY, START, schema, tool
from .answers import count, data_budget, fit_lines, next_call, surely_fits
from .answers import text_answer as _text_answer
from .offload import STOP_EVERY, Stop, Stopped, off_loop
from .root import Costly, Entry, FsError, Location, cheaply, display_name, sandboxed

if TYPE_CHECKING:
    from mcp_ref import RequestContext, Server

    from .config import Config
    from .ignore import Ignorer
    from .root import Sandbox

SNIFF_BYTES = 8192
IN_LOOP_ENTRIES = 1000  # directories listed on the event loop hold at most this many names (see _entries)
_TAG = content.LISTING_TAGS
_TAG_SPACE = {kind: tag + " " for kind, tag in _TAG.items()}  # a listing line: this, then the name
# Compact JSON of one tree node without its name: what each node adds to the tree's text at most.
_NODE_BYTES = {kind: len(json.dumps({"name": "", "type": kind}, separators=(",", ":"))) + 1
               for kind in ("file", "directory", "symlink", "other")}
_CHILDREN_BYTES = len(',"children":[]')
# Trees take whole runs of entries in one step where they can (directory_tree's build): a test
# turns that off to compare both ways.
_FAST_RUNS = True


def _page_note(tool: str, arguments: dict[str, Any], what: str, start: int, shown: int, total: int | None,
               more: bool, order: str = "") -> str | None:
    """The cue of a page of entries: which were shown (``order`` says how they are counted), of
    how many, and the next call. None when the answer holds everything."""
    if total is not None and 0 < start >= total and not shown:  # past the end (an empty listing says nothing)
        return f"[No {what} from start {count(start)}: there are {count(total)}.]"
    if not more and start == 0:
        return None  # everything, in one answer
    of = f" of {count(total)}" if total is not None else ""
    shown_part = f"{what.capitalize()} {count(start + 1)}-{count(start + shown)}{of}{order}" if shown \
        else f"No {what} shown{of}"
    if not more:
        return f"[{shown_part}: the last of them.]"
    follow = "" if total is not None else "; more follow"
    return f"[{shown_part}{follow}. Next page: {next_call(tool, arguments, start=start + shown)}]"


def _skipped_note(ignorer: Ignorer | None) -> list[str]:
    if ignorer is None or not ignorer.skipped:
        return []
    return [f"[Skipped {count(ignorer.skipped)} ignored entries: VCS metadata (.git and the like) and what .gitignore "
            "files exclude; an ignored directory counts once and is not entered. includeIgnored: true includes them.]"]


class WalkTools:
    """The listing tools of :class:`.tools.FsTools` (a mixin: it holds the sandbox and config)."""

    server: Server
    sandbox: Sandbox
    config: Config

    def _limits(self, ctx: RequestContext) -> dict[str, Any]:  # pragma: no cover - defined by FsTools
        raise NotImplementedError

    def _limit_seconds(self, ctx: RequestContext) -> float:  # pragma: no cover - defined by FsTools
        raise NotImplementedError

    async def _ignorer(self, arguments: dict[str, Any], location: Location) -> Ignorer | None:
        if arguments.get("includeIgnored"):
            return None
        from .ignore import Ignorer  # imported on first use (it brings pathspec when a .gitignore is found)

        ignorer = Ignorer(self.sandbox)
        await sandboxed(ignorer.load_above, location)  # its lookups, like any, leave the loop when costly
        return ignorer

    # --- one directory ----------------------------------------------------------------------------

    async def _entries(self, path: str, start: int, *, largest_first: bool = False) -> tuple[Location, list[Entry], int]:
        """Up to --max-entries entries with their sizes from the ``start``-th on, and how many
        there are: in a thread (a stat per entry, and a directory can hold 100,000 names)."""
        cap = self.config.max_entries
        return await off_loop(lambda stop: self.sandbox.list_directory_page(path, limit=cap, largest_first=largest_first, start=start))

    @tool(
        "list_directory",
        "List Directory",
        "List the entries of a directory, each prefixed [FILE] or [DIR] ([LINK] for a link that leaves the allowed "
        "directories, [OTHER] for devices, FIFOs and sockets). Shows every entry, hidden and ignored ones too; a big "
        "directory comes in pages (start). Only works within allowed directories.",
        schema({"path": PATH, "start": START}, ["path"]),
        READ_ONLY,
    )
    async def list_directory(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        # Names and kinds only (sizes are list_directory_with_sizes' job): no stat per entry, no
        # object per entry; the lines are made in C (map) and joined once, and the answer budget
        # is checked on the whole text (each line's bytes only when it does not fit). A directory
        # of at most IN_LOOP_ENTRIES names and no links is read on the event loop (well under a
        # millisecond, less than the thread hop would cost); a bigger one, or one with a link to
        # resolve (a chain of links can cost thousands of opens), in a thread.
        start = arguments.get("start", 0)
        path, cap, sandbox = arguments["path"], self.config.max_entries, self.sandbox
        listed = None
        try:
            with cheaply():
                listed = sandbox.list_kinds_page(path, limit=cap, most=IN_LOOP_ENTRIES, start=start)
        except Costly:
            pass  # as in _entries: big, or links to resolve, or a costly lookup: again, in a thread
        if listed is None:
            listed = await off_loop(lambda stop: sandbox.list_kinds_page(path, limit=cap, start=start))
        _location, names, kinds, total = listed
        lines = list(map(operator.add, map(_TAG_SPACE.__getitem__, kinds), _labels(names)))
        body = "\n".join(lines)
        shown = len(lines)
        size = (len(body) if body.isascii() else len(body.encode("utf-8"))) + 1  # as fit_lines counts
        if lines and not surely_fits(size, ctx, self.config.max_answer_bytes, arguments):
            room = data_budget(ctx, self.config.max_answer_bytes, arguments)
            if size > room:
                shown = fit_lines(lines, 0, room)
                body = "\n".join(lines[:shown])
        note = _page_note("list_directory", arguments, "entries", start, shown, total, start + shown < total)
        return _text_answer(body, [note] if note else [])

    @tool(
        "list_directory_with_sizes",
        "List Directory with Sizes",
        "List the entries of a directory with file sizes, sorted by name or by size (largest first), followed by "
        "totals; a big directory comes in pages (start). Only works within allowed directories.",
        schema({"path": PATH, "sortBy": {"type": "string", "enum": ["name", "size"], "default": "name",
                                         "description": "Sort entries by name or size"}, "start": START}, ["path"]),
        READ_ONLY,
    )
    async def list_directory_with_sizes(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        start = arguments.get("start", 0)
        _location, entries, total = await self._entries(arguments["path"], start,
                                                        largest_first=arguments.get("sortBy") == "size")
        lines = [
            f"{_TAG[e.kind]} {e.label.ljust(30)} {content.format_size(e.size).rjust(10) if e.kind == 'file' else ''}".rstrip()
            for e in entries
        ]
        shown = fit_lines(lines, 0, data_budget(ctx, self.config.max_answer_bytes, arguments) - 120) if lines else 0
        entries = entries[:shown]
        files = [e for e in entries if e.kind == "file"]
        directories = sum(1 for e in entries if e.kind == "directory")
        whole = start == 0 and shown == total
        lines = lines[:shown] + ["", f"Total{'' if whole else ' of the entries shown'}: {len(files)} files, {directories} directories",
                                 f"Combined size: {content.format_size(sum(e.size for e in files))}"]
        note = _page_note("list_directory_with_sizes", arguments, "entries", start, shown, total, start + shown < total)
        return _text_answer("\n".join(lines), [note] if note else [])

    # --- trees and searches -----------------------------------------------------------------------

    @tool(
        "directory_tree",
        "Directory Tree",
        "A recursive tree of a directory as JSON: each entry has name and type (file, directory or symlink), and "
        "directories have children (left out where maxDepth stopped the descent). Exclude names or globs with "
        "excludePatterns and limit the depth with maxDepth. VCS metadata (.git...) and what .gitignore files exclude "
        "are skipped unless includeIgnored is true. A big tree comes in pages: the note names the next call (start). "
        "Linked directories are not entered. Only works within allowed directories.",
        schema({"path": PATH,
                 "excludePatterns": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_EXCLUDES, "default": []},
                 "maxDepth": {"type": "integer", "minimum": 1, "description": "Levels to descend (default: all)"},
                 "includeIgnored": INCLUDE_IGNORED, "start": START},
                ["path"]),
        READ_ONLY,
        long_running=True,
    )
    async def directory_tree(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        excludes = _excludes(arguments.get("excludePatterns") or [])
        max_depth = arguments.get("maxDepth")
        start = arguments.get("start", 0)
        cap = self.config.max_entries
        location = await sandboxed(self.sandbox.locate_directory, arguments["path"])
        room = data_budget(ctx, self.config.max_answer_bytes, arguments) - 2  # the outer []
        ignorer = await self._ignorer(arguments, location)

        def build(stop: Stop) -> tuple[list[Any], int, int, bool]:
            """The page's tree (as ``_tree_json`` takes it), how many entries it shows, how many the
            whole tree has, and whether the walk was stopped by the time limit (the total is then
            a lower bound)."""
            top: list[Any] = []
            children: dict[tuple[str, ...], list[Any]] = {(): top}
            total = shown = walked = clock_at = 0
            used = 0
            full = False
            excluding = bool(excludes.patterns)
            pruned: list[tuple[str, ...] | None] = [None]

            def descend(components: tuple[str, ...]) -> bool:
                return components != pruned[0] and (max_depth is None or len(components) < max_depth) \
                    and not excludes.excluded("/".join(components))

            walk = self.sandbox.walk_runs(location, descend=descend, run=STOP_EVERY,
                                          entering=ignorer.entering if ignorer is not None else None)
            try:
                for run_in, names, kinds in walk:
                    # A cancellation is seen at the next run, the clock read every STOP_EVERY entries.
                    if stop.cancelled or walked >= clock_at:
                        clock_at = walked + STOP_EVERY
                        if stop():
                            if stop.timed_out:
                                return top, shown, total, True
                            raise Stopped()
                    walked += len(names)
                    if shown and not full and total >= start and not excluding and _FAST_RUNS \
                            and (ignorer is None or ignorer.ignores_none(names)):
                        # The usual run: every entry counts and, if the run fits, is shown: one
                        # C-level step per run (labels, bytes, nodes), as the entry by entry way below.
                        quoted = list(map(_encode_string, _labels(names)))
                        opened = kinds[-1] == "directory" and (max_depth is None or len(run_in) < max_depth - 1)
                        cost = sum(map(_NODE_BYTES.__getitem__, kinds)) + _json_strings_bytes(quoted) \
                            + (_CHILDREN_BYTES if opened else 0)
                        if shown + len(names) <= cap and used + cost <= room:
                            for passed in range(total // 500 + 1, (total + len(names)) // 500 + 1):
                                ctx.report_progress(passed * 500, message=f"{passed * 500} entries so far")
                            total += len(names)
                            used += cost
                            shown += len(names)
                            nodes: list[Any] = [f'{{"name":{name},"type":"{kind}"}}' for name, kind in zip(quoted, kinds)]
                            if opened:
                                below = children[run_in + (names[-1],)] = []
                                nodes[-1] = [f'{{"name":{quoted[-1]},"type":"directory","children":[', below]
                            children[run_in] += nodes
                            continue
                    for name, kind in zip(names, kinds):
                        components = run_in + (name,)
                        if excluding and excludes.excluded("/".join(components)):
                            continue
                        if ignorer is not None and ignorer.ignored(components, kind == "directory"):
                            pruned[0] = components
                            continue
                        total += 1
                        if total % 500 == 0:
                            ctx.report_progress(total, message=f"{total} entries so far")
                        if total <= start or full:
                            continue
                        label = _encode_string(display_name(name))
                        node: Any = f'{{"name":{label},"type":"{kind}"}}'
                        opened = kind == "directory" and (max_depth is None or len(components) < max_depth)
                        cost = _NODE_BYTES[kind] + _json_strings_bytes([label]) + (_CHILDREN_BYTES if opened else 0)
                        if not shown:
                            cost += _ancestors(location, components, children)  # the first entry's parents, repeated
                        if shown >= cap or shown and used + cost > room:
                            full = True
                            continue
                        used += cost
                        if opened:
                            # A directory maxDepth keeps us out of gets no children list: [] would say "empty".
                            below = children[components] = []
                            node = [f'{{"name":{label},"type":"directory","children":[', below]
                        children[run_in].append(node)
                        shown += 1
            finally:
                walk.close()
            return top, shown, total, False

        tree, shown, total, timed_out = await off_loop(build, **self._limits(ctx))
        notes = []
        if timed_out:
            notes.append(f"[Stopped at the {self._limit_seconds(ctx):g} s time limit after {count(total)} entries; "
                         f"{'the next page may be empty' if start + shown >= total else 'later entries were not counted'}. "
                         "Use maxDepth, excludePatterns or a subdirectory.]")
        note = _page_note("directory_tree", arguments, "entries", start, shown, None if timed_out else total,
                          timed_out or start + shown < total,
                          " (counted depth first, by name; a later page repeats the parent directories of its first entry)")
        if note:
            notes.insert(0, note)
        # Compact JSON: the C encoder (indent= would fall back to the pure-Python one, 3x slower on
        # big trees) and far fewer tokens in a model's context than an indented tree.
        return _text_answer(_tree_json(tree), notes + _skipped_note(ignorer))

    @tool(
        "search_files",
        "Search Files",
        "Find files and directories whose path, relative to the search directory, matches a glob: '*.py' matches "
        "in that directory only, '**/*.py' at any depth; '*' and '?' never cross '/', '[abc]' and '{a,b}' work. "
        "Returns full paths. VCS metadata and what .gitignore files exclude are skipped unless includeIgnored is "
        "true; many matches come in pages (start). Only searches within allowed directories.",
        schema({"path": PATH, "pattern": {"type": "string", "description": "Glob matched against relative paths"},
                 "excludePatterns": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_EXCLUDES, "default": []},
                 "maxResults": {"type": "integer", "minimum": 1, "description": "Most matches in one answer"},
                 "includeIgnored": INCLUDE_IGNORED, "start": START},
                ["path", "pattern"]),
        READ_ONLY,
        long_running=True,
    )
    async def search_files(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        glob = _glob(arguments["pattern"])
        excludes = _excludes(arguments.get("excludePatterns") or [])
        cap = min(arguments.get("maxResults") or self.config.max_entries, self.config.max_entries)
        start = arguments.get("start", 0)
        location = await sandboxed(self.sandbox.locate_directory, arguments["path"])
        prefix = location.display.rstrip("/") + "/"  # as _join shows a path, without a Location per match
        room = data_budget(ctx, self.config.max_answer_bytes, arguments)
        ignorer = await self._ignorer(arguments, location)

        def search(stop: Stop) -> tuple[list[str], int, bool]:
            found: list[str] = []  # relative paths as on disk; shown in full below
            total = seen = clock_at = 0
            used = 0
            full = False
            excluding = bool(excludes.patterns)
            matches, suffixes = glob.matches, glob.suffixes
            pruned: list[tuple[str, ...] | None] = [None]
            walk = self.sandbox.walk_runs(location, descend=lambda c: c != pruned[0] and not excludes.excluded("/".join(c))
                                          and glob.could_match_below("/".join(c)), run=STOP_EVERY,
                                          entering=ignorer.entering if ignorer is not None else None)
            try:
                for run_in, names, kinds in walk:
                    # A cancellation is seen at the next run, the clock read every STOP_EVERY entries.
                    if stop.cancelled or seen >= clock_at:
                        clock_at = seen + STOP_EVERY
                        if stop():
                            if stop.timed_out:
                                return found, total, True
                            raise Stopped()
                    if (seen + len(names)) // 1000 > seen // 1000:  # every entry walked counts, matching or not
                        passed = (seen + len(names)) // 1000 * 1000
                        ctx.report_progress(passed, message=f"{passed} entries searched, {total} matches")
                    seen += len(names)
                    # Only a run's last entry can be a directory (walk_runs).
                    directory = names[-1] if kinds[-1] == "directory" else None
                    if directory is not None and ignorer is not None and ignorer.ignored(run_in + (directory,), True):
                        pruned[0] = run_in + (directory,)
                        names, directory = names[:-1], None
                    if suffixes is not None:  # most names of a '**/*.py' search cannot match: one C-level step
                        names = [name for name in names if name.endswith(suffixes)]
                    within = "/".join(run_in) + "/" if run_in else ""
                    for name in names:
                        relative = within + name
                        if not matches(relative) or excluding and excludes.excluded(relative):
                            continue
                        if name != directory and ignorer is not None and ignorer.ignored(run_in + (name,), False):
                            continue
                        total += 1
                        if total <= start or full:
                            continue
                        cost = len(prefix.encode("utf-8")) + len(relative.encode("utf-8", "surrogateescape")) + 1
                        if len(found) >= cap or found and used + cost > room:
                            full = True
                            continue
                        used += cost
                        found.append(relative)
            finally:
                walk.close()
            return found, total, False

        found, total, timed_out = await off_loop(search, **self._limits(ctx))
        found = [prefix + relative for relative in _labels(found)]  # "/" is shown as itself
        notes = []
        if timed_out:
            notes.append(f"[Stopped at the {self._limit_seconds(ctx):g} s time limit after {count(total)} matches; narrow "
                         "the pattern or the directory.]")
        note = _page_note("search_files", arguments, "matches", start, len(found), None if timed_out else total,
                          timed_out or start + len(found) < total)
        body = "\n".join(found) if found else "No matches found"
        return _text_answer(body, ([note] if note else []) + notes + _skipped_note(ignorer))

    @tool(
        "grep_files",
        "Search File Contents",
        "Search the contents of text files under a directory for a regular expression (Python syntax) and return "
        "matching lines as path:line: text, with optional context lines. Restrict the files with a glob such as "
        "'**/*.py'. Binary files, VCS metadata and what .gitignore files exclude are skipped (includeIgnored: true "
        "searches those too); many matches come in pages (start). Only searches within allowed directories.",
        schema({"path": PATH,
                 "pattern": {"type": "string", "description": "Regular expression (or literal text with literal: true)"},
                 "glob": {"type": "string", "description": "Only files whose relative path matches this glob"},
                 "excludePatterns": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_EXCLUDES, "default": []},
                 "maxResults": {"type": "integer", "minimum": 1, "description": "Most matching lines in one answer"},
                 "contextLines": {"type": "integer", "minimum": 0, "maximum": 20, "default": 0},
                 "ignoreCase": {"type": "boolean", "default": False},
                 "literal": {"type": "boolean", "default": False, "description": "Treat pattern as plain text"},
                 "includeIgnored": INCLUDE_IGNORED,
                 "start": {**START, "description": "Matching lines to skip: the next page starts here (the note "
                                                   "of a cut answer gives it)"}},
                ["path", "pattern"]),
        READ_ONLY,
        long_running=True,
    )
    async def grep_files(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        # Imported on first use, like the globs below: start-up does not pay for it.
        from .grep import GrepTimeout, GrepTooSlow, compile_grep

        try:
            grep = compile_grep(arguments["pattern"], ignore_case=arguments.get("ignoreCase", False),
                                literal=arguments.get("literal", False))
        except ValueError as error:
            raise ToolError(f"Invalid pattern: {error}") from None
        glob = _glob(arguments["glob"]) if arguments.get("glob") else None
        excludes = _excludes(arguments.get("excludePatterns") or [])
        cap = min(arguments.get("maxResults") or self.config.max_entries, self.config.max_entries)
        context_lines = arguments.get("contextLines", 0)
        start = arguments.get("start", 0)
        location = await sandboxed(self.sandbox.locate_directory, arguments["path"])
        max_file = self.config.max_media_bytes
        room = data_budget(ctx, self.config.max_answer_bytes, arguments)
        ignorer = await self._ignorer(arguments, location)

        skipped: list[str] = []  # files the regex engine ran out of memory on
        too_slow: list[str] = []  # the backtracking engine's allowance, used up on one search
        page = _GrepPage()  # what the worker has found, a whole file at a time: the answer at the deadline too

        def search(stop: Stop) -> tuple[list[str], int, int, bool, bool]:
            """Lines of the page, matches shown, files searched, whether more matches follow,
            whether the time limit ended the search."""
            pruned: list[tuple[str, ...] | None] = [None]
            walk = self.sandbox.walk(location, descend=lambda c: c != pruned[0] and not excludes.excluded("/".join(c))
                                     and (glob is None or glob.could_match_below("/".join(c))),
                                     entering=ignorer.entering if ignorer is not None else None)
            try:
                for components, entry in walk:
                    if stop():
                        if stop.timed_out:
                            return page.snapshot(more=True, timed_out=True)
                        raise Stopped()
                    if ignorer is not None and entry.kind == "directory" and ignorer.ignored(components, True):
                        pruned[0] = components
                        continue
                    relative = "/".join(components)
                    if entry.kind != "file" or entry.label != entry.name or excludes.excluded(relative):
                        continue
                    if glob is not None and not glob.matches(relative) or entry.size > max_file:
                        continue
                    if ignorer is not None and ignorer.ignored(components, False):
                        continue
                    try:
                        with self.sandbox.open_file(_join(location, components)) as opened:
                            data = opened.read_at(0, max_file)
                    except FsError:
                        continue
                    if content.looks_binary(data[:SNIFF_BYTES]):
                        continue
                    page.files += 1
                    try:
                        if page.shown >= cap or page.shown and page.used >= room:
                            # Full: only learn whether anything was left out (so exactly cap matches
                            # are not reported as cut), then stop at the first further match.
                            if grep.search_lines(data, context=0, max_matches=1, deadline=_deadline(stop)).matches:
                                return page.snapshot(more=True)
                            continue
                        result = grep.search_lines(data, context=context_lines, max_matches=start + cap - page.seen,
                                                   deadline=_deadline(stop))
                    except GrepTooSlow as error:
                        too_slow.append(f"[Stopped early: {error} in {_join(location, components)}; it backtracks "
                                        "without end on such text. Simplify nested repetition like (a+)+ or (a|aa)+.]")
                        return page.snapshot(more=True)
                    except GrepTimeout:
                        return page.snapshot(more=True, timed_out=True)
                    except MemoryError:
                        # Nested repetition over a huge line can need more memory than exists;
                        # that file is skipped (and said so), the search goes on.
                        skipped.append(_join(location, components))
                        continue
                    if page.add_file(_join(location, components), result.matches, start, cap, room, context_lines):
                        return page.snapshot(more=True)
                    if result.truncated and page.seen >= start + cap:
                        return page.snapshot(more=True)
                    if page.files % 100 == 0:
                        ctx.report_progress(page.files, message=f"{page.files} files searched, {page.shown} matching lines")
            finally:
                walk.close()
            return page.snapshot(more=False)

        # The time limit is kept by the event loop's clock (at_deadline): a search still inside
        # one regular expression then is answered with what was found before it.
        lines, shown, files, more, timed_out = await off_loop(
            search, **self._limits(ctx), at_deadline=lambda: page.snapshot(more=True, timed_out=True))
        notes = []
        if timed_out:
            notes.append(f"[Stopped at the {self._limit_seconds(ctx):g} s time limit after {count(files)} files; narrow "
                         "the pattern, glob or directory.]")
        notes += too_slow[:1]
        note = _page_note("grep_files", arguments, "matching lines", start, shown, None, more)
        if note:
            notes.insert(0, note)
        if skipped:
            notes.append(f"[Skipped {len(skipped)} file(s) the pattern needed too much memory for, such as {skipped[0]}; "
                         "simplify nested repetition like (a|aa)+.]")
        body = "\n".join(lines) if lines else "No matches found"
        return _text_answer(body, notes + _skipped_note(ignorer))


class _GrepPage:
    """One page of grep results as the worker thread builds it. A file's matching lines are added
    whole, under a lock, so the event loop can answer with the page at the deadline while the
    worker is still inside a search."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.lines: list[str] = []
        self.files = 0  # files searched
        self.seen = 0  # matching lines met, those before ``start`` included
        self.shown = 0  # matching lines on this page
        self.used = 0  # bytes of the page's lines
        self._last_path: str | None = None

    def add_file(self, path: str, matches: Any, start: int, cap: int, room: int, context_lines: int) -> bool:
        """Add the matches of one file (after the first ``start`` of the whole search); True when
        the page is full and a match was left out."""
        group_lines: list[str] = []
        seen, shown, used, full = self.seen, self.shown, self.used, False
        last_shown = None  # the last line of this file already printed
        for match in matches:
            seen += 1
            if seen <= start:
                continue
            first = match.line_number - len(match.before)
            group = []
            # "--" between groups, as grep -C prints it: not between touching ones.
            if (self.lines or group_lines) and context_lines and (last_shown is None or first > last_shown + 1):
                group.append("--")
            group += [f"{path}-{first + i}- {line}" for i, line in enumerate(match.before)]
            group.append(f"{path}:{match.line_number}: {match.line}")
            group += [f"{path}-{match.line_number + 1 + i}- {line}" for i, line in enumerate(match.after)]
            cost = sum(len(line.encode("utf-8")) + 1 for line in group)
            if shown >= cap or shown and used + cost > room:
                full = True
                break
            used += cost
            group_lines += group
            shown += 1
            last_shown = match.line_number + len(match.after)
        with self._lock:
            self.lines += group_lines
            self.seen, self.shown, self.used = seen, shown, used
        return full

    def snapshot(self, *, more: bool, timed_out: bool = False) -> tuple[list[str], int, int, bool, bool]:
        with self._lock:
            return list(self.lines), self.shown, self.files, more, timed_out


# --- helpers ---------------------------------------------------------------------------------------


def _json_strings_bytes(quoted: list[str]) -> int:
    """The UTF-8 bytes of these JSON strings (``_encode_string``'s), in C-level steps."""
    if all(map(str.isascii, quoted)):
        return sum(map(len, quoted))
    return sum(len(text.encode("utf-8")) for text in quoted)


def _tree_json(nodes: list[Any]) -> str:
    """The compact JSON of a tree ``directory_tree`` built: ``json.dumps(tree, ensure_ascii=False,
    separators=(",", ":"))`` of its nodes as dicts, written from the nodes' own JSON text. A node
    is its JSON text, or, for a directory with children, ``[its text up to "children":[, its
    children]``. (10,000 entries: ~2 ms instead of ~7 ms for the dicts and the encoder.)"""
    return "[" + ",".join(node if node.__class__ is str else node[0] + _tree_json(node[1])[1:] + "}" for node in nodes) + "]"


def _ancestors(location: Location, components: tuple[str, ...], children: dict[tuple[str, ...], list[Any]]) -> int:
    """Put the parent directories of the first entry of a page into the tree (they were shown
    on an earlier page), so its path stays readable; returns the bytes they add."""
    used = 0
    for depth in range(1, len(components)):
        parent = components[:depth]
        if parent in children:
            continue
        name = _encode_string(display_name(parent[-1]))
        children[parent[:-1]].append([f'{{"name":{name},"type":"directory","children":[', children.setdefault(parent, [])])
        used += _NODE_BYTES["directory"] + _CHILDREN_BYTES + _json_strings_bytes([name])
    return used


def _labels(names: list[str]) -> list[str]:
    """``display_name`` of each name (or relative path). One check of them all, joined by "/"
    (which ``display_name`` leaves alone), answers for the usual case where none needs an escape."""
    joined = "/".join(names)
    if display_name(joined) == joined:
        return names
    return [display_name(name) for name in names]


def _join(location: Location, components: tuple[str, ...]) -> str:
    return Location(location.root, location.parts + components).display


def _glob(pattern: str) -> Any:
    from .patterns import compile_glob  # imported on first use (start-up time)

    try:
        return compile_glob(pattern)
    except ValueError as error:
        raise ToolError(f"Invalid glob pattern: {error}") from None


def _excludes(patterns: list[str]) -> Any:
    from .patterns import compile_excludes  # imported on first use (start-up time)

    try:
        return compile_excludes(patterns)
    except ValueError as error:
        raise ToolError(f"Invalid exclude pattern: {error}") from None


def _deadline(stop: Stop) -> float:
    """When a search must stop (``time.monotonic()``): its ``Stop``'s deadline, which a grep always has."""
    deadline = stop.deadline
    return float("inf") if deadline is None else deadline
