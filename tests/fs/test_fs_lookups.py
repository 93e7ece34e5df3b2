"""Lookups whose cost a tree can multiply: deep directories and chains of links (issue 17, item 3).

One lookup follows at most 40 links in all, as the kernel does (intermediate and final links draw on
the same budget), and a lookup that would take more than a few dozen system calls runs in a worker
thread, never on the event loop. Each test runs once per confinement mechanism and act step.
"""

from __future__ import annotations

import errno
import os
import subprocess
import threading
import types
from pathlib import Path
from typing import Any

import pytest

from mcp_ref import Server
from mcp_ref_fs.config import Config
from mcp_ref_fs.root import Refused, Sandbox, choose_mechanism
from mcp_ref_fs.tools import FsTools
from tests.fs.conftest import fs_command
from tests.wire import ServerProcess, encode_line, modern_request, result_of, tool_call

MECHANISMS = ["openat2", "walk"]
ACTS = ["at", "paths"]


@pytest.fixture(autouse=True)
def _removes_its_deep_trees(tmp_path: Path) -> Any:
    """Remove what a test built under ``tmp_path`` when it ends: pytest's own clean-up of old
    temporary folders (``shutil.rmtree``, recursive) fails with RecursionError on a 1000-level tree,
    and that would fail a later run on this machine. ``rm -rf`` removes any depth."""
    yield
    subprocess.run(["rm", "-rf", "--", *(str(child) for child in tmp_path.iterdir())], check=False)


def _deep(base: Path, depth: int) -> str:
    """``base/d/d/.../d`` (``depth`` levels), made with ``*at`` calls (a path that long is slow to
    make by name); returns the relative path."""
    fd = os.open(base, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    return "/".join(["d"] * depth)


def chain_tree(base: Path, *, depth: int, dir_links: int, file_links: int) -> tuple[Path, str]:
    """A root with a ``depth``-level directory D; in it a chain of ``dir_links`` directory links
    (each named by an absolute path through D, so each hop walks D again) ending at D/R, and in R
    a chain of ``file_links`` final links, each again through the first directory link. Returns
    the root and the client path of the first final link: resolving it follows
    ``dir_links * file_links + file_links`` links in all (fewer than 41 per walk of the chain)."""
    root = base / "root"
    root.mkdir()
    deep = _deep(root, depth)
    os.mkdir(f"{root}/{deep}/R")
    for i in range(dir_links):
        target = f"{root}/{deep}/L{i + 1}" if i + 1 < dir_links else f"{root}/{deep}/R"
        os.symlink(target, f"{root}/{deep}/L{i}")
    for j in range(file_links):
        target = f"{root}/{deep}/L0/F{j + 1}" if j + 1 < file_links else "real.txt"
        os.symlink(target, f"{root}/{deep}/R/F{j}")
    Path(f"{root}/{deep}/R/real.txt").write_text("found\n")
    return root, f"{root}/{deep}/L0/F0"


def _server(root: Path, mechanism: str, act: str) -> ServerProcess:
    if mechanism == "openat2":
        try:
            choose_mechanism("openat2")
        except ValueError as error:
            pytest.skip(str(error))
    # Paths 1000 levels deep take 2 KB each: room for several of them in one answer.
    return ServerProcess(fs_command(root, options=("--max-answer-bytes", "1000000")),
                         env={"MCP_REF_FS_CONFINE": mechanism, "MCP_REF_FS_ACT": act})


def _text(response: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result_of(response)["content"])


@pytest.mark.req("FS-LINK-LOOP", "FS-LOOKUP-OFF-LOOP")
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_chain_of_links_through_a_deep_tree_is_refused_as_the_kernel_refuses_it(tmp_path: Path, mechanism: str, act: str) -> None:
    # 39 directory links walked again for each of 38 final links: 1,520 links in all. Each walk of
    # the chain alone stays under 40, which is how it once took ~1.5 M openat calls (3.6 s on the
    # event loop for one read, 14 s for four) and then answered "found".
    root, path = chain_tree(tmp_path, depth=1000, dir_links=39, file_links=38)
    with pytest.raises(OSError) as kernel:
        os.stat(path)
    assert kernel.value.errno == errno.ELOOP  # the kernel's verdict on the same path
    with _server(root, mechanism, act) as server:
        response = server.request(tool_call(1, "read_text_file", {"path": path}), timeout=30)
        assert result_of(response).get("isError") is True
        assert "more than 40 links" in _text(response)
        many = server.request(tool_call(2, "read_multiple_files", {"paths": [path] * 4}), timeout=30)
        assert _text(many).count("Too many levels of symbolic links") == 4


@pytest.mark.req("FS-LINK-LOOP")
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_forty_links_in_one_lookup_resolve_and_forty_one_do_not_as_in_the_kernel(tmp_path: Path, mechanism: str, act: str) -> None:
    # 19 directory links, walked twice (two final links), plus the 2 final links: 40. One more
    # final link makes 41 + 19 more directory links: refused. The kernel agrees on both.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, forty = chain_tree(tmp_path / "a", depth=30, dir_links=19, file_links=2)
    _, sixty = chain_tree(tmp_path / "b", depth=30, dir_links=19, file_links=3)
    assert Path(forty).read_text() == "found\n"
    with pytest.raises(OSError):
        Path(sixty).read_text()
    with _server(tmp_path, mechanism, act) as server:
        assert _text(server.request(tool_call(1, "read_text_file", {"path": forty}))) == "found\n"
        refused = server.request(tool_call(2, "read_text_file", {"path": sixty}))
        assert result_of(refused).get("isError") is True and "Too many levels of symbolic links" in _text(refused)


@pytest.mark.req("FS-LOOKUP-OFF-LOOP")
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_other_requests_are_answered_while_costly_lookups_run(tmp_path: Path, mechanism: str, act: str) -> None:
    # Each path goes through a link near the bottom of a 300-level tree: a legal lookup of some
    # hundreds of system calls. Sent in one write, a server/discover is read with the reads': on
    # the event loop, the 100 lookups of read_multiple_files ran before it was served (their
    # answer came first); now each runs in a worker thread and server/discover is answered meanwhile.
    root = tmp_path / "root"
    root.mkdir()
    deep = _deep(root, 300)
    os.mkdir(f"{root}/{deep}/real")
    Path(f"{root}/{deep}/real/file.txt").write_text("deep\n")
    os.symlink("real", f"{root}/{deep}/link")
    path = f"{root}/{deep}/link/file.txt"
    with _server(root, mechanism, act) as server:
        server.send_raw(encode_line(tool_call(1, "read_multiple_files", {"paths": [path] * 100}))
                        + encode_line(modern_request(2, "server/discover")))
        first, second = server.read_message(timeout=30), server.read_message(timeout=30)
        assert [first["id"], second["id"]] == [2, 1] and "supportedVersions" in first["result"], "server/discover waited for the lookups: they ran on the event loop"
        assert _text(second).count("deep\n") == 100


@pytest.mark.req("FS-LOOKUP-OFF-LOOP")
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_cheap_lookup_stops_before_it_spends_more_than_the_event_loop_may(tmp_path: Path, mechanism: str) -> None:
    from mcp_ref_fs import root as root_module
    from mcp_ref_fs._confine import Costly

    root = tmp_path / "root"
    root.mkdir()
    deep = _deep(root, 200)
    Path(f"{root}/{deep}/f.txt").write_text("x\n")
    os.symlink(".", f"{root}/{deep}/here")
    try:
        sandbox = Sandbox.open([str(root)], mechanism=choose_mechanism(mechanism))
    except ValueError as error:
        pytest.skip(str(error))
    with root_module.cheaply():
        with pytest.raises(Costly):
            sandbox.stat(f"{deep}/here/f.txt")  # a link on a 200-level path: walked name by name
    location, info = sandbox.stat(f"{deep}/here/f.txt")  # outside the block: any cost
    assert info.st_size == 2 and location.parts[-1] == "f.txt"
    if mechanism == "openat2":
        with root_module.cheaply():
            assert sandbox.stat(f"{deep}/f.txt")[1].st_size == 2  # no link: one openat2, cheap at any depth
    with pytest.raises(Refused, match="Too many levels"):
        loop = root / "loop"
        os.symlink("loop", loop)
        sandbox.open_file("loop")
    sandbox.close()


async def test_list_directory_does_not_resolve_links_on_the_event_loop(tmp_path: Path) -> None:
    """A directory of at most IN_LOOP_ENTRIES names is listed on the event loop
    (tools.FsTools._entries: ``list_directory_page(..., most=IN_LOOP_ENTRIES)``), and that listing
    resolves every link it shows (root.py ``Sandbox.list_directory_page`` -> ``_linked`` ->
    ``_lookup(follow_final=True)``): up to MAX_LINK_HOPS + 1 hops per link, each hop opening the
    link's directory again from the root (one ``openat`` per component with the walk mechanism,
    the default on macOS and on kernels without openat2). A malicious tree with 1000 links, each
    starting a 40-link chain in a directory 60 levels deep, blocked the whole server (every other
    request, cancellations included) for 6.2 s per ``list_directory`` call with
    ``MCP_REF_FS_CONFINE=walk`` (0.58 s with openat2), and deeper chains cost proportionally more.
    Fix: list on the loop only while no link needs resolving (e.g. ``most`` also bounds the links
    met, raising ``ManyEntries`` at the first symlink), and otherwise list in a thread."""
    root = tmp_path / "root"
    (root / "dir" / "sub").mkdir(parents=True)
    (root / "dir" / "target.txt").write_text("x")
    os.symlink("target.txt", root / "dir" / "link_file")
    os.symlink("sub", root / "dir" / "link_dir")
    sandbox = Sandbox.open([str(root)])
    try:
        tools = FsTools(Server("review", "0"), sandbox, Config(roots=(str(root),)))
        loop_thread = threading.current_thread()
        resolved_on: list[bool] = []
        real_linked = sandbox._linked

        def linked(location: Any) -> Any:
            resolved_on.append(threading.current_thread() is loop_thread)
            return real_linked(location)

        sandbox._linked = linked  # type: ignore[method-assign]
        ctx = types.SimpleNamespace(report_progress=lambda *args, **kwargs: True, task_id=None)
        result = await tools.list_directory(ctx, {"path": str(root / "dir")})  # type: ignore[arg-type]
        assert {line.split(" ", 1)[1] for line in result.content[0]["text"].split("\n")} == {
            "link_dir", "link_file", "sub", "target.txt"}
        assert resolved_on, "the listing resolved no link at all"
        assert not any(resolved_on), "links were resolved on the event loop thread"
    finally:
        sandbox.close()
