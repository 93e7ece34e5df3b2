"""The tools of mcp-ref-fs: one small function per tool.

Names and arguments are those of the official Node server (``@modelcontextprotocol/server-
filesystem``), so prompts and habits carry over; optional arguments were added where users hit
walls (windows and caps on big outputs, a depth for trees, content search, deletion). Each tool's
definition (``@tool``, :mod:`.definitions`: name, description, schemas) is written just above its
handler here, in :mod:`.walks` (listings, trees, searches) or in :mod:`.writing`. Each tool:
validate what the schema cannot -> one sandbox operation (:mod:`.root`; no path string is opened
here) -> format a readable text block plus ``structuredContent``. A refused or failed operation
is a tool error (``isError: true``) whose text says what to do next.
"""

from __future__ import annotations

import stat
from typing import TYPE_CHECKING, Any, Callable, Iterator

from mcp_ref import Tool, ToolError, ToolResult, audio, blob_resource, embedded_resource, image, text

from . import content
# The answer helpers under the names this module has always used for them.
from .answers import answer as _result, first_bytes as _first_bytes, last_bytes as _last_bytes
from .answers import HOSTS_PARSING_TEXT, LEAST_DATA_BYTES, base64_answer_bytes, count, data_budget, for_client, line_index, media_note, next_call
from .answers import binary_file, not_utf8, reserve_for, surely_fits, text_answer_bytes
from .answers import text_answer as _text_answer
from .definitions import PATH, READ_ONLY, Definition, definitions, output, schema, tool
from .offload import IN_LOOP_READ_BYTES, Stop, Stopped, off_loop, read_start
from .resources import location_uri
from .rewrite import FileLocks
from .root import FsError, OpenFile, sandboxed
from .walks import WalkTools
from .writing import WritingTools

if TYPE_CHECKING:
    from mcp_ref import RequestContext, Server

    from .config import Config
    from .root import Sandbox

SNIFF_BYTES = 8192
CHUNK_BYTES = 256 * 1024
HEAD_TAIL = {
    "head": {"type": "integer", "minimum": 0, "description": "Return only the first N lines"},
    "tail": {"type": "integer", "minimum": 0, "description": "Return only the last N lines"},
    "offset": {"type": "integer", "minimum": 0, "description": "First line to return (0-based); with limit, reads a window"},
    "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to return from offset"},
}
READ_DESCRIPTION = (
    "Read a text file (UTF-8) and return its contents. Use head or tail for the first or last N lines, or "
    "offset/limit for a window of lines. A file larger than one answer holds comes in pages: the answer "
    "ends with a note naming the lines shown, the file's line count and the exact arguments of the next call. "
    "Binary files are refused: use read_media_file for those. Only works within allowed directories."
)


class FsTools(WalkTools, WritingTools):
    """Registers every tool on a ``Server``; holds the sandbox and limits they share. The listing
    tools (listings, trees, searches, grep) are in :mod:`.walks`, the tools that change the disk in
    :mod:`.writing`."""

    def __init__(self, server: Server, sandbox: Sandbox, config: Config) -> None:
        self.server = server
        self.sandbox = sandbox
        self.config = config
        self.locks = FileLocks()  # one rewrite of a file at a time (writing.py)
        for definition, handler in definitions(type(self)):  # each written above its handler (@tool)
            self._register(definition, getattr(self, handler))

    # --- registration ---------------------------------------------------------------------------

    def _register(self, definition: Definition, handler: Callable[..., Any]) -> None:
        """Register one tool: its handler, wrapped so that a sandbox refusal is a tool error, a
        read-only server refuses the tools that change the disk, and the answer suits the host."""
        name, description = definition.name, definition.description
        refused = definition.mutates and self.config.read_only
        if refused:
            description = "[Disabled: this server runs read-only; calls are refused.] " + description

        async def call(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
            if refused:
                raise ToolError(f"{name} is disabled: the server was started with --read-only, so nothing on disk may change")
            try:
                result = await handler(ctx, arguments)
            except FsError as error:
                raise ToolError(str(error)) from None
            except Stopped:
                raise ToolError(f"{name} was stopped before it finished") from None
            # A host that reads a first text block as JSON (HOSTS_PARSING_TEXT) gets the answer it can take.
            info = getattr(ctx, "client_info", None)
            host = info.get("name") if isinstance(info, dict) else None
            if isinstance(host, str) and host in HOSTS_PARSING_TEXT and isinstance(result, (ToolResult, str)):
                return for_client(result, info)
            return result

        # A long-running tool may answer a client that declared the tasks extension with a task
        # handle once it has run 0.1 s; its progress then shows as the task's status message.
        # add_tool, not the server.tool decorator: ``call`` is a classic (ctx, arguments) handler
        # with its schemas given, so the decorator's signature inspection (and the import of
        # mcp_ref.kit.typed) would only cost start-up time.
        self.server.add_tool(Tool(name, call, description, definition.input_schema, definition.output_schema,
                                  definition.title, definition.annotations, task="optional" if definition.long_running else None))

    def _limits(self, ctx: RequestContext) -> dict[str, Any]:
        """``off_loop`` arguments of a search: --search-seconds, or --task-search-seconds once it is a
        task; and marked long, so searches never take the last worker thread (offload.py)."""
        return {"seconds": self.config.search_seconds, "task_seconds": self.config.task_search_seconds,
                "in_task": lambda: ctx.task_id is not None, "long": True}

    def _limit_seconds(self, ctx: RequestContext) -> float:
        return self.config.task_search_seconds if ctx.task_id is not None else self.config.search_seconds

    # --- reading ----------------------------------------------------------------------------------

    async def _lines_of(self, opened: OpenFile) -> Any:
        """The file's line index (count, checkpoints): on the loop when small, else in a thread
        within --search-seconds (incomplete past it)."""
        def build(stop: Stop | Any = lambda: False) -> Any:
            return line_index(opened.info, opened.read_at, stop)

        if opened.info.st_size <= IN_LOOP_READ_BYTES:
            return build()
        return await off_loop(build, seconds=self.config.search_seconds)

    async def _text_of(self, ctx: RequestContext | None, arguments: dict[str, Any], room: int | None = None,
                       tool: str = "read_text_file") -> tuple[str, list[str]]:
        """A file's text (or the asked-for part of it) in at most ``room`` bytes (default: what an
        answer to ``ctx``'s client may hold, ``answers.data_budget``), and the cue notes: what was
        shown, of how many lines, and the next call (``tool`` with ``arguments`` changed) when
        there is more. With ``ctx``, a large answer's bytes are reserved first (``reserve_for``).
        The steps: confine and open, read, decide that it is text, cut it to fit; windows of lines
        are :meth:`_window`'s."""
        head, tail = arguments.get("head"), arguments.get("tail")
        offset, limit = arguments.get("offset"), arguments.get("limit")
        if head is not None and tail is not None:
            raise ToolError("Give head or tail, not both")
        if (head is not None or tail is not None) and (offset is not None or limit is not None):
            raise ToolError("Give head/tail or offset/limit, not both")
        windowed = head is not None or tail is not None or offset is not None or limit is not None
        with await sandboxed(self.sandbox.open_file, arguments["path"]) as opened:  # confine, open
            size = opened.info.st_size
            if room is None:  # a whole file that surely fits needs no budget reckoned: its room is its size
                fits = not windowed and 0 < size and (size <= LEAST_DATA_BYTES or surely_fits(size, ctx, self.config.max_answer_bytes, arguments))
                room = size if fits else data_budget(ctx, self.config.max_answer_bytes, arguments)
            cap = min(self.config.max_read_bytes, room)
            sample = opened.read_at(0, SNIFF_BYTES)  # read: all of a small file
            if ctx is not None and size > len(sample):  # a larger one's answer: reserved first when large
                await reserve_for(ctx, text_answer_bytes(min(size, cap + 1)))
            index = None
            if windowed:
                if content.looks_binary(sample):  # before reading any further
                    raise binary_file(opened.location, sample)
                data, index = await self._window(opened, arguments, cap)
            else:
                length = min(size, cap + 1) if size else cap + 1
                if length <= len(sample) or len(sample) < SNIFF_BYTES:
                    data = sample[:length]  # a small file: the sample holds all of it (no second read)
                else:
                    data = await read_start(opened, length)
            truncated = len(data) > cap
            if truncated:
                data = _last_bytes(data, cap) if tail is not None else _first_bytes(data, cap)
            try:  # decide text: binary files are refused; without the file's byte-order mark (one: a second is text)
                body = content.file_text(data, None if windowed else sample)
            except content.Binary:
                raise binary_file(opened.location, sample) from None
            except content.NotText:
                raise not_utf8(opened.location) from None
            if not windowed and not truncated:
                return body, []  # the whole file: nothing to say
            index = index or await self._lines_of(opened)
        return body, [_read_cue(tool, arguments, data, index, size, truncated)]

    async def _window(self, opened: OpenFile, arguments: dict[str, Any], cap: int) -> tuple[bytes, Any]:
        """The lines ``head``, ``tail`` or ``offset``/``limit`` ask for, at most ``cap + 1`` bytes of
        them, and the file's line index when finding them built it (else None)."""
        head, tail = arguments.get("head"), arguments.get("tail")
        offset, limit = arguments.get("offset"), arguments.get("limit")
        size = opened.info.st_size
        if tail is not None:
            # Only the last cap + 1 bytes can be shown: read no further back than that, so a
            # huge tail of a huge file costs one bounded read (more lines than fit: truncated).
            window = min(size, cap + 1)
            base = size - window

            def read_tail(_stop: Stop | None = None) -> bytes:
                return content.tail_lines(lambda at, length: opened.read_at(base + at, length), window, tail)

            return (await off_loop(read_tail) if window > IN_LOOP_READ_BYTES else read_tail()), None
        if head is not None:
            return content.head_lines(_chunks(opened, cap + 1), head)[0], None
        index = await self._lines_of(opened)  # where line ``offset`` starts, within a MiB
        at, before = index.start_of(offset or 0) if index.complete else (0, 0)
        data = await off_loop(lambda stop: _line_window(opened, offset or 0, limit, cap + 1, stop, at, before),
                              seconds=self.config.search_seconds)
        return data, index

    @tool(
        "read_text_file",
        "Read Text File",
        READ_DESCRIPTION,
        schema({"path": PATH, **HEAD_TAIL}, ["path"]),
        READ_ONLY,
    )
    @tool(
        "read_file",
        "Read File (deprecated)",
        "Deprecated alias of read_text_file. " + READ_DESCRIPTION,
        schema({"path": PATH, **HEAD_TAIL}, ["path"]),
        READ_ONLY,
    )
    async def read_text_file(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult | str:
        body, notes = await self._text_of(ctx, arguments)
        return _text_answer(body, notes) if notes else body  # the whole file: the library makes it one text block

    @tool(
        "read_media_file",
        "Read Media File",
        "Read a binary file (image, audio or other) and return it base64-encoded with its MIME type, detected from "
        "the content and the extension: images as image content, audio as audio content, anything else as an "
        "embedded resource. Only works within allowed directories.",
        schema({"path": PATH}, ["path"]),
        READ_ONLY,
    )
    async def read_media_file(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        with await sandboxed(self.sandbox.open_file, arguments["path"]) as opened:
            size = opened.info.st_size
            if size > self.config.max_media_bytes:
                raise ToolError(
                    f"{opened.location.display} has {size} bytes, more than this server's media limit of "
                    f"{self.config.max_media_bytes} bytes (--max-media-bytes)"
                )
            await reserve_for(ctx, base64_answer_bytes(size))
            data = await read_start(opened, size)
            name = opened.location.parts[-1] if opened.location.parts else ""
            mime = content.sniff_mime(data[:SNIFF_BYTES], name)
            if mime.startswith("image/"):
                block, kind = image(data, mime), "an image"
            elif mime.startswith("audio/"):
                block, kind = audio(data, mime), "audio"
            else:
                block, kind = embedded_resource(blob_resource(location_uri(opened.location), data, mime)), "an embedded resource"
            about = media_note(opened.location.display, mime, size, kind, getattr(ctx, "client_info", None))
        # The bytes travel once, in their block; the text says what they are, for a host that
        # drops the block (base64 is never repeated in text or structuredContent).
        return ToolResult([block, text(about)])

    @tool(
        "read_multiple_files",
        "Read Multiple Files",
        "Read several text files at once; each file's contents follow its path, and a failure on one file does not "
        "stop the others. What does not fit in one answer is named, with the read_text_file call that gets it. "
        "Only works within allowed directories.",
        schema({"paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 100,
                           "description": "Paths of the files to read"}}, ["paths"]),
        READ_ONLY,
    )
    async def read_multiple_files(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        paths = arguments["paths"]
        parts = []
        # One budget for the whole answer, however many files: each file gets what is left, and
        # one that no longer fits is named with the call that reads it. The files' text together
        # stays within 4 x --max-read-bytes too.
        room = data_budget(ctx, self.config.max_answer_bytes, {"path": max(paths, key=len)})
        text_room = self.config.max_read_bytes * 4
        # The answer's bytes are reserved once, from the files' sizes (one reservation per file
        # could deadlock: a request holding some waiting behind others that wait for its own).
        await reserve_for(ctx, text_answer_bytes(min(await self._text_sizes(paths), room, text_room)))
        for index, path in enumerate(paths):
            shown = self._shown(path)
            overhead = len(shown.encode("utf-8")) + 8  # "path:\n", a newline and the separator
            if min(room - overhead, text_room) < 1:
                part = f"{shown}: [Not read: this answer is full. Read it with {next_call('read_text_file', {'path': path})}]"
            else:
                try:
                    body, notes = await self._text_of(None, {"path": path}, min(room - overhead, text_room))
                    text_room -= len(body.encode("utf-8"))
                    part = f"{shown}:\n{body}\n" + "".join(f"{note}\n" for note in notes)
                except (ToolError, FsError) as error:
                    part = f"{shown}: Error - {error}"
            room -= len(part.encode("utf-8")) + 5
            parts.append(part)
            ctx.report_progress(index + 1, len(paths))
        return _text_answer("\n---\n".join(parts))

    def _shown(self, path: str) -> str:
        """A client's path as answers spell it: under its root's given spelling (as given when it
        names no place inside a root, which the error then says)."""
        try:
            return self.sandbox.locate(path).display
        except FsError:
            return path

    async def _text_sizes(self, paths: list[str]) -> int:
        """How much text reading ``paths`` can give (each file up to --max-read-bytes; unreadable: 0)."""
        cap, total = self.config.max_read_bytes, 0
        for path in paths:
            try:
                _location, info = await sandboxed(self.sandbox.stat, path)
            except FsError:
                continue
            total += min(info.st_size, cap + 1) if stat.S_ISREG(info.st_mode) else 0
        return total

    # --- information ------------------------------------------------------------------------------

    @tool(
        "get_file_info",
        "Get File Info",
        "Metadata of a file or directory: size, creation, modification and access times, type and permissions, "
        "without reading its contents. Only works within allowed directories.",
        schema({"path": PATH}, ["path"]),
        READ_ONLY,
        output(size={"type": "integer"}, type={"type": "string"}),
    )
    async def get_file_info(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        location, info = await sandboxed(self.sandbox.stat, arguments["path"])
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

    @tool(
        "list_allowed_directories",
        "List Allowed Directories",
        "The directories this server may access; everything below them is accessible too. Call it first to learn "
        "which paths are valid.",
        schema({}, []),
        READ_ONLY,
        output(directories={"type": "array", "items": {"type": "string"}},
                resolved={"type": "array", "items": {"type": "string"}}),
    )
    async def list_allowed_directories(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        roots = self.sandbox.roots
        directories = [root.display for root in roots]
        # A root given through a link also shows where it leads; answers spell paths the first way.
        lines = [root.display if root.real == root.display else f"{root.display} (a link to {root.real}; paths under "
                 f"either work, answers use {root.display})" for root in roots]
        return _result("Allowed directories:\n" + "\n".join(lines), directories=directories,
                       resolved=[root.real for root in roots])


# --- helpers ---------------------------------------------------------------------------------------

def _iso(timestamp: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat().replace("+00:00", "Z")


def _chunks(opened: OpenFile, limit: int) -> Iterator[bytes]:
    """The file's bytes in chunks from the start, at most ``limit`` in all."""
    offset = 0
    while offset < limit:
        chunk = opened.read_at(offset, min(CHUNK_BYTES, limit - offset))
        if not chunk:
            return
        offset += len(chunk)
        yield chunk


def _line_window(opened: OpenFile, offset: int, limit: int | None, cap: int, stop: Stop,
                 position: int = 0, line: int = 0) -> bytes:
    """Lines ``[offset, offset + limit)`` of the file, streamed: at most ``cap`` bytes are kept.
    ``position`` and ``line``: where to start reading, and how many lines ended before it (a
    checkpoint of the file's line index; ``position`` may lie inside line number ``line``)."""
    kept = bytearray()
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



def _read_cue(tool: str, arguments: dict[str, Any], data: bytes, index: Any, size: int, truncated: bool) -> str:
    """The note of a read that is a window or was cut (``data``: the bytes shown; ``index``: the
    file's line index): the lines shown (1-based), of how many, and the exact next call when lines
    are left."""
    total = index.lines if index.complete else None
    shown = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    tail, offset = arguments.get("tail"), arguments.get("offset")
    first = (total - shown if total is not None else None) if tail is not None else offset or 0
    partial = truncated and tail is None and b"\n" not in data  # the start of one line longer than an answer holds
    of = f" of {count(total)}" if total is not None else f" of a file of {count(size)} bytes whose lines were not all counted in time"
    if not shown:
        where = f"No lines shown: the window lies past the end of the file ({count(total) if total is not None else '?'} lines)"
    elif first is None:
        where = f"The last {count(shown)} lines shown{of}"
    else:
        where = f"Lines {count(first + 1)}-{count(first + shown)}{of}"
    cut = f" (cut to fit this answer; the file has {count(size)} bytes)" if truncated and total is not None else \
        " (cut to fit this answer)" if truncated else ""
    if partial and first is not None:
        cut += (f"; line {count(first + shown)} is longer than one answer holds, so only its start is shown "
                "(grep_files finds text anywhere in it)")
    if arguments.get("tail") is not None:
        wanted = None if total is None else max(total - arguments["tail"], 0)
        if truncated and first is not None and wanted is not None and wanted < first:
            return f"[{where}{cut}. Earlier lines: {next_call(tool, arguments, tail=None, offset=wanted, limit=first - wanted)}]"
        return f"[{where}{cut}.]"
    first = first or 0
    end = first + shown
    asked = arguments.get("limit") if arguments.get("limit") is not None else arguments.get("head")
    if not shown or total is not None and end >= total or not truncated and (asked is None or shown < asked):
        return f"[{where}{cut}: the end of the file.]"
    if not truncated:  # the asked-for window came whole: offer the next one of the same size
        return f"[{where}. Next lines: {next_call(tool, arguments, head=None, offset=end, limit=asked)}]"
    # A page as big as the one that fitted (not the rest of the asked-for window: that could
    # shrink to a line per call).
    return f"[{where}{cut}. Next page: {next_call(tool, arguments, head=None, offset=end, limit=shown)}]"
