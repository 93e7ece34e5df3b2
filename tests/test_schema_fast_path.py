"""The plain-Python check ``schemas.compile_schema`` uses for simple schemas must agree with
``jsonschema`` (which it stands in for on the hot path) on every instance: checked here on
many random instances of many schemas, from a fixed seed."""

from __future__ import annotations

import random
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from mcp_ref.features import schemas

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


# --- generated schemas and instances (hypothesis): the compiled check against jsonschema ----------
#
# Derandomized (the same examples on every run, like the seeded tests above), no database in the
# checkout. A schema is drawn from the keywords the fast path handles, with values that are
# sometimes invalid for the meta-schema; instances are drawn both shaped by the schema (mostly
# valid, with one thing wrong now and then) and as arbitrary JSON.

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=300,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
NAMES = ["name", "type", "size", "a", "ü", "it's", "x\"y"]
TYPES = ["object", "array", "string", "boolean", "null", "number", "integer"]
WORDS = ["", "file", "directory", "symlink", "a", "ab", "abcd", "ü", "x\"y"]
NUMBERS = [0, 1, -1, 2, 3, 10, 2**53, -(2**70), 0.5, 1.0, -2.5, 1e308, float("inf"), float("nan")]

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.sampled_from(NUMBERS), st.integers(), st.floats(allow_nan=False),
              st.sampled_from(WORDS), st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(NAMES), inner, max_size=4)),
    max_leaves=12,
)
counts = st.one_of(st.integers(0, 4), st.sampled_from([-1, True, 2.0, "1"]))
bounds = st.one_of(st.sampled_from(NUMBERS), st.sampled_from([True, "1", None]))


def _leaf_keywords() -> st.SearchStrategy[dict[str, Any]]:
    one_type = st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3),
                         st.sampled_from(["text", ["string", "string"], [], ["integer", "number"], ["object", 1]]))
    return st.fixed_dictionaries({}, optional={
        "type": one_type,
        "enum": st.one_of(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3), st.just([]), st.just([1, "a"])),
        "const": st.one_of(st.sampled_from(WORDS), st.just(1)),
        "minLength": counts, "maxLength": counts,
        "minimum": bounds, "maximum": bounds, "exclusiveMinimum": bounds, "exclusiveMaximum": bounds,
        "description": st.one_of(st.just("d"), st.just(1)),
        "default": json_values,
        "x-note": json_values,
    })


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    objects = st.fixed_dictionaries({"type": st.sampled_from(["object", ["object", "null"]])}, optional={
        "properties": st.dictionaries(st.sampled_from(NAMES), children, max_size=4),
        "required": st.one_of(st.lists(st.sampled_from(NAMES), max_size=4, unique=True), st.just(["a", "a"])),
        "additionalProperties": st.one_of(st.booleans(), children),
        "minProperties": counts, "maxProperties": counts,
    })
    untyped = st.fixed_dictionaries({}, optional={  # keywords of several kinds, no type: each ignores the others
        "properties": st.dictionaries(st.sampled_from(NAMES), children, max_size=3),
        "required": st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
        "items": children, "minItems": counts, "minLength": counts, "minimum": bounds,
    })
    arrays = st.fixed_dictionaries({"type": st.just("array")}, optional={
        "items": st.one_of(children, st.just([{"type": "string"}])),
        "minItems": counts, "maxItems": counts,
    })
    return st.one_of(objects, arrays, untyped)


schemas_st = st.recursive(st.one_of(_leaf_keywords(), st.booleans()), _extend, max_leaves=8)
root_schemas = schemas_st.filter(lambda schema: isinstance(schema, dict))


def _shaped(schema: Any, draw: Any, depth: int = 0) -> Any:
    """An instance built to fit ``schema`` (as far as a quick guess goes), now and then with
    something arbitrary in the place of a value."""
    if depth > 6 or not isinstance(schema, dict) or draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"] and draw(st.booleans()):
        return draw(st.sampled_from(schema["enum"]))
    if "const" in schema and draw(st.booleans()):
        return schema["const"]
    kind = schema.get("type")
    kind = draw(st.sampled_from(kind)) if isinstance(kind, list) and kind else kind
    if kind == "object" or "properties" in schema or "required" in schema:
        properties = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
        required = schema.get("required", []) if isinstance(schema.get("required"), list) else []
        instance = {}
        for name in list(properties) + [name for name in required if isinstance(name, str)]:
            if name in required or draw(st.booleans()):
                instance[name] = _shaped(properties.get(name, True), draw, depth + 1)
        if draw(st.integers(0, 4)) == 0:
            instance[draw(st.sampled_from(NAMES + ["extra"]))] = _shaped(schema.get("additionalProperties", True), draw, depth + 1)
        return instance
    if kind == "array" or "items" in schema:
        return [_shaped(schema.get("items", True), draw, depth + 1) for _ in range(draw(st.integers(0, 4)))]
    if kind == "string":
        return draw(st.one_of(st.sampled_from(WORDS), st.text(max_size=6)))
    if kind in ("number", "integer"):
        return draw(st.one_of(st.sampled_from(NUMBERS), st.integers(-5, 12), st.floats(-5, 12)))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "null":
        return None
    return draw(json_values)


@_SETTINGS
@given(schema=root_schemas, data=st.data())
def test_generated_schemas_agree_with_jsonschema(schema: dict[str, Any], data: Any) -> None:
    fast = schemas._simple_check(schema, root=True)
    if fast is None:
        return  # beyond the fast path (or invalid for the meta-schema): jsonschema's job
    # The fast path takes only schemas that are valid for the 2020-12 meta-schema ...
    jsonschema.Draft202012Validator.check_schema(schema)
    reference = jsonschema.Draft202012Validator(schema)
    compiled = schemas.compile_schema(schema)
    # ... and gives jsonschema's yes/no on every instance, with jsonschema's words when it says no.
    fixed = [*NUMBERS, *WORDS, None, True, False, [], {}, [1], ["a"], {"a": 1}]  # every bound and word, every time
    for instance in [*fixed, *({"a": value} for value in fixed), *([value] for value in fixed)]:
        assert fast(instance) == reference.is_valid(instance), (schema, instance)
    for _ in range(20):
        instance = _shaped(schema, data.draw) if data.draw(st.integers(0, 3)) else data.draw(json_values)
        valid = reference.is_valid(instance)
        assert fast(instance) == valid, (schema, instance)
        errors = compiled(instance)
        assert (errors == []) == valid, (schema, instance, errors)
        if not valid:
            assert errors == [schemas._describe(error) for error in sorted(reference.iter_errors(instance), key=lambda e: list(e.absolute_path))]


@_SETTINGS
@given(schema=root_schemas)
def test_the_fast_path_refuses_what_the_meta_schema_refuses(schema: dict[str, Any]) -> None:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError:
        assert schemas._simple_check(schema, root=True) is None, schema
        with pytest.raises(schemas.SchemaError):
            schemas.compile_schema(schema)


def test_generated_schemas_mostly_take_the_fast_path() -> None:
    # The strategies above must exercise the compiled check, not only the fallback.
    find(root_schemas, lambda s: schemas._simple_check(s, root=True) is not None and "properties" in s
         and any(isinstance(c, dict) and c.get("type") == "array" for c in s["properties"].values()),
         settings=settings(derandomize=True, database=None, max_examples=2000))


LISTING = {"type": "object", "properties": {
    "content": {"type": "string"},
    "entries": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "type": {"type": "string", "enum": ["file", "directory", "symlink", "other"]},
        "size": {"type": "integer", "minimum": 0}}, "required": ["name", "type"], "additionalProperties": False}},
    "truncated": {"type": "boolean"}}, "required": ["content"], "additionalProperties": False}


def test_a_listing_schema_takes_the_fast_path_and_words_its_errors_like_jsonschema() -> None:
    check = schemas.compile_schema(LISTING)
    assert schemas._simple_check(LISTING, root=True) is not None
    good = {"content": "x", "entries": [{"name": f"n{i}", "type": "file", "size": i} for i in range(200)], "truncated": False}
    assert check(good) == []
    bad = {**good, "entries": good["entries"][:3] + [{"name": "n", "type": "pipe", "size": -1}]}
    assert check(bad) == ["entries/3/size: -1 is less than the minimum of 0",
                          "entries/3/type: 'pipe' is not one of ['file', 'directory', 'symlink', 'other']"]


def test_deep_schemas_compile_into_several_functions() -> None:
    # Python allows 20 nested loops and 100 indentation levels per function: a deeper schema's
    # check is split into functions instead of failing to compile.
    schema: dict[str, Any] = {"type": "string"}
    for level in range(30):
        schema = {"type": "array", "items": schema} if level % 2 else {"type": "object", "properties": {"a": schema}}
    fast = schemas._simple_check(schema, root=True)
    assert fast is not None
    instance: Any = "s"
    for level in range(30):
        instance = [instance] if level % 2 else {"a": instance}
    assert fast(instance) is True
    assert jsonschema.Draft202012Validator(schema).is_valid(instance)
    broken = instance
    for _ in range(29):
        broken = broken[0] if isinstance(broken, list) else broken["a"]
    broken["a"] = 1
    assert fast(instance) is False
    assert not jsonschema.Draft202012Validator(schema).is_valid(instance)


def test_schema_text_never_becomes_code() -> None:
    # Names, enum members and bounds reach the generated source only as repr() of a str or as
    # named constants: a name that looks like code stays a name.
    schema = {"type": "object", "properties": {"') or __import__('os').system('false') or ('": {"type": "string"}},
              "required": ["\n    return True\n"], "minProperties": 0,
              "additionalProperties": {"enum": ["'); raise SystemExit('"]}}
    fast = schemas._simple_check(schema, root=True)
    assert fast is not None
    assert fast({"\n    return True\n": "'); raise SystemExit('"}) is True
    assert fast({"\n    return True\n": "x"}) is False
    assert fast({}) is False
