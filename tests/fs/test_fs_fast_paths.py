"""The shortcuts mcp-ref-fs takes for speed (issue 9) answer exactly as the plain way would.

Each shortcut is checked against a plain reference written here: ``display_name``'s test for
printable ASCII, the one check of a whole listing's names (``tools._labels``), entries made without
the named tuple's ``__new__``, a whole-file read that skips reckoning its budget
(``answers.surely_fits``), a name search that reads the clock once per ``STOP_EVERY`` entries,
and the allocator setting taken for large reads (kept memory, given back when quiet). (``Glob.suffixes`` is checked in
test_patterns.py.) No test here measures time.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
import types
import unicodedata
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_ref import Server
from mcp_ref_fs import listing, offload, walks
from mcp_ref_fs.answers import call_arguments, data_budget, fit_lines, surely_fits
from mcp_ref_fs.config import Config
from mcp_ref_fs.root import Entry, Sandbox, display_name
from mcp_ref_fs.tools import FsTools
from mcp_ref_fs.walks import _labels

def _reference_display_name(name: str) -> str:
    """display_name's rule without its fast paths: always encode, then look at every character's
    Unicode category (controls but tab, format characters, line and paragraph separators)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        name = os.fsencode(name).decode("utf-8", "backslashreplace")
    shown = []
    for char in name:
        code = ord(char)
        if char != "\t" and unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            shown.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            shown.append(char)
    return "".join(shown)


def test_display_name_shows_every_character_as_the_plain_check_would() -> None:
    singles = ([chr(code) for code in range(0x3000)] + ["\udcff", "\udc80", "\U0001f600", "\ufeff", "\u200b", "\u2060"]
               + [chr(code) for code in range(0xE0000, 0xE0080)])
    for char in singles:
        for name in (char, f"a{char}b", f"{char}.txt"):
            assert display_name(name) == _reference_display_name(name), repr(name)


def test_a_plain_name_is_returned_as_it_is() -> None:
    name = "".join(chr(code) for code in range(0x20, 0x7F))  # every printable ASCII character
    assert display_name(name) is name


@pytest.mark.parametrize("names", [
    [],
    ["a.txt", "b", "dir 2"],
    ["a.txt", "evil\n[DIR] x", "c"],
    ["tab\there", "plain"],
    [os.fsdecode(b"bad\xff"), "ok"],
    ["right\u202eleft", "é"],
])
def test_labels_of_a_listing_are_each_names_display_name(names: list[str]) -> None:
    assert _labels(names) == [display_name(name) for name in names]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    for name in ["b.txt", "a.txt", "evil\nname", "é.md"]:
        (root / name).write_text("x")
    (root / "sub" / "c.py").write_text("")
    os.symlink("a.txt", root / "link")
    os.symlink("/", root / "outside")
    return root


def test_listings_and_walks_give_real_entries(folder: Path) -> None:
    sandbox = Sandbox.open([str(folder)])
    _location, entries = sandbox.list_directory(".")
    walked = [entry for _components, entry in sandbox.walk(".", sizes=False)]
    for entry in entries + walked:
        assert type(entry) is Entry and len(entry) == 4
        assert entry == Entry(entry.name, entry.kind, entry.size, entry.mtime)
    shown = {entry.name: (entry.kind, entry.label) for entry in entries}
    assert shown == {
        "a.txt": ("file", "a.txt"), "b.txt": ("file", "b.txt"), "evil\nname": ("file", "evil\\x0aname"),
        "link": ("file", "link"), "outside": ("symlink", "outside"), "sub": ("directory", "sub"), "é.md": ("file", "é.md"),
    }
    assert [entry.name for entry in entries] == sorted(shown)


def test_a_listing_of_names_and_kinds_is_the_entry_by_entry_listing(folder: Path) -> None:
    """``list_kinds_page`` (list_directory's path: one pass for the kinds, no Entry per name) and
    the entry-by-entry path it falls back to give what ``list_directory_page(sizes=False)`` gives,
    pages included; with ``most`` a link sends both to a thread (``Costly``)."""
    os.mkfifo(folder / "fifo")
    (folder / ".mcp-ref-0123456789abcdef.tmp").write_text("")  # the server's own temporary file: never shown
    sandbox = Sandbox.open([str(folder)])
    try:
        _location, _names, every_kind, total = sandbox.list_kinds_page(".")
        assert "other" in every_kind and "symlink" in every_kind and total == 8  # the fifo, the link that leaves
        for start, limit in [(0, None), (0, 3), (2, 4), (7, 5), (20, 1)]:
            _location, entries, total = sandbox.list_directory_page(".", sizes=False, start=start, limit=limit)
            location, names, kinds, count = sandbox.list_kinds_page(".", start=start, limit=limit)
            assert (names, kinds, count) == ([e.name for e in entries], [e.kind for e in entries], total)
            page = sorted(os.scandir(folder), key=lambda item: item.name)
            page = [item for item in page if not item.name.startswith(".mcp-ref-")][start:None if limit is None else start + limit]
            assert sandbox._names_and_kinds_one_by_one(location, page, None) == (names, kinds)
        location = sandbox.locate(".")
        for classify in (sandbox._names_and_kinds, sandbox._names_and_kinds_one_by_one):
            with pytest.raises(listing.CostlyListing):
                classify(location, list(os.scandir(folder)), 1000)
    finally:
        sandbox.close()


@pytest.mark.parametrize("room", [1, 10, 11, 12, 30, 31, 32, 33, 60, 1000])
async def test_list_directory_fits_its_answer_budget_as_fit_lines_counts(tmp_path: Path, room: int,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """list_directory checks the whole text against the budget once and counts line by line
    (``fit_lines``) only when it does not fit: the same page either way, ASCII or not."""
    for name in ["a", "bb", "ccc", "dé", "e" * 9]:
        (tmp_path / name).write_text("")
    sandbox = Sandbox.open([str(tmp_path)])
    try:
        tools = FsTools(Server("review", "0"), sandbox, Config(roots=(str(tmp_path),)))
        monkeypatch.setattr(walks, "data_budget", lambda ctx, configured, arguments: room)
        monkeypatch.setattr(walks, "surely_fits", lambda size, ctx, configured, arguments: False)  # this budget, always
        result = await tools.list_directory(types.SimpleNamespace(client_info=None), {"path": "."})  # type: ignore[arg-type]
        lines = ["[FILE] a", "[FILE] bb", "[FILE] ccc", "[FILE] dé", "[FILE] eeeeeeeee"]
        shown = fit_lines(lines, 0, room)
        assert result.content[0]["text"] == "\n".join(lines[:shown])
        assert (len(result.content) == 1) == (shown == len(lines))
    finally:
        sandbox.close()


async def test_a_name_search_notices_its_time_limit_within_stop_every_entries(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Searches walk runs of at most STOP_EVERY entries (``Sandbox.walk_runs``) and read the clock
    before a run once STOP_EVERY entries have passed since the last look."""
    root = tmp_path / "many"
    root.mkdir()
    for index in range(3 * offload.STOP_EVERY):
        (root / f"f{index:03d}.txt").write_bytes(b"")
    sandbox = Sandbox.open([str(root)])
    tools = FsTools(Server("fast", "0"), sandbox, Config(roots=(str(root),), search_seconds=0.2, max_answer_bytes=1_000_000))
    consumed: list[list[str]] = []
    real_walk_runs = sandbox.walk_runs

    def walk_runs(start: Any, **kwargs: Any) -> Iterator[Any]:
        for run in real_walk_runs(start, **kwargs):
            consumed.append(run[1])
            yield run
            time.sleep(0.3)  # the time limit passes here, between two polls of the clock

    monkeypatch.setattr(sandbox, "walk_runs", walk_runs)
    ctx = types.SimpleNamespace(report_progress=lambda *args, **kwargs: True, task_id=None)
    result = await tools.search_files(ctx, {"path": str(root), "pattern": "*.txt"})  # type: ignore[arg-type]
    assert any(block["text"].startswith("[Stopped at the") for block in result.content[1:])
    # Polled before the first run of STOP_EVERY entries and before the second, where it stopped.
    assert [len(run) for run in consumed] == [offload.STOP_EVERY, offload.STOP_EVERY]
    assert result.content[0]["text"].split("\n") == [f"{root}/f{index:03d}.txt" for index in range(offload.STOP_EVERY)]


def test_a_cancellation_is_seen_without_reading_the_clock() -> None:
    stop = offload.Stop(None)
    assert stop.cancelled is False and stop() is False
    threading.Thread(target=stop.set).start()
    deadline = time.monotonic() + 5
    while not stop.cancelled and time.monotonic() < deadline:
        time.sleep(0.001)
    assert stop.cancelled is True and stop() is True and stop.timed_out is False


def test_large_reads_keep_freed_memory_until_a_quiet_moment(tmp_path: Path) -> None:
    # In a child process: the allocator setting is process-wide and must not leak into the test runner.
    data = os.urandom(3 * 1024 * 1024)
    (tmp_path / "big.bin").write_bytes(data)
    script = (
        "import asyncio, sys\n"
        "from mcp_ref_fs import offload\n"
        "from mcp_ref_fs.root import Sandbox\n"
        "offload.KEEP_SECONDS = 0.2\n"
        "sandbox = Sandbox.open([sys.argv[1]])\n"
        "glibc = sys.platform.startswith('linux') and bool(offload._glibc_allocator())\n"
        "async def main():\n"
        "    for _ in range(3):\n"
        "        with sandbox.open_file('big.bin') as opened:\n"
        "            data = await offload.read_start(opened, opened.info.st_size)\n"
        "        assert (offload._give_back_timer is not None) is glibc, offload._allocator\n"
        "        sys.stdout.buffer.write(data[-16:])\n"
        "    await asyncio.sleep(0.5)\n"
        "    assert offload._give_back_timer is None  # given back after the quiet moment\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == data[-16:] * 3


def test_reads_at_or_under_the_loop_limit_leave_the_allocator_alone(tmp_path: Path) -> None:
    (tmp_path / "small.bin").write_bytes(b"x" * 100)
    script = (
        "import asyncio, sys\n"
        "from mcp_ref_fs import offload\n"
        "from mcp_ref_fs.root import Sandbox\n"
        "sandbox = Sandbox.open([sys.argv[1]])\n"
        "async def main():\n"
        "    with sandbox.open_file('small.bin') as opened:\n"
        "        assert await offload.read_start(opened, 100) == b'x' * 100\n"
        "    print(offload._allocator)\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "None"


def test_without_glibc_large_reads_leave_the_allocator_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    monkeypatch.setattr(offload, "_allocator", None)
    monkeypatch.setattr(offload, "_give_back_timer", None)  # an earlier in-process test may have set one
    monkeypatch.setattr(sys, "platform", "darwin")
    offload.keep_freed_memory()  # no event loop needed: nothing is scheduled
    assert offload._allocator is False and offload._give_back_timer is None
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: types.SimpleNamespace(mallopt=print))  # musl: no malloc_trim
    assert offload._glibc_allocator() is False


def test_the_thread_pool_is_not_imported_at_start_up() -> None:
    script = "import sys, mcp_ref_fs.server; print('concurrent.futures.thread' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


async def test_off_loop_still_runs_work_in_a_thread() -> None:
    assert await offload.off_loop(lambda stop: threading.current_thread() is not threading.main_thread())
    asyncio.get_running_loop()  # the loop is still usable afterwards


# --- a whole-file read that skips reckoning its budget ---------------------------------------------

# JSON values as tool arguments arrive: any character a JSON string can carry (controls, quotes,
# backslashes, non-ASCII, line separators), numbers, booleans, null, nested lists and objects.
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=10), _JSON_VALUES, max_size=5),
       configured=st.sampled_from([None, 2000, 10_000, 45_000]),
       client=st.sampled_from([None, "claude-code", "codex-mcp-client", "some-host"]),
       size=st.integers(min_value=1, max_value=50_000))
def test_a_read_that_surely_fits_fits_the_budget_reckoned_the_plain_way(arguments: dict[str, Any], configured: int | None,
                                                                      client: str | None, size: int) -> None:
    # surely_fits never says yes where data_budget (which encodes the arguments) would cut the file.
    ctx = types.SimpleNamespace(client_info={"name": client} if client else None)
    if surely_fits(size, ctx, configured, arguments):
        assert size <= data_budget(ctx, configured, arguments)


def test_surely_fits_bounds_the_worst_characters_and_says_yes_to_an_ordinary_read() -> None:
    ctx = types.SimpleNamespace(client_info=None)
    # A printable astral character is one character of repr and four bytes of the cue's UTF-8; a
    # control character four of repr (\\x00) and six of JSON (\\u0000): the bound holds either way.
    for worst in ({"path": "\U0001F600" * 100}, {"path": "\x00\x1f" * 50}):
        assert len(repr(worst)) < len(call_arguments(worst).encode("utf-8")) <= 6 * len(repr(worst))
        assert not surely_fits(data_budget(ctx, None, worst) + 1, ctx, None, worst)
    assert surely_fits(1024, ctx, None, {"path": "/srv/project/src/module.py"})


@pytest.mark.parametrize("client", [None, "codex-mcp-client", "claude-code"])
async def test_reads_and_listings_that_surely_fit_answer_as_the_reckoned_budget_would(
        tmp_path: Path, client: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Files and listings from well under to well over each client's budget: the answer with the
    # shortcut (surely_fits) is the answer reckoned the plain way (surely_fits always no).
    from mcp_ref_fs import tools as fs_tools

    for size in (1, 999, 1001, 4000, 8000, 9400, 9800, 12_000, 40_000, 50_000):
        (tmp_path / f"f{size:05d}.txt").write_text(("abcdefghij" * 7 + "\n") * (size // 71) + "z" * (size % 71))
    for count in (5, 300, 1500):
        folder = tmp_path / f"d{count}"
        folder.mkdir()
        for index in range(count):
            (folder / f"entry-{index:05d}.txt").touch()
    sandbox = Sandbox.open([str(tmp_path)])
    try:
        tools = FsTools(Server("fits", "0"), sandbox, Config(roots=(str(tmp_path),)))
        ctx = types.SimpleNamespace(client_info={"name": client} if client else None, task_id=None)
        calls = [(tools.read_text_file, {"path": str(path)}) for path in sorted(tmp_path.glob("f*.txt"))]
        calls += [(tools.list_directory, {"path": f"d{count}"}) for count in (5, 300, 1500)]
        shortcut = [await call(ctx, arguments) for call, arguments in calls]  # type: ignore[arg-type]
        monkeypatch.setattr(fs_tools, "surely_fits", lambda size, ctx, configured, arguments: False)
        monkeypatch.setattr(walks, "surely_fits", lambda size, ctx, configured, arguments: False)
        plain = [await call(ctx, arguments) for call, arguments in calls]  # type: ignore[arg-type]
        assert shortcut == plain
        assert any(isinstance(answer, str) for answer in shortcut)  # some files came whole
        assert any(not isinstance(answer, str) and len(answer.content) > 1 for answer in shortcut)  # and some in pages
    finally:
        sandbox.close()
