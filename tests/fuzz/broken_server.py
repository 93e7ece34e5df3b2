"""A deliberately broken stdio "server", to prove the fuzz harness notices each kind of fault.

``FUZZ_FAULT`` picks the fault; the barrier requests of the harness (a ``tools/call`` of
``harness.BARRIER_TOOL``) are always answered correctly, so only the fault itself can fail a session.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    fault = os.environ.get("FUZZ_FAULT", "")
    out = sys.stdout
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            out.write('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}\n')
            out.flush()
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue  # notifications (and anything else) are not answered
        request_id = message["id"]
        reply: dict = {"jsonrpc": "2.0", "id": request_id, "result": {}}
        params = message.get("params")
        if not (isinstance(params, dict) and params.get("name") == "fuzz-barrier"):
            if fault == "silent":
                continue
            if fault == "id-type" and isinstance(request_id, int):
                reply["id"] = str(request_id)
            elif fault == "code":
                reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": "server error"}}
            elif fault == "separator":
                reply["result"] = {"text": "a\u2028b"}
            elif fault == "traceback":
                sys.stderr.write('Traceback (most recent call last):\n  File "x.py", line 1\nTypeError: boom\n')
                sys.stderr.flush()
            elif fault == "request":
                out.write('{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}\n')
        separators = (", ", ": ") if fault == "spaces" and message["method"] != "server/discover" else (",", ":")
        line = json.dumps(reply, separators=separators, ensure_ascii=False) + "\n"
        out.write(line)
        if fault == "twice" and message["method"] != "server/discover":
            out.write(line)
        out.flush()
    return 1 if fault == "exit-status" else 0


if __name__ == "__main__":
    sys.exit(main())
