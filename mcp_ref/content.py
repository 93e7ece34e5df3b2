"""Content blocks and resource contents, built the way the schema spells them.

Spec: server/tools#tool-result, server/resources#resource-contents, server/prompts#promptmessage.
Binary data always travels base64-encoded (``data`` for images and audio, ``blob`` for resources);
these helpers take ``bytes`` and do the encoding, so raw bytes can never reach the wire.
"""

from __future__ import annotations

import base64
from typing import Any

Content = dict[str, Any]


def with_optional(item: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """``item`` with each optional field added when it is not None (JSON omits absent fields)."""
    for key, value in optional.items():
        if value is not None:
            item[key] = value
    return item


def text(value: str, *, annotations: dict[str, Any] | None = None) -> Content:
    """A ``text`` content block."""
    return with_optional({"type": "text", "text": value}, annotations=annotations)


def image(data: bytes, mime_type: str, *, annotations: dict[str, Any] | None = None) -> Content:
    """An ``image`` content block from raw image bytes."""
    return with_optional(
        {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}, annotations=annotations
    )


def audio(data: bytes, mime_type: str, *, annotations: dict[str, Any] | None = None) -> Content:
    """An ``audio`` content block from raw audio bytes."""
    return with_optional(
        {"type": "audio", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}, annotations=annotations
    )


def text_resource(uri: str, value: str, mime_type: str | None = "text/plain", **extra: Any) -> Content:
    """Text resource contents (``TextResourceContents``)."""
    return with_optional({"uri": uri, "text": value}, mimeType=mime_type, **extra)


def blob_resource(uri: str, data: bytes, mime_type: str | None = "application/octet-stream", **extra: Any) -> Content:
    """Binary resource contents (``BlobResourceContents``), base64-encoded."""
    return with_optional({"uri": uri, "blob": base64.b64encode(data).decode("ascii")}, mimeType=mime_type, **extra)


def embedded_resource(contents: Content, *, annotations: dict[str, Any] | None = None) -> Content:
    """A ``resource`` content block embedding text or blob resource contents."""
    return with_optional({"type": "resource", "resource": contents}, annotations=annotations)


def resource_link(uri: str, name: str, **extra: Any) -> Content:
    """A ``resource_link`` content block (title, description, mimeType, size, annotations may follow)."""
    return with_optional({"type": "resource_link", "uri": uri, "name": name}, **extra)


def prompt_message(role: str, content: Content | str) -> dict[str, Any]:
    """A prompt message; a ``str`` becomes a text block."""
    if role not in ("user", "assistant"):
        raise ValueError('role must be "user" or "assistant"')
    return {"role": role, "content": text(content) if isinstance(content, str) else content}
