"""The least a confined ``read_text_file`` needs in Python, written by hand: a bound, for ``fs_breakdown.py``.

    python bench/least_read_server.py ROOT

Issue 21 asks for small pipelined reads at most 1.5x the asyncio floor (``floor_server.py
--asyncio``), which answers with a fixed text and touches no file. This server shows what the
same interpreter needs at the least to answer the same read *for real*, with no library, no
task per request, no schema engine and no limits: everything in one read callback. It is a
measuring stick, not a server to use.

* **Transport**: stdin is read in chunks on the event loop (``add_reader``); every complete line
  of a chunk gets its answer (a request) or none (a notification), and the answers of a chunk
  leave in one write, as ``mcp_ref``'s single writer sends the answers of one loop iteration in
  one ``writev``. The write waits while the client does not read (a real server must not: mcp_ref
  keeps reading control messages then). A line that breaks the code is answered -32603.
* **Protocol**: the JSON-RPC envelope (``jsonrpc``, an id of a string or an integer) and the
  2026-07-28 one (the protocol version and client capabilities in ``_meta``) are checked;
  ``tools/call`` of ``read_text_file`` with a string ``path`` and no other argument is answered;
  anything else gets a JSON-RPC error.
* **Confinement**: a path with a NUL or that is not Unicode is refused; the rest is normalized as
  text (as mcp-ref-fs does: ``a/../b`` never opens ``a``) and must lie under ROOT, as given or as
  its real path; each directory on the way is opened beneath the one before with ``O_NOFOLLOW``,
  so a link the walk meets is refused (mcp-ref-fs follows links that stay inside the root, which
  only costs more); the final name is ``lstat``-ed, must be a regular file, is opened with
  ``O_NOFOLLOW | O_NONBLOCK`` (swapped for a FIFO meanwhile, it cannot hang the server) and checked
  to be the file that was ``lstat``-ed.
* **Content**, as mcp-ref-fs decides it: a NUL byte, more than 10 % control characters (but tab,
  newline, carriage return, form feed, backspace and escape) or bytes that are not UTF-8 make a
  tool error; a leading UTF-8 byte order mark is dropped. A file over ``MAX_FILE_BYTES`` is
  refused: what mcp-ref-fs does there (an answer budget, a cue to read on) is work this bound
  leaves out, with windows (``head``, ``tail``, ``offset``) and following links.

For a text file that fits one answer whole (the benchmark's 1 KiB file), the answer is byte for
byte mcp-ref-fs's: text block, result type, the server's ``_meta`` with mcp-ref-fs's name, version
and title; so the two encode the same JSON (``tests/fs/test_bench_least_read_server.py``). Its
refusals are worded its own way. POSIX only (``dir_fd``).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import posixpath
import select
import stat
import sys
from typing import Any

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "servers"))  # a checkout
from mcp_ref_fs import __version__  # noqa: E402  (the package's version string only: its __init__ imports nothing)

VERSION = "2026-07-28"
SERVER_INFO = {"name": "mcp-ref-fs", "version": __version__, "title": "mcp-ref filesystem server"}
MAX_FILE_BYTES = 8192  # whole files up to this size; well inside any host's answer
BOM = b"\xef\xbb\xbf"
# C0 controls and DEL but tab, newline, carriage return, form feed, backspace and escape.
CONTROL_BYTES = bytes(c for c in [*range(0x20), 0x7F] if c not in b"\t\n\r\f\b\x1b")
ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
DIR_FLAGS = ROOT_FLAGS | os.O_NOFOLLOW
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class Refused(Exception):
    """A read this server does not do: answered as a tool error with this text."""


class Root:
    """The one allowed directory, held open."""

    def __init__(self, path: str) -> None:
        given = posixpath.normpath(os.path.abspath(path))
        self.path = os.path.realpath(path)
        self.spellings = {given, self.path}  # an absolute path may name the root either way
        self.fd = os.open(self.path, ROOT_FLAGS)

    def components(self, path: str) -> list[str]:
        """The names below the root that ``path`` (absolute, or relative to the root) spells."""
        if "\0" in path:
            raise Refused("the path holds a NUL character")
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise Refused("the path is not Unicode") from None
        normal = posixpath.normpath(path if path.startswith("/") else self.path + "/" + path)
        if normal.startswith("//"):  # (normpath keeps a leading "//": POSIX leaves its meaning open)
            normal = "/" + normal.lstrip("/")
        for base in self.spellings:
            if normal == base:
                raise Refused(f"{path} is the allowed directory itself, not a file")
            prefix = base.rstrip("/") + "/"
            if normal.startswith(prefix):
                return normal[len(prefix):].split("/")
        raise Refused(f"Access denied - path outside allowed directories: {path}")

    def read_text(self, path: str) -> str:
        names = self.components(path)
        # A new descriptor of the root (not the root's own: the caller closes what it gets), then
        # each directory beneath the one before, never following a link.
        parent = os.open(".", ROOT_FLAGS, dir_fd=self.fd)
        name = names[0]
        try:
            for name in names[:-1]:
                below = os.open(name, DIR_FLAGS, dir_fd=parent)
                os.close(parent)
                parent = below
            name = names[-1]
            info = os.lstat(name, dir_fd=parent)
            if not stat.S_ISREG(info.st_mode):
                raise Refused(f"{path} is not a regular file")
            fd = os.open(name, FILE_FLAGS, dir_fd=parent)
        except OSError as error:
            # O_NOFOLLOW refuses a link with ELOOP, or ENOTDIR where a directory was asked for.
            if error.errno in (errno.ELOOP, errno.ENOTDIR) and is_link(name, parent):
                raise Refused(f"{path}: {name} is a link (links are not followed here)") from None
            raise Refused(f"{path}: {error.strerror}") from None
        finally:
            os.close(parent)
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                raise Refused(f"{path} changed while it was being opened")
            os.set_blocking(fd, True)
            data = os.pread(fd, MAX_FILE_BYTES + 1, 0)
        finally:
            os.close(fd)
        if len(data) > MAX_FILE_BYTES:
            raise Refused(f"{path} has more than {MAX_FILE_BYTES} bytes, more than this bound reads")
        return text_of(path, data)


def is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def text_of(path: str, data: bytes) -> str:
    """The file's text, or ``Refused``: binary (a NUL, too many controls) or not UTF-8."""
    body = data.removeprefix(BOM)
    if b"\0" in body:
        raise Refused(f"{path} is a binary file")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{path} is not UTF-8 text") from None
    if len(body) - len(body.translate(None, CONTROL_BYTES)) > len(text) * 0.10:
        raise Refused(f"{path} is a binary file")
    return text


def error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def answer(root: Root, line: bytes) -> dict[str, Any] | None:
    """The response to one line (None: a notification, which gets none)."""
    try:
        request = json.loads(line)
    except (ValueError, RecursionError):
        return error(None, -32700, "Parse error")
    if type(request) is not dict or request.get("jsonrpc") != "2.0" or type(request.get("method")) is not str:
        return error(None, -32600, "Invalid Request")
    if "id" not in request:
        return None
    request_id = request["id"]
    if type(request_id) not in (str, int):
        return error(None, -32600, "Invalid Request: the id must be a string or an integer")
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


def answer_line(root: Root, line: bytes) -> bytes:
    """The answer line to one line (empty: none), -32603 when answering it failed."""
    try:
        response = answer(root, line)
        return b"" if response is None else (ENCODER.encode(response) + "\n").encode()
    except Exception:
        return b'{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}\n'


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data``, waiting while the pipe is full (stdout may be non-blocking: one
    socket or terminal for stdin and stdout shares the flag set on stdin)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            select.select([], [fd], [])


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
        write_all(stdout, b"".join(answer_line(root, line) for line in lines if line.strip()))

    loop.add_reader(stdin, on_readable)
    await ended


def main() -> None:
    asyncio.run(serve(Root(sys.argv[1])))


if __name__ == "__main__":
    main()
