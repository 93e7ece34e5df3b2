"""Tools: definitions, argument validation, results, and the ``tools/*`` methods.

Spec: server/tools (2026-07-28).

* Names follow the spec's rules (1-128 characters of ``A-Z a-z 0-9 _ - .``) and are checked when a
  tool is registered, as is its ``inputSchema`` (an object schema in a supported dialect).
* Arguments are validated against ``inputSchema`` with ``jsonschema`` (compiled once per tool, on
  first use). A violation is a tool *execution* error (``isError: true`` with text a model can act
  on), not a protocol error; an unknown tool is -32602.
* A tool with an ``outputSchema`` returns ``structuredContent`` that must conform to it, and also
  the same JSON as text, for clients that read only ``content``.
* Whatever a handler raises is a tool *execution* error (the schema: errors that originate
  from the tool SHOULD be reported in the result): ``ToolError`` becomes an ``isError: true``
  result with its message; any other exception an ``isError: true`` result with a generic
  message, the traceback going to stderr only. Protocol errors a handler raises on purpose
  (``ProtocolError`` subclasses, ``InputRequired``) stay what they are, and so does a result the
  library cannot send (malformed content, output that breaks the ``outputSchema``: -32603).
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from typing import TYPE_CHECKING, Any, Callable

from ..core.content import content_problem, text, with_optional
from ..core.errors import (
    TOO_MANY_DIGITS,
    InternalError,
    InvalidParams,
    ProtocolError,
    ToolError,
    clip,
    too_many_digits,
)
from ..core.meta import check_meta_keys
from .mrtr import InputRequired
from .pagination import page_result
from .schemas import SchemaCheck, SchemaError, check_bounds, compile_schema, dialect_of
from ..layers.records import Record
from ..layers.splice import Marked
from .tasks import TASK_SUPPORT

if TYPE_CHECKING:
    from ..core.context import RequestContext
    from ..server import Server

log = logging.getLogger("mcp_ref")

TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_UNSET: Any = object()  # an argument not given (None is a value, refused where the dataclasses refused it)


class ToolResult(Record):
    """A full ``CallToolResult``: content blocks, optional structured content, error flag.
    (A ``Record``, as ``Tool`` is: compared and shown by its fields, not hashable.)"""

    __slots__ = ("content", "structured_content", "is_error", "has_structured_content")

    def __init__(self, content: list[dict[str, Any]] = _UNSET, structured_content: Any = None,
                 is_error: bool = False, has_structured_content: bool = False) -> None:
        self.content: list[dict[str, Any]] = [] if content is _UNSET else content
        self.structured_content = structured_content
        self.is_error = is_error
        self.has_structured_content = True if structured_content is not None else has_structured_content



class Tool(Record):
    """A registered tool. ``handler(ctx, arguments)`` may be a coroutine function or a plain one."""

    __slots__ = ("name", "handler", "description", "input_schema", "output_schema", "title", "annotations", "icons",
                 "meta", "task", "_check_arguments", "_check_output", "is_coroutine")
    FIELDS = __slots__[:12]  # all but is_coroutine (derived from the handler)
    SHOWN = __slots__[:10]  # the checks are left out of the repr

    def __init__(self, name: str, handler: Callable[..., Any], description: str | None = None,
                 input_schema: dict[str, Any] = _UNSET, output_schema: dict[str, Any] | None = None,
                 title: str | None = None, annotations: dict[str, Any] | None = None,
                 icons: list[dict[str, Any]] | None = None, meta: dict[str, Any] | None = None,
                 task: str | None = None,  # tasks extension: None (never a task), "optional" or "required"
                 _check_arguments: SchemaCheck | None = None, _check_output: SchemaCheck | None = None) -> None:
        self.name = name
        self.handler = handler
        self.description = description
        self.input_schema: dict[str, Any] = {"type": "object", "additionalProperties": False} if input_schema is _UNSET \
            else input_schema
        self.output_schema = output_schema
        self.title = title
        self.annotations = annotations
        self.icons = icons
        self.meta = meta
        self.task = task
        self._check_arguments = _check_arguments
        self._check_output = _check_output
        # A coroutine function runs on the event loop, awaited directly; a plain one on the handler pool.
        self.is_coroutine = False
        self._check()

    def _check(self) -> None:
        self.is_coroutine = inspect.iscoroutinefunction(self.handler)
        if not isinstance(self.name, str) or not TOOL_NAME.fullmatch(self.name):
            raise ValueError(
                f"invalid tool name {self.name!r}: use 1-128 characters from A-Z, a-z, 0-9, '_', '-' and '.'"
            )
        if not isinstance(self.input_schema, dict) or self.input_schema.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: inputSchema must be a JSON Schema object with \"type\": \"object\"")
        check_meta_keys(self.meta, f"tool {self.name!r}")
        if self.task is not None and self.task not in TASK_SUPPORT:
            raise ValueError(f"tool {self.name!r}: task must be None, {' or '.join(map(repr, TASK_SUPPORT))}, not {self.task!r}")
        check_header_annotations(self.name, self.input_schema)
        for label, schema in (("inputSchema", self.input_schema), ("outputSchema", self.output_schema)):
            if schema is None:
                continue
            if not isinstance(schema, dict):
                raise ValueError(f"tool {self.name!r}: {label} must be a JSON object")
            try:
                dialect_of(schema)
                check_bounds(schema)
            except SchemaError as exc:
                raise ValueError(f"tool {self.name!r}: {label}: {exc}") from None

    def definition(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it."""
        return with_optional(
            {"name": self.name},
            title=self.title,
            description=self.description,
            inputSchema=self.input_schema,
            outputSchema=self.output_schema,
            annotations=self.annotations,
            icons=self.icons,
            _meta=self.meta,
        )

    def compile(self) -> None:
        """Compile the schemas now (normally done on first call). Raises ``SchemaError`` if one is invalid."""
        if self._check_arguments is None:
            self._check_arguments = compile_schema(self.input_schema)
        if self.output_schema is not None and self._check_output is None:
            self._check_output = compile_schema(self.output_schema)

    def argument_errors(self, arguments: dict[str, Any]) -> list[str]:
        """Why ``arguments`` do not satisfy ``inputSchema`` (empty when they do)."""
        try:
            check = self._check_arguments
            if check is None:
                self.compile()
                check = self._check_arguments
                assert check is not None
            return [] if check.accepts(arguments) else check(arguments)  # (accepts: the schema's own code)
        except SchemaError as exc:
            raise InternalError(f"Tool {self.name!r} has an unusable inputSchema: {exc}") from None

    def to_result(self, value: Any) -> dict[str, Any]:
        """Turn what a handler returned into a ``CallToolResult`` (without ``resultType``)."""
        if type(value) is str and self.output_schema is None:
            # The common case, with nothing to check: what _wrap makes of it, content.text's block
            # built here (marked for splice.py: a large text goes on the line uncopied).
            marked = Marked(type="text", text=value)
            marked.size = len(value)
            return {"content": [marked]}
        result = value if isinstance(value, ToolResult) else self._wrap(value)
        if self.output_schema is not None and not result.is_error and not result.has_structured_content:
            raise InternalError(f"Tool {self.name!r} has an outputSchema but returned no structured content")
        for block in result.content:
            if problem := content_problem(block):
                raise InternalError(f"Tool {self.name!r} returned malformed content: {problem}")
        out: dict[str, Any] = {"content": result.content}
        if result.has_structured_content:
            if self.output_schema is not None and not result.is_error:
                self.compile()
                assert self._check_output is not None
                problems = self._check_output(result.structured_content)
                if problems:
                    raise InternalError(
                        f"Tool {self.name!r} produced output that does not match its outputSchema",
                        {"errors": problems[:10]},
                    )
            out["structuredContent"] = result.structured_content
            if not result.content:
                out["content"] = [text(json.dumps(result.structured_content, ensure_ascii=False))]
        if result.is_error:
            out["isError"] = True
        return out

    def _wrap(self, value: Any) -> ToolResult:
        if isinstance(value, (bytes, bytearray)):
            raise TypeError(f"tool {self.name!r} returned bytes; wrap binary data with content.image/audio/blob_resource")
        if self.output_schema is not None:
            # With an outputSchema, whatever the handler returns (other than a ToolResult) is the
            # structured output, whatever its shape; its JSON text is added as content.
            return ToolResult(structured_content=value, has_structured_content=True)
        if isinstance(value, str):
            return ToolResult([text(value)])
        if _is_content_block(value):
            return ToolResult([value])
        if isinstance(value, list) and value and all(_is_content_block(item) for item in value):
            return ToolResult(list(value))
        if value is None:
            return ToolResult([])
        return ToolResult([text(json.dumps(value, ensure_ascii=False))])


# RFC 9110 token characters, for x-mcp-header values (basic/transports/streamable-http).
_HTTP_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"  # compiled on first use (re's cache): few tools have x-mcp-header
_SAFE_INTEGER = 2**53 - 1


def check_header_annotations(tool_name: str, input_schema: dict[str, Any]) -> None:
    """Check ``x-mcp-header`` annotations as HTTP clients will (server/tools#x-mcp-header).

    An annotation must be a non-empty HTTP token, unique (case-insensitively), on an integer,
    string or boolean property reachable from the root through ``properties`` alone. stdio
    clients ignore it, but the same tool definition may be served over HTTP one day, where a bad
    annotation makes clients drop the tool; so it is refused at registration.
    """
    seen: dict[str, str] = {}

    def visit(schema: Any, path: str, reachable: bool) -> None:
        if isinstance(schema, list):
            for item in schema:
                visit(item, path, False)
            return
        if not isinstance(schema, dict):
            return
        if "x-mcp-header" in schema:
            where = f"tool {tool_name!r}: x-mcp-header on {path or 'the root'}"
            header = schema["x-mcp-header"]
            if not reachable or not path:
                raise ValueError(f"{where}: only properties reachable from the root through 'properties' may carry it")
            if not isinstance(header, str) or not re.fullmatch(_HTTP_TOKEN, header):
                raise ValueError(f"{where}: {header!r} is not a non-empty HTTP token")
            if schema.get("type") not in ("string", "integer", "boolean"):
                raise ValueError(f"{where}: only string, integer and boolean properties may carry it")
            if schema.get("type") == "integer" and any(
                isinstance(schema.get(bound), (int, float)) and abs(schema[bound]) > _SAFE_INTEGER for bound in ("minimum", "maximum")
            ):
                raise ValueError(f"{where}: integer bounds must stay within +/-(2**53 - 1)")
            if header.lower() in seen:
                raise ValueError(f"{where}: {header!r} repeats the annotation on {seen[header.lower()]}")
            seen[header.lower()] = path
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                for name, child in value.items():
                    visit(child, f"{path}.{name}" if path else name, reachable)
            elif key not in ("x-mcp-header", "const", "enum", "default", "examples"):
                visit(value, path, False)

    visit(input_schema, "", True)


def _is_content_block(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def tool_error_result(message: str) -> dict[str, Any]:
    """A ``CallToolResult`` reporting a tool execution error."""
    return {"content": [text(message)], "isError": True}


def invalid_arguments_result(tool: Tool, problems: list[str]) -> dict[str, Any]:
    """The tool execution error for arguments that fail ``inputSchema``: actionable for a model."""
    listed = "\n".join(f"- {problem}" for problem in problems[:20])
    return tool_error_result(f"Invalid arguments for tool {tool.name!r}:\n{listed}")


# --- the methods -------------------------------------------------------------------------------


async def list_tools(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``tools/list``: one page of tools, in registration order."""
    return page_result(server.signer, "tools", list(server.tools.values()), params, "tools/list", server.page_size, _published)


def _published(tool: Tool) -> dict[str, Any]:
    """A tool's definition, once its schemas are known to be valid for their dialect (compiled once)."""
    try:
        tool.compile()
    except SchemaError as exc:
        raise InternalError(f"Tool {tool.name!r} has an invalid schema: {exc}") from None
    return tool.definition()


async def call_tool(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``tools/call``: find the tool, validate the arguments, run the handler, shape its result.
    -32602 for a malformed call or an unknown tool."""
    name = params.get("name")
    if not isinstance(name, str):
        raise InvalidParams('tools/call needs "name", a string')
    tool = server.tools.get(name)
    if tool is None:
        raise InvalidParams(f"Unknown tool: {clip(name)}", {"name": clip(name)})
    arguments = params.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidParams('tools/call "arguments" must be an object')
    problems = tool.argument_errors(arguments)
    if problems:
        return invalid_arguments_result(tool, problems)
    try:
        if tool.is_coroutine:  # (Server.invoke's first case, without the call)
            value = await tool.handler(ctx, arguments)
        else:
            value = await server.invoke(tool.handler, ctx, arguments)
    except ToolError as exc:
        return tool_error_result(str(exc) or type(exc).__name__)
    except (ProtocolError, InputRequired):
        raise  # raised on purpose: a protocol error, or an interim result
    except Exception as exc:
        if too_many_digits(exc):
            log.error("tool %r failed: %s", tool.name, exc)
            return tool_error_result(f"Tool {tool.name!r} failed: {TOO_MANY_DIGITS}.")
        log.error("tool %r failed", tool.name, exc_info=exc)
        return tool_error_result(f"Tool {tool.name!r} failed with an internal error; the details are in the server's log.")
    return tool.to_result(value)
