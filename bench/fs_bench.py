#!/usr/bin/env python3
"""The filesystem-server benchmark: mcp-ref-fs next to the servers users would otherwise pick.

    python bench/fs_bench.py                  # mcp-ref-fs (modern and legacy era) and the two floors
    python bench/fs_bench.py --peers          # also the official Python SDK and Node servers
    python bench/fs_bench.py --quick --peers  # fewer samples, under a minute once the peers are installed
    python bench/fs_bench.py --markdown out.md --json out.json
    python bench/fs_bench.py --profile reads,media   # where mcp-ref-fs spends its time (cProfile, py-spy)

One generated fixture tree (deterministic; built in the temp dir and removed at the end, or kept
and reused with --keep-fixture), one
driver, every contender a real subprocess on pipes; contenders are interleaved sample by sample,
and the report gives medians and ratios. Every answer is checked against the fixture (contents,
listings, match sets) outside the timed region; a wrong or error answer gets no time. Exit
status: 0, or 2 when a cell has no time (wrong answer, failure). See bench/README.md
("The filesystem benchmark").
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import bench as core  # bench/bench.py: Child, child_env, machine(), percentile()

HERE = core.HERE
ROOT = core.ROOT
PY = core.PY

SDK_VENV = os.path.join(HERE, ".venvs", "sdk")
SDK_REQUIREMENT = ("mcp", "2.3.0")
TOOLS_VENV = os.path.join(HERE, ".venvs", "tools")  # py-spy for --profile
NODE_PREFIX = os.path.join(HERE, ".node")
NODE_PACKAGE = "@modelcontextprotocol/server-filesystem"
NODE_VERSION = "2026.8.31"  # the version issue 9 names (published on npm)

MODERN_META = core.META
LEGACY_VERSION = "2025-11-25"
WINDOW = 32  # requests in flight in the pipelined workloads
IDLE_SECONDS = 120.0  # no output for this long with an answer due: the server is stuck
NEEDLE = "needle_7f3a9"  # the grep literal; the generated words never contain it
# Same work as the peers: no 1000-entry cap on trees and searches, no answer budget (the peers cut
# no answer to fit a host: issue 20), and no pacing of calls (the workloads send thousands back to
# back, as a runaway loop would; the peers pace none).
REF_LIMITS = ["--max-entries", "1000000", "--max-answer-bytes", "1000000000", "--max-calls-per-second", "0"]


class Wrong(core.BenchError):
    """An answer that is an error, or whose content does not match the fixture."""


# --- the fixture ------------------------------------------------------------------------------------


@dataclass
class Fixture:
    root: str
    small: str
    small_text: str
    folder: str
    folder_lines: set[str]
    tree: str
    tree_entries: set[tuple[str, str]]
    tree_files: list[str]
    tree_py: set[str]
    grep: str
    grep_bytes: int
    grep_matches: set[tuple[str, int]]
    media: str
    media_bytes: bytes
    edit_text: str
    edit_markers: int
    edits: dict[str, str] = field(default_factory=dict)  # contender -> expected contents of its edit file
    edit_next: dict[str, int] = field(default_factory=dict)

    def edit_path(self, key: str) -> str:
        return os.path.join(self.root, "edit", f"{key}.txt")

    def describe(self) -> str:
        """Computed once."""
        if not hasattr(self, "_description"):
            self._description = self._describe()
        return self._description

    def _describe(self) -> str:
        return (f"1 KiB file; a 200-entry folder; a tree of {len(self.tree_files):,} files ({len(self.tree_py):,} .py) in "
                f"{sum(1 for _, kind in self.tree_entries if kind == 'directory')} directories; {self.grep_bytes / 2**20:.0f} MiB "
                f"of text in {len(os.listdir(self.grep))} files with {len(self.grep_matches)} lines holding the grep literal; "
                f"an {len(self.media_bytes) // 2**20} MiB binary; a {len(self.edit_text.encode()) / 2**20:.1f} MiB text file per editor")


def _words(rng: random.Random, count: int) -> list[str]:
    letters = "abcdefghijklmnoprstuvwy"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(count)]


def _lines(rng: random.Random, words: list[str], count: int) -> list[str]:
    lines = []
    for _ in range(count):
        line = " ".join(rng.choice(words) for _ in range(rng.randint(6, 16)))
        lines.append(line)
    return lines


FIXTURE_VERSION = "fixture-v1"  # change when the generator changes: cached trees are then rebuilt


def fixture_dir(parent: str | None, keep: bool) -> str:
    """Where the fixture lives. Kept (``--keep-fixture``): one directory per machine and user, built
    once and reused by later runs (it is deterministic). Otherwise a new directory, removed when
    the run ends, so a run leaves nothing behind (the fixture is ~60 MiB)."""
    parent = parent or tempfile.gettempdir()
    if keep:
        return os.path.join(parent, f"mcp-ref-fs-bench-{os.getuid()}-{FIXTURE_VERSION}")
    return tempfile.mkdtemp(prefix="mcp-ref-fs-bench-", dir=parent)


def build_fixture(base: str, editors: list[str], fresh: bool = False) -> Fixture:
    """The fixture under ``base``: computed in memory (deterministic), written only when ``base`` does
    not already hold a complete copy (its stamp file is written last). The edit files are rewritten
    every run, one per editing contender."""
    stamp = os.path.join(base, ".complete")
    write = fresh or not os.path.exists(stamp)
    if write:
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
    root = os.path.realpath(base)

    def put(path: str, data: bytes) -> None:
        if write:
            with open(path, "wb") as handle:
                handle.write(data)

    def mkdir(path: str) -> None:
        if write:
            os.makedirs(path)

    rng = random.Random(20261201)
    words = _words(rng, 400)
    base_lines = _lines(rng, words, 4000)

    small = os.path.join(root, "small.txt")
    small_text = "".join(f"{i:02d} {base_lines[i]}"[:63].ljust(63, ".") + "\n" for i in range(16))  # 16 x 64 = 1 KiB
    put(small, small_text.encode())

    folder = os.path.join(root, "folder200")
    mkdir(folder)
    folder_lines = set()
    for i in range(180):
        put(os.path.join(folder, f"file{i:03d}.txt"), base_lines[i].encode() + b"\n")
        folder_lines.add(f"[FILE] file{i:03d}.txt")
    for i in range(20):
        mkdir(os.path.join(folder, f"dir{i:02d}"))
        folder_lines.add(f"[DIR] dir{i:02d}")

    # 10 x 10 directories of 100 files, every tenth a .py. The files are empty: no data blocks, so
    # removing the tree is quick even where the file system discards freed blocks synchronously
    # (ext4 -o discard on a VM disk: ~2 ms per file).
    tree = os.path.join(root, "tree")
    tree_entries: set[tuple[str, str]] = set()
    tree_files: list[str] = []
    tree_py: set[str] = set()
    for a in range(10):
        tree_entries.add((f"pkg{a}", "directory"))
        for b in range(10):
            directory = os.path.join(tree, f"pkg{a}", f"mod{b}")
            mkdir(directory)
            tree_entries.add((f"pkg{a}/mod{b}", "directory"))
            for c in range(100):
                name = f"f{c:03d}.py" if c % 10 == 0 else f"f{c:03d}.txt"
                path = os.path.join(directory, name)
                put(path, b"")
                tree_entries.add((f"pkg{a}/mod{b}/{name}", "file"))
                tree_files.append(path)
                if name.endswith(".py"):
                    tree_py.add(path)

    # ~50 MiB of text in 50 files of ~1 MiB; 10 lines per file hold the grep literal
    grep = os.path.join(root, "grep")
    mkdir(grep)
    grep_matches: set[tuple[str, int]] = set()
    grep_bytes = 0
    doubled = base_lines + base_lines
    for i in range(50):
        start = (i * 397) % len(base_lines)
        lines: list[str] = []
        size = 0
        while size < 1024 * 1024:
            take = doubled[start:start + 1000]
            lines += take
            size += sum(len(line) + 1 for line in take)
        path = os.path.join(grep, f"part{i:02d}.txt")
        for number in rng.sample(range(len(lines)), 10):
            line = lines[number]
            cut = len(line) // 2
            lines[number] = f"{line[:cut]} {NEEDLE} {line[cut:]}"
            grep_matches.add((path, number + 1))
        data = ("\n".join(lines) + "\n").encode()
        grep_bytes += len(data)
        put(path, data)

    media = os.path.join(root, "media.bin")
    media_bytes = b"\x00\x01BENCH-BINARY\xfe\xff" + rng.randbytes(8 * 1024 * 1024 - 16)
    put(media, media_bytes)

    # ~1 MiB of numbered lines; EDIT_TARGET_000.. in the middle, one consumed per measured edit
    markers = 400
    edit_lines = [f"L{i:06d} {base_lines[i % len(base_lines)]}" for i in range(14000)]
    middle = 7000 - markers * 5
    for k in range(markers):
        edit_lines[middle + 10 * k] = f"L{middle + 10 * k:06d} EDIT_TARGET_{k:03d} {base_lines[k]}"
    edit_text = "\n".join(edit_lines) + "\n"
    mkdir(os.path.join(root, "edit"))

    fixture = Fixture(root, small, small_text, folder, folder_lines, tree, tree_entries, tree_files, tree_py, grep,
                      grep_bytes, grep_matches, media, media_bytes, edit_text, markers)
    if write:
        put(stamp, FIXTURE_VERSION.encode())
    elif not fixture_intact(fixture):
        return build_fixture(base, editors, fresh=True)
    fixture.describe()
    for key in editors:
        put_edit = fixture.edit_path(key)
        with open(put_edit, "w", encoding="utf-8", newline="") as handle:
            handle.write(edit_text)
        fixture.edits[key] = edit_text
        fixture.edit_next[key] = 0
    return fixture


def fixture_intact(fixture: Fixture) -> bool:
    """A reused fixture still matches what the generator makes (cheap checks: names, sizes, a few contents)."""
    found: set[tuple[str, str]] = set()
    for directory, subdirs, files in os.walk(fixture.tree):
        relative = os.path.relpath(directory, fixture.tree)
        prefix = "" if relative == "." else relative + "/"
        found.update((prefix + name, "directory") for name in subdirs)
        found.update((prefix + name, "file") for name in files)
    try:
        with open(fixture.small, encoding="utf-8") as handle:
            small_ok = handle.read() == fixture.small_text
        with open(fixture.media, "rb") as handle:
            media_ok = handle.read() == fixture.media_bytes
        grep_size = sum(os.path.getsize(os.path.join(fixture.grep, name)) for name in os.listdir(fixture.grep))
        folder_ok = len(os.listdir(fixture.folder)) == len(fixture.folder_lines)
    except OSError:
        return False
    return found == fixture.tree_entries and small_ok and media_ok and folder_ok and grep_size == fixture.grep_bytes


# --- contenders ----------------------------------------------------------------------------------------


@dataclass
class Contender:
    key: str
    label: str
    kind: str  # "ref", "sdk", "node", "floor"
    era: str  # "modern", "legacy"
    command: Callable[[str], list[str]]  # root -> argv
    env: dict[str, str] | None = None

    def argv(self, root: str) -> list[str]:
        return self.command(root)


def ref_command(root: str) -> list[str]:
    script = os.path.join(os.path.dirname(PY), "mcp-ref-fs")
    launcher = [script] if os.access(script, os.X_OK) else [PY, "-m", "mcp_ref_fs"]
    return launcher + REF_LIMITS + [root]


def variant_command(directory: str) -> Callable[[str], list[str]]:
    """mcp-ref-fs from another copy of its package (``DIR/mcp_ref_fs``), on this venv's mcp_ref: an A/B
    of a change in the same run (``--variant``). ``sys.path`` comes before the editable install's finder."""
    launcher = f"import sys; sys.path.insert(0, {directory!r}); from mcp_ref_fs.__main__ import main; sys.exit(main())"
    return lambda root: [PY, "-c", launcher] + REF_LIMITS + [root]


def make_contenders(peers: dict[str, Any], fixture_small: str, variant: str | None = None) -> list[Contender]:
    contenders = [
        Contender("ref", "mcp-ref-fs", "ref", "modern", ref_command),
        Contender("ref_legacy", "mcp-ref-fs legacy", "ref", "legacy", ref_command),
    ]
    if variant:
        contenders.append(Contender("variant", "mcp-ref-fs variant", "ref", "modern", variant_command(variant)))
    if peers.get("sdk_python"):
        sdk_python = peers["sdk_python"]
        contenders.append(Contender("sdk", "SDK (Python)", "sdk", "modern",
                                    lambda root: [sdk_python, os.path.join(HERE, "sdk_fs_server.py"), root]))
    if peers.get("node_entry"):
        entry = peers["node_entry"]
        node = peers["node"]
        contenders.append(Contender("node", "Node official", "node", "legacy", lambda root: [node, entry, root],
                                    env=dict(os.environ)))
    # Issue 21's floor is an asyncio server (readline, json, a canned answer); the bare floor, a
    # blocking line loop with no event loop, shows what asyncio itself costs.
    floor = os.path.join(HERE, "floor_server.py")
    contenders.append(Contender("floor", "floor (asyncio)", "floor", "modern",
                                lambda root: [PY, floor, "--asyncio", "--text-file", fixture_small]))
    contenders.append(Contender("bare_floor", "bare floor", "floor", "modern",
                                lambda root: [PY, floor, "--text-file", fixture_small]))
    return contenders


# --- installing the peers (outside every timed region; cached between runs) -----------------------------


def ensure_sdk_venv(progress: Callable[[str], None]) -> tuple[str | None, str]:
    python = os.path.join(SDK_VENV, "bin", "python")
    name, version = SDK_REQUIREMENT

    def installed() -> str | None:
        if not os.access(python, os.X_OK):
            return None
        probe = subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
                               capture_output=True, text=True, timeout=60, check=False)
        return probe.stdout.strip() if probe.returncode == 0 else None

    if installed() != version:
        progress(f"installing {name}=={version} into {os.path.relpath(SDK_VENV, ROOT)} (once)")
        try:
            if not os.access(python, os.X_OK):
                subprocess.run([sys.executable, "-m", "venv", SDK_VENV], check=True, capture_output=True, timeout=300)
            subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{name}=={version}"],
                           check=True, capture_output=True, timeout=900)
        except (subprocess.SubprocessError, OSError) as error:
            detail = getattr(error, "stderr", b"") or b""
            return None, f"SDK peer skipped: installing {name}=={version} failed ({error}; {detail[-300:]!r})"
        if installed() != version:
            return None, f"SDK peer skipped: {name}=={version} did not import from {SDK_VENV}"
    return python, f"SDK peer: {name}=={version} in {os.path.relpath(SDK_VENV, ROOT)}"


def ensure_node_server(progress: Callable[[str], None]) -> tuple[dict[str, str] | None, str]:
    npm, node = shutil.which("npm"), shutil.which("node")
    if not npm or not node:
        return None, "Node peer skipped: npm/node not found on PATH"
    package_dir = os.path.join(NODE_PREFIX, "node_modules", *NODE_PACKAGE.split("/"))

    def installed() -> str | None:
        try:
            with open(os.path.join(package_dir, "package.json")) as handle:
                return json.load(handle).get("version")
        except (OSError, ValueError):
            return None

    if installed() != NODE_VERSION:
        progress(f"installing {NODE_PACKAGE}@{NODE_VERSION} into {os.path.relpath(NODE_PREFIX, ROOT)} (once)")
        try:
            subprocess.run([npm, "install", "--prefix", NODE_PREFIX, "--no-audit", "--no-fund", "--save-exact",
                            f"{NODE_PACKAGE}@{NODE_VERSION}"], check=True, capture_output=True, timeout=900)
        except (subprocess.SubprocessError, OSError) as error:
            return None, f"Node peer skipped: npm install failed ({error})"
        if installed() != NODE_VERSION:
            return None, f"Node peer skipped: {NODE_PACKAGE}@{NODE_VERSION} not found after npm install"
    node_version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    entry = os.path.join(package_dir, "dist", "index.js")
    return {"node": node, "entry": entry}, f"Node peer: {NODE_PACKAGE}@{NODE_VERSION} on node {node_version}"


# --- one server on pipes ----------------------------------------------------------------------------------


class FsChild(core.Child):
    """``bench.Child`` with a longer silence limit: one tree or grep answer may take seconds."""

    def _fill(self, idle_timeout: float = IDLE_SECONDS) -> bytes:
        return super()._fill(idle_timeout)


class Session:
    """A contender's server process, spoken to in its era (legacy: ``initialize`` first)."""

    def __init__(self, contender: Contender, root: str, argv: list[str] | None = None) -> None:
        self.contender = contender
        self.next_id = 1
        env = core.child_env()
        if contender.env is not None:
            env = dict(contender.env)
        self.child = FsChild(argv or contender.argv(root), env=env)
        self.t_spawn = self.child.t_spawn
        self.notifications = 0  # server notifications seen (and skipped) while waiting for answers

    # requests
    def line(self, method: str, params: dict[str, Any] | None = None) -> tuple[int, bytes]:
        request_id = self.next_id
        self.next_id += 1
        body = dict(params or {})
        if self.contender.era == "modern":
            body["_meta"] = MODERN_META
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}
        return request_id, json.dumps(message, separators=(",", ":")).encode() + b"\n"

    def tool_line(self, name: str, arguments: dict[str, Any]) -> tuple[int, bytes]:
        return self.line("tools/call", {"name": name, "arguments": arguments})

    def initialize_line(self) -> tuple[int, bytes]:
        request_id = self.next_id
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {
            "protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": {"name": "mcp-ref-fs-bench", "version": "0.1.0"}}}
        return request_id, json.dumps(message, separators=(",", ":")).encode() + b"\n"

    INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'

    def handshake(self) -> None:
        """The legacy handshake (initialize, its answer, initialized); nothing for modern contenders."""
        if self.contender.era != "legacy":
            return
        request_id, line = self.initialize_line()
        self.child.send(line)
        answer = result_of(self.answer(), request_id)
        if "protocolVersion" not in answer:
            raise Wrong(f"initialize answered without a protocolVersion: {answer!r}"[:300])
        self.child.send(self.INITIALIZED)

    def roundtrip(self, line_and_id: tuple[int, bytes]) -> tuple[float, dict[str, Any], int]:
        """Send one request, wait for its whole answer line: (seconds, result, answer bytes)."""
        request_id, line = line_and_id
        start = time.perf_counter()
        self.child.send(line)
        answer = self.answer()
        elapsed = time.perf_counter() - start
        return elapsed, result_of(answer, request_id), len(answer) + 1

    def answer(self) -> bytes:
        """The next line that is not a notification (a legacy client is told of list changes unasked)."""
        while True:
            (line,) = self.child.read_lines(1)
            if not is_notification(line):
                return line
            self.notifications += 1

    def close(self) -> None:
        try:
            self.child.close(timeout=20)
        finally:
            self.child.kill()

    def cpu_ms(self) -> float | None:
        """CPU time the server has used so far, all its threads, in ms (Linux ``schedstat``: ns, not
        the 10 ms ticks of ``/proc/PID/stat``); None where unavailable. Less moved by other load on
        the machine than wall time."""
        pid = self.child.proc.pid
        try:
            total = 0
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/schedstat") as handle:
                    total += int(handle.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return total / 1e6

    def settle(self, quiet_ms: float = 0.5, step: float = 0.01, limit: float = 2.0) -> None:
        """Wait (at most ``limit`` s) until the server has used under ``quiet_ms`` of CPU in ``step`` s:
        work it does after answering (Node collects garbage for up to ~0.2 s after an 8 MiB answer)
        must not land in the next contender's sample on a 2-core machine."""
        deadline = time.perf_counter() + limit
        last = self.cpu_ms()
        while last is not None and time.perf_counter() < deadline:
            time.sleep(step)
            now = self.cpu_ms()
            if now is None or now - last < quiet_ms:
                return
            last = now


def keep_driver_memory() -> None:
    """Let this driver's C allocator keep freed memory (glibc; a no-op elsewhere). Reading an answer
    of 11-22 MiB makes buffers that glibc otherwise unmaps or trims when they are freed, and how much
    it keeps depends on the previous answer's size: after the Node server's 22 MiB answer to an
    8 MiB read, the next contender's 11 MiB answer took the driver ~12 ms longer to read (28 ms
    against 16 ms after an 11 MiB one), whatever the server did. Kept, every answer is read alike."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(-3, 32 * 1024 * 1024)  # M_MMAP_THRESHOLD: blocks under 32 MiB come from the heap...
    mallopt(-1, 512 * 1024 * 1024)  # M_TRIM_THRESHOLD: ...which keeps up to 512 MiB free


def run_measured(workload: Workload, session: Session, fixture: Fixture) -> dict[str, Any]:
    """``workload.run`` with the server's CPU time during it (``server_cpu_ms``) when it can be read;
    then waits for the server to go idle (outside the sample)."""
    before = session.cpu_ms()
    sample = workload.run(session, fixture)  # type: ignore[misc]
    after = session.cpu_ms()
    if before is not None and after is not None:
        sample["server_cpu_ms"] = after - before
    session.settle()
    return sample


NOTIFICATION = b'"method":"notifications/'


def is_notification(line: bytes) -> bool:
    return NOTIFICATION in line[:200] and "id" not in json.loads(line)


def result_of(line: bytes, request_id: int) -> dict[str, Any]:
    message = json.loads(line)
    if message.get("id") != request_id:
        raise Wrong(f"answer to request {message.get('id')!r} while waiting for {request_id}: {line[:200]!r}")
    if "result" not in message:
        raise Wrong(f"JSON-RPC error: {json.dumps(message.get('error'))[:200]}")
    return message["result"]


def tool_text(result: dict[str, Any]) -> str:
    if result.get("isError"):
        raise Wrong(f"tool error: {json.dumps(result.get('content'))[:200]}")
    content = result.get("content") or []
    if not content or content[0].get("type") != "text":
        raise Wrong(f"no text block in the answer: {json.dumps(result)[:200]}")
    return content[0]["text"]


# --- workloads ----------------------------------------------------------------------------------------------
#
# Each sample function takes (session, fixture) and returns {"value": <ms>} plus extras; it raises
# Wrong for a wrong answer. Checks run after the clock stops.


def check_small(result: dict[str, Any], fixture: Fixture) -> None:
    if tool_text(result) != fixture.small_text:
        raise Wrong("read_text_file returned other text than the file holds")


def pipelined(session: Session, lines: list[tuple[int, bytes]], check: Callable[[dict[str, Any]], None]) -> float:
    """All requests with at most WINDOW in flight; returns milliseconds from the first write to the last answer."""
    child = session.child
    payloads = [line for _, line in lines]
    n = len(payloads)
    sent = min(WINDOW, n)
    received = 0
    chunks = [bytes(child._buffer)]
    child._buffer.clear()
    start = time.perf_counter()
    child.send(b"".join(payloads[:sent]))
    received = chunks[0].count(b"\n")
    while received < n:
        chunk = child._fill()
        chunks.append(chunk)
        got = chunk.count(b"\n") - chunk.count(NOTIFICATION)  # (a notification line is no answer)
        received += got
        if got and sent < n:
            more = min(got, n - sent)
            child.send(b"".join(payloads[sent:sent + more]))
            sent += more
    elapsed = time.perf_counter() - start
    data = b"".join(chunks)
    cut = data.rindex(b"\n") + 1
    child._buffer += data[cut:]
    answers = {}
    for raw in data[:cut].split(b"\n")[:-1]:
        message = json.loads(raw)
        if "id" not in message and str(message.get("method", "")).startswith("notifications/"):
            session.notifications += 1
            continue
        answers[message.get("id")] = message
    if sorted(answers) != sorted(request_id for request_id, _ in lines):
        raise Wrong(f"{len(answers)} distinct answers to {n} requests")
    for message in answers.values():
        if "result" not in message:
            raise Wrong(f"JSON-RPC error: {json.dumps(message.get('error'))[:200]}")
        check(message["result"])
    return elapsed * 1000


def w_reads(session: Session, fixture: Fixture, count: int = 2000) -> dict[str, Any]:
    lines = [session.tool_line("read_text_file", {"path": fixture.small}) for _ in range(count)]
    ms = pipelined(session, lines, lambda result: check_small(result, fixture))
    return {"value": ms, "msgs_per_s": count / ms * 1000}


def w_sequential(session: Session, fixture: Fixture, count: int = 300) -> dict[str, Any]:
    samples = []
    results = []
    for _ in range(count):
        elapsed, result, _size = session.roundtrip(session.tool_line("read_text_file", {"path": fixture.small}))
        samples.append(elapsed * 1000)
        results.append(result)
    for result in results:
        check_small(result, fixture)
    return {"value": statistics.median(samples), "p99": core.percentile(samples, 99), "samples": count}


def w_list(session: Session, fixture: Fixture, count: int = 500) -> dict[str, Any]:
    def check(result: dict[str, Any]) -> None:
        lines = tool_text(result).split("\n")
        if len(lines) != len(fixture.folder_lines) or set(lines) != fixture.folder_lines:
            raise Wrong("list_directory listed other entries than the folder holds")

    lines = [session.tool_line("list_directory", {"path": fixture.folder}) for _ in range(count)]
    return {"value": pipelined(session, lines, check)}


def _flatten(nodes: list[dict[str, Any]], prefix: str, out: set[tuple[str, str]]) -> None:
    for node in nodes:
        path = prefix + node["name"]
        out.add((path, node["type"]))
        if node["type"] == "directory":
            _flatten(node.get("children") or [], path + "/", out)


def w_tree(session: Session, fixture: Fixture) -> dict[str, Any]:
    elapsed, result, size = session.roundtrip(session.tool_line("directory_tree", {"path": fixture.tree}))
    entries: set[tuple[str, str]] = set()
    try:
        _flatten(json.loads(tool_text(result)), "", entries)
    except (ValueError, KeyError, TypeError) as error:
        raise Wrong(f"directory_tree text is not the expected JSON tree ({error})") from None
    if entries != fixture.tree_entries:
        raise Wrong(f"directory_tree: {len(entries)} entries, expected {len(fixture.tree_entries)}")
    return {"value": elapsed * 1000, "wire_bytes": size}


def w_search(session: Session, fixture: Fixture) -> dict[str, Any]:
    elapsed, result, size = session.roundtrip(session.tool_line("search_files", {"path": fixture.tree, "pattern": "**/*.py"}))
    found = tool_text(result).split("\n")
    if len(found) != len(fixture.tree_py) or set(found) != fixture.tree_py:
        raise Wrong(f"search_files: {len(found)} paths, expected the {len(fixture.tree_py)} .py files")
    return {"value": elapsed * 1000, "wire_bytes": size}


def w_grep(session: Session, fixture: Fixture) -> dict[str, Any]:
    arguments = {"path": fixture.grep, "pattern": NEEDLE, "literal": True, "maxResults": 100000}
    elapsed, result, size = session.roundtrip(session.tool_line("grep_files", arguments))
    found = set()
    for line in tool_text(result).split("\n"):
        path, _, rest = line.partition(":")
        number, _, text = rest.partition(": ")
        if not number.isdigit() or NEEDLE not in text:
            raise Wrong(f"grep_files line not in 'path:line: text' form: {line[:120]!r}")
        found.add((path, int(number)))
    if found != fixture.grep_matches:
        raise Wrong(f"grep_files: {len(found)} matching lines, the driver counts {len(fixture.grep_matches)}")
    return {"value": elapsed * 1000, "wire_bytes": size, "matches": len(found)}


def _check_blob(encoded: str | None, fixture: Fixture, what: str) -> None:
    if not encoded or base64.b64decode(encoded) != fixture.media_bytes:
        raise Wrong(f"{what}: the decoded bytes differ from the file")


def w_media(session: Session, fixture: Fixture) -> dict[str, Any]:
    elapsed, result, size = session.roundtrip(session.tool_line("read_media_file", {"path": fixture.media}))
    if result.get("isError"):
        raise Wrong(f"tool error: {json.dumps(result.get('content'))[:200]}")
    block = (result.get("content") or [{}])[0]
    _check_blob(block.get("data") or (block.get("resource") or {}).get("blob"), fixture, "read_media_file")
    return {"value": elapsed * 1000, "wire_bytes": size}


def w_resread(session: Session, fixture: Fixture) -> dict[str, Any]:
    elapsed, result, size = session.roundtrip(session.line("resources/read", {"uri": "file://" + quote(fixture.media)}))
    _check_blob((result.get("contents") or [{}])[0].get("blob"), fixture, "resources/read")
    return {"value": elapsed * 1000, "wire_bytes": size}


def w_edit(session: Session, fixture: Fixture) -> dict[str, Any]:
    key = session.contender.key
    k = fixture.edit_next[key]
    if k >= fixture.edit_markers:
        raise core.BenchError("ran out of edit markers; lower --rounds")
    fixture.edit_next[key] = k + 1
    old, new = f"EDIT_TARGET_{k:03d} ", f"EDIT_DONE_{k:03d} "
    path = fixture.edit_path(key)
    elapsed, result, size = session.roundtrip(session.tool_line("edit_file", {"path": path, "edits": [{"oldText": old, "newText": new}]}))
    text = tool_text(result)
    expected = fixture.edits[key].replace(old, new, 1)
    fixture.edits[key] = expected
    with open(path, encoding="utf-8", newline="") as handle:
        on_disk = handle.read()
    if on_disk != expected:
        raise Wrong("edit_file: the file on disk is not the original with the one replacement")
    if "+L" not in text or new.strip() not in text:
        raise Wrong("edit_file: the answer holds no diff of the change")
    return {"value": elapsed * 1000, "wire_bytes": size}


def w_reslist(session: Session, fixture: Fixture) -> dict[str, Any]:
    """The first page alone, then every page; checks the union against the tree's files."""
    expected = {"file://" + quote(path) for path in fixture.tree_files}
    first_s, result, _ = session.roundtrip(session.line("resources/list"))
    first = [item["uri"] for item in result.get("resources", [])]
    if not first or not set(first) <= expected:
        raise Wrong("resources/list: the first page holds URIs that are not files of the tree")
    seen: list[str] = []
    page_ms: list[float] = []
    cursor = None
    start = time.perf_counter()
    while True:
        elapsed, result, _ = session.roundtrip(session.line("resources/list", {"cursor": cursor} if cursor else {}))
        page_ms.append(elapsed * 1000)
        seen += [item["uri"] for item in result.get("resources", [])]
        cursor = result.get("nextCursor")
        if not cursor:
            break
        if len(page_ms) > len(expected) + 10:
            raise Wrong("resources/list never ends")
    total_ms = (time.perf_counter() - start) * 1000
    if len(seen) != len(set(seen)) or set(seen) != expected:
        raise Wrong(f"resources/list: {len(seen)} URIs over {len(page_ms)} pages ({len(set(seen))} distinct), expected {len(expected)}")
    half = len(page_ms) // 2
    return {"value": first_s * 1000, "all_ms": total_ms, "pages": len(page_ms), "first_page_items": len(first),
            "early_page_ms": statistics.median(page_ms[:half] or page_ms), "late_page_ms": statistics.median(page_ms[half:])}


def cold_sample(contender: Contender, fixture: Fixture, read: bool) -> dict[str, Any]:
    """Spawn -> the whole answer to the first request (discover/initialize), or to the first read_text_file."""
    session = Session(contender, fixture.root)
    try:
        if contender.era == "legacy":
            request_id, line = session.initialize_line()
            session.child.send(line)
            result = result_of(session.answer(), request_id)
            if read:
                session.child.send(session.INITIALIZED)
                request_id, line = session.tool_line("read_text_file", {"path": fixture.small})
                session.child.send(line)
                result = result_of(session.answer(), request_id)
        else:
            request_id, line = (session.tool_line("read_text_file", {"path": fixture.small}) if read
                                else session.line("server/discover"))
            session.child.send(line)
            result = result_of(session.answer(), request_id)
        done = time.perf_counter()
        if read:
            check_small(result, fixture)
        sample: dict[str, Any] = {"value": (done - session.t_spawn) * 1000}
        if contender.kind != "ref":
            return sample  # killed below: the SDK server alone takes ~1 s to exit after EOF
        try:  # the answer was right; a bad exit after EOF is reported, not hidden, and does not void the time
            session.close()
        except core.BenchError as error:
            sample["exit_error"] = str(error).split("; stderr:")[0].split(" exited with ")[-1] + " " + \
                session.child.stderr_tail().strip()[-120:].replace("\n", " ")
    finally:
        session.child.kill()
    return sample


# --- the table of workloads ----------------------------------------------------------------------------------


@dataclass
class Workload:
    key: str
    label: str
    phase: str  # "cold", "steady", "media", "resread", "reslist"
    run: Callable[..., dict[str, Any]] | None
    kinds: tuple[str, ...]  # contender kinds it applies to
    na: dict[str, str] = field(default_factory=dict)  # kind -> why not applicable


ALL = ("ref", "sdk", "node", "floor")
SERVERS_ONLY = ("ref", "sdk", "node")
WORKLOADS = [
    Workload("cold_first", "cold start: spawn -> first answer (discover / initialize)", "cold", None, ALL),
    Workload("cold_read", "cold start: spawn -> first read_text_file answer", "cold", None, ALL),
    Workload("reads", "2,000 pipelined read_text_file, 1 KiB, 32 in flight", "steady", w_reads, ALL),
    Workload("seq", "300 sequential read_text_file: p50", "steady", w_sequential, ALL),
    Workload("list", "500 pipelined list_directory, 200 entries", "steady", w_list, SERVERS_ONLY),
    Workload("tree", "directory_tree, 10,000 files", "steady", w_tree, SERVERS_ONLY),
    Workload("search", "search_files **/*.py over the tree", "steady", w_search, SERVERS_ONLY),
    Workload("grep", "grep_files literal over 50 MiB", "steady", w_grep, ("ref", "sdk"), {"node": "no grep_files tool"}),
    Workload("edit", "edit_file, one edit in a 1 MiB file", "steady", w_edit, SERVERS_ONLY),
    Workload("media", "read_media_file, 8 MiB binary", "media", w_media, SERVERS_ONLY),
    Workload("resread", "resources/read, the same 8 MiB binary", "resread", w_resread, ("ref", "sdk"),
             {"node": "serves no resources"}),
    Workload("reslist", "resources/list over the 10k tree: first page (warm server)", "reslist", w_reslist, ("ref",),
             {"node": "serves no resources", "sdk": "no tree listing in the high-level API"}),
]
WORKLOAD_KEYS = [w.key for w in WORKLOADS]
NA_FLOOR = "the floor only answers read-shaped lines"
WARM_UP_COUNTS = {"reads": 100, "seq": 30, "list": 50}  # the unmeasured first run of a request series


# --- running ----------------------------------------------------------------------------------------------------


@dataclass
class Cell:
    samples: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    na: str | None = None
    peak_rss_mib: float | None = None
    idle_rss_mib: float | None = None
    first_call_ms: float | None = None  # resources/list: the first listing after start (not a sample)

    def exit_errors(self) -> list[str]:
        return [s["exit_error"] for s in self.samples if "exit_error" in s]

    def values(self, name: str = "value") -> list[float]:
        return [s[name] for s in self.samples if name in s]

    def median(self, name: str = "value") -> float | None:
        values = self.values(name)
        return statistics.median(values) if values and self.error is None else None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"samples": self.samples}
        for name in ("error", "na", "peak_rss_mib", "idle_rss_mib", "first_call_ms"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.error is None and self.samples:
            out["median"] = self.median()
            for extra in ("p99", "all_ms", "early_page_ms", "late_page_ms", "pages", "msgs_per_s", "server_cpu_ms"):
                if self.values(extra):
                    out[f"median_{extra}"] = statistics.median(self.values(extra))
        return out


class Runner:
    def __init__(self, contenders: list[Contender], fixture: Fixture, options: argparse.Namespace,
                 progress: Callable[[str], None]) -> None:
        self.contenders = contenders
        self.fixture = fixture
        self.options = options
        self.progress = progress
        self.cells: dict[tuple[str, str], Cell] = {}
        self.selected = [w for w in WORKLOADS if w.key in options.workloads]

    def cell(self, workload: Workload, contender: Contender) -> Cell:
        key = (workload.key, contender.key)
        if key not in self.cells:
            cell = Cell()
            if contender.kind not in workload.kinds:
                cell.na = NA_FLOOR if contender.kind == "floor" else workload.na.get(contender.kind, "not applicable")
            self.cells[key] = cell
        return self.cells[key]

    def applicable(self, workload: Workload) -> list[Contender]:
        return [c for c in self.contenders if self.cell(workload, c).na is None]

    @staticmethod
    def rotated(items: list[Contender], round_index: int) -> list[Contender]:
        shift = round_index % len(items) if items else 0
        return items[shift:] + items[:shift]

    def record(self, cell: Cell, run: Callable[[], dict[str, Any]]) -> bool:
        """Take one sample into ``cell``; False (and the cell says why) when the answer was wrong or the server failed."""
        if cell.error is not None:
            return False
        try:
            cell.samples.append(run())
            return True
        except Wrong as error:
            cell.error = f"wrong answer: {error}"
        except core.BenchError as error:
            cell.error = f"failed: {error}"
        return False

    # cold start: a fresh server per sample
    def run_cold(self) -> None:
        for workload in [w for w in self.selected if w.phase == "cold"]:
            contenders = self.applicable(workload)
            self.progress(f"{workload.key}: {self.options.cold_runs} runs x {len(contenders)} contenders (+1 warm-up)")
            for run in range(self.options.cold_runs + 1):
                for contender in self.rotated(contenders, run):
                    cell = self.cell(workload, contender)
                    if run == 0:  # warm-up: page cache, byte-code caches
                        try:
                            cold_sample(contender, self.fixture, workload.key == "cold_read")
                        except core.BenchError as error:
                            cell.error = f"failed: {error}"
                        continue
                    self.record(cell, lambda c=contender, w=workload: cold_sample(c, self.fixture, w.key == "cold_read"))

    def start(self, contender: Contender, root: str) -> Session:
        session = Session(contender, root)
        try:
            session.handshake()
        except BaseException:
            session.child.kill()
            raise
        return session

    # the steady-state workloads: one long-lived server per contender
    def run_steady(self) -> None:
        workloads = [w for w in self.selected if w.phase == "steady"]
        if not workloads:
            return
        sessions: dict[str, Session | None] = {}
        for contender in self.contenders:
            try:
                sessions[contender.key] = self.start(contender, self.fixture.root)
                # warm-up: imports, schema compilation, the page cache
                for _ in range(20):
                    check_small(sessions[contender.key].roundtrip(
                        sessions[contender.key].tool_line("read_text_file", {"path": self.fixture.small}))[1], self.fixture)
            except core.BenchError as error:
                sessions[contender.key] = None
                for workload in workloads:
                    cell = self.cell(workload, contender)
                    if cell.na is None:
                        cell.error = f"failed to start: {error}"
        try:
            for workload in workloads:
                contenders = [c for c in self.applicable(workload) if sessions.get(c.key)]
                rounds = self.rounds(workload)
                self.progress(f"{workload.key}: {rounds} rounds x {len(contenders)} contenders")
                for contender in contenders:  # one unmeasured run: first-call costs, caches
                    self.sample(workload, contender, sessions, warm_up=True)
                for round_index in range(rounds):
                    for contender in self.rotated(contenders, round_index):
                        self.sample(workload, contender, sessions)
        finally:
            for session in sessions.values():
                if session is not None:
                    session.child.kill()

    def rounds(self, workload: Workload) -> int:
        return self.options.rounds

    def sample(self, workload: Workload, contender: Contender, sessions: dict[str, Session | None], warm_up: bool = False) -> None:
        session = sessions.get(contender.key)
        cell = self.cell(workload, contender)
        if session is None or cell.error is not None:
            return
        assert workload.run is not None
        if warm_up and workload.key == "edit":
            return  # each edit consumes a marker; the measured edits need no warm-up of their own
        def run() -> dict[str, Any]:
            before = session.notifications
            sample = run_measured(workload, session, self.fixture)
            if session.notifications > before:  # e.g. list_changed after an edit, for a legacy client
                sample["notifications_skipped"] = session.notifications - before
            return sample

        # The warm-up sample (a shorter run for the request series) is thrown away; if it fails,
        # a measured sample is tried, so the cell says why.
        short = WARM_UP_COUNTS.get(workload.key)
        warm = (lambda: workload.run(session, self.fixture, count=short)) if short else run  # type: ignore[misc]
        ok = self.record(Cell(), warm) if warm_up else False
        if not ok:
            ok = self.record(cell, run)
        if not ok and (session.child.proc.poll() is not None or (cell.error or "").startswith("failed")):
            # the server died or stopped answering: a fresh one for the next workloads
            session.child.kill()
            try:
                sessions[contender.key] = self.start(contender, self.fixture.root)
            except core.BenchError:
                sessions[contender.key] = None

    # fresh servers per contender, for peak RSS (media, resread) or another root (reslist)
    def run_fresh(self, phase: str, root: str, reads: int) -> None:
        for workload in [w for w in self.selected if w.phase == phase]:
            contenders = self.applicable(workload)
            self.progress(f"{workload.key}: {reads} rounds x {len(contenders)} contenders (fresh servers)")
            sessions: dict[str, Session] = {}
            try:
                for contender in contenders:
                    cell = self.cell(workload, contender)
                    try:
                        session = sessions[contender.key] = self.start(contender, root)
                        if phase == "reslist":  # started and warm; the first listing after start is kept apart
                            session.roundtrip(session.line("server/discover") if contender.era == "modern" else session.line("ping"))
                            first_call_s, _, _ = session.roundtrip(session.line("resources/list"))
                            cell.first_call_ms = first_call_s * 1000
                        else:  # one small call, then the idle peak
                            check_small(session.roundtrip(session.tool_line("read_text_file", {"path": self.fixture.small}))[1],
                                        self.fixture)
                        cell.idle_rss_mib = session.child.peak_rss_mib()
                    except core.BenchError as error:
                        cell.error = f"failed to start: {error}"
                for round_index in range(reads):
                    for contender in self.rotated([c for c in contenders if c.key in sessions], round_index):
                        self.record(self.cell(workload, contender),
                                    lambda w=workload, c=contender, live=sessions: run_measured(w, live[c.key], self.fixture))
                for key, session in sessions.items():
                    cell = self.cells[(workload.key, key)]
                    cell.peak_rss_mib = session.child.peak_rss_mib()
            finally:
                for session in sessions.values():
                    session.child.kill()

    def run_all(self) -> None:
        self.run_cold()
        self.run_steady()
        self.run_fresh("media", self.fixture.root, self.options.large_reads)
        self.run_fresh("resread", self.fixture.root, self.options.large_reads)
        self.run_fresh("reslist", self.fixture.tree, self.options.rounds)


# --- report ---------------------------------------------------------------------------------------------------------


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def fmt_ratio(mine: float | None, theirs: float | None) -> str:
    if mine is None or theirs is None or theirs == 0:
        return "-"
    return f"{mine / theirs:.2f}x"


def _short(text: str, limit: int = 60) -> str:
    text = text.replace("|", "/").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Workloads whose server CPU time gets a row of its own (all of it, every thread, during the sample):
# on a shared machine it moves less than wall time, which also holds the client's share and waits.
CPU_ROWS = {"list": "list_directory x 500", "tree": "directory_tree", "search": "search_files", "grep": "grep_files",
            "media": "read_media_file", "resread": "resources/read"}


def table_rows(runner: Runner) -> list[tuple[str, Callable[[Cell], str], Callable[[Cell], float | None]]]:
    """(workload key, label) rows with how to show a cell and which number the ratios use."""
    rows = []
    for workload in runner.selected:
        rows.append((workload.key, workload.label, lambda c: fmt_ms(c.median()), lambda c: c.median()))
        if workload.key == "seq":
            rows.append(("seq", "300 sequential read_text_file: p99", lambda c: fmt_ms(c.median("p99")), lambda c: c.median("p99")))
        if workload.key in CPU_ROWS:
            rows.append((workload.key, f"{CPU_ROWS[workload.key]}: server CPU time",
                         lambda c: fmt_ms(c.median("server_cpu_ms")), lambda c: c.median("server_cpu_ms")))
        if workload.key in ("media", "resread"):
            rows.append((workload.key, f"{workload.key == 'media' and 'read_media_file' or 'resources/read'}: server peak RSS (idle)",
                         lambda c: "-" if c.peak_rss_mib is None else f"{c.peak_rss_mib:.0f} MiB ({c.idle_rss_mib or 0:.0f})",
                         lambda c: c.peak_rss_mib if c.error is None and c.samples else None))
        if workload.key == "reslist":
            rows.append(("reslist", "resources/list: first page, first listing after start",
                         lambda c: fmt_ms(c.first_call_ms) if c.error is None else "-", lambda c: c.first_call_ms))
            rows.append(("reslist", "resources/list: every page", lambda c: fmt_ms(c.median("all_ms"))
                         + (f" ({int(c.median('pages'))} pages)" if c.median("pages") else ""), lambda c: c.median("all_ms")))
            rows.append(("reslist", "resources/list: median page, first half / second half",
                         lambda c: f"{fmt_ms(c.median('early_page_ms'))} / {fmt_ms(c.median('late_page_ms'))}" if c.median("pages") else "-",
                         lambda c: None))
    return rows


def render_markdown(runner: Runner, results: dict[str, Any]) -> str:
    m = results["machine"]
    contenders = runner.contenders
    ref = next(c for c in contenders if c.key == "ref")
    peers = [c for c in contenders if c.kind in ("sdk", "node", "floor") or c.key == "variant"]
    out = [
        f"### mcp-ref-fs benchmark, {m['date']}",
        "",
        (f"{m['platform']}, {m['cpus']} CPUs ({m['cpu_model']}), Python {m['python']}, load average {m['load_average_1min_at_start']:.2f} "
        f"at start; `fs_bench.py {' '.join(results['argv'])}` ({'quick' if runner.options.quick else 'full'}: "
        f"{runner.options.cold_runs} cold starts, {runner.options.rounds} rounds, {runner.options.large_reads} large reads per contender; "
        f"medians; took {results['elapsed_s']:.0f} s). Code: commit {results['source'].get('commit', '?')}"
        f"{' + uncommitted changes' if results['source'].get('uncommitted_changes') else ''} "
        f"(mcp_ref/ + servers/ digest {results['source']['code_sha256']})."),
        "",
        "Fixture: " + runner.fixture.describe() + ".",
    ]
    for note in results["notes"]:
        out.append(f"{note}.  ")
    out.append("")
    header = ["workload"] + [c.label for c in contenders] + [f"ref/{p.label}" for p in peers]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "---|" * len(header))
    for key, label, show, number in table_rows(runner):
        workload = next(w for w in WORKLOADS if w.key == key)
        cells = []
        for contender in contenders:
            cell = runner.cell(workload, contender)
            if cell.na:
                cells.append(f"n/a ({_short(cell.na, 40)})" if contender.kind != "floor" else "n/a")
            elif cell.error:
                cells.append(_short(cell.error))
            else:
                cells.append(show(cell))
        mine = number(runner.cell(workload, ref))
        ratios = [fmt_ratio(mine, number(runner.cell(workload, p))) if runner.cell(workload, p).na is None else "-" for p in peers]
        out.append("| " + " | ".join([label] + cells + ratios) + " |")
    out.append("")
    out.append("Ratios are mcp-ref-fs (modern era) over the peer: below 1.00x, mcp-ref-fs is faster (or smaller).")
    for (workload_key, contender_key), cell in runner.cells.items():
        errors = cell.exit_errors()
        if errors:
            label = next(c.label for c in contenders if c.key == contender_key)
            out.append(f"{label}, {workload_key}: the server exited abnormally after answering correctly (EOF on stdin) in "
                       f"{len(errors)} of {len(cell.samples)} measured starts: "
                       f"exit status {errors[0]}")
    verdicts = results.get("targets") or []
    if verdicts:
        out.append("")
        out.append("The goals mcp-ref-fs is held to, judged on this run's medians (met or MISSED; a goal that compares "
                   "it with the SDK or the Node server is judged only when --peers ran them):")
        out.append("")
        for verdict in verdicts:
            out.append(f"- {verdict['status']}: {verdict['what']} — {verdict['detail']}")
    return "\n".join(out)


# How the report names each peer in a goal.
PEER_NAMES = {"node": "the official Node server", "sdk": "the SDK server",
              "floor": "the floor (an asyncio line loop answering the same shape with json, no file work)"}


def evaluate_targets(runner: Runner) -> list[dict[str, Any]]:
    """The performance goals (issue 9, and issue 21's marked so), judged on this run's medians (absent peers: not judged).
    Each ``what`` says, in a user's terms, what is measured and what it must be."""
    by = {(w, c): cell for (w, c), cell in runner.cells.items()}
    keys = {c.key for c in runner.contenders}

    def med(workload: str, contender: str, name: str = "value") -> float | None:
        cell = by.get((workload, contender))
        return None if cell is None else cell.median(name)

    verdicts: list[dict[str, Any]] = []

    def verdict(what: str, met: bool, detail: str, **more: Any) -> None:
        verdicts.append({"what": what, "status": "met" if met else "MISSED", "detail": detail, **more})

    def ratio_target(doing: str, workload: str, peer: str, limit: float, name: str = "value") -> None:
        if peer not in keys or (workload, peer) not in by:
            return
        bound = f"no slower than {PEER_NAMES[peer]}" if limit == 1.0 else f"at most {limit:.2f}x the time {PEER_NAMES[peer]} takes"
        what = f"{doing}, {bound}"
        mine, theirs = med(workload, "ref", name), med(workload, peer, name)
        if mine is None or theirs is None:
            verdicts.append({"what": what, "status": "NOT JUDGED", "detail": "a cell has no time"})
            return
        ratio = mine / theirs
        detail = f"{fmt_ms(mine)} against {fmt_ms(theirs)}, {ratio:.2f}x"
        if ratio > limit:
            detail += f", {fmt_ms(mine - limit * theirs)} too slow"
        verdict(what, ratio <= limit, detail, ratio=ratio, limit=limit)

    ratio_target("starting the server and answering its first read_text_file", "cold_read", "node", 0.4)
    ratio_target("starting the server and answering its first read_text_file", "cold_read", "sdk", 0.15)
    ratio_target("starting the server and answering its first request", "cold_first", "node", 0.4)
    ratio_target("starting the server and answering its first request", "cold_first", "sdk", 0.15)
    ratio_target("2,000 reads of a 1 KiB file sent without waiting", "reads", "node", 0.7)
    ratio_target("2,000 reads of a 1 KiB file sent without waiting", "reads", "sdk", 0.2)
    p99 = med("seq", "ref", "p99")
    if p99 is not None:
        floor = med("seq", "floor", "p99")
        noise = "" if floor is None else (f" (a server that does no work took {fmt_ms(floor)} in the same run: above ~1 ms "
                                          "that is the machine's scheduling, not mcp-ref-fs)")
        verdict("one read after another, 99 in 100 answered within 1 ms", p99 <= 1.0,
                f"{fmt_ms(p99)} at the 99th percentile" + ("" if p99 <= 1.0 else f", {p99 - 1.0:.2f} ms too slow") + noise)
    for workload, label in (("tree", "directory_tree over 10,000 files"), ("search", "search_files **/*.py over 10,000 files"),
                            ("grep", "grep_files over 52 MiB of text")):
        peers = [(p, med(workload, p)) for p in ("sdk", "node") if p in keys and by.get((workload, p)) and by[(workload, p)].na is None]
        peers = [(p, v) for p, v in peers if v is not None]
        if peers:
            fastest = min(peers, key=lambda item: item[1])[0]
            ratio_target(f"{label} (against the faster peer)", workload, fastest, 1.0)
    ratio_target("read_media_file of an 8 MiB file", "media", "sdk", 1.0)
    ratio_target("resources/read of an 8 MiB file", "resread", "sdk", 1.0)
    for workload, label in (("media", "read_media_file"), ("resread", "resources/read")):
        cell = by.get((workload, "ref"))
        if cell is not None and cell.peak_rss_mib is not None:
            ok = cell.peak_rss_mib <= 100
            verdict(f"memory while answering a {label} of an 8 MiB file, at most 100 MiB", ok,
                    f"{cell.peak_rss_mib:.0f} MiB at its peak ({cell.idle_rss_mib or 0:.0f} idle)"
                    + ("" if ok else f", {cell.peak_rss_mib - 100:.0f} MiB too much"))
    # Issue 21's goals: closer to Node and the SDK, and to the floor of the language.
    ratio_target("[issue 21] 500 list_directory calls of 200 entries sent without waiting", "list", "node", 1.0)
    ratio_target("[issue 21] 500 list_directory calls of 200 entries sent without waiting", "list", "sdk", 0.3)
    ratio_target("[issue 21] 2,000 reads of a 1 KiB file sent without waiting", "reads", "floor", 1.5)
    ratio_target("[issue 21] 2,000 reads of a 1 KiB file sent without waiting", "reads", "node", 0.5)
    ratio_target("[issue 21] one read after another, the 99th percentile", "seq", "node", 0.5, name="p99")
    for workload, doing in (("cold_first", "starting the server and answering its first request"),
                            ("cold_read", "starting the server and answering its first read_text_file")):
        ratio_target(f"[issue 21] {doing}", workload, "floor", 1.2)
        ratio_target(f"[issue 21] {doing}", workload, "node", 0.3)
    ratio_target("[issue 21] read_media_file of an 8 MiB file", "media", "sdk", 0.6)
    mine, theirs = by.get(("media", "ref")), by.get(("media", "sdk"))
    if mine is not None and theirs is not None and mine.peak_rss_mib and theirs.peak_rss_mib:
        share = mine.peak_rss_mib / theirs.peak_rss_mib
        verdict("[issue 21] memory while answering a read_media_file of an 8 MiB file, at most 0.50x the SDK server's peak",
                share <= 0.5, f"{mine.peak_rss_mib:.0f} MiB against {theirs.peak_rss_mib:.0f} MiB, {share:.2f}x", ratio=share, limit=0.5)
    ratio_target("[issue 21] search_files **/*.py over 10,000 files", "search", "sdk", 0.8)
    first = med("reslist", "ref")
    if first is not None:
        verdict("resources/list over 10,000 files, the first page within 50 ms", first < 50, fmt_ms(first))
        early, late = med("reslist", "ref", "early_page_ms"), med("reslist", "ref", "late_page_ms")
        pages, everything = med("reslist", "ref", "pages"), med("reslist", "ref", "all_ms")
        if early is not None and late is not None and pages and everything is not None:
            verdict("resources/list page by page, a late page costing no more than an early one (at most 2x)", late <= 2 * early,
                    f"{int(pages)} pages in {fmt_ms(everything)}; a page of the second half {fmt_ms(late)}, "
                    f"of the first half {fmt_ms(early)}")
        cold = by[("reslist", "ref")].first_call_ms
        if cold is not None:
            verdict("resources/list right after start, the first page within 50 ms", cold < 50, fmt_ms(cold))
    return verdicts


# --- profiling (--profile) ---------------------------------------------------------------------------------------------

# Frames every stack passes through (the event loop, thread start-up, import machinery): left out of
# the listings so the top entries are the work itself. Percentages are unaffected.
PLUMBING = ("asyncio/", "_contextvars.Context", "selectors.py", "<frozen importlib", "builtins.exec", "threading.py", "concurrent/futures/thread.py",
            "<module>", "mcp_ref_fs/__main__.py", "fs_profile.py", "(mcp-ref-fs)", "mcp_ref/server.py:4", "Server.run (", "run_stdio",
            "_bootstrap", "Runner.run", "run (asyncio", "main (mcp_ref_fs")
# py-spy samples whose innermost frame is one of these are waits, not work (py-spy's own idle
# detection misses a thread blocked in epoll or in a pool's queue).
IDLE_LEAVES = ("select (selectors.py)", "_worker (concurrent/futures/thread.py)", "wait (threading.py)")
IDLE_FUNCTIONS = ("poll' of 'select.epoll", "acquire' of '_thread.lock", "select.select", "'_thread.lock' objects",
                  "wait' of 'threading.Condition", "get' of '_queue.SimpleQueue")


def _pyspy() -> str | None:
    for candidate in (os.path.join(TOOLS_VENV, "bin", "py-spy"), shutil.which("py-spy")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def cprofile_summary(path: str, top: int) -> list[dict[str, Any]]:
    import pstats

    stats = pstats.Stats(path)
    entries = stats.stats  # type: ignore[attr-defined]
    idle = sum(tt for func, (cc, nc, tt, ct, callers) in entries.items() if any(s in pstats.func_std_string(func) for s in IDLE_FUNCTIONS))
    busy = stats.total_tt - idle  # type: ignore[attr-defined]
    rows = []
    for func, (cc, nc, tt, ct, callers) in entries.items():
        name = pstats.func_std_string(func)
        share = ct / busy if busy else 0
        if share > 1.0 or any(s in name for s in IDLE_FUNCTIONS + PLUMBING):
            continue  # idle waiting (the event loop, worker threads waiting for work) or plumbing
        rows.append({"function": _shorten_path(name), "calls": nc, "tottime_s": tt, "cumtime_s": ct, "cum_pct": 100 * share,
                     "self_pct": 100 * tt / busy if busy else 0})
    rows.sort(key=lambda r: -r["cumtime_s"])
    return [{"busy_s": busy}] + rows[:top] + [{"by_self": sorted(rows, key=lambda r: -r["tottime_s"])[:top]}]


def _shorten_path(name: str) -> str:
    for prefix in (ROOT + "/", os.path.dirname(os.__file__) + "/"):
        name = name.replace(prefix, "")
    return name.replace(os.path.join(".venv", "lib", "python3.11", "site-packages") + "/", "")


def pyspy_summary(path: str, top: int) -> dict[str, Any]:
    inclusive: dict[str, int] = {}
    own: dict[str, int] = {}
    total = 0
    with open(path) as handle:
        for raw in handle:
            stack, _, count_text = raw.rstrip("\n").rpartition(" ")
            if not count_text.isdigit():
                continue
            count = int(count_text)
            frames = [_frame_name(f) for f in stack.split(";") if f]
            if frames and any(frames[-1].endswith(leaf) for leaf in IDLE_LEAVES):
                continue
            total += count
            for name in set(frames):
                inclusive[name] = inclusive.get(name, 0) + count
            if frames:
                own[frames[-1]] = own.get(frames[-1], 0) + count
    ranked = sorted(((n, c) for n, c in inclusive.items() if not any(p in n for p in PLUMBING)), key=lambda item: -item[1])
    return {"samples": total,
            "inclusive": [{"function": n, "pct": 100 * c / total} for n, c in ranked[:top]] if total else [],
            "self": [{"function": n, "pct": 100 * c / total} for n, c in sorted(own.items(), key=lambda i: -i[1])[:top]] if total else []}


def _frame_name(frame: str) -> str:
    # "function (path/file.py:123)" -> "function (file.py)"
    name, _, location = frame.partition(" (")
    location = location.rstrip(")").rsplit(":", 1)[0]
    return f"{name} ({_shorten_path(location)})"


def profile_workloads(fixture: Fixture, keys: list[str], seconds: float, top: int, progress: Callable[[str], None]) -> dict[str, Any]:
    """Run mcp-ref-fs (modern era) under cProfile (all threads) and, when available, py-spy, per workload."""
    contender = Contender("ref", "mcp-ref-fs", "ref", "modern", ref_command)
    fixture.edits.setdefault("ref", fixture.edit_text)
    fixture.edit_next.setdefault("ref", 0)
    if not os.path.exists(fixture.edit_path("ref")):
        with open(fixture.edit_path("ref"), "w", encoding="utf-8", newline="") as handle:
            handle.write(fixture.edits["ref"])
    spy = _pyspy()
    report: dict[str, Any] = {"py_spy": spy or "not installed (pip install py-spy into bench/.venvs/tools)"}
    for key in keys:
        workload = next(w for w in WORKLOADS if w.key == key)
        root = fixture.tree if workload.phase == "reslist" else fixture.root
        with tempfile.TemporaryDirectory() as tmp:
            prof = os.path.join(tmp, "server.prof")
            entry: dict[str, Any] = {}
            if workload.phase == "cold":
                # start-up: one server answering one request, profiled from the first line of main()
                argv = [PY, os.path.join(HERE, "fs_profile.py"), prof, "--"] + REF_LIMITS + [root]
                session = Session(contender, root, argv=argv)
                try:
                    read = key == "cold_read"
                    request_id, line = (session.tool_line("read_text_file", {"path": fixture.small}) if read
                                        else session.line("server/discover"))
                    session.child.send(line)
                    result_of(session.child.read_lines(1)[0], request_id)
                    session.close()
                finally:
                    session.child.kill()
                entry["cprofile"] = cprofile_summary(prof, top)
                entry["importtime"] = import_summary(fixture, key == "cold_read")
                report[key] = entry
                progress(f"profiled {key}")
                continue
            for tool in ("cprofile", "py-spy"):
                if tool == "py-spy" and not spy:
                    continue
                argv = ([PY, os.path.join(HERE, "fs_profile.py"), prof, "--"] + REF_LIMITS + [root]) if tool == "cprofile" else None
                session = Session(contender, root, argv=argv)
                spy_proc = None
                try:
                    for _ in range(5):
                        check_small(session.roundtrip(session.tool_line("read_text_file", {"path": fixture.small}))[1], fixture) \
                            if root == fixture.root else session.roundtrip(session.line("resources/list"))
                    assert workload.run is not None
                    workload.run(session, fixture)  # warm-up
                    if tool == "py-spy":
                        out = os.path.join(tmp, "spy.txt")
                        spy_proc = subprocess.Popen([spy, "record", "--pid", str(session.child.proc.pid), "--rate", "500",
                                                     "--format", "raw", "--nonblocking", "--output", out],
                                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                        time.sleep(0.5)  # attached
                    runs = 0
                    started = time.perf_counter()
                    while runs < 3 or time.perf_counter() - started < seconds:
                        workload.run(session, fixture)
                        runs += 1
                    wall = time.perf_counter() - started
                    session.close()
                    if spy_proc is not None:
                        _, err = spy_proc.communicate(timeout=60)
                        if spy_proc.returncode != 0 or not os.path.exists(out):
                            entry["py-spy"] = {"error": err.decode(errors="replace")[-500:]}
                        else:
                            entry["py-spy"] = pyspy_summary(out, top)
                    else:
                        entry["cprofile"] = cprofile_summary(prof, top)
                    entry[f"{tool}_runs"] = runs
                    entry[f"{tool}_wall_s"] = wall
                finally:
                    session.child.kill()
                    if spy_proc is not None and spy_proc.poll() is None:
                        spy_proc.kill()
            report[key] = entry
        progress(f"profiled {key}")
    return report


def import_summary(fixture: Fixture, read: bool, runs: int = 3) -> dict[str, Any]:
    """``python -X importtime`` of mcp-ref-fs answering its first request (min per module over runs)."""
    best: dict[str, tuple[int, int, int]] = {}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call" if read else "server/discover",
               "params": {"name": "read_text_file", "arguments": {"path": fixture.small}, "_meta": MODERN_META} if read else {"_meta": MODERN_META}}
    for _ in range(runs):
        proc = subprocess.run([PY, "-X", "importtime", "-m", "mcp_ref_fs"] + REF_LIMITS + [fixture.root],
                              input=json.dumps(message).encode() + b"\n", capture_output=True, cwd=ROOT, timeout=60, env=core.child_env(), check=False)
        for raw in proc.stderr.decode().splitlines():
            if not raw.startswith("import time:") or "imported package" in raw:
                continue
            self_us, cumulative_us, name = raw[len("import time:"):].split("|")
            depth = (len(name) - len(name.lstrip()) - 1) // 2
            entry = (int(self_us), int(cumulative_us), depth)
            if name.strip() not in best or entry[1] < best[name.strip()][1]:
                best[name.strip()] = entry
    top_level = sorted(((c, n) for n, (s, c, d) in best.items() if d == 0), reverse=True)
    return {"total_ms": sum(c for c, _ in top_level) / 1000, "modules": len(best),
            "top_level_ms": [(n, c / 1000) for c, n in top_level[:12]],
            "self_ms": [(n, s / 1000) for s, n in sorted(((s, n) for n, (s, c, d) in best.items()), reverse=True)[:12]]}


def render_profile(report: dict[str, Any]) -> str:
    out = [f"Profiles of mcp-ref-fs (modern era). py-spy: {report['py_spy']}"]
    for key, entry in report.items():
        if key == "py_spy":
            continue
        out.append("")
        label = next(w.label for w in WORKLOADS if w.key == key)
        out.append(f"== {key}: {label}")
        if "cprofile" in entry:
            busy = entry["cprofile"][0]["busy_s"]
            runs = entry.get("cprofile_runs")
            out.append(f"cProfile, all threads ({f'{runs} runs, ' if runs else ''}busy {busy:.3f} s = profiled time minus idle waits);"
                       " cumulative % of busy:")
            for row in entry["cprofile"][1:-1]:
                out.append(f"  {row['cum_pct']:5.1f}%  {row['cumtime_s']:8.3f} s  self {row['self_pct']:4.1f}%  {row['calls']:>8} calls  {row['function']}")
            out.append("  by self time:")
            for row in entry["cprofile"][-1]["by_self"][:10]:
                out.append(f"  {row['self_pct']:5.1f}%  {row['tottime_s']:8.3f} s  {row['calls']:>8} calls  {row['function']}")
        if "py-spy" in entry:
            spy = entry["py-spy"]
            if "error" in spy:
                out.append(f"py-spy failed: {spy['error']}")
            else:
                out.append(f"py-spy ({spy['samples']} busy samples at 500 Hz, {entry.get('py-spy_runs')} runs): inclusive % of samples:")
                for row in spy["inclusive"]:
                    out.append(f"  {row['pct']:5.1f}%  {row['function']}")
                out.append("  self %:")
                for row in spy["self"][:10]:
                    out.append(f"  {row['pct']:5.1f}%  {row['function']}")
        if "importtime" in entry:
            imp = entry["importtime"]
            out.append(f"python -X importtime ({imp['modules']} modules, {imp['total_ms']:.0f} ms under instrumentation):")
            out.append("  top-level cumulative: " + ", ".join(f"{n} {v:.1f}" for n, v in imp["top_level_ms"]))
            out.append("  by self time:         " + ", ".join(f"{n} {v:.1f}" for n, v in imp["self_ms"]))
    return "\n".join(out)


# --- main -------------------------------------------------------------------------------------------------------------


def source_state() -> dict[str, Any]:
    """Which code was measured: the commit, and a digest of mcp_ref/ and servers/ as they are on disk
    (others may be editing them; the digest tells two runs of different code apart)."""
    import hashlib

    digest = hashlib.sha256()
    for top in ("mcp_ref", "servers"):
        for directory, subdirs, files in sorted(os.walk(os.path.join(ROOT, top))):
            subdirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    digest.update(os.path.relpath(path, ROOT).encode() + b"\0")
                    with open(path, "rb") as handle:
                        digest.update(handle.read())
    state: dict[str, Any] = {"code_sha256": digest.hexdigest()[:12]}
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10,
                              check=False)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "mcp_ref", "servers"], cwd=ROOT, capture_output=True,
                               text=True, timeout=10, check=False)
        if head.returncode == 0:
            state["commit"] = head.stdout.strip()
            state["uncommitted_changes"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer samples (under a minute once the peers are installed)")
    parser.add_argument("--peers", action="store_true", help="also the official Python SDK and Node servers (installed on first use)")
    parser.add_argument("--markdown", metavar="PATH", help="also write the markdown table to PATH")
    parser.add_argument("--json", metavar="PATH", help="write every sample to PATH")
    parser.add_argument("--workloads", default=",".join(WORKLOAD_KEYS), help=f"comma-separated subset of: {','.join(WORKLOAD_KEYS)}")
    parser.add_argument("--rounds", type=int, help="samples per steady workload and contender (default 5; quick 1)")
    parser.add_argument("--cold-runs", type=int, help="cold starts per contender and row (default 10; quick 3)")
    parser.add_argument("--large-reads", type=int, help="8 MiB reads per contender (default 5; quick 2)")
    parser.add_argument("--profile", metavar="WORKLOADS", help="profile mcp-ref-fs on these workloads (comma list or 'all') instead of benchmarking")
    parser.add_argument("--profile-seconds", type=float, default=3.0, help="repeat each profiled workload at least this long")
    parser.add_argument("--tmp", metavar="DIR", help="build the fixture under DIR (default: the system temp dir)")
    parser.add_argument("--keep-fixture", action="store_true",
                        help="keep the fixture (~60 MiB) for the next run, which then skips building it (2-15 s); "
                             "without it, the fixture is removed when the run ends")
    parser.add_argument("--fresh-fixture", action="store_true", help="with --keep-fixture: rebuild the kept fixture")
    parser.add_argument("--variant", metavar="DIR", help="also run mcp-ref-fs from DIR/mcp_ref_fs (e.g. the committed version: "
                        "mkdir -p /tmp/base; git archive HEAD servers/mcp_ref_fs | tar -x -C /tmp/base; then --variant /tmp/base/servers), "
                        "interleaved like every contender; a column and a ratio of its own, never judged against the targets")
    options = parser.parse_args(argv)
    for name, normal, quick in (("rounds", 5, 1), ("cold_runs", 10, 3), ("large_reads", 5, 2)):
        if getattr(options, name) is None:
            setattr(options, name, quick if options.quick else normal)
    options.workloads = [w.strip() for w in options.workloads.split(",") if w.strip()]
    unknown = set(options.workloads) - set(WORKLOAD_KEYS)
    if unknown or options.rounds < 1 or options.cold_runs < 1:
        parser.error(f"unknown workloads {sorted(unknown)}" if unknown else "--rounds and --cold-runs need at least 1")
    signal.signal(signal.SIGTERM, core._on_signal)
    keep_driver_memory()

    started = time.perf_counter()

    def progress(what: str) -> None:
        print(f"[{time.perf_counter() - started:5.1f} s] {what}", file=sys.stderr, flush=True)

    results: dict[str, Any] = {"machine": core.machine(), "argv": sys.argv[1:] if argv is None else argv, "notes": [],
                               "source": source_state()}
    peers: dict[str, Any] = {}
    if options.peers and not options.profile:
        sdk_python, note = ensure_sdk_venv(progress)
        results["notes"].append(note)
        peers["sdk_python"] = sdk_python
        node, note = ensure_node_server(progress)
        results["notes"].append(note)
        if node:
            peers.update(node=node["node"], node_entry=node["entry"])
    results["notes"].append(f"mcp-ref-fs runs with {' '.join(REF_LIMITS)} (the default 1000-entry cap and answer budget would cut trees, searches and greps)")
    setup_started = time.perf_counter()

    if options.variant and not os.path.isfile(os.path.join(options.variant, "mcp_ref_fs", "__init__.py")):
        parser.error(f"--variant {options.variant}: no mcp_ref_fs package there")
    base = fixture_dir(options.tmp, options.keep_fixture)
    try:
        contenders = make_contenders(peers, os.path.join(os.path.realpath(base), "small.txt"), options.variant)
        progress(f"fixture: {base}" + (" (kept for the next run)" if options.keep_fixture else " (removed at the end)"))
        fixture = build_fixture(base, [c.key for c in contenders if c.kind != "floor"], fresh=options.fresh_fixture)
        results["fixture_s"] = time.perf_counter() - setup_started
        results["fixture"] = fixture.describe()
        results["fixture_dir"] = base
        progress(f"fixture ready ({results['fixture_s']:.1f} s): {fixture.describe()}")
        if options.profile:
            keys = [w.key for w in WORKLOADS if "ref" in w.kinds] if options.profile == "all" else options.profile.split(",")
            report = profile_workloads(fixture, keys, options.profile_seconds, 20, progress)
            print(render_profile(report))
            if options.json:
                with open(options.json, "w") as handle:
                    json.dump(report, handle, indent=2)
            return 0
        runner = Runner(contenders, fixture, options, progress)
        runner.run_all()
    except core.BenchError as error:
        print(f"fs_bench: {error}", file=sys.stderr)
        return 2
    finally:
        core._kill_all()
        if not options.keep_fixture:
            shutil.rmtree(base, ignore_errors=True)
    results["elapsed_s"] = time.perf_counter() - started
    results["targets"] = evaluate_targets(runner)
    results["contenders"] = [{"key": c.key, "label": c.label, "era": c.era, "argv": c.argv("ROOT")} for c in contenders]
    results["cells"] = {w: {c: cell.as_json() for (w2, c), cell in runner.cells.items() if w2 == w} for w in options.workloads}
    markdown = render_markdown(runner, results)
    progress("done")
    print(markdown)
    if options.markdown:
        with open(options.markdown, "w") as handle:
            handle.write(markdown + "\n")
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(results, handle, indent=2, default=str)
            handle.write("\n")
    failed = [key for key, cell in runner.cells.items() if cell.error]
    if failed:
        print(f"\nfs_bench: {len(failed)} cell(s) have no time (wrong answer or failure): "
              + ", ".join(f"{w}/{c}" for w, c in failed), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
