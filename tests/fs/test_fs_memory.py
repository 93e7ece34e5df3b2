"""Memory bounded by what the client fails to read (issue 17, item 4), over real stdio.

Requests for large answers all start before any output exists, so the transport's output
backpressure alone cannot bound them: twenty-four ``read_media_file`` calls of one 32 MiB file
(6.5 KB of input) once held 2.1 GB for a client that read nothing. Each large answer now reserves
its estimated size on the connection's output budget (``mcp_ref.layers.outputbudget``) before its file is
read, and holds it until its line has left the process.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.fs.conftest import fs_command
from tests.wire import ServerProcess, encode_line, modern_request, tool_call

MiB = 1024 * 1024
BOUND_KIB = 300 * 1024  # the bound for 40 such calls; measured: ~145 MiB


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _wait_until_quiet(pid: int, *, quiet: float = 1.0, limit: float = 60.0) -> None:
    """Until the server has used no CPU and its memory has not changed for ``quiet`` seconds: it
    has done all the work it will do while nobody reads (a condition, polled; bounded by ``limit``)."""
    deadline = time.monotonic() + limit
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = (_cpu_ticks(pid), _kib(pid, "VmRSS"))
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.05)
    raise AssertionError(f"the server was still busy after {limit} s without a reading client")


def _answers(server: ServerProcess, count: int) -> list[int]:
    """Read ``count`` raw lines (tens of MiB each) and return the ids of those that are results."""
    server.read_chunk_bytes = 16 * MiB
    ids = []
    for _ in range(count):
        line = server.read_line(timeout=120)
        assert line is not None
        head = re.match(rb'\{"jsonrpc":"2\.0","id":(\d+),"(result|error)"', line[:64])
        assert head is not None, line[:200]
        if head[2] == b"result":
            ids.append(int(head[1]))
    return ids


@pytest.fixture
def big_file(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / "big.bin").write_bytes(os.urandom(32 * MiB))  # the default --max-media-bytes
    return root


@pytest.mark.req("FS-ANSWERS-BUDGETED")
@pytest.mark.parametrize("method", ["read_media_file", "resources/read"])
def test_many_calls_for_a_big_file_from_a_client_that_does_not_read_keep_memory_bounded(big_file: Path, method: str) -> None:
    path = big_file / "big.bin"
    count = 24 if method == "read_media_file" else 12  # 12 held 1.1 GB, 24 2.1 GB
    lines = b"".join(
        encode_line(tool_call(i, "read_media_file", {"path": str(path)}) if method == "read_media_file"
                    else modern_request(i, "resources/read", {"uri": path.as_uri()}))
        for i in range(1, count + 1))
    with ServerProcess(fs_command(big_file), schema=None) as server:
        server.send_raw(lines)  # a few KB of calls, and stdout is not read
        _wait_until_quiet(server.pid)
        peak = _kib(server.pid, "VmHWM")
        assert peak < BOUND_KIB, f"peak RSS {peak // 1024} MiB for {count} unread answers of a 32 MiB file"
        assert sorted(_answers(server, count)) == list(range(1, count + 1))  # every one answered once read


@pytest.mark.req("FS-ANSWERS-BUDGETED")
def test_many_read_multiple_files_calls_from_a_client_that_does_not_read_keep_memory_bounded(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    paths = []
    for number in range(4):  # 4 x 1.1 MiB: each answer is about 8 MiB (the text twice)
        (root / f"t{number}.txt").write_bytes((b"x" * 99 + b"\n") * (11 * 1024))
        paths.append(str(root / f"t{number}.txt"))
    with ServerProcess(fs_command(root), schema=None) as server:
        server.send_raw(b"".join(encode_line(tool_call(i, "read_multiple_files", {"paths": paths})) for i in range(1, 201)))
        _wait_until_quiet(server.pid)
        peak = _kib(server.pid, "VmHWM")
        assert peak < BOUND_KIB, f"peak RSS {peak // 1024} MiB for 200 unread 8 MiB answers"  # was 2.7 GB
        assert sorted(_answers(server, 200)) == list(range(1, 201))
