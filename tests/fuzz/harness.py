"""The fuzz harness: play a session of lines against a real server over stdio and check invariants.

A *session* (one hypothesis example) is a list of steps: ``Write`` (bytes, one or many lines in a
single write: pipelining), ``Retry`` (an MRTR retry built at run time from an earlier
``requestState``, forged or not), ``Pause`` (read for a moment, so cancellations race differently)
and ``Eof`` (close stdin, possibly after an unterminated line). ``FuzzServer.play`` runs one
session against a live process, then *settles* it and checks what must hold for every input:

* every stdout line is one compact, strict UTF-8 JSON-RPC message: a response or a notification
  (never a request), no whitespace outside strings, no ``\\r``, no raw U+2028/U+2029;
* exactly one answer per request, unless the client cancelled it (then at most one); the answer's
  ``id`` is the request's, with its JSON type (``1`` and ``"1"`` are different ids);
* each line that is not a request is answered as JSON-RPC says: a parse error (-32700) or an invalid
  request (-32600), in order, with ``"id": null`` unless the line's id was usable; notifications,
  client responses and blank lines never;
* error codes are documented ones only (-32700, -32600, -32601, -32602, -32603, -32021, -32022,
  and -32002 only for an initialize-era request);
* every message matches the official schema (when ``tests.schema_check.available()``);
* a progress notification names a progress token the client sent;
* no ``Traceback`` on stderr unless the session called a tool that fails on purpose
  (``FAULT_TOOLS``) or hit a ``KNOWN_BUGS`` entry;
* the process's resident memory stays under ``RSS_LIMIT_MIB``;
* after EOF the server answers what is left (open subscriptions included) and exits 0.

Which answers are due is decided by an independent oracle, ``classify_line``: JSON-RPC 2.0 as
MCP restricts it (ids are strings or integers; params an object), applied to the bytes the
client wrote, split into lines as the stdio transport frames them.

Settling without guesswork: after the session, a *barrier* request (a ``tools/call`` of a tool
no server has, with a unique id) is sent; once it and every request that cannot have been
cancelled are answered, each id that may still be pending (a cancelled request, an open
``subscriptions/listen``) is cancelled again and a second barrier sent. The server reads in order
(a tool call is never taken out of held input ahead of its turn, as the control lane's requests
are) and writes each answer when its request finishes, so once the second barrier is answered no
answer of this session can still arrive, and the same process can serve the next session.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from mcp_ref.layers.idscan import request_id_of
from mcp_ref.core.wire import ID_SCAN_LINES
from tests import schema_check
from tests.wire import (
    CLIENT_CAPABILITIES_KEY,
    MODERN_VERSION,
    PROTOCOL_VERSION_KEY,
    ServerProcess,
    WireTimeout,
    WireViolation,
    decode_line,
    id_key,
    reject_constant,
)

DOCUMENTED_CODES = frozenset({-32700, -32600, -32601, -32602, -32603, -32021, -32022})
LEGACY_ONLY_CODES = frozenset({-32002})
RSS_LIMIT_MIB = int(os.environ.get("MCP_REF_FUZZ_RSS_MIB", "512"))
# Long enough for the slowest handler the strategies can reach (test_cancellable_wait: 10 s).
SHUTDOWN_GRACE_SECONDS = 15.0
SETTLE_TIMEOUT = 40.0
SCHEMA_CHECKS_PER_KIND = 8
STRICT = os.environ.get("MCP_REF_FUZZ_STRICT") == "1"  # no KNOWN_BUGS tolerance: check a fix
BARRIER_PREFIX = "\x00fuzz-barrier-"
BARRIER_TOOL = "fuzz-barrier"  # no server has it: the barrier is answered -32602 (or -32601 without tools)

# Tools that fail on purpose: a traceback on stderr is their business, not a client mistake.
FAULT_TOOLS = frozenset({"test_error_handling"})


# --- session steps ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    """Bytes written in one ``write``: one line, several (pipelining), or damaged ones."""

    data: bytes


@dataclass(frozen=True)
class Retry:
    """An MRTR retry of the request that had id ``origin``: ``message`` (a request without
    ``requestState``/``inputResponses``) completed at run time with the origin's ``requestState``
    transformed by ``state`` and answers chosen by ``answers``.

    ``state``: ("keep",), ("flip", i), ("truncate", i), ("append", text), ("replace", json value),
    ("absent",). ``answers``: ("plausible",), ("mutated", i, json value) (plausible answers with
    their i-th member, at any depth, replaced), ("each", json value), ("value", json value), ("absent",).
    """

    origin: Any
    message: dict[str, Any]
    state: tuple[Any, ...]
    answers: tuple[Any, ...]


@dataclass(frozen=True)
class Pause:
    """Wait ``seconds`` before the next step (changes how cancellations race), reading output
    meanwhile, or not (``read=False``: a stalled client, whose stdout pipe may fill up)."""

    seconds: float
    read: bool = True


@dataclass(frozen=True)
class Eof:
    """Write ``partial`` (an unterminated last line, maybe empty), then close stdin."""

    partial: bytes = b""


Step = Write | Retry | Pause | Eof


# --- the oracle ---------------------------------------------------------------------------------


def is_valid_id(value: Any) -> bool:
    """MCP request ids: a string or an integer (not a bool, not a float, never null)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def carries_modern_meta(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and (PROTOCOL_VERSION_KEY in meta or CLIENT_CAPABILITIES_KEY in meta)


@dataclass(frozen=True)
class Classified:
    """What one client line is, and so what answer it is due.

    kind: "request" (one answer with ``id``), "notification", "malformed-notification" (a string
    ``method`` and no ``id``, but a bad ``jsonrpc`` or non-object params: it has no id to answer),
    "client-response", "blank" (no answer), or "bad" (one error, ``code``, with ``id`` when usable
    else null). ``too_deep``: the line nests deeper than ``NESTING_LIMIT``, so the server may
    instead answer it as a parse error (-32700, id null): RFC 8259 lets an implementation limit
    nesting depth.
    """

    kind: str
    id: Any = None
    method: str | None = None
    params: Any = None
    code: int | None = None
    too_deep: bool = False


NESTING_LIMIT = 512
_JSON_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def _nesting(line: bytes) -> int:
    if line.count(b"[") + line.count(b"{") <= NESTING_LIMIT:
        return 0
    depth = deepest = 0
    for byte in _JSON_STRINGS.sub(b"", line):
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth -= 1
    return deepest


def classify_line(line: bytes, max_line_bytes: int | None = None) -> Classified:
    """The oracle: JSON-RPC 2.0 as MCP restricts it, for one line (without its newline).

    With ``max_line_bytes`` (the server's ``MCP_REF_MAX_LINE_BYTES``), a longer line (not
    counting the CR of a CRLF) is refused whatever it holds: -32600, with its id where one can be
    told without a parse (``_refused_id``), else null.
    """
    if max_line_bytes is not None and len(line) - line.endswith(b"\r") > max_line_bytes:
        return Classified("bad", id=_refused_id(line, max_line_bytes), code=-32600)
    c = _classify(line)
    if c.code != -32700 and _nesting(line) > NESTING_LIMIT:
        return Classified(c.kind, c.id, c.method, c.params, c.code, too_deep=True)
    return c


def _refused_id(line: bytes, max_line_bytes: int) -> Any:
    """The id of a line refused for its length (STDIO-REFUSAL-KEEPS-ID): none past four times the
    limit (``wire.ID_SCAN_LINES``: the server stops looking); for a line of JSON, the id the parse
    reads, unless it is the client's response; for anything else, whatever the server's bounded
    scan reads (``mcp_ref.layers.idscan``, itself checked against the parser in
    tests/test_refused_line_ids.py): no independent answer exists for a line that is not JSON."""
    if len(line) > ID_SCAN_LINES * max_line_bytes:
        return None
    c = _classify(line)
    if c.code == -32700:
        return request_id_of(line)
    return c.id if c.kind in ("request", "bad") else None


def _classify(line: bytes) -> Classified:
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.strip():
        return Classified("blank")
    try:
        value = json.loads(line.decode("utf-8"), parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return Classified("bad", code=-32700)
    if not isinstance(value, dict):
        return Classified("bad", code=-32600)
    has_id = "id" in value
    usable = value["id"] if has_id and is_valid_id(value["id"]) else None
    params = value.get("params", {})
    if not has_id and isinstance(value.get("method"), str) and (value.get("jsonrpc") != "2.0" or not isinstance(params, dict)):
        return Classified("malformed-notification", method=value["method"])
    if value.get("jsonrpc") != "2.0":
        return Classified("bad", id=usable, code=-32600)
    if "method" not in value:
        if has_id and ("result" in value) != ("error" in value):
            return Classified("client-response", id=value["id"])
        return Classified("bad", id=usable, code=-32600)
    method = value["method"]
    if not isinstance(method, str) or not isinstance(params, dict):
        return Classified("bad", id=usable, code=-32600)
    if not has_id:
        return Classified("notification", method=method, params=params)
    if usable is None:
        return Classified("bad", code=-32600)
    return Classified("request", id=usable, method=method, params=params)


@dataclass(frozen=True)
class _NullError:
    """An expected ``"id": null`` error: one of ``codes``; ``optional`` when it may not come at all."""

    codes: frozenset
    optional: bool = False


def null_errors_match(expected: Sequence[_NullError], received: Sequence[int], complete: bool) -> bool:
    """Can ``received`` be ``expected`` with some optional entries left out (a prefix of it, unless ``complete``)?"""

    def closure(positions: set[int]) -> set[int]:
        result, todo = set(positions), list(positions)
        while todo:
            p = todo.pop()
            if p < len(expected) and expected[p].optional and p + 1 not in result:
                result.add(p + 1)
                todo.append(p + 1)
        return result

    positions = closure({0})
    for code in received:
        positions = closure({p + 1 for p in positions if p < len(expected) and code in expected[p].codes})
        if not positions:
            return False
    return not complete or len(expected) in positions


# --- what the server writes ---------------------------------------------------------------------

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_RESPONSE_KEYS = {"jsonrpc", "id", "result", "error"}
_NOTIFICATION_KEYS = {"jsonrpc", "method", "params"}


def check_frame(line: bytes, tolerate_raw_separators: bool = False) -> dict[str, Any]:
    """One stdout line: a compact UTF-8 JSON-RPC response or notification. Returns the message."""
    message = decode_line(line)  # no \r, strict UTF-8, a JSON object, "jsonrpc": "2.0"
    if not tolerate_raw_separators and (b"\xe2\x80\xa8" in line or b"\xe2\x80\xa9" in line):
        raise WireViolation(f"server line contains a raw U+2028/U+2029 (must be escaped): {line[:300]!r}")
    text = line.decode("utf-8")
    outside = _STRINGS.sub("", text)
    if re.search(r"\s", outside):
        raise WireViolation(f"server line is not compact JSON (whitespace between tokens): {line[:300]!r}")
    if "method" in message:
        if "id" in message:
            raise WireViolation(f"server sent a request on stdio: {line[:300]!r}")
        if set(message) - _NOTIFICATION_KEYS or not isinstance(message["method"], str):
            raise WireViolation(f"malformed notification: {line[:300]!r}")
        if "params" in message and not isinstance(message["params"], dict):
            raise WireViolation(f"notification params not an object: {line[:300]!r}")
        return message
    if "id" not in message or ("result" in message) == ("error" in message) or set(message) - _RESPONSE_KEYS:
        raise WireViolation(f"neither a response nor a notification: {line[:300]!r}")
    if "error" in message:
        error = message["error"]
        if (
            not isinstance(error, dict)
            or not isinstance(error.get("code"), int)
            or isinstance(error.get("code"), bool)
            or not isinstance(error.get("message"), str)
        ):
            raise WireViolation(f"malformed error object: {line[:300]!r}")
    elif not isinstance(message["result"], dict):
        raise WireViolation(f"result is not an object: {line[:300]!r}")
    return message


def _show(expected: Sequence[_NullError]) -> list[str]:
    return ["/".join(map(str, sorted(e.codes))) + ("?" if e.optional else "") for e in expected]


def _schema_check(message: dict[str, Any], eras: Sequence[str], method: str | None) -> None:
    """Valid against the official schema of one of ``eras``; no-op without the schemas."""
    if not schema_check.available():
        return
    first: AssertionError | None = None
    for era in eras:
        try:
            (schema_check.check_modern if era == "modern" else schema_check.check_legacy)(message, method)
            return
        except schema_check.SchemaViolation as violation:
            first = first or violation
    assert first is not None
    raise first


# --- known bugs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownBug:
    """A bug the fuzzer found, pinned by ``reproducer`` (a strict-xfail test in test_fuzz_sessions.py).

    While it is open, a session containing a request ``matches`` accepts its symptom (a traceback on
    stderr). When it is fixed the reproducer XPASSes and fails the suite: delete the entry then.
    ``MCP_REF_FUZZ_STRICT=1`` ignores every entry.
    """

    name: str
    reproducer: str
    matches: Callable[[Classified, bytes], bool]  # (the line's meaning, the line)
    symptom: str  # a regex matching the stderr log record (with its traceback) the bug causes
    raw_separators: bool = False  # the symptom is (also) a raw U+2028/U+2029 in output


# Fixed so far: malformed sampling answers passing ctx.ask (now -32602), and abandoned off_loop
# work leaving an unretrieved exception; their reproducers stay as regression tests.
KNOWN_BUGS: tuple[KnownBug, ...] = ()


def _active_bugs() -> tuple[KnownBug, ...]:
    return () if STRICT else KNOWN_BUGS


# --- one session ------------------------------------------------------------------------------


# Where a log record starts (configure_logging's format: "2026-01-31 12:00:00,000 LEVEL name: ...").
_LOG_RECORD = re.compile(r"(?m)^(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} )")


class FuzzFailure(AssertionError):
    """An invariant failed; the message carries the session transcript."""


class _TimedOut(AssertionError):
    """An awaited answer did not come in time."""


@dataclass
class _Ledger:
    """Answers due and answers received, per id key, for one session."""

    sends: Counter = field(default_factory=Counter)  # lines due an answer with this id
    unconsumed: Counter = field(default_factory=Counter)  # requests a later cancel may still hit
    credits: Counter = field(default_factory=Counter)  # cancels that may have suppressed an answer
    open_ended: Counter = field(default_factory=Counter)  # subscriptions/listen: open until cancel/EOF
    answers: Counter = field(default_factory=Counter)
    kinds: dict = field(default_factory=lambda: defaultdict(list))  # key -> [(Classified, legacy possible)]
    maybe: Counter = field(default_factory=Counter)  # too-deep lines that may become a null-id parse error
    null_expected: list = field(default_factory=list)  # _NullError per line due one, in order
    null_received: list = field(default_factory=list)
    results: dict = field(default_factory=lambda: defaultdict(list))  # key -> [result], for Retry

    def lower(self, key: Any, at_eof: bool) -> int:
        return max(0, self.sends[key] - self.credits[key] - self.maybe[key] - (0 if at_eof else self.open_ended[key]))

    def missing(self, at_eof: bool) -> list[Any]:
        return [key for key in self.sends if self.answers[key] < self.lower(key, at_eof)]


class FuzzServer:
    """One server process that plays many sessions (until a session ends it with EOF)."""

    def __init__(
        self,
        command: list[str],
        env: dict[str, str | None] | None = None,
        *,
        schema: bool = True,
        settle_timeout: float = SETTLE_TIMEOUT,
        max_line_bytes: int | None = None,
    ) -> None:
        self.schema = schema  # check messages against the official schema (when it is available)
        self.settle_timeout = settle_timeout
        self.max_line_bytes = max_line_bytes
        environment = {"MCP_REF_SHUTDOWN_GRACE_SECONDS": str(SHUTDOWN_GRACE_SECONDS), **(env or {})}
        if max_line_bytes is not None:
            environment["MCP_REF_MAX_LINE_BYTES"] = str(max_line_bytes)
        self.proc = ServerProcess(command, env=environment, schema=None)
        self.command = command
        self.sessions = 0
        self.alive = True
        self.legacy_initialize_seen = False
        self.progress_tokens: set[Any] = set()
        self._barriers = 0
        self._stderr_offset = 0

    # --- public -----------------------------------------------------------------------------------

    def play(self, steps: Iterable[Step], *, retire: bool = False) -> set[str]:
        """Play one session and check it; ``retire`` ends the process with EOF afterwards.
        Returns a few labels of what happened (for ``hypothesis.event``)."""
        assert self.alive, "this process has exited"
        self.sessions += 1
        episode = _Episode(self)
        try:
            episode.run(list(steps), retire)
        except (AssertionError, WireViolation, WireTimeout) as failure:
            self.alive = False
            raise FuzzFailure(episode.describe(failure)) from None
        return episode.labels

    def close(self) -> None:
        """End the process (EOF, then kill if it lingers): no checks."""
        self.alive = False
        self.proc.close()

    def retire(self) -> None:
        """End the process with EOF and check it exits 0 (an empty session with ``retire``)."""
        if self.alive:
            self.play([], retire=True)
        self.proc.close()

    # --- helpers for _Episode ---------------------------------------------------------------------

    def barrier_line(self) -> tuple[Any, bytes]:
        self._barriers += 1
        request_id = f"{BARRIER_PREFIX}{self._barriers}"
        message = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": BARRIER_TOOL, "_meta": {PROTOCOL_VERSION_KEY: MODERN_VERSION, CLIENT_CAPABILITIES_KEY: {}}},
        }
        return request_id, json.dumps(message, separators=(",", ":")).encode() + b"\n"

    def new_stderr(self) -> str:
        handle = self.proc._stderr_file  # the harness keeps stderr in a temporary file
        handle.flush()
        handle.seek(self._stderr_offset)
        data = handle.read()
        self._stderr_offset += len(data)
        return data.decode("utf-8", errors="replace")

    def rss_mib(self) -> float | None:
        try:
            with open(f"/proc/{self.proc.pid}/status") as status:
                for row in status:
                    if row.startswith("VmRSS:"):
                        return int(row.split()[1]) / 1024
        except OSError:
            return None
        return None


class _Episode:
    def __init__(self, server: FuzzServer) -> None:
        self.server = server
        self.proc = server.proc
        self.ledger = _Ledger()
        self.pending = bytearray()  # written bytes not yet split into lines (oracle side)
        self.transcript: list[bytes] = []  # every write
        self.received: list[bytes] = []
        self.fault_tool_called = False
        self.bugs_hit: list[KnownBug] = []
        self.stderr = ""
        self.stage = "playing"
        self.labels: set[str] = set()
        self.validated: Counter = Counter()

    # --- running ------------------------------------------------------------------------------------

    def run(self, steps: list[Step], retire: bool) -> None:
        for step in steps:
            if isinstance(step, Write):
                self.write(step.data)
            elif isinstance(step, Retry):
                self.write(self.build_retry(step))
            elif isinstance(step, Pause) and step.read:
                self.read_for(step.seconds)
            elif isinstance(step, Pause):
                time.sleep(step.seconds)
            elif isinstance(step, Eof):
                self.end_with_eof(step.partial)
                return
        self.settle()
        if retire:
            self.end_with_eof(b"")

    def write(self, data: bytes) -> None:
        self.transcript.append(data)
        self.pending += data
        while (newline := self.pending.find(b"\n")) >= 0:
            self.note(bytes(self.pending[:newline]))
            del self.pending[: newline + 1]
        self.proc.send_raw(data)

    def note(self, line: bytes) -> None:
        """Tell the oracle about one complete line the client wrote."""
        c = classify_line(line, self.server.max_line_bytes)
        ledger = self.ledger
        for bug in _active_bugs():
            if bug.matches(c, line):
                self.bugs_hit.append(bug)
        if c.too_deep:
            # Either what the line says, or a parse error (nesting limit): hedge both ways.
            if c.kind == "bad" and c.id is None:
                ledger.null_expected.append(_NullError(frozenset({c.code, -32700})))
                return
            ledger.null_expected.append(_NullError(frozenset({-32700}), optional=True))
            if c.kind in ("request", "bad"):
                ledger.maybe[id_key(c.id)] += 1
        if c.kind == "request":
            key = id_key(c.id)
            legacy_possible = not carries_modern_meta(c.params) and self.server.legacy_initialize_seen
            if c.method == "initialize" and not carries_modern_meta(c.params):
                self.server.legacy_initialize_seen = True
                legacy_possible = True
            ledger.sends[key] += 1
            ledger.unconsumed[key] += 1
            ledger.kinds[key].append((c, legacy_possible))
            if c.method == "subscriptions/listen":
                ledger.open_ended[key] += 1
            name = c.params.get("name")
            if c.method == "tools/call" and isinstance(name, str) and name in FAULT_TOOLS:
                self.fault_tool_called = True
            meta = c.params.get("_meta")
            if isinstance(meta, dict) and is_valid_id(meta.get("progressToken")):
                self.server.progress_tokens.add(id_key(meta["progressToken"]))
        elif c.kind == "bad":
            if c.id is None:
                ledger.null_expected.append(_NullError(frozenset({c.code})))
            else:
                key = id_key(c.id)
                ledger.sends[key] += 1
                ledger.kinds[key].append((c, False))
        elif c.kind == "notification" and c.method == "notifications/cancelled":
            target = c.params.get("requestId")
            if is_valid_id(target):  # a cancellation with a malformed reason may be ignored: at most one answer either way
                key = id_key(target)
                if ledger.unconsumed[key] > 0:
                    ledger.unconsumed[key] -= 1
                    ledger.credits[key] += 1

    # --- reading ------------------------------------------------------------------------------------

    def accept(self, line: bytes) -> None:
        self.received.append(line)
        tolerate = any(bug.raw_separators for bug in self.bugs_hit)
        message = check_frame(line, tolerate_raw_separators=tolerate)
        ledger = self.ledger
        if "method" in message:
            if message["method"] == "notifications/progress":
                token = message.get("params", {}).get("progressToken")
                if not is_valid_id(token) or id_key(token) not in self.server.progress_tokens:
                    raise WireViolation(f"progress for a token the client never sent: {line[:300]!r}")
            self.schema_check(message, ("modern", "legacy"), None, ("notification", message["method"]))
            return
        request_id = message["id"]
        if request_id is None:
            if "error" not in message:
                raise WireViolation(f'a result with "id": null: {line[:300]!r}')
            ledger.null_received.append(message["error"]["code"])
            if not null_errors_match(ledger.null_expected, ledger.null_received, complete=False):
                raise AssertionError(
                    f'"id": null errors do not match the bad lines: expected {_show(ledger.null_expected)}, '
                    f"received {ledger.null_received} (last: {line[:300]!r})"
                )
            self.schema_check(message, ("modern",), None, ("null", message["error"]["code"]))
            return
        if not is_valid_id(request_id):
            raise WireViolation(f"response id is not a string or integer: {line[:300]!r}")
        key = id_key(request_id)
        if ledger.sends[key] == 0:
            twins = [k for k in ledger.sends if k[1] == request_id or str(k[1]) == str(request_id)]
            raise AssertionError(
                f"answer to id {request_id!r} ({type(request_id).__name__}), which no line of this session "
                f"carried{f'; the client sent {twins}' if twins else ''}: {line[:300]!r}"
            )
        ledger.answers[key] += 1
        if ledger.answers[key] > ledger.sends[key]:
            raise AssertionError(f"id {request_id!r} answered {ledger.answers[key]} times, sent {ledger.sends[key]} times: {line[:300]!r}")
        kinds = ledger.kinds[key]
        if isinstance(request_id, str) and request_id.startswith(BARRIER_PREFIX):
            pass
        elif "error" in message:
            self.labels.add(f"error {message['error']['code']}")
        else:
            self.labels.add(f"result {message['result'].get('resultType', '(legacy)')}")
            methods = {c.method for c, _ in kinds if c.kind == "request"}
            if methods == {"tools/call"} and "content" in message["result"]:
                self.labels.add("tool failed (isError)" if message["result"].get("isError") else "tool succeeded")
            if any(c.kind == "request" and "requestState" in c.params for c, _ in kinds):
                self.labels.add("retry answered with a result")
        if "error" in message:
            code = message["error"]["code"]
            legacy_possible = any(legacy for _, legacy in kinds)
            if code not in DOCUMENTED_CODES and not (code in LEGACY_ONLY_CODES and legacy_possible):
                raise AssertionError(f"undocumented error code {code} for id {request_id!r}: {line[:300]!r}")
        elif all(c.kind == "bad" for c, _ in kinds):
            raise AssertionError(f"a result for a line that is not a valid request: {line[:300]!r}")
        else:
            ledger.results[key].append(message["result"])
        if all(c.kind == "bad" for c, _ in kinds) and message["error"]["code"] != -32600:
            raise AssertionError(f"invalid request answered with {message['error']['code']}, not -32600: {line[:300]!r}")
        methods = {c.method for c, _ in kinds if c.kind == "request"}
        method = next(iter(methods)) if len(methods) == 1 and "result" in message else None
        eras = ("modern",) if all(c.kind != "request" or carries_modern_meta(c.params) for c, _ in kinds) else ("modern", "legacy")
        names = {c.params.get("name") for c, _ in kinds if c.kind == "request" and isinstance(c.params.get("name"), str)}
        signature = ("error", message["error"]["code"]) if "error" in message else ("result", method, tuple(sorted(names)), eras)
        self.schema_check(message, eras, method, signature)

    def schema_check(self, message: dict[str, Any], eras: Sequence[str], method: str | None, signature: Any) -> None:
        """Validate against the official schema: the first few messages of each kind in a session
        (a flood of 1000 identical answers need not be validated 1000 times)."""
        self.validated[signature] += 1
        if self.server.schema and self.validated[signature] <= SCHEMA_CHECKS_PER_KIND:
            _schema_check(message, eras, method)

    def read_until(self, done: Callable[[], bool], timeout: float, what: Callable[[], str]) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _TimedOut(f"timed out after {timeout:.0f} s waiting for {what()}")
            try:
                line = self.proc.read_line(remaining)
            except WireTimeout:
                continue
            if line is None:
                raise AssertionError(f"stdout closed while waiting for {what()}")
            self.accept(line)

    def read_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            if b"\n" not in self.proc._buffer:
                self.proc._fill(remaining)
            if b"\n" in self.proc._buffer:
                line = self.proc.read_line(0)
                assert line is not None
                self.accept(line)
            elif self.proc._stdout_eof:
                raise AssertionError("stdout closed before EOF was sent")

    # --- ending ---------------------------------------------------------------------------------------

    def barrier(self) -> None:
        request_id, line = self.server.barrier_line()
        self.write(line)
        key = id_key(request_id)
        ledger = self.ledger
        self.read_until(
            lambda: ledger.answers[key] >= 1 and not ledger.missing(at_eof=False),
            self.server.settle_timeout,
            lambda: f"answers to {[k[1] for k in ledger.missing(at_eof=False)]!r}",
        )

    def settle(self) -> None:
        self.stage = "settling"
        ledger = self.ledger
        self.barrier()
        maybe_pending = [key for key in ledger.sends if ledger.answers[key] < ledger.sends[key]]
        if maybe_pending:
            cancels = b"".join(
                json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": key[1]}}).encode() + b"\n"
                for key in maybe_pending
            )
            self.write(cancels)
            self.barrier()
        if not null_errors_match(ledger.null_expected, ledger.null_received, complete=True):
            raise AssertionError(f'"id": null errors: expected {_show(ledger.null_expected)}, received {ledger.null_received}')
        rss = self.server.rss_mib()
        if rss is not None and rss > RSS_LIMIT_MIB:
            raise AssertionError(f"server resident memory {rss:.0f} MiB exceeds {RSS_LIMIT_MIB} MiB")
        self.check_stderr()
        self.stage = "done"

    def end_with_eof(self, partial: bytes) -> None:
        self.stage = "EOF"
        self.labels.add("EOF")
        self.server.alive = False
        if partial:
            self.transcript.append(partial)
            self.proc.send_raw(partial)
        if self.pending or partial:
            self.note(bytes(self.pending) + partial)  # the last line, delivered at EOF
            self.pending.clear()
        self.proc.close_stdin()
        ledger = self.ledger
        deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS + 15
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("stdout still open long after EOF")
            try:
                line = self.proc.read_line(remaining)
            except WireTimeout:
                continue
            if line is None:
                break
            self.accept(line)
        code = self.proc.wait(max(1.0, deadline - time.monotonic()))
        missing = ledger.missing(at_eof=True)
        if missing:
            raise AssertionError(f"exited without answering {[key[1] for key in missing]!r}")
        if not null_errors_match(ledger.null_expected, ledger.null_received, complete=True):
            raise AssertionError(f'"id": null errors: expected {_show(ledger.null_expected)}, received {ledger.null_received}')
        self.check_stderr()
        if code != 0:
            raise AssertionError(f"exit status {code} after EOF, expected 0")
        self.stage = "done"

    def check_stderr(self) -> None:
        self.stderr += self.server.new_stderr()
        if "Traceback" not in self.stderr or self.fault_tool_called:
            return
        symptoms = [re.compile(bug.symptom, re.S) for bug in self.bugs_hit]
        unexplained = [record for record in _LOG_RECORD.split(self.stderr) if "Traceback" in record and not any(s.search(record) for s in symptoms)]
        if unexplained:
            raise AssertionError("a traceback on stderr, though no request of this session was meant to fail the server")

    # --- MRTR retries ---------------------------------------------------------------------------------

    def build_retry(self, step: Retry) -> bytes:
        ledger = self.ledger
        key = id_key(step.origin) if is_valid_id(step.origin) else None
        if key is not None and ledger.sends[key] and not ledger.credits[key] and not ledger.open_ended[key]:
            # Wait for the origin's answer (it is due; if it never comes, settle() reports it).
            try:
                self.read_until(lambda: ledger.answers[key] >= ledger.sends[key], 15.0, lambda: "the retried request")
            except _TimedOut:
                pass
        interim = next(
            (r for r in reversed(ledger.results.get(key, [])) if r.get("resultType") == "input_required"),
            {},
        ) if key is not None else {}
        state = interim.get("requestState")
        requests = interim.get("inputRequests") if isinstance(interim.get("inputRequests"), dict) else {}
        message = json.loads(json.dumps(step.message))
        params = message.get("params")
        if isinstance(params, dict):
            kind = step.state[0]
            if kind == "replace" or (kind != "absent" and not isinstance(state, str)):
                params["requestState"] = step.state[1] if kind == "replace" else "forged-" + str(step.state[1:])
            elif kind == "keep":
                params["requestState"] = state
            elif kind == "flip":
                i = step.state[1] % len(state)
                params["requestState"] = state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1 :]
            elif kind == "truncate":
                params["requestState"] = state[: step.state[1] % (len(state) + 1)]
            elif kind == "append":
                params["requestState"] = state + step.state[1]
            style = step.answers[0]
            if style in ("plausible", "mutated"):
                params["inputResponses"] = {name: plausible_answer(request) for name, request in requests.items()}
            if style == "mutated":
                paths = _member_paths(params["inputResponses"])
                if paths:
                    target = paths[step.answers[1] % len(paths)]
                    holder = params["inputResponses"]
                    for part in target[:-1]:
                        holder = holder[part]
                    holder[target[-1]] = step.answers[2]
            elif style == "each":
                params["inputResponses"] = {name: step.answers[1] for name in requests or {"x": None}}
            elif style == "value":
                params["inputResponses"] = step.answers[1]
        return encode(message)

    # --- reporting ------------------------------------------------------------------------------------

    def describe(self, failure: BaseException) -> str:
        written = b"".join(self.transcript)
        lines = written.split(b"\n")
        shown = "\n".join(f"  > {line[:400]!r}" for line in lines[:60])
        if len(lines) > 60:
            shown += f"\n  ... {len(lines) - 60} more lines"
        answers = "\n".join(f"  < {line[:400]!r}" for line in self.received[-40:])
        stderr = (self.stderr + self.server.new_stderr())[-3000:]
        return (
            f"{type(failure).__name__}: {failure}\n"
            f"(server {' '.join(self.server.command[-2:])}, session #{self.server.sessions} of this process, stage: {self.stage})\n"
            f"--- client wrote ---\n{shown}\n--- server answered (last 40) ---\n{answers}\n--- stderr (tail) ---\n{stderr}"
        )


def _member_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        paths.append(prefix + (key,))
        paths += _member_paths(inner, prefix + (key,))
    return paths


def encode(message: Any, separators: tuple[str, str] = (",", ":")) -> bytes:
    """A message as one UTF-8 line (lone surrogates, which UTF-8 cannot carry, as \\u escapes)."""
    try:
        return json.dumps(message, separators=separators, ensure_ascii=False).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message, separators=separators).encode("ascii") + b"\n"


def plausible_answer(request: Any) -> Any:
    """A well-formed client answer to one input request (elicitation, sampling or roots)."""
    method = request.get("method") if isinstance(request, dict) else None
    if method == "elicitation/create":
        schema = request.get("params", {}).get("requestedSchema", {})
        content = {}
        for name, prop in (schema.get("properties") or {}).items():
            content[name] = {"boolean": True, "number": 1.5, "integer": 1}.get(prop.get("type"), "fuzz")
        return {"action": "accept", "content": content}
    if method == "sampling/createMessage":
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "fuzz-model"}
    if method == "roots/list":
        return {"roots": [{"uri": "file:///tmp/fuzz-root", "name": "fuzz"}]}
    return {}


class ServerPool:
    """Plays sessions on a long-lived process: a fresh one only after EOF or every ``recycle_every``
    sessions (each retirement checks the exit status). After a failure, every session gets a
    fresh process, so the shrinker's replays do not depend on what earlier sessions did.

    ``before``/``after`` run around each session (``after`` may assert, e.g. that nothing outside
    a sandbox changed).
    """

    def __init__(
        self,
        command: list[str],
        env: dict[str, str | None] | None = None,
        *,
        recycle_every: int = 60,
        before: Callable[[], None] | None = None,
        after: Callable[[], None] | None = None,
        max_line_bytes: int | None = None,
    ) -> None:
        self.max_line_bytes = max_line_bytes
        self.command = command
        self.env = env
        self.recycle_every = recycle_every
        self.before = before
        self.after = after
        self.server: FuzzServer | None = None
        self.fresh_each = False
        self.sessions = 0
        self.processes = 0

    def play(self, steps: Sequence[Step]) -> set[str]:
        if self.server is None or not self.server.alive:
            self.server = FuzzServer(self.command, self.env, max_line_bytes=self.max_line_bytes)
            self.processes += 1
        server = self.server
        retire = self.fresh_each or server.sessions + 1 >= self.recycle_every
        self.sessions += 1
        if self.before is not None:
            self.before()
        try:
            labels = server.play(steps, retire=retire)
            if self.after is not None:
                self.after()
            return labels
        except AssertionError:
            self.fresh_each = True
            server.alive = False
            raise
        finally:
            if not server.alive:
                server.close()
                self.server = None

    def close(self) -> None:
        """Retire the current process (checked: exit 0 after EOF)."""
        if self.server is not None:
            server, self.server = self.server, None
            try:
                server.retire()
            finally:
                server.close()
