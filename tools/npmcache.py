"""Pinned npm packages in a cache folder of the checkout, and a Node new enough to run them.

Used by ``make conformance`` (the official referee) and ``make hosts`` (the MCP hosts). Nothing is
installed globally: each package set goes into its own ``--prefix`` folder, which a stamp file
marks as holding exactly the pinned specs. When the ``node`` on PATH is older than a tool needs,
a Node binary is installed from the npm registry's ``node-<os>-<arch>`` package into the cache.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

NODE_VERSION = "22.23.5"  # when the node on PATH is older than a tool needs


def _node_major(node: str) -> int:
    try:
        out = subprocess.run([node, "-p", "process.versions.node"], capture_output=True, text=True, timeout=30)
        return int(out.stdout.strip().split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        return 0


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def npm() -> str:
    found = shutil.which("npm")
    if not found:
        raise SystemExit("npm is needed (the tools run here are npm packages); install Node.js and npm first")
    return found


def ensure_node(cache: Path, major: int = 22) -> Path:
    """The folder of a ``node`` binary of at least ``major``: the one on PATH, else one installed."""
    on_path = shutil.which("node")
    if on_path and _node_major(on_path) >= major:
        return Path(on_path).parent
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system())
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    if not (system and machine):
        raise SystemExit(f"Node >= {major} is needed on PATH (no npm-packaged Node for {platform.system()} {platform.machine()})")
    package = f"node-{system}-{machine}"
    prefix = cache / "node"
    install(prefix, [f"{package}@{NODE_VERSION}"], node_dir=None,
            why=f"node {'none' if not on_path else 'on PATH is older than ' + str(major)}")
    return prefix / "node_modules" / package / "bin"


def install(prefix: Path, specs: list[str], *, node_dir: Path | None, why: str = "") -> float:
    """``npm install`` the pinned ``specs`` into ``prefix`` unless its stamp says they are there.

    Returns the seconds spent (0 when already installed)."""
    stamp = prefix / ".installed.json"
    if stamp.exists() and json.loads(stamp.read_text()) == sorted(specs):
        return 0.0
    shutil.rmtree(prefix / "node_modules", ignore_errors=True)  # a different pin: start clean
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "package.json").write_text('{"private": true}\n')
    _say(f"installing {' '.join(specs)} into {prefix}" + (f" ({why})" if why else "") + " ...")
    env = dict(os.environ)
    if node_dir is not None:
        env["PATH"] = f"{node_dir}{os.pathsep}{env.get('PATH', '')}"
    start = time.monotonic()
    result = subprocess.run([npm(), "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                             "--loglevel=error", "--no-save", *specs], env=env)
    if result.returncode != 0:
        raise SystemExit(f"npm install {' '.join(specs)} failed (exit {result.returncode})")
    stamp.write_text(json.dumps(sorted(specs)) + "\n")
    spent = time.monotonic() - start
    _say(f"installed in {spent:.0f} s")
    return spent


def path_with(node_dir: Path) -> str:
    """PATH with ``node_dir`` first (so the tools' own ``#!/usr/bin/env node`` finds that Node)."""
    return f"{node_dir}{os.pathsep}{os.environ.get('PATH', '')}"
