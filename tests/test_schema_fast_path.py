"""The plain-Python check ``schemas.compile_schema`` uses for simple schemas must agree with
``jsonschema`` (which it stands in for on the hot path) on every instance: checked here on
many random instances of many schemas, from a fixed seed."""

from __future__ import annotations

import random
from typing import Any

import jsonschema
import pytest

from mcp_ref import schemas

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]},
    {"type": "object", "properties": {"n": {"type": "number", "minimum": 0, "maximum": 10}}, "additionalProperties": False},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}}},
    {"type": "object", "properties": {"kind": {"type": "string", "enum": ["file", "directory", "symlink"]}}, "required": ["kind"]},
    {"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 4}, "f": {"type": "boolean"}}},
    {"type": "object", "properties": {"entries": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "size": {"type": "integer", "minimum": 0}}, "required": ["name"], "additionalProperties": False}}}},
    {"type": "object", "properties": {"x": {"type": ["integer", "null"]}, "y": {"type": "number", "exclusiveMinimum": 1}}},
    {"type": "object"},
]
ATOMS: list[Any] = [None, True, False, 0, 1, -1, 2, 3.5, 1.0, 10, 11, -0.5, float(2**60), "", "a", "ab", "abcd", "abcde",
                    "file", "other", [], ["x"], ["x", "y", "z", "w"], [1], {}, {"name": "n"}, {"name": "n", "size": -1},
                    {"name": "n", "size": 3}, {"name": 1}, {"size": 2}, {"name": "n", "extra": 1}]
KEYS = ["a", "b", "n", "tags", "kind", "s", "f", "entries", "x", "y", "z"]


def _instance(rng: random.Random, depth: int = 0) -> Any:
    if depth < 2 and rng.random() < 0.6:
        return {key: (_instance(rng, depth + 1) if rng.random() < 0.3 else rng.choice(ATOMS))
                for key in rng.sample(KEYS, rng.randint(0, 4))}
    if depth < 2 and rng.random() < 0.2:
        return [rng.choice(ATOMS) for _ in range(rng.randint(0, 4))]
    return rng.choice(ATOMS)


def test_most_of_these_schemas_take_the_fast_path() -> None:
    assert sum(schemas._simple_check(schema, root=True) is not None for schema in SCHEMAS) >= 5


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_the_fast_check_agrees_with_jsonschema(index: int) -> None:
    schema = SCHEMAS[index]
    fast = schemas._simple_check(schema, root=True)
    if fast is None:  # beyond the fast path: jsonschema itself checks it
        assert schemas.compile_schema(schema)(_instance(random.Random(index))) is not None
        return
    reference = jsonschema.Draft202012Validator(schema)
    rng = random.Random(index)
    for _ in range(4000):
        instance = _instance(rng)
        assert fast(instance) == reference.is_valid(instance), (schema, instance)


def test_schemas_beyond_the_fast_path_still_go_to_jsonschema() -> None:
    for schema, bad in (({"type": "object", "properties": {"a": {"pattern": "^x"}}}, {"a": "y"}),
                        ({"anyOf": [{"type": "string"}]}, 1),
                        ({"type": "object", "$defs": {"d": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/d"}}}, {"a": 1})):
        assert schemas._simple_check(schema, root=True) is None
        assert schemas.compile_schema(schema)(bad) != []
