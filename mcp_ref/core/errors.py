"""Protocol errors: one exception class per JSON-RPC / MCP error code.

Spec: basic/index#error-codes (2026-07-28). A handler (or the library) raises one of these and
the dispatcher turns it into a JSON-RPC error response; nothing else becomes a wire error except
unexpected exceptions, which become ``InternalError`` with a safe message.

Codes we never emit: -32000..-32019 (legacy sub-range), undefined codes in -32020..-32099, and
-32002 in the modern era (the legacy era keeps it for "resource not found", as 2025-11-25 did).
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
LEGACY_RESOURCE_NOT_FOUND = -32002  # 2025-11-25 and earlier only


# Client input quoted back in an error (message or data) is cut to this many characters: a
# client can send megabytes where a name or URI is expected, and must not get them back.
ECHO_CHARS = 200


def clip(value: Any, limit: int = ECHO_CHARS) -> Any:
    """A string of client input as an error may quote it: at most ``limit`` characters, then "...".

    Anything that is not a string is returned as is (callers quote only strings and short scalars).
    """
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + "..."
    return value


def too_many_digits(exc: BaseException) -> bool:
    """Is ``exc`` Python's refusal to convert an integer of more than ``sys.get_int_max_str_digits()``
    digits to or from text? (A guard against quadratic-time conversions; 4300 digits by default.)"""
    return isinstance(exc, ValueError) and "integer string conversion" in str(exc)


TOO_MANY_DIGITS = (
    "a number has more digits than this server converts to or from text "
    "(Python's limit for integer-string conversion, 4300 digits by default)"
)


class ProtocolError(Exception):
    """An error the peer should see as a JSON-RPC error object."""

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member for this exception."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(ProtocolError):
    """The line is not valid UTF-8 JSON (-32700)."""

    code = PARSE_ERROR


class InvalidRequest(ProtocolError):
    """The JSON is not a valid JSON-RPC request object (-32600)."""

    code = INVALID_REQUEST


class MethodNotFound(ProtocolError):
    """No such method in the era the request is served in (-32601)."""

    code = METHOD_NOT_FOUND


class InvalidParams(ProtocolError):
    """The params are missing, malformed or refer to something that does not exist (-32602)."""

    code = INVALID_PARAMS


class InternalError(ProtocolError):
    """The server failed; the message is safe to show, details go to stderr (-32603)."""

    code = INTERNAL_ERROR


class ResourceNotFound(InvalidParams):
    """``resources/read`` of a URI the server does not have.

    -32602 with ``data.uri`` in 2026-07-28 (server/resources#error-handling). The legacy era
    answers -32002 instead, as 2025-11-25 defined it; the dispatcher swaps the code there.
    """

    def __init__(self, uri: str, message: str = "Resource not found") -> None:
        super().__init__(message, {"uri": clip(uri)})
        self.uri = uri


class LegacyResourceNotFound(ProtocolError):
    """"Resource not found" as the legacy era spells it (-32002, 2025-11-25 and earlier)."""

    code = LEGACY_RESOURCE_NOT_FOUND


class MissingRequiredClientCapability(ProtocolError):
    """The request needs a client capability that its ``_meta`` did not declare (-32021)."""

    code = MISSING_REQUIRED_CLIENT_CAPABILITY

    def __init__(self, required: dict[str, Any], message: str | None = None) -> None:
        names = ", ".join(sorted(required))
        super().__init__(
            message or f"This request needs client capabilities the request did not declare: {names}",
            {"requiredCapabilities": required},
        )


class UnsupportedProtocolVersion(ProtocolError):
    """The requested protocol version is not one this server serves (-32022).

    ``data.supported`` lists the versions a request may name in ``_meta``;
    ``data.initializeVersions`` (only on a server that serves them) the initialize-era versions,
    which a client reaches only through ``initialize``. ``data.requested`` echoes the client's
    version, cut to ``ECHO_CHARS`` characters.
    """

    code = UNSUPPORTED_PROTOCOL_VERSION

    def __init__(
        self, requested: Any, supported: list[str], message: str | None = None, initialize_versions: list[str] | None = None
    ) -> None:
        requested = clip(requested)
        if message is None:
            message = f"Unsupported protocol version {requested!r}; this server supports {', '.join(supported)}"
            if initialize_versions:
                message += f" in _meta, and {', '.join(initialize_versions)} only through initialize"
        data: dict[str, Any] = {"supported": list(supported), "requested": requested}
        if initialize_versions:
            # Not in "supported": a client that picked one of these for _meta would be refused again.
            data["initializeVersions"] = list(initialize_versions)
        super().__init__(message, data)


class ToolError(Exception):
    """Raise inside a tool handler to report a tool *execution* error.

    It becomes a ``CallToolResult`` with ``isError: true`` and the message as text, which a
    model can read and act on (server/tools#error-handling). Use it for bad inputs, failed
    operations and business-rule violations; use ``ProtocolError`` subclasses for requests
    that are malformed at the protocol level.
    """
