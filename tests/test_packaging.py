"""Packaging for hosts: the wheel installs and runs in a fresh venv; the MCP Bundle is well formed.

The wheel test is the slowest in the suite (about 20 to 40 s): in a venv made with ``python -m
venv`` it builds the sdist from a copy of the sources (the build backend's PEP 517 hook, so the
repository gets no build/ or egg-info), the wheel from that sdist (``pip wheel --no-deps``),
installs the wheel there (its dependencies come from the package index)
and runs the installed ``mcp-ref-fs``: ``--version``, a printf session, ``print-config`` and the
demo (package data). Without the package index it is skipped, saying so.

The bundle tests check ``manifest.json`` against the MCPB manifest format (v0.4,
github.com/modelcontextprotocol/mcpb: MANIFEST.md and schemas/mcpb-manifest-v0.4.schema.json),
build the ``.mcpb`` with ``tools/build_bundle.py`` and run the entry point it names, from the
unpacked archive, the way a host would after expanding the user's directories. When node and npm
are present, the official ``mcpb`` CLI (pinned) validates the manifest and unpacks the built bundle.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.wire import request_line

REPO = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((REPO / "manifest.json").read_text(encoding="utf-8"))
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
OFFLINE_SIGNS = ("Could not find a version", "No matching distribution", "NewConnectionError", "Failed to establish",
                 "Temporary failure in name resolution", "Network is unreachable", "ConnectTimeout", "ReadTimeout",
                 "Name or service not known", "Max retries exceeded")


def answers(stdout: str) -> dict[Any, dict[str, Any]]:
    return {message["id"]: message for message in map(json.loads, stdout.splitlines()) if "id" in message}


def clean_environment() -> dict[str, str]:
    """This environment without what would make a child Python use the suite's packages."""
    return {key: value for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not key.startswith("COVERAGE")}


def pip(*arguments: str, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run([python, "-m", "pip", *arguments, "--disable-pip-version-check"], capture_output=True,
                              text=True, timeout=150, env=clean_environment())
    except subprocess.TimeoutExpired:  # pragma: no cover - a package index that does not answer
        pytest.skip(f"pip {arguments[0]} took over 150 s: the package index is not reachable in time")
    if done.returncode != 0 and any(sign in done.stdout + done.stderr for sign in OFFLINE_SIGNS):
        pytest.skip(f"the package index is not reachable (pip {arguments[0]}): {done.stderr.strip().splitlines()[-1:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    return done


# --- the wheel ------------------------------------------------------------------------------------


def test_the_sdist_and_its_wheel_build_and_install_in_a_fresh_venv_and_mcp_ref_fs_runs(tmp_path: Path) -> None:
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for directory in ("mcp_ref", "servers"):
        shutil.copytree(REPO / directory, source / directory, ignore=ignore)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120, env=clean_environment())
    python = str(venv / "bin" / "python")
    # The sdist, made by the build backend pyproject.toml names (its PEP 517 hook, as `python -m build`
    # would call it), then the wheel built from that sdist alone: so the sdist holds everything needed.
    requirement = next(item for item in tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"])
    pip("install", "--quiet", requirement, python=python)
    hook = "import sys, setuptools.build_meta as backend; print(backend.build_sdist(sys.argv[1]))"
    built = subprocess.run([python, "-c", hook, str(tmp_path / "sdist")], cwd=source, capture_output=True, text=True,
                           timeout=120, env=clean_environment())
    assert built.returncode == 0, built.stderr
    sdist = tmp_path / "sdist" / built.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "mcp_ref/__init__.py", "servers/mcp_ref_fs/__main__.py",
            "servers/mcp_ref_fs/demo/demo_files/notes.txt", "servers/mcp_ref_everything/__main__.py"} <= members
    pip("wheel", "--no-deps", "--quiet", "-w", str(tmp_path / "wheels"), str(sdist))
    [wheel] = (tmp_path / "wheels").glob("mcp_ref-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(name).decode() for name in names if name.endswith("entry_points.txt"))
    assert {"mcp_ref/__init__.py", "mcp_ref_fs/__main__.py", "mcp_ref_fs/hosts/hostconfig.py", "mcp_ref_fs/demo/__init__.py",
            "mcp_ref_fs/demo/demo_files/checkers.png", "mcp_ref_fs/demo/demo_files/notes.txt"} <= names
    assert "mcp-ref-fs = mcp_ref_fs.__main__:main" in entry_points

    pip("install", "--quiet", str(wheel), python=python)
    script = venv / "bin" / "mcp-ref-fs"

    def run(*arguments: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(arguments, input=stdin, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              env=clean_environment())

    version = run(str(script), "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"mcp-ref-fs {PROJECT['version']}"

    (tmp_path / "served").mkdir()
    (tmp_path / "served" / "hello.txt").write_text("hello from the wheel\n")
    session = request_line(1, "server/discover") + request_line(2, "tools/call", name="read_text_file",
                                                      arguments={"path": "hello.txt"})
    done = run(str(script), str(tmp_path / "served"), stdin=session)
    assert done.returncode == 0, done.stderr
    replies = answers(done.stdout)
    assert replies[1]["result"]["supportedVersions"] == ["2026-07-28"]
    assert replies[2]["result"]["content"][0]["text"] == "hello from the wheel\n"  # dependencies import

    config = run(str(script), "print-config", "--client", "vscode", str(tmp_path / "served"))
    assert json.loads(config.stdout)["servers"]["mcp-ref-fs"]["command"] == str(script)

    demo = run(python, "-m", "mcp_ref_fs.demo")
    assert demo.returncode == 0 and "8. initialize" in demo.stdout, demo.stdout + demo.stderr


# --- the MCP Bundle -------------------------------------------------------------------------------

# The top-level keys manifest v0.4 allows (its schema has additionalProperties: false).
MANIFEST_KEYS = {"$schema", "dxt_version", "manifest_version", "name", "display_name", "version", "description",
                 "long_description", "author", "repository", "homepage", "documentation", "support", "icon", "icons",
                 "screenshots", "localization", "server", "tools", "tools_generated", "prompts", "prompts_generated",
                 "keywords", "license", "privacy_policies", "compatibility", "user_config", "_meta"}
USER_CONFIG_TYPES = {"string", "number", "boolean", "directory", "file"}


def test_no_dependency_marker_compares_a_free_form_platform_string() -> None:
    """``platform_release`` and ``platform_version`` are whatever the system says (a Linux kernel:
    ``6.8.0-45-generic``). pip 24.2, as Python 3.13.0 ships it (its packaging is 24.1), evaluates
    such a comparison (``>=``, ``==``, ...) as one of versions, on every platform (it evaluates the
    whole marker), and raised InvalidVersion: it could not install the project at all (``make test
    PYTHON=python3.13``: ``Invalid version: '6.18.44-fc-v657'``). ``in`` compares strings."""
    from packaging.requirements import Requirement

    compared = re.compile(r"\b(platform_release|platform_version)\s*[<>=!~]|[<>=!~]=?\s*(platform_release|platform_version)\b")
    dependencies = [*PROJECT["dependencies"], *(d for group in PROJECT["optional-dependencies"].values() for d in group)]
    for dependency in dependencies:
        marker = Requirement(dependency).marker  # its str() writes each comparison as variable op "value"
        assert marker is None or not compared.search(str(marker)), dependency


def test_the_manifest_has_the_required_fields_of_mcpb_v0_4() -> None:
    assert set(MANIFEST) <= MANIFEST_KEYS
    assert MANIFEST["manifest_version"] == "0.4"
    for key in ("name", "version", "description"):
        assert isinstance(MANIFEST[key], str) and MANIFEST[key]
    assert isinstance(MANIFEST["author"]["name"], str) and set(MANIFEST["author"]) <= {"name", "email", "url"}
    assert MANIFEST["version"] == PROJECT["version"]
    from mcp_ref_fs.__main__ import VERSION

    assert MANIFEST["version"] == VERSION
    assert set(MANIFEST["compatibility"]["platforms"]) <= {"darwin", "win32", "linux"}
    assert MANIFEST["compatibility"]["runtimes"]["python"] == PROJECT["requires-python"]


def test_the_server_is_a_uv_server_whose_entry_point_exists() -> None:
    server = MANIFEST["server"]
    assert set(server) <= {"type", "entry_point", "mcp_config"}
    assert server["type"] == "uv"
    assert (REPO / server["entry_point"]).is_file()
    config = server["mcp_config"]
    assert set(config) <= {"command", "args", "env", "platform_overrides"}
    assert config["command"] == "uv"
    assert all(isinstance(argument, str) for argument in config["args"])
    assert config["args"][:3] == ["run", "--directory", "${__dirname}"]
    assert config["args"][3] == "${__dirname}/" + server["entry_point"]


def test_the_allowed_directories_are_a_directory_setting_expanded_into_arguments() -> None:
    setting = MANIFEST["user_config"]["allowed_directories"]
    assert setting["type"] == "directory" and setting["multiple"] is True and setting["required"] is True
    assert setting["title"] and setting["description"]
    for item in MANIFEST["user_config"].values():
        assert item["type"] in USER_CONFIG_TYPES and {"type", "title", "description"} <= set(item)
    arguments = MANIFEST["server"]["mcp_config"]["args"]
    # A whole argument, so the host expands the list into one argument per directory.
    assert "${user_config.allowed_directories}" in arguments
    referenced = set(re.findall(r"\$\{user_config\.([^}]+)\}", json.dumps(MANIFEST["server"])))
    assert referenced <= set(MANIFEST["user_config"])


def test_the_manifest_lists_exactly_the_servers_tools(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mcp_ref_fs", str(tmp_path)], input=request_line(1, "tools/list"),
                          capture_output=True, text=True, timeout=30)
    served = [tool["name"] for tool in answers(done.stdout)[1]["result"]["tools"]]
    assert [tool["name"] for tool in MANIFEST["tools"]] == served
    assert all(tool["description"] for tool in MANIFEST["tools"])


def test_the_entry_point_the_manifest_names_runs() -> None:
    done = subprocess.run([sys.executable, str(REPO / MANIFEST["server"]["entry_point"]), "--version"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.strip() == f"mcp-ref-fs {MANIFEST['version']}"


def build_bundle(output: Path) -> Path:
    done = subprocess.run([sys.executable, str(REPO / "tools" / "build_bundle.py"), "--output", str(output)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout
    return output


def host_command(root: Path, directories: list[str]) -> list[str]:
    """``mcp_config`` as a host expands it: ``${__dirname}``, and the list setting one argument per item."""
    command = []
    for argument in MANIFEST["server"]["mcp_config"]["args"]:
        if argument == "${user_config.allowed_directories}":
            command.extend(directories)
        else:
            command.append(argument.replace("${__dirname}", str(root)))
    return command


def test_the_bundle_holds_the_manifest_and_the_sources_it_needs(tmp_path: Path) -> None:
    bundle = build_bundle(tmp_path / "mcp-ref-fs.mcpb")
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        assert json.loads(archive.read("manifest.json")) == MANIFEST
    assert names == sorted(names)
    for needed in ("manifest.json", "pyproject.toml", "README.md", MANIFEST["server"]["entry_point"],
                   "mcp_ref/__init__.py", "mcp_ref/core/stdio.py", "servers/mcp_ref_fs/__main__.py",
                   "servers/mcp_ref_fs/root.py", "servers/mcp_ref_fs/demo/demo_files/notes.txt"):
        assert needed in names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc") or name.startswith("tests/")]
    again = build_bundle(tmp_path / "again.mcpb")
    assert again.read_bytes() == bundle.read_bytes()  # reproducible


def test_the_unpacked_bundle_serves_the_chosen_directories(tmp_path: Path) -> None:
    bundle = build_bundle(tmp_path / "mcp-ref-fs.mcpb")
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(unpacked)
    entry = unpacked / MANIFEST["server"]["entry_point"]
    # The entry point needs nothing installed for --version and a discover session (-S: no site-packages).
    version = subprocess.run([sys.executable, "-S", str(entry), "--version"], capture_output=True, text=True, timeout=30,
                             env=clean_environment())
    assert version.stdout.strip() == f"mcp-ref-fs {MANIFEST['version']}"
    first, second = tmp_path / "docs", tmp_path / "photos"
    first.mkdir()
    second.mkdir()
    # The host's command with `uv run` standing for this Python, whose environment has the dependencies.
    command = host_command(unpacked, [str(first), str(second)])
    assert command[:3] == ["run", "--directory", str(unpacked)]
    session = request_line(1, "server/discover") + request_line(2, "tools/call", name="list_allowed_directories", arguments={})
    # (Not measured for coverage: these are copies of the sources, in a directory about to vanish.)
    done = subprocess.run([sys.executable, *command[3:]], input=session, capture_output=True, text=True, timeout=30,
                          cwd=unpacked, env=clean_environment())
    assert done.returncode == 0, done.stderr
    replies = answers(done.stdout)
    assert replies[1]["result"]["supportedVersions"] == ["2026-07-28"]
    assert replies[2]["result"]["structuredContent"]["directories"] == [str(first), str(second)]


def test_the_bundle_builder_refuses_a_manifest_a_host_would_refuse(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import build_bundle
    finally:
        sys.path.remove(str(REPO / "tools"))
    fake = tmp_path / "repo"
    for name in ("pyproject.toml", "README.md"):
        (fake / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, fake / name)
    broken = {key: value for key, value in MANIFEST.items() if key != "author"}
    (fake / "manifest.json").write_text(json.dumps(broken))
    with pytest.raises(SystemExit, match="lacks author"):
        build_bundle.build(tmp_path / "x.mcpb", repo=fake)
    (fake / "manifest.json").write_text(json.dumps(MANIFEST))
    with pytest.raises(SystemExit, match="not in the bundle"):
        build_bundle.build(tmp_path / "x.mcpb", repo=fake)
    (fake / "servers").mkdir()
    shutil.copy2(REPO / MANIFEST["server"]["entry_point"], fake / MANIFEST["server"]["entry_point"])
    (fake / "manifest.json").write_text(json.dumps({**MANIFEST, "version": "9.9.9"}))
    with pytest.raises(SystemExit, match="version 9.9.9"):
        build_bundle.build(tmp_path / "x.mcpb", repo=fake)
    assert not (tmp_path / "x.mcpb").exists()


# --- the official bundle tool -------------------------------------------------------------------------

MCPB_CLI = "@anthropic-ai/mcpb@2.1.2"  # the official MCPB command line (github.com/modelcontextprotocol/mcpb)


@pytest.fixture(scope="session")
def mcpb_cli() -> list[str]:
    """The pinned official ``mcpb`` CLI, installed once into the user's cache (npm needed; else a skip)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"official bundle check: node and npm are needed on PATH to run {MCPB_CLI}")
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcp-ref" / "mcpb" / MCPB_CLI.rsplit("@", 1)[1]
    script = base / "node_modules" / "@anthropic-ai" / "mcpb" / "dist" / "cli" / "cli.js"
    if not script.is_file():
        base.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run([npm, "install", "--prefix", str(base), "--no-audit", "--no-fund", "--ignore-scripts",
                                   "--loglevel=error", "--fetch-retries=1", MCPB_CLI],
                                  capture_output=True, text=True, timeout=180)
        except subprocess.TimeoutExpired:
            pytest.skip(f"official bundle check: `npm install {MCPB_CLI}` took over 180 s")
        if done.returncode != 0 or not script.is_file():
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"no {script.name} after install"]
            pytest.skip(f"official bundle check: could not install {MCPB_CLI}: {last[0][:300]}")
    return [node, str(script)]


def test_the_official_mcpb_tool_accepts_the_manifest_and_the_built_bundle(mcpb_cli: list[str], tmp_path: Path) -> None:
    def mcpb(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*mcpb_cli, *arguments], capture_output=True, text=True, timeout=60)

    checked = mcpb("validate", str(REPO / "manifest.json"))
    assert checked.returncode == 0 and "validation passes" in checked.stdout, checked.stdout + checked.stderr
    # The bundle as a host receives it: unpacked by the official tool, its manifest valid, its entry point there.
    bundle = build_bundle(tmp_path / "mcp-ref-fs.mcpb")
    unpacked = mcpb("unpack", str(bundle), str(tmp_path / "unpacked"))
    assert unpacked.returncode == 0, unpacked.stdout + unpacked.stderr
    assert mcpb("validate", str(tmp_path / "unpacked" / "manifest.json")).returncode == 0
    assert (tmp_path / "unpacked" / MANIFEST["server"]["entry_point"]).is_file()
    # The tool does refuse what a host would refuse, so the passes above mean something.
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({key: value for key, value in MANIFEST.items() if key != "author"}))
    refused = mcpb("validate", str(broken))
    assert refused.returncode != 0 and "author" in refused.stdout + refused.stderr
