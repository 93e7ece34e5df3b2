"""The 2026-07-28 Streamable HTTP request-metadata headers, checked against the body.

basic/transports/streamable-http (2026-07-28), "Request Metadata": ``MCP-Protocol-Version``,
``Mcp-Method`` and ``Mcp-Name`` mirror body fields; ``Mcp-Param-{Name}`` mirrors tool arguments
whose schema carries ``x-mcp-header``. Any missing, duplicated, malformed or mismatching value is
a ``400`` with JSON-RPC ``-32020`` (HeaderMismatch). A stdio server never sees these headers, so
the bridge in front of it owes these checks.

Each check returns ``None`` when the request passes, else the reason (a sentence).
"""

from __future__ import annotations

import binascii
import re
from typing import Any

from tools.http11 import Request

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
HEADER_MISMATCH = -32020
# Visible ASCII, space and tab (RFC 9110 field values), and no leading or trailing whitespace.
_SAFE = re.compile(r"[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?")
_SENTINEL = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)

# Methods whose Mcp-Name mirrors a params field. The tasks extension's methods name their task.
NAME_FIELDS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def _single(request: Request, header: str) -> tuple[str | None, str | None]:
    """(value, problem): the one value of ``header``; a problem if it repeats or has bad characters."""
    values = request.values(header)
    if not values:
        return None, None
    if len(values) > 1:
        return None, f"{header} header appears {len(values)} times"
    if not _SAFE.fullmatch(values[0]):
        return None, f"{header} header has characters outside visible ASCII"
    return values[0], None


def decode(value: str) -> str | None:
    """A header value with the ``=?base64?...?=`` sentinel decoded; ``None`` if the Base64 is bad."""
    match = _SENTINEL.fullmatch(value)
    if not match:
        return value
    try:
        return binascii.a2b_base64(match.group(1).encode("ascii"), strict_mode=True).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        return None


def check_standard(request: Request, message: dict[str, Any]) -> str | None:
    """``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` of a request or notification."""
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    version, problem = _single(request, "MCP-Protocol-Version")
    if problem:
        return problem
    if version is None:
        return "MCP-Protocol-Version header is missing"
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    body_version = meta.get(PROTOCOL_VERSION)
    # An absent body version is the server's to reject (-32602); only a different one is a mismatch.
    if body_version is not None and body_version != version:
        return f"MCP-Protocol-Version header {version!r} does not match _meta protocolVersion {body_version!r}"
    if "id" not in message:
        return None  # header rules for notification POSTs are not defined by the revision
    method, problem = _single(request, "Mcp-Method")
    if problem:
        return problem
    if method is None:
        return "Mcp-Method header is missing"
    if method != message.get("method"):
        return f"Mcp-Method header {method!r} does not match body method {message.get('method')!r}"
    field = NAME_FIELDS.get(message["method"])
    if field is None:
        return None
    body_name = params.get(field)
    name, problem = _single(request, "Mcp-Name")
    if problem:
        return problem
    if name is None:
        return f"Mcp-Name header is missing (body params.{field} is {body_name!r})" if isinstance(body_name, str) else None
    decoded = decode(name)
    if decoded is None:
        return "Mcp-Name header has a malformed =?base64?...?= value"
    if isinstance(body_name, str) and decoded != body_name:
        return f"Mcp-Name header {decoded!r} does not match body params.{field} {body_name!r}"
    return None


def header_params(schema: Any) -> list[tuple[str, list[str], Any]]:
    """(header name, property path, property schema) for each ``x-mcp-header`` in an inputSchema."""
    found: list[tuple[str, list[str], Any]] = []

    def walk(node: Any, path: list[str]) -> None:
        properties = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(properties, dict):
            return
        for key, sub in properties.items():
            if isinstance(sub, dict):
                if isinstance(sub.get("x-mcp-header"), str):
                    found.append((sub["x-mcp-header"], [*path, key], sub))
                walk(sub, [*path, key])

    walk(schema, [])
    return found


def _value_at(arguments: Any, path: list[str]) -> Any:
    for key in path:
        if not isinstance(arguments, dict) or key not in arguments:
            return None
        arguments = arguments[key]
    return arguments


def _same(header_text: str, body_value: Any) -> bool:
    if isinstance(body_value, bool):
        return header_text == ("true" if body_value else "false")
    if isinstance(body_value, (int, float)):
        try:
            return float(header_text) == float(body_value)  # compared numerically: 42.0 == 42
        except ValueError:
            return False
    return header_text == body_value


def check_params(request: Request, arguments: Any, schema: Any) -> str | None:
    """``Mcp-Param-{Name}`` headers of a ``tools/call`` against the tool's annotated arguments."""
    for name, path, _ in header_params(schema):
        header = f"Mcp-Param-{name}"
        body_value = _value_at(arguments, path)
        value, problem = _single(request, header)
        if problem:
            return problem
        if value is None:
            if body_value is not None:
                return f"{header} header is missing (argument {'.'.join(path)} is {body_value!r})"
            continue
        decoded = decode(value)
        if decoded is None:
            return f"{header} header has a malformed =?base64?...?= value"
        if body_value is not None and not _same(decoded, body_value):
            return f"{header} header {decoded!r} does not match argument {'.'.join(path)} {body_value!r}"
    return None
