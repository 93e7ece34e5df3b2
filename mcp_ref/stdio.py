"""The stdio transport: a thin asyncio shell around ``wire`` and ``dispatcher``.

Spec: basic/transports/stdio (2026-07-28).

Theory of operation
-------------------
* **stdout is reserved.** At start we duplicate fd 1 for the protocol and point fd 1 (and
  ``sys.stdout``) at stderr, so a stray ``print()`` -- or a C library writing to fd 1 -- lands on
  stderr instead of corrupting the message stream. Both are restored on exit, unless a
  synchronous handler is still running then: it could still print, so fd 1 stays on stderr.
  ``sys.stdout`` is a ``stderr.DivertedStdout`` meanwhile, so a print never blocks the loop.
* **Any descriptors.** Pipes, sockets and TTYs are polled by the event loop and read and written
  with plain non-blocking ``os.read``/``os.writev`` (no asyncio transport, no thread), so stdin
  and stdout may even be one socket (inetd, systemd socket activation, ``socat``). Regular files
  and ``/dev/null`` cannot be polled and never block, so they are read and written directly.
* **Where the loop cannot poll them: two threads.** Windows' default (Proactor) event loop has no
  ``add_reader``, and Windows has no non-blocking pipes. There, and whenever
  ``MCP_REF_STDIO=threads`` (or ``run(stdio_mode="threads")``) forces it, stdin is read by a
  small thread doing blocking reads, one chunk each time the loop asks, and stdout is written by
  another taking one batch of the queue at a time (:mod:`mcp_ref._stdio_threads`). The loop keeps
  every budget, the queue and its accounting, so framing, backpressure (the reader thread is not
  asked for more while input is held; bytes stay counted as queued until the writer thread
  reports them written), bounded memory, cancellation and shutdown are the same code and the same
  guarantees. ``MCP_REF_STDIO`` is ``auto`` (the default: poll when the loop can, else threads),
  ``poll`` or ``threads``; the choice is logged once at debug level. On Windows stdin and stdout
  are switched to binary mode (no CRLF translation) first. Signals: ``loop.add_signal_handler``
  where the loop has it; otherwise (and in the thread mode) ``signal.signal`` for SIGINT, SIGTERM,
  SIGHUP and SIGBREAK, whichever exist, handing over with ``call_soon_threadsafe``.
* **Reading is pulled, and bounded by bytes.** Input goes into the ``WireReader`` as raw bytes;
  ``_pump`` turns it into events and hands them to the dispatcher only while the budgets allow:
  fewer than ``BACKLOG_HIGH_WATER`` requests waiting or running, less than
  ``max_in_flight_bytes`` of (estimated, parsed) requests in flight -- open subscriptions
  included -- and no more than ``WRITE_HIGH_WATER`` bytes of output queued for a client that is
  not reading. Over budget, input is *held*: reading goes on until ``HELD_INPUT_BYTES`` wait
  unparsed, and then stops (the kernel pipe fills and the client blocks). Meanwhile the control
  lane (``mcp_ref.control``) is served through the held bytes (``_take_ahead``): every
  ``notifications/cancelled`` among them that names a request in flight, and every request that
  does no user work (``ping``, ``server/discover``, the list and ``tasks/*`` methods), is taken
  out and handled at once, at most ``control.CONTROL_LANE_LIMIT`` requests at a time, none while
  the client leaves its answers unread. So a cancellation never waits behind the backlog it
  wants to shrink, nor a host's health check behind tool calls.
* **Writing.** ``_Output`` is the only writer of the protocol fd. ``write`` queues a whole line
  (the loop is single-threaded, so lines never interleave) and the queue goes out in one
  ``writev`` at the end of the loop iteration, or when the pipe has room again. ``drain`` waits
  while more than ``WRITE_HIGH_WATER`` bytes are queued (backpressure). A request's progress
  and log notifications are optional: above ``OPTIONAL_OUTPUT_LIMIT`` queued bytes they are
  shed, and counted in the log. A closed stdout (EPIPE, or the pipe's reader gone) ends the
  session: nothing more can be delivered, so nothing more is worth computing.
* **Shutdown.** EOF on stdin, SIGTERM, SIGINT or SIGHUP stops reading. What was read is still
  served: requests in flight and input held back get ``shutdown_grace_seconds``; what is still
  unfinished then is answered -32603 ("the server is shutting down") and cancelled, so every
  request read gets exactly one response unless the client cancelled it. Open subscriptions
  get their graceful-closure response. Output is flushed, but only until grace +
  ``flush_timeout_seconds``: a client that does not read cannot hold the process. A second
  signal skips what is left of both at once. None of these steps waits on a thread, so a busy
  synchronous handler never stops the server from reading a cancellation.

Cancel-safety: ``_Output.drain`` and ``_Output.close`` only stop *waiting* when cancelled (what
was queued stays queued); ``serve``, if cancelled, still runs the whole shutdown in its
``finally``. Everything else here is a plain callback that runs to completion on the loop.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import logging
import math
import os
import selectors
import signal
import stat
import sys
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Sequence

from . import stderr
from ._stdio_threads import ReaderThread, WriterThread
from .outputbudget import DEFAULT_MAX_RESERVED_OUTPUT_BYTES
from .session import DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_IN_FLIGHT_BYTES, SHUTTING_DOWN, Session
from .wire import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    from .server import Server

log = logging.getLogger("mcp_ref")

READ_CHUNK_BYTES = 256 * 1024
DEFAULT_SHUTDOWN_GRACE_SECONDS = 5.0
# After the grace period, how long queued output may take to reach a client that reads slowly.
DEFAULT_FLUSH_TIMEOUT_SECONDS = 5.0
# Output queued for the client: drain() waits above the high mark until the low one; no new
# request starts above the high mark; a request's progress and log notifications are shed above
# OPTIONAL_OUTPUT_LIMIT.
WRITE_HIGH_WATER = 1024 * 1024
WRITE_LOW_WATER = 256 * 1024
OPTIONAL_OUTPUT_LIMIT = 4 * 1024 * 1024
# After shutdown, how long cancelled synchronous handlers get to notice and return.
SYNC_HANDLER_EXIT_WAIT_SECONDS = 1.0
# os.writev takes at most this many buffers at once.
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024
# The thread fallback hands its writer thread at most this much of the queue at once.
WRITER_BATCH_BYTES = 1024 * 1024
# Past the flush deadline, how long the writer thread still gets for what is queued (the polled
# path makes one last write that cannot block instead).
LAST_WRITE_SECONDS = 0.25
# How stdin and stdout are served (MCP_REF_STDIO, run(stdio_mode=...)); see the module docstring.
STDIO_MODES = ("auto", "poll", "threads")


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


def _describe(exc: BaseException) -> str:
    """An OSError as "EPIPE: Broken pipe" (its str() may be empty)."""
    number = getattr(exc, "errno", None)
    name = errno.errorcode.get(number, "") if number else ""
    text = os.strerror(number) if number else (str(exc) or type(exc).__name__)
    return f"{name}: {text}" if name else text


class _Output:
    """The single writer of protocol lines (see the module docstring, "Writing").

    ``write`` never blocks and never splits a line. ``drain`` waits while the queue is over the
    high-water mark; it returns early, without room, once stdout is lost or the shutdown deadline
    (``set_deadline``) has passed, so nothing waits on a client that stopped reading past that.
    ``close`` flushes until that deadline and drops the rest.
    """

    def __init__(self, fd: int, *, on_lost: Callable[[BaseException], None], on_room: Callable[[], None]) -> None:
        self._fd = fd
        self._on_lost = on_lost
        self._on_room = on_room  # the queue fell to the low-water mark: input may flow again
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queued = False  # lines are queued (polled fd, or the writer thread); else written at once
        self._writer: WriterThread | None = None  # the thread fallback's writer
        self._watching_fifo = False
        self._queue: deque[bytes | memoryview] = deque()
        self.buffered = 0  # bytes queued, not yet taken by the OS
        self.high_water = WRITE_HIGH_WATER  # above it the session starts no new request (Output)
        self._flush_scheduled = False
        self._waiting_writable = False
        self._room_wanted = False
        self._room: asyncio.Future[None] | None = None  # shared by every drain() waiter
        self._flushed: asyncio.Future[None] | None = None  # close() waits on it
        self._deadline_timer: asyncio.TimerHandle | None = None
        self.expired = False  # the shutdown deadline passed: no more waiting for the client
        self.lost = False  # the client closed stdout
        self._closed = False
        self._shedding = False
        self.shed = 0  # optional notifications dropped while the client was not reading
        # when_written: bytes ever queued and ever taken by the OS, and (mark, callback) in order.
        self._queued_total = 0
        self._sent_total = 0
        self._written_waiters: deque[tuple[int, Callable[[], None]]] = deque()

    def open(self, loop: asyncio.AbstractEventLoop, *, threaded: bool = False) -> None:
        self._loop = loop
        if threaded:
            if stat.S_ISREG(os.fstat(self._fd).st_mode):
                return  # plain os.write: a regular file takes writes without blocking
            _make_blocking(self._fd)
            # The thread owns its own duplicate (see _stdio_threads, "Each thread owns its descriptor").
            self._writer = WriterThread(
                os.dup(self._fd), loop, on_taken=self._taken, on_batch_done=self._batch_done, on_error=self._lose
            )
            self._writer.start()
            self._queued = True
            return
        self._queued = _is_pollable(self._fd)
        if not self._queued:
            return  # plain os.write: regular files and /dev/null take writes without blocking
        os.set_blocking(self._fd, False)
        if stat.S_ISFIFO(os.fstat(self._fd).st_mode):
            # The write end of a pipe polls readable only when its reader has gone: notice that
            # at once, not at the next write. (Not for a socket: it may be stdin as well.)
            loop.add_reader(self._fd, self._reader_gone)
            self._watching_fifo = True

    @property
    def congested(self) -> bool:
        """More output is queued than a reading client would leave: start no new work (and
        ``on_room`` is called once it is down to the low-water mark)."""
        if self.buffered > WRITE_HIGH_WATER:
            self._room_wanted = True
            return True
        return False

    def write(self, line: bytes) -> None:
        """Queue one whole line. Not a coroutine, so never interrupted: a line is queued entirely
        or, once stdout is lost or closed, not at all."""
        self.write_parts((line,))

    def write_parts(self, parts: Sequence[bytes]) -> None:
        """Queue one whole line given as consecutive buffers (``wire.encode_message_parts``), as
        ``write`` does: they leave in the same ``writev``, never joined into one more copy (an
        8 MiB image is 11 MiB of base64 that would be copied once more)."""
        if self.lost or self._closed:
            return
        if not self._queued:
            for part in parts:
                if not self.lost:
                    self._write_blocking(part)
            return
        self._queue.extend(parts)
        size = sum(map(len, parts))
        self.buffered += size
        self._queued_total += size
        if self.buffered > WRITE_HIGH_WATER:
            self._room_wanted = True  # the session holds input now: on_room once it drains
        if not self._flush_scheduled and not self._waiting_writable:
            # Lines queued in the same loop iteration leave in one writev.
            self._flush_scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self._flush)

    def when_written(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once every byte queued so far has been taken by the OS, or at once
        when nothing is pending; also when stdout is lost or closed (nothing more will leave).
        The dispatcher holds a request's reserved output (``mcp_ref.outputbudget``) until then."""
        if self._sent_total >= self._queued_total or self.lost or self._closed:
            callback()
        else:
            self._written_waiters.append((self._queued_total, callback))

    def _call_written(self, everything: bool = False) -> None:
        waiters = self._written_waiters
        while waiters and (everything or waiters[0][0] <= self._sent_total):
            waiters.popleft()[1]()

    def write_optional(self, line: bytes) -> None:
        """Queue a line the client can do without (a request's progress or log notification),
        unless the client has let more than ``OPTIONAL_OUTPUT_LIMIT`` bytes pile up."""
        if self.buffered > OPTIONAL_OUTPUT_LIMIT:
            self.shed += 1
            if not self._shedding:
                self._shedding = True
                log.warning("stdout is backed up (%d bytes queued, the client is not reading): dropping progress and log notifications until it drains", self.buffered)
            return
        self.write(line)

    async def drain(self) -> None:
        """Wait while the queue is over the high-water mark. Cancel-safe: cancelling only stops
        the waiting; what was queued is still written."""
        if self.buffered <= WRITE_HIGH_WATER or self.lost or self.expired or self._closed:
            return
        if self._room is None or self._room.done():
            assert self._loop is not None
            self._room = self._loop.create_future()
        await asyncio.shield(self._room)

    def set_deadline(self, when: float) -> None:
        """From loop time ``when`` on, nothing waits for the client any more (drain, close)."""
        assert self._loop is not None
        if self._deadline_timer is not None:
            if self._deadline_timer.when() <= when:
                return
            self._deadline_timer.cancel()
        self._deadline_timer = self._loop.call_at(when, self._expire)

    async def close(self) -> None:
        """Flush what is queued, until the deadline; then drop the rest and stop writing.

        Cancel-safe: if cancelled, the output is closed all the same (nothing more is written).
        """
        try:
            if self._queued and not self.lost:
                self._flush()
                if self._pending() and not self.expired:
                    assert self._loop is not None
                    self._flushed = self._loop.create_future()
                    await asyncio.shield(self._flushed)
                elif self._pending() and self._writer is not None:
                    # Past the deadline the polled path still made one write that cannot block
                    # (_flush above). The writer thread cannot be asked for that: give it a
                    # moment, bounded, to finish its batch and take what is queued behind it
                    # (the -32603s of a second signal, say).
                    assert self._loop is not None
                    self._flushed = self._loop.create_future()
                    try:
                        await asyncio.wait_for(asyncio.shield(self._flushed), LAST_WRITE_SECONDS)
                    except TimeoutError:
                        pass
            if self._pending() and not self.lost:
                log.error(
                    "stdout: %d bytes of output were not taken by the client before the shutdown deadline (is it still reading?); dropped",
                    self.buffered,
                )
        finally:
            self._shut()

    # --- internals -------------------------------------------------------------------------

    def _write_blocking(self, line: bytes) -> None:
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            self._lose(exc)

    def _pending(self) -> bool:
        """Is output queued, or handed to the writer thread and not all written yet?"""
        return bool(self._queue) or (self._writer is not None and self._writer.busy)

    def _flush(self) -> None:
        """Hand the OS as much of the queue as it takes now; watch for room if some is left."""
        self._flush_scheduled = False
        if self._writer is not None:
            self._hand_over()
            return
        queue = self._queue
        while queue and not self.lost:
            batch = list(queue) if len(queue) <= _IOV_MAX else list(itertools.islice(queue, _IOV_MAX))
            offered = sum(map(len, batch))
            try:
                written = os.writev(self._fd, batch)
            except BlockingIOError:
                break
            except OSError as exc:
                self._lose(exc)
                return
            self.buffered -= written
            self._sent_total += written
            taken = written
            while taken:
                head = queue[0]
                if len(head) <= taken:
                    taken -= len(head)
                    queue.popleft()
                else:
                    queue[0] = memoryview(head)[taken:]
                    taken = 0
            if written < offered:
                break  # the pipe is full
        self._watch_writable(bool(queue) and not self.lost)
        self._progress()

    def _progress(self) -> None:
        """Output was taken: wake drain() waiters and paused input at the low-water mark, and
        close() once everything is out."""
        if self._written_waiters:
            self._call_written()
        if self.buffered <= WRITE_LOW_WATER:
            if self._shedding:
                self._shedding = False
                log.warning("stdout drained: %d progress and log notification(s) were dropped meanwhile", self.shed)
                self.shed = 0
            if self._room is not None and not self._room.done():
                self._room.set_result(None)
            if self._room_wanted:
                self._room_wanted = False
                self._on_room()
        if not self._pending() and self._flushed is not None and not self._flushed.done():
            self._flushed.set_result(None)

    # The thread fallback: the writer thread takes one batch of the queue at a time. Its bytes stay
    # counted in ``buffered`` until it reports them written, so every budget sees the same numbers
    # as on the polled path. ``_waiting_writable`` is true while a batch is out (no flush is
    # scheduled then; the end of the batch hands over the next one).

    def _hand_over(self) -> None:
        writer = self._writer
        assert writer is not None
        if writer.busy or self.lost or self._closed or not self._queue:
            self._progress()
            return
        batch: list[bytes | memoryview] = []
        size = 0
        while self._queue and size < WRITER_BATCH_BYTES:
            line = self._queue.popleft()
            batch.append(line)
            size += len(line)
        self._waiting_writable = True
        writer.submit(batch)

    def _taken(self, written: int) -> None:
        if self.lost or self._closed:
            return
        self.buffered -= written
        self._sent_total += written
        self._progress()

    def _batch_done(self) -> None:
        if self.lost or self._closed or self._writer is None:
            return
        self._writer.busy = False
        self._waiting_writable = False
        self._hand_over()

    def _watch_writable(self, wanted: bool) -> None:
        assert self._loop is not None
        if wanted and not self._waiting_writable:
            self._loop.add_writer(self._fd, self._flush)
            self._waiting_writable = True
        elif not wanted and self._waiting_writable:
            self._loop.remove_writer(self._fd)
            self._waiting_writable = False

    def _reader_gone(self) -> None:
        self._lose(BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE)))

    def _lose(self, exc: BaseException) -> None:
        if self.lost:
            return
        self.lost = True
        self._queue.clear()
        self.buffered = 0
        self._release_waiters()
        self._stop_watching()
        assert self._loop is not None
        # Not from inside write(): the session's reaction cancels tasks, maybe the caller's own.
        self._loop.call_soon(self._on_lost, exc)

    def _expire(self) -> None:
        self.expired = True
        self._release_waiters()

    def _release_waiters(self) -> None:
        for future in (self._room, self._flushed):
            if future is not None and not future.done():
                future.set_result(None)
        if self.lost or self._closed:
            self._call_written(everything=True)

    def _stop_watching(self) -> None:
        if self._writer is not None:
            self._writer.stop()  # after its current write, if any; it then closes its descriptor
            self._waiting_writable = False
            return
        if self._loop is None or self._loop.is_closed():
            return
        self._watch_writable(False)
        if self._watching_fifo:
            self._loop.remove_reader(self._fd)
            self._watching_fifo = False

    def _shut(self) -> None:
        self._closed = True
        self._queue.clear()
        self.buffered = 0
        self._release_waiters()
        self._stop_watching()
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()


class StdioSession:
    """Serves one server over a pair of file descriptors until input ends, a signal arrives, or
    the client closes stdout: the I/O around one ``session.Session``, which keeps all the state."""

    def __init__(
        self,
        server: Server,
        in_fd: int,
        out_fd: int,
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
        self._in_fd = in_fd
        self._output = _Output(out_fd, on_lost=self._stdout_lost, on_room=self._room)
        self._grace = float(shutdown_grace_seconds)
        self._flush_timeout = float(flush_timeout_seconds)
        self._limits = {"max_concurrency": max_concurrency, "max_reserved_output_bytes": max_reserved_output_bytes,
                        "max_line_bytes": max_line_bytes, "max_in_flight_bytes": max_in_flight_bytes}
        self.session: Session | None = None  # made by serve(), on the loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: asyncio.Event | None = None
        self._in_pollable = False
        self._reading = False  # a reader callback is registered on in_fd
        self._read_more = True  # false once shutdown begins: no more input is read
        self._file_reader: asyncio.Task[None] | None = None
        self._input_wanted: asyncio.Event | None = None  # the file reader waits on it while input is held
        self.stdio_mode = stdio_mode  # "poll" or "threads" once serve() has chosen
        self._reader_thread: ReaderThread | None = None  # the thread fallback's reader
        self._thread_reading = False  # a chunk was asked of the reader thread and has not arrived
        self.hard_stopped = False  # a second signal, or stdout lost: no waiting for anything

    # --- input ------------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Bytes read from stdin."""
        assert self.session is not None
        if not self.session.receive_data(data):
            self._update_reading()

    def feed_eof(self) -> None:
        """End of input: serve what was read, then shut down gracefully."""
        session = self.session
        assert session is not None
        if session.reader.at_eof:
            return
        session.receive_eof()
        self._update_reading()
        if self._done is not None:
            self._done.set()

    def _room(self) -> None:
        """The output drained to its low-water mark: held input may go on."""
        if self.session is not None:
            self.session.room()

    def _input_may_flow(self) -> None:
        """The session holds less input than before: read again if it wants more."""
        if self._input_wanted is not None:
            self._input_wanted.set()
        self._update_reading()

    def _may_read(self) -> bool:
        return self._read_more and self.session is not None and self.session.wants_input

    def _start_reading(self) -> None:
        if self.stdio_mode == "threads":
            assert self._loop is not None
            if stat.S_ISREG(os.fstat(self._in_fd).st_mode):
                self._file_reader = self._loop.create_task(self._read_file())
                return
            _make_blocking(self._in_fd)
            self._reader_thread = ReaderThread(os.dup(self._in_fd), self._loop, self._on_thread_data, chunk=READ_CHUNK_BYTES)
            self._reader_thread.start()
            self._update_reading()
            return
        self._in_pollable = _is_pollable(self._in_fd)
        if self._in_pollable:
            os.set_blocking(self._in_fd, False)
            self._update_reading()
        else:
            assert self._loop is not None
            self._file_reader = self._loop.create_task(self._read_file())

    def _update_reading(self) -> None:
        if self._reader_thread is not None:
            if not self._read_more or self.session is None or self.session.reader.at_eof:
                self._reader_thread.stop()
            elif not self._thread_reading and self._may_read():
                # One chunk at a time: the next is asked for only after this one is fed and
                # only while the budgets allow, so a paused transport leaves the pipe unread.
                self._thread_reading = True
                self._reader_thread.request()
            return
        if not self._in_pollable or self._loop is None:
            return
        wanted = self._may_read()
        if wanted and not self._reading:
            self._loop.add_reader(self._in_fd, self._on_readable)
            self._reading = True
        elif not wanted and self._reading:
            self._loop.remove_reader(self._in_fd)
            self._reading = False

    def _on_readable(self) -> None:
        try:
            data = os.read(self._in_fd, READ_CHUNK_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:  # EIO from a hung-up terminal, ECONNRESET from a socket
            log.warning("reading stdin failed (%s): taking it as the end of input", _describe(exc))
            data = b""
        if data:
            self.feed(data)
        else:
            self.feed_eof()

    def _on_thread_data(self, data: bytes | OSError) -> None:
        """A chunk from the reader thread (``b""`` at EOF, or the error that ended reading)."""
        self._thread_reading = False
        if not self._read_more:
            return  # shutdown began meanwhile: input is no longer read
        if isinstance(data, OSError):
            log.warning("reading stdin failed (%s): taking it as the end of input", _describe(data))
            data = b""
        if data:
            self.feed(data)
            self._update_reading()
        else:
            self.feed_eof()

    async def _read_file(self) -> None:
        """stdin is a regular file (or /dev/null): read it in chunks on the loop; it never blocks.

        While the session holds enough input, it waits for the session to say it wants more (no
        timer). Never dies silently: an unexpected error is logged and taken as the end of input,
        so what was read is still answered and the server exits.
        """
        assert self.session is not None and self._input_wanted is not None
        try:
            while self._read_more and not self.session.reader.at_eof:
                if not self._may_read():
                    self._input_wanted.clear()
                    if not self._may_read():
                        await self._input_wanted.wait()
                    continue
                try:
                    data = os.read(self._in_fd, READ_CHUNK_BYTES)
                except OSError as exc:
                    log.warning("reading stdin failed (%s): taking it as the end of input", _describe(exc))
                    data = b""
                if not data:
                    self.feed_eof()
                    return
                self.feed(data)
                await asyncio.sleep(0)  # let handlers run between chunks
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("internal error while reading stdin; taking it as the end of input")
            self.feed_eof()

    # --- ending --------------------------------------------------------------------------------

    def stop(self) -> None:
        """A signal: shut down gracefully; if already shutting down, stop waiting for anything."""
        if self._done is None:
            return
        if not self._done.is_set():
            self._done.set()
            return
        if self.hard_stopped:
            return
        log.warning("signalled again while shutting down: answering unfinished requests with an error and exiting now")
        self._hard_stop(answer=True)

    def _hard_stop(self, *, answer: bool) -> None:
        assert self._loop is not None and self.session is not None
        self.hard_stopped = True
        self.session.cancel_in_flight(SHUTTING_DOWN if answer else None)
        self._output.set_deadline(self._loop.time())

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
            _describe(exc),
            running,
        )
        self._read_more = False
        self._update_reading()
        self._hard_stop(answer=False)  # answers could not be delivered
        if self._done is not None:
            self._done.set()

    async def serve(self) -> None:
        """Run until EOF, ``stop()`` or a closed stdout, then shut down (see the module docstring).

        Cancelling ``serve`` itself is treated like a signal: the shutdown (grace period, graceful
        subscription closure, bounded flush) still runs, in the ``finally`` block.
        """
        self._loop = asyncio.get_running_loop()
        self._done = asyncio.Event()
        self._input_wanted = asyncio.Event()
        if self.stdio_mode == "auto":
            self.stdio_mode = choose_stdio_mode(self._loop, self._in_fd, "auto")
        self._output.open(self._loop, threaded=self.stdio_mode == "threads")
        self.session = Session(self.server, self._output, **self._limits)
        self.session.on_input_wanted = self._input_may_flow
        self._start_reading()
        try:
            await self._done.wait()
        finally:
            await self._shut_down()

    async def _shut_down(self) -> None:
        loop, session = self._loop, self.session
        assert loop is not None and session is not None
        grace = 0.0 if self.hard_stopped else self._grace
        grace_ends = loop.time() + grace
        log.info("shutting down: reading no more input; what was read gets %.1f s to finish", grace)
        self._output.set_deadline(grace_ends + self._flush_timeout)
        self._read_more = False
        self._update_reading()
        if self._file_reader is not None:
            self._file_reader.cancel()
        # No answer to a request we sent the client can arrive any more: stop waiting for one.
        session.outgoing.close("the server stopped reading input (end of input or shutdown)")
        # 1. Input already read (held back by the budgets, say) is still served in the grace period.
        await session.serve_held_input(grace_ends)
        # 2. Requests read but never started get their error now.
        if not self._output.lost:
            session.refuse_held_input()
        # 3. In-flight work: the rest of the grace period, then an error answer and cancellation;
        #    subscriptions end gracefully.
        await session.shutdown(max(0.0, grace_ends - loop.time()))
        # 4. Output goes out until the flush deadline, no longer.
        await self._output.close()
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


def _make_blocking(fd: int) -> None:
    """The thread fallback does blocking I/O: undo a non-blocking flag inherited with the fd."""
    try:
        if hasattr(os, "get_blocking") and not os.get_blocking(fd):
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
                undo.append(lambda signum=signum: loop.remove_signal_handler(signum))
                continue
        try:
            previous = signal.signal(signum, relay)
        except (ValueError, OSError) as exc:  # not the main thread, or not settable here
            log.debug("stdio: cannot handle signal %s (%s)", signum, exc)
            continue
        undo.append(lambda signum=signum, previous=previous: signal.signal(signum, previous))

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
    ``mcp_ref.stderr``). Level from the argument or ``$MCP_REF_LOG_LEVEL`` (default WARNING).
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
    environ = os.environ if environ is None else environ
    options: dict[str, Any] = {}
    if "MCP_REF_STDIO" in environ:
        mode = environ["MCP_REF_STDIO"].strip().lower()
        if mode in STDIO_MODES:
            options["stdio_mode"] = mode
        else:
            log.error("ignoring MCP_REF_STDIO=%r: choose %s", environ["MCP_REF_STDIO"], ", ".join(STDIO_MODES))
    for variable, (name, kind) in ENVIRONMENT_OPTIONS.items():
        if variable in environ:
            try:
                value = kind(environ[variable])
                if kind is float:
                    if not math.isfinite(value) or value < 0 or value > MAX_ENVIRONMENT_SECONDS:
                        raise ValueError(f"must be a number of seconds from 0 to {MAX_ENVIRONMENT_SECONDS:.0f}")
                elif value <= 0:
                    raise ValueError("must be positive")
                options[name] = value
            except ValueError as exc:
                log.error("ignoring %s=%r: %s", variable, environ[variable], exc)
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

    Explicit ``options`` win over ``MCP_REF_*`` environment variables.
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
    if stray:
        # A handler swallowed its cancellation (asyncio.run would wait for it forever). Everything
        # the client can see is flushed already, so leave now.
        log.warning("exiting with %d handler task(s) that ignored their cancellation", stray)
        logging.shutdown()
        os._exit(0)
    # Cancelled synchronous handlers see ctx.cancelled and usually stop within moments (not
    # waited for after a second signal or a closed stdout: nothing waits then).
    deadline = time.monotonic() + (0.0 if session.hard_stopped else SYNC_HANDLER_EXIT_WAIT_SECONDS)
    while server.busy_handler_threads and time.monotonic() < deadline:
        time.sleep(0.01)
    if server.busy_handler_threads:
        # Worker threads are joined at interpreter exit; a synchronous handler that ignores
        # ctx.cancelled would hold the process long after the client is gone. Everything the
        # client can see is flushed already, so leave now.
        log.warning("exiting with %d synchronous handler(s) still running", server.busy_handler_threads)
        logging.shutdown()
        os._exit(0)
    return 0
