"""Hypothesis strategies for fuzz sessions: envelopes, schema-derived arguments, damage.

Everything is derived from a ``ServerModel``, which the tests build from the server's own
``tools/list``, ``prompts/list``, ``resources/list`` and ``resources/templates/list``: tool
arguments come from each tool's ``inputSchema`` (``from_schema``), valid first, then mutated.

Step kinds (see ``sessions``): a request (valid, or with mutated members), a pipeline of many
requests in one write, a byte-damaged line (truncation, invalid UTF-8, an embedded CR, a huge
number, deep nesting, ...), a cancellation (of an id used so far, or of anything), an MRTR round
and its forged retry, a notification, a client-side response, a pause; a session may end with
EOF, possibly inside a line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from hypothesis import strategies as st

from tests.wire import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LEGACY_VERSION, LOG_LEVEL_KEY, MODERN_VERSION, PROTOCOL_VERSION_KEY

from .harness import BARRIER_PREFIX, Eof, Pause, Retry, Write, encode

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
MODERN_METHODS = (
    "tools/call",
    "tools/list",
    "resources/read",
    "prompts/get",
    "server/discover",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "completion/complete",
    "subscriptions/listen",
)
LEGACY_METHODS = ("initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe")
NOTIFICATION_METHODS = (
    "notifications/cancelled",
    "notifications/initialized",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/message",
)
ALL_CAPABILITIES = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}


@dataclass(frozen=True)
class ServerModel:
    """What a server offers, as its own list methods describe it."""

    name: str
    tools: dict[str, dict[str, Any]]  # name -> inputSchema
    prompts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name -> arguments
    resources: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()
    path_hints: tuple[str, ...] = ()  # strings for properties that name files
    legacy: bool = True
    # (method, params) that answered input_required when probed: the starting rounds for retries.
    rounds: tuple[tuple[str, dict[str, Any]], ...] = ()

    def __repr__(self) -> str:
        return f"ServerModel({self.name}: {len(self.tools)} tools, {len(self.prompts)} prompts, {len(self.resources)} resources)"


# --- JSON values ----------------------------------------------------------------------------------

SPECIAL_STRINGS = (
    "",
    "1",
    " ",
    "\u2028",
    "a\u2029b",
    "\ud800",
    "\x00",
    "null",
    "\u00e9\u00e8",
    "\U0001f600",
    "\r",
    "\n",
    "\t",
    "a" * 300,
    '{"jsonrpc":"2.0"}',
    "\\",
    "\ufeff",
)
TEXT = st.one_of(st.text(max_size=10), st.sampled_from(SPECIAL_STRINGS))
BIG_INTEGERS = (2**53, 2**53 + 1, -(2**63), 2**64, 10**40)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(BIG_INTEGERS),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6)


def _short(value: Any) -> Any:
    # A number that a numeric argument might accept as a duration becomes one it refuses (or a tiny
    # one): keeps test_cancellable_wait (0..10 s) from making examples slow.
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.25 < value <= 10:
        return value + 1000
    return value


MUTANT = st.recursive(
    SCALARS.map(_short), lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6
)

VALID_IDS = st.one_of(
    st.integers(-2, 12),
    st.sampled_from(["1", "0", "", "a", "\u2028"]),
    st.text(max_size=6).filter(lambda s: not s.startswith(BARRIER_PREFIX)),
    st.sampled_from(BIG_INTEGERS),
)
ANY_IDS = st.one_of(
    VALID_IDS,
    st.sampled_from([1.0, -0.0, 1.5, 1e300, True, False, None]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(SCALARS, max_size=2),
    st.dictionaries(TEXT, SCALARS, max_size=2),
)


def rarely(draw: Callable, one_in: int) -> bool:
    """True about once in ``one_in`` draws; shrinks to False."""
    return draw(st.integers(0, one_in - 1)) == one_in - 1


# --- arguments from a JSON Schema ---------------------------------------------------------------------


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return merged
    return schema


def from_schema(draw: Callable, schema: Any, root: dict[str, Any], hints: tuple[str, ...], name: str = "", depth: int = 0) -> Any:
    """A value meant to satisfy ``schema`` (the common keywords; exotic ones are approximated)."""
    if not isinstance(schema, dict) or depth > 6:
        return draw(JSON)
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return draw(st.sampled_from(schema["enum"]))
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = draw(st.sampled_from(kind)) if kind else None
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(draw, schema, root, hints, depth)
    if kind == "string":
        if name in ("path", "source", "destination", "paths") and hints and not rarely(draw, 5):
            return draw(st.sampled_from(hints))
        low = schema.get("minLength", 0)
        return draw(st.text(min_size=low, max_size=max(low, 12)))
    if kind == "integer":
        low = schema.get("minimum", -5)
        high = schema.get("maximum", low + 50)
        return draw(st.integers(low, max(low, min(high, low + 50))))
    if kind == "number":
        low = schema.get("minimum", -5.0)
        high = schema.get("maximum", low + 50)
        return draw(st.floats(low, max(low, min(high, low + 0.2)), allow_nan=False))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "null":
        return None
    if kind == "array":
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", low + 3), low + 3)
        count = draw(st.integers(low, max(low, high)))
        return [from_schema(draw, schema.get("items", {}), root, hints, name, depth + 1) for _ in range(count)]
    return draw(JSON)


def minimal_arguments(schema: Any, root: Any = None, hints: tuple[str, ...] = (), name: str = "") -> Any:
    """A deterministic, simple value for ``schema``: required members only (for probing a server)."""
    root = schema if root is None else root
    if not isinstance(schema, dict):
        return {}
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        return {key: minimal_arguments(properties.get(key, {}), root, hints, key) for key in schema.get("required") or ()}
    if kind == "string":
        return hints[0] if hints and name in ("path", "source", "destination", "paths") else "x" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return [minimal_arguments(schema.get("items", {}), root, hints, name) for _ in range(max(1, schema.get("minItems", 1)))]
    return None


def _object(draw: Callable, schema: dict[str, Any], root: dict[str, Any], hints: tuple[str, ...], depth: int) -> dict[str, Any]:
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or ())
    # allOf/anyOf/oneOf branches that only require keys: take all of allOf, one of the others;
    # if/then/else: require both branches' keys (a superset satisfies whichever applies).
    for branch in schema.get("allOf") or ():
        branch = _resolve(branch, root) if isinstance(branch, dict) else {}
        required |= set(branch.get("required") or ())
        for keyword in ("anyOf", "oneOf"):
            if branch.get(keyword):
                required |= set(draw(st.sampled_from(branch[keyword])).get("required") or ())
    for keyword in ("anyOf", "oneOf"):
        if schema.get(keyword):
            required |= set(draw(st.sampled_from(schema[keyword])).get("required") or ())
    for keyword in ("then", "else"):
        if isinstance(schema.get(keyword), dict):
            required |= set(schema[keyword].get("required") or ())
    value = {}
    for name, subschema in properties.items():
        if name in required or draw(st.booleans()):
            value[name] = from_schema(draw, subschema, root, hints, name, depth + 1)
    for name in required - set(value):
        value[name] = draw(TEXT)
    return value


@st.composite
def mutated(draw: Callable, value: Any) -> Any:
    """``value`` unchanged or with one member dropped, added or replaced by any JSON."""
    choice = draw(st.sampled_from(["same"] * 5 + ["replace-member", "drop-member", "add-member", "replace-all", "nest"]))
    if choice == "same":
        return value
    if choice == "replace-all" or not isinstance(value, dict):
        return draw(MUTANT)
    value = dict(value)
    if choice == "nest":
        nested: Any = "bottom"
        for _ in range(draw(st.sampled_from([20, 200]))):
            nested = [nested]
        value[draw(st.sampled_from(sorted(value) or ["deep"]))] = nested
    elif choice == "add-member" or not value:
        value[draw(TEXT)] = draw(MUTANT)
    elif choice == "drop-member":
        del value[draw(st.sampled_from(sorted(value)))]
    else:
        value[draw(st.sampled_from(sorted(value)))] = draw(MUTANT)
    return value


# --- requests ---------------------------------------------------------------------------------------


def draw_modern_meta(draw: Callable, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    if capabilities is None:
        capabilities = draw(st.sampled_from([{}, {"elicitation": {}}, {"sampling": {}}, {"roots": {}}, ALL_CAPABILITIES]))
    meta: dict[str, Any] = {PROTOCOL_VERSION_KEY: MODERN_VERSION, CLIENT_CAPABILITIES_KEY: capabilities}
    if rarely(draw, 5):
        meta[LOG_LEVEL_KEY] = draw(st.sampled_from(LOG_LEVELS))
    if rarely(draw, 4):
        meta["progressToken"] = draw(VALID_IDS)
    if rarely(draw, 6):
        meta[CLIENT_INFO_KEY] = {"name": "fuzz", "version": "1.0"}
    return meta


def _uri(draw: Callable, model: ServerModel) -> str:
    choices = list(model.resources) + [t.replace("{id}", "1").replace("{path}", "a.txt") for t in model.templates]
    if choices and not rarely(draw, 4):
        return draw(st.sampled_from(choices))
    return draw(st.sampled_from(["test://template/x/data", "file:///etc/passwd", "", "test://", "nope:"]) | TEXT)


def params_for(draw: Callable, model: ServerModel, method: str) -> dict[str, Any]:
    """Valid params for ``method`` on this server (as far as the model tells)."""
    if method == "tools/call" and model.tools:
        name = draw(st.sampled_from(sorted(model.tools)))
        schema = model.tools[name]
        arguments = draw(mutated(from_schema(draw, schema, schema, model.path_hints)))
        return {"name": name, "arguments": arguments} if arguments or not rarely(draw, 3) else {"name": name}
    if method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
        return {"uri": _uri(draw, model)}
    if method == "prompts/get" and model.prompts:
        name = draw(st.sampled_from(sorted(model.prompts)))
        arguments = {argument["name"]: draw(TEXT) for argument in model.prompts[name] if argument.get("required") or draw(st.booleans())}
        return {"name": name, "arguments": draw(mutated(arguments))}
    if method == "completion/complete":
        if model.prompts and draw(st.booleans()):
            name = draw(st.sampled_from(sorted(model.prompts)))
            names = [a["name"] for a in model.prompts[name]] or ["x"]
            ref: dict[str, Any] = {"type": "ref/prompt", "name": name}
        else:
            ref = {"type": "ref/resource", "uri": draw(st.sampled_from(list(model.templates) or ["test://x/{id}"]))}
            names = ["id", "path"]
        params = {"ref": ref, "argument": {"name": draw(st.sampled_from(names)), "value": draw(TEXT)}}
        if draw(st.booleans()):
            params["context"] = {"arguments": {names[0]: draw(TEXT)}}
        return params
    if method == "subscriptions/listen":
        notifications: dict[str, Any] = {}
        for flag in ("toolsListChanged", "promptsListChanged", "resourcesListChanged"):
            if draw(st.booleans()):
                notifications[flag] = draw(st.booleans())
        if draw(st.booleans()):
            notifications["resourceSubscriptions"] = [_uri(draw, model) for _ in range(draw(st.integers(0, 2)))]
        return {"notifications": notifications}
    if method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        return {"cursor": draw(TEXT)} if rarely(draw, 4) else {}
    if method == "initialize":
        version = draw(st.sampled_from([LEGACY_VERSION, "2025-06-18", "2025-03-26", "2024-11-05", "1999-01-01", MODERN_VERSION]))
        return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1.0"}}
    if method == "logging/setLevel":
        return {"level": draw(st.sampled_from(LOG_LEVELS))}
    return {}


@st.composite
def requests(draw: Callable, model: ServerModel, *, mutate: bool = True, method: str | None = None) -> dict[str, Any]:
    """A request, valid for ``model`` unless ``mutate`` damages one to three of its members."""
    legacy = model.legacy and rarely(draw, 6)
    if method is None:
        # tools/call is where a server's own code runs: weight it.
        method = draw(st.sampled_from(("tools/call",) * 5 + MODERN_METHODS + (LEGACY_METHODS if legacy else ())))
    params = params_for(draw, model, method)
    if not legacy:
        params["_meta"] = draw_modern_meta(draw)
    elif rarely(draw, 4):
        params["_meta"] = {"progressToken": draw(VALID_IDS)}
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(VALID_IDS), "method": method, "params": params}
    if mutate and draw(st.booleans()):
        for _ in range(draw(st.integers(1, 3))):
            message = draw(mutated_envelope(message))
    return message


def member_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a member or item inside ``value`` (objects and arrays), depth first."""
    paths: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        paths.append(prefix + (key,))
        paths += member_paths(inner, prefix + (key,))
    return paths


def replace_at(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


ENVELOPE_MUTATIONS = (
    "deep-member",
    "deep-member",
    "id",
    "drop-id",
    "jsonrpc",
    "drop-jsonrpc",
    "method",
    "params",
    "drop-params",
    "meta-version",
    "meta-capabilities",
    "meta-log-level",
    "meta-progress",
    "meta-client-info",
    "meta",
    "drop-meta-member",
    "extra-member",
    "extra-param",
    "result-member",
    "name",
)


@st.composite
def mutated_envelope(draw: Callable, message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with one member missing, mistyped, or added."""
    message = json.loads(json.dumps(message))
    choice = draw(st.sampled_from(ENVELOPE_MUTATIONS))
    params = message.get("params") if isinstance(message.get("params"), dict) else None
    meta = params.get("_meta") if params is not None and isinstance(params.get("_meta"), dict) else None
    if choice == "deep-member":
        # Any member at any depth of params (a capability, a ref's type, an argument's name...)
        # becomes any JSON: lists and objects find lookups of client values in sets and dicts.
        paths = member_paths(params) if params is not None else []
        if paths:
            replace_at(params, draw(st.sampled_from(paths)), draw(MUTANT))
    elif choice == "id":
        message["id"] = draw(ANY_IDS)
    elif choice == "drop-id":
        message.pop("id", None)
    elif choice == "jsonrpc":
        message["jsonrpc"] = draw(st.sampled_from(["1.0", "2", "2.0 ", 2.0]) | MUTANT)
    elif choice == "drop-jsonrpc":
        message.pop("jsonrpc", None)
    elif choice == "method":
        message["method"] = draw(st.sampled_from(MODERN_METHODS + LEGACY_METHODS + NOTIFICATION_METHODS) | TEXT | MUTANT)
    elif choice == "params":
        message["params"] = draw(MUTANT)
    elif choice == "drop-params":
        message.pop("params", None)
    elif choice == "extra-member":
        message[draw(TEXT)] = draw(MUTANT)
    elif choice == "result-member":
        message[draw(st.sampled_from(["result", "error"]))] = draw(MUTANT)
    elif params is None:
        pass
    elif choice == "extra-param":
        params[draw(TEXT)] = draw(MUTANT)
    elif choice == "name":
        params["name"] = draw(MUTANT)
    elif choice == "meta":
        params["_meta"] = draw(MUTANT)
    elif meta is None:
        pass
    elif choice == "meta-version":
        meta[PROTOCOL_VERSION_KEY] = draw(st.sampled_from([LEGACY_VERSION, "2026-07-29", "", "2024-11-05"]) | MUTANT)
    elif choice == "meta-capabilities":
        meta[CLIENT_CAPABILITIES_KEY] = draw(MUTANT)
    elif choice == "meta-log-level":
        meta[LOG_LEVEL_KEY] = draw(st.sampled_from(["INFO", "verbose", "", "debug "]) | MUTANT)
    elif choice == "meta-progress":
        meta["progressToken"] = draw(MUTANT)
    elif choice == "meta-client-info":
        meta[CLIENT_INFO_KEY] = draw(MUTANT)
    elif choice == "drop-meta-member" and meta:
        del meta[draw(st.sampled_from(sorted(meta)))]
    return message


# --- damaged bytes --------------------------------------------------------------------------------------

BAD_UTF8 = (b"\xff", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x80", b"\x80")
HUGE_NUMBERS = (b"1e999", b"-1e999", b"1" + b"0" * 400, b"1" + b"0" * 5000, b"1E400", b"-0", b"1.0", b"0.1e-400", b"123456789012345678901234567890")
DEPTHS = (2, 50, 500, 900, 1100, 5000, 100_000)
PLACEHOLDER = "\u0001placeholder\u0001"


@st.composite
def damaged_lines(draw: Callable, model: ServerModel, line_limit: int | None = None) -> bytes:
    """A valid request's line, damaged at the byte level (may contain newlines: then it is several
    lines). ``line_limit``: the server's maximum line size, for lines just under and over it."""
    message = draw(requests(model, mutate=False))
    kind = draw(
        st.sampled_from(
            ["truncate", "insert", "replace", "bad-utf8", "cr", "huge-number", "deep", "bom", "nul", "duplicate-key", "newline", "spaced", "long"]
        )
    )
    if kind == "long":
        # Around the line limit: one byte under, at, one and two over (a CR of CRLF not counted).
        message["params"]["pad"] = ""
        base = len(encode(message)) - 1
        target = (line_limit or 70_000) + draw(st.sampled_from([0, -1, 1, 2]))
        message["params"]["pad"] = "x" * max(0, target - base)
        return encode(message).rstrip(b"\n") + (b"\r" if draw(st.booleans()) else b"")
    if kind in ("huge-number", "deep"):
        where = draw(st.sampled_from(["id", "argument", "meta", "params"]))
        if where == "id":
            message["id"] = PLACEHOLDER
        elif where == "argument" and isinstance(message["params"].get("arguments"), dict):
            message["params"]["arguments"][draw(st.sampled_from(["a", "seconds", "text", "path"]))] = PLACEHOLDER
        elif where == "meta":
            message["params"].setdefault("_meta", {})["progressToken"] = PLACEHOLDER
        else:
            message["params"]["extra"] = PLACEHOLDER
        if kind == "huge-number":
            token = draw(st.sampled_from(HUGE_NUMBERS))
        else:
            depth = draw(st.sampled_from(DEPTHS))
            token = b"[" * depth + b"1" + b"]" * depth
        return encode(message).rstrip(b"\n").replace(json.dumps(PLACEHOLDER).encode(), token)
    if kind == "spaced":
        return encode(message, separators=(" , ", " : ")).rstrip(b"\n").replace(b"{", b"{ \t")
    line = encode(message).rstrip(b"\n")
    at = draw(st.integers(0, len(line)))
    if kind == "truncate":
        return line[:at] or b"{"
    if kind == "insert":
        return line[:at] + bytes([draw(st.integers(0, 255))]) + line[at:]
    if kind == "replace":
        return line[:at] + bytes([draw(st.integers(0, 255))]) + line[at + 1 :]
    if kind == "bad-utf8":
        return line[:at] + draw(st.sampled_from(BAD_UTF8)) + line[at:]
    if kind == "cr":
        return line[:at] + b"\r" + line[at:]
    if kind == "bom":
        return b"\xef\xbb\xbf" + line
    if kind == "nul":
        return line[:at] + b"\x00" + line[at:]
    if kind == "duplicate-key":
        return line.replace(b'"id":', b'"id":"dup","id":', 1)
    return line[:at] + b"\n" + line[at:]


# --- sessions ---------------------------------------------------------------------------------------------

STEP_KINDS = (
    "request",
    "request",
    "pipeline",
    "bytes",
    "cancel",
    "mrtr",
    "retry",
    "notification",
    "pause",
    "client-response",
    "legacy",
    "flood",
    "stall",
)
# Cheap requests for floods (their answers are small, so a flood tests input, not output volume).
FLOOD_METHODS = ("server/discover", "resources/templates/list", "no/such/method", "tools/call")


@st.composite
def sessions(
    draw: Callable,
    model: ServerModel,
    kinds: tuple[str, ...] = STEP_KINDS,
    max_steps: int = 10,
    eof_one_in: int = 8,
    line_limit: int | None = None,
) -> list[Any]:
    """One session: a list of steps for ``FuzzServer.play`` (``line_limit``: the server's
    ``MCP_REF_MAX_LINE_BYTES``, when set)."""
    steps: list[Any] = []
    ids: list[Any] = []  # ids of the requests so far (to cancel, to collide with)
    rounds: list[tuple[Any, dict[str, Any]]] = []  # MRTR requests so far (to retry)

    def request(**options: Any) -> dict[str, Any]:
        message = draw(requests(model, **options))
        if "id" in message and ids and rarely(draw, 4):
            message["id"] = draw(st.sampled_from(ids))  # reuse an id: in flight or answered
        if "id" in message:
            ids.append(message["id"])
        return message

    for _ in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(kinds))
        if kind == "request":
            steps.append(Write(encode(request())))
        elif kind == "pipeline":
            count = draw(st.integers(2, 25))
            steps.append(Write(b"".join(encode(request()) for _ in range(count))))
        elif kind == "bytes":
            steps.append(Write(draw(damaged_lines(model, line_limit)) + b"\n"))
        elif kind == "flood":
            # Many requests in one write: the server must bound what it holds, and still answer
            # each (and honour cancellations of some of them, sent right behind).
            count = draw(st.sampled_from([30, 200, 1100]))
            first = draw(st.sampled_from([100_000, -100_000]))
            lines = []
            for number in range(count):
                method = FLOOD_METHODS[number % len(FLOOD_METHODS)]
                params = {"name": "no-such-tool"} if method == "tools/call" else {}
                params["_meta"] = {PROTOCOL_VERSION_KEY: MODERN_VERSION, CLIENT_CAPABILITIES_KEY: {}}
                lines.append(encode({"jsonrpc": "2.0", "id": first + number, "method": method, "params": params}))
                ids.append(first + number)
            for _ in range(draw(st.integers(0, 3))):
                target = first + draw(st.integers(0, count - 1))
                lines.append(encode({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": target}}))
            steps.append(Write(b"".join(lines)))
        elif kind == "stall":
            steps.append(Pause(draw(st.sampled_from([0.02, 0.2])), read=False))
        elif kind == "cancel":
            target = draw(st.sampled_from(ids)) if ids and not rarely(draw, 4) else draw(ANY_IDS)
            params: Any = {"requestId": target}
            if draw(st.booleans()):
                params["reason"] = draw(TEXT | MUTANT)
            if rarely(draw, 5):
                params = draw(mutated(params))
            steps.append(Write(encode({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})))
        elif kind == "mrtr":
            if model.rounds and not rarely(draw, 4):
                method, params = draw(st.sampled_from(model.rounds))
                message = {"jsonrpc": "2.0", "id": draw(VALID_IDS), "method": method, "params": json.loads(json.dumps(params))}
                if ids and rarely(draw, 4):
                    message["id"] = draw(st.sampled_from(ids))
                ids.append(message["id"])
            else:
                method = draw(st.sampled_from(["tools/call", "tools/call", "prompts/get", "resources/read"]))
                message = request(mutate=False, method=method)
            message["params"]["_meta"] = {**message["params"].get("_meta", {}), **draw_modern_meta(draw, ALL_CAPABILITIES)}
            rounds.append((message["id"], message))
            steps.append(Write(encode(message)))
        elif kind == "retry" and rounds:
            origin, base = draw(st.sampled_from(rounds))
            message = json.loads(json.dumps(base))
            message["id"] = draw(VALID_IDS)
            ids.append(message["id"])
            if rarely(draw, 4):  # the state of one request presented with another's params
                message["params"] = {**params_for(draw, model, message["method"]), "_meta": message["params"]["_meta"]}
            state = draw(
                st.sampled_from(["keep", "keep", "keep", "flip", "truncate", "append", "replace", "absent"])
            )
            state_step: tuple[Any, ...] = (state,)
            if state in ("flip", "truncate"):
                state_step += (draw(st.integers(0, 400)),)
            elif state == "append":
                state_step += (draw(st.sampled_from(["=", "A", ".", "x" * 50]) | TEXT),)
            elif state == "replace":
                state_step += (draw(MUTANT),)
            answers = draw(st.sampled_from(["plausible", "plausible", "mutated", "mutated", "each", "value", "absent"]))
            answers_step: tuple[Any, ...] = (answers,)
            if answers == "mutated":  # plausible answers with one member, at any depth, replaced
                answers_step += (draw(st.integers(0, 50)), draw(MUTANT))
            elif answers in ("each", "value"):
                answers_step += (draw(MUTANT),)
            steps.append(Retry(origin, message, state_step, answers_step))
            rounds.append((message["id"], message))
        elif kind == "notification":
            method = draw(st.sampled_from(NOTIFICATION_METHODS) | TEXT)
            message = {"jsonrpc": "2.0", "method": method}
            if draw(st.booleans()):
                message["params"] = draw(st.dictionaries(TEXT, MUTANT, max_size=3))
            steps.append(Write(encode(message)))
        elif kind == "pause":
            steps.append(Pause(draw(st.sampled_from([0.0, 0.01, 0.05]))))
        elif kind == "client-response":
            response: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(ANY_IDS)}
            response[draw(st.sampled_from(["result", "error"]))] = draw(MUTANT)
            steps.append(Write(encode(response)))
        elif kind == "legacy" and model.legacy:
            method = draw(st.sampled_from(LEGACY_METHODS + MODERN_METHODS))
            params = params_for(draw, model, method)
            message = {"jsonrpc": "2.0", "id": draw(VALID_IDS), "method": method, "params": params}
            if method == "logging/setLevel" and rarely(draw, 3):
                params["level"] = draw(st.sampled_from(["INFO", "", "trace"]) | MUTANT)
            if rarely(draw, 3):
                message = draw(mutated_envelope(message))
            if "id" in message:
                ids.append(message["id"])
            steps.append(Write(encode(message)))
    if rarely(draw, eof_one_in):
        partial = draw(st.sampled_from([b"", b'{"jsonrpc":"2.0","id":1', b"\r", b"[1,2"]) | st.builds(lambda m: encode(m).rstrip(b"\n"), requests(model)))
        steps.append(Eof(partial))
    return steps
