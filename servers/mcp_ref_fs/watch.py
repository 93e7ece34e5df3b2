"""Change detection for subscriptions, running only while someone listens.

Spec: basic/patterns/subscriptions and server/resources#subscriptions (2026-07-28).

The library tells us, through ``Server.on_watch``, what open listen streams (and legacy
``resources/subscribe`` calls) currently want: a set of resource URIs and the lists whose
changes they want announced. When that set is empty nothing runs. When it is not, one thread
watches every root with ``watchfiles`` (inotify on Linux, FSEvents on macOS,
ReadDirectoryChangesW on Windows, polling where none works) and turns the batches it reports
into ``notifications/resources/updated`` for subscribed files (written, replaced or deleted,
by a tool or by any other program, or moved away with a directory above them) and
``notifications/resources/list_changed`` when files appear or disappear. The batch window is
short (``STEP_MS`` of quiet, at most ``DEBOUNCE_MS``), so a change is announced well within a
second. Every change counts: no names are filtered out (``watchfiles``' default filter would hide
``*.swp``, ``*~``, ``.git/`` and ``node_modules/``, which are files like any other here).

No gap after the acknowledgement: the library calls ``update`` right after it wrote a stream's
acknowledgement, but setting up a recursive watch takes time (the kernel needs one watch per
directory). So ``update`` notes the time and a fingerprint (inode, size, times) of each
subscribed file before starting, and once the watch is in place the thread compares: a file whose
fingerprint changed meanwhile is announced, and so is a list change when some directory was
modified since that time. A change made the moment a client saw its acknowledgement is therefore
never missed (at worst announced once more). The same catch-up follows a batch ``watchfiles``
could not deliver (it fails on a name that is not UTF-8): the thread watches again and announces
what changed since the last batch it did deliver.

The watch runs in its own thread (``watchfiles.watch``), so building it over a large tree never
stalls the event loop; notifications go through the server's thread-safe ``notify_*`` methods.
``watchfiles`` is imported only when the first subscriber arrives, so cold start does not pay for
it. With ``MCP_REF_LOG_LEVEL=DEBUG`` the log says "watch started" and "watch stopped".

Why ``watchfiles`` rather than polling ``stat`` of the subscribed files: list changes need the
whole tree watched, which polling can only do by walking it again and again; the kernel's
notification interface costs nothing while the disk is quiet.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from .resources import location_uri, uri_path
from .root import FsError, Location, _under

if TYPE_CHECKING:
    from mcp_ref import Server

    from .root import Sandbox

log = logging.getLogger("mcp_ref_fs.watch")

DEBOUNCE_MS = 500
STEP_MS = 50
# Rebuilding a watch that failed: at most this many times in a row without a batch delivered.
MAX_RESTARTS = 5
# File-system timestamps come from a coarse clock that may lag the precise one by a tick (a few
# ms); a directory modified up to this long before a watch started counts as modified after it.
CLOCK_SLACK_NS = 50_000_000


class _Stop:
    """One watch's ``stop_event`` for ``watchfiles``, which asks ``is_set()`` on every step of its
    wait, the first time once the watch is in place: that first call runs ``on_ready`` (the
    catch-up). Also holds ``baseline``: until the watch is in place, the fingerprints of subscribed
    files as they were when subscribed (None once taken; guarded by ``Watcher._lock``)."""

    def __init__(self, baseline: dict[str, Any]) -> None:
        self.event = threading.Event()
        self.on_ready: Callable[[], None] | None = None
        self.baseline: dict[str, Any] | None = baseline

    def is_set(self) -> bool:
        ready, self.on_ready = self.on_ready, None
        if ready is not None:
            try:
                ready()
            except Exception:  # pragma: no cover - a catch-up failure must not end the watch
                log.exception("catching up with changes made while the watch started failed")
        return self.event.is_set()

    def set(self) -> None:
        self.event.set()


class Watcher:
    """Starts a watch on the first subscriber and stops it after the last one leaves."""

    def __init__(self, server: Server, sandbox: Sandbox) -> None:
        self.server = server
        self.sandbox = sandbox
        self._subscribed: dict[str, list[str]] = {}  # canonical URI -> the URIs clients sent
        self._lists = False
        self._thread: threading.Thread | None = None
        self._stop: _Stop | None = None
        self._lock = threading.Lock()  # guards _Stop.baseline: update() adds to it, the thread takes it

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._stop is not None and not self._stop.event.is_set()

    def update(self, watched: Any) -> None:
        """``Server.on_watch`` hook: adopt the new set; start or stop the watch to match."""
        subscribed: dict[str, list[str]] = {}
        for uri in watched.resource_uris:
            canonical = self._canonical(uri)
            if canonical is not None:
                subscribed.setdefault(canonical, []).append(uri)
        self._lists = "resources" in watched.lists
        wanted = bool(subscribed) or self._lists
        if wanted and not self.running:
            since = time.time_ns()
            stop = _Stop({canonical: self._fingerprint(canonical) for canonical in subscribed})
            self._subscribed = subscribed
            thread = threading.Thread(target=self._run, args=(stop, since), name="mcp-ref-fs-watch", daemon=True)
            self._stop, self._thread = stop, thread
            log.debug("watch started: %d root(s), %d subscribed file(s), list changes %s",
                      len(self.sandbox.roots), len(subscribed), "wanted" if self._lists else "not wanted")
            thread.start()
            return
        self._subscribed = subscribed
        with self._lock:
            baseline = self._stop.baseline if self._stop is not None else None
            if baseline is not None:  # started, not yet in place: remember newcomers' state
                for canonical in subscribed.keys() - baseline.keys():
                    baseline[canonical] = self._fingerprint(canonical)
        if not wanted and self.running:
            assert self._stop is not None
            self._stop.set()  # the thread notices within STEP_MS and logs "watch stopped"
            self._thread = None

    def _canonical(self, uri: str) -> str | None:
        """One spelling per file, so ``%7E`` and ``~`` or the two root spellings match."""
        try:
            return location_uri(self.sandbox.locate(uri_path(uri)))
        except (ValueError, FsError):  # UnicodeError is a ValueError
            return None

    def _fingerprint(self, canonical: str) -> Any:
        """What a subscribed file is right now, to tell later whether it changed (None: absent)."""
        try:
            _location, info = self.sandbox.stat(uri_path(canonical))
        except (ValueError, FsError):
            return None
        return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)

    def _uri_of(self, real_path: str) -> str | None:
        for root in self.sandbox.roots:
            parts = _under(real_path, root.real)
            if parts is not None:
                try:
                    return location_uri(Location(root, parts))
                except UnicodeError:  # a name that is not UTF-8 has no URI
                    return None
        return None

    # --- the watch thread ---------------------------------------------------------------------------

    def _run(self, stop: _Stop, since: int) -> None:
        """The watch thread: watch, announce, and rebuild the watch if ``watchfiles`` fails on a
        batch (it does, for one, on a name that is not UTF-8), catching up with the lost batch."""
        failures = 0
        try:
            import watchfiles

            paths = [root.real for root in self.sandbox.roots]
            while not stop.event.is_set():

                def ready(since: int = since) -> None:
                    nonlocal failures
                    failures = 0
                    self._catch_up(stop, since)

                stop.on_ready = ready
                try:
                    for changes in watchfiles.watch(*paths, watch_filter=None, debounce=DEBOUNCE_MS, step=STEP_MS,
                                                    stop_event=stop, rust_timeout=0, raise_interrupt=False,
                                                    recursive=True, ignore_permission_denied=True):
                        since, failures = time.time_ns(), 0  # later changes come in a later batch
                        if stop.event.is_set():
                            break
                        self._announce(changes)
                    return
                except Exception as error:
                    failures += 1
                    if failures > MAX_RESTARTS:
                        raise  # not a bad batch: the watch cannot be set up at all (a root vanished?)
                    log.warning("file watching failed (%s); watching again", error)
                with self._lock:  # what the lost batch held is caught up once the new watch is in place
                    if stop.baseline is None:
                        stop.baseline = {canonical: self._fingerprint(canonical) for canonical in self._subscribed}
                stop.event.wait(failures * STEP_MS / 1000)
        except Exception:  # a watch that dies must not take the server with it
            log.exception("file watching failed; subscriptions will not see changes until the next listen")
        finally:
            stop.event.set()
            log.debug("watch stopped")

    def _catch_up(self, stop: _Stop, since: int) -> None:
        """The watch is in place: announce what changed since ``since`` (ns) and the baseline."""
        with self._lock:
            baseline, stop.baseline = stop.baseline or {}, None
        if stop.event.is_set():
            return
        subscribed = self._subscribed
        since -= CLOCK_SLACK_NS
        updated = {uri for canonical, before in baseline.items() if canonical in subscribed
                   and self._changed_since(canonical, before, since) for uri in subscribed[canonical]}
        for uri in sorted(updated):
            self.server.notify_resource_updated(uri)
        if self._lists and self._directory_modified_since(since, stop):
            self.server.notify_list_changed("resources")

    def _changed_since(self, canonical: str, before: Any, since_ns: int) -> bool:
        """Did a subscribed file change after ``before`` was taken, or (since the client may act on
        its acknowledgement before ``update`` runs) at about the time its watch started?"""
        now = self._fingerprint(canonical)
        if now != before:
            return True
        if now is not None:
            return max(now[3], now[4]) >= since_ns  # modified or replaced
        parent = canonical[: canonical.rfind("/")]  # absent: was it deleted or moved away just now?
        try:
            return self.sandbox.stat(uri_path(parent))[1].st_mtime_ns >= since_ns
        except (ValueError, FsError):
            return False

    def _directory_modified_since(self, since_ns: int, stop: _Stop) -> bool:
        threshold = since_ns / 1e9
        for index, root in enumerate(self.sandbox.roots):
            try:
                if self.sandbox.stat(root.display)[1].st_mtime_ns >= since_ns:
                    return True
                walk = self.sandbox.walk(self.sandbox.root_location(index))
            except FsError:
                continue
            try:
                for _components, entry in walk:
                    if stop.event.is_set():
                        return False
                    if entry.kind == "directory" and entry.mtime >= threshold:
                        return True
            except FsError:
                continue
            finally:
                walk.close()
        return False

    def _announce(self, changes: set[tuple[Any, str]]) -> None:
        subscribed = self._subscribed
        list_changed = False
        touched: set[str] = set()  # URIs of everything that changed
        moved: set[str] = set()  # URIs of what appeared or vanished (a directory takes its files along)
        for change, path in changes:
            uri = self._uri_of(path)
            appeared_or_vanished = change.name in ("added", "deleted")
            list_changed = list_changed or appeared_or_vanished
            if uri is not None:
                touched.add(uri)
                if appeared_or_vanished:
                    moved.add(uri)
        updated: set[str] = set()
        for canonical, uris in subscribed.items():
            if canonical in touched or (moved and _has_ancestor_in(canonical, moved)):
                updated.update(uris)
        for uri in sorted(updated):
            self.server.notify_resource_updated(uri)
        if list_changed and self._lists:
            self.server.notify_list_changed("resources")


def _has_ancestor_in(uri: str, uris: set[str]) -> bool:
    """Is some directory above ``uri`` (a canonical ``file://`` URI, ``/``-separated) in ``uris``?"""
    end = uri.rfind("/")
    while end > len("file://"):
        if uri[:end] in uris:
            return True
        end = uri.rfind("/", 0, end)
    return False
