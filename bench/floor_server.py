"""The floor: the least a Python stdio JSON-RPC server can do per message.

Reads lines from stdin, ``json.loads`` each, ``json.dumps`` a fixed echo-shaped response carrying
the request's id, writes it and flushes (one write per answer, as a real server must for
request/response traffic). No framing checks, no validation, no asyncio: whatever mcp_ref spends
above this is its own per-message overhead.

With ``--text-file PATH`` (used by ``fs_bench.py``) every answer is shaped like a ``read_text_file``
answer carrying that file's text (read once at start), in ``content`` and ``structuredContent``.
"""

import json
import sys


def main() -> None:
    out = sys.stdout.buffer
    result = {"content": [{"type": "text", "text": "hi"}], "resultType": "complete"}
    if "--text-file" in sys.argv:
        with open(sys.argv[sys.argv.index("--text-file") + 1], encoding="utf-8") as handle:
            body = handle.read()
        result = {"content": [{"type": "text", "text": body}], "structuredContent": {"content": body}, "resultType": "complete"}
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        request = json.loads(line)
        response = {"jsonrpc": "2.0", "id": request.get("id"), "result": result}
        out.write(json.dumps(response, separators=(",", ":")).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
