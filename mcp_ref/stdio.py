"""The stdio transport: a thin asyncio shell around ``wire`` and ``dispatcher``.

Spec: basic/transports/stdio (2026-07-28).

Theory of operation
-------------------
* **stdout is reserved.** At start we duplicate fd 1 for the protocol and point fd 1 (and
  ``sys.stdout``) at stderr, so a stray ``print()`` -- or a C library writing to fd 1 -- lands on
  stderr instead of corrupting the message stream. Both are restored on exit.
* **Reading.** Pipes, sockets and TTYs are read through an asyncio read transport: bytes go
  straight into the ``WireReader`` and each complete event to the dispatcher, with no thread and
  no per-message task for the I/O itself. asyncio refuses regular files (``server < file``), so
  those are read with plain ``os.read`` in chunks on the loop (a regular file never blocks).
  When too many requests are in flight, reading pauses until the backlog drains.
* **Writing.** One writer owns the protocol fd. ``write`` queues a whole line at once (the event
  loop is single-threaded, so lines never interleave) and the OS gets it immediately when the
  pipe has room; ``drain`` waits when the pipe is full (backpressure). A regular-file or closed
  stdout is written with plain ``os.write``.
* **Shutdown.** EOF on stdin (or SIGTERM/SIGINT) stops reading; in-flight requests get a grace
  period to finish (a second signal ends it at once), the rest are cancelled, open subscriptions
  are closed gracefully, output is flushed, and ``run_stdio`` returns 0. None of these I/O steps uses a thread pool, so busy
  synchronous handlers can never stop the server from reading a cancellation.
"""

from __future__ import annotations

import asyncio
import logging
import os
import selectors
import signal
import stat
import sys
import time
from typing import TYPE_CHECKING, Any

from .dispatcher import Dispatcher
from .wire import DEFAULT_MAX_LINE_BYTES, WireReader

if TYPE_CHECKING:
    from .server import Server

log = logging.getLogger("mcp_ref")

READ_CHUNK_BYTES = 256 * 1024
DEFAULT_SHUTDOWN_GRACE_SECONDS = 5.0
DEFAULT_MAX_CONCURRENCY = 64
# Reading pauses while more than this many requests wait or run (bounded memory under a flood).
BACKLOG_HIGH_WATER = 1024
# After shutdown, how long cancelled synchronous handlers get to notice and return.
SYNC_HANDLER_EXIT_WAIT_SECONDS = 1.0


def _is_pollable(fd: int) -> bool:
    """Can the event loop wait on this fd? Pipes, sockets and TTYs: yes. Regular files and
    /dev/null: no (epoll refuses them), so those are read and written with plain os calls."""
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return False
    selector = selectors.DefaultSelector()
    try:
        selector.register(fd, selectors.EVENT_READ)
    except (OSError, ValueError):
        return False
    finally:
        selector.close()
    return True


class _ReadProtocol(asyncio.Protocol):
    """Feeds bytes from an asyncio read transport into the wire reader."""

    def __init__(self, session: StdioSession) -> None:
        self._session = session

    def data_received(self, data: bytes) -> None:
        self._session.feed(data)

    def eof_received(self) -> bool:
        self._session.feed_eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._session.feed_eof()


class _StdoutWriter(asyncio.Protocol):
    """The single writer of protocol lines (also the asyncio protocol of the write pipe).

    ``write`` never blocks and never splits a line; ``drain`` waits while the pipe is full (every
    waiter is woken when it empties); ``close`` flushes what is queued, bounded by a timeout in
    case the peer stopped reading.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._transport: asyncio.WriteTransport | None = None
        self._resumed: asyncio.Future[None] | None = None  # shared by every waiter while paused
        self._closed: asyncio.Future[None] | None = None
        self._broken = False

    async def open(self) -> None:
        if not _is_pollable(self._fd):
            return  # plain os.write: regular files and /dev/null take writes without blocking
        loop = asyncio.get_running_loop()
        self._closed = loop.create_future()
        pipe = open(self._fd, "wb", buffering=0, closefd=False)
        self._transport, _ = await loop.connect_write_pipe(lambda: self, pipe)

    # asyncio.Protocol flow control
    def pause_writing(self) -> None:
        if self._resumed is None or self._resumed.done():
            self._resumed = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            log.error("stdout closed by the peer (%s); dropping further output", exc)
        self._broken = True
        self.resume_writing()
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)

    def write(self, line: bytes) -> None:
        """Queue one whole line. Not a coroutine, so never interrupted: a line is queued entirely
        or, once stdout is broken, not at all (lines for a peer that closed stdout are dropped)."""
        if self._broken:
            return
        if self._transport is not None:
            self._transport.write(line)
            return
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            log.error("stdout is closed (%s); dropping output", exc)
            self._broken = True

    async def drain(self) -> None:
        """Wait while the pipe is full. Cancel-safe: cancelling only stops the waiting; what was
        queued is still written."""
        resumed = self._resumed
        if resumed is not None and not resumed.done() and not self._broken:
            await asyncio.shield(resumed)

    async def close(self, timeout: float) -> None:
        """Flush everything queued (asyncio writes the buffer out before closing), then close.

        Gives up after ``timeout`` seconds (a peer that stopped reading) and drops what is left.
        If cancelled, the transport still finishes closing in the background.
        """
        if self._transport is None or self._closed is None:
            return
        self._transport.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._closed), timeout)
        except asyncio.TimeoutError:
            log.error("stdout did not drain within %.1f s (is the client still reading?); giving up", timeout)
            self._transport.abort()


class StdioSession:
    """Serves one server over a pair of file descriptors until input ends or a signal arrives."""

    def __init__(
        self,
        server: Server,
        in_fd: int,
        out_fd: int,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        shutdown_grace_seconds: float = DEFAULT_SHUTDOWN_GRACE_SECONDS,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    ) -> None:
        self.server = server
        self._in_fd = in_fd
        self._reader = WireReader(max_line_bytes)
        self._writer = _StdoutWriter(out_fd)
        self._grace = shutdown_grace_seconds
        self._max_concurrency = max_concurrency
        self._dispatcher: Dispatcher | None = None
        self._read_transport: asyncio.ReadTransport | None = None
        self._done: asyncio.Event | None = None
        self._paused = False

    def feed(self, data: bytes) -> None:
        self._reader.feed(data)
        self._pump()

    def feed_eof(self) -> None:
        """End of input: serve what was read, then shut down gracefully."""
        if self._reader.at_eof:
            return
        self._reader.feed_eof()
        self._pump()
        if self._done is not None:
            self._done.set()

    def stop(self) -> None:
        """A signal: shut down gracefully; if already shutting down, stop waiting for in-flight work."""
        if self._done is None:
            return
        if self._done.is_set() and self._dispatcher is not None:
            log.warning("signalled again while shutting down: cancelling in-flight requests now")
            self._dispatcher.cancel_in_flight()
        self._done.set()

    def _pump(self) -> None:
        dispatcher = self._dispatcher
        assert dispatcher is not None
        for event in self._reader.events():
            dispatcher.handle(event)
        if self._read_transport is not None and not self._paused and dispatcher.backlog > BACKLOG_HIGH_WATER:
            self._paused = True
            self._read_transport.pause_reading()
            asyncio.get_running_loop().create_task(self._resume_when_drained())

    async def _resume_when_drained(self) -> None:
        assert self._dispatcher is not None
        while self._dispatcher.backlog > BACKLOG_HIGH_WATER // 2:
            await asyncio.sleep(0.005)
        self._paused = False
        if self._read_transport is not None and not self._read_transport.is_closing():
            self._read_transport.resume_reading()

    async def _read_file(self) -> None:
        assert self._dispatcher is not None
        while not self._reader.at_eof and not self._done.is_set():  # type: ignore[union-attr]
            data = os.read(self._in_fd, READ_CHUNK_BYTES)
            if not data:
                self.feed_eof()
                return
            self.feed(data)
            while self._dispatcher.backlog > BACKLOG_HIGH_WATER:
                await asyncio.sleep(0.005)
            await asyncio.sleep(0)  # let handlers run between chunks

    async def serve(self) -> None:
        """Run until EOF or ``stop()``, then shut down gracefully.

        Cancelling ``serve`` itself is treated like a signal: the shutdown (grace period, graceful
        subscription closure, flush) still runs, in the ``finally`` block.
        """
        loop = asyncio.get_running_loop()
        self._done = asyncio.Event()
        await self._writer.open()
        self._dispatcher = Dispatcher(self.server, self._writer, max_concurrency=self._max_concurrency)
        file_reader = None
        if _is_pollable(self._in_fd):
            pipe = open(self._in_fd, "rb", buffering=0, closefd=False)
            self._read_transport, _ = await loop.connect_read_pipe(lambda: _ReadProtocol(self), pipe)
        else:
            file_reader = loop.create_task(self._read_file())
        try:
            await self._done.wait()
        finally:
            if self._read_transport is not None:
                self._read_transport.close()
            if file_reader is not None:
                file_reader.cancel()
            await self._dispatcher.shutdown(self._grace)
            await self._writer.close(timeout=self._grace + 5.0)
            self.server.close()


def _claim_stdout() -> tuple[int, Any]:
    """Take fd 1 for the protocol; point fd 1 and ``sys.stdout`` at stderr. Returns what to restore."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.set_inheritable(protocol_fd, False)
    os.dup2(2, 1)
    saved_stdout = sys.stdout
    sys.stdout = sys.stderr
    return protocol_fd, saved_stdout


def _release_stdout(protocol_fd: int, saved_stdout: Any) -> None:
    sys.stdout = saved_stdout
    os.dup2(protocol_fd, 1)
    os.close(protocol_fd)


def _restore_blocking(*fds: int) -> None:
    # asyncio leaves pipes and TTYs non-blocking; the fds are shared with whoever started us.
    for fd in fds:
        try:
            os.set_blocking(fd, True)
        except OSError:
            pass


async def serve_stdio(server: Server, **options: Any) -> None:
    """Serve ``server`` on this process's stdin/stdout until EOF or SIGTERM/SIGINT."""
    if os.isatty(0):
        # A person at a terminal, not a host: say what this process expects (stderr only).
        sys.stderr.write("MCP server on stdio: send one JSON-RPC message per line; Ctrl-D ends the session.\n")
    protocol_fd, saved_stdout = _claim_stdout()
    in_fd = os.dup(0)
    session = StdioSession(server, in_fd, protocol_fd, **options)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, session.stop)
    try:
        await session.serve()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        _restore_blocking(in_fd, protocol_fd)
        os.close(in_fd)
        _release_stdout(protocol_fd, saved_stdout)


def configure_logging(level: int | str | None = None) -> None:
    """Log to stderr (never stdout). Level from the argument or ``$MCP_REF_LOG_LEVEL`` (default WARNING)."""
    level = level or os.environ.get("MCP_REF_LOG_LEVEL", "WARNING").upper()
    unknown = isinstance(level, str) and level not in logging.getLevelNamesMapping()
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING if unknown else level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if unknown:
        log.error("ignoring log level %r; using WARNING (choose DEBUG, INFO, WARNING, ERROR or CRITICAL)", level)


# Environment overrides for the transport limits, so users of a packaged server can tune them.
ENVIRONMENT_OPTIONS = {
    "MCP_REF_MAX_LINE_BYTES": ("max_line_bytes", int),
    "MCP_REF_SHUTDOWN_GRACE_SECONDS": ("shutdown_grace_seconds", float),
    "MCP_REF_MAX_CONCURRENCY": ("max_concurrency", int),
}


def options_from_environment(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Transport options set through ``MCP_REF_*`` environment variables (invalid values are reported and ignored)."""
    environ = os.environ if environ is None else environ
    options: dict[str, Any] = {}
    for variable, (name, kind) in ENVIRONMENT_OPTIONS.items():
        if variable in environ:
            try:
                value = kind(environ[variable])
                if value <= 0:
                    raise ValueError("must be positive")
                options[name] = value
            except ValueError as exc:
                log.error("ignoring %s=%r: %s", variable, environ[variable], exc)
    return options


def run_stdio(server: Server, **options: Any) -> int:
    """Blocking entry point for console scripts: configure stderr logging, serve, return 0.

    Explicit ``options`` win over ``MCP_REF_*`` environment variables.
    """
    configure_logging()
    asyncio.run(serve_stdio(server, **{**options_from_environment(), **options}))
    # Cancelled synchronous handlers see ctx.cancelled and usually stop within moments.
    deadline = time.monotonic() + SYNC_HANDLER_EXIT_WAIT_SECONDS
    while server.busy_handler_threads and time.monotonic() < deadline:
        time.sleep(0.01)
    if server.busy_handler_threads:
        # Worker threads are joined at interpreter exit; a synchronous handler that ignores
        # ctx.cancelled would hold the process long after the client is gone. Everything the
        # client can see is flushed already, so leave now.
        log.warning("exiting with %d synchronous handler(s) still running", server.busy_handler_threads)
        logging.shutdown()
        sys.stderr.flush()
        os._exit(0)
    return 0
