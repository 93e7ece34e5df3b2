"""Every tool of mcp-ref-fs, over real stdio: ``python -m mcp_ref_fs ROOT`` in a subprocess.

Each test proves one behaviour, named by the test. The trees come from ``tests/fs/conftest.py``:
``fs_tree``/``fs_server`` are shared by the module and never changed (reads, listings, searches);
tests that change the disk get a ``fresh_tree`` and a server of their own (``start_fs``). Every
line the server writes is checked against the official 2026-07-28 schema by ``tests.wire``
(the legacy test against 2025-11-25), and the library checks structuredContent against each
tool's outputSchema before sending it.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import stat
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.fs.conftest import BIG_LINES, BIG_SIZE, SECRET, Tree, temp_files, tiny_png, wav_bytes
from tests.wire import (
    ServerProcess,
    cancel,
    error_of,
    is_response,
    modern_request,
    notification,
    result_of,
    tool_call,
)

Start = Callable[..., ServerProcess]

ALL_TOOLS = [
    "read_text_file", "read_file", "read_media_file", "read_multiple_files", "write_file", "edit_file",
    "create_directory", "list_directory", "list_directory_with_sizes", "directory_tree", "move_file",
    "search_files", "get_file_info", "list_allowed_directories", "delete_file", "grep_files",
]  # fmt: skip
MUTATING_TOOLS = ["write_file", "edit_file", "create_directory", "move_file", "delete_file"]
ELICIT = {"elicitation": {"form": {}}}
ACCEPT = {"confirm_delete": {"action": "accept", "content": {"confirm": True}}}
DECLINE = {"confirm_delete": {"action": "decline"}}

_ids = itertools.count(1)


# --- helpers --------------------------------------------------------------------------------------


def respond(server: ServerProcess, name: str, arguments: dict[str, Any] | None = None, *, timeout: float = 10.0,
            **options: Any) -> dict[str, Any]:
    """Call a tool (modern era); return the whole response."""
    return server.request(tool_call(next(_ids), name, arguments or {}, **options), timeout=timeout)


def ok(server: ServerProcess, name: str, arguments: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """The result of a call that must succeed (not a tool error)."""
    result = result_of(respond(server, name, arguments, **options))
    assert not result.get("isError"), result
    return result


def failure(server: ServerProcess, name: str, arguments: dict[str, Any] | None = None, **options: Any) -> str:
    """The text of a call that must be a tool error (a result with isError: true)."""
    response = respond(server, name, arguments, **options)
    result = result_of(response)
    assert result.get("isError") is True, result
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


TEXT_TOOLS = {"read_text_file", "read_file", "read_multiple_files", "list_directory", "list_directory_with_sizes",
              "directory_tree", "search_files", "grep_files", "read_media_file"}


def text_of(result: dict[str, Any]) -> str:
    assert result["content"][0]["type"] == "text", result
    return result["content"][0]["text"]


def notes_of(result: dict[str, Any]) -> list[str]:
    return [block["text"] for block in result["content"][1:] if block["type"] == "text"]


def assert_no_secret(server: ServerProcess) -> None:
    """The outside secret appears in nothing the server wrote, stdout or stderr."""
    assert SECRET not in json.dumps(server.received)
    assert SECRET not in server.stderr_text()


# --- tools/list -------------------------------------------------------------------------------------


def list_tools(server: ServerProcess) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor = None
    while True:
        result = result_of(server.request(modern_request(next(_ids), "tools/list", {"cursor": cursor} if cursor else {})))
        tools += result["tools"]
        cursor = result.get("nextCursor")
        if not cursor:
            return tools


@pytest.mark.req("FS-TOOL-NAMES-COMPATIBLE")
def test_tools_list_offers_every_official_tool_name_plus_delete_and_grep(fs_server: ServerProcess) -> None:
    names = [tool["name"] for tool in list_tools(fs_server)]
    assert sorted(names) == sorted(ALL_TOOLS)


@pytest.mark.req("TOOLS-DEFINITION-FIELDS")
@pytest.mark.parametrize("name", ALL_TOOLS)
def test_every_tool_has_a_description_annotations_and_an_output_schema_except_media(fs_server: ServerProcess, name: str) -> None:
    tool = next(t for t in list_tools(fs_server) if t["name"] == name)
    assert len(tool["description"]) > 40
    assert tool["inputSchema"]["type"] == "object"
    annotations = tool["annotations"]
    assert annotations["openWorldHint"] is False
    if name in MUTATING_TOOLS:
        assert annotations["readOnlyHint"] is False and "destructiveHint" in annotations
    else:
        assert annotations["readOnlyHint"] is True
    if name in TEXT_TOOLS:
        assert "outputSchema" not in tool  # FS-TEXT-ONCE: the text reaches the model once
    else:
        assert tool["outputSchema"]["type"] == "object" and "content" in tool["outputSchema"]["required"]


@pytest.mark.req("FS-TOOL-NAMES-COMPATIBLE")
def test_the_official_argument_names_are_accepted(fs_server: ServerProcess) -> None:
    schemas = {tool["name"]: tool["inputSchema"] for tool in list_tools(fs_server)}
    official = {
        "read_text_file": {"path", "head", "tail"}, "read_file": {"path", "head", "tail"}, "read_media_file": {"path"},
        "read_multiple_files": {"paths"}, "write_file": {"path", "content"}, "edit_file": {"path", "edits", "dryRun"},
        "create_directory": {"path"}, "list_directory": {"path"}, "list_directory_with_sizes": {"path", "sortBy"},
        "directory_tree": {"path", "excludePatterns"}, "move_file": {"source", "destination"},
        "search_files": {"path", "pattern", "excludePatterns"}, "get_file_info": {"path"}, "list_allowed_directories": set(),
    }  # fmt: skip
    for name, arguments in official.items():
        assert arguments <= set(schemas[name]["properties"]), name
    assert set(schemas["edit_file"]["properties"]["edits"]["items"]["properties"]) == {"oldText", "newText"}


READ_ONLY_CALLS = [
    ("read_text_file", lambda t: {"path": t.arg("hello.txt")}),
    ("read_file", lambda t: {"path": t.arg("hello.txt")}),
    ("read_multiple_files", lambda t: {"paths": [t.arg("hello.txt"), t.arg("missing.txt")]}),
    ("list_directory", lambda t: {"path": str(t.root)}),
    ("list_directory_with_sizes", lambda t: {"path": str(t.root), "sortBy": "size"}),
    ("directory_tree", lambda t: {"path": t.arg("nested")}),
    ("search_files", lambda t: {"path": str(t.root), "pattern": "**/*.py"}),
    ("grep_files", lambda t: {"path": str(t.root), "pattern": "TODO", "contextLines": 1}),
    ("get_file_info", lambda t: {"path": t.arg("hello.txt")}),
    ("list_allowed_directories", lambda t: {}),
]
MUTATING_CALLS = [
    ("write_file", lambda t: {"path": t.arg("new.txt"), "content": "new\n"}),
    ("edit_file", lambda t: {"path": t.arg("hello.txt"), "edits": [{"oldText": "world", "newText": "there"}]}),
    ("create_directory", lambda t: {"path": t.arg("made/here")}),
    ("move_file", lambda t: {"source": t.arg("hello.txt"), "destination": t.arg("moved.txt")}),
]


@pytest.mark.req("TOOLS-OUTPUT-SCHEMA-CONFORMS", "FS-TEXT-IS-STRUCTURED-CONTENT", "FS-TEXT-ONCE")
@pytest.mark.parametrize(("name", "arguments"), READ_ONLY_CALLS, ids=[c[0] for c in READ_ONLY_CALLS])
def test_text_tools_send_their_text_once_and_the_others_mirror_it_in_structured_content(
        fs_server: ServerProcess, fs_tree: Tree, name: str, arguments: Callable[[Tree], dict[str, Any]]) -> None:
    result = ok(fs_server, name, arguments(fs_tree))
    if name in TEXT_TOOLS:
        assert "structuredContent" not in result and text_of(result)
    else:
        assert result["structuredContent"]["content"] == text_of(result)


@pytest.mark.req("TOOLS-OUTPUT-SCHEMA-CONFORMS", "FS-TEXT-IS-STRUCTURED-CONTENT")
def test_structured_content_of_changing_tools_carries_the_text_block_as_content(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    for name, arguments in MUTATING_CALLS:
        result = ok(server, name, arguments(fresh_tree))
        assert result["structuredContent"]["content"] == text_of(result), name


# --- read_text_file ---------------------------------------------------------------------------------


@pytest.mark.req("FS-READ-WINDOWS")
def test_read_text_file_returns_the_whole_file(fs_server: ServerProcess, fs_tree: Tree) -> None:
    result = ok(fs_server, "read_text_file", {"path": fs_tree.arg("hello.txt")})
    assert text_of(result) == "hello world\nsecond line\nthird line\n"
    assert notes_of(result) == []  # a whole file needs no cue


@pytest.mark.req("FS-TOOL-NAMES-COMPATIBLE")
def test_read_file_is_the_deprecated_alias_of_read_text_file(fs_server: ServerProcess, fs_tree: Tree) -> None:
    result = ok(fs_server, "read_file", {"path": fs_tree.arg("numbers.txt"), "head": 2})
    assert text_of(result) == "n1\nn2\n"


READ_WINDOWS = [
    pytest.param("hello.txt", {"head": 2}, "hello world\nsecond line\n", id="head"),
    pytest.param("hello.txt", {"head": 0}, "", id="head-0"),
    pytest.param("hello.txt", {"head": 99}, "hello world\nsecond line\nthird line\n", id="head-beyond-the-end"),
    pytest.param("hello.txt", {"tail": 2}, "second line\nthird line\n", id="tail-with-trailing-newline"),
    pytest.param("no_newline.txt", {"tail": 2}, "two\nthree", id="tail-without-trailing-newline"),
    pytest.param("no_newline.txt", {"tail": 1}, "three", id="tail-1-without-trailing-newline"),
    pytest.param("no_newline.txt", {"head": 3}, "one\ntwo\nthree", id="head-without-trailing-newline"),
    pytest.param("numbers.txt", {"offset": 5, "limit": 3}, "n6\nn7\nn8\n", id="offset-limit"),
    pytest.param("numbers.txt", {"offset": 18}, "n19\nn20\n", id="offset-to-the-end"),
    pytest.param("numbers.txt", {"limit": 2}, "n1\nn2\n", id="limit-from-the-start"),
    pytest.param("numbers.txt", {"offset": 50, "limit": 2}, "", id="offset-past-the-end"),
    pytest.param("bom.txt", {"head": 1}, "bommed text\n", id="head-of-a-bom-file"),
    pytest.param("crlf.txt", {"tail": 1}, "gamma\r\n", id="tail-of-a-crlf-file"),
    pytest.param("bom.txt", {"tail": 5}, "bommed text\nline two\n", id="whole-tail-of-a-bom-file"),
    pytest.param("big.txt", {"tail": 2}, f"line {BIG_LINES - 1:06d}\nline {BIG_LINES:06d}\n", id="tail-of-a-big-file"),
    pytest.param("big.txt", {"offset": BIG_LINES - 1, "limit": 5}, f"line {BIG_LINES:06d}\n", id="window-at-the-end-of-a-big-file"),
]


@pytest.mark.req("FS-READ-WINDOWS")
@pytest.mark.parametrize(("name", "window", "expected"), READ_WINDOWS)
def test_read_text_file_returns_the_asked_lines(fs_server: ServerProcess, fs_tree: Tree, name: str,
                                                window: dict[str, int], expected: str) -> None:
    result = ok(fs_server, "read_text_file", {"path": fs_tree.arg(name), **window})
    assert text_of(result) == expected


@pytest.mark.req("FS-READ-WINDOWS", "TOOLS-EXECUTION-ERROR-IS-ERROR")
@pytest.mark.parametrize("window", [{"head": 1, "tail": 1}, {"head": 1, "offset": 2}, {"tail": 1, "limit": 2}],
                         ids=["head-and-tail", "head-and-offset", "tail-and-limit"])
def test_head_or_tail_combined_with_another_window_is_a_tool_error(fs_server: ServerProcess, fs_tree: Tree,
                                                                   window: dict[str, int]) -> None:
    assert "not both" in failure(fs_server, "read_text_file", {"path": fs_tree.arg("hello.txt"), **window})


@pytest.mark.req("TOOLS-INPUT-VALIDATION-IS-ERROR")
def test_a_negative_head_is_refused_by_the_input_schema(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert "head" in failure(fs_server, "read_text_file", {"path": fs_tree.arg("hello.txt"), "head": -1})


@pytest.fixture(scope="module")
def small_read_server(fs_tree: Tree) -> Any:
    from tests.fs.conftest import fs_command

    with ServerProcess(fs_command(fs_tree.root, options=("--max-read-bytes", "1000"))) as process:
        yield process


@pytest.mark.req("FS-READ-CAP")
def test_a_big_file_is_cut_at_max_read_bytes_with_a_note_naming_its_size(small_read_server: ServerProcess,
                                                                          fs_tree: Tree) -> None:
    result = ok(small_read_server, "read_text_file", {"path": fs_tree.arg("big.txt")})
    body = text_of(result)
    assert 0 < len(body) <= 1000 and body.endswith("\n")
    assert body.startswith("line 000001\nline 000002\n")
    assert body.count("\n") == len(body) // 12  # whole lines only
    (note,) = notes_of(result)
    shown = body.count("\n")
    assert f"{BIG_SIZE:,} bytes" in note and f"Lines 1-{shown:,} of {BIG_LINES:,} (cut to fit this answer" in note
    assert note.endswith(f'Next page: read_text_file {{"path": "{fs_tree.arg("big.txt")}", "offset": {shown}, "limit": {shown}}}]')


@pytest.mark.req("FS-READ-CAP")
def test_a_tail_longer_than_max_read_bytes_keeps_the_last_lines(small_read_server: ServerProcess, fs_tree: Tree) -> None:
    result = ok(small_read_server, "read_text_file", {"path": fs_tree.arg("big.txt"), "tail": 200_000})
    body = text_of(result)
    assert 0 < len(body) <= 1000
    assert body.endswith(f"line {BIG_LINES:06d}\n")
    assert body.startswith("line ")  # starts at a line boundary
    (note,) = notes_of(result)
    shown = body.count("\n")
    assert f"{BIG_SIZE:,} bytes" in note and f"Lines {BIG_LINES - shown + 1:,}-{BIG_LINES:,} of {BIG_LINES:,}" in note
    wanted = BIG_LINES - 200_000  # where the asked-for tail begins: the earlier lines are those up to the cut
    assert f'"offset": {wanted}, "limit": {BIG_LINES - shown - wanted}' in note


@pytest.mark.req("FS-READ-CAP")
def test_a_head_window_beyond_max_read_bytes_is_cut_too(small_read_server: ServerProcess, fs_tree: Tree) -> None:
    result = ok(small_read_server, "read_text_file", {"path": fs_tree.arg("big.txt"), "offset": 1000, "limit": 5000})
    body = text_of(result)
    assert body.startswith("line 001001\n") and len(body) <= 1000
    shown = body.count("\n")
    (note,) = notes_of(result)
    assert f"Lines 1,001-{1000 + shown:,} of {BIG_LINES:,} (cut" in note
    assert f'"offset": {1000 + shown}, "limit": {shown}' in note


@pytest.mark.req("FS-READ-CAP")
def test_a_cut_never_splits_a_multibyte_character(fresh_tree: Tree, start_fs: Start) -> None:
    (fresh_tree / "accents.txt").write_text("é" * 1000)  # one line of 2000 bytes
    server = start_fs(fresh_tree.root, options=("--max-read-bytes", "1001"))
    result = ok(server, "read_text_file", {"path": fresh_tree.arg("accents.txt")})
    assert text_of(result) == "é" * 500
    (note,) = notes_of(result)
    assert "Lines 1-1 of 1 (cut" in note and "line 1 is longer than one answer holds" in note


@pytest.mark.req("FS-BINARY-REFUSED")
@pytest.mark.parametrize("name", ["image.png", "random.bin", "sound.wav"])
def test_read_text_file_refuses_a_binary_file_and_points_to_read_media_file(fs_server: ServerProcess, fs_tree: Tree,
                                                                            name: str) -> None:
    assert "read_media_file" in failure(fs_server, "read_text_file", {"path": fs_tree.arg(name)})


@pytest.mark.req("FS-BINARY-REFUSED")
def test_read_text_file_refuses_invalid_utf8(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert "UTF-8" in failure(fs_server, "read_text_file", {"path": fs_tree.arg("invalid.txt")})


@pytest.mark.req("FS-BINARY-REFUSED")
def test_invalid_utf8_beyond_the_sniffed_start_is_refused_too(fresh_tree: Tree, start_fs: Start) -> None:
    (fresh_tree / "late.txt").write_bytes(b"fine text line\n" * 1000 + b"\xff\xfe broken\n")
    server = start_fs(fresh_tree.root, options=("--max-answer-bytes", "100000"))  # one page holds it all
    assert "UTF-8" in failure(server, "read_text_file", {"path": fresh_tree.arg("late.txt")})


@pytest.mark.req("FS-READ-WINDOWS")
def test_read_text_file_strips_a_byte_order_mark(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert text_of(ok(fs_server, "read_text_file", {"path": fs_tree.arg("bom.txt")})) == "bommed text\nline two\n"


def test_read_text_file_keeps_crlf_line_endings(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert text_of(ok(fs_server, "read_text_file", {"path": fs_tree.arg("crlf.txt")})) == "alpha\r\nbeta\r\ngamma\r\n"


@pytest.mark.req("FS-RELATIVE-PATHS")
@pytest.mark.parametrize(("path", "expected"), [
    ("hello.txt", "hello world\nsecond line\nthird line\n"),
    ("nested/readme.txt", "nested readme\n"),
    ("./nested/a/../readme.txt", "nested readme\n"),
    ("~", "a file named tilde\n"),
])  # fmt: skip
def test_a_relative_path_resolves_against_the_first_root_and_tilde_is_a_plain_name(
    fs_server: ServerProcess, path: str, expected: str
) -> None:
    assert text_of(ok(fs_server, "read_text_file", {"path": path})) == expected


def test_read_text_file_of_an_empty_file_is_empty_text(fresh_tree: Tree, start_fs: Start) -> None:
    (fresh_tree / "empty.txt").touch()
    server = start_fs(fresh_tree.root)
    for window in ({}, {"head": 3}, {"tail": 3}, {"offset": 0, "limit": 3}):
        assert text_of(ok(server, "read_text_file", {"path": "empty.txt", **window})) == "", window


def test_read_text_file_refuses_a_fifo_without_blocking(fresh_tree: Tree, start_fs: Start) -> None:
    os.mkfifo(fresh_tree / "pipe")
    server = start_fs(fresh_tree.root)
    assert "not a regular file" in failure(server, "read_text_file", {"path": "pipe"})
    assert text_of(ok(server, "read_text_file", {"path": "hello.txt"})).startswith("hello")


def test_read_text_file_on_a_directory_is_a_tool_error(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert "directory" in failure(fs_server, "read_text_file", {"path": fs_tree.arg("nested")})


@pytest.mark.req("TOOLS-EXECUTION-ERROR-IS-ERROR")
def test_read_text_file_on_a_missing_file_is_a_tool_error(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert "No such file" in failure(fs_server, "read_text_file", {"path": fs_tree.arg("missing.txt")})


def test_read_text_file_follows_a_link_inside_the_root(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert text_of(ok(fs_server, "read_text_file", {"path": fs_tree.arg("link_to_hello")})).startswith("hello world")


ESCAPES = [
    pytest.param(lambda t: str(t.outside / "secret.txt"), id="absolute-outside"),
    pytest.param(lambda t: f"{t.root}/../outside/secret.txt", id="dotdot"),
    pytest.param(lambda t: "../outside/secret.txt", id="relative-dotdot"),
    pytest.param(lambda t: t.arg("escape_file"), id="file-symlink"),
    pytest.param(lambda t: t.arg("escape_dir/secret.txt"), id="directory-symlink"),
    pytest.param(lambda t: t.arg("escape_dir/inner/secret2.txt"), id="through-directory-symlink"),
    pytest.param(lambda t: t.arg("link_to_nested/../escape_dir/secret.txt"), id="lexical-dotdot-after-link"),
]


@pytest.mark.req("FS-ACCESS-DENIED", "TOOLS-EXECUTION-ERROR-IS-ERROR")
@pytest.mark.parametrize("path", ESCAPES)
def test_read_text_file_outside_the_root_is_access_denied_and_reveals_nothing(
    fs_server: ServerProcess, fs_tree: Tree, path: Callable[[Tree], str]
) -> None:
    assert "Access denied" in failure(fs_server, "read_text_file", {"path": path(fs_tree)})
    assert_no_secret(fs_server)


# --- read_media_file --------------------------------------------------------------------------------


@pytest.mark.req("FS-MEDIA-TYPES")
def test_read_media_file_returns_a_png_as_an_image_block_with_the_exact_bytes(fs_server: ServerProcess,
                                                                               fs_tree: Tree) -> None:
    (block, about) = ok(fs_server, "read_media_file", {"path": fs_tree.arg("image.png")})["content"]
    assert block["type"] == "image" and block["mimeType"] == "image/png"
    assert base64.b64decode(block["data"]) == tiny_png()
    assert about == {"type": "text", "text": f"{fs_tree.arg('image.png')}: image/png, {len(tiny_png())} bytes, sent as an "
                                             "image block. If it does not reach you, the host did not pass it on."}


@pytest.mark.req("FS-MEDIA-TYPES")
def test_read_media_file_returns_a_wav_as_an_audio_block(fs_server: ServerProcess, fs_tree: Tree) -> None:
    (block, about) = ok(fs_server, "read_media_file", {"path": fs_tree.arg("sound.wav")})["content"]
    assert "sent as audio block" in about["text"]
    assert block["type"] == "audio" and block["mimeType"] in ("audio/wav", "audio/x-wav", "audio/wave")
    assert base64.b64decode(block["data"]) == wav_bytes()


@pytest.mark.req("FS-MEDIA-TYPES")
def test_read_media_file_returns_other_binaries_as_an_embedded_blob_resource(fs_server: ServerProcess,
                                                                              fs_tree: Tree) -> None:
    (block, about) = ok(fs_server, "read_media_file", {"path": fs_tree.arg("random.bin")})["content"]
    assert "application/octet-stream" in about["text"] and "sent as an embedded resource block" in about["text"]
    assert block["type"] == "resource"
    resource = block["resource"]
    assert resource["uri"].startswith("file://") and resource["uri"].endswith("/random.bin")
    assert resource["mimeType"] == "application/octet-stream"
    assert base64.b64decode(resource["blob"]) == (fs_tree / "random.bin").read_bytes()


@pytest.mark.req("FS-MEDIA-CAP")
def test_read_media_file_refuses_a_file_over_max_media_bytes(fs_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fs_tree.root, options=("--max-media-bytes", "1000"))
    assert "1000" in failure(server, "read_media_file", {"path": fs_tree.arg("random.bin")})
    assert ok(server, "read_media_file", {"path": fs_tree.arg("image.png")})["content"][0]["type"] == "image"


@pytest.mark.req("FS-ACCESS-DENIED")
def test_read_media_file_through_an_escaping_link_is_access_denied(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert "Access denied" in failure(fs_server, "read_media_file", {"path": fs_tree.arg("escape_file")})
    assert_no_secret(fs_server)


# --- read_multiple_files ----------------------------------------------------------------------------


@pytest.mark.req("FS-MULTIPLE-NEVER-FAILS", "FS-BINARY-REFUSED")
def test_read_multiple_files_reports_each_file_and_never_fails_the_whole_call(fs_server: ServerProcess,
                                                                              fs_tree: Tree) -> None:
    paths = [fs_tree.arg("hello.txt"), fs_tree.arg("missing.txt"), str(fs_tree.outside / "secret.txt"),
             fs_tree.arg("image.png"), "bom.txt", ""]
    parts = text_of(ok(fs_server, "read_multiple_files", {"paths": paths})).split("\n---\n")
    assert len(parts) == 6
    assert parts[0] == f"{paths[0]}:\nhello world\nsecond line\nthird line\n\n"
    assert parts[1].startswith(f"{paths[1]}: Error - ") and "No such file" in parts[1]
    assert parts[2].startswith(f"{paths[2]}: Error - Access denied")
    assert parts[3].startswith(f"{paths[3]}: Error - ") and "read_media_file" in parts[3]
    assert parts[4] == f"{fs_tree.arg('bom.txt')}:\nbommed text\nline two\n\n"  # relative: shown under its root
    assert parts[5].startswith(": Error - ") and "non-empty" in parts[5]
    assert_no_secret(fs_server)


# --- write_file -------------------------------------------------------------------------------------


def test_write_file_creates_a_file(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    ok(server, "write_file", {"path": fresh_tree.arg("created.txt"), "content": "fresh ✓\n"})
    assert (fresh_tree / "created.txt").read_text(encoding="utf-8") == "fresh ✓\n"


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_write_file_replaces_a_file_keeping_its_permission_bits(fresh_tree: Tree, start_fs: Start) -> None:
    target = fresh_tree / "hello.txt"
    target.chmod(0o640)
    inode = target.stat().st_ino
    server = start_fs(fresh_tree.root)
    ok(server, "write_file", {"path": str(target), "content": "replaced\n"})
    assert target.read_text() == "replaced\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # a new file renamed over the old one


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_write_file_leaves_no_temporary_files(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    for index in range(3):
        ok(server, "write_file", {"path": fresh_tree.arg("hello.txt"), "content": f"version {index}\n"})
    ok(server, "write_file", {"path": fresh_tree.arg("big-write.txt"), "content": "x" * 200_000})
    failure(server, "write_file", {"path": fresh_tree.arg("nested"), "content": "onto a directory"})
    assert temp_files(fresh_tree.root) == []
    assert (fresh_tree / "big-write.txt").stat().st_size == 200_000


def test_write_file_into_a_missing_directory_is_a_tool_error(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    assert "No such" in failure(server, "write_file", {"path": fresh_tree.arg("nowhere/new.txt"), "content": "x"})
    assert not (fresh_tree / "nowhere").exists()


def test_write_file_through_a_link_inside_the_root_writes_its_target(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    ok(server, "write_file", {"path": fresh_tree.arg("link_to_hello"), "content": "via the link\n"})
    assert (fresh_tree / "hello.txt").read_text() == "via the link\n"
    assert (fresh_tree / "link_to_hello").is_symlink()


@pytest.mark.req("FS-ACCESS-DENIED")
@pytest.mark.parametrize("name", ["escape_file", "escape_dir/secret.txt", "escape_dir/new.txt", "../outside/new.txt"])
def test_write_file_through_an_escaping_path_is_access_denied_and_changes_nothing_outside(
    fresh_tree: Tree, start_fs: Start, name: str
) -> None:
    server = start_fs(fresh_tree.root)
    assert "Access denied" in failure(server, "write_file", {"path": fresh_tree.arg(name), "content": "pwned\n"})
    assert (fresh_tree.outside / "secret.txt").read_text() == SECRET + "\n"
    assert sorted(p.name for p in fresh_tree.outside.iterdir()) == ["inner", "secret.txt"]
    assert (fresh_tree / "escape_file").is_symlink()


def respond_ascii(server: ServerProcess, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool sending the JSON ASCII-escaped, so a lone surrogate travels as its legal \\ud800 escape."""
    request = tool_call(next(_ids), name, arguments)
    server.note_sent(request)
    server.send_raw(json.dumps(request).encode("ascii") + b"\n")
    return server.response(request["id"])


@pytest.mark.req("TOOLS-EXECUTION-ERROR-IS-ERROR")
@pytest.mark.parametrize(("name", "arguments"), [
    ("write_file", lambda t: {"path": t.arg("hello.txt"), "content": "bad \ud800 text"}),
    ("write_file", lambda t: {"path": t.arg("new.txt"), "content": "\udc80"}),
    ("edit_file", lambda t: {"path": t.arg("hello.txt"), "edits": [{"oldText": "world", "newText": "\ud83d"}]}),
    ("edit_file", lambda t: {"path": t.arg("hello.txt"), "edits": [{"oldText": "world", "newText": "\ud83d"}],
                             "dryRun": True}),
], ids=["write-replace", "write-create", "edit", "edit-dry-run"])  # fmt: skip
def test_text_with_a_lone_surrogate_is_a_tool_error_and_writes_nothing(fresh_tree: Tree, start_fs: Start, name: str,
                                                                        arguments: Callable[[Tree], dict[str, Any]]) -> None:
    server = start_fs(fresh_tree.root)
    result = result_of(respond_ascii(server, name, arguments(fresh_tree)))
    assert result["isError"] is True and "lone surrogate" in text_of(result)
    assert (fresh_tree / "hello.txt").read_text() == "hello world\nsecond line\nthird line\n"
    assert not (fresh_tree / "new.txt").exists() and temp_files(fresh_tree.root) == []


READ_ONLY_REFUSED = [
    ("write_file", lambda t: {"path": t.arg("hello.txt"), "content": "changed"}),
    ("edit_file", lambda t: {"path": t.arg("hello.txt"), "edits": [{"oldText": "hello", "newText": "bye"}]}),
    ("create_directory", lambda t: {"path": t.arg("newdir")}),
    ("move_file", lambda t: {"source": t.arg("hello.txt"), "destination": t.arg("moved.txt")}),
    ("delete_file", lambda t: {"path": t.arg("hello.txt")}),
]


@pytest.mark.req("FS-READ-ONLY")
@pytest.mark.parametrize(("name", "arguments"), READ_ONLY_REFUSED, ids=[c[0] for c in READ_ONLY_REFUSED])
def test_read_only_refuses_every_changing_tool_and_changes_nothing(fresh_tree: Tree, start_fs: Start, name: str,
                                                                   arguments: Callable[[Tree], dict[str, Any]]) -> None:
    before = sorted(str(p.relative_to(fresh_tree.base)) for p in fresh_tree.base.rglob("*"))
    server = start_fs(fresh_tree.root, options=("--read-only",))
    assert "read-only" in failure(server, name, arguments(fresh_tree), capabilities=ELICIT)
    assert (fresh_tree / "hello.txt").read_text() == "hello world\nsecond line\nthird line\n"
    assert sorted(str(p.relative_to(fresh_tree.base)) for p in fresh_tree.base.rglob("*")) == before


@pytest.mark.req("FS-READ-ONLY")
def test_read_only_keeps_the_changing_tools_listed_as_disabled(fs_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fs_tree.root, options=("--read-only",))
    tools = {tool["name"]: tool for tool in list_tools(server)}
    assert sorted(tools) == sorted(ALL_TOOLS)
    for name in ALL_TOOLS:
        assert tools[name]["description"].startswith("[Disabled") == (name in MUTATING_TOOLS), name
    assert text_of(ok(server, "read_text_file", {"path": "hello.txt"})).startswith("hello")


# --- edit_file --------------------------------------------------------------------------------------


@pytest.fixture
def editor(fresh_tree: Tree, start_fs: Start) -> tuple[ServerProcess, Tree]:
    return start_fs(fresh_tree.root), fresh_tree


def edit(server: ServerProcess, tree: Tree, name: str, *pairs: tuple[str, str], dry_run: bool | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"path": tree.arg(name), "edits": [{"oldText": o, "newText": n} for o, n in pairs]}
    if dry_run is not None:
        arguments["dryRun"] = dry_run
    return respond(server, "edit_file", arguments)


@pytest.mark.req("FS-EDIT-DIFF")
def test_edit_file_replaces_exact_text_and_returns_a_fenced_unified_diff(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    result = result_of(edit(server, tree, "hello.txt", ("second line", "2nd line")))
    assert not result.get("isError")
    assert (tree / "hello.txt").read_text() == "hello world\n2nd line\nthird line\n"
    body = text_of(result)
    assert body.startswith("```diff\n") and body.endswith("```\n")
    diff = result["structuredContent"]["diff"]
    assert f"--- {tree.arg('hello.txt')}\toriginal" in diff and f"+++ {tree.arg('hello.txt')}\tmodified" in diff
    assert "\n-second line\n+2nd line\n" in diff and diff in body
    assert result["structuredContent"]["applied"] is True


@pytest.mark.req("FS-EDIT-DIFF")
def test_edit_file_dry_run_shows_the_diff_and_changes_nothing(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    result = result_of(edit(server, tree, "hello.txt", ("second line", "2nd line"), dry_run=True))
    assert "+2nd line" in text_of(result) and "Dry run" in text_of(result)
    assert result["structuredContent"]["applied"] is False
    assert (tree / "hello.txt").read_text() == "hello world\nsecond line\nthird line\n"
    assert temp_files(tree.root) == []


@pytest.mark.req("FS-EDIT-TOLERANT")
def test_edit_file_matches_ignoring_indentation_and_keeps_the_files_indentation(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    (tree / "code.py").write_text("class A:\n    def f(self):\n        if x:\n            return 1\n        return 2\n")
    result = result_of(edit(server, tree, "code.py", ("if x:\n    return 1", "if y:\n    return 3\nprint('deeper')")))
    assert not result.get("isError"), result
    assert (tree / "code.py").read_text() == (
        "class A:\n    def f(self):\n        if y:\n            return 3\n        print('deeper')\n        return 2\n"
    )


@pytest.mark.req("FS-EDIT-UNIQUE")
def test_edit_file_refuses_an_ambiguous_match_naming_the_count(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    (tree / "twice.txt").write_text("same\nother\nsame\n")
    message = failure(server, "edit_file", {"path": tree.arg("twice.txt"), "edits": [{"oldText": "same", "newText": "x"}]})
    assert "2 places" in message and "lines 1, 3" in message
    assert (tree / "twice.txt").read_text() == "same\nother\nsame\n"


@pytest.mark.req("FS-EDIT-UNIQUE")
def test_edit_file_without_a_match_quotes_the_closest_candidate(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    (tree / "config.txt").write_text("alpha = 1\nbeta = 2\ngamma = 3\ndelta = 4\n")
    message = failure(server, "edit_file", {"path": tree.arg("config.txt"),
                                            "edits": [{"oldText": "beta = 20\ngamma = 3", "newText": "x"}]})
    assert "not found" in message and "closest match at lines 2-3" in message
    assert "beta = 2\ngamma = 3" in message
    assert (tree / "config.txt").read_text() == "alpha = 1\nbeta = 2\ngamma = 3\ndelta = 4\n"


@pytest.mark.req("FS-EDIT-LITERAL")
@pytest.mark.parametrize("new_text", ["$&", "$1", "\\1", "\\g<0>", "$$", "${name}", "\\n"])
def test_edit_file_inserts_new_text_literally(editor: tuple[ServerProcess, Tree], new_text: str) -> None:
    server, tree = editor
    result = result_of(edit(server, tree, "hello.txt", ("(world)"[1:-1], f"<{new_text}>")))
    assert not result.get("isError"), result
    assert (tree / "hello.txt").read_text() == f"hello <{new_text}>\nsecond line\nthird line\n"


@pytest.mark.req("FS-EDIT-LITERAL")
def test_edit_file_old_text_with_regex_characters_is_matched_literally(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    (tree / "re.txt").write_text("a.c\nabc\n(x+)*\n")
    assert not result_of(edit(server, tree, "re.txt", ("a.c", "dot"), ("(x+)*", "group"))).get("isError")
    assert (tree / "re.txt").read_text() == "dot\nabc\ngroup\n"


@pytest.mark.req("FS-EDIT-PRESERVES-ENCODING")
def test_edit_file_keeps_a_crlf_file_crlf(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    result = result_of(edit(server, tree, "crlf.txt", ("beta", "BETA\ninserted")))
    assert not result.get("isError"), result
    assert (tree / "crlf.txt").read_bytes() == b"alpha\r\nBETA\r\ninserted\r\ngamma\r\n"
    assert "\r" not in result["structuredContent"]["diff"]


@pytest.mark.req("FS-EDIT-PRESERVES-ENCODING")
def test_edit_file_keeps_a_byte_order_mark(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    assert not result_of(edit(server, tree, "bom.txt", ("bommed text", "still bommed"))).get("isError")
    assert (tree / "bom.txt").read_bytes() == b"\xef\xbb\xbfstill bommed\nline two\n"


@pytest.mark.req("FS-EDIT-DIFF")
def test_edit_file_applies_edits_in_order_each_to_the_previous_result(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    result = result_of(edit(server, tree, "hello.txt", ("hello", "goodbye"), ("goodbye world", "goodbye moon"),
                            ("third", "last")))
    assert not result.get("isError"), result
    assert (tree / "hello.txt").read_text() == "goodbye moon\nsecond line\nlast line\n"


@pytest.mark.req("FS-EDIT-UNIQUE")
def test_edit_file_is_all_or_nothing_when_a_later_edit_fails(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    message = failure(server, "edit_file", {"path": tree.arg("hello.txt"), "edits": [
        {"oldText": "hello", "newText": "goodbye"}, {"oldText": "no such text anywhere", "newText": "x"}]})
    assert "edit 2" in message
    assert (tree / "hello.txt").read_text() == "hello world\nsecond line\nthird line\n"


@pytest.mark.req("FS-BINARY-REFUSED")
def test_edit_file_refuses_a_binary_file(editor: tuple[ServerProcess, Tree]) -> None:
    server, tree = editor
    before = (tree / "image.png").read_bytes()
    assert "read_media_file" in failure(server, "edit_file", {"path": tree.arg("image.png"),
                                                              "edits": [{"oldText": "PNG", "newText": "GIF"}]})
    assert (tree / "image.png").read_bytes() == before


# --- create_directory -------------------------------------------------------------------------------


def test_create_directory_creates_missing_parents(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    ok(server, "create_directory", {"path": fresh_tree.arg("x/y/z")})
    assert (fresh_tree / "x" / "y" / "z").is_dir()


def test_create_directory_on_an_existing_directory_succeeds(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    ok(server, "create_directory", {"path": fresh_tree.arg("nested/a")})
    assert (fresh_tree / "nested" / "a" / "mod.py").exists()


def test_create_directory_over_a_file_is_a_tool_error(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    assert "not a directory" in failure(server, "create_directory", {"path": fresh_tree.arg("hello.txt/sub")})


@pytest.mark.req("FS-ACCESS-DENIED")
def test_create_directory_through_an_escaping_link_is_access_denied(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    assert "Access denied" in failure(server, "create_directory", {"path": fresh_tree.arg("escape_dir/made")})
    assert not (fresh_tree.outside / "made").exists()


# --- list_directory / list_directory_with_sizes ----------------------------------------------------


@pytest.mark.req("FS-LISTING-TAGS")
def test_list_directory_tags_files_directories_links_and_others(fresh_tree: Tree, start_fs: Start) -> None:
    os.mkfifo(fresh_tree / "pipe")
    server = start_fs(fresh_tree.root)
    lines = text_of(ok(server, "list_directory", {"path": str(fresh_tree.root)})).split("\n")
    for line in ["[FILE] hello.txt", "[DIR] nested", "[DIR] empty_dir", "[FILE] ~", "[OTHER] pipe",
                 "[LINK] escape_file", "[LINK] escape_dir", "[FILE] link_to_hello", "[DIR] link_to_nested"]:
        assert line in lines
    assert lines == sorted(lines, key=lambda line: line.split(" ", 1)[1])


@pytest.mark.req("FS-ENTRY-CAP")
def test_list_directory_is_cut_at_max_entries_with_a_note(fs_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fs_tree.root, options=("--max-entries", "5"))
    result = ok(server, "list_directory", {"path": str(fs_tree.root)})
    assert len(text_of(result).split("\n")) == 5
    (note,) = notes_of(result)
    assert note.startswith("[Entries 1-5 of ") and note.endswith(f'list_directory {{"path": "{fs_tree.root}", "start": 5}}]')


def test_list_directory_of_a_file_is_a_tool_error(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert "not a directory" in failure(fs_server, "list_directory", {"path": fs_tree.arg("hello.txt")})


@pytest.mark.req("FS-ACCESS-DENIED")
def test_list_directory_through_an_escaping_link_is_access_denied(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert "Access denied" in failure(fs_server, "list_directory", {"path": fs_tree.arg("escape_dir")})
    assert "secret" not in json.dumps(fs_server.received[-1])


@pytest.mark.req("FS-LISTING-TAGS")
def test_list_directory_with_sizes_sorts_by_name_and_ends_with_totals(fs_server: ServerProcess, fs_tree: Tree) -> None:
    lines = text_of(ok(fs_server, "list_directory_with_sizes", {"path": fs_tree.arg("nested"), "sortBy": "name"})).split("\n")
    assert lines[0].startswith("[DIR] a")
    assert lines[1].startswith("[FILE] code.py") and lines[1].endswith(" 34 B")
    assert lines[2].startswith("[FILE] readme.txt") and lines[2].endswith(" 14 B")
    assert lines[3:] == ["", "Total: 2 files, 1 directories", "Combined size: 48 B"]


def test_list_directory_with_sizes_sorts_by_size_largest_first(fs_server: ServerProcess, fs_tree: Tree) -> None:
    result = ok(fs_server, "list_directory_with_sizes", {"path": str(fs_tree.root), "sortBy": "size"})
    files = [line for line in text_of(result).split("\n") if line.startswith("[FILE] ")]
    assert files[0].startswith("[FILE] big.txt")
    sizes = [(fs_tree / line.split()[1]).stat().st_size for line in files]
    assert sizes == sorted(sizes, reverse=True)
    assert "Combined size: 3.00 MB" in text_of(result)


# --- directory_tree ---------------------------------------------------------------------------------


def tree_of(server: ServerProcess, path: str, **arguments: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    result = ok(server, "directory_tree", {"path": path, **arguments})
    return json.loads(text_of(result)), result


def names(nodes: list[dict[str, Any]]) -> list[str]:
    return [node["name"] for node in nodes]


def flatten(nodes: list[dict[str, Any]], prefix: str = "") -> list[str]:
    out = []
    for node in nodes:
        out.append(prefix + node["name"])
        out += flatten(node.get("children", []), prefix + node["name"] + "/")
    return out


@pytest.mark.req("FS-TOOL-NAMES-COMPATIBLE")
def test_directory_tree_is_json_of_name_type_and_children(fs_server: ServerProcess, fs_tree: Tree) -> None:
    tree, _ = tree_of(fs_server, fs_tree.arg("nested"))
    assert tree == [
        {"name": "a", "type": "directory", "children": [
            {"name": "b", "type": "directory", "children": [
                {"name": "deep.py", "type": "file"}, {"name": "deep.txt", "type": "file"}]},
            {"name": "mod.py", "type": "file"}]},
        {"name": "code.py", "type": "file"},
        {"name": "readme.txt", "type": "file"},
    ]  # fmt: skip


@pytest.mark.req("FS-EXCLUDES")
@pytest.mark.parametrize(("patterns", "gone", "kept"), [
    (["b"], ["a/b", "a/b/deep.txt"], ["a", "a/mod.py", "code.py"]),
    (["a/b"], ["a/b", "a/b/deep.py"], ["a/mod.py"]),
    (["**/*.py"], ["code.py", "a/mod.py", "a/b/deep.py"], ["a/b/deep.txt", "readme.txt"]),
    (["*.py"], ["code.py"], ["a/mod.py", "a/b/deep.py"]),
    (["*.txt", "mod.py"], ["readme.txt", "a/mod.py"], ["a/b/deep.txt", "code.py"]),
])  # fmt: skip
def test_directory_tree_exclude_patterns_take_names_anywhere_or_globs_over_the_relative_path(
    fs_server: ServerProcess, fs_tree: Tree, patterns: list[str], gone: list[str], kept: list[str]
) -> None:
    tree, _ = tree_of(fs_server, fs_tree.arg("nested"), excludePatterns=patterns)
    paths = flatten(tree)
    for path in gone:
        assert path not in paths
    for path in kept:
        assert path in paths


def test_directory_tree_max_depth_limits_the_levels(fs_server: ServerProcess, fs_tree: Tree) -> None:
    tree, _ = tree_of(fs_server, fs_tree.arg("nested"), maxDepth=2)
    assert sorted(flatten(tree)) == ["a", "a/b", "a/mod.py", "code.py", "readme.txt"]


def test_directory_tree_does_not_show_directories_below_max_depth_as_empty(fs_server: ServerProcess,
                                                                           fs_tree: Tree) -> None:
    tree, _ = tree_of(fs_server, str(fs_tree.root), maxDepth=1)
    by_name = {node["name"]: node for node in tree}
    assert "children" not in by_name["nested"]  # not entered: its contents are unknown, not empty
    assert "children" not in by_name["empty_dir"]
    tree, _ = tree_of(fs_server, str(fs_tree.root), maxDepth=2)
    assert {node["name"]: node for node in tree}["empty_dir"]["children"] == []


@pytest.mark.req("FS-ENTRY-CAP")
def test_directory_tree_is_cut_at_max_entries_with_a_note(fs_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fs_tree.root, options=("--max-entries", "5"))
    tree, result = tree_of(server, str(fs_tree.root))
    assert len(flatten(tree)) == 5
    note = notes_of(result)[0]
    assert note.startswith("[Entries 1-5 of ") and note.endswith(f'directory_tree {{"path": "{fs_tree.root}", "start": 5}}]')


@pytest.mark.req("FS-LINKS-NOT-ENTERED")
def test_directory_tree_lists_links_without_entering_them(fs_server: ServerProcess, fs_tree: Tree) -> None:
    tree, _ = tree_of(fs_server, str(fs_tree.root))
    by_name = {node["name"]: node for node in tree}
    for name in ("link_to_nested", "escape_dir", "escape_file", "link_to_hello"):
        assert by_name[name]["type"] == "symlink" and "children" not in by_name[name]
    assert "secret.txt" not in json.dumps(tree)


# --- move_file --------------------------------------------------------------------------------------


def test_move_file_renames_a_file(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    ok(server, "move_file", {"source": fresh_tree.arg("hello.txt"), "destination": fresh_tree.arg("renamed.txt")})
    assert not (fresh_tree / "hello.txt").exists()
    assert (fresh_tree / "renamed.txt").read_text().startswith("hello world")


def test_move_file_moves_into_a_subdirectory(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    ok(server, "move_file", {"source": "numbers.txt", "destination": "nested/a/numbers.txt"})
    assert (fresh_tree / "nested" / "a" / "numbers.txt").read_text().startswith("n1\n")
    assert not (fresh_tree / "numbers.txt").exists()


@pytest.mark.req("FS-MOVE-NO-OVERWRITE")
def test_move_file_onto_an_existing_destination_fails_and_keeps_both(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    assert "already exists" in failure(server, "move_file", {"source": fresh_tree.arg("hello.txt"),
                                                             "destination": fresh_tree.arg("notes.txt")})
    assert (fresh_tree / "hello.txt").read_text().startswith("hello world")
    assert (fresh_tree / "notes.txt").read_text().startswith("TODO")


@pytest.mark.req("FS-ACCESS-DENIED")
@pytest.mark.parametrize("destination", [
    lambda t: str(t.outside / "stolen.txt"), lambda t: t.arg("escape_dir/stolen.txt"), lambda t: "../outside/stolen.txt",
], ids=["absolute", "through-link", "relative-dotdot"])  # fmt: skip
def test_move_file_out_of_the_root_is_access_denied(fresh_tree: Tree, start_fs: Start,
                                                    destination: Callable[[Tree], str]) -> None:
    server = start_fs(fresh_tree.root)
    assert "Access denied" in failure(server, "move_file", {"source": fresh_tree.arg("hello.txt"),
                                                            "destination": destination(fresh_tree)})
    assert (fresh_tree / "hello.txt").exists() and not (fresh_tree.outside / "stolen.txt").exists()


@pytest.mark.req("FS-ACCESS-DENIED")
def test_move_file_from_outside_the_root_is_access_denied(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    assert "Access denied" in failure(server, "move_file", {"source": fresh_tree.arg("escape_dir/secret.txt"),
                                                            "destination": fresh_tree.arg("got.txt")})
    assert (fresh_tree.outside / "secret.txt").exists() and not (fresh_tree / "got.txt").exists()


# --- search_files -----------------------------------------------------------------------------------


def search(server: ServerProcess, tree: Tree, pattern: str, **arguments: Any) -> list[str]:
    text = text_of(ok(server, "search_files", {"path": str(tree.root), "pattern": pattern, **arguments}))
    return [] if text == "No matches found" else [line.removeprefix(str(tree.root) + "/") for line in text.split("\n")]


@pytest.mark.req("FS-GLOB-RELATIVE", "FS-EXCLUDES", "FS-LINKS-NOT-ENTERED")
@pytest.mark.parametrize(("pattern", "excludes", "expected"), [
    ("**/*.py", [], ["nested/a/b/deep.py", "nested/a/mod.py", "nested/code.py", "top.py"]),
    ("*.py", [], ["top.py"]),
    ("*.txt", [], ["big.txt", "bom.txt", "crlf.txt", "hello.txt", "invalid.txt", "no_newline.txt", "notes.txt",
                   "numbers.txt"]),
    ("nested/*", [], ["nested/a", "nested/code.py", "nested/readme.txt"]),
    ("**/deep.*", [], ["nested/a/b/deep.py", "nested/a/b/deep.txt"]),
    ("**/*.{py,txt}", ["big.txt", "nested", "*.txt"], ["top.py"]),
    ("**/*.py", ["a"], ["nested/code.py", "top.py"]),
    ("**/*.py", ["**/mod.py"], ["nested/a/b/deep.py", "nested/code.py", "top.py"]),
])  # fmt: skip
def test_search_files_matches_globs_against_paths_relative_to_the_search_directory(
    fs_server: ServerProcess, fs_tree: Tree, pattern: str, excludes: list[str], expected: list[str]
) -> None:
    assert sorted(search(fs_server, fs_tree, pattern, excludePatterns=excludes)) == expected


@pytest.mark.req("FS-GLOB-RELATIVE")
def test_search_files_returns_full_paths(fs_server: ServerProcess, fs_tree: Tree) -> None:
    result = ok(fs_server, "search_files", {"path": fs_tree.arg("nested"), "pattern": "*.py"})
    assert text_of(result) == fs_tree.arg("nested/code.py") and notes_of(result) == []


@pytest.mark.req("FS-GLOB-RELATIVE")
def test_search_files_without_a_match_says_no_matches_found(fs_server: ServerProcess, fs_tree: Tree) -> None:
    result = ok(fs_server, "search_files", {"path": str(fs_tree.root), "pattern": "**/*.nothing"})
    assert text_of(result) == "No matches found"


@pytest.mark.req("FS-ENTRY-CAP")
def test_search_files_stops_at_max_results_with_a_note(fs_server: ServerProcess, fs_tree: Tree) -> None:
    result = ok(fs_server, "search_files", {"path": str(fs_tree.root), "pattern": "**/*", "maxResults": 3})
    assert len(text_of(result).split("\n")) == 3
    assert notes_of(result)[0].startswith("[Matches 1-3 of ") and '"maxResults": 3, "start": 3}]' in notes_of(result)[0]


def test_search_files_with_an_invalid_glob_is_a_tool_error(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert "glob" in failure(fs_server, "search_files", {"path": str(fs_tree.root), "pattern": "[abc"}).lower()


# --- grep_files -------------------------------------------------------------------------------------


def grep(server: ServerProcess, tree: Tree, pattern: str, **arguments: Any) -> dict[str, Any]:
    return ok(server, "grep_files", {"path": str(tree.root), "pattern": pattern, **arguments})


def grep_lines(server: ServerProcess, tree: Tree, pattern: str, **arguments: Any) -> list[str]:
    text = text_of(grep(server, tree, pattern, **arguments))
    return [] if text == "No matches found" else [line.replace(str(tree.root) + "/", "") for line in text.split("\n")]


@pytest.mark.req("FS-GREP-LITERAL", "FS-LINKS-NOT-ENTERED")
def test_grep_files_finds_regex_matches_as_path_line_text(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert grep_lines(fs_server, fs_tree, r"TO+DO\b") == [
        "nested/a/b/deep.txt:2: TODO: deep", "nested/code.py:2:     return 1  # TODO fix", "notes.txt:1: TODO: write tests",
    ]  # fmt: skip


@pytest.mark.req("FS-GREP-LITERAL")
def test_grep_files_literal_treats_the_pattern_as_plain_text(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert grep_lines(fs_server, fs_tree, "os.s.p", glob="*.py") == ["top.py:4:     return os.sep"]
    assert grep_lines(fs_server, fs_tree, "os.s.p", glob="*.py", literal=True) == []
    assert grep_lines(fs_server, fs_tree, "os.sep", glob="*.py", literal=True) == ["top.py:4:     return os.sep"]


@pytest.mark.req("FS-GREP-LITERAL")
def test_grep_files_ignore_case(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert grep_lines(fs_server, fs_tree, "foo", glob="notes.txt") == ["notes.txt:2: foo bar"]
    assert grep_lines(fs_server, fs_tree, "foo", glob="notes.txt", ignoreCase=True) == ["notes.txt:2: foo bar",
                                                                                         "notes.txt:3: Foo Baz"]


@pytest.mark.req("FS-GREP-LITERAL")
def test_grep_files_glob_restricts_the_files_searched(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert grep_lines(fs_server, fs_tree, "TODO", glob="**/*.py") == ["nested/code.py:2:     return 1  # TODO fix"]


@pytest.mark.req("FS-EXCLUDES")
def test_grep_files_exclude_patterns_skip_paths(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert grep_lines(fs_server, fs_tree, "TODO", excludePatterns=["nested"]) == ["notes.txt:1: TODO: write tests"]


@pytest.mark.req("FS-GREP-CONTEXT")
def test_grep_files_context_lines_use_dashes_and_separate_groups(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert grep_lines(fs_server, fs_tree, r"^n(5|15)$", glob="numbers.txt", contextLines=1) == [
        "numbers.txt-4- n4", "numbers.txt:5: n5", "numbers.txt-6- n6", "--",
        "numbers.txt-14- n14", "numbers.txt:15: n15", "numbers.txt-16- n16",
    ]  # fmt: skip


@pytest.mark.req("FS-GREP-CONTEXT")
def test_grep_files_adjacent_matches_form_one_group(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert grep_lines(fs_server, fs_tree, r"^n(5|6|9)$", glob="numbers.txt", contextLines=1) == [
        "numbers.txt-4- n4", "numbers.txt:5: n5", "numbers.txt:6: n6", "numbers.txt-7- n7",
        "numbers.txt-8- n8", "numbers.txt:9: n9", "numbers.txt-10- n10",
    ]  # fmt: skip


@pytest.mark.req("FS-GREP-CONTEXT")
def test_grep_files_separates_groups_of_different_files(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert grep_lines(fs_server, fs_tree, "^deep down$|^nested readme$", contextLines=1) == [
        "nested/a/b/deep.txt:1: deep down", "nested/a/b/deep.txt-2- TODO: deep", "--", "nested/readme.txt:1: nested readme",
    ]  # fmt: skip


@pytest.mark.req("FS-ENTRY-CAP")
def test_grep_files_stops_at_max_results_with_a_note(fs_server: ServerProcess, fs_tree: Tree) -> None:
    result = grep(fs_server, fs_tree, "^n", glob="numbers.txt", maxResults=3)
    assert text_of(result).split("\n") == [fs_tree.arg("numbers.txt") + f":{i}: n{i}" for i in (1, 2, 3)]
    assert notes_of(result)[0].startswith("[Matching lines 1-3; more follow. Next page: grep_files ")
    assert notes_of(result)[0].endswith('"maxResults": 3, "start": 3}]')


@pytest.mark.req("FS-ENTRY-CAP")
def test_grep_files_with_exactly_max_results_matches_is_not_cut(fs_server: ServerProcess, fs_tree: Tree) -> None:
    result = grep(fs_server, fs_tree, "^n1[0-2]$", glob="numbers.txt", maxResults=3)
    assert len(text_of(result).split("\n")) == 3 and notes_of(result) == []


@pytest.mark.req("FS-BINARY-REFUSED")
def test_grep_files_skips_binary_files(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert (fs_tree / "image.png").read_bytes().find(b"IHDR") > 0
    result = grep(fs_server, fs_tree, "IHDR")
    assert text_of(result) == "No matches found"


def test_grep_files_with_an_invalid_regex_is_a_tool_error(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert "Invalid pattern" in failure(fs_server, "grep_files", {"path": str(fs_tree.root), "pattern": "(unclosed"})


@pytest.mark.req("FS-SEARCH-TIME-LIMIT")
def test_grep_files_stops_a_pathological_regex_at_the_time_limit(fresh_tree: Tree, start_fs: Start) -> None:
    (fresh_tree / "aaa.txt").write_text("a" * 50_000 + "b\n")
    # The backtracking engine (RE2 matches this pattern in linear time: tests/fs/test_fs_grep_engines.py).
    server = start_fs(fresh_tree.root, options=("--search-seconds", "1"), env={"MCP_REF_FS_GREP": "regex"})
    started = time.monotonic()
    result = result_of(respond(server, "grep_files", {"path": str(fresh_tree.root), "pattern": "(a+)+$",
                                                      "glob": "aaa.txt"}, timeout=15))
    assert time.monotonic() - started < 15
    assert not result.get("isError"), result
    assert any(note.startswith("[Stopped at the 1 s time limit") for note in notes_of(result)), notes_of(result)


# --- get_file_info / list_allowed_directories -------------------------------------------------------


def info_of(server: ServerProcess, path: str) -> dict[str, str]:
    result = ok(server, "get_file_info", {"path": path})
    fields = dict(line.split(": ", 1) for line in text_of(result).split("\n"))
    return {**fields, "_type": result["structuredContent"]["type"], "_size": result["structuredContent"]["size"]}


def test_get_file_info_reports_size_times_type_and_permissions(fresh_tree: Tree, start_fs: Start) -> None:
    target = fresh_tree / "hello.txt"
    target.chmod(0o640)
    server = start_fs(fresh_tree.root)
    fields = info_of(server, str(target))
    assert fields["size"] == str(target.stat().st_size) and fields["_size"] == target.stat().st_size
    assert fields["isFile"] == "true" and fields["isDirectory"] == "false" and fields["_type"] == "file"
    assert fields["permissions"] == "640"
    for key in ("created", "modified", "accessed"):
        assert fields[key].endswith("Z") and fields[key][:4].isdigit()
    assert set(fields) >= {"size", "created", "modified", "accessed", "isDirectory", "isFile", "permissions"}


def test_get_file_info_of_a_directory(fs_server: ServerProcess, fs_tree: Tree) -> None:
    fields = info_of(fs_server, fs_tree.arg("nested"))
    assert fields["isDirectory"] == "true" and fields["isFile"] == "false" and fields["_type"] == "directory"


def test_get_file_info_permissions_always_have_three_digits(fresh_tree: Tree, start_fs: Start) -> None:
    (fresh_tree / "hello.txt").chmod(0o044)
    (fresh_tree / "notes.txt").chmod(0o4755)
    server = start_fs(fresh_tree.root)
    assert info_of(server, fresh_tree.arg("hello.txt"))["permissions"] == "044"
    assert info_of(server, fresh_tree.arg("notes.txt"))["permissions"] == "755"


@pytest.mark.req("FS-ACCESS-DENIED")
def test_get_file_info_through_an_escaping_link_is_access_denied(fs_server: ServerProcess, fs_tree: Tree) -> None:
    assert "Access denied" in failure(fs_server, "get_file_info", {"path": fs_tree.arg("escape_file")})


def test_list_allowed_directories_names_every_root(fresh_tree: Tree, start_fs: Start) -> None:
    second = fresh_tree.base / "second"
    second.mkdir()
    server = start_fs(fresh_tree.root, second)
    result = ok(server, "list_allowed_directories")
    assert result["structuredContent"]["directories"] == [str(fresh_tree.root), str(second)]
    assert text_of(result) == f"Allowed directories:\n{fresh_tree.root}\n{second}"
    # Both are usable; a relative path still resolves against the first.
    ok(server, "write_file", {"path": str(second / "in-second.txt"), "content": "2\n"})
    assert (second / "in-second.txt").read_text() == "2\n"
    assert text_of(ok(server, "read_text_file", {"path": "hello.txt"})).startswith("hello")


# --- delete_file: confirmation through multi round-trip requests ------------------------------------


def delete_call(server: ServerProcess, path: str, capabilities: dict[str, Any] | None = ELICIT,
                **retry: Any) -> dict[str, Any]:
    params = {"name": "delete_file", "arguments": {"path": path}, **retry}
    return server.request(modern_request(next(_ids), "tools/call", params, capabilities=capabilities))


def ask_delete(server: ServerProcess, path: str) -> str:
    """The first round: the confirmation form; returns the requestState."""
    result = result_of(delete_call(server, path))
    assert result["resultType"] == "input_required", result
    return result["requestState"]


@pytest.mark.req("FS-DELETE-CONFIRMED", "MRTR-INPUT-REQUIRED-RESULT")
def test_delete_file_first_asks_for_confirmation_naming_the_path(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    result = result_of(delete_call(server, fresh_tree.arg("hello.txt")))
    assert result["resultType"] == "input_required" and result["requestState"]
    request = result["inputRequests"]["confirm_delete"]
    assert request["method"] == "elicitation/create" and request["params"]["mode"] == "form"
    assert fresh_tree.arg("hello.txt") in request["params"]["message"]
    assert request["params"]["requestedSchema"]["required"] == ["confirm"]
    assert (fresh_tree / "hello.txt").exists()


@pytest.mark.req("FS-DELETE-CONFIRMED")
def test_delete_file_deletes_after_an_accepted_confirmation(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    state = ask_delete(server, fresh_tree.arg("hello.txt"))
    result = result_of(delete_call(server, fresh_tree.arg("hello.txt"), inputResponses=ACCEPT, requestState=state))
    assert not result.get("isError") and result["structuredContent"]["deleted"] is True
    assert result["structuredContent"]["content"] == text_of(result)
    assert not (fresh_tree / "hello.txt").exists()


@pytest.mark.req("FS-DELETE-CONFIRMED")
@pytest.mark.parametrize("answer", [
    DECLINE, {"confirm_delete": {"action": "cancel"}},
    {"confirm_delete": {"action": "accept", "content": {"confirm": False}}},
], ids=["decline", "cancel", "accept-unchecked"])  # fmt: skip
def test_delete_file_deletes_nothing_unless_confirmed(fresh_tree: Tree, start_fs: Start, answer: dict[str, Any]) -> None:
    server = start_fs(fresh_tree.root)
    state = ask_delete(server, fresh_tree.arg("hello.txt"))
    result = result_of(delete_call(server, fresh_tree.arg("hello.txt"), inputResponses=answer, requestState=state))
    assert result["structuredContent"]["deleted"] is False and "Not deleted" in text_of(result)
    assert (fresh_tree / "hello.txt").exists()


@pytest.mark.req("FS-DELETE-CONFIRMED")
def test_delete_file_removes_a_link_not_its_target(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    state = ask_delete(server, fresh_tree.arg("escape_file"))
    assert not result_of(delete_call(server, fresh_tree.arg("escape_file"), inputResponses=ACCEPT,
                                     requestState=state)).get("isError")
    assert not (fresh_tree / "escape_file").is_symlink()
    assert (fresh_tree.outside / "secret.txt").read_text() == SECRET + "\n"


@pytest.mark.req("FS-DELETE-CONFIRMED")
def test_delete_file_refuses_a_directory_that_is_not_empty_without_asking(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    result = result_of(delete_call(server, fresh_tree.arg("nested")))
    assert result["isError"] is True and "not empty" in text_of(result)
    assert (fresh_tree / "nested" / "code.py").exists()


@pytest.mark.req("FS-DELETE-CONFIRMED")
def test_delete_file_removes_an_empty_directory(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    state = ask_delete(server, fresh_tree.arg("empty_dir"))
    assert not result_of(delete_call(server, fresh_tree.arg("empty_dir"), inputResponses=ACCEPT,
                                     requestState=state)).get("isError")
    assert not (fresh_tree / "empty_dir").exists()


@pytest.mark.req("FS-DELETE-CONFIRMED", "MRTR-INPUT-REQUIRED-RESULT")
def test_delete_file_answers_without_state_are_asked_again(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    result = result_of(delete_call(server, fresh_tree.arg("hello.txt"), inputResponses=ACCEPT))
    assert result.get("resultType") == "input_required", result
    assert (fresh_tree / "hello.txt").exists()


@pytest.mark.req("FS-DELETE-CONFIRMED", "BASE-MISSING-CAPABILITY-32021")
def test_delete_file_needs_a_client_that_can_answer_forms(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    error = error_of(delete_call(server, fresh_tree.arg("hello.txt"), capabilities={}))
    assert error["code"] == -32021
    assert (fresh_tree / "hello.txt").exists()


@pytest.mark.req("FS-DELETE-CONFIRMED", "MRTR-STATE-INTEGRITY")
def test_delete_file_with_a_tampered_request_state_deletes_nothing(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    state = ask_delete(server, fresh_tree.arg("hello.txt"))
    payload, mac = state.split(".", 1) if "." in state else (state, "")
    forged = payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB") + ("." + mac if mac else "")
    response = delete_call(server, fresh_tree.arg("hello.txt"), inputResponses=ACCEPT, requestState=forged)
    assert error_of(response)["code"] == -32602
    assert (fresh_tree / "hello.txt").exists()


@pytest.mark.req("FS-DELETE-CONFIRMED", "MRTR-STATE-REPLAY")
def test_delete_file_state_for_another_path_deletes_nothing(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    state = ask_delete(server, fresh_tree.arg("notes.txt"))
    response = delete_call(server, fresh_tree.arg("hello.txt"), inputResponses=ACCEPT, requestState=state)
    assert error_of(response)["code"] == -32602
    assert (fresh_tree / "hello.txt").exists() and (fresh_tree / "notes.txt").exists()


def replace_with_new_inode(path: Path, text: str) -> None:
    """Put a new file (surely a new inode: made while the old one still exists) at ``path``."""
    spare = path.with_name(path.name + ".new")
    spare.write_text(text)
    os.replace(spare, path)


@pytest.mark.req("FS-DELETE-CONFIRMED")
def test_delete_file_deletes_nothing_when_the_file_was_replaced_after_the_confirmation(fresh_tree: Tree,
                                                                                       start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    target = fresh_tree / "hello.txt"
    state = ask_delete(server, str(target))
    replace_with_new_inode(target, "a different file\n")
    result = result_of(delete_call(server, str(target), inputResponses=ACCEPT, requestState=state))
    assert result["isError"] is True and "changed" in text_of(result)
    assert target.read_text() == "a different file\n"


@pytest.mark.req("FS-DELETE-CONFIRMED")
def test_delete_file_replaying_an_accepted_retry_deletes_nothing_new(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    target = fresh_tree / "hello.txt"
    state = ask_delete(server, str(target))
    with open(target, "rb"):  # keeps the old inode allocated, so the new file cannot reuse its number
        assert not result_of(delete_call(server, str(target), inputResponses=ACCEPT, requestState=state)).get("isError")
        assert not target.exists()
        target.write_text("recreated\n")
    response = delete_call(server, str(target), inputResponses=ACCEPT, requestState=state)
    assert "error" in response or result_of(response)["isError"] is True
    assert target.read_text() == "recreated\n"


@pytest.mark.req("FS-DELETE-CONFIRMED", "FS-ACCESS-DENIED")
def test_delete_file_outside_the_root_is_access_denied_before_asking(fresh_tree: Tree, start_fs: Start) -> None:
    server = start_fs(fresh_tree.root)
    result = result_of(delete_call(server, fresh_tree.arg("escape_dir/secret.txt")))
    assert result["isError"] is True and "Access denied" in text_of(result)
    assert (fresh_tree.outside / "secret.txt").exists()


@pytest.mark.req("FS-DELETE-CONFIRMED", "MRTR-USE-PATTERN")
def test_delete_file_for_a_legacy_client_without_elicitation_is_a_tool_error_and_deletes_nothing(fresh_tree: Tree, start_fs: Start) -> None:
    # A legacy client that declared elicitation is asked with elicitation/create (see
    # tests/test_legacy_input_requests.py); one that did not gets a tool error saying why.
    server = start_fs(fresh_tree.root, schema="legacy")
    initialize = {"jsonrpc": "2.0", "id": next(_ids), "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy-client", "version": "1"}}}  # fmt: skip
    assert "result" in server.request(initialize)
    server.send(notification("notifications/initialized"))
    request = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call",
               "params": {"name": "delete_file", "arguments": {"path": fresh_tree.arg("hello.txt")}}}
    result = result_of(server.request(request))
    assert result["isError"] is True
    message = result["content"][0]["text"]
    assert "needs input" in message and "2026-07-28" in message
    assert (fresh_tree / "hello.txt").exists()


# --- progress and cancellation ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def wide_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~3000 empty files in 30 directories."""
    root = tmp_path_factory.mktemp("wide")
    for d in range(30):
        directory = root / f"dir{d:02d}"
        directory.mkdir()
        for f in range(100):
            (directory / f"file{f:03d}.txt").touch()
    return root


@pytest.mark.req("PROG-TOKEN-ECHOED", "PROG-INCREASING")
def test_directory_tree_of_a_big_tree_reports_progress_before_its_result(wide_tree: Path, start_fs: Start) -> None:
    server = start_fs(wide_tree, options=("--max-entries", "10000", "--max-answer-bytes", "10000000"))
    request = tool_call(next(_ids), "directory_tree", {"path": str(wide_tree)}, progress_token="tree-1")
    server.send(request)
    messages = server.read_until(lambda m: is_response(m, request["id"]), timeout=20)
    progress = [m for m in messages if m.get("method") == "notifications/progress"]
    assert progress, [m.get("method") for m in messages]
    assert all(m["params"]["progressToken"] == "tree-1" for m in progress)
    values = [m["params"]["progress"] for m in progress]
    assert values == sorted(set(values))
    assert len(flatten(json.loads(text_of(result_of(messages[-1]))))) == 3030


@pytest.fixture(scope="module")
def heavy_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """500 files of 50 KiB of words: grepping them for (?:\\w+ ){3,}q takes ~10 s on a 2-core machine
    with the backtracking engine."""
    root = tmp_path_factory.mktemp("heavy")
    words = ("alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma")
    line = " ".join(words[(i * 3) % len(words)] for i in range(9)) + "\n"
    body = (line * (51_200 // len(line) + 1))[:51_200].encode()
    for d in range(5):
        directory = root / f"d{d:02d}"
        directory.mkdir()
        for f in range(100):
            (directory / f"f{f:03d}.txt").write_bytes(body)
    return root


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.req("CANCEL-NO-RESPONSE", "CANCEL-STOP-PROCESSING", "FS-SEARCH-CANCELLABLE")
def test_a_cancelled_grep_gets_no_response_and_the_server_answers_the_next_request(heavy_tree: Path,
                                                                                     start_fs: Start) -> None:
    # The backtracking engine, for which this pattern is slow work (RE2 runs it in linear time).
    server = start_fs(heavy_tree, options=("--search-seconds", "60"), env={"MCP_REF_FS_GREP": "regex"})
    result_of(respond(server, "list_allowed_directories"))
    idle = cpu_seconds(server.pid)
    request = tool_call(next(_ids), "grep_files", {"path": str(heavy_tree), "pattern": r"(?:\w+ ){3,}q"})
    server.send(request)
    deadline = time.monotonic() + 10
    while cpu_seconds(server.pid) - idle < 0.3:  # the grep is busy
        assert time.monotonic() < deadline, "the grep never started working"
        time.sleep(0.05)
    server.send(cancel(request["id"], "changed my mind"))
    started = time.monotonic()
    result_of(respond(server, "list_allowed_directories", timeout=5))
    assert time.monotonic() - started < 5
    time.sleep(0.2)
    before = cpu_seconds(server.pid)
    server.expect_silence(1.0)
    assert cpu_seconds(server.pid) - before < 0.3, "the cancelled grep kept running"
    assert not any(is_response(m, request["id"]) for m in server.received + server.pending)
