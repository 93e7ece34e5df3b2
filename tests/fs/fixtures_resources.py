"""Helpers for the resource, subscription and SDK interop tests of mcp-ref-fs.

Independent of the server's code on purpose: ``file_uri`` percent-encodes a path the way RFC 8089
and RFC 3986 say (each byte of the UTF-8 path that is not unreserved or ``/`` becomes ``%XX``), so
a test compares the server's URIs with an encoding it did not write itself.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from tests.wire import ServerProcess, id_key, is_response, modern_request, subscription_of

ACK = "notifications/subscriptions/acknowledged"
UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"
NOTIFY_SECONDS = 3.0  # a change must be announced within this long

ids = itertools.count(1)


def file_uri(path: Path | str) -> str:
    """The ``file://`` URI of an absolute path (RFC 8089), percent-encoded UTF-8."""
    return "file://" + quote(str(path), safe="/")


class Recorder:
    """Stands in for the Server: records what the watcher announces (from its thread)."""

    def __init__(self) -> None:
        self.updated: list[str] = []
        self.lists: list[str] = []

    def notify_resource_updated(self, uri: str) -> None:
        self.updated.append(uri)

    def notify_list_changed(self, kind: str) -> None:
        self.lists.append(kind)


def open_listen(server: ServerProcess, listen_id: Any, wanted: dict[str, Any]) -> dict[str, Any]:
    """Send ``subscriptions/listen``; return its acknowledgement (everything read before it is kept)."""
    server.send(modern_request(listen_id, "subscriptions/listen", {"notifications": wanted}))
    return wait_for(server, lambda m: m.get("method") == ACK and id_key(subscription_of(m)) == id_key(listen_id), 10.0)


def wait_for(server: ServerProcess, predicate: Callable[[dict[str, Any]], bool], timeout: float = NOTIFY_SECONDS) -> dict[str, Any]:
    """The first message (already read and kept, or arriving within ``timeout`` s) ``predicate`` accepts.

    Messages read meanwhile that do not match are kept in ``server.pending`` for later waits.
    """
    for index, message in enumerate(server.pending):
        if predicate(message):
            return server.pending.pop(index)
    messages = server.read_until(predicate, timeout)
    server.pending.extend(messages[:-1])
    return messages[-1]


def updated(uri: str, listen_id: Any = ...) -> Callable[[dict[str, Any]], bool]:
    """Matches ``notifications/resources/updated`` for ``uri`` (on stream ``listen_id`` when given)."""

    def match(message: dict[str, Any]) -> bool:
        if message.get("method") != UPDATED or message["params"].get("uri") != uri:
            return False
        return listen_id is ... or id_key(subscription_of(message)) == id_key(listen_id)

    return match


def list_changed(listen_id: Any = ...) -> Callable[[dict[str, Any]], bool]:
    def match(message: dict[str, Any]) -> bool:
        if message.get("method") != LIST_CHANGED:
            return False
        return listen_id is ... or id_key(subscription_of(message)) == id_key(listen_id)

    return match


def response_to(request_id: Any) -> Callable[[dict[str, Any]], bool]:
    return lambda message: is_response(message, request_id)


def wait_for_stderr(server: ServerProcess, text: str, timeout: float = NOTIFY_SECONDS) -> str:
    """Wait until the server's stderr contains ``text``; return all of stderr."""
    deadline = time.monotonic() + timeout
    while True:
        log = server.stderr_text()
        if text in log:
            return log
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not in the server's stderr within {timeout} s:\n{log[-3000:]}")
        time.sleep(0.02)


def replace_file(path: Path, data: bytes) -> None:
    """Replace ``path`` the way editors do: write a temporary file beside it, then rename it over."""
    temporary = path.with_name(path.name + ".tmp-replace")
    temporary.write_bytes(data)
    os.replace(temporary, path)
