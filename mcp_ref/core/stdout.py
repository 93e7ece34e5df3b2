"""The single writer of protocol lines on stdout: queued, written without blocking, bounded.

Spec: basic/transports/stdio (the server writes messages to stdout, one per line).

Theory of operation
-------------------
``_Output`` is the only writer of the protocol fd (``stdio`` claims fd 1 for it). ``write``
queues a whole line (the loop is single-threaded, so lines never interleave) and the queue goes
out in one ``writev`` at the end of the loop iteration, or when the pipe has room again; a line
given as parts (``write_parts``: a large string spliced in, ``mcp_ref.layers.splice``) leaves in the same
``writev`` without being joined. ``drain`` waits while more than ``WRITE_HIGH_WATER`` bytes are
queued (backpressure); above that mark the session starts no new request (``buffered``,
``high_water``), and ``on_room`` tells it when the queue is back at ``WRITE_LOW_WATER``. A
request's progress and log notifications are optional (``write_optional``): above
``OPTIONAL_OUTPUT_LIMIT`` queued bytes they are shed, and counted in the log. A closed stdout
(EPIPE, or the pipe's reader gone) calls ``on_lost``: nothing more can be delivered.

It writes to a ``streams.SendStream`` (a polled pipe or socket, a regular file, a writer thread,
or a test's memory) and knows no more of it: ``send_some`` takes what fits now (for a polled
descriptor it is ``os.writev`` itself, so the steady-state write path is ``write_parts`` ->
``drain`` -> ``_flush``, three functions here), ``want_writable`` asks to be called back when
more fits, ``on_broken`` is a closed stdout. Bytes count as queued until the stream has taken
them; the thread backend's writer thread holds at most one pipe buffer's worth
(``streams.THREAD_WRITE_BYTES``) beyond that, and ``close`` waits for it as for the queue. What
fits now is what the kernel's pipe buffer has room for: on Linux a stdout pipe is widened to
1 MiB (``mcp_ref.layers.pipesize``), so an 8 MiB image's 11 MiB line leaves in about a dozen
``writev`` calls, not ~170. The marks above count only what is still in the process.

Cancel-safety: ``drain`` and ``close`` only stop *waiting* when cancelled (what was queued stays
queued; a cancelled ``close`` still closes the output). Everything else is a plain function.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections import deque
from typing import Callable, Sequence

from .streams import SendStream

log = logging.getLogger("mcp_ref")

# Output queued for the client: drain() waits above the high mark until the low one; no new
# request starts above the high mark; a request's progress and log notifications are shed above
# OPTIONAL_OUTPUT_LIMIT.
WRITE_HIGH_WATER = 1024 * 1024
WRITE_LOW_WATER = 256 * 1024
OPTIONAL_OUTPUT_LIMIT = 4 * 1024 * 1024
# os.writev takes at most this many buffers at once.
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024
# Past the flush deadline, how long the writer thread still gets for the chunk it holds (the polled
# path makes one last write that cannot block instead).
LAST_WRITE_SECONDS = 0.25


class _Output:
    """The single writer of protocol lines (see the module docstring, "Writing").

    ``write`` never blocks and never splits a line. ``drain`` waits while the queue is over the
    high-water mark; it returns early, without room, once stdout is lost or the shutdown deadline
    (``set_deadline``) has passed, so nothing waits on a client that stopped reading past that.
    ``close`` flushes until that deadline and drops the rest.
    """

    def __init__(self, stream: SendStream, *, on_lost: Callable[[BaseException], None], on_room: Callable[[], None]) -> None:
        self._stream = stream
        self._send_some = stream.send_some
        self._on_lost = on_lost
        self._on_room = on_room  # the queue fell to the low-water mark: input may flow again
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: deque[bytes | memoryview] = deque()
        self.buffered = 0  # bytes queued, not yet taken by the stream
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
        # when_written: bytes ever queued and ever taken by the stream, and (mark, callback) in order.
        self._queued_total = 0
        self._sent_total = 0
        self._written_waiters: deque[tuple[int, Callable[[], None]]] = deque()

    def open(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._stream.start(loop, self._flush, self._lose)

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
        The dispatcher holds a request's reserved output (``mcp_ref.layers.outputbudget``) until then."""
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
            if not self.lost:
                self._flush()  # past the deadline too: one last write that cannot block
                if self._pending() and not (self.expired and not self._stream.holding):
                    # Until the deadline; past it, a writer thread still gets a moment, bounded,
                    # for the chunk it holds and what is queued behind it (a second signal's -32603s).
                    assert self._loop is not None
                    self._flushed = self._loop.create_future()
                    try:
                        await asyncio.wait_for(asyncio.shield(self._flushed), LAST_WRITE_SECONDS if self.expired else None)
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

    def _pending(self) -> bool:
        """Is output queued, or held by the stream (a writer thread's chunk)?"""
        return bool(self._queue) or self._stream.holding

    def _flush(self) -> None:
        """Hand the stream as much of the queue as it takes now; ask for room if some is left."""
        self._flush_scheduled = False
        queue = self._queue
        while queue and not self.lost and not self._closed:
            batch = list(queue) if len(queue) <= _IOV_MAX else list(itertools.islice(queue, _IOV_MAX))
            offered = sum(map(len, batch))
            try:
                written = self._send_some(batch)
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
                break  # the stream is full
        # (A writer thread's chunk counts: its end calls _flush, which may finish close().)
        self._watch_writable((bool(queue) or self._stream.holding) and not self.lost and not self._closed)
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

    def _watch_writable(self, wanted: bool) -> None:
        if wanted != self._waiting_writable:
            self._waiting_writable = wanted
            self._stream.want_writable(wanted)

    def _lose(self, exc: BaseException) -> None:
        if self.lost or self._closed:
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
        self._waiting_writable = False
        self._stream.close()

    def _shut(self) -> None:
        self._closed = True
        self._queue.clear()
        self.buffered = 0
        self._release_waiters()
        self._stop_watching()
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
