"""bench/answer_server.py answers byte for byte what mcp-ref-fs answered: fs_breakdown.py's split
of a call between the library and the file work rests on it (bench/README.md, issue 21)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fs.conftest import BENCH, load_bench_script


def test_the_answer_server_answers_as_mcp_ref_fs_did(tmp_path: Path) -> None:
    from mcp_ref_fs.config import Config
    from mcp_ref_fs.root import Sandbox
    from mcp_ref_fs.server import build_server

    breakdown = load_bench_script("fs_breakdown")
    root = tmp_path / "root"
    (root / "folder").mkdir(parents=True)
    for index in range(30):
        (root / "folder" / f"entry-{index:02}.txt").write_text("x")
    (root / "folder" / "sub").mkdir()
    (root / "small.txt").write_text("ünïcode line\n" * 80, encoding="utf-8")
    config = Config(roots=(str(root),), max_entries=1_000_000, max_answer_bytes=1_000_000_000, max_calls_per_second=0)
    sandbox = Sandbox.open(config.roots)
    try:
        server = build_server(config, sandbox)
        ctx = type("Ctx", (), {"client_info": breakdown.META["io.modelcontextprotocol/clientInfo"], "task_id": None})()
        rows = [("list_directory", {"path": "folder"}), ("read_text_file", {"path": "small.txt"})]
        recorded = tmp_path / "answers.json"
        recorded.write_text(json.dumps(breakdown.record_answers(server, ctx, rows)), encoding="utf-8")
    finally:
        sandbox.close()
    lines = b"".join(breakdown.request_line(number, name, arguments) for number, (name, arguments) in enumerate(rows))
    real = subprocess.run([sys.executable, "-m", "mcp_ref_fs", *breakdown.LIMITS, str(root)], input=lines,
                          capture_output=True, cwd=root, timeout=60, check=True)
    stand_in = subprocess.run([sys.executable, str(BENCH / "answer_server.py"), str(recorded)], input=lines,
                              capture_output=True, timeout=60, check=True)
    answers = [json.loads(line) for line in real.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [0, 1]
    assert "[DIR] sub" in answers[0]["result"]["content"][0]["text"]
    assert answers[1]["result"]["content"][0]["text"] == "ünïcode line\n" * 80
    assert stand_in.stdout == real.stdout
