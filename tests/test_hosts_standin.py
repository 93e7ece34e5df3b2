"""The stand-in model of `make hosts` (tools/hosts/): each API's request read and answer shaped.

`make hosts` itself downloads four hosts from npm and is not part of `make test`; these tests
check, without npm, what the hosts rely on: that a request is read into the tools offered and
the tool results exactly as the host passed them, and that a scripted step comes back in the
shape each API's clients parse (streamed and whole), over real HTTP for the server part.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tools.hosts import pages, shapes
from tools.hosts.scenarios import Outcome, check_tools, saw
from tools.hosts.shapes import Call, Say
from tools.hosts.standin import StandIn, Turn, name_of, read_log, server_names, steps

FS_TOOLS = {"read_file", "read_multiple_files", "list_directory"}


def test_an_anthropic_request_yields_each_tool_result_with_the_name_of_the_call_it_answers():
    body = {"model": "m", "stream": True, "tools": [{"name": "mcp__fs__read_file"}, {"name": "Bash"}], "messages": [
        {"role": "user", "content": "Read it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "mcp__fs__read_file", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                      "content": [{"type": "text", "text": "no such file"}]}]},
    ]}
    seen = shapes.anthropic_seen(body)
    assert (seen.prompt, seen.calls, seen.stream, seen.offered) == ("Read it", 1, True, ["mcp__fs__read_file", "Bash"])
    assert [(r.name, r.text, r.is_error) for r in seen.results] == [("mcp__fs__read_file", "no such file", True)]


def test_an_anthropic_tool_call_streams_as_the_six_message_events_with_its_input_as_json():
    whole, events = shapes.anthropic_render(Call("mcp__fs__read_file", {"path": "/a"}, id="toolu_1"), "m")
    assert [name for name, _ in events] == ["message_start", "content_block_start", "content_block_delta",
                                            "content_block_stop", "message_delta", "message_stop"]
    assert json.loads(events[2][1]["delta"]["partial_json"]) == {"path": "/a"}
    assert events[4][1]["delta"]["stop_reason"] == whole["stop_reason"] == "tool_use"
    assert whole["content"] == [{"type": "tool_use", "id": "toolu_1", "name": "mcp__fs__read_file", "input": {"path": "/a"}}]
    text, _ = shapes.anthropic_render(Say("Done."), "m")
    assert (text["content"], text["stop_reason"]) == ([{"type": "text", "text": "Done."}], "end_turn")


def test_a_gemini_request_yields_function_responses_and_a_call_renders_as_a_function_call_part():
    body = {"contents": [
        {"role": "user", "parts": [{"text": "List it"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "mcp_fs_list_directory", "args": {"path": "/"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "mcp_fs_list_directory",
                                                         "response": {"output": "[FILE] a.txt"}}}]},
    ], "tools": [{"functionDeclarations": [{"name": "mcp_fs_list_directory"}]}],
        "generationConfig": {"responseJsonSchema": {"type": "object", "properties": {"next_speaker": {"enum": ["user", "model"]}}}}}
    seen = shapes.gemini_seen(body, "gemini-x", True)
    assert (seen.calls, seen.prompt, [r.text for r in seen.results]) == (1, "List it", ["[FILE] a.txt"])
    assert shapes.example_of(seen.schema) == {"next_speaker": "user"}
    part = shapes.gemini_render(Call("mcp_fs_list_directory", {"path": "/"}), "gemini-x")["candidates"][0]["content"]["parts"][0]
    assert part == {"functionCall": {"name": "mcp_fs_list_directory", "args": {"path": "/"}}}


def test_a_responses_request_flattens_namespace_tools_and_a_call_goes_back_inside_its_namespace():
    body = {"model": "m", "stream": True, "tools": [
        {"type": "function", "name": "exec_command"},
        {"type": "namespace", "name": "mcp__fs", "tools": [{"type": "function", "name": "read_file"}]},
    ], "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Read"}]},
        {"type": "function_call", "call_id": "c1", "name": "read_file", "namespace": "mcp__fs", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": '{"content": "hello"}'},
    ]}
    seen = shapes.responses_seen(body)
    assert seen.offered == ["exec_command", "mcp__fs__read_file"]
    assert [(r.name, r.text) for r in seen.results] == [("mcp__fs__read_file", "hello")]
    whole, events = shapes.responses_render(Call("mcp__fs__read_file", {"path": "/a"}, id="c2"), "m", seen.namespaces)
    item = whole["output"][0]
    assert (item["type"], item["namespace"], item["name"], item["call_id"]) == ("function_call", "mcp__fs", "read_file", "c2")
    assert [name for name, _ in events][0] == "response.created" and events[-1][0] == "response.completed"


def test_a_chat_completions_call_streams_as_a_tool_calls_delta_then_its_finish_reason():
    body = {"model": "m", "tools": [{"type": "function", "function": {"name": "fs-read_file"}}], "messages": [
        {"role": "user", "content": "Read"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                               "function": {"name": "fs-read_file", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "file text"},
    ]}
    seen = shapes.chat_seen(body)
    assert (seen.offered, seen.calls, [(r.name, r.text) for r in seen.results]) == (["fs-read_file"], 1, [("fs-read_file", "file text")])
    whole, chunks = shapes.chat_render(Call("fs-read_file", {"path": "/a"}, id="c2"), "m")
    assert chunks[0]["choices"][0]["delta"]["tool_calls"][0]["function"] == {"name": "fs-read_file", "arguments": '{"path": "/a"}'}
    assert chunks[1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"] == "tool_calls"


def test_tool_result_text_is_every_string_with_json_inside_strings_read_too():
    assert shapes.text_of([{"type": "text", "text": '{"content": "a\\nb", "truncated": false}'}]) == "a\nb"
    assert shapes.text_of({"output": "plain", "mimeType": "text/plain"}) == "plain"
    assert saw('{"content":"line one\\nline two"}', "line one\nline two")


def test_a_server_tool_is_found_under_the_hosts_prefix_and_not_confused_with_a_builtin_or_a_longer_name():
    offered = ["read_file", "mcp_fs_read_file", "mcp_fs_read_multiple_files", "mcp__fs__list_directory"]
    assert name_of(offered, "read_file") == "mcp_fs_read_file"
    assert name_of(offered, "read_multiple_files") == "mcp_fs_read_multiple_files"
    assert name_of(["mcp_fs_read_multiple_files"], "read_file") is None
    assert server_names(offered, FS_TOOLS) == {"read_file": "mcp_fs_read_file", "read_multiple_files": "mcp_fs_read_multiple_files",
                                               "list_directory": "mcp__fs__list_directory"}


def test_a_script_step_reads_the_last_result_and_decides_the_next_call_from_it():
    def follow_cue(turn: Turn):  # e.g. paging: the server says where to go on
        offset = int(turn.last.text.rsplit("offset=", 1)[1])
        return turn.call("read_file", path="/big", offset=offset)

    script = steps(lambda turn: turn.call("read_file", path="/big"), follow_cue, then="All read.")
    offered = ["mcp__fs__read_file"]

    def turn_with(*texts: str) -> Turn:
        results = [shapes.Result("mcp__fs__read_file", text, False, None) for text in texts]
        return Turn(shapes.Seen("anthropic", "m", True, offered, results, len(results), "p"), FS_TOOLS)

    assert script(turn_with()).arguments == {"path": "/big"}
    second = script(turn_with("...cut; continue with offset=4096"))
    assert (second.name, second.arguments) == ("mcp__fs__read_file", {"path": "/big", "offset": 4096})
    assert script(turn_with("a", "b")).text == "All read."
    assert isinstance(script(Turn(shapes.Seen("x", "m", True, [], [], 0, ""), FS_TOOLS)), Call) is False


def test_the_tools_check_names_each_server_tool_the_host_left_out(tmp_path):
    outcome = Outcome(tmp_path, [{"turn": True, "offered": ["mcp__fs__read_file"]}], [], "", 0)
    assert "list_allowed_directories" in check_tools(outcome)


def _post(port: int, path: str, body: dict) -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, response.getheader("Content-Type"), response.read()


@pytest.fixture
def standin(tmp_path: Path):
    log = tmp_path / "model.jsonl"
    server = StandIn(steps(lambda turn: turn.call("list_directory", path="/r")), log, FS_TOOLS)
    port = server.start()
    yield port, log
    server.stop()


def test_the_stand_in_serves_every_api_on_one_port_and_logs_what_the_model_saw(standin):
    port, log = standin
    tools = [{"name": "mcp__fs__list_directory"}]
    status, kind, body = _post(port, "/v1/messages?beta=true", {"model": "m", "stream": True, "tools": tools,
                                                               "messages": [{"role": "user", "content": "go"}]})
    assert (status, kind) == (200, "text/event-stream")
    assert b"event: message_start" in body and b'"name":"mcp__fs__list_directory"' in body.replace(b" ", b"")
    status, _, body = _post(port, "/v1/messages", {"model": "m", "messages": [{"role": "user", "content": "title?"}]})
    assert json.loads(body)["content"] == [{"type": "text", "text": "OK"}]  # a side request: no server tools
    status, kind, body = _post(port, "/v1beta/models/g:streamGenerateContent?alt=sse", {
        "contents": [{"role": "user", "parts": [{"text": "go"}]}],
        "tools": [{"functionDeclarations": [{"name": "mcp_fs_list_directory"}]}]})
    assert kind == "text/event-stream" and b"functionCall" in body
    status, _, body = _post(port, "/v1/chat/completions", {"model": "m", "stream": True, "messages": [],
                                                          "tools": [{"type": "function", "function": {"name": "fs-list_directory"}}]})
    assert body.rstrip().endswith(b"data: [DONE]")
    status, _, body = _post(port, "/v1/responses", {"model": "m", "input": [], "tools": [{"type": "function", "name": "list_directory"}]})
    assert json.loads(body)["output"][0]["name"] == "list_directory"
    assert _post(port, "/v1/messages/count_tokens", {})[0] == 200
    assert _post(port, "/nowhere", {})[0] == 404
    entries = read_log(log)
    turns = [e for e in entries if e.get("turn")]
    assert [t["api"] for t in turns] == ["anthropic", "gemini", "chat", "responses"]
    assert all(t["step"]["kind"] == "Call" for t in turns)
    assert any(e.get("side") == "no server tools offered" for e in entries)
    assert log.with_suffix(".raw.jsonl").read_text().count("\n") == 7  # every request, whole


def _wire(*messages: tuple[str, dict]) -> list[dict]:
    return [{"dir": direction, "line": json.dumps(message)} for direction, message in messages]


def test_the_confirmation_and_the_hosts_answer_are_read_from_the_wire_in_both_eras(tmp_path):
    modern = _wire(
        ("host", {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "delete_file", "_meta": {
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}}}),
        ("server", {"jsonrpc": "2.0", "id": 3, "result": {"resultType": "input_required", "inputRequests": {
            "confirm_delete": {"method": "elicitation/create", "params": {}}}}}),
        ("host", {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"inputResponses": {
            "confirm_delete": {"action": "decline"}}}}))
    legacy = _wire(
        ("host", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}),
        ("server", {"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create", "params": {}}),
        ("host", {"jsonrpc": "2.0", "id": "srv-1", "result": {"action": "accept", "content": {"confirm": True}}}))
    first = Outcome(tmp_path, [], modern, "", 0)
    assert first.confirmation() == ("input_required", "decline") and first.declared_elicitation()
    second = Outcome(tmp_path, [], legacy, "", 0)
    assert second.confirmation() == ("elicitation/create", "accept") and not second.declared_elicitation()
    assert Outcome(tmp_path, [], [], "", 0).confirmation() == (None, None)


# --- images, verbatim text and the host's own questions -----------------------------------------------


def test_an_image_part_is_found_in_each_apis_shape_and_its_base64_is_not_read_as_text():
    parts = [{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "QUJD"}},
             {"inlineData": {"mimeType": "image/png", "data": "QUJDRA=="}},
             {"type": "input_image", "image_url": "data:image/png;base64,QUJD"},
             {"type": "image_url", "image_url": {"url": "data:image/webp;base64,QQ=="}}]
    assert shapes.media_in([{"content": parts}, {"text": "no image"}]) == [
        ("image/jpeg", 4), ("image/png", 8), ("image/png", 4), ("image/webp", 4)]
    assert shapes.text_of([{"type": "text", "text": "a.png: image/png"}, *parts]) == "a.png: image/png"


def test_verbatim_text_keeps_json_as_the_host_passed_it_where_text_reads_it():
    result = shapes.Result.of("t", [{"type": "text", "text": '[{"name":"a","type":"file"}]'}], False, None)
    assert result.verbatim == '[{"name":"a","type":"file"}]' and result.text == "a"


def test_a_user_message_after_the_tool_results_is_the_hosts_own_question_not_a_turn():
    summary = "Please create a detailed summary of the conversation so far."
    chat = {"tools": [{"type": "function", "function": {"name": "fs-list_directory"}}], "messages": [
        {"role": "user", "content": "List it"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "fs-list_directory"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "[FILE] a"}]}
    assert shapes.chat_seen(chat).question is None
    assert shapes.chat_seen({**chat, "messages": chat["messages"] + [{"role": "user", "content": summary}]}).question == summary
    anthropic = [{"role": "user", "content": "List it"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x"}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                                              {"type": "text", "text": "<system-reminder/>"}]}]
    assert shapes.anthropic_seen({"messages": anthropic}).question is None
    assert shapes.anthropic_seen({"messages": anthropic + [{"role": "user", "content": summary}]}).question == summary
    gemini = [{"role": "user", "parts": [{"text": "List it"}]}, {"role": "model", "parts": [{"functionCall": {"name": "x"}}]},
              {"role": "user", "parts": [{"functionResponse": {"name": "x", "response": {"output": "a"}}}]}]
    assert shapes.gemini_seen({"contents": gemini}, "g", True).question is None
    assert shapes.gemini_seen({"contents": gemini + [{"role": "user", "parts": [{"text": summary}]}]}, "g", True).question == summary
    responses = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List it"}]},
                 {"type": "function_call", "call_id": "c1", "name": "x"}, {"type": "function_call_output", "call_id": "c1", "output": "a"}]
    assert shapes.responses_seen({"input": responses}).question is None
    assert shapes.responses_seen({"input": responses + [{"type": "message", "role": "user", "content": summary}]}).question == summary


def test_a_question_of_the_host_is_answered_with_text_and_a_turn_logs_only_the_results_it_adds(tmp_path):
    log = tmp_path / "model.jsonl"
    server = StandIn(lambda turn: turn.call("list_directory", path="/r"), log, FS_TOOLS)
    try:
        _ask_twice_then_summarise(server.start())
    finally:
        server.stop()
    entries = read_log(log)
    turns = [e for e in entries if e.get("turn")]
    assert [[r["verbatim"] for r in t["results"]] for t in turns] == [["page 1"], ["page 2"]]
    assert [t["result_count"] for t in turns] == [1, 2]
    assert entries[-1]["side"] == "a question about the conversation"


def _ask_twice_then_summarise(port: int) -> None:
    tools = [{"type": "function", "function": {"name": "fs-list_directory"}}]
    history = [{"role": "user", "content": "go"}]
    for n in range(1, 3):
        history += [{"role": "assistant", "tool_calls": [{"id": f"c{n}", "function": {"name": "fs-list_directory"}}]},
                    {"role": "tool", "tool_call_id": f"c{n}", "content": f"page {n}"}]
        assert json.loads(_post(port, "/v1/chat/completions", {"tools": tools, "messages": history})[2])[
            "choices"][0]["message"]["tool_calls"]
    asked = history + [{"role": "user", "content": "Summarise the conversation."}]
    answer = json.loads(_post(port, "/v1/chat/completions", {"tools": tools, "messages": asked})[2])["choices"][0]["message"]
    assert answer.get("tool_calls") is None and "cues" in answer["content"]


def test_a_token_count_is_the_bytes_of_the_requests_text_the_most_any_byte_tokenizer_counts(standin):
    port, _ = standin
    body = {"system": "sys", "messages": [{"role": "user", "content": [{"type": "text", "text": "é" * 10}]}]}
    assert json.loads(_post(port, "/v1/messages/count_tokens", body)[2]) == {"input_tokens": 3 + 1 + 20}


# --- the big-answer scenarios (tools/hosts/pages.py) --------------------------------------------------

READ_TOOLS = {"read_text_file", "write_file"}


def _turn(*texts: str, offered: tuple[str, ...] = ("mcp__fs__read_text_file", "mcp__fs__write_file")) -> Turn:
    results = [shapes.Result("mcp__fs__read_text_file", text, False, None, text) for text in texts]
    return Turn(shapes.Seen("anthropic", "m", True, list(offered), results, len(results), "p"), READ_TOOLS)


def test_the_model_makes_exactly_the_call_the_last_cue_names_and_stops_where_none_is_left():
    script = pages.follow_cues("read_text_file", path="/r/big.txt")
    assert script(_turn()).arguments == {"path": "/r/big.txt"}
    cue = '[Lines 1-9 of 20 (cut). Next page: read_text_file {"path": "/r/big.txt", "offset": 9, "limit": 9}]'
    step = script(_turn("line\n" + cue))
    assert (step.name, step.arguments) == ("mcp__fs__read_text_file", {"path": "/r/big.txt", "offset": 9, "limit": 9})
    assert isinstance(script(_turn(cue, "[Lines 19-20 of 20: the end of the file.]")), Say)
    assert pages.next_call_in('Next page: search_files {"path": "/r", "pattern": "**/*.log", "start": 40}]') == (
        "search_files", {"path": "/r", "pattern": "**/*.log", "start": 40})
    assert pages.next_call_in("Next page: read_text_file {not json") is None


def test_ranges_name_runs_and_elide_the_middle_of_many():
    assert pages.ranges([1, 2, 3, 7, 8, 10]) == "1-3, 7-8, 10"
    assert pages.ranges([]) == "none"
    assert pages.ranges(list(range(0, 40, 2))) == "0, 2, 4, 6, ... (20 runs), 38"


def _paged(tmp_path: Path, budget: int) -> tuple[Path, list[dict]]:
    """big.txt read through the real server by its cues: the wiretap's lines of every call and answer."""
    from tests.fs.conftest import fs_command
    from tests.wire import ServerProcess, tool_call

    root = tmp_path / "served"
    root.mkdir()
    pages.make_big(root)
    wire, arguments = [], {"path": str(root / pages.BIG)}
    with ServerProcess(fs_command(root, options=("--max-answer-bytes", str(budget)))) as server:
        for number in range(1, 100):
            request = tool_call(number, "read_text_file", arguments)
            response = server.request(request, timeout=30)
            wire += [{"dir": "host", "line": json.dumps(request)}, {"dir": "server", "line": json.dumps(response)}]
            cue = pages.next_call_in(response["result"]["content"][-1]["text"])
            if cue is None:
                return root, wire
            arguments = cue[1]
    raise AssertionError("still paging")


def _outcome(root: Path, wire: list[dict], change: Callable[[int, str], str] = lambda number, text: text) -> Outcome:
    """What a host that passes each answer's text blocks joined (after ``change``) would have shown."""
    answers = [json.loads(e["line"])["result"] for e in wire if e["dir"] == "server"]
    turns = [{"turn": True, "offered": [], "results": [{"text": change(n, t), "verbatim": change(n, t), "is_error": False}]}
             for n, t in enumerate(("\n".join(b["text"] for b in a["content"]) for a in answers), 1)]
    return Outcome(root, turns, wire, "", 0)


def test_the_read_check_passes_pages_that_arrived_whole_and_names_the_first_that_did_not(tmp_path):
    root, wire = _paged(tmp_path, 400_000)
    walk = pages.WALKS["page-read"]
    assert walk.check(_outcome(root, wire)) is None
    assert walk.describe(_outcome(root, wire)).endswith("lines 1-40,000 of 40,000")
    host_cut = _outcome(root, wire, lambda n, text: text[:6000] + "\n[... 1234 tokens truncated ...]\n" + text[-6000:] if n == 2 else text)
    problem = walk.check(host_cut)
    assert problem.startswith("page 2 did not reach the model whole: lines ") and "tokens truncated" in problem
    dropped = _outcome(root, wire[:-2])  # the model stopped a page early
    assert walk.check(dropped).startswith("the model stopped after lines ")
    once_more = _outcome(root, wire, lambda n, text: text.replace(pages.big_line(10), pages.big_line(10) * 2))
    assert "did not reach the model whole" in walk.check(once_more)


def test_the_tree_check_takes_out_the_parents_a_page_repeats_and_nothing_else(tmp_path):
    (tmp_path / pages.TREE / "a" / "b").mkdir(parents=True)
    for name in ("a/b/one.txt", "a/b/two.txt", "a/c.txt"):
        (tmp_path / pages.TREE / name).write_text("x")
    assert pages.tree_entries(tmp_path) == ["a", "a/b", "a/b/one.txt", "a/b/two.txt", "a/c.txt"]
    page = '[{"name":"a","type":"directory","children":[{"name":"b","type":"directory","children":[{"name":"two.txt","type":"file"}]}]}]'
    assert pages._without_parents(pages._tree_paths(page), "a/b/two.txt") == ["a/b/two.txt"]


def test_the_bisection_finds_a_hosts_limit_to_a_step_and_judges_each_read_when_it_is_new(tmp_path):
    limit = 20_480  # a host that saves anything larger to a file, and masks old reads in the history it resends
    script = pages.measure_script(tmp_path)
    sent: list[str] = []  # the results as the host sends them
    first_seen: list[str] = []  # each as it first arrived: what the stand-in logs
    while not isinstance(step := script(_turn(*sent)), Say):
        assert len(sent) < 40, "the bisection does not end"
        if step.name.endswith("write_file"):
            text = "Successfully wrote " + step.arguments["path"]
        else:
            content = pages.probe_text(int(step.arguments["path"][-10:-4]))
            text = content if len(content) <= limit else "Output too large to read at once. Saved to: /tmp/x.txt"
        sent = ["<tool_output_masked>" if index % 2 else old for index, old in enumerate(sent)] + [text]
        first_seen.append(text)
    outcome = Outcome(tmp_path, [{"turn": True, "results": [{"verbatim": t, "text": t}]} for t in first_seen], [], "", 0)
    largest, cut, cut_text = pages.measured(outcome)
    assert largest <= limit < cut and cut - largest == 250 and cut_text.startswith("Output too large")


def test_a_noise_png_is_valid_and_as_big_as_its_pixels():
    data = pages.png(40, 30)
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")
    assert 40 * 30 * 3 < len(data) < 40 * 30 * 3 + 200
