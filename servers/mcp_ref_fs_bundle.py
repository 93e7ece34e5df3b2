"""The MCP Bundle's entry point (``server.entry_point`` in manifest.json): runs mcp-ref-fs.

A bundle is the repository's sources unpacked in one directory, not an installed package, and
``mcp_ref_fs/__main__.py`` cannot run as a plain script (its imports are relative). So this file
puts the bundle's ``servers/`` and its top directory (``mcp_ref``) first on ``sys.path`` and calls
the same ``main`` as the ``mcp-ref-fs`` command, with the same arguments. The host runs it with
``uv run``, which installs the dependencies from the bundled pyproject.toml first; ``--version``
and ``--help`` need none of them.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for directory in (HERE, os.path.dirname(HERE)):  # the bundle's copies come first
    if directory not in sys.path:
        sys.path.insert(0, directory)

from mcp_ref_fs.__main__ import main  # noqa: E402 (importable only once sys.path holds the bundle)

if __name__ == "__main__":
    sys.exit(main())
