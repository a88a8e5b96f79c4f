"""Inference batches side by side, one per core: each batch's forward on its own Python thread.

A forward is mostly matmuls and NumPy loops, and both release the GIL, so two forwards on two threads run on
two cores at once. That beats one forward at a time on a two-threaded BLAS: the matmuls of one sentence batch are
too small to split well over two cores, attention's stacked products run one head at a time on one core, and some of
the elementwise work runs on one thread (docs/performance.md: MiniLM embeddings on 2 cores, ~35% more
sentences per second). While the batches run, BLAS is held at one thread per call (minibert/blas.py): each core
does one batch's work, start to end.

Only for forwards that no backward follows (`forward_only`): a training step keeps its activations on the
model, which two threads would overwrite. The results are those of the batches run one by one, in the same
order: each batch's numbers come from the same operations on the same thread.
"""

from __future__ import annotations

import contextlib
from collections import deque
from itertools import islice
from concurrent.futures import ThreadPoolExecutor

from minibert._malloc import release_freed_memory
from minibert.blas import blas_threads, one_blas_thread, threads_from_environment, usable_cpu_count


MAX_DEFAULT_WORKERS = 4  # each batch running at once holds its own activations: more cores, more memory


_cores_per_worker_thread = 1  # more while the cores of idle ranks are lent (cores_lent)


def default_workers() -> int:
    """Batches run at once by default: the thread count the program asked for (OPENBLAS_NUM_THREADS, else
    OMP_NUM_THREADS, else every core; times the cores lent by `cores_lent`), so a program that asked BLAS for one
    thread gets one batch at a time; at most the cores this process may run on, and at most MAX_DEFAULT_WORKERS
    (every batch in flight holds its activations)."""
    usable = usable_cpu_count()  # a container's or taskset's CPUs, not the host's
    return max(1, min(threads_from_environment() * _cores_per_worker_thread, usable, MAX_DEFAULT_WORKERS))


@contextlib.contextmanager
def cores_lent(factor: int):
    """Within the block, default_workers() counts `factor` times the threads: for a rank that runs alone while
    factor - 1 other ranks with as many cores wait (finetune/train.py: evaluation)."""
    global _cores_per_worker_thread
    before, _cores_per_worker_thread = _cores_per_worker_thread, factor
    try:
        yield
    finally:
        _cores_per_worker_thread = before


def map_batches(fn, items, workers: int | None = None):
    """Yield fn(item) for every item, in order, running up to `workers` calls at once on their own threads
    (default: default_workers()). fn must be safe to run on several threads at once (a forward-only pass is).
    With one worker, one item, or a BLAS whose thread count cannot be set, the calls run one by one on the
    calling thread. An exception in a call is raised here, when its turn comes; the calls still running finish
    first."""
    items = list(items)
    workers = default_workers() if workers is None else workers
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if min(workers, len(items)) > 1 and blas_threads() is not None:
        with one_blas_thread():  # (also while the caller handles a result: its own matmuls then use one thread)
            yield from _map_on_threads(fn, items, min(workers, len(items)))
        # Each worker thread allocated from its own glibc arena, and under keep_freed_memory() (the CLI) freed
        # memory stays in the arena that freed it: a fine-tuning evaluation's activations would stay in the
        # workers' arenas while training goes on in the main one. Hand them back.
        release_freed_memory(collect=False)  # (the batches leave no reference cycles: no gc pass)
        return
    for item in items:
        yield fn(item)


def _map_on_threads(fn, items, workers):
    pending = deque()  # futures in item order; `workers` of them run while the caller handles a result
    rest = iter(items)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="minibert-batch") as pool:
        try:
            for item in islice(rest, workers):
                pending.append(pool.submit(fn, item))
            while pending:
                result = pending.popleft().result()
                for item in islice(rest, 1):
                    pending.append(pool.submit(fn, item))
                yield result
        finally:
            for future in pending:  # a caller that stopped early, or an error: start nothing more
                future.cancel()
