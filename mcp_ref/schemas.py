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
    import jsonschema
    from referencing.exceptions import Unresolvable

    check_bounds(schema)
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
