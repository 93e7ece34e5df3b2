"""Typed tools: schemas derived from annotations, the classic/typed rule, calls with keyword arguments.

Spec 2026-07-28: server/tools (inputSchema, outputSchema, structuredContent).
"""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import pytest

from mcp_ref import Server, ToolResult
from mcp_ref.kit.testing import AsyncClient
from mcp_ref.kit.typed import derive, is_classic, schema_for, to_json

from .schema_check import schemas

Arguments = dict[str, Any]


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(TypedDict):
    x: int
    y: NotRequired[float]


@dataclasses.dataclass
class Box:
    width: float
    label: str = "box"
    tags: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Node:
    child: Node | None


class Plain:
    pass


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (str, {"type": "string"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (Any, {}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (tuple[int, str], {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False, "minItems": 2, "maxItems": 2}),
        (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (dict[str, Any], {"type": "object"}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, "a"], {"enum": [1, "a"]}),
        (int | None, {"type": ["integer", "null"]}),
        (Optional[str], {"type": ["string", "null"]}),
        (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
        (list[int] | None, {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]}),
        (Color, {"type": "string", "enum": ["red", "green"]}),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (Annotated[int, "how many"], {"type": "integer", "description": "how many"}),
        (Annotated[int, {"minimum": 0}], {"type": "integer", "minimum": 0}),
        (
            Point,
            {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "number"}}, "required": ["x"], "additionalProperties": False},
        ),
        (
            Box,
            {
                "type": "object",
                "properties": {
                    "width": {"type": "number"},
                    "label": {"type": "string", "default": "box"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["width"],
                "additionalProperties": False,
            },
        ),
    ],
)
def test_schema_for_each_supported_annotation(annotation: Any, schema: dict[str, Any]) -> None:
    assert schema_for(annotation) == schema


@pytest.mark.parametrize("annotation", [set[int], bytes, dict[int, str], Plain, Node, Literal[b"x"]])
def test_annotations_without_a_json_schema_are_refused(annotation: Any) -> None:
    with pytest.raises(ValueError):
        schema_for(annotation)


# --- classic or typed ------------------------------------------------------------------------------


def classic_unannotated(ctx, whatever):  # type: ignore[no-untyped-def]
    return "x"


def classic_named_dict(ctx, arguments: dict[str, Any]) -> str:
    return "x"


def classic_alias(ctx, args: Arguments) -> str:  # a string annotation (from __future__), resolved
    return "x"


def classic_unresolvable(ctx, args: NoSuchName) -> str:  # type: ignore[name-defined]  # noqa: F821
    return "x"


def classic_star(ctx, *args):  # type: ignore[no-untyped-def]
    return "x"


def classic_typeddict(ctx, args: Point) -> str:
    return "x"


def typed_args_int(ctx, args: int) -> int:
    return args


def typed_only_ctx(ctx) -> str:  # type: ignore[no-untyped-def]
    return "x"


def typed_one_dict(ctx, options: dict[str, int]) -> int:
    return len(options)


@pytest.mark.parametrize("handler", [classic_unannotated, classic_named_dict, classic_alias, classic_unresolvable, classic_star, classic_typeddict])
def test_classic_handlers_are_recognised(handler: Any) -> None:
    assert is_classic(handler)


@pytest.mark.parametrize("handler", [typed_args_int, typed_only_ctx, typed_one_dict])
def test_typed_handlers_are_recognised(handler: Any) -> None:
    assert not is_classic(handler)


def test_classic_handlers_register_unchanged() -> None:
    server = Server("t", "1")
    for handler in (classic_unannotated, classic_named_dict, classic_alias):
        server.tool()(handler)
        tool = server.tools[handler.__name__]
        assert tool.handler is handler
        assert tool.input_schema == {"type": "object", "additionalProperties": False}
        assert tool.output_schema is None


def test_a_handler_taking_only_ctx_takes_no_arguments_and_args_int_is_a_property() -> None:
    assert derive(typed_only_ctx, "t").input_schema == {"type": "object", "additionalProperties": False}
    assert derive(typed_args_int, "t").input_schema["properties"] == {"args": {"type": "integer"}}


def test_registration_errors_name_the_parameter() -> None:
    server = Server("t", "1")

    def bad_set(ctx, a: int, tags: set[str]) -> int:  # type: ignore[no-untyped-def]
        return a

    def unannotated(ctx, a: int, b) -> int:  # type: ignore[no-untyped-def]
        return a

    def splat(ctx, a: int, **rest: int) -> int:  # type: ignore[no-untyped-def]
        return a

    def unknown(ctx, a: Missing) -> int:  # type: ignore[name-defined]  # noqa: F821
        return 1

    for handler, parameter in ((bad_set, "tags"), (unannotated, "b"), (splat, "rest"), (unknown, "a")):
        with pytest.raises(ValueError, match=f"parameter '{parameter}'"):
            server.tool()(handler)
        assert handler.__name__ not in server.tools

    def bad_return(ctx, a: int) -> set[int]:  # type: ignore[no-untyped-def]
        return {a}

    with pytest.raises(ValueError, match="return annotation"):
        server.tool()(bad_return)


def test_docstring_args_and_annotated_describe_parameters() -> None:
    def f(ctx, a: int, b: Annotated[str, "from Annotated"], c: bool = False) -> int:  # type: ignore[no-untyped-def]
        """Do it.

        Args:
            a: the first
                line and its continuation.
            b (str): loses to Annotated
            c: a flag

        Returns:
            something
        """
        return a

    properties = derive(f, "f").input_schema["properties"]
    assert properties["a"]["description"] == "the first line and its continuation."
    assert properties["b"]["description"] == "from Annotated"
    assert properties["c"] == {"type": "boolean", "description": "a flag", "default": False}


def test_text_like_returns_give_no_output_schema() -> None:
    def text_out(ctx, a: int) -> str:  # type: ignore[no-untyped-def]
        return ""

    def none_out(ctx, a: int) -> None:  # type: ignore[no-untyped-def]
        return None

    def result_out(ctx, a: int) -> ToolResult:  # type: ignore[no-untyped-def]
        return ToolResult()

    def blocks_out(ctx, a: int) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
        return []

    def unannotated_out(ctx, a: int):  # type: ignore[no-untyped-def]
        return ""

    for handler in (text_out, none_out, result_out, blocks_out, unannotated_out):
        assert derive(handler, "t").output_schema is None, handler.__name__


# --- calls -------------------------------------------------------------------------------------------


def typed_server() -> Server:
    server = Server("typed", "1.0.0")

    @server.tool()
    async def add(ctx, a: int, b: int = 0) -> int:  # type: ignore[no-untyped-def]
        """Add two integers."""
        return a + b

    @server.tool()
    def describe(ctx, box: Box, color: Color = Color.RED, scale: float = 1.0, points: list[Point] | None = None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        assert isinstance(box, Box) and isinstance(color, Color) and isinstance(scale, float)
        return {"box": box, "color": color, "scale": scale, "points": points}

    @server.tool()
    def boxed(ctx, width: float) -> Box:  # type: ignore[no-untyped-def]
        return Box(width, tags=["a"])

    @server.tool()
    async def shout(ctx, word: str) -> str:  # type: ignore[no-untyped-def]
        return word.upper()

    @server.tool(input_schema={"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}, "required": ["n"]})
    async def explicit(ctx, n: int) -> int:  # type: ignore[no-untyped-def]
        return n * 2

    @server.tool()
    async def wrong(ctx, a: int) -> int:  # type: ignore[no-untyped-def]
        return "not an int"  # type: ignore[return-value]

    @server.tool()
    async def old_style(ctx, args):  # type: ignore[no-untyped-def]
        return str(sorted(args))

    return server


async def test_typed_calls_get_keyword_arguments_and_structured_results() -> None:
    async with AsyncClient(typed_server(), schemas=schemas()) as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
        assert tools["add"]["inputSchema"] == {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 0}},
            "required": ["a"],
            "additionalProperties": False,
        }
        assert tools["add"]["outputSchema"] == {"type": "integer"}
        assert "outputSchema" not in tools["shout"]

        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert added.structured_content == 5 and added.text == "5"
        assert (await client.call_tool("add", {"a": 2})).structured_content == 2

        described = await client.call_tool("describe", {"box": {"width": 2}, "color": "green", "scale": 3, "points": [{"x": 1}]})
        # -> dict[str, Any] keeps the classic shaping: JSON text, no structuredContent
        assert described.structured_content is None and json.loads(described.text) == {
            "box": {"width": 2.0, "label": "box", "tags": []},
            "color": "green",
            "scale": 3.0,
            "points": [{"x": 1}],
        }
        assert (await client.call_tool("boxed", {"width": 1.5})).structured_content == {"width": 1.5, "label": "box", "tags": ["a"]}
        shouted = await client.call_tool("shout", {"word": "hi"})
        assert shouted.text == "HI" and shouted.structured_content is None

        invalid = await client.call_tool("add", {"a": "two", "c": 1})
        assert invalid.is_error and "'two' is not of type 'integer'" in invalid.text

        assert (await client.call_tool("explicit", {"n": 3})).structured_content == 6
        assert (await client.call_tool("explicit", {"n": 4})).is_error  # the explicit schema is the one validated

        with pytest.raises(Exception, match="-32603"):
            await client.call_tool("wrong", {"a": 1})  # output checked against the derived outputSchema
        assert (await client.call_tool("old_style", {})).text == "[]"


async def test_legacy_clients_get_typed_tools_with_non_object_output_schemas_dropped() -> None:
    async with AsyncClient(typed_server(), era="legacy", schemas=schemas()) as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
        assert "outputSchema" not in tools["add"]
        assert tools["boxed"]["outputSchema"]["type"] == "object"
        added = await client.call_tool("add", {"a": 1, "b": 1})
        assert added.text == "2" and "structuredContent" not in added


def test_return_values_become_json_and_scalars_pass_unchanged() -> None:
    for scalar in ("text", 7, 1.5, True, None):
        assert to_json(scalar) is scalar
    nested = {"box": Box(2.5, "crate", ["a"]), "colors": (Color.RED, Level.HIGH), "points": [Point(x=1)]}
    assert to_json(nested) == {"box": {"width": 2.5, "label": "crate", "tags": ["a"]}, "colors": ["red", 2], "points": [{"x": 1}]}
    assert json.dumps(to_json(nested))  # plain JSON all the way down


def test_a_derived_handler_shows_its_schemas() -> None:
    async def add(ctx: Any, a: int, b: int = 0) -> int:
        return a + b

    derived = derive(add, "add")
    assert derived.input_schema["required"] == ["a"] and derived.output_schema == {"type": "integer"}
    assert repr(derived).startswith("TypedHandler(call=<function") and "'required': ['a']" in repr(derived)
