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

Windows paths (RFC 8089 appendix E; :func:`path_uri` and :func:`uri_path` with ``windows=True``,
chosen by the sandbox's roots, so both flavours run as table tests on any system):

* ``C:\\Users\\me\\notes x.md`` is ``file:///C:/Users/me/notes%20x.md``: the drive letter
  (upper-cased, both ways: one URI per file, as subscriptions need) and its colon stand at the
  start of the path, the components follow with ``/``, each percent-encoded UTF-8. Parsing also
  takes a lower-case drive letter, an encoded colon (``file:///c%3A/...``), ``file://localhost/C:/...``
  and ``file:/C:/...``; ``file:///C:`` is the drive's root ``C:\\``, never the drive-relative ``C:``.
* A UNC path ``\\\\server\\share\\x`` is ``file://server/share/x`` (the host is the server). Such a URI
  is parsed into that UNC path and reaches a file only when a root lies on that share (the
  sandbox places it like any other path); under POSIX rules any host but ``localhost`` is refused.
  The server name must be a plain ASCII host name (letters, digits, ``-``, ``_``, ``.``; not
  starting with ``.``), without percent-encoding, user or port; ``localhost`` followed by a drive
  is the local drive, followed by a share name the UNC share ``\\\\localhost\\share``. The four-slash
  form ``file:////server/share`` is refused. The template ``file:///{+path}`` addresses drive
  paths; when a root is a UNC share, ``file://{host}/{+path}`` is offered as well.
* A segment that decodes to something holding ``\\`` (or ``/``, NUL), or to ``.`` or ``..``, is refused, so no URI spells a
  ``\\\\?\\``, ``\\\\.\\`` or other device path, nor splits a name; a drive segment must be exactly a
  letter and a colon (``C|`` is refused). Names Windows reads as something else (``CON``,
  ``a:stream``, ``a.``, ``<>"|?*``) decode as written and are refused by the sandbox's path rules.
"""

from __future__ import annotations

import re
import stat
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from mcp_ref import CacheHint, InvalidParams, Resource, ResourceNotFound, blob_resource

from . import content
from .answers import base64_answer_bytes, reserve_for
from .offload import off_loop, read_start
from .root import FsError, Location, Root, sandboxed

if TYPE_CHECKING:
    from mcp_ref import RequestContext, Server

    from .config import Config
    from .root import Sandbox

READ_HINT = CacheHint(2000, "private")
DIRECTORY_MIME = "inode/directory"
SNIFF_BYTES = 8192


def location_uri(location: Location) -> str:
    """The ``file://`` URI of a location (RFC 8089, percent-encoded UTF-8)."""
    root = location.root
    sep = root.sep
    base = root.display
    path = base.rstrip(sep) + sep + sep.join(location.parts) if location.parts else base
    if sep == "/":
        return "file://" + quote(path, safe="/")
    return path_uri(path, windows=True)


# A UNC server name as a URI host: ASCII, no percent-encoding, user or port; never "." (``\\.\``).
# Pattern strings: ``re`` compiles (and caches) them on first use under Windows rules, not at start-up.
_UNC_HOST = r"[A-Za-z0-9_-][A-Za-z0-9._-]*"
_WINDOWS_DRIVE = r"[A-Za-z]:"


def path_uri(path: str, *, windows: bool = False) -> str:
    """The ``file://`` URI of an absolute path: POSIX (``/r/a b`` is ``file:///r/a%20b``) or, with
    ``windows``, a drive-absolute or UNC path (``C:\\a b`` is ``file:///C:/a%20b``, ``\\\\s\\h\\x``
    is ``file://s/h/x``). Raises ``ValueError`` for a Windows path with no URI (relative, ``\\\\?\\``
    and device forms, a server name that is not a plain host name, ``.`` or ``..`` components)."""
    if not windows:
        return "file://" + quote(path, safe="/")
    from . import winpaths

    what = winpaths.kind(path)
    pieces = [p for p in re.split(r"[\\/]+", path) if p]
    if what == "drive-absolute":
        prefix, parts = "file:///" + pieces[0].upper(), pieces[1:]
    elif what == "unc" and len(pieces) >= 2:
        server, share, parts = pieces[0], pieces[1], pieces[2:]
        if not re.fullmatch(_UNC_HOST, server):
            raise ValueError(f"{path!r}: the server name {server!r} is not a host name a file URI can carry")
        prefix = "file://" + server + "/" + quote(share, safe="")
    else:
        raise ValueError(f"{path!r} is not a drive-absolute or UNC path (\\\\?\\ and device paths have no file URI)")
    if any(p in (".", "..") for p in parts):
        raise ValueError(f"{path!r} is not normalized ('.' or '..')")
    return prefix + "/" + "/".join(quote(p, safe="") for p in parts)


def uri_path(uri: str, *, windows: bool = False) -> str:
    """The absolute path a ``file://`` URI names (with ``windows``, a Windows path: a drive or a
    UNC share). Raises ``ValueError`` for anything else."""
    if not uri.startswith("file:"):
        raise ValueError("not a file: URI")
    rest = uri[len("file:"):]
    if "?" in rest or "#" in rest:
        raise ValueError("file URIs take no query or fragment")
    if windows:
        return _windows_uri_path(rest)
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


def _windows_uri_path(rest: str) -> str:
    """``uri_path`` under Windows rules, for what follows ``file:`` (no query or fragment)."""
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        path = slash + path
    elif rest.startswith("/"):
        authority, path = "", rest  # file:/C:/x
    else:
        raise ValueError("file URIs need an absolute path")
    parts = []
    for segment in path.split("/")[1:]:
        decoded = unquote(segment, errors="strict")
        if "/" in decoded or "\\" in decoded or "\0" in decoded or decoded in (".", ".."):
            raise ValueError("a path segment decodes to '/', '\\', NUL, '.' or '..'")
        parts.append(decoded)
    if authority in ("", "localhost") and parts and re.fullmatch(_WINDOWS_DRIVE, parts[0]):
        return parts[0].upper() + "\\" + "\\".join(parts[1:])  # file:///C: is C:\, not the drive-relative C:
    if not authority:
        raise ValueError("a Windows file URI names a drive (file:///C:/...) or a server (file://server/share/...)")
    if not re.fullmatch(_UNC_HOST, authority):
        raise ValueError("the host of a file URI must be a plain server name (no user, port or percent-encoding)")
    if not parts or not parts[0] or ":" in parts[0]:
        raise ValueError("a file URI with a host names a share (file://server/share/...)")
    return "\\\\" + authority + "\\" + "\\".join(parts)


def _has_uri(location: Location) -> bool:
    try:
        location_uri(location)
    except ValueError:
        return False
    return True


class FsResources:
    """Registers the lister, the template and the reader on a ``Server``."""

    def __init__(self, server: Server, sandbox: Sandbox, config: Config) -> None:
        self.sandbox = sandbox
        self.config = config
        #: URIs are built and parsed under Windows rules (drive letters, UNC hosts) when the roots are Windows paths.
        self.windows = sandbox.roots[0].sep == "\\"
        server.resource_lister(paged=True)(self.list_page)
        server.resource_template(
            "file:///{+path}",
            name="file",
            title="A file in the allowed directories",
            description="Any file (or directory listing) inside the allowed directories, by absolute path.",
            cache=READ_HINT,
        )(self.read)
        if self.windows and any(root.display.startswith("\\\\") for root in sandbox.roots):
            # A root on a UNC share: its files' URIs name the server as their host (file://server/share/...).
            server.resource_template(
                "file://{host}/{+path}",
                name="unc-file",
                title="A file in the allowed directories on a network share",
                description="Any file (or directory listing) inside the allowed directories on a UNC share, "
                            "as file://server/share/path.",
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
            if not self._owns(start.root, ()) or (self.windows and not _has_uri(start)):
                # the same directory as an earlier root: listed there (or, on Windows, a root whose
                # server name no file URI can carry: its files have no URI a client could send)
                root_index, after = root_index + 1, None
                continue
            def descend(components: tuple[str, ...], root: Root = start.root) -> bool:
                return self._owns(root, components)

            walk = self.sandbox.walk(start, after=after, descend=descend)
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
        sep = root.sep
        path = root.display.rstrip(sep) + sep + sep.join(components) if components else root.display
        try:
            return self.sandbox.locate(path).root is root
        except FsError:  # InvalidPath: a name that is not UTF-8
            return False

    # --- reading --------------------------------------------------------------------------------------

    def _locate(self, uri: str) -> str:
        try:
            return uri_path(uri, windows=self.windows)
        except ValueError:
            raise ResourceNotFound(uri) from None

    async def read(self, ctx: RequestContext, uri: str, variables: dict[str, Any]) -> list[dict[str, Any]]:
        path = self._locate(uri)
        try:
            location, info = await sandboxed(self.sandbox.stat, path)
            if stat.S_ISDIR(info.st_mode):
                limit = self.config.max_entries
                _location, entries, total = await off_loop(
                    lambda stop: self.sandbox.list_directory_page(path, limit=limit, sizes=False))
                listing = "".join(f"{content.LISTING_TAGS[e.kind]} {e.label}\n" for e in entries)
                if total > limit:  # said, as the listing tools say it, never cut silently
                    listing += f"[Truncated: showing {len(entries)} of {total} entries (--max-entries).]\n"
                return [{"uri": uri, "mimeType": DIRECTORY_MIME, "text": listing}]
            with await sandboxed(self.sandbox.open_file, path) as opened:
                size = opened.info.st_size
                if size > self.config.max_media_bytes:
                    raise InvalidParams(
                        f"Resource too large: {size} bytes, over this server's limit of {self.config.max_media_bytes} "
                        "(--max-media-bytes)", {"uri": uri})
                await reserve_for(ctx, base64_answer_bytes(size))  # the larger of its two forms
                data = await read_start(opened, size)
        except FsError:
            raise ResourceNotFound(uri) from None
        name = location.parts[-1] if location.parts else ""
        mime = content.sniff_mime(data[:SNIFF_BYTES], name)
        if not content.looks_binary(data[:SNIFF_BYTES]):
            try:
                return [{"uri": uri, "mimeType": mime, "text": content.decode_text(data)}]
            except content.NotText:
                pass
        return [blob_resource(uri, data, mime)]
