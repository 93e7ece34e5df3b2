"""Checking what a server writes against the official MCP JSON schemas (``Schemas``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .replies import SchemaViolation

SCHEMA_FILES = {"modern": "mcp-schema-2026-07-28.json", "legacy": "mcp-schema-2025-11-25.json", "tasks": "mcp-tasks-extension-schema.json"}


# --- schema checks ----------------------------------------------------------------------------------

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
    **{method: name for method, name in MODERN_RESULTS.items() if method not in ("server/discover", "subscriptions/listen")},
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
}
TASK_RESULTS = {"tasks/get": "GetTaskResult", "tasks/update": "UpdateTaskResult", "tasks/cancel": "CancelTaskResult"}
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
LEGACY_SERVER_REQUESTS = {"elicitation/create": "ElicitRequest", "sampling/createMessage": "CreateMessageRequest", "roots/list": "ListRootsRequest", "ping": "PingRequest"}
STANDARD_ERRORS = {-32700: "ParseError", -32600: "InvalidRequestError", -32601: "MethodNotFoundError", -32602: "InvalidParamsError", -32603: "InternalError"}
MCP_ERROR_RESPONSES = {-32021: "MissingRequiredClientCapabilityError", -32022: "UnsupportedProtocolVersionError"}


class Schemas:
    """The official MCP JSON schemas, and the check of one message a server wrote against them.

    ``modern``, ``legacy``, ``tasks``: the files of the 2026-07-28 schema, the 2025-11-25 schema
    and the tasks extension's schema (``SCHEMA_FILES`` has their official names). A file that is
    ``None`` or absent is not checked against, silently. ``Schemas.find(folder)`` takes all three
    from one folder (``None``: ``$MCP_REF_SCHEMA_DIR``; ``False``: none).

    What is checked (``problems``): the JSON-RPC envelope of every message; a notification
    against its definition; a request (a legacy server's elicitation, sampling, roots or ping)
    against its definition; an error's object (modern: the standard codes' error definitions, the
    whole response for -32021 and -32022, and no code from the ranges the 2026-07-28 spec keeps
    unused, -32000..-32019 and -32020..-32099 but for those two); a result against the definition
    of the method it answers (``method``; none: only the envelope), modern ``input_required``
    results and the tasks extension's results and ``notifications/tasks`` included.

    ``strict``: also a violation, whatever the checks cannot place: a notification method or an
    answered method with no definition, or a definition the era's schema lacks (what
    mcp-ref's own suite wants; an author's server may have methods of its own, so the client's
    default is lenient). ``jsonschema`` is imported only when a file is first used.
    """

    def __init__(
        self,
        modern: str | os.PathLike[str] | None = None,
        legacy: str | os.PathLike[str] | None = None,
        tasks: str | os.PathLike[str] | None = None,
        *,
        strict: bool = False,
    ) -> None:
        self.paths = {kind: Path(path) if path is not None else None for kind, path in (("modern", modern), ("legacy", legacy), ("tasks", tasks))}
        self.strict = strict
        self._documents: dict[str, Any] = {}
        self._validators: dict[tuple[str, str], Any] = {}

    @classmethod
    def find(cls, folder: str | os.PathLike[str] | None | bool = None, *, strict: bool = False) -> Schemas:
        """The schemas under their official names in ``folder`` (``None`` or ``True``:
        ``$MCP_REF_SCHEMA_DIR``, if set; ``False``: no folder, nothing is checked)."""
        if folder is False:
            return cls(strict=strict)
        chosen = folder if folder not in (None, True) else os.environ.get("MCP_REF_SCHEMA_DIR")
        if not chosen:
            return cls(strict=strict)
        base = Path(chosen)  # type: ignore[arg-type]
        return cls(*(base / SCHEMA_FILES[kind] for kind in ("modern", "legacy", "tasks")), strict=strict)

    def has(self, kind: str) -> bool:
        """Is the schema of ``kind`` (``"modern"``, ``"legacy"``, ``"tasks"``) at hand?"""
        path = self.paths[kind]
        return path is not None and path.is_file()

    def _document(self, kind: str) -> dict[str, Any] | None:
        if kind not in self._documents:
            path = self.paths[kind]
            self._documents[kind] = json.loads(path.read_text(encoding="utf-8")) if path is not None and path.is_file() else None
        document: dict[str, Any] | None = self._documents[kind]
        return document

    def _validator(self, kind: str, definition: str) -> Any:
        """The validator of ``#/$defs/<definition>``; None without the file, False when the file lacks the definition."""
        key = (kind, definition)
        if key not in self._validators:
            document = self._document(kind)
            validator: Any = None
            if document is not None and definition not in document.get("$defs", {}):
                validator = False
            elif document is not None:
                import jsonschema
                import referencing
                import referencing.jsonschema

                resource = referencing.Resource.from_contents(document, default_specification=referencing.jsonschema.DRAFT202012)
                registry = referencing.Registry().with_resource("urn:mcp-ref-testing", resource)
                validator = jsonschema.Draft202012Validator({"$ref": f"urn:mcp-ref-testing#/$defs/{definition}"}, registry=registry)
            self._validators[key] = validator
        return self._validators[key]

    def validate(self, kind: str, definition: str | None, instance: Any) -> list[str]:
        """What is wrong with ``instance`` against ``#/$defs/<definition>`` of the ``kind`` schema
        (empty when nothing is, or when that schema is not at hand)."""
        if definition is None:
            return []
        validator = self._validator(kind, definition)
        if validator is False:
            return [f"{definition} is not defined in the {kind} schema"] if self.strict else []
        if validator is None:
            return []
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        if not errors:
            return []
        details = "\n".join(f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10])
        return [f"{definition} ({kind} schema) violated by {json.dumps(instance)[:500]}\n{details}"]

    def _defined(self, table: dict[str, str], name: str | None, what: str) -> tuple[str | None, list[str]]:
        """The definition ``table`` has for ``name``, and (strict) the problem of having none."""
        definition = table.get(name or "")
        if definition is None and name is not None and self.strict:
            return None, [f"no {what} definition known for {name!r}"]
        return definition, []

    def problems(self, era: str, message: dict[str, Any], method: str | None = None) -> list[str]:
        """Why ``message`` (a response answering ``method``, or a notification or request) breaks
        the schema of ``era`` (``"modern"`` or ``"legacy"``); empty when it does not."""
        if "method" in message:
            name = message["method"]
            if "id" in message:
                definition, problems = self._defined(LEGACY_SERVER_REQUESTS, name, "server request")
                return self.validate(era, "JSONRPCRequest", message) + problems + self.validate(era, definition, message)
            problems = self.validate(era, "JSONRPCNotification", message)
            if era == "modern" and name == "notifications/tasks":
                return problems + self.validate("tasks", "TaskStatusNotification", message)
            definition, unknown = self._defined(NOTIFICATIONS, name, "notification")
            return problems + unknown + self.validate(era, definition, message)
        if "error" in message:
            if message.get("id", 0) is None:
                # JSON-RPC 2.0 wants "id": null when the request id could not be read; the MCP schema
                # types id as an optional string|number, so the rest is checked as its id-less form.
                message = {key: value for key, value in message.items() if key != "id"}
            problems = self.validate(era, "JSONRPCErrorResponse", message)
            code = message.get("error", {}).get("code") if isinstance(message.get("error"), dict) else None
            if era == "modern" and isinstance(code, int) and not isinstance(code, bool):
                if -32019 <= code <= -32000 or (-32099 <= code <= -32020 and code not in MCP_ERROR_RESPONSES):
                    problems.append(f"error code {code} must not be emitted in 2026-07-28")
                problems += self.validate(era, STANDARD_ERRORS.get(code), message["error"])
                problems += self.validate(era, MCP_ERROR_RESPONSES.get(code), message)
            return problems
        problems = self.validate(era, "JSONRPCResultResponse", message)
        result = message.get("result")
        if not isinstance(result, dict):
            return problems
        if era == "modern" and result.get("resultType") == "input_required":
            return problems + self.validate(era, "InputRequiredResult", result)
        if era == "modern" and result.get("resultType") == "task":
            return problems + self.validate("tasks", "CreateTaskResult", result)
        if era == "modern" and method in TASK_RESULTS:
            return problems + self.validate("tasks", TASK_RESULTS[method], result)
        definition, unknown = self._defined(MODERN_RESULTS if era == "modern" else LEGACY_RESULTS, method, "result")
        return problems + unknown + self.validate(era, definition, result)

    def check(self, era: str, message: dict[str, Any], method: str | None = None) -> None:
        """``problems``, raised as one ``SchemaViolation``."""
        problems = self.problems(era, message, method)
        if problems:
            raise SchemaViolation("\n".join(problems))


