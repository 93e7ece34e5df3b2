"""Answers that fit the host (issue 20), over real stdio: the budget per client, the cues that
name the next call, pages followed to the end, ignored entries, and the text beside media.

A "model" here is the test itself: it reads only the text blocks, and follows the JSON of the
``Next page:`` / ``Next lines:`` cue literally, as a model following the server's cues would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.fs.conftest import tiny_png
from tests.wire import CLIENT_INFO_KEY, ServerProcess, call

Start = Callable[..., ServerProcess]
CUE = re.compile(r"(?:Next page|Next lines): ([a-z_]+) (\{.*\})\]$")


def answer_of(server: ServerProcess, name: str, arguments: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    """The answer to a tool call made as the host named ``client`` makes it (its clientInfo); it must succeed."""
    named = {} if client is None else {"_meta": {CLIENT_INFO_KEY: {"name": client, "version": "1"}}}
    result = call(server, name, arguments, **named)
    assert not result.get("isError"), result
    return result


def texts(result: dict[str, Any]) -> list[str]:
    assert all(block["type"] == "text" for block in result["content"]), result
    return [block["text"] for block in result["content"]]


def answer_bytes(result: dict[str, Any]) -> int:
    return sum(len(text.encode("utf-8")) for text in texts(result))


def follow(server: ServerProcess, name: str, arguments: dict[str, Any], client: str | None = None,
           most: int = 1000) -> tuple[list[list[str]], int]:
    """Call, then call again with the cue's arguments until no cue names a next call; the text
    blocks of every answer and the largest answer's size in bytes."""
    pages, largest = [], 0
    for _ in range(most):
        result = answer_of(server, name, arguments, client)
        assert "structuredContent" not in result  # the text reaches the model once
        largest = max(largest, answer_bytes(result))
        pages.append(texts(result))
        cue = next((m for m in map(CUE.search, texts(result)[1:]) if m), None)
        if cue is None:
            return pages, largest
        assert cue.group(1) == name
        arguments = json.loads(cue.group(2))
    raise AssertionError(f"still paging after {most} calls")


@pytest.fixture(scope="module")
def answers_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("answers")
    # 2 MB in 40,000 lines, numbered so a lost or repeated line shows.
    (root / "big.txt").write_text("".join(f"{i:05d} " + "x" * 43 + "\n" for i in range(1, 40_001)))
    tree = root / "tree"
    for d in range(50):
        (tree / "src" / f"pkg{d:02d}").mkdir(parents=True)
        for f in range(100):
            (tree / "src" / f"pkg{d:02d}" / f"mod{f:03d}.py").write_text("import os\nTODO = 1\n" if f < 60 else "pass\n")
    (tree / ".git").mkdir()
    (tree / ".git" / "HEAD").write_text("ref: refs/heads/main\nTODO\n")
    (tree / "node_modules" / "dep").mkdir(parents=True)
    (tree / "node_modules" / "dep" / "index.py").write_text("TODO\n")
    (tree / "debug.log").write_text("TODO\n")
    (tree / ".gitignore").write_text("node_modules/\n*.log\n")
    (root / "image.png").write_bytes(tiny_png())
    return root


@pytest.fixture(scope="module")
def answers_server(answers_root: Path) -> Any:
    from tests.fs.conftest import fs_command

    with ServerProcess(fs_command(answers_root)) as process:
        yield process


# --- the budget ---------------------------------------------------------------------------------


@pytest.mark.req("FS-ANSWER-BUDGET")
@pytest.mark.parametrize(("client", "budget"), [(None, 10_000), ("some-other-host", 10_000), ("claude-code", 45_000),
                                                ("codex-mcp-client", 10_000), ("gemini-cli-mcp-client", 36_000),
                                                ("copilot-cli", 18_000)])
def test_an_answer_stays_within_the_budget_measured_for_the_client_that_says_who_it_is(
        answers_server: ServerProcess, answers_root: Path, client: str | None, budget: int) -> None:
    result = answer_of(answers_server, "read_text_file", {"path": str(answers_root / "big.txt")}, client)
    assert budget - 1500 < answer_bytes(result) <= budget


@pytest.mark.req("FS-ANSWER-BUDGET")
def test_max_answer_bytes_sets_the_budget_for_every_client(answers_root: Path, start_fs: Start) -> None:
    server = start_fs(answers_root, options=("--max-answer-bytes", "4000"))
    for client in (None, "claude-code"):
        result = answer_of(server, "read_text_file", {"path": str(answers_root / "big.txt")}, client)
        assert 2500 < answer_bytes(result) <= 4000


@pytest.mark.req("FS-ANSWER-BUDGET")
def test_a_file_around_the_least_room_any_answer_leaves_is_read_as_the_budget_says(tmp_path: Path, start_fs: Start) -> None:
    # The smallest budget (--max-answer-bytes 2000) and a path long enough that the cue's room
    # leaves data only the least (1,000 bytes): a 1,000-byte file, read without reckoning a
    # budget, comes whole; a 1,001-byte one, whose budget is reckoned, comes in pages.
    folder = tmp_path / ("d" * 200) / ("e" * 200)
    folder.mkdir(parents=True)
    server = start_fs(tmp_path, options=("--max-answer-bytes", "2000"))
    for size, whole in ((1000, True), (1001, False)):
        path = folder / f"f{size}.txt"
        path.write_text("".join(f"{i:04d}" + "x" * 15 + "\n" for i in range(size // 20)) + "y" * (size % 20))
        assert path.stat().st_size == size
        blocks = texts(answer_of(server, "read_text_file", {"path": str(path)}))
        assert (blocks == [path.read_text()]) is whole, blocks


def test_max_answer_bytes_below_the_floor_is_refused(answers_root: Path) -> None:
    import sys

    done = subprocess.run([sys.executable, "-m", "mcp_ref_fs", "--max-answer-bytes", "100", str(answers_root)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    assert done.returncode == 2 and "--max-answer-bytes: must be at least 2000" in done.stderr


# --- pages followed to the end --------------------------------------------------------------------


@pytest.mark.req("FS-ANSWER-CUES", "FS-ANSWER-BUDGET")
@pytest.mark.parametrize("client", ["codex-mcp-client", "claude-code"])
def test_a_model_following_the_cues_reads_a_2_mb_file_to_its_last_line(answers_server: ServerProcess, answers_root: Path,
                                                                        client: str) -> None:
    pages, largest = follow(answers_server, "read_text_file", {"path": str(answers_root / "big.txt")}, client)
    assert largest <= (10_000 if client == "codex-mcp-client" else 45_000)
    text = "".join(page[0] for page in pages)
    assert text == (answers_root / "big.txt").read_text()  # every line once, in order
    first, last = pages[0][1], pages[-1][1]
    assert re.match(r"\[Lines 1-\d+ of 40,000 \(cut to fit this answer; the file has 2,000,000 bytes\)\. Next page: ", first)
    assert last.endswith(" of 40,000: the end of the file.]")


@pytest.mark.req("FS-ANSWER-CUES")
def test_a_window_answer_states_the_line_count_and_the_next_window(answers_server: ServerProcess,
                                                                   answers_root: Path) -> None:
    path = str(answers_root / "big.txt")
    body, cue = texts(answer_of(answers_server, "read_text_file", {"path": path, "offset": 100, "limit": 10}))
    assert body.startswith("00101 ") and body.count("\n") == 10
    assert cue == f'[Lines 101-110 of 40,000. Next lines: read_text_file {{"path": "{path}", "offset": 110, "limit": 10}}]'
    body, cue = texts(answer_of(answers_server, "read_text_file", {"path": path, "tail": 3}))
    assert cue == "[Lines 39,998-40,000 of 40,000.]"
    body, cue = texts(answer_of(answers_server, "read_text_file", {"path": path, "offset": 39_995, "limit": 10}))
    assert body.startswith("39996 ") and cue == "[Lines 39,996-40,000 of 40,000: the end of the file.]"


@pytest.mark.req("FS-ANSWER-CUES", "FS-IGNORED-SKIPPED")
def test_a_model_following_the_cues_walks_a_5000_file_tree_to_its_end(answers_server: ServerProcess,
                                                                      answers_root: Path) -> None:
    pages, largest = follow(answers_server, "directory_tree", {"path": str(answers_root / "tree")})
    assert len(pages) > 10 and largest <= 10_000
    seen: list[str] = []
    for page in pages:
        def walk(nodes: list[dict[str, Any]], prefix: str) -> None:
            for node in nodes:
                path = prefix + node["name"]
                if path not in seen:  # a page repeats the parents of its first entry
                    seen.append(path)
                walk(node.get("children", []), path + "/")
        walk(json.loads(page[0]), "")
    assert len(seen) == 1 + 1 + 50 + 5000  # .gitignore, src, the packages, the modules
    assert len([path for path in seen if path.endswith(".py")]) == 5000
    assert not any(path.split("/")[0] in (".git", "node_modules", "debug.log") for path in seen)
    assert pages[0][1].startswith("[Entries 1-") and " of 5,052 (counted depth first" in pages[0][1]
    assert pages[-1][1].endswith("of 5,052 (counted depth first, by name; a later page repeats the parent directories "
                                 "of its first entry): the last of them.]")
    assert pages[0][-1] == ("[Skipped 3 ignored entries: VCS metadata (.git and the like) and what .gitignore files "
                            "exclude; an ignored directory counts once and is not entered. includeIgnored: true includes them.]")


@pytest.mark.req("FS-ANSWER-CUES")
def test_a_model_following_the_cues_gets_every_one_of_3000_search_hits(answers_server: ServerProcess,
                                                                       answers_root: Path) -> None:
    tree = answers_root / "tree"
    pages, largest = follow(answers_server, "search_files", {"path": str(tree), "pattern": "**/mod0[0-5]*.py"})
    found = [line for page in pages for line in page[0].split("\n")]
    assert largest <= 10_000 and len(pages) > 5
    assert found == sorted(str(p) for p in tree.glob("src/*/mod0[0-5]*.py")) and len(found) == 3000
    assert pages[0][1].startswith("[Matches 1-") and " of 3,000. Next page: search_files " in pages[0][1]


@pytest.mark.req("FS-ANSWER-CUES", "FS-IGNORED-SKIPPED")
def test_a_model_following_the_cues_gets_every_one_of_3000_grep_hits(answers_server: ServerProcess,
                                                                     answers_root: Path) -> None:
    tree = answers_root / "tree"
    pages, largest = follow(answers_server, "grep_files", {"path": str(tree), "pattern": "TODO"}, "gemini-cli-mcp-client")
    lines = [line for page in pages for line in page[0].split("\n")]
    assert largest <= 36_000 and len(pages) > 3
    assert len(lines) == len(set(lines)) == 3000  # 60 files in each of 50 packages; ignored files not searched
    assert all(line.endswith(".py:2: TODO = 1") for line in lines)
    assert "more follow. Next page: grep_files " in pages[0][1]


@pytest.mark.req("FS-ANSWER-CUES")
def test_a_big_directory_listing_comes_in_pages_with_start(answers_server: ServerProcess, answers_root: Path) -> None:
    pages, _largest = follow(answers_server, "list_directory", {"path": str(answers_root / "tree" / "src" / "pkg00")},
                             most=20)
    assert len(pages) == 1  # 100 names fit
    (result,) = [texts(answer_of(answers_server, "list_directory", {"path": str(answers_root / "tree" / "src" / "pkg00"),
                                                                "start": 95}))]
    assert result[0].split("\n") == [f"[FILE] mod{i:03d}.py" for i in range(95, 100)]
    assert result[1] == "[Entries 96-100 of 100: the last of them.]"


@pytest.mark.req("FS-ANSWER-CUES")
def test_read_multiple_files_names_the_call_that_reads_what_did_not_fit(answers_server: ServerProcess,
                                                                        answers_root: Path) -> None:
    big, png = str(answers_root / "big.txt"), str(answers_root / "tree" / ".gitignore")
    (body,) = texts(answer_of(answers_server, "read_multiple_files", {"paths": [big, big, png]}))
    first, second, third = body.split("\n---\n")
    assert first.startswith(f"{big}:\n00001 ") and f'Next page: read_text_file {{"path": "{big}", "offset": ' in first
    assert second == f'{big}: [Not read: this answer is full. Read it with read_text_file {{"path": "{big}"}}]'
    assert len(body.encode("utf-8")) <= 10_000 and third.startswith(png)


# --- ignored entries -----------------------------------------------------------------------------


@pytest.mark.req("FS-IGNORED-SKIPPED")
@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="names that are not UTF-8: Linux and the BSDs only")
def test_a_name_that_is_not_utf8_beside_a_gitignore_is_walked_and_searched(tmp_path: Path, start_fs: Start) -> None:
    # (pathspec picks RE2 when google-re2 is installed, and RE2 refused such a name: every walk failed)
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / os.fsdecode(b"bad\xff.txt")).write_text("TODO\n")
    (tmp_path / "skipped.log").write_text("TODO\n")
    server = start_fs(tmp_path)
    tree = json.loads(texts(answer_of(server, "directory_tree", {"path": str(tmp_path)}))[0])
    assert len(tree) == 2 and tree[0]["name"] == ".gitignore" and tree[1]["name"].startswith("bad"), tree
    found = texts(answer_of(server, "search_files", {"path": str(tmp_path), "pattern": "*.txt"}))
    assert found[0].count("bad") == 1, found
    hits = texts(answer_of(server, "grep_files", {"path": str(tmp_path), "pattern": "TODO"}))  # not an error
    assert "skipped.log" not in hits[0], hits


@pytest.mark.req("FS-IGNORED-SKIPPED")
def test_include_ignored_shows_vcs_metadata_and_gitignored_entries_and_list_directory_always_does(
        answers_server: ServerProcess, answers_root: Path) -> None:
    tree = answers_root / "tree"
    found = texts(answer_of(answers_server, "search_files", {"path": str(tree), "pattern": "*", "includeIgnored": True}))
    assert {Path(line).name for line in found[0].split("\n")} == {".git", ".gitignore", "debug.log", "node_modules", "src"}
    assert len(found) == 1  # nothing skipped, nothing cut
    listing = texts(answer_of(answers_server, "list_directory", {"path": str(tree)}))
    assert listing == ["[DIR] .git\n[FILE] .gitignore\n[FILE] debug.log\n[DIR] node_modules\n[DIR] src"]
    hits = texts(answer_of(answers_server, "grep_files", {"path": str(tree), "pattern": "TODO", "glob": "{*,*/*,*/*/*}",
                                                     "includeIgnored": True}))
    assert f"{tree}/debug.log:1: TODO" in hits[0].split("\n")
    assert f"{tree}/node_modules/dep/index.py:1: TODO" in hits[0].split("\n")
    assert f"{tree}/.git/HEAD:2: TODO" in hits[0].split("\n")


@pytest.mark.req("FS-IGNORED-SKIPPED")
def test_a_searched_directory_that_the_rules_above_ignore_is_searched_all_the_same(
        answers_server: ServerProcess, answers_root: Path) -> None:
    inside = answers_root / "tree" / "node_modules"
    found = texts(answer_of(answers_server, "search_files", {"path": str(inside), "pattern": "**/*.py"}))
    assert found == [str(inside / "dep" / "index.py")]


def _git(*arguments: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}  # no global excludes
    return subprocess.run(["git", *arguments], cwd=cwd, input=stdin, capture_output=True, text=True, env=env, timeout=60)


def _generated_repository(root: Path, seed: int) -> None:
    """A tree with nested .gitignore files using negation, directory-only patterns, anchoring,
    ** and character classes, made from ``seed`` (the same every run)."""
    import random

    chance = random.Random(seed)
    names = ["a", "b", "build", "logs", "keep", "x.log", "y.txt", "keep.log", "data", "tmp"]
    patterns = ["*.log", "!keep.log", "build/", "/tmp", "logs/**", "!logs/keep", "data", "**/b/x.log", "[xy].txt",
                "a/*/y.txt", "/a/b", "keep/", "!/keep", "*.txt", "!y.txt", "#comment", "  ", "\\!odd", "tmp/"]
    directories = [root]
    for _ in range(40):
        parent = chance.choice(directories)
        if len(parent.relative_to(root).parts) > 3:
            continue
        child = parent / chance.choice(names)
        if child.suffix:
            if not child.exists():
                child.write_text("x\n")
        else:
            child.mkdir(exist_ok=True)
            directories.append(child)
    for directory in directories:
        for name in ("x.log", "y.txt", "keep.log", "z.py"):
            if chance.random() < 0.5 and not (directory / name).is_dir():
                (directory / name).write_text("x\n")
        if chance.random() < 0.6:
            (directory / ".gitignore").write_text("\n".join(chance.sample(patterns, chance.randint(1, 5))) + "\n")


@pytest.mark.req("FS-IGNORED-SKIPPED")
@pytest.mark.parametrize("seed", range(12))
def test_the_files_a_search_skips_are_exactly_those_git_ignores(tmp_path: Path, start_fs: Start, seed: int) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    assert _git("init", "-q", ".", cwd=repository).returncode == 0
    _generated_repository(repository, seed)
    every = sorted(str(p.relative_to(repository)) for p in repository.rglob("*")
                   if p.is_file() and ".git" not in p.relative_to(repository).parts)
    shown = _git("ls-files", "--others", "--exclude-standard", cwd=repository).stdout.split()
    ignored = _git("check-ignore", "--stdin", cwd=repository, stdin="\n".join(every)).stdout.split()
    assert sorted(shown + ignored) == every  # git's two views agree: each file is shown or ignored
    server = start_fs(repository, options=("--max-answer-bytes", "1000000"))
    found = texts(answer_of(server, "search_files", {"path": str(repository), "pattern": "**"}))[0]
    files = sorted(str(Path(line).relative_to(repository)) for line in found.split("\n") if Path(line).is_file())
    assert files == sorted(shown)
    assert not set(files) & set(ignored)


# --- media ---------------------------------------------------------------------------------------


@pytest.mark.req("FS-MEDIA-SAID-IN-TEXT")
def test_an_image_comes_with_a_line_saying_what_it_is_and_a_host_known_to_drop_images_is_named(
        answers_server: ServerProcess, answers_root: Path) -> None:
    path = str(answers_root / "image.png")
    for client, ending in ((None, "If it does not reach you, the host did not pass it on."),
                           ("copilot-cli", "GitHub Copilot CLI passes no image or audio from a tool to its model, "
                                           "so this line is all of it that reaches you.")):
        result = answer_of(answers_server, "read_media_file", {"path": path}, client)
        image, about = result["content"]
        assert image["type"] == "image" and "structuredContent" not in result
        assert about["text"] == f"{path}: image/png, {len(tiny_png())} bytes, sent as an image block. {ending}"
        assert image["data"] not in about["text"]


# --- hosts that read the text as JSON ----------------------------------------------------------------


@pytest.mark.req("FS-TEXT-ONCE")
def test_a_host_that_parses_the_text_as_json_gets_an_empty_structured_content_where_it_would_fail(
        tmp_path: Path, start_fs: Start) -> None:
    # Gemini CLI 0.61 turns a first text block that parses as JSON into structuredContent, and fails the call
    # when that is not an object: a tree (an array), a file holding [1, 2] or 42.
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.txt").write_text("a\n")
    for name, content in (("array.json", "[1, 2]\n"), ("number.txt", " 42\n"), ("object.json", '{"a": [1]}\n'),
                          ("listing.txt", "[FILE] a.txt\n"), ("empty.txt", "")):
        (tmp_path / name).write_text(content)
    server = start_fs(tmp_path)
    calls = [("directory_tree", {"path": str(tmp_path / "dir")}, True)] + [
        ("read_text_file", {"path": str(tmp_path / name)}, parses)
        for name, parses in (("array.json", True), ("number.txt", True), ("object.json", False),
                             ("listing.txt", False), ("empty.txt", False))]
    for name, arguments, parses_to_non_object in calls:
        for client in ("gemini-cli-mcp-client", "claude-code", None):
            result = answer_of(server, name, arguments, client)
            expected = parses_to_non_object and client == "gemini-cli-mcp-client"
            assert result.get("structuredContent", "absent") == ({} if expected else "absent"), (name, arguments, client)
    tree = answer_of(server, "directory_tree", {"path": str(tmp_path / "dir")}, "gemini-cli-mcp-client")
    assert json.loads(texts(tree)[0]) == [{"name": "a.txt", "type": "file"}]  # the text itself is unchanged
