"""The threads synchronous handlers run on: a small pool of daemon threads.

Theory of operation
-------------------
``Server.invoke`` runs a plain ``def`` handler here (``loop.run_in_executor``), so it never
blocks the event loop. The pool is ``concurrent.futures.ThreadPoolExecutor`` in all but one
respect: its threads are daemons. The interpreter joins every other thread at exit (and
``ThreadPoolExecutor`` joins its workers), so one handler that ignores ``ctx.cancelled`` would hold
the process long after the client is gone; a daemon is left behind instead, and the process ends
normally (``stdio.run_stdio`` waits a moment for cancelled handlers first, and leaves fd 1 pointed
at stderr while one still runs, so its prints cannot reach the client's stdout).

A thread is started when work arrives and no thread is idle, up to ``max_workers``; threads then
wait for more work until ``shutdown``.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Executor, Future
from typing import Any, Callable

_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonThreadPool(Executor):
    """An ``Executor`` of at most ``max_workers`` daemon threads (see the module docstring)."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "mcp-ref-handler") -> None:
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)  # released by each thread that waits for work
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._shut_down = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._shut_down:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._work.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max_workers:
                thread = threading.Thread(target=self._serve, name=f"{self._prefix}_{len(self._threads)}", daemon=True)
                thread.start()
                self._threads.append(thread)
        return future

    def _serve(self) -> None:
        while (work := self._work.get()) is not None:
            future, fn, args, kwargs = work
            del work
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del future, fn, args, kwargs  # nothing of the last call stays alive while waiting
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut_down = True
            if cancel_futures:
                while True:
                    try:
                        work = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if work is not None:
                        work[0].cancel()
            for _ in self._threads:
                self._work.put(None)
        if wait:
            for thread in self._threads:
                thread.join()
