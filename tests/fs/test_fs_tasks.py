"""mcp-ref-fs's long-running tools as tasks (the io.modelcontextprotocol/tasks extension).

A grep, search or tree over a big directory answers a client that declared the extension with a
task handle; the task's status message counts the progress, and the search gets
--task-search-seconds instead of --search-seconds. Other clients get the plain result as before.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.wire import ServerProcess, modern_request, result_of

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
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


def call(server: ServerProcess, request_id: int, name: str, arguments: dict[str, Any], capabilities: dict[str, Any] | None) -> dict[str, Any]:
    return result_of(server.request(modern_request(request_id, "tools/call", {"name": name, "arguments": arguments}, capabilities=capabilities)))


def poll(server: ServerProcess, task_id: str) -> tuple[dict[str, Any], list[str]]:
    """tasks/get until the task ends; its final state and every status message seen on the way."""
    seen: list[str] = []
    deadline = time.monotonic() + 60
    for request_id in range(1000, 100_000):
        task = result_of(server.request(modern_request(request_id, "tasks/get", {"taskId": task_id}, capabilities=TASKS)))
        if task.get("statusMessage") and task["statusMessage"] not in seen:
            seen.append(task["statusMessage"])
        if task["status"] != "working":
            return task, seen
        assert time.monotonic() < deadline
        time.sleep(0.02)
    raise AssertionError("unreachable")


@pytest.mark.req("FS-LONG-SEARCHES-AS-TASKS")
def test_a_big_grep_becomes_a_task_whose_status_counts_files_and_gets_the_task_time_limit(
    big_tree: Path, start_fs: Callable[..., ServerProcess]
) -> None:
    server = start_fs(big_tree, options=("--search-seconds", "0.3", "--task-search-seconds", "60"))
    created = call(server, 1, "grep_files", {"path": str(big_tree), "pattern": "needle", "maxResults": 5000}, TASKS)
    assert created["resultType"] == "task"
    task, seen = poll(server, created["taskId"])
    assert task["status"] == "completed"
    result = task["result"]
    assert result["structuredContent"]["truncated"] is False
    assert len(result["structuredContent"]["matches"]) == DIRECTORIES
    assert result["structuredContent"]["filesSearched"] == DIRECTORIES * FILES
    assert seen and all(re.fullmatch(r"\d+ files searched, \d+ matching lines", message) for message in seen)
    # No progress notification reaches the client for a task.
    assert not [m for m in server.received if m.get("method") == "notifications/progress"]


@pytest.mark.req("FS-LONG-SEARCHES-AS-TASKS")
def test_without_the_extension_the_same_grep_is_answered_directly_within_search_seconds(
    big_tree: Path, start_fs: Callable[..., ServerProcess]
) -> None:
    server = start_fs(big_tree, options=("--search-seconds", "0.3", "--task-search-seconds", "60"))
    result = call(server, 1, "grep_files", {"path": str(big_tree), "pattern": "needle", "maxResults": 5000}, None)
    assert result["resultType"] == "complete"
    assert result["structuredContent"]["truncated"] is True
    assert "0.3 s time limit" in result["content"][-1]["text"]


@pytest.mark.req("FS-LONG-SEARCHES-AS-TASKS")
def test_search_files_and_directory_tree_become_tasks_too_and_small_calls_do_not(
    big_tree: Path, start_fs: Callable[..., ServerProcess]
) -> None:
    server = start_fs(big_tree)
    tree = call(server, 1, "directory_tree", {"path": str(big_tree)}, TASKS)
    search = call(server, 2, "search_files", {"path": str(big_tree), "pattern": "**/f007.txt"}, TASKS)
    for created in (tree, search):
        if created["resultType"] == "task":  # a fast machine may finish a walk within 0.1 s
            task, _ = poll(server, created["taskId"])
            assert task["status"] == "completed"
            created = task["result"]
        assert created["isError"] is False if "isError" in created else True
    small = call(server, 3, "list_directory", {"path": str(big_tree / "d000")}, TASKS)
    assert small["resultType"] == "complete"  # not a task tool
    capabilities = result_of(server.request(modern_request(4, "server/discover", {})))["capabilities"]
    assert capabilities["extensions"] == {"io.modelcontextprotocol/tasks": {}}
