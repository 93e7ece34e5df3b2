"""``mcp-ref-request``: print JSON-RPC request lines for poking a server from the shell.

    mcp-ref-request tools/call name=read_text_file arguments.path=README.md | mcp-ref-fs .

One invocation prints one compact line (two more with ``--legacy``), with the 2026-07-28
``_meta`` filled in, so nobody has to hand-write JSON. Several invocations concatenated make a
session. The rules are in ``HELP`` below (``mcp-ref-request --help``).

Startup matters more than anything else here: this module imports the standard library's
``argparse`` and ``json`` and the protocol version constants, nothing else. The ``_meta`` key
names and log levels are spelled out again rather than imported from ``meta`` (which pulls in
the error classes); tests/test_request_cli.py checks that both spellings agree.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core.versions import LATEST_LEGACY_VERSION, MODERN_VERSION

PROG = "mcp-ref-request"

# The same strings as mcp_ref.core.meta (checked by a test).
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
PROGRESS_TOKEN = "progressToken"
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# The id of the ``initialize`` request that ``--legacy`` puts first.
INITIALIZE_ID = 0

HELP = f"""\
Print a JSON-RPC request line for an MCP server, with the {MODERN_VERSION} _meta
(protocolVersion and clientCapabilities) filled in. Pipe it into a server:

  {PROG} tools/call name=read_text_file arguments.path=README.md | mcp-ref-fs .

Parameters (KEY=VALUE):
  VALUE is JSON if it parses as JSON, else the text as a string:
    head=3  ->  3          path=README.md  ->  "README.md"     flag=true  ->  true
    name='"3"'  ->  "3"    (quote a JSON string to keep digits, true, null ... a string)
    tags='["a","b"]'  ->  ["a","b"]      empty=  ->  ""
  KEY is split at dots into nested objects:
    arguments.path=README.md  ->  {{"arguments": {{"path": "README.md"}}}}
  Only the first "=" separates KEY from VALUE. Giving a key twice, or nesting under
  a key whose value is not an object (a=1 a.b=2), is an error (exit status 2).
  A key that contains a dot itself can only be written inside a JSON value
  (arguments='{{"a.b": 1}}'), or, for _meta, with --meta.

Requests and notifications:
  A method starting with "notifications/" is printed as a notification: no id,
  and no _meta unless --meta adds some.

Sessions:
  Each invocation prints its own lines; give each request its own --id:
  {{ {PROG} --id 1 tools/list
    {PROG} --id 2 tools/call name=read_text_file arguments.path=README.md
  }} | mcp-ref-fs .

Legacy (initialize-era) servers:
  --legacy prints an "initialize" request (id {INITIALIZE_ID}) and "notifications/initialized"
  first, then the request without the {MODERN_VERSION} _meta. Later requests of the
  same session take --no-meta:
  {{ {PROG} --legacy --id 1 tools/list
    {PROG} --no-meta --id 2 ping
  }} | mcp-ref-fs .

Output: one compact JSON line per message, UTF-8, ending in a newline.
Exit status: 0, or 2 for a usage error (message on stderr, nothing on stdout)."""


class UsageError(Exception):
    """A command line that cannot become a request: reported on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # raise instead of exiting, so main() reports every usage error alike
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, usage=f"{PROG} [options] METHOD [KEY=VALUE ...]", description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("method", metavar="METHOD", nargs="?", help="the JSON-RPC method, e.g. tools/call, resources/read, server/discover")
    parser.add_argument("params", metavar="KEY=VALUE", nargs="*", help="a member of params (see above)")
    parser.add_argument("--id", metavar="ID", dest="request_id",
                        help='the request id, an integer or a string (default 1): --id 7, --id abc, --id \'"7"\'')
    parser.add_argument("-c", "--capability", metavar="PATH[=VALUE]", action="append", default=[],
                        help="declare a client capability, repeatable: -c sampling -c elicitation.form "
                             "-c roots.listChanged=true. PATH alone declares {}; PATH and VALUE follow "
                             "the KEY=VALUE rules. Without any, the capabilities are {}.")
    parser.add_argument("--protocol-version", metavar="V",
                        help=f"the version to name: in _meta (default {MODERN_VERSION}), or with --legacy in "
                             f"initialize (default {LATEST_LEGACY_VERSION})")
    parser.add_argument("--progress-token", metavar="T", help="ask for progress: _meta.progressToken (an integer or a string)")
    parser.add_argument("--log-level", metavar="L", choices=LOG_LEVELS,
                        help=f"ask for log messages at L and above: _meta {LOG_LEVEL} ({', '.join(LOG_LEVELS)})")
    parser.add_argument("--meta", metavar="KEY=VALUE", action="append", default=[],
                        help="add any other _meta member, repeatable; KEY is taken whole (dots included): "
                             "--meta io.modelcontextprotocol/clientInfo='{\"name\":\"sh\",\"version\":\"1\"}'")
    era = parser.add_mutually_exclusive_group()
    era.add_argument("--legacy", action="store_true",
                     help="initialize-era: print initialize and notifications/initialized first, and leave "
                          "the 2026-07-28 _meta out (capabilities go into initialize)")
    era.add_argument("--no-meta", action="store_true",
                     help="leave the 2026-07-28 _meta out and print no preamble (the later requests of a "
                          "--legacy session)")
    return parser


def parse_value(text: str) -> Any:
    """JSON if ``text`` parses as JSON, else ``text`` itself. ``NaN`` and ``Infinity`` stay strings:
    they are not JSON, and would not survive being written back out as JSON."""
    try:
        return json.loads(text, parse_constant=_not_json)
    except ValueError:
        return text


def _not_json(name: str) -> Any:
    raise ValueError(name)


def split_assignment(text: str, what: str = "parameter") -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals:
        raise UsageError(f"{what} {text!r} is not KEY=VALUE")
    if not key:
        raise UsageError(f"{what} {text!r} has no key before '='")
    return key, value


def key_path(key: str) -> list[str]:
    """``arguments.path`` -> ``["arguments", "path"]``; an empty segment is an error."""
    path = key.split(".")
    if "" in path:
        raise UsageError(f"key {key!r} has an empty part (a dot at the start or end, or two dots in a row)")
    return path


def assign(tree: dict[str, Any], path: list[str], value: Any, label: str) -> None:
    """Set ``tree[path[0]][path[1]]... = value``, creating objects on the way.

    Nesting into an object that is already there is fine (``a.b=1 a.c=2``); setting a key that
    is already set (``a=1 a=2``, ``a.b=1 a={}``) or nesting under a value that is not an object
    (``a=1 a.b=2``) is a ``UsageError``. ``label`` names the path in messages.
    """
    node = tree
    for depth, name in enumerate(path[:-1]):
        child = node.setdefault(name, {})
        if not isinstance(child, dict):
            raise UsageError(f"{label}: cannot nest under {'.'.join(path[:depth + 1])}, which is already {json.dumps(child)}")
        node = child
    if path[-1] in node:
        raise UsageError(f"{label}: {'.'.join(path)} is already set")
    node[path[-1]] = value


def _id_value(text: str, what: str) -> str | int:
    value = parse_value(text)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise UsageError(f"{what} must be an integer or a string, not {text}")
    return value


def build(argv: list[str]) -> list[dict[str, Any]]:
    """The messages the command line asks for, in order. Raises ``UsageError``."""
    options = _parser().parse_intermixed_args(argv)
    method: str | None = options.method
    if not method:
        raise UsageError("METHOD is required (tools/call, server/discover, ...)")
    modern = not (options.legacy or options.no_meta)
    notification = method.startswith("notifications/")

    params: dict[str, Any] = {}
    for text in options.params:
        key, value = split_assignment(text)
        assign(params, key_path(key), parse_value(value), text)

    capabilities: dict[str, Any] = {}
    for text in options.capability:
        path, equals, value = text.partition("=")
        assign(capabilities, key_path(path), parse_value(value) if equals else {}, f"--capability {text}")

    # Options that have nowhere to go are errors, not silently dropped.
    if options.no_meta and (options.capability or options.protocol_version is not None):
        raise UsageError("--no-meta sends no capabilities or version: give them to the --legacy invocation (initialize)")
    if options.log_level is not None and not modern:
        raise UsageError("--log-level is a 2026-07-28 _meta member; an initialize-era client sends logging/setLevel instead")
    if notification and (options.progress_token is not None
                         or modern and (options.capability or options.protocol_version is not None or options.log_level is not None)):
        raise UsageError("a notification carries no protocol version, capabilities, log level or progress token "
                         "(--meta adds _meta members)")

    # _meta: the 2026-07-28 members (requests only), then whatever was asked for by name.
    meta: list[tuple[str, Any, str]] = []
    if modern and not notification:
        meta.append((PROTOCOL_VERSION, options.protocol_version or MODERN_VERSION, f"the {MODERN_VERSION} _meta"))
        meta.append((CLIENT_CAPABILITIES, capabilities, f"the {MODERN_VERSION} _meta"))
        if options.log_level is not None:
            meta.append((LOG_LEVEL, options.log_level, f"--log-level {options.log_level}"))
    if options.progress_token is not None:
        token = _id_value(options.progress_token, "--progress-token")
        meta.append((PROGRESS_TOKEN, token, f"--progress-token {options.progress_token}"))
    for text in options.meta:
        key, value = split_assignment(text, "--meta")
        meta.append((key, parse_value(value), f"--meta {text}"))
    for key, value, label in meta:
        assign(params, ["_meta", key], value, label)

    if notification and options.request_id is not None:
        raise UsageError(f"{method} is a notification, which has no id: leave --id out")
    request_id = _id_value(options.request_id, "--id") if options.request_id is not None else 1
    if options.legacy and request_id == INITIALIZE_ID:
        raise UsageError(f"--legacy uses id {INITIALIZE_ID} for initialize: give the request another --id")

    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if not notification:
        message["id"] = request_id
    message["method"] = method
    if params:
        message["params"] = params

    messages = [message]
    if options.legacy:
        from .. import __version__  # the package is loaded already: running this module loaded it

        initialize = {
            "jsonrpc": "2.0",
            "id": INITIALIZE_ID,
            "method": "initialize",
            "params": {
                "protocolVersion": options.protocol_version or LATEST_LEGACY_VERSION,
                "capabilities": capabilities,
                "clientInfo": {"name": PROG, "version": __version__},
            },
        }
        messages[:0] = [initialize, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    return messages


def encode(message: dict[str, Any]) -> bytes:
    """One compact UTF-8 JSON line."""
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    try:
        messages = build(sys.argv[1:] if argv is None else argv)
    except UsageError as error:
        _parser().print_usage(sys.stderr)
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    try:
        out.write(b"".join(encode(message) for message in messages))
        out.flush()
    except BrokenPipeError:
        # The reader went away first (a server that already exited, `| head`): nothing to report
        # but the status. Point stdout at /dev/null so the interpreter's exit flush cannot fail too.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
