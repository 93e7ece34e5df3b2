"""spec/ and tests/ agree: every cited requirement exists, every server MUST/SHOULD is proved or
explained, and every record's tests: line is current.

The first five tests check the real repository with spec/trace.py's own parser and scanner
(the same code ``python spec/trace.py --check`` runs). The rest check that tool on small
synthetic repositories, so a bug in the checker cannot silently pass everything.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import load_trace

trace = load_trace()

FIX = "Run `python spec/trace.py --write` to regenerate the tests: lines, then commit spec/ with your tests."


@pytest.fixture(scope="module")
def spec():
    return trace.load_spec()


@pytest.fixture(scope="module")
def scan():
    return trace.scan_tests()


def _lines(problems: list[str]) -> str:
    return "\n  ".join(problems)


# --- the repository ---------------------------------------------------------------------------


def test_spec_records_and_req_markers_are_well_formed(spec, scan):
    problems = spec.problems + scan.problems
    assert not problems, "Malformed spec records or req markers (see spec/README.md):\n  " + _lines(problems)


def test_every_requirement_id_cited_by_a_test_exists_in_spec(spec, scan):
    unknown = [f"{where}: {rid}" for rid, where in scan.citations if rid not in spec.records]
    assert not unknown, (
        "Tests cite requirement ids that no spec/*.md record defines; fix the id or add the record:\n  "
        + _lines(unknown)
    )


def test_every_server_must_and_should_is_tested_or_explained(spec, scan):
    unproved = trace.check(spec, scan).unproved
    assert not unproved, (
        "Server MUST/SHOULD requirements with no test, no 'untestable:' reason and no "
        "'status: not implemented' (cite them with @pytest.mark.req on the test that proves them):\n  "
        + _lines([f"{r.id} ({r.keyword}) {r.where(trace.REPO_ROOT)}" for r in unproved])
    )


def test_tests_lines_in_spec_match_the_req_markers(spec, scan):
    stale = [
        f"{r.id} {r.where(trace.REPO_ROOT)}: has {r.fields.get('tests')!r}, markers say {trace.generated_tests(r, scan)!r}"
        for r in trace.check(spec, scan).stale
    ]
    assert not stale, "Stale tests: lines in spec/. " + FIX + "\n  " + _lines(stale)


def test_docs_conformance_md_is_current(spec, scan):
    path = trace.CONFORMANCE_PATH
    expected = trace.conformance(spec, scan)
    current = path.read_text(encoding="utf-8") if path.exists() else None
    assert current == expected, (
        f"{trace._rel(path, trace.REPO_ROOT)} is missing or stale (spec/ or the req markers in tests/ changed). "
        "Run `make spec` to regenerate it, then commit it."
    )


# --- the checker itself, on synthetic repositories ------------------------------------------------

PAGE = "https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/stdio"


def _repo(tmp_path: Path, records: str, tests: dict[str, str]) -> tuple[Path, Path, Path]:
    root = tmp_path / "repo"
    (root / "spec").mkdir(parents=True)
    (root / "tests").mkdir()
    header = f"# Transports: stdio\n\n- page: basic/transports/stdio\n- url: {PAGE}\n\n"
    (root / "spec" / "stdio.md").write_text(header + textwrap.dedent(records), encoding="utf-8")
    for name, source in tests.items():
        (root / "tests" / name).write_text(textwrap.dedent(source), encoding="utf-8")
    return root, root / "spec", root / "tests"


def _record(rid: str, keyword: str = "MUST", tests: str = "(none)", **extra: str) -> str:
    lines = [f"### {rid}", f"- keyword: {keyword}", "- statement: Something the server does.", f"- section: {PAGE}"]
    lines += [f"- {key.replace('_', '-')}: {value}" for key, value in extra.items()]
    lines.append(f"- tests: {tests}")
    return "\n".join(lines) + "\n\n"


def _load(root: Path, spec_dir: Path, tests_dir: Path):
    return trace.load_spec(spec_dir, root), trace.scan_tests(tests_dir, root)


def test_checker_maps_function_class_module_alias_and_param_marks_to_node_ids(tmp_path):
    records = "".join(_record(f"STDIO-R{i}") for i in range(1, 7))
    root, spec_dir, tests_dir = _repo(
        tmp_path,
        records,
        {
            "test_a.py": """
                import pytest
                pytestmark = [pytest.mark.req("STDIO-R1")]
                ALIAS = pytest.mark.req("STDIO-R5")

                @pytest.mark.req("STDIO-R2", "STDIO-R3")
                def test_function():
                    pass

                @pytest.mark.req("STDIO-R4")
                class TestGroup:
                    @ALIAS
                    async def test_method(self):
                        pass

                @pytest.mark.parametrize("x", [pytest.param(1, marks=pytest.mark.req("STDIO-R6"))])
                def test_param(x):
                    pass
            """,
            "helpers.py": "import pytest\nHELPER = pytest.mark.req('STDIO-R1')\n",
        },
    )
    spec, scan = _load(root, spec_dir, tests_dir)
    assert scan.by_id == {
        "STDIO-R1": {"tests/test_a.py::test_function", "tests/test_a.py::TestGroup::test_method", "tests/test_a.py::test_param"},
        "STDIO-R2": {"tests/test_a.py::test_function"},
        "STDIO-R3": {"tests/test_a.py::test_function"},
        "STDIO-R4": {"tests/test_a.py::TestGroup::test_method"},
        "STDIO-R5": {"tests/test_a.py::TestGroup::test_method"},
        "STDIO-R6": {"tests/test_a.py::test_param"},
    }
    assert not scan.problems


def test_checker_does_not_count_skipped_or_xfail_tests_as_proof(tmp_path):
    records = "".join(_record(f"STDIO-R{i}") for i in range(1, 9))
    root, spec_dir, tests_dir = _repo(
        tmp_path,
        records,
        {
            "test_a.py": """
                import pytest
                from pytest import mark
                LATER = pytest.mark.skipif(True, reason="not on this platform")

                @pytest.mark.req("STDIO-R1")
                @pytest.mark.skip(reason="broken")
                def test_skipped():
                    pass

                @mark.xfail(strict=True, reason="known bug")
                @pytest.mark.req("STDIO-R2")
                def test_expected_to_fail():
                    pass

                @LATER
                @pytest.mark.req("STDIO-R3")
                def test_skipped_through_an_alias():
                    pass

                @pytest.mark.xfail
                class TestAllExpectedToFail:
                    @pytest.mark.req("STDIO-R4")
                    def test_in_class(self):
                        pass

                @pytest.mark.req("STDIO-R5")
                @pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.xfail)])
                def test_one_case_expected_to_fail(x):
                    pass

                @pytest.mark.parametrize("x", [pytest.param(2, marks=[pytest.mark.req("STDIO-R6"), pytest.mark.skip])])
                def test_the_only_citing_case_is_skipped(x):
                    pass

                @pytest.mark.req("STDIO-R7")
                def test_runs():
                    pass
            """,
            "test_b.py": "import pytest\npytestmark = [pytest.mark.req('STDIO-R8'), pytest.mark.skipif(True, reason='x')]\n\ndef test_module_skipped():\n    pass\n",
        },
    )
    spec, scan = _load(root, spec_dir, tests_dir)
    assert scan.by_id == {"STDIO-R5": {"tests/test_a.py::test_one_case_expected_to_fail"}, "STDIO-R7": {"tests/test_a.py::test_runs"}}
    assert scan.not_counted == {
        "STDIO-R1": {"tests/test_a.py::test_skipped"},
        "STDIO-R2": {"tests/test_a.py::test_expected_to_fail"},
        "STDIO-R3": {"tests/test_a.py::test_skipped_through_an_alias"},
        "STDIO-R4": {"tests/test_a.py::TestAllExpectedToFail::test_in_class"},
        "STDIO-R6": {"tests/test_a.py::test_the_only_citing_case_is_skipped"},
        "STDIO-R8": {"tests/test_b.py::test_module_skipped"},
    }
    findings = trace.check(spec, scan)
    assert [r.id for r in findings.unproved] == ["STDIO-R1", "STDIO-R2", "STDIO-R3", "STDIO-R4", "STDIO-R6", "STDIO-R8"]
    assert not findings.unknown_ids and not scan.problems
    assert "STDIO-R1: tests/test_a.py::test_skipped" in trace.report(spec, scan, root)


def test_checker_reports_an_id_cited_by_a_test_but_missing_from_spec(tmp_path):
    root, spec_dir, tests_dir = _repo(
        tmp_path,
        _record("STDIO-KNOWN", tests="tests/test_a.py::test_x"),
        {"test_a.py": "import pytest\n\n@pytest.mark.req('STDIO-KNOWN', 'STDIO-TYPO')\ndef test_x():\n    pass\n"},
    )
    findings = trace.check(*_load(root, spec_dir, tests_dir))
    assert findings.unknown_ids == ["tests/test_a.py:3: cites STDIO-TYPO, which no spec/*.md record defines"]


def test_checker_reports_an_untested_server_must_but_not_a_may_or_a_client_rule(tmp_path):
    records = _record("STDIO-UNTESTED") + _record("STDIO-OPTIONAL", "MAY") + _record("STDIO-THEIRS", applies="client")
    findings = trace.check(*_load(*_repo(tmp_path, records, {})))
    assert [r.id for r in findings.unproved] == ["STDIO-UNTESTED"]
    assert not findings.ok


def test_checker_accepts_untestable_gaps_deviations_and_same_as(tmp_path):
    records = (
        _record("STDIO-TESTED", tests="tests/test_a.py::test_x")
        + _record("STDIO-ALIAS", "SHOULD", same_as="STDIO-TESTED")
        + _record("STDIO-AUTHOR", untestable="the author's obligation")
        + _record("STDIO-GAP", status="not implemented", note="missing")
        + _record("STDIO-CHOICE", "DECISION")
        + _record("STDIO-OTHER", status="deviation", see="STDIO-CHOICE", note="we do otherwise")
    )
    tests = {"test_a.py": "import pytest\n\n@pytest.mark.req('STDIO-TESTED')\ndef test_x():\n    pass\n"}
    findings = trace.check(*_load(*_repo(tmp_path, records, tests)))
    assert findings.ok, trace.explain(findings)


def test_checker_reports_a_stale_tests_line_and_write_makes_it_current(tmp_path):
    root, spec_dir, tests_dir = _repo(
        tmp_path,
        _record("STDIO-R1", tests="tests/test_a.py::test_gone"),
        {"test_a.py": "import pytest\n\n@pytest.mark.req('STDIO-R1')\ndef test_b():\n    pass\n\n@pytest.mark.req('STDIO-R1')\ndef test_a():\n    pass\n"},
    )
    spec, scan = _load(root, spec_dir, tests_dir)
    assert [r.id for r in trace.check(spec, scan).stale] == ["STDIO-R1"]

    trace.write(spec, scan)

    spec, scan = _load(root, spec_dir, tests_dir)
    assert trace.check(spec, scan).ok
    assert "- tests: tests/test_a.py::test_a, tests/test_a.py::test_b\n" in (spec_dir / "stdio.md").read_text()


@pytest.mark.parametrize(
    ("record", "complaint"),
    [
        ("### STDIO-X\n- keyword: MUST\n- statement: s\n- section: " + PAGE + "\n- colour: red\n- tests: (none)\n", "unknown field 'colour'"),
        ("### STDIO-X\n- statement: s\n- keyword: MUST\n- section: " + PAGE + "\n- tests: (none)\n", "out of order"),
        ("### STDIO-X\n- keyword: MUST\n- statement: s\n- section: " + PAGE + "\n", "no 'tests' field"),
        ("### STDIO-X\n- keyword: MUSTN'T\n- statement: s\n- section: " + PAGE + "\n- tests: (none)\n", "keyword"),
        ("### stdio-lower\n- keyword: MUST\n- statement: s\n- section: " + PAGE + "\n- tests: (none)\n", "is not AREA-SHORT-NAME"),
        ("### HTTP-X\n- keyword: MUST\n- statement: s\n- section: " + PAGE + "\n- tests: (none)\n", "is not AREA-SHORT-NAME"),
        ("### STDIO-X\n- keyword: MUST\n- statement: s\n- section: https://example.com/x\n- tests: (none)\n", "section must be"),
        ("### STDIO-X\n- keyword: MUST\n- statement: s\n- section: " + PAGE + "#Bad_Anchor\n- tests: (none)\n", "section must be"),
        ("### STDIO-X\n- keyword: MUST\n- statement: s\n- section: " + PAGE + "\nfree text\n- tests: (none)\n", "expected '- field: value'"),
        ("### STDIO-X\n- keyword: MUST\n- statement: s\n- section: " + PAGE + "\n- status: deviation\n- note: n\n- tests: (none)\n", "name the record explaining it"),
        ("### STDIO-X\n- keyword: MUST\n- statement: s\n- section: " + PAGE + "\n- same-as: STDIO-NOPE\n- tests: (none)\n", "names no other record"),
        (_record("STDIO-X") + _record("STDIO-X"), "already used"),
    ],
)
def test_checker_rejects_a_malformed_record(tmp_path, record, complaint):
    spec, _ = _load(*_repo(tmp_path, record, {}))
    assert any(complaint in problem for problem in spec.problems), spec.problems


def test_checker_rejects_req_markers_it_cannot_read(tmp_path):
    source = "import pytest\nIDS = ['STDIO-X']\n\n@pytest.mark.req(*IDS)\ndef test_x():\n    pass\n\n@pytest.mark.req\ndef test_y():\n    pass\n"
    _, scan = _load(*_repo(tmp_path, _record("STDIO-X"), {"test_a.py": source}))
    assert any("must be string literals" in p for p in scan.problems), scan.problems
    assert any("without requirement ids" in p for p in scan.problems), scan.problems


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("`$ref` Resolution", "ref-resolution"),
        ("`_meta`", "meta"),
        ("Server Requirements (Basic Workflow)", "server-requirements-basic-workflow"),
        ("Time-to-Live (TTL) Field", "time-to-live-ttl-field"),
        ("Backward Compatibility with Initialization-Based Versions", "backward-compatibility-with-initialization-based-versions"),
    ],
)
def test_anchor_of_a_heading_drops_punctuation_and_hyphenates_spaces(heading, anchor):
    assert trace.slugify(heading) == anchor


def test_a_req_marker_with_a_malformed_id_fails_collection(tmp_path):
    root = tmp_path / "repo"
    (root / "spec").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "spec" / "trace.py").write_bytes(Path(trace.__file__).read_bytes())
    (root / "tests" / "conftest.py").write_bytes((Path(__file__).parent / "conftest.py").read_bytes())
    (root / "tests" / "test_typo.py").write_text(
        "import pytest\n\n@pytest.mark.req('STDIO-FINE', 'stdio-no-newlines')\ndef test_x():\n    pass\n", encoding="utf-8"
    )
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    req(*ids): requirement ids\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE", "COVERAGE_"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root, capture_output=True, text=True, timeout=60, env=env,
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "'stdio-no-newlines' is not a requirement id" in done.stderr
    assert "STDIO-FINE" not in done.stderr
