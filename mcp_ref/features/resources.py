"""Resources and resource templates, and the ``resources/*`` methods.

Spec: server/resources (2026-07-28).

* ``resources/list`` walks its *sources* in order: the static resources (registration order),
  then each plain lister (``handler(ctx)`` returns everything; the library slices it), then each
  paged lister (``handler(ctx, position, limit)`` returns ``(items, next_position)``). A page fills
  up to ``page_size`` items across sources; a paged lister that says more follows ends the page
  there (so a page may be shorter). The sealed cursor holds ``[source index, position in it]``:
  an offset for the static list and plain listers, the lister's own ``next_position`` for a paged
  one, so walking every page calls a paged lister once per page, resuming where it stopped.
  ``resources/templates/list`` lists templates. Both paginate (``pagination``).
* ``resources/read`` looks for an exact static URI first, then the first template that matches
  (RFC 6570, see ``uritemplate``). A handler returns ``str`` (text), ``bytes`` (sent as base64
  ``blob``), one contents object, or a list of them. No match, or a handler raising
  ``ResourceNotFound``, is -32602 with ``data.uri``; an empty ``contents`` list is never sent for a
  resource that does not exist.
* Each resource or template may carry its own caching hint for ``resources/read``.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Callable

from .caching import CacheHint
from ..core.content import blob_resource, resource_contents_problem, text_resource, with_optional
from ..core.errors import InternalError, InvalidParams, ResourceNotFound, clip
from ..core.meta import check_meta_keys
from ..layers.records import Record
from .pagination import LIST_CHANGED, decode_cursor, encode_cursor, invalid_cursor, is_offset, page_result
from .uritemplate import UriTemplate

if TYPE_CHECKING:
    from ..core.context import RequestContext
    from ..server import Server

log = logging.getLogger("mcp_ref")

# Longer URIs are refused before any template is tried: matching is regex work, and no real
# resource URI comes near this (file paths stop at 4096 bytes).
MAX_URI_LENGTH = 65536

# RFC 3986: a scheme, then characters a URI may hold (unreserved, reserved, or %-escapes).
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")


def check_uri(uri: Any, where: str) -> None:
    """Raise ``ValueError`` unless ``uri`` is an absolute URI (server/resources#custom-uri-schemes)."""
    if not isinstance(uri, str) or not _URI.fullmatch(uri):
        raise ValueError(f"{where}: {uri!r} is not an absolute URI (scheme:..., RFC 3986; percent-encode other characters)")


class Resource(Record):
    """A resource with a fixed URI. ``handler(ctx)`` returns its contents. (A ``Record``, as
    ``ResourceTemplate`` is: compared and shown by its fields, not hashable.)"""

    __slots__ = ("uri", "name", "handler", "title", "description", "mime_type", "size", "annotations", "icons", "meta",
                 "cache")

    def __init__(self, uri: str, name: str, handler: Callable[..., Any], title: str | None = None,
                 description: str | None = None, mime_type: str | None = None, size: int | None = None,
                 annotations: dict[str, Any] | None = None, icons: list[dict[str, Any]] | None = None,
                 meta: dict[str, Any] | None = None, cache: CacheHint | None = None) -> None:
        self.uri, self.name, self.handler, self.title, self.description = uri, name, handler, title, description
        self.mime_type, self.size, self.annotations, self.icons, self.meta = mime_type, size, annotations, icons, meta
        self.cache = cache
        check_uri(self.uri, f"resource {self.name!r}")
        check_meta_keys(self.meta, f"resource {self.uri!r}")

    def definition(self) -> dict[str, Any]:
        """The resource as ``resources/list`` shows it."""
        return with_optional(
            {"uri": self.uri, "name": self.name},
            title=self.title,
            description=self.description,
            mimeType=self.mime_type,
            size=self.size,
            annotations=self.annotations,
            icons=self.icons,
            _meta=self.meta,
        )


class ResourceTemplate(Record):
    """A family of resources: ``handler(ctx, uri, variables)`` reads one of them."""

    __slots__ = ("uri_template", "name", "handler", "title", "description", "mime_type", "annotations", "icons", "meta",
                 "cache", "template")
    SHOWN = __slots__[:-1]  # the parsed template is left out of the repr (it is compared, by identity)

    def __init__(self, uri_template: str, name: str, handler: Callable[..., Any], title: str | None = None,
                 description: str | None = None, mime_type: str | None = None,
                 annotations: dict[str, Any] | None = None, icons: list[dict[str, Any]] | None = None,
                 meta: dict[str, Any] | None = None, cache: CacheHint | None = None) -> None:
        self.uri_template, self.name, self.handler, self.title = uri_template, name, handler, title
        self.description, self.mime_type, self.annotations, self.icons = description, mime_type, annotations, icons
        self.meta, self.cache = meta, cache
        self.template = UriTemplate(self.uri_template)
        check_uri(self.uri_template.split("{", 1)[0] + "x", f"resource template {self.name!r}")
        check_meta_keys(self.meta, f"resource template {self.uri_template!r}")

    def definition(self) -> dict[str, Any]:
        """The template as ``resources/templates/list`` shows it."""
        return with_optional(
            {"uriTemplate": self.uri_template, "name": self.name},
            title=self.title,
            description=self.description,
            mimeType=self.mime_type,
            annotations=self.annotations,
            icons=self.icons,
            _meta=self.meta,
        )


def to_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """Normalize what a read handler returned into a non-empty list of resource contents."""
    if isinstance(value, str):
        return [text_resource(uri, value, mime_type or "text/plain")]
    if isinstance(value, (bytes, bytearray)):
        return [blob_resource(uri, bytes(value), mime_type or "application/octet-stream")]
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list) and value:
        for item in value:
            if problem := resource_contents_problem(item):
                raise InternalError(f"Resource handler for {clip(uri)!r} returned malformed contents: {problem}")
        return value
    raise InternalError(f"Resource handler for {clip(uri)!r} returned no contents")


# --- the methods -------------------------------------------------------------------------------


async def list_resources(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``resources/list``: one page, walking static resources, then plain listers, then paged listers."""
    sources: list[tuple[str, Any]] = [("static", None)]
    sources += [("plain", lister) for lister in server.resource_listers]
    sources += [("paged", lister) for lister in server.paged_resource_listers]
    source, position = _start_of_page(server, params, len(sources))
    page: list[dict[str, Any]] = []
    room = server.page_size
    next_at: list[Any] | None = None
    while source < len(sources):
        if room == 0:
            next_at = [source, position]
            break
        kind, lister = sources[source]
        if kind == "paged":
            items, after = await _paged(server, lister, ctx, position, room)
        else:
            if kind == "static":
                everything = [resource.definition() for resource in server.resources.values()]
            else:
                everything = [_listed(lister, item) for item in await server.invoke(lister, ctx)]
            offset = position or 0
            if offset > len(everything):
                raise invalid_cursor(params["cursor"], LIST_CHANGED)
            items = everything[offset : offset + room]
            end = offset + len(items)
            after = end if end < len(everything) else None
        page += items
        room -= len(items)
        if after is not None:
            next_at = [source, after]
            break
        source, position = source + 1, None
    result: dict[str, Any] = {"resources": page}
    if next_at is not None:
        result["nextCursor"] = encode_cursor(server.signer, "resources/list", next_at)
    return result


def _start_of_page(server: Server, params: dict[str, Any], source_count: int) -> tuple[int, Any]:
    """``(source index, position)`` where the requested page starts (-32602 for a bad cursor)."""
    cursor = params.get("cursor")
    if cursor is None:
        return 0, None
    sealed = decode_cursor(server.signer, cursor, "resources/list")
    if not (isinstance(sealed, list) and len(sealed) == 2 and is_offset(sealed[0])):
        raise invalid_cursor(cursor)
    source, position = sealed
    if source >= source_count:
        raise invalid_cursor(cursor, LIST_CHANGED)  # a lister was unregistered
    if source <= len(server.resource_listers) and not (position is None or is_offset(position)):
        raise invalid_cursor(cursor, LIST_CHANGED)  # listers were registered since: not our offset
    return source, position


async def _paged(server: Server, lister: Callable[..., Any], ctx: RequestContext, position: Any, limit: int) -> tuple[list[dict[str, Any]], Any]:
    """Call a paged lister and check what it returned: at most ``limit`` items, and progress."""
    returned = await server.invoke(lister, ctx, position, limit)
    name = getattr(lister, "__name__", repr(lister))
    if not (isinstance(returned, (tuple, list)) and len(returned) == 2 and isinstance(returned[0], (list, tuple))):
        log.error("paged resource lister %s returned %r, not (items, next_position)", name, type(returned).__name__)
        raise InternalError(f"Internal error: resource lister {name!r} must return (items, next_position)")
    items, after = returned
    if len(items) > limit:
        log.error("paged resource lister %s returned %d items; the limit was %d", name, len(items), limit)
        raise InternalError(f"Internal error: resource lister {name!r} returned more than the {limit} items asked for")
    if not items and after is not None and after == position:
        log.error("paged resource lister %s returned no items and the same position %r: it would never end", name, after)
        raise InternalError(f"Internal error: resource lister {name!r} made no progress")
    return [_listed(lister, item) for item in items], after


def _listed(lister: Callable[..., Any], item: Any) -> dict[str, Any]:
    """A listed resource as ``resources/list`` shows it."""
    if isinstance(item, Resource):
        return item.definition()
    if isinstance(item, dict):
        return item
    name = getattr(lister, "__name__", repr(lister))
    log.error("resource lister %s listed a %s; list Resource objects or dicts", name, type(item).__name__)
    raise InternalError(f"Internal error: resource lister {name!r} listed something that is not a resource")


async def list_resource_templates(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``resources/templates/list``: one page of templates, in registration order."""
    return page_result(
        server.signer, "resourceTemplates", server.resource_templates, params, "resources/templates/list", server.page_size, ResourceTemplate.definition
    )


async def read_resource(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``resources/read``: the contents of one URI, with that resource's caching hint."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams('resources/read needs "uri", a string')
    if len(uri) > MAX_URI_LENGTH:
        raise InvalidParams(f"URI longer than {MAX_URI_LENGTH} characters", {"uri": clip(uri)})
    resource = server.resources.get(uri)
    if resource is not None:
        value = await server.invoke(resource.handler, ctx)
        contents = to_contents(uri, value, resource.mime_type)
        hint = resource.cache
    else:
        for template in server.resource_templates:
            variables = template.template.match(uri)
            if variables is not None:
                value = await server.invoke(template.handler, ctx, uri, variables)
                contents = to_contents(uri, value, template.mime_type)
                hint = template.cache
                break
        else:
            raise ResourceNotFound(uri)
    result: dict[str, Any] = {"contents": contents}
    hint = hint or server.cache_hint("resources/read")
    if "inputResponses" in params or "requestState" in params:
        hint = CacheHint(0, hint.scope)  # an MRTR retry depends on answers outside the cache key
    return hint.apply(result)
