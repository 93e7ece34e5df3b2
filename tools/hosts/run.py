"""``make hosts``: mcp-ref-fs driven through four real MCP hosts by a stand-in model.

Each host (pinned below) is installed from npm into ``.hosts/`` of the checkout, pointed at the
stand-in model (``standin.py``) on 127.0.0.1 through the base-URL setting its provider documents,
and given the entry ``mcp-ref-fs print-config`` produces, in the host's own configuration format,
with the command wrapped in ``wiretap.py`` (which logs every line between host and server).
Then each scenario of ``scenarios.py`` runs through the host's own non-interactive agent loop,
in a fresh folder, home and configuration: one PASS/FAIL/SKIP line per host and scenario, the
protocol era each host opened with, and a summary. Exit status 1 on any FAIL.

No real model, no credentials: the keys are dummies, the environment is built from scratch (a
real key in yours is never passed on), telemetry and update checks are off where the host allows.

    python tools/hosts/run.py [--host NAME]... [--scenario NAME]... [--keep] [--results FILE]
                              [--bin OTHER_CHECKOUT/.venv/bin]

``--bin`` runs the mcp-ref-fs of another checkout, to compare what the hosts' models saw with
an older server ("before"); the ``limit`` scenario needs a server that has ``--max-answer-bytes``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools import npmcache  # noqa: E402
from tools.hosts.scenarios import SCENARIOS, SERVER, SERVER_TOOLS, Outcome, Scenario, Skip, make_folder  # noqa: E402
from tools.hosts.standin import StandIn, name_of, read_log  # noqa: E402

CACHE = ROOT / ".hosts"
HOSTS_DIR = Path(__file__).resolve().parent


@dataclass
class Host:
    name: str
    package: str  # pinned npm spec
    binary: str
    api: str

    def setup(self, work: Path, port: int, entry: dict[str, Any], scenario: Scenario) -> tuple[list[str], dict[str, str]]:
        """(argv without the binary, extra environment) for one run, writing its configuration."""
        return getattr(self, "_" + self.name.replace("-", "_"))(work, f"http://127.0.0.1:{port}", entry, scenario)

    def _claude_code(self, work: Path, url: str, entry: dict[str, Any], scenario: Scenario):
        config = work / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {SERVER: {"type": "stdio", **entry}}}, indent=1))
        argv = ["-p", scenario.prompt, "--mcp-config", str(config), "--strict-mcp-config",
                "--allowedTools", f"mcp__{SERVER}", "ReadMcpResourceTool", "ListMcpResourcesTool",
                "--model", "claude-opus-4-5", "--output-format", "text"]
        if scenario.accept:  # Claude Code's Elicitation hook answers the server's confirmation
            settings = work / "settings.json"
            hook = f"{sys.executable} {HOSTS_DIR / 'accept_elicitation.py'}"
            settings.write_text(json.dumps({"hooks": {"Elicitation": [
                {"matcher": SERVER, "hooks": [{"type": "command", "command": hook}]}]}}))
            argv += ["--settings", str(settings)]
        return argv, {
            "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-dummy-stand-in",
            "CLAUDE_CONFIG_DIR": str(work / "claude"), "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            # every MCP tool in the request itself, not deferred behind ToolSearch
            "ENABLE_TOOL_SEARCH": "false",
        }

    def _gemini_cli(self, work: Path, url: str, entry: dict[str, Any], scenario: Scenario):
        settings = work / "home" / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({
            "mcpServers": {SERVER: {**entry, "trust": True}},
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
            "telemetry": {"enabled": False}, "privacy": {"usageStatisticsEnabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        }, indent=1))
        argv = ["-p", scenario.prompt, "-m", "gemini-2.5-flash", "--approval-mode", "yolo"]
        return argv, {"GEMINI_API_KEY": "dummy-stand-in", "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_CLI_NO_RELAUNCH": "true"}

    def _codex(self, work: Path, url: str, entry: dict[str, Any], scenario: Scenario):
        home = work / "codex"
        home.mkdir(exist_ok=True)
        q = json.dumps  # a JSON string is a TOML basic string
        (home / "config.toml").write_text("\n".join([
            'model = "gpt-5-codex"', 'model_provider = "standin"', 'approval_policy = "never"',
            'sandbox_mode = "workspace-write"', "check_for_update_on_startup = false",
            "[analytics]", "enabled = false",
            "[model_providers.standin]", 'name = "stand-in"', f"base_url = {q(url + '/v1')}",
            'wire_api = "responses"', 'env_key = "STANDIN_API_KEY"', "request_max_retries = 0", "stream_max_retries = 0",
            f"[mcp_servers.{q(SERVER)}]", f"command = {q(entry['command'])}", f"args = {q(entry['args'])}",
            # the host's own per-call approval is granted, as --yolo or --allow-all-tools do elsewhere
            "startup_timeout_sec = 30", "default_tools_approval_mode = \"approve\"", "",
        ]))
        argv = ["exec", "--skip-git-repo-check", scenario.prompt]
        return argv, {"CODEX_HOME": str(home), "STANDIN_API_KEY": "dummy-stand-in"}

    def _copilot_cli(self, work: Path, url: str, entry: dict[str, Any], scenario: Scenario):
        config = work / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {SERVER: {"type": "local", **entry, "tools": ["*"]}}}, indent=1))
        argv = ["-p", scenario.prompt, "--allow-all-tools", "--additional-mcp-config", f"@{config}",
                "--disable-builtin-mcps", "--disable-client-telemetry", "--no-auto-update", "-s"]
        return argv, {
            "COPILOT_HOME": str(work / "copilot"), "COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_BASE_URL": url + "/v1", "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": "dummy-stand-in", "COPILOT_MODEL": "gpt-4.1",
        }


HOSTS = [
    Host("claude-code", "@anthropic-ai/claude-code@2.1.332", "claude", "Anthropic Messages, streamed"),
    Host("gemini-cli", "@google/gemini-cli@0.61.0", "gemini", "Gemini streamGenerateContent"),
    Host("codex", "@openai/codex@0.171.0", "codex", "OpenAI Responses, streamed"),
    Host("copilot-cli", "@github/copilot@1.0.102", "copilot", "OpenAI Chat Completions, streamed"),
]


def server_entry(fs_command: str, root: Path, wire_log: Path, extra: list[str]) -> dict[str, Any]:
    """``print-config``'s entry for ``root`` (and ``extra`` arguments), its command run through the wiretap."""
    printed = subprocess.run([fs_command, "print-config", "--client", "claude-desktop", str(root)],
                             capture_output=True, text=True, check=True).stdout
    entry = json.loads(printed)["mcpServers"][SERVER]
    return {"command": sys.executable,
            "args": [str(HOSTS_DIR / "wiretap.py"), str(wire_log), "--", entry["command"], *entry["args"], *extra]}


def run_one(host: Host, scenario: Scenario, bin_dir: Path, node_dir: Path, fs_command: str, keep: Path | None) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"mcp-ref-hosts-{host.name}-{scenario.name}-"))
    root = work / "served"
    root.mkdir()
    make_folder(root)
    if scenario.prepare:
        scenario.prepare(root)
    (work / "home").mkdir(exist_ok=True)
    model_log, wire_log = work / "model.jsonl", work / "wire.jsonl"
    standin = StandIn(scenario.script(root), model_log, SERVER_TOOLS)
    port = standin.start()
    argv, extra = host.setup(work, port, server_entry(fs_command, root, wire_log, scenario.server_args), scenario)
    env = {"PATH": npmcache.path_with(node_dir), "HOME": str(work / "home"), "LANG": "C.UTF-8", "TERM": "dumb",
           "NO_COLOR": "1", "CI": "1", **extra}
    started = time.monotonic()
    try:
        done = subprocess.run([str(bin_dir / host.binary), *argv], cwd=root, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=scenario.timeout)
        output, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as expired:
        output = f"(stopped after {scenario.timeout} s) " + str(expired.stdout or "") + str(expired.stderr or "")
        code = None
    seconds = time.monotonic() - started
    standin.stop()
    log = read_log(model_log)
    wire = [json.loads(line) for line in wire_log.read_text().splitlines()] if wire_log.exists() else []
    outcome = Outcome(root, [e for e in log if e.get("turn")], wire, output, code, host.name)
    try:
        problem = scenario.check(outcome)
        status = "PASS" if problem is None else "FAIL"
        detail = problem or _summary(scenario, outcome)
    except Skip as skip:
        status, detail = "SKIP", str(skip)
    except AssertionError as error:
        status, detail = "FAIL", str(error)
    seen = scenario.describe(outcome) if scenario.describe else None
    if seen and status != "PASS":
        detail += f"; the model saw: {seen}"
    elif seen:
        detail = seen
    if status == "FAIL":
        errors = [e["error"] for e in log if "error" in e]
        detail += f" (host exit {code}; {(errors[0] if errors else output.strip()[-300:])!r})"
    first = outcome.first_host_message()
    if keep:
        target = keep / f"{host.name}-{scenario.name}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(work, target, ignore=shutil.ignore_patterns("node_modules"))
    shutil.rmtree(work, ignore_errors=True)
    return {"host": host.name, "scenario": scenario.name, "status": status, "detail": detail, "seen": seen,
            "seconds": seconds, "era": _era(first, outcome), "client": outcome.client_name(),
            "turns": len(outcome.turns)}


def _summary(scenario: Scenario, outcome: Outcome) -> str:
    results = outcome.seen_results()
    if scenario.name == "tools":
        return f"{len(SERVER_TOOLS)} tools offered, e.g. {name_of(outcome.turns[0]['offered'], 'read_text_file')!r}"
    if scenario.name.startswith("delete"):
        asked, answer = outcome.confirmation()
        how = f"asked with {asked}, the host answered {answer}" if asked else "the host declares no elicitation"
        return f"{how}; the model saw: " + results[0]["text"].replace("\n", " ")[:70]
    if results:
        return "the model saw: " + results[0]["text"].replace("\n", " ")[:90]
    return "ok"


def _era(first: dict[str, Any] | None, outcome: Outcome) -> str:
    if not first:
        return "?"
    if first.get("method") == "initialize":
        answered = next((m for d, m in outcome.wire_messages() if d == "server" and m.get("id") == first.get("id")), {})
        got = (answered.get("result") or {}).get("protocolVersion", "?")
        return f"initialize {first.get('params', {}).get('protocolVersion')} (served {got})"
    meta = (first.get("params") or {}).get("_meta") or {}
    return f"{first.get('method')} {meta.get('io.modelcontextprotocol/protocolVersion', '?')}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", action="append", choices=[h.name for h in HOSTS], help="these hosts only")
    parser.add_argument("--scenario", action="append", choices=[s.name for s in SCENARIOS], help="these scenarios only")
    parser.add_argument("--keep", action="store_true", help="keep each run's folder (logs, config) in .hosts/runs/")
    parser.add_argument("--bin", default=str(Path(sys.executable).parent),
                        help="the folder of the mcp-ref-fs to run (another checkout's venv/bin, to compare)")
    parser.add_argument("--results", type=Path, help="write every run's row (status, what the model saw) to this JSON file")
    args = parser.parse_args(argv)
    hosts = [h for h in HOSTS if not args.host or h.name in args.host]

    started = time.monotonic()
    node_dir = npmcache.ensure_node(CACHE)
    prefix = CACHE / "npm"
    npmcache.install(prefix, [h.package for h in HOSTS], node_dir=node_dir)
    install_seconds = time.monotonic() - started
    keep = CACHE / "runs" / time.strftime("%Y%m%dT%H%M%S") if args.keep else None
    fs_command = str(Path(args.bin) / "mcp-ref-fs")
    rows = []
    for host in hosts:
        for scenario in SCENARIOS:
            if (args.scenario and scenario.name not in args.scenario) or (scenario.only and host.name not in scenario.only):
                continue
            row = run_one(host, scenario, prefix / "node_modules" / ".bin", node_dir, fs_command, keep)
            rows.append(row)
            print(f"{row['host']:<12} {row['scenario']:<16} {row['status']}  {row['seconds']:5.1f} s  {row['detail']}", flush=True)
    print()
    for host in hosts:
        mine = [r for r in rows if r["host"] == host.name]
        if not mine:
            continue
        counts = {s: sum(r["status"] == s for r in mine) for s in ("PASS", "FAIL", "SKIP")}
        eras = sorted({r["era"] for r in mine})
        print(f"{host.name:<12} {host.package.rsplit('@', 1)[1]:<9} {host.api:<34} first message: {', '.join(eras)}; "
              f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped, "
              f"{sum(r['seconds'] for r in mine):.0f} s")
    if args.results:
        args.results.write_text(json.dumps(rows, indent=1) + "\n")
    failed = sum(r["status"] == "FAIL" for r in rows)
    print(f"hosts: {len(rows) - failed}/{len(rows)} runs passed or skipped, {failed} failed; "
          f"install {install_seconds:.0f} s, runs {time.monotonic() - started - install_seconds:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
