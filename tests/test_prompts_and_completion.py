"""Prompts (prompts/list, prompts/get) and argument completion (completion/complete).

Spec 2026-07-28: server/prompts, server/utilities/completion.
"""

from __future__ import annotations

import pytest

from mcp_ref import (
    Completion,
    Prompt,
    PromptArgument,
    PromptResult,
    Server,
    audio,
    embedded_resource,
    image,
    prompt_message,
    resource_link,
    text_resource,
)

from .memory import serve


def prompt_server(**options) -> Server:
    server = Server("prompts-test", "1.0.0", **options)

    @server.prompt(
        arguments=[
            PromptArgument("code", "The code to review", required=True, title="Code"),
            PromptArgument("language", "Programming language"),
        ],
        title="Code review",
    )
    async def review(ctx, arguments):
        """Review some code."""
        return f"Please review this {arguments.get('language', 'code')}:\n{arguments['code']}"

    @server.prompt("simple")
    def simple(ctx, arguments):
        """A prompt without arguments."""
        return [prompt_message("user", "Hi"), prompt_message("assistant", "Hello! How can I help?")]

    return server


# --- prompts/list -----------------------------------------------------------------------------------------


@pytest.mark.req("PROMPT-LIST")
async def test_prompts_list_shows_prompts_with_their_arguments():
    async with serve(prompt_server()) as client:
        result = await client.result("prompts/list")
    assert result["prompts"] == [
        {
            "name": "review",
            "title": "Code review",
            "description": "Review some code.",
            "arguments": [
                {"name": "code", "title": "Code", "description": "The code to review", "required": True},
                {"name": "language", "description": "Programming language"},
            ],
        },
        {"name": "simple", "description": "A prompt without arguments."},
    ]


async def test_prompt_icons_and_meta_are_listed():
    server = Server("s", "1")
    icons = [{"src": "https://example.com/p.svg", "mimeType": "image/svg+xml"}]
    server.add_prompt(Prompt("p", lambda ctx, a: "x", description="P.", icons=icons, meta={"example.com/a": True}))
    async with serve(server) as client:
        result = await client.result("prompts/list")
    assert result["prompts"] == [{"name": "p", "description": "P.", "icons": icons, "_meta": {"example.com/a": True}}]


@pytest.mark.req("PROMPT-LIST-MAY-CHANGE")
async def test_removed_prompt_disappears():
    server = prompt_server()
    server.remove_prompt("simple")
    async with serve(server) as client:
        result = await client.result("prompts/list")
    assert [p["name"] for p in result["prompts"]] == ["review"]


# --- prompts/get ----------------------------------------------------------------------------------------


@pytest.mark.req("PROMPT-GET-RESULT")
async def test_get_returns_the_description_and_one_user_message_for_a_string():
    async with serve(prompt_server()) as client:
        result = await client.result("prompts/get", {"name": "review", "arguments": {"code": "x = 1", "language": "python"}})
    assert result["description"] == "Review some code."
    assert result["messages"] == [{"role": "user", "content": {"type": "text", "text": "Please review this python:\nx = 1"}}]


@pytest.mark.req("PROMPT-GET-RESULT")
async def test_get_without_arguments_works_for_a_prompt_that_needs_none():
    async with serve(prompt_server()) as client:
        result = await client.result("prompts/get", {"name": "simple"})
        null_arguments = await client.result("prompts/get", {"name": "simple", "arguments": None})
    assert [m["role"] for m in result["messages"]] == ["user", "assistant"]
    assert null_arguments["messages"] == result["messages"]


@pytest.mark.req("PROMPT-UNKNOWN-NAME-32602")
async def test_unknown_prompt_is_invalid_params():
    async with serve(prompt_server()) as client:
        error = await client.error("prompts/get", {"name": "nope"})
    assert error["code"] == -32602
    assert error["data"] == {"name": "nope"}


@pytest.mark.req("PROMPT-UNKNOWN-NAME-32602")
@pytest.mark.parametrize("params", [{}, {"name": 1}])
async def test_get_without_a_string_name_is_invalid_params(params):
    async with serve(prompt_server()) as client:
        error = await client.error("prompts/get", params)
    assert error["code"] == -32602


@pytest.mark.req("PROMPT-MISSING-ARGUMENT-32602")
async def test_missing_required_argument_is_invalid_params_and_the_handler_does_not_run():
    server = prompt_server()
    ran = []
    original = server.prompts["review"].handler

    async def spy(ctx, arguments):
        ran.append(arguments)
        return await original(ctx, arguments)

    server.prompts["review"].handler = spy
    async with serve(server) as client:
        error = await client.error("prompts/get", {"name": "review", "arguments": {"language": "go"}})
    assert error["code"] == -32602
    assert error["data"] == {"missing": ["code"]}
    assert ran == []


@pytest.mark.req("PROMPT-VALIDATE-ARGUMENTS")
async def test_undeclared_argument_is_invalid_params():
    async with serve(prompt_server()) as client:
        error = await client.error("prompts/get", {"name": "review", "arguments": {"code": "x", "style": "terse", "mood": "x"}})
    assert error["code"] == -32602
    assert error["data"] == {"unknown": ["mood", "style"]}


@pytest.mark.req("PROMPT-VALIDATE-ARGUMENTS")
@pytest.mark.parametrize("value", [1, None, ["x"], {"a": "b"}, True])
async def test_non_string_argument_value_is_invalid_params(value):
    async with serve(prompt_server()) as client:
        error = await client.error("prompts/get", {"name": "review", "arguments": {"code": value}})
    assert error["code"] == -32602
    assert "strings" in error["message"]


@pytest.mark.req("PROMPT-VALIDATE-ARGUMENTS")
@pytest.mark.parametrize("arguments", [["code"], "code=x", 3])
async def test_non_object_arguments_are_invalid_params(arguments):
    async with serve(prompt_server()) as client:
        error = await client.error("prompts/get", {"name": "review", "arguments": arguments})
    assert error["code"] == -32602


@pytest.mark.req("PROMPT-GET-RESULT")
async def test_prompt_result_description_overrides_the_prompt_description():
    server = Server("s", "1")

    @server.prompt(description="Static description.")
    async def dynamic(ctx, arguments):
        return PromptResult([prompt_message("user", "go")], description="Built just now.")

    @server.prompt(description="Kept.")
    async def plain(ctx, arguments):
        return PromptResult([prompt_message("user", "go")])

    async with serve(server) as client:
        dynamic_result = await client.result("prompts/get", {"name": "dynamic"})
        plain_result = await client.result("prompts/get", {"name": "plain"})
    assert dynamic_result["description"] == "Built just now."
    assert plain_result["description"] == "Kept."


async def test_result_without_any_description_leaves_it_out():
    server = Server("s", "1")
    server.add_prompt(Prompt("bare", lambda ctx, a: "hello"))
    async with serve(server) as client:
        listed = await client.result("prompts/list")
        result = await client.result("prompts/get", {"name": "bare"})
    assert listed["prompts"] == [{"name": "bare"}]
    assert result["messages"] == [{"role": "user", "content": {"type": "text", "text": "hello"}}]
    assert "description" not in result


@pytest.mark.req("PROMPT-EMBEDDED-RESOURCE-FIELDS", "PROMPT-IMAGE-BASE64", "PROMPT-AUDIO-BASE64", "PROMPT-RESOURCE-LINKS-MAY")
async def test_messages_may_embed_resources_images_audio_and_links():
    server = Server("s", "1")

    @server.prompt(arguments=[PromptArgument("resourceUri", required=True)])
    async def rich(ctx, arguments):
        return [
            prompt_message("user", embedded_resource(text_resource(arguments["resourceUri"], "embedded text"))),
            prompt_message("user", image(b"\x89PNG", "image/png")),
            prompt_message("assistant", audio(b"RIFF", "audio/wav")),
            prompt_message("user", resource_link("test://linked", "linked", mimeType="text/plain")),
        ]

    async with serve(server) as client:
        result = await client.result("prompts/get", {"name": "rich", "arguments": {"resourceUri": "test://example-resource"}})
    contents = [m["content"] for m in result["messages"]]
    assert contents[0] == {"type": "resource", "resource": {"uri": "test://example-resource", "text": "embedded text", "mimeType": "text/plain"}}
    assert contents[1] == {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}
    assert contents[2] == {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
    assert contents[3] == {"type": "resource_link", "uri": "test://linked", "name": "linked", "mimeType": "text/plain"}


@pytest.mark.req("PROMPT-INTERNAL-ERROR-32603")
@pytest.mark.parametrize("value", [42, [{"role": "user"}], ["just text"], None])
async def test_handler_returning_something_other_than_messages_is_internal_error(value):
    server = Server("s", "1")
    server.add_prompt(Prompt("bad", lambda ctx, a: value))
    async with serve(server) as client:
        error = await client.error("prompts/get", {"name": "bad"})
    assert error["code"] == -32603


# --- completion/complete -----------------------------------------------------------------------------------


def completion_server() -> Server:
    server = prompt_server()

    @server.completer(prompt="review")
    async def languages(ctx, argument, value, context):
        if argument != "language":
            return []
        return [lang for lang in ("python", "pytorch", "pyside", "rust") if lang.startswith(value)]

    @server.resource_template("github://repos/{owner}/{repo}")
    async def repo(ctx, uri, variables):
        """A repository."""
        return "repo"

    @server.completer(resource_template="github://repos/{owner}/{repo}")
    def repos(ctx, argument, value, context):
        owner = context.get("owner", "?")
        return Completion([f"{owner}/{value}-one", f"{owner}/{value}-two"], total=10, has_more=True)

    return server


def complete_params(ref, name, value, context=None):
    params = {"ref": ref, "argument": {"name": name, "value": value}}
    if context is not None:
        params["context"] = context
    return params


PROMPT_REF = {"type": "ref/prompt", "name": "review"}
TEMPLATE_REF = {"type": "ref/resource", "uri": "github://repos/{owner}/{repo}"}


@pytest.mark.req("COMPL-REFERENCES")
async def test_completion_for_a_prompt_argument():
    async with serve(completion_server()) as client:
        result = await client.result("completion/complete", complete_params(PROMPT_REF, "language", "py"))
    assert result["completion"] == {"values": ["python", "pytorch", "pyside"], "hasMore": False}


@pytest.mark.req("COMPL-REFERENCES")
async def test_completion_for_a_template_variable_sees_the_context_arguments():
    params = complete_params(TEMPLATE_REF, "repo", "mcp", {"arguments": {"owner": "modelcontextprotocol"}})
    async with serve(completion_server()) as client:
        result = await client.result("completion/complete", params)
    assert result["completion"] == {
        "values": ["modelcontextprotocol/mcp-one", "modelcontextprotocol/mcp-two"],
        "total": 10,
        "hasMore": True,
    }


@pytest.mark.req("COMPL-REFERENCES")
async def test_completion_context_without_arguments_gives_the_completer_an_empty_object():
    async with serve(completion_server()) as client:
        result = await client.result("completion/complete", complete_params(TEMPLATE_REF, "repo", "x", {}))
    assert result["completion"]["values"] == ["?/x-one", "?/x-two"]


@pytest.mark.req("COMPL-VALUES-CAPPED")
async def test_more_than_100_values_are_truncated_with_has_more_and_total():
    server = Server("s", "1")
    server.add_prompt(Prompt("p", lambda ctx, a: "x", arguments=[PromptArgument("n")]))

    @server.completer(prompt="p")
    async def many(ctx, argument, value, context):
        return [f"v{i:03d}" for i in range(250)]

    async with serve(server) as client:
        result = await client.result("completion/complete", complete_params({"type": "ref/prompt", "name": "p"}, "n", ""))
    completion = result["completion"]
    assert completion["values"] == [f"v{i:03d}" for i in range(100)]
    assert completion["hasMore"] is True
    assert completion["total"] == 250


@pytest.mark.req("COMPL-VALUES-CAPPED")
async def test_exactly_100_values_are_not_truncated():
    server = Server("s", "1")
    server.add_prompt(Prompt("p", lambda ctx, a: "x"))

    @server.completer(prompt="p")
    async def hundred(ctx, argument, value, context):
        return Completion([str(i) for i in range(100)])

    async with serve(server) as client:
        result = await client.result("completion/complete", complete_params({"type": "ref/prompt", "name": "p"}, "any", ""))
    assert len(result["completion"]["values"]) == 100
    assert result["completion"]["hasMore"] is False
    assert "total" not in result["completion"]


@pytest.mark.req("COMPL-REFERENCES")
async def test_known_reference_without_a_completer_gets_an_empty_list():
    async with serve(prompt_server()) as client:
        result = await client.result("completion/complete", complete_params({"type": "ref/prompt", "name": "simple"}, "x", "a"))
    assert result["completion"] == {"values": [], "hasMore": False}


@pytest.mark.req("COMPL-REFERENCES")
async def test_static_resource_uri_is_a_known_reference():
    server = Server("s", "1")

    @server.resource("test://static")
    async def static(ctx):
        return "s"

    server.add_prompt(Prompt("p", lambda ctx, a: "x"))
    async with serve(server) as client:
        result = await client.result("completion/complete", complete_params({"type": "ref/resource", "uri": "test://static"}, "x", ""))
    assert result["completion"] == {"values": [], "hasMore": False}


@pytest.mark.req("COMPL-INVALID-PROMPT-32602")
async def test_unknown_prompt_reference_is_invalid_params():
    async with serve(completion_server()) as client:
        error = await client.error("completion/complete", complete_params({"type": "ref/prompt", "name": "ghost"}, "a", ""))
    assert error["code"] == -32602
    assert error["data"] == {"name": "ghost"}


@pytest.mark.req("COMPL-INVALID-PROMPT-32602")
async def test_unknown_template_reference_is_invalid_params():
    async with serve(completion_server()) as client:
        error = await client.error("completion/complete", complete_params({"type": "ref/resource", "uri": "nope://{x}"}, "x", ""))
    assert error["code"] == -32602
    assert error["data"] == {"uri": "nope://{x}"}


@pytest.mark.req("COMPL-INVALID-PROMPT-32602")
async def test_argument_the_prompt_does_not_declare_is_invalid_params():
    async with serve(completion_server()) as client:
        error = await client.error("completion/complete", complete_params(PROMPT_REF, "colour", ""))
    assert error["code"] == -32602


@pytest.mark.req("COMPL-MISSING-ARGUMENTS-32602", "COMPL-VALIDATE-INPUTS")
@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"argument": {"name": "a", "value": ""}}, id="no-ref"),
        pytest.param({"ref": "ref/prompt", "argument": {"name": "a", "value": ""}}, id="ref-not-object"),
        pytest.param({"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}}, id="unknown-ref-type"),
        pytest.param({"ref": {"type": "ref/prompt", "uri": "x"}, "argument": {"name": "a", "value": ""}}, id="prompt-ref-without-name"),
        pytest.param({"ref": {"type": "ref/resource", "name": "x"}, "argument": {"name": "a", "value": ""}}, id="resource-ref-without-uri"),
        pytest.param({"ref": PROMPT_REF}, id="no-argument"),
        pytest.param({"ref": PROMPT_REF, "argument": {"name": "language"}}, id="argument-without-value"),
        pytest.param({"ref": PROMPT_REF, "argument": {"name": "language", "value": 3}}, id="non-string-value"),
        pytest.param({"ref": PROMPT_REF, "argument": {"name": "language", "value": ""}, "context": {"arguments": ["x"]}}, id="context-arguments-not-object"),
    ],
)
async def test_malformed_completion_request_is_invalid_params(params):
    async with serve(completion_server()) as client:
        error = await client.error("completion/complete", params)
    assert error["code"] == -32602


@pytest.mark.req("COMPL-INTERNAL-ERROR-32603")
async def test_completer_returning_non_strings_is_internal_error():
    server = Server("s", "1")
    server.add_prompt(Prompt("p", lambda ctx, a: "x"))

    @server.completer(prompt="p")
    async def numbers(ctx, argument, value, context):
        return [1, 2]

    async with serve(server) as client:
        error = await client.error("completion/complete", complete_params({"type": "ref/prompt", "name": "p"}, "a", ""))
    assert error["code"] == -32603


@pytest.mark.req("COMPL-CAPABILITY")
async def test_completions_capability_is_declared_when_prompts_exist():
    async with serve(completion_server()) as client:
        result = await client.result("server/discover")
    assert result["capabilities"]["completions"] == {}


@pytest.mark.req("COMPL-CAPABILITY", "COMPL-METHOD-NOT-FOUND-32601", "BASE-UNKNOWN-METHOD-32601")
async def test_completion_is_method_not_found_without_the_capability():
    server = Server("s", "1")

    @server.tool()
    async def t(ctx, arguments):
        """T."""
        return "t"

    async with serve(server) as client:
        discovered = await client.result("server/discover")
        error = await client.error("completion/complete", complete_params(PROMPT_REF, "a", ""))
    assert "completions" not in discovered["capabilities"]
    assert error["code"] == -32601


def test_completer_needs_exactly_one_target():
    server = Server("s", "1")
    with pytest.raises(ValueError, match="exactly one"):
        server.completer()
    with pytest.raises(ValueError, match="exactly one"):
        server.completer(prompt="p", resource_template="t://{x}")


@pytest.mark.req("COMPL-CAPABILITY")
async def test_a_completer_alone_declares_the_capability():
    server = Server("s", "1")

    @server.completer(prompt="later")
    async def later(ctx, argument, value, context):
        return []

    async with serve(server) as client:
        result = await client.result("server/discover")
    assert result["capabilities"] == {"completions": {}}


@pytest.mark.req("PROMPT-VALIDATE-INPUTS-OUTPUTS")
async def test_message_with_an_invalid_role_is_internal_error():
    server = Server("s", "1")
    server.add_prompt(Prompt("bad", lambda ctx, a: [{"role": "system", "content": {"type": "text", "text": "x"}}]))
    async with serve(server, check=False) as client:
        error = await client.error("prompts/get", {"name": "bad"})
    assert error["code"] == -32603
