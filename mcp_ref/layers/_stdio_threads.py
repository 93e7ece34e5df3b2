"""The thread backend of the stdio streams: blocking reads and writes on two small threads.

Used by :mod:`mcp_ref.core.streams` (``ThreadReader``, ``ThreadWriter``) where the event loop cannot
wait on the stdin/stdout descriptors (Windows' default Proactor loop has no ``add_reader``; its
selector loop takes sockets only, and Windows has no non-blocking pipes), or when forced with
``MCP_REF_STDIO=threads``.

Theory of operation
-------------------
* **One read at a time, asked for by the loop.** ``ReaderThread`` does nothing until the loop
  calls ``request()``. It then does one blocking ``os.read`` of at most ``chunk`` bytes and hands
  the bytes (or ``b""`` at EOF, or the ``OSError``) to the loop with ``call_soon_threadsafe``, and
  waits to be asked again. The loop asks only when its read loop wants a chunk, which it does
  only while the session wants input, so when the session holds input the thread stops reading:
  the OS pipe fills and the client blocks. At most one chunk is ever in transit.
* **One batch at a time, handed over by the loop.** ``WriterThread`` gets a list of buffers with
  ``submit()``, writes them with blocking ``os.write`` calls of at most ``chunk`` bytes, reports
  each write's byte count (``on_taken``) and then the end of the batch (``on_batch_done``) to the
  loop, or the ``OSError`` that ended writing (``on_error``). ``streams.ThreadWriter`` submits one
  chunk of at most a pipe buffer's size at a time, so the thread holds no more than the kernel
  would on the polled path; the loop keeps the rest queued and counted. The loop never blocks;
  only the thread waits for a client that does not read.
* **Each thread owns its descriptor.** The transport gives each thread its own duplicate and the
  thread closes it when it ends. A thread blocked in a read or write when the session ends (a
  client that neither closes stdin nor reads stdout) is a daemon: it is abandoned at process
  exit, and since nobody else ever closes its descriptor, a descriptor number reused meanwhile
  can never be written to by mistake.
* Callbacks reach a loop that may have closed meanwhile; the thread then simply ends.

Nothing here imports anything platform-specific.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Callable, Sequence

# One blocking write hands the OS at most this much, so progress is reported in steps a
# congested client still lets through.
WRITE_CHUNK_BYTES = 64 * 1024


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


class ReaderThread:
    """Blocking reads of ``fd`` on a daemon thread, one chunk per ``request()``."""

    def __init__(
        self,
        fd: int,
        loop: asyncio.AbstractEventLoop,
        on_data: Callable[[bytes | OSError], None],
        *,
        chunk: int,
    ) -> None:
        self._fd = fd  # owned: closed by the thread when it ends
        self._loop = loop
        self._on_data = on_data
        self._chunk = chunk
        self._wanted = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="mcp-ref-stdin", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def request(self) -> None:
        """Read one more chunk (called from the loop, never twice before the chunk arrives)."""
        self._wanted.set()

    def stop(self) -> None:
        """Read no more. An idle thread ends at once; one blocked in a read ends after it."""
        self._stopped = True
        self._wanted.set()

    def _run(self) -> None:
        try:
            while True:
                self._wanted.wait()
                self._wanted.clear()
                if self._stopped:
                    return
                try:
                    data: bytes | OSError = os.read(self._fd, self._chunk)
                except OSError as exc:
                    data = exc
                if self._stopped:
                    return  # the session stopped reading meanwhile: these bytes are not wanted
                try:
                    self._loop.call_soon_threadsafe(self._on_data, data)
                except RuntimeError:
                    return  # the loop is closed
                if not data or isinstance(data, OSError):
                    return
        finally:
            _close_quietly(self._fd)


class WriterThread:
    """Blocking writes to ``fd`` on a daemon thread, one submitted batch at a time."""

    def __init__(
        self,
        fd: int,
        loop: asyncio.AbstractEventLoop,
        *,
        on_taken: Callable[[int], None],
        on_batch_done: Callable[[], None],
        on_error: Callable[[OSError], None],
        chunk: int = WRITE_CHUNK_BYTES,
    ) -> None:
        self._fd = fd  # owned: closed by the thread when it ends
        self._loop = loop
        self._on_taken = on_taken
        self._on_batch_done = on_batch_done
        self._on_error = on_error
        self._chunk = chunk
        self._condition = threading.Condition()
        self._batch: Sequence[bytes | memoryview] | None = None
        self._stopped = False
        self.busy = False  # a batch is submitted and not reported done (loop side only)
        self._thread = threading.Thread(target=self._run, name="mcp-ref-stdout", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, batch: Sequence[bytes | memoryview]) -> None:
        """Write ``batch`` (from the loop, only while not ``busy``)."""
        assert not self.busy
        self.busy = True
        with self._condition:
            self._batch = batch
            self._condition.notify()

    def stop(self) -> None:
        """Write nothing more after the current write; the thread then closes its descriptor."""
        with self._condition:
            self._stopped = True
            self._batch = None
            self._condition.notify()

    def _call(self, callback: Callable[..., None], *args: object) -> bool:
        try:
            self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:
            return False  # the loop is closed
        return True

    def _run(self) -> None:
        try:
            while True:
                with self._condition:
                    while self._batch is None and not self._stopped:
                        self._condition.wait()
                    if self._stopped:
                        return
                    batch, self._batch = self._batch, None
                assert batch is not None  # (the wait above ends only with a batch, or stopped)
                if not self._write_batch(batch):
                    return
        finally:
            _close_quietly(self._fd)

    def _write_batch(self, batch: Sequence[bytes | memoryview]) -> bool:
        pending: list[bytes | memoryview] = list(batch)
        index = 0
        while index < len(pending):
            # Join small lines into one write of up to a chunk; cut large ones into chunks.
            parts: list[bytes | memoryview] = []
            size = 0
            while index < len(pending) and size < self._chunk:
                head = memoryview(pending[index])
                room = self._chunk - size
                if len(head) <= room:
                    parts.append(head)
                    size += len(head)
                    index += 1
                else:
                    parts.append(head[:room])
                    pending[index] = head[room:]
                    size += room
            view = memoryview(parts[0] if len(parts) == 1 else b"".join(parts))
            while view:
                if self._stopped:
                    return False
                try:
                    written = os.write(self._fd, view)
                except InterruptedError:
                    continue
                except OSError as exc:
                    self._call(self._on_error, exc)
                    return False
                view = view[written:]
                if not self._call(self._on_taken, written):
                    return False
        return self._call(self._on_batch_done)
