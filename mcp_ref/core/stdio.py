"""The stdio transport: a thin asyncio shell that moves bytes between two streams and a ``session.Session``.

Spec: basic/transports/stdio (2026-07-28).

Theory of operation
-------------------
* **stdout is reserved.** At start we duplicate fd 1 for the protocol and point fd 1 (and
  ``sys.stdout``) at stderr, so a stray ``print()`` -- or a C library writing to fd 1 -- lands on
  stderr instead of corrupting the message stream. Both are restored on exit, unless a
  synchronous handler is still running then: it could still print, so fd 1 stays on stderr.
  ``sys.stdout`` is a ``stderr.DivertedStdout`` meanwhile, so a print never blocks the loop.
* **Two streams, one backend chosen once.** ``StdioSession.serve`` turns the two descriptors into
  a ``streams.ReceiveStream`` and a ``streams.SendStream`` (``streams.open_fd_streams``) and knows
  nothing more about them. Pipes, sockets and TTYs are polled by the event loop (stdin and stdout
  may even be one socket: inetd, systemd socket activation, ``socat``); regular files and
  ``/dev/null`` are read and written directly; where the loop cannot poll them (Windows' Proactor
  loop; Windows has no non-blocking pipes), or when ``MCP_REF_STDIO=threads`` (or
  ``run(stdio_mode="threads")``) forces it, two small threads do blocking reads and writes, one
  chunk at a time, asked for by the loop. On Linux a stdout pipe is asked to hold 1 MiB first
  (``mcp_ref.layers.pipesize``: a large answer leaves in fewer writes). ``MCP_REF_STDIO`` is
  ``auto`` (the default: poll when the loop can, else threads), ``poll`` or ``threads``; the
  choice is logged once at debug level.
  Every budget, the output queue and its accounting stay on the loop, so framing, backpressure,
  bounded memory, cancellation and shutdown are the same code whatever the backend. Tests give
  ``StdioSession`` in-memory streams instead (``streams.MemoryInput``, ``streams.MemoryOutput``).
  On Windows stdin and stdout are switched to binary mode (no CRLF translation) first.
* **One loop under a TaskGroup.** ``serve`` runs the read loop (``_read``) as the one task of an
  ``asyncio.TaskGroup`` and waits for the end: EOF (the loop returns), a signal (``stop``) or a
  closed stdout. Then it cancels the loop, closes the input stream and shuts down.
* **Reading is pulled, and bounded by bytes.** What is read goes to ``Session.receive_data``,
  which keeps the bytes, decides how many become requests (its budgets), and says whether to read
  more (``wants_input``): reading stops while it holds ``session.HELD_INPUT_BYTES`` (the kernel
  pipe fills and the client blocks), and starts again when the session says so
  (``on_input_wanted``), which it does when a request ends or the output drains: nothing polls,
  and no timer runs. Each chunk is read in a turn of the loop of its own, so a flooding client
  cannot starve the requests it started.
* **Writing.** ``stdout._Output`` is the only writer of the protocol stream (its module docstring
  has the rules). A closed stdout (EPIPE, or the pipe's reader gone) ends the session: nothing
  more can be delivered, so nothing more is worth computing.
* **Signals**: SIGTERM, SIGINT and SIGHUP (SIGBREAK on Windows) call ``stop``; through
  ``loop.add_signal_handler`` where the loop has it, otherwise (and in the thread mode)
  ``signal.signal``, handing over with ``call_soon_threadsafe``.
* **Shutdown.** EOF on stdin, a signal or a closed stdout stops reading. What was read is still
  served: requests in flight and input held back get ``shutdown_grace_seconds``; what is still
  unfinished then is answered -32603 ("the server is shutting down") and cancelled, so every
  request read gets exactly one response unless the client cancelled it. Open subscriptions
  get their graceful-closure response. Output is flushed, but only until grace +
  ``flush_timeout_seconds``: a client that does not read cannot hold the process. A second
  signal skips what is left of both at once. None of these steps waits on a thread, so a busy
  synchronous handler never stops the server from reading a cancellation.
* **Exit.** ``run_stdio`` returns 0 and the interpreter exits as usual, also when a synchronous
  handler ignores ``ctx.cancelled`` (it runs on a daemon thread, ``handlerthreads``, which the
  interpreter does not wait for). The one ``os._exit(0)``, after everything is flushed, is for a
  handler task that swallowed its cancellation (see ``run_stdio``): no normal path reaches it.

Cancel-safety: ``serve``, if cancelled, still runs the whole shutdown in its ``finally`` (and
``_shut_down`` awaits only cancel-safe steps: ``Session.serve_held_input``, ``Session.shutdown``,
``_Output.close``). The read loop is cancelled only while it waits on an event, never between a
chunk read and handed over; the streams' methods are plain functions, so nothing of theirs is
ever interrupted. Everything else
here is a plain callback that runs to completion on the loop.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..layers import stderr
from ..layers.outputbudget import DEFAULT_MAX_RESERVED_OUTPUT_BYTES
from .session import DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_IN_FLIGHT_BYTES, SHUTTING_DOWN, Session
from .stdout import _Output
from .streams import READ_CHUNK_BYTES, ReceiveStream, SendStream, describe, open_fd_streams
from .wire import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    from ..server import Server

log = logging.getLogger("mcp_ref")

DEFAULT_SHUTDOWN_GRACE_SECONDS = 5.0
# After the grace period, how long queued output may take to reach a client that reads slowly.
DEFAULT_FLUSH_TIMEOUT_SECONDS = 5.0
# After shutdown, how long cancelled synchronous handlers get to notice and return.
SYNC_HANDLER_EXIT_WAIT_SECONDS = 1.0
# How stdin and stdout are served (MCP_REF_STDIO, run(stdio_mode=...)); see the module docstring.
STDIO_MODES = ("auto", "poll", "threads")


class StdioSession:
    """Serves one server over a pair of byte streams until input ends, a signal arrives, or the
    client closes stdout: the I/O around one ``session.Session``, which keeps all the state.

    ``stdin`` and ``stdout`` are file descriptors (the backend is chosen in ``serve`` by
    ``stdio_mode`` and what they are: ``streams.open_fd_streams``) or streams already made (a
    test's ``streams.MemoryInput`` and ``streams.MemoryOutput``).
    """

    def __init__(
        self,
        server: Server,
        stdin: int | ReceiveStream,
        stdout: int | SendStream,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        shutdown_grace_seconds: float = DEFAULT_SHUTDOWN_GRACE_SECONDS,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        max_in_flight_bytes: int = DEFAULT_MAX_IN_FLIGHT_BYTES,
        flush_timeout_seconds: float = DEFAULT_FLUSH_TIMEOUT_SECONDS,
        stdio_mode: str = "auto",
        max_reserved_output_bytes: int = DEFAULT_MAX_RESERVED_OUTPUT_BYTES,
    ) -> None:
        if stdio_mode not in STDIO_MODES:
            raise ValueError(f"stdio_mode must be one of {', '.join(STDIO_MODES)}, not {stdio_mode!r}")
        for name, value in (("max_line_bytes", max_line_bytes), ("max_concurrency", max_concurrency), ("max_in_flight_bytes", max_in_flight_bytes),
                            ("max_reserved_output_bytes", max_reserved_output_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        for name, seconds in (("shutdown_grace_seconds", shutdown_grace_seconds), ("flush_timeout_seconds", flush_timeout_seconds)):
            _check_seconds(name, seconds)
        self.server = server
        self._stdin, self._stdout = stdin, stdout
        self._grace = float(shutdown_grace_seconds)
        self._flush_timeout = float(flush_timeout_seconds)
        self._limits = {"max_concurrency": max_concurrency, "max_reserved_output_bytes": max_reserved_output_bytes,
                        "max_line_bytes": max_line_bytes, "max_in_flight_bytes": max_in_flight_bytes}
        self.stdio_mode = stdio_mode  # "poll" or "threads" once serve() has chosen
        self.session: Session | None = None  # made by serve(), on the loop
        self._output: _Output | None = None  # the single writer, made by serve()
        self._done: asyncio.Event | None = None  # set by EOF, a signal or a lost stdout: shut down
        self._input_wanted: asyncio.Event | None = None  # the read loop waits on it while input is held
        self.hard_stopped = False  # a second signal, or stdout lost: no waiting for anything

    async def serve(self) -> None:
        """Run until EOF, ``stop()`` or a closed stdout, then shut down (see the module docstring).

        Cancelling ``serve`` itself is treated like a signal: the shutdown (grace period, graceful
        subscription closure, bounded flush) still runs, in the ``finally`` block.
        """
        loop = asyncio.get_running_loop()
        self._done, self._input_wanted = asyncio.Event(), asyncio.Event()
        reader, writer = self._open_streams(loop)
        self._output = output = _Output(writer, on_lost=self._stdout_lost, on_room=self._room)
        output.open(loop)
        self.session = session = Session(self.server, output, **self._limits)
        session.on_input_wanted = self._input_wanted.set
        try:
            async with asyncio.TaskGroup() as group:
                reading = group.create_task(self._read(reader, session))
                await self._done.wait()
                reading.cancel()  # (it waits only on events: nothing read is lost)
        finally:
            reader.close()
            await self._shut_down(loop, session, output)

    def _open_streams(self, loop: asyncio.AbstractEventLoop) -> tuple[ReceiveStream, SendStream]:
        stdin, stdout = self._stdin, self._stdout
        if not isinstance(stdin, int) or not isinstance(stdout, int):
            assert not isinstance(stdin, int) and not isinstance(stdout, int), "two descriptors, or two streams"
            return stdin, stdout
        if self.stdio_mode == "auto":
            self.stdio_mode = choose_stdio_mode(loop, stdin, "auto")
        return open_fd_streams(stdin, stdout, threads=self.stdio_mode == "threads")

    async def _read(self, reader: ReceiveStream, session: Session) -> None:
        """The one loop: a chunk whenever the session wants one; at EOF, shut down.

        It waits on events set by callbacks, never on a timer: ``wanted`` (the session's
        ``on_input_wanted``: a request ended, the output drained) while the session holds enough
        input (the stream is told to ``hold``), and the stream's readiness otherwise. Each turn
        asks for the next readiness (``when_readable``) before it reads, so no readiness is
        missed, nothing of ours runs between a read and the next wait, and each chunk is read in
        a turn of its own: a flooding client cannot starve the requests it started. Never dies
        silently: a failed read, or an unexpected error, is logged and taken as the end of input,
        so what was read is still answered.
        """
        assert self._done is not None and self._input_wanted is not None
        wanted = self._input_wanted
        readable = reader.when_readable()
        try:
            while True:
                if not session.wants_input:
                    reader.hold()
                    wanted.clear()
                    if not session.wants_input:
                        await wanted.wait()
                    readable = reader.when_readable()
                    continue
                if readable.is_set():
                    # Ready already (a file, or bytes waiting): awaiting a set event does not
                    # suspend, so give the loop its turn (signals, the requests a chunk started).
                    await asyncio.sleep(0)
                else:
                    await readable.wait()
                readable = reader.when_readable()
                try:
                    data = reader.receive_some(READ_CHUNK_BYTES)
                except BlockingIOError:
                    continue  # nothing yet: the new readiness will come
                except OSError as exc:  # EIO from a hung-up terminal, ECONNRESET from a socket
                    log.warning("reading stdin failed (%s): taking it as the end of input", describe(exc))
                    data = b""
                if not data:
                    break
                session.receive_data(data)
        except Exception:
            log.exception("internal error while reading stdin; taking it as the end of input")
        session.receive_eof()
        self._done.set()

    def _room(self) -> None:
        """The output drained to its low-water mark: held input may go on."""
        if self.session is not None:
            self.session.room()

    # --- ending --------------------------------------------------------------------------------

    def stop(self) -> None:
        """A signal: shut down gracefully; if already shutting down, stop waiting for anything."""
        if self._done is None or self.session is None:
            return
        if not self._done.is_set():
            self._done.set()
            return
        if self.hard_stopped:
            return
        log.warning("signalled again while shutting down: answering unfinished requests with an error and exiting now")
        self._hard_stop(answer=True)

    def _hard_stop(self, *, answer: bool) -> None:
        session, output = self.session, self._output
        assert session is not None and output is not None
        self.hard_stopped = True
        session.cancel_in_flight(SHUTTING_DOWN if answer else None)
        output.set_deadline(session.loop.time())

    def _stdout_lost(self, exc: BaseException) -> None:
        """The client closed stdout: no answer can reach it, so stop everything now."""
        if self.session is None or self.hard_stopped:
            return
        # Nothing lost (a shell's `| head -1` that read what it wanted) is routine: INFO. Work
        # cancelled because its answer cannot be delivered is worth a WARNING; answers already
        # made and left unread (the client chose to stop reading) are not work lost.
        running = self.session.running
        log.log(
            logging.WARNING if running else logging.INFO,
            "stdout was closed by the client (%s): cancelling %d request(s) in flight, reading no more input, and exiting",
            describe(exc),
            running,
        )
        self._hard_stop(answer=False)  # answers could not be delivered
        assert self._done is not None
        self._done.set()  # (the read loop is cancelled: no more input)

    async def _shut_down(self, loop: asyncio.AbstractEventLoop, session: Session, output: _Output) -> None:
        grace = 0.0 if self.hard_stopped else self._grace
        grace_ends = loop.time() + grace
        log.info("shutting down: reading no more input; what was read gets %.1f s to finish", grace)
        output.set_deadline(grace_ends + self._flush_timeout)
        # No answer to a request we sent the client can arrive any more: stop waiting for one.
        session.outgoing.close("the server stopped reading input (end of input or shutdown)")
        # 1. Input already read (held back by the budgets, say) is still served in the grace period.
        await session.serve_held_input(grace_ends)
        # 2. Requests read but never started get their error now.
        if not output.lost:
            session.refuse_held_input()
        # 3. In-flight work: the rest of the grace period, then an error answer and cancellation;
        #    subscriptions end gracefully.
        await session.shutdown(max(0.0, grace_ends - loop.time()))
        # 4. Output goes out until the flush deadline, no longer.
        await output.close()
        if not self.server.serving:  # the handler pool is the server's: the last session releases it
            self.server.close()


def _check_seconds(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number of seconds, 0 or more, not {value!r}")


# --- running on this process's stdin and stdout -------------------------------------------------


def _claim_stdout() -> tuple[int, Any]:
    """Take fd 1 for the protocol; point fd 1 at stderr and ``sys.stdout`` at a non-blocking
    stand-in that writes there. Returns what to restore."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.set_inheritable(protocol_fd, False)
    os.dup2(2, 1)
    saved_stdout = sys.stdout
    sys.stdout = stderr.DivertedStdout(stderr.shared_sink())
    return protocol_fd, saved_stdout


def _release_stdout(protocol_fd: int, saved_stdout: Any, server: Server) -> None:
    if server.busy_handler_threads:
        # A synchronous handler still runs and may print: fd 1 and sys.stdout stay on stderr.
        # Closing our copy of the protocol fd ends stdout for the client all the same.
        log.debug("leaving stdout diverted to stderr: %d synchronous handler(s) still running", server.busy_handler_threads)
        os.close(protocol_fd)
        return
    sys.stdout = saved_stdout
    os.dup2(protocol_fd, 1)
    os.close(protocol_fd)


def _restore_blocking(*fds: int) -> None:
    # The fds are shared with whoever started us; we made them non-blocking.
    if not hasattr(os, "set_blocking"):
        return  # Windows before Python 3.12: nothing was made non-blocking
    for fd in fds:
        try:
            os.set_blocking(fd, True)
        except OSError:
            pass


def _set_binary_mode(*fds: int) -> None:
    """Windows: no CRLF translation on the protocol's descriptors (POSIX has no text mode)."""
    if sys.platform != "win32":
        return
    import msvcrt

    for fd in fds:
        msvcrt.setmode(fd, os.O_BINARY)


def choose_stdio_mode(loop: asyncio.AbstractEventLoop, in_fd: int, requested: str) -> str:
    """``"poll"`` or ``"threads"`` (see the module docstring); logged once, at debug level.

    By capability: the loop must be able to wait on descriptors (a Proactor loop raises
    ``NotImplementedError`` for ``remove_reader``, which is otherwise harmless for an fd it does
    not watch), and the platform must have non-blocking pipes (Windows has none).
    """
    reason = ""
    if requested == "threads":
        reason = "forced (MCP_REF_STDIO=threads or stdio_mode='threads')"
    elif sys.platform == "win32":
        reason = "Windows has no non-blocking pipes"
    else:
        try:
            loop.remove_reader(in_fd)
        except NotImplementedError:
            reason = f"{type(loop).__name__} cannot wait on file descriptors"
    if not reason:
        log.debug("stdio: the event loop polls stdin and stdout")
        return "poll"
    if requested == "poll":
        log.warning("stdio: MCP_REF_STDIO=poll is impossible here (%s); using reader and writer threads", reason)
    else:
        log.debug("stdio: reader and writer threads: %s", reason)
    return "threads"


SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGBREAK") if hasattr(signal, name))


def _install_signal_handlers(loop: asyncio.AbstractEventLoop, stop: Callable[[], None], *, portable: bool) -> Callable[[], None]:
    """Call ``stop`` on the loop for each of ``SIGNALS``; returns what undoes it.

    ``loop.add_signal_handler`` where the loop offers it (and not ``portable``); otherwise
    ``signal.signal`` with a handler that hands over through ``call_soon_threadsafe`` (it runs in
    the main thread between bytecodes, which the loop's own wakeup fd makes prompt).
    """
    undo: list[Callable[[], None]] = []

    def relay(_signum: int, _frame: Any) -> None:
        try:
            loop.call_soon_threadsafe(stop)
        except RuntimeError:
            pass  # the loop is closed: the session is over

    for signum in SIGNALS:
        if not portable:
            try:
                loop.add_signal_handler(signum, stop)
            except NotImplementedError:
                pass
            else:

                def remove(signum: int = signum) -> None:
                    loop.remove_signal_handler(signum)

                undo.append(remove)
                continue
        try:
            previous = signal.signal(signum, relay)
        except (ValueError, OSError) as exc:  # not the main thread, or not settable here
            log.debug("stdio: cannot handle signal %s (%s)", signum, exc)
            continue

        def restore(signum: int = signum, previous: Any = previous) -> None:
            signal.signal(signum, previous)

        undo.append(restore)

    def uninstall() -> None:
        for step in reversed(undo):
            step()

    return uninstall


async def _serve_stdio(server: Server, options: dict[str, Any]) -> StdioSession:
    if os.isatty(0):
        # A person at a terminal, not a host: say what this process expects (stderr only).
        sys.stderr.write("MCP server on stdio: send one JSON-RPC message per line; Ctrl-D ends the session.\n")
    _set_binary_mode(0, 1)
    protocol_fd, saved_stdout = _claim_stdout()
    in_fd = os.dup(0)
    loop = asyncio.get_running_loop()
    try:
        options = dict(options)
        requested = options.pop("stdio_mode", "auto")
        if requested not in STDIO_MODES:
            raise ValueError(f"stdio_mode must be one of {', '.join(STDIO_MODES)}, not {requested!r}")
        mode = choose_stdio_mode(loop, in_fd, requested)
        session = StdioSession(server, in_fd, protocol_fd, stdio_mode=mode, **options)
        uninstall = _install_signal_handlers(loop, session.stop, portable=mode == "threads")
        try:
            await session.serve()
        finally:
            uninstall()
    finally:
        _restore_blocking(in_fd, protocol_fd)
        os.close(in_fd)
        _release_stdout(protocol_fd, saved_stdout, server)
    return session


async def serve_stdio(server: Server, **options: Any) -> None:
    """Serve ``server`` on this process's stdin/stdout until EOF, SIGTERM, SIGINT or SIGHUP
    (SIGBREAK on Windows). ``stdio_mode`` (``auto``, ``poll``, ``threads``) picks how the descriptors
    are served; see the module docstring."""
    await _serve_stdio(server, options)


def configure_logging(level: int | str | None = None) -> None:
    """Log to stderr (never stdout), without ever blocking and with repeats summarised (see
    ``mcp_ref.layers.stderr``). Level from the argument or ``$MCP_REF_LOG_LEVEL`` (default WARNING).
    Does nothing to a process whose root logger is configured already."""
    level = level or os.environ.get("MCP_REF_LOG_LEVEL", "WARNING").upper()
    unknown = isinstance(level, str) and level not in logging.getLevelNamesMapping()
    handler = stderr.StderrHandler(stderr.shared_sink(), stderr.RepeatLimiter())
    logging.basicConfig(
        handlers=[handler], level=logging.WARNING if unknown else level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if unknown:
        log.error("ignoring log level %r; using WARNING (choose DEBUG, INFO, WARNING, ERROR or CRITICAL)", level)


# Environment overrides for the transport limits, so users of a packaged server can tune them.
ENVIRONMENT_OPTIONS = {
    "MCP_REF_MAX_LINE_BYTES": ("max_line_bytes", int),
    "MCP_REF_SHUTDOWN_GRACE_SECONDS": ("shutdown_grace_seconds", float),
    "MCP_REF_MAX_CONCURRENCY": ("max_concurrency", int),
}
# Seconds beyond this are refused from the environment (inf and typos like 5e9 included).
MAX_ENVIRONMENT_SECONDS = 24 * 3600.0


def options_from_environment(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Transport options set through ``MCP_REF_*`` environment variables.

    Invalid values are reported on stderr and ignored (the default applies): integers must be
    positive; seconds must be finite, 0 or more, and at most a day (``nan``, ``inf`` and
    negative values are refused).
    """
    variables: Mapping[str, str] = os.environ if environ is None else environ
    options: dict[str, Any] = {}
    if "MCP_REF_STDIO" in variables:
        mode = variables["MCP_REF_STDIO"].strip().lower()
        if mode in STDIO_MODES:
            options["stdio_mode"] = mode
        else:
            log.error("ignoring MCP_REF_STDIO=%r: choose %s", variables["MCP_REF_STDIO"], ", ".join(STDIO_MODES))
    for variable, (name, kind) in ENVIRONMENT_OPTIONS.items():
        if variable in variables:
            try:
                value = kind(variables[variable])
                if kind is float:
                    if not math.isfinite(value) or value < 0 or value > MAX_ENVIRONMENT_SECONDS:
                        raise ValueError(f"must be a number of seconds from 0 to {MAX_ENVIRONMENT_SECONDS:.0f}")
                elif value <= 0:
                    raise ValueError("must be positive")
                options[name] = value
            except ValueError as exc:
                log.error("ignoring %s=%r: %s", variable, variables[variable], exc)
    return options


# At exit, how long tasks still alive after serving ended (a handler that swallowed its
# cancellation) get to unwind before the process leaves without them.
STRAY_TASK_EXIT_WAIT_SECONDS = 1.0


def _stop_stray_tasks(loop: asyncio.AbstractEventLoop) -> int:
    """Cancel what is left on the loop and wait a moment; returns how many would not end."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.wait(pending, timeout=STRAY_TASK_EXIT_WAIT_SECONDS))
    return sum(1 for task in pending if not task.done())


def run_stdio(server: Server, **options: Any) -> int:
    """Blocking entry point for console scripts: configure stderr logging, serve, return 0.

    Explicit ``options`` win over ``MCP_REF_*`` environment variables. Every normal way of ending
    (EOF, signals, a closed stdout) returns 0 from here and the interpreter exits as usual. So does
    a synchronous handler that ignores ``ctx.cancelled``: it gets a moment, then is left on its
    daemon thread (``handlerthreads``), which the interpreter does not wait for. One case ends the
    process with ``os._exit(0)``, once everything the client can see is flushed: a handler task
    that swallowed its cancellation. ``asyncio.run`` would wait for it forever, and any normal exit
    would resume it once more (the interpreter closes a coroutine it destroys, running its
    handlers on a closed loop, and logs the task as destroyed while pending).
    """
    configure_logging()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        session = loop.run_until_complete(_serve_stdio(server, {**options_from_environment(), **options}))
        stray = _stop_stray_tasks(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    # Cancelled synchronous handlers see ctx.cancelled and usually stop within moments (not
    # waited for after a second signal or a closed stdout: nothing waits then).
    deadline = time.monotonic() + (0.0 if session.hard_stopped else SYNC_HANDLER_EXIT_WAIT_SECONDS)
    while server.busy_handler_threads and time.monotonic() < deadline:
        time.sleep(0.01)
    if server.busy_handler_threads:
        log.warning("exiting with %d synchronous handler(s) still running", server.busy_handler_threads)
    if stray:
        log.warning("exiting with %d handler task(s) that ignored their cancellation", stray)
        logging.shutdown()
        os._exit(0)
    return 0
