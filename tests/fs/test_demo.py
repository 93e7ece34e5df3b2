"""``make demo`` (``python -m mcp_ref_fs.demo``): it runs in seconds, exits 0 and shows every step."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp_ref_fs import demo

DEMO_FILES = Path(demo.__file__).with_name("demo_files")

# Each step's title, and a piece of the wire each must show.
STEPS = [
    ("1. server/discover", '"method":"server/discover"'),
    ("2. tools/list", '"method":"tools/list"'),
    ("3. tools/call read_text_file", '"name":"read_text_file"'),
    ("4. resources/read", '"blob":"'),
    ("5. subscriptions/listen", '"method":"notifications/resources/updated"'),
    ("6. tools/call delete_file", '"resultType":"input_required"'),
    ("7. end of input", "exited with status 0"),
    ("8. initialize", '"method":"notifications/initialized"'),
]


def fingerprint(directory: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(directory.iterdir())}


def test_the_demo_runs_in_seconds_exits_0_and_shows_every_step() -> None:
    before = fingerprint(DEMO_FILES)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "mcp_ref_fs.demo"], capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    assert elapsed < 20, f"the demo took {elapsed:.1f} s"
    output = done.stdout
    position = 0
    for title, wire in STEPS:
        found = output.find(title, position)
        assert found >= 0, f"step {title!r} missing or out of order:\n{output}"
        position = found
        assert wire in output[found:], f"{wire!r} not shown after {title!r}"
    assert '"inputResponses":' in output and '"requestState":"' in output  # the retry
    assert "… [+" in output and "characters were left out" in output  # long lines cut, and said so
    assert fingerprint(DEMO_FILES) == before  # the demo worked on a copy


def test_with_width_0_every_wire_line_is_the_json_as_sent(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--width", "0"]) == 0
    wire = [line[2:] for line in capsys.readouterr().out.splitlines() if line.startswith(("→ ", "← "))]
    messages = [json.loads(line) for line in wire]
    assert all(message["jsonrpc"] == "2.0" for message in messages)
    methods = [message.get("method") for message in messages]
    assert methods.count("tools/call") == 4 and "initialize" in methods and "subscriptions/listen" in methods


def test_keep_leaves_the_demo_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--keep"]) == 0
    folder = Path(capsys.readouterr().out.rstrip().rsplit("(the demo folder is ", 1)[1].rstrip(")"))
    try:
        assert (folder / "notes.txt").read_text().endswith("- milk\n")  # the demo's change
        assert not (folder / "scratch.txt").exists()  # and its delete
    finally:
        shutil.rmtree(folder.parent)


def test_a_server_that_exits_at_once_fails_the_demo(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(demo, "server_command", lambda: [sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"])
    assert demo.main([]) == 1
    output = capsys.readouterr().out
    assert "FAILED: the server closed stdout before response to request 1" in output and "boom" in output


def test_a_server_that_never_answers_fails_the_demo_in_bounded_time(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(demo, "WAIT_SECONDS", 0.5)
    monkeypatch.setattr(demo, "server_command", lambda: [sys.executable, "-c", "import time; time.sleep(30)"])
    started = time.monotonic()
    assert demo.main([]) == 1
    assert time.monotonic() - started < 10
    assert "no response to request 1 within 0.5 s" in capsys.readouterr().out


def test_the_demo_folder_is_package_data() -> None:
    names = {path.name for path in DEMO_FILES.iterdir()}
    assert {"README.md", "notes.txt", "checkers.png", "scratch.txt"} <= names
    assert (DEMO_FILES / "checkers.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_an_error_answer_stops_the_demo_with_what_came() -> None:
    with pytest.raises(demo.DemoFailed, match="expected a result"):
        demo.result_of({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}})


def test_without_a_console_script_the_demo_runs_python_dash_m(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert demo.server_command() == [str(tmp_path / "python"), "-m", "mcp_ref_fs"]
    monkeypatch.undo()
    assert demo.server_command() == [str(Path(sys.executable).with_name("mcp-ref-fs"))]


def test_a_reader_that_stops_reading_ends_the_demo_quietly() -> None:
    process = subprocess.Popen([sys.executable, "-m", "mcp_ref_fs.demo"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().startswith("mcp-ref-fs demo")
    process.stdout.close()  # as `make demo | head -1` does
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1 and "Traceback" not in stderr
