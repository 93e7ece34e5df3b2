"""``python -m mcp_ref_fs.demo`` (``make demo``): the scripted session of :mod:`mcp_ref_fs.demo`."""

import sys

from . import main

sys.exit(main())
