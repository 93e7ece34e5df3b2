"""bench/least_read_server.py, the bound fs_breakdown.py sets beside issue 21's read goal: it must
answer a read byte for byte as mcp-ref-fs does (so the two encode the same JSON), and do the
confined read it claims to do (bench/README.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the least read server uses dir_fd (POSIX)")


def read_line(number: int, arguments: dict, meta: dict = META, name: str = "read_text_file") -> bytes:
    params = {"name": name, "arguments": arguments, "_meta": meta}
    return (json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}) + "\n").encode()


def answers(command: list[str], lines: bytes, cwd: Path) -> list[dict]:
    done = subprocess.run(command, input=lines, capture_output=True, cwd=cwd, timeout=60, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_least_read_server_reads_as_mcp_ref_fs_does(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "deep" / "er").mkdir(parents=True)
    (root / "small.txt").write_text("ünïcode line\n" * 80, encoding="utf-8")
    (root / "deep" / "er" / "note.md").write_text("# a note\n", encoding="utf-8")
    lines = read_line(1, {"path": "small.txt"}) + read_line(2, {"path": str(root / "deep" / "er" / "note.md")})
    real = subprocess.run([sys.executable, "-m", "mcp_ref_fs", "--max-calls-per-second", "0", str(root)], input=lines,
                          capture_output=True, cwd=root, timeout=60, check=True)
    least = subprocess.run([sys.executable, str(BENCH / "least_read_server.py"), str(root)], input=lines,
                           capture_output=True, timeout=60, check=True)
    assert json.loads(real.stdout.splitlines()[0])["result"]["content"][0]["text"] == "ünïcode line\n" * 80
    assert least.stdout == real.stdout


def test_the_least_read_server_refuses_what_it_does_not_read(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "dir").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("TOP-SECRET", encoding="utf-8")
    (root / "binary.bin").write_bytes(b"a\0b")
    (root / "latin1.txt").write_bytes(b"caf\xe9")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    os.symlink(tmp_path, root / "linked-dir")
    refused = {"../secret.txt": "outside", str(tmp_path / "secret.txt"): "outside", "dir": "regular",
               "link.txt": "regular", "linked-dir/secret.txt": "", "missing.txt": "", "binary.bin": "binary",
               "latin1.txt": "UTF-8"}
    lines = b"".join(read_line(number, {"path": path}) for number, path in enumerate(refused))
    lines += read_line(90, {"path": "dir", "head": 1}) + read_line(91, {"path": "x"}, meta={})
    lines += read_line(92, {"path": "x"}, name="write_file") + b"not json\n"
    got = answers([sys.executable, str(BENCH / "least_read_server.py"), str(root)], lines, tmp_path)
    assert [answer["id"] for answer in got] == [*range(len(refused)), 90, 91, 92, None]
    for answer, (path, why) in zip(got, refused.items()):
        result = answer["result"]
        assert result["isError"] is True, path
        assert why in result["content"][0]["text"], (path, result)
    assert not [answer for answer in got if "TOP-SECRET" in json.dumps(answer)]
    assert [answer["error"]["code"] for answer in got[len(refused):]] == [-32602, -32602, -32601, -32700]
