"""``AsyncClient``: the test client itself (see ``mcp_ref.kit.testing``)."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import os
from typing import Any, Callable, Sequence

from ...core.meta import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROGRESS_TOKEN, PROTOCOL_VERSION, SUBSCRIPTION_ID
from ...core.versions import LATEST_LEGACY_VERSION, MODERN_VERSION
from .replies import Pending, Reply, RequestError, SchemaViolation, ServerExitError, Subscription, WireViolation
from .schemacheck import Schemas
from .transports import _InProcess, _Spawned

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"  # the same string as mcp_ref.features.tasks (not imported: tests need not load it)
TERMINAL_TASK_STATES = ("completed", "failed", "cancelled")
INPUT_METHODS = {"elicitation/create": "on_elicitation", "sampling/createMessage": "on_sampling", "roots/list": "on_roots"}

Callback = Callable[[dict[str, Any]], Any]


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
        from ...server import Server

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
        stderr: str = self._transport.stderr
        return stderr

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
        del self._pending[pending.id]
        if not pending.future.done():
            pending.future.set_result(message)

    def _notification(self, message: dict[str, Any]) -> None:
        self.notifications.append(message)
        params: dict[str, Any] = message["params"] if isinstance(message.get("params"), dict) else {}
        meta: dict[str, Any] = params["_meta"] if isinstance(params.get("_meta"), dict) else {}
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
            subscription.received(message)

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
        from ...core.errors import InternalError, MethodNotFound
        from ...core.wire import error_response, result_response

        request_id = message["id"]
        try:
            if message["method"] == "ping":
                reply = result_response(request_id, {})
            else:
                reply = result_response(request_id, await self._answer_input({"method": message["method"], "params": message.get("params", {})}))
        except LookupError as exc:
            reply = error_response(request_id, MethodNotFound(str(exc)))
        except Exception as exc:  # a callback failed: tell the server, as a host would
            reply = error_response(request_id, InternalError(f"the client's {message['method']} callback failed: {exc}"))
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
        from ...core.wire import encode_message

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
        from ...core.wire import request as request_message

        await self._write(request_message(request_id, method, body))
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
        from ...core.wire import notification

        await self._write(notification(method, params))

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


