"""Run a stdio MCP server and log every line between it and its host (standard library only).

    python wiretap.py LOG -- COMMAND [ARGS...]

The host starts this instead of the server; it starts COMMAND with the same stdin, stdout and
environment, copies each line through unchanged, and appends it to LOG as one JSON object:
``{"t": seconds, "dir": "host" | "server", "line": "..."}``. The first "host" line is the
first message the host sent: it says which protocol era the host speaks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    log_path, command = argv[0], argv[2:]
    start = time.monotonic()
    lock = threading.Lock()
    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115

    def note(direction: str, line: bytes) -> None:
        entry = {"t": round(time.monotonic() - start, 3), "dir": direction, "line": line.decode("utf-8", "replace").rstrip("\n")}
        with lock:
            log.write(json.dumps(entry, ensure_ascii=False) + "\n")
            log.flush()

    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=os.environ)

    def host_to_server() -> None:
        for line in iter(sys.stdin.buffer.readline, b""):
            note("host", line)
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except (BrokenPipeError, OSError):
                break
        try:
            child.stdin.close()  # EOF from the host is EOF for the server
        except OSError:
            pass

    threading.Thread(target=host_to_server, daemon=True).start()
    for line in iter(child.stdout.readline, b""):
        note("server", line)
        try:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
        except (BrokenPipeError, OSError):
            break
    code = child.wait()
    log.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
