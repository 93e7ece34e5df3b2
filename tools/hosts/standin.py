"""A stand-in for a model API on 127.0.0.1 that follows a script instead of thinking.

Every API shape of ``shapes.py`` is served on one port, chosen by the request path:

    POST /v1/messages, /v1/messages/count_tokens           Anthropic (Claude Code)
    POST /v1beta/models/M:generateContent|:streamGenerateContent|:countTokens   Gemini
    POST /v1/responses                                     OpenAI Responses (Codex)
    POST /v1/chat/completions, GET /v1/models              OpenAI Chat Completions (Copilot CLI)

A request that offers the server's tools is a turn of the agent loop: the script gets a ``Turn``
(the tools offered, every tool result so far as the host passed it) and returns the next step,
a ``Call`` or a final ``Say``. Any other request (a title, a routing or next-speaker check, or a
question the host asks about the conversation after the tool results, such as Copilot CLI's
summary when it compacts the history) is a side request, answered with a short text or the
smallest value its response schema allows.
Every request is logged, one JSON object per line: for a turn, the tool results the model saw
that it had not seen in the turn before (a host resends the whole conversation each time, and a
2 MB file read in pages would otherwise be logged once per page), exactly as the host passed
them, and the image or audio parts the request carried.

Token counts (Anthropic ``count_tokens``) are answered with the UTF-8 bytes of the request's
text: no byte-level tokenizer counts more, so a host that checks a result's size by counting
its tokens is measured here at its strictest.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tools.http11 import EventStream, HttpError, read_request, send_json
from tools.hosts import shapes
from tools.hosts.shapes import Call, Result, Say, Seen, Step

RAW_BODY_BYTES = 512 * 1024  # bigger request bodies are left out of model.raw.jsonl (the last one is kept)
_GEMINI = re.compile(r"/v1(?:beta|alpha)?/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")


def name_of(offered: list[str], tool: str) -> str | None:
    """The host's name for the server's tool ``tool``: hosts prefix it (``mcp__srv__tool``...) and
    may offer a built-in tool of the same bare name, so the longest match (the prefixed one) wins.
    A match is the whole name after a separator: read_file does not match read_multiple_files."""
    matches = [name for name in offered
               if name == tool or (name.endswith(tool) and name[-len(tool) - 1] in "_-./:")]
    return max(matches, key=len) if matches else None


def server_names(offered: list[str], server_tools: set[str]) -> dict[str, str]:
    """{server tool: host name} for every server tool among ``offered``."""
    return {tool: name for tool in server_tools if (name := name_of(offered, tool))}


class Turn:
    """What the scripted model knows when it picks its next step."""

    def __init__(self, seen: Seen, server_tools: set[str]) -> None:
        self.seen = seen
        self.offered = seen.offered
        self.results: list[Result] = seen.results
        self.server_tools = server_tools

    @property
    def last(self) -> Result | None:
        return self.results[-1] if self.results else None

    def call(self, tool: str, **arguments: Any) -> Step:
        """Call the server's ``tool`` (or a host tool, by its exact name) under the host's name."""
        name = name_of(self.offered, tool)
        return Call(name, arguments) if name else Say(f"the host offers no tool {tool!r}")


Script = Callable[[Turn], Step]


def steps(*plan: Step | Callable[[Turn], Step], then: str = "Done.") -> Script:
    """A script from a plan: the Nth step runs after N tool results (a callable gets the ``Turn``)."""

    def script(turn: Turn) -> Step:
        index = len(turn.results)
        if index >= len(plan):
            return Say(then)
        step = plan[index]
        return step(turn) if callable(step) else step

    return script


class StandIn:
    """The HTTP server; run it in a thread with ``start()``, stop it with ``stop()``."""

    def __init__(self, script: Script, log_path: Path, server_tools: set[str]) -> None:
        self.script = script
        self.log_path = log_path
        self.server_tools = server_tools
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._results_logged = 0  # tool results the last logged turn held

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> int:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the stand-in model did not start")
        return self.port

    def stop(self) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread:
            self._thread.join(10)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0, limit=1024 * 1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()

    def _log(self, entry: dict[str, Any]) -> None:
        with self.log_path.open("a") as log:
            log.write(json.dumps(entry, ensure_ascii=False) + "\n")

    # --- one request ---------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await read_request(reader, 64 * 1024 * 1024)
        except HttpError as error:
            await send_json(writer, error.status, {"error": {"message": error.message}})
            return
        if request is None:
            writer.close()
            return
        path = request.path
        try:
            body = json.loads(request.body) if request.body else {}
        except ValueError:
            body = {}
        with self.log_path.with_suffix(".raw.jsonl").open("a") as raw:  # every request, whole unless huge
            whole = len(request.body) <= RAW_BODY_BYTES
            raw.write(json.dumps({"method": request.method, "target": request.target, "bytes": len(request.body),
                                  "body": body if whole else "(left out: see model.last.json)"}) + "\n")
        if not whole:
            self.log_path.with_name("model.last.json").write_bytes(request.body)
        try:
            await self._route(request.method, path, request.target, body, writer)
        except Exception as error:  # a stand-in bug is the run's failure, logged where the run looks
            self._log({"path": path, "error": f"{type(error).__name__}: {error}"})
            await send_json(writer, 500, {"error": {"message": f"stand-in error: {error}"}})

    async def _route(self, method: str, path: str, target: str, body: Any, writer: asyncio.StreamWriter) -> None:
        if method == "GET" and path.rstrip("/").endswith("/models"):
            self._log({"path": path, "side": "models"})
            await send_json(writer, 200, {"object": "list", "data": [
                {"id": "stand-in", "object": "model", "created": 0, "owned_by": "stand-in"}]})
            return
        if method != "POST":
            self._log({"path": path, "side": "unknown", "method": method})
            await send_json(writer, 404, {"error": {"message": f"no {method} {path} here"}})
            return
        if path.endswith("/messages/count_tokens"):
            counted = len(shapes.text_of([body.get("system"), body.get("messages")]).encode("utf-8"))
            self._log({"path": path, "side": "count_tokens", "input_tokens": counted})
            await send_json(writer, 200, {"input_tokens": max(counted, 1)})
            return
        gemini = _GEMINI.search(path)
        if gemini and gemini.group(2) == "countTokens":
            await send_json(writer, 200, {"totalTokens": 100})
            return
        if path.endswith("/messages"):
            seen = shapes.anthropic_seen(body)
        elif gemini:
            seen = shapes.gemini_seen(body, gemini.group(1), gemini.group(2) == "streamGenerateContent")
        elif path.endswith("/responses"):
            seen = shapes.responses_seen(body)
        elif path.endswith("/chat/completions"):
            seen = shapes.chat_seen(body)
        else:
            self._log({"path": path, "side": "unknown", "method": method})
            await send_json(writer, 404, {"error": {"message": f"no POST {path} here"}})
            return
        step = self._decide(seen, path)
        await self._answer(seen, step, writer)

    def _decide(self, seen: Seen, path: str) -> Step:
        turn = Turn(seen, self.server_tools)
        if not server_names(seen.offered, self.server_tools):
            # A side request: the smallest answer its schema allows, or a short text.
            text = json.dumps(shapes.example_of(seen.schema)) if seen.schema else "OK"
            self._log({"path": path, "side": "no server tools offered", "api": seen.api, "offered": seen.offered,
                       "answer": text})
            return Say(text)
        if seen.question is not None:
            text = "The model has been following the server's cues; it goes on from the last one."
            self._log({"path": path, "side": "a question about the conversation", "api": seen.api,
                       "question": seen.question[:300], "answer": text})
            return Say(text)
        step = self.script(turn)
        # The results not in the last logged turn: all new ones, or (the host dropped or
        # summarised earlier ones) the last one.
        held = len(seen.results)
        new = seen.results[self._results_logged:] if held >= self._results_logged else seen.results[-1:]
        self._results_logged = held
        self._log({"turn": True, "path": path, "api": seen.api, "model": seen.model, "offered": seen.offered,
                   "results": [{k: v for k, v in asdict(r).items() if k != "raw"} for r in new],
                   "result_count": held, "media": seen.media,
                   "calls": seen.calls, "step": asdict(step) | {"kind": type(step).__name__}})
        return step

    async def _answer(self, seen: Seen, step: Step, writer: asyncio.StreamWriter) -> None:
        model = seen.model or "stand-in"
        if seen.api == "anthropic":
            whole, events = shapes.anthropic_render(step, model)
            await self._stream_or_json(writer, seen.stream, whole, [(json.dumps(d), e) for e, d in events])
        elif seen.api == "gemini":
            whole = shapes.gemini_render(step, model)
            await self._stream_or_json(writer, seen.stream, whole, [(json.dumps(whole), None)])
        elif seen.api == "responses":
            whole, events = shapes.responses_render(step, model, seen.namespaces)
            await self._stream_or_json(writer, seen.stream, whole, [(json.dumps(d), e) for e, d in events])
        else:
            whole, chunks = shapes.chat_render(step, model)
            await self._stream_or_json(writer, seen.stream, whole,
                                       [(json.dumps(c), None) for c in chunks] + [("[DONE]", None)])

    @staticmethod
    async def _stream_or_json(writer: asyncio.StreamWriter, stream: bool, whole: Any,
                              events: list[tuple[str, str | None]]) -> None:
        if not stream:
            await send_json(writer, 200, whole)
            return
        sse = EventStream(writer)
        for data, event in events:
            await sse.data(data, event)
        await sse.end()


def read_log(path: Path) -> list[dict[str, Any]]:
    """The stand-in's log: one dict per request."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# The `Call` and `Say` steps, re-exported for scripts.
__all__ = ["Call", "Say", "StandIn", "Turn", "steps", "read_log"]
