"""A Streamable HTTP endpoint in front of a stdio-only MCP server (stdlib only).

The official conformance referee speaks only Streamable HTTP; mcp-ref speaks only stdio. This
bridge serves ``http://127.0.0.1:PORT/mcp`` and relays each request to a stdio server process,
in both protocol eras:

* **2026-07-28** (stateless): one shared child, told ``server/discover`` first (the stdio
  binding's recommended opening for a modern client, so a dual-era server is not tipped into the
  old era by whatever the HTTP client happens to send first). Each POST is checked against the
  binding's header rules (``headers.py``), relayed, and answered as JSON, or as an SSE stream
  once a related notification comes first; ``subscriptions/listen`` is always a stream. Closing
  the HTTP connection is the cancellation (``notifications/cancelled`` to the child). The
  child's error codes become the statuses the binding names (400, 404). GET and DELETE: 405.
* **2025-11-25 and older** (sessions): an ``initialize`` POST without the modern ``_meta``
  starts a session, which is a child of its own (a stdio connection is one session), named by
  the ``Mcp-Session-Id`` the answer carries. Later POSTs with that id go to that child; a GET
  opens the session's standalone SSE stream (server-to-client requests and notifications not tied
  to one request); the client POSTs its responses to server requests; DELETE ends the session
  (stdin closed), after which the id answers 404. A disconnect is not a cancellation here: the
  client sends ``notifications/cancelled``, mapped to the child's id.

Both eras: the Origin and Host of every request must be loopback (DNS rebinding), the path is
``/mcp``, bodies are single JSON objects of at most 4 MiB. Errors the bridge itself makes end
in "(rejected by the HTTP bridge)", so a run's log tells them from the server's.

    python tools/conformance/bridge.py [--port N] [--ready-file F] -- mcp-ref-everything
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

if __package__ in (None, ""):  # run as a script: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "tools.conformance"

from .headers import HEADER_MISMATCH, PROTOCOL_VERSION, check_params, check_standard  # noqa: E402
from tools.http11 import EventStream, HttpError, Request, read_request, send, send_json  # noqa: E402
from .relay import LOG_LEVEL, Relay, Route  # noqa: E402

MODERN = "2026-07-28"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MAX_BODY = 4 * 1024 * 1024
MAX_SESSIONS = 64
LOOPBACK = {"localhost", "127.0.0.1", "::1"}
# basic/transports/streamable-http (2026-07-28): these error codes are HTTP 400, -32601 is 404.
ERROR_STATUS = {-32700: 400, -32600: 400, -32602: 400, HEADER_MISMATCH: 400, -32021: 400, -32022: 400, -32601: 404}
BRIDGE = " (rejected by the HTTP bridge)"
BRIDGE_INFO = {"name": "mcp-ref-conformance-bridge", "version": "1"}


def rpc_error(code: int, message: str, request_id: Any = None, *, has_id: bool = False) -> dict[str, Any]:
    """A JSON-RPC error made by the bridge; without the request's id when it could not be read."""
    error: dict[str, Any] = {"jsonrpc": "2.0", "error": {"code": code, "message": message + BRIDGE}}
    if has_id:
        error["id"] = request_id
    return error


def _is_loopback_host(host: str) -> bool:
    name = host.strip()
    if name.startswith("["):
        name = name[1:].split("]", 1)[0]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    return name.lower() in LOOPBACK


def _accepts(accept: str | None, media: str) -> bool:
    if accept is None:
        return True  # no Accept header means anything
    kinds = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    return bool(kinds & {media, media.split("/")[0] + "/*", "*/*"})


class Session:
    def __init__(self, session_id: str, relay: Relay) -> None:
        self.id = session_id
        self.relay = relay
        self.version: str | None = None
        self.streaming = False  # a GET stream is open


class Bridge:
    def __init__(self, argv: list[str], *, keepalive: float = 15.0, stderr: Any = None,
                 allow_hosts: tuple[str, ...] = (), allow_origins: tuple[str, ...] = (), verbose: bool = False) -> None:
        self.argv = argv
        self.keepalive = keepalive
        self.stderr = stderr
        self.allow_hosts = {host.lower() for host in allow_hosts}
        self.allow_origins = set(allow_origins)
        self.verbose = verbose
        self.stats: Counter = Counter()
        self.hub = Relay(argv, era="modern", stats=self.stats, stderr=stderr, restart=True, verbose=verbose)
        self.sessions: dict[str, Session] = {}
        self._probe_task: asyncio.Task | None = None

    async def start(self) -> None:
        await self.hub.start()
        self._probe_task = asyncio.create_task(self._probe())

    async def _probe(self) -> None:
        """``server/discover`` as the child's first message (written before any HTTP request)."""
        route = self.hub.open({"jsonrpc": "2.0", "id": "bridge-probe", "method": "server/discover", "params": {
            "_meta": {PROTOCOL_VERSION: MODERN, "io.modelcontextprotocol/clientInfo": BRIDGE_INFO,
                      "io.modelcontextprotocol/clientCapabilities": {}}}})
        final = await self._final(route, 30) if route else None
        if not (final and isinstance(final.get("result"), dict)):
            self.stats["probe_not_modern"] += 1

    async def close(self) -> None:
        for session in list(self.sessions.values()):
            await session.relay.stop()
        self.sessions.clear()
        await self.hub.stop()
        if self._probe_task:
            self._probe_task.cancel()

    @staticmethod
    async def _final(route: Route, timeout: float) -> dict[str, Any] | None:
        """The final answer of a route the bridge itself reads (notifications are skipped)."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    kind, message = await route.outbox.get()
                    if kind == "final":
                        return message
                    if kind == "end":
                        return None
        except TimeoutError:
            return None

    # --- HTTP --------------------------------------------------------------------------------

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                request = await read_request(reader, MAX_BODY)
            except HttpError as error:
                await send_json(writer, error.status, rpc_error(-32600, error.message))
                return
            if request is None:
                writer.close()
                return
            await self._dispatch(request, reader, writer)
        except (ConnectionError, OSError):
            pass
        except Exception as error:  # a bridge bug must not take the endpoint down; it is counted
            self.stats["bridge_errors"] += 1
            print(f"bridge: {type(error).__name__}: {error}", file=sys.stderr)
            with contextlib.suppress(Exception):
                await send_json(writer, 500, rpc_error(-32603, f"bridge error: {error}"))

    async def _dispatch(self, request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host = request.get("host") or ""
        if not (_is_loopback_host(host) or host.lower() in self.allow_hosts):
            await send_json(writer, 421, rpc_error(-32600, f"Host {host!r} is not a loopback name (DNS rebinding)"))
            return
        origin = request.get("origin")
        if origin is not None and origin not in self.allow_origins:
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or (parts.hostname or "").lower() not in LOOPBACK:
                await send_json(writer, 403, rpc_error(-32600, f"Origin {origin!r} is not a loopback origin"))
                return
        if request.path != "/mcp":
            await send_json(writer, 404, rpc_error(-32600, f"no MCP endpoint at {request.path!r}; it is /mcp"))
            return
        if request.method == "POST":
            await self._post(request, reader, writer)
        elif request.method == "GET":
            await self._get(request, reader, writer)
        elif request.method == "DELETE":
            await self._delete(request, writer)
        else:
            await send(writer, 405, headers=[("Allow", "GET, POST, DELETE")])

    async def _post(self, request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        content_type = (request.get("content-type") or "").split(";", 1)[0].strip().lower()
        if content_type != "application/json":
            await send_json(writer, 415, rpc_error(-32600, f"Content-Type must be application/json, not {content_type!r}"))
            return
        accept = request.get("accept")
        if not (_accepts(accept, "application/json") or _accepts(accept, "text/event-stream")):
            await send_json(writer, 406, rpc_error(-32600, f"Accept {accept!r} admits neither JSON nor SSE"))
            return
        try:
            message = json.loads(request.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            await send_json(writer, 400, rpc_error(-32700, f"body is not UTF-8 JSON: {error}"))
            return
        problem = _envelope_problem(message)
        if problem:
            has_id = isinstance(message, dict) and "id" in message and _valid_id(message["id"])
            await send_json(writer, 400, rpc_error(-32600, problem, message.get("id") if has_id else None, has_id=has_id))
            return
        session_header = request.values("mcp-session-id")
        if _is_modern(request, message):
            await self._modern_post(request, message, reader, writer)
        elif session_header:
            session = self.sessions.get(session_header[0])
            if session is None or session.relay.dead:
                await send_json(writer, 404, rpc_error(-32600, "unknown or terminated session", message.get("id"), has_id="id" in message))
                return
            await self._legacy_post(request, message, session, reader, writer)
        elif message.get("method") == "initialize":
            await self._initialize(request, message, writer)
        elif (request.get("mcp-protocol-version") or "") in LEGACY_VERSIONS:
            await send_json(writer, 400, rpc_error(-32600, "Mcp-Session-Id header is required (initialize first)",
                                                   message.get("id"), has_id="id" in message))
        else:
            await self._modern_post(request, message, reader, writer)

    # --- 2026-07-28 ------------------------------------------------------------------------------

    async def _modern_post(self, request: Request, message: dict[str, Any], reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> None:
        request_id, has_id = message.get("id"), "id" in message
        if "method" not in message:
            await send_json(writer, 400, rpc_error(-32600, "a JSON-RPC response cannot be posted at 2026-07-28", request_id, has_id=True))
            return
        problem = check_standard(request, message)
        if problem is None and message["method"] == "tools/call" and has_id:
            problem = await self._check_param_headers(request, message)
        if problem:
            await send_json(writer, 400, rpc_error(HEADER_MISMATCH, f"Header mismatch: {problem}", request_id, has_id=has_id))
            return
        if not has_id:
            # notifications/cancelled names a client id the child never saw; on HTTP, closing the
            # stream is the cancellation. Every other notification is relayed.
            if message["method"] != "notifications/cancelled":
                self.hub.send(message)
            await send(writer, 202)
            return
        sse = _accepts(request.get("accept"), "text/event-stream")
        if message["method"] == "subscriptions/listen" and not sse:
            await send_json(writer, 406, rpc_error(-32600, "subscriptions/listen needs Accept: text/event-stream", request_id, has_id=True))
            return
        route = self.hub.open(message)
        if route is None:
            await send_json(writer, 502, rpc_error(-32603, "the stdio server is not running", request_id, has_id=True))
            return
        await self._answer(route, self.hub, reader, writer, sse=sse, stream_now=route.listen)

    async def _check_param_headers(self, request: Request, message: dict[str, Any]) -> str | None:
        """``Mcp-Param-*`` against the tool's own inputSchema, read from the child's ``tools/list``."""
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        arguments = params.get("arguments")
        if not arguments and not any(name.startswith("mcp-param-") for name, _ in request.headers):
            return None
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        meta = {key: value for key, value in meta.items() if key not in ("progressToken", LOG_LEVEL)}
        cursor = None
        for _ in range(100):
            list_params: dict[str, Any] = {"_meta": meta, **({"cursor": cursor} if cursor else {})}
            route = self.hub.open({"jsonrpc": "2.0", "id": "bridge-tools-list", "method": "tools/list", "params": list_params})
            final = await self._final(route, 10) if route else None
            result = final.get("result") if final else None
            if not isinstance(result, dict):
                self.stats["tool_schema_lookup_failed"] += 1
                return None  # fail open: the server still validates the arguments
            for tool in result.get("tools") or []:
                if isinstance(tool, dict) and tool.get("name") == params.get("name"):
                    return check_params(request, arguments, tool.get("inputSchema"))
            cursor = result.get("nextCursor")
            if not cursor:
                return None
        return None

    # --- 2025-11-25 and older --------------------------------------------------------------------

    async def _initialize(self, request: Request, message: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        if "id" not in message:
            await send_json(writer, 400, rpc_error(-32600, "initialize must be a request"))
            return
        while len(self.sessions) >= MAX_SESSIONS:  # bound: the oldest session goes
            oldest = next(iter(self.sessions.values()))
            del self.sessions[oldest.id]
            await oldest.relay.stop()
            self.stats["sessions_evicted"] += 1
        relay = Relay(self.argv, era="legacy", stats=self.stats, stderr=self.stderr, verbose=self.verbose)
        await relay.start()
        route = relay.open(message, with_log=True)
        final = await self._final(route, 30) if route else None
        if final is None:
            await relay.stop()
            await send_json(writer, 502, rpc_error(-32603, "the stdio server did not answer initialize", message["id"], has_id=True))
            return
        result = final.get("result")
        if not isinstance(result, dict):
            await relay.stop()
            await send_json(writer, 200, final)
            return
        session = Session(secrets.token_urlsafe(24), relay)
        session.version = result.get("protocolVersion")
        self.sessions[session.id] = session
        self.stats["sessions_started"] += 1
        await send_json(writer, 200, final, headers=[("Mcp-Session-Id", session.id)])

    async def _legacy_post(self, request: Request, message: dict[str, Any], session: Session,
                           reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        version = request.get("mcp-protocol-version")
        if version is not None and version not in LEGACY_VERSIONS:
            await send_json(writer, 400, rpc_error(-32600, f"unsupported MCP-Protocol-Version {version!r}",
                                                   message.get("id"), has_id="id" in message))
            return
        relay = session.relay
        if "method" not in message:  # the client's answer to a server-to-client request
            relay.send(message)
            await send(writer, 202)
            return
        if "id" not in message:
            if message["method"] == "notifications/cancelled":
                params = message.get("params") if isinstance(message.get("params"), dict) else {}
                route = relay.find(params.get("requestId"))
                if route is not None:
                    relay.cancel(route, str(params.get("reason", "cancelled by the client")))
                    route.outbox.put_nowait(("end", None))
            else:
                relay.send(message)
            await send(writer, 202)
            return
        route = relay.open(message, with_log=True)
        if route is None:
            await send_json(writer, 502, rpc_error(-32603, "the stdio server is not running", message["id"], has_id=True))
            return
        await self._answer(route, relay, reader, writer, sse=_accepts(request.get("accept"), "text/event-stream"),
                           stream_now=False, legacy=True)

    def _session_for(self, request: Request) -> tuple[Session | None, int | None]:
        ids = request.values("mcp-session-id")
        if not ids:
            return None, 405  # no session: the 2026-07-28 answer (no GET stream, no DELETE)
        session = self.sessions.get(ids[0])
        if session is None or session.relay.dead:
            return None, 404
        return session, None

    async def _get(self, request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session, status = self._session_for(request)
        if session is None:
            await send(writer, status, headers=[("Allow", "POST")] if status == 405 else [])
            return
        if not _accepts(request.get("accept"), "text/event-stream"):
            await send_json(writer, 406, rpc_error(-32600, "a GET stream needs Accept: text/event-stream"))
            return
        if session.streaming:
            await send_json(writer, 409, rpc_error(-32600, "this session already has a GET stream"))
            return
        relay = session.relay
        queue: asyncio.Queue = asyncio.Queue()
        for held in relay.backlog:
            queue.put_nowait(("message", held))
        relay.backlog.clear()
        session.streaming, relay.standalone = True, queue
        stream = EventStream(writer)
        gone = asyncio.ensure_future(reader.read())
        try:
            while not stream.closed and not relay.dead:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, gone}, timeout=self.keepalive, return_when=asyncio.FIRST_COMPLETED)
                if gone in done:
                    getter.cancel()
                    break
                if getter in done:
                    await stream.event(getter.result()[1])
                else:
                    getter.cancel()
                    await stream.comment()
        finally:
            gone.cancel()
            if relay.standalone is queue:
                relay.standalone = None
            session.streaming = False
            await stream.end()

    async def _delete(self, request: Request, writer: asyncio.StreamWriter) -> None:
        session, status = self._session_for(request)
        if session is None:
            await send(writer, status, headers=[("Allow", "POST")] if status == 405 else [])
            return
        self.sessions.pop(session.id, None)
        await session.relay.stop()
        await send(writer, 200)

    # --- answering one request ---------------------------------------------------------------------

    async def _answer(self, route: Route, relay: Relay, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                      sse: bool, stream_now: bool, legacy: bool = False) -> None:
        """JSON when the response comes first, else an SSE stream of what comes, ending with it."""
        stream = EventStream(writer) if stream_now else None
        gone = asyncio.ensure_future(reader.read())
        try:
            while True:
                getter = asyncio.ensure_future(route.outbox.get())
                done, _ = await asyncio.wait({getter, gone}, timeout=self.keepalive, return_when=asyncio.FIRST_COMPLETED)
                if gone in done:
                    getter.cancel()
                    if legacy:
                        relay.abandon(route)  # initialize era: a disconnect is not a cancellation
                    else:
                        relay.cancel(route, "the HTTP client closed the stream")
                    return
                if getter not in done:
                    getter.cancel()
                    if sse:  # a quiet request commits to a stream and keeps it alive
                        stream = stream or EventStream(writer)
                        await stream.comment()
                    continue
                kind, message = getter.result()
                if kind == "final":
                    if stream is None:
                        error = message.get("error") if isinstance(message.get("error"), dict) else None
                        status = ERROR_STATUS.get(error.get("code"), 200) if error and not legacy else 200
                        await send_json(writer, status, message)
                    else:
                        await stream.event(message)
                    return
                if kind == "end":
                    stream = stream or EventStream(writer)
                    return
                if not sse:
                    self.stats["messages_dropped_json_only_accept"] += 1
                    continue
                stream = stream or EventStream(writer)
                await stream.event(message)
                if stream.closed:  # the write failed: the client is gone
                    if legacy:
                        relay.abandon(route)
                    else:
                        relay.cancel(route, "the HTTP client closed the stream")
                    return
        finally:
            gone.cancel()
            if stream is not None:
                await stream.end()


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _envelope_problem(message: Any) -> str | None:
    if isinstance(message, list):
        return "a batch is not accepted; send one JSON-RPC message per POST"
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "the body must be one JSON-RPC 2.0 object"
    if "id" in message and not _valid_id(message["id"]):
        return f"bad JSON-RPC id {message['id']!r}"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method must be a string"
        if "params" in message and not isinstance(message["params"], dict):
            return "params must be an object"
        return None
    if "id" in message and ("result" in message) != ("error" in message):
        return None
    return "neither a request, a notification nor a response"


def _is_modern(request: Request, message: dict[str, Any]) -> bool:
    """A 2026-07-28 message: modern ``_meta`` in the body, or a version header of a newer era."""
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    if PROTOCOL_VERSION in meta:
        return True
    versions = request.values("mcp-protocol-version")
    return bool(versions) and versions[0] not in LEGACY_VERSIONS


async def serve(args: argparse.Namespace) -> int:
    stderr = open(args.child_stderr, "ab") if args.child_stderr else None  # noqa: SIM115
    bridge = Bridge(args.command, keepalive=args.keepalive, stderr=stderr, allow_hosts=tuple(args.allow_host),
                    allow_origins=tuple(args.allow_origin), verbose=args.verbose)
    await bridge.start()
    server = await asyncio.start_server(bridge.handle, args.host, args.port, limit=64 * 1024)
    port = server.sockets[0].getsockname()[1]
    url = f"http://{args.host}:{port}/mcp"
    print(url, flush=True)
    if args.ready_file:
        Path(args.ready_file).write_text(url + "\n")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    await bridge.close()
    if args.stats_file:
        Path(args.stats_file).write_text(json.dumps(dict(bridge.stats), indent=1, sort_keys=True) + "\n")
    if stderr:
        stderr.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a stdio MCP server over Streamable HTTP (both eras), on loopback.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 (default): a free port")
    parser.add_argument("--ready-file", help="write the endpoint URL here once it accepts connections")
    parser.add_argument("--stats-file", help="write the stdio-side counters here (JSON) on exit")
    parser.add_argument("--child-stderr", help="append the server processes' stderr here")
    parser.add_argument("--keepalive", type=float, default=15.0, help="seconds of silence before an SSE comment (15)")
    parser.add_argument("--allow-host", action="append", default=[], help="another Host value to accept")
    parser.add_argument("--allow-origin", action="append", default=[], help="another Origin to accept")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every stdio line to stderr")
    parser.add_argument("command", nargs="+", help="the stdio server command (after --)")
    args = parser.parse_args(argv)
    return asyncio.run(serve(args))


if __name__ == "__main__":
    sys.exit(main())
