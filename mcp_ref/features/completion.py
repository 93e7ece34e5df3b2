"""Argument completion: ``completion/complete``.

Spec: server/utilities/completion (2026-07-28). A completer is registered for a prompt (by name)
or a resource template (by URI template) and returns suggestions for one argument. At most 100
values go out; ``hasMore`` says when there were more. A reference to a prompt or template the
server does not have, or to an argument the prompt does not declare, is -32602; a known prompt
or template without a completer gets an empty list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..core.errors import InternalError, InvalidParams, clip

if TYPE_CHECKING:
    from ..core.context import RequestContext
    from ..server import Server

MAX_VALUES = 100


@dataclass
class Completion:
    """Suggestions, optionally with the total number of matches and whether more exist."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


def _reference(params: dict[str, Any]) -> tuple[str, str]:
    ref = params.get("ref")
    if not isinstance(ref, dict):
        raise InvalidParams('completion/complete needs "ref", an object')
    kind = ref.get("type")
    if kind == "ref/prompt" and isinstance(ref.get("name"), str):
        return kind, ref["name"]
    if kind == "ref/resource" and isinstance(ref.get("uri"), str):
        return kind, ref["uri"]
    raise InvalidParams('"ref" must be {"type": "ref/prompt", "name": ...} or {"type": "ref/resource", "uri": ...}')


async def complete(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``completion/complete``: suggestions for one argument of a prompt or resource template."""
    kind, target = _reference(params)
    argument = params.get("argument")
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str) or not isinstance(argument.get("value"), str):
        raise InvalidParams('"argument" must be {"name": string, "value": string}')
    context = params.get("context")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        raise InvalidParams('"context" must be an object')
    context_arguments = context.get("arguments")
    if context_arguments is not None and not isinstance(context_arguments, dict):
        raise InvalidParams('"context.arguments" must be an object')
    if kind == "ref/prompt":
        prompt = server.prompts.get(target)
        if prompt is None:
            raise InvalidParams(f"Unknown prompt: {clip(target)}", {"name": clip(target)})
        if prompt.arguments and argument["name"] not in {a.name for a in prompt.arguments}:
            raise InvalidParams(f"Prompt {target!r} has no argument {clip(argument['name'])!r}")
    elif not any(t.uri_template == target for t in server.resource_templates) and target not in server.resources:
        raise InvalidParams(f"Unknown resource template: {clip(target)}", {"uri": clip(target)})
    completer: Callable[..., Any] | None = server.completers.get((kind, target))
    if completer is None:
        return {"completion": {"values": [], "hasMore": False}}
    value = await server.invoke(completer, ctx, argument["name"], argument["value"], context_arguments or {})
    return {"completion": _shape(value)}


def _shape(value: Any) -> dict[str, Any]:
    completion = value if isinstance(value, Completion) else Completion(list(value))
    if not all(isinstance(v, str) for v in completion.values):
        raise InternalError("completer returned values that are not strings")
    shown = completion.values[:MAX_VALUES]
    result: dict[str, Any] = {"values": shown}
    total = completion.total if completion.total is not None else (len(completion.values) if len(completion.values) > MAX_VALUES else None)
    if total is not None:
        result["total"] = total
    has_more = completion.has_more if completion.has_more is not None else len(completion.values) > MAX_VALUES
    result["hasMore"] = has_more
    return result
