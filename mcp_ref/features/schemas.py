"""JSON Schema use inside MCP: dialects, bounds, and no network ``$ref``.

Spec: basic/index#json-schema-usage. A schema without ``$schema`` is JSON Schema 2020-12. We also
support 2019-09, draft-07, draft-06 and draft-04 when a schema declares them, and reject any other
declared dialect with a clear error. ``$ref`` is resolved only inside the schema itself (``#...``,
``$defs``, ``$anchor``) and against the dialects' own meta-schemas: a ``$ref`` to a network URI is
never fetched, and a schema that needs one fails to validate instead of being treated as
permissive. Schemas are bounded in size and depth so a hostile schema cannot become a denial of
service.

``jsonschema`` is imported lazily (on first validation): it costs ~70 ms of start-up, and a
server answering ``server/discover`` does not need it.

Most tool schemas use a handful of keywords (``type``, ``properties``, ``required``,
``additionalProperties``, ``items``, counts and bounds, string ``enum``/``const``). For a 2020-12
schema made only of those (``_is_simple``), ``compile_schema`` writes a Python function specialised
to the schema (``_Compiler``) on first use, which gives the same yes/no as the full validator at a
fraction of the cost (a 200-entry listing: ~17 us, where jsonschema takes ~5 ms and a check made
of one closure per keyword took ~55 us), and ``jsonschema`` is imported only when an instance
fails it, to word the errors. Any other keyword, or another dialect, goes to ``jsonschema`` from
the start. ``tests/test_schema_fast_path.py`` checks the two agree, on generated schemas and
instances.
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.errors import clip

# Declared $schema URI (without a trailing "#", scheme-insensitive) -> jsonschema validator name.
DIALECTS: dict[str, str] = {
    "json-schema.org/draft/2020-12/schema": "Draft202012Validator",
    "json-schema.org/draft/2019-09/schema": "Draft201909Validator",
    "json-schema.org/draft-07/schema": "Draft7Validator",
    "json-schema.org/draft-06/schema": "Draft6Validator",
    "json-schema.org/draft-04/schema": "Draft4Validator",
}
DEFAULT_DIALECT = "Draft202012Validator"

MAX_SCHEMA_NODES = 10_000
MAX_SCHEMA_DEPTH = 64


class SchemaError(ValueError):
    """A schema we cannot accept: unsupported dialect, invalid for its dialect, or too large."""


def dialect_of(schema: dict[str, Any]) -> str:
    """The jsonschema validator class name for a schema's declared (or default) dialect."""
    declared = schema.get("$schema")
    if declared is None:
        return DEFAULT_DIALECT
    if not isinstance(declared, str):
        raise SchemaError("$schema must be a string")
    key = declared.split("://", 1)[-1].rstrip("#")
    try:
        return DIALECTS[key]
    except KeyError:
        supported = ", ".join(f"https://{d}" for d in DIALECTS)
        raise SchemaError(f"unsupported JSON Schema dialect {declared!r}; supported: {supported}") from None


def check_bounds(schema: Any) -> None:
    """Refuse schemas with more than ``MAX_SCHEMA_NODES`` values or deeper than ``MAX_SCHEMA_DEPTH``."""
    nodes = 0
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            raise SchemaError(f"schema has more than {MAX_SCHEMA_NODES} values")
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"schema is nested deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((child, depth + 1) for child in value.values())
        elif isinstance(value, list):
            stack.extend((child, depth + 1) for child in value)


def _refuse_retrieval(uri: str) -> Any:
    from referencing.exceptions import NoSuchResource

    # Never dereference a $ref that points outside the schema (basic/index#ref-resolution).
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # (an attrs class: mypy does not see its generated __init__)


_registry = None


def _offline_registry() -> Any:
    global _registry
    if _registry is None:
        import referencing
        from jsonschema_specifications import REGISTRY as META_SCHEMAS

        _registry = META_SCHEMAS.combine(referencing.Registry(retrieve=_refuse_retrieval))  # type: ignore[call-arg]  # (an attrs class: mypy does not see its generated __init__)
    return _registry


def compile_schema(schema: dict[str, Any]) -> SchemaCheck:
    """Check ``schema`` against its dialect and return its ``SchemaCheck``: called with an
    instance, the list of its errors (empty when it conforms).

    Raises ``SchemaError`` when the schema itself is invalid, too large, or refers to something
    outside itself.
    """
    check_bounds(schema)
    if dialect_of(schema) != DEFAULT_DIALECT or not _is_simple(schema, root=True):
        return SchemaCheck(schema, _compile_full(schema))
    return SchemaCheck(schema)


class SchemaCheck:
    """A compiled schema. ``check(instance)`` lists the instance's errors, in jsonschema's words;
    ``check.accepts(instance)`` only says whether it conforms. For a simple schema, ``accepts`` is
    the generated function itself once it is written (on first use, ~0.1 ms a schema: a tools/list
    that validates every tool's schemas, or a tool never called, does not pay for it), so a
    conforming instance costs one call of generated code and nothing of this module."""

    __slots__ = ("schema", "accepts", "_simple", "_worded")

    def __init__(self, schema: dict[str, Any], worded: Callable[[Any], list[str]] | None = None) -> None:
        self.schema = schema
        self._simple = worded is None
        self._worded = worded  # jsonschema's check (made now for a schema not simple, else when first needed)
        self.accepts: Callable[[Any], bool] = self._write_check if worded is None else self._no_errors

    def __call__(self, instance: Any) -> list[str]:
        if self._simple and self.accepts(instance):
            return []
        if self._worded is None:  # jsonschema says what is wrong, in its usual words
            self._worded = _compile_full(self.schema)
        return self._worded(instance)

    def _write_check(self, instance: Any) -> bool:
        self.accepts = _compile_simple(self.schema)  # from now on, called directly
        return self.accepts(instance)

    def _no_errors(self, instance: Any) -> bool:
        assert self._worded is not None
        return not self._worded(instance)


def _compile_full(schema: dict[str, Any]) -> Callable[[Any], list[str]]:
    """``compile_schema`` through ``jsonschema``: every dialect and keyword, errors in words."""
    import jsonschema
    from referencing.exceptions import Unresolvable

    validator_class = getattr(jsonschema, dialect_of(schema))
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaError(f"invalid schema: {exc.message}") from None
    registry = _offline_registry()
    _check_references(schema, registry, Unresolvable)
    validator = validator_class(schema, registry=registry, format_checker=validator_class.FORMAT_CHECKER)

    def errors_of(instance: Any) -> list[str]:
        try:
            found = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        except Unresolvable as exc:
            raise SchemaError(f"schema refers to something it does not contain: {exc}") from None
        return [_describe(error) for error in found]

    return errors_of


# --- the fast path for simple schemas --------------------------------------------------------------
#
# A simple schema is compiled once into the source of a Python function that tests an instance with
# inline statements (``isinstance``, ``in``, ``len``, comparisons) and ``return False`` at the first
# keyword it fails. Arrays are checked by a ``for`` loop over their items with the item schema's
# statements inlined, so a 200-entry listing costs ~0.1 us an entry instead of a call per keyword.
# Every value taken from the schema enters the source either through ``repr`` of a ``str`` (always
# a valid literal) or as a named constant of the function's namespace, never as text of its own.

_MISSING = object()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# JSON Schema 2020-12 types as jsonschema's Draft202012 type checker defines them, written as
# expressions on an instance "{0}": a bool is not a number, and 1.0 is an integer.
_TYPE_EXPRESSIONS: dict[str, str] = {
    "object": "isinstance({0}, dict)",
    "array": "isinstance({0}, list)",
    "string": "isinstance({0}, str)",
    "boolean": "isinstance({0}, bool)",
    "null": "{0} is None",
    "number": "(type({0}) is int or type({0}) is float or _number({0}))",  # the common types inline, then the rule
    "integer": "(type({0}) is int or _integer({0}))",
}


def _is_integer(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())

# Annotations: they never fail an instance; their value must still be valid for the meta-schema.
_ANNOTATIONS: dict[str, Callable[[Any], bool]] = {
    "title": lambda value: isinstance(value, str),
    "description": lambda value: isinstance(value, str),
    "$comment": lambda value: isinstance(value, str),
    "default": lambda value: True,
    "examples": lambda value: isinstance(value, list),
    "deprecated": lambda value: isinstance(value, bool),
    "readOnly": lambda value: isinstance(value, bool),
    "writeOnly": lambda value: isinstance(value, bool),
}


def _count(value: Any) -> bool:
    """A non-negative integer (``minItems``, ``maxLength``, ...): an ``int``, as most schemas write it."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# The keywords of each kind of instance (they ignore instances of other types), with the types
# they apply to.
_COUNTS = {"minItems": "array", "maxItems": "array", "minLength": "string", "maxLength": "string",
           "minProperties": "object", "maxProperties": "object"}
_BOUNDS = {"minimum": "<", "maximum": ">", "exclusiveMinimum": "<=", "exclusiveMaximum": ">="}  # fails when instance OP bound
_KINDS: dict[str, frozenset[str]] = {
    "object": frozenset({"object"}), "array": frozenset({"array"}), "string": frozenset({"string"}),
    "number": frozenset({"number", "integer"}),
}
_NUMBER_GUARD = "_number({0})"
_KIND_OF = {"properties": "object", "required": "object", "additionalProperties": "object", "items": "array",
            **_COUNTS, **{key: "number" for key in _BOUNDS}}


def _is_simple(schema: Any, root: bool = False) -> bool:
    """Whether ``schema`` is valid for the 2020-12 meta-schema and made only of the keywords the
    compiled check handles (booleans are schemas too, except at the root)."""
    if isinstance(schema, bool):
        return not root
    if not isinstance(schema, dict):
        return False
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            if not _ANNOTATIONS[key](value):
                return False
        elif key.startswith("x-") or (root and key == "$schema"):
            continue  # an extension annotation (e.g. x-mcp-header); the dialect (checked already)
        elif key == "type":
            names = value if isinstance(value, list) else [value]
            if not names or not all(isinstance(name, str) and name in _TYPE_EXPRESSIONS for name in names):
                return False
            if len(set(names)) != len(names):
                return False
        elif key == "properties":
            if not isinstance(value, dict) or not all(_is_simple(child) for child in value.values()):
                return False
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(name, str) for name in value) or len(set(value)) != len(value):
                return False
        elif key in ("additionalProperties", "items"):
            if not _is_simple(value):
                return False
        elif key in _COUNTS:
            if not _count(value):
                return False
        elif key in _BOUNDS:
            if not _is_number(value):
                return False
        elif key == "enum":
            # Strings only: Python's == would take True for 1 and 1.0 for 1, JSON Schema does not.
            if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
                return False
        elif key == "const":
            if not isinstance(value, str):
                return False
        else:
            return False  # $ref, anyOf, pattern, format, ...: jsonschema's job
    return True


class _Compiler:
    """Writes the source of the check of one simple schema: functions of one argument that
    return False as soon as a keyword fails and True at the end."""

    MAX_LOOPS = 10  # nested ``for`` blocks in one function (Python allows 20)
    MAX_INDENT = 40  # indentation levels in one function (Python allows 100)

    def __init__(self) -> None:
        self.functions: list[str] = []
        self.namespace: dict[str, Any] = {"_M": _MISSING, "_number": _is_number, "_integer": _is_integer}
        self.counter = 0

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def constant(self, value: Any) -> str:
        name = self.name("_c")
        self.namespace[name] = value
        return name

    def function(self, schema: Any) -> str:
        name = self.name("_f")
        lines = [f"def {name}(x0):"]
        self.statements(schema, "x0", lines, 1, 0)
        lines.append("    return True")
        self.functions.append("\n".join(lines))
        return name

    def statements(self, schema: Any, x: str, out: list[str], indent: int, loops: int) -> None:
        """Append to ``out`` the statements that return False when ``x`` fails ``schema``."""
        pad = "    " * indent
        if schema is True:
            return
        if schema is False:
            out.append(f"{pad}return False")
            return
        types: frozenset[str] | None = None
        if "type" in schema:
            value = schema["type"]
            types = frozenset(value if isinstance(value, list) else [value])
            if "number" in types:
                types -= {"integer"}
            tests = " or ".join(_TYPE_EXPRESSIONS[name].format(x) for name in sorted(types))
            out.append(f"{pad}if not ({tests}): return False")
            if "integer" in types:
                types |= {"number"}  # for the kinds below: an integer is a number
        if "enum" in schema:
            members = self.constant(frozenset(schema["enum"]))
            out.append(f"{pad}if not (isinstance({x}, str) and {x} in {members}): return False")
        if "const" in schema:
            out.append(f"{pad}if not (isinstance({x}, str) and {x} == {schema['const']!r}): return False")
        for kind, kind_types in _KINDS.items():
            keys = [key for key in schema if _KIND_OF.get(key) == kind]
            if not keys or (types is not None and not types & kind_types):
                continue  # no keyword of this kind, or the type test already refused such instances
            block: list[str] = []
            inner = indent if types is not None and types <= kind_types else indent + 1
            getattr(self, f"_{kind}")(schema, x, block, inner, loops)
            if not block:
                continue
            if inner > indent:
                out.append(f"{pad}if {(_NUMBER_GUARD if kind == 'number' else _TYPE_EXPRESSIONS[kind]).format(x)}:")
            out.extend(block)

    def _counts(self, schema: Any, x: str, out: list[str], pad: str, kind: str) -> None:
        for key, applies_to in _COUNTS.items():
            if key in schema and applies_to == kind:
                out.append(f"{pad}if len({x}) {'<' if key.startswith('min') else '>'} {schema[key]!r}: return False")

    def _string(self, schema: Any, x: str, out: list[str], indent: int, loops: int) -> None:
        self._counts(schema, x, out, "    " * indent, "string")

    def _number(self, schema: Any, x: str, out: list[str], indent: int, loops: int) -> None:
        pad = "    " * indent
        for key, fails in _BOUNDS.items():
            if key in schema:  # the comparison jsonschema makes (so a NaN fails nothing)
                out.append(f"{pad}if {x} {fails} {self.constant(schema[key])}: return False")

    def _array(self, schema: Any, x: str, out: list[str], indent: int, loops: int) -> None:
        pad = "    " * indent
        self._counts(schema, x, out, pad, "array")
        items = schema.get("items", True)
        if items is False:
            out.append(f"{pad}if {x}: return False")
        elif items is not True:
            self._each(items, f"for {{0}} in {x}:", x, out, indent, loops)

    def _each(self, schema: Any, loop: str, x: str, out: list[str], indent: int, loops: int, skip: str | None = None) -> None:
        """A ``for`` loop checking each value against ``schema`` inline (or through a function of
        its own once this one nests too deep); ``skip`` names a set of keys the loop passes over."""
        pad = "    " * indent
        item = self.name("x")
        body: list[str] = []
        if skip is not None:
            body.append(f"{pad}    if {skip}: continue")
        if loops + 1 >= self.MAX_LOOPS or indent + 1 >= self.MAX_INDENT:
            body.append(f"{pad}    if not {self.function(schema)}({item}): return False")
        else:
            before = len(body)
            self.statements(schema, item, body, indent + 1, loops + 1)
            if len(body) == before:
                return  # nothing to check on an item
        out.append(pad + loop.format(item))
        out.extend(body)

    def _object(self, schema: Any, x: str, out: list[str], indent: int, loops: int) -> None:
        pad = "    " * indent
        self._counts(schema, x, out, pad, "object")
        required = schema.get("required", [])
        if len(required) <= 6:
            for name in required:
                out.append(f"{pad}if {name!r} not in {x}: return False")
        else:
            out.append(f"{pad}if not {x}.keys() >= {self.constant(frozenset(required))}: return False")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if extra is False:
            if not properties:
                out.append(f"{pad}if {x}: return False")
            elif set(required) >= set(properties):
                out.append(f"{pad}if len({x}) > {len(properties)}: return False")  # all of them are present
            else:
                out.append(f"{pad}if not {x}.keys() <= {self.constant(frozenset(properties))}: return False")
        elif extra is not True:
            key = self.name("k")
            known = self.constant(frozenset(properties))
            self._each(extra, f"for {key}, {{0}} in {x}.items():", x, out, indent, loops, skip=f"{key} in {known}")
        for name, child in properties.items():
            if child is True:
                continue
            if child is False:
                out.append(f"{pad}if {name!r} in {x}: return False")
                continue
            value = self.name("x")
            if name in required:  # present: tested above
                block = [f"{pad}{value} = {x}[{name!r}]"]
                inner = indent
            else:
                block = [f"{pad}{value} = {x}.get({name!r}, _M)", f"{pad}if {value} is not _M:"]
                inner = indent + 1
            before = len(block)
            if inner >= self.MAX_INDENT:
                block.append(f"{'    ' * inner}if not {self.function(child)}({value}): return False")
            else:
                self.statements(child, value, block, inner, loops)
            if len(block) > before:
                out.extend(block)


def _simple_check(schema: Any, *, root: bool = False) -> Callable[[Any], bool] | None:
    """A plain-Python test of whether an instance is valid against ``schema`` (JSON Schema 2020-12),
    or None when the schema uses anything beyond the common keywords handled here.

    Only schemas that are valid for the 2020-12 meta-schema get a test, so refusing invalid
    schemas stays ``jsonschema``'s job. Each keyword's test ignores instances of the types it does
    not apply to, as the specification says (``required`` applies to objects only, and so on).
    """
    if not _is_simple(schema, root=root):
        return None
    return _compile_simple(schema)


def _compile_simple(schema: Any) -> Callable[[Any], bool]:
    """The compiled check of a schema ``_is_simple`` accepted."""
    compiler = _Compiler()
    name = compiler.function(schema)
    namespace = compiler.namespace
    exec(compile("\n\n".join(compiler.functions), "<mcp_ref.features.schemas check>", "exec"), namespace)  # noqa: S102 - no schema text in the source (see above)
    check: Callable[[Any], bool] = namespace[name]
    return check


def _check_references(schema: dict[str, Any], registry: Any, unresolvable: type[Exception]) -> None:
    """Resolve every ``$ref`` now, so a schema that points outside itself is rejected up front
    instead of failing only for the arguments that happen to reach the reference."""
    from referencing.jsonschema import specification_with

    specification = specification_with(schema.get("$schema", "https://json-schema.org/draft/2020-12/schema"))
    resource = specification.create_resource(schema)
    base = resource.id() or ""
    resolver = registry.with_resource(base, resource).resolver(base_uri=base)
    stack: list[Any] = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if value is not schema and isinstance(value.get("$id"), str):
                continue  # a nested resource with its own base URI: resolved by the validator itself
            reference = value.get("$ref")
            if isinstance(reference, str):
                try:
                    resolver.lookup(reference)
                except unresolvable as exc:
                    raise SchemaError(f"$ref {reference!r} cannot be resolved inside the schema (network references are never fetched): {exc}") from None
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def _describe(error: Any) -> str:
    # Messages quote the offending value (client input): keep a short prefix of each part.
    where = clip("/".join(str(part) for part in error.absolute_path), 100)
    return f"{where or '(root)'}: {clip(error.message, 300)}"
