"""Keep freed memory in the process instead of returning it to the kernel.

A training step creates and frees the same large temporaries every time (activations, gradients). glibc's
malloc serves blocks above a (dynamic) threshold with fresh mmap()s and trims freed memory back to the kernel,
so every step re-faults those pages: about 20,000 page faults (80 MB zeroed by the kernel) per mini step. Raising
the mmap and trim thresholds makes malloc reuse the memory: no page faults after the first step.

Only glibc has mallopt; elsewhere this does nothing. Set MINIBERT_NO_MALLOPT=1 to leave malloc alone.
"""

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


def keep_freed_memory() -> bool:
    if os.environ.get("MINIBERT_NO_MALLOPT"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    # 32 MiB is the largest mmap threshold glibc accepts on 64-bit; the trim threshold is an int.
    return bool(mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))
