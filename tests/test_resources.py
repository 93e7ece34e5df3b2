"""Resources and resource templates: listing, reading, template matching, not-found, caching hints.

Spec 2026-07-28: server/resources, server/utilities/caching.
"""

from __future__ import annotations

import base64

import pytest

from mcp_ref import CacheHint, Resource, ResourceNotFound, Server, blob_resource, text_resource
from mcp_ref.features.resources import MAX_URI_LENGTH

from .memory import serve


def resource_server(**options) -> Server:
    server = Server("resources-test", "1.0.0", **options)

    @server.resource("test://readme", mime_type="text/markdown", title="Read me", size=7)
    async def readme(ctx):
        """The project readme."""
        return "# Hello"

    @server.resource("test://logo.png", mime_type="image/png")
    async def logo(ctx):
        """A logo."""
        return b"\x89PNG\r\n\x1a\n\x00\xff"

    @server.resource_template("test://items/{id}", mime_type="application/json", title="Item")
    async def item(ctx, uri, variables):
        """One item by id."""
        if variables["id"] == "missing":
            raise ResourceNotFound(uri)
        return f'{{"id": "{variables["id"]}"}}'

    @server.resource_template("file:///{+path}")
    async def files(ctx, uri, variables):
        """A file by path."""
        return f"path={variables['path']}"

    return server


# --- listing ------------------------------------------------------------------------------------------


@pytest.mark.req("RES-LIST")
async def test_resources_list_shows_static_resources_in_registration_order():
    async with serve(resource_server()) as client:
        result = await client.result("resources/list")
    assert result["resources"] == [
        {"uri": "test://readme", "name": "readme", "title": "Read me", "description": "The project readme.", "mimeType": "text/markdown", "size": 7},
        {"uri": "test://logo.png", "name": "logo", "description": "A logo.", "mimeType": "image/png"},
    ]


@pytest.mark.req("RES-LIST")
async def test_dynamic_listers_add_resources_after_the_static_ones():
    server = resource_server()

    @server.resource_lister
    async def more(ctx):
        return [Resource("test://dyn/1", "dyn1", handler=None), {"uri": "test://dyn/2", "name": "dyn2"}]

    @server.resource_lister
    def sync_more(ctx):
        return [{"uri": "test://dyn/3", "name": "dyn3"}]

    async with serve(server) as client:
        result = await client.result("resources/list")
    assert [r["uri"] for r in result["resources"]] == ["test://readme", "test://logo.png", "test://dyn/1", "test://dyn/2", "test://dyn/3"]
    assert result["resources"][2] == {"uri": "test://dyn/1", "name": "dyn1"}


@pytest.mark.req("RES-CAPABILITY")
async def test_a_lister_alone_declares_the_resources_capability():
    server = Server("s", "1")

    @server.resource_lister
    async def only(ctx):
        return []

    async with serve(server) as client:
        discovered = await client.result("server/discover")
        listed = await client.result("resources/list")
    assert discovered["capabilities"] == {"resources": {}}
    assert listed["resources"] == []


@pytest.mark.req("RES-TEMPLATES-LIST")
async def test_resource_templates_list_shows_templates_in_registration_order():
    async with serve(resource_server()) as client:
        result = await client.result("resources/templates/list")
    assert result["resourceTemplates"] == [
        {"uriTemplate": "test://items/{id}", "name": "item", "title": "Item", "description": "One item by id.", "mimeType": "application/json"},
        {"uriTemplate": "file:///{+path}", "name": "files", "description": "A file by path."},
    ]


async def test_resource_fields_icons_annotations_and_meta_are_listed_as_given():
    server = Server("s", "1")
    icons = [{"src": "data:image/png;base64,AAAA", "mimeType": "image/png"}]
    annotations = {"audience": ["user"], "priority": 0.5}

    @server.resource("test://x", name="x-name", icons=icons, annotations=annotations, meta={"example.com/k": "v"})
    async def x(ctx):
        return "x"

    @server.resource_template("test://t/{a}", icons=icons, annotations=annotations, meta={"example.com/k": "t"}, description="T")
    async def t(ctx, uri, variables):
        return "t"

    async with serve(server) as client:
        resources = await client.result("resources/list")
        templates = await client.result("resources/templates/list")
    assert resources["resources"] == [
        {"uri": "test://x", "name": "x-name", "annotations": annotations, "icons": icons, "_meta": {"example.com/k": "v"}}
    ]
    assert templates["resourceTemplates"] == [
        {"uriTemplate": "test://t/{a}", "name": "t", "description": "T", "annotations": annotations, "icons": icons, "_meta": {"example.com/k": "t"}}
    ]


def test_invalid_template_is_refused_at_registration():
    server = Server("s", "1")
    with pytest.raises(ValueError, match="unsupported URI template expression"):

        @server.resource_template("test://{?query}")
        async def bad(ctx, uri, variables):
            return ""


# --- reading ------------------------------------------------------------------------------------------


@pytest.mark.req("RES-READ-TEXT")
async def test_read_text_resource():
    async with serve(resource_server()) as client:
        result = await client.result("resources/read", {"uri": "test://readme"})
    assert result["contents"] == [{"uri": "test://readme", "text": "# Hello", "mimeType": "text/markdown"}]


@pytest.mark.req("RES-READ-BLOB-BASE64")
async def test_read_binary_resource_is_base64_blob():
    async with serve(resource_server()) as client:
        result = await client.result("resources/read", {"uri": "test://logo.png"})
    (contents,) = result["contents"]
    assert set(contents) == {"uri", "blob", "mimeType"}
    assert contents["mimeType"] == "image/png"
    assert base64.b64decode(contents["blob"], validate=True) == b"\x89PNG\r\n\x1a\n\x00\xff"


@pytest.mark.req("RES-READ-BLOB-BASE64")
async def test_bytearray_is_base64_too_with_a_default_mime_type():
    server = Server("s", "1")

    @server.resource("test://raw")
    async def raw(ctx):
        return bytearray(b"\x00\x01\x02")

    async with serve(server) as client:
        result = await client.result("resources/read", {"uri": "test://raw"})
    assert result["contents"] == [{"uri": "test://raw", "blob": "AAEC", "mimeType": "application/octet-stream"}]


async def test_text_without_a_mime_type_defaults_to_text_plain():
    server = Server("s", "1")

    @server.resource("test://plain")
    def plain(ctx):
        return "words"

    async with serve(server) as client:
        result = await client.result("resources/read", {"uri": "test://plain"})
    assert result["contents"] == [{"uri": "test://plain", "text": "words", "mimeType": "text/plain"}]


@pytest.mark.req("RES-READ-MULTIPLE-CONTENTS")
async def test_handler_may_return_contents_objects():
    server = Server("s", "1")

    @server.resource("test://multi")
    async def multi(ctx):
        return [text_resource("test://multi#a", "A"), blob_resource("test://multi#b", b"B", "application/x-b")]

    @server.resource("test://one")
    async def one(ctx):
        return text_resource("test://one", "1", None, _meta={"example.com/n": 1})

    async with serve(server) as client:
        multi_result = await client.result("resources/read", {"uri": "test://multi"})
        one_result = await client.result("resources/read", {"uri": "test://one"})
    assert multi_result["contents"] == [
        {"uri": "test://multi#a", "text": "A", "mimeType": "text/plain"},
        {"uri": "test://multi#b", "blob": "Qg==", "mimeType": "application/x-b"},
    ]
    assert one_result["contents"] == [{"uri": "test://one", "text": "1", "_meta": {"example.com/n": 1}}]


@pytest.mark.req("RES-NOT-FOUND-NO-EMPTY-CONTENTS", "RES-INTERNAL-ERROR-32603")
@pytest.mark.parametrize(
    "value",
    [
        pytest.param([], id="empty-list"),
        pytest.param(None, id="none"),
        pytest.param({"uri": "test://x"}, id="neither-text-nor-blob"),
        pytest.param({"uri": "test://x", "text": "a", "blob": "Yg=="}, id="both-text-and-blob"),
        pytest.param([{"text": "no uri"}], id="no-uri"),
        pytest.param(42, id="a-number"),
    ],
)
async def test_handler_returning_no_or_malformed_contents_is_internal_error(value):
    server = Server("s", "1")

    @server.resource("test://x")
    async def x(ctx):
        return value

    async with serve(server) as client:
        error = await client.error("resources/read", {"uri": "test://x"})
    assert error["code"] == -32603


# --- templates -----------------------------------------------------------------------------------------


@pytest.mark.req("RES-TEMPLATE-MATCH")
async def test_simple_template_variable_matches_one_segment():
    async with serve(resource_server()) as client:
        result = await client.result("resources/read", {"uri": "test://items/123"})
    assert result["contents"] == [{"uri": "test://items/123", "text": '{"id": "123"}', "mimeType": "application/json"}]


@pytest.mark.req("RES-TEMPLATE-MATCH")
async def test_template_variables_are_percent_decoded():
    async with serve(resource_server()) as client:
        result = await client.result("resources/read", {"uri": "test://items/a%20b%3Fc"})
    assert result["contents"][0]["text"] == '{"id": "a b?c"}'
    assert result["contents"][0]["uri"] == "test://items/a%20b%3Fc"


@pytest.mark.req("RES-TEMPLATE-MATCH")
async def test_reserved_template_variable_spans_slashes_and_is_decoded():
    async with serve(resource_server()) as client:
        result = await client.result("resources/read", {"uri": "file:///home/user/My%20Docs/notes.txt"})
    assert result["contents"][0]["text"] == "path=home/user/My Docs/notes.txt"


@pytest.mark.req("RES-TEMPLATE-MATCH", "RES-NOT-FOUND-32602", "RES-VALIDATE-URIS")
@pytest.mark.parametrize("uri", ["test://items/", "test://items/1/2", "test://items/1?x=2", "test://other/1", "file:///"])
async def test_uri_the_templates_do_not_match_is_not_found(uri):
    async with serve(resource_server()) as client:
        error = await client.error("resources/read", {"uri": uri})
    assert error["code"] == -32602
    assert error["data"] == {"uri": uri}


@pytest.mark.req("RES-TEMPLATE-MATCH")
async def test_first_matching_template_wins():
    server = Server("s", "1")

    @server.resource_template("test://{a}/x")
    async def first(ctx, uri, variables):
        return "first"

    @server.resource_template("test://{+b}")
    async def second(ctx, uri, variables):
        return "second"

    async with serve(server) as client:
        a = await client.result("resources/read", {"uri": "test://k/x"})
        b = await client.result("resources/read", {"uri": "test://k/y"})
    assert (a["contents"][0]["text"], b["contents"][0]["text"]) == ("first", "second")


@pytest.mark.req("RES-TEMPLATE-MATCH")
async def test_static_resource_is_preferred_over_a_matching_template():
    server = resource_server()

    @server.resource("test://items/special")
    async def special(ctx):
        return "static wins"

    async with serve(server) as client:
        result = await client.result("resources/read", {"uri": "test://items/special"})
    assert result["contents"][0]["text"] == "static wins"


# --- not found ----------------------------------------------------------------------------------------


@pytest.mark.req("RES-NOT-FOUND-32602", "RES-NOT-FOUND-NO-EMPTY-CONTENTS")
async def test_unknown_uri_is_invalid_params_with_the_uri():
    async with serve(resource_server()) as client:
        response = await client.call("resources/read", {"uri": "test://nowhere"})
    assert "result" not in response
    assert response["error"]["code"] == -32602
    assert response["error"]["data"] == {"uri": "test://nowhere"}


@pytest.mark.req("RES-NOT-FOUND-32602")
async def test_handler_raising_resource_not_found_is_invalid_params_with_the_uri():
    async with serve(resource_server()) as client:
        error = await client.error("resources/read", {"uri": "test://items/missing"})
    assert error == {"code": -32602, "message": "Resource not found", "data": {"uri": "test://items/missing"}}


@pytest.mark.req("RES-READ-PARAMS")
@pytest.mark.parametrize("params", [{}, {"uri": 5}, {"uri": None}])
async def test_read_without_a_string_uri_is_invalid_params(params):
    async with serve(resource_server()) as client:
        error = await client.error("resources/read", params)
    assert error["code"] == -32602


@pytest.mark.req("RES-INTERNAL-ERROR-32603", "BASE-INTERNAL-ERROR-SAFE-MESSAGE")
async def test_handler_exception_is_internal_error(caplog):
    server = Server("s", "1")

    @server.resource("test://boom")
    async def boom(ctx):
        raise OSError("/etc/secret unreadable")

    async with serve(server) as client:
        error = await client.error("resources/read", {"uri": "test://boom"})
    assert error == {"code": -32603, "message": "Internal error while handling resources/read"}
    assert "/etc/secret" in caplog.text


# --- caching hints ------------------------------------------------------------------------------------


@pytest.mark.req("CACHE-HINTS-REQUIRED", "CACHE-PRIVATE-FOR-USER-DATA")
async def test_read_defaults_to_a_private_zero_ttl_hint():
    async with serve(resource_server()) as client:
        result = await client.result("resources/read", {"uri": "test://readme"})
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")


@pytest.mark.req("CACHE-HINTS-REQUIRED", "CACHE-HINTS-CONFIGURABLE")
async def test_resource_carries_its_own_cache_hint():
    server = Server("s", "1")

    @server.resource("test://stable", cache=CacheHint(3_600_000, "public"))
    async def stable(ctx):
        return "same for everyone"

    @server.resource("test://default")
    async def default(ctx):
        return "default"

    async with serve(server) as client:
        stable_result = await client.result("resources/read", {"uri": "test://stable"})
        default_result = await client.result("resources/read", {"uri": "test://default"})
    assert (stable_result["ttlMs"], stable_result["cacheScope"]) == (3_600_000, "public")
    assert (default_result["ttlMs"], default_result["cacheScope"]) == (0, "private")


@pytest.mark.req("CACHE-HINTS-REQUIRED", "CACHE-HINTS-CONFIGURABLE")
async def test_template_carries_its_own_cache_hint():
    server = Server("s", "1")

    @server.resource_template("test://t/{x}", cache=CacheHint(1000, "private"))
    async def t(ctx, uri, variables):
        return variables["x"]

    async with serve(server) as client:
        result = await client.result("resources/read", {"uri": "test://t/1"})
    assert (result["ttlMs"], result["cacheScope"]) == (1000, "private")


@pytest.mark.req("CACHE-HINTS-CONFIGURABLE")
async def test_server_wide_read_hint_applies_to_resources_without_their_own():
    server = resource_server(cache_hints={"resources/read": CacheHint(5000, "public")})
    async with serve(server) as client:
        result = await client.result("resources/read", {"uri": "test://items/9"})
    assert (result["ttlMs"], result["cacheScope"]) == (5000, "public")


@pytest.mark.req("CACHE-HINTS-REQUIRED", "CACHE-PRIVATE-FOR-USER-DATA")
async def test_list_results_carry_public_hints_by_default():
    async with serve(resource_server()) as client:
        resources = await client.result("resources/list")
        templates = await client.result("resources/templates/list")
    assert (resources["ttlMs"], resources["cacheScope"]) == (0, "public")
    assert (templates["ttlMs"], templates["cacheScope"]) == (0, "public")


async def test_read_handler_receives_its_context():
    server = Server("s", "1")
    seen = {}

    @server.resource("test://ctx")
    async def read(ctx):
        seen.update(method=ctx.method, era=ctx.era)
        return "x"

    async with serve(server) as client:
        await client.result("resources/read", {"uri": "test://ctx"})
    assert seen == {"method": "resources/read", "era": "modern"}


@pytest.mark.req("SUB-ONLY-REQUESTED-TYPES")
async def test_resource_updates_reach_no_modern_client_without_a_subscription():
    server = resource_server(resource_subscriptions=True)
    async with serve(server) as client:
        await client.result("resources/read", {"uri": "test://readme"})
        server.notify_resource_updated("test://readme")
        await client.settle()
    assert client.notifications() == []


@pytest.mark.req("RES-VALIDATE-URIS")
async def test_an_absurdly_long_uri_is_refused_before_any_template_is_tried():
    server = Server("long", "1")
    tried = []

    @server.resource_template("test://{+a}/{+b}/{+c}", name="greedy")
    async def greedy(ctx, uri, variables):
        tried.append(uri)
        return "x"

    async with serve(server) as client:
        error = await client.error("resources/read", {"uri": "test://" + "a/" * (MAX_URI_LENGTH // 2 + 1)})
    assert error["code"] == -32602
    assert tried == []
