"""The least a confined ``read_text_file`` needs in Python, written by hand: a bound, for ``fs_breakdown.py``.

    python bench/least_read_server.py ROOT

Issue 21 asks for small pipelined reads at most 1.5x the asyncio floor (``floor_server.py
--asyncio``), which answers with a fixed text and touches no file. This server shows what the
same interpreter needs at the least to answer the same read *for real*, with no library, no
task per request, no schema engine and no limits: everything in one read callback.

* **Transport**: stdin is read in chunks on the event loop (``add_reader``); every complete line
  of a chunk is answered, and the answers of a chunk leave in one write, as ``mcp_ref``'s single
  writer sends the answers of one loop iteration in one ``writev``. The write blocks while the
  client does not read (a real server must not: mcp_ref keeps reading control messages then).
* **Protocol**: the 2026-07-28 envelope is checked (``jsonrpc``, an id, the protocol version and
  client capabilities in ``_meta``); ``tools/call`` of ``read_text_file`` with a string ``path``
  and no other argument is answered; anything else gets a JSON-RPC error.
* **Confinement**: the path is normalized and must lie under ROOT; each directory on the way is
  opened beneath the one before with ``O_NOFOLLOW`` (a link anywhere is refused: following links
  inside the root, as mcp-ref-fs does, only costs more); the final name is ``lstat``-ed, must be a
  regular file, is opened with ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO cannot hang it) and checked to be
  the file that was ``lstat``-ed.
* **Content**: at most 1 MiB is read; a NUL byte or bytes that are not UTF-8 make a tool error.

The answer to a read is byte for byte mcp-ref-fs's (text block, result type, the server's
``_meta``, with mcp-ref-fs's name, version and title), so the two encode the same JSON. Linux and
macOS only (``dir_fd``).
"""

from __future__ import annotations

import asyncio
import json
import os
import posixpath
import stat
import sys
from typing import Any

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "servers"))  # a checkout
from mcp_ref_fs import __version__  # noqa: E402  (the package's version string only: its __init__ imports nothing)

VERSION = "2026-07-28"
SERVER_INFO = {"name": "mcp-ref-fs", "version": __version__, "title": "mcp-ref filesystem server"}
MAX_READ = 1 << 20
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class Refused(Exception):
    """A read this server does not do: answered as a tool error with this text."""


class Root:
    """The one allowed directory, held open."""

    def __init__(self, path: str) -> None:
        self.path = os.path.realpath(path)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def components(self, path: str) -> list[str]:
        """The names below the root that ``path`` (absolute, or relative to the root) spells."""
        normal = posixpath.normpath(path if path.startswith("/") else self.path + "/" + path)
        if not normal.startswith(self.path + "/"):
            raise Refused(f"Access denied - path outside allowed directories: {path}")
        return normal[len(self.path) + 1:].split("/")

    def read_text(self, path: str) -> str:
        names = self.components(path)
        # A new descriptor of the root (not the root's own: the caller closes what it gets), then
        # each directory beneath the one before, never following a link.
        parent = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=self.fd)
        try:
            for name in names[:-1]:
                below = os.open(name, DIR_FLAGS, dir_fd=parent)
                os.close(parent)
                parent = below
            info = os.lstat(names[-1], dir_fd=parent)
            if not stat.S_ISREG(info.st_mode):
                raise Refused(f"{path} is not a regular file")
            fd = os.open(names[-1], FILE_FLAGS, dir_fd=parent)
        except OSError as error:
            raise Refused(f"{path}: {error.strerror}") from None
        finally:
            os.close(parent)
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                raise Refused(f"{path} changed while it was being opened")
            os.set_blocking(fd, True)
            data = os.pread(fd, min(opened.st_size, MAX_READ), 0)  # (a buffer of MAX_READ would cost an mmap)
        finally:
            os.close(fd)
        if b"\0" in data:
            raise Refused(f"{path} is a binary file")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"{path} is not UTF-8 text") from None


def error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def answer(root: Root, line: bytes) -> dict[str, Any]:
    """The response to one request line."""
    try:
        request = json.loads(line)
    except ValueError:
        return error(None, -32700, "Parse error")
    if type(request) is not dict or request.get("jsonrpc") != "2.0" or type(request.get("method")) is not str:
        return error(None, -32600, "Invalid Request")
    request_id = request.get("id")
    params = request.get("params")
    meta = params.get("_meta") if type(params) is dict else None
    if (type(meta) is not dict or meta.get("io.modelcontextprotocol/protocolVersion") != VERSION
            or type(meta.get("io.modelcontextprotocol/clientCapabilities")) is not dict):
        return error(request_id, -32602, "Invalid params: the 2026-07-28 _meta envelope is required")
    if request["method"] != "tools/call" or params.get("name") != "read_text_file":
        return error(request_id, -32601, "Method not found")
    arguments = params.get("arguments")
    if type(arguments) is not dict or type(arguments.get("path")) is not str or len(arguments) != 1:
        return error(request_id, -32602, "Invalid params: arguments must be {\"path\": string}")
    try:
        content = {"type": "text", "text": root.read_text(arguments["path"])}
        result = {"content": [content], "resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}
    except Refused as refusal:
        result = {"content": [{"type": "text", "text": str(refusal)}], "isError": True, "resultType": "complete"}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


async def serve(root: Root) -> None:
    loop = asyncio.get_running_loop()
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    os.set_blocking(stdin, False)
    ended = loop.create_future()
    pending = bytearray()

    def on_readable() -> None:
        try:
            chunk = os.read(stdin, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            loop.remove_reader(stdin)
            ended.set_result(None)
            return
        pending.extend(chunk)
        cut = pending.rfind(b"\n") + 1
        if not cut:
            return
        lines = bytes(pending[:cut]).split(b"\n")[:-1]
        del pending[:cut]
        out = b"".join((ENCODER.encode(answer(root, line)) + "\n").encode() for line in lines if line.strip())
        while out:
            out = out[os.write(stdout, out):]

    loop.add_reader(stdin, on_readable)
    await ended


def main() -> None:
    asyncio.run(serve(Root(sys.argv[1])))


if __name__ == "__main__":
    main()
