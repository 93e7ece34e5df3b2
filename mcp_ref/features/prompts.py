"""Prompts and the ``prompts/*`` methods.

Spec: server/prompts (2026-07-28). ``prompts/get`` checks its arguments before the handler runs:
an unknown prompt, a missing required argument, an argument the prompt does not declare, or a
value that is not a string is -32602. A handler returns a ``str`` (one user message), a list of
messages, or a ``PromptResult`` with a description.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..core.content import content_problem, prompt_message, with_optional
from ..core.errors import InternalError, InvalidParams, clip
from ..core.meta import check_meta_keys
from .pagination import page_result

if TYPE_CHECKING:
    from ..core.context import RequestContext
    from ..server import Server


@dataclass(frozen=True)
class PromptArgument:
    """One argument a prompt accepts."""

    name: str
    description: str | None = None
    required: bool = False
    title: str | None = None

    def definition(self) -> dict[str, Any]:
        return with_optional({"name": self.name}, title=self.title, description=self.description, required=self.required or None)


@dataclass
class PromptResult:
    """A ``GetPromptResult``: messages and an optional description."""

    messages: list[dict[str, Any]]
    description: str | None = None


@dataclass
class Prompt:
    """A registered prompt. ``handler(ctx, arguments)`` builds its messages."""

    name: str
    handler: Callable[..., Any]
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] = field(default_factory=list)
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_meta_keys(self.meta, f"prompt {self.name!r}")

    def definition(self) -> dict[str, Any]:
        """The prompt as ``prompts/list`` shows it."""
        return with_optional(
            {"name": self.name},
            title=self.title,
            description=self.description,
            arguments=[argument.definition() for argument in self.arguments] or None,
            icons=self.icons,
            _meta=self.meta,
        )

    def check_arguments(self, arguments: Any) -> dict[str, str]:
        """The arguments of a ``prompts/get``, or -32602 saying what is wrong with them."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise InvalidParams('prompts/get "arguments" must be an object of strings')
        declared = {argument.name for argument in self.arguments}
        unknown = sorted(set(arguments) - declared)
        if unknown:
            shown = [clip(name, 64) for name in unknown[:10]]  # client input: quoted briefly
            more = f" and {len(unknown) - len(shown)} more" if len(unknown) > len(shown) else ""
            raise InvalidParams(f"Prompt {self.name!r} has no argument(s): {', '.join(shown)}{more}", {"unknown": shown})
        not_strings = sorted(name for name, value in arguments.items() if not isinstance(value, str))
        if not_strings:
            raise InvalidParams(f"Prompt arguments must be strings: {', '.join(not_strings)}")
        missing = [argument.name for argument in self.arguments if argument.required and argument.name not in arguments]
        if missing:
            raise InvalidParams(
                f"Prompt {self.name!r} is missing required argument(s): {', '.join(missing)}", {"missing": missing}
            )
        return arguments

    def to_result(self, value: Any) -> dict[str, Any]:
        """Shape what a handler returned into a ``GetPromptResult`` (without ``resultType``)."""
        description = self.description
        if isinstance(value, PromptResult):
            description = value.description if value.description is not None else description
            value = value.messages
        if isinstance(value, str):
            messages = [prompt_message("user", value)]
        elif isinstance(value, list) and all(_is_message(m) for m in value):
            messages = value
        else:
            raise InternalError(f"Prompt {self.name!r} handler returned something that is not messages")
        for message in messages:
            if problem := content_problem(message["content"]):
                raise InternalError(f"Prompt {self.name!r} returned a malformed message: {problem}")
        result: dict[str, Any] = {"messages": messages}
        if description is not None:
            result["description"] = description
        return result


def _is_message(value: Any) -> bool:
    """A ``PromptMessage``: a user or assistant role and one content block."""
    return (
        isinstance(value, dict)
        and value.get("role") in ("user", "assistant")
        and isinstance(value.get("content"), dict)
        and isinstance(value["content"].get("type"), str)
    )


# --- the methods -------------------------------------------------------------------------------


async def list_prompts(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``prompts/list``: one page of prompts, in registration order."""
    return page_result(server.signer, "prompts", list(server.prompts.values()), params, "prompts/list", server.page_size, Prompt.definition)


async def get_prompt(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """``prompts/get``: check the arguments, then build the messages."""
    name = params.get("name")
    if not isinstance(name, str):
        raise InvalidParams('prompts/get needs "name", a string')
    prompt = server.prompts.get(name)
    if prompt is None:
        raise InvalidParams(f"Unknown prompt: {clip(name)}", {"name": clip(name)})
    arguments = prompt.check_arguments(params.get("arguments"))
    return prompt.to_result(await server.invoke(prompt.handler, ctx, arguments))
