"""The scenarios `make hosts` drives through every host, and how each is judged.

A scenario is a prompt, a script for the stand-in model (``standin.steps``: one step per tool
result seen, each a ``Call``, a ``Say``, or a function of the ``Turn`` that can read the last tool
result's text and decide the next call from it), and a check run afterwards on what happened:
the folder the server served, every turn the model saw (``Outcome.turns``: the tools offered and
each tool result exactly as the host passed it) and every line on the wire between host and
server (``Outcome.wire``).

To add one, append a ``Scenario`` to ``SCENARIOS``. The big-answer scenarios (``page-*``,
``media``, ``limit``) live in ``pages.py``: their scripts read the cue in ``turn.last.verbatim``
and make the call it names, and their checks compare ``outcome.wire_results()`` (what the server
sent) with ``outcome.seen_results()`` (what the model got, each result as it first arrived) to
prove nothing was cut or saved aside.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.hosts import pages
from tools.hosts.shapes import saw
from tools.hosts.standin import Say, Script, Turn, server_names, steps

# The tools mcp-ref-fs lists (tools/list), which every host must offer the model.
SERVER_TOOLS = {
    "read_text_file", "read_file", "read_media_file", "read_multiple_files", "write_file", "edit_file",
    "create_directory", "list_directory", "list_directory_with_sizes", "directory_tree", "move_file",
    "search_files", "grep_files", "get_file_info", "list_allowed_directories", "delete_file",
}
NOTES = "The quick brown fox jumps over the lazy dog.\nSecond line of notes.\n"
SERVER = "mcp-ref-fs"  # the entry's name, as print-config names it


def make_folder(root: Path) -> None:
    """The folder every scenario's server serves (fresh for each run)."""
    (root / "notes.txt").write_text(NOTES)
    (root / "colour.txt").write_text("colour: red\n")
    (root / "doomed.txt").write_text("delete me\n")
    (root / "sub").mkdir()
    (root / "sub" / "inner.txt").write_text("inside\n")


@dataclass
class Outcome:
    """What one host run left behind, for a scenario's check."""

    root: Path
    turns: list[dict[str, Any]]  # the stand-in's log entries of agent-loop turns
    wire: list[dict[str, Any]]  # the wiretap's lines: {"dir": "host"|"server", "line": ...}
    output: str  # the host's stdout and stderr
    returncode: int | None
    host: str = ""  # the host's name in run.HOSTS

    def seen_results(self) -> list[dict[str, Any]]:
        """Every tool result the model saw, in order, each once (a turn logs the ones it adds)."""
        return [result for turn in self.turns for result in turn.get("results", [])]

    def client_name(self) -> str | None:
        """The name the host gave itself (``clientInfo``: in ``initialize``, or a request's _meta)."""
        for direction, message in self.wire_messages():
            params = (message.get("params") or {}) if direction == "host" else {}
            info = params.get("clientInfo") or (params.get("_meta") or {}).get("io.modelcontextprotocol/clientInfo")
            if isinstance(info, dict) and isinstance(info.get("name"), str):
                return info["name"]
        return None

    def wire_messages(self) -> list[tuple[str, dict[str, Any]]]:
        found = []
        for entry in self.wire:
            try:
                found.append((entry["dir"], json.loads(entry["line"])))
            except ValueError:
                continue
        return found

    def wire_results(self) -> list[dict[str, Any]]:
        """The ``tools/call`` results the server sent, in order (what the host got)."""
        calls = {m.get("id") for d, m in self.wire_messages() if d == "host" and m.get("method") == "tools/call"}
        return [m["result"] for d, m in self.wire_messages() if d == "server" and m.get("id") in calls and "result" in m]

    def first_host_message(self) -> dict[str, Any] | None:
        for direction, message in self.wire_messages():
            if direction == "host":
                return message
        return None

    def server_requests(self, method: str) -> list[dict[str, Any]]:
        return [m for d, m in self.wire_messages() if d == "server" and m.get("method") == method and "id" in m]

    def confirmation(self) -> tuple[str | None, str | None]:
        """(how the server asked the user, what the host answered): ``("input_required", "decline")``
        at 2026-07-28, ``("elicitation/create", "accept")`` in the initialize era, ``(None, None)``."""
        messages = self.wire_messages()
        for index, (direction, message) in enumerate(messages):
            result = message.get("result") if direction == "server" else None
            if isinstance(result, dict) and result.get("resultType") == "input_required":
                for later_direction, later in messages[index + 1:]:
                    responses = (later.get("params") or {}).get("inputResponses") if later_direction == "host" else None
                    if isinstance(responses, dict) and responses:
                        answer = next(iter(responses.values()))
                        return "input_required", answer.get("action") if isinstance(answer, dict) else None
                return "input_required", None
            if direction == "server" and message.get("method") == "elicitation/create":
                answer = next((m for d, m in messages[index + 1:] if d == "host" and m.get("id") == message.get("id")), {})
                return "elicitation/create", (answer.get("result") or {}).get("action") or ("error" if "error" in answer else None)
        return None, None

    def declared_elicitation(self) -> bool:
        """Did the host declare the elicitation capability (initialize, or a request's _meta)?"""
        for direction, message in self.wire_messages():
            params = message.get("params") or {} if direction == "host" else {}
            capabilities = params.get("capabilities") or (params.get("_meta") or {}).get(
                "io.modelcontextprotocol/clientCapabilities") or {}
            if "elicitation" in capabilities:
                return True
        return False


class Skip(Exception):
    """The scenario does not apply to this host (it offers no way to do it)."""


Check = Callable[[Outcome], str | None]  # None: passed; a string: why it failed; raise Skip: n/a


@dataclass
class Scenario:
    name: str
    prompt: str
    script: Callable[[Path], Script]  # given the served folder
    check: Check
    accept: bool = False  # configure the host to accept the server's elicitation, where it can
    only: set[str] = field(default_factory=set)  # hosts it runs on (empty: all)
    prepare: Callable[[Path], None] | None = None  # adds what this scenario needs to the served folder
    server_args: list[str] = field(default_factory=list)  # after print-config's arguments
    timeout: int = 180  # seconds for the host's run
    describe: Callable[[Outcome], str] | None = None  # what the model saw, for the PASS or FAIL line


def _one_result(outcome: Outcome) -> dict[str, Any]:
    results = outcome.seen_results()
    if not results:
        raise AssertionError("the model never got a tool result")
    return results[0]


def _judge(*conditions: tuple[bool, str]) -> str | None:
    for ok, why in conditions:
        if not ok:
            return why
    return None


def check_tools(outcome: Outcome) -> str | None:
    if not outcome.turns:
        return "the host never asked the model anything with the server's tools"
    missing = sorted(SERVER_TOOLS - set(server_names(outcome.turns[0]["offered"], SERVER_TOOLS)))
    return f"not offered to the model: {', '.join(missing)}" if missing else None


def check_read(outcome: Outcome) -> str | None:
    result = _one_result(outcome)
    sent = outcome.wire_results()
    return _judge((saw(result["text"], NOTES.strip()), f"the model saw {result['text'][:120]!r}"),
                  (not result["is_error"], "the host marked the read as an error"),
                  (bool(sent), "no tools/call result on the wire"))


def check_list(outcome: Outcome) -> str | None:
    text = _one_result(outcome)["text"]
    return _judge((all(name in text for name in ("notes.txt", "colour.txt", "sub")), f"the model saw {text[:160]!r}"))


def check_write(outcome: Outcome) -> str | None:
    target = outcome.root / "new.txt"
    return _judge((target.exists(), "new.txt was not written"),
                  (target.exists() and target.read_text() == "written through the host\n", "new.txt has other content"))


def check_edit(outcome: Outcome) -> str | None:
    content = (outcome.root / "colour.txt").read_text()
    return _judge((content == "colour: blue\n", f"colour.txt is {content!r}"))


def check_declined(outcome: Outcome) -> str | None:
    result = _one_result(outcome)
    asked, answer = outcome.confirmation()
    if (outcome.root / "doomed.txt").exists() is False:
        return "doomed.txt was deleted without the user's yes"
    if outcome.declared_elicitation():
        return _judge((asked is not None, "the server never asked for a confirmation"),
                      (answer in ("decline", "cancel"), f"the host answered the confirmation with {answer!r}"),
                      (saw(result["text"], "Not deleted"), f"the model saw {result['text'][:160]!r}"))
    # A host without elicitation cannot be asked: the tool says so, as an error.
    return _judge((asked is None, "the server asked a host that cannot answer"),
                  ("elicitation" in result["text"], f"the model saw {result['text'][:160]!r}"))


def check_accepted(outcome: Outcome) -> str | None:
    asked, answer = outcome.confirmation()
    return _judge((asked is not None, "the server never asked for a confirmation"),
                  (answer == "accept", f"the host answered the confirmation with {answer!r}"),
                  (not (outcome.root / "doomed.txt").exists(), "doomed.txt is still there"))


RESOURCE_TOOLS = ("ReadMcpResourceTool", "read_mcp_resource", "readMcpResource", "read_resource")


def resource_script(root: Path) -> Script:
    def read(turn: Turn) -> Any:
        for name in turn.offered:
            if name in RESOURCE_TOOLS or name.split("__")[-1] in RESOURCE_TOOLS:
                return turn.call(name, server=SERVER, uri=(root / "notes.txt").as_uri())
        return Say("This host offers no resource tool.")
    return steps(read)


def check_resource(outcome: Outcome) -> str | None:
    offered = outcome.turns[0]["offered"] if outcome.turns else []
    if not any(n in RESOURCE_TOOLS or n.split("__")[-1] in RESOURCE_TOOLS for n in offered):
        raise Skip("the host offers the model no resource-reading tool")
    text = _one_result(outcome)["text"]
    return _judge((saw(text, NOTES.strip()), f"the model saw {text[:160]!r}"),
                  (any(m.get("method") == "resources/read" for d, m in outcome.wire_messages() if d == "host"),
                   "the host never sent resources/read"))


def _call(tool: str, **arguments: Any) -> Callable[[Turn], Any]:
    return lambda turn: turn.call(tool, **arguments)


SCENARIOS = [
    Scenario("tools", "List the tools you have.", lambda root: steps(then="I have the mcp-ref-fs tools."), check_tools),
    Scenario("read", "Read notes.txt.", lambda root: steps(_call("read_text_file", path=str(root / "notes.txt"))), check_read),
    Scenario("list", "List the folder.", lambda root: steps(_call("list_directory", path=str(root))), check_list),
    Scenario("write", "Write new.txt.", lambda root: steps(
        _call("write_file", path=str(root / "new.txt"), content="written through the host\n")), check_write),
    Scenario("edit", "Make the colour blue.", lambda root: steps(
        _call("edit_file", path=str(root / "colour.txt"), edits=[{"oldText": "red", "newText": "blue"}])), check_edit),
    Scenario("delete-declined", "Delete doomed.txt.", lambda root: steps(
        _call("delete_file", path=str(root / "doomed.txt"))), check_declined),
    Scenario("delete-accepted", "Delete doomed.txt.", lambda root: steps(
        _call("delete_file", path=str(root / "doomed.txt"))), check_accepted, accept=True, only={"claude-code"}),
    Scenario("resource", "Read notes.txt as a resource.", resource_script, check_resource),
]


# --- big answers (tools/hosts/pages.py) -----------------------------------------------------------

PAGE_SECONDS = 900  # a 2 MB file at 10 KB a page is over 200 turns of the host's loop


def _walk(name: str, prompt: str, prepare: Callable[[Path], None]) -> Scenario:
    walk = pages.WALKS[name]
    return Scenario(name, prompt, lambda root: pages.follow_cues(walk.tool, **walk.arguments(root)), walk.check,
                    prepare=prepare, timeout=PAGE_SECONDS, describe=walk.describe)


def check_limit(outcome: Outcome) -> str | None:
    from mcp_ref_fs.answers import answer_budget

    largest, _, _ = pages.measured(outcome)
    name = outcome.client_name()
    budget = answer_budget(None, {"name": name} if name else None)
    if largest is None:
        return f"no probe reached the model whole ({describe_limit(outcome)})"
    return _judge((largest >= budget, f"the host passes whole only {largest:,} bytes, less than the budget of "
                                      f"{budget:,} the server gives {name!r}"))


def describe_limit(outcome: Outcome) -> str:
    largest, cut, cut_text = pages.measured(outcome)
    whole = f"whole up to {largest:,} bytes" if largest else "nothing whole"
    if cut is None:
        return f"{whole}, the largest probe"
    return (f"{whole}; at {cut:,}: " +
            pages.what_is_in(cut_text, pages.probe_key(cut), cut // 64 + 1, "probe lines"))


def check_media(outcome: Outcome) -> str | None:
    from mcp_ref_fs.answers import HOSTS_WITHOUT_MEDIA

    result = _one_result(outcome)
    path = outcome.root / pages.PICTURE
    line = f"{path}: image/png, {path.stat().st_size:,} bytes, sent as an image block."
    images = [mime for mime, _ in outcome.turns[-1].get("media", []) if mime.startswith("image/")]
    if not saw(result["text"], line):
        return f"the model did not get the line saying what the file is; it saw {result['text'][:160]!r}"
    if outcome.client_name() in HOSTS_WITHOUT_MEDIA:
        return _judge((not images, f"the host passed {images} to its model: it shows images now (drop it from "
                                   "HOSTS_WITHOUT_MEDIA in servers/mcp_ref_fs/answers.py)"),
                      (saw(result["text"], "this line is all of it that reaches you"),
                       f"the model was not told that its host drops images: {result['text'][:200]!r}"))
    return _judge((bool(images), "the model API request carried no image part"))


def describe_media(outcome: Outcome) -> str:
    results = outcome.seen_results()
    if not results:
        return "no tool result reached the model"
    media = outcome.turns[-1].get("media", []) if outcome.turns else []
    parts = ", ".join(f"{mime} ({size:,} base64 characters)" for mime, size in media) or "no image part"
    text = " ".join(results[0]["text"].split())
    return f"{parts}; text {text[:110]!r}" + ("..." if len(text) > 110 else "")


SCENARIOS += [
    _walk("page-read", "Read big.txt to its last line.", pages.make_big),
    _walk("page-tree", "Show the whole tree of tree/.", pages.make_tree),
    _walk("page-search", "Find every .log file under tree/.", pages.make_tree),
    _walk("page-grep", "Find every line saying match here under tree/.", pages.make_tree),
    Scenario("media", "Show me picture.png.", lambda root: steps(_call("read_media_file", path=str(root / pages.PICTURE))),
             check_media, prepare=pages.make_picture, describe=describe_media),
    Scenario("limit", "Read the probes.", pages.measure_script, check_limit, prepare=pages.make_probes,
             server_args=["--max-answer-bytes", str(pages.MEASURE_BUDGET)], timeout=PAGE_SECONDS, describe=describe_limit),
]
