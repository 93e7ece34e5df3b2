"""Multi round-trip requests (MRTR): interim results instead of server-to-client requests.

Spec: basic/patterns/mrtr (2026-07-28), client/elicitation, client/sampling, client/roots.

Theory of operation
-------------------
In 2026-07-28 the server never sends a request to the client (initialize-era clients are
asked with server-to-client requests instead: see ``outgoing``; the handler code is the same). A handler that needs something from the client
(a form answer, an LLM sample, the client's roots) *asks* through its context::

    answer = ctx.ask("user_name", elicit_form("What is your name?", {...}))

If this request already carries the answer (``params.inputResponses["user_name"]``), ``ask``
returns it. Otherwise it raises ``InputRequired``; the dispatcher turns that into an
``InputRequiredResult`` (``resultType: "input_required"``) and the client retries the *same*
method, with a new JSON-RPC id, the answers in ``inputResponses`` and our ``requestState`` echoed.
The handler simply runs again from the top; it is never suspended between rounds, so nothing is
kept in memory and a retry may even reach a restarted server. Answers received in earlier rounds
travel inside the sealed ``requestState``, so a handler that asks one thing after another
(``a = ctx.ask(...)`` then ``b = ctx.ask(...)``) sees every earlier answer in every later round.
A key is answered once: to ask the user again, use a new key.

``requestState`` passes through the client, so it is attacker-controlled: ``requeststate``
seals it (HMAC-SHA256, bound to this request, with an expiry) and rejects a forged, expired or
misplaced token with -32602 before the handler runs.

Only ``tools/call``, ``prompts/get`` and ``resources/read`` may answer ``input_required``, and only
with input requests whose capability the client declared in *this* request's ``_meta``.
"""

from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import urlsplit

from ..core.content import content_problem
from ..core.errors import InvalidParams, MissingRequiredClientCapability, clip
from ..core.meta import client_has_capability

MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})


class InputRequired(Exception):
    """Raised by a handler (or by ``ctx.ask``) to answer with an ``InputRequiredResult``.

    ``requests`` maps server-chosen keys to input requests (see ``elicit_form``, ``elicit_url``,
    ``sample``, ``list_roots``); ``state`` is any JSON value the handler wants back on the retry
    (``ctx.state``). At least one of them must be given. Keys are strings: ``inputRequests`` is a
    JSON object, where ``1`` and ``"1"`` would be the same member.
    """

    def __init__(self, requests: Mapping[str, dict[str, Any]] | None = None, state: Any = None) -> None:
        if not requests and state is None:
            raise ValueError("InputRequired needs input requests, state, or both")
        not_strings = [key for key in (requests or {}) if not isinstance(key, str)]
        if not_strings:
            raise ValueError(
                f"InputRequired keys must be strings (they become the members of the inputRequests object), got {not_strings[0]!r}"
            )
        super().__init__("input required")
        self.requests = dict(requests or {})
        self.state = state


# --- Input request builders (the values of InputRequiredResult.inputRequests) ---------------------
# Each builder checks what the spec requires of the request it builds (client/elicitation,
# client/sampling), so a handler cannot send the client a malformed input request. Hand-built
# dicts passed to ``InputRequired`` are checked the same way by ``check_input_request``.

PRIMITIVE_TYPES = frozenset({"string", "number", "integer", "boolean"})


def elicit_form(message: str, requested_schema: dict[str, Any]) -> dict[str, Any]:
    """An ``elicitation/create`` request in form mode (needs the client's ``elicitation.form``).

    ``requested_schema`` must be a flat object schema whose properties are primitive
    (string, number, integer, boolean, or an enum / array of enum for choices).
    """
    request = {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": requested_schema}}
    check_input_request(request)
    return request


def elicit_url(message: str, url: str) -> dict[str, Any]:
    """An ``elicitation/create`` request in URL mode (needs the client's ``elicitation.url``)."""
    request = {"method": "elicitation/create", "params": {"mode": "url", "message": message, "url": url}}
    check_input_request(request)
    return request


def sample(messages: list[dict[str, Any]], max_tokens: int, **options: Any) -> dict[str, Any]:
    """A ``sampling/createMessage`` request (needs ``sampling``; with ``tools=`` also ``sampling.tools``;
    with ``includeContext`` other than ``"none"`` also ``sampling.context``).

    ``options`` are further ``CreateMessageRequestParams`` fields: ``systemPrompt``,
    ``modelPreferences``, ``temperature``, ``stopSequences``, ``tools``, ``toolChoice``, ...
    """
    request = {"method": "sampling/createMessage", "params": {"messages": messages, "maxTokens": max_tokens, **options}}
    check_input_request(request)
    return request


def list_roots() -> dict[str, Any]:
    """A ``roots/list`` request (needs the client's ``roots``)."""
    return {"method": "roots/list", "params": {}}


def check_input_request(request: Any) -> None:
    """Raise ``ValueError`` if ``request`` is not a well-formed elicitation, sampling or roots request."""
    if not isinstance(request, dict) or not isinstance(request.get("params", {}), dict):
        raise ValueError("an input request is {'method': ..., 'params': {...}}")
    method, params = request.get("method"), request.get("params", {})
    if method == "elicitation/create":
        _check_elicitation(params)
    elif method == "sampling/createMessage":
        _check_sampling(params)
    elif method != "roots/list":
        raise ValueError(f"input requests are elicitation/create, sampling/createMessage or roots/list, not {method!r}")


def _check_elicitation(params: dict[str, Any]) -> None:
    if not isinstance(params.get("message"), str):
        raise ValueError("an elicitation needs a message (a string)")
    mode = params.get("mode", "form")
    if mode == "url":
        parsed = urlsplit(params.get("url") if isinstance(params.get("url"), str) else "")
        if not parsed.scheme or not (parsed.netloc or parsed.scheme not in ("http", "https")):
            raise ValueError(f"URL-mode elicitation needs a valid absolute URL, got {params.get('url')!r}")
        return
    if mode != "form":
        raise ValueError(f'elicitation mode must be "form" or "url", not {mode!r}')
    schema = params.get("requestedSchema")
    if not isinstance(schema, dict) or schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        raise ValueError('a form elicitation needs requestedSchema {"type": "object", "properties": {...}}')
    for name, prop in schema["properties"].items():
        if not isinstance(prop, dict):
            raise ValueError(f"requestedSchema property {name!r} must be a schema object")
        kind = prop.get("type")
        is_multi_select = kind == "array" and isinstance(prop.get("items"), dict)
        if kind not in PRIMITIVE_TYPES and not is_multi_select:
            raise ValueError(f"requestedSchema property {name!r} must be a primitive (string, number, integer, boolean) or a multi-select array")
    required = schema.get("required", [])
    if not isinstance(required, list) or not set(required) <= set(schema["properties"]):
        raise ValueError("requestedSchema.required must list properties of the schema")


def _check_sampling(params: dict[str, Any]) -> None:
    max_tokens = params.get("maxTokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ValueError("a sampling request needs maxTokens, a positive integer")
    messages = params.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("a sampling request needs at least one message")
    pending_tool_uses: set[str] | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise ValueError(f"sampling message {index} needs role 'user' or 'assistant'")
        content = message.get("content")
        blocks: list[Any] = content if isinstance(content, list) else [content]
        if not blocks or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks):
            raise ValueError(f"sampling message {index} needs content: a content block or a list of them")
        kinds = {b["type"] for b in blocks}
        if pending_tool_uses is not None:
            # The message after tool uses answers every one of them, and does nothing else.
            answered = {b.get("toolUseId") for b in blocks if b["type"] == "tool_result"}
            if message["role"] != "user" or kinds != {"tool_result"} or answered != pending_tool_uses:
                raise ValueError(f"sampling message {index} must be a user message of tool results answering every tool use before it")
            pending_tool_uses = None
            continue
        if "tool_result" in kinds:
            raise ValueError(f"sampling message {index} has tool results that answer no tool use, or mixes them with other content")
        if "tool_use" in kinds:
            if message["role"] != "assistant":
                raise ValueError(f"sampling message {index}: only assistant messages hold tool uses")
            pending_tool_uses = {b.get("id") for b in blocks if b["type"] == "tool_use"}
    if pending_tool_uses is not None:
        raise ValueError("the last sampling message has tool uses that no tool results answer")


def required_capability(input_request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The dotted capability path an input request needs, and the ``requiredCapabilities`` value naming it."""
    method = input_request.get("method")
    params = input_request.get("params") or {}
    if method == "elicitation/create":
        mode = params.get("mode", "form")
        return f"elicitation.{mode}", {"elicitation": {mode: {}}}
    if method == "sampling/createMessage":
        if params.get("tools"):
            return "sampling.tools", {"sampling": {"tools": {}}}
        if params.get("includeContext", "none") != "none":
            return "sampling.context", {"sampling": {"context": {}}}
        return "sampling", {"sampling": {}}
    if method == "roots/list":
        return "roots", {"roots": {}}
    raise ValueError(f"not an input request method: {method!r}")


def check_client_can_answer(requests: Mapping[str, dict[str, Any]], capabilities: dict[str, Any]) -> None:
    """Raise -32021 naming every capability the client would need but did not declare."""
    missing: dict[str, Any] = {}
    for input_request in requests.values():
        path, required = required_capability(input_request)
        if not client_has_capability(capabilities, path):
            for name, value in required.items():
                missing.setdefault(name, {}).update(value)
    if missing:
        raise MissingRequiredClientCapability(missing)


# --- Input responses --------------------------------------------------------------------------------


def parse_input_responses(params: dict[str, Any]) -> dict[str, Any]:
    """``params.inputResponses`` as a dict (empty when absent). -32602 when it is not an object."""
    responses = params.get("inputResponses")
    if responses is None:
        return {}
    if not isinstance(responses, dict):
        raise InvalidParams("inputResponses must be an object mapping input request keys to results")
    return responses


def validate_input_response(key: str, input_request: dict[str, Any], response: Any) -> dict[str, Any]:
    """Check that the client's answer has the shape of the result its request calls for.

    -32602 for a malformed answer: the client sent something, but not an ``ElicitResult``,
    ``CreateMessageResult`` or ``ListRootsResult`` as asked (a root must be a ``file://`` URI).

    An elicitation answer carries ``content`` only when a form was accepted (the schema's
    ``ElicitResult``): content that comes with ``decline`` or ``cancel``, or with an accepted
    URL-mode request, is dropped, so the handler never sees data the user did not submit.
    """
    method = input_request["method"]
    problem = _input_response_problem(method, response)
    if problem is None and method == "elicitation/create":
        form = input_request["params"].get("mode", "form") == "form"
        if response["action"] == "accept" and form:
            problem = _form_content_problem(input_request["params"], response.get("content"))
        elif "content" in response:
            response = {name: value for name, value in response.items() if name != "content"}
    if problem:
        raise InvalidParams(f"inputResponses[{key!r}] is not a valid {method} result: {clip(problem)}", {"key": key})
    valid: dict[str, Any] = response
    return valid


def _form_content_problem(params: dict[str, Any], content: Any) -> str | None:
    """Accepted form content must satisfy the schema that was asked (client/elicitation)."""
    schema = params.get("requestedSchema")
    if params.get("mode", "form") != "form" or not isinstance(schema, dict):
        return None
    from .schemas import compile_schema  # lazy: jsonschema is only needed once a form is answered

    problems = compile_schema(schema)({} if content is None else content)
    return f"content does not match the requested schema: {'; '.join(problems[:5])}" if problems else None


def _is_file_uri(uri: str) -> bool:
    """A ``file://`` URI (client/roots: the only scheme roots may use) with no control characters."""
    return uri[:7].lower() == "file://" and uri.isprintable()


def _input_response_problem(method: str, response: Any) -> str | None:
    if not isinstance(response, dict):
        return "expected an object"
    if method == "elicitation/create":
        if response.get("action") not in ("accept", "decline", "cancel"):
            return 'action must be "accept", "decline" or "cancel"'
        if "content" in response and not isinstance(response["content"], dict):
            return "content must be an object"
        return None
    if method == "sampling/createMessage":
        if response.get("role") not in ("user", "assistant"):
            return 'role must be "user" or "assistant"'
        content = response.get("content")
        blocks: list[Any] = content if isinstance(content, list) else [content]
        if not blocks or not all(isinstance(block, dict) and isinstance(block.get("type"), str) for block in blocks):
            return "content must be a content block or a list of them"
        for block in blocks:
            # Text, image and audio blocks are checked as fully as the server's own output; the
            # sampling-only kinds (tool_use, tool_result) keep the type check above.
            if block["type"] in ("text", "image", "audio") and (problem := content_problem(block)):
                return f"content: {problem}"
        if not isinstance(response.get("model"), str):
            return "model must be a string"
        return None
    if method == "roots/list":
        roots = response.get("roots")
        if not isinstance(roots, list) or not all(isinstance(r, dict) and isinstance(r.get("uri"), str) for r in roots):
            return "roots must be a list of objects with a uri"
        for index, root in enumerate(roots):
            if not _is_file_uri(root["uri"]):
                return f"roots[{index}].uri must be a file:// URI"
            if "name" in root and not isinstance(root["name"], str):
                return f"roots[{index}].name must be a string"
        return None
    return f"unknown input request method {method!r}"  # pragma: no cover - builders only make the three
