"""Batches side by side on threads (minibert/parallel.py): every result, in order; the calls really overlap;
inside them BLAS and the layers' blocks stay on the calling thread; errors and early stops are handled."""

import threading

import numpy as np
import pytest

from minibert import blas
from minibert.layers import threads
from minibert.parallel import map_batches

needs_openblas = pytest.mark.skipif(blas.blas_threads() is None, reason="NumPy's BLAS here is not an OpenBLAS")


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_every_result_in_order(workers, n):
    assert list(map_batches(lambda x: x * x, range(n), workers)) == [x * x for x in range(n)]


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2"])
def test_workers_must_be_a_positive_integer(workers):
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        list(map_batches(abs, [1, 2], workers))


@needs_openblas
def test_calls_run_at_the_same_time():
    both_inside = threading.Barrier(2, timeout=10)  # passes only if two calls are running at once

    def fn(x):
        both_inside.wait()
        return x

    assert list(map_batches(fn, [1, 2], workers=2)) == [1, 2]


@needs_openblas
def test_inside_a_call_blas_and_blocks_use_the_calling_thread():
    get, put = blas._openblas_functions()
    before_blas, before_layers = get(), threads.get_num_threads()
    put(2)
    threads.set_num_threads(2)
    try:
        def fn(x):
            block_threads = set()
            threads.for_row_blocks(lambda s: block_threads.add(threading.get_ident()), 64, 1 << 16)
            return blas.blas_threads(), block_threads == {threading.get_ident()}

        assert list(map_batches(fn, range(4), workers=2)) == [(1, True)] * 4
        assert blas.blas_threads() == 2  # restored
        here = set()
        threads.for_row_blocks(lambda s: here.add(threading.get_ident()), 64, 1 << 16)
        assert len(here) == 2  # outside, the pool is used again
    finally:
        put(before_blas)
        threads.set_num_threads(before_layers)


@needs_openblas
def test_an_error_is_raised_in_its_turn_and_nothing_more_starts():
    started = []

    def fn(x):
        started.append(x)
        if x == 1:
            raise KeyError("batch 1")
        return x

    results = map_batches(fn, range(20), workers=2)
    assert next(results) == 0
    with pytest.raises(KeyError, match="batch 1"):
        next(results)
    assert len(started) <= 4  # the two running and at most the next two: not all 20
    assert not [t for t in threading.enumerate() if t.name.startswith("minibert-batch")]


@needs_openblas
def test_a_caller_that_stops_early_leaves_no_threads():
    results = map_batches(lambda x: np.ones(3) * x, range(50), workers=3)
    assert next(results)[0] == 0
    results.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("minibert-batch")]
