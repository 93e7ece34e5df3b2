"""Running blocking file work off the event loop, so one big walk never stalls other requests.

Small operations (an ``openat``, a ``stat``, reading a few KiB) take microseconds and run on the
loop: a thread hop would cost more than the work. A sandbox operation goes through
``root.sandboxed``, which runs it on the loop only while its lookups stay within a few dozen
system calls and otherwise, before it has changed anything, again in a thread (through
:func:`off_loop`): resolving a path through a deep tree or a chain of links can take thousands. Anything proportional to the size of a tree or
of a large file runs in a worker thread through :func:`off_loop`, which also makes it stop
promptly when the request is cancelled: the work receives a ``stop()`` callable and checks it
between entries; cancelling the awaiting task sets it.

No request keeps the others from a thread. At most ``WORKERS`` jobs run at once, and work that may
run for seconds (``long=True``: trees, name and content searches, which may use their whole time
limit, and edits) takes at most ``WORKERS - 1`` of those places, so the other work (listings,
reads, writes: short) always finds one. A cancelled job gives its place up at once: its thread
still finishes, at the job's next ``stop()`` check, but no longer counts, and up to ``ABANDONED``
such threads run beside the ``WORKERS`` live ones (the pool has ``WORKERS + ABANDONED``
threads). So cancelled work cannot starve the requests that follow it, whether or not it has
noticed its cancellation yet.
"""

from __future__ import annotations

import asyncio
import sys
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from .root import OpenFile

T = TypeVar("T")

# Reads at or below this size happen on the event loop; larger ones in a thread (aiofiles).
# Measured on the 2-core reference machine (file in the page cache, median): an os.pread takes
# 0.5 us for 4 KiB, 1.9 us for 64 KiB, 26 us for 1 MiB and 355 us for 8 MiB, while the same read
# through aiofiles takes 230-300 us up to 1 MiB and 730 us for 8 MiB. Up to 1 MiB the thread
# round trip costs more than the loop would wait; above it, the bytes go to a thread so that a
# slow disk or a network mount cannot hold up other requests for long.
IN_LOOP_READ_BYTES = 1024 * 1024

# Walks over names (trees, name searches) take runs of at most this many entries of one directory
# (``Sandbox.walk_runs``): they see a cancellation at the next run (``stop.cancelled``, an
# attribute) and read the clock, ``stop()``, before the first run and then once this many entries
# have passed: the time limit is still noticed within well under a millisecond, and a search of
# 10,000 names saves the ~1.5 ms (10 %) that a call per entry costs.
STOP_EVERY = 100

WORKERS = 4  # jobs running at once (long ones: one fewer)
ABANDONED = 8  # threads still finishing cancelled jobs, beside the live ones

_pool: ThreadPoolExecutor | None = None
# Per event loop (tests run several): (places for any job, places for long jobs).
_places: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[asyncio.Semaphore, asyncio.Semaphore]] = \
    weakref.WeakKeyDictionary()


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        # Imported on first use: start-up and small requests never need the thread pool.
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(WORKERS + ABANDONED, thread_name_prefix="mcp-ref-fs-walk")
    return _pool


def _places_of(loop: asyncio.AbstractEventLoop) -> tuple[asyncio.Semaphore, asyncio.Semaphore]:
    places = _places.get(loop)
    if places is None:
        places = _places[loop] = (asyncio.Semaphore(WORKERS), asyncio.Semaphore(WORKERS - 1))
    return places


class Stopped(Exception):
    """The work saw ``stop()`` become true (cancelled, or past its deadline) and gave up."""


class Stop:
    """What blocking work polls: true once the request is cancelled or its deadline passed.

    With ``task_seconds``, a call that has become a task (``in_task()`` turns true; the tasks
    extension) gets that longer limit instead, counted from the same start: no host timeout
    waits on a task, so a big search may run to the end.
    """

    def __init__(self, seconds: float | None, task_seconds: float | None = None, in_task: Callable[[], bool] | None = None) -> None:
        self.cancelled = False  # set() from the event loop's thread; a plain attribute is cheap to poll
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
        if self.cancelled:
            return True
        deadline = self.deadline
        if deadline is not None and time.monotonic() > deadline:
            self.timed_out = True
            return True
        return False

    def set(self) -> None:
        self.cancelled = True

    def check(self) -> None:
        """Raise ``Stopped`` once ``stop()`` is true (for work that checks between steps)."""
        if self():
            raise Stopped()


# With ``at_deadline``, how long past its deadline the work still gets to answer for itself.
DEADLINE_GRACE_SECONDS = 0.05


async def off_loop(work: Callable[[Stop], T], *, seconds: float | None = None, task_seconds: float | None = None,
                   in_task: Callable[[], bool] | None = None, long: bool = False,
                   at_deadline: Callable[[], T] | None = None) -> T:
    """Run ``work(stop)`` in a worker thread and return its result; cancellation sets ``stop``.
    ``seconds`` limits it (``task_seconds`` once ``in_task()``, see ``Stop``); ``long`` marks work
    that may run for seconds (see the module docstring: it never takes the last place).

    The work looks at ``stop()`` between steps, so a step that cannot look (one regular
    expression search in C) could keep it past its deadline, and a process that was stopped or
    starved of CPU would see the deadline late. With ``at_deadline``, the deadline is kept by the
    clock of the event loop instead: once it has passed (by ``DEADLINE_GRACE_SECONDS``) and the
    work has not returned, ``stop`` is set and ``at_deadline()`` (what the work has found so far)
    is the result; the abandoned step ends on its own allowance, its place is given up at once,
    and its result is dropped."""
    stop = Stop(seconds, task_seconds, in_task)
    loop = asyncio.get_running_loop()
    any_job, long_job = _places_of(loop)
    taken: list[asyncio.Semaphore] = []
    try:
        for place in (long_job, any_job) if long else (any_job,):
            await place.acquire()
            taken.append(place)
        future = loop.run_in_executor(_executor(), work, stop)
    except BaseException:
        for place in taken:
            place.release()
        raise

    def give_back(_done: object = None) -> None:
        while taken:
            taken.pop().release()

    future.add_done_callback(give_back)
    try:
        while at_deadline is not None and not future.done():
            deadline = stop.deadline
            if deadline is None:
                break
            done, _ = await asyncio.wait((future,), timeout=max(0.0, deadline + DEADLINE_GRACE_SECONDS - time.monotonic()))
            if not done and stop.deadline == deadline:  # not extended meanwhile (a call that became a task)
                stop.timed_out = True
                _abandon(stop, future, give_back)
                return at_deadline()
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        _abandon(stop, future, give_back)
        raise


def _abandon(stop: Stop, future: asyncio.Future[Any], give_back: Callable[[], None]) -> None:
    stop.set()  # the thread notices at its next check and returns; nothing waits for it
    give_back()  # and it no longer holds a place (module docstring)
    # Nobody awaits the worker's outcome any more: retrieve it when it comes, so an error the
    # abandoned work raises is not logged as "exception was never retrieved".
    future.add_done_callback(lambda done: done.cancelled() or done.exception())


async def read_start(opened: OpenFile, length: int) -> bytes:
    """Up to ``length`` bytes from the start of an open file: on the loop when small, else in a
    thread through aiofiles (imported on first use, so cold start does not pay for it)."""
    if length <= IN_LOOP_READ_BYTES:
        return opened.read_at(0, length)
    keep_freed_memory()
    import aiofiles

    async with aiofiles.open(opened.fd, "rb", closefd=False) as stream:
        await stream.seek(0)
        return await stream.read(length)


# --- large reads and the C allocator -------------------------------------------------------------

# Freed memory is kept this long after the last large read began, then given back: long enough for
# the next call of a model working through several files (calls come seconds apart), short enough
# that an idle server returns to its idle size.
KEEP_SECONDS = 30.0
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (glibc's malloc.h)
_allocator: tuple[Callable[[int, int], int], Callable[[int], int]] | bool | None = None  # (mallopt, malloc_trim)
_give_back_timer: asyncio.TimerHandle | None = None


def keep_freed_memory() -> None:
    """Let the C allocator keep freed memory for the next large read, and give it back once
    ``KEEP_SECONDS`` pass without one. Called by each large read (on the event loop).

    An 8 MiB binary becomes four fresh buffers of 8-11 MiB on its way out (the bytes, their base64,
    that as text, the line written). glibc serves blocks that big with ``mmap`` and unmaps them when
    freed, or trims them off its heap, so each read page-faults ~40 MiB of zeroed memory again: the
    server spent ~25 ms of CPU per read on the reference machine, ~10 ms with the memory kept. So from
    the first large read on, blocks under 32 MiB come from the heap (``M_MMAP_THRESHOLD``), which
    keeps up to 64 MiB free (``M_TRIM_THRESHOLD``); and ``malloc_trim`` returns everything free,
    in every arena, ``KEEP_SECONDS`` after the last large read, so a burst of reads (concurrent ones
    too) does not leave the server at its peak size. Linux with glibc only; a no-op elsewhere.
    """
    global _allocator, _give_back_timer
    if _allocator is None:
        _allocator = allocator = _glibc_allocator()
        if isinstance(allocator, tuple):
            mallopt = allocator[0]
            mallopt(_M_MMAP_THRESHOLD, 32 * 1024 * 1024)  # glibc's maximum
            mallopt(_M_TRIM_THRESHOLD, 64 * 1024 * 1024)
    if not _allocator:
        return
    if _give_back_timer is not None:
        _give_back_timer.cancel()
    _give_back_timer = asyncio.get_running_loop().call_later(KEEP_SECONDS, _give_back)


def _give_back() -> None:
    global _give_back_timer
    _give_back_timer = None
    assert isinstance(_allocator, tuple)
    _allocator[1](0)  # malloc_trim(0): a few ms at most, once per burst


def _glibc_allocator() -> tuple[Callable[[int, int], int], Callable[[int], int]] | bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        return libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):  # musl and others: no malloc_trim
        return False
