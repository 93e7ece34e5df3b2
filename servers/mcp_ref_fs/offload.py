"""Running blocking file work off the event loop, so one big walk never stalls other requests.

Small operations (an ``openat``, a ``stat``, reading a few KiB) take microseconds and run on the
loop: a thread hop would cost more than the work. Anything proportional to the size of a tree or
of a large file runs in a worker thread through :func:`off_loop`, which also makes it stop
promptly when the request is cancelled: the work receives a ``stop()`` callable and checks it
between entries; cancelling the awaiting task sets it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, TypeVar

if TYPE_CHECKING:
    from .root import AtomicReplace, OpenFile

T = TypeVar("T")

# Reads and writes at or below this size happen on the event loop; larger ones in a thread
# (aiofiles). Measured on the 2-core reference machine (file in the page cache, median): an
# os.pread takes 0.5 us for 4 KiB, 1.9 us for 64 KiB, 26 us for 1 MiB and 355 us for 8 MiB,
# while the same read through aiofiles takes 230-300 us up to 1 MiB and 730 us for 8 MiB. Up
# to 1 MiB the thread round trip costs more than the loop would wait; above it, the bytes go
# to a thread so that a slow disk or a network mount cannot hold up other requests for long.
IN_LOOP_READ_BYTES = 1024 * 1024

_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(4, thread_name_prefix="mcp-ref-fs-walk")
    return _pool


class Stopped(Exception):
    """The work saw ``stop()`` become true (cancelled, or past its deadline) and gave up."""


class Stop:
    """What blocking work polls: true once the request is cancelled or its deadline passed.

    With ``task_seconds``, a call that has become a task (``in_task()`` turns true; the tasks
    extension) gets that longer limit instead, counted from the same start: no host timeout
    waits on a task, so a big search may run to the end.
    """

    def __init__(self, seconds: float | None, task_seconds: float | None = None, in_task: Callable[[], bool] | None = None) -> None:
        self._event = threading.Event()
        started = time.monotonic()
        self._deadline = None if seconds is None else started + seconds
        self._task_deadline = None if task_seconds is None else started + task_seconds
        self._in_task = in_task
        self.timed_out = False

    @property
    def deadline(self) -> float | None:
        """The monotonic time the work must stop at (None: no limit), as of now."""
        if self._task_deadline is not None and self._in_task is not None and self._in_task():
            return max(self._task_deadline, self._deadline or 0.0)
        return self._deadline

    def __call__(self) -> bool:
        if self._event.is_set():
            return True
        deadline = self.deadline
        if deadline is not None and time.monotonic() > deadline:
            self.timed_out = True
            return True
        return False

    def set(self) -> None:
        self._event.set()


async def off_loop(work: Callable[[Stop], T], *, seconds: float | None = None, task_seconds: float | None = None,
                   in_task: Callable[[], bool] | None = None) -> T:
    """Run ``work(stop)`` in a worker thread and return its result; cancellation sets ``stop``.
    ``seconds`` limits it (``task_seconds`` once ``in_task()``, see ``Stop``)."""
    stop = Stop(seconds, task_seconds, in_task)
    future = asyncio.get_running_loop().run_in_executor(_executor(), work, stop)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        stop.set()  # the thread notices at its next check and returns; nothing waits for it
        # Nobody awaits the worker's outcome any more: retrieve it when it comes, so an error the
        # abandoned work raises is not logged as "exception was never retrieved".
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        raise


async def read_start(opened: OpenFile, length: int) -> bytes:
    """Up to ``length`` bytes from the start of an open file: on the loop when small, else in a
    thread through aiofiles (imported on first use, so cold start does not pay for it)."""
    if length <= IN_LOOP_READ_BYTES:
        return opened.read_at(0, length)
    import aiofiles

    async with aiofiles.open(opened.fd, "rb", closefd=False) as stream:
        await stream.seek(0)
        return await stream.read(length)


async def write_all(replacement: AtomicReplace, data: bytes) -> None:
    """Write ``data`` to an atomic replacement's temporary file, in a thread when large."""
    if len(data) <= IN_LOOP_READ_BYTES:
        replacement.write(data)
        return
    import aiofiles

    async with aiofiles.open(replacement.fd, "wb", closefd=False) as stream:
        await stream.write(data)
