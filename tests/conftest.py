"""Shared pytest hooks.

Requirement markers: every ``@pytest.mark.req(...)`` argument must be a requirement id of the
form AREA-SHORT-NAME (see spec/README.md). A typo fails the run at collection, before any test
runs. Whether the id exists in spec/ is checked by tests/test_spec_traceability.py.
"""

from __future__ import annotations

import getpass
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

_TRACE_PATH = Path(__file__).resolve().parents[1] / "spec" / "trace.py"
_TRACE_MODULE = "mcp_ref_spec_trace"


def load_trace() -> ModuleType:
    """spec/trace.py as a module (it is a script, not a package; loaded once per process)."""
    module = sys.modules.get(_TRACE_MODULE)
    if module is None:
        spec = importlib.util.spec_from_file_location(_TRACE_MODULE, _TRACE_PATH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_TRACE_MODULE] = module  # dataclasses look their module up here
        spec.loader.exec_module(module)
    return module


def pytest_configure(config: pytest.Config) -> None:
    # Some tests build trees 1000 levels deep (tests/fs/test_fs_lookups.py removes its own with
    # `rm -rf` when it ends). A run killed meanwhile leaves one in pytest's temporary root, and
    # every later run on that machine rotates old folders out with shutil.rmtree, which recurses
    # once per level and stops at Python's default limit of 1000 frames (RecursionError, a red
    # run). Leftover `garbage-*` folders are removed here with `rm -rf`, which has no such limit,
    # and the limit is raised for the numbered folders pytest rotates out itself.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
    temproot = Path(os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir())
    try:
        user = getpass.getuser()
    except (ImportError, KeyError, OSError):
        return
    garbage = [str(path) for path in (temproot / f"pytest-of-{user}").glob("garbage-*")]
    if garbage:
        subprocess.run(["rm", "-rf", "--", *garbage], check=False)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    pattern = load_trace().ID_PATTERN
    problems: dict[str, None] = {}  # ordered set: one line per distinct problem
    for item in items:
        for mark in item.iter_markers(name="req"):
            if mark.kwargs:
                problems[f"{item.nodeid}: pytest.mark.req takes requirement ids only, got keywords {sorted(mark.kwargs)}"] = None
            if not mark.args:
                problems[f"{item.nodeid}: pytest.mark.req() names no requirement id"] = None
            for arg in mark.args:
                if not isinstance(arg, str) or not pattern.fullmatch(arg):
                    problems[
                        f"{item.nodeid}: {arg!r} is not a requirement id (AREA-SHORT-NAME, uppercase; see spec/README.md)"
                    ] = None
    if problems:
        raise pytest.UsageError("invalid requirement markers:\n  " + "\n  ".join(problems))



def _schema_account() -> tuple[object, str] | None:
    try:
        from tests.schema_check import schema_dir
    except ImportError:  # a copied conftest in a scratch repo (test_spec_traceability) has no harness
        return None
    return schema_dir()


def pytest_report_header(config: pytest.Config) -> str | None:
    account = _schema_account()
    return account[1] if account else None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    # One visible line when the schema checks were skipped, so a green run never hides it.
    account = _schema_account()
    if account is not None and account[0] is None:
        terminalreporter.write_line(
            f"SCHEMA CHECKS SKIPPED: {account[1]}. Set MCP_REF_SCHEMA_DIR to a folder with the official schemas to run them.",
            yellow=True,
            bold=True,
        )
    elif account is not None:
        from tests.schema_check import TASKS_SCHEMA_FILE, tasks_schema_path

        if tasks_schema_path() is None:
            terminalreporter.write_line(
                f"TASKS EXTENSION SCHEMA CHECKS SKIPPED: no {TASKS_SCHEMA_FILE} in $MCP_REF_SCHEMA_DIR, ../shared/reference "
                "or the cache, and it could not be downloaded; tasks results are checked as JSON-RPC messages only.",
                yellow=True,
                bold=True,
            )
