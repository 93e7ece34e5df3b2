"""The single writer of protocol lines on stdout: queued, written without blocking, bounded.

Spec: basic/transports/stdio (the server writes messages to stdout, one per line).

Theory of operation
-------------------
``_Output`` is the only writer of the protocol fd (``stdio`` claims fd 1 for it). ``write``
queues a whole line (the loop is single-threaded, so lines never interleave) and the queue goes
out in one ``writev`` at the end of the loop iteration, or when the pipe has room again; a line
given as parts (``write_parts``: a large string spliced in, ``mcp_ref.splice``) leaves in the same
``writev`` without being joined. ``drain`` waits while more than ``WRITE_HIGH_WATER`` bytes are
queued (backpressure); above that mark the session starts no new request (``buffered``,
``high_water``), and ``on_room`` tells it when the queue is back at ``WRITE_LOW_WATER``. A
request's progress and log notifications are optional (``write_optional``): above
``OPTIONAL_OUTPUT_LIMIT`` queued bytes they are shed, and counted in the log. A closed stdout
(EPIPE, or the pipe's reader gone) calls ``on_lost``: nothing more can be delivered.

Three backends, one set of budgets: a pollable fd (pipe, socket, TTY) is written with
non-blocking ``os.writev`` when the loop says it has room; a regular file or ``/dev/null`` takes
plain blocking ``os.write`` (it never blocks); the thread fallback (``_stdio_threads.WriterThread``)
takes one batch of the queue at a time and reports each write back, so its bytes stay counted as
queued until they are written.

Cancel-safety: ``drain`` and ``close`` only stop *waiting* when cancelled (what was queued stays
queued; a cancelled ``close`` still closes the output). Everything else is a plain function.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import logging
import os
import selectors
import stat
from collections import deque
from typing import Callable, Sequence

from ._stdio_threads import WriterThread

log = logging.getLogger("mcp_ref")

# Output queued for the client: drain() waits above the high mark until the low one; no new
# request starts above the high mark; a request's progress and log notifications are shed above
# OPTIONAL_OUTPUT_LIMIT.
WRITE_HIGH_WATER = 1024 * 1024
WRITE_LOW_WATER = 256 * 1024
OPTIONAL_OUTPUT_LIMIT = 4 * 1024 * 1024
# os.writev takes at most this many buffers at once.
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024
# The thread fallback hands its writer thread at most this much of the queue at once.
WRITER_BATCH_BYTES = 1024 * 1024
# Past the flush deadline, how long the writer thread still gets for what is queued (the polled
# path makes one last write that cannot block instead).
LAST_WRITE_SECONDS = 0.25

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


def _make_blocking(fd: int) -> None:
    """The thread fallback does blocking I/O: undo a non-blocking flag inherited with the fd."""
    try:
        if hasattr(os, "get_blocking") and not os.get_blocking(fd):
            os.set_blocking(fd, True)
    except OSError:
        pass
