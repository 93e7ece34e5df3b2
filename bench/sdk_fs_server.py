"""The Python peer of ``bench/fs_bench.py``: a filesystem server on the official SDK (PyPI ``mcp``).

Written the way a competent author would write one with the SDK's high-level ``MCPServer`` API:
async tool functions with typed arguments (the SDK derives the input schemas and validates them),
plain ``str`` returns (the SDK adds ``structuredContent`` ``{"result": ...}`` by default), blocking
walks, searches and large reads moved off the event loop with ``anyio.to_thread``, and the
usual confinement: every path is resolved with ``os.path.realpath`` and must lie inside an
allowed directory by ``os.path.commonpath``, so a symbolic link leading out is refused; walks
never follow links. Tool names, arguments and text formats follow the official Node server
(``@modelcontextprotocol/server-filesystem``); ``grep_files`` follows mcp-ref-fs's format.

Not part of mcp_ref and never imported by it: ``fs_bench.py --peers`` runs it from its own venv
(``bench/.venvs/sdk``, ``pip install mcp==2.3.0``).

    python sdk_fs_server.py ROOT [ROOT ...]
"""

from __future__ import annotations

import base64
import difflib
import json
import mimetypes
import os
import re
import sys
import tempfile

import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import BlobResourceContents, EmbeddedResource, ToolAnnotations

ROOTS = [os.path.realpath(root) for root in sys.argv[1:]] or [os.getcwd()]
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
IN_LOOP_BYTES = 256 * 1024  # smaller files are read on the event loop; larger ones in a worker thread

server = MCPServer("sdk-fs-bench", version="1.0.0", log_level="WARNING")


# --- confinement ---------------------------------------------------------------------------------


def _inside(path: str) -> bool:
    return any(os.path.commonpath([path, root]) == root for root in ROOTS)


def allowed(path: str) -> str:
    """The real path of ``path`` (relative paths resolve against the first root), if it stays inside a root."""
    absolute = os.path.abspath(os.path.join(ROOTS[0], os.path.expanduser(path)))
    if not _inside(absolute):
        raise ToolError(f"Access denied - path outside allowed directories: {absolute}")
    real = os.path.realpath(absolute)
    if not _inside(real):
        raise ToolError(f"Access denied - symlink target outside allowed directories: {real}")
    return real


# --- glob matching (minimatch-like: * and ? stay within a segment, **/ spans directories) ---------


def glob_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def excluder(patterns: list[str]):
    """True for relative paths an exclude pattern names (a bare name matches at any depth)."""
    compiled = [glob_regex(p if "*" in p else f"**/{p}") for p in patterns]
    return lambda relative: any(c.match(relative) for c in compiled)


def walk(top: str, skip_dir):
    """(relative path, DirEntry) for everything below ``top``, depth first, sorted, links not followed."""
    stack = [("", top)]
    while stack:
        prefix, directory = stack.pop()
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        below = []
        for entry in entries:
            relative = prefix + entry.name
            yield relative, entry
            if entry.is_dir(follow_symlinks=False) and not skip_dir(relative):
                below.append((relative + "/", entry.path))
        stack.extend(reversed(below))


# --- tools -----------------------------------------------------------------------------------------


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


@server.tool(description="Read a text file (UTF-8); head or tail return only the first or last N lines.",
             annotations=READ_ONLY)
async def read_text_file(path: str, head: int | None = None, tail: int | None = None) -> str:
    real = allowed(path)
    if os.path.getsize(real) <= IN_LOOP_BYTES:
        text = _read_text(real)
    else:
        text = await anyio.to_thread.run_sync(_read_text, real)
    if head is not None:
        text = "".join(text.splitlines(keepends=True)[:head])
    elif tail is not None:
        text = "".join(text.splitlines(keepends=True)[-tail:]) if tail else ""
    return text


@server.tool(description="Read a binary file and return it base64-encoded with its MIME type.", annotations=READ_ONLY)
async def read_media_file(path: str) -> EmbeddedResource:
    real = allowed(path)

    def load() -> str:
        with open(real, "rb") as handle:
            return base64.b64encode(handle.read()).decode("ascii")

    data = await anyio.to_thread.run_sync(load)
    mime = mimetypes.guess_type(real)[0] or "application/octet-stream"
    return EmbeddedResource(type="resource", resource=BlobResourceContents(uri="file://" + real, mime_type=mime, blob=data))


@server.tool(description="List a directory: one '[FILE] name' or '[DIR] name' line per entry.", annotations=READ_ONLY)
async def list_directory(path: str) -> str:
    real = allowed(path)
    with os.scandir(real) as scan:
        entries = sorted(scan, key=lambda e: e.name)
    return "\n".join(f"{'[DIR]' if e.is_dir(follow_symlinks=False) else '[FILE]'} {e.name}" for e in entries)


@server.tool(description="A recursive tree of a directory as JSON (name, type, children).", annotations=READ_ONLY)
async def directory_tree(path: str, excludePatterns: list[str] | None = None) -> str:
    real = allowed(path)
    excluded = excluder(excludePatterns or [])

    def build() -> str:
        top: list[dict] = []
        children = {"": top}
        for relative, entry in walk(real, excluded):
            if excluded(relative):
                continue
            node: dict = {"name": entry.name, "type": "directory" if entry.is_dir(follow_symlinks=False) else "file"}
            if node["type"] == "directory":
                node["children"] = children[relative + "/"] = []
            children[relative[: len(relative) - len(entry.name)]].append(node)
        return json.dumps(top, indent=2)

    return await anyio.to_thread.run_sync(build)


@server.tool(description="Find files and directories whose path relative to `path` matches a glob ('**/*.py').",
             annotations=READ_ONLY)
async def search_files(path: str, pattern: str, excludePatterns: list[str] | None = None) -> str:
    real = allowed(path)
    wanted = glob_regex(pattern)
    excluded = excluder(excludePatterns or [])

    def search() -> list[str]:
        return [entry.path for relative, entry in walk(real, excluded) if not excluded(relative) and wanted.match(relative)]

    found = await anyio.to_thread.run_sync(search)
    return "\n".join(found) if found else "No matches found"


@server.tool(description="Search file contents for a regular expression; 'path:line: text' per matching line.",
             annotations=READ_ONLY)
async def grep_files(path: str, pattern: str, glob: str | None = None, maxResults: int = 1000,
                     ignoreCase: bool = False, literal: bool = False) -> str:
    real = allowed(path)
    try:
        regex = re.compile(re.escape(pattern) if literal else pattern, re.IGNORECASE if ignoreCase else 0)
    except re.error as error:
        raise ToolError(f"Invalid pattern: {error}") from None
    wanted = glob_regex(glob) if glob else None

    def search() -> list[str]:
        lines: list[str] = []
        for relative, entry in walk(real, lambda _: False):
            if not entry.is_file(follow_symlinks=False) or (wanted and not wanted.match(relative)):
                continue
            try:
                with open(entry.path, encoding="utf-8") as handle:
                    text = handle.read()
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable: skipped
            for number, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    lines.append(f"{entry.path}:{number}: {line}")
                    if len(lines) >= maxResults:
                        return lines
        return lines

    found = await anyio.to_thread.run_sync(search)
    return "\n".join(found) if found else "No matches found"


@server.tool(description="Replace text in a file (each oldText must match exactly once) and return a unified diff.",
             annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
async def edit_file(path: str, edits: list[dict[str, str]], dryRun: bool = False) -> str:
    real = allowed(path)

    def apply() -> str:
        with open(real, encoding="utf-8", newline="") as handle:
            original = handle.read()
        changed = original
        for edit in edits:
            count = changed.count(edit["oldText"])
            if count != 1:
                raise ToolError(f"oldText must match exactly once, found {count} matches: {edit['oldText'][:80]!r}")
            changed = changed.replace(edit["oldText"], edit["newText"], 1)
        diff = "".join(difflib.unified_diff(original.splitlines(keepends=True), changed.splitlines(keepends=True),
                                            fromfile=real, tofile=real))
        if not dryRun:
            fd, temporary = tempfile.mkstemp(dir=os.path.dirname(real), prefix=".edit-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                    handle.write(changed)
                os.replace(temporary, real)
            except BaseException:
                os.unlink(temporary)
                raise
        return f"```diff\n{diff}```\n"

    return await anyio.to_thread.run_sync(apply)


# --- the file resource -----------------------------------------------------------------------------


@server.resource("file:///{+path}", name="file", mime_type="application/octet-stream",
                 description="Any file inside the allowed directories, by absolute path")
async def file_resource(path: str) -> str | bytes:
    try:
        real = allowed("/" + path)
    except ToolError as error:
        raise ResourceNotFoundError(str(error)) from None

    def load() -> bytes:
        with open(real, "rb") as handle:
            return handle.read()

    data = await anyio.to_thread.run_sync(load)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


if __name__ == "__main__":
    server.run("stdio")
