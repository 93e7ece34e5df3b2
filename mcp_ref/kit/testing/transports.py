"""How the test client reaches a server: in process (a real ``WireReader`` and session) or a spawned command."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Sequence

from .replies import ServerExitError


# --- transports ---------------------------------------------------------------------------------------


class _InProcess:
    """A ``Server`` behind a real ``WireReader`` and ``session.Session``; the session writes to this object (a ``LineSink``)."""

    def __init__(self, server: Any, max_concurrency: int) -> None:
        self.server = server
        self.max_concurrency = max_concurrency
        self.stderr = ""

    async def open(self) -> None:
        from ...core.session import Session
        from ...core.wire import WireReader

        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._reader = WireReader()
        self._session = Session(self.server, self, max_concurrency=self.max_concurrency)

    # The LineSink the session writes to.
    def write(self, line: bytes) -> None:
        self._lines.put_nowait(bytes(line))

    async def drain(self) -> None:
        await asyncio.sleep(0)

    async def send(self, data: bytes) -> None:
        self._reader.feed(data)
        for event in self._reader.events():
            self._session.handle(event)

    async def read_line(self) -> bytes | None:
        return await self._lines.get()

    async def close(self, grace_seconds: float) -> int | None:
        self._reader.feed_eof()
        for event in self._reader.events():
            self._session.handle(event)
        await self._session.shutdown(grace_seconds)
        self.server.close()
        self._lines.put_nowait(None)
        return None


class _Spawned:
    """A command over real stdio: the child's stdin and stdout carry the lines, its stderr is kept."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None, cwd: str | os.PathLike[str] | None) -> None:
        self.command = list(command)
        self.env = env
        self.cwd = cwd
        self._stderr = bytearray()

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    async def open(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
            limit=64 * 1024 * 1024,
        )
        self._stderr_task = asyncio.get_running_loop().create_task(self._collect_stderr())

    async def _collect_stderr(self) -> None:
        assert self._process.stderr is not None
        while chunk := await self._process.stderr.read(65536):
            self._stderr += chunk

    async def send(self, data: bytes) -> None:
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(data)
            await self._process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise ServerExitError(f"the server closed its input; stderr:\n{self.stderr[-2000:]}") from None

    async def read_line(self) -> bytes | None:
        assert self._process.stdout is not None
        line = await self._process.stdout.readline()
        return line or None

    async def close(self, grace_seconds: float) -> int | None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), grace_seconds + 5)
        except asyncio.TimeoutError:
            self._process.kill()
            await self._process.wait()
        await self._stderr_task
        return self._process.returncode


