"""How the test suite finds the official schemas (tests/schema_check.py), including the download
path, which is exercised here with file:// URLs standing in for the pinned commit's files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests import schema_check


@pytest.fixture
def fresh_lookup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """schema_dir() recomputed with no env override, no shared/ and an empty cache under tmp_path."""
    monkeypatch.delenv("MCP_REF_SCHEMA_DIR", raising=False)
    monkeypatch.delenv("MCP_REF_SCHEMA_DOWNLOAD", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(schema_check, "REFERENCE_DIR", tmp_path / "no-shared")
    schema_check.schema_dir.cache_clear()
    yield tmp_path
    schema_check.schema_dir.cache_clear()


def official_copy(tmp_path: Path) -> Path:
    """A folder of the official schemas, copied from wherever this run found them."""
    folder, account = schema_check.schema_dir()
    if folder is None:
        pytest.skip(f"needs the official schemas: {account}")
    copy = tmp_path / "mirror"
    for version in schema_check.PINNED_SHA256:
        target = copy / version / "schema.json"
        target.parent.mkdir(parents=True)
        shutil.copy(folder / f"mcp-schema-{version}.json", target)
    return copy


def test_the_environment_variable_wins_and_must_name_a_complete_folder(fresh_lookup: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_REF_SCHEMA_DIR", str(fresh_lookup / "empty"))
    folder, account = schema_check.schema_dir()
    assert folder is None and "MCP_REF_SCHEMA_DIR" in account and "lacks" in account


def test_downloaded_schemas_are_used_only_when_their_sha256_matches_the_pin(fresh_lookup: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema_check.schema_dir.cache_clear()
    monkeypatch.undo()  # find the real schemas for the copy, then isolate again
    mirror = official_copy(fresh_lookup)
    monkeypatch.delenv("MCP_REF_SCHEMA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(fresh_lookup / "cache"))
    monkeypatch.setattr(schema_check, "REFERENCE_DIR", fresh_lookup / "no-shared")
    monkeypatch.setattr(schema_check, "PINNED_URL", mirror.as_uri() + "/{version}/schema.json")
    schema_check.schema_dir.cache_clear()
    folder, account = schema_check.schema_dir()
    assert folder == fresh_lookup / "cache" / "mcp-ref" / "schemas" and "sha256 checked" in account
    # Second lookup: the verified cache is used without downloading again.
    schema_check.schema_dir.cache_clear()
    assert "from the cache" in schema_check.schema_dir()[1]

    # A tampered file is refused and the checks are skipped, not run against it.
    shutil.rmtree(folder)
    tampered = mirror / "2026-07-28" / "schema.json"
    tampered.write_bytes(tampered.read_bytes() + b" ")
    schema_check.schema_dir.cache_clear()
    folder, account = schema_check.schema_dir()
    assert folder is None and "does not have the pinned sha256" in account
    assert not (fresh_lookup / "cache" / "mcp-ref" / "schemas" / "mcp-schema-2026-07-28.json").exists()


def test_without_any_source_the_checks_are_skipped_and_say_why(fresh_lookup: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_REF_SCHEMA_DOWNLOAD", "0")
    folder, account = schema_check.schema_dir()
    assert folder is None and "MCP_REF_SCHEMA_DOWNLOAD=0" in account
    assert not schema_check.available()
    schema_check.validate("2026-07-28", "ListToolsResult", {"not": "a result"})  # a no-op, not an error
