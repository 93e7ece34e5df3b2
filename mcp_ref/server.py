"""The server API: what a server author touches.

A ``Server`` holds what the server offers (tools, resources, templates, prompts, completers),
how it describes itself (name, version, instructions, capabilities) and how it is configured, and
publishes change notifications to the sessions it serves. Everything one client connection has
(the legacy handshake, subscriptions, tasks, requests in flight) is that connection's
``session.Session``'s, so one ``Server`` can serve several sessions that share nothing but it. It
knows nothing about JSON-RPC or stdio: ``Server.run()`` hands it to the stdio transport, and the
dispatcher calls the feature modules with it.

Example::

    server = Server("demo", "1.0.0")

    @server.tool(description="Add two integers", input_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    })
    async def add(ctx, args):
        return str(args["a"] + args["b"])

    server.run()
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable

from .features.caching import DEFAULT_LIST_HINT, DEFAULT_READ_HINT, CacheHint
from .core.context import RateLimit
from .features.outgoing import DEFAULT_CLIENT_REQUEST_TIMEOUT_SECONDS
from .features.requeststate import StateSealer
from .features.pagination import DEFAULT_PAGE_SIZE
from .features.resources import Resource, ResourceTemplate
from .features.sealing import Signer
from .features.tasks import TASKS_EXTENSION, TaskSettings
from .features.tools import Tool
from .core.versions import initialize_versions, supported_versions
from .features.watch import WatchHooks, WatchSet

if TYPE_CHECKING:
    from .layers.handlerthreads import DaemonThreadPool

    from .features.prompts import Prompt, PromptArgument
    from .core.session import Session

LIST_KINDS = ("tools", "prompts", "resources")


def _doc(handler: Callable[..., Any]) -> str | None:
    """The first paragraph of a handler's docstring, as a default description."""
    doc = inspect.getdoc(handler)
    return doc.split("\n\n")[0].replace("\n", " ") if doc else None


def _features(capabilities: dict[str, Any]) -> frozenset[str]:
    """The dotted names a method table's gate may ask for: each section, and each flag set in it."""
    names = set(capabilities)
    names.update(f"{head}.{flag}" for head, section in capabilities.items() for flag, value in section.items() if value)
    return frozenset(names)


class Server:
    """An MCP server: register features on it, then ``run()`` it over stdio.

    Options:

    * ``list_changed``: which lists (``"tools"``, ``"prompts"``, ``"resources"``) this server
      announces changes of; ``True`` for all three. Declared in capabilities as ``listChanged``.
    * ``resource_subscriptions``: the server sends ``notifications/resources/updated`` (via
      ``notify_resource_updated``); declared as ``resources.subscribe``.
    * ``log_messages``: handlers' ``ctx.log`` may reach the client as ``notifications/message``
      (a deprecated feature; off by default, everything is logged to stderr regardless).
    * ``modern_only``: serve only 2026-07-28 clients. By default initialize-era clients
      (2025-11-25 and earlier) are served too; a modern-only server answers ``initialize`` with
      an error naming the versions it supports.
    * ``page_size``: items per page of the list methods (a page is never longer; one that ends
      where a paged resource lister stopped may be shorter).
    * ``cache_hints``: ``{method: CacheHint}`` overriding the defaults (0 ms; public for lists and
      discovery, private for ``resources/read``).
    * ``state_key`` / ``state_ttl_seconds``: the HMAC key of sealed MRTR request state and list
      cursors (default: from ``$MCP_REF_STATE_KEY``, else random per process), and the lifetime
      of request state.
    * ``handler_threads``: size of the pool that runs *synchronous* handlers (I/O never uses it).
    * ``rate_limits``: ``{method: RateLimit}`` pacing requests of those methods (e.g.
      ``"tools/call"``, ``"completion/complete"``); none by default.
    * ``client_request_timeout_seconds``: how long a legacy (initialize-era) request waits for
      its client's answer to an ``elicitation/create``, ``sampling/createMessage`` or
      ``roots/list`` the server sent for it (default 300 s); then the request ends with an error.
    * ``task_settings``: how tools registered with ``task=`` run as tasks (the
      ``io.modelcontextprotocol/tasks`` extension): lifetime, polling interval, how quickly a call
      must finish to be answered directly, and the bounds. See ``TaskSettings``.
    """

    def __init__(
        self,
        name: str,
        version: str,
        *,
        title: str | None = None,
        instructions: str | None = None,
        list_changed: bool | Iterable[str] = False,
        resource_subscriptions: bool = False,
        log_messages: bool = False,
        modern_only: bool = False,
        page_size: int = DEFAULT_PAGE_SIZE,
        cache_hints: dict[str, CacheHint] | None = None,
        state_key: bytes | None = None,
        state_ttl_seconds: float = 600,
        handler_threads: int = 4,
        rate_limits: dict[str, RateLimit] | None = None,
        client_request_timeout_seconds: float = DEFAULT_CLIENT_REQUEST_TIMEOUT_SECONDS,
        task_settings: TaskSettings | None = None,
    ) -> None:
        self.info: dict[str, Any] = {"name": name, "version": version}
        if title is not None:
            self.info["title"] = title
        self.instructions = instructions
        kinds = set(LIST_KINDS) if list_changed is True else set(list_changed or ())
        unknown = kinds - set(LIST_KINDS)
        if unknown:
            raise ValueError(f"list_changed: unknown list(s) {sorted(unknown)}; use {LIST_KINDS}")
        self.list_changed_kinds = frozenset(kinds)
        self.resource_subscriptions = resource_subscriptions
        self.log_messages = log_messages
        self.modern_only = modern_only
        # The versions advertised by server/discover and in -32022 data.supported: those a request
        # may name in _meta (the modern ones; legacy versions work only through initialize), and
        # the initialize-era versions served (none on a modern-only server), named apart in -32022.
        self.supported_versions: list[str] = supported_versions()
        self.initialize_versions: list[str] = initialize_versions(include_legacy=not modern_only)
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.page_size = page_size
        self._cache_hints = dict(cache_hints or {})
        self.sealer = StateSealer(state_key, state_ttl_seconds)
        self.handler_threads = handler_threads
        self.rate_limits = dict(rate_limits or {})
        if not client_request_timeout_seconds > 0:
            raise ValueError("client_request_timeout_seconds must be positive")
        # How long a legacy request waits for its client's answer to elicitation, sampling or roots.
        self.client_request_timeout_seconds = float(client_request_timeout_seconds)

        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.resource_templates: list[ResourceTemplate] = []
        self.resource_listers: list[Callable[..., Any]] = []  # plain: handler(ctx) -> all resources
        self.paged_resource_listers: list[Callable[..., Any]] = []  # handler(ctx, position, limit) -> (items, next)
        self.prompts: dict[str, Prompt] = {}
        self.completers: dict[tuple[str, str], Callable[..., Any]] = {}

        self.task_settings = task_settings or TaskSettings()  # each session's TaskStore runs by these
        self._watch_hooks = WatchHooks()
        self._pool: DaemonThreadPool | None = None
        self._busy_threads = 0
        self._busy_lock = threading.Lock()
        # The sessions being served (``attach``). A tuple, replaced whole, so that another thread
        # announcing a change reads one consistent set.
        self._sessions: tuple[Session, ...] = ()
        self._registry_changed()

    # --- description ----------------------------------------------------------------------------

    def capabilities(self, era: str = "modern") -> dict[str, Any]:
        """Server capabilities, derived from what is registered and what the server emits."""
        capabilities = self._feature_capabilities(era)
        if era == "modern" and self.offers_tasks:
            capabilities["extensions"] = {TASKS_EXTENSION: {}}
        return capabilities

    def _feature_capabilities(self, era: str = "modern") -> dict[str, Any]:
        """``capabilities(era)`` without ``extensions``: what the dispatcher checks a method against
        on every request (cheaper: no pass over the tools to see whether one supports tasks)."""
        capabilities: dict[str, Any] = {}
        if self.tools or "tools" in self.list_changed_kinds:
            capabilities["tools"] = {"listChanged": True} if "tools" in self.list_changed_kinds else {}
        if self.prompts or "prompts" in self.list_changed_kinds:
            capabilities["prompts"] = {"listChanged": True} if "prompts" in self.list_changed_kinds else {}
        listers = self.resource_listers or self.paged_resource_listers
        if self.resources or self.resource_templates or listers or "resources" in self.list_changed_kinds:
            resources: dict[str, Any] = {}
            if self.resource_subscriptions:
                resources["subscribe"] = True
            if "resources" in self.list_changed_kinds:
                resources["listChanged"] = True
            capabilities["resources"] = resources
        if self.prompts or self.resource_templates or self.completers:
            capabilities["completions"] = {}
        if self.log_messages or era == "legacy":
            # Legacy clients may call logging/setLevel, which we serve.
            capabilities["logging"] = {}
        return capabilities

    def _registry_changed(self) -> None:
        # What the dispatcher checks a method against on every request, worked out once per
        # change of the registry: ``offered[modern]`` holds the features offered in that era
        # ("tools", "resources.subscribe", ...), ``task_tools`` the names of the tools that may run as tasks.
        self.offered: dict[bool, frozenset[str]] = {modern: _features(self._feature_capabilities(era)) for modern, era in ((True, "modern"), (False, "legacy"))}
        self.task_tools = frozenset(name for name, tool in self.tools.items() if tool.task is not None)

    @property
    def offers_tasks(self) -> bool:
        """Does a registered tool support tasks (so the tasks extension is offered)?"""
        return any(tool.task is not None for tool in self.tools.values())

    def cache_hint(self, method: str) -> CacheHint:
        """The caching hint for a cacheable method's complete results."""
        hint = self._cache_hints.get(method)
        if hint is not None:
            return hint
        return DEFAULT_READ_HINT if method == "resources/read" else DEFAULT_LIST_HINT

    # --- registration ---------------------------------------------------------------------------

    def add_tool(self, tool: Tool) -> Tool:
        """Register (or replace) a tool; announces the change when tools ``list_changed`` is on."""
        self.tools[tool.name] = tool
        self._list_changed("tools")
        return tool

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (KeyError if absent); announces the change."""
        del self.tools[name]
        self._list_changed("tools")

    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        title: str | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        task: str | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: register a handler as a tool (name defaults to the function's).

        Two forms (``mcp_ref.kit.typed`` has the exact rule): the classic ``handler(ctx, arguments)``
        gets the validated arguments as a dict and takes its schemas from ``input_schema`` /
        ``output_schema``; a typed ``handler(ctx, a: int, b: int = 0) -> int`` gets them as keyword
        arguments, and its ``inputSchema`` (and ``outputSchema``, from the return annotation) are
        derived from its annotations, unless given here. An annotation with no JSON Schema is a
        ``ValueError`` naming the parameter.

        ``task``: ``"optional"`` lets a call from a client that declared the tasks extension become
        a task (when it runs long, or the handler calls ``ctx.run_as_task()``); ``"required"`` also
        refuses clients that did not declare it (-32021). See ``mcp_ref.features.tasks``.
        """

        def register(handler: Callable[..., Any]) -> Callable[..., Any]:
            from .kit import typed  # only when a tool is registered: cold start stays as it was

            call, schema, output = handler, input_schema, output_schema
            if not typed.is_classic(handler):
                derived = typed.derive(handler, name or handler.__name__)
                call = derived.call
                schema = schema if schema is not None else derived.input_schema
                output = output if output is not None else derived.output_schema
            if schema is None:
                schema = {"type": "object", "additionalProperties": False}
            self.add_tool(
                Tool(
                    name or handler.__name__, call, description or _doc(handler), schema, output,
                    title, annotations, icons, meta, task,
                )
            )
            return handler

        return register

    def add_resource(self, resource: Resource) -> Resource:
        """Register (or replace) a resource with a fixed URI; announces the change."""
        self.resources[resource.uri] = resource
        self._list_changed("resources")
        return resource

    def resource(self, uri: str, *, name: str | None = None, cache: CacheHint | None = None, **fields: Any) -> Callable[..., Any]:
        """Decorator: register ``handler(ctx)`` as the reader of ``uri``.

        ``fields``: ``title``, ``description``, ``mime_type``, ``size``, ``annotations``, ``icons``, ``meta``.
        """

        def register(handler: Callable[..., Any]) -> Callable[..., Any]:
            fields.setdefault("description", _doc(handler))
            self.add_resource(Resource(uri, name or handler.__name__, handler, cache=cache, **fields))
            return handler

        return register

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource (KeyError if absent); announces the change."""
        del self.resources[uri]
        self._list_changed("resources")

    def resource_template(self, uri_template: str, *, name: str | None = None, cache: CacheHint | None = None, **fields: Any) -> Callable[..., Any]:
        """Decorator: register ``handler(ctx, uri, variables)`` as the reader of every URI the template matches."""

        def register(handler: Callable[..., Any]) -> Callable[..., Any]:
            fields.setdefault("description", _doc(handler))
            self.resource_templates.append(ResourceTemplate(uri_template, name or handler.__name__, handler, cache=cache, **fields))
            self._list_changed("resources")
            return handler

        return register

    def resource_lister(self, handler: Callable[..., Any] | None = None, *, paged: bool = False) -> Callable[..., Any]:
        """Decorator: register a handler that lists more resources for ``resources/list``.

        ``@server.resource_lister`` (or ``@server.resource_lister()``): ``handler(ctx)`` returns all
        of them (``Resource`` objects or dicts), and the library pages them.

        ``@server.resource_lister(paged=True)``: ``handler(ctx, position, limit)`` returns
        ``(items, next_position)``: at most ``limit`` items starting at ``position`` (``None`` for
        the first page, else a ``next_position`` this handler returned earlier, as JSON decodes
        it), and where the next page starts, or ``None`` when done. ``next_position`` must be a
        JSON value; it travels inside the sealed cursor, so a position the handler gets back is
        always one it produced (the client cannot forge or alter it).

        ``resources/list`` lists static resources, then plain listers, then paged listers, each in
        registration order.
        """

        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            (self.paged_resource_listers if paged else self.resource_listers).append(function)
            self._registry_changed()
            return function

        return register if handler is None else register(handler)

    def add_prompt(self, prompt: Prompt) -> Prompt:
        """Register (or replace) a prompt; announces the change."""
        self.prompts[prompt.name] = prompt
        self._list_changed("prompts")
        return prompt

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt (KeyError if absent); announces the change."""
        del self.prompts[name]
        self._list_changed("prompts")

    def prompt(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        arguments: Iterable[PromptArgument] = (),
        title: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: register ``handler(ctx, arguments)`` as a prompt."""

        from .features.prompts import Prompt  # imported by the first prompt (see dispatcher._imported_on_first_call)

        def register(handler: Callable[..., Any]) -> Callable[..., Any]:
            self.add_prompt(Prompt(name or handler.__name__, handler, title, description or _doc(handler), list(arguments), icons, meta))
            return handler

        return register

    def completer(self, *, prompt: str | None = None, resource_template: str | None = None) -> Callable[..., Any]:
        """Decorator: ``handler(ctx, argument_name, value, context_arguments)`` suggests values.

        Returns a list of strings or a ``Completion``.
        """
        if (prompt is None) == (resource_template is None):
            raise ValueError("give exactly one of prompt= or resource_template=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", resource_template)

        def register(handler: Callable[..., Any]) -> Callable[..., Any]:
            self.completers[key] = handler  # type: ignore[index]
            self._registry_changed()
            return handler

        return register

    def validate_definitions(self) -> None:
        """Compile every tool schema now (they compile lazily otherwise). Raises on the first bad one."""
        for tool in self.tools.values():
            tool.compile()

    # --- change notifications --------------------------------------------------------------------

    def notify_list_changed(self, kind: str) -> None:
        """Announce that the ``tools``, ``prompts`` or ``resources`` list changed.

        Safe to call from any thread (a synchronous handler, a file watcher's thread); each session
        served hears it on its own event loop. Outside serving it does nothing.
        """
        if kind not in self.list_changed_kinds:
            raise ValueError(f"{kind} list changes are not declared; pass list_changed=[{kind!r}] to Server()")
        self._list_changed(kind)

    def notify_resource_updated(self, uri: str) -> None:
        """Announce that the resource at ``uri`` changed, to the subscribers of that URI.

        Safe to call from any thread (a synchronous handler, a file watcher's thread); each session
        served hears it on its own event loop. Outside serving it does nothing.
        """
        if not self.resource_subscriptions:
            raise ValueError("resource subscriptions are not declared; pass resource_subscriptions=True to Server()")
        for session in self._sessions:
            self._to_session(session, session.resource_updated, uri)

    def _list_changed(self, kind: str) -> None:
        self._registry_changed()
        if kind in self.list_changed_kinds:
            for session in self._sessions:  # (a tuple, read once: another thread may attach or detach)
                self._to_session(session, session.list_changed, kind)

    def _to_session(self, session: Session, announce: Callable[[str], None], argument: str) -> None:
        # A session's subscriptions are its event loop's: it hears the change there, whichever
        # thread announced it.
        try:
            session.on_loop(self._deliver, session, announce, argument)
        except RuntimeError:  # that session's loop closed since we read the tuple: it has ended
            pass

    def _deliver(self, session: Session, announce: Callable[[str], None], argument: str) -> None:
        if session in self._sessions:  # (a session that ended meanwhile hears nothing)
            announce(argument)

    # --- watch hooks -------------------------------------------------------------------------------

    def on_watch(self, handler: Callable[[WatchSet], Any]) -> Callable[[WatchSet], Any]:
        """Decorator: ``handler(watched: WatchSet)`` learns what clients listen for, whenever it changes.

        Called on the event loop when a listen stream opens (after its acknowledgement) or ends,
        on legacy ``resources/(un)subscribe`` and ``initialize``, and with an empty ``WatchSet``
        when serving stops (the last session ends); never twice in a row with the same set. A
        coroutine function runs in a task the library owns (never concurrently with itself;
        cancelled at shutdown after ``watch.WATCH_STOP_SECONDS``); a plain function is called
        inline, so keep it quick.
        Exceptions are logged (logger ``mcp_ref.watch``) and never affect a stream. Register
        before serving. See ``mcp_ref.features.watch``.
        """
        self._watch_hooks.add(handler)
        return handler

    @property
    def watched(self) -> WatchSet:
        """What clients listen for right now (what ``on_watch`` handlers are told): the union over
        the sessions being served."""
        uris: frozenset[str] = frozenset()
        lists: frozenset[str] = frozenset()
        for session in self._sessions:
            watched = session.watched
            uris, lists = uris | watched.resource_uris, lists | watched.lists
        return WatchSet(uris, lists)

    def watch_changed(self) -> None:
        """What is watched may have changed (event-loop thread): tell the hooks if it did."""
        if self._watch_hooks:
            self._watch_hooks.update(self.watched)

    # --- the sessions being served ------------------------------------------------------------------

    def attach(self, session: Session) -> None:
        """``session`` is served from now on (on its event loop): it hears change notifications,
        and what it watches counts. The first one starts the watch hooks."""
        if not self._sessions:
            self._watch_hooks.start()
        self._sessions = (*self._sessions, session)

    @property
    def serving(self) -> bool:
        """Whether a session is being served (attached and not yet detached)."""
        return bool(self._sessions)

    async def detach(self, session: Session) -> None:
        """``session`` has ended: it hears nothing more. Watch hooks hear what the others still
        watch; after the last one, the empty set (coroutine hooks get a bounded time to take it in)."""
        self._sessions = tuple(other for other in self._sessions if other is not session)
        if self._sessions:
            self.watch_changed()
        else:
            await self._watch_hooks.stop()

    # --- running ----------------------------------------------------------------------------------

    async def invoke(self, handler: Callable[..., Any], *args: Any) -> Any:
        """Call a handler: coroutine functions on the event loop, plain functions on the handler pool."""
        if inspect.iscoroutinefunction(handler):
            return await handler(*args)
        if self._pool is None:
            from .layers.handlerthreads import DaemonThreadPool  # only servers with synchronous handlers need it

            self._pool = DaemonThreadPool(self.handler_threads, thread_name_prefix="mcp-ref-handler")
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._run_sync, handler, args)

    def _run_sync(self, handler: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        with self._busy_lock:
            self._busy_threads += 1
        try:
            return handler(*args)
        finally:
            with self._busy_lock:
                self._busy_threads -= 1

    @property
    def signer(self) -> Signer:
        """The server's one HMAC signer (``sealing``): MRTR request state and list cursors."""
        return self.sealer.signer

    @property
    def busy_handler_threads(self) -> int:
        """Synchronous handlers running right now (they cannot be interrupted, only asked via ``ctx.cancelled``)."""
        return self._busy_threads

    def close(self) -> None:
        """Release the handler pool without waiting for handlers that are still running (the
        stdio shell does it when the last session it serves has ended)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def run(self, **options: Any) -> int:
        """Serve over stdio until stdin closes or a signal arrives; returns the exit status (0).

        ``options`` go to :func:`mcp_ref.core.stdio.serve_stdio` (``max_line_bytes``,
        ``shutdown_grace_seconds``, ``max_concurrency``, ``max_in_flight_bytes``,
        ``max_reserved_output_bytes``, ``flush_timeout_seconds``).
        """
        from .core.stdio import run_stdio

        return run_stdio(self, **options)
