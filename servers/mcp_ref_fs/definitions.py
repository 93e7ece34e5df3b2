"""How a tool of mcp-ref-fs is defined: ``@tool(...)`` on its handler, and the schema pieces they share.

Each handler (:mod:`.tools`, :mod:`.walks`, :mod:`.writing`) carries its own definition, written
just above it: the name and title, the description a model reads, the input schema, the
annotations, and an output schema for the tools that answer ``structuredContent``. A handler
serving two names (``read_text_file`` and its deprecated alias ``read_file``) carries two.
:class:`.tools.FsTools` registers them all on the ``Server``, in the order of ``TOOL_ORDER``
(the order ``tools/list`` shows).
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

MAX_EDITS = 1000  # edits in one edit_file call
MAX_EXCLUDES = 64  # excludePatterns in one call
READ_ONLY = {"readOnlyHint": True, "openWorldHint": False}
PATH = {"type": "string", "description": "Absolute path, or relative to the first allowed directory"}
START = {"type": "integer", "minimum": 0, "default": 0,
         "description": "Entries to skip (0-based): the next page starts here (the note of a cut answer gives it)"}
INCLUDE_IGNORED = {"type": "boolean", "default": False,
                   "description": "Also show VCS metadata (.git...) and what .gitignore files exclude"}

# The order tools/list shows the tools in.
TOOL_ORDER = ("read_text_file", "read_file", "read_media_file", "read_multiple_files", "write_file", "edit_file",
              "create_directory", "list_directory", "list_directory_with_sizes", "directory_tree", "move_file",
              "search_files", "grep_files", "get_file_info", "list_allowed_directories", "delete_file")


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An input schema: an object of exactly these properties."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def output(**properties: Any) -> dict[str, Any]:
    """An outputSchema: always ``content`` (the text block, as the official server gives it) plus extras."""
    return {"type": "object", "properties": {"content": {"type": "string"}, **properties}, "required": ["content"]}


class Definition:
    """One tool as ``tools/list`` describes it. ``mutates``: refused under ``--read-only``;
    ``long_running``: may become a task (tasks extension) once it has run 0.1 s. (A plain class:
    a frozen dataclass costs ~0.5 ms of start-up to create.)"""

    __slots__ = ("name", "title", "description", "input_schema", "annotations", "output_schema", "mutates", "long_running")

    def __init__(self, name: str, title: str, description: str, input_schema: dict[str, Any], annotations: dict[str, Any],
                 output_schema: dict[str, Any] | None = None, mutates: bool = False, long_running: bool = False) -> None:
        self.name, self.title, self.description = name, title, description
        self.input_schema, self.annotations, self.output_schema = input_schema, annotations, output_schema
        self.mutates, self.long_running = mutates, long_running

    def __repr__(self) -> str:
        return f"Definition({self.name!r}, mutates={self.mutates}, long_running={self.long_running})"


def tool(name: str, title: str, description: str, input_schema: dict[str, Any], annotations: dict[str, Any],
         output_schema: dict[str, Any] | None = None, *, mutates: bool = False, long_running: bool = False) -> Callable[[F], F]:
    """Mark a handler ``async def handler(self, ctx, arguments)`` as the tool ``name``."""
    definition = Definition(name, title, description, input_schema, annotations, output_schema, mutates, long_running)

    def mark(handler: F) -> F:
        handler.__dict__.setdefault("tool_definitions", []).insert(0, definition)  # decorators apply bottom-up
        return handler

    return mark


def definitions(cls: type) -> list[tuple[Definition, str]]:
    """Every tool defined on ``cls`` and its bases, with its handler's attribute name, in ``TOOL_ORDER``."""
    found = {definition.name: (definition, attribute)
             for klass in reversed(cls.__mro__) for attribute, value in vars(klass).items()
             for definition in getattr(value, "tool_definitions", ())}
    return [found[name] for name in TOOL_ORDER if name in found]
