"""bench/least_read_server.py, the bound fs_breakdown.py sets beside issue 21's read goal: it must
answer a small read byte for byte as mcp-ref-fs does (so the two encode the same JSON), and do the
confined read it claims to do (bench/README.md)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.fs.conftest import BENCH, load_bench_script

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the least read server uses dir_fd (POSIX)")


def request(number: Any, arguments: Any, meta: Any = META, name: str = "read_text_file", **envelope: Any) -> bytes:
    message = {"jsonrpc": "2.0", "id": number, "method": "tools/call",
               "params": {"name": name, "arguments": arguments, "_meta": meta}, **envelope}
    return (json.dumps(message) + "\n").encode()


def least(root: Path, lines: bytes) -> list[dict]:
    done = subprocess.run([sys.executable, str(BENCH / "least_read_server.py"), str(root)], input=lines,
                          capture_output=True, timeout=60, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_small_read_is_answered_byte_for_byte_as_mcp_ref_fs_answers_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "deep" / "er").mkdir(parents=True)
    files = {"small.txt": "ünïcode line\n" * 80, "deep/er/note.md": "# a note\r\nwith CRLF\r\n",
             "bom.txt": "\ufeffafter the mark\n", "empty.txt": "", "tabs.txt": "a\tb\x1b[1m\n"}
    for name, body in files.items():
        (root / name).write_text(body, encoding="utf-8", newline="")
    paths = [*files, str(root / "deep" / "er" / "note.md"), "./deep/../small.txt", "//" + str(root).lstrip("/") + "/small.txt"]
    lines = b"".join(request(number, {"path": path}) for number, path in enumerate(paths))
    real = subprocess.run([sys.executable, "-m", "mcp_ref_fs", "--max-calls-per-second", "0", str(root)], input=lines,
                          capture_output=True, cwd=root, timeout=60, check=True)
    texts = [json.loads(line)["result"]["content"][0]["text"] for line in real.stdout.splitlines()]
    assert texts[:3] == ["ünïcode line\n" * 80, "# a note\r\nwith CRLF\r\n", "after the mark\n"]
    assert least(root, lines) == [json.loads(line) for line in real.stdout.splitlines()]
    done = subprocess.run([sys.executable, str(BENCH / "least_read_server.py"), str(root)], input=lines,
                          capture_output=True, timeout=60, check=True)
    assert done.stdout == real.stdout


def test_what_it_does_not_read_is_refused_with_its_reason(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "dir").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("TOP-SECRET", encoding="utf-8")
    (root / "binary.bin").write_bytes(b"a\0b")
    (root / "controls.txt").write_bytes(b"\x01\x02\x03abc\n")
    (root / "one-nul.txt").write_bytes(b"x" * 1000 + b"\0")
    (root / "latin1.txt").write_bytes(b"caf\xe9")
    (root / "big.txt").write_bytes(b"x" * 8193)
    (root / "inside.txt").write_text("inside", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    os.symlink(root / "inside.txt", root / "inner-link.txt")
    os.symlink(tmp_path, root / "linked-dir")
    refused = {"../secret.txt": "outside", str(tmp_path / "secret.txt"): "outside", str(root) + "-x/y": "outside",
               "": "itself", ".": "itself", str(root): "itself", "dir": "not a regular file",
               "link.txt": "not a regular file", "inner-link.txt": "not a regular file",
               "linked-dir/secret.txt": "links are not followed", "binary.bin/x": "Not a directory",
               "missing.txt": "No such file", "binary.bin": "binary", "controls.txt": "binary", "one-nul.txt": "binary",
               "latin1.txt": "not UTF-8", "big.txt": "more than 8192 bytes", "a\0b": "NUL", "\ud800x": "not Unicode",
               "dir/\udc80": "not Unicode"}
    lines = b"".join(request(number, {"path": path}) for number, path in enumerate(refused))
    got = least(root, lines)
    assert [answer["id"] for answer in got] == list(range(len(refused)))
    for answer, (path, why) in zip(got, refused.items()):
        result = answer["result"]
        assert result["isError"] is True and why in result["content"][0]["text"], (path, result)
    assert not [answer for answer in got if "TOP-SECRET" in json.dumps(answer)]


def test_every_line_gets_its_protocol_answer_and_a_notification_none(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a", encoding="utf-8")
    lines = [
        (request(1, {"path": "a.txt", "head": 1}), -32602),
        (request(2, {"path": "a.txt"}, meta={}), -32602),
        (request(3, {"path": "a.txt"}, meta={**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}), -32602),
        (request(4, {"path": "a.txt"}, jsonrpc="1.0"), -32600),
        (request(1.5, {"path": "a.txt"}), -32600),
        (request(True, {"path": "a.txt"}), -32600),
        (request(7, {"path": "a.txt"}, name="write_file"), -32601),
        (b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}\n', None),
        (b"not json\n", -32700),
        (b"[" * 100_000 + b"\n", -32700),
        (request("\ud800", {"path": "a.txt"}), -32603),  # its answer cannot be UTF-8: answered all the same
        (request(8, {"path": "a.txt"}), 0),
    ]
    got = least(tmp_path, b"".join(line for line, _ in lines))
    expected = [code for _, code in lines if code is not None]
    assert [answer["error"]["code"] if "error" in answer else 0 for answer in got] == expected
    assert got[-1]["result"]["content"][0]["text"] == "a"


def test_a_root_given_through_a_link_is_reached_by_both_spellings(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.txt").write_text("found", encoding="utf-8")
    os.symlink(tmp_path / "real", tmp_path / "spelled")
    paths = [str(tmp_path / "spelled" / "a.txt"), str(tmp_path / "real" / "a.txt"), "a.txt"]
    got = least(tmp_path / "spelled", b"".join(request(number, {"path": path}) for number, path in enumerate(paths)))
    assert [answer["result"]["content"][0]["text"] for answer in got] == ["found"] * 3


@pytest.mark.parametrize("swap", ["fifo", "link", "other file"])
def test_a_name_swapped_after_its_lstat_is_refused_without_hanging(tmp_path: Path, swap: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The final open's O_NONBLOCK, O_NOFOLLOW and the fstat check, each alone: the name is made to
    look like the regular file ``reg.txt`` to ``lstat`` while something else sits there."""
    module = load_bench_script("least_read_server")
    (tmp_path / "reg.txt").write_text("regular", encoding="utf-8")
    (tmp_path / "other.txt").write_text("other", encoding="utf-8")
    if swap == "fifo":
        os.mkfifo(tmp_path / "x")
    elif swap == "link":
        os.symlink(tmp_path / "reg.txt", tmp_path / "x")
    else:
        (tmp_path / "x").write_text("x", encoding="utf-8")
    disguise = os.stat(tmp_path / ("other.txt" if swap == "other file" else "reg.txt"))
    real_lstat = os.lstat
    monkeypatch.setattr(module.os, "lstat", lambda name, **kw: disguise if name == "x" else real_lstat(name, **kw))
    root = module.Root(str(tmp_path))
    outcome: list[Any] = []

    def read() -> None:
        try:
            outcome.append(root.read_text("x"))
        except module.Refused as refusal:
            outcome.append(refusal)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # blocked opening the FIFO: a writer end lets it go before failing
        os.close(os.open(tmp_path / "x", os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
        pytest.fail("the open of a FIFO blocked")
    monkeypatch.undo()
    os.close(root.fd)
    (result,) = outcome
    assert isinstance(result, module.Refused), result
    # (the faked lstat hides the link from the refusal's own look, so the system's words name it)
    assert (os.strerror(errno.ELOOP) if swap == "link" else "changed while it was being opened") in str(result)
