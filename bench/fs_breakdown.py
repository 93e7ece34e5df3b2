"""Where one mcp-ref-fs call's server CPU goes: the list_directory (200 entries) and small
read_text_file rows of fs_bench.py, split into kernel, sandbox, the tool's own work, argument
validation, JSON and the rest (dispatch, result shaping, the event loop, pipes).

    .venv/bin/python bench/fs_breakdown.py FIXTURE            # FIXTURE: fs_bench.py --keep-fixture's directory
    .venv/bin/python bench/fs_breakdown.py FIXTURE --servers DIR   # mcp_ref_fs from DIR (a --variant copy)

Each part is timed in this process with ``time.process_time`` (best of 7 batches, in us per call),
on the same fixture files:

* kernel: the system calls a call makes, made directly with ``os`` (list: open the directory
  beneath the root, read all its entries with ``scandir``, close; read: open, ``fstat``, read,
  close): the floor any server pays;
* sandbox: the sandbox's own open of the same directory or file (path checks, the confined
  open) less the plain open and close of the kernel part;
* tool: the tool's handler, called directly, less the two parts above (sorting, kinds, names as
  shown, the answer text, the answer budget);
* validation: the tool's input-schema check of the arguments (``Tool.argument_errors``), and
  shaping its result for the wire (``Tool.to_result``);
* JSON: decoding the request line and encoding the answer line;
* the rest: the server CPU per call of a real server process on pipes (1,000 pipelined calls, 32
  in flight, best of 3, all threads' ``/proc/<pid>/task/*/schedstat``) less all of the above: dispatch, the asyncio task, the
  event loop, reading and writing the pipes.

A second table splits the same total on pipes another way, with no part timed alone: the same
calls to ``answer_server.py``, a server on mcp_ref that answers each tool with exactly what
mcp-ref-fs answered (recorded here from its handler) and does no file work. Its CPU per call is the
library's, JSON's and the event loop's for that answer; the difference is mcp-ref-fs's file work as
it costs in a running server (the parts above timed alone leave out what a process serving many
calls pays on top: caches shared with the loop, the request's context). Last, the asyncio floor
(``floor_server.py --asyncio``) on the same calls, answering the read's text, and the least a
confined read needs with no library at all (``least_read_server.py``, written by hand).

Then, in wall time, fs_bench.py's reads row (2,000 pipelined reads) for the floor, the least read
server and mcp-ref-fs, in interleaved rounds (``--wall-rounds``, 0 for none): issue 21's read goal
beside what a server with none of the library's structure reaches.

Standard library only, no assertions on time; Linux (``/proc``) for the CPU totals on pipes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
LIMITS = ["--max-entries", "1000000", "--max-answer-bytes", "1000000000", "--max-calls-per-second", "0"]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fs-breakdown", "version": "0"}}


def per_call(function: Callable[[], Any], calls: int = 2000) -> float:
    """Best of 7 batches, in us of CPU per call."""
    function()
    best = float("inf")
    for _ in range(7):
        start = time.process_time()
        for _ in range(calls):
            function()
        best = min(best, (time.process_time() - start) / calls * 1e6)
    return best


def run_now(coroutine: Any) -> Any:
    """A coroutine that never waits, run to its end without an event loop turn."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("the handler waited: it did not run on the event loop")


def request_line(number: int, tool: str, arguments: dict[str, Any]) -> bytes:
    params = {"name": tool, "arguments": arguments, "_meta": META}
    return (json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}) + "\n").encode()


def server_cpu_per_call(command: list[str], tool: str, arguments: dict[str, Any], calls: int = 1000,
                        window: int = 32, env: dict[str, str] | None = None) -> float:
    """us of server CPU per call: ``calls`` pipelined calls (``window`` in flight), after a warm-up."""
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    def burst(count: int) -> None:
        sent = threading.Semaphore(window)

        def write() -> None:
            for number in range(count):
                sent.acquire()
                stdin.write(request_line(number, tool, arguments))
                stdin.flush()

        writer = threading.Thread(target=write)
        writer.start()
        for _ in range(count):
            answer = json.loads(stdout.readline())
            if "result" not in answer or answer["result"].get("isError"):
                raise RuntimeError(f"unexpected answer: {str(answer)[:300]}")
            sent.release()
        writer.join()

    def cpu() -> int:  # ns of CPU of all the server's threads (Linux schedstat)
        total = 0
        for task in os.listdir(f"/proc/{child.pid}/task"):
            with open(f"/proc/{child.pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[0])
        return total

    try:
        burst(200)
        best = float("inf")
        for _ in range(3):
            before = cpu()
            burst(calls)
            best = min(best, (cpu() - before) / calls / 1e3)
        return best
    finally:
        stdin.close()
        child.wait(10)


def measure_row(tool: Any, ctx: Any, arguments: dict[str, Any], kernel: Callable[[], None],
                sandboxed_open: Callable[[], None], plain: Callable[[], None], wire: Any) -> list[float]:
    """us per call of: kernel, sandbox, the tool's own work, validation and shaping, JSON."""
    kernel_us = per_call(kernel)
    sandbox_us = max(per_call(sandboxed_open) - per_call(plain), 0.0)
    handler_us = per_call(lambda: run_now(tool.handler(ctx, arguments)))
    value = run_now(tool.handler(ctx, arguments))
    valid_us = per_call(lambda: (tool.argument_errors(arguments), tool.to_result(value)))
    line = request_line(1, tool.name, arguments)
    message = wire.result_response(1, tool.to_result(value))
    json_us = per_call(lambda: (json.loads(line), wire.encode_message(message)))
    return [kernel_us, sandbox_us, max(handler_us - kernel_us - sandbox_us, 0.0), valid_us, json_us]


def non_negative(value: str) -> int:
    """``--wall-rounds``: a count, 0 or more."""
    count = int(value)
    if count < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fixture", help="the fixture directory of fs_bench.py --keep-fixture")
    parser.add_argument("--servers", metavar="DIR", help="import mcp_ref_fs from DIR/mcp_ref_fs (say, a --variant copy)")
    parser.add_argument("--wall-rounds", type=non_negative, default=5, metavar="N",
                        help="rounds of the wall-time reads comparison (floor, least read server, mcp-ref-fs); 0: none")
    options = parser.parse_args(argv)
    if options.servers:
        sys.path.insert(0, os.path.abspath(options.servers))
    from mcp_ref.core import wire
    from mcp_ref_fs.config import Config
    from mcp_ref_fs.root import Sandbox
    from mcp_ref_fs.server import build_server

    root = os.path.realpath(options.fixture)
    config = Config(roots=(root,), max_entries=1_000_000, max_answer_bytes=1_000_000_000, max_calls_per_second=0)
    sandbox = Sandbox.open(config.roots)
    server = build_server(config, sandbox)
    ctx = type("Ctx", (), {"client_info": META["io.modelcontextprotocol/clientInfo"], "task_id": None})()
    launcher = ["-c", f"import sys; sys.path.insert(0, {os.path.abspath(options.servers)!r}); "
                      "from mcp_ref_fs.__main__ import main; sys.exit(main())"] if options.servers else ["-m", "mcp_ref_fs"]
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)

    def kernel_list() -> None:
        fd = os.open("folder200", os.O_RDONLY | os.O_DIRECTORY, dir_fd=root_fd)
        with os.scandir(fd) as scan:
            list(scan)
        os.close(fd)

    def kernel_read() -> None:
        fd = os.open("small.txt", os.O_RDONLY, dir_fd=root_fd)
        os.fstat(fd)
        os.read(fd, 8192)
        os.close(fd)

    def plain_open(name: str, flags: int) -> Callable[[], None]:
        return lambda: os.close(os.open(name, flags, dir_fd=root_fd))

    def sandbox_list() -> None:
        sandbox.close_directory(sandbox.open_directory("folder200")[1])

    def sandbox_read() -> None:
        sandbox.open_file("small.txt").close()

    rows = [("list_directory", {"path": "folder200"}, kernel_list, sandbox_list, plain_open("folder200", os.O_RDONLY | os.O_DIRECTORY)),
            ("read_text_file", {"path": "small.txt"}, kernel_read, sandbox_read, plain_open("small.txt", os.O_RDONLY))]
    print(f"mcp_ref_fs from {os.path.dirname(sys.modules['mcp_ref_fs'].__file__ or '')}; "
          f"load average {os.getloadavg()[0]:.2f}; us of CPU per call")
    print(f"{'row':16} {'kernel':>7} {'sandbox':>8} {'tool':>7} {'valid.':>7} {'JSON':>7} {'rest':>7} {'total':>7}")
    totals = {}
    for name, arguments, kernel, sandboxed_open, plain in rows:
        parts = measure_row(server.tools[name], ctx, arguments, kernel, sandboxed_open, plain, wire)
        totals[name] = total = server_cpu_per_call([PY] + launcher + LIMITS + [root], name, arguments)
        rest = total - sum(parts)
        print(f"{name:16} " + " ".join(f"{part:7.1f}" for part in parts) + f" {rest:7.1f} {total:7.1f}")
    print()
    print(f"{'row':16} {'the same answer, no file work (answer_server.py)':>50} {'the file work in place':>24} {'total':>7}")
    # With --servers, the library alone is that copy's mcp_ref when it has one (a --variant copy does).
    variant_env = {**os.environ, "PYTHONPATH": os.path.abspath(options.servers)} if options.servers else None
    with tempfile.TemporaryDirectory() as folder:
        recorded = os.path.join(folder, "answers.json")
        with open(recorded, "w", encoding="utf-8") as handle:
            json.dump(record_answers(server, ctx, rows), handle)
        for name, arguments, *_ in rows:
            library = server_cpu_per_call([PY, os.path.join(HERE, "answer_server.py"), recorded], name, arguments, env=variant_env)
            print(f"{name:16} {library:50.1f} {totals[name] - library:24.1f} {totals[name]:7.1f}")
    floor = server_cpu_per_call([PY, os.path.join(HERE, "floor_server.py"), "--asyncio", "--text-file", os.path.join(root, "small.txt")],
                                "read_text_file", {"path": "small.txt"})
    print(f"the asyncio floor (floor_server.py --asyncio) answering read_text_file's text: {floor:.1f}")
    least = server_cpu_per_call([PY, os.path.join(HERE, "least_read_server.py"), root], "read_text_file", {"path": "small.txt"})
    print(f"the least a confined read needs, by hand (least_read_server.py): {least:.1f}")
    sandbox.close()
    if options.wall_rounds:
        print()
        wall_reads(root, options.wall_rounds, launcher)
    return 0


def wall_reads(root: str, rounds: int, launcher: list[str]) -> None:
    """fs_bench.py's reads row (2,000 pipelined reads of small.txt, 32 in flight, first write to last
    answer) for the floor, the least read server and mcp-ref-fs, in interleaved rounds: the wall time
    issue 21's read goal is judged on, beside what a server with no library can reach."""
    sys.path.insert(0, HERE)
    import fs_bench  # the benchmark's own driver (sessions, the reads row): only this part needs it

    # What w_reads uses of a fixture, from the files as they are (fs_bench.build_fixture would
    # write the whole fixture again wherever its stamp is missing).
    small = os.path.join(root, "small.txt")
    with open(small, encoding="utf-8") as handle:
        fixture: Any = types.SimpleNamespace(root=root, small=small, small_text=handle.read())
    contenders = [
        fs_bench.Contender("floor", "the asyncio floor", "floor", "modern",
                           lambda _root: [PY, os.path.join(HERE, "floor_server.py"), "--asyncio", "--text-file", small]),
        fs_bench.Contender("least", "the least read, by hand", "floor", "modern",
                           lambda root: [PY, os.path.join(HERE, "least_read_server.py"), root]),
        fs_bench.Contender("ref", "mcp-ref-fs", "ref", "modern", lambda root: [PY] + launcher + LIMITS + [root]),
    ]
    sessions = []
    times: dict[str, list[float]] = {contender.key: [] for contender in contenders}
    try:
        for contender in contenders:
            sessions.append(fs_bench.Session(contender, fixture.root))
        for session in sessions:
            fs_bench.w_reads(session, fixture, 300)  # warm-up
        for _ in range(rounds):
            for session in sessions:
                times[session.contender.key].append(fs_bench.w_reads(session, fixture)["value"])
    finally:
        for session in sessions:
            session.close()
    floor = statistics.median(times["floor"])
    print(f"2,000 pipelined reads (fs_bench.py's reads row), median of {rounds} interleaved rounds:")
    for contender in contenders:
        value = statistics.median(times[contender.key])
        print(f"  {contender.label:26} {value:7.1f} ms  {value / floor:5.2f}x the floor")


def record_answers(server: Any, ctx: Any, rows: list[Any]) -> dict[str, Any]:
    """What ``answer_server.py`` needs to answer as mcp-ref-fs did: the server's name, version and
    title, and per tool its input schema and its handler's value for the row's arguments."""
    tools = {}
    for name, arguments, *_ in rows:
        tool = server.tools[name]
        value = run_now(tool.handler(ctx, arguments))
        tools[name] = {"input_schema": tool.input_schema,
                       "value": value if isinstance(value, str) else {"content": value.content}}
    return {"server": server.info, "tools": tools}


if __name__ == "__main__":
    sys.exit(main())
