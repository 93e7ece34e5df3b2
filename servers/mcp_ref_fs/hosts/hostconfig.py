"""``mcp-ref-fs print-config`` and ``mcp-ref-fs install``: put mcp-ref-fs into an MCP host.

A host (Claude Desktop, VS Code, Cursor, Claude Code) starts a stdio server from an entry in its
own configuration: a command, its arguments, and for VS Code a ``type``. This module knows, per
host and platform, what that entry looks like, where the host keeps it, where the host's logs
are and what restart it needs; ``print-config`` prints the entry and ``install`` writes it.

The entry names the program that is running now, as an absolute path, so the host finds it
without a shell's ``PATH`` or an activated venv: the console script when run as one
(``sys.argv[0]`` made absolute, symbolic links kept, so a ``pipx`` link in ``~/.local/bin`` stays
valid across upgrades), else ``sys.executable -m mcp_ref_fs``. The roots are made absolute too
(default: the current directory). One that exists but is not a directory is refused (exit 2), as
the server itself would refuse it; one that does not exist yet is written with a warning (an
entry may be written before its folder: the host starts the server only later, and the server
refuses to start until the folder is there).

Writing a JSON configuration file (``install`` for Claude Desktop, VS Code, Cursor): the entry is
merged into the file's text by ``jsonedit`` (every byte outside the entry kept; the refusals are
listed there), then:

* Atomic: the new text goes to a temporary file in the same directory, which is flushed,
  ``fsync``-ed, given the old file's permission bits and renamed over the old file (then the
  directory is synced). A reader sees the old file or the new one, never half of one, and an
  error leaves no temporary file behind. A configuration path that is a symbolic link (dotfile
  managers) is followed: the link's target is rewritten and the link stays.
* Backup: before an existing file is replaced, its bytes are copied to
  ``NAME.YYYYMMDD-HHMMSS.bak`` beside it (``-2``, ``-3``... when that name is taken). A backup is
  never overwritten; a new file has none.

Claude Code keeps its servers in its own files (``~/.claude.json``, a project's ``.mcp.json``)
and has a command for them, so ``install --client claude-code`` runs ``claude mcp get NAME``
(refusing, without ``--force``, a name that exists; with it, ``claude mcp remove`` comes first)
and ``claude mcp add --transport stdio NAME -- COMMAND ARGS...``. Without ``claude`` on ``PATH``
it prints that command and exits 1.

Standard library only; imported only for these two subcommands, so serving pays nothing for it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import ntpath
import os
import posixpath
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

# ParseError and parse_config are here for callers and tests too: hostconfig is the subcommands' module.
from .jsonedit import Merge, ParseError, Refused, merge_entry, parse_config  # noqa: F401
from ..options import add_server_options, given_server_options

CLIENTS = ("claude-desktop", "vscode", "cursor", "claude-code")
DEFAULT_NAME = "mcp-ref-fs"
# The top-level key each JSON host keeps its stdio servers under.
SERVERS_KEY = {"claude-desktop": "mcpServers", "vscode": "servers", "cursor": "mcpServers"}
DISPLAY = {"claude-desktop": "Claude Desktop", "vscode": "VS Code", "cursor": "Cursor", "claude-code": "Claude Code"}


class UsageError(Exception):
    """A bad argument that argparse cannot see (a root that is a file). Exit status 2."""


# --- what each host expects, and where ------------------------------------------------------------


@dataclass(frozen=True)
class HostFacts:
    """Where one host keeps its configuration on one platform, its logs, and its restart."""

    user_config: str | None  # the user-level file ``install`` writes; None: none on this platform
    workspace_config: str | None  # the project-level file (relative to the project), if the host has one
    logs: str
    restart: str
    notes: tuple[str, ...] = field(default=())
    # Notes that hold only when the entry goes to the user's own file (not --workspace/--config).
    user_scope_notes: tuple[str, ...] = field(default=())


def host_facts(client: str, platform: str, environ: Mapping[str, str]) -> HostFacts:
    """The documented locations for ``client`` on ``platform`` (``sys.platform`` spelling).

    Sources (checked 2026): the MCP debugging guide (modelcontextprotocol.io/docs/tools/debugging)
    and Claude Desktop's quickstart for the Claude Desktop file and logs; VS Code's MCP
    configuration reference (code.visualstudio.com/docs/copilot/reference/mcp-configuration:
    ``servers``, ``type``, ``.vscode/mcp.json`` or the user profile's ``mcp.json``) and its
    "Manage and troubleshoot MCP servers" page; Cursor's docs (cursor.com/docs/mcp:
    ``~/.cursor/mcp.json`` or ``.cursor/mcp.json``, ``mcpServers``); Claude Code's MCP docs
    (docs.anthropic.com/en/docs/claude-code/mcp: ``claude mcp add --transport stdio NAME --
    CMD``, scopes local, project (``.mcp.json``) and user, ``claude mcp list``, ``/mcp``).
    """
    windows = platform == "win32"
    path = ntpath if windows else posixpath
    home = _home(platform, environ)
    appdata = environ.get("APPDATA") or path.join(home, "AppData", "Roaming")
    if client == "claude-desktop":
        restart = "quit Claude Desktop completely (closing its window is not enough) and open it again"
        if platform == "darwin":
            return HostFacts(path.join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json"),
                             None, path.join(home, "Library", "Logs", "Claude", "mcp*.log"), restart)
        if windows:
            return HostFacts(path.join(appdata, "Claude", "claude_desktop_config.json"), None,
                             path.join(appdata, "Claude", "logs", "mcp*.log"), restart,
                             ("mcp-ref-fs itself does not run on Windows (see the README's Platforms section)",))
        return HostFacts(None, None, "(none: there is no official Linux release)", restart, ((
            "Claude Desktop has no official Linux release. Unofficial builds usually read "
            "~/.config/Claude/claude_desktop_config.json: pass that to install with --config PATH"),))
    if client == "vscode":
        if platform == "darwin":
            user_dir = path.join(home, "Library", "Application Support", "Code", "User")
        elif windows:
            user_dir = path.join(appdata, "Code", "User")
        else:  # Electron's appData on Linux: $XDG_CONFIG_HOME, else ~/.config
            user_dir = path.join(environ.get("XDG_CONFIG_HOME") or path.join(home, ".config"), "Code", "User")
        return HostFacts(
            path.join(user_dir, "mcp.json"), path.join(".vscode", "mcp.json"),
            "Command Palette > 'MCP: List Servers' > the server > 'Show Output' (an Output panel channel)",
            "VS Code reloads mcp.json when it changes: start or restart the server from 'MCP: List Servers' "
            "(or the code lens above its entry in mcp.json) and confirm that you trust it",
            user_scope_notes=("that is the default profile's user file; 'MCP: Open User Configuration' opens the "
                              "current one",))
    if client == "cursor":
        return HostFacts(path.join(home, ".cursor", "mcp.json"), path.join(".cursor", "mcp.json"),
                         "View > Output, then 'MCP Logs' in the channel list",
                         "check that the server is enabled in Cursor Settings > MCP (Tools & MCP); "
                         "restart Cursor if it does not appear")
    if client == "claude-code":
        return HostFacts(path.join(home, ".claude.json"), ".mcp.json",
                         "run 'claude --debug' to see MCP start-up errors; '/mcp' in a session shows each server's state",
                         "start a new claude session; 'claude mcp list' checks that the server starts",
                         user_scope_notes=((
                             "claude mcp add keeps the server in ~/.claude.json for this project (scope local, the "
                             "default); --scope project writes .mcp.json in the project, --scope user makes it "
                             "available in every project"),))
    raise ValueError(f"unknown client {client!r}")


def _home(platform: str, environ: Mapping[str, str]) -> str:
    if platform == "win32":
        return environ.get("USERPROFILE") or os.path.expanduser("~")
    return environ.get("HOME") or os.path.expanduser("~")


# --- the entry ------------------------------------------------------------------------------------


def server_command(argv0: str | None = None, executable: str | None = None) -> list[str]:
    """The absolute command line that starts this mcp-ref-fs (without roots).

    The console script when the program runs as one (``argv0``, made absolute, links kept);
    otherwise (``python -m mcp_ref_fs``, whose ``argv[0]`` is the package's ``__main__.py``) the
    interpreter with ``-m mcp_ref_fs``. The venv's python is a link to the base interpreter, so it
    is not resolved either: resolving it would leave the venv and its packages behind.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    name = os.path.basename(argv0)
    if name.startswith("mcp-ref-fs"):  # mcp-ref-fs, mcp-ref-fs.exe, mcp-ref-fs-script.py
        found = argv0 if os.sep in argv0 or (os.altsep and os.altsep in argv0) else shutil.which(argv0)
        if found and os.path.isfile(found):
            return [os.path.abspath(found)]
    if not executable:
        raise Refused("cannot tell which program is running (sys.executable is empty): run the mcp-ref-fs script")
    return [os.path.abspath(executable), "-m", "mcp_ref_fs"]


def absolute_roots(roots: Sequence[str], cwd: str, missing: list[str] | None = None) -> list[str]:
    """``roots`` (default: ``cwd``) as absolute paths. One that exists but is not a directory is
    refused (UsageError); one that does not exist (yet) is kept, and named in ``missing``."""
    result = []
    for root in roots or [cwd]:
        absolute = os.path.normpath(os.path.join(cwd, os.path.expanduser(root)))
        if not os.path.isabs(absolute):  # Windows' C:foo with a cwd on another drive: that drive's cwd
            absolute = os.path.abspath(absolute)
        if not os.path.isdir(absolute):
            if os.path.exists(absolute):
                raise UsageError(f"ROOT {_shown(root, absolute)} exists but is not a directory")
            if missing is not None:
                missing.append(_shown(root, absolute))
        result.append(absolute)
    return result


def _shown(root: str, absolute: str) -> str:
    """A root as the user gave it, with its absolute path when that differs (each said once)."""
    return absolute if root == absolute else f"{root} ({absolute})"


def server_entry(client: str, command: Sequence[str]) -> dict[str, Any]:
    """The value a JSON host keeps under its servers key for this server."""
    entry: dict[str, Any] = {"command": command[0], "args": list(command[1:])}
    if client == "vscode":  # VS Code requires the type (stdio, http or sse)
        return {"type": "stdio", **entry}
    return entry


def claude_add_command(name: str, command: Sequence[str], *, project: bool = False) -> list[str]:
    """``claude mcp add`` for this server: everything after ``--`` is the server's command line."""
    scope = ["--scope", "project"] if project else []
    return ["claude", "mcp", "add", "--transport", "stdio", *scope, name, "--", *command]


# The buckets of uv's cache that hold the environments uvx runs from (``archive-v0/HASH/bin`` now,
# ``environments-vN/...`` in some uv versions) or its builds.
_UV_BUCKETS = ("archive-v", "builds-v", "environments-v")


def temporary_environment_warning(command: Sequence[str], environ: Mapping[str, str] | None = None) -> str | None:
    """A warning when the program runs from a throw-away environment (``uvx``'s cache): one
    beneath ``$UV_CACHE_DIR`` when that is set, or in a bucket of a directory named ``uv`` (the
    default caches: ``~/.cache/uv``, ``%LOCALAPPDATA%\\uv\\cache``). A cache moved by uv's own
    configuration file (``cache-dir``) is not recognised."""
    environ = os.environ if environ is None else environ
    program = command[0]
    cache = environ.get("UV_CACHE_DIR")
    parts = program.replace("\\", "/").split("/")
    in_default = "uv" in parts and any(part.startswith(_UV_BUCKETS) for part in parts[parts.index("uv"):])
    if in_default or (cache and _beneath(program, cache)):
        return ("this mcp-ref-fs runs from uv's cache (uvx), which uv may clean at any time; for a lasting "
                "path install it with 'uv tool install .' or 'pipx install .' and run print-config from there")
    return None


def _beneath(path: str, directory: str) -> bool:
    def norm(name: str) -> str:
        return os.path.normcase(os.path.abspath(os.path.expanduser(name)))

    try:
        return os.path.commonpath([norm(path), norm(directory)]) == norm(directory)
    except ValueError:  # different drives (Windows)
        return False


# --- writing files ------------------------------------------------------------------------------


def backup_path(path: str, now: datetime.datetime | None = None) -> str:
    """A free ``PATH.YYYYMMDD-HHMMSS[-N].bak`` name beside ``path``."""
    stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    candidate, number = f"{path}.{stamp}.bak", 1
    while os.path.lexists(candidate):
        number += 1
        candidate = f"{path}.{stamp}-{number}.bak"
    return candidate


def write_backup(path: str, data: bytes, mode: int) -> str:
    """Copy ``data`` (the old file) to a new backup file beside ``path``; return its name."""
    while True:
        target = backup_path(path)
        try:
            descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode & 0o777)
        except FileExistsError:  # taken between the check and the open: pick the next name
            continue
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        return target


def atomic_write(path: str, data: bytes, mode: int) -> None:
    """Replace (or create) ``path`` with ``data``: temporary file, fsync, rename, directory fsync."""
    directory = os.path.dirname(path) or "."
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
        directory_descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory_descriptor)
        finally:
            os.close(directory_descriptor)


@dataclass
class Written:
    path: str
    backup: str | None
    merge: Merge


def install_into_file(path: str, servers_key: str, name: str, entry: dict[str, Any], *, force: bool,
                      jsonc: bool) -> Written:
    """Merge the entry into the JSON file at ``path`` (created with its directories if missing)."""
    path = os.path.realpath(path)  # a link (dotfile managers) keeps pointing at the rewritten file
    if os.path.isdir(path):
        raise Refused(f"{path} is a directory, not a configuration file")
    try:
        with open(path, "rb") as stream:
            old: bytes | None = stream.read()
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        old, mode = None, 0o666 & ~_umask()
    if old is None:
        merge = merge_entry("", servers_key, name, entry, force=force, jsonc=jsonc, label=path)
    else:
        try:
            text = old.decode("utf-8")
        except UnicodeDecodeError as error:
            raise Refused(f"{path} is not UTF-8 text (byte {error.start}); it was left as it is") from None
        merge = merge_entry(text, servers_key, name, entry, force=force, jsonc=jsonc, label=path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    backup = write_backup(path, old, mode) if old is not None else None
    atomic_write(path, merge.text.encode("utf-8"), mode)
    return Written(path, backup, merge)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# --- the two subcommands ------------------------------------------------------------------------


@dataclass
class Environment:
    """What the subcommands read from the world; tests pass their own."""

    platform: str = sys.platform
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    cwd: str = field(default_factory=os.getcwd)
    argv0: str | None = None
    executable: str | None = None
    out: Callable[[str], Any] = field(default_factory=lambda: (lambda text: sys.stdout.write(text + "\n")))
    err: Callable[[str], Any] = field(default_factory=lambda: (lambda text: sys.stderr.write(text + "\n")))


PRINT_DESCRIPTION = """\
Print a ready configuration entry for mcp-ref-fs in the format of one MCP host: JSON for Claude
Desktop, VS Code and Cursor, a 'claude mcp add' command for Claude Code. It names this
mcp-ref-fs by its absolute path and the ROOTs as absolute paths, so the host needs no PATH or
activated venv. Only the entry goes to stdout (pipe it, or paste it into the file); where the host
keeps its configuration on this platform, where its logs are and what restart it needs go to
stderr. Nothing is written; 'mcp-ref-fs install' writes it for you."""

INSTALL_DESCRIPTION = """\
Add mcp-ref-fs to an MCP host's own configuration: the file at that host's documented location on
this platform (Claude Desktop, VS Code, Cursor; --workspace: the project's file in the current
directory; --config PATH: any file), or, for Claude Code, by running 'claude mcp add' (printed
instead, exit status 1, when claude is not on PATH).

The entry is merged: other servers and keys are kept byte for byte, the file is replaced
atomically, and the previous file is kept beside it as NAME.YYYYMMDD-HHMMSS.bak. An entry of the
same name is replaced only with --force. A file that does not parse is refused (exit status 1) and
left as it is; comments and trailing commas are accepted in VS Code's mcp.json only (JSONC)."""

COMMON_EPILOG = """\
exit status: 0 done; 1 refused (the message says why; nothing was changed); 2 bad arguments.
A directory named print-config or install is served with 'mcp-ref-fs -- print-config' or
'mcp-ref-fs ./print-config'."""


def _parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"mcp-ref-fs {command}",
        description=PRINT_DESCRIPTION if command == "print-config" else INSTALL_DESCRIPTION,
        epilog=COMMON_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--client", required=True, choices=CLIENTS, metavar="HOST",
                        help="the host to configure: " + ", ".join(CLIENTS))
    parser.add_argument("--name", default=DEFAULT_NAME, help=f"the server's name in the host (default {DEFAULT_NAME})")
    if command == "install":
        parser.add_argument("--workspace", action="store_true",
                            help="the project's file in the current directory: .vscode/mcp.json (VS Code), "
                                 ".cursor/mcp.json (Cursor); Claude Code: --scope project (.mcp.json)")
        parser.add_argument("--force", action="store_true", help="replace an entry of the same name")
        parser.add_argument("--config", metavar="PATH", help="write this file instead of the host's own (JSON hosts)")
    add_server_options(parser, for_host=True)
    parser.add_argument("roots", nargs="*", metavar="ROOT", help="an allowed directory (default: the current directory)")
    return parser


def main(command: str, argv: Sequence[str], environment: Environment | None = None) -> int:
    """Run ``mcp-ref-fs COMMAND ARGV...`` (``command`` is ``print-config`` or ``install``)."""
    env = environment or Environment()
    options = _parser(command).parse_args(list(argv))
    try:
        if not options.name or any(ord(char) < 32 for char in options.name):
            raise UsageError("--name must be a non-empty name without control characters")
        # The server's own options (--read-only, limits) go before the roots, so a root named like
        # an option is never taken for one: absolute_roots makes every root an absolute path.
        missing: list[str] = []
        command_line = (server_command(env.argv0, env.executable) + given_server_options(options)
                        + absolute_roots(options.roots, env.cwd, missing))
        for root in missing:
            env.err(f"mcp-ref-fs {command}: warning: ROOT {root} does not exist yet; the server will not start "
                    "until it does (create it before the host starts the server)")
        warning = temporary_environment_warning(command_line, env.environ)
        if warning:
            env.err(f"mcp-ref-fs {command}: warning: {warning}")
        if command == "print-config":
            return _print_config(options, command_line, env)
        return _install(options, command_line, env)
    except UsageError as error:
        env.err(f"mcp-ref-fs {command}: {error}")
        return 2
    except Refused as error:
        env.err(f"mcp-ref-fs {command}: {error}")
        return 1
    except OSError as error:  # the configuration file or its directory cannot be read or written
        where = f" {error.filename}" if error.filename else ""
        env.err(f"mcp-ref-fs {command}: cannot update{where}: {error.strerror or error}; the configuration was not changed")
        return 1


WORKSPACE_NOTE = ("the project's file now holds absolute paths of this machine (the command and the roots): "
                  "before committing it, check that they suit everyone who opens the project")


def _notes(client: str, facts: HostFacts, *, wrote: str | None = None, scope: str = "user") -> list[str]:
    """What to tell the user after printing or writing an entry; ``scope`` is where it went:
    ``user`` (the host's own file), ``workspace`` (the project's file) or ``config`` (a given file)."""
    lines = []
    if wrote is None and client != "claude-code" and facts.user_config is not None:
        lines.append(f"{DISPLAY[client]} reads its servers from {facts.user_config}"
                     + (f", or {facts.workspace_config} in a project" if facts.workspace_config else ""))
        lines.append(f"merge the entry into it, or run: mcp-ref-fs install --client {client}")
    lines.append(f"logs: {facts.logs}")
    lines.append(f"after a change: {facts.restart}")
    lines.extend(facts.notes)
    if scope == "user":
        lines.extend(facts.user_scope_notes)
    elif scope == "workspace":
        lines.append(WORKSPACE_NOTE)
    return lines


def _print_config(options: argparse.Namespace, command_line: list[str], env: Environment) -> int:
    client = options.client
    facts = host_facts(client, env.platform, env.environ)
    if client == "claude-code":
        env.out(shlex.join(claude_add_command(options.name, command_line)))
    else:
        env.out(json.dumps({SERVERS_KEY[client]: {options.name: server_entry(client, command_line)}}, indent=2,
                           ensure_ascii=False))
    for line in _notes(client, facts):
        env.err(f"# {line}")
    return 0


def _install(options: argparse.Namespace, command_line: list[str], env: Environment) -> int:
    client = options.client
    facts = host_facts(client, env.platform, env.environ)
    if client == "claude-code":
        if options.config:
            raise UsageError("--config does not apply to claude-code: its servers are added with 'claude mcp add'")
        return _install_claude_code(options, command_line, env, facts)
    if options.config and options.workspace:
        raise UsageError("give either --config PATH or --workspace, not both")
    if options.config:
        path = os.path.join(env.cwd, os.path.expanduser(options.config))
    elif options.workspace:
        if facts.workspace_config is None:
            raise UsageError(f"{DISPLAY[client]} has no project configuration file; leave out --workspace")
        path = os.path.join(env.cwd, facts.workspace_config)
    elif facts.user_config is None:
        raise Refused(" ".join(facts.notes) or f"{DISPLAY[client]} has no configuration file on this platform")
    else:
        path = facts.user_config
    written = install_into_file(path, SERVERS_KEY[client], options.name, server_entry(client, command_line),
                                force=options.force, jsonc=client == "vscode")
    verb = "replaced" if written.merge.replaced else "added"
    env.out(f"{verb} the server {options.name!r} in {written.path}"
            + (" (a new file)" if written.backup is None else f"; the previous file is {written.backup}"))
    if written.merge.method == "re-serialised":
        env.out("note: the file was written anew with its indent (the entry could not be inserted in place)")
    env.out(f"command: {shlex.join(command_line)}")
    scope = "config" if options.config else "workspace" if options.workspace else "user"
    for line in _notes(client, facts, wrote=written.path, scope=scope):
        env.out(line)
    return 0


def _install_claude_code(options: argparse.Namespace, command_line: list[str], env: Environment,
                         facts: HostFacts) -> int:
    add = claude_add_command(options.name, command_line, project=options.workspace)
    claude = shutil.which("claude", path=env.environ.get("PATH"))
    if claude is None:
        env.err("mcp-ref-fs install: 'claude' is not on PATH, so nothing was installed. Run this where Claude Code is:")
        env.out(shlex.join(add))
        return 1

    def run(arguments: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([claude, *arguments], cwd=env.cwd, env=dict(env.environ), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True)

    replaced = run(["mcp", "get", options.name]).returncode == 0
    if replaced:
        if not options.force:
            raise Refused(f"Claude Code already has a server named {options.name!r} ('claude mcp get {options.name}' "
                          "shows it); give --force to replace it, or --name to add another")
        run(["mcp", "remove", "--scope", "project" if options.workspace else "local", options.name])
    done = run(add[1:])
    if done.returncode != 0:
        for line in (done.stdout + done.stderr).splitlines():
            env.err(f"claude: {line}")
        raise Refused(f"'claude mcp add' failed with exit status {done.returncode}")
    # claude's own "Added stdio MCP server ..." is not passed on: this line says it, as for the other hosts.
    env.out(f"{'replaced' if replaced else 'added'} the server {options.name!r} in Claude Code: {shlex.join(add)}")
    for line in _notes("claude-code", facts, wrote="claude", scope="workspace" if options.workspace else "user"):
        env.out(line)
    return 0
