"""mcp_ref.layers.pipesize: the protocol's stdout pipe is widened where Linux allows, and
nothing else is touched or broken (a file, a socket, a TTY, /dev/null, a refusal, not Linux)."""

from __future__ import annotations

import errno
import os
import socket
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from mcp_ref.layers import pipesize
from mcp_ref.layers.pipesize import PIPE_BYTES, widen_pipe

fcntl = pytest.importorskip("fcntl")
if not hasattr(fcntl, "F_SETPIPE_SZ"):
    pytest.skip("pipe sizes can be asked only on Linux", allow_module_level=True)


def _pipe_max() -> int:
    try:
        return int(Path("/proc/sys/fs/pipe-max-size").read_text())
    except (OSError, ValueError):
        return 0


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    try:
        yield read_fd, write_fd
    finally:
        os.close(read_fd)
        os.close(write_fd)


def size_of(fd: int) -> int:
    size: int = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    return size


def test_a_pipe_is_widened_to_pipe_bytes(pipe: tuple[int, int]) -> None:
    if _pipe_max() < PIPE_BYTES and os.geteuid() != 0:
        pytest.skip("this machine's pipe-max-size is below PIPE_BYTES")
    read_fd, write_fd = pipe
    held = widen_pipe(write_fd)
    if held is not None and held < PIPE_BYTES:  # the user's pipe pages are spent (pipe-user-pages-soft)
        pytest.skip("the kernel refused to grow a pipe for this user")
    assert held == PIPE_BYTES
    assert size_of(write_fd) == size_of(read_fd) == PIPE_BYTES  # one pipe, both ends


def test_a_pipe_is_never_shrunk(pipe: tuple[int, int]) -> None:
    _, write_fd = pipe
    before = size_of(write_fd)
    assert widen_pipe(write_fd, before // 2) == before
    assert size_of(write_fd) == before


@pytest.mark.parametrize("kind", ["file", "dev_null", "socket", "tty"])
def test_anything_but_a_pipe_is_left_alone(kind: str, tmp_path: Path) -> None:
    closing: list[Any] = []
    if kind == "file":
        fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)
    elif kind == "dev_null":
        fd = os.open(os.devnull, os.O_WRONLY)
    elif kind == "socket":
        ours, theirs = socket.socketpair()
        closing += [ours, theirs]
        fd = ours.fileno()
    else:
        if not hasattr(os, "openpty"):
            pytest.skip("no pseudo-terminals here")
        fd, other = os.openpty()
        closing.append(other)
    try:
        assert widen_pipe(fd) is None
    finally:
        if kind != "socket":
            os.close(fd)
        for thing in closing:
            thing.close() if isinstance(thing, socket.socket) else os.close(thing)


@pytest.mark.parametrize("error", [errno.EPERM, errno.EBUSY])
def test_a_refusal_keeps_the_pipe_as_it_was(pipe: tuple[int, int], error: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _, write_fd = pipe
    before = size_of(write_fd)
    real_fcntl = fcntl.fcntl

    def refusing(fd: int, command: int, *args: Any) -> Any:
        if command == fcntl.F_SETPIPE_SZ:
            raise OSError(error, os.strerror(error))
        return real_fcntl(fd, command, *args)

    monkeypatch.setattr(fcntl, "fcntl", refusing)
    assert widen_pipe(write_fd) == before  # what it holds: unchanged, and no error
    assert size_of(write_fd) == before


def test_a_sandbox_refusing_fcntl_altogether_is_fine(pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    def refusing(*_args: Any) -> Any:
        raise PermissionError(errno.EPERM, "not allowed here")

    monkeypatch.setattr(fcntl, "fcntl", refusing)
    assert widen_pipe(pipe[1]) is None


def test_without_pipe_sizes_nothing_is_asked(pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    before = size_of(pipe[1])
    monkeypatch.delattr(fcntl, "F_SETPIPE_SZ")  # as on macOS and the BSDs
    assert widen_pipe(pipe[1]) is None
    assert size_of(pipe[1]) == before


def test_the_transport_widens_its_stdout_pipe_and_not_its_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_ref.core import streams

    asked: list[int] = []
    monkeypatch.setattr(streams, "widen_pipe", lambda fd: asked.append(fd) or pipesize.widen_pipe(fd))
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    try:
        stdin_before = size_of(in_read)
        streams.open_fd_streams(in_read, out_write, threads=False)
        assert asked == [out_write]
        assert size_of(in_read) == stdin_before
        if _pipe_max() >= PIPE_BYTES or os.geteuid() == 0:
            assert size_of(out_read) in (PIPE_BYTES, 64 * 1024)  # 64 KiB only if the kernel refused (the user's pipe pages)
    finally:
        for fd in (in_read, in_write, out_read, out_write):
            os.close(fd)


@pytest.mark.skipif(sys.platform != "linux", reason="Linux pipe sizes")
def test_a_served_process_stdout_pipe_holds_pipe_bytes() -> None:
    # End to end: the server widened the pipe its client made for its stdout.
    from tests.wire import ServerProcess, modern_request

    if _pipe_max() < PIPE_BYTES:
        pytest.skip("this machine's pipe-max-size is below PIPE_BYTES")
    with ServerProcess() as server:
        server.request(modern_request(1, "server/discover"))
        assert server.proc is not None and server.proc.stdout is not None
        assert size_of(server.proc.stdout.fileno()) == PIPE_BYTES
        server.close_stdin()
        server.assert_exit(0)
