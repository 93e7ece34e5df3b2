"""mcp-ref-fs against the official Python SDK client (``mcp==2.3.0``) over real stdio.

The SDK's ``Client`` spawns ``python -m mcp_ref_fs ROOT`` itself and talks to it in each of its
modes: ``"auto"`` (probes ``server/discover``), ``"2026-07-28"`` (pinned modern) and ``"legacy"``
(``initialize`` at 2025-11-25), the way tests/test_sdk_interop.py connects to the interop server.
On modern sessions the SDK answers the server's input requests (delete_file's confirmation)
through its elicitation callback. The server gets a minimal environment from the SDK (only
coverage's variables are passed along). Every test is bounded by ``anyio.fail_after``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import random
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated

from tests.fs.conftest import tiny_png
from tests.fs.fixtures_resources import file_uri

REPO_ROOT = Path(__file__).resolve().parents[2]
MODES = ["auto", "2026-07-28", "legacy"]
MODERN_MODES = ["auto", "2026-07-28"]
REQUEST_TIMEOUT = 10.0
TEST_TIMEOUT = 20.0
NOTIFY_SECONDS = 3.0
PAGED_FILES = 250  # more than two pages of the default 100


def server_parameters(*roots: Path) -> StdioServerParameters:
    env = {name: value for name, value in os.environ.items() if name.startswith("COVERAGE")}
    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_ref_fs", *map(str, roots)], cwd=str(REPO_ROOT), env=env)


@contextlib.asynccontextmanager
async def connect(mode: str, root: Path, **options: Any) -> AsyncIterator[Client]:
    """A connected SDK client in ``mode`` serving ``root``; the server's stderr goes to a temporary file."""
    with tempfile.TemporaryFile("w+") as errlog:
        transport = stdio_client(server_parameters(root), errlog=errlog)
        async with Client(transport, mode=mode, read_timeout_seconds=REQUEST_TIMEOUT, **options) as client:
            yield client


def only_text(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


class Confirmations:
    """An elicitation callback that answers every confirmation the same way, and counts them."""

    def __init__(self, accept: bool) -> None:
        self.accept = accept
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params)
        if not self.accept:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"confirm": True})


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_text("hello from disk\n")
    (root / "sub" / "doomed.txt").write_text("delete me\n")
    (root / "image.png").write_bytes(tiny_png())
    (root / "random.bin").write_bytes(random.Random(7).randbytes(100_000))
    return root


# --- tools -------------------------------------------------------------------------------------------


@pytest.mark.req("TOOLS-LIST", "VER-ERA-PER-REQUEST")
@pytest.mark.parametrize("mode", MODES)
async def test_every_mode_lists_the_filesystem_tools(mode: str, root: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode, root) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
    assert {"read_text_file", "read_media_file", "write_file", "edit_file", "delete_file", "list_allowed_directories"} <= names


@pytest.mark.req("FS-RELATIVE-PATHS")
@pytest.mark.parametrize("mode", MODES)
async def test_write_file_then_read_text_file_round_trips_in_every_mode(mode: str, root: Path) -> None:
    target = root / "sub" / "written.txt"
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode, root) as client:
            written = await client.call_tool("write_file", {"path": str(target), "content": "héllo, wörld\nline 2\n"})
            read_back = await client.call_tool("read_text_file", {"path": str(target)})
            existing = await client.call_tool("read_text_file", {"path": "hello.txt"})  # relative to the root
    assert not written.is_error and not read_back.is_error
    assert target.read_text() == "héllo, wörld\nline 2\n"
    assert read_back.content[0].text == "héllo, wörld\nline 2\n"
    assert existing.content[0].text == "hello from disk\n"


# --- resources ------------------------------------------------------------------------------------------


@pytest.mark.req("RES-READ-BLOB-BASE64", "FS-RESOURCE-BINARY-BLOB")
@pytest.mark.parametrize("mode", MODES)
async def test_a_binary_resource_decodes_to_the_exact_file_bytes_in_every_mode(mode: str, root: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode, root) as client:
            image = (await client.read_resource(file_uri(root / "image.png"))).contents
            noise = (await client.read_resource(file_uri(root / "random.bin"))).contents
            text = (await client.read_resource(file_uri(root / "hello.txt"))).contents
    assert isinstance(image[0], types.BlobResourceContents) and image[0].mime_type == "image/png"
    assert base64.b64decode(image[0].blob) == (root / "image.png").read_bytes()
    assert isinstance(noise[0], types.BlobResourceContents)
    assert base64.b64decode(noise[0].blob) == (root / "random.bin").read_bytes()
    assert isinstance(text[0], types.TextResourceContents) and text[0].text == "hello from disk\n"


@pytest.mark.req("PAGE-NEXT-CURSOR", "FS-RESOURCE-LIST-FILES")
@pytest.mark.parametrize("mode", MODES)
async def test_walking_every_resource_page_lists_each_file_once_in_every_mode(mode: str, tmp_path: Path) -> None:
    names = [f"f{i:03d}.txt" for i in range(PAGED_FILES)]
    for name in names:
        (tmp_path / name).write_text(name)
    pages: list[types.ListResourcesResult] = []
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode, tmp_path) as client:
            cursor = None
            while True:
                page = await client.list_resources(cursor=cursor)
                pages.append(page)
                cursor = page.next_cursor
                if cursor is None:
                    break
    assert len(pages) >= 3
    assert [str(item.uri) for page in pages for item in page.resources] == [file_uri(tmp_path / name) for name in names]
    assert [item.name for page in pages for item in page.resources] == names


@pytest.mark.req("RES-NOT-FOUND-32602", "LEGACY-RES-NOT-FOUND-32002", "FS-RESOURCE-OUTSIDE-32602")
@pytest.mark.parametrize("mode", MODES)
async def test_reading_a_file_outside_the_root_raises_an_mcp_error_in_every_mode(mode: str, root: Path) -> None:
    outside = root.parent / "outside.txt"
    outside.write_text("outside\n")
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode, root) as client:
            with pytest.raises(MCPError) as raised:
                await client.read_resource(file_uri(outside))
    assert raised.value.error.code == (-32002 if mode == "legacy" else -32602)


# --- delete_file's confirmation ---------------------------------------------------------------------------


@pytest.mark.req("MRTR-RETRY-COMPLETES", "FS-DELETE-CONFIRMED")
@pytest.mark.parametrize("mode", MODERN_MODES)
async def test_delete_file_deletes_once_the_user_accepts_through_the_sdk_callback(mode: str, root: Path) -> None:
    confirm = Confirmations(accept=True)
    doomed = root / "sub" / "doomed.txt"
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode, root, elicitation_callback=confirm) as client:
            result = await client.call_tool("delete_file", {"path": str(doomed)})
    assert not result.is_error, only_text(result)
    assert not doomed.exists()
    assert len(confirm.asked) == 1 and str(doomed) in confirm.asked[0].message


@pytest.mark.req("MRTR-RETRY-COMPLETES", "FS-DELETE-CONFIRMED")
@pytest.mark.parametrize("mode", MODERN_MODES)
async def test_delete_file_keeps_the_file_when_the_user_declines_through_the_sdk_callback(mode: str, root: Path) -> None:
    confirm = Confirmations(accept=False)
    doomed = root / "sub" / "doomed.txt"
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode, root, elicitation_callback=confirm) as client:
            result = await client.call_tool("delete_file", {"path": str(doomed)})
    assert doomed.read_text() == "delete me\n"
    assert len(confirm.asked) == 1
    assert "Not deleted" in only_text(result)


@pytest.mark.req("LEGACY-CLIENT-INPUT-REQUESTS", "FS-DELETE-CONFIRMED")
@pytest.mark.parametrize("accept", [True, False], ids=["accept-deletes", "decline-keeps"])
async def test_a_legacy_sdk_client_is_asked_to_confirm_delete_file_with_elicitation_create(root: Path, accept: bool) -> None:
    # An initialize-era client is asked with a server-to-client elicitation/create request.
    confirm = Confirmations(accept=accept)
    doomed = root / "sub" / "doomed.txt"
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect("legacy", root, elicitation_callback=confirm) as client:
            result = await client.call_tool("delete_file", {"path": str(doomed)})
    assert len(confirm.asked) == 1
    assert doomed.exists() is not accept, result


# --- subscriptions ---------------------------------------------------------------------------------------


@pytest.mark.req("RES-UPDATED-ON-STREAM", "FS-SUBSCRIBE-EXTERNAL-CHANGE", "FS-SUBSCRIBE-LIST-CHANGED")
@pytest.mark.parametrize("mode", MODERN_MODES)
async def test_an_sdk_listen_sees_a_file_written_by_another_program_and_a_new_file(mode: str, root: Path) -> None:
    uri = file_uri(root / "hello.txt")
    events: list[Any] = []
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(mode, root) as client:
            async with client.listen(resource_subscriptions=[uri], resources_list_changed=True) as subscription:
                assert subscription.honored.resource_subscriptions == [uri]
                (root / "hello.txt").write_text("changed by someone else\n")
                with anyio.fail_after(NOTIFY_SECONDS):
                    async for event in subscription:
                        if event == ResourceUpdated(uri=uri):
                            break
                (root / "brand-new.txt").write_text("new\n")
                with anyio.fail_after(NOTIFY_SECONDS):
                    async for event in subscription:
                        events.append(event)
                        if event == ResourcesListChanged():
                            break
            # Leaving the block cancels the stream; the connection goes on.
            assert not (await client.call_tool("list_allowed_directories", {})).is_error
    assert events[-1] == ResourcesListChanged()


@pytest.mark.req("LEGACY-RES-SUBSCRIBE", "FS-SUBSCRIBE-EXTERNAL-CHANGE")
async def test_a_legacy_sdk_client_hears_about_a_subscribed_file_written_by_another_program(root: Path) -> None:
    uri = file_uri(root / "hello.txt")
    heard = anyio.Event()
    updates: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            heard.set()

    with anyio.fail_after(TEST_TIMEOUT):
        async with connect("legacy", root, message_handler=on_message) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated in 2026-07-28, not in 2025-11-25
                await client.subscribe_resource(uri)
            (root / "hello.txt").write_text("changed by someone else\n")
            with anyio.fail_after(NOTIFY_SECONDS):
                await heard.wait()
    assert updates[0] == uri
