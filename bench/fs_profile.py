"""Run mcp-ref-fs under cProfile, in every thread, for ``fs_bench.py --profile``.

    python bench/fs_profile.py OUT.prof -- [mcp-ref-fs options] ROOT ...

``python -m cProfile`` sees only the main thread, but mcp-ref-fs runs walks, searches and large
reads in worker threads (``offload.off_loop``, aiofiles). Here every ``threading.Thread`` runs
under its own profiler, and at exit all of them are merged into OUT.prof (pstats format).
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import threading

_profiles: list[cProfile.Profile] = []
_original_run = threading.Thread.run


def _profiled_run(self: threading.Thread) -> None:
    profile = cProfile.Profile()
    _profiles.append(profile)
    profile.enable()
    try:
        _original_run(self)
    finally:
        profile.disable()


class _Snapshot:
    """What ``pstats.Stats`` accepts: an object with ``create_stats()`` and ``stats``."""

    def __init__(self, stats: dict) -> None:
        self.stats = stats

    def create_stats(self) -> None:
        pass


def main() -> int:
    out = sys.argv[1]
    arguments = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[2:]
    threading.Thread.run = _profiled_run  # type: ignore[method-assign]
    from mcp_ref_fs.__main__ import main as serve

    profile = cProfile.Profile()
    _profiles.insert(0, profile)
    profile.enable()
    try:
        status = serve(arguments)
    finally:
        profile.disable()
        stats = pstats.Stats(profile)
        for other in _profiles[1:]:
            # A worker thread may still be alive (idle in its pool): snapshot its profiler
            # without disabling it from this thread.
            other.snapshot_stats()
            if other.stats:  # type: ignore[attr-defined]
                stats.add(_Snapshot(other.stats))  # type: ignore[attr-defined]
        stats.dump_stats(out)
    return status


if __name__ == "__main__":
    sys.exit(main())
