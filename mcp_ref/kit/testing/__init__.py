"""A client for testing MCP servers: in process against a ``Server``, or over stdio against a command.

Typical use, in a plain (synchronous) pytest test::

    from mcp_ref.kit.testing import Client

    def test_add():
        with Client(server) as client:               # or Client(["python", "my_server.py"])
            assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == 3

``AsyncClient`` is the same client for ``async`` tests; ``Client`` runs it on a private event loop.

Theory of operation
-------------------
* **Same bytes as a host.** Every request is encoded as one wire line (``wire.encode_message``)
  and every answer decoded from the line the server wrote. In process, the lines go through a
  ``wire.WireReader`` into a ``session.Session`` whose ``LineSink`` hands the written
  lines back to the client, exactly what ``stdio`` does minus the file descriptors. With a
  command, the lines go through the child's stdin and stdout; its stderr is collected
  (``stderr``) and its exit status checked when the client closes (``ServerExitError``). Each
  line the server writes must be one compact JSON object ending in ``\\n`` (``WireViolation``).
* **Eras.** ``era="modern"`` (default) puts the 2026-07-28 ``_meta`` (protocol version, the
  client capabilities, client info, a progress token) on every request. ``era="legacy"`` opens an
  ``initialize`` session first (``protocol_version``, default the newest legacy one) and sends
  requests without it.
* **Input requests.** Register ``on_elicitation``, ``on_sampling`` and ``on_roots`` (each
  ``callback(params) -> result``, plain or ``async``). The declared client capabilities follow
  from them unless ``capabilities=`` says otherwise. In the modern era ``call_tool``,
  ``get_prompt`` and ``read_resource`` answer ``input_required`` results themselves, retrying
  with ``inputResponses`` and the ``requestState`` for at most ``max_rounds`` rounds; in the
  legacy era the server's ``elicitation/create``, ``sampling/createMessage`` and ``roots/list``
  requests are answered with the same callbacks (a missing callback: a -32601 error response).
  Either way the interim results (or the server's requests) stay visible in ``Reply.rounds``.
* **Tasks.** With ``tasks=True`` the client declares the tasks extension; a ``call_tool``
  answered with ``resultType: "task"`` is polled with ``tasks/get`` until the task ends (every
  ``poll_interval`` seconds, by default the task's ``pollIntervalMs``; input requests inside it
  are answered through ``tasks/update`` with the same callbacks), unless ``poll_task=False``.
  A failed task raises ``RequestError`` with the task's error.
* **Notifications** are all kept in ``notifications``; each ``Reply`` also has those received
  while its request was in flight (progress by its token), and a ``Subscription`` those tagged
  with its id.
* **Schema checks.** Every message the server writes is validated against the official MCP
  JSON schemas when they are at hand: the folder ``schema_dir=`` names, else
  ``$MCP_REF_SCHEMA_DIR``, holding ``mcp-schema-2026-07-28.json`` (modern era),
  ``mcp-schema-2025-11-25.json`` (legacy era) and optionally ``mcp-tasks-extension-schema.json``
  (the tasks extension), or the files a ``Schemas`` given as ``schemas=`` names. A file that is
  absent is silently not checked (``schema_dir=False`` turns checking off). Beyond the shapes,
  a 2026-07-28 error code from the ranges that era keeps unused is a violation. A violation
  raises ``SchemaViolation`` from the call whose answer (or notification) broke the schema, or
  from ``close()`` for one no call was waiting for. Checking needs ``jsonschema`` (a dependency
  of mcp_ref), imported only when a schema file is found.

Errors: a JSON-RPC error answer raises ``RequestError`` (``check=False`` on ``request`` returns
it in ``Reply.error`` instead); no answer within ``timeout`` seconds raises ``TimeoutError``.
"""


from __future__ import annotations

from .replies import Pending, Reply, RequestError, SchemaViolation, ServerExitError, Subscription, WireViolation
from .schemacheck import SCHEMA_FILES, Schemas
from .client import AsyncClient
from .sync import Client

__all__ = [
    "SCHEMA_FILES",
    "AsyncClient",
    "Client",
    "Pending",
    "Reply",
    "RequestError",
    "Schemas",
    "SchemaViolation",
    "ServerExitError",
    "Subscription",
    "WireViolation",
]
