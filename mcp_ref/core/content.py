"""Content blocks and resource contents, built the way the schema spells them.

Spec: server/tools#tool-result, server/resources#resource-contents, server/prompts#promptmessage.
Binary data always travels base64-encoded (``data`` for images and audio, ``blob`` for resources);
these helpers take ``bytes`` and do the encoding, so raw bytes can never reach the wire.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from ..layers.splice import Encoded, Marked, encoded_base64

Content = dict[str, Any]


def with_optional(item: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """``item`` with each optional field added when it is not None (JSON omits absent fields)."""
    for key, value in optional.items():
        if value is not None:
            item[key] = value
    return item


def text(value: str, *, annotations: dict[str, Any] | None = None) -> Content:
    """A ``text`` content block. (Marked for ``mcp_ref.layers.splice``: a large text goes on the line uncopied.)"""
    block = Marked(type="text", text=value)
    block.size = len(value)
    if annotations is not None:
        block["annotations"] = annotations
    return block


def _encoded(field: str, data: bytes, **items: Any) -> Content:
    """A dict of ``items`` with ``data`` base64-encoded into ``field``, marked as encoded here
    (``splice.Encoded``: checking it need not scan the base64 again, and the line carries the
    bytes ``b64encode`` made)."""
    block = Encoded(items)
    block.encoded_ascii = base64.b64encode(data)
    block[field] = block.encoded = block.encoded_ascii.decode("ascii")
    block.size = len(block.encoded)
    return block


def image(data: bytes, mime_type: str, *, annotations: dict[str, Any] | None = None) -> Content:
    """An ``image`` content block from raw image bytes."""
    block = _encoded("data", data, type="image")
    block["mimeType"] = mime_type
    return with_optional(block, annotations=annotations)


def audio(data: bytes, mime_type: str, *, annotations: dict[str, Any] | None = None) -> Content:
    """An ``audio`` content block from raw audio bytes."""
    block = _encoded("data", data, type="audio")
    block["mimeType"] = mime_type
    return with_optional(block, annotations=annotations)


def text_resource(uri: str, value: str, mime_type: str | None = "text/plain", **extra: Any) -> Content:
    """Text resource contents (``TextResourceContents``)."""
    contents = Marked(uri=uri, text=value)
    contents.size = len(value)
    return with_optional(contents, mimeType=mime_type, **extra)


def blob_resource(uri: str, data: bytes, mime_type: str | None = "application/octet-stream", **extra: Any) -> Content:
    """Binary resource contents (``BlobResourceContents``), base64-encoded."""
    return with_optional(_encoded("blob", data, uri=uri), mimeType=mime_type, **extra)


def embedded_resource(contents: Content, *, annotations: dict[str, Any] | None = None) -> Content:
    """A ``resource`` content block embedding text or blob resource contents."""
    block = Marked(type="resource", resource=contents)
    block.size = contents.size if isinstance(contents, Marked) else 0
    return with_optional(block, annotations=annotations)


def resource_link(uri: str, name: str, **extra: Any) -> Content:
    """A ``resource_link`` content block (title, description, mimeType, size, annotations may follow)."""
    return with_optional({"type": "resource_link", "uri": uri, "name": name}, **extra)


def prompt_message(role: str, content: Content | str) -> dict[str, Any]:
    """A prompt message; a ``str`` becomes a text block."""
    if role not in ("user", "assistant"):
        raise ValueError('role must be "user" or "assistant"')
    return {"role": role, "content": text(content) if isinstance(content, str) else content}


# --- checking blocks a handler built by hand ------------------------------------------------------

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
# Compiled on first use (re's own cache), not at import: most servers never check a MIME type.
_MIME_TYPE = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;.*)?"


def content_problem(block: Any) -> str | None:
    """Why ``block`` is not a valid content block (text, image, audio, resource_link, resource), or None.

    Handlers may build blocks by hand; these checks keep a malformed one (say, raw bytes as
    ``data``, or a MIME type without a subtype) from reaching the wire.
    """
    if not isinstance(block, dict):
        return "a content block must be an object"
    kind = block.get("type")
    if kind == "text":
        return None if isinstance(block.get("text"), str) else "text content needs a text string"
    if kind in ("image", "audio"):
        if encoded_base64(block) is not None:  # encoded by image()/audio(): base64 by construction
            return _mime_problem(block.get("mimeType"), kind)
        return _base64_problem(block.get("data"), f"{kind} data") or _mime_problem(block.get("mimeType"), kind)
    if kind == "resource_link":
        return None if isinstance(block.get("uri"), str) and isinstance(block.get("name"), str) else "resource_link needs uri and name"
    if kind == "resource":
        return resource_contents_problem(block.get("resource"))
    return f"unknown content type {kind!r}"


def resource_contents_problem(contents: Any) -> str | None:
    """Why ``contents`` is not valid text or blob resource contents, or None."""
    if not isinstance(contents, dict) or not isinstance(contents.get("uri"), str):
        return "resource contents need a uri"
    if ("text" in contents) == ("blob" in contents):
        return "resource contents need exactly one of text and blob"
    if "mimeType" in contents and (problem := _mime_problem(contents["mimeType"], "resource")):
        return problem
    if "text" in contents:
        return None if isinstance(contents["text"], str) else "resource text must be a string"
    if encoded_base64(contents) is not None:  # encoded by blob_resource(): base64 by construction
        return None
    return _base64_problem(contents["blob"], "resource blob")


def _base64_problem(data: Any, what: str) -> str | None:
    if not isinstance(data, str) or len(data) % 4 or not _BASE64.fullmatch(data):
        return f"{what} must be base64 text (use the content helpers, which encode bytes)"
    return None


def _mime_problem(mime_type: Any, what: str) -> str | None:
    if not isinstance(mime_type, str) or not re.fullmatch(_MIME_TYPE, mime_type):
        return f"{what} needs a MIME type such as image/png, got {mime_type!r}"
    return None
