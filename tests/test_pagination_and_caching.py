"""Pagination of the four list methods and caching hints on cacheable results.

Spec 2026-07-28: server/utilities/pagination, server/utilities/caching, basic/patterns/mrtr.

In process: one request at a time through ``tests.memory``; walking every page and answering
MRTR rounds through ``mcp_ref.kit.testing.AsyncClient`` (``pages()``, ``read_resource()``).
"""

from __future__ import annotations

import base64

import pytest

from mcp_ref import CacheHint, InputRequired, PromptArgument, Server, elicit_form
from mcp_ref.features.pagination import encode_cursor
from mcp_ref.features.sealing import Signer
from mcp_ref.kit.testing import AsyncClient

from .memory import modern_meta, serve
from .schema_check import schemas

LIST_KEYS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
CACHEABLE = ["server/discover", *LIST_KEYS, "resources/read"]


def populated_server(count: int = 5, **options) -> Server:
    """``count`` tools, prompts, resources and templates, registered in a non-alphabetical order."""
    server = Server("paging", "1.0.0", **options)
    names = [f"item{(i * 7) % count}_{i}" for i in range(count)]
    for name in names:

        @server.tool(name, description=f"Tool {name}.")
        async def tool(ctx, arguments):
            return "ok"

        @server.prompt(name, description=f"Prompt {name}.", arguments=[PromptArgument("a")])
        async def prompt(ctx, arguments):
            return "hi"

        @server.resource(f"test://r/{name}", name=name)
        async def resource(ctx):
            return "r"

        @server.resource_template(f"test://t/{name}/{{id}}", name=name)
        async def template(ctx, uri, variables):
            return "t"

    return server


def identity(method: str, item: dict) -> str:
    return item.get("name") if method != "resources/templates/list" else item["uriTemplate"]


async def walk(server: Server, method: str) -> list[dict]:
    """Every page of ``method``, following nextCursor (at most 50 pages); returns the results."""
    async with AsyncClient(server, schemas=schemas()) as client:
        return await client.pages(method, max_pages=50)


# --- pagination ----------------------------------------------------------------------------------------


@pytest.mark.req("PAGE-NEXT-CURSOR")
@pytest.mark.parametrize("method", list(LIST_KEYS))
async def test_cursor_chain_covers_every_item_exactly_once_in_order(method):
    pages = await walk(populated_server(5, page_size=2), method)
    (everything,) = await walk(populated_server(5), method)
    key = LIST_KEYS[method]
    assert [len(page[key]) for page in pages] == [2, 2, 1]
    seen = [identity(method, item) for page in pages for item in page[key]]
    assert seen == [identity(method, item) for item in everything[key]]
    assert len(set(seen)) == 5


@pytest.mark.req("PAGE-NEXT-CURSOR")
async def test_page_size_is_the_servers_choice():
    pages = await walk(populated_server(7, page_size=3), "tools/list")
    assert [len(page["tools"]) for page in pages] == [3, 3, 1]


@pytest.mark.req("PAGE-NEXT-CURSOR")
async def test_last_full_page_has_no_next_cursor():
    pages = await walk(populated_server(4, page_size=2), "prompts/list")
    assert [len(page["prompts"]) for page in pages] == [2, 2]
    assert "nextCursor" in pages[0] and "nextCursor" not in pages[1]


async def test_default_page_size_returns_a_small_list_in_one_page():
    async with serve(populated_server(5)) as client:
        result = await client.result("tools/list")
    assert len(result["tools"]) == 5
    assert "nextCursor" not in result


async def test_empty_list_is_one_page_without_a_cursor():
    server = Server("s", "1", list_changed=["tools"])
    async with serve(server) as client:
        result = await client.result("tools/list")
    assert result["tools"] == []
    assert "nextCursor" not in result


@pytest.mark.req("PAGE-STABLE-CURSORS")
async def test_the_same_cursor_gives_the_same_page_again():
    async with serve(populated_server(5, page_size=2)) as client:
        first = await client.result("resources/list")
        again_a = await client.result("resources/list", {"cursor": first["nextCursor"]})
        again_b = await client.result("resources/list", {"cursor": first["nextCursor"]})
    assert again_a["resources"] == again_b["resources"]
    assert again_a["nextCursor"] == again_b["nextCursor"]


def raw_cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


KEY = b"k" * 32  # the state key of the server under test, so the test can seal cursors too
SIGNER = Signer(KEY)


@pytest.mark.req("PAGE-INVALID-CURSOR-32602")
@pytest.mark.parametrize(
    "cursor",
    [
        pytest.param("!!!not-base64!!!", id="garbage"),
        pytest.param("", id="empty-string"),
        pytest.param(encode_cursor(SIGNER, "prompts/list", 2), id="foreign-method"),
        pytest.param(encode_cursor(Signer(b"x" * 32), "tools/list", 2), id="foreign-key"),
        pytest.param(encode_cursor(SIGNER, "tools/list", -2), id="sealed-negative-offset"),
        pytest.param(encode_cursor(SIGNER, "tools/list", "2"), id="sealed-offset-not-a-number"),
        pytest.param(encode_cursor(SIGNER, "tools/list", True), id="sealed-boolean-offset"),
        pytest.param(encode_cursor(SIGNER, "tools/list", 999), id="sealed-beyond-the-end"),
        pytest.param(raw_cursor("tools/list\n2"), id="unsealed"),
        pytest.param(raw_cursor("tools/list\n-2"), id="negative-offset"),
        pytest.param(raw_cursor("tools/list\n02"), id="tampered-leading-zero"),
        pytest.param(raw_cursor("tools/list\n+2"), id="tampered-sign"),
        pytest.param(raw_cursor("tools/list\n2\n3"), id="extra-field"),
        pytest.param(raw_cursor("tools/list\ntwo"), id="non-numeric-offset"),
        pytest.param(raw_cursor("tools/list\n999"), id="beyond-the-end"),
        pytest.param(base64.urlsafe_b64encode(b"\xff\xfe\n2").decode(), id="not-utf8"),
        pytest.param(7, id="a-number"),
        pytest.param({"offset": 2}, id="an-object"),
    ],
)
async def test_invalid_cursor_is_invalid_params(cursor):
    async with serve(populated_server(5, page_size=2, state_key=KEY)) as client:
        error = await client.error("tools/list", {"cursor": cursor})
    assert error["code"] == -32602
    assert "cursor" in error["message"].lower()


@pytest.mark.req("PAGE-INVALID-CURSOR-32602", "PAGE-INVALID-CURSOR-GRACEFUL")
async def test_cursor_from_another_list_method_is_refused_for_each_method():
    async with serve(populated_server(5, page_size=2)) as client:
        cursors = {method: (await client.result(method))["nextCursor"] for method in LIST_KEYS}
        for method in LIST_KEYS:
            for other, cursor in cursors.items():
                if other != method:
                    error = await client.error(method, {"cursor": cursor})
                    assert error["code"] == -32602, (method, other)


@pytest.mark.req("PAGE-INVALID-CURSOR-32602", "PAGE-INVALID-CURSOR-GRACEFUL")
async def test_cursor_past_a_shrunken_list_is_invalid_params():
    server = populated_server(5, page_size=2)
    async with serve(server) as client:
        first = await client.result("tools/list")
        second = await client.result("tools/list", {"cursor": first["nextCursor"]})
        for name in list(server.tools)[1:]:
            server.remove_tool(name)
        error = await client.error("tools/list", {"cursor": second["nextCursor"]})
    assert error["code"] == -32602


# --- caching hints ------------------------------------------------------------------------------------


@pytest.mark.req("CACHE-HINTS-REQUIRED")
@pytest.mark.parametrize("method", CACHEABLE)
async def test_every_complete_cacheable_result_carries_ttl_and_scope(method):
    params = {"uri": "test://r/item0_0"} if method == "resources/read" else {}
    async with serve(populated_server(3)) as client:
        result = await client.result(method, params)
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["cacheScope"] in ("public", "private")


@pytest.mark.req("CACHE-HINTS-CONFIGURABLE")
@pytest.mark.parametrize("method", CACHEABLE)
async def test_hint_is_configurable_per_method(method):
    hints = {m: CacheHint(1000, "public") for m in CACHEABLE}
    hints[method] = CacheHint(123_456, "private")
    params = {"uri": "test://r/item0_0"} if method == "resources/read" else {}
    async with serve(populated_server(3, cache_hints=hints)) as client:
        chosen = await client.result(method, params)
        other_method = "tools/list" if method != "tools/list" else "prompts/list"
        other = await client.result(other_method)
    assert (chosen["ttlMs"], chosen["cacheScope"]) == (123_456, "private")
    assert (other["ttlMs"], other["cacheScope"]) == (1000, "public")


@pytest.mark.req("CACHE-SAME-SCOPE-ALL-PAGES")
@pytest.mark.parametrize("scope", ["public", "private"])
@pytest.mark.parametrize("method", list(LIST_KEYS))
async def test_every_page_of_a_list_carries_the_same_scope(method, scope):
    pages = await walk(populated_server(5, page_size=2, cache_hints={m: CacheHint(30_000, scope) for m in LIST_KEYS}), method)
    assert len(pages) == 3
    assert {(page["ttlMs"], page["cacheScope"]) for page in pages} == {(30_000, scope)}


@pytest.mark.req("CACHE-INTERIM-NO-HINTS")
async def test_non_cacheable_results_carry_no_hints():
    server = populated_server(2)
    async with serve(server) as client:
        call = await client.result("tools/call", {"name": "item0_0"})
        prompt = await client.result("prompts/get", {"name": "item0_0"})
        completion = await client.result(
            "completion/complete", {"ref": {"type": "ref/prompt", "name": "item0_0"}, "argument": {"name": "a", "value": ""}}
        )
    for result in (call, prompt, completion):
        assert "ttlMs" not in result and "cacheScope" not in result


def asking_server(**options) -> Server:
    server = Server("asking", "1.0.0", **options)
    name_schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

    @server.resource("test://personal", cache=CacheHint(60_000, "private"))
    async def personal(ctx):
        answer = ctx.ask("who", elicit_form("Who is asking?", name_schema))
        return f"hello {answer['content']['name']}"

    return server


ELICITING_CLIENT = modern_meta(capabilities={"elicitation": {}})


@pytest.mark.req("CACHE-INTERIM-NO-HINTS", "MRTR-INPUT-REQUIRED-RESULT")
async def test_interim_input_required_result_carries_no_hints():
    async with serve(asking_server()) as client:
        result = await client.result("resources/read", {"uri": "test://personal"}, meta=ELICITING_CLIENT)
    assert result["resultType"] == "input_required"
    assert "ttlMs" not in result and "cacheScope" not in result
    assert "who" in result["inputRequests"]


@pytest.mark.req("MRTR-RETRY-COMPLETES")
async def test_mrtr_retry_completes_with_the_answer():
    def answer(params):
        return {"action": "accept", "content": {"name": "Ada"}}

    async with AsyncClient(asking_server(), on_elicitation=answer, schemas=schemas()) as client:
        reply = await client.read_resource("test://personal")
    (interim,) = reply.rounds
    assert interim["resultType"] == "input_required" and list(interim["inputRequests"]) == ["who"]
    assert reply["resultType"] == "complete"
    assert reply.data == ["hello Ada"]


def state_only_server() -> Server:
    """A resource that takes one extra round trip carrying only its own state (no input requests)."""
    server = Server("rounds", "1.0.0")

    @server.resource("test://two-rounds", cache=CacheHint(60_000, "private"))
    async def two_rounds(ctx):
        if ctx.state is None:
            raise InputRequired(state={"round": 1})
        return f"round {ctx.state['round'] + 1}"

    return server


async def read_in_two_rounds() -> tuple[dict, dict]:
    """``test://two-rounds`` read to the end: the interim result and the final one."""
    async with AsyncClient(state_only_server(), schemas=schemas()) as client:
        reply = await client.read_resource("test://two-rounds")
    (interim,) = reply.rounds
    return interim, reply.result


async def test_state_only_retry_completes_with_the_hint_fields_present():
    interim, final = await read_in_two_rounds()
    assert interim["resultType"] == "input_required"
    assert "ttlMs" not in interim and "inputRequests" not in interim
    assert final["resultType"] == "complete"
    assert final["contents"][0]["text"] == "round 2"
    assert final["cacheScope"] == "private"


@pytest.mark.req("CACHE-RETRY-ZERO-TTL", "CACHE-MRTR-RETRY-NOT-CACHED")
async def test_result_of_an_mrtr_retry_is_marked_immediately_stale():
    interim, final = await read_in_two_rounds()
    assert "requestState" in interim
    assert final["resultType"] == "complete"
    assert final["ttlMs"] == 0


@pytest.mark.parametrize("size", [0, -1])
def test_page_size_must_be_positive(size):
    with pytest.raises(ValueError, match="page_size"):
        Server("s", "1", page_size=size)


def test_cache_hint_override_does_not_affect_other_servers():
    customised = Server("a", "1", cache_hints={"tools/list": CacheHint(5, "private")})
    default = Server("b", "1")
    assert customised.cache_hint("tools/list") == CacheHint(5, "private")
    assert default.cache_hint("tools/list") == CacheHint(0, "public")
    assert default.cache_hint("resources/read") == CacheHint(0, "private")
