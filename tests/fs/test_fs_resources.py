"""mcp-ref-fs resources and subscriptions over stdio: ``python -m mcp_ref_fs ROOT`` in a subprocess.

* ``resources/list``, ``resources/templates/list`` and ``resources/read`` against one tree per
  module that no test changes (``sample``), and a tree of 2,500 files for pagination (``big``),
  through ``mcp_ref.kit.testing.Client`` (it walks every page and decodes blobs).
* ``subscriptions/listen`` (2026-07-28) and legacy ``resources/subscribe`` over raw stdio
  (``tests.wire``): each test has a tree and a server of its own, changes files from this process
  (as any other program would) and waits at most ``NOTIFY_SECONDS`` for the announcement. Changes
  are made right after the acknowledgement, as a client that subscribes and then writes would
  make them.

Every line the server writes is checked against the official schema, by the client or by
``tests.wire``.
Helpers (and the test's own percent-encoding of paths) are in ``tests/fs/fixtures_resources.py``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import random
import string
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import quote

import pytest

from mcp_ref.kit.testing import Client, RequestError
from tests.fs.fixtures_resources import (
    LIST_CHANGED,
    UPDATED,
    file_uri,
    ids,
    list_changed,
    open_listen,
    Recorder,
    replace_file,
    response_to,
    updated,
    wait_for,
    wait_for_stderr,
)
from tests.fs.conftest import fs_command, tiny_png
from tests.schema_check import schemas
from tests.wire import ServerProcess, WireTimeout, cancel, notification, request, result_of, subscription_of, tool_call

DEBUG = {"MCP_REF_LOG_LEVEL": "DEBUG"}
RANDOM_BYTES = random.Random(20260728).randbytes(200_000)  # over 64 KiB: the server reads it off the loop
UNICODE_NAME = "ünïcødé ☃ 文件.txt"
HASH_NAME = "my notes #1.md"
ODD_NAME = "odd ?&=+;,%[]!'$ name.txt"
BIG_FILES = 2500


# --- the shared, read-only tree ---------------------------------------------------------------------


@dataclass
class Sample:
    root: Path
    outside: Path
    listed: list[str]  # what resources/list must name, in its order


def build_sample(base: Path) -> Sample:
    root, outside = base / "root", base / "outside"
    (root / "sub" / "deeper").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret\n")
    files = {
        "a.txt": b"alpha\n",
        "empty.txt": b"",
        "image.png": tiny_png(),
        "late-binary.txt": b"text at first\n" * 1000 + b"then \xff\xfe not UTF-8\n",  # past the 8 KiB sniff
        HASH_NAME: b"# My notes\n",
        ODD_NAME: b"odd\n",
        "random.bin": RANDOM_BYTES,
        "sub/b.txt": b"beta\n",
        "sub/deeper/c.md": b"# deep\n",
        UNICODE_NAME: "unicode names work\n".encode(),
    }
    for name, data in files.items():
        (root / name).write_bytes(data)
    (root / "link_a.txt").symlink_to("a.txt")
    (root / "link_sub").symlink_to("sub")
    (root / "escape_file").symlink_to("../outside/secret.txt")
    (root / "escape_dangling").symlink_to("../outside/missing.txt")
    (root / "escape_dir").symlink_to(outside)
    os.mkfifo(root / "pipe")
    # Names that are not UTF-8 have no URI: left out, and they must not break the listing.
    os.mkdir(os.fsencode(root) + b"/\xffdir")
    with open(os.fsencode(root) + b"/\xffdir/inside.txt", "wb") as stream:
        stream.write(b"unreachable\n")
    with open(os.fsencode(root) + b"/\xfe.txt", "wb") as stream:
        stream.write(b"unreachable\n")
    listed = sorted(files, key=lambda name: name.split("/"))
    return Sample(root, outside, listed)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    return build_sample(tmp_path_factory.mktemp("resources"))


def fs_client(*roots: Path, options: tuple[str, ...] = ()) -> Client:
    return Client(fs_command(*roots, options=options), schemas=schemas())


@pytest.fixture(scope="module")
def served(sample: Sample) -> Iterator[Client]:
    with fs_client(sample.root) as client:
        yield client


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """2,500 files in an uneven tree (so pages end anywhere): the root and the expected order."""
    root = tmp_path_factory.mktemp("big")
    names = [f"top{i:02d}.txt" for i in range(40)]
    names += [f"d{i % 37:02d}/e{i % 5}/f{i:04d}.txt" for i in range(BIG_FILES - 40 - 60)]
    names += [f"d{i % 3:02d}/g{i:03d}.txt" for i in range(60)]
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    assert len(set(names)) == BIG_FILES
    return root, sorted(names, key=lambda name: name.split("/"))


@pytest.fixture(scope="module")
def big_served(big: tuple[Path, list[str]]) -> Iterator[Client]:
    with fs_client(big[0]) as client:
        yield client


def read_error(client: Client, uri: str) -> dict[str, Any]:
    """The error ``resources/read`` of ``uri`` is answered with (a result fails the test)."""
    with pytest.raises(RequestError) as raised:
        client.read_resource(uri)
    return raised.value.error


# --- resources/list -----------------------------------------------------------------------------------


@pytest.mark.req("RES-LIST", "FS-RESOURCE-LIST-FILES", "FS-RESOURCE-URI-RFC8089")
def test_the_list_names_every_regular_file_under_the_root_by_its_file_uri_and_relative_path(sample: Sample, served: Client) -> None:
    items = served.list_resources()
    assert [item["name"] for item in items] == sample.listed
    assert [item["uri"] for item in items] == [file_uri(sample.root / name) for name in sample.listed]


@pytest.mark.req("FS-RESOURCE-LIST-FILES")
def test_each_listed_file_carries_its_mime_type_and_size(sample: Sample, served: Client) -> None:
    items = {item["name"]: item for item in served.list_resources()}
    for name, item in items.items():
        assert item["size"] == (sample.root / name).stat().st_size, name
    assert items["image.png"]["mimeType"] == "image/png"
    assert items["sub/deeper/c.md"]["mimeType"] == "text/markdown"
    assert items["a.txt"]["mimeType"] == "text/plain"
    assert items["random.bin"]["mimeType"] == "application/octet-stream"


@pytest.mark.req("FS-RESOURCE-LIST-ORDER")
def test_listing_twice_gives_the_same_list_in_the_same_order(served: Client) -> None:
    assert served.list_resources() == served.list_resources()


@pytest.mark.req("FS-RESOURCE-URI-RFC8089")
@pytest.mark.parametrize("name", [HASH_NAME, UNICODE_NAME, ODD_NAME], ids=["space-and-hash", "unicode", "reserved-characters"])
def test_a_listed_uri_is_percent_encoded_ascii_and_reading_it_back_gives_the_file(sample: Sample, served: Client, name: str) -> None:
    (item,) = [item for item in served.list_resources() if item["name"] == name]
    uri = item["uri"]
    assert uri.isascii() and " " not in uri and "#" not in uri and "?" not in uri
    assert uri == "file://" + quote(str(sample.root), safe="/") + "/" + quote(name.encode("utf-8"), safe="")
    contents = served.read_resource(uri)["contents"]
    assert contents == [{"uri": uri, "mimeType": contents[0]["mimeType"], "text": (sample.root / name).read_text()}]


@pytest.mark.req("FS-RESOURCE-LIST-FILES")
def test_links_fifos_and_names_that_are_not_utf8_are_not_listed_and_do_not_break_the_list(served: Client) -> None:
    names = [item["name"] for item in served.list_resources()]
    for absent in ("link_a.txt", "link_sub", "link_sub/b.txt", "escape_file", "escape_dangling", "escape_dir", "pipe"):
        assert absent not in names
    assert not any("\\x" in name or "inside.txt" in name for name in names)


@pytest.mark.req("FS-RESOURCE-OUTSIDE-32602", "RES-FILE-PATH-TRAVERSAL")
def test_a_file_outside_the_root_never_appears_in_the_list_even_through_a_link(sample: Sample, served: Client) -> None:
    pages = json.dumps(served.pages("resources/list"))
    assert "secret" not in pages
    assert str(sample.outside) not in pages and quote(str(sample.outside)) not in pages


@pytest.mark.req("FS-RESOURCE-LIST-FILES")
def test_every_root_is_listed_each_file_named_relative_to_its_own_root(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "in").mkdir(parents=True)
    second.mkdir()
    (first / "in" / "one.txt").write_text("1")
    (second / "two.txt").write_text("2")
    with fs_client(first, second) as client:
        items = [(item["uri"], item["name"]) for item in client.list_resources()]
    assert items == [(file_uri(first / "in" / "one.txt"), "in/one.txt"), (file_uri(second / "two.txt"), "two.txt")]


@pytest.mark.req("FS-RESOURCE-LIST-FILES")
def test_a_file_under_nested_roots_is_listed_once_under_the_innermost_root(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    (outer / "a.txt").write_text("a")
    (inner / "b.txt").write_text("b")
    with fs_client(outer, inner, outer) as client:
        items = [(item["uri"], item["name"]) for item in client.list_resources()]
    assert items == [(file_uri(outer / "a.txt"), "a.txt"), (file_uri(inner / "b.txt"), "b.txt")]


@pytest.mark.req("RES-TEMPLATES-LIST", "FS-RESOURCE-URI-RFC8089")
def test_the_template_list_offers_every_file_by_absolute_path(served: Client) -> None:
    templates = served.list_resource_templates()
    assert [template["uriTemplate"] for template in templates] == ["file:///{+path}"]


# --- pagination ------------------------------------------------------------------------------------------


@pytest.mark.req("PAGE-NEXT-CURSOR", "PAGE-PAGED-LISTER-RESUMES", "FS-RESOURCE-LIST-ORDER")
def test_walking_every_page_of_a_large_tree_yields_each_file_once_in_order(big: tuple[Path, list[str]], big_served: Client) -> None:
    root, expected = big
    pages = big_served.pages("resources/list")
    assert len(pages) >= BIG_FILES // 100  # the default page size is 100
    assert all(len(page["resources"]) <= 100 for page in pages)
    assert [item["name"] for page in pages for item in page["resources"]] == expected
    assert [item["uri"] for page in pages for item in page["resources"]] == [file_uri(root / name) for name in expected]


@pytest.mark.req("PAGE-SEALED-CURSORS")
def test_every_next_cursor_is_an_opaque_token_naming_no_file(big: tuple[Path, list[str]], big_served: Client) -> None:
    pages = big_served.pages("resources/list")
    cursors = [page["nextCursor"] for page in pages if "nextCursor" in page]
    assert len(cursors) == len(pages) - 1 and len(set(cursors)) == len(cursors)
    alphabet = set(string.ascii_letters + string.digits + "-_")
    for cursor in cursors:
        assert isinstance(cursor, str) and cursor and set(cursor) <= alphabet
        assert ".txt" not in cursor and str(big[0]) not in cursor


def _tamper(cursor: str) -> str:
    sealed = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    sealed[-3] ^= 0x01  # a character of the position (a file name): the tag no longer matches
    return base64.urlsafe_b64encode(bytes(sealed)).decode().rstrip("=")


def _forge(cursor: str) -> str:
    position = json.dumps({"source": "paged", "index": 0, "position": [0, "d05"]}).encode()
    return base64.urlsafe_b64encode(bytes(32) + position).decode().rstrip("=")


@pytest.mark.req("PAGE-INVALID-CURSOR-32602", "PAGE-SEALED-CURSORS", "FS-RESOURCE-CURSOR-SEALED")
@pytest.mark.parametrize("spoil", [_tamper, _forge, lambda cursor: cursor[:-4], lambda cursor: "not a cursor"],
                         ids=["tampered", "forged", "truncated", "garbage"])
def test_a_tampered_or_forged_cursor_is_invalid_params(big_served: Client, spoil: Callable[[str], str]) -> None:
    cursor = big_served.request("resources/list")["nextCursor"]
    error = big_served.request("resources/list", {"cursor": spoil(cursor)}, check=False).error
    assert error is not None and error["code"] == -32602
    assert "resources" in big_served.request("resources/list", {"cursor": cursor})  # still serving


# --- resources/read --------------------------------------------------------------------------------------


@pytest.mark.req("RES-READ-TEXT", "FS-RESOURCE-TEXT")
def test_reading_a_text_file_gives_its_text_and_mime_type(sample: Sample, served: Client) -> None:
    uri = file_uri(sample.root / "a.txt")
    assert served.read_resource(uri)["contents"] == [{"uri": uri, "mimeType": "text/plain", "text": "alpha\n"}]


@pytest.mark.req("FS-RESOURCE-TEXT")
def test_reading_an_empty_file_gives_empty_text(sample: Sample, served: Client) -> None:
    (contents,) = served.read_resource(file_uri(sample.root / "empty.txt"))["contents"]
    assert contents["text"] == ""


@pytest.mark.req("RES-READ-BLOB-BASE64", "FS-RESOURCE-BINARY-BLOB")
@pytest.mark.parametrize(("name", "mime"), [("image.png", "image/png"), ("random.bin", "application/octet-stream"),
                                            ("late-binary.txt", "text/plain")])
def test_reading_a_binary_file_gives_a_base64_blob_that_decodes_to_the_exact_bytes(sample: Sample, served: Client, name: str, mime: str) -> None:
    uri = file_uri(sample.root / name)
    reply = served.read_resource(uri)
    (contents,) = reply["contents"]
    assert set(contents) == {"uri", "mimeType", "blob"}
    assert contents["uri"] == uri and contents["mimeType"] == mime
    assert reply.data == [(sample.root / name).read_bytes()]  # strict base64


@pytest.mark.req("RES-FILE-XDG-MIME", "FS-RESOURCE-DIRECTORY")
def test_reading_a_directory_gives_its_listing_as_inode_directory(sample: Sample, served: Client) -> None:
    uri = file_uri(sample.root / "sub")
    assert served.read_resource(uri)["contents"] == [{"uri": uri, "mimeType": "inode/directory", "text": "[FILE] b.txt\n[DIR] deeper\n"}]


@pytest.mark.req("FS-RESOURCE-DIRECTORY")
def test_a_directory_listing_over_max_entries_says_it_was_cut(sample: Sample) -> None:
    with fs_client(sample.root, options=("--max-entries", "2")) as client:
        (text,) = client.read_resource(file_uri(sample.root / "sub")).data
        (whole_root,) = client.read_resource(file_uri(sample.root)).data
    assert text == "[FILE] b.txt\n[DIR] deeper\n"  # exactly at the limit: nothing to say
    lines = whole_root.splitlines()
    assert len(lines) == 3 and lines[-1].startswith("[Truncated: showing 2 of ") and "--max-entries" in lines[-1]


@pytest.mark.req("CACHE-HINTS-REQUIRED", "FS-RESOURCE-CACHE-PRIVATE")
def test_a_read_carries_a_private_caching_hint_with_an_integer_ttl(sample: Sample, served: Client) -> None:
    result = served.read_resource(file_uri(sample.root / "a.txt")).result
    assert result["cacheScope"] == "private"
    assert isinstance(result["ttlMs"], int) and not isinstance(result["ttlMs"], bool) and result["ttlMs"] >= 0


BAD_URIS = {
    "missing": "file://{root}/missing.txt",
    "outside": "file://{outside}/secret.txt",
    "dot-dot-encoded": "file://{root}/sub/%2e%2e/%2E%2E/outside/secret.txt",
    "dot-dot-literal": "file://{root}/sub/../../outside/secret.txt",
    "dot-dot-staying-inside": "file://{root}/sub/../a.txt",
    "dot-encoded": "file://{root}/%2e/a.txt",
    "slash-encoded": "file://{root}/sub%2Fb.txt",
    "nul": "file://{root}/a.txt%00.png",
    "not-utf8": "file://{root}/%FE.txt",
    "host": "file://evil{root}/a.txt",
    "host-etc-passwd": "file://evil/etc/passwd",
    "other-scheme": "http://example.com{root}/a.txt",
    "query": "file://{root}/a.txt?raw=1",
    "fragment": "file://{root}/a.txt#top",
    "fifo": "file://{root}/pipe",
    "link-leaving-the-root": "file://{root}/escape_file",
    "through-a-link-leaving-the-root": "file://{root}/escape_dir/secret.txt",
}


@pytest.mark.req("RES-NOT-FOUND-32602", "RES-VALIDATE-URIS", "RES-FILE-PATH-TRAVERSAL", "FS-RESOURCE-OUTSIDE-32602", "FS-RESOURCE-URI-STRICT")
@pytest.mark.parametrize("template", list(BAD_URIS.values()), ids=list(BAD_URIS))
def test_a_uri_that_is_missing_outside_or_malformed_is_invalid_params_naming_the_uri(sample: Sample, served: Client, template: str) -> None:
    uri = template.format(root=quote(str(sample.root)), outside=quote(str(sample.outside)))
    error = read_error(served, uri)
    assert error["code"] == -32602
    assert error["data"]["uri"] == uri
    assert "outside secret" not in json.dumps(error)  # the content never leaks


def _shape(error: dict[str, Any], uri: str) -> dict[str, Any]:
    data = {key: value for key, value in (error.get("data") or {}).items() if key != "uri"}
    return {"code": error["code"], "message": error["message"].replace(uri, "<uri>"), "data": data}


@pytest.mark.req("FS-RESOURCE-OUTSIDE-32602")
@pytest.mark.parametrize(("existing", "missing"), [
    ("file://{outside}/secret.txt", "file://{outside}/no-such-file.txt"),
    ("file://{root}/escape_file", "file://{root}/escape_dangling"),
    ("file://{root}/sub/%2e%2e/%2e%2e/outside/secret.txt", "file://{root}/sub/%2e%2e/%2e%2e/outside/no-such-file.txt"),
], ids=["direct", "through-a-link", "dot-dot"])
def test_the_error_for_an_outside_file_is_the_same_whether_or_not_it_exists(sample: Sample, served: Client, existing: str, missing: str) -> None:
    there, absent = (t.format(root=quote(str(sample.root)), outside=quote(str(sample.outside))) for t in (existing, missing))
    assert (sample.outside / "secret.txt").exists() and not (sample.outside / "no-such-file.txt").exists()
    first, second = read_error(served, there), read_error(served, absent)
    assert first["data"]["uri"] == there and second["data"]["uri"] == absent
    assert _shape(first, there) == _shape(second, absent)


@pytest.mark.req("FS-RESOURCE-SIZE-LIMIT")
def test_a_file_over_max_media_bytes_is_invalid_params_and_a_smaller_one_reads(sample: Sample) -> None:
    with fs_client(sample.root, options=("--max-media-bytes", "1000")) as client:
        big_uri, small_uri = file_uri(sample.root / "random.bin"), file_uri(sample.root / "image.png")
        error = read_error(client, big_uri)
        small = client.read_resource(small_uri)
    assert error["code"] == -32602 and error["data"]["uri"] == big_uri
    assert "--max-media-bytes" in error["message"]
    assert small.data == [tiny_png()]


# --- subscriptions/listen ----------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "dir").mkdir(parents=True)
    (root / "a.txt").write_text("a0\n")
    (root / "b.txt").write_text("b0\n")
    (root / "dir" / "inner.txt").write_text("inner0\n")
    (root / "~draft.txt").write_text("draft0\n")
    return root


@pytest.fixture
def watched(tree: Path) -> Iterator[ServerProcess]:
    """A fresh server over ``tree`` logging at DEBUG (so "watch started"/"watch stopped" show)."""
    with ServerProcess(fs_command(tree), env=DEBUG) as process:
        yield process


def collect(server: ServerProcess, seconds: float) -> list[dict[str, Any]]:
    """Everything the server writes within ``seconds`` (always waits that long)."""
    messages: list[dict[str, Any]] = []

    def keep(message: dict[str, Any]) -> bool:
        messages.append(message)
        return False

    try:
        server.read_until(keep, seconds)
    except WireTimeout:
        pass
    return messages


@pytest.mark.req("SUB-ACK-FIRST", "SUB-ACK-HONOURED-SUBSET", "FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_a_listen_for_a_file_is_acknowledged_with_that_file_uri(tree: Path, watched: ServerProcess) -> None:
    uri = file_uri(tree / "a.txt")
    ack = open_listen(watched, 7, {"resourceSubscriptions": [uri], "resourcesListChanged": True})
    assert subscription_of(ack) == 7
    assert ack["params"]["notifications"] == {"resourceSubscriptions": [uri], "resourcesListChanged": True}
    assert watched.pending == []  # the acknowledgement came first


@pytest.mark.req("RES-UPDATED-ON-STREAM", "SUB-NOTIFICATIONS-CARRY-ID", "FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_writing_a_subscribed_file_from_another_program_notifies_the_stream(tree: Path, watched: ServerProcess) -> None:
    uri = file_uri(tree / "a.txt")
    open_listen(watched, "s-1", {"resourceSubscriptions": [uri]})
    with open(tree / "a.txt", "w") as stream:
        stream.write("a1\n")
    message = wait_for(watched, updated(uri, "s-1"))
    assert message["params"] == {"_meta": {"io.modelcontextprotocol/subscriptionId": "s-1"}, "uri": uri}


@pytest.mark.req("FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_replacing_a_subscribed_file_by_rename_notifies_the_stream(tree: Path, watched: ServerProcess) -> None:
    uri = file_uri(tree / "a.txt")
    open_listen(watched, 1, {"resourceSubscriptions": [uri]})
    replace_file(tree / "a.txt", b"replaced\n")
    wait_for(watched, updated(uri, 1))


@pytest.mark.req("FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_deleting_a_subscribed_file_notifies_the_stream(tree: Path, watched: ServerProcess) -> None:
    uri = file_uri(tree / "a.txt")
    open_listen(watched, 1, {"resourceSubscriptions": [uri]})
    (tree / "a.txt").unlink()
    wait_for(watched, updated(uri, 1))


@pytest.mark.req("FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_moving_the_directory_above_a_subscribed_file_notifies_the_stream(tree: Path, watched: ServerProcess) -> None:
    uri = file_uri(tree / "dir" / "inner.txt")
    open_listen(watched, 1, {"resourceSubscriptions": [uri]})
    wait_for_stderr(watched, "watch started")
    os.rename(tree / "dir", tree / "moved")
    wait_for(watched, updated(uri, 1))


@pytest.mark.req("RES-LIST-CHANGED-NOTIFY", "FS-SUBSCRIBE-LIST-CHANGED")
def test_creating_a_file_sends_list_changed_to_a_stream_that_asked_for_it(tree: Path, watched: ServerProcess) -> None:
    open_listen(watched, 1, {"resourcesListChanged": True})
    (tree / "new.txt").write_text("new\n")
    message = wait_for(watched, list_changed(1))
    assert message["params"] == {"_meta": {"io.modelcontextprotocol/subscriptionId": 1}}


@pytest.mark.req("FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_a_write_through_the_write_file_tool_notifies_the_subscriber(tree: Path, watched: ServerProcess) -> None:
    uri = file_uri(tree / "a.txt")
    open_listen(watched, 1, {"resourceSubscriptions": [uri]})
    watched.send(tool_call(2, "write_file", {"path": str(tree / "a.txt"), "content": "written by a tool\n"}))
    assert result_of(wait_for(watched, response_to(2), 10.0)).get("isError") is not True
    wait_for(watched, updated(uri, 1))
    assert (tree / "a.txt").read_text() == "written by a tool\n"


@pytest.mark.req("SUB-ONLY-REQUESTED-TYPES", "FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_changes_to_files_nobody_subscribed_to_are_not_sent(tree: Path, watched: ServerProcess) -> None:
    uri = file_uri(tree / "a.txt")
    open_listen(watched, 1, {"resourceSubscriptions": [uri]})
    wait_for_stderr(watched, "watch started")
    (tree / "b.txt").write_text("b1\n")
    (tree / "created.txt").write_text("new\n")  # no list changes were asked for
    (tree / "a.txt").write_text("a1\n")
    wait_for(watched, updated(uri, 1))
    seen = watched.pending + collect(watched, 0.3)
    assert [m for m in seen if m.get("method") in (UPDATED, LIST_CHANGED) and not updated(uri, 1)(m)] == []


@pytest.mark.req("FS-SUBSCRIBE-URI-CANONICAL")
def test_a_uri_spelled_with_percent_7e_is_notified_under_the_spelling_the_client_used(tree: Path, watched: ServerProcess) -> None:
    spelled = "file://" + quote(str(tree)) + "/%7Edraft.txt"
    assert spelled != file_uri(tree / "~draft.txt")
    open_listen(watched, 1, {"resourceSubscriptions": [spelled]})
    (tree / "~draft.txt").write_text("draft1\n")
    wait_for(watched, updated(spelled, 1))


@pytest.mark.req("FS-SUBSCRIBE-EXTERNAL-CHANGE")
@pytest.mark.parametrize("name", ["backup.txt~", ".notes.txt.swp", "node_modules/pkg/index.js", ".git/HEAD", "__pycache__/m.pyc"])
def test_files_that_editors_and_tools_leave_behind_are_watched_too(tree: Path, watched: ServerProcess, name: str) -> None:
    (tree / name).parent.mkdir(parents=True, exist_ok=True)
    (tree / name).write_text("0\n")
    uri = file_uri(tree / name)
    open_listen(watched, 1, {"resourceSubscriptions": [uri]})
    wait_for_stderr(watched, "watch started")
    (tree / name).write_text("1\n")
    wait_for(watched, updated(uri, 1))


@pytest.mark.req("FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_a_new_file_whose_name_is_not_utf8_does_not_stop_the_watch(tree: Path, watched: ServerProcess) -> None:
    uri = file_uri(tree / "a.txt")
    open_listen(watched, 1, {"resourceSubscriptions": [uri], "resourcesListChanged": True})
    wait_for_stderr(watched, "watch started")
    with open(os.fsencode(tree) + b"/\xff.txt", "wb") as stream:
        stream.write(b"x")
    wait_for(watched, list_changed(1))
    (tree / "a.txt").write_text("a1\n")
    wait_for(watched, updated(uri, 1))
    assert "Traceback" not in watched.stderr_text()


@pytest.mark.req("FS-WATCH-LIFETIME")
def test_the_watch_starts_only_when_someone_listens(tree: Path, watched: ServerProcess) -> None:
    result_of(request(watched, "resources/list"))
    assert "watch started" not in watched.stderr_text()
    open_listen(watched, 1, {"resourceSubscriptions": [file_uri(tree / "a.txt")]})
    wait_for_stderr(watched, "watch started")


@pytest.mark.req("SUB-CANCEL-ENDS-STREAM", "FS-WATCH-LIFETIME")
def test_after_the_listen_is_cancelled_changes_send_nothing_and_the_watch_stops(tree: Path, watched: ServerProcess) -> None:
    uri = file_uri(tree / "a.txt")
    open_listen(watched, 1, {"resourceSubscriptions": [uri], "resourcesListChanged": True})
    (tree / "a.txt").write_text("a1\n")
    wait_for(watched, updated(uri, 1))
    watched.send(cancel(1))
    wait_for_stderr(watched, "watch stopped")
    collect(watched, 0.2)  # anything the first change still had in flight
    (tree / "a.txt").write_text("a2\n")
    (tree / "created.txt").write_text("new\n")
    assert collect(watched, 1.5) == []
    assert "result" in request(watched, "resources/list")  # the server itself is fine


@pytest.mark.req("SUB-SHUTDOWN-GRACEFUL-RESPONSE", "SUB-GRACEFUL-CLOSURE", "FS-WATCH-LIFETIME")
def test_eof_with_an_open_listen_answers_it_gracefully_and_exits_0(tree: Path, watched: ServerProcess) -> None:
    open_listen(watched, 5, {"resourceSubscriptions": [file_uri(tree / "a.txt")], "resourcesListChanged": True})
    wait_for_stderr(watched, "watch started")
    messages = watched.shutdown()  # closes stdin, reads to EOF, asserts exit status 0
    (answer,) = [m for m in watched.pending + messages if "result" in m and m.get("id") == 5]
    assert answer["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 5


# --- legacy resources/subscribe ---------------------------------------------------------------------------


def legacy_request(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params}


@contextlib.contextmanager
def legacy_session(root: Path) -> Iterator[ServerProcess]:
    """A server over ``root`` after an initialize handshake at 2025-11-25 (checked against that schema)."""
    with ServerProcess(fs_command(root), schema="legacy", env=DEBUG) as process:
        initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "legacy-test", "version": "1"}}
        capabilities = result_of(process.request(legacy_request("initialize", initialize)))["capabilities"]
        assert capabilities["resources"].get("subscribe") is True
        process.send(notification("notifications/initialized"))
        yield process


@pytest.fixture
def legacy(tree: Path) -> Iterator[ServerProcess]:
    with legacy_session(tree) as process:
        yield process


@pytest.mark.req("LEGACY-RES-SUBSCRIBE", "FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_a_legacy_client_gets_updates_for_a_file_it_subscribed_to(tree: Path, legacy: ServerProcess) -> None:
    uri = file_uri(tree / "a.txt")
    assert result_of(legacy.request(legacy_request("resources/subscribe", {"uri": uri}))) == {}
    (tree / "a.txt").write_text("a1\n")
    message = wait_for(legacy, updated(uri))
    assert message == {"jsonrpc": "2.0", "method": UPDATED, "params": {"uri": uri}}


@pytest.mark.req("LEGACY-RES-SUBSCRIBE")
def test_after_unsubscribing_a_legacy_client_gets_no_more_updates_for_that_file(tree: Path, legacy: ServerProcess) -> None:
    a, b = file_uri(tree / "a.txt"), file_uri(tree / "b.txt")
    for uri in (a, b):
        result_of(legacy.request(legacy_request("resources/subscribe", {"uri": uri})))
    assert result_of(legacy.request(legacy_request("resources/unsubscribe", {"uri": a}))) == {}
    wait_for_stderr(legacy, "watch started")
    (tree / "a.txt").write_text("a1\n")
    (tree / "b.txt").write_text("b1\n")  # still subscribed: its update shows a's would have come by now
    wait_for(legacy, updated(b))
    seen = legacy.pending + collect(legacy, 0.3)
    assert not any(updated(a)(message) for message in seen)


# --- the watch stays inside the roots --------------------------------------------------------------------------
# watchfiles' recursive mode follows links: a link from the root to an outside tree used to put a kernel
# watch on every outside directory and announce changes made there. The server process's inotify watches
# are counted from /proc/<pid>/fdinfo (one "inotify wd:" line per watch).

ROOT_DIRS = 5  # the root and the four directories below it that build_escape makes
OUTSIDE_DIRS = 300


def build_escape(base: Path, link: str) -> tuple[Path, Path, str]:
    """``base/root`` (ROOT_DIRS directories, ``a.txt``) with a link to ``base/outside`` (OUTSIDE_DIRS
    directories below it, ``secret.txt``): ``root/lk -> ../outside`` ("relative"), or
    ``root/sub/deeper/abs -> /.../outside`` ("absolute", from a leaf directory). Returns the root,
    the outside directory and the URI of the secret file through the link."""
    root, outside = base / "root", base / "outside"
    for name in ("sub/deeper", "other/x"):
        (root / name).mkdir(parents=True)
    (root / "a.txt").write_text("a0\n")
    for index in range(OUTSIDE_DIRS):
        (outside / f"d{index:03d}").mkdir(parents=True)
    (outside / "secret.txt").write_text("outside secret\n")
    if link == "relative":
        (root / "lk").symlink_to("../outside")
        through = root / "lk"
    else:
        (root / "sub" / "deeper" / "abs").symlink_to(outside.resolve())
        through = root / "sub" / "deeper" / "abs"
    assert (through / "secret.txt").read_text() == "outside secret\n"  # the link works for everyone else
    return root, outside, file_uri(through / "secret.txt")


def inotify_watches(pid: int) -> int:
    """How many inotify watches the process ``pid`` holds, over all its inotify descriptors."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                total += sum(line.startswith("inotify wd:") for line in info)
        except OSError:  # closed meanwhile
            continue
    return total


def change_outside(outside: Path) -> None:
    """What another program does outside the root: append to a file, create one, create one deeper."""
    with open(outside / "secret.txt", "a") as stream:
        stream.write("appended\n")
    (outside / "new").write_text("new\n")
    (outside / "d000" / "deeper.txt").write_text("deeper\n")


def announcements(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("method") in (UPDATED, LIST_CHANGED)]


@pytest.mark.req("FS-WATCH-CONFINED", "RES-FILE-PATH-TRAVERSAL", "SUB-ONLY-REQUESTED-TYPES")
@pytest.mark.parametrize("link", ["relative", "absolute"])
def test_changes_outside_the_root_through_a_link_send_nothing_and_no_outside_directory_is_watched(tmp_path: Path, link: str) -> None:
    root, outside, secret = build_escape(tmp_path, link)
    control = file_uri(root / "a.txt")
    with ServerProcess(fs_command(root), env=DEBUG) as server:
        open_listen(server, 1, {"resourceSubscriptions": [secret, control], "resourcesListChanged": True})
        (root / "a.txt").write_text("a1\n")
        wait_for(server, updated(control, 1))  # the watch is in place
        watches = inotify_watches(server.proc.pid)
        assert ROOT_DIRS <= watches <= ROOT_DIRS + 2, f"{watches} inotify watches for {ROOT_DIRS} directories in the root"
        collect(server, 0.3)  # whatever the catch-up still had in flight
        change_outside(outside)
        assert announcements(collect(server, 2.0)) == []
        (root / "a.txt").write_text("a2\n")  # the control: the watch is alive and announcing
        wait_for(server, updated(control, 1))
        (root / "created.txt").write_text("created\n")
        wait_for(server, list_changed(1))
        assert not any(updated(secret)(message) for message in server.pending)
        assert inotify_watches(server.proc.pid) <= ROOT_DIRS + 2


@pytest.mark.req("FS-WATCH-CONFINED", "LEGACY-RES-SUBSCRIBE")
def test_a_legacy_subscription_through_a_link_leaving_the_root_hears_nothing_of_outside_changes(tmp_path: Path) -> None:
    root, outside, secret = build_escape(tmp_path, "relative")
    control = file_uri(root / "a.txt")
    with legacy_session(root) as server:
        for uri in (secret, control):
            assert result_of(server.request(legacy_request("resources/subscribe", {"uri": uri}))) == {}
        (root / "a.txt").write_text("a1\n")
        wait_for(server, updated(control))
        collect(server, 0.3)
        change_outside(outside)
        assert announcements(collect(server, 2.0)) == []  # a legacy session would also get list_changed
        (root / "a.txt").write_text("a2\n")
        wait_for(server, updated(control))
        assert inotify_watches(server.proc.pid) <= ROOT_DIRS + 2


@pytest.mark.req("FS-SUBSCRIBE-URI-CANONICAL", "FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_a_nested_root_given_through_a_link_notifies_its_subscribers_under_either_spelling(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    inner = outer / "inner"
    inner.mkdir(parents=True)
    (inner / "b.txt").write_text("b0\n")
    link = tmp_path / "inner-link"
    link.symlink_to(inner)
    (outer / "a.txt").write_text("a0\n")
    by_link, by_real, control = file_uri(link / "b.txt"), file_uri(inner / "b.txt"), file_uri(outer / "a.txt")
    with ServerProcess(fs_command(outer, link), env=DEBUG) as server:  # the outer root first
        open_listen(server, 1, {"resourceSubscriptions": [by_link, by_real, control]})
        (outer / "a.txt").write_text("a1\n")
        wait_for(server, updated(control, 1))  # the watch is in place: what follows is not a catch-up
        (inner / "b.txt").write_text("b1\n")
        wait_for(server, updated(by_link, 1))
        wait_for(server, updated(by_real, 1))


# --- the pieces, in process ---------------------------------------------------------------------------------
# What the wire cannot reach: URI forms the library's template never lets through, and how the watch
# thread copes when watchfiles fails (driven by a stand-in for watchfiles).


@pytest.mark.req("FS-RESOURCE-URI-STRICT")
@pytest.mark.parametrize(("uri", "path"), [
    ("file:///r/a%20b.txt", "/r/a b.txt"),
    ("file://localhost/r/a.txt", "/r/a.txt"),
    ("file:/r/a.txt", "/r/a.txt"),  # the RFC 8089 minimal form
    ("file://host/r/a.txt", None),
    ("file:r/a.txt", None),
    ("http:///r/a.txt", None),
    ("file:///r/%C3", None),  # not UTF-8 once decoded
])
def test_uri_parsing_accepts_only_local_absolute_file_uris(uri: str, path: str | None) -> None:
    from mcp_ref_fs.resources import uri_path

    if path is None:
        with pytest.raises(ValueError):
            uri_path(uri)
    else:
        assert uri_path(uri) == path


def watcher_over(root: Path) -> tuple[Any, Recorder]:
    from mcp_ref_fs.root import Sandbox
    from mcp_ref_fs.watch import Watcher

    recorder = Recorder()
    return Watcher(recorder, Sandbox.open([str(root)])), recorder  # type: ignore[arg-type]


def stop_watching(watcher: Any) -> None:
    from mcp_ref.features.watch import WatchSet

    thread = watcher._thread
    watcher.update(WatchSet())
    if thread is not None:
        thread.join(5)
        assert not thread.is_alive()


@pytest.mark.req("FS-WATCH-LIFETIME")
def test_subscriptions_to_uris_outside_the_roots_start_no_watch(tree: Path) -> None:
    from mcp_ref.features.watch import WatchSet

    watcher, _recorder = watcher_over(tree)
    watcher.update(WatchSet(frozenset({"note://x", "file:///etc/passwd", "file:///r/%2e%2e/x"}), frozenset({"tools"})))
    assert not watcher.running
    assert watcher._uri_of("/elsewhere/a.txt") is None
    assert watcher._uri_of(os.fsdecode(os.fsencode(tree) + b"/\xff.txt")) is None  # no URI for such a name


@pytest.mark.req("FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_a_watch_that_fails_on_a_batch_is_rebuilt_and_announces_what_the_batch_held(
        tree: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import types
    import watchfiles

    from mcp_ref.features.watch import WatchSet

    attempts: list[int] = []

    def watch(*paths: str, stop_event: Any, **options: Any) -> Iterator[set[Any]]:
        attempts.append(len(attempts))
        stop_event.is_set()  # the watch is in place
        if len(attempts) == 1:
            (tree / "a.txt").write_text("changed while watchfiles was failing\n")
            raise RuntimeError('Unable to decode path "\\xff" to string')
        yield {(watchfiles.Change.modified, str(tree / "b.txt"))}
        while not stop_event.is_set():
            time.sleep(0.01)

    monkeypatch.setitem(sys.modules, "watchfiles", types.SimpleNamespace(watch=watch))
    watcher, recorder = watcher_over(tree)
    a, b = file_uri(tree / "a.txt"), file_uri(tree / "b.txt")
    time.sleep(0.1)  # the tree is older than the watch's clock slack: it starts with nothing to catch up
    with caplog.at_level(logging.DEBUG, logger="mcp_ref_fs.watch"):
        watcher.update(WatchSet(frozenset({a, b})))
        deadline = time.monotonic() + 5
        while len(recorder.updated) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        stop_watching(watcher)
    assert sorted(recorder.updated) == [a, b]  # a: caught up after the failure; b: the next batch
    assert len(attempts) == 2
    assert "watching again" in caplog.text and "watch stopped" in caplog.text


@pytest.mark.req("FS-WATCH-LIFETIME")
def test_a_watch_that_cannot_be_set_up_gives_up_after_a_few_tries(
        tree: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import types

    from mcp_ref.features.watch import WatchSet
    from mcp_ref_fs.watch import MAX_RESTARTS

    attempts: list[int] = []

    def watch(*paths: str, stop_event: Any, **options: Any) -> Iterator[set[Any]]:
        attempts.append(len(attempts))
        raise FileNotFoundError("a root vanished")
        yield set()  # pragma: no cover - a generator that fails at once

    monkeypatch.setitem(sys.modules, "watchfiles", types.SimpleNamespace(watch=watch))
    watcher, recorder = watcher_over(tree)
    with caplog.at_level(logging.DEBUG, logger="mcp_ref_fs.watch"):
        watcher.update(WatchSet(frozenset({file_uri(tree / "a.txt")})))
        watcher._thread.join(5)
    assert len(attempts) == MAX_RESTARTS + 1
    assert not watcher.running
    assert "file watching failed; subscriptions will not see changes" in caplog.text
    assert recorder.updated == []


@pytest.mark.req("FS-SUBSCRIBE-EXTERNAL-CHANGE")
def test_a_subscribed_file_absent_throughout_counts_as_changed_only_if_the_nearest_directory_above_changed(tree: Path) -> None:
    watcher, _recorder = watcher_over(tree)
    gone, nowhere = file_uri(tree / "dir" / "gone.txt"), file_uri(tree / "no-such-dir" / "deeper" / "gone.txt")
    before = time.time_ns()
    os.utime(tree, ns=(before - 10**11, before - 10**11))  # the root: last modified 100 s ago
    assert not watcher._changed_since(gone, None, before + 10**12)  # directory untouched since
    assert watcher._changed_since(gone, None, before - 10**12)
    # No directory of its own: the root above decides (a directory holding it was moved away, say).
    assert not watcher._changed_since(nowhere, None, before - 10**10)
    assert watcher._changed_since(nowhere, None, before - 10**12)
    through_a_link = file_uri(tree / "escape" / "gone.txt")
    (tree / "escape").symlink_to(tree.parent)  # leaves the root: never looked at, never counts
    assert not watcher._changed_since(through_a_link, None, 0)


@pytest.mark.req("FS-WATCH-OFF-LOOP")
def test_update_does_no_disk_work_on_the_event_loop_however_many_uris_are_subscribed(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of subscribed URIs whose resolution is expensive (a chain of links each) are put in
    canonical form on the loop (string work) and fingerprinted by the watch thread."""
    import threading

    from mcp_ref.features.watch import WatchSet
    from mcp_ref_fs.root import Sandbox

    calls: list[tuple[str, str]] = []  # (method, thread name)
    for name in ("stat", "identity", "open_file", "open_directory", "list_directory", "walk"):
        def recording(*args: Any, _real: Callable[..., Any] = getattr(Sandbox, name), _name: str = name, **kwargs: Any) -> Any:
            calls.append((_name, threading.current_thread().name))
            return _real(*args, **kwargs)

        monkeypatch.setattr(Sandbox, name, recording)
    (tree / "chain").mkdir()
    for index in range(30):  # link30 -> link29 -> ... -> link0 -> dir
        (tree / "chain" / f"link{index}").symlink_to("../dir" if index == 0 else f"link{index - 1}")
    uris = [file_uri(tree / "chain" / f"link{index % 30}" / f"f{index}.txt") for index in range(2000)]
    watcher, _recorder = watcher_over(tree)
    try:
        started = time.perf_counter()
        watcher.update(WatchSet(frozenset(uris), frozenset({"resources"})))
        first = time.perf_counter() - started
        assert watcher.running
        started = time.perf_counter()
        watcher.update(WatchSet(frozenset(uris[:1000]), frozenset({"resources"})))  # a stream ended
        again = time.perf_counter() - started
        on_the_loop = [call for call in calls if call[1] == threading.current_thread().name]
        assert on_the_loop == []
        assert first < 1.0 and again < 0.2, (first, again)
        deadline = time.monotonic() + 10
        while not any(name == "stat" for name, _thread in calls) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert {thread for _name, thread in calls} == {"mcp-ref-fs-watch"}  # the thread did the disk work
    finally:
        stop_watching(watcher)
