"""Every shell example in README.md and docs/*.md runs, and prints what the doc says it prints.

The conventions are written down in docs/README.md ("How examples are checked"). In short:

- An example is a ```` ```sh ```` block, or a bare ```` ``` ```` block whose first line starts
  with ``$ `` (a transcript). Each one is a test case, named ``FILE:LINE`` (the fence's line).
- A ```` ```python ```` block whose first line is ``# NAME.py`` (optionally followed by ``:``
  and a comment) defines a file. Every such file of the same document is written into the
  example's working directory before the example runs.
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
- Examples run in a fresh temporary directory holding a copy of README.md, with the venv's
  ``bin`` first on PATH, and must exit with status 0.

Also checked: every ```` ```json ```` block parses, and every file-defining python block compiles.
"""

from __future__ import annotations

import json
import os
import re
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
FILE_HEADER = re.compile(r"^#\s*([\w.-]+\.py)\s*(?::.*)?$")
_SI = r'"io\.modelcontextprotocol/serverInfo":\{[^{}]*\}'
SERVER_INFO = [re.compile(r',"_meta":\{' + _SI + r'\}'), re.compile(_SI + ","), re.compile("," + _SI)]


@dataclass
class Block:
    doc: Path
    line: int  # 1-based line of the opening fence
    lang: str
    lines: list[str]
    skip: str | None = None  # reason from a not-run marker


@dataclass
class Example:
    doc: Path
    line: int
    script: str | None  # a whole-block script, or None for a transcript
    commands: list[tuple[str, list[str]]] = field(default_factory=list)  # (command, expected)
    expected: list[str] = field(default_factory=list)
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def parse_blocks(doc: Path) -> list[Block]:
    blocks: list[Block] = []
    text = doc.read_text(encoding="utf-8").splitlines()
    i = 0
    marker: str | None = None
    while i < len(text):
        m = FENCE.match(text[i])
        if not m:
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
        blocks.append(Block(doc, start + 1, lang, body, marker))
        marker = None
        i += 1
    return blocks


def file_blocks(blocks: list[Block]) -> dict[str, str]:
    files = {}
    for b in blocks:
        if b.lang == "python" and b.lines and (m := FILE_HEADER.match(b.lines[0])):
            files[m.group(1)] = "\n".join(b.lines) + "\n"
    return files


def is_transcript(b: Block) -> bool:
    return b.lang in ("sh", "") and bool(b.lines) and b.lines[0].startswith("$ ")


def examples(doc: Path) -> list[Example]:
    blocks = parse_blocks(doc)
    out: list[Example] = []
    for n, b in enumerate(blocks):
        if b.lang not in ("sh", "") or (b.lang == "" and not is_transcript(b)):
            continue
        ex = Example(doc, b.line, None, skip=b.skip)
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


def _workdir(tmp_path: Path, doc: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "README.md", work / "README.md")
    for name, source in file_blocks(parse_blocks(doc)).items():
        (work / name).write_text(source, encoding="utf-8")
    return work


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_REF_")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    return env


def _run(command: str, work: Path) -> list[str]:
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", command],
        check=False, cwd=work, env=_env(), capture_output=True, text=True, timeout=TIMEOUT,
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
    work = _workdir(tmp_path, example.doc)
    if example.script is not None:
        compare(_run(example.script, work), example.expected)
    else:
        for command, expected in example.commands:
            compare(_run(command, work), expected)


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
    compile(source, f"{doc.name}:{name}", "exec")
