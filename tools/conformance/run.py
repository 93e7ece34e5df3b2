"""``make conformance``: the official MCP conformance referee against the bundled servers.

The referee (``@modelcontextprotocol/conformance``, pinned below) is installed from npm into
``.conformance/`` of the checkout, with a Node >= 22 from npm when the one on PATH is older. It
tests servers over Streamable HTTP, so each server runs behind ``bridge.py`` (a fresh bridge per
requirement set). Every scenario of each requirement set runs, scored or not (the tasks
extension, pending and later additions are run and reported but not scored by the referee):

* ``2026-07-28`` against ``mcp-ref-everything`` (the stateless era);
* ``2025-11-25`` against ``mcp-ref-everything`` (the initialize era: sessions, GET streams,
  server-to-client requests);
* the scenarios that need no fixture of the everything server, at both eras, against
  ``mcp-ref-fs`` serving an empty temporary folder.

It prints one line per scenario (PASS/FAIL and the failing checks) and a summary, and exits 0
only when every scenario passed (a WARNING check is reported, not failed). What each run wrote
stays in ``.conformance/runs/<time>/`` (the referee's checks.json files, its log, the bridge's
counters, the servers' stderr).

    python tools/conformance/run.py [--only NAME] [--scenario S] [--era 2026-07-28|2025-11-25]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools import npmcache  # noqa: E402

REFEREE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
CACHE = ROOT / ".conformance"
ERAS = ("2026-07-28", "2025-11-25")
# Scenarios whose checks use no fixture of the everything server (no test_* tool, prompt or
# test:// resource): they measure any server, so mcp-ref-fs runs them too.
GENERIC = {
    "2026-07-28": ["tools-list", "resources-list", "sep-2164-resource-not-found", "server-sse-multiple-streams",
                   "dns-rebinding-protection", "input-required-result-unsupported-methods", "http-header-validation"],
    "2025-11-25": ["server-initialize", "ping", "logging-set-level", "tools-list", "resources-list",
                   "server-sse-multiple-streams", "dns-rebinding-protection", "server-session-lifecycle"],
}


@dataclass
class Target:
    label: str
    command: list[str]
    era: str
    report: list[str] | None  # the scenarios that apply (None: the whole requirement set)
    only: list[str] | None = None  # run just these (else the whole set runs, and `report` is shown)


@dataclass
class Outcome:
    target: str
    era: str
    scenario: str
    scored: bool
    reason: str  # why not scored
    passed: bool
    detail: str


def requirement_set(package_dir: Path, era: str) -> tuple[list[str], dict[str, str]]:
    """(scored server scenarios, {not-scored server scenario: reason}) from the referee's YAML."""
    text = (package_dir / "requirements" / f"{era}.yaml").read_text()
    scored: list[str] = []
    unscored: dict[str, str] = {}
    section, entry = None, {}
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            section = line.rstrip(":")
            continue
        item = line.strip()
        if section == "server" and item.startswith("- "):
            scored.append(item[2:].strip())
        elif section == "not_scored":
            if item.startswith("- "):
                entry = {}
                item = item[2:]
            key, _, value = item.partition(":")
            entry[key.strip()] = value.strip()
            if entry.get("leg") == "server" and "scenario" in entry and "reason" in entry:
                unscored[entry["scenario"]] = entry["reason"]
    return scored, unscored


def start_bridge(command: list[str], run_dir: Path, label: str) -> tuple[subprocess.Popen, str]:
    ready = run_dir / f"{label}.url"
    log = open(run_dir / f"{label}.bridge.log", "wb")  # noqa: SIM115
    bridge = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "conformance" / "bridge.py"), "--ready-file", str(ready),
         "--stats-file", str(run_dir / f"{label}.bridge-stats.json"),
         "--child-stderr", str(run_dir / f"{label}.server-stderr.log"), "--", *command],
        stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 30
    while not (ready.exists() and ready.read_text().strip()):
        if bridge.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the bridge for {label} did not start (see {log.name})")
        time.sleep(0.05)
    return bridge, ready.read_text().strip()


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def referee(node_dir: Path, package_dir: Path, url: str, out: Path, era: str, scenario: str | None, log: Path) -> None:
    entry = package_dir / "dist" / "index.js"
    args = [str(node_dir / "node"), str(entry), "server", "--url", url, "-o", str(out)]
    if scenario is None:
        args += ["--requirements", era]
    else:  # --force: a requirement set runs extension scenarios at its wire, so do the same
        args += ["--scenario", scenario, "--spec-version", era, "--force"]
    with open(log, "ab") as sink:
        subprocess.run(args, stdout=sink, stderr=subprocess.STDOUT, timeout=600,
                       env={**os.environ, "PATH": npmcache.path_with(node_dir)})


def read_results(out: Path) -> dict[str, list[dict]]:
    """{scenario: checks} from the referee's ``server-<scenario>-<timestamp>/checks.json`` folders."""
    results: dict[str, list[dict]] = {}
    for checks_file in sorted(out.glob("server-*/checks.json")):
        name = checks_file.parent.name.removeprefix("server-")
        scenario = name.rsplit("-", 6)[0] if name.count("-") >= 6 else name  # drop -YYYY-MM-DDTHH-MM-SS-mmmZ
        try:
            results[scenario] = json.loads(checks_file.read_text())
        except ValueError:
            results[scenario] = [{"id": scenario, "status": "FAILURE", "errorMessage": "unreadable checks.json"}]
    return results


def judge(checks: list[dict]) -> tuple[bool, str]:
    failures = [check for check in checks if check.get("status") == "FAILURE"]
    warnings = sum(1 for check in checks if check.get("status") == "WARNING")
    if not checks:
        return False, "no checks ran"
    if failures:
        shown = "; ".join(f"{c.get('id')}: {(c.get('errorMessage') or c.get('description') or '')[:160]}" for c in failures[:3])
        more = f" (+{len(failures) - 3} more)" if len(failures) > 3 else ""
        return False, f"{len(failures)}/{len(checks)} checks failed: {shown}{more}"
    return True, f"{len(checks)} checks" + (f", {warnings} warnings" if warnings else "")


def run_target(target: Target, node_dir: Path, package_dir: Path, run_dir: Path) -> list[Outcome]:
    label = f"{target.label}-{target.era}"
    out = run_dir / label
    out.mkdir(parents=True, exist_ok=True)
    scored, unscored = requirement_set(package_dir, target.era)
    expected = [s for s in target.report or [*scored, *unscored] if not target.only or s in target.only]
    bridge, url = start_bridge(target.command, run_dir, label)
    try:
        log = run_dir / f"{label}.referee.log"
        if target.only is None:
            referee(node_dir, package_dir, url, out, target.era, None, log)
        else:
            for scenario in expected:
                referee(node_dir, package_dir, url, out, target.era, scenario, log)
    finally:
        stop(bridge)
    results = read_results(out)
    stats_file = run_dir / f"{label}.bridge-stats.json"
    BRIDGE_STATS[(target.label, target.era)] = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    outcomes = []
    for scenario in expected:
        checks = results.get(scenario)
        passed, detail = judge(checks) if checks is not None else (False, f"not run (see {label}.referee.log)")
        outcomes.append(Outcome(target.label, target.era, scenario, scenario in scored,
                                unscored.get(scenario, ""), passed, detail))
    return outcomes


# (server, era) -> the bridge's counters: requests relayed, sessions, and stdio-side faults the
# referee cannot see (non-JSON stdout, server-to-client requests at 2026-07-28, ...).
BRIDGE_STATS: dict[tuple[str, str], dict[str, int]] = {}
ROUTINE = {"requests_forwarded", "sessions_started"}


def print_table(outcomes: list[Outcome]) -> None:
    width = max(len(o.scenario) for o in outcomes)
    current = None
    for o in outcomes:
        if (o.target, o.era) != current:
            current = (o.target, o.era)
            print(f"\n{o.target} at {o.era}")
        note = "" if o.scored else f"  [not scored: {o.reason}]"
        print(f"  {o.scenario:<{width}}  {'PASS' if o.passed else 'FAIL'}  {o.detail}{note}")
    print()
    for key in dict.fromkeys((o.target, o.era) for o in outcomes):
        group = [o for o in outcomes if (o.target, o.era) == key]
        scored = [o for o in group if o.scored]
        rest = [o for o in group if not o.scored]
        stats = BRIDGE_STATS.get(key, {})
        faults = ", ".join(f"{name} {count}" for name, count in sorted(stats.items()) if name not in ROUTINE) or "none"
        print(f"{key[0]} at {key[1]}: scored {sum(o.passed for o in scored)}/{len(scored)} passed"
              + (f"; not scored {sum(o.passed for o in rest)}/{len(rest)} passed" if rest else "")
              + f"; bridge: {stats.get('requests_forwarded', 0)} requests relayed, stdio-side issues: {faults}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["mcp-ref-everything", "mcp-ref-fs"], help="one server only")
    parser.add_argument("--era", choices=ERAS, help="one requirement set only")
    parser.add_argument("--scenario", action="append", help="these scenarios only (repeatable)")
    parser.add_argument("--bin", default=str(Path(sys.executable).parent), help="where the mcp-ref-* commands are")
    args = parser.parse_args(argv)

    started = time.monotonic()
    node_dir = npmcache.ensure_node(CACHE)
    referee_dir = CACHE / "referee"
    npmcache.install(referee_dir, [REFEREE], node_dir=node_dir)
    installed = time.monotonic()
    package_dir = referee_dir / "node_modules" / "@modelcontextprotocol" / "conformance"
    run_dir = CACHE / "runs" / time.strftime("%Y%m%dT%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    empty_root = tempfile.mkdtemp(prefix="mcp-ref-conformance-fs-")

    targets = []
    for era in [args.era] if args.era else ERAS:
        if args.only in (None, "mcp-ref-everything"):
            targets.append(Target("mcp-ref-everything", [f"{args.bin}/mcp-ref-everything"], era, None, args.scenario))
        if args.only in (None, "mcp-ref-fs") and (not args.scenario or set(args.scenario) & set(GENERIC[era])):
            targets.append(Target("mcp-ref-fs", [f"{args.bin}/mcp-ref-fs", empty_root], era, GENERIC[era], args.scenario))
    outcomes: list[Outcome] = []
    try:
        for target in targets:
            outcomes += run_target(target, node_dir, package_dir, run_dir)
    finally:
        shutil.rmtree(empty_root, ignore_errors=True)
    print_table(outcomes)
    failed = [o for o in outcomes if not o.passed]
    print(f"conformance ({REFEREE.rsplit('@', 1)[1]}): {len(outcomes) - len(failed)}/{len(outcomes)} scenarios passed"
          f" in {time.monotonic() - installed:.0f} s (install {installed - started:.0f} s); results in {run_dir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
