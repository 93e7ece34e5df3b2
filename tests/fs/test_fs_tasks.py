"""mcp-ref-fs's long-running tools as tasks (the io.modelcontextprotocol/tasks extension).

A grep, search or tree over a big directory answers a client that declared the extension with a
task handle; the task's status message counts the progress, and the search gets
--task-search-seconds instead of --search-seconds. Other clients get the plain result as before.
A task is followed to its end by ``mcp_ref.kit.testing.Client`` (it polls ``tasks/get``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from mcp_ref.kit.testing import Client
from tests.fs.conftest import fs_command
from tests.schema_check import schemas

DIRECTORIES, FILES = 150, 100


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """15,000 small text files; one line in each directory's f007.txt says "needle"."""
    root = tmp_path_factory.mktemp("big")
    filler = "lorem ipsum dolor sit amet\n" * 60
    for d in range(DIRECTORIES):
        directory = root / f"d{d:03}"
        directory.mkdir()
        for f in range(FILES):
            (directory / f"f{f:03}.txt").write_text(filler + ("needle here\n" if f == 7 else ""))
    return root


def fs_client(root: Path, options: tuple[str, ...] = (), tasks: bool = True) -> Client:
    """mcp-ref-fs over ``root`` behind a test client that declares the extension (unless ``tasks``
    is False) and polls a task every 20 ms."""
    return Client(fs_command(root, options=options), tasks=tasks, poll_interval=0.02, task_timeout=60, schemas=schemas())


def status_messages(polls: list[dict[str, Any]]) -> list[str]:
    """Every distinct status message the polls saw, in order."""
    seen: list[str] = []
    for task in polls:
        if task.get("statusMessage") and task["statusMessage"] not in seen:
            seen.append(task["statusMessage"])
    return seen


@pytest.mark.req("FS-LONG-SEARCHES-AS-TASKS")
def test_a_big_grep_becomes_a_task_whose_status_counts_files_and_gets_the_task_time_limit(big_tree: Path) -> None:
    with fs_client(big_tree, options=("--search-seconds", "0.3", "--task-search-seconds", "60",
                                      "--max-answer-bytes", "10000000")) as client:
        reply = client.call_tool("grep_files", {"path": str(big_tree), "pattern": "needle", "maxResults": 5000})
    # Progress may come while the call is an ordinary request; none once it is a task (then the
    # status message counts): every notification arrived before the task handle did.
    assert client.notifications == reply.notifications
    assert {n["method"] for n in reply.notifications} <= {"notifications/progress"}
    assert [created["resultType"] for created in reply.rounds] == ["task"]
    assert reply.task is not None and reply.task["status"] == "completed"
    result = reply.result
    assert len(result["content"]) == 1  # no note: nothing was cut
    assert len(result["content"][0]["text"].split("\n")) == DIRECTORIES
    seen = status_messages(reply.polls)
    assert seen and all(re.fullmatch(r"\d+ files searched, \d+ matching lines", message) for message in seen)


@pytest.mark.req("FS-LONG-SEARCHES-AS-TASKS")
def test_without_the_extension_the_same_grep_is_answered_directly_within_search_seconds(big_tree: Path) -> None:
    with fs_client(big_tree, options=("--search-seconds", "0.3", "--task-search-seconds", "60"), tasks=False) as client:
        reply = client.call_tool("grep_files", {"path": str(big_tree), "pattern": "needle", "maxResults": 5000})
    assert reply.rounds == []
    result = reply.result
    assert result["resultType"] == "complete"
    assert any("0.3 s time limit" in block["text"] for block in result["content"][1:])


@pytest.mark.req("FS-LONG-SEARCHES-AS-TASKS")
def test_search_files_and_directory_tree_become_tasks_too_and_small_calls_do_not(big_tree: Path) -> None:
    with fs_client(big_tree) as client:
        tree = client.call_tool("directory_tree", {"path": str(big_tree)})
        search = client.call_tool("search_files", {"path": str(big_tree), "pattern": "**/f007.txt"})
        for reply in (tree, search):
            if reply.rounds:  # a task (a fast machine may finish a walk within 0.1 s and answer directly)
                assert reply.task is not None and reply.task["status"] == "completed"
            assert not reply.is_error
        small = client.call_tool("list_directory", {"path": str(big_tree / "d000")})
        assert small.rounds == [] and small["resultType"] == "complete"  # not a task tool
        capabilities = client.discover()["capabilities"]
    assert capabilities["extensions"] == {"io.modelcontextprotocol/tasks": {}}
