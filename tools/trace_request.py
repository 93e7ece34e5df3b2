"""Follow one steady-state request through the project's code, as a reader would.

    python tools/trace_request.py                 # a read_text_file through mcp-ref-fs
    python tools/trace_request.py --list          # and every function on the way, in order
    python tools/trace_request.py --markdown      # the walk docs/architecture.md shows (paste it there)

Starts ``mcp-ref-fs`` on a scratch folder with a profiler installed (``sys.setprofile`` and
``threading.setprofile``, which see every Python function call), sends it the same
``read_text_file`` request several times, one after another, and looks at one of the later ones
(the first few warm caches up). Its path runs from the ``os.read`` of stdin that brings the
request's line to the ``os.write``/``os.writev`` of stdout that carries its answer. On that path
it counts the project's functions (those defined in ``mcp_ref/`` or ``servers/``), the files they
live in, and the switches from one file to another in the order the functions were called.

``tests/test_architecture.py`` runs this and holds the figures (and docs/architecture.md's walk
of one request, the section between ``WALK_BEGIN`` and ``WALK_END`` that ``--markdown`` prints) to
the code. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
CODE_DIRS = (PROJECT / "mcp_ref", PROJECT / "servers")
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}

# Runs inside the server process: wraps os.read/os.write/os.writev so the trace records where stdin
# bytes arrive and stdout bytes leave, installs the profiler, then runs mcp-ref-fs; at exit the
# trace is written as JSON lines to the file named by argv[1].
_SERVE = r"""
import atexit, json, os, sys, threading
out_path = sys.argv[1]
code_dirs = tuple(json.loads(sys.argv[2]))
del sys.argv[1:3]
events = []
record = events.append
real_read, real_write, real_writev = os.read, os.write, os.writev
# The server moves the protocol off fds 0 and 1 (so stray prints cannot reach it): a read is
# stdin's when it brings a JSON-RPC line, a write stdout's when it starts one.
def read(fd, n):
    data = real_read(fd, n)
    if b'"jsonrpc"' in data:
        record(("read", len(data)))
    return data
def write(fd, data):
    written = real_write(fd, data)
    if bytes(data[:11]) == b'{"jsonrpc":':
        record(("write", written))
    return written
def writev(fd, buffers):
    written = real_writev(fd, buffers)
    if buffers and bytes(buffers[0][:11]) == b'{"jsonrpc":':
        record(("write", written))
    return written
os.read, os.write, os.writev = read, write, writev
ours = {}
def profile(frame, event, arg):
    if event != "call":
        return
    code = frame.f_code
    mine = ours.get(code)
    if mine is None:
        mine = ours[code] = code.co_filename.startswith(code_dirs) and not code.co_name.startswith("<")
    if mine:
        record(("call", code.co_filename, code.co_qualname, code.co_firstlineno))
def dump():
    sys.setprofile(None)
    threading.setprofile(None)
    with open(out_path, "w", encoding="utf-8") as out:
        for event in events:
            out.write(json.dumps(event) + "\n")
atexit.register(dump)
threading.setprofile(profile)
sys.setprofile(profile)
from mcp_ref_fs.__main__ import main
code = main()
sys.setprofile(None)
sys.exit(code)
"""


@dataclass
class Call:
    file: str  # relative to the project
    function: str  # qualified name
    line: int


@dataclass
class Trace:
    calls: list[Call]

    @property
    def functions(self) -> list[str]:
        """Distinct ``file:function`` in the order first called."""
        return list(dict.fromkeys(f"{call.file}:{call.function}" for call in self.calls))

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(call.file for call in self.calls))

    @property
    def switches(self) -> int:
        """How often the next function called lives in another file than the one before."""
        return sum(1 for before, after in zip(self.calls, self.calls[1:]) if before.file != after.file)

    def summary(self) -> str:
        return f"{len(self.functions)} functions in {len(self.files)} files, {self.switches} file switches"

    def segments(self) -> list[tuple[str, list[str]]]:
        """The calls as runs in one file: ``(file, [function, ...])``, a new run at each switch."""
        runs: list[tuple[str, list[str]]] = []
        for call in self.calls:
            if not runs or runs[-1][0] != call.file:
                runs.append((call.file, []))
            runs[-1][1].append(call.function)
        return runs

    def markdown(self) -> str:
        """The walk as docs/architecture.md shows it: one line per run of calls in one file."""
        lines = [WALK_BEGIN, ""]
        for file, functions in self.segments():
            lines.append(f"- `{file}`: " + ", ".join(f"`{function}`" for function in functions))
        lines += ["", f"Totals: {self.summary()}.", "", WALK_END]
        return "\n".join(lines)


# The delimiters of the walk in docs/architecture.md (``--markdown`` prints the whole section).
WALK_BEGIN = "<!-- walk: generated by `python tools/trace_request.py --markdown`; do not edit by hand -->"
WALK_END = "<!-- end of walk -->"


def walk_in(document: str) -> tuple[list[str], str]:
    """The distinct ``file:function`` in a document's walk, in the order first named, and its
    totals line (what ``Trace.functions`` and ``Trace.summary`` say for the trace it was made from)."""
    section = document.split(WALK_BEGIN, 1)[1].split(WALK_END, 1)[0]
    named: list[str] = []
    totals = ""
    for line in section.splitlines():
        if line.startswith("- `"):
            file, _, functions = line[3:].partition("`: ")
            named += [f"{file}:{function.strip('`')}" for function in functions.split(", ")]
        elif line.startswith("Totals: "):
            totals = line[len("Totals: "):].rstrip(".")
    return list(dict.fromkeys(named)), totals


def _request(request_id: int, path: str) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
               "params": {"name": "read_text_file", "arguments": {"path": path}, "_meta": META}}
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def trace_read_text_file(*, requests: int = 12, target: int = 10, python: str = sys.executable) -> Trace:
    """The path of request number ``target`` (1-based) of ``requests`` sequential reads."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch, "root")
        root.mkdir()
        (root / "notes.txt").write_text("one line of text\n" * 20, encoding="utf-8")
        trace_file = Path(scratch, "trace.jsonl")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROJECT / "servers"), str(PROJECT)]))
        env.pop("MCP_REF_STDIO", None)
        process = subprocess.Popen(
            [python, "-c", _SERVE, str(trace_file), json.dumps([str(d) + os.sep for d in CODE_DIRS]), str(root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )
        assert process.stdin is not None and process.stdout is not None
        for request_id in range(1, requests + 1):
            process.stdin.write(_request(request_id, str(root / "notes.txt")))
            process.stdin.flush()
            answer = json.loads(process.stdout.readline())
            if answer.get("id") != request_id or "result" not in answer:
                process.kill()
                raise RuntimeError(f"unexpected answer to request {request_id}: {answer}")
        process.stdin.close()
        process.stdout.read()
        stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
        if process.wait(timeout=30) != 0:
            raise RuntimeError(f"the traced server exited {process.returncode}: {stderr[-2000:]}")
        events = [json.loads(line) for line in trace_file.read_text(encoding="utf-8").splitlines()]
    return _path_of(events, target)


def _path_of(events: list[list], target: int) -> Trace:
    """The calls from the stdin read that starts request ``target`` to the stdout write that ends it.

    Requests went one at a time, so request N's line is the first stdin read after answer N-1 was
    written, and its answer is the first stdout write after that read."""
    writes = [i for i, event in enumerate(events) if event[0] == "write"]
    previous_answer = writes[target - 2]
    start = next(i for i in range(previous_answer + 1, len(events)) if events[i][0] == "read")
    end = next(i for i in range(start + 1, len(events)) if events[i][0] == "write")
    calls = [Call(str(Path(event[1]).resolve().relative_to(PROJECT)), event[2], event[3])
             for event in events[start:end] if event[0] == "call"]
    return Trace(calls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print every function on the path, in the order first called")
    parser.add_argument("--markdown", action="store_true", help="print the walk of docs/architecture.md (the whole delimited section)")
    options = parser.parse_args()
    trace = trace_read_text_file()
    if options.markdown:
        print(trace.markdown())
        return 0
    if options.list:
        previous = None
        for call in trace.calls:
            if call.file != previous:
                print(f"{call.file}")
                previous = call.file
            print(f"    {call.function}  (line {call.line})")
    print(f"one steady-state read_text_file through mcp-ref-fs: {trace.summary()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
