"""The process's peak memory, for run summaries: how much RAM a run needed at most (see docs/memory.md)."""

from __future__ import annotations

import sys


def peak_rss_mb() -> float | None:
    """Peak resident set size of this process so far, in MB (10^6 bytes), or None where it cannot be read.

    From getrusage(RUSAGE_SELF).ru_maxrss: the kernel keeps it, reading it costs a system call. Linux reports
    KiB, macOS bytes; Windows has no `resource` module (None).
    """
    try:
        import resource
    except ImportError:  # Windows
        return None
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB elsewhere
    return maxrss * scale / 1e6
