"""Edge cases of mcp-ref-fs that the main suites leave out: error paths of the sandbox
(root.py), the offloading helpers (offload.py), the openat2 probe, the entry point, the watch
thread, and tool paths that only show with small limits or big trees.

Most tests run in process against a ``Sandbox`` over a temporary directory; failures the disk
will not produce on demand (a full disk, a directory that cannot be read or removed, an entry
vanishing between two system calls) are injected by replacing root.py's ``os`` with a proxy
that changes one function. The tests run as root, where permission bits do not stop reads, so
no test relies on ``chmod``. The tool tests at the end talk to real servers over stdio.
"""

from __future__ import annotations

import json

import asyncio
import contextlib
import ctypes
import errno
import importlib.util
import itertools
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from mcp_ref import Server
from mcp_ref_fs import _act, _confine_openat2, offload, rewrite
from mcp_ref_fs import root as fsroot
from mcp_ref_fs.config import Config
from mcp_ref_fs.resources import location_uri
from mcp_ref_fs.root import (
    AlreadyExists,
    FsError,
    InvalidPath,
    NotFound,
    Refused,
    Sandbox,
    WrongKind,
    choose_mechanism,
)
from mcp_ref_fs.tools import FsTools, _last_bytes, _line_window
from mcp_ref_fs.watch import CLOCK_SLACK_NS, Watcher, _Stop
from tests.fs.conftest import call_with_timeout, fs_command, temp_files
from tests.fs.fixtures_resources import Recorder
from tests.wire import ServerProcess, call, is_response, result_of, tool_call

OLD = b"the old contents\n"
NEW = b"the new contents\n"
_ids = itertools.count(1)


# --- helpers ---------------------------------------------------------------------------------------


def open_fds() -> int:
    """How many descriptors this process holds (a leak shows as a larger number)."""
    return len(os.listdir("/proc/self/fd"))


def patch_os(monkeypatch: pytest.MonkeyPatch, **replacements: Callable[..., Any]) -> Any:
    """Give root.py, its act step (``_act``) and the rewrite (``rewrite``) an ``os`` whose named
    functions are replaced (the rest is the real ``os``)."""
    real = os

    class PatchedOs:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    proxy = PatchedOs()
    for name, function in replacements.items():
        setattr(proxy, name, function)
    monkeypatch.setattr(fsroot, "os", proxy)
    monkeypatch.setattr(_act, "os", proxy)
    monkeypatch.setattr(rewrite, "os", proxy)
    return proxy


def occupy(number: int, path: Path, flags: int) -> None:
    """Open ``path`` under exactly the descriptor ``number`` (as another part of the process would
    get it once the number is free)."""
    fd = os.open(path, flags)
    if fd != number:
        os.dup2(fd, number)
        os.close(fd)


def within(seconds: float, function: Callable[[], Any]) -> Any:
    """``function()``, failing the test instead of hanging when it does not return in time."""
    return call_with_timeout(function, seconds)


@pytest.fixture
def root_dir(tmp_path: Path) -> Path:
    root = tmp_path.resolve() / "root"
    root.mkdir()
    (root / "file.txt").write_bytes(OLD)
    return root


@pytest.fixture
def sandbox(root_dir: Path) -> Iterator[Sandbox]:
    opened = Sandbox.open([str(root_dir)])
    yield opened
    opened.close()


# --- root.py: choosing the mechanism, opening and closing roots --------------------------------------


def test_a_root_of_slash_admits_every_absolute_path_and_shows_it_unchanged(tmp_path: Path) -> None:
    target = tmp_path.resolve() / "f.txt"
    target.write_bytes(OLD)
    whole = Sandbox.open(["/"])
    try:
        location = whole.locate(str(target))
        assert location.parts == tuple(str(target).strip("/").split("/"))
        assert location.display == str(target)
        assert whole.locate("/").parts == () and whole.locate("/").display == "/"
        assert whole.locate("etc/hostname").display == "/etc/hostname"  # relative to the first root, "/"
        with whole.open_file(str(target)) as opened:
            assert opened.read_at(0, 100) == OLD
    finally:
        whole.close()


def test_an_unknown_confinement_name_in_the_environment_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_REF_FS_CONFINE", "fast")
    with pytest.raises(ValueError, match="unknown confinement mechanism 'fast'"):
        choose_mechanism()


@pytest.mark.req("FS-ACT-PATHS")
def test_the_server_takes_its_act_step_from_the_environment(tmp_path: Path) -> None:
    """MCP_REF_FS_ACT=paths serves through the path-based act step (the suite runs whole that way
    too); an unknown name ends the server with status 2 before it serves anything."""
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_bytes(OLD)
    with ServerProcess(fs_command(root), env={"MCP_REF_FS_ACT": "paths"}) as server:
        assert server_text(server, "read_text_file", {"path": str(root / "sub" / "a.txt")}) == OLD.decode()
        server_text(server, "write_file", {"path": str(root / "sub" / "b.txt"), "content": "new"})
        assert "[FILE] b.txt" in server_text(server, "list_directory", {"path": str(root / "sub")})
    assert (root / "sub" / "b.txt").read_text() == "new"
    result = subprocess.run(fs_command(root), env={**os.environ, "MCP_REF_FS_ACT": "fast"}, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "unknown act step 'fast'" in result.stderr


def server_text(server: ServerProcess, name: str, arguments: dict[str, Any]) -> str:
    result = succeeded(server, name, arguments)
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def test_automatic_confinement_uses_the_walk_where_openat2_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_REF_FS_CONFINE", raising=False)
    monkeypatch.setattr(_confine_openat2, "available", lambda: False)
    assert choose_mechanism().name == "walk"


def test_forcing_openat2_where_it_is_unavailable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_confine_openat2, "available", lambda: False)
    with pytest.raises(ValueError, match="openat2 is not available"):
        choose_mechanism("openat2")


def test_openat2_is_unavailable_on_an_architecture_without_a_known_system_call_number(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_confine_openat2.platform, "system", lambda: "Linux")
    monkeypatch.setattr(_confine_openat2.platform, "machine", lambda: "sparc64")
    assert _confine_openat2.available() is False


def test_openat2_is_unavailable_when_the_kernel_refuses_the_probe_and_the_probe_leaks_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(self: Any, dir_fd: int, path: bytes) -> int:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))  # a seccomp filter's answer

    monkeypatch.setattr(_confine_openat2.Openat2Mechanism, "_openat2", refused)
    before = open_fds()
    assert _confine_openat2.available() is False
    assert open_fds() == before


def test_a_sandbox_needs_at_least_one_root() -> None:
    with pytest.raises(ValueError, match="at least one root"):
        Sandbox([])
    with pytest.raises(ValueError, match="at least one root"):
        Sandbox.open([])


@pytest.mark.parametrize("given", ["", "a\0b"], ids=["empty", "nul"])
def test_an_empty_root_path_or_one_holding_nul_is_refused(given: str) -> None:
    with pytest.raises(ValueError, match="is not a directory path"):
        Sandbox.open([given])


def test_a_root_that_cannot_be_opened_is_refused_with_the_system_reason(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"cannot open \(File name too long\)"):
        Sandbox.open([str(tmp_path / ("x" * 300))])


def test_closing_a_sandbox_twice_leaves_a_descriptor_that_reused_the_number_open(root_dir: Path) -> None:
    opened = Sandbox.open([str(root_dir)])
    number = opened.roots[0].fd
    opened.close()
    with pytest.raises(OSError):
        os.fstat(number)  # the root's descriptor is closed
    occupy(number, root_dir, os.O_RDONLY | os.O_DIRECTORY)  # someone else now has that number
    try:
        opened.close()
        os.fstat(number)  # still open: the second close did not close someone else's file
    finally:
        os.close(number)


# --- root.py: resolving and reading ----------------------------------------------------------------------


def test_a_link_text_that_is_empty_or_holds_nul_counts_as_leaving_the_root(sandbox: Sandbox) -> None:
    # No local file system stores such a link; a network or FUSE file system might report one.
    follow = sandbox._follow_link(sandbox.roots[0])
    for text in ("", "a\0b"):
        with pytest.raises(fsroot._Escape):
            follow((), text, ("x",))


def test_a_link_to_a_name_longer_than_255_bytes_is_invalid_and_leaks_no_descriptor(
        root_dir: Path, sandbox: Sandbox) -> None:
    os.symlink("x" * 300, root_dir / "long_link")
    before = open_fds()
    with pytest.raises(InvalidPath, match="File name too long: /.*/root/long_link"):
        sandbox.open_file("long_link")
    assert open_fds() == before


def test_a_file_used_as_a_directory_is_the_wrong_kind(sandbox: Sandbox) -> None:
    with pytest.raises(WrongKind, match="A component of /.*/root/file.txt/x is not a directory"):
        sandbox.open_file("file.txt/x")


def test_listing_a_missing_directory_is_not_found(root_dir: Path, sandbox: Sandbox) -> None:
    with pytest.raises(NotFound, match=f"No such directory: {root_dir}/nope"):
        sandbox.list_directory("nope")


def test_an_interruption_during_an_operation_propagates_as_itself_and_leaks_no_descriptor(
        monkeypatch: pytest.MonkeyPatch, sandbox: Sandbox) -> None:
    def interrupted_stat(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    assert sandbox.mechanism is not None  # chosen before os is replaced
    before = open_fds()
    patch_os(monkeypatch, stat=interrupted_stat)
    with pytest.raises(KeyboardInterrupt):  # not disguised as a file error
        sandbox.stat("file.txt")
    assert open_fds() == before


def _held_path(held: int | str) -> str:
    """The real path of a directory the act step lists: a descriptor, or /proc/self/fd/N."""
    return os.readlink(held if isinstance(held, str) else f"/proc/self/fd/{held}")


def _vanishing_scandir(victim: Path) -> Callable[[int], Any]:
    """``os.scandir`` that deletes ``victim`` right after listing the directory holding it."""

    def scandir(fd: int | str) -> Any:  # a descriptor (at), or /proc/self/fd/N (paths)
        with os.scandir(fd) as scan:
            entries = list(scan)
        if victim.exists() and os.path.samefile(_held_path(fd), victim.parent):
            victim.unlink()
        return contextlib.nullcontext(iter(entries))

    return scandir


def test_an_entry_that_vanishes_while_its_directory_is_listed_is_left_out(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    (root_dir / "vanishing.txt").write_bytes(b"x")
    patch_os(monkeypatch, scandir=_vanishing_scandir(root_dir / "vanishing.txt"))
    _location, entries = sandbox.list_directory(".")
    assert [entry.name for entry in entries] == ["file.txt"]


def test_an_entry_that_vanishes_during_a_walk_is_left_out(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    (root_dir / "sub").mkdir()
    (root_dir / "sub" / "a.txt").write_bytes(b"a")
    (root_dir / "sub" / "vanishing.txt").write_bytes(b"x")
    patch_os(monkeypatch, scandir=_vanishing_scandir(root_dir / "sub" / "vanishing.txt"))
    assert [components for components, _entry in sandbox.walk(".")] == [("file.txt",), ("sub",), ("sub", "a.txt")]


def test_a_directory_that_cannot_be_read_during_a_walk_is_listed_but_not_entered(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    for directory in ("bad", "good"):
        (root_dir / directory).mkdir()
        (root_dir / directory / "x.txt").write_bytes(b"x")

    def scandir(fd: int | str) -> Any:
        if _held_path(fd) == str(root_dir / "bad"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return os.scandir(fd)

    patch_os(monkeypatch, scandir=scandir)
    walked = [components for components, _entry in sandbox.walk(".")]
    assert walked == [("bad",), ("file.txt",), ("good",), ("good", "x.txt")]


# --- root.py: changing things ----------------------------------------------------------------------------


def test_a_directory_created_by_someone_else_at_the_same_moment_is_accepted(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    def racing_mkdir(name: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:  # at, or paths
        os.mkdir(name, mode, dir_fd=dir_fd)  # the other process wins the race ...
        os.mkdir(name, mode, dir_fd=dir_fd)  # ... so ours finds it there (FileExistsError)

    patch_os(monkeypatch, mkdir=racing_mkdir)
    location = sandbox.make_directories("a/b")
    assert location.parts == ("a", "b")
    assert (root_dir / "a" / "b").is_dir()


def test_creating_directories_through_a_dangling_link_inside_the_root_fails_and_creates_nothing(
        root_dir: Path, sandbox: Sandbox) -> None:
    os.symlink("missing", root_dir / "dangling")
    with pytest.raises(NotFound):
        sandbox.make_directories("dangling/x")
    assert os.readlink(root_dir / "dangling") == "missing"
    assert sorted(os.listdir(root_dir)) == ["dangling", "file.txt"]


def test_moving_a_missing_source_is_not_found_and_creates_nothing(root_dir: Path, sandbox: Sandbox) -> None:
    with pytest.raises(NotFound, match=f"No such file or directory: {root_dir}/nope"):
        sandbox.move("nope", "moved")
    assert not os.path.lexists(root_dir / "moved")


def test_deleting_a_missing_entry_is_not_found(root_dir: Path, sandbox: Sandbox) -> None:
    with pytest.raises(NotFound, match=f"No such file or directory: {root_dir}/nope"):
        sandbox.delete("nope")


def test_a_directory_the_system_will_not_remove_fails_with_its_reason_and_stays(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    (root_dir / "mounted").mkdir()

    def busy_rmdir(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY))  # e.g. a mount point

    patch_os(monkeypatch, rmdir=busy_rmdir)
    with pytest.raises(FsError) as caught:
        sandbox.delete("mounted")
    assert type(caught.value) is FsError
    assert str(caught.value) == f"{root_dir / 'mounted'}: Device or resource busy"  # the root's spelling
    assert (root_dir / "mounted").is_dir()


def test_a_move_across_file_systems_is_refused_and_moves_nothing(root_dir: Path) -> None:
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(root_dir).st_dev:
        pytest.skip("needs /dev/shm on a different file system than the temporary directory")
    other = Path(os.path.realpath("/dev/shm")) / f"mcp-ref-edges-{os.getpid()}"
    other.mkdir()
    try:
        both = Sandbox.open([str(root_dir), str(other)])
        try:
            with pytest.raises(Refused, match="cannot move across file systems"):
                both.move(str(root_dir / "file.txt"), str(other / "file.txt"))
        finally:
            both.close()
        assert (root_dir / "file.txt").read_bytes() == OLD
        assert list(other.iterdir()) == []
    finally:
        for leftover in other.iterdir():
            leftover.unlink()
        other.rmdir()


ERROR_KINDS = [
    (errno.ENOENT, NotFound, "No such file or directory"),
    (errno.ENOTDIR, WrongKind, "is not a directory"),
    (errno.EISDIR, WrongKind, "is a directory"),
    (errno.EACCES, Refused, "Permission denied"),
    (errno.EPERM, Refused, "Permission denied"),
    (errno.ELOOP, Refused, "Too many levels of symbolic links"),
    (errno.EEXIST, AlreadyExists, "already exists"),
    (errno.ENAMETOOLONG, InvalidPath, "File name too long"),
    (errno.EXDEV, Refused, "cannot move across file systems"),
    (errno.ENOSPC, Refused, "No space left on device"),
    (errno.EIO, FsError, "Input/output error"),
]


@pytest.mark.parametrize(("code", "kind", "words"), ERROR_KINDS, ids=[errno.errorcode[c] for c, _k, _w in ERROR_KINDS])
def test_each_system_error_becomes_the_file_error_the_model_is_shown(code: int, kind: type, words: str) -> None:
    error = fsroot._fs_error(OSError(code, os.strerror(code)), "/r/some/path")
    assert type(error) is kind
    assert words in str(error) and "/r/some/path" in str(error)


# --- root.py: handles ---------------------------------------------------------------------------------------


def test_closing_an_open_file_twice_leaves_a_descriptor_that_reused_the_number_open(
        root_dir: Path, sandbox: Sandbox) -> None:
    opened = sandbox.open_file("file.txt")
    number = opened.fd
    opened.close()
    occupy(number, root_dir / "file.txt", os.O_RDONLY)  # someone else now has that number
    try:
        opened.close()
        assert os.pread(number, 100, 0) == OLD  # still open
    finally:
        os.close(number)


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_a_commit_that_runs_out_of_space_is_refused_removes_the_temporary_and_keeps_the_target(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    def full_disk_fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # delayed allocation failing at last

    before = open_fds()
    patch_os(monkeypatch, fsync=full_disk_fsync)
    replacing = sandbox.replace_file("file.txt")
    replacing.write(NEW)
    with pytest.raises(Refused, match=f"No space left on device while writing {root_dir}/file.txt"):
        replacing.commit()  # cleans up by itself, with or without a ``with`` around it
    assert (root_dir / "file.txt").read_bytes() == OLD
    assert temp_files(root_dir) == []
    assert open_fds() == before


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_a_directory_that_cannot_be_synced_does_not_fail_a_write_that_landed(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    synced: list[int] = []

    def fsync(fd: int) -> None:
        synced.append(fd)
        if len(synced) == 2:  # the directory, after the rename; some file systems refuse it
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        os.fsync(fd)

    before = open_fds()
    patch_os(monkeypatch, fsync=fsync)
    with sandbox.replace_file("file.txt") as replacing:
        replacing.write(NEW)
        replacing.commit()
    assert len(synced) == 2
    assert (root_dir / "file.txt").read_bytes() == NEW
    assert temp_files(root_dir) == []
    assert open_fds() == before


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_an_exception_after_the_commit_keeps_the_committed_file(root_dir: Path, sandbox: Sandbox) -> None:
    with pytest.raises(RuntimeError), sandbox.replace_file("file.txt") as replacing:
        replacing.write(NEW)
        replacing.commit()
        raise RuntimeError("after the commit")
    assert (root_dir / "file.txt").read_bytes() == NEW
    assert temp_files(root_dir) == []


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_aborting_when_the_temporary_file_is_already_gone_is_quiet_and_keeps_the_target(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    monkeypatch.setattr(rewrite, "_unnamed_files", lambda: False)  # a file system without O_TMPFILE
    before = open_fds()
    replacing = sandbox.replace_file("file.txt")
    replacing.write(NEW)
    [temporary] = temp_files(root_dir)
    (root_dir / temporary).unlink()  # a clean-up job got there first
    replacing.abort()
    assert (root_dir / "file.txt").read_bytes() == OLD
    assert open_fds() == before


def test_a_failing_close_of_the_temporary_file_still_closes_the_directory(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    before = open_fds()
    replacing = sandbox.replace_file("file.txt")
    temporary_fd = replacing.fd

    def close(fd: int) -> None:
        os.close(fd)
        if fd == temporary_fd:
            raise OSError(errno.EIO, os.strerror(errno.EIO))  # as close(2) may report on NFS

    patch_os(monkeypatch, close=close)
    replacing.abort()
    assert open_fds() == before
    assert temp_files(root_dir) == []


def test_a_failing_close_of_a_held_directory_is_quiet_and_leaks_nothing(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path) -> None:
    before = open_fds()
    sandbox = Sandbox.open([str(root_dir)])
    real_close = sandbox.act.close

    def close(held: Any) -> None:
        real_close(held)
        raise OSError(errno.EIO, os.strerror(errno.EIO))  # closed, but close(2) reports an error

    monkeypatch.setattr(sandbox.act, "close", close)
    replacing = sandbox.replace_file("file.txt")
    replacing.abort()  # the temporary file is removed and both descriptors closed, quietly
    sandbox.close()
    assert open_fds() == before and temp_files(root_dir) == []


def test_without_renameat2_in_the_c_library_moves_fall_back_and_still_never_overwrite(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    (root_dir / "taken.txt").write_bytes(b"taken\n")
    assert sandbox.mechanism is not None  # chosen before the C library is replaced
    _act._renameat2.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", lambda *args, **kwargs: types.SimpleNamespace())  # no renameat2 in it
    try:
        assert _act._renameat2() is None
        with pytest.raises(AlreadyExists):
            sandbox.move("file.txt", "taken.txt")
        sandbox.move("file.txt", "moved.txt")
    finally:
        _act._renameat2.cache_clear()  # looked up again, for real, on next use
    assert (root_dir / "taken.txt").read_bytes() == b"taken\n"
    assert (root_dir / "moved.txt").read_bytes() == OLD and not (root_dir / "file.txt").exists()


# --- offload.py ----------------------------------------------------------------------------------------------


def test_stop_turns_true_once_its_deadline_passed_and_counts_as_a_timeout() -> None:
    later, past = offload.Stop(60), offload.Stop(-1)
    assert later() is False and later.timed_out is False
    assert past() is True and past.timed_out is True


def test_a_stop_gets_its_task_limit_once_the_call_is_a_task() -> None:
    in_task = [False]
    stop = offload.Stop(-1, task_seconds=60, in_task=lambda: in_task[0])
    in_task[0] = True
    assert stop() is False and stop.deadline is not None and stop.deadline > time.monotonic() + 50
    in_task[0] = False
    assert stop() is True and stop.timed_out is True


def test_a_stop_set_by_cancellation_is_true_without_counting_as_a_timeout() -> None:
    stop = offload.Stop(60)
    stop.set()
    assert stop() is True and stop.timed_out is False


async def test_cancelling_work_off_the_loop_sets_its_stop_flag() -> None:
    started, saw_stop = threading.Event(), threading.Event()

    def work(stop: offload.Stop) -> None:
        started.set()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if stop():
                saw_stop.set()
                return
            time.sleep(0.005)

    loop = asyncio.get_running_loop()
    task = asyncio.create_task(offload.off_loop(work))
    assert await loop.run_in_executor(None, started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await loop.run_in_executor(None, saw_stop.wait, 5)


async def _blocked_jobs(count: int, release: threading.Event, **options: Any) -> tuple[list[asyncio.Task[Any]], list[int]]:
    started: list[int] = []
    ready = threading.Semaphore(0)

    def work(stop: offload.Stop) -> None:
        started.append(1)
        ready.release()
        release.wait(10)

    tasks = [asyncio.create_task(offload.off_loop(work, **options)) for _ in range(count)]
    loop = asyncio.get_running_loop()
    for _ in range(min(count, offload.WORKERS - 1 if options.get("long") else offload.WORKERS)):
        assert await loop.run_in_executor(None, ready.acquire, True, 10)
    return tasks, started


@pytest.mark.req("FS-WORK-NEVER-STARVED")
async def test_cancelled_work_gives_its_thread_place_up_at_once_even_while_it_still_runs() -> None:
    release = threading.Event()
    try:
        tasks, started = await _blocked_jobs(offload.WORKERS, release)
        assert len(started) == offload.WORKERS
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # The cancelled jobs still run (blocked) in their threads; new work runs beside them.
        assert await asyncio.wait_for(offload.off_loop(lambda stop: "ran"), 10) == "ran"
    finally:
        release.set()


@pytest.mark.req("FS-WORK-NEVER-STARVED")
async def test_long_work_never_takes_the_last_place_so_short_work_always_runs() -> None:
    release = threading.Event()
    try:
        tasks, started = await _blocked_jobs(offload.WORKERS + 2, release, long=True)
        assert len(started) == offload.WORKERS - 1  # the others wait for a place
        assert await asyncio.wait_for(offload.off_loop(lambda stop: "short work ran"), 10) == "short work ran"
        assert len(started) == offload.WORKERS - 1
    finally:
        release.set()
    await asyncio.gather(*tasks)
    assert len(started) == offload.WORKERS + 2


async def test_a_rewrite_runs_in_a_worker_thread_and_lands_whole(root_dir: Path, sandbox: Sandbox) -> None:
    tools = FsTools(Server("edges", "0"), sandbox, Config(roots=(str(root_dir),)))
    threads: list[bool] = []
    real = sandbox.replace_file

    def replace_file(path: str, **options: Any) -> Any:
        threads.append(threading.current_thread() is threading.main_thread())
        return real(path, **options)

    sandbox.replace_file = replace_file  # type: ignore[method-assign]
    data = bytes(range(128)) * 40
    await tools.write_file(None, {"path": "file.txt", "content": data.decode()})  # type: ignore[arg-type]
    assert threads == [False]
    assert (root_dir / "file.txt").read_bytes() == data


async def test_a_read_above_the_in_loop_threshold_reads_from_the_start_of_the_file(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    monkeypatch.setattr(offload, "IN_LOOP_READ_BYTES", 4)
    (root_dir / "file.txt").write_bytes(b"0123456789abcdef")
    with sandbox.open_file("file.txt") as opened:
        os.lseek(opened.fd, 9, os.SEEK_SET)  # wherever the descriptor happens to be
        assert await offload.read_start(opened, 12) == b"0123456789ab"


# --- __main__.py ---------------------------------------------------------------------------------------------


def test_an_interactive_stdin_gets_a_hint_on_stderr_and_nothing_on_stdout(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], root_dir: Path) -> None:
    from mcp_ref_fs import __main__ as entry
    from mcp_ref_fs import server as fs_server

    served: list[Sandbox] = []

    def build_server(config: Config, sandbox: Sandbox) -> Any:
        served.append(sandbox)
        return types.SimpleNamespace(run=lambda: 0)

    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(isatty=lambda: True))
    monkeypatch.setattr(fs_server, "build_server", build_server)
    try:
        assert entry.main([str(root_dir)]) == 0
    finally:
        for opened in served:
            opened.close()
    out, err = capsys.readouterr()
    assert "waiting for JSON-RPC lines on stdin" in err and "Ctrl-D" in err
    assert out == ""


def test_importing_the_entry_module_starts_no_server() -> None:
    spec = importlib.util.find_spec("mcp_ref_fs.__main__")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)  # named mcp_ref_fs.__main__, not __main__
    spec.loader.exec_module(module)  # would raise SystemExit if it served
    assert callable(module.main)


# --- watch.py (in process, with a recorder standing in for the server) ----------------------------------


@pytest.fixture
def watched(root_dir: Path, sandbox: Sandbox) -> tuple[Watcher, Recorder, str]:
    """A watcher (no thread) subscribed to root/dir/sub/file.txt, and that file's URI."""
    (root_dir / "dir" / "sub").mkdir(parents=True)
    (root_dir / "dir" / "sub" / "file.txt").write_bytes(OLD)
    recorder = Recorder()
    watcher = Watcher(recorder, sandbox)  # type: ignore[arg-type]
    uri = location_uri(sandbox.locate(str(root_dir / "dir" / "sub" / "file.txt")))
    watcher._subscribed = {uri: [uri]}
    return watcher, recorder, uri


def _change(name: str) -> Any:
    import watchfiles

    return getattr(watchfiles.Change, name)


def _age(*paths: Path, seconds: float = 100) -> int:
    """Make ``paths`` look last modified ``seconds`` ago; returns now (ns)."""
    now = time.time_ns()
    for path in paths:
        os.utime(path, ns=(now - int(seconds * 1e9),) * 2)
    return now


@pytest.mark.req("FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_a_subscribed_file_under_a_directory_that_vanished_is_announced_as_updated(
        root_dir: Path, watched: tuple[Watcher, Recorder, str]) -> None:
    watcher, recorder, uri = watched
    watcher._announce({(_change("deleted"), str(root_dir / "dir"))})  # the whole directory moved away
    assert recorder.updated == [uri]


def test_a_change_to_a_name_that_has_no_uri_announces_the_list_change_only(
        root_dir: Path, watched: tuple[Watcher, Recorder, str]) -> None:
    watcher, recorder, _uri = watched
    watcher._lists = True
    undecodable = os.fsdecode(os.fsencode(root_dir / "dir" / "sub") + b"/\xff.txt")
    assert watcher._announce({(_change("added"), undecodable)}) is False  # not a directory: no rebuild
    assert recorder.updated == [] and recorder.lists == ["resources"]


@pytest.mark.req("FS-WATCH-CONFINED")
def test_a_change_reported_under_a_link_leaving_the_root_or_outside_every_root_is_not_announced(
        tmp_path: Path, root_dir: Path, watched: tuple[Watcher, Recorder, str]) -> None:
    """What a kernel watch placed through a link (a directory swapped for one after it was
    watched) would report: paths under the link's name, or outside the roots altogether."""
    watcher, recorder, _uri = watched
    watcher._lists = True
    outside = tmp_path / "outside"
    (outside / "deeper").mkdir(parents=True)
    (outside / "secret.txt").write_text("secret\n")
    (root_dir / "lk").symlink_to(outside)
    secret = location_uri(watcher.sandbox.locate(str(root_dir / "lk" / "secret.txt")))
    watcher._subscribed = {secret: [secret]}
    changes = {(_change("modified"), str(root_dir / "lk" / "secret.txt")),
               (_change("added"), str(root_dir / "lk" / "deeper")),
               (_change("added"), str(outside / "new.txt"))}
    assert watcher._announce(changes, frozenset({str(root_dir)})) is False
    assert recorder.updated == [] and recorder.lists == []
    (root_dir / "lk").unlink()
    (root_dir / "lk").mkdir()  # a real directory again: the same report now counts
    assert watcher._announce({(_change("modified"), str(root_dir / "lk" / "secret.txt"))}) is False
    assert recorder.updated == [secret]


def test_a_batch_needs_a_rebuild_when_a_directory_appears_or_a_watched_one_vanishes(
        root_dir: Path, watched: tuple[Watcher, Recorder, str]) -> None:
    watcher, _recorder, _uri = watched
    watching = frozenset({str(root_dir), str(root_dir / "dir"), str(root_dir / "dir" / "sub")})
    (root_dir / "new-dir").mkdir()
    assert watcher._announce({(_change("added"), str(root_dir / "new-dir"))}, watching) is True
    assert watcher._announce({(_change("added"), str(root_dir / "file.txt"))}, watching) is False
    assert watcher._announce({(_change("deleted"), str(root_dir / "dir" / "sub"))}, watching) is True
    assert watcher._announce({(_change("deleted"), str(root_dir / "gone.txt"))}, watching) is False
    assert watcher._announce({(_change("modified"), str(root_dir / "dir"))}, watching) is False
    both = {(_change("added"), str(root_dir / "new-dir")), (_change("deleted"), str(root_dir / "dir" / "sub"))}
    assert watcher._announce(both, watching) is True  # once is enough: the second is not looked at


@pytest.mark.req("FS-WATCH-LIFETIME")
def test_a_watch_stopped_before_it_was_in_place_announces_nothing_it_would_have_caught_up(
        root_dir: Path, watched: tuple[Watcher, Recorder, str]) -> None:
    watcher, recorder, uri = watched
    watcher._lists = True
    stop = _Stop()
    stop.watched = frozenset({str(root_dir)})
    (root_dir / "dir" / "sub" / "file.txt").write_bytes(NEW)  # absent when subscribed, changed since, a directory too
    stop.set()
    watcher._catch_up(stop, time.time_ns() - 10**9, {uri: None}, time.time_ns())
    assert recorder.updated == [] and recorder.lists == []
    assert not stop.rebuild.is_set()


def test_a_catch_up_stopped_half_way_announces_nothing(
        root_dir: Path, watched: tuple[Watcher, Recorder, str], monkeypatch: pytest.MonkeyPatch) -> None:
    watcher, recorder, uri = watched
    stop = _Stop()
    other = location_uri(watcher.sandbox.locate(str(root_dir / "file.txt")))
    watcher._subscribed = {uri: [uri], other: [other]}
    real = watcher._changed_since

    def changed_then_stopped(*args: Any) -> bool:
        stop.set()  # the last subscriber left while the first file was looked at
        return real(*args)

    monkeypatch.setattr(watcher, "_changed_since", changed_then_stopped)
    watcher._catch_up(stop, 0, {}, time.time_ns())
    assert recorder.updated == []
    assert watcher._fingerprints(stop) == {}  # nor does a stopped thread fingerprint anything


def test_looking_for_modified_directories_gives_up_once_the_watch_stops(
        root_dir: Path, watched: tuple[Watcher, Recorder, str]) -> None:
    watcher, _recorder, _uri = watched
    since = _age(root_dir) - 10**9  # the root itself unchanged; dir/ is new
    stop = _Stop()
    stop.watched = frozenset({str(root_dir), str(root_dir / "dir"), str(root_dir / "dir" / "sub")})
    assert watcher._scan_watched(stop, since, time.time_ns()) == (True, False)
    stop.set()
    assert watcher._scan_watched(stop, since, 0) == (False, False)


def test_a_directory_that_appeared_while_the_watch_was_set_up_brings_a_rebuild(
        root_dir: Path, watched: tuple[Watcher, Recorder, str]) -> None:
    watcher, recorder, _uri = watched
    watcher._lists = True
    stop = _Stop()
    stop.watched = frozenset(watcher._watch_paths(stop))
    listed = _age(*map(Path, stop.watched)) - CLOCK_SLACK_NS  # the coarse clock's slack, as the watcher allows it
    assert watcher._scan_watched(stop, listed, listed) == (False, False)
    (root_dir / "dir" / "late").mkdir()  # after the listing, before the watch was in place
    (root_dir / "dir" / "late.txt").write_bytes(OLD)
    (root_dir / "dir" / "link").symlink_to("sub")  # a link is never watched: no reason to rebuild
    (root_dir / "dir" / "sub" / "inner").mkdir()
    os.utime(root_dir / "dir" / "sub", ns=(listed + 10**12, listed + 10**12))  # in the future (an archive's doing)
    assert watcher._scan_watched(stop, listed, listed) == (True, True)
    watcher._catch_up(stop, listed, {}, listed)
    assert recorder.lists == ["resources"] and stop.rebuild.is_set()
    assert watcher._has_unwatched_directory(str(root_dir / "dir" / "sub"), stop.watched) is True
    assert watcher._has_unwatched_directory(str(root_dir / "no-such-dir"), stop.watched) is False


def test_a_watched_directory_that_cannot_be_examined_is_skipped_and_the_others_are_still_checked(
        root_dir: Path, watched: tuple[Watcher, Recorder, str], monkeypatch: pytest.MonkeyPatch) -> None:
    watcher, _recorder, _uri = watched
    since = _age(root_dir, root_dir / "dir") - 10**9
    stop = _Stop()
    stop.watched = frozenset({str(root_dir), str(root_dir / "dir"), str(root_dir / "dir" / "sub")})
    real_stat = watcher.sandbox.stat
    attempts: list[str] = []

    def stat(path: str) -> Any:
        if path == str(root_dir / "dir"):
            attempts.append(path)
            raise FsError(f"{path}: Too many open files")
        return real_stat(path)

    monkeypatch.setattr(watcher.sandbox, "stat", stat)
    assert watcher._scan_watched(stop, since, since) == (True, False)  # dir/sub/ is new
    assert attempts == [str(root_dir / "dir")]


@pytest.mark.req("FS-WATCH-CONFINED")
@pytest.mark.parametrize("swap", ["link-outside", "gone"])
def test_a_watched_directory_swapped_for_a_link_leaving_the_root_or_gone_when_the_watch_is_in_place_brings_a_rebuild(
        tmp_path: Path, root_dir: Path, watched: tuple[Watcher, Recorder, str], swap: str) -> None:
    """The kernel resolves each path as its watch is placed: a directory swapped for a link after
    the walk may have put the watch outside, so the catch-up watches again."""
    watcher, _recorder, _uri = watched
    stop = _Stop()
    stop.watched = frozenset(watcher._watch_paths(stop))
    # As the watcher asks it (Watcher._catch_up): the file system's coarse clock may stamp the
    # rename below a tick earlier than the precise clock's "now" (a red run on Python 3.13 in CI).
    listed = _age(*map(Path, stop.watched)) - CLOCK_SLACK_NS
    assert watcher._scan_watched(stop, listed, listed) == (False, False)
    os.rename(root_dir / "dir" / "sub", tmp_path / "sub-moved-away")
    if swap == "link-outside":
        (tmp_path / "outside").mkdir()
        (root_dir / "dir" / "sub").symlink_to(tmp_path / "outside")
    assert watcher._scan_watched(stop, listed, listed) == (True, True)


@pytest.mark.req("FS-WATCH-CONFINED")
def test_each_real_directory_under_the_roots_is_watched_once_and_links_are_never_entered(
        tmp_path: Path, root_dir: Path) -> None:
    (root_dir / "a" / "b").mkdir(parents=True)
    (root_dir / "inner" / "c").mkdir(parents=True)
    (root_dir / "link_in").symlink_to("a")
    outside = tmp_path / "outside"
    (outside / "o1" / "o2").mkdir(parents=True)
    (root_dir / "link_out").symlink_to(outside)
    (root_dir / "a" / "link_abs").symlink_to("/")
    os.mkdir(os.fsencode(root_dir) + b"/\xffdir")  # watchfiles cannot take such a name (nor has it a URI)
    roots = Sandbox.open([str(root_dir / "inner"), str(root_dir), str(root_dir / "inner")])  # nested, and twice
    try:
        stop = _Stop()
        paths = Watcher(Recorder(), roots)._watch_paths(stop)  # type: ignore[arg-type]
    finally:
        roots.close()
    expected = [root_dir / "inner", root_dir / "inner" / "c", root_dir, root_dir / "a", root_dir / "a" / "b"]
    assert paths == [str(path) for path in expected]
    assert stop.watched == frozenset(paths) and not stop.capped


def test_a_root_that_cannot_be_walked_is_watched_alone_and_a_stopped_walk_ends_early(
        root_dir: Path, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    (root_dir / "a" / "b").mkdir(parents=True)
    watcher = Watcher(Recorder(), sandbox)  # type: ignore[arg-type]
    real_walk = sandbox.walk

    def failing(start: Any, **kwargs: Any) -> Iterator[Any]:
        raise FsError("Too many open files")
        yield  # pragma: no cover - a generator that fails at once

    monkeypatch.setattr(sandbox, "walk", failing)
    assert watcher._watch_paths(_Stop()) == [str(root_dir)]
    monkeypatch.setattr(sandbox, "walk", real_walk)
    stop = _Stop()
    stop.set()
    assert watcher._directories(stop, 100) == [str(root_dir)]


@pytest.mark.parametrize(("text", "limit"), [("100\n", 50), ("1\n", 1), ("10000000\n", 20_000), ("garbage", 20_000), (None, 20_000)])
def test_the_directory_limit_is_at_most_half_of_the_users_inotify_watches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | None, limit: int) -> None:
    from mcp_ref_fs import watch

    source = tmp_path / "max_user_watches"
    if text is not None:
        source.write_text(text)
    monkeypatch.setattr(watch, "INOTIFY_WATCH_LIMIT", str(source))
    assert watch.watch_limit() == limit


def _capped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, limit: int = 2) -> None:
    from mcp_ref_fs import watch

    (tmp_path / "max_user_watches").write_text(f"{2 * limit}\n")
    monkeypatch.setattr(watch, "INOTIFY_WATCH_LIMIT", str(tmp_path / "max_user_watches"))


@pytest.mark.req("FS-WATCH-CONFINED")
def test_beyond_the_limit_only_the_roots_and_the_subscribed_files_directories_are_watched(
        tmp_path: Path, root_dir: Path, watched: tuple[Watcher, Recorder, str],
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    watcher, _recorder, uri = watched
    _capped(monkeypatch, tmp_path)
    (root_dir / "x" / "y").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root_dir / "lk").symlink_to(tmp_path / "outside")
    (root_dir / "link_sub").symlink_to("dir/sub")
    spelled = {name: location_uri(watcher.sandbox.locate(str(root_dir / name))) for name in
               ("x/y/later/deeper/new.txt", "lk/secret.txt", "link_sub/file.txt", "file.txt")}
    watcher._subscribed = {uri: [uri], **{value: [value] for value in spelled.values()}}
    stop = _Stop()
    with caplog.at_level(logging.WARNING, logger="mcp_ref_fs.watch"):
        paths = watcher._watch_paths(stop)
        assert watcher._watch_paths(stop) == paths  # capped for good: no second walk, no second warning
    # The root; dir/sub (also for link_sub/file.txt: its real directory); x/y, the nearest directory
    # above x/y/later/deeper that exists; nothing for the file behind the link leaving the root.
    assert sorted(paths) == sorted([str(root_dir), str(root_dir / "dir" / "sub"), str(root_dir / "x" / "y")])
    assert stop.capped and stop.watched == frozenset(paths)
    assert caplog.text.count("more than 2 directories") == 1
    # A capped watch checks only what it watches, and rebuilds when the subscribed files' directories move.
    # With the slack the watcher itself allows: the kernel stamps mtimes from a coarse clock that may
    # lag time.time_ns() by a tick, so a directory made just after `listed` can carry an earlier time.
    listed = _age(root_dir, root_dir / "dir" / "sub", root_dir / "x" / "y") - CLOCK_SLACK_NS
    assert watcher._scan_watched(stop, listed, listed) == (False, False)
    (root_dir / "x" / "y" / "later").mkdir()
    assert watcher._scan_watched(stop, listed, listed) == (True, True)


def test_a_descriptors_path_comes_from_proc_on_linux_and_f_getpath_on_macos(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path) -> None:
    import fcntl

    fd = os.open(root_dir, os.O_RDONLY)
    try:
        assert _act.fd_real_path(fd) == str(root_dir)
        asked: list[tuple[int, int]] = []

        def f_getpath(number: int, command: int, buffer: bytes) -> bytes:
            asked.append((number, command))
            return b"/Users/ada/proj" + bytes(len(buffer) - 15)

        monkeypatch.setattr(sys, "platform", "darwin")
        monkeypatch.setattr(fcntl, "fcntl", f_getpath)
        assert _act.fd_real_path(fd) == "/Users/ada/proj" and asked == [(fd, 50)]  # F_GETPATH
    finally:
        os.close(fd)
    monkeypatch.undo()
    assert _act.fd_real_path(-1) is None  # no such descriptor: the system cannot say


def test_a_capped_watch_without_descriptor_paths_watches_the_roots_only(
        tmp_path: Path, root_dir: Path, watched: tuple[Watcher, Recorder, str], monkeypatch: pytest.MonkeyPatch) -> None:
    watcher, _recorder, _uri = watched
    _capped(monkeypatch, tmp_path, limit=1)
    monkeypatch.setattr(_act, "FD_PATHS", str(tmp_path / "no-proc"))
    stop = _Stop()
    assert watcher._watch_paths(stop) == [str(root_dir)]
    stop.set()
    assert watcher._capped_directories(stop) == [str(root_dir)]


def _fake_watchfiles(monkeypatch: pytest.MonkeyPatch, watch: Callable[..., Iterator[Any]]) -> None:
    monkeypatch.setitem(sys.modules, "watchfiles", types.SimpleNamespace(watch=watch))


def _wait_until(condition: Callable[[], bool], seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within the time limit"
        time.sleep(0.01)


@pytest.mark.req("FS-WATCH-CONFINED")
def test_a_new_subscription_to_a_capped_watch_has_its_directory_added(
        tmp_path: Path, root_dir: Path, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_ref.features.watch import WatchSet

    _capped(monkeypatch, tmp_path, limit=1)
    (root_dir / "one").mkdir()
    (root_dir / "two").mkdir()
    builds: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def watch(*paths: str, stop_event: Any, **options: Any) -> Iterator[Any]:
        builds.append((paths, options))
        while not stop_event.is_set():
            time.sleep(0.01)
        return
        yield  # pragma: no cover - never a batch

    _fake_watchfiles(monkeypatch, watch)
    watcher = Watcher(Recorder(), sandbox)  # type: ignore[arg-type]
    one, two = (location_uri(sandbox.locate(str(root_dir / name / "f.txt"))) for name in ("one", "two"))
    try:
        watcher.update(WatchSet(frozenset({one})))
        _wait_until(lambda: len(builds) == 1)
        watcher.update(WatchSet(frozenset({one})))  # nothing new: the watch stays
        watcher.update(WatchSet(frozenset({one, two})))
        _wait_until(lambda: len(builds) == 2)
    finally:
        watcher.close()
    assert builds[0][0] == (str(root_dir), str(root_dir / "one"))
    assert builds[1][0] == (str(root_dir), str(root_dir / "one"), str(root_dir / "two"))
    assert builds[0][1]["recursive"] is False and builds[0][1]["watch_filter"] is None


@pytest.mark.req("FS-WATCH-CONFINED")
def test_a_batch_with_a_new_directory_has_the_watch_built_again_from_a_fresh_walk(
        root_dir: Path, monkeypatch: pytest.MonkeyPatch, watched: tuple[Watcher, Recorder, str]) -> None:
    watcher, recorder, _uri = watched
    watcher._lists = True
    time.sleep(0.1)  # the tree is older than the clock slack: the first watch has nothing to catch up
    builds: list[tuple[str, ...]] = []
    added = _change("added")

    def watch(*paths: str, stop_event: Any, **options: Any) -> Iterator[Any]:
        builds.append(paths)
        stop_event.is_set()  # in place
        if len(builds) == 1:
            (root_dir / "new" / "deeper").mkdir(parents=True)
            yield {(added, str(root_dir / "new"))}
            pytest.fail("asked for another batch after a rebuild was due")
        stop_event.set()
        yield set()

    _fake_watchfiles(monkeypatch, watch)
    stop = _Stop()
    within(5, lambda: watcher._run(stop, time.time_ns()))
    assert builds[1] == (*builds[0], str(root_dir / "new"), str(root_dir / "new" / "deeper"))
    assert recorder.lists[0] == "resources" and set(recorder.lists) == {"resources"}  # the batch (and maybe its catch-up)
    assert recorder.updated == []
    assert len(builds) == 2


@pytest.mark.req("FS-WATCH-LIFETIME")
def test_a_batch_that_arrives_after_the_watch_stopped_is_not_announced(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, watched: tuple[Watcher, Recorder, str]) -> None:
    watcher, recorder, _uri = watched
    modified = _change("modified")
    calls: list[int] = []

    def watch(*paths: str, stop_event: Any, **options: Any) -> Iterator[Any]:
        calls.append(1)
        stop_event.set()  # the last subscriber left while the batch was being collected
        yield {(modified, str(root_dir / "dir" / "sub" / "file.txt"))}
        pytest.fail("asked for another batch after the stop")

    _fake_watchfiles(monkeypatch, watch)
    stop = _Stop()
    within(5, lambda: watcher._run(stop, time.time_ns()))
    assert recorder.updated == [] and calls == [1]
    assert stop.event.is_set()


def test_a_watch_stopped_while_recovering_from_a_failure_is_not_rebuilt(
        monkeypatch: pytest.MonkeyPatch, watched: tuple[Watcher, Recorder, str]) -> None:
    watcher, recorder, _uri = watched
    calls: list[int] = []

    def watch(*paths: str, stop_event: Any, **options: Any) -> Iterator[Any]:
        calls.append(1)
        stop_event.set()  # stopped meanwhile
        raise RuntimeError('Unable to decode path "\\xff" to string')
        yield set()  # pragma: no cover - a generator that fails at once

    _fake_watchfiles(monkeypatch, watch)
    stop = _Stop()
    within(5, lambda: watcher._run(stop, time.time_ns()))
    assert calls == [1]
    assert recorder.updated == [] and recorder.lists == []


# --- tools.py: helpers and cancellation, in process --------------------------------------------------------


def test_the_last_bytes_of_one_long_line_never_start_inside_a_character() -> None:
    data = "é".encode() * 10  # 20 bytes, no newline: a cut at 15 would split a character
    kept = _last_bytes(data, 5)
    assert kept == "éé".encode()
    assert data.endswith(kept)


def test_a_line_window_stops_when_its_request_is_cancelled(sandbox: Sandbox) -> None:
    stop = offload.Stop(None)
    stop.set()
    with sandbox.open_file("file.txt") as opened, pytest.raises(offload.Stopped):
        _line_window(opened, 0, None, 1000, stop)


def test_a_line_window_of_a_file_that_shrank_while_open_returns_what_is_left(
        root_dir: Path, sandbox: Sandbox) -> None:
    (root_dir / "file.txt").write_bytes(b"".join(b"line %d\n" % i for i in range(100)))
    with sandbox.open_file("file.txt") as opened:
        os.truncate(root_dir / "file.txt", 14)  # another program cut it after it was opened
        kept = within(5, lambda: _line_window(opened, 1, None, 1000, offload.Stop(None)))
    assert kept == b"line 1\n"


async def test_cancelling_search_files_stops_its_walk_at_the_next_run(
        monkeypatch: pytest.MonkeyPatch, root_dir: Path, sandbox: Sandbox) -> None:
    """A search walks runs of at most STOP_EVERY entries (``Sandbox.walk_runs``) and sees a
    cancellation before the next run."""
    for index in range(3 * offload.STOP_EVERY):
        (root_dir / f"f{index:03d}.txt").write_bytes(b"x")
    tools = FsTools(Server("edges", "0"), sandbox, Config(roots=(str(root_dir),)))
    consumed: list[list[str]] = []
    paused, release, closed = threading.Event(), threading.Event(), threading.Event()
    real_walk_runs = sandbox.walk_runs

    def walk_runs(start: Any, **kwargs: Any) -> Iterator[Any]:
        try:
            for run in real_walk_runs(start, **kwargs):
                consumed.append(run[1])
                yield run
                if len(consumed) == 1:
                    paused.set()
                    release.wait(5)
        finally:
            closed.set()

    monkeypatch.setattr(sandbox, "walk_runs", walk_runs)
    ctx = types.SimpleNamespace(report_progress=lambda *args, **kwargs: True, task_id=None)
    loop = asyncio.get_running_loop()
    search = tools.search_files(ctx, {"path": str(root_dir), "pattern": "**"})  # type: ignore[arg-type]
    task = asyncio.create_task(search)
    assert await loop.run_in_executor(None, paused.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert await loop.run_in_executor(None, closed.wait, 5)
    assert len(consumed) == 2  # the run it was in, and the next one, where it noticed


# --- tools.py over stdio -------------------------------------------------------------------------------------


def _deep_file(base: Path, text: bytes, levels: int = 17) -> None:
    """``base/<250 bytes>/<250 bytes>/.../hit.txt``: a path longer than 4096 bytes, which no
    client path can name (made with ``*at`` calls, since such a path cannot be opened)."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(levels):
            name = f"{level:02d}" + "d" * 248
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open("hit.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, text)
        os.close(out)
    finally:
        os.close(fd)


@pytest.fixture(scope="module")
def edge_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("edges").resolve()
    many = root / "many"
    many.mkdir()
    for index in range(1000):
        (many / f"f{index:04d}.txt").write_bytes(b"hay\n")
    (many / "needle.txt").write_bytes(b"needle\n")
    for directory, files in {"cap_exact": {"a.txt": "match\n", "b.txt": "nothing\n"},
                             "cap_more": {"a.txt": "match\n", "b.txt": "match again\n"},
                             "multi": {f"{i}.txt": "0123456789abc\n" for i in range(5)},
                             "long": {"short.txt": "needle near\n"}}.items():
        (root / directory).mkdir()
        for name, body in files.items():
            (root / directory / name).write_text(body)
    _deep_file(root / "long", b"needle deep\n")
    (root / "numbers.txt").write_text("".join(f"n{i}\n" for i in range(1, 21)))
    (root / "large.txt").write_text("x" * 99 + "\n")
    return root


@pytest.fixture(scope="module")
def edge_server(edge_root: Path) -> Iterator[ServerProcess]:
    with ServerProcess(fs_command(edge_root)) as process:
        yield process


@pytest.fixture(scope="module")
def hurried_server(edge_root: Path) -> Iterator[ServerProcess]:
    """A server whose time limit passes before any walk reaches its first entry."""
    with ServerProcess(fs_command(edge_root, options=("--search-seconds", "0.000001"))) as process:
        yield process


@pytest.fixture(scope="module")
def tight_server(edge_root: Path) -> Iterator[ServerProcess]:
    """A server with tiny read limits: 10 bytes of text per file, 64 bytes per media file or edit."""
    with ServerProcess(fs_command(edge_root, options=("--max-read-bytes", "10", "--max-media-bytes", "64"))) as process:
        yield process


def succeeded(server: ServerProcess, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = call(server, name, arguments)
    assert not result.get("isError"), result
    return result


def failed(server: ServerProcess, name: str, arguments: dict[str, Any]) -> str:
    result = call(server, name, arguments)
    assert result.get("isError") is True, result
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def progress_of(server: ServerProcess, name: str, arguments: dict[str, Any]) -> tuple[list[float], dict[str, Any]]:
    """The progress values reported for one call (with a progress token), and its result."""
    request = tool_call(next(_ids), name, arguments, progress_token=f"edges-{name}")
    server.send(request)
    messages = server.read_until(lambda m: is_response(m, request["id"]), timeout=20)
    values = [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"
              and m["params"]["progressToken"] == f"edges-{name}"]
    return values, result_of(messages[-1])


def test_search_files_reports_progress_while_walking_entries_that_do_not_match(
        edge_server: ServerProcess, edge_root: Path) -> None:
    arguments = {"path": str(edge_root / "many"), "pattern": "needle.txt"}  # 1000 entries before the match
    values, result = progress_of(edge_server, "search_files", arguments)
    assert result["content"][0]["text"] == str(edge_root / "many" / "needle.txt")
    assert values and values == sorted(set(values))


def test_grep_files_reports_progress_every_hundred_files_searched(edge_server: ServerProcess, edge_root: Path) -> None:
    values, result = progress_of(edge_server, "grep_files", {"path": str(edge_root / "many"), "pattern": "needle"})
    assert result["content"][0]["text"].endswith("needle.txt:1: needle")
    assert values and values == sorted(set(values)) and all(value % 100 == 0 for value in values)
    # 1001 files searched: progress at most every hundred (values closer than 10 ms are dropped,
    # and RE2 can search a hundred small files faster than that).
    assert values[-1] <= 1000


@pytest.mark.req("FS-ENTRY-CAP")
def test_grep_files_with_max_results_reached_and_no_later_match_is_not_cut(
        edge_server: ServerProcess, edge_root: Path) -> None:
    result = succeeded(edge_server, "grep_files", {"path": str(edge_root / "cap_exact"), "pattern": "match",
                                                   "maxResults": 1})
    assert [block["text"] for block in result["content"]] == [f"{edge_root / 'cap_exact' / 'a.txt'}:1: match"]


@pytest.mark.req("FS-ENTRY-CAP")
def test_grep_files_with_max_results_reached_and_a_match_in_a_later_file_is_cut(
        edge_server: ServerProcess, edge_root: Path) -> None:
    result = succeeded(edge_server, "grep_files", {"path": str(edge_root / "cap_more"), "pattern": "match",
                                                   "maxResults": 1})
    assert result["content"][0]["text"] == f"{edge_root / 'cap_more' / 'a.txt'}:1: match"
    assert result["content"][1]["text"].startswith("[Matching lines 1-1; more follow. Next page: grep_files ")


def test_grep_files_skips_a_file_whose_path_is_too_long_to_open(edge_server: ServerProcess, edge_root: Path) -> None:
    result = succeeded(edge_server, "grep_files", {"path": str(edge_root / "long"), "pattern": "needle"})
    assert [block["text"] for block in result["content"]] == [f"{edge_root / 'long' / 'short.txt'}:1: needle near"]


def test_an_invalid_exclude_pattern_is_a_tool_error(edge_server: ServerProcess, edge_root: Path) -> None:
    text = failed(edge_server, "directory_tree", {"path": str(edge_root), "excludePatterns": ["[oops"]})
    assert text.startswith("Invalid exclude pattern:") and "unterminated character class" in text


def test_delete_file_of_a_missing_path_is_a_tool_error_that_asks_nothing(
        edge_server: ServerProcess, edge_root: Path) -> None:
    assert failed(edge_server, "delete_file", {"path": "nope"}) == f"No such file or directory: {edge_root}/nope"


@pytest.mark.req("FS-EDIT-DIFF")
def test_edit_file_fences_a_diff_holding_backticks_with_a_longer_fence(
        edge_server: ServerProcess, edge_root: Path) -> None:
    target = edge_root / "fenced.md"
    target.write_text("```\ncode\n```\n")
    edits = [{"oldText": "code", "newText": "CODE"}]
    result = succeeded(edge_server, "edit_file", {"path": str(target), "edits": edits})
    report = result["content"][0]["text"]
    assert report.startswith("````diff\n") and report.endswith("\n````\n")
    assert "-code\n+CODE\n" in report
    assert target.read_text() == "```\nCODE\n```\n"


@pytest.mark.req("FS-SEARCH-TIME-LIMIT")
def test_directory_tree_past_the_time_limit_answers_the_partial_tree_marked_truncated(
        hurried_server: ServerProcess, edge_root: Path) -> None:
    result = succeeded(hurried_server, "directory_tree", {"path": str(edge_root / "multi")})
    assert json.loads(result["content"][0]["text"]) == []  # the limit passed before the first entry
    assert any("time limit" in block["text"] for block in result["content"][1:])


def test_search_files_past_the_time_limit_answers_what_it_found_marked_truncated(
        hurried_server: ServerProcess, edge_root: Path) -> None:
    result = succeeded(hurried_server, "search_files", {"path": str(edge_root / "multi"), "pattern": "*.txt"})
    assert any(block["text"].startswith("[Stopped at the") and "time limit" in block["text"]
               for block in result["content"][1:])


@pytest.mark.req("FS-SEARCH-TIME-LIMIT")
def test_grep_files_past_the_time_limit_between_files_answers_marked_truncated(
        hurried_server: ServerProcess, edge_root: Path) -> None:
    result = succeeded(hurried_server, "grep_files", {"path": str(edge_root / "multi"), "pattern": "0"})
    assert any(block["text"].startswith("[Stopped at the") for block in result["content"][1:])


def test_read_multiple_files_stops_adding_text_at_four_times_the_read_limit(
        tight_server: ServerProcess, edge_root: Path) -> None:
    paths = [str(edge_root / "multi" / f"{i}.txt") for i in range(5)]
    parts = succeeded(tight_server, "read_multiple_files", {"paths": paths})["content"][0]["text"].split("\n---\n")
    assert len(parts) == 5
    for path, part in zip(paths[:4], parts[:4]):
        assert part.startswith(f"{path}:\n0123456789\n")  # each cut at --max-read-bytes
    assert parts[4] == f'{paths[4]}: [Not read: this answer is full. Read it with read_text_file {{"path": "{paths[4]}"}}]'


@pytest.mark.req("FS-READ-CAP")
def test_head_asking_for_more_lines_than_the_read_limit_holds_is_cut_at_whole_lines(
        tight_server: ServerProcess, edge_root: Path) -> None:
    result = succeeded(tight_server, "read_text_file", {"path": str(edge_root / "numbers.txt"), "head": 15})
    assert result["content"][0]["text"] == "n1\nn2\nn3\n"
    assert result["content"][1]["text"].startswith("[Lines 1-3 of ")
    assert result["content"][1]["text"].endswith('"offset": 3, "limit": 3}]')  # 12 more asked for; pages of 3 fit


def test_edit_file_refuses_a_file_above_the_media_limit_and_leaves_it_alone(
        tight_server: ServerProcess, edge_root: Path) -> None:
    target = edge_root / "large.txt"
    text = failed(tight_server, "edit_file", {"path": str(target), "edits": [{"oldText": "x", "newText": "y"}]})
    assert text == f"{target} has 100 bytes; edit_file handles files up to 64 bytes"
    assert target.read_text() == "x" * 99 + "\n"
