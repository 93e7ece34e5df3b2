"""mcp_ref: a small, spec-faithful implementation of the Model Context Protocol (2026-07-28)
stdio transport and server dispatcher, serving legacy (initialize-era) clients too.

Reading order for a newcomer, following one message from stdin to stdout:
``stdio`` (the asyncio shell: one read loop, signals and shutdown; ``streams``: the byte streams
it reads and writes, polled, files, threads or memory; ``stdout``: the single writer; ``stderr``:
logs that never block) -> ``session`` (one connection: held input, budgets,
requests in flight, cancellation) -> ``wire`` (framing, JSON-RPC; ``idscan``: the id of a line
refused unparsed; ``fastjson`` and ``splice``: the encoder's speed-ups) -> ``dispatcher`` (one
request: era, routing, context, result, errors; ``control``: the control lane) -> ``context`` /
``meta`` / ``versions`` -> the feature modules (``discover``, ``tools``, ``resources``,
``prompts``, ``completion``, ``pagination``, ``subscriptions`` + ``watch``, ``mrtr`` +
``requeststate``, ``sealing`` (the one HMAC, for request state and cursors), ``legacy`` +
``legacyinput`` + ``outgoing`` (server-to-client requests, for initialize-era clients only),
``tasks`` (the tasks extension)) -> ``server`` (the API; ``handlerthreads``:
where synchronous handlers run). The author's kit:
``testing`` (a client for tests), ``typed`` (typed tools), ``request`` (request lines for a shell).

Where the modules live: ``server`` beside this file (the API); ``core/`` (content, context, control,
dispatcher, errors, meta, session, stdio, stdout, streams, versions, wire); ``layers/``
(_stdio_threads, fastjson, handlerthreads, idscan, outputbudget, pipesize, records, splice,
stderr); ``features/`` (caching, completion, discover, legacy, legacyinput, mrtr, outgoing,
pagination, prompts, requeststate, resources, schemas, sealing, subscriptions, tasks, tools,
uritemplate, watch); ``kit/`` (request, testing, typed). Each floor's ``__init__`` says what it holds.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (it takes ~2 ms)

# The public names, by the module that defines them. They are imported on first use (the module
# ``__getattr__`` below), not here: a process pays only for the parts it touches, so a small CLI
# such as ``mcp-ref-request`` or a server's start-up does not import every feature module.
_EXPORTS = {
    "features.caching": ("CacheHint",),
    "features.completion": ("Completion",),
    "core.content": ("audio", "blob_resource", "embedded_resource", "image", "prompt_message", "resource_link", "text", "text_resource"),
    "core.context": ("RateLimit", "RequestContext"),
    "core.errors": (
        "InternalError", "InvalidParams", "MethodNotFound", "MissingRequiredClientCapability", "ProtocolError",
        "ResourceNotFound", "ToolError", "UnsupportedProtocolVersion",
    ),
    "features.mrtr": ("InputRequired", "elicit_form", "elicit_url", "list_roots", "sample"),
    "features.prompts": ("Prompt", "PromptArgument", "PromptResult"),
    "features.resources": ("Resource", "ResourceTemplate"),
    "server": ("Server",),
    "features.tasks": ("TASKS_EXTENSION", "TaskSettings"),
    "features.tools": ("Tool", "ToolResult"),
    "core.versions": ("LEGACY_VERSIONS", "MODERN_VERSION"),
    "features.watch": ("WatchSet",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, imported eagerly
    from typing import Any

    from .features.caching import CacheHint
    from .features.completion import Completion
    from .core.content import (
        audio,
        blob_resource,
        embedded_resource,
        image,
        prompt_message,
        resource_link,
        text,
        text_resource,
    )
    from .core.context import RateLimit, RequestContext
    from .core.errors import (
        InternalError,
        InvalidParams,
        MethodNotFound,
        MissingRequiredClientCapability,
        ProtocolError,
        ResourceNotFound,
        ToolError,
        UnsupportedProtocolVersion,
    )
    from .features.mrtr import InputRequired, elicit_form, elicit_url, list_roots, sample
    from .features.prompts import Prompt, PromptArgument, PromptResult
    from .features.resources import Resource, ResourceTemplate
    from .server import Server
    from .features.tasks import TASKS_EXTENSION, TaskSettings
    from .features.tools import Tool, ToolResult
    from .core.versions import LEGACY_VERSIONS, MODERN_VERSION
    from .features.watch import WatchSet

__version__ = "0.1.0"

__all__ = [
    "CacheHint",
    "Completion",
    "InputRequired",
    "InternalError",
    "InvalidParams",
    "LEGACY_VERSIONS",
    "MODERN_VERSION",
    "MethodNotFound",
    "MissingRequiredClientCapability",
    "Prompt",
    "PromptArgument",
    "PromptResult",
    "RateLimit",
    "ProtocolError",
    "RequestContext",
    "Resource",
    "ResourceNotFound",
    "ResourceTemplate",
    "Server",
    "TASKS_EXTENSION",
    "TaskSettings",
    "Tool",
    "ToolError",
    "ToolResult",
    "UnsupportedProtocolVersion",
    "WatchSet",
    "audio",
    "blob_resource",
    "elicit_form",
    "elicit_url",
    "embedded_resource",
    "image",
    "list_roots",
    "prompt_message",
    "resource_link",
    "sample",
    "text",
    "text_resource",
]


def __getattr__(name: str) -> Any:
    """``from mcp_ref import Server`` (or ``mcp_ref.Server``): import the defining module now."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup is an ordinary module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
