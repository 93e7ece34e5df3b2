"""The floor: the least a Python stdio JSON-RPC server can do per message.

Reads lines from stdin, ``json.loads`` each, ``json.dumps`` a fixed echo-shaped response carrying
the request's id, writes it and flushes (one write per answer, as a real server must for
request/response traffic). No framing checks, no validation, no asyncio: whatever mcp_ref spends
above this is its own per-message overhead.
"""

import json
import sys


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        request = json.loads(line)
        response = {
            "jsonrpc": "2.0",
            "id": request.get("id"),
            "result": {"content": [{"type": "text", "text": "hi"}], "resultType": "complete"},
        }
        out.write(json.dumps(response, separators=(",", ":")).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
