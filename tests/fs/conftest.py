"""Fixtures for the mcp-ref-fs wire tests: a temporary tree and servers spawned over it.

``build_tree(base)`` makes ``base/root`` (the allowed directory) and ``base/outside`` (a sibling
no tool may touch), with links from the root to the outside. ``fs_tree`` is one such tree per
test module (never change it), ``fresh_tree`` one per test (change it freely). ``fs_server``
serves ``fs_tree`` for the whole module; ``start_fs`` spawns a server with any extra options and
ends it when the test ends.
"""

from __future__ import annotations

import importlib.util
import random
import struct
import sys
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.wire import ServerProcess

SECRET = "TOP-SECRET-7f3a91-outside-the-root"
BENCH = Path(__file__).resolve().parents[2] / "bench"
BIG_LINES = 262_144  # "line NNNNNN\n" = 12 bytes each: exactly 3 MiB
BIG_SIZE = BIG_LINES * 12


def load_bench_script(name: str) -> Any:
    """The module ``bench/<name>.py`` (the benchmark's scripts are files, not a package)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_png() -> bytes:
    """A valid 1x1 RGBA PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00\xff")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def wav_bytes() -> bytes:
    """A RIFF/WAVE header with 100 samples of silence (8 kHz, 16-bit mono)."""
    samples = b"\x00\x00" * 100
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


def random_binary() -> bytes:
    data = bytearray(random.Random(1234).randbytes(4096))
    data[10] = 0  # surely binary
    return bytes(data)


@dataclass
class Tree:
    base: Path
    root: Path
    outside: Path

    def __truediv__(self, name: str) -> Path:
        return self.root / name

    def arg(self, name: str) -> str:
        """The absolute path of ``name`` inside the root, as a tool argument."""
        return str(self.root / name)


def build_tree(base: Path, *, big: bool = True) -> Tree:
    """The standard test tree under ``base`` (see the module docstring)."""
    root, outside = base / "root", base / "outside"
    root.mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (outside / "inner").mkdir()
    (outside / "inner" / "secret2.txt").write_text(SECRET + " again\n")

    (root / "hello.txt").write_text("hello world\nsecond line\nthird line\n")
    (root / "no_newline.txt").write_text("one\ntwo\nthree")
    (root / "numbers.txt").write_text("".join(f"n{i}\n" for i in range(1, 21)))
    (root / "crlf.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    (root / "bom.txt").write_bytes(b"\xef\xbb\xbfbommed text\nline two\n")
    (root / "invalid.txt").write_bytes(b"plain start\n" * 20 + b"then \xff\xfe\xfd bad bytes\n")
    (root / "image.png").write_bytes(tiny_png())
    (root / "sound.wav").write_bytes(wav_bytes())
    (root / "random.bin").write_bytes(random_binary())
    (root / "~").write_text("a file named tilde\n")
    (root / "notes.txt").write_text("TODO: write tests\nfoo bar\nFoo Baz\n")
    (root / "top.py").write_text("import os\n\ndef top():\n    return os.sep\n")
    (root / "empty_dir").mkdir()
    nested = root / "nested"
    (nested / "a" / "b").mkdir(parents=True)
    (nested / "code.py").write_text("def f():\n    return 1  # TODO fix\n")
    (nested / "readme.txt").write_text("nested readme\n")
    (nested / "a" / "mod.py").write_text("x = 1\ny = 2\n")
    (nested / "a" / "b" / "deep.txt").write_text("deep down\nTODO: deep\n")
    (nested / "a" / "b" / "deep.py").write_text("z = 3\n")
    if big:
        with open(root / "big.txt", "wb") as stream:
            stream.write(b"".join(b"line %06d\n" % i for i in range(1, BIG_LINES + 1)))
    # Links: two inside the root, two leaving it.
    (root / "link_to_hello").symlink_to("hello.txt")
    (root / "link_to_nested").symlink_to("nested")
    (root / "escape_file").symlink_to("../outside/secret.txt")
    (root / "escape_dir").symlink_to(outside)
    return Tree(base, root, outside)


def fs_command(*roots: Path | str, options: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "mcp_ref_fs", *options, *map(str, roots)]


@pytest.fixture(scope="module")
def fs_tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    """One tree for the module: tests using it must not change it."""
    return build_tree(tmp_path_factory.mktemp("fs"))


@pytest.fixture
def fresh_tree(tmp_path: Path) -> Tree:
    """A tree of the test's own (no big file), free to change."""
    return build_tree(tmp_path, big=False)


@pytest.fixture(scope="module")
def fs_server(fs_tree: Tree) -> Iterator[ServerProcess]:
    """A server over ``fs_tree`` for the whole module (default options)."""
    with ServerProcess(fs_command(fs_tree.root)) as process:
        yield process


@pytest.fixture
def start_fs() -> Iterator[Callable[..., ServerProcess]]:
    """``start_fs(root, *more_roots, options=("--read-only",), schema="modern")``: a server ended with the test."""
    started: list[ServerProcess] = []

    def start(*roots: Path | str, options: tuple[str, ...] = (), **kwargs: Any) -> ServerProcess:
        process = ServerProcess(fs_command(*roots, options=options), **kwargs)
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


def temp_files(directory: Path) -> list[str]:
    """The temporary files of atomic writes left in ``directory`` (not below it)."""
    return [p.name for p in directory.iterdir() if p.name.startswith(".mcp-ref-") and p.name.endswith(".tmp")]


def call_with_timeout(function: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Run ``function`` in a thread; fail the test, instead of hanging it, if it has not finished
    after ``timeout`` seconds (a FIFO opened for reading, a link loop, a runaway walk)."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = function()
        except BaseException as error:  # re-raised in the test's thread
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"the operation did not finish within {timeout} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
