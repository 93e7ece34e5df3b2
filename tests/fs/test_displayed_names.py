"""Regression tests from a hostile review of the act-step / hot-path commits (e8cdf43 and around).

Each test here failed when it was written; each docstring says what a malicious client or a
malicious file tree gains, and where the cause lies. (What the review tried and found to hold is
in its report, not here.)
"""

from __future__ import annotations

import os
import threading
import types
from pathlib import Path
from typing import Any

import pytest

from mcp_ref import Server
from mcp_ref_fs.config import Config
from mcp_ref_fs.root import Sandbox, display_name
from mcp_ref_fs.tools import FsTools


@pytest.mark.req("FS-NON-UTF8-NAMES")
def test_display_name_escapes_the_arabic_letter_mark_which_is_a_bidi_control() -> None:
    """U+061C ARABIC LETTER MARK has the Unicode property Bidi_Control, like U+200E/U+200F (which
    are escaped), and is one of the characters the "Trojan Source" attacks list. ``display_name``
    promises that "bidi controls" are shown as ``\\uNNNN``, but root.py's ``_UNPRINTABLE`` class
    omits U+061C, so a file name from a malicious tree can still reorder the text of a listing.
    Fix: add ``\\u061c`` to ``_UNPRINTABLE`` (or escape every Unicode ``Cf`` character)."""
    shown = display_name("\u061cevil.txt")
    assert "\u061c" not in shown
    assert shown == "\\u061cevil.txt"


@pytest.mark.req("FS-NON-UTF8-NAMES")
def test_display_name_escapes_invisible_tag_and_zero_width_characters() -> None:
    """Hardening (the docstring does not promise it yet): Unicode tag characters
    (U+E0000-U+E007F), zero-width characters (U+200B-U+200D, U+2060) and U+FEFF are invisible in
    a listing a user looks at, but a language model reads them: a malicious tree can hide text
    for the model in file names ("ASCII smuggling"). Every other invisible control is escaped
    by ``display_name`` (root.py ``_UNPRINTABLE``); these pass through as they are. Fix: escape
    Unicode category ``Cf`` (format) characters too, e.g. a check of ``unicodedata.category``
    on the slow path, which plain ASCII names never reach."""
    for hidden in ("\U000e0041\U000e0042", "\u200b", "\u200d", "\u2060", "\ufeff"):
        shown = display_name(f"readme{hidden}.txt")
        assert all(char not in shown for char in hidden), ascii(shown)


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
