"""Property-based sessions against the bundled servers, through real stdio.

Each example is a session (``strategies.sessions``): requests valid and mutated, pipelines,
byte-level damage, cancellations, forged MRTR retries, EOF at random points. ``harness`` plays
it against a long-lived ``mcp-ref-everything`` or ``mcp-ref-fs`` (over a temporary tree) and
checks the invariants listed in its docstring. ``make test`` runs a short derandomized pass;
``make fuzz`` a long random one (see conftest.py for the profiles).

A bug the fuzzer finds is pinned at the end of this file as a minimal reproducer marked
``xfail(strict=True)``, and tolerated in the sessions, for exactly the requests that trigger it,
by a ``harness.KNOWN_BUGS`` entry: when it is fixed, the reproducer XPASSes and fails the suite;
then unmark it (it stays as a regression test) and delete the entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.wire import ServerProcess, modern_request, notification

from . import harness
from .harness import Eof, FuzzServer, ServerPool, Write, classify_line, encode
from .strategies import ALL_CAPABILITIES, ServerModel, minimal_arguments, sessions

EVERYTHING = [sys.executable, "-m", "mcp_ref_everything"]


def ci_examples(count: int) -> int:
    """``count`` in the derandomized CI profile; the profile's own number otherwise."""
    return count if os.environ.get("MCP_REF_FUZZ_PROFILE", "ci") == "ci" else settings.default.max_examples


def _record(labels: set[str]) -> None:
    for label in sorted(labels):
        event(label)  # shown by --hypothesis-show-statistics


# --- models: what each server offers, from its own list methods --------------------------------------


def _collect(process: ServerProcess, method: str, field: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    for page in range(100):
        params = {"cursor": cursor} if cursor else {}
        answer = process.request(modern_request(f"{method}-{page}", method, params))
        if "error" in answer:
            return items
        items += answer["result"][field]
        cursor = answer["result"].get("nextCursor")
        if not cursor:
            return items
    raise AssertionError(f"{method} never stopped paging")


def discover_model(name: str, command: list[str], path_hints: tuple[str, ...] = ()) -> ServerModel:
    """The server's tools, prompts and resources, and which of them answer ``input_required`` (each
    tool probed once with minimal arguments: this may change files, so fs sessions reset the tree)."""
    with ServerProcess(command, schema=None) as process:
        tools = _collect(process, "tools/list", "tools")
        prompts = _collect(process, "prompts/list", "prompts")
        resources = _collect(process, "resources/list", "resources")
        templates = _collect(process, "resources/templates/list", "resourceTemplates")
        candidates = [("tools/call", {"name": tool["name"], "arguments": minimal_arguments(tool["inputSchema"], hints=path_hints)}) for tool in tools]
        candidates += [("prompts/get", {"name": prompt["name"], "arguments": {}}) for prompt in prompts]
        candidates += [("resources/read", {"uri": resource["uri"]}) for resource in resources[:20]]
        rounds = []
        for number, (method, params) in enumerate(candidates):
            answer = process.request(modern_request(f"probe-{number}", method, params, capabilities=ALL_CAPABILITIES))
            if answer.get("result", {}).get("resultType") == "input_required":
                rounds.append((method, params))
        process.shutdown()
    assert tools, f"{name} lists no tools"
    return ServerModel(
        name=name,
        tools={tool["name"]: tool["inputSchema"] for tool in tools},
        prompts={prompt["name"]: prompt.get("arguments", []) for prompt in prompts},
        resources=tuple(resource["uri"] for resource in resources[:20]),
        templates=tuple(template["uriTemplate"] for template in templates),
        path_hints=path_hints,
        rounds=tuple(rounds),
    )


# --- mcp-ref-everything ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def everything_model() -> ServerModel:
    return discover_model("everything", EVERYTHING)


@pytest.fixture(scope="module")
def everything() -> Iterator[ServerPool]:
    pool = ServerPool(EVERYTHING)
    yield pool
    pool.close()


@settings(max_examples=ci_examples(40))
@given(data=st.data())
def test_everything_sessions(everything: ServerPool, everything_model: ServerModel, data: st.DataObject) -> None:
    _record(everything.play(data.draw(sessions(everything_model), label="session")))


MRTR_KINDS = ("mrtr", "retry", "retry", "retry", "cancel", "pause")


@settings(max_examples=ci_examples(30))
@given(data=st.data())
def test_everything_mrtr_retries(everything: ServerPool, everything_model: ServerModel, data: st.DataObject) -> None:
    # Rounds and (mostly forged) retries only: the requestState and inputResponses paths.
    _record(everything.play(data.draw(sessions(everything_model, kinds=MRTR_KINDS, max_steps=8, eof_one_in=1000), label="session")))


BYTE_KINDS = ("bytes", "bytes", "pipeline", "request", "cancel", "client-response", "notification", "flood", "stall")
LINE_LIMIT = 65_536  # MCP_REF_MAX_LINE_BYTES of the server below: lines at and around it are cheap


@pytest.fixture(scope="module")
def everything_small_lines() -> Iterator[ServerPool]:
    pool = ServerPool(EVERYTHING, max_line_bytes=LINE_LIMIT)
    yield pool
    pool.close()


@settings(max_examples=ci_examples(30))
@given(data=st.data())
def test_everything_damaged_bytes(everything_small_lines: ServerPool, everything_model: ServerModel, data: st.DataObject) -> None:
    session = sessions(everything_model, kinds=BYTE_KINDS, eof_one_in=6, line_limit=LINE_LIMIT)
    _record(everything_small_lines.play(data.draw(session, label="session")))


# --- mcp-ref-fs over a temporary tree --------------------------------------------------------------------


def _build_tree(root: Path, outside: Path) -> None:
    (root / "sub" / "deep").mkdir(parents=True, exist_ok=True)
    (root / "empty").mkdir(exist_ok=True)
    (root / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (root / "sub" / "b.txt").write_text("one\ntwo\n")
    (root / "sub" / "deep" / "c.md").write_text("# title\n\ntext\n")
    (root / "bytes.bin").write_bytes(bytes(range(256)))
    link = root / "link-out"
    if not link.is_symlink():
        link.symlink_to(outside)


def _reset_tree(root: Path, outside: Path) -> None:
    for child in root.iterdir():  # the root itself stays: the server holds it open
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    _build_tree(root, outside)


def _snapshot(folder: Path) -> dict[str, str]:
    seen = {}
    for path in sorted(folder.rglob("*")):
        relative = str(path.relative_to(folder))
        seen[relative] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return seen


@pytest.fixture(scope="module")
def fs_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("fuzz-fs")
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the root\n")
    _build_tree(root, outside)
    return root, outside


def _fs_command(root: Path) -> list[str]:
    return [sys.executable, "-m", "mcp_ref_fs", "--search-seconds", "0.5", str(root)]


@pytest.fixture(scope="module")
def fs_model(fs_tree: tuple[Path, Path]) -> ServerModel:
    root, outside = fs_tree
    hints = (
        "a.txt",
        "sub",
        "sub/b.txt",
        "sub/deep/c.md",
        "bytes.bin",
        "empty",
        "new.txt",
        "sub/new-dir",
        ".",
        "",
        "~",
        "missing/x.txt",
        str(root),
        str(root / "a.txt"),
        "../outside/secret.txt",
        str(outside / "secret.txt"),
        str(outside / "new.txt"),
        "link-out/secret.txt",
        "link-out/new.txt",
        "sub/../../outside/secret.txt",
    )
    return discover_model("fs", _fs_command(root), hints)


@pytest.fixture(scope="module")
def fs(fs_tree: tuple[Path, Path]) -> Iterator[ServerPool]:
    root, outside = fs_tree
    before = _snapshot(outside)

    def outside_unchanged() -> None:
        after = _snapshot(outside)
        assert after == before, f"the session changed files outside the root: {sorted(set(after.items()) ^ set(before.items()))}"

    pool = ServerPool(_fs_command(root), before=lambda: _reset_tree(root, outside), after=outside_unchanged)
    yield pool
    pool.close()


@settings(max_examples=ci_examples(35))
@given(data=st.data())
def test_fs_sessions(fs: ServerPool, fs_model: ServerModel, data: st.DataObject) -> None:
    _record(fs.play(data.draw(sessions(fs_model), label="session")))


# --- the harness itself ------------------------------------------------------------------------------------


def test_the_oracle_classifies_lines_as_json_rpc_does() -> None:
    assert classify_line(b"").kind == "blank"
    assert classify_line(b" \t\r").kind == "blank"
    assert classify_line(b'{"jsonrpc":"2.0","id":1,"method":"x"}') == harness.Classified("request", 1, "x", {})
    assert classify_line(b'{"jsonrpc":"2.0","id":"1","method":"x"}').id == "1"
    assert classify_line(b'{"jsonrpc":"2.0","method":"x"}').kind == "notification"
    assert classify_line(b'{"jsonrpc":"2.0","id":1,"result":{}}').kind == "client-response"
    assert classify_line(b"\xff").code == -32700
    assert classify_line(b'{"a":NaN}').code == -32700
    assert classify_line(b"[]") == harness.Classified("bad", code=-32600)
    assert classify_line(b'{"jsonrpc":"2.0","id":1.0,"method":"x"}') == harness.Classified("bad", code=-32600)
    assert classify_line(b'{"jsonrpc":"2.0","id":true,"method":"x"}') == harness.Classified("bad", code=-32600)
    assert classify_line(b'{"jsonrpc":"1.0","id":7,"method":"x"}') == harness.Classified("bad", id=7, code=-32600)
    assert classify_line(b'{"jsonrpc":"2.0","id":7,"method":"x","params":[]}') == harness.Classified("bad", id=7, code=-32600)
    notice = b'{"jsonrpc":"2.0","method":"x"}'
    assert classify_line(notice, max_line_bytes=len(notice)).kind == "notification"
    assert classify_line(notice + b"\r", max_line_bytes=len(notice)).kind == "notification"  # the CR of CRLF
    assert classify_line(notice + b" ", max_line_bytes=len(notice)) == harness.Classified("bad", code=-32600)
    deep = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":' + b"[" * 600 + b"]" * 600 + b"}}"
    assert classify_line(deep).too_deep and classify_line(deep).kind == "request"


def test_the_frame_check_rejects_what_a_client_cannot_read() -> None:
    harness.check_frame(b'{"jsonrpc":"2.0","id":1,"result":{"text":"a b\\u2028"}}')
    for bad in (
        b'{"jsonrpc":"2.0", "id":1,"result":{}}',  # not compact
        b'{"jsonrpc":"2.0","id":1,"result":{"t":"\xe2\x80\xa8"}}',  # raw U+2028
        b'{"jsonrpc":"2.0","id":1,"method":"x"}',  # a request
        b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":""}}',
        b'{"jsonrpc":"2.0","id":1,"result":{}}\r',
    ):
        with pytest.raises(AssertionError):
            harness.check_frame(bad)


def test_the_ledger_catches_a_second_answer_and_a_changed_id_type() -> None:
    server = FuzzServer(EVERYTHING)
    try:
        episode = harness._Episode(server)
        episode.note(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        episode.accept(b'{"jsonrpc":"2.0","id":1,"result":{}}')
        with pytest.raises(AssertionError, match="answered 2 times"):
            episode.accept(b'{"jsonrpc":"2.0","id":1,"result":{}}')
        with pytest.raises(AssertionError, match="no line of this session carried.*'int', 1"):
            episode.accept(b'{"jsonrpc":"2.0","id":"1","result":{}}')
    finally:
        server.close()


def test_known_bug_tolerance_covers_only_its_own_symptom(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness, "KNOWN_BUGS", (harness.KnownBug(
        "an example: abandoned work whose exception nobody retrieves",
        "test_cancelled_off_loop_work_that_fails_logs_no_traceback",
        lambda c, line: c.kind == "notification" and c.method == "notifications/cancelled",
        r"ERROR asyncio: Future exception was never retrieved\n",
    ),))
    stamp = "2026-01-01 00:00:00,000 "
    cancelled = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'
    never_retrieved = f"{stamp}ERROR asyncio: Future exception was never retrieved\nTraceback (most recent call last):\nValueError: x\n"
    other = f"{stamp}ERROR mcp_ref: handler for tools/call failed\nTraceback (most recent call last):\nKeyError: 'x'\n"
    server = FuzzServer([sys.executable, "-m", "tests.fuzz.broken_server"], schema=False)
    try:
        for lines, stderr, tolerated in [
            ([cancelled], never_retrieved, not harness.STRICT),  # the known bug, in a session that cancels
            ([], never_retrieved, False),  # no cancellation: not this bug
            ([cancelled], never_retrieved + other, False),  # another traceback beside it
        ]:
            episode = harness._Episode(server)
            for line in lines:
                episode.note(line)
            episode.stderr = stderr
            if tolerated:
                episode.check_stderr()
            else:
                with pytest.raises(AssertionError, match="a traceback on stderr"):
                    episode.check_stderr()
    finally:
        server.close()


def test_a_plain_session_passes_and_the_process_exits_0() -> None:
    server = FuzzServer(EVERYTHING)
    try:
        line = encode(modern_request(1, "tools/call", {"name": "test_simple_text", "arguments": {}}))
        server.play([Write(line), Write(encode(notification("notifications/cancelled", {"requestId": 99})))])
        server.play([Write(encode(modern_request("1", "tools/list"))), Eof(b'{"jsonrpc":"2.0","id":2,')])
        assert not server.alive
    finally:
        server.close()


# --- bugs found by the fuzzer: minimal reproducers -----------------------------------------------------------
# An open bug gets a test here marked ``pytest.mark.xfail(strict=True, reason="bug: ...")`` and a
# harness.KNOWN_BUGS entry; a fixed one keeps its test, unmarked, as a regression test.


def _exchange(lines: list[bytes]) -> tuple[list[bytes], str]:
    """Send ``lines`` in one write, close stdin; every stdout line (raw) and stderr."""
    with ServerProcess(EVERYTHING, schema=None) as process:
        process.send_raw(b"".join(lines))
        process.close_stdin()
        raw = []
        while (line := process.read_line()) is not None:
            raw.append(line)
        process.assert_exit(0)
        return raw, process.stderr_text()


def test_regression_line_separators_from_the_client_are_escaped_when_echoed() -> None:
    # Found by the fuzzer: ids and error messages echoed U+2028/U+2029 raw (valid JSON, but a
    # line end for JavaScript-era line splitters).
    raw, _ = _exchange([rb'{"jsonrpc":"2.0","id":"\u2028","method":"ping"}' b"\n", rb'{"jsonrpc":"2.0","id":2,"method":"x\u2029"}' b"\n"])
    assert len(raw) == 2
    assert all(b"\xe2\x80\xa8" not in line and b"\xe2\x80\xa9" not in line for line in raw), raw
    assert [json.loads(line)["id"] for line in raw] == ["\u2028", 2]


def test_regression_unhashable_meta_log_level_is_invalid_params() -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":[]}}}\n'
    raw, stderr = _exchange([line])
    assert json.loads(raw[0])["error"]["code"] == -32602
    assert "Traceback" not in stderr


def test_regression_unhashable_set_level_is_invalid_params() -> None:
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n',
        b'{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":{}}}\n',
    ]
    raw, stderr = _exchange(lines)
    answers = [json.loads(line) for line in raw]
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[1]["error"]["code"] == -32602
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("fault", "complaint"),
    [
        ("silent", "timed out .* waiting for answers to \\[7\\]"),
        ("twice", "answered 2 times"),
        ("id-type", "answer to id '7' \\(str\\), which no line of this session carried; the client sent \\[\\('int', 7\\)\\]"),
        ("code", "undocumented error code -32000"),
        ("spaces", "not compact JSON"),
        ("separator", "raw U\\+2028"),
        ("traceback", "a traceback on stderr"),
        ("request", "server sent a request"),
        ("exit-status", "exit status 1 after EOF"),
    ],
)
def test_the_harness_catches_a_broken_server(fault: str, complaint: str) -> None:
    server = FuzzServer([sys.executable, "-m", "tests.fuzz.broken_server"], {"FUZZ_FAULT": fault}, schema=False, settle_timeout=1.0)
    try:
        with pytest.raises(harness.FuzzFailure, match=complaint):
            server.play([Write(encode(modern_request(7, "tools/list")))], retire=True)
    finally:
        server.close()


SAMPLING_CALL = (
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_input_required_result_sampling",'
    b'"arguments":{},"inputResponses":{"capital_question":{"role":"assistant","content":%s,"model":"m"}},'
    b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}\n'
)


def test_a_sampling_answer_with_a_malformed_text_block_is_32602_without_a_traceback() -> None:
    # Found by test_everything_mrtr_retries (a plausible sampling answer with one member replaced).
    raw, stderr = _exchange([SAMPLING_CALL % b'{"type":"text","text":null}'])
    answer = json.loads(raw[0])
    assert answer.get("error", {}).get("code") == -32602, answer
    assert "Traceback" not in stderr


def test_a_sampling_answer_whose_text_block_lacks_text_is_32602() -> None:
    raw, _ = _exchange([SAMPLING_CALL % b'{"type":"text"}'])
    answer = json.loads(raw[0])
    assert answer.get("error", {}).get("code") == -32602, answer


def test_cancelled_off_loop_work_that_fails_logs_no_traceback() -> None:
    # Found by test_fs_sessions: edit_file (oldText not found: EditError in the worker thread)
    # cancelled while it ran. Over stdio: edit a 600 000-line file and cancel it 50 ms later; the
    # next garbage collection logs the traceback. Here the same race, made deterministic.
    import asyncio
    import gc
    import threading

    from mcp_ref_fs.offload import off_loop

    async def main() -> list[str]:
        logged: list[str] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: logged.append(context["message"]))
        started, release = threading.Event(), threading.Event()

        def work(stop: Any) -> None:
            started.set()
            release.wait(5)
            raise ValueError("the work failed after its request was cancelled")

        task = asyncio.create_task(off_loop(work))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        await asyncio.sleep(0.1)
        gc.collect()
        return logged

    assert asyncio.run(main()) == []
