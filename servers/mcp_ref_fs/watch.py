"""Change detection for subscriptions, running only while someone listens.

Spec: basic/patterns/subscriptions and server/resources#subscriptions (2026-07-28).

The library tells us, through ``Server.on_watch``, what open listen streams (and legacy
``resources/subscribe`` calls) currently want: a set of resource URIs and the lists whose
changes they want announced. When that set is empty nothing runs. When it is not, one thread
watches the directories of the roots with ``watchfiles`` (inotify on Linux, FSEvents on macOS,
ReadDirectoryChangesW on Windows, polling where none works) and turns the batches it reports
into ``notifications/resources/updated`` for subscribed files (written, replaced or deleted,
by a tool or by any other program, or moved away with a directory above them) and
``notifications/resources/list_changed`` when files appear or disappear. The batch window is
short (``STEP_MS`` of quiet, at most ``DEBOUNCE_MS``), so a change is announced well within a
second. Every change counts: no names are filtered out (``watchfiles``' default filter would hide
``*.swp``, ``*~``, ``.git/`` and ``node_modules/``, which are files like any other here) except the
server's own temporary files (``.mcp-ref-<16 hex>.tmp``, :mod:`.rewrite`), which nothing lists.

What is watched, and why never ``watchfiles``' recursive mode: to watch a tree recursively,
``watchfiles`` (the ``notify`` crate) walks it and follows every symbolic link on the way, with no
option to stop that. A link from a root to a directory outside it therefore put a kernel watch on
every directory of the outside tree (a link to ``/`` exhausts the user's inotify watches, which
breaks file watching for every program of that user) and announced changes made there. So the
watch thread lists the directories itself, with the sandbox's confined walk (``Sandbox.walk``,
which never enters a linked directory), and hands each one to ``watchfiles`` with
``recursive=False``: one kernel watch per real directory inside a root, none outside. There are at
most ``MAX_WATCHED_DIRECTORIES`` of them (20,000, and never more than half of the user's inotify
watch limit where Linux tells it, ``/proc/sys/fs/inotify/max_user_watches``). A larger tree is
watched in part: the thread logs one warning and, for as long as that watch runs, watches only the
roots and the directories of the subscribed files (the nearest one that exists above each), so
subscribed files are still followed but files that appear or vanish elsewhere are not announced.
A non-recursive watch does not grow with the tree: when a batch holds a directory that appeared
(created or moved in) or a watched one that vanished (deleted, or moved away: its kernel watch
would go on reporting under the old name), the thread builds the watch again from a fresh walk,
at most once per batch, and catches up as below.

Every path a batch reports is checked before anything is announced: it must lie, lexically,
inside a root, and the directory holding it must open through the sandbox (confined: no link
leaving the root on the way, ``Sandbox.locate_directory``). A change reported under a directory that
was swapped for a link since it was watched, or that no longer exists, is dropped; what vanished
with a directory is announced through the entry of the directory itself, which its parent reports.
The kernel resolves a watched path when the watch is placed, so a directory swapped for a link
between the walk and that moment could get an outside directory watched: the swap itself brings a
rebuild (a watched directory vanished) when the watch saw it, and the catch-up brings one when it
did not (a watched directory that is gone or leads outside once the watch is in place).

No gap after the acknowledgement: the library calls ``update`` right after it wrote a stream's
acknowledgement, and ``update`` only notes the time: it never touches the disk, since resolving
thousands of subscribed URIs (deep link chains, say) on the event loop would stall every request
(the URIs are put in canonical form there, pure string work done once per URI). The watch thread
then fingerprints (inode, size, times) each subscribed file, lists the directories, starts the
watch, and once it is in place compares: a file whose fingerprint changed meanwhile, or that was
modified or replaced after the noted time, is announced, and so is one now absent whose nearest
existing directory above was modified since (it was deleted, or moved away with a directory); a
list change is announced when some watched directory was modified since that time, and a
directory that appeared while the watch was being set up has the watch built again. A change made
the moment a client saw its acknowledgement is therefore never missed (at worst announced once
more). The same catch-up follows a rebuild, and a batch ``watchfiles`` could not deliver (it fails
on a name that is not UTF-8): the thread watches again and announces what changed since the last
batch it did deliver.

The watch runs in its own thread (``watchfiles.watch``), so building it over a large tree never
stalls the event loop; notifications go through the server's thread-safe ``notify_*`` methods.
``watchfiles`` is imported only when the first subscriber arrives, so cold start does not pay for
it. With ``MCP_REF_LOG_LEVEL=DEBUG`` the log says "watch started", "watch in place" and "watch
stopped". At interpreter exit the watch is stopped and its thread joined (``Watcher.close``, an
``atexit`` hook): a daemon thread still inside ``watchfiles``' Rust code when the interpreter
finalizes is unwound by force, which aborts the process ("FATAL: exception not rethrown", status
-6) after every answer was already written.

Why ``watchfiles`` rather than polling ``stat`` of the subscribed files: list changes need every
directory watched, which polling can only do by walking the tree again and again; the kernel's
notification interface costs nothing while the disk is quiet.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, TypeVar

from ._act import is_temporary
from .resources import location_uri, uri_path
from .root import AccessDenied, FsError, Location, NotFound, Root

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
# At most this many directories get a kernel watch (and at most half of the user's inotify
# watches, read from INOTIFY_WATCH_LIMIT where it exists); beyond it only the roots and the
# subscribed files' directories are watched.
MAX_WATCHED_DIRECTORIES = 20_000
INOTIFY_WATCH_LIMIT = "/proc/sys/fs/inotify/max_user_watches"

_UNKNOWN = object()  # no fingerprint was taken (subscribed after the watch thread took them)
_T = TypeVar("_T")


def watch_limit() -> int:
    """How many directories a watch may hold: ``MAX_WATCHED_DIRECTORIES``, or half of the user's
    inotify watches when that is fewer (the other half stays for the user's other programs)."""
    try:
        with open(INOTIFY_WATCH_LIMIT) as stream:
            available = int(stream.read())
    except (OSError, ValueError):
        return MAX_WATCHED_DIRECTORIES
    return max(1, min(MAX_WATCHED_DIRECTORIES, available // 2))


class _Stop:
    """One watch thread's ``stop_event`` for ``watchfiles``, which asks ``is_set()`` on every step
    of its wait, the first time once the watch is in place: that first call runs ``on_ready`` (the
    catch-up). ``is_set()`` is also true once ``rebuild`` is set: ``watchfiles`` then returns and
    the thread builds the watch again. ``capped`` and ``watched`` describe the thread's watch:
    whether the tree was too large to watch whole, and the directories it watches."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.rebuild = threading.Event()
        self.on_ready: Callable[[], None] | None = None
        self.capped = False
        self.watched: frozenset[str] = frozenset()

    def is_set(self) -> bool:
        ready, self.on_ready = self.on_ready, None
        if ready is not None:
            try:
                ready()
            except Exception:  # pragma: no cover - a catch-up failure must not end the watch
                log.exception("catching up with changes made while the watch started failed")
        return self.event.is_set() or self.rebuild.is_set()

    def set(self) -> None:
        self.event.set()


class Watcher:
    """Starts a watch on the first subscriber and stops it after the last one leaves."""

    def __init__(self, server: Server, sandbox: Sandbox) -> None:
        self.server = server
        self.sandbox = sandbox
        self._sep = sandbox.roots[0].sep  # how real paths are joined ("\\" on Windows)
        self._subscribed: dict[str, list[str]] = {}  # canonical URI -> the URIs clients sent
        self._canonicals: dict[str, str | None] = {}  # each subscribed URI -> its canonical form
        self._lists = False
        self._thread: threading.Thread | None = None
        self._stop: _Stop | None = None
        self._threads: list[threading.Thread] = []  # every watch thread that may still be running
        self._closing_at_exit = False

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._stop is not None and not self._stop.event.is_set()

    def update(self, watched: Any) -> None:
        """``Server.on_watch`` hook: adopt the new set; start or stop the watch to match.

        Runs on the event loop, so it does string work only (once per URI); whatever needs the
        disk (fingerprints, the walk) happens in the watch thread."""
        known, canonicals = self._canonicals, {}
        subscribed: dict[str, list[str]] = {}
        for uri in watched.resource_uris:
            canonical = canonicals[uri] = known[uri] if uri in known else self._canonical(uri)
            if canonical is not None:
                subscribed.setdefault(canonical, []).append(uri)
        self._canonicals = canonicals
        self._lists = "resources" in watched.lists
        wanted = bool(subscribed) or self._lists
        if wanted and not self.running:
            since = time.time_ns()
            stop = _Stop()
            self._subscribed = subscribed
            thread = threading.Thread(target=self._run, args=(stop, since), name="mcp-ref-fs-watch", daemon=True)
            self._stop, self._thread = stop, thread
            self._threads = [*(old for old in self._threads if old.is_alive()), thread]
            if not self._closing_at_exit:
                atexit.register(self.close)
                self._closing_at_exit = True
            log.debug("watch started: %d root(s), %d subscribed file(s), list changes %s",
                      len(self.sandbox.roots), len(subscribed), "wanted" if self._lists else "not wanted")
            thread.start()
            return
        newcomers = subscribed.keys() - self._subscribed.keys()
        self._subscribed = subscribed  # before reading ``capped``: the thread sets it, then reads this
        if newcomers and self._stop is not None and self._stop.capped:
            self._stop.rebuild.set()  # a capped watch holds the subscribed files' directories: add theirs
        if not wanted and self.running:
            assert self._stop is not None
            self._stop.set()  # the thread notices within STEP_MS and logs "watch stopped"
            self._thread = None

    def close(self, timeout: float = 2.0) -> None:
        """Stop the watch and wait (at most ``timeout`` seconds) for its threads to end."""
        if self._stop is not None:
            self._stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0))

    def _canonical(self, uri: str) -> str | None:
        """One spelling per file, so ``%7E`` and ``~`` or the two root spellings match (string work only)."""
        try:
            return location_uri(self.sandbox.locate(uri_path(uri, windows=self._sep == "\\")))
        except (ValueError, FsError):  # UnicodeError is a ValueError
            return None

    def _fingerprint(self, canonical: str) -> Any:
        """What a subscribed file is right now, to tell later whether it changed (None: absent)."""
        try:
            _location, info = self.sandbox.stat(uri_path(canonical, windows=self._sep == "\\"))
        except (ValueError, FsError):
            return None
        return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)

    def _inside(self, path: str) -> Location | None:
        """Where a reported (real) path lies: the innermost root holding it lexically, or None."""
        best: Location | None = None
        for root in self.sandbox.roots:
            parts = self.sandbox.below(path, root.real)
            if parts is not None and (best is None or len(root.real) > len(best.root.real)):
                best = Location(root, parts)
        return best

    def _uri_of(self, real_path: str) -> str | None:
        """The URI of a reported path, under the innermost root, as ``_canonical`` spells it (None:
        outside, or a name that is not UTF-8 and so has no URI)."""
        try:
            return location_uri(self.sandbox.locate(real_path))
        except (FsError, ValueError):  # UnicodeError; on Windows a server name no URI can carry
            return None

    def _above(self, uri: str, action: Callable[[str], _T]) -> _T | None:
        """``action(path)`` for the nearest directory above ``uri`` (a canonical URI) that exists,
        going up while ``action`` finds nothing; None when it fails otherwise (a link leaving the
        root, say) or when no directory inside the roots is left."""
        end = uri.rfind("/")
        while end >= len("file://"):
            try:
                return action(uri_path(uri[:end], windows=self._sep == "\\"))
            except NotFound:
                end = uri.rfind("/", 0, end)
            except (ValueError, FsError):
                break
        return None

    # --- the watch thread ---------------------------------------------------------------------------

    def _run(self, stop: _Stop, since: int) -> None:
        """The watch thread: watch, announce, and build the watch again when the directories change
        or ``watchfiles`` fails on a batch (it does, for one, on a name that is not UTF-8),
        catching up with what happened in between."""
        failures = 0
        try:
            import watchfiles

            while not stop.event.is_set():
                stop.rebuild.clear()
                baseline = self._fingerprints(stop)
                listed = time.time_ns()
                paths = self._watch_paths(stop)

                def ready(baseline: dict[str, Any] = baseline, listed: int = listed) -> None:
                    nonlocal failures, since
                    failures, in_place = 0, time.time_ns()
                    log.debug("watch in place: %d directories", len(stop.watched))
                    self._catch_up(stop, since, baseline, listed)
                    since = in_place  # what came later, the watch reports (or the next catch-up finds)

                stop.on_ready = ready
                try:
                    with contextlib.closing(watchfiles.watch(
                            *paths, watch_filter=None, debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=stop,
                            rust_timeout=0, raise_interrupt=False, recursive=False,
                            ignore_permission_denied=True)) as batches:
                        for changes in batches:
                            since, failures = time.time_ns(), 0  # later changes come in a later batch
                            if stop.event.is_set():
                                break
                            if self._announce(changes, stop.watched):
                                stop.rebuild.set()  # a directory appeared or vanished: watch the tree as it is now
                                break
                except Exception as error:
                    failures += 1
                    if failures > MAX_RESTARTS:
                        raise  # not a bad batch: the watch cannot be set up at all
                    log.warning("file watching failed (%s); watching again", error)
                    stop.event.wait(failures * STEP_MS / 1000)
                    continue
                if not stop.rebuild.is_set():
                    return
                log.debug("watching again: the directories changed")
        except Exception:  # a watch that dies must not take the server with it
            log.exception("file watching failed; subscriptions will not see changes until the next listen")
        finally:
            stop.event.set()
            log.debug("watch stopped")

    def _fingerprints(self, stop: _Stop) -> dict[str, Any]:
        baseline: dict[str, Any] = {}
        for canonical in list(self._subscribed):
            if stop.event.is_set():
                break
            baseline[canonical] = self._fingerprint(canonical)
        return baseline

    def _watch_paths(self, stop: _Stop) -> list[str]:
        """The directories to watch, each on its own; sets ``stop.watched`` (and ``stop.capped``)."""
        if not stop.capped:
            limit = watch_limit()
            directories = self._directories(stop, limit)
            if directories is not None:
                stop.watched = frozenset(directories)
                return directories
            stop.capped = True  # before reading the subscriptions: ``update`` sets them, then reads this
            log.warning("more than %d directories under the allowed directories: watching only those directories "
                        "themselves and the ones holding subscribed files; files appearing or vanishing elsewhere "
                        "are not announced", limit)
        directories = self._capped_directories(stop)
        stop.watched = frozenset(directories)
        return directories

    def _directories(self, stop: _Stop, limit: int) -> list[str] | None:
        """Every real directory under the roots (by their real paths), found by the sandbox's walk,
        which never enters a linked directory; None when there are more than ``limit``. A root
        inside another is walked as itself, not as part of the outer one."""
        roots = {root.real for root in self.sandbox.roots}
        found: dict[str, None] = {}  # insertion-ordered set
        for index, root in enumerate(self.sandbox.roots):
            if root.real in found or not _watchable(root.real):  # the same directory as an earlier root
                continue
            found[root.real] = None
            def descend(components: tuple[str, ...], root: Root = root) -> bool:
                return _join(root.real, components, self._sep) not in roots

            walk = self.sandbox.walk(self.sandbox.root_location(index), descend=descend)
            try:
                for components, entry in walk:
                    if stop.event.is_set():
                        break
                    path = _join(root.real, components, self._sep)
                    if entry.kind != "directory" or path in roots or not _watchable(path):
                        continue  # not a directory; another root (watched as itself); a name watchfiles cannot take
                    found[path] = None
                    if len(found) > limit:
                        return None
            except FsError:
                pass  # the root cannot be opened (it vanished?): nothing under it to watch
            finally:
                walk.close()
        return list(found)

    def _capped_directories(self, stop: _Stop) -> list[str]:
        """The roots, and the real directory holding each subscribed file (or the nearest one above
        it that exists: its appearing below brings a rebuild), opened through the sandbox."""
        found = {root.real: None for root in self.sandbox.roots if _watchable(root.real)}
        for canonical in sorted(self._subscribed):
            if stop.event.is_set():
                break
            real = self._above(canonical, self._real_directory)
            if real is not None:
                found.setdefault(real, None)
        return list(found)

    def _real_directory(self, path: str) -> str | None:
        """The real path of the directory ``path`` names, opened confined; None where the system
        does not tell a descriptor's path, or that path is not inside a root or not watchable."""
        real = self.sandbox.real_directory(path)
        if real is None:
            return None
        return real if self._inside(real) is not None and _watchable(real) else None

    def _catch_up(self, stop: _Stop, since: int, baseline: dict[str, Any], listed: int) -> None:
        """The watch is in place: announce what changed since ``since`` (ns) and the ``baseline``
        fingerprints, and ask for a rebuild if directories appeared after ``listed`` (ns)."""
        if stop.event.is_set():
            return
        subscribed = self._subscribed
        since -= CLOCK_SLACK_NS
        updated: set[str] = set()
        for canonical, uris in subscribed.items():
            if stop.event.is_set():
                return
            if self._changed_since(canonical, baseline.get(canonical, _UNKNOWN), since):
                updated.update(uris)
        for uri in sorted(updated):
            self.server.notify_resource_updated(uri)
        modified, appeared = self._scan_watched(stop, since, listed - CLOCK_SLACK_NS)
        if self._lists and modified:
            self.server.notify_list_changed("resources")
        if appeared:
            stop.rebuild.set()

    def _changed_since(self, canonical: str, before: Any, since_ns: int) -> bool:
        """Did a subscribed file change after ``before`` was taken (``_UNKNOWN``: never taken), or
        (since the client may act on its acknowledgement before the watch thread looks) at about
        the time its watch started?"""
        now = self._fingerprint(canonical)
        if before is not _UNKNOWN and now != before:
            return True
        if now is not None:
            return max(now[3], now[4]) >= since_ns  # modified or replaced
        # Absent: was it, or a directory above it, deleted or moved away just now?
        modified = self._above(canonical, lambda path: self.sandbox.stat(path)[1].st_mtime_ns)
        return modified is not None and modified >= since_ns

    def _scan_watched(self, stop: _Stop, since_ns: int, listed_ns: int) -> tuple[bool, bool]:
        """Whether a watched directory was modified since ``since_ns`` (entries came or went), and
        whether the watch must be built again: a directory appeared in one modified since
        ``listed_ns`` that the watch lacks (it came while the watch was being set up), a watched
        one is gone or now leads outside its root (swapped for a link while the watch was set up:
        its kernel watch may sit outside), or, capped, the subscribed files' directories changed."""
        modified = appeared = False
        for path in sorted(stop.watched):
            if stop.event.is_set():
                return False, False
            try:
                mtime = self.sandbox.stat(path)[1].st_mtime_ns
            except (NotFound, AccessDenied):
                appeared = True
                continue
            except FsError:
                continue  # cannot tell (too many open files, a path too long for a client's)
            modified = modified or mtime >= since_ns
            # (A time in the future, as an archive may leave, would bring a rebuild on every look.)
            if not appeared and not stop.capped and listed_ns <= mtime <= time.time_ns():
                appeared = self._has_unwatched_directory(path, stop.watched)
        if stop.capped:
            appeared = set(self._capped_directories(stop)) != stop.watched
        return modified, appeared

    def _has_unwatched_directory(self, path: str, watched: frozenset[str]) -> bool:
        walk = self.sandbox.walk(path, descend=lambda components: False)
        try:
            return any(entry.kind == "directory" and (child := _join(path, components, self._sep)) not in watched and _watchable(child)
                       for components, entry in walk)
        except FsError:
            return False
        finally:
            walk.close()

    def _announce(self, changes: Iterable[tuple[Any, str]], watched: frozenset[str] = frozenset()) -> bool:
        """Announce one batch; True when the watch must be built again (a directory appeared, or a
        watched one vanished)."""
        subscribed = self._subscribed
        list_changed = rebuild = False
        touched: set[str] = set()  # URIs of everything that changed
        moved: set[str] = set()  # URIs of what appeared or vanished (a directory takes its files along)
        for change, path, location in self._confined(changes):
            appeared, vanished = change.name == "added", change.name == "deleted"
            list_changed = list_changed or appeared or vanished
            if not rebuild:
                rebuild = (vanished and path in watched) or (appeared and self._is_directory(location))
            uri = self._uri_of(path)
            if uri is not None:
                touched.add(uri)
                if appeared or vanished:
                    moved.add(uri)
        updated: set[str] = set()
        for canonical, uris in subscribed.items():
            if canonical in touched or (moved and _has_ancestor_in(canonical, moved)):
                updated.update(uris)
        for uri in sorted(updated):
            self.server.notify_resource_updated(uri)
        if list_changed and self._lists:
            self.server.notify_list_changed("resources")
        return rebuild

    def _confined(self, changes: Iterable[tuple[Any, str]]) -> Iterator[tuple[Any, str, Location]]:
        """The changes that may be announced: at a path lexically inside a root whose directory
        opens through the sandbox now (no link leaving the root on the way: a watched directory
        swapped for one, or watched through one, reports nothing), and not to a temporary file of
        the server's own rewrites (which listings never show either)."""
        groups: dict[Location, list[tuple[Any, str, Location]]] = {}
        for change, path in changes:
            location = self._inside(path)
            if location is not None and not (location.parts and is_temporary(location.parts[-1])):  # a rewrite's own file
                groups.setdefault(Location(location.root, location.parts[:-1]), []).append((change, path, location))
        for parent, items in groups.items():
            try:
                self.sandbox.locate_directory(parent)
            except FsError:
                continue
            yield from items

    def _is_directory(self, location: Location) -> bool:
        try:
            self.sandbox.locate_directory(location)
        except FsError:
            return False
        return True


def _join(base: str, components: tuple[str, ...], sep: str = "/") -> str:
    """The path of ``components`` below the directory ``base`` (absolute, normalized)."""
    return base.rstrip(sep) + sep + sep.join(components) if components else base


def _watchable(path: str) -> bool:
    """Can ``watchfiles`` take this path? Not when a name on it is not UTF-8 (it takes only ``str``
    that encodes; such names have no URI either)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _has_ancestor_in(uri: str, uris: set[str]) -> bool:
    """Is some directory above ``uri`` (a canonical ``file://`` URI, ``/``-separated) in ``uris``?"""
    end = uri.rfind("/")
    while end > len("file://"):
        if uri[:end] in uris:
            return True
        end = uri.rfind("/", 0, end)
    return False
