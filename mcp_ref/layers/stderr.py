"""stderr for a server whose host may never read it: writes that never block, logs that input
cannot inflate.

Spec: basic/transports/stdio (the server MAY log to stderr; the client may ignore it).

Theory of operation
-------------------
A host may pipe a server's stderr and never read it. Once that pipe is full (64 KiB on Linux),
an ordinary write blocks, and a server that logs from its event loop stops serving. So:

* ``StderrSink`` never blocks. It asks the kernel whether fd 2 can take bytes (``poll`` with a
  zero timeout) and writes at most ``PIPE_BUF`` bytes at a time, which a pipe that polls
  writable always takes at once. What does not fit waits in a small backlog
  (``BACKLOG_BYTES``); writes that do not fit there either are dropped and counted, and the next
  write that gets through starts with one "N log messages dropped" line. fd 2 itself is never
  made non-blocking: its open file description is shared with the host (a terminal, say).
  Where ``poll`` does not exist (Windows), a daemon writer thread does the blocking writes
  instead: ``write`` only appends to the same bounded backlog (dropping and counting past it),
  so the caller still never blocks.
* ``StderrHandler`` is the ``logging`` handler writing through the sink. A record is cut to
  ``RECORD_MAX_CHARS`` (its head and its tail kept: the end of a traceback says most).
* ``RepeatLimiter``, a filter on that handler, lets each call site of mcp_ref's own logging
  through ``REPEAT_BURST`` times, then once per ``REPEAT_INTERVAL_SECONDS``; the records in
  between are counted, and the count is written with the next record from that site that passes
  (and by ``report_suppressed`` at exit). 4 MiB of malformed input lines, each worth a warning,
  so cost a few dozen lines of stderr, not 150 MB. Keys are call sites (file, line, level), never
  message text, so client input cannot mint new keys. What handlers log (``ctx.log``, whose
  logger is ``mcp_ref.requests``, or their own loggers) is the server author's to pace, and is
  not limited.
* ``DivertedStdout`` stands in for ``sys.stdout`` while the transport serves: a stray ``print()``
  goes to stderr through the same sink, so it cannot block the event loop either. (C code
  writing to fd 1 directly still does a plain, blocking write to stderr.)

Thread safety: synchronous handlers run on worker threads and log too, so the sink serialises
writes with a lock, and the limiter's counters have one of their own.
"""

from __future__ import annotations

import io
import logging
import os
import select
import stat
import threading
import time
from typing import Any

# Bytes kept for a stderr that is momentarily full; beyond this, messages are dropped and counted.
BACKLOG_BYTES = 64 * 1024
# A pipe that polls writable takes this many bytes without blocking (POSIX PIPE_BUF).
_PIPE_CHUNK = getattr(select, "PIPE_BUF", 512)
# A log record longer than this is cut in the middle (a traceback's tail is kept whole).
RECORD_MAX_CHARS = 8192
_RECORD_HEAD_CHARS = 2048
# Per logging call site: this many records at once, then one per interval; the rest are counted.
REPEAT_BURST = 10
REPEAT_INTERVAL_SECONDS = 1.0
# Call sites tracked by the limiter before it starts afresh (call sites are code, so a few hundred
# at most; the bound is only a guard).
_MAX_TRACKED_SITES = 4096


class StderrSink:
    """Non-blocking, thread-safe writes of whole lines to a file descriptor (fd 2 by default).

    ``threaded``: write through a daemon thread (the default where ``select.poll`` is missing).
    """

    def __init__(self, fd: int = 2, *, threaded: bool | None = None) -> None:
        self.fd = fd
        self.dropped = 0  # messages dropped since the last "dropped" notice got out
        self._backlog = bytearray()
        self._lock = threading.Lock()
        self._broken = False
        self._chunk: int | None = None
        self._threaded = not hasattr(select, "poll") if threaded is None else threaded
        self._changed = threading.Condition(self._lock)  # threaded: backlog filled, or written
        self._writing = False  # threaded: the thread holds bytes taken from the backlog
        self._writer: threading.Thread | None = None

    def write(self, data: bytes) -> None:
        """Write ``data`` (one or more whole lines) now if stderr takes it, keep it for later if
        the backlog has room, else drop it and count it. Never blocks."""
        with self._lock:
            if self._broken:
                return
            if self._threaded:
                self._queue(data)
                return
            if self._backlog:
                self._write_backlog()
            if self._backlog:  # still full
                if len(self._backlog) + len(data) <= BACKLOG_BYTES:
                    self._backlog += data
                else:
                    self.dropped += 1
                return
            if self.dropped:
                data = self._dropped_notice() + data
            written = self._write_now(memoryview(data))
            if written < len(data):
                # Kept whole even past BACKLOG_BYTES: a half-written line must be finished before
                # anything else, or the next line would be glued onto it.
                self._backlog += data[written:]

    def flush(self, timeout: float = 0.0) -> bool:
        """Write what waits (and any "dropped" notice), waiting at most ``timeout`` seconds for
        stderr to take it. True when nothing is left."""
        deadline = time.monotonic() + timeout
        with self._lock:
            if self._threaded:
                if self.dropped and not self._broken:
                    self._queue(b"")
                while (self._backlog or self._writing) and not self._broken:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._changed.wait(remaining)
                return not (self._backlog or self._writing) or self._broken
            if self.dropped and not self._broken:
                self._backlog += self._dropped_notice()
            while self._backlog and not self._broken:
                self._write_backlog()
                remaining = deadline - time.monotonic()
                if not self._backlog or remaining <= 0:
                    break
                self._wait_writable(remaining)
            return not self._backlog or self._broken

    # --- internals (called with the lock held) --------------------------------------------------

    def _dropped_notice(self) -> bytes:
        count, self.dropped = self.dropped, 0
        return f"mcp_ref: {count} log message(s) dropped: stderr was full (is the host reading it?)\n".encode()

    def _queue(self, data: bytes) -> None:
        """Threaded: hand ``data`` to the writer thread through the bounded backlog."""
        if self.dropped and len(self._backlog) + len(data) <= BACKLOG_BYTES // 2:
            data = self._dropped_notice() + data
        if len(self._backlog) + len(data) > BACKLOG_BYTES:
            self.dropped += 1
            return
        self._backlog += data
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_forever, name="mcp-ref-stderr", daemon=True)
            self._writer.start()
        self._changed.notify_all()

    def _write_forever(self) -> None:
        """Threaded: the writer thread. Blocking writes happen here, outside the lock."""
        while True:
            with self._lock:
                while not self._backlog:
                    self._changed.wait()
                data, self._writing = bytes(self._backlog), True
                self._backlog.clear()
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view):]
                broken = False
            except OSError:
                broken = True
            with self._lock:
                self._writing = False
                if broken:
                    self._broken = True
                    self._backlog.clear()
                self._changed.notify_all()
                if broken:
                    return

    def _write_backlog(self) -> None:
        written = self._write_now(memoryview(self._backlog))
        del self._backlog[:written]

    def _write_now(self, data: memoryview) -> int:
        chunk = self._chunk_size()
        written = 0
        while written < len(data) and self._wait_writable(0):
            try:
                written += os.write(self.fd, data[written : written + chunk])
            except (BlockingIOError, InterruptedError):
                break  # fd 2 may share a non-blocking description with stdout (2>&1)
            except OSError:
                self._broken = True  # closed or gone: nothing more can be said on it
                self._backlog.clear()
                break
        return written

    def _wait_writable(self, timeout: float) -> bool:
        poller = select.poll()
        poller.register(self.fd, select.POLLOUT)
        try:
            events = poller.poll(timeout * 1000)
        except InterruptedError:
            return False
        if not events:
            return False
        return bool(events[0][1] & select.POLLOUT) or bool(events[0][1] & (select.POLLERR | select.POLLNVAL))

    def _chunk_size(self) -> int:
        if self._chunk is None:
            try:
                regular = stat.S_ISREG(os.fstat(self.fd).st_mode)
            except OSError:
                regular = False
            self._chunk = 1 << 20 if regular else _PIPE_CHUNK  # a file never blocks
        return self._chunk


class RepeatLimiter(logging.Filter):
    """Lets each logging call site through ``burst`` times, then once per ``interval`` seconds;
    counts the rest and reports the count with the next record from that site that passes."""

    def __init__(
        self,
        burst: int = REPEAT_BURST,
        interval: float = REPEAT_INTERVAL_SECONDS,
        loggers: tuple[str, ...] = ("mcp_ref",),
        exempt: tuple[str, ...] = ("mcp_ref.requests",),
    ) -> None:
        super().__init__()
        self.loggers = loggers  # these loggers and their children are limited...
        self.exempt = exempt  # ...except these (and their children)
        self.burst = burst
        self.interval = interval
        self._sites: dict[tuple[str, int, int], list[Any]] = {}  # site -> [allowance, checked at, suppressed]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if not _within(record.name, self.loggers) or _within(record.name, self.exempt):
            return True
        site = (record.pathname, record.lineno, record.levelno)
        now = time.monotonic()
        with self._lock:
            state = self._sites.get(site)
            if state is None:
                if len(self._sites) >= _MAX_TRACKED_SITES:
                    self._sites.clear()
                state = self._sites[site] = [float(self.burst), now, 0]
            state[0] = min(float(self.burst), state[0] + (now - state[1]) / self.interval)
            state[1] = now
            if state[0] < 1:
                state[2] += 1
                return False
            state[0] -= 1
            record.mcp_ref_suppressed = state[2]  # read by StderrHandler
            state[2] = 0
            return True

    def report_suppressed(self) -> list[str]:
        """One line per call site with records still counted but never reported; resets them."""
        lines = []
        with self._lock:
            for (path, line, _), state in self._sites.items():
                if state[2]:
                    lines.append(f"mcp_ref: {state[2]} more log message(s) from {os.path.basename(path)}:{line} were suppressed (repeated)")
                    state[2] = 0
        return lines


def _within(name: str, loggers: tuple[str, ...]) -> bool:
    return any(name == logger or name.startswith(logger + ".") for logger in loggers)


class StderrHandler(logging.Handler):
    """A ``logging`` handler that writes through a ``StderrSink``: never blocks, bounded per record."""

    def __init__(self, sink: StderrSink, limiter: RepeatLimiter | None = None) -> None:
        super().__init__()
        self.sink = sink
        self.limiter = limiter
        if limiter is not None:
            self.addFilter(limiter)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            if len(text) > RECORD_MAX_CHARS:
                cut = len(text) - RECORD_MAX_CHARS
                text = f"{text[:_RECORD_HEAD_CHARS]} [... {cut} characters cut ...] {text[_RECORD_HEAD_CHARS + cut:]}"
            suppressed = getattr(record, "mcp_ref_suppressed", 0)
            if suppressed:
                text += f"\n  ({suppressed} similar message(s) from the same place were suppressed before this one)"
            self.sink.write((text + "\n").encode("utf-8", "backslashreplace"))
        except Exception:  # pragma: no cover - logging's own convention for a broken record
            self.handleError(record)

    def flush(self) -> None:
        self.sink.flush(0)

    def close(self) -> None:
        """At exit: say what the limiter held back, and give stderr a moment to take the rest."""
        try:
            if self.limiter is not None:
                for line in self.limiter.report_suppressed():
                    self.sink.write((line + "\n").encode())
            self.sink.flush(0.2)
        finally:
            super().close()


class _DivertedBinary(io.RawIOBase):
    """``sys.stdout.buffer`` of a ``DivertedStdout``."""

    def __init__(self, sink: StderrSink) -> None:
        super().__init__()
        self._sink = sink

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        data = bytes(data)
        self._sink.write(data)
        return len(data)


class DivertedStdout(io.TextIOBase):
    """What ``sys.stdout`` is while the transport serves: text goes to stderr, never blocking."""

    def __init__(self, sink: StderrSink, fileno: int = 1) -> None:
        super().__init__()
        self._sink = sink
        self._fileno = fileno
        self.buffer = _DivertedBinary(sink)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return "backslashreplace"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            self._sink.write(text.encode("utf-8", "backslashreplace"))
        return len(text)

    def fileno(self) -> int:
        return self._fileno  # fd 1, which points at stderr while the transport serves

    def isatty(self) -> bool:
        return False


# The process's one sink for fd 2: the log handler and the diverted stdout share it, so their
# lines never interleave mid-line and share one backlog.
_sink: StderrSink | None = None
_sink_lock = threading.Lock()


def shared_sink() -> StderrSink:
    """The process-wide sink for fd 2."""
    global _sink
    with _sink_lock:
        if _sink is None:
            _sink = StderrSink(2)
        return _sink
