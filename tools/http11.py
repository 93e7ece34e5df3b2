"""Just enough HTTP/1.1 for a loopback MCP endpoint (stdlib only).

One request per connection: every answer carries ``Connection: close``. That keeps the server
simple and makes a client's disconnect visible: once the request has been read, the only thing
the socket can still deliver is its end, which for a streamed answer means "cancelled".

Bodies: ``Content-Length`` or ``chunked`` in; ``Content-Length`` (whole answers) or ``chunked``
(Server-Sent Events streams) out.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

MAX_HEAD = 64 * 1024


class HttpError(Exception):
    """A request that cannot be read as HTTP: answered with ``status`` and the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Request:
    method: str
    target: str
    headers: list[tuple[str, str]]  # (lower-cased name, value with surrounding whitespace removed)
    body: bytes = b""
    path: str = field(init=False)

    def __post_init__(self) -> None:
        self.path = self.target.split("?", 1)[0]

    def values(self, name: str) -> list[str]:
        """Every value of header ``name`` (case-insensitive), in order."""
        name = name.lower()
        return [value for key, value in self.headers if key == name]

    def get(self, name: str) -> str | None:
        """The header's value; several occurrences are joined with ``", "`` (RFC 9110 5.3)."""
        found = self.values(name)
        return ", ".join(found) if found else None


async def read_request(reader: asyncio.StreamReader, max_body: int) -> Request | None:
    """One request from ``reader``; ``None`` if the peer closed before sending anything."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if not error.partial.strip():
            return None
        raise HttpError(400, "incomplete request head") from None
    except asyncio.LimitOverrunError:
        raise HttpError(431, "request head too large") from None
    lines = head[:-4].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, f"bad request line {lines[0]!r}")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpError(400, f"bad header line {line!r}")
        headers.append((name.lower(), value.strip(" \t")))
    request = Request(parts[0], parts[1], headers)
    if "chunked" in (request.get("transfer-encoding") or "").lower():
        request.body = await _read_chunked(reader, max_body)
        return request
    length_text = request.get("content-length") or "0"
    if not length_text.isdigit():
        raise HttpError(400, f"bad Content-Length {length_text!r}")
    length = int(length_text)
    if length > max_body:
        raise HttpError(413, f"body of {length} bytes is over the {max_body}-byte limit")
    try:
        request.body = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise HttpError(400, "body shorter than Content-Length") from None
    return request


async def _read_chunked(reader: asyncio.StreamReader, max_body: int) -> bytes:
    body = bytearray()
    try:
        while True:
            size_line = (await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip()
            size = int(size_line, 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return bytes(body)
            if len(body) + size > max_body:
                raise HttpError(413, f"body over the {max_body}-byte limit")
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    except (ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        raise HttpError(400, "malformed chunked body") from None


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Status"
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{name}: {value}" for name, value in headers), "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def send(writer: asyncio.StreamWriter, status: int, body: bytes = b"", *,
               content_type: str | None = None, headers: list[tuple[str, str]] = ()) -> None:
    """A whole answer, then close."""
    all_headers = list(headers)
    if content_type:
        all_headers.append(("Content-Type", content_type))
    all_headers.append(("Content-Length", str(len(body))))
    writer.write(_head(status, all_headers) + body)
    await _close(writer)


async def send_json(writer: asyncio.StreamWriter, status: int, message: Any, *,
                    headers: list[tuple[str, str]] = ()) -> None:
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
    await send(writer, status, body, content_type="application/json", headers=headers)


async def _close(writer: asyncio.StreamWriter) -> None:
    try:
        await writer.drain()
        writer.close()
        await writer.wait_closed()
    except (ConnectionError, OSError):
        pass


class EventStream:
    """A ``text/event-stream`` answer, sent with chunked encoding; ``end()`` closes it."""

    def __init__(self, writer: asyncio.StreamWriter, headers: list[tuple[str, str]] = ()) -> None:
        self._writer = writer
        self.closed = False
        head = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                ("X-Accel-Buffering", "no"), ("Transfer-Encoding", "chunked"), *headers]
        writer.write(_head(200, head))

    def _chunk(self, data: bytes) -> None:
        if not self.closed:
            self._writer.write(b"%x\r\n%s\r\n" % (len(data), data))

    async def event(self, message: Any, event_id: str | None = None) -> None:
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        prefix = f"id: {event_id}\n" if event_id is not None else ""
        self._chunk(f"{prefix}event: message\ndata: {data}\n\n".encode())
        await self._drain()

    async def data(self, data: str, event: str | None = None) -> None:
        """One event of raw ``data`` (one line), with an ``event:`` name if given."""
        self._chunk((f"event: {event}\n" if event else "").encode() + f"data: {data}\n\n".encode())
        await self._drain()

    async def comment(self, text: str = "") -> None:
        self._chunk(f":{text}\n\n".encode())
        await self._drain()

    async def _drain(self) -> None:
        try:
            await self._writer.drain()
        except (ConnectionError, OSError):
            self.closed = True

    async def end(self) -> None:
        if not self.closed:
            self._writer.write(b"0\r\n\r\n")
            self.closed = True
        await _close(self._writer)
