"""The process's peak memory, for run summaries: how much RAM a run needed at most (see docs/memory.md)."""

from __future__ import annotations

import sys

import numpy as np


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


def proportional_mb() -> float | None:
    """This process's proportional set size now (PSS, in MB): its resident pages, each page that several
    processes map counted as 1/k of a page in each of the k. Added up over the ranks of a job, shared pages
    (libraries, the shared-memory area of `--procs`) count once, where added-up resident sizes count them once
    per rank. Linux only (/proc/self/smaps_rollup, kernel 4.14+); None elsewhere. The kernel keeps no peak of
    it, and reading it walks the process's pages (a few milliseconds): sample it now and then
    (`ProportionalPeak`)."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024 / 1e6  # kB
    except (OSError, ValueError, IndexError):
        pass
    return None


class ProportionalPeak:
    """The largest PSS seen at the moments `sample()` was called (MB; None until a reading succeeds). Between
    training steps the memory of a step is still held (glibc keeps it for the next one, minibert/_malloc.py),
    so samples taken there see the training's peak."""

    def __init__(self):
        self.mb = None

    def sample(self) -> float | None:
        now = proportional_mb()
        if now is not None:
            self.mb = now if self.mb is None else max(self.mb, now)
        return self.mb


def other_ranks_peaks(comm, shared_once: ProportionalPeak) -> tuple[float, float]:
    """(peak RSS, peak PSS) of the ranks other than 0, added up, in MB (rank 0 receives them; every rank calls
    this once, at the end of training). This rank's last PSS sample comes first: after this sum the other ranks
    end, and their shared pages would count whole in rank 0's PSS; the job's peak is while all ranks run."""
    shared_once.sample()
    others = comm.allreduce_sum_(np.array([0.0, 0.0] if comm.is_root else
                                          [peak_rss_mb() or 0.0, shared_once.mb or 0.0]))
    return float(others[0]), float(others[1])
