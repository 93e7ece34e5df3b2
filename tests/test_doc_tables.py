"""The option tables in README.md and docs/filesystem-server.md say what ``mcp-ref-fs`` really takes.

``servers/mcp_ref_fs/options.py`` defines the server's options once; each table must list exactly
those flags, in that order, with their real defaults, so the docs cannot drift from ``--help``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_ref_fs.options import SERVER_OPTIONS

REPO = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| `(--[a-z-]+)(?: [A-Z])?` \| ([^|]+) \|")


def option_rows(document: Path) -> list[tuple[str, str]]:
    """(flag, default) of each row of the first table whose first column is an option."""
    rows: list[tuple[str, str]] = []
    for line in document.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            rows.append((match.group(1), match.group(2).strip()))
        elif rows:
            break
    return rows


def documented(default: object) -> str:
    return "off" if default is False else "per host" if default == "per host" else f"{default:g}" if isinstance(default, float) else str(default)


@pytest.mark.parametrize("document", ["README.md", "docs/filesystem-server.md"])
def test_the_option_table_lists_every_server_option_with_its_default(document: str) -> None:
    expected = [(flag, documented(default)) for flag, _keywords, _help, default in SERVER_OPTIONS]
    assert option_rows(REPO / document) == expected
