"""The request and response shapes of four model APIs, reduced to what a scripted model needs.

A host sends the whole conversation with every request. ``*_seen`` reads one request into a
``Seen``: the tools the host offers (under the host's own names), every tool result so far (the
text exactly as the host passed it to the model), and how many tool calls the model has made.
The ``*_render`` functions turn the model's next step (``Call`` a tool, or ``Say`` a final
text) into that API's answer, streamed (the events, in order) or whole.

APIs: Anthropic Messages (``/v1/messages``), Gemini ``generateContent`` and
``streamGenerateContent``, OpenAI Responses (``/v1/responses``) and Chat Completions
(``/v1/chat/completions``). Only the fields the hosts read are produced.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

_ids = itertools.count(1)


@dataclass
class Result:
    """One tool result as the model saw it."""

    name: str  # the host's name of the tool that produced it
    text: str  # every string in the result, joined by newlines, JSON inside strings read too
    is_error: bool
    raw: Any  # the result as the API carried it
    verbatim: str = ""  # every string in the result as it is (what a model reads), joined by newlines

    @classmethod
    def of(cls, name: str, value: Any, is_error: bool, raw: Any) -> Result:
        return cls(name, text_of(value), is_error, raw, text_of(value, parse=False))


@dataclass
class Seen:
    """One request of a host, as the model sees it."""

    api: str
    model: str
    stream: bool
    offered: list[str]
    results: list[Result]
    calls: int  # tool calls the model already made in this conversation
    prompt: str  # the first user text
    schema: Any = None  # a JSON schema the host wants the answer to follow (side requests)
    # Responses API: tools grouped in a namespace tool are offered as "NAMESPACE__TOOL", and a
    # call to one goes out as {"name": TOOL, "namespace": NAMESPACE}.
    namespaces: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Every image or audio part of the conversation: (MIME type, base64 characters).
    media: list[tuple[str, int]] = field(default_factory=list)
    # The text of a user message after the model's tool calls and their last result: the host's
    # own question about the conversation (Copilot CLI asks for a summary when it compacts the
    # history, with the tools still offered), not a turn of the agent loop.
    question: str | None = None


@dataclass
class Call:
    name: str  # the host's name of the tool
    arguments: dict[str, Any]
    id: str = field(default_factory=lambda: f"call_standin_{next(_ids)}")


@dataclass
class Say:
    text: str


Step = Call | Say


def media_part(node: Any) -> tuple[str, int] | None:
    """``(MIME type, base64 characters)`` when ``node`` is an image or audio part of a request in
    one of the four APIs (a ``data:`` URL carries its type in front), else None."""
    if not isinstance(node, dict):
        return None
    kind = node.get("type")
    if kind in ("image", "audio", "document") and isinstance(node.get("source"), dict):  # Anthropic
        source = node["source"]
        return str(source.get("media_type", "?")), len(str(source.get("data", "")))
    inline = node.get("inlineData") or node.get("inline_data")  # Gemini
    if isinstance(inline, dict):
        return str(inline.get("mimeType") or inline.get("mime_type") or "?"), len(str(inline.get("data", "")))
    url = node.get("image_url") if kind in ("input_image", "image_url") else None  # Responses, Chat
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str):
        head, _, data = url.partition(",")
        return (head[5:].split(";")[0] if head.startswith("data:") else "?"), len(data)
    if kind == "input_audio" and isinstance(node.get("input_audio"), dict):
        audio = node["input_audio"]
        return "audio/" + str(audio.get("format", "?")), len(str(audio.get("data", "")))
    return None


def media_in(value: Any) -> list[tuple[str, int]]:
    """Every image or audio part anywhere in ``value``, in order."""
    found: list[tuple[str, int]] = []

    def walk(node: Any) -> None:
        part = media_part(node)
        if part is not None:
            found.append(part)
        elif isinstance(node, dict):
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(value)
    return found


def text_of(value: Any, parse: bool = True) -> str:
    """The strings of a JSON value, in order, joined by newlines (with ``parse``, JSON text
    inside a string is read as JSON too; image and audio parts are left out: their base64 is
    not text a model reads)."""
    parts: list[str] = []

    def walk(node: Any, key: str | None) -> None:
        if media_part(node) is not None:
            return
        if isinstance(node, str):
            if key in ("type", "mimeType", "mime_type", "tool_use_id", "call_id", "id", "role"):
                return
            stripped = node.strip()
            if parse and stripped[:1] in "[{":
                try:
                    walk(json.loads(stripped), key)
                    return
                except ValueError:
                    pass
            parts.append(node)
        elif isinstance(node, dict):
            for child_key, child in node.items():
                walk(child, child_key)
        elif isinstance(node, list):
            for child in node:
                walk(child, key)

    walk(value, None)
    return "\n".join(parts)


def saw(text: str, wanted: str) -> bool:
    """Did the model see ``wanted``: as it is, or escaped inside JSON text (hosts pass either)?"""
    if wanted in text:
        return True
    escaped = json.dumps(wanted, ensure_ascii=False)[1:-1]
    return escaped in text or json.dumps(wanted)[1:-1] in text


def _first_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block.get("text", "") for block in content
                         if isinstance(block, dict) and block.get("type") in ("text", "input_text"))
    return ""


# --- Anthropic Messages ----------------------------------------------------------------------------

def anthropic_seen(body: dict[str, Any]) -> Seen:
    names: dict[str, str] = {}
    results: list[Result] = []
    calls = 0
    prompt = ""
    question = None
    for message in body.get("messages", []):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "user" and not prompt:
            prompt = _first_text(content)
        elif message.get("role") == "user" and calls:
            question = None if any(b.get("type") == "tool_result" for b in blocks) else _first_text(content)
        for block in blocks:
            if block.get("type") == "tool_use":
                calls += 1
                names[block.get("id", "")] = block.get("name", "")
            elif block.get("type") == "tool_result":
                results.append(Result.of(names.get(block.get("tool_use_id", ""), ""), block.get("content"),
                                         bool(block.get("is_error")), block))
    offered = [tool["name"] for tool in body.get("tools", []) if isinstance(tool, dict) and "name" in tool]
    return Seen("anthropic", body.get("model", ""), bool(body.get("stream")), offered, results, calls, prompt,
                media=media_in(body.get("messages")), question=question)


def anthropic_render(step: Step, model: str) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """(the whole message, its stream events)."""
    if isinstance(step, Call):
        block = {"type": "tool_use", "id": step.id, "name": step.name, "input": step.arguments}
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(step.arguments)}
        stop_reason = "tool_use"
    else:
        block = {"type": "text", "text": step.text}
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": step.text}
        stop_reason = "end_turn"
    usage = {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message = {"id": f"msg_standin_{next(_ids)}", "type": "message", "role": "assistant", "model": model,
               "content": [block], "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}
    events = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                           "usage": {"output_tokens": 10}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return message, events


# --- Gemini generateContent ------------------------------------------------------------------------

def gemini_seen(body: dict[str, Any], model: str, stream: bool) -> Seen:
    results: list[Result] = []
    calls = 0
    prompt = ""
    question = None
    for content in body.get("contents", []):
        parts = content.get("parts", []) or []
        if content.get("role") == "user" and calls and prompt:
            answered = any("functionResponse" in part for part in parts)
            question = None if answered else "\n".join(part.get("text", "") for part in parts)
        for part in parts:
            if "functionCall" in part:
                calls += 1
            elif "functionResponse" in part:
                response = part["functionResponse"]
                payload = response.get("response")
                error = isinstance(payload, dict) and "error" in payload and "output" not in payload
                results.append(Result.of(response.get("name", ""), payload, error, part))
            elif "text" in part and content.get("role") == "user" and not prompt:
                prompt = part["text"]
    offered = [declaration["name"] for tool in body.get("tools", []) or []
               for declaration in tool.get("functionDeclarations", []) or [] if "name" in declaration]
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return Seen("gemini", model, stream, offered, results, calls, prompt, schema, media=media_in(body.get("contents")),
                question=question)


def gemini_render(step: Step, model: str) -> dict[str, Any]:
    """The one ``GenerateContentResponse`` (streamed, it is the only chunk)."""
    part = {"functionCall": {"name": step.name, "args": step.arguments}} if isinstance(step, Call) else {"text": step.text}
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
        "modelVersion": model,
    }


def example_of(schema: Any) -> Any:
    """A small value that satisfies a (simple) JSON schema: what a side request asked to get back."""
    if not isinstance(schema, dict):
        return {}
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: example_of(sub) for name, sub in properties.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return "stand-in"


# --- OpenAI Responses ----------------------------------------------------------------------------

def responses_seen(body: dict[str, Any]) -> Seen:
    names: dict[str, str] = {}
    results: list[Result] = []
    calls = 0
    prompt = ""
    items = body.get("input")
    question = None
    for item in items if isinstance(items, list) else []:
        kind = item.get("type", "message")
        if kind == "function_call_output":
            question = None
        elif kind == "message" and item.get("role") == "user" and prompt and calls:
            question = _first_text(item.get("content"))
        if kind == "function_call":
            calls += 1
            prefix = f"{item['namespace']}__" if item.get("namespace") else ""
            names[item.get("call_id", "")] = prefix + item.get("name", "")
        elif kind == "function_call_output":
            output = item.get("output")
            results.append(Result.of(names.get(item.get("call_id", ""), ""), output, False, item))
        elif kind == "message" and item.get("role") == "user" and not prompt:
            prompt = _first_text(item.get("content"))
    if isinstance(items, str):
        prompt = items
    offered: list[str] = []
    namespaces: dict[str, tuple[str, str]] = {}
    for tool in body.get("tools", []) or []:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools", []) or []:
                flat = f"{tool['name']}__{inner['name']}"
                namespaces[flat] = (tool["name"], inner["name"])
                offered.append(flat)
        elif tool.get("name"):
            offered.append(tool["name"])
    return Seen("responses", body.get("model", ""), bool(body.get("stream")), offered, results, calls, prompt,
                namespaces=namespaces, media=media_in(items), question=question)


def responses_render(step: Step, model: str, namespaces: dict[str, tuple[str, str]] | None = None,
                     ) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """(the whole response object, its stream events)."""
    response_id = f"resp_standin_{next(_ids)}"
    if isinstance(step, Call):
        item = {"type": "function_call", "id": f"fc_{step.id}", "call_id": step.id, "name": step.name,
                "arguments": json.dumps(step.arguments), "status": "completed"}
        if namespaces and step.name in namespaces:
            item["namespace"], item["name"] = namespaces[step.name]
        middle = [("response.function_call_arguments.done",
                   {"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": 0,
                    "arguments": item["arguments"]})]
    else:
        item = {"type": "message", "id": f"msg_standin_{next(_ids)}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}]}
        middle = [("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                   "output_index": 0, "content_index": 0, "delta": step.text})]
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}
    whole = {"id": response_id, "object": "response", "created_at": 0, "status": "completed", "model": model,
             "output": [item], "usage": usage}
    events = [
        ("response.created", {"type": "response.created", "response": {**whole, "status": "in_progress", "output": []}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": {**item, "status": "in_progress"}}),
        *middle,
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": whole}),
    ]
    return whole, events


# --- OpenAI Chat Completions ---------------------------------------------------------------------

def chat_seen(body: dict[str, Any]) -> Seen:
    names: dict[str, str] = {}
    results: list[Result] = []
    calls = 0
    prompt = ""
    question = None
    for message in body.get("messages", []):
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                calls += 1
                names[call.get("id", "")] = call.get("function", {}).get("name", "")
        elif role == "tool":
            results.append(Result.of(names.get(message.get("tool_call_id", ""), ""), message.get("content"),
                                     False, message))
            question = None
        elif role == "user" and not prompt:
            prompt = _first_text(message.get("content"))
        elif role == "user" and calls:
            question = _first_text(message.get("content"))
    offered = [tool.get("function", {}).get("name", "") for tool in body.get("tools", []) or []]
    return Seen("chat", body.get("model", ""), bool(body.get("stream")), [n for n in offered if n], results, calls, prompt,
                media=media_in(body.get("messages")), question=question)


def chat_render(step: Step, model: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the whole completion, its stream chunks; the stream ends with ``data: [DONE]``)."""
    completion_id = f"chatcmpl-standin-{next(_ids)}"
    if isinstance(step, Call):
        call = {"id": step.id, "type": "function", "function": {"name": step.name, "arguments": json.dumps(step.arguments)}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [{"index": 0, **call}]}
        finish = "tool_calls"
    else:
        message = delta = {"role": "assistant", "content": step.text}
        finish = "stop"
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    base = {"id": completion_id, "created": 0, "model": model}
    whole = {**base, "object": "chat.completion", "usage": usage,
             "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    chunks = [
        {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage},
    ]
    return whole, chunks
