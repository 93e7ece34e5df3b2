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
``additionalProperties: false``, ``items``, bounds, string ``enum``s). For a 2020-12 schema made
only of those, ``compile_schema`` builds a plain-Python test (``_simple_check``) that gives the
same yes/no as the full validator at a fraction of the cost (a 200-entry listing: ~0.1 ms
instead of ~5 ms), and ``jsonschema`` is imported only when an instance fails it, to word the
errors. Any other keyword, or another dialect, goes to ``jsonschema`` from the start.
"""

from __future__ import annotations

from typing import Any, Callable

from .errors import clip

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
    raise NoSuchResource(ref=uri)


_registry = None


def _offline_registry() -> Any:
    global _registry
    if _registry is None:
        import referencing
        from jsonschema_specifications import REGISTRY as META_SCHEMAS

        _registry = META_SCHEMAS.combine(referencing.Registry(retrieve=_refuse_retrieval))
    return _registry


def compile_schema(schema: dict[str, Any]) -> Callable[[Any], list[str]]:
    """Check ``schema`` against its dialect and return a function listing the errors of an instance.

    Raises ``SchemaError`` when the schema itself is invalid, too large, or refers to something
    outside itself.
    """
    check_bounds(schema)
    passes = _simple_check(schema, root=True) if dialect_of(schema) == DEFAULT_DIALECT else None
    if passes is None:
        return _compile_full(schema)
    worded: list[Callable[[Any], list[str]]] = []

    def errors_of(instance: Any) -> list[str]:
        if passes(instance):
            return []
        if not worded:  # jsonschema says what is wrong, in its usual words
            worded.append(_compile_full(schema))
        return worded[0](instance)

    return errors_of


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

_MISSING = object()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# JSON Schema 2020-12 types as jsonschema's Draft202012 type checker defines them: a bool is not a
# number, and 1.0 is an integer.
_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "number": _is_number,
    "integer": lambda value: (isinstance(value, int) and not isinstance(value, bool))
    or (isinstance(value, float) and value.is_integer()),
}

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


def _simple_check(schema: Any, *, root: bool = False) -> Callable[[Any], bool] | None:
    """A plain-Python test of whether an instance is valid against ``schema`` (JSON Schema 2020-12),
    or None when the schema uses anything beyond the common keywords handled here.

    Only schemas that are valid for the 2020-12 meta-schema get a test, so refusing invalid
    schemas stays ``jsonschema``'s job. Each keyword's test ignores instances of the types it does
    not apply to, as the specification says (``required`` applies to objects only, and so on).
    """
    if not isinstance(schema, dict):
        return None
    checks: list[Callable[[Any], bool]] = []
    properties = schema.get("properties", {})
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            if not _ANNOTATIONS[key](value):
                return None
        elif key.startswith("x-") or (root and key == "$schema"):
            continue  # an extension annotation (e.g. x-mcp-header); the dialect (checked already)
        elif key == "type":
            if not isinstance(value, str) or value not in _TYPE_TESTS:
                return None
            checks.append(_TYPE_TESTS[value])
        elif key == "properties":
            if not isinstance(value, dict):
                return None
            tests = [(name, _simple_check(child)) for name, child in value.items()]
            if any(test is None for _name, test in tests):
                return None
            checks.append(_properties_check(tests))  # type: ignore[arg-type]
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(name, str) for name in value) or len(set(value)) != len(value):
                return None
            names = frozenset(value)
            checks.append(lambda instance, names=names: not isinstance(instance, dict) or instance.keys() >= names)
        elif key == "additionalProperties":
            if value is True:
                continue
            if value is not False or not isinstance(properties, dict):
                return None
            allowed = frozenset(properties)
            checks.append(lambda instance, allowed=allowed: not isinstance(instance, dict) or instance.keys() <= allowed)
        elif key == "items":
            test = _simple_check(value)
            if test is None:
                return None
            checks.append(lambda instance, test=test: not isinstance(instance, list) or all(map(test, instance)))
        elif key in ("minItems", "maxItems"):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                return None
            if key == "minItems":
                checks.append(lambda instance, n=value: not isinstance(instance, list) or len(instance) >= n)
            else:
                checks.append(lambda instance, n=value: not isinstance(instance, list) or len(instance) <= n)
        elif key in ("minimum", "maximum"):
            if not _is_number(value):
                return None
            if key == "minimum":
                checks.append(lambda instance, bound=value: not _is_number(instance) or instance >= bound)
            else:
                checks.append(lambda instance, bound=value: not _is_number(instance) or instance <= bound)
        elif key == "enum":
            # Strings only: Python's == would take True for 1 and 1.0 for 1, JSON Schema does not.
            if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
                return None
            members = frozenset(value)
            checks.append(lambda instance, members=members: isinstance(instance, str) and instance in members)
        else:
            return None  # $ref, anyOf, pattern, format, ...: jsonschema's job
    if len(checks) == 1:
        return checks[0]

    def passes(instance: Any) -> bool:
        for check in checks:
            if not check(instance):
                return False
        return True

    return passes


def _properties_check(tests: list[tuple[str, Callable[[Any], bool]]]) -> Callable[[Any], bool]:
    def properties(instance: Any) -> bool:
        if isinstance(instance, dict):
            for name, test in tests:
                value = instance.get(name, _MISSING)
                if value is not _MISSING and not test(value):
                    return False
        return True

    return properties


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
