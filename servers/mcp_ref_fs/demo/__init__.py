"""A scripted session with mcp-ref-fs, printed as it goes over the wire (``make demo``).

Run it with ``python -m mcp_ref_fs.demo`` (``--width N`` sets where long lines are cut,
``--keep`` leaves the demo folder in place). It copies the example folder shipped with the
package (``demo_files/``) to a temporary directory, starts ``mcp-ref-fs`` on that copy and plays
the client's part of the protocol: one JSON-RPC message per line on the server's stdin, answers
and notifications as lines on its stdout. Every line is printed as sent or received (``→`` client
to server, ``←`` server to client), cut at ``--width`` characters with "…" and the number of
characters left out, and followed by a one-line explanation.

The session, in order (the steps the demo test checks):

1. ``server/discover``: the versions, capabilities and identity of the server.
2. ``tools/list``: the tools, summarised by name.
3. ``tools/call read_text_file``: a text read.
4. ``resources/read`` of the PNG: a binary resource, as base64.
5. ``subscriptions/listen`` on ``notes.txt``; the demo then changes the file as any other program
   would, and the server sends ``notifications/resources/updated``.
6. ``tools/call delete_file``: an interim ``input_required`` result asking for confirmation, then
   the retry carrying the answer and the sealed ``requestState``.
7. End of input: the server closes the open subscription with its final response and exits 0.
8. A second connection the way today's hosts open one: ``initialize``,
   ``notifications/initialized``, then a call, all in the 2025-11-25 era.

Exit status 0 when every step got the answer it expects, 1 otherwise (with the reason).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import queue
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from importlib import resources
from pathlib import Path
from typing import Any, Callable

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
WAIT_SECONDS = 10.0  # the longest the demo waits for any one message
DEFAULT_WIDTH = 200


class DemoFailed(Exception):
    """The server did not answer as the demo expects; the message says what was wrong."""


def meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``_meta`` every 2026-07-28 request carries: there is no session, so each says it."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }


def shorten(line: str, width: int) -> str:
    """``line`` cut to ``width`` characters with "…" and a note of how much was left out."""
    if len(line) <= width:
        return line
    kept = max(width - 1, 20)
    return f"{line[:kept]}… [+{len(line) - kept} characters]"


class Connection:
    """One server process and the client's end of its stdio, printing every line.

    A thread reads stdout into a queue, so every wait has a deadline; stderr (the server's log)
    goes to a temporary file and is shown only when something goes wrong.
    """

    def __init__(self, command: list[str], out: Callable[[str], None], width: int) -> None:
        self.out, self.width = out, width
        self.stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                        text=True, encoding="utf-8", bufsize=1)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        self.out("→ " + shorten(line, self.width))
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def receive(self, wanted: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        """Print lines as they come until one ``wanted`` accepts; return that message."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise DemoFailed(f"no {what} within {WAIT_SECONDS:g} s{self._log()}") from None
            if line is None:
                raise DemoFailed(f"the server closed stdout before {what}{self._log()}")
            self.out("← " + shorten(line, self.width))
            message = json.loads(line)
            if wanted(message):
                return message

    def response(self, request_id: Any) -> dict[str, Any]:
        return self.receive(lambda message: message.get("id") == request_id and "method" not in message,
                            f"response to request {request_id}")

    def close(self) -> int:
        """End of input: the server answers what is open and exits; its exit status."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise DemoFailed(f"the server did not exit after end of input{self._log()}") from None

    def drain(self) -> None:
        """Print whatever the server still wrote (after ``close``)."""
        self.reader.join(WAIT_SECONDS)
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return
            if line is not None:
                self.out("← " + shorten(line, self.width))

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.stderr.close()

    def _log(self) -> str:
        self.stderr.seek(0)
        log = self.stderr.read().strip()
        return f"; the server's stderr:\n{log}" if log else ""


def result_of(message: dict[str, Any]) -> dict[str, Any]:
    if "result" not in message:
        raise DemoFailed(f"expected a result, got {json.dumps(message)[:300]}")
    return message["result"]


def server_command() -> list[str]:
    """The ``mcp-ref-fs`` script beside this Python (the venv's), else ``python -m mcp_ref_fs``."""
    script = Path(sys.executable).with_name("mcp-ref-fs")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "mcp_ref_fs"]


def copy_demo_files(target: Path) -> None:
    """The example folder shipped in the package (``demo_files/``), copied to ``target``."""
    target.mkdir()
    for item in resources.files("mcp_ref_fs.demo").joinpath("demo_files").iterdir():
        if item.is_file():
            (target / item.name).write_bytes(item.read_bytes())


class Demo:
    def __init__(self, out: Callable[[str], None], width: int) -> None:
        self.out, self.width = out, width
        self.ids = itertools.count(1)
        self.step_number = 0

    def step(self, title: str) -> None:
        self.step_number += 1
        self.out("")
        self.out(f"{self.step_number}. {title}")

    def explain(self, text: str) -> None:
        self.out(f"   {text}")

    def request(self, connection: Connection, method: str, params: dict[str, Any] | None = None,
                capabilities: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        request_id = next(self.ids)
        connection.send({"jsonrpc": "2.0", "id": request_id, "method": method,
                         "params": {**(params or {}), "_meta": meta(capabilities)}})
        return request_id, connection.response(request_id)

    def run(self, root: Path, command: list[str]) -> None:
        out = self.out
        out("mcp-ref-fs demo: a scripted MCP session over stdio, one JSON message per line.")
        out(f"  server:  {shlex.join([*command, str(root)])}")
        out("  → is a line the client writes to the server's stdin, ← one the server writes to its stdout.")
        out(f"  Lines longer than {self.width} characters are cut at \"…\", followed by how many characters were left out.")
        connection = Connection([*command, str(root)], out, self.width)
        try:
            self.modern_session(connection, root)
        finally:
            connection.kill()
        self.legacy_session(command, root)
        out("")
        out("Done: every step got the answer it expects. Try it yourself: see 'Try it from the shell' in README.md.")

    def modern_session(self, connection: Connection, root: Path) -> None:
        notes, picture, scratch = root / "notes.txt", root / "checkers.png", root / "scratch.txt"

        self.step("server/discover: what does this server offer?")
        _, message = self.request(connection, "server/discover")
        result = result_of(message)
        self.explain(f"It speaks {', '.join(result['supportedVersions'])}, and says what it can do ({', '.join(result['capabilities'])}). "
                     "There is no handshake: every request carries its version and the client's capabilities in _meta.")

        self.step("tools/list: the tools a model may call")
        _, message = self.request(connection, "tools/list")
        names = [tool["name"] for tool in result_of(message)["tools"]]
        self.explain(f"{len(names)} tools, each with a JSON Schema for its arguments: {', '.join(names)}.")

        self.step("tools/call read_text_file: read a text file")
        _, message = self.request(connection, "tools/call", {"name": "read_text_file", "arguments": {"path": "notes.txt"}})
        text = result_of(message)["content"][0]["text"]
        self.explain(f"The file's text comes back as a text content block ({len(text.splitlines())} lines); "
                     "a relative path resolves against the first allowed directory.")

        self.step("resources/read: a binary file as a resource")
        _, message = self.request(connection, "resources/read", {"uri": picture.as_uri()})
        content = result_of(message)["contents"][0]
        self.explain(f"Every file is a resource with a file:// URI. This one is {content['mimeType']} "
                     f"({picture.stat().st_size} bytes), so it travels as {len(content['blob'])} base64 characters in 'blob'.")

        self.step("subscriptions/listen: be told when notes.txt changes")
        listen_id = next(self.ids)
        connection.send({"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
                         "params": {"notifications": {"resourceSubscriptions": [notes.as_uri()]}, "_meta": meta()}})
        connection.receive(lambda m: m.get("method") == "notifications/subscriptions/acknowledged", "the acknowledgement")
        self.explain("The listen request stays open; the server first acknowledges what it will send on it.")
        with open(notes, "a", encoding="utf-8") as stream:  # as an editor or any other program would
            stream.write("- milk\n")
        self.out("   (the demo now appends a line to notes.txt itself, outside the protocol)")
        connection.receive(lambda m: m.get("method") == "notifications/resources/updated", "the update notification")
        self.explain("The server's file watch saw the change and sent resources/updated on the open listen "
                     "(its id is in _meta); the client would now read the file again.")

        self.step("tools/call delete_file: ask the user first (a multi round-trip request)")
        elicitation: dict[str, Any] = {"elicitation": {"form": {}}}
        arguments = {"name": "delete_file", "arguments": {"path": "scratch.txt"}}
        _, message = self.request(connection, "tools/call", arguments, elicitation)
        interim = result_of(message)
        if interim.get("resultType") != "input_required":
            raise DemoFailed(f"expected an input_required result, got {json.dumps(interim)[:300]}")
        self.explain("Not deleted yet: an interim result (resultType input_required) holds a form for the user "
                     "and a sealed requestState.")
        self.out("   (the client shows the question; the user ticks \"Delete it\")")
        answer = {"confirm_delete": {"action": "accept", "content": {"confirm": True}}}
        retry = {"name": "delete_file", "inputResponses": answer, "requestState": interim["requestState"],
                 "arguments": arguments["arguments"]}  # (this order shows the new members before the cut)
        _, message = self.request(connection, "tools/call", retry, elicitation)
        final = result_of(message)
        if final.get("isError") or scratch.exists():
            raise DemoFailed(f"scratch.txt was not deleted: {json.dumps(final)[:300]}")
        self.explain("The same call again, now with the answer (inputResponses) and the requestState it got: "
                     "the file is deleted. The server kept no state between the two calls.")

        self.step("end of input: the server closes the listen and exits")
        self.out("   (the demo closes the server's stdin)")
        status = connection.close()
        connection.drain()
        if status != 0:
            raise DemoFailed(f"the server exited with status {status}{connection._log()}")
        self.explain(f"The open subscriptions/listen got its final response, and the server exited with status {status}.")

    def legacy_session(self, command: list[str], root: Path) -> None:
        self.step(f"initialize: a second connection, opened the way today's hosts do ({LEGACY})")
        connection = Connection([*command, str(root)], self.out, self.width)
        try:
            connection.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "mcp-ref-demo", "version": "1"}}})
            result = result_of(connection.response(1))
            self.explain(f"An initialize-era client: the server agrees on {result['protocolVersion']} for this connection.")
            connection.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            self.explain("The client confirms; from now on requests carry no _meta.")
            connection.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "read_text_file", "arguments": {"path": "notes.txt", "tail": 1}}})
            text = result_of(connection.response(2))["content"][0]["text"]
            self.explain(f"The same tool in the older era (the last line is {text.strip()!r}: the change from step 5).")
            status = connection.close()
            connection.drain()
            if status != 0:
                raise DemoFailed(f"the server exited with status {status}{connection._log()}")
        finally:
            connection.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_ref_fs.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--width", type=int, default=DEFAULT_WIDTH, metavar="N",
                        help=f"cut printed lines at N characters (default {DEFAULT_WIDTH}; 0: never)")
    parser.add_argument("--keep", action="store_true", help="leave the demo folder in place and print where it is")
    options = parser.parse_args(argv)
    width = options.width if options.width > 0 else sys.maxsize

    def out(line: str) -> None:
        print(line, file=sys.stdout, flush=True)  # the demo talks to a person, not to an MCP client

    base = Path(tempfile.mkdtemp(prefix="mcp-ref-demo-")).resolve()
    root = base / "demo"
    try:
        copy_demo_files(root)
        Demo(out, width).run(root, server_command())
        return 0
    except DemoFailed as error:
        out(f"\nmcp-ref-fs demo FAILED: {error}")
        return 1
    except BrokenPipeError:  # the reader stopped reading (| head): end quietly, the servers are ended
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail again
        return 1
    finally:
        if options.keep:
            out(f"(the demo folder is {root})")
        else:
            shutil.rmtree(base, ignore_errors=True)

