"""The byte streams under the stdio shell: one small interface, four backends.

Spec: basic/transports/stdio (any reliable byte stream carries the same lines).

Theory of operation
-------------------
The shell (``stdio.StdioSession``) moves bytes between a ``Session`` and two streams, and knows
nothing else about them: a ``ReceiveStream`` it reads a chunk from whenever the session wants
one, and a ``SendStream`` the single writer (``stdout._Output``) hands buffers to. Both are used
from the event loop's thread only. The backend is chosen once, per descriptor
(``open_fd_streams``):

* **Polled** (``PolledReader``, ``PolledWriter``): pipes, sockets and TTYs, watched by the event
  loop (``add_reader``/``add_writer``) and read and written with non-blocking ``os.read`` and
  ``os.writev``; no thread, and stdin and stdout may be one socket. The default where the loop can
  wait on descriptors. A stdout pipe is widened first, on Linux, to 1 MiB
  (``mcp_ref.layers.pipesize``: a large answer leaves in fewer writes), whatever the backend.
* **Files** (``FileReader``, ``FileWriter``): a regular file or ``/dev/null`` cannot be polled
  (epoll refuses it) and never blocks, so it is read and written with plain ``os`` calls.
* **Threads** (``ThreadReader``, ``ThreadWriter``): where the loop cannot wait on descriptors
  (Windows' Proactor loop; Windows has no non-blocking pipes) or ``MCP_REF_STDIO=threads``:
  blocking calls on two small daemon threads (``_stdio_threads``), one chunk at a time, asked
  for by the loop.
* **Memory** (``MemoryInput``, ``MemoryOutput``): in memory, for tests: a test feeds bytes in and
  reads lines out, and a client that does not read fills its "pipe" as a real one would.

The contract, the same for every backend (what the shell relies on):

* **Nothing to cancel.** Every method is a plain function that returns at once, shaped like
  ``os.read`` and ``os.writev`` on a non-blocking descriptor: ``receive_some`` and ``send_some``
  raise ``BlockingIOError`` when they can do nothing now, and the caller waits for the event of
  ``when_readable`` or the ``on_writable`` callback. So no bytes are ever lost to a cancellation (the
  caller's waits are all it can cancel), and for a polled descriptor the read and the write are
  one C call each.
* **EOF has one meaning**: ``receive_some`` returns ``b""`` when, and only when, the peer ended
  its input.
* **Broken is an ``OSError``** (EPIPE from a client that closed stdout, EIO from a hung-up
  terminal): raised by ``receive_some`` and ``send_some``, or reported through ``on_broken``
  when a writer notices it between writes. A reader that fails is taken as the end of input; a
  writer that fails ends the session. **Closed** is the shell's own doing: ``close()`` (which may
  come twice) stops a stream for good, no callback follows, and nothing else is called after it.
* **Backpressure is pull on both sides.** Bytes are read only inside ``receive_some``, so while
  the session holds input nothing is read and the client blocks on a full pipe; a writer takes
  only what fits now (``send_some``) and says when it has room again (``want_writable``).
* **Readiness to read is a new event each time** (``when_readable``), asked for before each
  read: a readiness seen before that read sets an older event nobody waits on, so nothing of the
  shell runs between a request's read and its answer's write. While the session holds input the
  shell says so (``hold``), and the stream stops watching: a stream nobody reads costs nothing.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import os
import selectors
import stat
from typing import TYPE_CHECKING, Callable, Protocol, Sequence, Union

from ..layers.pipesize import widen_pipe

if TYPE_CHECKING:  # (imported where the thread backend starts its threads: most processes never do)
    from ..layers._stdio_threads import ReaderThread, WriterThread

Buffer = Union[bytes, memoryview]
# The most the shell reads at once (and what the reader thread reads per ask): what a pipe holds.
# Below glibc's mmap threshold (128 KiB), so each read's buffer comes from the heap: with 256 KiB,
# every read of a small request cost an mmap, an mremap and a munmap (measured with strace).
READ_CHUNK_BYTES = 64 * 1024
# One chunk handed to the writer thread at a time: what a pipe's kernel buffer holds by default,
# so the thread backend's bytes in transit (a copy, in the process) stay small; the widened pipe
# (layers.pipesize) is the kernel's memory, not the process's.
THREAD_WRITE_BYTES = 64 * 1024
# The in-memory client's "pipe" in each direction, as a Linux pipe's default buffer.
MEMORY_PIPE_BYTES = 64 * 1024


class ReceiveStream(Protocol):
    """The input side of a connection, read by one loop (``stdio.StdioSession._read``)."""

    def receive_some(self, max_bytes: int, /) -> bytes:
        """Take between 1 and ``max_bytes`` bytes that are there now, without waiting; ``b""`` at
        the end of input (only then). Raises ``BlockingIOError`` when nothing is there now (wait
        for the event of ``when_readable``), any other ``OSError`` when the stream broke.
        A plain function, so nothing to cancel (for the polled backend it is ``os.read`` itself).
        Not called again after ``b""``, a broken error, or ``close``."""
        ...

    def when_readable(self) -> asyncio.Event:
        """A new event, set once input may be there (at once if it is already). Only the newest
        one counts: an older one may still be set, late, and nobody waits on it. (Called on the
        event loop; it starts watching again after ``hold``.)"""
        ...

    def hold(self) -> None:
        """Nobody reads for now (the session holds enough input): stop watching until the next
        ``when_readable``, so the bytes stay with the peer, whose writes then block."""
        ...

    def close(self) -> None:
        """Read no more: stop watching, release what the stream owns; no event is set after it."""
        ...


class SendStream(Protocol):
    """The output side of a connection, driven by one writer (``stdout._Output``)."""

    def send_some(self, buffers: Sequence[Buffer], /) -> int:
        """Hand over as much of the buffers, in order, as the stream takes now, without waiting;
        return how many bytes it took (fewer than offered: it is full now). Raises
        ``BlockingIOError`` when it takes nothing now, any other ``OSError`` when broken. A plain
        function, so nothing to cancel (for the polled backend it is ``os.writev`` itself: the
        write path is one call). Not called again after a broken error, nor after ``close``."""
        ...

    holding: bool
    """Bytes taken by ``send_some`` but not yet handed to the OS (only the thread backend ever
    holds any: its writer thread's chunk)."""

    def start(self, loop: asyncio.AbstractEventLoop, on_writable: Callable[[], None], on_broken: Callable[[OSError], None]) -> None:
        """Begin: ``on_writable()`` (while wanted, see ``want_writable``) and ``on_broken(exc)``
        (when the peer is noticed gone between writes) are called on ``loop``, never from inside
        ``send_some``."""
        ...

    def want_writable(self, wanted: bool) -> None:
        """From now on call ``on_writable`` whenever the stream may take more (``True``: as the
        loop's ``add_writer``, until turned off), or stop (``False``)."""
        ...

    def close(self) -> None:
        """Write no more: stop watching, drop what is held, release what the stream owns; no
        callback follows. Not async, so it cannot be interrupted."""
        ...


def describe(exc: BaseException) -> str:
    """An OSError as "EPIPE: Broken pipe" (its str() may be empty)."""
    number = getattr(exc, "errno", None)
    name = errno.errorcode.get(number, "") if number else ""
    text = os.strerror(number) if number else (str(exc) or type(exc).__name__)
    return f"{name}: {text}" if name else text


def is_pollable(fd: int) -> bool:
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


def make_blocking(fd: int) -> None:
    """The thread backend does blocking I/O: undo a non-blocking flag inherited with the fd."""
    try:
        if hasattr(os, "get_blocking") and not os.get_blocking(fd):
            os.set_blocking(fd, True)
    except OSError:
        pass


def open_fd_streams(in_fd: int, out_fd: int, *, threads: bool) -> tuple[ReceiveStream, SendStream]:
    """The streams for a pair of descriptors: files as files; the rest polled, or on threads.
    A stdout pipe is widened first (``pipesize``: fewer writes per large answer)."""
    widen_pipe(out_fd)
    reader: ReceiveStream
    writer: SendStream
    if stat.S_ISREG(os.fstat(in_fd).st_mode) or (not threads and not is_pollable(in_fd)):
        reader = FileReader(in_fd)
    else:
        reader = ThreadReader(in_fd) if threads else PolledReader(in_fd)
    if stat.S_ISREG(os.fstat(out_fd).st_mode) or (not threads and not is_pollable(out_fd)):
        writer = FileWriter(out_fd)
    else:
        writer = ThreadWriter(out_fd) if threads else PolledWriter(out_fd)
    return reader, writer


# --- polled descriptors ------------------------------------------------------------------------


class PolledReader:
    """A pipe, socket or TTY, read with non-blocking ``os.read`` when the loop says it is readable.

    The descriptor stays registered with the loop from one ``when_readable`` to the next (only
    the event it sets changes, which costs no system call), until ``hold`` or ``close``.
    """

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self.receive_some = functools.partial(os.read, fd)  # the read path: one C call
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watching = False

    def when_readable(self) -> asyncio.Event:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        readable = asyncio.Event()
        self._loop.add_reader(self._fd, readable.set)
        self._watching = True
        return readable

    def hold(self) -> None:
        if self._watching and self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
        self._watching = False

    def close(self) -> None:
        self.hold()


class PolledWriter:
    """A pipe, socket or TTY written with non-blocking ``os.writev``; the loop says when it has room.

    A pipe's write end polls readable only when its reader has gone, so that is watched too: a
    client that closes stdout is noticed at once, not at the next write. (Not for a socket: it
    may be stdin as well.)
    """

    holding = False

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self.send_some = functools.partial(os.writev, fd)  # the write path: one C call
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_writable: Callable[[], None] = _nothing
        self._watching_writable = False
        self._watching_fifo = False

    def start(self, loop: asyncio.AbstractEventLoop, on_writable: Callable[[], None], on_broken: Callable[[OSError], None]) -> None:
        self._loop = loop
        self._on_writable = on_writable
        if stat.S_ISFIFO(os.fstat(self._fd).st_mode):
            loop.add_reader(self._fd, on_broken, BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE)))
            self._watching_fifo = True

    def want_writable(self, wanted: bool) -> None:
        assert self._loop is not None
        if wanted and not self._watching_writable:
            self._loop.add_writer(self._fd, self._on_writable)
            self._watching_writable = True
        elif not wanted and self._watching_writable:
            self._loop.remove_writer(self._fd)
            self._watching_writable = False

    def close(self) -> None:
        if self._loop is None or self._loop.is_closed():
            return
        self.want_writable(False)
        if self._watching_fifo:
            self._loop.remove_reader(self._fd)
            self._watching_fifo = False


def _nothing() -> None:
    pass


# --- regular files and /dev/null ------------------------------------------------------------------


class FileReader:
    """A regular file (or ``/dev/null``): read on the loop; it never blocks, so it is always readable."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.receive_some = functools.partial(os.read, fd)

    def when_readable(self) -> asyncio.Event:
        readable = asyncio.Event()
        readable.set()
        return readable

    def hold(self) -> None:
        pass

    def close(self) -> None:
        pass


class FileWriter:
    """A regular file (or ``/dev/null``): written at once, whole; it never blocks."""

    holding = False

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_writable: Callable[[], None] = _nothing

    def start(self, loop: asyncio.AbstractEventLoop, on_writable: Callable[[], None], on_broken: Callable[[OSError], None]) -> None:
        self._loop, self._on_writable = loop, on_writable

    def send_some(self, buffers: Sequence[Buffer], /) -> int:
        total = 0
        for buffer in buffers:
            view = memoryview(buffer)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
                total += written
        return total

    def want_writable(self, wanted: bool) -> None:
        if wanted and self._loop is not None:
            self._loop.call_soon(self._on_writable)

    def close(self) -> None:
        pass


# --- threads --------------------------------------------------------------------------------------


class ThreadReader:
    """Blocking reads on a daemon thread (``_stdio_threads``): ``when_readable`` asks the thread
    for a chunk (unless one is there already, or asked for), its arrival sets the event, and
    ``receive_some`` returns it. So the thread reads one chunk per ask, only while the shell asks,
    and the shell asks only while the session wants input. A thread blocked in a read at the end
    is abandoned (a daemon owning its own duplicate of the descriptor)."""

    def __init__(self, fd: int, *, chunk: int = READ_CHUNK_BYTES) -> None:
        make_blocking(fd)
        self._fd = fd
        self._chunk = chunk
        self._thread: ReaderThread | None = None
        self._asked = False  # a chunk was asked of the thread and has not arrived
        self._arrived: bytes | OSError | None = None
        self._readable = asyncio.Event()

    def receive_some(self, max_bytes: int, /) -> bytes:
        data, self._arrived = self._arrived, None
        if isinstance(data, OSError):
            raise data
        if data is None:
            raise BlockingIOError(errno.EAGAIN, "the reader thread has not read a chunk yet")
        return data

    def when_readable(self) -> asyncio.Event:
        self._readable = readable = asyncio.Event()
        if self._arrived is not None:
            readable.set()
        elif not self._asked:
            if self._thread is None:
                from ..layers._stdio_threads import ReaderThread

                self._thread = ReaderThread(os.dup(self._fd), asyncio.get_running_loop(), self._on_data, chunk=self._chunk)
                self._thread.start()
            self._asked = True
            self._thread.request()
        return readable

    def _on_data(self, data: bytes | OSError) -> None:
        self._asked = False
        self._arrived = data
        self._readable.set()

    def hold(self) -> None:
        pass  # (the thread reads only when asked: a chunk asked for already is kept for later)

    def close(self) -> None:
        self._readable = asyncio.Event()  # (a chunk arriving now sets nothing anybody waits on)
        if self._thread is not None:
            self._thread.stop()  # an idle thread ends at once; one blocked in a read after it


class ThreadWriter:
    """Blocking writes on a daemon thread, one chunk of at most ``THREAD_WRITE_BYTES`` at a time
    (``_stdio_threads``): the thread is the pipe buffer the polled backend has in the kernel."""

    def __init__(self, fd: int) -> None:
        make_blocking(fd)
        self._fd = fd
        self._writer: WriterThread | None = None
        self._on_writable: Callable[[], None] = _nothing
        self._wanted = False
        self.holding = False

    def start(self, loop: asyncio.AbstractEventLoop, on_writable: Callable[[], None], on_broken: Callable[[OSError], None]) -> None:
        self._on_writable = on_writable
        from ..layers._stdio_threads import WriterThread

        # The thread owns its own duplicate (see _stdio_threads, "Each thread owns its descriptor").
        self._writer = WriterThread(os.dup(self._fd), loop, on_taken=_ignore, on_batch_done=self._written, on_error=on_broken,
                                    chunk=THREAD_WRITE_BYTES)
        self._writer.start()

    def send_some(self, buffers: Sequence[Buffer], /) -> int:
        if self.holding:
            raise BlockingIOError(errno.EAGAIN, "the writer thread is busy")
        assert self._writer is not None
        parts: list[Buffer] = []
        size = 0
        for buffer in buffers:
            room = THREAD_WRITE_BYTES - size
            if room <= 0:
                break
            part = buffer if len(buffer) <= room else memoryview(buffer)[:room]
            parts.append(part)
            size += len(part)
        self.holding = True
        self._writer.submit([b"".join(parts)])  # a copy: the caller's buffers move on
        return size

    def _written(self) -> None:
        assert self._writer is not None
        self._writer.busy = False
        self.holding = False
        if self._wanted:
            self._on_writable()

    def want_writable(self, wanted: bool) -> None:
        self._wanted = wanted

    def close(self) -> None:
        self._wanted = False
        self.holding = False
        if self._writer is not None:
            self._writer.stop()  # after its current write, if any; it then closes its descriptor


def _ignore(_written: int) -> None:
    pass


# --- in memory, for tests -------------------------------------------------------------------------


class MemoryInput:
    """The server's input in memory (a ``ReceiveStream``): the test is the client writing to it.

    ``send`` never blocks; ``unread`` is what the server has not read yet, so a test sees reading
    stop while the session holds input, as a client's write would block on a full pipe.
    """

    def __init__(self) -> None:
        self._data = bytearray()
        self._ended = False
        self._readable: asyncio.Event | None = None
        self.closed = False  # the server stopped reading

    def send(self, data: bytes) -> None:
        """The client writes ``data``."""
        assert not self._ended, "input already ended"
        self._data += data
        self._signal()

    def end(self) -> None:
        """The client closes its side (EOF once the server has read the rest)."""
        self._ended = True
        self._signal()

    @property
    def unread(self) -> int:
        return len(self._data)

    def _signal(self) -> None:
        if self._readable is not None and (self._data or self._ended):
            self._readable.set()

    def receive_some(self, max_bytes: int, /) -> bytes:
        if not self._data and not self._ended:
            raise BlockingIOError(errno.EAGAIN, "the test has sent nothing more yet")
        data = bytes(self._data[:max_bytes])
        del self._data[:max_bytes]
        return data

    def when_readable(self) -> asyncio.Event:
        self._readable = asyncio.Event()
        self._signal()
        return self._readable

    def hold(self) -> None:
        self._readable = None

    def close(self) -> None:
        self.closed = True
        self._readable = None


class MemoryOutput:
    """The server's output in memory (a ``SendStream``): the test is the client reading lines.

    Backpressure as with a pipe: the stream takes at most ``pipe_bytes`` the test has not read
    (``send_some`` is short, then raises ``BlockingIOError``), and calls ``on_writable`` once the
    test reads. ``close_by_client()`` is a client closing stdout: the next write breaks.
    """

    holding = False

    def __init__(self, *, pipe_bytes: int = MEMORY_PIPE_BYTES) -> None:
        self._data = bytearray()  # in the "pipe": written, not read yet
        self._received = bytearray()  # read by the client, not yet a whole line
        self._changed = asyncio.Event()
        self._pipe_bytes = pipe_bytes
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_writable: Callable[[], None] = _nothing
        self._on_broken: Callable[[OSError], None] = _ignore_error
        self._wanted = False
        self.broken = False  # the client closed it
        self.closed = False  # the server closed it: no more lines after those unread

    @property
    def unread(self) -> int:
        """Bytes in the "pipe": written by the server, not read by the client."""
        return len(self._data)

    async def receive_line(self) -> bytes | None:
        """The next line the server wrote, with its newline; ``None`` once the server closed the
        output and every whole line was read. Like a client reading the pipe, it takes whatever
        is in it (making room) until a line is whole."""
        while b"\n" not in self._received:
            if self._data:
                self._received += self._data
                self._data.clear()
                if self._wanted and self._loop is not None:
                    self._loop.call_soon(self._on_writable)
                continue
            if self.closed or self.broken:
                return None
            self._changed.clear()
            await self._changed.wait()
        end = self._received.index(b"\n") + 1
        line = bytes(self._received[:end])
        del self._received[:end]
        return line

    def close_by_client(self) -> None:
        """The client closes the server's stdout: noticed at once, as a pipe's reader gone."""
        self.broken = True
        self._changed.set()
        if self._loop is not None and not self.closed:
            self._loop.call_soon(self._on_broken, BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE)))

    def start(self, loop: asyncio.AbstractEventLoop, on_writable: Callable[[], None], on_broken: Callable[[OSError], None]) -> None:
        self._loop, self._on_writable, self._on_broken = loop, on_writable, on_broken

    def send_some(self, buffers: Sequence[Buffer], /) -> int:
        if self.broken:
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
        room = self._pipe_bytes - len(self._data)
        if room <= 0:
            raise BlockingIOError(errno.EAGAIN, "the test has not read its lines")
        taken = 0
        for buffer in buffers:
            if taken >= room:
                break
            piece = memoryview(buffer)[: room - taken]
            self._data += piece
            taken += len(piece)
        self._changed.set()
        return taken

    def want_writable(self, wanted: bool) -> None:
        self._wanted = wanted

    def close(self) -> None:
        self.closed = True
        self._wanted = False
        self._changed.set()


def _ignore_error(_exc: OSError) -> None:
    pass
