"""Every shell example in README.md and docs/*.md runs, and prints what the doc says it prints.

The conventions are written down in docs/README.md ("How examples are checked"). In short:

- An example is a ```` ```sh ```` block, or a bare ```` ``` ```` block whose first line starts
  with ``$ `` (a transcript). Each one is a test case, named ``FILE:LINE`` (the fence's line).
- A ```` ```python ```` block whose first line is ``# NAME.py`` (optionally followed by ``:``
  and a comment) defines a file; so does a ```` ```toml ```` block whose first line is
  ``# NAME.toml`` (a project's ``pyproject.toml``). An example's working directory holds the
  files its reader is told about: those defined in its own ``##`` section (subsections
  included), and those its section's prose names in backquotes or its own command line names,
  from anywhere in the document. A file named only inside another file's code is not enough:
  the reader of that section would not know to fetch it.
- In a block with ``$ `` lines, each ``$ command`` runs on its own and its stdout must be the
  lines up to the next ``$ `` line. Otherwise the whole block is one bash script (``set -e``)
  and its stdout must be the next fenced block when that is a bare ```` ``` ```` block with
  only prose between the two; without one, the script must print nothing.
- ``<!-- not-run: REASON -->`` on the line before the fence (blank lines allowed between)
  skips an example, with REASON as the skip reason. There is no other way to skip one.
- Placeholders in expected output: ``…`` matches any run of characters within one line. The
  working directory's path in the real output reads as ``/ABS/PATH``. Where the expected
  output never mentions ``io.modelcontextprotocol/serverInfo``, that ``_meta`` member is cut
  from the real output (docs/server-api.md leaves it out). JSON-RPC lines (starting with
  ``{"jsonrpc"``) may come in any order, as responses do; other lines keep their order.
  Trailing whitespace is ignored.
- Examples run in a fresh temporary directory that looks like a checkout: a copy of README.md,
  and ``.venv``, a link to the venv running the tests. It is also ``HOME`` (so ``~/projects``
  is a folder that does not exist yet). The venv's ``bin`` is first on PATH. Examples must exit
  with status 0.

Also checked: every ```` ```json ```` block parses, and every file-defining block compiles (python)
or parses (toml).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VENV_BIN = Path(sys.executable).parent
TIMEOUT = 30

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(.+?)\s*-->\s*$")
FILE_HEADER = re.compile(r"^#\s*([\w.-]+\.(?:py|toml))\s*(?::.*)?$")
FILE_LANGS = {"python": ".py", "toml": ".toml"}  # the languages that define files, and their files' suffix
SECTION = re.compile(r"^##\s")  # a level-2 heading starts a section (its ### subsections belong to it)
NAMED_IN_PROSE = re.compile(r"`([\w.-]+\.(?:py|toml))`")
NAMED_IN_COMMAND = re.compile(r"(?<![\w.-])([\w.-]+\.(?:py|toml))\b")
_SI = r'"io\.modelcontextprotocol/serverInfo":\{[^{}]*\}'
SERVER_INFO = [re.compile(r',"_meta":\{' + _SI + r'\}'), re.compile(_SI + ","), re.compile("," + _SI)]


@dataclass
class Block:
    doc: Path
    line: int  # 1-based line of the opening fence
    lang: str
    lines: list[str]
    skip: str | None = None  # reason from a not-run marker
    section: int = 0  # which ## section of the document it is in (0: before the first)


@dataclass
class Example:
    doc: Path
    line: int
    script: str | None  # a whole-block script, or None for a transcript
    commands: list[tuple[str, list[str]]] = field(default_factory=list)  # (command, expected)
    expected: list[str] = field(default_factory=list)
    skip: str | None = None
    section: int = 0

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def parse_blocks(doc: Path) -> list[Block]:
    return _parse(doc)[0]


def _parse(doc: Path) -> tuple[list[Block], list[str]]:
    """The fenced blocks of ``doc``, and the prose (text outside fences) of each ## section."""
    blocks: list[Block] = []
    prose: list[str] = [""]
    text = doc.read_text(encoding="utf-8").splitlines()
    i = 0
    marker: str | None = None
    while i < len(text):
        m = FENCE.match(text[i])
        if not m:
            if SECTION.match(text[i]):
                prose.append("")
            prose[-1] += text[i] + "\n"
            nm = NOT_RUN.match(text[i])
            if nm:
                marker = nm.group(1)
            elif text[i].strip():
                marker = None  # a marker must come right before the block
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        start = i
        body: list[str] = []
        i += 1
        while i < len(text) and text[i].strip() != "```":
            line = text[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        blocks.append(Block(doc, start + 1, lang, body, marker, len(prose) - 1))
        marker = None
        i += 1
    return blocks, prose


def file_name(b: Block) -> str | None:
    """The file a block defines (``# NAME.py`` first in a python block, ``# NAME.toml`` in toml)."""
    if b.lang in FILE_LANGS and b.lines and (m := FILE_HEADER.match(b.lines[0])):
        if m.group(1).endswith(FILE_LANGS[b.lang]):
            return m.group(1)
    return None


def file_blocks(blocks: list[Block]) -> dict[str, str]:
    return {name: "\n".join(b.lines) + "\n" for b in blocks if (name := file_name(b))}


def is_transcript(b: Block) -> bool:
    return b.lang in ("sh", "") and bool(b.lines) and b.lines[0].startswith("$ ")


def examples(doc: Path) -> list[Example]:
    blocks = parse_blocks(doc)
    out: list[Example] = []
    for n, b in enumerate(blocks):
        if b.lang not in ("sh", "") or (b.lang == "" and not is_transcript(b)):
            continue
        ex = Example(doc, b.line, None, skip=b.skip, section=b.section)
        if is_transcript(b):
            for line in b.lines:
                if line.startswith("$ "):
                    ex.commands.append((line[2:], []))
                else:
                    ex.commands[-1][1].append(line)
        else:
            ex.script = "\n".join(b.lines) + "\n"
            nxt = blocks[n + 1] if n + 1 < len(blocks) else None
            if nxt is not None and nxt.lang == "" and not is_transcript(nxt):
                ex.expected = nxt.lines
        out.append(ex)
    return out


ALL = [ex for doc in DOCS for ex in examples(doc)]


def _checkout(work: Path) -> Path:
    """A directory that looks like a checkout after ``make demo``: README.md and ``.venv``."""
    work.mkdir()
    shutil.copy(ROOT / "README.md", work / "README.md")
    (work / ".venv").symlink_to(VENV_BIN.parent, target_is_directory=True)
    return work


def example_files(example: Example) -> dict[str, str]:
    """The ``# NAME.py`` files the example's working directory holds (see the module docstring)."""
    blocks, prose = _parse(example.doc)
    text = example.script if example.script is not None else "\n".join(command for command, _ in example.commands)
    named = set(NAMED_IN_PROSE.findall(prose[example.section])) | set(NAMED_IN_COMMAND.findall(text))
    files: dict[str, str] = {}
    for b in blocks:
        name = file_name(b)
        if name and (b.section == example.section or name in named):
            files[name] = "\n".join(b.lines) + "\n"
    return files


def _workdir(tmp_path: Path, example: Example) -> Path:
    work = _checkout(tmp_path / "work")
    for name, source in example_files(example).items():
        (work / name).write_text(source, encoding="utf-8")
    return work


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_REF_", "UV_"))}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(work)  # a clean home: ~/projects does not exist, no host configuration is there
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    env.pop("XDG_CONFIG_HOME", None)
    return env


def _run(command: str, work: Path) -> list[str]:
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", command],
        check=False, cwd=work, env=_env(work), capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert proc.returncode == 0, f"exit status {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout.replace(str(work.resolve()), "/ABS/PATH").replace(str(work), "/ABS/PATH").splitlines()


def _pattern(expected: str) -> re.Pattern[str]:
    return re.compile("^" + ".*?".join(re.escape(part) for part in expected.split("…")) + "$")


def _normalise(actual: str, expected: str) -> str:
    actual = actual.rstrip()
    if "io.modelcontextprotocol/serverInfo" not in expected:
        for pattern in SERVER_INFO:
            actual = pattern.sub("", actual)
    return actual


def _matches(actual: str, expected: str) -> bool:
    return bool(_pattern(expected.rstrip()).match(_normalise(actual, expected)))


def compare(actual: list[str], expected: list[str]) -> None:
    """Assert that actual stdout lines match the expected lines (see the module docstring)."""
    expected = list(expected)
    while expected and not expected[-1].strip():
        expected.pop()
    report = "expected:\n" + "\n".join(expected) + "\n\nactual:\n" + "\n".join(actual)
    assert len(actual) == len(expected), f"{len(expected)} lines expected, {len(actual)} printed\n{report}"
    is_rpc = [e.startswith('{"jsonrpc"') for e in expected]
    unmatched = [a for a, rpc in zip(actual, [x.startswith('{"jsonrpc"') for x in actual]) if rpc]
    assert len(unmatched) == sum(is_rpc), f"JSON-RPC lines differ in number\n{report}"
    for a, e, rpc in zip(actual, expected, is_rpc):
        if rpc:
            hit = next((u for u in unmatched if _matches(u, e)), None)
            assert hit is not None, f"no output line matches\n  {e}\n{report}"
            unmatched.remove(hit)
        else:
            assert not a.startswith('{"jsonrpc"') and _matches(a, e), f"line differs:\n  expected {e}\n  actual   {a}\n{report}"


@pytest.mark.parametrize("example", ALL, ids=[ex.id for ex in ALL])
def test_doc_example(example: Example, tmp_path: Path) -> None:
    if example.skip:
        pytest.skip(f"{example.id}: not-run: {example.skip}")
    work = _workdir(tmp_path, example)
    if example.script is not None:
        compare(_run(example.script, work), example.expected)
    else:
        for command, expected in example.commands:
            compare(_run(command, work), expected)


def test_an_example_sees_only_the_files_its_section_defines_or_names() -> None:
    """server-api.md's testing snippet runs with its own section's files and the two servers its
    prose names from earlier sections, and none of the other servers of the document."""
    testing = next(ex for ex in ALL if ex.doc.name == "server-api.md" and "test_typed_demo.py" in str(ex.commands))
    assert sorted(example_files(testing)) == ["mrtr_demo.py", "pyproject.toml", "test_typed_demo.py", "typed_demo.py"]


FIRST_SCREEN = 40  # lines


def test_the_readme_first_screen_shows_the_two_commands_and_a_host_entry() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN]
    commands = [line.split("#")[0].strip() for line in lines]
    assert "make demo" in commands and "make test" in commands
    assert any(line.startswith("claude mcp add ") for line in lines)


def test_the_first_screens_claude_code_line_is_what_print_config_prints(tmp_path: Path) -> None:
    """The line a newcomer pastes, run in a checkout, is the very command ``print-config`` gives,
    though ``~/projects`` does not exist yet (print-config refused that until issue 18)."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN]
    line = next(line for line in lines if line.startswith("claude mcp add "))
    work = _checkout(tmp_path / "checkout")
    env = _env(work)
    # What the pasted line asks claude to do: its words, with $PWD and $HOME expanded by bash.
    pasted = subprocess.run(["bash", "-c", 'claude() { printf "%s\\n" claude "$@"; }; ' + line], cwd=work, env=env,
                            capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout.splitlines()
    printed = subprocess.run([str(work / ".venv" / "bin" / "mcp-ref-fs"), "print-config", "--client", "claude-code",
                              str(work / "projects")], cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert printed.returncode == 0, printed.stderr
    assert pasted == shlex.split(printed.stdout)
    assert "does not exist yet" in printed.stderr


def test_examples_were_found() -> None:
    assert len(ALL) >= 20, [ex.id for ex in ALL]
    assert any(ex.script is None for ex in ALL), "no $-transcript found"


def test_the_comparison_catches_differences() -> None:
    """The placeholder rules accept what docs/README.md allows, and nothing more."""
    info = ',"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x","version":"1"}}'
    a = '{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"' + info + "}}"
    b = '{"jsonrpc":"2.0","id":2,"result":{"text":"10:50:14"}}'
    compare([a, b], ['{"jsonrpc":"2.0","id":2,"result":{"text":"…"}}', '{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}'])
    compare([a], ['{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{…}}}}'])
    compare(["one", "two"], ["one", "t…"])
    for actual, expected in [
        ([b], ['{"jsonrpc":"2.0","id":2,"result":{"text":"09:57:26"}}']),  # a changed value
        ([a], ['{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"' + info.replace("1", "2") + "}}"]),
        (["one", "two"], ["two", "one"]),  # plain lines keep their order
        (["one"], ["one", "two"]),  # a missing line
        (["one", "two"], ["one"]),  # an extra line
        (["ab"], ["a…c"]),
    ]:
        with pytest.raises(AssertionError):
            compare(actual, expected)


JSON_BLOCKS = [b for doc in DOCS for b in parse_blocks(doc) if b.lang == "json"]


@pytest.mark.parametrize("block", JSON_BLOCKS, ids=[f"{b.doc.relative_to(ROOT)}:{b.line}" for b in JSON_BLOCKS])
def test_json_block_parses(block: Block) -> None:
    json.loads("\n".join(block.lines))


PY_FILES = [(doc, name, src) for doc in DOCS for name, src in file_blocks(parse_blocks(doc)).items()]


@pytest.mark.parametrize("doc,name,source", PY_FILES, ids=[f"{d.relative_to(ROOT)}:{n}" for d, n, _ in PY_FILES])
def test_python_file_block_compiles(doc: Path, name: str, source: str) -> None:
    if name.endswith(".toml"):
        import tomllib

        tomllib.loads(source)
    else:
        compile(source, f"{doc.name}:{name}", "exec")
