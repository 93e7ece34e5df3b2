"""A client for testing MCP servers: in process against a ``Server``, or over stdio against a command.

Typical use, in a plain (synchronous) pytest test::

    from mcp_ref.testing import Client

    def test_add():
        with Client(server) as client:               # or Client(["python", "my_server.py"])
            assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == 3

``AsyncClient`` is the same client for ``async`` tests; ``Client`` runs it on a private event loop.

Theory of operation
-------------------
* **Same bytes as a host.** Every request is encoded as one wire line (``wire.encode_message``)
  and every answer decoded from the line the server wrote. In process, the lines go through a
  ``wire.WireReader`` into a ``dispatcher.Dispatcher`` whose ``MessageSink`` hands the written
  lines back to the client, exactly what ``stdio`` does minus the file descriptors. With a
  command, the lines go through the child's stdin and stdout; its stderr is collected
  (``stderr``) and its exit status checked when the client closes (``ServerExitError``). Each
  line the server writes must be one compact JSON object ending in ``\\n`` (``WireViolation``).
* **Eras.** ``era="modern"`` (default) puts the 2026-07-28 ``_meta`` (protocol version, the
  client capabilities, client info, a progress token) on every request. ``era="legacy"`` opens an
  ``initialize`` session first (``protocol_version``, default the newest legacy one) and sends
  requests without it.
* **Input requests.** Register ``on_elicitation``, ``on_sampling`` and ``on_roots`` (each
  ``callback(params) -> result``, plain or ``async``). The declared client capabilities follow
  from them unless ``capabilities=`` says otherwise. In the modern era ``call_tool``,
  ``get_prompt`` and ``read_resource`` answer ``input_required`` results themselves, retrying
  with ``inputResponses`` and the ``requestState`` for at most ``max_rounds`` rounds; in the
  legacy era the server's ``elicitation/create``, ``sampling/createMessage`` and ``roots/list``
  requests are answered with the same callbacks (a missing callback: a -32601 error response).
  Either way the interim results (or the server's requests) stay visible in ``Reply.rounds``.
* **Tasks.** With ``tasks=True`` the client declares the tasks extension; a ``call_tool``
  answered with ``resultType: "task"`` is polled with ``tasks/get`` until the task ends (every
  ``poll_interval`` seconds, by default the task's ``pollIntervalMs``; input requests inside it
  are answered through ``tasks/update`` with the same callbacks), unless ``poll_task=False``.
  A failed task raises ``RequestError`` with the task's error.
* **Notifications** are all kept in ``notifications``; each ``Reply`` also has those received
  while its request was in flight (progress by its token), and a ``Subscription`` those tagged
  with its id.
* **Schema checks.** Every message the server writes is validated against the official MCP
  JSON schemas when they are at hand: the folder ``schema_dir=`` names, else
  ``$MCP_REF_SCHEMA_DIR``, holding ``mcp-schema-2026-07-28.json`` (modern era),
  ``mcp-schema-2025-11-25.json`` (legacy era) and optionally ``mcp-tasks-extension-schema.json``
  (the tasks extension), or the files a ``Schemas`` given as ``schemas=`` names. A file that is
  absent is silently not checked (``schema_dir=False`` turns checking off). Beyond the shapes,
  a 2026-07-28 error code from the ranges that era keeps unused is a violation. A violation
  raises ``SchemaViolation`` from the call whose answer (or notification) broke the schema, or
  from ``close()`` for one no call was waiting for. Checking needs ``jsonschema`` (a dependency
  of mcp_ref), imported only when a schema file is found.

Errors: a JSON-RPC error answer raises ``RequestError`` (``check=False`` on ``request`` returns
it in ``Reply.error`` instead); no answer within ``timeout`` seconds raises ``TimeoutError``.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

from .meta import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROGRESS_TOKEN, PROTOCOL_VERSION, SUBSCRIPTION_ID
from .versions import LATEST_LEGACY_VERSION, MODERN_VERSION

__all__ = [
    "AsyncClient",
    "Client",
    "Pending",
    "Reply",
    "RequestError",
    "Schemas",
    "SchemaViolation",
    "ServerExitError",
    "Subscription",
    "WireViolation",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"  # the same string as mcp_ref.tasks (not imported: tests need not load it)
TERMINAL_TASK_STATES = ("completed", "failed", "cancelled")
SCHEMA_FILES = {"modern": "mcp-schema-2026-07-28.json", "legacy": "mcp-schema-2025-11-25.json", "tasks": "mcp-tasks-extension-schema.json"}
INPUT_METHODS = {"elicitation/create": "on_elicitation", "sampling/createMessage": "on_sampling", "roots/list": "on_roots"}

Callback = Callable[[dict[str, Any]], Any]


# --- errors ---------------------------------------------------------------------------------------


class SchemaViolation(AssertionError):
    """A message the server wrote does not match the official MCP schema."""


class WireViolation(AssertionError):
    """A line the server wrote is not one compact JSON object ending in a newline (or the server sent what its era forbids)."""


class ServerExitError(AssertionError):
    """The spawned server exited with an unexpected status, or closed its output while a request waited."""


class RequestError(Exception):
    """The server answered a request with a JSON-RPC error (or a task failed with one)."""

    def __init__(self, method: str, error: dict[str, Any], reply: Reply | None = None) -> None:
        self.method = method
        self.error = error
        self.code: int | None = error.get("code")
        self.message: str = str(error.get("message", ""))
        self.data: Any = error.get("data")
        self.reply = reply
        super().__init__(f"{method} failed with {self.code}: {self.message}")


# --- what a call returns --------------------------------------------------------------------------


@dataclass
class Reply:
    """The answer to one call: the final ``result`` plus everything that led to it.

    ``rounds``: the interim results (``input_required``, a task handle) in the modern era, or
    the server's own requests in the legacy era, in order. ``notifications``: those received
    while the call was in flight. ``task``: the last ``tasks/get`` result when the call became
    a task (``polls`` has every one). ``error``: the JSON-RPC error, only for ``request(...,
    check=False)``. ``reply["key"]`` reads the result.
    """

    method: str
    result: dict[str, Any]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    task: dict[str, Any] | None = None
    polls: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None

    def __getitem__(self, key: str) -> Any:
        return self.result[key]

    def __contains__(self, key: object) -> bool:
        return key in self.result

    def get(self, key: str, default: Any = None) -> Any:
        return self.result.get(key, default)

    @property
    def progress(self) -> list[dict[str, Any]]:
        """The ``params`` of every ``notifications/progress`` for this call."""
        return [n.get("params", {}) for n in self.notifications if n.get("method") == "notifications/progress"]

    @property
    def content(self) -> list[dict[str, Any]]:
        return list(self.result.get("content", []))

    @property
    def text(self) -> str:
        """The text blocks of ``content`` joined with newlines."""
        return "\n".join(block["text"] for block in self.content if block.get("type") == "text")

    @property
    def structured_content(self) -> Any:
        return self.result.get("structuredContent")

    @property
    def is_error(self) -> bool:
        return self.result.get("isError") is True

    @property
    def data(self) -> list[str | bytes]:
        """``resources/read``: each contents item's ``text``, or its ``blob`` decoded to bytes."""
        return [item["text"] if "text" in item else base64.b64decode(item.get("blob", ""), validate=True) for item in self.result.get("contents", [])]


@dataclass(eq=False)
class Pending:
    """A request sent and not yet answered (``AsyncClient.send_request``)."""

    client: AsyncClient
    id: int
    method: str
    progress_token: str | int | None
    future: asyncio.Future[dict[str, Any]]
    notifications: list[dict[str, Any]] = field(default_factory=list)
    server_requests: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    async def response(self, timeout: float | None = None) -> dict[str, Any]:
        """The whole response message (result or error). Raises ``SchemaViolation``, ``TimeoutError``."""
        wait = self.client.timeout if timeout is None else timeout
        try:
            message = await asyncio.wait_for(asyncio.shield(self.future), wait)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no response to {self.method} (id {self.id}) within {wait} s") from None
        if self.problems:
            raise SchemaViolation("\n".join(self.problems))
        return message

    async def reply(self, timeout: float | None = None) -> Reply:
        """The answer as a ``Reply``; a JSON-RPC error raises ``RequestError``."""
        message = await self.response(timeout)
        reply = Reply(self.method, message.get("result", {}), list(self.server_requests), list(self.notifications))
        if "error" in message:
            raise RequestError(self.method, message["error"], reply)
        return reply


class Subscription:
    """An open ``subscriptions/listen`` stream: ``acknowledged`` is the filter the server honours."""

    def __init__(self, client: AsyncClient, pending: Pending) -> None:
        self.client = client
        self.pending = pending
        self.id = pending.id
        self.acknowledged: dict[str, Any] = {}
        self.notifications: list[dict[str, Any]] = []  # every notification tagged with this stream's id
        self._taken = 0
        self._changed = asyncio.Event()

    def _add(self, message: dict[str, Any]) -> None:
        self.notifications.append(message)
        self._changed.set()

    @property
    def closed(self) -> bool:
        """Has the server ended the stream with its final response?"""
        return self.pending.future.done()

    async def next(self, method: str | None = None, timeout: float | None = None) -> dict[str, Any]:
        """The next notification on the stream not returned before (of ``method``, if given); waits for it."""
        wait = self.client.timeout if timeout is None else timeout

        async def find() -> dict[str, Any]:
            while True:
                for index in range(self._taken, len(self.notifications)):
                    message = self.notifications[index]
                    if method is None or message.get("method") == method:
                        self._taken = index + 1
                        return message
                self._changed.clear()
                await self._changed.wait()

        try:
            return await asyncio.wait_for(find(), wait)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no {method or 'notification'} on subscription {self.id} within {wait} s") from None

    async def cancel(self) -> None:
        """End the stream (``notifications/cancelled`` for its id)."""
        await self.client.cancel(self.pending)


# --- schema checks ----------------------------------------------------------------------------------

MODERN_RESULTS = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}
LEGACY_RESULTS = {
    **{method: name for method, name in MODERN_RESULTS.items() if method not in ("server/discover", "subscriptions/listen")},
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
}
TASK_RESULTS = {"tasks/get": "GetTaskResult", "tasks/update": "UpdateTaskResult", "tasks/cancel": "CancelTaskResult"}
NOTIFICATIONS = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
    "notifications/cancelled": "CancelledNotification",
}
LEGACY_SERVER_REQUESTS = {"elicitation/create": "ElicitRequest", "sampling/createMessage": "CreateMessageRequest", "roots/list": "ListRootsRequest", "ping": "PingRequest"}
STANDARD_ERRORS = {-32700: "ParseError", -32600: "InvalidRequestError", -32601: "MethodNotFoundError", -32602: "InvalidParamsError", -32603: "InternalError"}
MCP_ERROR_RESPONSES = {-32021: "MissingRequiredClientCapabilityError", -32022: "UnsupportedProtocolVersionError"}


class Schemas:
    """The official MCP JSON schemas, and the check of one message a server wrote against them.

    ``modern``, ``legacy``, ``tasks``: the files of the 2026-07-28 schema, the 2025-11-25 schema
    and the tasks extension's schema (``SCHEMA_FILES`` has their official names). A file that is
    ``None`` or absent is not checked against, silently. ``Schemas.find(folder)`` takes all three
    from one folder (``None``: ``$MCP_REF_SCHEMA_DIR``; ``False``: none).

    What is checked (``problems``): the JSON-RPC envelope of every message; a notification
    against its definition; a request (a legacy server's elicitation, sampling, roots or ping)
    against its definition; an error's object (modern: the standard codes' error definitions, the
    whole response for -32021 and -32022, and no code from the ranges the 2026-07-28 spec keeps
    unused, -32000..-32019 and -32020..-32099 but for those two); a result against the definition
    of the method it answers (``method``; none: only the envelope), modern ``input_required``
    results and the tasks extension's results and ``notifications/tasks`` included.

    ``strict``: also a violation, whatever the checks cannot place: a notification method or an
    answered method with no definition, or a definition the era's schema lacks (what
    mcp-ref's own suite wants; an author's server may have methods of its own, so the client's
    default is lenient). ``jsonschema`` is imported only when a file is first used.
    """

    def __init__(
        self,
        modern: str | os.PathLike[str] | None = None,
        legacy: str | os.PathLike[str] | None = None,
        tasks: str | os.PathLike[str] | None = None,
        *,
        strict: bool = False,
    ) -> None:
        self.paths = {kind: Path(path) if path is not None else None for kind, path in (("modern", modern), ("legacy", legacy), ("tasks", tasks))}
        self.strict = strict
        self._documents: dict[str, Any] = {}
        self._validators: dict[tuple[str, str], Any] = {}

    @classmethod
    def find(cls, folder: str | os.PathLike[str] | None | bool = None, *, strict: bool = False) -> Schemas:
        """The schemas under their official names in ``folder`` (``None`` or ``True``:
        ``$MCP_REF_SCHEMA_DIR``, if set; ``False``: no folder, nothing is checked)."""
        if folder is False:
            return cls(strict=strict)
        chosen = folder if folder not in (None, True) else os.environ.get("MCP_REF_SCHEMA_DIR")
        if not chosen:
            return cls(strict=strict)
        base = Path(chosen)  # type: ignore[arg-type]
        return cls(*(base / SCHEMA_FILES[kind] for kind in ("modern", "legacy", "tasks")), strict=strict)

    def has(self, kind: str) -> bool:
        """Is the schema of ``kind`` (``"modern"``, ``"legacy"``, ``"tasks"``) at hand?"""
        path = self.paths[kind]
        return path is not None and path.is_file()

    def _document(self, kind: str) -> dict[str, Any] | None:
        if kind not in self._documents:
            path = self.paths[kind]
            self._documents[kind] = json.loads(path.read_text(encoding="utf-8")) if path is not None and path.is_file() else None
        return self._documents[kind]

    def _validator(self, kind: str, definition: str) -> Any:
        """The validator of ``#/$defs/<definition>``; None without the file, False when the file lacks the definition."""
        key = (kind, definition)
        if key not in self._validators:
            document = self._document(kind)
            validator: Any = None
            if document is not None and definition not in document.get("$defs", {}):
                validator = False
            elif document is not None:
                import jsonschema
                import referencing
                import referencing.jsonschema

                resource = referencing.Resource.from_contents(document, default_specification=referencing.jsonschema.DRAFT202012)
                registry = referencing.Registry().with_resource("urn:mcp-ref-testing", resource)
                validator = jsonschema.Draft202012Validator({"$ref": f"urn:mcp-ref-testing#/$defs/{definition}"}, registry=registry)
            self._validators[key] = validator
        return self._validators[key]

    def validate(self, kind: str, definition: str | None, instance: Any) -> list[str]:
        """What is wrong with ``instance`` against ``#/$defs/<definition>`` of the ``kind`` schema
        (empty when nothing is, or when that schema is not at hand)."""
        if definition is None:
            return []
        validator = self._validator(kind, definition)
        if validator is False:
            return [f"{definition} is not defined in the {kind} schema"] if self.strict else []
        if validator is None:
            return []
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        if not errors:
            return []
        details = "\n".join(f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10])
        return [f"{definition} ({kind} schema) violated by {json.dumps(instance)[:500]}\n{details}"]

    def _defined(self, table: dict[str, str], name: str | None, what: str) -> tuple[str | None, list[str]]:
        """The definition ``table`` has for ``name``, and (strict) the problem of having none."""
        definition = table.get(name or "")
        if definition is None and name is not None and self.strict:
            return None, [f"no {what} definition known for {name!r}"]
        return definition, []

    def problems(self, era: str, message: dict[str, Any], method: str | None = None) -> list[str]:
        """Why ``message`` (a response answering ``method``, or a notification or request) breaks
        the schema of ``era`` (``"modern"`` or ``"legacy"``); empty when it does not."""
        if "method" in message:
            name = message["method"]
            if "id" in message:
                definition, problems = self._defined(LEGACY_SERVER_REQUESTS, name, "server request")
                return self.validate(era, "JSONRPCRequest", message) + problems + self.validate(era, definition, message)
            problems = self.validate(era, "JSONRPCNotification", message)
            if era == "modern" and name == "notifications/tasks":
                return problems + self.validate("tasks", "TaskStatusNotification", message)
            definition, unknown = self._defined(NOTIFICATIONS, name, "notification")
            return problems + unknown + self.validate(era, definition, message)
        if "error" in message:
            if message.get("id", 0) is None:
                # JSON-RPC 2.0 wants "id": null when the request id could not be read; the MCP schema
                # types id as an optional string|number, so the rest is checked as its id-less form.
                message = {key: value for key, value in message.items() if key != "id"}
            problems = self.validate(era, "JSONRPCErrorResponse", message)
            code = message.get("error", {}).get("code") if isinstance(message.get("error"), dict) else None
            if era == "modern" and isinstance(code, int) and not isinstance(code, bool):
                if -32019 <= code <= -32000 or (-32099 <= code <= -32020 and code not in MCP_ERROR_RESPONSES):
                    problems.append(f"error code {code} must not be emitted in 2026-07-28")
                problems += self.validate(era, STANDARD_ERRORS.get(code), message["error"])
                problems += self.validate(era, MCP_ERROR_RESPONSES.get(code), message)
            return problems
        problems = self.validate(era, "JSONRPCResultResponse", message)
        result = message.get("result")
        if not isinstance(result, dict):
            return problems
        if era == "modern" and result.get("resultType") == "input_required":
            return problems + self.validate(era, "InputRequiredResult", result)
        if era == "modern" and result.get("resultType") == "task":
            return problems + self.validate("tasks", "CreateTaskResult", result)
        if era == "modern" and method in TASK_RESULTS:
            return problems + self.validate("tasks", TASK_RESULTS[method], result)
        definition, unknown = self._defined(MODERN_RESULTS if era == "modern" else LEGACY_RESULTS, method, "result")
        return problems + unknown + self.validate(era, definition, result)

    def check(self, era: str, message: dict[str, Any], method: str | None = None) -> None:
        """``problems``, raised as one ``SchemaViolation``."""
        problems = self.problems(era, message, method)
        if problems:
            raise SchemaViolation("\n".join(problems))


# --- transports ---------------------------------------------------------------------------------------


class _InProcess:
    """A ``Server`` behind a real ``WireReader`` and ``Dispatcher``; the dispatcher's sink is this object."""

    def __init__(self, server: Any, max_concurrency: int) -> None:
        self.server = server
        self.max_concurrency = max_concurrency
        self.stderr = ""

    async def open(self) -> None:
        from .dispatcher import Dispatcher
        from .wire import WireReader

        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._reader = WireReader()
        self._dispatcher = Dispatcher(self.server, self, max_concurrency=self.max_concurrency)

    # The MessageSink the dispatcher writes to.
    def write(self, line: bytes) -> None:
        self._lines.put_nowait(bytes(line))

    async def drain(self) -> None:
        await asyncio.sleep(0)

    async def send(self, data: bytes) -> None:
        self._reader.feed(data)
        for event in self._reader.events():
            self._dispatcher.handle(event)

    async def read_line(self) -> bytes | None:
        return await self._lines.get()

    async def close(self, grace_seconds: float) -> int | None:
        self._reader.feed_eof()
        for event in self._reader.events():
            self._dispatcher.handle(event)
        await self._dispatcher.shutdown(grace_seconds)
        self.server.close()
        self._lines.put_nowait(None)
        return None


class _Spawned:
    """A command over real stdio: the child's stdin and stdout carry the lines, its stderr is kept."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None, cwd: str | os.PathLike[str] | None) -> None:
        self.command = list(command)
        self.env = env
        self.cwd = cwd
        self._stderr = bytearray()

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    async def open(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
            limit=64 * 1024 * 1024,
        )
        self._stderr_task = asyncio.get_running_loop().create_task(self._collect_stderr())

    async def _collect_stderr(self) -> None:
        assert self._process.stderr is not None
        while chunk := await self._process.stderr.read(65536):
            self._stderr += chunk

    async def send(self, data: bytes) -> None:
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(data)
            await self._process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise ServerExitError(f"the server closed its input; stderr:\n{self.stderr[-2000:]}") from None

    async def read_line(self) -> bytes | None:
        assert self._process.stdout is not None
        line = await self._process.stdout.readline()
        return line or None

    async def close(self, grace_seconds: float) -> int | None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), grace_seconds + 5)
        except asyncio.TimeoutError:
            self._process.kill()
            await self._process.wait()
        await self._stderr_task
        return self._process.returncode


# --- the client -----------------------------------------------------------------------------------------


class AsyncClient:
    """An MCP client for tests, for use in ``async`` code (``Client`` is the synchronous one).

    ``target``: a ``mcp_ref.Server`` (served in process, in this event loop) or a command
    (``["python", "server.py"]``, spawned; ``env``/``cwd`` for the child). Options:

    * ``era``: ``"modern"`` (2026-07-28 ``_meta`` on every request) or ``"legacy"`` (an
      ``initialize`` session at ``protocol_version``, default the newest legacy version).
    * ``capabilities``: the client capabilities to declare; by default those the registered
      callbacks can answer (``elicitation``, ``sampling``, ``roots``) plus the tasks extension
      when ``tasks=True``. ``client_info``, ``log_level``: the other ``_meta`` members.
    * ``on_elicitation``, ``on_sampling``, ``on_roots``: ``callback(params) -> result`` (plain or
      ``async``); ``on_roots`` may also return a plain list of roots.
    * ``max_rounds``: MRTR retries per call before giving up (``AssertionError``).
    * ``timeout``: seconds to wait for each answer; ``task_timeout``: for a task to end;
      ``poll_interval``: seconds between ``tasks/get`` polls (default: the task's
      ``pollIntervalMs``, at most one second).
    * ``schema_dir``: the folder of official schemas (else ``$MCP_REF_SCHEMA_DIR``; ``False``: no
      checks); ``schemas``: a ``Schemas`` instead, for files that are not in one folder.
    * ``expect_exit_status``: what a spawned server must exit with at ``close()`` (``None``: anything).
    """

    def __init__(
        self,
        target: Any,
        *,
        era: str = "modern",
        protocol_version: str | None = None,
        capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
        log_level: str | None = None,
        on_elicitation: Callback | None = None,
        on_sampling: Callback | None = None,
        on_roots: Callback | None = None,
        tasks: bool = False,
        max_rounds: int = 16,
        timeout: float = 10.0,
        task_timeout: float = 60.0,
        poll_interval: float | None = None,
        schema_dir: str | os.PathLike[str] | None | bool = None,
        schemas: Schemas | None = None,
        env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        expect_exit_status: int | None = 0,
        grace_seconds: float = 2.0,
        max_concurrency: int = 64,
    ) -> None:
        if era not in ("modern", "legacy"):
            raise ValueError('era must be "modern" or "legacy"')
        from .server import Server

        if isinstance(target, Server):
            self._transport: Any = _InProcess(target, max_concurrency)
        elif isinstance(target, (list, tuple)) and target and all(isinstance(part, (str, os.PathLike)) for part in target):
            self._transport = _Spawned([os.fspath(part) for part in target], env, cwd)
        else:
            raise TypeError("target must be a mcp_ref.Server or a command (a list of strings)")
        self.era = era
        self.protocol_version = protocol_version or (MODERN_VERSION if era == "modern" else LATEST_LEGACY_VERSION)
        self._capabilities = capabilities
        self.client_info = client_info or {"name": "mcp-ref-testing", "version": "1.0.0"}
        self.log_level = log_level
        self.on_elicitation = on_elicitation
        self.on_sampling = on_sampling
        self.on_roots = on_roots
        self.tasks = tasks
        self.max_rounds = max_rounds
        self.timeout = timeout
        self.task_timeout = task_timeout
        self.poll_interval = poll_interval
        self.expect_exit_status = expect_exit_status
        self.grace_seconds = grace_seconds
        self.schemas = schemas if schemas is not None else Schemas.find(schema_dir)
        self.notifications: list[dict[str, Any]] = []  # every notification the server wrote
        self.transcript: list[tuple[str, bytes]] = []  # ("sent" | "received", line), in order
        self.violations: list[str] = []  # every problem found, raised or not
        self.initialize_result: dict[str, Any] | None = None
        self.exit_status: int | None = None
        self._unclaimed: list[str] = []  # problems no call was waiting for: raised by close()
        self._ids = itertools.count(1)
        self._pending: dict[int, Pending] = {}
        self._subscriptions: dict[Any, Subscription] = {}
        self._reader_task: asyncio.Task[None] | None = None
        self._helpers: set[asyncio.Task[Any]] = set()
        self._eof = False

    # --- life cycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> AsyncClient:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close(check=exc_info[0] is None)

    async def start(self) -> None:
        """Start serving (or spawn the command); in the legacy era, also ``initialize``."""
        await self._transport.open()
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())
        if self.era == "legacy":
            await self.initialize()

    async def close(self, check: bool = True) -> None:
        """End input, let the server finish, and check: unclaimed schema violations and, for a
        spawned server, its exit status (``ServerExitError``). ``check=False`` skips the checks."""
        self.exit_status = await self._transport.close(self.grace_seconds)
        if self._reader_task is not None:
            try:
                await asyncio.wait_for(self._reader_task, self.grace_seconds + 5)
            except asyncio.TimeoutError:
                self._reader_task.cancel()
        for task in list(self._helpers):
            task.cancel()
        if not check:
            return
        if self.expect_exit_status is not None and self.exit_status not in (None, self.expect_exit_status):
            raise ServerExitError(f"the server exited with status {self.exit_status}, not {self.expect_exit_status}; stderr:\n{self.stderr[-2000:]}")
        if self._unclaimed:
            raise SchemaViolation("\n".join(self._unclaimed))

    @property
    def stderr(self) -> str:
        """What a spawned server wrote on stderr so far (empty in process: logs go to ``logging``)."""
        return self._transport.stderr

    @property
    def capabilities(self) -> dict[str, Any]:
        """The client capabilities declared: ``capabilities=``, or derived from the callbacks and ``tasks``."""
        if self._capabilities is not None:
            return self._capabilities
        declared: dict[str, Any] = {}
        if self.on_elicitation is not None:
            declared["elicitation"] = {}
        if self.on_sampling is not None:
            declared["sampling"] = {}
        if self.on_roots is not None:
            declared["roots"] = {}
        if self.tasks:
            declared["extensions"] = {TASKS_EXTENSION: {}}
        return declared

    # --- reading ----------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        while True:
            line = await self._transport.read_line()
            if line is None:
                break
            self._received(line)
        self._eof = True
        for pending in list(self._pending.values()):
            if not pending.future.done():
                pending.future.set_exception(ServerExitError(f"the server closed its output before answering {pending.method} (id {pending.id}); stderr:\n{self.stderr[-2000:]}"))

    def _problem(self, problem: str, pending: Pending | None) -> None:
        self.violations.append(problem)
        if pending is not None:
            pending.problems.append(problem)
        else:
            self._unclaimed.append(problem)

    def _received(self, line: bytes) -> None:
        self.transcript.append(("received", line))
        body = line[:-1] if line.endswith(b"\n") else line
        try:
            if not line.endswith(b"\n") or b"\n" in body or b"\r" in body:
                raise ValueError("not exactly one line ending in \\n")
            message = json.loads(body.decode("utf-8"))
            if not isinstance(message, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
            problem = f"bad line from the server ({exc}): {line[:300]!r}"
            self.violations.append(problem)
            current = self._current()
            if current is not None and not current.future.done():
                current.future.set_exception(WireViolation(problem))
            else:
                self._unclaimed.append(problem)
            return
        if "method" in message and "id" in message:
            self._server_request(message)
        elif "method" in message:
            self._notification(message)
        else:
            self._response(message)

    def _current(self) -> Pending | None:
        """The newest request in flight that is not a subscription (the one notifications belong to)."""
        for pending in reversed(list(self._pending.values())):
            if pending.method != "subscriptions/listen":
                return pending
        return None

    def _response(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        pending = self._pending.get(request_id) if isinstance(request_id, int) and not isinstance(request_id, bool) else None
        for problem in self.schemas.problems(self.era, message, pending.method if pending else None):
            self._problem(problem, pending)
        if pending is None:
            self._problem(f"a response to no request in flight: {json.dumps(message)[:300]}", None)
            return
        del self._pending[request_id]
        if not pending.future.done():
            pending.future.set_result(message)

    def _notification(self, message: dict[str, Any]) -> None:
        self.notifications.append(message)
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        subscription = self._subscriptions.get(meta.get(SUBSCRIPTION_ID)) if SUBSCRIPTION_ID in meta else None
        owners: list[Pending] = []
        if subscription is None and message.get("method") == "notifications/progress":
            owners = [p for p in self._pending.values() if p.progress_token is not None and p.progress_token == params.get("progressToken")]
        elif subscription is None:
            owners = [p for p in self._pending.values() if p.method != "subscriptions/listen"]
        for owner in owners:
            owner.notifications.append(message)
        owner_for_problems = subscription.pending if subscription is not None else (owners[0] if owners else None)
        for problem in self.schemas.problems(self.era, message, None):
            self._problem(problem, owner_for_problems)
        if subscription is not None:
            subscription._add(message)

    def _server_request(self, message: dict[str, Any]) -> None:
        current = self._current()
        if self.era == "modern":
            self._problem(f"a 2026-07-28 server sent a request: {json.dumps(message)[:300]}", current)
        for problem in self.schemas.problems("legacy", message, None) if self.era == "legacy" else ():
            self._problem(problem, current)
        if current is not None:
            current.server_requests.append(message)
        task = asyncio.get_running_loop().create_task(self._answer_server_request(message))
        self._helpers.add(task)
        task.add_done_callback(self._helpers.discard)

    async def _answer_server_request(self, message: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            if message["method"] == "ping":
                reply["result"] = {}
            else:
                reply["result"] = await self._answer_input({"method": message["method"], "params": message.get("params", {})})
        except LookupError as exc:
            reply["error"] = {"code": -32601, "message": str(exc)}
        except Exception as exc:  # a callback failed: tell the server, as a host would
            reply["error"] = {"code": -32603, "message": f"the client's {message['method']} callback failed: {exc}"}
        await self._write(reply)

    async def _answer_input(self, request: dict[str, Any]) -> Any:
        """The answer to one input request, from the callback registered for its method."""
        method = request.get("method")
        attribute = INPUT_METHODS.get(method)  # type: ignore[arg-type]
        callback = getattr(self, attribute) if attribute else None
        if callback is None:
            raise LookupError(f"the server asked for {method} but the client has no {attribute or 'callback for it'}")
        answer = callback(request.get("params", {}))
        if inspect.isawaitable(answer):
            answer = await answer
        if method == "roots/list" and isinstance(answer, list):
            answer = {"roots": answer}
        return answer

    # --- writing ----------------------------------------------------------------------------

    async def _write(self, message: dict[str, Any]) -> None:
        from .wire import encode_message

        line = encode_message(message)
        self.transcript.append(("sent", line))
        await self._transport.send(line)

    def _meta(self, progress_token: str | int | None, extra: dict[str, Any] | None) -> dict[str, Any] | None:
        meta: dict[str, Any] = {}
        if self.era == "modern":
            meta = {PROTOCOL_VERSION: self.protocol_version, CLIENT_CAPABILITIES: self.capabilities, CLIENT_INFO: self.client_info}
            if self.log_level is not None:
                meta[LOG_LEVEL] = self.log_level
        if progress_token is not None:
            meta[PROGRESS_TOKEN] = progress_token
        meta.update(extra or {})
        return meta or None

    async def send_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
        progress: bool = True,
        progress_token: str | int | None = None,
    ) -> Pending:
        """Send one request and return at once; ``await pending.reply()`` for its answer.

        ``_meta`` is filled in for the era (``meta`` adds or replaces members); with ``progress``
        the request carries a progress token (``progress_token``, a string or an integer, or a
        fresh string), and the progress notifications carrying it are the request's.
        """
        if self._eof:
            raise ServerExitError(f"the server has closed its output; stderr:\n{self.stderr[-2000:]}")
        request_id = next(self._ids)
        token = (f"mcp-ref-testing-{request_id}" if progress_token is None else progress_token) if progress else None
        body = dict(params or {})
        built = self._meta(token, meta)
        if built is not None:
            body["_meta"] = built
            token = built.get(PROGRESS_TOKEN)  # as sent: ``meta`` may have replaced or added it
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "exception was never retrieved"
        pending = Pending(self, request_id, method, token, future)
        self._pending[request_id] = pending
        await self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": body})
        return pending

    async def request(self, method: str, params: dict[str, Any] | None = None, *, meta: dict[str, Any] | None = None, check: bool = True, timeout: float | None = None) -> Reply:
        """One request, one answer (no MRTR retries, no task polling). With ``check=False`` an
        error comes back in ``Reply.error`` instead of raising ``RequestError``."""
        pending = await self.send_request(method, params, meta=meta)
        if check:
            return await pending.reply(timeout)
        message = await pending.response(timeout)
        return Reply(method, message.get("result", {}), list(pending.server_requests), list(pending.notifications), error=message.get("error"))

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._write(message)

    async def send_raw(self, data: bytes) -> None:
        """Send bytes as they are (malformed input tests); answers to them go to ``transcript`` and ``violations``."""
        self.transcript.append(("sent", data))
        await self._transport.send(data)

    async def cancel(self, request: Pending | int, reason: str | None = None) -> None:
        """Cancel a request in flight (``notifications/cancelled``); its ``reply()`` then raises ``asyncio.CancelledError``."""
        pending = request if isinstance(request, Pending) else self._pending.get(request)
        request_id = request.id if isinstance(request, Pending) else request
        params: dict[str, Any] = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        await self.notify("notifications/cancelled", params)
        if pending is not None:
            self._pending.pop(pending.id, None)
            self._subscriptions.pop(pending.id, None)
            if not pending.future.done():
                pending.future.cancel()

    # --- the protocol's methods --------------------------------------------------------------

    async def initialize(self) -> dict[str, Any]:
        """Legacy era: ``initialize`` and ``notifications/initialized`` (``start()`` does this); returns the result."""
        params = {"protocolVersion": self.protocol_version, "capabilities": self.capabilities, "clientInfo": self.client_info}
        reply = await (await self.send_request("initialize", params, progress=False)).reply()
        await self.notify("notifications/initialized")
        self.initialize_result = reply.result
        return reply.result

    async def discover(self) -> Reply:
        """``server/discover`` (modern era)."""
        return await self.request("server/discover")

    async def ping(self) -> Reply:
        """``ping`` (legacy era)."""
        return await self.request("ping")

    async def pages(self, method: str, params: dict[str, Any] | None = None, *, max_pages: int = 10_000) -> list[dict[str, Any]]:
        """Every page of a list method (``tools/list``, ``resources/list``, ...): its first result,
        then one per ``nextCursor`` until a page has none. More than ``max_pages`` pages is an
        ``AssertionError`` (a cursor chain that never ends)."""
        results: list[dict[str, Any]] = []
        cursor: str | None = None
        while len(results) < max_pages:
            reply = await self.request(method, {**(params or {}), "cursor": cursor} if cursor is not None else params)
            results.append(reply.result)
            cursor = reply.result.get("nextCursor")
            if cursor is None:
                return results
        raise AssertionError(f"{method} still had a nextCursor after {max_pages} pages")

    async def _list_all(self, method: str, key: str) -> list[dict[str, Any]]:
        return [item for page in await self.pages(method) for item in page.get(key, [])]

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool, following ``nextCursor`` through every page."""
        return await self._list_all("tools/list", "tools")

    async def list_resources(self) -> list[dict[str, Any]]:
        """Every resource, through every page."""
        return await self._list_all("resources/list", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        """Every resource template, through every page."""
        return await self._list_all("resources/templates/list", "resourceTemplates")

    async def list_prompts(self) -> list[dict[str, Any]]:
        """Every prompt, through every page."""
        return await self._list_all("prompts/list", "prompts")

    async def _with_input(self, method: str, params: dict[str, Any]) -> Reply:
        """A request that may ask for input: MRTR retries (modern) until a final result."""
        rounds: list[dict[str, Any]] = []
        notifications: list[dict[str, Any]] = []
        extra: dict[str, Any] = {}
        token = f"mcp-ref-testing-call-{next(self._ids)}"
        for _ in range(self.max_rounds + 1):
            pending = await self.send_request(method, {**params, **extra}, progress_token=token)
            reply = await pending.reply()
            notifications += reply.notifications
            rounds += reply.rounds  # legacy: the server's own requests
            if self.era != "modern" or reply.result.get("resultType") != "input_required":
                reply.rounds, reply.notifications = rounds, notifications
                return reply
            rounds.append(reply.result)
            answers = {key: await self._answer_input(request) for key, request in reply.result.get("inputRequests", {}).items()}
            extra = {"inputResponses": answers}
            if "requestState" in reply.result:
                extra["requestState"] = reply.result["requestState"]
        raise AssertionError(f"{method} still asked for input after {self.max_rounds} rounds")

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *, poll_task: bool = True) -> Reply:
        """``tools/call``, answering input requests; a task is polled to its end unless ``poll_task=False``."""
        reply = await self._with_input("tools/call", {"name": name, "arguments": arguments or {}})
        if reply.result.get("resultType") == "task" and poll_task:
            return await self.wait_for_task(reply)
        return reply

    async def wait_for_task(self, reply: Reply) -> Reply:
        """Poll the task a ``call_tool(..., poll_task=False)`` returned until it ends, answering its
        input requests with ``tasks/update``. Returns the ``Reply`` with the task's result; a failed
        task raises ``RequestError``."""
        handle = reply.result
        task_id = handle["taskId"]
        reply.rounds.append(handle)
        answered: set[str] = set()
        deadline = asyncio.get_running_loop().time() + self.task_timeout
        while True:
            task = (await self.request("tasks/get", {"taskId": task_id})).result
            reply.polls.append(task)
            reply.task = task
            status = task.get("status")
            if status in TERMINAL_TASK_STATES:
                break
            questions = {key: request for key, request in task.get("inputRequests", {}).items() if key not in answered}
            if status == "input_required" and questions:
                answers = {key: await self._answer_input(request) for key, request in questions.items()}
                await self.request("tasks/update", {"taskId": task_id, "inputResponses": answers})
                answered.update(answers)
                continue
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"task {task_id} still {status} after {self.task_timeout} s")
            await asyncio.sleep(self.poll_interval if self.poll_interval is not None else min(task.get("pollIntervalMs", 100), 1000) / 1000)
        if status == "failed":
            raise RequestError("tools/call", task.get("error", {}), reply)
        reply.result = task.get("result", {})
        return reply

    async def read_resource(self, uri: str) -> Reply:
        """``resources/read``, answering input requests. ``Reply.data`` has the contents (blobs as bytes)."""
        return await self._with_input("resources/read", {"uri": uri})

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> Reply:
        """``prompts/get``, answering input requests."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self._with_input("prompts/get", params)

    async def complete(self, argument: str, value: str, *, prompt: str | None = None, resource_template: str | None = None, context: dict[str, str] | None = None) -> Reply:
        """``completion/complete`` for a prompt's or a resource template's argument; ``reply["completion"]["values"]``."""
        if (prompt is None) == (resource_template is None):
            raise ValueError("give exactly one of prompt= or resource_template=")
        ref = {"type": "ref/prompt", "name": prompt} if prompt is not None else {"type": "ref/resource", "uri": resource_template}
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context is not None:
            params["context"] = {"arguments": context}
        return await self.request("completion/complete", params)

    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
    ) -> Subscription:
        """Open a ``subscriptions/listen`` stream and wait for its acknowledgement."""
        wanted: dict[str, Any] = {}
        for flag, name in ((tools, "toolsListChanged"), (prompts, "promptsListChanged"), (resources, "resourcesListChanged")):
            if flag:
                wanted[name] = True
        if resource_uris:
            wanted["resourceSubscriptions"] = list(resource_uris)
        if task_ids:
            wanted["taskIds"] = list(task_ids)
        pending = await self.send_request("subscriptions/listen", {"notifications": wanted}, progress=False)
        subscription = Subscription(self, pending)
        self._subscriptions[pending.id] = subscription
        waiter = asyncio.ensure_future(subscription.next("notifications/subscriptions/acknowledged"))
        done, _ = await asyncio.wait({waiter, pending.future}, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:  # answered at once: an error
            waiter.cancel()
            self._subscriptions.pop(pending.id, None)
            await pending.reply()
            raise AssertionError(f"subscriptions/listen ended without an acknowledgement: {pending.future.result()}")
        subscription.acknowledged = waiter.result().get("params", {}).get("notifications", {})
        return subscription


# --- the synchronous client -------------------------------------------------------------------------


class _SyncView:
    """Runs an async object's coroutine methods on the owning ``Client``'s loop."""

    def __init__(self, owner: Client, target: Any) -> None:
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if inspect.iscoroutinefunction(attribute):

            def run(*args: Any, **kwargs: Any) -> Any:
                self._owner._started_loop()  # before the coroutine exists: never one left un-awaited
                return self._owner._wrap(self._owner._run(attribute(*args, **kwargs)))

            run.__name__ = name
            run.__doc__ = attribute.__doc__
            return run
        return attribute

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)


class Client(_SyncView):
    """The synchronous ``AsyncClient``: the same constructor, attributes and methods, each method
    called without ``await`` (``with Client(server) as client: client.call_tool(...)``). It runs
    the client on a private event loop while a method runs, so it cannot be used inside a running
    event loop (use ``AsyncClient`` there). ``send_request`` returns a ``Pending`` and ``listen`` a
    ``Subscription`` whose methods are synchronous too.
    """

    def __init__(self, target: Any, **options: Any) -> None:
        super().__init__(self, AsyncClient(target, **options))
        object.__setattr__(self, "_loop", None)

    def _started_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("the client is not started: use `with Client(...) as client:` or call start()")
        return self._loop

    def _run(self, work: Awaitable[Any]) -> Any:
        return self._started_loop().run_until_complete(work)

    def _wrap(self, value: Any) -> Any:
        return _SyncView(self, value) if isinstance(value, (Pending, Subscription)) else value

    def start(self) -> None:
        """Start serving (or spawn the command) on a private event loop; legacy era: ``initialize``."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("Client cannot run inside a running event loop; use mcp_ref.testing.AsyncClient")
        object.__setattr__(self, "_loop", asyncio.new_event_loop())
        self._run(self._target.start())

    def close(self, check: bool = True) -> None:
        """``AsyncClient.close``, then the private loop is closed."""
        loop = self._loop
        if loop is None:
            return
        try:
            self._run(self._target.close(check))
        finally:
            leftovers = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in leftovers:
                task.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.close()
            object.__setattr__(self, "_loop", None)

    def __enter__(self) -> Client:
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close(check=exc_info[0] is None)
