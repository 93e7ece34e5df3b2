"""Resources and resource templates, and the ``resources/*`` methods.

Spec: server/resources (2026-07-28).

* ``resources/list`` lists static resources (registration order) followed by whatever the
  server's dynamic listers return; ``resources/templates/list`` lists templates. Both paginate.
* ``resources/read`` looks for an exact static URI first, then the first template that matches
  (RFC 6570, see ``uritemplate``). A handler returns ``str`` (text), ``bytes`` (sent as base64
  ``blob``), one contents object, or a list of them. No match, or a handler raising
  ``ResourceNotFound``, is -32602 with ``data.uri``; an empty ``contents`` list is never sent for a
  resource that does not exist.
* Each resource or template may carry its own caching hint for ``resources/read``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .caching import CacheHint
from .content import blob_resource, resource_contents_problem, text_resource, with_optional
from .errors import InternalError, InvalidParams, ResourceNotFound
from .meta import check_meta_keys
from .pagination import page_result
from .uritemplate import UriTemplate

if TYPE_CHECKING:
    from .context import RequestContext
    from .server import Server


# Longer URIs are refused before any template is tried: matching is regex work, and no real
# resource URI comes near this (file paths stop at 4096 bytes).
MAX_URI_LENGTH = 65536

# RFC 3986: a scheme, then characters a URI may hold (unreserved, reserved, or %-escapes).
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")


def check_uri(uri: Any, where: str) -> None:
    """Raise ``ValueError`` unless ``uri`` is an absolute URI (server/resources#custom-uri-schemes)."""
    if not isinstance(uri, str) or not _URI.fullmatch(uri):
        raise ValueError(f"{where}: {uri!r} is not an absolute URI (scheme:..., RFC 3986; percent-encode other characters)")


@dataclass
class Resource:
    """A resource with a fixed URI. ``handler(ctx)`` returns its contents."""

    uri: str
    name: str
    handler: Callable[..., Any]
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    cache: CacheHint | None = None

    def __post_init__(self) -> None:
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


@dataclass
class ResourceTemplate:
    """A family of resources: ``handler(ctx, uri, variables)`` reads one of them."""

    uri_template: str
    name: str
    handler: Callable[..., Any]
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    cache: CacheHint | None = None
    template: UriTemplate = field(init=False, repr=False)

    def __post_init__(self) -> None:
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
                raise InternalError(f"Resource handler for {uri!r} returned malformed contents: {problem}")
        return value
    raise InternalError(f"Resource handler for {uri!r} returned no contents")


# --- the methods -------------------------------------------------------------------------------


async def list_resources(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``resources/list``: static resources, then the dynamic listers' resources, one page."""
    items: list[dict[str, Any]] = [resource.definition() for resource in server.resources.values()]
    for lister in server.resource_listers:
        for item in await server.invoke(lister, ctx):
            items.append(item.definition() if isinstance(item, Resource) else item)
    return page_result("resources", items, params, "resources/list", server.page_size, dict)


async def list_resource_templates(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``resources/templates/list``: one page of templates, in registration order."""
    return page_result(
        "resourceTemplates", server.resource_templates, params, "resources/templates/list", server.page_size, ResourceTemplate.definition
    )


async def read_resource(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``resources/read``: the contents of one URI, with that resource's caching hint."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams('resources/read needs "uri", a string')
    if len(uri) > MAX_URI_LENGTH:
        raise InvalidParams(f"URI longer than {MAX_URI_LENGTH} characters", {"uri": uri[:200] + "..."})
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
