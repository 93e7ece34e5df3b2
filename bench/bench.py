#!/usr/bin/env python3
"""The mcp_ref stdio benchmark (stdlib only). See bench/README.md for what each number means.

    python bench/bench.py                 # default run, ~20 s on 2 cores (< 60 s)
    python bench/bench.py --quick         # ~8 s, fewer samples
    python bench/bench.py --peers         # also the official Python SDK (``mcp``) as a peer (~50 s)
    python bench/bench.py --importtime    # what start-up imports (python -X importtime)
    python bench/bench.py --profile       # cProfile of the server under pipelined tools/call load
    python bench/bench.py --json out.json # write every number

Every server is a real subprocess on pipes, driven with modern (2026-07-28) requests that carry
the per-request ``_meta`` envelope; no ``initialize``. Every answer is checked (right ids, no
errors, echoed text, payload sizes) outside the timed regions. Every wait has a deadline and
every child is killed on exit.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import datetime
import json
import os
import platform
import pstats
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = sys.executable

COLD_START_TARGET_MS = 150.0
LARGE_BYTES = 4 * 1024 * 1024
ECHO_TEXT = "hello, bench"

SERVERS: dict[str, list[str]] = {
    "floor": [PY, os.path.join(HERE, "floor_server.py")],
    "mcp_ref": [PY, os.path.join(HERE, "echo_server.py")],
    "sdk": [PY, os.path.join(HERE, "sdk_echo_server.py")],
}
LABELS = {"floor": "floor (json line loop)", "mcp_ref": "mcp_ref", "sdk": "SDK mcp (MCPServer)"}

# What the official SDK client stamps on every modern request (see /tmp/digest/sdk_client.md 2b).
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "mcp-ref-bench", "version": "0.1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def request_line(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    body = dict(params or {})
    body["_meta"] = META
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def echo_line(request_id: int) -> bytes:
    return request_line(request_id, "tools/call", {"name": "echo", "arguments": {"text": ECHO_TEXT}})


def discover_line(request_id: int) -> bytes:
    return request_line(request_id, "server/discover")


def read_line(request_id: int, uri: str) -> bytes:
    return request_line(request_id, "resources/read", {"uri": uri})


# Cold-start runs per row for the SDK peer (each start takes ~0.6 s).
PEER_COLD_RUNS = 10
# The slow-reader run: the reader starts this late, long enough for the server to fill its stdout
# pipe and its transport buffer and to reach its read back-pressure limit.
SLOW_READER_PAUSE = 0.5
# No byte of output for this long while answers are due: the server is stuck (not merely slow).
STALL_SECONDS = 5.0


class BenchError(RuntimeError):
    pass


class Stall(BenchError):
    """The server stopped answering with answers still due."""

    def __init__(self, message: str, answered: int) -> None:
        super().__init__(message)
        self.answered = answered


# --- the children's environment --------------------------------------------------------------------

# Variables that change how a Python child starts or runs; the children get none of them, so the
# numbers are those of a plain ``python server.py``.
_PYTHON_KNOBS = (
    "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONPROFILEIMPORTTIME", "PYTHONASYNCIODEBUG",
    "PYTHONDEVMODE", "PYTHONTRACEMALLOC", "PYTHONMALLOC", "PYTHONWARNINGS", "PYTHONVERBOSE", "PYTHONPYCACHEPREFIX",
)
# Byte-code cache for the children, outside the repository: an installed server runs from .pyc
# files, so compiling mcp_ref from source on every start would measure the wrong thing.
PYCACHE = os.path.join(tempfile.gettempdir(), f"mcp-ref-bench-pycache-{os.getuid()}")


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _PYTHON_KNOBS}
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    return env


# --- child processes ---------------------------------------------------------------------------

_LIVE: set["Child"] = set()


def _kill_all() -> None:
    for child in list(_LIVE):
        child.kill()


atexit.register(_kill_all)


def _on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


class Child:
    """One server on pipes. Every read is bounded (``Stall`` after ``STALL_SECONDS`` of silence)."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.argv = argv
        env = env if env is not None else child_env()
        self._stderr = tempfile.TemporaryFile()
        self._buffer = bytearray()
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, cwd=ROOT, bufsize=0, env=env
        )
        _LIVE.add(self)
        self._in = self.proc.stdin.fileno()  # type: ignore[union-attr]
        self._out = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self.last_cpu_us_per_msg: float | None = None  # server CPU per message in the last pipelined run

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._in, view) :]

    def _fill(self, idle_timeout: float = STALL_SECONDS) -> bytes:
        """The next chunk of output; ``Stall`` when none arrives within ``idle_timeout`` seconds."""
        if not select.select([self._out], [], [], idle_timeout)[0]:
            raise Stall(f"{self.describe()} sent nothing for {idle_timeout:.0f} s with answers still due", 0)
        chunk = os.read(self._out, 1 << 20)
        if not chunk:
            raise BenchError(f"{self.describe()} closed stdout early{self.stderr_tail()}")
        return chunk

    def first_byte(self, timeout: float) -> float:
        """perf_counter() when the first byte of output arrives (kept for the next read)."""
        if not select.select([self._out], [], [], timeout)[0]:
            raise BenchError(f"timed out waiting for the first byte from {self.describe()}")
        at = time.perf_counter()
        self._buffer += self._fill()
        return at

    def read_lines(self, count: int) -> list[bytes]:
        """Exactly ``count`` complete lines (extra bytes stay buffered)."""
        buffer = self._buffer
        seen = buffer.count(b"\n")
        while seen < count:
            try:
                chunk = self._fill()
            except Stall as stall:
                stall.answered = seen
                raise
            buffer += chunk
            seen += chunk.count(b"\n")
        lines: list[bytes] = []
        start = 0
        for _ in range(count):
            end = buffer.index(b"\n", start)
            lines.append(bytes(buffer[start:end]))
            start = end + 1
        del buffer[:start]
        return lines

    def count_lines(self, count: int) -> list[bytes]:
        """Read until ``count`` newlines arrived; return the raw chunks (fast path for throughput)."""
        chunks = [bytes(self._buffer)]
        seen = self._buffer.count(b"\n")
        self._buffer.clear()
        fill = self._fill
        try:
            while seen < count:
                chunk = fill()
                chunks.append(chunk)
                seen += chunk.count(b"\n")
        except Stall as stall:
            stall.answered = seen
            raise
        return chunks

    def close(self, timeout: float = 10.0) -> None:
        """EOF on stdin, then wait (bounded) for a clean exit; a non-zero status is an error."""
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BenchError(f"{self.describe()} did not exit within {timeout:.0f} s of EOF") from None
        finally:
            self._release()
        if self.proc.returncode != 0:
            raise BenchError(f"{self.describe()} exited with {self.proc.returncode}{self.stderr_tail()}")

    def kill(self) -> None:
        if self.proc.returncode is None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._release()

    def _release(self) -> None:
        _LIVE.discard(self)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass

    def cpu_seconds(self) -> float | None:
        """User + system CPU time the child has used so far (Linux /proc), or None."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

    def peak_rss_mib(self) -> float | None:
        """The child's peak resident set so far (VmHWM from /proc), or None off Linux.

        Not ``ru_maxrss`` from ``wait4``: a forked child's maximum includes the parent's resident
        pages from before ``exec``, so it reports the benchmark's own size, not the server's.
        """
        try:
            with open(f"/proc/{self.proc.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return None

    def describe(self) -> str:
        return " ".join(os.path.relpath(a, ROOT) if a.startswith(ROOT) else os.path.basename(a) for a in self.argv)

    def stderr_tail(self) -> str:
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace").strip()
        return f"; stderr:\n{text[-2000:]}" if text else ""


def _checked(line: bytes, request_id: int) -> dict[str, Any]:
    message = json.loads(line)
    if message.get("id") != request_id or "result" not in message:
        raise BenchError(f"unexpected answer to request {request_id}: {line[:300]!r}")
    return message["result"]


def _check_echo(result: dict[str, Any], server: str) -> None:
    if server == "floor":
        return
    content = result.get("content") or [{}]
    if result.get("isError") or content[0].get("text") != ECHO_TEXT:
        raise BenchError(f"echo answered wrongly: {result!r}")


def _check_discover(result: dict[str, Any], server: str) -> None:
    if server != "floor" and "2026-07-28" not in result.get("supportedVersions", ()):
        raise BenchError(f"discover answered wrongly: {result!r}")


def percentile(values: list[float], q: int) -> float:
    """The q-th percentile (inclusive method) of at least two values."""
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# --- 1. cold start -----------------------------------------------------------------------------


def cold_start(server: str, make_line: Callable[[int], bytes], runs: int, check: Callable[..., None]) -> dict[str, Any]:
    """Spawn -> first byte of the answer to one request written right after spawn. One unmeasured warm-up run."""
    samples: list[float] = []
    for run in range(runs + 1):
        child = Child(SERVERS[server])
        try:
            child.send(make_line(1))
            at = child.first_byte(timeout=20)
            (line,) = child.read_lines(1)
            check(_checked(line, 1), server)
            child.close()
        finally:
            child.kill()
        if run:
            samples.append((at - child.t_spawn) * 1000)
    return {"runs": runs, "median_ms": statistics.median(samples), "p90_ms": percentile(samples, 90), "min_ms": min(samples)}


# --- 2. throughput and latency -------------------------------------------------------------------


def pipelined(
    child: Child, server: str, make_line: Callable[[int], bytes], first_id: int, n: int, check: Callable[..., None],
    reader_pause: float = 0.0,
) -> float:
    """Write n requests as fast as possible from a thread, read all n answers; messages per second.

    With ``reader_pause`` the reader starts that many seconds late, so the server's stdout pipe
    fills up and its write flow control (pause, drain, resume) must work for the run to finish.
    """
    payload = b"".join(make_line(i) for i in range(first_id, first_id + n))
    failure: list[BaseException] = []

    def write() -> None:
        try:
            child.send(payload)
        except OSError as exc:
            failure.append(exc)

    writer = threading.Thread(target=write, daemon=True)
    cpu_before = child.cpu_seconds()
    start = time.perf_counter()
    writer.start()
    if reader_pause:
        time.sleep(reader_pause)
    chunks = child.count_lines(n)
    elapsed = time.perf_counter() - start
    cpu_after = child.cpu_seconds()
    child.last_cpu_us_per_msg = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) / n * 1e6
    writer.join(5)
    if failure:
        raise BenchError(f"writing to {child.describe()} failed: {failure[0]}")
    lines = b"".join(chunks).split(b"\n")
    if lines[-1]:
        raise BenchError("answer stream ended mid-line")
    answers = {}
    for line in lines[:-1]:
        message = json.loads(line)
        answers[message.get("id")] = message
    if sorted(answers) != list(range(first_id, first_id + n)):
        raise BenchError(f"{child.describe()}: {len(answers)} distinct ids answered, expected {n}")
    for request_id, message in answers.items():
        if "result" not in message:
            raise BenchError(f"request {request_id} failed: {message!r}")
        check(message["result"], server)
    return n / elapsed


def sequential(child: Child, server: str, first_id: int, n: int) -> list[float]:
    """n request/response round trips, one at a time; microseconds each."""
    samples = []
    lines = [echo_line(i) for i in range(first_id, first_id + n)]
    for offset, line in enumerate(lines):
        start = time.perf_counter()
        child.send(line)
        (answer,) = child.read_lines(1)
        samples.append((time.perf_counter() - start) * 1e6)
        if offset % 64 == 0:  # spot-check without parsing every answer inside the loop
            _check_echo(_checked(answer, first_id + offset), server)
    return samples


def _warm_child(server: str) -> Child:
    child = Child(SERVERS[server])
    try:
        child.send(discover_line(1) + b"".join(echo_line(i) for i in range(2, 202)))
        for i, line in enumerate(child.read_lines(201), start=1):
            _checked(line, i)  # warm-up: imports, schema compilation, caches
    except BaseException:
        child.kill()
        raise
    return child


def load(server: str, n: int, repeats: int, latency_n: int, progress: Callable[[str], None]) -> dict[str, Any]:
    """Throughput (echo, discover), latency (echo) and a slow-reader run, on one long-lived server process.

    A phase in which the server stops answering is recorded as stalled (with how many answers
    arrived) and the next phase gets a fresh server.
    """
    result: dict[str, Any] = {"stalls": {}}
    child = _warm_child(server)
    next_id = 1000

    def phase(name: str, run: Callable[[], Any], expected: int) -> Any:
        nonlocal child, next_id
        try:
            return run()
        except Stall as stall:
            progress(f"  {server} {name}: STALLED after {stall.answered} of {expected} answers; restarting the server")
            result["stalls"][name] = {"answered": stall.answered, "expected": expected, "stderr": child.stderr_tail()[-500:]}
            child.kill()
            child = _warm_child(server)
            return None
        finally:
            next_id += expected

    try:
        plans = [("echo", echo_line, _check_echo)] + ([] if server == "floor" else [("discover", discover_line, _check_discover)])
        for name, make_line, check in plans:
            rates, cpu = [], []
            for _ in range(repeats):
                rate = phase(name, lambda: pipelined(child, server, make_line, next_id, n, check), n)
                if rate is not None:
                    rates.append(rate)
                    if child.last_cpu_us_per_msg is not None:
                        cpu.append(child.last_cpu_us_per_msg)
            result[f"{name}_msgs_per_s_runs"] = rates
            result[f"{name}_msgs_per_s"] = statistics.median(rates) if rates else None
            result[f"{name}_server_cpu_us_per_msg"] = statistics.median(cpu) if cpu else None
        latency = phase("latency", lambda: sequential(child, server, next_id, latency_n), latency_n)
        if latency is not None:
            result.update(
                echo_latency_median_us=statistics.median(latency),
                echo_latency_p99_us=percentile(latency, 99),
                latency_samples=len(latency),
            )
        slow = min(n, 5000)
        rate = phase("slow_reader", lambda: pipelined(child, server, echo_line, next_id, slow, _check_echo, reader_pause=SLOW_READER_PAUSE), slow)
        result["slow_reader"] = {"requests": slow, "reader_pause_s": SLOW_READER_PAUSE, "ok": rate is not None, "msgs_per_s_incl_pause": rate}
        result["peak_rss_mib_after_load"] = child.peak_rss_mib()
        child.close()
    finally:
        child.kill()
    return result


# --- 4. large payloads -----------------------------------------------------------------------------


def large_payload(server: str, kind: str | None, reads: int) -> dict[str, Any]:
    """Peak RSS of a --large server that answers ``reads`` reads of one 4 MiB resource (None: idle baseline)."""
    child = Child(SERVERS[server] + ["--large"])
    times: list[float] = []
    try:
        child.send(discover_line(1))
        _check_discover(_checked(child.read_lines(1)[0], 1), server)
        for i in range(reads if kind else 0):
            request_id = 10 + i
            start = time.perf_counter()
            child.send(read_line(request_id, f"bench://large/{kind}"))
            (line,) = child.read_lines(1)
            times.append(time.perf_counter() - start)
            contents = (_checked(line, request_id).get("contents") or [{}])[0]
            if kind == "text":
                ok = len(contents.get("text", "")) == LARGE_BYTES
            else:
                ok = base64.b64decode(contents.get("blob", "")) == bytes(range(256)) * (LARGE_BYTES // 256)
            if not ok:
                raise BenchError(f"{server} {kind} resource came back with the wrong contents")
            wire_bytes = len(line) + 1
        peak = child.peak_rss_mib()
        child.close()
    finally:
        child.kill()
    if peak is None:
        raise BenchError("peak RSS needs /proc (Linux)")
    result: dict[str, Any] = {"peak_rss_mib": peak}
    if times:
        result.update(
            reads=reads,
            median_ms=statistics.median(times) * 1000,
            min_ms=min(times) * 1000,
            wire_mib=wire_bytes / 2**20,
            wire_mib_per_s=wire_bytes / 2**20 / statistics.median(times),
        )
    return result


# --- optional: importtime and profile ------------------------------------------------------------


def import_times(server: str, runs: int = 3) -> dict[str, Any]:
    """``python -X importtime`` of a server answering one discover; per module, the minimum over runs."""
    best: dict[str, tuple[int, int, int]] = {}  # name -> (self us, cumulative us, depth)
    for _ in range(runs):
        proc = subprocess.run(
            [PY, "-X", "importtime", *SERVERS[server][1:]],
            input=discover_line(1), capture_output=True, cwd=ROOT, timeout=30, env=child_env(),
        )
        if proc.returncode != 0 or not proc.stdout:
            raise BenchError(f"importtime run failed: {proc.stderr[-1000:]!r}")
        for raw in proc.stderr.decode().splitlines():
            if not raw.startswith("import time:") or "imported package" in raw:
                continue
            self_us, cumulative_us, name = raw[len("import time:") :].split("|")
            depth = (len(name) - len(name.lstrip()) - 1) // 2
            key = name.strip()
            entry = (int(self_us), int(cumulative_us), depth)
            if key not in best or entry[1] < best[key][1]:
                best[key] = entry
    top_level = sorted(((c, n) for n, (s, c, d) in best.items() if d == 0), reverse=True)
    by_self = sorted(((s, n) for n, (s, c, d) in best.items()), reverse=True)
    ours = sorted(((c, n) for n, (s, c, d) in best.items() if n.startswith("mcp_ref")), reverse=True)
    return {
        "total_ms": sum(c for c, _ in top_level) / 1000,
        "top_level_ms": [(n, c / 1000) for c, n in top_level[:12]],
        "top_self_ms": [(n, s / 1000) for s, n in by_self[:12]],
        "mcp_ref_cumulative_ms": [(n, c / 1000) for c, n in ours[:12]],
        "modules": len(best),
    }


def profile(n: int, top: int = 25) -> str:
    """cProfile the mcp_ref server while it answers n pipelined tools/call requests."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "server.prof")
        child = Child([PY, "-m", "cProfile", "-o", out, SERVERS["mcp_ref"][1]])
        try:
            child.send(discover_line(1))
            child.read_lines(1)
            pipelined(child, "mcp_ref", echo_line, 1000, n, _check_echo)
            child.close(timeout=60)
        except Stall as stall:
            raise BenchError(f"the profiled server stalled ({stall}); no profile") from None
        finally:
            child.kill()
        report = []
        for key in ("tottime", "cumulative"):
            stream = _Capture()
            stats = pstats.Stats(out, stream=stream)
            stats.strip_dirs().sort_stats(key).print_stats(top)
            report.append(stream.text())
        return "\n".join(report)


class _Capture:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def text(self) -> str:
        return "".join(self.parts)


# --- report ---------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "load_average_1min_at_start": os.getloadavg()[0],
    }


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def _stall_note(row: dict[str, Any], phase: str) -> str:
    stall = row.get("stalls", {}).get(phase)
    return f"STALLED ({stall['answered']:,}/{stall['expected']:,} answered)" if stall else ""


def render(results: dict[str, Any], options: argparse.Namespace) -> str:
    m = results["machine"]
    out = [
        f"mcp_ref stdio benchmark  {m['date']}  {m['cpus']} CPUs ({m['cpu_model']})  Python {m['python']}"
        f"  load avg at start {m['load_average_1min_at_start']:.2f}"
    ]
    if options.mcp_ref_server:
        out.append(f"(mcp_ref server script replaced by {options.mcp_ref_server})")
    out.append("")
    cold = results["cold_start"]
    out.append("1. Cold start: spawn -> first byte of the answer                     median      p90   runs")
    for key, label in cold["rows"]:
        row = cold[key]
        out.append(f"   {label:<58}{row['median_ms']:6.1f} ms {row['p90_ms']:6.1f} ms {row['runs']:4d}")
    verdict = cold["verdict"]
    out.append(f"   target: mcp_ref server/discover median <= {COLD_START_TARGET_MS:.0f} ms -> {verdict}")

    load_rows = results["load"]
    floor_rate = load_rows["floor"]["echo_msgs_per_s"]
    floor_us = 1e6 / floor_rate if floor_rate else None
    out.append("")
    peer_note = f"; SDK peer: {options.peer_messages:,} requests, 1 run" if "sdk" in load_rows else ""
    out.append(f"2. Throughput: {options.messages:,} pipelined requests, median of {options.repeats} runs{peer_note}")
    out.append(f"   {'':<52}    msg/s   us/msg  over floor   server CPU us/msg (over floor)")
    floor_cpu = load_rows["floor"].get("echo_server_cpu_us_per_msg")
    for server, row in load_rows.items():
        plans = [("echo", "(echo-shaped answer)" if server == "floor" else "tools/call echo")]
        if server != "floor":
            plans.append(("discover", "server/discover"))
        for phase, what in plans:
            rate = row.get(f"{phase}_msgs_per_s")
            label = f"{LABELS[server]} {what}"
            if rate is None:
                out.append(f"   {label:<52}{_stall_note(row, phase)}")
                continue
            us = 1e6 / rate
            over = "       -" if server == "floor" or floor_us is None else f"{us - floor_us:+8.1f}"
            cpu = row.get(f"{phase}_server_cpu_us_per_msg")
            cpu_text = "" if cpu is None else f"{cpu:8.1f}"
            if cpu is not None and floor_cpu is not None and server != "floor":
                cpu_text += f" ({cpu - floor_cpu:+.1f})"
            note = _stall_note(row, phase)
            out.append(f"   {label:<52}{fmt_rate(rate):>9} {us:8.1f} {over}    {cpu_text}" + (f"  ({note} in a run)" if note else ""))
    out.append("")
    out.append("   Latency: sequential round trips                                    median      p99  samples")
    for server, row in load_rows.items():
        label = LABELS[server] + ("" if server == "floor" else " tools/call echo")
        if "echo_latency_median_us" in row:
            out.append(f"   {label:<58}{row['echo_latency_median_us']:6.0f} us {row['echo_latency_p99_us']:6.0f} us {row['latency_samples']:6d}")
        else:
            out.append(f"   {label:<58}{_stall_note(row, 'latency')}")
    out.append("")
    out.append(f"   Slow reader: pipelined tools/call, the reader starts {SLOW_READER_PAUSE} s late (server stdout pipe fills up)")
    for server, row in load_rows.items():
        slow = row["slow_reader"]
        verdict = f"ok, {fmt_rate(slow['msgs_per_s_incl_pause'])} msg/s incl. the pause" if slow["ok"] else _stall_note(row, "slow_reader")
        out.append(f"   {LABELS[server] + ' (' + format(slow['requests'], ',') + ' requests)':<58}{verdict}")

    out.append("")
    out.append("3. Floor = bench/floor_server.py (readline, json.loads, json.dumps, write); 'over floor' = the server's")
    out.append("   us/msg (or CPU us/msg) minus the floor's in the same run: the server's own per-message overhead.")
    out.append("")
    out.append(f"4. Large payload: resources/read of 4 MiB (median of {options.large_reads})   time     wire     wire/s  peak RSS (idle)")
    for server, rows in results["large"].items():
        idle = rows["idle"]["peak_rss_mib"]
        for kind in ("text", "blob"):
            row = rows[kind]
            out.append(
                f"   {LABELS[server] + ' ' + kind:<40}{row['median_ms']:6.1f} ms {row['wire_mib']:4.1f} MiB {row['wire_mib_per_s']:4.0f} MiB/s"
                f" {row['peak_rss_mib']:5.1f} MiB ({idle:.1f})"
            )
    if "importtime" in results:
        imp = results["importtime"]
        out.append("")
        out.append(f"Start-up imports of the mcp_ref server (python -X importtime, min of 3 runs; {imp['modules']} modules,")
        out.append(f"{imp['total_ms']:.1f} ms in total under instrumentation), milliseconds:")
        out.append("   top-level, cumulative:  " + ", ".join(f"{n} {v:.1f}" for n, v in imp["top_level_ms"][:6]))
        out.append("   mcp_ref, cumulative:    " + ", ".join(f"{n} {v:.1f}" for n, v in imp["mcp_ref_cumulative_ms"][:8]))
        out.append("   by self time:           " + ", ".join(f"{n} {v:.1f}" for n, v in imp["top_self_ms"][:10]))
    out.append("")
    out.append(f"(total bench time {results['elapsed_s']:.1f} s)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer samples (~10 s)")
    parser.add_argument("--peers", action="store_true", help="also measure the official Python SDK (mcp) server")
    parser.add_argument("--importtime", action="store_true", help="summarize python -X importtime of the server start-up")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the server under pipelined tools/call load")
    parser.add_argument("--json", metavar="PATH", help="write all numbers to PATH")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the cold-start target is missed")
    parser.add_argument("-n", "--messages", type=int, help="pipelined requests per throughput run (default 20000; quick 5000)")
    parser.add_argument("--runs", type=int, help="cold-start runs per row (default 20; quick 8)")
    parser.add_argument("--repeats", type=int, help="throughput runs per row (default 3; quick 1)")
    parser.add_argument("--latency-samples", type=int, help="sequential round trips (default 2000; quick 500)")
    parser.add_argument("--large-reads", type=int, help="reads per large-payload row (default 5; quick 2)")
    parser.add_argument("--peer-messages", type=int, help="pipelined requests per peer throughput run (default 5000; quick 2000)")
    parser.add_argument(
        "--mcp-ref-server", metavar="SCRIPT",
        help="measure this script instead of bench/echo_server.py (e.g. a variant trying an optimization)",
    )
    options = parser.parse_args(argv)
    defaults = {
        "messages": (20000, 5000), "runs": (20, 8), "repeats": (3, 1), "latency_samples": (2000, 500), "large_reads": (5, 2),
        "peer_messages": (5000, 2000),
    }
    for name, (normal, quick) in defaults.items():
        if getattr(options, name) is None:
            setattr(options, name, quick if options.quick else normal)
    if options.runs < 2 or options.latency_samples < 2 or options.messages < 1:
        parser.error("--runs and --latency-samples need at least 2, --messages at least 1")

    if options.mcp_ref_server:
        SERVERS["mcp_ref"] = [PY, os.path.abspath(options.mcp_ref_server)]
    signal.signal(signal.SIGTERM, _on_signal)
    servers = ["floor", "mcp_ref"] + (["sdk"] if options.peers else [])
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine(), "options": vars(options)}

    def progress(what: str) -> None:
        print(f"[{time.perf_counter() - started:5.1f} s] {what}", file=sys.stderr, flush=True)

    try:
        cold: dict[str, Any] = {"rows": []}
        for server in servers:
            progress(f"cold start: {server}")
            if server == "floor":
                cold["floor"] = cold_start("floor", discover_line, options.runs, _check_discover)
                cold["rows"].append(("floor", "floor (python + json, one answer)"))
                continue
            runs = options.runs if server == "mcp_ref" else min(options.runs, PEER_COLD_RUNS)
            cold[f"{server}_discover"] = cold_start(server, discover_line, runs, _check_discover)
            cold[f"{server}_tools_call"] = cold_start(server, echo_line, runs, _check_echo)
            cold["rows"] += [(f"{server}_discover", f"{LABELS[server]} server/discover"), (f"{server}_tools_call", f"{LABELS[server]} first tools/call")]
        cold["target_ms"] = COLD_START_TARGET_MS
        cold["verdict"] = "PASS" if cold["mcp_ref_discover"]["median_ms"] <= COLD_START_TARGET_MS else "FAIL"
        results["cold_start"] = cold

        results["load"] = {}
        for server in servers:
            progress(f"throughput and latency: {server}")
            if server == "sdk":  # ~20x slower per message: fewer samples keep --peers near a minute
                results["load"][server] = load(server, options.peer_messages, 1, min(options.latency_samples, 1000), progress)
            else:
                results["load"][server] = load(server, options.messages, options.repeats, options.latency_samples, progress)

        results["large"] = {}
        for server in servers[1:]:
            progress(f"large payload: {server}")
            results["large"][server] = {
                kind or "idle": large_payload(server, kind, options.large_reads) for kind in (None, "text", "blob")
            }

        if options.importtime:
            progress("importtime")
            results["importtime"] = import_times("mcp_ref")
        if options.profile:
            progress("profile")
            results["profile"] = profile(options.messages)
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    finally:
        _kill_all()
    results["elapsed_s"] = time.perf_counter() - started
    progress("done")

    print(render(results, options))
    if "profile" in results:
        print("\ncProfile of the mcp_ref server under pipelined tools/call load:\n")
        print(results["profile"])
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(results, handle, indent=2)
            handle.write("\n")
    stalled = [server for server, row in results["load"].items() if row["stalls"]]
    if stalled:
        print(f"\nbench: {', '.join(stalled)} stopped answering under load (see 'STALLED' above)", file=sys.stderr)
        return 3
    if options.strict and results["cold_start"]["verdict"] != "PASS":
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
