"""The tools of mcp-ref-fs: one small function per tool.

Names and arguments are those of the official Node server (``@modelcontextprotocol/server-
filesystem``), so prompts and habits carry over; optional arguments were added where users hit
walls (windows and caps on big outputs, a depth for trees, content search, deletion). Each tool:
validate what the schema cannot -> one sandbox operation (:mod:`.root`; no path string is opened
here) -> format a readable text block plus ``structuredContent``. A refused or failed operation
is a tool error (``isError: true``) whose text says what to do next.
"""

from __future__ import annotations

import json
import stat
from typing import TYPE_CHECKING, Any, Callable, Iterator

from mcp_ref import ToolError, ToolResult, audio, blob_resource, embedded_resource, image

from . import content
# The answer helpers under the names this module has always used for them.
from .answers import answer as _result, first_bytes as _first_bytes, last_bytes as _last_bytes
from .offload import IN_LOOP_READ_BYTES, STOP_EVERY, Stop, Stopped, off_loop, read_start
from .resources import location_uri
from .rewrite import FileLocks
from .root import CostlyListing, Entry, FsError, Location, OpenFile, display_name
from .writing import WritingTools

if TYPE_CHECKING:
    from mcp_ref import RequestContext, Server

    from .config import Config
    from .root import Sandbox

SNIFF_BYTES = 8192
MAX_EDITS = 1000  # edits in one edit_file call
MAX_EXCLUDES = 64  # excludePatterns in one call
CHUNK_BYTES = 256 * 1024
IN_LOOP_ENTRIES = 1000  # directories listed on the event loop hold at most this many names (see _entries)
READ_ONLY = {"readOnlyHint": True, "openWorldHint": False}
PATH = {"type": "string", "description": "Absolute path, or relative to the first allowed directory"}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _output(**properties: Any) -> dict[str, Any]:
    """An outputSchema: always ``content`` (the text block, as the official server gives it) plus extras."""
    return {"type": "object", "properties": {"content": {"type": "string"}, **properties}, "required": ["content"]}


class FsTools(WritingTools):
    """Registers every tool on a ``Server``; holds the sandbox and limits they share. The tools
    that change the disk are in :mod:`.writing`."""

    def __init__(self, server: Server, sandbox: Sandbox, config: Config) -> None:
        self.server = server
        self.sandbox = sandbox
        self.config = config
        self.locks = FileLocks()  # one rewrite of a file at a time (writing.py)
        self._register()

    # --- registration ---------------------------------------------------------------------------

    def _tool(self, name: str, title: str, description: str, input_schema: dict[str, Any],
              annotations: dict[str, Any], output_schema: dict[str, Any] | None, handler: Callable[..., Any],
              *, mutates: bool = False, long_running: bool = False) -> None:
        refused = mutates and self.config.read_only
        if refused:
            description = "[Disabled: this server runs read-only; calls are refused.] " + description

        async def call(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
            if refused:
                raise ToolError(f"{name} is disabled: the server was started with --read-only, so nothing on disk may change")
            try:
                return await handler(ctx, arguments)
            except FsError as error:
                raise ToolError(str(error)) from None
            except Stopped:
                raise ToolError(f"{name} was stopped before it finished") from None

        # A long-running tool may answer a client that declared the tasks extension with a task
        # handle once it has run 0.1 s; its progress then shows as the task's status message.
        self.server.tool(name, description=description, input_schema=input_schema, output_schema=output_schema,
                         title=title, annotations=annotations, task="optional" if long_running else None)(call)

    def _limits(self, ctx: RequestContext) -> dict[str, Any]:
        """``off_loop`` arguments of a search: --search-seconds, or --task-search-seconds once it is a
        task; and marked long, so searches never take the last worker thread (offload.py)."""
        return {"seconds": self.config.search_seconds, "task_seconds": self.config.task_search_seconds,
                "in_task": lambda: ctx.task_id is not None, "long": True}

    def _limit_seconds(self, ctx: RequestContext) -> float:
        return self.config.task_search_seconds if ctx.task_id is not None else self.config.search_seconds

    def _register(self) -> None:
        head_tail = {
            "head": {"type": "integer", "minimum": 0, "description": "Return only the first N lines"},
            "tail": {"type": "integer", "minimum": 0, "description": "Return only the last N lines"},
            "offset": {"type": "integer", "minimum": 0, "description": "First line to return (0-based); with limit, reads a window"},
            "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to return from offset"},
        }
        read_out = _output(truncated={"type": "boolean"}, totalBytes={"type": "integer"},
                           notes={"type": "array", "items": {"type": "string"}})
        read_description = (
            "Read a text file (UTF-8) and return its contents. Use head or tail for the first or last N lines, or "
            "offset/limit for a window of lines. Large files are cut at the server's read limit with a note giving "
            "the total size. Binary files are refused: use read_media_file for those. Only works within allowed directories."
        )
        self._tool("read_text_file", "Read Text File", read_description, _schema({"path": PATH, **head_tail}, ["path"]),
                   READ_ONLY, read_out, self.read_text_file)
        self._tool("read_file", "Read File (deprecated)", "Deprecated alias of read_text_file. " + read_description,
                   _schema({"path": PATH, **head_tail}, ["path"]), READ_ONLY, read_out, self.read_text_file)
        self._tool(
            "read_media_file", "Read Media File",
            "Read a binary file (image, audio or other) and return it base64-encoded with its MIME type, detected from "
            "the content and the extension: images as image content, audio as audio content, anything else as an "
            "embedded resource. Only works within allowed directories.",
            _schema({"path": PATH}, ["path"]), READ_ONLY, None, self.read_media_file)
        self._tool(
            "read_multiple_files", "Read Multiple Files",
            "Read several text files at once; each file's contents follow its path, and a failure on one file does not "
            "stop the others. Only works within allowed directories.",
            _schema({"paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 100,
                               "description": "Paths of the files to read"}}, ["paths"]),
            READ_ONLY, _output(), self.read_multiple_files)
        self._tool(
            "write_file", "Write File",
            "Create a file or replace an existing one with new UTF-8 text. Existing content is overwritten without "
            "warning. The replacement is atomic: readers see the old or the new file, never a mix. The file's directory "
            "must exist. Only works within allowed directories.",
            _schema({"path": PATH, "content": {"type": "string", "description": "The complete new contents"}}, ["path", "content"]),
            {"readOnlyHint": False, "idempotentHint": True, "destructiveHint": True, "openWorldHint": False},
            _output(), self.write_file, mutates=True)
        self._tool(
            "edit_file", "Edit File",
            "Replace text in a file and return a unified diff of the change. Each edit's oldText must match exactly "
            "once (exactly, or line by line ignoring leading and trailing whitespace, in which case the indentation of "
            "the file is kept); newText is inserted literally. Edits apply in order. With dryRun the diff is shown "
            "and nothing is written. Line endings and a byte-order mark are preserved. Only works within allowed directories.",
            _schema({
                "path": PATH,
                "edits": {"type": "array", "minItems": 1, "maxItems": MAX_EDITS, "items": _schema({
                    "oldText": {"type": "string", "description": "Text to find; must match exactly once"},
                    "newText": {"type": "string", "description": "Text to put in its place"},
                }, ["oldText", "newText"])},
                "dryRun": {"type": "boolean", "default": False, "description": "Show the diff without writing"},
            }, ["path", "edits"]),
            {"readOnlyHint": False, "idempotentHint": False, "destructiveHint": True, "openWorldHint": False},
            _output(diff={"type": "string"}, applied={"type": "boolean"}), self.edit_file, mutates=True)
        self._tool(
            "create_directory", "Create Directory",
            "Create a directory, with any missing parents. An existing directory is not an error. "
            "Only works within allowed directories.",
            _schema({"path": PATH}, ["path"]),
            {"readOnlyHint": False, "idempotentHint": True, "destructiveHint": False, "openWorldHint": False},
            _output(), self.create_directory, mutates=True)
        self._tool(
            "list_directory", "List Directory",
            "List the entries of a directory, each prefixed [FILE] or [DIR] ([LINK] for a link that leaves the allowed "
            "directories, [OTHER] for devices, FIFOs and sockets). Only works within allowed directories.",
            _schema({"path": PATH}, ["path"]), READ_ONLY, _output(entries=_ENTRIES_SCHEMA, truncated={"type": "boolean"}),
            self.list_directory)
        self._tool(
            "list_directory_with_sizes", "List Directory with Sizes",
            "List the entries of a directory with file sizes, sorted by name or by size (largest first), followed by "
            "totals. Only works within allowed directories.",
            _schema({"path": PATH, "sortBy": {"type": "string", "enum": ["name", "size"], "default": "name",
                                             "description": "Sort entries by name or size"}}, ["path"]),
            READ_ONLY, _output(entries=_ENTRIES_SCHEMA, truncated={"type": "boolean"}), self.list_directory_with_sizes)
        self._tool(
            "directory_tree", "Directory Tree",
            "A recursive tree of a directory as JSON: each entry has name and type (file, directory or symlink), and "
            "directories have children (left out where maxDepth stopped the descent). Exclude names or globs with "
            "excludePatterns and limit the depth with maxDepth; "
            "big trees are cut at the entry limit with a note. Linked directories are not entered. "
            "Only works within allowed directories.",
            _schema({"path": PATH,
                     "excludePatterns": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_EXCLUDES, "default": []},
                     "maxDepth": {"type": "integer", "minimum": 1, "description": "Levels to descend (default: all)"}},
                    ["path"]),
            READ_ONLY, _output(truncated={"type": "boolean"}, entries={"type": "integer"}), self.directory_tree,
            long_running=True)
        self._tool(
            "move_file", "Move File",
            "Move or rename a file or directory. Fails if the destination exists: it never overwrites. "
            "Both paths must be within allowed directories.",
            _schema({"source": PATH, "destination": PATH}, ["source", "destination"]),
            {"readOnlyHint": False, "idempotentHint": False, "destructiveHint": False, "openWorldHint": False},
            _output(), self.move_file, mutates=True)
        self._tool(
            "search_files", "Search Files",
            "Find files and directories whose path, relative to the search directory, matches a glob: '*.py' matches "
            "in that directory only, '**/*.py' at any depth; '*' and '?' never cross '/', '[abc]' and '{a,b}' work. "
            "Returns full paths. Only searches within allowed directories.",
            _schema({"path": PATH, "pattern": {"type": "string", "description": "Glob matched against relative paths"},
                     "excludePatterns": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_EXCLUDES, "default": []},
                     "maxResults": {"type": "integer", "minimum": 1}},
                    ["path", "pattern"]),
            READ_ONLY, _output(matches={"type": "array", "items": {"type": "string"}}, truncated={"type": "boolean"}),
            self.search_files, long_running=True)
        self._tool(
            "grep_files", "Search File Contents",
            "Search the contents of text files under a directory for a regular expression (Python syntax) and return "
            "matching lines as path:line: text, with optional context lines. Restrict the files with a glob such as "
            "'**/*.py'. Binary files are skipped; the search stops at maxResults matches or the time limit. "
            "Only searches within allowed directories.",
            _schema({"path": PATH,
                     "pattern": {"type": "string", "description": "Regular expression (or literal text with literal: true)"},
                     "glob": {"type": "string", "description": "Only files whose relative path matches this glob"},
                     "excludePatterns": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_EXCLUDES, "default": []},
                     "maxResults": {"type": "integer", "minimum": 1, "description": "Most matching lines to return"},
                     "contextLines": {"type": "integer", "minimum": 0, "maximum": 20, "default": 0},
                     "ignoreCase": {"type": "boolean", "default": False},
                     "literal": {"type": "boolean", "default": False, "description": "Treat pattern as plain text"}},
                    ["path", "pattern"]),
            READ_ONLY, _output(matches=_MATCHES_SCHEMA, truncated={"type": "boolean"}, filesSearched={"type": "integer"}),
            self.grep_files, long_running=True)
        self._tool(
            "get_file_info", "Get File Info",
            "Metadata of a file or directory: size, creation, modification and access times, type and permissions, "
            "without reading its contents. Only works within allowed directories.",
            _schema({"path": PATH}, ["path"]), READ_ONLY,
            _output(size={"type": "integer"}, type={"type": "string"}), self.get_file_info)
        self._tool(
            "list_allowed_directories", "List Allowed Directories",
            "The directories this server may access; everything below them is accessible too. Call it first to learn "
            "which paths are valid.",
            _schema({}, []), READ_ONLY, _output(directories={"type": "array", "items": {"type": "string"}}),
            self.list_allowed_directories)
        self._tool(
            "delete_file", "Delete File",
            "Delete a file, a symbolic link (not its target) or an empty directory, after the user confirms it: the "
            "client is asked to show a confirmation naming the path. Nothing is deleted if the user declines or the "
            "file changed meanwhile. Only works within allowed directories.",
            _schema({"path": PATH}, ["path"]),
            {"readOnlyHint": False, "idempotentHint": False, "destructiveHint": True, "openWorldHint": False},
            _output(deleted={"type": "boolean"}), self.delete_file, mutates=True)

    # --- reading ----------------------------------------------------------------------------------

    def _refuse_binary(self, opened: OpenFile, sample: bytes) -> None:
        if content.looks_binary(sample[:SNIFF_BYTES]):
            mime = content.sniff_mime(sample[:SNIFF_BYTES], opened.location.parts[-1] if opened.location.parts else "")
            raise ToolError(f"{opened.location.display} is a binary file ({mime}), not UTF-8 text; use read_media_file to read it")

    def _decode(self, opened: OpenFile, data: bytes) -> str:
        try:
            return content.decode_text(data)
        except content.NotText:
            raise ToolError(f"{opened.location.display} is not valid UTF-8 text; use read_media_file to read it") from None

    async def _text_of(self, path: str, arguments: dict[str, Any]) -> tuple[str, list[str], dict[str, Any]]:
        """A file's text (or the asked-for part of it), notes about cuts, and structured extras."""
        head, tail = arguments.get("head"), arguments.get("tail")
        offset, limit = arguments.get("offset"), arguments.get("limit")
        if head is not None and tail is not None:
            raise ToolError("Give head or tail, not both")
        if (head is not None or tail is not None) and (offset is not None or limit is not None):
            raise ToolError("Give head/tail or offset/limit, not both")
        cap = self.config.max_read_bytes
        with self.sandbox.open_file(path) as opened:
            size = opened.info.st_size
            sample = opened.read_at(0, SNIFF_BYTES)
            self._refuse_binary(opened, sample)
            notes: list[str] = []
            if tail is not None:
                # Only the last cap + 1 bytes can be shown: read no further back than that, so a
                # huge tail of a huge file costs one bounded read (more lines than fit: truncated).
                window = min(size, cap + 1)
                base = size - window

                def read_tail(_stop: Stop | None = None) -> bytes:
                    return content.tail_lines(lambda at, length: opened.read_at(base + at, length), window, tail)

                data = await off_loop(read_tail) if window > IN_LOOP_READ_BYTES else read_tail()
            elif head is not None:
                data, _more = content.head_lines(_chunks(opened, cap + 1), head)
            elif offset is not None or limit is not None:
                data = await off_loop(lambda stop: _line_window(opened, offset or 0, limit, cap + 1, stop),
                                      seconds=self.config.search_seconds)
            else:
                length = min(size, cap + 1) if size else cap + 1
                if length <= len(sample) or len(sample) < SNIFF_BYTES:
                    data = sample[:length]  # a small file: the sample holds all of it (no second read)
                else:
                    data = await read_start(opened, length)
            truncated = len(data) > cap
            if truncated:
                data = _last_bytes(data, cap) if tail is not None else _first_bytes(data, cap)
                windowed = any(arguments.get(key) is not None for key in ("head", "tail", "offset", "limit"))
                notes.append(
                    f"[Truncated: showing the {'last' if tail is not None else 'first'} {len(data)} bytes of "
                    f"{'the requested lines' if windowed else 'the file'}; the file has {size} bytes. "
                    f"Read further with offset/limit (lines), or head/tail.]"
                )
            body = self._decode(opened, data)  # without the file's byte-order mark (one: a second is text)
        return body, notes, {"truncated": truncated, "totalBytes": size}

    async def read_text_file(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        body, notes, extras = await self._text_of(arguments["path"], arguments)
        return _result(body, notes, **extras)

    async def read_media_file(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        with self.sandbox.open_file(arguments["path"]) as opened:
            size = opened.info.st_size
            if size > self.config.max_media_bytes:
                raise ToolError(
                    f"{opened.location.display} has {size} bytes, more than this server's media limit of "
                    f"{self.config.max_media_bytes} bytes (--max-media-bytes)"
                )
            data = await read_start(opened, size)
            name = opened.location.parts[-1] if opened.location.parts else ""
            mime = content.sniff_mime(data[:SNIFF_BYTES], name)
            if mime.startswith("image/"):
                block = image(data, mime)
            elif mime.startswith("audio/"):
                block = audio(data, mime)
            else:
                block = embedded_resource(blob_resource(location_uri(opened.location), data, mime))
        return ToolResult([block])

    async def read_multiple_files(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        paths = arguments["paths"]
        parts = []
        budget = self.config.max_read_bytes * 4  # the whole answer, however many files
        for index, path in enumerate(paths):
            try:
                body, notes, _ = await self._text_of(path, {})
                if len(body) > budget:
                    body = body[: max(budget, 0)]
                    notes.append("[Truncated: this answer reached its total size limit; read the rest with read_text_file.]")
                budget -= len(body)
                parts.append(f"{path}:\n{body}\n" + "".join(f"{note}\n" for note in notes))
            except (ToolError, FsError) as error:
                parts.append(f"{path}: Error - {error}")
            ctx.report_progress(index + 1, len(paths))
        return _result("\n---\n".join(parts))

    # --- listing ----------------------------------------------------------------------------------

    async def _entries(self, path: str, *, largest_first: bool = False, sizes: bool = True) -> tuple[Location, list[Entry], list[str]]:
        """One listing, cut at --max-entries. Names and kinds of a directory of at most
        IN_LOOP_ENTRIES names and no links are read on the event loop (well under a millisecond,
        less than the thread hop would cost); anything bigger, with a link to resolve (a chain of
        links can cost thousands of opens) or with a stat per entry, in a thread (a directory can
        hold 100,000 names)."""
        cap = self.config.max_entries
        listed = None
        if not sizes:
            try:
                listed = self.sandbox.list_directory_page(path, limit=cap, sizes=False, most=IN_LOOP_ENTRIES)
            except CostlyListing:
                pass  # a big one, or one with links to resolve: read it all again, in a thread
        if listed is None:
            listed = await off_loop(
                lambda stop: self.sandbox.list_directory_page(path, limit=cap, largest_first=largest_first, sizes=sizes))
        location, entries, total = listed
        notes = [f"[Truncated: showing {len(entries)} of {total} entries (--max-entries).]"] if total > cap else []
        return location, entries, notes

    async def list_directory(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        # Names and kinds only (sizes are list_directory_with_sizes' job): no stat per entry.
        _location, entries, notes = await self._entries(arguments["path"], sizes=False)
        names = _labels([entry.name for entry in entries])
        shown = [{"name": name, "type": entry.kind} for name, entry in zip(names, entries)]
        body = "\n".join([f"{_TAG[entry.kind]} {name}" for name, entry in zip(names, entries)])
        return _result(body, notes, entries=shown, truncated=bool(notes))

    async def list_directory_with_sizes(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        _location, entries, notes = await self._entries(arguments["path"], largest_first=arguments.get("sortBy") == "size")
        lines = [
            f"{_TAG[e.kind]} {e.label.ljust(30)} {content.format_size(e.size).rjust(10) if e.kind == 'file' else ''}".rstrip()
            for e in entries
        ]
        files = [e for e in entries if e.kind == "file"]
        directories = sum(1 for e in entries if e.kind == "directory")
        lines += ["", f"Total: {len(files)} files, {directories} directories",
                  f"Combined size: {content.format_size(sum(e.size for e in files))}"]
        return _result("\n".join(lines), notes, entries=[_entry_json(e) for e in entries], truncated=bool(notes))

    async def directory_tree(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        excludes = _excludes(arguments.get("excludePatterns") or [])
        max_depth = arguments.get("maxDepth")
        cap = self.config.max_entries
        location = self.sandbox.locate_directory(arguments["path"])

        def build(stop: Stop) -> tuple[list[dict[str, Any]], int, bool]:
            top: list[dict[str, Any]] = []
            children: dict[tuple[str, ...], list[dict[str, Any]]] = {(): top}
            count = walked = 0
            excluding = bool(excludes.patterns)
            walk = self.sandbox.walk(location, descend=lambda c: (max_depth is None or len(c) < max_depth)
                                     and not excludes.excluded("/".join(c)), sizes=False)
            try:
                for components, entry in walk:
                    # A cancellation is seen at the next entry, the clock read every STOP_EVERY.
                    if stop.cancelled or not walked % STOP_EVERY and stop():
                        if stop.timed_out:
                            return top, count, True
                        raise Stopped()
                    walked += 1
                    if excluding and excludes.excluded("/".join(components)):
                        continue
                    if count >= cap:
                        return top, count, True
                    node: dict[str, Any] = {"name": entry.label, "type": entry.kind}
                    if entry.kind == "directory" and (max_depth is None or len(components) < max_depth):
                        # A directory maxDepth keeps us out of gets no children list: [] would say "empty".
                        node["children"] = children[components] = []
                    children[components[:-1]].append(node)
                    count += 1
                    if count % 500 == 0:
                        ctx.report_progress(count, message=f"{count} entries so far")
            finally:
                walk.close()
            return top, count, False

        tree, count, truncated = await off_loop(build, **self._limits(ctx))
        # Compact JSON: the C encoder (indent= would fall back to the pure-Python one, 3x slower on
        # big trees) and far fewer tokens in a model's context than an indented tree.
        notes = [f"[Truncated: the tree stops after {count} entries (the --max-entries limit of {cap} or the "
                 f"{self._limit_seconds(ctx):g} s time limit); use maxDepth, excludePatterns or a subdirectory.]"] if truncated else []
        return _result(json.dumps(tree, ensure_ascii=False, separators=(",", ":")), notes, truncated=truncated, entries=count)

    async def search_files(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        glob = _glob(arguments["pattern"])
        excludes = _excludes(arguments.get("excludePatterns") or [])
        cap = min(arguments.get("maxResults") or self.config.max_entries, self.config.max_entries)
        location = self.sandbox.locate_directory(arguments["path"])

        def search(stop: Stop) -> tuple[list[str], bool]:
            found: list[str] = []  # relative paths as on disk; shown in full below
            seen = 0
            excluding = bool(excludes.patterns)
            matches, suffixes = glob.matches, glob.suffixes
            walk = self.sandbox.walk(location, descend=lambda c: not excludes.excluded("/".join(c))
                                     and glob.could_match_below("/".join(c)), sizes=False)
            try:
                for components, entry in walk:
                    # A cancellation is seen at the next entry, the clock read every STOP_EVERY.
                    if stop.cancelled or not seen % STOP_EVERY and stop():
                        if stop.timed_out:
                            return found, True
                        raise Stopped()
                    seen += 1
                    if not seen % 1000:  # every entry walked counts, matching or not
                        ctx.report_progress(seen, message=f"{seen} entries searched, {len(found)} matches")
                    if suffixes is not None and not entry.name.endswith(suffixes):
                        continue  # cannot match: most names of a '**/*.py' search end here
                    relative = "/".join(components)
                    if not matches(relative) or excluding and excludes.excluded(relative):
                        continue
                    if len(found) >= cap:
                        return found, True
                    found.append(relative)
            finally:
                walk.close()
            return found, False

        found, truncated = await off_loop(search, **self._limits(ctx))
        prefix = location.display.rstrip("/") + "/"  # as _join shows a path, without a Location per match
        found = [prefix + relative for relative in _labels(found)]  # "/" is shown as itself
        notes = [f"[Truncated: stopped after {len(found)} matches or the time limit; narrow the pattern or the directory.]"] \
            if truncated else []
        return _result("\n".join(found) if found else "No matches found", notes, matches=found, truncated=truncated)

    async def grep_files(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        # Imported on first use, like the globs below: start-up does not pay for it.
        from .patterns import GrepTimeout, compile_grep

        try:
            grep = compile_grep(arguments["pattern"], ignore_case=arguments.get("ignoreCase", False),
                                literal=arguments.get("literal", False))
        except ValueError as error:
            raise ToolError(f"Invalid pattern: {error}") from None
        glob = _glob(arguments["glob"]) if arguments.get("glob") else None
        excludes = _excludes(arguments.get("excludePatterns") or [])
        cap = min(arguments.get("maxResults") or self.config.max_entries, self.config.max_entries)
        context_lines = arguments.get("contextLines", 0)
        location = self.sandbox.locate_directory(arguments["path"])
        max_file = self.config.max_media_bytes

        skipped: list[str] = []  # files the regex engine ran out of memory on

        def search(stop: Stop) -> tuple[list[dict[str, Any]], list[str], int, bool]:
            matches: list[dict[str, Any]] = []
            lines: list[str] = []
            files = 0
            walk = self.sandbox.walk(location, descend=lambda c: not excludes.excluded("/".join(c))
                                     and (glob is None or glob.could_match_below("/".join(c))))
            try:
                for components, entry in walk:
                    if stop():
                        if stop.timed_out:
                            return matches, lines, files, True
                        raise Stopped()
                    relative = "/".join(components)
                    if entry.kind != "file" or entry.label != entry.name or excludes.excluded(relative):
                        continue
                    if glob is not None and not glob.matches(relative) or entry.size > max_file:
                        continue
                    try:
                        with self.sandbox.open_file(_join(location, components)) as opened:
                            data = opened.read_at(0, max_file)
                    except FsError:
                        continue
                    if content.looks_binary(data[:SNIFF_BYTES]):
                        continue
                    files += 1
                    try:
                        if len(matches) >= cap:
                            # Full: only learn whether anything was left out (so exactly cap matches
                            # are not reported as cut), then stop at the first further match.
                            if grep.search_lines(data, context=0, max_matches=1, deadline=stop.deadline).matches:
                                return matches, lines, files, True
                            continue
                        result = grep.search_lines(data, context=context_lines, max_matches=cap - len(matches), deadline=stop.deadline)
                    except GrepTimeout:
                        return matches, lines, files, True
                    except MemoryError:
                        # Nested repetition over a huge line can need more memory than exists;
                        # that file is skipped (and said so), the search goes on.
                        skipped.append(_join(location, components))
                        continue
                    shown = _join(location, components)
                    last_shown = None  # the last line of this file already printed
                    for match in result.matches:
                        first = match.line_number - len(match.before)
                        # "--" between groups, as grep -C prints it: not between touching ones.
                        if lines and context_lines and (last_shown is None or first > last_shown + 1):
                            lines.append("--")
                        lines += [f"{shown}-{first + i}- {line}" for i, line in enumerate(match.before)]
                        lines.append(f"{shown}:{match.line_number}: {match.line}")
                        lines += [f"{shown}-{match.line_number + 1 + i}- {line}" for i, line in enumerate(match.after)]
                        last_shown = match.line_number + len(match.after)
                        matches.append({"path": shown, "line": match.line_number, "text": match.line})
                    if result.truncated:
                        return matches, lines, files, True
                    if files % 100 == 0:
                        ctx.report_progress(files, message=f"{files} files searched, {len(matches)} matching lines")
            finally:
                walk.close()
            return matches, lines, files, False

        matches, lines, files, truncated = await off_loop(search, **self._limits(ctx))
        notes = [f"[Stopped early: {len(matches)} matches shown (maxResults, --max-entries or the {self._limit_seconds(ctx):g} s time "
                 f"limit); narrow the pattern, glob or directory.]"] if truncated else []
        if skipped:
            notes.append(f"[Skipped {len(skipped)} file(s) the pattern needed too much memory for, such as {skipped[0]}; "
                         "simplify nested repetition like (a|aa)+.]")
        body = "\n".join(lines) if lines else "No matches found"
        return _result(body, notes, matches=matches, truncated=truncated, filesSearched=files)

    # --- information ------------------------------------------------------------------------------

    async def get_file_info(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        location, info = self.sandbox.stat(arguments["path"])
        kind = "directory" if stat.S_ISDIR(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else "other"
        created = getattr(info, "st_birthtime", None) or info.st_ctime
        fields = {
            "path": location.display,
            "size": info.st_size,
            "created": _iso(created),
            "modified": _iso(info.st_mtime),
            "accessed": _iso(info.st_atime),
            "isDirectory": kind == "directory",
            "isFile": kind == "file",
            "permissions": format(stat.S_IMODE(info.st_mode) & 0o777, "03o"),
        }
        body = "\n".join(f"{key}: {str(value).lower() if isinstance(value, bool) else value}" for key, value in fields.items())
        return _result(body, size=info.st_size, type=kind)

    async def list_allowed_directories(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        directories = [root.display for root in self.sandbox.roots]
        return _result("Allowed directories:\n" + "\n".join(directories), directories=directories)


# --- helpers ---------------------------------------------------------------------------------------

_TAG = content.LISTING_TAGS
_ENTRIES_SCHEMA = {"type": "array", "items": {"type": "object", "properties": {
    "name": {"type": "string"}, "type": {"type": "string"}, "size": {"type": "integer"}}, "required": ["name", "type"]}}
_MATCHES_SCHEMA = {"type": "array", "items": {"type": "object", "properties": {
    "path": {"type": "string"}, "line": {"type": "integer"}, "text": {"type": "string"}}, "required": ["path", "line", "text"]}}


def _entry_json(entry: Entry) -> dict[str, Any]:
    item: dict[str, Any] = {"name": entry.label, "type": entry.kind}
    if entry.kind == "file":
        item["size"] = entry.size
    return item


def _labels(names: list[str]) -> list[str]:
    """``display_name`` of each name (or relative path). One check of them all, joined by "/"
    (which ``display_name`` leaves alone), answers for the usual case where none needs an escape."""
    joined = "/".join(names)
    if display_name(joined) == joined:
        return names
    return [display_name(name) for name in names]


def _join(location: Location, components: tuple[str, ...]) -> str:
    return Location(location.root, location.parts + components).display


def _iso(timestamp: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat().replace("+00:00", "Z")


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


def _chunks(opened: OpenFile, limit: int) -> Iterator[bytes]:
    """The file's bytes in chunks from the start, at most ``limit`` in all."""
    offset = 0
    while offset < limit:
        chunk = opened.read_at(offset, min(CHUNK_BYTES, limit - offset))
        if not chunk:
            return
        offset += len(chunk)
        yield chunk


def _line_window(opened: OpenFile, offset: int, limit: int | None, cap: int, stop: Stop) -> bytes:
    """Lines ``[offset, offset + limit)`` of the file, streamed: at most ``cap`` bytes are kept."""
    kept = bytearray()
    line = 0
    position = 0
    size = opened.info.st_size
    end_line = None if limit is None else offset + limit
    while position < size:
        if stop():
            raise Stopped()
        chunk = opened.read_at(position, CHUNK_BYTES)
        if not chunk:
            break
        start = 0
        while start < len(chunk):
            newline = chunk.find(b"\n", start)
            stop_at = len(chunk) if newline < 0 else newline + 1
            if line >= offset and (end_line is None or line < end_line):
                kept += chunk[start:stop_at]
                if len(kept) >= cap:
                    return bytes(kept)
            if newline < 0:
                break
            line += 1
            start = stop_at
            if end_line is not None and line >= end_line:
                return bytes(kept)
        position += len(chunk)
    return bytes(kept)
