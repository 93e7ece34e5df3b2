"""Validate what the server writes against the official MCP JSON schemas.

The schemas are not copied into this repository: they are read from ``shared/reference`` beside
the checkout (``../shared/reference`` from the repo root), where the project keeps them.

``check_modern(message, method)`` validates a server message of the 2026-07-28 era,
``check_legacy(message, method)`` one of the 2025-11-25 era. ``method`` is the method of the
request a response answers (a response does not name it); notifications name their own.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import referencing

REFERENCE_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "reference"

# Result definition per method, per era. tools/call, prompts/get and resources/read may also
# answer with an InputRequiredResult in the modern era.
MODERN_RESULTS = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}
LEGACY_RESULTS = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    **{m: d for m, d in MODERN_RESULTS.items() if m not in ("server/discover", "subscriptions/listen")},
}
NOTIFICATIONS = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
    "notifications/cancelled": "CancelledNotification",
}
# Standard codes: the schema defines the error *object*; MCP codes: the whole response.
MODERN_ERROR_OBJECTS = {
    -32700: "ParseError",
    -32600: "InvalidRequestError",
    -32601: "MethodNotFoundError",
    -32602: "InvalidParamsError",
    -32603: "InternalError",
}
MODERN_ERROR_RESPONSES = {
    -32021: "MissingRequiredClientCapabilityError",
    -32022: "UnsupportedProtocolVersionError",
}


class SchemaViolation(AssertionError):
    """A server message does not match the official schema."""


@functools.lru_cache(maxsize=None)
def _schema(version: str) -> dict[str, Any]:
    path = REFERENCE_DIR / f"mcp-schema-{version}.json"
    if not path.exists():
        raise FileNotFoundError(f"official schema not found at {path} (shared/reference must sit beside the checkout)")
    return json.loads(path.read_text())


@functools.lru_cache(maxsize=None)
def _validator(version: str, definition: str) -> jsonschema.Draft202012Validator:
    schema = _schema(version)
    resource = referencing.Resource.from_contents(schema, default_specification=referencing.jsonschema.DRAFT202012)
    registry = referencing.Registry().with_resource("urn:mcp-schema", resource)
    return jsonschema.Draft202012Validator({"$ref": f"urn:mcp-schema#/$defs/{definition}"}, registry=registry)


def validate(version: str, definition: str, instance: Any) -> None:
    """Raise ``SchemaViolation`` listing every error of ``instance`` against ``#/$defs/<definition>``."""
    errors = sorted(_validator(version, definition).iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        details = "\n".join(f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10])
        raise SchemaViolation(f"{definition} ({version}) violated by {json.dumps(instance)[:500]}\n{details}")


def _check(version: str, results: dict[str, str], message: dict[str, Any], method: str | None) -> None:
    if "method" in message:
        if "id" in message:
            raise SchemaViolation(f"the server sent a request: {message}")
        validate(version, "JSONRPCNotification", message)
        definition = NOTIFICATIONS.get(message["method"])
        if definition is None:
            raise SchemaViolation(f"unexpected notification method {message['method']!r}")
        validate(version, definition, message)
        return
    if "error" in message:
        if message.get("id", 0) is None:
            # JSON-RPC 2.0 wants "id": null when the request id could not be read; the MCP schema
            # types id as an optional string|number. We send null on purpose (spec/ BASE-ERROR-ID-NULL),
            # so check the rest of the message as the schema's id-less form.
            message = {key: value for key, value in message.items() if key != "id"}
        validate(version, "JSONRPCErrorResponse", message)
        if version == "2026-07-28":
            code = message["error"]["code"]
            if -32019 <= code <= -32000 or (-32099 <= code <= -32020 and code not in MODERN_ERROR_RESPONSES):
                raise SchemaViolation(f"error code {code} must not be emitted in 2026-07-28")
            if code in MODERN_ERROR_OBJECTS:
                validate(version, MODERN_ERROR_OBJECTS[code], message["error"])
            if code in MODERN_ERROR_RESPONSES:
                validate(version, MODERN_ERROR_RESPONSES[code], message)
        return
    validate(version, "JSONRPCResultResponse", message)
    result = message["result"]
    if version == "2026-07-28" and result.get("resultType") == "input_required":
        validate(version, "InputRequiredResult", result)
        return
    if method is None:
        return
    definition = results.get(method)
    if definition is None:
        raise SchemaViolation(f"no result definition known for {method!r}")
    validate(version, definition, result)


def check_modern(message: dict[str, Any], method: str | None = None) -> None:
    """Validate one server message of the 2026-07-28 era."""
    _check("2026-07-28", MODERN_RESULTS, message, method)


def check_legacy(message: dict[str, Any], method: str | None = None) -> None:
    """Validate one server message of the 2025-11-25 era."""
    _check("2025-11-25", LEGACY_RESULTS, message, method)
