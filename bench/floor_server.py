"""The floor: the least a Python stdio JSON-RPC server can do per message.

Two floors, both answering every line with ``json.loads`` of the request and ``json.dumps`` of a
fixed answer carrying the request's id, written at once (one write per answer; mcp_ref writes the
answers one loop iteration made in one ``writev``), with no framing checks, no validation and no
file work:

* ``--asyncio``: the floor issue 21 sets mcp-ref-fs against, "asyncio readline + json.loads + a
  canned answer of the same shape + json.dumps": an ``asyncio.StreamReader`` on stdin, each line
  awaited with ``readline()``, each answer written through a ``StreamWriter`` on stdout and
  drained. What mcp_ref spends above it is its own work, not the cost of being an asyncio server.
* without it, the bare floor: a plain blocking ``for line in sys.stdin.buffer`` loop with no
  event loop at all (``bench.py`` measures the library against this one).

With ``--text-file PATH`` (used by ``fs_bench.py``) every answer is shaped like mcp-ref-fs's
``read_text_file`` answer carrying that file's text (read once at start): one text block, the
result type and the server's ``_meta``, the text once (mcp-ref-fs's reading tools have no
``structuredContent``).
"""

import json
import sys


def canned_result() -> dict:
    result = {"content": [{"type": "text", "text": "hi"}], "resultType": "complete"}
    if "--text-file" in sys.argv:
        with open(sys.argv[sys.argv.index("--text-file") + 1], encoding="utf-8") as handle:
            body = handle.read()
        result = {"content": [{"type": "text", "text": body}], "resultType": "complete",
                  "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "floor", "version": "0"}}}
    return result


def answer(line: bytes, result: dict) -> bytes:
    request = json.loads(line)
    response = {"jsonrpc": "2.0", "id": request.get("id"), "result": result}
    return json.dumps(response, separators=(",", ":")).encode() + b"\n"


def bare_floor(result: dict) -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if line.strip():
            out.write(answer(line, result))
            out.flush()


async def asyncio_floor(result: dict) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    # A StreamReaderProtocol on the write side too: it is the one that tells wait_closed() when
    # the pipe has taken the last answer.
    transport, protocol = await loop.connect_write_pipe(lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), sys.stdout)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    while line := await reader.readline():
        if line.strip():
            writer.write(answer(line, result))
            await writer.drain()
    writer.close()  # EOF: every answer still buffered goes out before the loop closes
    await writer.wait_closed()


def main() -> None:
    result = canned_result()
    if "--asyncio" in sys.argv:
        import asyncio

        asyncio.run(asyncio_floor(result))
    else:
        bare_floor(result)


if __name__ == "__main__":
    main()
