"""``mcp-ref-fs print-config`` and ``mcp-ref-fs install`` (servers/mcp_ref_fs/hosts/hostconfig.py).

Most tests call ``hostconfig.main`` in-process with an ``Environment`` of their own (platform,
``HOME``, ``PATH``, working directory), so every host's locations can be checked on any machine
and no real configuration is ever touched; a few run the installed ``mcp-ref-fs`` script to show
the entry names the program that actually ran. ``install`` always writes below ``tmp_path``.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_ref_fs.hosts import hostconfig, jsonedit
from mcp_ref_fs.hosts.hostconfig import Environment, ParseError, Refused, host_facts, merge_entry, parse_config
from tests.wire import request_line

JSON_CLIENTS = ["claude-desktop", "vscode", "cursor"]
SERVERS_KEY = {"claude-desktop": "mcpServers", "vscode": "servers", "cursor": "mcpServers"}
SCRIPT = Path(sys.executable).with_name("mcp-ref-fs")  # the console script of the test venv
DISCOVER = request_line(1, "server/discover")
ENTRY = {"command": "/opt/mcp-ref/bin/mcp-ref-fs", "args": ["/srv/projects"]}


class Run:
    """One in-process run of a subcommand: its exit status, stdout and stderr."""

    def __init__(self, status: int, out: list[str], err: list[str]) -> None:
        self.status, self.out, self.err = status, "\n".join(out), "\n".join(err)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The working directory of a run, which is also its default ROOT."""
    path = tmp_path / "project"
    path.mkdir()
    return path


def run(command: str, *arguments: str, home: Path, cwd: Path, platform: str = "linux",
        environ: dict[str, str] | None = None, argv0: str | None = None) -> Run:
    out: list[str] = []
    err: list[str] = []
    environment = Environment(
        platform=platform,
        environ={"HOME": str(home), "PATH": os.environ.get("PATH", ""), **(environ or {})},
        cwd=str(cwd),
        argv0=str(SCRIPT) if argv0 is None else argv0,
        executable=sys.executable,
        out=out.append,
        err=err.append,
    )
    return Run(hostconfig.main(command, list(arguments), environment), out, err)


def leftovers(directory: Path) -> list[str]:
    """Temporary files an atomic write might have left."""
    return sorted(path.name for path in directory.iterdir() if path.name.endswith(".tmp"))


def backups(config: Path) -> list[Path]:
    return sorted(config.parent.glob(config.name + ".*.bak"))


def only_insertions(old: str, new: str) -> bool:
    """True when ``new`` is ``old`` with text inserted and nothing removed or changed."""
    opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    return all(tag in ("equal", "insert") for tag, *_ in opcodes)


# --- print-config -------------------------------------------------------------------------------


@pytest.mark.parametrize("client", JSON_CLIENTS)
def test_print_config_prints_the_hosts_json_naming_an_executable_that_exists(
        client: str, home: Path, project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other root"
    other.mkdir()
    done = run("print-config", "--client", client, ".", str(other), home=home, cwd=project)
    assert done.status == 0, done.err
    document = json.loads(done.out)
    assert list(document) == [SERVERS_KEY[client]]
    entry = document[SERVERS_KEY[client]]["mcp-ref-fs"]
    assert entry["args"] == [str(project), str(other)]  # absolute, in order
    command = Path(entry["command"])
    assert command.is_absolute() and command.is_file() and os.access(command, os.X_OK)
    if client == "vscode":
        assert entry["type"] == "stdio"
    else:
        assert "type" not in entry
    assert "logs:" in done.err and "after a change:" in done.err


def test_print_config_for_claude_code_prints_a_claude_mcp_add_command(home: Path, project: Path) -> None:
    spaced = project / "my notes"
    spaced.mkdir()
    done = run("print-config", "--client", "claude-code", "--name", "my files", str(spaced), home=home, cwd=project)
    assert done.status == 0, done.err
    words = shlex.split(done.out)
    assert words == ["claude", "mcp", "add", "--transport", "stdio", "my files", "--", str(SCRIPT), str(spaced)]
    assert Path(words[7]).is_file()
    assert "claude mcp list" in done.err and ".mcp.json" in done.err


def test_print_config_defaults_to_the_current_directory_and_the_name_mcp_ref_fs(home: Path, project: Path) -> None:
    done = run("print-config", "--client", "cursor", home=home, cwd=project)
    assert json.loads(done.out) == {"mcpServers": {"mcp-ref-fs": {"command": str(SCRIPT), "args": [str(project)]}}}


def test_print_config_passes_the_server_options_it_is_given_before_the_roots(home: Path, project: Path) -> None:
    done = run("print-config", "--client", "vscode", "--read-only", "--max-entries", "500",
               "--search-seconds", "12.5", ".", home=home, cwd=project)
    assert done.status == 0, done.err
    entry = json.loads(done.out)["servers"]["mcp-ref-fs"]
    assert entry["args"] == ["--read-only", "--max-entries", "500", "--search-seconds", "12.5", str(project)]
    words = shlex.split(run("print-config", "--client", "claude-code", "--modern-only", home=home, cwd=project).out)
    assert words[-2:] == ["--modern-only", str(project)]
    # The command the host will run parses: the options reach the server as given.
    from mcp_ref_fs.__main__ import parse_arguments

    config = parse_arguments(entry["args"])
    assert (config.read_only, config.max_entries, config.search_seconds, config.roots) == (True, 500, 12.5, (str(project),))


def test_print_config_refuses_an_invalid_server_option(home: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run("print-config", "--client", "cursor", "--max-entries", "0", home=home, cwd=project)
    assert exited.value.code == 2 and "--max-entries: must be a positive integer" in capsys.readouterr().err


def test_print_config_refuses_a_root_that_is_a_file_naming_each_path_once(home: Path, project: Path) -> None:
    (project / "file.txt").write_text("x")
    done = run("print-config", "--client", "vscode", "file.txt", home=home, cwd=project)
    assert done.status == 2 and done.out == ""
    assert done.err == f"mcp-ref-fs print-config: ROOT file.txt ({project / 'file.txt'}) exists but is not a directory"
    done = run("print-config", "--client", "vscode", str(project / "file.txt"), home=home, cwd=project)
    assert done.err == f"mcp-ref-fs print-config: ROOT {project / 'file.txt'} exists but is not a directory"


def test_a_root_that_does_not_exist_yet_is_written_with_a_warning(home: Path, project: Path) -> None:
    """An entry may be written before its folder (the README's `~/projects`, which the shell
    expands): the host starts the server later. The warning says so; the entry holds the path."""
    for command in ("print-config", "install"):
        done = run(command, "--client", "cursor", str(home / "projects"), home=home, cwd=project)
        assert done.status == 0, done.err
        assert (f"mcp-ref-fs {command}: warning: ROOT {home / 'projects'} does not exist yet; the server "
                "will not start until it does") in done.err
    done = run("print-config", "--client", "cursor", "later", home=home, cwd=project)
    assert f"ROOT later ({project / 'later'}) does not exist yet" in done.err
    assert json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["mcp-ref-fs"]["args"] == [
        str(home / "projects")]
    assert not (home / "projects").exists()  # nothing made on the user's behalf


def test_print_config_refuses_an_empty_name(home: Path, project: Path) -> None:
    done = run("print-config", "--client", "vscode", "--name", "", home=home, cwd=project)
    assert done.status == 2 and "--name" in done.err


def test_print_config_without_a_console_script_names_python_dash_m(home: Path, project: Path) -> None:
    done = run("print-config", "--client", "cursor", home=home, cwd=project,
               argv0=str(Path(hostconfig.__file__).with_name("__main__.py")))
    entry = json.loads(done.out)["mcpServers"]["mcp-ref-fs"]
    assert entry == {"command": sys.executable, "args": ["-m", "mcp_ref_fs", str(project)]}


def test_print_config_finds_a_bare_script_name_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(SCRIPT.parent))
    assert hostconfig.server_command("mcp-ref-fs", sys.executable) == [str(SCRIPT)]
    monkeypatch.setenv("PATH", "")
    assert hostconfig.server_command("mcp-ref-fs", sys.executable) == [sys.executable, "-m", "mcp_ref_fs"]


def test_print_config_warns_when_run_from_uvx_cache(home: Path, project: Path, tmp_path: Path) -> None:
    cached = tmp_path / ".cache" / "uv" / "archive-v0" / "abc123" / "bin" / "mcp-ref-fs"
    cached.parent.mkdir(parents=True)
    cached.write_text("#!/bin/sh\n")
    done = run("print-config", "--client", "vscode", home=home, cwd=project, argv0=str(cached))
    assert done.status == 0
    assert json.loads(done.out)["servers"]["mcp-ref-fs"]["command"] == str(cached)
    assert "warning" in done.err and "uv tool install" in done.err


@pytest.mark.parametrize("bucket", ["archive-v0/abc123", "environments-v2/mcp-ref-fs-abc"])
def test_print_config_warns_when_run_from_a_uv_cache_named_by_uv_cache_dir(
        home: Path, project: Path, tmp_path: Path, bucket: str) -> None:
    """With UV_CACHE_DIR set, the cache's path need not contain a directory named uv."""
    cache = tmp_path / "somewhere"
    cached = cache / bucket / "bin" / "mcp-ref-fs"
    cached.parent.mkdir(parents=True)
    cached.write_text("#!/bin/sh\n")
    done = run("print-config", "--client", "vscode", home=home, cwd=project, argv0=str(cached),
               environ={"UV_CACHE_DIR": str(cache)})
    assert done.status == 0 and "runs from uv's cache (uvx)" in done.err
    elsewhere = run("print-config", "--client", "vscode", home=home, cwd=project, argv0=str(cached),
                    environ={"UV_CACHE_DIR": str(tmp_path / "another")})
    assert elsewhere.status == 0 and "uv's cache" not in elsewhere.err


def test_print_config_fails_cleanly_without_any_way_to_name_the_program(home: Path, project: Path) -> None:
    with pytest.raises(Refused):
        hostconfig.server_command("/nowhere/__main__.py", "")


def test_print_config_through_the_installed_script_names_that_script(tmp_path: Path) -> None:
    if not SCRIPT.is_file():  # pragma: no cover - the suite runs from the project's venv
        pytest.skip("no mcp-ref-fs console script beside this Python")
    done = subprocess.run([str(SCRIPT), "print-config", "--client", "vscode", str(tmp_path)], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "servers": {"mcp-ref-fs": {"type": "stdio", "command": str(SCRIPT), "args": [str(tmp_path)]}}}
    assert "mcp.json" in done.stderr


def test_print_config_through_python_dash_m_names_the_interpreter(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mcp_ref_fs", "print-config", "--client", "claude-code", str(tmp_path)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert shlex.split(done.stdout)[-4:] == [sys.executable, "-m", "mcp_ref_fs", str(tmp_path)]


@pytest.mark.parametrize("spelling", [["--", "print-config"], ["./print-config"], ["--", "install"]])
def test_a_directory_named_like_a_subcommand_is_served_after_double_dash_or_as_a_path(
        tmp_path: Path, spelling: list[str]) -> None:
    (tmp_path / spelling[-1].lstrip("./")).mkdir()
    done = subprocess.run([sys.executable, "-m", "mcp_ref_fs", *spelling], input=DISCOVER, capture_output=True,
                          text=True, timeout=30, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "supportedVersions" in json.loads(done.stdout)["result"]


def test_the_servers_help_mentions_the_subcommands() -> None:
    done = subprocess.run([sys.executable, "-m", "mcp_ref_fs", "--help"], capture_output=True, text=True, timeout=30)
    assert "print-config" in done.stdout and "install" in done.stdout and "-- print-config" in done.stdout


def test_the_subcommands_have_their_own_help() -> None:
    for command in ("print-config", "install"):
        done = subprocess.run([sys.executable, "-m", "mcp_ref_fs", command, "--help"], capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 0 and f"mcp-ref-fs {command}" in done.stdout and "--client" in done.stdout


# --- where each host keeps its configuration ------------------------------------------------------


WINDOWS = {"APPDATA": r"C:\Users\ada\AppData\Roaming", "USERPROFILE": r"C:\Users\ada"}


@pytest.mark.parametrize(("client", "platform", "environ", "config", "workspace"), [
    ("claude-desktop", "darwin", {"HOME": "/Users/ada"},
     "/Users/ada/Library/Application Support/Claude/claude_desktop_config.json", None),
    ("claude-desktop", "win32", WINDOWS, r"C:\Users\ada\AppData\Roaming\Claude\claude_desktop_config.json", None),
    ("claude-desktop", "linux", {"HOME": "/home/ada"}, None, None),
    ("vscode", "linux", {"HOME": "/home/ada"}, "/home/ada/.config/Code/User/mcp.json", ".vscode/mcp.json"),
    ("vscode", "linux", {"HOME": "/home/ada", "XDG_CONFIG_HOME": "/xdg"}, "/xdg/Code/User/mcp.json", ".vscode/mcp.json"),
    ("vscode", "darwin", {"HOME": "/Users/ada"}, "/Users/ada/Library/Application Support/Code/User/mcp.json",
     ".vscode/mcp.json"),
    ("vscode", "win32", WINDOWS, r"C:\Users\ada\AppData\Roaming\Code\User\mcp.json", r".vscode\mcp.json"),
    ("cursor", "linux", {"HOME": "/home/ada"}, "/home/ada/.cursor/mcp.json", ".cursor/mcp.json"),
    ("cursor", "darwin", {"HOME": "/Users/ada"}, "/Users/ada/.cursor/mcp.json", ".cursor/mcp.json"),
    ("cursor", "win32", WINDOWS, r"C:\Users\ada\.cursor\mcp.json", r".cursor\mcp.json"),
    ("claude-code", "linux", {"HOME": "/home/ada"}, "/home/ada/.claude.json", ".mcp.json"),
])  # fmt: skip
def test_each_host_keeps_its_configuration_where_its_documentation_says(
        client: str, platform: str, environ: dict[str, str], config: str | None, workspace: str | None) -> None:
    facts = host_facts(client, platform, environ)
    assert facts.user_config == config
    assert facts.workspace_config == workspace
    assert facts.logs and facts.restart


def test_claude_desktop_logs_and_restart_per_platform() -> None:
    assert host_facts("claude-desktop", "darwin", {"HOME": "/Users/ada"}).logs == "/Users/ada/Library/Logs/Claude/mcp*.log"
    assert host_facts("claude-desktop", "win32", WINDOWS).logs == r"C:\Users\ada\AppData\Roaming\Claude\logs\mcp*.log"
    linux = host_facts("claude-desktop", "linux", {"HOME": "/home/ada"})
    assert "no official Linux release" in " ".join(linux.notes)
    assert "quit" in linux.restart


def test_windows_without_appdata_falls_back_to_the_profile() -> None:
    facts = host_facts("vscode", "win32", {"USERPROFILE": r"C:\Users\ada"})
    assert facts.user_config == r"C:\Users\ada\AppData\Roaming\Code\User\mcp.json"


def test_an_unknown_client_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        host_facts("notepad", "linux", {})


@pytest.mark.parametrize("client", ["claude-desktop", "vscode", "cursor", "claude-code"])
def test_print_config_says_where_the_config_and_logs_are_on_this_platform(client: str, home: Path, project: Path) -> None:
    done = run("print-config", "--client", client, home=home, cwd=project, platform="darwin")
    facts = host_facts(client, "darwin", {"HOME": str(home)})
    assert facts.logs in done.err
    if client != "claude-code":
        assert facts.user_config is not None and facts.user_config in done.err


def test_print_config_for_claude_desktop_on_linux_says_there_is_no_official_release(home: Path, project: Path) -> None:
    done = run("print-config", "--client", "claude-desktop", home=home, cwd=project, platform="linux")
    assert done.status == 0 and json.loads(done.out)["mcpServers"]
    assert "no official Linux release" in done.err


# --- install into JSON files ---------------------------------------------------------------------


def expected_entry(client: str, project: Path, root: Path | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": str(SCRIPT), "args": [str(root or project)]}
    return {"type": "stdio", **entry} if client == "vscode" else entry


@pytest.mark.parametrize("client", JSON_CLIENTS)
def test_install_creates_a_new_file_with_its_directories(client: str, home: Path, project: Path) -> None:
    config = home / "deep" / "er" / "config.json"
    done = run("install", "--client", client, "--config", str(config), home=home, cwd=project)
    assert done.status == 0, done.err
    assert json.loads(config.read_text()) == {SERVERS_KEY[client]: {"mcp-ref-fs": expected_entry(client, project)}}
    assert backups(config) == [] and "(a new file)" in done.out
    assert leftovers(config.parent) == []
    assert stat.S_IMODE(config.stat().st_mode) & 0o600 == 0o600


def test_install_writes_the_server_options_into_the_entry(home: Path, project: Path) -> None:
    config = home / "claude_desktop_config.json"
    done = run("install", "--client", "claude-desktop", "--config", str(config), "--read-only",
               "--task-search-seconds", "120", home=home, cwd=project)
    assert done.status == 0, done.err
    entry = json.loads(config.read_text())["mcpServers"]["mcp-ref-fs"]
    assert entry["args"] == ["--read-only", "--task-search-seconds", "120", str(project)]


def test_install_prints_what_it_did_and_what_to_do_next(home: Path, project: Path) -> None:
    config = home / "mcp.json"
    done = run("install", "--client", "vscode", "--config", str(config), home=home, cwd=project)
    assert f"added the server 'mcp-ref-fs' in {config}" in done.out
    assert f"command: {SCRIPT} {project}" in done.out
    assert "MCP: List Servers" in done.out


OTHERS = """{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "weather": {
      "command": "uv",
      "args": ["--directory", "/opt/weather", "run", "weather.py"],
      "env": {"API_KEY": "sk-ünïcödé"}
    },
    "notes": {"command": "/usr/bin/notes-mcp"}
  },
  "zoom": 1.25
}
"""


def test_install_keeps_other_servers_and_keys_byte_for_byte(home: Path, project: Path) -> None:
    config = home / "claude_desktop_config.json"
    config.write_text(OTHERS, encoding="utf-8")
    os.chmod(config, 0o640)
    done = run("install", "--client", "claude-desktop", "--config", str(config), home=home, cwd=project)
    assert done.status == 0, done.err
    new = config.read_text(encoding="utf-8")
    assert only_insertions(OTHERS, new)
    data = json.loads(new)
    assert list(data["mcpServers"]) == ["weather", "notes", "mcp-ref-fs"]
    assert data["mcpServers"]["mcp-ref-fs"] == expected_entry("claude-desktop", project)
    assert data["globalShortcut"] == "Ctrl+Space" and data["zoom"] == 1.25
    assert '    "mcp-ref-fs": {\n      "command": ' in new  # the file's own two-space indent
    [backup] = backups(config)
    assert backup.read_text(encoding="utf-8") == OTHERS
    assert str(backup) in done.out
    assert stat.S_IMODE(config.stat().st_mode) == 0o640  # the old file's permissions
    assert leftovers(home) == []


@pytest.mark.parametrize("client", JSON_CLIENTS)
def test_install_refuses_to_replace_an_entry_of_the_same_name_without_force(client: str, home: Path, project: Path) -> None:
    config = home / "config.json"
    original = json.dumps({SERVERS_KEY[client]: {"mcp-ref-fs": {"command": "old"}}}, indent=4).encode()
    config.write_bytes(original)
    before = config.stat()
    done = run("install", "--client", client, "--config", str(config), home=home, cwd=project)
    assert done.status == 1
    assert "already has a server named 'mcp-ref-fs'" in done.err and "--force" in done.err
    assert config.read_bytes() == original and config.stat().st_mtime_ns == before.st_mtime_ns
    assert backups(config) == [] and leftovers(home) == []


def test_install_with_force_replaces_only_that_entry(home: Path, project: Path) -> None:
    config = home / "mcp.json"
    original = ('{\n\t"servers": {\n\t\t"a": {"type": "stdio", "command": "a"},\n\t\t"mcp-ref-fs": {"command": "old"},\n'
                '\t\t"z": {"type": "stdio", "command": "z"}\n\t}\n}\n')
    config.write_text(original)
    done = run("install", "--client", "vscode", "--force", "--config", str(config), home=home, cwd=project)
    assert done.status == 0, done.err
    assert "replaced the server 'mcp-ref-fs'" in done.out
    new = config.read_text()
    start = original.index('{"command": "old"}')
    end = start + len('{"command": "old"}')
    assert new.startswith(original[:start]) and new.endswith(original[end:])  # all but the old value kept
    assert json.loads(new)["servers"]["mcp-ref-fs"] == expected_entry("vscode", project)
    assert '\t\t"mcp-ref-fs": {\n\t\t\t"type": "stdio",' in new  # the file's tab indent
    assert [path.read_text() for path in backups(config)] == [original]


def test_install_twice_with_force_keeps_every_previous_file(home: Path, project: Path) -> None:
    config = home / "mcp.json"
    for _ in range(3):
        assert run("install", "--client", "cursor", "--force", "--config", str(config), home=home, cwd=project).status == 0
    assert len(backups(config)) == 2  # the first run created the file: nothing to back up


def test_a_backup_name_taken_meanwhile_is_skipped(home: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = home / "mcp.json"
    config.write_text("{}")
    taken = home / "mcp.json.taken.bak"
    taken.write_text("someone else's")
    names = iter([str(taken)])
    real = hostconfig.backup_path
    monkeypatch.setattr(hostconfig, "backup_path", lambda path: next(names, None) or real(path))
    assert run("install", "--client", "cursor", "--config", str(config), home=home, cwd=project).status == 0
    assert taken.read_text() == "someone else's"
    assert [path.read_text() for path in backups(config) if path != taken] == ["{}"]


def test_backup_names_count_up_within_one_second(tmp_path: Path) -> None:
    import datetime

    now = datetime.datetime(2026, 7, 28, 12, 0, 0)
    config = tmp_path / "mcp.json"
    first = hostconfig.backup_path(str(config), now)
    assert first == f"{config}.20260728-120000.bak"
    Path(first).write_text("1")
    assert hostconfig.backup_path(str(config), now) == f"{config}.20260728-120000-2.bak"


MALFORMED = {
    "truncated": '{"mcpServers": {',
    "not an object": '["mcp-ref-fs"]',
    "servers not an object": '{"mcpServers": ["a"]}',
    "trailing comma": '{"mcpServers": {"a": {"command": "a"},}}',
    "comment": '{\n  // mine\n  "mcpServers": {}\n}',
    "duplicate name": '{"mcpServers": {"mcp-ref-fs": {}, "mcp-ref-fs": {}}}',
    "duplicate key": '{"mcpServers": {}, "mcpServers": {}}',
    "extra data": '{"mcpServers": {}} {}',
    "single quotes": "{'mcpServers': {}}",
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_install_refuses_a_file_it_cannot_parse_and_leaves_it_untouched(case: str, home: Path, project: Path) -> None:
    config = home / "claude_desktop_config.json"
    config.write_text(MALFORMED[case])
    done = run("install", "--client", "claude-desktop", "--force", "--config", str(config), home=home, cwd=project)
    assert done.status == 1, done.out
    assert str(config) in done.err and "left as it is" in done.err
    assert config.read_text() == MALFORMED[case]
    assert backups(config) == [] and leftovers(home) == []


def test_a_parse_error_names_line_and_column(home: Path, project: Path) -> None:
    config = home / "mcp.json"
    config.write_text('{\n  "mcpServers": {\n    "a": nope\n  }\n}\n')
    done = run("install", "--client", "cursor", "--config", str(config), home=home, cwd=project)
    assert "line 3 column 10" in done.err


def test_install_refuses_a_file_that_is_not_utf8(home: Path, project: Path) -> None:
    config = home / "mcp.json"
    config.write_bytes(b'{"mcpServers": {"a": {"command": "\xff"}}}')
    done = run("install", "--client", "cursor", "--config", str(config), home=home, cwd=project)
    assert done.status == 1 and "not UTF-8" in done.err
    assert config.read_bytes() == b'{"mcpServers": {"a": {"command": "\xff"}}}'


def test_install_refuses_a_directory_as_the_config(home: Path, project: Path) -> None:
    done = run("install", "--client", "cursor", "--config", str(project), home=home, cwd=project)
    assert done.status == 1 and "is a directory" in done.err


VSCODE_JSONC = """{
  // Servers for this machine.
  "servers": {
    "github": {
      "type": "http",
      "url": "https://example.invalid/mcp/", // remote
    }, /* trailing commas are fine in VS Code */
  },
  "inputs": [],
}
"""


def test_install_for_vscode_accepts_comments_and_trailing_commas_and_keeps_them(home: Path, project: Path) -> None:
    config = home / "mcp.json"
    config.write_text(VSCODE_JSONC)
    done = run("install", "--client", "vscode", "--config", str(config), home=home, cwd=project)
    assert done.status == 0, done.err
    new = config.read_text()
    assert only_insertions(VSCODE_JSONC, new)
    data = parse_config(new, jsonc=True).data
    assert data["servers"]["mcp-ref-fs"] == expected_entry("vscode", project)
    assert data["servers"]["github"]["url"] == "https://example.invalid/mcp/" and data["inputs"] == []


def test_install_workspace_writes_dot_vscode_mcp_json_in_the_current_directory(home: Path, project: Path) -> None:
    done = run("install", "--client", "vscode", "--workspace", home=home, cwd=project)
    assert done.status == 0, done.err
    config = project / ".vscode" / "mcp.json"
    assert json.loads(config.read_text()) == {"servers": {"mcp-ref-fs": expected_entry("vscode", project)}}
    assert not (home / ".config").exists()


def test_install_notes_fit_where_the_entry_went(home: Path, project: Path, tmp_path: Path) -> None:
    user = run("install", "--client", "vscode", home=home, cwd=project)
    assert "default profile's user file" in user.out and "absolute paths" not in user.out
    workspace = run("install", "--client", "vscode", "--workspace", home=home, cwd=project)
    said = workspace.out
    assert "default profile's user file" not in said and "absolute paths of this machine" in said
    given = run("install", "--client", "vscode", "--config", str(tmp_path / "mine.json"), home=home, cwd=project)
    said = given.out
    assert given.status == 0 and "default profile" not in said and "absolute paths" not in said


def test_install_refuses_config_and_workspace_together(home: Path, project: Path, tmp_path: Path) -> None:
    done = run("install", "--client", "cursor", "--workspace", "--config", str(tmp_path / "x.json"), home=home,
               cwd=project)
    assert done.status == 2 and "not both" in done.err
    assert not (tmp_path / "x.json").exists() and not (project / ".cursor").exists()


def test_install_workspace_for_cursor_writes_dot_cursor_mcp_json(home: Path, project: Path) -> None:
    assert run("install", "--client", "cursor", "--workspace", home=home, cwd=project).status == 0
    assert json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]["mcp-ref-fs"]


def test_install_workspace_is_refused_for_claude_desktop(home: Path, project: Path) -> None:
    done = run("install", "--client", "claude-desktop", "--workspace", home=home, cwd=project, platform="darwin")
    assert done.status == 2 and "no project configuration" in done.err


def test_install_writes_the_documented_user_file_by_default(home: Path, project: Path) -> None:
    assert run("install", "--client", "vscode", home=home, cwd=project).status == 0
    assert json.loads((home / ".config" / "Code" / "User" / "mcp.json").read_text())["servers"]["mcp-ref-fs"]
    assert run("install", "--client", "claude-desktop", home=home, cwd=project, platform="darwin").status == 0
    desktop = home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    assert json.loads(desktop.read_text())["mcpServers"]["mcp-ref-fs"]


def test_install_for_claude_desktop_on_linux_needs_config(home: Path, project: Path) -> None:
    done = run("install", "--client", "claude-desktop", home=home, cwd=project, platform="linux")
    assert done.status == 1 and "--config" in done.err
    assert list(home.iterdir()) == []


def test_install_follows_a_symbolic_link_to_the_real_file(home: Path, project: Path, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {}}')
    link = home / "mcp.json"
    link.symlink_to(real)
    assert run("install", "--client", "cursor", "--config", str(link), home=home, cwd=project).status == 0
    assert link.is_symlink() and json.loads(real.read_text())["mcpServers"]["mcp-ref-fs"]
    assert backups(real) and leftovers(real.parent) == []


def test_an_empty_file_counts_as_an_empty_configuration(home: Path, project: Path) -> None:
    config = home / "mcp.json"
    config.write_text("\n")
    assert run("install", "--client", "cursor", "--config", str(config), home=home, cwd=project).status == 0
    assert json.loads(config.read_text()) == {"mcpServers": {"mcp-ref-fs": expected_entry("cursor", project)}}
    assert [path.read_text() for path in backups(config)] == ["\n"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(
        home: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = home / "mcp.json"
    config.write_text(OTHERS)

    def broken_replace(source: str, target: str) -> None:
        raise OSError(28, "No space left on device", target)

    monkeypatch.setattr(hostconfig.os, "replace", broken_replace)
    done = run("install", "--client", "cursor", "--config", str(config), home=home, cwd=project)
    assert done.status == 1 and "No space left on device" in done.err and "not changed" in done.err
    assert config.read_text() == OTHERS
    assert leftovers(home) == []


def test_an_unwritable_directory_is_reported_not_raised(home: Path, project: Path) -> None:
    if os.geteuid() == 0:
        blocker = home / "file"
        blocker.write_text("x")
        config = blocker / "mcp.json"  # a directory that cannot be created: its parent is a file
    else:  # pragma: no cover - CI runs as root
        locked = home / "locked"
        locked.mkdir(mode=0o500)
        config = locked / "mcp.json"
    done = run("install", "--client", "cursor", "--config", str(config), home=home, cwd=project)
    assert done.status == 1 and "cannot update" in done.err


def test_install_preserves_a_byte_order_mark_and_crlf_line_endings(home: Path, project: Path) -> None:
    config = home / "mcp.json"
    original = '\ufeff{\r\n  "mcpServers": {\r\n    "a": {"command": "a"}\r\n  }\r\n}\r\n'
    config.write_bytes(original.encode("utf-8"))
    assert run("install", "--client", "cursor", "--config", str(config), home=home, cwd=project).status == 0
    new = config.read_bytes().decode("utf-8")
    assert new.startswith("\ufeff") and "\n" not in new.replace("\r\n", "")
    assert only_insertions(original, new)


# --- the textual merge, case by case ------------------------------------------------------------


MERGES = {
    "pretty, servers present": ('{\n  "mcpServers": {\n    "a": {"command": "a"}\n  }\n}\n', False),
    "servers key missing": ('{\n    "theme": "dark"\n}\n', False),
    "empty object": ("{}", False),
    "empty servers": ('{\n  "mcpServers": {}\n}\n', False),
    "one line": ('{"mcpServers":{"a":{"command":"a"}}}', False),
    "members share a line": ('{\n  "mcpServers": {"a": 1, "b": 2}\n}\n', False),
    "closing brace on the last line": ('{\n  "mcpServers": {\n    "a": 1}\n}\n', False),
    "empty with a comment": ('{\n  "mcpServers": {\n    // none yet\n  }\n}\n', True),
    "comment after the last": ('{\n  "mcpServers": {\n    "a": 1 // one\n  }\n}\n', True),
    "block comment after the last": ('{\n  "mcpServers": {\n    "a": 1 /* one */\n  }\n}\n', True),
    "trailing comma then brace": ('{\n  "mcpServers": {\n    "a": 1, }\n}\n', True),
    "trailing comma then comment": ('{\n  "mcpServers": {\n    "a": [1, 2,], // two\n  },\n}', True),
    "block comments everywhere": ('/* c */ {/* c */"mcpServers"/* c */: /* c */{"a": 1}/* c */}/* c */', True),
}


@pytest.mark.parametrize("case", sorted(MERGES))
def test_merge_inserts_the_entry_and_keeps_every_other_byte(case: str) -> None:
    text, jsonc = MERGES[case]
    merged = merge_entry(text, "mcpServers", "mcp-ref-fs", ENTRY, force=False, jsonc=jsonc)
    assert merged.method == "inserted" and not merged.replaced
    assert only_insertions(text, merged.text), merged.text
    before = parse_config(text, jsonc=jsonc).data
    after = parse_config(merged.text, jsonc=jsonc).data
    assert after == {**before, "mcpServers": {**before.get("mcpServers", {}), "mcp-ref-fs": ENTRY}}


@pytest.mark.parametrize("text", [
    '{\n  "mcpServers": {\n    "mcp-ref-fs": {"command": "old"},\n    "b": 2\n  }\n}\n',
    '{"mcpServers": {"mcp-ref-fs": null, "b": 2}}',
    '{\n  "mcpServers": {"mcp-ref-fs": 1, "b": 2}\n}\n',
])  # fmt: skip
def test_merge_with_force_replaces_only_the_old_value(text: str) -> None:
    merged = merge_entry(text, "mcpServers", "mcp-ref-fs", ENTRY, force=True, jsonc=False)
    assert merged.replaced and merged.method == "inserted"
    node = parse_config(text, jsonc=False)
    old = next(m for m in node.members[0].value.members if m.key == "mcp-ref-fs").value  # type: ignore[union-attr]
    assert merged.text.startswith(text[:old.start]) and merged.text.endswith(text[old.end:])
    assert json.loads(merged.text) == {"mcpServers": {"mcp-ref-fs": ENTRY, "b": 2}}


def test_merge_falls_back_to_reserialising_a_plain_json_file(monkeypatch: pytest.MonkeyPatch, home: Path,
                                                             project: Path) -> None:
    monkeypatch.setattr(jsonedit, "insert_member", lambda text, *args: text)  # an edit that goes wrong
    merged = merge_entry('{\n\t"zoom": 2\n}\n', "servers", "mcp-ref-fs", ENTRY, force=False, jsonc=True)
    assert merged.method == "re-serialised"
    assert merged.text == '{\n\t"zoom": 2,\n\t"servers": {\n\t\t"mcp-ref-fs": {\n\t\t\t"command": ' \
        '"/opt/mcp-ref/bin/mcp-ref-fs",\n\t\t\t"args": [\n\t\t\t\t"/srv/projects"\n\t\t\t]\n\t\t}\n\t}\n}\n'
    config = home / "mcp.json"
    config.write_text("{}")
    done = run("install", "--client", "cursor", "--config", str(config), home=home, cwd=project)
    assert done.status == 0 and "written anew" in done.out


def test_merge_refuses_rather_than_lose_comments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonedit, "insert_member", lambda text, *args: text)
    with pytest.raises(Refused, match="losing its comments"):
        merge_entry('{\n  // mine\n  "zoom": 2\n}\n', "servers", "mcp-ref-fs", ENTRY, force=False, jsonc=True)


@pytest.mark.parametrize(("text", "jsonc"), [
    ("", False), ("   \n", True),
])  # fmt: skip
def test_parse_config_reads_an_empty_file_as_an_empty_object(text: str, jsonc: bool) -> None:
    assert parse_config(text, jsonc=jsonc).data == {}


@pytest.mark.parametrize(("text", "jsonc", "data"), [
    ('{"a": [1, 2, {"b": null}], "c": "\\u00e9"}', False, {"a": [1, 2, {"b": None}], "c": "é"}),
    ("[]", False, []),
    ('{"a": [1, 2,], /* x */ "b": [],}', True, {"a": [1, 2], "b": []}),
    ("// only a comment\n{}", True, {}),
])  # fmt: skip
def test_parse_config_reads_json_and_jsonc(text: str, jsonc: bool, data: Any) -> None:
    assert parse_config(text, jsonc=jsonc).data == data


@pytest.mark.parametrize(("text", "jsonc", "message"), [
    ('{"a": 1', False, "expected ',' or '}'"),
    ('{"a" 1}', False, "expected ':'"),
    ('{"a": }', False, "Expecting value"),
    ('{"a": "\\x"}', False, "Invalid .escape"),
    ('{"\\x": 1}', False, "Invalid .escape"),
    ("[1 2]", False, "expected ',' or ']'"),
    ("[1,]", False, "Expecting value"),
    ("{} x", False, "extra data"),
    ("{", False, "expected a quoted key or '}'"),
    ('{"a": ', False, "unexpected end of file"),
    ("/* never closed {}", True, "unterminated comment"),
    ("{1: 2}", True, "expected a quoted key"),
])  # fmt: skip
def test_parse_config_reports_what_is_wrong_and_where(text: str, jsonc: bool, message: str) -> None:
    with pytest.raises(ParseError, match=message) as caught:
        parse_config(text, jsonc=jsonc)
    assert "line 1 column" in str(caught.value)


# --- install for Claude Code --------------------------------------------------------------------


@pytest.fixture
def fake_claude(tmp_path: Path) -> tuple[Path, Path]:
    """A ``claude`` on a PATH of its own that records each call's argv (one JSON list per line).

    ``claude mcp get NAME`` exits with $FAKE_CLAUDE_GET (1: no such server, as the real one);
    ``claude mcp add`` with $FAKE_CLAUDE_ADD (default 0)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "claude-calls.jsonl"
    script = bin_dir / "claude"
    script.write_text(f"""#!{sys.executable}
import json, os, sys
with open({str(log)!r}, "a") as stream:
    stream.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["mcp", "get"]:
    sys.exit(int(os.environ.get("FAKE_CLAUDE_GET", "1")))
if sys.argv[1:3] == ["mcp", "add"]:
    print("Added stdio MCP server", sys.argv[sys.argv.index("--") - 1])
    sys.exit(int(os.environ.get("FAKE_CLAUDE_ADD", "0")))
""")
    script.chmod(0o755)
    return bin_dir, log


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_install_for_claude_code_runs_claude_mcp_add(fake_claude: tuple[Path, Path], home: Path, project: Path) -> None:
    bin_dir, log = fake_claude
    done = run("install", "--client", "claude-code", home=home, cwd=project, environ={"PATH": str(bin_dir)})
    assert done.status == 0, done.err
    assert calls(log) == [
        ["mcp", "get", "mcp-ref-fs"],
        ["mcp", "add", "--transport", "stdio", "mcp-ref-fs", "--", str(SCRIPT), str(project)],
    ]
    assert "claude mcp list" in done.out
    # Said in mcp-ref-fs's own words, as for the JSON hosts ("added the server ... in FILE"), not claude's.
    assert done.out.splitlines()[0] == f"added the server 'mcp-ref-fs' in Claude Code: claude mcp add --transport stdio mcp-ref-fs -- {SCRIPT} {project}"
    assert "Added" not in done.out + done.err


def test_install_for_claude_code_in_the_workspace_uses_project_scope(
        fake_claude: tuple[Path, Path], home: Path, project: Path) -> None:
    bin_dir, log = fake_claude
    done = run("install", "--client", "claude-code", "--workspace", "--name", "files", home=home, cwd=project,
               environ={"PATH": str(bin_dir)})
    assert done.status == 0, done.err
    assert calls(log)[-1] == ["mcp", "add", "--transport", "stdio", "--scope", "project", "files", "--", str(SCRIPT),
                              str(project)]
    said = done.out
    assert "scope local, the default" not in said and "absolute paths of this machine" in said


def test_install_for_claude_code_refuses_an_existing_name_without_force(
        fake_claude: tuple[Path, Path], home: Path, project: Path) -> None:
    bin_dir, log = fake_claude
    done = run("install", "--client", "claude-code", home=home, cwd=project,
               environ={"PATH": str(bin_dir), "FAKE_CLAUDE_GET": "0"})
    assert done.status == 1 and "--force" in done.err
    assert calls(log) == [["mcp", "get", "mcp-ref-fs"]]


def test_install_for_claude_code_with_force_removes_then_adds(
        fake_claude: tuple[Path, Path], home: Path, project: Path) -> None:
    bin_dir, log = fake_claude
    done = run("install", "--client", "claude-code", "--force", home=home, cwd=project,
               environ={"PATH": str(bin_dir), "FAKE_CLAUDE_GET": "0"})
    assert done.status == 0, done.err
    assert [call[:3] for call in calls(log)] == [["mcp", "get", "mcp-ref-fs"], ["mcp", "remove", "--scope"],
                                                 ["mcp", "add", "--transport"]]
    assert done.out.startswith("replaced the server 'mcp-ref-fs' in Claude Code: claude mcp add ")


def test_install_for_claude_code_reports_a_failing_claude(fake_claude: tuple[Path, Path], home: Path, project: Path) -> None:
    bin_dir, _log = fake_claude
    done = run("install", "--client", "claude-code", home=home, cwd=project,
               environ={"PATH": str(bin_dir), "FAKE_CLAUDE_ADD": "3"})
    assert done.status == 1 and "exit status 3" in done.err
    assert "claude: Added stdio MCP server mcp-ref-fs" in done.err  # what claude said, passed on when it failed


def test_install_for_claude_code_without_claude_prints_the_command(home: Path, project: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    done = run("install", "--client", "claude-code", home=home, cwd=project, environ={"PATH": str(empty)})
    assert done.status == 1
    assert "not on PATH" in done.err
    assert shlex.split(done.out) == ["claude", "mcp", "add", "--transport", "stdio", "mcp-ref-fs", "--", str(SCRIPT),
                                     str(project)]


def test_install_for_claude_code_takes_no_config_path(home: Path, project: Path) -> None:
    done = run("install", "--client", "claude-code", "--config", "x.json", home=home, cwd=project)
    assert done.status == 2 and "claude mcp add" in done.err


def test_install_through_the_installed_script_writes_a_temporary_config(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(OTHERS)
    done = subprocess.run([sys.executable, "-m", "mcp_ref_fs", "install", "--client", "claude-desktop", "--config",
                           str(config), str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert json.loads(config.read_text())["mcpServers"]["mcp-ref-fs"]["args"] == ["-m", "mcp_ref_fs", str(tmp_path)]
    again = subprocess.run([sys.executable, "-m", "mcp_ref_fs", "install", "--client", "claude-desktop", "--config",
                            str(config), str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert again.returncode == 1 and "already has a server" in again.stderr


def test_a_drive_relative_windows_root_becomes_absolute(monkeypatch: pytest.MonkeyPatch) -> None:
    """`C:notes` with the current directory on D: is relative to C:'s own current directory (what
    Windows' abspath gives), never written into a host's config as the drive-relative `C:notes`."""
    import ntpath
    import types

    windows_path = types.SimpleNamespace(
        normpath=ntpath.normpath, join=ntpath.join, expanduser=lambda path: path, isabs=ntpath.isabs,
        abspath=lambda path: ntpath.join("C:\\Users\\me", path[2:]) if path[:2] == "C:" else path,
        isdir=lambda path: True)
    monkeypatch.setattr(hostconfig, "os", types.SimpleNamespace(path=windows_path))
    assert hostconfig.absolute_roots(["C:notes", "D:\\work\\x", "sub"], "D:\\work") == [
        "C:\\Users\\me\\notes", "D:\\work\\x", "D:\\work\\sub"]
