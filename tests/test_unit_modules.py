"""Pure unit tests of the small modules: no dispatcher, no event loop.

pagination cursors, CacheHint, UriTemplate, meta helpers, versions, content builders, errors,
schema dialects; and the package itself: its public names, imported on first use, and what a
server's start-up imports (checked in a fresh interpreter).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import pytest

import mcp_ref

from mcp_ref.core import content, errors
from mcp_ref.features.caching import CACHEABLE_METHODS, DEFAULT_LIST_HINT, DEFAULT_READ_HINT, CacheHint
from mcp_ref.core.meta import (
    CLIENT_CAPABILITIES,
    LOG_LEVELS,
    PROTOCOL_VERSION,
    carries_modern_meta,
    client_has_capability,
    parse_progress_token,
    parse_request_meta,
)
from mcp_ref.features.pagination import decode_cursor, encode_cursor, paginate
from mcp_ref.features.sealing import Signer
from mcp_ref.features.schemas import DEFAULT_DIALECT, SchemaError, check_bounds, compile_schema, dialect_of
from mcp_ref.features.uritemplate import UriTemplate
from mcp_ref.core.versions import (
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSION,
    initialize_versions,
    legacy_at_least,
    negotiate_legacy_version,
    supported_versions,
)

# --- pagination ---------------------------------------------------------------------------------------


SIGNER = Signer(b"k" * 32)


@pytest.mark.req("PAGE-STABLE-CURSORS")
@pytest.mark.parametrize("offset", [0, 1, 99, 10**9])
def test_cursor_round_trips_to_its_offset(offset):
    cursor = encode_cursor(SIGNER, "tools/list", offset)
    assert decode_cursor(SIGNER, cursor, "tools/list") == offset


def test_cursor_is_opaque_url_safe_text_without_padding():
    cursor = encode_cursor(SIGNER, "resources/templates/list", 12345)
    assert cursor and "=" not in cursor
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_cursors_of_different_methods_differ():
    assert encode_cursor(SIGNER, "tools/list", 2) != encode_cursor(SIGNER, "prompts/list", 2)


@pytest.mark.req("PAGE-INVALID-CURSOR-32602")
@pytest.mark.parametrize(
    "cursor",
    [
        None,
        3,
        b"abc",
        "",
        "%%%",
        encode_cursor(SIGNER, "prompts/list", 1),
        base64.urlsafe_b64encode(b"tools/list\n-1").decode(),
        encode_cursor(SIGNER, "tools/list", 1)[:-1],
    ],
)
def test_decode_refuses_cursors_it_did_not_issue(cursor):
    with pytest.raises(errors.InvalidParams) as raised:
        decode_cursor(SIGNER, cursor, "tools/list")
    assert raised.value.code == -32602


def test_paginate_pages_and_chains():
    items = list("abcde")
    page, cursor = paginate(SIGNER, items, {}, "m", 2)
    assert list(page) == ["a", "b"]
    page, cursor = paginate(SIGNER, items, {"cursor": cursor}, "m", 2)
    assert list(page) == ["c", "d"]
    page, cursor = paginate(SIGNER, items, {"cursor": cursor}, "m", 2)
    assert (list(page), cursor) == (["e"], None)


def test_paginate_accepts_a_cursor_at_the_exact_end_as_an_empty_page():
    page, cursor = paginate(SIGNER, [1, 2], {"cursor": encode_cursor(SIGNER, "m", 2)}, "m", 5)
    assert (list(page), cursor) == ([], None)


def test_paginate_refuses_a_cursor_beyond_the_end():
    with pytest.raises(errors.InvalidParams, match="changed"):
        paginate(SIGNER, [1, 2], {"cursor": encode_cursor(SIGNER, "m", 3)}, "m", 5)


# --- caching --------------------------------------------------------------------------------------------


@pytest.mark.req("CACHE-TTL-NON-NEGATIVE")
@pytest.mark.parametrize("ttl", [-1, 1.5, "10", True, None])
def test_cache_hint_refuses_a_ttl_that_is_not_a_non_negative_integer(ttl):
    with pytest.raises(ValueError, match="ttl_ms"):
        CacheHint(ttl)


@pytest.mark.parametrize("scope", ["shared", "PUBLIC", "", None])
def test_cache_hint_refuses_an_unknown_scope(scope):
    with pytest.raises(ValueError, match="scope"):
        CacheHint(0, scope)


def test_cache_hint_apply_adds_both_fields_in_place():
    result = {"tools": []}
    returned = CacheHint(250, "private").apply(result)
    assert returned is result
    assert result == {"tools": [], "ttlMs": 250, "cacheScope": "private"}


def test_cache_hint_defaults_are_zero_ttl_public_for_lists_and_private_for_reads():
    assert CacheHint() == DEFAULT_LIST_HINT == CacheHint(0, "public")
    assert DEFAULT_READ_HINT == CacheHint(0, "private")


@pytest.mark.req("CACHE-HINTS-REQUIRED")
def test_the_six_cacheable_methods():
    assert CACHEABLE_METHODS == {
        "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"
    }


# --- URI templates ----------------------------------------------------------------------------------------


@pytest.mark.req("RES-TEMPLATE-MATCH")
def test_simple_variable_matches_one_segment_only():
    template = UriTemplate("test://items/{id}")
    assert template.match("test://items/42") == {"id": "42"}
    assert template.match("test://items/4/2") is None
    assert template.match("test://items/") is None
    assert template.match("test://items/42?x") is None
    assert template.match("test://items/42#f") is None


@pytest.mark.req("RES-TEMPLATE-MATCH")
def test_reserved_variable_spans_slashes():
    assert UriTemplate("file:///{+path}").match("file:///a/b/c.txt") == {"path": "a/b/c.txt"}


def test_several_variables_and_literals():
    template = UriTemplate("db://{schema}/tables/{table}/rows/{+rest}")
    assert template.variables == ["schema", "table", "rest"]
    assert template.match("db://public/tables/users/rows/1/2") == {"schema": "public", "table": "users", "rest": "1/2"}


def test_matched_values_are_percent_decoded():
    assert UriTemplate("x://{a}").match("x://caf%C3%A9%20au%3Flait") == {"a": "café au?lait"}


def test_literal_characters_are_not_regex_syntax():
    template = UriTemplate("x://a.b/{v}")
    assert template.match("x://a.b/1") == {"v": "1"}
    assert template.match("x://aXb/1") is None


def test_template_without_variables_matches_only_itself():
    template = UriTemplate("x://fixed")
    assert template.match("x://fixed") == {}
    assert template.match("x://fixed2") is None


def test_expand_encodes_slash_in_simple_but_not_in_reserved_variables():
    assert UriTemplate("x://{a}").expand(a="a b/c") == "x://a%20b%2Fc"
    assert UriTemplate("file:///{+p}").expand(p="dir/my file") == "file:///dir/my%20file"


def test_expand_then_match_round_trips():
    template = UriTemplate("x://{a}/{+b}")
    values = {"a": "1 2 ?#%", "b": "deep/path/é"}
    assert template.match(template.expand(**values)) == values


@pytest.mark.parametrize(
    "text, message",
    [
        ("x://{#frag}", "unsupported"),
        ("x://{/seg}", "unsupported"),
        ("x://{?q}", "unsupported"),
        ("x://{&q}", "unsupported"),
        ("x://{.ext}", "unsupported"),
        ("x://{;p}", "unsupported"),
        ("x://{a,b}", "unsupported"),
        ("x://{list*}", "unsupported"),
        ("x://{short:3}", "unsupported"),
        ("x://{}", "unsupported"),
        ("x://{+}", "unsupported"),
        ("x://{a}/{a}", "appears twice"),
        ("x://{a", "unbalanced"),
        ("x://a}", "unbalanced"),
        ("x://}{a}", "unbalanced"),
        ("x://{{a}}", "unbalanced"),
    ],
)
def test_unsupported_or_malformed_templates_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        UriTemplate(text)


# --- meta -----------------------------------------------------------------------------------------------


@pytest.mark.req("ELIC-EMPTY-CAPABILITY-MEANS-FORM")
def test_empty_elicitation_capability_means_form_mode_only():
    capabilities = {"elicitation": {}}
    assert client_has_capability(capabilities, "elicitation")
    assert client_has_capability(capabilities, "elicitation.form")
    assert not client_has_capability(capabilities, "elicitation.url")


def test_explicit_elicitation_modes():
    assert client_has_capability({"elicitation": {"url": {}}}, "elicitation.url")
    assert not client_has_capability({"elicitation": {"url": {}}}, "elicitation.form")
    assert client_has_capability({"elicitation": {"form": {}, "url": {}}}, "elicitation.form")


def test_sub_capabilities_must_be_objects():
    assert client_has_capability({"sampling": {"tools": {}}}, "sampling.tools")
    assert not client_has_capability({"sampling": {}}, "sampling.tools")
    assert not client_has_capability({"sampling": {"tools": True}}, "sampling.tools")


def test_capabilities_that_are_absent_or_not_objects_are_not_declared():
    assert not client_has_capability({}, "roots")
    assert not client_has_capability({"roots": True}, "roots")
    assert not client_has_capability({"roots": None}, "roots")
    assert client_has_capability({"roots": {"listChanged": True}}, "roots")


def test_modern_meta_is_recognized_by_either_required_key():
    assert carries_modern_meta({"_meta": {PROTOCOL_VERSION: "x"}})
    assert carries_modern_meta({"_meta": {CLIENT_CAPABILITIES: {}}})
    assert not carries_modern_meta({"_meta": {"progressToken": 1}})
    assert not carries_modern_meta({"_meta": "x"})
    assert not carries_modern_meta({})


def test_parse_request_meta_reads_every_field():
    meta = parse_request_meta(
        {
            "_meta": {
                PROTOCOL_VERSION: MODERN_VERSION,
                CLIENT_CAPABILITIES: {"roots": {}},
                "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
                "io.modelcontextprotocol/logLevel": "notice",
                "progressToken": "tok",
            }
        },
        [MODERN_VERSION],
    )
    assert (meta.protocol_version, meta.client_capabilities, meta.client_info, meta.log_level, meta.progress_token) == (
        MODERN_VERSION, {"roots": {}}, {"name": "c", "version": "1"}, "notice", "tok"
    )


def test_parse_request_meta_unsupported_version_names_the_advertised_list():
    with pytest.raises(errors.UnsupportedProtocolVersion) as raised:
        parse_request_meta({"_meta": {PROTOCOL_VERSION: "2099-01-01", CLIENT_CAPABILITIES: {}}}, ["a", "b"])
    assert raised.value.data == {"supported": ["a", "b"], "requested": "2099-01-01"}


@pytest.mark.parametrize("token, expected", [("t", "t"), (0, 0), (-5, -5), (None, None)])
def test_progress_token_is_a_string_or_integer(token, expected):
    assert parse_progress_token({"progressToken": token}) == expected


@pytest.mark.parametrize("token", [1.0, True, [], {}])
def test_other_progress_tokens_are_invalid_params(token):
    with pytest.raises(errors.InvalidParams):
        parse_progress_token({"progressToken": token})


def test_progress_token_of_a_non_object_meta_is_none():
    assert parse_progress_token("nope") is None


def test_log_levels_are_the_rfc_5424_severities_in_order():
    assert LOG_LEVELS == ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


# --- versions --------------------------------------------------------------------------------------------


@pytest.mark.req("DISC-SUPPORTED-VERSIONS")
def test_supported_versions_are_the_modern_ones_and_legacy_versions_are_named_apart():
    assert supported_versions() == [MODERN_VERSION]
    assert initialize_versions(True) == ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
    assert initialize_versions(False) == []


def test_supported_versions_returns_a_fresh_list():
    supported_versions().append("mutated")
    initialize_versions(True).append("mutated")
    assert "mutated" not in supported_versions() + initialize_versions(True)


@pytest.mark.parametrize("requested", LEGACY_VERSIONS)
def test_initialize_gets_the_requested_legacy_version_when_known(requested):
    assert negotiate_legacy_version(requested) == requested


@pytest.mark.parametrize("requested", ["2026-07-28", "2030-01-01", "2024-01-01", None, 5])
def test_initialize_gets_the_newest_legacy_version_otherwise(requested):
    assert negotiate_legacy_version(requested) == LATEST_LEGACY_VERSION == "2025-11-25"


def test_legacy_versions_compare_as_dates():
    assert legacy_at_least("2025-06-18", "2025-03-26")
    assert legacy_at_least("2025-06-18", "2025-06-18")
    assert not legacy_at_least("2024-11-05", "2025-03-26")


# --- content ---------------------------------------------------------------------------------------------


@pytest.mark.req("PROMPT-IMAGE-BASE64", "PROMPT-AUDIO-BASE64")
def test_image_and_audio_blocks_carry_base64_data():
    raw = bytes(range(256))
    picture = content.image(raw, "image/png")
    sound = content.audio(raw, "audio/wav", annotations={"priority": 1})
    assert picture == {"type": "image", "data": base64.b64encode(raw).decode(), "mimeType": "image/png"}
    assert base64.b64decode(sound["data"], validate=True) == raw
    assert sound["annotations"] == {"priority": 1}


@pytest.mark.req("RES-READ-BLOB-BASE64")
def test_blob_resource_is_base64_and_never_raw_bytes():
    blob = content.blob_resource("test://b", b"\x00\xff")
    assert blob == {"uri": "test://b", "blob": "AP8=", "mimeType": "application/octet-stream"}
    assert all(not isinstance(v, bytes) for v in blob.values())


def test_resource_contents_mime_type_may_be_left_out():
    assert content.text_resource("test://t", "x", None) == {"uri": "test://t", "text": "x"}
    assert content.blob_resource("test://b", b"", None) == {"uri": "test://b", "blob": ""}


def test_text_resource_takes_extra_fields():
    assert content.text_resource("test://t", "x", _meta={"k": 1}) == {"uri": "test://t", "text": "x", "mimeType": "text/plain", "_meta": {"k": 1}}


def test_text_block_with_and_without_annotations():
    assert content.text("hi") == {"type": "text", "text": "hi"}
    assert content.text("hi", annotations={"audience": ["user"]}) == {"type": "text", "text": "hi", "annotations": {"audience": ["user"]}}


def test_embedded_resource_and_resource_link():
    inner = content.text_resource("test://t", "x")
    assert content.embedded_resource(inner) == {"type": "resource", "resource": inner}
    assert content.embedded_resource(inner, annotations={"priority": 0.1})["annotations"] == {"priority": 0.1}
    assert content.resource_link("test://t", "t", title=None, size=3) == {"type": "resource_link", "uri": "test://t", "name": "t", "size": 3}


def test_prompt_message_wraps_strings_and_checks_the_role():
    assert content.prompt_message("user", "hi") == {"role": "user", "content": {"type": "text", "text": "hi"}}
    block = content.image(b"x", "image/gif")
    assert content.prompt_message("assistant", block) == {"role": "assistant", "content": block}
    with pytest.raises(ValueError, match="role"):
        content.prompt_message("system", "hi")


# --- errors ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exception, code",
    [
        (errors.ParseError("x"), -32700),
        (errors.InvalidRequest("x"), -32600),
        (errors.MethodNotFound("x"), -32601),
        (errors.InvalidParams("x"), -32602),
        (errors.InternalError("x"), -32603),
        (errors.ResourceNotFound("test://x"), -32602),
        (errors.LegacyResourceNotFound("x"), -32002),
        (errors.MissingRequiredClientCapability({"sampling": {}}), -32021),
        (errors.UnsupportedProtocolVersion("v", ["a"]), -32022),
    ],
)
def test_error_codes(exception, code):
    assert exception.to_error()["code"] == code


def test_error_object_has_data_only_when_given():
    assert errors.InvalidParams("bad").to_error() == {"code": -32602, "message": "bad"}
    assert errors.InvalidParams("bad", {"k": 1}).to_error() == {"code": -32602, "message": "bad", "data": {"k": 1}}
    assert errors.InvalidParams("bad", 0).to_error()["data"] == 0


@pytest.mark.req("RES-NOT-FOUND-32602")
def test_resource_not_found_carries_the_uri():
    error = errors.ResourceNotFound("test://gone", "No such thing")
    assert error.to_error() == {"code": -32602, "message": "No such thing", "data": {"uri": "test://gone"}}
    assert error.uri == "test://gone"


def test_missing_capability_names_what_is_required():
    error = errors.MissingRequiredClientCapability({"sampling": {}, "elicitation": {"url": {}}})
    assert error.data == {"requiredCapabilities": {"sampling": {}, "elicitation": {"url": {}}}}
    assert "elicitation, sampling" in error.message
    assert errors.MissingRequiredClientCapability({}, "custom").message == "custom"


def test_unsupported_version_message_and_data():
    error = errors.UnsupportedProtocolVersion("1.0", ["2026-07-28"])
    assert "'1.0'" in error.message and "2026-07-28" in error.message
    assert error.data == {"supported": ["2026-07-28"], "requested": "1.0"}
    assert errors.UnsupportedProtocolVersion("1.0", [], "own words").message == "own words"


# --- schema dialects --------------------------------------------------------------------------------------


@pytest.mark.req("BASE-SCHEMA-DEFAULT-2020-12")
def test_schema_without_dialect_is_2020_12():
    assert dialect_of({"type": "object"}) == DEFAULT_DIALECT == "Draft202012Validator"


@pytest.mark.req("BASE-SCHEMA-EXPLICIT-DIALECT")
@pytest.mark.parametrize(
    "declared, validator",
    [
        ("https://json-schema.org/draft/2020-12/schema", "Draft202012Validator"),
        ("http://json-schema.org/draft/2020-12/schema#", "Draft202012Validator"),
        ("https://json-schema.org/draft/2019-09/schema", "Draft201909Validator"),
        ("http://json-schema.org/draft-07/schema#", "Draft7Validator"),
        ("http://json-schema.org/draft-07/schema", "Draft7Validator"),
        ("http://json-schema.org/draft-06/schema#", "Draft6Validator"),
        ("http://json-schema.org/draft-04/schema#", "Draft4Validator"),
    ],
)
def test_declared_dialects(declared, validator):
    assert dialect_of({"$schema": declared}) == validator


@pytest.mark.req("BASE-SCHEMA-UNSUPPORTED-DIALECT")
@pytest.mark.parametrize("declared", ["http://json-schema.org/draft-03/schema#", "https://example.com/schema", "draft-07"])
def test_unknown_dialects_are_refused(declared):
    with pytest.raises(SchemaError, match="unsupported JSON Schema dialect"):
        dialect_of({"$schema": declared})


def test_bounds_count_list_items_and_nesting():
    check_bounds({"anyOf": [{"type": "string"}] * 100})
    with pytest.raises(SchemaError):
        check_bounds([[[[[]]]]] * 3000)


def test_compiled_schema_lists_errors_by_path():
    errors_of = compile_schema({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}})
    assert errors_of({"a": [1, "x", 3]}) == ["a/1: 'x' is not of type 'integer'"]
    assert errors_of("nope") == ["(root): 'nope' is not of type 'object'"]
    assert errors_of({"a": []}) == []


def test_compile_refuses_a_schema_invalid_for_its_dialect():
    with pytest.raises(SchemaError, match="invalid schema"):
        compile_schema({"type": 12})


# --- the package and start-up ------------------------------------------------------------------------


def imported_by(code: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``code`` (not measured by
    coverage, whose start-up in a subprocess imports modules of its own)."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("COVERAGE_")}
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, timeout=60, check=True, env=environment,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_every_public_name_is_importable_from_the_package_and_listed():
    namespace: dict = {}
    exec("from mcp_ref import *", namespace)
    assert set(mcp_ref.__all__) <= set(namespace)
    assert set(mcp_ref.__all__) <= set(dir(mcp_ref))
    from mcp_ref import Server, text
    from mcp_ref.server import Server as defined_server
    assert Server is defined_server is mcp_ref.Server and text is content.text
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        mcp_ref.nothing_here  # noqa: B018


def test_importing_the_package_imports_none_of_its_modules():
    modules = imported_by("import mcp_ref")
    assert {name for name in modules if name.startswith("mcp_ref.")} == set()
    assert "asyncio" not in imported_by("import mcp_ref.kit.request")  # mcp-ref-request: a one-line CLI


def test_a_server_start_up_does_not_import_what_only_some_requests_need():
    # Each of these costs start-up time (~1-4 ms) that the first answer should not wait for: they
    # are imported by the features that need them (tasks, sealed state, legacy elicitation,
    # synchronous handlers, prompts and completions).
    modules = imported_by(
        "from mcp_ref import Server\n"
        "import mcp_ref.core.stdio\n"
        "server = Server('s', '1')\n"
        "server.tool('echo', description='t', input_schema={'type': 'object'})(lambda ctx, arguments: 'x')"
    )
    unwanted = {"uuid", "secrets", "hashlib", "hmac", "datetime", "concurrent.futures.thread", "mcp_ref.features.prompts", "mcp_ref.features.completion"}
    assert modules & unwanted == set()


def test_the_value_classes_compare_show_and_freeze_as_their_dataclasses_did():
    # Plain classes since issue 21 (start-up time); what the dataclasses gave is kept.
    from mcp_ref import Resource, ResourceTemplate, TaskSettings, Tool, ToolResult, WatchSet

    for value, same, other in (
        (CacheHint(5, "private"), CacheHint(ttl_ms=5, scope="private"), CacheHint(5)),
        (TaskSettings(poll_interval_ms=10), TaskSettings(3600.0, 10), TaskSettings()),
        (WatchSet(frozenset({"a://b"})), WatchSet(frozenset({"a://b"}), frozenset()), WatchSet()),
    ):
        assert value == same and hash(value) == hash(same) and value != other and value != 1
        with pytest.raises(AttributeError):
            value.lists = frozenset()  # type: ignore[misc, union-attr]
    assert repr(CacheHint()) == "CacheHint(ttl_ms=0, scope='public')"
    assert repr(WatchSet()) == "WatchSet(resource_uris=frozenset(), lists=frozenset())"
    assert repr(TaskSettings()).startswith("TaskSettings(ttl_seconds=3600.0, poll_interval_ms=500, ")
    with pytest.raises(ValueError):
        CacheHint(-1)
    with pytest.raises(ValueError):
        TaskSettings(max_running=0)

    def handler(ctx, arguments):
        return "x"

    assert ToolResult() == ToolResult([]) != ToolResult([], is_error=True)
    assert ToolResult(structured_content={}).has_structured_content and ToolResult().content == []
    assert repr(ToolResult()) == "ToolResult(content=[], structured_content=None, is_error=False, has_structured_content=False)"
    tool = Tool("t", handler, "d")
    assert tool == Tool("t", handler, "d", {"type": "object", "additionalProperties": False}) != Tool("u", handler, "d")
    assert repr(tool).startswith("Tool(name='t', handler=") and "task=None)" in repr(tool) and not tool.is_coroutine
    with pytest.raises(ValueError, match="inputSchema"):
        Tool("t", handler, input_schema=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool name"):
        Tool("a b", handler)
    assert Resource("a://b", "b", handler) == Resource("a://b", "b", handler) != Resource("a://c", "b", handler)
    template = ResourceTemplate("a://{x}", "x", handler)
    assert template.template.match("a://1") is not None and "template=" not in repr(template).replace("uri_template=", "")
    for unhashable in (ToolResult(), tool, Resource("a://b", "b", handler), template):
        with pytest.raises(TypeError):
            hash(unhashable)
