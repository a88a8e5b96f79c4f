"""Keep freed memory in the process instead of returning it to the kernel.

A training step creates and frees the same large temporaries every time (activations, gradients). glibc's
malloc serves blocks above a (dynamic) threshold with fresh mmap()s and trims freed memory back to the kernel,
so every step re-faults those pages: about 20,000 page faults (80 MB zeroed by the kernel) per mini step. Raising
the mmap and trim thresholds makes malloc reuse the memory: no page faults after the first step.

The price: memory freed by a phase that needs much more than training (training the tokenizer, reading the
corpus) would stay in the process for good. So those phases end with `release_freed_memory()` (malloc_trim),
which hands the free pages back once; the training steps that follow still reuse their own memory.

Only glibc has mallopt and malloc_trim; elsewhere these do nothing. Set MINIBERT_NO_MALLOPT=1 to leave malloc
alone.
"""

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


def _libc_function(name: str):
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep the memory the process frees instead of returning it to the kernel: PROCESS-WIDE
    and for good (mallopt: the mmap threshold raised to 32 MiB, the trim threshold to 1 GiB), for every allocation
    of the process, NumPy's, torch's and any library's, not only minibert's. Training steps then reuse their
    activations' pages (no ~20,000 page faults per mini step), but memory a large phase frees stays held (resident)
    until release_freed_memory() or the end of the process. The CLI and benchmarks call it; a library user need
    not. Returns True if malloc took the settings; False (nothing changed) without glibc or with
    MINIBERT_NO_MALLOPT=1."""
    if os.environ.get("MINIBERT_NO_MALLOPT"):
        return False
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    # 32 MiB is the largest mmap threshold glibc accepts on 64-bit; the trim threshold is an int.
    return bool(mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))


def release_freed_memory(collect: bool = True) -> bool:
    """Give the memory malloc holds but nobody uses back to the kernel (glibc's malloc_trim(0)); call it after
    a phase whose temporaries were larger than what comes next. Returns True if memory was released. Costs a
    few milliseconds (it walks the free lists). collect: first run Python's full garbage collection, for a phase
    that may leave reference cycles (a model, an optimizer); its time grows with every object the process holds
    (0.6 s with 3 million), so a library call that runs often (map_batches) passes False."""
    if os.environ.get("MINIBERT_NO_MALLOPT"):
        return False
    malloc_trim = _libc_function("malloc_trim")
    if malloc_trim is None:
        return False
    if collect:
        import gc
        gc.collect()  # reference cycles left by the phase are memory too
    return bool(malloc_trim(0))
