#!/usr/bin/env python3
"""Requirement traceability for mcp-ref: spec/*.md records <-> the tests that cite them.

Standard library only. Usage (from the repository root)::

    python spec/trace.py             # report: coverage, gaps, untested requirements (exit 0)
    python spec/trace.py --check     # exit 1 and explain when the spec and the tests disagree
    python spec/trace.py --write     # rewrite every record's "tests:" line from the tests
    python spec/trace.py --conformance docs/conformance.md   # the generated conformance table
    python spec/trace.py --anchors DIR   # also check section anchors against the spec's .mdx
                                         # sources (DIR = .../docs/specification)

The record format is described in spec/README.md. In short, each ``spec/<page>.md`` file has a
header naming the page (``- url: <page url>``) and then records::

    ### STDIO-NO-EMBEDDED-NEWLINES
    - keyword: MUST NOT
    - statement: One line, in our own words.
    - section: https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/stdio
    - tests: tests/test_stdio_transport.py::test_x, tests/test_wire_reader.py::test_y

Tests cite requirements with ``@pytest.mark.req("ID", ...)`` on a test function, on a test
class, or in a module's ``pytestmark``. They are found statically (``ast``), without importing
or running anything, so this script works on a fresh checkout. A test carrying a
``pytest.mark.skip``, ``skipif`` or ``xfail`` marker (on itself, its class or its module, or on
the ``pytest.param`` that carries the req marker) proves nothing: it is left out of the tests:
lines and of the coverage, and the report lists it.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

SPEC_DIR = Path(__file__).resolve().parent
REPO_ROOT = SPEC_DIR.parent
TESTS_DIR = REPO_ROOT / "tests"

# Areas of requirement ids (spec/README.md explains each one).
AREAS = (
    "STDIO", "BASE", "META", "VER", "DISC", "CANCEL", "PROG", "PAGE", "CACHE", "TOOLS", "RES",
    "PROMPT", "COMPL", "LOG", "MRTR", "SUB", "ELIC", "SAMP", "ROOTS", "LEGACY", "FS", "TASKS",
)  # fmt: skip
# AREA-SHORT-NAME: an area, then one or more uppercase/digit words joined by hyphens.
ID_PATTERN = re.compile(r"(?:%s)(?:-[A-Z0-9]+)+" % "|".join(AREAS))

KEYWORDS = ("MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY", "REQUIRED", "RECOMMENDED", "OPTIONAL", "DECISION")
# Records with these keywords that apply to the server need a test, an untestable reason, or a status.
ENFORCED_KEYWORDS = frozenset({"MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "REQUIRED"})
APPLIES = ("server", "client")
STATUSES = ("not implemented", "partial", "deviation")
# Field order within a record; keyword, statement, section and tests are required.
FIELDS = ("keyword", "statement", "section", "applies", "status", "see", "same-as", "note", "untestable", "tests")
REQUIRED_FIELDS = ("keyword", "statement", "section", "tests")
NO_TESTS = "(none)"
SPEC_SITE = "https://modelcontextprotocol.io/specification/"
# A file of project rules (not from the MCP spec) names one of our docs pages instead of a spec page.
PROJECT_PAGE = re.compile(r"docs/[a-z0-9-]+\.md")
# Official extensions are specified in their own repositories (ext-tasks: the tasks extension).
EXTENSION_PAGES = ("https://github.com/modelcontextprotocol/ext-tasks/blob/main/specification/draft/tasks.md",)
ANCHOR = re.compile(r"[a-z0-9-]+")

_RECORD_HEADING = re.compile(r"### (\S+)\s*$")
_FIELD_LINE = re.compile(r"- ([a-z-]+): (.*\S)\s*$")
_TEST_FILE = re.compile(r"(test_.*|.*_test)\.py")


@dataclass
class Record:
    """One requirement (or decision) record."""

    id: str
    path: Path
    line: int  # 1-based line of the "### ID" heading
    fields: dict[str, str] = field(default_factory=dict)
    tests_line: int = 0  # 0-based index of the "- tests:" line in the file

    @property
    def keyword(self) -> str:
        return self.fields.get("keyword", "")

    @property
    def applies(self) -> str:
        return self.fields.get("applies", "server")

    @property
    def status(self) -> str | None:
        return self.fields.get("status")

    @property
    def tests(self) -> list[str]:
        value = self.fields.get("tests", NO_TESTS)
        return [] if value == NO_TESTS else [part.strip() for part in value.split(",")]

    @property
    def enforced(self) -> bool:
        """Must this record be proved by a test (or be explained)?"""
        return self.keyword in ENFORCED_KEYWORDS and self.applies == "server"

    def where(self, root: Path) -> str:
        return f"{_rel(self.path, root)}:{self.line}"


@dataclass
class SpecFile:
    path: Path
    title: str
    url: str
    lines: list[str]
    records: list[Record]


@dataclass
class Spec:
    files: list[SpecFile]
    records: dict[str, Record]
    problems: list[str]  # format problems; any of them fails --check


@dataclass
class Scan:
    """What the tests cite."""

    by_id: dict[str, set[str]]  # id -> node ids of test functions citing it (skipped and xfail ones left out)
    citations: list[tuple[str, str]]  # (id, "file:line") for every id written in a req marker
    problems: list[str]
    # id -> node ids of tests citing it that are marked skip, skipif or xfail: they prove nothing.
    not_counted: dict[str, set[str]] = field(default_factory=dict)


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


# --- the spec records ---------------------------------------------------------------------------


def spec_files(spec_dir: Path = SPEC_DIR) -> list[Path]:
    return sorted(p for p in spec_dir.glob("*.md") if p.name != "README.md")


def parse_file(path: Path, root: Path = REPO_ROOT) -> tuple[SpecFile, list[str]]:
    """Parse one spec file strictly. Returns the file and a list of problems."""
    lines = path.read_text(encoding="utf-8").splitlines()
    name = _rel(path, root)
    problems: list[str] = []
    title, url = "", ""
    records: list[Record] = []
    current: Record | None = None
    for index, line in enumerate(lines):
        where = f"{name}:{index + 1}"
        heading = _RECORD_HEADING.fullmatch(line)
        if heading:
            current = Record(heading.group(1), path, index + 1)
            records.append(current)
            continue
        if line.startswith("### "):
            problems.append(f"{where}: a record heading is '### ID' with nothing after the id")
            continue
        if current is None:  # the header: free text, a title and the page url
            if line.startswith("# ") and not title:
                title = line[2:].strip()
            match = _FIELD_LINE.fullmatch(line)
            if match and match.group(1) == "url":
                url = match.group(2).strip()
            continue
        if not line.strip():
            continue
        match = _FIELD_LINE.fullmatch(line)
        if not match:
            problems.append(f"{where}: inside record {current.id}, expected '- field: value', got {line!r}")
            continue
        key, value = match.group(1), match.group(2).strip()
        if key not in FIELDS:
            problems.append(f"{where}: record {current.id} has unknown field {key!r} (fields: {', '.join(FIELDS)})")
        elif key in current.fields:
            problems.append(f"{where}: record {current.id} repeats field {key!r}")
        else:
            current.fields[key] = value
            if key == "tests":
                current.tests_line = index
    if not title:
        problems.append(f"{name}: no '# Title' line before the first record")
    if not (url.startswith(SPEC_SITE) or PROJECT_PAGE.fullmatch(url) or url in EXTENSION_PAGES) or "#" in url:
        problems.append(
            f"{name}: the header needs '- url: {SPEC_SITE}<revision>/<page>', an official extension's page "
            "(EXTENSION_PAGES), or 'docs/<page>.md' for project rules (no anchor)"
        )
    for record in records:
        problems.extend(_record_problems(record, url, name))
    return SpecFile(path, title, url, lines, records), problems


def _record_problems(record: Record, page_url: str, name: str) -> list[str]:
    where = f"{name}:{record.line}"
    problems = []
    if not ID_PATTERN.fullmatch(record.id):
        problems.append(f"{where}: id {record.id!r} is not AREA-SHORT-NAME (areas: {', '.join(AREAS)})")
    order = [key for key in FIELDS if key in record.fields]
    if list(record.fields) != order:
        problems.append(f"{where}: record {record.id} fields are out of order (expected {', '.join(order)})")
    for key in REQUIRED_FIELDS:
        if key not in record.fields:
            problems.append(f"{where}: record {record.id} has no {key!r} field")
    if record.keyword and record.keyword not in KEYWORDS:
        problems.append(f"{where}: record {record.id} keyword {record.keyword!r} is not one of {', '.join(KEYWORDS)}")
    if record.applies not in APPLIES:
        problems.append(f"{where}: record {record.id} applies {record.applies!r}; use server or client")
    if record.status is not None and record.status not in STATUSES:
        problems.append(f"{where}: record {record.id} status {record.status!r} is not one of {', '.join(STATUSES)}")
    if record.status == "deviation" and "see" not in record.fields:
        problems.append(f"{where}: record {record.id} is a deviation; name the record explaining it in 'see:'")
    if record.status is not None and "note" not in record.fields:
        problems.append(f"{where}: record {record.id} has a status; say what is missing or different in 'note:'")
    section = record.fields.get("section", "")
    if section and page_url:
        base, _, anchor = section.partition("#")
        # A project rule that restates the spec (a MUST of its security considerations) cites the spec page.
        cites_spec = PROJECT_PAGE.fullmatch(page_url) is not None and base.startswith(SPEC_SITE)
        if (base != page_url and not cites_spec) or ("#" in section and not ANCHOR.fullmatch(anchor)):
            problems.append(f"{where}: record {record.id} section must be {page_url} or {page_url}#<anchor>, got {section}")
    if "untestable" in record.fields and record.applies == "client":
        problems.append(f"{where}: record {record.id} applies to the client and needs no test; drop 'untestable:'")
    return problems


def load_spec(spec_dir: Path = SPEC_DIR, root: Path = REPO_ROOT) -> Spec:
    files, problems = [], []
    records: dict[str, Record] = {}
    for path in spec_files(spec_dir):
        spec_file, found = parse_file(path, root)
        files.append(spec_file)
        problems.extend(found)
        for record in spec_file.records:
            if record.id in records:
                problems.append(
                    f"{record.where(root)}: id {record.id} already used at {records[record.id].where(root)}"
                )
            else:
                records[record.id] = record
    for record in records.values():
        for key in ("see", "same-as"):
            target = record.fields.get(key)
            if target is not None and (target not in records or target == record.id):
                problems.append(f"{record.where(root)}: record {record.id} {key}: {target} names no other record")
    return Spec(files, records, problems)


# --- the tests ----------------------------------------------------------------------------------


def _is_mark_attribute(node: ast.AST, names: tuple[str, ...]) -> bool:
    """``pytest.mark.<name>`` / ``mark.<name>`` for one of ``names``."""
    if not (isinstance(node, ast.Attribute) and node.attr in names):
        return False
    owner = node.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "mark") or (
        isinstance(owner, ast.Name) and owner.id == "mark"
    )


def _is_req_attribute(node: ast.AST) -> bool:
    """``pytest.mark.req`` / ``mark.req``."""
    return _is_mark_attribute(node, ("req",))


# Markers under which a test proves nothing: it does not run, or it is expected to fail.
NOT_PROOF_MARKS = ("skip", "skipif", "xfail")


def _is_param_call(node: ast.AST) -> bool:
    """``pytest.param(...)`` / ``param(...)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "param") or (isinstance(func, ast.Name) and func.id == "param")


class _Marks:
    """Reads req marker ids out of expressions of one test module."""

    def __init__(self, name: str, problems: list[str], citations: list[tuple[str, str]]) -> None:
        self.name = name
        self.problems = problems
        self.citations = citations
        self.aliases: dict[str, list[str]] = {}  # module-level NAME = pytest.mark.req(...)
        self.skip_aliases: set[str] = set()  # module-level NAME = pytest.mark.skipif(...) and the like

    def ids_in(self, expression: ast.AST, uncounted: list[str] | None = None) -> list[str]:
        """The req ids in ``expression``. Ids inside a ``pytest.param`` that is itself marked skip
        or xfail go to ``uncounted`` instead (they apply only to a case that proves nothing)."""
        found: list[str] = []
        self._collect(expression, found, uncounted if uncounted is not None else [], False)
        return found

    def _collect(self, node: ast.AST, found: list[str], uncounted: list[str], skipped: bool) -> None:
        if isinstance(node, ast.Call) and _is_req_attribute(node.func):
            (uncounted if skipped else found).extend(self._call_ids(node))
            for child in [*node.args, *(keyword.value for keyword in node.keywords)]:
                self._collect(child, found, uncounted, skipped)
            return
        if isinstance(node, ast.Name) and node.id in self.aliases:
            (uncounted if skipped else found).extend(self.aliases[node.id])
        elif _is_req_attribute(node):
            self.problems.append(f"{self.name}:{node.lineno}: pytest.mark.req used without requirement ids")
        if _is_param_call(node):
            assert isinstance(node, ast.Call)
            skipped = skipped or any(keyword.arg == "marks" and self.skips(keyword.value) for keyword in node.keywords)
        for child in ast.iter_child_nodes(node):
            self._collect(child, found, uncounted, skipped)

    def skips(self, expression: ast.AST) -> bool:
        """Does ``expression`` apply a skip, skipif or xfail marker? (Not counting those inside a
        ``pytest.param``, which concern that one case only.)"""
        if _is_param_call(expression):
            return False
        if _is_mark_attribute(expression, NOT_PROOF_MARKS) or (isinstance(expression, ast.Name) and expression.id in self.skip_aliases):
            return True
        return any(self.skips(child) for child in ast.iter_child_nodes(expression))

    def _call_ids(self, call: ast.Call) -> list[str]:
        where = f"{self.name}:{call.lineno}"
        if call.keywords:
            self.problems.append(f"{where}: pytest.mark.req takes requirement ids only, no keyword arguments")
        if not call.args:
            self.problems.append(f"{where}: pytest.mark.req() names no requirement id")
        ids = []
        for arg in call.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                ids.append(arg.value)
                self.citations.append((arg.value, where))
            else:
                self.problems.append(f"{where}: pytest.mark.req arguments must be string literals (found {ast.dump(arg)[:60]})")
        return ids


def scan_tests(tests_dir: Path = TESTS_DIR, root: Path = REPO_ROOT) -> Scan:
    """Find every req marker under ``tests_dir`` and the test node ids it applies to."""
    by_id: dict[str, set[str]] = {}
    not_counted: dict[str, set[str]] = {}
    citations: list[tuple[str, str]] = []
    problems: list[str] = []
    for path in sorted(tests_dir.rglob("*.py")):
        name = _rel(path, root)
        try:
            module = ast.parse(path.read_text(encoding="utf-8"), filename=name)
        except SyntaxError as exc:
            problems.append(f"{name}:{exc.lineno}: cannot parse ({exc.msg}); its req markers were not read")
            continue
        marks = _Marks(name, problems, citations)
        module_ids: list[str] = []
        module_uncounted: list[str] = []
        module_skipped = False
        for statement in module.body:
            targets: list[ast.expr] = []
            if isinstance(statement, ast.Assign):
                targets, value = statement.targets, statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                targets, value = [statement.target], statement.value
            for target in targets:
                if isinstance(target, ast.Name):
                    ids = marks.ids_in(value, module_uncounted)
                    if target.id == "pytestmark":
                        module_ids.extend(ids)
                        module_skipped = module_skipped or marks.skips(value)
                    else:
                        if ids:
                            marks.aliases[target.id] = ids
                        if marks.skips(value):
                            marks.skip_aliases.add(target.id)
        collect = _TEST_FILE.fullmatch(path.name) is not None

        def visit(body: list[ast.stmt], prefix: str, inherited: list[str], uncounted: list[str], skipped: bool, collected: bool) -> None:
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    own_uncounted = list(uncounted)
                    ids = inherited + [i for d in node.decorator_list for i in marks.ids_in(d, own_uncounted)]
                    if skipped or any(marks.skips(d) for d in node.decorator_list):
                        ids, own_uncounted = [], own_uncounted + ids
                    if collected and node.name.startswith("test"):
                        for requirement in ids:
                            by_id.setdefault(requirement, set()).add(f"{prefix}::{node.name}")
                        for requirement in own_uncounted:
                            not_counted.setdefault(requirement, set()).add(f"{prefix}::{node.name}")
                    elif (ids or own_uncounted) and node.name not in ("setup_method", "teardown_method"):
                        problems.append(f"{name}:{node.lineno}: req marker on {node.name}, which pytest does not collect as a test")
                elif isinstance(node, ast.ClassDef):
                    class_uncounted = list(uncounted)
                    ids = inherited + [i for d in node.decorator_list for i in marks.ids_in(d, class_uncounted)]
                    class_skipped = skipped or any(marks.skips(d) for d in node.decorator_list)
                    for statement in node.body:  # class-level pytestmark
                        if isinstance(statement, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == "pytestmark" for t in statement.targets
                        ):
                            ids = ids + marks.ids_in(statement.value, class_uncounted)
                            class_skipped = class_skipped or marks.skips(statement.value)
                    visit(node.body, f"{prefix}::{node.name}", ids, class_uncounted, class_skipped, collected and node.name.startswith("Test"))

        visit(module.body, name, module_ids, module_uncounted, module_skipped, collect)
    return Scan(by_id, citations, problems, not_counted)


# --- checking and writing -----------------------------------------------------------------------


def generated_tests(record: Record, scan: Scan) -> str:
    """The value the record's tests: line should have."""
    nodes = sorted(scan.by_id.get(record.id, ()))
    return ", ".join(nodes) if nodes else NO_TESTS


def covered(record: Record, spec: Spec, scan: Scan, _seen: frozenset[str] = frozenset()) -> bool:
    """Is the record proved by a test (its own, or that of the record it is the same as)?"""
    if scan.by_id.get(record.id):
        return True
    target = record.fields.get("same-as")
    if target in spec.records and target not in _seen:
        return covered(spec.records[target], spec, scan, _seen | {record.id})
    return False


def explained(record: Record) -> bool:
    """Untested but accounted for: untestable, or a known gap or deviation."""
    return "untestable" in record.fields or record.status in ("not implemented", "deviation")


@dataclass
class Findings:
    format: list[str]
    unknown_ids: list[str]
    unproved: list[Record]
    stale: list[Record]

    @property
    def ok(self) -> bool:
        return not (self.format or self.unknown_ids or self.unproved or self.stale)


def check(spec: Spec, scan: Scan) -> Findings:
    unknown = [f"{where}: cites {rid}, which no spec/*.md record defines" for rid, where in scan.citations if rid not in spec.records]
    unproved = [r for r in spec.records.values() if r.enforced and not covered(r, spec, scan) and not explained(r)]
    stale = [r for r in spec.records.values() if r.fields.get("tests") != generated_tests(r, scan)]
    return Findings(spec.problems + scan.problems, unknown, unproved, stale)


def write(spec: Spec, scan: Scan) -> list[Path]:
    """Rewrite every stale tests: line. Returns the files changed."""
    changed = []
    for spec_file in spec.files:
        lines = list(spec_file.lines)
        for record in spec_file.records:
            if "tests" in record.fields:
                lines[record.tests_line] = f"- tests: {generated_tests(record, scan)}"
        if lines != spec_file.lines:
            spec_file.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            changed.append(spec_file.path)
    return changed


def explain(findings: Findings, root: Path = REPO_ROOT) -> str:
    out = []
    if findings.format:
        out.append("Malformed spec records or req markers:")
        out += [f"  {p}" for p in findings.format]
    if findings.unknown_ids:
        out.append("Tests cite requirement ids that spec/ does not define (fix the id, or add the record):")
        out += [f"  {p}" for p in findings.unknown_ids]
    if findings.unproved:
        out.append(
            "Server MUST/SHOULD requirements with no test, no 'untestable:' reason and no 'status: not implemented'"
            " (add @pytest.mark.req(\"ID\") to the test that proves it):"
        )
        out += [f"  {r.id} ({r.keyword}) {r.where(root)}" for r in findings.unproved]
    if findings.stale:
        out.append("Stale 'tests:' lines (run `python spec/trace.py --write`):")
        out += [f"  {r.id} {r.where(root)}" for r in findings.stale]
    return "\n".join(out)


# --- section anchors (optional; needs the spec's .mdx sources) -----------------------------------


def slugify(heading: str) -> str:
    """A heading's anchor as Mintlify makes it: lowercase, spaces to hyphens, punctuation dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = re.sub(r"[^a-z0-9 \-]", "", text)
    return text.strip().replace(" ", "-")


def page_anchors(mdx: Path) -> list[str]:
    anchors, fenced = [], False
    for line in mdx.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            anchors.append(slugify(line.lstrip("#").strip()))
    return anchors


def check_anchors(spec: Spec, docs_dir: Path) -> list[str]:
    """Every section anchor must name exactly one heading of its page."""
    problems = []
    for record in spec.records.values():
        url, _, anchor = record.fields.get("section", "").partition("#")
        if not url.startswith(SPEC_SITE):
            continue
        mdx = docs_dir / (url[len(SPEC_SITE):] + ".mdx")
        if not mdx.exists():
            problems.append(f"{record.id}: no page source {mdx}")
        elif anchor:
            count = page_anchors(mdx).count(anchor)
            if count != 1:
                problems.append(f"{record.id}: #{anchor} matches {count} headings of {mdx.name}")
    return problems


# --- docs/conformance.md ------------------------------------------------------------------------

CONFORMANCE_PATH = REPO_ROOT / "docs" / "conformance.md"
# Status column values, in the order the counts list them.
CONFORMANCE_STATUSES = ("proved", "untestable", "not implemented", "deviation", "client rule", "not tested")


def conformance_status(record: Record, spec: Spec, scan: Scan) -> str:
    """One word (or two) for the record in docs/conformance.md."""
    if record.status in ("not implemented", "deviation"):
        return record.status
    if covered(record, spec, scan):
        return "proved"
    if "untestable" in record.fields:
        return "untestable"
    if record.applies == "client":
        return "client rule"
    return "not tested"  # a MAY, RECOMMENDED or DECISION nothing cites yet


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _spec_link(section: str) -> str:
    base, _, anchor = section.partition("#")
    if base.startswith(SPEC_SITE):
        label = base[len(SPEC_SITE):].partition("/")[2] or base
        target = section
    elif base in EXTENSION_PAGES:
        label = base.split("/")[4]  # the extension's repository: ext-tasks
        target = section
    else:  # a project page under docs/, linked relatively from docs/conformance.md
        label = base.removeprefix("docs/")
        target = section.removeprefix("docs/")
    return f"[{label}{'#' + anchor if anchor else ''}]({target})"


def conformance(spec: Spec, scan: Scan) -> str:
    """docs/conformance.md: every record with its status and the tests that prove it. Deterministic:
    regenerating it from the same spec/ and tests/ gives the same text."""
    records = [r for f in spec.files for r in f.records]
    status = {r.id: conformance_status(r, spec, scan) for r in records}
    keywords = [k for k in KEYWORDS if any(r.keyword == k for r in records)]
    enforced = [r for r in records if r.enforced]
    out = [
        "# Conformance: every requirement and the tests that prove it",
        "",
        "<!-- Generated by `make spec` (python spec/trace.py --conformance docs/conformance.md) from spec/*.md",
        "     and the req markers in tests/. Do not edit by hand; tests/test_spec_traceability.py fails when stale. -->",
        "",
        "Each row is one record of [spec/](../spec/README.md): a rule of the MCP specification (2026-07-28, and",
        "2025-11-25 for the legacy era) that binds a stdio server, or a project decision, stated in our own words.",
        "Status: **proved** (a test cites it, or the record it is the same as), **untestable** (the reason is",
        "given), **not implemented** and **deviation** (a known gap or a knowing difference, explained in the",
        "note), **client rule** (an obligation of the client, listed for orientation), **not tested** (a MAY,",
        "RECOMMENDED or DECISION no test cites). Skipped and xfail tests do not count as proof.",
        "",
        "## Counts",
        "",
        f"{len(records)} records in {len(spec.files)} files; {len(enforced)} are server MUST/MUST NOT/SHOULD/SHOULD NOT/REQUIRED,",
        f"of which {sum(1 for r in enforced if status[r.id] == 'proved')} are proved by tests,"
        f" {sum(1 for r in enforced if status[r.id] == 'untestable')} untestable,"
        f" {sum(1 for r in enforced if status[r.id] == 'not implemented')} not implemented and"
        f" {sum(1 for r in enforced if status[r.id] == 'deviation')} deviations."
        f" {sum(1 for r in records if r.status == 'partial')} records hold only in part (see their notes).",
        "",
        "| keyword | " + " | ".join(CONFORMANCE_STATUSES) + " | total |",
        "| --- | " + " | ".join("---:" for _ in CONFORMANCE_STATUSES) + " | ---: |",
    ]
    for keyword in [*keywords, None]:
        chosen = [r for r in records if keyword is None or r.keyword == keyword]
        counts = [sum(1 for r in chosen if status[r.id] == s) for s in CONFORMANCE_STATUSES]
        label = "**all**" if keyword is None else keyword
        out.append(f"| {label} | " + " | ".join(str(c) for c in counts) + f" | {len(chosen)} |")
    out += ["", "## Files", ""]
    for spec_file in spec.files:
        name = spec_file.path.name
        out.append(f"- [{spec_file.title}](#{slugify(spec_file.title + ' ' + name)}) ({len(spec_file.records)})")
    for spec_file in spec.files:
        name = spec_file.path.name
        out += ["", f"## {spec_file.title} `{name}`", ""]
        out.append(f"Records: [spec/{name}](../spec/{name}). Source: {_spec_link(spec_file.url)}.")
        out += ["", "| id | keyword | statement | spec | status | proved by |", "| --- | --- | --- | --- | --- | --- |"]
        for r in spec_file.records:
            state = status[r.id]
            if r.status == "partial":
                state += " (partial)"
            if r.status and "note" in r.fields:
                state += f": {r.fields['note']}"
            if r.status == "deviation" and "see" in r.fields:
                state += f" (see [{r.fields['see']}](#{r.fields['see'].lower()}))"
            nodes = sorted(scan.by_id.get(r.id, ()))
            if nodes:
                proof = "<br>".join(f"[`{n}`](../{n.partition('::')[0]})" for n in nodes)
            elif "same-as" in r.fields and state.startswith("proved"):
                proof = f"same as [{r.fields['same-as']}](#{r.fields['same-as'].lower()})"
            elif "untestable" in r.fields:
                proof = f"untestable: {r.fields['untestable']}"
            else:
                proof = ""
            keyword = r.keyword + (" (client)" if r.applies == "client" else "")
            out.append(
                f"| <a id=\"{r.id.lower()}\"></a>{r.id} | {keyword} | {_cell(r.fields.get('statement', ''))}"
                f" | {_spec_link(r.fields.get('section', ''))} | {_cell(state)} | {_cell(proof)} |"
            )
    return "\n".join(out) + "\n"


# --- report -------------------------------------------------------------------------------------


def report(spec: Spec, scan: Scan, root: Path = REPO_ROOT) -> str:
    out = []
    records = list(spec.records.values())
    enforced = [r for r in records if r.enforced]
    proved = [r for r in enforced if covered(r, spec, scan)]
    out.append(
        f"{len(records)} records in {len(spec.files)} files; {len(enforced)} enforced server MUST/SHOULD; "
        f"{len(proved)} proved by tests; {sum(1 for r in enforced if 'untestable' in r.fields)} untestable; "
        f"{len(scan.by_id)} ids cited by tests."
    )
    for label, chosen in (
        ("Not implemented", [r for r in records if r.status == "not implemented"]),
        ("Partially implemented", [r for r in records if r.status == "partial"]),
        ("Deviations", [r for r in records if r.status == "deviation"]),
        ("Enforced records without tests (explained or not)", [r for r in enforced if not covered(r, spec, scan)]),
        ("Decisions without tests", [r for r in records if r.keyword == "DECISION" and not covered(r, spec, scan)]),
        ("Marked untestable but cited by tests (drop 'untestable:'?)", [r for r in records if "untestable" in r.fields and scan.by_id.get(r.id)]),
    ):
        out.append(f"\n{label}: {len(chosen)}")
        out += [f"  {r.id} ({r.keyword}){' [untestable]' if 'untestable' in r.fields else ''}" for r in chosen]
    skipped = sorted((rid, node) for rid, nodes in scan.not_counted.items() for node in nodes)
    out.append(f"\nCitations by skipped or xfail tests (not counted as proof): {len(skipped)}")
    out += [f"  {rid}: {node}" for rid, node in skipped]
    findings = check(spec, scan)
    if not findings.ok:
        out.append("\n" + explain(findings, root))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="exit 1 when spec/ and tests/ disagree")
    group.add_argument("--write", action="store_true", help="rewrite the tests: lines from the tests")
    group.add_argument("--conformance", type=Path, metavar="PATH", help="write the conformance table (docs/conformance.md) to PATH")
    parser.add_argument("--anchors", type=Path, metavar="DIR", help="check section anchors against DIR/<revision>/<page>.mdx")
    args = parser.parse_args(argv)

    spec = load_spec()
    scan = scan_tests()
    anchor_problems = check_anchors(spec, args.anchors) if args.anchors else []
    if args.write:
        changed = write(spec, scan)
        print(f"updated {len(changed)} file(s): {', '.join(_rel(p, REPO_ROOT) for p in changed) or 'none'}")
        spec = load_spec()
        findings = check(spec, scan)
        if not findings.ok:
            print(explain(findings), file=sys.stderr)
        return 0
    if args.conformance:
        args.conformance.write_text(conformance(spec, scan), encoding="utf-8")
        print(f"wrote {_rel(args.conformance, REPO_ROOT)}: {len(spec.records)} records")
        return 0
    if args.check:
        findings = check(spec, scan)
        if findings.ok and not anchor_problems:
            print(f"spec/ and tests/ agree: {len(spec.records)} records, {len(scan.by_id)} cited ids")
            return 0
        print(explain(findings), file=sys.stderr)
        if anchor_problems:
            print("Section anchors that name no heading:", *anchor_problems, sep="\n  ", file=sys.stderr)
        return 1
    print(report(spec, scan))
    if anchor_problems:
        print("\nSection anchors that name no heading:", *anchor_problems, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
