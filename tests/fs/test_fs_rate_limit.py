"""mcp-ref-fs paces tool calls and completion requests (server/tools, security considerations:
servers MUST rate limit tool invocations; server/utilities/completion: completion requests SHOULD
be rate limited): a token bucket per connection, --max-calls-per-second after a burst of 10 s worth.
Calls over it wait their turn; none is refused, and other requests are not paced."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcp_ref_fs.config import DEFAULT_MAX_CALLS_PER_SECOND, Config
from mcp_ref_fs.root import Sandbox
from mcp_ref_fs.server import build_server
from tests.fs.conftest import fs_command
from tests.wire import ServerProcess, encode_line, modern_request, tool_call

COMPLETE = {"ref": {"type": "ref/resource", "uri": "file:///{+path}"}, "argument": {"name": "path", "value": "x"}}


@pytest.mark.req("TOOLS-RATE-LIMIT", "COMPL-RATE-LIMIT-REQUESTS", "COMPL-SECURITY-RATE-LIMIT")
@pytest.mark.parametrize("method", ["tools/call", "completion/complete"])
def test_a_runaway_loop_of_calls_is_paced_and_every_call_is_answered(tmp_path: Path, method: str) -> None:
    # 10 a second after a burst of 100: 130 calls back to back need at least 3 s for the last 30.
    def line_of(number: int) -> bytes:
        if method == "tools/call":
            return encode_line(tool_call(number, "list_allowed_directories", {}))
        return encode_line(modern_request(number, "completion/complete", COMPLETE))

    with ServerProcess(fs_command(tmp_path, options=("--max-calls-per-second", "10"))) as server:
        started = time.monotonic()
        server.send_raw(b"".join(line_of(number) for number in range(1, 131)) + encode_line(modern_request("p", "server/discover")))
        answered = []
        while len(answered) < 131:
            message = server.read_message(timeout=30)
            assert "result" in message, message
            answered.append(message["id"])
        elapsed = time.monotonic() - started
        assert sorted(answered[:-1] if answered[-1] == "p" else [a for a in answered if a != "p"]) == list(range(1, 131))
        assert answered.index("p") < answered.index(130), "server/discover waited behind the paced calls"
        assert elapsed >= 2.9, f"130 calls took {elapsed:.2f} s: they were not paced"


@pytest.mark.req("TOOLS-RATE-LIMIT", "COMPL-RATE-LIMIT-REQUESTS")
def test_the_default_limit_is_on_and_zero_turns_it_off(tmp_path: Path) -> None:
    sandbox = Sandbox.open([str(tmp_path)])
    try:
        limits = build_server(Config((str(tmp_path),)), sandbox).rate_limits
        assert set(limits) == {"tools/call", "completion/complete"}
        assert limits["tools/call"].per_second == DEFAULT_MAX_CALLS_PER_SECOND == 200
        assert limits["tools/call"].burst == 2000  # a host's parallel calls and scripted sessions go at once
        assert build_server(Config((str(tmp_path),), max_calls_per_second=0), sandbox).rate_limits == {}
    finally:
        sandbox.close()
