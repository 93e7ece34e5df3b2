"""Trees and name searches walk runs of entries (``Sandbox.walk_runs``) and take a whole run in
one step where they can (issue 21): the same answers as the entry by entry walk.

``walk_runs`` flattened is ``walk(sizes=False)``, entry for entry, with pruning; ``directory_tree``
answers the same with its run step on and off (``walks._FAST_RUNS``), pages and budgets included;
``search_files`` answers what a plain search over ``walk`` (the way it worked before) finds. A
seeded tree with awkward names, links, a FIFO, VCS metadata, a ``.gitignore`` and the server's
own temporary files. No test here measures time.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import types
from pathlib import Path
from typing import Any

import pytest

from mcp_ref import Server
from mcp_ref_fs import listing, walks
from mcp_ref_fs.config import Config
from mcp_ref_fs.ignore import Ignorer
from mcp_ref_fs.patterns import compile_glob
from mcp_ref_fs.root import Sandbox, display_name
from mcp_ref_fs.tools import FsTools

NAMES = ["a.py", "b.txt", "c", "dé.py", "quote\".py", "back\\slash.py", "new\nline.py", "zz.md", "Z.py", "tab\t.py"]


def _build(root: Path, seed: int, ignore_file: bool) -> None:
    rng = random.Random(seed)

    def fill(directory: Path, depth: int) -> None:
        for name in rng.sample(NAMES, rng.randint(0, len(NAMES))):
            (directory / name).write_text("x")
        for index in range(rng.randint(0, 3) if depth < 4 else 0):
            child = directory / f"d{index}{'.py' if rng.random() < 0.2 else ''}"
            child.mkdir()
            fill(child, depth + 1)
        if rng.random() < 0.3:
            (directory / os.fsdecode(b"bad\xff.py")).write_text("")
        if rng.random() < 0.2:
            os.symlink("a.py", directory / "link.py")
        if rng.random() < 0.2:
            os.symlink("/", directory / "out")
        if rng.random() < 0.1:
            (directory / ".mcp-ref-0123456789abcdef.tmp").write_text("")

    root.mkdir()
    fill(root, 0)
    (root / "many").mkdir()
    for index in range(250):
        (root / "many" / f"m{index:03d}.py").write_text("")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("")
    os.mkfifo(root / "fifo.py")
    if ignore_file:
        (root / ".gitignore").write_text("*.md\nd1/\n")


@pytest.fixture(params=[(1, False), (2, True), (3, False)], ids=["seed1", "seed2-gitignore", "seed3"])
def tree(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    seed, ignore_file = request.param
    _build(tmp_path / "root", seed, ignore_file)
    return tmp_path / "root"


@pytest.mark.parametrize("run", [1, 2, 3, 100])
def test_walk_runs_is_the_walk_entry_for_entry(tree: Path, run: int) -> None:
    sandbox = Sandbox.open([str(tree)])
    try:
        for descend in (None, lambda components: components[-1] != "d0"):
            walked = [(components, entry.kind) for components, entry in sandbox.walk(".", sizes=False, descend=descend)]
            runs = list(sandbox.walk_runs(".", descend=descend, run=run))
            assert [(prefix + (name,), kind) for prefix, names, kinds in runs for name, kind in zip(names, kinds)] == walked
            assert all(0 < len(names) <= run and "directory" not in kinds[:-1] for _prefix, names, kinds in runs)
    finally:
        sandbox.close()


def _tools(tree: Path, max_entries: int) -> FsTools:
    config = Config(roots=(str(tree),), max_entries=max_entries, max_answer_bytes=1_000_000_000)
    return FsTools(Server("runs", "0"), Sandbox.open([str(tree)]), config)


def _ctx() -> Any:
    return types.SimpleNamespace(report_progress=lambda *args, **kwargs: True, task_id=None, client_info=None)


@pytest.mark.parametrize("room", [60, 700, 5000, 10 ** 9])
@pytest.mark.parametrize("max_entries", [7, 1000])
def test_directory_tree_answers_the_same_a_run_at_a_time(tree: Path, room: int, max_entries: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(walks, "data_budget", lambda ctx, configured, arguments: room)
    tools = _tools(tree, max_entries)
    try:
        for arguments in ({}, {"start": 5}, {"start": 260}, {"maxDepth": 2}, {"excludePatterns": ["*.txt"]},
                          {"includeIgnored": True}, {"includeIgnored": True, "start": 3}):
            answers = []
            for fast in (True, False):
                monkeypatch.setattr(walks, "_FAST_RUNS", fast)
                answers.append(asyncio.run(tools.directory_tree(_ctx(), {"path": ".", **arguments})).content)
            assert answers[0] == answers[1], arguments
            text = answers[0][0]["text"]  # written from the nodes' own JSON text: what json.dumps writes
            assert json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":")) == text
    finally:
        tools.sandbox.close()


def _plain_search(sandbox: Sandbox, pattern: str, include_ignored: bool) -> list[str]:
    """search_files' matches as the entry by entry walk finds them (one page, no limits)."""
    glob = compile_glob(pattern)
    location = sandbox.locate_directory(".")
    ignorer = None if include_ignored else Ignorer(sandbox)
    if ignorer is not None:
        ignorer.load_above(location)
    pruned: list[Any] = [None]
    found = []
    walk = sandbox.walk(location, sizes=False, descend=lambda c: c != pruned[0] and glob.could_match_below("/".join(c)),
                        entering=ignorer.entering if ignorer is not None else None)
    for components, entry in walk:
        directory = entry.kind == "directory"
        if directory and ignorer is not None and ignorer.ignored(components, True):
            pruned[0] = components
            continue
        relative = "/".join(components)
        if not glob.matches(relative):
            continue
        if not directory and ignorer is not None and ignorer.ignored(components, False):
            continue
        found.append(location.display.rstrip("/") + "/" + display_name(relative))
    return found


@pytest.mark.parametrize("pattern", ["**/*.py", "*.py", "**", "d0/**", "**/d*", "**/{a,Z}.py", "**/m1??.py"])
def test_search_files_finds_what_the_entry_by_entry_walk_finds(tree: Path, pattern: str) -> None:
    tools = _tools(tree, 1_000_000)
    try:
        for include_ignored in (False, True):
            result = asyncio.run(tools.search_files(_ctx(), {"path": ".", "pattern": pattern, "includeIgnored": include_ignored}))
            expected = _plain_search(tools.sandbox, pattern, include_ignored)
            assert result.content[0]["text"].split("\n") == (expected or ["No matches found"])
    finally:
        tools.sandbox.close()


def test_the_deepest_tree_a_walk_enters_is_written_as_json(tmp_path: Path) -> None:
    deepest = tmp_path / "root"
    deepest.mkdir()
    fd = os.open(deepest, os.O_RDONLY)
    for _ in range(listing.MAX_WALK_DEPTH + 5):  # made with *at calls: the path gets long
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    tools = _tools(deepest, 1_000_000)
    try:
        text = asyncio.run(tools.directory_tree(_ctx(), {"path": "."})).content[0]["text"]
    finally:
        tools.sandbox.close()
    node, depth = json.loads(text)[0], 1
    while node.get("children"):
        node, depth = node["children"][0], depth + 1
    assert depth == listing.MAX_WALK_DEPTH and json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":")) == text
