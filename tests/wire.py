"""A subprocess harness for wire tests: run a real server, talk to it line by line.

Typical use::

    from tests.wire import ServerProcess, modern_request

    with ServerProcess() as server:                      # python -m tests.servers.basic_server
        server.send(modern_request(1, "server/discover"))
        reply = server.response(1)                         # validated against the 2026-07-28 schema
        server.close_stdin()
        server.assert_exit(0)

For one request and its answer, ``request(server, method, params)`` and ``call(server, tool,
arguments)`` (its result) pick a fresh id; ``Spawner`` starts servers for a test and closes them.

Design
------
* The server runs with ``cwd`` = the repository root and the test's environment plus
  ``PYTHONUNBUFFERED=1`` and any ``env`` overrides (``None`` as a value removes a variable).
* stdout is read in the test's own thread with ``select`` + ``os.read`` into a buffer, so nothing
  reads it unless the test asks (a test can play a slow reader), and every wait has a deadline.
* stderr goes to a temporary file, so a chatty server can never block on a full stderr pipe;
  ``stderr_text()`` reads what it wrote so far.
* Writing never blocks forever either: stdin is non-blocking, and while the pipe is full the
  harness drains stdout into its buffer (a server that answers as it reads cannot deadlock us).
* Every line the server writes is checked: one strict-UTF-8 JSON object, no ``\\r``, no request
  (servers send none on stdio), never more responses for an id than requests sent with it, and,
  unless ``schema=None``, valid against the official schema: 2026-07-28 (``"modern"``),
  2025-11-25 (``"legacy"``), or per request by whether it carried modern ``_meta`` (``"auto"``).
  The result definition is chosen from the method of the request the response answers.
* ``kill()`` (also on leaving the ``with`` block) ends the process and closes every pipe.

All timeouts are generous (CI machines are slow); a wait that expires raises ``WireTimeout`` with
what was received so far and the server's stderr, which is what one needs to debug a failure.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Mapping

from tests.schema_check import check_legacy, check_modern

REPO_ROOT = Path(__file__).resolve().parents[1]
BASIC_SERVER = "tests.servers.basic_server"
MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
DEFAULT_TIMEOUT = 10.0
TOOL_TIMEOUT = 30.0  # a tool call may walk a big tree on a slow machine
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"

OMIT: Any = object()
"""Pass as a ``modern_meta`` override to leave that key out."""

_META_KEYS = {
    "protocol_version": PROTOCOL_VERSION_KEY,
    "capabilities": CLIENT_CAPABILITIES_KEY,
    "client_info": CLIENT_INFO_KEY,
    "log_level": LOG_LEVEL_KEY,
    "progress_token": "progressToken",
}


class WireTimeout(AssertionError):
    """A bounded wait expired."""


class WireViolation(AssertionError):
    """The server wrote something that is not a valid message for the client."""


# --- building messages ------------------------------------------------------------------------


def modern_meta(**overrides: Any) -> dict[str, Any]:
    """The ``_meta`` every 2026-07-28 request carries (protocol version, no client capabilities),
    with overrides: ``protocol_version``, ``capabilities``, ``client_info``, ``log_level`` and
    ``progress_token`` by name (the last three are absent unless given), any other keyword as a raw
    ``_meta`` key. A value is taken as it is (``None`` is null); ``OMIT`` leaves its key out."""
    meta: dict[str, Any] = {PROTOCOL_VERSION_KEY: MODERN_VERSION, CLIENT_CAPABILITIES_KEY: {}}
    for name, value in overrides.items():
        key = _META_KEYS.get(name, name)
        if value is OMIT:
            meta.pop(key, None)
        else:
            meta[key] = value
    return meta


def modern_request(
    request_id: Any,
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    progress_token: Any = None,
    capabilities: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A 2026-07-28 request: ``params`` plus the required ``_meta`` (and a progress token if given)."""
    extra = {} if progress_token is None else {"progress_token": progress_token}
    body = dict(params or {})
    body["_meta"] = {**modern_meta(capabilities=dict(capabilities or {}), **extra), **body.get("_meta", {})}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}


def tool_call(request_id: Any, name: str, arguments: Mapping[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """A 2026-07-28 ``tools/call`` request (``options`` as for ``modern_request``)."""
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = dict(arguments)
    return modern_request(request_id, "tools/call", params, **options)


def long_call(request_id: Any, token: Any = None) -> dict[str, Any]:
    """A ``slow`` call of the test servers (tests/servers) that would take 100 s: it ends only by
    cancellation or shutdown (with progress notifications under ``token``, when given)."""
    return tool_call(request_id, "slow", {"steps": 2000, "interval": 0.05}, progress_token=token)


def notification(method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC notification from the client."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def cancel(request_id: Any, reason: str | None = None) -> dict[str, Any]:
    """``notifications/cancelled`` for ``request_id``."""
    params: dict[str, Any] = {"requestId": request_id}
    if reason is not None:
        params["reason"] = reason
    return notification("notifications/cancelled", params)


def request_line(request_id: Any, method: str, **params: Any) -> str:
    """A 2026-07-28 request as one line of text (``json.dumps``' spacing), for a server's stdin
    (``subprocess.run(..., input=...)``)."""
    return json.dumps(modern_request(request_id, method, params)) + "\n"


def encode_line(message: Mapping[str, Any]) -> bytes:
    """One message as one compact UTF-8 line, the way a well-behaved client writes it."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


def decode_line(line: bytes) -> dict[str, Any]:
    """Parse one line the server wrote, insisting on what the stdio transport requires of it."""
    if b"\r" in line:
        raise WireViolation(f"server line contains a carriage return: {line[:200]!r}")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireViolation(f"server line is not valid UTF-8 ({exc}): {line[:200]!r}") from None
    try:
        message = json.loads(text, parse_constant=reject_constant)
    except ValueError as exc:
        raise WireViolation(f"server line is not JSON ({exc}): {line[:200]!r}") from None
    if not isinstance(message, dict):
        raise WireViolation(f"server line is not a JSON object: {line[:200]!r}")
    if message.get("jsonrpc") != "2.0":
        raise WireViolation(f'server message lacks "jsonrpc": "2.0": {line[:200]!r}')
    return message


def reject_constant(name: str) -> Any:
    """``json.loads``' ``parse_constant``: NaN and Infinity are not JSON."""
    raise ValueError(f"{name} is not JSON")


def id_key(request_id: Any) -> tuple[str, Any]:
    """A dict key for a request id that keeps 1 and "1" apart."""
    return (type(request_id).__name__, request_id)


def result_of(response: Mapping[str, Any]) -> dict[str, Any]:
    """The ``result`` of a response; fails the test, showing the response, if it is an error."""
    assert "result" in response, f"expected a result, got {response}"
    return response["result"]


def error_of(response: Mapping[str, Any]) -> dict[str, Any]:
    """The ``error`` of a response; fails the test, showing the response, if it is a result."""
    assert "error" in response, f"expected an error, got {response}"
    return response["error"]


def result_text(response: Mapping[str, Any]) -> str:
    """The text of a response's first content block; fails the test, showing the response, on an error."""
    assert "result" in response, response
    return response["result"]["content"][0]["text"]


def is_progress(token: Any) -> Callable[[Mapping[str, Any]], bool]:
    """A ``read_until`` predicate: a progress notification for ``token``."""
    return lambda m: m.get("method") == "notifications/progress" and m["params"]["progressToken"] == token


def subscription_of(message: Mapping[str, Any]) -> Any:
    """The subscription id a server message carries (a notification in its params, a listen's final
    result in its result), ``...`` when it carries none."""
    body = message.get("params") if "method" in message else message.get("result")
    return ((body or {}).get("_meta") or {}).get(SUBSCRIPTION_ID_KEY, ...)


def is_response(message: Mapping[str, Any], request_id: Any = ...) -> bool:
    """Is ``message`` a response (to ``request_id``, when given)?"""
    if "method" in message or not ("result" in message or "error" in message):
        return False
    if request_id is ...:
        return True
    return "id" in message and id_key(message["id"]) == id_key(request_id)


# --- the process --------------------------------------------------------------------------------


class ServerProcess:
    """One server subprocess and the client end of its stdio."""

    def __init__(
        self,
        command: Iterable[str] | None = None,
        *,
        module: str = BASIC_SERVER,
        env: Mapping[str, str | None] | None = None,
        schema: str | None = "modern",
        stdin: int | IO[Any] | None = subprocess.PIPE,
        stdout: int | IO[Any] | None = subprocess.PIPE,
        cwd: Path | str = REPO_ROOT,
        start: bool = True,
        user: tuple[int, int] | None = None,
        capabilities: Mapping[str, Any] | None = None,
    ) -> None:
        """``command`` defaults to ``[sys.executable, "-m", module]``. ``stdin``/``stdout`` may be
        open files (then the harness cannot send or read on that side). ``user``: ``(uid, gid)``
        to run the server as, without supplementary groups (the harness must be root).
        ``capabilities``: the client capabilities ``request`` and ``call`` (below) declare when
        not told otherwise, as a client declares the same ones on every request."""
        if schema not in ("modern", "legacy", "auto", None):
            raise ValueError('schema must be "modern", "legacy", "auto" or None')
        self.command = list(command) if command is not None else [sys.executable, "-m", module]
        self.schema = schema
        self.capabilities = capabilities
        # Only initialize-era sessions may see server-to-client requests (elicitation, sampling,
        # roots); a test opts in. The 2026-07-28 era must never see one.
        self.allow_server_requests = False
        self.cwd = Path(cwd)
        self.env = dict(os.environ)
        self.env["PYTHONUNBUFFERED"] = "1"
        for name, value in (env or {}).items():
            if value is None:
                self.env.pop(name, None)
            else:
                self.env[name] = value
        self._stdin_spec = stdin
        self._stdout_spec = stdout
        self._user = user
        self.proc: subprocess.Popen[bytes] | None = None
        self._stderr_file = tempfile.TemporaryFile()
        self._buffer = bytearray()
        self._stdout_eof = False
        self.sent: dict[tuple[str, Any], list[str]] = {}  # id -> methods of the requests sent with it
        self._era: dict[tuple[str, Any], str] = {}
        self._answers: dict[tuple[str, Any], int] = {}
        # A slow reader: read at most ``read_chunk_bytes`` per read and pause ``read_delay`` s after each.
        self.read_chunk_bytes = 1 << 20
        self.read_delay = 0.0
        self.received: list[dict[str, Any]] = []  # every message read, in order
        self.pending: list[dict[str, Any]] = []  # messages read but not yet returned by response()
        if start:
            self.start()

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> ServerProcess:
        if self.proc is not None:
            raise RuntimeError("already started")
        as_user: dict[str, Any] = {}
        if self._user is not None:
            as_user = {"user": self._user[0], "group": self._user[1], "extra_groups": []}
        self.proc = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stdin=self._stdin_spec,
            stdout=self._stdout_spec,
            stderr=self._stderr_file,
            **as_user,
        )
        if self.proc.stdin is not None:
            os.set_blocking(self.proc.stdin.fileno(), False)
        return self

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self, timeout: float = 3.0) -> None:
        """End the process as a client would: close stdin and give it ``timeout`` seconds to exit
        (which also lets coverage data be written), then ``kill()`` whatever is left."""
        if self.proc is not None and self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            deadline = time.monotonic() + timeout
            stdout = self.proc.stdout
            while self.proc.poll() is None and time.monotonic() < deadline:
                # Drain stdout (unread) so a server with queued output is not stuck on a full pipe.
                if stdout is not None and select.select([stdout], [], [], 0.05)[0] and not os.read(stdout.fileno(), 65536):
                    break  # stdout closed: the process is on its way out
            try:
                self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        assert self.proc is not None
        return self.proc.poll()

    def kill(self) -> None:
        """End the process if it still runs (SIGKILL) and release every pipe and file."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=DEFAULT_TIMEOUT)
            except subprocess.TimeoutExpired:  # pragma: no cover - the kernel did not reap it
                pass
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self._stderr_file.close()

    def signal(self, signum: int = signal.SIGTERM) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def close_stdin(self) -> None:
        """Send EOF (the client's graceful shutdown signal)."""
        assert self.proc is not None and self.proc.stdin is not None, "stdin is not a pipe"
        if not self.proc.stdin.closed:
            self.proc.stdin.close()

    def wait(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait for the process to exit, draining stdout meanwhile (a full pipe must not block it)."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                return code
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WireTimeout(f"server still running after {timeout:.1f} s\n{self._diagnostics()}")
            if self._stdout_readable() and not self._stdout_eof:
                self._fill(min(remaining, 0.05))
            else:
                time.sleep(min(remaining, 0.01))

    def assert_exit(self, expected: int = 0, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait for exit and check the status."""
        code = self.wait(timeout)
        assert code == expected, f"exit status {code}, expected {expected}\n{self._diagnostics()}"

    def shutdown(self, timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
        """Close stdin, read everything the server still writes, check it exits 0; return those messages."""
        self.close_stdin()
        messages = self.read_until_eof(timeout)
        self.assert_exit(0, timeout)
        return messages

    def stderr_text(self) -> str:
        """Everything the server wrote to stderr so far."""
        self._stderr_file.flush()
        self._stderr_file.seek(0)
        return self._stderr_file.read().decode("utf-8", errors="replace")

    # --- sending --------------------------------------------------------------------------------

    def send(self, message: Mapping[str, Any]) -> None:
        """Send one message as a compact line; remember the method of a request for validation."""
        self.note_sent(message)
        self.send_raw(encode_line(message))

    def send_many(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """Send several messages in one write."""
        lines = []
        for message in messages:
            self.note_sent(message)
            lines.append(encode_line(message))
        self.send_raw(b"".join(lines))

    def note_sent(self, message: Mapping[str, Any]) -> None:
        """Record a request sent by other means (raw bytes, a file) so its answer can be checked."""
        if isinstance(message, Mapping) and "method" in message and "id" in message:
            key = id_key(message["id"])
            self.sent.setdefault(key, []).append(message["method"])
            params = message.get("params")
            modern = isinstance(params, Mapping) and isinstance(params.get("_meta"), Mapping) and (
                PROTOCOL_VERSION_KEY in params["_meta"] or CLIENT_CAPABILITIES_KEY in params["_meta"]
            )
            self._era[key] = "modern" if modern else "legacy"

    def send_raw(self, data: bytes, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Write bytes to stdin; while the pipe is full, keep reading stdout so nobody deadlocks."""
        assert self.proc is not None and self.proc.stdin is not None, "stdin is not a pipe"
        fd = self.proc.stdin.fileno()
        view = memoryview(data)
        deadline = time.monotonic() + timeout
        while view:
            try:
                written = os.write(fd, view)
                view = view[written:]
                continue
            except BlockingIOError:
                pass
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WireTimeout(f"stdin still full after {timeout:.1f} s\n{self._diagnostics()}")
            readers = [self._stdout_fd()] if self._stdout_readable() and not self._stdout_eof else []
            ready_r, _, _ = select.select(readers, [fd], [], min(remaining, 0.5))
            if ready_r:
                self._fill(0)

    # --- reading --------------------------------------------------------------------------------

    def read_line(self, timeout: float = DEFAULT_TIMEOUT) -> bytes | None:
        """The next raw line from stdout (without its newline), or None at EOF."""
        deadline = time.monotonic() + timeout
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                return line
            if self._stdout_eof:
                if self._buffer:
                    raise WireViolation(f"stdout ended inside a line: {bytes(self._buffer[:200])!r}")
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WireTimeout(f"no complete line within {timeout:.1f} s\n{self._diagnostics()}")
            self._fill(remaining)

    def read_message(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The next message from stdout, checked (see module docstring). EOF is an error here."""
        line = self.read_line(timeout)
        if line is None:
            raise WireViolation(f"stdout closed while a message was expected\n{self._diagnostics()}")
        return self._accept(line)

    def read_line_and_message(self, timeout: float = DEFAULT_TIMEOUT) -> tuple[bytes, dict[str, Any]]:
        """The next line exactly as written, and the message it carries (checked like ``read_message``)."""
        line = self.read_line(timeout)
        if line is None:
            raise WireViolation(f"stdout closed while a message was expected\n{self._diagnostics()}")
        return line, self._accept(line)

    def read_until(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = DEFAULT_TIMEOUT
    ) -> list[dict[str, Any]]:
        """Messages up to and including the first one ``predicate`` accepts."""
        deadline = time.monotonic() + timeout
        collected = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WireTimeout(f"condition not met within {timeout:.1f} s; got {collected!r}\n{self._diagnostics()}")
            message = self.read_message(remaining)
            collected.append(message)
            if predicate(message):
                return collected

    def read_until_eof(self, timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
        """Every message until the server closes stdout."""
        deadline = time.monotonic() + timeout
        collected = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WireTimeout(f"stdout still open after {timeout:.1f} s; got {collected!r}\n{self._diagnostics()}")
            line = self.read_line(remaining)
            if line is None:
                return collected
            collected.append(self._accept(line))

    def response(self, request_id: Any, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The response to ``request_id``. Other messages read meanwhile are kept in ``pending``."""
        for index, message in enumerate(self.pending):
            if is_response(message, request_id):
                return self.pending.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WireTimeout(f"no response to id {request_id!r} within {timeout:.1f} s\n{self._diagnostics()}")
            message = self.read_message(remaining)
            if is_response(message, request_id):
                return message
            self.pending.append(message)

    def request(self, message: Mapping[str, Any], timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """Send a request and return its response."""
        self.send(message)
        return self.response(message["id"], timeout)

    def expect_silence(self, seconds: float) -> None:
        """Assert that no complete line arrives for ``seconds`` (use sparingly: it always waits)."""
        deadline = time.monotonic() + seconds
        while b"\n" not in self._buffer and not self._stdout_eof:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._fill(remaining)
        if b"\n" in self._buffer:
            raise WireViolation(f"unexpected output: {bytes(self._buffer[:500])!r}")

    # --- waiting on the server's state, from outside --------------------------------------------------

    def wait_for_stderr(self, text: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Until ``text`` is on the server's stderr (a log line saying it reached some point)."""
        deadline = time.monotonic() + timeout
        while text not in self.stderr_text():
            if time.monotonic() > deadline:
                raise WireTimeout(f"{text!r} not on stderr after {timeout} s\n{self._diagnostics()}")
            time.sleep(0.01)  # the poll interval: the condition is the text

    def wait_for_full_stdout(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Until the server's stdout pipe is full and unread (Linux: ``F_GETPIPE_SZ``, ``FIONREAD``):
        what else the server has written waits in its own queue, behind a client that does not read."""
        import fcntl
        import struct
        import termios

        fd = self._stdout_fd()
        deadline = time.monotonic() + timeout
        # The capacity is asked each time: the server widens its stdout pipe when it starts
        # (mcp_ref.layers.pipesize), maybe after this wait began.
        while struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0] < fcntl.fcntl(fd, getattr(fcntl, "F_GETPIPE_SZ", 1032)):
            if time.monotonic() > deadline:
                raise WireTimeout(f"stdout pipe still not full after {timeout} s\n{self._diagnostics()}")
            time.sleep(0.01)  # the poll interval: the condition is the pipe

    # --- internals --------------------------------------------------------------------------------

    def _stdout_readable(self) -> bool:
        return self.proc is not None and self.proc.stdout is not None

    def _stdout_fd(self) -> int:
        assert self.proc is not None and self.proc.stdout is not None, "stdout is not a pipe"
        return self.proc.stdout.fileno()

    def _fill(self, timeout: float) -> None:
        """Read whatever stdout has (waiting at most ``timeout``) into the buffer."""
        fd = self._stdout_fd()
        ready, _, _ = select.select([fd], [], [], max(timeout, 0))
        if not ready:
            return
        chunk = os.read(fd, self.read_chunk_bytes)
        if chunk:
            self._buffer += chunk
            if self.read_delay:
                time.sleep(self.read_delay)
        else:
            self._stdout_eof = True

    def _accept(self, line: bytes) -> dict[str, Any]:
        message = decode_line(line)
        self.received.append(message)
        if "method" in message and "id" in message:
            if not self.allow_server_requests:
                raise WireViolation(f"the server sent a request on stdio: {message!r}")
            return message  # an initialize-era server-to-client request (tests opt in)
        if is_response(message):
            if "id" in message and message["id"] is not None:
                key = id_key(message["id"])
                sent = len(self.sent.get(key, ()))
                self._answers[key] = self._answers.get(key, 0) + 1
                if sent and self._answers[key] > sent:
                    raise WireViolation(f"id {message['id']!r} answered {self._answers[key]} times, sent {sent} times")
        self._validate(message)
        return message

    def _validate(self, message: dict[str, Any]) -> None:
        if self.schema is None:
            return
        method = None
        era = "legacy" if self.schema == "legacy" else "modern"
        if is_response(message) and message.get("id") is not None:
            key = id_key(message["id"])
            methods = self.sent.get(key)
            if methods:
                # With an id reused, answers come in no particular order: the first method is a guess,
                # so only an unambiguous id gets its result definition checked.
                method = methods[0] if len(set(methods)) == 1 else None
            if self.schema == "auto":
                era = self._era.get(key, "modern")
        if "error" in message:
            method = None
        (check_modern if era == "modern" else check_legacy)(message, method)

    def _diagnostics(self) -> str:
        tail = bytes(self._buffer[-2000:])
        return f"--- unread stdout ({len(self._buffer)} bytes) ---\n{tail!r}\n--- stderr ---\n{self.stderr_text()[-4000:]}"


# --- conveniences: one request, one server -----------------------------------------------------

_fresh_ids = itertools.count(1_000_000)  # far from the small ids tests write by hand


def request(server: ServerProcess, method: str, params: Mapping[str, Any] | None = None, *,
            capabilities: Mapping[str, Any] | None = None, timeout: float = DEFAULT_TIMEOUT, **options: Any) -> dict[str, Any]:
    """A 2026-07-28 request under a fresh id, sent to ``server``; its whole response.
    ``capabilities`` default to the server's (``ServerProcess(capabilities=...)``); ``options`` as
    for ``modern_request`` (``progress_token``)."""
    declared = server.capabilities if capabilities is None else capabilities
    return server.request(modern_request(next(_fresh_ids), method, params, capabilities=declared, **options), timeout=timeout)


def call(server: ServerProcess, name: str, arguments: Mapping[str, Any] | None = None, *,
         capabilities: Mapping[str, Any] | None = None, timeout: float = TOOL_TIMEOUT, **params: Any) -> dict[str, Any]:
    """One ``tools/call`` through ``request``; its result (an error response fails the test).
    ``params`` go beside name and arguments (``inputResponses``, ``requestState``, ``task``,
    ``_meta`` keys to add)."""
    body: dict[str, Any] = {"name": name, **params}
    if arguments is not None:
        body["arguments"] = dict(arguments)
    return result_of(request(server, "tools/call", body, capabilities=capabilities, timeout=timeout))


class Spawner:
    """Starts servers of one module for a test, each with ``BASIC_SERVER_<NAME>`` variables from
    keywords (``max_line_bytes="100"``), and closes every one it started at the end (``with``).

    A test module binds its server and environment in a fixture::

        @pytest.fixture
        def spawn() -> Iterator[Spawner]:
            with Spawner(MODULE) as start:
                yield start
    """

    def __init__(self, module: str = BASIC_SERVER, env: Mapping[str, str | None] | None = None) -> None:
        self.module = module
        self.env = dict(env or {})
        self.started: list[ServerProcess] = []

    def __call__(self, command: Iterable[str] | None = None, extra_env: Mapping[str, str | None] | None = None,
                 process: type[ServerProcess] | None = None, **options: str) -> ServerProcess:
        """A started server: ``command`` (default: the module), ``extra_env`` added as it is,
        ``process`` the harness class (default ``ServerProcess``)."""
        env = {**self.env, **{f"BASIC_SERVER_{name.upper()}": value for name, value in options.items()}, **(extra_env or {})}
        server = (process or ServerProcess)(command, module=self.module, env=env)
        self.started.append(server)
        return server

    def __enter__(self) -> Spawner:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for server in self.started:
            server.close(timeout=1.0)


def run_with_files(
    requests: bytes,
    *,
    module: str = BASIC_SERVER,
    env: Mapping[str, str | None] | None = None,
    directory: Path,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[int, bytes, str]:
    """``server < requests > out`` with real files, no pipes. Returns (exit status, stdout bytes, stderr)."""
    request_path = directory / "requests.jsonl"
    output_path = directory / "out.jsonl"
    request_path.write_bytes(requests)
    with open(request_path, "rb") as stdin, open(output_path, "wb") as stdout:
        process = ServerProcess(module=module, env=env, stdin=stdin, stdout=stdout, schema=None)
        try:
            code = process.wait(timeout)
            stderr = process.stderr_text()
        finally:
            process.kill()
    return code, output_path.read_bytes(), stderr
