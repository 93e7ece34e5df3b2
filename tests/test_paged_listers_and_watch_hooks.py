"""Paged resource listers with sealed cursors, and watch hooks tied to what clients listen for.

Spec 2026-07-28: server/utilities/pagination (PAGE-* decisions), basic/patterns/subscriptions
(SUB-* decisions). Most tests run in-process through ``tests.memory``; the wire tests at the end
run ``tests.servers.watch_server`` as a real subprocess.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import threading
import time
from typing import Any

import pytest

from mcp_ref import Resource, Server, WatchSet
from mcp_ref.features import subscriptions, watch
from mcp_ref.core.errors import InvalidParams
from mcp_ref.features.pagination import CURSOR_ECHO_CHARS, decode_cursor, encode_cursor
from mcp_ref.features.requeststate import StateSealer
from mcp_ref.features.resources import MAX_URI_LENGTH
from mcp_ref.features.sealing import Signer, b64url_decode, b64url_encode
from mcp_ref.core.session import Session
from tests.memory import OMIT, serve, until
from tests.wire import ServerProcess, cancel, error_of, modern_request, result_of, tool_call

KEY = b"k" * 32
SIGNER = Signer(KEY)
ACK = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
WATCH_SERVER = "tests.servers.watch_server"


# --- helpers ----------------------------------------------------------------------------------------


def numbered(prefix: str, count: int) -> list[dict[str, Any]]:
    return [{"uri": f"test://{prefix}/{n}", "name": f"{prefix}{n}"} for n in range(count)]


class PagedFiles:
    """A paged lister (``page``) over ``count`` items whose position is the next item's name (a string)."""

    def __init__(self, count: int, prefix: str = "file") -> None:
        self.items = numbered(prefix, count)
        self.calls: list[tuple[Any, int]] = []
        self.handed_out = 0

    async def page(self, ctx: Any, position: Any, limit: int) -> tuple[list[dict[str, Any]], Any]:
        self.calls.append((position, limit))
        start = 0 if position is None else [item["name"] for item in self.items].index(position)
        chunk = self.items[start : start + limit]
        self.handed_out += len(chunk)
        after = self.items[start + limit]["name"] if start + limit < len(self.items) else None
        return chunk, after


def server_with(*, static: int = 0, plain: int | None = None, paged: list[Any] = (), **options: Any) -> Server:
    """``static`` static resources, an optional plain lister of ``plain`` items, then the paged listers."""
    options.setdefault("state_key", KEY)
    server = Server("paging", "1.0.0", **options)
    for n in range(static):
        server.add_resource(Resource(f"test://static/{n}", f"static{n}", _read))
    if plain is not None:

        @server.resource_lister
        async def plain_lister(ctx):
            return numbered("plain", plain)

    for lister in paged:
        server.resource_lister(paged=True)(lister.page if isinstance(lister, PagedFiles) else lister)
    return server


async def _read(ctx: Any) -> str:
    return "x"


async def walk(client: Any, meta: Any = None) -> list[dict[str, Any]]:
    """Every page of resources/list, following nextCursor."""
    pages, params = [], {}
    while True:
        result = await client.result("resources/list", params, meta=meta)
        pages.append(result)
        if "nextCursor" not in result:
            return pages
        assert len(pages) < 500, "nextCursor chain does not end"
        params = {"cursor": result["nextCursor"]}


def names(pages: list[dict[str, Any]]) -> list[str]:
    return [item["name"] for page in pages for item in page["resources"]]


def with_position(signer: Signer, source: int, position: Any) -> str:
    """A resources/list cursor sealed with ``signer`` (a forger's key, or the server's in white-box tests)."""
    return encode_cursor(signer, "resources/list", [source, position])


# --- the plain lister keeps working -------------------------------------------------------------------


@pytest.mark.parametrize("form", ["bare", "parentheses", "paged-false"])
async def test_the_plain_lister_decorator_works_with_and_without_parentheses(form):
    server = Server("s", "1")
    decorator = {"bare": server.resource_lister, "parentheses": server.resource_lister(), "paged-false": server.resource_lister(paged=False)}[form]

    async def listed(ctx):
        return numbered("plain", 3)

    assert decorator(listed) is listed
    async with serve(server) as client:
        result = await client.result("resources/list")
    assert [item["name"] for item in result["resources"]] == ["plain0", "plain1", "plain2"]
    assert server.resource_listers == [listed] and server.paged_resource_listers == []


async def test_the_paged_decorator_returns_the_handler_and_registers_it_as_paged():
    server = Server("s", "1")
    lister = PagedFiles(1).page
    assert server.resource_lister(paged=True)(lister) is lister
    assert server.paged_resource_listers == [lister] and server.resource_listers == []


async def test_a_paged_lister_alone_makes_the_server_offer_resources():
    server = server_with(paged=[PagedFiles(2)])
    assert "resources" in server.capabilities()
    async with serve(server) as client:
        result = await client.result("resources/list")
    assert names([result]) == ["file0", "file1"]


# --- walking pages ----------------------------------------------------------------------------------


@pytest.mark.req("PAGE-PAGED-LISTER", "PAGE-NEXT-CURSOR")
async def test_walking_every_page_lists_static_then_plain_then_paged_resources_once_in_order():
    first, second = PagedFiles(4, "a"), PagedFiles(3, "b")
    server = server_with(static=3, plain=2, paged=[first, second], page_size=2)
    async with serve(server) as client:
        pages = await walk(client)
    expected = ["static0", "static1", "static2", "plain0", "plain1", "a0", "a1", "a2", "a3", "b0", "b1", "b2"]
    assert names(pages) == expected


@pytest.mark.req("PAGE-PAGED-LISTER")
async def test_a_page_spans_sources_filling_up_to_the_page_size():
    lister = PagedFiles(5)
    async with serve(server_with(static=3, paged=[lister], page_size=2)) as client:
        first = await client.result("resources/list")
        second = await client.result("resources/list", {"cursor": first["nextCursor"]})
    assert names([first]) == ["static0", "static1"]
    assert names([second]) == ["static2", "file0"]
    assert lister.calls == [(None, 1)]  # asked only for the room left on the page


@pytest.mark.req("PAGE-PAGED-LISTER")
async def test_a_page_is_never_longer_than_the_page_size():
    async with serve(server_with(static=7, plain=9, paged=[PagedFiles(11)], page_size=4)) as client:
        pages = await walk(client)
    assert all(len(page["resources"]) <= 4 for page in pages)
    assert len(names(pages)) == 27


@pytest.mark.req("PAGE-PAGED-LISTER")
async def test_a_page_is_shorter_when_the_lister_returns_fewer_than_the_limit():
    async def stingy(ctx, position, limit):
        start = position or 0
        return numbered("s", 10)[start : start + 1], (start + 1 if start + 1 < 10 else None)

    async with serve(server_with(static=1, paged=[stingy], page_size=5)) as client:
        pages = await walk(client)
    assert [len(page["resources"]) for page in pages] == [2] + [1] * 9
    assert all("nextCursor" in page for page in pages[:-1])


@pytest.mark.req("PAGE-PAGED-LISTER")
async def test_a_paged_lister_first_gets_none_then_only_positions_it_returned_as_json_decodes_them():
    seen: list[Any] = []

    async def nested(ctx, position, limit):
        seen.append(position)
        index = 0 if position is None else position[1]["next"]
        chunk = numbered("n", 5)[index : index + limit]
        after = ("dir/sub", {"next": index + limit}) if index + limit < 5 else None  # a tuple comes back as a list
        return chunk, after

    async with serve(server_with(paged=[nested], page_size=2)) as client:
        pages = await walk(client)
    assert names(pages) == ["n0", "n1", "n2", "n3", "n4"]
    assert seen == [None, ["dir/sub", {"next": 2}], ["dir/sub", {"next": 4}]]


@pytest.mark.req("PAGE-PAGED-LISTER-RESUMES")
async def test_walking_all_pages_calls_a_paged_lister_once_per_page_and_never_relists():
    lister = PagedFiles(1000)
    async with serve(server_with(paged=[lister], page_size=10)) as client:
        pages = await walk(client)
    assert len(pages) == 100 and len(names(pages)) == 1000
    assert len(lister.calls) == 100  # one call per page
    assert lister.handed_out == 1000  # nothing listed twice: the cost of the walk is O(total)
    positions = [position for position, _ in lister.calls]
    assert len(set(map(json.dumps, positions))) == len(positions)  # no position asked for twice


@pytest.mark.req("PAGE-PAGED-LISTER")
async def test_a_paged_lister_that_ends_moves_on_to_the_next_one_within_the_same_page():
    first, second = PagedFiles(1, "a"), PagedFiles(5, "b")
    async with serve(server_with(paged=[first, second], page_size=3)) as client:
        result = await client.result("resources/list")
    assert names([result]) == ["a0", "b0", "b1"]
    assert second.calls == [(None, 2)]


async def test_a_synchronous_paged_lister_runs_on_the_handler_pool():
    threads: list[str] = []

    def blocking(ctx, position, limit):
        threads.append(threading.current_thread().name)
        return numbered("sync", 2), None

    async with serve(server_with(paged=[blocking])) as client:
        result = await client.result("resources/list")
    assert names([result]) == ["sync0", "sync1"]
    assert threads and threads[0].startswith("mcp-ref-handler")


async def test_a_paged_lister_may_list_resource_objects_and_dicts():
    async def mixed(ctx, position, limit):
        return [Resource("test://obj", "obj", _read, mime_type="text/plain"), {"uri": "test://dict", "name": "dict"}], None

    async with serve(server_with(paged=[mixed])) as client:
        result = await client.result("resources/list")
    assert result["resources"] == [
        {"uri": "test://obj", "name": "obj", "mimeType": "text/plain"},
        {"uri": "test://dict", "name": "dict"},
    ]


@pytest.mark.req("PAGE-PAGED-LISTER")
async def test_a_legacy_client_walks_a_paged_lister_too():
    server = server_with(static=1, paged=[PagedFiles(4)], page_size=2)
    async with serve(server) as client:
        await client.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}, meta=OMIT)
        pages = await walk(client, meta=OMIT)
    assert names(pages) == ["static0", "file0", "file1", "file2", "file3"]
    assert all("resultType" not in page for page in pages)


# --- lister faults --------------------------------------------------------------------------------


@pytest.mark.req("PAGE-LISTER-FAULTS-32603")
async def test_a_paged_lister_returning_more_than_the_limit_is_an_internal_error():
    async def greedy(ctx, position, limit):
        return numbered("g", limit + 1), None

    async with serve(server_with(paged=[greedy], page_size=3)) as client:
        error = await client.error("resources/list")
    assert error["code"] == -32603 and "more than the 3 items" in error["message"]


@pytest.mark.req("PAGE-LISTER-FAULTS-32603")
@pytest.mark.parametrize(
    "returned",
    [None, [], ["a", "b", "c"], ("not-a-list", None), {"items": [], "next": None}],
    ids=["none", "empty-list", "three-values", "items-not-a-list", "a-dict"],
)
async def test_a_paged_lister_not_returning_items_and_a_position_is_an_internal_error(returned):
    async def broken(ctx, position, limit):
        return returned

    async with serve(server_with(paged=[broken])) as client:
        error = await client.error("resources/list")
    assert error["code"] == -32603 and "(items, next_position)" in error["message"]


@pytest.mark.req("PAGE-LISTER-FAULTS-32603")
async def test_a_next_position_that_is_not_json_is_an_internal_error():
    async def odd(ctx, position, limit):
        return numbered("o", 1), {1, 2}

    async with serve(server_with(paged=[odd])) as client:
        error = await client.error("resources/list")
    assert error["code"] == -32603 and "not JSON" in error["message"]


@pytest.mark.req("PAGE-LISTER-FAULTS-32603")
async def test_a_paged_lister_that_makes_no_progress_is_an_internal_error():
    async def stuck(ctx, position, limit):
        return [], "same"

    async with serve(server_with(paged=[stuck], page_size=2)) as client:
        first = await client.result("resources/list")  # an empty page that says more follows: allowed once
        error = await client.error("resources/list", {"cursor": first["nextCursor"]})
    assert first["resources"] == [] and error["code"] == -32603 and "no progress" in error["message"]


@pytest.mark.req("PAGE-LISTER-FAULTS-32603")
@pytest.mark.parametrize("kind", ["plain", "paged"])
async def test_a_listed_item_that_is_not_a_resource_is_an_internal_error(kind):
    server = server_with()
    if kind == "plain":

        @server.resource_lister
        async def plain(ctx):
            return ["test://just-a-string"]

    else:

        @server.resource_lister(paged=True)
        async def paged(ctx, position, limit):
            return ["test://just-a-string"], None

    async with serve(server) as client:
        error = await client.error("resources/list")
    assert error["code"] == -32603 and "not a resource" in error["message"]


# --- sealed cursors -----------------------------------------------------------------------------------


async def first_cursor(client: Any, method: str = "resources/list") -> str:
    return (await client.result(method))["nextCursor"]


@pytest.mark.req("PAGE-SEALED-CURSORS", "PAGE-INVALID-CURSOR-32602")
async def test_a_tampered_cursor_is_invalid_params():
    async with serve(server_with(static=5, page_size=2)) as client:
        cursor = await first_cursor(client)
        raw = bytearray(b64url_decode(cursor))
        raw[-1] ^= 0x01  # the payload's last byte: still valid JSON-ish, no longer the sealed value
        error = await client.error("resources/list", {"cursor": b64url_encode(bytes(raw))})
    assert error == {"code": -32602, "message": "Invalid cursor", "data": {"cursor": b64url_encode(bytes(raw))[:CURSOR_ECHO_CHARS]}}


@pytest.mark.req("PAGE-SEALED-CURSORS", "PAGE-INVALID-CURSOR-32602")
@pytest.mark.parametrize("keep", [0.9, 0.5, 0.1])
async def test_a_truncated_cursor_is_invalid_params(keep):
    async with serve(server_with(static=5, page_size=2)) as client:
        cursor = await first_cursor(client)
        truncated = b64url_encode(b64url_decode(cursor)[: int(len(b64url_decode(cursor)) * keep)])
        error = await client.error("resources/list", {"cursor": truncated})
    assert error["code"] == -32602 and error["message"] == "Invalid cursor"


@pytest.mark.req("PAGE-SEALED-CURSORS")
async def test_a_cursor_from_a_server_with_another_key_is_invalid_params():
    async with serve(server_with(static=5, page_size=2, state_key=b"a" * 32)) as client:
        foreign = await first_cursor(client)
    async with serve(server_with(static=5, page_size=2, state_key=b"b" * 32)) as client:
        error = await client.error("resources/list", {"cursor": foreign})
    assert error["code"] == -32602 and error["message"] == "Invalid cursor"


@pytest.mark.req("PAGE-SEALED-CURSORS")
async def test_a_forged_position_never_reaches_the_lister():
    lister = PagedFiles(5)
    async with serve(server_with(paged=[lister], page_size=2)) as client:
        forged = with_position(Signer(b"mallory" * 5), 1, "../../etc/passwd")
        error = await client.error("resources/list", {"cursor": forged})
    assert error["code"] == -32602
    assert lister.calls == []


@pytest.mark.req("PAGE-SEALED-CURSORS")
async def test_a_cursor_of_one_list_method_is_refused_by_resources_list_even_with_the_same_position():
    async with serve(server_with(static=5, page_size=2)) as client:
        resources_cursor = await first_cursor(client)
        same_payload_other_method = encode_cursor(SIGNER, "resources/templates/list", [0, 2])
        assert decode_cursor(SIGNER, resources_cursor, "resources/list") == [0, 2]
        error = await client.error("resources/list", {"cursor": same_payload_other_method})
    assert error["code"] == -32602


@pytest.mark.req("PAGE-SEALED-CURSORS")
async def test_cursors_survive_a_restart_when_the_state_key_is_set(monkeypatch):
    monkeypatch.setenv("MCP_REF_STATE_KEY", "a shared secret")
    async with serve(server_with(static=5, page_size=2, state_key=None)) as client:
        cursor = await first_cursor(client)
    async with serve(server_with(static=5, page_size=2, state_key=None)) as client:  # "restarted"
        result = await client.result("resources/list", {"cursor": cursor})
    assert names([result]) == ["static2", "static3"]


@pytest.mark.req("PAGE-SEALED-CURSORS")
async def test_without_a_state_key_a_restarted_server_refuses_old_cursors(monkeypatch):
    monkeypatch.delenv("MCP_REF_STATE_KEY", raising=False)
    async with serve(server_with(static=5, page_size=2, state_key=None)) as client:
        cursor = await first_cursor(client)
    async with serve(server_with(static=5, page_size=2, state_key=None)) as client:
        error = await client.error("resources/list", {"cursor": cursor})
    assert error["code"] == -32602


def respellings(cursor: str) -> dict[str, str]:
    """Other spellings of the same bytes, and near misses, none of which may be accepted."""
    standard = base64.b64encode(b64url_decode(cursor)).decode().rstrip("=")
    return {
        "padded": cursor + "=" * (-len(cursor) % 4 or 4),
        "standard-alphabet": standard,
        "trailing-newline": cursor + "\n",
        "leading-space": " " + cursor,
        "inner-space": cursor[:10] + " " + cursor[10:],
        "dot-appended": cursor + ".",
    }


@pytest.mark.req("PAGE-CURSOR-ONE-SPELLING")
async def test_only_the_spelling_the_server_wrote_is_accepted():
    async with serve(server_with(static=5, page_size=2)) as client:
        cursor = await first_cursor(client)
        assert "-" in cursor or "_" in cursor, "precondition: the cursor uses the url-safe alphabet"
        errors = {name: await client.error("resources/list", {"cursor": text}) for name, text in respellings(cursor).items()}
        assert (await client.result("resources/list", {"cursor": cursor}))["resources"]
    assert {name: error["code"] for name, error in errors.items()} == {name: -32602 for name in errors}


@pytest.mark.req("PAGE-CURSOR-ONE-SPELLING")
def test_a_final_character_with_non_zero_spare_bits_is_refused():
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    cursor = next(c for c in (encode_cursor(SIGNER, "tools/list", n) for n in range(100)) if len(c) % 4 in (2, 3))
    assert decode_cursor(SIGNER, cursor, "tools/list") is not None
    sloppy = cursor[:-1] + alphabet[alphabet.index(cursor[-1]) | 1]
    assert base64.urlsafe_b64decode(sloppy + "=" * (-len(sloppy) % 4)) == b64url_decode(cursor)  # lenient decoders agree
    with pytest.raises(InvalidParams):
        decode_cursor(SIGNER, sloppy, "tools/list")


@pytest.mark.req("PAGE-CURSOR-ONE-SPELLING")
@pytest.mark.parametrize("text", ["A", "AAAAA", "ab+c", "ab/c", "abc=", "ab\nc", "ab c", "é", 5, None])
def test_strict_base64url_refuses_everything_but_canonical_unpadded_text(text):
    with pytest.raises(ValueError):
        b64url_decode(text)


@pytest.mark.req("PAGE-INVALID-CURSOR-SHORT-ECHO")
@pytest.mark.parametrize("length", [65, 10_000, 1_000_000])
async def test_an_invalid_cursor_error_echoes_at_most_a_short_prefix(length):
    sent = "A" * length
    async with serve(server_with(static=5, page_size=2)) as client:
        error = await client.error("resources/list", {"cursor": sent})
    assert error["code"] == -32602
    assert error["data"]["cursor"] == sent[:CURSOR_ECHO_CHARS] and len(error["data"]["cursor"]) == 64


@pytest.mark.req("PAGE-INVALID-CURSOR-32602", "PAGE-INVALID-CURSOR-GRACEFUL")
async def test_a_resources_cursor_past_the_end_of_a_shrunken_static_list_is_invalid_params():
    server = server_with(static=5, page_size=2)
    async with serve(server) as client:
        first = await client.result("resources/list")
        second = await client.result("resources/list", {"cursor": first["nextCursor"]})
        for uri in list(server.resources)[1:]:
            server.remove_resource(uri)
        error = await client.error("resources/list", {"cursor": second["nextCursor"]})
        still = await client.result("resources/list")
    assert error["code"] == -32602 and "changed" in error["message"]
    assert names([still]) == ["static0"]


@pytest.mark.req("PAGE-INVALID-CURSOR-32602")
async def test_a_cursor_into_a_lister_that_is_gone_is_invalid_params():
    server = server_with(static=1, paged=[PagedFiles(5)], page_size=2)
    async with serve(server) as client:
        cursor = await first_cursor(client)
        server.paged_resource_listers.clear()
        error = await client.error("resources/list", {"cursor": cursor})
    assert error["code"] == -32602 and "changed" in error["message"]


@pytest.mark.req("PAGE-INVALID-CURSOR-32602")
async def test_a_paged_position_that_now_points_at_a_plain_lister_is_invalid_params():
    server = server_with(paged=[PagedFiles(5)], page_size=2)
    async with serve(server) as client:
        cursor = await first_cursor(client)  # [1, "file2"]: source 1 is the paged lister

        @server.resource_lister
        async def late(ctx):  # now source 1 is this plain lister, which pages by offset
            return numbered("late", 3)

        error = await client.error("resources/list", {"cursor": cursor})
    assert error["code"] == -32602 and "changed" in error["message"]


@pytest.mark.req("PAGE-INVALID-CURSOR-32602")
@pytest.mark.parametrize("payload", [5, "x", [0], [0, 1, 2], [-1, None], [True, None], ["0", None]])
async def test_a_sealed_resources_cursor_of_the_wrong_shape_is_invalid_params(payload):
    async with serve(server_with(static=5, page_size=2)) as client:
        error = await client.error("resources/list", {"cursor": encode_cursor(SIGNER, "resources/list", payload)})
    assert error["code"] == -32602


def test_a_tag_for_one_purpose_never_verifies_for_another():
    payload = b'[0,2]'
    assert SIGNER.verify("cursor resources/list", payload, SIGNER.tag("cursor resources/list", payload))
    assert not SIGNER.verify("requestState", payload, SIGNER.tag("cursor resources/list", payload))
    assert not SIGNER.verify("cursor tools/list", payload, SIGNER.tag("cursor resources/list", payload))


@pytest.mark.req("MRTR-STATE-SEALING")
@pytest.mark.parametrize("respell", [lambda t: t + "=", lambda t: t.replace(".", "=."), lambda t: " " + t], ids=["padded", "padded-payload", "leading-space"])
def test_request_state_is_decoded_as_strictly_as_cursors(respell):
    sealer = StateSealer(key=KEY)
    token = sealer.seal("tools/call", {"name": "t"}, {"step": 1})
    assert sealer.open(token, "tools/call", {"name": "t"}).state == {"step": 1}
    with pytest.raises(InvalidParams, match="malformed"):
        sealer.open(respell(token), "tools/call", {"name": "t"})


def test_the_server_signs_cursors_and_request_state_with_one_signer():
    server = Server("s", "1", state_key=KEY)
    assert server.signer is server.sealer.signer
    assert decode_cursor(server.signer, encode_cursor(SIGNER, "tools/list", 3), "tools/list") == 3


# --- watch hooks: what is watched, and when ----------------------------------------------------------------


def listening_server(**options: Any) -> tuple[Server, list[WatchSet]]:
    """A server announcing every list and resource updates, with a sync hook recording every call."""
    options.setdefault("list_changed", True)
    options.setdefault("resource_subscriptions", True)
    server = Server("watching", "1.0.0", **options)

    @server.tool()
    async def noop(ctx, args):
        return "ok"

    seen: list[WatchSet] = []
    server.on_watch(seen.append)
    return server, seen


def acked(listen_id: Any):
    return lambda m: m.get("method") == ACK and m["params"]["_meta"][SUBSCRIPTION_ID] == listen_id


class ListSink:
    """A ``LineSink`` keeping every line in ``lines``."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines

    def write(self, line: bytes) -> None:
        self.lines.append(line)

    async def drain(self) -> None:
        pass


async def open_stream(client: Any, listen_id: str, **wanted: Any) -> None:
    client.request("subscriptions/listen", {"notifications": wanted}, id=listen_id)
    await client.wait_for(acked(listen_id))


@pytest.mark.req("SUB-WATCH-HOOK-SET", "SUB-WATCH-HOOK-WHEN")
async def test_opening_a_stream_calls_the_watch_hook_after_the_acknowledgement_with_its_uris_and_lists():
    server, seen = listening_server()
    ack_written_first: list[bool] = []
    server.on_watch(lambda watched: ack_written_first.append(any(b"acknowledged" in line for line in client.sink.lines)))
    async with serve(server) as client:
        await open_stream(client, "s1", toolsListChanged=True, resourceSubscriptions=["test://a", "test://b", "test://a"])
        assert seen == [WatchSet(frozenset({"test://a", "test://b"}), frozenset({"tools"}))]
        assert ack_written_first == [True]


@pytest.mark.req("SUB-WATCH-HOOK-SET")
async def test_the_watch_set_holds_only_what_the_server_honours():
    server, seen = listening_server(list_changed=["tools"], resource_subscriptions=False)
    async with serve(server) as client:
        await open_stream(client, "s1", toolsListChanged=True, promptsListChanged=True, resourcesListChanged=True,
                          resourceSubscriptions=["test://a"])
        assert seen == [WatchSet(frozenset(), frozenset({"tools"}))]
        assert server.watched == seen[-1]


@pytest.mark.req("SUB-WATCH-HOOK-SET")
async def test_the_watch_set_is_the_union_of_every_open_stream():
    server, seen = listening_server()
    async with serve(server) as client:
        await open_stream(client, "s1", toolsListChanged=True, resourceSubscriptions=["test://a"])
        await open_stream(client, "s2", promptsListChanged=True, resourceSubscriptions=["test://b"])
        assert seen[-1] == WatchSet(frozenset({"test://a", "test://b"}), frozenset({"tools", "prompts"}))
        client.cancel("s1")
        await until(lambda: len(seen) == 3)
        assert seen[-1] == WatchSet(frozenset({"test://b"}), frozenset({"prompts"}))


@pytest.mark.req("SUB-WATCH-HOOK-WHEN")
async def test_cancelling_the_last_stream_calls_the_watch_hook_with_an_empty_set():
    server, seen = listening_server()
    async with serve(server) as client:
        await open_stream(client, "s1", resourceSubscriptions=["test://a"])
        client.cancel("s1")
        await until(lambda: len(seen) == 2)
        assert seen == [WatchSet(frozenset({"test://a"})), WatchSet()]
        assert server.watched == WatchSet()
    assert len(seen) == 2  # serving stopped with nothing watched: no further call


@pytest.mark.req("SUB-WATCH-HOOK-WHEN")
async def test_a_change_that_leaves_the_watch_set_as_it_was_calls_no_hook():
    server, seen = listening_server()
    async with serve(server) as client:
        await open_stream(client, "s1", toolsListChanged=True, resourceSubscriptions=["test://a"])
        await open_stream(client, "s2", toolsListChanged=True, resourceSubscriptions=["test://a"])  # same set
        await open_stream(client, "s3")  # an empty filter adds nothing
        client.cancel("s2")
        client.cancel("s3")
        await client.result("tools/call", {"name": "noop"})
        assert len(client.dispatcher.subscriptions) == 1
        assert seen == [WatchSet(frozenset({"test://a"}), frozenset({"tools"}))]


@pytest.mark.req("SUB-WATCH-HOOK-SET", "SUB-WATCH-HOOK-WHEN")
async def test_a_legacy_session_watches_every_announced_list_it_fetched_and_its_subscribed_uris():
    server, seen = listening_server(list_changed=["tools", "resources"])
    async with serve(server) as client:
        await client.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}, meta=OMIT)
        assert seen == []  # nothing fetched yet: nothing can be stale, nothing is watched
        await client.result("resources/list", {}, meta=OMIT)
        assert seen == [WatchSet(frozenset(), frozenset({"resources"}))]
        await client.result("resources/templates/list", {}, meta=OMIT)  # the same list kind: no change
        await client.result("tools/list", {}, meta=OMIT)
        assert seen[-1] == WatchSet(frozenset(), frozenset({"tools", "resources"})) and len(seen) == 2
        await client.result("resources/subscribe", {"uri": "test://a"}, meta=OMIT)
        await client.result("resources/subscribe", {"uri": "test://a"}, meta=OMIT)  # already held: no change
        assert seen[-1] == WatchSet(frozenset({"test://a"}), frozenset({"tools", "resources"})) and len(seen) == 3
        await client.result("resources/unsubscribe", {"uri": "test://a"}, meta=OMIT)
        assert seen[-1] == WatchSet(frozenset(), frozenset({"tools", "resources"})) and len(seen) == 4
    assert seen[-1] == WatchSet() and len(seen) == 5  # serving stopped


@pytest.mark.req("SUB-WATCH-HOOK-WHEN")
async def test_serving_stops_with_an_empty_watch_set_for_open_streams_too():
    server, seen = listening_server()
    async with serve(server) as client:
        await open_stream(client, "s1", resourcesListChanged=True)
    assert seen == [WatchSet(frozenset(), frozenset({"resources"})), WatchSet()]
    assert "result" in client.responses("s1")[0]  # the stream still got its graceful response


async def test_on_watch_returns_the_handler_unchanged():
    server = Server("s", "1")

    def hook(watched):
        pass

    assert server.on_watch(hook) is hook


async def test_the_watch_hook_is_not_called_when_nobody_ever_listened():
    server, seen = listening_server()
    async with serve(server) as client:
        await client.result("tools/call", {"name": "noop"})
    assert seen == []


# --- watch hooks: sync and async, failures, shutdown ------------------------------------------------------


@pytest.mark.req("SUB-WATCH-HOOK-ISOLATED")
async def test_an_async_hook_runs_in_its_own_task_never_concurrently_and_catches_up_with_the_newest_set():
    server, _ = listening_server()
    calls: list[WatchSet] = []
    running = 0
    overlap = False
    release = asyncio.Event()

    @server.on_watch
    async def slow(watched):
        nonlocal running, overlap
        running += 1
        overlap = overlap or running > 1
        calls.append(watched)
        await release.wait()
        running -= 1

    async with serve(server) as client:
        await open_stream(client, "s1", resourceSubscriptions=["test://a"])  # the hook starts and blocks
        await open_stream(client, "s2", resourceSubscriptions=["test://b"])  # intermediate set: skipped
        await open_stream(client, "s3", resourceSubscriptions=["test://c"])
        await until(lambda: len(calls) == 1)
        release.set()
        await until(lambda: len(calls) == 2)
        assert calls[1].resource_uris == {"test://a", "test://b", "test://c"}
    assert calls[-1] == WatchSet() and not overlap


@pytest.mark.req("SUB-WATCH-HOOK-WHEN", "SUB-WATCH-HOOK-ISOLATED")
async def test_an_async_hook_is_awaited_with_the_empty_set_before_serving_ends():
    server, _ = listening_server()
    calls: list[WatchSet] = []

    @server.on_watch
    async def careful(watched):
        await asyncio.sleep(0.02)  # stopping a watcher takes a moment
        calls.append(watched)

    async with serve(server) as client:
        await open_stream(client, "s1", toolsListChanged=True)
        await until(lambda: len(calls) == 1)
    assert calls == [WatchSet(frozenset(), frozenset({"tools"})), WatchSet()]


@pytest.mark.req("SUB-WATCH-HOOK-ISOLATED")
async def test_an_async_hook_still_running_at_shutdown_is_cancelled_after_the_stop_timeout(monkeypatch):
    monkeypatch.setattr(watch, "WATCH_STOP_SECONDS", 0.05)
    server, _ = listening_server()
    cancelled = asyncio.Event()

    @server.on_watch
    async def stubborn(watched):
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    started = time.monotonic()
    async with serve(server) as client:
        await open_stream(client, "s1", toolsListChanged=True)
    assert cancelled.is_set() and time.monotonic() - started < 10  # 0.05 s of stop timeout, not the hook's hour


@pytest.mark.req("SUB-WATCH-HOOK-ISOLATED")
@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_a_failing_watch_hook_is_logged_and_the_stream_keeps_working(flavour, caplog):
    server, seen = listening_server()
    if flavour == "sync":

        def broken(watched):
            raise RuntimeError("watcher exploded")

    else:

        async def broken(watched):
            raise RuntimeError("watcher exploded")

    server.on_watch(broken)
    caplog.set_level(logging.ERROR, logger="mcp_ref.watch")
    async with serve(server) as client:
        await open_stream(client, "s1", toolsListChanged=True)
        await until(lambda: any("watcher exploded" in r.getMessage() or (r.exc_info and "watcher exploded" in str(r.exc_info[1])) for r in caplog.records))
        server.notify_list_changed("tools")
        await client.wait_for(lambda m: m.get("method") == "notifications/tools/list_changed")
        assert len(seen) == 1  # the other hook was still told
    assert {record.name for record in caplog.records} == {"mcp_ref.watch"}


# --- thread safety ---------------------------------------------------------------------------------------


@pytest.mark.req("SUB-NOTIFY-ANY-THREAD")
async def test_notify_list_changed_from_a_worker_thread_reaches_the_stream():
    server, _ = listening_server()

    @server.tool()
    def announce(ctx, args):  # a plain def: runs on a worker thread
        assert threading.current_thread() is not threading.main_thread()
        server.notify_list_changed("prompts")
        server.notify_resource_updated("test://a")
        return "announced"

    async with serve(server) as client:
        await open_stream(client, "s1", promptsListChanged=True, resourceSubscriptions=["test://a"])
        await client.result("tools/call", {"name": "announce"})
        changed = await client.wait_for(lambda m: m.get("method") == "notifications/prompts/list_changed")
        updated = await client.wait_for(lambda m: m.get("method") == "notifications/resources/updated")
    assert changed["params"]["_meta"][SUBSCRIPTION_ID] == "s1" and updated["params"]["uri"] == "test://a"


@pytest.mark.req("SUB-NOTIFY-ANY-THREAD")
async def test_notify_from_a_thread_while_serving_ends_never_raises():
    server, _ = listening_server()
    failures: list[BaseException] = []
    stop = threading.Event()

    def hammer():
        while not stop.is_set():
            try:
                server.notify_list_changed("tools")
                server.notify_resource_updated("test://a")
            except BaseException as exc:  # pragma: no cover - the failure this test looks for
                failures.append(exc)
            time.sleep(0.0002)

    thread = threading.Thread(target=hammer)
    thread.start()
    try:
        for _ in range(20):
            async with serve(server) as client:
                await open_stream(client, "s1", toolsListChanged=True)
    finally:
        stop.set()
        thread.join()
    assert failures == []


@pytest.mark.req("SUB-NOTIFY-ANY-THREAD")
async def test_a_change_announced_from_a_thread_just_before_serving_ends_is_dropped():
    server, _ = listening_server()
    sent: list[bytes] = []
    session = Session(server, ListSink(sent))
    session.legacy.version = "2025-11-25"  # a legacy session hears every change, no stream needed
    session.legacy.subscribed_uris.add("test://a")
    thread = threading.Thread(target=lambda: (server.notify_list_changed("tools"), server.notify_resource_updated("test://a")))
    thread.start()
    thread.join()  # both are queued on this loop, which has not run them yet
    await session.shutdown(1.0)  # the session ends (it is detached) before they run
    for _ in range(3):
        await asyncio.sleep(0)
    assert sent == []


@pytest.mark.req("SUB-NOTIFY-ANY-THREAD")
def test_notify_after_the_event_loop_closed_does_nothing():
    server, _ = listening_server()
    loop = asyncio.new_event_loop()

    async def attach() -> Session:
        return Session(server, ListSink([]))  # never shut down: the server still counts it as served

    loop.run_until_complete(attach())
    loop.close()
    failures: list[BaseException] = []

    def announce() -> None:  # a thread that read the sessions just as the loop closed
        try:
            server.notify_list_changed("tools")
            server.notify_resource_updated("test://a")
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=announce)
    thread.start()
    thread.join()
    assert failures == []


def test_discarding_a_stream_the_hub_does_not_hold_changes_nothing():
    hub = subscriptions.SubscriptionHub()
    hub.discard("never-opened")
    assert len(hub) == 0 and hub.uri_total == 0 and hub.watched_uris() == frozenset()


def test_notify_while_not_serving_does_nothing():
    server, _ = listening_server()
    server.notify_list_changed("tools")
    server.notify_resource_updated("test://a")


# --- bounds on what subscriptions hold ---------------------------------------------------------------------


@pytest.mark.req("SUB-SUBSCRIBED-URIS-BOUNDED")
async def test_a_listen_over_the_subscribed_uri_limit_is_refused_and_registers_nothing(monkeypatch):
    monkeypatch.setattr(subscriptions, "MAX_SUBSCRIBED_URIS", 3)
    server, seen = listening_server()
    async with serve(server) as client:
        await open_stream(client, "s1", resourceSubscriptions=["test://a", "test://b"])
        error = await client.error("subscriptions/listen", {"notifications": {"toolsListChanged": True, "resourceSubscriptions": ["test://c", "test://d"]}})
        assert error["code"] == -32602 and "Too many subscribed resource URIs" in error["message"]
        assert error["data"] == {"limit": 3, "held": 2, "requested": 2}
        assert len(client.dispatcher.subscriptions) == 1 and client.dispatcher.subscriptions.uri_total == 2
        assert len(client.notifications(ACK)) == 1
        assert seen == [WatchSet(frozenset({"test://a", "test://b"}))]


@pytest.mark.req("SUB-SUBSCRIBED-URIS-BOUNDED")
async def test_the_default_bound_is_ten_thousand_uris_across_all_streams():
    assert subscriptions.MAX_SUBSCRIBED_URIS == 10_000
    server, _ = listening_server()
    uris = [f"test://r/{n}" for n in range(10_000)]
    async with serve(server) as client:
        await open_stream(client, "s1", resourceSubscriptions=uris[:6000])
        await open_stream(client, "s2", resourceSubscriptions=uris[6000:])
        error = await client.error("subscriptions/listen", {"notifications": {"resourceSubscriptions": ["test://one-more"]}})
    assert error["code"] == -32602


@pytest.mark.req("SUB-SUBSCRIBED-URIS-BOUNDED")
async def test_duplicate_uris_in_one_listen_count_once_and_ending_a_stream_frees_its_share(monkeypatch):
    monkeypatch.setattr(subscriptions, "MAX_SUBSCRIBED_URIS", 2)
    server, _ = listening_server()
    async with serve(server) as client:
        await open_stream(client, "s1", resourceSubscriptions=["test://a", "test://a", "test://b"])
        assert client.dispatcher.subscriptions.uri_total == 2
        client.cancel("s1")
        await until(lambda: client.dispatcher.subscriptions.uri_total == 0)
        await open_stream(client, "s2", resourceSubscriptions=["test://c", "test://d"])


@pytest.mark.req("SUB-SUBSCRIBED-URIS-BOUNDED")
async def test_uris_a_server_does_not_honour_are_not_held_and_do_not_count(monkeypatch):
    monkeypatch.setattr(subscriptions, "MAX_SUBSCRIBED_URIS", 1)
    server, _ = listening_server(resource_subscriptions=False)
    async with serve(server) as client:
        await open_stream(client, "s1", toolsListChanged=True, resourceSubscriptions=["test://a", "test://b"])
        assert client.dispatcher.subscriptions.uri_total == 0


@pytest.mark.req("SUB-SUBSCRIBED-URIS-BOUNDED")
async def test_a_listen_with_a_uri_longer_than_the_limit_is_refused():
    server, seen = listening_server()
    async with serve(server) as client:
        error = await client.error(
            "subscriptions/listen", {"notifications": {"resourceSubscriptions": ["test://ok", "test://" + "a" * MAX_URI_LENGTH]}}
        )
    assert error["code"] == -32602 and str(MAX_URI_LENGTH) in error["message"]
    assert len(error["data"]["uri"]) < 300
    assert seen == [] and not client.notifications(ACK)


@pytest.mark.req("SUB-SUBSCRIBED-URIS-BOUNDED")
async def test_a_legacy_subscribe_over_the_limit_is_refused_but_a_held_uri_may_be_subscribed_again(monkeypatch):
    monkeypatch.setattr(subscriptions, "MAX_SUBSCRIBED_URIS", 2)
    server, _ = listening_server()
    async with serve(server) as client:
        await open_stream(client, "s1", resourceSubscriptions=["test://a"])
        await client.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}, meta=OMIT)
        await client.result("resources/subscribe", {"uri": "test://b"}, meta=OMIT)
        error = await client.error("resources/subscribe", {"uri": "test://c"}, meta=OMIT)
        again = await client.result("resources/subscribe", {"uri": "test://b"}, meta=OMIT)
    assert error["code"] == -32602 and error["data"] == {"limit": 2, "held": 2, "requested": 1}
    assert again == {} and client.dispatcher.legacy.subscribed_uris == {"test://b"}


@pytest.mark.req("SUB-SUBSCRIBED-URIS-BOUNDED")
@pytest.mark.parametrize("method", ["resources/subscribe", "resources/unsubscribe"])
async def test_a_legacy_subscribe_with_a_uri_longer_than_the_limit_is_refused(method):
    server, _ = listening_server()
    async with serve(server) as client:
        await client.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}, meta=OMIT)
        error = await client.error(method, {"uri": "test://" + "a" * MAX_URI_LENGTH}, meta=OMIT)
    assert error["code"] == -32602 and not client.dispatcher.legacy.subscribed_uris


# --- over the wire ---------------------------------------------------------------------------------------


def stderr_lines(process: ServerProcess, kind: str) -> list[str]:
    prefix = f"watch_server: {kind} "
    return [line[len(prefix):] for line in process.stderr_text().splitlines() if line.startswith(prefix)]


def wait_for_stderr(process: ServerProcess, kind: str, count: int, timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while len(lines := stderr_lines(process, kind)) < count:
        assert time.monotonic() < deadline, f"fewer than {count} {kind} lines:\n{process.stderr_text()}"
        time.sleep(0.01)
    return lines


@pytest.mark.req("PAGE-PAGED-LISTER", "PAGE-PAGED-LISTER-RESUMES", "PAGE-SEALED-CURSORS")
def test_over_the_wire_a_paged_lister_is_walked_page_by_page_resuming_where_it_stopped():
    with ServerProcess(module=WATCH_SERVER, env={"WATCH_SERVER_FILES": "25", "WATCH_SERVER_PAGE_SIZE": "10"}) as process:
        pages, params, request_id = [], {}, 0
        while True:
            request_id += 1
            page = result_of(process.request(modern_request(request_id, "resources/list", params)))
            pages.append(page)
            if "nextCursor" not in page:
                break
            params = {"cursor": page["nextCursor"]}
        tampered = pages[0]["nextCursor"][:-2] + ("AA" if not pages[0]["nextCursor"].endswith("AA") else "BA")
        error = error_of(process.request(modern_request(99, "resources/list", {"cursor": tampered})))
        process.shutdown()
        lister_calls = stderr_lines(process, "lister")
    listed = [item["uri"] for page in pages for item in page["resources"]]
    assert listed == ["files://static/readme"] + [f"files://data/f{n:04d}" for n in range(25)]
    assert [len(page["resources"]) for page in pages] == [10, 10, 6]
    assert lister_calls == [
        'position=null limit=9 returned=9',
        'position="f0009" limit=10 returned=10',
        'position="f0019" limit=10 returned=6',
    ]
    assert error["code"] == -32602 and error["message"] == "Invalid cursor"


@pytest.mark.req("SUB-WATCH-HOOK-WHEN", "SUB-WATCH-HOOK-SET", "SUB-NOTIFY-ANY-THREAD")
def test_over_the_wire_the_watch_hook_follows_a_stream_from_open_to_cancel_and_stops_at_eof():
    with ServerProcess(module=WATCH_SERVER) as process:
        process.send(modern_request("w1", "subscriptions/listen", {"notifications": {"resourcesListChanged": True, "resourceSubscriptions": ["files://data/f0001"]}}))
        process.read_until(lambda m: m.get("method") == ACK)
        assert wait_for_stderr(process, "watch", 1) == ['uris=["files://data/f0001"] lists=["resources"]']
        touched = process.request(tool_call(1, "touch", {"name": "f0001"}))
        assert "result" in touched
        update = next(m for m in process.received if m.get("method") == "notifications/resources/updated")
        assert update["params"]["uri"] == "files://data/f0001"
        process.send(cancel("w1"))
        assert wait_for_stderr(process, "watch", 2)[1] == "uris=[] lists=[]"
        process.send(modern_request("w2", "subscriptions/listen", {"notifications": {"resourceSubscriptions": ["files://data/f0002"]}}))
        process.read_until(lambda m: m.get("method") == ACK and m["params"]["_meta"][SUBSCRIPTION_ID] == "w2")
        assert wait_for_stderr(process, "watch", 3)[2] == 'uris=["files://data/f0002"] lists=[]'
        process.shutdown()
        assert stderr_lines(process, "watch")[3:] == ["uris=[] lists=[]"]
