"""Files as MCP resources: ``file://`` URIs, a paged listing, and reading.

Spec: server/resources (2026-07-28); URIs follow RFC 8089 (the ``file`` scheme).

* A file's URI is ``file://`` + its absolute path (under the root's spelling given on the command
  line), each component percent-encoded as UTF-8: ``/r/my notes.md`` is ``file:///r/my%20notes.md``.
* ``resources/list`` pages through every regular file under every root, depth first and sorted by
  name. Each page resumes the walk just after the last file of the previous page (the position is
  that file's root index and components), so a page costs the entries it shows plus one
  directory listing per level, and walking every page costs O(total). Files with a name on their
  path that is not UTF-8 are left out (they have no URI a client could send back). A file is
  listed once even when roots nest: under the root its URI belongs to (the innermost one).
* ``resources/templates/list`` offers ``file:///{+path}``, so a client can address any file.
* ``resources/read``: UTF-8 text becomes ``text``; anything else a base64 ``blob`` with its sniffed
  MIME type; a directory becomes its listing (``inode/directory``, one ``[FILE] name`` /
  ``[DIR] name`` line per entry, then a ``[Truncated: ...]`` line if there are more than
  ``--max-entries``). A URI that does not parse, lies outside the roots, does not
  exist or names a FIFO, socket or device is -32602 with ``data.uri`` (the library's
  ``ResourceNotFound``), and the answer is the same whether or not something exists outside.
  The caching hint is ``private`` (these are the user's files) with a short ``ttlMs``.
* URIs are parsed strictly: scheme ``file``, empty host or ``localhost``, an absolute path, no
  query or fragment; each component is percent-decoded on its own, and a component that decodes
  to ``/``, NUL, ``.`` or ``..`` (``%2F``, ``%00``, ``%2e%2e``) is refused rather than normalized.
"""

from __future__ import annotations

import stat
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from mcp_ref import CacheHint, InvalidParams, Resource, ResourceNotFound, blob_resource

from . import content
from .offload import off_loop, read_start
from .root import FsError, Location, Root

if TYPE_CHECKING:
    from mcp_ref import RequestContext, Server

    from .config import Config
    from .root import Sandbox

READ_HINT = CacheHint(2000, "private")
DIRECTORY_MIME = "inode/directory"
SNIFF_BYTES = 8192


def location_uri(location: Location) -> str:
    """The ``file://`` URI of a location (RFC 8089, percent-encoded UTF-8)."""
    base = location.root.display
    path = base.rstrip("/") + "/" + "/".join(location.parts) if location.parts else base
    return "file://" + quote(path, safe="/")


def uri_path(uri: str) -> str:
    """The absolute path a ``file://`` URI names. Raises ``ValueError`` for anything else."""
    if not uri.startswith("file:"):
        raise ValueError("not a file: URI")
    rest = uri[len("file:"):]
    if "?" in rest or "#" in rest:
        raise ValueError("file URIs take no query or fragment")
    if rest.startswith("//"):
        authority, _, path = rest[2:].partition("/")
        if authority not in ("", "localhost"):
            raise ValueError("file URIs on another host are not served")
        path = "/" + path
    elif rest.startswith("/"):
        path = rest  # the RFC 8089 minimal form, file:/path
    else:
        raise ValueError("file URIs need an absolute path")
    parts = []
    for segment in path.split("/")[1:]:
        decoded = unquote(segment, errors="strict")
        if "/" in decoded or "\0" in decoded or decoded in (".", ".."):
            raise ValueError("a path segment decodes to '/', NUL, '.' or '..'")
        parts.append(decoded)
    return "/" + "/".join(parts)


class FsResources:
    """Registers the lister, the template and the reader on a ``Server``."""

    def __init__(self, server: Server, sandbox: Sandbox, config: Config) -> None:
        self.sandbox = sandbox
        self.config = config
        server.resource_lister(paged=True)(self.list_page)
        server.resource_template(
            "file:///{+path}",
            name="file",
            title="A file in the allowed directories",
            description="Any file (or directory listing) inside the allowed directories, by absolute path.",
            cache=READ_HINT,
        )(self.read)

    # --- listing ------------------------------------------------------------------------------------

    def list_page(self, ctx: RequestContext, position: Any, limit: int) -> tuple[list[Resource | dict[str, Any]], Any]:
        """One page of files, resuming after ``position`` = ``[root index, component, ...]``."""
        root_index, after = 0, None
        if position is not None:
            if not (isinstance(position, list) and position and isinstance(position[0], int)
                    and 0 <= position[0] < len(self.sandbox.roots) and all(isinstance(p, str) for p in position[1:])):
                raise ValueError("malformed position")  # cannot happen: cursors are sealed by the library
            root_index, after = position[0], tuple(position[1:])
        items: list[Resource | dict[str, Any]] = []
        while root_index < len(self.sandbox.roots):
            start = self.sandbox.root_location(root_index)
            if not self._owns(start.root, ()):  # the same directory as an earlier root: listed there
                root_index, after = root_index + 1, None
                continue
            walk = self.sandbox.walk(start, after=after, descend=lambda components, root=start.root: self._owns(root, components))
            try:
                for components, entry in walk:
                    if entry.kind != "file" or entry.label != entry.name:
                        continue
                    location = Location(start.root, components)
                    name = entry.name
                    items.append({
                        "uri": location_uri(location),
                        "name": location.relative,
                        "title": name,
                        "mimeType": content.sniff_mime(b"", name) if "." in name else "application/octet-stream",
                        "size": entry.size,
                    })
                    if len(items) >= limit:
                        return items, [root_index, *components]
            finally:
                walk.close()
            root_index, after = root_index + 1, None
        return items, None

    def _owns(self, root: Root, components: tuple[str, ...]) -> bool:
        """Is this directory listed under ``root``? Not when its path is another root's (nested
        roots: a file is listed once, under the root that ``Sandbox.locate`` gives its URI), nor
        when a name on the way is not UTF-8 (no file below it has a URI a client could send)."""
        path = root.display.rstrip("/") + "/" + "/".join(components) if components else root.display
        try:
            return self.sandbox.locate(path).root is root
        except FsError:  # InvalidPath: a name that is not UTF-8
            return False

    # --- reading --------------------------------------------------------------------------------------

    def _locate(self, uri: str) -> str:
        try:
            return uri_path(uri)
        except ValueError:
            raise ResourceNotFound(uri) from None

    async def read(self, ctx: RequestContext, uri: str, variables: dict[str, Any]) -> list[dict[str, Any]]:
        path = self._locate(uri)
        try:
            location, info = self.sandbox.stat(path)
            if stat.S_ISDIR(info.st_mode):
                limit = self.config.max_entries
                _location, entries, total = await off_loop(
                    lambda stop: self.sandbox.list_directory_page(path, limit=limit, sizes=False))
                listing = "".join(f"{content.LISTING_TAGS[e.kind]} {e.label}\n" for e in entries)
                if total > limit:  # said, as the listing tools say it, never cut silently
                    listing += f"[Truncated: showing {len(entries)} of {total} entries (--max-entries).]\n"
                return [{"uri": uri, "mimeType": DIRECTORY_MIME, "text": listing}]
            with self.sandbox.open_file(path) as opened:
                size = opened.info.st_size
                if size > self.config.max_media_bytes:
                    raise InvalidParams(
                        f"Resource too large: {size} bytes, over this server's limit of {self.config.max_media_bytes} "
                        "(--max-media-bytes)", {"uri": uri})
                data = await read_start(opened, size)
        except FsError:
            raise ResourceNotFound(uri) from None
        name = location.parts[-1] if location.parts else ""
        mime = content.sniff_mime(data[:SNIFF_BYTES], name)
        if not content.looks_binary(data[:SNIFF_BYTES]):
            try:
                return [{"uri": uri, "mimeType": mime, "text": content.decode_text(content.split_bom(data)[1])}]
            except content.NotText:
                pass
        return [blob_resource(uri, data, mime)]
