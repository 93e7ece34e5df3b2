"""Hypothesis settings profiles for the fuzz sessions, chosen by ``$MCP_REF_FUZZ_PROFILE``.

* ``ci`` (default, part of ``make test``): derandomized -- the same examples on every run, so
  the suite stays deterministic -- and small enough for the whole directory to take well under
  40 s on two cores.
* ``long`` (``make fuzz``): random examples, ``$MCP_REF_FUZZ_EXAMPLES`` of them per test
  (default 3000), no deadline. A failure prints its session transcript and a
  ``@reproduce_failure`` blob, and is saved under ``~/.cache/mcp-ref/hypothesis`` (outside the
  checkout), so the next random run replays it first.
* ``dev``: random, 200 examples per test: a quick local check of a change to the strategies.

``MCP_REF_FUZZ_STRICT=1`` also turns off the tolerance for known, pinned bugs (harness.KNOWN_BUGS).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

PROFILE_VARIABLE = "MCP_REF_FUZZ_PROFILE"
# Random runs keep their failing examples outside the checkout and replay them first next time.
_CACHE = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
_DATABASE = DirectoryBasedExampleDatabase(os.path.join(_CACHE, "mcp-ref", "hypothesis"))
# Sessions are slow examples by hypothesis standards (real processes, real pipes), and a session
# may draw a lot of data; neither is a problem here.
_RELAXED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example, HealthCheck.filter_too_much]

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=40,  # each test sets its own count (test_fuzz_sessions.ci_examples)
    deadline=None,
    database=None,
    suppress_health_check=_RELAXED,
    print_blob=True,
)
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("MCP_REF_FUZZ_EXAMPLES", "3000")),
    deadline=None,
    database=_DATABASE,
    suppress_health_check=_RELAXED,
    print_blob=True,
)
settings.register_profile(
    "dev",
    max_examples=int(os.environ.get("MCP_REF_FUZZ_EXAMPLES", "200")),
    deadline=None,
    database=_DATABASE,
    suppress_health_check=_RELAXED,
    print_blob=True,
)

PROFILE = os.environ.get(PROFILE_VARIABLE, "ci")
settings.load_profile(PROFILE)


def pytest_report_header(config: pytest.Config) -> str:
    return f"fuzz profile: {PROFILE} ({settings.default.max_examples} examples per test; set ${PROFILE_VARIABLE}=long for a long run)"
