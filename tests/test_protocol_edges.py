"""Protocol edges a hostile or broken client reaches (issue 6, all but the transport's part).

Each behaviour is tested in memory (``tests.memory``: the real wire reader and dispatcher, no
process) where that proves it, and at least once per area through real stdio against
``tests.servers.edges_server`` (or ``basic_server``), whose every line ``tests.wire`` checks
against the official schema. Areas, in file order:

* the event loop never stalls or loses a request: URI template matching is linear, and only the
  client's cancellation silences a request (``SystemExit`` and friends end only their request);
* wire and protocol edges: a cancelled id is free at once, strict tokens, short echoes of client
  input, huge integers, duplicate member names, safe template values, roots and elicitation
  answers;
* client values of the wrong JSON type (a list or object where a string is expected) are
  -32602 wherever they are looked up, never an unhashable-type crash;
* spec fidelity: inputRequests keys, advertised versions, tool exceptions as tool errors,
  concise error messages, and the transport binding rules (UTF-8, delivery, custom streams).
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import re
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from mcp_ref import InputRequired, InvalidParams, Server, ToolResult, list_roots, text
from mcp_ref.core.errors import ECHO_CHARS
from mcp_ref.features.pagination import CURSOR_ECHO_CHARS
from mcp_ref.features.uritemplate import UriTemplate
from mcp_ref.core.versions import LEGACY_VERSIONS, MODERN_VERSION
from tests.memory import OMIT, modern_meta, serve, until
from tests.servers.edges_server import build_server
from tests.wire import (
    REPO_ROOT,
    ServerProcess,
    call,
    cancel,
    decode_line,
    encode_line,
    error_of,
    modern_request,
    request,
    result_of,
    tool_call,
)
from tests.wire import modern_meta as wire_meta

EDGES = "tests.servers.edges_server"
ROOTS = {"roots": {}}
FORM = {"elicitation": {"form": {}, "url": {}}}
MEGABYTE = 1024 * 1024

_ids = itertools.count(1000)


@pytest.fixture(scope="module")
def edges() -> Any:
    """One edges server for the module's stdio tests: the modern era is stateless, and each test
    leaves it serving (a test that kills it would say so)."""
    with ServerProcess(module=EDGES) as process:
        yield process


def text_of(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> bool:
    return not any(record.exc_info for record in caplog.records if record.name.startswith("mcp_ref"))


# === the event loop must not stall or lose requests ==============================================

# --- URI templates: linear matching ------------------------------------------------------------------

HOSTILE = [
    pytest.param("db://{table}-{id}", "db://" + "-" * 65000 + "/", id="two-variables-64k-of-separators"),
    pytest.param("db://{table}-{id}", "db://" + "a" * 65530, id="two-variables-64k-no-separator"),
    pytest.param("x://{a}-{b}-{c}", "x://" + "-" * 65000 + "/", id="three-variables-64k"),
    pytest.param("x://{a}-{b}-{c}-{d}-{e}", "x://" + "-" * 65000 + "/", id="five-variables-64k"),
    pytest.param("x://{a}-{b}-{c}-{d}-{e}", "x://" + "a-" * 32000 + "/", id="five-variables-alternating"),
    pytest.param("x://{+a}-{b}-{c}", "x://" + "-/" * 32000 + "?", id="reserved-then-simple"),
    pytest.param("file:///{+path}/meta/{name}", "file:///" + "a/meta/" * 9000 + "/", id="reserved-with-a-repeated-literal"),
]


@pytest.mark.req("RES-TEMPLATE-MATCH-LINEAR")
@pytest.mark.parametrize("template, uri", HOSTILE)
def test_matching_a_64_kib_hostile_uri_takes_milliseconds(template, uri):
    compiled = UriTemplate(template)
    started = time.perf_counter()
    compiled.match(uri)
    assert time.perf_counter() - started < 0.05


@pytest.mark.req("RES-TEMPLATE-MATCH-LINEAR")
def test_hostile_uris_against_templates_are_answered_in_milliseconds_through_stdio(edges):
    reads = ["db://" + "-" * 65000 + "/", "x://" + "-" * 65000 + "/", "x://" + "a-" * 32000 + "/"]
    started = time.monotonic()
    errors = [error_of(edges.request(modern_request(next(_ids), "resources/read", {"uri": uri}))) for uri in reads]
    elapsed = time.monotonic() - started
    assert [error["code"] for error in errors] == [-32602] * 3
    assert elapsed < 2.0, f"three hostile reads took {elapsed:.2f} s"  # the backtracking matcher took 14 s and more
    assert text_of(call(edges, "echo", {"text": "still here"})) == "still here"


@pytest.mark.req("RES-TEMPLATE-MATCH-LINEAR")
@pytest.mark.parametrize("template", ["x://{a}{b}", "x://{a}{+b}", "x://{a}{b}{c}{d}{e}", "x://{+a}{b}/z"])
def test_adjacent_variables_are_refused_when_the_template_is_registered(template):
    with pytest.raises(ValueError, match="adjacent"):
        UriTemplate(template)


def _exists_split(literals: list[str], kinds: list[str], uri: str) -> bool:
    """Brute force: is there any split of ``uri`` into the literals and non-empty values?"""

    def rest(index: int, position: int) -> bool:
        if index == len(kinds):
            return uri[position:] == literals[-1]
        if not uri.startswith(literals[index], position):
            return False
        start = position + len(literals[index])
        for end in range(start + 1, len(uri) + 1):
            value = uri[start:end]
            if kinds[index] == "simple" and re.search("[/?#]", value):
                break
            if rest(index + 1, end):
                return True
        return False

    return rest(0, 0)


@pytest.mark.req("RES-TEMPLATE-MATCH")
@pytest.mark.parametrize("seed", range(4))
def test_a_template_with_at_most_one_reserved_variable_matches_whenever_any_split_exists(seed):
    rng = random.Random(seed)
    alphabet = "ab/-.?"
    for _ in range(1500):
        count = rng.randint(1, 3)
        reserved = rng.randrange(count + 1)  # == count: no reserved variable
        literals = ["x:"] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 2))) for _ in range(count - 1)]
        literals.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 2))))
        kinds = ["reserved" if i == reserved else "simple" for i in range(count)]
        template = literals[0] + "".join(
            ("{+v%d}" if kind == "reserved" else "{v%d}") % i + literals[i + 1] for i, kind in enumerate(kinds)
        )
        uri = "x:" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9)))
        found = UriTemplate(template).match(uri)
        assert (found is not None) == _exists_split(literals, kinds, uri), (template, uri, found)
        if found is not None:  # the values put back between the literals give the URI again
            rebuilt = literals[0] + "".join(found[f"v{i}"] + literals[i + 1] for i in range(count))
            assert rebuilt == uri


@pytest.mark.req("RES-TEMPLATE-MATCH")
@pytest.mark.parametrize(
    "template, uri, expected",
    [
        ("db://{schema}/tables/{table}/rows/{+rest}", "db://s/tables/t/rows/1/2", {"schema": "s", "table": "t", "rest": "1/2"}),
        ("x://{+dir}/meta/{name}", "x://a/meta/b/meta/c", {"dir": "a/meta/b", "name": "c"}),
        ("db://{table}-{id}", "db://a-b-c", {"table": "a", "id": "b-c"}),
        ("x://{+a}/{+b}/{+c}", "x://1/2/3/4", {"a": "1", "b": "2", "c": "3/4"}),
        ("x://{a}.{b}", "x://a.", None),
    ],
)
def test_the_matching_rule_splits_uris_as_documented(template, uri, expected):
    assert UriTemplate(template).match(uri) == expected


# --- URI templates: what a matched value guarantees ---------------------------------------------------


@pytest.mark.req("RES-TEMPLATE-VALUES-SAFE")
@pytest.mark.parametrize("uri", ["seg://a%2Fb/info", "seg://a%2fb/info", "seg://..%2F..%2Fetc/info", "seg://a/b/info"])
def test_a_simple_variable_never_yields_a_slash(uri):
    assert UriTemplate("seg://{name}/info").match(uri) is None


@pytest.mark.req("RES-TEMPLATE-VALUES-SAFE")
@pytest.mark.parametrize("value", ["a%00b", "a\x00b", "a%0Ab", "a%1Fb", "a%7Fb", "a%C2%85b", "a\tb"])
@pytest.mark.parametrize("template", ["seg://{name}/info", "file:///{+name}"])
def test_no_matched_value_carries_a_control_character(template, value):
    assert UriTemplate(template).match(template.split("{")[0] + value + ("/info" if "seg" in template else "")) is None


@pytest.mark.req("RES-TEMPLATE-VALUES-SAFE")
def test_percent_encoded_bytes_must_be_utf8():
    assert UriTemplate("file:///{+path}").match("file:///a%FFb") is None
    assert UriTemplate("file:///{+path}").match("file:///caf%C3%A9/%2E%2E") == {"path": "café/.."}


@pytest.mark.req("RES-TEMPLATE-VALUES-SAFE", "RES-NOT-FOUND-32602")
@pytest.mark.parametrize("uri", ["seg://a%2Fb/info", "db://x%00-1", "file:///ok%0D%0Ainjected", "db://caf%FF-1"])
def test_unsafe_template_values_are_not_found_through_stdio(edges, uri):
    error = error_of(edges.request(modern_request(next(_ids), "resources/read", {"uri": uri})))
    assert error["code"] == -32602 and error["data"] == {"uri": uri}


@pytest.mark.req("RES-TEMPLATE-VALUES-SAFE")
def test_a_safe_value_reaches_the_handler_decoded_through_stdio(edges):
    result = result_of(edges.request(modern_request(next(_ids), "resources/read", {"uri": "seg://caf%C3%A9%20%3F/info"})))
    assert json.loads(result["contents"][0]["text"]) == {"name": "café ?"}


# --- only the client's cancellation silences a request ---------------------------------------------------

FAULTS = ["system_exit", "keyboard_interrupt", "generator_exit", "inner_cancel"]


@pytest.mark.req("CANCEL-ONLY-CLIENT-SILENCES")
@pytest.mark.parametrize("tool", FAULTS)
async def test_a_handler_that_raises_a_base_exception_gets_an_error_response(tool):
    async with serve(build_server()) as client:
        response = await client.call("tools/call", {"name": tool})
        alive = await client.result("tools/call", {"name": "echo", "arguments": {"text": "alive"}})
    assert response["error"] == {"code": -32603, "message": "Internal error while handling tools/call"}
    assert text_of(alive) == "alive"


@pytest.mark.req("CANCEL-ONLY-CLIENT-SILENCES", "STDIO-RESPONSES-BY-ID")
def test_system_exit_and_friends_end_only_their_request_and_the_server_keeps_serving(edges):
    slow = tool_call(next(_ids), "slow", {"seconds": 0.5})
    faults = [tool_call(next(_ids), name) for name in FAULTS]
    edges.send_raw(b"".join(encode_line(m) for m in [slow, *faults]))  # all in flight at once
    answers = {name: edges.response(m["id"]) for name, m in zip(FAULTS, faults)}
    assert {name: a["error"]["code"] for name, a in answers.items()} == {name: -32603 for name in FAULTS}
    assert text_of(result_of(edges.response(slow["id"]))) == "slept"
    assert text_of(call(edges, "echo", {"text": "alive"})) == "alive"
    assert edges.returncode is None


@pytest.mark.req("CANCEL-ONLY-CLIENT-SILENCES", "CANCEL-NO-RESPONSE")
async def test_the_clients_own_cancellation_still_silences_a_request():
    async with serve(build_server()) as client:
        request_id = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 5}})
        await client.started(request_id)  # cancelled inside its handler
        client.cancel(request_id)
        await client.settle()
    assert client.responses(request_id) == []


# === wire and protocol edges ================================================================================

# --- a cancelled request's id is free at once ---------------------------------------------------------------


def _write(*messages: dict[str, Any]) -> bytes:
    return b"".join(encode_line(m) for m in messages)


@pytest.mark.req("CANCEL-ID-FREE-AT-ONCE", "BASE-REQUEST-ID-UNIQUE")
async def test_a_cancelled_id_may_be_reused_in_the_same_write_as_the_cancellation():
    async with serve(build_server()) as client:
        slow = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow", "arguments": {"seconds": 5}, "_meta": modern_meta()}}
        again = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "again"}, "_meta": modern_meta()}}
        client.feed(_write(slow, cancel(7), again))
        response = await client.response(7)
        await client.settle()
    assert text_of(response["result"]) == "again"
    assert len(client.responses(7)) == 1


@pytest.mark.req("CANCEL-ID-FREE-AT-ONCE")
async def test_a_cancelled_listen_id_may_open_a_new_stream_at_once():
    server = build_server()
    async with serve(server) as client:
        listen = {"jsonrpc": "2.0", "id": "s", "method": "subscriptions/listen", "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()}}
        client.feed(_write(listen))
        await client.wait_for(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
        client.feed(_write(cancel("s"), listen))
        await client.wait_for(lambda m: len([n for n in client.notifications("notifications/subscriptions/acknowledged")]) == 2)
        await until(lambda: client.dispatcher.backlog == 0)  # the old stream's task has ended (the new one is not counted)
        assert len(client.dispatcher.subscriptions) == 1  # and its teardown left the new one alone
        server.notify_list_changed("tools")  # on the loop: every stream it reaches is written to before it returns
        client.collect()
        assert len(client.notifications("notifications/tools/list_changed")) == 1


@pytest.mark.req("CANCEL-ID-FREE-AT-ONCE")
def test_a_cancelled_id_may_be_reused_in_the_same_write_through_stdio(edges):
    request_id = next(_ids)
    edges.send_raw(_write(tool_call(request_id, "slow", {"seconds": 5}), cancel(request_id), tool_call(request_id, "echo", {"text": "reused"})))
    assert text_of(result_of(edges.response(request_id))) == "reused"
    barrier = next(_ids)
    edges.request(modern_request(barrier, "server/discover"))
    assert not [m for m in edges.pending if m.get("id") == request_id]


# --- tokens decode strictly ------------------------------------------------------------------------------------


def _respellings(token: str) -> list[str]:
    return [token + "=", token + "\n", " " + token, token.replace("-", "+").replace("_", "/") if ("-" in token or "_" in token) else token + "+", token + "."]


@pytest.mark.req("PAGE-CURSOR-ONE-SPELLING")
def test_only_the_cursor_spelling_the_server_wrote_is_accepted_through_stdio():
    with ServerProcess(env={"BASIC_SERVER_PAGE_SIZE": "2"}) as process:
        cursor = result_of(process.request(modern_request(1, "tools/list")))["nextCursor"]
        codes = [error_of(process.request(modern_request(n, "tools/list", {"cursor": c})))["code"] for n, c in enumerate(_respellings(cursor), 2)]
        assert result_of(process.request(modern_request(99, "tools/list", {"cursor": cursor})))["tools"]
    assert codes == [-32602] * len(codes)


@pytest.mark.req("MRTR-STATE-SEALING")
def test_only_the_request_state_spelling_the_server_wrote_is_accepted_through_stdio(edges):
    first = call(edges, "ask_roots", capabilities=ROOTS)
    token = first["requestState"]
    answer = {"roots": {"roots": [{"uri": "file:///home/user"}]}}
    for respelled in _respellings(token):
        error = error_of(request(edges, "tools/call", {"name": "ask_roots", "inputResponses": answer, "requestState": respelled}, capabilities=ROOTS))
        assert error["code"] == -32602
    assert call(edges, "ask_roots", capabilities=ROOTS, inputResponses=answer, requestState=token)["resultType"] == "complete"


# --- error data never echoes more than a short prefix of client input --------------------------------------------

BIG = "A" * MEGABYTE


def _echo_cases() -> list[Any]:
    meta_long_version = modern_meta(protocol_version=BIG)
    return [
        pytest.param("no/such/method" + BIG, {}, None, -32601, id="unknown-method"),
        pytest.param("tools/call", {"name": BIG}, None, -32602, id="unknown-tool"),
        pytest.param("prompts/get", {"name": BIG}, None, -32602, id="unknown-prompt"),
        pytest.param("prompts/get", {"name": "p", "arguments": {f"{n}{BIG[:1000]}": "v" for n in range(300)}}, None, -32602, id="unknown-prompt-arguments"),
        pytest.param("completion/complete", {"ref": {"type": "ref/prompt", "name": BIG}, "argument": {"name": "a", "value": ""}}, None, -32602, id="completion-unknown-prompt"),
        pytest.param("completion/complete", {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": BIG, "value": ""}}, None, -32602, id="completion-unknown-argument"),
        pytest.param("completion/complete", {"ref": {"type": "ref/resource", "uri": BIG}, "argument": {"name": "a", "value": ""}}, None, -32602, id="completion-unknown-template"),
        pytest.param("resources/read", {"uri": "nope://" + "a" * 65000}, None, -32602, id="resource-not-found"),
        pytest.param("resources/read", {"uri": "nope://" + BIG}, None, -32602, id="resource-uri-too-long"),
        pytest.param("server/discover", {}, meta_long_version, -32022, id="unsupported-version"),
        pytest.param("tools/list", {"cursor": BIG}, None, -32602, id="invalid-cursor"),
        pytest.param("subscriptions/listen", {"notifications": {"resourceSubscriptions": ["x://" + BIG]}}, None, -32602, id="subscribed-uri-too-long"),
        pytest.param("tools/call", {"name": "ask_form", "inputResponses": {"confirm": {"action": "accept", "content": {"ok": BIG}}}}, modern_meta(capabilities=FORM), -32602, id="form-answer-breaking-the-schema"),
        pytest.param("tools/call", {"name": "ask_roots", "inputResponses": {"roots": {"roots": [{"uri": BIG}]}}}, modern_meta(capabilities=ROOTS), -32602, id="roots-answer"),
    ]


@pytest.mark.req("BASE-ERROR-SHORT-ECHO")
@pytest.mark.parametrize("method, params, meta, code", _echo_cases())
async def test_an_error_quotes_at_most_a_short_prefix_of_client_input(method, params, meta, code):
    async with serve(build_server()) as client:
        error = await client.error(method, params, meta=meta)
    assert error["code"] == code
    assert len(json.dumps(error)) < 2000, json.dumps(error)[:3000]
    assert "A" * (ECHO_CHARS + 1) not in json.dumps(error)


@pytest.mark.req("BASE-ERROR-SHORT-ECHO")
async def test_a_reused_in_flight_id_is_not_quoted_whole_in_the_message():
    async with serve(build_server()) as client:
        big_id = "i" * MEGABYTE
        client.request("tools/call", {"name": "slow", "arguments": {"seconds": 1}}, id=big_id)
        client.request("tools/call", {"name": "echo", "arguments": {"text": "x"}}, id=big_id)
        duplicate = await client.wait_for(lambda m: "error" in m)
        client.cancel(big_id)
    assert duplicate["error"]["code"] == -32600 and len(duplicate["error"]["message"]) < 400


@pytest.mark.req("BASE-ERROR-SHORT-ECHO", "TOOLS-INPUT-VALIDATION-IS-ERROR")
async def test_argument_problems_in_a_tool_error_quote_a_short_prefix_of_the_value():
    async with serve(build_server()) as client:
        result = await client.result("tools/call", {"name": "echo", "arguments": {"text": [BIG]}})
    assert result["isError"] is True and len(text_of(result)) < 1000


@pytest.mark.req("BASE-ERROR-SHORT-ECHO")
def test_a_megabyte_of_client_input_comes_back_as_a_short_prefix_through_stdio(edges):
    responses = [
        edges.request(modern_request(next(_ids), "tools/call", {"name": BIG})),
        edges.request(modern_request(next(_ids), "tools/list", {"cursor": BIG})),
        edges.request({"jsonrpc": "2.0", "id": next(_ids), "method": "server/discover", "params": {"_meta": wire_meta(protocol_version=BIG)}}),
    ]
    errors = [error_of(r) for r in responses]
    assert [e["code"] for e in errors] == [-32602, -32602, -32022]
    assert all(len(json.dumps(e)) < 2000 for e in errors)
    assert errors[1]["data"]["cursor"] == BIG[:CURSOR_ECHO_CHARS]
    assert errors[2]["data"]["requested"] == BIG[:ECHO_CHARS] + "..."


# --- very large integers --------------------------------------------------------------------------------------------

DIGITS_4300 = int("9" * 4300)


@pytest.mark.req("BASE-LARGE-INTEGERS", "TOOLS-ERRORS-IN-RESULT")
def test_a_tool_summing_two_4300_digit_numbers_answers_with_a_clear_tool_error():
    with ServerProcess() as process:
        result = result_of(process.request(tool_call(1, "add", {"a": DIGITS_4300, "b": DIGITS_4300})))
        fine = result_of(process.request(tool_call(2, "add", {"a": 2, "b": 3})))
        stderr = process.stderr_text()
    assert result["isError"] is True
    assert "4300 digits" in text_of(result) and "integer-string conversion" in text_of(result)
    assert text_of(fine) == "5"
    assert "Traceback" not in stderr


@pytest.mark.req("BASE-LARGE-INTEGERS")
@pytest.mark.parametrize("structured", [False, True], ids=["in-content", "in-structured-content"])
async def test_a_result_holding_a_huge_integer_is_a_clear_internal_error_without_a_traceback(structured, caplog):
    server = Server("big", "1")

    @server.tool(description="returns a huge integer")
    async def huge(ctx, args):
        value = DIGITS_4300 * 10
        return ToolResult([text("x")], structured_content=value) if structured else ToolResult(structured_content=value)

    caplog.set_level(logging.ERROR, logger="mcp_ref")
    async with serve(server) as client:
        error = await client.error("tools/call", {"name": "huge"})
    assert error["code"] == -32603 and "4300 digits" in error["message"]
    assert no_tracebacks(caplog)


# --- duplicate member names: the last one wins ---------------------------------------------------------------------


@pytest.mark.req("BASE-DUPLICATE-MEMBERS-LAST-WINS")
async def test_duplicate_member_names_in_the_envelope_params_and_meta_are_read_last_wins():
    line = (
        '{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list","method":"tools/call",'
        '"params":{"name":"nope","name":"echo","arguments":{"text":"first","text":"last"},'
        '"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        '"io.modelcontextprotocol/clientCapabilities":{}}}}\n'
    )
    async with serve(build_server()) as client:
        client.feed(line.encode())
        response = await client.response(2)
    assert text_of(response["result"]) == "last"


@pytest.mark.req("BASE-DUPLICATE-MEMBERS-LAST-WINS")
def test_duplicate_member_names_are_read_last_wins_through_stdio(edges):
    request_id = next(_ids)
    line = (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"first","text":"last"}},'
        '"_meta":{"io.modelcontextprotocol/logLevel":[],"io.modelcontextprotocol/logLevel":"error",'
        '"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}\n'
    )
    edges.send_raw(line.encode())
    assert text_of(result_of(edges.response(request_id))) == "last"


# --- roots answers are validated -------------------------------------------------------------------------------------


@pytest.mark.req("ROOTS-ANSWER-VALIDATED", "MRTR-VALIDATE-INPUT-RESPONSES")
@pytest.mark.parametrize(
    "roots",
    [
        [{"uri": "https://example.com/repo"}],
        [{"uri": "/home/user/project"}],
        [{"uri": "file:///ok"}, {"uri": "ftp://host/x"}],
        [{"uri": "file:///home/\x00user"}],
        [{"uri": "file:///ok", "name": 5}],
        [{"uri": ["file:///ok"]}],
    ],
)
async def test_a_roots_answer_that_is_not_a_list_of_file_uris_is_invalid_params(roots):
    async with serve(build_server()) as client:
        error = await client.error("tools/call", {"name": "ask_roots", "inputResponses": {"roots": {"roots": roots}}}, meta=modern_meta(capabilities=ROOTS))
    assert error["code"] == -32602


@pytest.mark.req("ROOTS-ANSWER-VALIDATED")
async def test_file_uris_in_any_case_reach_the_handler():
    roots = [{"uri": "file:///home/user/project", "name": "project"}, {"uri": "FILE:///srv"}]
    async with serve(build_server()) as client:
        result = await client.result("tools/call", {"name": "ask_roots", "inputResponses": {"roots": {"roots": roots}}}, meta=modern_meta(capabilities=ROOTS))
    assert json.loads(text_of(result)) == {"roots": roots}


@pytest.mark.req("ROOTS-ANSWER-VALIDATED")
def test_a_roots_answer_with_a_non_file_uri_is_invalid_params_through_stdio(edges):
    error = error_of(request(edges, "tools/call", {"name": "ask_roots", "inputResponses": {"roots": {"roots": [{"uri": "https://example.com"}]}}}, capabilities=ROOTS))
    assert error["code"] == -32602 and "file://" in error["message"]


# --- a declined or cancelled elicitation carries no content ---------------------------------------------------------


@pytest.mark.req("ELIC-CONTENT-ONLY-ON-ACCEPT", "ELIC-HANDLE-DECLINE-CANCEL")
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_content_sent_with_a_decline_or_cancel_never_reaches_the_handler(action):
    answer = {"action": action, "content": {"ok": True, "smuggled": "x"}}
    async with serve(build_server()) as client:
        result = await client.result("tools/call", {"name": "ask_form", "inputResponses": {"confirm": answer}}, meta=modern_meta(capabilities=FORM))
    assert json.loads(text_of(result)) == {"action": action}


@pytest.mark.req("ELIC-CONTENT-ONLY-ON-ACCEPT")
async def test_content_sent_with_an_accepted_url_elicitation_never_reaches_the_handler():
    answer = {"action": "accept", "content": {"token": "x"}}
    async with serve(build_server()) as client:
        result = await client.result("tools/call", {"name": "ask_url", "inputResponses": {"visit": answer}}, meta=modern_meta(capabilities=FORM))
    assert json.loads(text_of(result)) == {"action": "accept"}


@pytest.mark.req("ELIC-CONTENT-ONLY-ON-ACCEPT")
def test_an_accepted_form_keeps_its_content_and_a_decline_loses_it_through_stdio(edges):
    accepted = call(edges, "ask_form", capabilities=FORM, inputResponses={"confirm": {"action": "accept", "content": {"ok": True}}})
    declined = call(edges, "ask_form", capabilities=FORM, inputResponses={"confirm": {"action": "decline", "content": {"ok": True}}})
    assert json.loads(text_of(accepted)) == {"action": "accept", "content": {"ok": True}}
    assert json.loads(text_of(declined)) == {"action": "decline"}


# === client values of the wrong JSON type are -32602, never an unhashable-type crash =============================

WRONG_TYPES = [[], {}, ["a"], {"a": 1}]


def _modern_lookups() -> list[Any]:
    """(method, params builder, _meta builder): every lookup of a client value, with ``v`` in its place."""

    def meta(**overrides: Any) -> Any:
        return lambda v: modern_meta(**{k: (v if o is None else o) for k, o in overrides.items()})

    def listed(v: Any) -> Any:  # where an object is the right type, test lists only
        return v if isinstance(v, list) else [v]

    def plain(v: Any) -> None:
        return None

    def roots(v: Any) -> Any:
        return modern_meta(capabilities={**ROOTS, **FORM})

    return [
        pytest.param("server/discover", lambda v: {}, meta(log_level=None), id="meta-logLevel"),
        pytest.param("server/discover", lambda v: {}, meta(protocol_version=None), id="meta-protocolVersion"),
        pytest.param("server/discover", lambda v: {}, lambda v: modern_meta(capabilities=listed(v)), id="meta-clientCapabilities"),
        pytest.param("server/discover", lambda v: {}, lambda v: modern_meta(client_info=listed(v)), id="meta-clientInfo"),
        pytest.param("server/discover", lambda v: {}, meta(progress_token=None), id="meta-progressToken"),
        pytest.param("server/discover", lambda v: {"_meta": v}, lambda v: OMIT, id="meta-itself"),
        pytest.param("tools/call", lambda v: {"name": v}, plain, id="tool-name"),
        pytest.param("tools/call", lambda v: {"name": "echo", "arguments": v if isinstance(v, list) else [v]}, plain, id="tool-arguments"),
        pytest.param("tools/list", lambda v: {"cursor": v}, plain, id="tools-cursor"),
        pytest.param("prompts/list", lambda v: {"cursor": v}, plain, id="prompts-cursor"),
        pytest.param("resources/list", lambda v: {"cursor": v}, plain, id="resources-cursor"),
        pytest.param("resources/templates/list", lambda v: {"cursor": v}, plain, id="templates-cursor"),
        pytest.param("prompts/get", lambda v: {"name": v}, plain, id="prompt-name"),
        pytest.param("prompts/get", lambda v: {"name": "p", "arguments": v if isinstance(v, list) else [v]}, plain, id="prompt-arguments"),
        pytest.param("prompts/get", lambda v: {"name": "p", "arguments": {"a": v}}, plain, id="prompt-argument-value"),
        pytest.param("completion/complete", lambda v: {"ref": v, "argument": {"name": "a", "value": ""}}, plain, id="completion-ref"),
        pytest.param("completion/complete", lambda v: {"ref": {"type": v, "name": "p"}, "argument": {"name": "a", "value": ""}}, plain, id="completion-ref-type"),
        pytest.param("completion/complete", lambda v: {"ref": {"type": "ref/prompt", "name": v}, "argument": {"name": "a", "value": ""}}, plain, id="completion-ref-name"),
        pytest.param("completion/complete", lambda v: {"ref": {"type": "ref/resource", "uri": v}, "argument": {"name": "a", "value": ""}}, plain, id="completion-ref-uri"),
        pytest.param("completion/complete", lambda v: {"ref": {"type": "ref/prompt", "name": "p"}, "argument": v}, plain, id="completion-argument"),
        pytest.param("completion/complete", lambda v: {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": v, "value": ""}}, plain, id="completion-argument-name"),
        pytest.param("completion/complete", lambda v: {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": v}}, plain, id="completion-argument-value"),
        pytest.param("completion/complete", lambda v: {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}, "context": v if isinstance(v, list) else [v]}, plain, id="completion-context"),
        pytest.param("completion/complete", lambda v: {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}, "context": {"arguments": v if isinstance(v, list) else [v]}}, plain, id="completion-context-arguments"),
        pytest.param("resources/read", lambda v: {"uri": v}, plain, id="resource-uri"),
        pytest.param("subscriptions/listen", lambda v: {"notifications": v if isinstance(v, list) else [v]}, plain, id="listen-filter"),
        pytest.param("subscriptions/listen", lambda v: {"notifications": {"toolsListChanged": v}}, plain, id="listen-flag"),
        pytest.param("subscriptions/listen", lambda v: {"notifications": {"resourceSubscriptions": v if isinstance(v, dict) else [v]}}, plain, id="listen-uris"),
        pytest.param("tools/call", lambda v: {"name": "ask_roots", "requestState": v}, roots, id="request-state"),
        pytest.param("tools/call", lambda v: {"name": "ask_roots", "inputResponses": v if isinstance(v, list) else [v]}, roots, id="input-responses"),
        pytest.param("tools/call", lambda v: {"name": "ask_roots", "inputResponses": {"roots": v if isinstance(v, list) else [v]}}, roots, id="input-response"),
        pytest.param("tools/call", lambda v: {"name": "ask_roots", "inputResponses": {"roots": {"roots": v if isinstance(v, dict) else [v]}}}, roots, id="roots-list"),
        pytest.param("tools/call", lambda v: {"name": "ask_roots", "inputResponses": {"roots": {"roots": [{"uri": v}]}}}, roots, id="root-uri"),
        pytest.param("tools/call", lambda v: {"name": "ask_form", "inputResponses": {"confirm": {"action": v}}}, roots, id="elicitation-action"),
        pytest.param("tools/call", lambda v: {"name": "ask_form", "inputResponses": {"confirm": {"action": "accept", "content": v if isinstance(v, list) else [v]}}}, roots, id="elicitation-content"),
        pytest.param("tools/call", lambda v: {"name": "ask_form", "inputResponses": {"confirm": {"action": "accept", "content": {"ok": v}}}}, roots, id="elicitation-field"),
    ]


@pytest.mark.req("BASE-WRONG-TYPE-32602")
@pytest.mark.parametrize("value", WRONG_TYPES, ids=["empty-list", "empty-object", "list", "object"])
@pytest.mark.parametrize("method, params, meta", _modern_lookups())
async def test_a_list_or_object_where_a_value_is_looked_up_is_invalid_params(method, params, meta, value, caplog):
    caplog.set_level(logging.ERROR, logger="mcp_ref")
    async with serve(build_server()) as client:
        response = await client.call(method, params(value), meta=meta(value))
    if "result" in response:  # only a tool's own argument validation may answer with a result
        assert response["result"].get("isError") is True, response
    else:
        assert response["error"]["code"] == -32602, response
    assert no_tracebacks(caplog)


@pytest.mark.req("LOG-INVALID-LEVEL-32602", "BASE-WRONG-TYPE-32602")
@pytest.mark.parametrize("level", WRONG_TYPES, ids=["empty-list", "empty-object", "list", "object"])
async def test_a_list_or_object_log_level_is_invalid_params(level, caplog):
    caplog.set_level(logging.ERROR, logger="mcp_ref")
    async with serve(build_server()) as client:
        error = await client.error("tools/list", meta=modern_meta(log_level=level))
    assert error["code"] == -32602 and no_tracebacks(caplog)


def _legacy_client_lookups() -> list[Any]:
    return [
        pytest.param("logging/setLevel", lambda v: {"level": v}, id="setLevel-level"),
        pytest.param("resources/subscribe", lambda v: {"uri": v}, id="subscribe-uri"),
        pytest.param("resources/unsubscribe", lambda v: {"uri": v}, id="unsubscribe-uri"),
        pytest.param("initialize", lambda v: {"protocolVersion": v, "capabilities": {}}, id="initialize-version"),
        pytest.param("initialize", lambda v: {"protocolVersion": "2025-11-25", "capabilities": v if isinstance(v, list) else [v]}, id="initialize-capabilities"),
    ]


@pytest.mark.req("LEGACY-LOG-INVALID-LEVEL-32602", "BASE-WRONG-TYPE-32602")
@pytest.mark.parametrize("value", WRONG_TYPES, ids=["empty-list", "empty-object", "list", "object"])
@pytest.mark.parametrize("method, params", _legacy_client_lookups())
async def test_a_list_or_object_in_a_legacy_request_is_invalid_params(method, params, value, caplog):
    caplog.set_level(logging.ERROR, logger="mcp_ref")
    async with serve(build_server()) as client:
        await client.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}, meta=OMIT)
        error = await client.error(method, params(value), meta=OMIT)
    assert error["code"] == -32602 and no_tracebacks(caplog)


@pytest.mark.req("BASE-WRONG-TYPE-32602")
@pytest.mark.parametrize("request_id", WRONG_TYPES, ids=["empty-list", "empty-object", "list", "object"])
async def test_a_cancellation_naming_a_list_or_object_is_ignored(request_id, caplog):
    caplog.set_level(logging.ERROR, logger="mcp_ref")
    async with serve(build_server()) as client:
        client.cancel(request_id)
        result = await client.result("tools/call", {"name": "echo", "arguments": {"text": "served"}})
    assert text_of(result) == "served" and no_tracebacks(caplog)
    assert [m for m in client.messages if "error" in m] == []


@pytest.mark.req("LOG-INVALID-LEVEL-32602", "LEGACY-LOG-INVALID-LEVEL-32602", "BASE-WRONG-TYPE-32602")
def test_unhashable_log_levels_are_invalid_params_without_a_traceback_through_stdio():
    with ServerProcess(module=EDGES, schema="auto") as process:
        modern = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": wire_meta(log_level=[])}}
        first = error_of(process.request(modern))
        result_of(process.request({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}))
        second = error_of(process.request({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": {}}}))
        stderr = process.stderr_text()
    assert (first["code"], second["code"]) == (-32602, -32602)
    assert "Traceback" not in stderr


# === spec fidelity ===========================================================================================

# --- inputRequests keys are unique strings ------------------------------------------------------------------


@pytest.mark.req("MRTR-INPUT-KEYS-UNIQUE")
@pytest.mark.parametrize("keys", [{1: list_roots(), "1": list_roots()}, {1: list_roots()}, {("a",): list_roots()}, {None: list_roots()}])
def test_input_required_refuses_keys_that_are_not_strings_when_raised(keys):
    with pytest.raises(ValueError, match="keys must be strings"):
        InputRequired(keys)


@pytest.mark.req("MRTR-INPUT-KEYS-UNIQUE")
def test_a_handler_raising_non_string_keys_never_writes_a_duplicate_key_through_stdio(edges):
    request_id = next(_ids)
    edges.send(tool_call(request_id, "bad_keys", capabilities=ROOTS))
    line, response = edges.read_line_and_message()
    while response.get("id") != request_id:  # an earlier test's leftover line
        line, response = edges.read_line_and_message()
    assert response["result"]["isError"] is True and "inputRequests" not in response["result"]
    assert b'"1"' not in line


# --- every version the modern era offers is usable in _meta ----------------------------------------------------


@pytest.mark.req("VER-DUAL-ERA-ADVERTISES-LEGACY", "DISC-SUPPORTED-VERSIONS")
async def test_every_version_in_discover_and_in_a_32022_is_usable_in_meta():
    async with serve(build_server()) as client:
        discovered = (await client.result("server/discover"))["supportedVersions"]
        refused = await client.error("server/discover", meta=modern_meta(protocol_version="1999-01-01"))
        offered = set(discovered) | set(refused["data"]["supported"])
        answers = [await client.call("tools/list", meta=modern_meta(protocol_version=version)) for version in sorted(offered)]
    assert all("result" in answer for answer in answers), answers
    assert refused["data"]["initializeVersions"] == list(LEGACY_VERSIONS)
    assert not offered & set(LEGACY_VERSIONS)


@pytest.mark.req("VER-DUAL-ERA-ADVERTISES-LEGACY", "VER-UNSUPPORTED-32022")
def test_a_32022_names_initialize_versions_apart_and_its_supported_ones_work_through_stdio(edges):
    refused = error_of(edges.request({"jsonrpc": "2.0", "id": next(_ids), "method": "tools/list", "params": {"_meta": wire_meta(protocol_version="2025-11-25")}}))
    assert refused["code"] == -32022
    assert refused["data"] == {"supported": [MODERN_VERSION], "requested": "2025-11-25", "initializeVersions": list(LEGACY_VERSIONS)}
    for version in refused["data"]["supported"]:
        assert "tools" in result_of(edges.request({"jsonrpc": "2.0", "id": next(_ids), "method": "tools/list", "params": {"_meta": wire_meta(protocol_version=version)}}))


@pytest.mark.req("VER-UNSUPPORTED-32022", "VER-DUAL-ERA-ADVERTISES-LEGACY")
async def test_a_modern_only_server_names_no_initialize_versions():
    async with serve(Server("m", "1", modern_only=True)) as client:
        refused = await client.error("server/discover", meta=modern_meta(protocol_version="2025-11-25"))
    assert refused["data"] == {"supported": [MODERN_VERSION], "requested": "2025-11-25"}


# --- exceptions a tool raises are tool execution errors -----------------------------------------------------------


@pytest.mark.req("TOOLS-ERRORS-IN-RESULT")
async def test_protocol_errors_and_input_requests_a_tool_raises_stay_what_they_are():
    server = Server("t", "1")

    @server.tool(description="refuses its params")
    async def strict(ctx, args):
        raise InvalidParams("bad params, on purpose")

    @server.tool(description="asks for roots")
    async def asks(ctx, args):
        return ctx.ask("roots", list_roots())

    async with serve(server) as client:
        error = await client.error("tools/call", {"name": "strict"})
        interim = await client.result("tools/call", {"name": "asks"}, meta=modern_meta(capabilities=ROOTS))
    assert error == {"code": -32602, "message": "bad params, on purpose"}
    assert interim["resultType"] == "input_required"


@pytest.mark.req("TOOLS-ERRORS-IN-RESULT", "TOOLS-EXECUTION-ERROR-IS-ERROR")
def test_an_unexpected_tool_exception_is_a_tool_error_with_the_traceback_on_stderr_only():
    with ServerProcess() as process:
        result = result_of(process.request(tool_call(1, "crash")))
        stderr = process.stderr_text()
    assert result["isError"] is True
    assert text_of(result) == "Tool 'crash' failed with an internal error; the details are in the server's log."
    assert "Traceback" in stderr and "secret internal detail" in stderr


# --- error messages are one concise sentence ---------------------------------------------------------------------


def _error_producers() -> list[Any]:
    return [
        pytest.param(b"{not json\n", id="parse-error"),
        pytest.param(b"[]\n", id="batch"),
        pytest.param(b'{"jsonrpc":"1.0","id":1,"method":"x"}\n', id="bad-jsonrpc"),
        pytest.param(b'{"jsonrpc":"2.0","id":null,"method":"x"}\n', id="null-id"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"x","params":[]}\n', id="array-params"),
        pytest.param(_line("no/such/method"), id="unknown-method"),
        pytest.param(_line("tools/list", meta=None), id="missing-meta"),
        pytest.param(_line("tools/list", meta=modern_meta(protocol_version="1999-01-01")), id="unsupported-version"),
        pytest.param(_line("tools/call", {"name": "ask_roots"}), id="missing-capability"),
        pytest.param(_line("tools/call", {"name": "nope"}), id="unknown-tool"),
        pytest.param(_line("tools/call", {"arguments": {}}), id="malformed-call"),
        pytest.param(_line("prompts/get", {"name": "p", "arguments": {"zzz": "1"}}), id="undeclared-prompt-argument"),
        pytest.param(_line("resources/read", {"uri": "nope://x"}), id="resource-not-found"),
        pytest.param(_line("tools/list", {"cursor": "bogus"}), id="invalid-cursor"),
        pytest.param(_line("tools/call", {"name": "ask_roots", "requestState": "a.b"}, meta=modern_meta(capabilities=ROOTS)), id="bad-request-state"),
        pytest.param(_line("tools/call", {"name": "ask_roots", "inputResponses": {"roots": {}}}, meta=modern_meta(capabilities=ROOTS)), id="bad-input-response"),
        pytest.param(_line("tools/call", {"name": "system_exit"}), id="internal-error"),
        pytest.param(_line("subscriptions/listen", {}), id="malformed-listen"),
    ]


def _line(method: str, params: dict[str, Any] | None = None, meta: Any = ...) -> bytes:
    body = dict(params or {})
    if meta is ...:
        meta = modern_meta()
    if meta is not None:
        body["_meta"] = meta
    return encode_line({"jsonrpc": "2.0", "id": 1, "method": method, "params": body})


@pytest.mark.req("BASE-ERROR-MESSAGE-CONCISE")
@pytest.mark.parametrize("line", _error_producers())
async def test_every_error_message_is_one_short_sentence(line):
    async with serve(build_server()) as client:
        client.feed(line)
        error = (await client.wait_for(lambda m: "error" in m))["error"]
    message = error["message"]
    assert "\n" not in message and len(message) <= 300, message
    assert re.search(r"[.!?]\s+[A-Z]", message) is None, f"more than one sentence: {message!r}"


@pytest.mark.req("BASE-ERROR-MESSAGE-CONCISE")
def test_error_messages_are_one_short_sentence_through_stdio(edges):
    errors = [
        error_of(edges.request(modern_request(next(_ids), "no/such/method"))),
        error_of(edges.request(tool_call(next(_ids), "nope"))),
        error_of(edges.request({"jsonrpc": "2.0", "id": next(_ids), "method": "tools/list", "params": {"_meta": wire_meta(protocol_version="1999-01-01")}})),
    ]
    for error in errors:
        assert "\n" not in error["message"] and len(error["message"]) <= 300
        assert re.search(r"[.!?]\s+[A-Z]", error["message"]) is None


# --- the transport binding rules (basic/transports) ------------------------------------------------------------


@pytest.mark.req("STDIO-MESSAGES-UTF8")
def test_messages_are_utf8_both_ways_through_stdio(edges):
    request_id = next(_ids)
    words = "héllo ☃ 𝄞 日本"
    edges.send(tool_call(request_id, "echo", {"text": words}))
    line, message = edges.read_line_and_message()
    while message.get("id") != request_id:  # an earlier test's leftover line
        line, message = edges.read_line_and_message()
    assert words.encode("utf-8") in line  # raw UTF-8, not \\u escapes
    edges.send_raw(b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"x":"\xff\xfe"}}\n')
    error = error_of(edges.read_message())
    assert error["code"] == -32700


@pytest.mark.req("STDIO-BINDING-DELIVERY")
def test_requests_and_notifications_reach_the_server_and_only_responses_and_notifications_come_back(edges):
    slow, quick = next(_ids), next(_ids)
    edges.send_raw(_write(tool_call(slow, "slow", {"seconds": 5}), {"jsonrpc": "2.0", "method": "notifications/unknown"}, cancel(slow), tool_call(quick, "echo", {"text": "q"})))
    assert text_of(result_of(edges.response(quick))) == "q"
    barrier = next(_ids)
    edges.request(modern_request(barrier, "server/discover"))
    seen = edges.received
    assert all(("method" in m) != ("id" in m and ("result" in m or "error" in m)) for m in seen)  # no server requests
    assert not any(m.get("id") == slow for m in seen)  # the cancellation (a notification) was delivered and acted on


@pytest.mark.req("STDIO-CUSTOM-STREAM-REUSE-FRAMING", "STDIO-CUSTOM-TRANSPORT-PRESERVE")
def test_the_same_framing_serves_a_server_whose_streams_are_unix_sockets(tmp_path):
    to_server, server_in = socket.socketpair()
    server_out, from_server = socket.socketpair()
    process = subprocess.Popen(
        [sys.executable, "-m", EDGES], cwd=REPO_ROOT, stdin=server_in.fileno(), stdout=server_out.fileno(), stderr=subprocess.DEVNULL
    )
    try:
        server_in.close()
        server_out.close()
        to_server.sendall(_write(modern_request(1, "server/discover"), tool_call(2, "echo", {"text": "over a socket"})))
        to_server.shutdown(socket.SHUT_WR)  # end of input, as closing a pipe would be
        from_server.settimeout(10)
        received = b""
        while True:
            chunk = from_server.recv(65536)
            if not chunk:
                break
            received += chunk
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
        to_server.close()
        from_server.close()
    messages = [decode_line(line) for line in received.splitlines()]
    assert [m["id"] for m in messages] == [1, 2]
    assert messages[1]["result"]["content"][0]["text"] == "over a socket"

