"""Validate what the server writes against the official MCP JSON schemas.

The schemas are not copied into this repository. ``schema_dir()`` finds them, first hit wins:

1. ``$MCP_REF_SCHEMA_DIR``: a folder holding ``mcp-schema-2026-07-28.json`` and
   ``mcp-schema-2025-11-25.json``;
2. ``shared/reference`` beside the checkout (``../shared/reference`` from the repo root), where
   the project keeps them;
3. a cache (``$XDG_CACHE_HOME/mcp-ref/schemas``, else ``~/.cache/mcp-ref/schemas``) filled by
   downloading the official files from one pinned commit of the specification repository, each
   checked against its sha256 before it is used. ``MCP_REF_SCHEMA_DOWNLOAD=0`` turns this off.

The tasks extension (``io.modelcontextprotocol/tasks``) has its own official schema, in its own
repository (modelcontextprotocol/ext-tasks); it is found the same way as
``mcp-tasks-extension-schema.json`` (``tasks_schema_path()``), pinned to its own commit and sha256.
Without it, the extension's results and notifications are checked only as JSON-RPC messages.

With none of them available, schema checks are skipped (``available()`` is False) and the pytest
summary says so in one line; every other assertion of the suite still runs.

``check_modern(message, method)`` validates a server message of the 2026-07-28 era,
``check_legacy(message, method)`` one of the 2025-11-25 era. ``method`` is the method of the
request a response answers (a response does not name it); notifications name their own. The
checks themselves are ``mcp_ref.kit.testing.Schemas`` (the test client's), in its strict mode, plus
one rule of this suite's harnesses: a server sends no request on stdio. ``schemas()`` gives a
test client the same schemas: ``Client(server, schemas=schemas())``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from mcp_ref.kit.testing import Schemas, SchemaViolation

REPO_ROOT = Path(__file__).resolve().parents[1]
REFERENCE_DIR = REPO_ROOT.parent / "shared" / "reference"
# The official schemas, pinned: the commit of modelcontextprotocol/modelcontextprotocol that last
# changed either file, and the sha256 of each file at that commit.
PINNED_COMMIT = "271ecc9accafdd9b83a3c869fa67c22953b2af80"
ERAS = {"modern": "2026-07-28", "legacy": "2025-11-25"}
PINNED_SHA256 = {
    "2026-07-28": "ef70b61f99b6d2e5e3b46863822eab08dff6a45bedc7a08914e0e5b133f40203",
    "2025-11-25": "268a5f82ba70fd7e4b6dc4aa1e64f116f74b4d0edcb69dc046829c79dd4e97e7",
}
PINNED_URL = "https://raw.githubusercontent.com/modelcontextprotocol/modelcontextprotocol/{commit}/schema/{version}/schema.json"
DOWNLOAD_TIMEOUT_SECONDS = 10
# The tasks extension's schema (modelcontextprotocol/ext-tasks, schema/draft/schema.json), pinned.
TASKS_SCHEMA_FILE = "mcp-tasks-extension-schema.json"
TASKS_PINNED_COMMIT = "e4345978be1f602f1fc48d89051e8559dd5302a6"
TASKS_PINNED_SHA256 = "10933a5003097bbccb03d964e6a5f7a2819cc4d7a1d07e27c6765cbf5da35c5c"
TASKS_PINNED_URL = "https://raw.githubusercontent.com/modelcontextprotocol/ext-tasks/{commit}/schema/draft/schema.json"


def _file_name(version: str) -> str:
    return f"mcp-schema-{version}.json"


def _complete(folder: Path) -> bool:
    return all((folder / _file_name(v)).is_file() for v in PINNED_SHA256)


def cache_dir() -> Path:
    """Where downloaded schemas are kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcp-ref" / "schemas"


def _fetch(url: str, digest: str, target: Path) -> str | None:
    """Download ``url`` into ``target`` if it has the pinned sha256; returns why not, or None."""
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == digest:
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:  # noqa: S310 (fixed https URL)
            body = response.read()
        if hashlib.sha256(body).hexdigest() != digest:
            return f"{url} does not have the pinned sha256"
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".download-")
        with os.fdopen(fd, "wb") as out:
            out.write(body)
        os.replace(temporary, target)
    except OSError as error:  # URLError, timeouts and file errors are all OSErrors
        return f"download failed ({error})"
    return None


def _download(folder: Path) -> str | None:
    """Fill ``folder`` with the pinned schemas; returns why not, or None on success."""
    for version, digest in PINNED_SHA256.items():
        problem = _fetch(PINNED_URL.format(commit=PINNED_COMMIT, version=version), digest, folder / _file_name(version))
        if problem is not None:
            return problem
    return None


@functools.lru_cache(maxsize=None)
def tasks_schema_path() -> Path | None:
    """The tasks extension's official schema: ``$MCP_REF_SCHEMA_DIR``, ``../shared/reference``,
    then the cache (downloaded there, sha256-checked, unless ``MCP_REF_SCHEMA_DOWNLOAD=0``)."""
    override = os.environ.get("MCP_REF_SCHEMA_DIR")
    for folder in ([Path(override)] if override else []) + [REFERENCE_DIR]:
        if (folder / TASKS_SCHEMA_FILE).is_file():
            return folder / TASKS_SCHEMA_FILE
    cached = cache_dir() / TASKS_SCHEMA_FILE
    if os.environ.get("MCP_REF_SCHEMA_DOWNLOAD", "1") == "0":
        ok = cached.is_file() and hashlib.sha256(cached.read_bytes()).hexdigest() == TASKS_PINNED_SHA256
        return cached if ok else None
    return cached if _fetch(TASKS_PINNED_URL.format(commit=TASKS_PINNED_COMMIT), TASKS_PINNED_SHA256, cached) is None else None


@functools.lru_cache(maxsize=None)
def schema_dir() -> tuple[Path | None, str]:
    """The folder holding both official schemas (or None), and a one-line account of the choice."""
    override = os.environ.get("MCP_REF_SCHEMA_DIR")
    if override:
        folder = Path(override)
        if _complete(folder):
            return folder, f"official schemas from $MCP_REF_SCHEMA_DIR ({folder})"
        return None, f"$MCP_REF_SCHEMA_DIR={override} lacks {' or '.join(map(_file_name, PINNED_SHA256))}"
    if _complete(REFERENCE_DIR):
        return REFERENCE_DIR, f"official schemas from {REFERENCE_DIR}"
    cached = cache_dir()
    if all(
        (cached / _file_name(v)).is_file() and hashlib.sha256((cached / _file_name(v)).read_bytes()).hexdigest() == d
        for v, d in PINNED_SHA256.items()
    ):
        return cached, f"official schemas from the cache {cached}"
    if os.environ.get("MCP_REF_SCHEMA_DOWNLOAD", "1") == "0":
        return None, "no official schemas: not in $MCP_REF_SCHEMA_DIR, ../shared/reference or the cache, and MCP_REF_SCHEMA_DOWNLOAD=0"
    problem = _download(cached)
    if problem is None:
        return cached, f"official schemas downloaded (commit {PINNED_COMMIT[:12]}, sha256 checked) into {cached}"
    return None, f"no official schemas: not in $MCP_REF_SCHEMA_DIR, ../shared/reference or the cache; {problem}"


def available() -> bool:
    """Are the official schemas at hand? When not, every check below passes without checking."""
    return schema_dir()[0] is not None


@functools.lru_cache(maxsize=None)
def _schemas_in(folder: Path | None, tasks: Path | None) -> Schemas:
    paths = {era: folder / _file_name(version) if folder is not None else None for era, version in ERAS.items()}
    return Schemas(paths["modern"], paths["legacy"], tasks, strict=True)


def schemas() -> Schemas:
    """The schemas found above, as ``mcp_ref.kit.testing`` checks them, strictly: a notification or
    an answered method the schemas do not define is a violation too. Give it to a test client:
    ``Client(server, schemas=schemas())``."""
    return _schemas_in(schema_dir()[0], tasks_schema_path())


def validate(version: str, definition: str, instance: Any) -> None:
    """Raise ``SchemaViolation`` listing every error of ``instance`` against ``#/$defs/<definition>``
    of the ``version`` schema. Does nothing when the official schemas are not available (see ``schema_dir``)."""
    if not available():
        return
    problems = schemas().validate(_era(version), definition, instance)
    if problems:
        raise SchemaViolation("\n".join(problems))


def _era(version: str) -> str:
    return next(era for era, known in ERAS.items() if known == version)


def _check(era: str, message: dict[str, Any], method: str | None) -> None:
    if "method" in message and "id" in message:
        raise SchemaViolation(f"the server sent a request: {message}")  # servers send none on stdio
    schemas().check(era, message, method)


def check_modern(message: dict[str, Any], method: str | None = None) -> None:
    """Validate one server message of the 2026-07-28 era."""
    _check("modern", message, method)


def check_legacy(message: dict[str, Any], method: str | None = None) -> None:
    """Validate one server message of the 2025-11-25 era."""
    _check("legacy", message, method)
