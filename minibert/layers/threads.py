"""Elementwise work over row blocks, spread over a small persistent thread pool.

NumPy runs every ufunc (exp, multiply, a row sum...) on one thread, but it releases the GIL while the loop runs.
So Python threads that each take different rows of the same arrays run on different cores at the same time, as
torch's OpenMP loops do. The layers use this for their elementwise passes (GELU, LayerNorm, softmax, dropout,
bias adds, cross-entropy), for sums over rows (bias gradients) and for attention's stacked matmuls:

    def _double_block(x, out):          # plain array code for one block of rows
        np.multiply(x, 2, out=out)

    out = np.empty_like(x2)              # x2 (N, C)
    for_row_blocks(lambda s: _double_block(x2[s], out[s]), len(x2), x2.shape[1])

Blocks have a fixed size (~BLOCK_ELEMENTS elements, small enough that a block's several passes stay in the L2
cache), whatever the number of threads: every row is computed by the same operations on the same block, so 1
and N threads give bit-identical results. Each thread takes a contiguous run of blocks; the calling thread
takes the first run itself, so 2 threads cost one hand-off.

The pool size follows the BLAS thread count (OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS, else every core this
process may run on: `usable_cpu_count()`, which sees taskset and a container's CPU set): a run that asked BLAS for
one thread gets no extra threads here either, and 1 thread is a plain loop.
Block functions must not call for_row_blocks themselves (the pool does not nest). Code that already runs on
several threads of its own (minibert/parallel.py: one forward per thread) runs its blocks on the calling thread
only, inside `on_this_thread_only()`.
"""

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

BLOCK_ELEMENTS = 32 * 1024  # 128 KiB of float32 per array per block: several arrays of a block fit in L2
MIN_ELEMENTS_PER_THREAD = 64 * 1024  # below this a thread hand-off (~20-50 us) costs more than it saves


def usable_cpu_count() -> int:
    """The CPUs this process may run on: its affinity set (taskset, a container's cpuset) where the platform has
    one (Linux), else every core of the machine."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows: no affinity call
        return os.cpu_count() or 1


def _threads_from_environment():
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return usable_cpu_count()


_num_threads = _threads_from_environment()
_pool = None  # the num_threads - 1 helper threads, started on first use
_local = threading.local()  # .alone: this thread runs its blocks itself (on_this_thread_only)


def get_num_threads():
    return _num_threads


def set_num_threads(n):
    """Use n threads (the caller included) for the elementwise work from now on."""
    global _num_threads, _pool
    n = max(1, int(n))
    if n != _num_threads and _pool is not None:
        _pool.shutdown(wait=True)
        _pool = None
    _num_threads = n


@contextlib.contextmanager
def on_this_thread_only():
    """Within the block, for_row_blocks called from this thread runs every block on this thread (other threads
    are not affected). For work that is itself spread over threads, which the pool must not serve twice."""
    before = getattr(_local, "alone", False)
    _local.alone = True
    try:
        yield
    finally:
        _local.alone = before


def _forget_pool_after_fork():
    global _pool
    _pool = None  # a forked child has the pool object but none of its threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def rows_per_block(row_size):
    return max(1, BLOCK_ELEMENTS // max(1, row_size))


def row_blocks(n_rows, row_size):
    """Slices of about BLOCK_ELEMENTS elements covering rows 0..n_rows-1, in order."""
    rows = rows_per_block(row_size)
    return [slice(i, min(i + rows, n_rows)) for i in range(0, n_rows, rows)]


def _run_blocks(fn, blocks):
    for s in blocks:
        fn(s)


def for_row_blocks(fn, n_rows, row_size):
    """Call fn(s) for every row block s (a slice) of n_rows rows of row_size elements, on up to
    get_num_threads() threads. Returns when every block is done; an exception in a block is raised here."""
    global _pool
    blocks = row_blocks(n_rows, row_size)
    n = min(_num_threads, len(blocks), max(1, n_rows * row_size // MIN_ELEMENTS_PER_THREAD))
    if n <= 1 or getattr(_local, "alone", False):
        _run_blocks(fn, blocks)
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=_num_threads - 1, thread_name_prefix="minibert")
    runs = [blocks[i * len(blocks) // n:(i + 1) * len(blocks) // n] for i in range(n)]
    futures = [_pool.submit(_run_blocks, fn, run) for run in runs[1:]]
    try:
        _run_blocks(fn, runs[0])
    finally:
        for f in futures:
            f.result()  # wait for every run (and re-raise its error) before the caller reads the outputs


def sum_rows(x2, weights=None):
    """x2 (N, C) -> (C,): the sum over rows of x2 (of x2 * weights if given, same shape). Each block sums its
    rows on the threads; the block sums are then added in block order, so any thread count gives the same bits."""
    N, C = x2.shape
    rows = rows_per_block(C)
    dtype = x2.dtype if weights is None else np.result_type(x2, weights)
    partial = np.empty(((N + rows - 1) // rows, C), dtype=dtype)  # one row of sums per block

    def block(s):
        if weights is None:
            np.sum(x2[s], axis=0, out=partial[s.start // rows])
        else:
            np.einsum("nc,nc->c", x2[s], weights[s], out=partial[s.start // rows])
    for_row_blocks(block, N, C)
    return partial.sum(axis=0)


def batched_matmul(a, b, out=None):
    """a @ b for stacks of matrices with the same leading axes (e.g. (B, A, T, D) @ (B, A, D, T)), blocks of the
    first axis on the threads. NumPy runs a stacked matmul as one small BLAS call per matrix, each too small for
    BLAS to thread, so without this attention's products run on one core."""
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"batched_matmul needs equal leading axes, got {a.shape} @ {b.shape}")
    if out is None:
        out = np.empty(a.shape[:-1] + b.shape[-1:], dtype=np.result_type(a, b))
    for_row_blocks(lambda s: np.matmul(a[s], b[s], out=out[s]), out.shape[0], out[0].size)
    return out
