"""Interoperability with the official TypeScript MCP clients, which desktop hosts embed.

Two client generations, pinned exactly in ``tests/ts_interop/package.json``:

- v1, ``@modelcontextprotocol/sdk`` (``Client`` + ``StdioClientTransport``): initialize era only.
- v2, ``@modelcontextprotocol/client``: ``legacy`` mode (its default, an ``initialize`` handshake,
  as VS Code uses it), ``{pin: "2026-07-28"}`` (the modern era, MRTR input through
  ``input_required`` results, fulfilled by the client itself) and ``auto`` (probes
  ``server/discover`` first).

``tests/ts_interop/driver.mjs`` spawns the server, answers every elicitation, sampling and
roots question with canned answers through the client's registered handlers, and prints one
JSON line describing what happened (results, questions asked, and what crossed the pipe).

The packages are installed once per content of package.json into a cache directory outside
the checkout (``$MCP_REF_TS_INTEROP_CACHE``, else ``$XDG_CACHE_HOME/mcp-ref/ts-interop`` or
``~/.cache/mcp-ref/ts-interop``). Without node/npm, or when the install fails (offline), every
test here is skipped with one reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIR = Path(__file__).resolve().parent / "ts_interop"
PACKAGE_JSON = SOURCE_DIR / "package.json"
PINNED: dict[str, str] = json.loads(PACKAGE_JSON.read_text())["dependencies"]
V1, V2 = "@modelcontextprotocol/sdk", "@modelcontextprotocol/client"
MIN_NODE_MAJOR = 20  # @modelcontextprotocol/client's engines.node
INSTALL_TIMEOUT = 300.0
DRIVER_TIMEOUT = 60.0

EVERYTHING = [sys.executable, "-m", "mcp_ref_everything"]
FS = [sys.executable, "-m", "mcp_ref_fs"]

# (client, mode) -> the era and protocol version the session must end up in.
SESSIONS = {
    ("v1", "legacy"): ("legacy", "2025-11-25"),
    ("v2", "legacy"): ("legacy", "2025-11-25"),
    ("v2", "modern"): ("modern", "2026-07-28"),
}
SESSION_IDS = [f"{client}-{mode}" for client, mode in SESSIONS]

# What each interactive tool of mcp-ref-everything returns given the driver's canned answers
# (accepted forms: name Ada, color teal, text "more", ok/confirm true; sampling "short"; one
# root), and which questions it asks, in order. Same expectations as the Python SDK tests in
# tests/test_legacy_input_requests.py.
ACCEPTED = {
    "test_streaming_elicitation": ("Streaming complete: more", ["elicitation/create"]),
    "test_input_required_result_elicitation": ("Hello, Ada!", ["elicitation/create"]),
    "test_input_required_result_sampling": ("Sampling result: short", ["sampling/createMessage"]),
    "test_input_required_result_list_roots": ("Found 1 root(s): file:///tmp/interop", ["roots/list"]),
    "test_input_required_result_request_state": (
        "state-ok: requestState validated (state={'kind': 'request-state'}, confirmed=True)",
        ["elicitation/create"],
    ),
    "test_input_required_result_multiple_inputs": (
        "Name: Ada; Greeting: short; Roots: 1",
        ["elicitation/create", "sampling/createMessage", "roots/list"],
    ),
    "test_input_required_result_multi_round": ("Multi-round complete for Ada who likes teal", ["elicitation/create"] * 2),
    "test_input_required_result_tampered_state": ("integrity-ok: state verified", ["elicitation/create"]),
    "test_input_required_result_capabilities": (
        "capabilities-ok: received elicit_input, sample_input",
        ["elicitation/create", "sampling/createMessage"],
    ),
    "test_url_elicitation": ("URL elicitation finished with action 'accept'", ["elicitation/create"]),
    "confirm_delete": ("notes.txt: deleted (pretend)", ["elicitation/create"]),
    "multi_input": ("Entries: Ada and Ada", ["elicitation/create"] * 2),
    "prompt:test_input_required_result_prompt": ("Prompt with context: interop", ["elicitation/create"]),
}
DECLINED = {
    "test_streaming_elicitation": "Streaming complete: (nothing)",
    "test_input_required_result_elicitation": "Hello, stranger!",
    "test_input_required_result_request_state": "state-ok: requestState validated (state={'kind': 'request-state'}, confirmed=False)",
    "test_input_required_result_multiple_inputs": "Name: stranger; Greeting: short; Roots: 1",
    "test_input_required_result_multi_round": "Multi-round complete for stranger who likes no colour",
    "test_url_elicitation": "URL elicitation finished with action 'decline'",
    "confirm_delete": "notes.txt: kept",
    "multi_input": "Entries: nobody and nobody",
    "prompt:test_input_required_result_prompt": "Prompt with context: none",
}
# Questions the whole everything scenario asks (each tool once, then the prompt).
QUESTIONS = {"elicitation/create": 13, "sampling/createMessage": 3, "roots/list": 2}


# --- installing the clients --------------------------------------------------------------------------


def _cache_root() -> Path:
    configured = os.environ.get("MCP_REF_TS_INTEROP_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcp-ref" / "ts-interop"


def _installed_version(directory: Path, package: str) -> str | None:
    try:
        return json.loads((directory / "node_modules" / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _is_complete(directory: Path) -> bool:
    return (directory / ".installed").is_file() and all(
        _installed_version(directory, package) == version for package, version in PINNED.items()
    )


def _npm_error_summary(output: str) -> str:
    """npm's error code and first message line (e.g. ECONNREFUSED and the failed request), not its stack."""
    lines = [line.removeprefix("npm error").strip() for line in output.splitlines() if line.startswith("npm error")]
    lines = [line for line in lines if line]
    code = next((line for line in lines if line.startswith("code ")), None)
    message = next((line for line in lines if not re.match(r"(code|syscall|errno|at) ", line)), None)
    picked = [line for line in (code, message) if line] or [line for line in output.splitlines() if line.strip()][-2:]
    return " | ".join(picked)[:400]


def _npm_install(npm: str, target: Path) -> str | None:
    """Installs package.json's pins into ``target`` (atomically); returns why it failed, or None."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
    try:
        shutil.copy2(PACKAGE_JSON, staging / "package.json")
        env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false"}
        command = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error",
                   "--fetch-retries=1", "--fetch-retry-mintimeout=2000", "--fetch-retry-maxtimeout=10000"]
        try:
            done = subprocess.run(command, check=False, cwd=staging, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"`npm install` took longer than {INSTALL_TIMEOUT:.0f} s"
        if done.returncode != 0:
            return f"`npm install` failed (exit {done.returncode}): {_npm_error_summary(done.stderr or done.stdout)}"
        (staging / ".installed").write_text(json.dumps(PINNED) + "\n")
        if not _is_complete(staging):
            return f"`npm install` did not install the pinned versions {PINNED}"
        try:
            staging.rename(target)  # atomic; loses harmlessly to a concurrent session that finished first
        except OSError:
            if not _is_complete(target):
                return f"could not move the installed packages to {target}"
        return None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@pytest.fixture(scope="session")
def ts_clients() -> Path:
    """The directory of the driver scripts, inside the cache directory holding the pinned TS clients."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("TypeScript interop: node and npm are needed on PATH (Node >= 20)")
    try:
        version = subprocess.run([node, "--version"], check=False, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"TypeScript interop: `node --version` failed: {error}")
    match = re.match(r"v(\d+)\.", version)
    if match is None or int(match.group(1)) < MIN_NODE_MAJOR:
        pytest.skip(f"TypeScript interop: Node >= {MIN_NODE_MAJOR} is needed, found {version or 'nothing'}")
    digest = hashlib.sha256(PACKAGE_JSON.read_bytes()).hexdigest()[:16]
    directory = _cache_root() / digest
    if not _is_complete(directory):
        shutil.rmtree(directory, ignore_errors=True)  # a partial install from an interrupted run
        problem = _npm_install(npm, directory)
        if problem is not None:
            pytest.skip(f"TypeScript interop: could not install {PINNED} into {directory}: {problem}")
    # The driver scripts go below the install (node finds node_modules in a parent directory), in
    # a folder named after their content: edits take effect, and checkouts sharing the cache never
    # overwrite each other's copy.
    scripts = sorted(SOURCE_DIR.glob("*.mjs"))
    content = hashlib.sha256(b"".join(script.name.encode() + b"\0" + script.read_bytes() for script in scripts)).hexdigest()[:16]
    drivers = directory / "drivers" / content
    if not (drivers / ".complete").is_file():
        staging = Path(tempfile.mkdtemp(prefix=".drivers-", dir=directory))
        for script in scripts:
            shutil.copy2(script, staging / script.name)
        (staging / ".complete").write_text("")
        drivers.parent.mkdir(exist_ok=True)
        try:
            staging.rename(drivers)
        except OSError:  # a concurrent session placed the same content first
            shutil.rmtree(staging, ignore_errors=True)
    return drivers


Runner = Callable[..., dict[str, Any]]


@pytest.fixture(scope="session")
def run_driver(ts_clients: Path) -> Runner:
    """Runs the driver once per distinct invocation (results are shared by the tests that read them)."""
    node = shutil.which("node")
    assert node is not None
    cache: dict[tuple[Any, ...], dict[str, Any]] = {}

    def run(client: str, mode: str, scenario: str, answer: str, server: list[str]) -> dict[str, Any]:
        key = (client, mode, scenario, answer, tuple(server))
        if key not in cache:
            env = {**os.environ, "MCP_TS_INTEROP_CWD": str(REPO_ROOT)}
            command = [node, str(ts_clients / "driver.mjs"), client, mode, scenario, answer, "--", *server]
            done = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=DRIVER_TIMEOUT)
            lines = done.stdout.strip().splitlines()
            report = json.loads(lines[-1]) if lines else None
            assert done.returncode == 0 and report is not None and report["ok"], (
                f"driver exited {done.returncode}\nreport: {json.dumps(report, indent=1)}\nstderr: {done.stderr[-3000:]}"
            )
            cache[key] = report
        return cache[key]

    return run


def everything(run_driver: Runner, client: str, mode: str, answer: str = "accept") -> dict[str, Any]:
    return run_driver(client, mode, "everything", answer, EVERYTHING)


# --- the session itself ------------------------------------------------------------------------------


def test_the_pinned_client_versions_are_the_ones_installed(ts_clients: Path) -> None:
    installed = ts_clients.parents[1]
    for package, version in PINNED.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{package} must be pinned exactly, not {version!r}"
        assert _installed_version(installed, package) == version
    assert PINNED[V1].startswith("1.") and PINNED[V2].startswith("2.")


@pytest.mark.parametrize(("client", "mode"), list(SESSIONS), ids=SESSION_IDS)
def test_each_ts_client_connects_in_its_era_and_lists_every_everything_tool(run_driver: Runner, client: str, mode: str) -> None:
    report = everything(run_driver, client, mode)
    era, version = SESSIONS[client, mode]
    assert (report["era"], report["protocolVersion"]) == (era, version)
    assert report["sdkVersion"] == PINNED[V1 if client == "v1" else V2]
    assert report["serverInfo"]["name"] == "mcp-ref-everything"
    assert {name for name in ACCEPTED if ":" not in name} | {"test_tool_with_task", "slow_compute", "greet"} <= set(report["tools"])
    assert report["calls"]["greet"]["text"] == "Hello, TypeScript!"
    assert report.get("clientErrors") is None  # nothing the client had to drop or complain about


def test_the_v2_client_in_auto_mode_probes_server_discover_and_picks_2026_07_28(run_driver: Runner) -> None:
    report = everything(run_driver, "v2", "auto")
    assert (report["era"], report["protocolVersion"]) == ("modern", "2026-07-28")
    assert report["wire"]["serverRequests"] == {} and report["wire"]["inputRequiredResults"] > 0
    assert {name: report["calls"][name].get("text") for name in ACCEPTED} == {name: text for name, (text, _) in ACCEPTED.items()}


# --- the interactive tools -----------------------------------------------------------------------------


@pytest.mark.req('LEGACY-CLIENT-INPUT-REQUESTS')
@pytest.mark.parametrize(("client", "mode"), list(SESSIONS), ids=SESSION_IDS)
def test_every_interactive_everything_tool_completes_through_the_ts_client_handlers(run_driver: Runner, client: str, mode: str) -> None:
    calls = everything(run_driver, client, mode)["calls"]
    for name, (text, asked) in ACCEPTED.items():
        call = calls[name]
        assert "error" not in call and call["isError"] is False, (name, call)
        assert (call["text"], call["asked"]) == (text, asked), name


@pytest.mark.req('LEGACY-CLIENT-INPUT-REQUESTS')
@pytest.mark.parametrize(("client", "mode"), list(SESSIONS), ids=SESSION_IDS)
def test_legacy_sessions_get_server_requests_and_modern_ones_input_required_results(run_driver: Runner, client: str, mode: str) -> None:
    report = everything(run_driver, client, mode)
    wire = report["wire"]
    tool_calls = len(report["calls"]) - 1  # one of the calls is prompts/get
    if SESSIONS[client, mode][0] == "legacy":
        # initialize era: the server sent elicitation/create, sampling/createMessage and roots/list
        # requests, one per question, and every call took exactly one tools/call.
        assert wire["serverRequests"] == QUESTIONS and wire["inputRequiredResults"] == 0
        assert wire["clientRequests"] == {"tools/list": 1, "tools/call": tool_calls, "prompts/get": 1}
    else:
        # 2026-07-28: never a server-to-client request; the client retried each interactive call
        # with inputResponses (and the echoed requestState) until it completed.
        assert wire["serverRequests"] == {}
        rounds = len(ACCEPTED) + 1  # one input_required result per interactive call, two for multi_round
        assert wire["inputRequiredResults"] == rounds
        assert wire["clientRequests"] == {"tools/list": 1, "tools/call": tool_calls + rounds - 1, "prompts/get": 2}
    assert sorted(question["method"] for question in report["asked"]) == sorted(
        method for method, times in QUESTIONS.items() for _ in range(times)
    )


@pytest.mark.parametrize(("client", "mode"), list(SESSIONS), ids=SESSION_IDS)
def test_url_elicitation_reaches_the_ts_client_in_url_mode(run_driver: Runner, client: str, mode: str) -> None:
    asked = everything(run_driver, client, mode)["asked"]
    urls = [(question["url"], question["fields"]) for question in asked if question.get("mode") == "url"]
    assert urls == [("https://example.com/authorize", [])]
    forms = [question for question in asked if question.get("mode") == "form"]
    assert len(forms) == QUESTIONS["elicitation/create"] - 1  # every other elicitation names its mode: form


@pytest.mark.parametrize(("client", "mode"), list(SESSIONS), ids=SESSION_IDS)
def test_declined_elicitations_reach_every_interactive_tool_as_a_decline(run_driver: Runner, client: str, mode: str) -> None:
    calls = everything(run_driver, client, mode, "decline")["calls"]
    for name, text in DECLINED.items():
        assert calls[name].get("text") == text and calls[name]["isError"] is False, (name, calls[name])


@pytest.mark.req('TASKS-REQUIRED-MISSING-CAPABILITY', 'TASKS-ONLY-TO-DECLARING-CLIENT')
@pytest.mark.parametrize(("client", "mode"), list(SESSIONS), ids=SESSION_IDS)
def test_without_the_tasks_extension_a_task_only_tool_is_refused_and_an_optional_one_answers_inline(
    run_driver: Runner, client: str, mode: str
) -> None:
    calls = everything(run_driver, client, mode)["calls"]
    refused = calls["test_tool_with_task"]
    assert refused["asked"] == [] and refused["error"]["code"] == -32021, refused
    assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    assert calls["slow_compute"]["text"] == "interop: computed for 1 s" and calls["slow_compute"]["isError"] is False
    assert everything(run_driver, client, mode)["wire"]["taskResults"] == 0


def test_the_v2_client_2_4_0_cannot_take_a_task_handle_and_its_session_survives_one(run_driver: Runner) -> None:
    # @modelcontextprotocol/client 2.4.0 does not implement the io.modelcontextprotocol/tasks
    # extension: declaring it anyway (capabilities.extensions) makes our server answer
    # slow_compute with a task handle, which the client rejects as an unsupported result type.
    report = run_driver("v2", "modern", "tasks", "accept", EVERYTHING)
    assert report["serverExtensions"] == ["io.modelcontextprotocol/tasks"]
    assert report["wire"]["taskResults"] == 1
    assert report["calls"]["slow_compute"]["error"]["code"] == "UNSUPPORTED_RESULT_TYPE"
    assert report["calls"]["slow_compute"]["error"]["data"] == {"resultType": "task", "method": "tools/call"}
    assert report["calls"]["greet"]["text"] == "Hello, after tasks!"


# --- mcp-ref-fs -------------------------------------------------------------------------------------------


@pytest.mark.req('FS-DELETE-CONFIRMED')
@pytest.mark.parametrize("answer", ["accept", "decline"], ids=["accept-deletes", "decline-keeps"])
@pytest.mark.parametrize(("client", "mode"), list(SESSIONS), ids=SESSION_IDS)
def test_fs_delete_file_asks_the_ts_client_and_deletes_only_when_confirmed(
    run_driver: Runner, tmp_path: Path, client: str, mode: str, answer: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    doomed = root / "doomed.txt"
    doomed.write_text("interop line\nsecond line\n")
    report = run_driver(client, mode, f"fs:{doomed}", answer, [*FS, str(root)])
    assert report["serverInfo"]["name"] == "mcp-ref-fs" and report["era"] == SESSIONS[client, mode][0]
    assert {"read_text_file", "grep_files", "delete_file"} <= set(report["tools"])
    calls = report["calls"]
    # The plain tools first: text and structured content come through the TS client intact.
    assert calls["list_allowed_directories"]["structured"]["directories"] == [str(root)]
    assert calls["read_text_file"]["text"] == "interop line\nsecond line\n"
    assert calls["read_text_file"]["structured"] is None  # FS-TEXT-ONCE: the text comes once, as text
    assert calls["grep_files"]["text"] == f"{doomed}:1: interop line"
    # Then the confirmation: exactly one form, naming the file, whatever the era.
    delete = calls["delete_file"]
    assert delete["asked"] == ["elicitation/create"] and delete["isError"] is False, delete
    (question,) = report["asked"]
    assert question["fields"] == ["confirm"] and str(doomed) in question["message"]
    assert delete["structured"]["deleted"] is (answer == "accept")
    assert doomed.exists() is (answer == "decline")
    expected_wire = {"serverRequests": {"elicitation/create": 1}, "inputRequiredResults": 0}
    if mode == "modern":
        expected_wire = {"serverRequests": {}, "inputRequiredResults": 1}
    assert {key: report["wire"][key] for key in expected_wire} == expected_wire
