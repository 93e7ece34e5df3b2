"""Build the MCP Bundle of mcp-ref-fs: ``make bundle`` -> ``dist/mcp-ref-fs-VERSION.mcpb``.

An MCP Bundle (``.mcpb``, the format of github.com/modelcontextprotocol/mcpb) is a zip archive
with ``manifest.json`` at its top and the server's files beside it. Ours has the ``uv`` server
type: the host (Claude Desktop) unpacks it, and ``uv run`` installs the dependencies named in the
bundled ``pyproject.toml`` and starts ``servers/mcp_ref_fs_bundle.py`` with the directories the
user picked (the ``allowed_directories`` setting, expanded into one argument each).

The archive holds only what that needs: the manifest, pyproject.toml and README.md (its
``readme``), the ``mcp_ref`` library, the ``mcp_ref_fs`` package (with its demo files) and the
entry point; no tests, caches or compiled files. Entries are sorted and dated 1980-01-01 (or
``$SOURCE_DATE_EPOCH``), so the same sources always give the same bytes.

Before writing, it checks what a host would trip over: the manifest parses, has the required
fields, names an entry point that is in the archive, and its version is the project's.

Usage: python tools/build_bundle.py [--output PATH]   (standard library only)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOP_FILES = ("manifest.json", "pyproject.toml", "README.md", "servers/mcp_ref_fs_bundle.py")
PACKAGES = ("mcp_ref", "servers/mcp_ref_fs")
REQUIRED = ("manifest_version", "name", "version", "description", "author", "server")


def bundle_files(repo: Path = REPO) -> list[str]:
    """The archive's entries (paths relative to ``repo``, ``/``-separated, sorted)."""
    files = [name for name in TOP_FILES if (repo / name).is_file()]
    for package in PACKAGES:
        for path in (repo / package).rglob("*"):
            relative = path.relative_to(repo).as_posix()
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
                files.append(relative)
    return sorted(set(files))


def check_manifest(repo: Path, files: list[str]) -> dict:
    """The parsed manifest; SystemExit with a message when a host would refuse it."""
    manifest = json.loads((repo / "manifest.json").read_text(encoding="utf-8"))
    missing = [key for key in REQUIRED if key not in manifest]
    if missing:
        raise SystemExit(f"manifest.json lacks {', '.join(missing)}")
    entry_point = manifest["server"].get("entry_point")
    if entry_point not in files:
        raise SystemExit(f"manifest.json names the entry point {entry_point!r}, which is not in the bundle")
    project = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    if manifest["version"] != project["version"]:
        raise SystemExit(f"manifest.json has version {manifest['version']}, pyproject.toml {project['version']}")
    return manifest


def build(output: Path | None = None, repo: Path = REPO) -> Path:
    """Write the bundle; return its path."""
    files = bundle_files(repo)
    manifest = check_manifest(repo, files)
    output = output or repo / "dist" / f"{manifest['name']}-{manifest['version']}.mcpb"
    output.parent.mkdir(parents=True, exist_ok=True)
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01, zip's earliest date
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    temporary = output.with_name(output.name + ".tmp")
    with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in files:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            executable = os.access(repo / name, os.X_OK) or name == manifest["server"]["entry_point"]
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            archive.writestr(info, (repo / name).read_bytes())
    os.replace(temporary, output)
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build dist/mcp-ref-fs-VERSION.mcpb (an MCP Bundle).")
    parser.add_argument("--output", type=Path, help="where to write the bundle")
    options = parser.parse_args(argv)
    path = build(options.output)
    with zipfile.ZipFile(path) as archive:
        count, size = len(archive.namelist()), path.stat().st_size
    shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
    print(f"wrote {shown}: {count} files, {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
