"""Typed tools: a tool's JSON Schemas derived from its handler's Python annotations.

Spec: server/tools (``inputSchema``, ``outputSchema``, ``structuredContent``).

Theory of operation
-------------------
``@server.tool()`` accepts two forms of handler, told apart by ``is_classic``:

* **classic**: ``handler(ctx, arguments)`` gets the validated arguments as one dict. A handler
  is classic when it takes exactly one parameter after ``ctx`` and that parameter either has
  no annotation (whatever its name), or is named ``arguments`` or ``args`` and is annotated
  with a mapping type (``dict``, ``dict[str, ...]``, ``Mapping``, a ``TypedDict``, ``Any``) or
  with an annotation that cannot be resolved. A ``*args`` parameter is classic too.
* **typed**: anything else, e.g. ``def add(ctx, a: int, b: int = 0) -> int``. Every parameter
  after ``ctx`` is one property of the ``inputSchema``: annotated, passed by keyword, required
  unless it has a default (a JSON-representable default is shown as ``default``). A handler
  taking only ``ctx`` takes no arguments.

``derive`` does the work once, at registration: it resolves the annotations (strings too, as
``from __future__ import annotations`` leaves them, from the handler's module and closure),
builds the schemas with ``schema_for`` and returns a ``TypedHandler`` whose ``call`` is a
classic handler (a coroutine function when the handler is one, so ``Server.invoke`` still runs
plain functions on the handler pool). On each call, ``call`` converts the validated JSON
arguments to what the annotations promise (an ``Enum`` member, a dataclass instance, a
``float`` for an integer given to a ``float`` parameter) and calls the handler with keyword
arguments; what the handler returns goes through ``to_json`` (dataclasses become objects,
enums their values, tuples arrays). An annotation that has no JSON Schema (``set``, ``bytes``,
a plain class, ``dict[int, str]``) is a ``ValueError`` naming the parameter.

The return annotation gives the ``outputSchema``, and what the handler returns becomes
``structuredContent`` (plus the same JSON as a text block, as for any tool with an
``outputSchema``), except for ``str``, ``None``, ``Any``, ``dict``/``list`` of unspecified
JSON, ``ToolResult`` and no annotation at all: those keep the classic shaping of a return
value (text, content blocks, a ``ToolResult``...).

Descriptions come from ``Annotated[int, "the first number"]`` (a string; a dict in
``Annotated`` is merged into the schema, e.g. ``{"minimum": 0}``), or from an ``Args:``
section of the docstring (``name: text`` or ``name (type): text``, continuation lines indented
deeper). ``Annotated`` wins where both describe a parameter.

Everything here uses the standard library (``inspect``, ``typing``, ``dataclasses``, ``enum``).
``mcp_ref.server`` imports this module when a tool is registered (``is_classic`` decides the
form), so importing it must stay cheap for every server, typed or not: ``inspect`` and
``typing`` are loaded by ``asyncio`` anyway, ``dataclasses`` is imported where it is used, and
nothing is built at import but a few constants (no dataclass, no compiled pattern; ``re``
caches the docstring pattern on first use). A typed tool's schemas are derived once, at
registration (tens of microseconds for a small handler); calls only convert arguments.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from typing import Any, Callable

__all__ = ["TypedHandler", "derive", "is_classic", "schema_for", "to_json"]

CLASSIC_NAMES = ("arguments", "args")

_DOC_SECTIONS = ("Args:", "Arguments:", "Parameters:")
_DOC_ENTRY = r"(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)"  # "name: text" or "name (type): text"


class _Inexpressible(Exception):
    """An annotation with no JSON Schema (turned into a ValueError naming the parameter)."""


class TypedHandler:
    """What ``derive`` makes of a typed handler: a classic ``call(ctx, arguments)`` and the schemas.

    (A plain class, not a dataclass: this module is imported by every server that has a tool.)
    """

    __slots__ = ("call", "input_schema", "output_schema")

    def __init__(self, call: Callable[..., Any], input_schema: dict[str, Any], output_schema: dict[str, Any] | None) -> None:
        self.call = call
        self.input_schema = input_schema
        self.output_schema = output_schema

    def __repr__(self) -> str:
        return f"TypedHandler(call={self.call!r}, input_schema={self.input_schema!r}, output_schema={self.output_schema!r})"


# --- telling the forms apart ------------------------------------------------------------------


def _signature(handler: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(handler)
    except (TypeError, ValueError):  # a builtin or an odd callable: assume the classic form
        return None


def is_classic(handler: Callable[..., Any]) -> bool:
    """Is ``handler`` a classic ``(ctx, arguments)`` tool handler? See the module docstring for the rule."""
    signature = _signature(handler)
    if signature is None:
        return True
    parameters = list(signature.parameters.values())
    if parameters and parameters[0].kind is parameters[0].VAR_POSITIONAL:
        return True  # (*args): takes (ctx, arguments) like any classic handler
    rest = parameters[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in rest) and all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in rest):
        return True
    if len(rest) != 1 or rest[0].kind not in (rest[0].POSITIONAL_ONLY, rest[0].POSITIONAL_OR_KEYWORD):
        return False
    parameter = rest[0]
    if parameter.annotation is inspect.Parameter.empty:
        return True
    if parameter.name not in CLASSIC_NAMES:
        return False
    try:
        annotation = _resolve(handler, parameter.annotation)
    except Exception:
        return True  # unresolvable, as it always was for classic handlers: keep them working
    return _is_mapping(annotation)


def _is_mapping(annotation: Any) -> bool:
    import collections.abc

    if annotation is Any:
        return True
    base = typing.get_origin(annotation) or annotation
    if base is typing.Annotated:
        return _is_mapping(typing.get_args(annotation)[0])
    if typing.is_typeddict(annotation):
        return True
    return isinstance(base, type) and (issubclass(base, dict) or base is collections.abc.Mapping or base is collections.abc.MutableMapping)


def _resolve(handler: Callable[..., Any], annotation: Any) -> Any:
    """An annotation as an object: strings are evaluated in the handler's module and closure."""
    if not isinstance(annotation, str):
        return annotation
    function = inspect.unwrap(handler)
    function = getattr(function, "__func__", function)  # bound methods
    namespace = dict(getattr(function, "__globals__", {}))
    code = getattr(function, "__code__", None)
    if code is not None and getattr(function, "__closure__", None):
        for name, cell in zip(code.co_freevars, function.__closure__):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
    return eval(annotation, namespace)  # noqa: S307 (the author's own annotation, as typing.get_type_hints does)


# --- schemas --------------------------------------------------------------------------------------


def schema_for(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of a Python annotation.

    Supported: ``int``, ``float``, ``str``, ``bool``, ``None``, ``Any``, ``list[X]``,
    ``tuple[X, ...]`` and ``tuple[X, Y]``, ``dict[str, X]``, ``Literal[...]``, ``X | Y`` and
    ``Optional[X]``, ``Enum`` subclasses (of JSON scalar values), ``TypedDict``s and dataclasses
    (inline, not recursive), and ``Annotated[X, "description"]`` / ``Annotated[X, {schema}]``.
    Raises ``ValueError`` for anything else.
    """
    try:
        return _schema(annotation, ())
    except _Inexpressible as exc:
        raise ValueError(str(exc)) from None


def _json_type(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _enum_schema(values: list[Any], what: str) -> dict[str, Any]:
    kinds = {_json_type(value) for value in values}
    if None in kinds:
        raise _Inexpressible(f"{what} has values that are not JSON strings, numbers, booleans or null")
    schema: dict[str, Any] = {"enum": values}
    if len(kinds) == 1:
        schema = {"type": kinds.pop(), **schema}
    return schema


def _schema(annotation: Any, seen: tuple[Any, ...]) -> dict[str, Any]:
    import collections.abc
    import dataclasses
    import enum

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any:
        return {}
    if origin is typing.Annotated:
        schema = _schema(args[0], seen)
        for extra in args[1:]:
            if isinstance(extra, str):
                schema["description"] = extra
            elif isinstance(extra, dict):
                schema.update(extra)
        return schema
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(annotation)
    if simple is not None:
        return {"type": simple}
    if origin is typing.Union or origin is types.UnionType:
        members = [member for member in args if member is not type(None)]
        nullable = len(members) < len(args)
        schemas = [_schema(member, seen) for member in members]
        if nullable and len(schemas) == 1 and set(schemas[0]) == {"type"} and isinstance(schemas[0]["type"], str):
            return {"type": [schemas[0]["type"], "null"]}
        if nullable:
            schemas.append({"type": "null"})
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    if origin is typing.Literal:
        return _enum_schema(list(args), f"Literal{list(args)!r}")
    if annotation in (list, tuple, collections.abc.Sequence):
        return {"type": "array"}
    if origin in (list, collections.abc.Sequence):
        return {"type": "array", "items": _schema(args[0], seen)}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], seen)}
        if args == ((),) or not args:
            return {"type": "array", "maxItems": 0}
        items = [_schema(member, seen) for member in args]
        return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items), "maxItems": len(items)}
    if annotation in (dict, collections.abc.Mapping):
        return {"type": "object"}
    if origin in (dict, collections.abc.Mapping):
        if args[0] is not str:
            raise _Inexpressible(f"{_name(annotation)}: JSON object keys are strings, so only dict[str, ...] can be expressed")
        values = _schema(args[1], seen)
        return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_schema([member.value for member in annotation], f"enum {annotation.__name__}")
    if typing.is_typeddict(annotation) or (isinstance(annotation, type) and dataclasses.is_dataclass(annotation)):
        if annotation in seen:
            raise _Inexpressible(f"{annotation.__name__} refers to itself; recursive types cannot be expressed")
        return _object_schema(annotation, (*seen, annotation))
    if origin in (typing.Required, typing.NotRequired):
        return _schema(args[0], seen)
    raise _Inexpressible(f"{_name(annotation)} cannot be expressed as JSON Schema")


def _name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) if isinstance(annotation, type) else repr(annotation)  # type: ignore[return-value]


def _object_schema(cls: type, seen: tuple[Any, ...]) -> dict[str, Any]:
    import dataclasses

    hints = typing.get_type_hints(cls, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    if typing.is_typeddict(cls):
        required_keys = cls.__required_keys__  # type: ignore[attr-defined]
        for name, hint in hints.items():
            properties[name] = _schema(hint, seen)
            # Under ``from __future__ import annotations`` Python 3.11 cannot see NotRequired in
            # __required_keys__, so the resolved hint decides where it says.
            wrapper = typing.get_origin(hint)
            if wrapper is typing.Required or (wrapper is not typing.NotRequired and name in required_keys):
                required.append(name)
    else:
        for item in dataclasses.fields(cls):
            if not item.init:
                continue
            properties[item.name] = _schema(hints[item.name], seen)
            if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
                required.append(item.name)
            elif item.default is not dataclasses.MISSING:
                _add_default(properties[item.name], item.default)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _add_default(schema: dict[str, Any], default: Any) -> None:
    value = to_json(default)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return  # not JSON: the handler's default still applies, the schema just does not show it
    schema["default"] = value


# --- values in and out ----------------------------------------------------------------------------


_JSON_SCALARS = (str, int, float, bool)


def to_json(value: Any) -> Any:
    """A handler's return value as JSON: dataclasses become objects, enums their values, tuples arrays."""
    if value is None or type(value) in _JSON_SCALARS:  # the common case, on every call: no imports, no walk
        return value
    import dataclasses
    import enum

    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {item.name: to_json(getattr(value, item.name)) for item in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    return value


Converter = Callable[[Any], Any]


def _converter(annotation: Any) -> Converter | None:
    """How to turn a validated JSON value into what ``annotation`` promises (None: as it is)."""
    import dataclasses
    import enum

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Annotated, typing.Required, typing.NotRequired):
        return _converter(args[0])
    if annotation is float:
        return lambda value: float(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if origin is typing.Union or origin is types.UnionType:
        members = [member for member in args if member is not type(None)]
        inner = _converter(members[0]) if len(members) == 1 else None
        if inner is None:
            return None
        return lambda value: None if value is None else inner(value)
    if origin is list or origin is tuple:
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            each = [_converter(member) for member in args]
            return lambda value: tuple(c(v) if c else v for c, v in zip(each, value))
        element = _converter(args[0]) if args else None
        if element is None:
            return (lambda value: tuple(value)) if origin is tuple else None
        convert_element = element
        if origin is tuple:
            return lambda value: tuple(convert_element(v) for v in value)
        return lambda value: [convert_element(v) for v in value]
    if origin is dict and len(args) == 2:
        member = _converter(args[1])
        if member is None:
            return None
        convert_member = member
        return lambda value: {k: convert_member(v) for k, v in value.items()}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return annotation
    is_dataclass = isinstance(annotation, type) and dataclasses.is_dataclass(annotation)
    if is_dataclass or typing.is_typeddict(annotation):
        hints = typing.get_type_hints(annotation, include_extras=True)
        found = {name: _converter(hint) for name, hint in hints.items()}
        fields = {name: convert for name, convert in found.items() if convert is not None}

        def build(value: dict[str, Any]) -> Any:
            converted = {k: (fields[k](v) if k in fields else v) for k, v in value.items()}
            return annotation(**converted) if is_dataclass else converted

        return build
    return None


# --- the handler ----------------------------------------------------------------------------------


def _doc_descriptions(handler: Callable[..., Any]) -> dict[str, str]:
    """``{parameter: description}`` from an ``Args:`` section of the handler's docstring."""
    doc = inspect.getdoc(handler) or ""
    lines = doc.splitlines()
    found: dict[str, str] = {}
    start = next((index for index, line in enumerate(lines) if line.strip() in _DOC_SECTIONS), None)
    if start is None:
        return found
    header_indent = len(lines[start]) - len(lines[start].lstrip())
    entry_indent: int | None = None
    current: str | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= header_indent:
            break
        if entry_indent is None:
            entry_indent = indent
        match = re.fullmatch(_DOC_ENTRY, line.strip())
        if indent == entry_indent and match:
            current = match.group(1)
            found[current] = match.group(2).strip()
        elif indent > entry_indent and current is not None:
            found[current] = f"{found[current]} {line.strip()}".strip()
        else:
            break
    return found


def _shapes_output(annotation: Any) -> bool:
    """Does this return annotation give an ``outputSchema``? (Text, content and ToolResult returns do not.)"""
    from ..features.tools import ToolResult

    if annotation is inspect.Signature.empty or annotation in (str, None, type(None), Any, dict, list, ToolResult):
        return False
    if annotation == typing.Optional[str] or annotation == dict[str, Any] or annotation == list[dict[str, Any]]:
        return False
    return True


def derive(handler: Callable[..., Any], tool_name: str) -> TypedHandler:
    """The schemas and the classic adapter of a typed handler. ``ValueError`` names what cannot be expressed."""
    signature = inspect.signature(handler)
    parameters = list(signature.parameters.values())
    where = f"tool {tool_name!r}"
    if not parameters or parameters[0].kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        raise ValueError(f"{where}: the handler's first parameter must be the request context (ctx), taken positionally")
    described = _doc_descriptions(handler)
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, Converter] = {}
    for parameter in parameters[1:]:
        label = f"{where}: parameter {parameter.name!r}"
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD, parameter.POSITIONAL_ONLY):
            raise ValueError(f"{label}: a typed handler takes keyword parameters only (no *args, **kwargs or positional-only)")
        if parameter.annotation is parameter.empty:
            raise ValueError(f"{label} has no annotation; a typed handler annotates every parameter after ctx")
        try:
            annotation = _resolve(handler, parameter.annotation)
            schema = _schema(annotation, ())
        except _Inexpressible as exc:
            raise ValueError(f"{label}: {exc}") from None
        except Exception as exc:  # NameError and friends from a string annotation
            raise ValueError(f"{label}: cannot resolve the annotation {parameter.annotation!r}: {exc}") from None
        if "description" not in schema and parameter.name in described:
            schema["description"] = described[parameter.name]
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        else:
            _add_default(schema, parameter.default)
        properties[parameter.name] = schema
        convert = _converter(annotation)
        if convert is not None:
            converters[parameter.name] = convert
    input_schema: dict[str, Any] = {"type": "object"}
    if properties:
        input_schema["properties"] = properties
    if required:
        input_schema["required"] = required
    input_schema["additionalProperties"] = False

    output_schema: dict[str, Any] | None = None
    returns = signature.return_annotation
    try:
        returns = _resolve(handler, returns)
    except Exception as exc:
        raise ValueError(f"{where}: cannot resolve the return annotation {returns!r}: {exc}") from None
    if _shapes_output(returns):
        try:
            output_schema = _schema(returns, ())
        except _Inexpressible as exc:
            raise ValueError(f"{where}: return annotation: {exc}") from None
    return TypedHandler(_adapter(handler, converters), input_schema, output_schema)


def _adapter(handler: Callable[..., Any], converters: dict[str, Converter]) -> Callable[..., Any]:
    from ..features.tools import ToolResult

    def keywords(arguments: dict[str, Any]) -> dict[str, Any]:
        if not converters:  # JSON already is what the annotations promise (str, int, list[str], ...)
            return arguments
        return {name: (converters[name](value) if name in converters else value) for name, value in arguments.items()}

    def shaped(value: Any) -> Any:
        return value if isinstance(value, ToolResult) else to_json(value)

    if inspect.iscoroutinefunction(handler):

        async def call(ctx: Any, arguments: dict[str, Any]) -> Any:
            return shaped(await handler(ctx, **keywords(arguments)))

    else:

        def call(ctx: Any, arguments: dict[str, Any]) -> Any:  # type: ignore[misc]
            return shaped(handler(ctx, **keywords(arguments)))

    call.__name__ = getattr(handler, "__name__", "typed_tool")
    call.__qualname__ = getattr(handler, "__qualname__", call.__name__)
    call.__doc__ = handler.__doc__
    call.__wrapped__ = handler  # type: ignore[attr-defined]
    return call
